/* test_mrtr_downstream.c - a legacy server's request during a modern agent's call
 * (downstream_mrtr.c): the call answered with an InputRequiredResult, the agent's retry with
 * inputResponses and the bridge's requestState resuming the server's request, the final
 * result answering the retry; a state used once, forged, tampered with or expired refused with
 * -32602; the server lost while the agent was away: the retry gets the failure; replicas
 * sharing a state key: another's state told apart from a forged one. The servers are the
 * fixture's legacy ones (downstream_fixture.h). */
#include "downstream_fixture.h"

#define META                                                                                       \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{}},"                         \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"t\",\"version\":\"1\"}"                    \
    "}"

#define INVALID "requestState is invalid or expired: send the request again without it"
#define ELSEWHERE                                                                                  \
    "requestState names an input round that another replica of this bridge holds: send the "       \
    "request again without it"

static struct json_object *modern(struct fx *f, const char *id, const char *method,
                                  const char *params)
{
    char p[8192];
    snprintf(p, sizeof(p), "{" META "%s%s}", params && *params ? "," : "", params ? params : "");
    return fx_request(f, id, method, p);
}

/* single mode bridges the eras only when asked to (mcp-bridge connect --bridge-eras) */
static void start(struct fx *f, enum downstream_mode mode)
{
    CHECK_INT(fx_start_eras(f, "{\"mcpServers\":{" SERVER("a", "") "}}", mode,
                            mode == DOWNSTREAM_SINGLE ? "a" : NULL, 0, mode == DOWNSTREAM_SINGLE),
              0);
    json_object_put(modern(f, "\"d\"", "server/discover", NULL));
    json_object_put(modern(f, "\"l\"", "tools/list", NULL));
}

/* The InputRequiredResult of the elicit tool; its requestState copied to state. */
static void ask(struct fx *f, const char *id, const char *tool, char state[1024])
{
    char p[256];
    snprintf(p, sizeof(p), "\"name\":\"%s\"", tool);
    struct json_object *r = modern(f, id, "tools/call", p);
    CHECK_STR(path_str(r, "result.resultType"), "input_required");
    CHECK_STR(path_str(r, "result.inputRequests.input1.method"), "elicitation/create");
    CHECK_STR(path_str(r, "result.inputRequests.input1.params.message"), "your name?");
    CHECK_STR(path_str(r, "result.inputRequests.input1.params.requestedSchema.required.0"), "name");
    const char *s = path_str(r, "result.requestState");
    CHECK(s && strncmp(s, "mcpb1.", 6) == 0);
    snprintf(state, 1024, "%s", s ? s : "");
    json_object_put(r);
}

static struct json_object *retry(struct fx *f, const char *id, const char *tool, const char *state)
{
    char p[2048];
    snprintf(p, sizeof(p),
             "\"name\":\"%s\",\"inputResponses\":{\"input1\":{\"action\":\"accept\","
             "\"content\":{\"name\":\"Ada\"}}},\"requestState\":\"%s\"",
             tool, state);
    return modern(f, id, "tools/call", p);
}

static void round_trip_in(enum downstream_mode mode)
{
    struct fx f;
    start(&f, mode);
    const char *tool = mode == DOWNSTREAM_SINGLE ? "elicit" : "mcp_a_elicit";
    char state[1024];
    ask(&f, "\"c1\"", tool, state);
    struct json_object *r = retry(&f, "\"c2\"", tool, state);
    CHECK_STR(path_str(r, "result.resultType"), "complete");
    CHECK_STR(path_str(r, "result.content.0.text"), "elicited \"el-1\" accept {\"name\":\"Ada\"}");
    json_object_put(r);
    /* used: the record is gone */
    r = retry(&f, "\"c3\"", tool, state);
    CHECK_INT(path_int(r, "error.code"), -32602);
    CHECK_STR(path_str(r, "error.message"), INVALID);
    json_object_put(r);
    /* the agent's ids are its own again: c1 may be used anew */
    r = modern(&f, "\"c1\"", "tools/call",
               mode == DOWNSTREAM_SINGLE ? "\"name\":\"echo\",\"arguments\":{}"
                                         : "\"name\":\"mcp_a_echo\",\"arguments\":{}");
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "echo");
    json_object_put(r);
    fx_stop(&f);
}

/* elicitation across eras, aggregate and single mode */
static void test_round_trip(void)
{
    round_trip_in(DOWNSTREAM_AGGREGATE);
    round_trip_in(DOWNSTREAM_SINGLE);
}

/* states the bridge did not make, or not like this, are refused; the real one still works */
static void test_forged_and_tampered(void)
{
    struct fx f;
    start(&f, DOWNSTREAM_AGGREGATE);
    char state[1024], bad[1024];
    ask(&f, "1", "mcp_a_elicit", state);

    struct json_object *r = retry(&f, "2", "mcp_a_elicit", "mcpb1.MS4yLmE.AAAA");
    CHECK_INT(path_int(r, "error.code"), -32602);
    CHECK_STR(path_str(r, "error.message"), INVALID);
    json_object_put(r);
    r = retry(&f, "3", "mcp_a_elicit", "mcpb1.");
    CHECK_INT(path_int(r, "error.code"), -32602);
    json_object_put(r);
    /* one character of the payload changed */
    snprintf(bad, sizeof(bad), "%s", state);
    bad[7] = bad[7] == 'A' ? 'B' : 'A';
    r = retry(&f, "4", "mcp_a_elicit", bad);
    CHECK_INT(path_int(r, "error.code"), -32602);
    json_object_put(r);
    /* one of the MAC */
    snprintf(bad, sizeof(bad), "%s", state);
    size_t n = strlen(bad);
    bad[n - 1] = bad[n - 1] == 'A' ? 'B' : 'A';
    r = retry(&f, "5", "mcp_a_elicit", bad);
    CHECK_INT(path_int(r, "error.code"), -32602);
    json_object_put(r);

    r = retry(&f, "6", "mcp_a_elicit", state);
    CHECK_STR(path_str(r, "result.content.0.text"), "elicited \"el-1\" accept {\"name\":\"Ada\"}");
    json_object_put(r);
    fx_stop(&f);
}

