/* test_upstream_fake.c - the upstream state machine over a fake transport (fake_transport.h)
 * and a fake credentials provider written here: nothing runs but the loop.
 *
 * Covered: the handshake and a call routed by id; a request error reported by its tag; the
 * connection lost (in-flight calls -ECONNRESET, BACKOFF); the provider asked CONNECT then
 * RECONNECT and the transport opened with its headers and ${VAR} values; a mid-session 401
 * parks the call and the calls made meanwhile, asks UNAUTHORIZED, swaps the headers in the same
 * session and retries once, a second 401 fails with a clear error and the same headers fail at
 * once; credentials with expires_at refreshed (EXPIRING) ahead of expiry with set-headers and
 * no new session; an upstream freed while the provider asks cancels the question. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "credkit/json.h"
#include "credkit/log.h"

#include "creds/cred.h"
#include "core/loop.h"
#include "core/trace.h"
#include "tests.h"
#include "loop_wait.h"
#include "transport/transport.h"
#include "fake_transport.h"
#include "upstream/upstream.h"

static struct log *lg;

/* ---- the fake transport: fake_transport.h ---- */

static void fake_answer_init(struct fake *f)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"result\":{\"protocolVersion\":"
             "\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"f\"}}}",
             sent_id(f, 0));
    fake_deliver(f, buf);
}

static void fake_answer(struct fake *f, int64_t id)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"result\":{\"ok\":true}}",
             id);
    fake_deliver(f, buf);
}

/* ---- the fake provider ---- */

struct fprov {
    struct cred_provider p;
    struct cred_request r;
    struct loop *loop;
    struct loop_timer *t;
    cred_done_fn done;
    void *userdata;
    bool open;
    int asks[CRED_REASON_N_REASONS]; /* by reason */
    enum cred_reason last;
    int cancels;
    const char *header_for[CRED_REASON_N_REASONS]; /* the header answered for each reason */
    int64_t lifetime_ms;                           /* 0: no expires_at */
    int answer_error;
    char challenge[64]; /* of the last question */
};

static void fprov_fire(struct loop_timer *t, void *userdata)
{
    struct fprov *p = userdata;
    (void)t;
    if (!p->open)
        return;
    p->open = false;
    if (p->answer_error) {
        p->done(p->answer_error, NULL, "no credentials today", p->userdata);
        return;
    }
    char *headers[] = {(char *)p->header_for[p->last], NULL};
    char *vars[] = {"HOST=example.test", NULL};
    struct credentials c = {
        .headers = p->header_for[p->last] ? headers : NULL,
        .vars = vars,
        .expires_at = p->lifetime_ms ? cred_now_ms() + p->lifetime_ms : 0,
    };
    p->done(0, &c, NULL, p->userdata);
}

static int fprov_ask(struct cred_provider *prov, const struct cred_query *q, cred_done_fn done,
                     void *userdata, struct cred_request **ret)
{
    struct fprov *p = (struct fprov *)(void *)prov;
    enum cred_reason reason = q->reason;
    snprintf(p->challenge, sizeof(p->challenge), "%s", q->challenge ? q->challenge : "");
    CHECK(!p->open);
    p->asks[reason]++;
    p->last = reason;
    p->done = done;
    p->userdata = userdata;
    p->open = true;
    p->r.provider = prov;
    if (p->t)
        loop_timer_rearm(p->t, 1);
    else if (loop_timer_add(p->loop, 1, fprov_fire, p, &p->t) < 0)
        return -ENOMEM;
    *ret = &p->r;
    return 0;
}

static void fprov_cancel(struct cred_request *r)
{
    struct fprov *p = (struct fprov *)(void *)r->provider;
    p->open = false;
    p->cancels++;
}

static void fprov_free(struct cred_provider *prov)
{
    struct fprov *p = (struct fprov *)(void *)prov;
    loop_timer_cancel(p->t);
    p->t = NULL;
}

static const struct cred_provider_ops fprov_ops = {
    .name = "fake",
    .ask = fprov_ask,
    .cancel = fprov_cancel,
    .free = fprov_free,
};

/* ---- the upstream under test ---- */

struct res {
    bool done;
    int error;
    char msg[256];
    bool ok;
};

static void on_response(struct upstream_call *c, struct json_object *resp, int error,
                        const char *message, void *userdata)
{
    struct res *r = userdata;
    (void)c;
    r->done = true;
    r->error = error;
    snprintf(r->msg, sizeof(r->msg), "%s", message ? message : "");
    r->ok = resp && json_object_object_get_ex(json_get_object(resp, "result"), "ok", NULL);
}

