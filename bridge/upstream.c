/* upstream.c - one MCP server the bridge talks to, as a client: a session over a transport.
 *
 * Layout: a `struct conn` is one transport (a child or an HTTP client) with the session on it;
 * the upstream has at most one current conn, plus conns being retired (a child shutting down,
 * an HTTP session being DELETEd) that it only waits for. Calls live in exactly one place:
 * the id map (sent, waiting for their answer), the waiting list (for READY, or for a session
 * being re-established), or the failing list (a failure to report from the loop).
 *
 * Re-entrancy: every entry from the loop holds u->busy; upstream_free() during a callback
 * tears everything down at once but leaves the struct itself until the outermost entry
 * returns, and code after a user callback checks u->freed (and whether its conn is still the
 * current one) before going on. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "credkit/secmem.h"
#include "credkit/util.h"
#include "credkit/version.h"

#include "http_upstream.h"
#include "jsonrpc.h"
#include "stdio_upstream.h"
#include "upstream.h"

const char *const UPSTREAM_PROTOCOL_VERSIONS[] = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL,
};

#define MAX_MESSAGE         (16u * 1024u * 1024u) /* both transports' default frame bound */
#define MAX_CALLS           10000                 /* calls sent, waiting or failing, per upstream */
#define MAP_MIN             64
#define STREAM_RETRY_MIN_MS 1000 /* reopening a GET stream that failed */

/* ---- structures ---------------------------------------------------------------------------- */

struct upstream;

struct conn {
    struct upstream *u;
    struct stdio_upstream *stdio;
    struct http_upstream *http;
    struct conn *next; /* on u->retiring */
    uint64_t gen;      /* the generation this conn has (or will have once READY) */
    bool retiring;
    bool dead; /* retiring and nothing left to wait for: freed by the kick */
};

enum call_where {
    CALL_NEW,
    CALL_WAITING, /* u->waiting */
    CALL_SENT,    /* u->map */
    CALL_FAILING, /* u->failing */
};

struct upstream_call;
/* internal calls (initialize, ping): an answer, or an error (-ETIMEDOUT) */
typedef void (*call_internal_fn)(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m,
                                 int error);

struct upstream_call {
    struct upstream *u;
    int64_t id;
    char *method;
    struct json_object *params;
    struct json_object *token; /* the caller's progress token, NULL when none */
    bool token_swapped;
    int64_t timeout_ms, started, deadline, hard_deadline;
    struct loop_timer *timer;
    upstream_response_fn fn;
    upstream_progress_fn progress;
    void *userdata;
    call_internal_fn ifn;
    unsigned flags; /* http_upstream_send flags */
    enum call_where where;
    uint64_t session; /* u->session when sent */
    bool retried;     /* sent again after a lost HTTP session */
    bool in_callback; /* its response callback is running: freed by whoever called it */
    bool progressed;
    int error; /* CALL_FAILING */
    char *message;
    struct upstream_call *hnext;       /* map chain */
    struct upstream_call *prev, *next; /* waiting or failing list */
};

struct clist {
    struct upstream_call *head, *tail;
};

struct call_map {
    struct upstream_call **b;
    size_t nb, n;
    size_t scan; /* every bucket below it is empty: draining the map is one pass */
};

struct hdr_req {
    struct upstream *u; /* NULL: abandoned (the answer is dropped) */
};

struct upstream_list {
    struct upstream *u;
    char *method, *key;
    upstream_list_fn fn;
    void *userdata;
    struct json_object *items;
    char *cursor;
    unsigned pages;
    struct upstream_call *call;
    bool in_callback; /* fn is running: freed when it returns */
    struct upstream_list *prev, *next;
};

struct upstream {
    struct loop *loop;
    struct log *log;
    struct mcp_server *srv;
    mcp_lookup_fn lookup;
    void *lookup_userdata;
    upstream_headers_fn headers_fn;
    void *headers_userdata;
    struct json_object *client_caps;
    struct json_object *client_info;
    char *offer_version;
    int64_t connect_timeout_ms, request_timeout_ms;
    bool no_reconnect;
    struct upstream_handler h;
    void *userdata;

    enum upstream_state state;
    char *last_error;
    struct json_object *caps, *info;
    char *instructions, *version;
    uint64_t gen;
    uint64_t session; /* counts sessions established (connects and re-initializations) */
    int64_t next_id;

    struct conn *conn;
    struct conn *retiring;
    struct hdr_req *hdr;
    bool force_headers; /* ask headers_fn with force at the next connect */
    bool forced_in_connect;
    bool reiniting; /* READY, but the HTTP session is being re-established */
    struct upstream_call *init_call, *ping_call;

    struct call_map map;
    struct clist waiting, failing;
    size_t ncalls;
    struct upstream_list *lists;

    struct loop_timer *kick;
    bool start_pending, close_pending;
    struct loop_timer *connect_timer, *backoff_timer, *stream_timer;
    int64_t backoff_ms, stream_retry_ms, ready_at;
    uint64_t rng;

    unsigned busy;
    bool freed;
};

static void call_timer_fired(struct loop_timer *t, void *userdata);
static void kick_fired(struct loop_timer *t, void *userdata);
static void conn_lost(struct upstream *u, int error, const char *message);
static void connect_fail(struct upstream *u, int error, const char *message, bool permanent);
static void http_begin(struct upstream *u);
static void flush_waiting(struct upstream *u);
static void reconnect_now(struct upstream *u);
static void backoff_fired(struct loop_timer *t, void *userdata);
static void connect_timer_fired(struct loop_timer *t, void *userdata);

/* ---- small helpers ------------------------------------------------------------------------- */

static const char *name_of(const struct upstream *u)
{
    return u->srv->name;
}

/* "60 s", "1.5 s", "250 ms" */
static void fmt_ms(char *buf, size_t size, int64_t ms)
{
    if (ms >= 1000 && ms % 1000 == 0)
        snprintf(buf, size, "%" PRId64 " s", ms / 1000);
    else if (ms >= 1000)
        snprintf(buf, size, "%.1f s", (double)ms / 1000.0);
    else
        snprintf(buf, size, "%" PRId64 " ms", ms);
}

static char *xasprintf(const char *fmt, ...) _printf_(1, 2);
static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

static uint64_t rng_next(struct upstream *u)
{
    uint64_t x = u->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    u->rng = x;
    return x;
}

/* Text for a transport error, for messages. */
static const char *transport_err_text(int error)
{
    switch (error) {
    case -EACCES:
        return "HTTP 401 Unauthorized: the credentials are missing or were refused";
    case -EPERM:
        return "HTTP 403 Forbidden: the credentials do not allow this";
    case -ENOENT:
        return "HTTP 404 Not Found: check the URL";
    case -ESTALE:
        return "the session expired (HTTP 404)";
    case -EOPNOTSUPP:
        return "HTTP 405 Method Not Allowed: check the URL";
    case -EAGAIN:
        return "the server is overloaded (HTTP 429 or 503)";
    case -EREMOTEIO:
        return "the server failed (HTTP 5xx)";
    case -ECONNREFUSED:
        return "connection refused";
    case -EHOSTUNREACH:
        return "cannot resolve or reach the host";
    case -ETIMEDOUT:
        return "the request timed out";
    case -EPROTO:
        return "the answer broke the protocol";
    case -E2BIG:
        return "a message is over the size bound";
    case -ENOBUFS:
        return "the server is not reading its input";
    case -ECONNRESET:
    case -EPIPE:
    case -ESHUTDOWN:
        return "the connection was lost";
    default:
        return strerror(-error);
    }
}

/* The structured error a call gets for a transport error. */
static int call_err(int error)
{
    switch (error) {
    case -ETIMEDOUT:
    case -E2BIG:
    case -EPROTO:
    case -ENOBUFS:
        return error;
    case -EACCES:
    case -EPERM:
        return -EACCES;
    default:
        return -ECONNRESET;
    }
}

/* The structured error a failed connect reports for a transport error. */
static int connect_err(int error)
{
    int e = call_err(error);
    return e == -ECONNRESET ? -ENOTCONN : e;
}

/* ---- string vectors (env, headers) -------------------------------------------------------- */

static void strv_free(char **v, bool secret)
{
    if (!v)
        return;
    for (char **p = v; *p; p++) {
        if (secret)
            secure_free(*p);
        else
            free(*p);
    }
    free(v);
}

/* ---- the id map: chained buckets indexed by the low bits of the (sequential) id ---------- */

static size_t map_slot(const struct call_map *m, int64_t id)
{
    return (size_t)((uint64_t)id & (m->nb - 1));
}

static struct upstream_call *map_find(const struct call_map *m, int64_t id)
{
    if (!m->nb)
        return NULL;
    for (struct upstream_call *c = m->b[map_slot(m, id)]; c; c = c->hnext)
        if (c->id == id)
            return c;
    return NULL;
}

