/* test_jsonr.c - the strict JSON reader: values of every type, numbers at their bounds */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "credkit/jsonr.h"

#include "tests.h"

static int skip_all(const char *text, struct err *e)
{
    struct jsonr rd;
    jsonr_init(&rd, text, strlen(text), e);
    int r = jsonr_skip(&rd);
    if (r >= 0 && jsonr_peek(&rd) != -1)
        r = jsonr_syntax(&rd, "trailing");
    return r;
}

static void test_skip_every_type(void)
{
    struct err e = ERR_INIT;
    CHECK_INT(skip_all(" {\"a\": [1, -0, 0.5, 1e-3, 2E+9, true, false, null, \"\\u20ac\"],"
                       " \"b\": {}, \"c\": [], \"\": {\"d\": [[{}]]}} ",
                       &e),
              0);
    CHECK_INT(skip_all("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", &e), 0);
    CHECK_INT(skip_all("[1,]", &e), -EBADMSG);
    CHECK_INT(skip_all("{\"a\":1,}", &e), -EBADMSG);
    CHECK_INT(skip_all("-", &e), -EBADMSG);
    CHECK_INT(skip_all("1e", &e), -EBADMSG);
    CHECK_INT(skip_all("nul", &e), -EBADMSG);
    CHECK_INT(skip_all("/* no */ 1", &e), -EBADMSG);
    CHECK_INT(skip_all("{\"a\" 1}", &e), -EBADMSG);
    CHECK_STR(err_msg(&e), "line 1, column 6: expected ':'");
    CHECK_INT(skip_all("[\n  1,\n  x]", &e), -EBADMSG);
    CHECK_STR(err_msg(&e), "line 3, column 3: unexpected character");
}

static int number(const char *text, bool *is_int, int64_t *v)
{
    struct jsonr rd;
    struct err e = ERR_INIT;
    jsonr_init(&rd, text, strlen(text), &e);
    return jsonr_number(&rd, is_int, v);
}

static void test_numbers(void)
{
    bool i = false;
    int64_t v = 0;
    CHECK_INT(number("9223372036854775807", &i, &v), 0);
    CHECK(i && v == INT64_MAX);
    CHECK_INT(number("-9223372036854775808", &i, &v), 0);
    CHECK(i && v == INT64_MIN);
    CHECK_INT(number("9223372036854775808", &i, &v), 0);
    CHECK(!i);
    CHECK_INT(number("-9223372036854775809", &i, &v), 0);
    CHECK(!i);
    CHECK_INT(number("184467440737095516160", &i, &v), 0);
    CHECK(!i);
    CHECK_INT(number("12.0", &i, &v), 0);
    CHECK(!i);
    CHECK_INT(number("0", &i, &v), 0);
    CHECK(i && v == 0);
    CHECK_INT(number("00", &i, &v), -EBADMSG);
}

static void test_object_members(void)
{
    static const char text[] = "{\"k1\": \"v\\n1\", \"skip\": {\"x\": [1]}, \"k2\": \"\"}";
    struct jsonr rd;
    struct err e = ERR_INIT;
    struct buf key, val;
    size_t count = 0;
    int r, seen = 0;
    buf_init_secret(&key, 64);
    buf_init_secret(&val, 64);
    jsonr_init(&rd, text, strlen(text), &e);
    CHECK_INT(jsonr_object_begin(&rd), 0);
    while ((r = jsonr_object_next(&rd, &count, &key)) > 0) {
        if (strcmp(buf_str(&key), "skip") == 0) {
            CHECK_STR(jsonr_kind(&rd), "an object");
            CHECK_INT(jsonr_skip(&rd), 0);
            continue;
        }
        buf_reset(&val);
        CHECK_INT(jsonr_string(&rd, &val), 0);
        seen++;
        if (strcmp(buf_str(&key), "k1") == 0)
            CHECK_STR(buf_str(&val), "v\n1");
        else
            CHECK_STR(buf_str(&val), "");
    }
    CHECK_INT(r, 0);
    CHECK_INT(count, 3);
    CHECK_INT(seen, 2);
    CHECK_INT(jsonr_peek(&rd), -1);
    buf_release(&key);
    buf_release(&val);

    /* a string longer than the buffer's cap */
    buf_init_secret(&val, 4);
    jsonr_init(&rd, "\"12345\"", 7, &e);
    CHECK_INT(jsonr_string(&rd, &val), -E2BIG);
    buf_release(&val);

    jsonr_init(&rd, "[]", 2, &e);
    CHECK_INT(jsonr_object_begin(&rd), -EBADMSG);
    CHECK_CONTAINS(err_msg(&e), "expected '{'");
}

static void test_utf8(void)
{
    CHECK(jsonr_utf8_valid("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10));
    CHECK(!jsonr_utf8_valid("\xc3", 1));
    CHECK(!jsonr_utf8_valid("\xc0\x80", 2));         /* overlong */
    CHECK(!jsonr_utf8_valid("\xed\xb0\x80", 3));     /* a surrogate */
    CHECK(!jsonr_utf8_valid("\xf4\x90\x80\x80", 4)); /* past U+10FFFF */
    CHECK(jsonr_utf8_valid("", 0));
}

TESTS_MAIN(test_skip_every_type, test_numbers, test_object_members, test_utf8)
