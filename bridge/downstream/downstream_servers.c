/* downstream_servers.c - the downstream's servers: upstreams, lifecycle, listing, callbacks.
 *
 * Upstreams are created in downstream_new() (the configuration is borrowed only there), as
 * templates that never connect: the client capabilities and protocol version they must offer
 * come with the agent's initialize. Then each is created again from the template's own copy
 * of its entry, with those, and connected (ds_server_make_real). After each READY a server
 * lists everything again; a list_changed notification lists that kind again (at most one
 * listing per kind in flight, and one more after it). Each server's lifecycle ("lazy",
 * "eager", "keep-alive", "disabled") decides whether it connects at start and whether it is
 * disconnected when idle; its lists go to the metadata cache after each listing round and come
 * from it at start, under a key of the entry and of what the agent's initialize says the
 * server will be offered (meta_cache.h, downstream.h). */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "credkit/json.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_pending_int.h"
#include "downstream/downstream_servers_int.h"
#include "downstream/downstream_bridged_int.h"
#include "downstream/downstream_subs_int.h"

/* ---- lifecycle --------------------------------------------------------------------------- */

static bool server_transition_legal(enum ds_server_state from, enum ds_server_state to)
{
    switch (to) {
    case DS_SERVER_FIRST_ROUND:
        return from == DS_SERVER_TEMPLATE;
    case DS_SERVER_SETTLED:
        return from == DS_SERVER_FIRST_ROUND;
    case DS_SERVER_CLOSING:
        return from == DS_SERVER_FIRST_ROUND || from == DS_SERVER_SETTLED;
    case DS_SERVER_TEMPLATE:
    default:
        return false;
    }
}

void ds_server_set_state(struct ds_server *s, enum ds_server_state to)
{
    assert(server_transition_legal(s->state, to));
    (void)server_transition_legal;
    s->state = to;
}

bool ds_server_settled(const struct ds_server *s)
{
    return s->state == DS_SERVER_SETTLED || s->disabled;
}

/* The first round of s is over: the catalogue may have settled. */
static void server_first_round_over(struct ds_server *s)
{
    if (s->state != DS_SERVER_FIRST_ROUND)
        return;
    ds_server_set_state(s, DS_SERVER_SETTLED);
    s->d->hooks->settle_check(s->d);
}

/* ---- servers ----------------------------------------------------------------------------- */

static void on_state(struct upstream *u, enum upstream_state state, int error, const char *message,
                     void *userdata);
static void on_request(struct upstream *u, uint64_t gen, struct json_object *msg, void *userdata);
static void on_notification(struct upstream *u, const char *method, struct json_object *msg,
                            void *userdata);

static const struct upstream_handler server_handler = {
    .on_state = on_state,
    .on_request = on_request,
    .on_notification = on_notification,
};

static int server_upstream(struct downstream *d, struct ds_server *s,
                           const struct mcp_server *entry, bool real, struct upstream **ret,
                           struct err *e)
{
    struct upstream_opts o = {
        .loop = d->loop,
        .log = d->log,
        .server = entry,
        .lookup = d->lookup,
        .lookup_userdata = d->lookup_userdata,
        /* the lead agent's (the one that started the upstreams), as with one agent */
        .client_capabilities = real && d->lead ? d->lead->client_caps : NULL,
        .protocol_version = real && d->lead ? d->lead->protocol_version : NULL,
        .connect_timeout_ms = d->connect_timeout_ms,
    };
    o.request_timeout_ms = server_config_entry_request_ms(entry, &d->settings);
    if (real && server_config_entry_traced(entry, &d->settings))
        o.trace = d->trace;
    if (real && d->cred_new) {
        int r = d->cred_new(d->cred_userdata, d->loading, entry, &o.credentials, e);
        if (r < 0)
            return r;
    }
    int r = upstream_new(&o, &server_handler, s, ret, e);
    if (r < 0)
        cred_provider_free(o.credentials);
    return r;
}

static void server_cancel_lists(struct ds_server *s)
{
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++) {
        upstream_list_cancel(s->listing[k]);
        s->listing[k] = NULL;
        s->relist[k] = false;
    }
}

