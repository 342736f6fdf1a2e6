/* test_server_config.c - the bridge's own keys of the configuration: includeTools,
 * excludeTools, lifecycle, idleTimeout, requestTimeoutMs, toolPrefix in an entry, the settings,
 * and that loading through server_config_load() drops a key with a bad value alone, with a
 * warning naming it, the rest of the entry or settings standing */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "credkit/mcp_config.h"

#include "mcp_fixture.h"
#include "config/server_config.h"

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
     "\"idleTimeout\" must be a number of minutes (0 = never) or a duration with its unit such as "
     "\"90s\", not -1"},
    {"r-idle-frac", "{'command': 'x', 'idleTimeout': -0.5}",
     "\"idleTimeout\" must be a number of minutes (0 = never) or a duration with its unit such as "
     "\"90s\", not -0.5"},
    {"r-idle-str", "{'command': 'x', 'idleTimeout': '10'}",
     "not '10' (a number is written without quotes)"},
    {"r-idle-unit", "{'command': 'x', 'idleTimeout': '10 parsecs'}",
     "such as \"90s\", not '10 parsecs'"},
    {"r-idle-bool", "{'command': 'x', 'idleTimeout': true}", "such as \"90s\", not a boolean"},
    {"r-idle-big", "{'command': 'x', 'idleTimeout': 1e9}",
     "\"idleTimeout\" must be at most 527040 minutes (a year), not 1e+09"},
    {"r-idle-bigint", "{'command': 'x', 'idleTimeout': 99999999999999999999}",
     "\"idleTimeout\" must be at most 527040 minutes (a year)"},
    {"r-idle-bigstr", "{'command': 'x', 'idleTimeout': '400d'}",
     "\"idleTimeout\" must be at most a year, not '400d'"},
    {"r-life-word", "{'command': 'x', 'lifecycle': 'keepalive'}",
     "\"lifecycle\" must be \"lazy\", \"eager\", \"keep-alive\" or \"lazy-keep-alive\", not "
     "'keepalive'"},
    {"r-direct", "{'command': 'x', 'directTools': 'yes'}",
     "\"directTools\" must be true, false, \"search\" or an array of tool names, not a string"},
    {"r-direct-idx", "{'command': 'x', 'directTools': ['a', 1]}",
     "\"directTools\"[1] must be a string, not a number"},
    {"r-expose", "{'command': 'x', 'exposeResources': 'yes'}",
     "\"exposeResources\" must be true or false, not a string"},
    {"r-debug", "{'command': 'x', 'debug': 1}", "\"debug\" must be true or false, not a number"},
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
    {"r-incl", "{'command': 'x', 'includeTools': 'a'}",
     "\"includeTools\" must be an array of strings, not a string"},
    {"r-prefix", "{'command': 'x', 'toolPrefix': 'long'}",
     "\"toolPrefix\" must be \"mcp\", \"server\", \"short\" or \"none\", not 'long'"},
    {"r-rq", "{'command': 'x', 'requestTimeoutMs': '30s'}",
     "\"requestTimeoutMs\" must be a number of milliseconds, not a string"},
    {"r-rq-big", "{'command': 'x', 'requestTimeoutMs': 1e12}",
     "\"requestTimeoutMs\" must be at most 86400000 milliseconds (a day), not 1e+12"},
};
/* clang-format on */

