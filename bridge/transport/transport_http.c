/* transport_http.c - transport.h over Streamable HTTP, or the legacy HTTP+SSE transport
 * (http_conn.h): the entry's url expanded from the credentials' answer, the headers given.
 *
 * What is HTTP's own is decided here: the words for HTTP statuses; the legacy transport's
 * event stream is the connection (its end is on_lost), while a Streamable HTTP GET stream that
 * broke is reopened after a delay that doubles up to TRANSPORT_HTTP_STREAM_RETRY_MAX_MS; a GET
 * stream's own 404 is reported as on_error(-ESTALE, 0) for the session to re-initialize. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/list.h"
#include "credkit/mcp_field.h"
#include "credkit/mcp_tls.h"
#include "credkit/secmem.h"

#include "creds/cred.h"
#include "creds/cred_sign.h"
#include "transport/http_conn.h"
#include "transport/transport.h"

#define STREAM_RETRY_MIN_MS 1000
#define STREAM_RETRY_MAX_MS (30 * 1000)

enum http_phase {
    HTTP_OPEN,
    HTTP_SESSION, /* session_open() called: the GET stream is kept open */
    HTTP_LOST,    /* on_lost reported */
    HTTP_CLOSING, /* shutdown: the DELETE is running */
    HTTP_FREED,
};

struct transport_http {
    struct transport t;
    struct loop *loop;
    struct log *log;
    char *name;
    struct http_conn *http;
    struct cred_sign *sign; /* "requestHeadersCommand" and DPoP proofs */
    struct transport_handler h;
    void *userdata;
    enum http_phase phase;
    struct loop_timer *stream_timer;
    int64_t stream_retry_ms;
    struct loop_release release;
};

static struct transport_http *of(struct transport *t)
{
    return (struct transport_http *)(void *)t;
}

static const char *h_strerror(int error)
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
    case -EKEYREJECTED:
        return "the server's TLS certificate is not trusted (or \"caFile\" holds no usable CA): "
               "set \"caFile\" to a PEM file of the CA that signed it";
    case -ENOKEY:
        return "the server asks for a client certificate (TLS): set \"clientCert\" and "
               "\"clientKey\" in the entry (or the one given was refused)";
    case -ECOMM:
        return "the \"requestHeadersCommand\" gave no usable headers, so the request was not "
               "sent (the warning before says why)";
    case -EHOSTUNREACH:
        return "cannot resolve or reach the host";
    default:
        return NULL;
    }
}

static bool usable(const struct transport_http *x)
{
    return x->phase == HTTP_OPEN || x->phase == HTTP_SESSION;
}

static void h_message(const char *msg, size_t len, void *userdata)
{
    struct transport_http *x = userdata;
    if (usable(x))
        x->h.on_message(msg, len, x->userdata);
}

static void stream_fired(struct loop_timer *t, void *userdata)
{
    struct transport_http *x = userdata;
    (void)t;
    if (x->phase != HTTP_SESSION)
        return;
    int r = http_conn_open_stream(x->http);
    if (r < 0 && r != -EALREADY)
        log_debug(x->log, "server '%s': cannot reopen the event stream: %s", x->name,
                  transport_strerror(&x->t, r));
}

static int arm_stream_retry(struct transport_http *x)
{
    if (x->stream_timer) {
        loop_timer_rearm(x->stream_timer, x->stream_retry_ms);
        return 0;
    }
    return loop_timer_add(x->loop, x->stream_retry_ms, stream_fired, x, &x->stream_timer);
}

static void h_close(int reason, void *userdata)
{
    struct transport_http *x = userdata;
    if (!usable(x))
        return;
    if (http_conn_is_legacy(x->http)) {
        /* the 2024-11-05 transport: the event stream is the connection */
        char why[160];
        snprintf(why, sizeof(why), "the event stream ended%s%s", reason < 0 ? ": " : "",
                 reason < 0 ? transport_strerror(&x->t, reason) : "");
        x->phase = HTTP_LOST;
        x->h.on_lost(reason < 0 ? reason : -ECONNRESET, why, x->userdata);
        return;
    }
    if (reason < 0 && x->phase == HTTP_SESSION && reason != -ESTALE) {
        /* a GET stream that broke: reopened later, slower each time (after a 404 the
         * re-initialization reopens it) */
        log_debug(x->log, "server '%s': the event stream failed: %s", x->name,
                  transport_strerror(&x->t, reason));
        if (arm_stream_retry(x) >= 0)
            x->stream_retry_ms = x->stream_retry_ms * 2 > STREAM_RETRY_MAX_MS
                                     ? STREAM_RETRY_MAX_MS
                                     : x->stream_retry_ms * 2;
        return;
    }
    log_debug(x->log, "server '%s': no event stream", x->name);
}

