/* jsonscan.c - a JSON-RPC envelope from the bytes: one validating pass, spans, a splice */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "core/jsonscan.h"

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

struct scan {
    const char *s;
    size_t len, pos;
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
static const char *skip_plain(const char *p, const char *end)
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

static void skip_ws(struct scan *sc)
{
    while (sc->pos < sc->len) {
        char c = sc->s[sc->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return;
        sc->pos++;
    }
}

static bool cont(const char *p, const char *end, unsigned char lo, unsigned char hi)
{
    return p < end && (unsigned char)*p >= lo && (unsigned char)*p <= hi;
}

/* One UTF-8 sequence of 2 to 4 bytes at p (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF); its length or 0. */
static size_t utf8_seq(const char *p, const char *end)
{
    unsigned char c = (unsigned char)*p;
    if (c >= 0xc2 && c <= 0xdf)
        return cont(p + 1, end, 0x80, 0xbf) ? 2 : 0;
    if (end - p < 3)
        return 0;
    if (c >= 0xe0 && c <= 0xef) {
        unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return cont(p + 1, end, lo, hi) && cont(p + 2, end, 0x80, 0xbf) ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return cont(p + 1, end, lo, hi) && cont(p + 2, end, 0x80, 0xbf) &&
                       cont(p + 3, end, 0x80, 0xbf)
                   ? 4
                   : 0;
    }
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p (bounds checked by the caller); their value or -1. */
static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
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

/* A string at its opening quote; *ret its contents' span, *escaped whether it has escapes. */
static int string(struct scan *sc, struct jscan_span *ret, bool *escaped)
{
    const char *start = sc->s + sc->pos + 1, *end = sc->s + sc->len, *p = start;
    bool esc = false;
    for (;;) {
        p = skip_plain(p, end);
        if (p == end)
            return -EBADMSG;
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            break;
        if (c == '\\') {
            esc = true;
            p = escape(p, end);
        } else if (c >= 0x80) {
            size_t n = utf8_seq(p, end);
            p = n ? p + n : NULL;
        } else {
            p = NULL; /* a control byte */
        }
        if (!p)
            return -EBADMSG;
    }
    *ret = (struct jscan_span){(size_t)(start - sc->s), (size_t)(p - start)};
    *escaped = esc;
    sc->pos = (size_t)(p - sc->s) + 1;
    return 0;
}

static bool digit(const struct scan *sc)
{
    return sc->pos < sc->len && sc->s[sc->pos] >= '0' && sc->s[sc->pos] <= '9';
}

static int digits(struct scan *sc)
{
    if (!digit(sc))
        return -EBADMSG;
    while (digit(sc))
        sc->pos++;
    return 0;
}

/* RFC 8259's number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number(struct scan *sc)
{
    size_t start = sc->pos;
    if (sc->s[sc->pos] == '-')
        sc->pos++;
    if (!digit(sc))
        return -EBADMSG;
    if (sc->s[sc->pos] == '0')
        sc->pos++;
    else
        (void)digits(sc);
    if (sc->pos < sc->len && sc->s[sc->pos] == '.') {
        sc->pos++;
        if (digits(sc) < 0)
            return -EBADMSG;
    }
    if (sc->pos < sc->len && (sc->s[sc->pos] == 'e' || sc->s[sc->pos] == 'E')) {
        sc->pos++;
        if (sc->pos < sc->len && (sc->s[sc->pos] == '+' || sc->s[sc->pos] == '-'))
            sc->pos++;
        if (digits(sc) < 0)
            return -EBADMSG;
    }
    return sc->pos - start > NUMBER_MAX ? -EBADMSG : 0;
}

static int literal(struct scan *sc, const char *word)
{
    size_t n = strlen(word);
    if (sc->len - sc->pos < n || memcmp(sc->s + sc->pos, word, n) != 0)
        return -EBADMSG;
    sc->pos += n;
    return 0;
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

/* A value read: its type, and for a string its contents and whether they have escapes. */
struct read {
    enum jscan_type type;
    struct jscan_span str;
    bool escaped;
};

static int value(struct scan *sc, enum level lvl, struct read *ret);

/* Records the member w whose value [start, pos) was just read. */
static void record(struct scan *sc, enum which w, size_t start, const struct read *v)
{
    struct jscan *j = sc->j;
    struct jscan_span span = {start, sc->pos - start};
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
    case W_NAME:
        if (v->type != JSCAN_STRING || v->escaped)
            sc->unsettled = true;
        else if (w == W_METHOD)
            j->method = v->str;
        else
            j->name = v->str;
        break;
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

static int object(struct scan *sc, enum level lvl)
{
    sc->pos++; /* { */
    skip_ws(sc);
    if (sc->pos < sc->len && sc->s[sc->pos] == '}') {
        sc->pos++;
        return 0;
    }
    for (;;) {
        struct jscan_span key;
        bool escaped;
        if (sc->pos >= sc->len || sc->s[sc->pos] != '"' || string(sc, &key, &escaped) < 0)
            return -EBADMSG;
        enum level child = L_OTHER;
        enum which w = W_NONE;
        if (lvl != L_OTHER) {
            if (escaped) /* it may spell a routed key */
                sc->unsettled = true;
            else
                w = which_of(lvl, sc->s + key.off, key.len, &child);
        }
        skip_ws(sc);
        if (sc->pos >= sc->len || sc->s[sc->pos] != ':')
            return -EBADMSG;
        sc->pos++;
        skip_ws(sc);
        size_t start = sc->pos;
        struct read v;
        if (value(sc, child, &v) < 0)
            return -EBADMSG;
        if (w != W_NONE)
            record(sc, w, start, &v);
        skip_ws(sc);
        if (sc->pos >= sc->len)
            return -EBADMSG;
        char c = sc->s[sc->pos++];
        if (c == '}')
            return 0;
        if (c != ',')
            return -EBADMSG;
        skip_ws(sc);
    }
}

static int array(struct scan *sc)
{
    sc->pos++; /* [ */
    skip_ws(sc);
    if (sc->pos < sc->len && sc->s[sc->pos] == ']') {
        sc->pos++;
        return 0;
    }
    for (;;) {
        struct read v;
        if (value(sc, L_OTHER, &v) < 0)
            return -EBADMSG;
        skip_ws(sc);
        if (sc->pos >= sc->len)
            return -EBADMSG;
        char c = sc->s[sc->pos++];
        if (c == ']')
            return 0;
        if (c != ',')
            return -EBADMSG;
        skip_ws(sc);
    }
}

static int value(struct scan *sc, enum level lvl, struct read *ret)
{
    int r;
    *ret = (struct read){.type = JSCAN_OTHER};
    if (sc->pos >= sc->len)
        return -EBADMSG;
    switch (sc->s[sc->pos]) {
    case '{':
    case '[':
        if (++sc->depth > JSCAN_MAX_DEPTH)
            return -EBADMSG;
        r = sc->s[sc->pos] == '{' ? object(sc, lvl) : array(sc);
        sc->depth--;
        return r;
    case '"':
        ret->type = JSCAN_STRING;
        return string(sc, &ret->str, &ret->escaped);
    case 't':
        return literal(sc, "true");
    case 'f':
        return literal(sc, "false");
    case 'n':
        return literal(sc, "null");
    default:
        ret->type = JSCAN_NUMBER;
        return number(sc);
    }
}

int jscan_message(const char *text, size_t len, struct jscan *ret)
{
    struct jscan j = {0};
    struct scan sc = {.s = text, .len = len, .j = &j};
    struct read v;

    if (!text)
        return -EINVAL;
    skip_ws(&sc);
    bool is_object = sc.pos < len && text[sc.pos] == '{';
    if (value(&sc, L_TOP, &v) < 0)
        return -EBADMSG;
    skip_ws(&sc);
    if (sc.pos != len)
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