/* each entry above stays valid: the bad key alone is dropped, a warning naming it */
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
        CHECK(s && !s->error);
        if (!s || s->error) {
            fprintf(stderr, "  entry '%s' missing or invalid\n", rejects[i].name);
            continue;
        }
        CHECK_INT(vlen(s->warnings), 1);
        if (vlen(s->warnings) != 1)
            continue;
        CHECK_CONTAINS(s->warnings[0], rejects[i].reason);
        CHECK_CONTAINS(s->warnings[0], ": it is ignored");
        for (const char *p = s->warnings[0]; *p; p++)
            CHECK((unsigned char)*p >= 0x20);
        /* the key is left at its default, the rest of the entry stands */
        struct server_config sc = SERVER_CONFIG_INIT;
        CHECK_INT(server_config_parse(s->raw, &sc, NULL), 1);
        CHECK(sc.idle_timeout_ms == -1 && sc.lifecycle == SERVER_LIFECYCLE_LAZY &&
              sc.direct == SERVER_DIRECT_UNSET && sc.exclude_tools && !sc.exclude_tools[0] &&
              !sc.include_tools && sc.tool_prefix == -1 && sc.request_timeout_ms == -1 &&
              sc.auto_auth == -1 && sc.expose_resources == -1 && !sc.debug);
        server_config_release(&sc);
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

    /* a generic problem still makes the entry invalid */
    setup("sc-rejections2");
    put(USER, "{'mcpServers': {'both': {'command': 5, 'idleTimeout': -1}}}");
    c = load();
    const struct mcp_server *s = mcp_config_find(c, "both");
    CHECK(s && s->error && strstr(s->error, "\"command\" must be a string, not a number"));
    mcp_config_free(c);

    /* two bad keys: two warnings, in a fixed order; the good key beside them holds */
    put(USER, "{'mcpServers': {'two': {'command': 'x', 'debug': 1, 'idleTimeout': 5,"
              " 'lifecycle': 'x'}}}");
    c = load();
    s = mcp_config_find(c, "two");
    CHECK(s && !s->error && vlen(s->warnings) == 2);
    if (s && vlen(s->warnings) == 2) {
        CHECK_CONTAINS(s->warnings[0], "\"lifecycle\" must be");
        CHECK_CONTAINS(s->warnings[1], "\"debug\" must be true or false");
        struct server_config sc = SERVER_CONFIG_INIT;
        CHECK_INT(server_config_parse(s->raw, &sc, NULL), 1);
        CHECK_INT(sc.idle_timeout_ms, 5 * 60000);
        server_config_release(&sc);
    }
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
        "'m': {'command': 'x', 'idleTimeout': 0.5, 'directTools': ['a', 'b'],"
        "  'exposeResources': true, 'debug': true},"
        "'z': {'command': 'x', 'idleTimeout': 0, 'directTools': false, 'exposeResources': false,"
        "  'debug': false, 'lifecycle': 'keep-alive'},"
        "'u': {'command': 'x', 'idleTimeout': '90s', 'directTools': true},"
        "'v': {'command': 'x', 'idleTimeout': '1h30m', 'lifecycle': 'lazy'},"
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
        CHECK_INT(sc.idle_timeout_ms, 60000LL * 60000); /* minutes, as the adapter means */
        CHECK_INT(sc.lifecycle, SERVER_LIFECYCLE_EAGER);
        CHECK_INT(vlen(sc.exclude_tools), 2);
        CHECK_STR(sc.exclude_tools[1], "b");
        CHECK(sc.direct == SERVER_DIRECT_UNSET && !sc.direct_tools);
        CHECK(sc.expose_resources == -1 && !sc.debug && sc.auto_auth == -1);
        server_config_release(&sc);
        /* read as minutes, with a warning naming the key: it looks like the old milliseconds */
        CHECK_INT(vlen(h->warnings), 2);
        if (vlen(h->warnings) == 2) {
            CHECK_STR(h->warnings[0], "\"idleTimeout\" is in minutes: 60000 minutes is 41 "
                                      "days; write \"60s\" for the same time in seconds");
            CHECK_CONTAINS(h->warnings[1], "\"future\" is not a key of an entry");
        }
    }
    const struct mcp_server *d = mcp_config_find(c, "d");
    if (d && server_config_parse(d->raw, &sc, &e) >= 0) {
        CHECK_INT(sc.idle_timeout_ms, 2000LL * 60000);
        CHECK(sc.lifecycle == SERVER_LIFECYCLE_LAZY);
        CHECK_INT(vlen(sc.exclude_tools), 0);
        server_config_release(&sc);
        CHECK_INT(vlen(d->warnings), 1);
        if (vlen(d->warnings) == 1)
            CHECK_STR(d->warnings[0], "\"idleTimeout\" is in minutes: 2000 minutes is 33 hours; "
                                      "write \"2s\" for the same time in seconds");
    }
    CHECK(d != NULL);
    const struct mcp_server *m = mcp_config_find(c, "m"), *z = mcp_config_find(c, "z"),
                            *u = mcp_config_find(c, "u"), *v = mcp_config_find(c, "v");
    CHECK(m && z && u && v);
    if (m && server_config_parse(m->raw, &sc, &e) >= 0) {
        CHECK_INT(sc.idle_timeout_ms, 30000);
        CHECK(sc.direct == SERVER_DIRECT_LIST && vlen(sc.direct_tools) == 2);
        CHECK_STR(sc.direct_tools ? sc.direct_tools[1] : NULL, "b");
        CHECK(sc.expose_resources == 1 && sc.debug);
        server_config_release(&sc);
        CHECK_INT(vlen(m->warnings), 0);
    }
    if (z && server_config_parse(z->raw, &sc, &e) >= 0) {
        CHECK_INT(sc.idle_timeout_ms, 0); /* never */
        CHECK(sc.direct == SERVER_DIRECT_NONE && !sc.direct_tools);
        CHECK(sc.expose_resources == 0 && !sc.debug);
        CHECK(sc.lifecycle == SERVER_LIFECYCLE_KEEP_ALIVE);
        server_config_release(&sc);
        CHECK(z->error == NULL && vlen(z->warnings) == 0);
    }
    if (u && server_config_parse(u->raw, &sc, &e) >= 0) {
        CHECK_INT(sc.idle_timeout_ms, 90000);
        CHECK(sc.direct == SERVER_DIRECT_ALL);
        server_config_release(&sc);
    }
    if (v && server_config_parse(v->raw, &sc, &e) >= 0) {
        CHECK_INT(sc.idle_timeout_ms, 90LL * 60000);
        server_config_release(&sc);
    }
    const struct mcp_server *n = mcp_config_find(c, "nulls");
    if (n && server_config_parse(n->raw, &sc, &e) >= 0) {
        CHECK(sc.idle_timeout_ms == -1 && sc.lifecycle == SERVER_LIFECYCLE_LAZY &&
              sc.exclude_tools && !sc.exclude_tools[0]);
        server_config_release(&sc);
    }
    CHECK(n != NULL);

    /* a copy of an entry shares raw: the same keys */
    struct mcp_server *cp = NULL;
    CHECK_INT(mcp_server_dup(h, &cp), 0);
    mcp_config_free(c);
    if (cp && server_config_parse(cp->raw, &sc, &e) >= 0) {
        CHECK_INT(sc.idle_timeout_ms, 60000LL * 60000);
        CHECK_INT(sc.lifecycle, SERVER_LIFECYCLE_EAGER);
        CHECK_INT(vlen(sc.exclude_tools), 2);
        CHECK_STR(sc.exclude_tools[1], "b");
        server_config_release(&sc);
    }
    mcp_server_free(cp);

    /* bad values are dropped alone: defaults, a warning each, in a fixed order */
    struct json_object *bad =
        json_tokener_parse("{\"lifecycle\": \"x\", \"excludeTools\": 1, \"idleTimeout\": 2}");
    struct server_config keep = SERVER_CONFIG_INIT;
    err_clear(&e);
    CHECK_INT(server_config_parse(bad, &keep, &e), 1);
    /* the keys are read in a fixed order: lifecycle before excludeTools */
    CHECK_STR(e.msg, "\"lifecycle\" must be \"lazy\", \"eager\", \"keep-alive\" or "
                     "\"lazy-keep-alive\", not 'x': it is ignored\n\"excludeTools\" must be an "
                     "array of strings, not a number: it is ignored");
    CHECK(keep.idle_timeout_ms == 120000 && keep.lifecycle == SERVER_LIFECYCLE_LAZY &&
          keep.exclude_tools && !keep.exclude_tools[0]);
    server_config_release(&keep);
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
        /* the unknown settings are warnings of their files, the bad word an error */
        CHECK_INT(mcp_config_diag_count(c), 3);
        if (mcp_config_diag_count(c) == 3) {
            CHECK_STR(mcp_config_diag_at(c, 0)->message,
                      "'~/.pi/agent/mcp.json': \"settings.other\" is not a setting the bridge "
                      "knows: it is ignored (check the spelling)");
            CHECK_STR(mcp_config_diag_at(c, 1)->message,
                      "'~/proj/.mcp.json': \"settings.somethingElse\" is not a setting the "
                      "bridge knows: it is ignored (check the spelling)");
            CHECK_STR(mcp_config_diag_at(c, 2)->source, "~/proj/.pi/mcp.json");
            CHECK_CONTAINS(mcp_config_diag_at(c, 2)->message,
                           "'~/proj/.pi/mcp.json': \"settings.toolPrefix\" must be \"mcp\", "
                           "\"server\", \"short\" or \"none\", not 'bogus'");
            CHECK_CONTAINS(mcp_config_diag_at(c, 2)->message, ": it is ignored");
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
        CHECK_INT(server_config_tool_prefix(c), MCP_TOOL_PREFIX_SERVER);
        CHECK_INT(mcp_config_diag_count(c), 2); /* and "other" of the user file */
        if (mcp_config_diag_count(c) == 2)
            CHECK_CONTAINS(mcp_config_diag_at(c, 1)->message,
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

    /* invalid settings: a diagnostic of their file each, dropped alone; the lower layers hold
     * for them, the file's other settings stand */
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
        CHECK_STR(server_config_auth_message(c), "never seen");
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
        CHECK(s && !s->error && vlen(s->warnings) == 1);
        if (s && vlen(s->warnings) == 1)
            CHECK_STR(s->warnings[0], "\"excludeTools\" must be an array of strings, not a "
                                      "string: it is ignored");
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

/* every setting with the adapter's meaning, the defaults, and what a bad value leaves */
static void test_settings(void)
{
    struct server_settings st;

    server_settings_get(NULL, &st);
    CHECK_INT(st.tool_prefix, MCP_TOOL_PREFIX_MCP);
    CHECK_INT(st.idle_timeout_ms, 10 * 60 * 1000);
    CHECK(st.direct_tools && !st.disable_proxy_tool && !st.auto_auth && st.sampling &&
          !st.sampling_auto_approve && !st.auth_required_message);
    CHECK_INT(st.settle_timeout_ms, 1500);

    setup("sc-settings");
    put(SHARED, "{'settings': {'idleTimeout': 30, 'settleTimeout': 900}}");
    put(USER, "{'settings': {'toolPrefix': 'short', 'idleTimeout': 0.5, 'directTools': false,"
              " 'disableProxyTool': true, 'autoAuth': true, 'authRequiredMessage': 'sign in',"
              " 'sampling': false, 'samplingAutoApprove': true},"
              " 'mcpServers': {'a': {'command': 'x'}, 'k': {'command': 'x', 'idleTimeout': 3,"
              " 'lifecycle': 'keep-alive'}, 'b': {'command': 'x', 'idleTimeout': 0}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    server_settings_get(c, &st);
    CHECK_INT(st.tool_prefix, MCP_TOOL_PREFIX_SHORT);
    CHECK_INT(st.idle_timeout_ms, 30000);
    CHECK(!st.direct_tools && st.disable_proxy_tool && st.auto_auth && !st.sampling &&
          st.sampling_auto_approve);
    CHECK_STR(st.auth_required_message, "sign in");
    CHECK_INT(st.settle_timeout_ms, 900);
    /* samplingAutoApprove is accepted and says it does nothing here */
    CHECK_INT(mcp_config_diag_count(c), 1);
    if (mcp_config_diag_count(c) == 1)
        CHECK_STR(mcp_config_diag_at(c, 0)->message,
                  "'~/.pi/agent/mcp.json': \"settings.samplingAutoApprove\" has no effect here: "
                  "the bridge forwards sampling requests to the agent, which asks or approves");
    /* the idle timeout of an entry: its own, else the settings'; keep-alive never */
    const char *names[] = {"a", "k", "b"};
    const int64_t want[] = {30000, 0, 0};
    for (size_t i = 0; i < ELEMENTSOF(names); i++) {
        const struct mcp_server *s = mcp_config_find(c, names[i]);
        struct server_config sc = SERVER_CONFIG_INIT;
        struct err e = ERR_INIT;
        CHECK(s && !s->error);
        if (s && server_config_parse(s->raw, &sc, &e) >= 0) {
            CHECK_INT(server_config_idle_ms(&sc, &st), want[i]);
            server_config_release(&sc);
        }
    }
    mcp_config_free(c);

    /* 0 = never, a duration string, and a large number read as minutes with a warning */
    put(USER, "{'settings': {'idleTimeout': 0}}");
    c = load();
    server_settings_get(c, &st);
    CHECK_INT(st.idle_timeout_ms, 0);
    CHECK_INT(mcp_config_diag_count(c), 0);
    mcp_config_free(c);
    put(USER, "{'settings': {'idleTimeout': '500ms'}}");
    c = load();
    server_settings_get(c, &st);
    CHECK_INT(st.idle_timeout_ms, 500);
    mcp_config_free(c);
    put(USER, "{'settings': {'idleTimeout': 60000, 'bogus': 1, 'toolprefix': 'x'}}");
    c = load();
    server_settings_get(c, &st);
    CHECK_INT(st.idle_timeout_ms, 60000LL * 60000);
    CHECK_INT(mcp_config_diag_count(c), 3);
    if (mcp_config_diag_count(c) == 3) {
        CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message, "\"settings.bogus\" is not a setting");
        CHECK_CONTAINS(mcp_config_diag_at(c, 1)->message,
                       "\"settings.toolprefix\" is not a setting");
        CHECK_STR(mcp_config_diag_at(c, 2)->message,
                  "'~/.pi/agent/mcp.json': \"settings.idleTimeout\" is in minutes: 60000 "
                  "minutes is 41 days; write \"60s\" for the same time in seconds");
    }
    mcp_config_free(c);

    /* a bad value: a diagnostic, that setting alone dropped (the lower layer's in force), the
     * file's other settings standing */
    static const struct {
        const char *settings, *reason;
    } bads[] = {
        {"'idleTimeout': -1", "\"settings.idleTimeout\" must be a number of minutes"},
        {"'directTools': ['a']",
         "\"settings.directTools\" must be true, false or \"search\", not an array"},
        {"'requestTimeoutMs': 'x'", "\"settings.requestTimeoutMs\" must be a number"},
        {"'disableProxyTool': 1", "\"settings.disableProxyTool\" must be true or false"},
        {"'sampling': 'no'", "\"settings.sampling\" must be true or false, not a string"},
        {"'samplingAutoApprove': 0", "\"settings.samplingAutoApprove\" must be true or false"},
        {"'settleTimeout': 0", "settings: \"settleTimeout\" must be a positive number"},
        {"'settleTimeout': 1.5", "\"settleTimeout\" must be a whole number of milliseconds"},
        {"'settleTimeout': 60001", "\"settings.settleTimeout\" must be at most 60000"},
        {"'toolPrefix': 'SERVER'", "\"settings.toolPrefix\" must be \"mcp\", \"server\""},
    };
    for (size_t i = 0; i < ELEMENTSOF(bads); i++) {
        char text[256];
        snprintf(text, sizeof(text), "{'settings': {%s, 'autoAuth': false}}", bads[i].settings);
        put(USER, "{'settings': {'autoAuth': true, 'idleTimeout': 2, 'settleTimeout': 700}}");
        put(PROJ1, text);
        c = load();
        if (!c)
            continue;
        server_settings_get(c, &st);
        CHECK_INT(mcp_config_diag_count(c), 1);
        if (mcp_config_diag_count(c) == 1) {
            CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message, bads[i].reason);
            CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message, ": it is ignored");
        }
        CHECK(!st.auto_auth); /* the project file's: the rest of its settings stand */
        CHECK_INT(st.idle_timeout_ms, 120000);
        CHECK_INT(st.settle_timeout_ms, 700);
        CHECK(st.direct_tools && !st.disable_proxy_tool && st.sampling);
        CHECK_INT(st.tool_prefix, MCP_TOOL_PREFIX_MCP);
        mcp_config_free(c);
    }

    /* loaded without the checks: a bad value leaves the default */
    setup("sc-settings-unchecked");
    put(USER, "{'settings': {'idleTimeout': 'x', 'directTools': 'no', 'sampling': 0,"
              " 'settleTimeout': 99999999, 'disableProxyTool': null}}");
    struct mcp_config_opts o = {.cwd = P("home/proj")};
    struct err e = ERR_INIT;
    c = NULL;
    CHECK_INT(mcp_config_load(&o, &c, &e), 0);
    server_settings_get(c, &st);
    CHECK_INT(st.idle_timeout_ms, 10 * 60 * 1000);
    CHECK(st.direct_tools && st.sampling && !st.disable_proxy_tool);
    CHECK_INT(st.settle_timeout_ms, 1500);
    mcp_config_free(c);
}

