/* downstream.h - the MCP server the agent talks to over stdio: the bridge proper.
 *
 * The agent (pi, Claude Code, Cursor, any MCP client) runs mcp-bridge and speaks MCP on the
 * bridge's stdin/stdout (newline framing, framing.h). The downstream answers it with the
 * servers of the configuration behind it, each an upstream (upstream.h), in one of two modes.
 *
 * Aggregate mode (mcp-bridge, mcp-bridge serve): every valid entry of the configuration.
 *   - initialize is answered at once, by the bridge: protocolVersion the agent's when the bridge
 *     knows it (else UPSTREAM_PROTOCOL_LATEST), serverInfo {"name":"mcp-bridge",...},
 *     capabilities tools/prompts/resources (listChanged, subscribe), logging, completions, and
 *     instructions naming the servers (those listed from the cache, then those connecting, as
 *     such: nothing is connected yet). Then the upstreams start, in parallel, as their
 *     "lifecycle" says (below), offering the agent's own capabilities (roots, sampling,
 *     elicitation: only those the agent declared, as objects, with what it declared in them;
 *     nothing else) and the agent's protocol version.
 *   - lifecycles: "lazy" (the default) is not connected at start when the metadata cache
 *     (meta_cache.h) holds its lists for the entry as written, else connected to learn them;
 *     "eager" and "keep-alive" connect at start. Lazy and eager servers are disconnected
 *     (upstream_disconnect: no process, no socket) once idle for their idleTimeout: no call in
 *     flight, no request of theirs waiting for the agent, no listing, no subscription of the
 *     agent on them. A request routed to a server that is not connected connects it (the
 *     upstream connects from IDLE by itself). "disabled": true: never started, nothing listed.
 *     Single mode ignores all this: its server is always connected.
 *   - tools/list, prompts/list, resources/list, resources/templates/list answer from the
 *     catalogue: each upstream's lists, fetched through all pages after each READY and after
 *     each list_changed notification from it, or from the cache until then. The first answer
 *     waits until every upstream has settled (listed, failed, or listed from the cache) or the
 *     settle window passed (settings.settleTimeout, 1.5 s by default, at most the connect
 *     timeout), never longer; upstreams that come later announce themselves with
 *     notifications/tools/list_changed (etc.). The lists are written to the cache after each
 *     listing round (at most once a second, and at shutdown). One page,
 *     no cursor. The agent is told of a change (notifications/<kind>/list_changed) only in lists
 *     it has been given, so the upstreams connecting at startup cause no storm of them.
 *   - tools and prompts are renamed (naming.h); excludeTools are left out; tools/call and
 *     prompts/get map the name back through a hash lookup. An unknown name is -32602 (as MCP
 *     servers answer an unknown tool); a request naming a tool, prompt or resource that is not
 *     in the catalogue before it has settled waits for it, like the first list. Resource URIs
 *     are not renamed: resources/read, subscribe and unsubscribe go to the upstream that listed
 *     the URI, else the one whose template's literal prefix matches longest, else - when only
 *     one upstream has resources - to it; otherwise -32002. completion/complete goes by ref
 *     (prompt name or template URI) the same way.
 *   - logging/setLevel is remembered and fanned out to every upstream with "logging", now and
 *     after each (re)connect; ping is answered by the bridge.
 * Single mode (mcp-bridge connect NAME|URL): one upstream, passed through transparently: the
 *   agent's initialize is answered with the upstream's own InitializeResult (protocolVersion,
 *   capabilities, serverInfo, instructions) once it is READY (or -32000 with the reason after
 *   the connect timeout, or at once when the entry cannot work: the agent may send initialize
 *   again), names and lists unchanged, every request forwarded as it is (ping included, once
 *   initialized).
 *
 * Modern agents (2026-07-28: no initialize; downstream_modern.c, downstream_listen.c): an agent
 *   whose first request is server/discover, or carries params._meta
 *   io.modelcontextprotocol/protocolVersion, before any initialize, is modern for the process
 *   (once that _meta passes the checks below); initialize makes it legacy, as today. Its first
 *   request starts the upstreams as initialize does, its _meta clientCapabilities taking the
 *   place of initialize's capabilities. Every request of it is checked: protocolVersion or
 *   clientCapabilities missing -32600, a version other than 2026-07-28 -32022 with
 *   data.supported, a logLevel that is none -32602; ping, logging/setLevel,
 *   resources/subscribe and unsubscribe -32601; initialize -32600. server/discover is answered
 *   as initialize would be (aggregate), from the server's InitializeResult (single, legacy
 *   server) or by the server (single, modern server). Results get "resultType": "complete"
 *   when missing, lists and resources/read "ttlMs" and "cacheScope" ("private"); resource not
 *   found is -32602. A server's notifications/message goes to it only for a request of it in
 *   flight on that server that asked for logs (_meta logLevel), at or above that level (a
 *   legacy server's level is lowered with logging/setLevel to the lowest asked for). List
 *   changes and resource updates reach it only on its subscriptions/listen requests: each
 *   acknowledged at once, then the notifications its filter asks for, tagged with
 *   _meta["io.modelcontextprotocol/subscriptionId"]; its resourceSubscriptions subscribed on
 *   the servers as resources/subscribe is for a legacy agent; cancelled: no answer; at
 *   shutdown: its closing result.
 * Single mode across eras: a legacy agent's initialize with a modern server is answered from
 *   the server's discover information (protocolVersion the agent's, else
 *   UPSTREAM_PROTOCOL_LATEST), and its ping by the bridge.
 *
 * Both modes:
 *   - results pass through verbatim (content of every type, structuredContent, isError, _meta);
 *     only the id is the agent's again. Requests pass with their params as the agent sent them
 *     (_meta included), but for the progress token and, in aggregate mode, the name.
 *   - an agent request whose id is that of one of its requests still in flight (or waiting) is
 *     answered -32600 ("id already in use") and not taken; 1 and "1" are different ids.
 *   - requests carry the agent's progress token to the upstream (mapped there, upstream.h) and
 *     progress comes back with it (progress with a token of no call of the bridge's is dropped);
 *     notifications/cancelled from the agent cancels the upstream call (upstream_call_cancel
 *     sends it on with the upstream's id); for a request already answered it is ignored.
 *   - a tools/call that fails in the bridge (upstream down, timed out, session lost, not
 *     connected in time) is answered with a tool result with isError and a message saying what
 *     happened and that the call may be retried - not a JSON-RPC error that ends the agent's
 *     turn; for a timeout it says that the call timed out and that notifications/cancelled was
 *     sent. Other methods get JSON-RPC errors (-32001 timeout, -32000 connection closed).
 *   - server->client requests (sampling/createMessage, elicitation/create in form and url mode,
 *     roots/list) are forwarded to the agent as they are, with an id of the bridge's ("b" +
 *     counter, as a string) when the agent declared the capability, else answered -32601; the
 *     agent's answer goes back to the upstream with the upstream's id. A progress token in such
 *     a request reaches the agent as that same "b<n>" string (servers choose tokens alone, so
 *     two may collide), and the agent's notifications/progress for it goes to that server with
 *     its own token. notifications/cancelled from an upstream for such a request is forwarded
 *     with the bridge's id; when the request dies with the server's session (connection lost,
 *     server removed) the agent gets notifications/cancelled for it from the bridge.
 *   - resource subscriptions survive reconnects: the bridge remembers each resources/subscribe
 *     the server accepted (URI -> server name, at most 4096) and forgets it at the agent's
 *     resources/unsubscribe; after each READY of a server (a reconnect, or a reload that
 *     re-created the entry) resources/subscribe is sent again for every URI subscribed on it.
 *     Those answers are only logged (failures at warn level).
 *   - notifications/message and notifications/resources/updated are forwarded as they are;
 *     notifications/roots/list_changed from the agent is sent to every READY upstream.
 *   - before initialize only ping is answered; other requests get -32600 ("not initialized").
 *     Unknown methods get -32601. A line that is not JSON gets -32700 with id null.
 *
 * Flow control towards the agent: when the answers queued for the agent's stdout (the ones its
 * pipe does not take yet) exceed DOWNSTREAM_AGENT_HIGH_WATER bytes, the bridge stops reading
 * the agent's stdin, and reads again once that queue has drained - unless shutdown has begun,
 * which stops reading for good. An agent that sends requests without reading its answers thus
 * sees its own writes block instead of answers being dropped, and the bridge holds at most
 * what is in flight besides the high-water mark (the framing's bound, FRAMING_MAX_PENDING_DEFAULT,
 * is then only a last resort: an answer that does not fit is dropped with an error in the log).
 * While reading is stopped, the end of the agent's stdin is seen only once the agent reads
 * again (or closes its stdout: that breaks the connection).
 *
 * Shutdown: end of stdin (or downstream_shutdown) closes every upstream (stdio servers: close
 * stdin, SIGTERM, SIGKILL; HTTP: DELETE) and calls on_done once everything is reaped and the
 * answers still queued for stdout are written (bounded by DOWNSTREAM_SHUTDOWN_MS in all).
 *
 * Not thread-safe; callbacks from the loop. The parts of the implementation (catalogue, pending
 * requests, forwarding, server requests, subscriptions, single mode) are mapped at the top of
 * downstream_int.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

#include "core/loop.h"

#define DOWNSTREAM_SHUTDOWN_MS (8 * 1000)
/* Bytes queued for the agent's stdout above which its stdin is no longer read (see above). */
#define DOWNSTREAM_AGENT_HIGH_WATER (4u * 1024u * 1024u)

