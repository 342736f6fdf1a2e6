/* downstream_initialize.c - the agent's initialize (downstream.h).
 *
 * What the agent declares (its protocol version when the bridge knows it; roots, sampling and
 * elicitation as it declared them) is what every upstream is offered, on every (re)connect.
 * Aggregate mode answers at once, as the bridge; single mode's answer waits for its upstream
 * (downstream_single.c). The first agent's session then starts the upstreams (downstream.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/version.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_initialize_int.h"
#include "downstream/downstream_modern_int.h"
#include "downstream/downstream_servers_int.h"
#include "downstream/downstream_single_int.h"

/* What the bridge offers in aggregate mode. NULL on ENOMEM. */
static struct json_object *aggregate_capabilities(void)
{
    struct json_object *caps = json_object_new_object();
    if (!caps)
        return NULL;
    static const char *const listed[] = {"tools", "prompts"};
    for (size_t i = 0; i < ELEMENTSOF(listed); i++) {
        struct json_object *c = json_object_new_object();
        if (!c || json_object_object_add(caps, listed[i], c) < 0 ||
            json_object_object_add(c, "listChanged", json_object_new_boolean(1)) < 0)
            goto oom;
    }
    struct json_object *rc = json_object_new_object();
    if (!rc || json_object_object_add(caps, "resources", rc) < 0 ||
        json_object_object_add(rc, "subscribe", json_object_new_boolean(1)) < 0 ||
        json_object_object_add(rc, "listChanged", json_object_new_boolean(1)) < 0 ||
        json_object_object_add(caps, "logging", json_object_new_object()) < 0 ||
        json_object_object_add(caps, "completions", json_object_new_object()) < 0)
        goto oom;
    return caps;
oom:
    json_object_put(caps);
    return NULL;
}

/* Appends the names of the servers that pick says yes to: "'a', 'b' and 'c'". The count. */
static size_t append_names(struct downstream *d, struct buf *instr,
                           bool (*pick)(struct ds_server *), int *r)
{
    size_t n = 0, total = 0;
    for (size_t i = 0; i < d->n_servers; i++)
        total += pick(d->servers[i]);
    for (size_t i = 0; i < d->n_servers && *r >= 0; i++) {
        if (!pick(d->servers[i]))
            continue;
        *r = buf_printf(instr, "%s'%s'",
                        n == 0           ? ""
                        : n + 1 == total ? " and "
                                         : ", ",
                        d->servers[i]->name);
        n++;
    }
    return n;
}

static bool listed_from_cache(struct ds_server *s)
{
    return !s->disabled && s->from_cache;
}

static bool connecting_now(struct ds_server *s)
{
    return !s->disabled && !s->from_cache;
}

/* The instructions, into instr. initialize is answered before any server has connected, so
 * they name only the servers whose tools are in the lists now, those listed from the metadata
 * cache; the others are counted, as connecting (their tools come with
 * notifications/tools/list_changed, or never when they fail). Disabled servers are not
 * counted. Then the proxy tool, when there is one, and how names are formed. -ENOMEM. */
static int aggregate_instructions(struct downstream *d, struct buf *instr)
{
    size_t cached = 0, connecting = 0;
    for (size_t i = 0; i < d->n_servers; i++) {
        cached += listed_from_cache(d->servers[i]);
        connecting += connecting_now(d->servers[i]);
    }
    if (cached + connecting == 0)
        return buf_append_str(instr, "mcp-bridge: no MCP servers are configured.");
    int r = buf_append_str(instr, "mcp-bridge serves the tools, prompts and resources of several "
                                  "MCP servers as one.");
    if (r >= 0 && cached) {
        r = buf_append_str(instr, " Listed from its cache: ");
        append_names(d, instr, listed_from_cache, &r);
        if (r >= 0)
            r = buf_append_str(instr, " (a lazy server connects at its first use).");
    }
    if (r >= 0 && connecting)
        r = buf_printf(instr,
                       " %zu %sserver%s connecting now: %s tools are announced with "
                       "notifications/tools/list_changed once listed (one that cannot connect "
                       "is left out).",
                       connecting, cached ? "more " : "", connecting == 1 ? " is" : "s are",
                       connecting == 1 ? "its" : "their");
    if (r >= 0 && catalog_proxy_enabled(d->cat))
        r = buf_append_str(instr, " The tool 'mcp' shows each server's state, finds tools by "
                                  "words (search), describes them and calls them, also those "
                                  "not listed directly.");
    if (r >= 0)
        r = buf_printf(instr, " Tool and prompt names are %s.", catalog_naming_desc(d->cat));
    return r;
}

/* version: the agent's protocol version, NULL when the bridge does not know it. */
static struct json_object *aggregate_init_result(struct downstream *d, const char *version)
{
    struct json_object *res = json_object_new_object();
    struct json_object *caps = aggregate_capabilities();
    struct json_object *info = json_object_new_object();
    struct buf instr;
    buf_init(&instr, 64 * 1024);

    if (!res || !caps || !info)
        goto oom;
    if (json_object_object_add(info, "name", json_object_new_string("mcp-bridge")) < 0 ||
        json_object_object_add(info, "version", json_object_new_string(PROJECT_VERSION_STR)) < 0)
        goto oom;
    if (aggregate_instructions(d, &instr) < 0)
        goto oom;
    if (json_object_object_add(
            res, "protocolVersion",
            json_object_new_string(version ? version : UPSTREAM_PROTOCOL_LATEST)) < 0)
        goto oom;
    /* json_object_object_add() takes its value even when it fails */
    struct json_object *c = caps, *in = info;
    caps = info = NULL;
    if (json_object_object_add(res, "capabilities", c) < 0 ||
        json_object_object_add(res, "serverInfo", in) < 0 ||
        json_object_object_add(res, "instructions", json_object_new_string(buf_str(&instr))) < 0)
        goto oom;
    buf_release(&instr);
    return res;
oom:
    buf_release(&instr);
    json_object_put(res);
    json_object_put(caps);
    json_object_put(info);
    return NULL;
}

/* server/discover of a modern agent in aggregate mode: what initialize would say. */
struct json_object *ds_aggregate_discover(struct ds_agent *a)
{
    struct downstream *d = a->d;
    struct json_object *init = aggregate_init_result(d, a->protocol_version);
    struct json_object *res = init
                                  ? ds_discover_result(json_object_object_get(init, "capabilities"),
                                                       json_object_object_get(init, "serverInfo"),
                                                       json_get_string(init, "instructions"),
                                                       ds_list_ttl(d, CATALOG_TOOLS))
                                  : NULL;
    json_object_put(init);
    return res;
}

void ds_handle_initialize(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    if (ds_init_seen(a)) {
        ds_reply_error(a, m->id, JRPC_INVALID_REQUEST, "initialize was already received");
        return;
    }
    /* taken once: single mode's initialize sent again keeps what the upstream was offered */
    if (!a->agent_caps && ds_take_capabilities(a, json_get_string(m->params, "protocolVersion"),
                                               json_get_object(m->params, "capabilities")) < 0) {
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    if (d->mode == DOWNSTREAM_SINGLE) {
        ds_single_initialize(a, m);
        return;
    }
    struct json_object *res = aggregate_init_result(d, a->protocol_version);
    if (!res) {
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    ds_set_session(a, DS_SESSION_READY);
    ds_reply_result(a, m->id, res);
}
