/* test_http_legacy.c - the HTTP upstream's 2024-11-05 HTTP+SSE transport against a legacy
 * server (http_fixture.h): the fallback after an initialize refused 400, 404 or 405 (not 401),
 * the endpoint event (relative, absolute, same origin only), POSTs whose bodies are ignored but
 * whose status counts, the stream as the connection, messages that wait for the endpoint (in
 * order, bounded, failed when it does not come), and the transport from the start. */
#include "http_fixture.h"
#include "httpd.h" /* also named here: CMake links libmicrohttpd to tests that include it */

/* the legacy 2024-11-05 server: one SSE connection at a time */
struct legacy_seen {
    unsigned init_status; /* what a POST to the SSE URL gets */
    char endpoint[160];   /* the endpoint event's data, "" for none */
    struct fx_queue q;    /* events waiting for the SSE stream; q.gen: streams of an earlier
                           * test end at once */
    int gets, sse_posts, messages;
    char get_accept[F], get_auth[F], post_auth[F], post_path[F], post_sid[F];
    char methods[256]; /* POSTed to the endpoint, comma-separated */
};
static struct legacy_seen legacy;

/* ---- the legacy server ------------------------------------------------------------------ */

static enum MHD_Result legacy_get(struct MHD_Connection *c)
{
    char head[256] = "";
    unsigned gen;

    pthread_mutex_lock(&fx_mu);
    gen = legacy.q.gen;
    legacy.gets++;
    httpd_header(c, "Accept", legacy.get_accept, F);
    httpd_header(c, "Authorization", legacy.get_auth, F);
    if (legacy.endpoint[0])
        snprintf(head, sizeof(head), "event: endpoint\ndata: %s\n\n", legacy.endpoint);
    pthread_mutex_unlock(&fx_mu);
    return fx_reply_stream(c, head, &legacy.q, gen, false);
}

static enum MHD_Result legacy_message(struct MHD_Connection *c, const char *url,
                                      const struct upload *u)
{
    char method[F], tool[F];
    const char *sid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sessionId");
    enum MHD_Result ret;

    parse_post(u, method, tool);
    pthread_mutex_lock(&fx_mu);
    legacy.messages++;
    httpd_header(c, "Authorization", legacy.post_auth, F);
    snprintf(legacy.post_path, F, "%s", url);
    snprintf(legacy.post_sid, F, "%s", sid ? sid : "");
    size_t n = strlen(legacy.methods);
    snprintf(legacy.methods + n, sizeof(legacy.methods) - n, "%s%s", n ? "," : "", method);
    if (strcmp(method, "initialize") == 0) {
        fx_queue_push(&legacy.q,
                      "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n");
        ret = httpd_reply(c, 202, "text/plain", "Accepted", NULL); /* not JSON: ignored */
    } else if (strcmp(method, "tools/list") == 0) {
        fx_queue_push(
            &legacy.q,
            "id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n");
        /* a body that would be delivered in the Streamable transport: must be ignored */
        ret = httpd_reply(c, 200, "application/json",
                          "{\"jsonrpc\":\"2.0\",\"id\":98,\"result\":{}}", NULL);
    } else if (strcmp(method, "fail") == 0) {
        ret = httpd_reply(c, 500, "text/plain", "broken", NULL);
    } else if (strcmp(method, "end/stream") == 0) {
        legacy.q.end = true;
        pthread_cond_broadcast(&fx_cv);
        ret = httpd_reply(c, 202, "text/plain", "Accepted", NULL);
    } else {
        ret = httpd_reply(c, 202, "text/plain", "Accepted", NULL);
    }
    pthread_mutex_unlock(&fx_mu);
    return ret;
}

static enum MHD_Result fx_route(struct MHD_Connection *conn, const char *url, const char *method,
                                struct upload *u)
{
    if (ends_with(url, "/messages") && strcmp(method, "POST") == 0)
        return legacy_message(conn, url, u);
    if (ends_with(url, "/sse")) {
        if (strcmp(method, "GET") == 0)
            return legacy_get(conn);
        pthread_mutex_lock(&fx_mu);
        legacy.sse_posts++;
        unsigned status = legacy.init_status;
        pthread_mutex_unlock(&fx_mu);
        return httpd_reply(conn, status, "text/plain", "use the SSE transport", NULL);
    }
    return httpd_reply(conn, 405, NULL, "", NULL);
}

