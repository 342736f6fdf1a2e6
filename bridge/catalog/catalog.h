/* catalog.h - what the agent sees of the servers in aggregate mode: the exposed lists.
 *
 * A catalogue holds, per kind (tools, prompts, resources, resource templates), the array the
 * agent is given for that kind's list request and a map from each exposed name (tools,
 * prompts) or URI (resources, templates) to the server that listed it and the name or URI that
 * server knows. It is built from sources, one per server, each keeping the server's name, its
 * excludeTools, directTools and exposeResources and the lists the server gave, as it gave them.
 * Rebuilding one kind walks the sources in the order given (the configuration's), names tools
 * and prompts (config/naming.h), leaves excluded tools out and keeps the first of equal URIs;
 * it is done whenever a list of a server changes, never per call, and a lookup is one hash.
 *
 * Every tool of every source is routable (tools/call by its exposed name, and the proxy tool of
 * proxy.h), but the tools list holds the proxy tool first and then only the direct tools
 * (catalog_items()). The catalogue also remembers which lists the agent has been given and
 * which of those changed since it was last told (catalog_announce()).
 *
 * This module knows neither the loop, the upstreams nor the downstream: the caller lists the
 * servers and feeds the answers in (catalog_source_set_items). Not thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "credkit/log.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

#include "config/server_config.h"

enum catalog_kind {
    CATALOG_TOOLS,
    CATALOG_PROMPTS,
    CATALOG_RESOURCES,
    CATALOG_TEMPLATES,
    CATALOG_N_KINDS,
};

struct catalog_kind_info {
    const char *method;  /* the list request: "tools/list" */
    const char *key;     /* the array in its result: "tools" */
    const char *cap;     /* the server capability that offers it: "tools" */
    const char *changed; /* the notification telling the agent */
    const char *noun;    /* for messages: "tool" */
};

extern const struct catalog_kind_info CATALOG_KINDS[CATALOG_N_KINDS];

/* The kind whose list request method is, or -1. */
int catalog_kind_of(const char *method);

struct catalog;
struct catalog_source;

/* ---- sources ----------------------------------------------------------------------------- */

/* A source named name (copied) leaving out the tools named in exclude (a NULL-terminated
 * vector of raw or exposed names or globs, copied; NULL: none), with no lists yet, named with
 * the catalogue's prefix. userdata is the
 * caller's, given back by catalog_find() and catalog_route_uri(). 0 or -ENOMEM. Free with
 * catalog_source_free(). */
int catalog_source_new(const char *name, char *const *exclude, void *userdata,
                       struct catalog_source **ret) _must_check_;

/* The same for a configuration entry: its name, toolPrefix, includeTools, excludeTools,
 * directTools and exposeResources. */
int catalog_source_from_entry(const struct mcp_server *entry, void *userdata,
                              struct catalog_source **ret) _must_check_;

/* NULL is fine. The catalogue must be rebuilt without the source before (its routes point at
 * it). */
void catalog_source_free(struct catalog_source *src);

/* Which of the source's tools are listed directly (its "directTools"): SERVER_DIRECT_UNSET
 * (settings.directTools decides), _NONE, _ALL, or _LIST with tools (a NULL-terminated vector
 * of raw or exposed names, copied). 0 or -ENOMEM (unchanged). At the next rebuild. */
int catalog_source_set_direct(struct catalog_source *src, enum server_direct direct,
                              char *const *tools) _must_check_;
/* Only the tools include names are kept (a NULL-terminated vector of raw or exposed names or
 * globs, copied; NULL: every tool, the default); excludeTools applies after it. 0 or -ENOMEM
 * (unchanged). At the next rebuild. */
int catalog_source_set_include(struct catalog_source *src, char *const *include) _must_check_;
/* The source's own toolPrefix (an enum mcp_tool_prefix; -1: the catalogue's, the default). At
 * the next rebuild. */
void catalog_source_set_prefix(struct catalog_source *src, int prefix);

/* Whether the source's resources get read tools too ("exposeResources"): per resource, a tool
 * named as the source's tool "resource_<uri>" would be, that reads it. At the next rebuild of
 * its tools or resources. */
