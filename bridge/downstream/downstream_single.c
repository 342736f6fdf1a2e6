/* downstream_single.c - single mode: one upstream, passed through (downstream.h).
 *
 * The agent's initialize waits for the upstream's READY and is answered with the upstream's
 * own InitializeResult, or refused with the reason once the connect timeout passed or the
 * upstream failed (the agent may send initialize again, and the bridge tries again too).
 * Once initialized, every request is forwarded as it is, but for the server's excludeTools:
 * left out of its tools/list answers and refused in tools/call, as in aggregate mode (without
 * excludeTools the answers pass untouched).
 *
 * A 2026-07-28 agent's opening (server/discover, or a request stamped with the version) waits
 * for the server too, which tells its era. A modern server serves it; a legacy one is, by
 * default, a legacy server to the agent as it would be directly: the opening gets the
 * server's answer (-32601), and the agent falls back to initialize, keeping ping, setLevel,
 * subscriptions, the server's requests outside a call (roots) and every field of its results.
 * With --bridge-eras (d->bridge_eras) the bridge serves the agent 2026-07-28 itself over a
 * legacy server, as aggregate mode does. An opening that cannot be answered (the server
 * cannot be reached) never locks the era: the initialize that follows gets the reason too.
 *
 * Each refusal names the server once, with the reason as the upstream gave it: an agent may
 * show no more than a line of it (Claude Code's `claude mcp list` shows the line, with every
 * word of the bridge's own command line blotted out). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "credkit/json.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_servers_int.h"
#include "downstream/downstream_single_int.h"
#include "downstream/downstream_modern_int.h"
#include "downstream/downstream_pending_int.h"
#include "downstream/downstream_forward_int.h"
#include "downstream/downstream_listen_int.h"

static void answer_init(struct ds_agent *a, struct ds_pending *p)
{
    struct downstream *d = a->d;
    struct upstream *u = d->servers[0]->u;
    struct json_object *res = json_object_new_object();
    const char *instr = upstream_instructions(u);
    struct json_object *caps = upstream_server_capabilities(u);
    struct json_object *info = upstream_server_info(u);
    /* a modern server has no version of the legacy era: the agent's, else the newest one */
    const char *version =
        upstream_era(u) == UPSTREAM_ERA_MODERN
            ? (a->protocol_version ? a->protocol_version : UPSTREAM_PROTOCOL_LATEST)
            : upstream_protocol_version(u);
    if (!res)
        goto oom;
    if (json_object_object_add(res, "protocolVersion", json_object_new_string(version)) < 0 ||
        json_object_object_add(res, "capabilities",
                               caps ? json_object_get(caps) : json_object_new_object()) < 0 ||
        json_object_object_add(res, "serverInfo",
                               info ? json_object_get(info) : json_object_new_object()) < 0 ||
        (instr && json_object_object_add(res, "instructions", json_object_new_string(instr)) < 0))
        goto oom;
    ds_reply_result(a, p->id, res);
    ds_pending_free(p);
    ds_set_session(a, DS_SESSION_READY);
    return;
oom:
    json_object_put(res);
    ds_reply_error(a, p->id, JRPC_INTERNAL_ERROR, "out of memory");
    ds_pending_free(p);
    ds_set_session(a, DS_SESSION_REFUSED);
}

/* A modern agent's server/discover, the server READY: a modern server's own answer (passed
 * through), else one made of its InitializeResult. */
static void discover_now(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    struct ds_server *s = d->servers[0];
    if (upstream_era(s->u) == UPSTREAM_ERA_MODERN) {
        ds_forward(a, m, s, false);
        return;
    }
    struct json_object *res =
        ds_discover_result(upstream_server_capabilities(s->u), upstream_server_info(s->u),
                           upstream_instructions(s->u), DS_LIST_TTL_MS);
    if (res)
        ds_reply_result(a, m->id, res);
    else
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
}

/* Whether the server is a legacy one to a modern agent: the bridge is transparent (no
 * --bridge-eras) and the server speaks the initialize handshake, as found on connecting or as
 * its entry says ("protocolVersion": "legacy", known before it connects). */
static bool legacy_to_agent(const struct downstream *d)
{
    const struct upstream *u = d->servers[0]->u;
    if (d->bridge_eras)
        return false;
    if (upstream_state(u) == UPSTREAM_READY)
        return upstream_era(u) != UPSTREAM_ERA_MODERN;
    return upstream_server(u)->protocol == MCP_PROTOCOL_LEGACY;
}

