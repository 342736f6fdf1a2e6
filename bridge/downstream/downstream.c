/* downstream.c - the MCP server the agent talks to: the dispatcher over the parts (downstream.h).
 *
 * The parts (downstream_int.h maps them) do not know each other's events: this file holds the
 * agents' side of the connection (closed, broken, drained; their messages go to
 * downstream_dispatch.c), the first round of the catalogue (the first answer to a list waits for
 * every server to settle, bounded by the settle window; a request naming what is not listed yet,
 * by the connect timeout), the upstreams' start after the first agent's session began, the
 * table of hooks through which the lower parts report what happened (a server READY, a request
 * freed, a session begun) and which part acts on it, the object's construction (with the
 * settings and the metadata cache), reload, shutdown (which saves the cache) and release. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_modern_int.h"
#include "downstream/downstream_listen_int.h"
#include "downstream/downstream_servers_int.h"
#include "downstream/downstream_pending_int.h"
#include "downstream/downstream_forward_int.h"
#include "downstream/downstream_bridged_int.h"
#include "downstream/downstream_mrtr_int.h"
#include "downstream/downstream_subs_int.h"
#include "downstream/downstream_single_int.h"
#include "downstream/downstream_dispatch_int.h"
#include "downstream/agent_transport.h"

/* Shutdown is over once every server is closed. */
static void check_shutdown(struct downstream *d);
static void on_announce_timer(struct loop_timer *t, void *userdata);

/* ---- lifecycles -------------------------------------------------------------------------- */

static bool phase_transition_legal(enum ds_phase from, enum ds_phase to)
{
    switch (to) {
    case DS_PHASE_SHUTTING:
        return from == DS_PHASE_RUNNING;
    case DS_PHASE_FLUSHING:
        return from == DS_PHASE_SHUTTING;
    case DS_PHASE_DONE:
        return from == DS_PHASE_SHUTTING || from == DS_PHASE_FLUSHING;
    case DS_PHASE_RUNNING:
    default:
        return false;
    }
}

static void set_phase(struct downstream *d, enum ds_phase to)
{
    assert(phase_transition_legal(d->phase, to));
    (void)phase_transition_legal;
    d->phase = to;
}

/* ---- the catalogue ----------------------------------------------------------------------- */

/* Every agent that may hear of it (the catalogue knows whether a list was given at all, not to
 * which agent). */
static void notify_agent(const char *method, void *userdata)
{
    struct downstream *d = userdata;
    d->announced = true;
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a)) {
        if (!ds_may_tell(a))
            continue;
        if (a->modern)
            ds_listen_list_changed(a, method); /* only on the listens that ask for it */
        else
            ds_send_put(a, jrpc_new_notification(method, NULL));
    }
}

/* Tells the agents of the lists due now; a window opens when something was said. */
static void announce_now(struct downstream *d)
{
    d->announced = false;
    catalog_announce(d->cat, ds_may_tell_any(d), notify_agent, d);
    ds_forward_woken(d); /* after the news: a call routed to a new tool follows its list_changed */
    if (d->announced && loop_timer_add(d->loop, DS_ANNOUNCE_WINDOW_MS, on_announce_timer, d,
                                       &d->announce_timer) < 0)
        d->announce_timer = NULL; /* no window: the next change is told at once */
}

/* The window after a list_changed is over: the changes made during it, told as one. */
static void on_announce_timer(struct loop_timer *t, void *userdata)
{
    struct downstream *d = userdata;
    (void)t;
    loop_timer_cancel(d->announce_timer);
    d->announce_timer = NULL;
    announce_now(d);
}

/* A server's new lists are announced together once its listing round is over, not one by
 * one; and servers that list at about the same time (several connecting at start) are told
 * of at most once per kind in each DS_ANNOUNCE_WINDOW_MS: the first change at once, the later
 * ones at the window's end. The catalogue keeps what is due meanwhile, so an agent still hears
 * only of lists it was given. */
static void announce(struct downstream *d)
{
    if (d->announce_timer && ds_may_tell_any(d))
        return;
    loop_timer_cancel(d->announce_timer); /* nobody to tell: nothing to wait for */
    d->announce_timer = NULL;
    announce_now(d);
}

