/* http_conn.h - an MCP server spoken to over Streamable HTTP (mcp-client.md 1).
 *
 * The HTTP sibling of stdio_child.h, driven entirely by the loop's libcurl multi handle:
 * no call here blocks. Every message the caller sends is one POST to the endpoint; its answer
 * (nothing, JSON or an event stream) is delivered message by message, in the order the server
 * sends them (routing by JSON-RPC id is the caller's job). It keeps the session
 * (MCP-Session-Id) and reports a forgotten one as -ESTALE, opens the GET stream for the
 * server's own messages, resumes an interrupted SSE answer with Last-Event-ID (2025-11-25
 * polling), and falls back by itself to the 2024-11-05 HTTP+SSE transport. Every message is
 * bounded in size and every POST in time. The caller's headers are secrets: copies are wiped
 * before they are freed. docs/development.md, "Modules in detail", has the answers, sessions,
 * the GET stream, the bounds, resumption and the legacy transport in full.
 *
 * Callbacks come from the loop, never from inside an http_conn_* call; any function here,
 * http_conn_free() included, may be called from inside them. Not thread-safe. Written as
 * http_conn.c (this interface, sessions, the GET stream), http_req.c (one transfer),
 * http_pool.c (the handles, header list and buffer the transfers reuse), http_resume.c
 * (resuming an answer) and http_legacy.c (the 2024-11-05 transport), which share the private
 * http_int.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "credkit/err.h"
#include "credkit/http.h"
#include "credkit/macro.h"

#include "core/loop.h"

#define HTTP_CONN_TIMEOUT_DEFAULT_MS  (60 * 1000)
#define HTTP_CONN_MAX_MESSAGE_DEFAULT (16u * 1024u * 1024u)
#define HTTP_CONN_RETRY_DEFAULT_MS    1000
#define HTTP_CONN_CLOSE_TIMEOUT_MS    (5 * 1000) /* the DELETE, at most */
#define HTTP_CONN_SESSION_ID_MAX      1024
#define HTTP_CONN_PENDING_MAX         64 /* legacy: messages waiting for the endpoint */

struct http_conn;
struct cred_sign;
struct rblock; /* core/rblock.h */

struct http_conn_spec {
    const char *url;            /* required: http:// or https:// */
    const char *const *headers; /* "Name: value" strings (secrets), NULL-terminated; NULL */
    int64_t timeout_ms;         /* 0: HTTP_CONN_TIMEOUT_DEFAULT_MS */
    size_t max_message;         /* 0: HTTP_CONN_MAX_MESSAGE_DEFAULT */
    bool legacy_sse;            /* "type": "sse": the 2024-11-05 transport from the start */
    /* The entry's TLS settings (mcp_tls.h): its "caFile" CAs instead of the system's roots,
     * its client certificate. Taken: http_conn_new() moves them out (an empty value is left,
     * which the caller still releases); NULL: libcurl's defaults. */
    struct http_tls *tls;
    /* Asked for more headers of each request just before it goes out (the entry's
     * "requestHeadersCommand", cred_sign.h): a failure fails that request with -ECOMM. NULL:
     * none. Borrowed: it must outlive the upstream (its runs are only cancelled after
     * http_conn_free()). */
    struct cred_sign *sign;
};

/* One message from the server (a POST's answer or the GET stream); borrowed, valid during the
 * call only, not NUL-terminated. */
typedef void (*http_conn_message_fn)(const char *msg, size_t len, void *userdata);
/* The GET stream is over and will not be reopened by itself: 0 when the server has none (405)
 * or ended it without a retry hint, else -errno. POSTs go on working; the caller may call
 * http_conn_open_stream() again. */
typedef void (*http_conn_close_fn)(int reason, void *userdata);
/* A request failed: error is -errno (-ESTALE: the session is gone, see above; -EPROTO: an
 * answer that breaks the transport; -ETIMEDOUT; -E2BIG; -ECONNREFUSED; -EACCES for 401, -EPERM
 * for 403 (http_conn_challenge() then holds the server's WWW-Authenticate) ...). tag is the
 * one given to http_conn_send() for that request, 0 for an error not tied to one request
 * (the GET stream) or for a message sent with tag 0 (notifications, responses). Messages
 * already delivered from that answer stay delivered. */
typedef void (*http_conn_error_fn)(int error, uint64_t tag, void *userdata);
/* http_conn_close() is over: 0, or the DELETE's -errno (for the log only). */
typedef void (*http_conn_done_fn)(int result, void *userdata);

struct http_conn_handler {
    http_conn_message_fn on_message; /* required */
    http_conn_close_fn on_close;     /* optional */
    http_conn_error_fn on_error;     /* optional */
};

/* Sets the upstream up; nothing is sent yet. Nothing in spec is kept (the headers are copied);
 * h is copied. -EINVAL with a message in e for a bad URL or header (the header's value is never
 * quoted). Caller frees with http_conn_free(), before loop_free(). */
int http_conn_new(struct loop *l, const struct http_conn_spec *spec,
                  const struct http_conn_handler *h, void *userdata, struct http_conn **ret,
                  struct err *e) _must_check_;

enum http_conn_send_flags {
    HTTP_CONN_INITIALIZE = 1 << 0, /* the initialize request: its MCP-Session-Id is kept */
    /* a 2026-07-28 request: no MCP-Session-Id and no MCP-Protocol-Version of the session (the
     * caller's extra headers carry its own); a 400 or 404 answer whose body is a JSON-RPC
     * error is delivered as that message (with the request's tag as its id when it has none)
     * instead of an error; an SSE answer that ends before the response is not resumed but is
     * on_error(-ECONNRESET) at once (the revision has no resumption) */
    HTTP_CONN_MODERN = 1 << 1,
};

