/* test_http_conn.c - the Streamable HTTP upstream against a tiny Streamable HTTP server
 * (http_fixture.h): a session end to end (initialize, the session id, JSON, arrays and SSE
 * answers, the GET stream and its reconnection, a lost session, the DELETE), freeing from a
 * callback, refused connections and bad specs, the order of the GET stream and the requests
 * around it, sessions that change, headers replaced within a session after a 401, and the
 * request each message came for (two calls answered at once, each on its own stream), and what
 * is kept across requests (one easy handle and one connection for sequential requests; a
 * rotated secret, a new protocol version or session on the very next request), and answers of
 * every size handed on from the buffer they were read into, which a writer may hold while the
 * next answers arrive (with and without Content-Length), and a request in pieces read by
 * libcurl from the buffer they lie in. The
 * resumption of answers is test_http_resume.c's, the legacy transport test_http_legacy.c's. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "core/rblock.h"
#include "http_fixture.h"
#include "httpd.h" /* also named here: CMake links libmicrohttpd to tests that include it */

/* what the server saw; written by its thread under fx_mu, read after loop_run */
struct seen {
    char init_sid[F];
    char notif_sid[F], notif_proto[F];
    char tools_sid[F], tools_proto[F], tools_accept[F], tools_ctype[F], tools_auth[F];
    int gets;
    char get1_lei[F], get2_lei[F], get_accept[F], get_sid[F];
    int deletes;
    char del_sid[F];
};

static struct seen seen;
/* what the server answers a request whose session it does not know: 404 as the spec says, or
 * 400 as the TypeScript SDK's servers do */
static unsigned stale_status = 404;

/* /order: the GET stream must wait for notifications/initialized's answer, and requests sent
 * after http_conn_open_stream() must wait for the GET; /resess: sessions that change */
struct order_seen {
    int64_t notif_answered, get_at, call_at;
    int inits, gets;
    char get_lei[F], get_sid[F], call_sid[F];
};
static struct order_seen order;

static const char tools_sse[] =
    "id: p1\nretry: 5000\ndata: \n\n" /* priming */
    ": a comment\n"
    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"
    "event: other\ndata: {\"not\":\"a message\"}\n\n" /* not a message */
    "data: {\"jsonrpc\":\"2.0\",\n"
    "data: \"id\":2,\"result\":{}}\n\n";

/* the method of a POSTed message, and for tools/call the tool's name */

static enum MHD_Result post(struct MHD_Connection *c, const struct upload *u)
{
    char name[F], tool[F];
    parse_post(u, name, tool);

    pthread_mutex_lock(&fx_mu);
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
    pthread_mutex_unlock(&fx_mu);
    return ret;
}

static enum MHD_Result get(struct MHD_Connection *c)
{
    pthread_mutex_lock(&fx_mu);
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
    pthread_mutex_unlock(&fx_mu);
    return ret;
}

static enum MHD_Result order_req(struct MHD_Connection *c, const char *url, const char *method,
                                 struct upload *u)
{
    char name[F], tool[F];
    bool resess = strcmp(url, "/resess") == 0;
    if (strcmp(method, "GET") == 0) {
        pthread_mutex_lock(&fx_mu);
        order.gets++;
        order.get_at = now_ms();
        pthread_cond_broadcast(&fx_cv);
        httpd_header(c, "Last-Event-ID", order.get_lei, F);
        httpd_header(c, "Mcp-Session-Id", order.get_sid, F);
        pthread_mutex_unlock(&fx_mu);
        if (resess) /* an id to resume from, then the end */
            return httpd_reply(c, 200, "text/event-stream", "id: old-1\nretry: 60000\ndata: \n\n",
                               NULL);
        return httpd_reply(c, 405, NULL, "", NULL);
    }
    parse_post(u, name, tool);
    if (strcmp(name, "initialize") == 0) {
        pthread_mutex_lock(&fx_mu);
        int n = ++order.inits;
        pthread_mutex_unlock(&fx_mu);
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
        pthread_mutex_lock(&fx_mu);
        order.notif_answered = now_ms();
        pthread_mutex_unlock(&fx_mu);
        return httpd_reply(c, 202, NULL, "", NULL);
    }
    pthread_mutex_lock(&fx_mu);
    /* the client starts the call after the GET, but the server's threads may see them in either
     * order: the call is answered once the GET is there (bounded), as a server that answers
     * on the stream would need it */
    struct timespec until;
    (void)clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    while (order.gets < 1 && !fx_stopping && pthread_cond_timedwait(&fx_cv, &fx_mu, &until) == 0)
        ;
    order.call_at = now_ms();
    httpd_header(c, "Mcp-Session-Id", order.call_sid, F);
    pthread_mutex_unlock(&fx_mu);
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
        pthread_mutex_lock(&fx_mu);
        snprintf(auth.init_auth, F, "%s", a);
        pthread_mutex_unlock(&fx_mu);
        return httpd_reply(c, 200, "application/json",
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "s-auth");
    }
    if (strcmp(name, "tools/call") != 0)
        return httpd_reply(c, 202, NULL, "", NULL);
    pthread_mutex_lock(&fx_mu);
    int n = ++auth.calls;
    if (n == 1)
        snprintf(auth.call1_auth, F, "%s", a);
    if (n == 2) {
        snprintf(auth.call2_auth, F, "%s", a);
        httpd_header(c, "Mcp-Session-Id", auth.call2_sid, F);
    }
    pthread_mutex_unlock(&fx_mu);
    if (strcmp(tool, "forbidden") == 0)
        return reply_challenge(c, 403, auth_403);
    if (strcmp(a, "Bearer new") != 0)
        return reply_challenge(c, 401, auth_401);
    return httpd_reply(c, 200, "application/json", "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}",
                       NULL);
}