void ds_server_free(struct ds_server *s)
{
    if (!s)
        return;
    server_cancel_lists(s);
    loop_timer_cancel(s->idle_timer);
    upstream_free(s->u); /* with the calls of the resubs, without callbacks */
    ds_subs_release_server(s);
    catalog_source_free(s->src);
    json_object_put(s->raw);
    free(s->reason);
    free(s->level_sent);
    free(s->name);
    free(s);
}

/* ---- lifecycle of an entry, the cache ---------------------------------------------------- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The lists of s from the cache, when it holds them for this entry as written and offered caps
 * and version (the agent's, as the upstream offers them): s is then listed from the cache (a
 * lazy server is not connected at start; the others are, and what they list replaces the
 * cached lists, announced when it differs). */
static void cache_load(struct ds_server *s, struct json_object *caps, const char *version)
{
    struct downstream *d = s->d;
    s->key[0] = '\0';
    if (d->mode != DOWNSTREAM_AGGREGATE || s->disabled || !d->cache || !s->raw ||
        meta_cache_key_offered(s->raw, caps, version, s->key) < 0) {
        s->key[0] = '\0';
        return;
    }
    struct json_object *cached = meta_cache_get(d->cache, s->name, s->key, wall_ms());
    if (!cached)
        return;
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++) {
        struct json_object *items = json_get_array(cached, CATALOG_KINDS[k].key);
        catalog_source_set_items(s->src, k, items ? json_object_get(items) : NULL);
    }
    s->from_cache = true;
}

void ds_servers_offered(struct downstream *d, struct json_object *caps, const char *version)
{
    if (ds_started(d))
        return; /* the upstreams offer the lead agent's, whoever comes later */
    bool any = false;
    for (size_t i = 0; i < d->n_servers; i++) {
        if (d->servers[i]->state == DS_SERVER_TEMPLATE) {
            cache_load(d->servers[i], caps, version);
            any |= d->servers[i]->from_cache;
        }
    }
    for (enum catalog_kind k = 0; any && k < CATALOG_N_KINDS; k++)
        ds_rebuild(d, k);
}

/* Its lifecycle and idle timeout; once the upstreams have started (a server added by a
 * reload), its lists from the cache kept for what the lead agent offers. */
static void server_lifecycle_of(struct downstream *d, struct ds_server *s,
                                const struct mcp_server *entry)
{
    struct server_config sc = SERVER_CONFIG_INIT;
    s->disabled = entry->disabled;
    if (entry->raw && server_config_parse(entry->raw, &sc, NULL) >= 0) {
        s->lifecycle = sc.lifecycle;
        s->idle_ms = server_config_idle_ms(&sc, &d->settings);
    } else {
        /* the loader checked the keys: defaults for an entry made without them */
        s->lifecycle = SERVER_LIFECYCLE_LAZY;
        s->idle_ms = d->settings.idle_timeout_ms;
    }
    server_config_release(&sc);
    if (ds_started(d) && d->lead)
        cache_load(s, d->lead->client_caps, d->lead->protocol_version);
}

static void on_cache_timer(struct loop_timer *t, void *userdata)
{
    struct downstream *d = userdata;
    (void)t;
    loop_timer_cancel(d->cache_timer);
    d->cache_timer = NULL;
    ds_cache_save_now(d);
}

void ds_cache_save_now(struct downstream *d)
{
    loop_timer_cancel(d->cache_timer);
    d->cache_timer = NULL;
    struct err e = ERR_INIT;
    if (meta_cache_save(d->cache, wall_ms(), &e) < 0)
        log_warn(d->log, "the metadata cache is not saved: %s", err_msg(&e));
}

