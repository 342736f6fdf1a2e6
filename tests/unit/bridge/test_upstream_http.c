/* test_upstream_http.c - MCP client sessions over HTTP against a tiny Streamable HTTP server
 * (libmicrohttpd on 127.0.0.1, its own thread; httpd.h), with the fixture of
 * upstream_fixture.h.
 *
 * Covered: headers expanded at each connect, a lost session re-initialized and the request
 * sent again once, the headers hook asked again with force after a 401 to initialize, a 401 in
 * the middle of a session answered with fresh headers in the same session, a refused
 * connection, the 2024-11-05 fallback, a GET stream's 404. */
#include <microhttpd.h>

#include "httpd.h"
#include "upstream_fixture.h"

/* ==== over HTTP ======================================================================== */

#define F 128

struct hseen {
    pthread_mutex_t mu;
    int sid_counter;
    char valid[F];
    int inits, deletes, stale, gets, calls;
    int get_stale;  /* /getstale: GETs answered 404 */
    char auth[F];   /* Authorization of the last initialize */
    char x_test[F]; /* X-Test of the last initialize */
    char del_sid[F];
    char call_ids[F]; /* ids of tools/call posts, comma-separated */
    int unauth;       /* /reauth: tools/call answered 401 (X-Test other than "forced") */
};

static struct hseen hs = {.mu = PTHREAD_MUTEX_INITIALIZER};
static struct MHD_Daemon *daemon_;
static unsigned port;

struct upload {
    char *data;
    size_t len;
};

/* the legacy 2024-11-05 server at /legacy/sse: the GET stream carries the endpoint event and
 * every answer; a POST to the SSE URL gets 405 (so the client falls back by itself) */
struct lserver {
    pthread_cond_t cv;
    char out[16384]; /* events waiting for the stream */
    size_t out_len;
    bool end; /* end the stream once out is sent */
    bool stopping;
    unsigned gen; /* a newer GET ends older streams */
    int gets, fallback_posts, messages;
};
static struct lserver ls = {.cv = PTHREAD_COND_INITIALIZER};

struct lstream {
    char head[128];
    size_t len, off;
    unsigned gen;
};

/* called with hs.mu held */
static void ls_push(const char *data)
{
    int n = snprintf(ls.out + ls.out_len, sizeof(ls.out) - ls.out_len,
                     "event: message\ndata: %s\n\n", data);
    if (n > 0 && (size_t)n < sizeof(ls.out) - ls.out_len)
        ls.out_len += (size_t)n;
    pthread_cond_broadcast(&ls.cv);
}

static ssize_t ls_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct lstream *st = cls;
    ssize_t ret = 0;
    (void)pos;
    if (st->off < st->len)
        return (ssize_t)httpd_copy_out(buf, max, st->head, st->len, &st->off);
    pthread_mutex_lock(&hs.mu);
    for (;;) {
        if (ls.stopping || st->gen != ls.gen || (ls.end && !ls.out_len)) {
            ret = MHD_CONTENT_READER_END_OF_STREAM;
            break;
        }
        if (ls.out_len) {
            ret = (ssize_t)httpd_pop(buf, max, ls.out, &ls.out_len);
            break;
        }
        ret = httpd_idle(&ls.cv, &hs.mu, buf, max);
        if (ret > 0)
            break;
    }
    pthread_mutex_unlock(&hs.mu);
    return ret;
}

static enum MHD_Result ls_get(struct MHD_Connection *c)
{
    struct lstream *st = calloc(1, sizeof(*st));
    if (!st)
        return MHD_NO;
    pthread_mutex_lock(&hs.mu);
    ls.gets++;
    st->gen = ++ls.gen;
    ls.end = false;
    ls.out_len = 0;
    pthread_cond_broadcast(&ls.cv);
    pthread_mutex_unlock(&hs.mu);
    snprintf(st->head, sizeof(st->head), "event: endpoint\ndata: /legacy/messages\n\n");
    st->len = strlen(st->head);
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, ls_read, st, free);
    if (!r) {
        free(st);
        return MHD_NO;
    }
    return httpd_queue(c, 200, "text/event-stream", NULL, r);
}