static void rebuild_all(struct downstream *d)
{
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        ds_rebuild(d, k);
    announce(d);
}

/* ---- settling: the first answer to a list waits for it ---------------------------------- */

/* A held request, handled now as if it had just come: the catalogue is as complete as it
 * gets. */
static void handle_held(struct ds_agent *a, struct ds_pending *p)
{
    struct jrpc_msg m;
    ds_pending_take_request(p, &m);
    if (m.method && m.id)
        ds_dispatch_request(a, &m);
    json_object_put(m.root);
}

static void log_unsettled(struct downstream *d)
{
    for (size_t i = 0; i < d->n_servers; i++)
        if (!ds_server_settled(d->servers[i]))
            log_info(d->log, "server '%s': not connected yet; its tools follow when it is",
                     d->servers[i]->name);
}

/* The lists waiting are answered, and with held the requests held for the catalogue handled
 * again, in the order the agent asked: the list is newest first, so it is walked backwards
 * (requests handled again meanwhile are newer: they are reached too, and skipped). */
static void answer_waiting_lists(struct ds_agent *a, bool held)
{
    for (struct list_node *i = a->pending.prev, *prev; i != &a->pending; i = prev) {
        prev = i->prev;
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->type == DS_PT_LIST) {
            ds_answer_list(a, p->id, p->kind);
            ds_pending_free(p);
        } else if (held && p->type == DS_PT_HELD) {
            handle_held(a, p);
        }
    }
}

/* The settle window passed: the lists waiting are answered from what there is. */
static void on_window_timer(struct loop_timer *t, void *userdata)
{
    struct downstream *d = userdata;
    (void)t;
    loop_timer_cancel(d->window_timer);
    d->window_timer = NULL;
    if (!ds_settling(d) || d->lists_open)
        return;
    d->lists_open = true;
    log_unsettled(d);
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a))
        answer_waiting_lists(a, false);
}

static void settle_now(struct downstream *d)
{
    if (!ds_settling(d))
        return;
    ds_set_round(d, DS_ROUND_SETTLED);
    loop_timer_cancel(d->settle_timer);
    d->settle_timer = NULL;
    loop_timer_cancel(d->window_timer);
    d->window_timer = NULL;
    if (!d->lists_open)
        log_unsettled(d);
    d->lists_open = true;
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a))
        answer_waiting_lists(a, true);
}

/* The first round is over when every active server has settled (or the connect timeout
 * passed): the waiting lists and held requests are answered. */
static void settle_check(struct downstream *d)
{
    if (d->mode != DOWNSTREAM_AGGREGATE || !ds_settling(d) || ds_shutting(d))
        return;
    for (size_t i = 0; i < d->n_servers; i++)
        if (!ds_server_settled(d->servers[i]))
            return;
    settle_now(d);
}

/* The first round's bound (single mode: the initialize's) passed. */
static void on_settle_timer(struct loop_timer *t, void *userdata)
{
    struct downstream *d = userdata;
    (void)t;
    loop_timer_cancel(d->settle_timer);
    d->settle_timer = NULL;
    if (d->mode == DOWNSTREAM_AGGREGATE)
        settle_now(d);
    else
        ds_single_timeout(d);
}

/* ---- starting the upstreams ------------------------------------------------------------- */

/* Makes the upstreams real, offering what a declared, and connects them all, in parallel
 * (once: from DS_ROUND_NONE). */
static void start_upstreams(struct ds_agent *a)
{
    struct downstream *d = a->d;
    d->lead = a;
    ds_set_round(d, d->mode == DOWNSTREAM_AGGREGATE ? DS_ROUND_FIRST : DS_ROUND_SETTLED);
    for (size_t i = 0; i < d->n_servers;) {
        struct ds_server *s = d->servers[i];
        struct err e = ERR_INIT;
        if (ds_server_make_real(d, s, &e) < 0) {
            log_error(d->log, "server '%s': %s", s->name, err_msg(&e));
            if (d->mode == DOWNSTREAM_AGGREGATE) {
                ds_server_remove(d, s);
                continue;
            }
            i++; /* single mode: the agent's initialize times out, naming the reason */
            continue;
        }
        ds_server_start(s);
        i++;
    }
    if (d->mode == DOWNSTREAM_AGGREGATE && !ds_settling(d))
        return; /* settled already: every server was listed from the cache */
    /* the first round (and single mode's initialize) waits at most the connect timeout; in
     * aggregate mode the first lists wait at most the settle window (settings.settleTimeout,
     * bounded by the connect timeout) */
    if (loop_timer_add(d->loop, d->connect_timeout_ms, on_settle_timer, d, &d->settle_timer) < 0)
        d->settle_timer = NULL; /* no timer: the first list waits for the servers themselves */
    int64_t window = d->settings.settle_timeout_ms;
    if (d->mode == DOWNSTREAM_AGGREGATE && window >= 0 && window < d->connect_timeout_ms &&
        loop_timer_add(d->loop, window, on_window_timer, d, &d->window_timer) < 0)
        d->window_timer = NULL; /* the first lists wait for the first round */
    settle_check(d);
}

