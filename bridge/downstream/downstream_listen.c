/* downstream_listen.c - a modern agent's subscriptions/listen (downstream.h, "Modern agents").
 *
 * A listen is a request the bridge leaves open: it is acknowledged at once with
 * notifications/subscriptions/acknowledged (the filter the bridge honours), and from then on
 * the notifications its filter asks for go to the agent tagged with
 * _meta["io.modelcontextprotocol/subscriptionId"] (the listen's id): the list changes of the
 * catalogue (aggregate mode; single mode: the server's own) and notifications/resources/updated
 * for its resourceSubscriptions, which are subscribed on the servers that serve them as a
 * legacy agent's resources/subscribe is (renewed after each reconnect; a modern server's
 * upstream folds them into its own listen). Several listens may be open at once, each with
 * its own filter. A listen ends when the agent cancels it (no answer: stdio.mdx) or at
 * shutdown (answered with its closing result); the subscriptions no open listen wants any more
 * are dropped then. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_servers_int.h"
#include "downstream/downstream_listen_int.h"
#include "downstream/downstream_modern_int.h"
#include "downstream/downstream_pending_int.h"
#include "downstream/downstream_subs_int.h"

struct ds_listen {
    bool kinds[CATALOG_N_KINDS]; /* tools, prompts, resources (templates: with resources) */
    size_t n_uris;
    char **uris;
};

static const char *const FILTER_KEYS[] = {"toolsListChanged", "promptsListChanged",
                                          "resourcesListChanged"};

void ds_listen_free(struct ds_agent *a, struct ds_listen *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n_uris; i++)
        free(l->uris[i]);
    free(l->uris);
    free(l);
    a->n_listens--;
}

/* Whether an open listen other than skip has uri among its resources. */
static bool uri_wanted(struct ds_agent *a, const struct ds_pending *skip, const char *uri)
{
    struct list_node *i;
    list_for_each (i, &a->pending) {
        const struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p == skip || p->type != DS_PT_LISTEN)
            continue;
        for (size_t j = 0; j < p->listen->n_uris; j++)
            if (strcmp(p->listen->uris[j], uri) == 0)
                return true;
    }
    return false;
}

/* The _meta of a message of listen id: {"io.modelcontextprotocol/subscriptionId": id}. */
static struct json_object *tag(struct json_object *id)
{
    struct json_object *meta = json_object_new_object();
    if (meta && json_object_object_add(meta, DS_META_SUBSCRIPTION, json_object_get(id)) < 0) {
        json_object_put(meta);
        return NULL;
    }
    return meta;
}

/* Whether single mode's server offers notifications of kind k (it may not be connected yet:
 * then everything is taken). */
