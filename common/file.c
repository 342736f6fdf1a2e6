/* file.c - atomic replace, private permissions, locks */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "credkit/file.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/textsafe.h"
#include "credkit/util.h"

#define READ_CHUNK (64u * 1024u)

/* A temporary file of the old naming (no writer's pid in it) is stale once it is this old: no
 * write takes that long. */
#define TMP_OLD_STALE_S (10 * 60)

struct file_lock {
    int fd;
};

/* A path quoted for a shell command the user may paste: 'it'\''s' */
static void shell_quote(const char *s, char *dst, size_t n)
{
    size_t o = 0;
    if (n < 3) {
        if (n)
            dst[0] = 0;
        return;
    }
    dst[o++] = '\'';
    for (; *s; s++) {
        const char *piece = *s == '\'' ? "'\\''" : NULL;
        size_t plen = piece ? 4 : 1;
        if (o + plen + 2 > n)
            break; /* truncated: the message itself is bounded anyway */
        if (piece) {
            memcpy(dst + o, piece, plen);
        } else {
            dst[o] = *s;
        }
        o += plen;
    }
    dst[o++] = '\'';
    dst[o] = 0;
}

/* "'alice' (uid 1000)" or "uid 1000" when the passwd database does not know it */
static void describe_uid(uid_t uid, char *dst, size_t n)
{
    char buf[1024];
    struct passwd pw, *res = NULL;
    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res && res->pw_name)
        (void)snprintf(dst, n, "'%s' (uid %lu)", res->pw_name, (unsigned long)uid);
    else
        (void)snprintf(dst, n, "uid %lu", (unsigned long)uid);
}

/* What the symbolic link at path points to, escaped for a terminal, in a new string ("?" when
 * it cannot be read). Caller frees; NULL on ENOMEM. */
static char *link_target(const char *path)
{
    char t[PATH_MAX];
    ssize_t n = readlink(path, t, sizeof(t) - 1);
    if (n < 0)
        return strdup("?");
    t[n] = 0;
    return text_escape_dup(t);
}

/* -ELOOP with advice for a secret file (or lock file) at path that is a symbolic link. */
static int refuse_symlink(const char *path, const char *dp, const char *what, const char *fix,
                          struct err *e)
{
    char *target = link_target(path);
    int r = err_set(e, -ELOOP, "'%s' is a symbolic link to '%s': %s %s", dp, target ? target : "?",
                    what, fix);
    free(target);
    return r;
}

/* -EACCES with advice when st (of path, shown as dp) is not ours alone; 0 otherwise. */
static int check_private(const char *path, const char *dp, const struct stat *st, struct err *e)
{
    if (st->st_uid != geteuid()) {
        char owner[300];
        describe_uid(st->st_uid, owner, sizeof(owner));
        return err_set(e, -EACCES,
                       "'%s' is owned by %s, not by you: a private file must be your own", dp,
                       owner);
    }
    mode_t bits = st->st_mode & 077;
    if (bits) {
        const char *what = (bits & 044)   ? "can be read by others"
                           : (bits & 022) ? "can be changed by others"
                                          : "is accessible to others";
        char q[ERR_MSG_MAX];
        shell_quote(path, q, sizeof(q));
        return err_set(e, -EACCES, "'%s' %s (mode %04o): run chmod %s %s", dp, what,
                       (unsigned)(st->st_mode & 07777), S_ISDIR(st->st_mode) ? "700" : "600", q);
    }
    return 0;
}

int file_check_private(const char *path, struct err *e)
{
    char *disp = path_display(path);
    const char *dp = disp ? disp : path;
    struct stat st;
    int r;

    if (stat(path, &st) < 0) {
        int k = errno;
        if (k == ENOENT)
            r = err_set(e, -ENOENT, "'%s' does not exist", dp);
        else
            r = err_set(e, -k, "cannot check '%s': %s", dp, strerror(k));
        goto out;
    }
    r = check_private(path, dp, &st, e);
out:
    free(disp);
    return r;
}

/* Who other than us and root can change what st describes, said of it; NULL when no one. A
 * directory with the sticky bit (/tmp) lets no one replace the files of others. */
static const char *others_write(const struct stat *st)
{
    if (st->st_uid != geteuid() && st->st_uid != 0)
        return "is owned by another user";
    if (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))
        return NULL;
    if (st->st_mode & S_IWOTH)
        return "can be changed by every user";
    if (st->st_mode & S_IWGRP)
        return "can be changed by its group";
    return NULL;
}