static bool res_done(void *ctx)
{
    return ((struct res *)ctx)->done;
}

struct rec {
    enum upstream_state last;
    int ready, backoff;
};

static void on_state(struct upstream *u, enum upstream_state s, int error, const char *message,
                     void *userdata)
{
    struct rec *r = userdata;
    (void)u, (void)error, (void)message;
    r->last = s;
    r->ready += s == UPSTREAM_READY;
    r->backoff += s == UPSTREAM_BACKOFF;
}

static const struct upstream_handler handler = {.on_state = on_state};

static char *empty_v[] = {NULL};
static char *hdr_v[] = {"Authorization: Bearer ${TOKEN}", NULL};

static struct mcp_server server = {
    .name = "fake",
    .source = "test",
    .transport = MCP_TRANSPORT_HTTP,
    .url = "http://${HOST}/mcp",
    .args = empty_v,
    .env = empty_v,
    .headers = hdr_v,
    .protocol = MCP_PROTOCOL_LEGACY, /* the handshake these tests follow: initialize */
    .allow_http = true,              /* the fake transport: nothing goes on a network */
};

struct fixture {
    struct loop *loop;
    struct fprov prov;
    struct rec rec;
    struct upstream *u;
};

static bool sent_count_at_least(void *ctx)
{
    struct fake *f = cur();
    return f && f->nsent >= *(int *)ctx;
}

static bool is_ready(void *ctx)
{
    return ((struct fixture *)ctx)->rec.last == UPSTREAM_READY;
}

static void fx_open(struct fixture *fx, const struct mcp_server *srv)
{
    memset(fx, 0, sizeof(*fx));
    CHECK_INT(loop_new(&fx->loop), 0);
    fx->prov.p.ops = &fprov_ops;
    fx->prov.loop = fx->loop;
    struct upstream_opts o = {
        .loop = fx->loop,
        .log = lg,
        .server = srv,
        .credentials = &fx->prov.p,
        .transport_open = fake_open,
        .connect_timeout_ms = 5000,
        .request_timeout_ms = 5000,
    };
    struct err e = ERR_INIT;
    CHECK_INT(upstream_new(&o, &handler, &fx->rec, &fx->u, &e), 0);
    upstream_connect(fx->u);
    int one = 1;
    CHECK(wait_for(fx->loop, sent_count_at_least, &one, 2000));
}

static void fx_start(struct fixture *fx, int64_t lifetime_ms)
{
    memset(fx, 0, sizeof(*fx));
    CHECK_INT(loop_new(&fx->loop), 0);
    fx->prov.p.ops = &fprov_ops;
    fx->prov.loop = fx->loop;
    fx->prov.header_for[CRED_REASON_CONNECT] = "Authorization: Bearer one";
    fx->prov.header_for[CRED_REASON_RECONNECT] = "Authorization: Bearer one";
    fx->prov.header_for[CRED_REASON_UNAUTHORIZED] = "Authorization: Bearer two";
    fx->prov.header_for[CRED_REASON_EXPIRING] = "Authorization: Bearer three";
    fx->prov.lifetime_ms = lifetime_ms;
    struct upstream_opts o = {
        .loop = fx->loop,
        .log = lg,
        .server = &server,
        .credentials = &fx->prov.p,
        .transport_open = fake_open,
        .connect_timeout_ms = 5000,
        .request_timeout_ms = 5000,
    };
    struct err e = ERR_INIT;
    CHECK_INT(upstream_new(&o, &handler, &fx->rec, &fx->u, &e), 0);
    upstream_connect(fx->u);
    int one = 1;
    CHECK(wait_for(fx->loop, sent_count_at_least, &one, 2000));
    CHECK_STR(sent_method(cur(), 0), "initialize");
    fake_answer_init(cur());
    CHECK(wait_for(fx->loop, is_ready, fx, 2000));
}

static void fx_stop(struct fixture *fx)
{
    upstream_free(fx->u);
    spin(fx->loop, 5);
    loop_free(fx->loop);
    fakes_release();
}

/* ---- tests ---- */