static int map_add(struct call_map *m, struct upstream_call *c)
{
    if (m->n >= m->nb) {
        size_t nb = m->nb ? m->nb * 2 : MAP_MIN;
        struct upstream_call **b = calloc(nb, sizeof(*b));
        if (!b)
            return -ENOMEM;
        for (size_t i = 0; i < m->nb; i++) {
            struct upstream_call *x = m->b[i], *nx;
            for (; x; x = nx) {
                nx = x->hnext;
                size_t s = (size_t)((uint64_t)x->id & (nb - 1));
                x->hnext = b[s];
                b[s] = x;
            }
        }
        free(m->b);
        m->b = b;
        m->nb = nb;
        m->scan = 0;
    }
    size_t s = map_slot(m, c->id);
    c->hnext = m->b[s];
    m->b[s] = c;
    m->n++;
    if (s < m->scan)
        m->scan = s;
    return 0;
}

static void map_remove(struct call_map *m, struct upstream_call *c)
{
    struct upstream_call **p = &m->b[map_slot(m, c->id)];
    for (; *p; p = &(*p)->hnext) {
        if (*p == c) {
            *p = c->hnext;
            c->hnext = NULL;
            m->n--;
            return;
        }
    }
}

/* Removes and returns some call (lowest slot first), NULL when empty. */
static struct upstream_call *map_pop(struct call_map *m)
{
    if (!m->n) {
        m->scan = 0;
        return NULL;
    }
    for (size_t i = m->scan; i < m->nb; i++) {
        struct upstream_call *c = m->b[i];
        if (c) {
            m->b[i] = c->hnext;
            c->hnext = NULL;
            m->n--;
            m->scan = i;
            return c;
        }
    }
    return NULL;
}

/* ---- call lists ------------------------------------------------------------------------- */

static void clist_push(struct clist *l, struct upstream_call *c, bool front)
{
    c->prev = c->next = NULL;
    if (!l->head) {
        l->head = l->tail = c;
    } else if (front) {
        c->next = l->head;
        l->head->prev = c;
        l->head = c;
    } else {
        c->prev = l->tail;
        l->tail->next = c;
        l->tail = c;
    }
}

static void clist_remove(struct clist *l, struct upstream_call *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        l->tail = c->prev;
    c->prev = c->next = NULL;
}

/* ---- loop entries, the kick ------------------------------------------------------------------ */

static void really_free(struct upstream *u);

static void enter(struct upstream *u)
{
    u->busy++;
}

static void leave(struct upstream *u)
{
    if (--u->busy == 0 && u->freed)
        really_free(u);
}

static void kick(struct upstream *u)
{
    if (u->freed)
        return;
    if (u->kick) {
        loop_timer_rearm(u->kick, 0);
        return;
    }
    if (loop_timer_add(u->loop, 0, kick_fired, u, &u->kick) < 0)
        log_error(u->log, "server '%s': out of memory", name_of(u));
}

/* Arms *t (created on first use) to fire in delay ms. */
static int arm(struct upstream *u, struct loop_timer **t, int64_t delay, loop_timer_fn fn)
{
    if (*t) {
        loop_timer_rearm(*t, delay);
        return 0;
    }
    return loop_timer_add(u->loop, delay, fn, u, t);
}

static void disarm(struct loop_timer **t)
{
    loop_timer_cancel(*t);
    *t = NULL;
}

/* ---- state ---------------------------------------------------------------------------------- */

static void set_last_error(struct upstream *u, const char *message)
{
    if (!message)
        return;
    char *m = strdup(message);
    if (!m)
        return;
    free(u->last_error);
    u->last_error = m;
}

/* From the loop only. false: the upstream was freed by the callback. */
static bool set_state(struct upstream *u, enum upstream_state s, int error, const char *message)
{
    u->state = s;
    set_last_error(u, message);
    if (u->h.on_state)
        u->h.on_state(u, s, error, message, u->userdata);
    return !u->freed;
}

/* ---- calls ---------------------------------------------------------------------------------- */

static void call_free(struct upstream_call *c)
{
    if (!c)
        return;
    c->u->ncalls--;
    loop_timer_cancel(c->timer);
    free(c->method);
    json_object_put(c->params);
    json_object_put(c->token);
    free(c->message);
    free(c);
}

/* Takes c out of wherever it is. */
static void call_unlink(struct upstream *u, struct upstream_call *c)
{
    switch (c->where) {
    case CALL_WAITING:
        clist_remove(&u->waiting, c);
        break;
    case CALL_SENT:
        map_remove(&u->map, c);
        break;
    case CALL_FAILING:
        clist_remove(&u->failing, c);
        break;
    case CALL_NEW:
        break;
    }
    c->where = CALL_NEW;
    if (u->init_call == c)
        u->init_call = NULL;
    if (u->ping_call == c)
        u->ping_call = NULL;
}

/* Reports a failure from the loop now (c unlinked). false: the upstream was freed. */
static bool call_fail_now(struct upstream *u, struct upstream_call *c, int error,
                          const char *message)
{
    if (c->ifn) {
        c->ifn(u, c, NULL, error);
        call_free(c);
        return !u->freed;
    }
    c->in_callback = true;
    c->fn(c, NULL, error, message ? message : strerror(-error), c->userdata);
    call_free(c);
    return !u->freed;
}

/* Queues a failure to be reported from the kick (c unlinked). Internal calls go silently. */
static void call_fail_later(struct upstream *u, struct upstream_call *c, int error,
                            const char *message)
{
    loop_timer_cancel(c->timer);
    c->timer = NULL;
    if (c->ifn) {
        call_free(c);
        return;
    }
    c->error = error;
    free(c->message);
    c->message = message ? strdup(message) : NULL;
    c->where = CALL_FAILING;
    clist_push(&u->failing, c, false);
    kick(u);
}

/* msg without its leading "server 'NAME': ", to quote it after one. */
static const char *cause_of(const struct upstream *u, const char *msg)
{
    size_t n = strlen(name_of(u));
    if (msg && strncmp(msg, "server '", 8) == 0 && strncmp(msg + 8, name_of(u), n) == 0 &&
        strncmp(msg + 8 + n, "': ", 3) == 0)
        return msg + 8 + n + 3;
    return msg;
}

/* Fails every call sent on the current session. */
static void fail_inflight(struct upstream *u, int error, const char *why)
{
    struct upstream_call *c;
    why = cause_of(u, why);
    while ((c = map_pop(&u->map))) {
        c->where = CALL_NEW;
        if (u->init_call == c)
            u->init_call = NULL;
        if (u->ping_call == c)
            u->ping_call = NULL;
        if (c->ifn) {
            call_free(c);
            continue;
        }
        char *m = xasprintf("server '%s': the connection was lost before '%s' was answered%s%s",
                            name_of(u), c->method, why ? ": " : "", why ? why : "");
        call_fail_later(u, c, error, m);
        free(m);
    }
}

static void fail_waiting(struct upstream *u, int error, const char *message)
{
    struct upstream_call *c;
    while ((c = u->waiting.head)) {
        clist_remove(&u->waiting, c);
        c->where = CALL_NEW;
        call_fail_later(u, c, error, message);
    }
}

/* ---- sending ------------------------------------------------------------------------------- */

static int conn_send(struct conn *cn, struct json_object *msg, unsigned flags, uint64_t tag)
{
    size_t len = 0;
    const char *text = jrpc_serialize(msg, &len);
    if (!text)
        return -ENOMEM;
    if (len > MAX_MESSAGE)
        return -E2BIG;
    if (cn->stdio)
        return stdio_upstream_send(cn->stdio, text, len);
    if (cn->http)
        return http_upstream_send(cn->http, text, len, flags, tag);
    return -ENOTCONN;
}

static int send_notification(struct upstream *u, const char *method, struct json_object *params)
{
    if (!u->conn)
        return 0;
    struct json_object *n = jrpc_new_notification(method, params);
    if (!n)
        return -ENOMEM;
    int r = conn_send(u->conn, n, 0, 0);
    json_object_put(n);
    if (r < 0)
        log_debug(u->log, "server '%s': cannot send %s: %s", name_of(u), method,
                  transport_err_text(r));
    else
        log_debug(u->log, "server '%s': -> %s", name_of(u), method);
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
    int r = send_notification(u, "notifications/cancelled", p);
    (void)r; /* logged; a lost cancellation needs nothing more */
    json_object_put(p);
}

static int send_response(struct upstream *u, struct json_object *resp)
{
    if (!resp)
        return -ENOMEM;
    int r = u->conn ? conn_send(u->conn, resp, 0, 0) : 0;
    json_object_put(resp);
    return r;
}

/* Sends c on the current conn and puts it in the map. */
static int send_call(struct upstream *u, struct upstream_call *c)
{
    struct json_object *id = NULL, *req = NULL;
    int r = -ENOMEM;

    if (!u->conn)
        return -ENOTCONN;
    id = json_object_new_int64(c->id);
    if (!id)
        goto out;
    if (c->token && !c->token_swapped) {
        jrpc_set_progress_token(c->params, id);
        c->token_swapped = true;
    }
    req = jrpc_new_request(id, c->method, c->params);
    if (!req)
        goto out;
    r = map_add(&u->map, c);
    if (r < 0)
        goto out;
    r = conn_send(u->conn, req, c->flags, (uint64_t)c->id);
    if (r < 0) {
        map_remove(&u->map, c);
        goto out;
    }
    c->where = CALL_SENT;
    c->session = u->session;
    log_debug(u->log, "server '%s': -> %s #%" PRId64, name_of(u), c->method, c->id);
out:
    json_object_put(req);
    json_object_put(id);
    return r;
}

