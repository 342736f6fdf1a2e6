/* agent_http_listen.c - the HTTP listener of the bridge (agent_http.h): libmicrohttpd on the
 * loop, the checks every request passes, and the three methods of /mcp.
 *
 * The daemon runs in external-event mode: its epoll descriptor is watched by the loop, MHD_run()
 * runs when it is readable, when its timeout passes and after a connection was resumed (a
 * deferred "kick"). A request is read whole (bounded by AGENT_MAX_MESSAGE) before it is
 * judged; the checks that need no body (path, method, Host, Origin, token) answer at once. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "credkit/json.h"
#include "credkit/secmem.h"
#include "credkit/url.h"

#include "core/jsonscan.h"

#include "downstream/agent_http_int.h"
#include "downstream/downstream.h"
#include "downstream/mhd_load.h"

#define META_VERSION      "io.modelcontextprotocol/protocolVersion"
#define META_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define ERR_HEADER        (-32020) /* HeaderMismatch (2026-07-28) */
#define ERR_NO_SESSION    (-32001) /* the SDKs' "Session not found" */
#define HEADER_VALUE_MAX  1024
#define IDLE_TIMEOUT_S    120u /* a connection with nothing under way */
#define TIMER_MAX_MS      60000

/* One HTTP request, as long as its connection serves it. */
struct ah_req {
    struct buf body;
    bool too_big;
    bool answered;
    struct ah_stream *st; /* its response stream, once it has one */
    char sid[64];         /* the Mcp-Session-Id to send (the initialize's answer); "" none */
    struct MHD_Connection *conn;
    bool auth_pending;     /* its token waits for the issuer's keys (agent_http_auth.h) */
    struct list_node wait; /* in h->auth_waiting while suspended for them */
    bool sse_queued;       /* its SSE response is queued */
};

/* ---- the daemon on the loop -------------------------------------------------------------- */

static void run_daemon(struct agent_http *h)
{
    (void)MHD_run(h->daemon);
    MHD_UNSIGNED_LONG_LONG ms = TIMER_MAX_MS;
    if (MHD_get_timeout(h->daemon, &ms) != MHD_YES || ms > TIMER_MAX_MS)
        ms = TIMER_MAX_MS;
    loop_timer_rearm(h->timer, (int64_t)ms);
}

static void on_io(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    (void)io;
    (void)fd;
    (void)events;
    run_daemon(userdata);
}

static void on_timer(struct loop_timer *t, void *userdata)
{
    (void)t;
    run_daemon(userdata);
}

static void on_keepalive(struct loop_timer *t, void *userdata)
{
    struct agent_http *h = userdata;
    struct list_node *i;
    list_for_each (i, &h->agents)
        ah_agent_keepalive(list_entry(i, struct ah_agent, node));
    loop_timer_rearm(t, AH_KEEPALIVE_MS);
}

static void on_kick(void *userdata)
{
    run_daemon(userdata);
}

void ah_kick(struct agent_http *h)
{
    loop_defer_queue(h->loop, &h->kick, on_kick, h);
}

/* ---- answers ----------------------------------------------------------------------------- */

/* Queues resp (NULL: ENOMEM) with its headers and destroys it. challenge: the
 * WWW-Authenticate of a 401 or 403 (NULL: the token's plain one on a 401) */
static enum MHD_Result queue_response(struct MHD_Connection *conn, unsigned status,
                                      struct MHD_Response *resp, const char *type, const char *sid,
                                      const char *challenge)
{
    if (!resp)
        return MHD_NO;
    bool ok = MHD_add_response_header(resp, "Cache-Control", "no-store") == MHD_YES &&
              (!type || MHD_add_response_header(resp, "Content-Type", type) == MHD_YES) &&
              (!sid || !sid[0] || MHD_add_response_header(resp, "Mcp-Session-Id", sid) == MHD_YES);
    if (ok && status == MHD_HTTP_METHOD_NOT_ALLOWED)
        ok = MHD_add_response_header(resp, "Allow", "GET, POST, DELETE") == MHD_YES;
    if (ok && challenge)
        ok = MHD_add_response_header(resp, "WWW-Authenticate", challenge) == MHD_YES;
    else if (ok && status == MHD_HTTP_UNAUTHORIZED)
        ok = MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"mcp-bridge\"") ==
             MHD_YES;
    enum MHD_Result res = ok ? MHD_queue_response(conn, status, resp) : MHD_NO;
    MHD_destroy_response(resp);
    return res;
}

static enum MHD_Result queue_ex(struct MHD_Connection *conn, unsigned status, const char *type,
                                const char *body, size_t len, const char *sid,
                                const char *challenge)
{
    return queue_response(conn, status,
                          MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY),
                          type, sid, challenge);
}

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status, const char *type,
                             const char *body, size_t len, const char *sid)
{
    return queue_ex(conn, status, type, body, len, sid, NULL);
}

/* A refusal: the status, and a JSON-RPC error saying why, for the request id (NULL: "id": null,
 * when the body was not read or had none), with the WWW-Authenticate challenge (NULL: none). */
