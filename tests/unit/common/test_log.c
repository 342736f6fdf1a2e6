/* test_log.c - the rate limit of repeated messages: a burst per window, the rest counted and
 * said by the first message of a later window, a new window after a quiet spell, a clock that
 * goes back, and a flood of a million messages costing a few lines per window; the error lines
 * kept for a --json failure's message, redacted, without the prefix. */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "credkit/log.h"
#include "tests.h"

static void test_ratelimit_burst_and_count(void)
{
    struct log_ratelimit rl = LOG_RATELIMIT_INIT(1000, 3);
    unsigned sup = 99;
    int64_t t = 5000;
    for (int i = 0; i < 3; i++) {
        CHECK(log_ratelimit_check(&rl, t + i, &sup));
        CHECK_INT(sup, 0);
    }
    for (int i = 0; i < 7; i++)
        CHECK(!log_ratelimit_check(&rl, t + 10 + i, &sup));
    CHECK(!log_ratelimit_check(&rl, t + 999, NULL));
    /* the next window: let through, with the count of what was left out */
    CHECK(log_ratelimit_check(&rl, t + 1000, &sup));
    CHECK_INT(sup, 8);
    CHECK(log_ratelimit_check(&rl, t + 1001, &sup));
    CHECK_INT(sup, 0);
    /* a long quiet spell: a fresh window, nothing to report */
    CHECK(log_ratelimit_check(&rl, t + 60000, &sup));
    CHECK_INT(sup, 0);
    /* a clock that went back starts a window too */
    CHECK(log_ratelimit_check(&rl, 10, &sup));
    CHECK(log_ratelimit_check(&rl, 11, &sup));
    CHECK(log_ratelimit_check(&rl, 12, &sup));
    CHECK(!log_ratelimit_check(&rl, 13, &sup));
    CHECK(log_ratelimit_check(&rl, 1013, &sup));
    CHECK_INT(sup, 1);
}

static void test_ratelimit_flood(void)
{
    struct log_ratelimit rl = LOG_RATELIMIT_INIT(LOG_RATELIMIT_WINDOW_MS, LOG_RATELIMIT_BURST);
    unsigned long long shown = 0, said_suppressed = 0, sup;
    /* a million messages over 100 s: a burst in each of the 10 windows */
    for (int64_t i = 0; i < 1000000; i++) {
        unsigned s;
        if (log_ratelimit_check(&rl, 1 + i / 10, &s)) {
            shown++;
            said_suppressed += s;
        }
    }
    CHECK(shown <= 10 * LOG_RATELIMIT_BURST + LOG_RATELIMIT_BURST);
    CHECK(shown >= 10 * LOG_RATELIMIT_BURST);
    sup = rl.suppressed;
    CHECK_INT(shown + said_suppressed + sup, 1000000ull);
}

static void test_errors_kept(void)
{
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    struct log *l = log_new("tool", fd);
    CHECK(l != NULL);
    if (!l)
        return;
    CHECK_STR(log_errors(l), "");
    CHECK_INT(redact_add(log_redact(l), "token", "hunter22", 8), 0);
    log_warn(l, "a warning is not kept");
    log_error(l, "cannot use 'hunter22': %s", "refused\n");
    log_info(l, "nor is info");
    log_error(l, "second \x1b[2J line");
    const char *kept = log_errors(l);
    CHECK(strstr(kept, "hunter22") == NULL);
    CHECK(strstr(kept, "warning") == NULL && strstr(kept, "info") == NULL);
    CHECK(strncmp(kept, "cannot use '", 12) == 0);
    CHECK(strstr(kept, "refused\nsecond ") != NULL);
    CHECK(strchr(kept, '\x1b') == NULL);
    CHECK(strstr(kept, "tool:") == NULL);
    /* a flood keeps its first lines, within the cap */
    for (int i = 0; i < 10000; i++)
        log_error(l, "line %d of a flood", i);
    CHECK(strlen(log_errors(l)) <= 16 * 1024);
    CHECK(strncmp(log_errors(l), "cannot use '", 12) == 0);
    log_free(l);
    close(fd);
}

TESTS_MAIN(test_ratelimit_burst_and_count, test_ratelimit_flood, test_errors_kept)