static void h_error(int error, uint64_t tag, void *userdata)
{
    struct transport_http *x = userdata;
    if (!usable(x))
        return;
    if (!tag)
        log_debug(x->log, "server '%s': the event stream or a message failed: %s", x->name,
                  transport_strerror(&x->t, error));
    x->h.on_error(error, tag, x->userdata);
}

static const struct http_conn_handler http_handler = {
    .on_message = h_message,
    .on_close = h_close,
    .on_error = h_error,
};

static int h_send_hdrs(struct transport *t, const char *msg, size_t len, unsigned flags,
                       uint64_t tag, const char *const *hdrs)
{
    unsigned hf = (flags & TRANSPORT_INITIALIZE ? HTTP_CONN_INITIALIZE : 0) |
                  (flags & TRANSPORT_MODERN ? HTTP_CONN_MODERN : 0);
    return http_conn_send(of(t)->http, msg, len, hf, tag, hdrs);
}

static int h_send_take(struct transport *t, char **msg, size_t len, size_t cap, unsigned flags,
                       uint64_t tag)
{
    unsigned hf = (flags & TRANSPORT_INITIALIZE ? HTTP_CONN_INITIALIZE : 0) |
                  (flags & TRANSPORT_MODERN ? HTTP_CONN_MODERN : 0);
    return http_conn_send_take(of(t)->http, msg, len, cap, hf, tag, NULL);
}

static int h_sendv(struct transport *t, const struct iovec *iov, int n, struct rblock *held,
                   unsigned flags, uint64_t tag)
{
    unsigned hf = (flags & TRANSPORT_INITIALIZE ? HTTP_CONN_INITIALIZE : 0) |
                  (flags & TRANSPORT_MODERN ? HTTP_CONN_MODERN : 0);
    return http_conn_sendv(of(t)->http, iov, n, held, hf, tag, NULL);
}

static int h_send(struct transport *t, const char *msg, size_t len, unsigned flags, uint64_t tag)
{
    return h_send_hdrs(t, msg, len, flags, tag, NULL);
}

static void h_abort(struct transport *t, uint64_t tag)
{
    http_conn_abort(of(t)->http, tag);
}

static void h_answered(struct transport *t, uint64_t tag)
{
    http_conn_answered(of(t)->http, tag);
}

static int h_session_open(struct transport *t, const char *version)
{
    struct transport_http *x = of(t);
    int r = http_conn_set_protocol_version(x->http, version);
    if (r < 0)
        log_debug(x->log, "server '%s': cannot send the protocol version", x->name);
    x->phase = HTTP_SESSION;
    x->stream_retry_ms = STREAM_RETRY_MIN_MS;
    loop_timer_cancel(x->stream_timer);
    x->stream_timer = NULL;
    r = http_conn_open_stream(x->http);
    if (r < 0 && r != -EALREADY)
        log_debug(x->log, "server '%s': cannot open the event stream: %s", x->name,
                  transport_strerror(t, r));
    return r == -EALREADY ? 0 : r;
}

static int h_set_headers(struct transport *t, const char *const *headers)
{
    return http_conn_set_headers(of(t)->http, headers);
}

static int h_set_dpop(struct transport *t, struct dpop_key *key, const char *const *headers)
{
    return cred_sign_set_dpop(of(t)->sign, key, headers);
}

static const char *h_challenge(const struct transport *t)
{
    const struct transport_http *x = (const struct transport_http *)(const void *)t;
    return http_conn_challenge(x->http);
}

static uint64_t h_message_tag(const struct transport *t)
{
    const struct transport_http *x = (const struct transport_http *)(const void *)t;
    return http_conn_message_tag(x->http);
}

static void h_closed(int result, void *userdata)
{
    struct transport_http *x = userdata;
    if (result < 0)
        log_debug(x->log, "server '%s': ending the HTTP session: %s", x->name,
                  transport_strerror(&x->t, result));
    if (x->phase == HTTP_CLOSING && x->h.on_done)
        x->h.on_done(x->userdata);
}

static int h_shutdown(struct transport *t)
{
    struct transport_http *x = of(t);
    loop_timer_cancel(x->stream_timer);
    x->stream_timer = NULL;
    int r = http_conn_close(x->http, h_closed);
    if (r >= 0)
        x->phase = HTTP_CLOSING;
    return r;
}