static enum MHD_Result refuse_ex(struct MHD_Connection *conn, unsigned status, int code,
                                 const char *message, struct json_object *id, const char *challenge)
{
    struct json_object *o = jrpc_new_error(id, code, message, NULL);
    size_t len = 0;
    const char *text = o ? jrpc_serialize(o, &len) : NULL;
    enum MHD_Result res =
        text ? queue_ex(conn, status, "application/json", text, len, NULL, challenge)
             : queue_ex(conn, status, NULL, "", 0, NULL, challenge);
    json_object_put(o);
    return res;
}

static enum MHD_Result refuse_id(struct MHD_Connection *conn, unsigned status, int code,
                                 const char *message, struct json_object *id)
{
    return refuse_ex(conn, status, code, message, id, NULL);
}

static enum MHD_Result refuse(struct MHD_Connection *conn, unsigned status, int code,
                              const char *message)
{
    return refuse_id(conn, status, code, message, NULL);
}

static enum MHD_Result queue_sse(struct MHD_Connection *conn, struct ah_stream *st, const char *sid)
{
    struct MHD_Response *resp = ah_stream_sse_response(st);
    if (!resp)
        return MHD_NO;
    bool ok = MHD_add_response_header(resp, "Content-Type", "text/event-stream") == MHD_YES &&
              MHD_add_response_header(resp, "Cache-Control", "no-store") == MHD_YES &&
              MHD_add_response_header(resp, "X-Accel-Buffering", "no") == MHD_YES &&
              (!sid[0] || MHD_add_response_header(resp, "Mcp-Session-Id", sid) == MHD_YES);
    enum MHD_Result res = ok ? MHD_queue_response(conn, MHD_HTTP_OK, resp) : MHD_NO;
    MHD_destroy_response(resp);
    return res;
}

/* The JSON answer of r's request, now that it came (or its agent went without one). */
static enum MHD_Result queue_json(struct MHD_Connection *conn, struct ah_req *r)
{
    struct ah_stream *st = r->st;
    r->answered = true;
    if (!st->out.len)
        return refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JRPC_CONNECTION_CLOSED,
                      "the request ended without an answer (the bridge is shutting down)");
    return queue_response(conn, st->status, ah_stream_json_response(st), "application/json", r->sid,
                          NULL);
}

/* ---- the checks -------------------------------------------------------------------------- */

static const char *header(struct MHD_Connection *conn, const char *name)
{
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

/* The host of a Host header or an origin's authority: [h, h + *ret_n); the rest must be empty
 * or ":PORT". */
static bool split_host(const char *s, size_t *ret_n)
{
    size_t n;
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end)
            return false;
        n = (size_t)(end - s) + 1;
    } else {
        n = strcspn(s, ":");
    }
    const char *rest = s + n;
    if (*rest == ':')
        rest += 1 + strspn(rest + 1, "0123456789");
    *ret_n = n;
    return n > 0 && *rest == '\0';
}

static bool host_is(const char *s, size_t n, const char *name)
{
    return strlen(name) == n && strncasecmp(s, name, n) == 0;
}

static bool loopback_name(const char *s, size_t n)
{
    return host_is(s, n, "localhost") || host_is(s, n, "127.0.0.1") || host_is(s, n, "[::1]");
}

/* Host names the address bound (or localhost on a loopback bind, or the host of the public
 * URL): a DNS-rebinding page's requests name the attacker's host. A wildcard bind takes any
 * (its agents hold a token). */
static bool host_ok(const struct agent_http *h, const char *host)
{
    size_t n;
    if (h->wildcard)
        return true;
    if (!host || !split_host(host, &n))
        return false;
    return host_is(host, n, h->host) || (h->loopback && loopback_name(host, n)) ||
           (h->public_host[0] && host_is(host, n, h->public_host));
}

/* No Origin (not a browser), one allowed with --allow-origin, or on a loopback bind a loopback
 * origin. */
static bool origin_ok(const struct agent_http *h, const char *origin)
{
    size_t n;
    if (!origin)
        return true;
    for (size_t i = 0; i < h->origins.n; i++)
        if (strcasecmp(origin, h->origins.v[i]) == 0)
            return true;
    if (!h->loopback)
        return false;
    const char *auth = NULL;
    if (strncasecmp(origin, "http://", 7) == 0)
        auth = origin + 7;
    else if (strncasecmp(origin, "https://", 8) == 0)
        auth = origin + 8;
    return auth && split_host(auth, &n) && loopback_name(auth, n);
}

static bool token_ok(const struct agent_http *h, const char *authz)
{
    if (!h->token)
        return true;
    if (!authz || strncasecmp(authz, "Bearer ", 7) != 0)
        return false;
    return secure_streq(authz + 7, h->token);
}

/* The protected-resource metadata (RFC 9728): public, the same for every agent. */
static enum MHD_Result serve_metadata(struct agent_http *h, struct MHD_Connection *conn,
                                      const char *method)
{
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return refuse(conn, MHD_HTTP_METHOD_NOT_ALLOWED, JRPC_INVALID_REQUEST,
                      "the metadata is read with GET");
    const char *doc = ah_auth_metadata(h->auth);
    return queue(conn, MHD_HTTP_OK, "application/json", doc, strlen(doc), NULL);
}