/* the handshake, a call answered by id, the provider's answer used to open the transport */
static void test_fake_handshake_and_call(void)
{
    struct fixture fx;
    fx_start(&fx, 0);
    struct fake *f = cur();
    CHECK_INT(fx.prov.asks[CRED_REASON_CONNECT], 1);
    CHECK_INT(f->nheaders, 1);
    CHECK_STR(f->headers[0], "Authorization: Bearer one");
    CHECK_STR(f->url_var, "example.test"); /* ${HOST} from the answer's vars */
    CHECK_STR(sent_method(f, 1), "notifications/initialized");

    struct res r = {0};
    struct upstream_call *c = NULL;
    CHECK_INT(upstream_call(fx.u, "tools/list", NULL, 0, on_response, NULL, &r, &c), 0);
    CHECK_STR(sent_method(f, 2), "tools/list");
    fake_answer(f, sent_id(f, 2));
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    CHECK_INT(r.error, 0);
    CHECK(r.ok);
    fx_stop(&fx);
}

/* an error reported with the request's tag fails that call only */
static void test_fake_error_by_tag(void)
{
    struct fixture fx;
    fx_start(&fx, 0);
    struct fake *f = cur();
    struct res a = {0}, b = {0};
    struct upstream_call *ca = NULL, *cb = NULL;
    CHECK_INT(upstream_call(fx.u, "a", NULL, 0, on_response, NULL, &a, &ca), 0);
    CHECK_INT(upstream_call(fx.u, "b", NULL, 0, on_response, NULL, &b, &cb), 0);
    f->h->on_error(-EPROTO, (uint64_t)sent_id(f, 3), f->userdata);
    CHECK(wait_for(fx.loop, res_done, &b, 2000));
    CHECK_INT(b.error, -EPROTO);
    CHECK_STR(b.msg, "server 'fake': 'b' failed: the answer broke the protocol");
    CHECK(!a.done);
    fake_answer(f, sent_id(f, 2));
    CHECK(wait_for(fx.loop, res_done, &a, 2000));
    CHECK_INT(a.error, 0);
    fx_stop(&fx);
}

static bool in_backoff(void *ctx)
{
    return ((struct fixture *)ctx)->rec.backoff > 0;
}

static bool second_conn_sent(void *ctx)
{
    (void)ctx;
    return nfakes == 2 && cur()->nsent >= 1;
}

/* the connection lost: in-flight calls fail, BACKOFF, and the next connect asks RECONNECT */
static void test_fake_lost(void)
{
    struct fixture fx;
    fx_start(&fx, 0);
    struct fake *f = cur();
    struct res a = {0};
    struct upstream_call *ca = NULL;
    CHECK_INT(upstream_call(fx.u, "a", NULL, 0, on_response, NULL, &a, &ca), 0);
    f->h->on_lost(-ECONNRESET, "the wire was cut", f->userdata);
    CHECK(wait_for(fx.loop, res_done, &a, 2000));
    CHECK_INT(a.error, -ECONNRESET);
    CHECK_CONTAINS(a.msg, "the wire was cut");
    CHECK(wait_for(fx.loop, in_backoff, &fx, 2000));
    CHECK(f->freed);
    upstream_connect(fx.u); /* from BACKOFF: at once */
    CHECK(wait_for(fx.loop, second_conn_sent, NULL, 2000));
    CHECK_INT(fx.prov.asks[CRED_REASON_RECONNECT], 1);
    fx_stop(&fx);
}

static bool asked_unauthorized(void *ctx)
{
    struct fixture *fx = ctx;
    return fx->prov.asks[CRED_REASON_UNAUTHORIZED] > 0 && !fx->prov.open;
}

/* a 401 mid-session: parked, new headers in the same session, retried once; a call made
 * meanwhile waits and goes after it; the retried call refused again fails clearly */
