/* test_proxy.c - the proxy tool's definition and its arguments (catalog/proxy.h): the
 * definition's schema, the modes' precedence, args as an object or a string, what is refused,
 * what waits for the first lists. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "catalog/proxy.h"
#include "tests.h"

static struct json_object *parse(const char *json)
{
    struct json_object *o = json_tokener_parse(json);
    if (!o) {
        fprintf(stderr, "bad test JSON: %s\n", json);
        exit(2);
    }
    return o;
}

static void test_definition(void)
{
    struct json_object *d = proxy_tool_definition();
    CHECK(d != NULL);
    if (!d)
        return;
    CHECK_STR(json_object_get_string(json_object_object_get(d, "name")), "mcp");
    struct json_object *schema = json_object_object_get(d, "inputSchema");
    CHECK_STR(json_object_get_string(json_object_object_get(schema, "type")), "object");
    struct json_object *props = json_object_object_get(schema, "properties");
    static const char *const keys[] = {"tool",   "args",  "connect",        "describe",
                                       "search", "regex", "includeSchemas", "server"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        struct json_object *p = json_object_object_get(props, keys[i]);
        CHECK(p != NULL);
        CHECK(json_object_get_string(json_object_object_get(p, "description")) != NULL);
    }
    CHECK(json_object_object_get(d, "description") != NULL);
    json_object_put(d);
}

/* Parses json (NULL: no arguments) and checks the mode and target; returns r. */
static int req(const char *json, struct proxy_request *rq, char *err)
{
    struct json_object *o = json ? parse(json) : NULL;
    err[0] = 0;
    int r = proxy_request_parse(o, rq, err, 256);
    json_object_put(o);
    return r;
}

static void test_parse(void)
{
    struct proxy_request rq;
    char err[256];

    CHECK_INT(req(NULL, &rq, err), 0);
    CHECK_INT(rq.mode, PROXY_STATUS);
    proxy_request_release(&rq);
    CHECK_INT(req("{}", &rq, err), 0);
    CHECK_INT(rq.mode, PROXY_STATUS);
    /* the adapter's precedence, and "" counts as not given */
    CHECK_INT(req("{\"server\":\"s\",\"search\":\"q\",\"describe\":\"d\",\"connect\":\"c\","
                  "\"tool\":\"t\"}",
                  &rq, err),
              0);
    CHECK_INT(rq.mode, PROXY_CALL);
    proxy_request_release(&rq);
    CHECK_INT(req("{\"server\":\"s\",\"search\":\"q\",\"describe\":\"d\",\"connect\":\"c\","
                  "\"tool\":\"\"}",
                  &rq, err),
              0);
    CHECK_INT(rq.mode, PROXY_CONNECT);
    CHECK_INT(req("{\"server\":\"s\",\"search\":\"q\",\"describe\":\"d\"}", &rq, err), 0);
    CHECK_INT(rq.mode, PROXY_DESCRIBE);
    CHECK_INT(req("{\"server\":\"s\",\"search\":\"q w\",\"regex\":true,\"includeSchemas\":true}",
                  &rq, err),
              0);
    CHECK_INT(rq.mode, PROXY_SEARCH);
    CHECK(rq.regex && rq.include_schemas);
    CHECK_INT(req("{\"server\":\"s\",\"tool\":null}", &rq, err), 0);
    CHECK_INT(rq.mode, PROXY_SERVER);

    /* args: an object, a string holding one, blank or absent: {} */
    struct json_object *root = parse("{\"tool\":\"t\",\"args\":{\"a\":1}}");
    CHECK_INT(proxy_request_parse(root, &rq, err, sizeof(err)), 0);
    CHECK_STR(rq.target, "t");
    CHECK_STR(json_object_to_json_string_ext(rq.args, JSON_C_TO_STRING_PLAIN), "{\"a\":1}");
    proxy_request_release(&rq);
    json_object_put(root);
    root = parse("{\"tool\":\"t\",\"args\":\"{\\\"q\\\": \\\"iPhone\\\"}\"}");
    CHECK_INT(proxy_request_parse(root, &rq, err, sizeof(err)), 0);
    CHECK_STR(json_object_to_json_string_ext(rq.args, JSON_C_TO_STRING_PLAIN),
              "{\"q\":\"iPhone\"}");
    proxy_request_release(&rq);
    json_object_put(root);
    CHECK_INT(req("{\"tool\":\"t\",\"args\":\" \"}", &rq, err), 0);
    CHECK_STR(json_object_to_json_string_ext(rq.args, JSON_C_TO_STRING_PLAIN), "{}");
    proxy_request_release(&rq);
    CHECK_INT(req("{\"tool\":\"t\",\"arguments\":{\"b\":2}}", &rq, err), 0);
    CHECK_STR(json_object_to_json_string_ext(rq.args, JSON_C_TO_STRING_PLAIN), "{\"b\":2}");
    proxy_request_release(&rq);
    CHECK_INT(req("{\"tool\":\"t\"}", &rq, err), 0);
    CHECK_STR(json_object_to_json_string_ext(rq.args, JSON_C_TO_STRING_PLAIN), "{}");
    proxy_request_release(&rq);

    /* what is refused says why */
    CHECK_INT(req("{\"tool\":\"t\",\"args\":\"{bad\"}", &rq, err), -EINVAL);
    CHECK_CONTAINS(err, "'args' is a string that does not hold JSON: line 1, column 2");
    CHECK_INT(req("{\"tool\":\"t\",\"args\":\"[1]\"}", &rq, err), -EINVAL);
    CHECK_CONTAINS(err, "'args' must hold a JSON object, not an array");
    CHECK_INT(req("{\"tool\":\"t\",\"args\":7}", &rq, err), -EINVAL);
    CHECK_CONTAINS(err, "'args' must be a JSON object (or a string holding one)");
    CHECK_INT(req("{\"server\":3}", &rq, err), -EINVAL);
    CHECK_CONTAINS(err, "'server' must be a string");
    CHECK_INT(req("{\"search\":\"x\",\"regex\":\"yes\"}", &rq, err), -EINVAL);
    CHECK_CONTAINS(err, "'regex' must be true or false");
    CHECK_INT(req("[1]", &rq, err), -EINVAL);
    CHECK_CONTAINS(err, "the arguments must be an object");
    char big[400] = "{\"search\":\"";
    memset(big + strlen(big), 'a', 300);
    strcpy(big + 11 + 300, "\"}");
    CHECK_INT(req(big, &rq, err), -EINVAL);
    CHECK_CONTAINS(err, "the search is 300 bytes: at most 256");
    proxy_request_release(NULL);

    /* what waits for the first lists: all but the status, connect and refused arguments */
    static const struct {
        const char *params;
        bool waits;
    } waits[] = {
        {"{}", false},
        {"{\"arguments\":{}}", false},
        {"{\"arguments\":{\"connect\":\"s\",\"server\":\"s\"}}", false},
        {"{\"arguments\":{\"server\":\"s\"}}", true},
        {"{\"arguments\":{\"search\":\"q\"}}", true},
        {"{\"arguments\":{\"describe\":\"t\"}}", true},
        {"{\"arguments\":{\"tool\":\"t\",\"args\":{}}}", true},
        {"{\"arguments\":{\"tool\":\"t\",\"args\":\"{bad\"}}", false},
    };
    for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
        struct json_object *params = parse(waits[i].params);
        CHECK_INT(proxy_tool_waits(params), waits[i].waits);
        json_object_put(params);
    }
}

TESTS_MAIN(test_definition, test_parse)