/* POSTs one JSON-RPC message (copied). flags: HTTP_CONN_INITIALIZE. tag: non-zero for a
 * request, which names it in on_error and whose answer may be resumed (see above; the caller's
 * own request id works well), 0 for notifications and responses. The POST starts from the
 * loop (a later iteration, never inside this call), so this may be called from anywhere,
 * callbacks included. hdrs: extra request headers for this message ("Name: value",
 * NULL-terminated, copied; NULL: none), sent after the caller's and before ours. -EINVAL for an
 * empty message, -E2BIG above max_message, -ESHUTDOWN after http_conn_close(), -ENOBUFS when
 * HTTP_CONN_PENDING_MAX messages already wait for a legacy endpoint, -ENOMEM. */
int http_conn_send(struct http_conn *u, const char *msg, size_t len, unsigned flags, uint64_t tag,
                   const char *const *hdrs) _must_check_;
/* http_conn_send() of *msg (malloc'd, cap > len bytes) without a copy: the transfer takes it and
 * libcurl reads the body from it until the transfer is over. *msg is set to NULL when it was
 * taken, whatever the result; what is left in *msg is the caller's to free. */
int http_conn_send_take(struct http_conn *u, char **msg, size_t len, size_t cap, unsigned flags,
                        uint64_t tag, const char *const *hdrs) _must_check_;
/* http_conn_send() of a message in pieces (n at most FRAMING_SENDV_MAX, empty ones allowed): the
 * pieces lying in held (a read buffer the caller holds a reference to, rblock.h; NULL: none)
 * are not copied but read by libcurl where they lie until the transfer is over (or sent again:
 * the same bytes), held keeping a reference of the transfer's meanwhile; the others are copied.
 * With a requestHeadersCommand (spec.sign), which signs the body whole, the message is copied
 * whole. The same errors. */
int http_conn_sendv(struct http_conn *u, const struct iovec *iov, int n, struct rblock *held,
                    unsigned flags, uint64_t tag, const char *const *hdrs) _must_check_;

/* Stops the POST sent with tag (its answer stream closed: how a 2026-07-28 client cancels a
 * request over HTTP); nothing more is reported about it. Unknown tags are ignored. */
void http_conn_abort(struct http_conn *u, uint64_t tag);

/* The response to the request sent with tag has arrived: stop waiting for (or resuming) its
 * answer stream. Unknown tags are ignored. */
void http_conn_answered(struct http_conn *u, uint64_t tag);

/* Whether the upstream speaks the 2024-11-05 HTTP+SSE transport (after a fallback or by
 * spec.legacy_sse). */
bool http_conn_is_legacy(const struct http_conn *u);

/* Replaces the headers of spec.headers ("Name: value" strings, NULL-terminated; NULL for none)
 * for every request started after the call: copied as secrets, the old copies wiped. The
 * session (MCP-Session-Id) is kept, so a new token needs no new MCP session; a running GET
 * stream keeps the headers it was started with until it is reopened. -EINVAL for a string that
 * is not "Name: value" (the headers are then left as they were), -ENOMEM. */
int http_conn_set_headers(struct http_conn *u, const char *const *headers) _must_check_;

/* While on_message runs: the tag of the request on whose answer (its POST's stream, or a
 * resumption of it) the message came, so that a server request names the request it belongs
 * to; 0 for the GET stream, the legacy transport's stream and requests sent with tag 0. */
uint64_t http_conn_message_tag(const struct http_conn *u);

/* How many libcurl easy handles the upstream has created: its transfers reuse idle ones
 * (docs/development.md, "The HTTP path's reuse rules"), so sequential requests create one. For
 * the tests and the bench. */
size_t http_conn_easy_inits(const struct http_conn *u);

/* The WWW-Authenticate value of the most recent answer of 401 or 403 (the first such header of
 * it, as sent), or NULL when there was none or it had none. Borrowed, valid until the next call
 * into the upstream; read it from on_error (or on_close) to see why a request was refused. */
const char *http_conn_challenge(const struct http_conn *u);

/* Sends "MCP-Protocol-Version: version" on every later request (copied; visible ASCII only,
 * else -EINVAL). */
int http_conn_set_protocol_version(struct http_conn *u, const char *version) _must_check_;

/* Opens the GET stream (see above). -EALREADY while it is open or waiting to reconnect,
 * -ESHUTDOWN after http_conn_close(). */
int http_conn_open_stream(struct http_conn *u) _must_check_;

/* Ends the session: stops every transfer (no callback for them), then, if a session id is
 * known, sends DELETE with it (405 and 404 are fine), bounded by
 * min(timeout_ms, HTTP_CONN_CLOSE_TIMEOUT_MS); then done(result) once, from the loop. No
 * other callback follows. Later calls: -ESHUTDOWN. The caller still frees. */
int http_conn_close(struct http_conn *u, http_conn_done_fn done) _must_check_;

/* Frees without any further callback: nothing is reported from the call on, and the transfers
 * stop and the memory goes after the current iteration (loop_release(); at loop_free() at the
 * latest), so this is safe from inside any of its callbacks. NULL-safe. */
void http_conn_free(struct http_conn *u);
