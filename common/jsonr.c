/* jsonr.c - a strict JSON reader that decodes strings into buffers the caller wipes */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "credkit/json.h"
#include "credkit/jsonr.h"

void jsonr_init(struct jsonr *rd, const char *text, size_t len, struct err *e)
{
    *rd = (struct jsonr){.s = text, .len = len, .e = e};
}

int jsonr_syntax(struct jsonr *rd, const char *what)
{
    return json_error_at(rd->e, rd->s, rd->len, rd->pos, what);
}

static void skip_ws(struct jsonr *rd)
{
    while (rd->pos < rd->len && (rd->s[rd->pos] == ' ' || rd->s[rd->pos] == '\t' ||
                                 rd->s[rd->pos] == '\n' || rd->s[rd->pos] == '\r'))
        rd->pos++;
}

int jsonr_peek(struct jsonr *rd)
{
    skip_ws(rd);
    return rd->pos < rd->len ? (unsigned char)rd->s[rd->pos] : -1;
}

static int expect(struct jsonr *rd, char c, const char *what)
{
    if (jsonr_peek(rd) != (unsigned char)c)
        return jsonr_syntax(rd, what);
    rd->pos++;
    return 0;
}

/* The length of the well-formed UTF-8 sequence at p (no overlongs, no surrogates, at most
 * U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t avail)
{
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        n = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3;
        if (p[0] == 0xe0)
            lo = 0xa0;
        else if (p[0] == 0xed)
            hi = 0x9f;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4;
        if (p[0] == 0xf0)
            lo = 0x90;
        else if (p[0] == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (avail < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

/* Whether s[0..len) is well-formed UTF-8: JSON text can carry nothing else. */
bool jsonr_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t n = p[i] < 0x80 ? 1 : utf8_seq(p + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

static int hex4(struct jsonr *rd, unsigned *ret)
{
    unsigned v = 0;
    if (rd->len - rd->pos < 4)
        return jsonr_syntax(rd, "invalid \\u escape");
    for (int i = 0; i < 4; i++) {
        char c = rd->s[rd->pos + (size_t)i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return jsonr_syntax(rd, "invalid \\u escape");
        v = v << 4 | d;
    }
    rd->pos += 4;
    *ret = v;
    return 0;
}

static int put_utf8(struct buf *out, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12);
        u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | cp >> 18);
        u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return out ? buf_append(out, u, n) : 0;
}

/* After the backslash of \uXXXX (pos on the 'u'): one code point, surrogate pairs joined. */
static int read_u_escape(struct jsonr *rd, struct buf *out)
{
    unsigned cp, lo;
    rd->pos++;
    int r = hex4(rd, &cp);
    if (r < 0)
        return r;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return jsonr_syntax(rd, "lone surrogate in a \\u escape");
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (rd->len - rd->pos < 2 || rd->s[rd->pos] != '\\' || rd->s[rd->pos + 1] != 'u')
            return jsonr_syntax(rd, "lone surrogate in a \\u escape");
        rd->pos += 2;
        r = hex4(rd, &lo);
        if (r < 0)
            return r;
        if (lo < 0xdc00 || lo > 0xdfff)
            return jsonr_syntax(rd, "lone surrogate in a \\u escape");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    /* no field of an answer may hold a NUL, and C strings could not carry one */
    if (cp == 0)
        return jsonr_syntax(rd, "\\u0000 in a string");
    return put_utf8(out, cp);
}

static int read_escape(struct jsonr *rd, struct buf *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    rd->pos++; /* the backslash */
    if (rd->pos >= rd->len)
        return jsonr_syntax(rd, "unterminated string");
    char c = rd->s[rd->pos];
    if (c == 'u')
        return read_u_escape(rd, out);
    const char *f = c ? strchr(from, c) : NULL;
    if (!f)
        return jsonr_syntax(rd, "invalid escape in a string");
    rd->pos++;
    return out ? buf_append_char(out, to[f - from]) : 0;
}

