/* http_conn.c - the Streamable HTTP upstream: its public calls, its lifecycle, the session,
 * the GET stream and the order in which transfers start (see http_conn.h, and
 * http_int.h for the states).
 *
 * Every transfer is a struct http_req on the upstream's list (http_req.c). Transfers start
 * from the kick, a deferred call embedded in the upstream (cancelled when it goes), never from
 * the caller's stack: a send may come from inside libcurl's write callback (a message on an SSE
 * answer), where libcurl refuses curl_multi_add_handle. The kick starts the oldest transfer that may start (startable())
 * until none may, and does the work of http_conn_close(). The upstream's memory goes
 * through loop_release(), after the iteration, so http_conn_free() is safe from inside any
 * callback of ours.
 *
 * The resumption of a POST's answer is http_resume.c's, the 2024-11-05 transport
 * http_legacy.c's; this file only hands them the transfers that are theirs. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport/http_int.h"

/* ---- states -------------------------------------------------------------------------------- */

static bool state_ok(enum http_state from, enum http_state to)
{
    switch (to) {
    case HTTP_OPEN:
        return false;
    case HTTP_CLOSING:
        return from == HTTP_OPEN;
    case HTTP_DELETING:
        return from == HTTP_CLOSING;
    case HTTP_CLOSED:
        return from == HTTP_CLOSING || from == HTTP_DELETING;
    case HTTP_DEAD:
        return from != HTTP_DEAD;
    }
    return false;
}

/* The upstream's lifecycle (http_int.h): every change of u->state is made here. */
static void set_state(struct http_conn *u, enum http_state to)
{
    assert(state_ok(u->state, to));
    (void)state_ok;
    u->state = to;
}

static bool mode_ok(enum http_mode from, enum http_mode to)
{
    switch (to) {
    case MODE_STREAMABLE:
        return false;
    case MODE_LEGACY_WAIT:
        return from == MODE_STREAMABLE;
    case MODE_LEGACY_READY:
        return from == MODE_LEGACY_WAIT;
    case MODE_LEGACY_OVER:
        return from == MODE_LEGACY_WAIT || from == MODE_LEGACY_READY;
    }
    return false;
}

void http_set_mode(struct http_conn *u, enum http_mode to)
{
    assert(mode_ok(u->mode, to));
    (void)mode_ok;
    u->mode = to;
}

void http_stream_set(struct http_conn *u, enum http_stream to, struct http_req *r)
{
    /* NONE -> ORDERED -> ACTIVE -> NONE | RETRY -> ACTIVE; any -> NONE */
    u->stream_state = to;
    u->stream = to == STREAM_ORDERED || to == STREAM_ACTIVE ? r : NULL;
}

bool http_gone(const struct http_conn *u)
{
    return u->state != HTTP_OPEN;
}

/* ---- callbacks to the caller ------------------------------------------------------------- */

void http_emit_message(struct http_conn *u, const char *msg, size_t len, uint64_t tag)
{
    if (http_gone(u))
        return;
    u->message_tag = tag;
    u->h.on_message(msg, len, u->userdata);
    u->message_tag = 0; /* freed from inside, the memory lasts the iteration */
}

void http_emit_event(struct http_conn *u, const struct sse_event *ev, uint64_t tag)
{
    /* a writer that cannot take a big piece at once holds the event's buffer, as a framing's */
    struct rblock *outer = rblock_set_delivering(ev->block);
    http_emit_message(u, ev->data, ev->data_len, tag);
    (void)rblock_set_delivering(outer);
}

uint64_t http_conn_message_tag(const struct http_conn *u)
{
    return u->message_tag;
}

void http_emit_error(struct http_conn *u, int error, uint64_t tag)
{
    if (!http_gone(u) && u->h.on_error)
        u->h.on_error(error, tag, u->userdata);
}

void http_emit_close(struct http_conn *u, int reason)
{
    if (!http_gone(u) && u->h.on_close)
        u->h.on_close(reason, u->userdata);
}

static int stream_event(const struct sse_event *ev, void *userdata);

/* ---- the session ------------------------------------------------------------------------- */

/* A new session: the old session's GET stream (or its reconnection) and its last event id are
 * not for it; http_conn_open_stream() starts the new one. */
