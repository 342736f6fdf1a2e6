/* upstream.h - one MCP server the bridge talks to, as a client: a session over a transport.
 *
 * An upstream owns its transport (transport.h: stdio for "command" entries, Streamable HTTP or
 * the 2024-11-05 HTTP+SSE transport for "url" entries) and never asks which one it has. It asks
 * its credentials provider (cred.h) at each connect and when credentials run out or are
 * refused, performs the MCP handshake, and multiplexes requests with ids of its own (the caller
 * puts its own back), reconnecting with backoff. Its states: IDLE, CONNECTING, READY, BACKOFF,
 * FAILED (the entry cannot work as configured), LOGIN (a sign-in is needed), CLOSING, CLOSED.
 * Failures reach callers as -errno codes, never as text to search; a JSON-RPC error answer is
 * no failure, it is delivered as it is. docs/development.md, "Modules in detail", has the
 * states and their transitions, connecting, credentials within a session, requests, every
 * failure code, reconnecting and the routing of the server's messages.
 *
 * The caller owns the upstream (upstream_new, upstream_free). Callbacks come from the loop,
 * never from inside an upstream_* call (a call that fails at once is reported through its
 * callback from the loop too). Any upstream function may be called from inside a callback,
 * upstream_free() included. Not thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

#include "creds/cred.h"
#include "core/jsonscan.h"
#include "core/loop.h"

#define UPSTREAM_PROTOCOL_LATEST "2025-11-25" /* the newest legacy (initialize) revision */
#define UPSTREAM_PROTOCOL_MODERN "2026-07-28" /* the first revision without initialize */
/* NULL-terminated list of the versions the bridge speaks, newest first */
extern const char *const UPSTREAM_PROTOCOL_VERSIONS[];

#define UPSTREAM_CONNECT_TIMEOUT_DEFAULT_MS (15 * 1000)
#define UPSTREAM_REQUEST_TIMEOUT_DEFAULT_MS (60 * 1000)
#define UPSTREAM_MAX_TOTAL_FACTOR           10
#define UPSTREAM_PING_TIMEOUT_MS            (5 * 1000)
#define UPSTREAM_BACKOFF_INITIAL_MS         500
#define UPSTREAM_BACKOFF_MAX_MS             (30 * 1000)
#define UPSTREAM_BACKOFF_RESET_MS           (60 * 1000)
#define UPSTREAM_LIST_MAX_PAGES             1000 /* a server that never ends its pages */
#define UPSTREAM_RECHECK_MS                 (3 * 1000)
#define UPSTREAM_REFRESH_RETRY_MS           (5 * 1000)
#define UPSTREAM_REFRESH_RETRY_MAX_MS       (5 * 60 * 1000)

enum upstream_state {
    UPSTREAM_IDLE,
    UPSTREAM_CONNECTING,
    UPSTREAM_READY,
    UPSTREAM_BACKOFF,
    UPSTREAM_FAILED,
    UPSTREAM_LOGIN, /* the credentials need a sign-in (CRED_LOGIN_REQUIRED) */
    UPSTREAM_CLOSING,
    UPSTREAM_CLOSED,
};

struct upstream;
struct upstream_call;

/* The era a server speaks, known once it is READY (UNKNOWN before; the detection is
 * remembered per process for stdio servers and per origin for HTTP ones). LEGACY: the
 * initialize handshake (2024-11-05 .. 2025-11-25). MODERN: 2026-07-28 and later, every request
 * stamped with _meta, no session. */
enum upstream_era {
    UPSTREAM_ERA_UNKNOWN,
    UPSTREAM_ERA_LEGACY,
    UPSTREAM_ERA_MODERN,
};

/* State changes. error is 0 on the way up; for BACKOFF and FAILED it is the cause (-errno, as
 * for calls) and message says what happened ("server 'x': cannot run 'foo': No such file or
 * directory", "server 'x': connect timed out after 15 s"); NULL otherwise. READY is reported
 * after each successful (re)connect: the caller re-lists tools etc. then. */
