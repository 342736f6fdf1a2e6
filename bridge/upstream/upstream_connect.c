/* upstream_connect.c - connecting: the credentials asked for, the transport opened with them,
 * the initialize handshake; a session the server forgot re-initialized, a refused one given
 * fresh credentials (the calls parked meanwhile), and credentials refreshed ahead of their
 * expiry with the transport's set-headers op, within the same session. And what the user hears
 * of it: a server that keeps failing is reported once per reason, with its last stderr lines,
 * and once more when it works again. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "creds/cred_check.h"
#include "upstream/upstream_int.h"

#define UP_STDERR_LOG_BUF 4104 /* a stderr line as logged: STDIO_CHILD_STDERR_LINE, escaped */

static void up_cred_done(int error, const struct credentials *c, const char *message,
                         void *userdata);
static void connect_timer_fired(struct loop_timer *t, void *userdata);
static void init_answered(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m,
                          int error);
static void discover_answered(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m,
                              int error);

/* ---- credentials ------------------------------------------------------------------------ */

void up_creds_cancel(struct upstream *u)
{
    struct cred_request *q = u->cred_req;
    u->cred_req = NULL;
    cred_cancel(q);
}

static int up_cred_ask(struct upstream *u, enum cred_reason reason, enum cred_purpose purpose)
{
    up_creds_cancel(u);
    u->cred_purpose = purpose;
    log_debug(u->log, "server '%s': asking for credentials (%s)", up_name(u),
              cred_reason_name(reason));
    struct cred_query q = {
        .server = u->srv,
        .reason = reason,
        .challenge =
            (reason == CRED_REASON_UNAUTHORIZED || reason == CRED_REASON_FORBIDDEN) && u->conn
                ? transport_challenge(u->conn->t)
                : NULL,
    };
    int r = cred_ask(u->provider, &q, up_cred_done, u, &u->cred_req);
    if (r < 0)
        u->cred_req = NULL;
    return r;
}

static void expiry_fired(struct loop_timer *t, void *userdata)
{
    struct upstream *u = userdata;
    (void)t;
    if (!u->conn || u->cred_req)
        return; /* an answer is on its way already */
    int r = up_cred_ask(u, CRED_REASON_EXPIRING, CRED_REFRESH);
    if (r < 0)
        log_warn(u->log, "server '%s': cannot refresh the credentials: %s", up_name(u),
                 strerror(-r));
}

/* Arms the refresh ahead of the answer's expiry (an answer without one never expires). */
static void arm_expiry(struct upstream *u)
{
    /* a stdio server took its values at its start: the next start asks again (RECONNECT) */
    if (!u->creds.expires_at || u->srv->transport == MCP_TRANSPORT_STDIO) {
        up_disarm(&u->expiry_timer);
        return;
    }
    int64_t now = cred_now_ms();
    int64_t life = u->creds.expires_at - u->cred_got_at;
    int64_t at =
        u->creds.refresh_at ? u->creds.refresh_at : u->creds.expires_at - cred_skew_ms(life);
    int64_t delay = at - now;
    if (delay <= 0) {
        /* asked at that point already, and the helper gave the same answer back (its own
         * margin is a little later): halfway to the expiry, then again */
        int64_t left = u->creds.expires_at - now;
        delay = left >= 200 ? left / 2 : CRED_SKEW_MIN_MS; /* never a tight loop */
    }
    if (up_arm(u, &u->expiry_timer, delay, expiry_fired) < 0)
        log_warn(u->log, "server '%s': cannot arm the credentials refresh", up_name(u));
}

/* Keeps an answer as the credentials in force. -ENOMEM (the old ones are kept then). */
static int keep_creds(struct upstream *u, const struct credentials *c)
{
    int64_t old_exp = u->creds.expires_at;
    if (cred_copy(&u->creds, c) < 0)
        return -ENOMEM;
    if (c->expires_at != old_exp || !u->cred_got_at)
        u->cred_got_at = cred_now_ms();
    u->creds_gen++;
    return 0;
}

/* ---- opening the transport ------------------------------------------------------------------ */

static bool is_permanent_start_error(int r)
{
    return r == -ENOENT || r == -EACCES || r == -ENOTDIR || r == -EINVAL || r == -ENOEXEC ||
           r == -ELOOP || r == -ENAMETOOLONG || r == -EISDIR;
}

