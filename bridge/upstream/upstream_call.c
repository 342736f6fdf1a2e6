/* upstream_call.c - requests: a call's record on exactly one of the upstream's lists (see
 * upstream_int.h), sending it with its id as the transport's tag, its timeout (a
 * notifications/cancelled, then a ping to tell a hung server), failures reported from the loop,
 * and the public calls, notifications and answers to server requests. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/util.h"

#include "transport/mcp_headers.h"
#include "upstream/upstream_int.h"

static void call_timer_fired(struct loop_timer *t, void *userdata);

/* ---- calls ---------------------------------------------------------------------------------- */

void up_call_free(struct upstream_call *c)
{
    if (!c)
        return;
    c->u->ncalls--;
    up_mrtr_free(c);
    loop_timer_cancel(c->timer);
    if (c->method != c->method_buf)
        free(c->method);
    json_object_put(c->params);
    json_object_put(c->token);
    json_object_put(c->local_result);
    free(c->message);
    struct upstream *u = c->u;
    if (u->n_spare_calls >= UP_SPARE_CALLS) {
        free(c);
        return;
    }
    list_remove(&c->node);
    list_add_head(&u->spare_calls, &c->node);
    u->n_spare_calls++;
}

void up_call_spares_free(struct upstream *u)
{
    while (!list_is_empty(&u->spare_calls)) {
        struct list_node *n = list_first(&u->spare_calls);
        list_remove(n);
        free(list_entry(n, struct upstream_call, node));
    }
    u->n_spare_calls = 0;
}

/* A cleared call record: a kept one, else a new one. */
static struct upstream_call *call_take(struct upstream *u)
{
    if (list_is_empty(&u->spare_calls))
        return calloc(1, sizeof(struct upstream_call));
    struct list_node *n = list_first(&u->spare_calls);
    list_remove(n);
    u->n_spare_calls--;
    struct upstream_call *c = list_entry(n, struct upstream_call, node);
    *c = (struct upstream_call){0};
    return c;
}

static struct list_node *list_of(struct upstream *u, enum call_where where)
{
    switch (where) {
    case CALL_WAITING:
        return &u->waiting;
    case CALL_SENT:
        return &u->sent;
    case CALL_PARKED:
        return &u->parked;
    case CALL_FAILING:
        return &u->failing;
    case CALL_NEW:
        break;
    }
    return NULL;
}

/* Puts an unlinked call on a list (not CALL_SENT: up_send_call() does that). */
void up_call_put(struct upstream *u, struct upstream_call *c, enum call_where where, bool front)
{
    c->where = where;
    if (front)
        list_add_head(list_of(u, where), &c->node);
    else
        list_add_tail(list_of(u, where), &c->node);
}

/* The first call on a list, unlinked; NULL when it is empty. */
struct upstream_call *up_call_pop(struct upstream *u, enum call_where where)
{
    struct list_node *n = list_first(list_of(u, where));
    if (!n)
        return NULL;
    struct upstream_call *c = list_entry(n, struct upstream_call, node);
    up_call_unlink(u, c);
    return c;
}

/* Takes c out of wherever it is. */
void up_call_unlink(struct upstream *u, struct upstream_call *c)
{
    if (c->where == CALL_SENT)
        (void)hashmap_remove(u->map, c->key);
    list_remove(&c->node);
    c->where = CALL_NEW;
    if (u->init_call == c)
        u->init_call = NULL;
    if (u->ping_call == c)
        u->ping_call = NULL;
    if (u->probe_call == c)
        u->probe_call = NULL;
    if (u->listen_call == c)
        u->listen_call = NULL;
}

/* Reports a failure from the loop now (c unlinked). false: the upstream was freed. */
bool up_call_fail_now(struct upstream *u, struct upstream_call *c, int error, const char *message)
{
    if (!error && c->local_result && !c->ifn) {
        struct json_object *id = json_object_new_int64(c->id);
        struct json_object *resp = id ? jrpc_new_result(id, c->local_result) : NULL;
        json_object_put(id);
        if (!resp)
            return up_call_fail_now(u, c, -ENOMEM, NULL);
        c->in_callback = true;
        c->fn(c, resp, 0, NULL, c->userdata);
        json_object_put(resp);
        up_call_free(c);
        return !up_freed(u);
    }
    if (c->ifn) {
        c->ifn(u, c, NULL, error);
        up_call_free(c);
        return !up_freed(u);
    }
    c->in_callback = true;
    c->fn(c, NULL, error, message ? message : strerror(-error), c->userdata);
    up_call_free(c);
    return !up_freed(u);
}

