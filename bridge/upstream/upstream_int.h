/* upstream_int.h - what the parts of the upstream module share (upstream.c: the state
 * machine, calls and the public side; upstream_connect.c: credentials, the transport and the
 * handshake; upstream_list.c: listings through every page). Not for anyone else.
 *
 * Layout: a `struct conn` is one transport with the session on it; the upstream has at most
 * one current conn, plus conns being retired (their transport shutting down) that it only
 * waits for. Calls live in exactly one place: the sent list and the id
 * map (sent, waiting for their answer), the waiting list (for READY, or for a session being
 * re-established or re-authorized), the parked list (refused with 401, waiting for fresh
 * credentials) or the failing list (a failure to report from the loop).
 *
 * The id map is credkit/hashmap.h keyed by the id in decimal (ids are sequential integers, so
 * an integer-keyed array would do as well; the one map of the project costs one small key copy
 * per request, next to the request's own JSON, and keeps ids chosen by nobody but us
 * unguessable to its layout all the same).
 *
 * Freeing: upstream_free() tears everything down at once and marks the upstream UP_FREED; the
 * memory goes with loop_release() after the iteration, so code after a user callback checks
 * up_freed() (and whether its conn is still the current one) before going on. */
#pragma once

#include "credkit/hashmap.h"
#include "credkit/list.h"

#include "creds/cred.h"
#include "core/jsonrpc.h"
#include "core/stderr_tail.h"
#include "core/trace.h"
#include "transport/transport.h"
#include "upstream/upstream.h"

#define UP_MAX_MESSAGE (16u * 1024u * 1024u) /* both transports' default frame bound */
#define UP_MAX_CALLS   10000                 /* calls sent, waiting or failing, per upstream */
#define UP_SPARE_CALLS 64                    /* freed call records kept for reuse, per upstream */
#define UP_WBUF_KEEP   (64 * 1024)           /* the request buffer kept across calls, at most */

enum conn_state {
    CONN_CURRENT,
    CONN_RETIRING, /* shut down, waiting for the transport's on_done */
    CONN_DEAD,     /* retiring and nothing left to wait for: freed by the kick */
};

struct conn {
    struct upstream *u;
    struct transport *t;
    struct list_node node; /* on u->retiring */
    uint64_t gen;          /* the generation this conn has (or will have once READY) */
    enum conn_state state;
};

enum call_where {
    CALL_NEW,
    CALL_WAITING, /* u->waiting */
    CALL_SENT,    /* u->sent and u->map */
    CALL_PARKED,  /* u->parked: refused with 401, waiting for fresh credentials */
    CALL_FAILING, /* u->failing */
};

struct upstream_call;
/* internal calls (initialize, ping): an answer, or an error (-ETIMEDOUT) */
typedef void (*call_internal_fn)(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m,
                                 int error);

struct upstream_call {
    struct upstream *u;
    int64_t id;
    char key[24]; /* id in decimal: the map's key (borrowed by the map: unchanged while in it) */
    char *method; /* method_buf when it fits, else owned */
    char method_buf[24];
    struct json_object *params;
    struct json_object *token; /* the caller's progress token, NULL when none */
    bool token_swapped;
    int64_t timeout_ms, started, deadline, hard_deadline;
    int64_t sent_at; /* loop time of its last sending: a traced answer's latency */
    struct loop_timer *timer;
    upstream_response_fn fn;
    upstream_raw_fn raw; /* NULL: results go to fn */
    upstream_progress_fn progress;
    void *userdata;
    call_internal_fn ifn;
    unsigned flags;  /* transport_send flags */
    unsigned uflags; /* enum upstream_call_flags */
    void *mrtr;      /* upstream_mrtr.c's state of its input rounds; NULL when none */
    enum call_where where;
    uint64_t session;   /* u->session when sent */
    bool retried;       /* sent again after the session was lost (-ESTALE) */
    bool auth_retried;  /* sent again with fresh credentials after a 401 */
    int refused;        /* CALL_PARKED: the refusal (-EACCES 401, -EPERM 403 insufficient_scope) */
    uint64_t creds_gen; /* u->creds_gen when it was sent: a refusal of older credentials is
                         * answered by sending it again with the current ones */
    bool mismatch_retried; /* sent again after a -32020 (HeaderMismatch) and a new tools/list */
    bool stream_retried;   /* sent again after its answer stream broke (2026-07-28) */
    struct json_object *local_result; /* CALL_FAILING with error 0: answered here, this */
    bool in_callback; /* its response callback is running: freed by whoever called it */
    bool progressed;
    int error; /* CALL_FAILING */
    char *message;
    struct list_node node; /* on the list where says */
};