/* After an initialize or a modern agent's first request: the first agent's session starts the
 * upstreams, which are offered what it declared. */
static void session_begun(struct ds_agent *a)
{
    if (!ds_started(a->d) && ds_init_seen(a))
        start_upstreams(a);
}

/* ---- an agent's side: its end, its breaking, its drain ----------------------------------- */

/* Whether another agent than a is still there to be read. */
static bool others_open(struct ds_agent *a)
{
    for (struct ds_agent *o = ds_agent_first(a->d); o; o = ds_agent_next(o))
        if (o != a && o->t && o->reading != DS_READING_OFF)
            return true;
    return false;
}

/* Everything in flight for a goes: its requests (calls cancelled, listens ended), its input
 * rounds, the servers' requests waiting for it (refused). */
static void agent_cancel_all(struct ds_agent *a)
{
    ds_bridged_refuse_all(a);
    ds_mrtr_drop(a, NULL, 0, true);
    while (!list_is_empty(&a->pending)) {
        struct ds_pending *p = list_entry(list_first(&a->pending), struct ds_pending, node);
        if (p->type == DS_PT_LISTEN) {
            ds_listen_end(p, false);
            continue;
        }
        if (p->call) {
            struct upstream_call *call = p->call;
            p->call = NULL;
            upstream_call_cancel(call, "the client went away");
        }
        ds_pending_free(p);
    }
}

static void agent_free(struct ds_agent *a);

/* persist: an agent whose wire ended, once the loop is back from its callbacks. The lead agent
 * stays, without a wire: the servers are offered what it declared at every reconnect. */
static void agent_gone(void *userdata)
{
    struct ds_agent *a = userdata;
    struct downstream *d = a->d;
    if (ds_shutting(d))
        return; /* freed with the downstream */
    agent_cancel_all(a);
    if (a == d->lead) {
        agent_transport_free(a->t);
        a->t = NULL;
        return;
    }
    agent_free(a);
}

/* The agent a is over (its side closed or broke): the bridge is over with its last agent
 * (persist: it is forgotten, the bridge goes on). */
static void agent_over(struct ds_agent *a)
{
    struct downstream *d = a->d;
    if (ds_shutting(d)) {
        check_shutdown(d);
    } else if (d->persist) {
        if (a->reading != DS_READING_OFF)
            ds_set_reading(a, DS_READING_OFF);
        loop_defer_queue(d->loop, &a->gone, agent_gone, a);
    } else if (others_open(a)) {
        if (a->reading != DS_READING_OFF)
            ds_set_reading(a, DS_READING_OFF);
    } else {
        downstream_shutdown(d);
    }
}

static void on_agent_eof(void *userdata)
{
    struct ds_agent *a = userdata;
    log_debug(a->d->log, "the client closed its side%s", a->d->persist ? "" : ": shutting down");
    agent_over(a);
}

static void on_agent_error(int error, void *userdata)
{
    struct ds_agent *a = userdata;
    struct downstream *d = a->d;
    agent_transport_free(a->t);
    a->t = NULL;
    if (!d->status && !d->persist) /* persist: one agent's wire is not the bridge's */
        d->status = error;
    if (error == -E2BIG)
        log_error(d->log, "the client sent a message over %u bytes: closing", AGENT_MAX_MESSAGE);
    else if (error != -EPIPE)
        log_error(d->log, "the client connection broke: %s", strerror(-error));
    agent_over(a);
}