/* /tags: two calls in flight at once (the first is answered only once the second arrived),
 * each answered on its own SSE stream with a server request (id 100 + the call's) before its
 * result */
static int tags_calls_in; /* under fx_mu */

static enum MHD_Result tags_req(struct MHD_Connection *c, struct upload *u)
{
    char name[F], tool[F], body[512];
    parse_post(u, name, tool);
    int id = msg_id(u->data ? u->data : "", u->len, NULL);
    if (strcmp(name, "initialize") == 0)
        return httpd_reply(c, 200, "application/json",
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "t1");
    if (strcmp(name, "tools/call") != 0)
        return httpd_reply(c, 202, NULL, "", NULL);
    pthread_mutex_lock(&fx_mu);
    tags_calls_in++;
    pthread_cond_broadcast(&fx_cv);
    struct timespec until;
    (void)clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    while (tags_calls_in < 2 && !fx_stopping && pthread_cond_timedwait(&fx_cv, &fx_mu, &until) == 0)
        ;
    pthread_mutex_unlock(&fx_mu);
    snprintf(body, sizeof(body),
             "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%d,"
             "\"method\":\"elicitation/create\",\"params\":{}}\n\n"
             "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}\n\n",
             100 + id, id);
    return httpd_reply(c, 200, "text/event-stream", body, NULL);
}

/* /reuse: what each request carried, and from which client port (one port: one connection,
 * kept alive). The initialize answers session "r1", then "r2" (a re-initialization). */
#define REUSE_MAX 16
struct reuse_seen {
    int n, inits;
    char auth[REUSE_MAX][F], sid[REUSE_MAX][F], proto[REUSE_MAX][F], mname[REUSE_MAX][F];
    unsigned port[REUSE_MAX];
    int id[REUSE_MAX];
    size_t len[REUSE_MAX];   /* of the body */
    bool body_ok[REUSE_MAX]; /* a whole message: it ends where its length says */
};
static struct reuse_seen reuse;

static enum MHD_Result reuse_req(struct MHD_Connection *c, struct upload *u)
{
    char name[F], tool[F], body[128];
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr_in *sa =
        ci ? (const struct sockaddr_in *)(const void *)ci->client_addr : NULL;
    int id = msg_id(u->data ? u->data : "", u->len, NULL);
    parse_post(u, name, tool);
    pthread_mutex_lock(&fx_mu);
    int i = reuse.n < REUSE_MAX ? reuse.n++ : REUSE_MAX - 1;
    httpd_header(c, "Authorization", reuse.auth[i], F);
    httpd_header(c, "Mcp-Session-Id", reuse.sid[i], F);
    httpd_header(c, "MCP-Protocol-Version", reuse.proto[i], F);
    httpd_header(c, "Mcp-Name", reuse.mname[i], F);
    reuse.port[i] = sa ? ntohs(sa->sin_port) : 0;
    reuse.id[i] = id;
    reuse.len[i] = u->len;
    reuse.body_ok[i] =
        u->data && u->len > 0 && u->data[u->len - 1] == '}' && strlen(u->data) == u->len;
    int inits = strcmp(name, "initialize") == 0 ? ++reuse.inits : 0;
    pthread_mutex_unlock(&fx_mu);
    snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}", id);
    return httpd_reply(c, 200, "application/json", body,
                       inits == 1  ? "r1"
                       : inits > 1 ? "r2"
                                   : NULL);
}

/* /big: the answer to id N is a result whose text is big_len(N) bytes of one letter, chunked
 * (no Content-Length) for the tool "chunked" */
static size_t big_len(int id)
{
    static const size_t lens[] = {0, 100, 300 * 1024, 1024 * 1024, 50, 3 * 1024 * 1024 + 7};
    return id > 0 && id < (int)(sizeof(lens) / sizeof(lens[0])) ? lens[id] : 1;
}

struct big_body {
    char *text;
    size_t len;
};

static ssize_t big_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct big_body *b = cls;
    size_t off = (size_t)pos;
    if (off >= b->len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = b->len - off < max ? b->len - off : max;
    n = n > 7000 ? 7000 : n; /* small, uneven chunks */
    memcpy(buf, b->text + off, n);
    return (ssize_t)n;
}

static void big_free(void *cls)
{
    struct big_body *b = cls;
    free(b->text);
    free(b);
}

static char *big_text(int id, size_t *ret_len)
{
    size_t n = big_len(id);
    char *s = malloc(n + 128);
    if (!s)
        return NULL;
    int head = snprintf(s, 128, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"t\":\"", id);
    memset(s + head, 'a' + id, n);
    memcpy(s + (size_t)head + n, "\"}}", 4);
    *ret_len = (size_t)head + n + 3;
    return s;
}

static enum MHD_Result big_req(struct MHD_Connection *c, struct upload *u)
{
    char name[F], tool[F];
    int id = msg_id(u->data ? u->data : "", u->len, NULL);
    parse_post(u, name, tool);
    struct big_body *b = calloc(1, sizeof(*b));
    if (!b || !(b->text = big_text(id, &b->len))) {
        free(b);
        return MHD_NO;
    }
    if (strcmp(tool, "chunked") == 0)
        return httpd_queue(
            c, 200, "application/json", NULL,
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, big_read, b, big_free));
    struct MHD_Response *r =
        MHD_create_response_from_buffer(b->len, b->text, MHD_RESPMEM_MUST_FREE);
    if (!r)
        big_free(b);
    else
        free(b);
    return httpd_queue(c, 200, "application/json", NULL, r);
}

/* /pieces: each body as it arrived (a copy) and the headers that say how it came, answered
 * with a result for its id */
#define PIECES_MAX 4
static struct {
    int n;
    char *body[PIECES_MAX];
    size_t len[PIECES_MAX];
    char te[PIECES_MAX][F], expect[PIECES_MAX][F], clen[PIECES_MAX][F];
} pieces;

