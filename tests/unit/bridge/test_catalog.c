/* test_catalog.c - the exposed lists of aggregate mode, without a loop or upstreams: sources
 * fed by hand, rebuilt, looked up and announced; the tool modes (proxy tool, direct tools,
 * MCP_DIRECT_TOOLS), includeTools and excludeTools by raw and exposed name (under each entry's
 * toolPrefix) and by glob, resource read tools, the lists for pi-mcp-adapter. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "credkit/log.h"
#include "credkit/mcp_config.h"

#include "catalog/catalog.h"
#include "config/server_config.h"
#include "tests.h"

static struct log *test_log(const char *name, char path[static 4200])
{
    snprintf(path, 4200, "%s/%s", tests_tmpdir(), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        exit(2);
    }
    struct log *l = log_new("test_catalog", fd);
    if (!l)
        exit(2);
    log_set_level(l, LOG_DEBUG);
    return l;
}

static struct json_object *items(const char *json)
{
    struct json_object *o = json_tokener_parse(json);
    if (!o || !json_object_is_type(o, json_type_array)) {
        fprintf(stderr, "bad test list: %s\n", json);
        exit(2);
    }
    return o;
}

static struct catalog_source *source(const char *name, char *const *exclude, void *userdata)
{
    struct catalog_source *src = NULL;
    if (catalog_source_new(name, exclude, userdata, &src) < 0)
        exit(2);
    return src;
}

/* The names (or another string member) of the exposed list of kind k, comma-separated. */
static const char *names(const struct catalog *c, enum catalog_kind k, const char *field)
{
    static char out[2048];
    struct json_object *arr = catalog_items(c, k);
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        struct json_object *v;
        const char *s = json_object_object_get_ex(json_object_array_get_idx(arr, i), field, &v)
                            ? json_object_get_string(v)
                            : "?";
        len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s", i ? "," : "", s);
    }
    return out;
}

static void test_kinds(void)
{
    CHECK_INT(catalog_kind_of("tools/list"), CATALOG_TOOLS);
    CHECK_INT(catalog_kind_of("prompts/list"), CATALOG_PROMPTS);
    CHECK_INT(catalog_kind_of("resources/list"), CATALOG_RESOURCES);
    CHECK_INT(catalog_kind_of("resources/templates/list"), CATALOG_TEMPLATES);
    CHECK_INT(catalog_kind_of("tools/call"), -1);
    CHECK_STR(CATALOG_KINDS[CATALOG_TEMPLATES].key, "resourceTemplates");
    CHECK_STR(CATALOG_KINDS[CATALOG_TEMPLATES].changed, "notifications/resources/list_changed");
}

/* Names: the sources' order, the default prefix, collisions in order, exclusions, lookups. */
static void test_tools(void)
{
    char path[4200];
    struct log *l = test_log("catalog-tools.log", path);
    struct catalog *c = NULL;
    CHECK_INT(catalog_new(l, &c), 0);
    if (!c)
        return;
    CHECK_STR(catalog_naming_desc(c), "mcp_<server>_<name>");
    CHECK_INT(catalog_count(c, CATALOG_TOOLS), 0);
    CHECK_INT(json_object_array_length(catalog_items(c, CATALOG_TOOLS)), 0);

    int ua = 1, ub = 2;
    char *exclude[] = {"hidden", NULL};
    struct catalog_source *a = source("a", exclude, &ua), *b = source("b", NULL, &ub);
    CHECK_STR(catalog_source_name(a), "a");
    CHECK(catalog_source_userdata(b) == &ub);
    catalog_source_set_items(
        a, CATALOG_TOOLS,
        items("[{\"name\":\"x\",\"description\":\"ax\"},{\"name\":\"hidden\"},{\"title\":\"no "
              "name\"},{\"name\":\"y.z\"}]"));
    catalog_source_set_items(b, CATALOG_TOOLS, items("[{\"name\":\"x\"},{\"name\":\"hidden\"}]"));
    CHECK(catalog_source_items(a, CATALOG_TOOLS) != NULL);
    CHECK(catalog_source_items(a, CATALOG_PROMPTS) == NULL);

    /* given b first: b's tools come first */
    struct catalog_source *order[] = {b, a};
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, order, 2, true), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp_b_x,mcp_b_hidden,mcp_a_x,mcp_a_y_z");
    CHECK_INT(catalog_count(c, CATALOG_TOOLS), 4);
    /* the exposed item keeps every other member */
    struct json_object *ax = json_object_array_get_idx(catalog_items(c, CATALOG_TOOLS), 2);
    struct json_object *desc;
    CHECK(json_object_object_get_ex(ax, "description", &desc) &&
          strcmp(json_object_get_string(desc), "ax") == 0);

    const char *orig = NULL;
    CHECK(catalog_find(c, CATALOG_TOOLS, "mcp_a_y_z", &orig) == a);
    CHECK_STR(orig, "y.z");
    CHECK(catalog_find(c, CATALOG_TOOLS, "mcp_b_hidden", NULL) == b);
    CHECK(catalog_find(c, CATALOG_TOOLS, "mcp_a_hidden", NULL) == NULL);
    CHECK(catalog_find(c, CATALOG_TOOLS, "x", NULL) == NULL);
    CHECK(catalog_find(c, CATALOG_TOOLS, NULL, NULL) == NULL);
    CHECK(catalog_find(c, CATALOG_PROMPTS, "mcp_a_x", NULL) == NULL);

    /* the same again: unchanged */
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, order, 2, true), 0);

    /* a source without the list is left out; a source's list replaced */
    catalog_source_set_items(b, CATALOG_TOOLS, NULL);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, order, 2, true), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp_a_x,mcp_a_y_z");
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, NULL, 0, true), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "");
    CHECK(catalog_find(c, CATALOG_TOOLS, "mcp_a_x", NULL) == NULL);

    catalog_free(c);
    catalog_source_free(a);
    catalog_source_free(b);
    catalog_source_free(NULL);
    catalog_free(NULL);
    log_free(l);
}

