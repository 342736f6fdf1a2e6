/* downstream_pending.c - the records of the agent's requests the bridge has not answered.
 *
 * A request that goes upstream (or waits for the catalogue, or single mode's initialize) gets
 * a record, reused from a small pool (no malloc per call: the map borrows the key the record
 * holds), the userdata of its upstream_call, so its answer needs no lookup. The records are also in a
 * map keyed by the canonical text of the agent's id (jrpc_id_key: 1 and "1" differ), for
 * duplicate ids and cancellation, and on a list, newest first, for the walks that answer
 * several at once (shutdown, a server that goes away, settling). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_pending_int.h"

struct ds_pending *ds_pending_find(struct ds_agent *a, struct json_object *id)
{
    char key[JRPC_ID_KEY_MAX + 2];
    if (!jrpc_id_key(id, key, sizeof(key)))
        return NULL; /* not an id: no request of the agent has it */
    return hashmap_get(a->ids, key);
}

struct ds_pending *ds_pending_new(struct ds_agent *a, enum ds_pending_type type,
                                  struct json_object *id, const char *method)
{
    struct downstream *d = a->d;
    if (a->n_pending >= DS_MAX_PENDING)
        return NULL;
    struct ds_pending *p;
    struct list_node *n = list_first(&a->pool);
    if (n) {
        list_remove(n);
        a->n_pool--;
        p = list_entry(n, struct ds_pending, node);
        memset(p, 0, sizeof(*p));
    } else {
        p = calloc(1, sizeof(*p));
        if (!p)
            return NULL;
    }
    list_init(&p->node);
    /* the key lives in the record: the map takes no copy of it */
    if (!jrpc_id_key(id, p->key, sizeof(p->key)) || hashmap_put_borrowed(a->ids, p->key, p) < 0) {
        free(p); /* -ENOMEM; -EEXIST cannot be: the caller looked the id up */
        return NULL;
    }
    p->a = a;
    p->type = type;
    p->id = json_object_get(id);
    p->start = loop_now(d->loop);
    if (ds_log_debugging(d)) /* the method is only ever logged */
        snprintf(p->method, sizeof(p->method), "%s", method ? method : "?");
    list_add_head(&a->pending, &p->node);
    a->n_pending++;
    return p;
}

void ds_pending_free(struct ds_pending *p)
{
    if (!p)
        return;
    struct ds_agent *a = p->a;
    list_remove(&p->node);
    a->n_pending--;
    /* a key is set while the record is in the map (one whose id was given up is not:
     * downstream_mrtr.c) */
    if (p->key[0])
        (void)hashmap_remove(a->ids, p->key);
    p->key[0] = '\0';
    a->d->hooks->pending_freed(p);
    loop_timer_cancel(p->wake_timer);
    p->wake_timer = NULL;
    p->mrtr = NULL;
    p->listen = NULL;
    json_object_put(p->id);
    json_object_put(p->msg);
    free(p->sub_uri);
    if (a->n_pool < DS_POOL_MAX) {
        list_add_head(&a->pool, &p->node);
        a->n_pool++;
    } else {
        free(p);
    }
}

void ds_pending_take_request(struct ds_pending *p, struct jrpc_msg *m)
{
    struct json_object *root = p->msg;
    p->msg = NULL;
    *m = (struct jrpc_msg){
        .root = root,
        .kind = JRPC_REQUEST,
        .method = json_get_string(root, "method"),
        .id = json_object_object_get(root, "id"),
        .params = json_object_object_get(root, "params"),
    };
    ds_pending_free(p);
}

struct ds_pending *ds_pending_find_type(struct ds_agent *a, enum ds_pending_type t)
{
    struct list_node *i;
    list_for_each (i, &a->pending) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->type == t)
            return p;
    }
    return NULL;
}

void ds_pending_release_all(struct ds_agent *a)
{
    struct list_node *i, *tmp;
    list_for_each_safe (i, tmp, &a->pending) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        p->call = NULL;
        p->s = NULL; /* the servers are freed already */
        ds_pending_free(p);
    }
    list_for_each_safe (i, tmp, &a->pool) {
        list_remove(i);
        free(list_entry(i, struct ds_pending, node));
    }
    a->n_pool = 0;
}

void ds_reply_too_many(struct ds_agent *a, struct json_object *id)
{
    ds_reply_errorf(a, id, JRPC_INTERNAL_ERROR,
                    "too many requests in flight (at most %d): wait for some to finish",
                    DS_MAX_PENDING);
}

/* ---- held requests, a server gone -------------------------------------------------------- */

/* Keeps a request that names something not (yet) in the catalogue until the first round is
 * over. true when held (or answered: no room). */
bool ds_hold(struct ds_agent *a, struct jrpc_msg *m)
{
    if (!ds_settling(a->d))
        return false;
    struct ds_pending *p = ds_pending_new(a, DS_PT_HELD, m->id, m->method);
    if (!p) {
        ds_reply_too_many(a, m->id);
        return true;
    }
    p->msg = jrpc_msg_ref(m);
    if (!p->msg) {
        ds_pending_free(p);
        ds_reply_error(a, m->id, JRPC_INTERNAL_ERROR, "out of memory");
    }
    return true;
}

static void fail_pending_of(struct ds_agent *a, struct ds_server *s)
{
    struct list_node *i, *tmp;
    list_for_each_safe (i, tmp, &a->pending) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->type != DS_PT_CALL || p->s != s)
            continue;
        struct upstream_call *call = p->call;
        p->call = NULL;
        upstream_call_cancel(call, NULL);
        if (p->tool_call) {
            char text[DS_TEXT_MAX];
            snprintf(text, sizeof(text), "server '%s' was closed before it answered", s->name);
            ds_reply_result(a, p->id, jrpc_new_tool_error(text));
        } else {
            ds_reply_errorf(a, p->id, JRPC_CONNECTION_CLOSED,
                            "server '%s' was closed before it answered", s->name);
        }
        ds_pending_free(p);
    }
}

void ds_fail_pending_of(struct downstream *d, struct ds_server *s)
{
    for (struct ds_agent *a = ds_agent_first(d); a; a = ds_agent_next(a))
        fail_pending_of(a, s);
}