/* ---- legacy HTTP+SSE (2024-11-05) ------------------------------------------------------ */

enum lexpect {
    L_WORKS,        /* the whole exchange, then the server ends the stream */
    L_UNAUTHORIZED, /* 401: no fallback */
    L_CROSS_ORIGIN, /* the endpoint is refused */
    L_NO_ENDPOINT,  /* none comes */
};

struct lclient {
    struct loop *loop;
    struct http_conn *u;
    enum lexpect expect;
    bool got1, got2, legacy_at_1, ended;
    int open_stream_rc;
    int decoy, others;
    int init_error, fail_error, other_errors;
    int closes, close_reason;
    int64_t t0, close_at;
    int want_messages;
    struct loop_timer *wait;
};

static void l_send(struct lclient *c, const char *msg, unsigned flags, uint64_t tag)
{
    CHECK_INT(http_conn_send(c->u, msg, strlen(msg), flags, tag, NULL), 0);
}

static void l_next(struct lclient *c)
{
    if (c->expect == L_UNAUTHORIZED && c->init_error)
        loop_quit(c->loop, 0);
    if (c->expect == L_WORKS && c->got2 && c->fail_error && !c->ended) {
        c->ended = true;
        l_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"end/stream\"}", 0, 0);
    }
}

static void l_message(const char *msg, size_t len, void *userdata)
{
    struct lclient *c = userdata;
    int id = msg_id(msg, len, NULL);

    if (id == 1) {
        c->got1 = true;
        c->legacy_at_1 = http_conn_is_legacy(c->u);
        c->open_stream_rc = http_conn_open_stream(c->u);
        l_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 0, 0);
        l_send(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", 0, 2);
        l_send(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"fail\"}", 0, 3);
    } else if (id == 2) {
        c->got2 = true;
    } else if (id == 98) {
        c->decoy++;
    } else {
        c->others++;
    }
    l_next(c);
}

static void l_error(int error, uint64_t tag, void *userdata)
{
    struct lclient *c = userdata;
    int id = tag ? (int)tag : -1;

    if (id == 1)
        c->init_error = error;
    else if (id == 3)
        c->fail_error = error;
    else
        c->other_errors++;
    l_next(c);
}

/* POSTs of 202 are not reported: wait (bounded by the guard) until the server has them all */
static void l_wait(struct loop_timer *t, void *userdata)
{
    struct lclient *c = userdata;
    pthread_mutex_lock(&fx_mu);
    bool all = legacy.messages >= c->want_messages;
    pthread_mutex_unlock(&fx_mu);
    if (all)
        loop_quit(c->loop, 0);
    else
        loop_timer_rearm(t, 10);
}

static void l_close(int reason, void *userdata)
{
    struct lclient *c = userdata;
    c->closes++;
    c->close_reason = reason;
    c->close_at = loop_now(c->loop);
    if (c->wait)
        loop_quit(c->loop, 0);
    else
        CHECK_INT(loop_timer_add(c->loop, 0, l_wait, c, &c->wait), 0);
}

/* A new legacy server for the next exchange: POSTs to the SSE URL get init_status, the stream
 * announces endpoint ("" for none; "PORT" becomes the server's port); the streams of the
 * exchange before end. */
static void legacy_reset(unsigned init_status, const char *endpoint)
{
    pthread_mutex_lock(&fx_mu);
    unsigned gen = legacy.q.gen;
    memset(&legacy, 0, sizeof(legacy));
    legacy.q.gen = gen + 1;
    pthread_cond_broadcast(&fx_cv);
    legacy.init_status = init_status;
    const char *mark = strstr(endpoint, "PORT");
    if (mark)
        snprintf(legacy.endpoint, sizeof(legacy.endpoint), "%.*s%u%s", (int)(mark - endpoint),
                 endpoint, fx_port, mark + 4);
    else
        snprintf(legacy.endpoint, sizeof(legacy.endpoint), "%s", endpoint);
    pthread_mutex_unlock(&fx_mu);
}

