/* downstream_int.h - what the files of the downstream share (downstream.h is the interface).
 *
 * One object split by part, each file a part (mapped in docs/development.md, "The downstream in
 * detail"): the agents' side and dispatch, initialize, the servers, pending records, forwarding,
 * server requests, subscriptions, single mode, the 2026-07-28 era. What is shared by every agent
 * (servers, catalogue, cache, settings, the first round, shutdown) is in struct downstream; what
 * is one agent's is in struct ds_agent, of which the downstream holds a list. The parts share
 * this header because they act on one state and call each other both ways. Nothing outside
 * these files includes it.
 *
 * The lifecycles are enums, each with its legal transitions in one function (ds_set_session,
 * ds_set_round, set_phase and set_reading in downstream.c, ds_server_set_state in
 * downstream_servers.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/hashmap.h"
#include "credkit/list.h"
#include "credkit/log.h"
#include "credkit/mcp_config.h"
#include "credkit/strv.h"

#include "catalog/catalog.h"
#include "downstream/downstream.h"
#include "core/jsonrpc.h"
#include "core/loop.h"
#include "downstream/meta_cache.h"
#include "config/server_config.h"
#include "upstream/upstream.h"

#define DS_MAX_PENDING   4096  /* agent requests in flight (or waiting for the catalogue) */
#define DS_MAX_BRIDGED   256   /* server requests waiting for the agent's answer */
#define DS_MAX_SUBS      4096  /* resource subscriptions remembered for reconnects */
#define DS_POOL_MAX      64    /* pending records kept for reuse: no malloc per call */
#define DS_TEXT_MAX      1024  /* error texts for the agent */
#define DS_METHOD_MAX    48    /* of a method name kept for the log */
#define DS_CACHE_SAVE_MS 1000  /* the cache is written at most this often (and at shutdown) */
#define DS_MAX_LISTENS   64    /* a modern agent's subscriptions/listen requests open at once */
#define DS_LIST_TTL_MS   60000 /* "ttlMs" of a list no server gave one for (modern agents) */

/* The 2026-07-28 era's error codes and _meta keys (basic/index.mdx). */
#define DS_ERR_UNSUPPORTED_VERSION (-32022) /* UnsupportedProtocolVersion */
#define DS_META_VERSION            "io.modelcontextprotocol/protocolVersion"
#define DS_META_CAPS               "io.modelcontextprotocol/clientCapabilities"
#define DS_META_LOG_LEVEL          "io.modelcontextprotocol/logLevel"
#define DS_META_SERVER_INFO        "io.modelcontextprotocol/serverInfo"
#define DS_META_SUBSCRIPTION       "io.modelcontextprotocol/subscriptionId"

/* ---- lifecycles -------------------------------------------------------------------------- */

/* An agent's session. Aggregate: NEW -> READY. Single: NEW -> CONNECTING -> READY, or
 * CONNECTING -> REFUSED -> CONNECTING ... (the agent sends initialize again). */
enum ds_session {
    DS_SESSION_NEW,        /* no initialize accepted yet */
    DS_SESSION_CONNECTING, /* single: initialize accepted, waiting for the upstream's READY */
    DS_SESSION_REFUSED,    /* single: initialize answered with an error; upstreams started */
    DS_SESSION_READY,      /* initialized */
};

/* The servers' first round, shared by the agents. Aggregate: NONE -> FIRST -> SETTLED; single:
 * NONE -> SETTLED (nothing to settle: its one server is the session). */
enum ds_round {
    DS_ROUND_NONE,    /* no agent has initialized yet: the upstreams are templates */
    DS_ROUND_FIRST,   /* started; the first lists wait for the catalogue */
    DS_ROUND_SETTLED, /* started (aggregate: and the catalogue settled) */
};

/* Shutdown: RUNNING -> SHUTTING -> FLUSHING -> DONE, or SHUTTING -> DONE (nothing to flush, or
 * the shutdown timer). */
enum ds_phase {
    DS_PHASE_RUNNING,
    DS_PHASE_SHUTTING, /* closing the upstreams; the agent is no longer read */
    DS_PHASE_FLUSHING, /* the upstreams are gone: writing what is queued for the agent */
    DS_PHASE_DONE,     /* on_done called (or queued) */
};

