/* proxy_tool.c - the "mcp" tool in a downstream (proxy_tool.h): a call's arguments read
 * (proxy.h), answered in compact text from the catalogue and the servers' states
 * (proxy_search.h), or the call it names sent down the agent's own tools/call path. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "credkit/json.h"

#include "catalog/catalog.h"
#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_servers_int.h"
#include "downstream/downstream_forward_int.h"
#include "catalog/proxy.h"
#include "catalog/proxy_search.h"
#include "downstream/proxy_tool.h"

#define SUGGEST_MAX    5
#define SERVERS_LISTED 20 /* servers named after an unknown one */

static void reply_text(struct ds_agent *a, struct json_object *id, const char *text, bool is_error)
{
    struct json_object *res = NULL;
    if (is_error) {
        res = jrpc_new_tool_error(text);
    } else {
        struct json_object *item = json_object_new_object(), *content = json_object_new_array();
        res = json_object_new_object();
        if (!item || !content || !res ||
            json_object_object_add(item, "type", json_object_new_string("text")) < 0 ||
            json_object_object_add(item, "text", json_object_new_string(text)) < 0 ||
            json_object_array_add(content, item) < 0) {
            json_object_put(item);
            json_object_put(content);
            json_object_put(res);
            res = NULL;
        } else if (json_object_object_add(res, "content", content) < 0) {
            json_object_put(content);
            json_object_put(res);
            res = NULL;
        }
    }
    if (res)
        ds_reply_result(a, id, res);
    else
        ds_reply_error(a, id, JRPC_INTERNAL_ERROR, "out of memory");
}

static const char *avail_word(enum ds_avail a)
{
    switch (a) {
    case DS_AVAIL_CONNECTED:
        return "connected";
    case DS_AVAIL_CONNECTING:
        return "connecting";
    case DS_AVAIL_IDLE:
        return "idle (connects when used)";
    case DS_AVAIL_FAILED:
        return "failed";
    case DS_AVAIL_LOGIN:
        return "sign-in required";
    case DS_AVAIL_DISABLED:
        return "disabled";
    default:
        return "unknown";
    }
}

static int status(struct downstream *d, struct buf *out)
{
    size_t direct = 0, n = catalog_tool_count(d->cat);
    for (size_t i = 0; i < n; i++) {
        struct catalog_tool t;
        catalog_tool_at(d->cat, i, &t);
        direct += t.direct;
    }
    int r = buf_printf(out,
                       "%zu server%s, %zu tools (%zu listed directly). mcp({server: NAME}) "
                       "lists a server's tools, mcp({search: \"words\"}) finds tools, "
                       "mcp({describe: TOOL}) shows parameters, mcp({tool: TOOL, args: {...}}) "
                       "calls one.\n",
                       d->n_servers, d->n_servers == 1 ? "" : "s", n, direct);
    for (size_t i = 0; r >= 0 && i < d->n_servers; i++) {
        struct ds_server *s = d->servers[i];
        const char *reason = NULL;
        enum ds_avail a = ds_server_avail(s, &reason);
        if (a == DS_AVAIL_LOGIN && reason) {
            /* the command to run: what the line says already is left out of the reason */
            const char *fix = ds_past_server_name(s->name, reason);
            if (strncmp(fix, "sign-in required: ", 18) == 0)
                fix += 18;
            r = buf_printf(out, "%s: %s (", s->name, avail_word(a));
            if (r >= 0)
                r = proxy_append_line(out, fix, 300);
            if (r >= 0)
                r = buf_append_str(out, ")\n");
        } else {
            /* connecting again or idle after a failure: what went wrong the last time */
            char last[DS_TEXT_MAX];
            if ((a == DS_AVAIL_CONNECTING || a == DS_AVAIL_IDLE) && reason) {
                snprintf(last, sizeof(last), "the last attempt failed: %s", reason);
                reason = last;
            }
            r = proxy_status_line(out, s->name, avail_word(a), reason,
                                  proxy_tool_count(d->cat, s->src));
        }
    }
    /* the entries of the configuration that were not started, and why (an untrusted project
     * entry, an invalid one): an agent asked for a missing server can tell the user what to do */
    for (size_t i = 0; r >= 0 && i < d->skipped.n; i++) {
        const char *name = d->skipped.v[i];
        r = buf_printf(out, "%s: not started (", name);
        if (r >= 0)
            r = proxy_append_line(out, name + strlen(name) + 1, 300);
        if (r >= 0)
            r = buf_append_str(out, ")\n");
    }
    return r;
}

