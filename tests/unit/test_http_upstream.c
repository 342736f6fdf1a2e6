/* test_http_upstream.c - the Streamable HTTP upstream against a tiny Streamable HTTP server
 * (libmicrohttpd on 127.0.0.1, port 0, its own thread), all driven by loop_run */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <json-c/json.h>
#include <microhttpd.h>

#include "http_upstream.h"
#include "loop.h"
#include "tests.h"

#define F 64

/* what the server saw; written by its thread, read after loop_run */
struct seen {
    pthread_mutex_t mu;
    char init_sid[F];
    char notif_sid[F], notif_proto[F];
    char tools_sid[F], tools_proto[F], tools_accept[F], tools_ctype[F], tools_auth[F];
    int gets;
    char get1_lei[F], get2_lei[F], get_accept[F], get_sid[F];
    int deletes;
    char del_sid[F];
};

static struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
static struct MHD_Daemon *daemon_;
static unsigned port;

struct upload {
    char *data;
    size_t len;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void rec(struct MHD_Connection *c, const char *name, char out[F])
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    snprintf(out, F, "%s", v ? v : "");
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *ctype,
                             const char *body, const char *sid)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (ctype)
        (void)MHD_add_response_header(r, "Content-Type", ctype);
    if (sid)
        (void)MHD_add_response_header(r, "Mcp-Session-Id", sid);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static const char tools_sse[] =
    "id: p1\nretry: 5000\ndata: \n\n" /* priming */
    ": a comment\n"
    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"
    "event: other\ndata: {\"not\":\"a message\"}\n\n" /* not a message */
    "data: {\"jsonrpc\":\"2.0\",\n"
    "data: \"id\":2,\"result\":{}}\n\n";

static enum MHD_Result post(struct MHD_Connection *c, const struct upload *u)
{
    json_object *o = json_tokener_parse(u->data ? u->data : "");
    json_object *m = NULL;
    const char *method =
        o && json_object_object_get_ex(o, "method", &m) ? json_object_get_string(m) : "";
    char name[64];
    snprintf(name, sizeof(name), "%s", method ? method : "");
    json_object_put(o);

    pthread_mutex_lock(&seen.mu);
    enum MHD_Result ret;
    if (strcmp(name, "initialize") == 0) {
        rec(c, "Mcp-Session-Id", seen.init_sid);
        ret =
            reply(c, 200, "application/json; charset=utf-8",
                  "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\"}}",
                  "abc");
    } else if (strcmp(name, "notifications/initialized") == 0) {
        rec(c, "Mcp-Session-Id", seen.notif_sid);
        rec(c, "MCP-Protocol-Version", seen.notif_proto);
        ret = reply(c, 202, NULL, "", NULL);
    } else if (strcmp(name, "tools/list") == 0) {
        rec(c, "Mcp-Session-Id", seen.tools_sid);
        rec(c, "MCP-Protocol-Version", seen.tools_proto);
        rec(c, "Accept", seen.tools_accept);
        rec(c, "Content-Type", seen.tools_ctype);
        rec(c, "Authorization", seen.tools_auth);
        ret = reply(c, 200, "Text/Event-Stream ; charset=utf-8", tools_sse, NULL);
    } else if (strcmp(name, "old/array") == 0) {
        ret = reply(c, 200, "application/json",
                    " [{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}},"
                    "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}]",
                    NULL);
    } else if (strcmp(name, "bad/type") == 0) {
        ret = reply(c, 200, "text/html", "<html></html>", NULL);
    } else if (strcmp(name, "stale") == 0) {
        const char *sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
        ret = reply(c, sid ? 404 : 400, "text/plain", "no such session", NULL);
    } else {
        ret = reply(c, 400, "text/plain", "bad", NULL);
    }
    pthread_mutex_unlock(&seen.mu);
    return ret;
}