/* The lists s gave, into the cache (saved within DS_CACHE_SAVE_MS). */
static void cache_update(struct ds_server *s)
{
    struct downstream *d = s->d;
    if (!d->cache || !s->key[0] || d->mode != DOWNSTREAM_AGGREGATE)
        return;
    struct json_object *lists = json_object_new_object();
    for (enum catalog_kind k = 0; lists && k < CATALOG_N_KINDS; k++) {
        struct json_object *items = catalog_source_items(s->src, k);
        if (items &&
            json_object_object_add(lists, CATALOG_KINDS[k].key, json_object_get(items)) < 0)
            break;
    }
    /* the shortest "ttlMs" a list gave; 0 (keep it no time at all): not cached */
    int64_t ttl = -1;
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        if (s->ttl_ms[k] >= 0 && (ttl < 0 || s->ttl_ms[k] < ttl))
            ttl = s->ttl_ms[k];
    int r = 0;
    if (ttl == 0) {
        meta_cache_drop(d->cache, s->name);
        log_debug(d->log, "server '%s': its lists have \"ttlMs\": 0: not cached", s->name);
    } else {
        r = lists ? meta_cache_put(d->cache, s->name, s->key, lists, wall_ms(), ttl) : -ENOMEM;
    }
    json_object_put(lists);
    if (r == -E2BIG)
        log_info(d->log, "server '%s': its lists are over %u bytes: not cached", s->name,
                 META_CACHE_SERVER_MAX);
    else if (r < 0)
        log_warn(d->log, "server '%s': its lists are not cached: out of memory", s->name);
    if (meta_cache_dirty(d->cache) && !d->cache_timer &&
        loop_timer_add(d->loop, DS_CACHE_SAVE_MS, on_cache_timer, d, &d->cache_timer) < 0) {
        d->cache_timer = NULL;
        ds_cache_save_now(d);
    }
}

/* ---- idle -------------------------------------------------------------------------------- */

/* Whether s may be idle-closed at all: aggregate mode, not keep-alive, a timeout. */
static bool server_idles(const struct ds_server *s)
{
    return s->d->mode == DOWNSTREAM_AGGREGATE && s->lifecycle != SERVER_LIFECYCLE_KEEP_ALIVE &&
           s->idle_ms > 0 && !s->disabled;
}

/* Something of an agent's is under way on s: a call, a request of the server waiting for the
 * agent, a subscription, a listing. */
static bool server_busy(struct ds_server *s)
{
    struct downstream *d = s->d;
    struct list_node *i;
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a)) {
        list_for_each (i, &a->pending) {
            struct ds_pending *p = list_entry(i, struct ds_pending, node);
            if (p->type == DS_PT_CALL && p->s == s)
                return true;
        }
        list_for_each (i, &a->bridged) {
            if (list_entry(i, struct ds_bridged, node)->s == s)
                return true;
        }
    }
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        if (s->listing[k])
            return true;
    return ds_subs_has(d, s);
}

static void on_idle_timer(struct loop_timer *t, void *userdata);

static void arm_idle(struct ds_server *s, int64_t delay)
{
    loop_timer_cancel(s->idle_timer);
    s->idle_timer = NULL;
    if (!server_idles(s) || s->state == DS_SERVER_CLOSING)
        return;
    if (loop_timer_add(s->d->loop, delay > 0 ? delay : 1, on_idle_timer, s, &s->idle_timer) < 0)
        s->idle_timer = NULL; /* no memory: it stays connected */
}

static void on_idle_timer(struct loop_timer *t, void *userdata)
{
    struct ds_server *s = userdata;
    struct downstream *d = s->d;
    (void)t;
    loop_timer_cancel(s->idle_timer);
    s->idle_timer = NULL;
    enum upstream_state st = upstream_state(s->u);
    if (st != UPSTREAM_CONNECTING && st != UPSTREAM_READY && st != UPSTREAM_BACKOFF)
        return; /* not connected: nothing to close */
    int64_t left = s->last_used + s->idle_ms - loop_now(d->loop);
    if (server_busy(s) || left > 0) {
        arm_idle(s, left > 0 ? left : s->idle_ms);
        return;
    }
    log_info(d->log,
             "server '%s': idle for %" PRId64 " s: disconnected (its lists stay; the "
             "next call connects it again)",
             s->name, s->idle_ms / 1000);
    server_cancel_lists(s);
    upstream_disconnect(s->u);
}

void ds_server_used(struct ds_server *s)
{
    s->last_used = loop_now(s->d->loop);
}

