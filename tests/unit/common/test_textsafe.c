/* test_textsafe.c - escaping for terminals, checks for header values and UTF-8 */
#include <stdio.h>

#include "credkit/textsafe.h"

#include "tests.h"

static void check_escape(const char *in, size_t len, const char *want)
{
    struct buf b;
    buf_init(&b, 0);
    CHECK_INT(text_escape_append(&b, in, len), 0);
    CHECK_STR(buf_str(&b), want);
    /* what comes out needs no more escaping */
    struct buf again;
    buf_init(&again, 0);
    CHECK_INT(text_escape_append(&again, b.data ? b.data : "", b.len), 0);
    CHECK_STR(buf_str(&again), want);
    buf_release(&again);
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

/* utf8_seq_len() and utf8_valid(): well-formed UTF-8 only, at each edge of the encoding */
static void test_utf8(void)
{
    static const struct {
        const char *s;
        size_t len;
        size_t seq; /* utf8_seq_len() of the first character */
        bool valid;
    } cases[] = {
        {"", 0, 0, true},
        {"a", 1, 1, true},
        {"\0", 1, 1, true}, /* NUL is a character; callers refuse it */
        {"a\0b", 3, 1, true},
        {"\x7f", 1, 1, true},
        {"\xc2\x80", 2, 2, true},         /* U+0080, the first two-byte one */
        {"\xdf\xbf", 2, 2, true},         /* U+07FF */
        {"\xe0\xa0\x80", 3, 3, true},     /* U+0800 */
        {"\xed\x9f\xbf", 3, 3, true},     /* U+D7FF, below the surrogates */
        {"\xee\x80\x80", 3, 3, true},     /* U+E000, above them */
        {"\xef\xbf\xbf", 3, 3, true},     /* U+FFFF */
        {"\xf0\x90\x80\x80", 4, 4, true}, /* U+10000 */
        {"\xf4\x8f\xbf\xbf", 4, 4, true}, /* U+10FFFF, the last */
        {"h\xc3\xa9!", 4, 1, true},
        {"\xc0\x80", 2, 0, false},         /* overlong NUL */
        {"\xc1\xbf", 2, 0, false},         /* overlong U+007F */
        {"\xe0\x9f\xbf", 3, 0, false},     /* overlong U+07FF */
        {"\xf0\x8f\xbf\xbf", 4, 0, false}, /* overlong U+FFFF */
        {"\xed\xa0\x80", 3, 0, false},     /* U+D800, a surrogate */
        {"\xed\xbf\xbf", 3, 0, false},     /* U+DFFF */
        {"\xf4\x90\x80\x80", 4, 0, false}, /* U+110000 */
        {"\xf5\x80\x80\x80", 4, 0, false},
        {"\xf8\x88\x80\x80\x80", 5, 0, false}, /* five-byte form */
        {"\xff", 1, 0, false},
        {"\x80", 1, 0, false}, /* a stray continuation byte */
        {"\xc3", 1, 0, false}, /* cut short */
        {"\xe2\x82", 2, 0, false},
        {"\xf0\x9f\x98", 3, 0, false},
        {"\xe2\x82\xac", 2, 0, false}, /* cut short by len, not by the bytes */
        {"\xc3\x28", 2, 0, false},     /* a continuation byte missing */
        {"ok\xc3", 3, 1, false},       /* valid, then cut short */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (utf8_seq_len(cases[i].s, cases[i].len) != cases[i].seq ||
            utf8_valid(cases[i].s, cases[i].len) != cases[i].valid)
            fprintf(stderr, "case %zu\n", i);
        CHECK_INT(utf8_seq_len(cases[i].s, cases[i].len), cases[i].seq);
        CHECK(utf8_valid(cases[i].s, cases[i].len) == cases[i].valid);
    }
}

TESTS_MAIN(test_escape, test_header_value, test_b64token, test_utf8)