/* What a legacy server answers a 2026-07-28 request that comes before initialize:
 * server/discover is a method it does not have (-32601, as the SDKs' servers answer it);
 * another request gets -32022 with the versions it speaks, the revision's signal that the
 * client must fall back to initialize. */
static void answer_as_legacy(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    const struct upstream *u = d->servers[0]->u;
    if (strcmp(m->method, "server/discover") == 0) {
        ds_reply_errorf(a, m->id, JRPC_METHOD_NOT_FOUND,
                        "method not found: 'server/discover' (server '%s' speaks the initialize "
                        "handshake)",
                        d->servers[0]->name);
        return;
    }
    const char *known = upstream_state(u) == UPSTREAM_READY ? upstream_protocol_version(u) : NULL;
    struct json_object *data = json_object_new_object(), *supported = json_object_new_array();
    int r = data && supported ? 0 : -ENOMEM;
    for (size_t i = 0; r >= 0 && UPSTREAM_PROTOCOL_VERSIONS[i]; i++)
        if (!known || strcmp(known, UPSTREAM_PROTOCOL_VERSIONS[i]) == 0)
            r = json_object_array_add(supported,
                                      json_object_new_string(UPSTREAM_PROTOCOL_VERSIONS[i]));
    if (r >= 0) {
        r = json_object_object_add(data, "supported", supported);
        supported = NULL; /* taken, even on failure */
    }
    if (r >= 0)
        r = json_object_object_add(data, "requested",
                                   json_object_new_string(UPSTREAM_PROTOCOL_MODERN));
    if (r < 0) {
        json_object_put(supported);
        json_object_put(data);
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    char text[DS_TEXT_MAX];
    snprintf(text, sizeof(text),
             "unsupported protocol version '%s': server '%s' speaks the initialize handshake",
             UPSTREAM_PROTOCOL_MODERN, d->servers[0]->name);
    ds_send_put(a, jrpc_new_error(m->id, DS_ERR_UNSUPPORTED_VERSION, text, data));
    json_object_put(data);
}

/* The modern agent's opening was refused (the server is a legacy one to it, or cannot be
 * reached): its session is of no era again, so that its initialize, the fallback the revision
 * allows, is taken, and gets the server's answer or the same reason. */
static void opening_refused(struct ds_agent *a)
{
    if (!a->modern || a->session != DS_SESSION_CONNECTING)
        return;
    a->modern = false;
    ds_set_session(a, DS_SESSION_REFUSED);
}

/* A modern agent's request before its session is READY, the server READY (or known legacy):
 * answered as the server's era and the bridge's mode say. */
static void opening_now(struct ds_agent *a, struct jrpc_msg *m)
{
    if (legacy_to_agent(a->d)) {
        answer_as_legacy(a, m);
        opening_refused(a);
        return;
    }
    if (a->session == DS_SESSION_CONNECTING)
        ds_set_session(a, DS_SESSION_READY);
    if (strcmp(m->method, "server/discover") == 0)
        discover_now(a, m);
    else
        ds_single_request(a, m);
}

/* Refuses the agent's request id because the server could not be had: why names the server
 * (the upstream's messages begin "server 'NAME'") or is said of it. */
static void refuse(struct ds_agent *a, struct json_object *id, const char *why)
{
    const char *name = a->d->servers[0]->name;
    size_t n = strlen(name);
    if (strncmp(why, "server '", 8) == 0 && strncmp(why + 8, name, n) == 0 && why[8 + n] == '\'')
        ds_reply_error(a, id, JRPC_CONNECTION_CLOSED, why);
    else
        ds_reply_errorf(a, id, JRPC_CONNECTION_CLOSED, "server '%s': %s", name, why);
}

/* The requests waiting for READY, in the order they came (the list is newest first): handled
 * now, or refused with why (NULL: handled). */
static void openings_waiting(struct ds_agent *a, const char *why)
{
    for (struct list_node *i = a->pending.prev, *prev; i != &a->pending; i = prev) {
        prev = i->prev;
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->type != DS_PT_DISCOVER)
            continue;
        if (why) {
            refuse(a, p->id, why);
            ds_pending_free(p);
            continue;
        }
        struct jrpc_msg m;
        ds_pending_take_request(p, &m);
        if (a->modern)
            opening_now(a, &m);
        else
            answer_as_legacy(a, &m); /* an earlier one found the server legacy */
        json_object_put(m.root);
    }
}