/* Queues a failure to be reported from the kick (c unlinked). Internal calls go silently. */
void up_call_fail_later(struct upstream *u, struct upstream_call *c, int error, const char *message)
{
    up_disarm(&c->timer);
    if (c->ifn) {
        up_call_free(c);
        return;
    }
    c->error = error;
    free(c->message);
    c->message = message ? strdup(message) : NULL;
    up_call_put(u, c, CALL_FAILING, false);
    up_kick(u);
}

/* msg without its leading "server 'NAME': ", to quote it after one. */
static const char *cause_of(const struct upstream *u, const char *msg)
{
    size_t n = strlen(up_name(u));
    if (msg && strncmp(msg, "server '", 8) == 0 && strncmp(msg + 8, up_name(u), n) == 0 &&
        strncmp(msg + 8 + n, "': ", 3) == 0)
        return msg + 8 + n + 3;
    return msg;
}

/* Fails every call sent on the current session, and those parked for credentials. */
void up_fail_inflight(struct upstream *u, int error, const char *why)
{
    struct upstream_call *c;
    why = cause_of(u, why);
    while ((c = up_call_pop(u, CALL_SENT)) || (c = up_call_pop(u, CALL_PARKED))) {
        if (c->ifn) {
            up_call_free(c);
            continue;
        }
        char *m = up_asprintf("server '%s': the connection was lost before '%s' was answered%s%s",
                              up_name(u), c->method, why ? ": " : "", why ? why : "");
        up_call_fail_later(u, c, error, m);
        free(m);
    }
}

void up_fail_waiting(struct upstream *u, int error, const char *message)
{
    struct upstream_call *c;
    while ((c = up_call_pop(u, CALL_WAITING)))
        up_call_fail_later(u, c, error, message);
}

/* ---- sending ------------------------------------------------------------------------------- */

static int conn_send(struct conn *cn, struct json_object *msg, unsigned flags, uint64_t tag,
                     const char *const *hdrs)
{
    size_t len = 0;
    const char *text = jrpc_serialize(msg, &len);
    if (!text)
        return -ENOMEM;
    int r = -E2BIG;
    if (len <= UP_MAX_MESSAGE && hdrs)
        r = transport_send_hdrs(cn ? cn->t : NULL, text, len, flags, tag, hdrs);
    else if (len <= UP_MAX_MESSAGE)
        r = transport_send(cn ? cn->t : NULL, text, len, flags, tag);
    if (cn)
        up_trace_sent(cn->u, msg, len, r);
    return r;
}

/* A request written straight into the upstream's kept buffer (jrpc_write_request()): no tree,
 * no json-c buffer, no allocation once the buffer has grown to the usual size. To a wire that
 * takes pieces, a big request's params are not copied at all: they are sent from the agent's
 * read buffer the stand-in holds, and wait in the wire's queue as a reference to it. */
static int send_request_text(struct upstream *u, struct upstream_call *c)
{
    struct buf *b = &u->wbuf;
    struct transport *t = u->conn->t;
    struct jrpc_pieces p;
    int r;
    buf_reset(b);
    if (jrpc_params_held(c->params) && transport_can_sendv(t)) {
        r = jrpc_write_request_pieces(b, c->id, c->method, c->params, &p);
        if (r >= 0)
            r = transport_sendv(t, p.iov, p.n, p.held, c->flags, (uint64_t)c->id);
    } else {
        r = jrpc_write_request(b, c->id, c->method, c->params);
        if (r >= 0 && b->cap > UP_WBUF_KEEP) {
            /* given back below anyway: handed to a wire that keeps it while it is sent (HTTP)
             * instead of copied there */
            size_t len = b->len, cap = b->cap;
            char *text = buf_detach(b);
            r = transport_send_take(t, &text, len, cap, c->flags, (uint64_t)c->id);
            free(text);
        } else if (r >= 0) {
            r = transport_send(t, b->data, b->len, c->flags, (uint64_t)c->id);
        }
    }
    /* the transport has the bytes now (sent, or copied into its queue): a large request's
     * buffer is given back at once */
    if (b->cap > UP_WBUF_KEEP)
        buf_release(b);
    return r;
}

