/* test_mrtr_upstream.c - a modern server's InputRequiredResult satisfied by the upstream for a
 * caller without UPSTREAM_CALL_INPUT_PASS (upstream_mrtr.c), over the fake transport of
 * fake_transport.h: nothing runs but the loop.
 *
 * Covered: one round (the input handed to on_request with an id of the bridge's, the related
 * call named, the request sent again under a new id with inputResponses and requestState
 * exactly as given, the caller's params kept); several rounds, a requestState absent in one
 * (absent in its retry); a state-only result sent again at once; the eleventh round refused;
 * an input answered with an error failing the call with the input's method named; the timeout
 * running across rounds (the inputs still out called off); a cancel during a round; the flag
 * passing the result as it is; a legacy server's request related to the only call that may
 * ask, or to the call of its stream; two calls asked for input at once, each request related
 * to the call on whose stream it came. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "credkit/json.h"
#include "credkit/log.h"

#include "core/loop.h"
#include "tests.h"
#include "loop_wait.h"
#include "transport/transport.h"
#include "fake_transport.h"
#include "upstream/upstream.h"
#include "upstream/upstream_int.h"

static struct log *lg;

/* ---- the fake transport: fake_transport.h ---- */

static struct json_object *last_sent(void)
{
    return cur()->nsent ? cur()->sent[cur()->nsent - 1] : NULL;
}

static int64_t last_id(void)
{
    int64_t id = -1;
    (void)json_get_int64(last_sent(), "id", &id);
    return id;
}

static void deliver(const char *fmt, ...) _printf_(1, 2);
static void deliver(const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fake_deliver(cur(), buf);
}

/* The answer to the last request sent: an InputRequiredResult with these inputRequests and
 * requestState (JSON text, NULL: none). */
static void ask(const char *inputs, const char *state)
{
    deliver("{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"result\":{\"resultType\":\"input_required\""
            "%s%s%s%s}}",
            last_id(), inputs ? ",\"inputRequests\":" : "", inputs ? inputs : "",
            state ? ",\"requestState\":" : "", state ? state : "");
}

static void answer_final(const char *text)
{
    deliver("{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"result\":{\"content\":[{\"type\":\"text\","
            "\"text\":\"%s\"}]}}",
            last_id(), text);
}

/* ---- the caller ---- */

#define MAX_REQS 32

struct rec {
    struct upstream *u;
    struct json_object *reqs[MAX_REQS]; /* on_request's, in order */
    uint64_t gens[MAX_REQS];
    struct upstream_call *related[MAX_REQS];
    int nreqs;
    char cancelled[512]; /* the notifications/cancelled requestIds, joined */
    /* answer each request at once from inside on_request (as mcp-bridge call does) */
    bool answer_inline;
    int answer_error; /* with this error code, when not 0 */
    bool ready;
};

static struct json_object *elicit_result(void)
{
    return json_tokener_parse("{\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}");
}

static int respond(struct rec *r, int i, int code)
{
    struct json_object *id = json_object_object_get(r->reqs[i], "id");
    struct json_object *res = code ? NULL : elicit_result(), *err = NULL;
    if (code) {
        err = json_object_new_object();
        json_object_object_add(err, "code", json_object_new_int(code));
        json_object_object_add(err, "message", json_object_new_string("no can do"));
    }
    int k = upstream_respond(r->u, r->gens[i], id, res, err);
    json_object_put(res);
    json_object_put(err);
    return k;
}

static void on_state(struct upstream *u, enum upstream_state s, int error, const char *message,
                     void *userdata)
{
    struct rec *r = userdata;
    (void)error, (void)message;
    if (s == UPSTREAM_READY) {
        r->ready = true;
        u->era = UPSTREAM_ERA_MODERN; /* what the detection sets for a 2026-07-28 server */
    }
}

static void on_request(struct upstream *u, uint64_t gen, struct json_object *msg, void *userdata)
{
    struct rec *r = userdata;
    if (r->nreqs >= MAX_REQS)
        return;
    int i = r->nreqs++;
    r->reqs[i] = json_object_get(msg);
    r->gens[i] = gen;
    r->related[i] = upstream_related_call(u, msg);
    if (r->answer_inline)
        CHECK_INT(respond(r, i, r->answer_error), 0);
}