static enum MHD_Result pieces_req(struct MHD_Connection *c, struct upload *u)
{
    char body[128];
    int id = msg_id(u->data ? u->data : "", u->len, NULL);
    pthread_mutex_lock(&fx_mu);
    if (pieces.n < PIECES_MAX) {
        int i = pieces.n++;
        pieces.body[i] = malloc(u->len + 1);
        if (pieces.body[i] && u->data)
            memcpy(pieces.body[i], u->data, u->len);
        pieces.len[i] = u->len;
        httpd_header(c, "Transfer-Encoding", pieces.te[i], F);
        httpd_header(c, "Expect", pieces.expect[i], F);
        httpd_header(c, "Content-Length", pieces.clen[i], F);
    }
    pthread_mutex_unlock(&fx_mu);
    snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}", id);
    return httpd_reply(c, 200, "application/json", body, NULL);
}

static enum MHD_Result fx_route(struct MHD_Connection *conn, const char *url, const char *method,
                                struct upload *u)
{
    if (strcmp(url, "/pieces") == 0 && strcmp(method, "POST") == 0)
        return pieces_req(conn, u);
    if (strcmp(url, "/big") == 0 && strcmp(method, "POST") == 0)
        return big_req(conn, u);
    if (strcmp(url, "/reuse") == 0 && strcmp(method, "POST") == 0)
        return reuse_req(conn, u);
    if (strcmp(url, "/tags") == 0 && strcmp(method, "POST") == 0)
        return tags_req(conn, u);
    if (strcmp(url, "/auth") == 0 && strcmp(method, "POST") == 0)
        return auth_req(conn, u);
    if (strcmp(url, "/order") == 0 || strcmp(url, "/resess") == 0)
        return order_req(conn, url, method, u);
    if (strcmp(method, "POST") == 0)
        return post(conn, u);
    if (strcmp(method, "GET") == 0)
        return get(conn);
    if (strcmp(method, "DELETE") == 0) {
        pthread_mutex_lock(&fx_mu);
        seen.deletes++;
        httpd_header(conn, "Mcp-Session-Id", seen.del_sid, F);
        pthread_mutex_unlock(&fx_mu);
        /* as a server without DELETE answers it: 404 and a page, which is fine */
        return httpd_reply(conn, 404, "text/html", "<html>Cannot DELETE /mcp</html>", NULL);
    }
    return httpd_reply(conn, 405, NULL, "", NULL);
}

/* ---- the client side ----------------------------------------------------------------------- */