/* every key of a pi adapter entry is accepted; a key no tool knows is a warning, not an error */
static void test_adapter_entry(void)
{
    setup("sc-adapter");
    put(USER, "{'mcpServers': {"
              "'fs': {'command': 'npx', 'args': ['-y', 'server-filesystem', '/tmp'],"
              "  'env': {'NODE_OPTIONS': '--max-old-space-size=4096'}, 'cwd': '/tmp',"
              "  'lifecycle': 'lazy', 'idleTimeout': 15, 'debug': false,"
              "  'exposeResources': true, 'directTools': ['list'], 'excludeTools': ['rm']},"
              "'web': {'url': 'https://api.example.com/mcp', 'headers': {'X-Custom': 'v'},"
              "  'auth': 'oauth', 'oauth': {'grantType': 'authorization_code', 'clientId': 'x',"
              "  'clientSecret': 'y', 'scope': 'read write', 'redirectUri': 'http://127.0.0.1/cb',"
              "  'clientName': 'Pi MCP Client', 'clientUri': 'https://pi.dev'}},"
              "'tok': {'url': 'https://api.example.com/mcp', 'auth': 'bearer',"
              "  'bearerToken': 'static-token'},"
              "'tokenv': {'url': 'https://api.example.com/mcp', 'auth': 'bearer',"
              "  'bearerTokenEnv': 'MY_API_KEY'},"
              "'off': {'url': 'https://api.example.com/mcp', 'auth': false, 'oauth': false},"
              "'never': {'command': 'x', 'idleTimeout': 0, 'disabled': true},"
              "'cline': {'command': 'x', 'alwaysAllow': ['a'], 'autoApprove': [], 'timeout': 60000,"
              "  'description': 'd', 'type': 'stdio', 'disabled': false},"
              "'typo': {'command': 'x', 'lifecyle': 'eager', 'envFile': '.env',"
              "  'disabledTools': ['a']}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_diag_count(c), 0);
    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        CHECK(s->error == NULL);
        if (s->error)
            fprintf(stderr, "  %s\n", s->error);
        if (strcmp(s->name, "typo") != 0) {
            CHECK_INT(vlen(s->warnings), 0);
            if (vlen(s->warnings))
                fprintf(stderr, "  %s: %s\n", s->name, s->warnings[0]);
        }
    }
    const struct mcp_server *never = mcp_config_find(c, "never"),
                            *cline = mcp_config_find(c, "cline"),
                            *typo = mcp_config_find(c, "typo");
    CHECK(never && never->disabled && cline && !cline->disabled);
    CHECK(typo != NULL);
    if (typo) {
        CHECK_INT(vlen(typo->warnings), 3);
        if (vlen(typo->warnings) == 3) {
            CHECK_STR(typo->warnings[0], "\"lifecyle\" is not a key of an entry: it is ignored; "
                                         "did you mean \"lifecycle\"?");
            CHECK_STR(typo->warnings[1],
                      "\"envFile\" is ignored: the file is not read: put the variables in \"env\"");
            CHECK_STR(typo->warnings[2], "\"disabledTools\" is ignored: no tool reads it: list "
                                         "the tools in \"excludeTools\"");
        }
    }
    const struct mcp_server *tok = mcp_config_find(c, "tok"), *off = mcp_config_find(c, "off");
    CHECK(tok && tok->auth == MCP_AUTH_BEARER && off && off->auth == MCP_AUTH_DISABLED);
    mcp_config_free(c);
}