/* Reading an agent: ON <-> THROTTLED (its answers are over the high-water mark), and
 * OFF for good once shutdown begins. */
enum ds_reading {
    DS_READING_ON,
    DS_READING_THROTTLED,
    DS_READING_OFF,
};

/* A server: TEMPLATE -> FIRST_ROUND (made real, connecting, listing for the first time) ->
 * SETTLED (listed, failed, or given up on), and CLOSING (removed or shutting down, waiting for
 * its upstream's CLOSED) from any of those but TEMPLATE, which is freed at once. A server
 * created once the upstreams have started begins in FIRST_ROUND. */
enum ds_server_state {
    DS_SERVER_TEMPLATE,
    DS_SERVER_FIRST_ROUND,
    DS_SERVER_SETTLED,
    DS_SERVER_CLOSING,
};

/* ---- the parts' records ------------------------------------------------------------------ */

struct ds_server;
struct agent_transport; /* agent_transport.h */
struct ds_agent;

/* The userdata of one listing: which server, which kind. */
struct ds_lister {
    struct ds_server *s;
    enum catalog_kind k;
};

struct ds_server {
    struct downstream *d;
    char *name;
    struct json_object *raw; /* the entry as written, for reload */
    struct upstream *u;
    enum ds_server_state state;
    struct catalog_source *src; /* its lists, for the catalogue */

    struct upstream_list *listing[CATALOG_N_KINDS]; /* in flight */
    bool relist[CATALOG_N_KINDS];                   /* list again when the one in flight is over */
    struct ds_lister listers[CATALOG_N_KINDS];
    struct list_node resubs; /* struct ds_resub in flight */

    /* lifecycle (server_config.h; aggregate mode only: single mode is always connected) */
    enum server_lifecycle lifecycle;
    int64_t idle_ms; /* 0: never idle-closed */
    bool disabled;   /* "disabled": true: a template upstream for good, never started */
    bool from_cache; /* its lists came from the cache (it has not listed since) */
    int64_t ttl_ms[CATALOG_N_KINDS];  /* the "ttlMs" each list gave (-1: none), for the cache */
    char key[META_CACHE_KEY_LEN + 1]; /* the cache key of its entry; "" when none */
    int64_t last_used;                /* loop time of its last READY or answered call */
    struct loop_timer *idle_timer;
    char *reason; /* the last failure (BACKOFF, FAILED, LOGIN), cleared at READY */
    /* a modern agent's: the level last sent to this legacy server with logging/setLevel (the
     * agent asks per request); NULL when none */
    char *level_sent;
};

/* What the proxy tool's status says of a server (ds_server_avail). */
enum ds_avail {
    DS_AVAIL_CONNECTED,  /* READY */
    DS_AVAIL_CONNECTING, /* connecting or listing */
    DS_AVAIL_IDLE,       /* lazy or idle-closed: listed from the cache or an earlier connect */
    DS_AVAIL_FAILED,     /* last connect failed: reason set */
    DS_AVAIL_LOGIN,      /* sign-in required: reason holds the command to run */
    DS_AVAIL_DISABLED,   /* "disabled": true */
};

enum ds_pending_type {
    DS_PT_CALL,     /* forwarded upstream; call is the upstream_call */
    DS_PT_LIST,     /* a list request waiting for the first round of the catalogue */
    DS_PT_HELD,     /* a request naming something the catalogue does not know yet */
    DS_PT_INIT,     /* single mode: the agent's initialize waiting for READY */
    DS_PT_DISCOVER, /* single mode: a modern agent's server/discover waiting for READY (msg) */
    DS_PT_LISTEN,   /* a modern agent's subscriptions/listen, open until cancelled (listen) */
};

/* What a modern agent's result needs besides "resultType" (CacheableResult: caching.mdx). */
enum ds_shape {
    DS_SHAPE_PLAIN,
    DS_SHAPE_LIST, /* tools/list, prompts/list, resources/list, resources/templates/list */
    DS_SHAPE_READ, /* resources/read */
};

struct ds_listen;