static enum MHD_Result ls_message(struct MHD_Connection *c, const struct upload *up)
{
    struct json_object *o = json_tokener_parse(up->data ? up->data : ""), *id = NULL;
    const char *method = json_get_string(o, "method");
    char body[512];
    (void)json_object_object_get_ex(o, "id", &id);
    pthread_mutex_lock(&hs.mu);
    ls.messages++;
    if (method && id && strcmp(method, "initialize") == 0) {
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":"
                 "\"2024-11-05\",\"capabilities\":{},\"serverInfo\":{\"name\":\"old\"}}}",
                 json_object_to_json_string(id));
        ls_push(body);
    } else if (method && id && strcmp(method, "tools/call") == 0) {
        const char *name = json_get_string(json_get_object(o, "params"), "name");
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":"
                 "\"text\",\"text\":\"%s\"}]}}",
                 json_object_to_json_string(id), name ? name : "");
        ls_push(body);
        if (name && strcmp(name, "end") == 0)
            ls.end = true; /* the connection is over after this answer */
    }
    pthread_mutex_unlock(&hs.mu);
    json_object_put(o);
    return httpd_reply(c, 202, "text/plain", "Accepted", NULL);
}

static enum MHD_Result post(struct MHD_Connection *c, const char *url, const struct upload *up)
{
    struct json_object *o = json_tokener_parse(up->data ? up->data : "");
    struct json_object *id = NULL;
    const char *method = json_get_string(o, "method");
    (void)json_object_object_get_ex(o, "id", &id);
    const char *sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
    enum MHD_Result ret;
    char body[512];

    pthread_mutex_lock(&hs.mu);
    if (!method) {
        ret = httpd_reply(c, 202, NULL, "", NULL);
    } else if (strcmp(method, "initialize") == 0) {
        hs.inits++;
        httpd_header(c, "Authorization", hs.auth, F);
        httpd_header(c, "X-Test", hs.x_test, F);
        if (strcmp(url, "/auth") == 0 && strcmp(hs.x_test, "forced") != 0) {
            ret = httpd_reply(c, 401, "text/plain", "who are you", NULL);
        } else {
            char nsid[32];
            snprintf(nsid, sizeof(nsid), "s%d", ++hs.sid_counter);
            snprintf(hs.valid, F, "%s", nsid);
            snprintf(body, sizeof(body),
                     "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":"
                     "\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":"
                     "\"http\"}}}",
                     json_object_to_json_string(id));
            ret = httpd_reply(c, 200, "application/json", body, nsid);
        }
    } else if (!id) {
        ret = httpd_reply(c, 202, NULL, "", NULL);
    } else if (!sid || strcmp(sid, hs.valid) != 0) {
        hs.stale++;
        ret = httpd_reply(c, sid ? 404 : 400, "text/plain", "no such session", NULL);
    } else if (strcmp(method, "tools/call") == 0) {
        const char *name = json_get_string(json_get_object(o, "params"), "name");
        size_t n = strlen(hs.call_ids);
        snprintf(hs.call_ids + n, F - n, "%s,", json_object_to_json_string(id));
        hs.calls++;
        char xt[F];
        httpd_header(c, "X-Test", xt, F);
        if (strcmp(url, "/reauth") == 0 && strcmp(xt, "forced") != 0) {
            hs.unauth++;
            ret = httpd_reply(c, 401, "text/plain", "token expired", NULL);
        } else if (name && strcmp(name, "always404") == 0) {
            hs.stale++;
            ret = httpd_reply(c, 404, "text/plain", "no such session", NULL);
        } else {
            snprintf(body, sizeof(body),
                     "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\","
                     "\"text\":\"%s\"}]}}",
                     json_object_to_json_string(id), name ? name : "");
            ret = httpd_reply(c, 200, "application/json", body, NULL);
            if (name && strcmp(name, "forget") == 0)
                hs.valid[0] = 0; /* the server restarted: sessions gone */
        }
    } else {
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,\"message\":\"no\"}}",
                 json_object_to_json_string(id));
        ret = httpd_reply(c, 200, "application/json", body, NULL);
    }
    pthread_mutex_unlock(&hs.mu);
    json_object_put(o);
    return ret;
}