/* Everything queued for the agent is written: read it again (never once shutting down, which
 * stops reading for good). */
static void on_agent_drain(void *userdata)
{
    struct ds_agent *a = userdata;
    if (a->reading != DS_READING_THROTTLED || !a->t)
        return;
    ds_set_reading(a, DS_READING_ON);
    log_debug(a->d->log, "the client caught up: reading it again");
}

/* The agent closed its side while its requests were held back (it did not read its answers):
 * it is gone, whatever it still reads; what it wrote last is not read any more. */
static void on_agent_hangup(void *userdata)
{
    struct ds_agent *a = userdata;
    log_info(a->d->log,
             "the client closed its side while not reading its answers (%zu bytes "
             "queued for it): shutting down",
             agent_transport_pending(a->t));
    agent_over(a);
}

static const struct agent_transport_handler agent_handler = {
    .on_message = ds_dispatch_message,
    .on_eof = on_agent_eof,
    .on_error = on_agent_error,
    .on_drain = on_agent_drain,
    .on_hangup = on_agent_hangup,
};

/* ---- shutdown ---------------------------------------------------------------------------- */

static void run_done(void *userdata)
{
    struct ds_done_call *dc = userdata;
    struct downstream *d = dc->d;
    int status = dc->status;
    free(dc);
    if (!d)
        return; /* freed meanwhile */
    d->done_call = NULL;
    d->on_done(status, d->userdata); /* last: the caller may free d here */
}

static void finish(struct downstream *d, int status)
{
    if (d->phase == DS_PHASE_DONE)
        return;
    set_phase(d, DS_PHASE_DONE);
    loop_timer_cancel(d->shutdown_timer);
    d->shutdown_timer = NULL;
    struct ds_done_call *dc = calloc(1, sizeof(*dc));
    if (dc) {
        dc->d = d;
        dc->status = status;
        if (loop_defer(d->loop, run_done, dc) == 0) {
            d->done_call = dc;
            return;
        }
        free(dc);
    }
    d->on_done(status, d->userdata); /* no memory for a deferred call: now */
}

static void on_flushed(int status, void *userdata)
{
    struct ds_agent *a = userdata;
    struct downstream *d = a->d;
    if (status < 0 && !d->status)
        d->status = status;
    if (--d->n_flushing == 0)
        finish(d, d->status);
}

static void check_shutdown(struct downstream *d)
{
    if (d->phase != DS_PHASE_SHUTTING || d->n_servers || d->n_closing)
        return;
    set_phase(d, DS_PHASE_FLUSHING);
    /* the answers still queued for the agents go out first */
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a))
        if (a->t && agent_transport_close_write(a->t, on_flushed, a) == 0)
            d->n_flushing++;
    if (!d->n_flushing)
        finish(d, d->status);
}

static void on_shutdown_timer(struct loop_timer *t, void *userdata)
{
    struct downstream *d = userdata;
    (void)t;
    loop_timer_cancel(d->shutdown_timer);
    d->shutdown_timer = NULL;
    log_warn(d->log, "shutdown took longer than %d s: stopping what is left",
             DOWNSTREAM_SHUTDOWN_MS / 1000);
    while (d->n_closing)
        ds_server_finish(d, d->closing[d->n_closing - 1]); /* killed and reaped */
    while (d->n_servers) {
        struct ds_server *s = d->servers[--d->n_servers];
        ds_server_finish(d, s);
    }
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a)) {
        /* what it takes now; the rest goes */
        int r = a->t ? agent_transport_close_write(a->t, NULL, NULL) : 0;
        (void)r;
    }
    d->n_flushing = 0;
    finish(d, d->status);
}

/* What waits for the catalogue or the upstream's handshake is answered now, newest first. */
static void answer_waiting(struct ds_agent *a)
{
    struct list_node *i, *tmp;
    list_for_each_safe (i, tmp, &a->pending) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->type == DS_PT_LIST) {
            ds_answer_list(a, p->id, p->kind);
            ds_pending_free(p);
        } else if (p->type == DS_PT_LISTEN) {
            ds_listen_end(p, true); /* its closing result */
        } else if (p->type != DS_PT_CALL) {
            ds_reply_error(a, p->id, JRPC_CONNECTION_CLOSED, "mcp-bridge is shutting down");
            ds_pending_free(p);
        }
    }
}

