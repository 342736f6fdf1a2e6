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
#include "httpd.h"
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
/* what the server answers a request whose session it does not know: 404 as the spec says, or
 * 400 as the TypeScript SDK's servers do */
static unsigned stale_status = 404;
static struct MHD_Daemon *daemon_;
static unsigned port;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER; /* with seen.mu: news for the streams */
static bool stopping;                                /* the server is going: end every stream */

/* /poll: a 2025-11-25 server that closes a request's SSE answer early (polling) */
struct poll_seen {
    int64_t p10_end;          /* the "resume" POST's answer was sent */
    int64_t g1_at, g1_end;    /* the GET with Last-Event-ID r1 came, was answered */
    int64_t g2_at;            /* the one with r2 */
    int64_t hold_end;         /* the r2 stream (answer, then held open) ended */
    int hold_toe;             /* how */
    int g1s, g2s, x1s, stray; /* GETs by Last-Event-ID; stray: ones that should not come */
    char g1_accept[F], g1_sid[F], g1_proto[F], g1_auth[F];
};
static struct poll_seen poll_;

/* the legacy 2024-11-05 server: one SSE connection at a time */
struct legacy_seen {
    unsigned init_status; /* what a POST to the SSE URL gets */
    char endpoint[160];   /* the endpoint event's data, "" for none */
    char out[16384];      /* events waiting for the SSE stream */
    size_t out_len;
    bool end; /* end the SSE stream */
    int gets, sse_posts, messages;
    char get_accept[F], get_auth[F], post_auth[F], post_path[F], post_sid[F];
    char methods[256]; /* POSTed to the endpoint, comma-separated */
    unsigned gen;      /* streams of an earlier test end at once */
};
static struct legacy_seen legacy;

/* /order: the GET stream must wait for notifications/initialized's answer, and requests sent
 * after http_upstream_open_stream() must wait for the GET; /resess: sessions that change */
struct order_seen {
    int64_t notif_answered, get_at, call_at;
    int inits, gets;
    char get_lei[F], get_sid[F], call_sid[F];
};
static struct order_seen order;

enum track { TRACK_NONE, TRACK_P10, TRACK_G1, TRACK_HOLD };

struct upload {
    char *data;
    size_t len;
    enum track track; /* record when the answer was sent */
};

/* A streamed answer: head, then (legacy) the events queued for it until legacy.end, or
 * (hold) keep-alive comments until the client goes; at most until `until`. */
struct stream_ctx {
    char *head;
    size_t len, off;
    bool legacy, hold;
    int64_t until;
    unsigned gen;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* called with seen.mu held */
static void legacy_push(const char *ev)
{
    size_t n = strlen(ev);
    if (legacy.out_len + n <= sizeof(legacy.out)) {
        memcpy(legacy.out + legacy.out_len, ev, n);
        legacy.out_len += n;
    }
    pthread_cond_broadcast(&cv);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream_ctx *s = cls;
    ssize_t ret = 0;
    (void)pos;

    if (s->off < s->len)
        return (ssize_t)httpd_copy_out(buf, max, s->head, s->len, &s->off);
    if (!s->legacy && !s->hold)
        return MHD_CONTENT_READER_END_OF_STREAM;
    pthread_mutex_lock(&seen.mu);
    for (;;) {
        if (stopping || now_ms() >= s->until ||
            (s->legacy && (s->gen != legacy.gen || (legacy.end && !legacy.out_len)))) {
            ret = MHD_CONTENT_READER_END_OF_STREAM;
            break;
        }
        if (s->legacy && legacy.out_len) {
            ret = (ssize_t)httpd_pop(buf, max, legacy.out, &legacy.out_len);
            break;
        }
        ret = httpd_idle(&cv, &seen.mu, buf, max);
        if (ret > 0)
            break;
    }
    pthread_mutex_unlock(&seen.mu);
    return ret;
}

static void stream_free(void *cls)
{
    struct stream_ctx *s = cls;
    free(s->head);
    free(s);
}

static enum MHD_Result reply_stream(struct MHD_Connection *c, const char *head, bool is_legacy,
                                    unsigned gen, bool hold)
{
    struct stream_ctx *s = calloc(1, sizeof(*s));
    if (!s || !(s->head = strdup(head))) {
        free(s);
        return MHD_NO;
    }
    s->len = strlen(head);
    s->legacy = is_legacy;
    s->hold = hold;
    s->until = now_ms() + 5000;
    s->gen = gen;
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, stream_read, s, stream_free);
    if (!r) {
        stream_free(s);
        return MHD_NO;
    }
    return httpd_queue(c, 200, "text/event-stream", NULL, r);
}

static const char tools_sse[] =
    "id: p1\nretry: 5000\ndata: \n\n" /* priming */
    ": a comment\n"
    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"
    "event: other\ndata: {\"not\":\"a message\"}\n\n" /* not a message */
    "data: {\"jsonrpc\":\"2.0\",\n"
    "data: \"id\":2,\"result\":{}}\n\n";

/* the method of a POSTed message, and for tools/call the tool's name */
static void parse_post(const struct upload *u, char method[F], char tool[F])
{
    json_object *o = json_tokener_parse(u->data ? u->data : "");
    json_object *m = NULL, *params = NULL, *n = NULL;
    const char *s =
        o && json_object_object_get_ex(o, "method", &m) ? json_object_get_string(m) : "";
    snprintf(method, F, "%s", s ? s : "");
    s = o && json_object_object_get_ex(o, "params", &params) &&
                json_object_object_get_ex(params, "name", &n)
            ? json_object_get_string(n)
            : "";
    snprintf(tool, F, "%s", s ? s : "");
    json_object_put(o);
}

