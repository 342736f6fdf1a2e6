/* upstream_mrtr.c - a modern server's InputRequiredResult satisfied for a caller that did not
 * ask to see it (upstream.h, UPSTREAM_CALL_INPUT_PASS): its input requests handed to
 * on_request as server requests, their answers gathered and the request sent again; and which
 * call a server request belongs to (upstream_related_call).
 *
 * While its inputs are out, a call stays on the sent list and in the id map under the id the
 * server answered, as if it were still waiting for that answer: the call's timer keeps
 * running (a timeout fails it and cancels the old id), a lost connection fails it with the
 * others in flight, upstream_call_cancel() and upstream_free() free it, and the rounds' state
 * goes with it (up_mrtr_free). Nothing is sent meanwhile: the server has forgotten the request
 * (2026-07-28 servers keep no state between rounds; requestState carries it).
 *
 * An input request goes to on_request with an id of the bridge's own, a string
 * "mcpb-input-<call id>.<n>" (call ids are never reused, so these never collide with one
 * another; modern servers send no requests of their own, and a legacy server's ids cannot
 * reach this code: no InputRequiredResult comes from it). Its answer comes back through
 * upstream_respond(): a result is kept under the input's key; an error fails the call, as the
 * specification has no way to tell the server that one input could not be had (InputResponses
 * holds results only). Once every input of the round is answered, the request goes again
 * (up_call_reissue: a new id) with the caller's params, "inputResponses" and the server's
 * "requestState" as it came (none when it gave none). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"
#include "credkit/util.h"

#include "upstream/upstream_int.h"

#define INPUT_ID_PREFIX "mcpb-input-"
#define INPUT_MAX       64 /* input requests in one round: more is a misbehaving server */

struct up_input {
    char *key;              /* the server's key in inputRequests */
    char *method;           /* for messages */
    struct json_object *id; /* the id on_request was given (a string of ours) */
    bool answered;
};

struct up_mrtr {
    unsigned rounds;               /* InputRequiredResults seen */
    struct json_object *base;      /* the caller's params (reference): every round starts from it */
    struct json_object *state;     /* the server's requestState of this round (reference) */
    struct json_object *responses; /* inputResponses being gathered */
    struct up_input *inputs;
    size_t n_inputs, n_waiting;
    bool dispatching;    /* the inputs are being handed to on_request: answers wait for it */
    bool *alive;         /* while dispatching: set false when the record goes */
    char *error_message; /* an input failed while dispatching: the call fails with this */
};

static bool may_ask_input(const char *method)
{
    return strcmp(method, "tools/call") == 0 || strcmp(method, "resources/read") == 0 ||
           strcmp(method, "prompts/get") == 0;
}

static bool is_input_method(const char *method)
{
    return strcmp(method, "elicitation/create") == 0 ||
           strcmp(method, "sampling/createMessage") == 0 || strcmp(method, "roots/list") == 0;
}

static void round_clear(struct up_mrtr *r)
{
    for (size_t i = 0; i < r->n_inputs; i++) {
        free(r->inputs[i].key);
        free(r->inputs[i].method);
        json_object_put(r->inputs[i].id);
    }
    free(r->inputs);
    r->inputs = NULL;
    r->n_inputs = r->n_waiting = 0;
    json_object_put(r->state);
    r->state = NULL;
    json_object_put(r->responses);
    r->responses = NULL;
    free(r->error_message);
    r->error_message = NULL;
}

/* Tells the caller that the inputs still out are not needed any more, as a server cancelling
 * its requests would (the downstream then tells a legacy agent). From the loop only. */
static void cancel_inputs(struct upstream *u, struct up_mrtr *r, const char *reason)
{
    for (size_t i = 0; i < r->n_inputs && u->h.on_notification && !up_freed(u); i++) {
        if (r->inputs[i].answered)
            continue;
        r->inputs[i].answered = true;
        struct json_object *params = json_object_new_object();
        struct json_object *n = NULL;
        if (params &&
            json_object_object_add(params, "requestId", json_object_get(r->inputs[i].id)) == 0 &&
            json_object_object_add(params, "reason", json_object_new_string(reason)) == 0)
            n = jrpc_new_notification("notifications/cancelled", params);
        json_object_put(params);
        if (n)
            u->h.on_notification(u, "notifications/cancelled", n, u->userdata);
        json_object_put(n);
    }
}

