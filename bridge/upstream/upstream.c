/* upstream.c - one MCP server the bridge talks to, as a client: the state machine (IDLE,
 * CONNECTING, READY, BACKOFF, FAILED, LOGIN, CLOSING, CLOSED, and the transitions between them, here
 * only), the retiring connections, creating and freeing (upstream_int.h says how the
 * parts fit). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/hashmap.h"
#include "credkit/util.h"
#include "credkit/version.h"

#include "upstream/upstream_int.h"

const char *const UPSTREAM_PROTOCOL_VERSIONS[] = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL,
};

static void kick_fired(struct loop_timer *t, void *userdata);
static void backoff_fired(struct loop_timer *t, void *userdata);

/* ---- small helpers ------------------------------------------------------------------------- */

const char *up_name(const struct upstream *u)
{
    return u->srv->name;
}

bool up_freed(const struct upstream *u)
{
    return u->life == UP_FREED;
}

/* "60 s", "1.5 s", "250 ms" */
void up_fmt_ms(char *buf, size_t size, int64_t ms)
{
    if (ms >= 1000 && ms % 1000 == 0)
        snprintf(buf, size, "%" PRId64 " s", ms / 1000);
    else if (ms >= 1000)
        snprintf(buf, size, "%.1f s", (double)ms / 1000.0);
    else
        snprintf(buf, size, "%" PRId64 " ms", ms);
}

static char *up_vasprintf(const char *fmt, va_list ap) _printf_(1, 0);
static char *up_vasprintf(const char *fmt, va_list ap)
{
    char *s = NULL;
    return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

char *up_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = up_vasprintf(fmt, ap);
    va_end(ap);
    return s;
}

#define UP_WARNED_MAX 1024