/* What a forwarded request does to the subscriptions the bridge remembers. */
enum ds_sub_op {
    DS_SUB_NONE,
    DS_SUB_ADD, /* resources/subscribe: remembered when the server accepts it */
};

/* An agent's request the bridge has not answered yet. */
struct ds_pending {
    struct ds_agent *a;
    struct list_node node; /* in a->pending, newest first; in a->pool when free */
    enum ds_pending_type type;
    struct json_object *id; /* the agent's (reference) */
    struct ds_server *s;    /* DS_PT_CALL */
    struct upstream_call *call;
    struct json_object *msg; /* DS_PT_HELD: the whole request (reference) */
    enum catalog_kind kind;  /* DS_PT_LIST */
    bool tool_call;
    enum ds_sub_op sub;
    char *sub_uri; /* DS_SUB_ADD */
    int64_t start;
    char method[DS_METHOD_MAX];
    /* downstream_mrtr.c: a modern agent's request whose legacy server asked for input: the
     * round trips' state (the record outlives the agent's id in between); NULL when none */
    struct ds_mrtr *mrtr;
    /* a modern agent's request: the shape of its result, and the log level its _meta asked for
     * (ds_log_rank(); 0: none, so the server's notifications/message are not for it) */
    enum ds_shape shape;
    int log_rank;
    struct ds_listen *listen; /* DS_PT_LISTEN: its filter */
};

/* A request of a server forwarded to the agent. */
struct ds_bridged {
    struct list_node node; /* in a->bridged, newest first */
    struct ds_server *s;
    uint64_t gen;
    struct json_object *up_id; /* the server's id (reference) */
    struct json_object *token; /* its progress token (reference), NULL when none; the agent
                                  sees "b<n>" as the token too */
    uint64_t n;                /* the agent sees "b<n>" */
};

/* on_done goes through a deferred call, so that the caller may free the downstream in it;
 * downstream_free() detaches a call still queued. */
struct ds_done_call {
    struct downstream *d;
    int status;
};

/* One agent and what is its own: its wire, its session and era, what it declared, its requests
 * in flight, its subscriptions, the requests of servers waiting for its answer. Made by
 * downstream_new() (the agent on its stdio) and downstream_add_agent(); freed with the
 * downstream (an agent whose wire ended stays, without one: calls of it still in flight are
 * answered into nothing). */
struct ds_agent {
    struct downstream *d;
    struct list_node node;     /* in d->agents, in the order they came */
    struct agent_transport *t; /* NULL once broken */
    enum ds_session session;
    enum ds_reading reading;
    struct json_object *agent_caps;  /* its capabilities as it declared them; NULL before */
    struct json_object *client_caps; /* roots, sampling, elicitation when it declared them */
    char *protocol_version;          /* its own, when the bridge knows it */
    /* It speaks 2026-07-28 (no initialize, _meta on every request; it said so with
     * server/discover or a request's io.modelcontextprotocol/protocolVersion); false: the
     * legacy era (initialize). */
    bool modern;
    struct ds_mrtr_state *mrtr; /* downstream_mrtr.c's table of suspended requests; NULL */
    size_t n_listens;           /* DS_PT_LISTEN records */

    struct list_node pending; /* struct ds_pending, newest first */
    size_t n_pending;
    struct hashmap *ids;   /* jrpc_id_key() of its id -> its struct ds_pending */
    struct list_node pool; /* freed records, for reuse */
    size_t n_pool;
    /* resources it subscribed to (struct ds_sub), sent again after each READY of that server
     * (by name, so that a server re-created by a reload gets them too) */
    struct list_node subs; /* in the order first subscribed */
    struct hashmap *subs_by_uri;
    struct list_node bridged; /* struct ds_bridged, newest first */
    size_t n_bridged;
    uint64_t bridge_counter;
    char *log_level; /* logging/setLevel, re-applied after reconnects */
};

struct downstream {
    struct loop *loop;
    struct log *log;
    enum downstream_mode mode;
    mcp_lookup_fn lookup;
    void *lookup_userdata;
    int (*credentials_new)(void *userdata, const struct mcp_config *config,
                           const struct mcp_server *entry, struct credentials_provider **ret,
                           struct err *e);
    void *credentials_userdata;
    const struct mcp_config *loading; /* during downstream_new() and _reload(): for
                                       * credentials_new */
    int64_t connect_timeout_ms;
    downstream_done_fn on_done;
    void *userdata;

