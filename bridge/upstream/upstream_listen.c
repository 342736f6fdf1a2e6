/* upstream_listen.c - what a 2026-07-28 server no longer has, done by the upstream so that its
 * callers need not know the era: ping answered here, logging/setLevel remembered and stamped as
 * _meta logLevel on every later request, resources/subscribe and unsubscribe turned into the
 * resource URIs of the one subscriptions/listen stream per upstream. That stream is opened once
 * READY, with the list-changed filters of what the server has, sent again (after a wait that
 * doubles up to LISTEN_RETRY_MAX_MS) when it drops or the server ends it, and opened anew when
 * the URIs change; its notifications reach on_notification under their usual names, its
 * acknowledgement is consumed here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "upstream/upstream_int.h"

#define LISTEN_RETRY_MIN_MS 1000
#define LISTEN_RETRY_MAX_MS (30 * 1000)

static bool has_cap(struct upstream *u, const char *name)
{
    return u->caps && json_object_object_get_ex(u->caps, name, NULL);
}

/* The URI of a subscribe/unsubscribe call, or NULL. */
static const char *uri_of(struct upstream_call *c)
{
    struct json_object *v = NULL;
    if (!c->params || !json_object_object_get_ex(c->params, "uri", &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static int uri_index(struct upstream *u, const char *uri)
{
    size_t n = u->listen_uris ? json_object_array_length(u->listen_uris) : 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(json_object_get_string(json_object_array_get_idx(u->listen_uris, i)), uri) == 0)
            return (int)i;
    return -1;
}

/* The listen stream is opened again with the current filters. */
static void listen_restart(struct upstream *u)
{
    struct upstream_call *c = u->listen_call;
    u->listen_call = NULL;
    if (c) {
        c->userdata = NULL; /* no callback: upstream_call_cancel frees it */
        upstream_call_cancel(c, "the subscriptions changed");
    }
    up_disarm(&u->listen_timer);
    up_listen_start(u);
}

bool up_modern_local(struct upstream *u, struct upstream_call *c)
{
    if (c->ifn)
        return false;
    if (strcmp(c->method, "ping") == 0) {
        up_call_answer_later(u, c, NULL);
        return true;
    }
    if (strcmp(c->method, "logging/setLevel") == 0) {
        struct json_object *v = NULL;
        if (c->params && json_object_object_get_ex(c->params, "level", &v) &&
            json_object_is_type(v, json_type_string)) {
            char *l = strdup(json_object_get_string(v));
            if (l) {
                free(u->log_level);
                u->log_level = l;
            }
        }
        up_call_answer_later(u, c, NULL);
        return true;
    }
    bool sub = strcmp(c->method, "resources/subscribe") == 0;
    if (!sub && strcmp(c->method, "resources/unsubscribe") != 0)
        return false;
    const char *uri = uri_of(c);
    if (uri) {
        int at = uri_index(u, uri);
        bool changed = false;
        if (sub && at < 0) {
            if (!u->listen_uris)
                u->listen_uris = json_object_new_array();
            changed = u->listen_uris &&
                      json_object_array_add(u->listen_uris, json_object_new_string(uri)) >= 0;
        } else if (!sub && at >= 0) {
            changed = json_object_array_del_idx(u->listen_uris, (size_t)at, 1) == 0;
        }
        if (changed && u->state == UPSTREAM_READY)
            listen_restart(u);
    }
    up_call_answer_later(u, c, NULL);
    return true;
}

static void listen_fired(struct loop_timer *t, void *userdata)
{
    struct upstream *u = userdata;
    (void)t;
    if (!u->listen_call)
        up_listen_start(u);
}

static void listen_done(struct upstream_call *c, struct json_object *resp, int error,
                        const char *message, void *userdata)
{
    struct upstream *u = userdata;
    (void)c;
    if (!u)
        return; /* given up on (restarted, or the connection went) */
    u->listen_call = NULL;
    struct json_object *err = NULL;
    if (resp && json_object_object_get_ex(resp, "error", &err)) {
        log_debug(u->log, "server '%s': subscriptions/listen refused: %s", up_name(u),
                  json_object_get_string(json_object_object_get(err, "message")));
        return; /* the server has none: nothing to listen to */
    }
    if (u->state != UPSTREAM_READY || !u->wire_modern)
        return; /* READY again opens it */
    int64_t wait = u->listen_retry_ms ? u->listen_retry_ms : LISTEN_RETRY_MIN_MS;
    u->listen_retry_ms = wait * 2 > LISTEN_RETRY_MAX_MS ? LISTEN_RETRY_MAX_MS : wait * 2;
    log_debug(u->log, "server '%s': the subscriptions/listen stream ended (%s): opening it again",
              up_name(u), error < 0 ? (message ? message : strerror(-error)) : "by the server");
    if (up_arm(u, &u->listen_timer, wait, listen_fired) < 0)
        log_warn(u->log, "server '%s': cannot arm the re-sending of subscriptions/listen",
                 up_name(u));
}

void up_listen_start(struct upstream *u)
{
    if (u->listen_call || !u->wire_modern || u->state != UPSTREAM_READY || !u->conn)
        return;
    struct json_object *p = json_object_new_object(), *f = json_object_new_object();
    bool any = false;
    if (!p || !f || json_object_object_add(p, "notifications", f) < 0) {
        json_object_put(p);
        json_object_put(f);
        return;
    }
    static const struct {
        const char *cap, *key;
    } lists[] = {{"tools", "toolsListChanged"},
                 {"prompts", "promptsListChanged"},
                 {"resources", "resourcesListChanged"}};
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
        if (has_cap(u, lists[i].cap)) {
            any = true;
            (void)json_object_object_add(f, lists[i].key, json_object_new_boolean(1));
        }
    if (u->listen_uris && json_object_array_length(u->listen_uris) > 0 && has_cap(u, "resources")) {
        any = true;
        (void)json_object_object_add(f, "resourceSubscriptions", json_object_get(u->listen_uris));
    }
    struct upstream_call *c = NULL;
    if (!any || up_call_new(u, "subscriptions/listen", p, 0, &c) < 0) {
        json_object_put(p);
        return;
    }
    json_object_put(p);
    c->fn = listen_done;
    c->userdata = u;
    u->listen_call = c;
    up_send_or_fail(u, c);
}

void up_listen_stop(struct upstream *u)
{
    up_disarm(&u->listen_timer);
    if (u->listen_call)
        u->listen_call->userdata = NULL; /* failed with the rest, silently */
    u->listen_call = NULL;
}

bool up_listen_notification(struct upstream *u, struct jrpc_msg *m)
{
    if (strcmp(m->method, "notifications/subscriptions/acknowledged") != 0)
        return false;
    u->listen_retry_ms = 0;
    log_debug(u->log, "server '%s': subscriptions/listen acknowledged", up_name(u));
    return true;
}

void up_listen_free(struct upstream *u)
{
    up_disarm(&u->listen_timer);
    u->listen_call = NULL;
}