static enum MHD_Result hhandler(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
    struct upload *up = *con_cls;
    (void)cls, (void)version;

    if (!up) {
        up = calloc(1, sizeof(*up));
        if (!up)
            return MHD_NO;
        *con_cls = up;
        return MHD_YES;
    }
    if (*upload_data_size)
        return httpd_upload_append(&up->data, &up->len, upload_data, upload_data_size) ? MHD_YES
                                                                                       : MHD_NO;
    if (strcmp(url, "/legacy/sse") == 0) {
        if (strcmp(method, "GET") == 0)
            return ls_get(conn);
        pthread_mutex_lock(&hs.mu);
        ls.fallback_posts++;
        pthread_mutex_unlock(&hs.mu);
        return httpd_reply(conn, 405, "text/plain", "use the SSE transport", NULL);
    }
    if (strcmp(url, "/legacy/messages") == 0 && strcmp(method, "POST") == 0)
        return ls_message(conn, up);
    if (strcmp(method, "POST") == 0)
        return post(conn, url, up);
    if (strcmp(method, "GET") == 0) {
        const char *sid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Mcp-Session-Id");
        pthread_mutex_lock(&hs.mu);
        hs.gets++;
        bool stale = strcmp(url, "/getstale") == 0 && !hs.get_stale && sid;
        if (stale) { /* the server restarted: the session is gone, and the GET says so */
            hs.get_stale++;
            hs.valid[0] = 0;
        }
        pthread_mutex_unlock(&hs.mu);
        if (stale)
            return httpd_reply(conn, 404, "text/plain", "no such session", NULL);
        return httpd_reply(conn, 405, "text/plain", "no stream", NULL);
    }
    if (strcmp(method, "DELETE") == 0) {
        pthread_mutex_lock(&hs.mu);
        hs.deletes++;
        httpd_header(conn, "Mcp-Session-Id", hs.del_sid, F);
        pthread_mutex_unlock(&hs.mu);
        return httpd_reply(conn, 200, NULL, "", NULL);
    }
    return httpd_reply(conn, 405, NULL, "", NULL);
}

static void hcompleted(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    struct upload *up = *con_cls;
    (void)cls, (void)conn, (void)toe;
    if (up) {
        free(up->data);
        free(up);
        *con_cls = NULL;
    }
}

static int hs_int(const int *field)
{
    pthread_mutex_lock(&hs.mu);
    int v = *field;
    pthread_mutex_unlock(&hs.mu);
    return v;
}

static bool deletes_seen(void *ctx)
{
    return hs_int(&hs.deletes) >= *(int *)ctx;
}

static void http_def(struct srv_def *d, const char *name, char *url, char **headers)
{
    memset(d, 0, sizeof(*d));
    d->s.name = (char *)name;
    d->s.source = "test";
    d->s.transport = MCP_TRANSPORT_HTTP;
    d->s.url = url;
    d->s.args = empty_v;
    d->s.env = empty_v;
    d->s.headers = headers ? headers : empty_v;
}

/* One session's story, step after step on the same server state (over 80 lines: split, each
 * part would have to rebuild the state the previous one left). */
static void test_http_session(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    char url[128];
    char *headers[] = {"Authorization: Bearer ${TOKEN}", NULL};
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/mcp", port);
    http_def(&d, "web", url, headers);
    token_value = "tok-one";
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    CHECK_STR(upstream_protocol_version(u), "2025-11-25");
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.auth, "Bearer tok-one");
    CHECK_STR(hs.valid, "s1");
    pthread_mutex_unlock(&hs.mu);

    struct res a, b;
    call_tool(u, "echo", NULL, NULL, 5000, &a);
    CHECK(wait_res(r.loop, &a, 5000));
    CHECK_INT(a.error, 0);
    CHECK_STR(a.text, "echo");

    /* the server forgets the session: the next call gets 404, the upstream re-initializes and
     * sends it again, invisibly */
    call_tool(u, "forget", NULL, NULL, 5000, &b);
    CHECK(wait_res(r.loop, &b, 5000));
    CHECK_INT(b.error, 0);
    res_release(&a);
    call_tool(u, "echo", NULL, NULL, 5000, &a);
    CHECK(wait_res(r.loop, &a, 10000));
    CHECK_INT(a.error, 0);
    CHECK_STR(a.text, "echo");
    CHECK_INT(hs_int(&hs.inits), 2);
    /* the server/discover probe (refused 400 as a legacy server does) and the lost session */
    CHECK_INT(hs_int(&hs.stale), 2);
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.valid, "s2");
    char want[F];
    snprintf(want, sizeof(want), "%lld,%lld,%lld,", (long long)(a.id - 2), (long long)(a.id - 1),
             (long long)a.id);
    /* echo, forget, then the lost echo never reached tools/call: only its resend counts */
    CHECK_STR(hs.call_ids, want);
    pthread_mutex_unlock(&hs.mu);
    CHECK_INT(state_count(&r, UPSTREAM_BACKOFF), 0);
    CHECK_INT(state_count(&r, UPSTREAM_READY), 1);
    CHECK_INT(upstream_generation(u), 1);

    /* sent again only once */
    struct res c;
    call_tool(u, "always404", NULL, NULL, 5000, &c);
    CHECK(wait_res(r.loop, &c, 10000));
    CHECK_INT(c.error, -ECONNRESET);
    CHECK_CONTAINS(c.message, "server 'web'");
    CHECK_INT(hs_int(&hs.inits), 3);
    CHECK_INT(upstream_state(u), UPSTREAM_READY);

    /* headers are expanded at each connect: a rotated value is picked up */
    token_value = "tok-two";
    upstream_disconnect(u);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 2, 10000));
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.auth, "Bearer tok-two");
    pthread_mutex_unlock(&hs.mu);
    int one = 1;
    CHECK(wait_for(r.loop, deletes_seen, &one, 5000)); /* the old session was ended */
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.del_sid, "s3");
    pthread_mutex_unlock(&hs.mu);

    /* close: DELETE of the session */
    upstream_close(u);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    CHECK_INT(hs_int(&hs.deletes), 2);
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.del_sid, "s4");
    pthread_mutex_unlock(&hs.mu);
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&a);
    res_release(&b);
    res_release(&c);
    rec_release(&r);
}