typedef void (*upstream_state_fn)(struct upstream *u, enum upstream_state state, int error,
                                  const char *message, void *userdata);
/* A request from the server other than ping. msg is the whole request (borrowed; take a
 * reference to keep it). Answer with upstream_respond(u, gen, id, ...), gen being the session
 * generation given here: an answer for an older session is dropped. */
typedef void (*upstream_request_fn)(struct upstream *u, uint64_t gen, struct json_object *msg,
                                    void *userdata);
/* A notification from the server other than progress (borrowed). */
typedef void (*upstream_notification_fn)(struct upstream *u, const char *method,
                                         struct json_object *msg, void *userdata);
/* stderr lines of a stdio server (for the log; the upstream does not log them itself). */
typedef void (*upstream_stderr_fn)(struct upstream *u, const char *line, size_t len,
                                   void *userdata);

struct upstream_handler {
    upstream_state_fn on_state;               /* optional */
    upstream_request_fn on_request;           /* optional: without it requests get -32601 */
    upstream_notification_fn on_notification; /* optional */
    upstream_stderr_fn on_stderr;             /* optional: without it lines go to the log at
                                                 debug level, prefixed with the server name */
};

/* A hook of the default credentials provider (cred.h): supplies the HTTP request
 * headers ("Name: value", secrets) at each connect and, with force set, after a 401.
 * Asynchronous: it calls done(done_ud, 0, headers, NULL) later from the loop (or -errno with a
 * message for the user), headers NULL-terminated, copied by the callee. It returns 0 when it
 * started, or -errno when it could not. NULL: the entry's "headers" expanded through
 * opts.lookup. */
typedef cred_headers_done_fn upstream_headers_done_fn;
typedef cred_headers_fn upstream_headers_fn;

struct trace;
struct transport_spec;
struct transport_handler;
struct transport;
typedef int (*upstream_transport_open_fn)(const struct transport_spec *spec,
                                          const struct transport_handler *h, void *userdata,
                                          struct transport **ret, struct err *e);

struct upstream_opts {
    struct loop *loop;               /* required */
    struct log *log;                 /* required */
    const struct mcp_server *server; /* required; copied (the config may go away) */
    mcp_lookup_fn lookup;            /* ${VAR} lookup; NULL: the environment */
    void *lookup_userdata;
    upstream_headers_fn headers_fn; /* NULL: see above */
    void *headers_userdata;
    /* Where the credentials come from (cred.h); taken over by upstream_new() when it
     * succeeds (the upstream frees it). NULL: the default provider over lookup and
     * headers_fn. */
    struct cred_provider *credentials;
    /* Opens the connection (transport.h); NULL: transport_open(), the wire the entry's "type"
     * names. Where a test's fake transport plugs in. */
    upstream_transport_open_fn transport_open;
    struct json_object *client_capabilities; /* sent in initialize; NULL: {} (reference taken) */
    struct json_object *client_info;         /* NULL: {"name":"mcp-bridge","version":VERSION} */
    const char *protocol_version;            /* offered; NULL: UPSTREAM_PROTOCOL_LATEST */
    int64_t connect_timeout_ms;              /* 0: UPSTREAM_CONNECT_TIMEOUT_DEFAULT_MS */
    int64_t request_timeout_ms;              /* 0: the entry's timeout, else the default */
    bool no_reconnect;                       /* one-shot clients (mcp-bridge call/test): a lost
                                            connection or failed connect goes to FAILED, which
                                            is then logged at debug level only: the caller
                                            reports it, as its error */
    /* The protocol trace (core/trace.h) each message to and from the server is recorded in
     * (borrowed: it outlives the upstream); NULL: none. */
    struct trace *trace;
};

/* Creates the upstream in IDLE; nothing starts before upstream_connect(). -EINVAL with a
 * message for an entry that has an error (server->error is quoted). Caller frees. */