/* The -EPERM of file_check_owner_only_writes for what (the file, or its directory dir). */
static int others_write_err(const char *dp, const char *dir, const struct stat *st, const char *why,
                            struct err *e)
{
    char q[ERR_MSG_MAX], owner[300];
    shell_quote(dir ? dir : dp, q, sizeof(q));
    if (st->st_uid != geteuid() && st->st_uid != 0) {
        describe_uid(st->st_uid, owner, sizeof(owner));
        return dir ? err_set(e, -EPERM,
                             "the directory of '%s', '%s', is owned by %s: whoever owns it can "
                             "replace the file; move the file to a directory of your own",
                             dp, dir, owner)
                   : err_set(e, -EPERM,
                             "'%s' is owned by %s: they can change it; copy it to a file of your "
                             "own",
                             dp, owner);
    }
    return dir ? err_set(e, -EPERM,
                         "the directory of '%s', '%s', %s (mode %04o): whoever can change it can "
                         "replace the file; run chmod go-w %s",
                         dp, dir, why, (unsigned)(st->st_mode & 07777), q)
               : err_set(e, -EPERM, "'%s' %s (mode %04o): run chmod go-w %s", dp, why,
                         (unsigned)(st->st_mode & 07777), q);
}

int file_check_owner_only_writes(const char *path, struct err *e)
{
    char *disp = path_display(path), *real = NULL, *dir = NULL;
    const char *dp = disp ? disp : path;
    const char *why;
    struct stat st;
    int r;

    if (stat(path, &st) < 0) {
        int k = errno;
        r = k == ENOENT ? err_set(e, -ENOENT, "'%s' does not exist", dp)
                        : err_set(e, -k, "cannot check '%s': %s", dp, strerror(k));
        goto out;
    }
    if ((why = others_write(&st))) {
        r = others_write_err(dp, NULL, &st, why, e);
        goto out;
    }
    /* the directory holding the file itself, not a link to it: whoever can replace the file
     * there chooses what it says */
    if (!(real = realpath(path, NULL))) {
        int k = errno;
        r = err_set(e, -k, "cannot check '%s': %s", dp, strerror(k));
        goto out;
    }
    char *slash = strrchr(real, '/');
    if (!(dir = slash == real ? strdup("/") : strndup(real, (size_t)(slash - real)))) {
        r = -ENOMEM;
        goto out;
    }
    if (stat(dir, &st) < 0) {
        int k = errno;
        r = err_set(e, -k, "cannot check '%s': %s", dir, strerror(k));
        goto out;
    }
    r = (why = others_write(&st)) ? others_write_err(dp, dir, &st, why, e) : 0;
out:
    free(dir);
    free(real);
    free(disp);
    return r;
}

/* Opens path for reading, refusing what is not a regular file (and, with FILE_SECRET, one others
 * can reach) or does not fit in out; out then has room for the file's current size. */
static int read_open(const char *path, const char *dp, unsigned flags, struct buf *out, int *ret_fd,
                     struct err *e)
{
    struct stat st;
    int fd, r;