/* What one legacy exchange (run_legacy) must have done, as c->expect says. */
static void l_check(const struct lclient *cl, const char *path, bool legacy_sse, int64_t timeout_ms)
{
    const struct lclient c = *cl;
    enum lexpect expect = c.expect;

    pthread_mutex_lock(&fx_mu);
    CHECK_INT(legacy.sse_posts, legacy_sse ? 0 : 1);
    switch (expect) {
    case L_WORKS:
        CHECK(c.got1);
        CHECK(c.legacy_at_1);
        CHECK_INT(c.open_stream_rc, 0);
        CHECK(c.got2);
        CHECK_INT(c.decoy, 0);               /* a POST's body is ignored */
        CHECK_INT(c.fail_error, -EREMOTEIO); /* a POST's status is not */
        CHECK_INT(c.init_error, 0);          /* "Accepted" as text/plain: fine */
        CHECK_INT(c.closes, 1);
        CHECK_INT(c.close_reason, -ECONNRESET); /* the stream is the connection */
        CHECK_INT(legacy.gets, 1);
        CHECK_STR(legacy.get_accept, "text/event-stream");
        CHECK_STR(legacy.get_auth, "Bearer s3cret");
        CHECK_STR(legacy.post_auth, "Bearer s3cret");
        CHECK_STR(legacy.post_sid, "abc");
        CHECK(ends_with(legacy.post_path, "/messages"));
        CHECK_STR(legacy.post_path, strstr(path, "/x/") ? "/x/messages" : "/messages");
        CHECK_INT(legacy.messages, legacy_sse ? 6 : 5);
        /* each POST on its own connection: only the first is sure to come first */
        if (legacy_sse)
            CHECK_CONTAINS(legacy.methods, "early");
        else
            CHECK(strncmp(legacy.methods, "initialize,", 11) == 0);
        CHECK_CONTAINS(legacy.methods, "initialize");
        CHECK_CONTAINS(legacy.methods, "notifications/initialized");
        CHECK_CONTAINS(legacy.methods, "tools/list");
        CHECK_CONTAINS(legacy.methods, "fail");
        CHECK_CONTAINS(legacy.methods, "end/stream");
        break;
    case L_UNAUTHORIZED:
        CHECK_INT(c.init_error, -EACCES);
        CHECK(!http_conn_is_legacy(c.u));
        CHECK_INT(c.closes, 0);
        CHECK_INT(legacy.gets, 0);
        break;
    case L_CROSS_ORIGIN:
        CHECK_INT(c.init_error, -EPROTO);
        CHECK_INT(c.closes, 1);
        CHECK_INT(c.close_reason, -EPROTO);
        CHECK_INT(legacy.gets, 1);
        CHECK_INT(legacy.messages, 0); /* nothing went to the other origin */
        break;
    case L_NO_ENDPOINT:
        CHECK_INT(c.init_error, -ETIMEDOUT);
        CHECK_INT(c.closes, 1);
        CHECK_INT(c.close_reason, -ETIMEDOUT);
        CHECK(c.close_at - c.t0 >= timeout_ms - 1);
        CHECK(c.close_at - c.t0 < timeout_ms + 2000);
        CHECK_INT(legacy.messages, 0);
        break;
    }
    if (expect != L_WORKS)
        CHECK_INT(c.other_errors, legacy_sse ? 1 : 0); /* "early" fails with initialize */
    else
        CHECK_INT(c.other_errors, 0);
    CHECK_INT(c.others, 0);
    pthread_mutex_unlock(&fx_mu);
}

/* Runs one legacy exchange against path ("/sse" or "/x/sse") whose POSTs get init_status and
 * whose stream announces endpoint ("" for none; "PORT" becomes the server's port). */
