/* test_jsonscan.c - the envelope scan and the splice: spans of every routed member, what the
 * scan leaves to the tree (escaped or repeated keys, escaped method or name, not an object),
 * what it refuses (each kind of malformed JSON), that whatever it accepts json-c accepts too,
 * the nesting bound, input that is not NUL-terminated (ASan checks the bounds), the string
 * scan's steps (each byte it stops at, at every offset of strings of every length, and random
 * strings, against a byte-by-byte reference), the splice's contract, and a differential check:
 * for a corpus of messages, the splice of a new id (and a tool's name without its prefix) means
 * what the tree's change re-serialised means, and leaves every byte outside the spans as it
 * was. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"

#include "core/jsonrpc.h"
#include "core/jsonscan.h"
#include "tests.h"

#define MAX (64u * 1024u * 1024u)

static int scan(const char *s, struct jscan *j)
{
    return jscan_message(s, strlen(s), j);
}

static bool span_is(const char *s, struct jscan_span sp, const char *want)
{
    if (!jscan_span_is(s, sp, want)) {
        fprintf(stderr, "  span [%zu,+%zu] of %s is not %s\n", sp.off, sp.len, s, want);
        return false;
    }
    return true;
}

static bool json_ok(const char *s, size_t len)
{
    struct jrpc_msg m;
    struct err e = ERR_INIT;
    if (jrpc_parse(s, len, MAX, &m, &e) < 0)
        return false;
    jrpc_msg_done(&m);
    return true;
}

static void test_envelope(void)
{
    struct jscan j;
    const char *req = " {\"jsonrpc\":\"2.0\", \"id\" : 17,\"method\":\"tools/call\",\"params\":"
                      "{\"name\":\"gh_search\",\"arguments\":{\"name\":\"x\",\"_meta\":1},"
                      "\"_meta\":{\"progressToken\":\"t1\",\"x\":[1]}}} \n";
    CHECK_INT(scan(req, &j), 0);
    CHECK(j.version_ok);
    CHECK(span_is(req, j.id, "17"));
    CHECK_INT(j.id_type, JSCAN_NUMBER);
    CHECK(span_is(req, j.method, "tools/call"));
    CHECK(span_is(req, j.name, "gh_search"));
    CHECK(span_is(req, j.token, "\"t1\""));
    CHECK(span_is(req, j.meta, "{\"progressToken\":\"t1\",\"x\":[1]}"));
    CHECK_INT(j.params_type, JSCAN_OTHER);
    CHECK_INT(j.result.len, 0);
    CHECK_INT(j.error.len, 0);

    const char *resp = "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"h\\u00e9\\n\"}]},"
                       "\"id\":\"a-1\",\"jsonrpc\":\"2.0\"}";
    CHECK_INT(scan(resp, &j), 0);
    CHECK(j.version_ok);
    CHECK(span_is(resp, j.id, "\"a-1\""));
    CHECK_INT(j.id_type, JSCAN_STRING);
    CHECK(span_is(resp, j.result, "{\"content\":[{\"type\":\"text\",\"text\":\"h\\u00e9\\n\"}]}"));
    CHECK_INT(j.method.len, 0);
    CHECK_INT(j.params.len, 0);

    const char *err =
        "{\"jsonrpc\":\"2.0\",\"id\":-3,\"error\":{\"code\":-32601,\"message\":\"no\"}}";
    CHECK_INT(scan(err, &j), 0);
    CHECK(span_is(err, j.id, "-3"));
    CHECK(span_is(err, j.error, "{\"code\":-32601,\"message\":\"no\"}"));

    /* a version that is not 2.0, members of nested objects not taken for the envelope's */
    const char *v1 = "{\"jsonrpc\":\"1.0\",\"x\":{\"id\":1,\"method\":\"m\"},\"params\":[1]}";
    CHECK_INT(scan(v1, &j), 0);
    CHECK(!j.version_ok);
    CHECK_INT(j.id.len, 0);
    CHECK_INT(j.method.len, 0);
    CHECK(span_is(v1, j.params, "[1]"));
    CHECK_INT(j.name.len, 0);

    CHECK_INT(jscan_span_uint("123", (struct jscan_span){0, 3}), 123);
    CHECK_INT(jscan_span_uint("0", (struct jscan_span){0, 1}), 0);
    CHECK_INT(jscan_span_uint("-1", (struct jscan_span){0, 2}), 0);
    CHECK_INT(jscan_span_uint("1.0", (struct jscan_span){0, 3}), 0);
    CHECK_INT(jscan_span_uint("99999999999999999", (struct jscan_span){0, 17}), 0);
}

