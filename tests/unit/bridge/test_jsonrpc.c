/* test_jsonrpc.c - JSON-RPC 2.0 messages: every classification (requests, notifications,
 * responses, and each way of being invalid, with the id and method an error answer needs),
 * malformed errors repaired, bad input (not JSON, NUL bytes, trailing text, empty, too large,
 * too deep, invalid UTF-8) with positions, the tokener reused after errors and in another
 * thread, input that is not NUL-terminated (ASan checks the bounds), canonical id keys, exact
 * builder output, the tool error, progress tokens, and in-place changes re-serialised; a big
 * request's stand-in holding the agent's read buffer while more messages arrive, written in
 * pieces (the same bytes), sent twice as a retry, and the buffer given back with its last user. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/json.h"
#include "credkit/util.h"

#include "core/framing.h"
#include "core/jsonrpc.h"
#include "core/loop.h"
#include "tests.h"
#include "loop_wait.h"

#define MAX (1024u * 1024u)

static int parse(const char *s, struct jrpc_msg *m, struct err *e)
{
    return jrpc_parse(s, strlen(s), MAX, m, e);
}

/* Parses s, which must be JSON, and returns its kind; the message is released. */
static enum jrpc_kind kind_of(const char *s)
{
    struct err e = ERR_INIT;
    struct jrpc_msg m = {0};
    int r = parse(s, &m, &e);
    CHECK_INT(r, 0);
    if (r < 0) {
        fprintf(stderr, "  %s: %s\n", s, err_msg(&e));
        return JRPC_INVALID;
    }
    CHECK(m.root != NULL);
    enum jrpc_kind k = m.kind;
    jrpc_msg_done(&m);
    return k;
}

static const char *ser(struct json_object *o)
{
    size_t len = 0;
    const char *s = jrpc_serialize(o, &len);
    CHECK(s != NULL);
    if (s)
        CHECK_INT(strlen(s), len);
    return s;
}

static void test_request(void)
{
    struct err e = ERR_INIT;
    struct jrpc_msg m = {0};
    CHECK_INT(parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
                    "\"params\":{\"name\":\"x\",\"_meta\":{\"progressToken\":\"p\"}}}",
                    &m, &e),
              0);
    CHECK_INT(m.kind, JRPC_REQUEST);
    CHECK_STR(m.method, "tools/call");
    CHECK(json_object_is_type(m.id, json_type_int));
    CHECK_INT(json_object_get_int64(m.id), 7);
    CHECK(json_object_is_type(m.params, json_type_object));
    CHECK_STR(json_get_string(m.params, "name"), "x");
    CHECK(m.result == NULL);
    CHECK(m.error == NULL);
    jrpc_msg_done(&m);
    CHECK(m.root == NULL);
    CHECK(m.method == NULL);
    jrpc_msg_done(&m); /* idempotent */
    jrpc_msg_done(NULL);

    /* string id, no params, members in any order, whitespace around */
    CHECK_INT(parse(" \t{\"method\":\"ping\",\"id\":\"abc\",\"jsonrpc\":\"2.0\"}\r\n", &m, &e), 0);
    CHECK_INT(m.kind, JRPC_REQUEST);
    CHECK_STR(m.method, "ping");
    CHECK_STR(json_object_get_string(m.id), "abc");
    CHECK(m.params == NULL);
    jrpc_msg_done(&m);

    /* params null counts as absent; unknown members are fine */
    CHECK_INT(
        parse("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"m\",\"params\":null,\"x\":[1]}", &m, &e),
        0);
    CHECK_INT(m.kind, JRPC_REQUEST);
    CHECK(m.params == NULL);
    jrpc_msg_done(&m);

    /* ids at the ends of the exact range */
    CHECK_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":-9223372036854775807,\"method\":\"m\"}"),
              JRPC_REQUEST);
    CHECK_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":18446744073709551614,\"method\":\"m\"}"),
              JRPC_REQUEST);
    CHECK_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":\"\",\"method\":\"m\"}"), JRPC_REQUEST);
}

static void test_notification(void)
{
    struct err e = ERR_INIT;
    struct jrpc_msg m = {0};
    CHECK_INT(parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
                    "\"params\":{\"progressToken\":1,\"progress\":5}}",
                    &m, &e),
              0);
    CHECK_INT(m.kind, JRPC_NOTIFICATION);
    CHECK_STR(m.method, "notifications/progress");
    CHECK(m.id == NULL);
    CHECK(m.params != NULL);
    jrpc_msg_done(&m);
    CHECK_INT(kind_of("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"),
              JRPC_NOTIFICATION);
}

static void test_response(void)
{
    struct err e = ERR_INIT;
    struct jrpc_msg m = {0};
    CHECK_INT(parse("{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"result\":{\"tools\":[]}}", &m, &e), 0);
    CHECK_INT(m.kind, JRPC_RESPONSE);
    CHECK(m.method == NULL);
    CHECK_STR(json_object_get_string(m.id), "r1");
    CHECK(json_object_is_type(m.result, json_type_object));
    CHECK(m.error == NULL);
    jrpc_msg_done(&m);

    CHECK_INT(parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32601,"
                    "\"message\":\"Method not found\",\"data\":{\"x\":1}}}",
                    &m, &e),
              0);
    CHECK_INT(m.kind, JRPC_RESPONSE);
    CHECK(m.result == NULL);
    int64_t code = 0;
    CHECK(json_get_int64(m.error, "code", &code));
    CHECK_INT(code, JRPC_METHOD_NOT_FOUND);
    CHECK_STR(json_get_string(m.error, "message"), "Method not found");
    /* a well-formed error is left exactly as it was */
    CHECK_STR(ser(m.root), "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32601,"
                           "\"message\":\"Method not found\",\"data\":{\"x\":1}}}");
    jrpc_msg_done(&m);

    /* "result": null is a response whose result is NULL */
    CHECK_INT(parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":null}", &m, &e), 0);
    CHECK_INT(m.kind, JRPC_RESPONSE);
    CHECK(m.result == NULL);
    CHECK(m.error == NULL);
    jrpc_msg_done(&m);
}

/* A malformed error still makes a response; the tree holds a well-formed error that carries
 * the original as data. */