/* The issuer's verdict on the request's token: true when it may go on (or waits for the keys:
 * r->auth_pending), else a refusal queued. */
static bool auth_ok(struct agent_http *h, struct MHD_Connection *conn, struct ah_req *r,
                    enum MHD_Result *ret)
{
    const char *why = NULL;
    enum ah_auth_verdict v =
        ah_auth_check(h->auth, header(conn, MHD_HTTP_HEADER_AUTHORIZATION), &why);
    r->auth_pending = v == AH_AUTH_PENDING;
    if (v == AH_AUTH_OK || v == AH_AUTH_PENDING)
        return true;
    if (v == AH_AUTH_UNAVAILABLE) {
        *ret = refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JRPC_INTERNAL_ERROR, why);
        return false;
    }
    char *challenge = ah_auth_challenge(h->auth, v, why);
    if (v != AH_AUTH_MISSING)
        log_info(h->log, "an HTTP agent's token was refused: %s", why);
    *ret = challenge
               ? refuse_ex(conn, v == AH_AUTH_SCOPE ? MHD_HTTP_FORBIDDEN : MHD_HTTP_UNAUTHORIZED,
                           JRPC_INVALID_REQUEST, why, NULL, challenge)
               : MHD_NO;
    free(challenge);
    return false;
}

/* The issuer's keys came (or will not): the requests waiting for them are judged again. */
static void on_keys(void *userdata)
{
    struct agent_http *h = userdata;
    if (list_is_empty(&h->auth_waiting))
        return;
    while (!list_is_empty(&h->auth_waiting)) {
        struct ah_req *r = list_entry(list_first(&h->auth_waiting), struct ah_req, wait);
        list_remove(&r->wait);
        MHD_resume_connection(r->conn);
    }
    ah_kick(h);
}

/* The checks that need no body: NULL when the request may go on, else a refusal queued. */
static bool precheck(struct agent_http *h, struct MHD_Connection *conn, const char *url,
                     const char *method, enum MHD_Result *ret)
{
    if (h->auth && ah_auth_is_metadata_path(h->auth, url)) {
        *ret = serve_metadata(h, conn, method);
        return false;
    }
    if (strcmp(url, AGENT_HTTP_PATH) != 0) {
        *ret = refuse(conn, MHD_HTTP_NOT_FOUND, JRPC_INVALID_REQUEST,
                      "no such endpoint: the MCP endpoint is " AGENT_HTTP_PATH);
        return false;
    }
    if (!host_ok(h, header(conn, MHD_HTTP_HEADER_HOST)) ||
        !origin_ok(h, header(conn, MHD_HTTP_HEADER_ORIGIN))) {
        log_warn(h->log, "an HTTP request with a Host or Origin not allowed was refused (403)");
        *ret = refuse(conn, MHD_HTTP_FORBIDDEN, JRPC_INVALID_REQUEST,
                      "Host or Origin not allowed (see mcp-bridge serve --allow-origin)");
        return false;
    }
    if (!token_ok(h, header(conn, MHD_HTTP_HEADER_AUTHORIZATION))) {
        *ret = refuse(conn, MHD_HTTP_UNAUTHORIZED, JRPC_INVALID_REQUEST,
                      "this bridge needs its bearer token (Authorization: Bearer ...)");
        return false;
    }
    const char *length = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull(length, NULL, 10) > AGENT_MAX_MESSAGE) { /* not read at all */
        char text[80];
        snprintf(text, sizeof(text), "a message over %u bytes", AGENT_MAX_MESSAGE);
        *ret = refuse(conn, MHD_HTTP_CONTENT_TOO_LARGE, JRPC_INVALID_REQUEST, text);
        return false;
    }
    if (strcmp(method, MHD_HTTP_METHOD_POST) != 0 && strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        strcmp(method, MHD_HTTP_METHOD_DELETE) != 0) {
        *ret = refuse(conn, MHD_HTTP_METHOD_NOT_ALLOWED, JRPC_INVALID_REQUEST,
                      "the MCP endpoint takes POST, GET and DELETE");
        return false;
    }
    return true;
}

/* ---- 2026-07-28: the Mcp-* headers ------------------------------------------------------- */

/* A header value as sent: plain, or "=?base64?...?=" decoded into buf. NULL when invalid. */
static const char *header_decode(const char *v, char *buf, size_t size)
{
    size_t n = strlen(v);
    if (n < 11 || strncasecmp(v, "=?base64?", 9) != 0 || strcmp(v + n - 2, "?=") != 0)
        return v;
    size_t b64 = n - 11;
    if (b64 % 4 || b64 / 4 * 3 >= size)
        return NULL;
    int out = EVP_DecodeBlock((unsigned char *)buf, (const unsigned char *)v + 9, (int)b64);
    if (out < 0)
        return NULL;
    size_t len = (size_t)out;
    for (size_t i = 0; i < 2 && b64 > i && v[9 + b64 - 1 - i] == '='; i++)
        len--;
    buf[len] = '\0';
    return strlen(buf) == len ? buf : NULL;
}

