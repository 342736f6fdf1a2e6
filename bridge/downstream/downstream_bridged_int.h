/* downstream_bridged_int.h - a server's requests forwarded to an agent (sampling, elicitation,
 * roots): the b<n> ids and tokens the agent sees, cancellation both ways, the agent's answers. */
#pragma once

#include "downstream/downstream_int.h"

#define DS_MAX_BRIDGED 256 /* server requests waiting for the agent's answer */

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
/* The agent went away: the servers' requests waiting for it are answered with an error. */
void ds_bridged_refuse_all(struct ds_agent *a);
