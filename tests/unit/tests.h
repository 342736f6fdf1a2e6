/* tests.h - the smallest test harness that can fail loudly.
 *
 * Each unit test file defines static test functions and ends with
 *     TESTS_MAIN(test_a, test_b, ...)
 * A failed CHECK prints file:line and the expression, marks the test failed and goes on; the
 * program exits 1 when any check failed, and says how many checks ran, so a test that checks
 * nothing is visible (and fails: zero checks is an error). */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tests_checks;
static int tests_failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        tests_checks++;                                                                            \
        if (!(cond)) {                                                                             \
            tests_failures++;                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);              \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long _a = (long long)(a), _b = (long long)(b);                                        \
        tests_checks++;                                                                            \
        if (_a != _b) {                                                                            \
            tests_failures++;                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", __FILE__, __LINE__, \
                    #a, #b, _a, _b);                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *_a = (a), *_b = (b);                                                           \
        tests_checks++;                                                                            \
        if (!_a || !_b || strcmp(_a, _b) != 0) {                                                   \
            tests_failures++;                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s == %s (\"%s\" != \"%s\")\n", __FILE__,       \
                    __LINE__, #a, #b, _a ? _a : "(null)", _b ? _b : "(null)");                     \
        }                                                                                          \
    } while (0)

/* The message contains the substring. */
#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        const char *_h = (hay), *_n = (needle);                                                    \
        tests_checks++;                                                                            \
        if (!_h || !strstr(_h, _n)) {                                                              \
            tests_failures++;                                                                      \
            fprintf(stderr, "%s:%d: check failed: \"%s\" contains \"%s\"\n", __FILE__, __LINE__,  \
                    _h ? _h : "(null)", _n);                                                       \
        }                                                                                          \
    } while (0)

typedef void (*test_fn)(void);

static inline int tests_run(const char *names, test_fn *fns, size_t n)
{
    (void)names;
    for (size_t i = 0; i < n; i++)
        fns[i]();
    fprintf(stderr, "%d checks, %d failed\n", tests_checks, tests_failures);
    if (tests_checks == 0) {
        fprintf(stderr, "no checks ran\n");
        return 1;
    }
    return tests_failures ? 1 : 0;
}

#define TESTS_MAIN(...)                                                                            \
    int main(void)                                                                                 \
    {                                                                                              \
        test_fn _fns[] = {__VA_ARGS__};                                                            \
        return tests_run(#__VA_ARGS__, _fns, sizeof(_fns) / sizeof(_fns[0]));                      \
    }

/* A fresh private directory for this test program: $TEST_TMPDIR (or /tmp) + mkdtemp.
 * Returns a static buffer. Exits on failure: nothing else could run. */
static inline const char *tests_tmpdir(void)
{
    static char path[4096];
    if (path[0])
        return path;
    const char *base = getenv("TEST_TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    char mk[4096];
    snprintf(mk, sizeof(mk), "mkdir -p '%s'", base);
    if (system(mk) != 0) {
        fprintf(stderr, "cannot create %s\n", base);
        exit(2);
    }
    snprintf(path, sizeof(path), "%s/unit-XXXXXX", base);
    if (!mkdtemp(path)) {
        fprintf(stderr, "mkdtemp %s: %s\n", path, strerror(errno));
        exit(2);
    }
    return path;
}
