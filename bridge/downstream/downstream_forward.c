/* downstream_forward.c - the agent's requests on their way to a server and back.
 *
 * Every agent message is parsed once, its id swapped in place where it goes upstream, and
 * serialised once (a tools/call with a tree of its envelope only); a legacy agent's results come
 * back without a tree, the agent's id spliced into the server's bytes (on_call_raw). Aggregate mode maps exposed names back through the catalogue and routes
 * resource URIs (downstream.h); a request naming what the catalogue does not know before it
 * has settled is held until it has; a tools/call naming a tool no server lists wakes the servers
 * listed only from the cache (or not connected) and waits for their lists. A tools/call that
 * fails in the bridge, or names a tool no server has, is answered with a tool result with
 * isError, other methods with JSON-RPC
 * errors. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/util.h"

#include "catalog/proxy_search.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_servers_int.h"
#include "downstream/downstream_forward_int.h"
#include "downstream/downstream_modern_int.h"
#include "downstream/downstream_listen_int.h"
#include "downstream/downstream_pending_int.h"
#include "downstream/downstream_mrtr_int.h"
#include "downstream/downstream_subs_int.h"

#define UNKNOWN_SUGGEST_MAX 5   /* close names an unknown tool's answer offers */
#define UNKNOWN_NAME_MAX    200 /* bytes of the unknown name said back */
/* The pass-through's buffer is kept up to this size between results; a bigger one is kept
 * while big results follow each other (a fresh one costs its page faults every time) and given
 * back at the first result of at most PASS_KEEP / 4. */
#define PASS_KEEP (256u * 1024u)

static void tool_error_text(char *buf, size_t size, const struct ds_server *s, int error,
                            const char *message)
{
    const char *what = message && *message ? message : strerror(-error);
    switch (error) {
    case -ESHUTDOWN:
        snprintf(buf, size, "mcp-bridge: server '%s' is not available: %s", s->name, what);
        break;
    case CRED_LOGIN_REQUIRED:
    case -EPERM:
        /* the provider's words: the command that signs in, or widens the grant */
        snprintf(buf, size, "mcp-bridge: %s", what);
        break;
    case -ETIMEDOUT:
        /* upstream.h: a request that timed out has been cancelled upstream */
        snprintf(buf, size,
                 "mcp-bridge: the call timed out: %s. mcp-bridge sent the server "
                 "notifications/cancelled for it, so it should stop working on it. The call "
                 "can be retried.",
                 message && *message ? message : "server did not answer in time");
        break;
    case -ECONNRESET:
        snprintf(buf, size,
                 "mcp-bridge: the connection to server '%s' was lost during the call (%s); it "
                 "may or may not have taken effect. The call can be retried.",
                 s->name, what);
        break;
    default:
        snprintf(buf, size,
                 "mcp-bridge: the call to server '%s' failed: %s. The call can be "
                 "retried.",
                 s->name, what);
        break;
    }
}

static int error_code(int error)
{
    switch (error) {
    case -ETIMEDOUT:
        return JRPC_REQUEST_TIMEOUT;
    case -ECONNRESET:
    case -ENOTCONN:
    case -ESHUTDOWN:
    case CRED_LOGIN_REQUIRED:
        return JRPC_CONNECTION_CLOSED;
    default:
        return JRPC_INTERNAL_ERROR;
    }
}

static void on_call_response(struct upstream_call *c, struct json_object *response, int error,
                             const char *message, void *userdata)
{
    struct ds_pending *p = userdata;
    struct ds_agent *a = p->a;
    struct downstream *d = a->d;
    (void)c;

    p->call = NULL;
    if (p->mrtr && ds_mrtr_on_response(p, response, error, message))
        return;
    if (!error) {
        if (p->sub == DS_SUB_ADD && !json_object_object_get_ex(response, "error", NULL))
            ds_subs_remember(a, p->s, p->sub_uri);
        /* the id is the agent's again; everything else passes as it is (a modern agent's
         * result gets what the 2026-07-28 revision asks for, in the same object) */
        if (ds_modern_response(p, response) == 0 &&
            json_object_object_add(response, "id", json_object_get(p->id)) == 0)
            ds_send_json(a, response);
        else
            ds_reply_error(a, p->id, JRPC_INTERNAL_ERROR, "out of memory");
    } else if (p->tool_call) {
        char text[DS_TEXT_MAX];
        tool_error_text(text, sizeof(text), p->s, error, message);
        ds_reply_result(a, p->id, jrpc_new_tool_error(text));
    } else {
        ds_reply_error(a, p->id, error_code(error), message ? message : strerror(-error));
    }
    if (ds_log_debugging(d))
        log_debug(d->log, "%s: server '%s': %s in %" PRId64 " ms", p->method, p->s->name,
                  error                                                ? "failed"
                  : json_object_object_get_ex(response, "error", NULL) ? "error"
                                                                       : "answered",
                  loop_now(d->loop) - p->start);
    ds_pending_free(p);
}

