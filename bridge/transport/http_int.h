/* http_int.h - what the files of the HTTP upstream share; private to them.
 *
 * The HTTP upstream is one module, http_conn.h its interface, written as five files along
 * its seams: http_conn.c (the public calls, the upstream's lifecycle, sessions, the GET
 * stream and the order in which transfers start), http_req.c (one transfer: building it,
 * libcurl's callbacks, reading its answer, mapping its outcome to -errno), http_pool.c (what
 * the transfers reuse, below), http_resume.c (a POST's answer resumed with GET +
 * Last-Event-ID, 2025-11-25 polling) and http_legacy.c (the 2024-11-05 HTTP+SSE transport).
 * The structs below are not opaque because these files are together their one owner: they work on the same upstream and the same transfers, and
 * hiding the fields behind accessors would only spread each decision over two files. Nothing
 * else includes this header.
 *
 * What is kept across transfers (docs/development.md, "The HTTP path's reuse rules"): idle
 * libcurl easy handles, their network options set once for the upstream's URL (u->pool); the
 * header lists of the POST, shared by reference until the headers, the session or the protocol
 * version change (u->post_hdrs, and u->modern_hdrs for 2026-07-28 requests; a request's own
 * headers, Mcp-Method and the like, go in front of the shared list in r->head); one emptied answer buffer (u->spare); one freed
 * transfer with its message buffer (u->spare_req). The
 * connections themselves are the loop's multi handle's (keep-alive).
 *
 * The lifecycles are enums whose transitions are each made in one function: a transfer
 * (enum http_req_state, http_req_set_state()), its part in the session (enum
 * http_req_session), the reply a tagged request waits for (enum http_req_reply), the upstream
 * (enum http_state), its transport (enum http_mode, http_set_mode()) and the GET stream (enum
 * http_stream, http_stream_set()); docs/development.md, "Modules in detail", draws each one. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "credkit/buf.h"
#include "credkit/list.h"
#include "credkit/strv.h"

#include "core/loop.h"
#include "core/framing.h"
#include "core/rblock.h"
#include "core/sse.h"
#include "creds/cred_sign.h"
#include "transport/http_conn.h"

enum http_req_kind {
    HREQ_POST,        /* a message, Streamable HTTP */
    HREQ_LEGACY_POST, /* a message to the legacy endpoint: only its status counts */
    HREQ_GET,         /* the GET stream: server-initiated messages, or the legacy connection */
    HREQ_RESUME,      /* a POST's answer resumed with GET + Last-Event-ID */
    HREQ_DELETE,      /* the end of the session */
};

enum http_req_state {
    HREQ_QUEUED,
    HREQ_RUNNING,
    HREQ_DONE,
    HREQ_WAITING,
    HREQ_STOPPED,
};

enum http_req_session {
    SESSION_NONE,
    SESSION_SENT,
    SESSION_OFFERED,
    SESSION_BAD,
    SESSION_TAKEN,
};

enum http_req_reply {
    REPLY_NONE,
    REPLY_AWAITED,
    REPLY_ARRIVED,
};

enum http_req_body {
    BODY_UNKNOWN, /* no byte of the body seen yet */
    BODY_JSON,
    BODY_SSE,
    BODY_DISCARD, /* a non-2xx answer's body, or a legacy POST's */
};

#define HTTP_POOL_MAX  16            /* idle easy handles kept per upstream */
#define HTTP_SPARE_MAX (64u * 1024u) /* an answer buffer larger than this is not kept */
#define HTTP_HEAD_MAX  8             /* per-send headers put in front of a shared list */
#define HTTP_ANS_MIN   (16u * 1024u) /* an answer buffer's first size: libcurl's reads */

/* A header list (secrets) several transfers send: freed, wiped, by its last user. */
struct http_hdrs {
    unsigned refs;
    struct curl_slist *list;
};

