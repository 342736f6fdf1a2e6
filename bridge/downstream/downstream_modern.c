/* downstream_modern.c - an agent of the 2026-07-28 era (downstream.h, "Modern agents").
 *
 * Such an agent sends no initialize: it opens with server/discover, or with any request whose
 * params._meta carries io.modelcontextprotocol/protocolVersion, and every request of it
 * carries its version and capabilities. The bridge becomes its modern server for the process
 * (d->modern): each request's _meta is checked, the first one's capabilities are what legacy
 * upstreams are offered in their initialize, ping and logging/setLevel are gone, results get
 * "resultType" (and the caching hints where the revision asks for them), and a server's
 * notifications/message go to the agent only for a request of that server that asked for
 * logs (io.modelcontextprotocol/logLevel), at or above its level. The changes in lists and
 * resources reach it only through its subscriptions/listen requests (downstream_listen.c).
 *
 * The additions are made on the response object the upstream already parsed: nothing is
 * parsed twice. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_modern_int.h"
#include "downstream/downstream_servers_int.h"

/* The syslog levels of MCP logging, lowest first: a level's rank is its index + 1. */
static const char *const LOG_LEVELS[] = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
};

int ds_log_rank(const char *level)
{
    for (size_t i = 0; level && i < ELEMENTSOF(LOG_LEVELS); i++)
        if (strcmp(LOG_LEVELS[i], level) == 0)
            return (int)i + 1;
    return 0;
}

static struct json_object *request_meta(const struct jrpc_msg *m)
{
    return json_get_object(m->params, "_meta");
}

bool ds_modern_opening(const struct jrpc_msg *m)
{
    return strcmp(m->method, "server/discover") == 0 ||
           json_object_object_get_ex(request_meta(m), DS_META_VERSION, NULL);
}

