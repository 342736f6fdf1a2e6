/* downstream_bridged.c - requests of servers forwarded to the agent (downstream.h).
 *
 * sampling/createMessage, elicitation/create and roots/list of a server reach the agent with
 * an id of the bridge's, "b<n>" (a string), when the agent declared the capability; the
 * agent's answer goes back to that server with its own id. A progress token in such a request
 * reaches the agent as that same "b<n>" (servers choose tokens alone, so two may collide). A
 * request dies with its server's session: the agent is then told with notifications/cancelled.
 * At most DS_MAX_BRIDGED wait at once; a list suffices.
 *
 * A 2026-07-28 agent takes no requests from servers: a request of a legacy server during one
 * of its calls becomes that call's InputRequiredResult (downstream_mrtr.c); any other is
 * refused. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_bridged_int.h"
#include "downstream/downstream_mrtr_int.h"

/* The id (and progress token) the agent knows b by: "b<n>". */
static void bridged_id(const struct ds_bridged *b, char buf[static 32])
{
    snprintf(buf, 32, "b%" PRIu64, b->n);
}

static void bridged_free(struct ds_agent *a, struct ds_bridged *b)
{
    list_remove(&b->node);
    a->n_bridged--;
    json_object_put(b->up_id);
    json_object_put(b->token);
    free(b);
}

static void tell_cancelled(struct ds_agent *a, const struct ds_bridged *b, const char *reason)
{
    char bid[32];
    bridged_id(b, bid);
    struct json_object *params = json_object_new_object();
    if (params && json_object_object_add(params, "requestId", json_object_new_string(bid)) == 0 &&
        json_object_object_add(params, "reason", json_object_new_string(reason)) == 0)
        ds_send_put(a, jrpc_new_notification("notifications/cancelled", params));
    json_object_put(params);
}

/* The session of a request that dies may be the agent's question to its user (elicitation):
 * with a reason the agent is told, and may stop asking. */
static void agent_drop(struct ds_agent *a, struct ds_server *s, uint64_t keep_gen,
                       const char *reason)
{
    struct list_node *i, *tmp;
    list_for_each_safe (i, tmp, &a->bridged) {
        struct ds_bridged *b = list_entry(i, struct ds_bridged, node);
        if ((s && b->s != s) || (keep_gen && b->gen == keep_gen))
            continue;
        if (reason && ds_may_tell(a))
            tell_cancelled(a, b, reason);
        bridged_free(a, b);
    }
    ds_mrtr_drop(a, s, keep_gen, !reason);
}

void ds_bridged_drop(struct downstream *d, struct ds_server *s, uint64_t keep_gen,
                     const char *reason)
{
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a))
        agent_drop(a, s, keep_gen, reason);
}

void ds_bridged_release_all(struct ds_agent *a)
{
    while (!list_is_empty(&a->bridged))
        bridged_free(a, list_entry(list_first(&a->bridged), struct ds_bridged, node));
}

/* The requests of servers the bridge forwards, and the capability of the agent each needs. */
static const struct {
    const char *method;
    const char *cap;
} FORWARDED[] = {
    {"sampling/createMessage", "sampling"},
    {"elicitation/create", "elicitation"},
    {"roots/list", "roots"},
};

static const char *request_capability(const char *method)
{
    for (size_t i = 0; i < ELEMENTSOF(FORWARDED); i++)
        if (strcmp(method, FORWARDED[i].method) == 0)
            return FORWARDED[i].cap;
    return NULL;
}

static void refuse(struct upstream *u, uint64_t gen, struct json_object *id, int code,
                   const char *message)
{
    struct json_object *err = json_object_new_object();
    if (err && json_object_object_add(err, "code", json_object_new_int(code)) == 0 &&
        json_object_object_add(err, "message", json_object_new_string(message)) == 0) {
        int r = upstream_respond(u, gen, id, NULL, err);
        (void)r; /* the server is gone, or no longer in that session: nothing to answer */
    }
    json_object_put(err);
}

void ds_bridged_refuse_all(struct ds_agent *a)
{
    while (!list_is_empty(&a->bridged)) {
        struct ds_bridged *b = list_entry(list_first(&a->bridged), struct ds_bridged, node);
        refuse(b->s->u, b->gen, b->up_id, JRPC_INTERNAL_ERROR, "the client went away");
        bridged_free(a, b);
    }
}

/* Whether the request may go to the agent a; else it is refused here. */
static bool may_forward(struct ds_agent *a, struct ds_server *s, uint64_t gen, const char *method,
                        struct json_object *id)
{
    struct downstream *d = s->d;
    const char *cap = request_capability(method);
    char text[DS_TEXT_MAX];

    if (!cap) {
        snprintf(text, sizeof(text), "mcp-bridge does not forward '%s' to its client", method);
        refuse(s->u, gen, id, JRPC_METHOD_NOT_FOUND, text);
        return false;
    }
    /* settings.sampling false: the agent is never asked for a completion */
    if (strcmp(method, "sampling/createMessage") == 0 && !d->settings.sampling) {
        refuse(s->u, gen, id, JRPC_METHOD_NOT_FOUND, "sampling is disabled by settings.sampling");
        return false;
    }
    /* only what the upstreams were offered, that is what the agent declared */
    if (!a || !a->client_caps || !json_object_object_get_ex(a->client_caps, cap, NULL) || !a->t ||
        ds_shutting(d)) {
        snprintf(text, sizeof(text), "the client does not support %s", cap);
        refuse(s->u, gen, id, JRPC_METHOD_NOT_FOUND, text);
        return false;
    }
    if (a->n_bridged >= DS_MAX_BRIDGED) {
        snprintf(text, sizeof(text), "too many requests waiting for the client (at most %d)",
                 DS_MAX_BRIDGED);
        refuse(s->u, gen, id, JRPC_INTERNAL_ERROR, text);
        return false;
    }
    return true;
}

