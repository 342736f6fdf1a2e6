/* catalog.c - the exposed lists of aggregate mode and their routes (catalog.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/hashmap.h"
#include "credkit/json.h"
#include "credkit/strv.h"

#include "catalog.h"
#include "naming.h"
#include "server_config.h"

const struct catalog_kind_info CATALOG_KINDS[CATALOG_N_KINDS] = {
    [CATALOG_TOOLS] = {"tools/list", "tools", "tools", "notifications/tools/list_changed", "tool"},
    [CATALOG_PROMPTS] = {"prompts/list", "prompts", "prompts", "notifications/prompts/list_changed",
                         "prompt"},
    [CATALOG_RESOURCES] = {"resources/list", "resources", "resources",
                           "notifications/resources/list_changed", "resource"},
    [CATALOG_TEMPLATES] = {"resources/templates/list", "resourceTemplates", "resources",
                           "notifications/resources/list_changed", "resource template"},
};

static const char *const PREFIX_DESC[] = {
    [MCP_TOOL_PREFIX_MCP] = "mcp_<server>_<name>",
    [MCP_TOOL_PREFIX_SERVER] = "<server>_<name>",
    [MCP_TOOL_PREFIX_SHORT] = "<server>_<name>",
    [MCP_TOOL_PREFIX_NONE] = "<name>",
};

struct catalog_source {
    char *name;
    struct strv exclude;                        /* excludeTools */
    struct json_object *items[CATALOG_N_KINDS]; /* as the server gave them; NULL: none */
    void *userdata;
};

/* Where an exposed tool, prompt, resource or template goes. */
struct route {
    struct catalog_source *src;
    struct json_object *item; /* the server's own item (reference), which orig points into */
    const char *orig;         /* the name (tools, prompts), uri or uriTemplate it knows */
};

/* One kind's list. */
struct list {
    struct json_object *items; /* the exposed array (never NULL once built) */
    struct hashmap *map;       /* exposed name, uri or uriTemplate -> struct route */
    struct route *routes;
    size_t n_routes;
};

struct catalog {
    struct log *log;
    enum mcp_tool_prefix prefix;
    struct list lists[CATALOG_N_KINDS];
    bool listed[CATALOG_N_KINDS]; /* the agent has been given this list */
    bool due[CATALOG_N_KINDS];    /* ... and is to be told that it changed */
};

int catalog_kind_of(const char *method)
{
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        if (strcmp(method, CATALOG_KINDS[k].method) == 0)
            return (int)k;
    return -1;
}

/* ---- sources ----------------------------------------------------------------------------- */

int catalog_source_new(const char *name, char *const *exclude, void *userdata,
                       struct catalog_source **ret)
{
    struct catalog_source *src = calloc(1, sizeof(*src));
    if (!src)
        return -ENOMEM;
    src->userdata = userdata;
    src->name = strdup(name);
    if (!src->name)
        goto oom;
    for (size_t i = 0; exclude && exclude[i]; i++)
        if (strv_push(&src->exclude, exclude[i]) < 0)
            goto oom;
    *ret = src;
    return 0;
oom:
    catalog_source_free(src);
    return -ENOMEM;
}

int catalog_source_from_entry(const struct mcp_server *entry, void *userdata,
                              struct catalog_source **ret)
{
    struct server_config sc = SERVER_CONFIG_INIT;
    /* the loader checked the bridge's keys of every entry it let through: an entry loaded
     * without those checks (a hand-built one) is refused here */
    int r = server_config_parse(entry->raw, &sc, NULL);
    if (r < 0)
        return r;
    r = catalog_source_new(entry->name, sc.exclude_tools, userdata, ret);
    server_config_release(&sc);
    return r;
}

void catalog_source_free(struct catalog_source *src)
{
    if (!src)
        return;
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        json_object_put(src->items[k]);
    strv_release(&src->exclude);
    free(src->name);
    free(src);
}

const char *catalog_source_name(const struct catalog_source *src)
{
    return src->name;
}

void *catalog_source_userdata(const struct catalog_source *src)
{
    return src->userdata;
}

void catalog_source_set_items(struct catalog_source *src, enum catalog_kind k,
                              struct json_object *items)
{
    json_object_put(src->items[k]);
    src->items[k] = items;
}

struct json_object *catalog_source_items(const struct catalog_source *src, enum catalog_kind k)
{
    return src->items[k];
}