/* -32022 with the versions the bridge serves to a modern agent, and the one asked for. */
static void reply_unsupported(struct ds_agent *a, struct json_object *id, const char *requested)
{
    struct json_object *data = json_object_new_object(), *supported = json_object_new_array();
    if (!data || !supported ||
        json_object_array_add(supported, json_object_new_string(UPSTREAM_PROTOCOL_MODERN)) < 0 ||
        json_object_object_add(data, "supported", supported) < 0) {
        json_object_put(supported);
        json_object_put(data);
        ds_reply_error(a, id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    if (json_object_object_add(data, "requested", json_object_new_string(requested)) < 0) {
        json_object_put(data);
        ds_reply_error(a, id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    char text[DS_TEXT_MAX];
    snprintf(text, sizeof(text),
             "unsupported protocol version '%s': mcp-bridge serves %s (or initialize for the "
             "earlier revisions)",
             requested, UPSTREAM_PROTOCOL_MODERN);
    ds_send_put(a, jrpc_new_error(id, DS_ERR_UNSUPPORTED_VERSION, text, data));
    json_object_put(data);
}

bool ds_modern_check(struct ds_agent *a, struct jrpc_msg *m)
{
    struct json_object *meta = request_meta(m), *v;
    if (!json_object_object_get_ex(meta, DS_META_VERSION, &v)) {
        ds_reply_errorf(a, m->id, JRPC_INVALID_PARAMS,
                        "%s needs params._meta[\"" DS_META_VERSION "\"] (%s: no initialize)",
                        m->method, UPSTREAM_PROTOCOL_MODERN);
        return false;
    }
    const char *version = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
    if (strcmp(version, UPSTREAM_PROTOCOL_MODERN) != 0) {
        reply_unsupported(a, m->id, version);
        return false;
    }
    if (!json_get_object(meta, DS_META_CAPS)) {
        ds_reply_errorf(a, m->id, JRPC_INVALID_PARAMS,
                        "%s needs params._meta[\"" DS_META_CAPS "\"], an object", m->method);
        return false;
    }
    struct json_object *level;
    if (json_object_object_get_ex(meta, DS_META_LOG_LEVEL, &level) &&
        !ds_log_rank(json_object_is_type(level, json_type_string) ? json_object_get_string(level)
                                                                  : NULL)) {
        ds_reply_errorf(a, m->id, JRPC_INVALID_PARAMS,
                        "params._meta[\"" DS_META_LOG_LEVEL
                        "\"] is not a log level (debug, info, notice, warning, error, critical, "
                        "alert, emergency)");
        return false;
    }
    return true;
}

int ds_modern_start(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    struct json_object *caps = json_get_object(request_meta(m), DS_META_CAPS);
    if (ds_take_capabilities(a, NULL, caps) < 0) {
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        return -ENOMEM;
    }
    a->modern = true;
    log_debug(d->log, "the client speaks %s (no initialize)", UPSTREAM_PROTOCOL_MODERN);
    if (d->mode == DOWNSTREAM_AGGREGATE) {
        ds_set_session(a, DS_SESSION_READY);
    } else {
        ds_set_session(a, DS_SESSION_CONNECTING); /* READY with the upstream's */
    }
    return 0;
}

/* ---- results ----------------------------------------------------------------------------- */

int ds_modern_response(const struct ds_pending *p, struct json_object *response)
{
    if (!p->a->modern)
        return 0;
    struct json_object *err;
    if (json_object_object_get_ex(response, "error", &err)) {
        /* a legacy server's resource not found: -32602 in 2026-07-28 (the code is replaced in
         * the parsed answer) */
        struct json_object *code = json_object_object_get(err, "code");
        if (json_object_is_type(code, json_type_int) &&
            json_object_get_int64(code) == JRPC_RESOURCE_NOT_FOUND)
            json_object_set_int64(code, JRPC_INVALID_PARAMS);
        return 0;
    }
    /* a server that does not give a list's ttlMs: the bridge's default; resources/read:
     * immediately stale (the resource may change at any time) */
    return ds_result_hints(json_object_object_get(response, "result"), p->shape != DS_SHAPE_PLAIN,
                           p->shape == DS_SHAPE_LIST ? DS_LIST_TTL_MS : 0);
}

/* ---- requests and logs ------------------------------------------------------------------- */

/* A legacy server knows only its session's level: it is lowered to the lowest level a request
 * asked for (never raised: each request's own level filters what it gets). */
static void legacy_level(struct ds_server *s, const char *level)
{
    if (upstream_era(s->u) == UPSTREAM_ERA_MODERN || upstream_state(s->u) != UPSTREAM_READY ||
        !upstream_has_capability(s->u, "logging") ||
        (s->level_sent && ds_log_rank(level) >= ds_log_rank(s->level_sent)))
        return;
    char *copy = strdup(level);
    if (!copy) {
        log_error(s->d->log, "server '%s': cannot set its log level: out of memory", s->name);
        return;
    }
    if (ds_send_level(s, level) < 0) {
        free(copy);
        return;
    }
    free(s->level_sent);
    s->level_sent = copy;
}

void ds_modern_forwarding(struct ds_agent *a, struct jrpc_msg *m, struct ds_pending *p)
{
    if (!a->modern)
        return;
    if (catalog_kind_of(m->method) >= 0)
        p->shape = DS_SHAPE_LIST;
    else if (strcmp(m->method, "resources/read") == 0)
        p->shape = DS_SHAPE_READ;
    const char *level = json_get_string(request_meta(m), DS_META_LOG_LEVEL);
    p->log_rank = ds_log_rank(level);
    if (p->log_rank && p->s)
        legacy_level(p->s, level);
}

void ds_modern_log(struct ds_agent *a, struct ds_server *s, struct json_object *msg)
{
    int rank = ds_log_rank(json_get_string(json_object_object_get(msg, "params"), "level"));
    struct list_node *i;
    list_for_each (i, &a->pending) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->type == DS_PT_CALL && p->s == s && p->log_rank && rank >= p->log_rank) {
            ds_send_json(a, msg);
            return;
        }
    }
}

/* ---- server/discover --------------------------------------------------------------------- */

struct json_object *ds_discover_result(struct json_object *caps, struct json_object *info,
                                       const char *instructions, int64_t ttl_ms)
{
    struct json_object *res = json_object_new_object(), *versions = json_object_new_array(),
                       *meta = json_object_new_object();
    if (!res || !versions || !meta ||
        json_object_array_add(versions, json_object_new_string(UPSTREAM_PROTOCOL_MODERN)) < 0)
        goto oom;
    struct json_object *v = versions, *mt = meta;
    versions = meta = NULL; /* json_object_object_add() takes its value even when it fails */
    if (json_object_object_add(res, "resultType", json_object_new_string("complete")) < 0 ||
        json_object_object_add(res, "supportedVersions", v) < 0 ||
        json_object_object_add(res, "capabilities",
                               caps ? json_object_get(caps) : json_object_new_object()) < 0 ||
        json_object_object_add(res, "_meta", mt) < 0 ||
        json_object_object_add(mt, DS_META_SERVER_INFO,
                               info ? json_object_get(info) : json_object_new_object()) < 0 ||
        (instructions &&
         json_object_object_add(res, "instructions", json_object_new_string(instructions)) < 0) ||
        json_object_object_add(res, "ttlMs", json_object_new_int64(ttl_ms)) < 0 ||
        json_object_object_add(res, "cacheScope", json_object_new_string("private")) < 0)
        goto oom;
    return res;
oom:
    json_object_put(res);
    json_object_put(versions);
    json_object_put(meta);
    return NULL;
}