void ds_server_start(struct ds_server *s)
{
    if (s->disabled || s->state != DS_SERVER_FIRST_ROUND)
        return;
    if (s->d->mode == DOWNSTREAM_AGGREGATE && s->from_cache) {
        /* listed from the cache: settled at once; a lazy one connects at its first use */
        server_first_round_over(s);
        if (s->lifecycle == SERVER_LIFECYCLE_LAZY ||
            s->lifecycle == SERVER_LIFECYCLE_LAZY_KEEP_ALIVE)
            return;
    }
    s->last_used = loop_now(s->d->loop);
    upstream_connect(s->u);
}

enum ds_avail ds_server_avail(const struct ds_server *s, const char **ret_reason)
{
    const char *reason = NULL;
    enum ds_avail a;
    if (s->disabled) {
        a = DS_AVAIL_DISABLED;
    } else {
        switch (upstream_state(s->u)) {
        case UPSTREAM_READY:
            a = DS_AVAIL_CONNECTED;
            break;
        case UPSTREAM_CONNECTING:
            /* trying again: the attempt before failed (a hung initialize timed out), and the
             * status says why rather than a bare "connecting" */
            a = DS_AVAIL_CONNECTING;
            reason = s->reason;
            break;
        case UPSTREAM_BACKOFF:
            /* waiting to try again after a failure */
            a = s->reason ? DS_AVAIL_FAILED : DS_AVAIL_CONNECTING;
            reason = s->reason;
            break;
        case UPSTREAM_FAILED:
            a = DS_AVAIL_FAILED;
            reason = s->reason ? s->reason : upstream_last_error(s->u);
            break;
        case UPSTREAM_LOGIN:
            a = DS_AVAIL_LOGIN;
            reason = s->reason ? s->reason : upstream_last_error(s->u);
            break;
        case UPSTREAM_IDLE:
        case UPSTREAM_CLOSING:
        case UPSTREAM_CLOSED:
        default:
            /* stopped trying once idle: the last attempt's failure, if it failed */
            a = DS_AVAIL_IDLE;
            reason = s->reason;
            break;
        }
    }
    if (ret_reason)
        *ret_reason = reason;
    return a;
}

int ds_server_wake(struct ds_server *s, struct err *e)
{
    if (s->disabled)
        return err_set(e, -EPERM, "server '%s' is disabled (\"disabled\": true in its entry)",
                       s->name);
    if (s->state == DS_SERVER_TEMPLATE)
        return err_set(e, -EAGAIN, "server '%s' is not started yet: the client has not initialized",
                       s->name);
    if (s->state == DS_SERVER_CLOSING || ds_shutting(s->d))
        return err_set(e, -ESHUTDOWN, "server '%s' is closing", s->name);
    s->last_used = loop_now(s->d->loop);
    upstream_connect(s->u); /* a no-op when connecting or connected */
    return 0;
}

static bool server_listing(const struct ds_server *s);

bool ds_wake_unlisted(struct downstream *d)
{
    bool woken = false;
    if (d->mode != DOWNSTREAM_AGGREGATE || ds_shutting(d))
        return false;
    for (size_t i = 0; i < d->n_servers; i++) {
        struct ds_server *s = d->servers[i];
        if (s->disabled || s->state == DS_SERVER_TEMPLATE || s->state == DS_SERVER_CLOSING)
            continue;
        enum upstream_state st = upstream_state(s->u);
        /* one listed live knows its tools; a failed one or one waiting for a sign-in is not
         * connected by a call (the sign-in's own path names its tools) */
        if ((!s->from_cache && st != UPSTREAM_IDLE) || st == UPSTREAM_FAILED ||
            st == UPSTREAM_LOGIN)
            continue;
        struct err e = ERR_INIT;
        if (ds_server_wake(s, &e) < 0)
            continue;
        log_info(d->log, "server '%s': woken: a call names a tool it may have", s->name);
        woken |= upstream_state(s->u) == UPSTREAM_CONNECTING || server_listing(s);
    }
    return woken;
}