/* The pass-through joined in one buffer, for a transport without pieces. */
static void splice_send(struct ds_agent *a, struct ds_pending *p, const char *text, size_t len,
                        const struct jscan *j, const char *id, size_t id_len)
{
    struct downstream *d = a->d;
    /* the server's message was bounded when read: the id is all the splice adds */
    if (!d->pass.max)
        buf_init(&d->pass, SIZE_MAX / 2);
    if (d->pass.cap > PASS_KEEP && len <= PASS_KEEP / 4)
        buf_release(&d->pass);
    buf_reset(&d->pass);
    struct jscan_edit edit = {j->id, id, id_len};
    if (jscan_splice(text, len, &edit, 1, &d->pass) == 0)
        ds_send_text(a, d->pass.data, d->pass.len);
    else
        ds_reply_error(a, p->id, JRPC_INTERNAL_ERROR, "out of memory");
}

/* A result the server's session passes on unchanged: the agent's id spliced into its bytes
 * (docs/development.md, "The pass-through"); the rest of on_call_response has nothing to do for
 * a legacy agent's result. */
static void on_call_raw(struct upstream_call *c, const char *text, size_t len,
                        const struct jscan *j, void *userdata)
{
    struct ds_pending *p = userdata;
    struct ds_agent *a = p->a;
    struct downstream *d = a->d;
    char num[24];
    size_t id_len = 0;
    const char *id = num;
    /* an integer id written here: json-c would allocate its text for the object */
    if (json_object_is_type(p->id, json_type_int) && json_object_get_int64(p->id) < INT64_MAX)
        id_len = fmt_i64(num, sizeof(num), json_object_get_int64(p->id));
    else
        id = jrpc_serialize(p->id, &id_len);

    if (a->modern || p->mrtr || !id || !id_len) {
        /* not what upstream_call_set_raw was asked for: the tree, as for any answer */
        struct jrpc_msg m;
        struct err e = ERR_INIT;
        if (jrpc_parse(text, len, len, &m, &e) < 0) {
            on_call_response(c, NULL, -EPROTO, "the server's answer cannot be read", p);
            return;
        }
        on_call_response(c, m.root, 0, NULL, p);
        jrpc_msg_done(&m);
        return;
    }
    p->call = NULL;
    if (p->sub == DS_SUB_ADD)
        ds_subs_remember(a, p->s, p->sub_uri);
    /* the agent's id between the server's bytes, written from where they were read; joined
     * in a kept buffer only for a transport that cannot take pieces */
    struct iovec iov[3] = {
        {(void *)text, j->id.off},
        {(void *)id, id_len},
        {(void *)(text + j->id.off + j->id.len), len - j->id.off - j->id.len},
    };
    if (ds_send_iov(a, iov, 3) == -EOPNOTSUPP)
        splice_send(a, p, text, len, j, id, id_len);
    if (ds_log_debugging(d))
        log_debug(d->log, "%s: server '%s': answered in %" PRId64 " ms, passed on", p->method,
                  p->s->name, loop_now(d->loop) - p->start);
    ds_pending_free(p);
}

static void on_call_progress(struct upstream_call *c, struct json_object *params, void *userdata)
{
    struct ds_pending *p = userdata;
    (void)c;
    ds_send_put(p->a, jrpc_new_notification("notifications/progress", params));
}

