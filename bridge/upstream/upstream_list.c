/* upstream_list.c - upstream_list(): a whole list fetched through every page, on top of
 * upstream_call(); the upstream keeps the open listings only to free them with itself. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "upstream/upstream_int.h"

struct upstream_list {
    struct upstream *u;
    char *method, *key;
    upstream_list_fn fn;
    void *userdata;
    struct json_object *items;
    char *cursor;
    unsigned pages;
    int64_t ttl_ms; /* the shortest "ttlMs" of its pages; -1: none gave one */
    struct upstream_call *call;
    bool in_callback;      /* fn is running: freed when it returns */
    struct list_node node; /* on u->lists */
};

static void list_free(struct upstream_list *l)
{
    if (!l)
        return;
    upstream_call_cancel(l->call, NULL);
    json_object_put(l->items);
    free(l->cursor);
    free(l->method);
    free(l->key);
    free(l);
}

void up_lists_free(struct upstream *u)
{
    struct list_node *n;
    while ((n = list_first(&u->lists))) {
        struct upstream_list *l = list_entry(n, struct upstream_list, node);
        list_remove(n);
        l->call = NULL; /* freed with the upstream's calls */
        list_free(l);
    }
}

/* Reports and frees the listing. From the loop. */
static void list_finish(struct upstream_list *l, int error, const char *message)
{
    struct upstream *u = l->u;
    struct json_object *items = error < 0 ? NULL : l->items;
    if (error >= 0)
        l->items = NULL;
    list_remove(&l->node);
    l->call = NULL;
    l->in_callback = true;
    l->fn(u, items, error, message, l->userdata);
    list_free(l);
}

static void list_page_answered(struct upstream_call *c, struct json_object *resp, int error,
                               const char *message, void *userdata);

static int list_request(struct upstream_list *l)
{
    struct json_object *p = NULL;
    if (l->cursor) {
        p = json_object_new_object();
        if (!p || json_object_object_add(p, "cursor", json_object_new_string(l->cursor)) < 0) {
            json_object_put(p);
            return -ENOMEM;
        }
    }
    int r = upstream_call(l->u, l->method, p, 0, list_page_answered, NULL, l, &l->call);
    json_object_put(p);
    return r;
}

/* A JSON-RPC error answer: the listing fails with the server's message. */
static void list_error_answer(struct upstream_list *l, struct json_object *err)
{
    int64_t code = 0;
    struct json_object *cv = NULL, *mv = NULL;
    if (json_object_object_get_ex(err, "code", &cv))
        code = json_object_get_int64(cv);
    (void)json_object_object_get_ex(err, "message", &mv);
    const char *em = mv ? json_object_get_string(mv) : NULL;
    char *m = up_asprintf("server '%s': %s failed: %.200s", up_name(l->u), l->method,
                          em && *em ? em : "(no message)");
    list_finish(l, code == JRPC_METHOD_NOT_FOUND ? -ENOSYS : -EPROTO, m);
    free(m);
}

/* The next page's cursor, or NULL when the list is complete (or must end here). */
static const char *next_cursor(struct upstream_list *l, struct json_object *res)
{
    struct json_object *nc = NULL;
    const char *cursor = NULL;
    if (json_object_object_get_ex(res, "nextCursor", &nc) &&
        json_object_is_type(nc, json_type_string) && json_object_get_string_len(nc) > 0)
        cursor = json_object_get_string(nc);
    if (!cursor)
        return NULL;
    if (l->cursor && strcmp(cursor, l->cursor) == 0) {
        /* the page it was asked for, again: it would go on to the page bound */
        up_warn_once(l->u, "server '%s': %s gave the same cursor again: the list ends here",
                     up_name(l->u), l->method);
        return NULL;
    }
    if (l->pages >= UPSTREAM_LIST_MAX_PAGES) {
        up_warn_once(l->u, "server '%s': %s still had more after %d pages: the rest is left out",
                     up_name(l->u), l->method, UPSTREAM_LIST_MAX_PAGES);
        return NULL;
    }
    return cursor;
}

static void list_page_answered(struct upstream_call *c, struct json_object *resp, int error,
                               const char *message, void *userdata)
{
    struct upstream_list *l = userdata;
    struct json_object *v = NULL;
    (void)c;

    l->call = NULL;
    if (error < 0) {
        list_finish(l, error, message);
        return;
    }
    if (json_object_object_get_ex(resp, "error", &v)) {
        list_error_answer(l, v);
        return;
    }
    struct json_object *res = NULL, *arr = NULL;
    if (!json_object_object_get_ex(resp, "result", &res) ||
        !json_object_object_get_ex(res, l->key, &arr) ||
        !json_object_is_type(arr, json_type_array)) {
        char *m = up_asprintf("server '%s': the answer to %s has no '%s' list", up_name(l->u),
                              l->method, l->key);
        list_finish(l, -EPROTO, m);
        free(m);
        return;
    }
    size_t n = json_object_array_length(arr);
    for (size_t i = 0; i < n; i++) {
        if (json_object_array_add(l->items, json_object_get(json_object_array_get_idx(arr, i))) <
            0) {
            list_finish(l, -ENOMEM, "out of memory");
            return;
        }
    }
    l->pages++;
    /* "ttlMs": how long the list may be kept (the 2026-07-28 revision; older servers may send
     * it too): the shortest of the pages counts */
    struct json_object *ttl = NULL;
    if (json_object_object_get_ex(res, "ttlMs", &ttl) && json_object_is_type(ttl, json_type_int)) {
        int64_t t = json_object_get_int64(ttl);
        if (t >= 0 && (l->ttl_ms < 0 || t < l->ttl_ms))
            l->ttl_ms = t;
    }
    const char *cursor = next_cursor(l, res);
    if (!cursor) {
        list_finish(l, 0, NULL);
        return;
    }
    char *cur = strdup(cursor);
    if (!cur) {
        list_finish(l, -ENOMEM, "out of memory");
        return;
    }
    free(l->cursor);
    l->cursor = cur;
    if (list_request(l) < 0)
        list_finish(l, -ENOMEM, "out of memory");
}

int upstream_list(struct upstream *u, const char *method, const char *key, upstream_list_fn fn,
                  void *userdata, struct upstream_list **ret)
{
    if (!u || up_freed(u) || !method || !key || !fn || !ret)
        return -EINVAL;
    struct upstream_list *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->u = u;
    l->fn = fn;
    l->userdata = userdata;
    list_init(&l->node);
    l->method = strdup(method);
    l->key = strdup(key);
    l->ttl_ms = -1;
    l->items = json_object_new_array();
    if (!l->method || !l->key || !l->items || list_request(l) < 0) {
        list_free(l);
        return -ENOMEM;
    }
    list_add_head(&u->lists, &l->node);
    *ret = l;
    return 0;
}

void upstream_list_cancel(struct upstream_list *l)
{
    if (!l || l->in_callback)
        return;
    list_remove(&l->node);
    list_free(l);
}

int64_t upstream_list_ttl_ms(const struct upstream_list *l)
{
    return l ? l->ttl_ms : -1;
}