/* settings.toolPrefix and excludeTools come from the configuration; collisions get "_2", "_3"
 * in order and are logged once, when the list changes. */
static void test_configured_collisions(void)
{
    char path[4200];
    struct log *l = test_log("catalog-collisions.log", path);
    struct json_object *root =
        json_tokener_parse("{\"settings\":{\"toolPrefix\":\"none\"},\"mcpServers\":{"
                           "\"one\":{\"command\":\"true\",\"excludeTools\":[\"secret\"]},"
                           "\"two\":{\"command\":\"true\"}}}");
    struct mcp_config_opts opts = {0};
    struct mcp_config *config = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(mcp_config_load_object(root, "test", &opts, &config, &e), 0);
    json_object_put(root);
    if (!config)
        return;
    CHECK_INT(mcp_config_count(config), 2);

    struct catalog *c = NULL;
    CHECK_INT(catalog_new(l, &c), 0);
    if (!c)
        return;
    catalog_configure(c, config);
    CHECK_STR(catalog_naming_desc(c), "<name>");
    struct catalog_source *one = NULL, *two = NULL;
    CHECK_INT(catalog_source_from_entry(mcp_config_find(config, "one"), NULL, &one), 0);
    CHECK_INT(catalog_source_from_entry(mcp_config_find(config, "two"), NULL, &two), 0);
    if (!one || !two)
        return;
    CHECK_STR(catalog_source_name(one), "one");
    catalog_source_set_items(
        one, CATALOG_TOOLS,
        items(
            "[{\"name\":\"run\"},{\"name\":\"secret\"},{\"name\":\"run_2\"},{\"name\":\"run\"}]"));
    catalog_source_set_items(two, CATALOG_TOOLS,
                             items("[{\"name\":\"run\"},{\"name\":\"secret\"}]"));
    catalog_source_set_items(one, CATALOG_PROMPTS, items("[{\"name\":\"run\"}]"));
    catalog_source_set_items(two, CATALOG_PROMPTS, items("[{\"name\":\"run\"}]"));
    struct catalog_source *v[] = {one, two};

    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    /* configured: the proxy tool first */
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,run,run_2,run_3,run_4,secret");
    const char *orig = NULL;
    CHECK(catalog_find(c, CATALOG_TOOLS, "run_3", &orig) == one);
    CHECK_STR(orig, "run");
    CHECK(catalog_find(c, CATALOG_TOOLS, "run_4", &orig) == two);
    CHECK_STR(orig, "run");
    CHECK(catalog_find(c, CATALOG_TOOLS, "secret", NULL) == two);
    /* prompts are a namespace of their own */
    CHECK_INT(catalog_rebuild(c, CATALOG_PROMPTS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_PROMPTS, "name"), "run,run_2");

    /* unchanged lists log nothing again */
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 0);
    catalog_free(c);
    log_free(l);
    CHECK_INT(tests_count_lines(path,
                                "tool 'run' of server 'one' is exposed as 'run_3': 'run' is taken "
                                "by another"),
              1);
    CHECK_INT(tests_count_lines(path, "tool 'run' of server 'two' is exposed as 'run_4'"), 1);
    CHECK_INT(tests_count_lines(path, "prompt 'run' of server 'two' is exposed as 'run_2'"), 1);
    CHECK_INT(tests_count_lines(path, "is exposed as"), 3);
    catalog_source_free(one);
    catalog_source_free(two);
    mcp_config_free(config);
}

