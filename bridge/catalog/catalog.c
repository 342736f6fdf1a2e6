/* catalog.c - the exposed lists of aggregate mode and their routes (catalog.h). */
#include <errno.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/hashmap.h"
#include "credkit/json.h"
#include "credkit/mcp_field.h"
#include "credkit/strv.h"

#include "catalog/catalog.h"
#include "config/naming.h"
#include "catalog/proxy.h"
#include "config/server_config.h"

#define RESOURCE_TOOL_PREFIX "resource_"
#define DIRECT_ENV           "MCP_DIRECT_TOOLS"
#define DIRECT_ENV_NONE      "__none__"

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
    [MCP_TOOL_PREFIX_SHORT] = "<server without -mcp>_<name>",
    [MCP_TOOL_PREFIX_NONE] = "<name>",
};

struct catalog_source {
    char *name;
    int prefix;                                 /* its toolPrefix; -1: the catalogue's */
    bool include_set;                           /* includeTools given: only what it names */
    struct strv include;                        /* includeTools: names or globs */
    struct strv exclude;                        /* excludeTools: names or globs */
    bool filters_checked;                       /* patterns matching nothing were logged */
    enum server_direct direct;                  /* directTools */
    struct strv direct_tools;                   /* SERVER_DIRECT_LIST: raw or exposed names */
    struct strv found;                          /* held tools a search found: listed now */
    struct json_object *keywords;               /* searchKeywords (a reference); NULL: none */
    bool expose_resources;                      /* exposeResources: read tools too */
    struct json_object *items[CATALOG_N_KINDS]; /* as the server gave them; NULL: none */
    void *userdata;
};

/* Where an exposed tool, prompt, resource or template goes. */
struct route {
    struct catalog_source *src;
    struct json_object *item;    /* the server's own item (reference), which orig points into */
    const char *orig;            /* the name (tools, prompts), uri or uriTemplate it knows */
    struct json_object *exposed; /* tools: the Tool object the agent sees (reference) */
    bool direct;                 /* tools: listed in tools/list */
    bool held;                   /* tools: not listed until a search finds it */
    bool resource;               /* tools: a read tool of the resource orig */
};

/* MCP_DIRECT_TOOLS: "server,server/tool" or "__none__" */
struct direct_override {
    bool set;
    bool none;
    struct strv servers; /* whole servers */
    struct strv tools;   /* "server/tool" as written */
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
    /* the entries' own toolPrefix, by server name: the prefix + 1 as a pointer (absent: the
     * catalogue's), for servers whose tools are not known yet (catalog_unprefix()) */
    struct hashmap *entry_prefix;
    bool direct_default; /* settings.directTools */
    bool direct_search;  /* settings.directTools is "search" */
    bool proxy;          /* the proxy tool is listed (not settings.disableProxyTool) */
    enum catalog_audience audience;
    struct direct_override override;
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
    src->direct = SERVER_DIRECT_UNSET;
    src->prefix = -1;
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
    struct catalog_source *src = NULL;
    r = catalog_source_new(entry->name, sc.exclude_tools, userdata, &src);
    if (r >= 0 && sc.include_tools)
        r = catalog_source_set_include(src, sc.include_tools);
    if (r >= 0) {
        catalog_source_set_prefix(src, sc.tool_prefix);
        r = catalog_source_set_direct(src, sc.direct, sc.direct_tools);
    }
    if (r >= 0) {
        catalog_source_set_expose_resources(src, sc.expose_resources > 0);
        catalog_source_set_keywords(src, sc.search_keywords);
        *ret = src;
        src = NULL;
    }
    catalog_source_free(src);
    server_config_release(&sc);
    return r;
}

int catalog_source_set_direct(struct catalog_source *src, enum server_direct direct,
                              char *const *tools)
{
    struct strv v = STRV_INIT;
    for (size_t i = 0; direct == SERVER_DIRECT_LIST && tools && tools[i]; i++) {
        if (strv_push(&v, tools[i]) < 0) {
            strv_release(&v);
            return -ENOMEM;
        }
    }
    strv_release(&src->direct_tools);
    src->direct_tools = v;
    src->direct = direct;
    return 0;
}