enum downstream_mode {
    DOWNSTREAM_AGGREGATE,
    DOWNSTREAM_SINGLE,
};

struct downstream;
struct credentials_provider; /* credentials.h */
struct agent_transport;      /* agent_transport.h */

/* The bridge is over (stdin ended, or downstream_shutdown() finished): status 0, or -errno when
 * the agent's side broke (stdout closed: -EPIPE). */
typedef void (*downstream_done_fn)(int status, void *userdata);

struct downstream_opts {
    struct loop *loop; /* required */
    struct log *log;   /* required */
    /* the agent's side, O_NONBLOCK, staying the caller's; both -1: no agent yet (aggregate
     * mode: they come with downstream_add_agent()) */
    int in_fd, out_fd;
    enum downstream_mode mode;
    /* The servers: every valid entry of config (aggregate), or the one named by single_name
     * (single; an entry built from a URL on the command line is passed in a config of its
     * own). The config is borrowed only during downstream_new() and downstream_reload(). */
    const struct mcp_config *config;
    const char *single_name;
    mcp_lookup_fn lookup; /* ${VAR} lookup for upstreams; NULL: the environment */
    void *lookup_userdata;
    /* Makes the credentials provider of an entry's upstream (credentials.h; config is the
     * configuration being loaded, borrowed for the call). NULL: the default provider, the
     * entry itself through lookup. The commands give the helpers (cred_setup.h). */
    int (*credentials_new)(void *userdata, const struct mcp_config *config,
                           const struct mcp_server *entry, struct credentials_provider **ret,
                           struct err *e);
    void *credentials_userdata;
    int64_t connect_timeout_ms; /* 0: UPSTREAM_CONNECT_TIMEOUT_DEFAULT_MS */
    downstream_done_fn on_done; /* required */
    void *userdata;
};

