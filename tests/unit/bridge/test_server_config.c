/* test_server_config.c - the bridge's own keys of the configuration: excludeTools, lifecycle,
 * idleTimeout in an entry, toolPrefix in the settings, and that loading through
 * server_config_load() makes an invalid one count as the generic keys do */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "credkit/mcp_config.h"

#include "mcp_fixture.h"
#include "server_config.h"

static struct mcp_config *load(void)
{
    struct mcp_config_opts o = {.cwd = P("home/proj")};
    struct err e = ERR_INIT;
    struct mcp_config *c = NULL;
    int r = server_config_load(&o, &c, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        fprintf(stderr, "load: %s\n", err_msg(&e));
    return c;
}

struct reject {
    const char *name;
    const char *entry; /* JSON, ' for " */
    const char *reason;
};

/* clang-format off: one rejection a line reads better than a wrapped table */
static const struct reject rejects[] = {
    {"r-idle", "{'command': 'x', 'idleTimeout': -1}",
     "\"idleTimeout\" must be a positive number of milliseconds, not -1"},
    {"r-idle-frac", "{'command': 'x', 'idleTimeout': 1.5}",
     "\"idleTimeout\" must be a whole number of milliseconds, not 1.5"},
    {"r-excl", "{'command': 'x', 'excludeTools': 'a'}",
     "\"excludeTools\" must be an array of strings, not a string"},
    {"r-excl-idx", "{'command': 'x', 'excludeTools': ['a', {}]}",
     "\"excludeTools\"[1] must be a string, not an object"},
    {"r-excl-null", "{'command': 'x', 'excludeTools': [null]}",
     "\"excludeTools\"[0] must be a string, not null"},
    {"r-life", "{'command': 'x', 'lifecycle': 1}", "\"lifecycle\" must be a string, not a number"},
    {"r-life-nul", "{'command': 'x', 'lifecycle': 'a\\u0000b'}",
     "\"lifecycle\" must not contain a NUL character"},
    {"r-auto", "{'url': 'https://x.example', 'autoAuth': 'yes'}",
     "\"autoAuth\" must be true or false, not a string"},
    {"r-auto-num", "{'url': 'https://x.example', 'autoAuth': 1}",
     "\"autoAuth\" must be true or false, not a number"},
};
/* clang-format on */

static void test_rejections(void)
{
    char text[16 * 1024];
    size_t o = 0;

    setup("sc-rejections");
    o += (size_t)snprintf(text + o, sizeof(text) - o, "{'mcpServers': {'ok': {'command': 'x'}");
    for (size_t i = 0; i < ELEMENTSOF(rejects); i++)
        o += (size_t)snprintf(text + o, sizeof(text) - o, ",\n'%s': %s", rejects[i].name,
                              rejects[i].entry);
    snprintf(text + o, sizeof(text) - o, "}}");
    CHECK(o < sizeof(text) - 8);
    put(USER, text);

    struct mcp_config *c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_diag_count(c), 0);
    CHECK_INT(mcp_config_count(c), ELEMENTSOF(rejects) + 1);
    const struct mcp_server *ok = mcp_config_find(c, "ok");
    CHECK(ok && !ok->error);
    for (size_t i = 0; i < ELEMENTSOF(rejects); i++) {
        const struct mcp_server *s = mcp_config_find(c, rejects[i].name);
        CHECK(s && s->error);
        if (!s || !s->error) {
            fprintf(stderr, "  entry '%s' missing or accepted\n", rejects[i].name);
            continue;
        }
        char prefix[256];
        snprintf(prefix, sizeof(prefix), "'~/.pi/agent/mcp.json': server '%s': ", rejects[i].name);
        CHECK(strncmp(s->error, prefix, strlen(prefix)) == 0);
        CHECK_CONTAINS(s->error, rejects[i].reason);
        for (const char *p = s->error; *p; p++)
            CHECK((unsigned char)*p >= 0x20);
        CHECK(s->missing_vars == NULL);
    }
    mcp_config_free(c);