static void check_repaired(const char *text, int64_t want_code, const char *want_msg,
                           const char *want_data)
{
    struct err e = ERR_INIT;
    struct jrpc_msg m = {0};
    CHECK_INT(parse(text, &m, &e), 0);
    CHECK_INT(m.kind, JRPC_RESPONSE);
    CHECK(m.error != NULL);
    int64_t code = 0;
    CHECK(json_get_int64(m.error, "code", &code));
    CHECK_INT(code, want_code);
    CHECK_STR(json_get_string(m.error, "message"), want_msg);
    struct json_object *data = NULL;
    if (want_data) {
        CHECK(json_object_object_get_ex(m.error, "data", &data));
        CHECK_STR(json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN), want_data);
    } else {
        CHECK(!json_object_object_get_ex(m.error, "data", &data));
    }
    /* the root holds the repaired error */
    struct json_object *in_root = NULL;
    CHECK(json_object_object_get_ex(m.root, "error", &in_root));
    CHECK(in_root == m.error);
    jrpc_msg_done(&m);
}

static void test_malformed_error(void)
{
    const char *generic = "the peer sent a malformed JSON-RPC error";
    check_repaired("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"boom\"}", JRPC_INTERNAL_ERROR,
                   generic, "\"boom\"");
    check_repaired("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":null}", JRPC_INTERNAL_ERROR, generic,
                   NULL);
    check_repaired("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\",\"message\":\"m\"}}",
                   JRPC_INTERNAL_ERROR, "m", "{\"code\":\"x\",\"message\":\"m\"}");
    check_repaired("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32000}}", -32000, generic,
                   "{\"code\":-32000}");
    check_repaired("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1.5,\"message\":7}}",
                   JRPC_INTERNAL_ERROR, generic, "{\"code\":1.5,\"message\":7}");
    check_repaired("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":99999999999,\"message\":1}}",
                   JRPC_INTERNAL_ERROR, generic, "{\"code\":99999999999,\"message\":1}");
}

/* JSON, but not a valid JSON-RPC 2.0 message: kind JRPC_INVALID, root kept, and the id and
 * method an error answer needs, when usable. */
static void check_invalid(const char *text, const char *want_id_key, const char *want_method)
{
    struct err e = ERR_INIT;
    struct jrpc_msg m = {0};
    int r = parse(text, &m, &e);
    CHECK_INT(r, 0);
    if (r < 0) {
        fprintf(stderr, "  %s: %s\n", text, err_msg(&e));
        return;
    }
    CHECK_INT(m.kind, JRPC_INVALID);
    if (m.kind != JRPC_INVALID)
        fprintf(stderr, "  not invalid: %s\n", text);
    /* json-c has no object for null: the one JSON value whose root is NULL */
    CHECK((m.root == NULL) == (strcmp(text, "null") == 0));
    if (want_id_key) {
        char key[JRPC_ID_KEY_MAX + 2];
        CHECK(jrpc_id_key(m.id, key, sizeof(key)));
        CHECK_STR(key, want_id_key);
    } else {
        CHECK(m.id == NULL);
    }
    if (want_method)
        CHECK_STR(m.method, want_method);
    else
        CHECK(m.method == NULL);
    CHECK(m.params == NULL);
    CHECK(m.result == NULL);
    CHECK(m.error == NULL);
    jrpc_msg_done(&m);
}

static void test_invalid(void)
{
    /* not an object: a batch, scalars */
    check_invalid("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}]", NULL, NULL);
    check_invalid("[]", NULL, NULL);
    check_invalid("5", NULL, NULL);
    check_invalid("\"str\"", NULL, NULL);
    check_invalid("null", NULL, NULL);
    check_invalid("{}", NULL, NULL);
    /* the version */
    check_invalid("{\"id\":1,\"method\":\"m\"}", "1", "m");
    check_invalid("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}", "1", "m");
    check_invalid("{\"jsonrpc\":2.0,\"id\":1,\"method\":\"m\"}", "1", "m");
    check_invalid("{\"jsonrpc\":\"2.0\\u0000\",\"id\":1,\"method\":\"m\"}", "1", "m");
    /* ids: null, bool, fractional, exponent, object, array, clamped, too long, NUL */
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}", NULL, "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"m\"}", NULL, "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":1.0,\"method\":\"m\"}", NULL, "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}", NULL, "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":1e3,\"method\":\"m\"}", NULL, "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"m\"}", NULL, "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"m\"}", NULL, "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999999,\"method\":\"m\"}", NULL,
                  "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":18446744073709551615,\"method\":\"m\"}", NULL, "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":-9223372036854775808,\"method\":\"m\"}", NULL, "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":-99999999999999999999,\"method\":\"m\"}", NULL, "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"m\"}", NULL, "m");
    char text[1024], id[300];
    memset(id, 'i', JRPC_ID_KEY_MAX + 1);
    id[JRPC_ID_KEY_MAX + 1] = 0;
    snprintf(text, sizeof(text), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"m\"}", id);
    check_invalid(text, NULL, "m");
    id[JRPC_ID_KEY_MAX] = 0; /* exactly the limit is fine */
    snprintf(text, sizeof(text), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"m\"}", id);
    CHECK_INT(kind_of(text), JRPC_REQUEST);
    /* the method: not a string, NUL inside, together with result or error */
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", "1", NULL);
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}", "1", NULL);
    check_invalid("{\"jsonrpc\":\"2.0\",\"method\":[\"m\"]}", NULL, NULL);
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\\u0000x\"}", "1", NULL);
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"result\":{}}", "1", "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"error\":{}}", "1", "m");
    /* params that are not an object */
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[1,2]}", "1", "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":\"p\"}", NULL, "m");
    check_invalid("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":3}", NULL, "m");
    /* responses: no id, a bad id, both result and error, neither */
    check_invalid("{\"jsonrpc\":\"2.0\",\"result\":{}}", NULL, NULL);
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}",
                  NULL, NULL);
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":false,\"result\":{}}", NULL, NULL);
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{},\"error\":{\"code\":1,"
                  "\"message\":\"x\"}}",
                  "4", NULL);
    check_invalid("{\"jsonrpc\":\"2.0\",\"id\":\"4\"}", "s4", NULL);
}

