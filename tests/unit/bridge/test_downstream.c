/* test_downstream.c - the MCP server the agent talks to, against scripted MCP servers: aggregate
 * mode's initialize and catalogue, calls, progress and cancellation, server requests (sampling,
 * elicitation, roots), duplicate ids, timeouts, subscriptions across reconnects (both modes).
 * Lists that change, reloads and shutdown are in test_downstream_lifecycle.c, single mode in
 * test_downstream_single.c; the fixture is downstream_fixture.h.
 *
 * "test_downstream --bench [N] [debug]" is a measurement, not a test: N sequential tools/call
 * (default 20000) through the bridge to one scripted server, reporting the CPU time of this
 * process (agent side and bridge; the server is a child) per round trip. */
#include "downstream_fixture.h"

#include <sys/resource.h>

static void test_aggregate_initialize(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "," SERVER("b", "") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 0),
              0);

    /* before initialize: ping only */
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_INT(path_int(r, "error.code"), -32600);
    json_object_put(r);
    r = fx_request(&f, "\"p\"", "ping", NULL);
    CHECK(r && json_object_is_type(path(r, "result"), json_type_object));
    json_object_put(r);

    /* not JSON */
    fx_send(&f, "{this is not json");
    r = fx_wait(&f, match_id, "null", NULL, WAIT_MS);
    CHECK_INT(path_int(r, "error.code"), -32700);
    json_object_put(r);

    r = fx_request(&f, "0", "initialize",
                   "{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{},"
                   "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}");
    CHECK_STR(path_str(r, "result.protocolVersion"), "2025-03-26");
    CHECK_STR(path_str(r, "result.serverInfo.name"), "mcp-bridge");
    CHECK(json_object_get_boolean(path(r, "result.capabilities.tools.listChanged")));
    CHECK(path(r, "result.capabilities.resources.subscribe") != NULL);
    CHECK(path(r, "result.capabilities.logging") != NULL);
    /* nothing cached: the servers are counted, not named, as nothing has connected yet */
    CHECK_CONTAINS(path_str(r, "result.instructions"), "2 servers are connecting now");
    CHECK(!strstr(path_str(r, "result.instructions"), "'a'"));
    json_object_put(r);

    /* a version the bridge does not know: its newest */
    r = fx_request(&f, "9", "initialize", "{\"protocolVersion\":\"1999-01-01\"}");
    CHECK_INT(path_int(r, "error.code"), -32600); /* already initialized */
    json_object_put(r);

    r = fx_request(&f, "2", "no/such/method", NULL);
    CHECK_INT(path_int(r, "error.code"), -32601);
    json_object_put(r);
    r = fx_request(&f, "3", "ping", NULL);
    CHECK(r && path(r, "result"));
    json_object_put(r);
    fx_stop(&f);
}

/* Over 80 lines: one conversation with two servers, each step depending on the last; cut up,
 * the steps would have to pass the fixture and its servers' state around. */