/* A failure to start; the message for the user says which server. */
void up_start_failed(struct upstream *u, int r, const char *what, const struct err *e)
{
    bool permanent = r != -ENOMEM && is_permanent_start_error(r);
    char *m = up_asprintf("server '%s': %s%s%s", up_name(u), what ? what : "", what ? ": " : "",
                          e && e->msg[0] ? e->msg : strerror(-r));
    up_connect_fail(u, r, m, permanent);
    free(m);
}

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
    r = up_call_new(u, "initialize", p, 0, &c);
    if (r < 0)
        goto out;
    c->ifn = init_answered;
    c->flags = TRANSPORT_INITIALIZE;
    r = up_send_call(u, c);
    if (r < 0) {
        up_call_free(c);
        goto out;
    }
    u->init_call = c;
out:
    json_object_put(p);
    return r;
}

/* ---- the era: which handshake ------------------------------------------------------------ */

#define PROBE_TIMEOUT_MAX_MS (5 * 1000)
#define ORIGINS_MAX          256

/* What HTTP servers answered the probe, per origin (scheme://host:port), for the process. */
static struct {
    char *origin;
    enum upstream_era era;
} origins[ORIGINS_MAX];

/* The origin of an HTTP entry's url as written, into buf ("" for stdio). */
static void origin_of(const struct upstream *u, char *buf, size_t size)
{
    buf[0] = 0;
    const char *url = u->srv->url;
    if (u->srv->transport == MCP_TRANSPORT_STDIO || !url)
        return;
    const char *p = strstr(url, "://");
    size_t n = p ? (size_t)(p + 3 - url) + strcspn(p + 3, "/?#") : strlen(url);
    if (n >= size)
        n = size - 1;
    for (size_t i = 0; i < n; i++)
        buf[i] = url[i] >= 'A' && url[i] <= 'Z' ? (char)(url[i] + 32) : url[i];
    buf[n] = 0;
}

static enum upstream_era known_era(const struct upstream *u)
{
    char o[512];
    origin_of(u, o, sizeof(o));
    if (!o[0])
        return u->known_era;
    for (size_t i = 0; i < ORIGINS_MAX && origins[i].origin; i++)
        if (strcmp(origins[i].origin, o) == 0)
            return origins[i].era;
    return UPSTREAM_ERA_UNKNOWN;
}

static void remember_era(struct upstream *u, enum upstream_era era)
{
    char o[512];
    u->known_era = era;
    origin_of(u, o, sizeof(o));
    if (!o[0])
        return;
    size_t i = 0;
    for (; i < ORIGINS_MAX && origins[i].origin; i++)
        if (strcmp(origins[i].origin, o) == 0) {
            origins[i].era = era;
            return;
        }
    if (i == ORIGINS_MAX)
        return; /* full: probed each time */
    origins[i].origin = strdup(o);
    origins[i].era = era;
}

static int send_discover(struct upstream *u)
{
    struct upstream_call *c = NULL;
    int64_t t = u->connect_timeout_ms;
    if (u->srv->protocol != MCP_PROTOCOL_MODERN && t > PROBE_TIMEOUT_MAX_MS)
        t = PROBE_TIMEOUT_MAX_MS;
    int r = up_call_new(u, "server/discover", NULL, t, &c);
    if (r < 0)
        return r;
    u->probe_tries++;
    c->ifn = discover_answered;
    c->flags = TRANSPORT_MODERN;
    r = up_send_call(u, c);
    if (r < 0) {
        up_call_free(c);
        return r;
    }
    u->probe_call = c;
    return 0;
}

/* The first message on a new conn: server/discover unless the entry or what the server
 * answered before says it is legacy. */
static int start_handshake(struct upstream *u)
{
    u->wire_modern = false;
    u->probe_tries = 0;
    if (u->srv->protocol == MCP_PROTOCOL_LEGACY ||
        (u->srv->protocol == MCP_PROTOCOL_AUTO && known_era(u) == UPSTREAM_ERA_LEGACY))
        return send_initialize(u);
    return send_discover(u);
}

void up_conn_free(struct conn *cn)
{
    if (!cn)
        return;
    transport_free(cn->t);
    free(cn);
}