static void on_notification(struct upstream *u, const char *method, struct json_object *msg,
                            void *userdata)
{
    struct rec *r = userdata;
    (void)u;
    if (strcmp(method, "notifications/cancelled") != 0)
        return;
    const char *id = json_get_string(json_get_object(msg, "params"), "requestId");
    size_t n = strlen(r->cancelled);
    snprintf(r->cancelled + n, sizeof(r->cancelled) - n, "%s;", id ? id : "?");
}

static const struct upstream_handler handler = {
    .on_state = on_state,
    .on_request = on_request,
    .on_notification = on_notification,
};

struct res {
    bool done;
    int calls;
    int error;
    char msg[512];
    char text[256];
    char result[1024]; /* the whole result, as JSON */
};

static void on_response(struct upstream_call *c, struct json_object *resp, int error,
                        const char *message, void *userdata)
{
    struct res *r = userdata;
    (void)c;
    r->done = true;
    r->calls++;
    r->error = error;
    snprintf(r->msg, sizeof(r->msg), "%s", message ? message : "");
    struct json_object *result = json_get_object(resp, "result");
    struct json_object *content = json_get_array(result, "content");
    const char *t = json_get_string(content ? json_object_array_get_idx(content, 0) : NULL, "text");
    snprintf(r->text, sizeof(r->text), "%s", t ? t : "");
    snprintf(r->result, sizeof(r->result), "%s",
             result ? json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN) : "");
}

static bool res_done(void *ctx)
{
    return ((struct res *)ctx)->done;
}

static bool is_ready(void *ctx)
{
    return ((struct rec *)ctx)->ready;
}

static char *empty_v[] = {NULL};

static struct mcp_server server = {
    .name = "modern",
    .source = "test",
    .transport = MCP_TRANSPORT_HTTP,
    .url = "http://127.0.0.1:1/mcp",
    .args = empty_v,
    .env = empty_v,
    .headers = empty_v,
};

struct fixture {
    struct loop *loop;
    struct rec rec;
    struct upstream *u;
};

static void fx_start(struct fixture *fx)
{
    memset(fx, 0, sizeof(*fx));
    CHECK_INT(loop_new(&fx->loop), 0);
    struct upstream_opts o = {
        .loop = fx->loop,
        .log = lg,
        .server = &server,
        .transport_open = fake_open,
        .connect_timeout_ms = 5000,
        .request_timeout_ms = 5000,
    };
    struct err e = ERR_INIT;
    CHECK_INT(upstream_new(&o, &handler, &fx->rec, &fx->u, &e), 0);
    fx->rec.u = fx->u;
    upstream_connect(fx->u);
    for (int i = 0; i < 200 && !cur(); i++)
        spin(fx->loop, 5);
    CHECK(cur() != NULL);
    for (int i = 0; i < 200 && cur()->nsent < 1; i++)
        spin(fx->loop, 5);
    /* a 2026-07-28 server's discover result (or, to an initialize, an InitializeResult: the
     * era is what the rounds look at, and on_state sets it) */
    const char *first = json_get_string(last_sent(), "method");
    if (first && strcmp(first, "server/discover") == 0)
        deliver("{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"result\":{\"resultType\":"
                "\"complete\",\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{"
                "\"tools\":{}},\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{\"name\":"
                "\"m\",\"version\":\"1\"}}}}",
                last_id());
    else
        deliver("{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"result\":{\"protocolVersion\":"
                "\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":"
                "\"m\"}}}",
                last_id());
    CHECK(wait_for(fx->loop, is_ready, &fx->rec, 2000));
}

static void fx_stop(struct fixture *fx)
{
    upstream_free(fx->u);
    spin(fx->loop, 5);
    for (int i = 0; i < fx->rec.nreqs; i++)
        json_object_put(fx->rec.reqs[i]);
    loop_free(fx->loop);
    fakes_release();
}

static struct upstream_call *call(struct fixture *fx, unsigned flags, int64_t timeout_ms,
                                  struct res *r)
{
    struct json_object *p = json_tokener_parse(
        "{\"name\":\"ask\",\"arguments\":{\"x\":1},\"_meta\":{\"progressToken\":\"tok\"}}");
    struct upstream_call *c = NULL;
    memset(r, 0, sizeof(*r));
    CHECK_INT(upstream_call_ex(fx->u, "tools/call", p, timeout_ms, flags, on_response, NULL, r, &c),
              0);
    json_object_put(p);
    return c;
}

static const char *ELICIT = "{\"q\":{\"method\":\"elicitation/create\",\"params\":{\"message\":"
                            "\"your name?\",\"requestedSchema\":{\"type\":\"object\"}}}}";

/* ---- tests ---- */