int upstream_new(const struct upstream_opts *opts, const struct upstream_handler *h, void *userdata,
                 struct upstream **ret, struct err *e) _must_check_;

/* Starts connecting (from IDLE, BACKOFF or FAILED; a no-op in CONNECTING or READY). */
void upstream_connect(struct upstream *u);

/* Back to IDLE (from CONNECTING, READY or BACKOFF; a no-op otherwise): the transport is shut
 * down as by upstream_close() (stdio: the child is stopped and reaped; HTTP: the session is
 * DELETEd), calls in flight fail with -ECONNRESET and waiting ones with -ENOTCONN, no
 * reconnect is scheduled. No state callback (the caller asked). The next upstream_connect() or
 * upstream_call() connects again, as the first time (the credentials provider is kept). What
 * an idle server costs: no process, no socket. */
void upstream_disconnect(struct upstream *u);

/* Closes: calls in flight and waiting fail with -ESHUTDOWN, a credentials request is
 * cancelled, the transport is shut down (stdio: close stdin, SIGTERM, SIGKILL as in
 * stdio_child.h; HTTP: DELETE of the session), CLOSING, then CLOSED once that is over.
 * Idempotent. */
void upstream_close(struct upstream *u);

/* Frees at once (stdio servers still running are killed and reaped), with every call and
 * listing still open: their handles are invalid afterwards; a credentials request is
 * cancelled. No callback. The memory itself goes after the loop iteration (loop_release()).
 * NULL-safe. */
void upstream_free(struct upstream *u);

enum upstream_state upstream_state(const struct upstream *u);
/* The configuration entry (the upstream's own copy). */
const struct mcp_server *upstream_server(const struct upstream *u);
/* The last failure's message (NULL when none). Borrowed, valid until the next state change. */
const char *upstream_last_error(const struct upstream *u);

/* From the server's InitializeResult; NULL before the first READY. Borrowed, valid until the
 * next state change (a reconnect replaces them). */
struct json_object *upstream_server_capabilities(const struct upstream *u);
struct json_object *upstream_server_info(const struct upstream *u);
const char *upstream_instructions(const struct upstream *u);
const char *upstream_protocol_version(const struct upstream *u);
/* Whether capabilities.<name> is present (e.g. "tools", "resources", "prompts", "logging",
 * "completions"). */
bool upstream_has_capability(const struct upstream *u, const char *name);

/* The era of the server (above); UNKNOWN before the first READY. */
enum upstream_era upstream_era(const struct upstream *u);

/* Session generation: counts READY transitions (0 before the first). */
uint64_t upstream_generation(const struct upstream *u);

/* The answer to a call. On success error is 0 and response is the whole JSON-RPC response
 * (borrowed; result or error inside, id the upstream's); otherwise response is NULL, error is
 * -errno as listed above and message a sentence for the user ("server 'x' did not answer
 * within 60 s"). The call is freed after this returns. */
typedef void (*upstream_response_fn)(struct upstream_call *c, struct json_object *response,
                                     int error, const char *message, void *userdata);
/* A notifications/progress for the call, its params with the caller's own token put back
 * (borrowed). */
typedef void (*upstream_progress_fn)(struct upstream_call *c, struct json_object *params,
                                     void *userdata);

/* Sends a request. params may be NULL (a reference is taken; the upstream may change the
 * progress token in its copy: the caller must not share params with other calls). timeout_ms
 * 0: the upstream's request timeout. progress may be NULL. The call handle stays valid until
 * its response callback has returned or upstream_call_cancel(). Returns -ENOMEM only; other
 * failures come through fn. */
int upstream_call(struct upstream *u, const char *method, struct json_object *params,
                  int64_t timeout_ms, upstream_response_fn fn, upstream_progress_fn progress,
                  void *userdata, struct upstream_call **ret) _must_check_;

