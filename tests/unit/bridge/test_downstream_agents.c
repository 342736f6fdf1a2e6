/* test_downstream_agents.c - two agents on one downstream, each through a fake agent transport
 * (agent_transport.h), over one set of servers: each sees its own answers (the same ids in
 * flight at once), the progress of its own calls, the log messages of its own call and the
 * server requests its own call caused; and with persist (a listener's downstream) an agent
 * whose wire ends is forgotten, its call cancelled, while the bridge goes on; in single mode a
 * 2026-07-28 agent's listen hears the server's list changes. */
#include "downstream/agent_transport.h"
#include "downstream_fixture.h"

/* ---- the fake agent ---------------------------------------------------------------------- */

struct fake_agent {
    struct agent_transport base;
    struct loop *loop;
    const char *name;
    struct json_object *q[256]; /* what the downstream sent it, in order */
    size_t nq;
};

static int fake_send(struct agent_transport *t, const char *msg, size_t len)
{
    struct fake_agent *fa = (struct fake_agent *)t;
    struct json_object *o = NULL;
    struct err e = ERR_INIT;
    if (json_parse(msg, len, len, &o, &e) < 0) {
        fprintf(stderr, "%s: not JSON from the bridge: %.*s\n", fa->name, (int)len, msg);
        CHECK(false);
        return 0;
    }
    if (fa->nq < ELEMENTSOF(fa->q))
        fa->q[fa->nq++] = o;
    else
        json_object_put(o);
    loop_quit(fa->loop, 0);
    return 0;
}

static size_t fake_pending(const struct agent_transport *t)
{
    (void)t;
    return 0; /* everything is "written" at once */
}

static void fake_set_reading(struct agent_transport *t, bool on)
{
    (void)t;
    (void)on;
}

static int fake_close_write(struct agent_transport *t, agent_transport_done_fn done, void *userdata)
{
    (void)t;
    (void)done;
    (void)userdata;
    return -EALREADY; /* nothing queued: nothing to wait for */
}

static void fake_free(struct agent_transport *t)
{
    struct fake_agent *fa = (struct fake_agent *)t;
    for (size_t i = 0; i < fa->nq; i++)
        json_object_put(fa->q[i]);
    free(fa);
}

static const struct agent_transport_ops fake_ops = {
    .name = "fake",
    .send = fake_send,
    .pending = fake_pending,
    .set_reading = fake_set_reading,
    .close_write = fake_close_write,
    .free = fake_free,
};

static struct fake_agent *fake_new(struct loop *loop, const char *name)
{
    struct fake_agent *fa = calloc(1, sizeof(*fa));
    CHECK(fa != NULL);
    fa->base.ops = &fake_ops;
    fa->loop = loop;
    fa->name = name;
    return fa;
}

/* The agent sends text, as its transport would have read it. */
static void fake_say(struct fake_agent *fa, const char *fmt, ...) _printf_(2, 3);
static void fake_say(struct fake_agent *fa, const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    CHECK(fa->base.h != NULL);
    fa->base.h->on_message(text, strlen(text), fa->base.userdata);
}

/* Runs the loop until fa received a message that matches (taken out and returned: the caller
 * puts it) or timeout_ms passed (NULL). */
static struct json_object *fake_wait(struct fake_agent *fa, match_fn match, const char *a,
                                     const char *b, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        for (size_t i = 0; i < fa->nq; i++) {
            if (match(fa->q[i], a, b)) {
                struct json_object *m = fa->q[i];
                memmove(&fa->q[i], &fa->q[i + 1], (fa->nq - i - 1) * sizeof(fa->q[0]));
                fa->nq--;
                return m;
            }
        }
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return NULL;
        struct loop_timer *t;
        if (loop_timer_add(fa->loop, left, fx_quit, fa->loop, &t) < 0)
            return NULL;
        int r = loop_run(fa->loop);
        loop_timer_cancel(t);
        if (r < 0)
            return NULL;
    }
}

