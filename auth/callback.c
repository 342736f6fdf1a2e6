/* callback.c - the loopback redirect receiver, on libmicrohttpd in external-poll mode.
 *
 * We bind the listening socket ourselves (127.0.0.1 only, O_CLOEXEC) so that a taken port is
 * reported with its real errno, and hand it to libmicrohttpd, which we drive from
 * callback_wait() with ppoll(): SIGINT and SIGTERM are blocked everywhere except inside
 * ppoll(), so a Ctrl-C can neither be lost between a check and the wait nor interrupt
 * libmicrohttpd half-way through a request.
 *
 * Any local user can find the port and connect. A connection that trickles its request head a
 * byte at a time is active, so libmicrohttpd's inactivity timeout never ends it, and a few
 * dozen of them would fill every slot while the browser's redirect waits in the backlog. So
 * each connection gets CALLBACK_HEAD_MS from its accept to a complete request head, and when
 * the connections still reading a head fill all but CALLBACK_CONN_SPARE slots, the oldest of
 * them is dropped: a browser sends its head at once, so the newest connection is the one to
 * keep. A per-address limit would not help: on loopback every peer is 127.0.0.1. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "credkit/buf.h"
#include "credkit/secmem.h"
#include "credkit/url.h"
#include "credkit/util.h"

#include "callback.h"
#include "stopcatch.h"

#define CALLBACK_PARAM_MAX    4096u  /* bytes per query parameter, decoded */
#define CALLBACK_CONN_LIMIT   64u    /* a browser opens a handful; the rest is headroom */
#define CALLBACK_CONN_SPARE   8u     /* slots kept free for new connections: drop_slow() */
#define CALLBACK_HEAD_MS      5000   /* from accept to a complete request head */
#define CALLBACK_CONN_TIMEOUT 10u    /* seconds of inactivity before a connection is dropped */
#define CALLBACK_CONN_MEMORY  32768u /* per connection: request line and headers must fit */
#define CALLBACK_TICK_MS      1000
#define CALLBACK_DRAIN_MS     1000 /* after acceptance: time to deliver the page */
#define CALLBACK_MAX_FDS      128  /* listen socket + CALLBACK_CONN_LIMIT, with room to spare */
#define CALLBACK_PASTE_MAX    (4 * CALLBACK_PARAM_MAX) /* bytes of one pasted line */

/* The lifecycle of one wait: WAITING until a valid callback is accepted (later ones get 410),
 * ACCEPTED while its page goes out, ANSWERED once it went out (or its connection died). Each
 * wait starts again at WAITING. */
enum callback_phase {
    CALLBACK_WAITING,
    CALLBACK_ACCEPTED,
    CALLBACK_ANSWERED,
};

/* One open connection, from libmicrohttpd's STARTED notification to its CLOSED one. */
struct callback_conn {
    bool used;
    bool head;    /* its request head is complete: it is being answered */
    bool dropped; /* shut down by drop_slow(); libmicrohttpd closes it at its next run */
    int fd;       /* libmicrohttpd's: only ever shut down here, never closed */
    int64_t since_ms;
};

struct callback {
    struct MHD_Daemon *daemon;
    uint16_t port;
    char redirect_uri[sizeof("http://127.0.0.1:65535" CALLBACK_PATH)];
    char host_ip[sizeof("127.0.0.1:65535")];
    char host_name[sizeof("localhost:65535")];
    /* callback_set_redirect_uri(): the address the browser is sent to in front of the listener
     * (an ingress, a port forward), its authority as a Host header names it, and its path;
     * NULL: our own address */
    char *public_uri;
    char *public_host;
    char *public_path;

    const char *expected_state;    /* borrowed, set only during callback_wait() */
    enum callback_phase phase;     /* of the current wait; changed by phase_enter() only */
    int fail;                      /* -errno raised inside the request handler */
    struct callback_result result; /* filled on acceptance, handed out by callback_wait() */

    struct pollfd pfds[CALLBACK_MAX_FDS];
    struct callback_conn conns[CALLBACK_CONN_LIMIT];

    /* the pasted address: callback_paste_from() */
    int paste_fd; /* -1: none, or its input ended */
    short paste_revents;
    void (*paste_notify)(const char *msg, void *userdata);
    void *paste_userdata;
    size_t paste_len;
    bool paste_overflow; /* the current line is too long: skipped up to its end */
    char paste_line[CALLBACK_PASTE_MAX + 1];
};

/* The transitions, all here: a wait starts at WAITING; otherwise one step forward at a time, so
 * that the completion of a request accepted by an earlier wait cannot mark the current one
 * answered before it accepted anything. */
static void phase_enter(struct callback *cb, enum callback_phase to)
{
    if (to == CALLBACK_WAITING || (int)to == (int)cb->phase + 1)
        cb->phase = to;
}

/* --- pages --- */

#define PAGE_HEAD                                                                                  \
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"                            \
    "<meta name=\"viewport\" content=\"width=device-width\">"
#define PAGE_TAIL "</body></html>\n"