void up_mrtr_free(struct upstream_call *c)
{
    struct up_mrtr *r = c->mrtr;
    if (!r)
        return;
    c->mrtr = NULL;
    /* after its callback (a timeout, a failure): the inputs still out are called off; a call
     * the caller cancels itself, or one freed with its upstream, says nothing */
    if (c->in_callback && !up_freed(c->u))
        cancel_inputs(c->u, r, "the request they were for is over");
    if (r->alive)
        *r->alive = false;
    round_clear(r);
    json_object_put(r->base);
    free(r);
}

/* c goes back on the sent list and in the map under the id the server answered: it waits for
 * its inputs as it waited for that answer (its timer, a lost connection, a cancel). */
static void park(struct upstream *u, struct upstream_call *c)
{
    if (hashmap_put_borrowed(u->map, c->key, c) < 0) {
        char *m = up_asprintf("server '%s': out of memory", up_name(u));
        up_call_fail_later(u, c, -ENOMEM, m);
        free(m);
        return;
    }
    c->where = CALL_SENT;
    list_add_tail(&u->sent, &c->node);
}

/* Fails c (on the sent list, or unlinked) from the loop. */
static void fail_call(struct upstream *u, struct upstream_call *c, int error, const char *message)
{
    if (c->where != CALL_NEW)
        up_call_unlink(u, c);
    log_info(u->log, "%s", message);
    up_call_fail_later(u, c, error, message);
}

/* The caller's params with this round's inputResponses and requestState; NULL on ENOMEM. */
static struct json_object *round_params(struct up_mrtr *r)
{
    struct json_object *p = json_object_new_object();
    if (!p)
        return NULL;
    json_object_object_foreach(r->base, k, v)
    {
        if (strcmp(k, "inputResponses") == 0 || strcmp(k, "requestState") == 0)
            continue;
        if (json_object_object_add(p, k, json_object_get(v)) < 0)
            goto oom;
    }
    if (r->responses &&
        json_object_object_add(p, "inputResponses", json_object_get(r->responses)) < 0)
        goto oom;
    if (r->state && json_object_object_add(p, "requestState", json_object_get(r->state)) < 0)
        goto oom;
    return p;
oom:
    json_object_put(p);
    return NULL;
}

/* Every input of the round is answered (or there were none): the request goes again. */
static void round_done(struct upstream *u, struct upstream_call *c)
{
    struct up_mrtr *r = c->mrtr;
    if (r->error_message) {
        char *m = r->error_message;
        r->error_message = NULL;
        fail_call(u, c, -EPROTO, m);
        free(m);
        return;
    }
    struct json_object *p = round_params(r);
    if (!p) {
        char *m = up_asprintf("server '%s': out of memory", up_name(u));
        fail_call(u, c, -ENOMEM, m);
        free(m);
        return;
    }
    log_debug(u->log, "server '%s': '%s' sent again with %zu input%s (round %u)", up_name(u),
              c->method, r->n_inputs, r->n_inputs == 1 ? "" : "s", r->rounds);
    round_clear(r);
    up_call_reissue(u, c, p);
    json_object_put(p);
}

/* The request of one input, as on_request gets it. */
static struct json_object *input_message(const struct up_input *in, struct json_object *params)
{
    struct json_object *m = json_object_new_object();
    if (m && json_object_object_add(m, "jsonrpc", json_object_new_string("2.0")) == 0 &&
        json_object_object_add(m, "id", json_object_get(in->id)) == 0 &&
        json_object_object_add(m, "method", json_object_new_string(in->method)) == 0 &&
        (!params || json_object_object_add(m, "params", json_object_get(params)) == 0))
        return m;
    json_object_put(m);
    return NULL;
}