/* Not JSON: -EBADMSG with a position, *ret untouched. */
static void check_bad(const char *text, size_t len, size_t max, int want, const char *msg_part)
{
    struct err e = ERR_INIT;
    struct jrpc_msg m = {.kind = JRPC_RESPONSE, .method = "sentinel"};
    CHECK_INT(jrpc_parse(text, len, max, &m, &e), want);
    CHECK_INT(e.code, want);
    CHECK_CONTAINS(e.msg, msg_part);
    CHECK(m.root == NULL);
    CHECK_INT(m.kind, JRPC_RESPONSE);
    CHECK_STR(m.method, "sentinel");
}

static void check_bad_str(const char *text, const char *msg_part)
{
    check_bad(text, strlen(text), MAX, -EBADMSG, msg_part);
}

static void test_bad_input(void)
{
    check_bad_str("hello", "line 1, column 1");
    check_bad_str("", "empty message");
    check_bad_str(" \r\n\t", "empty message");
    check_bad_str("{\"jsonrpc\":\"2.0\"", "unexpected end of input");
    check_bad_str("{\"a\":1,}", "line 1, column 8");
    check_bad_str("{\"a\":1}x", "line 1, column 8: unexpected text after the JSON value");
    check_bad_str("{\"a\":1} {\"b\":2}", "column 9: unexpected text");
    check_bad_str("{\"a\":1}\n}", "line 2, column 1");
    check_bad_str("{\n  \"a\": tru\n}", "line 2");
    check_bad_str("{\"a\":'x'}", "column 6");
    check_bad_str("{\"a\":1 /* c */}", "line 1");
    check_bad_str("{\"a\":\"\xff\"}", "utf-8");
    check_bad_str("{\"a\":\"\xc3\"}", "utf-8");
    check_bad_str("{\"a\":01}", "line 1");
    /* NUL bytes: in a string, between tokens, at the end */
    check_bad("{\"a\":\"x\0y\"}", 11, MAX, -EBADMSG, "column 8: NUL byte");
    check_bad("{\"a\":1}\0", 8, MAX, -EBADMSG, "column 8: NUL byte");
    check_bad("\0", 1, MAX, -EBADMSG, "NUL byte");
    /* the size bound: max is allowed, one more is not */
    const char *ok = "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}";
    size_t n = strlen(ok);
    struct err e = ERR_INIT;
    struct jrpc_msg m = {0};
    CHECK_INT(jrpc_parse(ok, n, n, &m, &e), 0);
    CHECK_INT(m.kind, JRPC_NOTIFICATION);
    jrpc_msg_done(&m);
    check_bad(ok, n, n - 1, -E2BIG, "larger than the limit");
    /* a 2 MiB message against the 1 MiB bound: refused before anything is read */
    size_t big = 2 * MAX;
    char *huge = malloc(big);
    CHECK(huge != NULL);
    if (huge) {
        memset(huge, ' ', big);
        check_bad(huge, big, MAX, -E2BIG, "larger than the limit of 1048576 bytes");
        free(huge);
    }
}

/* Nesting: JSON_MAX_DEPTH levels are fine, deeper is -EBADMSG. */
static char *nested(int depth)
{
    /* {"jsonrpc":"2.0","method":"m","params":{"a":[[[...]]]}}: root + params = 2 levels */
    size_t cap = 64 + 2 * (size_t)depth;
    char *s = malloc(cap);
    if (!s)
        abort();
    size_t p = (size_t)snprintf(s, cap, "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\":");
    for (int i = 0; i < depth - 2; i++)
        s[p++] = '[';
    for (int i = 0; i < depth - 2; i++)
        s[p++] = ']';
    s[p++] = '}';
    s[p++] = '}';
    s[p] = 0;
    return s;
}

static void test_depth(void)
{
    char *s = nested(JSON_MAX_DEPTH);
    CHECK_INT(kind_of(s), JRPC_NOTIFICATION);
    free(s);
    s = nested(JSON_MAX_DEPTH + 1);
    check_bad_str(s, "nested more than 64 levels deep");
    free(s);
    s = nested(100000);
    check_bad_str(s, "nested more than 64 levels deep");
    free(s);
}

/* The text is read within len only: an exact-size heap copy without a NUL (ASan reports a
 * read past it), and a prefix of a longer string. */
static void test_not_terminated(void)
{
    const char *text = "{\"jsonrpc\":\"2.0\",\"id\":12,\"result\":{\"n\":12345}}";
    size_t n = strlen(text);
    char *copy = malloc(n);
    CHECK(copy != NULL);
    if (!copy)
        return;
    memcpy(copy, text, n);
    struct err e = ERR_INIT;
    struct jrpc_msg m = {0};
    CHECK_INT(jrpc_parse(copy, n, MAX, &m, &e), 0);
    CHECK_INT(m.kind, JRPC_RESPONSE);
    jrpc_msg_done(&m);
    /* a top-level number ending at len: completed without reading further */
    memcpy(copy, "12345", 5);
    CHECK_INT(jrpc_parse(copy, 5, MAX, &m, &e), 0);
    CHECK_INT(m.kind, JRPC_INVALID);
    CHECK_INT(json_object_get_int64(m.root), 12345);
    jrpc_msg_done(&m);
    /* an unfinished one */
    memcpy(copy, text, n);
    check_bad(copy, n - 1, MAX, -EBADMSG, "unexpected end of input");
    free(copy);

    /* a line with more after it: only len counts */
    const char *two =
        "{\"jsonrpc\":\"2.0\",\"method\":\"a\"}{\"jsonrpc\":\"2.0\",\"method\":\"b\"}";
    CHECK_INT(jrpc_parse(two, strlen(two) / 2, MAX, &m, &e), 0);
    CHECK_STR(m.method, "a");
    jrpc_msg_done(&m);
}

/* The shared tokener is reset between messages: a failure in the middle of a value leaves
 * nothing behind for the next. */