/* Opens the transport with the credentials in u->creds and sends initialize. */
static void open_transport(struct upstream *u)
{
    struct err e = ERR_INIT;
    struct conn *cn = calloc(1, sizeof(*cn));
    if (!cn) {
        up_start_failed(u, -ENOMEM, NULL, NULL);
        return;
    }
    if (!u->connect_timer || u->sess != SESSION_REINIT) {
        /* the connect timeout covers the wire and the handshake, not the credentials (a
         * sign-in may take minutes; every helper run is bounded by itself) */
        int r = up_arm(u, &u->connect_timer, u->connect_timeout_ms, connect_timer_fired);
        if (r < 0) {
            free(cn);
            up_start_failed(u, r, NULL, NULL);
            return;
        }
    }
    cn->u = u;
    cn->gen = u->gen + 1;
    list_init(&cn->node);
    int64_t t = u->request_timeout_ms > u->connect_timeout_ms ? u->request_timeout_ms
                                                              : u->connect_timeout_ms;
    struct transport_spec spec = {
        .loop = u->loop,
        .log = u->log,
        .server = u->srv,
        .lookup = cred_lookup,
        .lookup_userdata = &u->creds,
        .headers = (const char *const *)u->creds.headers,
        .dpop = u->creds.dpop,
        .timeout_ms = t * UPSTREAM_MAX_TOTAL_FACTOR,
        .max_message = UP_MAX_MESSAGE,
    };
    int r = u->transport_open(&spec, &up_transport_handler, cn, &cn->t, &e);
    if (r < 0) {
        free(cn);
        up_start_failed(u, r, NULL, &e);
        return;
    }
    u->conn = cn;
    arm_expiry(u);
    r = start_handshake(u);
    if (r < 0)
        up_start_failed(u, r, "cannot send the first request", NULL);
}

/* The credentials could not be had: the connect attempt fails; for good (until a call
 * UPSTREAM_RECHECK_MS later asks again, or a reload) when no retry can do better: a ${NAME} that
 * resolves nowhere, a helper missing, an answer cred_check refused (refused). */
static void up_cred_failed(struct upstream *u, int error, const char *message, bool refused)
{
    char *m = up_asprintf("server '%s': %s", up_name(u), message ? message : strerror(-error));
    bool permanent = error == -ENOENT || error == -EINVAL || refused;
    up_connect_fail(u, error, m, permanent);
    free(m);
    if (u->state == UPSTREAM_FAILED && !u->no_reconnect)
        u->recheck_at = loop_now(u->loop) + UPSTREAM_RECHECK_MS; /* a secret may be set up */
}

/* refused: error is cred_check's refusal of the answer (up_cred_failed()) */
static void connect_with(struct upstream *u, int error, const struct credentials *c,
                         const char *message, bool refused)
{
    if (error < 0) {
        up_cred_failed(u, error, message, refused);
        return;
    }
    if (keep_creds(u, c) < 0) {
        up_start_failed(u, -ENOMEM, NULL, NULL);
        return;
    }
    open_transport(u);
}

static void init_refused_fail(struct upstream *u, int error)
{
    char *m = up_asprintf("server '%s': initialize failed: %s", up_name(u), up_strerror(u, error));
    up_init_failed(u, up_connect_err(error), m);
    free(m);
}

void up_init_refused(struct upstream *u, int error)
{
    if (!u->refreshed_in_connect && u->sess != SESSION_REINIT) {
        /* once per attempt: ask again, and start over if the answer is new */
        u->refreshed_in_connect = true;
        u->cred_error = error;
        log_debug(u->log, "server '%s': %s: asking for fresh credentials", up_name(u),
                  up_strerror(u, error));
        bool step_up =
            error == -EPERM && u->conn && cred_insufficient_scope(transport_challenge(u->conn->t));
        if (up_cred_ask(u, step_up ? CRED_REASON_FORBIDDEN : CRED_REASON_UNAUTHORIZED,
                        CRED_CONNECT_RETRY) >= 0)
            return;
    }
    init_refused_fail(u, error);
}

static void connect_retry_with(struct upstream *u, int error, const struct credentials *c,
                               const char *message, bool refused)
{
    if (error < 0) {
        up_cred_failed(u, error, message, refused);
        return;
    }
    if (cred_headers_equal(c->headers, u->creds.headers)) {
        init_refused_fail(u, u->cred_error); /* the same again would be refused the same */
        return;
    }
    if (keep_creds(u, c) < 0) {
        up_start_failed(u, -ENOMEM, NULL, NULL);
        return;
    }
    struct conn *old = u->conn;
    u->conn = NULL;
    if (old)
        up_retire(u, old);
    open_transport(u);
}

/* ---- a 401 in the middle of a session ------------------------------------------------------- */

void up_reauth(struct upstream *u, struct upstream_call *c, int error)
{
    up_call_put(u, c, CALL_PARKED, false);
    c->refused = error;
    if (u->sess == SESSION_REAUTH)
        return;
    u->sess = SESSION_REAUTH;
    bool forbidden = error == -EPERM;
    log_info(u->log, "server '%s': '%s' was refused (%s): asking for %s", up_name(u), c->method,
             up_strerror(u, error), forbidden ? "a wider grant" : "fresh credentials");
    int r =
        up_cred_ask(u, forbidden ? CRED_REASON_FORBIDDEN : CRED_REASON_UNAUTHORIZED, CRED_REAUTH);
    if (r < 0) {
        char *m = up_asprintf("cannot ask for credentials: %s", strerror(-r));
        up_cred_done(r, NULL, m, u);
        free(m);
    }
}