void downstream_shutdown(struct downstream *d)
{
    if (!d || ds_shutting(d))
        return;
    set_phase(d, DS_PHASE_SHUTTING);
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a))
        if (a->reading != DS_READING_OFF)
            ds_set_reading(a, DS_READING_OFF);
    loop_timer_cancel(d->settle_timer);
    d->settle_timer = NULL;
    loop_timer_cancel(d->window_timer);
    d->window_timer = NULL;
    if (loop_timer_add(d->loop, DOWNSTREAM_SHUTDOWN_MS, on_shutdown_timer, d, &d->shutdown_timer) <
        0)
        d->shutdown_timer = NULL;

    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a))
        answer_waiting(a);
    ds_bridged_drop(d, NULL, 0, NULL);
    /* calls in flight fail with -ESHUTDOWN and are answered from their callbacks */
    ds_cache_save_now(d); /* what the servers listed last */
    while (d->n_servers)
        ds_server_remove(d, d->servers[d->n_servers - 1]);
    rebuild_all(d); /* no route may point at a server that is gone */
    check_shutdown(d);
}

/* ---- what the parts report ------------------------------------------------------------- */

/* A server's notification for a modern agent: list changes and resource updates only on the
 * listens that ask for them, logs only for the requests that asked for them; what 2026-07-28
 * removed (notifications/elicitation/complete) is dropped. */
static void tell_modern(struct ds_agent *a, struct ds_server *s, struct json_object *msg)
{
    const char *method = json_get_string(msg, "method");
    if (!method)
        return;
    if (strcmp(method, "notifications/message") == 0)
        ds_modern_log(a, s, msg);
    else if (strcmp(method, "notifications/resources/updated") == 0)
        ds_listen_resource_updated(a, msg);
    else if (strstr(method, "/list_changed"))
        ds_listen_list_changed(a, method); /* single mode: the server's own */
    else if (strcmp(method, "notifications/elicitation/complete") != 0)
        ds_send_json(a, msg);
}

/* A server's notification goes to the agent of the call it came with (a log message of that
 * call: upstream_related_call), else to every agent. */
static void pass_to_agent(struct ds_server *s, struct json_object *msg)
{
    struct ds_agent *only = NULL;
    const char *method = json_get_string(msg, "method");
    if (method && strcmp(method, "notifications/message") == 0)
        only = ds_agent_of_call(s->d, upstream_related_call(s->u, msg));
    for (struct ds_agent *a = ds_agent_first(s->d); a; a = ds_agent_next(a)) {
        if ((only && a != only) || !ds_initialized(a))
            continue;
        if (a->modern)
            tell_modern(a, s, msg);
        else
            ds_send_json(a, msg);
    }
}

static void pending_freed(struct ds_pending *p)
{
    if (p->type == DS_PT_CALL && p->s)
        ds_server_used(p->s); /* the idle clock starts when the last answer went */
    ds_mrtr_pending_free(p);
    ds_listen_free(p->a, p->listen);
}

/* What the servers will be offered is known before the first agent is answered: their lists
 * come from the cache kept for that offer (nothing once the upstreams have started). */
static void offered(struct ds_agent *a)
{
    ds_servers_offered(a->d, a->client_caps, a->protocol_version);
}

static const struct ds_hooks HOOKS = {
    .pending_freed = pending_freed,
    .offered = offered,
    .session_begun = session_begun,
    .settle_check = settle_check,
    .check_shutdown = check_shutdown,
    .announce = announce,
    .drop_bridged = ds_bridged_drop,
    .server_request = ds_bridged_request,
    .server_cancelled = ds_bridged_cancelled,
    .server_notification = pass_to_agent,
    .single_ready = ds_single_ready,
    .single_fail = ds_single_fail,
};

/* ---- construction, reload ---------------------------------------------------------------- */

/* An entry not started: said in the log (reason alone, or after "server 'NAME': " with
 * prefix), and kept with its reason for the proxy's status. -ENOMEM only. */