static int unknown_server(struct downstream *d, const char *name, struct buf *out)
{
    int r = buf_printf(out, "unknown server '%s'", name);
    for (size_t i = 0; r >= 0 && i < d->n_servers && i < SERVERS_LISTED; i++)
        r = buf_printf(out, "%s'%s'", i ? ", " : "; the servers: ", d->servers[i]->name);
    if (r >= 0 && d->n_servers > SERVERS_LISTED)
        r = buf_printf(out, " and %zu more", d->n_servers - SERVERS_LISTED);
    return r;
}

static int unknown_tool(struct downstream *d, const char *name, struct buf *out)
{
    int r = buf_printf(out, "unknown tool '%s'", name);
    struct buf sug;
    buf_init(&sug, 4096);
    if (r >= 0 && proxy_suggest(d->cat, name, SUGGEST_MAX, &sug) >= 0 && sug.len)
        r = buf_printf(out, "; did you mean: %s?", buf_str(&sug));
    buf_release(&sug);
    if (r >= 0)
        r = buf_append_str(out, " mcp({search: \"words\"}) finds tools");
    return r;
}

static int connect_server(struct downstream *d, const char *name, struct buf *out, bool *is_error)
{
    struct ds_server *s = ds_server_find(d, name);
    if (!s) {
        *is_error = true;
        return unknown_server(d, name, out);
    }
    const char *reason = NULL;
    enum ds_avail before = ds_server_avail(s, &reason);
    if (before == DS_AVAIL_CONNECTED)
        return buf_printf(out,
                          "server '%s' is connected: %zu tools (mcp({server: \"%s\"}) lists them)",
                          name, proxy_tool_count(d->cat, s->src), name);
    /* the reason is borrowed until the state changes: the wake changes it */
    char last[DS_TEXT_MAX] = "";
    if (reason &&
        (before == DS_AVAIL_FAILED || before == DS_AVAIL_CONNECTING || before == DS_AVAIL_IDLE))
        snprintf(last, sizeof(last), " (the last attempt failed: %s)", reason);
    struct err e = ERR_INIT;
    if (ds_server_wake(s, &e) < 0) {
        *is_error = true;
        return buf_printf(out, "cannot connect server '%s': %s", name, err_msg(&e));
    }
    enum ds_avail a = ds_server_avail(s, &reason);
    if (a == DS_AVAIL_CONNECTED)
        return buf_printf(out, "server '%s' is connected: %zu tools", name,
                          proxy_tool_count(d->cat, s->src));
    if (a == DS_AVAIL_FAILED || a == DS_AVAIL_LOGIN) {
        *is_error = true;
        return buf_printf(out, "server '%s': %s%s%s", name, avail_word(a), reason ? ": " : "",
                          reason ? reason : "");
    }
    return buf_printf(out,
                      "server '%s' is connecting%s; its tools are listed once it is (the agent is "
                      "told with notifications/tools/list_changed; mcp({server: \"%s\"}) shows "
                      "them)",
                      name, last, name);
}

/* Whether a server waiting for a sign-in would know name (its tools are not listed yet). */
static bool signin_knows(struct downstream *d, const char *name)
{
    for (size_t i = 0; i < d->n_servers; i++)
        if (upstream_state(d->servers[i]->u) == UPSTREAM_LOGIN &&
            catalog_unprefix(d->cat, d->servers[i]->name, name))
            return true;
    return false;
}

