/* textsafe.c - escaping for terminals, checks for header values and UTF-8 */
#include "credkit/textsafe.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at p (n bytes left) and its code point, or 0 when the
 * bytes there are not one (overlong forms, surrogates and values above U+10FFFF included). */
static size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
    size_t len;
    uint32_t c, min;
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    if ((p[0] & 0xe0) == 0xc0) {
        len = 2, c = p[0] & 0x1fu, min = 0x80;
    } else if ((p[0] & 0xf0) == 0xe0) {
        len = 3, c = p[0] & 0x0fu, min = 0x800;
    } else if ((p[0] & 0xf8) == 0xf0) {
        len = 4, c = p[0] & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3fu);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

size_t utf8_seq_len(const char *s, size_t avail)
{
    uint32_t c;
    return avail > 0 ? utf8_decode((const unsigned char *)s, avail, &c) : 0;
}

bool utf8_valid(const char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq_len(s + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

/* Whether code point c may act on a terminal or reorder what is shown around it. */
static bool cp_unsafe(uint32_t c)
{
    return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0x061c || c == 0x200e ||
           c == 0x200f || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

int text_escape_append(struct buf *out, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, start = 0;
    int r = 0;
    while (i < len) {
        uint32_t c = 0;
        size_t k = utf8_decode(p + i, len - i, &c);
        if (k > 0 && !cp_unsafe(c)) {
            i += k;
            continue;
        }
        if (i > start && (r = buf_append(out, s + start, i - start)) < 0)
            return r;
        if (k == 0 || c < 0x80)
            r = buf_printf(out, "\\x%02x", p[i]), k = 1;
        else
            r = buf_printf(out, "\\u{%04x}", (unsigned)c);
        if (r < 0)
            return r;
        i += k;
        start = i;
    }
    if (i > start)
        r = buf_append(out, s + start, i - start);
    return r < 0 ? r : 0;
}

const char *text_escaped(struct buf *scratch, const char *s)
{
    buf_reset(scratch);
    if (!s)
        s = "";
    return text_escape_append(scratch, s, strlen(s)) < 0 ? "" : buf_str(scratch);
}

char *text_escape_dup(const char *s)
{
    struct buf b;
    if (!s)
        s = "";
    buf_init(&b, 0);
    if (text_escape_append(&b, s, strlen(s)) < 0) {
        buf_release(&b);
        return NULL;
    }
    return buf_detach(&b);
}

bool header_value_safe(const char *s, size_t len)
{
    if (len == 0 || s[0] == ' ' || s[0] == '\t' || s[len - 1] == ' ' || s[len - 1] == '\t')
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

bool b64token_valid(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len &&
           (strchr("-._~+/", s[i]) || (s[i] >= 'a' && s[i] <= 'z') ||
            (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')) &&
           s[i] != '\0')
        i++;
    if (i == 0)
        return false;
    while (i < len && s[i] == '=')
        i++;
    return i == len;
}
