/* downstream_dispatch.c - the agents' messages and their dispatch tables
 * (downstream_dispatch_int.h).
 *
 * A message is parsed once; a request goes by era and mode: a modern agent's is checked against
 * the 2026-07-28 revision (its _meta, the methods it removed) before the tables, a legacy
 * agent's needs its initialize first. Aggregate mode's table routes each method to the part that
 * serves it (the catalogue's lists here, a call to the proxy tool or through forwarding, the
 * log level to every server); single mode passes it through. The notifications go by their own
 * table, the answers to the servers' requests to downstream_bridged.c. A session begun is
 * reported (ds_hooks.session_begun): the first one starts the upstreams, in downstream.c. */
#include <errno.h>
#include <string.h>

#include "credkit/json.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_initialize_int.h"
#include "downstream/downstream_modern_int.h"
#include "downstream/downstream_listen_int.h"
#include "downstream/downstream_servers_int.h"
#include "downstream/downstream_pending_int.h"
#include "downstream/downstream_forward_int.h"
#include "downstream/downstream_bridged_int.h"
#include "downstream/downstream_single_int.h"
#include "downstream/downstream_dispatch_int.h"
#include "downstream/agent_transport.h"
#include "downstream/proxy_tool.h"
#include "catalog/proxy.h"

/* ---- the agent's requests ---------------------------------------------------------------- */

static void reply_empty(struct ds_agent *a, struct json_object *id)
{
    struct json_object *empty = json_object_new_object();
    if (empty)
        ds_reply_result(a, id, empty);
    else
        ds_reply_error(a, id, JRPC_INTERNAL_ERROR, "out of memory");
}

/* Answers a list request from the catalogue; false when it could not (answered -32603). */
bool ds_answer_list(struct ds_agent *a, struct json_object *id, enum catalog_kind k)
{
    struct downstream *d = a->d;
    struct json_object *res = json_object_new_object();
    if (!res ||
        json_object_object_add(res, CATALOG_KINDS[k].key,
                               json_object_get(catalog_items(d->cat, k))) < 0 ||
        (a->modern && ds_result_hints(res, true, ds_list_ttl(d, k)) < 0)) {
        json_object_put(res);
        ds_reply_error(a, id, JRPC_INTERNAL_ERROR, "out of memory");
        return false;
    }
    ds_reply_result(a, id, res);
    catalog_mark_listed(d->cat, k);
    return true;
}

/* logging/setLevel (aggregate mode): remembered, and applied to every server now and after each
 * READY. */
static void set_level(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    if (ds_keep_level(a, m) < 0)
        return;
    for (size_t i = 0; i < d->n_servers; i++)
        ds_apply_level(d, d->servers[i], a->log_level);
    reply_empty(a, m->id);
}

/* tools/list, prompts/list, resources/list, resources/templates/list: from the catalogue,
 * once it has settled or the settle window passed. */
static void handle_list(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    enum catalog_kind k = (enum catalog_kind)catalog_kind_of(m->method);
    if (d->round == DS_ROUND_SETTLED || d->lists_open) {
        ds_answer_list(a, m->id, k);
        return;
    }
    struct ds_pending *p = ds_pending_new(a, DS_PT_LIST, m->id, m->method);
    if (!p)
        ds_reply_too_many(a, m->id);
    else
        p->kind = k;
}

/* tools/call: the proxy tool's (proxy_tool.c), or a server's. */
static void tool_call(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    const char *name = json_get_string(m->params, "name");
    if (name && strcmp(name, PROXY_TOOL_NAME) == 0 && catalog_proxy_enabled(d->cat)) {
        /* what it names may not be listed yet: it waits for the first lists, like a tools/call */
        if (proxy_tool_waits(m->params) && ds_hold(a, m))
            return;
        proxy_tool_call(a, m->id, m->params);
        return;
    }
    ds_forward_tool_call(a, m);
}

/* Aggregate mode, once initialized. */
static const struct ds_method AGGREGATE_METHODS[] = {
    {"tools/call", tool_call},
    {"tools/list", handle_list},
    {"prompts/list", handle_list},
    {"resources/list", handle_list},
    {"resources/templates/list", handle_list},
    {"prompts/get", ds_forward_prompt_get},
    {"resources/read", ds_forward_resource},
    {"resources/subscribe", ds_forward_resource},
    {"resources/unsubscribe", ds_forward_resource},
    {"completion/complete", ds_forward_completion},
    {"logging/setLevel", set_level},
};