bool ds_servers_waking(struct downstream *d)
{
    for (size_t i = 0; i < d->n_servers; i++) {
        struct ds_server *s = d->servers[i];
        if (s->disabled || s->state == DS_SERVER_CLOSING)
            continue;
        if (upstream_state(s->u) == UPSTREAM_CONNECTING || server_listing(s))
            return true;
    }
    return false;
}

int ds_server_new(struct downstream *d, const struct mcp_server *entry, struct ds_server **ret,
                  struct err *e)
{
    struct ds_server *s = calloc(1, sizeof(*s));
    int r = -ENOMEM;
    if (!s)
        return err_set(e, -ENOMEM, "out of memory");
    s->d = d;
    list_init(&s->resubs);
    s->name = strdup(entry->name);
    s->raw = json_object_get(entry->raw);
    if (!s->name || catalog_source_from_entry(entry, s, &s->src) < 0) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++) {
        s->listers[k] = (struct ds_lister){s, k};
        s->ttl_ms[k] = -1;
    }
    server_lifecycle_of(d, s, entry);
    bool real = ds_started(d) && !s->disabled;
    r = server_upstream(d, s, entry, real, &s->u, e);
    if (r < 0)
        goto fail;
    s->state = real ? DS_SERVER_FIRST_ROUND : DS_SERVER_TEMPLATE;
    *ret = s;
    return 0;
fail:
    ds_server_free(s);
    return r;
}

int ds_server_make_real(struct downstream *d, struct ds_server *s, struct err *e)
{
    if (s->state != DS_SERVER_TEMPLATE || s->disabled)
        return 0; /* a disabled one stays a template: never started */
    struct upstream *u;
    int r = server_upstream(d, s, upstream_server(s->u), true, &u, e);
    if (r < 0)
        return r;
    upstream_free(s->u);
    s->u = u;
    ds_server_set_state(s, DS_SERVER_FIRST_ROUND);
    return 0;
}

/* Takes s out of the array v of *n servers, keeping the order; nothing when it is not there. */
static void servers_take(struct ds_server **v, size_t *n, struct ds_server *s)
{
    for (size_t i = 0; i < *n; i++) {
        if (v[i] == s) {
            memmove(&v[i], &v[i + 1], (*n - i - 1) * sizeof(*v));
            (*n)--;
            return;
        }
    }
}

void ds_server_finish(struct downstream *d, struct ds_server *s)
{
    servers_take(d->closing, &d->n_closing, s);
    ds_fail_pending_of(d, s);
    d->hooks->drop_bridged(d, s, 0, NULL);
    ds_server_free(s);
}

void ds_server_remove(struct downstream *d, struct ds_server *s)
{
    servers_take(d->servers, &d->n_servers, s);
    server_cancel_lists(s);
    loop_timer_cancel(s->idle_timer);
    s->idle_timer = NULL;
    bool real = s->state != DS_SERVER_TEMPLATE;
    if (real)
        ds_server_set_state(s, DS_SERVER_CLOSING);
    d->hooks->drop_bridged(d, s, 0, "the server was removed from the configuration");
    enum upstream_state st = upstream_state(s->u);
    if (!real || st == UPSTREAM_IDLE || st == UPSTREAM_CLOSED) {
        /* never connected: nothing to wait for */
        ds_fail_pending_of(d, s);
        ds_server_free(s);
        return;
    }
    struct ds_server **c = realloc(d->closing, (d->n_closing + 1) * sizeof(*c));
    if (!c) {
        ds_server_finish(d, s); /* frees at once: the child is killed and reaped */
        return;
    }
    d->closing = c;
    d->closing[d->n_closing++] = s;
    upstream_close(s->u);
}

/* ---- listing ----------------------------------------------------------------------------- */

static void on_listed(struct upstream *u, struct json_object *items, int error, const char *message,
                      void *userdata);

static bool server_listing(const struct ds_server *s)
{
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        if (s->listing[k])
            return true;
    return false;
}