    /* O_NONBLOCK: opening a FIFO must not hang until a writer shows up; it is refused below and
     * has no effect on regular files. A secret file must be the file itself: its permissions
     * are what is checked, and a chmod advised for a link would change whatever it points to.
     * Other files are followed, the checks apply to the target. */
    int oflags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    if (flags & FILE_SECRET)
        oflags |= O_NOFOLLOW;
    fd = open(path, oflags);
    if (fd < 0) {
        int k = errno;
        struct stat lst;
        if (k == ENOENT)
            return err_set(e, -ENOENT, "'%s' does not exist", dp);
        if (k == ELOOP && (flags & FILE_SECRET) && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
            return refuse_symlink(path, dp,
                                  "a file holding secrets must be the file itself, not a link "
                                  "(its own permissions are what keeps it private):",
                                  "replace the link by the file itself", e);
        return err_set(e, -k, "cannot open '%s': %s", dp, strerror(k));
    }
    if (fstat(fd, &st) < 0) {
        int k = errno;
        r = err_set(e, -k, "cannot read '%s': %s", dp, strerror(k));
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        r = err_set(e, -EISDIR, "'%s' is a directory, not a file", dp);
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        r = err_set(e, -EINVAL, "'%s' is not a regular file", dp);
        goto fail;
    }
    if (flags & FILE_SECRET) {
        r = check_private(path, dp, &st, e);
        if (r < 0)
            goto fail;
    }
    if (st.st_size < 0 || (uintmax_t)st.st_size > out->max - out->len) {
        r = err_set(e, -E2BIG, "'%s' is larger than %zu bytes", dp, out->max);
        goto fail;
    }
    /* one allocation for the expected size: fewer copies of a secret while growing */
    r = buf_reserve(out, (size_t)st.st_size);
    if (r < 0) {
        r = err_set(e, r, "cannot read '%s': %s", dp, strerror(-r));
        goto fail;
    }
    *ret_fd = fd;
    return 0;
fail:
    (void)close(fd);
    return r;
}

/* Appends what is left to read from fd to out, up to out->max: -E2BIG when there is more. */
static int read_all(int fd, const char *dp, struct buf *out, struct err *e)
{
    for (;;) {
        size_t room = out->max - out->len;
        if (room == 0) {
            /* full: anything more is over the cap, EOF is fine */
            char probe;
            ssize_t n = read(fd, &probe, 1);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                int k = errno;
                return err_set(e, -k, "cannot read '%s': %s", dp, strerror(k));
            }
            if (n > 0) {
                secure_wipe(&probe, 1);
                return err_set(e, -E2BIG, "'%s' is larger than %zu bytes", dp, out->max);
            }
            return 0;
        }
        size_t want = room < READ_CHUNK ? room : READ_CHUNK;
        int r = buf_reserve(out, want);
        if (r < 0)
            return err_set(e, r, "cannot read '%s': %s", dp, strerror(-r));
        ssize_t n = read(fd, out->data + out->len, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int k = errno;
            return err_set(e, -k, "cannot read '%s': %s", dp, strerror(k));
        }
        if (n == 0)
            return 0;
        out->len += (size_t)n;
        out->data[out->len] = 0;
    }
}

int file_read(const char *path, unsigned flags, struct buf *out, struct err *e)
{
    char *disp = path_display(path);
    const char *dp = disp ? disp : path;
    size_t old_len = out->len;
    int fd = -1, r;

    r = read_open(path, dp, flags, out, &fd, e);
    if (r < 0)
        goto out;
    r = read_all(fd, dp, out, e);
out:
    if (r < 0 && out->len > old_len) {
        /* the caller's buffer is as it was */
        if (out->secret)
            secure_wipe(out->data + old_len, out->len - old_len);
        out->len = old_len;
        out->data[old_len] = 0;
    }
    if (fd >= 0)
        (void)close(fd);
    free(disp);
    return r;
}

/* The temporaries of base: ".BASE.PID.XXXXXX" (the writer's pid), the base name cut to 200
 * bytes so that the name stays within NAME_MAX. An older naming had no pid: ".BASE.XXXXXX". */
#define TMP_BASE_MAX 200

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* mkstemp()'s six letters and digits. strict: at least one capital or digit as well, so that a
 * file of the user's (".secrets.json.backup") is never taken for one. */
static bool mkstemp_suffix(const char *s, bool strict)
{
    bool mixed = false;
    if (strlen(s) != 6)
        return false;
    for (size_t i = 0; i < 6; i++) {
        char ch = s[i];
        bool lower = ch >= 'a' && ch <= 'z';
        bool other = (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!lower && !other)
            return false;
        mixed |= other;
    }
    return mixed || !strict;
}

/* Whether name (an entry of the directory, st its lstat) is a temporary of base that its writer
 * left behind: one whose writer's process is gone, or one of the old naming older than
 * TMP_OLD_STALE_S. Only our own regular files; never this process's own. */
