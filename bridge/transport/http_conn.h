/* http_conn.h - an MCP server spoken to over Streamable HTTP (mcp-client.md 1).
 *
 * The HTTP sibling of stdio_child.h, driven entirely by the loop's libcurl multi handle:
 * no call here blocks. Every message the caller sends is one POST to the endpoint, with
 * "Accept: application/json, text/event-stream", "Content-Type: application/json", the
 * caller's headers (spec.headers: "Name: value" strings such as "Authorization: Bearer ...",
 * treated as secrets: copies are wiped before they are freed) and, once known, MCP-Session-Id
 * and MCP-Protocol-Version. The answer is one of:
 *   - 202, or 200 with an empty body: nothing (notifications and responses);
 *   - application/json: one message, or a JSON array (2025-03-26 servers) of messages, each
 *     delivered on its own;
 *   - text/event-stream: every "message" event with non-empty data is a message (events with
 *     empty data - priming, keep-alive - are skipped, their id remembered by the parser);
 *   - anything else: on_error for that request (-EPROTO), never a guess.
 * Media types are compared ignoring parameters and case. Messages arrive as the server sends
 * them, in whatever order; routing by JSON-RPC id is the caller's job.
 *
 * Sessions: the MCP-Session-Id of the response to the POST the caller marks as initialize
 * (and only that one) is kept, after checking it is visible ASCII (0x21-0x7E; else -EPROTO),
 * and sent on every later request; an initialize POST never carries the old one. A 404 to a
 * request that carried a session id is on_error(-ESTALE): the session is gone, and the caller
 * re-initializes (initialize, notifications/initialized, http_conn_open_stream()) and
 * retries the request once (mcp-client.md 1). A 400 to a request that carried a session id is
 * -ESTALE too: the TypeScript SDK's servers (server-everything among them) answer an unknown
 * session with 400 "No valid session ID provided"; re-initializing once is the only way back,
 * and the single retry bounds the cost when the 400 had another cause.
 *
 * Sessions change only through an initialize answer: one without MCP-Session-Id leaves no
 * session (a stateless server), and a new session drops the old one's GET stream, its pending
 * reconnection and its last event id (they belong to the old session).
 *
 * http_conn_open_stream() opens the GET stream for server-initiated messages; a 405 means
 * the server has none (benign: on_close(0)). Its GET starts once the notifications and
 * responses POSTed before the call have been answered (notifications/initialized got its
 * 202, mcp-client.md 1), and the POSTs sent after the call start only once the GET has
 * started, so that no request reaches the server before the stream that may carry its answer.
 * When the stream ends after the server gave a "retry" or an event id, it is reopened after
 * retry ms (HTTP_CONN_RETRY_DEFAULT_MS when only an id was given) with Last-Event-ID, on a
 * loop timer; otherwise on_close tells that it is over.
 *
 * Bounds: each message (a JSON body, an SSE line or event) is at most spec.max_message bytes
 * (-E2BIG); every POST and DELETE has a hard timeout of spec.timeout_ms, SSE answers included
 * (an MCP-level timeout with progress extension is the caller's, below that maximum); the GET
 * stream has only a connect timeout. Connections are reused (HTTP/1.1 keep-alive, through the
 * multi handle); redirects are not followed; only http and https URLs are accepted.
 *
 * Resuming a POST's answer (2025-11-25 polling): a request is sent with a non-zero tag, and the
 * caller calls http_conn_answered(tag) when its response has arrived (on any stream). When
 * the SSE answer to a request ends - cleanly or broken - before it was answered and an event id
 * was seen on it, the stream is resumed after the server's retry (HTTP_CONN_RETRY_DEFAULT_MS
 * when none was given) with GET + "Last-Event-ID: <last id of that stream>", again and again
 * while events with ids keep coming, within the POST's own hard timeout; messages from it are
 * delivered as any others, and the resumed GET is stopped once the tag is answered. An answer
 * that ends unanswered with no event id to resume from is on_error(-ECONNRESET) for that
 * request (the response is lost; the caller must not wait for its timeout). So is a resumption
 * that brought no event with an id (the same Last-Event-ID would bring nothing either) or was
 * answered 405; another refusal is its status's error (-ESTALE for a 404 with the session,
 * -EACCES ...), past the hard timeout -ETIMEDOUT. Once a tag is answered, nothing more is
 * reported about that request (not even its POST's late error).
 *
 * Legacy HTTP+SSE (2024-11-05): when the POST marked initialize is answered 400, 404 or 405
 * (401 and 403 stay -EACCES: authorization, not transport), or from the start with
 * spec.legacy_sse, the upstream switches to the old transport by itself: GET url with
 * "Accept: text/event-stream"; the first "endpoint" event gives the URI to POST to (resolved
 * against the SSE URL; same origin only, else -EPROTO); the pending initialize is then POSTed
 * there, and every later message too; answers arrive as "message" events on that one GET
 * stream (a POST's own body is ignored beyond its status). In legacy mode the GET stream is the
 * connection: http_conn_open_stream() is a no-op (0), and when the stream ends, on_close
 * reports it (-ECONNRESET, or the error) and the connection is over - the caller reconnects
 * with a new upstream. http_conn_is_legacy() tells which transport is in use.
 * Messages sent before the endpoint is known wait for it, in order (HTTP_CONN_PENDING_MAX
 * of them); when it does not come within timeout_ms, each fails with -ETIMEDOUT and on_close
 * says -ETIMEDOUT. Messages that still wait when the stream ends, or are sent after that,
 * fail with the stream's reason. After a fallback, a GET refused 400, 404 or 405 as well
 * reports the initialize POST's own error (the server speaks neither transport).
 *
 * Callbacks come from the loop, never from inside an http_conn_* call; any function here,
 * http_conn_free() included, may be called from inside them. Not thread-safe.
 *
 * Written as http_conn.c (this interface, sessions, the GET stream), http_req.c (one
 * transfer), http_resume.c (resuming an answer) and http_legacy.c (the 2024-11-05 transport),
 * which share the private http_int.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "core/loop.h"

#define HTTP_CONN_TIMEOUT_DEFAULT_MS  (60 * 1000)
#define HTTP_CONN_MAX_MESSAGE_DEFAULT (16u * 1024u * 1024u)
#define HTTP_CONN_RETRY_DEFAULT_MS    1000
#define HTTP_CONN_CLOSE_TIMEOUT_MS    (5 * 1000) /* the DELETE, at most */
#define HTTP_CONN_SESSION_ID_MAX      1024
#define HTTP_CONN_PENDING_MAX         64 /* legacy: messages waiting for the endpoint */