/* The header name must mirror want: NULL when it does, else why not (static text). */
static const char *mirror(struct MHD_Connection *conn, const char *name, const char *want)
{
    char buf[HEADER_VALUE_MAX];
    const char *v = header(conn, name);
    if (!v)
        return "missing";
    /* a field value's surrounding spaces and tabs are not part of it (RFC 9110, 5.5) */
    v += strspn(v, " \t");
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    char trimmed[HEADER_VALUE_MAX];
    if (n >= sizeof(trimmed))
        return "does not match the body";
    memcpy(trimmed, v, n);
    trimmed[n] = '\0';
    const char *plain = header_decode(trimmed, buf, sizeof(buf));
    if (!plain || !want || strcmp(plain, want) != 0)
        return "does not match the body";
    return NULL;
}

/* A 2026-07-28 request's _meta envelope, then its headers against its body
 * (streamable-http.mdx, "Request Metadata"): 0, or a refusal queued in *ret. An envelope without
 * its protocol version or client capabilities is 400 with -32602 (clientInfo is optional), and
 * initialize, which the revision removed, 404 with -32601, each for the request's id. */
static int check_headers(struct MHD_Connection *conn, const struct jrpc_msg *m,
                         enum MHD_Result *ret)
{
    struct json_object *meta = json_get_object(m->params, "_meta");
    const char *version = json_get_string(meta, META_VERSION);
    if (!version || !json_get_object(meta, META_CAPABILITIES)) {
        *ret = refuse_id(conn, MHD_HTTP_BAD_REQUEST, JRPC_INVALID_PARAMS,
                         "a 2026-07-28 request carries params._meta with \"" META_VERSION
                         "\" and \"" META_CAPABILITIES "\"",
                         m->id);
        return -EINVAL;
    }
    if (strcmp(m->method, "initialize") == 0) {
        *ret = refuse_id(conn, MHD_HTTP_NOT_FOUND, JRPC_METHOD_NOT_FOUND,
                         "initialize is not a 2026-07-28 method: no handshake, each request "
                         "carries its _meta",
                         m->id);
        return -EINVAL;
    }
    const char *name = NULL, *hdr = NULL, *why;
    if (strcmp(m->method, "tools/call") == 0 || strcmp(m->method, "prompts/get") == 0)
        name = json_get_string(m->params, "name");
    else if (strcmp(m->method, "resources/read") == 0)
        name = json_get_string(m->params, "uri");
    if ((why = mirror(conn, "MCP-Protocol-Version", version)))
        hdr = "MCP-Protocol-Version";
    else if ((why = mirror(conn, "Mcp-Method", m->method)))
        hdr = "Mcp-Method";
    else if (name && (why = mirror(conn, "Mcp-Name", name)))
        hdr = "Mcp-Name";
    if (!hdr)
        return 0;
    char text[160];
    snprintf(text, sizeof(text), "header %s %s", hdr, why);
    *ret = refuse_id(conn, MHD_HTTP_BAD_REQUEST, ERR_HEADER, text, m->id);
    return -EPROTO;
}

static bool modern_request(const struct jrpc_msg *m)
{
    return strcmp(m->method, "server/discover") == 0 ||
           json_object_object_get_ex(json_get_object(m->params, "_meta"), META_VERSION, NULL);
}

/* ---- the methods ------------------------------------------------------------------------- */

static bool accepts(struct MHD_Connection *conn, const char *type)
{
    const char *accept = header(conn, MHD_HTTP_HEADER_ACCEPT);
    return accept && (strstr(accept, type) || strstr(accept, "*/*"));
}

/* An SSE answer when the request may hear more than its answer: progress it asked for, a
 * listen, a tool call (a server's requests and logs come during it); else one JSON answer.
 * A 2026-07-28 request that takes both is answered as the SDKs do: JSON, with the status of
 * its answer (400 for -32021 ...), unless something comes before the answer (upgrade). */
static bool wants_sse(struct MHD_Connection *conn, const struct jrpc_msg *m)
{
    if (!accepts(conn, "text/event-stream"))
        return false;
    if (!accepts(conn, "application/json"))
        return true;
    return strcmp(m->method, "subscriptions/listen") == 0 || strcmp(m->method, "tools/call") == 0 ||
           jrpc_progress_token(m->params) != NULL;
}

/* A new agent of kind, given to the downstream; NULL with a refusal queued in *ret. */
static struct ah_agent *agent_for(struct agent_http *h, struct MHD_Connection *conn,
                                  enum ah_kind kind, enum MHD_Result *ret)
{
    if (h->n_agents >= h->max_agents) {
        log_warn(h->log, "an HTTP agent was refused: %zu agents already (--max-agents)",
                 h->n_agents);
        *ret = refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JRPC_INTERNAL_ERROR,
                      "too many agents on this bridge (--max-agents): try again later");
        return NULL;
    }
    struct ah_agent *a = ah_agent_new(h, kind);
    if (!a) {
        *ret = refuse(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, JRPC_INTERNAL_ERROR, "out of memory");
        return NULL;
    }
    struct err e = ERR_INIT;
    if (downstream_add_agent(h->d, &a->base, &e) < 0) { /* a is freed */
        *ret = refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JRPC_INTERNAL_ERROR, err_msg(&e));
        return NULL;
    }
    return a;
}