/* The session on the current conn, while READY. */
enum session_state {
    SESSION_OPEN,
    SESSION_REINIT, /* the server forgot it (404): initialize again; calls wait */
    SESSION_REAUTH, /* a 401: fresh credentials are asked for; calls wait */
};

/* What the credentials being asked for are for. */
enum cred_purpose {
    CRED_CONNECT,       /* a connect attempt waits for them */
    CRED_CONNECT_RETRY, /* initialize was refused (401/403): once more with fresh ones */
    CRED_REAUTH,        /* a 401 mid-session: the parked calls wait */
    CRED_REFRESH,       /* ahead of expiry: nothing waits */
};

enum up_life {
    UP_LIVE,
    UP_FREED, /* upstream_free() called; the memory goes after the iteration */
};

struct upstream {
    struct loop *loop;
    struct log *log;
    struct mcp_server *srv;
    struct cred_provider *provider;
    upstream_transport_open_fn transport_open;
    struct trace *trace; /* borrowed; NULL: not traced */
    struct json_object *client_caps;
    struct json_object *client_info;
    char *offer_version;
    int64_t connect_timeout_ms, request_timeout_ms;
    bool no_reconnect;
    struct upstream_handler h;
    void *userdata;

    enum upstream_state state;
    enum session_state sess;
    enum upstream_era era; /* of the current (or last) session */
    /* 2026-07-28 on the current conn: every request stamped (set by a server/discover answer
     * that says so, cleared when a conn is opened) */
    bool wire_modern;
    /* what a stdio server (the process: per upstream) answered the probe last: LEGACY skips
     * it; HTTP servers are remembered per origin (upstream_connect.c) */
    enum upstream_era known_era;
    struct upstream_call *probe_call; /* server/discover while connecting */
    unsigned probe_tries;             /* sent in this attempt (-32022 listing ours: again) */
    char *log_level;                  /* logging/setLevel to a modern server: stamped */
    /* x-mcp-header markings of the tools of the last tools/list: {tool: [[header, key...]]} */
    struct json_object *tool_headers;
    struct hashmap *warned;            /* up_warn_once()'s messages said */
    struct upstream_call *relist_call; /* waiting for tools/list after a -32020 */
    struct upstream_list *relist;
    /* the one subscriptions/listen (upstream_listen.c) */
    struct upstream_call *listen_call;
    struct json_object *listen_uris; /* resources subscribed to: an array of strings */
    struct loop_timer *listen_timer; /* re-sending it after a drop */
    int64_t listen_retry_ms;
    /* while a server request is handed to on_request: the tag of the request on whose
     * response stream it came (0: none known, e.g. stdio or the server's own stream) */
    uint64_t request_tag;
    char *last_error;
    struct json_object *caps, *info;
    char *instructions, *version;
    uint64_t gen;
    uint64_t session; /* counts sessions established (connects and re-initializations) */
    int64_t next_id;
    unsigned attempts; /* connect attempts started: CONNECT for the first, RECONNECT after */

    struct conn *conn;
    struct list_node retiring;
    struct cred_request *cred_req;
    enum cred_purpose cred_purpose;
    int cred_error; /* CRED_CONNECT_RETRY: initialize's error, reported if nothing changes */
    struct credentials creds; /* the last answer (secrets) */
    int64_t recheck_at;       /* LOGIN, or FAILED by the credentials: a call from then on
                               * connects again (loop time; 0: FAILED for good) */
    int64_t refresh_retry_ms; /* the next wait after a failed refresh (backoff) */
    int64_t cred_got_at;      /* cred_now_ms() when creds' expires_at was first had */
    uint64_t creds_gen;       /* counts the answers put in creds */
    bool login_warned;        /* "a sign-in is needed" was logged in this episode */
    bool reauth_forced;       /* this refusal's answer was the same once: asked again */
    struct loop_timer *expiry_timer;
    bool refreshed_in_connect; /* a 401 to initialize asked once already in this attempt */
    struct upstream_call *init_call, *ping_call;