    struct list_node agents; /* struct ds_agent, in the order they came */
    /* The agent whose initialize (or first modern request) started the upstreams: they are
     * offered its capabilities and protocol version, on every (re)connect. With several
     * agents this is the first one's, as with one; NULL before. */
    struct ds_agent *lead;

    enum ds_round round;
    enum ds_phase phase;

    struct ds_server **servers; /* active, in the configuration's order */
    size_t n_servers;
    struct ds_server **closing; /* removed, waiting for CLOSED */
    size_t n_closing;
    /* the entries not started (invalid, untrusted, refused), for the proxy tool's status:
     * each string is the name, a NUL, then the reason (ds_skipped_reason()) */
    struct strv skipped;

    struct catalog *cat;

    struct loop_timer *settle_timer; /* the first round's bound (the connect timeout); also
                                      * single mode's initialize timeout */
    /* aggregate: the settle window (settings.settleTimeout): the first lists are answered when
     * it passes (lists_open), requests naming what is not listed yet wait for the first round */
    struct loop_timer *window_timer;
    bool lists_open;

    /* the settings of the configuration (server_settings_get(); auth_required_message is
     * not kept: the configuration is borrowed only while loading) */
    struct server_settings settings;
    struct meta_cache *cache;       /* NULL: off (MCP_BRIDGE_CACHE=off, no agent directory) */
    struct loop_timer *cache_timer; /* a save is due */

    int status;        /* for on_done: -errno when an agent's side broke */
    size_t n_flushing; /* agents whose queue is being written at the end */
    struct loop_timer *shutdown_timer;
    struct ds_done_call *done_call;
};

/* A handler of one agent method (the dispatch tables). */
struct ds_method {
    const char *method;
    void (*handle)(struct ds_agent *a, struct jrpc_msg *m);
};

/* The handler of method in the table of n, or NULL. */
const struct ds_method *ds_method_find(const struct ds_method *table, size_t n, const char *method);

/* ---- downstream.c: the agent's side, lifecycles, settling -------------------------------- */

/* Moves the agent's session to the state to; an illegal transition is a bug (asserted). */
void ds_set_session(struct ds_agent *a, enum ds_session to);
/* Moves the servers' first round to to; an illegal transition is a bug (asserted). */
void ds_set_round(struct downstream *d, enum ds_round to);

/* The agent's initialize was accepted (notifications and lists of it may follow). */
bool ds_init_seen(const struct ds_agent *a);
/* ... and answered: notifications may go to the agent. */
bool ds_initialized(const struct ds_agent *a);
/* The upstreams were made real and connected. */
bool ds_started(const struct downstream *d);
/* The first round of the catalogue is under way (aggregate): what is not listed yet waits. */
bool ds_settling(const struct downstream *d);
/* Shutdown has begun. */
bool ds_shutting(const struct downstream *d);
/* The agent may hear of a change: initialized and not shutting down. */
bool ds_may_tell(const struct ds_agent *a);
/* Some agent may hear of a change. */
bool ds_may_tell_any(const struct downstream *d);
/* The agents of d, in the order they came: for (a = ds_agent_first(d); a; a = ds_agent_next(a)).
 * None goes away before the downstream. */
struct ds_agent *ds_agent_first(struct downstream *d);
struct ds_agent *ds_agent_next(struct ds_agent *a);
/* The agent of the call c of a server (in flight, or suspended by downstream_mrtr.c), or
 * NULL (c NULL, or a call of the bridge's own). */
struct ds_agent *ds_agent_of_call(struct downstream *d, const struct upstream_call *c);