/* tool + args: a tools/call of that tool, as if the agent had sent it. */
static void call(struct ds_agent *a, struct json_object *id, struct json_object *params,
                 struct proxy_request *rq)
{
    struct downstream *d = a->d;
    struct catalog_tool t;
    const char *name = rq->target;
    if (strcmp(name, PROXY_TOOL_NAME) == 0) {
        reply_text(a, id, "the mcp tool does not call itself: name another tool", true);
        return;
    }
    if (proxy_find_tool(d->cat, name, &t)) {
        name = t.name;
    } else if (!ds_settling(d) && !signin_knows(d, name)) {
        struct buf out;
        buf_init(&out, 8192);
        int r = unknown_tool(d, name, &out);
        reply_text(a, id, r == -ENOMEM ? "out of memory" : buf_str(&out), true);
        buf_release(&out);
        return;
    }
    struct json_object *root = json_object_new_object(), *p = json_object_new_object();
    struct json_object *meta = json_object_object_get(params, "_meta");
    struct json_object *meta_copy = NULL;
    if (meta && json_object_deep_copy(meta, &meta_copy, NULL) < 0)
        meta_copy = NULL;
    if (!root || !p || (meta && !meta_copy) ||
        json_object_object_add(p, "name", json_object_new_string(name)) < 0 ||
        json_object_object_add(p, "arguments", json_object_get(rq->args)) < 0 ||
        (meta_copy && json_object_object_add(p, "_meta", meta_copy) < 0) ||
        json_object_object_add(root, "jsonrpc", json_object_new_string("2.0")) < 0 ||
        json_object_object_add(root, "id", json_object_get(id)) < 0 ||
        json_object_object_add(root, "method", json_object_new_string("tools/call")) < 0 ||
        json_object_object_add(root, "params", p) < 0) {
        json_object_put(root);
        json_object_put(p);
        ds_reply_error(a, id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    struct jrpc_msg m = {
        .root = root,
        .kind = JRPC_REQUEST,
        .method = "tools/call",
        .id = json_object_object_get(root, "id"),
        .params = p,
    };
    ds_forward_tool_call(a, &m);
    json_object_put(root);
}

/* The held tools the search found (directTools "search") are listed from now on, as the
 * adapter activates them: the tools list is rebuilt, the agents that were given it are told
 * (notifications/tools/list_changed), and the answer names them. */
static int list_found(struct downstream *d, const struct proxy_request *rq, struct buf *out)
{
    struct strv held = STRV_INIT;
    char err[512];
    size_t added = 0;
    int r = proxy_search_held(d->cat, rq->target, rq->regex, &held, err, sizeof(err));
    for (size_t i = 0; r >= 0 && i < held.n; i++) {
        r = catalog_tool_found(d->cat, held.v[i]);
        if (r > 0)
            r = buf_printf(out, "%s%s", added++ ? ", " : "listed now: ", held.v[i]);
    }
    if (added) {
        ds_rebuild(d, CATALOG_TOOLS);
        d->hooks->announce(d);
        if (r >= 0)
            r = buf_append_str(out, "\n");
    }
    strv_release(&held);
    return r;
}

void proxy_tool_call(struct ds_agent *a, struct json_object *id, struct json_object *params)
{
    struct downstream *d = a->d;
    struct proxy_request rq;
    char err[512];
    int r = proxy_request_parse(json_object_object_get(params, "arguments"), &rq, err, sizeof(err));
    if (r < 0) {
        reply_text(a, id, r == -ENOMEM ? "out of memory" : err, true);
        return;
    }
    if (rq.mode == PROXY_CALL) {
        call(a, id, params, &rq);
        proxy_request_release(&rq);
        return;
    }
    struct buf out;
    buf_init(&out, PROXY_TEXT_MAX);
    bool is_error = false;
    struct ds_server *s;
    switch (rq.mode) {
    case PROXY_CONNECT:
        r = connect_server(d, rq.target, &out, &is_error);
        break;
    case PROXY_DESCRIBE:
        r = proxy_describe(d->cat, rq.target, &out);
        if (r == -ENOENT) {
            is_error = true;
            r = unknown_tool(d, rq.target, &out);
        }
        break;
    case PROXY_SEARCH:
        r = proxy_search(d->cat, rq.target, rq.regex, rq.include_schemas, &out, err, sizeof(err));
        if (r == -EINVAL) {
            is_error = true;
            buf_reset(&out);
            r = buf_append_str(&out, err);
        } else if (r >= 0) {
            r = list_found(d, &rq, &out);
        }
        break;
    case PROXY_SERVER:
        s = ds_server_find(d, rq.target);
        if (!s) {
            is_error = true;
            r = unknown_server(d, rq.target, &out);
        } else {
            r = proxy_list_server(d->cat, s->src, avail_word(ds_server_avail(s, NULL)), &out);
        }
        break;
    case PROXY_STATUS:
    default:
        r = status(d, &out);
        break;
    }
    /* -E2BIG: the answer is cut at the bound, which is what it says */
    if (r == -ENOMEM)
        reply_text(a, id, "out of memory", true);
    else
        reply_text(a, id, buf_str(&out) ? buf_str(&out) : "", is_error);
    buf_release(&out);
    proxy_request_release(&rq);
}