/* Resources keep their URIs; the first of equal ones wins; templates route by prefix. */
static void test_resources(void)
{
    char path[4200];
    struct log *l = test_log("catalog-resources.log", path);
    struct catalog *c = NULL;
    CHECK_INT(catalog_new(l, &c), 0);
    if (!c)
        return;
    struct catalog_source *a = source("a", NULL, NULL), *b = source("b", NULL, NULL);
    catalog_source_set_items(a, CATALOG_RESOURCES,
                             items("[{\"uri\":\"file:///x\"},{\"name\":\"no uri\"}]"));
    catalog_source_set_items(b, CATALOG_RESOURCES,
                             items("[{\"uri\":\"file:///x\"},{\"uri\":\"file:///y\"}]"));
    catalog_source_set_items(a, CATALOG_TEMPLATES,
                             items("[{\"uriTemplate\":\"db://{table}\"},{\"uriTemplate\":"
                                   "\"{all}\"}]"));
    catalog_source_set_items(b, CATALOG_TEMPLATES,
                             items("[{\"uriTemplate\":\"db://users/{id}\"},{\"uriTemplate\":"
                                   "\"db://{x}\"}]"));
    struct catalog_source *v[] = {a, b};
    CHECK_INT(catalog_rebuild(c, CATALOG_RESOURCES, v, 2, true), 1);
    CHECK_INT(catalog_rebuild(c, CATALOG_TEMPLATES, v, 2, true), 1);
    CHECK_STR(names(c, CATALOG_RESOURCES, "uri"), "file:///x,file:///x,file:///y");
    CHECK_STR(names(c, CATALOG_TEMPLATES, "uriTemplate"),
              "db://{table},{all},db://users/{id},db://{x}");

    CHECK(catalog_find(c, CATALOG_RESOURCES, "file:///x", NULL) == a);
    CHECK(catalog_find(c, CATALOG_RESOURCES, "file:///y", NULL) == b);
    const char *orig = NULL;
    CHECK(catalog_find(c, CATALOG_TEMPLATES, "db://users/{id}", &orig) == b);
    CHECK_STR(orig, "db://users/{id}");

    CHECK(catalog_route_uri(c, "file:///y") == b);
    CHECK(catalog_route_uri(c, "file:///x") == a);
    CHECK(catalog_route_uri(c, "db://users/7") == b);        /* the longest literal prefix */
    CHECK(catalog_route_uri(c, "db://orders/7") == a);       /* the first of equal ones */
    CHECK(catalog_route_uri(c, "http://elsewhere") == NULL); /* "{all}" has no literal prefix */

    catalog_free(c);
    catalog_source_free(a);
    catalog_source_free(b);
    log_free(l);
}

static char told[8][64];
static int n_told;

static void record(const char *method, void *ud)
{
    CHECK(ud == &n_told);
    if (n_told < 8)
        snprintf(told[n_told], sizeof(told[n_told]), "%s", method);
    n_told++;
}

/* Only lists the agent was given are announced, once per round, resources and templates in
 * one notification, and nothing when told not to. */
static void test_announce(void)
{
    char path[4200];
    struct log *l = test_log("catalog-announce.log", path);
    struct catalog *c = NULL;
    CHECK_INT(catalog_new(l, &c), 0);
    if (!c)
        return;
    struct catalog_source *a = source("a", NULL, NULL);
    struct catalog_source *v[] = {a};

    /* not listed yet: a change is not due */
    catalog_source_set_items(a, CATALOG_TOOLS, items("[{\"name\":\"t\"}]"));
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 1, true), 1);
    n_told = 0;
    catalog_announce(c, true, record, &n_told);
    CHECK_INT(n_told, 0);

    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        catalog_mark_listed(c, k);
    catalog_source_set_items(a, CATALOG_TOOLS, items("[{\"name\":\"t\"},{\"name\":\"u\"}]"));
    catalog_source_set_items(a, CATALOG_RESOURCES, items("[{\"uri\":\"r:1\"}]"));
    catalog_source_set_items(a, CATALOG_TEMPLATES, items("[{\"uriTemplate\":\"r:{n}\"}]"));
    for (enum catalog_kind k = 0; k < CATALOG_N_KINDS; k++)
        CHECK_INT(catalog_rebuild(c, k, v, 1, true), k != CATALOG_PROMPTS);
    /* the same changes again before the announcement: still one each */
    catalog_source_set_items(a, CATALOG_TOOLS, items("[{\"name\":\"t\"}]"));
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 1, true), 1);
    n_told = 0;
    catalog_announce(c, true, record, &n_told);
    CHECK_INT(n_told, 2);
    CHECK_STR(told[0], "notifications/tools/list_changed");
    CHECK_STR(told[1], "notifications/resources/list_changed");
    n_told = 0;
    catalog_announce(c, true, record, &n_told);
    CHECK_INT(n_told, 0);

    /* a change with tell false (not initialized, shutting down) is never due */
    catalog_source_set_items(a, CATALOG_PROMPTS, items("[{\"name\":\"p\"}]"));
    CHECK_INT(catalog_rebuild(c, CATALOG_PROMPTS, v, 1, false), 1);
    catalog_announce(c, true, record, &n_told);
    CHECK_INT(n_told, 0);
    /* one that was due is dropped by an announcement with tell false */
    catalog_source_set_items(a, CATALOG_PROMPTS, NULL);
    CHECK_INT(catalog_rebuild(c, CATALOG_PROMPTS, v, 1, true), 1);
    catalog_announce(c, false, record, &n_told);
    catalog_announce(c, true, record, &n_told);
    CHECK_INT(n_told, 0);

    catalog_free(c);
    catalog_source_free(a);
    log_free(l);
}