int downstream_new(const struct downstream_opts *opts, struct downstream **ret,
                   struct err *e) _must_check_;

/* One more agent on the same servers, catalogue and cache, on the transport t (taken: freed
 * by the downstream, also on failure). It has its own session, requests, subscriptions and
 * server requests; the servers are offered the capabilities of the agent that started them
 * (the first to initialize). The bridge is over when its last agent is. Aggregate mode only
 * (single mode: -EOPNOTSUPP once it has its agent); -ESHUTDOWN, -ENOMEM. */
int downstream_add_agent(struct downstream *d, struct agent_transport *t,
                         struct err *e) _must_check_;

/* A new configuration (SIGHUP): entries that are new connect (if the agent has initialized),
 * removed ones are closed, changed ones (any difference in the entry as written) are closed and
 * connected again; unchanged ones are left alone, calls in flight included. The agent gets
 * notifications/tools|prompts|resources/list_changed when its lists change. Aggregate mode only
 * (single mode: -EOPNOTSUPP). */
int downstream_reload(struct downstream *d, const struct mcp_config *config,
                      struct err *e) _must_check_;

/* Begins the shutdown described above (SIGTERM, SIGINT). Idempotent. */
void downstream_shutdown(struct downstream *d);

/* Frees at once (children killed and reaped). NULL-safe. */
void downstream_free(struct downstream *d);