static int ds_skip(struct downstream *d, const char *name, const char *reason, bool prefix)
{
    if (prefix)
        log_warn(d->log, "server '%s': %s", name, reason);
    else
        log_warn(d->log, "%s", reason);
    size_t n = strlen(name), k = strlen(reason);
    char *rec = malloc(n + k + 2);
    if (!rec)
        return -ENOMEM;
    memcpy(rec, name, n + 1);
    memcpy(rec + n + 1, reason, k + 1);
    return strv_push_take(&d->skipped, rec);
}

static int servers_from_config(struct downstream *d, const struct mcp_config *config, struct err *e)
{
    d->loading = config;
    size_t n = mcp_config_count(config);
    d->servers = calloc(n ? n : 1, sizeof(*d->servers));
    if (!d->servers)
        return err_set(e, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const struct mcp_server *entry = mcp_config_at(config, i);
        if (entry->error) {
            if (ds_skip(d, entry->name, entry->error, false) < 0)
                return err_set(e, -ENOMEM, "out of memory");
            continue;
        }
        struct ds_server *s;
        struct err e2 = ERR_INIT;
        int r = ds_server_new(d, entry, &s, &e2);
        if (r == -ENOMEM)
            return err_set(e, r, "out of memory");
        if (r < 0) {
            if (ds_skip(d, entry->name, err_msg(&e2), true) < 0)
                return err_set(e, -ENOMEM, "out of memory");
            continue;
        }
        d->servers[d->n_servers++] = s;
    }
    return 0;
}

static int single_from_config(struct downstream *d, const struct mcp_config *config,
                              const char *name, struct err *e)
{
    d->loading = config;
    const struct mcp_server *entry = name ? mcp_config_find(config, name) : NULL;
    if (!entry && !name && mcp_config_count(config) == 1)
        entry = mcp_config_at(config, 0);
    if (!entry)
        return err_set(e, -ENOENT, "no server '%s' in the configuration: see 'mcp-bridge list'",
                       name ? name : "");
    if (entry->error)
        return err_set(e, -EINVAL, "%s", entry->error);
    if (entry->disabled)
        return err_set(e, -EPERM,
                       "server '%s' is disabled (\"disabled\": true in its entry): remove that "
                       "to connect it",
                       entry->name);
    d->servers = calloc(1, sizeof(*d->servers));
    if (!d->servers)
        return err_set(e, -ENOMEM, "out of memory");
    int r = ds_server_new(d, entry, &d->servers[0], e);
    if (r < 0)
        return r;
    d->n_servers = 1;
    return 0;
}

static void agent_free(struct ds_agent *a)
{
    if (!a)
        return;
    loop_defer_cancel(&a->gone);
    list_remove(&a->node);
    ds_mrtr_release_all(a);
    ds_pending_release_all(a);
    hashmap_free(a->ids);
    ds_subs_release(a);
    ds_bridged_release_all(a);
    agent_transport_free(a->t);
    json_object_put(a->agent_caps);
    json_object_put(a->client_caps);
    free(a->protocol_version);
    free(a->log_level);
    free(a);
}

/* A new agent on t (taken, also on failure). -ENOMEM. */
static int agent_new(struct downstream *d, struct agent_transport *t)
{
    struct ds_agent *a = calloc(1, sizeof(*a));
    if (!a) {
        agent_transport_free(t);
        return -ENOMEM;
    }
    a->d = d;
    list_init(&a->pending);
    list_init(&a->pool);
    list_init(&a->bridged);
    list_add_tail(&d->agents, &a->node);
    a->t = t;
    a->ids = hashmap_new();
    if (!a->ids || ds_subs_init(a) < 0) {
        agent_free(a);
        return -ENOMEM;
    }
    agent_transport_bind(t, &agent_handler, a);
    return 0;
}

int downstream_add_agent(struct downstream *d, struct agent_transport *t, struct err *e)
{
    if (!d || !t) {
        agent_transport_free(t);
        return err_set(e, -EINVAL, "downstream: no agent");
    }
    if (d->mode == DOWNSTREAM_SINGLE && !d->persist && !list_is_empty(&d->agents)) {
        agent_transport_free(t);
        return err_set(e, -EOPNOTSUPP, "a single-server bridge serves one client");
    }
    if (ds_shutting(d)) {
        agent_transport_free(t);
        return err_set(e, -ESHUTDOWN, "the bridge is shutting down");
    }
    int r = agent_new(d, t);
    return r < 0 ? err_set(e, r, "out of memory") : 0;
}