static void test_reuse(void)
{
    struct err e = ERR_INIT;
    struct jrpc_msg m = {0};
    for (int i = 0; i < 3; i++) {
        check_bad_str("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\":[1,2,",
                      "end of input");
        check_bad_str("[[[[[[", "end of input");
        check_bad_str("{\"a\":\"unterminated", "end of input");
        CHECK_INT(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", &m, &e), 0);
        CHECK_INT(m.kind, JRPC_RESPONSE);
        jrpc_msg_done(&m);
    }
}

static void *thread_main(void *arg)
{
    int *ok = arg;
    for (int i = 0; i < 100; i++) {
        struct err e = ERR_INIT;
        struct jrpc_msg m = {0};
        char text[128];
        snprintf(text, sizeof(text), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"m\"}", i);
        if (parse(text, &m, &e) == 0 && m.kind == JRPC_REQUEST && json_object_get_int64(m.id) == i)
            (*ok)++;
        jrpc_msg_done(&m);
        if (parse("{\"x\":", &m, &e) != -EBADMSG)
            (*ok)--;
    }
    return NULL;
}

/* Each thread has its own tokener (freed when the thread ends: LeakSanitizer checks). */
static void test_threads(void)
{
    pthread_t t[2];
    int ok[2] = {0, 0};
    for (int i = 0; i < 2; i++)
        CHECK_INT(pthread_create(&t[i], NULL, thread_main, &ok[i]), 0);
    int main_ok = 0;
    thread_main(&main_ok);
    for (int i = 0; i < 2; i++) {
        CHECK_INT(pthread_join(t[i], NULL), 0);
        CHECK_INT(ok[i], 100);
    }
    CHECK_INT(main_ok, 100);
}

static struct json_object *parse_value(const char *s)
{
    struct json_object *o = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(json_parse(s, strlen(s), MAX, &o, &e), 0);
    return o;
}

static void check_key(const char *json, bool want_ok, const char *want)
{
    struct json_object *id = parse_value(json);
    char key[JRPC_ID_KEY_MAX + 2];
    memset(key, 'Z', sizeof(key));
    CHECK(jrpc_id_key(id, key, sizeof(key)) == want_ok);
    if (want_ok)
        CHECK_STR(key, want);
    json_object_put(id);
}

static void test_id_key(void)
{
    check_key("1", true, "1");
    check_key("\"1\"", true, "s1");
    check_key("0", true, "0");
    check_key("-42", true, "-42");
    check_key("\"\"", true, "s");
    check_key("\"s1\"", true, "ss1");
    check_key("9223372036854775807", true, "9223372036854775807");
    check_key("9223372036854775808", true, "9223372036854775808");
    check_key("18446744073709551614", true, "18446744073709551614");
    check_key("-9223372036854775807", true, "-9223372036854775807");
    check_key("18446744073709551615", false, NULL);
    check_key("-9223372036854775808", false, NULL);
    check_key("1.0", false, NULL);
    check_key("true", false, NULL);
    check_key("{}", false, NULL);
    check_key("[]", false, NULL);
    check_key("\"a\\u0000\"", false, NULL);
    check_key("\"\\u00e9/\"", true, "s\xc3\xa9/");
    CHECK(!jrpc_id_key(NULL, (char[8]){0}, 8)); /* JSON null */

    /* 1 and "1" differ; the same id parsed twice gives the same key */
    char a[JRPC_ID_KEY_MAX + 2], b[JRPC_ID_KEY_MAX + 2];
    struct json_object *i1 = json_object_new_int(1), *s1 = json_object_new_string("1");
    CHECK(jrpc_id_key(i1, a, sizeof(a)));
    CHECK(jrpc_id_key(s1, b, sizeof(b)));
    CHECK(strcmp(a, b) != 0);

    /* a buffer too small is refused, never overrun */
    char small[3];
    CHECK(!jrpc_id_key(s1, small, 2));
    CHECK(jrpc_id_key(s1, small, 3));
    CHECK_STR(small, "s1");
    struct json_object *big = json_object_new_int64(123456);
    CHECK(!jrpc_id_key(big, small, sizeof(small)));
    CHECK(!jrpc_id_key(big, small, 0));
    json_object_put(big);

    /* the longest string id fills the documented buffer exactly */
    char id[JRPC_ID_KEY_MAX + 1];
    memset(id, 'k', JRPC_ID_KEY_MAX);
    id[JRPC_ID_KEY_MAX] = 0;
    struct json_object *longest = json_object_new_string(id);
    CHECK(jrpc_id_key(longest, a, sizeof(a)));
    CHECK_INT(strlen(a), JRPC_ID_KEY_MAX + 1);
    CHECK(!jrpc_id_key(longest, a, sizeof(a) - 1));
    json_object_put(longest);
    json_object_put(i1);
    json_object_put(s1);
}

static void test_serialize(void)
{
    struct json_object *o = parse_value("{ \"a\" : \"x/y\",\n \"b\": [1, 2.50, 1e400, {}],"
                                        " \"c\": \"\\u00e9\\n\\\"\" }");
    size_t len = 0;
    const char *s = jrpc_serialize(o, &len);
    /* compact, slashes as they are, numbers as written, UTF-8 as is */
    CHECK_STR(s, "{\"a\":\"x/y\",\"b\":[1,2.50,1e400,{}],\"c\":\"\xc3\xa9\\n\\\"\"}");
    CHECK_INT(len, strlen(s));
    CHECK(jrpc_serialize(o, NULL) != NULL);
    json_object_put(o);
}

/* In place: the id swapped for the upstream's, the progress token mapped, then serialised. */
static void test_in_place(void)
{
    struct err e = ERR_INIT;
    struct jrpc_msg m = {0};
    CHECK_INT(parse("{\"jsonrpc\":\"2.0\",\"id\":\"agent-1\",\"method\":\"tools/call\",\"params\":"
                    "{\"name\":\"t\",\"_meta\":{\"progressToken\":\"tok\"}}}",
                    &m, &e),
              0);
    CHECK_INT(m.kind, JRPC_REQUEST);
    struct json_object *orig_id = json_object_get(m.id); /* kept for the answer */
    CHECK_INT(json_object_object_add(m.root, "id", json_object_new_int(17)), 0);
    struct json_object *mapped = json_object_new_int(99);
    jrpc_set_progress_token(m.params, mapped);
    json_object_put(mapped);
    CHECK_STR(ser(m.root), "{\"jsonrpc\":\"2.0\",\"id\":17,\"method\":\"tools/call\",\"params\":"
                           "{\"name\":\"t\",\"_meta\":{\"progressToken\":99}}}");
    CHECK_STR(json_object_get_string(orig_id), "agent-1");
    json_object_put(orig_id);
    jrpc_msg_done(&m);
}

static void test_builders(void)
{
    struct json_object *id = json_object_new_int(5);
    struct json_object *sid = json_object_new_string("a/b");
    struct json_object *params = parse_value("{\"name\":\"echo\",\"arguments\":{\"s\":\"x\"}}");

    struct json_object *o = jrpc_new_request(id, "tools/call", params);
    CHECK_STR(ser(o), "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":"
                      "{\"name\":\"echo\",\"arguments\":{\"s\":\"x\"}}}");
    json_object_put(o);
    o = jrpc_new_request(sid, "ping", NULL);
    CHECK_STR(ser(o), "{\"jsonrpc\":\"2.0\",\"id\":\"a/b\",\"method\":\"ping\"}");
    json_object_put(o);

    o = jrpc_new_notification("notifications/initialized", NULL);
    CHECK_STR(ser(o), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    json_object_put(o);
    o = jrpc_new_notification("notifications/cancelled", params);
    CHECK_STR(ser(o), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
                      "{\"name\":\"echo\",\"arguments\":{\"s\":\"x\"}}}");
    json_object_put(o);

    o = jrpc_new_result(id, params);
    CHECK_STR(ser(o), "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":"
                      "{\"name\":\"echo\",\"arguments\":{\"s\":\"x\"}}}");
    json_object_put(o);
    o = jrpc_new_result(sid, NULL);
    CHECK_STR(ser(o), "{\"jsonrpc\":\"2.0\",\"id\":\"a/b\",\"result\":{}}");
    json_object_put(o);

    o = jrpc_new_error(id, JRPC_METHOD_NOT_FOUND, "unknown method 'x/y'", NULL);
    CHECK_STR(ser(o), "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32601,"
                      "\"message\":\"unknown method 'x/y'\"}}");
    json_object_put(o);
    o = jrpc_new_error(NULL, JRPC_PARSE_ERROR, "line 1, column 3: \"bad\"", params);
    CHECK_STR(ser(o), "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                      "\"message\":\"line 1, column 3: \\\"bad\\\"\",\"data\":"
                      "{\"name\":\"echo\",\"arguments\":{\"s\":\"x\"}}}}");
    json_object_put(o);

    /* what the builders produce parses back as what they are */
    o = jrpc_new_request(id, "m", params);
    size_t len = 0;
    const char *s = jrpc_serialize(o, &len);
    struct err e = ERR_INIT;
    struct jrpc_msg m = {0};
    CHECK_INT(jrpc_parse(s, len, MAX, &m, &e), 0);
    CHECK_INT(m.kind, JRPC_REQUEST);
    jrpc_msg_done(&m);
    json_object_put(o);
    o = jrpc_new_error(sid, JRPC_REQUEST_TIMEOUT, "timed out", NULL);
    s = jrpc_serialize(o, &len);
    CHECK_INT(jrpc_parse(s, len, MAX, &m, &e), 0);
    CHECK_INT(m.kind, JRPC_RESPONSE);
    CHECK(m.error != NULL);
    jrpc_msg_done(&m);
    json_object_put(o);

    /* references were taken, not stolen: ours are still alive and unshared-by-ownership */
    CHECK_INT(json_object_get_int64(id), 5);
    CHECK_STR(json_object_get_string(sid), "a/b");
    CHECK_STR(json_get_string(params, "name"), "echo");
    CHECK(json_object_put(id) == 1);
    CHECK(json_object_put(sid) == 1);
    CHECK(json_object_put(params) == 1);
}

static void test_tool_error(void)
{
    struct json_object *o = jrpc_new_tool_error("server 'github' is not connected: \"x\"\n");
    CHECK_STR(ser(o), "{\"content\":[{\"type\":\"text\",\"text\":"
                      "\"server 'github' is not connected: \\\"x\\\"\\n\"}],\"isError\":true}");
    bool is_error = false;
    CHECK(json_get_bool(o, "isError", &is_error));
    CHECK(is_error);
    struct json_object *content = json_get_array(o, "content");
    CHECK_INT(json_object_array_length(content), 1);
    CHECK_STR(json_get_string(json_object_array_get_idx(content, 0), "type"), "text");
    json_object_put(o);
}

static void test_progress_token(void)
{
    struct json_object *p = parse_value("{\"_meta\":{\"progressToken\":\"abc\",\"other\":1}}");
    struct json_object *t = jrpc_progress_token(p);
    CHECK_STR(json_object_get_string(t), "abc");

    struct json_object *n = json_object_new_int(42);
    jrpc_set_progress_token(p, n);
    t = jrpc_progress_token(p);
    CHECK(t == n);
    CHECK_STR(ser(p), "{\"_meta\":{\"progressToken\":42,\"other\":1}}");
    /* setting the token it already has */
    jrpc_set_progress_token(p, n);
    CHECK(jrpc_progress_token(p) == n);
    CHECK(json_object_put(n) == 0); /* p still holds it */
    CHECK_INT(json_object_get_int64(jrpc_progress_token(p)), 42);
    json_object_put(p);

    /* absent or not a usable token */
    const char *none[] = {
        "{}",
        "{\"_meta\":{}}",
        "{\"_meta\":5}",
        "{\"_meta\":{\"progressToken\":null}}",
        "{\"_meta\":{\"progressToken\":true}}",
        "{\"_meta\":{\"progressToken\":1.5}}",
        "{\"_meta\":{\"progressToken\":{}}}",
        "{\"progressToken\":1}",
        "[]",
    };
    for (size_t i = 0; i < ELEMENTSOF(none); i++) {
        p = parse_value(none[i]);
        CHECK(jrpc_progress_token(p) == NULL);
        /* and setting where there is none changes nothing */
        struct json_object *tok = json_object_new_string("x");
        jrpc_set_progress_token(p, tok);
        CHECK(jrpc_progress_token(p) == NULL);
        CHECK(json_object_put(tok) == 1);
        json_object_put(p);
    }
    CHECK(jrpc_progress_token(NULL) == NULL);
    p = parse_value("{\"_meta\":{\"progressToken\":7}}");
    CHECK_INT(json_object_get_int64(jrpc_progress_token(p)), 7);
    json_object_put(p);
}

/* The light parse: what the tree holds, the text it serialises to (the params' bytes as they
 * were but for name and _meta as changed in the tree, a member added at the front), the whole
 * params back, and what it leaves to jrpc_parse(). */
static void light(const char *text, struct jrpc_msg *m)
{
    struct jscan j;
    struct err e = ERR_INIT;
    CHECK_INT(jscan_message(text, strlen(text), &j), 0);
    CHECK_INT(jrpc_parse_light(text, strlen(text), MAX, &j, m, &e), 0);
}

static void test_light(void)
{
    const char *text =
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":{"
        "\"arguments\":{\"name\":\"keep\",\"d\":[1, 2.50, \"\\u00e9\"]}, \"name\":\"s_t\","
        "\"_meta\":{\"progressToken\":4,\"x\":1}}}";
    struct jrpc_msg m;
    light(text, &m);
    CHECK_INT(m.kind, JRPC_REQUEST);
    CHECK_STR(m.method, "tools/call");
    CHECK_STR(json_object_get_string(m.id), "a");
    CHECK(jrpc_params_light(m.params));
    CHECK_INT(json_object_object_length(m.params), 2);
    CHECK(!json_object_object_get_ex(m.params, "arguments", NULL));
    CHECK_INT(json_object_get_int64(jrpc_progress_token(m.params)), 4);
    /* untouched: the bytes as written */
    CHECK_STR(ser(m.params), "{\"arguments\":{\"name\":\"keep\",\"d\":[1, 2.50, \"\\u00e9\"]}, "
                             "\"name\":\"s_t\",\"_meta\":{\"progressToken\":4,\"x\":1}}");
    /* the name and the token changed as the bridge changes them */
    CHECK(json_object_object_add(m.params, "name", json_object_new_string("t\"")) == 0);
    struct json_object *tok = json_object_new_int64(77);
    jrpc_set_progress_token(m.params, tok);
    json_object_put(tok);
    struct json_object *id = json_object_new_int64(5);
    struct json_object *req = jrpc_new_request(id, m.method, m.params);
    CHECK_STR(ser(req), "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{"
                        "\"arguments\":{\"name\":\"keep\",\"d\":[1, 2.50, \"\\u00e9\"]}, "
                        "\"name\":\"t\\\"\",\"_meta\":{\"progressToken\":77,\"x\":1}}}");
    /* the whole params: the same as a parse of that text */
    struct json_object *full = jrpc_params_full(m.params);
    CHECK(full != NULL && !jrpc_params_light(full));
    struct json_object *want = json_tokener_parse(
        "{\"arguments\":{\"name\":\"keep\",\"d\":[1,2.50,\"\\u00e9\"]},\"name\":\"t\\\"\","
        "\"_meta\":{\"progressToken\":77,\"x\":1}}");
    CHECK(json_object_equal(full, want));
    struct json_object *plain = json_tokener_parse("{\"a\":1}");
    struct json_object *same = jrpc_params_full(plain);
    CHECK(same == plain);
    json_object_put(same);
    json_object_put(plain);
    json_object_put(want);
    json_object_put(full);
    json_object_put(req);
    json_object_put(id);
    jrpc_msg_done(&m);

    /* no _meta: one added goes to the front; empty params too */
    const char *texts[][2] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"n\"}}",
         "{\"_meta\":{\"k\":true},\"name\":\"n\"}"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{ }}",
         "{\"_meta\":{\"k\":true} }"},
    };
    for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
        light(texts[i][0], &m);
        struct json_object *meta = json_tokener_parse("{\"k\":true}");
        CHECK(json_object_object_add(m.params, "_meta", meta) == 0);
        CHECK_STR(ser(m.params), texts[i][1]);
        jrpc_msg_done(&m);
    }

    /* what the stand-in does not take */
    const char * not [] = {
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[1]}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"method\":\"m\",\"params\":{}}",
    };
    for (size_t i = 0; i < ELEMENTSOF(not ); i++) {
        struct jscan j;
        struct err e = ERR_INIT;
        CHECK_INT(jscan_message(not [i], strlen(not [i]), &j), 0);
        CHECK_INT(jrpc_parse_light(not [i], strlen(not [i]), MAX, &j, &m, &e), -EAGAIN);
    }
}

