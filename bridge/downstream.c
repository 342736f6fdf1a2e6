/* downstream.c - the MCP server the agent talks to: aggregate and single mode (downstream.h).
 *
 * Every agent message is parsed once, its id swapped in place where it goes upstream, and
 * serialised once. A request that goes upstream gets a pending record (reused from a small
 * pool: no malloc per call), the userdata of its upstream_call, so its answer needs no lookup;
 * the records are also hashed by the agent's id, for duplicate ids and cancellation. The
 * catalogue (aggregate mode) holds, per kind, the exposed array the agent gets and a hash from
 * exposed name (or URI) to the upstream and the name it knows; it is rebuilt whenever a list of
 * an upstream changes, never per call.
 *
 * Upstreams are created in downstream_new() (the configuration is borrowed only there), as
 * templates that never connect: the client capabilities and protocol version they must offer
 * come with the agent's initialize. Then each is created again from the template's own copy
 * of its entry, with those, and connected. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/linkhash.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/version.h"

#include "downstream.h"
#include "framing.h"
#include "jsonrpc.h"
#include "naming.h"
#include "server_config.h"
#include "upstream.h"

#define DS_MAX_PENDING 4096 /* agent requests in flight (or waiting for the catalogue) */
#define DS_MAX_BRIDGED 256  /* server requests waiting for the agent's answer */
#define DS_MAX_SUBS    4096 /* resource subscriptions remembered for reconnects */
#define DS_ID_BUCKETS  512  /* of the map from the agent's ids to its requests in flight */
#define DS_POOL_MAX    64   /* pending records kept for reuse: no malloc per call */
#define DS_TEXT_MAX    1024 /* error texts for the agent */
#define DS_METHOD_MAX  48   /* of a method name kept for the log */

/* The bridge's doubly linked lists (pending, bridged, resubs): head is the list's first. */
#define DLIST_PUSH(head, x)                                                                        \
    do {                                                                                           \
        (x)->prev = NULL;                                                                          \
        (x)->next = (head);                                                                        \
        if (head)                                                                                  \
            (head)->prev = (x);                                                                    \
        (head) = (x);                                                                              \
    } while (0)
#define DLIST_REMOVE(head, x)                                                                      \
    do {                                                                                           \
        if ((x)->prev)                                                                             \
            (x)->prev->next = (x)->next;                                                           \
        else                                                                                       \
            (head) = (x)->next;                                                                    \
        if ((x)->next)                                                                             \
            (x)->next->prev = (x)->prev;                                                           \
    } while (0)

enum kind {
    K_TOOLS,
    K_PROMPTS,
    K_RESOURCES,
    K_TEMPLATES,
    K_N,
};

static const struct kind_info {
    const char *method;  /* the list request */
    const char *key;     /* the array in its result */
    const char *cap;     /* the server capability that offers it */
    const char *changed; /* the notification telling the agent */
    const char *noun;    /* for messages */
} KINDS[K_N] = {
    [K_TOOLS] = {"tools/list", "tools", "tools", "notifications/tools/list_changed", "tool"},
    [K_PROMPTS] = {"prompts/list", "prompts", "prompts", "notifications/prompts/list_changed",
                   "prompt"},
    [K_RESOURCES] = {"resources/list", "resources", "resources",
                     "notifications/resources/list_changed", "resource"},
    [K_TEMPLATES] = {"resources/templates/list", "resourceTemplates", "resources",
                     "notifications/resources/list_changed", "resource template"},
};

struct server;

/* The userdata of one listing: which server, which kind. */
struct lister {
    struct server *s;
    enum kind k;
};

/* A resources/subscribe the bridge sends again after a reconnect (its answer is only logged). */
struct resub {
    struct resub *prev, *next;
    struct server *s;
    char uri[]; /* for the log */
};

struct server {
    struct downstream *d;
    char *name;
    struct json_object *raw; /* the entry as written, for reload */
    char **exclude;          /* excludeTools, NULL-terminated */
    struct upstream *u;
    bool real;    /* u was made with the agent's capabilities (else a template) */
    bool closing; /* removed or shutting down: waiting for CLOSED */
    bool settled; /* the first round is over: listed, failed, or given up on */

    struct json_object *items[K_N];     /* the server's lists, as it gave them; NULL: none */
    struct upstream_list *listing[K_N]; /* in flight */
    bool relist[K_N];                   /* list again when the one in flight is over */
    struct lister listers[K_N];
    struct resub *resubs; /* in flight */
};

/* Where an exposed tool, prompt, resource or template goes. */
struct route {
    struct server *s;
    struct json_object *item; /* the server's own item (reference), which orig points into */
    const char *orig;         /* the name (tools, prompts), uri or uriTemplate it knows */
};

struct catalog {
    struct json_object *items; /* the exposed array (never NULL) */
    struct lh_table *map;      /* exposed name, uri or uriTemplate -> struct route */
    struct route *routes;
    size_t n_routes;
    bool listed; /* the agent has been given this list */
};

enum pending_type {
    PT_CALL, /* forwarded upstream; call is the upstream_call */
    PT_LIST, /* a list request waiting for the first round of the catalogue */
    PT_HELD, /* a request naming something the catalogue does not know yet */
    PT_INIT, /* single mode: the agent's initialize waiting for READY */
};

/* What a forwarded request does to the subscriptions the bridge remembers. */
enum sub_op {
    SUB_NONE,
    SUB_ADD, /* resources/subscribe: remembered when the server accepts it */
};

struct pending {
    struct downstream *d;
    struct pending *prev, *next;
    struct pending *hnext; /* in d->ids[] */
    enum pending_type type;
    struct json_object *id; /* the agent's (reference) */
    struct server *s;       /* PT_CALL */
    struct upstream_call *call;
    struct json_object *msg; /* PT_HELD: the whole request (reference) */
    enum kind kind;          /* PT_LIST */
    bool tool_call;
    enum sub_op sub;
    char *sub_uri; /* SUB_ADD */
    int64_t start;
    char method[DS_METHOD_MAX];
};

/* A request of a server forwarded to the agent. */
struct bridged {
    struct bridged *prev, *next;
    struct server *s;
    uint64_t gen;
    struct json_object *up_id; /* the server's id (reference) */
    struct json_object *token; /* its progress token (reference), NULL when none; the agent
                                  sees "b<n>" as the token too */
    uint64_t n;                /* the agent sees "b<n>" */
};

/* on_done goes through a deferred call, so that the caller may free the downstream in it;
 * downstream_free() detaches a call still queued. */
struct done_call {
    struct downstream *d;
    int status;
};

struct downstream {
    struct loop *loop;
    struct log *log;
    enum downstream_mode mode;
    struct framing *fr; /* the agent's side; NULL once broken */
    bool throttled;     /* reading the agent stopped: its output is over the high-water mark */
    mcp_lookup_fn lookup;
    void *lookup_userdata;
    int64_t connect_timeout_ms;
    downstream_done_fn on_done;
    void *userdata;
    enum mcp_tool_prefix prefix;

    struct server **servers; /* active, sorted by name */
    size_t n_servers;
    struct server **closing; /* removed, waiting for CLOSED */
    size_t n_closing;

    struct catalog cat[K_N];
    bool due[K_N]; /* the agent is to be told that this list changed (announce()) */

    bool init_seen;                  /* the agent's initialize was accepted */
    bool initialized;                /* ... and answered: notifications may go to the agent */
    bool started;                    /* the upstreams were made real and connected */
    bool settled;                    /* the first round of the catalogue is over */
    struct loop_timer *settle_timer; /* also single mode's initialize timeout */
    struct json_object *agent_caps;  /* the agent's capabilities as it declared them */
    struct json_object *client_caps; /* what upstreams are offered: roots, sampling,
                                         elicitation when the agent declared them */
    char *protocol_version;          /* the agent's, when the bridge knows it */

    struct pending *pending;
    size_t n_pending;
    struct pending *ids[DS_ID_BUCKETS]; /* the agent's id -> its request, chained */
    struct pending *pool;               /* freed records, for reuse */
    size_t n_pool;
    /* resources the agent subscribed to: {uri: server name}, sent again after each READY of
     * that server (by name, so that a server re-created by a reload gets them too) */
    struct json_object *subs;
    struct bridged *bridged;
    size_t n_bridged;
    uint64_t bridge_counter;
    char *log_level; /* logging/setLevel, re-applied after reconnects */

    bool shutting;
    bool finishing; /* flushing the agent's side */
    bool done;
    int status; /* for on_done: -errno when the agent's side broke */
    struct loop_timer *shutdown_timer;
    struct done_call *done_call;
};

static const char *const PREFIX_DESC[] = {
    [MCP_TOOL_PREFIX_SERVER] = "mcp_<server>_<name>",
    [MCP_TOOL_PREFIX_SHORT] = "<server>_<name>",
    [MCP_TOOL_PREFIX_NONE] = "<name>",
};

static void rebuild(struct downstream *d, enum kind k);
static void announce(struct downstream *d);
static void check_shutdown(struct downstream *d);
static void settle_check(struct downstream *d);
static void handle_request(struct downstream *d, struct jrpc_msg *m);

/* ---- sending to the agent ---------------------------------------------------------------- */

static void send_json(struct downstream *d, struct json_object *o)
{
    if (!d->fr || !o)
        return;
    size_t len;
    const char *text = jrpc_serialize(o, &len);
    if (!text)
        return;
    int r = framing_send(d->fr, text, len);
    if (r == -ENOBUFS)
        log_error(d->log, "the agent does not read its messages: one of %zu bytes dropped", len);
    /* other errors: the framing reports them through on_error */
    if (!d->throttled && !d->shutting && framing_pending(d->fr) > DOWNSTREAM_AGENT_HIGH_WATER) {
        /* the agent is slower than its answers: it gets no new requests in until it has read */
        d->throttled = true;
        framing_set_reading(d->fr, false);
        log_debug(d->log, "the client does not keep up: %zu bytes queued for it, not reading it",
                  framing_pending(d->fr));
    }
}

