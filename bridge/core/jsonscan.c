/* jsonscan.c - a JSON-RPC envelope from the bytes: one validating pass, spans, a splice */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "core/jsonscan.h"
#include "credkit/util.h"

/* Numbers longer than this are json-c's to judge (how it rounds or clamps them is its own). */
#define NUMBER_MAX 64
/* Integers beyond this are not settled here (JSON numbers a peer reads as doubles). */
#define UINT_EXACT_MAX (UINT64_C(1) << 53)

/* The objects whose members the scan records: the message, its params, params._meta. */
enum level {
    L_TOP,
    L_PARAMS,
    L_META,
    L_OTHER,
};

/* The scan's state; each reading function takes the position to read at and returns the one
 * after what it read, or NULL when the text is not accepted (a cursor in a register rather than
 * a field written back at every byte). */
struct scan {
    const char *s, *end;
    unsigned depth;
    unsigned seen;  /* the members recorded, a bit each (enum which) */
    bool unsettled; /* valid so far, but a routed member is escaped, repeated or of a type the
                     * scan does not route */
    struct jscan *j;
};

/* Bytes a string may hold as they are: printable ASCII but the quote and the backslash. */
static bool plain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

#define ONES  UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* The high bit of each byte of a word that is not plain: below 0x20, a quote, a backslash or
 * not ASCII (the classic "has a zero byte" test, three times, and the high bits themselves).
 * A byte may also be marked by a borrow from a marked byte below it, never a byte below the
 * first one that is not plain: so the lowest mark is exact. */
static uint64_t word_special(uint64_t v)
{
    uint64_t quote = v ^ (ONES * '"'), bslash = v ^ (ONES * '\\');
    return ((v - ONES * 0x20) | (quote - ONES) | (bslash - ONES) | v) & HIGHS;
}

#ifdef __SSE2__
/* A bit per byte of the 16 at p, set when the byte is plain. Above 0x1f as a signed byte is
 * ASCII and not a control byte: one compare for both. */
static unsigned plain16(const char *p)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i odd =
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    __m128i ascii = _mm_cmpgt_epi8(v, _mm_set1_epi8(0x1f));
    return (unsigned)_mm_movemask_epi8(_mm_andnot_si128(odd, ascii));
}
#endif

/* The first byte in [p, end) that is not plain, or end. The bulk of a big result (base64, text)
 * is plain ASCII, and most short strings end within a few bytes: 16 bytes a test with SSE2 (the
 * x86-64 baseline), 32 a branch once a string is long, 8 in a word elsewhere and for the tail;
 * every load unaligned (memcpy or loadu) and inside [p, end). */
__attribute__((always_inline)) static inline const char *skip_plain(const char *p, const char *end)
{
#ifdef __SSE2__
    while (end - p >= 16) {
        unsigned m = plain16(p);
        if (m != 0xffff)
            return p + __builtin_ctz(~m);
        p += 16;
        while (end - p >= 32) {
            unsigned a = plain16(p), b = plain16(p + 16);
            if ((a & b) != 0xffff)
                return p + __builtin_ctz(~(a | b << 16));
            p += 32;
        }
    }
#endif
    while (end - p >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        uint64_t special = word_special(v);
        if (special) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return p + __builtin_ctzll(special) / 8; /* the first byte is the lowest */
#else
            break;
#endif
        }
        p += 8;
    }
    while (p < end && plain((unsigned char)*p))
        p++;
    return p;
}

/* JSON's whitespace: space, tab, line feed, carriage return. */
static bool ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The end of the whitespace at p: a line break and an indentation, whose spaces are counted a
 * word at a time. */
static const char *ws_run(const char *p, const char *end)
{
    do {
        p++;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        while (end - p >= 8) {
            uint64_t v;
            memcpy(&v, p, 8);
            uint64_t other = v ^ (ONES * ' ');
            if (other) {
                p += __builtin_ctzll(other) / 8;
                break;
            }
            p += 8;
        }
#endif
    } while (p < end && ws(*p));
    return p;
}

/* Whitespace between tokens: most often none (compact JSON). */
static inline const char *skip_ws(const char *p, const char *end)
{
    return p < end && ws(*p) ? ws_run(p, end) : p;
}