struct client {
    struct loop *loop;
    struct http_conn *u;
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
    CHECK_INT(http_conn_send(c->u, msg, strlen(msg), init ? HTTP_CONN_INITIALIZE : 0, tag, NULL),
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
        http_conn_free(c->u);
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
            CHECK_INT(http_conn_set_protocol_version(c->u, "2025-11-25"), 0);
            CHECK_INT(http_conn_set_protocol_version(c->u, "bad version"), -EINVAL);
            sendc(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", false, 0);
            sendc(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", false, 0);
            sendc(c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"old/array\"}", false, 0);
            sendc(c, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"bad/type\"}", false, 6);
            CHECK_INT(http_conn_open_stream(c->u), 0);
            CHECK_INT(http_conn_open_stream(c->u), -EALREADY);
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
        CHECK_INT(http_conn_close(c->u, on_done), 0);
        CHECK_INT(http_conn_close(c->u, on_done), -ESHUTDOWN);
        CHECK_INT(http_conn_send(c->u, "{}", 2, 0, 0, NULL), -ESHUTDOWN);
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

static const struct http_conn_handler handler_ = {
    .on_message = on_message, .on_close = on_close, .on_error = on_error};

static void run_session(unsigned stale)
{
    struct client c = {0};
    struct loop_timer *t = NULL;
    struct err e = ERR_INIT;
    char url[128];
    const char *headers[] = {"Authorization: Bearer s3cret", NULL};

    stale_status = stale;
    pthread_mutex_lock(&fx_mu);
    memset(&seen, 0, sizeof(seen));
    pthread_mutex_unlock(&fx_mu);
    fx_url(url, sizeof(url), "/mcp");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {.url = url, .headers = headers, .timeout_ms = 5000};
    CHECK_INT(http_conn_new(c.loop, &spec, &handler_, &c, &c.u, &e), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, fx_guard, &c, &t), 0);
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

    pthread_mutex_lock(&fx_mu);
    CHECK_STR(seen.init_sid, ""); /* the session the connection keeps, as the server saw it */
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
    pthread_mutex_unlock(&fx_mu);

    loop_timer_cancel(t);
    http_conn_free(c.u);
    loop_free(c.loop);
}

static void test_sessions(void)
{
    run_session(404);
    run_session(400);
}

/* freeing the upstream from on_message, inside libcurl's write callback (an SSE answer) */
static void test_free_in_callback(void)
{
    struct client c = {.free_in_callback = true};
    struct loop_timer *t = NULL;
    char url[128];

    fx_url(url, sizeof(url), "/mcp");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {.url = url};
    CHECK_INT(http_conn_new(c.loop, &spec, &handler_, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, fx_guard, &c, &t), 0);
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
    struct http_conn *u = NULL;

    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec bad = {.url = "ftp://127.0.0.1/"};
    CHECK_INT(http_conn_new(c.loop, &bad, &handler_, &c, &u, &e), -EINVAL);
    const char *hs[] = {"Authorization Bearer s3cret", NULL};
    struct http_conn_spec bad2 = {.url = "http://127.0.0.1/", .headers = hs};
    CHECK_INT(http_conn_new(c.loop, &bad2, &handler_, &c, &u, &e), -EINVAL);
    CHECK(strstr(err_msg(&e), "s3cret") == NULL);
    CHECK(u == NULL);

    /* port 1 on loopback: nothing listens */
    struct http_conn_spec spec = {.url = "http://127.0.0.1:1/mcp", .timeout_ms = 2000};
    CHECK_INT(http_conn_new(c.loop, &spec, &handler_, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, fx_guard, &c, &t), 0);
    sendc(&c, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", false, 7);
    CHECK_INT(loop_run(c.loop), 0);
    CHECK_INT(c.other_errors, 1);
    CHECK_INT(c.last_error, -ECONNREFUSED);
    loop_timer_cancel(t);
    http_conn_free(c.u);
    loop_free(c.loop);
}

/* ---- the GET stream's order, sessions that change, secrets in messages ---- */

struct oclient {
    struct loop *loop;
    struct http_conn *u;
    int phase, errors, closes;
    bool resess;
};

static void o_send(struct oclient *c, const char *msg, unsigned flags, uint64_t tag)
{
    CHECK_INT(http_conn_send(c->u, msg, strlen(msg), flags, tag, NULL), 0);
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
        CHECK_INT(http_conn_open_stream(c->u), 0);
        o_send(c, o_call, 0, 5);
        return;
    }
    if (init && c->phase == 0) { /* the first session: its GET stream gets an id */
        c->phase = 1;
        o_send(c, o_inited, 0, 0);
        CHECK_INT(http_conn_open_stream(c->u), 0);
        return;
    }
    if (init) { /* the second session (no id): the GET stream starts afresh */
        c->phase = 3;
        o_send(c, o_inited, 0, 0);
        int k = http_conn_open_stream(c->u);
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
    pthread_mutex_lock(&fx_mu);
    bool got = order.gets >= 1;
    pthread_mutex_unlock(&fx_mu);
    if (c->phase == 1 && got) { /* re-initialize, as after a lost session */
        c->phase = 2;
        o_send(c, o_init, HTTP_CONN_INITIALIZE, 1);
    }
    loop_timer_rearm(t, 20);
}

static void run_order(bool resess)
{
    struct oclient c = {.resess = resess};
    struct loop_timer *t = NULL, *tick = NULL;
    char url[128];
    static const struct http_conn_handler h = {
        .on_message = o_message, .on_error = o_error, .on_close = o_close};

    memset(&order, 0, sizeof(order));
    fx_url(url, sizeof(url), resess ? "/resess" : "/order");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {.url = url, .timeout_ms = 5000};
    CHECK_INT(http_conn_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, fx_guard, &c, &t), 0);
    CHECK_INT(loop_timer_add(c.loop, 20, o_tick, &c, &tick), 0);
    o_send(&c, o_init, HTTP_CONN_INITIALIZE, 1);
    CHECK_INT(loop_run(c.loop), 0);
    CHECK_INT(c.errors, 0);
    pthread_mutex_lock(&fx_mu);
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
    pthread_mutex_unlock(&fx_mu);
    loop_timer_cancel(t);
    loop_timer_cancel(tick);
    http_conn_free(c.u);
    loop_free(c.loop);
}

static void test_order_and_sessions(void)
{
    run_order(false);
    run_order(true);

    /* an expanded URL may hold a token: error messages do not quote it */
    struct loop *l = NULL;
    struct http_conn *u = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(loop_new(&l), 0);
    struct http_conn_spec bad = {.url = "ftp://h/?token=s3cret"};
    CHECK_INT(http_conn_new(l, &bad, &handler_, NULL, &u, &e), -EINVAL);
    CHECK(strstr(err_msg(&e), "s3cret") == NULL);
    struct http_conn_spec bad2 = {.url = "http://h/?token=s3cret x"};
    CHECK_INT(http_conn_new(l, &bad2, &handler_, NULL, &u, &e), -EINVAL);
    CHECK(strstr(err_msg(&e), "s3cret") == NULL);
    loop_free(l);
}

/* ---- headers replaced within a session, the server's challenge ---- */

struct aclient {
    struct loop *loop;
    struct http_conn *u;
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
    CHECK_INT(http_conn_send(c->u, msg, strlen(msg), 0, (uint64_t)id, NULL), 0);
}

static void a_message(const char *msg, size_t len, void *userdata)
{
    struct aclient *c = userdata;
    int id = msg_id(msg, len, NULL);
    const char *bad[] = {"Authorization Bearer new", NULL};

    if (id == 1) {
        CHECK(http_conn_challenge(c->u) == NULL);
        const char *n = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
        CHECK_INT(http_conn_send(c->u, n, strlen(n), 0, 0, NULL), 0);
        /* refused: the headers stay as they were (the call still carries the old token) */
        CHECK_INT(http_conn_set_headers(c->u, bad), -EINVAL);
        a_send(c, 2, "echo");
    } else if (id == 3) {
        c->got3 = true;
        http_conn_answered(c->u, 3);
        a_send(c, 4, "forbidden");
    } else {
        c->others++;
    }
}

static void a_error(int error, uint64_t tag, void *userdata)
{
    struct aclient *c = userdata;
    const char *ch = http_conn_challenge(c->u);
    const char *fresh[] = {"Authorization: Bearer new", NULL};

    if (tag == 2) {
        c->err2 = error;
        snprintf(c->challenge2, sizeof(c->challenge2), "%s", ch ? ch : "(none)");
        /* a new token for the same session */
        CHECK_INT(http_conn_set_headers(c->u, fresh), 0);
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
    const struct http_conn_handler h = {.on_message = a_message, .on_error = a_error};

    memset(&auth, 0, sizeof(auth));
    fx_url(url, sizeof(url), "/auth");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {.url = url, .headers = headers, .timeout_ms = 5000};
    CHECK_INT(http_conn_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK(http_conn_challenge(c.u) == NULL);
    CHECK_INT(loop_timer_add(c.loop, 10000, fx_guard, &c, &t), 0);
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}";
    CHECK_INT(http_conn_send(c.u, init, strlen(init), HTTP_CONN_INITIALIZE, 1, NULL), 0);

    CHECK_INT(loop_run(c.loop), 0);

    CHECK_INT(c.err2, -EACCES); /* 401, reported with the request's tag */
    CHECK_STR(c.challenge2, auth_401);
    CHECK(c.got3);
    CHECK_INT(c.err4, -EPERM); /* 403 */
    CHECK_STR(c.challenge4, auth_403);
    CHECK_INT(c.others, 0);
    pthread_mutex_lock(&fx_mu);
    CHECK_INT(auth.calls, 3);
    CHECK_STR(auth.init_auth, "Bearer old");
    CHECK_STR(auth.call1_auth, "Bearer old");
    CHECK_STR(auth.call2_auth, "Bearer new");
    CHECK_STR(auth.call2_sid, "s-auth"); /* no new session for a new token */
    pthread_mutex_unlock(&fx_mu);
    CHECK_INT(http_conn_set_headers(c.u, NULL), 0); /* none at all is fine too */

    loop_timer_cancel(t);
    http_conn_free(c.u);
    loop_free(c.loop);
}

/* ---- the request a message came for ---- */

struct tclient {
    struct loop *loop;
    struct http_conn *u;
    uint64_t req_tag[2], result_tag[2]; /* of calls 11 and 22: their server request, result */
    int results, others;
};

static int t_call_index(int id)
{
    return id == 11 ? 0 : id == 22 ? 1 : -1;
}

static void t_message(const char *msg, size_t len, void *userdata)
{
    struct tclient *c = userdata;
    const char *method = NULL;
    int id = msg_id(msg, len, &method);
    uint64_t tag = http_conn_message_tag(c->u);
    if (id == 1) {
        CHECK_INT(tag, 1);
        const char *n = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
        CHECK_INT(http_conn_send(c->u, n, strlen(n), 0, 0, NULL), 0);
        for (int k = 11; k <= 22; k += 11) {
            char m[128];
            snprintf(m, sizeof(m),
                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
                     "\"params\":{\"name\":\"ask\"}}",
                     k);
            CHECK_INT(http_conn_send(c->u, m, strlen(m), 0, (uint64_t)k, NULL), 0);
        }
        return;
    }
    int i = strcmp(method, "elicitation/create") == 0 ? t_call_index(id - 100) : t_call_index(id);
    if (i < 0) {
        c->others++;
        return;
    }
    if (method[0]) {
        c->req_tag[i] = tag;
        return;
    }
    c->result_tag[i] = tag;
    if (++c->results == 2)
        loop_quit(c->loop, 0);
}

/* Two calls asked for input at once, each on its own answer stream: every message names the
 * request it came for (http_conn_message_tag()), and only while it is delivered. */
static void test_message_tag(void)
{
    struct tclient c = {0};
    struct loop_timer *t = NULL;
    char url[128];
    const struct http_conn_handler h = {.on_message = t_message};

    pthread_mutex_lock(&fx_mu);
    tags_calls_in = 0;
    pthread_mutex_unlock(&fx_mu);
    fx_url(url, sizeof(url), "/tags");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {.url = url, .timeout_ms = 10000};
    CHECK_INT(http_conn_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, fx_guard, &c, &t), 0);
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}";
    CHECK_INT(http_conn_send(c.u, init, strlen(init), HTTP_CONN_INITIALIZE, 1, NULL), 0);
    CHECK_INT(loop_run(c.loop), 0);
    CHECK_INT(c.req_tag[0], 11);
    CHECK_INT(c.req_tag[1], 22);
    CHECK_INT(c.result_tag[0], 11);
    CHECK_INT(c.result_tag[1], 22);
    CHECK_INT(c.others, 0);
    CHECK_INT(http_conn_message_tag(c.u), 0); /* none outside on_message */
    pthread_mutex_lock(&fx_mu);
    CHECK_INT(tags_calls_in, 2);
    pthread_mutex_unlock(&fx_mu);
    loop_timer_cancel(t);
    http_conn_free(c.u);
    loop_free(c.loop);
}

/* ---- what is kept across requests -------------------------------------------------------- */

struct rclient {
    struct loop *loop; /* first: fx_guard */
    struct http_conn *u;
    int answered; /* results seen */
    int want;     /* loop_quit once this many */
    int errors;
};

static void r_message(const char *msg, size_t len, void *userdata)
{
    struct rclient *c = userdata;
    (void)msg;
    (void)len;
    if (++c->answered >= c->want)
        loop_quit(c->loop, 0);
}

static void r_error(int error, uint64_t tag, void *userdata)
{
    struct rclient *c = userdata;
    fprintf(stderr, "unexpected error %d for tag %llu\n", error, (unsigned long long)tag);
    c->errors++;
    loop_quit(c->loop, error);
}

/* Sends the messages ids[0..n) at once (initialize when init) and runs until all are answered. */
static void r_round(struct rclient *c, const int *ids, int n, bool init)
{
    char msg[128];
    for (int i = 0; i < n; i++) {
        snprintf(msg, sizeof(msg),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":{\"name\":\"echo\"}}",
                 ids[i], init ? "initialize" : "tools/call");
        CHECK_INT(http_conn_send(c->u, msg, strlen(msg), init ? HTTP_CONN_INITIALIZE : 0,
                                 (uint64_t)ids[i], NULL),
                  0);
    }
    c->want = c->answered + n;
    CHECK_INT(loop_run(c->loop), 0);
    CHECK_INT(c->answered, c->want);
}

/* Sequential requests share one easy handle and one connection; what changes the headers (a
 * rotated secret, a new protocol version, a new session) reaches the very next request. */
static void test_reuse(void)
{
    struct rclient c = {0};
    struct loop_timer *t = NULL;
    char url[128];
    const char *one[] = {"Authorization: Bearer one", NULL};
    const char *two[] = {"Authorization: Bearer two", NULL};
    const struct http_conn_handler h = {.on_message = r_message, .on_error = r_error};

    pthread_mutex_lock(&fx_mu);
    memset(&reuse, 0, sizeof(reuse));
    pthread_mutex_unlock(&fx_mu);
    fx_url(url, sizeof(url), "/reuse");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {.url = url, .headers = one, .timeout_ms = 5000};
    CHECK_INT(http_conn_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, fx_guard, &c, &t), 0);

    r_round(&c, (int[]){1}, 1, true);
    CHECK_INT(http_conn_set_protocol_version(c.u, "2025-06-18"), 0);
    for (int id = 2; id <= 4; id++)
        r_round(&c, (int[]){id}, 1, false);
    CHECK_INT(http_conn_easy_inits(c.u), 1); /* the initialize's handle did it all */

    CHECK_INT(http_conn_set_headers(c.u, two), 0); /* a rotated secret: on the next request */
    r_round(&c, (int[]){5}, 1, false);
    CHECK_INT(http_conn_set_protocol_version(c.u, "2025-11-25"), 0);
    r_round(&c, (int[]){6}, 1, false);
    r_round(&c, (int[]){7}, 1, true); /* a new session: its id on the next request */
    r_round(&c, (int[]){8}, 1, false);
    CHECK_INT(http_conn_easy_inits(c.u), 1);

    r_round(&c, (int[]){9, 10}, 2, false); /* two at once: a second handle, kept */
    CHECK_INT(http_conn_easy_inits(c.u), 2);
    r_round(&c, (int[]){11, 12}, 2, false);
    CHECK_INT(http_conn_easy_inits(c.u), 2);
    /* a message larger than what is kept between requests, then small ones again: each body
     * whole, of its own length (the message buffer is kept, or not, across requests) */
    size_t big_len = 100 * 1024;
    char *big = malloc(big_len + 1);
    CHECK(big != NULL);
    if (!big)
        exit(2);
    int head = snprintf(big, big_len,
                        "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/call\","
                        "\"params\":{\"name\":\"echo\",\"x\":\"");
    memset(big + head, 'x', big_len - (size_t)head - 3);
    memcpy(big + big_len - 3, "\"}}", 4);
    CHECK_INT(http_conn_send(c.u, big, big_len, 0, 13, NULL), 0);
    c.want = c.answered + 1;
    CHECK_INT(loop_run(c.loop), 0);
    free(big);
    r_round(&c, (int[]){14}, 1, false);
    r_round(&c, (int[]){15}, 1, false);
    CHECK_INT(c.errors, 0);

    pthread_mutex_lock(&fx_mu);
    CHECK_INT(reuse.n, 15);
    for (int i = 0; i < 15; i++)
        CHECK(reuse.body_ok[i]);
    for (int i = 0; i < 8; i++) /* one after the other: in order */
        CHECK_INT(reuse.id[i], i + 1);
    CHECK_INT(reuse.len[12], big_len);
    CHECK_INT(reuse.id[12], 13);
    CHECK_INT(reuse.id[13], 14);
    CHECK_INT(reuse.id[14], 15);
    CHECK_INT(reuse.len[13], reuse.len[14]);
    CHECK_INT(reuse.len[13], reuse.len[7] + 1); /* id 8 -> id 14: one digit more */
    CHECK_INT(reuse.inits, 2);
    for (int i = 1; i <= 3; i++) {
        CHECK_STR(reuse.auth[i], "Bearer one");
        CHECK_STR(reuse.sid[i], "r1");
        CHECK_STR(reuse.proto[i], "2025-06-18");
    }
    for (int i = 0; i <= 7; i++) /* one connection, kept alive */
        CHECK_INT(reuse.port[i], reuse.port[0]);
    CHECK_STR(reuse.auth[4], "Bearer two");
    CHECK_STR(reuse.proto[4], "2025-06-18");
    CHECK_STR(reuse.auth[5], "Bearer two");
    CHECK_STR(reuse.proto[5], "2025-11-25");
    CHECK_STR(reuse.sid[5], "r1");
    CHECK_STR(reuse.sid[6], ""); /* the initialize carries no session */
    CHECK_STR(reuse.sid[7], "r2");
    CHECK_STR(reuse.auth[7], "Bearer two");
    CHECK_STR(reuse.proto[7], "2025-11-25");
    for (int i = 8; i < 12; i++) {
        CHECK_STR(reuse.sid[i], "r2");
        CHECK_STR(reuse.auth[i], "Bearer two");
    }
    pthread_mutex_unlock(&fx_mu);

    loop_timer_cancel(t);
    http_conn_free(c.u);
    loop_free(c.loop);
}

/* 2026-07-28 requests: each with its own Mcp-Method and Mcp-Name in front of the headers the
 * upstream's requests share, never the session; a change of the headers reaches the next. */
static void test_modern_headers(void)
{
    struct rclient c = {0};
    struct loop_timer *t = NULL;
    char url[128], msg[128], name[32];
    const char *one[] = {"Authorization: Bearer one", NULL};
    const char *two[] = {"Authorization: Bearer two", NULL};
    const struct http_conn_handler h = {.on_message = r_message, .on_error = r_error};

    pthread_mutex_lock(&fx_mu);
    memset(&reuse, 0, sizeof(reuse));
    pthread_mutex_unlock(&fx_mu);
    fx_url(url, sizeof(url), "/reuse");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {.url = url, .headers = one, .timeout_ms = 5000};
    CHECK_INT(http_conn_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, fx_guard, &c, &t), 0);
    r_round(&c, (int[]){1}, 1, true); /* a session the modern requests must not carry */