/* The tool modes as the bridge takes them, from the configuration's settings: directTools,
 * disableProxyTool and toolPrefix ("none" or NULL: the default). */
static void configure_modes(struct catalog *c, const char *prefix, bool direct, bool proxy)
{
    char text[256];
    snprintf(text, sizeof(text),
             "{\"settings\":{%s%s%s\"directTools\":%s,\"disableProxyTool\":%s},"
             "\"mcpServers\":{}}",
             prefix ? "\"toolPrefix\":\"" : "", prefix ? prefix : "", prefix ? "\"," : "",
             direct ? "true" : "false", proxy ? "false" : "true");
    struct json_object *root = json_tokener_parse(text);
    struct mcp_config *config = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(mcp_config_load_object(root, "test", &(struct mcp_config_opts){0}, &config, &e), 0);
    json_object_put(root);
    if (!config)
        return;
    catalog_configure(c, config);
    mcp_config_free(config);
}

/* The tool modes: the proxy tool first, direct tools by settings, entry and MCP_DIRECT_TOOLS,
 * every tool routable, a tool named like the proxy left out, disableProxyTool with nothing
 * direct lists everything. */
static void test_direct_tools(void)
{
    char path[4200];
    struct log *l = test_log("catalog-direct.log", path);
    struct catalog *c = NULL;
    CHECK_INT(catalog_new(l, &c), 0);
    if (!c)
        return;
    CHECK(!catalog_proxy_enabled(c));
    struct catalog_source *a = source("a", NULL, NULL), *b = source("b", NULL, NULL);
    catalog_source_set_items(a, CATALOG_TOOLS, items("[{\"name\":\"x\"},{\"name\":\"y\"}]"));
    catalog_source_set_items(b, CATALOG_TOOLS, items("[{\"name\":\"x\"},{\"name\":\"z\"}]"));
    struct catalog_source *v[] = {a, b};

    /* the default: every tool, and the proxy tool first */
    configure_modes(c, NULL, true, true);
    CHECK(catalog_proxy_enabled(c));
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_a_x,mcp_a_y,mcp_b_x,mcp_b_z");
    CHECK_INT(catalog_count(c, CATALOG_TOOLS), 5);
    CHECK_INT(catalog_tool_count(c), 4);

    /* settings.directTools false: only the entries' */
    configure_modes(c, NULL, false, true);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp");
    struct catalog_tool t;
    CHECK(catalog_tool_find(c, "mcp_b_z", &t));
    CHECK(t.src == b && !t.direct && !t.resource);
    CHECK_STR(t.orig, "z");
    CHECK_STR(t.name, "mcp_b_z");
    const char *orig = NULL;
    CHECK(catalog_find(c, CATALOG_TOOLS, "mcp_a_y", &orig) == a); /* still routable */
    CHECK_STR(orig, "y");
    char *list[] = {"y", "mcp_b_z", NULL};
    CHECK_INT(catalog_source_set_direct(a, SERVER_DIRECT_LIST, list), 0);
    CHECK_INT(catalog_source_set_direct(b, SERVER_DIRECT_LIST, list), 0); /* exposed names too */
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_a_y,mcp_b_z");
    CHECK_INT(catalog_source_set_direct(b, SERVER_DIRECT_ALL, NULL), 0);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_a_y,mcp_b_x,mcp_b_z");
    /* an entry's false wins over the settings' true */
    configure_modes(c, NULL, true, true);
    CHECK_INT(catalog_source_set_direct(b, SERVER_DIRECT_NONE, NULL), 0);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_a_y");
    CHECK_INT(catalog_source_set_direct(a, SERVER_DIRECT_UNSET, NULL), 0);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_a_x,mcp_a_y");

    /* MCP_DIRECT_TOOLS overrides both: servers, server/tool (raw or exposed), blanks */
    CHECK_INT(catalog_set_direct_override(c, " b/z , a/mcp_a_x,,"), 0);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_a_x,mcp_b_z");
    CHECK_INT(catalog_set_direct_override(c, "b"), 0);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_b_x,mcp_b_z");
    CHECK_INT(catalog_set_direct_override(c, "b,__none__"), 0);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp");
    CHECK(catalog_tool_find(c, "mcp_a_x", NULL));
    /* ... with no proxy tool either: everything, with a warning */
    configure_modes(c, NULL, true, false);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp_a_x,mcp_a_y,mcp_b_x,mcp_b_z");
    CHECK_INT(catalog_set_direct_override(c, "  "), 0); /* blank: not set: the entries' */
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp_a_x,mcp_a_y");
    CHECK_INT(catalog_set_direct_override(c, NULL), 0);

    /* a tool exposed as "mcp" is left out while the proxy tool is on, not renamed */
    configure_modes(c, NULL, true, true);
    struct catalog_source *n = source("n", NULL, NULL);
    catalog_source_set_items(n, CATALOG_TOOLS, items("[{\"name\":\"mcp\"},{\"name\":\"w\"}]"));
    struct catalog_source *vn[] = {n};
    struct mcp_config *none = NULL;
    struct err e = ERR_INIT;
    struct json_object *root =
        json_tokener_parse("{\"settings\":{\"toolPrefix\":\"none\"},\"mcpServers\":{}}");
    CHECK_INT(mcp_config_load_object(root, "test", &(struct mcp_config_opts){0}, &none, &e), 0);
    json_object_put(root);
    catalog_configure(c, none);
    CHECK(catalog_proxy_enabled(c));
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, vn, 1, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,w");
    CHECK(!catalog_tool_find(c, "mcp", NULL));
    CHECK(!catalog_tool_find(c, "mcp_2", NULL));
    /* without the proxy tool it is a tool like any other */
    configure_modes(c, "none", true, false);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, vn, 1, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,w");
    CHECK(catalog_tool_find(c, "mcp", NULL));

    catalog_free(c);
    mcp_config_free(none);
    log_free(l);
    CHECK_INT(tests_count_lines(path,
                                "tool 'mcp' of server 'n' is left out: its name 'mcp' is the proxy "
                                "tool's"),
              1);
    CHECK_INT(tests_count_lines(path, "settings.disableProxyTool is set and no tool is direct"), 1);
    catalog_source_free(a);
    catalog_source_free(b);
    catalog_source_free(n);
}