/* The session's trace, set up from settings.trace (no file before a traced server's first
 * message). */
static int session_trace(struct downstream *d, const struct mcp_config *config, struct err *e)
{
    struct server_trace_settings ts;
    server_config_trace_settings(config, &ts);
    struct trace_opts to = {
        .loop = d->loop,
        .log = d->log,
        .file = ts.file,
        .max_bytes = ts.max_bytes,
        .max_events = ts.max_events,
    };
    return trace_new(&to, &d->trace, e);
}

int downstream_new(const struct downstream_opts *opts, struct downstream **ret, struct err *e)
{
    if (!opts || !opts->loop || !opts->log || !opts->on_done || !opts->config || !ret ||
        (opts->in_fd < 0) != (opts->out_fd < 0) ||
        (opts->in_fd < 0 && opts->mode == DOWNSTREAM_SINGLE && !opts->persist))
        return err_set(e, -EINVAL, "downstream: missing options");
    struct downstream *d = calloc(1, sizeof(*d));
    int r;
    if (!d)
        return err_set(e, -ENOMEM, "out of memory");
    d->hooks = &HOOKS;
    d->loop = opts->loop;
    d->log = opts->log;
    d->mode = opts->mode;
    d->lookup = opts->lookup;
    d->lookup_userdata = opts->lookup_userdata;
    d->cred_new = opts->cred_new;
    d->cred_userdata = opts->cred_userdata;
    d->connect_timeout_ms = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms
                                                         : UPSTREAM_CONNECT_TIMEOUT_DEFAULT_MS;
    d->bridge_eras = opts->bridge_eras;
    d->persist = opts->persist;
    d->on_done = opts->on_done;
    d->userdata = opts->userdata;
    list_init(&d->agents);
    if (catalog_new(d->log, &d->cat) < 0) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    catalog_set_audience(d->cat, opts->audience);
    catalog_configure(d->cat, opts->config);
    server_settings_get(opts->config, &d->settings);
    d->settings.auth_required_message = NULL; /* borrowed from the configuration */
    r = session_trace(d, opts->config, e);
    if (r < 0)
        goto fail;
    if (d->mode == DOWNSTREAM_AGGREGATE) {
        struct err e2 = ERR_INIT;
        r = meta_cache_open(NULL, &d->cache, &e2);
        if (r == -ENOMEM) {
            err_set(e, r, "out of memory");
            goto fail;
        }
        if (r < 0)
            log_info(d->log, "no metadata cache: %s", err_msg(&e2));
        else if (meta_cache_load_error(d->cache))
            log_warn(d->log,
                     "the metadata cache '%s' is not used (it is replaced at the next "
                     "save): %s",
                     meta_cache_path(d->cache), meta_cache_load_error(d->cache));
    }

    if (d->mode == DOWNSTREAM_SINGLE)
        r = single_from_config(d, opts->config, opts->single_name, e);
    else
        r = servers_from_config(d, opts->config, e);
    if (r < 0)
        goto fail;

    if (d->mode == DOWNSTREAM_AGGREGATE)
        rebuild_all(d); /* the lists of servers listed from the cache, before anything connects */

    if (opts->in_fd >= 0) {
        struct agent_transport *t;
        r = agent_stdio_open(d->loop, opts->in_fd, opts->out_fd, &t);
        if (r >= 0)
            r = agent_new(d, t);
        if (r < 0) {
            err_set(e, r, "cannot watch the client's stdin and stdout: %s", strerror(-r));
            goto fail;
        }
    }
    *ret = d;
    return 0;
fail:
    downstream_free(d);
    return r;
}

/* The servers of a new configuration, in its order: kept ones (the entry as written is
 * unchanged) and new ones (fresh[i] set). -ENOMEM (nothing changed), with e set. */
