/* test_mcp_config.c - the layers: which files, in which order, merged how (entries and
 * settings), the root keys, diagnostics, the tools' checks, a configuration held in memory */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/json.h"
#include "credkit/mcp_config.h"
#include "credkit/secmem.h"

#include "mcp_fixture.h"

static struct mcp_config *load_opts(const struct mcp_config_opts *o)
{
    struct err e = ERR_INIT;
    struct mcp_config *c = NULL;
    int r = mcp_config_load(o, &c, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        fprintf(stderr, "load: %s\n", err_msg(&e));
    return c;
}

static struct mcp_config *load(void)
{
    struct mcp_config_opts o = {.cwd = P("home/proj")};
    return load_opts(&o);
}

static void test_layering(void)
{
    setup("layering");
    put("bundled.json", "{'mcpServers': {'b': {'command': 'bundled-b'},"
                        " 'only-bundled': {'command': 'x'}}}");
    put(SHARED, "{'mcpServers': {'a': {'url': 'https://shared.example/a',"
                " 'headers': {'X-Shared': 'yes'}, 'timeout': 100},"
                " 'b': {'command': 'shared-b'}, 's': {'command': 's'}}}");
    put(USER, "{'mcpServers': {'a': {'command': 'user-a', 'args': ['1']},"
              " 'u': {'command': 'u'}, 's': {'url': 'https://user.example/s'}}}");
    put(PROJ1, "{'mcpServers': {'a': {'url': 'https://proj1.example/a'}, 'p1': {'command': 'p'},"
               " 'u': {'url': 'https://proj1.example/u'}}}");
    put(PROJ2, "{'mcpServers': {'a': {'url': 'https://proj2.example/a', 'timeout': 5}}}");

    struct mcp_config_opts o = {.cwd = P("home/proj"), .bundled_path = P("bundled.json")};
    struct mcp_config *c = load_opts(&o);
    if (!c)
        return;
    CHECK_INT(mcp_config_diag_count(c), 0);
    CHECK_INT(mcp_config_count(c), 6);

    /* the highest layer wins, and replaces the whole entry */
    const struct mcp_server *a = mcp_config_find(c, "a");
    CHECK(a && !a->error);
    if (a) {
        CHECK_STR(a->url, "https://proj2.example/a");
        CHECK_INT(a->timeout_ms, 5);
        CHECK_INT(vlen(a->headers), 0); /* the shared entry's header is gone */
        CHECK(a->command == NULL);
        CHECK_INT(vlen(a->args), 0);
        CHECK_INT(a->layer, MCP_LAYER_PROJECT);
        CHECK_STR(a->source, "~/proj/.pi/mcp.json");
    }
    /* project beats user */
    const struct mcp_server *u = mcp_config_find(c, "u");
    CHECK(u && u->url && strcmp(u->url, "https://proj1.example/u") == 0);
    CHECK(u && u->layer == MCP_LAYER_PROJECT && strcmp(u->source, "~/proj/.mcp.json") == 0);
    /* user beats shared */
    const struct mcp_server *s = mcp_config_find(c, "s");
    CHECK(s && s->transport == MCP_TRANSPORT_HTTP && s->command == NULL);
    CHECK(s && s->layer == MCP_LAYER_USER && strcmp(s->source, "~/.pi/agent/mcp.json") == 0);
    /* shared beats bundled */
    const struct mcp_server *b = mcp_config_find(c, "b");
    CHECK(b && b->command && strcmp(b->command, "shared-b") == 0);
    CHECK(b && b->layer == MCP_LAYER_SHARED && strcmp(b->source, "~/.config/mcp/mcp.json") == 0);
    const struct mcp_server *ob = mcp_config_find(c, "only-bundled");
    CHECK(ob && ob->layer == MCP_LAYER_BUNDLED);
    CHECK(mcp_config_find(c, "p1") != NULL);

    /* the five files, in layer order */
    CHECK_INT(mcp_config_file_count(c), 5);
    const char *want[] = {"bundled.json", SHARED, USER, PROJ1, PROJ2};
    for (size_t i = 0; i < 5; i++) {
        bool ex = false;
        CHECK_STR(mcp_config_file_at(c, i, &ex), P(want[i]));
        CHECK(ex);
    }
    CHECK(mcp_config_file_at(c, 5, NULL) == NULL);
    mcp_config_free(c);
}

static void test_files_absent(void)
{
    setup("absent");
    put(PROJ2, "{'mcpServers': {'x': {'command': 'x'}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_diag_count(c), 0); /* missing files are not problems */
    CHECK_INT(mcp_config_file_count(c), 4);
    bool ex = true;
    CHECK_STR(mcp_config_file_at(c, 0, &ex), P(SHARED));
    CHECK(!ex);
    CHECK_STR(mcp_config_file_at(c, 1, &ex), P(USER));
    CHECK(!ex);
    CHECK_STR(mcp_config_file_at(c, 2, &ex), P(PROJ1));
    CHECK(!ex);
    CHECK_STR(mcp_config_file_at(c, 3, &ex), P(PROJ2));
    CHECK(ex);
    CHECK_INT(mcp_config_count(c), 1);
    mcp_config_free(c);

    /* no cwd: no project layers */
    struct mcp_config_opts o = {0};
    c = load_opts(&o);
    if (!c)
        return;
    CHECK_INT(mcp_config_file_count(c), 2);
    CHECK_INT(mcp_config_count(c), 0);
    CHECK(!json_object_object_get_ex(mcp_config_settings(c), "toolPrefix", NULL));
    mcp_config_free(c);

    /* a relative cwd is made absolute */
    char *old = getcwd(NULL, 0);
    CHECK_INT(chdir(P("home")), 0);
    struct mcp_config_opts rel = {.cwd = "proj"};
    c = load_opts(&rel);
    CHECK_INT(chdir(old), 0);
    free(old);
    if (!c)
        return;
    CHECK_STR(mcp_config_file_at(c, 3, NULL), P(PROJ2));
    CHECK(mcp_config_find(c, "x") != NULL);
    mcp_config_free(c);
}

static void test_xdg(void)
{
    setup("xdg");
    put(SHARED, "{'mcpServers': {'home-cfg': {'command': 'x'}}}");
    put("xdg/mcp/mcp.json", "{'mcpServers': {'xdg-cfg': {'command': 'x'}}}");
    setenv("XDG_CONFIG_HOME", P("xdg"), 1);
    struct mcp_config *c = load();
    if (c) {
        CHECK(mcp_config_find(c, "xdg-cfg") != NULL);
        CHECK(mcp_config_find(c, "home-cfg") == NULL);
        CHECK_STR(mcp_config_file_at(c, 0, NULL), P("xdg/mcp/mcp.json"));
        mcp_config_free(c);
    }
    /* a relative XDG_CONFIG_HOME is ignored, as the spec says */
    setenv("XDG_CONFIG_HOME", "relative/dir", 1);
    c = load();
    if (c) {
        CHECK(mcp_config_find(c, "home-cfg") != NULL);
        CHECK(mcp_config_find(c, "xdg-cfg") == NULL);
        mcp_config_free(c);
    }
    unsetenv("XDG_CONFIG_HOME");
}

static void test_root_keys(void)
{
    setup("rootkeys");
    put(USER, "{'servers': {'x': {'command': 'old'}, 'y': {'command': 'y'}},"
              " 'mcpServers': {'x': {'command': 'new'}, 'z': {'command': 'z'}}}");
    put(PROJ1, "{'servers': {'legacy': {'url': 'http://127.0.0.1:9/mcp'}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_count(c), 4);
    const struct mcp_server *x = mcp_config_find(c, "x");
    CHECK(x && x->command && strcmp(x->command, "new") == 0);
    CHECK(mcp_config_find(c, "y") != NULL);
    CHECK(mcp_config_find(c, "z") != NULL);
    const struct mcp_server *l = mcp_config_find(c, "legacy");
    CHECK(l && !l->error && l->transport == MCP_TRANSPORT_HTTP);
    mcp_config_free(c);
}

static void test_config_override(void)
{
    setup("override");
    put(USER, "{'mcpServers': {'default-user': {'command': 'x'}}}");
    put("custom.json", "{'mcpServers': {'custom': {'command': 'x'}}}");
    struct mcp_config_opts o = {.config_path = P("custom.json"), .cwd = P("home/proj")};
    struct mcp_config *c = load_opts(&o);
    if (c) {
        CHECK(mcp_config_find(c, "custom") != NULL);
        CHECK(mcp_config_find(c, "default-user") == NULL);
        const struct mcp_server *s = mcp_config_find(c, "custom");
        CHECK(s && s->layer == MCP_LAYER_USER);
        CHECK_STR(mcp_config_file_at(c, 1, NULL), P("custom.json"));
        mcp_config_free(c);
    }

    /* an explicit path that does not exist fails the load */
    struct err e = ERR_INIT;
    struct mcp_config *sentinel = (struct mcp_config *)(uintptr_t)0x1, *r = sentinel;
    o.config_path = P("nope.json");
    CHECK_INT(mcp_config_load(&o, &r, &e), -ENOENT);
    CHECK(r == sentinel);
    char quoted[4200];
    snprintf(quoted, sizeof(quoted), "'%s'", P("nope.json"));
    CHECK_CONTAINS(e.msg, quoted);
    CHECK_CONTAINS(e.msg, "does not exist");
}

/* A file others can change still serves (refusing it would take every server away), with a
 * warning that says who can change it and the chmod that fixes it. */
static void test_others_can_write(void)
{
    setup("otherswrite");
    put(USER, "{'mcpServers': {'a': {'command': 'x'}}}");
    CHECK_INT(chmod(P("home/.pi/agent/mcp.json"), 0666), 0);
    struct mcp_config *c = load();
    if (!c)
        return;
    CHECK(mcp_config_find(c, "a") != NULL);
    CHECK_INT(mcp_config_diag_count(c), 1);
    const struct mcp_config_diag *d = mcp_config_diag_at(c, 0);
    CHECK(d && d->warning);
    if (d) {
        CHECK_STR(d->source, "~/.pi/agent/mcp.json");
        CHECK_CONTAINS(d->message, "can be changed by every user (mode 0666): run chmod go-w");
        CHECK_CONTAINS(d->message, "whoever can change it chooses the commands it runs");
    }
    mcp_config_free(c);

    CHECK_INT(chmod(P("home/.pi/agent/mcp.json"), 0644), 0);
    c = load();
    if (c)
        CHECK_INT(mcp_config_diag_count(c), 0);
    mcp_config_free(c);
}

static void test_malformed(void)
{
    setup("malformed");
    put(SHARED, "{'mcpServers': {'shared-ok': {'command': 'x'}}}");
    put(USER, "{\n  'mcpServers': {\n    'a': {'command': 'x'},,\n  }\n}\n");
    put(PROJ1, "[1, 2]");
    put(PROJ2, "{'mcpServers': {'proj-ok': {'command': 'x'}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_diag_count(c), 2);
    const struct mcp_config_diag *d = mcp_config_diag_at(c, 0);
    CHECK(d != NULL);
    if (d) {
        CHECK_STR(d->source, "~/.pi/agent/mcp.json");
        CHECK_CONTAINS(d->message, "'~/.pi/agent/mcp.json': line 3, column");
    }
    d = mcp_config_diag_at(c, 1);
    CHECK(d != NULL);
    if (d) {
        CHECK_STR(d->source, "~/proj/.mcp.json");
        CHECK_CONTAINS(d->message, "'~/proj/.mcp.json': the root must be an object, not an array");
    }
    CHECK(mcp_config_diag_at(c, 2) == NULL);
    /* the other layers still load; a broken file still counts as existing */
    CHECK(mcp_config_find(c, "shared-ok") != NULL);
    CHECK(mcp_config_find(c, "proj-ok") != NULL);
    CHECK(mcp_config_find(c, "a") == NULL);
    bool ex = false;
    (void)mcp_config_file_at(c, 1, &ex);
    CHECK(ex);
    mcp_config_free(c);

    /* "mcpServers" (or "servers") that is not an object skips the file, settings included */
    setup("malformed2");
    put(USER, "{'mcpServers': ['a'], 'servers': {'b': {'command': 'x'}},"
              " 'settings': {'toolPrefix': 'none'}}");
    put(PROJ1, "{'servers': 'x', 'mcpServers': {'c': {'command': 'x'}}}");
    put(PROJ2, "");
    c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_count(c), 0);
    CHECK_INT(mcp_config_diag_count(c), 3);
    if (mcp_config_diag_count(c) == 3) {
        CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                       "'~/.pi/agent/mcp.json': \"mcpServers\" must be an object, not an array");
        CHECK_CONTAINS(mcp_config_diag_at(c, 1)->message,
                       "'~/proj/.mcp.json': \"servers\" must be an object, not a string");
        CHECK_CONTAINS(mcp_config_diag_at(c, 2)->message, "'~/proj/.pi/mcp.json'");
        CHECK_CONTAINS(mcp_config_diag_at(c, 2)->message, "empty");
    }
    CHECK(!json_object_object_get_ex(mcp_config_settings(c), "toolPrefix", NULL));
    mcp_config_free(c);

    /* bounded: a file beyond 4 MiB is a diagnostic */
    setup("malformed3");
    size_t big = 4u * 1024u * 1024u + 16;
    char *text = malloc(big + 1);
    CHECK(text != NULL);
    if (!text)
        return;
    memset(text, ' ', big);
    memcpy(text, "{'mcpServers': {'big': {'command': 'x'}}}", 41);
    text[big] = 0;
    put(USER, text);
    free(text);
    c = load();
    if (!c)
        return;
    CHECK(mcp_config_find(c, "big") == NULL);
    CHECK_INT(mcp_config_diag_count(c), 1);
    if (mcp_config_diag_count(c) == 1)
        CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                       "'~/.pi/agent/mcp.json' is larger than 4194304 bytes");
    mcp_config_free(c);
}

static void test_lookup_callback(void)
{
    setup("lookup");
    setenv("MCPT_IN_ENV", "x", 1);
    put(USER, "{'mcpServers': {"
              "'cb': {'url': 'https://x.example', 'headers': {'Authorization': 'Bearer ${A}'}},"
              "'env': {'url': 'https://x.example', 'headers': {'Authorization': '${MCPT_IN_ENV}'}},"
              "'locked': {'url': 'https://x.example', 'headers': {'X': '${LOCKED}'}},"
              "'replaced': {'url': 'https://x.example/${COUNTED}'}}}");
    /* the higher layer replaces "replaced": the lower entry's variable is never looked up */
    put(PROJ1, "{'mcpServers': {'replaced': {'command': 'x'}}}");
    static const char *const kv[] = {"A", "alpha", "COUNTED", "https://y.example", NULL};
    struct table t = {kv, 0};
    struct mcp_config_opts o = {
        .cwd = P("home/proj"), .lookup = table_lookup, .lookup_userdata = &t};
    struct mcp_config *c = load_opts(&o);
    if (!c)
        return;
    const struct mcp_server *s = mcp_config_find(c, "cb");
    CHECK(s && !s->error);
    s = mcp_config_find(c, "env");
    CHECK(s && s->error && strstr(s->error, "variable 'MCPT_IN_ENV' is not set"));
    s = mcp_config_find(c, "locked");
    CHECK(s && s->error &&
          strstr(s->error, "server 'locked': header 'X': cannot look up variable 'LOCKED': "
                           "the keyring is locked"));
    CHECK_INT(t.calls, 3);
    mcp_config_free(c);
    unsetenv("MCPT_IN_ENV");
}

/* A tool's settings check: userdata is an int counting its calls; a toolPrefix of "bogus" is
 * refused, one of "oom" fails the load. */
static int check_settings(void *userdata, struct json_object *settings, struct err *e)
{
    const char *p = json_get_string(settings, "toolPrefix");
    (*(int *)userdata)++;
    if (p && strcmp(p, "oom") == 0)
        return -ENOMEM;
    if (p && strcmp(p, "bogus") == 0)
        return err_set(e, -EINVAL, "\"settings.toolPrefix\" is bogus");
    return 0;
}

/* "settings" merge key by key, the highest layer winning; null does not override; a layer the
 * tool's check refuses is a diagnostic and adds nothing, its servers still count */
static void test_settings(void)
{
    setup("settings");
    put(SHARED, "{'settings': {'toolPrefix': 'short', 'a': 1, 'b': 'shared'}}");
    put(USER, "{'settings': {'toolPrefix': 'none', 'other': 1, 'a': null}}");
    put(PROJ1, "{'settings': {'somethingElse': true, 'b': 'proj'}}");
    put(PROJ2, "{'settings': {'toolPrefix': 'bogus', 'c': 3}, 'mcpServers': {'a': {'command': "
               "'x'}}}");
    struct mcp_config *c = load();
    if (c) {
        /* without a check every layer merges */
        struct json_object *st = mcp_config_settings(c);
        CHECK_STR(json_get_string(st, "toolPrefix"), "bogus");
        CHECK_STR(json_get_string(st, "b"), "proj");
        int64_t x = 0;
        CHECK(json_get_int64(st, "a", &x) && x == 1);
        CHECK(json_get_int64(st, "other", &x) && x == 1);
        CHECK(json_get_int64(st, "c", &x) && x == 3);
        CHECK(json_object_object_get_ex(st, "somethingElse", NULL));
        CHECK_INT(mcp_config_diag_count(c), 0);
        mcp_config_free(c);
    }

    int calls = 0;
    struct mcp_config_opts o = {
        .cwd = P("home/proj"), .check_settings = check_settings, .check_userdata = &calls};
    c = load_opts(&o);
    if (c) {
        struct json_object *st = mcp_config_settings(c);
        CHECK_STR(json_get_string(st, "toolPrefix"), "none");
        CHECK(!json_object_object_get_ex(st, "c", NULL));
        CHECK_INT(calls, 4);
        CHECK_INT(mcp_config_diag_count(c), 1);
        if (mcp_config_diag_count(c) == 1) {
            CHECK_STR(mcp_config_diag_at(c, 0)->source, "~/proj/.pi/mcp.json");
            CHECK_STR(mcp_config_diag_at(c, 0)->message,
                      "'~/proj/.pi/mcp.json': \"settings.toolPrefix\" is bogus: it is ignored");
        }
        CHECK(mcp_config_find(c, "a") != NULL);
        mcp_config_free(c);
    }

    /* settings that are not an object: a diagnostic, never shown to the check */
    put(PROJ2, "{'settings': {'toolPrefix': 'server'}}");
    put(PROJ1, "{'settings': []}");
    calls = 0;
    c = load_opts(&o);
    if (c) {
        CHECK_STR(json_get_string(mcp_config_settings(c), "toolPrefix"), "server");
        CHECK_INT(calls, 3);
        CHECK_INT(mcp_config_diag_count(c), 1);
        if (mcp_config_diag_count(c) == 1)
            CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                           "\"settings\" must be an object, not an array");
        mcp_config_free(c);
    }

