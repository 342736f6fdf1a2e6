/* downstream_pending_int.h - the records of an agent's requests in flight: on its list and in
 * the map of its ids, kept in a pool for reuse, bounded in number. */
#pragma once

#include "downstream/downstream_int.h"

#define DS_MAX_PENDING 4096 /* agent requests in flight (or waiting for the catalogue) */
#define DS_POOL_MAX    64   /* pending records kept for reuse: no malloc per call */

/* A record for the agent's request id (referenced) of method (for the log), on a->pending and
 * in the map of ids; NULL when there are DS_MAX_PENDING already or on ENOMEM. */
struct ds_pending *ds_pending_new(struct ds_agent *a, enum ds_pending_type type,
                                  struct json_object *id, const char *method);
/* Takes the record off the list and the map (to the pool). NULL-safe. Its call is not
 * cancelled: the caller cancels it or lets it go with its upstream. */
void ds_pending_free(struct ds_pending *p);
/* Frees a record that held the agent's request (p->msg), handing the request out as a message
 * in *m (its root the caller's to put after handling it). */
void ds_pending_take_request(struct ds_pending *p, struct jrpc_msg *m);
/* The agent's request in flight with this id, or NULL. */
struct ds_pending *ds_pending_find(struct ds_agent *a, struct json_object *id);
/* The newest record of this type, or NULL. */
struct ds_pending *ds_pending_find_type(struct ds_agent *a, enum ds_pending_type t);
/* Frees every record, and the pool. */
void ds_pending_release_all(struct ds_agent *a);
void ds_reply_too_many(struct ds_agent *a, struct json_object *id);
/* Keeps a request that names something not (yet) in the catalogue until the first round is
 * over (aggregate mode, while settling). true when held (or answered: no room). */
bool ds_hold(struct ds_agent *a, struct jrpc_msg *m);
/* Fails the agents' requests still waiting on a server that goes away. */
void ds_fail_pending_of(struct downstream *d, struct ds_server *s);