/* Fails every parked call with its refusal; why (NULL: none) says why it was not retried. */
static void fail_parked(struct upstream *u, const char *why)
{
    struct upstream_call *c;
    while ((c = up_call_pop(u, CALL_PARKED))) {
        int error = c->refused ? c->refused : -EACCES;
        char *m =
            up_asprintf("server '%s': '%s' failed: %s%s%s%s", up_name(u), c->method,
                        up_strerror(u, error), why ? " (" : "", why ? why : "", why ? ")" : "");
        up_call_fail_later(u, c, error, m);
        free(m);
    }
}

/* Fails every parked call with the provider's own error and words (a sign-in is needed, a
 * wider grant must be asked for). */
static void fail_parked_with(struct upstream *u, int error, const char *message)
{
    struct upstream_call *c;
    while ((c = up_call_pop(u, CALL_PARKED))) {
        char *m = up_asprintf("server '%s': %s", up_name(u), message ? message : strerror(-error));
        up_call_fail_later(u, c, error, m);
        free(m);
    }
}

static void reauth_with(struct upstream *u, int error, const struct credentials *c,
                        const char *message)
{
    if (u->sess == SESSION_REAUTH)
        u->sess = SESSION_OPEN;
    if (error >= 0 && cred_headers_equal(c->headers, u->creds.headers) && !u->reauth_forced) {
        /* the answer of a run that began before the refusal: once more, from a run of its own
         * (a refresh) */
        u->reauth_forced = true;
        u->sess = SESSION_REAUTH;
        if (up_cred_ask(u, CRED_REASON_UNAUTHORIZED, CRED_REAUTH) >= 0)
            return;
        u->sess = SESSION_OPEN;
    }
    u->reauth_forced = false;
    if (error == CRED_LOGIN_REQUIRED) {
        fail_parked_with(u, error, message);
        char *m = up_asprintf("server '%s': %s", up_name(u), message ? message : "");
        up_conn_lost(u, error, m); /* LOGIN: the next call after a sign-in reconnects */
        free(m);
        return;
    } else if (error == -EPERM) {
        fail_parked_with(u, error, message); /* the step-up's words: the command to run */
    } else if (error < 0) {
        char *m = up_asprintf("fresh credentials could not be had: %s",
                              message ? message : strerror(-error));
        fail_parked(u, m);
        free(m);
    } else if (cred_headers_equal(c->headers, u->creds.headers)) {
        fail_parked(u, NULL); /* nothing new to try */
    } else if (keep_creds(u, c) < 0 ||
               transport_set_headers(u->conn->t, (const char *const *)u->creds.headers) < 0 ||
               transport_set_dpop(u->conn->t, u->creds.dpop,
                                  (const char *const *)u->creds.headers) < 0) {
        fail_parked(u, "the request headers could not be replaced");
    } else {
        /* sent again, once each, ahead of the calls that waited meanwhile */
        struct list_node *n;
        while ((n = u->parked.prev) != &u->parked) {
            struct upstream_call *p = list_entry(n, struct upstream_call, node);
            up_call_unlink(u, p);
            p->auth_retried = true;
            up_call_put(u, p, CALL_WAITING, true);
        }
        arm_expiry(u);
    }
    up_flush_waiting(u);
}