#define META_PROTOCOL "io.modelcontextprotocol/protocolVersion"
#define META_CAPS     "io.modelcontextprotocol/clientCapabilities"
#define META_INFO     "io.modelcontextprotocol/clientInfo"
#define META_LOGLEVEL "io.modelcontextprotocol/logLevel"

/* A 2026-07-28 request's _meta: the protocol version always, the client's capabilities and
 * info unless the caller's params carry their own (a modern agent's), the log level asked
 * for. In place (as the progress token). -ENOMEM, -EINVAL for params that are not an object. */
static int stamp(struct upstream *u, struct upstream_call *c)
{
    struct json_object *meta = NULL;
    if (!c->params) {
        c->params = json_object_new_object();
        if (!c->params)
            return -ENOMEM;
    }
    if (!json_object_is_type(c->params, json_type_object))
        return -EINVAL;
    if (!json_object_object_get_ex(c->params, "_meta", &meta) ||
        !json_object_is_type(meta, json_type_object)) {
        meta = json_object_new_object();
        if (!meta || json_object_object_add(c->params, "_meta", meta) < 0)
            return -ENOMEM;
    }
    if (json_object_object_add(meta, META_PROTOCOL,
                               json_object_new_string(UPSTREAM_PROTOCOL_MODERN)) < 0 ||
        (!json_object_object_get_ex(meta, META_CAPS, NULL) &&
         json_object_object_add(meta, META_CAPS, json_object_get(u->client_caps)) < 0) ||
        (!json_object_object_get_ex(meta, META_INFO, NULL) &&
         json_object_object_add(meta, META_INFO, json_object_get(u->client_info)) < 0) ||
        (u->log_level && !json_object_object_get_ex(meta, META_LOGLEVEL, NULL) &&
         json_object_object_add(meta, META_LOGLEVEL, json_object_new_string(u->log_level)) < 0))
        return -ENOMEM;
    return 0;
}

/* The HTTP headers of a 2026-07-28 request (a wire without headers: none). */
static int modern_headers(struct upstream *u, struct upstream_call *c, struct strv *out)
{
    if (u->srv->transport == MCP_TRANSPORT_STDIO)
        return 0;
    int k = strv_push(out, "MCP-Protocol-Version: " UPSTREAM_PROTOCOL_MODERN);
    struct json_object *map = NULL, *name = NULL;
    if (k >= 0 && u->tool_headers && strcmp(c->method, "tools/call") == 0 &&
        json_object_object_get_ex(c->params, "name", &name) &&
        json_object_is_type(name, json_type_string))
        (void)json_object_object_get_ex(u->tool_headers, json_object_get_string(name), &map);
    if (k >= 0)
        k = mcp_headers_for_request(c->method, c->params, map, out);
    return k;
}

int up_send_notification(struct upstream *u, const char *method, struct json_object *params)
{
    if (!u->conn)
        return 0;
    struct json_object *n = jrpc_new_notification(method, params);
    if (!n)
        return -ENOMEM;
    int r = conn_send(u->conn, n, 0, 0, NULL);
    json_object_put(n);
    if (r < 0)
        log_debug(u->log, "server '%s': cannot send %s: %s", up_name(u), method, up_strerror(u, r));
    else
        log_debug(u->log, "server '%s': -> %s", up_name(u), method);
    return r;
}

static void send_cancelled(struct upstream *u, int64_t id, const char *reason)
{
    struct json_object *p = json_object_new_object();
    if (!p)
        return;
    if (json_object_object_add(p, "requestId", json_object_new_int64(id)) < 0 ||
        (reason && json_object_object_add(p, "reason", json_object_new_string(reason)) < 0)) {
        json_object_put(p);
        return;
    }
    int r = up_send_notification(u, "notifications/cancelled", p);
    (void)r; /* logged; a lost cancellation needs nothing more */
    json_object_put(p);
}

static int send_response(struct upstream *u, struct json_object *resp)
{
    if (!resp)
        return -ENOMEM;
    int r = u->conn ? conn_send(u->conn, resp, 0, 0, NULL) : 0;
    json_object_put(resp);
    return r;
}

/* The server is told that c (sent, now unlinked) is given up: over HTTP to a 2026-07-28
 * server by closing its answer stream, else with notifications/cancelled. */