    /* no settings anywhere: an empty object */
    setup("settings2");
    c = load();
    CHECK(c && mcp_config_settings(c) && json_object_object_length(mcp_config_settings(c)) == 0);
    mcp_config_free(c);
    CHECK(mcp_config_settings(NULL) == NULL);

    /* the check runs out of memory: the load fails */
    put(USER, "{'settings': {'toolPrefix': 'oom'}}");
    o.cwd = P("home/proj");
    struct err e = ERR_INIT;
    c = NULL;
    CHECK_INT(mcp_config_load(&o, &c, &e), -ENOMEM);
    CHECK(c == NULL);
}

/* A tool's entry check: userdata collects the names it is asked about; an "x-bad" key is
 * refused, an "x-oom" one fails the load. */
static int check_entry(void *userdata, const char *name, struct json_object *raw, struct err *e)
{
    char *seen = userdata;
    size_t n = strlen(seen);
    snprintf(seen + n, 256 - n, "%s,", name);
    CHECK(json_object_is_type(raw, json_type_object));
    if (json_object_object_get_ex(raw, "x-oom", NULL))
        return -ENOMEM;
    if (json_object_object_get_ex(raw, "x-bad", NULL))
        return err_set(e, -EINVAL, "\"x-bad\" is not allowed");
    return 0;
}