/* Sends a user call that was waiting or is new; a failure is reported from the kick. */
static void send_or_fail(struct upstream *u, struct upstream_call *c)
{
    int r = send_call(u, c);
    if (r >= 0)
        return;
    int code = call_err(r);
    char *m = xasprintf("server '%s': cannot send '%s': %s", name_of(u), c->method,
                        transport_err_text(r));
    call_fail_later(u, c, code, m);
    free(m);
}

static int call_new(struct upstream *u, const char *method, struct json_object *params,
                    int64_t timeout_ms, struct upstream_call **ret)
{
    struct upstream_call *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->u = u;
    u->ncalls++;
    c->method = strdup(method);
    if (!c->method) {
        call_free(c);
        return -ENOMEM;
    }
    c->params = params ? json_object_get(params) : NULL;
    c->id = u->next_id++;
    c->timeout_ms = timeout_ms;
    c->started = loop_now(u->loop);
    c->deadline = c->started + timeout_ms;
    c->hard_deadline = c->started + timeout_ms * UPSTREAM_MAX_TOTAL_FACTOR;
    if (timeout_ms > 0) {
        int r = loop_timer_add(u->loop, timeout_ms, call_timer_fired, c, &c->timer);
        if (r < 0) {
            call_free(c);
            return r;
        }
    }
    *ret = c;
    return 0;
}

/* ---- connections ----------------------------------------------------------------------- */

static void conn_free(struct conn *cn)
{
    if (!cn)
        return;
    stdio_upstream_free(cn->stdio);
    http_upstream_free(cn->http);
    free(cn);
}

static void retiring_unlink(struct upstream *u, struct conn *cn)
{
    for (struct conn **p = &u->retiring; *p; p = &(*p)->next) {
        if (*p == cn) {
            *p = cn->next;
            cn->next = NULL;
            return;
        }
    }
}

/* Reports CLOSED once closing has nothing left to wait for. From the loop. */
static void maybe_closed(struct upstream *u)
{
    if (u->state == UPSTREAM_CLOSING && !u->close_pending && !u->retiring)
        (void)set_state(u, UPSTREAM_CLOSED, 0, NULL);
}

static void http_closed(int result, void *userdata)
{
    struct conn *cn = userdata;
    struct upstream *u = cn->u;
    enter(u);
    if (result < 0)
        log_debug(u->log, "server '%s': ending the HTTP session: %s", name_of(u),
                  transport_err_text(result));
    retiring_unlink(u, cn);
    conn_free(cn);
    maybe_closed(u);
    leave(u);
}

/* Ends a conn that is no longer current: a child is shut down (stdin closed, SIGTERM, SIGKILL;
 * on_exit frees it), an HTTP session DELETEd. */
static void retire(struct upstream *u, struct conn *cn)
{
    cn->retiring = true;
    cn->next = u->retiring;
    u->retiring = cn;
    if (cn->stdio) {
        stdio_upstream_shutdown(cn->stdio);
        return;
    }
    if (cn->http && http_upstream_close(cn->http, http_closed) >= 0)
        return;
    cn->dead = true; /* nothing to wait for: freed from the kick */
    kick(u);
}

/* Drops the current conn and everything of its session (internal calls silently). */
static void drop_conn(struct upstream *u)
{
    struct upstream_call *c;
    if ((c = u->init_call)) {
        call_unlink(u, c);
        call_free(c);
    }
    if ((c = u->ping_call)) {
        call_unlink(u, c);
        call_free(c);
    }
    disarm(&u->connect_timer);
    disarm(&u->stream_timer);
    if (u->hdr) {
        u->hdr->u = NULL; /* its answer, whenever it comes, is dropped */
        u->hdr = NULL;
    }
    u->reiniting = false;
    struct conn *cn = u->conn;
    u->conn = NULL;
    if (cn)
        retire(u, cn);
}

static struct conn *conn_new(struct upstream *u)
{
    struct conn *cn = calloc(1, sizeof(*cn));
    if (!cn)
        return NULL;
    cn->u = u;
    cn->gen = u->gen + 1;
    return cn;
}

/* ---- state transitions (from the loop) ---------------------------------------------------- */

static void enter_failed(struct upstream *u, int error, const char *message)
{
    disarm(&u->backoff_timer);
    char *m = xasprintf("%s", message ? message : "the server cannot be used");
    fail_waiting(u, -ENOTCONN, m);
    free(m);
    /* a one-shot client reports the failure itself, as its error */
    log_msg(u->log, u->no_reconnect ? LOG_DEBUG : LOG_WARN, "%s",
            message ? message : "server failed");
    (void)set_state(u, UPSTREAM_FAILED, error, message);
}

static void enter_backoff(struct upstream *u, int error, const char *message)
{
    int64_t base = u->backoff_ms;
    int64_t delay = base + (int64_t)(rng_next(u) % (uint64_t)(base / 4 + 1));
    u->backoff_ms = base * 2 > UPSTREAM_BACKOFF_MAX_MS ? UPSTREAM_BACKOFF_MAX_MS : base * 2;
    if (arm(u, &u->backoff_timer, delay, backoff_fired) < 0) {
        enter_failed(u, -ENOMEM, message);
        return;
    }
    char d[32];
    fmt_ms(d, sizeof(d), delay);
    log_info(u->log, "%s; connecting again in %s", message ? message : "server disconnected", d);
    (void)set_state(u, UPSTREAM_BACKOFF, error, message);
}

static void connect_fail(struct upstream *u, int error, const char *message, bool permanent)
{
    drop_conn(u);
    if (permanent || u->no_reconnect)
        enter_failed(u, error, message);
    else
        enter_backoff(u, error, message);
}

/* A READY connection is gone. */
static void conn_lost(struct upstream *u, int error, const char *message)
{
    drop_conn(u);
    fail_inflight(u, -ECONNRESET, message);
    if (u->no_reconnect) {
        enter_failed(u, error, message);
        return;
    }
    if (loop_now(u->loop) - u->ready_at >= UPSTREAM_BACKOFF_RESET_MS)
        u->backoff_ms = UPSTREAM_BACKOFF_INITIAL_MS;
    enter_backoff(u, error, message);
}

/* Drops the connection and connects again from the kick (failures reported first). */
static void reconnect_now(struct upstream *u)
{
    drop_conn(u);
    char *m = xasprintf("reconnecting");
    fail_inflight(u, -ECONNRESET, m);
    free(m);
    disarm(&u->backoff_timer);
    u->state = UPSTREAM_CONNECTING;
    u->start_pending = true;
    kick(u);
}

/* ---- connecting ------------------------------------------------------------------------------ */

static void init_answered(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m,
                          int error);

static int send_initialize(struct upstream *u)
{
    struct json_object *p = json_object_new_object();
    struct upstream_call *c = NULL;
    int r = -ENOMEM;

    if (!p)
        return -ENOMEM;
    if (json_object_object_add(p, "protocolVersion", json_object_new_string(u->offer_version)) <
            0 ||
        json_object_object_add(p, "capabilities", json_object_get(u->client_caps)) < 0 ||
        json_object_object_add(p, "clientInfo", json_object_get(u->client_info)) < 0)
        goto out;
    r = call_new(u, "initialize", p, 0, &c);
    if (r < 0)
        goto out;
    c->ifn = init_answered;
    c->flags = HTTP_UPSTREAM_INITIALIZE;
    r = send_call(u, c);
    if (r < 0) {
        call_free(c);
        goto out;
    }
    u->init_call = c;
out:
    json_object_put(p);
    return r;
}

static bool is_permanent_start_error(int r)
{
    return r == -ENOENT || r == -EACCES || r == -ENOTDIR || r == -EINVAL || r == -ENOEXEC ||
           r == -ELOOP || r == -ENAMETOOLONG || r == -EISDIR;
}

/* Expands "NAME<sep>template" into "NAME<sep>value". -ENOENT etc. with a message in e. */
static int expand_pair(struct upstream *u, const char *pair, const char *sep, char **ret,
                       struct err *e)
{
    const char *at = strstr(pair, sep);
    char *val = NULL;
    int r;
    if (!at)
        return err_set(e, -EINVAL, "an entry is not of the form NAME%svalue", sep);
    size_t nlen = (size_t)(at - pair) + strlen(sep);
    r = mcp_expand(at + strlen(sep), u->lookup, u->lookup_userdata, &val, e);
    if (r < 0) {
        err_prefix(e, "'%.*s'", (int)(at - pair), pair);
        return r;
    }
    size_t vlen = strlen(val);
    char *s = malloc(nlen + vlen + 1);
    if (!s) {
        secure_free(val);
        return -ENOMEM;
    }
    memcpy(s, pair, nlen);
    memcpy(s + nlen, val, vlen + 1);
    secure_free(val);
    *ret = s;
    return 0;
}