static const char page_success[] =
    PAGE_HEAD "<title>Signed in</title></head><body>"
              "<h1>Signed in</h1>"
              "<p>You can close this tab and return to the terminal.</p>" PAGE_TAIL;

static const char page_invalid[] =
    PAGE_HEAD "<title>Sign-in failed</title></head><body>"
              "<h1>Sign-in failed</h1>"
              "<p>This sign-in link is not valid or has expired.</p>"
              "<p>Start the sign-in again from the terminal.</p>" PAGE_TAIL;

static const char page_used[] =
    PAGE_HEAD "<title>Already used</title></head><body>"
              "<h1>Already used</h1>"
              "<p>This sign-in link was already used. You can close this tab.</p>" PAGE_TAIL;

static const char page_error_fallback[] =
    PAGE_HEAD "<title>Sign-in failed</title></head><body>"
              "<h1>Sign-in failed</h1>"
              "<p>The authorization server refused the sign-in. "
              "Return to the terminal for details.</p>" PAGE_TAIL;

static const char page_internal[] =
    PAGE_HEAD "<title>Error</title></head><body>"
              "<h1>Error</h1><p>Return to the terminal for details.</p>" PAGE_TAIL;

static const char page_not_found[] = PAGE_HEAD "<title>Not found</title></head><body>"
                                               "<h1>Not found</h1>" PAGE_TAIL;

static const char page_bad_method[] = PAGE_HEAD "<title>Method not allowed</title></head><body>"
                                                "<h1>Method not allowed</h1>" PAGE_TAIL;

/* Text into HTML element content: markup characters become entities, control characters
 * become '?'. */
static int html_escape(struct buf *b, const char *s)
{
    int r = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && r >= 0; p++) {
        switch (*p) {
        case '&':
            r = buf_append_str(b, "&amp;");
            break;
        case '<':
            r = buf_append_str(b, "&lt;");
            break;
        case '>':
            r = buf_append_str(b, "&gt;");
            break;
        case '"':
            r = buf_append_str(b, "&quot;");
            break;
        case '\'':
            r = buf_append_str(b, "&#39;");
            break;
        default:
            r = buf_append_char(b, (*p < 0x20 || *p == 0x7f) ? '?' : (char)*p);
            break;
        }
    }
    return r;
}

static int build_error_page(struct buf *b, const char *error, const char *description)
{
    int r =
        buf_append_str(b, PAGE_HEAD "<title>Sign-in failed</title></head><body>"
                                    "<h1>Sign-in failed</h1><p>The authorization server answered "
                                    "<code>");
    if (r >= 0)
        r = html_escape(b, error);
    if (r >= 0)
        r = buf_append_str(b, "</code>.</p>");
    if (r >= 0 && description) {
        r = buf_append_str(b, "<p>");
        if (r >= 0)
            r = html_escape(b, description);
        if (r >= 0)
            r = buf_append_str(b, "</p>");
    }
    if (r >= 0)
        r = buf_append_str(b, "<p>Return to the terminal for details.</p>" PAGE_TAIL);
    return r;
}

/* Queues page with our headers. The response is not cached, leaks no referrer, loads nothing,
 * and closes its connection: this server answers a handful of requests in its life. */
static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *page,
                              size_t len, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)page, mode);
    if (!resp)
        return MHD_NO;
    bool ok = MHD_add_response_header(resp, "Content-Type", "text/html; charset=utf-8") &&
              MHD_add_response_header(resp, "Cache-Control", "no-store") &&
              MHD_add_response_header(resp, "Referrer-Policy", "no-referrer") &&
              MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff") &&
              MHD_add_response_header(resp, "Content-Security-Policy",
                                      "default-src 'none'; frame-ancestors 'none'") &&
              MHD_add_response_header(resp, "Connection", "close");
    if (ok && status == MHD_HTTP_METHOD_NOT_ALLOWED)
        ok = MHD_add_response_header(resp, "Allow", "GET");
    enum MHD_Result res = ok ? MHD_queue_response(conn, status, resp) : MHD_NO;
    MHD_destroy_response(resp);
    return res;
}

#define ANSWER_STATIC(conn, status, page)                                                          \
    answer((conn), (status), (page), sizeof(page) - 1, MHD_RESPMEM_PERSISTENT)

/* --- request handling --- */

enum {
    P_CODE,
    P_STATE,
    P_ISS,
    P_ERROR,
    P_ERROR_DESCRIPTION,
    P_ERROR_URI,
    P_COUNT,
};

static const char *const param_names[P_COUNT] = {
    [P_CODE] = "code",
    [P_STATE] = "state",
    [P_ISS] = "iss",
    [P_ERROR] = "error",
    [P_ERROR_DESCRIPTION] = "error_description",
    [P_ERROR_URI] = "error_uri",
};

/* The query parameters we read, borrowed from libmicrohttpd for the handler's duration. */
struct params {
    const char *value[P_COUNT]; /* NULL when absent or empty */
    unsigned seen[P_COUNT];
    bool bad; /* too long, embedded NUL */
};

