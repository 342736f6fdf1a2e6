/* test_downstream_modern.c - an agent of the 2026-07-28 era: server/discover, the per-request
 * _meta and its errors, the methods it no longer has, resultType and the caching hints,
 * subscriptions/listen (acknowledged, filtered, tagged, cancelled), logs only for requests
 * that ask for them, and single mode's discover made of a legacy server's InitializeResult.
 * The servers are the fixture's legacy ones (downstream_fixture.h). */
#include "downstream_fixture.h"

/* _meta of a modern request, with extra members (",..." or "") */
#define META(extra)                                                                                \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{}},"                         \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"t\",\"version\":\"1\"}" extra "}"

static struct json_object *modern(struct fx *f, const char *id, const char *method,
                                  const char *params)
{
    char p[4096];
    snprintf(p, sizeof(p), "{" META("") "%s%s}", params && *params ? "," : "",
             params ? params : "");
    return fx_request(f, id, method, p);
}

static bool has_sub_id(struct json_object *m, const char *id)
{
    /* path() splits at dots: the key has some, so it is looked up by hand */
    struct json_object *meta = path(m, "params._meta");
    struct json_object *sid =
        json_object_object_get(meta, "io.modelcontextprotocol/subscriptionId");
    return sid && strcmp(jstr(sid), id) == 0;
}

static void test_discover_and_errors(void)
{
    struct fx f;
    CHECK_INT(
        fx_start(
            &f, "{\"mcpServers\":{" SERVER("a", ",\"instructions=use a\"") "," SERVER("b", "") "}}",
            DOWNSTREAM_AGGREGATE, NULL, 0),
        0);
    /* a discover without _meta does not make the agent modern */
    struct json_object *r = fx_request(&f, "\"d0\"", "server/discover", NULL);
    CHECK_INT(path_int(r, "error.code"), -32602);
    CHECK_CONTAINS(path_str(r, "error.message"), "io.modelcontextprotocol/protocolVersion");
    json_object_put(r);
    /* nor does a version the bridge does not serve */
    r = fx_request(&f, "\"d1\"", "server/discover",
                   "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\","
                   "\"io.modelcontextprotocol/clientCapabilities\":{}}}");
    CHECK_INT(path_int(r, "error.code"), -32022);
    CHECK_STR(path_str(r, "error.data.supported.0"), "2026-07-28");
    CHECK(path(r, "error.data.supported.1") == NULL);
    CHECK_STR(path_str(r, "error.data.requested"), "2099-01-01");
    json_object_put(r);

    r = modern(&f, "\"d2\"", "server/discover", NULL);
    CHECK_STR(path_str(r, "result.resultType"), "complete");
    CHECK_STR(path_str(r, "result.supportedVersions.0"), "2026-07-28");
    CHECK(path(r, "result.capabilities.tools.listChanged") != NULL);
    CHECK(path(r, "result.capabilities.resources.subscribe") != NULL);
    struct json_object *info =
        json_object_object_get(path(r, "result._meta"), "io.modelcontextprotocol/serverInfo");
    CHECK_STR(json_get_string(info, "name"), "mcp-bridge");
    CHECK_CONTAINS(path_str(r, "result.instructions"), "2 servers are connecting");
    CHECK(path_int(r, "result.ttlMs") >= 0);
    CHECK_STR(path_str(r, "result.cacheScope"), "private");
    json_object_put(r);

    /* every later request is checked */
    r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_INT(path_int(r, "error.code"), -32602);
    json_object_put(r);
    r = fx_request(&f, "2", "tools/list",
                   "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}");
    CHECK_INT(path_int(r, "error.code"), -32602);
    CHECK_CONTAINS(path_str(r, "error.message"), "clientCapabilities");
    json_object_put(r);
    r = fx_request(&f, "3", "tools/list",
                   "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2025-11-25\","
                   "\"io.modelcontextprotocol/clientCapabilities\":{}}}");
    CHECK_INT(path_int(r, "error.code"), -32022);
    json_object_put(r);
    r = fx_request(&f, "4", "tools/list",
                   "{" META(",\"io.modelcontextprotocol/logLevel\":\"loud\"") "}");
    CHECK_INT(path_int(r, "error.code"), -32602);
    json_object_put(r);
    /* what the revision removed, and initialize */
    r = modern(&f, "5", "ping", NULL);
    CHECK_INT(path_int(r, "error.code"), -32601);
    json_object_put(r);
    r = modern(&f, "6", "logging/setLevel", "\"level\":\"debug\"");
    CHECK_INT(path_int(r, "error.code"), -32601);
    json_object_put(r);
    r = fx_request(&f, "7", "initialize",
                   "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}");
    CHECK_INT(path_int(r, "error.code"), -32600);
    CHECK_CONTAINS(path_str(r, "error.message"), "2026-07-28 (no initialize)");
    json_object_put(r);

    /* the lists: resultType and the caching hints */
    r = modern(&f, "8", "tools/list", NULL);
    CHECK_CONTAINS(names_of(r, "tools", "name"), "mcp_a_echo");
    CHECK_STR(path_str(r, "result.resultType"), "complete");
    CHECK_INT(path_int(r, "result.ttlMs"), 60000);
    CHECK_STR(path_str(r, "result.cacheScope"), "private");
    json_object_put(r);
    /* a result from a legacy server gets resultType; its own members pass */
    r = modern(&f, "9", "tools/call", "\"name\":\"mcp_a_echo\",\"arguments\":{\"k\":1}");
    CHECK_STR(path_str(r, "result.resultType"), "complete");
    CHECK_STR(path_str(r, "result.content.0.text"), "a echo {\"k\":1}");
    CHECK_INT(path_int(r, "result._meta.m"), 1);
    json_object_put(r);
    /* the server was offered the capabilities of the first request's _meta */
    r = modern(&f, "10", "tools/call", "\"name\":\"mcp_a_caps\"");
    CHECK_STR(path_str(r, "result.content.0.text"), "{\"elicitation\":{}}");
    json_object_put(r);
    /* resources/read: the hints too; a resource nobody has: -32602 */
    r = modern(&f, "11", "resources/read", "\"uri\":\"mem://a/readme\"");
    CHECK_STR(path_str(r, "result.contents.0.text"), "a mem://a/readme");
    CHECK_INT(path_int(r, "result.ttlMs"), 0);
    CHECK_STR(path_str(r, "result.cacheScope"), "private");
    json_object_put(r);
    r = modern(&f, "12", "resources/read", "\"uri\":\"mem://nobody/x\"");
    CHECK_INT(path_int(r, "error.code"), -32602);
    json_object_put(r);
    /* results the bridge makes itself: the proxy tool's */
    r = modern(&f, "13", "tools/call", "\"name\":\"mcp\",\"arguments\":{}");
    CHECK_STR(path_str(r, "result.resultType"), "complete");
    json_object_put(r);
    fx_stop(&f);
}

