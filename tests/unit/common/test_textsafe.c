/* test_textsafe.c - escaping for terminals, checks for header values */
#include "credkit/textsafe.h"

#include "tests.h"

static void check_escape(const char *in, size_t len, const char *want)
{
    struct buf b;
    buf_init(&b, 0);
    CHECK_INT(text_escape_append(&b, in, len), 0);
    CHECK_STR(buf_str(&b), want);
    CHECK(text_needs_escape(in, len) == (strcmp(want, in) != 0 || strlen(in) != len));
    buf_release(&b);
}

static void test_escape(void)
{
    check_escape("plain text, caf\xc3\xa9 \xe2\x9c\x93", 21,
                 "plain text, caf\xc3\xa9 \xe2\x9c\x93");
    check_escape("a\x1b[2Jb", 6, "a\\x1b[2Jb");
    check_escape("row\r\nforged", 11, "row\\x0d\\x0aforged");
    check_escape("tab\there\x7f", 9, "tab\\x09here\\x7f");
    /* U+202E RIGHT-TO-LEFT OVERRIDE, U+2066 LEFT-TO-RIGHT ISOLATE, U+0085 NEXT LINE */
    check_escape("evil\xe2\x80\xaeh", 8, "evil\\u{202e}h");
    check_escape("\xe2\x81\xa6x\xc2\x85", 6, "\\u{2066}x\\u{0085}");
    /* invalid UTF-8: a lone continuation byte, a truncated sequence, an overlong slash */
    check_escape("a\x80z", 3, "a\\x80z");
    check_escape("\xe2\x80", 2, "\\xe2\\x80");
    check_escape("\xc0\xaf", 2, "\\xc0\\xaf");
    check_escape("nul\0after", 9, "nul\\x00after");
    check_escape("back\\slash", 10, "back\\slash");

    struct buf s;
    buf_init(&s, 0);
    CHECK_STR(text_escaped(&s, NULL), "");
    CHECK_STR(text_escaped(&s, "x\ny"), "x\\x0ay");
    buf_release(&s);
    struct buf tiny;
    buf_init(&tiny, 4);
    CHECK_STR(text_escaped(&tiny, "\x1b\x1b\x1b"), "");
    buf_release(&tiny);
    char *d = text_escape_dup("\x07");
    CHECK_STR(d, "\\x07");
    free(d);
}

static void test_header_value(void)
{
    CHECK(header_value_safe("Bearer abc.def", 14));
    CHECK(header_value_safe("a\tb", 3));
    CHECK(header_value_safe("caf\xc3\xa9", 5));
    CHECK(!header_value_safe("", 0));
    CHECK(!header_value_safe("abc\r\nX-Evil: 1", 15));
    CHECK(!header_value_safe("abc\n", 4));
    CHECK(!header_value_safe("a\0b", 3));
    CHECK(!header_value_safe("a\x7f", 2));
    CHECK(!header_value_safe(" lead", 5));
    CHECK(!header_value_safe("trail\t", 6));
}

static void test_b64token(void)
{
    CHECK(b64token_valid("eyJhbGciOi.J9-_~+/", 18));
    CHECK(b64token_valid("abc==", 5));
    CHECK(!b64token_valid("", 0));
    CHECK(!b64token_valid("==", 2));
    CHECK(!b64token_valid("ab=c", 4));
    CHECK(!b64token_valid("ab c", 4));
    CHECK(!b64token_valid("tok\r\nX: y", 9));
    CHECK(!b64token_valid("a\0b", 3));
    CHECK(!b64token_valid("caf\xc3\xa9", 5));
}

TESTS_MAIN(test_escape, test_header_value, test_b64token)