/* Takes one decoded query parameter into p: the listener's and the paste's alike. */
static void take_param(struct params *p, const char *key, size_t key_size, const char *value,
                       size_t value_size)
{
    for (size_t i = 0; i < P_COUNT; i++) {
        if (strlen(param_names[i]) != key_size || memcmp(key, param_names[i], key_size) != 0)
            continue;
        p->seen[i]++;
        if (!value || value_size == 0)
            break;
        if (value_size > CALLBACK_PARAM_MAX || strlen(value) != value_size)
            p->bad = true;
        else
            p->value[i] = value;
        break;
    }
}

static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                     size_t key_size, const char *value, size_t value_size)
{
    take_param(cls, key, key_size, value, value_size);
    return MHD_YES;
}

/* RFC 6749 section 3.1: none may appear twice; every value is bounded. */
static bool params_ok(const struct params *p)
{
    if (p->bad)
        return false;
    for (size_t i = 0; i < P_COUNT; i++)
        if (p->seen[i] > 1)
            return false;
    return true;
}

/* The path a callback comes to: the redirect URI's. */
static const char *expected_path(const struct callback *cb)
{
    return cb->public_path ? cb->public_path : CALLBACK_PATH;
}

/* The Host a browser sends after the redirect (or the authority of a pasted address): our
 * address, or localhost, or the authority of the redirect URI set in front of us. Anything else
 * (a DNS-rebinding page's own name, another machine) is not a callback to us. */
static bool host_ok(const struct callback *cb, const char *host)
{
    if (!host)
        return false;
    if (strcasecmp(host, cb->host_ip) == 0 || strcasecmp(host, cb->host_name) == 0)
        return true;
    if (cb->public_host && strcasecmp(host, cb->public_host) == 0)
        return true;
    return cb->port == 80 && (strcmp(host, "127.0.0.1") == 0 || strcasecmp(host, "localhost") == 0);
}

/* What the check of a callback found. */
enum verdict {
    VERDICT_OK,
    VERDICT_NOT_FOUND, /* another path */
    VERDICT_FOREIGN,   /* another host or port */
    VERDICT_USED,      /* this wait already accepted one */
    VERDICT_MALFORMED, /* a parameter twice, too long, or holding a NUL */
    VERDICT_STATE,     /* no state, or not ours */
    VERDICT_EMPTY,     /* our state, but neither code nor error */
};

/* The one check of a callback, whether it reached the listener (path, Host header, query) or was
 * pasted (the address's path, authority, query). The state decides before the answer is looked
 * at: a request without our state is somebody else's and must not influence the flow in any
 * way. The issuer (RFC 9207) and an error are judged by the caller, for both alike. */
static enum verdict judge(const struct callback *cb, const char *path, const char *host,
                          const struct params *p)
{
    if (strcmp(path, expected_path(cb)) != 0)
        return VERDICT_NOT_FOUND;
    if (!host_ok(cb, host))
        return VERDICT_FOREIGN;
    if (cb->phase != CALLBACK_WAITING)
        return VERDICT_USED;
    if (!params_ok(p))
        return VERDICT_MALFORMED;
    if (!cb->expected_state || !p->value[P_STATE] ||
        !secure_streq(p->value[P_STATE], cb->expected_state))
        return VERDICT_STATE;
    if (!p->value[P_CODE] && !p->value[P_ERROR])
        return VERDICT_EMPTY;
    return VERDICT_OK;
}

static char *dup_or_null(const char *s, bool *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = true;
    return d;
}