static void test_logs(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    struct json_object *r = modern(&f, "1", "tools/list", NULL);
    json_object_put(r);
    /* no logLevel: the server's log of the call does not reach the agent */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{" META(
                    "") ",\"name\":\"mcp_a_wait\"}}");
    fx_idle(&f, 300);
    r = fx_wait(&f, match_method, "notifications/message", "waiting 2", 0);
    CHECK(r == NULL);
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":2}}");
    /* with it, at or above the level asked for */
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{" META(
                ",\"io.modelcontextprotocol/logLevel\":\"error\"") ",\"name\":\"mcp_a_wait\"}}");
    fx_idle(&f, 300);
    r = fx_wait(&f, match_method, "notifications/message", "waiting 3", 0);
    CHECK(r == NULL); /* an info message */
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":3}}");
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{" META(
                ",\"io.modelcontextprotocol/logLevel\":\"debug\"") ",\"name\":\"mcp_a_wait\"}}");
    r = fx_wait(&f, match_method, "notifications/message", "waiting", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":4}}");
    fx_stop(&f);
}

static void test_listen(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "," SERVER("b", "") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    struct json_object *r = modern(&f, "1", "tools/list", NULL);
    CHECK_CONTAINS(names_of(r, "tools", "name"), "mcp_b_echo");
    json_object_put(r);

    /* a listen for tools and one resource of b (and one nobody serves) */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"L1\",\"method\":\"subscriptions/listen\","
                "\"params\":{" META(
                    "") ",\"notifications\":{\"toolsListChanged\":true,"
                        "\"resourceSubscriptions\":[\"mem://b/readme\",\"mem://nobody/x\"]}}}");
    r = fx_wait(&f, match_method, "notifications/subscriptions/acknowledged", NULL, WAIT_MS);
    CHECK(r && has_sub_id(r, "\"L1\""));
    CHECK(path(r, "params.notifications.toolsListChanged") != NULL);
    CHECK(path(r, "params.notifications.promptsListChanged") == NULL);
    CHECK_STR(path_str(r, "params.notifications.resourceSubscriptions.0"), "mem://b/readme");
    CHECK(path(r, "params.notifications.resourceSubscriptions.1") == NULL);
    json_object_put(r);
    /* a second one, for prompts only */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"L2\",\"method\":\"subscriptions/listen\","
                "\"params\":{" META("") ",\"notifications\":{\"promptsListChanged\":true}}}");
    r = fx_wait(&f, match_method, "notifications/subscriptions/acknowledged", NULL, WAIT_MS);
    CHECK(r && has_sub_id(r, "\"L2\""));
    json_object_put(r);

    /* the subscription is made on b: its updates come on L1, tagged */
    int64_t t0 = now_ms();
    for (;;) {
        r = modern(&f, "2", "tools/call", "\"name\":\"mcp_b_touch\"");
        bool done = path_str(r, "result.content.0.text") &&
                    strcmp(path_str(r, "result.content.0.text"), "touched 1") == 0;
        json_object_put(r);
        if (done || now_ms() - t0 > WAIT_MS)
            break;
        fx_idle(&f, 50);
    }
    r = fx_wait(&f, match_method, "notifications/resources/updated", "mem://b/readme", WAIT_MS);
    CHECK(r && has_sub_id(r, "\"L1\""));
    CHECK(r && path_int(r, "params._meta.pid") == INT64_MIN); /* the tag replaces its _meta */
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/resources/updated", NULL, 200);
    CHECK(r == NULL); /* once: L2 does not want it */
    json_object_put(r);

    /* a tool list change goes to L1 only, tagged; never without a listen */
    r = modern(&f, "3", "tools/call", "\"name\":\"mcp_a_add_tool\"");
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS);
    CHECK(r && has_sub_id(r, "\"L1\""));
    json_object_put(r);
    fx_idle(&f, 200);
    r = fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, 0);
    CHECK(r == NULL);
    json_object_put(r);

    /* the agent cancels L1: no answer, no more updates, and b is unsubscribed */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":\"L1\"}}");
    t0 = now_ms();
    for (;;) {
        r = modern(&f, "4", "tools/call", "\"name\":\"mcp_b_touch\"");
        bool done = path_str(r, "result.content.0.text") &&
                    strcmp(path_str(r, "result.content.0.text"), "touched 0") == 0;
        json_object_put(r);
        if (done || now_ms() - t0 > WAIT_MS)
            break;
        fx_idle(&f, 50);
    }
    CHECK(now_ms() - t0 < WAIT_MS);
    r = fx_wait(&f, match_id, "\"L1\"", NULL, 0);
    CHECK(r == NULL);
    json_object_put(r);
    /* a bad filter */
    r = modern(&f, "5", "subscriptions/listen", NULL);
    CHECK_INT(path_int(r, "error.code"), -32602);
    json_object_put(r);

    /* at shutdown L2 is answered with its closing result */
    downstream_shutdown(f.d);
    r = fx_wait(&f, match_id, "\"L2\"", NULL, WAIT_MS);
    CHECK_STR(path_str(r, "result.resultType"), "complete");
    struct json_object *sid =
        json_object_object_get(path(r, "result._meta"), "io.modelcontextprotocol/subscriptionId");
    CHECK_STR(jstr(sid), "\"L2\"");
    json_object_put(r);
    fx_stop(&f);
}