int catalog_source_set_include(struct catalog_source *src, char *const *include)
{
    struct strv v = STRV_INIT;
    for (size_t i = 0; include && include[i]; i++) {
        if (strv_push(&v, include[i]) < 0) {
            strv_release(&v);
            return -ENOMEM;
        }
    }
    strv_release(&src->include);
    src->include = v;
    src->include_set = include != NULL;
    return 0;
}

void catalog_source_set_prefix(struct catalog_source *src, int prefix)
{
    src->prefix = prefix >= MCP_TOOL_PREFIX_MCP && prefix <= MCP_TOOL_PREFIX_NONE ? prefix : -1;
}

void catalog_source_set_expose_resources(struct catalog_source *src, bool on)
{
    src->expose_resources = on;
}

void catalog_source_free(struct catalog_source *src)
{
    if (!src)
        return;
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        json_object_put(src->items[k]);
    strv_release(&src->include);
    strv_release(&src->exclude);
    strv_release(&src->direct_tools);
    strv_release(&src->found);
    json_object_put(src->keywords);
    free(src->name);
    free(src);
}

bool catalog_source_has_exclude(const struct catalog_source *src)
{
    return src->exclude.n > 0 || src->include_set;
}

/* The prefix src's names are formed with. */
static enum mcp_tool_prefix prefix_of(const struct catalog *c, const struct catalog_source *src)
{
    return src->prefix >= 0 ? (enum mcp_tool_prefix)src->prefix : c->prefix;
}

/* Whether pattern (a name, or a glob of '*' and '?', as the adapter writes them) names the tool
 * raw, exposed as exposed. */
static bool pattern_matches(const char *pattern, const char *raw, const char *exposed)
{
    return strcmp(pattern, raw) == 0 || strcmp(pattern, exposed) == 0 ||
           fnmatch(pattern, raw, FNM_NOESCAPE) == 0 || fnmatch(pattern, exposed, FNM_NOESCAPE) == 0;
}

void catalog_source_set_keywords(struct catalog_source *src, struct json_object *keywords)
{
    json_object_put(src->keywords);
    src->keywords = json_object_get(keywords);
}

bool catalog_tool_keywords_match(const struct catalog_tool *t,
                                 bool (*match)(const char *keyword, const void *ud), const void *ud)
{
    if (!t->src->keywords || !json_object_is_type(t->src->keywords, json_type_object))
        return false;
    json_object_object_foreach(t->src->keywords, pattern, kws)
    {
        if (!pattern_matches(pattern, t->orig, t->name))
            continue;
        for (size_t i = 0; i < json_object_array_length(kws); i++) {
            struct json_object *k = json_object_array_get_idx(kws, i);
            if (json_object_is_type(k, json_type_string) && match(json_object_get_string(k), ud))
                return true;
        }
    }
    return false;
}

static bool any_matches(const struct strv *pats, const char *raw, const char *exposed)
{
    for (size_t i = 0; i < pats->n; i++)
        if (pattern_matches(pats->v[i], raw, exposed))
            return true;
    return false;
}

/* Whether src's includeTools and excludeTools (applied after) leave out its tool raw, exposed
 * as exposed. */
static bool filtered_out(const struct catalog_source *src, const char *raw, const char *exposed)
{
    if (src->include_set && !any_matches(&src->include, raw, exposed))
        return true;
    return any_matches(&src->exclude, raw, exposed);
}

bool catalog_excluded(const struct catalog *c, const struct catalog_source *src, const char *raw)
{
    if (!catalog_source_has_exclude(src))
        return false;
    char name[NAMING_MAX + 1];
    naming_expose(prefix_of(c, src), src->name, raw, name);
    return filtered_out(src, raw, name);
}

static const char *item_key(enum catalog_kind k, struct json_object *item);