static void cancel_sent(struct upstream *u, struct upstream_call *c, const char *reason)
{
    if (!u->conn)
        return;
    if ((c->flags & TRANSPORT_MODERN) && transport_can_abort(u->conn->t)) {
        transport_abort(u->conn->t, (uint64_t)c->id);
        return;
    }
    transport_answered(u->conn->t, (uint64_t)c->id);
    if (u->sess != SESSION_REINIT)
        send_cancelled(u, c->id, reason);
}

/* Sends c on the current conn and puts it in the map. */
int up_send_call(struct upstream *u, struct upstream_call *c)
{
    struct json_object *id = NULL, *req = NULL;
    struct strv hdrs = STRV_INIT;
    int r = -ENOMEM;

    if (!u->conn)
        return -ENOTCONN;
    bool modern =
        (u->wire_modern && !(c->flags & TRANSPORT_INITIALIZE)) || (c->flags & TRANSPORT_MODERN);
    if (modern && jrpc_params_light(c->params)) {
        /* a modern request's _meta and headers are made from the whole params */
        struct json_object *full = jrpc_params_full(c->params);
        if (!full)
            goto out;
        json_object_put(c->params);
        c->params = full;
    }
    if (modern) {
        c->flags |= TRANSPORT_MODERN;
        r = stamp(u, c);
        if (r >= 0)
            r = modern_headers(u, c, &hdrs);
        if (r < 0)
            goto out;
        r = -ENOMEM;
    }
    c->creds_gen = u->creds_gen;
    if (c->token && !c->token_swapped) {
        id = json_object_new_int64(c->id);
        if (!id)
            goto out;
        jrpc_set_progress_token(c->params, id);
        c->token_swapped = true;
    }
    /* the request's tree only for what reads it: the trace, a modern request's headers */
    bool tree = modern || u->trace;
    if (tree) {
        if (!id && !(id = json_object_new_int64(c->id)))
            goto out;
        req = jrpc_new_request(id, c->method, c->params);
        if (!req)
            goto out;
    }
    r = hashmap_put_borrowed(u->map, c->key, c);
    if (r < 0)
        goto out;
    c->sent_at = loop_now(u->loop);
    if (tree)
        r = conn_send(u->conn, req, c->flags, (uint64_t)c->id,
                      modern && hdrs.n ? (const char *const *)hdrs.v : NULL);
    else
        r = send_request_text(u, c);
    if (r < 0) {
        (void)hashmap_remove(u->map, c->key);
        goto out;
    }
    c->where = CALL_SENT;
    list_add_tail(&u->sent, &c->node);
    c->session = u->session;
    log_debug(u->log, "server '%s': -> %s #%" PRId64, up_name(u), c->method, c->id);
out:
    strv_release_secure(&hdrs);
    json_object_put(req);
    json_object_put(id);
    return r;
}

/* Sends a user call that was waiting or is new; a failure is reported from the kick. */
void up_send_or_fail(struct upstream *u, struct upstream_call *c)
{
    if (u->wire_modern && up_modern_local(u, c))
        return;
    int r = up_send_call(u, c);
    if (r >= 0)
        return;
    int code = up_call_err(r);
    char *m =
        up_asprintf("server '%s': cannot send '%s': %s", up_name(u), c->method, up_strerror(u, r));
    up_call_fail_later(u, c, code, m);
    free(m);
}

void up_flush_waiting(struct upstream *u)
{
    struct upstream_call *c;
    while (u->conn && u->sess == SESSION_OPEN && (c = up_call_pop(u, CALL_WAITING)))
        up_send_or_fail(u, c);
}

int up_call_new(struct upstream *u, const char *method, struct json_object *params,
                int64_t timeout_ms, struct upstream_call **ret)
{
    struct upstream_call *c = call_take(u);
    if (!c)
        return -ENOMEM;
    c->u = u;
    list_init(&c->node);
    u->ncalls++;
    size_t mlen = strlen(method);
    c->method =
        mlen < sizeof(c->method_buf) ? memcpy(c->method_buf, method, mlen + 1) : strdup(method);
    if (!c->method) {
        up_call_free(c);
        return -ENOMEM;
    }
    c->params = params ? json_object_get(params) : NULL;
    c->id = u->next_id++;
    (void)fmt_i64(c->key, sizeof(c->key), c->id);
    c->timeout_ms = timeout_ms;
    c->started = loop_now(u->loop);
    c->deadline = c->started + timeout_ms;
    c->hard_deadline = c->started + timeout_ms * UPSTREAM_MAX_TOTAL_FACTOR;
    if (timeout_ms > 0) {
        int r = loop_timer_add(u->loop, timeout_ms, call_timer_fired, c, &c->timer);
        if (r < 0) {
            up_call_free(c);
            return r;
        }
    }
    *ret = c;
    return 0;
}