/* One UTF-8 sequence of 2 to 4 bytes at p (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF); its length or 0. The second byte's bounds depend on the first: they exclude the
 * overlongs after E0 and F0, the surrogates after ED, what is past U+10FFFF after F4. */
static size_t utf8_seq(const char *p, const char *end)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t left = (size_t)(end - p);
    unsigned char c = u[0], lo = 0x80, hi = 0xbf;
    if (c < 0xc2 || c > 0xf4)
        return 0;
    if (c < 0xe0)
        return left >= 2 && (u[1] & 0xc0) == 0x80 ? 2 : 0;
    if (left < 3 || (u[2] & 0xc0) != 0x80)
        return 0;
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (u[1] < lo || u[1] > hi)
        return 0;
    if (c < 0xf0)
        return 3;
    return left >= 4 && (u[3] & 0xc0) == 0x80 ? 4 : 0;
}

/* Four hex digits at p (bounds checked by the caller); their value or -1. */
static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hex_digit(p[i]);
        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

/* An escape at its backslash; where it ends, or NULL. Surrogates only in pairs: json-c
 * replaces a lone one, which the scan leaves to it. */
static const char *escape(const char *p, const char *end)
{
    if (end - p < 2)
        return NULL;
    switch (p[1]) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
        return p + 2;
    case 'u':
        break;
    default:
        return NULL;
    }
    if (end - p < 6)
        return NULL;
    int u = hex4(p + 2);
    if (u < 0 || (u >= 0xdc00 && u <= 0xdfff))
        return NULL;
    if (u < 0xd800 || u > 0xdbff)
        return p + 6;
    if (end - p < 12 || p[6] != '\\' || p[7] != 'u')
        return NULL;
    int low = hex4(p + 8);
    if (low < 0xdc00 || low > 0xdfff)
        return NULL;
    return p + 12;
}

/* A value read: its type, and for a string its contents and whether they have escapes. */
struct read {
    enum jscan_type type;
    const char *str; /* a string's contents: [str, str + len) */
    size_t len;
    bool escaped;
};

/* The rest of a string from p, a byte that is not plain: escapes (*escaped set) and UTF-8
 * sequences between runs of plain bytes, up to the closing quote; where that quote is, or NULL.
 * A run of plain bytes is skipped in blocks, a text in a script outside ASCII sequence after
 * sequence. Apart from string() so that the common case (plain bytes up to the quote) stays
 * short. */
__attribute__((noinline)) static const char *string_rest(const char *p, const char *end,
                                                         bool *escaped)
{
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x80) {
            size_t n = utf8_seq(p, end);
            if (!n)
                return NULL;
            p += n;
        } else if (c == '\\') {
            *escaped = true;
            if (!(p = escape(p, end)))
                return NULL;
        } else if (c == '"') {
            return p;
        } else if (c < 0x20) {
            return NULL; /* a control byte */
        } else {
            p = skip_plain(p, end);
        }
    }
    return NULL;
}

/* skip_plain() for string(), out of line: string() is called for every key and short value,
 * and stays small (no registers to save) when its rare paths are calls. */
__attribute__((noinline)) static const char *skip_plain_call(const char *p, const char *end)
{
    return skip_plain(p, end);
}

/* A string at its opening quote p; ret's string members. */
static const char *string(const char *p, const char *end, struct read *ret)
{
    const char *start = ++p;
    bool escaped = false;
    p = skip_plain_call(p, end);
    if (p < end && *p != '"')
        p = string_rest(p, end, &escaped);
    if (!p || p == end)
        return NULL;
    ret->type = JSCAN_STRING;
    ret->str = start;
    ret->len = (size_t)(p - start);
    ret->escaped = escaped;
    return p + 1;
}

/* The end of the run of digits at p. */
static const char *digits(const char *p, const char *end)
{
    while (p < end && (unsigned char)(*p - '0') < 10)
        p++;
    return p;
}