/* ---- building one list ------------------------------------------------------------------- */

static void list_release(struct list *l)
{
    for (size_t i = 0; i < l->n_routes; i++)
        json_object_put(l->routes[i].item);
    free(l->routes);
    l->routes = NULL;
    l->n_routes = 0;
    hashmap_free(l->map);
    l->map = NULL;
    json_object_put(l->items);
    l->items = NULL;
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

static const char *item_key(enum catalog_kind k, struct json_object *item)
{
    switch (k) {
    case CATALOG_TOOLS:
    case CATALOG_PROMPTS:
        return json_get_string(item, "name");
    case CATALOG_RESOURCES:
        return json_get_string(item, "uri");
    case CATALOG_TEMPLATES:
        return json_get_string(item, "uriTemplate");
    default:
        return NULL;
    }
}

/* The exposed form of a tool or prompt of src, named uniquely in names; a collision is
 * written to warn (one line). NULL on ENOMEM. */
static struct json_object *expose_named(const struct catalog *c, enum catalog_kind k,
                                        const struct catalog_source *src, struct json_object *item,
                                        const char *orig, struct naming_set *names,
                                        struct buf *warn)
{
    char name[NAMING_MAX + 1], wanted[NAMING_MAX + 1];
    naming_expose(c->prefix, src->name, orig, name);
    memcpy(wanted, name, sizeof(wanted));
    int q = naming_set_claim(names, name);
    if (q < 0)
        return NULL;
    if (q > 0 &&
        buf_printf(warn, "%s '%s' of server '%s' is exposed as '%s': '%s' is taken by another\n",
                   CATALOG_KINDS[k].noun, orig, src->name, name, wanted) < 0) {
        /* the warning is cut short; the catalogue is what matters */
    }
    return expose_item(item, orig, name);
}

/* Adds src's items of kind k to l (sized for total routes). -ENOMEM. */
static int build_source(const struct catalog *c, enum catalog_kind k, struct catalog_source *src,
                        struct list *l, size_t total, struct naming_set *names, struct buf *warn)
{
    struct json_object *arr = src->items[k];
    size_t n = arr ? json_object_array_length(arr) : 0;
    for (size_t j = 0; j < n && l->n_routes < total; j++) {
        struct json_object *item = json_object_array_get_idx(arr, j);
        const char *orig = item_key(k, item);
        if (!orig)
            continue; /* not an object, or without its name: nothing the agent could use */
        struct json_object *exposed;
        const char *key;
        if (names) {
            if (k == CATALOG_TOOLS && strv_contains(&src->exclude, orig))
                continue;
            exposed = expose_named(c, k, src, item, orig, names, warn);
            if (!exposed)
                return -ENOMEM;
            key = json_get_string(exposed, "name");
        } else {
            exposed = json_object_get(item);
            key = orig;
        }
        if (json_object_array_add(l->items, exposed) < 0) {
            json_object_put(exposed);
            return -ENOMEM;
        }
        struct route *rt = &l->routes[l->n_routes++];
        rt->src = src;
        rt->item = json_object_get(item);
        rt->orig = orig;
        /* the first of equal URIs wins; names are unique by now */
        int r = hashmap_put(l->map, key, rt);
        if (r < 0 && r != -EEXIST)
            return r;
    }
    return 0;
}

/* Builds the kind's list from the sources into l; collisions are written to warn (one line
 * each). -ENOMEM. */
static int build(const struct catalog *c, enum catalog_kind k, struct catalog_source *const *v,
                 size_t n, struct list *l, struct buf *warn)
{
    struct naming_set *names = NULL;
    size_t total = 0;
    int r = -ENOMEM;

    for (size_t i = 0; i < n; i++)
        if (v[i]->items[k])
            total += json_object_array_length(v[i]->items[k]);

    l->items = json_object_new_array_ext((int)(total ? total : 1));
    l->map = hashmap_new();
    l->routes = total ? calloc(total, sizeof(*l->routes)) : NULL;
    if (!l->items || !l->map || (total && !l->routes))
        goto out;
    if (k == CATALOG_TOOLS || k == CATALOG_PROMPTS) {
        names = naming_set_new();
        if (!names)
            goto out;
    }
    for (size_t i = 0; i < n; i++) {
        r = build_source(c, k, v[i], l, total, names, warn);
        if (r < 0)
            goto out;
    }
    r = 0;
out:
    naming_set_free(names);
    return r;
}

/* ---- the catalogue ----------------------------------------------------------------------- */

int catalog_new(struct log *log, struct catalog **ret)
{
    struct catalog *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->log = log;
    c->prefix = MCP_TOOL_PREFIX_MCP;
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++) {
        c->lists[k].items = json_object_new_array();
        if (!c->lists[k].items) {
            catalog_free(c);
            return -ENOMEM;
        }
    }
    *ret = c;
    return 0;
}

