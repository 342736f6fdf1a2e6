/* downstream_agent.c - what every part of the downstream uses (downstream_agent_int.h): the
 * lifecycles' transitions, the state's predicates, the agents' list, sending to an agent with its
 * flow control, replies and errors, what an agent declared and the log level it asked for.
 *
 * It calls no other part: the parts stand on it, and the dispatcher (downstream.c) on them. */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/agent_transport.h"

/* ---- lifecycles -------------------------------------------------------------------------- */

static bool session_transition_legal(enum ds_session from, enum ds_session to)
{
    switch (to) {
    case DS_SESSION_CONNECTING:
        return from == DS_SESSION_NEW || from == DS_SESSION_REFUSED;
    case DS_SESSION_REFUSED:
        return from == DS_SESSION_CONNECTING;
    case DS_SESSION_READY:
        return from == DS_SESSION_CONNECTING || from == DS_SESSION_NEW;
    case DS_SESSION_NEW:
    default:
        return false;
    }
}

void ds_set_session(struct ds_agent *a, enum ds_session to)
{
    assert(session_transition_legal(a->session, to));
    (void)session_transition_legal;
    a->session = to;
}

static bool round_transition_legal(enum ds_round from, enum ds_round to)
{
    switch (to) {
    case DS_ROUND_FIRST:
        return from == DS_ROUND_NONE;
    case DS_ROUND_SETTLED:
        return from == DS_ROUND_NONE || from == DS_ROUND_FIRST;
    case DS_ROUND_NONE:
    default:
        return false;
    }
}

void ds_set_round(struct downstream *d, enum ds_round to)
{
    assert(round_transition_legal(d->round, to));
    (void)round_transition_legal;
    d->round = to;
}

/* Reading the agent: ON <-> THROTTLED, and OFF (for good) from either. */
void ds_set_reading(struct ds_agent *a, enum ds_reading to)
{
    assert(a->reading != DS_READING_OFF && a->reading != to);
    a->reading = to;
    agent_transport_set_reading(a->t, to == DS_READING_ON);
}

bool ds_init_seen(const struct ds_agent *a)
{
    return a->session == DS_SESSION_CONNECTING || ds_initialized(a);
}

bool ds_initialized(const struct ds_agent *a)
{
    return a->session == DS_SESSION_READY;
}

bool ds_started(const struct downstream *d)
{
    return d->round != DS_ROUND_NONE;
}

bool ds_settling(const struct downstream *d)
{
    return d->round == DS_ROUND_FIRST;
}

bool ds_shutting(const struct downstream *d)
{
    return d->phase != DS_PHASE_RUNNING;
}

bool ds_may_tell(const struct ds_agent *a)
{
    return ds_initialized(a) && !ds_shutting(a->d);
}

bool ds_may_tell_any(const struct downstream *d)
{
    struct list_node *i;
    list_for_each (i, &d->agents)
        if (ds_may_tell(list_entry(i, struct ds_agent, node)))
            return true;
    return false;
}

struct ds_agent *ds_agent_first(struct downstream *d)
{
    struct list_node *n = list_first(&d->agents);
    return n ? list_entry(n, struct ds_agent, node) : NULL;
}

struct ds_agent *ds_agent_next(struct ds_agent *a)
{
    return a->node.next == &a->d->agents ? NULL : list_entry(a->node.next, struct ds_agent, node);
}

struct ds_server *ds_server_find(struct downstream *d, const char *name)
{
    for (size_t i = 0; i < d->n_servers; i++)
        if (strcmp(d->servers[i]->name, name) == 0)
            return d->servers[i];
    return NULL;
}

bool ds_log_debugging(const struct downstream *d)
{
    return log_get_level(d->log) >= LOG_DEBUG;
}

/* ---- sending to the agent ---------------------------------------------------------------- */

void ds_send_json(struct ds_agent *a, struct json_object *o)
{
    if (!a->t || !o)
        return;
    size_t len;
    const char *text = jrpc_serialize(o, &len);
    if (text)
        ds_send_text(a, text, len);
}

/* After a message of len bytes went to the agent's transport (r its answer). */
static void sent(struct ds_agent *a, int r, size_t len)
{
    struct downstream *d = a->d;
    if (r == -ENOBUFS)
        log_error(d->log, "the agent does not read its messages: one of %zu bytes dropped", len);
    /* other errors: the transport reports them through on_error */
    if (a->reading == DS_READING_ON &&
        agent_transport_pending(a->t) > DOWNSTREAM_AGENT_HIGH_WATER) {
        /* the agent is slower than its answers: it gets no new requests in until it has read */
        ds_set_reading(a, DS_READING_THROTTLED);
        log_debug(d->log, "the client does not keep up: %zu bytes queued for it, not reading it",
                  agent_transport_pending(a->t));
    }
}