/* the tool's check sees the winning entry of each name once its generic keys are valid, before
 * its variables are expanded; its error is the entry's error, in the loader's words */
static void test_check_entry(void)
{
    setup("checkentry");
    unsetenv("MCPT_UNSET_X");
    put(SHARED, "{'mcpServers': {'replaced': {'command': 'x', 'x-bad': 1}}}");
    put(USER, "{'mcpServers': {'ok': {'command': 'x'}, 'bad': {'command': 'x', 'x-bad': 1},"
              " 'generic': {'command': 5, 'x-bad': 1}, 'replaced': {'command': 'y'},"
              " 'vars': {'url': 'https://${MCPT_UNSET_X}/', 'x-bad': 1}}}");
    char seen[256] = "";
    struct mcp_config_opts o = {
        .cwd = P("home/proj"), .check_entry = check_entry, .check_userdata = seen};
    struct mcp_config *c = load_opts(&o);
    if (!c)
        return;
    CHECK_STR(seen, "bad,ok,replaced,vars,");
    const struct mcp_server *s = mcp_config_find(c, "ok");
    CHECK(s && !s->error);
    s = mcp_config_find(c, "bad");
    CHECK(s && s->error);
    if (s && s->error)
        CHECK_STR(s->error, "'~/.pi/agent/mcp.json': server 'bad': \"x-bad\" is not allowed");
    s = mcp_config_find(c, "generic");
    CHECK(s && s->error && strstr(s->error, "\"command\" must be a string, not a number"));
    s = mcp_config_find(c, "replaced");
    CHECK(s && !s->error);
    s = mcp_config_find(c, "vars");
    CHECK(s && s->error && strstr(s->error, "\"x-bad\" is not allowed") && !s->missing_vars);
    mcp_config_free(c);

    /* a configuration in memory is checked the same way */
    struct json_object *root =
        json_tokener_parse("{\"mcpServers\": {\"m\": {\"command\": \"x\", \"x-bad\": true}}}");
    seen[0] = 0;
    c = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(mcp_config_load_object(root, "command line", &o, &c, &e), 0);
    s = mcp_config_find(c, "m");
    CHECK(s && s->error &&
          strcmp(s->error, "'command line': server 'm': \"x-bad\" is not allowed") == 0);
    CHECK_STR(seen, "m,");
    mcp_config_free(c);
    json_object_put(root);

    /* the check runs out of memory: the load fails */
    put(PROJ1, "{'mcpServers': {'oom': {'command': 'x', 'x-oom': 1}}}");
    c = NULL;
    seen[0] = 0;
    o.cwd = P("home/proj");
    CHECK_INT(mcp_config_load(&o, &c, &e), -ENOMEM);
    CHECK(c == NULL);
}