/* directTools "search": the tools are held back, routable, until a search finds them; then
 * listed for as long as the source lives, also through the settings' "search". */
static void test_direct_search(void)
{
    char path[4200];
    struct log *l = test_log("catalog-search.log", path);
    struct catalog *c = NULL;
    CHECK_INT(catalog_new(l, &c), 0);
    if (!c)
        return;
    struct catalog_source *a = source("a", NULL, NULL), *b = source("b", NULL, NULL);
    catalog_source_set_items(a, CATALOG_TOOLS, items("[{\"name\":\"x\"},{\"name\":\"y\"}]"));
    catalog_source_set_items(b, CATALOG_TOOLS, items("[{\"name\":\"z\"}]"));
    struct catalog_source *v[] = {a, b};
    configure_modes(c, NULL, true, true);
    CHECK_INT(catalog_source_set_direct(a, SERVER_DIRECT_SEARCH, NULL), 0);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_b_z");
    struct catalog_tool t;
    CHECK(catalog_tool_find(c, "mcp_a_y", &t) && t.held && !t.direct);
    CHECK(catalog_tool_find(c, "mcp_b_z", &t) && !t.held && t.direct);
    CHECK_INT(catalog_tool_found(c, "mcp_a_y"), 1);
    CHECK_INT(catalog_tool_found(c, "mcp_a_y"), 0); /* once */
    CHECK_INT(catalog_tool_found(c, "mcp_b_z"), 0); /* listed already */
    CHECK_INT(catalog_tool_found(c, "nope"), 0);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_b_z"); /* at the next rebuild */
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_a_y,mcp_b_z");
    CHECK(catalog_tool_find(c, "mcp_a_y", &t) && !t.held && t.direct);

    /* the settings' "search" holds every entry without directTools of its own */
    struct json_object *root =
        json_tokener_parse("{\"settings\":{\"directTools\":\"search\"},\"mcpServers\":{}}");
    struct mcp_config *config = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(mcp_config_load_object(root, "test", &(struct mcp_config_opts){0}, &config, &e), 0);
    json_object_put(root);
    if (config)
        catalog_configure(c, config);
    mcp_config_free(config);
    CHECK_INT(catalog_source_set_direct(a, SERVER_DIRECT_UNSET, NULL), 0);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_a_y"); /* found before, still listed */
    CHECK_INT(catalog_tool_found(c, "mcp_b_z"), 1);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,mcp_a_y,mcp_b_z");
    /* MCP_DIRECT_TOOLS decides alone: nothing is held */
    CHECK_INT(catalog_set_direct_override(c, "b"), 0);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK(catalog_tool_find(c, "mcp_a_x", &t) && !t.held && !t.direct);
    CHECK_INT(catalog_tool_found(c, "mcp_a_x"), 0);
    CHECK_INT(catalog_set_direct_override(c, NULL), 0);

    catalog_free(c);
    log_free(l);
    catalog_source_free(a);
    catalog_source_free(b);
}

