/* test_list_scale.c - what `secrets list` does per entry stays constant as entries grow.
 *
 * list resolves every recipe: each value is registered for redaction and each error message is
 * redacted. With a scan of every registered value at every position of every message, 8000
 * recipes took over a minute; indexed, well under a second. The lookup of each name in the
 * store is covered by test_store.c (test_lookup_linear). */
#include <stdio.h>
#include <time.h>

#include "credkit/redact.h"

#include "tests.h"

static double secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* n values registered, n messages redacted (as list does for n recipes, half of them failing):
 * the best of three runs, in seconds. */
static double register_and_redact(size_t n)
{
    double best = 1e9;
    for (int round = 0; round < 3; round++) {
        struct redact *r = redact_new();
        struct buf out;
        char name[32], value[64], msg[160];
        buf_init(&out, 1 << 20);
        double t0 = secs();
        for (size_t i = 0; r && i < n; i++) {
            snprintf(name, sizeof(name), "V%zu", i);
            snprintf(value, sizeof(value), "value-number-%zu-abcdefgh", i);
            CHECK_INT(redact_add(r, name, value, strlen(value)), 0);
        }
        for (size_t i = 0; r && i < n; i++) {
            snprintf(msg, sizeof(msg),
                     "'V%zu': the command exited with status 1: cannot reach the server at "
                     "https://example.com/v1/items",
                     i);
            buf_reset(&out);
            CHECK_INT(redact_apply(r, msg, strlen(msg), &out), 0);
        }
        double t = secs() - t0;
        best = t < best ? t : best;
        buf_release(&out);
        redact_free(r);
    }
    return best;
}

static void test_redact_scales(void)
{
    double small = register_and_redact(2000), big = register_and_redact(8000);
    /* a scan of every value: 16 times as long, and tens of seconds */
    CHECK(big < 2.0);
    CHECK(big < 8 * small + 0.05);
}

/* The index changes nothing of what is replaced: every value, the longest where they overlap,
 * values sharing a prefix told apart, a value re-registered once. */
static void test_redact_still_exact(void)
{
    struct redact *r = redact_new();
    struct buf out;
    buf_init(&out, 4096);
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK_INT(redact_add(r, "SHORT", "ghp_", 4), 0);
    CHECK_INT(redact_add(r, "A", "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 40), 0);
    CHECK_INT(redact_add(r, "B", "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", 40), 0);
    CHECK_INT(redact_add(r, "B2", "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", 40), 0);
    CHECK_INT(redact_add(r, "MID", "pass-word", 9), 0);
    CHECK_INT(redact_add(r, "TINY", "abc", 3), 0); /* below the minimum: not registered */
    const char *msg = "x ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab y ghp_ z pass-word abc "
                      "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    CHECK_INT(redact_apply(r, msg, strlen(msg), &out), 0);
    CHECK_STR(buf_str(&out), "x [REDACTED:B] y [REDACTED:SHORT] z [REDACTED:MID] abc [REDACTED:A]");
    buf_release(&out);
    redact_free(r);
}

TESTS_MAIN(test_redact_scales, test_redact_still_exact)
