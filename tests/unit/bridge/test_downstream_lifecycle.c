/* test_downstream_lifecycle.c - the downstream over time, against scripted MCP servers: lists
 * that change (list_changed, coalesced, a flood of them), slow and late servers and settling,
 * reloads, the end of the agent's input, shutdown, and an agent that does not read its answers.
 * The fixture is downstream_fixture.h. */
#include "downstream_fixture.h"

static void test_list_changed(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    CHECK(!strstr(names_of(r, "tools", "name"), "mcp_a_extra"));
    json_object_put(r);

    r = fx_request(&f, "2", "tools/call", "{\"name\":\"mcp_a_add_tool\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "added");
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    r = fx_request(&f, "3", "tools/list", NULL);
    CHECK_CONTAINS(names_of(r, "tools", "name"), "mcp_a_extra");
    json_object_put(r);
    r = fx_request(&f, "4", "tools/call", "{\"name\":\"mcp_a_extra\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "a extra null");
    json_object_put(r);
    fx_stop(&f);
}

static void test_slow_server(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{" SERVER("fast", ",\"tools=echo\"") "," SERVER(
                           "slow", ",\"tools=echo\",\"init_delay=20000\"") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 700),
              0);
    initialize(&f, NULL);
    int64_t t0 = now_ms();
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    int64_t took = now_ms() - t0;
    CHECK_STR(names_of(r, "tools", "name"), "mcp mcp_fast_echo");
    CHECK(took >= 500); /* it did wait for the slow one ... */
    CHECK(took < 5000); /* ... but not for long */
    json_object_put(r);
    fx_stop(&f);
}

/* A server that says list_changed 50 times in a row is listed at most twice more (one listing
 * in flight, one after it), and the agent hears nothing: its list did not change. */
static void test_list_changed_flood(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", ",\"tools=flood,lists\"") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"), "mcp mcp_a_flood mcp_a_lists");
    json_object_put(r);
    r = call_tool(&f, "2", "mcp_a_flood");
    CHECK_STR(path_str(r, "result.content.0.text"), "flooded");
    json_object_put(r);
    fx_idle(&f, 500);
    r = call_tool(&f, "3", "mcp_a_lists");
    const char *n = path_str(r, "result.content.0.text");
    CHECK(n && atoi(n) >= 2 && atoi(n) <= 3);
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, 200);
    CHECK(r == NULL);
    json_object_put(r);
    fx_stop(&f);
}

/* A reload that removes the only server not connected yet answers the first list at once. */
static void test_reload_settles(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{" SERVER("fast", ",\"tools=echo\"") "," SERVER(
                           "slow", ",\"tools=echo\",\"init_delay=20000\"") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 8000),
              0);
    initialize(&f, NULL);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    fx_idle(&f, 300); /* fast is listed by now; slow holds the answer */
    struct json_object *r = fx_wait(&f, match_id, "1", NULL, 0);
    CHECK(r == NULL);
    json_object_put(r);
    struct mcp_config *c = config_from("{\"mcpServers\":{" SERVER("fast", ",\"tools=echo\"") "}}");
    struct err e = ERR_INIT;
    CHECK_INT(downstream_reload(f.d, c, &e), 0);
    mcp_config_free(c);
    r = fx_wait(&f, match_id, "1", NULL, 2000);
    CHECK_STR(names_of(r, "tools", "name"), "mcp mcp_fast_echo");
    json_object_put(r);
    fx_stop(&f);
}

/* A server that comes after the first lists (here: added by a reload) changes resources and
 * templates at once: the agent is told once. */