static void test_sorted(void)
{
    setup("sorted");
    put(SHARED, "{'mcpServers': {'b': {'command': 'x'}, 'a': {'command': 'x'}}}");
    put(USER,
        "{'mcpServers': {'_x': {'command': 'x'}, 'C': {'command': 'x'}, 'a': {'command': 'y'}}}");
    put(PROJ2, "{'mcpServers': {'aa': {'command': 'x'}, 'a b': {'command': 'x'}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    const char *want[] = {"C", "_x", "a", "a b", "aa", "b"};
    CHECK_INT(mcp_config_count(c), ELEMENTSOF(want));
    for (size_t i = 0; i < ELEMENTSOF(want) && i < mcp_config_count(c); i++)
        CHECK_STR(mcp_config_at(c, i)->name, want[i]);
    const struct mcp_server *a = mcp_config_find(c, "a");
    CHECK(a && strcmp(a->command, "y") == 0);
    CHECK(mcp_config_find(c, "A") == NULL);
    CHECK(mcp_config_find(c, "") == NULL);
    CHECK(mcp_config_find(c, "zz") == NULL);
    for (size_t i = 0; i < ELEMENTSOF(want); i++)
        CHECK(mcp_config_find(c, want[i]) == mcp_config_at(c, i));
    mcp_config_free(c);
    mcp_config_free(NULL);
    CHECK_INT(mcp_config_count(NULL), 0);
}

/* A configuration held in memory (a URL from the command line) is validated exactly like a
 * file: same messages, named after the given source; lookup from opts; no files listed. */
static void test_load_object(void)
{
    struct err e = ERR_INIT;
    struct mcp_config *c = NULL;
    setup("object");
    /* the files of the layers are not read */
    put(USER, "{'mcpServers': {'fromfile': {'command': 'x'}}}");
    struct json_object *root = json_tokener_parse(
        "{\"mcpServers\": {\"ok\": {\"url\": \"https://${HOST}/mcp\", \"headers\": "
        "{\"Authorization\": \"Bearer ${TOK}\"}},"
        "\"ftp\": {\"url\": \"ftp://x.example\"},"
        "\"both\": {\"url\": \"https://x.example\", \"command\": \"x\"},"
        "\"nohost\": {\"url\": \"https://${NOPE}/\"}},"
        "\"settings\": {\"toolPrefix\": \"short\"}}");
    CHECK(root != NULL);
    static const char *const kv[] = {"HOST", "mcp.example.com", "TOK", "t0k", NULL};
    struct table t = {kv, 0};
    struct mcp_config_opts o = {
        .cwd = P("home/proj"), .lookup = table_lookup, .lookup_userdata = &t};
    CHECK_INT(mcp_config_load_object(root, "command line", &o, &c, &e), 0);
    if (!c) {
        json_object_put(root);
        return;
    }
    CHECK_INT(mcp_config_count(c), 4);
    CHECK(mcp_config_find(c, "fromfile") == NULL);
    CHECK_INT(mcp_config_file_count(c), 0);
    CHECK_INT(mcp_config_diag_count(c), 0);
    CHECK_STR(json_get_string(mcp_config_settings(c), "toolPrefix"), "short");
    const struct mcp_server *s = mcp_config_find(c, "ok");
    CHECK(s && !s->error && s->transport == MCP_TRANSPORT_HTTP);
    CHECK(s && strcmp(s->url, "https://${HOST}/mcp") == 0);
    CHECK(s && s->headers[0] && strcmp(s->headers[0], "Authorization: Bearer ${TOK}") == 0);
    CHECK(s && strcmp(s->source, "command line") == 0);
    s = mcp_config_find(c, "ftp");
    CHECK(s && s->error && strstr(s->error, "'command line': server 'ftp': "));
    s = mcp_config_find(c, "both");
    CHECK(s && s->error && strstr(s->error, "'command line': server 'both': "));
    s = mcp_config_find(c, "nohost");
    CHECK(s && s->error && strstr(s->error, "variable 'NOPE' is not set"));
    CHECK(s && s->missing_vars && strcmp(s->missing_vars[0], "NOPE") == 0);
    /* the object stays the caller's and unchanged */
    CHECK(json_object_get_type(root) == json_type_object);
    mcp_config_free(c);
    c = NULL;

    /* the same entry from a file and from memory give the same verdicts */
    put(USER, "{'mcpServers': {'ftp': {'url': 'ftp://x.example'}}}");
    struct mcp_config *f = load();
    CHECK_INT(mcp_config_load_object(root, "command line", &o, &c, &e), 0);
    const struct mcp_server *a = mcp_config_find(f, "ftp"), *b = mcp_config_find(c, "ftp");
    CHECK(a && b && a->error && b->error);
    if (a && b && a->error && b->error)
        CHECK_STR(strchr(a->error, ':'), strchr(b->error, ':'));
    mcp_config_free(f);
    mcp_config_free(c);
    c = NULL;
    json_object_put(root);

    /* shapes that are not usable are diagnostics, as for a file */
    root = json_tokener_parse("[1]");
    CHECK_INT(mcp_config_load_object(root, "command line", NULL, &c, &e), 0);
    CHECK_INT(mcp_config_count(c), 0);
    CHECK_INT(mcp_config_diag_count(c), 1);
    if (mcp_config_diag_count(c) == 1)
        CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                       "'command line': the root must be an object");
    mcp_config_free(c);
    c = NULL;
    json_object_put(root);
    root = json_tokener_parse("{\"mcpServers\": []}");
    CHECK_INT(mcp_config_load_object(root, "command line", NULL, &c, &e), 0);
    CHECK_INT(mcp_config_count(c), 0);
    CHECK_INT(mcp_config_diag_count(c), 1);
    mcp_config_free(c);
    c = NULL;
    json_object_put(root);

    CHECK_INT(mcp_config_load_object(NULL, "x", NULL, &c, &e), -EINVAL);
    CHECK(c == NULL);
}

