/* tests.h - the smallest test harness that can fail loudly.
 *
 * Each unit test file defines static test functions and ends with
 *     TESTS_MAIN(test_a, test_b, ...)
 * A failed CHECK prints the name of the test it is in, file:line and the expression, marks the
 * test failed and goes on; the program names every failed test, exits 1 when any check failed,
 * and says how many checks ran, so a test that checks nothing is visible (and fails: zero checks
 * is an error). */
#pragma once

#include <errno.h> /* program_invocation_short_name too (_GNU_SOURCE) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tests_checks;
static int tests_failures;
static char tests_current[128]; /* the test function running now, named in every failure */

/* Counts a failed check and says where, prefixed with the name of the test it is in. */
#define tests_fail_(...)                                                                           \
    do {                                                                                           \
        tests_failures++;                                                                          \
        fprintf(stderr, "%s: %s:%d: ", tests_current[0] ? tests_current : "(setup)", __FILE__,     \
                __LINE__);                                                                         \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
    } while (0)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        tests_checks++;                                                                            \
        if (!(cond))                                                                               \
            tests_fail_("check failed: %s", #cond);                                                \
    } while (0)

/* A check that fails wherever it is reached: the code path must never run. */
#define FAIL(what)                                                                                 \
    do {                                                                                           \
        tests_checks++;                                                                            \
        tests_fail_("reached: %s", what);                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long _a = (long long)(a), _b = (long long)(b);                                        \
        tests_checks++;                                                                            \
        if (_a != _b)                                                                              \
            tests_fail_("check failed: %s == %s (%lld != %lld)", #a, #b, _a, _b);                  \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *_a = (a), *_b = (b);                                                           \
        tests_checks++;                                                                            \
        if (!_a || !_b || strcmp(_a, _b) != 0)                                                     \
            tests_fail_("check failed: %s == %s (\"%s\" != \"%s\")", #a, #b, _a ? _a : "(null)",   \
                        _b ? _b : "(null)");                                                       \
    } while (0)

/* The message contains the substring. */
#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        const char *_h = (hay), *_n = (needle);                                                    \
        tests_checks++;                                                                            \
        if (!_h || !strstr(_h, _n))                                                                \
            tests_fail_("check failed: \"%s\" contains \"%s\"", _h ? _h : "(null)", _n);           \
    } while (0)

typedef void (*test_fn)(void);

/* Sets tests_current to the i-th name of "a, b, c" (the stringified TESTS_MAIN list). */
static inline void tests_name(const char *names, size_t i)
{
    const char *p = names;
    for (; i > 0 && p; i--) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    tests_current[0] = '\0';
    if (!p || !*p) { /* no list of names: number them */
        (void)snprintf(tests_current, sizeof(tests_current), "test #%zu", i + 1);
        return;
    }
    while (*p == ' ' || *p == '\n' || *p == '\t')
        p++;
    size_t n = strcspn(p, ", \n\t");
    if (n >= sizeof(tests_current))
        n = sizeof(tests_current) - 1;
    memcpy(tests_current, p, n);
    tests_current[n] = '\0';
}

/* Whether TESTS_SKIP (environment: "program:test,program:test") names the test running now
 * in this program. For runs that slow everything down many times over (scripts/test
 * --valgrind), which only the tests bounding a time would fail. */
static inline int tests_skipped(void)
{
    const char *list = getenv("TESTS_SKIP");
    char want[256];
    int n = snprintf(want, sizeof(want), "%s:%s", program_invocation_short_name, tests_current);
    if (!list || n <= 0 || (size_t)n >= sizeof(want))
        return 0;
    for (const char *p = list; (p = strstr(p, want)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

static inline int tests_run(const char *names, test_fn *fns, size_t n)
{
    int failed_tests = 0;
    for (size_t i = 0; i < n; i++) {
        int before = tests_failures;
        tests_name(names, i);
        if (tests_skipped()) {
            fprintf(stderr, "SKIP %s (TESTS_SKIP)\n", tests_current);
            continue;
        }
        fns[i]();
        if (tests_failures != before) {
            failed_tests++;
            fprintf(stderr, "FAIL %s (%d failed checks)\n", tests_current, tests_failures - before);
        }
    }
    tests_current[0] = '\0';
    fprintf(stderr, "%d checks, %d failed, in %d of %zu tests\n", tests_checks, tests_failures,
            failed_tests, n);
    if (tests_checks == 0) {
        fprintf(stderr, "no checks ran\n");
        return 1;
    }
    return tests_failures ? 1 : 0;
}

/* Runs the listed tests, named from the list itself, for a main() that does more around them:
 *     int r = TESTS_RUN(test_a, test_b);  */
#define TESTS_RUN(...)                                                                             \
    tests_run(#__VA_ARGS__, (test_fn[]){__VA_ARGS__},                                              \
              sizeof((test_fn[]){__VA_ARGS__}) / sizeof(test_fn))

#define TESTS_MAIN(...)                                                                            \
    int main(void)                                                                                 \
    {                                                                                              \
        test_fn _fns[] = {__VA_ARGS__};                                                            \
        return tests_run(#__VA_ARGS__, _fns, sizeof(_fns) / sizeof(_fns[0]));                      \
    }

/* How many lines of the file at path contain needle (a line is read up to 2047 bytes at a time);
 * -1 when it cannot be opened. */
static inline int tests_count_lines(const char *path, const char *needle)
{
    FILE *fp = fopen(path, "r");
    char line[2048];
    int n = 0;
    if (!fp)
        return -1;
    while (fgets(line, sizeof(line), fp))
        n += strstr(line, needle) != NULL;
    fclose(fp);
    return n;
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