    for (int id = 2; id <= 6; id++) {
        if (id == 5)
            CHECK_INT(http_conn_set_headers(c.u, two), 0);
        snprintf(msg, sizeof(msg),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
                 "\"params\":{\"name\":\"tool%d\"}}",
                 id, id);
        snprintf(name, sizeof(name), "Mcp-Name: tool%d", id);
        const char *hdrs[] = {"Mcp-Method: tools/call", name, NULL};
        CHECK_INT(http_conn_send(c.u, msg, strlen(msg), HTTP_CONN_MODERN, (uint64_t)id, hdrs), 0);
        c.want = c.answered + 1;
        CHECK_INT(loop_run(c.loop), 0);
    }
    CHECK_INT(c.errors, 0);
    CHECK_INT(http_conn_easy_inits(c.u), 1);

    pthread_mutex_lock(&fx_mu);
    CHECK_INT(reuse.n, 6);
    for (int i = 1; i < 6; i++) {
        snprintf(name, sizeof(name), "tool%d", i + 1);
        CHECK_STR(reuse.mname[i], name);
        CHECK_STR(reuse.sid[i], "");
        CHECK_STR(reuse.auth[i], i < 4 ? "Bearer one" : "Bearer two");
        CHECK_INT(reuse.id[i], i + 1);
    }
    pthread_mutex_unlock(&fx_mu);