static int reload_next(struct downstream *d, const struct mcp_config *config,
                       struct ds_server **next, bool *fresh, size_t *ret_n, struct err *e)
{
    size_t n = mcp_config_count(config), nn = 0;
    strv_release(&d->skipped); /* said again for the new configuration */
    for (size_t i = 0; i < n; i++) {
        const struct mcp_server *entry = mcp_config_at(config, i);
        if (entry->error) {
            (void)ds_skip(d, entry->name, entry->error, false); /* only the status lacks it */
            continue;
        }
        struct ds_server *old = ds_server_find(d, entry->name);
        if (old && json_object_equal(old->raw, entry->raw)) {
            next[nn++] = old;
            continue;
        }
        struct ds_server *s;
        struct err e2 = ERR_INIT;
        int r = ds_server_new(d, entry, &s, &e2);
        if (r == -ENOMEM) {
            for (size_t j = 0; j < nn; j++)
                if (fresh[j])
                    ds_server_free(next[j]);
            return err_set(e, r, "out of memory");
        }
        if (r < 0) {
            (void)ds_skip(d, entry->name, err_msg(&e2), true);
            continue;
        }
        fresh[nn] = true;
        next[nn++] = s;
    }
    *ret_n = nn;
    return 0;
}

/* Closes every active server not in next (changed ones too: a new one replaces it). */
static size_t reload_close_removed(struct downstream *d, struct ds_server *const *next, size_t nn)
{
    size_t removed = 0;
    for (size_t i = d->n_servers; i-- > 0;) {
        struct ds_server *s = d->servers[i];
        bool kept = false;
        for (size_t j = 0; j < nn && !kept; j++)
            kept = next[j] == s;
        if (!kept) {
            log_info(d->log, "server '%s': removed from the configuration", s->name);
            ds_server_remove(d, s);
            removed++;
        }
    }
    return removed;
}

int downstream_reload(struct downstream *d, const struct mcp_config *config, struct err *e)
{
    if (d->mode != DOWNSTREAM_AGGREGATE)
        return err_set(e, -EOPNOTSUPP, "a single-server bridge does not reload its configuration");
    if (ds_shutting(d))
        return 0;

    size_t n = mcp_config_count(config), nn = 0;
    struct ds_server **next = calloc(n ? n : 1, sizeof(*next));
    bool *fresh = calloc(n ? n : 1, sizeof(*fresh));
    if (!next || !fresh) {
        free(next);
        free(fresh);
        return err_set(e, -ENOMEM, "out of memory");
    }
    d->loading = config;
    server_settings_get(config, &d->settings);
    d->settings.auth_required_message = NULL;
    int r = reload_next(d, config, next, fresh, &nn, e);
    d->loading = NULL;
    if (r < 0) {
        free(next);
        free(fresh);
        return r;
    }

    size_t removed = reload_close_removed(d, next, nn), added = 0;
    free(d->servers);
    d->servers = next;
    d->n_servers = nn;
    catalog_configure(d->cat, config);
    for (size_t j = 0; j < nn; j++) {
        if (!fresh[j])
            continue;
        added++;
        if (ds_started(d))
            ds_server_start(next[j]);
    }
    free(fresh);
    ds_subs_drop_removed(d);
    log_info(d->log,
             "configuration reloaded: %zu servers, %zu added or changed, %zu removed or "
             "changed",
             nn, added, removed);
    rebuild_all(d);
    /* the first lists may have been waiting only for a server that is gone now */
    settle_check(d);
    return 0;
}

void downstream_free(struct downstream *d)
{
    if (!d)
        return;
    if (d->done_call)
        d->done_call->d = NULL;
    loop_timer_cancel(d->settle_timer);
    loop_timer_cancel(d->window_timer);
    loop_timer_cancel(d->announce_timer);
    loop_timer_cancel(d->shutdown_timer);
    if (d->cache_timer)
        ds_cache_save_now(d);
    meta_cache_free(d->cache);
    for (size_t i = 0; i < d->n_servers; i++)
        ds_server_free(d->servers[i]); /* calls in flight go with their upstream */
    for (size_t i = 0; i < d->n_closing; i++)
        ds_server_free(d->closing[i]);
    free(d->servers);
    free(d->closing);
    trace_free(d->trace); /* after the upstreams, which record in it */
    strv_release(&d->skipped);
    buf_release(&d->pass);
    while (!list_is_empty(&d->agents))
        agent_free(ds_agent_first(d));
    catalog_free(d->cat);
    ds_mrtr_key_free(d);
    free(d);
}