static void stream_restart(struct http_conn *u)
{
    if (u->stream)
        http_req_stop(u->stream);
    loop_timer_cancel(u->retry);
    u->retry = NULL;
    http_stream_set(u, STREAM_NONE, NULL);
    sse_parser_release(&u->stream_sse);
    sse_parser_init(&u->stream_sse, u->max_message, u->max_message, stream_event, u);
}

/* The session id of an initialize answer becomes ours once the answer is known to be 2xx, before
 * any message of it is delivered (the caller's next send must carry it). */
int http_commit_session(struct http_req *r)
{
    struct http_conn *u = r->u;

    if (!(r->flags & HTTP_CONN_INITIALIZE) || r->session == SESSION_TAKEN)
        return 0;
    bool bad = r->session == SESSION_BAD;
    r->session = SESSION_TAKEN;
    if (bad)
        return -EPROTO;
    bool same =
        r->sid && u->session_id ? strcmp(r->sid, u->session_id) == 0 : !r->sid && !u->session_id;
    free(u->session_id);
    u->session_id = r->sid; /* an answer without one: no session (stateless) */
    r->sid = NULL;
    http_hdrs_changed(u);
    if (!same && u->mode == MODE_STREAMABLE)
        stream_restart(u);
    return 0;
}

/* ---- the GET stream ------------------------------------------------------------------------ */

static int stream_event(const struct sse_event *ev, void *userdata)
{
    struct http_conn *u = userdata;

    if (u->mode != MODE_STREAMABLE && http_event_is(ev, "endpoint")) {
        int k = http_legacy_event(u, ev);
        if (k < 0)
            return k;
    } else if (ev->data_len > 0 && http_event_is(ev, "message")) {
        /* empty data: priming or keep-alive; the parser has recorded its id */
        http_emit_event(u, ev, 0);
    }
    return http_gone(u) ? -ECANCELED : 0;
}

static void retry_fired(struct loop_timer *t, void *userdata)
{
    struct http_conn *u = userdata;
    (void)t;

    if (u->stream_state == STREAM_RETRY)
        http_stream_set(u, STREAM_NONE, NULL);
    if (http_gone(u) || u->stream || u->mode != MODE_STREAMABLE)
        return;
    struct http_req *r = http_req_new(u, HREQ_GET);
    int k = r ? 0 : -ENOMEM;
    if (r) {
        http_stream_set(u, STREAM_ACTIVE, r);
        k = http_req_start(r);
        if (k < 0)
            http_req_free(r);
    }
    if (k < 0)
        http_emit_close(u, k);
}

static int arm_retry(struct http_conn *u, int64_t delay)
{
    if (!u->retry) {
        int k = loop_timer_add(u->loop, delay, retry_fired, u, &u->retry);
        if (k < 0)
            return k;
    } else {
        loop_timer_rearm(u->retry, delay);
    }
    http_stream_set(u, STREAM_RETRY, NULL);
    return 0;
}

void http_stream_done(struct http_req *r, CURLcode cc, long status)
{
    struct http_conn *u = r->u;
    bool was_sse =
        r->body == BODY_SSE || (r->body == BODY_UNKNOWN && status >= 200 && status < 300);
    int k = http_req_error(r, cc, status);

    http_stream_set(u, STREAM_NONE, NULL);
    sse_end(&u->stream_sse);
    /* a stream that ran and then ended or broke (not one we stopped) may be resumed */
    if (was_sse && !r->error &&
        (sse_retry_ms(&u->stream_sse) >= 0 || sse_last_id(&u->stream_sse)[0])) {
        int64_t delay = sse_retry_ms(&u->stream_sse);
        if (delay < 0)
            delay = HTTP_CONN_RETRY_DEFAULT_MS;
        k = arm_retry(u, delay);
        if (k >= 0)
            return;
    }
    if (k == -EOPNOTSUPP) /* 405: the server offers no GET stream */
        k = 0;
    if (k == -ESTALE)
        http_emit_error(u, k, 0);
    http_emit_close(u, k);
}

/* ---- starting transfers, closing ----------------------------------------------------------- */

/* The GET stream of http_conn_open_stream() starts once the notifications (and responses)
 * POSTed before it have been answered - notifications/initialized must have got its 202 - and
 * the POSTs sent after it start once it has started, so that a request never reaches the
 * server before the stream that may carry its answer (conformance: sse-retry). */