struct http_conn;

struct http_conn_spec {
    const char *url;            /* required: http:// or https:// */
    const char *const *headers; /* "Name: value" strings (secrets), NULL-terminated; NULL */
    int64_t timeout_ms;         /* 0: HTTP_CONN_TIMEOUT_DEFAULT_MS */
    size_t max_message;         /* 0: HTTP_CONN_MAX_MESSAGE_DEFAULT */
    bool legacy_sse;            /* "type": "sse": the 2024-11-05 transport from the start */
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
 * callbacks included. -EINVAL for an empty
 * message, -E2BIG above max_message, -ESHUTDOWN after http_conn_close(), -ENOBUFS when
 * HTTP_CONN_PENDING_MAX messages already wait for a legacy endpoint, -ENOMEM. */
int http_conn_send(struct http_conn *u, const char *msg, size_t len, unsigned flags,
                   uint64_t tag) _must_check_;

/* http_conn_send() with extra request headers ("Name: value", NULL-terminated, copied;
 * NULL: none), sent after the caller's and before ours. */
int http_conn_send_ex(struct http_conn *u, const char *msg, size_t len, unsigned flags,
                      uint64_t tag, const char *const *hdrs) _must_check_;

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

/* The WWW-Authenticate value of the most recent answer of 401 or 403 (the first such header of
 * it, as sent), or NULL when there was none or it had none. Borrowed, valid until the next call
 * into the upstream; read it from on_error (or on_close) to see why a request was refused. */
const char *http_conn_challenge(const struct http_conn *u);

/* Sends "MCP-Protocol-Version: version" on every later request (copied; visible ASCII only,
 * else -EINVAL). */
int http_conn_set_protocol_version(struct http_conn *u, const char *version) _must_check_;

/* The session id ("" before one is known). Borrowed, valid until the next callback. */
const char *http_conn_session_id(const struct http_conn *u);

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