/* Copies the accepted callback into cb->result. -ENOMEM leaves cb->result empty. */
static int keep_result(struct callback *cb, const struct params *p)
{
    struct callback_result res = {0};
    bool oom = false;
    if (!p->value[P_ERROR])
        res.code = dup_or_null(p->value[P_CODE], &oom);
    res.state = dup_or_null(p->value[P_STATE], &oom);
    /* an empty iss is present (and matches no issuer), not absent: RFC 9207 2.4 */
    res.iss = dup_or_null(p->value[P_ISS] ? p->value[P_ISS] : p->seen[P_ISS] ? "" : NULL, &oom);
    res.error = dup_or_null(p->value[P_ERROR], &oom);
    res.error_description = dup_or_null(p->value[P_ERROR_DESCRIPTION], &oom);
    res.error_uri = dup_or_null(p->value[P_ERROR_URI], &oom);
    if (oom) {
        callback_result_release(&res);
        return -ENOMEM;
    }
    cb->result = res;
    return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    struct callback *cb = cls;

    /* Every request is answered on its first call, before any body is read. Should
     * libmicrohttpd come back with body data anyway, drop it. */
    if (*req_cls) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    *req_cls = cb;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct callback_conn *cc = ci ? ci->socket_context : NULL;
    if (cc)
        cc->head = true; /* no longer one that drop_slow() may drop */

    if (strcmp(url, expected_path(cb)) == 0 && strcmp(method, MHD_HTTP_METHOD_GET) != 0)
        return ANSWER_STATIC(conn, MHD_HTTP_METHOD_NOT_ALLOWED, page_bad_method);
    struct params p = {0};
    (void)MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, collect_param, &p);
    switch (judge(cb, url, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST),
                  &p)) {
    case VERDICT_OK:
        break;
    case VERDICT_NOT_FOUND:
        return ANSWER_STATIC(conn, MHD_HTTP_NOT_FOUND, page_not_found);
    case VERDICT_USED:
        return ANSWER_STATIC(conn, MHD_HTTP_GONE, page_used);
    default:
        return ANSWER_STATIC(conn, MHD_HTTP_BAD_REQUEST, page_invalid);
    }

    int r = keep_result(cb, &p);
    if (r < 0) {
        cb->fail = r;
        return ANSWER_STATIC(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, page_internal);
    }
    phase_enter(cb, CALLBACK_ACCEPTED);
    *req_cls = &cb->phase; /* on_completed() recognises the accepted request by this */

    if (!cb->result.error)
        return ANSWER_STATIC(conn, MHD_HTTP_OK, page_success);

    /* A valid request that carries the authorization server's refusal: the page says so; the
     * caller reports the description too. */
    struct buf page;
    buf_init(&page, 4 * CALLBACK_PARAM_MAX);
    enum MHD_Result res;
    if (build_error_page(&page, cb->result.error, cb->result.error_description) >= 0)
        res = answer(conn, MHD_HTTP_OK, page.data, page.len, MHD_RESPMEM_MUST_COPY);
    else
        res = ANSWER_STATIC(conn, MHD_HTTP_OK, page_error_fallback);
    buf_release(&page);
    return res;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct callback *cb = cls;
    /* sent, or the browser went away: either way nothing more will go out for it */
    if (*req_cls == &cb->phase)
        phase_enter(cb, CALLBACK_ANSWERED);
}

/* Keeps track of each connection: when it came, and whether its head is complete. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct callback *cb = cls;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct callback_conn *cc = *socket_context;
        if (cc)
            *cc = (struct callback_conn){0};
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    for (size_t i = 0; ci && i < ELEMENTSOF(cb->conns); i++) {
        if (cb->conns[i].used)
            continue;
        cb->conns[i] = (struct callback_conn){
            .used = true, .fd = (int)ci->connect_fd, .since_ms = now_mono_ms()};
        *socket_context = &cb->conns[i];
        return;
    }
    /* untracked (cannot happen: there are as many slots as libmicrohttpd allows connections);
     * its inactivity timeout still ends it */
}

static void drop(struct callback_conn *cc)
{
    /* libmicrohttpd reads the end of the stream at its next run and closes the connection */
    (void)shutdown(cc->fd, SHUT_RDWR);
    cc->dropped = true;
}

/* Drops the connections that took longer than CALLBACK_HEAD_MS to send their request head, and
 * the oldest ones still reading a head while fewer than CALLBACK_CONN_SPARE slots are free. */
static void drop_slow(struct callback *cb, int64_t now)
{
    size_t live = 0;
    for (size_t i = 0; i < ELEMENTSOF(cb->conns); i++) {
        struct callback_conn *cc = &cb->conns[i];
        if (!cc->used || cc->dropped)
            continue;
        if (!cc->head && now - cc->since_ms >= CALLBACK_HEAD_MS)
            drop(cc);
        else
            live++;
    }
    while (live + CALLBACK_CONN_SPARE >= CALLBACK_CONN_LIMIT) {
        struct callback_conn *oldest = NULL;
        for (size_t i = 0; i < ELEMENTSOF(cb->conns); i++) {
            struct callback_conn *cc = &cb->conns[i];
            if (cc->used && !cc->dropped && !cc->head &&
                (!oldest || cc->since_ms < oldest->since_ms))
                oldest = cc;
        }
        if (!oldest)
            break; /* all are being answered: they close on their own */
        drop(oldest);
        live--;
    }
}

/* When the first connection still reading its head runs out of time (monotonic), or -1. */
static int64_t next_head_deadline(const struct callback *cb)
{
    int64_t next = -1;
    for (size_t i = 0; i < ELEMENTSOF(cb->conns); i++) {
        const struct callback_conn *cc = &cb->conns[i];
        if (cc->used && !cc->dropped && !cc->head &&
            (next < 0 || cc->since_ms + CALLBACK_HEAD_MS < next))
            next = cc->since_ms + CALLBACK_HEAD_MS;
    }
    return next;
}

/* Library code does not print: libmicrohttpd's messages go nowhere. */
static void mhd_log_nothing(void *cls, const char *fmt, va_list ap)
{
}

/* --- start, stop --- */