static bool tmp_is_stale(const char *name, const char *base, const struct stat *st)
{
    size_t bl = strnlen(base, TMP_BASE_MAX);
    if (name[0] != '.' || strncmp(name + 1, base, bl) != 0 || name[1 + bl] != '.')
        return false;
    if (!S_ISREG(st->st_mode) || st->st_uid != geteuid())
        return false;
    const char *rest = name + 2 + bl;
    const char *dot = strchr(rest, '.');
    if (dot && all_digits(rest, (size_t)(dot - rest)) && mkstemp_suffix(dot + 1, false)) {
        int64_t pid = 0;
        char num[24];
        size_t n = (size_t)(dot - rest);
        if (n >= sizeof(num))
            return false;
        memcpy(num, rest, n);
        num[n] = 0;
        if (parse_int64(num, &pid) < 0 || pid <= 0 || pid > INT32_MAX || pid == (int64_t)getpid())
            return false;
        /* EPERM: the process exists (another user's): not gone */
        return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
    }
    if (!dot && mkstemp_suffix(rest, true))
        return st->st_mtime + TMP_OLD_STALE_S < time(NULL);
    return false;
}

void dir_sweep(const char *dir, bool (*stale)(const char *name, const struct stat *st, void *ctx),
               void *ctx)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            stale(de->d_name, &st, ctx))
            (void)unlinkat(dirfd(d), de->d_name, 0);
    }
    (void)closedir(d);
}

static bool tmp_of_base_stale(const char *name, const struct stat *st, void *base)
{
    return tmp_is_stale(name, base, st);
}

/* Removes the temporaries of base in dir that a writer killed mid-write left behind (each a
 * full copy of what it was writing). */
static void tmp_sweep(const char *dir, const char *base)
{
    dir_sweep(dir, tmp_of_base_stale, (void *)base);
}

/* A new, empty temporary file beside base in dir (so that rename() is atomic): hidden, named
 * with our pid (so that a later writer can tell it stale once we are gone). On success the
 * caller unlinks and frees *ret_tmp and closes *ret_fd. */
static int tmp_create(const char *dir, const char *base, const char *dp, const char *ddp,
                      char **ret_tmp, int *ret_fd, struct err *e)
{
    char *tmp = NULL;

    if (asprintf(&tmp, "%s%s.%.*s.%ld.XXXXXX", dir, strcmp(dir, "/") == 0 ? "" : "/", TMP_BASE_MAX,
                 base, (long)getpid()) < 0)
        return err_set(e, -ENOMEM, "cannot write '%s': out of memory", dp);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        int k = errno;
        int r = err_set(e, -k, "cannot write '%s': cannot create a temporary file in '%s': %s", dp,
                        ddp, strerror(k));
        free(tmp);
        return r;
    }
    *ret_tmp = tmp;
    *ret_fd = fd;
    return 0;
}

/* Writes all of data to fd and flushes it to disk. */
static int write_synced(int fd, const void *data, size_t len, const char *dp, struct err *e)
{
    const char *p = data;
    size_t off = 0;

    while (off < len) {
        size_t chunk = len - off;
        if (chunk > SSIZE_MAX)
            chunk = SSIZE_MAX;
        ssize_t n = write(fd, p + off, chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int k = errno;
            return err_set(e, -k, "cannot write '%s': %s", dp, strerror(k));
        }
        off += (size_t)n;
    }
    if (fsync(fd) < 0) {
        int k = errno;
        return err_set(e, -k, "cannot write '%s': cannot flush it to disk: %s", dp, strerror(k));
    }
    return 0;
}

int file_write_atomic(const char *path, const void *data, size_t len, mode_t mode, struct err *e)
{
    char *disp = path_display(path), *dir = NULL, *ddisp = NULL, *tmp = NULL;
    const char *dp = disp ? disp : path;
    bool tmp_exists = false;
    int fd = -1, dfd = -1, r;
    size_t plen = strlen(path);

    if (plen == 0 || path[plen - 1] == '/') {
        r = err_set(e, -EINVAL, "cannot write '%s': not a file name", dp);
        goto out;
    }
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    dir = path_dirname(path);
    if (!dir) {
        r = err_set(e, -ENOMEM, "cannot write '%s': out of memory", dp);
        goto out;
    }
    ddisp = path_display(dir);
    const char *ddp = ddisp ? ddisp : dir;

    /* before ours is made: on a full disk, what a killed writer left takes room we need */
    tmp_sweep(dir, base);
    r = tmp_create(dir, base, dp, ddp, &tmp, &fd, e);
    if (r < 0)
        goto out;
    tmp_exists = true;

    /* before any byte is written, so a secret is never readable by others even briefly */
    if (fchmod(fd, mode & 07777) < 0) {
        int k = errno;
        r = err_set(e, -k, "cannot write '%s': cannot set mode %04o: %s", dp,
                    (unsigned)(mode & 07777), strerror(k));
        goto out;
    }
    r = write_synced(fd, data, len, dp, e);
    if (r < 0)
        goto out;
    int c = close(fd);
    fd = -1;
    if (c < 0) {
        int k = errno;
        r = err_set(e, -k, "cannot write '%s': %s", dp, strerror(k));
        goto out;
    }
    if (rename(tmp, path) < 0) {
        int k = errno;
        r = err_set(e, -k, "cannot write '%s': cannot replace it: %s", dp, strerror(k));
        goto out;
    }
    tmp_exists = false;

    /* the rename itself is only durable once the directory is flushed */
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || (fsync(dfd) < 0 && errno != EINVAL)) {
        int k = errno;
        r = err_set(e, -k, "'%s' was replaced but '%s' could not be flushed to disk: %s", dp, ddp,
                    strerror(k));
        goto out;
    }
    r = 0;
