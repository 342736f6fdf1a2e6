/* downstream_int.h - what the files of the downstream share (downstream.h is the interface).
 *
 * One object split by part, each file a part (mapped in docs/development.md, "The downstream in
 * detail"), in floors: downstream_agent.c (what every part uses) at the bottom; pending records
 * and subscriptions; the servers; the 2026-07-28 era, listens, requests across eras, server
 * requests; forwarding; single mode, the proxy tool, initialize; the agents' messages
 * (downstream_dispatch.c); and downstream.c, the dispatcher, on top. A part calls only the
 * floors below it; what it must report upwards goes through struct ds_hooks, which downstream.c
 * fills. What is shared by every agent (servers, catalogue, cache, settings, the first round,
 * shutdown) is in struct downstream; what is one agent's is in struct ds_agent, of which the
 * downstream holds a list. Each part's calls are in its own downstream_<part>_int.h.
 *
 * The lifecycles are enums, each with its legal transitions in one function (ds_set_session,
 * ds_set_round and ds_set_reading in downstream_agent.c, set_phase in downstream.c,
 * ds_server_set_state in downstream_servers.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/buf.h"
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
#include "core/trace.h"
#include "downstream/meta_cache.h"
#include "config/server_config.h"
#include "upstream/upstream.h"

#define DS_TEXT_MAX   1024 /* error texts for the agent */
#define DS_METHOD_MAX 48   /* of a method name kept for the log */
/* After a list_changed, the changes of the next 200 ms are told as one at its end: servers
 * that connect together (nine at start) would otherwise have the agent list everything again
 * for each; short enough that the agent sees a new server's tools at once */
#define DS_ANNOUNCE_WINDOW_MS 200

/* ---- lifecycles -------------------------------------------------------------------------- */

/* An agent's session. Aggregate: NEW -> READY. Single: NEW -> CONNECTING -> READY, or
 * CONNECTING -> REFUSED -> CONNECTING ... (the agent sends initialize again, or opens the
 * 2026-07-28 era again). A modern agent's opening refused (the server cannot be reached, or,
 * transparent, it is a legacy server) leaves it REFUSED and of no era: it may initialize. */
enum ds_session {
    DS_SESSION_NEW,        /* no initialize accepted yet */
    DS_SESSION_CONNECTING, /* single: initialize accepted, waiting for the upstream's READY */
    DS_SESSION_REFUSED,    /* single: the opening answered with an error; upstreams started */
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

enum ds_pending_type {
    DS_PT_CALL,     /* forwarded upstream; call is the upstream_call */
    DS_PT_LIST,     /* a list request waiting for the first round of the catalogue */
    DS_PT_HELD,     /* a request naming something the catalogue does not know yet */
    DS_PT_INIT,     /* single mode: the agent's initialize waiting for READY */
    DS_PT_DISCOVER, /* single mode: a modern agent's server/discover, or any request before
                     * its session is READY, waiting for the server's READY and era (msg) */
    DS_PT_LISTEN,   /* a modern agent's subscriptions/listen, open until cancelled (listen) */
    DS_PT_WAKE,     /* a tools/call naming what no server lists, waiting for the servers it
                     * woke (listed only from the cache, or not connected) to list (msg) */
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
    /* jrpc_id_key(id) while the record is in the map of the agent's ids, which borrows it; ""
     * when it is not */
    char key[JRPC_ID_KEY_MAX + 2];
    struct ds_server *s; /* DS_PT_CALL */
    struct upstream_call *call;
    struct json_object *msg;       /* DS_PT_HELD, DS_PT_WAKE: the whole request (reference) */
    struct loop_timer *wake_timer; /* DS_PT_WAKE: its bound (the connect timeout) */
    enum catalog_kind kind;        /* DS_PT_LIST */
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
    char *log_level;           /* logging/setLevel, re-applied after reconnects */
    struct loop_deferred gone; /* persist: its wire ended, forgotten after this iteration */
};

struct downstream {
    struct loop *loop;
    struct log *log;
    enum downstream_mode mode;
    mcp_lookup_fn lookup;
    void *lookup_userdata;
    int (*cred_new)(void *userdata, const struct mcp_config *config, const struct mcp_server *entry,
                    struct cred_provider **ret, struct err *e);
    void *cred_userdata;
    const struct mcp_config *loading; /* during downstream_new() and _reload(): for
                                       * cred_new */
    int64_t connect_timeout_ms;
    bool bridge_eras; /* single mode: downstream_opts.bridge_eras */
    bool persist;     /* downstream_opts.persist */
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
    /* the results passed on without a tree, their id spliced (downstream_forward.c): one
     * buffer kept between calls, given back after big ones */
    struct buf pass;

