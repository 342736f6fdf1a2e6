/* faultinject - an LD_PRELOAD shim that makes chosen system calls fail, for tests that prove a
 * failure loses nothing (a failed write leaves the old file intact, a failed configure restores
 * the keychain).
 *
 *   FAULT_RENAME_SUFFIX=secrets.json LD_PRELOAD=libfaultinject.so secrets configure ...
 *
 * FAULT_RENAME_SUFFIX: rename()/renameat()/renameat2() whose target ends with this suffix fail
 *                      with EIO (FAULT_ERRNO overrides the errno number).
 * FAULT_RENAME_DELAY_MS: with the suffix, such a rename is not failed but held this many
 *                      milliseconds before it is done: a writer killed meanwhile is killed in
 *                      the middle of its save, its temporary written and not yet renamed.
 *
 * Running as root, permission tricks (a read-only directory) do not make writes fail; this
 * does, deterministically. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int rename(const char *oldpath, const char *newpath);
int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
              unsigned int flags);

static int fault_errno(void)
{
    const char *s = getenv("FAULT_ERRNO");
    if (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (!*end && v > 0 && v < 4096)
            return (int)v;
    }
    return EIO;
}

/* FAULT_RENAME_DELAY_MS, or 0 when unset or not a number of 1 to 600000. */
static long rename_delay_ms(void)
{
    const char *s = getenv("FAULT_RENAME_DELAY_MS");
    if (!s || !*s)
        return 0;
    char *end;
    long v = strtol(s, &end, 10);
    return !*end && v > 0 && v <= 600000 ? v : 0;
}

static int should_fail(const char *target)
{
    const char *suffix = getenv("FAULT_RENAME_SUFFIX");
    if (!suffix || !*suffix || !target)
        return 0;
    size_t n = strlen(target), m = strlen(suffix);
    return n >= m && strcmp(target + n - m, suffix) == 0;
}

int rename(const char *oldpath, const char *newpath)
{
    return renameat(AT_FDCWD, oldpath, AT_FDCWD, newpath);
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
    return renameat2(olddirfd, oldpath, newdirfd, newpath, 0);
}

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
              unsigned int flags)
{
    typedef int (*renameat2_fn)(int, const char *, int, const char *, unsigned int);
    if (should_fail(newpath)) {
        long delay = rename_delay_ms();
        if (!delay) {
            errno = fault_errno();
            return -1;
        }
        struct timespec ts = {delay / 1000, (delay % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
    renameat2_fn real;
    /* POSIX's way to take a function from dlsym(): ISO C has no object-to-function cast */
    void *sym = dlsym(RTLD_NEXT, "renameat2");
    memcpy(&real, &sym, sizeof(real));
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(olddirfd, oldpath, newdirfd, newpath, flags);
}