static void start_list(struct ds_server *s, enum catalog_kind k)
{
    if (s->listing[k]) {
        s->relist[k] = true;
        return;
    }
    int r = upstream_list(s->u, CATALOG_KINDS[k].method, CATALOG_KINDS[k].key, on_listed,
                          &s->listers[k], &s->listing[k]);
    if (r < 0) {
        s->listing[k] = NULL;
        log_error(s->d->log, "server '%s': cannot list %ss: %s", s->name, CATALOG_KINDS[k].noun,
                  strerror(-r));
    }
}

static void on_listed(struct upstream *u, struct json_object *items, int error, const char *message,
                      void *userdata)
{
    struct ds_lister *ls = userdata;
    struct ds_server *s = ls->s;
    struct downstream *d = s->d;
    enum catalog_kind k = ls->k;
    (void)u;

    int64_t ttl = upstream_list_ttl_ms(s->listing[k]);
    s->listing[k] = NULL;
    if (!error) {
        s->ttl_ms[k] = ttl;
        catalog_source_set_items(s->src, k, items);
        log_debug(d->log, "server '%s': %zu %ss", s->name, json_object_array_length(items),
                  CATALOG_KINDS[k].noun);
    } else if (error == -ENOSYS) {
        /* it declared the capability but does not know the method: nothing to list */
        catalog_source_set_items(s->src, k, NULL);
    } else {
        /* the connection went away meanwhile, or the server broke the protocol: keep what
         * it listed before; READY lists again */
        log_info(d->log, "server '%s': cannot list %ss: %s", s->name, CATALOG_KINDS[k].noun,
                 message ? message : strerror(-error));
    }
    if (s->relist[k] && upstream_state(s->u) == UPSTREAM_READY) {
        s->relist[k] = false;
        start_list(s, k);
    }
    ds_rebuild(d, k);
    if (!server_listing(s)) {
        d->hooks->announce(d);
        if (upstream_state(s->u) == UPSTREAM_READY) {
            s->from_cache = false;
            cache_update(s);
        }
        server_first_round_over(s);
    }
}

/* After READY: every list again (what the server does not offer is dropped). */
static void list_all(struct ds_server *s)
{
    bool dropped[CATALOG_N_KINDS] = {false};
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++) {
        upstream_list_cancel(s->listing[k]);
        s->listing[k] = NULL;
        s->relist[k] = false;
        if (upstream_has_capability(s->u, CATALOG_KINDS[k].cap)) {
            start_list(s, k);
        } else if (catalog_source_items(s->src, k)) {
            catalog_source_set_items(s->src, k, NULL);
            dropped[k] = true;
        }
    }
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        if (dropped[k])
            ds_rebuild(s->d, k);
    if (!server_listing(s)) {
        s->d->hooks->announce(s->d);
        s->from_cache = false;
        cache_update(s);
        server_first_round_over(s);
    }
}

/* A failed server's lists are gone from the catalogue. */
static void drop_lists(struct ds_server *s)
{
    bool had[CATALOG_N_KINDS];
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++) {
        had[k] = catalog_source_items(s->src, k) != NULL;
        catalog_source_set_items(s->src, k, NULL);
    }
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        if (had[k])
            ds_rebuild(s->d, k);
    s->d->hooks->announce(s->d);
}

/* ---- log level --------------------------------------------------------------------------- */

static void on_level_set(struct upstream_call *c, struct json_object *response, int error,
                         const char *message, void *userdata)
{
    struct ds_server *s = userdata;
    (void)c;
    (void)response;
    if (error)
        log_debug(s->d->log, "server '%s': logging/setLevel failed: %s", s->name,
                  message ? message : strerror(-error));
}

int ds_send_level(struct ds_server *s, const char *level)
{
    struct json_object *params = json_object_new_object();
    struct upstream_call *c;
    int r = -ENOMEM;
    if (params && json_object_object_add(params, "level", json_object_new_string(level)) == 0)
        r = upstream_call(s->u, "logging/setLevel", params, 0, on_level_set, NULL, s, &c);
    json_object_put(params);
    if (r < 0)
        log_error(s->d->log, "server '%s': cannot set its log level: out of memory", s->name);
    return r < 0 ? r : 0;
}