/* the case: one bad value in settings costs that setting only; "search" holds the
 * tools back until a search finds them (false, and direct_search), without a warning */
static void test_settings_one_key(void)
{
    struct server_settings st;
    setup("sc-one-key");
    put(USER, "{'settings': {'toolPrefix': 'short', 'directTools': 'search',"
              " 'requestTimeoutMs': 30000, 'idleTimeout': 'soon', 'showStatusIcon': true},"
              " 'mcpServers': {'a-mcp': {'command': 'x'}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    server_settings_get(c, &st);
    CHECK_INT(st.tool_prefix, MCP_TOOL_PREFIX_SHORT);
    CHECK(!st.direct_tools);
    CHECK(st.direct_search);
    CHECK_INT(st.request_timeout_ms, 30000);
    CHECK_INT(st.idle_timeout_ms, SERVER_IDLE_TIMEOUT_DEFAULT_MS);
    CHECK_INT(mcp_config_diag_count(c), 2);
    if (mcp_config_diag_count(c) == 2) {
        CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                       "\"settings.idleTimeout\" must be a number of minutes");
        CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message, ": it is ignored");
        CHECK_STR(mcp_config_diag_at(c, 1)->message,
                  "'~/.pi/agent/mcp.json': setting \"showStatusIcon\" is accepted and not "
                  "applied: it is pi's own (its display, config discovery, token storage or "
                  "extra tools); docs/bridge.md says what the bridge does instead");
    }
    mcp_config_free(c);
    /* every setting of the adapter at once: a line per group, each naming its keys */
    put(USER, "{'settings': {'showStatusIcon': true, 'mcpFooterStatus': 'full',"
              " 'toolResultRendering': 'compact', 'collapsedResultLines': 1,"
              " 'notifyOnStartupConnect': true, 'warnOnLargeDirectTools': true,"
              " 'hostConfigDiscovery': 'off', 'ancestorConfigRoots': [], 'agentPluginPaths': [],"
              " 'approveTools': true, 'oauthDir': 'x', 'oauthCredentialStore': 'encrypted-file',"
              " 'namespaceProxyTools': true, 'scriptMode': true, 'jev': {},"
              " 'strictDirectToolArguments': false, 'directToolResultDetails': 'lean',"
              " 'outputGuard': true, 'freezeDirectTools': false, 'elicitation': true,"
              " 'trace': {'enabled': true}, 'disableProxyTool': false}}");
    c = load();
    CHECK_INT(mcp_config_diag_count(c), 2);
    if (mcp_config_diag_count(c) == 2) {
        CHECK_STR(
            mcp_config_diag_at(c, 0)->message,
            "'~/.pi/agent/mcp.json': settings \"showStatusIcon\", \"mcpFooterStatus\", "
            "\"toolResultRendering\", \"collapsedResultLines\", \"notifyOnStartupConnect\", "
            "\"warnOnLargeDirectTools\", \"hostConfigDiscovery\", \"ancestorConfigRoots\", "
            "\"agentPluginPaths\", \"oauthDir\", \"oauthCredentialStore\", "
            "\"namespaceProxyTools\", \"scriptMode\", \"jev\", \"strictDirectToolArguments\", "
            "\"directToolResultDetails\", \"outputGuard\", \"freezeDirectTools\", "
            "\"elicitation\" are accepted and not applied: they are pi's own (its "
            "display, config discovery, token storage or extra tools); docs/bridge.md says "
            "what the bridge does instead");
        CHECK_STR(mcp_config_diag_at(c, 1)->message,
                  "'~/.pi/agent/mcp.json': \"settings.approveTools\" is accepted and not "
                  "applied: the bridge asks no one before a call, the agent's own approval "
                  "applies (hide a tool with \"excludeTools\")");
    }
    mcp_config_free(c);
    /* a lower layer's value stands for the dropped one */
    put(SHARED, "{'settings': {'idleTimeout': 3, 'requestTimeoutMs': 5000}}");
    put(USER, "{'settings': {'idleTimeout': -3, 'requestTimeoutMs': 0}}");
    c = load();
    server_settings_get(c, &st);
    CHECK_INT(st.idle_timeout_ms, 3 * 60000);
    CHECK_INT(st.request_timeout_ms, 0); /* <= 0: the default, as in the adapter */
    mcp_config_free(c);
    /* the adapter's top-level "claudePlugins": a warning, the file's servers still count */
    put(USER, "{'claudePlugins': [{'path': './p', 'mcp': true}], 'mcpServers': {'a': {'command':"
              " 'x'}}}");
    c = load();
    CHECK_INT(mcp_config_diag_count(c), 1);
    if (mcp_config_diag_count(c) == 1)
        CHECK_STR(mcp_config_diag_at(c, 0)->message,
                  "'~/.pi/agent/mcp.json': \"claudePlugins\" is accepted and not applied: no "
                  "plugin bundle is read; copy the servers of its .mcp.json into \"mcpServers\"");
    CHECK(mcp_config_find(c, "a") && !mcp_config_find(c, "a")->error);
    mcp_config_free(c);
}