/* Whether pattern names any tool (or resource read tool) of src. */
static bool pattern_used(const struct catalog *c, const struct catalog_source *src,
                         const char *pattern)
{
    struct json_object *arr = src->items[CATALOG_TOOLS];
    struct json_object *res = src->expose_resources ? src->items[CATALOG_RESOURCES] : NULL;
    size_t nt = arr ? json_object_array_length(arr) : 0;
    size_t nr = res ? json_object_array_length(res) : 0;
    char raw_buf[NAMING_MAX * 4 + sizeof(RESOURCE_TOOL_PREFIX)], name[NAMING_MAX + 1];
    for (size_t j = 0; j < nt + nr; j++) {
        bool resource = j >= nt;
        struct json_object *item =
            json_object_array_get_idx(resource ? res : arr, resource ? j - nt : j);
        const char *raw = item_key(resource ? CATALOG_RESOURCES : CATALOG_TOOLS, item);
        if (!raw)
            continue;
        if (resource) {
            (void)snprintf(raw_buf, sizeof(raw_buf), "%s%s", RESOURCE_TOOL_PREFIX, raw);
            raw = raw_buf;
        }
        naming_expose(prefix_of(c, src), src->name, raw, name);
        if (pattern_matches(pattern, raw, name))
            return true;
    }
    return false;
}

/* Once per source, at its first tools list: each pattern of includeTools and excludeTools that
 * names none of its tools is logged (a typo, or a name of another prefix mode). */
