/* test_mcp_headers.c - the 2026-07-28 request headers: the =?base64?...?= form (the
 * specification's own examples), the x-mcp-header markings accepted and each way of being
 * invalid, and the headers of tools/call, resources/read, prompts/get and other requests. */
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"

#include "transport/mcp_headers.h"
#include "tests.h"

static void check_enc(const char *in, const char *want)
{
    char *s = mcp_header_encode(in, strlen(in));
    CHECK_STR(s, want);
    free(s);
}

static void test_encode(void)
{
    check_enc("us-west1", "us-west1");
    check_enc("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?=");
    check_enc(" padded ", "=?base64?IHBhZGRlZCA=?=");
    check_enc("line1\nline2", "=?base64?bGluZTEKbGluZTI=?=");
    check_enc("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    check_enc("a b\tc", "a b\tc");
    check_enc("", "=?base64?"
                  "?=");
    check_enc("\xff", "=?base64?/w==?=");
    check_enc("\tx", "=?base64?CXg=?=");
    check_enc("file:///projects/myapp/config.json", "file:///projects/myapp/config.json");
    CHECK(!mcp_header_plain("x\x7f", 2));
    CHECK(mcp_header_plain("=?base64?x", 10));
}

static struct json_object *parse(const char *s)
{
    struct json_object *o = NULL;
    CHECK_INT(json_parse(s, strlen(s), 1 << 20, &o, NULL), 0);
    return o;
}

/* The markings of a tool whose inputSchema is schema: NULL when invalid (why checked). */
static struct json_object *markings(const char *schema, const char *why_has)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "{\"name\":\"t\",\"inputSchema\":%s}", schema);
    struct json_object *tool = parse(buf), *map = NULL;
    char *why = NULL;
    int r = mcp_headers_tool_params(tool, &map, &why);
    if (why_has) {
        CHECK_INT(r, -22);
        CHECK(why && strstr(why, why_has));
        if (!why || !strstr(why, why_has))
            fprintf(stderr, "  %s: %s\n", schema, why ? why : "(none)");
    } else {
        CHECK_INT(r, 0);
        CHECK(!why);
    }
    free(why);
    json_object_put(tool);
    return map;
}

static void test_markings(void)
{
    struct json_object *m = markings("{\"type\":\"object\",\"properties\":{\"region\":{\"type\":"
                                     "\"string\",\"x-mcp-header\":\"Region\"},\"q\":{\"type\":"
                                     "\"string\"},\"o\":{\"type\":\"object\",\"properties\":{"
                                     "\"n\":{\"type\":\"integer\",\"x-mcp-header\":\"N\"}}}}}",
                                     NULL);
    CHECK_STR(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN),
              "[[\"Region\",\"region\"],[\"N\",\"o\",\"n\"]]");
    json_object_put(m);
    CHECK(!markings("{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}}}", NULL));
    CHECK(!markings("{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\",\"default\":"
                    "{\"x-mcp-header\":\"X\"}}}}",
                    NULL));

    static const struct {
        const char *schema, *why;
    } bad[] = {
        {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"\"}}}", "is empty"},
        {"{\"properties\":{\"v\":{\"type\":\"object\",\"x-mcp-header\":\"D\"}}}", "type object"},
        {"{\"properties\":{\"v\":{\"type\":\"array\",\"x-mcp-header\":\"D\"}}}", "type array"},
        {"{\"properties\":{\"v\":{\"type\":\"null\",\"x-mcp-header\":\"D\"}}}", "type null"},
        {"{\"properties\":{\"v\":{\"type\":\"number\",\"x-mcp-header\":\"D\"}}}", "type number"},
        {"{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},\"b\":{"
         "\"type\":\"string\",\"x-mcp-header\":\"Region\"}}}",
         "used twice"},
        {"{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"MyField\"},\"b\":{"
         "\"type\":\"string\",\"x-mcp-header\":\"myfield\"}}}",
         "used twice"},
        {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"My Region\"}}}",
         "not an HTTP token"},
        {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"Region:P\"}}}",
         "not an HTTP token"},
        {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"R\u00e9gion\"}}}",
         "not an HTTP token"},
        {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"Region\\t1\"}}}",
         "not an HTTP token"},
        {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":5}}}", "not a string"},
        {"{\"properties\":{\"v\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
         "\"x-mcp-header\":\"I\"}}}}",
         "not on a property reached"},
        {"{\"oneOf\":[{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"I\"}}}]}",
         "not on a property reached"},
        {"{\"$defs\":{\"d\":{\"type\":\"string\",\"x-mcp-header\":\"I\"}}}",
         "not on a property reached"},
        {"{\"type\":\"object\",\"x-mcp-header\":\"Root\"}", "not on a property reached"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(!markings(bad[i].schema, bad[i].why));
}

static char *joined(struct strv *sv)
{
    size_t n = 0;
    for (size_t i = 0; i < sv->n; i++)
        n += strlen(sv->v[i]) + 1;
    char *s = calloc(1, n + 1);
    for (size_t i = 0; i < sv->n; i++) {
        strcat(s, sv->v[i]);
        strcat(s, "|");
    }
    return s;
}

static void check_req(const char *method, const char *params, struct json_object *map,
                      const char *want)
{
    struct json_object *p = params ? parse(params) : NULL;
    struct strv sv = STRV_INIT;
    CHECK_INT(mcp_headers_for_request(method, p, map, &sv), 0);
    char *s = joined(&sv);
    CHECK_STR(s, want);
    free(s);
    strv_release(&sv);
    json_object_put(p);
}

static void test_request(void)
{
    check_req("tools/list", NULL, NULL, "Mcp-Method: tools/list|");
    check_req("tools/call", "{\"name\":\"get_weather\"}", NULL,
              "Mcp-Method: tools/call|Mcp-Name: get_weather|");
    check_req("resources/read", "{\"uri\":\"file:///a b\"}", NULL,
              "Mcp-Method: resources/read|Mcp-Name: file:///a b|");
    check_req("prompts/get", "{\"name\":\"caf\u00e9\"}", NULL,
              "Mcp-Method: prompts/get|Mcp-Name: =?base64?Y2Fmw6k=?=|");
    struct json_object *map = parse("[[\"Region\",\"region\"],[\"N\",\"o\",\"n\"],[\"B\",\"b\"],"
                                    "[\"Nul\",\"nul\"],[\"G\",\"g\"]]");
    check_req("tools/call",
              "{\"name\":\"x\",\"arguments\":{\"region\":\"us-west1\",\"o\":{\"n\":-7},\"b\":false,"
              "\"nul\":null,\"g\":\"Hello, \u4e16\u754c\",\"query\":\"q\"}}",
              map,
              "Mcp-Method: tools/call|Mcp-Name: x|Mcp-Param-Region: us-west1|Mcp-Param-N: -7|"
              "Mcp-Param-B: false|Mcp-Param-G: =?base64?SGVsbG8sIOS4lueVjA==?=|");
    check_req("tools/call", "{\"name\":\"x\"}", map, "Mcp-Method: tools/call|Mcp-Name: x|");
    json_object_put(map);
}

TESTS_MAIN(test_encode, test_markings, test_request)
