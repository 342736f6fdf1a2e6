/* transport.h - the wire under an upstream session: one connection to one MCP server, behind a
 * small ops table (as curl's struct Curl_ssl), so the session code never asks which one it has.
 *
 * Two implementations: stdio_child.c (a child process; transport_stdio.c opens it) and
 * transport_http.c (Streamable HTTP and the legacy HTTP+SSE transport, http_conn.h); a
 * test plugs a fake one in by filling a struct transport with its own ops. transport_open()
 * picks the implementation from the entry's "type". Everything that is particular to one wire
 * - how its errors read, which of its events end the connection, reopening an HTTP event
 * stream that broke - is decided in its file; the session code sees messages, errors with the
 * tag of the request they belong to, and the end of the connection.
 *
 * Events come from the loop through struct transport_handler, never from inside an op; any op,
 * free included, may be called from inside them. Not thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

#include "core/loop.h"

enum transport_send_flags {
    TRANSPORT_INITIALIZE = 1 << 0, /* the initialize request (HTTP: its session id is kept) */
    /* a 2026-07-28 request (HTTP: no session headers, a refusal's JSON-RPC error delivered as
     * the answer, no resumption: http_conn.h's HTTP_CONN_MODERN) */
    TRANSPORT_MODERN = 1 << 1,
};

/* What the transport reports; userdata is the one given to transport_open(). */
struct transport_handler {
    /* One message from the server (borrowed, not NUL-terminated, valid during the call). */
    void (*on_message)(const char *msg, size_t len, void *userdata);
    /* A request sent with tag failed (-errno: -ESTALE the session is gone, -EACCES a 401,
     * -EPERM a 403, -ECONNREFUSED ...); tag 0: an error tied to no request (a notification,
     * the server's own event stream). The connection goes on unless on_lost follows. */
    void (*on_error)(int error, uint64_t tag, void *userdata);
    /* The connection is over (the child exited or closed its output, the legacy event stream
     * ended): reason -errno (-ECONNRESET when none in particular) and a sentence saying what
     * happened ("the server exited or closed its output"), without the server's name. */
    void (*on_lost)(int reason, const char *why, void *userdata);
    /* One stderr line of a child (borrowed, not NUL-terminated). Optional for a transport. */
    void (*on_stderr)(const char *line, size_t len, void *userdata);
    /* After transport_shutdown() returned 0, or after on_lost: the transport has nothing left
     * to wait for and may be freed. */
    void (*on_done)(void *userdata);
    /* The wire could not be started after all: transport_open() returned before it could know
     * (a child's exec is reported from the loop). error and message are what transport_open()
     * would have failed with ("cannot run 'CMD': No such file or directory"); no message and
     * no on_lost follow, on_done does. Optional: without it, on_lost(error, message). */
    void (*on_open_failed)(int error, const char *message, void *userdata);
};

struct transport;
struct dpop_key; /* credkit/dpop.h */
struct rblock;   /* core/framing.h: a read buffer held by a big request's params */

struct transport_ops {
    const char *name; /* "stdio", "http" */
    /* Sends one JSON-RPC message (the caller's; copied when it must wait). tag: the request's
     * id for requests (errors come back with it), 0 otherwise. -E2BIG, -ENOBUFS, -ESHUTDOWN,
     * -ENOMEM, or the wire's -errno. */
    int (*send)(struct transport *t, const char *msg, size_t len, unsigned flags, uint64_t tag);
    /* send with extra headers ("Name: value", NULL-terminated) for the wire to add (HTTP).
     * Optional: without it, send (the wire has no headers). */
    int (*send_hdrs)(struct transport *t, const char *msg, size_t len, unsigned flags, uint64_t tag,
                     const char *const *hdrs);
    /* send of a message in pieces (at most FRAMING_SENDV_MAX - 1): big pieces lying in held
     * (may be NULL) wait in the wire's queue as references to that buffer, not copies
     * (framing_sendv_held(); HTTP: read by libcurl where they lie, http_conn_sendv()). Optional. */
    int (*sendv)(struct transport *t, const struct iovec *iov, int n, struct rblock *held,
                 unsigned flags, uint64_t tag);
    /* send of *msg (malloc'd, cap > len bytes), taken instead of copied by a wire that keeps a
     * message until it is sent (HTTP: the request's body): *msg is NULL when it was taken,
     * whatever the result; what is left is the caller's. Optional: without it, send. */
    int (*send_take)(struct transport *t, char **msg, size_t len, size_t cap, unsigned flags,
                     uint64_t tag);
    /* Gives up on the request sent with tag by the wire's own means (HTTP: its answer stream
     * is closed). Optional: NULL when the wire has none (stdio: notifications/cancelled). */
    void (*abort)(struct transport *t, uint64_t tag);
    /* The response to the request sent with tag has arrived (stop resuming its answer).
     * Optional. */
    void (*answered)(struct transport *t, uint64_t tag);
    /* The session is up: version is the negotiated protocol version; the transport opens
     * whatever stream it has for the server's own messages. Optional. -errno is for the log. */
    int (*session_open)(struct transport *t, const char *version);
    /* Replaces the request headers ("Name: value", secrets, copied) for every request started
     * after the call, within the same session. Optional (NULL: the wire has no headers). */
    int (*set_headers)(struct transport *t, const char *const *headers);
    /* The DPoP key (a new reference; NULL: none) that proves the "Authorization: DPoP" token
     * of headers on every request started after the call, each with a fresh proof (cred_dpop.h).
     * Optional (NULL: the wire has no headers). */
    int (*set_dpop)(struct transport *t, struct dpop_key *key, const char *const *headers);
    /* Ends the connection politely (a child: stdin closed, SIGTERM, SIGKILL; HTTP: DELETE of
     * the session). 0: on_done follows; < 0: nothing to wait for. */
    int (*shutdown)(struct transport *t);
    /* Frees at once, without a callback. */
    void (*free)(struct transport *t);
    /* The server's challenge with its most recent refusal (HTTP: WWW-Authenticate of a 401 or
     * 403), borrowed until the next op; NULL when none. Optional. */
    const char *(*challenge)(const struct transport *t);
    /* A sentence for a transport error, for messages ("HTTP 404 Not Found: check the URL");
     * NULL for an error the wire has no words of its own for. Optional. */
    const char *(*strerror)(int error);
    /* While on_message runs: the tag of the request on whose answer the message came (HTTP: a
     * POST's response stream), 0 when none (the server's own stream). Optional (NULL: the wire
     * cannot tell, as stdio). */
    uint64_t (*message_tag)(const struct transport *t);
};