/* The server is READY: a's initialize or openings waiting for it are answered. */
static void ready_for(struct downstream *d, struct ds_agent *a)
{
    if (a->modern) {
        loop_timer_cancel(d->settle_timer);
        d->settle_timer = NULL;
        openings_waiting(a, NULL);
        return;
    }
    struct ds_pending *p = ds_pending_find_type(a, DS_PT_INIT);
    if (!p)
        return;
    loop_timer_cancel(d->settle_timer);
    d->settle_timer = NULL;
    answer_init(a, p);
}

/* The server could not be had: a's initialize or openings waiting for it are refused. */
static void fail_for(struct downstream *d, struct ds_agent *a, const char *why)
{
    if (a->modern) {
        loop_timer_cancel(d->settle_timer);
        d->settle_timer = NULL;
        openings_waiting(a, why);
        /* the agent may open again, or initialize; the upstream goes on trying */
        opening_refused(a);
        return;
    }
    struct ds_pending *p = ds_pending_find_type(a, DS_PT_INIT);
    if (!p)
        return;
    loop_timer_cancel(d->settle_timer);
    d->settle_timer = NULL;
    refuse(a, p->id, why);
    ds_pending_free(p);
    ds_set_session(a, DS_SESSION_REFUSED); /* the agent may try again; the upstream goes on
                                              trying too */
}

/* Single mode's agent, or with a listener (persist) each of its agents: the one server is
 * everyone's. */
void ds_single_ready(struct downstream *d)
{
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a))
        ready_for(d, a);
}

void ds_single_fail(struct downstream *d, const char *why)
{
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a))
        fail_for(d, a, why);
}

/* The connect timeout, armed again when the agent asks again: as the dispatcher's settle timer
 * in single mode (the same d->settle_timer). */
static void on_connect_timer(struct loop_timer *t, void *userdata)
{
    struct downstream *d = userdata;
    (void)t;
    loop_timer_cancel(d->settle_timer);
    d->settle_timer = NULL;
    ds_single_timeout(d);
}

/* A server that failed, or needs a sign-in, is tried again when the agent asks again: the
 * credentials may be there now, else the reason comes again (at once, not at the timeout). */
static void retry_failed(struct upstream *u)
{
    if (upstream_state(u) == UPSTREAM_FAILED || upstream_state(u) == UPSTREAM_LOGIN)
        upstream_connect(u);
}

void ds_single_opening(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    struct ds_server *s = d->servers[0];
    if (upstream_state(s->u) == UPSTREAM_READY || legacy_to_agent(d)) {
        opening_now(a, m);
        return;
    }
    struct ds_pending *p = ds_pending_new(a, DS_PT_DISCOVER, m->id, m->method);
    if (!p) {
        ds_reply_too_many(a, m->id);
        return;
    }
    p->msg = jrpc_msg_ref(m); /* a modern agent's request has its root: it cannot fail */
    retry_failed(s->u);
    if (!d->settle_timer &&
        loop_timer_add(d->loop, d->connect_timeout_ms, on_connect_timer, d, &d->settle_timer) < 0)
        d->settle_timer = NULL;
}

void ds_single_initialize(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    struct ds_pending *p = ds_pending_new(a, DS_PT_INIT, m->id, m->method);
    if (!p) {
        ds_reply_too_many(a, m->id);
        return;
    }
    bool started = ds_started(d);
    ds_set_session(a, DS_SESSION_CONNECTING);
    struct ds_server *s = d->servers[0];
    if (started && upstream_state(s->u) == UPSTREAM_READY) {
        answer_init(a, p);
        return;
    }
    if (started)
        retry_failed(s->u); /* the agent tries again: so does the bridge */
    /* not started: the dispatcher starts the upstreams once this returns */
    if (started && !d->settle_timer &&
        loop_timer_add(d->loop, d->connect_timeout_ms, on_connect_timer, d, &d->settle_timer) < 0)
        d->settle_timer = NULL;
}

/* The connect timeout passed with the agent's initialize waiting. */
void ds_single_timeout(struct downstream *d)
{
    char why[DS_TEXT_MAX];
    const char *name = d->servers[0]->name;
    const char *last = upstream_last_error(d->servers[0]->u);
    if (last)
        last = ds_past_server_name(name, last); /* the server is named once */
    snprintf(why, sizeof(why), "server '%s' is not ready after %" PRId64 " ms%s%s", name,
             d->connect_timeout_ms, last ? ": " : "", last ? last : "");
    ds_single_fail(d, why);
}

