/* downstream_forward_int.h - an agent's requests routed (by name, by resource URI) and forwarded
 * to a server, held while the catalogue settles, cancelled, and failed when their server goes
 * away. */
#pragma once

#include "downstream/downstream_int.h"

/* Sends the request to s; its record, or NULL when it was answered at once (no room, no
 * memory). */
struct ds_pending *ds_forward(struct ds_agent *a, struct jrpc_msg *m, struct ds_server *s,
                              bool tool_call);
/* resources/subscribe and unsubscribe, both modes, forwarded to s (and remembered, to be
 * renewed after reconnects). */
void ds_forward_subscription(struct ds_agent *a, struct jrpc_msg *m, struct ds_server *s);
/* Aggregate mode's handlers: tools/call (of a server's tool: the proxy tool's calls are the
 * dispatcher's), prompts/get, resources/read|subscribe|unsubscribe, completion/complete. */
void ds_forward_tool_call(struct ds_agent *a, struct jrpc_msg *m);
void ds_forward_prompt_get(struct ds_agent *a, struct jrpc_msg *m);
void ds_forward_resource(struct ds_agent *a, struct jrpc_msg *m);
void ds_forward_completion(struct ds_agent *a, struct jrpc_msg *m);
/* A listing round is over (or a server failed): the tools/calls waiting for the servers they
 * woke are routed, or answered as unknown, once no server is connecting or listing. */
void ds_forward_woken(struct downstream *d);
/* notifications/cancelled from the agent: its request is cancelled upstream. */
void ds_cancel_request(struct ds_agent *a, struct json_object *params);