static void send_put(struct downstream *d, struct json_object *o)
{
    send_json(d, o);
    json_object_put(o);
}

static void reply_result(struct downstream *d, struct json_object *id, struct json_object *result)
{
    send_put(d, jrpc_new_result(id, result));
    json_object_put(result);
}

static void reply_error(struct downstream *d, struct json_object *id, int code, const char *message)
{
    send_put(d, jrpc_new_error(id, code, message, NULL));
}

static void reply_errorf(struct downstream *d, struct json_object *id, int code, const char *fmt,
                         ...) _printf_(4, 5);
static void reply_errorf(struct downstream *d, struct json_object *id, int code, const char *fmt,
                         ...)
{
    char text[DS_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    reply_error(d, id, code, text);
}

static void notify_agent(struct downstream *d, const char *method)
{
    send_put(d, jrpc_new_notification(method, NULL));
}

/* ---- small helpers ----------------------------------------------------------------------- */

static char **strv_dup(char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    char **c = calloc(n + 1, sizeof(*c));
    if (!c)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        c[i] = strdup(v[i]);
        if (!c[i]) {
            for (size_t j = 0; j < i; j++)
                free(c[j]);
            free(c);
            return NULL;
        }
    }
    return c;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static bool strv_has(char *const *v, const char *s)
{
    for (size_t i = 0; v && v[i]; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

static bool log_debugging(const struct downstream *d)
{
    return log_get_level(d->log) >= LOG_DEBUG;
}

/* ---- pending agent requests -------------------------------------------------------------- */

/* The bucket of an agent's id. Ids equal as JSON-RPC ids (json_object_equal: 1 and "1"
 * differ, an integer stored signed or unsigned does not) hash alike. */
static size_t id_bucket(struct json_object *id)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    if (json_object_is_type(id, json_type_string)) {
        const unsigned char *c = (const unsigned char *)json_object_get_string(id);
        for (int i = 0, n = json_object_get_string_len(id); i < n; i++)
            h = (h ^ c[i]) * 1099511628211u;
    } else {
        h ^= json_object_get_uint64(id); /* negative ids clamp to 0: same bucket, still told
                                            apart by json_object_equal */
        h *= 1099511628211u;
        h ^= h >> 29;
    }
    return (size_t)(h % DS_ID_BUCKETS);
}

/* The agent's request in flight with this id, or NULL. */
static struct pending *pending_find(struct downstream *d, struct json_object *id)
{
    for (struct pending *p = d->ids[id_bucket(id)]; p; p = p->hnext)
        if (json_object_equal(p->id, id))
            return p;
    return NULL;
}

static struct pending *pending_new(struct downstream *d, enum pending_type type,
                                   struct json_object *id, const char *method)
{
    if (d->n_pending >= DS_MAX_PENDING)
        return NULL;
    struct pending *p = d->pool;
    if (p) {
        d->pool = p->next;
        d->n_pool--;
        memset(p, 0, sizeof(*p));
    } else {
        p = calloc(1, sizeof(*p));
        if (!p)
            return NULL;
    }
    p->d = d;
    p->type = type;
    p->id = json_object_get(id);
    p->start = loop_now(d->loop);
    if (log_debugging(d)) /* the method is only ever logged */
        snprintf(p->method, sizeof(p->method), "%s", method ? method : "?");
    DLIST_PUSH(d->pending, p);
    d->n_pending++;
    size_t b = id_bucket(id);
    p->hnext = d->ids[b];
    d->ids[b] = p;
    return p;
}

static void pending_free(struct pending *p)
{
    if (!p)
        return;
    struct downstream *d = p->d;
    DLIST_REMOVE(d->pending, p);
    d->n_pending--;
    for (struct pending **h = &d->ids[id_bucket(p->id)]; *h; h = &(*h)->hnext) {
        if (*h == p) {
            *h = p->hnext;
            break;
        }
    }
    json_object_put(p->id);
    json_object_put(p->msg);
    free(p->sub_uri);
    if (d->n_pool < DS_POOL_MAX) {
        p->next = d->pool;
        d->pool = p;
        d->n_pool++;
    } else {
        free(p);
    }
}

static void reply_too_many(struct downstream *d, struct json_object *id)
{
    reply_errorf(d, id, JRPC_INTERNAL_ERROR,
                 "too many requests in flight (at most %d): wait for some to finish",
                 DS_MAX_PENDING);
}

/* ---- bridged server requests ------------------------------------------------------------- */

/* The id (and progress token) the agent knows b by: "b<n>". */
static void bridged_id(const struct bridged *b, char buf[static 32])
{
    snprintf(buf, 32, "b%" PRIu64, b->n);
}

static void bridged_free(struct downstream *d, struct bridged *b)
{
    DLIST_REMOVE(d->bridged, b);
    d->n_bridged--;
    json_object_put(b->up_id);
    json_object_put(b->token);
    free(b);
}

/* Drops the requests of s (every server's when NULL) but those of session keep_gen (0: none).
 * With a reason the agent is told, with notifications/cancelled: the request died with its
 * session, and an agent that was asking its user (elicitation) may stop. */
static void bridged_drop_server(struct downstream *d, struct server *s, uint64_t keep_gen,
                                const char *reason)
{
    struct bridged *b = d->bridged;
    while (b) {
        struct bridged *next = b->next;
        if ((!s || b->s == s) && (!keep_gen || b->gen != keep_gen)) {
            if (reason && d->initialized && !d->shutting) {
                char bid[32];
                bridged_id(b, bid);
                struct json_object *params = json_object_new_object();
                if (params &&
                    json_object_object_add(params, "requestId", json_object_new_string(bid)) == 0 &&
                    json_object_object_add(params, "reason", json_object_new_string(reason)) == 0)
                    send_put(d, jrpc_new_notification("notifications/cancelled", params));
                json_object_put(params);
            }
            bridged_free(d, b);
        }
        b = next;
    }
}

/* ---- the catalogue ----------------------------------------------------------------------- */

static void catalog_release(struct catalog *c)
{
    for (size_t i = 0; i < c->n_routes; i++)
        json_object_put(c->routes[i].item);
    free(c->routes);
    c->routes = NULL;
    c->n_routes = 0;
    if (c->map)
        lh_table_free(c->map);
    c->map = NULL;
    json_object_put(c->items);
    c->items = NULL;
}

static const struct route *catalog_find(const struct catalog *c, const char *key)
{
    void *v;
    if (!c->map || !key || !lh_table_lookup_ex(c->map, key, &v))
        return NULL;
    return v;
}

/* The exposed form of a tool or prompt: the item itself when its name is unchanged, else a
 * new object sharing every member but "name". NULL on ENOMEM. */
static struct json_object *expose_item(struct json_object *item, const char *orig, const char *name)
{
    if (strcmp(orig, name) == 0)
        return json_object_get(item);
    struct json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_foreach(item, key, val)
    {
        struct json_object *v =
            strcmp(key, "name") == 0 ? json_object_new_string(name) : json_object_get(val);
        if (!v || json_object_object_add_ex(o, key, v, JSON_C_OBJECT_ADD_KEY_IS_NEW) < 0) {
            json_object_put(v);
            json_object_put(o);
            return NULL;
        }
    }
    return o;
}

static const char *item_key(enum kind k, struct json_object *item)
{
    switch (k) {
    case K_TOOLS:
    case K_PROMPTS:
        return json_get_string(item, "name");
    case K_RESOURCES:
        return json_get_string(item, "uri");
    case K_TEMPLATES:
        return json_get_string(item, "uriTemplate");
    default:
        return NULL;
    }
}

/* Builds the kind's catalogue from every active server's list into c; collisions are written
 * to warn (one line each). -ENOMEM. */
static int catalog_build(struct downstream *d, enum kind k, struct catalog *c, struct buf *warn)
{
    struct naming_set *names = NULL;
    size_t total = 0;
    int r = -ENOMEM;

    for (size_t i = 0; i < d->n_servers; i++)
        if (d->servers[i]->items[k])
            total += json_object_array_length(d->servers[i]->items[k]);

    c->items = json_object_new_array_ext((int)(total ? total : 1));
    c->map = lh_kchar_table_new((int)(total < 8 ? 16 : total * 2), NULL);
    c->routes = total ? calloc(total, sizeof(*c->routes)) : NULL;
    if (!c->items || !c->map || (total && !c->routes))
        goto out;
    if (k == K_TOOLS || k == K_PROMPTS) {
        names = naming_set_new();
        if (!names)
            goto out;
    }

    for (size_t i = 0; i < d->n_servers; i++) {
        struct server *s = d->servers[i];
        struct json_object *arr = s->items[k];
        size_t n = arr ? json_object_array_length(arr) : 0;
        for (size_t j = 0; j < n && c->n_routes < total; j++) {
            struct json_object *item = json_object_array_get_idx(arr, j);
            const char *orig = item_key(k, item);
            if (!orig)
                continue; /* not an object, or without its name: nothing the agent could use */
            struct json_object *exposed;
            const char *key;
            if (k == K_TOOLS || k == K_PROMPTS) {
                if (k == K_TOOLS && strv_has(s->exclude, orig))
                    continue;
                char name[NAMING_MAX + 1], wanted[NAMING_MAX + 1];
                naming_expose(d->prefix, s->name, orig, name);
                memcpy(wanted, name, sizeof(wanted));
                int q = naming_set_claim(names, name);
                if (q < 0)
                    goto out;
                if (q > 0 && buf_printf(warn,
                                        "%s '%s' of server '%s' is exposed as '%s': '%s' "
                                        "is taken by another\n",
                                        KINDS[k].noun, orig, s->name, name, wanted) < 0) {
                    /* the warning is cut short; the catalogue is what matters */
                }
                exposed = expose_item(item, orig, name);
                if (!exposed)
                    goto out;
                key = json_get_string(exposed, "name");
            } else {
                exposed = json_object_get(item);
                key = orig;
            }
            if (json_object_array_add(c->items, exposed) < 0) {
                json_object_put(exposed);
                goto out;
            }
            struct route *rt = &c->routes[c->n_routes++];
            rt->s = s;
            rt->item = json_object_get(item);
            rt->orig = orig;
            /* the first of equal URIs wins; names are unique by now */
            if (!lh_table_lookup_entry(c->map, key) && lh_table_insert(c->map, key, rt) < 0)
                goto out;
        }
    }
    r = 0;
out:
    naming_set_free(names);
    return r;
}

/* Rebuilds the catalogue of one kind; tells the agent when the list it was given changed. */
static void rebuild(struct downstream *d, enum kind k)
{
    if (d->mode != DOWNSTREAM_AGGREGATE)
        return;
    struct catalog c = {0};
    struct buf warn;
    buf_init(&warn, 64 * 1024);
    if (catalog_build(d, k, &c, &warn) < 0) {
        log_error(d->log, "cannot build the list of %ss: out of memory", KINDS[k].noun);
        catalog_release(&c);
        buf_release(&warn);
        return;
    }
    bool changed = !json_object_equal(c.items, d->cat[k].items);
    c.listed = d->cat[k].listed;
    catalog_release(&d->cat[k]);
    d->cat[k] = c;
    if (changed) {
        /* collisions are logged when the list they are in changes, not at every rebuild */
        const char *w = buf_str(&warn);
        while (*w) {
            const char *nl = strchr(w, '\n');
            int len = nl ? (int)(nl - w) : (int)strlen(w);
            log_warn(d->log, "%.*s", len, w);
            w += len + (nl ? 1 : 0);
        }
        log_debug(d->log, "%ss: %zu exposed", KINDS[k].noun, d->cat[k].n_routes);
        if (d->initialized && d->cat[k].listed && !d->shutting)
            d->due[k] = true;
    }
    buf_release(&warn);
}

/* Tells the agent of the lists that changed since the last time, one notification each:
 * resources and templates share theirs, and a server's new lists are announced together once
 * its listing round is over (on_listed), not one by one. */
static void announce(struct downstream *d)
{
    bool resources = false;
    for (enum kind k = 0; k < K_N; k++) {
        if (!d->due[k])
            continue;
        d->due[k] = false;
        if (!d->initialized || d->shutting)
            continue;
        if (k == K_RESOURCES || k == K_TEMPLATES) {
            if (resources)
                continue;
            resources = true;
        }
        notify_agent(d, KINDS[k].changed);
    }
}

static void rebuild_all(struct downstream *d)
{
    for (enum kind k = 0; k < K_N; k++)
        rebuild(d, k);
    announce(d);
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

static int server_upstream(struct downstream *d, struct server *s, const struct mcp_server *entry,
                           bool real, struct upstream **ret, struct err *e)
{
    struct upstream_opts o = {
        .loop = d->loop,
        .log = d->log,
        .server = entry,
        .lookup = d->lookup,
        .lookup_userdata = d->lookup_userdata,
        .client_capabilities = real ? d->client_caps : NULL,
        .protocol_version = real ? d->protocol_version : NULL,
        .connect_timeout_ms = d->connect_timeout_ms,
    };
    return upstream_new(&o, &server_handler, s, ret, e);
}

static void server_cancel_lists(struct server *s)
{
    for (enum kind k = 0; k < K_N; k++) {
        upstream_list_cancel(s->listing[k]);
        s->listing[k] = NULL;
        s->relist[k] = false;
    }
}

static void server_free(struct server *s)
{
    if (!s)
        return;
    server_cancel_lists(s);
    upstream_free(s->u); /* with the calls of the resubs, without callbacks */
    while (s->resubs) {
        struct resub *rs = s->resubs;
        s->resubs = rs->next;
        free(rs);
    }
    for (enum kind k = 0; k < K_N; k++)
        json_object_put(s->items[k]);
    json_object_put(s->raw);
    strv_free(s->exclude);
    free(s->name);
    free(s);
}

/* A server for a valid entry, with a template upstream (or a real one once started). */
static int server_new(struct downstream *d, const struct mcp_server *entry, struct server **ret,
                      struct err *e)
{
    struct server *s = calloc(1, sizeof(*s));
    int r = -ENOMEM;
    if (!s)
        return err_set(e, -ENOMEM, "out of memory");
    s->d = d;
    s->name = strdup(entry->name);
    s->raw = json_object_get(entry->raw);
    struct server_config sc = SERVER_CONFIG_INIT;
    r = server_config_parse(entry->raw, &sc, e);
    if (r < 0)
        goto fail;
    s->exclude = strv_dup(sc.exclude_tools);
    server_config_release(&sc);
    if (!s->name || !s->exclude) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    for (enum kind k = 0; k < K_N; k++)
        s->listers[k] = (struct lister){s, k};
    r = server_upstream(d, s, entry, d->started, &s->u, e);
    if (r < 0)
        goto fail;
    s->real = d->started;
    *ret = s;
    return 0;
fail:
    server_free(s);
    return r;
}

/* Replaces the template upstream with one offering the agent's capabilities. */
static int server_make_real(struct downstream *d, struct server *s, struct err *e)
{
    if (s->real)
        return 0;
    struct upstream *u;
    int r = server_upstream(d, s, upstream_server(s->u), true, &u, e);
    if (r < 0)
        return r;
    upstream_free(s->u);
    s->u = u;
    s->real = true;
    return 0;
}

static struct server *server_find(struct downstream *d, const char *name)
{
    for (size_t i = 0; i < d->n_servers; i++)
        if (strcmp(d->servers[i]->name, name) == 0)
            return d->servers[i];
    return NULL;
}

static bool server_listing(const struct server *s)
{
    for (enum kind k = 0; k < K_N; k++)
        if (s->listing[k])
            return true;
    return false;
}

static void server_settled(struct server *s)
{
    if (s->settled)
        return;
    s->settled = true;
    settle_check(s->d);
}

/* Fails the agent's requests still waiting on a server that goes away. */
static void server_fail_pending(struct downstream *d, struct server *s)
{
    struct pending *p = d->pending;
    while (p) {
        struct pending *next = p->next;
        if (p->type == PT_CALL && p->s == s) {
            struct upstream_call *call = p->call;
            p->call = NULL;
            upstream_call_cancel(call, NULL);
            if (p->tool_call) {
                char text[DS_TEXT_MAX];
                snprintf(text, sizeof(text), "server '%s' was closed before it answered", s->name);
                reply_result(d, p->id, jrpc_new_tool_error(text));
            } else {
                reply_errorf(d, p->id, JRPC_CONNECTION_CLOSED,
                             "server '%s' was closed before it answered", s->name);
            }
            pending_free(p);
        }
        p = next;
    }
}

/* Takes s out of the array v of *n servers, keeping the order; nothing when it is not there. */
static void servers_take(struct server **v, size_t *n, struct server *s)
{
    for (size_t i = 0; i < *n; i++) {
        if (v[i] == s) {
            memmove(&v[i], &v[i + 1], (*n - i - 1) * sizeof(*v));
            (*n)--;
            return;
        }
    }
}

/* Frees a server that is no longer in the active list. */
static void server_finish(struct downstream *d, struct server *s)
{
    servers_take(d->closing, &d->n_closing, s);
    server_fail_pending(d, s);
    bridged_drop_server(d, s, 0, NULL);
    server_free(s);
}

/* Takes a server out of the active list (the catalogue is rebuilt by the caller) and closes
 * it; it is freed when CLOSED. */
static void server_remove(struct downstream *d, struct server *s)
{
    servers_take(d->servers, &d->n_servers, s);
    server_cancel_lists(s);
    s->closing = true;
    bridged_drop_server(d, s, 0, "the server was removed from the configuration");
    enum upstream_state st = upstream_state(s->u);
    if (!s->real || st == UPSTREAM_IDLE || st == UPSTREAM_CLOSED) {
        /* never connected: nothing to wait for */
        server_fail_pending(d, s);
        server_free(s);
        return;
    }
    struct server **c = realloc(d->closing, (d->n_closing + 1) * sizeof(*c));
    if (!c) {
        server_finish(d, s); /* frees at once: the child is killed and reaped */
        return;
    }
    d->closing = c;
    d->closing[d->n_closing++] = s;
    upstream_close(s->u);
}

/* ---- listing ----------------------------------------------------------------------------- */

static void on_listed(struct upstream *u, struct json_object *items, int error, const char *message,
                      void *userdata);

static void start_list(struct server *s, enum kind k)
{
    if (s->listing[k]) {
        s->relist[k] = true;
        return;
    }
    int r = upstream_list(s->u, KINDS[k].method, KINDS[k].key, on_listed, &s->listers[k],
                          &s->listing[k]);
    if (r < 0) {
        s->listing[k] = NULL;
        log_error(s->d->log, "server '%s': cannot list %ss: %s", s->name, KINDS[k].noun,
                  strerror(-r));
    }
}

static void on_listed(struct upstream *u, struct json_object *items, int error, const char *message,
                      void *userdata)
{
    struct lister *ls = userdata;
    struct server *s = ls->s;
    struct downstream *d = s->d;
    enum kind k = ls->k;
    (void)u;

    s->listing[k] = NULL;
    if (!error) {
        json_object_put(s->items[k]);
        s->items[k] = items;
        log_debug(d->log, "server '%s': %zu %ss", s->name, json_object_array_length(items),
                  KINDS[k].noun);
    } else if (error == -ENOSYS) {
        /* it declared the capability but does not know the method: nothing to list */
        json_object_put(s->items[k]);
        s->items[k] = NULL;
    } else {
        /* the connection went away meanwhile, or the server broke the protocol: keep what
         * it listed before; READY lists again */
        log_info(d->log, "server '%s': cannot list %ss: %s", s->name, KINDS[k].noun,
                 message ? message : strerror(-error));
    }
    if (s->relist[k] && upstream_state(s->u) == UPSTREAM_READY) {
        s->relist[k] = false;
        start_list(s, k);
    }
    rebuild(d, k);
    if (!server_listing(s)) {
        announce(d);
        server_settled(s);
    }
}

/* After READY: every list again (what the server does not offer is dropped). */
static void list_all(struct server *s)
{
    bool dropped[K_N] = {false};
    for (enum kind k = 0; k < K_N; k++) {
        upstream_list_cancel(s->listing[k]);
        s->listing[k] = NULL;
        s->relist[k] = false;
        if (upstream_has_capability(s->u, KINDS[k].cap)) {
            start_list(s, k);
        } else if (s->items[k]) {
            json_object_put(s->items[k]);
            s->items[k] = NULL;
            dropped[k] = true;
        }
    }
    for (enum kind k = 0; k < K_N; k++)
        if (dropped[k])
            rebuild(s->d, k);
    if (!server_listing(s)) {
        announce(s->d);
        server_settled(s);
    }
}

/* ---- settling: the first answer to a list waits for it ---------------------------------- */

static bool answer_list(struct downstream *d, struct json_object *id, enum kind k)
{
    struct json_object *res = json_object_new_object();
    if (!res || json_object_object_add(res, KINDS[k].key, json_object_get(d->cat[k].items)) < 0) {
        json_object_put(res);
        reply_error(d, id, JRPC_INTERNAL_ERROR, "out of memory");
        return false;
    }
    reply_result(d, id, res);
    d->cat[k].listed = true;
    return true;
}

static void settle_now(struct downstream *d)
{
    if (d->settled)
        return;
    d->settled = true;
    loop_timer_cancel(d->settle_timer);
    d->settle_timer = NULL;
    for (size_t i = 0; i < d->n_servers; i++)
        if (!d->servers[i]->settled)
            log_info(d->log, "server '%s': not connected yet; its tools follow when it is",
                     d->servers[i]->name);

    /* answer in the order the agent asked: the list is newest first, so walk it backwards */
    struct pending *last = d->pending;
    while (last && last->next)
        last = last->next;
    for (struct pending *p = last; p;) {
        struct pending *prev = p->prev;
        if (p->type == PT_LIST) {
            answer_list(d, p->id, p->kind);
            pending_free(p);
        } else if (p->type == PT_HELD) {
            /* handled now as if it had just come: the catalogue is as complete as it gets */
            struct json_object *root = p->msg;
            p->msg = NULL;
            struct jrpc_msg m = {
                .root = root,
                .kind = JRPC_REQUEST,
                .method = json_get_string(root, "method"),
                .id = json_object_object_get(root, "id"),
                .params = json_object_object_get(root, "params"),
            };
            pending_free(p);
            if (m.method && m.id)
                handle_request(d, &m);
            json_object_put(root);
        }
        p = prev;
    }
}

static void settle_check(struct downstream *d)
{
    if (d->settled || !d->started || d->shutting || d->mode != DOWNSTREAM_AGGREGATE)
        return;
    for (size_t i = 0; i < d->n_servers; i++)
        if (!d->servers[i]->settled)
            return;
    settle_now(d);
}

/* ---- single mode: the agent's initialize waits for the upstream -------------------------- */

static struct pending *find_pending_type(struct downstream *d, enum pending_type t)
{
    for (struct pending *p = d->pending; p; p = p->next)
        if (p->type == t)
            return p;
    return NULL;
}

static void single_answer_init(struct downstream *d, struct pending *p)
{
    struct upstream *u = d->servers[0]->u;
    struct json_object *res = json_object_new_object();
    const char *instr = upstream_instructions(u);
    struct json_object *caps = upstream_server_capabilities(u);
    struct json_object *info = upstream_server_info(u);
    if (!res)
        goto oom;
    if (json_object_object_add(res, "protocolVersion",
                               json_object_new_string(upstream_protocol_version(u))) < 0 ||
        json_object_object_add(res, "capabilities",
                               caps ? json_object_get(caps) : json_object_new_object()) < 0 ||
        json_object_object_add(res, "serverInfo",
                               info ? json_object_get(info) : json_object_new_object()) < 0 ||
        (instr && json_object_object_add(res, "instructions", json_object_new_string(instr)) < 0))
        goto oom;
    reply_result(d, p->id, res);
    pending_free(p);
    d->initialized = true;
    return;
oom:
    json_object_put(res);
    reply_error(d, p->id, JRPC_INTERNAL_ERROR, "out of memory");
    pending_free(p);
    d->init_seen = false;
}

static void single_fail_init(struct downstream *d, const char *why)
{
    struct pending *p = find_pending_type(d, PT_INIT);
    if (!p)
        return;
    loop_timer_cancel(d->settle_timer);
    d->settle_timer = NULL;
    struct server *s = d->servers[0];
    reply_errorf(d, p->id, JRPC_CONNECTION_CLOSED, "cannot connect to server '%s': %s", s->name,
                 why);
    pending_free(p);
    d->init_seen = false; /* the agent may try again; the upstream goes on trying too */
}

static void on_settle_timer(struct loop_timer *t, void *userdata)
{
    struct downstream *d = userdata;
    (void)t;
    loop_timer_cancel(d->settle_timer);
    d->settle_timer = NULL;
    if (d->mode == DOWNSTREAM_AGGREGATE) {
        settle_now(d);
        return;
    }
    char why[DS_TEXT_MAX];
    const char *last = upstream_last_error(d->servers[0]->u);
    snprintf(why, sizeof(why), "not connected within %" PRId64 " ms%s%s", d->connect_timeout_ms,
             last ? ": " : "", last ? last : "");
    single_fail_init(d, why);
}

/* ---- resource subscriptions: they survive reconnects --------------------------------------- */

static void sub_remember(struct downstream *d, struct server *s, const char *uri)
{
    struct json_object *cur = json_object_object_get(d->subs, uri);
    if (cur && strcmp(json_object_get_string(cur), s->name) == 0)
        return;
    if (!cur && json_object_object_length(d->subs) >= DS_MAX_SUBS) {
        log_warn(d->log,
                 "server '%s': more than %d resource subscriptions: '%s' is not renewed "
                 "after a reconnect",
                 s->name, DS_MAX_SUBS, uri);
        return;
    }
    struct json_object *name = json_object_new_string(s->name);
    if (!name || json_object_object_add(d->subs, uri, name) < 0)
        log_warn(d->log,
                 "server '%s': out of memory: the subscription to '%s' is not renewed "
                 "after a reconnect",
                 s->name, uri);
}

/* The agent unsubscribed: neither remembered nor renewed, even by a subscribe still in flight. */
static void sub_forget(struct downstream *d, const char *uri)
{
    json_object_object_del(d->subs, uri);
    for (struct pending *p = d->pending; p; p = p->next) {
        if (p->sub == SUB_ADD && strcmp(p->sub_uri, uri) == 0) {
            p->sub = SUB_NONE;
            free(p->sub_uri);
            p->sub_uri = NULL;
        }
    }
}

/* The subscriptions of servers that are not in the configuration any more are dropped. */
static void sub_drop_removed(struct downstream *d)
{
    json_object_object_foreach(d->subs, uri, name)
    {
        if (!server_find(d, json_object_get_string(name)))
            json_object_object_del(d->subs, uri); /* safe: the loop holds the next entry */
    }
}

static void resub_free(struct server *s, struct resub *rs)
{
    DLIST_REMOVE(s->resubs, rs);
    free(rs);
}

static void on_resubscribed(struct upstream_call *c, struct json_object *response, int error,
                            const char *message, void *userdata)
{
    struct resub *rs = userdata;
    struct server *s = rs->s;
    struct downstream *d = s->d;
    struct json_object *err = response ? json_object_object_get(response, "error") : NULL;
    (void)c;

    if (err)
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
    resub_free(s, rs);
}

/* After READY: the agent's subscriptions on this server, again (a new session knows none). */
static void resubscribe(struct downstream *d, struct server *s)
{
    json_object_object_foreach(d->subs, uri, name)
    {
        if (strcmp(json_object_get_string(name), s->name) != 0)
            continue;
        size_t len = strlen(uri);
        struct resub *rs = calloc(1, sizeof(*rs) + len + 1);
        struct json_object *params = json_object_new_object();
        struct upstream_call *c;
        if (!rs || !params ||
            json_object_object_add(params, "uri", json_object_new_string(uri)) < 0 ||
            upstream_call(s->u, "resources/subscribe", params, 0, on_resubscribed, NULL, rs, &c) <
                0) {
            log_warn(d->log, "server '%s': out of memory: cannot subscribe again to '%s'", s->name,
                     uri);
            free(rs);
            json_object_put(params);
            continue;
        }
        json_object_put(params);
        rs->s = s;
        memcpy(rs->uri, uri, len + 1);
        DLIST_PUSH(s->resubs, rs);
    }
}

/* ---- upstream callbacks ------------------------------------------------------------------ */

static void on_level_set(struct upstream_call *c, struct json_object *response, int error,
                         const char *message, void *userdata)
{
    struct server *s = userdata;
    (void)c;
    (void)response;
    if (error)
        log_debug(s->d->log, "server '%s': logging/setLevel failed: %s", s->name,
                  message ? message : strerror(-error));
}

static void apply_level(struct downstream *d, struct server *s)
{
    if (!d->log_level || upstream_state(s->u) != UPSTREAM_READY ||
        !upstream_has_capability(s->u, "logging"))
        return;
    struct json_object *params = json_object_new_object();
    struct upstream_call *c;
    if (!params ||
        json_object_object_add(params, "level", json_object_new_string(d->log_level)) < 0 ||
        upstream_call(s->u, "logging/setLevel", params, 0, on_level_set, NULL, s, &c) < 0)
        log_error(d->log, "server '%s': cannot set its log level: out of memory", s->name);
    json_object_put(params);
}

static void on_state(struct upstream *u, enum upstream_state state, int error, const char *message,
                     void *userdata)
{
    struct server *s = userdata;
    struct downstream *d = s->d;

    switch (state) {
    case UPSTREAM_READY:
        /* the upstream logs connects and failures itself; here only what the bridge does */
        log_debug(d->log, "server '%s': session %" PRIu64 " ready", s->name,
                  upstream_generation(u));
        /* requests of an older session cannot be answered any more (a session the server
         * forgot, re-established without a BACKOFF in between) */
        bridged_drop_server(d, s, upstream_generation(u), "the server's session ended");
        apply_level(d, s);
        if (!s->closing)
            resubscribe(d, s);
        if (d->mode == DOWNSTREAM_SINGLE) {
            struct pending *p = find_pending_type(d, PT_INIT);
            if (p) {
                loop_timer_cancel(d->settle_timer);
                d->settle_timer = NULL;
                single_answer_init(d, p);
            }
        } else if (!s->closing) {
            list_all(s);
        }
        break;
    case UPSTREAM_BACKOFF:
        log_debug(d->log, "server '%s': waiting to connect again", s->name);
        bridged_drop_server(d, s, 0, "the connection to the server was lost");
        server_cancel_lists(s);
        announce(d); /* what its listings changed before they were cut */
        server_settled(s);
        break;
    case UPSTREAM_FAILED:
        log_debug(d->log, "server '%s': failed (%s)", s->name, strerror(-error));
        bridged_drop_server(d, s, 0, "the connection to the server was lost");
        server_cancel_lists(s);
        if (d->mode == DOWNSTREAM_SINGLE) {
            single_fail_init(d, message ? message : "it failed");
        } else if (!s->closing) {
            bool had[K_N];
            for (enum kind k = 0; k < K_N; k++) {
                had[k] = s->items[k] != NULL;
                json_object_put(s->items[k]);
                s->items[k] = NULL;
            }
            for (enum kind k = 0; k < K_N; k++)
                if (had[k])
                    rebuild(d, k);
            announce(d);
        }
        server_settled(s);
        break;
    case UPSTREAM_CLOSED:
        if (s->closing) {
            log_debug(d->log, "server '%s': closed", s->name);
            server_finish(d, s);
            check_shutdown(d);
        }
        break;
    default:
        break;
    }
}

static const char *request_capability(const char *method)
{
    if (strcmp(method, "sampling/createMessage") == 0)
        return "sampling";
    if (strcmp(method, "elicitation/create") == 0)
        return "elicitation";
    if (strcmp(method, "roots/list") == 0)
        return "roots";
    return NULL;
}

static void refuse_server_request(struct upstream *u, uint64_t gen, struct json_object *id,
                                  int code, const char *message)
{
    struct json_object *err = json_object_new_object();
    if (err && json_object_object_add(err, "code", json_object_new_int(code)) == 0 &&
        json_object_object_add(err, "message", json_object_new_string(message)) == 0) {
        int r = upstream_respond(u, gen, id, NULL, err);
        (void)r; /* the server is gone, or no longer in that session: nothing to answer */
    }
    json_object_put(err);
}

static void on_request(struct upstream *u, uint64_t gen, struct json_object *msg, void *userdata)
{
    struct server *s = userdata;
    struct downstream *d = s->d;
    const char *method = json_get_string(msg, "method");
    struct json_object *id = json_object_object_get(msg, "id");
    const char *cap = method ? request_capability(method) : NULL;
    char text[DS_TEXT_MAX];

    if (!method || !id)
        return;
    if (!cap) {
        snprintf(text, sizeof(text), "mcp-bridge does not forward '%s' to its client", method);
        refuse_server_request(u, gen, id, JRPC_METHOD_NOT_FOUND, text);
        return;
    }
    /* only what the upstreams were offered, that is what the agent declared */
    if (!d->client_caps || !json_object_object_get_ex(d->client_caps, cap, NULL) || !d->fr ||
        d->shutting) {
        snprintf(text, sizeof(text), "the client does not support %s", cap);
        refuse_server_request(u, gen, id, JRPC_METHOD_NOT_FOUND, text);
        return;
    }
    if (d->n_bridged >= DS_MAX_BRIDGED) {
        snprintf(text, sizeof(text), "too many requests waiting for the client (at most %d)",
                 DS_MAX_BRIDGED);
        refuse_server_request(u, gen, id, JRPC_INTERNAL_ERROR, text);
        return;
    }
    struct bridged *b = calloc(1, sizeof(*b));
    char bid[32];
    if (!b)
        goto oom;
    b->s = s;
    b->gen = gen;
    b->up_id = json_object_get(id);
    b->n = ++d->bridge_counter;
    struct json_object *params = json_object_object_get(msg, "params");
    struct json_object *token = jrpc_progress_token(params);
    b->token = json_object_get(token);
    bridged_id(b, bid);
    struct json_object *nid = json_object_new_string(bid);
    if (!nid || json_object_object_add(msg, "id", nid) < 0) {
        json_object_put(b->up_id);
        json_object_put(b->token);
        free(b);
        goto oom;
    }
    /* servers choose their tokens alone: two may use the same one, so the agent gets the
     * bridge's id as the token and its progress goes back to this server with its own */
    if (token)
        jrpc_set_progress_token(params, nid);
    DLIST_PUSH(d->bridged, b);
    d->n_bridged++;
    log_debug(d->log, "server '%s': %s forwarded to the client as %s", s->name, method, bid);
    send_json(d, msg);
    return;
oom:
    refuse_server_request(u, gen, id, JRPC_INTERNAL_ERROR, "out of memory");
}

static struct bridged *bridged_find_up(struct downstream *d, struct server *s,
                                       struct json_object *up_id)
{
    for (struct bridged *b = d->bridged; b; b = b->next)
        if (b->s == s && json_object_equal(b->up_id, up_id))
            return b;
    return NULL;
}

/* The request the agent knows as "b<n>" (an id or a progress token of the bridge's), or NULL. */
static struct bridged *bridged_find(struct downstream *d, struct json_object *bid)
{
    const char *sid =
        json_object_is_type(bid, json_type_string) ? json_object_get_string(bid) : NULL;
    if (!sid || sid[0] != 'b' || sid[1] < '0' || sid[1] > '9')
        return NULL;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(sid + 1, &end, 10);
    if (errno || *end)
        return NULL;
    for (struct bridged *b = d->bridged; b; b = b->next)
        if (b->n == n)
            return b;
    return NULL;
}

static void on_notification(struct upstream *u, const char *method, struct json_object *msg,
                            void *userdata)
{
    struct server *s = userdata;
    struct downstream *d = s->d;
    (void)u;

    if (strcmp(method, "notifications/cancelled") == 0) {
        struct json_object *params = json_object_object_get(msg, "params");
        struct json_object *rid = json_object_object_get(params, "requestId");
        struct bridged *b = rid ? bridged_find_up(d, s, rid) : NULL;
        char bid[32];
        if (!b)
            return;
        bridged_id(b, bid);
        bridged_free(d, b);
        struct json_object *nid = json_object_new_string(bid);
        if (nid && json_object_object_add(params, "requestId", nid) == 0)
            send_json(d, msg);
        else
            json_object_put(nid);
        return;
    }
    if (d->mode == DOWNSTREAM_SINGLE) {
        if (d->initialized)
            send_json(d, msg);
        return;
    }
    if (s->closing) {
        return;
    } else if (strcmp(method, "notifications/tools/list_changed") == 0) {
        start_list(s, K_TOOLS);
    } else if (strcmp(method, "notifications/prompts/list_changed") == 0) {
        start_list(s, K_PROMPTS);
    } else if (strcmp(method, "notifications/resources/list_changed") == 0) {
        start_list(s, K_RESOURCES);
        start_list(s, K_TEMPLATES);
    } else if (strcmp(method, "notifications/message") == 0 ||
               strcmp(method, "notifications/resources/updated") == 0 ||
               strcmp(method, "notifications/elicitation/complete") == 0) {
        if (d->initialized)
            send_json(d, msg);
    } else {
        log_debug(d->log, "server '%s': %s not forwarded", s->name, method);
    }
}

/* ---- forwarding the agent's requests ----------------------------------------------------- */

static void tool_error_text(char *buf, size_t size, const struct server *s, int error,
                            const char *message)
{
    const char *what = message && *message ? message : strerror(-error);
    switch (error) {
    case -ESHUTDOWN:
        snprintf(buf, size, "mcp-bridge: server '%s' is not available: %s", s->name, what);
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
        return JRPC_CONNECTION_CLOSED;
    default:
        return JRPC_INTERNAL_ERROR;
    }
}

static void on_call_response(struct upstream_call *c, struct json_object *response, int error,
                             const char *message, void *userdata)
{
    struct pending *p = userdata;
    struct downstream *d = p->d;
    (void)c;

    p->call = NULL;
    if (!error) {
        if (p->sub == SUB_ADD && !json_object_object_get_ex(response, "error", NULL))
            sub_remember(d, p->s, p->sub_uri);
        /* the id is the agent's again; everything else passes as it is */
        if (json_object_object_add(response, "id", json_object_get(p->id)) == 0)
            send_json(d, response);
        else
            reply_error(d, p->id, JRPC_INTERNAL_ERROR, "out of memory");
    } else if (p->tool_call) {
        char text[DS_TEXT_MAX];
        tool_error_text(text, sizeof(text), p->s, error, message);
        reply_result(d, p->id, jrpc_new_tool_error(text));
    } else {
        reply_error(d, p->id, error_code(error), message ? message : strerror(-error));
    }
    if (log_debugging(d))
        log_debug(d->log, "%s: server '%s': %s in %" PRId64 " ms", p->method, p->s->name,
                  error                                                ? "failed"
                  : json_object_object_get_ex(response, "error", NULL) ? "error"
                                                                       : "answered",
                  loop_now(d->loop) - p->start);
    pending_free(p);
}

static void on_call_progress(struct upstream_call *c, struct json_object *params, void *userdata)
{
    struct pending *p = userdata;
    (void)c;
    send_put(p->d, jrpc_new_notification("notifications/progress", params));
}

/* Sends the request to s; its record, or NULL when it was answered at once (no room, no
 * memory). */
static struct pending *forward(struct downstream *d, struct jrpc_msg *m, struct server *s,
                               bool tool_call)
{
    struct pending *p = pending_new(d, PT_CALL, m->id, m->method);
    if (!p) {
        reply_too_many(d, m->id);
        return NULL;
    }
    p->s = s;
    p->tool_call = tool_call;
    int r = upstream_call(s->u, m->method, m->params, 0, on_call_response, on_call_progress, p,
                          &p->call);
    if (r < 0) {
        reply_error(d, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        pending_free(p);
        return NULL;
    }
    return p;
}

static bool is_subscription(const char *method)
{
    return strcmp(method, "resources/subscribe") == 0 ||
           strcmp(method, "resources/unsubscribe") == 0;
}

/* resources/subscribe and unsubscribe, both modes: the bridge remembers what the agent
 * subscribed to on which server, to subscribe again after a reconnect. */
static void forward_subscription(struct downstream *d, struct jrpc_msg *m, struct server *s)
{
    const char *uri = json_get_string(m->params, "uri");
    bool add = strcmp(m->method, "resources/subscribe") == 0;
    if (uri && !add)
        sub_forget(d, uri);
    struct pending *p = forward(d, m, s, false);
    if (!p || !uri || !add)
        return;
    p->sub_uri = strdup(uri);
    if (p->sub_uri)
        p->sub = SUB_ADD;
    else
        log_warn(d->log,
                 "server '%s': out of memory: the subscription to '%s' is not renewed "
                 "after a reconnect",
                 s->name, uri);
}

/* Keeps a request that names something not (yet) in the catalogue until the first round is
 * over. true when held. */
static bool hold(struct downstream *d, struct jrpc_msg *m)
{
    if (d->settled)
        return false;
    struct pending *p = pending_new(d, PT_HELD, m->id, m->method);
    if (!p) {
        reply_too_many(d, m->id);
        return true;
    }
    p->msg = json_object_get(m->root);
    return true;
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

/* tools/call, prompts/get: the exposed name back to the server's own */
static void forward_named(struct downstream *d, struct jrpc_msg *m, enum kind k)
{
    struct json_object *nameobj = json_object_object_get(m->params, "name");
    const char *name =
        json_object_is_type(nameobj, json_type_string) ? json_object_get_string(nameobj) : NULL;
    if (!name) {
        reply_errorf(d, m->id, JRPC_INVALID_PARAMS, "%s needs params.name, a string", m->method);
        return;
    }
    const struct route *rt = catalog_find(&d->cat[k], name);
    if (!rt) {
        if (hold(d, m))
            return;
        char nr[512];
        not_ready(d, nr, sizeof(nr));
        /* MCP answers an unknown tool with -32602 */
        reply_errorf(d, m->id, JRPC_INVALID_PARAMS, "unknown %s '%s'%s", KINDS[k].noun, name, nr);
        return;
    }
    if (json_object_set_string(nameobj, rt->orig) == 0) {
        reply_error(d, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    forward(d, m, rt->s, k == K_TOOLS);
}

/* The server a resource URI belongs to (downstream.h), or NULL. */
static struct server *route_uri(struct downstream *d, const char *uri)
{
    const struct route *rt = catalog_find(&d->cat[K_RESOURCES], uri);
    if (rt)
        return rt->s;
    const struct catalog *t = &d->cat[K_TEMPLATES];
    struct server *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < t->n_routes; i++) {
        size_t plen = strcspn(t->routes[i].orig, "{");
        if (plen > best_len && strncmp(uri, t->routes[i].orig, plen) == 0) {
            best = t->routes[i].s;
            best_len = plen;
        }
    }
    if (best)
        return best;
    struct server *only = NULL;
    for (size_t i = 0; i < d->n_servers; i++) {
        if (!upstream_has_capability(d->servers[i]->u, "resources"))
            continue;
        if (only)
            return NULL;
        only = d->servers[i];
    }
    return only;
}

static void forward_uri(struct downstream *d, struct jrpc_msg *m, const char *uri)
{
    if (!uri) {
        reply_errorf(d, m->id, JRPC_INVALID_PARAMS, "%s needs params.uri, a string", m->method);
        return;
    }
    struct server *s = route_uri(d, uri);
    if (!s) {
        if (hold(d, m))
            return;
        reply_errorf(d, m->id, JRPC_RESOURCE_NOT_FOUND, "resource not found: no server lists '%s'",
                     uri);
        return;
    }
    if (is_subscription(m->method))
        forward_subscription(d, m, s);
    else
        forward(d, m, s, false);
}

static void forward_completion(struct downstream *d, struct jrpc_msg *m)
{
    struct json_object *ref = json_object_object_get(m->params, "ref");
    const char *type = json_get_string(ref, "type");
    if (type && strcmp(type, "ref/prompt") == 0) {
        struct json_object *nameobj = json_object_object_get(ref, "name");
        const char *name =
            json_object_is_type(nameobj, json_type_string) ? json_object_get_string(nameobj) : NULL;
        const struct route *rt = catalog_find(&d->cat[K_PROMPTS], name);
        if (!rt) {
            if (name && hold(d, m))
                return;
            reply_errorf(d, m->id, JRPC_INVALID_PARAMS, "unknown prompt '%s'", name ? name : "");
            return;
        }
        if (json_object_set_string(nameobj, rt->orig) == 0) {
            reply_error(d, m->id, JRPC_INTERNAL_ERROR, "out of memory");
            return;
        }
        forward(d, m, rt->s, false);
    } else if (type && strcmp(type, "ref/resource") == 0) {
        const char *uri = json_get_string(ref, "uri");
        const struct route *rt = catalog_find(&d->cat[K_TEMPLATES], uri);
        if (rt)
            forward(d, m, rt->s, false);
        else
            forward_uri(d, m, uri);
    } else {
        reply_error(d, m->id, JRPC_INVALID_PARAMS,
                    "completion/complete needs params.ref of type 'ref/prompt' or 'ref/resource'");
    }
}

/* ---- initialize -------------------------------------------------------------------------- */

static bool known_version(const char *v)
{
    for (size_t i = 0; v && UPSTREAM_PROTOCOL_VERSIONS[i]; i++)
        if (strcmp(UPSTREAM_PROTOCOL_VERSIONS[i], v) == 0)
            return true;
    return false;
}

static struct json_object *aggregate_init_result(struct downstream *d)
{
    struct json_object *res = json_object_new_object();
    struct json_object *caps = json_object_new_object();
    struct json_object *info = json_object_new_object();
    struct buf instr;
    buf_init(&instr, 64 * 1024);
    int r = 0;

    if (!res || !caps || !info)
        goto oom;
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
    if (json_object_object_add(info, "name", json_object_new_string("mcp-bridge")) < 0 ||
        json_object_object_add(info, "version", json_object_new_string(PROJECT_VERSION_STR)) < 0)
        goto oom;

    if (d->n_servers == 0) {
        r = buf_append_str(&instr, "mcp-bridge: no MCP servers are configured.");
    } else {
        r = buf_append_str(&instr, "mcp-bridge serves the tools, prompts and resources of the "
                                   "MCP servers ");
        for (size_t i = 0; i < d->n_servers && r >= 0; i++)
            r = buf_printf(&instr, "%s'%s'",
                           i == 0                  ? ""
                           : i + 1 == d->n_servers ? " and "
                                                   : ", ",
                           d->servers[i]->name);
        if (r >= 0)
            r = buf_printf(&instr, " as one. Tool and prompt names are %s.",
                           PREFIX_DESC[d->prefix]);
    }
    if (r < 0)
        goto oom;
    if (json_object_object_add(res, "protocolVersion",
                               json_object_new_string(d->protocol_version
                                                          ? d->protocol_version
                                                          : UPSTREAM_PROTOCOL_LATEST)) < 0)
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

/* Makes the upstreams real and connects them all, in parallel. */
static void start_upstreams(struct downstream *d)
{
    if (d->started)
        return;
    d->started = true;
    for (size_t i = 0; i < d->n_servers;) {
        struct server *s = d->servers[i];
        struct err e = ERR_INIT;
        if (server_make_real(d, s, &e) < 0) {
            log_error(d->log, "server '%s': %s", s->name, err_msg(&e));
            if (d->mode == DOWNSTREAM_AGGREGATE) {
                server_remove(d, s);
                continue;
            }
            s->settled = true;
            i++;
            continue;
        }
        upstream_connect(s->u);
        i++;
    }
    if (loop_timer_add(d->loop, d->connect_timeout_ms, on_settle_timer, d, &d->settle_timer) < 0)
        d->settle_timer = NULL; /* no timer: the first list waits for the servers themselves */
    settle_check(d);
}

static void handle_initialize(struct downstream *d, struct jrpc_msg *m)
{
    if (d->init_seen) {
        reply_error(d, m->id, JRPC_INVALID_REQUEST, "initialize was already received");
        return;
    }
    const char *version = json_get_string(m->params, "protocolVersion");
    struct json_object *caps = json_get_object(m->params, "capabilities");

    if (!d->started) {
        /* what the agent declared is what upstreams are offered, on every (re)connect */
        free(d->protocol_version);
        d->protocol_version = known_version(version) ? strdup(version) : NULL;
        json_object_put(d->agent_caps);
        d->agent_caps = caps ? json_object_get(caps) : json_object_new_object();
        json_object_put(d->client_caps);
        d->client_caps = json_object_new_object();
        if (!d->agent_caps || !d->client_caps) {
            reply_error(d, m->id, JRPC_INTERNAL_ERROR, "out of memory");
            return;
        }
        /* the capabilities whose requests the bridge forwards, and only as declared: a value
         * that is not an object (null included) is not a capability */
        static const char *const offered[] = {"roots", "sampling", "elicitation"};
        for (size_t i = 0; i < ELEMENTSOF(offered); i++) {
            struct json_object *v = json_get_object(caps, offered[i]);
            if (v && json_object_object_add(d->client_caps, offered[i], json_object_get(v)) < 0) {
                reply_error(d, m->id, JRPC_INTERNAL_ERROR, "out of memory");
                return;
            }
        }
    }

    if (d->mode == DOWNSTREAM_AGGREGATE) {
        struct json_object *res = aggregate_init_result(d);
        if (!res) {
            reply_error(d, m->id, JRPC_INTERNAL_ERROR, "out of memory");
            return;
        }
        d->init_seen = true;
        reply_result(d, m->id, res);
        d->initialized = true;
        start_upstreams(d);
        return;
    }

    struct pending *p = pending_new(d, PT_INIT, m->id, m->method);
    if (!p) {
        reply_too_many(d, m->id);
        return;
    }
    d->init_seen = true;
    struct server *s = d->servers[0];
    if (d->started && upstream_state(s->u) == UPSTREAM_READY) {
        single_answer_init(d, p);
        return;
    }
    if (d->started && upstream_state(s->u) == UPSTREAM_FAILED)
        upstream_connect(s->u); /* the agent tries again: so does the bridge */
    if (!d->started)
        start_upstreams(d);
    else if (!d->settle_timer && loop_timer_add(d->loop, d->connect_timeout_ms, on_settle_timer, d,
                                                &d->settle_timer) < 0)
        d->settle_timer = NULL;
}

/* ---- the agent's messages ---------------------------------------------------------------- */

static void handle_set_level(struct downstream *d, struct jrpc_msg *m)
{
    const char *level = json_get_string(m->params, "level");
    if (!level) {
        reply_error(d, m->id, JRPC_INVALID_PARAMS, "logging/setLevel needs params.level");
        return;
    }
    char *copy = strdup(level);
    if (!copy) {
        reply_error(d, m->id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    free(d->log_level);
    d->log_level = copy;
    if (d->mode == DOWNSTREAM_SINGLE) {
        /* passed through; remembered for reconnects */
        forward(d, m, d->servers[0], false);
        return;
    }
    for (size_t i = 0; i < d->n_servers; i++)
        apply_level(d, d->servers[i]);
    struct json_object *empty = json_object_new_object();
    if (empty)
        reply_result(d, m->id, empty);
    else
        reply_error(d, m->id, JRPC_INTERNAL_ERROR, "out of memory");
}

static int list_kind(const char *method)
{
    for (enum kind k = 0; k < K_N; k++)
        if (strcmp(method, KINDS[k].method) == 0)
            return (int)k;
    return -1;
}

static void handle_request(struct downstream *d, struct jrpc_msg *m)
{
    const char *method = m->method;

    /* two answers with one id would be the agent's to untangle: the second request is not
     * taken (JSON-RPC ids are unique among the requests in flight) */
    if (pending_find(d, m->id)) {
        reply_errorf(d, m->id, JRPC_INVALID_REQUEST,
                     "id already in use: a request with this id is still in flight");
        return;
    }
    /* single mode passes ping on too, once there is a session to ask */
    if (strcmp(method, "ping") == 0 && !(d->mode == DOWNSTREAM_SINGLE && d->initialized)) {
        struct json_object *empty = json_object_new_object();
        if (empty)
            reply_result(d, m->id, empty);
        return;
    }
    if (strcmp(method, "initialize") == 0) {
        handle_initialize(d, m);
        return;
    }
    if (!d->initialized) {
        reply_error(d, m->id, JRPC_INVALID_REQUEST, "not initialized: send initialize first");
        return;
    }

    if (d->mode == DOWNSTREAM_SINGLE) {
        if (strcmp(method, "tools/call") == 0)
            forward(d, m, d->servers[0], true);
        else if (strcmp(method, "logging/setLevel") == 0)
            handle_set_level(d, m);
        else if (is_subscription(method))
            forward_subscription(d, m, d->servers[0]);
        else
            forward(d, m, d->servers[0], false);
        return;
    }

    if (strcmp(method, "tools/call") == 0) {
        forward_named(d, m, K_TOOLS);
        return;
    }
    int k = list_kind(method);
    if (k >= 0) {
        if (d->settled) {
            answer_list(d, m->id, (enum kind)k);
            return;
        }
        struct pending *p = pending_new(d, PT_LIST, m->id, method);
        if (!p)
            reply_too_many(d, m->id);
        else
            p->kind = (enum kind)k;
        return;
    }
    if (strcmp(method, "prompts/get") == 0)
        forward_named(d, m, K_PROMPTS);
    else if (strcmp(method, "resources/read") == 0 || strcmp(method, "resources/subscribe") == 0 ||
             strcmp(method, "resources/unsubscribe") == 0)
        forward_uri(d, m, json_get_string(m->params, "uri"));
    else if (strcmp(method, "completion/complete") == 0)
        forward_completion(d, m);
    else if (strcmp(method, "logging/setLevel") == 0)
        handle_set_level(d, m);
    else
        reply_errorf(d, m->id, JRPC_METHOD_NOT_FOUND, "method not found: '%s'", method);
}

static void handle_cancelled(struct downstream *d, struct json_object *params)
{
    struct json_object *rid = json_object_object_get(params, "requestId");
    struct pending *p = rid ? pending_find(d, rid) : NULL;
    /* a request already answered (or never seen) has nothing to cancel; initialize is not
     * cancelled (MCP) */
    if (!p || p->type == PT_INIT)
        return;
    log_debug(d->log, "%s cancelled by the client", p->method);
    if (p->call) {
        struct upstream_call *call = p->call;
        p->call = NULL;
        upstream_call_cancel(call, json_get_string(params, "reason"));
    }
    pending_free(p);
}

static void handle_notification(struct downstream *d, struct jrpc_msg *m)
{
    const char *method = m->method;

    if (strcmp(method, "notifications/cancelled") == 0) {
        handle_cancelled(d, m->params);
    } else if (strcmp(method, "notifications/initialized") == 0) {
        /* every upstream sends its own */
    } else if (strcmp(method, "notifications/roots/list_changed") == 0) {
        for (size_t i = 0; i < d->n_servers; i++) {
            int r = upstream_notify(d->servers[i]->u, method, m->params);
            if (r < 0)
                log_debug(d->log, "server '%s': %s not sent: %s", d->servers[i]->name, method,
                          strerror(-r));
        }
    } else if (strcmp(method, "notifications/progress") == 0) {
        /* progress of the agent on a request a server made: the token is the bridge's */
        struct bridged *b = bridged_find(d, json_object_object_get(m->params, "progressToken"));
        if (b && b->token &&
            json_object_object_add(m->params, "progressToken", json_object_get(b->token)) == 0) {
            int r = upstream_notify(b->s->u, method, m->params);
            if (r < 0)
                log_debug(d->log, "server '%s': %s not sent: %s", b->s->name, method, strerror(-r));
        } else {
            log_debug(d->log, "client progress for no request of a server ignored");
        }
    } else if (d->mode == DOWNSTREAM_SINGLE && d->initialized) {
        int r = upstream_notify(d->servers[0]->u, method, m->params);
        (void)r;
    } else {
        log_debug(d->log, "client notification %s ignored", method);
    }
}

/* The agent's answer to a request a server made: back to it, with its id. */
static void handle_response(struct downstream *d, struct jrpc_msg *m)
{
    struct bridged *b = bridged_find(d, m->id);
    if (!b) {
        log_debug(d->log, "client answer to no request of a server ignored");
        return;
    }
    /* "result": null is a result too (jrpc.h): the server gets {} rather than nothing */
    struct json_object *empty = NULL;
    if (!m->error && !m->result)
        m->result = empty = json_object_new_object();
    int r = upstream_respond(b->s->u, b->gen, b->up_id, m->result, m->error);
    if (r < 0)
        log_debug(d->log, "server '%s': answer to b%" PRIu64 " not sent: %s", b->s->name, b->n,
                  strerror(-r));
    json_object_put(empty);
    bridged_free(d, b);
}

static void on_agent_message(const char *text, size_t len, void *userdata)
{
    struct downstream *d = userdata;
    struct jrpc_msg m = {0};
    struct err e = ERR_INIT;

    if (d->shutting)
        return;
    int r = jrpc_parse(text, len, FRAMING_MAX_FRAME_DEFAULT, &m, &e);
    if (r < 0) {
        if (r == -EBADMSG)
            reply_errorf(d, NULL, JRPC_PARSE_ERROR, "parse error: %s", err_msg(&e));
        else
            reply_errorf(d, NULL, JRPC_INTERNAL_ERROR, "cannot read the message: %s", err_msg(&e));
        return;
    }
    switch (m.kind) {
    case JRPC_REQUEST:
        handle_request(d, &m);
        break;
    case JRPC_NOTIFICATION:
        if (d->init_seen)
            handle_notification(d, &m);
        break;
    case JRPC_RESPONSE:
        handle_response(d, &m);
        break;
    default:
        /* a broken answer (to a request of a server) gets none: there is nobody to tell */
        if (!m.method && (json_object_object_get_ex(m.root, "result", NULL) ||
                          json_object_object_get_ex(m.root, "error", NULL)))
            break;
        reply_error(d, m.id, JRPC_INVALID_REQUEST, "invalid request: not a JSON-RPC 2.0 message");
        break;
    }
    jrpc_msg_done(&m);
}

static void on_agent_eof(void *userdata)
{
    struct downstream *d = userdata;
    log_debug(d->log, "the client closed its side: shutting down");
    downstream_shutdown(d);
}

static void on_agent_error(int error, void *userdata)
{
    struct downstream *d = userdata;
    framing_free(d->fr);
    d->fr = NULL;
    if (!d->status)
        d->status = error;
    if (error == -E2BIG)
        log_error(d->log, "the client sent a message over %u bytes: closing",
                  FRAMING_MAX_FRAME_DEFAULT);
    else if (error != -EPIPE)
        log_error(d->log, "the client connection broke: %s", strerror(-error));
    if (d->shutting)
        check_shutdown(d);
    else
        downstream_shutdown(d);
}

/* Everything queued for the agent is written: read it again (never once shutting down, which
 * stops reading for good). */
static void on_agent_drain(void *userdata)
{
    struct downstream *d = userdata;
    if (!d->throttled || d->shutting || !d->fr)
        return;
    d->throttled = false;
    framing_set_reading(d->fr, true);
    log_debug(d->log, "the client caught up: reading it again");
}

static const struct framing_handler agent_handler = {
    .on_message = on_agent_message,
    .on_eof = on_agent_eof,
    .on_error = on_agent_error,
    .on_drain = on_agent_drain,
};

/* ---- shutdown ---------------------------------------------------------------------------- */

static void run_done(void *userdata)
{
    struct done_call *dc = userdata;
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
    if (d->done)
        return;
    d->done = true;
    loop_timer_cancel(d->shutdown_timer);
    d->shutdown_timer = NULL;
    struct done_call *dc = calloc(1, sizeof(*dc));
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
    struct downstream *d = userdata;
    if (status < 0 && !d->status)
        d->status = status;
    finish(d, d->status);
}

static void check_shutdown(struct downstream *d)
{
    if (!d->shutting || d->finishing || d->n_servers || d->n_closing)
        return;
    d->finishing = true;
    /* the answers still queued for the agent go out first */
    if (d->fr && framing_close_write(d->fr, on_flushed, d) == 0)
        return;
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
        server_finish(d, d->closing[d->n_closing - 1]); /* killed and reaped */
    while (d->n_servers) {
        struct server *s = d->servers[--d->n_servers];
        server_finish(d, s);
    }
    if (d->fr) {
        int r = framing_close_write(d->fr, NULL, NULL); /* what it takes now; the rest goes */
        (void)r;
    }
    finish(d, d->status);
}

void downstream_shutdown(struct downstream *d)
{
    if (!d || d->shutting)
        return;
    d->shutting = true;
    if (d->fr)
        framing_set_reading(d->fr, false);
    loop_timer_cancel(d->settle_timer);
    d->settle_timer = NULL;
    if (loop_timer_add(d->loop, DOWNSTREAM_SHUTDOWN_MS, on_shutdown_timer, d, &d->shutdown_timer) <
        0)
        d->shutdown_timer = NULL;

    /* what waits for the catalogue or the upstream's handshake is answered now */
    struct pending *p = d->pending;
    while (p) {
        struct pending *next = p->next;
        if (p->type == PT_LIST) {
            answer_list(d, p->id, p->kind);
            pending_free(p);
        } else if (p->type != PT_CALL) {
            reply_error(d, p->id, JRPC_CONNECTION_CLOSED, "mcp-bridge is shutting down");
            pending_free(p);
        }
        p = next;
    }
    bridged_drop_server(d, NULL, 0, NULL);
    /* calls in flight fail with -ESHUTDOWN and are answered from their callbacks */
    while (d->n_servers)
        server_remove(d, d->servers[d->n_servers - 1]);
    rebuild_all(d); /* no route may point at a server that is gone */
    check_shutdown(d);
}

/* ---- construction, reload ---------------------------------------------------------------- */

static int servers_from_config(struct downstream *d, const struct mcp_config *config, struct err *e)
{
    size_t n = mcp_config_count(config);
    d->servers = calloc(n ? n : 1, sizeof(*d->servers));
    if (!d->servers)
        return err_set(e, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const struct mcp_server *entry = mcp_config_at(config, i);
        if (entry->error) {
            log_warn(d->log, "%s", entry->error);
            continue;
        }
        struct server *s;
        struct err e2 = ERR_INIT;
        int r = server_new(d, entry, &s, &e2);
        if (r == -ENOMEM)
            return err_set(e, r, "out of memory");
        if (r < 0) {
            log_warn(d->log, "server '%s': %s", entry->name, err_msg(&e2));
            continue;
        }
        d->servers[d->n_servers++] = s;
    }
    return 0;
}

static int single_from_config(struct downstream *d, const struct mcp_config *config,
                              const char *name, struct err *e)
{
    const struct mcp_server *entry = name ? mcp_config_find(config, name) : NULL;
    if (!entry && !name && mcp_config_count(config) == 1)
        entry = mcp_config_at(config, 0);
    if (!entry)
        return err_set(e, -ENOENT, "no server '%s' in the configuration: see 'mcp-bridge list'",
                       name ? name : "");
    if (entry->error)
        return err_set(e, -EINVAL, "%s", entry->error);
    d->servers = calloc(1, sizeof(*d->servers));
    if (!d->servers)
        return err_set(e, -ENOMEM, "out of memory");
    int r = server_new(d, entry, &d->servers[0], e);
    if (r < 0)
        return r;
    d->n_servers = 1;
    return 0;
}

int downstream_new(const struct downstream_opts *opts, struct downstream **ret, struct err *e)
{
    if (!opts || !opts->loop || !opts->log || !opts->on_done || !opts->config || !ret ||
        opts->in_fd < 0 || opts->out_fd < 0)
        return err_set(e, -EINVAL, "downstream: missing options");
    struct downstream *d = calloc(1, sizeof(*d));
    int r;
    if (!d)
        return err_set(e, -ENOMEM, "out of memory");
    d->loop = opts->loop;
    d->log = opts->log;
    d->mode = opts->mode;
    d->lookup = opts->lookup;
    d->lookup_userdata = opts->lookup_userdata;
    d->connect_timeout_ms = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms
                                                         : UPSTREAM_CONNECT_TIMEOUT_DEFAULT_MS;
    d->on_done = opts->on_done;
    d->userdata = opts->userdata;
    d->prefix = server_config_tool_prefix(opts->config);
    d->subs = json_object_new_object();
    if (!d->subs) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    for (enum kind k = 0; k < K_N; k++) {
        d->cat[k].items = json_object_new_array();
        if (!d->cat[k].items) {
            r = err_set(e, -ENOMEM, "out of memory");
            goto fail;
        }
    }

    if (d->mode == DOWNSTREAM_SINGLE)
        r = single_from_config(d, opts->config, opts->single_name, e);
    else
        r = servers_from_config(d, opts->config, e);
    if (r < 0)
        goto fail;

    r = framing_new(d->loop, opts->in_fd, opts->out_fd, &agent_handler, NULL, d, &d->fr);
    if (r < 0) {
        err_set(e, r, "cannot watch the client's stdin and stdout: %s", strerror(-r));
        goto fail;
    }
    *ret = d;
    return 0;
fail:
    downstream_free(d);
    return r;
}

int downstream_reload(struct downstream *d, const struct mcp_config *config, struct err *e)
{
    if (d->mode != DOWNSTREAM_AGGREGATE)
        return err_set(e, -EOPNOTSUPP, "a single-server bridge does not reload its configuration");
    if (d->shutting)
        return 0;

    size_t n = mcp_config_count(config);
    struct server **next = calloc(n ? n : 1, sizeof(*next));
    bool *fresh = calloc(n ? n : 1, sizeof(*fresh));
    size_t nn = 0;
    if (!next || !fresh) {
        free(next);
        free(fresh);
        return err_set(e, -ENOMEM, "out of memory");
    }

    /* the new set, sorted as the configuration is: kept servers and new ones */
    for (size_t i = 0; i < n; i++) {
        const struct mcp_server *entry = mcp_config_at(config, i);
        if (entry->error) {
            log_warn(d->log, "%s", entry->error);
            continue;
        }
        struct server *old = server_find(d, entry->name);
        if (old && json_object_equal(old->raw, entry->raw)) {
            next[nn++] = old;
            continue;
        }
        struct server *s;
        struct err e2 = ERR_INIT;
        int r = server_new(d, entry, &s, &e2);
        if (r < 0) {
            if (r == -ENOMEM) {
                for (size_t j = 0; j < nn; j++)
                    if (fresh[j])
                        server_free(next[j]);
                free(next);
                free(fresh);
                return err_set(e, r, "out of memory");
            }
            log_warn(d->log, "server '%s': %s", entry->name, err_msg(&e2));
            continue;
        }
        fresh[nn] = true;
        next[nn++] = s;
    }

    /* every old server not in the new set is closed (changed ones too: a new one replaces it) */
    size_t removed = 0, added = 0;
    for (size_t i = d->n_servers; i-- > 0;) {
        struct server *s = d->servers[i];
        bool kept = false;
        for (size_t j = 0; j < nn && !kept; j++)
            kept = next[j] == s;
        if (!kept) {
            log_info(d->log, "server '%s': removed from the configuration", s->name);
            server_remove(d, s);
            removed++;
        }
    }
    free(d->servers);
    d->servers = next;
    d->n_servers = nn;
    d->prefix = server_config_tool_prefix(config);
    for (size_t j = 0; j < nn; j++) {
        if (!fresh[j])
            continue;
        added++;
        struct server *s = next[j];
        if (d->started)
            upstream_connect(s->u);
    }
    free(fresh);
    sub_drop_removed(d);
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
    loop_timer_cancel(d->shutdown_timer);
    for (size_t i = 0; i < d->n_servers; i++)
        server_free(d->servers[i]); /* calls in flight go with their upstream */
    for (size_t i = 0; i < d->n_closing; i++)
        server_free(d->closing[i]);
    free(d->servers);
    free(d->closing);
    while (d->pending) {
        d->pending->call = NULL;
        pending_free(d->pending);
    }
    while (d->pool) {
        struct pending *p = d->pool;
        d->pool = p->next;
        free(p);
    }
    json_object_put(d->subs);
    while (d->bridged)
        bridged_free(d, d->bridged);
    for (enum kind k = 0; k < K_N; k++)
        catalog_release(&d->cat[k]);
    framing_free(d->fr);
    json_object_put(d->agent_caps);
    json_object_put(d->client_caps);
    free(d->protocol_version);
    free(d->log_level);
    free(d);
}