struct ds_pending *ds_forward(struct ds_agent *a, struct jrpc_msg *m, struct ds_server *s,
                              bool tool_call)
{
    if (a->modern && json_object_object_get_ex(m->params, "requestState", NULL) &&
        ds_mrtr_resume(a, m, s) != 0)
        return NULL; /* the bridge's own state: resumed, or refused (answered either way) */
    struct ds_pending *p = ds_pending_new(a, DS_PT_CALL, m->id, m->method);
    if (!p) {
        ds_reply_too_many(a, m->id);
        return NULL;
    }
    p->s = s;
    p->tool_call = tool_call;
    ds_modern_forwarding(a, m, p);
    /* a modern agent answers a modern server's InputRequiredResult itself */
    int r =
        upstream_call_ex(s->u, m->method, m->params, 0, a->modern ? UPSTREAM_CALL_INPUT_PASS : 0,
                         on_call_response, on_call_progress, p, &p->call);
    if (r < 0) {
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        ds_pending_free(p);
        return NULL;
    }
    /* a legacy agent's results need nothing but their id back */
    if (!a->modern && !p->mrtr)
        upstream_call_set_raw(p->call, on_call_raw);
    return p;
}

/* ---- resource read tools ----------------------------------------------------------------- */

/* A resources/read result as tool content: text as text, a blob as an embedded resource. NULL
 * on ENOMEM. */
static struct json_object *contents_as_tool_result(struct json_object *result)
{
    struct json_object *contents = json_get_array(result, "contents");
    struct json_object *res = json_object_new_object(), *content = json_object_new_array();
    if (!res || !content)
        goto oom;
    for (size_t i = 0; contents && i < json_object_array_length(contents); i++) {
        struct json_object *c = json_object_array_get_idx(contents, i);
        const char *text = json_get_string(c, "text");
        struct json_object *item = json_object_new_object();
        if (!item)
            goto oom;
        int r;
        if (text) {
            r = json_object_object_add(item, "type", json_object_new_string("text"));
            if (r >= 0)
                r = json_object_object_add(item, "text", json_object_new_string(text));
        } else {
            r = json_object_object_add(item, "type", json_object_new_string("resource"));
            if (r >= 0)
                r = json_object_object_add(item, "resource", json_object_get(c));
        }
        if (r < 0 || json_object_array_add(content, item) < 0) {
            json_object_put(item);
            goto oom;
        }
    }
    if (!json_object_array_length(content)) {
        struct json_object *item = jrpc_new_tool_error("the resource has no contents");
        json_object_put(content);
        json_object_put(res);
        /* not an error: an empty resource; the same text without isError */
        if (item)
            json_object_object_del(item, "isError");
        return item;
    }
    if (json_object_object_add(res, "content", content) < 0)
        goto oom; /* json-c keeps no reference to what it failed to add */
    return res;
oom:
    json_object_put(content);
    json_object_put(res);
    return NULL;
}

static void on_resource_tool_response(struct upstream_call *c, struct json_object *response,
                                      int error, const char *message, void *userdata)
{
    struct ds_pending *p = userdata;
    struct ds_agent *a = p->a;
    (void)c;

    p->call = NULL;
    struct json_object *err = error ? NULL : json_object_object_get(response, "error");
    if (error) {
        char text[DS_TEXT_MAX];
        tool_error_text(text, sizeof(text), p->s, error, message);
        ds_reply_result(a, p->id, jrpc_new_tool_error(text));
    } else if (err) {
        char text[DS_TEXT_MAX];
        snprintf(text, sizeof(text), "server '%s' could not read the resource: %s", p->s->name,
                 json_get_string(err, "message") ? json_get_string(err, "message") : "error");
        ds_reply_result(a, p->id, jrpc_new_tool_error(text));
    } else {
        struct json_object *res =
            contents_as_tool_result(json_object_object_get(response, "result"));
        if (res)
            ds_reply_result(a, p->id, res);
        else
            ds_reply_error(a, p->id, JRPC_INTERNAL_ERROR, "out of memory");
    }
    ds_pending_free(p);
}