/* the [seam] hook: asynchronous headers, asked again with force after a 401 */
struct hook {
    struct loop *loop;
    struct loop_timer *t;
    int calls, forced;
    upstream_headers_done_fn done;
    void *done_ud;
    bool force;
};

static void hook_fire(struct loop_timer *t, void *userdata)
{
    struct hook *h = userdata;
    (void)t;
    const char *plain[] = {"X-Test: plain", NULL}, *forced[] = {"X-Test: forced", NULL};
    h->done(h->done_ud, 0, h->force ? forced : plain, NULL);
}

static int hook_fn(void *userdata, const struct mcp_server *server, bool force,
                   upstream_headers_done_fn done, void *done_ud)
{
    struct hook *h = userdata;
    (void)server;
    h->calls++;
    h->forced += force;
    h->force = force;
    h->done = done;
    h->done_ud = done_ud;
    if (h->t) {
        loop_timer_rearm(h->t, 0);
        return 0;
    }
    return loop_timer_add(h->loop, 0, hook_fire, h, &h->t);
}

static void test_http_headers_hook(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/auth", port);
    http_def(&d, "hooked", url, NULL);
    struct hook h = {.loop = r.loop};
    struct upstream_opts o = {
        .loop = r.loop, .log = lg, .server = &d.s, .headers_fn = hook_fn, .headers_userdata = &h};
    struct upstream *u = NULL;
    CHECK_INT(upstream_new(&o, &handler, &r, &u, NULL), 0);
    r.u = u;
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    CHECK_INT(h.calls, 2);
    CHECK_INT(h.forced, 1);
    CHECK_INT(state_count(&r, UPSTREAM_BACKOFF), 0);
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.x_test, "forced");
    pthread_mutex_unlock(&hs.mu);
    upstream_free(u);
    loop_timer_cancel(h.t);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

/* a 401 in the middle of a session: the call is parked, the hook asked again with force, and
 * the call sent again once with its new header, in the same session */
static void test_http_unauthorized_mid_session(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/reauth", port);
    http_def(&d, "reauth", url, NULL);
    struct hook h = {.loop = r.loop};
    struct upstream_opts o = {
        .loop = r.loop, .log = lg, .server = &d.s, .headers_fn = hook_fn, .headers_userdata = &h};
    struct upstream *u = NULL;
    CHECK_INT(upstream_new(&o, &handler, &r, &u, NULL), 0);
    r.u = u;
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    CHECK_INT(h.forced, 0);
    pthread_mutex_lock(&hs.mu);
    int inits = hs.inits, unauth = hs.unauth;
    pthread_mutex_unlock(&hs.mu);

    struct res a;
    call_tool(u, "hello", NULL, NULL, 5000, &a);
    CHECK(wait_res(r.loop, &a, 10000));
    CHECK_INT(a.error, 0);
    CHECK_STR(a.text, "hello");
    CHECK_INT(h.calls, 2);
    CHECK_INT(h.forced, 1);
    pthread_mutex_lock(&hs.mu);
    CHECK_INT(hs.unauth, unauth + 1);
    CHECK_INT(hs.inits, inits); /* no new MCP session */
    pthread_mutex_unlock(&hs.mu);
    CHECK_INT(state_count(&r, UPSTREAM_READY), 1);
    CHECK_INT(state_count(&r, UPSTREAM_BACKOFF), 0);

    /* the next call goes with the new header at once */
    struct res b;
    call_tool(u, "again", NULL, NULL, 5000, &b);
    CHECK(wait_res(r.loop, &b, 10000));
    CHECK_INT(b.error, 0);
    CHECK_STR(b.text, "again");
    pthread_mutex_lock(&hs.mu);
    CHECK_INT(hs.unauth, unauth + 1);
    pthread_mutex_unlock(&hs.mu);
    upstream_free(u);
    loop_timer_cancel(h.t);
    CHECK(loop_drained(r.loop));
    res_release(&a);
    res_release(&b);
    rec_release(&r);
}