/* ---- imports ------------------------------------------------------------------------------ */

static void check_shadowed(const struct mcp_server *s, const char *const *want)
{
    size_t n = 0;
    while (want[n])
        n++;
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK(s->shadowed != NULL);
    CHECK_INT(vlen(s->shadowed), n);
    for (size_t i = 0; i < n && s->shadowed && i < vlen(s->shadowed); i++)
        CHECK_STR(s->shadowed[i], want[i]);
}

/* A layer's imports rank below its own entries and above the lower layers; the first import
 * listed wins; every winner knows what it shadowed. */
static void test_import_priority(void)
{
    setup("import-priority");
    put(SHARED, "{'mcpServers': {'w': {'command': 'shared-w'}, 'v': {'command': 'shared-v'}}}");
    put(USER, "{'imports': ['cursor', 'claude-code'], 'mcpServers': {'x': {'command': 'user-x'}}}");
    put("home/.cursor/mcp.json",
        "{'mcpServers': {'x': {'command': 'cursor-x'}, 'y': {'command': 'cursor-y'}}}");
    put("home/.claude.json", "{'mcpServers': {'y': {'command': 'claude-y'},"
                             " 'w': {'command': 'claude-w'}, 'z': {'command': 'claude-z'}}}");
    put(PROJ2, "{'mcpServers': {'v': {'command': 'proj-v'}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_diag_count(c), 0);
    CHECK_INT(mcp_config_count(c), 5);

    const struct mcp_server *x = mcp_config_find(c, "x");
    CHECK(x && !x->error && strcmp(x->command, "user-x") == 0 && x->import == NULL);
    CHECK(x && strcmp(x->source, "~/.pi/agent/mcp.json") == 0 && x->layer == MCP_LAYER_USER);
    check_shadowed(x, (const char *const[]){"~/.cursor/mcp.json (import cursor)", NULL});

    const struct mcp_server *y = mcp_config_find(c, "y");
    CHECK(y && !y->error && strcmp(y->command, "cursor-y") == 0);
    CHECK(y && y->import && strcmp(y->import, "cursor") == 0);
    CHECK(y && strcmp(y->source, "~/.cursor/mcp.json") == 0 && y->layer == MCP_LAYER_USER);
    check_shadowed(y, (const char *const[]){"~/.claude.json (import claude-code)", NULL});

    /* an import of the user layer beats the shared layer */
    const struct mcp_server *w = mcp_config_find(c, "w");
    CHECK(w && strcmp(w->command, "claude-w") == 0 && w->import &&
          strcmp(w->import, "claude-code") == 0);
    CHECK(w && strcmp(w->source, "~/.claude.json") == 0 && w->layer == MCP_LAYER_USER);
    check_shadowed(w, (const char *const[]){"~/.config/mcp/mcp.json", NULL});

    const struct mcp_server *z = mcp_config_find(c, "z");
    check_shadowed(z, (const char *const[]){NULL});

    /* a clash between layers is recorded too */
    const struct mcp_server *v = mcp_config_find(c, "v");
    CHECK(v && strcmp(v->command, "proj-v") == 0 && v->import == NULL);
    check_shadowed(v, (const char *const[]){"~/.config/mcp/mcp.json", NULL});

    /* the imported files are listed apart from the layers */
    CHECK_INT(mcp_config_file_count(c), 4);
    CHECK_INT(mcp_config_import_file_count(c), 4);
    const char *want[][2] = {{"home/.cursor/mcp.json", "cursor"},
                             {"home/proj/.cursor/mcp.json", "cursor"},
                             {"home/.claude/mcp.json", "claude-code"},
                             {"home/.claude.json", "claude-code"}};
    const bool exist[] = {true, false, false, true};
    for (size_t i = 0; i < 4; i++) {
        const char *imp = NULL;
        bool ex = !exist[i];
        CHECK_STR(mcp_config_import_file_at(c, i, &imp, &ex), P(want[i][0]));
        CHECK_STR(imp, want[i][1]);
        CHECK(ex == exist[i]);
    }
    CHECK(mcp_config_import_file_at(c, 4, NULL, NULL) == NULL);
    mcp_config_free(c);

    /* the same imports listed the other way round: claude-code wins */
    put(USER, "{'imports': ['claude-code', 'cursor', 'claude-code']}");
    c = load();
    if (!c)
        return;
    y = mcp_config_find(c, "y");
    CHECK(y && strcmp(y->command, "claude-y") == 0);
    check_shadowed(y, (const char *const[]){"~/.cursor/mcp.json (import cursor)", NULL});
    x = mcp_config_find(c, "x");
    CHECK(x && strcmp(x->command, "cursor-x") == 0);
    CHECK_INT(mcp_config_import_file_count(c), 4); /* each file once */
    mcp_config_free(c);
}

/* Every clash between layers leaves a trace, highest first; a project layer's import ranks
 * above the user layer and below the project file that imports it. */
static void test_import_layers(void)
{
    setup("import-layers");
    put(SHARED, "{'mcpServers': {'a': {'command': 'shared'}}}");
    put(USER, "{'mcpServers': {'a': {'command': 'user'}, 'b': {'command': 'user-b'}}}");
    put(PROJ1, "{'imports': ['cursor'], 'mcpServers': {'a': {'command': 'proj1'}}}");
    put(PROJ2, "{'mcpServers': {'a': {'command': 'proj2'}}}");
    put("home/proj/.cursor/mcp.json", "{'mcpServers': {'a': {'command': 'cursor-proj'},"
                                      " 'b': {'command': 'cursor-b'}}}");
    put("home/.cursor/mcp.json", "{'mcpServers': {'a': {'command': 'cursor-user'}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    const struct mcp_server *a = mcp_config_find(c, "a");
    CHECK(a && strcmp(a->command, "proj2") == 0);
    check_shadowed(
        a, (const char *const[]){"~/proj/.mcp.json", "~/proj/.cursor/mcp.json (import cursor)",
                                 "~/.cursor/mcp.json (import cursor)", "~/.pi/agent/mcp.json",
                                 "~/.config/mcp/mcp.json", NULL});
    const struct mcp_server *b = mcp_config_find(c, "b");
    CHECK(b && strcmp(b->command, "cursor-b") == 0 && b->layer == MCP_LAYER_PROJECT);
    CHECK(b && strcmp(b->source, "~/proj/.cursor/mcp.json") == 0);
    check_shadowed(b, (const char *const[]){"~/.pi/agent/mcp.json", NULL});
    mcp_config_free(c);

    /* a file imported by two layers: the higher import wins, and the file is not named as
     * shadowing itself; its problems are told once */
    put(USER, "{'imports': ['cursor'], 'mcpServers': {'u': {'command': 'user-u'}}}");
    put(PROJ1, "{'imports': ['cursor']}");
    put(PROJ2, "{}");
    put("home/.cursor/mcp.json", "{'mcpServers': {'u': {'command': 'cursor-u'},"
                                 " 'me': {'command': 'mcp-bridge'}}}");
    c = load();
    if (!c)
        return;
    const struct mcp_server *u = mcp_config_find(c, "u");
    CHECK(u && strcmp(u->command, "cursor-u") == 0 && u->layer == MCP_LAYER_PROJECT);
    check_shadowed(u, (const char *const[]){"~/.pi/agent/mcp.json", NULL});
    a = mcp_config_find(c, "a");
    CHECK(a && strcmp(a->command, "cursor-proj") == 0);
    /* (the user layer's import of cursor reads the project's .cursor/mcp.json too) */
    check_shadowed(a, (const char *const[]){"~/.config/mcp/mcp.json", NULL});
    CHECK_INT(mcp_config_diag_count(c), 1);
    mcp_config_free(c);

    /* two entries of one file: ~/.claude.json's project entry shadows its own, both named */
    char text[4096];
    snprintf(text, sizeof(text),
             "{'mcpServers': {'cc': {'command': 'user'}},"
             " 'projects': {'%s': {'mcpServers': {'cc': {'command': 'local'}}}}}",
             P("home/proj"));
    put("home/.claude.json", text);
    put(USER, "{'imports': ['claude-code']}");
    put(PROJ1, "{'imports': ['claude-code']}");
    c = load();
    if (!c)
        return;
    const struct mcp_server *cc = mcp_config_find(c, "cc");
    CHECK(cc && strcmp(cc->command, "local") == 0 && cc->layer == MCP_LAYER_PROJECT);
    check_shadowed(cc, (const char *const[]){"~/.claude.json (import claude-code)", NULL});
    mcp_config_free(c);
}

/* Only the winner is validated and expanded: a shadowed entry's variables are never looked up
 * and its errors never shown; an imported winner is validated like any entry, its errors
 * naming the imported file. */
static void test_import_validation(void)
{
    setup("import-validation");
    put(USER, "{'imports': ['cursor'], 'mcpServers': {'a': {'command': 'a'}}}");
    put("home/.cursor/mcp.json",
        "{'mcpServers': {'a': {'url': 'https://${SECRET_A}/'}, 'bad': {'command': ''},"
        " 'v': {'url': 'https://${HOST}/mcp'}}}");
    static const char *const kv[] = {"HOST", "h.example", NULL};
    struct table t = {kv, 0};
    struct mcp_config_opts o = {
        .cwd = P("home/proj"), .lookup = table_lookup, .lookup_userdata = &t};
    struct mcp_config *c = load_opts(&o);
    if (!c)
        return;
    CHECK_INT(t.calls, 1); /* HOST only: the shadowed entry's SECRET_A was never asked for */
    const struct mcp_server *a = mcp_config_find(c, "a");
    CHECK(a && !a->error);
    const struct mcp_server *bad = mcp_config_find(c, "bad");
    CHECK(bad && bad->error);
    if (bad && bad->error)
        CHECK_CONTAINS(bad->error, "'~/.cursor/mcp.json': server 'bad': ");
    const struct mcp_server *v = mcp_config_find(c, "v");
    CHECK(v && !v->error && v->import && strcmp(v->import, "cursor") == 0);
    mcp_config_free(c);
}

/* An entry that runs the bridge itself is skipped, imported or not, with a note; the entry of
 * the same name below it is used instead. */
static void test_import_self(void)
{
    setup("import-self");
    put(SHARED, "{'mcpServers': {'bridge': {'command': 'real-server'}}}");
    put(USER, "{'imports': ['cursor'],"
              " 'mcpServers': {'bridge': {'command': '/usr/bin/mcp-bridge', 'args': ['serve']}}}");
    put("home/.cursor/mcp.json",
        "{'mcpServers': {'pi': {'command': 'npx', 'args': ['-y', 'mcp-bridge', 'serve']},"
        " 'ok': {'command': 'node', 'args': ['server.js']}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    CHECK(mcp_config_find(c, "pi") == NULL);
    CHECK(mcp_config_find(c, "ok") != NULL);
    const struct mcp_server *b = mcp_config_find(c, "bridge");
    CHECK(b && strcmp(b->command, "real-server") == 0);
    check_shadowed(b, (const char *const[]){NULL});
    CHECK_INT(mcp_config_diag_count(c), 2);
    if (mcp_config_diag_count(c) == 2) {
        CHECK_STR(mcp_config_diag_at(c, 0)->source, "~/.cursor/mcp.json");
        CHECK_STR(mcp_config_diag_at(c, 0)->message,
                  "server 'pi' in '~/.cursor/mcp.json' (import cursor) is skipped: it runs "
                  "mcp-bridge itself, which would start the bridge inside itself");
        CHECK_STR(mcp_config_diag_at(c, 1)->source, "~/.pi/agent/mcp.json");
        CHECK_STR(mcp_config_diag_at(c, 1)->message,
                  "server 'bridge' in '~/.pi/agent/mcp.json' is skipped: it runs mcp-bridge "
                  "itself, which would start the bridge inside itself");
    }
    mcp_config_free(c);
}

/* "imports" that are not usable: diagnostics, and every usable name still imported; problems
 * with an imported file become the configuration's; VS Code's inputs leave a note. */
static void test_import_diags(void)
{
    setup("import-diags");
    put(USER, "{'imports': 'cursor'}");
    struct mcp_config *c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_diag_count(c), 1);
    CHECK_STR(mcp_config_diag_at(c, 0)->message,
              "'~/.pi/agent/mcp.json': \"imports\" must be an array of names (cursor, "
              "claude-code, claude-desktop, vscode, windsurf, codex), not a string: nothing is "
              "imported");
    mcp_config_free(c);

    put(USER, "{'imports': ['Cursor', 5, 'vscode', null]}");
    put("home/proj/.vscode/mcp.json",
        "{'inputs': [{'id': 'tok', 'type': 'promptString'}],"
        " 'servers': {'gh': {'type': 'http', 'url': 'https://gh.example/mcp',"
        " 'headers': {'Authorization': 'Bearer ${input:tok}'}}}}");
    c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_diag_count(c), 3);
    CHECK_STR(mcp_config_diag_at(c, 0)->message,
              "'~/.pi/agent/mcp.json': unknown import 'Cursor' in \"imports\": the accepted ones "
              "are cursor, claude-code, claude-desktop, vscode, windsurf, codex");
    CHECK_CONTAINS(mcp_config_diag_at(c, 1)->message, "\"imports\" element 2 must be a name");
    CHECK_CONTAINS(mcp_config_diag_at(c, 2)->message, "\"imports\" element 4 must be a name");
    CHECK_CONTAINS(mcp_config_diag_at(c, 2)->message, "not null: it is ignored");
    const struct mcp_server *gh = mcp_config_find(c, "gh");
    CHECK(gh && gh->import && strcmp(gh->import, "vscode") == 0);
    CHECK(gh && gh->transport == MCP_TRANSPORT_HTTP);
    CHECK(gh && strcmp(gh->source, "~/proj/.vscode/mcp.json") == 0);
    size_t nw = gh ? vlen(gh->warnings) : 0;
    CHECK(nw >= 1);
    if (nw >= 1)
        CHECK_STR(gh->warnings[nw - 1],
                  "${input:tok} is read from the secret tok: run secrets configure tok");
    mcp_config_free(c);

    /* an imported file that is not JSON, and one whose TOML is not read */
    put(USER, "{'imports': ['windsurf', 'codex'], 'mcpServers': {'mine': {'command': 'm'}}}");
    put("home/.codeium/windsurf/mcp_config.json", "{'mcpServers': }");
    put("home/.codex/config.toml", "[mcp_servers.c]\ncommand = 'c'\nargs = ['x' 'y']\n");
    c = load();
    if (!c)
        return;
    CHECK_INT(mcp_config_count(c), 1);
    CHECK_INT(mcp_config_diag_count(c), 2);
    CHECK_STR(mcp_config_diag_at(c, 0)->source, "~/.codeium/windsurf/mcp_config.json");
    CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                   "'~/.codeium/windsurf/mcp_config.json': line 1");
    CHECK_STR(mcp_config_diag_at(c, 1)->message,
              "'~/.codex/config.toml' (import codex): line 3: expected ',' or ']' in the array: "
              "its servers are not imported");
    mcp_config_free(c);

    /* codex's tables, validated as entries; a configuration held in memory imports too */
    put("home/.codex/config.toml", "[mcp_servers.c]\ncommand = 'c'\nenabled = false\n"
                                   "startup_timeout_sec = 3\n");
    struct json_object *root = json_tokener_parse("{\"imports\": [\"codex\"]}");
    struct err e = ERR_INIT;
    c = NULL;
    struct mcp_config_opts o = {0};
    CHECK_INT(mcp_config_load_object(root, "command line", &o, &c, &e), 0);
    json_object_put(root);
    if (!c)
        return;
    const struct mcp_server *cs = mcp_config_find(c, "c");
    CHECK(cs && !cs->error && cs->timeout_ms == 3000 &&
          strcmp(cs->source, "~/.codex/config.toml") == 0);
    bool dis = false;
    CHECK(cs && json_get_bool(cs->raw, "disabled", &dis) && dis);
    mcp_config_free(c);
}