/* A listening socket on 127.0.0.1:port (0: ephemeral); *ret_port is the port it got. */
static int listen_loopback(uint16_t port, int *ret_fd, uint16_t *ret_port, struct err *e)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int r;
    if (fd < 0)
        return err_set(e, -errno, "cannot start the callback server: %s", strerror(errno));
    /* We close our connections first, so they linger in TIME_WAIT on our port: without this a
     * fixed port could not be reused for a minute. It never lets us share a port that another
     * socket is listening on. */
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));

    struct sockaddr_in sa = {
        .sin_family = AF_INET,
        .sin_port = htons(port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    if (bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fd, (int)CALLBACK_CONN_LIMIT) < 0) {
        r = -errno;
        if (r == -EADDRINUSE && port != 0)
            err_set(e, r,
                    "port %u on 127.0.0.1 is in use: another program (or another sign-in) holds "
                    "it; stop it and try again",
                    (unsigned)port);
        else
            err_set(e, r, "cannot listen on 127.0.0.1:%u: %s", (unsigned)port, strerror(-r));
        goto out;
    }
    socklen_t salen = sizeof(sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &salen) < 0) {
        r = err_set(e, -errno, "cannot start the callback server: %s", strerror(errno));
        goto out;
    }
    *ret_port = ntohs(sa.sin_port);
    *ret_fd = fd;
    fd = -1;
    r = 0;
out:
    if (fd >= 0)
        (void)close(fd);
    return r;
}

int callback_start(uint16_t port, struct callback **ret, struct err *e)
{
    struct callback *cb = NULL;
    int fd = -1, mhd_fd = -1, r;

    if (!ret)
        return err_set(e, -EINVAL, "callback_start: no result pointer");

    cb = calloc(1, sizeof(*cb));
    if (!cb) {
        r = err_set(e, -ENOMEM, "cannot start the callback server: out of memory");
        goto out;
    }
    cb->paste_fd = -1;
    r = listen_loopback(port, &fd, &cb->port, e);
    if (r < 0)
        goto out;
    (void)snprintf(cb->redirect_uri, sizeof(cb->redirect_uri), "http://127.0.0.1:%u" CALLBACK_PATH,
                   (unsigned)cb->port);
    (void)snprintf(cb->host_ip, sizeof(cb->host_ip), "127.0.0.1:%u", (unsigned)cb->port);
    (void)snprintf(cb->host_name, sizeof(cb->host_name), "localhost:%u", (unsigned)cb->port);

    /* libmicrohttpd takes the socket it is given and closes it, but whether it does so when
     * it fails to start is not documented: give it a duplicate, so that at worst a failed
     * start leaks one descriptor, never closes one twice. */
    mhd_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (mhd_fd < 0) {
        r = err_set(e, -errno, "cannot start the callback server: %s", strerror(errno));
        goto out;
    }
    /* no MHD_USE_INTERNAL_POLLING_THREAD: external polling, no threads */
    cb->daemon = MHD_start_daemon(
        MHD_NO_FLAG, 0, NULL, NULL, on_request, cb, MHD_OPTION_EXTERNAL_LOGGER, mhd_log_nothing,
        NULL, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)mhd_fd, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)CALLBACK_CONN_TIMEOUT, MHD_OPTION_CONNECTION_LIMIT, (unsigned)CALLBACK_CONN_LIMIT,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CALLBACK_CONN_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, cb, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
        cb, MHD_OPTION_END);
    mhd_fd = -1; /* libmicrohttpd's now, or gone */
    if (!cb->daemon) {
        r = err_set(e, -EIO, "cannot start the callback server on 127.0.0.1:%u",
                    (unsigned)cb->port);
        goto out;
    }

    *ret = cb;
    cb = NULL;
    r = 0;
out:
    if (fd >= 0)
        (void)close(fd);
    callback_stop(cb);
    return r;
}

const char *callback_redirect_uri(const struct callback *cb)
{
    return cb->public_uri ? cb->public_uri : cb->redirect_uri;
}

int callback_set_redirect_uri(struct callback *cb, const char *uri, struct err *e)
{
    static const char *const schemes[] = {"http://", "https://"};
    const char *rest = NULL;
    for (size_t i = 0; i < ELEMENTSOF(schemes) && !rest; i++)
        if (strncasecmp(uri, schemes[i], strlen(schemes[i])) == 0)
            rest = uri + strlen(schemes[i]);
    size_t alen = rest ? strcspn(rest, "/?#") : 0;
    if (!rest || alen == 0 || memchr(rest, '@', alen) || strpbrk(uri, "?# \t\r\n"))
        return err_set(e, -EINVAL,
                       "the callback URL must be an http:// or https:// URL with a host, a path "
                       "and neither a query, a fragment nor a user name");
    /* a browser leaves the scheme's default port out of its Host header */
    bool https = rest - uri == 8;
    size_t hlen = alen;
    const char *dflt = https ? ":443" : ":80";
    if (hlen > strlen(dflt) && strncmp(rest + hlen - strlen(dflt), dflt, strlen(dflt)) == 0 &&
        rest[0] != '[')
        hlen -= strlen(dflt);
    char *u = strdup(uri), *h = strndup(rest, hlen), *p = strdup(rest[alen] ? rest + alen : "/");
    if (!u || !h || !p) {
        free(u);
        free(h);
        free(p);
        return -ENOMEM;
    }
    free(cb->public_uri);
    free(cb->public_host);
    free(cb->public_path);
    cb->public_uri = u;
    cb->public_host = h;
    cb->public_path = p;
    return 0;
}