/* The envelope the light parse builds from the scan (no _meta, a plain id) or parses (the
 * rest) is the one a whole parse gives: kind, id (type and value), method, params. */
static void test_light_envelope(void)
{
    const char *texts[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}",
        "{\"params\":{\"arguments\":{\"id\":3},\"name\":\"t\"},\"method\":\"tools/call\","
        "\"id\":\"abc\",\"jsonrpc\":\"2.0\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":-42,\"method\":\"m\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"m\",\"params\":{\"x\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":999999999999999999,\"method\":\"m\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"method\":\"m\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\\u00e9\",\"method\":\"m\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"\",\"method\":\"m\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1e3,\"method\":\"m\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":{\"name\":\"n\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"m\",\"params\":{\"_meta\":{\"progressToken\":1}"
        "}}",
    };
    for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
        struct jscan j;
        struct jrpc_msg lm = {0}, fm = {0};
        struct err e = ERR_INIT;
        size_t len = strlen(texts[i]);
        /* an escaped id is not the scan's (-EAGAIN): the whole parse takes it */
        if (jscan_message(texts[i], len, &j) < 0)
            continue;
        int r = jrpc_parse_light(texts[i], len, MAX, &j, &lm, &e);
        CHECK_INT(jrpc_parse(texts[i], len, MAX, &fm, &e), 0);
        if (r == -EAGAIN) {
            /* refused: a message that is not a request (an id 1e3 is a double) */
            CHECK(fm.kind != JRPC_REQUEST && fm.kind != JRPC_NOTIFICATION);
            jrpc_msg_done(&fm);
            continue;
        }
        CHECK_INT(r, 0);
        CHECK_INT(lm.kind, fm.kind);
        CHECK_STR(lm.method, fm.method);
        CHECK((lm.id == NULL) == (fm.id == NULL));
        if (fm.id) {
            CHECK_INT(json_object_get_type(lm.id), json_object_get_type(fm.id));
            CHECK(json_object_equal(lm.id, fm.id));
        }
        struct json_object *full = jrpc_params_full(lm.params);
        CHECK(json_object_equal(full, fm.params));
        json_object_put(full);
        /* no _meta, a plain id: no root until one is asked for, then the parse's envelope */
        const char *idt = texts[i] + j.id.off;
        bool plain = !j.meta.len &&
                     (!j.id.len || (j.id_type == JSCAN_STRING && !memchr(idt, '\\', j.id.len)) ||
                      (j.id_type == JSCAN_NUMBER && j.id.len - (idt[0] == '-') <= 18));
        CHECK(lm.light == plain);
        CHECK((lm.root == NULL) == plain);
        struct json_object *root = jrpc_msg_ref(&lm);
        CHECK(root != NULL && root == lm.root);
        struct json_object *again = jrpc_msg_ref(&lm);
        CHECK(again == root);
        json_object_put(again);
        struct json_object *v = NULL;
        CHECK(json_object_object_get_ex(root, "jsonrpc", &v));
        CHECK_STR(json_object_get_string(v), "2.0");
        CHECK(json_object_object_get_ex(root, "method", &v));
        CHECK_STR(json_object_get_string(v), fm.method);
        CHECK(json_object_object_get_ex(root, "id", &v) == (fm.id != NULL));
        CHECK(!fm.id || json_object_equal(v, fm.id));
        CHECK(json_object_object_get_ex(root, "params", &v) && v == lm.params);
        json_object_put(root);
        jrpc_msg_done(&lm);
        jrpc_msg_done(&fm);
    }
}