out:
    if (fd >= 0)
        (void)close(fd);
    if (dfd >= 0)
        (void)close(dfd);
    if (tmp_exists)
        (void)unlink(tmp);
    free(tmp);
    free(ddisp);
    free(dir);
    free(disp);
    return r;
}

/* mkdir that is fine with an existing directory; -ENOTDIR when something else is there */
static int mkdir_one(const char *p, mode_t mode, bool *created, struct err *e)
{
    *created = false;
    if (mkdir(p, mode) == 0) {
        *created = true;
        return 0;
    }
    int k = errno;
    char *disp = path_display(p);
    const char *dp = disp ? disp : p;
    int r = 0;
    struct stat st;
    if (k == EEXIST) {
        if (stat(p, &st) < 0) {
            k = errno;
            r = err_set(e, -k, "cannot use '%s': %s", dp, strerror(k));
        } else if (!S_ISDIR(st.st_mode)) {
            r = err_set(e, -ENOTDIR, "'%s' exists but is not a directory", dp);
        }
    } else {
        r = err_set(e, -k, "cannot create the directory '%s': %s", dp, strerror(k));
    }
    free(disp);
    return r;
}

int dir_ensure(const char *dir, mode_t mode, struct err *e)
{
    char *p = NULL, *disp = NULL;
    bool created;
    struct stat st;
    int r;

    mode &= 07777;
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n == 0) {
        r = err_set(e, -EINVAL, "empty directory name");
        goto out;
    }
    p = strndup(dir, n);
    if (!p) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    disp = path_display(p);
    const char *dp = disp ? disp : p;

    for (char *s = p + 1; *s; s++) {
        if (*s != '/' || s[-1] == '/')
            continue;
        *s = 0;
        r = mkdir_one(p, 0700, &created, e);
        *s = '/';
        if (r < 0)
            goto out;
    }
    r = mkdir_one(p, mode, &created, e);
    if (r < 0)
        goto out;

    if (stat(p, &st) < 0) {
        int k = errno;
        r = err_set(e, -k, "cannot use '%s': %s", dp, strerror(k));
        goto out;
    }
    if (!S_ISDIR(st.st_mode)) {
        r = err_set(e, -ENOTDIR, "'%s' exists but is not a directory", dp);
        goto out;
    }
    mode_t have = st.st_mode & 07777;
    mode_t want = have;
    if (created)
        want = mode; /* the umask may have taken bits the caller asked for */
    else if (have & 0777 & ~mode)
        want = have & mode;
    if (want != have) {
        if (st.st_uid != geteuid()) {
            char owner[300], q[ERR_MSG_MAX];
            describe_uid(st.st_uid, owner, sizeof(owner));
            shell_quote(p, q, sizeof(q));
            r = err_set(e, -EACCES,
                        "'%s' is accessible to others (mode %04o) and owned by %s: ask its "
                        "owner to run chmod %o %s",
                        dp, (unsigned)have, owner, (unsigned)mode, q);
            goto out;
        }
        if (chmod(p, want) < 0) {
            int k = errno;
            r = err_set(e, -k, "cannot set mode %04o on '%s': %s", (unsigned)want, dp, strerror(k));
            goto out;
        }
    }
    r = 0;
out:
    free(disp);
    free(p);
    return r;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* "200ms", "3s", "1.5s" */