static void test_unsettled(void)
{
    const char *cases[] = {
        "[1,2]",
        "\"x\"",
        "null",
        "{\"jsonrpc\":\"2.0\",\"\\u0069d\":1,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"result\":{}}",
        "{\"jsonrpc\":\"2\\u002e0\",\"id\":1,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools\\/call\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"\\u0031\",\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/"
        "call\",\"params\":{\"name\":\"a\\u0062\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/"
        "call\",\"params\":{\"na\\u006de\":\"a\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"_meta\":{\"progressToken\":1,"
        "\"progressToken\":2}}}",
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        struct jscan j = {.version_ok = true};
        int r = scan(cases[i], &j);
        if (r != -EAGAIN)
            fprintf(stderr, "  %s\n", cases[i]);
        CHECK_INT(r, -EAGAIN);
        CHECK(j.version_ok); /* untouched */
        CHECK(json_ok(cases[i], strlen(cases[i])));
    }
}

static void test_malformed(void)
{
    const char *cases[] = {
        "",
        "   ",
        "{",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{'a':1}",
        "{\"a\":01}",
        "{\"a\":1.}",
        "{\"a\":.5}",
        "{\"a\":-}",
        "{\"a\":1e}",
        "{\"a\":+1}",
        "{\"a\":NaN}",
        "{\"a\":tru}",
        "{\"a\":nul}",
        "{\"a\":\"\t\"}",
        "{\"a\":\"\\x\"}",
        "{\"a\":\"\\u12\"}",
        "{\"a\":\"\\ud800\"}",
        "{\"a\":\"\\udc00\"}",
        "{\"a\":\"\\ud800\\u0041\"}",
        "{\"a\":\"\xc0\x80\"}",
        "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":\"\xf4\x90\x80\x80\"}",
        "{\"a\":\"\xe2\x82\"}",
        "{\"a\":\"\x80\"}",
        "{\"a\":1} x",
        "{\"a\":1}{}",
        "{\"a\":[1,]}",
        "{\"a\":[1 2]}",
        "{\"a\":1 /* c */}",
        "{\"a\":\"unterminated}",
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        struct jscan j;
        int r = scan(cases[i], &j);
        if (r != -EBADMSG)
            fprintf(stderr, "  %s\n", cases[i]);
        CHECK_INT(r, -EBADMSG);
    }
    /* a NUL byte, inside a string and outside */
    struct jscan j;
    CHECK_INT(jscan_message("{\"a\":\"\0\"}", 8, &j), -EBADMSG);
    CHECK_INT(jscan_message("{\"a\":1}\0", 8, &j), -EBADMSG);
    CHECK_INT(jscan_message(NULL, 0, &j), -EINVAL);
}

/* Whatever the scan accepts, json-c accepts: texts at the edges of both. */
static void test_accepts_subset(void)
{
    const char *cases[] = {
        "{\"a\":\"\\u0000\"}",
        "{\"a\":\"\\ud83d\\ude00\"}",
        "{\"a\":\"\xf0\x9f\x98\x80\xe2\x82\xac\xc3\xa9\xf4\x8f\xbf\xbf\"}",
        "{\"a\":-0,\"b\":-0.0e-0,\"c\":1E+2,\"d\":123456789012345678901234567890}",
        "{\"a\":1e400,\"b\":-1e-400,\"c\":18446744073709551616,\"d\":-9223372036854775809}",
        "{\"\":\"\",\"a\":{},\"b\":[],\"c\":[{}],\"d\":true,\"e\":false,\"f\":null}",
        "\t\r\n {\"a\":1}\t\r\n ",
        "{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}",
        "{\"a\":\"\x7f\"}",
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        struct jscan j;
        int r = scan(cases[i], &j);
        if (r != 0)
            fprintf(stderr, "  %s\n", cases[i]);
        CHECK_INT(r, 0);
        CHECK(json_ok(cases[i], strlen(cases[i])));
    }
}