/* The agent a POST is for: its session's, a new session (initialize), a new one-request agent
 * (2026-07-28); NULL with a refusal queued. */
static struct ah_agent *post_agent(struct agent_http *h, struct MHD_Connection *conn,
                                   const struct jrpc_msg *m, struct ah_req *r, enum MHD_Result *ret)
{
    const char *sid = header(conn, "Mcp-Session-Id");
    bool request = m->kind == JRPC_REQUEST;
    if (sid) {
        struct ah_agent *a = ah_agent_find(h, sid);
        if (!a)
            *ret = refuse(conn, MHD_HTTP_NOT_FOUND, ERR_NO_SESSION,
                          "no such session (it ended): initialize again");
        else
            ah_agent_touch(a);
        return a;
    }
    if (request && strcmp(m->method, "initialize") == 0 && !modern_request(m)) {
        struct ah_agent *a = agent_for(h, conn, AH_SESSION, ret);
        if (a)
            snprintf(r->sid, sizeof(r->sid), "%s", a->sid);
        return a;
    }
    if (request && modern_request(m)) {
        if (check_headers(conn, m, ret) < 0)
            return NULL;
        /* the retry of an input round goes to the agent that holds it */
        const char *state = json_get_string(m->params, "requestState");
        struct ah_agent *a = state ? ah_agent_of_state(h, state) : NULL;
        return a ? a : agent_for(h, conn, AH_REQUEST, ret);
    }
    *ret = refuse(conn, MHD_HTTP_BAD_REQUEST, JRPC_INVALID_REQUEST,
                  "no Mcp-Session-Id: a session begins with initialize (2025-11-25), or each "
                  "request carries params._meta[\"" META_VERSION "\"] (2026-07-28)");
    return NULL;
}

static void feed(struct ah_agent *a, const struct ah_req *r)
{
    if (a->base.h && a->base.h->on_message)
        a->base.h->on_message(r->body.data, r->body.len, a->base.userdata);
}

/* The POST's message. A request is read from its scan (jrpc_parse_light: of its params only
 * name and _meta in a tree, the rest of a big one never copied) unless its checks read more of
 * its params (a resource's uri, a retry's requestState, a member written with escapes); anything
 * else is parsed whole. As jrpc_parse(). */
static int parse_post(const struct ah_req *r, struct jrpc_msg *m, struct err *e)
{
    const char *text = r->body.data ? r->body.data : "";
    size_t len = r->body.len;
    struct jscan j;
    int rc = -EAGAIN;
    if (jscan_message(text, len, &j) == 0 && j.id.len && j.method.len &&
        !jscan_span_is(text, j.method, "resources/read") &&
        !memmem(text + j.params.off, j.params.len, "requestState", 12) &&
        !memmem(text + j.params.off, j.params.len, "\\u", 2))
        rc = jrpc_parse_light(text, len, AGENT_MAX_MESSAGE, &j, m, e);
    if (rc == -EAGAIN)
        rc = jrpc_parse(text, len, AGENT_MAX_MESSAGE, m, e);
    return rc;
}