static void test_late_server_one_notification(void)
{
    struct fx f;
    CHECK_INT(
        fx_start(&f, "{\"mcpServers\":{" SERVER("fast", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
        0);
    initialize(&f, NULL);
    static const char *const lists[] = {"tools/list", "prompts/list", "resources/list",
                                        "resources/templates/list"};
    for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
        char id[8];
        snprintf(id, sizeof(id), "%zu", i + 1);
        struct json_object *r = fx_request(&f, id, lists[i], NULL);
        CHECK(r && path(r, "result"));
        json_object_put(r);
    }
    struct mcp_config *c =
        config_from("{\"mcpServers\":{" SERVER("fast", "") "," SERVER("late", "") "}}");
    struct err e = ERR_INIT;
    CHECK_INT(downstream_reload(f.d, c, &e), 0);
    mcp_config_free(c);
    struct json_object *r =
        fx_wait(&f, match_method, "notifications/resources/list_changed", NULL, WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    fx_idle(&f, 300);
    r = fx_wait(&f, match_method, "notifications/resources/list_changed", NULL, 0);
    CHECK(r == NULL); /* one, not one per list */
    json_object_put(r);
    r = fx_request(&f, "9", "resources/templates/list", NULL);
    CHECK_STR(names_of(r, "resourceTemplates", "uriTemplate"),
              "mem://fast/items/{id} mem://late/items/{id}");
    json_object_put(r);
    fx_stop(&f);
}

static void test_eof_reaps(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "," SERVER("b", "") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));
    pid_t pids[2] = {0, 0};
    const char *tools[2] = {"{\"name\":\"mcp_a_pid\"}", "{\"name\":\"mcp_b_pid\"}"};
    for (int i = 0; i < 2; i++) {
        char id[8];
        snprintf(id, sizeof(id), "%d", 10 + i);
        struct json_object *r = fx_request(&f, id, "tools/call", tools[i]);
        const char *t = path_str(r, "result.content.0.text");
        pids[i] = t ? (pid_t)atoi(t) : 0;
        CHECK(pids[i] > 0);
        json_object_put(r);
    }
    /* a call in flight is answered before the bridge ends */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"w\",\"method\":\"tools/call\",\"params\":{"
                "\"name\":\"mcp_a_wait\"}}");
    struct json_object *w = fx_wait(&f, match_method, "notifications/message", "waiting", WAIT_MS);
    CHECK(w != NULL);
    json_object_put(w);

    int64_t t0 = now_ms();
    CHECK_INT(shutdown(f.sv[1], SHUT_WR), 0);
    while (!f.done && now_ms() - t0 < DOWNSTREAM_SHUTDOWN_MS + 2000)
        fx_idle(&f, 50);
    CHECK(f.done);
    CHECK_INT(f.done_status, 0);
    for (int i = 0; i < 2; i++)
        CHECK(pids[i] > 0 && kill(pids[i], 0) < 0 && errno == ESRCH);
    struct json_object *r = fx_wait(&f, match_id, "\"w\"", NULL, 1000);
    CHECK(r && json_object_get_boolean(path(r, "result.isError")));
    json_object_put(r);
    fx_stop(&f);
}

static void test_shutdown_before_initialize(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    struct json_object *r = fx_request(&f, "1", "ping", NULL);
    CHECK(r && path(r, "result"));
    json_object_put(r);
    downstream_shutdown(f.d);
    downstream_shutdown(f.d); /* idempotent */
    int64_t t0 = now_ms();
    while (!f.done && now_ms() - t0 < 3000)
        fx_idle(&f, 20);
    CHECK(f.done);
    CHECK_INT(f.done_status, 0);
    fx_stop(&f);
}