/* Reads a string into out (a secret buffer, appended to), or only checks it when out is NULL. */
int jsonr_string(struct jsonr *rd, struct buf *out)
{
    int r = expect(rd, '"', "expected a string");
    while (r >= 0) {
        if (rd->pos >= rd->len)
            return jsonr_syntax(rd, "unterminated string");
        const unsigned char *p = (const unsigned char *)rd->s + rd->pos;
        if (*p == '"') {
            rd->pos++;
            return 0;
        }
        if (*p == '\\') {
            r = read_escape(rd, out);
            continue;
        }
        if (*p < 0x20)
            return jsonr_syntax(rd, "control character in a string");
        size_t n = *p < 0x80 ? 1 : utf8_seq(p, rd->len - rd->pos);
        if (n == 0)
            return jsonr_syntax(rd, "invalid UTF-8 in a string");
        r = out ? buf_append(out, p, n) : 0;
        rd->pos += n;
    }
    return r;
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* Reads a number; *ret_int tells whether it was an integer that fits in int64_t (then in
 * *ret). */
int jsonr_number(struct jsonr *rd, bool *ret_int, int64_t *ret)
{
    bool neg = false, integer = true;
    uint64_t v = 0;
    if (rd->s[rd->pos] == '-') {
        neg = true;
        rd->pos++;
    }
    if (rd->pos >= rd->len || !is_digit(rd->s[rd->pos]))
        return jsonr_syntax(rd, "invalid number");
    if (rd->s[rd->pos] == '0' && rd->pos + 1 < rd->len && is_digit(rd->s[rd->pos + 1]))
        return jsonr_syntax(rd, "invalid number (leading zero)");
    for (; rd->pos < rd->len && is_digit(rd->s[rd->pos]); rd->pos++) {
        unsigned d = (unsigned)(rd->s[rd->pos] - '0');
        if (v > (UINT64_MAX - d) / 10)
            integer = false;
        else
            v = v * 10 + d;
    }
    if (rd->pos < rd->len && rd->s[rd->pos] == '.') {
        integer = false;
        rd->pos++;
        if (rd->pos >= rd->len || !is_digit(rd->s[rd->pos]))
            return jsonr_syntax(rd, "invalid number");
        while (rd->pos < rd->len && is_digit(rd->s[rd->pos]))
            rd->pos++;
    }
    if (rd->pos < rd->len && (rd->s[rd->pos] == 'e' || rd->s[rd->pos] == 'E')) {
        integer = false;
        rd->pos++;
        if (rd->pos < rd->len && (rd->s[rd->pos] == '+' || rd->s[rd->pos] == '-'))
            rd->pos++;
        if (rd->pos >= rd->len || !is_digit(rd->s[rd->pos]))
            return jsonr_syntax(rd, "invalid number");
        while (rd->pos < rd->len && is_digit(rd->s[rd->pos]))
            rd->pos++;
    }
    if (integer && v > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
        integer = false;
    *ret_int = integer;
    if (integer)
        *ret = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return 0;
}

static int enter(struct jsonr *rd)
{
    if (++rd->depth > JSON_MAX_DEPTH)
        return jsonr_syntax(rd, "nesting too deep");
    rd->pos++; /* '{' or '[' */
    return 0;
}

int jsonr_object_begin(struct jsonr *rd)
{
    if (jsonr_peek(rd) != '{')
        return jsonr_syntax(rd, "expected '{'");
    return enter(rd);
}

int jsonr_object_next(struct jsonr *rd, size_t *count, struct buf *key)
{
    int c = jsonr_peek(rd);
    if (c == '}') {
        rd->pos++;
        rd->depth--;
        return 0;
    }
    if (*count > 0) {
        if (c != ',')
            return jsonr_syntax(rd, "expected ',' or '}'");
        rd->pos++;
    } else if (c != '"') {
        return jsonr_syntax(rd, "expected a string or '}'");
    }
    if (key)
        buf_reset(key);
    int r = jsonr_string(rd, key);
    if (r >= 0)
        r = expect(rd, ':', "expected ':'");
    if (r < 0)
        return r;
    (*count)++;
    return 1;
}

static int skip_object(struct jsonr *rd)
{
    size_t count = 0;
    int r = enter(rd);
    while (r >= 0) {
        r = jsonr_object_next(rd, &count, NULL);
        if (r <= 0)
            break;
        r = jsonr_skip(rd);
    }
    return r;
}

static int skip_array(struct jsonr *rd)
{
    int r = enter(rd);
    for (size_t i = 0; r >= 0; i++) {
        int c = jsonr_peek(rd);
        if (c == ']') {
            rd->pos++;
            rd->depth--;
            return 0;
        }
        if (i > 0) {
            if (c != ',')
                return jsonr_syntax(rd, "expected ',' or ']'");
            rd->pos++;
        }
        r = jsonr_skip(rd);
    }
    return r;
}

static int skip_literal(struct jsonr *rd, const char *word)
{
    size_t n = strlen(word);
    if (rd->len - rd->pos < n || memcmp(rd->s + rd->pos, word, n) != 0)
        return jsonr_syntax(rd, "unexpected character");
    rd->pos += n;
    return 0;
}

int jsonr_skip(struct jsonr *rd)
{
    bool integer;
    int64_t v;
    switch (jsonr_peek(rd)) {
    case '{':
        return skip_object(rd);
    case '[':
        return skip_array(rd);
    case '"':
        return jsonr_string(rd, NULL);
    case 't':
        return skip_literal(rd, "true");
    case 'f':
        return skip_literal(rd, "false");
    case 'n':
        return skip_literal(rd, "null");
    case -1:
        return jsonr_syntax(rd, "unexpected end of the answer");
    default:
        if (rd->s[rd->pos] == '-' || is_digit(rd->s[rd->pos]))
            return jsonr_number(rd, &integer, &v);
        return jsonr_syntax(rd, "unexpected character");
    }
}

/* The JSON type of the value ahead, for messages: "a string", "an object"... */
const char *jsonr_kind(struct jsonr *rd)
{
    switch (jsonr_peek(rd)) {
    case '{':
        return "an object";
    case '[':
        return "an array";
    case '"':
        return "a string";
    case 't':
    case 'f':
        return "a boolean";
    case 'n':
        return "null";
    default:
        return "a number";
    }
}