/* Flags of upstream_call_ex(). */
enum upstream_call_flags {
    /* A modern server's InputRequiredResult ("resultType": "input_required") is delivered to
     * fn as it is: the caller (a modern agent behind the bridge) answers it and sends the
     * request again itself. Without it the upstream satisfies it: each of its inputRequests
     * goes to on_request as a server request (an id of the upstream's own), their answers
     * (upstream_respond) are sent back with the request again under a new id, "requestState"
     * byte for byte, at most UPSTREAM_INPUT_MAX_ROUNDS rounds; fn sees only the final result. */
    UPSTREAM_CALL_INPUT_PASS = 1u << 0,
};
#define UPSTREAM_INPUT_MAX_ROUNDS 10

/* upstream_call() with flags (enum upstream_call_flags). */
int upstream_call_ex(struct upstream *u, const char *method, struct json_object *params,
                     int64_t timeout_ms, unsigned flags, upstream_response_fn fn,
                     upstream_progress_fn progress, void *userdata,
                     struct upstream_call **ret) _must_check_;

/* A result passed on as the server wrote it: text[0..len) is its whole message and scan its
 * envelope (core/jsonscan.h; the id in it is the upstream's). Borrowed for the callback's time;
 * the call is freed after it returns, as after an upstream_response_fn. */
typedef void (*upstream_raw_fn)(struct upstream_call *c, const char *text, size_t len,
                                const struct jscan *scan, void *userdata);

/* Results of c that the upstream passes on unchanged (a result, not an error, of a legacy
 * session, not traced) go to raw instead of fn, without a json-c tree; everything else still
 * goes to fn. docs/development.md, "The pass-through". */
void upstream_call_set_raw(struct upstream_call *c, upstream_raw_fn raw);

/* The call a server request (as given to on_request) belongs to: over HTTP the call on whose
 * response stream it came; otherwise the only call in flight on the upstream that may ask for
 * input (tools/call, resources/read, prompts/get); else NULL. For an input request unpacked
 * from an InputRequiredResult, the call that got it. */
struct upstream_call *upstream_related_call(struct upstream *u, struct json_object *msg);

/* The caller gives up on a call: no callback follows. If it was sent, notifications/cancelled
 * with its id and reason (NULL: none) is sent upstream. NULL-safe. */
void upstream_call_cancel(struct upstream_call *c, const char *reason);

/* Sends a notification (params may be NULL; reference taken). Dropped (0) when not READY:
 * notifications are not queued across reconnects. -ENOMEM, or the transport's error. */
int upstream_notify(struct upstream *u, const char *method, struct json_object *params);

/* Answers a server request received through on_request: exactly one of result and error
 * (an {"code","message"[,"data"]} object) non-NULL; references taken. Dropped when gen is not
 * the current generation. */
int upstream_respond(struct upstream *u, uint64_t gen, struct json_object *id,
                     struct json_object *result, struct json_object *error);

/* Fetches a whole list through every page (tools/list -> "tools", resources/list ->
 * "resources", resources/templates/list -> "resourceTemplates", prompts/list -> "prompts"):
 * cursors passed back opaque until a page has no nextCursor, at most UPSTREAM_LIST_MAX_PAGES.
 * fn gets a new array of every item (caller puts it; NULL on failure, with error and message as
 * for calls). A JSON-RPC error answer is a failure here (-EPROTO; -ENOSYS for -32601), with the
 * server's message. */
typedef void (*upstream_list_fn)(struct upstream *u, struct json_object *items, int error,
                                 const char *message, void *userdata);
struct upstream_list;
int upstream_list(struct upstream *u, const char *method, const char *key, upstream_list_fn fn,
                  void *userdata, struct upstream_list **ret) _must_check_;
/* Stops a listing; no callback follows. NULL-safe. */
void upstream_list_cancel(struct upstream_list *l);
/* The shortest "ttlMs" (how long the list may be kept, in ms) of the pages answered so far, or
 * -1 when none gave one; in the callback, the whole list's. NULL: -1. */
int64_t upstream_list_ttl_ms(const struct upstream_list *l);
