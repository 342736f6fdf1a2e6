/* downstream_subs.c - resource subscriptions survive reconnects (downstream.h).
 *
 * The bridge remembers each resources/subscribe a server accepted, URI -> server name (at most
 * DS_MAX_SUBS), in the order first subscribed, and forgets it at the agent's
 * resources/unsubscribe. After each READY of a server (a reconnect, or a reload that re-created
 * the entry: hence by name) resources/subscribe is sent again for every URI subscribed on it;
 * those answers are only logged. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_subs_int.h"

/* A subscription of the agent's. */
struct ds_sub {
    struct list_node node; /* in a->subs */
    char *server;          /* the name of the server that accepted it */
    char uri[];
};

/* A resources/subscribe the bridge sends again after a reconnect, or for a modern agent's
 * listen, or a listen's resources/unsubscribe (the answers are only logged). */
enum ds_resub_kind {
    DS_RESUB_RENEW,
    DS_RESUB_LISTEN,  /* remembered already; forgotten when the server refuses it */
    DS_RESUB_DROPPED, /* a resources/unsubscribe */
};

struct ds_resub {
    struct list_node node; /* in s->resubs */
    struct ds_server *s;
    struct ds_agent *a; /* whose subscription it is */
    enum ds_resub_kind kind;
    char uri[]; /* for the log */
};

int ds_subs_init(struct ds_agent *a)
{
    list_init(&a->subs);
    a->subs_by_uri = hashmap_new();
    return a->subs_by_uri ? 0 : -ENOMEM;
}

static void sub_free(struct ds_agent *a, struct ds_sub *sub)
{
    (void)hashmap_remove(a->subs_by_uri, sub->uri);
    list_remove(&sub->node);
    free(sub->server);
    free(sub);
}

void ds_subs_release(struct ds_agent *a)
{
    if (!a->subs_by_uri)
        return; /* never initialised */
    while (!list_is_empty(&a->subs))
        sub_free(a, list_entry(list_first(&a->subs), struct ds_sub, node));
    hashmap_free(a->subs_by_uri);
    a->subs_by_uri = NULL;
}

bool ds_subs_has(struct downstream *d, const struct ds_server *s)
{
    struct list_node *i;
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a)) {
        list_for_each (i, &a->subs) {
            if (strcmp(list_entry(i, struct ds_sub, node)->server, s->name) == 0)
                return true;
        }
    }
    return false;
}

static void cannot_renew(struct downstream *d, const struct ds_server *s, const char *uri)
{
    log_warn(d->log,
             "server '%s': out of memory: the subscription to '%s' is not renewed "
             "after a reconnect",
             s->name, uri);
}

void ds_subs_remember(struct ds_agent *a, struct ds_server *s, const char *uri)
{
    struct downstream *d = a->d;
    struct ds_sub *cur = hashmap_get(a->subs_by_uri, uri);
    if (cur && strcmp(cur->server, s->name) == 0)
        return;
    if (cur) {
        /* another server's before: it keeps its place */
        char *name = strdup(s->name);
        if (!name) {
            cannot_renew(a->d, s, uri);
            return;
        }
        free(cur->server);
        cur->server = name;
        return;
    }
    if (hashmap_size(a->subs_by_uri) >= DS_MAX_SUBS) {
        log_warn(d->log,
                 "server '%s': more than %d resource subscriptions: '%s' is not renewed "
                 "after a reconnect",
                 s->name, DS_MAX_SUBS, uri);
        return;
    }
    size_t len = strlen(uri);
    struct ds_sub *sub = calloc(1, sizeof(*sub) + len + 1);
    if (!sub || !(sub->server = strdup(s->name))) {
        free(sub);
        cannot_renew(a->d, s, uri);
        return;
    }
    memcpy(sub->uri, uri, len + 1);
    if (hashmap_put(a->subs_by_uri, sub->uri, sub) < 0) {
        free(sub->server);
        free(sub);
        cannot_renew(a->d, s, uri);
        return;
    }
    list_add_tail(&a->subs, &sub->node);
}

/* The agent unsubscribed: neither remembered nor renewed, even by a subscribe still in flight. */
void ds_subs_forget(struct ds_agent *a, const char *uri)
{
    struct ds_sub *sub = hashmap_get(a->subs_by_uri, uri);
    if (sub)
        sub_free(a, sub);
    struct list_node *i;
    list_for_each (i, &a->pending) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->sub == DS_SUB_ADD && strcmp(p->sub_uri, uri) == 0) {
            p->sub = DS_SUB_NONE;
            free(p->sub_uri);
            p->sub_uri = NULL;
        }
    }
}

void ds_subs_expect(struct ds_pending *p, struct ds_server *s, const char *uri)
{
    p->sub_uri = strdup(uri);
    if (p->sub_uri)
        p->sub = DS_SUB_ADD;
    else
        cannot_renew(p->a->d, s, uri);
}