static void test_reload(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{" SERVER("a", ",\"tools=echo\"") "," SERVER(
                           "b", ",\"tools=echo,pid\"") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"), "mcp mcp_a_echo mcp_b_echo mcp_b_pid");
    json_object_put(r);
    r = fx_request(&f, "2", "tools/call", "{\"name\":\"mcp_b_pid\"}");
    char pid_before[32];
    snprintf(pid_before, sizeof(pid_before), "%s",
             path_str(r, "result.content.0.text") ? path_str(r, "result.content.0.text") : "?");
    json_object_put(r);

    /* c is added, a removed, b left alone */
    struct mcp_config *c = config_from("{\"mcpServers\":{" SERVER(
        "b", ",\"tools=echo,pid\"") "," SERVER("c", ",\"tools=echo\"") "}}");
    struct err e = ERR_INIT;
    CHECK_INT(downstream_reload(f.d, c, &e), 0);
    mcp_config_free(c);
    r = fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    /* the list changes twice (a goes at once, c comes when it is connected) */
    int64_t deadline = now_ms() + WAIT_MS;
    bool ok = false;
    while (!ok && now_ms() < deadline) {
        r = fx_request(&f, "3", "tools/list", NULL);
        ok = strcmp(names_of(r, "tools", "name"), "mcp mcp_b_echo mcp_b_pid mcp_c_echo") == 0;
        json_object_put(r);
        if (!ok)
            json_object_put(
                fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS));
    }
    CHECK(ok);
    r = fx_request(&f, "4", "tools/call", "{\"name\":\"mcp_b_pid\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), pid_before);
    json_object_put(r);
    r = fx_request(&f, "5", "tools/call", "{\"name\":\"mcp_a_echo\"}");
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "unknown tool 'mcp_a_echo'");
    json_object_put(r);
    r = fx_request(&f, "6", "tools/call", "{\"name\":\"mcp_c_echo\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "c echo null");
    json_object_put(r);

    /* a changed entry is replaced; the new server gets the agent's subscriptions */
    r = fx_request(&f, "70", "resources/subscribe", "{\"uri\":\"mem://b/readme\"}");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    struct json_object *m =
        fx_wait(&f, match_method, "notifications/message", "subscribed mem://b/readme", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    c = config_from("{\"mcpServers\":{" SERVER("b", ",\"tools=echo,pid,more\"") "}}");
    CHECK_INT(downstream_reload(f.d, c, &e), 0);
    mcp_config_free(c);
    deadline = now_ms() + WAIT_MS;
    ok = false;
    while (!ok && now_ms() < deadline) {
        json_object_put(
            fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS));
        r = fx_request(&f, "7", "tools/list", NULL);
        ok = strcmp(names_of(r, "tools", "name"), "mcp mcp_b_echo mcp_b_pid mcp_b_more") == 0;
        json_object_put(r);
    }
    CHECK(ok);
    r = fx_request(&f, "8", "tools/call", "{\"name\":\"mcp_b_pid\"}");
    CHECK(path_str(r, "result.content.0.text") &&
          strcmp(path_str(r, "result.content.0.text"), pid_before) != 0);
    json_object_put(r);
    m = fx_wait(&f, match_method, "notifications/message", "subscribed mem://b/readme", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    fx_stop(&f);
}

/* Flow control: an agent that sends calls without reading its answers is no longer read once
 * what is queued for it passes DOWNSTREAM_AGENT_HIGH_WATER (its requests wait in the socket,
 * and the server sees no more of them); when it reads, every call is answered, none dropped.
 * The agent sends one call at a time, the next once the server has it (a burst would be read
 * whole before the first answer came back), and takes a call the server has not seen within
 * SLOW_AGENT_STALL_MS as the bridge no longer reading. */
#define SLOW_AGENT_CALLS    40
#define SLOW_AGENT_STALL_MS 3000 /* generous: the machine may be busy with other tests */

static size_t calls_seen(const char *count)
{
    struct stat st;
    return stat(count, &st) == 0 ? (size_t)st.st_size : 0;
}

static void send_big_call(struct fx *f, size_t i)
{
    fx_send(f,
            "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"tools/call\",\"params\":{"
            "\"name\":\"mcp_a_big\"}}",
            100 + i);
}

static void test_slow_agent(void)
{
    const char *count = tmp_path("big-calls");
    char config[8192];
    (void)unlink(count);
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"a\":{\"command\":\"@SELF@\",\"args\":[\"--server\",\"a\","
             "\"tools=big\",\"count=%s\"]}}}",
             count);
    struct fx f;
    CHECK_INT(fx_start(&f, config, DOWNSTREAM_AGGREGATE, NULL, 0), 0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));

    framing_set_reading(f.fr, false); /* the agent stops reading */
    size_t sent = 0;
    while (sent < SLOW_AGENT_CALLS) {
        send_big_call(&f, sent++);
        int64_t stall_end = now_ms() + SLOW_AGENT_STALL_MS;
        while (calls_seen(count) < sent && now_ms() < stall_end)
            fx_idle(&f, 5);
        if (calls_seen(count) < sent)
            break;
    }
    size_t seen = calls_seen(count);
    /* the bridge stopped reading, not before the mark and soon after it */
    CHECK(seen < sent);
    CHECK(seen >= DOWNSTREAM_AGENT_HIGH_WATER / BIG_ANSWER);
    CHECK(seen <= DOWNSTREAM_AGENT_HIGH_WATER / BIG_ANSWER + 8);

    framing_set_reading(f.fr, true); /* the agent reads, and sends the rest */
    while (sent < SLOW_AGENT_CALLS)
        send_big_call(&f, sent++);
    size_t answered = 0;
    int64_t deadline = now_ms() + WAIT_MS; /* for all: a bridge that stays stopped fails fast */
    for (size_t i = 0; i < SLOW_AGENT_CALLS; i++) {
        char id[32];
        snprintf(id, sizeof(id), "%zu", 100 + i);
        struct json_object *r = fx_wait(&f, match_id, id, NULL, (int)(deadline - now_ms()));
        const char *t = path_str(r, "result.content.0.text");
        if (t && strlen(t) == BIG_ANSWER)
            answered++;
        else
            fprintf(stderr, "no answer of %d bytes to call %s\n", BIG_ANSWER, id);
        json_object_put(r);
    }
    CHECK_INT(answered, SLOW_AGENT_CALLS);
    CHECK_INT(calls_seen(count), SLOW_AGENT_CALLS);
    CHECK(!file_contains(f.log_path, "dropped"));
    fx_stop(&f);
}

DOWNSTREAM_TESTS_MAIN(NULL, test_list_changed, test_slow_server, test_list_changed_flood,
                      test_reload_settles, test_late_server_one_notification, test_eof_reaps,
                      test_shutdown_before_initialize, test_reload, test_slow_agent)
