/* test_proxy_tool.c - the proxy tool in a downstream with the scripted servers: a call that
 * waits for a slow server's first lists while the status answers at once, a resource read
 * tool, a refused argument, a server's tools. Its parts are tested alone in test_proxy.c and
 * test_proxy_search.c. */
#include "downstream_fixture.h"

/* The proxy tool in a downstream: its calls wait for the first lists (the status does not),
 * and exposeResources' read tools read through the server. */
static void test_in_downstream(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{\"fast\":{\"command\":\"@SELF@\",\"args\":[\"--server\","
                       "\"fast\",\"tools=echo\"],\"exposeResources\":true}," SERVER(
                           "slow", ",\"tools=echo\",\"init_delay=1500\"") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 8000),
              0);
    initialize(&f, NULL);
    int64_t t0 = now_ms();
    /* the slow server's tool is not known yet: the call waits for it */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp\",\"arguments\":{\"tool\":\"mcp_slow_echo\",\"args\":\"{\\\"x\\\":1}\"}}}");
    struct json_object *r = fx_request(&f, "2", "tools/call", "{\"name\":\"mcp\"}");
    CHECK(now_ms() - t0 < 1200); /* the status answers at once */
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "\nslow: connecting");
    json_object_put(r);
    r = fx_wait(&f, match_id, "1", NULL, WAIT_MS);
    CHECK(now_ms() - t0 >= 1000);
    CHECK_STR(path_str(r, "result.content.0.text"), "slow echo {\"x\":1}");
    CHECK(path(r, "result.isError") == NULL);
    json_object_put(r);

    r = fx_request(&f, "3", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"),
              "mcp mcp_fast_echo mcp_fast_resource_mem___fast_readme mcp_slow_echo");
    json_object_put(r);
    r = fx_request(&f, "4", "tools/call", "{\"name\":\"mcp_fast_resource_mem___fast_readme\"}");
    CHECK_STR(path_str(r, "result.content.0.type"), "text");
    CHECK_STR(path_str(r, "result.content.0.text"), "fast mem://fast/readme");
    json_object_put(r);
    r = fx_request(&f, "5", "tools/call",
                   "{\"name\":\"mcp\",\"arguments\":{\"tool\":\"mcp_fast_resource_mem___fast_"
                   "readme\"}}");
    CHECK_STR(path_str(r, "result.content.0.text"), "fast mem://fast/readme");
    json_object_put(r);
    r = fx_request(&f, "6", "tools/call",
                   "{\"name\":\"mcp\",\"arguments\":{\"tool\":\"mcp_fast_echo\",\"args\":[1]}}");
    CHECK(path(r, "result.isError") != NULL);
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "'args' must be a JSON object");
    json_object_put(r);
    r = fx_request(&f, "7", "tools/call", "{\"name\":\"mcp\",\"arguments\":{\"server\":\"slow\"}}");
    CHECK_STR(path_str(r, "result.content.0.text"),
              "server 'slow' (connected): 1 tool\nmcp_slow_echo - a scripted tool\n");
    json_object_put(r);
    fx_stop(&f);
}

DOWNSTREAM_TESTS_MAIN(NULL, test_in_downstream)
