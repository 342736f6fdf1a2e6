/* test_downstream_single.c - single mode (mcp-bridge connect): one upstream passed through, its
 * own InitializeResult, and an initialize that cannot be answered. The fixture is
 * downstream_fixture.h. */
#include "downstream_fixture.h"

static void test_single(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{" SERVER("other", "") "," SERVER(
                           "solo", ",\"tools=echo,progress,wait\",\"instructions=use me\"") "}}",
                       DOWNSTREAM_SINGLE, "solo", 0),
              0);
    struct json_object *r = fx_request(&f, "\"i\"", "initialize",
                                       "{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{},"
                                       "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}");
    CHECK_STR(path_str(r, "result.serverInfo.name"), "solo");
    CHECK_STR(path_str(r, "result.serverInfo.version"), "1.2.3");
    CHECK_STR(path_str(r, "result.instructions"), "use me");
    CHECK_STR(path_str(r, "result.protocolVersion"), "2025-03-26");
    CHECK(path(r, "result.capabilities.tools") != NULL);
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");

    r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"), "echo progress wait");
    json_object_put(r);
    /* ping too goes to the server */
    r = fx_request(&f, "\"pi\"", "ping", NULL);
    CHECK(r && json_object_is_type(path(r, "result"), json_type_object));
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/message", "pinged", 0);
    CHECK(r != NULL);
    json_object_put(r);
    r = fx_request(&f, "\"x\"", "tools/call", "{\"name\":\"echo\",\"arguments\":{\"k\":\"v\"}}");
    CHECK_STR(path_str(r, "result.content.0.text"), "solo echo {\"k\":\"v\"}");
    json_object_put(r);
    /* unknown methods are the server's to refuse */
    r = fx_request(&f, "2", "foo/bar", NULL);
    CHECK_INT(path_int(r, "error.code"), -32601);
    CHECK_STR(path_str(r, "error.message"), "method not found");
    json_object_put(r);
    r = fx_request(&f, "3", "prompts/list", NULL);
    CHECK_STR(names_of(r, "prompts", "name"), "greet");
    json_object_put(r);
    /* what is passed on as it is goes without a tree of its params (the pass-through): the
     * server reads all of them, and the answers come back to their ids */
    r = fx_request(&f, "\"rr\"", "resources/read", "{\"uri\":\"mem://solo/readme\",\"x\":[1]}");
    CHECK_STR(path_str(r, "result.contents.0.text"), "solo mem://solo/readme");
    json_object_put(r);
    r = fx_request(&f, "31", "completion/complete",
                   "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"greet\"},"
                   "\"argument\":{\"name\":\"a\",\"value\":\"\"}}");
    CHECK_STR(path_str(r, "result.completion.values.0"), "solo:greet");
    json_object_put(r);
    r = fx_request(&f, "32", "prompts/get", "{\"arguments\":{\"name\":\"no\"},\"name\":\"greet\"}");
    CHECK_STR(path_str(r, "result.messages.0.content.text"), "solo greet");
    json_object_put(r);
    r = fx_request(&f, "33", "foo/bar", "{\"a\":1}");
    CHECK_INT(path_int(r, "error.code"), -32601);
    json_object_put(r);
    struct mcp_config *c = config_from("{\"mcpServers\":{" SERVER("solo", "") "}}");
    struct err e = ERR_INIT;
    CHECK_INT(downstream_reload(f.d, c, &e), -EOPNOTSUPP);
    mcp_config_free(c);

    /* progress and cancellation pass through as in aggregate mode */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"progress\",\"_meta\":{\"progressToken\":7}}}");
    r = fx_wait(&f, match_method, "notifications/progress", "\"progressToken\":7", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    r = fx_wait(&f, match_id, "4", NULL, WAIT_MS);
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "token ");
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"wait\"}}");
    r = fx_wait(&f, match_method, "notifications/message", "waiting", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":5}}");
    r = fx_wait(&f, match_method, "notifications/message", "cancelled", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    fx_stop(&f);
}

/* How many times needle is in hay. */
static size_t count_in(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay ? strstr(hay, needle) : NULL; p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The refusals name the server once (an agent may show a single line of them). */
static void test_single_fails(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("solo", ",\"init_delay=20000\"") "}}",
                       DOWNSTREAM_SINGLE, "solo", 500),
              0);
    int64_t t0 = now_ms();
    struct json_object *r = fx_request(&f, "1", "initialize",
                                       "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}");
    CHECK_INT(path_int(r, "error.code"), -32000);
    CHECK_CONTAINS(path_str(r, "error.message"), "'solo'");
    CHECK_CONTAINS(path_str(r, "error.message"), "server 'solo' is not ready after 500 ms");
    CHECK_INT(count_in(path_str(r, "error.message"), "'solo'"), 1);
    CHECK(now_ms() - t0 < 5000);
    json_object_put(r);
    fx_stop(&f);

    CHECK_INT(fx_start(&f, "{\"mcpServers\":{\"gone\":{\"command\":\"credkit-no-such-command\"}}}",
                       DOWNSTREAM_SINGLE, "gone", 0),
              0);
    t0 = now_ms();
    r = fx_request(&f, "1", "initialize",
                   "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}");
    CHECK_INT(path_int(r, "error.code"), -32000);
    CHECK_CONTAINS(path_str(r, "error.message"), "credkit-no-such-command");
    CHECK_CONTAINS(path_str(r, "error.message"), "server 'gone': cannot run");
    CHECK_INT(count_in(path_str(r, "error.message"), "'gone'"), 1);
    CHECK(now_ms() - t0 < 5000);
    json_object_put(r);
    fx_stop(&f);

    /* a name that is not configured */
    CHECK(fx_start(&f, "{\"mcpServers\":{" SERVER("solo", "") "}}", DOWNSTREAM_SINGLE, "nope", 0) <
          0);
    fx_stop(&f);
}