static bool startable(const struct http_conn *u, const struct http_req *r)
{
    const struct list_node *i;

    if (r->state != HREQ_QUEUED || r->kind == HREQ_RESUME)
        return false; /* resumptions start from their timers */
    if (r->kind == HREQ_POST && u->mode != MODE_STREAMABLE) /* after the end, kick fails them */
        return u->mode == MODE_LEGACY_READY;
    if (r == u->stream && u->stream_state == STREAM_ORDERED) {
        list_for_each (i, &u->reqs) {
            const struct http_req *p = list_entry(i, struct http_req, node);
            if (p->kind == HREQ_POST && !p->tag && p->state != HREQ_STOPPED && p->seq < r->seq)
                return false;
        }
    }
    if (r->kind == HREQ_POST && u->stream_state == STREAM_ORDERED && u->stream->seq < r->seq)
        return false;
    return true;
}

/* A transfer that could not start: the GET stream ends with it, a request fails. */
static void start_failed(struct http_conn *u, struct http_req *r, int k)
{
    if (r->kind != HREQ_GET) {
        http_req_fail(r, k);
        return;
    }
    http_req_free(r);
    sse_end(&u->stream_sse);
    if (u->mode != MODE_STREAMABLE)
        http_legacy_end(u, k);
    else
        http_emit_close(u, k);
}

static void close_work(struct http_conn *u);

static void kick_fired(void *userdata)
{
    struct http_conn *u = userdata;
    struct list_node *i;

    if (u->state == HTTP_CLOSING) {
        close_work(u);
        return;
    }
    if (u->mode == MODE_LEGACY_OVER)
        http_legacy_fail_pending(u, u->legacy_error);
    for (;;) {
        struct http_req *r = NULL;
        if (http_gone(u))
            return;
        list_for_each (i, &u->reqs) {
            struct http_req *c = list_entry(i, struct http_req, node);
            if (startable(u, c)) {
                r = c; /* the oldest */
                break;
            }
        }
        if (!r)
            return;
        bool ordered = r == u->stream && u->stream_state == STREAM_ORDERED;
        int k = http_req_start(r);
        if (k < 0)
            start_failed(u, r, k);
        else if (ordered)
            http_stream_set(u, STREAM_ACTIVE, r);
    }
}

int http_kick(struct http_conn *u)
{
    if (u->state == HTTP_DEAD)
        return 0;
    /* embedded and cancelled when the upstream goes: it cannot fail, nor outlive it */
    loop_defer_queue(u->loop, &u->kick, kick_fired, u);
    return 0;
}

static void drop_transfers(struct http_conn *u)
{
    while (!list_is_empty(&u->reqs))
        http_req_free(list_entry(list_first(&u->reqs), struct http_req, node));
}

/* http_conn_close()'s work, from the kick: every transfer stops, then the DELETE. */
static void close_work(struct http_conn *u)
{
    drop_transfers(u);
    loop_timer_cancel(u->retry);
    u->retry = NULL;
    http_stream_set(u, STREAM_NONE, NULL);
    loop_timer_cancel(u->endpoint_timer);
    u->endpoint_timer = NULL;
    int k = 0;
    if (u->session_id) {
        struct http_req *r = http_req_new(u, HREQ_DELETE);
        k = r ? http_req_start(r) : -ENOMEM;
        if (k >= 0) {
            set_state(u, HTTP_DELETING);
            return; /* http_delete_done calls done */
        }
        http_req_free(r);
    }
    set_state(u, HTTP_CLOSED);
    http_conn_done_fn done = u->done;
    u->done = NULL;
    if (done)
        done(k, u->userdata);
}

void http_delete_done(struct http_req *r, CURLcode cc, long status)
{
    struct http_conn *u = r->u;
    int k = http_req_error(r, cc, status);

    if (k == -EOPNOTSUPP || k == -ESTALE || k == -ENOENT)
        k = 0;
    set_state(u, HTTP_CLOSED);
    http_conn_done_fn done = u->done;
    u->done = NULL;
    if (done)
        done(k, u->userdata);
}

/* ---- public ------------------------------------------------------------------------------ */

/* Copies "Name: value" strings (secrets) into *ret; -EINVAL with the index of the first bad one
 * in *ret_bad (the header's value is never quoted: it may be a secret). */