static enum MHD_Result get(struct MHD_Connection *c)
{
    pthread_mutex_lock(&seen.mu);
    enum MHD_Result ret;
    seen.gets++;
    rec(c, "Accept", seen.get_accept);
    rec(c, "Mcp-Session-Id", seen.get_sid);
    if (seen.gets == 1) {
        rec(c, "Last-Event-ID", seen.get1_lei);
        ret = reply(c, 200, "text/event-stream",
                    "id: g1\nretry: 100\n"
                    "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n",
                    NULL);
    } else {
        rec(c, "Last-Event-ID", seen.get2_lei);
        ret = reply(c, 405, "text/plain", "no stream", NULL);
    }
    pthread_mutex_unlock(&seen.mu);
    return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    struct upload *u = *con_cls;
    (void)cls, (void)url, (void)version;

    if (!u) {
        u = calloc(1, sizeof(*u));
        if (!u)
            return MHD_NO;
        *con_cls = u;
        return MHD_YES;
    }
    if (*upload_data_size) {
        char *n = realloc(u->data, u->len + *upload_data_size + 1);
        if (!n)
            return MHD_NO;
        memcpy(n + u->len, upload_data, *upload_data_size);
        u->data = n;
        u->len += *upload_data_size;
        u->data[u->len] = 0;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "POST") == 0)
        return post(conn, u);
    if (strcmp(method, "GET") == 0)
        return get(conn);
    if (strcmp(method, "DELETE") == 0) {
        pthread_mutex_lock(&seen.mu);
        seen.deletes++;
        rec(conn, "Mcp-Session-Id", seen.del_sid);
        pthread_mutex_unlock(&seen.mu);
        return reply(conn, 200, NULL, "", NULL);
    }
    return reply(conn, 405, NULL, "", NULL);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct upload *u = *con_cls;
    (void)cls, (void)conn, (void)toe;
    if (u) {
        free(u->data);
        free(u);
        *con_cls = NULL;
    }
}

static void server_start(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    daemon_ =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                         NULL, handler, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                         MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (!daemon_) {
        fprintf(stderr, "cannot start the test HTTP server\n");
        exit(2);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || !info->port) {
        fprintf(stderr, "cannot read the test HTTP server's port\n");
        exit(2);
    }
    port = info->port;
}

/* ---- the client side ----------------------------------------------------------------------- */

struct client {
    struct loop *loop;
    struct http_upstream *u;
    bool got[5]; /* results by id */
    int dup;     /* a result seen twice */
    int progress, stream_msgs, others;
    int bad_type_error, stale_error, other_errors;
    int closes, close_reason, last_error;
    int64_t stream_msg_at, close_at;
    bool stale_sent;
    int done_calls, done_result;
    bool free_in_callback; /* test_free_in_callback */
};

static void sendc(struct client *c, const char *msg, bool init)
{
    CHECK_INT(http_upstream_send(c->u, msg, strlen(msg), init ? HTTP_UPSTREAM_INITIALIZE : 0, 0), 0);
}

static void on_done(int result, void *userdata)
{
    struct client *c = userdata;
    c->done_calls++;
    c->done_result = result;
    loop_quit(c->loop, 0);
}

static void advance(struct client *c)
{
    if (c->stale_sent || !c->got[2] || !c->got[3] || !c->got[4] || !c->progress ||
        !c->bad_type_error || !c->closes)
        return;
    c->stale_sent = true;
    sendc(c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"stale\"}", false);
}