    struct hashmap *map;
    struct list_node sent, waiting, parked, failing;
    size_t ncalls;
    /* freed call records kept for the next call (through their node), at most UP_SPARE_CALLS:
     * a call's record is otherwise a calloc and a free per request */
    struct list_node spare_calls;
    size_t n_spare_calls;
    struct buf wbuf; /* a request's text on its way to the transport, kept across calls */
    struct list_node lists;

    struct loop_timer *kick;
    bool start_pending, close_pending;
    struct loop_timer *connect_timer, *backoff_timer;
    int64_t backoff_ms, ready_at;
    uint64_t rng;

    /* Failure reports (upstream_connect.c): the server's last stderr lines (this attempt's),
     * the reason last reported at warn (a hash of the error and message; 0: none), whether
     * "working again" was said since, and when it last was. */
    struct stderr_tail tail;
    struct log_ratelimit junk_rl; /* the server's messages that are not JSON(-RPC) */
    uint64_t rep_key;
    bool rep_ok_said;
    bool rep_warned; /* the episode's failure was said at warning level */
    int64_t rep_ok_at;

    enum up_life life;
    struct loop_release release;
};

/* upstream.c and upstream_call.c */
const char *up_name(const struct upstream *u);
bool up_freed(const struct upstream *u);
char *up_asprintf(const char *fmt, ...) _printf_(1, 2);
/* A warning about what the server sent that it may send again and again (a listing, every
 * time it lists): said at the default level the first time, at debug level after, for the
 * upstream's life (UP_WARNED_MAX distinct messages are remembered; past them, said again). */
void up_warn_once(struct upstream *u, const char *fmt, ...) _printf_(2, 3);
void up_fmt_ms(char *buf, size_t size, int64_t ms);
const char *up_strerror(const struct upstream *u, int error);
int up_call_err(int error);
void up_kick(struct upstream *u);
int up_arm(struct upstream *u, struct loop_timer **t, int64_t delay, loop_timer_fn fn);
void up_disarm(struct loop_timer **t);
bool up_set_state(struct upstream *u, enum upstream_state s, int error, const char *message);
int up_call_new(struct upstream *u, const char *method, struct json_object *params,
                int64_t timeout_ms, struct upstream_call **ret);
void up_call_free(struct upstream_call *c);
/* Frees the kept call records (the upstream's own end). */
void up_call_spares_free(struct upstream *u);
void up_call_unlink(struct upstream *u, struct upstream_call *c);
void up_call_put(struct upstream *u, struct upstream_call *c, enum call_where where, bool front);
struct upstream_call *up_call_pop(struct upstream *u, enum call_where where);
void up_call_fail_later(struct upstream *u, struct upstream_call *c, int error,
                        const char *message);
bool up_call_fail_now(struct upstream *u, struct upstream_call *c, int error, const char *message);
int up_send_call(struct upstream *u, struct upstream_call *c);
void up_send_or_fail(struct upstream *u, struct upstream_call *c);
int up_send_notification(struct upstream *u, const char *method, struct json_object *params);
void up_flush_waiting(struct upstream *u);
/* Fails the calls sent on the current session and those parked, from the kick. */
void up_fail_inflight(struct upstream *u, int error, const char *why);
void up_fail_waiting(struct upstream *u, int error, const char *message);
void up_drop_conn(struct upstream *u);
/* Says how many of the server's skipped messages were left unsaid (its connection ended). */
void up_skipped_flush(struct upstream *u);
void up_retire(struct upstream *u, struct conn *cn);
void up_conn_done(struct upstream *u, struct conn *cn);
bool up_version_known(const char *v);
int up_send_response(struct upstream *u, struct json_object *resp);
void up_connect_fail(struct upstream *u, int error, const char *message, bool permanent);
/* The connection could not be started (the transport failed to open, at once or from the loop):
 * for good when no retry can do better (command not found ...). what: NULL, or what was being
 * done; e: the transport's message, NULL for strerror(r). */
void up_start_failed(struct upstream *u, int r, const char *what, const struct err *e);
void up_conn_lost(struct upstream *u, int error, const char *message);
void up_reconnect_now(struct upstream *u);

/* Sends c again as a new request: a new id of the upstream's (an answer to the old one is
 * dropped as an answer to no request), its params replaced by new_params when that is not
 * NULL (reference taken), the progress token following the new id. The 2026-07-28 revision's
 * retries (input rounds, -32020, a broken response stream) never reuse an id. c must be
 * CALL_SENT or CALL_NEW (it is unlinked first); a failure is reported through its callback
 * from the loop. */