static int headers_copy(const char *const *in, struct strv *ret, size_t *ret_bad)
{
    struct strv v = STRV_INIT;

    for (size_t i = 0; in && in[i]; i++) {
        const char *s = in[i];
        const char *colon = strchr(s, ':');
        int k = -EINVAL;
        if (colon && colon != s && !strpbrk(s, "\r\n") && !memchr(s, ' ', (size_t)(colon - s)))
            k = strv_push(&v, s);
        if (k < 0) {
            strv_release_secure(&v);
            *ret_bad = i;
            return k;
        }
    }
    *ret = v;
    return 0;
}

static void upstream_destroy(struct http_conn *u)
{
    drop_transfers(u);
    http_pool_release(u);
    loop_timer_cancel(u->retry);
    loop_timer_cancel(u->endpoint_timer);
    loop_defer_cancel(&u->kick);
    strv_release_secure(&u->headers);
    free(u->url);
    /* after drop_transfers() and the pool: libcurl used the key in place */
    http_tls_release(&u->tls);
    free(u->endpoint);
    free(u->session_id);
    free(u->proto);
    free(u->challenge);
    sse_parser_release(&u->stream_sse);
    free(u);
    rblock_user_remove(); /* after the answers' buffers: the spare goes with the last user */
}

static int check_spec(const struct http_conn_spec *spec, struct err *e)
{
    if (!spec->url ||
        (strncasecmp(spec->url, "http://", 7) != 0 && strncasecmp(spec->url, "https://", 8) != 0))
        return err_set(e, -EINVAL, "the server URL is not an http:// or https:// URL");
    /* the URL is not quoted: expanded, it may hold a token in its query */
    if (strpbrk(spec->url, "\r\n \t"))
        return err_set(e, -EINVAL, "the server URL holds white space");
    if (spec->timeout_ms < 0)
        return err_set(e, -EINVAL, "a negative timeout");
    return 0;
}

int http_conn_new(struct loop *l, const struct http_conn_spec *spec,
                  const struct http_conn_handler *h, void *userdata, struct http_conn **ret,
                  struct err *e)
{
    struct http_conn *u = NULL;
    size_t bad = 0;
    int k;

    if (!l || !spec || !h || !h->on_message || !ret)
        return err_set(e, -EINVAL, "invalid arguments");
    k = check_spec(spec, e);
    if (k < 0)
        return k;
    u = calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    rblock_user_add(); /* the answers' buffers may become the thread's spare: upstream_destroy */
    u->loop = l;
    u->h = *h;
    u->userdata = userdata;
    u->timeout_ms = spec->timeout_ms ? spec->timeout_ms : HTTP_CONN_TIMEOUT_DEFAULT_MS;
    u->max_message = spec->max_message ? spec->max_message : HTTP_CONN_MAX_MESSAGE_DEFAULT;
    u->mode = spec->legacy_sse ? MODE_LEGACY_WAIT : MODE_STREAMABLE;
    list_init(&u->reqs);
    sse_parser_init(&u->stream_sse, u->max_message, u->max_message, stream_event, u);
    u->url = strdup(spec->url);
    http_tls_init(&u->tls);
    if (spec->tls) {
        u->tls = *spec->tls;
        http_tls_init(spec->tls);
    }
    u->sign = spec->sign;
    if (!u->url) {
        k = -ENOMEM;
        goto out;
    }
    k = headers_copy(spec->headers, &u->headers, &bad);
    if (k == -EINVAL) /* the number only: the value may be a secret */
        k = err_set(e, -EINVAL, "header %zu is not 'Name: value'", bad + 1);
    if (k < 0)
        goto out;
    *ret = u;
    u = NULL;
    k = 0;
out:
    if (u)
        upstream_destroy(u);
    return k;
}

/* The requests of tag still going are over for the caller: their reply is taken as arrived,
 * and those of the kinds in stop_kinds (a bit per enum value) are stopped now. */
static void tag_done(struct http_conn *u, uint64_t tag, unsigned stop_kinds)
{
    struct list_node *i, *tmp;

    if (!u || !tag || u->state == HTTP_DEAD)
        return;
    list_for_each_safe (i, tmp, &u->reqs) {
        struct http_req *r = list_entry(i, struct http_req, node);
        if (r->tag != tag || r->state == HREQ_STOPPED || r->kind == HREQ_DELETE)
            continue;
        r->reply = REPLY_ARRIVED;
        if (stop_kinds & (1u << r->kind))
            http_req_stop(r);
    }
}