static void test_aggregate_catalogue(void)
{
    struct fx f;
    /* "a"'s b_c and "a_b"'s c both become mcp_a_b_c: "a" comes first by name */
    CHECK_INT(
        fx_start(
            &f,
            "{\"mcpServers\":{" SERVER(
                "a",
                ",\"tools=b_c,echo,x.y,sample\",\"page=1\"") ",\"a_b\":{\"command\":\"@SELF@\","
                                                             "\"args\":[\"--server\",\"a_b\","
                                                             "\"tools=c,echo,hidden\"],"
                                                             "\"excludeTools\":[\"hidden\"]}}}",
            DOWNSTREAM_AGGREGATE, NULL, 0),
        0);
    initialize(&f, NULL);

    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"),
              "mcp mcp_a_b_c mcp_a_echo mcp_a_x_y mcp_a_sample mcp_a_b_c_2 mcp_a_b_echo");
    CHECK_STR(path_str(r, "result.tools.1.description"), "a scripted tool");
    CHECK(path(r, "result.nextCursor") == NULL);
    json_object_put(r);
    CHECK(file_contains(f.log_path, "exposed as 'mcp_a_b_c_2'"));

    /* routed, and the agent's id comes back, string or integer */
    r = fx_request(&f, "\"req-1\"", "tools/call",
                   "{\"name\":\"mcp_a_b_echo\",\"arguments\":{\"x\":1}}");
    CHECK_STR(path_str(r, "result.content.0.text"), "a_b echo {\"x\":1}");
    CHECK_STR(path_str(r, "result.content.1.type"), "image");
    CHECK_STR(path_str(r, "result.structuredContent.server"), "a_b");
    CHECK_INT(path_int(r, "result._meta.m"), 1);
    json_object_put(r);
    r = fx_request(&f, "77", "tools/call", "{\"name\":\"mcp_a_b_c\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "a b_c null");
    json_object_put(r);
    r = fx_request(&f, "78", "tools/call", "{\"name\":\"mcp_a_b_c_2\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "a_b c null");
    json_object_put(r);

    /* unknown and excluded tools: a tool result with isError, as the SDK's McpServer answers
     * them, with the close names */
    r = fx_request(&f, "4", "tools/call", "{\"name\":\"mcp_a_b_hidden\"}");
    CHECK(path(r, "error") == NULL);
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    CHECK_STR(path_str(r, "result.content.0.type"), "text");
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "unknown tool 'mcp_a_b_hidden'");
    json_object_put(r);
    r = fx_request(&f, "40", "tools/call", "{\"name\":\"mcp_a_b_ech\"}");
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "did you mean: mcp_a_b_echo?");
    json_object_put(r);
    r = fx_request(&f, "5", "tools/call", "{}");
    CHECK_INT(path_int(r, "error.code"), -32602);
    json_object_put(r);

    /* sampling, when the agent did not declare it, is refused to the server */
    r = fx_request(&f, "6", "tools/call", "{\"name\":\"mcp_a_sample\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "sampling error -32601");
    json_object_put(r);

    /* prompts, renamed the same way */
    r = fx_request(&f, "7", "prompts/list", NULL);
    CHECK_STR(names_of(r, "prompts", "name"), "mcp_a_greet mcp_a_b_greet");
    json_object_put(r);
    r = fx_request(&f, "8", "prompts/get", "{\"name\":\"mcp_a_b_greet\"}");
    CHECK_STR(path_str(r, "result.messages.0.content.text"), "a_b greet");
    json_object_put(r);

    /* resources: by URI, by template prefix; templates listed from both */
    r = fx_request(&f, "9", "resources/list", NULL);
    CHECK_STR(names_of(r, "resources", "uri"), "mem://a/readme mem://a_b/readme");
    json_object_put(r);
    r = fx_request(&f, "10", "resources/templates/list", NULL);
    CHECK_STR(names_of(r, "resourceTemplates", "uriTemplate"),
              "mem://a/items/{id} mem://a_b/items/{id}");
    json_object_put(r);
    r = fx_request(&f, "11", "resources/read", "{\"uri\":\"mem://a_b/readme\"}");
    CHECK_STR(path_str(r, "result.contents.0.text"), "a_b mem://a_b/readme");
    json_object_put(r);
    r = fx_request(&f, "12", "resources/read", "{\"uri\":\"mem://a_b/items/7\"}");
    CHECK_STR(path_str(r, "result.contents.0.text"), "a_b mem://a_b/items/7");
    json_object_put(r);
    r = fx_request(&f, "13", "resources/read", "{\"uri\":\"mem://zzz/1\"}");
    CHECK_INT(path_int(r, "error.code"), -32002);
    json_object_put(r);

    /* completion by prompt reference, the name mapped back */
    r = fx_request(&f, "14", "completion/complete",
                   "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"mcp_a_greet\"},"
                   "\"argument\":{\"name\":\"x\",\"value\":\"\"}}");
    CHECK_STR(path_str(r, "result.completion.values.0"), "a:greet");
    json_object_put(r);

    /* logging/setLevel: answered by the bridge, fanned out to both */
    r = fx_request(&f, "15", "logging/setLevel", "{\"level\":\"debug\"}");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    for (int i = 0; i < 2; i++) {
        r = fx_wait(&f, match_method, "notifications/message", "level debug", WAIT_MS);
        CHECK(r != NULL);
        json_object_put(r);
    }
    fx_stop(&f);
}