/* one round: the input reaches on_request, its answer goes back with the request again */
static void test_one_round(void)
{
    struct fixture fx;
    fx_start(&fx);
    struct res r;
    struct upstream_call *c = call(&fx, 0, 0, &r);
    int64_t first = last_id();
    /* a state with what a careless copy would change: escapes, a slash, non-ASCII */
    ask(ELICIT, "\"st\\\"ate/\\u00e9\\n==\"");
    CHECK_INT(fx.rec.nreqs, 1);
    struct json_object *q = fx.rec.reqs[0];
    CHECK_STR(json_get_string(q, "method"), "elicitation/create");
    CHECK_STR(json_get_string(json_get_object(q, "params"), "message"), "your name?");
    const char *qid = json_get_string(q, "id");
    CHECK(qid && strncmp(qid, "mcpb-input-", 11) == 0);
    CHECK(fx.rec.related[0] == c);
    CHECK(upstream_related_call(fx.u, q) == c);
    CHECK_INT(count_method(cur(), "tools/call"), 1); /* nothing sent while the input is out */
    CHECK(!r.done);

    CHECK_INT(respond(&fx.rec, 0, 0), 0);
    CHECK_INT(count_method(cur(), "tools/call"), 2);
    struct json_object *again = last_sent();
    struct json_object *params = json_get_object(again, "params");
    CHECK(last_id() != first);
    CHECK_STR(json_get_string(params, "name"), "ask");
    CHECK_STR(json_object_to_json_string_ext(json_get_object(params, "arguments"),
                                             JSON_C_TO_STRING_PLAIN),
              "{\"x\":1}");
    CHECK_STR(json_get_string(params, "requestState"), "st\"ate/\xc3\xa9\n==");
    CHECK_STR(json_object_to_json_string_ext(json_get_object(params, "inputResponses"),
                                             JSON_C_TO_STRING_PLAIN),
              "{\"q\":{\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}}");
    /* the progress token follows the new id */
    int64_t tok = 0;
    CHECK(json_get_int64(json_get_object(params, "_meta"), "progressToken", &tok));
    CHECK(tok == last_id());

    answer_final("done");
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    CHECK_INT(r.error, 0);
    CHECK_STR(r.text, "done");
    /* a second answer to the same input is nobody's */
    CHECK_INT(respond(&fx.rec, 0, 0), 0);
    spin(fx.loop, 10);
    CHECK_INT(r.calls, 1);
    CHECK_INT(count_method(cur(), "tools/call"), 2);
    fx_stop(&fx);
}

/* several rounds; a round without requestState retried without one; answers from inside
 * on_request; the ids of every round new */
static void test_rounds_and_state(void)
{
    struct fixture fx;
    fx_start(&fx);
    fx.rec.answer_inline = true;
    struct res r;
    (void)call(&fx, 0, 0, &r);
    int64_t ids[4] = {last_id()};
    ask(ELICIT, "\"one\"");
    ids[1] = last_id();
    CHECK_STR(json_get_string(json_get_object(last_sent(), "params"), "requestState"), "one");
    ask("{\"a\":{\"method\":\"roots/list\"},\"b\":{\"method\":\"elicitation/create\","
        "\"params\":{\"message\":\"m\"}}}",
        NULL);
    ids[2] = last_id();
    struct json_object *params = json_get_object(last_sent(), "params");
    CHECK(!json_object_object_get_ex(params, "requestState", NULL));
    CHECK(json_object_object_get_ex(json_get_object(params, "inputResponses"), "a", NULL));
    CHECK(json_object_object_get_ex(json_get_object(params, "inputResponses"), "b", NULL));
    CHECK(!json_object_object_get_ex(json_get_object(params, "inputResponses"), "q", NULL));
    /* state only: sent again at once, with the state and no inputResponses */
    ask(NULL, "\"shed\"");
    ids[3] = last_id();
    params = json_get_object(last_sent(), "params");
    CHECK_STR(json_get_string(params, "requestState"), "shed");
    CHECK(!json_object_object_get_ex(params, "inputResponses", NULL));
    for (int i = 0; i < 4; i++)
        for (int k = i + 1; k < 4; k++)
            CHECK(ids[i] != ids[k]);
    CHECK_INT(fx.rec.nreqs, 3);
    /* the made-up ids differ too */
    CHECK(!json_object_equal(json_object_object_get(fx.rec.reqs[1], "id"),
                             json_object_object_get(fx.rec.reqs[2], "id")));
    answer_final("after three");
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    CHECK_INT(r.error, 0);
    CHECK_STR(r.text, "after three");
    fx_stop(&fx);
}

