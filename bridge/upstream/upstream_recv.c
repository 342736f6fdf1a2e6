/* upstream_recv.c - what the transport reports: messages from the server routed (responses
 * by id to their calls, progress to the call owning the token, pings answered, other requests
 * and notifications to the handler), request errors by tag, the end of a connection. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/util.h"

#include "upstream/upstream_int.h"

/* ---- messages from the server ------------------------------------------------------------- */

static struct upstream_call *call_by_tag(struct upstream *u, uint64_t tag)
{
    char key[24];
    (void)fmt_u64(key, sizeof(key), tag);
    return hashmap_get(u->map, key);
}

static struct upstream_call *call_by_id(struct upstream *u, struct json_object *id)
{
    if (!id || !json_object_is_type(id, json_type_int) || json_object_get_int64(id) <= 0)
        return NULL;
    return call_by_tag(u, (uint64_t)json_object_get_int64(id));
}

/* Hands a response to its call. From the loop. */
static void deliver(struct upstream *u, struct conn *cn, struct upstream_call *c,
                    struct jrpc_msg *m)
{
    up_call_unlink(u, c);
    transport_answered(cn->t, (uint64_t)c->id);
    if (!c->ifn && u->wire_modern) {
        if (strcmp(c->method, "tools/list") == 0)
            up_tools_listed(u, c, m);
        else if (up_header_mismatch(u, c, m))
            return; /* tools listed again, then sent once more */
    }
    if (!c->ifn && up_mrtr_on_result(u, c, m))
        return; /* an input round (upstream_mrtr.c): the call goes on, its timer too */
    up_disarm(&c->timer);
    if (c->ifn) {
        c->ifn(u, c, m, 0);
        up_call_free(c);
        return;
    }
    log_debug(u->log, "server '%s': <- #%" PRId64 " %s (%" PRId64 " ms)", up_name(u), c->id,
              m->error ? "error" : "result", loop_now(u->loop) - c->started);
    c->in_callback = true;
    c->fn(c, m->root, 0, NULL, c->userdata);
    up_call_free(c);
}

static void on_progress(struct upstream *u, struct jrpc_msg *m)
{
    struct json_object *tok = NULL;
    if (!m->params || !json_object_object_get_ex(m->params, "progressToken", &tok))
        return;
    struct upstream_call *c = call_by_id(u, tok);
    if (!c || c->ifn || !c->token) {
        log_debug(u->log, "server '%s': progress for no request of ours", up_name(u));
        return;
    }
    int64_t now = loop_now(u->loop);
    int64_t d = now + c->timeout_ms;
    if (d > c->hard_deadline)
        d = c->hard_deadline;
    c->progressed = true;
    if (c->timer && d > c->deadline) {
        c->deadline = d;
        loop_timer_rearm(c->timer, d - now);
    }
    if (json_object_object_add(m->params, "progressToken", json_object_get(c->token)) < 0)
        return;
    if (c->progress)
        c->progress(c, m->params, c->userdata);
}

static void on_request(struct upstream *u, struct conn *cn, struct jrpc_msg *m)
{
    if (strcmp(m->method, "ping") == 0) {
        struct json_object *empty = json_object_new_object();
        int r = empty ? up_send_response(u, jrpc_new_result(m->id, empty)) : -ENOMEM;
        json_object_put(empty);
        log_debug(u->log, "server '%s': <- ping%s", up_name(u), r < 0 ? " (answer failed)" : "");
        return;
    }
    log_debug(u->log, "server '%s': <- request %s", up_name(u), m->method);
    if (u->h.on_request) {
        /* the request of the stream it came on names the call it belongs to (several calls
         * may be asking at once): upstream_related_call() */
        uint64_t tag = u->request_tag;
        u->request_tag = transport_message_tag(cn->t);
        u->h.on_request(u, cn->gen, m->root, u->userdata);
        u->request_tag = tag; /* freed from inside, the memory lasts the iteration */
        return;
    }
    int r =
        up_send_response(u, jrpc_new_error(m->id, JRPC_METHOD_NOT_FOUND, "Method not found", NULL));
    (void)r;
}