static void test_upstream_dies(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    json_object_put(r);

    r = fx_request(&f, "9", "logging/setLevel", "{\"level\":\"warning\"}");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/message", "level warning", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);

    r = fx_request(&f, "2", "tools/call", "{\"name\":\"mcp_a_die\"}");
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "server 'a'");
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "retried");
    json_object_put(r);

    /* the server is started again and the next call works (it waits for the reconnect) */
    r = fx_request(&f, "3", "tools/call", "{\"name\":\"mcp_a_echo\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "a echo null");
    json_object_put(r);
    /* the new session got the level the agent set */
    r = fx_wait(&f, match_method, "notifications/message", "level warning", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    fx_stop(&f);
}

static void test_progress_and_cancel(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));

    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_progress\",\"_meta\":{\"progressToken\":\"tok-1\"}}}");
    for (int i = 1; i <= 2; i++) {
        struct json_object *p =
            fx_wait(&f, match_method, "notifications/progress", "\"tok-1\"", WAIT_MS);
        CHECK(p != NULL);
        CHECK_INT(path_int(p, "params.progress"), i);
        json_object_put(p);
    }
    struct json_object *r = fx_wait(&f, match_id, "2", NULL, WAIT_MS);
    /* the server saw a token of the upstream's own, not the agent's */
    CHECK(r && !strstr(path_str(r, "result.content.0.text"), "tok-1"));
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "token ");
    json_object_put(r);

    /* cancellation goes upstream with the upstream's id */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"w1\",\"method\":\"tools/call\",\"params\":{"
                "\"name\":\"mcp_a_wait\"}}");
    struct json_object *w = fx_wait(&f, match_method, "notifications/message", "waiting", WAIT_MS);
    CHECK(w != NULL);
    const char *data = path_str(w, "params.data");
    char upid[64] = "";
    if (data)
        snprintf(upid, sizeof(upid), "%s", data + strlen("waiting "));
    CHECK(upid[0] && strcmp(upid, "\"w1\"") != 0);
    json_object_put(w);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":\"w1\",\"reason\":\"user\"}}");
    char want[128];
    snprintf(want, sizeof(want), "cancelled %s user", upid);
    struct json_object *c = fx_wait(&f, match_method, "notifications/message", want, WAIT_MS);
    CHECK(c != NULL);
    json_object_put(c);
    /* and no answer for the cancelled request */
    r = fx_request(&f, "3", "ping", NULL);
    json_object_put(r);
    fx_idle(&f, 100);
    r = fx_wait(&f, match_id, "\"w1\"", NULL, 0);
    CHECK(r == NULL);
    json_object_put(r);

    /* a cancellation for a request already answered is ignored: nothing goes upstream */
    r = call_tool(&f, "20", "mcp_a_echo");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":20}}");
    r = call_tool(&f, "21", "mcp_a_echo"); /* through the server, after the cancellation */
    CHECK(r && path(r, "result"));
    json_object_put(r);
    CHECK((c = fx_wait(&f, match_method, "notifications/message", "cancelled", 0)) == NULL);
    json_object_put(c);
    CHECK((r = fx_wait(&f, match_id, "20", NULL, 0)) == NULL);
    json_object_put(r);

    /* progress with tokens the bridge never gave out is dropped, not passed on raw */
    r = fx_request(&f, "22", "tools/call",
                   "{\"name\":\"mcp_a_stray_progress\",\"_meta\":{\"progressToken\":\"mine\"}}");
    CHECK_STR(path_str(r, "result.content.0.text"), "strayed");
    json_object_put(r);
    CHECK((c = fx_wait(&f, match_method, "notifications/progress", NULL, 0)) == NULL);
    json_object_put(c);

    /* _meta of a request reaches the server as the agent wrote it (the token is mapped) */
    r = fx_request(&f, "23", "tools/call",
                   "{\"name\":\"mcp_a_meta\",\"_meta\":{\"trace\":\"t-1\",\"progressToken\":"
                   "\"p\",\"x\":{\"y\":[1,2]}}}");
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "\"trace\":\"t-1\"");
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "\"x\":{\"y\":[1,2]}");
    json_object_put(r);
    fx_stop(&f);
}