/* RFC 8259's number at p (a byte there): -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static const char *number(const char *p, const char *end)
{
    const char *start = p, *d;
    if (*p == '-')
        p++;
    d = digits(p, end);
    if (d == p || (*p == '0' && d > p + 1)) /* 0 alone, never before a digit */
        return NULL;
    p = d;
    if (p < end && *p == '.') {
        d = digits(++p, end);
        if (d == p)
            return NULL;
        p = d;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        d = digits(p, end);
        if (d == p)
            return NULL;
        p = d;
    }
    return p - start > NUMBER_MAX ? NULL : p;
}

static const char *literal(const char *p, const char *end, const char *word, size_t n)
{
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

/* The members the scan records, a bit each in scan.seen. */
enum which {
    W_NONE = 0,
    W_VERSION,
    W_ID,
    W_METHOD,
    W_PARAMS,
    W_RESULT,
    W_ERROR,
    W_NAME,
    W_META,
    W_TOKEN,
};

static bool key_is(const char *key, size_t n, const char *word)
{
    return n == strlen(word) && memcmp(key, word, n) == 0;
}

/* Which member key is at lvl, and the level of its value. */
static enum which which_of(enum level lvl, const char *key, size_t n, enum level *child)
{
    *child = L_OTHER;
    switch (lvl) {
    case L_TOP:
        if (key_is(key, n, "jsonrpc"))
            return W_VERSION;
        if (key_is(key, n, "id"))
            return W_ID;
        if (key_is(key, n, "method"))
            return W_METHOD;
        if (key_is(key, n, "params")) {
            *child = L_PARAMS;
            return W_PARAMS;
        }
        if (key_is(key, n, "result"))
            return W_RESULT;
        if (key_is(key, n, "error"))
            return W_ERROR;
        return W_NONE;
    case L_PARAMS:
        if (key_is(key, n, "name"))
            return W_NAME;
        if (key_is(key, n, "_meta")) {
            *child = L_META;
            return W_META;
        }
        return W_NONE;
    case L_META:
        return key_is(key, n, "progressToken") ? W_TOKEN : W_NONE;
    default:
        return W_NONE;
    }
}

static const char *value(struct scan *sc, const char *p, enum level lvl, struct read *ret);

/* Records the member w whose value [start, end) was just read. */
static void record(struct scan *sc, enum which w, const char *start, const char *end,
                   const struct read *v)
{
    struct jscan *j = sc->j;
    struct jscan_span span = {(size_t)(start - sc->s), (size_t)(end - start)};
    if (sc->seen & 1u << w) {
        sc->unsettled = true; /* json-c keeps the last one: the tree decides */
        return;
    }
    sc->seen |= 1u << w;
    switch (w) {
    case W_VERSION:
        if (v->type == JSCAN_STRING && v->escaped)
            sc->unsettled = true;
        j->version_ok = jscan_span_is(sc->s, span, "\"2.0\"");
        break;
    case W_ID:
        j->id = span;
        j->id_type = v->type;
        if (v->type == JSCAN_STRING && v->escaped)
            sc->unsettled = true;
        break;
    case W_METHOD:
    case W_NAME: {
        struct jscan_span str = {(size_t)(v->str - sc->s), v->len};
        if (v->type != JSCAN_STRING || v->escaped)
            sc->unsettled = true;
        else if (w == W_METHOD)
            j->method = str;
        else
            j->name = str;
        break;
    }
    case W_PARAMS:
        j->params = span;
        j->params_type = v->type;
        break;
    case W_RESULT:
        j->result = span;
        break;
    case W_ERROR:
        j->error = span;
        break;
    case W_META:
        j->meta = span;
        break;
    case W_TOKEN:
        j->token = span;
        if (v->type == JSCAN_STRING && v->escaped)
            sc->unsettled = true;
        break;
    case W_NONE:
        break;
    }
}

/* An object at its brace; lvl says whether its members are recorded. */
static const char *object(struct scan *sc, const char *p, enum level lvl)
{
    const char *end = sc->end;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}')
        return p + 1;
    for (;;) {
        struct read key, v;
        if (p == end || *p != '"' || !(p = string(p, end, &key)))
            return NULL;
        enum level child = L_OTHER;
        enum which w = W_NONE;
        if (lvl != L_OTHER) {
            if (key.escaped) /* it may spell a routed key */
                sc->unsettled = true;
            else
                w = which_of(lvl, key.str, key.len, &child);
        }
        p = skip_ws(p, end);
        if (p == end || *p != ':')
            return NULL;
        const char *start = skip_ws(p + 1, end);
        if (!(p = value(sc, start, child, &v)))
            return NULL;
        if (w != W_NONE)
            record(sc, w, start, p, &v);
        p = skip_ws(p, end);
        if (p == end)
            return NULL;
        if (*p == '}')
            return p + 1;
        if (*p != ',')
            return NULL;
        p = skip_ws(p + 1, end);
    }
}