static void refresh_with(struct upstream *u, int error, const struct credentials *c,
                         const char *message)
{
    if (error < 0) {
        int64_t left = u->creds.expires_at - cred_now_ms();
        if (left <= 0) {
            /* expired: the calls get the helper's error, and a later one asks again */
            char *m = up_asprintf("server '%s': the credentials expired and new ones could not "
                                  "be had: %s",
                                  up_name(u), message ? message : strerror(-error));
            up_conn_lost(u, error == CRED_LOGIN_REQUIRED ? error : -EACCES, m);
            free(m);
            return;
        }
        int64_t wait = u->refresh_retry_ms ? u->refresh_retry_ms : UPSTREAM_REFRESH_RETRY_MS;
        u->refresh_retry_ms =
            wait * 2 > UPSTREAM_REFRESH_RETRY_MAX_MS ? UPSTREAM_REFRESH_RETRY_MAX_MS : wait * 2;
        if (wait > left)
            wait = left; /* once more just as they expire */
        char d[32];
        up_fmt_ms(d, sizeof(d), wait);
        log_warn(u->log,
                 "server '%s': refreshing the credentials failed: %s; the current ones are kept "
                 "(trying again in %s)",
                 up_name(u), message ? message : strerror(-error), d);
        if (up_arm(u, &u->expiry_timer, wait, expiry_fired) < 0)
            log_warn(u->log, "server '%s': cannot arm the credentials refresh", up_name(u));
        return;
    }
    u->refresh_retry_ms = 0;
    bool same =
        c->expires_at == u->creds.expires_at && cred_headers_equal(c->headers, u->creds.headers);
    if (keep_creds(u, c) < 0) {
        log_warn(u->log, "server '%s': out of memory refreshing the credentials", up_name(u));
        return;
    }
    /* a wire without headers (stdio) uses the new values from its next start */
    int r = transport_set_headers(u->conn->t, (const char *const *)u->creds.headers);
    if (r >= 0)
        r = transport_set_dpop(u->conn->t, u->creds.dpop, (const char *const *)u->creds.headers);
    if (r < 0 && r != -EOPNOTSUPP)
        log_warn(u->log, "server '%s': cannot replace the request headers: %s", up_name(u),
                 strerror(-r));
    else if (same)
        log_debug(u->log, "server '%s': the credentials are unchanged", up_name(u));
    else if (u->creds.expires_at)
        log_info(u->log, "server '%s': credentials refreshed (valid for %" PRId64 " s)", up_name(u),
                 (u->creds.expires_at - cred_now_ms()) / 1000);
    else
        log_info(u->log, "server '%s': credentials refreshed", up_name(u));
    arm_expiry(u);
}

static void up_cred_done(int error, const struct credentials *c, const char *message,
                         void *userdata)
{
    struct upstream *u = userdata;
    struct err e = ERR_INIT;
    bool refused = false; /* by cred_check: the entry cannot work as it is */
    u->cred_req = NULL;
    if (error >= 0) {
        /* whatever gave them, they go to the server only if they are safe to send there */
        int r = cred_check_answer(u->srv, c, &e);
        if (r < 0) {
            error = r;
            message = r == -ENOMEM ? "out of memory" : err_msg(&e);
            c = NULL;
            log_debug(u->log, "server '%s': its credentials are refused: %s", up_name(u), message);
            /* connecting, up_cred_failed() takes it; a refresh keeps what it has */
            refused = r != -ENOMEM;
        }
    }
    switch (u->cred_purpose) {
    case CRED_CONNECT:
        connect_with(u, error, c, message, refused);
        break;
    case CRED_CONNECT_RETRY:
        connect_retry_with(u, error, c, message, refused);
        break;
    case CRED_REAUTH:
        reauth_with(u, error, c, message);
        break;
    case CRED_REFRESH:
        refresh_with(u, error, c, message);
        break;
    }
}

/* ---- failure reports ---------------------------------------------------------------------- */

/* What makes two failures the same for the report: the error and the message (which names the
 * server and what happened, never a wait or a count). FNV-1a; never 0. */
static uint64_t reason_key(int error, const char *message)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uint32_t)error;
    for (const unsigned char *p = (const unsigned char *)message; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h ? h : 1;
}

void up_report_failure(struct upstream *u, int error, const char *message, const char *retry)
{
    const char *m = message ? message : "the server failed";
    uint64_t key = reason_key(error, m);
    int64_t now = loop_now(u->loop);
    /* the same reason again after a short spell of working (a server that crashes soon after
     * it starts) is still the same episode; after UPSTREAM_BACKOFF_RESET_MS it is news */
    bool news =
        key != u->rep_key || (u->rep_ok_at && now - u->rep_ok_at >= UPSTREAM_BACKOFF_RESET_MS);
    enum log_level level = news && !u->no_reconnect ? LOG_WARN : LOG_DEBUG;
    if (news) {
        u->rep_key = key;
        u->rep_ok_said = false;
        u->rep_warned = level == LOG_WARN;
    }
    u->rep_ok_at = 0;
    if (retry)
        log_msg(u->log, level, "%s; connecting again in %s%s", m, retry,
                level == LOG_WARN ? " (said once: the retries that fail the same way are logged "
                                    "at debug level)"
                                  : "");
    else
        log_msg(u->log, level, "%s", m);
    if (level != LOG_WARN)
        return;
    stderr_tail_log(&u->tail, u->log, level, up_name(u));
}

/* After failures were reported: it works again (once per reported reason). */
static void report_working(struct upstream *u)
{
    if (!u->rep_key)
        return;
    u->rep_ok_at = loop_now(u->loop);
    if (u->rep_ok_said)
        return;
    u->rep_ok_said = true;
    /* heard where the failure was: a user told it is unusable is told it works again */
    log_msg(u->log, u->rep_warned ? LOG_WARN : LOG_INFO, "server '%s' is working again",
            up_name(u));
}