static void test_fake_unauthorized(void)
{
    struct fixture fx;
    fx_start(&fx, 0);
    struct fake *f = cur();
    struct res a = {0}, b = {0}, c = {0};
    struct upstream_call *ca = NULL, *cb = NULL, *cc = NULL;
    CHECK_INT(upstream_call(fx.u, "a", NULL, 0, on_response, NULL, &a, &ca), 0);
    CHECK_INT(upstream_call(fx.u, "c", NULL, 0, on_response, NULL, &c, &cc), 0);
    int64_t id_a = sent_id(f, 2), id_c = sent_id(f, 3);
    f->h->on_error(-EACCES, (uint64_t)id_a, f->userdata);
    /* asked at once; a call made now waits for the answer */
    CHECK_INT(upstream_call(fx.u, "b", NULL, 0, on_response, NULL, &b, &cb), 0);
    CHECK_INT(f->nsent, 4);
    CHECK(wait_for(fx.loop, asked_unauthorized, &fx, 2000));
    CHECK_STR(fx.prov.challenge, "Bearer scope=\"fake\""); /* the refusal's, for the provider */
    CHECK_INT(f->set_headers_calls, 1);
    CHECK_STR(f->headers[0], "Authorization: Bearer two");
    CHECK_INT(f->nsent, 6);
    CHECK_STR(sent_method(f, 4), "a"); /* the parked call first, with its id */
    CHECK(sent_id(f, 4) == id_a);
    CHECK_STR(sent_method(f, 5), "b");
    CHECK(!a.done && !b.done && !c.done);
    CHECK_INT(nfakes, 1); /* no new connection, no new session */
    CHECK_INT(count_method(f, "initialize"), 1);

    fake_answer(f, sent_id(f, 5));
    CHECK(wait_for(fx.loop, res_done, &b, 2000));
    CHECK_INT(b.error, 0);
    f->h->on_error(-EACCES, (uint64_t)id_a, f->userdata); /* refused again */
    CHECK(wait_for(fx.loop, res_done, &a, 2000));
    CHECK_INT(a.error, -EACCES);
    CHECK_STR(a.msg,
              "server 'fake': 'a' failed: the fake says 401 (refused again with fresh credentials: "
              "'mcp-bridge list' shows where they come from)");
    fake_answer(f, id_c); /* a call in flight meanwhile was never failed */
    CHECK(wait_for(fx.loop, res_done, &c, 2000));
    CHECK_INT(c.error, 0);
    CHECK_INT(fx.prov.asks[CRED_REASON_UNAUTHORIZED], 1);
    fx_stop(&fx);
}

/* the provider has nothing new: the call fails at once with the 401, nothing is resent */
static void test_fake_unauthorized_same(void)
{
    struct fixture fx;
    fx_start(&fx, 0);
    fx.prov.header_for[CRED_REASON_UNAUTHORIZED] = "Authorization: Bearer one";
    struct fake *f = cur();
    struct res a = {0};
    struct upstream_call *ca = NULL;
    CHECK_INT(upstream_call(fx.u, "a", NULL, 0, on_response, NULL, &a, &ca), 0);
    f->h->on_error(-EACCES, (uint64_t)sent_id(f, 2), f->userdata);
    CHECK(wait_for(fx.loop, res_done, &a, 2000));
    CHECK_INT(a.error, -EACCES);
    CHECK_STR(a.msg, "server 'fake': 'a' failed: the fake says 401");
    CHECK_INT(f->nsent, 3);
    CHECK_INT(f->set_headers_calls, 0);

    /* and a provider that fails says so */
    fx.prov.answer_error = -EIO;
    struct res b = {0};
    struct upstream_call *cb = NULL;
    CHECK_INT(upstream_call(fx.u, "b", NULL, 0, on_response, NULL, &b, &cb), 0);
    f->h->on_error(-EACCES, (uint64_t)sent_id(f, 3), f->userdata);
    CHECK(wait_for(fx.loop, res_done, &b, 2000));
    CHECK_INT(b.error, -EACCES);
    CHECK_CONTAINS(b.msg, "(fresh credentials could not be had: no credentials today)");
    CHECK_INT(fx.rec.ready, 1);
    fx_stop(&fx);
}

static bool refreshed(void *ctx)
{
    struct fixture *fx = ctx;
    return cur()->set_headers_calls > 0 && fx->prov.asks[CRED_REASON_EXPIRING] > 0;
}

/* an answer with expires_at is asked again (EXPIRING) ahead of it; the headers are swapped in
 * the same session */
static void test_fake_expiry_refresh(void)
{
    struct fixture fx;
    fx_start(&fx, 2500); /* skew: a quarter, at least 1 s: asked again after ~1.5 s */
    struct fake *f = cur();
    spin(fx.loop, 800);
    CHECK_INT(fx.prov.asks[CRED_REASON_EXPIRING], 0);
    CHECK(wait_for(fx.loop, refreshed, &fx, 3000));
    CHECK_STR(f->headers[0], "Authorization: Bearer three");
    CHECK_INT(nfakes, 1);
    CHECK_INT(count_method(f, "initialize"), 1);
    CHECK_INT(fx.rec.ready, 1);
    struct res a = {0};
    struct upstream_call *ca = NULL;
    CHECK_INT(upstream_call(fx.u, "a", NULL, 0, on_response, NULL, &a, &ca), 0);
    fake_answer(f, sent_id(f, f->nsent - 1));
    CHECK(wait_for(fx.loop, res_done, &a, 2000));
    CHECK_INT(a.error, 0);
    fx_stop(&fx);
}