static void forward_tool_call(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    struct ds_server *s = d->servers[0];
    const char *name = json_get_string(m->params, "name");
    if (name && catalog_excluded(d->cat, s->src, name)) {
        /* as the SDK's servers answer a tool they do not have, and serve answers one: a tool
         * result with isError, which the model reads */
        char text[DS_TEXT_MAX];
        snprintf(text, sizeof(text), "unknown tool '%.200s' (left out by the entry's excludeTools)",
                 name);
        struct json_object *res = jrpc_new_tool_error(text);
        if (res)
            ds_reply_result(a, m->id, res);
        else
            ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    ds_forward(a, m, s, true);
}

static void on_tools_listed(struct upstream_call *c, struct json_object *response, int error,
                            const char *message, void *userdata)
{
    struct ds_pending *p = userdata;
    struct ds_agent *a = p->a;
    struct downstream *d = a->d;
    (void)c;

    p->call = NULL;
    if (error) {
        ds_reply_error(a, p->id,
                       error == -ETIMEDOUT ? JRPC_REQUEST_TIMEOUT : JRPC_CONNECTION_CLOSED,
                       message ? message : strerror(-error));
        ds_pending_free(p);
        return;
    }
    struct json_object *tools = json_get_array(json_get_object(response, "result"), "tools");
    for (size_t i = tools ? json_object_array_length(tools) : 0; i-- > 0;) {
        const char *name = json_get_string(json_object_array_get_idx(tools, i), "name");
        if (name && catalog_excluded(d->cat, p->s->src, name))
            (void)json_object_array_del_idx(tools, i, 1);
    }
    if (ds_modern_response(p, response) == 0 &&
        json_object_object_add(response, "id", json_object_get(p->id)) == 0)
        ds_send_json(a, response);
    else
        ds_reply_error(a, p->id, JRPC_INTERNAL_ERROR, "out of memory");
    ds_pending_free(p);
}

/* tools/list: passed through, less the excludeTools when there are some. */
static void list_tools(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    struct ds_server *s = d->servers[0];
    if (!catalog_source_has_exclude(s->src)) {
        ds_forward(a, m, s, false);
        return;
    }
    struct ds_pending *p = ds_pending_new(a, DS_PT_CALL, m->id, m->method);
    if (!p) {
        ds_reply_too_many(a, m->id);
        return;
    }
    p->s = s;
    ds_modern_forwarding(a, m, p);
    if (upstream_call(s->u, m->method, m->params, 0, on_tools_listed, NULL, p, &p->call) < 0) {
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        ds_pending_free(p);
    }
}

static void forward_subscription(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    ds_forward_subscription(a, m, d->servers[0]);
}

/* A modern agent's listen is the bridge's (downstream_listen.c), once its session is READY. */
static void open_listen(struct ds_agent *a, struct jrpc_msg *m)
{
    if (a->modern)
        ds_listen_open(a, m);
    else
        ds_forward(a, m, a->d->servers[0], false);
}

/* Remembered for reconnects, and passed through. */
static void set_level(struct ds_agent *a, struct jrpc_msg *m)
{
    if (ds_keep_level(a, m) == 0)
        ds_forward(a, m, a->d->servers[0], false);
}

static const struct ds_method SINGLE_METHODS[] = {
    {"tools/call", forward_tool_call},
    {"tools/list", list_tools},
    {"logging/setLevel", set_level},
    {"resources/subscribe", forward_subscription},
    {"resources/unsubscribe", forward_subscription},
    {"subscriptions/listen", open_listen},
};

bool ds_single_passes(const char *text, struct jscan_span method)
{
    /* the two the dispatcher answers or handles itself, and this file's table */
    if (jscan_span_is(text, method, "ping") || jscan_span_is(text, method, "initialize"))
        return false;
    for (size_t i = 0; i < ELEMENTSOF(SINGLE_METHODS); i++)
        if (jscan_span_is(text, method, SINGLE_METHODS[i].method))
            return strcmp(SINGLE_METHODS[i].method, "tools/call") == 0;
    return true;
}

void ds_single_request(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    if (a->modern && a->session != DS_SESSION_READY) {
        ds_single_opening(a, m); /* the server's era decides how it is answered */
        return;
    }
    const struct ds_method *h =
        ds_method_find(SINGLE_METHODS, ELEMENTSOF(SINGLE_METHODS), m->method);
    if (h)
        h->handle(a, m);
    else
        ds_forward(a, m, d->servers[0], false);
}