static const char *array(struct scan *sc, const char *p)
{
    const char *end = sc->end;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']')
        return p + 1;
    for (;;) {
        struct read v;
        if (!(p = value(sc, p, L_OTHER, &v)))
            return NULL;
        p = skip_ws(p, end);
        if (p == end)
            return NULL;
        if (*p == ']')
            return p + 1;
        if (*p != ',')
            return NULL;
        p = skip_ws(p + 1, end);
    }
}

/* A value at p; ret its type (and a string's members). */
static const char *value(struct scan *sc, const char *p, enum level lvl, struct read *ret)
{
    const char *end = sc->end;
    ret->type = JSCAN_OTHER;
    if (p == end)
        return NULL;
    switch (*p) {
    case '{':
    case '[':
        if (++sc->depth > JSCAN_MAX_DEPTH)
            return NULL;
        p = *p == '{' ? object(sc, p, lvl) : array(sc, p);
        sc->depth--;
        return p;
    case '"':
        return string(p, end, ret);
    case 't':
        return literal(p, end, "true", 4);
    case 'f':
        return literal(p, end, "false", 5);
    case 'n':
        return literal(p, end, "null", 4);
    default:
        ret->type = JSCAN_NUMBER;
        return number(p, end);
    }
}

int jscan_message(const char *text, size_t len, struct jscan *ret)
{
    struct jscan j = {0};
    struct read v;

    if (!text)
        return -EINVAL;
    struct scan sc = {.s = text, .end = text + len, .j = &j};
    const char *p = skip_ws(text, sc.end);
    bool is_object = p < sc.end && *p == '{';
    p = value(&sc, p, L_TOP, &v);
    if (!p || skip_ws(p, sc.end) != sc.end)
        return -EBADMSG;
    if (!is_object || sc.unsettled)
        return -EAGAIN;
    *ret = j;
    return 0;
}

bool jscan_span_is(const char *text, struct jscan_span span, const char *s)
{
    size_t n = strlen(s);
    return span.len == n && (n == 0 || memcmp(text + span.off, s, n) == 0);
}

uint64_t jscan_span_uint(const char *text, struct jscan_span span)
{
    uint64_t v = 0;
    if (span.len == 0 || span.len > 16 || text[span.off] == '0')
        return 0;
    for (size_t i = 0; i < span.len; i++) {
        char c = text[span.off + i];
        if (c < '0' || c > '9')
            return 0;
        v = v * 10 + (uint64_t)(c - '0');
    }
    return v <= UINT_EXACT_MAX ? v : 0;
}

/* Appends into room already reserved. */
static void put(struct buf *b, const char *p, size_t n)
{
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

int jscan_splice(const char *text, size_t len, const struct jscan_edit *edits, size_t n,
                 struct buf *out)
{
    size_t total = len, at = 0;
    for (size_t i = 0; i < n; i++) {
        const struct jscan_span *s = &edits[i].span;
        if (s->off < at || s->off > len || s->len > len - s->off)
            return -EINVAL;
        at = s->off + s->len;
        total = total - s->len + edits[i].len;
    }
    int r = buf_reserve(out, total);
    if (r < 0)
        return r;
    at = 0;
    for (size_t i = 0; i < n; i++) {
        const struct jscan_edit *e = &edits[i];
        put(out, text + at, e->span.off - at);
        put(out, e->with, e->len);
        at = e->span.off + e->span.len;
    }
    put(out, text + at, len - at);
    out->data[out->len] = 0;
    return 0;
}