static enum MHD_Result handle_post(struct agent_http *h, struct MHD_Connection *conn,
                                   struct ah_req *r)
{
    enum MHD_Result ret = MHD_NO;
    struct jrpc_msg m = {0};
    struct err e = ERR_INIT;
    char text[512];
    if (r->too_big) {
        snprintf(text, sizeof(text), "a message over %u bytes", AGENT_MAX_MESSAGE);
        return refuse(conn, MHD_HTTP_CONTENT_TOO_LARGE, JRPC_INVALID_REQUEST, text);
    }
    const char *type = header(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!type || strncasecmp(type, "application/json", 16) != 0)
        return refuse(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, JRPC_INVALID_REQUEST,
                      "a POST carries one JSON-RPC message as application/json");
    int rc = parse_post(r, &m, &e);
    if (rc == -ENOMEM)
        return refuse(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, JRPC_INTERNAL_ERROR, "out of memory");
    if (rc < 0) {
        snprintf(text, sizeof(text), "not JSON: %s", err_msg(&e));
        return refuse(conn, MHD_HTTP_BAD_REQUEST, JRPC_PARSE_ERROR, text);
    }
    if (m.kind == JRPC_INVALID) {
        ret = refuse(conn, MHD_HTTP_BAD_REQUEST, JRPC_INVALID_REQUEST,
                     json_object_is_type(m.root, json_type_array)
                         ? "one JSON-RPC message per POST: batches are not taken"
                         : "not a JSON-RPC 2.0 message");
        goto out;
    }
    if (m.kind == JRPC_REQUEST && h->n_streams >= AH_MAX_STREAMS) { /* before any agent */
        ret = refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JRPC_INTERNAL_ERROR,
                     "too many requests open on this bridge: try again later");
        goto out;
    }
    struct ah_agent *a = post_agent(h, conn, &m, r, &ret);
    if (!a)
        goto out;
    if (m.kind != JRPC_REQUEST) { /* a notification or an answer: nothing comes back */
        feed(a, r);
        ret = queue(conn, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
        goto out;
    }
    if (!a->reading) {
        ret = refuse(conn, MHD_HTTP_TOO_MANY_REQUESTS, JRPC_INTERNAL_ERROR,
                     "this agent does not read its answers fast enough: read them first");
        goto out;
    }
    bool sse = wants_sse(conn, &m);
    bool upgrade = sse && a->kind == AH_REQUEST && accepts(conn, "application/json") &&
                   strcmp(m.method, "subscriptions/listen") != 0;
    if (upgrade)
        sse = false;
    struct ah_stream *st = ah_stream_new(a, conn, sse);
    if (!st) {
        if (a->kind == AH_REQUEST)
            ah_agent_end(a); /* its one request will not be served */
        ret = refuse(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, JRPC_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    r->st = st;
    r->sse_queued = sse;
    st->upgrade = upgrade;
    st->waiting = jrpc_id_key(m.id, st->id_key, sizeof(st->id_key));
    struct json_object *token = jrpc_progress_token(m.params);
    if (token && !jrpc_id_key(token, st->token_key, sizeof(st->token_key)))
        st->token_key[0] = '\0';
    ret = sse ? queue_sse(conn, st, r->sid) : MHD_YES;
    feed(a, r); /* may answer at once, or upgrade st */
    if (!sse && st->sse) {
        r->sse_queued = true;
        ret = queue_sse(conn, st, r->sid);
    } else if (!sse) {
        if (st->closed || !st->a) {
            ret = queue_json(conn, r);
        } else {
            st->suspended = true;
            MHD_suspend_connection(conn);
        }
    }
out:
    jrpc_msg_done(&m);
    return ret;
}

static enum MHD_Result handle_get(struct agent_http *h, struct MHD_Connection *conn,
                                  struct ah_req *r)
{
    const char *sid = header(conn, "Mcp-Session-Id");
    if (!sid)
        return refuse(conn, MHD_HTTP_METHOD_NOT_ALLOWED, JRPC_INVALID_REQUEST,
                      "no GET stream without a session (2026-07-28: subscriptions/listen)");
    struct ah_agent *a = ah_agent_find(h, sid);
    if (!a)
        return refuse(conn, MHD_HTTP_NOT_FOUND, ERR_NO_SESSION,
                      "no such session (it ended): initialize again");
    if (!accepts(conn, "text/event-stream"))
        return refuse(conn, MHD_HTTP_NOT_ACCEPTABLE, JRPC_INVALID_REQUEST,
                      "the GET stream is text/event-stream");
    if (header(conn, "Last-Event-ID"))
        return refuse(conn, MHD_HTTP_METHOD_NOT_ALLOWED, JRPC_INVALID_REQUEST,
                      "streams are not resumed (their events carry no id)");
    if (a->get)
        return refuse(conn, MHD_HTTP_CONFLICT, JRPC_INVALID_REQUEST,
                      "this session has its GET stream open already");
    if (h->n_streams >= AH_MAX_STREAMS)
        return refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JRPC_INTERNAL_ERROR,
                      "too many streams open on this bridge: try again later");
    ah_agent_touch(a);
    r->st = ah_stream_new(a, conn, true);
    if (!r->st)
        return refuse(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, JRPC_INTERNAL_ERROR, "out of memory");
    a->get = r->st;
    return queue_sse(conn, r->st, "");
}

static enum MHD_Result handle_delete(struct agent_http *h, struct MHD_Connection *conn)
{
    const char *sid = header(conn, "Mcp-Session-Id");
    if (!sid)
        return refuse(conn, MHD_HTTP_BAD_REQUEST, JRPC_INVALID_REQUEST,
                      "DELETE ends a session: it needs Mcp-Session-Id");
    struct ah_agent *a = ah_agent_find(h, sid);
    if (!a)
        return refuse(conn, MHD_HTTP_NOT_FOUND, ERR_NO_SESSION, "no such session");
    log_debug(h->log, "an HTTP session ended (DELETE)");
    ah_agent_end(a);
    return queue(conn, MHD_HTTP_OK, NULL, "", 0, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    struct agent_http *h = cls;
    struct ah_req *r = *req_cls;
    (void)version;
    if (!r) {
        enum MHD_Result ret;
        if (strcmp(url, AGENT_HTTP_HEALTH_PATH) == 0 && strcmp(method, MHD_HTTP_METHOD_GET) == 0)
            return queue(conn, MHD_HTTP_OK, "text/plain", "ok\n", 3, NULL);
        if (!precheck(h, conn, url, method, &ret))
            return ret;
        r = calloc(1, sizeof(*r));
        if (!r)
            return MHD_NO;
        buf_init(&r->body, AGENT_MAX_MESSAGE);
        r->conn = conn;
        list_init(&r->wait);
        if (h->auth && !auth_ok(h, conn, r, &ret)) {
            buf_release(&r->body);
            free(r);
            return ret;
        }
        *req_cls = r;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!r->too_big && buf_append(&r->body, upload, *upload_size) < 0)
            r->too_big = true; /* read to its end, then refused */
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->auth_pending) { /* the issuer's keys were on their way: judged again */
        enum MHD_Result ret = MHD_YES;
        if (!h->auth)
            return refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JRPC_CONNECTION_CLOSED,
                          "the bridge is shutting down");
        if (!auth_ok(h, conn, r, &ret))
            return ret;
        if (r->auth_pending) {
            list_add_tail(&h->auth_waiting, &r->wait);
            MHD_suspend_connection(conn);
            return MHD_YES;
        }
    }
    if (r->st && !r->st->sse) /* resumed: its answer came, or its agent went */
        return r->answered ? MHD_YES : queue_json(conn, r);
    if (r->st && !r->sse_queued) { /* resumed: something came before the answer */
        r->sse_queued = true;
        return queue_sse(conn, r->st, r->sid);
    }
    if (r->st)
        return MHD_YES;
    if (strcmp(method, MHD_HTTP_METHOD_POST) == 0)
        return handle_post(h, conn, r);
    if (strcmp(method, MHD_HTTP_METHOD_GET) == 0)
        return handle_get(h, conn, r);
    return handle_delete(h, conn);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct ah_req *r = *req_cls;
    (void)cls;
    (void)conn;
    (void)toe;
    if (!r)
        return;
    *req_cls = NULL;
    list_remove(&r->wait);
    ah_stream_free(r->st); /* a 2026-07-28 agent ends with it: closing it cancels the request */
    buf_release(&r->body);
    free(r);
}