void http_conn_answered(struct http_conn *u, uint64_t tag)
{
    /* a POST ends by itself: not resumed, no error; a resumed GET may stay open for more */
    tag_done(u, tag, 1u << HREQ_RESUME);
}

bool http_conn_is_legacy(const struct http_conn *u)
{
    return u && u->mode != MODE_STREAMABLE;
}

void http_conn_abort(struct http_conn *u, uint64_t tag)
{
    tag_done(u, tag, 1u << HREQ_POST | 1u << HREQ_RESUME);
}

/* The pieces of a message: the big ones lying in held referenced where they are (held is
 * then never moved nor written over), the others copied into r->msg; empty ones left out. */
static int body_pieces(struct http_req *r, const struct iovec *iov, int n, struct rblock *held)
{
    size_t copied = 0, at = 0;
    int m = 0;

    for (int i = 0; i < n; i++)
        if (!rblock_holds(held, iov[i].iov_base, iov[i].iov_len))
            copied += iov[i].iov_len;
    if (http_req_msg_reserve(r, copied) < 0)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        if (iov[i].iov_len == 0)
            continue;
        if (rblock_holds(held, iov[i].iov_base, iov[i].iov_len)) {
            r->piece[m++] = iov[i];
            continue;
        }
        memcpy(r->msg + at, iov[i].iov_base, iov[i].iov_len);
        r->piece[m++] = (struct iovec){.iov_base = r->msg + at, .iov_len = iov[i].iov_len};
        at += iov[i].iov_len;
    }
    r->msg[at] = 0;
    r->n_piece = m;
    rblock_get(held);
    r->held = held;
    return 0;
}