    loop_timer_cancel(t);
    http_conn_free(c.u);
    loop_free(c.loop);
}

/* ---- answers handed on from where they were read ---------------------------------------- */

struct bclient {
    struct loop *loop; /* first: fx_guard */
    struct http_conn *u;
    int answered, errors;
    bool whole[8], in_block[8];
    struct rblock *held[8]; /* a writer's reference, as framing_sendv() takes one */
    const char *text[8];
    size_t len[8];
};

static void b_message(const char *msg, size_t len, void *userdata)
{
    struct bclient *c = userdata;
    size_t want = 0;
    int id = msg_id(msg, len, NULL);
    char *text = big_text(id, &want);
    if (id > 0 && id < 8) {
        c->whole[id] = text && len == want && memcmp(msg, text, len) == 0 && msg[len] == 0;
        c->in_block[id] = rblock_holds(rblock_delivering(), msg, len);
        if (c->in_block[id]) {
            c->held[id] = rblock_delivering();
            rblock_get(c->held[id]);
            c->text[id] = msg;
            c->len[id] = len;
        }
    }
    free(text);
    c->answered++;
    loop_quit(c->loop, 0);
}

static void b_error(int error, uint64_t tag, void *userdata)
{
    struct bclient *c = userdata;
    fprintf(stderr, "unexpected error %d for tag %llu\n", error, (unsigned long long)tag);
    c->errors++;
    loop_quit(c->loop, error);
}