void up_call_reissue(struct upstream *u, struct upstream_call *c, struct json_object *new_params);

/* upstream_mrtr.c: input rounds (UPSTREAM_CALL_INPUT_PASS unset) */
/* A response m for c is about to be delivered: true when the input rounds took it (an
 * InputRequiredResult being satisfied; c stays with them). */
bool up_mrtr_on_result(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m);
/* upstream_respond() of an id the rounds made up: true when taken. */
bool up_mrtr_take_response(struct upstream *u, struct json_object *id, struct json_object *result,
                           struct json_object *error);
/* c is freed: its rounds' state goes with it. */
void up_mrtr_free(struct upstream_call *c);

/* upstream_listen.c: what a 2026-07-28 server does not have, done here */
/* A user call about to be sent to a modern server: true when it was answered here (ping,
 * logging/setLevel, resources/subscribe and unsubscribe), from the kick. */
bool up_modern_local(struct upstream *u, struct upstream_call *c);
/* READY with a modern server: opens the listen stream. */
void up_listen_start(struct upstream *u);
/* The connection is gone or closing: the listen's state goes (its URIs stay). */
void up_listen_stop(struct upstream *u);
/* A notification from the server: true when consumed here (the listen's acknowledgement). */
bool up_listen_notification(struct upstream *u, struct jrpc_msg *m);
void up_listen_free(struct upstream *u);

/* upstream_call.c */
/* Answers c with result (reference taken) from the kick, as if the server had. */
void up_call_answer_later(struct upstream *u, struct upstream_call *c, struct json_object *result);
/* A tools/list answer of a modern HTTP server: its x-mcp-header markings kept for the calls,
 * the tools with invalid ones left out of it (a warning each). */
void up_tools_listed(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m);
/* A modern server refused c with -32020 (HeaderMismatch): true when it lists the tools again
 * and then sends c once more (c taken). */
bool up_header_mismatch(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m);
/* Whether a request only reads (sent again after its answer stream broke). */
bool up_method_safe(const char *method);

/* upstream_connect.c */
void up_connect_start(struct upstream *u);
void up_start_reinit(struct upstream *u);
void up_init_failed(struct upstream *u, int error, const char *message);
/* The server/discover probe failed on the wire: refused (credentials), else not modern. */
void up_probe_error(struct upstream *u, int error);
/* initialize was refused (401/403): asks for fresh credentials once per attempt. */
void up_init_refused(struct upstream *u, int error);
int up_connect_err(int error);
void up_creds_cancel(struct upstream *u);
/* A call was refused mid-session (error: -EACCES for a 401, -EPERM for a 403
 * insufficient_scope): parks it and asks for fresh credentials or a wider grant. */
void up_reauth(struct upstream *u, struct upstream_call *c, int error);
void up_conn_free(struct conn *cn);
/* Reports a failed or lost connection (message: what happened, "server 'x': ..."; retry: the
 * wait before the next attempt, NULL when none follows by itself): at warn level with the
 * server's last stderr lines the first time and whenever the reason changes, at debug for the
 * retries that fail the same way (a one-shot client's always at debug: it reports itself). */
void up_report_failure(struct upstream *u, int error, const char *message, const char *retry);
/* One line of a stdio server's stderr: kept for the failure report, then to h.on_stderr, else
 * logged (escaped) at debug level, or at info for an entry with "debug": true. */
void up_stderr_line(struct upstream *u, const char *line, size_t len);

/* upstream_recv.c: the transport's events */
void up_handle_message(struct upstream *u, struct conn *cn, const char *text, size_t len);
extern const struct transport_handler up_transport_handler;

/* upstream_trace.c: the protocol trace's hooks (nothing without a trace) */
/* msg was handed to the transport (r >= 0) or refused (r < 0); bytes: its size. */
void up_trace_sent(struct upstream *u, struct json_object *msg, size_t bytes, int r);
/* m came from the server; bytes: its size; c: the call it answers, NULL when none. */
void up_trace_received(struct upstream *u, const struct jrpc_msg *m, size_t bytes,
                       const struct upstream_call *c);

/* upstream_list.c */
void up_lists_free(struct upstream *u);
