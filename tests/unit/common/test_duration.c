/* test_duration.c - parsing and formatting durations, and checked numbers */
#include <errno.h>

#include "credkit/duration.h"
#include "credkit/util.h"

#include "tests.h"

static void test_parse(void)
{
    int64_t ms = -1;
    CHECK_INT(duration_parse("0", &ms), 0);
    CHECK_INT(ms, 0);
    CHECK_INT(duration_parse("90", &ms), 0);
    CHECK_INT(ms, 90000);
    CHECK_INT(duration_parse("5m", &ms), 0);
    CHECK_INT(ms, 300000);
    CHECK_INT(duration_parse("8h", &ms), 0);
    CHECK_INT(ms, 8 * 3600000LL);
    CHECK_INT(duration_parse("1h30m", &ms), 0);
    CHECK_INT(ms, 5400000);
    CHECK_INT(duration_parse("1d2h3m4s5ms", &ms), 0);
    CHECK_INT(ms, 86400000LL + 7200000 + 180000 + 4000 + 5);
    CHECK_INT(duration_parse("250ms", &ms), 0);
    CHECK_INT(ms, 250);
}

static void test_parse_bad(void)
{
    int64_t ms = 42;
    CHECK_INT(duration_parse("", &ms), -EINVAL);
    CHECK_INT(duration_parse("-5m", &ms), -EINVAL);
    CHECK_INT(duration_parse("5x", &ms), -EINVAL);
    CHECK_INT(duration_parse("m", &ms), -EINVAL);
    CHECK_INT(duration_parse("30m1h", &ms), -EINVAL); /* units must decrease */
    CHECK_INT(duration_parse("5m5", &ms), -EINVAL);   /* trailing bare number */
    CHECK_INT(duration_parse("1.5h", &ms), -EINVAL);
    CHECK_INT(duration_parse(" 5m", &ms), -EINVAL);
    CHECK_INT(duration_parse("99999999999999999999", &ms), -ERANGE);
    CHECK_INT(duration_parse("9999999999999999d", &ms), -ERANGE);
    CHECK_INT(ms, 42); /* untouched on failure */
}

static void test_format(void)
{
    char b[DURATION_BUF_SIZE];
    CHECK_STR(duration_format(0, b, sizeof(b)), "0");
    CHECK_STR(duration_format(300000, b, sizeof(b)), "5m");
    CHECK_STR(duration_format(5400000, b, sizeof(b)), "1h30m");
    CHECK_STR(duration_format(1500, b, sizeof(b)), "1s500ms");
    CHECK_STR(duration_format(86400000, b, sizeof(b)), "1d");
    int64_t back = 0;
    CHECK_INT(duration_parse(duration_format(93784005, b, sizeof(b)), &back), 0);
    CHECK_INT(back, 93784005);
}

static void test_numbers_and_names(void)
{
    int64_t v = 7;
    CHECK_INT(parse_int64("123", &v), 0);
    CHECK_INT(v, 123);
    CHECK_INT(parse_int64("-5", &v), 0);
    CHECK_INT(v, -5);
    CHECK_INT(parse_int64("", &v), -EINVAL);
    CHECK_INT(parse_int64("12a", &v), -EINVAL);
    CHECK_INT(parse_int64(" 1", &v), -EINVAL);
    CHECK_INT(parse_int64("99999999999999999999", &v), -ERANGE);
    CHECK(name_is_valid("GITHUB_TOKEN"));
    CHECK(name_is_valid("_x9"));
    CHECK(!name_is_valid("9x"));
    CHECK(!name_is_valid("A-B"));
    CHECK(!name_is_valid(""));
    CHECK(!name_is_valid("A B"));
}

TESTS_MAIN(test_parse, test_parse_bad, test_format, test_numbers_and_names)