/* "debug": true in the entry: its stderr at the default level, as the pi adapter shows it (the
 * key is checked as a boolean when the configuration loads, server_config.h). */
static bool stderr_shown(const struct upstream *u)
{
    struct json_object *v = NULL;
    return u->srv->raw && json_object_object_get_ex(u->srv->raw, "debug", &v) &&
           json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

void up_stderr_line(struct upstream *u, const char *line, size_t len)
{
    stderr_tail_add(&u->tail, line, len);
    if (u->h.on_stderr) {
        u->h.on_stderr(u, line, len, u->userdata);
        return;
    }
    bool debug = stderr_shown(u);
    enum log_level level = debug ? LOG_WARN : LOG_DEBUG;
    if (log_get_level(u->log) < level)
        return;
    char shown[UP_STDERR_LOG_BUF];
    stderr_tail_escape_n(shown, sizeof(shown), line, len);
    log_msg(u->log, level, "server '%s'%s: %s", up_name(u), debug ? " (stderr)" : "", shown);
}

/* ---- the handshake ------------------------------------------------------------------------ */

/* The structured error a failed connect reports for a transport error. */
int up_connect_err(int error)
{
    int e = up_call_err(error);
    return e == -ECONNRESET ? -ENOTCONN : e;
}

static void connect_timer_fired(struct loop_timer *t, void *userdata)
{
    struct upstream *u = userdata;
    char d[32];
    (void)t;
    up_fmt_ms(d, sizeof(d), u->connect_timeout_ms);
    if (u->sess == SESSION_REINIT) {
        char *m = up_asprintf("server '%s': re-initializing the expired session timed out after %s",
                              up_name(u), d);
        up_conn_lost(u, -ETIMEDOUT, m);
        free(m);
    } else if (u->state == UPSTREAM_CONNECTING) {
        char *m = up_asprintf("server '%s': connect timed out after %s", up_name(u), d);
        up_connect_fail(u, -ETIMEDOUT, m, false);
        free(m);
    }
}

/* Starts a connect attempt (from the loop). */
void up_connect_start(struct upstream *u)
{
    up_disarm(&u->backoff_timer);
    u->start_pending = false;
    if (!up_set_state(u, UPSTREAM_CONNECTING, 0, NULL) || u->state != UPSTREAM_CONNECTING ||
        u->start_pending || u->conn)
        return;
    u->refreshed_in_connect = false;
    stderr_tail_clear(&u->tail); /* a report quotes this attempt's lines */
    log_debug(u->log, "server '%s': connecting", up_name(u));
    int r =
        up_cred_ask(u, u->attempts++ ? CRED_REASON_RECONNECT : CRED_REASON_CONNECT, CRED_CONNECT);
    if (r < 0)
        up_start_failed(u, r, "cannot ask for the credentials", NULL);
}

void up_init_failed(struct upstream *u, int error, const char *message)
{
    if (u->sess == SESSION_REINIT)
        up_conn_lost(u, error, message);
    else
        up_connect_fail(u, error, message, false);
}

/* The protocol version of an initialize result, or NULL with the reason in *why. */
static const char *init_version(struct upstream *u, struct json_object *res, char **why)
{
    struct json_object *v = NULL;
    const char *ver = NULL;
    if (json_object_is_type(res, json_type_object) &&
        json_object_object_get_ex(res, "protocolVersion", &v) &&
        json_object_is_type(v, json_type_string))
        ver = json_object_get_string(v);
    if (!ver) {
        *why = up_asprintf("server '%s': the answer to initialize has no protocol version",
                           up_name(u));
        return NULL;
    }
    if (!up_version_known(ver)) {
        *why = up_asprintf("server '%s' speaks protocol version '%.64s', which the bridge does "
                           "not (it speaks 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05)",
                           up_name(u), ver);
        return NULL;
    }
    return ver;
}

/* Keeps what an initialize result (modern false) or a discover result (modern true; res may
 * be NULL: a modern server that refused it) says about the server: the version spoken, the
 * instructions, the capabilities (a modern server's are {} when it said none) and serverInfo
 * (a discover result's is in _meta; some servers still put it in the result). -ENOMEM. */
static int keep_server(struct upstream *u, struct json_object *res, const char *ver, bool modern)
{
    struct json_object *v = NULL, *meta = NULL;
    const char *instr = NULL;
    if (res && json_object_object_get_ex(res, "instructions", &v) &&
        json_object_is_type(v, json_type_string))
        instr = json_object_get_string(v);
    char *version = strdup(ver);
    char *instructions = instr ? strdup(instr) : NULL;
    if (!version || (instr && !instructions)) {
        free(version);
        free(instructions);
        return -ENOMEM;
    }
    free(u->version);
    u->version = version;
    free(u->instructions);
    u->instructions = instructions;
    json_object_put(u->caps);
    u->caps = NULL;
    if (res && json_object_object_get_ex(res, "capabilities", &v) &&
        json_object_is_type(v, json_type_object))
        u->caps = json_object_get(v);
    else if (modern)
        u->caps = json_object_new_object();
    json_object_put(u->info);
    u->info = NULL;
    if (modern && res && json_object_object_get_ex(res, "_meta", &meta) &&
        json_object_object_get_ex(meta, "io.modelcontextprotocol/serverInfo", &v) &&
        json_object_is_type(v, json_type_object))
        u->info = json_object_get(v);
    else if (res && json_object_object_get_ex(res, "serverInfo", &v) &&
             json_object_is_type(v, json_type_object))
        u->info = json_object_get(v);
    return 0;
}

/* The session is up on cn: READY (or back to an open session after re-initializing). */
static void init_done(struct upstream *u, struct conn *cn)
{
    int r = transport_session_open(cn->t, u->version);
    (void)r; /* logged by the transport */
    up_disarm(&u->connect_timer);
    u->session++;
    if (u->sess == SESSION_REINIT) {
        u->sess = SESSION_OPEN;
        log_info(u->log, "server '%s': session re-established", up_name(u));
        up_flush_waiting(u);
        return;
    }
    u->gen = cn->gen;
    u->ready_at = loop_now(u->loop);
    u->login_warned = false;
    u->era = UPSTREAM_ERA_LEGACY;
    log_info(u->log, "server '%s': connected (protocol %s)", up_name(u), u->version);
    report_working(u);
    up_flush_waiting(u);
    (void)up_set_state(u, UPSTREAM_READY, 0, NULL);
}

/* The answer to initialize, on connect or on re-initializing a session the server lost. */
static void init_answered(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m,
                          int error)
{
    struct conn *cn = u->conn;
    char *msg = NULL;
    (void)c;

    u->init_call = NULL;
    if (!m || !cn) {
        msg = up_asprintf("server '%s': initialize failed: %s", up_name(u), up_strerror(u, error));
        up_init_failed(u, error < 0 ? error : -EPROTO, msg);
        goto out;
    }
    if (m->error) {
        const char *em = json_object_get_string(json_object_object_get(m->error, "message"));
        /* bounded: the server's text goes to the log and to the user */
        msg = up_asprintf("server '%s': initialize failed: %.200s", up_name(u),
                          em ? em : "(no message)");
        up_init_failed(u, -EPROTO, msg);
        goto out;
    }
    const char *ver = init_version(u, m->result, &msg);
    if (!ver) {
        up_init_failed(u, -EPROTO, msg);
        goto out;
    }
    if (keep_server(u, m->result, ver, false) < 0) {
        msg = up_asprintf("server '%s': out of memory", up_name(u));
        up_init_failed(u, -ENOMEM, msg);
        goto out;
    }
    int r = up_send_notification(u, "notifications/initialized", NULL);
    if (r < 0) {
        msg = up_asprintf("server '%s': cannot send notifications/initialized: %s", up_name(u),
                          up_strerror(u, r));
        up_init_failed(u, r, msg);
        goto out;
    }
    init_done(u, cn);
out:
    free(msg);
}

/* Re-initializes a session the server forgot (-ESTALE), keeping READY. */
void up_start_reinit(struct upstream *u)
{
    u->sess = SESSION_REINIT;
    log_info(u->log, "server '%s': %s: re-initializing", up_name(u), up_strerror(u, -ESTALE));
    int r = up_arm(u, &u->connect_timer, u->connect_timeout_ms, connect_timer_fired);
    if (r >= 0)
        r = send_initialize(u);
    if (r < 0) {
        char *m = up_asprintf("server '%s': the session expired and cannot be re-established: %s",
                              up_name(u), up_strerror(u, r));
        up_conn_lost(u, r, m);
        free(m);
    }
}

/* ---- server/discover ---------------------------------------------------------------------- */

static bool has_modern(struct json_object *arr)
{
    if (!json_object_is_type(arr, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        const char *v = json_object_get_string(json_object_array_get_idx(arr, i));
        if (v && strcmp(v, UPSTREAM_PROTOCOL_MODERN) == 0)
            return true;
    }
    return false;
}

static void modern_ready(struct upstream *u, struct conn *cn, struct json_object *res)
{
    if (keep_server(u, res, UPSTREAM_PROTOCOL_MODERN, true) < 0) {
        char *msg = up_asprintf("server '%s': out of memory", up_name(u));
        up_init_failed(u, -ENOMEM, msg);
        free(msg);
        return;
    }
    remember_era(u, UPSTREAM_ERA_MODERN);
    u->wire_modern = true;
    up_disarm(&u->connect_timer);
    u->session++;
    u->gen = cn->gen;
    u->ready_at = loop_now(u->loop);
    u->login_warned = false;
    u->era = UPSTREAM_ERA_MODERN;
    log_info(u->log, "server '%s': connected (protocol %s, no session)", up_name(u), u->version);
    report_working(u);
    up_flush_waiting(u);
    if (!up_set_state(u, UPSTREAM_READY, 0, NULL) || u->state != UPSTREAM_READY || !u->wire_modern)
        return;
    up_listen_start(u);
}

/* The server is not a 2026-07-28 one: initialize, unless the entry wants 2026-07-28 only. */
static void not_modern(struct upstream *u, const char *why)
{
    if (u->srv->protocol == MCP_PROTOCOL_MODERN) {
        char *m = up_asprintf("server '%s' does not speak protocol %s, which its entry asks for "
                              "(\"protocolVersion\": \"%s\"; \"auto\" falls back to the "
                              "initialize handshake): %s",
                              up_name(u), UPSTREAM_PROTOCOL_MODERN, UPSTREAM_PROTOCOL_MODERN, why);
        up_connect_fail(u, -EPROTO, m, false);
        free(m);
        return;
    }
    remember_era(u, UPSTREAM_ERA_LEGACY);
    log_debug(u->log, "server '%s': not a %s server (%s): initialize", up_name(u),
              UPSTREAM_PROTOCOL_MODERN, why);
    if (!u->conn)
        return; /* it is gone: the next attempt starts with initialize */
    int r = send_initialize(u);
    if (r < 0) {
        char *m =
            up_asprintf("server '%s': cannot send initialize: %s", up_name(u), up_strerror(u, r));
        up_connect_fail(u, r, m, false);
        free(m);
    }
}

/* The answer to the probe (m NULL: it failed with error, or timed out). */
static void discover_answered(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m,
                              int error)
{
    struct conn *cn = u->conn;
    struct json_object *v = NULL, *data = NULL;
    char *why = NULL;
    (void)c;

    u->probe_call = NULL;
    if (m && m->result) {
        if (cn && json_object_object_get_ex(m->result, "supportedVersions", &v) && has_modern(v)) {
            modern_ready(u, cn, m->result);
            return;
        }
        not_modern(u, "its server/discover result does not list " UPSTREAM_PROTOCOL_MODERN);
        return;
    }
    if (m && m->error) {
        int64_t code = json_object_get_int64(json_object_object_get(m->error, "code"));
        const char *em = json_object_get_string(json_object_object_get(m->error, "message"));
        bool listed = json_object_object_get_ex(m->error, "data", &data) &&
                      json_object_object_get_ex(data, "supported", &v) && has_modern(v);
        if (cn && code == -32022 && listed && u->probe_tries < 2) {
            /* it lists the version we sent: once more, with the version it names */
            log_debug(u->log,
                      "server '%s': server/discover refused (-32022) though it lists %s: "
                      "sending it again",
                      up_name(u), UPSTREAM_PROTOCOL_MODERN);
            int r = send_discover(u);
            if (r >= 0)
                return;
        }
        if (cn && (code == -32020 || code == -32021 || (code == -32022 && listed))) {
            /* a modern server's own refusal: modern, though it told us nothing of itself */
            log_warn(u->log,
                     "server '%s': server/discover was refused (%" PRId64 ": %.200s); "
                     "using it as a %s server without its capabilities",
                     up_name(u), code, em ? em : "", UPSTREAM_PROTOCOL_MODERN);
            modern_ready(u, cn, NULL);
            return;
        }
        why = up_asprintf("server/discover: error %" PRId64 ": %.200s", code, em ? em : "");
    } else {
        why = up_asprintf("server/discover: %s", up_strerror(u, error));
    }
    not_modern(u, why ? why : "server/discover failed");
    free(why);
}

/* The probe failed on the wire (from upstream_recv.c). */
void up_probe_error(struct upstream *u, int error)
{
    if (error == -EACCES || error == -EPERM) {
        up_init_refused(u, error);
        return;
    }
    discover_answered(u, NULL, NULL, error);
}