static char *nested(unsigned depth)
{
    char *s = malloc(2 * depth + 16);
    if (!s)
        abort();
    size_t n = 0;
    s[n++] = '{';
    memcpy(s + n, "\"a\":", 4), n += 4;
    for (unsigned i = 1; i < depth; i++)
        s[n++] = '[';
    for (unsigned i = 1; i < depth; i++)
        s[n++] = ']';
    if (depth == 1)
        s[n++] = '1';
    s[n++] = '}';
    s[n] = 0;
    return s;
}

static void test_depth(void)
{
    struct jscan j;
    char *ok = nested(JSCAN_MAX_DEPTH), *deep = nested(JSCAN_MAX_DEPTH + 1);
    CHECK_INT(scan(ok, &j), 0);
    CHECK(json_ok(ok, strlen(ok)));
    CHECK_INT(scan(deep, &j), -EBADMSG);
    free(ok);
    free(deep);
}

/* Texts cut short at every byte, in a buffer of exactly their size: ASan sees a read past it. */
static void test_not_terminated(void)
{
    const char *msg =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"x\",\"_meta\":{\"progressToken\":-1.5e3},\"arguments\":{\"s\":\"\\ud83d"
        "\\ude00\xc3\xa9\",\"t\":[true,false,null]}}}";
    size_t len = strlen(msg);
    for (size_t cut = 0; cut <= len; cut++) {
        char *copy = malloc(cut ? cut : 1);
        if (!copy)
            abort();
        memcpy(copy, msg, cut);
        struct jscan j;
        int r = jscan_message(copy, cut, &j);
        CHECK(cut == len ? r == 0 : r == -EBADMSG);
        free(copy);
    }
}

/* ---- the string scan's steps: every byte that needs a look, at every offset ---------------- */

/* A string's contents (after its opening quote) judged byte by byte, RFC 8259 and RFC 3629 as
 * the scan reads them: the length up to the closing quote, or -1. The scan reads 16, 32 or 8
 * bytes a step; this reads one. */
static long ref_string(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c == '"')
            return (long)i;
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            if (i + 1 >= n)
                return -1;
            c = s[i + 1];
            if (c != 'u') {
                if (!strchr("\"\\/bfnrt", c) || !c)
                    return -1;
                i += 2;
                continue;
            }
            unsigned u[2] = {0, 0};
            for (int k = 0; k < 2; k++) {
                if (i + 6 > n || (k == 1 && (s[i] != '\\' || s[i + 1] != 'u')))
                    return -1;
                for (int h = 2; h < 6; h++) {
                    c = s[i + (size_t)h];
                    if (!strchr("0123456789abcdefABCDEF", c) || !c)
                        return -1;
                    u[k] = u[k] << 4 | (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
                }
                i += 6;
                if (k == 0 && (u[0] < 0xd800 || u[0] > 0xdfff))
                    break;
                if (k == 0 && u[0] >= 0xdc00)
                    return -1;
                if (k == 1 && (u[1] < 0xdc00 || u[1] > 0xdfff))
                    return -1;
            }
            continue;
        }
        if (c < 0x80) {
            i++;
            continue;
        }
        /* the code point of a sequence, then its bounds */
        size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
        if (!len || c > 0xf4 || i + len > n)
            return -1;
        uint32_t cp = c & (0x7fu >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return -1;
            cp = cp << 6 | (s[i + k] & 0x3fu);
        }
        uint32_t least = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
        if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return -1;
        i += len;
    }
    return -1;
}

/* {"result":"<body>"} scanned from a buffer of exactly its size, at an offset from malloc's
 * alignment: the scan and the reference agree, the result's span ends at the right quote, and
 * whatever the scan accepts json-c accepts. cut: the text ends before the closing quote. */