/* The message whole in r->msg: a copy of the pieces. */
static int body_copy(struct http_req *r, const struct iovec *iov, int n, size_t len)
{
    size_t at = 0;

    if (http_req_msg_reserve(r, len) < 0)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        memcpy(r->msg + at, iov[i].iov_base, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    r->msg[len] = 0;
    return 0;
}

/* http_conn_send(), http_conn_send_take() and http_conn_sendv(): the message lent (iov), given
 * (*take, cap: iov is its one piece) or in pieces partly lying in held. */
static int send_msg(struct http_conn *u, const struct iovec *iov, int n, struct rblock *held,
                    char **take, size_t cap, unsigned flags, uint64_t tag, const char *const *hdrs)
{
    size_t len = 0;
    int k;

    if (!u || !iov || n < 1 || n > FRAMING_SENDV_MAX)
        return -EINVAL;
    for (int i = 0; i < n; i++) {
        if (!iov[i].iov_base && iov[i].iov_len)
            return -EINVAL;
        len += iov[i].iov_len;
    }
    if (len == 0 || (take && cap <= len))
        return -EINVAL;
    if (http_gone(u))
        return -ESHUTDOWN;
    if (len > u->max_message)
        return -E2BIG;
    bool wait_endpoint = u->mode == MODE_LEGACY_WAIT;
    if (wait_endpoint && http_legacy_count_pending(u) >= HTTP_CONN_PENDING_MAX)
        return -ENOBUFS;
    if (wait_endpoint && !u->stream) { /* spec.legacy_sse: the connection starts now */
        k = http_legacy_open(u);
        if (k < 0)
            return k;
    }
    struct http_req *r = http_req_new(u, HREQ_POST);
    if (!r)
        return -ENOMEM;
    if (take) { /* given: libcurl reads it where it is */
        free(r->msg);
        r->msg = *take;
        r->msg_cap = cap;
        *take = NULL;
        r->msg[len] = 0;
        k = 0;
    } else if (held && !cred_sign_reads_body(u->sign)) {
        /* libcurl reads the pieces where they are; a requestHeadersCommand signs the
         * message whole, so it is given a copy */
        k = body_pieces(r, iov, n, held);
    } else { /* ours until the transfer ends: the caller's buffer is only lent for this call */
        k = body_copy(r, iov, n, len);
    }
    if (k < 0) {
        http_req_free(r);
        return k;
    }
    r->len = len;
    r->flags = flags & (HTTP_CONN_INITIALIZE | HTTP_CONN_MODERN);
    r->tag = tag;
    for (size_t j = 0; hdrs && hdrs[j]; j++)
        if (strv_push(&r->extra, hdrs[j]) < 0) {
            http_req_free(r);
            return -ENOMEM;
        }
    r->reply = tag ? REPLY_AWAITED : REPLY_NONE;
    k = http_kick(u);
    if (k < 0)
        http_req_free(r);
    return k;
}

int http_conn_send(struct http_conn *u, const char *msg, size_t len, unsigned flags, uint64_t tag,
                   const char *const *hdrs)
{
    const struct iovec v = {.iov_base = (void *)(uintptr_t)msg, .iov_len = msg ? len : 0};
    return send_msg(u, &v, 1, NULL, NULL, 0, flags, tag, hdrs);
}

int http_conn_send_take(struct http_conn *u, char **msg, size_t len, size_t cap, unsigned flags,
                        uint64_t tag, const char *const *hdrs)
{
    const struct iovec v = {.iov_base = msg ? *msg : NULL, .iov_len = msg && *msg ? len : 0};
    return send_msg(u, &v, 1, NULL, msg && *msg ? msg : NULL, cap, flags, tag, hdrs);
}

int http_conn_sendv(struct http_conn *u, const struct iovec *iov, int n, struct rblock *held,
                    unsigned flags, uint64_t tag, const char *const *hdrs)
{
    return send_msg(u, iov, n, held, NULL, 0, flags, tag, hdrs);
}

int http_conn_set_headers(struct http_conn *u, const char *const *headers)
{
    struct strv v = STRV_INIT;
    size_t bad = 0;

    if (!u)
        return -EINVAL;
    int k = headers_copy(headers, &v, &bad);
    if (k < 0)
        return k;
    strv_release_secure(&u->headers);
    u->headers = v;
    http_hdrs_changed(u); /* the next request carries them: none waits for a rebuild */
    return 0;
}

size_t http_conn_easy_inits(const struct http_conn *u)
{
    return u ? u->easy_inits : 0;
}

const char *http_conn_challenge(const struct http_conn *u)
{
    return u ? u->challenge : NULL;
}

int http_conn_set_protocol_version(struct http_conn *u, const char *version)
{
    if (!u || !version || strlen(version) > 64)
        return -EINVAL;
    for (const char *p = version; *p; p++)
        if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
            return -EINVAL;
    if (!version[0])
        return -EINVAL;
    char *v = strdup(version);
    if (!v)
        return -ENOMEM;
    free(u->proto);
    u->proto = v;
    http_hdrs_changed(u);
    return 0;
}

int http_conn_open_stream(struct http_conn *u)
{
    if (!u)
        return -EINVAL;
    if (http_gone(u))
        return -ESHUTDOWN;
    if (u->mode != MODE_STREAMABLE) /* the legacy stream is the connection itself */
        return 0;
    if (u->stream_state != STREAM_NONE)
        return -EALREADY;
    struct http_req *r = http_req_new(u, HREQ_GET);
    if (!r)
        return -ENOMEM;
    int k = http_kick(u);
    if (k < 0) {
        http_req_free(r);
        return k;
    }
    http_stream_set(u, STREAM_ORDERED, r); /* see startable() */
    return 0;
}

int http_conn_close(struct http_conn *u, http_conn_done_fn done)
{
    if (!u)
        return -EINVAL;
    if (http_gone(u))
        return -ESHUTDOWN;
    int k = http_kick(u);
    if (k < 0)
        return k;
    set_state(u, HTTP_CLOSING);
    u->done = done;
    return 0;
}

static void upstream_released(struct loop_release *node)
{
    upstream_destroy(list_entry(node, struct http_conn, release));
}

void http_conn_free(struct http_conn *u)
{
    if (!u || u->state == HTTP_DEAD)
        return;
    set_state(u, HTTP_DEAD);
    /* no timer of ours fires from now on; the transfers stop with the memory, after the
     * iteration (this may be called from inside libcurl's callbacks) */
    loop_timer_cancel(u->retry);
    u->retry = NULL;
    loop_timer_cancel(u->endpoint_timer);
    u->endpoint_timer = NULL;
    loop_defer_cancel(&u->kick);
    loop_release(u->loop, &u->release, upstream_released);
}