/* Sends o (borrowed) to the agent. */
void ds_send_json(struct ds_agent *a, struct json_object *o);
/* The same, and puts o. */
void ds_send_put(struct ds_agent *a, struct json_object *o);
/* Answers id (borrowed) with result (taken). */
void ds_reply_result(struct ds_agent *a, struct json_object *id, struct json_object *result);
/* Answers id (borrowed; NULL: "id": null) with a JSON-RPC error. */
void ds_reply_error(struct ds_agent *a, struct json_object *id, int code, const char *message);
void ds_reply_errorf(struct ds_agent *a, struct json_object *id, int code, const char *fmt, ...)
    _printf_(4, 5);
bool ds_log_debugging(const struct downstream *d);

/* Rebuilds the catalogue of kind k (aggregate mode); the agent is due to hear of a change in
 * a list it was given. */
void ds_rebuild(struct downstream *d, enum catalog_kind k);
/* Tells the agent of the lists that changed since the last time (catalog_announce). */
void ds_announce(struct downstream *d);
/* Answers a list request from the catalogue; false when it could not (answered -32603). */
bool ds_answer_list(struct ds_agent *a, struct json_object *id, enum catalog_kind k);
/* The first round is over when every active server has settled (or the connect timeout
 * passed): the waiting lists and held requests are answered. */
void ds_settle_check(struct downstream *d);
void ds_on_settle_timer(struct loop_timer *t, void *userdata);
/* The settle window passed: the lists waiting are answered from what there is. */
void ds_on_window_timer(struct loop_timer *t, void *userdata);
/* Dispatches an agent request (also one held until the catalogue settled). */
void ds_handle_request(struct ds_agent *a, struct jrpc_msg *m);
/* Shutdown is over once every server is closed. */
void ds_check_shutdown(struct downstream *d);
/* logging/setLevel, both modes: remembered, and applied to every server now and after each
 * READY (single mode: forwarded). */
void ds_set_level(struct ds_agent *a, struct jrpc_msg *m);

/* ---- downstream_initialize.c ------------------------------------------------------------- */

/* The agent's initialize, both modes. */
void ds_handle_initialize(struct ds_agent *a, struct jrpc_msg *m);
/* Makes the upstreams real, offering what a declared, and connects them all, in parallel
 * (once: from DS_ROUND_NONE). */
void ds_start_upstreams(struct ds_agent *a);
/* What the agent declared: its protocol version (NULL when none or unknown) and its
 * capabilities (borrowed, NULL: none); the lead agent's is what every upstream is offered.
 * -ENOMEM. */
int ds_take_capabilities(struct ds_agent *a, const char *version, struct json_object *caps);
/* A DiscoverResult: supportedVersions [2026-07-28], capabilities and serverInfo (borrowed,
 * NULL: {}), instructions (NULL: none), ttlMs, cacheScope "private", resultType. NULL on
 * ENOMEM. */
struct json_object *ds_discover_result(struct json_object *caps, struct json_object *info,
                                       const char *instructions, int64_t ttl_ms);
/* Aggregate mode's: the bridge's capabilities, serverInfo and instructions, as initialize
 * gives them. NULL on ENOMEM. */
struct json_object *ds_aggregate_discover(struct ds_agent *a);

/* ---- downstream_modern.c: a 2026-07-28 agent --------------------------------------------- */

/* Whether a request opens the modern era (before any initialize): server/discover, or
 * params._meta with io.modelcontextprotocol/protocolVersion. */
bool ds_modern_opening(const struct jrpc_msg *m);
/* Checks a modern request's _meta: false when it was answered (-32600 a required key missing,
 * -32022 an unsupported version, -32602 a log level that is none). */
bool ds_modern_check(struct ds_agent *a, struct jrpc_msg *m);
/* The agent became modern with request m: its capabilities taken, the upstreams started.
 * -ENOMEM (answered). */
int ds_modern_start(struct ds_agent *a, struct jrpc_msg *m);
/* The rank of an MCP log level (debug 1 .. emergency 8), 0 for none. */
int ds_log_rank(const char *level);
/* The "ttlMs" of the aggregate list of kind k: the shortest a server gave, 0 while a server is
 * still connecting, else DS_LIST_TTL_MS. */
int64_t ds_list_ttl(struct downstream *d, enum catalog_kind k);
/* Adds "resultType": "complete" to a result that has none and, when cacheable, "ttlMs"
 * (ttl_ms) and "cacheScope" ("private") when missing. -ENOMEM. */