/* Kills the server through its tool, then waits until a new one is READY: its answer to a call
 * that waits for the reconnect. */
static void kill_server(struct fx *f, const char *die, const char *echo)
{
    struct json_object *r = call_tool(f, "\"die\"", die);
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    json_object_put(r);
    r = call_tool(f, "\"after-die\"", echo);
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "echo");
    json_object_put(r);
}

static void subscriptions_in(enum downstream_mode mode)
{
    bool single = mode == DOWNSTREAM_SINGLE;
    const char *touch = single ? "touch" : "mcp_a_touch";
    const char *die = single ? "die" : "mcp_a_die";
    const char *echo = single ? "echo" : "mcp_a_echo";
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", mode, single ? "a" : NULL, 0),
              0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "resources/list", NULL));

    struct json_object *r =
        fx_request(&f, "2", "resources/subscribe", "{\"uri\":\"mem://a/readme\"}");
    CHECK(r && json_object_is_type(path(r, "result"), json_type_object));
    json_object_put(r);
    struct json_object *m =
        fx_wait(&f, match_method, "notifications/message", "subscribed mem://a/readme", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    r = call_tool(&f, "3", touch);
    CHECK_STR(path_str(r, "result.content.0.text"), "touched 1");
    json_object_put(r);
    /* sent before the answer, on the same stream: here by now */
    struct json_object *u =
        fx_wait(&f, match_method, "notifications/resources/updated", "mem://a/readme", 0);
    CHECK(u != NULL);
    int64_t pid1 = path_int(u, "params._meta.pid");
    json_object_put(u);

    /* the server dies; the new one is subscribed again by the bridge itself */
    r = call_tool(&f, "4", die);
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    json_object_put(r);
    m = fx_wait(&f, match_method, "notifications/message", "subscribed mem://a/readme", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    r = call_tool(&f, "5", touch);
    CHECK_STR(path_str(r, "result.content.0.text"), "touched 1");
    json_object_put(r);
    u = fx_wait(&f, match_method, "notifications/resources/updated", "mem://a/readme", 0);
    CHECK(u != NULL);
    CHECK(path_int(u, "params._meta.pid") > 0 && path_int(u, "params._meta.pid") != pid1);
    json_object_put(u);

    /* unsubscribed: not renewed; nor is a subscribe taken back while it was in flight */
    r = fx_request(&f, "6", "resources/unsubscribe", "{\"uri\":\"mem://a/readme\"}");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/subscribe\",\"params\":{"
                "\"uri\":\"mem://a/items/1\"}}");
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/unsubscribe\",\"params\":{"
                "\"uri\":\"mem://a/items/1\"}}");
    for (int i = 7; i <= 8; i++) {
        char id[8];
        snprintf(id, sizeof(id), "%d", i);
        r = fx_wait(&f, match_id, id, NULL, WAIT_MS);
        CHECK(r && path(r, "result"));
        json_object_put(r);
    }
    m = fx_wait(&f, match_method, "notifications/message", "unsubscribed mem://a/items/1", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    /* what was said so far is out of the way */
    while ((m = fx_wait(&f, match_method, "notifications/message", "subscribed", 0)))
        json_object_put(m);
    kill_server(&f, die, echo);
    r = call_tool(&f, "9", touch);
    CHECK_STR(path_str(r, "result.content.0.text"), "touched 0");
    json_object_put(r);
    /* a subscribe sent on READY would have been answered before this call */
    json_object_put(call_tool(&f, "10", echo));
    CHECK((m = fx_wait(&f, match_method, "notifications/message", "subscribed", 0)) == NULL);
    json_object_put(m);
    CHECK((u = fx_wait(&f, match_method, "notifications/resources/updated", NULL, 0)) == NULL);
    json_object_put(u);
    fx_stop(&f);
}

