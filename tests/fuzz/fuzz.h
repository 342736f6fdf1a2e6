/* fuzz.h - what the libFuzzer targets share (header-only).
 *
 * A target checks properties of what it is given, not only that nothing crashes: fuzz_check()
 * aborts (a crash libFuzzer reports and saves) when one does not hold, saying which. Inputs come
 * as bytes; fuzz_strndup() makes a C string of them (an embedded NUL cuts it, as it would in a
 * file name or an argument). */
#pragma once

#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define fuzz_check(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: property does not hold: %s\n", __FILE__, __LINE__, #cond);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* data[0..size) as a NUL-terminated copy; aborts when out of memory (not a finding). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* Splits s[0..len) at the first occurrence of byte sep: *ret_a and *ret_b, NUL-terminated copies
 * (b empty when sep does not occur). Caller frees both. */
static inline void fuzz_split(const uint8_t *s, size_t len, uint8_t sep, char **ret_a, char **ret_b)
{
    const uint8_t *at = memchr(s, sep, len);
    size_t n = at ? (size_t)(at - s) : len;
    *ret_a = fuzz_strndup(s, n);
    *ret_b = at ? fuzz_strndup(at + 1, len - n - 1) : fuzz_strndup(s, 0);
}

/* fuzz_tmpdir(): a private directory, $TMPDIR/NAME.XXXXXX (or /tmp/...), removed with what is in
 * it when the target exits normally (-max_total_time, -runs); a crash leaves it for a look. */
static char fuzz_tmpdir_path[256];

static inline int fuzz_rm_(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline void fuzz_tmpdir_remove_(void)
{
    if (fuzz_tmpdir_path[0])
        (void)nftw(fuzz_tmpdir_path, fuzz_rm_, 16, FTW_DEPTH | FTW_PHYS);
}

static inline const char *fuzz_tmpdir(const char *name)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_tmpdir_path, sizeof(fuzz_tmpdir_path), "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp",
             name);
    if (!mkdtemp(fuzz_tmpdir_path)) {
        perror("mkdtemp");
        exit(2);
    }
    atexit(fuzz_tmpdir_remove_);
    return fuzz_tmpdir_path;
}