static void format_ms(int64_t ms, char *dst, size_t n)
{
    if (ms < 1000)
        (void)snprintf(dst, n, "%lldms", (long long)ms);
    else if (ms % 1000 == 0)
        (void)snprintf(dst, n, "%llds", (long long)(ms / 1000));
    else
        (void)snprintf(dst, n, "%.1fs", (double)ms / 1000.0);
}

/* Take an exclusive flock on fd, waiting up to timeout_ms (backing off from 10 to 100 ms): 0,
 * -ETIMEDOUT when another holder kept it, or the -errno of flock. flock: owned by this open file
 * description, so it excludes other processes and other opens in this one, and dies with the
 * process. */
static int flock_wait(int fd, int64_t timeout_ms)
{
    int64_t start = now_mono_ms(), delay = 10;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        int k = errno;
        if (k == EINTR)
            continue;
        if (k != EWOULDBLOCK)
            return -k;
        int64_t left = timeout_ms - (now_mono_ms() - start);
        if (left <= 0)
            return -ETIMEDOUT;
        sleep_ms(delay < left ? delay : left);
        delay = delay * 2 > 100 ? 100 : delay * 2;
    }
}

/* The lock held by *fd handed to *ret (takes the descriptor: *fd becomes -1). */
static int lock_take(int *fd, struct file_lock **ret, struct err *e)
{
    struct file_lock *l = malloc(sizeof(*l));
    if (!l)
        return err_set(e, -ENOMEM, "out of memory");
    l->fd = *fd;
    *fd = -1;
    *ret = l;
    return 0;
}

int file_lock_acquire(const char *lock_path, int64_t timeout_ms, struct file_lock **ret,
                      struct err *e)
{
    char *disp = path_display(lock_path);
    const char *dp = disp ? disp : lock_path;
    int fd = -1, r;

    if (timeout_ms < 0)
        timeout_ms = 0;
    /* never through a link: whoever planted it would have us create or lock a file of their
     * choosing */
    fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);
    if (fd < 0 && errno == EROFS)
        /* an existing lock file on a read-only filesystem still locks (flock needs no write
         * access): the write that follows then fails, saying why */
        fd = open(lock_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
    if (fd < 0) {
        int k = errno;
        struct stat lst;
        if (k == ELOOP && lstat(lock_path, &lst) == 0 && S_ISLNK(lst.st_mode))
            r = refuse_symlink(lock_path, dp, "a lock file is never followed through a link:",
                               "remove the link (the lock file is created again)", e);
        else
            r = err_set(e, -k, "cannot open the lock file '%s': %s", dp, strerror(k));
        goto out;
    }

    r = flock_wait(fd, timeout_ms);
    if (r == -ETIMEDOUT) {
        char t[32];
        format_ms(timeout_ms, t, sizeof(t));
        r = err_set(e, r,
                    "timed out after %s waiting for the lock on '%s': another process holds it", t,
                    dp);
        goto out;
    }
    if (r < 0) {
        r = err_set(e, r, "cannot lock '%s': %s", dp, strerror(-r));
        goto out;
    }
    r = lock_take(&fd, ret, e);
out:
    if (fd >= 0)
        (void)close(fd);
    free(disp);
    return r;
}

int file_lock_dir(const char *dir, int64_t timeout_ms, const char *holder, struct file_lock **ret,
                  struct err *e)
{
    char *d = path_display(dir);
    const char *dd = d ? d : dir;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;
    if (fd < 0) {
        int k = errno;
        r = err_set(e, -k, "cannot open the directory '%s': %s", dd, strerror(k));
        goto out;
    }
    r = flock_wait(fd, timeout_ms);
    if (r == -ETIMEDOUT) {
        r = err_set(e, r,
                    "another %s is changing a file in '%s' and did not finish within %lld s: try "
                    "again",
                    holder ? holder : "process", dd, (long long)(timeout_ms / 1000));
        goto out;
    }
    if (r < 0) {
        r = err_set(e, r, "cannot lock the directory '%s': %s", dd, strerror(-r));
        goto out;
    }
    r = lock_take(&fd, ret, e);
out:
    if (fd >= 0)
        (void)close(fd);
    free(d);
    return r;
}

void file_lock_release(struct file_lock *l)
{
    if (!l)
        return;
    /* explicit unlock: a forked child may still share the description */
    (void)flock(l->fd, LOCK_UN);
    (void)close(l->fd);
    free(l);
}