/* ---- timers ----------------------------------------------------------------------------- */

static void ping_answered(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m,
                          int error)
{
    (void)c;
    u->ping_call = NULL;
    if (m) {
        log_debug(u->log, "server '%s': answers pings: not hung", up_name(u));
        return;
    }
    char d[32];
    up_fmt_ms(d, sizeof(d), UPSTREAM_PING_TIMEOUT_MS);
    char *msg = up_asprintf("server '%s' did not answer a ping within %s after a request timed "
                            "out: restarting it",
                            up_name(u), d);
    log_warn(u->log, "%s", msg);
    if (u->no_reconnect)
        up_conn_lost(u, error, msg);
    else
        up_reconnect_now(u);
    free(msg);
}

/* After a request timed out: is the server still there? */
static void check_alive(struct upstream *u)
{
    struct upstream_call *c = NULL;
    if (u->ping_call || !u->conn || u->state != UPSTREAM_READY || u->sess == SESSION_REINIT)
        return;
    /* 2026-07-28 has no ping: server/discover tells as much */
    if (up_call_new(u, u->wire_modern ? "server/discover" : "ping", NULL, UPSTREAM_PING_TIMEOUT_MS,
                    &c) < 0)
        return;
    c->ifn = ping_answered;
    if (up_send_call(u, c) < 0) {
        up_call_free(c);
        return;
    }
    u->ping_call = c;
}

/* The message of a call that timed out before it was sent. */
static char *unsent_timeout_message(struct upstream *u, struct upstream_call *c)
{
    char d[32];
    up_fmt_ms(d, sizeof(d), c->timeout_ms);
    if (c->where == CALL_PARKED)
        return up_asprintf("server '%s' did not answer '%s' within %s (waiting for fresh "
                           "credentials)",
                           up_name(u), c->method, d);
    if (u->last_error && u->state != UPSTREAM_READY)
        return up_asprintf("server '%s' could not be connected within %s: %s", up_name(u), d,
                           u->last_error);
    return up_asprintf("server '%s' could not be connected within %s", up_name(u), d);
}

static void call_timer_fired(struct loop_timer *t, void *userdata)
{
    struct upstream_call *c = userdata;
    struct upstream *u = c->u;
    char d[32], *msg = NULL;
    (void)t;

    if (c->where == CALL_WAITING || c->where == CALL_PARKED) {
        int code = c->where == CALL_PARKED ? -ETIMEDOUT : -ENOTCONN;
        msg = unsent_timeout_message(u, c);
        up_call_unlink(u, c);
        (void)up_call_fail_now(u, c, code, msg);
        goto out;
    }
    if (c->where != CALL_SENT)
        goto out;
    if (c->ifn) {
        up_call_unlink(u, c);
        (void)up_call_fail_now(u, c, -ETIMEDOUT, NULL);
        goto out;
    }
    up_call_unlink(u, c);
    cancel_sent(u, c, "timed out");
    if (c->progressed && c->deadline >= c->hard_deadline) {
        up_fmt_ms(d, sizeof(d), c->hard_deadline - c->started);
        msg = up_asprintf("server '%s' did not finish '%s' within %s (the most progress "
                          "notifications can extend its timeout to)",
                          up_name(u), c->method, d);
    } else {
        up_fmt_ms(d, sizeof(d), c->timeout_ms);
        msg = up_asprintf("server '%s' did not answer '%s' within %s", up_name(u), c->method, d);
    }
    log_info(u->log, "%s", msg);
    if (!up_call_fail_now(u, c, -ETIMEDOUT, msg))
        goto out;
    check_alive(u);
out:
    free(msg);
}