struct http_req {
    struct http_conn *u; /* NULL once the upstream let go of a STOPPED transfer */
    struct loop *loop;
    struct list_node node;       /* on u->reqs, oldest first */
    struct loop_release release; /* STOPPED: the free after the iteration */
    enum http_req_kind kind;
    enum http_req_state state;
    enum http_req_session session;
    enum http_req_reply reply;
    enum http_req_body body;
    unsigned flags; /* http_conn_send()'s: HTTP_CONN_INITIALIZE */
    CURL *easy;
    bool easy_at_url;         /* easy's constant options are set for u->url: it may be pooled */
    struct curl_slist *hdrs;  /* this transfer's own (may hold secrets: wiped when freed) */
    struct http_hdrs *shared; /* or the upstream's shared POST headers, a reference */
    /* with shared: r->extra's headers in front of the shared list (no copy, nothing to free) */
    struct curl_slist head[HTTP_HEAD_MAX];
    struct strv extra; /* http_conn_send()'s headers */
    bool error_body;   /* HTTP_CONN_MODERN: a 400/404 answer read as JSON */
    char *msg;         /* the POSTed message, or the pieces of body not in held */
    size_t len;        /* the POSTed message's bytes, in msg or in body */
    /* a message sent in pieces (http_conn_sendv()): libcurl reads them through on_read(), the
     * big ones where they lie in held (a reference: it is never moved nor written over), the
     * others copied into msg; n_piece 0: the message is msg. piece_i, piece_off: where the next
     * read starts (back to the start on every launch, and where libcurl seeks to when it sends
     * the body again itself) */
    struct iovec piece[FRAMING_SENDV_MAX];
    int n_piece;
    struct rblock *held;
    int piece_i;
    size_t piece_off;
    bool easy_reads;       /* easy points at r for its body (on_read): unset before it is pooled */
    size_t msg_cap;        /* msg's size: kept with the transfer when it is the upstream's spare */
    uint64_t tag;          /* the caller's, 0: none */
    uint64_t seq;          /* order of creation */
    struct rblock *ans;    /* BODY_JSON: [0, ans_len) and a NUL, held by writers (rblock.h) */
    size_t ans_len;        /* NULL ans: no byte read yet */
    struct sse_parser sse; /* BODY_SSE of a POST and its resumptions (not the GET stream) */
    char *sid;             /* SESSION_OFFERED: the initialize answer's MCP-Session-Id */
    char *challenge;       /* the answer's (first) WWW-Authenticate, NULL */
    char *start_id;        /* a resumption: the last id it was started with */
    char errbuf[CURL_ERROR_SIZE]; /* libcurl's words for a failure (a TLS alert's reason) */
    size_t ids;                   /* events with an id on this response */
    int64_t deadline;             /* a POST and its resumptions: the hard timeout, loop clock */
    struct loop_timer *timer;     /* WAITING: a resumption's delay */
    size_t discarded;
    int error; /* why a callback of ours stopped the transfer */
    /* the entry's requestHeadersCommand: RUNNING with no easy handle yet while it runs */
    struct cred_sign_run *sign_run;
    struct strv signed_hdrs; /* its answer for this send (secrets), sent last */
    int64_t sign_timeout;    /* the transfer's timeout, for a kind without a deadline */
    bool nonce_retried;      /* sent again once with the server's DPoP nonce (RFC 9449 9) */
    bool new_nonce;          /* the answer brought a DPoP-Nonce not seen before */
};

enum http_state {
    HTTP_OPEN,
    HTTP_CLOSING,
    HTTP_DELETING,
    HTTP_CLOSED,
    HTTP_DEAD,
};

enum http_mode {
    MODE_STREAMABLE,
    MODE_LEGACY_WAIT,
    MODE_LEGACY_READY,
    MODE_LEGACY_OVER,
};

enum http_stream {
    STREAM_NONE,
    STREAM_ORDERED,
    STREAM_ACTIVE,
    STREAM_RETRY,
};

struct http_conn {
    struct loop *loop;
    struct loop_release release;
    enum http_state state;
    enum http_mode mode;
    enum http_stream stream_state;
    char *url;
    struct http_tls tls; /* spec.tls, taken: CAs and client certificate */
    struct strv headers; /* secrets */
    int64_t timeout_ms;
    size_t max_message;
    struct http_conn_handler h;
    void *userdata;
    struct cred_sign *sign; /* spec.sign, borrowed, NULL */
    char *session_id;
    char *proto;
    char *challenge;         /* of the last 401 or 403: http_conn_challenge() */
    uint64_t message_tag;    /* during on_message: http_conn_message_tag() */
    struct list_node reqs;   /* struct http_req, oldest first */
    struct http_req *stream; /* STREAM_ORDERED, STREAM_ACTIVE: the GET, also on reqs */
    uint64_t seq;            /* of the last http_req created */
    struct sse_parser stream_sse;
    struct loop_timer *retry;  /* STREAM_RETRY: the reconnection's delay */
    struct loop_deferred kick; /* starts what can start, from the loop (deferred phase) */
    int legacy_error;          /* MODE_LEGACY_OVER: why (for messages sent later) */
    int fallback_error;        /* the initialize POST's error that made us fall back, 0 */
    char *endpoint;            /* legacy: where messages are POSTed, once known */
    struct loop_timer *endpoint_timer;
    http_conn_done_fn done;
    CURL *pool[HTTP_POOL_MAX]; /* idle easy handles, their constant options set for url */
    size_t n_pool;
    size_t easy_inits;             /* easy handles created (http_conn_easy_inits()) */
    struct http_hdrs *post_hdrs;   /* the plain POST's headers, NULL: built at the next one */
    struct http_hdrs *modern_hdrs; /* a 2026-07-28 POST's (no session), likewise */
    struct rblock *spare;          /* an emptied answer buffer for the next transfer */
    struct http_req *spare_req;    /* a freed transfer and its message buffer, for the next one */
};