/* excludeTools by raw or exposed name; the configuration's modes; resource read tools follow
 * their resources; a configured catalogue that never listed has the proxy tool alone. */
static void test_exclude_and_resources(void)
{
    char path[4200];
    struct log *l = test_log("catalog-exclude.log", path);
    struct json_object *root = json_tokener_parse(
        "{\"settings\":{\"toolPrefix\":\"short\",\"directTools\":false},\"mcpServers\":{"
        "\"gh-mcp\":{\"command\":\"true\",\"excludeTools\":[\"raw\",\"gh_exposed\"],"
        "\"directTools\":[\"keep\"]},"
        "\"docs\":{\"command\":\"true\",\"exposeResources\":true,\"directTools\":true}}}");
    struct mcp_config *config = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(mcp_config_load_object(root, "test", &(struct mcp_config_opts){0}, &config, &e), 0);
    json_object_put(root);
    if (!config)
        return;
    struct catalog *c = NULL;
    CHECK_INT(catalog_new(l, &c), 0);
    if (!c)
        return;
    catalog_configure(c, config);
    CHECK_STR(catalog_naming_desc(c), "<server without -mcp>_<name>");
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp");
    struct catalog_source *gh = NULL, *docs = NULL;
    CHECK_INT(catalog_source_from_entry(mcp_config_find(config, "gh-mcp"), NULL, &gh), 0);
    CHECK_INT(catalog_source_from_entry(mcp_config_find(config, "docs"), NULL, &docs), 0);
    if (!gh || !docs)
        return;
    CHECK(catalog_source_has_exclude(gh) && !catalog_source_has_exclude(docs));
    CHECK(catalog_excluded(c, gh, "raw") && catalog_excluded(c, gh, "exposed"));
    CHECK(!catalog_excluded(c, gh, "keep") && !catalog_excluded(c, docs, "raw"));
    catalog_source_set_items(gh, CATALOG_TOOLS,
                             items("[{\"name\":\"raw\"},{\"name\":\"exposed\"},{\"name\":\"keep\"},"
                                   "{\"name\":\"other\"}]"));
    catalog_source_set_items(docs, CATALOG_TOOLS, items("[{\"name\":\"find\"}]"));
    catalog_source_set_items(
        docs, CATALOG_RESOURCES,
        items("[{\"uri\":\"file:///a/readme.md\",\"name\":\"readme\",\"mimeType\":\"text/"
              "markdown\"},{\"uri\":\"x:y\",\"description\":\"second\"}]"));
    struct catalog_source *v[] = {gh, docs};
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"),
              "mcp,gh_keep,docs_find,docs_resource_file____a_readme_md,docs_resource_x_y");
    CHECK(!catalog_tool_find(c, "gh_raw", NULL) && !catalog_tool_find(c, "gh_exposed", NULL));
    struct catalog_tool t;
    CHECK(catalog_tool_find(c, "gh_other", &t) && !t.direct);
    CHECK(catalog_tool_find(c, "docs_resource_x_y", &t) && t.resource && t.direct);
    CHECK_STR(t.orig, "x:y");
    CHECK(t.src == docs);
    struct json_object *d;
    CHECK(json_object_object_get_ex(t.item, "description", &d) &&
          strcmp(json_object_get_string(d), "Reads the resource x:y of server 'docs': second") ==
              0);
    CHECK(catalog_tool_find(c, "docs_resource_file____a_readme_md", &t));
    CHECK(json_object_object_get_ex(t.item, "description", &d) &&
          strcmp(json_object_get_string(d), "Reads the resource file:///a/readme.md of server "
                                            "'docs' (text/markdown): readme") == 0);
    CHECK(json_object_object_get_ex(t.item, "inputSchema", &d) &&
          json_object_is_type(d, json_type_object));

    /* a rebuild of the resources brings their tools along */
    catalog_source_set_items(docs, CATALOG_RESOURCES, items("[{\"uri\":\"x:z\"}]"));
    CHECK_INT(catalog_rebuild(c, CATALOG_RESOURCES, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,gh_keep,docs_find,docs_resource_x_z");
    catalog_source_set_expose_resources(docs, false);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp,gh_keep,docs_find");

    catalog_free(c);
    catalog_source_free(gh);
    catalog_source_free(docs);
    mcp_config_free(config);
    log_free(l);
}

/* includeTools then excludeTools: raw names, exposed names under each entry's own toolPrefix
 * (server, short, mcp, none), globs; a pattern naming no tool logged once per server. */
static void test_filters(void)
{
    char path[4200];
    struct log *l = test_log("catalog-filters.log", path);
    struct json_object *root = json_tokener_parse(
        "{\"settings\":{\"toolPrefix\":\"server\",\"directTools\":true},\"mcpServers\":{"
        "\"figma\":{\"command\":\"true\",\"includeTools\":[\"get_*\",\"figma_list_apps\","
        "\"nothing_*\"],\"excludeTools\":[\"get_secret\",\"figma_get_code?map\"]},"
        "\"toggle-mcp\":{\"command\":\"true\",\"toolPrefix\":\"short\","
        "\"excludeTools\":[\"toggle-*\",\"toggle_off\",\"typo\"]},"
        "\"m\":{\"command\":\"true\",\"toolPrefix\":\"mcp\",\"excludeTools\":[\"mcp_m_x\"]},"
        "\"n\":{\"command\":\"true\",\"toolPrefix\":\"none\",\"excludeTools\":[\"?\"],"
        "\"exposeResources\":true,\"includeTools\":[\"z*\",\"resource_doc*\"]}}}");
    struct mcp_config *config = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(server_config_load_object(root, "test", NULL, &config, &e), 0);
    json_object_put(root);
    if (!config)
        return;
    struct catalog *c = NULL;
    CHECK_INT(catalog_new(l, &c), 0);
    if (!c)
        return;
    catalog_configure(c, config);
    static const char *const servers[] = {"figma", "toggle-mcp", "m", "n"};
    struct catalog_source *v[4] = {NULL};
    for (size_t i = 0; i < 4; i++)
        CHECK_INT(catalog_source_from_entry(mcp_config_find(config, servers[i]), NULL, &v[i]), 0);
    if (!v[0] || !v[1] || !v[2] || !v[3])
        return;
    catalog_source_set_items(v[0], CATALOG_TOOLS,
                             items("[{\"name\":\"get_screenshot\"},{\"name\":\"get_secret\"},"
                                   "{\"name\":\"get_code_map\"},{\"name\":\"list_apps\"},"
                                   "{\"name\":\"delete_app\"}]"));
    catalog_source_set_items(v[1], CATALOG_TOOLS,
                             items("[{\"name\":\"toggle-a\"},{\"name\":\"off\"},"
                                   "{\"name\":\"on\"}]"));
    catalog_source_set_items(v[2], CATALOG_TOOLS, items("[{\"name\":\"x\"},{\"name\":\"y\"}]"));
    catalog_source_set_items(v[3], CATALOG_TOOLS,
                             items("[{\"name\":\"z\"},{\"name\":\"zz\"},{\"name\":\"w\"}]"));
    catalog_source_set_items(v[3], CATALOG_RESOURCES,
                             items("[{\"uri\":\"doc:a\"},{\"uri\":\"img:b\"}]"));
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 4, false), 1);
    /* figma: included by glob and by exposed name, then excluded by raw name and exposed glob;
     * toggle-mcp (short): raw glob and exposed name; m (mcp): exposed name; n (none): "?" takes
     * the one-letter names, include keeps z* and the read tool of doc:a */
    CHECK_STR(names(c, CATALOG_TOOLS, "name"),
              "mcp,figma_get_screenshot,figma_list_apps,toggle_on,mcp_m_y,zz,resource_doc_a");
    CHECK(!catalog_tool_find(c, "figma_delete_app", NULL));
    CHECK(catalog_excluded(c, v[0], "delete_app") && catalog_excluded(c, v[0], "get_secret"));
    CHECK(!catalog_excluded(c, v[0], "get_screenshot"));
    CHECK(catalog_excluded(c, v[1], "off") && catalog_excluded(c, v[1], "toggle-b"));
    CHECK(catalog_excluded(c, v[2], "x") && !catalog_excluded(c, v[2], "y"));
    CHECK(catalog_source_has_exclude(v[3]));
    /* a server not listed yet (a sign-in): its own prefix, else the settings' */
    CHECK_STR(catalog_unprefix(c, "m", "mcp_m_x"), "x");
    CHECK_STR(catalog_unprefix(c, "toggle-mcp", "toggle_on"), "on");
    CHECK_STR(catalog_unprefix(c, "figma", "figma_get"), "get");
    CHECK_STR(catalog_unprefix(c, "n", "z"), "z");
    CHECK(catalog_unprefix(c, "m", "m_x") == NULL);
    /* listed again (the excluded tool gone: the exposed list is the same): the patterns that
     * name nothing are not logged twice */
    catalog_source_set_items(v[2], CATALOG_TOOLS, items("[{\"name\":\"y\"}]"));
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 4, false), 0);
    catalog_free(c);
    log_free(l);
    CHECK_INT(tests_count_lines(path, "server 'figma': \"includeTools\" 'nothing_*' names none "
                                      "of its tools"),
              1);
    CHECK_INT(tests_count_lines(path, "server 'toggle-mcp': \"excludeTools\" 'typo' names none"),
              1);
    CHECK_INT(tests_count_lines(path, "names none of its tools"), 2);
    for (size_t i = 0; i < 4; i++)
        catalog_source_free(v[i]);
    mcp_config_free(config);
}

