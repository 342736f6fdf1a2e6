/* downstream_agent_int.h - the ground floor of the downstream: what every part uses and which
 * calls no part. The lifecycles' transitions and the predicates read from them, the agents'
 * list, sending to an agent (with its flow control: an agent that does not read its answers is
 * not read either), replies and errors, what an agent declared, and the server of a name. */
#pragma once

#include "downstream/downstream_int.h"

/* A handler of one agent method (the dispatch tables). */
struct ds_method {
    const char *method;
    void (*handle)(struct ds_agent *a, struct jrpc_msg *m);
};

/* The handler of method in the table of n, or NULL. */
const struct ds_method *ds_method_find(const struct ds_method *table, size_t n, const char *method);

/* Moves the agent's session to the state to; an illegal transition is a bug (asserted). */
void ds_set_session(struct ds_agent *a, enum ds_session to);
/* Moves the servers' first round to to; an illegal transition is a bug (asserted). */
void ds_set_round(struct downstream *d, enum ds_round to);
/* Reading the agent: ON <-> THROTTLED, and OFF (for good) from either. */
void ds_set_reading(struct ds_agent *a, enum ds_reading to);

/* The agent's initialize was accepted (notifications and lists of it may follow). */
bool ds_init_seen(const struct ds_agent *a);
/* ... and answered: notifications may go to the agent. */
bool ds_initialized(const struct ds_agent *a);
/* The upstreams were made real and connected. */
bool ds_started(const struct downstream *d);
/* The first round of the catalogue is under way (aggregate): what is not listed yet waits. */
bool ds_settling(const struct downstream *d);
/* Shutdown has begun. */
bool ds_shutting(const struct downstream *d);
/* The agent may hear of a change: initialized and not shutting down. */
bool ds_may_tell(const struct ds_agent *a);
/* Some agent may hear of a change. */
bool ds_may_tell_any(const struct downstream *d);
/* The agents of d, in the order they came: for (a = ds_agent_first(d); a; a = ds_agent_next(a)).
 * None goes away before the downstream. */
struct ds_agent *ds_agent_first(struct downstream *d);
struct ds_agent *ds_agent_next(struct ds_agent *a);
/* The active server of that name, or NULL. */
struct ds_server *ds_server_find(struct downstream *d, const char *name);

/* Sends o (borrowed) to the agent. */
void ds_send_json(struct ds_agent *a, struct json_object *o);
/* Sends the message text[0..len) to the agent, as it is. */
void ds_send_text(struct ds_agent *a, const char *text, size_t len);
/* ds_send_text of a message in pieces, none copied that need not be (agent_transport.h's
 * sendv); -EOPNOTSUPP, nothing sent, when the agent's transport cannot take pieces. */
int ds_send_iov(struct ds_agent *a, const struct iovec *iov, int n);
/* The same, and puts o. */
void ds_send_put(struct ds_agent *a, struct json_object *o);
/* Answers id (borrowed) with result (taken). */
void ds_reply_result(struct ds_agent *a, struct json_object *id, struct json_object *result);
/* Answers id (borrowed; NULL: "id": null) with a JSON-RPC error. */
void ds_reply_error(struct ds_agent *a, struct json_object *id, int code, const char *message);
void ds_reply_errorf(struct ds_agent *a, struct json_object *id, int code, const char *fmt, ...)
    _printf_(4, 5);
bool ds_log_debugging(const struct downstream *d);
/* text past its leading "server 'name': " (the upstream's messages begin so), or text itself
 * (borrowed): for words that name the server already. */
const char *ds_past_server_name(const char *name, const char *text);
/* Adds "resultType": "complete" to a result that has none and, when cacheable, "ttlMs"
 * (ttl_ms) and "cacheScope" ("private") when missing (a modern agent's). -ENOMEM. */
int ds_result_hints(struct json_object *result, bool cacheable, int64_t ttl_ms);

/* What the agent declared: its protocol version (NULL when none or unknown) and its
 * capabilities (borrowed, NULL: none); the lead agent's is what every upstream is offered.
 * -ENOMEM. */
int ds_take_capabilities(struct ds_agent *a, const char *version, struct json_object *caps);
/* logging/setLevel's params.level, remembered in a->log_level (re-applied after reconnects).
 * 0, or < 0 when m was answered (-EINVAL no level, -ENOMEM). */
int ds_keep_level(struct ds_agent *a, struct jrpc_msg *m);