/* Stand-ins come and go (the pool of their blocks): each serialises as its own text, small
 * and large, many alive at once and freed in any order. */
static void test_light_reuse(void)
{
    enum { N = 80 };
    static struct jrpc_msg ms[N];
    static char texts[N][2200];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            int pad = (i * 37 + round * 11) % 2000; /* below and above a pooled block's size */
            snprintf(texts[i], sizeof(texts[i]),
                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call%d\",\"params\":"
                     "{\"name\":\"t%d\",\"arguments\":{\"p\":\"%*s\"}}}",
                     i, round, i, pad, "");
            light(texts[i], &ms[i]);
        }
        int bad = 0;
        for (int i = 0; i < N; i++) {
            int k = (i * 7 + round) % N; /* freed out of order */
            const char *p = strstr(texts[k], "\"params\":") + 9;
            char method[32];
            snprintf(method, sizeof(method), "tools/call%d", round);
            const char *got = ser(ms[k].params);
            if (strlen(got) != strlen(p) - 1 || strncmp(got, p, strlen(p) - 1) != 0 ||
                strcmp(ms[k].method, method) != 0 || json_object_get_int64(ms[k].id) != k)
                bad++;
            jrpc_msg_done(&ms[k]);
        }
        CHECK_INT(bad, 0);
    }
}