static int expand_vector(struct upstream *u, char *const *v, const char *sep, char ***ret,
                         struct err *e)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    char **out = calloc(n + 1, sizeof(char *));
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int r = expand_pair(u, v[i], sep, &out[i], e);
        if (r < 0) {
            strv_free(out, true);
            return r;
        }
    }
    *ret = out;
    return 0;
}

/* A failure to start; the message for the user says which server. */
static void start_failed(struct upstream *u, int r, const char *what, struct err *e)
{
    bool permanent = r != -ENOMEM && is_permanent_start_error(r);
    char *m = xasprintf("server '%s': %s%s%s", name_of(u), what ? what : "", what ? ": " : "",
                        e && e->msg[0] ? e->msg : strerror(-r));
    connect_fail(u, r, m, permanent);
    free(m);
}

static void c_message(const char *msg, size_t len, void *userdata);
static void c_stderr(const char *line, size_t len, void *userdata);
static void c_stdio_close(int reason, void *userdata);
static void c_stdio_exit(int status, void *userdata);
static void c_http_close(int reason, void *userdata);
static void c_http_error(int error, uint64_t tag, void *userdata);

static const struct stdio_upstream_handler stdio_handler = {
    .on_message = c_message,
    .on_stderr = c_stderr,
    .on_close = c_stdio_close,
    .on_exit = c_stdio_exit,
};

static const struct http_upstream_handler http_handler = {
    .on_message = c_message,
    .on_close = c_http_close,
    .on_error = c_http_error,
};

static void stdio_begin(struct upstream *u)
{
    struct err e = ERR_INIT;
    char **env = NULL;
    const char **argv = NULL;
    struct conn *cn = NULL;
    size_t n = 0;
    int r;

    r = expand_vector(u, u->srv->env, "=", &env, &e);
    if (r < 0) {
        err_prefix(&e, "env");
        start_failed(u, r, NULL, &e);
        return;
    }
    while (u->srv->args[n])
        n++;
    argv = calloc(n + 2, sizeof(char *));
    cn = conn_new(u);
    if (!argv || !cn) {
        r = -ENOMEM;
        goto fail;
    }
    argv[0] = u->srv->command;
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = u->srv->args[i];
    struct stdio_upstream_spec spec = {
        .argv = argv,
        .env = (const char *const *)env,
        .cwd = u->srv->cwd,
        .max_frame = MAX_MESSAGE,
    };
    r = stdio_upstream_new(u->loop, &spec, &stdio_handler, cn, &cn->stdio, &e);
    if (r < 0)
        goto fail;
    free(argv);
    strv_free(env, true);
    log_debug(u->log, "server '%s': started '%s' (pid %d)", name_of(u), u->srv->command,
              (int)stdio_upstream_pid(cn->stdio));
    u->conn = cn;
    r = send_initialize(u);
    if (r < 0)
        start_failed(u, r, "cannot send initialize", NULL);
    return;
fail:
    free(argv);
    strv_free(env, true);
    free(cn);
    start_failed(u, r, NULL, &e);
}

/* Starts the HTTP transport with these headers ("Name: value", secrets, borrowed). */
static void http_start(struct upstream *u, const char *const *headers)
{
    struct err e = ERR_INIT;
    char *url = NULL;
    struct conn *cn = NULL;
    int r;

    r = mcp_expand(u->srv->url, u->lookup, u->lookup_userdata, &url, &e);
    if (r < 0) {
        err_prefix(&e, "url");
        start_failed(u, r, NULL, &e);
        return;
    }
    cn = conn_new(u);
    if (!cn) {
        secure_free(url);
        start_failed(u, -ENOMEM, NULL, NULL);
        return;
    }
    int64_t t = u->request_timeout_ms > u->connect_timeout_ms ? u->request_timeout_ms
                                                              : u->connect_timeout_ms;
    struct http_upstream_spec spec = {
        .url = url,
        .headers = headers,
        .timeout_ms = t * UPSTREAM_MAX_TOTAL_FACTOR,
        .max_message = MAX_MESSAGE,
        .legacy_sse = u->srv->transport == MCP_TRANSPORT_SSE,
    };
    r = http_upstream_new(u->loop, &spec, &http_handler, cn, &cn->http, &e);
    secure_free(url);
    if (r < 0) {
        free(cn);
        start_failed(u, r, NULL, &e);
        return;
    }
    u->conn = cn;
    r = send_initialize(u);
    if (r < 0)
        start_failed(u, r, "cannot send initialize", NULL);
}

static void headers_done(void *done_ud, int error, const char *const *headers, const char *message)
{
    struct hdr_req *req = done_ud;
    struct upstream *u = req->u;
    free(req);
    if (!u)
        return;
    u->hdr = NULL;
    enter(u);
    if (error < 0) {
        char *m =
            xasprintf("server '%s': %s", name_of(u), message ? message : transport_err_text(error));
        connect_fail(u, error, m, error == -ENOENT || error == -EINVAL);
        free(m);
    } else {
        http_start(u, headers);
    }
    leave(u);
}

/* Gets the headers (the hook, or the entry's expanded) and starts the HTTP transport. */
static void http_begin(struct upstream *u)
{
    bool force = u->force_headers;
    u->force_headers = false;
    if (force)
        u->forced_in_connect = true;
    if (u->headers_fn) {
        struct hdr_req *req = calloc(1, sizeof(*req));
        if (!req) {
            start_failed(u, -ENOMEM, NULL, NULL);
            return;
        }
        req->u = u;
        u->hdr = req;
        int r = u->headers_fn(u->headers_userdata, u->srv, force, headers_done, req);
        if (r < 0) {
            if (u->hdr == req) {
                u->hdr = NULL;
                free(req);
            }
            start_failed(u, r, "cannot get the request headers", NULL);
        }
        return;
    }
    struct err e = ERR_INIT;
    char **headers = NULL;
    int r = expand_vector(u, u->srv->headers, ": ", &headers, &e);
    if (r < 0) {
        err_prefix(&e, "headers");
        start_failed(u, r, NULL, &e);
        return;
    }
    http_start(u, (const char *const *)headers);
    strv_free(headers, true);
}

static void connect_timer_fired(struct loop_timer *t, void *userdata)
{
    struct upstream *u = userdata;
    char d[32];
    (void)t;
    enter(u);
    fmt_ms(d, sizeof(d), u->connect_timeout_ms);
    if (u->reiniting) {
        char *m = xasprintf("server '%s': re-initializing the expired session timed out after %s",
                            name_of(u), d);
        conn_lost(u, -ETIMEDOUT, m);
        free(m);
    } else if (u->state == UPSTREAM_CONNECTING) {
        char *m = xasprintf("server '%s': connect timed out after %s", name_of(u), d);
        connect_fail(u, -ETIMEDOUT, m, false);
        free(m);
    }
    leave(u);
}

/* Starts a connect attempt (from the loop). */
static void connect_start(struct upstream *u)
{
    disarm(&u->backoff_timer);
    u->start_pending = false;
    if (!set_state(u, UPSTREAM_CONNECTING, 0, NULL) || u->state != UPSTREAM_CONNECTING ||
        u->start_pending || u->conn)
        return;
    u->forced_in_connect = false;
    int r = arm(u, &u->connect_timer, u->connect_timeout_ms, connect_timer_fired);
    if (r < 0) {
        start_failed(u, r, NULL, NULL);
        return;
    }
    log_debug(u->log, "server '%s': connecting", name_of(u));
    if (u->srv->transport == MCP_TRANSPORT_STDIO)
        stdio_begin(u);
    else
        http_begin(u);
}

static void backoff_fired(struct loop_timer *t, void *userdata)
{
    struct upstream *u = userdata;
    (void)t;
    enter(u);
    if (u->state == UPSTREAM_BACKOFF)
        connect_start(u);
    leave(u);
}

static bool version_known(const char *v)
{
    for (size_t i = 0; UPSTREAM_PROTOCOL_VERSIONS[i]; i++)
        if (strcmp(v, UPSTREAM_PROTOCOL_VERSIONS[i]) == 0)
            return true;
    return false;
}

static void init_failed(struct upstream *u, int error, const char *message)
{
    if (u->reiniting)
        conn_lost(u, error, message);
    else
        connect_fail(u, error, message, false);
}