static void test_skew(void)
{
    CHECK(cred_skew_ms(3600 * 1000) == 60 * 1000);
    CHECK(cred_skew_ms(100 * 1000) == 25 * 1000);
    CHECK(cred_skew_ms(2000) == 1000);
    CHECK(cred_skew_ms(0) == 1000);
}

/* freed while the provider asks: the question is cancelled */
static void test_fake_free_cancels(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct fprov p = {.p.ops = &fprov_ops, .loop = l};
    struct rec rec = {0};
    struct upstream_opts o = {
        .loop = l, .log = lg, .server = &server, .credentials = &p.p, .transport_open = fake_open};
    struct upstream *u = NULL;
    CHECK_INT(upstream_new(&o, &handler, &rec, &u, NULL), 0);
    upstream_connect(u);
    spin(l, 0);
    /* the kick started the connect: the provider is asked */
    CHECK_INT(p.asks[CRED_REASON_CONNECT], 1);
    CHECK(p.open);
    upstream_free(u);
    CHECK_INT(p.cancels, 1);
    CHECK_INT(nfakes, 0);
    spin(l, 5);
    loop_free(l);
}

static void test_default_provider(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct rec rec = {0};
    setenv("FAKE_TEST_TOKEN", "sekrit", 1);
    setenv("HOST", "h.test", 1);
    char *hv[] = {"Authorization: Bearer ${FAKE_TEST_TOKEN}", NULL};
    struct mcp_server s = server;
    s.headers = hv;
    struct upstream_opts o = {.loop = l, .log = lg, .server = &s, .transport_open = fake_open};
    struct upstream *u = NULL;
    CHECK_INT(upstream_new(&o, &handler, &rec, &u, NULL), 0);
    upstream_connect(u);
    int one = 1;
    CHECK(wait_for(l, sent_count_at_least, &one, 2000));
    struct fake *f = cur();
    CHECK(f != NULL);
    if (f) {
        CHECK_STR(f->headers[0], "Authorization: Bearer sekrit");
        CHECK_STR(f->url_var, "h.test");
    }
    upstream_free(u);
    spin(l, 5);
    loop_free(l);
    fakes_release();
    unsetenv("HOST");
}

/* ---- the era ---- */

static struct mcp_server srv_auto_modern = {.name = "am",
                                            .source = "test",
                                            .transport = MCP_TRANSPORT_HTTP,
                                            .url = "http://auto-modern.test/mcp",
                                            .args = empty_v,
                                            .env = empty_v,
                                            .headers = empty_v};
static struct mcp_server srv_auto_legacy = {.name = "al",
                                            .source = "test",
                                            .transport = MCP_TRANSPORT_HTTP,
                                            .url = "http://auto-legacy.test/mcp",
                                            .args = empty_v,
                                            .env = empty_v,
                                            .headers = empty_v};
static struct mcp_server srv_only_modern = {.name = "om",
                                            .source = "test",
                                            .transport = MCP_TRANSPORT_HTTP,
                                            .url = "http://only-modern.test/mcp",
                                            .args = empty_v,
                                            .env = empty_v,
                                            .headers = empty_v,
                                            .protocol = MCP_PROTOCOL_MODERN};

static const char *meta_of(struct fake *f, int i, const char *key)
{
    struct json_object *p = json_get_object(f->sent[i], "params");
    struct json_object *m = json_get_object(p, "_meta"), *v = NULL;
    if (!m || !json_object_object_get_ex(m, key, &v))
        return NULL;
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "(object)";
}

static void deliver_fmt(struct fake *f, int64_t id, const char *body)
{
    char buf[1024];
    snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",%s}", id, body);
    fake_deliver(f, buf);
}

/* auto, and the server answers server/discover: modern; no initialize, every request stamped,
 * ping and logging/setLevel answered here, the listen stream opened, x-mcp-header mirrored, a
 * tool left out for its markings said once however often it is listed */