/* at most UPSTREAM_INPUT_MAX_ROUNDS rounds: the eleventh fails the call */
static void test_eleven_rounds(void)
{
    struct fixture fx;
    fx_start(&fx);
    fx.rec.answer_inline = true;
    struct res r;
    (void)call(&fx, 0, 0, &r);
    for (int i = 0; i < UPSTREAM_INPUT_MAX_ROUNDS; i++)
        ask(ELICIT, "\"again\"");
    CHECK_INT(count_method(cur(), "tools/call"), UPSTREAM_INPUT_MAX_ROUNDS + 1);
    CHECK(!r.done);
    ask(ELICIT, "\"again\"");
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    CHECK_INT(r.error, -EPROTO);
    CHECK_CONTAINS(r.msg, "after 10 rounds");
    CHECK_INT(count_method(cur(), "tools/call"), UPSTREAM_INPUT_MAX_ROUNDS + 1);
    fx_stop(&fx);
}

/* an input the caller cannot give (an error answer) fails the call, naming what was asked */
static void test_input_error(void)
{
    struct fixture fx;
    fx_start(&fx);
    struct res r;
    (void)call(&fx, 0, 0, &r);
    ask("{\"s\":{\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[],"
        "\"maxTokens\":5}},\"q\":{\"method\":\"elicitation/create\",\"params\":{}}}",
        "\"x\"");
    CHECK_INT(fx.rec.nreqs, 2);
    CHECK_INT(respond(&fx.rec, 0, -32601), 0);
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    CHECK_INT(r.error, -EPROTO);
    CHECK_CONTAINS(r.msg, "sampling/createMessage");
    CHECK_CONTAINS(r.msg, "no can do");
    CHECK_INT(count_method(cur(), "tools/call"), 1);
    /* the other input is called off */
    CHECK_CONTAINS(fx.rec.cancelled, json_get_string(fx.rec.reqs[1], "id"));
    /* and its late answer goes nowhere */
    CHECK_INT(respond(&fx.rec, 1, 0), 0);
    spin(fx.loop, 10);
    CHECK_INT(count_method(cur(), "tools/call"), 1);
    CHECK_INT(r.calls, 1);

    /* an input request that is no input at all fails the call too */
    (void)call(&fx, 0, 0, &r);
    ask("{\"z\":{\"method\":\"tools/call\"}}", NULL);
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    CHECK_INT(r.error, -EPROTO);
    CHECK_CONTAINS(r.msg, "'z'");
    fx_stop(&fx);
}

/* the call's timeout runs across the rounds; a cancel during a round cleans up */
static void test_timeout_and_cancel(void)
{
    struct fixture fx;
    fx_start(&fx);
    struct res r;
    (void)call(&fx, 0, 300, &r);
    int64_t first = last_id();
    ask(ELICIT, "\"s\"");
    CHECK(wait_for(fx.loop, res_done, &r, 3000));
    CHECK_INT(r.error, -ETIMEDOUT);
    CHECK_CONTAINS(r.msg, "tools/call");
    CHECK_CONTAINS(fx.rec.cancelled, json_get_string(fx.rec.reqs[0], "id"));
    /* the server heard of it, for the id it answered (then a ping: is it still there?) */
    struct json_object *n = NULL;
    for (int i = 0; i < cur()->nsent && !n; i++) {
        const char *m = json_get_string(cur()->sent[i], "method");
        if (m && strcmp(m, "notifications/cancelled") == 0)
            n = cur()->sent[i];
    }
    CHECK(n != NULL);
    int64_t rid = 0;
    CHECK(json_get_int64(json_get_object(n, "params"), "requestId", &rid));
    CHECK(rid == first);

    struct upstream_call *c = call(&fx, 0, 0, &r);
    ask(ELICIT, "\"s\"");
    CHECK_INT(fx.rec.nreqs, 2);
    upstream_call_cancel(c, "changed my mind");
    int sent = cur()->nsent;
    CHECK_INT(respond(&fx.rec, 1, 0), 0); /* nobody's any more: nothing sent */
    spin(fx.loop, 20);
    CHECK_INT(cur()->nsent, sent);
    CHECK(!r.done);
    CHECK(upstream_related_call(fx.u, fx.rec.reqs[1]) == NULL);
    fx_stop(&fx);
}