/* For pi-mcp-adapter (serve --agent pi): "<server>_<tool>" unless settings.toolPrefix or an
 * entry's says otherwise, no proxy tool whatever disableProxyTool says, and every tool listed
 * whatever directTools and MCP_DIRECT_TOOLS say (the adapter applies its own). */
static void test_pi_adapter(void)
{
    char path[4200];
    struct log *l = test_log("catalog-pi.log", path);
    struct catalog *c = NULL;
    CHECK_INT(catalog_new(l, &c), 0);
    if (!c)
        return;
    struct catalog_source *a = source("a", NULL, NULL), *b = source("b-mcp", NULL, NULL);
    catalog_source_set_items(a, CATALOG_TOOLS, items("[{\"name\":\"x\"},{\"name\":\"mcp\"}]"));
    catalog_source_set_items(b, CATALOG_TOOLS, items("[{\"name\":\"z\"}]"));
    struct catalog_source *v[] = {a, b};
    catalog_set_audience(c, CATALOG_FOR_PI_ADAPTER);

    /* the bridge's defaults otherwise (mcp_ prefix, the proxy tool): the adapter's here */
    configure_modes(c, NULL, true, true);
    CHECK(!catalog_proxy_enabled(c));
    CHECK_STR(catalog_naming_desc(c), "<server>_<name>");
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "a_x,a_mcp,b-mcp_z");
    /* directTools false, an entry's false, MCP_DIRECT_TOOLS: still every tool */
    configure_modes(c, NULL, false, true);
    CHECK_INT(catalog_source_set_direct(b, SERVER_DIRECT_NONE, NULL), 0);
    CHECK_INT(catalog_set_direct_override(c, "a/x"), 0);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 0);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "a_x,a_mcp,b-mcp_z");
    CHECK_INT(catalog_set_direct_override(c, NULL), 0);
    /* a toolPrefix written in the settings is the user's choice, "mcp" too */
    configure_modes(c, "short", true, true);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "a_x,a_mcp,b_z");
    configure_modes(c, "mcp", true, true);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "mcp_a_x,mcp_a_mcp,mcp_b-mcp_z");
    CHECK(!catalog_proxy_enabled(c));
    /* and so is an entry's */
    catalog_source_set_prefix(a, MCP_TOOL_PREFIX_NONE);
    configure_modes(c, NULL, true, true);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 2, false), 1);
    CHECK_STR(names(c, CATALOG_TOOLS, "name"), "x,mcp,b-mcp_z");
    CHECK(catalog_tool_find(c, "mcp", NULL)); /* a tool like any other: no proxy tool */

    catalog_free(c);
    log_free(l);
    catalog_source_free(a);
    catalog_source_free(b);
}

TESTS_MAIN(test_kinds, test_filters, test_tools, test_configured_collisions, test_resources,
           test_announce, test_direct_tools, test_direct_search, test_exclude_and_resources,
           test_pi_adapter)