static enum MHD_Result post(struct MHD_Connection *c, const struct upload *u)
{
    char name[F], tool[F];
    parse_post(u, name, tool);

    pthread_mutex_lock(&seen.mu);
    enum MHD_Result ret;
    if (strcmp(name, "initialize") == 0) {
        httpd_header(c, "Mcp-Session-Id", seen.init_sid, F);
        ret = httpd_reply(
            c, 200, "application/json; charset=utf-8",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\"}}",
            "abc");
    } else if (strcmp(name, "notifications/initialized") == 0) {
        httpd_header(c, "Mcp-Session-Id", seen.notif_sid, F);
        httpd_header(c, "MCP-Protocol-Version", seen.notif_proto, F);
        ret = httpd_reply(c, 202, NULL, "", NULL);
    } else if (strcmp(name, "tools/list") == 0) {
        httpd_header(c, "Mcp-Session-Id", seen.tools_sid, F);
        httpd_header(c, "MCP-Protocol-Version", seen.tools_proto, F);
        httpd_header(c, "Accept", seen.tools_accept, F);
        httpd_header(c, "Content-Type", seen.tools_ctype, F);
        httpd_header(c, "Authorization", seen.tools_auth, F);
        ret = httpd_reply(c, 200, "Text/Event-Stream ; charset=utf-8", tools_sse, NULL);
    } else if (strcmp(name, "old/array") == 0) {
        ret = httpd_reply(c, 200, "application/json",
                          " [{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}},"
                          "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}]",
                          NULL);
    } else if (strcmp(name, "bad/type") == 0) {
        ret = httpd_reply(c, 200, "text/html", "<html></html>", NULL);
    } else if (strcmp(name, "stale") == 0) {
        const char *sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
        ret = httpd_reply(c, sid ? stale_status : 400, "text/plain", "no such session", NULL);
    } else {
        ret = httpd_reply(c, 400, "text/plain", "bad", NULL);
    }
    pthread_mutex_unlock(&seen.mu);
    return ret;
}

static enum MHD_Result get(struct MHD_Connection *c)
{
    pthread_mutex_lock(&seen.mu);
    enum MHD_Result ret;
    seen.gets++;
    httpd_header(c, "Accept", seen.get_accept, F);
    httpd_header(c, "Mcp-Session-Id", seen.get_sid, F);
    if (seen.gets == 1) {
        httpd_header(c, "Last-Event-ID", seen.get1_lei, F);
        ret = httpd_reply(c, 200, "text/event-stream",
                          "id: g1\nretry: 100\n"
                          "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n",
                          NULL);
    } else {
        httpd_header(c, "Last-Event-ID", seen.get2_lei, F);
        ret = httpd_reply(c, 405, "text/plain", "no stream", NULL);
    }
    pthread_mutex_unlock(&seen.mu);
    return ret;
}

/* ---- /poll ---------------------------------------------------------------------------- */

static enum MHD_Result poll_post(struct MHD_Connection *c, struct upload *u)
{
    char method[F], tool[F];
    parse_post(u, method, tool);

    if (strcmp(method, "initialize") == 0)
        return httpd_reply(c, 200, "application/json",
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "s-poll");
    if (strcmp(method, "tools/call") != 0)
        return httpd_reply(c, 202, NULL, "", NULL);
    const char *body = NULL;
    if (strcmp(tool, "resume") == 0) { /* primed, closed: the answer comes after two resumptions */
        u->track = TRACK_P10;
        body = "id: r1\nretry: 300\ndata: \n\n";
    } else if (strcmp(tool, "noid") == 0) { /* closed without the answer or any id */
        body =
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n";
    } else if (strcmp(tool, "stall") == 0) { /* resumable, but the resumption brings nothing */
        body = "id: x1\nretry: 100\ndata: \n\n";
    } else if (strcmp(tool, "direct") == 0) { /* primed, answered on the POST itself */
        body = "id: a1\nretry: 100\ndata: \n\n"
               "id: a2\ndata: {\"jsonrpc\":\"2.0\",\"id\":13,\"result\":{}}\n\n";
    } else if (strcmp(tool, "late") == 0) { /* a retry beyond the hard timeout */
        body = "id: l1\nretry: 60000\ndata: \n\n";
    } else {
        return httpd_reply(c, 400, "text/plain", "unknown tool", NULL);
    }
    return httpd_reply(c, 200, "text/event-stream", body, NULL);
}

static enum MHD_Result poll_get(struct MHD_Connection *c, struct upload *u)
{
    const char *lei = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
    enum MHD_Result ret;

    pthread_mutex_lock(&seen.mu);
    if (lei && strcmp(lei, "r1") == 0) {
        poll_.g1s++;
        poll_.g1_at = now_ms();
        httpd_header(c, "Accept", poll_.g1_accept, F);
        httpd_header(c, "Mcp-Session-Id", poll_.g1_sid, F);
        httpd_header(c, "MCP-Protocol-Version", poll_.g1_proto, F);
        httpd_header(c, "Authorization", poll_.g1_auth, F);
        u->track = TRACK_G1;
        /* an event with an id, but not the answer: to be resumed again */
        ret = httpd_reply(
            c, 200, "text/event-stream",
            "id: r2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n", NULL);
    } else if (lei && strcmp(lei, "r2") == 0) {
        poll_.g2s++;
        poll_.g2_at = now_ms();
        u->track = TRACK_HOLD;
        /* the answer, then the stream stays open: the client must stop it */
        ret = reply_stream(c, "id: r3\ndata: {\"jsonrpc\":\"2.0\",\"id\":10,\"result\":{}}\n\n",
                           false, 0, true);
    } else if (lei && strcmp(lei, "x1") == 0) {
        poll_.x1s++;
        ret = httpd_reply(c, 200, "text/event-stream", ": nothing new\n",
                          NULL); /* not even a blank line */
    } else if (lei) {
        poll_.stray++;
        ret = httpd_reply(c, 200, "text/event-stream", "", NULL);
    } else {
        ret = httpd_reply(c, 405, "text/plain", "no stream", NULL);
    }
    pthread_mutex_unlock(&seen.mu);
    return ret;
}