/* The methods the 2026-07-28 revision removed: a modern agent gets -32601 for them. */
static bool removed_method(const char *method)
{
    static const char *const removed[] = {"ping", "logging/setLevel", "resources/subscribe",
                                          "resources/unsubscribe"};
    for (size_t i = 0; i < ELEMENTSOF(removed); i++)
        if (strcmp(removed[i], method) == 0)
            return true;
    return false;
}

static void discover(struct ds_agent *a, struct jrpc_msg *m)
{
    if (a->d->mode == DOWNSTREAM_SINGLE) {
        ds_single_opening(a, m);
        return;
    }
    struct json_object *res = ds_aggregate_discover(a);
    if (res)
        ds_reply_result(a, m->id, res);
    else
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
}

/* A request the session may take, to the mode's handler. */
static void dispatch(struct ds_agent *a, struct jrpc_msg *m)
{
    if (a->d->mode == DOWNSTREAM_SINGLE) {
        ds_single_request(a, m);
        return;
    }
    const struct ds_method *h =
        ds_method_find(AGGREGATE_METHODS, ELEMENTSOF(AGGREGATE_METHODS), m->method);
    if (h)
        h->handle(a, m);
    else
        ds_reply_errorf(a, m->id, JRPC_METHOD_NOT_FOUND, "method not found: '%s'", m->method);
}

/* A modern agent's request (downstream_modern.c). */
static void modern_request(struct ds_agent *a, struct jrpc_msg *m)
{
    if (strcmp(m->method, "initialize") == 0) {
        ds_reply_errorf(a, m->id, JRPC_INVALID_REQUEST, "this session uses %s (no initialize)",
                        UPSTREAM_PROTOCOL_MODERN);
        return;
    }
    if (!ds_modern_check(a, m))
        return;
    if (removed_method(m->method)) {
        ds_reply_errorf(a, m->id, JRPC_METHOD_NOT_FOUND, "method not found: '%s' (not in %s)",
                        m->method, UPSTREAM_PROTOCOL_MODERN);
        return;
    }
    if (strcmp(m->method, "server/discover") == 0) {
        discover(a, m);
        return;
    }
    /* single mode: a listen that is the agent's first request waits for the server's READY
     * as any opening does (downstream_single.c opens it then), or the server's notifications
     * would pass an agent whose session never became READY */
    if (strcmp(m->method, "subscriptions/listen") == 0 &&
        !(a->d->mode == DOWNSTREAM_SINGLE && a->session != DS_SESSION_READY)) {
        ds_listen_open(a, m);
        return;
    }
    dispatch(a, m);
}

void ds_dispatch_request(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    /* two answers with one id would be the agent's to untangle: the second request is not
     * taken (JSON-RPC ids are unique among the requests in flight) */
    if (ds_pending_find(a, m->id)) {
        ds_reply_errorf(a, m->id, JRPC_INVALID_REQUEST,
                        "id already in use: a request with this id is still in flight");
        return;
    }
    /* before any initialize, a request of the 2026-07-28 era makes the agent modern (when its
     * _meta is right: an agent that is told the version is wrong may still initialize); single
     * mode's opening refused may be tried again, in either era */
    if (!a->modern && (a->session == DS_SESSION_NEW || a->session == DS_SESSION_REFUSED) &&
        ds_modern_opening(m)) {
        if (!ds_modern_check(a, m) || ds_modern_start(a, m) < 0)
            return;
        d->hooks->session_begun(a);
    }
    if (a->modern) {
        modern_request(a, m);
        return;
    }
    /* single mode passes ping on too, once there is a session to ask (a modern server has no
     * ping: the bridge answers it) */
    if (strcmp(m->method, "ping") == 0 &&
        !(d->mode == DOWNSTREAM_SINGLE && ds_initialized(a) &&
          upstream_era(d->servers[0]->u) != UPSTREAM_ERA_MODERN)) {
        struct json_object *empty = json_object_new_object();
        if (empty)
            ds_reply_result(a, m->id, empty);
        return;
    }
    if (strcmp(m->method, "initialize") == 0) {
        ds_handle_initialize(a, m);
        d->hooks->session_begun(a);
        return;
    }
    if (!ds_initialized(a)) {
        ds_reply_error(a, m->id, JRPC_INVALID_REQUEST, "not initialized: send initialize first");
        return;
    }
    dispatch(a, m);
}