void ds_bridged_request(struct ds_server *s, uint64_t gen, struct json_object *msg)
{
    struct downstream *d = s->d;
    const char *method = json_get_string(msg, "method");
    struct json_object *id = json_object_object_get(msg, "id");
    /* the agent whose call the server asks for, else the one the server was offered */
    struct ds_agent *a = ds_agent_of_call(d, upstream_related_call(s->u, msg));
    if (!a)
        a = d->lead;

    if (!method || !id || !may_forward(a, s, gen, method, id))
        return;
    if (a->modern) {
        if (!ds_mrtr_server_request(a, s, gen, msg))
            refuse(s->u, gen, id, JRPC_METHOD_NOT_FOUND,
                   "the client speaks MCP 2026-07-28, which takes requests of a server only "
                   "while one of its own requests to that server is in flight");
        return;
    }
    struct ds_bridged *b = calloc(1, sizeof(*b));
    char bid[32];
    if (!b)
        goto oom;
    list_init(&b->node);
    b->s = s;
    b->gen = gen;
    b->up_id = json_object_get(id);
    b->n = ++a->bridge_counter;
    struct json_object *params = json_object_object_get(msg, "params");
    struct json_object *token = jrpc_progress_token(params);
    b->token = json_object_get(token);
    bridged_id(b, bid);
    struct json_object *nid = json_object_new_string(bid);
    if (!nid || json_object_object_add(msg, "id", nid) < 0) {
        json_object_put(b->up_id);
        json_object_put(b->token);
        free(b);
        goto oom;
    }
    /* servers choose their tokens alone: two may use the same one, so the agent gets the
     * bridge's id as the token and its progress goes back to this server with its own */
    if (token)
        jrpc_set_progress_token(params, nid);
    list_add_head(&a->bridged, &b->node);
    a->n_bridged++;
    log_debug(d->log, "server '%s': %s forwarded to the client as %s", s->name, method, bid);
    ds_send_json(a, msg);
    return;
oom:
    refuse(s->u, gen, id, JRPC_INTERNAL_ERROR, "out of memory");
}

static struct ds_bridged *find_up(struct ds_agent *a, struct ds_server *s,
                                  struct json_object *up_id)
{
    struct list_node *i;
    list_for_each (i, &a->bridged) {
        struct ds_bridged *b = list_entry(i, struct ds_bridged, node);
        if (b->s == s && json_object_equal(b->up_id, up_id))
            return b;
    }
    return NULL;
}

/* The request the agent knows as "b<n>" (an id or a progress token of the bridge's), or NULL. */
static struct ds_bridged *find_bid(struct ds_agent *a, struct json_object *bid)
{
    const char *sid =
        json_object_is_type(bid, json_type_string) ? json_object_get_string(bid) : NULL;
    if (!sid || sid[0] != 'b' || sid[1] < '0' || sid[1] > '9')
        return NULL;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(sid + 1, &end, 10);
    if (errno || *end)
        return NULL;
    struct list_node *i;
    list_for_each (i, &a->bridged) {
        struct ds_bridged *b = list_entry(i, struct ds_bridged, node);
        if (b->n == n)
            return b;
    }
    return NULL;
}

void ds_bridged_cancelled(struct ds_server *s, struct json_object *msg)
{
    struct json_object *params = json_object_object_get(msg, "params");
    struct json_object *rid = json_object_object_get(params, "requestId");
    for (struct ds_agent *a = rid ? ds_agent_first(s->d) : NULL; a; a = ds_agent_next(a)) {
        struct ds_bridged *b = find_up(a, s, rid);
        char bid[32];
        if (a->modern)
            ds_mrtr_server_cancelled(a, s, rid);
        if (!b)
            continue;
        bridged_id(b, bid);
        bridged_free(a, b);
        struct json_object *nid = json_object_new_string(bid);
        if (nid && json_object_object_add(params, "requestId", nid) == 0)
            ds_send_json(a, msg);
        else
            json_object_put(nid);
        return;
    }
}

void ds_bridged_progress(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    /* progress of the agent on a request a server made: the token is the bridge's */
    struct ds_bridged *b = find_bid(a, json_object_object_get(m->params, "progressToken"));
    if (b && b->token &&
        json_object_object_add(m->params, "progressToken", json_object_get(b->token)) == 0) {
        int r = upstream_notify(b->s->u, m->method, m->params);
        if (r < 0)
            log_debug(d->log, "server '%s': %s not sent: %s", b->s->name, m->method, strerror(-r));
    } else {
        log_debug(d->log, "client progress for no request of a server ignored");
    }
}

void ds_bridged_response(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    struct ds_bridged *b = find_bid(a, m->id);
    if (!b) {
        log_debug(d->log, "client answer to no request of a server ignored");
        return;
    }
    /* "result": null is a result too (jrpc.h): the server gets {} rather than nothing */
    struct json_object *empty = NULL;
    if (!m->error && !m->result)
        m->result = empty = json_object_new_object();
    int r = upstream_respond(b->s->u, b->gen, b->up_id, m->result, m->error);
    if (r < 0)
        log_debug(d->log, "server '%s': answer to b%" PRIu64 " not sent: %s", b->s->name, b->n,
                  strerror(-r));
    json_object_put(empty);
    bridged_free(a, b);
}
