/* downstream_mrtr_int.h - across eras, a legacy server's requests during a modern agent's call:
 * the agent's request answered with an InputRequiredResult whose requestState resumes it when
 * the agent sends it again. */
#pragma once

#include "downstream/downstream_int.h"

/* A legacy server's request arrived (upstream_handler.on_request) while the agent is modern:
 * when it belongs to a request of the agent in flight (upstream_related_call), that request is
 * answered with an InputRequiredResult whose requestState (HMAC-signed, the downstream's key)
 * resumes it; true when taken (false: refuse it as today). */
bool ds_mrtr_server_request(struct ds_agent *a, struct ds_server *s, uint64_t gen,
                            struct json_object *msg);
/* The agent of the call c of a server (in flight, or suspended here), or NULL (c NULL, or a
 * call of the bridge's own). */
struct ds_agent *ds_agent_of_call(struct downstream *d, const struct upstream_call *c);
/* The record of a's whose upstream call is c: in flight or suspended; NULL. */
struct ds_pending *ds_mrtr_record_of_call(struct ds_agent *a, const struct upstream_call *c);
/* A modern agent's request to s carries params.requestState: 1 when it was the bridge's own
 * (resumed, or refused as forged or expired: answered), 0 when it is not the bridge's
 * (forward it as it is: the server's own state), -1 on ENOMEM (answered). */
int ds_mrtr_resume(struct ds_agent *a, struct jrpc_msg *m, struct ds_server *s);
/* The upstream's answer (as upstream_response_fn) to a pending with mrtr set: true when
 * taken (kept until the agent comes back, or answered). */
bool ds_mrtr_on_response(struct ds_pending *p, struct json_object *response, int error,
                         const char *message);
/* The pending p goes away (freed): its rounds' state with it. */
void ds_mrtr_pending_free(struct ds_pending *p);
/* The downstream's requestState key goes (downstream_free): wiped. */
void ds_mrtr_key_free(struct downstream *d);
/* Everything suspended goes (shutdown, downstream_free). */
void ds_mrtr_release_all(struct ds_agent *a);
/* As ds_bridged_drop (which calls it): the requests of s's server (every server's when NULL)
 * but those of session keep_gen are forgotten; gone: the server (or the bridge) goes, and the
 * agent's requests suspended on it with it (their calls cancelled). */
void ds_mrtr_drop(struct ds_agent *a, struct ds_server *s, uint64_t keep_gen, bool gone);
/* notifications/cancelled of s's server for its request up_id. */
void ds_mrtr_server_cancelled(struct ds_agent *a, struct ds_server *s, struct json_object *up_id);