/* A JSON answer is delivered from the buffer libcurl's bytes were read into (no copy), and a
 * writer may keep a reference to it: the answers after it go into other buffers, and it stays
 * as it was until let go of. Sizes across the mapped threshold, with Content-Length (one buffer
 * of that size) and without (grown as the chunks come). */
static void test_answer_buffers(void)
{
    struct bclient c = {0};
    struct loop_timer *t = NULL;
    char url[128], msg[160];
    const struct http_conn_handler h = {.on_message = b_message, .on_error = b_error};

    fx_url(url, sizeof(url), "/big");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {.url = url, .timeout_ms = 10000, .max_message = 4u << 20};
    CHECK_INT(http_conn_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 20000, fx_guard, &c, &t), 0);
    for (int id = 1; id <= 5; id++) {
        snprintf(msg, sizeof(msg),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
                 "\"params\":{\"name\":\"%s\"}}",
                 id, id == 3 || id == 5 ? "chunked" : "plain");
        CHECK_INT(http_conn_send(c.u, msg, strlen(msg), 0, (uint64_t)id, NULL), 0);
        CHECK_INT(loop_run(c.loop), 0);
        CHECK_INT(c.answered, id);
    }
    CHECK_INT(c.errors, 0);
    CHECK(rblock_delivering() == NULL); /* set only around the call */
    for (int id = 1; id <= 5; id++) {
        size_t want = 0;
        char *text = big_text(id, &want);
        CHECK(c.whole[id]);
        CHECK(c.in_block[id]);
        /* held while the later answers came: never written over */
        CHECK(c.len[id] == want && text && c.text[id] && memcmp(c.text[id], text, want) == 0);
        free(text);
    }
    for (int id = 1; id <= 5; id++)
        for (int j = id + 1; j <= 5; j++)
            CHECK(c.held[id] != c.held[j]);
    for (int id = 1; id <= 5; id++)
        rblock_put(c.held[id], false);

    loop_timer_cancel(t);
    http_conn_free(c.u);
    loop_free(c.loop);
}

/* A message given to the transfer (http_conn_send_take) is sent whole from where it lies; one
 * refused is left to the caller. */
static void test_send_take(void)
{
    struct rclient c = {0};
    struct loop_timer *t = NULL;
    char url[128];
    const struct http_conn_handler h = {.on_message = r_message, .on_error = r_error};
    const size_t lens[] = {200 * 1024, 90};

    pthread_mutex_lock(&fx_mu);
    memset(&reuse, 0, sizeof(reuse));
    pthread_mutex_unlock(&fx_mu);
    fx_url(url, sizeof(url), "/reuse");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {.url = url, .timeout_ms = 5000};
    CHECK_INT(http_conn_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, fx_guard, &c, &t), 0);
    for (int i = 0; i < 2; i++) {
        size_t len = lens[i], cap = len + 100;
        char *m = malloc(cap);
        CHECK(m != NULL);
        if (!m)
            exit(2);
        int head = snprintf(m, cap,
                            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
                            "\"params\":{\"name\":\"echo\",\"x\":\"",
                            i + 1);
        memset(m + head, 'y', len - (size_t)head - 3);
        memcpy(m + len - 3, "\"}}", 3);
        memset(m + len, '#', cap - len); /* no NUL after it: the transfer writes one */
        CHECK_INT(http_conn_send_take(c.u, &m, len, len, 0, (uint64_t)i + 1, NULL), -EINVAL);
        CHECK(m != NULL); /* refused: still the caller's */
        CHECK_INT(http_conn_send_take(c.u, &m, len, cap, 0, (uint64_t)i + 1, NULL), 0);
        CHECK(m == NULL);
        c.want = c.answered + 1;
        CHECK_INT(loop_run(c.loop), 0);
    }
    CHECK_INT(c.errors, 0);
    pthread_mutex_lock(&fx_mu);
    CHECK_INT(reuse.n, 2);
    for (int i = 0; i < 2; i++) {
        CHECK(reuse.body_ok[i]);
        CHECK_INT(reuse.len[i], lens[i]);
        CHECK_INT(reuse.id[i], i + 1);
    }
    pthread_mutex_unlock(&fx_mu);

    loop_timer_cancel(t);
    http_conn_free(c.u);
    loop_free(c.loop);
}