/* Reads the round's inputRequests into r; a message for the user when they are not usable. */
static char *take_inputs(struct upstream *u, struct upstream_call *c, struct json_object *reqs)
{
    struct up_mrtr *r = c->mrtr;
    size_t n = (size_t)json_object_object_length(reqs);
    if (n > INPUT_MAX)
        return up_asprintf("server '%s' asked for %zu inputs at once for '%s' (at most %d)",
                           up_name(u), n, c->method, INPUT_MAX);
    r->inputs = calloc(n ? n : 1, sizeof(*r->inputs));
    if (!r->inputs)
        return up_asprintf("server '%s': out of memory", up_name(u));
    json_object_object_foreach(reqs, key, req)
    {
        const char *method = json_get_string(req, "method");
        struct json_object *params = json_object_object_get(req, "params");
        if (!method || !is_input_method(method) ||
            (params && !json_object_is_type(params, json_type_object)))
            return up_asprintf("server '%s' asked for an input '%s' for '%s' that is not an "
                               "elicitation/create, sampling/createMessage or roots/list "
                               "request",
                               up_name(u), key, c->method);
        struct up_input *in = &r->inputs[r->n_inputs];
        char id[64];
        snprintf(id, sizeof(id), INPUT_ID_PREFIX "%" PRId64 ".%zu", c->id, r->n_inputs + 1);
        in->key = strdup(key);
        in->method = strdup(method);
        in->id = json_object_new_string(id);
        r->n_inputs++;
        if (!in->key || !in->method || !in->id)
            return up_asprintf("server '%s': out of memory", up_name(u));
    }
    r->n_waiting = r->n_inputs;
    r->responses = json_object_new_object();
    if (!r->responses)
        return up_asprintf("server '%s': out of memory", up_name(u));
    return NULL;
}

/* Hands the round's inputs to on_request. The caller may answer (or cancel the call, or free
 * the upstream) from inside: false when the call is gone. */
static bool dispatch(struct upstream *u, struct upstream_call *c, struct json_object *reqs)
{
    struct up_mrtr *r = c->mrtr;
    bool alive = true;
    uint64_t gen = u->conn ? u->conn->gen : u->gen;
    uint64_t tag = u->request_tag;
    r->dispatching = true;
    r->alive = &alive;
    for (size_t i = 0; i < r->n_inputs && alive && !up_freed(u); i++) {
        struct up_input *in = &r->inputs[i];
        if (in->answered)
            continue;
        struct json_object *params =
            json_object_object_get(json_object_object_get(reqs, in->key), "params");
        struct json_object *m = input_message(in, params);
        if (!m) {
            free(r->error_message);
            r->error_message = up_asprintf("server '%s': out of memory", up_name(u));
            break;
        }
        log_debug(u->log, "server '%s': input '%s' (%s) for '%s' asked as %s", up_name(u), in->key,
                  in->method, c->method, json_object_get_string(in->id));
        if (u->h.on_request) {
            u->request_tag = (uint64_t)c->id;
            u->h.on_request(u, gen, m, u->userdata);
            u->request_tag = tag;
        } else if (!r->error_message) {
            r->error_message =
                up_asprintf("server '%s' needs %s for '%s', which this client cannot answer",
                            up_name(u), in->method, c->method);
        }
        json_object_put(m);
    }
    if (!alive || up_freed(u))
        return false;
    r->dispatching = false;
    r->alive = NULL;
    return true;
}

bool up_mrtr_on_result(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m)
{
    if ((c->uflags & UPSTREAM_CALL_INPUT_PASS) || u->era == UPSTREAM_ERA_LEGACY || !m->result)
        return false;
    const char *type = json_get_string(m->result, "resultType");
    if (!type || strcmp(type, "input_required") != 0)
        return false;

    char *msg = NULL;
    struct json_object *reqs = json_object_object_get(m->result, "inputRequests");
    struct json_object *state = json_object_object_get(m->result, "requestState");
    struct up_mrtr *r = c->mrtr;
    if (!r) {
        r = c->mrtr = calloc(1, sizeof(*r));
        if (!r) {
            msg = up_asprintf("server '%s': out of memory", up_name(u));
            goto fail;
        }
        r->base = c->params ? json_object_get(c->params) : json_object_new_object();
    }
    round_clear(r);
    r->rounds++;
    if (!may_ask_input(c->method)) {
        msg = up_asprintf("server '%s' asked for input for '%s', which only tools/call, "
                          "resources/read and prompts/get may do",
                          up_name(u), c->method);
        goto fail;
    }
    if (r->rounds > UPSTREAM_INPUT_MAX_ROUNDS) {
        msg = up_asprintf("server '%s' still asked for input after %d rounds of '%s': given up",
                          up_name(u), UPSTREAM_INPUT_MAX_ROUNDS, c->method);
        goto fail;
    }
    if ((reqs && !json_object_is_type(reqs, json_type_object)) ||
        (state && !json_object_is_type(state, json_type_string)) || (!reqs && !state)) {
        msg = up_asprintf("server '%s' answered '%s' with an input_required result without "
                          "usable inputRequests or requestState",
                          up_name(u), c->method);
        goto fail;
    }
    r->state = json_object_get(state);
    if (reqs && (msg = take_inputs(u, c, reqs)))
        goto fail;
    if (!r->n_inputs) {
        /* only a state (the server shedding load): the request goes again at once */
        round_done(u, c);
        return true;
    }
    park(u, c);
    if (c->where != CALL_SENT)
        return true; /* failed (out of memory), reported from the loop */
    if (!dispatch(u, c, reqs))
        return true;
    if (!r->n_waiting || r->error_message)
        round_done(u, c);
    return true;
fail:
    fail_call(u, c, -EPROTO, msg ? msg : "out of memory");
    free(msg);
    return true;
}