int ds_result_hints(struct json_object *result, bool cacheable, int64_t ttl_ms);
/* A server's answer to a modern agent's request p, before it goes to the agent (in place):
 * the result hints, -32002 as -32602. No-op for a legacy agent. -ENOMEM. */
int ds_modern_response(const struct ds_pending *p, struct json_object *response);
/* A modern agent's request m is being forwarded as p (p->s set): its result's shape and log
 * level noted; a legacy server gets the level with logging/setLevel. */
void ds_modern_forwarding(struct ds_agent *a, struct jrpc_msg *m, struct ds_pending *p);
/* notifications/message of s for a modern agent: sent when a request of the agent on s asked
 * for logs at or below its level. */
void ds_modern_log(struct ds_agent *a, struct ds_server *s, struct json_object *msg);

/* ---- downstream_listen.c: a modern agent's subscriptions/listen ------------------------- */

/* Opens the listen of request m: acknowledged, then the notifications its filter asks for. */
void ds_listen_open(struct ds_agent *a, struct jrpc_msg *m);
/* The listen p ends: answered with its closing result when graceful (shutdown), silently when
 * the agent cancelled it; its resource subscriptions are dropped where no other listen has
 * them. p is freed. */
void ds_listen_end(struct ds_pending *p, bool graceful);
/* Frees a listen's filter (ds_pending_free). NULL-safe. */
void ds_listen_free(struct ds_agent *a, struct ds_listen *l);
/* A list changed (its notification method): told on every listen that asks for it. */
void ds_listen_list_changed(struct ds_agent *a, const char *method);
/* notifications/resources/updated of a server: told on every listen with that resource. */
void ds_listen_resource_updated(struct ds_agent *a, struct json_object *msg);

/* ---- downstream_servers.c ---------------------------------------------------------------- */

/* A server for a valid entry (borrowed), with a template upstream (or a real one once
 * started). 0, or -errno with e set. Free with ds_server_free(). */
int ds_server_new(struct downstream *d, const struct mcp_server *entry, struct ds_server **ret,
                  struct err *e) _must_check_;
/* Frees at once (children killed, calls in flight dropped without callbacks). NULL-safe. */
void ds_server_free(struct ds_server *s);
/* Replaces the template upstream with one offering the agent's capabilities. */
int ds_server_make_real(struct downstream *d, struct ds_server *s, struct err *e) _must_check_;
/* Moves s to the state to; an illegal transition is a bug (asserted). */
void ds_server_set_state(struct ds_server *s, enum ds_server_state to);
/* The server's first round is over: listed, failed, or given up on. */
bool ds_server_settled(const struct ds_server *s);
struct ds_server *ds_server_find(struct downstream *d, const char *name);
/* Takes a server out of the active list (the catalogue is rebuilt by the caller) and closes
 * it; it is freed when CLOSED (at once when it never connected). */
void ds_server_remove(struct downstream *d, struct ds_server *s);
/* Frees a server that is no longer in the active list. */
void ds_server_finish(struct downstream *d, struct ds_server *s);
/* Sends logging/setLevel LEVEL to the server (its answer only logged at debug). 0, or < 0
 * with the failure logged. */
int ds_send_level(struct ds_server *s, const char *level);
/* Sends level to s when it is READY and has logging; level NULL: the one the first agent that
 * asked for one asked for (with several agents a server has one level: the first agent's). */
void ds_apply_level(struct downstream *d, struct ds_server *s, const char *level);
/* Starts a server made real, as its lifecycle says: a lazy one whose lists came from the
 * cache is settled at once and not connected; a disabled one never starts; others connect. */
void ds_server_start(struct ds_server *s);
/* What the proxy tool's status says of s; *ret_reason (may be NULL) borrowed, NULL when none. */
enum ds_avail ds_server_avail(const struct ds_server *s, const char **ret_reason);
/* Connect s now if it is not (a lazy or idle one); 0, or -errno with e (disabled, invalid). */
int ds_server_wake(struct ds_server *s, struct err *e);
/* A request of the agent for s was answered: s was in use now (the idle clock restarts). */
void ds_server_used(struct ds_server *s);
/* Writes the cache now when a save is due (at shutdown). */
void ds_cache_save_now(struct downstream *d);