/* A read tool of exposeResources: resources/read of uri on s, answered as a tool result. */
static void forward_resource_tool(struct ds_agent *a, struct jrpc_msg *m, struct ds_server *s,
                                  const char *uri)
{
    struct ds_pending *p = ds_pending_new(a, DS_PT_CALL, m->id, "resources/read");
    if (!p) {
        ds_reply_too_many(a, m->id);
        return;
    }
    p->s = s;
    p->tool_call = true;
    struct json_object *params = json_object_new_object();
    struct json_object *meta = json_object_object_get(m->params, "_meta");
    int r = params && json_object_object_add(params, "uri", json_object_new_string(uri)) == 0 &&
                    (!meta || json_object_object_add(params, "_meta", json_object_get(meta)) == 0)
                ? upstream_call(s->u, "resources/read", params, 0, on_resource_tool_response,
                                on_call_progress, p, &p->call)
                : -ENOMEM;
    json_object_put(params);
    if (r < 0) {
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        ds_pending_free(p);
    }
}

/* Names the servers that are not READY, for messages: "" when all are. */
static void not_ready(struct downstream *d, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < d->n_servers && len + 1 < size; i++) {
        if (upstream_state(d->servers[i]->u) == UPSTREAM_READY)
            continue;
        int n = snprintf(buf + len, size - len, "%s'%s'",
                         len ? ", " : " (not connected: ", d->servers[i]->name);
        if (n < 0)
            break;
        len += (size_t)n;
    }
    if (len && len + 2 < size)
        memcpy(buf + len, ")", 2);
}

/* The string member name of o (borrowed, changed in place when the name is mapped back), or
 * NULL. */
static struct json_object *string_member(struct json_object *o, const char *name)
{
    struct json_object *v = json_object_object_get(o, name);
    return json_object_is_type(v, json_type_string) ? v : NULL;
}

/* tools/call, prompts/get: the exposed name back to the server's own */
/* The server waiting for a sign-in that an unknown tool name belongs to, and the name it would
 * know the tool by (a copy in *ret_orig's storage: borrowed from name). */
static struct ds_server *signin_server(struct downstream *d, const char *name,
                                       const char **ret_orig)
{
    for (size_t i = 0; i < d->n_servers; i++) {
        struct ds_server *s = d->servers[i];
        if (upstream_state(s->u) != UPSTREAM_LOGIN)
            continue;
        const char *orig = catalog_unprefix(d->cat, s->name, name);
        if (orig) {
            *ret_orig = orig;
            return s;
        }
    }
    return NULL;
}

/* A tools/call of a tool the settled catalogue does not have. The SDK's McpServer answers it
 * with a tool result with isError, which the model reads (a JSON-RPC error usually reaches
 * only the agent's code): the same here, with the close names the proxy tool suggests, so a
 * mistyped or guessed name can be corrected in the next call. */
static void unknown_tool(struct ds_agent *a, struct jrpc_msg *m, const char *name)
{
    struct downstream *d = a->d;
    char nr[512];
    not_ready(d, nr, sizeof(nr));
    struct buf text, sug;
    buf_init(&text, DS_TEXT_MAX * 4);
    buf_init(&sug, DS_TEXT_MAX * 2);
    int r = buf_append_str(&text, "unknown tool '");
    if (r >= 0)
        r = proxy_append_line(&text, name, UNKNOWN_NAME_MAX);
    if (r >= 0)
        r = buf_printf(&text, "'%s", nr);
    if (r >= 0 && proxy_suggest(d->cat, name, UNKNOWN_SUGGEST_MAX, &sug) >= 0 && sug.len)
        r = buf_printf(&text, "; did you mean: %s?", buf_str(&sug));
    if (r >= 0)
        r = buf_append_str(&text, catalog_proxy_enabled(d->cat)
                                      ? " tools/list lists the tools, mcp({search: \"words\"}) "
                                        "finds them"
                                      : " tools/list lists the tools");
    struct json_object *res = r >= 0 ? jrpc_new_tool_error(buf_str(&text)) : NULL;
    buf_release(&sug);
    buf_release(&text);
    if (res)
        ds_reply_result(a, m->id, res);
    else
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
}

/* ---- a call naming a tool no server lists --------------------------------------------------
 *
 * A server listed only from the cache (or not connected) may have a tool its cached list lacks:
 * one it gained since, or one it offers only to an agent with capabilities the cached list was
 * not made for. A call naming such a tool wakes those servers and waits, at most the connect
 * timeout, for them to list; then it is routed, or answered as unknown, once. */