void catalog_free(struct catalog *c)
{
    if (!c)
        return;
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        list_release(&c->lists[k]);
    free(c);
}

void catalog_configure(struct catalog *c, const struct mcp_config *config)
{
    c->prefix = server_config_tool_prefix(config);
}

const char *catalog_naming_desc(const struct catalog *c)
{
    return PREFIX_DESC[c->prefix];
}

/* The collisions, one log line each. */
static void log_lines(struct log *log, const char *w)
{
    while (*w) {
        const char *nl = strchr(w, '\n');
        int len = nl ? (int)(nl - w) : (int)strlen(w);
        log_warn(log, "%.*s", len, w);
        w += len + (nl ? 1 : 0);
    }
}

int catalog_rebuild(struct catalog *c, enum catalog_kind k, struct catalog_source *const *v,
                    size_t n, bool tell)
{
    struct list l = {0};
    struct buf warn;
    buf_init(&warn, 64 * 1024);
    if (build(c, k, v, n, &l, &warn) < 0) {
        log_error(c->log, "cannot build the list of %ss: out of memory", CATALOG_KINDS[k].noun);
        list_release(&l);
        buf_release(&warn);
        return -ENOMEM;
    }
    bool changed = !json_object_equal(l.items, c->lists[k].items);
    list_release(&c->lists[k]);
    c->lists[k] = l;
    if (changed) {
        /* collisions are logged when the list they are in changes, not at every rebuild */
        log_lines(c->log, buf_str(&warn));
        log_debug(c->log, "%ss: %zu exposed", CATALOG_KINDS[k].noun, c->lists[k].n_routes);
        if (tell && c->listed[k])
            c->due[k] = true;
    }
    buf_release(&warn);
    return changed;
}

struct json_object *catalog_items(const struct catalog *c, enum catalog_kind k)
{
    return c->lists[k].items;
}

size_t catalog_count(const struct catalog *c, enum catalog_kind k)
{
    return c->lists[k].n_routes;
}

void catalog_mark_listed(struct catalog *c, enum catalog_kind k)
{
    c->listed[k] = true;
}

void catalog_announce(struct catalog *c, bool tell, void (*notify)(const char *method, void *ud),
                      void *ud)
{
    bool resources = false;
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++) {
        if (!c->due[k])
            continue;
        c->due[k] = false;
        if (!tell)
            continue;
        if (k == CATALOG_RESOURCES || k == CATALOG_TEMPLATES) {
            if (resources)
                continue;
            resources = true;
        }
        notify(CATALOG_KINDS[k].changed, ud);
    }
}

struct catalog_source *catalog_find(const struct catalog *c, enum catalog_kind k, const char *key,
                                    const char **ret_orig)
{
    const struct route *rt = c->lists[k].map && key ? hashmap_get(c->lists[k].map, key) : NULL;
    if (!rt)
        return NULL;
    if (ret_orig)
        *ret_orig = rt->orig;
    return rt->src;
}

struct catalog_source *catalog_route_uri(const struct catalog *c, const char *uri)
{
    struct catalog_source *src = catalog_find(c, CATALOG_RESOURCES, uri, NULL);
    if (src)
        return src;
    const struct list *t = &c->lists[CATALOG_TEMPLATES];
    size_t best_len = 0;
    for (size_t i = 0; i < t->n_routes; i++) {
        size_t plen = strcspn(t->routes[i].orig, "{");
        if (plen > best_len && strncmp(uri, t->routes[i].orig, plen) == 0) {
            src = t->routes[i].src;
            best_len = plen;
        }
    }
    return src;
}

const char *catalog_unprefix(const struct catalog *c, const char *server, const char *exposed)
{
    char pre[NAMING_MAX + 1];
    naming_expose(c->prefix, server, "", pre);
    size_t n = strlen(pre);
    if (strncmp(exposed, pre, n) != 0 || !exposed[n])
        return NULL;
    return exposed + n;
}
