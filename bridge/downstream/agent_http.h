/* agent_http.h - agents over Streamable HTTP: the bridge's own listener at /mcp, each agent one
 * agent_transport under the downstream (downstream_add_agent()), as agent_stdio is on stdio.
 *
 * libmicrohttpd runs in external-event mode on the bridge's loop (its epoll descriptor watched
 * by the loop, its timeout a loop timer); a request that must wait for its answer suspends its
 * connection and is resumed when the answer comes: no thread. Two kinds of agent, by era:
 *   - 2025-11-25: a session. The POST of initialize makes it (Mcp-Session-Id in the answer);
 *     the session's later POSTs, its one GET stream and DELETE (the end) name it. Its requests
 *     are answered on their POST's stream, its notifications of progress on the stream of the
 *     request they belong to, the servers' requests and other notifications on its GET stream
 *     (else the newest open POST stream).
 *   - 2026-07-28: one agent per request (no session). The request's _meta carries its era
 *     and capabilities, its Mcp-* headers are checked against its body; the agent ends with
 *     its response stream (closing it cancels the request; subscriptions/listen stays open
 *     until the client closes it), or, answered with an InputRequiredResult, with the retry
 *     that carries its requestState (a new POST, given to the same agent).
 * Every request passes the checks first: Host and Origin against DNS rebinding (403), the
 * bearer token when one is set (401; with an issuer, agent_http_auth.h: 401, 403 for a scope
 * missing, the request suspended while the issuer's keys are fetched), the bounds on agents (503), streams (503) and body size
 * (413), each with a JSON-RPC error in its body. docs/bridge.md, "Serving over HTTP", is the
 * user's account. Not thread-safe; callbacks from the loop. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"

#include "core/loop.h"

#define AGENT_HTTP_MAX_AGENTS_DEFAULT 64
#define AGENT_HTTP_PATH               "/mcp"
/* GET: 200 "ok" while the listener is up, without a token or a Host check (a load balancer's or
 * an orchestrator's health check, which knows neither); it tells nothing else */
#define AGENT_HTTP_HEALTH_PATH "/healthz"

struct downstream; /* downstream.h */
struct agent_http;

struct agent_http_opts {
    struct loop *loop;    /* required */
    struct log *log;      /* required */
    struct downstream *d; /* required: where the agents go (persist) */
    const char *listen;   /* "PORT", "ADDR:PORT" or "[ADDR6]:PORT"; port 0 picks one */
    const char *token;    /* the bearer token agents must send (copied, wiped); NULL: none */
    /* OAuth 2.1 instead (agent_http_auth.h): agents send JWT access tokens of this issuer;
     * NULL: none. The others go with it (copied): the bridge's URL as agents see it (NULL: the
     * bound one), what "aud" must hold (NULL: that URL), the scopes every token needs
     * (NULL-ended; NULL: none) */
    const char *issuer;
    const char *public_url;
    const char *audience;
    const char *const *scopes;
    /* origins allowed besides a loopback bind's own (exact "scheme://host[:port]"), NULL-ended;
     * borrowed for the call */
    const char *const *allow_origins;
    size_t max_agents; /* 0: AGENT_HTTP_MAX_AGENTS_DEFAULT */
};

/* Starts listening. A bind that is not loopback is refused without a token or an issuer (-EPERM). -EINVAL,
 * -EADDRINUSE ..., -ENOMEM, with e set. Caller frees with agent_http_free(), after the
 * downstream (whose agents' transports it serves). */
int agent_http_new(const struct agent_http_opts *opts, struct agent_http **ret,
                   struct err *e) _must_check_;

/* "http://127.0.0.1:PORT/mcp", with the port bound. Borrowed. */
const char *agent_http_url(const struct agent_http *h);

/* Stops listening; connections still open are closed. NULL-safe. */
void agent_http_free(struct agent_http *h);