    /* the generic loader alone leaves the bridge's keys to the bridge */
    struct mcp_config_opts opts = {.cwd = P("home/proj")};
    struct err e = ERR_INIT;
    c = NULL;
    CHECK_INT(mcp_config_load(&opts, &c, &e), 0);
    for (size_t i = 0; i < ELEMENTSOF(rejects); i++) {
        const struct mcp_server *s = mcp_config_find(c, rejects[i].name);
        CHECK(s && !s->error);
    }
    mcp_config_free(c);

    /* a generic problem comes first, as it always did */
    setup("sc-rejections2");
    put(USER, "{'mcpServers': {'both': {'command': 5, 'idleTimeout': -1}}}");
    c = load();
    const struct mcp_server *s = mcp_config_find(c, "both");
    CHECK(s && s->error && strstr(s->error, "\"command\" must be a string, not a number"));
    mcp_config_free(c);
}

static void test_fields(void)
{
    setup("sc-fields");
    put(USER,
        "{'mcpServers': {"
        "'h': {'url': 'https://h.example/mcp', 'timeout': 1e3, 'idleTimeout': 60000,"
        "  'headers': {'X-Key': 'v', 'Accept-Language': 'fr'}, 'lifecycle': 'eager',"
        "  'excludeTools': ['a', 'b'], 'headersHelper': 'get-headers --x',"
        "  'future': {'nested': true}},"
        "'s': {'command': 'node', 'args': ['server.js', '--port', '1'],"
        "  'env': {'A': '1', 'EMPTY': ''}, 'cwd': '/tmp', 'type': 'stdio'},"
        "'d': {'command': 'x', 'idleTimeout': 2.0e3},"
        "'nulls': {'command': 'x', 'lifecycle': null, 'idleTimeout': null, 'excludeTools': null}"
        "}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        struct server_config sc = SERVER_CONFIG_INIT;
        struct err e = ERR_INIT;
        CHECK(s->error == NULL);
        CHECK_INT(server_config_parse(s->raw, &sc, &e), 0);
        /* the vector is never NULL */
        CHECK(sc.exclude_tools != NULL);
        server_config_release(&sc);
        CHECK(sc.exclude_tools == NULL && sc.lifecycle == SERVER_LIFECYCLE_LAZY);
    }

    struct server_config sc = SERVER_CONFIG_INIT;
    struct err e = ERR_INIT;
    const struct mcp_server *h = mcp_config_find(c, "h");
    CHECK(h != NULL);
    if (h && server_config_parse(h->raw, &sc, &e) >= 0) {
        CHECK_INT(sc.idle_timeout_ms, 60000);
        CHECK_INT(sc.lifecycle, SERVER_LIFECYCLE_EAGER);
        CHECK_INT(vlen(sc.exclude_tools), 2);
        CHECK_STR(sc.exclude_tools[1], "b");
        server_config_release(&sc);
    }
    const struct mcp_server *d = mcp_config_find(c, "d");
    if (d && server_config_parse(d->raw, &sc, &e) >= 0) {
        CHECK_INT(sc.idle_timeout_ms, 2000);
        CHECK(sc.lifecycle == SERVER_LIFECYCLE_LAZY);
        CHECK_INT(vlen(sc.exclude_tools), 0);
        server_config_release(&sc);
    }
    CHECK(d != NULL);
    const struct mcp_server *n = mcp_config_find(c, "nulls");
    if (n && server_config_parse(n->raw, &sc, &e) >= 0) {
        CHECK(sc.idle_timeout_ms == 0 && sc.lifecycle == SERVER_LIFECYCLE_LAZY &&
              sc.exclude_tools && !sc.exclude_tools[0]);
        server_config_release(&sc);
    }
    CHECK(n != NULL);

    /* a copy of an entry shares raw: the same keys */
    struct mcp_server *cp = NULL;
    CHECK_INT(mcp_server_dup(h, &cp), 0);
    mcp_config_free(c);
    if (cp && server_config_parse(cp->raw, &sc, &e) >= 0) {
        CHECK_INT(sc.idle_timeout_ms, 60000);
        CHECK_INT(sc.lifecycle, SERVER_LIFECYCLE_EAGER);
        CHECK_INT(vlen(sc.exclude_tools), 2);
        CHECK_STR(sc.exclude_tools[1], "b");
        server_config_release(&sc);
    }
    mcp_server_free(cp);

    /* a failed parse leaves its output alone */
    struct json_object *bad = json_tokener_parse("{\"lifecycle\": \"x\", \"excludeTools\": 1}");
    struct server_config keep = SERVER_CONFIG_INIT;
    keep.idle_timeout_ms = 7;
    CHECK_INT(server_config_parse(bad, &keep, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "\"excludeTools\" must be an array of strings, not a number");
    CHECK(keep.idle_timeout_ms == 7 && keep.lifecycle == SERVER_LIFECYCLE_LAZY &&
          !keep.exclude_tools);
    json_object_put(bad);
    server_config_release(NULL);
}

static void test_tool_prefix(void)
{
    setup("sc-prefix");
    put(SHARED, "{'settings': {'toolPrefix': 'short'}}");
    struct mcp_config *c = load();
    if (c) {
        CHECK_INT(server_config_tool_prefix(c), MCP_TOOL_PREFIX_SHORT);
        mcp_config_free(c);
    }
    put(USER, "{'settings': {'toolPrefix': 'none', 'other': 1}}");
    put(PROJ1, "{'settings': {'somethingElse': true}}");
    put(PROJ2, "{'settings': {'toolPrefix': 'bogus'}, 'mcpServers': {'a': {'command': 'x'}}}");
    c = load();
    if (c) {
        /* key by key: the project's files do not set it validly, the user file's "none" holds */
        CHECK_INT(server_config_tool_prefix(c), MCP_TOOL_PREFIX_NONE);
        CHECK_INT(mcp_config_diag_count(c), 1);
        if (mcp_config_diag_count(c) == 1) {
            CHECK_STR(mcp_config_diag_at(c, 0)->source, "~/proj/.pi/mcp.json");
            CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                           "'~/proj/.pi/mcp.json': \"settings.toolPrefix\" must be \"server\", "
                           "\"short\" or \"none\", not 'bogus'");
            CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message, ": it is ignored");
        }
        CHECK(mcp_config_find(c, "a") != NULL); /* the file's servers still count */
        mcp_config_free(c);
    }
    /* loaded without the check, a value that is not a word is the default */
    struct mcp_config_opts o = {.cwd = P("home/proj")};
    struct err e = ERR_INIT;
    c = NULL;
    CHECK_INT(mcp_config_load(&o, &c, &e), 0);
    CHECK_INT(server_config_tool_prefix(c), MCP_TOOL_PREFIX_MCP);
    mcp_config_free(c);

    put(PROJ2, "{'settings': {'toolPrefix': 'server'}}");
    put(PROJ1, "{'settings': []}");
    c = load();
    if (c) {
        CHECK_INT(server_config_tool_prefix(c), MCP_TOOL_PREFIX_MCP);
        CHECK_INT(mcp_config_diag_count(c), 1);
        if (mcp_config_diag_count(c) == 1)
            CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                           "\"settings\" must be an object, not an array");
        mcp_config_free(c);
    }
    CHECK_INT(server_config_tool_prefix(NULL), MCP_TOOL_PREFIX_MCP);

    /* no file: the default */
    setup("sc-prefix-none");
    c = load();
    CHECK(c != NULL);
    CHECK_INT(server_config_tool_prefix(c), MCP_TOOL_PREFIX_MCP);
    mcp_config_free(c);

    /* "mcpServers" that is not an object skips the file, settings included */
    setup("sc-prefix-skip");
    put(USER, "{'mcpServers': ['a'], 'servers': {'b': {'command': 'x'}},"
              " 'settings': {'toolPrefix': 'none'}}");
    c = load();
    CHECK(c != NULL);
    CHECK_INT(server_config_tool_prefix(c), MCP_TOOL_PREFIX_MCP);
    mcp_config_free(c);
}