/* ---- the agent's notifications and answers ----------------------------------------------- */

static void on_cancelled(struct ds_agent *a, struct jrpc_msg *m)
{
    ds_cancel_request(a, m->params);
}

static void on_initialized(struct ds_agent *a, struct jrpc_msg *m)
{
    /* every upstream sends its own */
    (void)a;
    (void)m;
}

/* Any agent's: the servers ask again (what they were offered is the lead agent's). */
static void on_roots_changed(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    for (size_t i = 0; i < d->n_servers; i++) {
        int r = upstream_notify(d->servers[i]->u, m->method, m->params);
        if (r < 0)
            log_debug(d->log, "server '%s': %s not sent: %s", d->servers[i]->name, m->method,
                      strerror(-r));
    }
}

static const struct ds_method NOTIFICATIONS[] = {
    {"notifications/cancelled", on_cancelled},
    {"notifications/initialized", on_initialized},
    {"notifications/roots/list_changed", on_roots_changed},
    {"notifications/progress", ds_bridged_progress},
};

static void handle_notification(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    const struct ds_method *h = ds_method_find(NOTIFICATIONS, ELEMENTSOF(NOTIFICATIONS), m->method);
    if (h) {
        h->handle(a, m);
    } else if (d->mode == DOWNSTREAM_SINGLE && ds_initialized(a)) {
        int r = upstream_notify(d->servers[0]->u, m->method, m->params);
        (void)r;
    } else {
        log_debug(d->log, "client notification %s ignored", m->method);
    }
}

/* A legacy agent's request that goes to a server with only its name changed needs no tree of
 * its params (jrpc_parse_light(); docs/development.md, "The pass-through"): a tools/call or
 * prompts/get, whose name is all the routing reads, and in single mode whatever is passed on
 * as it is. The proxy tool reads its arguments, a resource is routed by its uri, and a modern
 * agent's requests are rewritten: all of these take the tree. */
static bool passes_light(struct ds_agent *a, const char *text, const struct jscan *j)
{
    if (jscan_span_is(text, j->method, "tools/call") ||
        jscan_span_is(text, j->method, "prompts/get"))
        return j->name.len && !jscan_span_is(text, j->name, PROXY_TOOL_NAME);
    return a->d->mode == DOWNSTREAM_SINGLE && ds_single_passes(text, j->method);
}

static int parse_light(struct ds_agent *a, const char *text, size_t len, struct jrpc_msg *m,
                       struct err *e)
{
    struct jscan j;
    if (a->modern || !ds_initialized(a) || len > AGENT_MAX_MESSAGE ||
        jscan_message(text, len, &j) < 0 || !j.id.len || !passes_light(a, text, &j))
        return -EAGAIN;
    return jrpc_parse_light(text, len, AGENT_MAX_MESSAGE, &j, m, e);
}

void ds_dispatch_message(const char *text, size_t len, void *userdata)
{
    struct ds_agent *a = userdata;
    struct downstream *d = a->d;
    struct jrpc_msg m = {0};
    struct err e = ERR_INIT;

    if (ds_shutting(d))
        return;
    int r = parse_light(a, text, len, &m, &e);
    if (r == -EAGAIN)
        r = jrpc_parse(text, len, AGENT_MAX_MESSAGE, &m, &e);
    if (r < 0) {
        if (r == -EBADMSG)
            ds_reply_errorf(a, NULL, JRPC_PARSE_ERROR, "parse error: %s", err_msg(&e));
        else
            ds_reply_errorf(a, NULL, JRPC_INTERNAL_ERROR, "cannot read the message: %s",
                            err_msg(&e));
        return;
    }
    switch (m.kind) {
    case JRPC_REQUEST:
        ds_dispatch_request(a, &m);
        break;
    case JRPC_NOTIFICATION:
        if (ds_init_seen(a))
            handle_notification(a, &m);
        break;
    case JRPC_RESPONSE:
        ds_bridged_response(a, &m);
        break;
    default:
        /* a broken answer (to a request of a server) gets none: there is nobody to tell */
        if (!m.method && (json_object_object_get_ex(m.root, "result", NULL) ||
                          json_object_object_get_ex(m.root, "error", NULL)))
            break;
        ds_reply_error(a, m.id, JRPC_INVALID_REQUEST,
                       "invalid request: not a JSON-RPC 2.0 message");
        break;
    }
    jrpc_msg_done(&m);
}