static void say_suppressed(struct upstream *u, unsigned n)
{
    if (n)
        log_warn(u->log, "server '%s': %u similar messages suppressed (skipped messages)",
                 up_name(u), n);
}

/* A message of the server's that is skipped: said a few times a window, the rest counted. */
static void warn_skipped(struct upstream *u, const char *what, const char *why)
{
    unsigned suppressed;
    if (!u->junk_rl.window_ms)
        u->junk_rl = LOG_RATELIMIT_INIT(LOG_RATELIMIT_WINDOW_MS, LOG_RATELIMIT_BURST);
    if (!log_ratelimit_check(&u->junk_rl, loop_now(u->loop), &suppressed))
        return;
    say_suppressed(u, suppressed);
    log_warn(u->log, "server '%s': skipped a message that is not %s%s%s", up_name(u), what,
             why ? ": " : "", why ? why : "");
}

void up_skipped_flush(struct upstream *u)
{
    say_suppressed(u, log_ratelimit_take(&u->junk_rl));
}

static void on_invalid(struct upstream *u, struct conn *cn, struct jrpc_msg *m)
{
    struct json_object *id = NULL;
    struct upstream_call *c = NULL;
    if (json_object_is_type(m->root, json_type_object) &&
        json_object_object_get_ex(m->root, "id", &id) &&
        (json_object_object_get_ex(m->root, "result", NULL) ||
         json_object_object_get_ex(m->root, "error", NULL)))
        c = call_by_id(u, id);
    if (!c) {
        warn_skipped(u, "JSON-RPC", NULL);
        return;
    }
    char *msg = up_asprintf("server '%s' answered '%s' with a message that is not JSON-RPC",
                            up_name(u), c->method);
    up_call_unlink(u, c);
    transport_answered(cn->t, (uint64_t)c->id);
    if (c->ifn) {
        up_call_free(c);
        up_init_failed(u, -EPROTO, msg);
    } else {
        (void)up_call_fail_now(u, c, -EPROTO, msg);
    }
    free(msg);
}

/* A result for a call that takes it as it is (upstream_call_set_raw): found by the scan of its
 * envelope and handed on without a tree. false: the message is left to up_handle_message's
 * parse, which also says what is wrong with it. */
static bool pass_result(struct upstream *u, struct conn *cn, const char *text, size_t len)
{
    struct jscan j;
    /* a modern session's results may be rounds of input or need their tool lists checked, and
     * a trace wants the parsed message: both take the tree */
    if (u->trace || u->era != UPSTREAM_ERA_LEGACY || u->wire_modern || len > UP_MAX_MESSAGE)
        return false;
    if (jscan_message(text, len, &j) < 0 || !j.version_ok || !j.result.len || j.error.len ||
        j.method.len || j.id_type != JSCAN_NUMBER)
        return false;
    uint64_t id = jscan_span_uint(text, j.id);
    struct upstream_call *c = id ? call_by_tag(u, id) : NULL;
    if (!c || !c->raw || c->ifn || c->mrtr)
        return false;
    up_call_unlink(u, c);
    transport_answered(cn->t, (uint64_t)c->id);
    up_disarm(&c->timer);
    log_debug(u->log, "server '%s': <- #%" PRId64 " result, passed on (%" PRId64 " ms)", up_name(u),
              c->id, loop_now(u->loop) - c->started);
    c->in_callback = true;
    c->raw(c, text, len, &j, c->userdata);
    up_call_free(c);
    return true;
}