/* "autoAuth" per entry and in the settings, "authRequiredMessage" in the settings */
static void test_auto_auth(void)
{
    setup("sc-autoauth");
    put(USER, "{'settings': {'autoAuth': true, 'authRequiredMessage': 'Sign in to ${server}'},"
              " 'mcpServers': {"
              "'plain': {'url': 'https://p.example'},"
              "'on': {'url': 'https://p.example', 'autoAuth': true},"
              "'off': {'url': 'https://p.example', 'autoAuth': false},"
              "'null': {'url': 'https://p.example', 'autoAuth': null}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_diag_count(c), 0);
    const struct mcp_server *plain = mcp_config_find(c, "plain"), *on = mcp_config_find(c, "on"),
                            *off = mcp_config_find(c, "off"), *nul = mcp_config_find(c, "null");
    CHECK(plain && on && off && nul);
    if (plain && on && off && nul) {
        CHECK(!plain->error && !on->error && !off->error && !nul->error);
        CHECK(server_config_auto_auth(c, plain)); /* the settings' */
        CHECK(server_config_auto_auth(c, on));
        CHECK(!server_config_auto_auth(c, off)); /* the entry's own wins */
        CHECK(server_config_auto_auth(c, nul));  /* null: as if absent */
        struct server_config sc = SERVER_CONFIG_INIT;
        struct err e = ERR_INIT;
        CHECK_INT(server_config_parse(on->raw, &sc, &e), 0);
        CHECK_INT(sc.auto_auth, 1);
        server_config_release(&sc);
        CHECK_INT(server_config_parse(off->raw, &sc, &e), 0);
        CHECK_INT(sc.auto_auth, 0);
        server_config_release(&sc);
        CHECK_INT(server_config_parse(plain->raw, &sc, &e), 0);
        CHECK_INT(sc.auto_auth, -1);
        server_config_release(&sc);
        CHECK_INT(server_config_parse(nul->raw, &sc, &e), 0);
        CHECK_INT(sc.auto_auth, -1);
        server_config_release(&sc);
    }
    CHECK_STR(server_config_auth_message(c), "Sign in to ${server}");
    mcp_config_free(c);

    /* a higher layer turns it off, key by key; null leaves the lower layer's value */
    put(PROJ1, "{'settings': {'autoAuth': false}}");
    put(PROJ2, "{'settings': {'autoAuth': null, 'authRequiredMessage': null}}");
    c = load();
    if (c) {
        const struct mcp_server *p = mcp_config_find(c, "plain");
        CHECK(p && !server_config_auto_auth(c, p));
        CHECK(p && server_config_auto_auth(c, mcp_config_find(c, "on")));
        CHECK_STR(server_config_auth_message(c), "Sign in to ${server}");
        mcp_config_free(c);
    }

    /* invalid settings: a diagnostic of their file, which adds nothing; the lower layers hold */
    put(PROJ1, "{'settings': {'autoAuth': 'yes', 'authRequiredMessage': 'never seen'}}");
    put(PROJ2, "{'settings': {'authRequiredMessage': '  '}}");
    c = load();
    if (c) {
        CHECK_INT(mcp_config_diag_count(c), 2);
        if (mcp_config_diag_count(c) == 2) {
            CHECK_STR(mcp_config_diag_at(c, 0)->message,
                      "'~/proj/.mcp.json': \"settings.autoAuth\" must be true or false, not a "
                      "string: it is ignored");
            CHECK_CONTAINS(mcp_config_diag_at(c, 1)->message,
                           "'~/proj/.pi/mcp.json': \"settings.authRequiredMessage\" must not be "
                           "blank");
        }
        CHECK(server_config_auto_auth(c, mcp_config_find(c, "plain")));
        CHECK_STR(server_config_auth_message(c), "Sign in to ${server}");
        mcp_config_free(c);
    }
    put(PROJ1, "{'settings': {'authRequiredMessage': 5}}");
    put(PROJ2, "{}");
    c = load();
    if (c) {
        CHECK_INT(mcp_config_diag_count(c), 1);
        if (mcp_config_diag_count(c) == 1)
            CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                           "\"settings.authRequiredMessage\" must be a string, not a number");
        mcp_config_free(c);
    }

    /* nothing set anywhere: off, and the default message */
    setup("sc-autoauth-none");
    put(USER, "{'mcpServers': {'plain': {'url': 'https://p.example'}}}");
    c = load();
    if (c) {
        CHECK(!server_config_auto_auth(c, mcp_config_find(c, "plain")));
        CHECK(server_config_auth_message(c) == NULL);
        mcp_config_free(c);
    }
    CHECK(!server_config_auto_auth(NULL, NULL));
    CHECK(server_config_auth_message(NULL) == NULL);

    /* loaded without the checks: a value of the wrong type counts as unset */
    setup("sc-autoauth-unchecked");
    put(USER, "{'settings': {'autoAuth': 'yes', 'authRequiredMessage': 7},"
              " 'mcpServers': {'e': {'url': 'https://p.example', 'autoAuth': 'no'}}}");
    struct mcp_config_opts o = {.cwd = P("home/proj")};
    struct err e = ERR_INIT;
    c = NULL;
    CHECK_INT(mcp_config_load(&o, &c, &e), 0);
    if (c) {
        CHECK(!server_config_auto_auth(c, mcp_config_find(c, "e")));
        CHECK(server_config_auth_message(c) == NULL);
        mcp_config_free(c);
    }
}