/* The call on u whose round made up this id, and which input it is. */
static struct upstream_call *find_input(struct upstream *u, struct json_object *id,
                                        struct up_input **ret)
{
    struct list_node *i;
    list_for_each (i, &u->sent) {
        struct upstream_call *c = list_entry(i, struct upstream_call, node);
        struct up_mrtr *r = c->mrtr;
        for (size_t k = 0; r && k < r->n_inputs; k++) {
            if (json_object_equal(r->inputs[k].id, id)) {
                *ret = &r->inputs[k];
                return c;
            }
        }
    }
    return NULL;
}

static bool is_input_id(struct json_object *id)
{
    return json_object_is_type(id, json_type_string) &&
           strncmp(json_object_get_string(id), INPUT_ID_PREFIX, strlen(INPUT_ID_PREFIX)) == 0;
}

bool up_mrtr_take_response(struct upstream *u, struct json_object *id, struct json_object *result,
                           struct json_object *error)
{
    if (!is_input_id(id))
        return false;
    struct up_input *in = NULL;
    struct upstream_call *c = find_input(u, id, &in);
    if (!c) {
        /* a round that is over (the call answered, failed or cancelled): nothing to send */
        log_debug(u->log, "server '%s': an answer to input %s of no request in flight", up_name(u),
                  json_object_get_string(id));
        return u->era != UPSTREAM_ERA_LEGACY;
    }
    if (in->answered)
        return true;
    struct up_mrtr *r = c->mrtr;
    in->answered = true;
    r->n_waiting--;
    if (error) {
        const char *em = json_get_string(error, "message");
        int64_t code = 0;
        (void)json_get_int64(error, "code", &code);
        if (!r->error_message)
            r->error_message = up_asprintf(
                "server '%s' needs %s for '%s', and the client could not give it: %s (%" PRId64 ")",
                up_name(u), in->method, c->method, em ? em : "error", code);
        if (!r->dispatching)
            round_done(u, c);
        return true;
    }
    if (json_object_object_add(r->responses, in->key, json_object_get(result)) < 0 &&
        !r->error_message)
        r->error_message = up_asprintf("server '%s': out of memory", up_name(u));
    if (!r->dispatching && !r->n_waiting)
        round_done(u, c);
    return true;
}

/* Over HTTP the request's own stream names it; else the one call that may ask for input. */
struct upstream_call *upstream_related_call(struct upstream *u, struct json_object *msg)
{
    if (!u || up_freed(u))
        return NULL;
    struct json_object *id = json_object_object_get(msg, "id");
    struct up_input *in = NULL;
    struct upstream_call *c = is_input_id(id) ? find_input(u, id, &in) : NULL;
    if (c)
        return c;
    if (u->request_tag) {
        char key[24];
        (void)fmt_u64(key, sizeof(key), u->request_tag);
        c = hashmap_get(u->map, key);
        if (c && !c->ifn)
            return c;
    }
    struct upstream_call *only = NULL;
    struct list_node *i;
    list_for_each (i, &u->sent) {
        c = list_entry(i, struct upstream_call, node);
        if (c->ifn || !may_ask_input(c->method))
            continue;
        if (only)
            return NULL; /* two could have asked: neither is named */
        only = c;
    }
    return only;
}