static void check_filters(const struct catalog *c, struct catalog_source *src)
{
    if (src->filters_checked || !src->items[CATALOG_TOOLS])
        return;
    src->filters_checked = true;
    const struct strv *lists[] = {&src->include, &src->exclude};
    static const char *const keys[] = {"includeTools", "excludeTools"};
    for (size_t k = 0; k < ELEMENTSOF(lists); k++)
        for (size_t i = 0; i < lists[k]->n; i++)
            if (!pattern_used(c, src, lists[k]->v[i]))
                log_warn(c->log,
                         "server '%s': \"%s\" '%s' names none of its tools (by the server's "
                         "name, the exposed name, or as a glob): check the spelling",
                         src->name, keys[k], lists[k]->v[i]);
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
    for (size_t i = 0; i < l->n_routes; i++) {
        json_object_put(l->routes[i].item);
        json_object_put(l->routes[i].exposed);
    }
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

/* Claims the exposed name in buf (naming_expose's) in names; a collision is written to warn
 * (one line). -ENOMEM. */
static int claim(enum catalog_kind k, const struct catalog_source *src, const char *orig,
                 struct naming_set *names, char name[static NAMING_MAX + 1], struct buf *warn)
{
    char wanted[NAMING_MAX + 1];
    memcpy(wanted, name, sizeof(wanted));
    int q = naming_set_claim(names, name);
    if (q < 0)
        return q;
    if (q > 0 &&
        buf_printf(warn, "%s '%s' of server '%s' is exposed as '%s': '%s' is taken by another\n",
                   CATALOG_KINDS[k].noun, orig, src->name, name, wanted) < 0) {
        /* the warning is cut short; the catalogue is what matters */
    }
    return 0;
}

/* Whether src's tool orig (exposed as exposed, before collisions) is listed directly:
 * MCP_DIRECT_TOOLS when set, else the entry's directTools, else settings.directTools. */
static bool is_direct(const struct catalog *c, const struct catalog_source *src, const char *orig,
                      const char *exposed)
{
    const struct direct_override *o = &c->override;
    if (c->audience == CATALOG_FOR_PI_ADAPTER)
        return true;
    if (o->set) {
        if (o->none)
            return false;
        if (strv_contains(&o->servers, src->name))
            return true;
        size_t n = strlen(src->name);
        for (size_t i = 0; i < o->tools.n; i++) {
            const char *t = o->tools.v[i];
            if (strncmp(t, src->name, n) == 0 && t[n] == '/' &&
                (strcmp(t + n + 1, orig) == 0 || strcmp(t + n + 1, exposed) == 0))
                return true;
        }
        return false;
    }
    switch (src->direct) {
    case SERVER_DIRECT_ALL:
        return true;
    case SERVER_DIRECT_NONE:
        return false;
    case SERVER_DIRECT_LIST:
        return strv_contains(&src->direct_tools, orig) ||
               strv_contains(&src->direct_tools, exposed);
    case SERVER_DIRECT_SEARCH:
        return strv_contains(&src->found, orig);
    case SERVER_DIRECT_UNSET:
    default:
        return c->direct_default || (c->direct_search && strv_contains(&src->found, orig));
    }
}

/* Whether src's tools are held back until a search finds them (directTools "search", the
 * entry's or the settings'; MCP_DIRECT_TOOLS decides alone when set; never for pi's adapter,
 * whose own entry chooses). */
static bool is_held(const struct catalog *c, const struct catalog_source *src)
{
    if (c->override.set || c->audience == CATALOG_FOR_PI_ADAPTER)
        return false;
    return src->direct == SERVER_DIRECT_SEARCH ||
           (src->direct == SERVER_DIRECT_UNSET && c->direct_search);
}

/* The tool that reads resource res (uri) of src, named name. NULL on ENOMEM. */
static struct json_object *resource_tool(const struct catalog_source *src, struct json_object *res,
                                         const char *uri, const char *name)
{
    struct buf desc;
    buf_init(&desc, 4096);
    const char *what = json_get_string(res, "description");
    if (!what)
        what = json_get_string(res, "title");
    if (!what)
        what = json_get_string(res, "name");
    const char *mime = json_get_string(res, "mimeType");
    int r = buf_printf(&desc, "Reads the resource %s of server '%s'%s%s%s%s%s", uri, src->name,
                       mime ? " (" : "", mime ? mime : "", mime ? ")" : "", what ? ": " : "",
                       what ? what : "");
    if (r == -E2BIG) {
        buf_reset(&desc);
        r = buf_printf(&desc, "Reads a resource of server '%s'", src->name);
    }
    struct json_object *o = json_object_new_object(), *schema = json_object_new_object();
    struct json_object *ann = json_object_new_object();
    if (r < 0 || !o || !schema || !ann ||
        json_object_object_add(schema, "type", json_object_new_string("object")) < 0 ||
        json_object_object_add(schema, "properties", json_object_new_object()) < 0 ||
        json_object_object_add(ann, "readOnlyHint", json_object_new_boolean(1)) < 0 ||
        json_object_object_add(o, "name", json_object_new_string(name)) < 0 ||
        json_object_object_add(o, "description", json_object_new_string(buf_str(&desc))) < 0 ||
        json_object_object_add(o, "inputSchema", schema) < 0) {
        json_object_put(schema);
        json_object_put(ann);
        json_object_put(o);
        buf_release(&desc);
        return NULL;
    }
    buf_release(&desc);
    if (json_object_object_add(o, "annotations", ann) < 0) {
        json_object_put(ann);
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* Adds a route for an exposed item (taken) of src; the item itself is referenced. */
static int add_route(struct list *l, struct catalog_source *src, struct json_object *item,
                     const char *orig, struct json_object *exposed, bool direct, bool resource)
{
    struct route *rt = &l->routes[l->n_routes++];
    rt->src = src;
    rt->item = json_object_get(item);
    rt->orig = orig;
    rt->exposed = exposed;
    rt->direct = direct;
    rt->resource = resource;
    /* names are unique by now */
    int r = hashmap_put(l->map, json_get_string(exposed, "name"), rt);
    return r == -EEXIST ? 0 : r;
}

/* Adds src's tools (and its resource read tools) to l, every one routable; which are listed
 * is decided once all are in. -ENOMEM. */
static int build_tools_of(const struct catalog *c, struct catalog_source *src, struct list *l,
                          size_t total, struct naming_set *names, struct buf *warn)
{
    struct json_object *arr = src->items[CATALOG_TOOLS];
    struct json_object *res = src->expose_resources ? src->items[CATALOG_RESOURCES] : NULL;
    size_t nt = arr ? json_object_array_length(arr) : 0;
    size_t nr = res ? json_object_array_length(res) : 0;
    char raw_buf[NAMING_MAX * 4 + sizeof(RESOURCE_TOOL_PREFIX)];
    check_filters(c, src);
    for (size_t j = 0; j < nt + nr && l->n_routes < total; j++) {
        bool resource = j >= nt;
        struct json_object *item =
            json_object_array_get_idx(resource ? res : arr, resource ? j - nt : j);
        const char *orig = item_key(resource ? CATALOG_RESOURCES : CATALOG_TOOLS, item);
        if (!orig)
            continue; /* not an object, or without its name: nothing the agent could use */
        const char *raw = orig;
        if (resource) {
            /* a URI is taken up to 256 bytes: the name is cut to NAMING_MAX anyway, its hash
             * over what is taken */
            (void)snprintf(raw_buf, sizeof(raw_buf), "%s%s", RESOURCE_TOOL_PREFIX, orig);
            raw = raw_buf;
        }
        char name[NAMING_MAX + 1];
        naming_expose(prefix_of(c, src), src->name, raw, name);
        if (filtered_out(src, raw, name))
            continue;
        if (c->proxy && strcmp(name, PROXY_TOOL_NAME) == 0) {
            if (buf_printf(warn,
                           "tool '%s' of server '%s' is left out: its name '%s' is the proxy "
                           "tool's (set settings.toolPrefix, or excludeTools)\n",
                           raw, src->name, name) < 0) {
                /* cut short */
            }
            continue;
        }
        bool direct = is_direct(c, src, raw, name);
        int r = claim(CATALOG_TOOLS, src, raw, names, name, warn);
        if (r < 0)
            return r;
        struct json_object *exposed =
            resource ? resource_tool(src, item, orig, name) : expose_item(item, orig, name);
        if (!exposed)
            return -ENOMEM;
        r = add_route(l, src, item, orig, exposed, direct, resource);
        if (r < 0)
            return r;
        l->routes[l->n_routes - 1].held = !direct && is_held(c, src);
    }
    return 0;
}

/* The tools list: the proxy tool first (when on), then the direct tools; every tool routable.
 * -ENOMEM. */
static int build_tools(const struct catalog *c, struct catalog_source *const *v, size_t n,
                       struct list *l, struct naming_set *names, size_t total, struct buf *warn)
{
    for (size_t i = 0; i < n; i++) {
        int r = build_tools_of(c, v[i], l, total, names, warn);
        if (r < 0)
            return r;
    }
    size_t n_direct = 0;
    for (size_t i = 0; i < l->n_routes; i++)
        n_direct += l->routes[i].direct;
    bool all = !c->proxy && n_direct == 0 && l->n_routes > 0;
    if (all && buf_printf(warn, "settings.disableProxyTool is set and no tool is direct "
                                "(directTools): every tool is listed\n") < 0) {
        /* cut short */
    }
    if (c->proxy) {
        struct json_object *def = proxy_tool_definition();
        if (!def || json_object_array_add(l->items, def) < 0) {
            json_object_put(def);
            return -ENOMEM;
        }
    }
    for (size_t i = 0; i < l->n_routes; i++) {
        struct route *rt = &l->routes[i];
        if (all)
            rt->direct = true;
        if (!rt->direct)
            continue;
        if (json_object_array_add(l->items, json_object_get(rt->exposed)) < 0) {
            json_object_put(rt->exposed);
            return -ENOMEM;
        }
    }
    return 0;
}

/* Adds src's items of kind k (not tools) to l (sized for total routes). -ENOMEM. */
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
            char name[NAMING_MAX + 1];
            naming_expose(prefix_of(c, src), src->name, orig, name);
            if (claim(k, src, orig, names, name, warn) < 0)
                return -ENOMEM;
            exposed = expose_item(item, orig, name);
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

    for (size_t i = 0; i < n; i++) {
        if (v[i]->items[k])
            total += json_object_array_length(v[i]->items[k]);
        if (k == CATALOG_TOOLS && v[i]->expose_resources && v[i]->items[CATALOG_RESOURCES])
            total += json_object_array_length(v[i]->items[CATALOG_RESOURCES]);
    }

    l->items = json_object_new_array_ext((int)(total ? total + 1 : 1));
    l->map = hashmap_new();
    l->routes = total ? calloc(total, sizeof(*l->routes)) : NULL;
    if (!l->items || !l->map || (total && !l->routes))
        goto out;
    if (k == CATALOG_TOOLS || k == CATALOG_PROMPTS) {
        names = naming_set_new();
        if (!names)
            goto out;
    }
    if (k == CATALOG_TOOLS) {
        r = build_tools(c, v, n, l, names, total, warn);
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
    c->direct_default = true; /* and no proxy tool, until catalog_configure() */
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++) {
        c->lists[k].items = json_object_new_array();
        if (!c->lists[k].items) {
            catalog_free(c);
            return -ENOMEM;
        }
    }
    /* read once, when the downstream is made: a reload does not change the environment */
    if (catalog_set_direct_override(c, getenv(DIRECT_ENV)) < 0) {
        catalog_free(c);
        return -ENOMEM;
    }
    *ret = c;
    return 0;
}

static void override_release(struct direct_override *o)
{
    strv_release(&o->servers);
    strv_release(&o->tools);
    *o = (struct direct_override){0};
}

int catalog_set_direct_override(struct catalog *c, const char *spec)
{
    struct direct_override o = {0};
    const char *p = spec;
    while (p && *p) {
        size_t len = strcspn(p, ",");
        const char *end = p + len;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        size_t n = (size_t)(end - p);
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n) {
            o.set = true;
            if (n == strlen(DIRECT_ENV_NONE) && memcmp(p, DIRECT_ENV_NONE, n) == 0)
                o.none = true;
            else if (strv_pushf(memchr(p, '/', n) ? &o.tools : &o.servers, "%.*s", (int)n, p) < 0) {
                override_release(&o);
                return -ENOMEM;
            }
        }
        p = *end ? end + 1 : end;
    }
    override_release(&c->override);
    c->override = o;
    return 0;
}

void catalog_free(struct catalog *c)
{
    if (!c)
        return;
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        list_release(&c->lists[k]);
    override_release(&c->override);
    hashmap_free(c->entry_prefix);
    free(c);
}

static void read_modes(struct catalog *c, const struct mcp_config *config)
{
    struct server_settings st;
    server_settings_get(config, &st);
    c->direct_default = st.direct_tools;
    c->direct_search = st.direct_search;
    c->proxy = !st.disable_proxy_tool;
}

/* The entries' own toolPrefix, by name; on ENOMEM none (the catalogue's prefix is used for
 * the servers not listed yet, as before). */
static void read_entry_prefixes(struct catalog *c, const struct mcp_config *config)
{
    hashmap_free(c->entry_prefix);
    c->entry_prefix = hashmap_new();
    for (size_t i = 0; c->entry_prefix && i < mcp_config_count(config); i++) {
        const struct mcp_server *s = mcp_config_at(config, i);
        struct server_config sc = SERVER_CONFIG_INIT;
        if (s->raw && server_config_parse(s->raw, &sc, NULL) >= 0 && sc.tool_prefix >= 0 &&
            hashmap_put(c->entry_prefix, s->name, (void *)(intptr_t)(sc.tool_prefix + 1)) < 0) {
            hashmap_free(c->entry_prefix);
            c->entry_prefix = NULL;
        }
        server_config_release(&sc);
    }
}

void catalog_set_audience(struct catalog *c, enum catalog_audience audience)
{
    c->audience = audience;
}

/* settings.toolPrefix, else the audience's default: "mcp" is the bridge's own, "server" the
 * adapter's (an invalid value, warned about at load time, counts as absent) */
static enum mcp_tool_prefix settings_prefix(const struct catalog *c,
                                            const struct mcp_config *config)
{
    enum mcp_tool_prefix p = server_config_tool_prefix(config);
    if (c->audience != CATALOG_FOR_PI_ADAPTER || p != MCP_TOOL_PREFIX_MCP)
        return p;
    struct json_object *v = mcp_field_member(mcp_config_settings(config), "toolPrefix");
    if (v && json_object_is_type(v, json_type_string) &&
        strcmp(json_object_get_string(v), "mcp") == 0)
        return p;
    return MCP_TOOL_PREFIX_SERVER;
}

void catalog_configure(struct catalog *c, const struct mcp_config *config)
{
    c->prefix = settings_prefix(c, config);
    read_entry_prefixes(c, config);
    read_modes(c, config);
    /* the adapter's own proxy tool is pi's: a second one would only confuse the model */
    if (c->audience == CATALOG_FOR_PI_ADAPTER)
        c->proxy = false;
    /* before any server has listed, the proxy tool is the list */
    if (!c->lists[CATALOG_TOOLS].map)
        (void)catalog_rebuild(c, CATALOG_TOOLS, NULL, 0, false); /* logs its failure */
}

bool catalog_proxy_enabled(const struct catalog *c)
{
    return c->proxy;
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

static int rebuild_one(struct catalog *c, enum catalog_kind k, struct catalog_source *const *v,
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
        log_debug(c->log, "%ss: %zu exposed", CATALOG_KINDS[k].noun, catalog_count(c, k));
        if (tell && c->listed[k])
            c->due[k] = true;
    }
    buf_release(&warn);
    return changed;
}

int catalog_rebuild(struct catalog *c, enum catalog_kind k, struct catalog_source *const *v,
                    size_t n, bool tell)
{
    int r = rebuild_one(c, k, v, n, tell);
    if (r < 0 || k != CATALOG_RESOURCES)
        return r;
    /* resource read tools follow their resources */
    for (size_t i = 0; i < n; i++) {
        if (v[i]->expose_resources) {
            int q = rebuild_one(c, CATALOG_TOOLS, v, n, tell);
            return q < 0 ? q : r || q;
        }
    }
    return r;
}

struct json_object *catalog_items(const struct catalog *c, enum catalog_kind k)
{
    return c->lists[k].items;
}

size_t catalog_count(const struct catalog *c, enum catalog_kind k)
{
    return json_object_array_length(c->lists[k].items);
}

static void tool_of(const struct route *rt, struct catalog_tool *ret)
{
    *ret = (struct catalog_tool){
        .src = rt->src,
        .name = json_get_string(rt->exposed, "name"),
        .orig = rt->orig,
        .item = rt->exposed,
        .direct = rt->direct,
        .held = rt->held,
        .resource = rt->resource,
    };
}

int catalog_tool_found(struct catalog *c, const char *name)
{
    const struct list *l = &c->lists[CATALOG_TOOLS];
    const struct route *rt = l->map && name ? hashmap_get(l->map, name) : NULL;
    if (!rt || !rt->held || strv_contains(&rt->src->found, rt->orig))
        return 0;
    int r = strv_push(&rt->src->found, rt->orig);
    return r < 0 ? r : 1;
}

bool catalog_tool_find(const struct catalog *c, const char *name, struct catalog_tool *ret)
{
    const struct list *l = &c->lists[CATALOG_TOOLS];
    const struct route *rt = l->map && name ? hashmap_get(l->map, name) : NULL;
    if (!rt)
        return false;
    if (ret)
        tool_of(rt, ret);
    return true;
}

size_t catalog_tool_count(const struct catalog *c)
{
    return c->lists[CATALOG_TOOLS].n_routes;
}

void catalog_tool_at(const struct catalog *c, size_t i, struct catalog_tool *ret)
{
    tool_of(&c->lists[CATALOG_TOOLS].routes[i], ret);
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
    intptr_t own = c->entry_prefix ? (intptr_t)hashmap_get(c->entry_prefix, server) : 0;
    enum mcp_tool_prefix prefix = own > 0 ? (enum mcp_tool_prefix)(own - 1) : c->prefix;
    /* no prefix: the name is the server's own (naming_expose() would name "" '_') */
    if (prefix == MCP_TOOL_PREFIX_NONE)
        return *exposed ? exposed : NULL;
    naming_expose(prefix, server, "", pre);
    size_t n = strlen(pre);
    if (strncmp(exposed, pre, n) != 0 || !exposed[n])
        return NULL;
    return exposed + n;
}