static void h_release(struct loop_release *node)
{
    struct transport_http *x = list_entry(node, struct transport_http, release);
    cred_sign_free(x->sign); /* after the upstream's requests: their runs were cancelled */
    free(x->name);
    free(x);
}

static void h_free(struct transport *t)
{
    struct transport_http *x = of(t);
    if (x->phase == HTTP_FREED)
        return;
    x->phase = HTTP_FREED;
    loop_timer_cancel(x->stream_timer);
    x->stream_timer = NULL;
    http_conn_free(x->http);
    x->http = NULL;
    loop_release(x->loop, &x->release, h_release);
}

static const struct transport_ops http_ops = {
    .name = "http",
    .send = h_send,
    .send_hdrs = h_send_hdrs,
    .send_take = h_send_take,
    .sendv = h_sendv,
    .abort = h_abort,
    .answered = h_answered,
    .session_open = h_session_open,
    .set_headers = h_set_headers,
    .set_dpop = h_set_dpop,
    .shutdown = h_shutdown,
    .free = h_free,
    .challenge = h_challenge,
    .strerror = h_strerror,
    .message_tag = h_message_tag,
};

/* At -v: the proxy the server's requests go through (its password masked), chosen as each
 * request chooses it (http_curl_network()). */
static void log_proxy(const struct transport_http *x, const char *url)
{
    char *proxy = NULL;
    const char *var = NULL;
    if (http_proxy_for(url, &proxy, &var) < 0 || !proxy)
        return;
    char *shown = http_proxy_display(proxy);
    log_info(x->log, "server '%s': through the proxy '%s' (%s)", x->name, shown ? shown : "?", var);
    free(shown);
    secure_free(proxy);
}

int transport_http_open(const struct transport_spec *spec, const struct transport_handler *h,
                        void *userdata, struct transport **ret, struct err *e)
{
    const struct mcp_server *srv = spec->server;
    struct transport_http *x = NULL;
    struct http_tls tls;
    char *url = NULL;
    http_tls_init(&tls);
    int r = mcp_expand(srv->url, spec->lookup, spec->lookup_userdata, &url, e);
    if (r < 0) {
        err_prefix(e, "url");
        goto out;
    }
    if (strchr(srv->url, '$')) {
        /* its variables were resolved only now (defer_vars): the loader's checks, here */
        r = mcp_server_check_url(url, true, e);
        if (r < 0)
            goto out;
    }
    /* a file that cannot be read, a key that does not open: the connection fails now, naming
     * the key, rather than each request later in libcurl's words */
    r = mcp_server_tls(srv, url, spec->lookup, spec->lookup_userdata, &tls, e);
    if (r < 0)
        goto out;
    x = calloc(1, sizeof(*x));
    if (x)
        x->name = strdup(srv->name);
    if (!x || !x->name) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    x->t.ops = &http_ops;
    x->loop = spec->loop;
    x->log = spec->log;
    x->h = *h;
    x->userdata = userdata;
    x->stream_retry_ms = STREAM_RETRY_MIN_MS;
    r = cred_sign_new(spec->loop, spec->log, srv->name, srv->raw, &x->sign, e);
    /* without a command, still the seam of a DPoP token's proofs (asked only when there is a
     * key: cred_sign_wanted()) */
    if (r >= 0 && !x->sign && cred_sign_new_bare(spec->loop, spec->log, srv->name, &x->sign) < 0)
        r = err_set(e, -ENOMEM, "out of memory");
    if (r >= 0)
        r = cred_sign_set_dpop(x->sign, spec->dpop, spec->headers) < 0
                ? err_set(e, -ENOMEM, "out of memory")
                : 0;
    if (r < 0)
        goto out;
    struct http_conn_spec sp = {
        .url = url,
        .headers = spec->headers,
        .timeout_ms = spec->timeout_ms,
        .max_message = spec->max_message,
        .legacy_sse = srv->transport == MCP_TRANSPORT_SSE,
        .tls = &tls,
        .sign = x->sign,
    };
    r = http_conn_new(spec->loop, &sp, &http_handler, x, &x->http, e);
    if (r < 0)
        goto out;
    log_proxy(x, url);
    *ret = &x->t;
    x = NULL;
out:
    if (x) {
        cred_sign_free(x->sign);
        free(x->name);
    }
    free(x);
    secure_free(url);
    http_tls_release(&tls);
    return r;
}