static void run_legacy(const char *path, unsigned init_status, const char *endpoint,
                       bool legacy_sse, int64_t timeout_ms, enum lexpect expect)
{
    struct lclient c = {.expect = expect,
                        .want_messages = expect != L_WORKS ? 0
                                         : legacy_sse      ? 6
                                                           : 5};
    struct loop_timer *t = NULL;
    char url[128];
    const char *headers[] = {"Authorization: Bearer s3cret", NULL};
    const struct http_conn_handler h = {
        .on_message = l_message, .on_error = l_error, .on_close = l_close};

    fprintf(stderr, "legacy: %s, initialize answered %u, endpoint '%s'%s\n", path, init_status,
            endpoint, legacy_sse ? ", SSE from the start" : "");
    fx_url(url, sizeof(url), path); /* the server runs: its port is known */
    legacy_reset(init_status, endpoint);

    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {
        .url = url, .headers = headers, .timeout_ms = timeout_ms, .legacy_sse = legacy_sse};
    CHECK_INT(http_conn_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK(http_conn_is_legacy(c.u) == legacy_sse);
    CHECK_INT(loop_timer_add(c.loop, 10000, fx_guard, &c, &t), 0);
    c.t0 = loop_now(c.loop);
    l_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
           HTTP_CONN_INITIALIZE, 1);
    if (legacy_sse) /* before the endpoint is known: waits for it, in order */
        l_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"early\"}", 0, 0);

    CHECK_INT(loop_run(c.loop), 0);

    l_check(&c, path, legacy_sse, timeout_ms);

    /* the connection is over: later messages fail, the stream is not reopened */
    if (c.closes) {
        c.expect = L_UNAUTHORIZED;
        c.init_error = 0;
        l_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0, 1);
        CHECK_INT(loop_run(c.loop), 0);
        CHECK_INT(c.init_error, c.close_reason);
        CHECK_INT(c.closes, 1);
        pthread_mutex_lock(&fx_mu);
        CHECK_INT(legacy.messages, c.want_messages);
        pthread_mutex_unlock(&fx_mu);
    }

    loop_timer_cancel(c.wait);
    loop_timer_cancel(t);
    http_conn_free(c.u);
    loop_free(c.loop);
}

/* messages waiting for a legacy endpoint are bounded */
static void test_legacy_queue_bound(void)
{
    struct loop *l = NULL;
    struct http_conn *u = NULL;
    char url[128];
    const char *ping = "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}";
    const struct http_conn_handler h = {.on_message = l_message};

    fx_url(url, sizeof(url), "/sse");
    CHECK_INT(loop_new(&l), 0);
    struct http_conn_spec spec = {.url = url, .legacy_sse = true};
    CHECK_INT(http_conn_new(l, &spec, &h, NULL, &u, NULL), 0);
    int k = 0;
    for (int i = 0; i < HTTP_CONN_PENDING_MAX && k == 0; i++)
        k = http_conn_send(u, ping, strlen(ping), 0, 0, NULL);
    CHECK_INT(k, 0);
    CHECK_INT(http_conn_send(u, ping, strlen(ping), 0, 0, NULL), -ENOBUFS);
    CHECK_INT(http_conn_open_stream(u), 0); /* legacy: a no-op */
    http_conn_free(u);
    loop_free(l);
}

static void test_legacy(void)
{
    run_legacy("/sse", 405, "/messages?sessionId=abc", false, 5000, L_WORKS);
    run_legacy("/sse", 404, "http://127.0.0.1:PORT/messages?sessionId=abc", false, 5000, L_WORKS);
    run_legacy("/x/sse", 400, "messages?sessionId=abc", false, 5000, L_WORKS);
    run_legacy("/sse", 401, "/messages?sessionId=abc", false, 5000, L_UNAUTHORIZED);
    run_legacy("/sse", 405, "http://localhost:PORT/messages?sessionId=abc", false, 5000,
               L_CROSS_ORIGIN);
    run_legacy("/sse", 405, "http://127.0.0.1:1/messages?sessionId=abc", false, 5000,
               L_CROSS_ORIGIN);
    run_legacy("/sse", 405, "/messages?sessionId=abc", true, 5000, L_WORKS);
    run_legacy("/sse", 405, "", true, 300, L_NO_ENDPOINT);
}

TESTS_MAIN(test_legacy, test_legacy_queue_bound)