static void check_string(const unsigned char *body, size_t n, size_t shift, bool cut)
{
    static const char head[] = "{\"result\":\"";
    size_t h = strlen(head), tlen = h + n + (cut ? 0 : 2);
    char *buf = malloc(shift + tlen), *t = buf + shift;
    if (!buf)
        abort();
    memset(buf, ' ', shift);
    memcpy(t, head, h);
    memcpy(t + h, body, n);
    if (!cut)
        memcpy(t + h + n, "\"}", 2);
    long want = ref_string((const unsigned char *)t + h, cut ? n : n + 1);
    bool whole = !cut && want == (long)n;
    struct jscan j;
    int r = jscan_message(t, tlen, &j);
    if ((r == 0) != whole || (r != 0 && r != -EBADMSG)) {
        fprintf(stderr, "  r=%d want=%ld n=%zu shift=%zu cut=%d:", r, want, n, shift, cut);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %02x", body[i]);
        fprintf(stderr, "\n");
    }
    CHECK((r == 0) == whole);
    if (r == 0) {
        CHECK_INT(j.result.off, h - 1);
        CHECK_INT(j.result.len, n + 2);
        CHECK(json_ok(t, tlen));
    } else {
        CHECK_INT(r, -EBADMSG);
    }
    free(buf);
}

/* Each kind of byte the scan stops at, at every offset 0..40 of strings of every length up to
 * 41 (the 16-byte and 32-byte steps, the 8-byte word and the bytes after), before and after
 * plain bytes, valid and not. */
static void test_string_steps(void)
{
    static const struct {
        const char *bytes;
        size_t len;
    } marks[] = {
        {"\"", 1},   /* the end (the rest after it: not one message) */
        {"\\\"", 2}, /* escapes */
        {"\\\\", 2},
        {"\\n", 2},
        {"\\u00e9", 6},
        {"\\ud83d\\ude00", 12},
        {"\\ud83d", 6}, /* a lone surrogate: json-c's to judge */
        {"\\x", 2},     /* not an escape */
        {"\\", 1},      /* a backslash at the end */
        {"\x1f", 1},    /* control bytes */
        {"\n", 1},
        {"\0", 1},
        {"\x7f", 1}, /* plain: DEL is not a control byte in JSON */
        {" ", 1},
        {"\xc3\xa9", 2}, /* UTF-8 of each length, and the edges of RFC 3629 */
        {"\xe2\x82\xac", 3},
        {"\xf0\x9f\x98\x80", 4},
        {"\xf4\x8f\xbf\xbf", 4},
        {"\xed\x9f\xbf", 3},
        {"\xed\xa0\x80", 3}, /* not UTF-8: a surrogate, overlongs, past U+10FFFF */
        {"\xc0\xaf", 2},
        {"\xe0\x9f\xbf", 3},
        {"\xf0\x8f\xbf\xbf", 4},
        {"\xf4\x90\x80\x80", 4},
        {"\x80", 1}, /* a lone continuation, a cut sequence, never UTF-8 */
        {"\xc3", 1},
        {"\xe2\x82", 2},
        {"\xff", 1},
    };
    unsigned char body[128];
    for (size_t m = 0; m < ELEMENTSOF(marks); m++)
        for (size_t len = 0; len <= 41; len++)
            for (size_t at = 0; at <= len; at++) {
                size_t n = 0;
                for (; n < at; n++)
                    body[n] = (unsigned char)('a' + n % 26);
                memcpy(body + n, marks[m].bytes, marks[m].len);
                n += marks[m].len;
                for (; n < len + marks[m].len; n++)
                    body[n] = (unsigned char)('A' + n % 26);
                check_string(body, n, (len + at) % 8, false);
                check_string(body, n, (len + at + 1) % 8, true);
            }
    /* plain strings of every length, every shift: the closing quote at each offset */
    for (size_t len = 0; len <= 80; len++)
        for (size_t shift = 0; shift < 8; shift++) {
            memset(body, 'q', len);
            check_string(body, len, shift, false);
            check_string(body, len, shift, true);
        }
}