/* _meta of a 2026-07-28 request */
#define MODERN_META                                                                                \
    "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                      \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"roots\":{}}}}"

/* Transparent by default: a legacy server is a legacy server to a 2026-07-28 agent, which
 * falls back to initialize and keeps what the legacy era has. */
static void test_single_transparent(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("solo", ",\"tools=echo\"") "}}",
                       DOWNSTREAM_SINGLE, "solo", 0),
              0);
    struct json_object *r = fx_request(&f, "\"d\"", "server/discover", MODERN_META);
    CHECK_INT(path_int(r, "error.code"), -32601);
    CHECK(path(r, "result") == NULL);
    json_object_put(r);
    /* the initialize that follows is the server's own */
    r = fx_request(&f, "\"i\"", "initialize",
                   "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"roots\":{}},"
                   "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}");
    CHECK_STR(path_str(r, "result.serverInfo.name"), "solo");
    CHECK_STR(path_str(r, "result.protocolVersion"), "2025-11-25");
    CHECK(path(r, "result.capabilities.tools") != NULL);
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    /* the legacy era's methods go to the server */
    r = fx_request(&f, "\"pi\"", "ping", NULL);
    CHECK(r && json_object_is_type(path(r, "result"), json_type_object));
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/message", "pinged", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"), "echo");
    CHECK(path(r, "result.resultType") == NULL);
    CHECK(path(r, "result.ttlMs") == NULL);
    json_object_put(r);
    fx_stop(&f);

    /* another request of the era first: -32022 naming legacy versions only, and the agent may
     * initialize */
    CHECK_INT(
        fx_start(&f, "{\"mcpServers\":{" SERVER("solo", "") "}}", DOWNSTREAM_SINGLE, "solo", 0), 0);
    r = fx_request(&f, "1", "tools/list", MODERN_META);
    CHECK_INT(path_int(r, "error.code"), -32022);
    CHECK_STR(path_str(r, "error.data.supported.0"), "2025-11-25");
    CHECK_STR(path_str(r, "error.data.requested"), "2026-07-28");
    json_object_put(r);
    r = fx_request(&f, "2", "initialize",
                   "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}");
    CHECK_STR(path_str(r, "result.serverInfo.name"), "solo");
    json_object_put(r);
    fx_stop(&f);

    /* an entry that says it is legacy is answered before the server is up */
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{\"solo\":{\"command\":\"@SELF@\",\"args\":[\"--server\","
                       "\"solo\",\"init_delay=1500\"],\"protocolVersion\":\"legacy\"}}}",
                       DOWNSTREAM_SINGLE, "solo", 0),
              0);
    int64_t t0 = now_ms();
    r = fx_request(&f, "\"d\"", "server/discover", MODERN_META);
    CHECK_INT(path_int(r, "error.code"), -32601);
    CHECK(now_ms() - t0 < 1000);
    json_object_put(r);
    r = fx_request(&f, "\"i\"", "initialize",
                   "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}");
    CHECK_STR(path_str(r, "result.serverInfo.name"), "solo");
    json_object_put(r);
    fx_stop(&f);
}

/* A server that cannot be reached: the reason in the answer to the opening, whichever era it
 * is, and again in the initialize the agent falls back to. */
static void test_single_unreachable(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{\"gone\":{\"command\":\"credkit-no-such-command\"}}}",
                       DOWNSTREAM_SINGLE, "gone", 0),
              0);
    int64_t t0 = now_ms();
    struct json_object *r = fx_request(&f, "\"d\"", "server/discover", MODERN_META);
    CHECK_INT(path_int(r, "error.code"), -32000);
    CHECK_CONTAINS(path_str(r, "error.message"), "credkit-no-such-command");
    json_object_put(r);
    r = fx_request(&f, "\"i\"", "initialize",
                   "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}");
    CHECK_INT(path_int(r, "error.code"), -32000);
    CHECK_CONTAINS(path_str(r, "error.message"), "credkit-no-such-command");
    CHECK(now_ms() - t0 < 5000);
    json_object_put(r);
    /* and the agent may open the modern era again */
    r = fx_request(&f, "\"d2\"", "server/discover", MODERN_META);
    CHECK_INT(path_int(r, "error.code"), -32000);
    CHECK_CONTAINS(path_str(r, "error.message"), "credkit-no-such-command");
    json_object_put(r);
    fx_stop(&f);
}

DOWNSTREAM_TESTS_MAIN(NULL, test_single, test_single_fails, test_single_transparent,
                      test_single_unreachable)
