/* test_buf.c - bounded buffers */
#include <errno.h>

#include "credkit/buf.h"

#include "tests.h"

static void test_append_and_cap(void)
{
    struct buf b;
    buf_init(&b, 8);
    CHECK_INT(buf_append_str(&b, "abcd"), 0);
    CHECK_INT(buf_printf(&b, "%d", 123), 0);
    CHECK_STR(buf_str(&b), "abcd123");
    CHECK_INT(buf_append_str(&b, "xy"), -E2BIG); /* 9 > 8 */
    CHECK_STR(buf_str(&b), "abcd123");           /* unchanged after a failed append */
    CHECK_INT(buf_append_char(&b, 'z'), 0);
    CHECK_INT(b.len, 8);
    CHECK_INT(buf_append_char(&b, 'z'), -E2BIG);
    buf_release(&b);
    CHECK(b.data == NULL && b.len == 0);
}

static void test_empty_is_string(void)
{
    struct buf b;
    buf_init(&b, 0);
    CHECK_STR(buf_str(&b), "");
    CHECK_INT(b.max, BUF_MAX_DEFAULT);
    char *s = buf_detach(&b);
    CHECK_STR(s, "");
    free(s);
}

static void test_secret_grow(void)
{
    struct buf b;
    buf_init_secret(&b, 1 << 20);
    for (int i = 0; i < 1000; i++)
        CHECK_INT(buf_append_str(&b, "0123456789"), 0);
    CHECK_INT(b.len, 10000);
    CHECK(memcmp(b.data + 9990, "0123456789", 10) == 0);
    buf_release(&b);
}

/* both ends, the front alone (the bytes move down), and nothing but blanks */
static void test_trim(void)
{
    struct buf b;
    buf_init_secret(&b, 100);
    CHECK_INT(buf_append_str(&b, " \t token \r\n"), 0);
    buf_trim(&b);
    CHECK_STR(buf_str(&b), "token");
    buf_reset(&b);
    CHECK_INT(buf_append_str(&b, "  ken"), 0);
    buf_trim(&b);
    CHECK_STR(buf_str(&b), "ken");
    CHECK_INT(b.len, 3);
    buf_reset(&b);
    CHECK_INT(buf_append_str(&b, " \t\r\n"), 0);
    buf_trim(&b);
    CHECK_STR(buf_str(&b), "");
    buf_trim(&b);
    CHECK_INT(b.len, 0);
    buf_release(&b);
}

/* the union of scope lists: in order, each word once, blanks collapsed */
static void test_new_words(void)
{
    struct buf b;
    buf_init(&b, 64);
    CHECK_INT(buf_append_new_words(&b, NULL), 0);
    CHECK_INT((int)b.len, 0);
    CHECK_INT(buf_append_new_words(&b, "  read  write read "), 0);
    CHECK_STR(buf_str(&b), "read write");
    CHECK_INT(buf_append_new_words(&b, "admin write reader"), 0);
    CHECK_STR(buf_str(&b), "read write admin reader");
    CHECK_INT(
        buf_append_new_words(&b, "this-word-is-far-too-long-for-a-buffer-of-sixty-four-bytes-x"),
        -E2BIG);
    CHECK_STR(buf_str(&b), "read write admin reader");
    buf_release(&b);
}

TESTS_MAIN(test_append_and_cap, test_empty_is_string, test_secret_grow, test_trim, test_new_words)