static void on_message(const char *msg, size_t len, void *userdata)
{
    struct client *c = userdata;
    char *s = strndup(msg, len);
    json_object *o = s ? json_tokener_parse(s) : NULL;
    free(s);
    CHECK(o != NULL);
    if (!o)
        return;
    json_object *v;
    if (c->free_in_callback) {
        json_object_put(o);
        http_upstream_free(c->u);
        c->u = NULL;
        c->others++;
        loop_quit(c->loop, 0);
        return;
    }
    if (json_object_object_get_ex(o, "id", &v)) {
        int id = json_object_get_int(v);
        if (id >= 1 && id <= 4) {
            if (c->got[id])
                c->dup++;
            c->got[id] = true;
        } else {
            c->others++;
        }
        if (id == 1) {
            CHECK_STR(http_upstream_session_id(c->u), "abc");
            CHECK_INT(http_upstream_set_protocol_version(c->u, "2025-11-25"), 0);
            CHECK_INT(http_upstream_set_protocol_version(c->u, "bad version"), -EINVAL);
            sendc(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", false);
            sendc(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", false);
            sendc(c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"old/array\"}", false);
            sendc(c, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"bad/type\"}", false);
            CHECK_INT(http_upstream_open_stream(c->u), 0);
            CHECK_INT(http_upstream_open_stream(c->u), -EALREADY);
        }
    } else if (json_object_object_get_ex(o, "method", &v)) {
        const char *m = json_object_get_string(v);
        if (strcmp(m, "notifications/progress") == 0)
            c->progress++;
        else if (strcmp(m, "notifications/message") == 0) {
            c->stream_msgs++;
            c->stream_msg_at = now_ms();
        } else
            c->others++;
    }
    json_object_put(o);
    advance(c);
}

static void on_error(int error, const char *msg, size_t len, void *userdata)
{
    struct client *c = userdata;
    char *s = msg ? strndup(msg, len) : NULL;
    if (error == -EPROTO && s && strstr(s, "bad/type"))
        c->bad_type_error++;
    else if (error == -ESTALE && s && strstr(s, "stale")) {
        c->stale_error++;
        CHECK_INT(http_upstream_close(c->u, on_done), 0);
        CHECK_INT(http_upstream_close(c->u, on_done), -ESHUTDOWN);
        CHECK_INT(http_upstream_send(c->u, "{}", 2, 0, 0), -ESHUTDOWN);
    } else {
        if (!c->free_in_callback)
            fprintf(stderr, "unexpected error %d for %s\n", error, s ? s : "(stream)");
        c->other_errors++;
        c->last_error = error;
        if (c->free_in_callback)
            loop_quit(c->loop, 0);
    }
    free(s);
    advance(c);
}

static void on_close(int reason, void *userdata)
{
    struct client *c = userdata;
    c->closes++;
    c->close_reason = reason;
    c->close_at = now_ms();
    advance(c);
}

static void guard(struct loop_timer *t, void *userdata)
{
    struct client *c = userdata;
    (void)t;
    fprintf(stderr, "timed out\n");
    loop_quit(c->loop, -ETIMEDOUT);
}

static const struct http_upstream_handler handler_ = {
    .on_message = on_message, .on_close = on_close, .on_error = on_error};

static void test_session(void)
{
    struct client c = {0};
    struct loop_timer *t = NULL;
    struct err e = ERR_INIT;
    char url[128];
    const char *headers[] = {"Authorization: Bearer s3cret", NULL};

    snprintf(url, sizeof(url), "http://127.0.0.1:%u/mcp", port);
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_upstream_spec spec = {.url = url, .headers = headers, .timeout_ms = 5000};
    CHECK_INT(http_upstream_new(c.loop, &spec, &handler_, &c, &c.u, &e), 0);
    CHECK_STR(http_upstream_session_id(c.u), "");
    CHECK_INT(loop_timer_add(c.loop, 10000, guard, &c, &t), 0);
    sendc(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", true);

    CHECK_INT(loop_run(c.loop), 0);

    for (int i = 1; i <= 4; i++)
        CHECK(c.got[i]);
    CHECK_INT(c.dup, 0);
    CHECK_INT(c.progress, 1);
    CHECK_INT(c.others, 0);
    CHECK_INT(c.bad_type_error, 1);
    CHECK_INT(c.stale_error, 1);
    CHECK_INT(c.other_errors, 0);
    CHECK_INT(c.stream_msgs, 1);
    CHECK_INT(c.closes, 1);
    CHECK_INT(c.close_reason, 0); /* the reconnection got 405 */
    if (c.close_at - c.stream_msg_at < 95)
        fprintf(stderr, "reconnected after %lld ms\n", (long long)(c.close_at - c.stream_msg_at));
    CHECK(c.close_at - c.stream_msg_at >= 95); /* waited for retry: 100 (the loop counts from its
                                                * cached clock, a millisecond may go) */
    CHECK_INT(c.done_calls, 1);
    CHECK_INT(c.done_result, 0);

    pthread_mutex_lock(&seen.mu);
    CHECK_STR(seen.init_sid, "");
    CHECK_STR(seen.notif_sid, "abc");
    CHECK_STR(seen.notif_proto, "2025-11-25");
    CHECK_STR(seen.tools_sid, "abc");
    CHECK_STR(seen.tools_proto, "2025-11-25");
    CHECK_STR(seen.tools_accept, "application/json, text/event-stream");
    CHECK_STR(seen.tools_ctype, "application/json");
    CHECK_STR(seen.tools_auth, "Bearer s3cret");
    CHECK_INT(seen.gets, 2);
    CHECK_STR(seen.get_accept, "text/event-stream");
    CHECK_STR(seen.get_sid, "abc");
    CHECK_STR(seen.get1_lei, "");
    CHECK_STR(seen.get2_lei, "g1");
    CHECK_INT(seen.deletes, 1);
    CHECK_STR(seen.del_sid, "abc");
    pthread_mutex_unlock(&seen.mu);

    loop_timer_cancel(t);
    http_upstream_free(c.u);
    loop_free(c.loop);
}

/* freeing the upstream from on_message, inside libcurl's write callback (an SSE answer) */
static void test_free_in_callback(void)
{
    struct client c = {.free_in_callback = true};
    struct loop_timer *t = NULL;
    char url[128];

    snprintf(url, sizeof(url), "http://127.0.0.1:%u/mcp", port);
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_upstream_spec spec = {.url = url};
    CHECK_INT(http_upstream_new(c.loop, &spec, &handler_, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, guard, &c, &t), 0);
    sendc(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", false);
    CHECK_INT(loop_run(c.loop), 0);
    CHECK_INT(c.others, 1);
    CHECK(c.u == NULL);
    loop_timer_cancel(t);
    loop_free(c.loop);
}

static void test_refused_and_bad_spec(void)
{
    struct client c = {.free_in_callback = true};
    struct loop_timer *t = NULL;
    struct err e = ERR_INIT;
    struct http_upstream *u = NULL;

    CHECK_INT(loop_new(&c.loop), 0);
    struct http_upstream_spec bad = {.url = "ftp://127.0.0.1/"};
    CHECK_INT(http_upstream_new(c.loop, &bad, &handler_, &c, &u, &e), -EINVAL);
    const char *hs[] = {"Authorization Bearer s3cret", NULL};
    struct http_upstream_spec bad2 = {.url = "http://127.0.0.1/", .headers = hs};
    CHECK_INT(http_upstream_new(c.loop, &bad2, &handler_, &c, &u, &e), -EINVAL);
    CHECK(strstr(err_msg(&e), "s3cret") == NULL);
    CHECK(u == NULL);

    /* port 1 on loopback: nothing listens */
    struct http_upstream_spec spec = {.url = "http://127.0.0.1:1/mcp", .timeout_ms = 2000};
    CHECK_INT(http_upstream_new(c.loop, &spec, &handler_, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, guard, &c, &t), 0);
    sendc(&c, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", false);
    CHECK_INT(loop_run(c.loop), 0);
    CHECK_INT(c.other_errors, 1);
    CHECK_INT(c.last_error, -ECONNREFUSED);
    loop_timer_cancel(t);
    http_upstream_free(c.u);
    loop_free(c.loop);
}

static void test_all(void)
{
    server_start();
    test_session();
    test_free_in_callback();
    test_refused_and_bad_spec();
    MHD_stop_daemon(daemon_);
}

TESTS_MAIN(test_all)