void up_warn_once(struct upstream *u, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = up_vasprintf(fmt, ap);
    va_end(ap);
    if (!m) {
        log_warn(u->log, "server '%s': out of memory for a warning", up_name(u));
        return;
    }
    bool said = u->warned && hashmap_get(u->warned, m);
    if (!said) {
        if (!u->warned)
            u->warned = hashmap_new();
        if (u->warned && hashmap_size(u->warned) < UP_WARNED_MAX) {
            int r = hashmap_put(u->warned, m, u); /* no memory: said again next time */
            (void)r;
        }
    }
    log_msg(u->log, said ? LOG_DEBUG : LOG_WARN, "%s", m);
    free(m);
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

/* Text for a transport error, for messages: the current transport's words. */
const char *up_strerror(const struct upstream *u, int error)
{
    return transport_strerror(u->conn ? u->conn->t : NULL, error);
}

/* The structured error a call gets for a transport error. */
int up_call_err(int error)
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

/* ---- loop entries, the kick ------------------------------------------------------------------ */

void up_kick(struct upstream *u)
{
    if (up_freed(u))
        return;
    if (u->kick) {
        loop_timer_rearm(u->kick, 0);
        return;
    }
    if (loop_timer_add(u->loop, 0, kick_fired, u, &u->kick) < 0)
        log_error(u->log, "server '%s': out of memory", up_name(u));
}

/* Arms *t (created on first use) to fire in delay ms. */
int up_arm(struct upstream *u, struct loop_timer **t, int64_t delay, loop_timer_fn fn)
{
    if (*t) {
        loop_timer_rearm(*t, delay);
        return 0;
    }
    return loop_timer_add(u->loop, delay, fn, u, t);
}

void up_disarm(struct loop_timer **t)
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
bool up_set_state(struct upstream *u, enum upstream_state s, int error, const char *message)
{
    u->state = s;
    set_last_error(u, message);
    if (u->h.on_state)
        u->h.on_state(u, s, error, message, u->userdata);
    return !up_freed(u);
}

/* ---- connections ----------------------------------------------------------------------- */

/* Reports CLOSED once closing has nothing left to wait for. From the loop. */
static void maybe_closed(struct upstream *u)
{
    if (u->state == UPSTREAM_CLOSING && !u->close_pending && list_is_empty(&u->retiring))
        (void)up_set_state(u, UPSTREAM_CLOSED, 0, NULL);
}

/* The transport of a retiring conn is over. */
void up_conn_done(struct upstream *u, struct conn *cn)
{
    list_remove(&cn->node);
    up_conn_free(cn);
    maybe_closed(u);
}

/* Ends a conn that is no longer current: the transport is shut down (transport.h) and freed
 * when on_done says it is over, or from the kick when there is nothing to wait for. */
void up_retire(struct upstream *u, struct conn *cn)
{
    cn->state = CONN_RETIRING;
    list_add_head(&u->retiring, &cn->node);
    if (transport_shutdown(cn->t) >= 0)
        return;
    cn->state = CONN_DEAD; /* nothing to wait for: freed from the kick */
    up_kick(u);
}

/* Drops the current conn and everything of its session (internal calls silently). */
void up_drop_conn(struct upstream *u)
{
    struct upstream_call *c;
    up_skipped_flush(u);
    if ((c = u->init_call)) {
        up_call_unlink(u, c);
        up_call_free(c);
    }
    if ((c = u->ping_call)) {
        up_call_unlink(u, c);
        up_call_free(c);
    }
    if ((c = u->probe_call)) {
        /* a stdio server that exited on server/discover: the next start says initialize */
        up_call_unlink(u, c);
        up_call_free(c);
        if (u->srv->transport == MCP_TRANSPORT_STDIO)
            u->known_era = UPSTREAM_ERA_LEGACY;
    }
    up_listen_stop(u);
    up_disarm(&u->connect_timer);
    up_disarm(&u->expiry_timer);
    up_creds_cancel(u);
    u->sess = SESSION_OPEN;
    struct conn *cn = u->conn;
    u->conn = NULL;
    if (cn)
        up_retire(u, cn);
}

/* ---- state transitions (from the loop) ---------------------------------------------------- */

static void enter_failed(struct upstream *u, int error, const char *message)
{
    up_disarm(&u->backoff_timer);
    char *m = up_asprintf("%s", message ? message : "the server cannot be used");
    up_fail_waiting(u, -ENOTCONN, m);
    free(m);
    up_report_failure(u, error, message, NULL); /* a one-shot client's at debug: it says it */
    (void)up_set_state(u, UPSTREAM_FAILED, error, message);
}

/* A sign-in is needed: nothing is retried by itself; a later call asks again (upstream.h). */
static void enter_login(struct upstream *u, int error, const char *message)
{
    up_disarm(&u->backoff_timer);
    u->recheck_at = loop_now(u->loop) + UPSTREAM_RECHECK_MS;
    char *m = up_asprintf("%s", message ? message : "a sign-in is needed");
    up_fail_waiting(u, error, m);
    free(m);
    /* once per episode (until it is READY again): the calls that find it so say it too */
    if (!u->login_warned)
        log_warn(u->log, "%s", message ? message : "a sign-in is needed");
    else
        log_debug(u->log, "%s", message ? message : "a sign-in is needed");
    u->login_warned = true;
    (void)up_set_state(u, UPSTREAM_LOGIN, error, message);
}

static void enter_backoff(struct upstream *u, int error, const char *message)
{
    int64_t base = u->backoff_ms;
    int64_t delay = base + (int64_t)(rng_next(u) % (uint64_t)(base / 4 + 1));
    u->backoff_ms = base * 2 > UPSTREAM_BACKOFF_MAX_MS ? UPSTREAM_BACKOFF_MAX_MS : base * 2;
    if (up_arm(u, &u->backoff_timer, delay, backoff_fired) < 0) {
        enter_failed(u, -ENOMEM, message);
        return;
    }
    char d[32];
    up_fmt_ms(d, sizeof(d), delay);
    up_report_failure(u, error, message ? message : "server disconnected", d);
    (void)up_set_state(u, UPSTREAM_BACKOFF, error, message);
}

void up_connect_fail(struct upstream *u, int error, const char *message, bool permanent)
{
    up_drop_conn(u);
    u->recheck_at = 0;
    if (error == CRED_LOGIN_REQUIRED && !u->no_reconnect)
        enter_login(u, error, message);
    else if (permanent || u->no_reconnect)
        enter_failed(u, error, message);
    else
        enter_backoff(u, error, message);
}

/* A READY connection is gone. */
void up_conn_lost(struct upstream *u, int error, const char *message)
{
    up_drop_conn(u);
    up_fail_inflight(u, -ECONNRESET, message);
    if (error == CRED_LOGIN_REQUIRED && !u->no_reconnect) {
        enter_login(u, error, message);
        return;
    }
    if (u->no_reconnect) {
        enter_failed(u, error, message);
        return;
    }
    if (loop_now(u->loop) - u->ready_at >= UPSTREAM_BACKOFF_RESET_MS)
        u->backoff_ms = UPSTREAM_BACKOFF_INITIAL_MS;
    enter_backoff(u, error, message);
}

/* Drops the connection and connects again from the kick (failures reported first). */
void up_reconnect_now(struct upstream *u)
{
    up_drop_conn(u);
    char *m = up_asprintf("reconnecting");
    up_fail_inflight(u, -ECONNRESET, m);
    free(m);
    up_disarm(&u->backoff_timer);
    u->state = UPSTREAM_CONNECTING;
    u->start_pending = true;
    up_kick(u);
}

static void backoff_fired(struct loop_timer *t, void *userdata)
{
    struct upstream *u = userdata;
    (void)t;
    if (u->state == UPSTREAM_BACKOFF)
        up_connect_start(u);
}

static void kick_fired(struct loop_timer *t, void *userdata)
{
    struct upstream *u = userdata;
    struct upstream_call *c;
    struct list_node *i, *tmp;
    (void)t;

    /* conns that had nothing to wait for */
    list_for_each_safe (i, tmp, &u->retiring) {
        struct conn *cn = list_entry(i, struct conn, node);
        if (cn->state == CONN_DEAD) {
            list_remove(&cn->node);
            up_conn_free(cn);
        }
    }
    while ((c = up_call_pop(u, CALL_FAILING))) {
        char *m = c->message;
        c->message = NULL;
        bool alive = up_call_fail_now(u, c, c->error, m);
        free(m);
        if (!alive)
            return;
    }
    if (u->close_pending) {
        u->close_pending = false;
        if (!up_set_state(u, UPSTREAM_CLOSING, 0, NULL))
            return;
        maybe_closed(u);
        return;
    }
    if (u->start_pending && u->state == UPSTREAM_CONNECTING)
        up_connect_start(u);
    else
        maybe_closed(u);
}

/* ---- the public side ------------------------------------------------------------------ */

static bool version_known(const char *v)
{
    for (size_t i = 0; UPSTREAM_PROTOCOL_VERSIONS[i]; i++)
        if (strcmp(v, UPSTREAM_PROTOCOL_VERSIONS[i]) == 0)
            return true;
    return false;
}

bool up_version_known(const char *v)
{
    return version_known(v);
}

static void really_free(struct upstream *u)
{
    up_call_spares_free(u);
    buf_release(&u->wbuf);
    hashmap_free(u->map);
    cred_provider_free(u->provider);
    cred_release(&u->creds);
    mcp_server_free(u->srv);
    json_object_put(u->client_caps);
    json_object_put(u->client_info);
    free(u->offer_version);
    free(u->last_error);
    json_object_put(u->caps);
    json_object_put(u->info);
    free(u->instructions);
    free(u->version);
    free(u->log_level);
    json_object_put(u->tool_headers);
    hashmap_free(u->warned);
    json_object_put(u->listen_uris);
    free(u);
}

static void upstream_release(struct loop_release *node)
{
    really_free(list_entry(node, struct upstream, release));
}

static int client_info_default(struct json_object **ret)
{
    struct json_object *o = json_object_new_object();
    if (!o || json_object_object_add(o, "name", json_object_new_string("mcp-bridge")) < 0 ||
        json_object_object_add(o, "version", json_object_new_string(PROJECT_VERSION_STR)) < 0) {
        json_object_put(o);
        return -ENOMEM;
    }
    *ret = o;
    return 0;
}

/* The options copied into u (everything that can run out of memory). */
static int take_opts(struct upstream *u, const struct upstream_opts *opts, const char *offer)
{
    if (mcp_server_dup(opts->server, &u->srv) < 0)
        return -ENOMEM;
    u->offer_version = strdup(offer);
    u->map = hashmap_new();
    if (!u->offer_version || !u->map)
        return -ENOMEM;
    u->client_caps = opts->client_capabilities ? json_object_get(opts->client_capabilities)
                                               : json_object_new_object();
    if (!u->client_caps)
        return -ENOMEM;
    if (opts->client_info)
        u->client_info = json_object_get(opts->client_info);
    else if (client_info_default(&u->client_info) < 0)
        return -ENOMEM;
    if (opts->credentials) {
        u->provider = opts->credentials;
        return 0;
    }
    struct cred_entry_opts co = {
        .loop = opts->loop,
        .lookup = opts->lookup,
        .lookup_userdata = opts->lookup_userdata,
        .headers_fn = opts->headers_fn,
        .headers_userdata = opts->headers_userdata,
    };
    return cred_entry_new(&co, &u->provider);
}

int upstream_new(const struct upstream_opts *opts, const struct upstream_handler *h, void *userdata,
                 struct upstream **ret, struct err *e)
{
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

    struct upstream *u = calloc(1, sizeof(*u));
    if (!u)
        return err_set(e, -ENOMEM, "out of memory");
    u->loop = opts->loop;
    u->log = opts->log;
    u->trace = opts->trace;
    u->no_reconnect = opts->no_reconnect;
    u->transport_open = opts->transport_open ? opts->transport_open : transport_open;
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
    u->rng = (uint64_t)now_mono_ms() ^ (uint64_t)(uintptr_t)u ^ 0x9e3779b97f4a7c15ull;
    if (!u->rng)
        u->rng = 1;
    list_init(&u->retiring);
    list_init(&u->sent);
    list_init(&u->waiting);
    list_init(&u->parked);
    list_init(&u->failing);
    list_init(&u->spare_calls);
    buf_init(&u->wbuf, UP_MAX_MESSAGE);
    list_init(&u->lists);
    if (take_opts(u, opts, offer) < 0) {
        if (u->provider == opts->credentials)
            u->provider = NULL; /* the caller's still, on failure */
        really_free(u);
        return err_set(e, -ENOMEM, "out of memory");
    }
    *ret = u;
    return 0;
}

void upstream_connect(struct upstream *u)
{
    if (!u || up_freed(u))
        return;
    switch (u->state) {
    case UPSTREAM_FAILED:
    case UPSTREAM_LOGIN:
        u->backoff_ms = UPSTREAM_BACKOFF_INITIAL_MS;
        /* fall through */
    case UPSTREAM_IDLE:
    case UPSTREAM_BACKOFF:
        up_disarm(&u->backoff_timer);
        u->state = UPSTREAM_CONNECTING;
        u->start_pending = true;
        up_kick(u);
        break;
    default:
        break;
    }
}

void upstream_disconnect(struct upstream *u)
{
    if (!u || up_freed(u))
        return;
    switch (u->state) {
    case UPSTREAM_CONNECTING:
    case UPSTREAM_READY:
    case UPSTREAM_BACKOFF:
        break;
    default:
        return;
    }
    char *m = up_asprintf("server '%s' was disconnected", up_name(u));
    up_drop_conn(u);
    up_fail_inflight(u, -ECONNRESET, m);
    up_fail_waiting(u, -ENOTCONN, m);
    free(m);
    up_disarm(&u->backoff_timer);
    u->start_pending = false;
    u->backoff_ms = UPSTREAM_BACKOFF_INITIAL_MS;
    u->state = UPSTREAM_IDLE; /* the caller asked: no callback */
    up_kick(u);
}

void upstream_close(struct upstream *u)
{
    if (!u || up_freed(u) || u->state == UPSTREAM_CLOSING || u->state == UPSTREAM_CLOSED)
        return;
    char *m = up_asprintf("server '%s' was closed", up_name(u));
    up_drop_conn(u);
    struct upstream_call *c;
    while ((c = up_call_pop(u, CALL_SENT)) || (c = up_call_pop(u, CALL_PARKED)))
        up_call_fail_later(u, c, -ESHUTDOWN, m);
    up_fail_waiting(u, -ESHUTDOWN, m);
    free(m);
    up_disarm(&u->backoff_timer);
    u->start_pending = false;
    u->state = UPSTREAM_CLOSING;
    u->close_pending = true;
    up_kick(u);
}

static void free_calls(struct upstream *u)
{
    struct upstream_call *c;
    while ((c = up_call_pop(u, CALL_SENT))) {
        if (!c->in_callback)
            up_call_free(c);
    }
    while ((c = up_call_pop(u, CALL_WAITING)) || (c = up_call_pop(u, CALL_PARKED)) ||
           (c = up_call_pop(u, CALL_FAILING)))
        up_call_free(c);
    if (u->relist_call)
        up_call_free(u->relist_call);
    u->relist_call = NULL;
    u->init_call = u->ping_call = u->probe_call = u->listen_call = NULL;
}

void upstream_free(struct upstream *u)
{
    if (!u || up_freed(u))
        return;
    u->life = UP_FREED;
    up_skipped_flush(u);
    up_creds_cancel(u);
    up_conn_free(u->conn);
    u->conn = NULL;
    struct list_node *n;
    while ((n = list_first(&u->retiring))) {
        list_remove(n);
        up_conn_free(list_entry(n, struct conn, node));
    }
    up_lists_free(u);
    u->relist = NULL;
    free_calls(u);
    up_listen_free(u);
    up_disarm(&u->kick);
    up_disarm(&u->connect_timer);
    up_disarm(&u->backoff_timer);
    up_disarm(&u->expiry_timer);
    loop_release(u->loop, &u->release, upstream_release);
}

enum upstream_state upstream_state(const struct upstream *u)
{
    return u->state;
}

const struct mcp_server *upstream_server(const struct upstream *u)
{
    return u->srv;
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

enum upstream_era upstream_era(const struct upstream *u)
{
    return u->era;
}