/* ---- the legacy server ------------------------------------------------------------------ */

static enum MHD_Result legacy_get(struct MHD_Connection *c)
{
    char head[256] = "";
    unsigned gen;

    pthread_mutex_lock(&seen.mu);
    gen = legacy.gen;
    legacy.gets++;
    httpd_header(c, "Accept", legacy.get_accept, F);
    httpd_header(c, "Authorization", legacy.get_auth, F);
    if (legacy.endpoint[0])
        snprintf(head, sizeof(head), "event: endpoint\ndata: %s\n\n", legacy.endpoint);
    pthread_mutex_unlock(&seen.mu);
    return reply_stream(c, head, true, gen, false);
}

static enum MHD_Result legacy_message(struct MHD_Connection *c, const char *url,
                                      const struct upload *u)
{
    char method[F], tool[F];
    const char *sid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sessionId");
    enum MHD_Result ret;

    parse_post(u, method, tool);
    pthread_mutex_lock(&seen.mu);
    legacy.messages++;
    httpd_header(c, "Authorization", legacy.post_auth, F);
    snprintf(legacy.post_path, F, "%s", url);
    snprintf(legacy.post_sid, F, "%s", sid ? sid : "");
    size_t n = strlen(legacy.methods);
    snprintf(legacy.methods + n, sizeof(legacy.methods) - n, "%s%s", n ? "," : "", method);
    if (strcmp(method, "initialize") == 0) {
        legacy_push("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n");
        ret = httpd_reply(c, 202, "text/plain", "Accepted", NULL); /* not JSON: ignored */
    } else if (strcmp(method, "tools/list") == 0) {
        legacy_push(
            "id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n");
        /* a body that would be delivered in the Streamable transport: must be ignored */
        ret = httpd_reply(c, 200, "application/json",
                          "{\"jsonrpc\":\"2.0\",\"id\":98,\"result\":{}}", NULL);
    } else if (strcmp(method, "fail") == 0) {
        ret = httpd_reply(c, 500, "text/plain", "broken", NULL);
    } else if (strcmp(method, "end/stream") == 0) {
        legacy.end = true;
        pthread_cond_broadcast(&cv);
        ret = httpd_reply(c, 202, "text/plain", "Accepted", NULL);
    } else {
        ret = httpd_reply(c, 202, "text/plain", "Accepted", NULL);
    }
    pthread_mutex_unlock(&seen.mu);
    return ret;
}

static enum MHD_Result order_req(struct MHD_Connection *c, const char *url, const char *method,
                                 struct upload *u)
{
    char name[F], tool[F];
    bool resess = strcmp(url, "/resess") == 0;
    if (strcmp(method, "GET") == 0) {
        pthread_mutex_lock(&seen.mu);
        order.gets++;
        order.get_at = now_ms();
        httpd_header(c, "Last-Event-ID", order.get_lei, F);
        httpd_header(c, "Mcp-Session-Id", order.get_sid, F);
        pthread_mutex_unlock(&seen.mu);
        if (resess) /* an id to resume from, then the end */
            return httpd_reply(c, 200, "text/event-stream", "id: old-1\nretry: 60000\ndata: \n\n",
                               NULL);
        return httpd_reply(c, 405, NULL, "", NULL);
    }
    parse_post(u, name, tool);
    if (strcmp(name, "initialize") == 0) {
        pthread_mutex_lock(&seen.mu);
        int n = ++order.inits;
        pthread_mutex_unlock(&seen.mu);
        /* /resess: the first session is "s1", the second has no id (a stateless server) */
        const char *sid = !resess ? "o1" : n == 1 ? "s1" : NULL;
        return httpd_reply(c, 200, "application/json",
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", sid);
    }
    if (strcmp(name, "notifications/initialized") == 0) {
        if (!resess) {
            struct timespec ts = {0, 300 * 1000000L};
            nanosleep(&ts, NULL);
        }
        pthread_mutex_lock(&seen.mu);
        order.notif_answered = now_ms();
        pthread_mutex_unlock(&seen.mu);
        return httpd_reply(c, 202, NULL, "", NULL);
    }
    pthread_mutex_lock(&seen.mu);
    order.call_at = now_ms();
    httpd_header(c, "Mcp-Session-Id", order.call_sid, F);
    pthread_mutex_unlock(&seen.mu);
    return httpd_reply(c, 200, "application/json", "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}",
                       NULL);
}

/* /auth: a token that expires within the session. The initialize works with any token, a
 * call only with "Bearer new" (else 401 and a challenge); "forbidden" is 403 whatever the
 * token. */
struct auth_seen {
    int calls;
    char init_auth[F], call1_auth[F], call2_auth[F], call2_sid[F];
};
static struct auth_seen auth;

static const char auth_401[] = "Bearer resource_metadata=\"http://127.0.0.1/.well-known/x\"";
static const char auth_403[] = "Bearer error=\"insufficient_scope\", scope=\"admin\"";

static enum MHD_Result reply_challenge(struct MHD_Connection *c, unsigned status,
                                       const char *challenge)
{
    static const char body[] = "refused";
    struct MHD_Response *r =
        MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    if (r)
        (void)MHD_add_response_header(r, "WWW-Authenticate", challenge);
    return httpd_queue(c, status, "text/plain", NULL, r);
}

static enum MHD_Result auth_req(struct MHD_Connection *c, struct upload *u)
{
    char name[F], tool[F], a[F];
    parse_post(u, name, tool);
    httpd_header(c, "Authorization", a, F);