/* The answer to initialize, on connect or on re-initializing a lost HTTP session. */
static void init_answered(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m,
                          int error)
{
    struct conn *cn = u->conn;
    char *msg = NULL;
    (void)c;

    u->init_call = NULL;
    if (!m || !cn) {
        msg =
            xasprintf("server '%s': initialize failed: %s", name_of(u), transport_err_text(error));
        init_failed(u, error < 0 ? error : -EPROTO, msg);
        goto out;
    }
    if (m->error) {
        const char *em = json_object_get_string(json_object_object_get(m->error, "message"));
        /* bounded: the server's text goes to the log and to the user */
        msg = xasprintf("server '%s': initialize failed: %.200s", name_of(u),
                        em ? em : "(no message)");
        init_failed(u, -EPROTO, msg);
        goto out;
    }
    struct json_object *res = m->result, *v = NULL;
    const char *ver = NULL;
    if (json_object_is_type(res, json_type_object) &&
        json_object_object_get_ex(res, "protocolVersion", &v) &&
        json_object_is_type(v, json_type_string))
        ver = json_object_get_string(v);
    if (!ver) {
        msg =
            xasprintf("server '%s': the answer to initialize has no protocol version", name_of(u));
        init_failed(u, -EPROTO, msg);
        goto out;
    }
    if (!version_known(ver)) {
        msg = xasprintf("server '%s' speaks protocol version '%.64s', which the bridge does not "
                        "(it speaks 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05)",
                        name_of(u), ver);
        init_failed(u, -EPROTO, msg);
        goto out;
    }

    char *version = strdup(ver);
    const char *instr = NULL;
    if (json_object_object_get_ex(res, "instructions", &v) &&
        json_object_is_type(v, json_type_string))
        instr = json_object_get_string(v);
    char *instructions = instr ? strdup(instr) : NULL;
    if (!version || (instr && !instructions)) {
        free(version);
        free(instructions);
        msg = xasprintf("server '%s': out of memory", name_of(u));
        init_failed(u, -ENOMEM, msg);
        goto out;
    }
    free(u->version);
    u->version = version;
    free(u->instructions);
    u->instructions = instructions;
    json_object_put(u->caps);
    u->caps = NULL;
    if (json_object_object_get_ex(res, "capabilities", &v) &&
        json_object_is_type(v, json_type_object))
        u->caps = json_object_get(v);
    json_object_put(u->info);
    u->info = NULL;
    if (json_object_object_get_ex(res, "serverInfo", &v) &&
        json_object_is_type(v, json_type_object))
        u->info = json_object_get(v);

    if (cn->http && http_upstream_set_protocol_version(cn->http, version) < 0)
        log_debug(u->log, "server '%s': cannot send the protocol version", name_of(u));
    int r = send_notification(u, "notifications/initialized", NULL);
    if (r < 0) {
        msg = xasprintf("server '%s': cannot send notifications/initialized: %s", name_of(u),
                        transport_err_text(r));
        init_failed(u, r, msg);
        goto out;
    }
    if (cn->http) {
        r = http_upstream_open_stream(cn->http);
        if (r < 0 && r != -EALREADY)
            log_debug(u->log, "server '%s': cannot open the event stream: %s", name_of(u),
                      transport_err_text(r));
    }
    disarm(&u->connect_timer);
    u->session++;
    u->stream_retry_ms = STREAM_RETRY_MIN_MS;
    if (u->reiniting) {
        u->reiniting = false;
        log_info(u->log, "server '%s': session re-established", name_of(u));
        flush_waiting(u);
        goto out;
    }
    u->gen = cn->gen;
    u->ready_at = loop_now(u->loop);
    log_info(u->log, "server '%s': connected (protocol %s)", name_of(u), version);
    flush_waiting(u);
    (void)set_state(u, UPSTREAM_READY, 0, NULL);
out:
    free(msg);
}

/* Re-initializes an HTTP session the server forgot (404), keeping READY. */
static void start_reinit(struct upstream *u)
{
    u->reiniting = true;
    log_info(u->log, "server '%s': the session expired (HTTP 404): re-initializing", name_of(u));
    int r = arm(u, &u->connect_timer, u->connect_timeout_ms, connect_timer_fired);
    if (r >= 0)
        r = send_initialize(u);
    if (r < 0) {
        char *m = xasprintf("server '%s': the session expired and cannot be re-established: %s",
                            name_of(u), transport_err_text(r));
        conn_lost(u, r, m);
        free(m);
    }
}

static void flush_waiting(struct upstream *u)
{
    struct upstream_call *c;
    while (u->conn && !u->reiniting && (c = u->waiting.head)) {
        clist_remove(&u->waiting, c);
        c->where = CALL_NEW;
        send_or_fail(u, c);
    }
}

/* ---- messages from the server ------------------------------------------------------------- */

static struct upstream_call *call_by_id(struct upstream *u, struct json_object *id)
{
    if (!id || !json_object_is_type(id, json_type_int))
        return NULL;
    return map_find(&u->map, json_object_get_int64(id));
}

/* Hands a response to its call. From the loop. */
static void deliver(struct upstream *u, struct conn *cn, struct upstream_call *c,
                    struct jrpc_msg *m)
{
    call_unlink(u, c);
    loop_timer_cancel(c->timer);
    c->timer = NULL;
    if (cn->http)
        http_upstream_answered(cn->http, (uint64_t)c->id);
    if (c->ifn) {
        c->ifn(u, c, m, 0);
        call_free(c);
        return;
    }
    log_debug(u->log, "server '%s': <- #%" PRId64 " %s (%" PRId64 " ms)", name_of(u), c->id,
              m->error ? "error" : "result", loop_now(u->loop) - c->started);
    c->in_callback = true;
    c->fn(c, m->root, 0, NULL, c->userdata);
    call_free(c);
}

static void on_progress(struct upstream *u, struct jrpc_msg *m)
{
    struct json_object *tok = NULL;
    if (!m->params || !json_object_object_get_ex(m->params, "progressToken", &tok))
        return;
    struct upstream_call *c = call_by_id(u, tok);
    if (!c || c->ifn || !c->token) {
        log_debug(u->log, "server '%s': progress for no request of ours", name_of(u));
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
        int r = empty ? send_response(u, jrpc_new_result(m->id, empty)) : -ENOMEM;
        json_object_put(empty);
        log_debug(u->log, "server '%s': <- ping%s", name_of(u), r < 0 ? " (answer failed)" : "");
        return;
    }
    log_debug(u->log, "server '%s': <- request %s", name_of(u), m->method);
    if (u->h.on_request) {
        u->h.on_request(u, cn->gen, m->root, u->userdata);
        return;
    }
    int r =
        send_response(u, jrpc_new_error(m->id, JRPC_METHOD_NOT_FOUND, "Method not found", NULL));
    (void)r;
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
        log_warn(u->log, "server '%s': skipped a message that is not JSON-RPC", name_of(u));
        return;
    }
    char *msg = xasprintf("server '%s' answered '%s' with a message that is not JSON-RPC",
                          name_of(u), c->method);
    call_unlink(u, c);
    if (cn->http)
        http_upstream_answered(cn->http, (uint64_t)c->id);
    if (c->ifn) {
        call_free(c);
        init_failed(u, -EPROTO, msg);
    } else {
        (void)call_fail_now(u, c, -EPROTO, msg);
    }
    free(msg);
}