/* Random strings of the bytes that matter, against the reference: a few thousand, the same on
 * every run. */
static void test_string_random(void)
{
    static const unsigned char alphabet[] = {
        'a',  'Z',  '0',  'e',  'u',  'D',  'F',  ' ',  '/',  '"',  '\\', '\\', 'n',  0x00,
        0x1f, 0x7f, 0x80, 0xbf, 0xc2, 0xc3, 0xa9, 0xdf, 0xe0, 0xa0, 0xe2, 0x82, 0xac, 0xed,
        0x9f, 0xef, 0xf0, 0x90, 0x9f, 0x98, 0xf4, 0x8f, 0xf5, 0xff, 'd',  '8',  'c',
    };
    uint32_t seed = 12345;
    unsigned char body[96];
    for (unsigned i = 0; i < 20000; i++) {
        seed = seed * 1664525u + 1013904223u;
        size_t n = (seed >> 8) % sizeof(body);
        for (size_t k = 0; k < n; k++) {
            seed = seed * 1664525u + 1013904223u;
            uint32_t x = seed >> 8;
            /* mostly plain runs, so that the long steps run too */
            body[k] = x % 4 ? (unsigned char)('a' + x % 26) : alphabet[(x >> 5) % sizeof(alphabet)];
        }
        check_string(body, n, i % 8, i % 5 == 0);
    }
}

static void test_splice(void)
{
    const char *t = "{\"id\":7,\"x\":\"abc\"}";
    size_t len = strlen(t);
    struct buf out;
    buf_init(&out, 1024);
    struct jscan_edit e[2] = {{{6, 1}, "\"b12\"", 5}, {{13, 3}, "", 0}};
    CHECK_INT(jscan_splice(t, len, e, 2, &out), 0);
    CHECK_STR(buf_str(&out), "{\"id\":\"b12\",\"x\":\"\"}");
    /* appends: the caller resets */
    CHECK_INT(jscan_splice(t, len, NULL, 0, &out), 0);
    CHECK_INT(out.len, strlen("{\"id\":\"b12\",\"x\":\"\"}") + len);
    buf_reset(&out);
    /* edits out of order, overlapping, past the end: refused, out untouched */
    struct jscan_edit bad[][2] = {
        {{{13, 3}, "", 0}, {{6, 1}, "", 0}},
        {{{6, 3}, "", 0}, {{7, 1}, "", 0}},
        {{{6, 1}, "", 0}, {{len, 1}, "", 0}},
    };
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        CHECK_INT(jscan_splice(t, len, bad[i], 2, &out), -EINVAL);
        CHECK_INT(out.len, 0);
    }
    /* an edit at the very end, an empty text */
    struct jscan_edit tail = {{len, 0}, "!", 1};
    CHECK_INT(jscan_splice(t, len, &tail, 1, &out), 0);
    CHECK_INT(out.len, len + 1);
    CHECK(out.data[len] == '!');
    buf_reset(&out);
    CHECK_INT(jscan_splice("", 0, NULL, 0, &out), 0);
    CHECK_STR(buf_str(&out), "");
    /* the bound */
    struct buf small;
    buf_init(&small, 4);
    CHECK_INT(jscan_splice(t, len, NULL, 0, &small), -E2BIG);
    CHECK_INT(small.len, 0);
    buf_release(&small);
    buf_release(&out);
}

/* ---- differential: the splice against the tree ------------------------------------------- */

#define PREFIX "srv_"

/* The fast path as the bridge takes it: id replaced by new_id, and a tool's name stripped of
 * PREFIX when strip. 0, or <0 when the scan leaves the message to the tree. */
static int fast(const char *text, size_t len, const char *new_id, bool strip, struct buf *out,
                struct jscan *ret)
{
    struct jscan j;
    int r = jscan_message(text, len, &j);
    if (r < 0)
        return r;
    struct jscan_edit e[2];
    size_t n = 0;
    if (j.id.len)
        e[n++] = (struct jscan_edit){j.id, new_id, strlen(new_id)};
    if (strip && j.name.len >= strlen(PREFIX) &&
        memcmp(text + j.name.off, PREFIX, strlen(PREFIX)) == 0)
        e[n++] = (struct jscan_edit){{j.name.off, strlen(PREFIX)}, "", 0};
    *ret = j;
    return jscan_splice(text, len, e, n, out);
}