/* ---- http_conn.c ---------------------------------------------------------------------- */

/* Whether the caller is no longer to hear from us (closing, closed or freed). */
bool http_gone(const struct http_conn *u);
void http_set_mode(struct http_conn *u, enum http_mode to);
/* Sets the GET stream's state; r is the stream for ORDERED and ACTIVE, else NULL. */
void http_stream_set(struct http_conn *u, enum http_stream to, struct http_req *r);
/* Callbacks to the caller, each only while the upstream is open. */
/* tag: the request on whose answer the message came (0: the GET stream) */
void http_emit_message(struct http_conn *u, const char *msg, size_t len, uint64_t tag);
/* An event's data as a message, delivered from the parser's buffer (rblock_set_delivering). */
void http_emit_event(struct http_conn *u, const struct sse_event *ev, uint64_t tag);
void http_emit_error(struct http_conn *u, int error, uint64_t tag);
void http_emit_close(struct http_conn *u, int reason);
/* Starts what can start, from the loop (the embedded deferred call, in this iteration's
 * deferred phase): never from the caller's or libcurl's stack. Cannot fail; returns 0. */
int http_kick(struct http_conn *u);
/* An initialize answer known to be 2xx: its session id becomes the upstream's. -EPROTO for
 * an id that is not visible ASCII. */
int http_commit_session(struct http_req *r) _must_check_;
/* A finished GET stream (Streamable HTTP). */
void http_stream_done(struct http_req *r, CURLcode cc, long status);
/* The DELETE of http_conn_close() finished: done is called. */
void http_delete_done(struct http_req *r, CURLcode cc, long status);

/* ---- http_req.c --------------------------------------------------------------------------- */

/* A new transfer at the end of u's list, QUEUED. NULL on ENOMEM. Freed with http_req_free(). */
struct http_req *http_req_new(struct http_conn *u, enum http_req_kind kind);
/* Frees r, stopping its transfer; not from inside libcurl's callbacks (use http_req_stop()).
 * A STOPPED transfer is only let go of (its release frees it). NULL-safe. */
void http_req_free(struct http_req *r);
/* Stops r without any callback: STOPPED now, freed after the iteration. */
void http_req_stop(struct http_req *r);
/* The one place where a transfer changes state (see the top of this file). */
void http_req_set_state(struct http_req *r, enum http_req_state to);
/* A finished transfer made ready to start again: the easy handle goes back to the upstream's
 * pool (its connection stays in the multi handle's cache), and what was read of its answer
 * goes. */
void http_req_reset(struct http_req *r);
/* The message's pieces are no longer needed (never sent again): held's reference goes. */
void http_req_body_release(struct http_req *r);
/* Builds the request and adds it to the loop's multi handle: RUNNING. -errno, r unchanged in
 * state (the caller frees or fails it). */
int http_req_start(struct http_req *r) _must_check_;
/* The -errno of a finished transfer: libcurl's code, else the status. */
int http_req_error(const struct http_req *r, CURLcode cc, long status);
/* r freed, then on_error(error, its tag). */
void http_req_fail(struct http_req *r, int error);
/* A JSON answer's message(s) to the caller (one object, or each element of an array). */
void http_req_deliver_json(struct http_req *r);
/* Whether the id can be sent as Last-Event-ID. */
bool http_id_usable(const char *id);
/* Whether the SSE event has the given type. */
bool http_event_is(const struct sse_event *ev, const char *type);

/* ---- http_pool.c -------------------------------------------------------------------------- */