static void test_subscriptions_survive_reconnects(void)
{
    subscriptions_in(DOWNSTREAM_AGGREGATE);
    subscriptions_in(DOWNSTREAM_SINGLE);
}

/* Over 80 lines: one session in which the server asks the agent several things in turn (what
 * it was offered, sampling, elicitation, roots), each step building on the one before. */
static void test_elicitation_and_roots(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    /* sampling that is not an object, and experimental, are not offered upstream */
    initialize(&f,
               "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"elicitation\":{"
               "\"form\":{}},\"roots\":{\"listChanged\":true},\"sampling\":true,"
               "\"experimental\":{\"x\":{}}},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}");
    json_object_put(fx_request(&f, "1", "tools/list", NULL));
    struct json_object *r = call_tool(&f, "2", "mcp_a_caps");
    CHECK_STR(path_str(r, "result.content.0.text"),
              "{\"roots\":{\"listChanged\":true},\"elicitation\":{\"form\":{}}}");
    json_object_put(r);
    r = call_tool(&f, "3", "mcp_a_sample");
    CHECK_STR(path_str(r, "result.content.0.text"), "sampling error -32601");
    json_object_put(r);

    /* elicitation/create in form mode reaches the agent as it is, with the bridge's id */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_elicit\"}}");
    struct json_object *q = fx_wait(&f, match_method, "elicitation/create", NULL, WAIT_MS);
    CHECK(q != NULL);
    char bid[64];
    snprintf(bid, sizeof(bid), "%s", path_str(q, "id") ? path_str(q, "id") : "x");
    CHECK(bid[0] == 'b');
    CHECK_STR(path_str(q, "params.mode"), "form");
    CHECK_STR(path_str(q, "params.message"), "your name?");
    CHECK_STR(path_str(q, "params.requestedSchema.properties.name.type"), "string");
    CHECK_INT(path_int(q, "params.requestedSchema.properties.name.minLength"), 1);
    CHECK_STR(path_str(q, "params.requestedSchema.required.0"), "name");
    /* its progress token is the bridge's too; the agent's progress goes back with the server's */
    CHECK_STR(path_str(q, "params._meta.progressToken"), bid);
    json_object_put(q);
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
            "\"progressToken\":\"%s\",\"progress\":1}}",
            bid);
    struct json_object *m =
        fx_wait(&f, match_method, "notifications/message", "progress 5 1", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"action\":\"accept\",\"content\":{"
            "\"name\":\"Ada\"}}}",
            bid);
    r = fx_wait(&f, match_id, "4", NULL, WAIT_MS);
    CHECK_STR(path_str(r, "result.content.0.text"), "elicited \"el-1\" accept {\"name\":\"Ada\"}");
    json_object_put(r);

    /* roots/list the same way */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_roots\"}}");
    q = fx_wait(&f, match_method, "roots/list", NULL, WAIT_MS);
    CHECK(q != NULL);
    char bid2[64];
    snprintf(bid2, sizeof(bid2), "%s", path_str(q, "id") ? path_str(q, "id") : "x");
    CHECK(bid2[0] == 'b' && strcmp(bid, bid2) != 0);
    json_object_put(q);
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"roots\":[{\"uri\":\"file:///work\","
            "\"name\":\"work\"}]}}",
            bid2);
    r = fx_wait(&f, match_id, "5", NULL, WAIT_MS);
    CHECK_STR(path_str(r, "result.content.0.text"), "roots 901 file:///work");
    json_object_put(r);

    /* a request of the server dies with its connection: the agent is told */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_elicit\"}}");
    q = fx_wait(&f, match_method, "elicitation/create", NULL, WAIT_MS);
    CHECK(q != NULL);
    char bid3[64], want[80];
    snprintf(bid3, sizeof(bid3), "%s", path_str(q, "id") ? path_str(q, "id") : "x");
    snprintf(want, sizeof(want), "\"requestId\":\"%s\"", bid3);
    json_object_put(q);
    r = call_tool(&f, "7", "mcp_a_die");
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    json_object_put(r);
    q = fx_wait(&f, match_method, "notifications/cancelled", want, WAIT_MS);
    CHECK(q != NULL);
    CHECK_CONTAINS(path_str(q, "params.reason"), "connection");
    json_object_put(q);
    r = fx_wait(&f, match_id, "6", NULL, WAIT_MS); /* the call that asked, lost too */
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    json_object_put(r);

    /* an answer for no request, and progress for none: nothing happens */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{}}", bid2);
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
            "\"progressToken\":\"%s\",\"progress\":2}}",
            bid);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"action\":\"cancel\"}}", bid3);
    r = fx_request(&f, "8", "ping", NULL);
    CHECK(r && path(r, "result"));
    json_object_put(r);
    fx_stop(&f);
}