/* The slow path: the tree changed and serialised. NULL when json-c refuses the text. */
static struct json_object *slow(const char *text, size_t len, const char *new_id, bool strip)
{
    struct jrpc_msg m;
    struct err e = ERR_INIT;
    if (jrpc_parse(text, len, MAX, &m, &e) < 0)
        return NULL;
    struct json_object *root = json_object_get(m.root);
    jrpc_msg_done(&m);
    if (json_object_object_get_ex(root, "id", NULL))
        (void)json_object_object_add(root, "id", json_tokener_parse(new_id));
    struct json_object *params = json_object_object_get(root, "params"), *name = NULL;
    const char *s;
    if (strip && json_object_object_get_ex(params, "name", &name) &&
        (s = json_object_get_string(name)) && strncmp(s, PREFIX, strlen(PREFIX)) == 0)
        (void)json_object_object_add(params, "name", json_object_new_string(s + strlen(PREFIX)));
    /* through the text, as the bridge sends it */
    struct json_object *again = json_tokener_parse(jrpc_serialize(root, NULL));
    json_object_put(root);
    return again;
}

static unsigned light_runs; /* messages differ_light() compared */

/* The request path: params as a stand-in (jrpc_parse_light), renamed, in the request the
 * upstream sends: it means what the tree means, and its params keep every byte but the name. */
static void differ_light(const char *text, size_t len, const struct jscan *j, const char *new_id,
                         bool strip, struct json_object *want)
{
    struct jrpc_msg m;
    struct err e = ERR_INIT;
    if (!j->id.len || !j->name.len || jrpc_parse_light(text, len, MAX, j, &m, &e) < 0)
        return;
    struct json_object *name = json_object_object_get(m.params, "name");
    const char *s = json_object_get_string(name);
    size_t cut = strip && s && strncmp(s, PREFIX, strlen(PREFIX)) == 0 ? strlen(PREFIX) : 0;
    if (cut)
        CHECK(json_object_object_add(m.params, "name", json_object_new_string(s + cut)) == 0);
    struct json_object *id = json_tokener_parse(new_id);
    struct json_object *req = jrpc_new_request(id, m.method, m.params);
    size_t plen = 0;
    const char *params = jrpc_serialize(m.params, &plen);
    CHECK(params != NULL && plen + cut == j->params.len);
    if (params) {
        size_t head = j->name.off - j->params.off;
        CHECK(memcmp(params, text + j->params.off, head) == 0);
        CHECK(memcmp(params + head, text + j->name.off + cut, plen - head) == 0);
    }
    struct json_object *got = json_tokener_parse(jrpc_serialize(req, NULL));
    bool same = json_object_equal(got, want);
    if (!same)
        fprintf(stderr, "  light differs: %.200s\n  slow: %.200s\n", jrpc_serialize(req, NULL),
                jrpc_serialize(want, NULL));
    CHECK(same);
    light_runs++;
    json_object_put(got);
    json_object_put(req);
    json_object_put(id);
    jrpc_msg_done(&m);
}

static void differ(const char *text, size_t len, const char *new_id, bool strip)
{
    struct buf out;
    buf_init(&out, MAX);
    struct jscan j = {0};
    int r = fast(text, len, new_id, strip, &out, &j);
    struct json_object *want = slow(text, len, new_id, strip);
    if (r < 0) {
        /* left to the tree: never something the tree takes as it is while the scan refused */
        CHECK(r == -EAGAIN || r == -EBADMSG);
        buf_release(&out);
        json_object_put(want);
        return;
    }
    CHECK(want != NULL);
    struct json_object *got = json_tokener_parse(buf_str(&out));
    CHECK(got != NULL);
    bool same = json_object_equal(got, want);
    if (!same)
        fprintf(stderr, "  differs: %.*s\n  fast: %.200s\n  slow: %.200s\n", (int)len, text,
                buf_str(&out), jrpc_serialize(want, NULL));
    CHECK(same);
    /* byte-identical outside the spans */
    size_t first = j.id.len ? j.id.off : len;
    CHECK(memcmp(out.data, text, first) == 0);
    if (j.id.len && (!j.name.len || j.name.off < j.id.off)) {
        size_t tail = len - (j.id.off + j.id.len);
        CHECK(memcmp(out.data + out.len - tail, text + len - tail, tail) == 0);
    }
    json_object_put(got);
    differ_light(text, len, &j, new_id, strip, want);
    json_object_put(want);
    buf_release(&out);
}