/* Frees a header list of secrets, each wiped first. NULL-safe. */
void http_slist_free_wipe(struct curl_slist *l);
/* Drops a reference to h; the last one frees it (wiped). NULL-safe. */
void http_hdrs_unref(struct http_hdrs *h);
/* The shared POST headers (both kinds) are out of date (the headers, the session or the
 * protocol version changed): the next POST builds them again; transfers running keep the list
 * they started with. */
void http_hdrs_changed(struct http_conn *u);
/* Frees the idle easy handles, the spare buffer and the spare transfer (before the TLS
 * settings they point at). */
void http_pool_release(struct http_conn *u);
/* An easy handle for a transfer to url: an idle one of u's when url is u->url (*ret_ready:
 * its constant options are set), else a new one (counted). NULL on ENOMEM. */
CURL *http_easy_take(struct http_conn *u, const char *url, bool *ret_ready);
/* r's easy handle, off the multi handle, back to u's pool when it is set up for u->url and
 * there is room, else freed. r->easy is NULL after. */
void http_easy_give_back(struct http_req *r);
/* r's answer buffer: u's spare one when it has one. */
void http_spare_take(struct http_req *r);
/* r's answer buffer, emptied, kept as u's spare unless it grew above HTTP_SPARE_MAX or is
 * held by a writer (then r's reference is dropped: a large one becomes the thread's spare,
 * rblock.h, for the next big message, or is given back). */
void http_spare_give_back(struct http_req *r);
/* Room in r's answer buffer for len more bytes and a NUL; want (0: unknown) is what the whole
 * answer is announced to be, and sizes the buffer at its first byte. A buffer that grows past
 * RBLOCK_MAP is the thread's spare or a mapping of its own, grown without a copy. -E2BIG past
 * u->max_message, -ENOMEM. */
int http_ans_reserve(struct http_req *r, size_t len, size_t want) _must_check_;
/* What was read of r's answer goes; its buffer stays unless a writer holds it. */
void http_ans_reset(struct http_req *r);

/* A zeroed transfer: u's spare one when it has one (its message buffer kept in r->msg,
 * r->msg_cap, and its SSE parser's buffers in r->sse: *ret_sse_ready, to be reused with
 * sse_parser_reuse()), else a new one. NULL on ENOMEM. */
struct http_req *http_req_take(struct http_conn *u, bool *ret_sse_ready);
/* r, whose members but its message buffer and SSE parser are released, becomes u's spare
 * transfer when u has none and its message buffer is small (true); else the caller frees the
 * two and r. */
bool http_req_give_back(struct http_conn *u, struct http_req *r);
/* Makes r->msg hold len bytes and a NUL. -ENOMEM. */
int http_req_msg_reserve(struct http_req *r, size_t len) _must_check_;

/* ---- http_resume.c ------------------------------------------------------------------------ */

/* A POST's SSE answer (Streamable HTTP) ended with error k: resumes it when it can (true: r
 * lives on), or returns false with the error to report in *k. */
bool http_resume_post_ended(struct http_req *r, CURLcode cc, long status, int *k);
/* A resumption finished. Returns true when r lives on (resumed again). */
bool http_resume_done(struct http_req *r, CURLcode cc, long status);

/* ---- http_legacy.c ------------------------------------------------------------------------ */

/* Opens the legacy GET stream; the POSTs wait for its endpoint event, timeout_ms at most. */
int http_legacy_open(struct http_conn *u) _must_check_;
/* Whether the initialize POST r, finished with status, was refused as a 2024-11-05 server
 * refuses it; if so, switches to the old transport and queues r again (true: r lives on),
 * or reports why that failed in *k (false). */
bool http_legacy_fallback(struct http_req *r, CURLcode cc, long status, int *k);
/* An event of the legacy GET stream that is not a message: the endpoint. < 0 drops the
 * stream. */
int http_legacy_event(struct http_conn *u, const struct sse_event *ev);
/* A POST to the legacy endpoint finished: only its status counts. */
void http_legacy_post_done(struct http_req *r, CURLcode cc, long status);
/* The legacy GET stream finished (the connection is over). */
void http_legacy_stream_done(struct http_req *r, CURLcode cc, long status);
/* The legacy connection is over with error: what waits fails, and the caller is told. */
void http_legacy_end(struct http_conn *u, int error);
/* Messages waiting for the endpoint (bounded by HTTP_CONN_PENDING_MAX). */
size_t http_legacy_count_pending(const struct http_conn *u);
/* Fails the messages not yet sent, oldest first (a callback may send more, or free us). */
void http_legacy_fail_pending(struct http_conn *u, int error);