static void test_duplicate_id(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));

    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_wait\"}}");
    struct json_object *m = fx_wait(&f, match_method, "notifications/message", "waiting", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);

    struct json_object *r = call_tool(&f, "7", "mcp_a_wait");
    CHECK_INT(path_int(r, "error.code"), -32600);
    CHECK_CONTAINS(path_str(r, "error.message"), "id already in use");
    json_object_put(r);
    r = fx_request(&f, "7", "ping", NULL);
    CHECK_INT(path_int(r, "error.code"), -32600);
    json_object_put(r);
    /* "7" is another id */
    r = call_tool(&f, "\"7\"", "mcp_a_echo");
    CHECK_STR(path_str(r, "result.content.0.text"), "a echo null");
    json_object_put(r);
    /* the refused call never reached the server: its "waiting" would have come before */
    CHECK((m = fx_wait(&f, match_method, "notifications/message", "waiting", 0)) == NULL);
    json_object_put(m);

    /* once the first is over, the id is free again */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":7}}");
    m = fx_wait(&f, match_method, "notifications/message", "cancelled", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    r = call_tool(&f, "7", "mcp_a_echo");
    CHECK_STR(path_str(r, "result.content.0.text"), "a echo null");
    json_object_put(r);
    fx_stop(&f);
}

static void test_call_timeout(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{\"a\":{\"command\":\"@SELF@\",\"args\":[\"--server\","
                       "\"a\"],\"timeout\":400}}}",
                       DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));
    struct json_object *r = call_tool(&f, "2", "mcp_a_wait");
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    const char *t = path_str(r, "result.content.0.text");
    CHECK_CONTAINS(t, "timed out");
    CHECK_CONTAINS(t, "notifications/cancelled");
    CHECK_CONTAINS(t, "server 'a'");
    CHECK_CONTAINS(t, "retried");
    json_object_put(r);
    /* and the server did get it */
    struct json_object *m =
        fx_wait(&f, match_method, "notifications/message", "timed out", WAIT_MS);
    CHECK_CONTAINS(path_str(m, "params.data"), "cancelled");
    json_object_put(m);
    fx_stop(&f);
}