/* A key given twice is never resolved silently: a server's name or a key inside an entry makes
 * that entry invalid with both lines, the other entries work; elsewhere the file is not used */
static void test_duplicates(void)
{
    setup("dups");
    put(USER, "{'mcpServers': {\n"
              "  'a': {'command': 'first'},\n"
              "  'b': {'command': 'b', 'env': {'X': '1', 'X': '2'}},\n"
              "  'a': {'command': 'second'},\n"
              "  'ok': {'command': 'ok'}}}\n");
    put(PROJ1, "{'mcpServers': {'p': {'command': 'p'}},\n 'mcpServers': {'q': {'command': 'q'}}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    const struct mcp_server *s = mcp_config_find(c, "a");
    CHECK(s && s->error && strstr(s->error, "its name is given twice in the file (lines 2 and 4)"));
    s = mcp_config_find(c, "b");
    CHECK(s && s->error && strstr(s->error, "\"env.X\" is given twice (lines 3 and 3)"));
    s = mcp_config_find(c, "ok");
    CHECK(s && !s->error);
    CHECK(mcp_config_find(c, "p") == NULL && mcp_config_find(c, "q") == NULL);
    CHECK_INT(mcp_config_diag_count(c), 1);
    if (mcp_config_diag_count(c) == 1)
        CHECK(strstr(mcp_config_diag_at(c, 0)->message,
                     "line 2: \"mcpServers\" is given twice (first on line 1)"));
    mcp_config_free(c);
}

/* The trust callback: userdata counts its calls; "approved" is approved, "changed" changed. */
static int trust_cb(void *userdata, const char *name, const char *path, struct json_object *entry)
{
    (void)entry;
    (*(int *)userdata)++;
    CHECK(path && path[0] == '/');
    if (strcmp(name, "approved") == 0)
        return MCP_TRUST_APPROVED;
    return strcmp(name, "changed") == 0 ? MCP_TRUST_CHANGED : MCP_TRUST_UNTRUSTED;
}

/* Project entries are asked about, others never; one not approved is inert, its variables never
 * looked up, with the reason and the hint */
static void test_trust(void)
{
    setup("trust");
    put(USER, "{'mcpServers': {'user': {'url': 'https://u.example/${A}'}}}");
    put(PROJ1, "{'mcpServers': {'approved': {'url': 'https://a.example/${A}'},"
               " 'changed': {'command': 'c', 'env': {'K': '${COUNTED}'}}}}");
    put(PROJ2, "{'mcpServers': {'new': {'url': 'https://n.example/${COUNTED}'}}}");
    static const char *const kv[] = {"A", "alpha", "COUNTED", "x", NULL};
    struct table t = {kv, 0};
    int calls = 0;
    struct mcp_config_opts o = {.cwd = P("home/proj"),
                                .lookup = table_lookup,
                                .lookup_userdata = &t,
                                .trust = trust_cb,
                                .trust_userdata = &calls,
                                .trust_hint = "run the trust command"};
    struct mcp_config *c = load_opts(&o);
    if (!c)
        return;
    CHECK_INT(calls, 3);
    CHECK_INT(t.calls, 2); /* A for user and approved; COUNTED never */
    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        enum mcp_trust tr = mcp_config_trust_at(c, i);
        CHECK(mcp_config_path_at(c, i)[0] == '/');
        if (strcmp(s->name, "user") == 0) {
            CHECK(tr == MCP_TRUST_TRUSTED && !s->error);
        } else if (strcmp(s->name, "approved") == 0) {
            CHECK(tr == MCP_TRUST_APPROVED && !s->error);
        } else if (strcmp(s->name, "changed") == 0) {
            CHECK(tr == MCP_TRUST_CHANGED && s->error &&
                  strstr(s->error, "untrusted project entry: changed since it was approved: "
                                   "run the trust command"));
            CHECK(s->missing_vars == NULL);
        } else {
            CHECK(tr == MCP_TRUST_UNTRUSTED && s->error &&
                  strstr(s->error, "untrusted project entry") && s->missing_vars == NULL);
        }
    }
    CHECK_STR(mcp_trust_name(MCP_TRUST_CHANGED), "changed");
    mcp_config_free(c);
}

TESTS_MAIN(test_layering, test_files_absent, test_xdg, test_root_keys, test_config_override,
           test_malformed, test_lookup_callback, test_settings, test_check_entry, test_sorted,
           test_load_object, test_import_priority, test_import_layers, test_import_validation,
           test_import_self, test_import_diags, test_duplicates, test_trust, test_others_can_write)