void up_handle_message(struct upstream *u, struct conn *cn, const char *text, size_t len)
{
    struct jrpc_msg m;
    struct err e = ERR_INIT;
    if (pass_result(u, cn, text, len))
        return;
    int r = jrpc_parse(text, len, UP_MAX_MESSAGE, &m, &e);
    if (r < 0) {
        warn_skipped(u, "JSON", err_msg(&e));
        return;
    }
    struct upstream_call *c = m.kind == JRPC_RESPONSE ? call_by_id(u, m.id) : NULL;
    if (m.kind != JRPC_INVALID)
        up_trace_received(u, &m, len, c); /* before the message is acted on, which may end u */
    switch (m.kind) {
    case JRPC_RESPONSE:
        if (c)
            deliver(u, cn, c, &m);
        else
            log_debug(u->log, "server '%s': an answer to no request of ours", up_name(u));
        break;
    case JRPC_REQUEST:
        on_request(u, cn, &m);
        break;
    case JRPC_NOTIFICATION:
        if (strcmp(m.method, "notifications/progress") == 0) {
            on_progress(u, &m);
        } else if (!up_listen_notification(u, &m)) {
            log_debug(u->log, "server '%s': <- %s", up_name(u), m.method);
            if (u->h.on_notification)
                u->h.on_notification(u, m.method, m.root, u->userdata);
        }
        break;
    default:
        on_invalid(u, cn, &m);
        break;
    }
    jrpc_msg_done(&m);
}

/* ---- request errors ------------------------------------------------------------------------ */

/* A request of ours whose session was gone: sent again once, on the new session. */
static void call_stale(struct upstream *u, struct upstream_call *c)
{
    up_call_unlink(u, c);
    if (c->retried) {
        char *m = up_asprintf("server '%s' lost the session again while '%s' was sent", up_name(u),
                              c->method);
        (void)up_call_fail_now(u, c, -ECONNRESET, m);
        free(m);
        return;
    }
    c->retried = true;
    if (c->session != u->session && u->sess != SESSION_REINIT) {
        up_send_or_fail(u, c); /* already re-established since it was sent */
        return;
    }
    up_call_put(u, c, CALL_WAITING, true);
    if (u->sess != SESSION_REINIT)
        up_start_reinit(u);
}

static void ping_error(struct upstream *u, int error)
{
    if (error == -ESTALE) {
        if (u->sess != SESSION_REINIT && u->state == UPSTREAM_READY)
            up_start_reinit(u);
        return;
    }
    char *msg = up_asprintf("server '%s': the ping after a timeout failed: %s", up_name(u),
                            up_strerror(u, error));
    up_conn_lost(u, up_call_err(error), msg);
    free(msg);
}

/* A user call's request failed with error. */
static void call_error(struct upstream *u, struct conn *cn, struct upstream_call *c, int error)
{
    if (error == -ESTALE) {
        call_stale(u, c);
        return;
    }
    up_call_unlink(u, c);
    if (error == -ECONNRESET && (c->flags & TRANSPORT_MODERN) && !c->stream_retried &&
        cn == u->conn && up_method_safe(c->method)) {
        /* its answer stream broke: a request that only reads is sent again, under a new id */
        c->stream_retried = true;
        log_debug(u->log, "server '%s': the answer to '%s' broke off: sending it again", up_name(u),
                  c->method);
        up_call_reissue(u, c, NULL);
        return;
    }
    bool step_up =
        error == -EPERM && cn == u->conn && cred_insufficient_scope(transport_challenge(cn->t));
    if (error == -EACCES && !c->auth_retried && u->state == UPSTREAM_READY &&
        u->sess == SESSION_OPEN && c->creds_gen != u->creds_gen) {
        /* refused with credentials that were replaced meanwhile: again, with the new ones */
        c->auth_retried = true;
        up_call_put(u, c, CALL_WAITING, true);
        up_flush_waiting(u);
        return;
    }
    if ((error == -EACCES || step_up) && !c->auth_retried && u->state == UPSTREAM_READY &&
        u->sess != SESSION_REINIT) {
        up_reauth(u, c, error); /* parked; retried once with fresh credentials */
        return;
    }
    char fix[640] = "";
    if ((error == -EACCES || error == -EPERM) && c->auth_retried) {
        char *hint = cred_refused_hint(u->provider, u->srv, error);
        snprintf(fix, sizeof(fix), " (refused again with fresh credentials: %s)",
                 hint ? hint : "'mcp-bridge list' shows where they come from");
        free(hint);
    }
    char *msg = up_asprintf("server '%s': '%s' failed: %s%s", up_name(u), c->method,
                            up_strerror(u, error), fix);
    if (up_call_fail_now(u, c, up_call_err(error), msg) && u->conn == cn &&
        (error == -ECONNREFUSED || error == -EHOSTUNREACH))
        up_conn_lost(u, -ECONNRESET, msg);
    free(msg);
}