void callback_result_release(struct callback_result *r)
{
    if (!r)
        return;
    secure_free(r->code);
    secure_free(r->state);
    free(r->iss);
    free(r->error);
    free(r->error_description);
    free(r->error_uri);
    *r = (struct callback_result){0};
}

void callback_stop(struct callback *cb)
{
    if (!cb)
        return;
    if (cb->daemon)
        MHD_stop_daemon(cb->daemon); /* closes the listening socket and every connection */
    callback_result_release(&cb->result);
    secure_wipe(cb->paste_line, sizeof(cb->paste_line));
    free(cb->public_uri);
    free(cb->public_host);
    free(cb->public_path);
    free(cb);
}

/* --- the pasted address --- */

void callback_paste_from(struct callback *cb, int fd,
                         void (*notify)(const char *msg, void *userdata), void *userdata)
{
    cb->paste_fd = fd;
    cb->paste_notify = notify;
    cb->paste_userdata = userdata;
    cb->paste_len = 0;
    cb->paste_overflow = false;
}

_printf_(2, 3) static void paste_say(const struct callback *cb, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    if (!cb->paste_notify)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cb->paste_notify(msg, cb->paste_userdata);
}

/* One "name=value" of a pasted query into p, decoded as libmicrohttpd decodes the listener's;
 * the value (allocated) goes to vals, which the caller wipes. -ENOMEM only. */
static int paste_param(const char *pair, struct params *p, char *vals[P_COUNT])
{
    /* url_query_get() would read a '?' or '#' in the name as the start of a query or fragment */
    if (strcspn(pair, "?#") < strcspn(pair, "=")) {
        p->bad = true;
        return 0;
    }
    for (size_t i = 0; i < P_COUNT; i++) {
        char *v = NULL;
        int r = url_query_get(pair, param_names[i], &v);
        if (r == -ENOENT)
            continue;
        if (r == -ENOMEM)
            return r;
        p->seen[i]++;
        if (r < 0 || strlen(v) > CALLBACK_PARAM_MAX)
            p->bad = true;
        else if (*v && !vals[i]) {
            p->value[i] = vals[i] = v;
            v = NULL;
        }
        secure_free(v); /* empty (present, as for the listener), or a repeat */
        break;
    }
    return 0;
}

/* Splits a pasted line into what the listener would have seen: the path, the authority (as a
 * Host header) and the query, cut in place. An address that is not http:// gets no host (it is
 * not ours); a line without a scheme is the query alone ("code=...&state=...", with or without
 * its '?'), which names no place: it is judged as if it came to our own address. */
static void paste_split(const struct callback *cb, char *line, char *host, size_t host_size,
                        const char **ret_path, char **ret_query)
{
    line[strcspn(line, "#")] = 0;
    size_t scheme = url_scheme_len(line);
    if (scheme == 0 || strncmp(line + scheme, "://", 3) != 0) {
        (void)snprintf(host, host_size, "%s", cb->host_ip);
        *ret_path = expected_path(cb);
        *ret_query = line + (*line == '?');
        return;
    }
    *host = 0;
    char *q = strchr(line, '?');
    if (q)
        *q++ = 0;
    *ret_query = q ? q : line + strlen(line);
    size_t skip = strncasecmp(line, "http://", 7) == 0                      ? 7
                  : cb->public_uri && strncasecmp(line, "https://", 8) == 0 ? 8
                                                                            : 0;
    if (skip == 0) {
        *ret_path = "";
        return;
    }
    char *auth = line + skip;
    size_t alen = strcspn(auth, "/");
    if (alen < host_size) {
        memcpy(host, auth, alen);
        host[alen] = 0;
    }
    *ret_path = auth + alen;
}

/* Judges one pasted line as the listener judges a request, and takes it when it is valid. */
static void paste_take_line(struct callback *cb, char *line)
{
    char *vals[P_COUNT] = {0}, host[sizeof(cb->host_name) + 1];
    struct params p = {0};
    const char *path;
    char *query;

    while (*line == ' ' || *line == '\t')
        line++;
    size_t len = strlen(line);
    while (len > 0 && strchr(" \t\r", line[len - 1]))
        line[--len] = 0;
    if (len == 0)
        return;
    paste_split(cb, line, host, sizeof(host), &path, &query);
    for (char *pair; (pair = strsep(&query, "&"));) {
        int r = *pair ? paste_param(pair, &p, vals) : 0;
        if (r < 0) {
            cb->fail = r;
            goto out;
        }
    }
    /* never quoted back: the line holds the code */
    switch (judge(cb, path, host, &p)) {
    case VERDICT_OK:
        if (keep_result(cb, &p) < 0) {
            cb->fail = -ENOMEM;
            goto out;
        }
        phase_enter(cb, CALLBACK_ACCEPTED);
        phase_enter(cb, CALLBACK_ANSWERED); /* no page to deliver */
        paste_say(cb, "took the pasted address");
        break;
    case VERDICT_NOT_FOUND:
    case VERDICT_FOREIGN:
        paste_say(cb,
                  "refused the pasted address: it is not this sign-in's (which begins with %s); "
                  "paste the address the browser ended on, or wait for the browser",
                  callback_redirect_uri(cb));
        break;
    case VERDICT_USED:
        break;
    case VERDICT_MALFORMED:
        paste_say(cb, "refused the pasted address: a parameter appears twice or is too long");
        break;
    case VERDICT_STATE:
        paste_say(cb, "refused the pasted address: its state is not this sign-in's (an older "
                      "sign-in, or somebody else's); paste the address of this one, or wait for "
                      "the browser");
        break;
    case VERDICT_EMPTY:
        paste_say(cb, "refused the pasted address: it carries neither a code nor an error");
        break;
    }
out:
    for (size_t i = 0; i < P_COUNT; i++)
        secure_free(vals[i]);
}