/* Where a new call goes, by state; a failure is reported from the kick. */
static void call_dispatch(struct upstream *u, struct upstream_call *c)
{
    char *m = NULL;
    if (u->ncalls > UP_MAX_CALLS) {
        m = up_asprintf("server '%s': too many requests at once (%d): try again later", up_name(u),
                        UP_MAX_CALLS);
        up_call_fail_later(u, c, -ENOBUFS, m);
        free(m);
        return;
    }
    switch (u->state) {
    case UPSTREAM_READY:
        if (u->sess == SESSION_OPEN) {
            up_send_or_fail(u, c);
            break;
        }
        /* waits for the session */
        up_call_put(u, c, CALL_WAITING, false);
        break;
    case UPSTREAM_CONNECTING:
        up_call_put(u, c, CALL_WAITING, false);
        break;
    case UPSTREAM_IDLE:
    case UPSTREAM_BACKOFF:
        up_call_put(u, c, CALL_WAITING, false);
        upstream_connect(u);
        break;
    case UPSTREAM_FAILED:
    case UPSTREAM_LOGIN:
        if (u->recheck_at && loop_now(u->loop) >= u->recheck_at) {
            /* a sign-in or a secret may have been set up since: ask again */
            up_call_put(u, c, CALL_WAITING, false);
            upstream_connect(u);
            break;
        }
        m = up_asprintf("%s", u->last_error ? u->last_error : "server cannot be used");
        up_call_fail_later(u, c, u->state == UPSTREAM_LOGIN ? CRED_LOGIN_REQUIRED : -ESHUTDOWN, m);
        break;
    case UPSTREAM_CLOSING:
    case UPSTREAM_CLOSED:
        m = up_asprintf("server '%s' was closed", up_name(u));
        up_call_fail_later(u, c, -ESHUTDOWN, m);
        break;
    }
    free(m);
}

int upstream_call(struct upstream *u, const char *method, struct json_object *params,
                  int64_t timeout_ms, upstream_response_fn fn, upstream_progress_fn progress,
                  void *userdata, struct upstream_call **ret)
{
    return upstream_call_ex(u, method, params, timeout_ms, 0, fn, progress, userdata, ret);
}

int upstream_call_ex(struct upstream *u, const char *method, struct json_object *params,
                     int64_t timeout_ms, unsigned flags, upstream_response_fn fn,
                     upstream_progress_fn progress, void *userdata, struct upstream_call **ret)
{
    struct upstream_call *c = NULL;
    if (!u || up_freed(u) || !method || !fn || !ret)
        return -EINVAL;
    if (timeout_ms <= 0)
        timeout_ms = u->request_timeout_ms;
    int r = up_call_new(u, method, params, timeout_ms, &c);
    if (r < 0)
        return r;
    c->fn = fn;
    c->progress = progress;
    c->userdata = userdata;
    c->uflags = flags;
    struct json_object *tok = params ? jrpc_progress_token(params) : NULL;
    if (tok)
        c->token = json_object_get(tok);
    call_dispatch(u, c);
    *ret = c;
    return 0;
}

void upstream_call_set_raw(struct upstream_call *c, upstream_raw_fn raw)
{
    if (c)
        c->raw = raw;
}

void up_call_reissue(struct upstream *u, struct upstream_call *c, struct json_object *new_params)
{
    if (c->where == CALL_SENT && u->conn)
        transport_answered(u->conn->t, (uint64_t)c->id);
    up_call_unlink(u, c);
    if (new_params) {
        json_object_put(c->params);
        c->params = json_object_get(new_params);
        c->token_swapped = false; /* a new params object carries the caller's token, if any */
    }
    c->id = u->next_id++;
    (void)fmt_i64(c->key, sizeof(c->key), c->id);
    if (c->token && c->token_swapped)
        c->token_swapped = false; /* up_send_call() puts the new id in as the token */
    call_dispatch(u, c);
}

void upstream_call_cancel(struct upstream_call *c, const char *reason)
{
    if (!c || c->in_callback)
        return;
    struct upstream *u = c->u;
    bool sent = c->where == CALL_SENT;
    up_call_unlink(u, c);
    if (sent)
        cancel_sent(u, c, reason);
    up_call_free(c);
}

int upstream_notify(struct upstream *u, const char *method, struct json_object *params)
{
    if (!u || !method)
        return -EINVAL;
    if (up_freed(u) || u->state != UPSTREAM_READY || !u->conn || u->sess == SESSION_REINIT)
        return 0;
    if (u->wire_modern && strcmp(method, "notifications/roots/list_changed") == 0)
        return 0; /* 2026-07-28: the roots travel with each request */
    return up_send_notification(u, method, params);
}