/* a configuration held in memory: the same checks */
static void test_load_object(void)
{
    struct err e = ERR_INIT;
    struct mcp_config *c = NULL;
    struct json_object *root = json_tokener_parse(
        "{\"mcpServers\": {\"ok\": {\"command\": \"x\", \"lifecycle\": \"lazy\"},"
        "\"bad\": {\"command\": \"x\", \"excludeTools\": \"a\"}},"
        "\"settings\": {\"toolPrefix\": \"short\"}}");
    CHECK(root != NULL);
    CHECK_INT(server_config_load_object(root, "command line", NULL, &c, &e), 0);
    if (c) {
        CHECK_INT(server_config_tool_prefix(c), MCP_TOOL_PREFIX_SHORT);
        const struct mcp_server *s = mcp_config_find(c, "ok");
        CHECK(s && !s->error);
        s = mcp_config_find(c, "bad");
        CHECK(s && s->error &&
              strcmp(s->error, "'command line': server 'bad': \"excludeTools\" must be an array "
                               "of strings, not a string") == 0);
        mcp_config_free(c);
    }
    c = NULL;
    json_object_put(root);
    root = json_tokener_parse("{\"settings\": {\"toolPrefix\": 1}}");
    CHECK_INT(server_config_load_object(root, "command line", NULL, &c, &e), 0);
    CHECK_INT(mcp_config_diag_count(c), 1);
    if (mcp_config_diag_count(c) == 1)
        CHECK_STR(mcp_config_diag_at(c, 0)->message,
                  "'command line': \"settings.toolPrefix\" must be a string, not a number: it is "
                  "ignored");
    CHECK_INT(server_config_tool_prefix(c), MCP_TOOL_PREFIX_MCP);
    mcp_config_free(c);
    json_object_put(root);
    c = NULL;
    CHECK_INT(server_config_load_object(NULL, "x", NULL, &c, &e), -EINVAL);
    CHECK(c == NULL);
}

TESTS_MAIN(test_rejections, test_fields, test_tool_prefix, test_auto_auth, test_load_object)