/* ---- the listening socket ---------------------------------------------------------------- */

struct listen_addr {
    struct sockaddr_storage ss;
    socklen_t len;
    bool loopback, wildcard;
    char host[72];
};

static int parse_port(const char *s, uint16_t *ret)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || errno || v > 65535 || s[0] == '-' || s[0] == '+')
        return -EINVAL;
    *ret = (uint16_t)v;
    return 0;
}

static int parse_listen(const char *text, struct listen_addr *ret, struct err *e)
{
    struct listen_addr la = {0};
    char addr[64];
    const char *port;
    uint16_t p;
    if (!text || !*text)
        return err_set(e, -EINVAL, "--listen: give PORT, ADDR:PORT or [ADDR6]:PORT");
    if (text[0] == '[') {
        const char *end = strchr(text, ']');
        if (!end || end[1] != ':' || (size_t)(end - text - 1) >= sizeof(addr))
            return err_set(e, -EINVAL, "--listen '%s': an IPv6 address is written [ADDR]:PORT",
                           text);
        memcpy(addr, text + 1, (size_t)(end - text - 1));
        addr[end - text - 1] = '\0';
        port = end + 2;
    } else if (strchr(text, ':')) {
        const char *colon = strrchr(text, ':');
        if ((size_t)(colon - text) >= sizeof(addr) || strchr(text, ':') != colon)
            return err_set(e, -EINVAL, "--listen '%s': write ADDR:PORT ([ADDR]:PORT for IPv6)",
                           text);
        memcpy(addr, text, (size_t)(colon - text));
        addr[colon - text] = '\0';
        port = colon + 1;
    } else {
        snprintf(addr, sizeof(addr), "127.0.0.1");
        port = text;
    }
    if (parse_port(port, &p) < 0)
        return err_set(e, -EINVAL, "--listen '%s': '%s' is not a port (0 to 65535)", text, port);
    if (strcmp(addr, "localhost") == 0)
        snprintf(addr, sizeof(addr), "127.0.0.1");
    struct sockaddr_in *v4 = (struct sockaddr_in *)&la.ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&la.ss;
    if (text[0] != '[' && inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(p);
        la.len = sizeof(*v4);
        uint32_t a = ntohl(v4->sin_addr.s_addr);
        la.loopback = (a >> 24) == 127;
        la.wildcard = a == 0;
        snprintf(la.host, sizeof(la.host), "%s", addr);
    } else if (text[0] == '[' && inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(p);
        la.len = sizeof(*v6);
        la.loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
        la.wildcard = IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr);
        snprintf(la.host, sizeof(la.host), "[%s]", addr);
    } else {
        return err_set(e, -EINVAL, "--listen '%s': '%s' is not an IP address", text, addr);
    }
    *ret = la;
    return 0;
}

/* The host of an http(s) URL as a Host header names it ("example.com", "[::1]"). */
static int public_host(const char *url, char *ret, size_t size)
{
    char *origin = NULL;
    size_t n;
    int r = url_origin(url, &origin);
    if (r < 0)
        return r;
    const char *auth = strstr(origin, "://");
    r = -EINVAL;
    if (auth && split_host(auth + 3, &n) && n < size) {
        memcpy(ret, auth + 3, n);
        ret[n] = '\0';
        r = 0;
    }
    free(origin);
    return r;
}

/* The socket, bound and listening (MHD takes it). */
static int open_socket(struct listen_addr *la, const char *text, int *ret_fd, struct err *e)
{
    int fd = socket(la->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return err_set(e, -errno, "--listen '%s': %s", text, strerror(errno));
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (la->ss.ss_family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&la->ss, la->len) < 0 || listen(fd, 64) < 0 ||
        getsockname(fd, (struct sockaddr *)&la->ss, &la->len) < 0) {
        int r = -errno;
        close(fd);
        return err_set(e, r, "cannot listen on '%s': %s", text, strerror(-r));
    }
    *ret_fd = fd;
    return 0;
}

