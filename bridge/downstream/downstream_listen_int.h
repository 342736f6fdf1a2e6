/* downstream_listen_int.h - a modern agent's subscriptions/listen: each open listen's filter,
 * the notifications it asks for, its end (graceful at shutdown, silent when cancelled). */
#pragma once

#include "downstream/downstream_int.h"

#define DS_MAX_LISTENS 64 /* a modern agent's subscriptions/listen requests open at once */

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