void ds_apply_level(struct downstream *d, struct ds_server *s, const char *level)
{
    for (struct ds_agent *a = ds_agent_first(d); a && !level; a = ds_agent_next(a))
        level = a->log_level;
    if (!level || upstream_state(s->u) != UPSTREAM_READY ||
        !upstream_has_capability(s->u, "logging"))
        return;
    (void)ds_send_level(s, level);
}

/* ---- upstream callbacks ------------------------------------------------------------------ */

static void on_ready(struct ds_server *s)
{
    struct downstream *d = s->d;
    bool closing = s->state == DS_SERVER_CLOSING;
    /* the upstream logs connects and failures itself; here only what the bridge does */
    log_debug(d->log, "server '%s': session %" PRIu64 " ready", s->name, upstream_generation(s->u));
    /* requests of an older session cannot be answered any more (a session the server
     * forgot, re-established without a BACKOFF in between) */
    d->hooks->drop_bridged(d, s, upstream_generation(s->u), "the server's session ended");
    free(s->reason);
    s->reason = NULL;
    free(s->level_sent); /* a new session has the server's default level */
    s->level_sent = NULL;
    s->last_used = loop_now(d->loop);
    if (!closing)
        arm_idle(s, s->idle_ms);
    ds_apply_level(d, s, NULL);
    if (!closing)
        ds_subs_renew(d, s);
    if (d->mode == DOWNSTREAM_SINGLE)
        d->hooks->single_ready(d);
    else if (!closing)
        list_all(s);
}

static void on_state(struct upstream *u, enum upstream_state state, int error, const char *message,
                     void *userdata)
{
    struct ds_server *s = userdata;
    struct downstream *d = s->d;
    (void)u;

    if ((state == UPSTREAM_BACKOFF || state == UPSTREAM_FAILED || state == UPSTREAM_LOGIN) &&
        message) {
        char *m = strdup(message);
        if (m) {
            free(s->reason);
            s->reason = m;
        }
    }
    switch (state) {
    case UPSTREAM_READY:
        on_ready(s);
        break;
    case UPSTREAM_BACKOFF:
        log_debug(d->log, "server '%s': waiting to connect again", s->name);
        /* a lazy or eager server that keeps failing stops trying once idle: the next use
         * tries again */
        if (!s->idle_timer && s->state != DS_SERVER_CLOSING)
            arm_idle(s, s->last_used + s->idle_ms - loop_now(d->loop));
        d->hooks->drop_bridged(d, s, 0, "the connection to the server was lost");
        server_cancel_lists(s);
        d->hooks->announce(d); /* what its listings changed before they were cut */
        server_first_round_over(s);
        break;
    case UPSTREAM_LOGIN:
        /* a sign-in is needed: its calls say so, its tools stay listed (the next call after a
         * sign-in connects again, and the lists are refreshed then) */
        d->hooks->drop_bridged(d, s, 0, "the server needs a sign-in");
        server_cancel_lists(s);
        if (d->mode == DOWNSTREAM_SINGLE && !upstream_generation(u))
            d->hooks->single_fail(d, message ? message : "a sign-in is needed");
        server_first_round_over(s);
        break;
    case UPSTREAM_FAILED:
        log_debug(d->log, "server '%s': failed (%s)", s->name, strerror(-error));
        d->hooks->drop_bridged(d, s, 0, "the connection to the server was lost");
        server_cancel_lists(s);
        if (d->mode == DOWNSTREAM_SINGLE)
            d->hooks->single_fail(d, message ? message : "it failed");
        else if (s->state != DS_SERVER_CLOSING)
            drop_lists(s);
        server_first_round_over(s);
        break;
    case UPSTREAM_CLOSED:
        if (s->state == DS_SERVER_CLOSING) {
            log_debug(d->log, "server '%s': closed", s->name);
            ds_server_finish(d, s);
            d->hooks->check_shutdown(d);
        }
        break;
    default:
        break;
    }
}

static void on_request(struct upstream *u, uint64_t gen, struct json_object *msg, void *userdata)
{
    struct ds_server *s = userdata;
    (void)u;
    s->d->hooks->server_request(s, gen, msg);
}

/* The notifications of a server, aggregate mode (notifications/cancelled and single mode's
 * are handled before). */