int upstream_respond(struct upstream *u, uint64_t gen, struct json_object *id,
                     struct json_object *result, struct json_object *error)
{
    if (!u || !id || (!result) == (!error))
        return -EINVAL;
    if (!up_freed(u) && up_mrtr_take_response(u, id, result, error))
        return 0;
    if (up_freed(u) || !u->conn || u->conn->gen != gen)
        return 0;
    struct json_object *resp = json_object_new_object();
    if (!resp)
        return -ENOMEM;
    if (json_object_object_add(resp, "jsonrpc", json_object_new_string("2.0")) < 0 ||
        json_object_object_add(resp, "id", json_object_get(id)) < 0 ||
        json_object_object_add(resp, result ? "result" : "error",
                               json_object_get(result ? result : error)) < 0) {
        json_object_put(resp);
        return -ENOMEM;
    }
    return send_response(u, resp);
}

/* Answers a server's ping (from upstream_recv.c). */
int up_send_response(struct upstream *u, struct json_object *resp)
{
    return send_response(u, resp);
}

/* ---- 2026-07-28 ---------------------------------------------------------------------------- */

void up_call_answer_later(struct upstream *u, struct upstream_call *c, struct json_object *result)
{
    up_call_unlink(u, c);
    up_disarm(&c->timer);
    json_object_put(c->local_result);
    c->local_result = result ? result : json_object_new_object();
    if (!c->local_result) {
        up_call_fail_later(u, c, -ENOMEM, NULL);
        return;
    }
    c->error = 0;
    up_call_put(u, c, CALL_FAILING, false);
    up_kick(u);
}

bool up_method_safe(const char *m)
{
    static const char *const safe[] = {"tools/list",
                                       "resources/list",
                                       "resources/read",
                                       "resources/templates/list",
                                       "prompts/list",
                                       "prompts/get",
                                       "completion/complete",
                                       "server/discover",
                                       NULL};
    for (size_t i = 0; safe[i]; i++)
        if (strcmp(m, safe[i]) == 0)
            return true;
    return false;
}

void up_tools_listed(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m)
{
    struct json_object *tools = NULL, *cursor = NULL;
    if (u->srv->transport == MCP_TRANSPORT_STDIO || !m->result ||
        !json_object_object_get_ex(m->result, "tools", &tools) ||
        !json_object_is_type(tools, json_type_array))
        return;
    bool first = !c->params || !json_object_object_get_ex(c->params, "cursor", &cursor) || !cursor;
    if (first || !u->tool_headers) {
        json_object_put(u->tool_headers);
        u->tool_headers = json_object_new_object();
        if (!u->tool_headers)
            return;
    }
    for (size_t i = json_object_array_length(tools); i-- > 0;) {
        struct json_object *t = json_object_array_get_idx(tools, i), *nm = NULL, *map = NULL;
        char *why = NULL;
        const char *name =
            json_object_object_get_ex(t, "name", &nm) && json_object_is_type(nm, json_type_string)
                ? json_object_get_string(nm)
                : "(no name)";
        int r = mcp_headers_tool_params(t, &map, &why);
        if (r == -EINVAL) {
            up_warn_once(u, "server '%s': tool '%.200s' is left out: %s", up_name(u), name,
                         why ? why : "its x-mcp-header markings are invalid");
            free(why);
            (void)json_object_array_del_idx(tools, i, 1);
            continue;
        }
        if (map && json_object_object_add(u->tool_headers, name, map) < 0)
            json_object_put(map);
    }
}

static void relisted(struct upstream *u, struct json_object *items, int error, const char *message,
                     void *userdata)
{
    struct upstream_call *c = u->relist_call;
    (void)error;
    (void)message;
    (void)userdata;
    json_object_put(items); /* the markings were kept as the pages came */
    u->relist = NULL;
    u->relist_call = NULL;
    if (c)
        up_call_reissue(u, c, NULL);
}

bool up_header_mismatch(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m)
{
    struct json_object *code = NULL;
    if (!m->error || c->mismatch_retried || c->ifn || u->relist_call ||
        !json_object_object_get_ex(m->error, "code", &code) ||
        json_object_get_int64(code) != -32020 || strcmp(c->method, "tools/call") != 0)
        return false;
    c->mismatch_retried = true;
    log_info(u->log,
             "server '%s': the headers of 'tools/call' did not match (-32020): listing "
             "the tools again and sending it once more",
             up_name(u));
    if (upstream_list(u, "tools/list", "tools", relisted, NULL, &u->relist) < 0) {
        up_call_reissue(u, c, NULL);
        return true;
    }
    u->relist_call = c;
    return true;
}