void catalog_source_set_expose_resources(struct catalog_source *src, bool on);

/* The source's searchKeywords ({"tool name or glob": ["keyword", ...]}, a reference is taken;
 * NULL: none): more words the proxy tool's search finds its tools by. */
void catalog_source_set_keywords(struct catalog_source *src, struct json_object *keywords);

/* Whether the proxy tool's search should find tool t by its source's searchKeywords: match
 * says yes to one of the keywords given to the entries that name t (its raw or exposed name,
 * or a glob of either). */
struct catalog_tool;
bool catalog_tool_keywords_match(const struct catalog_tool *t,
                                 bool (*match)(const char *keyword, const void *ud),
                                 const void *ud);

/* Whether the source has includeTools or excludeTools, and whether they leave out the tool
 * raw (matched by that name, or by the name the source's prefix would give it). For single
 * mode, whose lists pass through. */
bool catalog_source_has_exclude(const struct catalog_source *src);
bool catalog_excluded(const struct catalog *c, const struct catalog_source *src, const char *raw);

const char *catalog_source_name(const struct catalog_source *src); /* borrowed */
void *catalog_source_userdata(const struct catalog_source *src);

/* Sets the server's list of kind k: items (an array) is taken (owned by the source now), NULL
 * means it has none. The catalogue changes only at the next catalog_rebuild(). */
void catalog_source_set_items(struct catalog_source *src, enum catalog_kind k,
                              struct json_object *items);

/* The server's list of kind k as it gave it (borrowed), or NULL when it has none. */
struct json_object *catalog_source_items(const struct catalog_source *src, enum catalog_kind k);

/* ---- the catalogue ----------------------------------------------------------------------- */

/* An empty catalogue (every list empty, none given to the agent); log is borrowed, for the
 * collisions and allocation failures of rebuilds. 0 or -ENOMEM. Free with catalog_free(). */
int catalog_new(struct log *log, struct catalog **ret) _must_check_;

/* Frees the catalogue, not the sources. NULL is fine. */
void catalog_free(struct catalog *c);

/* Who reads the tools list. CATALOG_FOR_AGENT (the default) is an agent that shows the tools
 * as they are listed. CATALOG_FOR_PI_ADAPTER is pi-mcp-adapter (serve --agent pi), which puts
 * its own entry's prefix before every name (none with its "toolPrefix": "none"), brings its own
 * proxy tool "mcp" and chooses itself which tools pi sees directly: so the names default to
 * "<server>_<tool>" (its default toolPrefix, "server"; settings.toolPrefix and an entry's
 * still choose), there is no proxy tool of the bridge, and every tool is listed (directTools
 * and MCP_DIRECT_TOOLS are the adapter's to apply). Before catalog_configure(). */
enum catalog_audience {
    CATALOG_FOR_AGENT,
    CATALOG_FOR_PI_ADAPTER,
};
void catalog_set_audience(struct catalog *c, enum catalog_audience audience);

/* Takes the configuration's naming and tool settings (settings.toolPrefix, directTools,
 * disableProxyTool). The catalogue changes at the next rebuild; a tools list never built yet
 * is built now (the proxy tool alone). Before this, every tool is direct and there is no
 * proxy tool. */
void catalog_configure(struct catalog *c, const struct mcp_config *config);

/* MCP_DIRECT_TOOLS (catalog_new() reads the environment's): a comma-separated list of server
 * names and server/tool (raw or exposed name); "__none__" among them: no direct tools; NULL
 * or only blanks: not set. 0 or -ENOMEM (unchanged). At the next rebuild. */
int catalog_set_direct_override(struct catalog *c, const char *spec) _must_check_;

/* Whether the proxy tool "mcp" is listed (and answered). */
bool catalog_proxy_enabled(const struct catalog *c);

/* How names are formed, for the agent's instructions: "mcp_<server>_<name>",
 * "<server>_<name>", "<server without -mcp>_<name>" or "<name>" (static). */
const char *catalog_naming_desc(const struct catalog *c);