static void test_sampling_forwarded(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"sampling\":{}},"
                   "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}");

    /* sent before any list, while the server is still connecting: held until it is listed */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_sample\"}}");
    struct json_object *q = fx_wait(&f, match_method, "sampling/createMessage", NULL, WAIT_MS);
    CHECK(q != NULL);
    const char *bid = path_str(q, "id");
    CHECK(bid && bid[0] == 'b');
    char idtext[64];
    snprintf(idtext, sizeof(idtext), "%s", bid ? bid : "x");
    CHECK_INT(path_int(q, "params.maxTokens"), 10);
    json_object_put(q);
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"role\":\"assistant\","
            "\"content\":{\"type\":\"text\",\"text\":\"hi-from-agent\"},\"model\":\"m\"}}",
            idtext);
    struct json_object *r = fx_wait(&f, match_id, "2", NULL, WAIT_MS);
    /* the server got the answer with its own id */
    CHECK_STR(path_str(r, "result.content.0.text"), "sampled \"srv-1\" hi-from-agent");
    json_object_put(r);

    /* the server takes a request back: the agent is told with the bridge's id */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_sample_cancel\"}}");
    q = fx_wait(&f, match_method, "sampling/createMessage", NULL, WAIT_MS);
    CHECK(q != NULL);
    snprintf(idtext, sizeof(idtext), "\"%s\"", path_str(q, "id") ? path_str(q, "id") : "x");
    CHECK(idtext[1] == 'b');
    json_object_put(q);
    q = fx_wait(&f, match_method, "notifications/cancelled", idtext, WAIT_MS);
    CHECK(q != NULL);
    CHECK_STR(jstr(path(q, "params.requestId")), idtext);
    CHECK_STR(path_str(q, "params.reason"), "changed my mind");
    json_object_put(q);
    r = fx_wait(&f, match_id, "3", NULL, WAIT_MS);
    CHECK_STR(path_str(r, "result.content.0.text"), "asked and cancelled");
    json_object_put(r);

    /* roots/list_changed from the agent reaches the server */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}");
    r = fx_wait(&f, match_method, "notifications/message", "roots changed", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    fx_stop(&f);
}

/* ---- measurement (not a test: test_downstream --bench [N] [debug]) ----------------------- */

static double cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
}

/* N sequential tools/call through the bridge to one scripted server: the CPU of this process
 * (the agent side and the bridge; the server is a child) per round trip. */
static int bench_main(int argc, char **argv)
{
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
    bool debug = argc > 3 && strcmp(argv[3], "debug") == 0;
    struct fx f;
    if (n <= 0 || fx_start(&f, "{\"mcpServers\":{" SERVER("a", ",\"tools=echo\"") "}}",
                           DOWNSTREAM_AGGREGATE, NULL, 0) < 0)
        return 2;
    log_set_level(f.log, debug ? LOG_DEBUG : LOG_WARN);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));
    double c0 = cpu_us();
    int64_t t0 = now_ms();
    long ok = 0;
    for (long i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "%ld", 100 + i);
        struct json_object *r =
            fx_request(&f, id, "tools/call", "{\"name\":\"mcp_a_echo\",\"arguments\":{\"i\":1}}");
        ok += path_str(r, "result.content.0.text") != NULL;
        json_object_put(r);
    }
    double cpu = cpu_us() - c0;
    int64_t wall = now_ms() - t0;
    printf("%ld calls (%ld answered), log %s: %.1f us CPU per call, %.1f us wall per call\n", n, ok,
           debug ? "debug" : "warn", cpu / (double)n, (double)wall * 1000.0 / (double)n);
    fx_stop(&f);
    return ok == n ? 0 : 1;
}

DOWNSTREAM_TESTS_MAIN(bench_main, test_aggregate_initialize, test_aggregate_catalogue,
                      test_upstream_dies, test_progress_and_cancel, test_sampling_forwarded,
                      test_elicitation_and_roots, test_duplicate_id, test_call_timeout,
                      test_subscriptions_survive_reconnects)