/* UPSTREAM_CALL_INPUT_PASS: the caller gets the InputRequiredResult as it is */
static void test_pass_flag(void)
{
    struct fixture fx;
    fx_start(&fx);
    struct res r;
    (void)call(&fx, UPSTREAM_CALL_INPUT_PASS, 0, &r);
    ask(ELICIT, "\"s\"");
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    CHECK_INT(r.error, 0);
    CHECK_CONTAINS(r.result, "\"resultType\":\"input_required\"");
    CHECK_CONTAINS(r.result, "\"requestState\":\"s\"");
    CHECK_INT(fx.rec.nreqs, 0);
    fx_stop(&fx);
}

/* a legacy server's own request: the only call that may ask, or the call of its stream */
static void test_related_legacy(void)
{
    struct fixture fx;
    fx_start(&fx);
    fx.u->era = UPSTREAM_ERA_LEGACY;
    struct res r1, r2, r3;
    struct upstream_call *c1 = call(&fx, 0, 0, &r1);
    struct upstream_call *c_list = NULL;
    CHECK_INT(upstream_call(fx.u, "tools/list", NULL, 0, on_response, NULL, &r3, &c_list), 0);
    struct json_object *req = json_tokener_parse(
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{}}");
    CHECK(upstream_related_call(fx.u, req) == c1);
    struct upstream_call *c2 = call(&fx, 0, 0, &r2);
    CHECK(upstream_related_call(fx.u, req) == NULL); /* two could have asked */
    fx.u->request_tag = (uint64_t)c2->id;
    CHECK(upstream_related_call(fx.u, req) == c2);
    fx.u->request_tag = 0;
    /* a legacy server's input_required is nothing special: delivered as it is */
    ask(ELICIT, "\"s\"");
    CHECK(wait_for(fx.loop, res_done, &r2, 2000));
    CHECK_CONTAINS(r2.result, "input_required");
    CHECK(upstream_related_call(fx.u, req) == c1);
    json_object_put(req);
    fx_stop(&fx);
}

/* a legacy HTTP server asking for input for two calls at once, each request on the answer
 * stream of its own call: each is related to its call, whatever the order, with no call named
 * by hand (the transport's message tag names it) */
static void test_related_concurrent_streams(void)
{
    struct fixture fx;
    fx_start(&fx);
    fx.u->era = UPSTREAM_ERA_LEGACY;
    struct res r1, r2;
    struct upstream_call *c1 = call(&fx, 0, 0, &r1);
    int64_t id1 = last_id();
    struct upstream_call *c2 = call(&fx, 0, 0, &r2);
    int64_t id2 = last_id();
    CHECK(id1 != id2);
    static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"elicitation/create\","
                              "\"params\":{\"message\":\"m\",\"requestedSchema\":{}}}";
    char text[256];
    snprintf(text, sizeof(text), req, 70);
    fake_deliver_on(cur(), (uint64_t)id2, text);
    snprintf(text, sizeof(text), req, 71);
    fake_deliver_on(cur(), (uint64_t)id1, text);
    snprintf(text, sizeof(text), req, 72);
    fake_deliver_on(cur(), (uint64_t)id2, text);
    CHECK_INT(fx.rec.nreqs, 3);
    CHECK(fx.rec.related[0] == c2);
    CHECK(fx.rec.related[1] == c1);
    CHECK(fx.rec.related[2] == c2);
    /* the server's own stream names none: two could have asked */
    snprintf(text, sizeof(text), req, 73);
    fake_deliver(cur(), text);
    CHECK_INT(fx.rec.nreqs, 4);
    CHECK(fx.rec.related[3] == NULL);
    CHECK_INT((int64_t)fx.u->request_tag, 0); /* only while on_request runs */
    fx_stop(&fx);
}

int main(int argc, char **argv)
{
    (void)argc;
    lg = log_new("test_mrtr_upstream", 2);
    if (getenv("UPSTREAM_TEST_DEBUG"))
        log_set_level(lg, LOG_DEBUG);
    test_fn fns[] = {test_one_round,      test_rounds_and_state,          test_eleven_rounds,
                     test_input_error,    test_timeout_and_cancel,        test_pass_flag,
                     test_related_legacy, test_related_concurrent_streams};
    int r = tests_run("test_one_round, test_rounds_and_state, test_eleven_rounds, "
                      "test_input_error, test_timeout_and_cancel, test_pass_flag, "
                      "test_related_legacy, test_related_concurrent_streams",
                      fns, ELEMENTSOF(fns));
    log_free(lg);
    (void)argv;
    return r;
}