/* Rebuilds kind k from the n sources v (borrowed; in this order; the same source twice is not
 * allowed). When the exposed list differs from the one before, the collisions in it are
 * logged at warn and, when the agent has been given the list and tell is true, it is due to be
 * announced. 1 when it changed, 0 when not, -ENOMEM (logged; the catalogue is as before). */
int catalog_rebuild(struct catalog *c, enum catalog_kind k, struct catalog_source *const *v,
                    size_t n, bool tell);

/* The exposed array of kind k (borrowed, valid until the next rebuild of k; never NULL) and
 * its length. A rebuild of resources rebuilds the tools too when a source has
 * exposeResources. The tools list is the proxy tool "mcp" first (unless
 * settings.disableProxyTool), then the direct tools: by default every tool
 * (settings.directTools true); with settings.directTools false only those the entry's
 * directTools names (true: all of that server's; a list: those raw or exposed names;
 * "search", the entry's or the settings': those a search found, catalog_tool_found());
 * MCP_DIRECT_TOOLS ("server,server/tool", "__none__": none) overrides both. With no proxy tool
 * and no direct tool at all, every tool is listed (with a warning). A tool whose exposed name
 * is "mcp" while the proxy tool is on is left out (with a warning). */
struct json_object *catalog_items(const struct catalog *c, enum catalog_kind k);
size_t catalog_count(const struct catalog *c, enum catalog_kind k);

/* The agent has been given list k: its changes are announced from now on. */
void catalog_mark_listed(struct catalog *c, enum catalog_kind k);

/* Tells of the lists that are due, one notification method each (resources and templates
 * share "notifications/resources/list_changed"), in kind order, through notify, and clears
 * them; with tell false they are cleared without a word. So the agent hears of a change only
 * in a list it has been given, and a round of changes gives one notification per list. */
void catalog_announce(struct catalog *c, bool tell, void (*notify)(const char *method, void *ud),
                      void *ud);

/* The source of the exposed name (tools, prompts) or URI (resources, templates) key of kind k,
 * or NULL (also for a NULL key); *ret_orig (may be NULL) gets the name or URI the server knows
 * (borrowed, valid until the next rebuild of k). */
struct catalog_source *catalog_find(const struct catalog *c, enum catalog_kind k, const char *key,
                                    const char **ret_orig);

/* One routable tool (borrowed, valid until the next rebuild of tools). */
struct catalog_tool {
    struct catalog_source *src;
    const char *name;         /* exposed */
    const char *orig;         /* the server's name for it; for a resource tool the URI */
    struct json_object *item; /* the Tool object as the agent sees it */
    bool direct;              /* in the tools list */
    bool held;                /* not in it until a search finds it (directTools "search") */
    bool resource;            /* a read tool of the resource orig (resources/read) */
};

/* A search found the held tool of exposed name name: it is listed from the next rebuild of
 * tools on, for as long as its source lives. 1 when it was held, 0 when not (not held, already
 * found, no such tool), -ENOMEM. */
int catalog_tool_found(struct catalog *c, const char *name) _must_check_;

/* The routable tool of exposed name name (NULL: none) into *ret (may be NULL); false when
 * none. */
bool catalog_tool_find(const struct catalog *c, const char *name, struct catalog_tool *ret);
/* Every routable tool, in the order built (the sources', then each one's list): count, and
 * the one at i (< count). */
size_t catalog_tool_count(const struct catalog *c);
void catalog_tool_at(const struct catalog *c, size_t i, struct catalog_tool *ret);

/* For a tool name the catalogue does not list: the part after the exposed-name prefix of server
 * (its entry's toolPrefix as catalog_configure() read it, else settings.toolPrefix; the name the
 * server would know it by, borrowed from exposed), or NULL when exposed does not start with
 * that prefix. For a server whose tools are not known yet (a sign-in is needed). */
const char *catalog_unprefix(const struct catalog *c, const char *server, const char *exposed);

/* The source a resource URI belongs to: the one that listed it, else the one whose template's
 * literal prefix (up to its first '{') matches longest (the first of equal ones); NULL when
 * neither. */
struct catalog_source *catalog_route_uri(const struct catalog *c, const char *uri);