/* ---- downstream_pending.c ---------------------------------------------------------------- */

/* A record for the agent's request id (referenced) of method (for the log), on a->pending and
 * in the map of ids; NULL when there are DS_MAX_PENDING already or on ENOMEM. */
struct ds_pending *ds_pending_new(struct ds_agent *a, enum ds_pending_type type,
                                  struct json_object *id, const char *method);
/* Takes the record off the list and the map (to the pool). NULL-safe. Its call is not
 * cancelled: the caller cancels it or lets it go with its upstream. */
void ds_pending_free(struct ds_pending *p);
/* Frees a record that held the agent's request (p->msg), handing the request out as a message
 * in *m (its root the caller's to put after handling it). */
void ds_pending_take_request(struct ds_pending *p, struct jrpc_msg *m);
/* The agent's request in flight with this id, or NULL. */
struct ds_pending *ds_pending_find(struct ds_agent *a, struct json_object *id);
/* The newest record of this type, or NULL. */
struct ds_pending *ds_pending_find_type(struct ds_agent *a, enum ds_pending_type t);
/* Frees every record, and the pool. */
void ds_pending_release_all(struct ds_agent *a);
void ds_reply_too_many(struct ds_agent *a, struct json_object *id);

/* ---- downstream_forward.c ---------------------------------------------------------------- */

/* Sends the request to s; its record, or NULL when it was answered at once (no room, no
 * memory). */
struct ds_pending *ds_forward(struct ds_agent *a, struct jrpc_msg *m, struct ds_server *s,
                              bool tool_call);
/* Keeps a request that names something not (yet) in the catalogue until the first round is
 * over (aggregate mode, while settling). true when held (or answered: no room). */
bool ds_hold(struct ds_agent *a, struct jrpc_msg *m);
/* Aggregate mode's handlers: tools/call, prompts/get, resources/read|subscribe|unsubscribe,
 * completion/complete. */
void ds_forward_tool_call(struct ds_agent *a, struct jrpc_msg *m);
void ds_forward_prompt_get(struct ds_agent *a, struct jrpc_msg *m);
void ds_forward_resource(struct ds_agent *a, struct jrpc_msg *m);
void ds_forward_completion(struct ds_agent *a, struct jrpc_msg *m);
/* notifications/cancelled from the agent: its request is cancelled upstream. */
void ds_cancel_request(struct ds_agent *a, struct json_object *params);
/* Fails the agents' requests still waiting on a server that goes away. */
void ds_fail_pending_of(struct downstream *d, struct ds_server *s);

/* ---- downstream_bridged.c ---------------------------------------------------------------- */

/* upstream_handler.on_request: a request of s's server for an agent: the one whose call it
 * belongs to (upstream_related_call), else the lead agent. */
void ds_bridged_request(struct ds_server *s, uint64_t gen, struct json_object *msg);
/* notifications/cancelled from s's server for one of its requests. */
void ds_bridged_cancelled(struct ds_server *s, struct json_object *msg);
/* The agent's answer to a request of a server. */
void ds_bridged_response(struct ds_agent *a, struct jrpc_msg *m);
/* notifications/progress of the agent, for a request of a server. */
void ds_bridged_progress(struct ds_agent *a, struct jrpc_msg *m);
/* Drops the requests of s (every server's when NULL) but those of session keep_gen (0: none),
 * of every agent; with a reason the agent is told, with notifications/cancelled. */
void ds_bridged_drop(struct downstream *d, struct ds_server *s, uint64_t keep_gen,
                     const char *reason);
void ds_bridged_release_all(struct ds_agent *a);

/* ---- downstream_mrtr.c: a legacy server's requests during a modern agent's call --------- */

/* A legacy server's request arrived (upstream_handler.on_request) while the agent is modern:
 * when it belongs to a request of the agent in flight (upstream_related_call), that request is
 * answered with an InputRequiredResult whose requestState (HMAC-signed, per-process key)
 * resumes it; true when taken (false: refuse it as today). */