/* the adapter's entry keys: lazy-keep-alive, requestTimeoutMs, toolPrefix, includeTools,
 * directTools "search" (held back until a search finds them); the ones not applied are
 * accepted with a warning saying so */
static void test_adapter_keys(void)
{
    setup("sc-adapter-keys");
    put(USER,
        "{'settings': {'requestTimeoutMs': 20000, 'toolPrefix': 'server'},"
        " 'mcpServers': {"
        "'lkl': {'command': 'x', 'lifecycle': 'lazy-keep-alive', 'idleTimeout': 5,"
        "  'requestTimeoutMs': 30000, 'toolPrefix': 'mcp', 'includeTools': ['get_*', 'a'],"
        "  'directTools': 'search'},"
        "'plain': {'command': 'x', 'requestTimeoutMs': -1},"
        "'timed': {'command': 'x', 'timeout': 4000},"
        "'notes': {'url': 'https://n.example/mcp', 'caFile': '~/ca.pem',"
        "  'requestHeadersCommand': {'command': 'sign'}, 'searchKeywords': {'*': ['gh']},"
        "  'approveTools': ['delete_*'], 'trace': true, 'tasks': true, 'inheritEnv': false,"
        "  'oauth': {'authServerMetadataUrl': 'https://as.example/.well-known/x'},"
        "  'headers': {'X-A': '$env:HOME', 'X-B': '!pass show x'}},"
        "'env': {'command': 'x', 'inheritEnv': true, 'tasks': false, 'cwd': '~/work',"
        "  'env': {'K': '!cat key', 'L': '${env:HOME}'}},"
        "'store': {'url': 'https://n.example/mcp', 'auth': 'bearer', 'bearerTokenStore': true},"
        "'sock': {'socket': '/tmp/mux.sock'}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    struct server_settings st;
    server_settings_get(c, &st);
    struct server_config sc = SERVER_CONFIG_INIT;
    const struct mcp_server *s = mcp_config_find(c, "lkl");
    CHECK(s && !s->error);
    if (s && server_config_parse(s->raw, &sc, NULL) == 0) { /* "search": no warning */
        CHECK_INT(sc.lifecycle, SERVER_LIFECYCLE_LAZY_KEEP_ALIVE);
        CHECK_INT(server_config_idle_ms(&sc, &st), 0); /* never idle-closed */
        CHECK_INT(server_config_request_ms(&sc, s, &st), 30000);
        CHECK_INT(server_config_prefix_of(&sc, st.tool_prefix), MCP_TOOL_PREFIX_MCP);
        CHECK_INT(vlen(sc.include_tools), 2);
        CHECK_STR(sc.include_tools ? sc.include_tools[0] : NULL, "get_*");
        CHECK_INT(sc.direct, SERVER_DIRECT_SEARCH);
        server_config_release(&sc);
        CHECK_INT(vlen(s->warnings), 0);
    }
    s = mcp_config_find(c, "plain");
    if (s && server_config_parse(s->raw, &sc, NULL) == 0) {
        CHECK_INT(server_config_request_ms(&sc, s, &st), 20000); /* the settings' */
        CHECK_INT(server_config_prefix_of(&sc, st.tool_prefix), MCP_TOOL_PREFIX_SERVER);
        CHECK(!sc.include_tools);
        server_config_release(&sc);
    }
    s = mcp_config_find(c, "timed");
    if (s && server_config_parse(s->raw, &sc, NULL) == 0) {
        CHECK_INT(server_config_request_ms(&sc, s, &st), 0); /* the entry's "timeout" */
        server_config_release(&sc);
    }
    s = mcp_config_find(c, "notes");
    CHECK(s && !s->error);
    /* "$env:NAME" and "!command" are the adapter's value forms, read as it reads them */
    static const char *const notes[] = {
        "\"approveTools\" is accepted and not applied: the bridge asks no one before a call",
        "\"tasks\" is not applied: the bridge does not use the MCP Tasks extension",
    };
    CHECK_INT(s ? vlen(s->warnings) : 0, ELEMENTSOF(notes));
    for (size_t i = 0; s && i < ELEMENTSOF(notes) && i < vlen(s->warnings); i++)
        CHECK_CONTAINS(s->warnings[i], notes[i]);
    /* "trace" is read: the entry is traced whatever the settings say */
    CHECK(s && server_config_entry_traced(s, &st));
    CHECK(!server_config_entry_traced(mcp_config_find(c, "plain"), &st));
    /* searchKeywords is read: the proxy tool's search uses it (test_proxy_search) */
    if (s && server_config_parse(s->raw, &sc, NULL) >= 0) {
        CHECK_STR(json_object_to_json_string(sc.search_keywords), "{ \"*\": [ \"gh\" ] }");
        server_config_release(&sc);
    }
    /* of another shape: the key alone is dropped, with a warning */
    struct json_object *bad = json_tokener_parse(
        "{\"command\": \"x\", \"searchKeywords\": {\"a\": [\"k\"], \"b\": \"k\"}}");
    struct err e = ERR_INIT;
    CHECK_INT(server_config_parse(bad, &sc, &e), 1);
    CHECK(!sc.search_keywords);
    CHECK_CONTAINS(err_msg(&e), "\"searchKeywords\" of 'b' must be an array of strings: it is "
                                "ignored");
    server_config_release(&sc);
    err_clear(&e);
    json_object_put(bad);
    s = mcp_config_find(c, "env");
    /* "!cat key", "~/work" and "inheritEnv": true are read as the adapter reads them */
    CHECK(s && !s->error && vlen(s->warnings) == 0);
    s = mcp_config_find(c, "store");
    /* the adapter's store is read (through secrets), without a warning */
    CHECK(s && !s->error && s->bearer_token_store && vlen(s->warnings) == 0);
    s = mcp_config_find(c, "sock");
    CHECK(s && s->error && strstr(s->error, "\"socket\" (an rmcp-mux socket) is not supported"));
    mcp_config_free(c);
}

/* settings.trace and the entries' "trace": an entry's own word first, else enabled; a member of
 * another kind dropped alone (its default holds), an unknown one warned about, a trace that is no
 * object dropped */
static void test_trace(void)
{
    setup("sc-trace");
    put(USER, "{'settings': {'trace': {'enabled': true, 'file': 't/x.jsonl', 'maxBytes': 4096,"
              " 'maxEvents': 7.5}},"
              " 'mcpServers': {'on': {'command': 'x'}, 'off': {'command': 'x', 'trace': false},"
              " 'bad': {'command': 'x', 'trace': 'yes'}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_diag_count(c), 0);
    struct server_settings st;
    struct server_trace_settings ts;
    server_settings_get(c, &st);
    server_config_trace_settings(c, &ts);
    CHECK(st.trace && ts.enabled);
    CHECK_STR(ts.file, "t/x.jsonl");
    CHECK_INT(ts.max_bytes, 4096);
    CHECK_INT(ts.max_events, 7);
    CHECK(server_config_entry_traced(mcp_config_find(c, "on"), &st));
    CHECK(!server_config_entry_traced(mcp_config_find(c, "off"), &st));
    const struct mcp_server *s = mcp_config_find(c, "bad");
    CHECK(s && server_config_entry_traced(s, &st)); /* dropped: the settings' */
    CHECK_INT(s ? vlen(s->warnings) : 0, 1);
    if (s && vlen(s->warnings) == 1)
        CHECK_CONTAINS(s->warnings[0], "\"trace\" must be");
    mcp_config_free(c);

    put(USER, "{'settings': {'trace': {'enabled': 'yes', 'file': '', 'maxBytes': -1,"
              " 'maxEvents': 'many', 'dir': 'x'}}}");
    c = load();
    CHECK_INT(mcp_config_diag_count(c), 5);
    for (size_t i = 0; i < mcp_config_diag_count(c); i++)
        CHECK_CONTAINS(mcp_config_diag_at(c, i)->message, "settings.trace.");
    if (mcp_config_diag_count(c) == 5)
        CHECK_CONTAINS(mcp_config_diag_at(c, 4)->message,
                       "\"settings.trace.dir\" is not a key of the trace: it is ignored");
    server_settings_get(c, &st);
    server_config_trace_settings(c, &ts);
    CHECK(!st.trace && !ts.enabled && !ts.file && !ts.max_bytes && !ts.max_events);
    mcp_config_free(c);

    put(USER, "{'settings': {'trace': true}}");
    c = load();
    CHECK_INT(mcp_config_diag_count(c), 1);
    if (mcp_config_diag_count(c) == 1)
        CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                       "\"settings.trace\" must be an object ({\"enabled\": true, \"file\", "
                       "\"maxBytes\", \"maxEvents\"}), not a boolean: it is ignored");
    server_settings_get(c, &st);
    CHECK(!st.trace);
    mcp_config_free(c);
    server_settings_get(NULL, &st);
    server_config_trace_settings(NULL, &ts);
    CHECK(!st.trace && !ts.enabled);
}

TESTS_MAIN(test_settings_one_key, test_adapter_keys, test_rejections, test_fields, test_tool_prefix,
           test_auto_auth, test_load_object, test_settings, test_adapter_entry, test_trace)