static void test_differential(void)
{
    const char *corpus[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}"
        "]}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{\"structuredContent\":{\"a\":[1,2.5,-3e2]},"
        "\"isError\":false,\"_meta\":{\"k\":null}}}",
        "{\"id\":9007199254740993,\"jsonrpc\":\"2.0\",\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":-12,\"error\":{\"code\":-32603,\"message\":\"bad "
        "\\\"x\\\"\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"srv_echo\","
        "\"arguments\":{\"message\":\"caf\xc3\xa9 \\u00e9 \\ud83d\\ude00 \\n\\t\"}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"r-\xe2\x82\xac\",\"method\":\"tools/call\",\"params\":{"
        "\"arguments\":{\"name\":\"srv_no\"},\"name\":\"srv_srv_x\",\"_meta\":{\"progressToken\":5}"
        "}}",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/"
        "call\",\"params\":{\"name\":\"sr\\u0076_x\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///"
        "a\"}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\","
        "\"data\":{\"nested\":[[[[{\"deep\":true}]]]]}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1,\"a\":2}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"big\":123456789012345678901234567890,"
        "\"d\":1.5e300,\"z\":-0}}",
        "  {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":[]}  ",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"s\":\"\\u0000 nul\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\\ud800\"}",
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}",
    };
    const char *ids[] = {"42", "\"b7\"", "-1", "9007199254740993", "\"\\u00e9\""};
    for (size_t i = 0; i < ELEMENTSOF(corpus); i++)
        for (size_t k = 0; k < ELEMENTSOF(ids); k++)
            differ(corpus[i], strlen(corpus[i]), ids[k], k % 2 == 0);

    /* big payloads: 64 KiB, 1 MiB and 8 MiB of base64 and of escaped text, both ways */
    size_t sizes[] = {64 * 1024, 1024 * 1024, 8 * 1024 * 1024};
    for (size_t s = 0; s < ELEMENTSOF(sizes); s++) {
        size_t n = sizes[s];
        char *msg = malloc(n + 256);
        if (!msg)
            abort();
        int h = snprintf(msg, 256,
                         "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"result\":{\"content\":[{"
                         "\"type\":\"image\",\"data\":\"",
                         s + 1);
        for (size_t i = 0; i < n; i++) {
            static const char b64[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            msg[(size_t)h + i] = s % 2 ? (i % 7 == 0 ? '\\' : i % 7 == 1 ? 'n' : 'x') : b64[i % 64];
        }
        size_t len = (size_t)h + n;
        len += (size_t)snprintf(msg + len, 64, "\",\"mimeType\":\"image/png\"}]}}");
        differ(msg, len, "\"agent-1\"", false);
        /* and as a request, through a prefixed name */
        int q = snprintf(msg, 256,
                         "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"tools/call\","
                         "\"params\":{\"name\":\"srv_t\",\"arguments\":{\"d\":\"",
                         s + 9);
        memset(msg + q, 'q', n);
        len = (size_t)q + n;
        len += (size_t)snprintf(msg + len, 64, "\"}}}");
        differ(msg, len, "77", true);
        free(msg);
    }
    /* the two settled tools/call requests of the corpus with 5 ids, the big ones once each */
    CHECK_INT(light_runs, 2 * 5 + 3);
}

TESTS_MAIN(test_envelope, test_unsettled, test_malformed, test_accepts_subset, test_depth,
           test_not_terminated, test_string_steps, test_string_random, test_splice,
           test_differential)