/* a state kept past its time: refused, the server's request answered, its call cancelled */
static void test_expiry(void)
{
    setenv("MCP_BRIDGE_TEST_MRTR_KEEP_MS", "300", 1);
    struct fx f;
    start(&f, DOWNSTREAM_AGGREGATE);
    char state[1024];
    ask(&f, "1", "mcp_a_elicit", state);
    fx_idle(&f, 700);
    struct json_object *r = retry(&f, "2", "mcp_a_elicit", state);
    CHECK_INT(path_int(r, "error.code"), -32602);
    CHECK_STR(path_str(r, "error.message"), INVALID);
    json_object_put(r);
    CHECK(file_contains(f.log_path, "did not send tools/call again"));
    /* the server is free again */
    r = modern(&f, "3", "tools/call", "\"name\":\"mcp_a_echo\",\"arguments\":{}");
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "a echo");
    json_object_put(r);
    fx_stop(&f);
    unsetenv("MCP_BRIDGE_TEST_MRTR_KEEP_MS");
}

/* the server dies while the agent is away: its retry gets the failure */
static void test_server_lost(void)
{
    struct fx f;
    start(&f, DOWNSTREAM_AGGREGATE);
    char state[1024];
    ask(&f, "1", "mcp_a_elicit", state);
    struct json_object *r = modern(&f, "2", "tools/call", "\"name\":\"mcp_a_die\"");
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    json_object_put(r);
    r = retry(&f, "3", "mcp_a_elicit", state);
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "connection");
    json_object_put(r);
    fx_stop(&f);
}

/* two replicas with the same --state-key: each verifies the other's states, and a retry that
 * reaches the one not holding its round is told to start over (not that it is forged); the
 * replica's name leads the state in clear; a replica with another key sees a forgery */
static void test_replicas(void)
{
    static const char key[] = "a secret both replicas resolve";
    struct fx r1, r2;
    start(&r1, DOWNSTREAM_AGGREGATE);
    start(&r2, DOWNSTREAM_AGGREGATE);
    CHECK_INT(downstream_set_state_key(r1.d, key, strlen(key)), 0);
    CHECK_INT(downstream_set_state_key(r2.d, key, strlen(key)), 0);
    CHECK_INT(downstream_set_replica(r1.d, "r1"), 0);
    CHECK_INT(downstream_set_replica(r2.d, "r2"), 0);
    CHECK_INT(downstream_set_replica(r2.d, ""), -EINVAL);
    CHECK_INT(downstream_set_replica(r2.d, "r.2"), -EINVAL);
    CHECK_INT(downstream_set_replica(
                  r2.d, "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz01"),
              -EINVAL);
    CHECK_INT(downstream_set_state_key(r2.d, key, 0), -EINVAL);

    char state[1024];
    ask(&r1, "1", "mcp_a_elicit", state);
    CHECK(strncmp(state, "mcpb1.r1.", 9) == 0);
    struct json_object *r = retry(&r2, "2", "mcp_a_elicit", state);
    CHECK_INT(path_int(r, "error.code"), -32602);
    CHECK_STR(path_str(r, "error.message"), ELSEWHERE);
    json_object_put(r);
    /* the holder still has it */
    r = retry(&r1, "3", "mcp_a_elicit", state);
    CHECK_STR(path_str(r, "result.content.0.text"), "elicited \"el-1\" accept {\"name\":\"Ada\"}");
    json_object_put(r);
    /* and the other way round */
    ask(&r2, "4", "mcp_a_elicit", state);
    CHECK(strncmp(state, "mcpb1.r2.", 9) == 0);
    r = retry(&r1, "5", "mcp_a_elicit", state);
    CHECK_STR(path_str(r, "error.message"), ELSEWHERE);
    json_object_put(r);
    /* a replica with another key cannot tell it from a forgery */
    CHECK_INT(downstream_set_state_key(r1.d, "another", 7), 0);
    r = retry(&r1, "6", "mcp_a_elicit", state);
    CHECK_STR(path_str(r, "error.message"), INVALID);
    json_object_put(r);
    r = retry(&r2, "7", "mcp_a_elicit", state);
    CHECK_STR(path_str(r, "result.content.0.text"), "elicited \"el-1\" accept {\"name\":\"Ada\"}");
    json_object_put(r);
    fx_stop(&r2);
    fx_stop(&r1);
}

DOWNSTREAM_TESTS_MAIN(NULL, test_round_trip, test_forged_and_tampered, test_expiry,
                      test_server_lost, test_replicas)