/* Reads what is there on the paste descriptor (poll said so) and judges each complete line; at
 * the end of the input, the last line too, and the wait goes on with the listener alone. */
static void paste_read(struct callback *cb)
{
    char chunk[1024];
    ssize_t n = read(cb->paste_fd, chunk, sizeof(chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    bool end = n <= 0;
    for (ssize_t i = 0; i < n && cb->phase == CALLBACK_WAITING && cb->fail >= 0; i++) {
        if (chunk[i] != '\n') {
            if (cb->paste_len < CALLBACK_PASTE_MAX)
                cb->paste_line[cb->paste_len++] = chunk[i];
            else
                cb->paste_overflow = true;
            continue;
        }
        cb->paste_line[cb->paste_len] = 0;
        if (cb->paste_overflow)
            paste_say(cb, "refused the pasted line: longer than %u bytes",
                      (unsigned)CALLBACK_PASTE_MAX);
        else
            paste_take_line(cb, cb->paste_line);
        secure_wipe(cb->paste_line, sizeof(cb->paste_line));
        cb->paste_len = 0;
        cb->paste_overflow = false;
    }
    secure_wipe(chunk, sizeof(chunk));
    if (!end)
        return;
    if (cb->paste_len > 0 && !cb->paste_overflow && cb->phase == CALLBACK_WAITING) {
        cb->paste_line[cb->paste_len] = 0;
        paste_take_line(cb, cb->paste_line);
    }
    secure_wipe(cb->paste_line, sizeof(cb->paste_line));
    cb->paste_len = 0;
    cb->paste_fd = -1;
    if (cb->phase == CALLBACK_WAITING)
        paste_say(cb, "the input ended: waiting for the browser alone");
}

/* --- the wait --- */

/* Waits up to wait_ms for libmicrohttpd's sockets (or its own timeout, or a signal). */
static int poll_once(struct callback *cb, int64_t wait_ms, const sigset_t *mask)
{
    fd_set rs, ws, es;
    MHD_socket max_fd = -1;
    FD_ZERO(&rs);
    FD_ZERO(&ws);
    FD_ZERO(&es);
    if (MHD_get_fdset2(cb->daemon, &rs, &ws, &es, &max_fd, FD_SETSIZE) != MHD_YES)
        return -EIO;

    nfds_t n = 0;
    bool paste = cb->paste_fd >= 0 && cb->phase == CALLBACK_WAITING;
    if (paste)
        cb->pfds[n++] = (struct pollfd){.fd = cb->paste_fd, .events = POLLIN};
    for (int fd = 0; fd <= max_fd; fd++) {
        short events = 0;
        if (FD_ISSET(fd, &rs))
            events |= POLLIN;
        if (FD_ISSET(fd, &ws))
            events |= POLLOUT;
        if (FD_ISSET(fd, &es))
            events |= POLLPRI;
        if (!events)
            continue;
        if (n == ELEMENTSOF(cb->pfds)) {
            /* cannot happen with our connection limit; if it did, look again soon */
            if (wait_ms > 10)
                wait_ms = 10;
            break;
        }
        cb->pfds[n++] = (struct pollfd){.fd = fd, .events = events};
    }

    MHD_UNSIGNED_LONG_LONG mhd_ms;
    if (MHD_get_timeout(cb->daemon, &mhd_ms) == MHD_YES &&
        mhd_ms < (MHD_UNSIGNED_LONG_LONG)INT64_MAX && (int64_t)mhd_ms < wait_ms)
        wait_ms = (int64_t)mhd_ms;
    int64_t head_deadline = next_head_deadline(cb);
    if (head_deadline >= 0 && head_deadline - now_mono_ms() < wait_ms)
        wait_ms = head_deadline - now_mono_ms();
    if (wait_ms < 0)
        wait_ms = 0;

    struct timespec ts = {.tv_sec = wait_ms / 1000, .tv_nsec = (long)(wait_ms % 1000) * 1000000L};
    int k = ppoll(cb->pfds, n, &ts, mask);
    if (k < 0 && errno != EINTR)
        return -errno;
    cb->paste_revents = paste && k > 0 ? cb->pfds[0].revents : 0;
    return 0;
}

/* Nothing left to answer: no open connection, none waiting to be accepted. */
static bool server_idle(const struct callback *cb)
{
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(cb->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    if (!info || info->num_connections > 0)
        return false;
    info = MHD_get_daemon_info(cb->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    if (!info)
        return true;
    struct pollfd pfd = {.fd = info->listen_fd, .events = POLLIN};
    return poll(&pfd, 1, 0) == 0;
}

/* Serves requests until the accepted callback's page went out (0), the deadline (monotonic)
 * passed (-ETIMEDOUT), a stop signal arrived (-ECANCELED), or the server failed. */
static int serve_until_answered(struct callback *cb, int64_t deadline,
                                void (*tick)(int64_t remaining_ms, void *userdata), void *userdata,
                                const sigset_t *mask)
{
    int64_t now = now_mono_ms();
    int64_t next_tick = now, drain_deadline = 0;
    for (;;) {
        if (stop_catch_caught())
            return -ECANCELED;
        if (cb->fail < 0)
            return cb->fail;
        now = now_mono_ms();
        int64_t until;
        if (cb->phase != CALLBACK_WAITING) {
            /* Deliver the page before returning: the caller may exit right away. A request
             * that is already on its way (a double click, a favicon) gets its answer too. */
            if (!drain_deadline)
                drain_deadline = now + CALLBACK_DRAIN_MS;
            if ((cb->phase == CALLBACK_ANSWERED && server_idle(cb)) || now >= drain_deadline)
                return 0;
            until = drain_deadline;
        } else {
            if (now >= deadline)
                return -ETIMEDOUT;
            if (tick && now >= next_tick) {
                tick(deadline - now, userdata);
                while (next_tick <= now)
                    next_tick += CALLBACK_TICK_MS;
                now = now_mono_ms();
            }
            until = tick && next_tick < deadline ? next_tick : deadline;
        }
        int r = poll_once(cb, until - now, mask);
        if (r < 0)
            return r;
        if (MHD_run(cb->daemon) != MHD_YES)
            return -EIO;
        drop_slow(cb, now_mono_ms());
        if (cb->paste_revents && cb->phase == CALLBACK_WAITING)
            paste_read(cb);
    }
}

/* The message for a failed wait. */
static int wait_error(int r, int64_t timeout_ms, struct err *e)
{
    switch (r) {
    case -ECANCELED:
        return err_set(e, r, "interrupted while waiting for the browser");
    case -ETIMEDOUT:
        return err_set(e, r, "no answer from the browser within %llds",
                       (long long)((timeout_ms + 999) / 1000));
    case -ENOMEM:
        return err_set(e, r, "cannot keep the sign-in callback: out of memory");
    default:
        return err_set(e, r, "the callback server failed: %s", strerror(-r));
    }
}

int callback_wait(struct callback *cb, const char *expected_state, int64_t timeout_ms,
                  void (*tick)(int64_t remaining_ms, void *userdata), void *userdata,
                  struct callback_result *ret, struct err *e)
{
    struct stop_catch sc;
    struct termios tty_saved;
    bool catching = false, tty_quiet = false;
    int tty_fd = cb ? cb->paste_fd : -1, r;

    if (!cb || !ret || !expected_state || !*expected_state || timeout_ms <= 0)
        return err_set(e, -EINVAL, "callback_wait: invalid arguments");
    r = stop_catch_begin(&sc);
    if (r < 0) {
        err_set(e, r, "cannot wait for the browser: %s", strerror(-r));
        goto out;
    }
    catching = true;
    /* a pasted address holds the code: not shown on the terminal while it is typed */
    if (tty_fd >= 0 && isatty(tty_fd) && tcgetpgrp(tty_fd) == getpgrp() &&
        tcgetattr(tty_fd, &tty_saved) == 0) {
        struct termios quiet = tty_saved;
        quiet.c_lflag &= (tcflag_t) ~(ECHO | ECHONL);
        tty_quiet = tcsetattr(tty_fd, TCSANOW, &quiet) == 0;
    }
    /* One callback per authorization request: a new wait is a new request with a new state,
     * so whatever an earlier wait accepted no longer matters (its state no longer matches). */
    cb->expected_state = expected_state;
    phase_enter(cb, CALLBACK_WAITING);
    cb->fail = 0;

    r = serve_until_answered(cb, now_mono_ms() + timeout_ms, tick, userdata, &sc.old_mask);
    catching = false;
    if (stop_catch_end(&sc) && (r >= 0 || r == -ETIMEDOUT))
        r = -ECANCELED;
    if (r < 0) {
        (void)wait_error(r, timeout_ms, e);
        goto out;
    }

    *ret = cb->result;
    cb->result = (struct callback_result){0};
out:
    if (tty_quiet)
        (void)tcsetattr(tty_fd, TCSANOW, &tty_saved);
    if (catching)
        (void)stop_catch_end(&sc);
    if (cb) {
        cb->expected_state = NULL;
        callback_result_release(&cb->result); /* only left here when the wait failed */
    }
    return r;
}