bool ds_mrtr_server_request(struct ds_agent *a, struct ds_server *s, uint64_t gen,
                            struct json_object *msg);
/* The record of a's whose upstream call is c: in flight or suspended; NULL. */
struct ds_pending *ds_mrtr_record_of_call(struct ds_agent *a, const struct upstream_call *c);
/* A modern agent's request to s carries params.requestState: 1 when it was the bridge's own
 * (resumed, or refused as forged or expired: answered), 0 when it is not the bridge's
 * (forward it as it is: the server's own state), -1 on ENOMEM (answered). */
int ds_mrtr_resume(struct ds_agent *a, struct jrpc_msg *m, struct ds_server *s);
/* The upstream's answer (as upstream_response_fn) to a pending with mrtr set: true when
 * taken (kept until the agent comes back, or answered). */
bool ds_mrtr_on_response(struct ds_pending *p, struct json_object *response, int error,
                         const char *message);
/* The pending p goes away (freed): its rounds' state with it. */
void ds_mrtr_pending_free(struct ds_pending *p);
/* Everything suspended goes (shutdown, downstream_free). */
void ds_mrtr_release_all(struct ds_agent *a);
/* As ds_bridged_drop (which calls it): the requests of s's server (every server's when NULL)
 * but those of session keep_gen are forgotten; gone: the server (or the bridge) goes, and the
 * agent's requests suspended on it with it (their calls cancelled). */
void ds_mrtr_drop(struct ds_agent *a, struct ds_server *s, uint64_t keep_gen, bool gone);
/* notifications/cancelled of s's server for its request up_id. */
void ds_mrtr_server_cancelled(struct ds_agent *a, struct ds_server *s, struct json_object *up_id);

/* ---- downstream_subs.c ------------------------------------------------------------------- */

int ds_subs_init(struct ds_agent *a) _must_check_;
void ds_subs_release(struct ds_agent *a);
/* resources/subscribe and unsubscribe, both modes, forwarded to s. */
void ds_subs_forward(struct ds_agent *a, struct jrpc_msg *m, struct ds_server *s);
/* The server accepted the agent's subscription to uri. */
void ds_subs_remember(struct ds_agent *a, struct ds_server *s, const char *uri);
/* Whether an agent has a subscription on s (s then stays connected). */
bool ds_subs_has(struct downstream *d, const struct ds_server *s);
/* After READY: the agents' subscriptions on s, again. */
void ds_subs_renew(struct downstream *d, struct ds_server *s);
/* A modern agent's listen wants updates of uri, which s serves: subscribed on s (and renewed
 * after reconnects) unless it is already. */
void ds_subs_listen_add(struct ds_agent *a, struct ds_server *s, const char *uri);
/* No listen of a wants uri any more: unsubscribed on its server and forgotten. */
void ds_subs_listen_drop(struct ds_agent *a, const char *uri);
/* The server a resource URI belongs to (downstream_forward.c's routing), or NULL. */
struct ds_server *ds_route_uri(struct downstream *d, const char *uri);
/* Frees the renewals in flight of s (their calls go with its upstream). */
void ds_subs_release_server(struct ds_server *s);
/* The subscriptions of servers that are not in the configuration any more are dropped. */
void ds_subs_drop_removed(struct downstream *d);

/* ---- downstream_single.c ----------------------------------------------------------------- */

/* The agent's initialize in single mode (the capabilities are taken already). Single mode has
 * one agent: the lead, once it has started the upstream. */
void ds_single_initialize(struct ds_agent *a, struct jrpc_msg *m);
/* The upstream is READY: the initialize waiting for it is answered. */
void ds_single_ready(struct downstream *d);
/* The upstream failed, or the connect timeout passed: the initialize waiting is refused. */
void ds_single_fail(struct downstream *d, const char *why);
/* The connect timeout passed with the agent's initialize waiting. */
void ds_single_timeout(struct downstream *d);
/* A modern agent's server/discover in single mode: from the server's own, or its
 * InitializeResult (waiting for READY). */
void ds_single_discover(struct ds_agent *a, struct jrpc_msg *m);
/* An initialized agent's request in single mode. */
void ds_single_request(struct ds_agent *a, struct jrpc_msg *m);