    struct catalog *cat;
    /* downstream_mrtr.c: the key of the bridge's requestStates, this process's name in them and
     * their counter, every agent's (NULL until the first round or --state-key) */
    struct ds_mrtr_key *mrtr_key;

    struct loop_timer *settle_timer; /* the first round's bound (the connect timeout); also
                                      * single mode's initialize timeout */
    /* aggregate: the settle window (settings.settleTimeout): the first lists are answered when
     * it passes (lists_open), requests naming what is not listed yet wait for the first round */
    struct loop_timer *window_timer;
    bool lists_open;
    /* list_changed to the agents: the window after one was sent (the changes within it are
     * told at its end); announced: notify_agent ran (catalog_announce said something) */
    struct loop_timer *announce_timer;
    bool announced;

    /* the settings of the configuration (server_settings_get(); auth_required_message is
     * not kept: the configuration is borrowed only while loading) */
    struct server_settings settings;
    /* the session's protocol trace (settings.trace as at start), for the servers traced; its
     * file appears with the first record */
    struct trace *trace;
    struct meta_cache *cache;       /* NULL: off (MCP_BRIDGE_CACHE=off, no agent directory) */
    struct loop_timer *cache_timer; /* a save is due */

    int status;        /* for on_done: -errno when an agent's side broke */
    size_t n_flushing; /* agents whose queue is being written at the end */
    struct loop_timer *shutdown_timer;
    struct ds_done_call *done_call;
    const struct ds_hooks *hooks; /* downstream.c's */
};

/* ---- what the parts report to the dispatcher ------------------------------------------ */

/* The events a lower part reports without knowing which parts act on them: downstream.c fills
 * the table and wires each event to the parts above (so no part calls back up). */
struct ds_hooks {
    /* downstream_pending.c: p is being freed: its server was used, its rounds' state and its
     * listen go with it */
    void (*pending_freed)(struct ds_pending *p);
    /* downstream_agent.c: an agent declared its capabilities, before it is answered (the
     * first one's are what the servers will be offered) */
    void (*offered)(struct ds_agent *a);
    /* downstream_dispatch.c: an agent's initialize was handled, or a modern agent's first
     * request taken (the first agent's session starts the upstreams) */
    void (*session_begun)(struct ds_agent *a);

    /* downstream_servers.c: a server settled its first round (the catalogue may have settled);
     * one was freed once shutting down (shutdown may be over); a listing round is over (the
     * agents hear of the lists that changed) */
    void (*settle_check)(struct downstream *d);
    void (*check_shutdown)(struct downstream *d);
    void (*announce)(struct downstream *d);
    /* the server's requests waiting for an agent are dropped but those of session keep_gen
     * (0: none); with a reason the agent is told */
    void (*drop_bridged)(struct downstream *d, struct ds_server *s, uint64_t keep_gen,
                         const char *reason);
    /* a request of s's server for an agent (session gen), and its notifications/cancelled */
    void (*server_request)(struct ds_server *s, uint64_t gen, struct json_object *msg);
    void (*server_cancelled)(struct ds_server *s, struct json_object *msg);
    /* a notification of s's server for the agents (logs, resource updates, single mode's) */
    void (*server_notification)(struct ds_server *s, struct json_object *msg);
    /* single mode: the upstream is READY, or failed (why) */
    void (*single_ready)(struct downstream *d);
    void (*single_fail)(struct downstream *d, const char *why);
};