static void test_era_modern(void)
{
    struct fixture fx;
    /* this test's log in a file, at the default level, to count what it says */
    char logpath[4200];
    snprintf(logpath, sizeof(logpath), "%s/era_modern.log", tests_tmpdir());
    int logfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(logfd >= 0);
    struct log *saved_lg = lg;
    lg = log_new("test_upstream_fake", logfd);
    CHECK(lg != NULL);
    fx_open(&fx, &srv_auto_modern);
    struct fake *f = cur();
    CHECK_STR(sent_method(f, 0), "server/discover");
    CHECK_STR(meta_of(f, 0, "io.modelcontextprotocol/protocolVersion"), "2026-07-28");
    CHECK_STR(meta_of(f, 0, "io.modelcontextprotocol/clientInfo"), "(object)");
    CHECK_STR(meta_of(f, 0, "io.modelcontextprotocol/clientCapabilities"), "(object)");
    CHECK_STR(f->last_hdrs, "MCP-Protocol-Version: 2026-07-28|Mcp-Method: server/discover|");
    deliver_fmt(f, sent_id(f, 0),
                "\"result\":{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{\"tools\":"
                "{\"listChanged\":true}},\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{"
                "\"name\":\"m\"}},\"instructions\":\"hi\",\"resultType\":\"complete\"}");
    CHECK(wait_for(fx.loop, is_ready, &fx, 2000));
    CHECK(upstream_era(fx.u) == UPSTREAM_ERA_MODERN);
    CHECK_STR(upstream_protocol_version(fx.u), "2026-07-28");
    CHECK_STR(upstream_instructions(fx.u), "hi");
    CHECK_STR(json_get_string(upstream_server_info(fx.u), "name"), "m");
    CHECK(upstream_has_capability(fx.u, "tools"));
    CHECK_INT(count_method(f, "initialize"), 0);
    CHECK_INT(count_method(f, "notifications/initialized"), 0);
    CHECK_INT(count_method(f, "subscriptions/listen"), 1);

    /* ping and logging/setLevel: answered here; the level stamped from then on */
    int before = f->nsent;
    struct res r = {0};
    struct upstream_call *c = NULL;
    struct json_object *lp = json_tokener_parse("{\"level\":\"debug\"}");
    CHECK_INT(upstream_call(fx.u, "ping", NULL, 0, on_response, NULL, &r, &c), 0);
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    CHECK_INT(r.error, 0);
    memset(&r, 0, sizeof(r));
    CHECK_INT(upstream_call(fx.u, "logging/setLevel", lp, 0, on_response, NULL, &r, &c), 0);
    json_object_put(lp);
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    CHECK_INT(r.error, 0);
    CHECK_INT(f->nsent, before);

    /* tools/list: an invalid marking drops the tool; a valid one is mirrored on tools/call */
    memset(&r, 0, sizeof(r));
    CHECK_INT(upstream_call(fx.u, "tools/list", NULL, 0, on_response, NULL, &r, &c), 0);
    CHECK_STR(sent_method(f, before), "tools/list");
    CHECK_STR(meta_of(f, before, "io.modelcontextprotocol/logLevel"), "debug");
    deliver_fmt(f, sent_id(f, before),
                "\"result\":{\"tools\":[{\"name\":\"ok\",\"inputSchema\":{\"type\":\"object\","
                "\"properties\":{\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"}}}},"
                "{\"name\":\"bad\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"n\":{"
                "\"type\":\"number\",\"x-mcp-header\":\"N\"}}}}]}");
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    /* listed again, with one more bad tool: only the new one is said */
    for (int round = 0; round < 3; round++) {
        memset(&r, 0, sizeof(r));
        CHECK_INT(upstream_call(fx.u, "tools/list", NULL, 0, on_response, NULL, &r, &c), 0);
        deliver_fmt(
            f, sent_id(f, f->nsent - 1),
            "\"result\":{\"tools\":[{\"name\":\"ok\",\"inputSchema\":{\"type\":"
            "\"object\",\"properties\":{\"region\":{\"type\":\"string\",\"x-mcp-header\":"
            "\"Region\"}}}},{\"name\":\"bad\",\"inputSchema\":{\"type\":\"object\","
            "\"properties\":{\"n\":{\"type\":\"number\",\"x-mcp-header\":\"N\"}}}},{\"name\":"
            "\"bad2\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"o\":{\"type\":"
            "\"object\",\"x-mcp-header\":\"O\"}}}}]}");
        CHECK(wait_for(fx.loop, res_done, &r, 2000));
    }
    CHECK_INT(tests_count_lines(logpath, "tool 'bad' is left out"), 1);
    CHECK_INT(tests_count_lines(logpath, "tool 'bad2' is left out"), 1);
    CHECK_INT(tests_count_lines(logpath, "tool 'ok' is left out"), 0);
    memset(&r, 0, sizeof(r));
    struct json_object *cp =
        json_tokener_parse("{\"name\":\"ok\",\"arguments\":{\"region\":\"eu west\"}}");
    CHECK_INT(upstream_call(fx.u, "tools/call", cp, 0, on_response, NULL, &r, &c), 0);
    json_object_put(cp);
    CHECK_STR(f->last_hdrs, "MCP-Protocol-Version: 2026-07-28|Mcp-Method: tools/call|Mcp-Name: "
                            "ok|Mcp-Param-Region: eu west|");
    /* a -32020: the tools listed again, then the call once more under a new id */
    int at = f->nsent - 1;
    deliver_fmt(f, sent_id(f, at), "\"error\":{\"code\":-32020,\"message\":\"mismatch\"}");
    spin(fx.loop, 20);
    CHECK_STR(sent_method(f, at + 1), "tools/list");
    deliver_fmt(f, sent_id(f, at + 1), "\"result\":{\"tools\":[]}");
    spin(fx.loop, 20);
    CHECK_STR(sent_method(f, at + 2), "tools/call");
    CHECK(sent_id(f, at + 2) != sent_id(f, at));
    CHECK_STR(f->last_hdrs,
              "MCP-Protocol-Version: 2026-07-28|Mcp-Method: tools/call|Mcp-Name: ok|");
    fake_answer(f, sent_id(f, at + 2));
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    CHECK(r.ok);
    fx_stop(&fx);
    log_free(lg);
    close(logfd);
    lg = saved_lg;
}