/* Whether fa has received a message that matches (without waiting). */
static bool fake_has(struct fake_agent *fa, match_fn match, const char *a, const char *b)
{
    for (size_t i = 0; i < fa->nq; i++)
        if (match(fa->q[i], a, b))
            return true;
    return false;
}

static struct json_object *fake_request(struct fake_agent *fa, const char *id, const char *method,
                                        const char *params)
{
    fake_say(fa, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"%s\"%s%s}", id, method,
             params ? ",\"params\":" : "", params ? params : "");
    struct json_object *r = fake_wait(fa, match_id, id, NULL, WAIT_MS);
    if (!r)
        fprintf(stderr, "%s: no answer to %s %s\n", fa->name, method, id);
    return r;
}

static void fake_initialize(struct fake_agent *fa)
{
    struct json_object *r =
        fake_request(fa, "0", "initialize",
                     "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"sampling\":{}},"
                     "\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}");
    CHECK(r && path(r, "result"));
    CHECK_STR(path_str(r, "result.serverInfo.name"), "mcp-bridge");
    json_object_put(r);
    fake_say(fa, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

/* Runs the loop for at most ms. */
static void run_for(struct loop *loop, int ms)
{
    struct loop_timer *t;
    if (loop_timer_add(loop, ms, fx_quit, loop, &t) < 0)
        return;
    (void)loop_run(loop);
    loop_timer_cancel(t);
}

/* ---- the test ---------------------------------------------------------------------------- */

struct bench {
    struct loop *loop;
    struct log *log;
    int log_fd;
    struct downstream *d;
    struct fake_agent *a, *b; /* owned by the downstream once added */
    bool done;
};

static void bench_done(int status, void *userdata)
{
    struct bench *bn = userdata;
    (void)status;
    bn->done = true;
    loop_quit(bn->loop, 0);
}

/* single: the server of single mode (connect, serving 2026-07-28 agents over a legacy server:
 * --bridge-eras), NULL for aggregate mode. */
static void bench_start(struct bench *bn, const char *config, bool persist, const char *single)
{
    memset(bn, 0, sizeof(*bn));
    CHECK(loop_new(&bn->loop) == 0);
    bn->log_fd = getenv("TEST_VERBOSE")
                     ? dup(2)
                     : open(tmp_path("log-agents"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bn->log = log_new("test_downstream_agents", bn->log_fd);
    log_set_level(bn->log, LOG_DEBUG);
    struct mcp_config *c = config_from(config);
    struct downstream_opts o = {
        .loop = bn->loop,
        .log = bn->log,
        .in_fd = -1, /* no agent on stdio: both come through downstream_add_agent() */
        .out_fd = -1,
        .mode = single ? DOWNSTREAM_SINGLE : DOWNSTREAM_AGGREGATE,
        .single_name = single,
        .bridge_eras = single != NULL,
        .config = c,
        .persist = persist,
        .on_done = bench_done,
        .userdata = bn,
    };
    struct err e = ERR_INIT;
    int r = downstream_new(&o, &bn->d, &e);
    mcp_config_free(c);
    if (r < 0)
        fprintf(stderr, "downstream_new: %s\n", err_msg(&e));
    CHECK(r == 0);
    bn->a = fake_new(bn->loop, "agent A");
    bn->b = fake_new(bn->loop, "agent B");
    CHECK(downstream_add_agent(bn->d, &bn->a->base, &e) == 0);
    CHECK(downstream_add_agent(bn->d, &bn->b->base, &e) == 0);
}

static void bench_stop(struct bench *bn)
{
    downstream_free(bn->d); /* the agents with it */
    loop_free(bn->loop);
    log_free(bn->log);
    if (bn->log_fd >= 0)
        close(bn->log_fd);
}

/* Over 80 lines: one conversation of two agents, each step depending on the last. */
static void test_two_agents(void)
{
    struct bench bn;
    bench_start(&bn, "{\"mcpServers\":{" SERVER("a", ",\"tools=progress,sample,wait\"") "}}", false,
                NULL);
    struct fake_agent *A = bn.a, *B = bn.b;

    /* a request before initialize is refused to that agent only */
    struct json_object *r = fake_request(B, "9", "tools/list", NULL);
    CHECK_INT(path_int(r, "error.code"), -32600);
    json_object_put(r);
    fake_initialize(A);
    fake_initialize(B);
    CHECK(A->nq == 0 && B->nq == 0);

    r = fake_request(A, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"), "mcp mcp_a_progress mcp_a_sample mcp_a_wait");
    json_object_put(r);
    r = fake_request(B, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"), "mcp mcp_a_progress mcp_a_sample mcp_a_wait");
    json_object_put(r);

    /* the same id in flight for both: each its own, each answered with its own progress */
    fake_say(A, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_progress\",\"_meta\":{\"progressToken\":\"tok-A\"}}}");
    fake_say(B, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_progress\",\"_meta\":{\"progressToken\":\"tok-B\"}}}");
    struct json_object *ra = fake_wait(A, match_id, "2", NULL, WAIT_MS);
    struct json_object *rb = fake_wait(B, match_id, "2", NULL, WAIT_MS);
    /* (the server sees tokens of the upstream's own) */
    CHECK_CONTAINS(path_str(ra, "result.content.0.text"), "token ");
    CHECK_CONTAINS(path_str(rb, "result.content.0.text"), "token ");
    json_object_put(ra);
    json_object_put(rb);
    for (int i = 0; i < 2; i++) {
        struct json_object *p =
            fake_wait(A, match_method, "notifications/progress", "\"tok-A\"", WAIT_MS);
        CHECK(p != NULL);
        json_object_put(p);
        p = fake_wait(B, match_method, "notifications/progress", "\"tok-B\"", WAIT_MS);
        CHECK(p != NULL);
        json_object_put(p);
    }
    CHECK(!fake_has(A, match_method, "notifications/progress", NULL));
    CHECK(!fake_has(B, match_method, "notifications/progress", NULL));

    /* B's call asks for sampling: B is asked, A is not */
    fake_say(B, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_sample\"}}");
    struct json_object *q = fake_wait(B, match_method, "sampling/createMessage", NULL, WAIT_MS);
    CHECK(q != NULL);
    char bid[64];
    snprintf(bid, sizeof(bid), "%s", path_str(q, "id") ? path_str(q, "id") : "x");
    CHECK(bid[0] == 'b');
    json_object_put(q);
    fake_say(B,
             "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"role\":\"assistant\",\"content\":{"
             "\"type\":\"text\",\"text\":\"from B\"},\"model\":\"m\"}}",
             bid);
    r = fake_wait(B, match_id, "3", NULL, WAIT_MS);
    CHECK_STR(path_str(r, "result.content.0.text"), "sampled \"srv-1\" from B");
    json_object_put(r);
    CHECK(!fake_has(A, match_method, "sampling/createMessage", NULL));

    /* A's call logs while it waits: the message is A's alone */
    fake_say(A, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_wait\"}}");
    struct json_object *m = fake_wait(A, match_method, "notifications/message", "waiting", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    fake_say(A, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":4}}");
    CHECK(!fake_has(B, match_method, "notifications/message", "waiting"));
    /* a log of no call in flight (the server saw the cancellation) goes to every agent */
    m = fake_wait(A, match_method, "notifications/message", "cancelled", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    m = fake_wait(B, match_method, "notifications/message", "cancelled", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);

    /* nothing of the other's: every message each got was taken above */
    CHECK_INT((int64_t)A->nq, 0);
    CHECK_INT((int64_t)B->nq, 0);

    downstream_shutdown(bn.d);
    for (int64_t deadline = now_ms() + WAIT_MS; !bn.done && now_ms() < deadline;)
        run_for(bn.loop, 100);
    CHECK(bn.done);
    bench_stop(&bn);
}

/* persist (a listener's downstream): an agent whose wire ends is forgotten, its call in flight
 * cancelled at the server; the other goes on, and the bridge outlives its last agent. */
static void test_persist(void)
{
    struct bench bn;
    bench_start(&bn, "{\"mcpServers\":{" SERVER("a", ",\"tools=sample,wait\"") "}}", true, NULL);
    struct fake_agent *A = bn.a, *B = bn.b;
    fake_initialize(A);
    fake_initialize(B);
    fake_say(A, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_wait\"}}");
    struct json_object *m = fake_wait(A, match_method, "notifications/message", "waiting", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    /* A's wire ends with its call in flight: the server hears the cancellation (its log goes
     * to B, the one agent left); A's transport is freed once the loop is back */
    A->base.h->on_eof(A->base.userdata);
    A = bn.a = NULL;
    m = fake_wait(B, match_method, "notifications/message", "cancelled", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    CHECK(!bn.done);

    /* B goes on, and its server's request comes to it (not to A, the lead, which is gone) */
    struct json_object *r = fake_request(B, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"), "mcp mcp_a_sample mcp_a_wait");
    json_object_put(r);
    fake_say(B, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_sample\"}}");
    struct json_object *q = fake_wait(B, match_method, "sampling/createMessage", NULL, WAIT_MS);
    CHECK(q != NULL);
    char bid[64];
    snprintf(bid, sizeof(bid), "%s", q && path_str(q, "id") ? path_str(q, "id") : "x");
    json_object_put(q);
    fake_say(B,
             "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"role\":\"assistant\",\"content\":{"
             "\"type\":\"text\",\"text\":\"from B\"},\"model\":\"m\"}}",
             bid);
    r = fake_wait(B, match_id, "3", NULL, WAIT_MS);
    CHECK_STR(path_str(r, "result.content.0.text"), "sampled \"srv-1\" from B");
    json_object_put(r);

    /* the last agent's wire ends: the bridge goes on (a listener may bring more) */
    B->base.h->on_eof(B->base.userdata);
    B = bn.b = NULL;
    run_for(bn.loop, 200);
    CHECK(!bn.done);
    downstream_shutdown(bn.d);
    for (int64_t deadline = now_ms() + WAIT_MS; !bn.done && now_ms() < deadline;)
        run_for(bn.loop, 100);
    CHECK(bn.done);
    bench_stop(&bn);
}

#define MODERN_META                                                                                \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"

/* single mode with a listener: a 2026-07-28 agent whose one request is its listen (as an HTTP
 * agent's is) hears the list change another agent's call causes at the server. */
static void test_single_listen(void)
{
    struct bench bn;
    bench_start(&bn, "{\"mcpServers\":{" SERVER("solo", "") "}}", true, "solo");
    struct fake_agent *A = bn.a, *B = bn.b;
    fake_say(A, "{\"jsonrpc\":\"2.0\",\"id\":\"L\",\"method\":\"subscriptions/listen\","
                "\"params\":{" MODERN_META ",\"notifications\":{\"toolsListChanged\":true}}}");
    struct json_object *m =
        fake_wait(A, match_method, "notifications/subscriptions/acknowledged", NULL, WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    struct json_object *r = fake_request(
        B, "1", "tools/call", "{" MODERN_META ",\"name\":\"add_tool\",\"arguments\":{}}");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    m = fake_wait(A, match_method, "notifications/tools/list_changed", NULL, WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    CHECK(!fake_has(B, match_method, "notifications/tools/list_changed", NULL)); /* no listen */
    downstream_shutdown(bn.d);
    for (int64_t deadline = now_ms() + WAIT_MS; !bn.done && now_ms() < deadline;)
        run_for(bn.loop, 100);
    CHECK(bn.done);
    bench_stop(&bn);
}

DOWNSTREAM_TESTS_MAIN(NULL, test_two_agents, test_persist, test_single_listen)