/* nothing listens: the connect fails, with the reason */
static void test_http_refused(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    http_def(&d, "down", "http://127.0.0.1:1/mcp", NULL);
    struct upstream *u = start(&r, &d.s, true, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_FAILED, 1, 10000));
    CHECK_INT(r.errors[r.nstates - 1], -ENOTCONN);
    CHECK_STR(r.msgs[r.nstates - 1], "server 'down': initialize failed: connection refused");
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

/* a 2024-11-05 server: the fallback, calls answered on the event stream, and the end of that
 * stream is the end of the connection: reconnected */
static void test_http_legacy(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/legacy/sse", port);
    http_def(&d, "old", url, NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    CHECK_STR(upstream_protocol_version(u), "2024-11-05");
    CHECK_INT(hs_int(&ls.fallback_posts), 1);
    CHECK_INT(hs_int(&ls.gets), 1);

    struct res a, e;
    call_tool(u, "echo", NULL, NULL, 5000, &a);
    CHECK(wait_res(r.loop, &a, 5000));
    CHECK_INT(a.error, 0);
    CHECK_STR(a.text, "echo");

    call_tool(u, "end", NULL, NULL, 5000, &e);
    CHECK(wait_res(r.loop, &e, 5000));
    CHECK_INT(e.error, 0);
    CHECK_STR(e.text, "end");
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 1, 5000));
    CHECK_CONTAINS(r.msgs[r.nstates - 1], "server 'old': the event stream ended");
    CHECK(wait_state(&r, UPSTREAM_READY, 2, 10000));
    CHECK_INT(upstream_generation(u), 2);
    CHECK_INT(hs_int(&ls.gets), 2);
    res_release(&a);
    call_tool(u, "echo", NULL, NULL, 5000, &a);
    CHECK(wait_res(r.loop, &a, 5000));
    CHECK_INT(a.error, 0);

    upstream_close(u);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&a);
    res_release(&e);
    rec_release(&r);
}

static bool inits_seen(void *ctx)
{
    return hs_int(&hs.inits) >= *(int *)ctx;
}

/* a 404 on the GET stream: the session is gone, re-initialized at once (not at the next call),
 * so that what the server sends on its own is not lost meanwhile */
static void test_http_get_stale(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/getstale", port);
    http_def(&d, "getstale", url, NULL);
    int before = hs_int(&hs.inits);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    int want = before + 2;
    CHECK(wait_for(r.loop, inits_seen, &want, 5000));
    CHECK_INT(hs_int(&hs.get_stale), 1);
    CHECK_INT(upstream_state(u), UPSTREAM_READY);
    struct res a;
    call_tool(u, "echo", NULL, NULL, 5000, &a);
    CHECK(wait_res(r.loop, &a, 5000));
    CHECK_INT(a.error, 0);
    CHECK_INT(hs_int(&hs.inits), before + 2);
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&a);
    rec_release(&r);
}

static void test_http(void)
{
    test_http_refused();
    daemon_ = httpd_start(hhandler, NULL, hcompleted, 0, &port);
    test_http_session();
    test_http_headers_hook();
    test_http_unauthorized_mid_session();
    test_http_get_stale();
    test_http_legacy();
    pthread_mutex_lock(&hs.mu);
    ls.stopping = true;
    pthread_cond_broadcast(&ls.cv);
    pthread_mutex_unlock(&hs.mu);
    MHD_stop_daemon(daemon_);
}

UPSTREAM_TEST_MAIN(test_http)