/* auto, and server/discover is refused as a legacy server refuses it: initialize on the same
 * connection; the next connect to that origin skips the probe */
static void test_era_legacy(void)
{
    for (int round = 0; round < 2; round++) {
        struct fixture fx;
        fx_open(&fx, &srv_auto_legacy);
        struct fake *f = cur();
        int i = 0;
        if (round == 0) {
            CHECK_STR(sent_method(f, 0), "server/discover");
            deliver_fmt(f, sent_id(f, 0),
                        "\"error\":{\"code\":-32600,\"message\":\"Server not initialized\"}");
            spin(fx.loop, 20);
            i = 1;
        }
        CHECK_STR(sent_method(f, i), "initialize");
        CHECK(!meta_of(f, i, "io.modelcontextprotocol/protocolVersion"));
        char buf[512];
        snprintf(buf, sizeof(buf),
                 "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"result\":{\"protocolVersion\":"
                 "\"2025-11-25\",\"capabilities\":{},\"serverInfo\":{\"name\":\"f\"}}}",
                 sent_id(f, i));
        fake_deliver(f, buf);
        CHECK(wait_for(fx.loop, is_ready, &fx, 2000));
        CHECK(upstream_era(fx.u) == UPSTREAM_ERA_LEGACY);
        CHECK_STR(sent_method(f, i + 1), "notifications/initialized");
        fx_stop(&fx);
    }
}

static bool is_failed(void *ctx)
{
    struct fixture *fx = ctx;
    return fx->rec.last == UPSTREAM_BACKOFF || fx->rec.last == UPSTREAM_FAILED;
}

/* "protocolVersion": "2026-07-28" and a server that is not: the connect fails, saying so */
static void test_era_only_modern(void)
{
    struct fixture fx;
    fx_open(&fx, &srv_only_modern);
    struct fake *f = cur();
    CHECK_STR(sent_method(f, 0), "server/discover");
    deliver_fmt(f, sent_id(f, 0), "\"error\":{\"code\":-32601,\"message\":\"Method not found\"}");
    CHECK(wait_for(fx.loop, is_failed, &fx, 2000));
    CHECK_INT(count_method(f, "initialize"), 0);
    CHECK_CONTAINS(upstream_last_error(fx.u), "\"protocolVersion\": \"2026-07-28\"");
    fx_stop(&fx);
}

static bool file_has(const char *path, const char *needle)
{
    char line[2048];
    bool found = false;
    FILE *fp = fopen(path, "r");
    while (fp && !found && fgets(line, sizeof(line), fp))
        found = strstr(line, needle) != NULL;
    if (fp)
        fclose(fp);
    return found;
}

#define TRACE_CANARY "upstream-trace-canary-51c2"

/* the protocol trace (core/trace.h): every message both ways from the upstream's one send path
 * and its one receive path, a response's latency, a send the transport refused as "error"; a
 * canary in a call's params and in its result never in the file */