static bool offered(struct downstream *d, enum catalog_kind k)
{
    if (d->mode == DOWNSTREAM_AGGREGATE)
        return true;
    struct upstream *u = d->servers[0]->u;
    if (upstream_state(u) != UPSTREAM_READY)
        return true;
    struct json_object *cap =
        json_get_object(upstream_server_capabilities(u), CATALOG_KINDS[k].cap);
    struct json_object *v = json_object_object_get(cap, "listChanged");
    return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

static bool subscribable(struct downstream *d, struct ds_server *s)
{
    if (d->mode == DOWNSTREAM_AGGREGATE || upstream_state(s->u) != UPSTREAM_READY)
        return true;
    struct json_object *res = json_get_object(upstream_server_capabilities(s->u), "resources");
    struct json_object *v = json_object_object_get(res, "subscribe");
    return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

/* The filter of params (its "notifications") into l, the acknowledged one into ack; the
 * servers of the URIs into srv (l->n_uris of them). -EINVAL (not an object), -EAGAIN (a URI
 * no server lists yet, while the catalogue settles), -ENOMEM. */
static int parse_filter(struct ds_agent *a, struct json_object *params, struct ds_listen *l,
                        struct json_object *ack, struct ds_server ***srv)
{
    struct downstream *d = a->d;
    struct json_object *filter = json_get_object(params, "notifications");
    if (!filter)
        return -EINVAL;
    for (enum catalog_kind k = 0; k < CATALOG_TEMPLATES; k++) {
        struct json_object *v = json_object_object_get(filter, FILTER_KEYS[k]);
        if (!json_object_is_type(v, json_type_boolean) || !json_object_get_boolean(v) ||
            !offered(d, k))
            continue;
        l->kinds[k] = true;
        if (json_object_object_add(ack, FILTER_KEYS[k], json_object_new_boolean(1)) < 0)
            return -ENOMEM;
    }
    l->kinds[CATALOG_TEMPLATES] = l->kinds[CATALOG_RESOURCES];
    struct json_object *uris = json_object_object_get(filter, "resourceSubscriptions");
    if (!uris)
        return 0;
    if (!json_object_is_type(uris, json_type_array))
        return -EINVAL;
    size_t n = json_object_array_length(uris);
    struct json_object *acked = json_object_new_array();
    l->uris = calloc(n ? n : 1, sizeof(*l->uris));
    *srv = calloc(n ? n : 1, sizeof(**srv));
    if (!acked || json_object_object_add(ack, "resourceSubscriptions", acked) < 0 || !l->uris ||
        !*srv)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct json_object *u = json_object_array_get_idx(uris, i);
        if (!json_object_is_type(u, json_type_string))
            return -EINVAL;
        const char *uri = json_object_get_string(u);
        struct ds_server *s = ds_route_uri(d, uri);
        if (!s && ds_settling(d))
            return -EAGAIN;
        if (!s || !subscribable(d, s))
            continue; /* not acknowledged: nobody serves it */
        char *copy = strdup(uri);
        if (!copy || json_object_array_add(acked, json_object_new_string(uri)) < 0) {
            free(copy);
            return -ENOMEM;
        }
        (*srv)[l->n_uris] = s;
        l->uris[l->n_uris++] = copy;
    }
    return 0;
}

void ds_listen_open(struct ds_agent *a, struct jrpc_msg *m)
{
    struct downstream *d = a->d;
    if (a->n_listens >= DS_MAX_LISTENS) {
        ds_reply_errorf(a, m->id, JRPC_INTERNAL_ERROR,
                        "too many subscriptions/listen open (at most %d): cancel one first",
                        DS_MAX_LISTENS);
        return;
    }
    struct ds_listen *l = calloc(1, sizeof(*l));
    struct json_object *ack = json_object_new_object();
    struct ds_server **srv = NULL;
    int r = l && ack ? parse_filter(a, m->params, l, ack, &srv) : -ENOMEM;
    a->n_listens += l != NULL; /* ds_listen_free counts it down */
    if (r == -EAGAIN && ds_hold(a, m))
        goto out; /* a URI no server has listed yet: once the catalogue settled */
    if (r == -EINVAL || r == -EAGAIN) {
        ds_reply_error(a, m->id, JRPC_INVALID_PARAMS,
                       "subscriptions/listen needs params.notifications, an object with "
                       "toolsListChanged, promptsListChanged, resourcesListChanged (booleans) "
                       "and resourceSubscriptions (URIs)");
        goto out;
    }
    struct ds_pending *p = r < 0 ? NULL : ds_pending_new(a, DS_PT_LISTEN, m->id, m->method);
    if (!p) {
        if (r < 0)
            ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        else
            ds_reply_too_many(a, m->id);
        goto out;
    }
    p->listen = l;
    struct json_object *params = json_object_new_object(), *meta = tag(m->id);
    if (!params || !meta || json_object_object_add(params, "_meta", meta) < 0 ||
        json_object_object_add(params, "notifications", json_object_get(ack)) < 0) {
        if (!params)
            json_object_put(meta);
        json_object_put(params);
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        ds_pending_free(p);
        l = NULL;
        goto out;
    }
    /* the acknowledgement first: the updates of the subscriptions made now come after it */
    ds_send_put(a, jrpc_new_notification("notifications/subscriptions/acknowledged", params));
    json_object_put(params);
    for (size_t i = 0; i < l->n_uris; i++)
        ds_subs_listen_add(a, srv[i], l->uris[i]);
    log_debug(d->log, "subscriptions/listen open: %zu resources", l->n_uris);
    l = NULL;
out:
    ds_listen_free(a, l);
    free(srv);
    json_object_put(ack);
}

void ds_listen_end(struct ds_pending *p, bool graceful)
{
    struct ds_agent *a = p->a;
    struct downstream *d = a->d;
    if (graceful) {
        struct json_object *res = json_object_new_object(), *meta = tag(p->id);
        if (res && meta && json_object_object_add(res, "_meta", meta) == 0 &&
            ds_result_hints(res, false, 0) == 0) {
            ds_reply_result(a, p->id, res);
        } else {
            if (!res)
                json_object_put(meta);
            json_object_put(res);
        }
    }
    for (size_t i = 0; !ds_shutting(d) && i < p->listen->n_uris; i++)
        if (!uri_wanted(a, p, p->listen->uris[i]))
            ds_subs_listen_drop(a, p->listen->uris[i]);
    ds_pending_free(p);
}

/* A notification of listen p: method, the params members of base (borrowed, may be NULL)
 * without its _meta, and the tag. */
static void send_tagged(struct ds_agent *a, const struct ds_pending *p, const char *method,
                        struct json_object *base)
{
    struct downstream *d = a->d;
    struct json_object *params = json_object_new_object(), *meta = tag(p->id);
    if (!params || !meta)
        goto oom;
    if (json_object_is_type(base, json_type_object)) {
        json_object_object_foreach(base, key, val)
        {
            if (strcmp(key, "_meta") != 0 &&
                json_object_object_add(params, key, json_object_get(val)) < 0)
                goto oom;
        }
    }
    if (json_object_object_add(params, "_meta", meta) < 0) {
        meta = NULL;
        goto oom;
    }
    ds_send_put(a, jrpc_new_notification(method, params));
    json_object_put(params);
    return;
oom:
    json_object_put(meta);
    json_object_put(params);
    log_error(d->log, "%s not sent to the client: out of memory", method);
}

void ds_listen_list_changed(struct ds_agent *a, const char *method)
{
    int k = -1;
    for (enum catalog_kind i = 0; i < CATALOG_N_KINDS && k < 0; i++)
        if (strcmp(CATALOG_KINDS[i].changed, method) == 0)
            k = (int)i;
    if (k < 0)
        return;
    struct list_node *i;
    list_for_each (i, &a->pending) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->type == DS_PT_LISTEN && p->listen->kinds[k])
            send_tagged(a, p, method, NULL);
    }
}

void ds_listen_resource_updated(struct ds_agent *a, struct json_object *msg)
{
    struct json_object *params = json_object_object_get(msg, "params");
    const char *uri = json_get_string(params, "uri");
    if (!uri)
        return;
    struct list_node *i;
    list_for_each (i, &a->pending) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->type != DS_PT_LISTEN)
            continue;
        for (size_t j = 0; j < p->listen->n_uris; j++) {
            if (strcmp(p->listen->uris[j], uri) == 0) {
                send_tagged(a, p, "notifications/resources/updated", params);
                break;
            }
        }
    }
}
