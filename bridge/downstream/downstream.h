/* downstream.h - the MCP server the agents talk to: the bridge proper.
 *
 * An agent (pi, Claude Code, Cursor, any MCP client) speaks MCP to the bridge, on its stdin and
 * stdout (agent_transport.h: newline framing) or through a transport added with
 * downstream_add_agent(); the downstream answers it with the servers of the configuration, each
 * an upstream (upstream.h), in one of two modes: aggregate (every valid entry, renamed into one
 * catalogue, catalog.h) or single (one server passed through). The downstream owns the servers,
 * the catalogue, the metadata cache (meta_cache.h) and the settings, shared by its agents; each
 * agent owns its session, era (initialize, or 2026-07-28), declared capabilities, requests in
 * flight, subscriptions and the server requests waiting for it. Lifecycles, settling, flow
 * control, shutdown and the behaviour towards agents of either era are described in
 * docs/development.md, "The downstream in detail", with the parts of the implementation
 * (downstream_int.h).
 *
 * Not thread-safe; callbacks from the loop. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

#include "catalog/catalog.h"
#include "core/loop.h"

#define DOWNSTREAM_SHUTDOWN_MS (8 * 1000)
/* Bytes queued for an agent above which it is no longer read, until they are written: an agent
 * that does not read its answers sees its own writes block instead of answers dropped. */
#define DOWNSTREAM_AGENT_HIGH_WATER (4u * 1024u * 1024u)

enum downstream_mode {
    DOWNSTREAM_AGGREGATE,
    DOWNSTREAM_SINGLE,
};

struct downstream;
struct cred_provider;   /* cred.h */
struct agent_transport; /* agent_transport.h */

/* The bridge is over (stdin ended, or downstream_shutdown() finished): status 0, or -errno when
 * the agent's side broke (stdout closed: -EPIPE). */
typedef void (*downstream_done_fn)(int status, void *userdata);

struct downstream_opts {
    struct loop *loop; /* required */
    struct log *log;   /* required */
    /* the agent's side, O_NONBLOCK, staying the caller's; both -1: no agent yet (aggregate
     * mode or persist: they come with downstream_add_agent()) */
    int in_fd, out_fd;
    enum downstream_mode mode;
    /* The servers: every valid entry of config (aggregate), or the one named by single_name
     * (single; an entry built from a URL on the command line is passed in a config of its
     * own). The config is borrowed only during downstream_new() and downstream_reload(). */
    const struct mcp_config *config;
    const char *single_name;
    /* Single mode: the bridge serves a 2026-07-28 agent itself whatever the server's era
     * (server/discover made of a legacy server's InitializeResult, requests bridged across
     * eras). false, the default: transparent, a legacy server is a legacy server to the agent
     * (its server/discover gets -32601, as from the server, and the agent falls back to
     * initialize). Aggregate mode always bridges: the bridge is the agent's server there. */
    bool bridge_eras;
    /* Aggregate mode: who reads the tools list (catalog_set_audience(); serve --agent). */
    enum catalog_audience audience;
    mcp_lookup_fn lookup; /* ${VAR} lookup for upstreams; NULL: the environment */
    void *lookup_userdata;
    /* Makes the credentials provider of an entry's upstream (cred.h; config is the
     * configuration being loaded, borrowed for the call). NULL: the default provider, the
     * entry itself through lookup. The commands give the helpers (cred_setup.h). */
    int (*cred_new)(void *userdata, const struct mcp_config *config, const struct mcp_server *entry,
                    struct cred_provider **ret, struct err *e);
    void *cred_userdata;
    int64_t connect_timeout_ms; /* 0: UPSTREAM_CONNECT_TIMEOUT_DEFAULT_MS */
    /* Agents come and go (a listener adds them: serve --listen): the bridge is not over with
     * its last agent, only with downstream_shutdown(); an agent whose wire ended is forgotten
     * once the loop is back (its requests in flight cancelled, the servers' requests waiting
     * for it refused), but for the lead agent's declarations, which the servers keep being
     * offered. In single mode the one server is every agent's (its session, log level and
     * subscriptions with it). */
    bool persist;
    downstream_done_fn on_done; /* required */
    void *userdata;
};

int downstream_new(const struct downstream_opts *opts, struct downstream **ret,
                   struct err *e) _must_check_;

/* One more agent on the same servers, catalogue and cache, on the transport t (taken: freed
 * by the downstream, also on failure). It has its own session, requests, subscriptions and
 * server requests; the servers are offered the capabilities of the agent that started them
 * (the first to initialize). The bridge is over when its last agent is (unless
 * downstream_opts.persist). Single mode takes one agent unless persist (-EOPNOTSUPP);
 * -ESHUTDOWN, -ENOMEM. */
int downstream_add_agent(struct downstream *d, struct agent_transport *t,
                         struct err *e) _must_check_;

/* The key of the bridge's own requestStates (input rounds across eras) derived from secret
 * (len bytes, borrowed), instead of one drawn at random: replicas given the same secret verify
 * each other's states, and a retry reaching a replica that does not hold its round is told to
 * start over rather than that its state is forged. Before the first agent's request; -EINVAL
 * (empty), -ENOMEM, -EIO. */
int downstream_set_state_key(struct downstream *d, const char *secret, size_t len) _must_check_;
/* The name of this replica, in clear at the start of its requestStates ("mcpb1.NAME."), so that a
 * load balancer sends a round's retry back to it; instead of a random one. 1 to 63 of
 * [A-Za-z0-9_-] (a DNS label, a pod's name, fits); -EINVAL, -ENOMEM. */
int downstream_set_replica(struct downstream *d, const char *name) _must_check_;

/* A new configuration (SIGHUP): entries that are new connect (if the agent has initialized),
 * removed ones are closed, changed ones (any difference in the entry as written) are closed and
 * connected again; unchanged ones are left alone, calls in flight included. The agent gets
 * notifications/tools|prompts|resources/list_changed when its lists change. Aggregate mode only
 * (single mode: -EOPNOTSUPP). */
int downstream_reload(struct downstream *d, const struct mcp_config *config,
                      struct err *e) _must_check_;

/* Begins the shutdown (SIGTERM, SIGINT; also the end of the last agent): every upstream is
 * closed (stdio servers: stdin closed, SIGTERM, SIGKILL; HTTP: DELETE), then what is queued for
 * the agents is written, and on_done follows, within DOWNSTREAM_SHUTDOWN_MS. Idempotent. */
void downstream_shutdown(struct downstream *d);

/* Frees at once (children killed and reaped). NULL-safe. */
void downstream_free(struct downstream *d);