static void test_fake_trace(void)
{
    struct fixture fx;
    char path[4200];
    struct trace *tr = NULL;
    struct err e = ERR_INIT;
    memset(&fx, 0, sizeof(fx));
    CHECK_INT(loop_new(&fx.loop), 0);
    fx.prov.p.ops = &fprov_ops;
    fx.prov.loop = fx.loop;
    (void)snprintf(path, sizeof(path), "%s/upstream-trace.jsonl", tests_tmpdir());
    struct trace_opts to = {.loop = fx.loop, .log = lg, .file = path};
    CHECK_INT(trace_new(&to, &tr, &e), 0);
    struct upstream_opts o = {
        .loop = fx.loop,
        .log = lg,
        .server = &server,
        .credentials = &fx.prov.p,
        .transport_open = fake_open,
        .connect_timeout_ms = 5000,
        .request_timeout_ms = 5000,
        .trace = tr,
    };
    CHECK_INT(upstream_new(&o, &handler, &fx.rec, &fx.u, &e), 0);
    upstream_connect(fx.u);
    int one = 1;
    CHECK(wait_for(fx.loop, sent_count_at_least, &one, 2000));
    fake_answer_init(cur());
    CHECK(wait_for(fx.loop, is_ready, &fx, 2000));
    struct fake *f = cur();

    struct res r = {0};
    struct upstream_call *c = NULL;
    struct json_object *params =
        json_tokener_parse("{\"name\":\"echo\",\"arguments\":{\"m\":\"" TRACE_CANARY "\"}}");
    CHECK_INT(upstream_call(fx.u, "tools/call", params, 0, on_response, NULL, &r, &c), 0);
    json_object_put(params);
    CHECK_STR(sent_method(f, 2), "tools/call");
    int64_t call_id = sent_id(f, 2);
    char answer[256];
    (void)snprintf(answer, sizeof(answer),
                   "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"result\":{\"content\":[{\"type\":"
                   "\"text\",\"text\":\"" TRACE_CANARY "\"}]}}",
                   call_id);
    fake_deliver(f, answer);
    CHECK(wait_for(fx.loop, res_done, &r, 2000));
    /* a transport that refuses to send (its queue full) */
    int keep = f->nsent;
    f->nsent = FAKE_MAX_SENT;
    CHECK(upstream_notify(fx.u, "notifications/roots/list_changed", NULL) < 0);
    f->nsent = keep;

    upstream_free(fx.u);
    spin(fx.loop, 5);
    trace_free(tr); /* after the upstream, which records in it */
    loop_free(fx.loop);
    fakes_release();

    CHECK(!file_has(path, TRACE_CANARY));
    CHECK(file_has(path, "\"direction\":\"outbound\",\"server\":\"fake\",\"transport\":"
                         "\"streamable-http\",\"kind\":\"request\",\"status\":\"sent\","
                         "\"method\":\"initialize\""));
    CHECK(file_has(path, "\"kind\":\"notification\",\"status\":\"sent\",\"method\":"
                         "\"notifications/initialized\""));
    CHECK(file_has(path, "\"status\":\"sent\",\"method\":\"tools/call\""));
    char want[128];
    (void)snprintf(want, sizeof(want),
                   "\"kind\":\"response\",\"status\":\"received\",\"id\":%" PRId64 ",", call_id);
    CHECK(file_has(path, want));
    CHECK(file_has(path, ",\"durationMs\":"));
    CHECK(file_has(path, "\"status\":\"error\",\"method\":\"notifications/roots/list_changed\""));
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    lg = log_new("test_upstream_fake", STDERR_FILENO);
    if (!lg)
        return 2;
    if (getenv("UPSTREAM_TEST_DEBUG"))
        log_set_level(lg, LOG_DEBUG);
    test_fn fns[] = {
        test_fake_handshake_and_call,
        test_fake_error_by_tag,
        test_fake_lost,
        test_fake_unauthorized,
        test_fake_unauthorized_same,
        test_fake_expiry_refresh,
        test_skew,
        test_fake_free_cancels,
        test_default_provider,
        test_era_modern,
        test_era_legacy,
        test_era_only_modern,
        test_fake_trace,
    };
    int r = tests_run("test_fake_handshake_and_call, test_fake_error_by_tag, test_fake_lost, "
                      "test_fake_unauthorized, test_fake_unauthorized_same, "
                      "test_fake_expiry_refresh, test_skew, test_fake_free_cancels, "
                      "test_default_provider, test_era_modern, test_era_legacy, "
                      "test_era_only_modern, test_fake_trace",
                      fns, sizeof(fns) / sizeof(fns[0]));
    log_free(lg);
    return r;
}