/* jrpc_write_request() writes what jrpc_serialize(jrpc_new_request()) writes: for a stand-in
 * whose name the bridge renamed (with characters to escape), with and without _meta, for whole
 * params and none. */
static void write_same(int64_t idv, const char *method, struct json_object *params)
{
    struct json_object *id = json_object_new_int64(idv);
    struct json_object *req = jrpc_new_request(id, method, params);
    struct buf b;
    buf_init(&b, 1 << 20);
    CHECK_INT(jrpc_write_request(&b, idv, method, params), 0);
    CHECK_STR(b.data, ser(req));
    buf_release(&b);
    json_object_put(req);
    json_object_put(id);
}

static void test_write_request(void)
{
    const char *texts[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/call\",\"params\":{\"name\":\"a_b\","
        "\"arguments\":{\"s\":\"\\u00e9\\n\", \"n\": [1, 2.50]}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{ \"arguments\":{},"
        "\"name\" : \"t\" }}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\","
        "\"_meta\":{\"progressToken\":\"p\"}}}",
    };
    const char *names[] = {NULL, "srv_tool", "q\"\\\x01/\x7f\xc3\xa9"};
    for (size_t i = 0; i < ELEMENTSOF(texts); i++)
        for (size_t k = 0; k < ELEMENTSOF(names); k++) {
            struct jrpc_msg m;
            light(texts[i], &m);
            if (names[k])
                CHECK(json_object_object_add(m.params, "name", json_object_new_string(names[k])) ==
                      0);
            write_same(INT64_C(1) << 40, m.method, m.params);
            jrpc_msg_done(&m);
        }
    struct json_object *whole = json_tokener_parse("{\"a\":[1,{\"b\":\"c/d\"}],\"name\":\"x\"}");
    write_same(-3, "tools/call", whole);
    write_same(0, "ping", NULL);
    write_same(7, "m\"\n", whole);
    json_object_put(whole);
    /* a bounded buffer says so */
    struct buf small;
    buf_init(&small, 8);
    CHECK_INT(jrpc_write_request(&small, 1, "ping", NULL), -E2BIG);
    buf_release(&small);
}

/* ---- a big request held, not copied ---- */

#define HELD_SMALL 20

struct held_agent {
    struct jrpc_msg big; /* the call waiting for its answer keeps it */
    int n, small, bad;
};

static void held_message(const char *msg, size_t len, void *userdata)
{
    struct held_agent *h = userdata;
    struct jscan j;
    struct jrpc_msg m = {0};
    struct err e = ERR_INIT;
    h->n++;
    if (jscan_message(msg, len, &j) < 0 || jrpc_parse_light(msg, len, 16u << 20, &j, &m, &e) < 0) {
        h->bad++;
        return;
    }
    if (!h->big.params && len > (1u << 20)) {
        h->big = m;
        return;
    }
    if (json_object_get_int64(m.id) != h->n || strcmp(m.method, "tools/call") != 0)
        h->bad++;
    h->small++;
    jrpc_msg_done(&m);
}

static void held_error(int error, void *userdata)
{
    struct held_agent *h = userdata;
    (void)error;
    h->bad++;
}

static bool held_all_read(void *ctx)
{
    struct held_agent *h = ctx;
    return h->n == HELD_SMALL + 1 || h->bad;
}

static void held_quit(void *userdata)
{
    loop_quit(userdata, 0);
}

static void held_run_once(struct loop *l)
{
    CHECK_INT(loop_defer(l, held_quit, l), 0);
    CHECK_INT(loop_run(l), 0);
}

/* Reads fd (the server's stdin) while the loop writes into it, until len bytes came; they must
 * be want. */