static void forward_named(struct ds_agent *a, struct jrpc_msg *m, enum catalog_kind k,
                          bool may_wake);

/* The call of p is handled again, without waking anything. */
static void wake_over(struct ds_pending *p)
{
    struct ds_agent *a = p->a;
    struct jrpc_msg m;
    ds_pending_take_request(p, &m);
    if (m.id)
        forward_named(a, &m, CATALOG_TOOLS, false);
    json_object_put(m.root);
}

static void on_wake_timer(struct loop_timer *t, void *userdata)
{
    struct ds_pending *p = userdata;
    (void)t;
    loop_timer_cancel(p->wake_timer);
    p->wake_timer = NULL;
    wake_over(p);
}

/* Wakes the servers that may have the tool m names and holds m for them. true when held (or
 * answered: no room). */
static bool wake_for(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    if (!ds_wake_unlisted(d))
        return false;
    struct ds_pending *p = ds_pending_new(a, DS_PT_WAKE, m->id, m->method);
    if (!p) {
        ds_reply_too_many(a, m->id);
        return true;
    }
    p->msg = jrpc_msg_ref(m); /* a passed-through request has no root until now */
    if (!p->msg) {
        ds_pending_free(p);
        return false; /* answered as unknown now */
    }
    if (loop_timer_add(d->loop, d->connect_timeout_ms, on_wake_timer, p, &p->wake_timer) < 0) {
        p->wake_timer = NULL;
        wake_over(p); /* no bound to wait with: answered now */
    }
    return true;
}

void ds_forward_woken(struct downstream *d)
{
    if (ds_servers_waking(d))
        return;
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a)) {
        /* oldest first (the list is newest first); a call handled again is not held again */
        for (struct list_node *i = a->pending.prev, *prev; i != &a->pending; i = prev) {
            prev = i->prev;
            struct ds_pending *p = list_entry(i, struct ds_pending, node);
            if (p->type == DS_PT_WAKE)
                wake_over(p);
        }
    }
}