static void test_single_discover(void)
{
    struct fx f;
    CHECK_INT(fx_start_eras(&f, "{\"mcpServers\":{" SERVER("solo", ",\"instructions=use me\"") "}}",
                            DOWNSTREAM_SINGLE, "solo", 0, true),
              0);
    /* --bridge-eras: the first request: the server's InitializeResult as a DiscoverResult */
    struct json_object *r = modern(&f, "1", "server/discover", NULL);
    CHECK_STR(path_str(r, "result.resultType"), "complete");
    CHECK_STR(path_str(r, "result.supportedVersions.0"), "2026-07-28");
    CHECK(path(r, "result.capabilities.tools") != NULL);
    struct json_object *info =
        json_object_object_get(path(r, "result._meta"), "io.modelcontextprotocol/serverInfo");
    CHECK_STR(json_get_string(info, "name"), "solo");
    CHECK_STR(json_get_string(info, "version"), "1.2.3");
    CHECK_STR(path_str(r, "result.instructions"), "use me");
    json_object_put(r);
    r = modern(&f, "2", "tools/list", NULL);
    CHECK_CONTAINS(names_of(r, "tools", "name"), "echo");
    CHECK_STR(path_str(r, "result.resultType"), "complete");
    CHECK_INT(path_int(r, "result.ttlMs"), 60000);
    json_object_put(r);
    r = modern(&f, "3", "ping", NULL);
    CHECK_INT(path_int(r, "error.code"), -32601);
    json_object_put(r);
    /* listen: the server's own list changes */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"subscriptions/listen\","
                "\"params\":{" META("") ",\"notifications\":{\"toolsListChanged\":true}}}");
    r = fx_wait(&f, match_method, "notifications/subscriptions/acknowledged", NULL, WAIT_MS);
    CHECK(r && has_sub_id(r, "9"));
    json_object_put(r);
    r = modern(&f, "4", "tools/call", "\"name\":\"add_tool\"");
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS);
    CHECK(r && has_sub_id(r, "9"));
    json_object_put(r);
    fx_stop(&f);

    /* a server that cannot start: discover says why, and may be asked again */
    CHECK_INT(fx_start_eras(&f,
                            "{\"mcpServers\":{\"gone\":{\"command\":\"credkit-no-such-command\"}}}",
                            DOWNSTREAM_SINGLE, "gone", 500, true),
              0);
    int64_t t0 = now_ms();
    r = modern(&f, "1", "server/discover", NULL);
    CHECK_INT(path_int(r, "error.code"), -32000);
    CHECK_CONTAINS(path_str(r, "error.message"), "credkit-no-such-command");
    CHECK(now_ms() - t0 < 5000);
    json_object_put(r);
    r = modern(&f, "2", "server/discover", NULL);
    CHECK_INT(path_int(r, "error.code"), -32000);
    json_object_put(r);
    /* the era is not locked by a refused opening: the initialize the agent falls back to gets
     * the same reason */
    t0 = now_ms();
    r = fx_request(&f, "3", "initialize",
                   "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}");
    CHECK_INT(path_int(r, "error.code"), -32000);
    CHECK_CONTAINS(path_str(r, "error.message"), "credkit-no-such-command");
    CHECK(now_ms() - t0 < 5000);
    json_object_put(r);
    fx_stop(&f);

    /* a legacy agent in single mode is as before */
    CHECK_INT(
        fx_start(&f, "{\"mcpServers\":{" SERVER("solo", "") "}}", DOWNSTREAM_SINGLE, "solo", 0), 0);
    r = fx_request(&f, "1", "initialize",
                   "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}");
    CHECK_STR(path_str(r, "result.protocolVersion"), "2025-06-18");
    CHECK(path(r, "result.resultType") == NULL);
    json_object_put(r);
    r = fx_request(&f, "2", "tools/list", NULL);
    CHECK(path(r, "result.resultType") == NULL);
    CHECK(path(r, "result.ttlMs") == NULL);
    json_object_put(r);
    r = fx_request(&f, "3", "server/discover", NULL);
    CHECK_INT(path_int(r, "error.code"), -32601);
    json_object_put(r);
    fx_stop(&f);
}

DOWNSTREAM_TESTS_MAIN(NULL, test_discover_and_errors, test_logs, test_listen, test_single_discover)