static void handle_message(struct upstream *u, struct conn *cn, const char *text, size_t len)
{
    struct jrpc_msg m;
    struct err e = ERR_INIT;
    int r = jrpc_parse(text, len, MAX_MESSAGE, &m, &e);
    if (r < 0) {
        log_warn(u->log, "server '%s': skipped a message that is not JSON: %s", name_of(u),
                 err_msg(&e));
        return;
    }
    struct upstream_call *c;
    switch (m.kind) {
    case JRPC_RESPONSE:
        c = call_by_id(u, m.id);
        if (c)
            deliver(u, cn, c, &m);
        else
            log_debug(u->log, "server '%s': an answer to no request of ours", name_of(u));
        break;
    case JRPC_REQUEST:
        on_request(u, cn, &m);
        break;
    case JRPC_NOTIFICATION:
        if (strcmp(m.method, "notifications/progress") == 0) {
            on_progress(u, &m);
        } else {
            log_debug(u->log, "server '%s': <- %s", name_of(u), m.method);
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

/* ---- transport callbacks -------------------------------------------------------------------- */

static void c_message(const char *msg, size_t len, void *userdata)
{
    struct conn *cn = userdata;
    struct upstream *u = cn->u;
    if (cn->retiring)
        return;
    enter(u);
    handle_message(u, cn, msg, len);
    leave(u);
}

static void c_stderr(const char *line, size_t len, void *userdata)
{
    struct conn *cn = userdata;
    struct upstream *u = cn->u;
    enter(u);
    if (u->h.on_stderr)
        u->h.on_stderr(u, line, len, u->userdata);
    else
        log_debug(u->log, "server '%s': %.*s", name_of(u), (int)len, line);
    leave(u);
}

static void c_stdio_close(int reason, void *userdata)
{
    struct conn *cn = userdata;
    struct upstream *u = cn->u;
    if (cn->retiring)
        return;
    enter(u);
    const char *why = reason == 0        ? "the server exited or closed its output"
                      : reason == -E2BIG ? "the server sent a message over the size bound"
                      : reason == -EPIPE ? "the server closed its input"
                                         : strerror(-reason);
    char *m = xasprintf("server '%s': %s", name_of(u), why);
    if (u->state == UPSTREAM_READY)
        conn_lost(u, reason < 0 ? reason : -ECONNRESET, m);
    else
        connect_fail(u, reason < 0 ? reason : -ECONNRESET, m, false);
    free(m);
    leave(u);
}

static void c_stdio_exit(int status, void *userdata)
{
    struct conn *cn = userdata;
    struct upstream *u = cn->u;
    enter(u);
    if (status >= 0 && WIFEXITED(status))
        log_debug(u->log, "server '%s': exited with status %d", name_of(u), WEXITSTATUS(status));
    else if (status >= 0 && WIFSIGNALED(status))
        log_debug(u->log, "server '%s': killed by signal %d", name_of(u), WTERMSIG(status));
    if (!cn->retiring) {
        /* on_close comes first; should it not have, the connection is over all the same */
        c_stdio_close(0, cn);
        if (u->freed)
            goto out;
    }
    retiring_unlink(u, cn);
    conn_free(cn);
    maybe_closed(u);
out:
    leave(u);
}

static void stream_fired(struct loop_timer *t, void *userdata)
{
    struct upstream *u = userdata;
    (void)t;
    if (u->conn && u->conn->http && u->state == UPSTREAM_READY) {
        int r = http_upstream_open_stream(u->conn->http);
        if (r < 0 && r != -EALREADY)
            log_debug(u->log, "server '%s': cannot reopen the event stream: %s", name_of(u),
                      transport_err_text(r));
    }
}

static void c_http_close(int reason, void *userdata)
{
    struct conn *cn = userdata;
    struct upstream *u = cn->u;
    if (cn->retiring)
        return;
    enter(u);
    if (http_upstream_is_legacy(cn->http)) {
        /* the 2024-11-05 transport: the event stream is the connection */
        char *m = xasprintf("server '%s': the event stream ended%s%s", name_of(u),
                            reason < 0 ? ": " : "", reason < 0 ? transport_err_text(reason) : "");
        if (u->state == UPSTREAM_READY)
            conn_lost(u, reason < 0 ? reason : -ECONNRESET, m);
        else
            connect_fail(u, reason < 0 ? reason : -ECONNRESET, m, false);
        free(m);
    } else if (reason < 0 && u->state == UPSTREAM_READY && reason != -ESTALE) {
        /* a GET stream that broke: reopened later, slower each time (after a 404 the
         * re-initialization reopens it) */
        log_debug(u->log, "server '%s': the event stream failed: %s", name_of(u),
                  transport_err_text(reason));
        if (arm(u, &u->stream_timer, u->stream_retry_ms, stream_fired) >= 0)
            u->stream_retry_ms = u->stream_retry_ms * 2 > UPSTREAM_BACKOFF_MAX_MS
                                     ? UPSTREAM_BACKOFF_MAX_MS
                                     : u->stream_retry_ms * 2;
    } else {
        log_debug(u->log, "server '%s': no event stream", name_of(u));
    }
    leave(u);
}

/* A request of ours whose HTTP session was gone: sent again once, on the new session. */
static void call_stale(struct upstream *u, struct upstream_call *c)
{
    call_unlink(u, c);
    if (c->retried) {
        char *m = xasprintf("server '%s' lost the session again while '%s' was sent", name_of(u),
                            c->method);
        (void)call_fail_now(u, c, -ECONNRESET, m);
        free(m);
        return;
    }
    c->retried = true;
    if (c->session != u->session && !u->reiniting) {
        send_or_fail(u, c); /* already re-established since it was sent */
        return;
    }
    c->where = CALL_WAITING;
    clist_push(&u->waiting, c, true);
    if (!u->reiniting)
        start_reinit(u);
}

static void http_error(struct upstream *u, struct conn *cn, int error, uint64_t tag)
{
    struct upstream_call *c = NULL;
    char *msg = NULL;

    if (!tag) { /* the GET stream, or a notification or response */
        log_debug(u->log, "server '%s': the event stream or a message without an id failed: %s",
                  name_of(u), transport_err_text(error));
        /* the GET stream's 404: the session is gone; re-established now, not at the next
         * call, as what the server sends by itself would be lost meanwhile */
        if (error == -ESTALE && cn == u->conn && u->state == UPSTREAM_READY && !u->reiniting)
            start_reinit(u);
        return;
    }
    c = map_find(&u->map, (int64_t)tag); /* the tag is the call's id */
    if (!c) {
        log_debug(u->log, "server '%s': sending #%" PRIu64 " failed: %s", name_of(u), tag,
                  transport_err_text(error));
        goto out;
    }
    if (c == u->init_call) {
        if ((error == -EACCES || error == -EPERM) && u->headers_fn && !u->forced_in_connect &&
            !u->reiniting) {
            /* once per attempt: ask the hook again, with force, and start over */
            log_debug(u->log, "server '%s': %s: asking for fresh credentials", name_of(u),
                      transport_err_text(error));
            call_unlink(u, c);
            call_free(c);
            struct conn *old = u->conn;
            u->conn = NULL;
            retire(u, old);
            u->force_headers = true;
            http_begin(u);
            goto out;
        }
        call_unlink(u, c);
        call_free(c);
        msg =
            xasprintf("server '%s': initialize failed: %s", name_of(u), transport_err_text(error));
        init_failed(u, connect_err(error), msg);
        goto out;
    }
    if (c == u->ping_call) {
        call_unlink(u, c);
        call_free(c);
        if (error == -ESTALE) {
            if (!u->reiniting && u->state == UPSTREAM_READY)
                start_reinit(u);
        } else {
            msg = xasprintf("server '%s': the ping after a timeout failed: %s", name_of(u),
                            transport_err_text(error));
            conn_lost(u, call_err(error), msg);
        }
        goto out;
    }
    if (error == -ESTALE) {
        call_stale(u, c);
        goto out;
    }
    call_unlink(u, c);
    msg =
        xasprintf("server '%s': '%s' failed: %s", name_of(u), c->method, transport_err_text(error));
    if (!call_fail_now(u, c, call_err(error), msg) || u->conn != cn)
        goto out;
    if (error == -ECONNREFUSED || error == -EHOSTUNREACH) {
        conn_lost(u, -ECONNRESET, msg);
    } else if ((error == -EACCES || error == -EPERM) && u->headers_fn) {
        u->force_headers = true;
        reconnect_now(u);
    }
out:
    free(msg);
}

static void c_http_error(int error, uint64_t tag, void *userdata)
{
    struct conn *cn = userdata;
    struct upstream *u = cn->u;
    if (cn->retiring)
        return;
    enter(u);
    http_error(u, cn, error, tag);
    leave(u);
}

/* ---- timers ----------------------------------------------------------------------------- */

static void ping_answered(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m,
                          int error)
{
    (void)c;
    u->ping_call = NULL;
    if (m) {
        log_debug(u->log, "server '%s': answers pings: not hung", name_of(u));
        return;
    }
    char d[32];
    fmt_ms(d, sizeof(d), UPSTREAM_PING_TIMEOUT_MS);
    char *msg = xasprintf("server '%s' did not answer a ping within %s after a request timed "
                          "out: restarting it",
                          name_of(u), d);
    log_warn(u->log, "%s", msg);
    if (u->no_reconnect)
        conn_lost(u, error, msg);
    else
        reconnect_now(u);
    free(msg);
}

/* After a request timed out: is the server still there? */
static void check_alive(struct upstream *u)
{
    struct upstream_call *c = NULL;
    if (u->ping_call || !u->conn || u->state != UPSTREAM_READY || u->reiniting)
        return;
    if (call_new(u, "ping", NULL, UPSTREAM_PING_TIMEOUT_MS, &c) < 0)
        return;
    c->ifn = ping_answered;
    if (send_call(u, c) < 0) {
        call_free(c);
        return;
    }
    u->ping_call = c;
}

static void call_timer_fired(struct loop_timer *t, void *userdata)
{
    struct upstream_call *c = userdata;
    struct upstream *u = c->u;
    char d[32], *msg = NULL;
    (void)t;

    enter(u);
    if (c->where == CALL_WAITING) {
        call_unlink(u, c);
        fmt_ms(d, sizeof(d), c->timeout_ms);
        if (u->last_error && u->state != UPSTREAM_READY)
            msg = xasprintf("server '%s' could not be connected within %s: %s", name_of(u), d,
                            u->last_error);
        else
            msg = xasprintf("server '%s' could not be connected within %s", name_of(u), d);
        (void)call_fail_now(u, c, -ENOTCONN, msg);
        goto out;
    }
    if (c->where != CALL_SENT)
        goto out;
    if (c->ifn) {
        call_unlink(u, c);
        (void)call_fail_now(u, c, -ETIMEDOUT, NULL);
        goto out;
    }
    call_unlink(u, c);
    if (u->conn && u->conn->http)
        http_upstream_answered(u->conn->http, (uint64_t)c->id);
    if (!u->reiniting)
        send_cancelled(u, c->id, "timed out");
    if (c->progressed && c->deadline >= c->hard_deadline) {
        fmt_ms(d, sizeof(d), c->hard_deadline - c->started);
        msg = xasprintf("server '%s' did not finish '%s' within %s (the most progress "
                        "notifications can extend its timeout to)",
                        name_of(u), c->method, d);
    } else {
        fmt_ms(d, sizeof(d), c->timeout_ms);
        msg = xasprintf("server '%s' did not answer '%s' within %s", name_of(u), c->method, d);
    }
    log_info(u->log, "%s", msg);
    if (!call_fail_now(u, c, -ETIMEDOUT, msg))
        goto out;
    check_alive(u);
out:
    free(msg);
    leave(u);
}

static void kick_fired(struct loop_timer *t, void *userdata)
{
    struct upstream *u = userdata;
    struct upstream_call *c;
    (void)t;

    enter(u);
    /* conns that had nothing to wait for */
    for (struct conn **p = &u->retiring; *p;) {
        struct conn *cn = *p;
        if (cn->dead) {
            *p = cn->next;
            conn_free(cn);
        } else {
            p = &cn->next;
        }
    }
    while ((c = u->failing.head)) {
        clist_remove(&u->failing, c);
        c->where = CALL_NEW;
        char *m = c->message;
        c->message = NULL;
        bool alive = call_fail_now(u, c, c->error, m);
        free(m);
        if (!alive)
            goto out;
    }
    if (u->close_pending) {
        u->close_pending = false;
        if (!set_state(u, UPSTREAM_CLOSING, 0, NULL))
            goto out;
        maybe_closed(u);
        goto out;
    }
    if (u->start_pending && u->state == UPSTREAM_CONNECTING)
        connect_start(u);
    else
        maybe_closed(u);
out:
    leave(u);
}

/* ---- the public side ------------------------------------------------------------------ */

int upstream_new(const struct upstream_opts *opts, const struct upstream_handler *h, void *userdata,
                 struct upstream **ret, struct err *e)
{
    struct upstream *u = NULL;
    int r;

    if (!opts || !opts->loop || !opts->log || !opts->server || !opts->server->name || !ret)
        return err_set(e, -EINVAL, "upstream: missing options");
    const struct mcp_server *s = opts->server;
    if (s->error)
        return err_set(e, -EINVAL, "%s", s->error);
    if (s->transport == MCP_TRANSPORT_STDIO ? !s->command : !s->url)
        return err_set(e, -EINVAL, "server '%s': no %s to connect to", s->name,
                       s->transport == MCP_TRANSPORT_STDIO ? "command" : "url");
    const char *offer = opts->protocol_version ? opts->protocol_version : UPSTREAM_PROTOCOL_LATEST;
    if (!version_known(offer))
        return err_set(e, -EINVAL, "protocol version '%s' is not one the bridge speaks", offer);

    u = calloc(1, sizeof(*u));
    if (!u)
        return err_set(e, -ENOMEM, "out of memory");
    u->loop = opts->loop;
    u->log = opts->log;
    u->lookup = opts->lookup;
    u->lookup_userdata = opts->lookup_userdata;
    u->headers_fn = opts->headers_fn;
    u->headers_userdata = opts->headers_userdata;
    u->no_reconnect = opts->no_reconnect;
    u->connect_timeout_ms = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms
                                                         : UPSTREAM_CONNECT_TIMEOUT_DEFAULT_MS;
    u->request_timeout_ms = opts->request_timeout_ms > 0 ? opts->request_timeout_ms
                            : s->timeout_ms > 0          ? s->timeout_ms
                                                         : UPSTREAM_REQUEST_TIMEOUT_DEFAULT_MS;
    if (h)
        u->h = *h;
    u->userdata = userdata;
    u->state = UPSTREAM_IDLE;
    u->next_id = 1;
    u->backoff_ms = UPSTREAM_BACKOFF_INITIAL_MS;
    u->stream_retry_ms = STREAM_RETRY_MIN_MS;
    u->rng = (uint64_t)now_mono_ms() ^ (uint64_t)(uintptr_t)u ^ 0x9e3779b97f4a7c15ull;
    if (!u->rng)
        u->rng = 1;

    r = mcp_server_dup(s, &u->srv);
    if (r < 0)
        goto oom;
    u->offer_version = strdup(offer);
    if (!u->offer_version)
        goto oom;
    u->client_caps = opts->client_capabilities ? json_object_get(opts->client_capabilities)
                                               : json_object_new_object();
    if (opts->client_info) {
        u->client_info = json_object_get(opts->client_info);
    } else {
        u->client_info = json_object_new_object();
        if (u->client_info &&
            (json_object_object_add(u->client_info, "name", json_object_new_string("mcp-bridge")) <
                 0 ||
             json_object_object_add(u->client_info, "version",
                                    json_object_new_string(PROJECT_VERSION_STR)) < 0))
            goto oom;
    }
    if (!u->client_caps || !u->client_info)
        goto oom;
    *ret = u;
    return 0;
oom:
    really_free(u);
    return err_set(e, -ENOMEM, "out of memory");
}

void upstream_connect(struct upstream *u)
{
    if (!u || u->freed)
        return;
    switch (u->state) {
    case UPSTREAM_FAILED:
        u->backoff_ms = UPSTREAM_BACKOFF_INITIAL_MS;
        /* fall through */
    case UPSTREAM_IDLE:
    case UPSTREAM_BACKOFF:
        disarm(&u->backoff_timer);
        u->state = UPSTREAM_CONNECTING;
        u->start_pending = true;
        kick(u);
        break;
    default:
        break;
    }
}

void upstream_reconnect(struct upstream *u)
{
    if (!u || u->freed)
        return;
    switch (u->state) {
    case UPSTREAM_IDLE:
    case UPSTREAM_FAILED:
        upstream_connect(u);
        break;
    case UPSTREAM_CONNECTING:
    case UPSTREAM_READY:
    case UPSTREAM_BACKOFF:
        reconnect_now(u);
        break;
    default:
        break;
    }
}

void upstream_close(struct upstream *u)
{
    if (!u || u->freed || u->state == UPSTREAM_CLOSING || u->state == UPSTREAM_CLOSED)
        return;
    char *m = xasprintf("server '%s' was closed", name_of(u));
    drop_conn(u);
    struct upstream_call *c;
    while ((c = map_pop(&u->map))) {
        c->where = CALL_NEW;
        call_fail_later(u, c, -ESHUTDOWN, m);
    }
    fail_waiting(u, -ESHUTDOWN, m);
    free(m);
    disarm(&u->backoff_timer);
    u->start_pending = false;
    u->state = UPSTREAM_CLOSING;
    u->close_pending = true;
    kick(u);
}

static void free_calls(struct upstream *u)
{
    struct upstream_call *c;
    while ((c = map_pop(&u->map))) {
        c->where = CALL_NEW;
        if (!c->in_callback)
            call_free(c);
    }
    while ((c = u->waiting.head)) {
        clist_remove(&u->waiting, c);
        call_free(c);
    }
    while ((c = u->failing.head)) {
        clist_remove(&u->failing, c);
        call_free(c);
    }
    u->init_call = u->ping_call = NULL;
}

static void list_free(struct upstream_list *l);

static void really_free(struct upstream *u)
{
    free(u->map.b);
    mcp_server_free(u->srv);
    json_object_put(u->client_caps);
    json_object_put(u->client_info);
    free(u->offer_version);
    free(u->last_error);
    json_object_put(u->caps);
    json_object_put(u->info);
    free(u->instructions);
    free(u->version);
    free(u);
}

void upstream_free(struct upstream *u)
{
    if (!u || u->freed)
        return;
    u->freed = true;
    if (u->hdr) {
        u->hdr->u = NULL;
        u->hdr = NULL;
    }
    conn_free(u->conn);
    u->conn = NULL;
    while (u->retiring) {
        struct conn *cn = u->retiring;
        u->retiring = cn->next;
        conn_free(cn);
    }
    while (u->lists) {
        struct upstream_list *l = u->lists;
        u->lists = l->next;
        l->call = NULL; /* freed with the calls below */
        list_free(l);
    }
    free_calls(u);
    disarm(&u->kick);
    disarm(&u->connect_timer);
    disarm(&u->backoff_timer);
    disarm(&u->stream_timer);
    if (!u->busy)
        really_free(u);
}

enum upstream_state upstream_state(const struct upstream *u)
{
    return u->state;
}

const char *upstream_state_name(enum upstream_state s)
{
    switch (s) {
    case UPSTREAM_IDLE:
        return "idle";
    case UPSTREAM_CONNECTING:
        return "connecting";
    case UPSTREAM_READY:
        return "ready";
    case UPSTREAM_BACKOFF:
        return "backoff";
    case UPSTREAM_FAILED:
        return "failed";
    case UPSTREAM_CLOSING:
        return "closing";
    case UPSTREAM_CLOSED:
        return "closed";
    }
    return "unknown";
}

const struct mcp_server *upstream_server(const struct upstream *u)
{
    return u->srv;
}

const char *upstream_name(const struct upstream *u)
{
    return u->srv->name;
}

const char *upstream_last_error(const struct upstream *u)
{
    return u->last_error;
}

struct json_object *upstream_server_capabilities(const struct upstream *u)
{
    return u->caps;
}

struct json_object *upstream_server_info(const struct upstream *u)
{
    return u->info;
}

const char *upstream_instructions(const struct upstream *u)
{
    return u->instructions;
}

const char *upstream_protocol_version(const struct upstream *u)
{
    return u->version;
}

bool upstream_has_capability(const struct upstream *u, const char *name)
{
    return u->caps && name && json_object_object_get_ex(u->caps, name, NULL);
}

uint64_t upstream_generation(const struct upstream *u)
{
    return u->gen;
}

int upstream_call(struct upstream *u, const char *method, struct json_object *params,
                  int64_t timeout_ms, upstream_response_fn fn, upstream_progress_fn progress,
                  void *userdata, struct upstream_call **ret)
{
    struct upstream_call *c = NULL;
    if (!u || u->freed || !method || !fn || !ret)
        return -EINVAL;
    if (timeout_ms <= 0)
        timeout_ms = u->request_timeout_ms;
    int r = call_new(u, method, params, timeout_ms, &c);
    if (r < 0)
        return r;
    c->fn = fn;
    c->progress = progress;
    c->userdata = userdata;
    struct json_object *tok = params ? jrpc_progress_token(params) : NULL;
    if (tok)
        c->token = json_object_get(tok);

    char *m = NULL;
    if (u->ncalls > MAX_CALLS) {
        m = xasprintf("server '%s': too many requests at once (%d): try again later", name_of(u),
                      MAX_CALLS);
        call_fail_later(u, c, -ENOBUFS, m);
    } else {
        switch (u->state) {
        case UPSTREAM_READY:
            if (!u->reiniting) {
                send_or_fail(u, c);
                break;
            }
            /* waits for the session */
            __attribute__((fallthrough));
        case UPSTREAM_CONNECTING:
            c->where = CALL_WAITING;
            clist_push(&u->waiting, c, false);
            break;
        case UPSTREAM_IDLE:
        case UPSTREAM_BACKOFF:
            c->where = CALL_WAITING;
            clist_push(&u->waiting, c, false);
            upstream_connect(u);
            break;
        case UPSTREAM_FAILED:
            m = xasprintf("%s", u->last_error ? u->last_error : "server cannot be used");
            call_fail_later(u, c, -ESHUTDOWN, m);
            break;
        case UPSTREAM_CLOSING:
        case UPSTREAM_CLOSED:
            m = xasprintf("server '%s' was closed", name_of(u));
            call_fail_later(u, c, -ESHUTDOWN, m);
            break;
        }
    }
    free(m);
    *ret = c;
    return 0;
}

void upstream_call_cancel(struct upstream_call *c, const char *reason)
{
    if (!c || c->in_callback)
        return;
    struct upstream *u = c->u;
    bool sent = c->where == CALL_SENT;
    call_unlink(u, c);
    if (sent && u->conn) {
        if (u->conn->http)
            http_upstream_answered(u->conn->http, (uint64_t)c->id);
        if (!u->reiniting)
            send_cancelled(u, c->id, reason);
    }
    call_free(c);
}

int upstream_notify(struct upstream *u, const char *method, struct json_object *params)
{
    if (!u || !method)
        return -EINVAL;
    if (u->freed || u->state != UPSTREAM_READY || !u->conn || u->reiniting)
        return 0;
    return send_notification(u, method, params);
}

int upstream_respond(struct upstream *u, uint64_t gen, struct json_object *id,
                     struct json_object *result, struct json_object *error)
{
    if (!u || !id || (!result) == (!error))
        return -EINVAL;
    if (u->freed || !u->conn || u->conn->gen != gen)
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

/* ---- lists through every page ------------------------------------------------------------ */

static void list_free(struct upstream_list *l)
{
    if (!l)
        return;
    upstream_call_cancel(l->call, NULL);
    json_object_put(l->items);
    free(l->cursor);
    free(l->method);
    free(l->key);
    free(l);
}

static void list_unlink(struct upstream_list *l)
{
    struct upstream *u = l->u;
    if (l->prev)
        l->prev->next = l->next;
    else if (u->lists == l)
        u->lists = l->next;
    if (l->next)
        l->next->prev = l->prev;
    l->prev = l->next = NULL;
}

/* Reports and frees the listing. From the loop. */
static void list_finish(struct upstream_list *l, int error, const char *message)
{
    struct upstream *u = l->u;
    struct json_object *items = error < 0 ? NULL : l->items;
    if (error >= 0)
        l->items = NULL;
    list_unlink(l);
    l->call = NULL;
    l->in_callback = true;
    l->fn(u, items, error, message, l->userdata);
    list_free(l);
}

static void list_page_answered(struct upstream_call *c, struct json_object *resp, int error,
                               const char *message, void *userdata);

static int list_request(struct upstream_list *l)
{
    struct json_object *p = NULL;
    if (l->cursor) {
        p = json_object_new_object();
        if (!p || json_object_object_add(p, "cursor", json_object_new_string(l->cursor)) < 0) {
            json_object_put(p);
            return -ENOMEM;
        }
    }
    int r = upstream_call(l->u, l->method, p, 0, list_page_answered, NULL, l, &l->call);
    json_object_put(p);
    return r;
}

static void list_page_answered(struct upstream_call *c, struct json_object *resp, int error,
                               const char *message, void *userdata)
{
    struct upstream_list *l = userdata;
    struct upstream *u = l->u;
    struct json_object *v = NULL;
    char *m = NULL;
    (void)c;

    l->call = NULL;
    if (error < 0) {
        list_finish(l, error, message);
        return;
    }
    if (json_object_object_get_ex(resp, "error", &v)) {
        int64_t code = 0;
        struct json_object *cv = NULL, *mv = NULL;
        if (json_object_object_get_ex(v, "code", &cv))
            code = json_object_get_int64(cv);
        (void)json_object_object_get_ex(v, "message", &mv);
        const char *em = mv ? json_object_get_string(mv) : NULL;
        m = xasprintf("server '%s': %s failed: %.200s", name_of(u), l->method,
                      em && *em ? em : "(no message)");
        list_finish(l, code == JRPC_METHOD_NOT_FOUND ? -ENOSYS : -EPROTO, m);
        free(m);
        return;
    }
    struct json_object *res = NULL, *arr = NULL;
    if (!json_object_object_get_ex(resp, "result", &res) ||
        !json_object_object_get_ex(res, l->key, &arr) ||
        !json_object_is_type(arr, json_type_array)) {
        m = xasprintf("server '%s': the answer to %s has no '%s' list", name_of(u), l->method,
                      l->key);
        list_finish(l, -EPROTO, m);
        free(m);
        return;
    }
    size_t n = json_object_array_length(arr);
    for (size_t i = 0; i < n; i++) {
        if (json_object_array_add(l->items, json_object_get(json_object_array_get_idx(arr, i))) <
            0) {
            list_finish(l, -ENOMEM, "out of memory");
            return;
        }
    }
    l->pages++;
    struct json_object *nc = NULL;
    const char *cursor = NULL;
    if (json_object_object_get_ex(res, "nextCursor", &nc) &&
        json_object_is_type(nc, json_type_string) && json_object_get_string_len(nc) > 0)
        cursor = json_object_get_string(nc);
    if (!cursor) {
        list_finish(l, 0, NULL);
        return;
    }
    if (l->cursor && strcmp(cursor, l->cursor) == 0) {
        /* the page it was asked for, again: it would go on to the page bound */
        log_warn(u->log, "server '%s': %s gave the same cursor again: the list ends here",
                 name_of(u), l->method);
        list_finish(l, 0, NULL);
        return;
    }
    if (l->pages >= UPSTREAM_LIST_MAX_PAGES) {
        log_warn(u->log, "server '%s': %s still had more after %d pages: the rest is left out",
                 name_of(u), l->method, UPSTREAM_LIST_MAX_PAGES);
        list_finish(l, 0, NULL);
        return;
    }
    char *cur = strdup(cursor);
    if (!cur) {
        list_finish(l, -ENOMEM, "out of memory");
        return;
    }
    free(l->cursor);
    l->cursor = cur;
    if (list_request(l) < 0)
        list_finish(l, -ENOMEM, "out of memory");
}

int upstream_list(struct upstream *u, const char *method, const char *key, upstream_list_fn fn,
                  void *userdata, struct upstream_list **ret)
{
    if (!u || u->freed || !method || !key || !fn || !ret)
        return -EINVAL;
    struct upstream_list *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->u = u;
    l->fn = fn;
    l->userdata = userdata;
    l->method = strdup(method);
    l->key = strdup(key);
    l->items = json_object_new_array();
    if (!l->method || !l->key || !l->items || list_request(l) < 0) {
        list_free(l);
        return -ENOMEM;
    }
    l->next = u->lists;
    if (u->lists)
        u->lists->prev = l;
    u->lists = l;
    *ret = l;
    return 0;
}

void upstream_list_cancel(struct upstream_list *l)
{
    if (!l || l->in_callback)
        return;
    list_unlink(l);
    list_free(l);
}