int agent_http_new(const struct agent_http_opts *o, struct agent_http **ret, struct err *e)
{
    struct listen_addr la;
    int fd = -1, r;
    if (!o || !o->loop || !o->log || !o->d || !ret)
        return err_set(e, -EINVAL, "agent_http: missing options");
    r = parse_listen(o->listen, &la, e);
    if (r < 0)
        return r;
    if (!la.loopback && !o->token && !o->issuer)
        return err_set(e, -EPERM,
                       "--listen '%s' is not a loopback address: agents there must "
                       "authenticate (--listen-token SECRET_NAME or --listen-issuer URL)",
                       o->listen);
    struct agent_http *h = calloc(1, sizeof(*h));
    if (!h)
        return err_set(e, -ENOMEM, "out of memory");
    h->loop = o->loop;
    h->log = o->log;
    h->d = o->d;
    h->loopback = la.loopback;
    h->wildcard = la.wildcard;
    h->max_agents = o->max_agents ? o->max_agents : AGENT_HTTP_MAX_AGENTS_DEFAULT;
    list_init(&h->agents);
    list_init(&h->auth_waiting);
    snprintf(h->host, sizeof(h->host), "%s", la.host);
    for (size_t i = 0; o->allow_origins && o->allow_origins[i]; i++)
        if (strv_push(&h->origins, o->allow_origins[i]) < 0)
            goto oom;
    if (o->token && !(h->token = strdup(o->token)))
        goto oom;
    r = mhd_load(e);
    if (r < 0)
        goto fail;
    r = open_socket(&la, o->listen, &fd, e);
    if (r < 0)
        goto fail;
    uint16_t port = ntohs(la.ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&la.ss)->sin6_port
                                                      : ((struct sockaddr_in *)&la.ss)->sin_port);
    snprintf(h->url, sizeof(h->url), "http://%s:%u%s", la.host, port, AGENT_HTTP_PATH);
    if (o->issuer && o->public_url &&
        public_host(o->public_url, h->public_host, sizeof(h->public_host)) < 0) {
        close(fd);
        r = err_set(e, -EINVAL, "--listen-public-url '%s' is not an http(s) URL", o->public_url);
        goto fail;
    }
    if (o->issuer) {
        struct ah_auth_opts ao = {
            .issuer = o->issuer,
            .resource = o->public_url ? o->public_url : h->url,
            .audience = o->audience,
            .scopes = o->scopes,
        };
        r = ah_auth_new(h->loop, h->log, &ao, on_keys, h, &h->auth, e);
        if (r < 0) {
            close(fd);
            goto fail;
        }
    }
    h->daemon = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | (la.ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
        0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, h, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(h->max_agents + AH_MAX_STREAMS + 16), MHD_OPTION_CONNECTION_TIMEOUT,
        IDLE_TIMEOUT_S, MHD_OPTION_END);
    if (!h->daemon) {
        close(fd);
        r = err_set(e, -EIO, "cannot serve HTTP on '%s' (libmicrohttpd refused)", o->listen);
        goto fail;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    r = di ? loop_io_add(h->loop, di->epoll_fd, LOOP_READ, on_io, h, &h->io) : -EIO;
    if (r >= 0)
        r = loop_timer_add(h->loop, TIMER_MAX_MS, on_timer, h, &h->timer);
    if (r >= 0)
        r = loop_timer_add(h->loop, AH_KEEPALIVE_MS, on_keepalive, h, &h->keepalive);
    if (r < 0) {
        err_set(e, r, "cannot watch the HTTP listener: %s", strerror(-r));
        goto fail;
    }
    *ret = h;
    return 0;
oom:
    r = err_set(e, -ENOMEM, "out of memory");
fail:
    agent_http_free(h);
    return r;
}

const char *agent_http_url(const struct agent_http *h)
{
    return h->url;
}

void agent_http_free(struct agent_http *h)
{
    if (!h)
        return;
    /* agents still here (the downstream not freed first): they outlive the listener */
    while (!list_is_empty(&h->agents)) {
        struct ah_agent *a = list_entry(list_first(&h->agents), struct ah_agent, node);
        struct list_node *i;
        list_for_each (i, &a->streams) {
            struct ah_stream *st = list_entry(i, struct ah_stream, node);
            st->closed = true;
            if (st->suspended && st->conn) {
                st->suspended = false;
                MHD_resume_connection(st->conn);
            }
        }
        list_remove(&a->node);
        a->h = NULL;
    }
    loop_io_remove(h->io);
    loop_timer_cancel(h->timer);
    loop_timer_cancel(h->keepalive);
    loop_defer_cancel(&h->kick);
    ah_auth_free(h->auth);
    h->auth = NULL;
    while (!list_is_empty(&h->auth_waiting)) { /* their connections close with the daemon */
        struct ah_req *r = list_entry(list_first(&h->auth_waiting), struct ah_req, wait);
        list_remove(&r->wait);
        MHD_resume_connection(r->conn);
    }
    if (h->daemon) {
        (void)MHD_run(h->daemon); /* the connections resumed above finish */
        MHD_stop_daemon(h->daemon);
    }
    strv_release(&h->origins);
    secure_free(h->token);
    free(h);
}