static void conn_error(struct upstream *u, struct conn *cn, int error, uint64_t tag)
{
    if (!tag) {
        /* the session's own stream: a 404 means the session is gone; re-established now, not
         * at the next call, as what the server sends by itself would be lost meanwhile */
        if (error == -ESTALE && cn == u->conn && u->state == UPSTREAM_READY &&
            u->sess == SESSION_OPEN)
            up_start_reinit(u);
        return;
    }
    struct upstream_call *c = call_by_tag(u, tag);
    if (!c) {
        log_debug(u->log, "server '%s': request #%" PRIu64 " failed: %s", up_name(u), tag,
                  up_strerror(u, error));
        return;
    }
    if (c == u->init_call) {
        up_call_unlink(u, c);
        up_call_free(c);
        if (error == -EACCES || error == -EPERM) {
            up_init_refused(u, error);
            return;
        }
        char *msg =
            up_asprintf("server '%s': initialize failed: %s", up_name(u), up_strerror(u, error));
        up_init_failed(u, up_connect_err(error), msg);
        free(msg);
        return;
    }
    if (c == u->probe_call) {
        up_call_unlink(u, c);
        up_call_free(c);
        up_probe_error(u, error);
        return;
    }
    if (c == u->ping_call) {
        up_call_unlink(u, c);
        up_call_free(c);
        ping_error(u, error);
        return;
    }
    call_error(u, cn, c, error);
}

/* ---- transport callbacks -------------------------------------------------------------------- */

static void t_message(const char *msg, size_t len, void *userdata)
{
    struct conn *cn = userdata;
    if (cn->state == CONN_CURRENT)
        up_handle_message(cn->u, cn, msg, len);
}

static void t_stderr(const char *line, size_t len, void *userdata)
{
    struct conn *cn = userdata;
    up_stderr_line(cn->u, line, len); /* upstream_connect.c: the failure reports quote it */
}

static void t_error(int error, uint64_t tag, void *userdata)
{
    struct conn *cn = userdata;
    if (cn->state == CONN_CURRENT)
        conn_error(cn->u, cn, error, tag);
}

static void t_lost(int reason, const char *why, void *userdata)
{
    struct conn *cn = userdata;
    struct upstream *u = cn->u;
    if (cn->state != CONN_CURRENT)
        return;
    char *m = up_asprintf("server '%s': %s", up_name(u), why);
    if (u->state == UPSTREAM_READY)
        up_conn_lost(u, reason, m);
    else
        up_connect_fail(u, reason, m, false);
    free(m);
}

static void t_open_failed(int error, const char *message, void *userdata)
{
    struct conn *cn = userdata;
    if (cn->state != CONN_CURRENT)
        return;
    struct err e = ERR_INIT;
    (void)err_set(&e, error, "%s", message);
    up_start_failed(cn->u, error, NULL, &e);
}

static void t_done(void *userdata)
{
    struct conn *cn = userdata;
    struct upstream *u = cn->u;
    if (cn->state == CONN_CURRENT) {
        /* over without a word first: the connection is lost all the same */
        t_lost(-ECONNRESET, "the connection ended", cn);
        if (up_freed(u))
            return;
    }
    up_conn_done(u, cn);
}

const struct transport_handler up_transport_handler = {
    .on_message = t_message,
    .on_error = t_error,
    .on_lost = t_lost,
    .on_stderr = t_stderr,
    .on_done = t_done,
    .on_open_failed = t_open_failed,
};