void ds_subs_drop_removed(struct downstream *d)
{
    struct list_node *i, *tmp;
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a)) {
        list_for_each_safe (i, tmp, &a->subs) {
            struct ds_sub *sub = list_entry(i, struct ds_sub, node);
            if (!ds_server_find(d, sub->server))
                sub_free(a, sub);
        }
    }
}

/* ---- renewing after READY ---------------------------------------------------------------- */

static void resub_free(struct ds_resub *rs)
{
    list_remove(&rs->node);
    free(rs);
}

void ds_subs_release_server(struct ds_server *s)
{
    while (!list_is_empty(&s->resubs))
        resub_free(list_entry(list_first(&s->resubs), struct ds_resub, node));
}

static void on_resubscribed(struct upstream_call *c, struct json_object *response, int error,
                            const char *message, void *userdata)
{
    struct ds_resub *rs = userdata;
    struct ds_server *s = rs->s;
    struct ds_agent *a = rs->a;
    struct downstream *d = s->d;
    struct json_object *err = response ? json_object_object_get(response, "error") : NULL;
    (void)c;

    if (rs->kind == DS_RESUB_DROPPED) {
        log_debug(d->log, "server '%s': unsubscribed from '%s'%s", s->name, rs->uri,
                  err || error ? " (failed)" : "");
    } else if (rs->kind == DS_RESUB_LISTEN && err) {
        log_warn(d->log, "server '%s': cannot subscribe to '%s': %s", s->name, rs->uri,
                 json_get_string(err, "message") ? json_get_string(err, "message") : "error");
        struct ds_sub *sub = hashmap_get(a->subs_by_uri, rs->uri);
        if (sub && strcmp(sub->server, s->name) == 0)
            sub_free(a, sub);
    } else if (err)
        log_warn(d->log, "server '%s': cannot subscribe again to '%s' after reconnecting: %s",
                 s->name, rs->uri,
                 json_get_string(err, "message") ? json_get_string(err, "message") : "error");
    else if (error == -ECONNRESET || error == -ESHUTDOWN)
        /* connection gone again (the upstream says so itself): the next READY renews it */
        log_debug(d->log, "server '%s': subscription to '%s' not renewed: %s", s->name, rs->uri,
                  message ? message : strerror(-error));
    else if (error)
        log_warn(d->log, "server '%s': cannot subscribe again to '%s' after reconnecting: %s",
                 s->name, rs->uri, message ? message : strerror(-error));
    else
        log_debug(d->log, "server '%s': subscribed again to '%s'", s->name, rs->uri);
    resub_free(rs);
}

/* Sends method for uri to s; its answer is logged (and acted on by kind). */
static void send_sub(struct ds_agent *a, struct ds_server *s, const char *method, const char *uri,
                     enum ds_resub_kind kind)
{
    struct downstream *d = a->d;
    size_t len = strlen(uri);
    struct ds_resub *rs = calloc(1, sizeof(*rs) + len + 1);
    struct json_object *params = json_object_new_object();
    struct upstream_call *c;
    if (rs) {
        list_init(&rs->node);
        rs->s = s;
        rs->a = a;
        rs->kind = kind;
        memcpy(rs->uri, uri, len + 1);
    }
    if (!rs || !params || json_object_object_add(params, "uri", json_object_new_string(uri)) < 0 ||
        upstream_call(s->u, method, params, 0, on_resubscribed, NULL, rs, &c) < 0) {
        log_warn(d->log, "server '%s': out of memory: %s of '%s' not sent", s->name, method, uri);
        free(rs);
        json_object_put(params);
        return;
    }
    json_object_put(params);
    list_add_head(&s->resubs, &rs->node);
}

/* A new session knows no subscriptions. */
void ds_subs_renew(struct downstream *d, struct ds_server *s)
{
    struct list_node *i;
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a)) {
        list_for_each (i, &a->subs) {
            struct ds_sub *sub = list_entry(i, struct ds_sub, node);
            if (strcmp(sub->server, s->name) == 0)
                send_sub(a, s, "resources/subscribe", sub->uri, DS_RESUB_RENEW);
        }
    }
}

void ds_subs_listen_add(struct ds_agent *a, struct ds_server *s, const char *uri)
{
    struct ds_sub *cur = hashmap_get(a->subs_by_uri, uri);
    if (cur && strcmp(cur->server, s->name) == 0)
        return; /* subscribed already, for another listen */
    /* remembered now, so that a READY before the answer renews it too */
    ds_subs_remember(a, s, uri);
    send_sub(a, s, "resources/subscribe", uri, DS_RESUB_LISTEN);
}

void ds_subs_listen_drop(struct ds_agent *a, const char *uri)
{
    struct downstream *d = a->d;
    struct ds_sub *sub = hashmap_get(a->subs_by_uri, uri);
    struct ds_server *s = sub ? ds_server_find(d, sub->server) : NULL;
    ds_subs_forget(a, uri);
    if (s && upstream_state(s->u) == UPSTREAM_READY)
        send_sub(a, s, "resources/unsubscribe", uri, DS_RESUB_DROPPED);
}
