/* downstream_dispatch_int.h - the agents' messages: each parsed once and handed to its handler
 * by the dispatch tables (requests by mode and era, notifications, answers to the servers'
 * requests); list requests answered from the catalogue, or kept until it has settled. It sits
 * under downstream.c, which binds each agent's transport to it and hands it the requests held
 * for the catalogue; a session begun is reported through struct ds_hooks. */
#pragma once

#include "downstream/downstream_int.h"

/* The agent transport's on_message (userdata: the struct ds_agent): one message of the agent,
 * parsed and dispatched; ignored once shutting down. text is borrowed. */
void ds_dispatch_message(const char *text, size_t len, void *userdata);
/* A request of the agent (also one held until the catalogue settled), to its handler: answered
 * now, or kept as a pending record. m stays the caller's. */
void ds_dispatch_request(struct ds_agent *a, struct jrpc_msg *m);
/* Answers the agent's list request id (borrowed) with the catalogue's list of kind k and marks
 * k listed; false when it could not (answered -32603). */
bool ds_answer_list(struct ds_agent *a, struct json_object *id, enum catalog_kind k);