struct server_notification {
    const char *method;
    void (*handle)(struct ds_server *s, struct json_object *msg);
};

static void relist_tools(struct ds_server *s, struct json_object *msg)
{
    (void)msg;
    start_list(s, CATALOG_TOOLS);
}

static void relist_prompts(struct ds_server *s, struct json_object *msg)
{
    (void)msg;
    start_list(s, CATALOG_PROMPTS);
}

static void relist_resources(struct ds_server *s, struct json_object *msg)
{
    (void)msg;
    start_list(s, CATALOG_RESOURCES);
    start_list(s, CATALOG_TEMPLATES);
}

/* A server's notification goes to the agents (the dispatcher says which). */
static void pass_to_agent(struct ds_server *s, struct json_object *msg)
{
    s->d->hooks->server_notification(s, msg);
}

static const struct server_notification SERVER_NOTIFICATIONS[] = {
    {"notifications/tools/list_changed", relist_tools},
    {"notifications/prompts/list_changed", relist_prompts},
    {"notifications/resources/list_changed", relist_resources},
    {"notifications/message", pass_to_agent},
    {"notifications/resources/updated", pass_to_agent},
    {"notifications/elicitation/complete", pass_to_agent},
};

static void on_notification(struct upstream *u, const char *method, struct json_object *msg,
                            void *userdata)
{
    struct ds_server *s = userdata;
    struct downstream *d = s->d;
    (void)u;

    if (strcmp(method, "notifications/cancelled") == 0) {
        d->hooks->server_cancelled(s, msg);
        return;
    }
    if (d->mode == DOWNSTREAM_SINGLE) {
        pass_to_agent(s, msg);
        return;
    }
    if (s->state == DS_SERVER_CLOSING)
        return;
    for (size_t i = 0; i < ELEMENTSOF(SERVER_NOTIFICATIONS); i++) {
        if (strcmp(method, SERVER_NOTIFICATIONS[i].method) == 0) {
            SERVER_NOTIFICATIONS[i].handle(s, msg);
            return;
        }
    }
    log_debug(d->log, "server '%s': %s not forwarded", s->name, method);
}

/* ---- the catalogue, routing -------------------------------------------------------------- */

void ds_rebuild(struct downstream *d, enum catalog_kind k)
{
    if (d->mode != DOWNSTREAM_AGGREGATE)
        return;
    struct catalog_source **v = malloc((d->n_servers ? d->n_servers : 1) * sizeof(*v));
    if (!v) {
        log_error(d->log, "cannot build the list of %ss: out of memory", CATALOG_KINDS[k].noun);
        return;
    }
    for (size_t i = 0; i < d->n_servers; i++)
        v[i] = d->servers[i]->src;
    (void)catalog_rebuild(d->cat, k, v, d->n_servers, ds_may_tell_any(d)); /* logs its failure */
    free(v);
}

int64_t ds_list_ttl(struct downstream *d, enum catalog_kind k)
{
    int64_t ttl = -1;
    for (size_t i = 0; i < d->n_servers; i++) {
        const struct ds_server *s = d->servers[i];
        if (s->disabled)
            continue;
        if (!ds_server_settled(s))
            return 0; /* its lists are still to come */
        if (s->ttl_ms[k] >= 0 && (ttl < 0 || s->ttl_ms[k] < ttl))
            ttl = s->ttl_ms[k];
    }
    return ttl >= 0 ? ttl : DS_LIST_TTL_MS;
}

/* The server a resource URI belongs to (downstream.h): the catalogue's choice, else - when
 * only one server has resources - that one; or NULL. */
struct ds_server *ds_route_uri(struct downstream *d, const char *uri)
{
    struct catalog_source *src = catalog_route_uri(d->cat, uri);
    if (src)
        return catalog_source_userdata(src);
    struct ds_server *only = NULL;
    for (size_t i = 0; i < d->n_servers; i++) {
        if (!upstream_has_capability(d->servers[i]->u, "resources"))
            continue;
        if (only)
            return NULL;
        only = d->servers[i];
    }
    return only;
}