/* A message in pieces (http_conn_sendv) whose params lie in a read buffer: the transfer holds
 * the buffer instead of copying it and libcurl reads the pieces where they lie, with its length
 * (neither chunked nor Expect); the server gets it byte for byte although the caller let go of
 * the buffer and wrote over its own small pieces right after the call. Pieces without a held
 * buffer are copied. The buffer goes with the transfer. */
static void test_sendv_held(void)
{
    struct rclient c = {0};
    struct loop_timer *t = NULL;
    char url[128];
    const struct http_conn_handler h = {.on_message = r_message, .on_error = r_error};
    const char phead[] = "{\"name\":\"echo\",\"arguments\":{\"x\":\"";
    const size_t plen = 3u * 1024u * 1024u + 17u;
    size_t live = rblock_live();

    pthread_mutex_lock(&fx_mu);
    memset(&pieces, 0, sizeof(pieces));
    pthread_mutex_unlock(&fx_mu);
    fx_url(url, sizeof(url), "/pieces");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {.url = url, .timeout_ms = 10000};
    CHECK_INT(http_conn_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 20000, fx_guard, &c, &t), 0);

    struct rblock *b = rblock_new(plen + 100);
    CHECK(b != NULL);
    if (!b)
        exit(2);
    memcpy(b->data, "garbage", 7); /* the params start further in */
    char *params = b->data + 7;
    memcpy(params, phead, sizeof(phead) - 1);
    for (size_t i = sizeof(phead) - 1; i < plen - 3; i++)
        params[i] = (char)('a' + i % 26);
    memcpy(params + plen - 3, "\"}}", 3);
    char head[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":";
    char tail[] = "}";
    struct iovec iov[4] = {
        {.iov_base = head, .iov_len = strlen(head)},
        {.iov_base = params, .iov_len = plen},
        {.iov_base = tail, .iov_len = 0},
        {.iov_base = tail, .iov_len = 1},
    };
    size_t want_len = strlen(head) + plen + 1;
    char *want = malloc(want_len);
    CHECK(want != NULL);
    if (!want)
        exit(2);
    memcpy(want, head, strlen(head));
    memcpy(want + strlen(head), params, plen);
    want[want_len - 1] = '}';

    CHECK_INT(http_conn_sendv(c.u, iov, 4, b, 0, 7, NULL), 0);
    rblock_put(b, false); /* ours: the transfer keeps its own */
    CHECK_INT(rblock_live(), live + 1);
    memset(head, '#', strlen(head)); /* lent for the call only */
    tail[0] = '#';
    c.want = c.answered + 1;
    CHECK_INT(loop_run(c.loop), 0);

    /* small pieces and no held buffer: copied */
    char s1[] = "{\"jsonrpc\":\"2.0\",\"id\":8,", s2[] = "\"method\":\"ping\"}";
    struct iovec small[2] = {{.iov_base = s1, .iov_len = strlen(s1)},
                             {.iov_base = s2, .iov_len = strlen(s2)}};
    CHECK_INT(http_conn_sendv(c.u, small, 2, NULL, 0, 8, NULL), 0);
    s1[0] = '#';
    c.want = c.answered + 1;
    CHECK_INT(loop_run(c.loop), 0);
    CHECK_INT(http_conn_sendv(c.u, small, 0, NULL, 0, 9, NULL), -EINVAL);
    CHECK_INT(c.errors, 0);

    pthread_mutex_lock(&fx_mu);
    CHECK_INT(pieces.n, 2);
    CHECK_INT(pieces.len[0], want_len);
    CHECK(pieces.body[0] && memcmp(pieces.body[0], want, want_len) == 0);
    CHECK_STR(pieces.te[0], "");
    CHECK_STR(pieces.expect[0], "");
    char clen[32];
    snprintf(clen, sizeof(clen), "%zu", want_len);
    CHECK_STR(pieces.clen[0], clen);
    const char small_want[] = "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}";
    CHECK_INT(pieces.len[1], strlen(small_want));
    CHECK(pieces.body[1] && memcmp(pieces.body[1], small_want, strlen(small_want)) == 0);
    for (int i = 0; i < PIECES_MAX; i++)
        free(pieces.body[i]);
    memset(&pieces, 0, sizeof(pieces));
    pthread_mutex_unlock(&fx_mu);
    free(want);

    loop_timer_cancel(t);
    http_conn_free(c.u);
    loop_free(c.loop);
    rblock_spare_drop();
    CHECK_INT(rblock_live(), live); /* the transfer's reference went with it */
}

TESTS_MAIN(test_sessions, test_free_in_callback, test_refused_and_bad_spec, test_order_and_sessions,
           test_headers_and_challenge, test_message_tag, test_reuse, test_modern_headers,
           test_answer_buffers, test_send_take, test_sendv_held)