void ds_send_text(struct ds_agent *a, const char *text, size_t len)
{
    if (a->t)
        sent(a, agent_transport_send(a->t, text, len), len);
}

int ds_send_iov(struct ds_agent *a, const struct iovec *iov, int n)
{
    if (!a->t)
        return 0;
    int r = agent_transport_sendv(a->t, iov, n);
    if (r == -EOPNOTSUPP)
        return r;
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += iov[i].iov_len;
    sent(a, r, len);
    return 0;
}

void ds_send_put(struct ds_agent *a, struct json_object *o)
{
    ds_send_json(a, o);
    json_object_put(o);
}

void ds_reply_result(struct ds_agent *a, struct json_object *id, struct json_object *result)
{
    if (a->modern && ds_result_hints(result, false, 0) < 0) {
        json_object_put(result);
        ds_reply_error(a, id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    ds_send_put(a, jrpc_new_result(id, result));
    json_object_put(result);
}

void ds_reply_error(struct ds_agent *a, struct json_object *id, int code, const char *message)
{
    ds_send_put(a, jrpc_new_error(id, code, message, NULL));
}

void ds_reply_errorf(struct ds_agent *a, struct json_object *id, int code, const char *fmt, ...)
{
    char text[DS_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    ds_reply_error(a, id, code, text);
}

const struct ds_method *ds_method_find(const struct ds_method *table, size_t n, const char *method)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].method, method) == 0)
            return &table[i];
    return NULL;
}

int ds_result_hints(struct json_object *result, bool cacheable, int64_t ttl_ms)
{
    if (!json_object_is_type(result, json_type_object))
        return 0;
    if (!json_object_object_get_ex(result, "resultType", NULL) &&
        json_object_object_add(result, "resultType", json_object_new_string("complete")) < 0)
        return -ENOMEM;
    if (!cacheable)
        return 0;
    const char *type = json_get_string(result, "resultType");
    if (type && strcmp(type, "complete") != 0)
        return 0; /* an InputRequiredResult carries no caching hints */
    if (!json_object_object_get_ex(result, "ttlMs", NULL) &&
        json_object_object_add(result, "ttlMs", json_object_new_int64(ttl_ms)) < 0)
        return -ENOMEM;
    if (!json_object_object_get_ex(result, "cacheScope", NULL) &&
        json_object_object_add(result, "cacheScope", json_object_new_string("private")) < 0)
        return -ENOMEM;
    return 0;
}

/* ---- what the agent declared ------------------------------------------------------------- */

static bool known_version(const char *v)
{
    for (size_t i = 0; v && UPSTREAM_PROTOCOL_VERSIONS[i]; i++)
        if (strcmp(UPSTREAM_PROTOCOL_VERSIONS[i], v) == 0)
            return true;
    return false;
}

int ds_take_capabilities(struct ds_agent *a, const char *version, struct json_object *caps)
{
    free(a->protocol_version);
    a->protocol_version = known_version(version) ? strdup(version) : NULL;
    json_object_put(a->agent_caps);
    a->agent_caps = caps ? json_object_get(caps) : json_object_new_object();
    json_object_put(a->client_caps);
    a->client_caps = json_object_new_object();
    if (!a->agent_caps || !a->client_caps)
        return -ENOMEM;
    /* the capabilities whose requests the bridge forwards, and only as declared: a value that
     * is not an object (null included) is not a capability */
    static const char *const offered[] = {"roots", "sampling", "elicitation"};
    for (size_t i = 0; i < ELEMENTSOF(offered); i++) {
        struct json_object *v = json_get_object(caps, offered[i]);
        if (v && json_object_object_add(a->client_caps, offered[i], json_object_get(v)) < 0)
            return -ENOMEM;
    }
    a->d->hooks->offered(a);
    return 0;
}

const char *ds_past_server_name(const char *name, const char *text)
{
    size_t n = strlen(name);
    if (strncmp(text, "server '", 8) == 0 && strncmp(text + 8, name, n) == 0 &&
        strncmp(text + 8 + n, "': ", 3) == 0)
        return text + 8 + n + 3;
    return text;
}

int ds_keep_level(struct ds_agent *a, struct jrpc_msg *m)
{
    const char *level = json_get_string(m->params, "level");
    if (!level) {
        ds_reply_error(a, m->id, JRPC_INVALID_PARAMS, "logging/setLevel needs params.level");
        return -EINVAL;
    }
    char *copy = strdup(level);
    if (!copy) {
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        return -ENOMEM;
    }
    free(a->log_level);
    a->log_level = copy;
    return 0;
}