/* Every implementation embeds this first. */
struct transport {
    const struct transport_ops *ops;
};

/* What a connection is opened with. Everything is borrowed for the call only. */
struct transport_spec {
    struct loop *loop;
    struct log *log;
    const struct mcp_server *server;
    /* ${VAR} values for the entry's url and env (the credentials' answer, not a blocking
     * lookup); errors name the field ("url: ..."). */
    mcp_lookup_fn lookup;
    void *lookup_userdata;
    const char *const *headers; /* HTTP request headers (secrets); NULL */
    struct dpop_key *dpop;      /* HTTP: the key of headers' DPoP token (set_dpop); NULL */
    int64_t timeout_ms;         /* HTTP: the hard timeout of each request */
    size_t max_message;         /* both: the message size bound */
};

/* Opens the connection the entry describes (a child is started, an HTTP client set up; nothing
 * is sent yet). -errno with a message in e (never a secret value). Caller frees with
 * transport_free(). */
int transport_open(const struct transport_spec *spec, const struct transport_handler *h,
                   void *userdata, struct transport **ret, struct err *e) _must_check_;

int transport_stdio_open(const struct transport_spec *spec, const struct transport_handler *h,
                         void *userdata, struct transport **ret, struct err *e) _must_check_;
int transport_http_open(const struct transport_spec *spec, const struct transport_handler *h,
                        void *userdata, struct transport **ret, struct err *e) _must_check_;

/* The ops, NULL-safe where that makes sense (a NULL transport: -ENOTCONN). */
int transport_send(struct transport *t, const char *msg, size_t len, unsigned flags,
                   uint64_t tag) _must_check_;
/* transport_send() of a malloc'd message (cap > len bytes) a wire may take instead of copying
 * (ops.send_take): *msg is NULL when taken; what is left is the caller's to free. */
int transport_send_take(struct transport *t, char **msg, size_t len, size_t cap, unsigned flags,
                        uint64_t tag) _must_check_;
/* transport_send() with extra headers for a wire that has them (ignored by one that has not). */
int transport_send_hdrs(struct transport *t, const char *msg, size_t len, unsigned flags,
                        uint64_t tag, const char *const *hdrs) _must_check_;
/* Whether the wire takes a message in pieces (the sendv op). */
bool transport_can_sendv(const struct transport *t);
/* The sendv op; -EOPNOTSUPP for a wire without it. */
int transport_sendv(struct transport *t, const struct iovec *iov, int n, struct rblock *held,
                    unsigned flags, uint64_t tag) _must_check_;
/* Whether the wire can give up on a request by itself (transport_abort()). */
bool transport_can_abort(const struct transport *t);
void transport_abort(struct transport *t, uint64_t tag);
void transport_answered(struct transport *t, uint64_t tag);
int transport_session_open(struct transport *t, const char *version);
/* -EOPNOTSUPP when the wire has no headers. */
int transport_set_headers(struct transport *t, const char *const *headers) _must_check_;
/* The set_dpop op; 0 for a NULL key on a wire without it, -EOPNOTSUPP for a key. */
int transport_set_dpop(struct transport *t, struct dpop_key *key,
                       const char *const *headers) _must_check_;
int transport_shutdown(struct transport *t);
void transport_free(struct transport *t);
/* NULL when the wire has none (or t is NULL). */
const char *transport_challenge(const struct transport *t);
/* The message_tag op; 0 when the wire cannot tell (or t is NULL). */
uint64_t transport_message_tag(const struct transport *t);
/* A sentence for error: the transport's own words, else the generic ones (NULL t is fine). */
const char *transport_strerror(const struct transport *t, int error);