static void held_read_all(struct loop *l, int fd, const char *want, size_t len)
{
    char *got = malloc(len + 1);
    size_t have = 0;
    int64_t t0 = now_mono_ms();
    while (have <= len && now_mono_ms() - t0 < 20000) {
        ssize_t n = read(fd, got + have, len + 1 - have);
        if (n > 0)
            have += (size_t)n;
        else if (have == len)
            break;
        held_run_once(l);
    }
    CHECK_INT(have, len);
    CHECK(have == len && memcmp(got, want, len) == 0);
    free(got);
}

static int held_writer(struct loop *l, int fd, struct held_agent *h, struct framing **ret)
{
    const struct framing_handler fh = {.on_message = held_message, .on_error = held_error};
    return framing_new(l, -1, fd, &fh, NULL, h, ret);
}

static void test_light_held(void)
{
    signal(SIGPIPE, SIG_IGN); /* as mcp-bridge's main does */
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    int a[2], s[3][2];
    CHECK(pipe2(a, O_CLOEXEC | O_NONBLOCK) == 0);
    for (int i = 0; i < 3; i++)
        CHECK(pipe2(s[i], O_CLOEXEC | O_NONBLOCK) == 0);
    struct held_agent h = {0};
    struct framing *agent = NULL, *reader = NULL, *srv[3] = {NULL};
    const struct framing_handler fh = {.on_message = held_message, .on_error = held_error};
    CHECK_INT(framing_new(l, -1, a[1], &fh, NULL, &h, &agent), 0);
    CHECK_INT(framing_new(l, a[0], -1, &fh, NULL, &h, &reader), 0);
    for (int i = 0; i < 3; i++)
        CHECK_INT(held_writer(l, s[i][1], &h, &srv[i]), 0);

    /* a call of 2 MiB (escapes and spaces as the agent wrote them), then small calls that
     * arrive while it waits for its answer */
    size_t big = 2u << 20;
    struct buf text;
    buf_init(&text, 4u << 20);
    CHECK_INT(buf_append_str(&text, "{\"jsonrpc\":\"2.0\",\"id\":\"c-1\",\"method\":\"tools/call\","
                                    "\"params\":{\"name\":\"srv_echo\", \"arguments\":{\"t\":\""),
              0);
    while (text.len < big)
        CHECK_INT(buf_append_str(&text, "abc\\n\\u00e9 xyz/"), 0);
    CHECK_INT(buf_append_str(&text, "\"}}}"), 0);
    CHECK_INT(framing_send(agent, text.data, text.len), 0);
    for (int i = 2; i <= HELD_SMALL + 1; i++) {
        char small[128];
        int n = snprintf(small, sizeof(small),
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
                         "\"params\":{\"name\":\"srv_t\",\"arguments\":{}}}",
                         i);
        CHECK_INT(framing_send(agent, small, (size_t)n), 0);
    }
    CHECK(wait_for(l, held_all_read, &h, 20000));
    CHECK_INT(h.bad, 0);
    CHECK_INT(h.small, HELD_SMALL);
    CHECK(h.big.params && jrpc_params_light(h.big.params));

    /* the bridge renames the tool; the pieces are the bytes jrpc_write_request() writes, the
     * params' bytes where the agent's read buffer has them (intact after the reads since) */
    CHECK(json_object_object_add(h.big.params, "name", json_object_new_string("echo")) == 0);
    struct buf whole, env;
    buf_init(&whole, 16u << 20);
    buf_init(&env, 16u << 20);
    CHECK_INT(jrpc_write_request(&whole, 7, h.big.method, h.big.params), 0);
    CHECK_INT(buf_append_char(&whole, '\n'), 0);
    /* the agent's bytes from the arguments on, the envelope's closing brace included */
    const char *rest = strstr(text.data, "\"arguments\":");
    struct buf expect;
    buf_init(&expect, 16u << 20);
    CHECK_INT(buf_append_str(&expect, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
                                      "\"params\":{\"name\":\"echo\", "),
              0);
    CHECK_INT(buf_append_str(&expect, rest), 0);
    CHECK_INT(buf_append_char(&expect, '\n'), 0);
    CHECK_INT(whole.len, expect.len);
    CHECK_STR(whole.data, expect.data);
    buf_release(&expect);
    struct jrpc_pieces pc;
    CHECK_INT(jrpc_write_request_pieces(&env, 7, h.big.method, h.big.params, &pc), 0);
    CHECK(pc.held != NULL);
    CHECK(pc.n > 1);
    size_t off = 0;
    bool same = true;
    for (int i = 0; i < pc.n; i++) {
        same = same && off + pc.iov[i].iov_len <= whole.len &&
               memcmp(whole.data + off, pc.iov[i].iov_base, pc.iov[i].iov_len) == 0;
        off += pc.iov[i].iov_len;
    }
    CHECK(same);
    CHECK_INT(off + 1, whole.len);
    CHECK(env.len < 128); /* the envelope and the name only */

    /* sent, then sent again after a reconnect (a retry), then to a server that dies before
     * reading: each queue holds the buffer, not a copy */
    for (int i = 0; i < 3; i++) {
        CHECK_INT(framing_sendv_held(srv[i], pc.iov, pc.n, pc.held), 0);
        CHECK(framing_pending(srv[i]) > 0);
    }
    framing_free(srv[2]); /* its server died */
    srv[2] = NULL;
    /* the call is answered while its request still waits in the queues */
    jrpc_msg_done(&h.big);
    held_read_all(l, s[0][0], whole.data, whole.len);
    held_read_all(l, s[1][0], whole.data, whole.len);

    /* with the last user the buffer is given back (or kept as the spare, which goes with the
     * last framing) */
    framing_free(agent);
    framing_free(reader);
    framing_free(srv[0]);
    framing_free(srv[1]);
    held_run_once(l);
    CHECK_INT(framing_read_buffers(), 0);

    buf_release(&text);
    buf_release(&whole);
    buf_release(&env);
    close(a[0]);
    close(a[1]);
    for (int i = 0; i < 3; i++) {
        close(s[i][0]);
        close(s[i][1]);
    }
    loop_free(l);
}

TESTS_MAIN(test_request, test_notification, test_response, test_malformed_error, test_invalid,
           test_bad_input, test_depth, test_not_terminated, test_reuse, test_threads, test_id_key,
           test_serialize, test_in_place, test_builders, test_tool_error, test_progress_token,
           test_light, test_light_envelope, test_light_reuse, test_write_request, test_light_held)
