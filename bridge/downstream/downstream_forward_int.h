/* downstream_forward_int.h - an agent's requests routed (by name, by resource URI) and forwarded
 * to a server, held while the catalogue settles, cancelled, and failed when their server goes
 * away. */
#pragma once

#include "downstream/downstream_int.h"

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
/* The server a resource URI belongs to (downstream_forward.c's routing), or NULL. */
struct ds_server *ds_route_uri(struct downstream *d, const char *uri);