    if (strcmp(name, "initialize") == 0) {
        pthread_mutex_lock(&seen.mu);
        snprintf(auth.init_auth, F, "%s", a);
        pthread_mutex_unlock(&seen.mu);
        return httpd_reply(c, 200, "application/json",
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "s-auth");
    }
    if (strcmp(name, "tools/call") != 0)
        return httpd_reply(c, 202, NULL, "", NULL);
    pthread_mutex_lock(&seen.mu);
    int n = ++auth.calls;
    if (n == 1)
        snprintf(auth.call1_auth, F, "%s", a);
    if (n == 2) {
        snprintf(auth.call2_auth, F, "%s", a);
        httpd_header(c, "Mcp-Session-Id", auth.call2_sid, F);
    }
    pthread_mutex_unlock(&seen.mu);
    if (strcmp(tool, "forbidden") == 0)
        return reply_challenge(c, 403, auth_403);
    if (strcmp(a, "Bearer new") != 0)
        return reply_challenge(c, 401, auth_401);
    return httpd_reply(c, 200, "application/json", "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}",
                       NULL);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
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
    if (*upload_data_size)
        return httpd_upload_append(&u->data, &u->len, upload_data, upload_data_size) ? MHD_YES
                                                                                     : MHD_NO;
    if (strcmp(url, "/poll") == 0) {
        if (strcmp(method, "POST") == 0)
            return poll_post(conn, u);
        if (strcmp(method, "GET") == 0)
            return poll_get(conn, u);
        return httpd_reply(conn, 405, NULL, "", NULL);
    }
    if (strcmp(url, "/auth") == 0 && strcmp(method, "POST") == 0)
        return auth_req(conn, u);
    if (strcmp(url, "/order") == 0 || strcmp(url, "/resess") == 0)
        return order_req(conn, url, method, u);
    if (ends_with(url, "/messages") && strcmp(method, "POST") == 0)
        return legacy_message(conn, url, u);
    if (ends_with(url, "/sse")) {
        if (strcmp(method, "GET") == 0)
            return legacy_get(conn);
        pthread_mutex_lock(&seen.mu);
        legacy.sse_posts++;
        unsigned status = legacy.init_status;
        pthread_mutex_unlock(&seen.mu);
        return httpd_reply(conn, status, "text/plain", "use the SSE transport", NULL);
    }
    if (strcmp(method, "POST") == 0)
        return post(conn, u);
    if (strcmp(method, "GET") == 0)
        return get(conn);
    if (strcmp(method, "DELETE") == 0) {
        pthread_mutex_lock(&seen.mu);
        seen.deletes++;
        httpd_header(conn, "Mcp-Session-Id", seen.del_sid, F);
        pthread_mutex_unlock(&seen.mu);
        /* as a server without DELETE answers it: 404 and a page, which is fine */
        return httpd_reply(conn, 404, "text/html", "<html>Cannot DELETE /mcp</html>", NULL);
    }
    return httpd_reply(conn, 405, NULL, "", NULL);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct upload *u = *con_cls;
    (void)cls, (void)conn;
    if (u && u->track != TRACK_NONE) {
        pthread_mutex_lock(&seen.mu);
        int64_t now = now_ms();
        if (u->track == TRACK_P10)
            poll_.p10_end = now;
        else if (u->track == TRACK_G1)
            poll_.g1_end = now;
        else if (u->track == TRACK_HOLD) {
            poll_.hold_end = now;
            poll_.hold_toe = (int)toe;
        }
        pthread_mutex_unlock(&seen.mu);
    }
    if (u) {
        free(u->data);
        free(u);
        *con_cls = NULL;
    }
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

static void sendc(struct client *c, const char *msg, bool init, uint64_t tag)
{
    CHECK_INT(http_upstream_send(c->u, msg, strlen(msg), init ? HTTP_UPSTREAM_INITIALIZE : 0, tag),
              0);
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
    sendc(c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"stale\"}", false, 9);
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
            sendc(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", false, 0);
            sendc(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", false, 0);
            sendc(c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"old/array\"}", false, 0);
            sendc(c, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"bad/type\"}", false, 6);
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

static void on_error(int error, uint64_t tag, void *userdata)
{
    struct client *c = userdata;
    if (error == -EPROTO && tag == 6) /* bad/type */
        c->bad_type_error++;
    else if (error == -ESTALE && tag == 9) { /* stale */
        c->stale_error++;
        CHECK_INT(http_upstream_close(c->u, on_done), 0);
        CHECK_INT(http_upstream_close(c->u, on_done), -ESHUTDOWN);
        CHECK_INT(http_upstream_send(c->u, "{}", 2, 0, 0), -ESHUTDOWN);
    } else {
        if (!c->free_in_callback)
            fprintf(stderr, "unexpected error %d for tag %llu\n", error, (unsigned long long)tag);
        c->other_errors++;
        c->last_error = error;
        if (c->free_in_callback)
            loop_quit(c->loop, 0);
    }
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

static void run_session(unsigned stale)
{
    struct client c = {0};
    struct loop_timer *t = NULL;
    struct err e = ERR_INIT;
    char url[128];
    const char *headers[] = {"Authorization: Bearer s3cret", NULL};

    stale_status = stale;
    pthread_mutex_lock(&seen.mu);
    pthread_mutex_t mu = seen.mu;
    memset(&seen, 0, sizeof(seen));
    seen.mu = mu;
    pthread_mutex_unlock(&seen.mu);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/mcp", port);
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_upstream_spec spec = {.url = url, .headers = headers, .timeout_ms = 5000};
    CHECK_INT(http_upstream_new(c.loop, &spec, &handler_, &c, &c.u, &e), 0);
    CHECK_STR(http_upstream_session_id(c.u), "");
    CHECK_INT(loop_timer_add(c.loop, 10000, guard, &c, &t), 0);
    sendc(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", true, 0);

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
    sendc(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", false, 0);
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
    sendc(&c, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", false, 7);
    CHECK_INT(loop_run(c.loop), 0);
    CHECK_INT(c.other_errors, 1);
    CHECK_INT(c.last_error, -ECONNREFUSED);
    loop_timer_cancel(t);
    http_upstream_free(c.u);
    loop_free(c.loop);
}

/* ---- resuming a request's answer (2025-11-25 polling) ---------------------------------- */

struct pclient {
    struct loop *loop;
    struct http_upstream *u;
    struct loop_timer *wait;
    int64_t sent_at, got10_at, err11_at, err12_at, err14_at;
    bool got10, got13;
    int err11, err12, err14;
    int progress, others, other_errors;
};

static int msg_id(const char *msg, size_t len, const char **method)
{
    char *s = strndup(msg, len);
    json_object *o = s ? json_tokener_parse(s) : NULL, *v = NULL;
    int id = -1;
    static char m[F];
    free(s);
    m[0] = 0;
    if (o && json_object_object_get_ex(o, "id", &v))
        id = json_object_get_int(v);
    if (o && json_object_object_get_ex(o, "method", &v))
        snprintf(m, sizeof(m), "%s", json_object_get_string(v));
    json_object_put(o);
    if (method)
        *method = m;
    return id;
}

static void p_send(struct pclient *c, int id, const char *tool)
{
    char msg[160];
    snprintf(
        msg, sizeof(msg),
        "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\"}}",
        id, tool);
    CHECK_INT(http_upstream_send(c->u, msg, strlen(msg), 0, (uint64_t)id), 0);
}

/* every answer and error is in: wait (bounded by the guard) for the held stream to end */
static void p_wait(struct loop_timer *t, void *userdata)
{
    struct pclient *c = userdata;
    pthread_mutex_lock(&seen.mu);
    bool ended = poll_.hold_end != 0;
    pthread_mutex_unlock(&seen.mu);
    if (ended)
        loop_quit(c->loop, 0);
    else
        loop_timer_rearm(t, 10);
}

static void p_check(struct pclient *c)
{
    if (c->got10 && c->got13 && c->err11 && c->err12 && c->err14 && !c->wait)
        CHECK_INT(loop_timer_add(c->loop, 0, p_wait, c, &c->wait), 0);
}

static void p_message(const char *msg, size_t len, void *userdata)
{
    struct pclient *c = userdata;
    const char *method = NULL;
    int id = msg_id(msg, len, &method);

    if (id == 1) {
        CHECK_INT(http_upstream_set_protocol_version(c->u, "2025-11-25"), 0);
        const char *n = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
        CHECK_INT(http_upstream_send(c->u, n, strlen(n), 0, 0), 0);
        c->sent_at = loop_now(c->loop);
        p_send(c, 10, "resume");
        p_send(c, 11, "noid");
        p_send(c, 12, "stall");
        p_send(c, 13, "direct");
        p_send(c, 14, "late");
    } else if (id == 10) {
        c->got10 = true;
        c->got10_at = loop_now(c->loop);
        http_upstream_answered(c->u, 10);
    } else if (id == 13) {
        c->got13 = true;
        http_upstream_answered(c->u, 13);
    } else if (id < 0 && strcmp(method, "notifications/progress") == 0) {
        c->progress++;
    } else {
        c->others++;
    }
    p_check(c);
}

static void p_error(int error, uint64_t tag, void *userdata)
{
    struct pclient *c = userdata;
    int id = tag ? (int)tag : -1;

    if (id == 11) {
        c->err11 = error;
        c->err11_at = loop_now(c->loop);
    } else if (id == 12) {
        c->err12 = error;
        c->err12_at = loop_now(c->loop);
    } else if (id == 14) {
        c->err14 = error;
        c->err14_at = loop_now(c->loop);
    } else {
        fprintf(stderr, "unexpected error %d for message %d\n", error, id);
        c->other_errors++;
    }
    p_check(c);
}

static void test_polling(void)
{
    struct pclient c = {0};
    struct loop_timer *t = NULL;
    char url[128];
    const char *headers[] = {"Authorization: Bearer s3cret", NULL};
    const struct http_upstream_handler h = {.on_message = p_message, .on_error = p_error};

    snprintf(url, sizeof(url), "http://127.0.0.1:%u/poll", port);
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_upstream_spec spec = {.url = url, .headers = headers, .timeout_ms = 2000};
    CHECK_INT(http_upstream_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, guard, &c, &t), 0);
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}";
    CHECK_INT(http_upstream_send(c.u, init, strlen(init), HTTP_UPSTREAM_INITIALIZE, 1), 0);

    CHECK_INT(loop_run(c.loop), 0);

    CHECK(!http_upstream_is_legacy(c.u));
    /* resumed twice (ids kept coming), answered on the second resumption */
    CHECK(c.got10);
    CHECK(c.got10_at - c.sent_at >= 600); /* two retries of 300 ms, on the loop clock */
    CHECK_INT(c.progress, 2);             /* one on "noid", one on the first resumption */
    /* no id to resume from: reported at once, not at the hard timeout */
    CHECK_INT(c.err11, -ECONNRESET);
    CHECK(c.err11_at - c.sent_at < 1000);
    /* a resumption that brought nothing new */
    CHECK_INT(c.err12, -ECONNRESET);
    CHECK(c.err12_at - c.sent_at >= 100);
    CHECK(c.err12_at - c.sent_at < 1500);
    /* answered on its POST: not resumed */
    CHECK(c.got13);
    /* retry beyond the hard timeout: -ETIMEDOUT at the timeout (2000 ms after its POST left) */
    CHECK_INT(c.err14, -ETIMEDOUT);
    if (c.err14_at - c.sent_at < 1990 || c.err14_at - c.sent_at > 4000)
        fprintf(stderr, "late: timed out after %lld ms\n", (long long)(c.err14_at - c.sent_at));
    CHECK(c.err14_at - c.sent_at >= 1990);
    CHECK(c.err14_at - c.sent_at <= 4000);
    CHECK_INT(c.others, 0);
    CHECK_INT(c.other_errors, 0);

    pthread_mutex_lock(&seen.mu);
    CHECK_INT(poll_.g1s, 1);
    CHECK_INT(poll_.g2s, 1);
    CHECK_INT(poll_.x1s, 1);
    CHECK_INT(poll_.stray, 0); /* neither "direct" nor "late" was resumed */
    /* the server's times are CLOCK_MONOTONIC like the loop's: each GET came after retry ms
     * (300; 0.9 x 300 is where the conformance test fails a client) and not much later */
    long long d1 = (long long)(poll_.g1_at - poll_.p10_end);
    long long d2 = (long long)(poll_.g2_at - poll_.g1_end);
    if (d1 < 295 || d1 > 1000 || d2 < 295 || d2 > 1000)
        fprintf(stderr, "resumed after %lld and %lld ms\n", d1, d2);
    CHECK(poll_.p10_end > 0 && poll_.g1_end > 0);
    CHECK(d1 >= 295 && d1 <= 1000);
    CHECK(d2 >= 295 && d2 <= 1000);
    CHECK_STR(poll_.g1_accept, "text/event-stream");
    CHECK_STR(poll_.g1_sid, "s-poll");
    CHECK_STR(poll_.g1_proto, "2025-11-25");
    CHECK_STR(poll_.g1_auth, "Bearer s3cret");
    /* the resumed GET that stayed open after the answer was stopped by the client, at once */
    CHECK(poll_.hold_end > 0);
    CHECK(poll_.hold_toe != MHD_REQUEST_TERMINATED_COMPLETED_OK);
    CHECK(poll_.hold_end - c.got10_at < 1000);
    pthread_mutex_unlock(&seen.mu);

    loop_timer_cancel(t);
    loop_timer_cancel(c.wait);
    http_upstream_free(c.u);
    loop_free(c.loop);
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
    struct http_upstream *u;
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
    CHECK_INT(http_upstream_send(c->u, msg, strlen(msg), flags, tag), 0);
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
        c->legacy_at_1 = http_upstream_is_legacy(c->u);
        c->open_stream_rc = http_upstream_open_stream(c->u);
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
    pthread_mutex_lock(&seen.mu);
    bool all = legacy.messages >= c->want_messages;
    pthread_mutex_unlock(&seen.mu);
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
    const struct http_upstream_handler h = {
        .on_message = l_message, .on_error = l_error, .on_close = l_close};

    fprintf(stderr, "legacy: %s, initialize answered %u, endpoint '%s'%s\n", path, init_status,
            endpoint, legacy_sse ? ", SSE from the start" : "");
    pthread_mutex_lock(&seen.mu);
    unsigned gen = legacy.gen;
    memset(&legacy, 0, sizeof(legacy));
    legacy.gen = gen + 1;
    pthread_cond_broadcast(&cv);
    legacy.init_status = init_status;
    const char *mark = strstr(endpoint, "PORT");
    if (mark)
        snprintf(legacy.endpoint, sizeof(legacy.endpoint), "%.*s%u%s", (int)(mark - endpoint),
                 endpoint, port, mark + 4);
    else
        snprintf(legacy.endpoint, sizeof(legacy.endpoint), "%s", endpoint);
    pthread_mutex_unlock(&seen.mu);

    snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_upstream_spec spec = {
        .url = url, .headers = headers, .timeout_ms = timeout_ms, .legacy_sse = legacy_sse};
    CHECK_INT(http_upstream_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK(http_upstream_is_legacy(c.u) == legacy_sse);
    CHECK_INT(loop_timer_add(c.loop, 10000, guard, &c, &t), 0);
    c.t0 = loop_now(c.loop);
    l_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
           HTTP_UPSTREAM_INITIALIZE, 1);
    if (legacy_sse) /* before the endpoint is known: waits for it, in order */
        l_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"early\"}", 0, 0);

    CHECK_INT(loop_run(c.loop), 0);

    pthread_mutex_lock(&seen.mu);
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
        CHECK(!http_upstream_is_legacy(c.u));
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
    pthread_mutex_unlock(&seen.mu);

    /* the connection is over: later messages fail, the stream is not reopened */
    if (c.closes) {
        c.expect = L_UNAUTHORIZED;
        c.init_error = 0;
        l_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0, 1);
        CHECK_INT(loop_run(c.loop), 0);
        CHECK_INT(c.init_error, c.close_reason);
        CHECK_INT(c.closes, 1);
        pthread_mutex_lock(&seen.mu);
        CHECK_INT(legacy.messages, c.want_messages);
        pthread_mutex_unlock(&seen.mu);
    }

    loop_timer_cancel(c.wait);
    loop_timer_cancel(t);
    http_upstream_free(c.u);
    loop_free(c.loop);
}

/* messages waiting for a legacy endpoint are bounded */
static void test_legacy_queue_bound(void)
{
    struct loop *l = NULL;
    struct http_upstream *u = NULL;
    char url[128];
    const char *ping = "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}";
    const struct http_upstream_handler h = {.on_message = l_message};

    snprintf(url, sizeof(url), "http://127.0.0.1:%u/sse", port);
    CHECK_INT(loop_new(&l), 0);
    struct http_upstream_spec spec = {.url = url, .legacy_sse = true};
    CHECK_INT(http_upstream_new(l, &spec, &h, NULL, &u, NULL), 0);
    int k = 0;
    for (int i = 0; i < HTTP_UPSTREAM_PENDING_MAX && k == 0; i++)
        k = http_upstream_send(u, ping, strlen(ping), 0, 0);
    CHECK_INT(k, 0);
    CHECK_INT(http_upstream_send(u, ping, strlen(ping), 0, 0), -ENOBUFS);
    CHECK_INT(http_upstream_open_stream(u), 0); /* legacy: a no-op */
    http_upstream_free(u);
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

/* ---- the GET stream's order, sessions that change, secrets in messages ---- */

struct oclient {
    struct loop *loop;
    struct http_upstream *u;
    int phase, errors, closes;
    bool resess;
};

static void o_send(struct oclient *c, const char *msg, unsigned flags, uint64_t tag)
{
    CHECK_INT(http_upstream_send(c->u, msg, strlen(msg), flags, tag), 0);
}

static const char o_init[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}";
static const char o_inited[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
static const char o_call[] = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\"}";

static void o_message(const char *msg, size_t len, void *userdata)
{
    struct oclient *c = userdata;
    bool init = memmem(msg, len, "\"id\":1", 6) != NULL;
    if (init && !c->resess) {
        o_send(c, o_inited, 0, 0);
        CHECK_INT(http_upstream_open_stream(c->u), 0);
        o_send(c, o_call, 0, 5);
        return;
    }
    if (init && c->phase == 0) { /* the first session: its GET stream gets an id */
        c->phase = 1;
        o_send(c, o_inited, 0, 0);
        CHECK_INT(http_upstream_open_stream(c->u), 0);
        return;
    }
    if (init) { /* the second session (no id): the GET stream starts afresh */
        c->phase = 3;
        CHECK_STR(http_upstream_session_id(c->u), "");
        o_send(c, o_inited, 0, 0);
        int k = http_upstream_open_stream(c->u);
        CHECK(k == 0 || k == -EALREADY);
        o_send(c, o_call, 0, 5);
        return;
    }
    loop_quit(c->loop, 0); /* the answer to the call */
}

static void o_error(int error, uint64_t tag, void *userdata)
{
    struct oclient *c = userdata;
    (void)tag;
    fprintf(stderr, "order: unexpected error %d\n", error);
    c->errors++;
}

static void o_close(int reason, void *userdata)
{
    ((struct oclient *)userdata)->closes++;
    (void)reason;
}

static void o_tick(struct loop_timer *t, void *userdata)
{
    struct oclient *c = userdata;
    pthread_mutex_lock(&seen.mu);
    bool got = order.gets >= 1;
    pthread_mutex_unlock(&seen.mu);
    if (c->phase == 1 && got) { /* re-initialize, as after a lost session */
        c->phase = 2;
        o_send(c, o_init, HTTP_UPSTREAM_INITIALIZE, 1);
    }
    loop_timer_rearm(t, 20);
}

static void run_order(bool resess)
{
    struct oclient c = {.resess = resess};
    struct loop_timer *t = NULL, *tick = NULL;
    char url[128];
    static const struct http_upstream_handler h = {
        .on_message = o_message, .on_error = o_error, .on_close = o_close};

    memset(&order, 0, sizeof(order));
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/%s", port, resess ? "resess" : "order");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_upstream_spec spec = {.url = url, .timeout_ms = 5000};
    CHECK_INT(http_upstream_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, guard, &c, &t), 0);
    CHECK_INT(loop_timer_add(c.loop, 20, o_tick, &c, &tick), 0);
    o_send(&c, o_init, HTTP_UPSTREAM_INITIALIZE, 1);
    CHECK_INT(loop_run(c.loop), 0);
    CHECK_INT(c.errors, 0);
    pthread_mutex_lock(&seen.mu);
    if (!resess) {
        CHECK_INT(order.gets, 1);
        /* the GET came once notifications/initialized was answered, the call after the GET */
        CHECK(order.notif_answered != 0 && order.get_at >= order.notif_answered);
        CHECK(order.call_at >= order.get_at);
        CHECK_STR(order.get_sid, "o1");
        CHECK_STR(order.call_sid, "o1");
    } else {
        CHECK_INT(order.inits, 2);
        CHECK(order.gets >= 1);
        /* the second session has no id: neither the old id nor its last event id are sent */
        CHECK_STR(order.call_sid, "");
        if (order.gets >= 2) {
            CHECK_STR(order.get_sid, "");
            CHECK_STR(order.get_lei, "");
        }
    }
    pthread_mutex_unlock(&seen.mu);
    loop_timer_cancel(t);
    loop_timer_cancel(tick);
    http_upstream_free(c.u);
    loop_free(c.loop);
}

static void test_order_and_sessions(void)
{
    run_order(false);
    run_order(true);

    /* an expanded URL may hold a token: error messages do not quote it */
    struct loop *l = NULL;
    struct http_upstream *u = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(loop_new(&l), 0);
    struct http_upstream_spec bad = {.url = "ftp://h/?token=s3cret"};
    CHECK_INT(http_upstream_new(l, &bad, &handler_, NULL, &u, &e), -EINVAL);
    CHECK(strstr(err_msg(&e), "s3cret") == NULL);
    struct http_upstream_spec bad2 = {.url = "http://h/?token=s3cret x"};
    CHECK_INT(http_upstream_new(l, &bad2, &handler_, NULL, &u, &e), -EINVAL);
    CHECK(strstr(err_msg(&e), "s3cret") == NULL);
    loop_free(l);
}

/* ---- headers replaced within a session, the server's challenge ---- */

struct aclient {
    struct loop *loop;
    struct http_upstream *u;
    int err2, err4, others;
    bool got3;
    char challenge2[256], challenge4[256];
};

static void a_send(struct aclient *c, int id, const char *tool)
{
    char msg[160];
    snprintf(
        msg, sizeof(msg),
        "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\"}}",
        id, tool);
    CHECK_INT(http_upstream_send(c->u, msg, strlen(msg), 0, (uint64_t)id), 0);
}

static void a_message(const char *msg, size_t len, void *userdata)
{
    struct aclient *c = userdata;
    int id = msg_id(msg, len, NULL);
    const char *bad[] = {"Authorization Bearer new", NULL};

    if (id == 1) {
        CHECK(http_upstream_challenge(c->u) == NULL);
        const char *n = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
        CHECK_INT(http_upstream_send(c->u, n, strlen(n), 0, 0), 0);
        /* refused: the headers stay as they were (the call still carries the old token) */
        CHECK_INT(http_upstream_set_headers(c->u, bad), -EINVAL);
        a_send(c, 2, "echo");
    } else if (id == 3) {
        c->got3 = true;
        http_upstream_answered(c->u, 3);
        a_send(c, 4, "forbidden");
    } else {
        c->others++;
    }
}

static void a_error(int error, uint64_t tag, void *userdata)
{
    struct aclient *c = userdata;
    const char *ch = http_upstream_challenge(c->u);
    const char *fresh[] = {"Authorization: Bearer new", NULL};

    if (tag == 2) {
        c->err2 = error;
        snprintf(c->challenge2, sizeof(c->challenge2), "%s", ch ? ch : "(none)");
        /* a new token for the same session */
        CHECK_INT(http_upstream_set_headers(c->u, fresh), 0);
        a_send(c, 3, "echo");
    } else if (tag == 4) {
        c->err4 = error;
        snprintf(c->challenge4, sizeof(c->challenge4), "%s", ch ? ch : "(none)");
        loop_quit(c->loop, 0);
    } else {
        fprintf(stderr, "auth: unexpected error %d for tag %llu\n", error, (unsigned long long)tag);
        c->others++;
    }
}

static void test_headers_and_challenge(void)
{
    struct aclient c = {0};
    struct loop_timer *t = NULL;
    char url[128];
    const char *headers[] = {"Authorization: Bearer old", NULL};
    const struct http_upstream_handler h = {.on_message = a_message, .on_error = a_error};

    memset(&auth, 0, sizeof(auth));
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/auth", port);
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_upstream_spec spec = {.url = url, .headers = headers, .timeout_ms = 5000};
    CHECK_INT(http_upstream_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK(http_upstream_challenge(c.u) == NULL);
    CHECK_INT(loop_timer_add(c.loop, 10000, guard, &c, &t), 0);
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}";
    CHECK_INT(http_upstream_send(c.u, init, strlen(init), HTTP_UPSTREAM_INITIALIZE, 1), 0);

    CHECK_INT(loop_run(c.loop), 0);

    CHECK_INT(c.err2, -EACCES); /* 401, reported with the request's tag */
    CHECK_STR(c.challenge2, auth_401);
    CHECK(c.got3);
    CHECK_INT(c.err4, -EPERM); /* 403 */
    CHECK_STR(c.challenge4, auth_403);
    CHECK_INT(c.others, 0);
    CHECK_STR(http_upstream_session_id(c.u), "s-auth"); /* no new session for a new token */
    pthread_mutex_lock(&seen.mu);
    CHECK_INT(auth.calls, 3);
    CHECK_STR(auth.init_auth, "Bearer old");
    CHECK_STR(auth.call1_auth, "Bearer old");
    CHECK_STR(auth.call2_auth, "Bearer new");
    CHECK_STR(auth.call2_sid, "s-auth");
    pthread_mutex_unlock(&seen.mu);
    CHECK_INT(http_upstream_set_headers(c.u, NULL), 0); /* none at all is fine too */

    loop_timer_cancel(t);
    http_upstream_free(c.u);
    loop_free(c.loop);
}

static void test_all(void)
{
    daemon_ = httpd_start(handler, NULL, completed, 0, &port);
    run_session(404);
    run_session(400);
    test_free_in_callback();
    test_refused_and_bad_spec();
    test_polling();
    test_legacy();
    test_legacy_queue_bound();
    test_order_and_sessions();
    test_headers_and_challenge();
    pthread_mutex_lock(&seen.mu);
    stopping = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&seen.mu);
    MHD_stop_daemon(daemon_);
}

TESTS_MAIN(test_all)