static void forward_named(struct ds_agent *a, struct jrpc_msg *m, enum catalog_kind k,
                          bool may_wake)
{
    struct downstream *d = a->d;
    struct json_object *nameobj = string_member(m->params, "name");
    const char *name = nameobj ? json_object_get_string(nameobj) : NULL;
    if (!name) {
        ds_reply_errorf(a, m->id, JRPC_INVALID_PARAMS, "%s needs params.name, a string", m->method);
        return;
    }
    const char *orig;
    struct catalog_source *src = catalog_find(d->cat, k, name, &orig);
    struct catalog_tool t;
    if (src && k == CATALOG_TOOLS && catalog_tool_find(d->cat, name, &t) && t.resource) {
        forward_resource_tool(a, m, catalog_source_userdata(src), t.orig);
        return;
    }
    if (!src) {
        if (ds_hold(a, m))
            return;
        struct ds_server *s = k == CATALOG_TOOLS ? signin_server(d, name, &orig) : NULL;
        if (s) {
            /* its tools are not known yet: the call says how to sign in, or, after a sign-in,
             * connects and goes through (upstream.h, LOGIN) */
            char *copy = strdup(orig); /* orig is inside nameobj's own string */
            if (!copy || json_object_set_string(nameobj, copy) == 0) {
                free(copy);
                ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
                return;
            }
            free(copy);
            ds_forward(a, m, s, true);
            return;
        }
        if (k == CATALOG_TOOLS && may_wake && wake_for(a, m))
            return;
        if (k == CATALOG_TOOLS) {
            unknown_tool(a, m, name);
            return;
        }
        char nr[512];
        not_ready(d, nr, sizeof(nr));
        /* MCP answers an unknown prompt with -32602 */
        ds_reply_errorf(a, m->id, JRPC_INVALID_PARAMS, "unknown %s '%s'%s", CATALOG_KINDS[k].noun,
                        name, nr);
        return;
    }
    if (json_object_set_string(nameobj, orig) == 0) {
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    ds_forward(a, m, catalog_source_userdata(src), k == CATALOG_TOOLS);
}

void ds_forward_tool_call(struct ds_agent *a, struct jrpc_msg *m)
{
    forward_named(a, m, CATALOG_TOOLS, true);
}

void ds_forward_prompt_get(struct ds_agent *a, struct jrpc_msg *m)
{
    forward_named(a, m, CATALOG_PROMPTS, false);
}

static bool is_subscription(const char *method)
{
    return strcmp(method, "resources/subscribe") == 0 ||
           strcmp(method, "resources/unsubscribe") == 0;
}

static void forward_uri(struct ds_agent *a, struct jrpc_msg *m, const char *uri)
{
    struct downstream *d = a->d;
    if (!uri) {
        ds_reply_errorf(a, m->id, JRPC_INVALID_PARAMS, "%s needs params.uri, a string", m->method);
        return;
    }
    struct ds_server *s = ds_route_uri(d, uri);
    if (!s) {
        if (ds_hold(a, m))
            return;
        /* 2026-07-28 has -32602 for it */
        ds_reply_errorf(a, m->id, a->modern ? JRPC_INVALID_PARAMS : JRPC_RESOURCE_NOT_FOUND,
                        "resource not found: no server lists '%s'", uri);
        return;
    }
    if (is_subscription(m->method))
        ds_forward_subscription(a, m, s);
    else
        ds_forward(a, m, s, false);
}

void ds_forward_resource(struct ds_agent *a, struct jrpc_msg *m)
{
    forward_uri(a, m, json_get_string(m->params, "uri"));
}

static void complete_prompt(struct ds_agent *a, struct jrpc_msg *m, struct json_object *ref)
{
    struct downstream *d = a->d;
    struct json_object *nameobj = string_member(ref, "name");
    const char *name = nameobj ? json_object_get_string(nameobj) : NULL;
    const char *orig;
    struct catalog_source *src = catalog_find(d->cat, CATALOG_PROMPTS, name, &orig);
    if (!src) {
        if (name && ds_hold(a, m))
            return;
        ds_reply_errorf(a, m->id, JRPC_INVALID_PARAMS, "unknown prompt '%s'", name ? name : "");
        return;
    }
    if (json_object_set_string(nameobj, orig) == 0) {
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    ds_forward(a, m, catalog_source_userdata(src), false);
}

void ds_forward_completion(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    struct json_object *ref = json_object_object_get(m->params, "ref");
    const char *type = json_get_string(ref, "type");
    if (type && strcmp(type, "ref/prompt") == 0) {
        complete_prompt(a, m, ref);
    } else if (type && strcmp(type, "ref/resource") == 0) {
        const char *uri = json_get_string(ref, "uri");
        struct catalog_source *src = catalog_find(d->cat, CATALOG_TEMPLATES, uri, NULL);
        if (src)
            ds_forward(a, m, catalog_source_userdata(src), false);
        else
            forward_uri(a, m, uri);
    } else {
        ds_reply_error(a, m->id, JRPC_INVALID_PARAMS,
                       "completion/complete needs params.ref of type 'ref/prompt' or "
                       "'ref/resource'");
    }
}

void ds_cancel_request(struct ds_agent *a, struct json_object *params)
{
    struct json_object *rid = json_object_object_get(params, "requestId");
    struct ds_pending *p = rid ? ds_pending_find(a, rid) : NULL;
    struct downstream *d = a->d;
    /* a request already answered (or never seen) has nothing to cancel; initialize is not
     * cancelled (MCP) */
    if (!p || p->type == DS_PT_INIT)
        return;
    log_debug(d->log, "%s cancelled by the client", p->method);
    if (p->type == DS_PT_LISTEN) {
        ds_listen_end(p, false); /* the agent expects nothing more of it */
        return;
    }
    if (p->call) {
        struct upstream_call *call = p->call;
        p->call = NULL;
        upstream_call_cancel(call, json_get_string(params, "reason"));
    }
    ds_pending_free(p);
}

void ds_forward_subscription(struct ds_agent *a, struct jrpc_msg *m, struct ds_server *s)
{
    const char *uri = json_get_string(m->params, "uri");
    bool add = strcmp(m->method, "resources/subscribe") == 0;
    if (uri && !add)
        ds_subs_forget(a, uri);
    struct ds_pending *p = ds_forward(a, m, s, false);
    if (p && uri && add)
        ds_subs_expect(p, s, uri);
}
