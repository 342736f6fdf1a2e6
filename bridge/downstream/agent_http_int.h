/* agent_http_int.h - what the two halves of the HTTP listener share: agent_http_listen.c (the
 * daemon on the loop, the checks, the requests) and agent_http.c (the agent's transport and its
 * response streams). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "credkit/buf.h"
#include "credkit/list.h"
#include "credkit/strv.h"

#include "core/jsonrpc.h"
#include "core/loop.h"
#include "downstream/agent_http.h"
#include "downstream/agent_http_auth.h"
#include "downstream/agent_transport.h"

#define AH_SESSION_ID_BYTES 24                   /* random bytes of an Mcp-Session-Id */
#define AH_STREAM_QUEUE_MAX (8u * 1024u * 1024u) /* bytes waiting on one stream */
#define AH_MAX_STREAMS      256                  /* response streams open at once, all agents */
#define AH_SESSION_IDLE_MS  (30 * 60 * 1000)     /* a session with no stream and no request */
/* A 2026-07-28 request answered with an InputRequiredResult waits this long for its retry (as
 * long as the downstream keeps the round: downstream_mrtr.c's MRTR_KEEP_MS) */
#define AH_ROUND_KEEP_MS (10 * 60 * 1000)
#define AH_READ_BLOCK    (64u * 1024u)
/* An SSE comment on a stream with nothing to say: a client gone is seen only when written to
 * (a suspended connection is not watched), and proxies keep the stream open */
#define AH_KEEPALIVE_MS (25 * 1000)

enum ah_kind {
    AH_SESSION, /* 2025-11-25: Mcp-Session-Id */
    AH_REQUEST, /* 2026-07-28: one request, one agent */
};

struct ah_agent;

/* One response on its way: a POST's (one message's answer, with what comes before it) or a
 * session's GET stream. Owned by its MHD request (struct ah_req); its agent may go first. */
struct ah_stream {
    struct ah_agent *a;    /* NULL once the agent went */
    struct list_node node; /* in a->streams, newest first */
    struct MHD_Connection *conn;
    bool sse;       /* text/event-stream; else one application/json answer */
    bool upgrade;   /* JSON that becomes SSE when something comes before the answer */
    bool suspended; /* waiting for something to write */
    bool closed;    /* nothing more comes: it ends once out is written */
    bool waiting;   /* the answer to id_key is still to come */
    char id_key[JRPC_ID_KEY_MAX + 2];
    char token_key[JRPC_ID_KEY_MAX + 2]; /* its request's progress token; "" none */
    struct buf out;
    size_t off; /* of out, written */
    /* the JSON answer's bytes, handed to libmicrohttpd (ah_stream_json_response): still
     * pending for the agent's flow control until the request ends */
    size_t given;
    unsigned status; /* JSON: the HTTP status of the answer */
};

struct ah_agent {
    struct agent_transport base;
    struct agent_http *h;  /* NULL once the listener went */
    struct list_node node; /* in h->agents */
    enum ah_kind kind;
    char *sid; /* AH_SESSION */
    /* AH_REQUEST: the requestState of its last InputRequiredResult; the retry that carries it
     * comes to this agent, which holds the round (NULL: none) */
    char *state;
    struct list_node streams;
    struct ah_stream *get; /* the session's GET stream */
    bool reading;
    bool ended; /* on_eof told (DELETE, idle, the request's stream over) */
    bool write_closed;
    agent_transport_done_fn done;
    void *done_userdata;
    struct loop_timer *idle;
};

struct agent_http {
    struct loop *loop;
    struct log *log;
    struct downstream *d;
    struct MHD_Daemon *daemon;
    struct loop_io *io;
    struct loop_timer *timer;
    struct loop_timer *keepalive;
    struct loop_deferred kick;
    char url[128];
    char host[72]; /* the bound address as a Host header names it: "127.0.0.1", "[::1]" */
    /* the host of --listen-public-url (a reverse proxy may pass it on as Host); "" none */
    char public_host[256];
    bool loopback, wildcard;
    char *token;
    struct ah_auth *auth;          /* --listen-issuer; NULL: none */
    struct list_node auth_waiting; /* requests waiting for the issuer's keys (struct ah_req) */
    struct strv origins;
    size_t max_agents, n_agents, n_streams; /* n_agents: those not ended (--max-agents) */
    struct list_node agents;
};

/* A new agent of kind on h's loop (not yet given to the downstream). NULL on ENOMEM. */
struct ah_agent *ah_agent_new(struct agent_http *h, enum ah_kind kind);
/* The session of that id, or NULL. */
struct ah_agent *ah_agent_find(struct agent_http *h, const char *sid);
/* The 2026-07-28 agent whose input round requestState names, or NULL; the state is its no
 * more (a retry is taken once). */
struct ah_agent *ah_agent_of_state(struct agent_http *h, const char *state);
/* The agent's side is over (DELETE, idle, its request's stream done): on_eof, once. */
void ah_agent_end(struct ah_agent *a);
/* Any request of the session: its idle clock starts again. */
void ah_agent_touch(struct ah_agent *a);

/* A new stream of a for the connection conn (not yet answered). NULL on ENOMEM. */
struct ah_stream *ah_stream_new(struct ah_agent *a, struct MHD_Connection *conn, bool sse);
/* The connection went (or was answered in full): the stream with it. NULL-safe. */
void ah_stream_free(struct ah_stream *st);
/* The MHD response of an SSE stream (caller queues and destroys it). NULL on ENOMEM. */
struct MHD_Response *ah_stream_sse_response(struct ah_stream *st);

/* The MHD response of a JSON answer: st's bytes, handed over without a copy (libmicrohttpd
 * frees them once sent). Caller queues and destroys it. NULL on ENOMEM. */
struct MHD_Response *ah_stream_json_response(struct ah_stream *st);

/* A keep-alive comment on each idle SSE stream of a. */
void ah_agent_keepalive(struct ah_agent *a);

/* The daemon has work (a connection resumed): run it once the loop is back. */
void ah_kick(struct agent_http *h);
