/* test_mcp_config.c - layers, root keys, per-entry validation, ${VAR} expansion, settings */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/mcp_config.h"
#include "credkit/secmem.h"

#include "tests.h"

/* Each test works in its own directory under tests_tmpdir(): base/home is $HOME (with the agent
 * directory in it) and base/home/proj the project. Nothing touches the real home. */
static char base[4096];

static const char *P(const char *rel)
{
    static char bufs[8][4096];
    static unsigned i;
    char *s = bufs[i++ % 8];
    int n = snprintf(s, 4096, "%s/%s", base, rel);
    if (n < 0 || n >= 4096)
        abort();
    return s;
}

static void mkdir_p(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            (void)mkdir(tmp, 0700);
            *p = '/';
        }
    (void)mkdir(tmp, 0700);
}

static void setup(const char *name)
{
    snprintf(base, sizeof(base), "%s/%s", tests_tmpdir(), name);
    mkdir_p(P("home/.pi/agent"));
    mkdir_p(P("home/proj/.pi"));
    setenv("HOME", P("home"), 1);
    setenv("PI_CODING_AGENT_DIR", P("home/.pi/agent"), 1);
    unsetenv("XDG_CONFIG_HOME");
}

/* Writes base/rel; in text, ' stands for " so that JSON reads well in C. */
static void put(const char *rel, const char *text)
{
    const char *path = P(rel);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = 0;
    mkdir_p(dir);
    FILE *f = fopen(path, "we");
    CHECK(f != NULL);
    if (!f)
        return;
    for (const char *p = text; *p; p++)
        fputc(*p == '\'' ? '"' : *p, f);
    CHECK_INT(fclose(f), 0);
}

#define SHARED "home/.config/mcp/mcp.json"
#define USER   "home/.pi/agent/mcp.json"
#define PROJ1  "home/proj/.mcp.json"
#define PROJ2  "home/proj/.pi/mcp.json"

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

static size_t vlen(char **v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
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
    CHECK_INT(mcp_config_tool_prefix(c), MCP_TOOL_PREFIX_SERVER);
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
    CHECK_INT(mcp_config_tool_prefix(c), MCP_TOOL_PREFIX_SERVER);
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

struct reject {
    const char *name;
    const char *entry; /* JSON, ' for " */
    const char *reason;
};

/* clang-format off: one rejection a line reads better than a wrapped table */
static const struct reject rejects[] = {
    {"r-notobj", "['command']", "the entry must be an object, not an array"},
    {"r-both", "{'url': 'https://x.example', 'command': 'x'}", "both \"url\" and \"command\""},
    {"r-neither", "{'args': ['x']}", "needs \"url\" (an HTTP server) or \"command\""},
    {"r-neither-null", "{'url': null, 'command': null}", "needs \"url\""},
    {"r-blank", "{'command': ' \\t '}", "\"command\" must not be blank"},
    {"r-cmd-num", "{'command': 5}", "\"command\" must be a string, not a number"},
    {"r-url-num", "{'url': 5}", "\"url\" must be a string, not a number"},
    {"r-args", "{'command': 'x', 'args': 'a b'}",
     "\"args\" must be an array of strings, not a string"},
    {"r-args-idx", "{'command': 'x', 'args': ['a', 'b', 3]}",
     "\"args\"[2] must be a string, not a number"},
    {"r-args-null", "{'command': 'x', 'args': [null]}", "\"args\"[0] must be a string, not null"},
    {"r-env-arr", "{'command': 'x', 'env': ['A=1']}",
     "\"env\" must be an object of strings, not an array"},
    {"r-env-val", "{'command': 'x', 'env': {'A': 'ok', 'B': 1}}",
     "\"env\" value 'B' must be a string, not a number"},
    {"r-env-name", "{'command': 'x', 'env': {'A=B': 'x'}}",
     "'A=B' in \"env\" is not a valid variable name"},
    {"r-env-empty", "{'command': 'x', 'env': {'': 'x'}}",
     "'' in \"env\" is not a valid variable name"},
    {"r-hdr-obj", "{'url': 'https://x.example', 'headers': 'A: b'}",
     "\"headers\" must be an object of strings, not a string"},
    {"r-hdr-val", "{'url': 'https://x.example', 'headers': {'X-A': true}}",
     "header 'X-A' must be a string, not a boolean"},
    {"r-hdr-name", "{'url': 'https://x.example', 'headers': {'Bad Name': 'x'}}",
     "'Bad Name' in \"headers\" is not a valid HTTP header name"},
    {"r-hdr-colon", "{'url': 'https://x.example', 'headers': {'A:': 'x'}}",
     "not a valid HTTP header name"},
    {"r-cwd", "{'command': 'x', 'cwd': 1}", "\"cwd\" must be a string, not a number"},
    {"r-to-neg", "{'url': 'https://x.example', 'timeout': -5}",
     "\"timeout\" must be a positive number of milliseconds, not -5"},
    {"r-to-zero", "{'url': 'https://x.example', 'timeout': 0}",
     "\"timeout\" must be a positive number of milliseconds, not 0"},
    {"r-to-zerod", "{'url': 'https://x.example', 'timeout': 0.0}",
     "\"timeout\" must be a positive number of milliseconds, not 0"},
    {"r-to-str", "{'url': 'https://x.example', 'timeout': '100'}",
     "\"timeout\" must be a positive number of milliseconds, not a string"},
    {"r-to-frac", "{'url': 'https://x.example', 'timeout': 1.5}",
     "\"timeout\" must be a whole number of milliseconds, not 1.5"},
    {"r-to-day", "{'url': 'https://x.example', 'timeout': 86400001}",
     "\"timeout\" must be at most 86400000 milliseconds (one day), not 86400001"},
    {"r-to-huge", "{'url': 'https://x.example', 'timeout': 1e300}",
     "\"timeout\" must be at most 86400000"},
    {"r-to-u64", "{'url': 'https://x.example', 'timeout': 18446744073709551615}",
     "\"timeout\" must be at most 86400000"},
    {"r-to-arr", "{'url': 'https://x.example', 'timeout': [5]}", "not an array"},
    {"r-idle", "{'command': 'x', 'idleTimeout': -1}",
     "\"idleTimeout\" must be a positive number of milliseconds, not -1"},
    {"r-type", "{'url': 'https://x.example', 'type': 'websocket'}",
     "\"type\" must be \"stdio\", \"http\" or \"sse\", not 'websocket'"},
    {"r-type-num", "{'url': 'https://x.example', 'type': 1}",
     "\"type\" must be a string, not a number"},
    {"r-type-stdio", "{'url': 'https://x.example', 'type': 'stdio'}",
     "\"type\" is \"stdio\" but the entry has a \"url\""},
    {"r-type-http", "{'command': 'x', 'type': 'http'}",
     "\"type\" is 'http' but the entry has a \"command\""},
    {"r-type-sse", "{'command': 'x', 'type': 'sse'}",
     "\"type\" is 'sse' but the entry has a \"command\""},
    {"r-url-ftp", "{'url': 'ftp://x.example/mcp'}",
     "\"url\" must be an http:// or https:// URL, not 'ftp:'"},
    {"r-url-file", "{'url': 'file:///etc/passwd'}", "not 'file:'"},
    {"r-url-junk", "{'url': 'not a url'}", "\"url\" is not a valid http:// or https:// URL"},
    {"r-url-rel", "{'url': '/mcp'}", "\"url\" is not a valid http:// or https:// URL"},
    {"r-url-empty", "{'url': ''}", "\"url\" is not a valid"},
    {"r-url-port", "{'url': 'https://x.example:0/mcp'}",
     "\"url\" is not a valid http:// or https:// URL"},
    {"r-url-nohost", "{'url': 'https://'}", "\"url\" is not a valid http:// or https:// URL"},
    {"r-url-query", "{'url': 'https://x.example:99999/mcp?key=QUERYSECRET'}",
     "\"url\" is not a valid"},
    {"r-url-cred", "{'url': 'https://me:hunter2@x.example/mcp'}",
     "\"url\" must not contain a user name or password"},
    {"r-auth", "{'url': 'https://x.example', 'auth': 'basic'}",
     "\"auth\" must be \"oauth\", \"bearer\" or \"none\", not 'basic'"},
    {"r-auth-bool", "{'url': 'https://x.example', 'auth': true}",
     "\"auth\" must be a string, not a boolean"},
    {"r-bearer", "{'url': 'https://x.example', 'auth': 'bearer'}",
     "\"auth\" is \"bearer\" but \"bearerTokenEnv\" is missing"},
    {"r-bearer-env", "{'url': 'https://x.example', 'auth': 'bearer', 'bearerTokenEnv': '1TOKEN'}",
     "\"bearerTokenEnv\" must be the name of an environment variable"},
    {"r-bearer-env2", "{'url': 'https://x.example', 'bearerTokenEnv': 'MY-TOKEN'}",
     "not 'MY-TOKEN'"},
    {"r-oauth", "{'url': 'https://x.example', 'oauth': 'yes'}",
     "\"oauth\" must be an object, not a string"},
    {"r-oauth-true", "{'url': 'https://x.example', 'oauth': true}",
     "\"oauth\" must be an object, not a boolean"},
    {"r-oa-id", "{'url': 'https://x.example', 'oauth': {'clientId': 5}}",
     "\"oauth.clientId\" must be a string, not a number"},
    {"r-oa-id-blank", "{'url': 'https://x.example', 'oauth': {'clientId': ''}}",
     "\"oauth.clientId\" must not be blank"},
    {"r-oa-secret", "{'url': 'https://x.example', 'oauth': {'clientSecret': {}}}",
     "\"oauth.clientSecret\" must be a string, not an object"},
    {"r-oa-scope", "{'url': 'https://x.example', 'oauth': {'scope': ['a']}}",
     "\"oauth.scope\" must be a string, not an array"},
    {"r-oa-grant", "{'url': 'https://x.example', 'oauth': {'grant': 'password'}}",
     "\"oauth.grant\" must be \"authorization_code\", \"client_credentials\" or \"jwt-bearer\", "
     "not 'password'"},
    {"r-oa-jwtbearer", "{'url': 'https://x.example', 'oauth': {'grant': 'jwt-bearer'}}",
     "\"oauth.grant\": \"jwt-bearer\" needs an \"oauth.idp\" object"},
    {"r-oa-idp-type", "{'url': 'https://x.example', 'oauth': {'idp': 'x'}}",
     "\"oauth.idp\" must be an object"},
    {"r-oa-idp-partial", "{'url': 'https://x.example', 'oauth': {'idp': {'issuer': 'https://i'}}}",
     "\"oauth.idp\" needs \"tokenEndpoint\" and \"idToken\""},
    {"r-oa-alg", "{'url': 'https://x.example', 'oauth': {'privateKeyAlg': 'HS256'}}",
     "\"oauth.privateKeyAlg\" must be \"ES256\" or \"RS256\", not 'HS256'"},
    {"r-oa-key", "{'url': 'https://x.example', 'oauth': {'privateKeyFile': 1}}",
     "\"oauth.privateKeyFile\" must be a string, not a number"},
    {"r-oa-rs", "{'url': 'https://x.example', 'oauth': {'refreshScope': 'yes'}}",
     "\"oauth.refreshScope\" must be true or false, not a string"},
    {"r-oa-sr", "{'url': 'https://x.example', 'oauth': {'sendResource': 0}}",
     "\"oauth.sendResource\" must be true or false, not a number"},
    {"r-oa-cimd-http",
     "{'url': 'https://x.example', 'oauth': {'clientMetadataUrl': 'http://client.example/c.json'}}",
     "\"oauth.clientMetadataUrl\" must be an https:// URL with a path"},
    {"r-oa-cimd-nopath",
     "{'url': 'https://x.example', 'oauth': {'clientMetadataUrl': 'https://client.example/'}}",
     "\"oauth.clientMetadataUrl\" must be an https:// URL with a path"},
    {"r-oa-cimd-junk",
     "{'url': 'https://x.example', 'oauth': {'clientMetadataUrl': 'client.json'}}",
     "\"oauth.clientMetadataUrl\""},
    {"r-oa-redir-https",
     "{'url': 'https://x.example', 'oauth': {'redirectUri': 'https://127.0.0.1:8080/callback'}}",
     "\"oauth.redirectUri\" must be 'http://127.0.0.1:PORT/callback'"},
    {"r-oa-redir-host",
     "{'url': 'https://x.example', 'oauth': {'redirectUri': 'http://example.com:8080/callback'}}",
     "\"oauth.redirectUri\" must be 'http://127.0.0.1:PORT/callback'"},
    {"r-oa-redir-evil",
     "{'url': 'https://x.example', 'oauth': {'redirectUri': 'http://127.0.0.1.evil.example/cb'}}",
     "\"oauth.redirectUri\" must be 'http://127.0.0.1:PORT/callback'"},
    {"r-oa-redir-noport",
     "{'url': 'https://x.example', 'oauth': {'redirectUri': 'http://127.0.0.1/callback'}}",
     "with an explicit port"},
    {"r-oa-redir-path",
     "{'url': 'https://x.example', 'oauth': {'redirectUri': 'http://127.0.0.1:8080/cb'}}",
     "with an explicit port"},
    {"r-oa-redir-v6",
     "{'url': 'https://x.example', 'oauth': {'redirectUri': 'http://[::1]:9/callback'}}",
     "with an explicit port"},
    {"r-oa-redir-num", "{'url': 'https://x.example', 'oauth': {'redirectUri': 8080}}",
     "\"oauth.redirectUri\" must be a string, not a number"},
    {"r-helper", "{'url': 'https://x.example', 'headersHelper': '  '}",
     "\"headersHelper\" must not be blank"},
    {"r-helper-num", "{'url': 'https://x.example', 'headersHelper': 1}",
     "\"headersHelper\" must be a string, not a number"},
    {"r-excl", "{'command': 'x', 'excludeTools': 'a'}",
     "\"excludeTools\" must be an array of strings, not a string"},
    {"r-excl-idx", "{'command': 'x', 'excludeTools': ['a', {}]}",
     "\"excludeTools\"[1] must be a string, not an object"},
    {"r-life", "{'command': 'x', 'lifecycle': 1}", "\"lifecycle\" must be a string, not a number"},
    {"r-nul", "{'command': 'x\\u0000y'}", "\"command\" must not contain a NUL character"},
    {"", "{'command': 'x'}", "the name must not be empty"},
    {"r-ctl\\u0001x", "{'command': 'x'}", "the name must not contain control characters"},
    {"r-c1\\u0085x", "{'command': 'x'}", "the name must not contain control characters"},
    {"r-tmpl-open",
     "{'url': 'https://x.example', 'headers': {'Authorization': 'Bearer SECRETLITERAL${TOKEN'}}",
     "header 'Authorization': unterminated \"${\" at character 21"},
    {"r-tmpl-name", "{'url': 'https://x.example/${1X}'}",
     "\"url\": invalid variable name in \"${...}\" at character 19"},
    {"r-tmpl-env", "{'command': 'x', 'env': {'K': '${A-B}'}}",
     "\"env\" value 'K': invalid variable name"},
    {"r-tmpl-secret", "{'url': 'https://x.example', 'oauth': {'clientSecret': '${}'}}",
     "\"oauth.clientSecret\": invalid variable name"},
};
/* clang-format on */

static void test_rejections(void)
{
    char text[64 * 1024];
    size_t o = 0;

    setup("rejections");
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
        /* the JSON escapes in the names of the table, as C strings */
        char name[128];
        snprintf(name, sizeof(name), "%s", rejects[i].name);
        char *u = strstr(name, "\\u00");
        if (u) {
            unsigned v = 0;
            sscanf(u + 4, "%2x", &v);
            if (v < 0x80) {
                u[0] = (char)v;
                memmove(u + 1, u + 6, strlen(u + 6) + 1);
            } else { /* two bytes of UTF-8 */
                u[0] = (char)(0xc0 | (v >> 6));
                u[1] = (char)(0x80 | (v & 0x3f));
                memmove(u + 2, u + 6, strlen(u + 6) + 1);
            }
        }
        const struct mcp_server *s = mcp_config_find(c, name);
        CHECK(s != NULL);
        if (!s) {
            fprintf(stderr, "  missing entry '%s'\n", rejects[i].name);
            continue;
        }
        CHECK(s->error != NULL);
        if (!s->error) {
            fprintf(stderr, "  entry '%s' was accepted\n", rejects[i].name);
            continue;
        }
        char prefix[256];
        snprintf(prefix, sizeof(prefix), "'~/.pi/agent/mcp.json': server '%s': ", u ? "" : name);
        if (!u)
            CHECK(strncmp(s->error, prefix, strlen(prefix)) == 0);
        CHECK_CONTAINS(s->error, rejects[i].reason);
        /* no control character in a message, no literal value */
        for (const char *p = s->error; *p; p++)
            CHECK((unsigned char)*p >= 0x20);
        CHECK(!strstr(s->error, "SECRETLITERAL"));
        CHECK(!strstr(s->error, "hunter2"));
        CHECK(!strstr(s->error, "QUERYSECRET"));
        CHECK(s->missing_vars == NULL);
    }
    const struct mcp_server *ctl = mcp_config_find(c, "r-ctl\001x");
    CHECK(ctl && ctl->error && strstr(ctl->error, "server 'r-ctl\\x01x'"));
    mcp_config_free(c);
}

static void test_names(void)
{
    setup("names");
    char name129[130], accents[2 * 128 + 1];
    memset(name129, 'n', 129);
    name129[129] = 0;
    for (size_t i = 0; i < 128; i++)
        memcpy(accents + 2 * i, "\xc3\xa9", 2);
    accents[256] = 0;
    char text[1024];
    snprintf(text, sizeof(text),
             "{'mcpServers': {'%s': {'command': 'x'}, '%s': {'command': 'x'},"
             " 'with space.and/slash': {'command': 'x'}}}",
             name129, accents);
    put(USER, text);
    struct mcp_config *c = load();
    if (!c)
        return;
    const struct mcp_server *s = mcp_config_find(c, name129);
    CHECK(s && s->error && strstr(s->error, "the name is longer than 128 characters"));
    s = mcp_config_find(c, accents); /* 128 characters, 256 bytes */
    CHECK(s && !s->error);
    s = mcp_config_find(c, "with space.and/slash"); /* sanitised later, by the bridge */
    CHECK(s && !s->error);
    mcp_config_free(c);
}

static void test_fields_and_types(void)
{
    setup("fields");
    put(USER,
        "{'mcpServers': {"
        "'h': {'url': 'https://h.example/mcp', 'timeout': 1e3, 'idleTimeout': 60000,"
        "  'headers': {'X-Key': 'v', 'Accept-Language': 'fr'}, 'lifecycle': 'eager',"
        "  'excludeTools': ['a', 'b'], 'headersHelper': 'get-headers --x',"
        "  'future': {'nested': true}},"
        "'s': {'command': 'node', 'args': ['server.js', '--port', '1'],"
        "  'env': {'A': '1', 'EMPTY': ''}, 'cwd': '/tmp', 'type': 'stdio'},"
        "'sse': {'url': 'https://s.example/sse', 'type': 'sse'},"
        "'sh1': {'url': 'https://s.example/mcp', 'type': 'streamable-http'},"
        "'sh2': {'url': 'https://s.example/mcp', 'type': 'streamableHttp'},"
        "'ht': {'url': 'http://localhost:3000/mcp', 'type': 'http'},"
        "'v6': {'url': 'http://[::1]:8080/mcp?x=1'},"
        "'au-oauth': {'url': 'https://a.example', 'oauth': {}},"
        "'au-bearer': {'url': 'https://a.example', 'bearerTokenEnv': 'TOK'},"
        "'au-bearer2': {'url': 'https://a.example', 'auth': 'bearer', 'bearerTokenEnv': 'T_2'},"
        "'au-none': {'url': 'https://a.example', 'auth': 'none', 'oauth': {'clientId': 'c'}},"
        "'au-explicit': {'url': 'https://a.example', 'auth': 'oauth'},"
        "'nulls': {'command': 'x', 'cwd': null, 'timeout': null, 'env': null}"
        "}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        CHECK(s->error == NULL);
        if (s->error)
            fprintf(stderr, "  %s\n", s->error);
        /* vectors are never NULL */
        CHECK(s->args && s->env && s->headers && s->exclude_tools);
    }
    CHECK(mcp_config_at(c, mcp_config_count(c)) == NULL);

    const struct mcp_server *h = mcp_config_find(c, "h");
    if (h) {
        CHECK_INT(h->transport, MCP_TRANSPORT_HTTP);
        CHECK_INT(h->timeout_ms, 1000);
        CHECK_INT(h->idle_timeout_ms, 60000);
        CHECK_INT(vlen(h->headers), 2);
        CHECK_STR(h->headers[0], "X-Key: v");
        CHECK_STR(h->headers[1], "Accept-Language: fr");
        CHECK_STR(h->lifecycle, "eager");
        CHECK_STR(h->headers_helper, "get-headers --x");
        CHECK_INT(vlen(h->exclude_tools), 2);
        CHECK_STR(h->exclude_tools[1], "b");
        CHECK_INT(h->auth, MCP_AUTH_NONE);
        /* unknown keys are kept in raw */
        CHECK(h->raw && json_object_object_get_ex(h->raw, "future", NULL));
    }
    CHECK(h != NULL);
    const struct mcp_server *s = mcp_config_find(c, "s");
    CHECK(s != NULL);
    if (s) {
        CHECK_INT(s->transport, MCP_TRANSPORT_STDIO);
        CHECK_STR(s->command, "node");
        CHECK_INT(vlen(s->args), 3);
        CHECK_STR(s->args[2], "1");
        CHECK_INT(vlen(s->env), 2);
        CHECK_STR(s->env[0], "A=1");
        CHECK_STR(s->env[1], "EMPTY=");
        CHECK_STR(s->cwd, "/tmp");
        CHECK_INT(s->timeout_ms, 0);
        CHECK(s->url == NULL);
    }
    const struct mcp_server *x;
    CHECK((x = mcp_config_find(c, "sse")) && x->transport == MCP_TRANSPORT_SSE);
    CHECK((x = mcp_config_find(c, "sh1")) && x->transport == MCP_TRANSPORT_HTTP);
    CHECK((x = mcp_config_find(c, "sh2")) && x->transport == MCP_TRANSPORT_HTTP);
    CHECK((x = mcp_config_find(c, "ht")) && x->transport == MCP_TRANSPORT_HTTP);
    CHECK((x = mcp_config_find(c, "au-oauth")) && x->auth == MCP_AUTH_OAUTH);
    CHECK((x = mcp_config_find(c, "au-bearer")) && x->auth == MCP_AUTH_BEARER &&
          strcmp(x->bearer_token_env, "TOK") == 0);
    CHECK((x = mcp_config_find(c, "au-bearer2")) && x->auth == MCP_AUTH_BEARER);
    CHECK((x = mcp_config_find(c, "au-none")) && x->auth == MCP_AUTH_NONE && x->oauth.client_id &&
          strcmp(x->oauth.client_id, "c") == 0);
    CHECK((x = mcp_config_find(c, "au-explicit")) && x->auth == MCP_AUTH_OAUTH);
    CHECK((x = mcp_config_find(c, "nulls")) && !x->cwd && x->timeout_ms == 0 && !x->env[0]);
    mcp_config_free(c);
}

static void test_oauth(void)
{
    setup("oauth");
    setenv("MCPT_CLIENT_SECRET", "s3cr3t", 1);
    put(USER,
        "{'mcpServers': {"
        "'full': {'url': 'https://a.example/mcp', 'oauth': {'clientId': 'cid',"
        "  'clientSecret': '${MCPT_CLIENT_SECRET}', 'scope': 'read write',"
        "  'redirectUri': 'http://127.0.0.1:8765/callback', 'grant': 'client_credentials',"
        "  'privateKeyFile': '/keys/k.pem', 'privateKeyAlg': 'ES256',"
        "  'clientMetadataUrl': 'https://client.example/meta.json',"
        "  'refreshScope': true, 'sendResource': false, 'someday': 1}},"
        "'dflt': {'url': 'https://a.example/mcp', 'oauth': {'clientId': 'x'}},"
        "'loop1': {'url': 'https://a.example', 'oauth': {'redirectUri': "
        "'http://localhost:8/callback',"
        "  'clientMetadataUrl': 'http://127.0.0.1:3000/c.json'}},"
        "'loop2': {'url': 'https://a.example', 'oauth': {'redirectUri': "
        "'http://127.0.0.1:9/callback'}},"
        "'missing': {'url': 'https://a.example', 'oauth': {'clientSecret': '${MCPT_NO_SECRET}'}}"
        "}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    const struct mcp_server *f = mcp_config_find(c, "full");
    CHECK(f && !f->error);
    if (f) {
        CHECK_INT(f->auth, MCP_AUTH_OAUTH);
        CHECK_STR(f->oauth.client_id, "cid");
        CHECK_STR(f->oauth.client_secret, "${MCPT_CLIENT_SECRET}"); /* the template, kept */
        CHECK_STR(f->oauth.scope, "read write");
        CHECK_STR(f->oauth.redirect_uri, "http://127.0.0.1:8765/callback");
        CHECK_STR(f->oauth.grant, "client_credentials");
        CHECK_STR(f->oauth.private_key_file, "/keys/k.pem");
        CHECK_STR(f->oauth.private_key_alg, "ES256");
        CHECK_STR(f->oauth.client_metadata_url, "https://client.example/meta.json");
        CHECK(f->oauth.refresh_sends_scope);
        CHECK(f->oauth.omit_resource);
    }
    const struct mcp_server *d = mcp_config_find(c, "dflt");
    CHECK(d && !d->error && !d->oauth.omit_resource && !d->oauth.refresh_sends_scope &&
          !d->oauth.grant && !d->oauth.client_secret && !d->oauth.private_key_alg);
    const struct mcp_server *x;
    CHECK((x = mcp_config_find(c, "loop1")) && !x->error);
    CHECK((x = mcp_config_find(c, "loop2")) && !x->error);
    /* a missing client secret variable is reported when the secret is needed (sign-in,
     * refresh), not at load: a stored token stays usable without it */
    x = mcp_config_find(c, "missing");
    CHECK(x && !x->error && !x->missing_vars);
    mcp_config_free(c);
    unsetenv("MCPT_CLIENT_SECRET");
}

static void test_expansion(void)
{
    setup("expansion");
    setenv("MCPT_TOKEN", "tok-value", 1);
    setenv("MCPT_BASE_OK", "https://ok.example", 1);
    setenv("MCPT_BASE_FTP", "ftp://x", 1);
    setenv("MCPT_NL", "a\r\nX-Evil: 1", 1);
    unsetenv("MCPT_MISSING1");
    unsetenv("MCPT_MISSING2");
    unsetenv("MCPT_BASE_UNSET");
    put(USER,
        "{'mcpServers': {"
        "'ok': {'url': '${MCPT_BASE_OK}/mcp',"
        "  'headers': {'Authorization': 'Bearer ${MCPT_TOKEN}', 'X-Cost': '$$5 $x $'}},"
        "'miss': {'url': 'https://x.example/${MCPT_MISSING1}',"
        "  'headers': {'Authorization': 'Bearer ${MCPT_MISSING1}', 'X-Ok': '${MCPT_TOKEN}'},"
        "  'oauth': {'clientSecret': '${MCPT_MISSING2}'}},"
        "'miss1': {'command': 'x', 'env': {'TOKEN': '${MCPT_MISSING2}', 'OK': '${MCPT_TOKEN}'}},"
        "'ftp': {'url': '${MCPT_BASE_FTP}/mcp'},"
        "'unset': {'url': '${MCPT_BASE_UNSET}/mcp'},"
        "'crlf': {'url': 'https://x.example', 'headers': {'X-Inject': '${MCPT_NL}'}},"
        "'literal': {'url': 'https://x.example/$${NOT_A_VAR}'}"
        "}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    const struct mcp_server *s = mcp_config_find(c, "ok");
    CHECK(s && !s->error && !s->missing_vars);
    if (s) {
        /* templates are kept, never the values */
        CHECK_STR(s->url, "${MCPT_BASE_OK}/mcp");
        CHECK_STR(s->headers[0], "Authorization: Bearer ${MCPT_TOKEN}");
    }
    s = mcp_config_find(c, "miss");
    CHECK(s && s->error);
    if (s && s->error) {
        CHECK_STR(s->error, "'~/.pi/agent/mcp.json': server 'miss': variable 'MCPT_MISSING1' "
                            "is not set");
        CHECK_INT(vlen(s->missing_vars), 1);
        if (vlen(s->missing_vars) == 1)
            CHECK_STR(s->missing_vars[0], "MCPT_MISSING1");
        CHECK(!strstr(s->error, "tok-value"));
    }
    s = mcp_config_find(c, "miss1");
    CHECK(s && s->error &&
          strcmp(s->error, "'~/.pi/agent/mcp.json': server 'miss1': variable 'MCPT_MISSING2' "
                           "is not set") == 0);
    CHECK(s && vlen(s->missing_vars) == 1);
    s = mcp_config_find(c, "ftp");
    CHECK(s && s->error &&
          strstr(s->error, "\"url\" must be an http:// or https:// URL after "
                           "expanding variables, not 'ftp:'"));
    s = mcp_config_find(c, "unset");
    CHECK(s && s->error && strstr(s->error, "variable 'MCPT_BASE_UNSET' is not set"));
    CHECK(s && vlen(s->missing_vars) == 1);
    s = mcp_config_find(c, "crlf");
    CHECK(s && s->error &&
          strstr(s->error, "header 'X-Inject' contains a line break after expanding variables"));
    CHECK(s && s->error && !strstr(s->error, "Evil"));
    s = mcp_config_find(c, "literal");
    CHECK(s && !s->error);
    mcp_config_free(c);
    unsetenv("MCPT_TOKEN");
    unsetenv("MCPT_BASE_OK");
    unsetenv("MCPT_BASE_FTP");
    unsetenv("MCPT_NL");
}

/* more missing variables than a message holds: all listed in missing_vars, the message cut */
static void test_many_missing(void)
{
    setup("manymissing");
    static char text[16 * 1024];
    size_t o =
        (size_t)snprintf(text, sizeof(text), "{'mcpServers': {'m': {'command': 'x', 'env': {");
    for (int i = 0; i < 100; i++)
        o += (size_t)snprintf(text + o, sizeof(text) - o,
                              "%s'K%d': '${MCPT_QUITE_LONG_MISSING_%03d}'", i ? ", " : "", i, i);
    snprintf(text + o, sizeof(text) - o, "}}}}");
    put(USER, text);
    struct mcp_config *c = load();
    if (!c)
        return;
    const struct mcp_server *m = mcp_config_find(c, "m");
    CHECK(m && m->error);
    if (m && m->error) {
        CHECK_INT(vlen(m->missing_vars), 100);
        CHECK_STR(m->missing_vars[99], "MCPT_QUITE_LONG_MISSING_099");
        CHECK_CONTAINS(m->error, "variables 'MCPT_QUITE_LONG_MISSING_000', ");
        CHECK_CONTAINS(m->error, ", ... are not set");
        CHECK(strlen(m->error) < ERR_MSG_MAX);
    }
    mcp_config_free(c);
}

/* A lookup that answers from a table and counts its calls. */
struct table {
    const char *const *kv; /* name, value, ..., NULL */
    int calls;
};

static int table_lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    struct table *t = userdata;
    t->calls++;
    if (strcmp(name, "LOCKED") == 0)
        return err_set(e, -EACCES, "the keyring is locked: unlock it and retry");
    for (size_t i = 0; t->kv[i]; i += 2)
        if (strcmp(t->kv[i], name) == 0) {
            *ret = strdup(t->kv[i + 1]);
            return *ret ? 0 : -ENOMEM;
        }
    return -ENOENT;
}

static void check_expand(const char *tmpl, const char *want)
{
    static const char *const kv[] = {"A", "alpha", "B", "beta", "E", "", NULL};
    struct table t = {kv, 0};
    struct err e = ERR_INIT;
    char *out = NULL;
    CHECK_INT(mcp_expand(tmpl, table_lookup, &t, &out, &e), 0);
    CHECK_STR(out, want);
    secure_free(out);
}

static void check_expand_fails(const char *tmpl, int code, const char *msg)
{
    static const char *const kv[] = {"A", "alpha", NULL};
    struct table t = {kv, 0};
    struct err e = ERR_INIT;
    char *sentinel = (char *)(uintptr_t)0x1, *out = sentinel;
    CHECK_INT(mcp_expand(tmpl, table_lookup, &t, &out, &e), code);
    CHECK(out == sentinel);
    CHECK_CONTAINS(e.msg, msg);
}

/* userdata: char[256] */
static void collect(const char *name, void *userdata)
{
    char *s = userdata;
    size_t n = strlen(s);
    snprintf(s + n, 256 - n, "%s,", name);
}

static void test_mcp_expand(void)
{
    check_expand("", "");
    check_expand("plain", "plain");
    check_expand("${A}", "alpha");
    check_expand("x${A}y${B}z", "xalphaybetaz");
    check_expand("[${E}]", "[]");
    check_expand("a$$b", "a$b");
    check_expand("$${A}", "${A}");
    check_expand("$$$${A}", "$${A}");
    check_expand("cost $5, $A, $", "cost $5, $A, $");
    check_expand("$$", "$");
    check_expand("}{$}", "}{$}");

    check_expand_fails("${", -EINVAL, "unterminated \"${\" at character 1");
    check_expand_fails("ab${A", -EINVAL, "unterminated \"${\" at character 3");
    check_expand_fails("${}", -EINVAL, "invalid variable name");
    check_expand_fails("${1A}", -EINVAL, "invalid variable name");
    check_expand_fails("${A-B}", -EINVAL, "invalid variable name");
    check_expand_fails("${A B}", -EINVAL, "invalid variable name");
    check_expand_fails("${A}${NOPE}", -ENOENT, "variable 'NOPE' is not set");
    check_expand_fails("${LOCKED}", -EACCES,
                       "cannot look up variable 'LOCKED': the keyring is locked");

    /* NULL lookup: the process environment */
    struct err e = ERR_INIT;
    char *out = NULL;
    setenv("MCPT_ENV_ONLY", "from-env", 1);
    CHECK_INT(mcp_expand("<${MCPT_ENV_ONLY}>", NULL, NULL, &out, &e), 0);
    CHECK_STR(out, "<from-env>");
    secure_free(out);
    unsetenv("MCPT_ENV_ONLY");
    CHECK_INT(mcp_expand("${MCPT_ENV_ONLY}", NULL, NULL, &out, &e), -ENOENT);

    char names[256] = "";
    mcp_template_vars("${A}x${B}$${C}${A}$D", collect, names);
    CHECK_STR(names, "A,B,A,");
    names[0] = 0;
    mcp_template_vars("${A}${bad-", collect, names); /* stops at the error */
    CHECK_STR(names, "A,");
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

static void test_tool_prefix(void)
{
    setup("prefix");
    put(SHARED, "{'settings': {'toolPrefix': 'short'}}");
    struct mcp_config *c = load();
    if (c) {
        CHECK_INT(mcp_config_tool_prefix(c), MCP_TOOL_PREFIX_SHORT);
        mcp_config_free(c);
    }
    put(USER, "{'settings': {'toolPrefix': 'none', 'other': 1}}");
    put(PROJ1, "{'settings': {'somethingElse': true}}");
    put(PROJ2, "{'settings': {'toolPrefix': 'bogus'}, 'mcpServers': {'a': {'command': 'x'}}}");
    c = load();
    if (c) {
        /* key by key: the project's files do not set it validly, the user file's "none" holds */
        CHECK_INT(mcp_config_tool_prefix(c), MCP_TOOL_PREFIX_NONE);
        CHECK_INT(mcp_config_diag_count(c), 1);
        if (mcp_config_diag_count(c) == 1) {
            CHECK_STR(mcp_config_diag_at(c, 0)->source, "~/proj/.pi/mcp.json");
            CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                           "'~/proj/.pi/mcp.json': \"settings.toolPrefix\" must be \"server\", "
                           "\"short\" or \"none\", not 'bogus'");
        }
        CHECK(mcp_config_find(c, "a") != NULL); /* the file's servers still count */
        mcp_config_free(c);
    }
    put(PROJ2, "{'settings': {'toolPrefix': 'server'}}");
    put(PROJ1, "{'settings': []}");
    c = load();
    if (c) {
        CHECK_INT(mcp_config_tool_prefix(c), MCP_TOOL_PREFIX_SERVER);
        CHECK_INT(mcp_config_diag_count(c), 1);
        if (mcp_config_diag_count(c) == 1)
            CHECK_CONTAINS(mcp_config_diag_at(c, 0)->message,
                           "\"settings\" must be an object, not an array");
        mcp_config_free(c);
    }
    CHECK_INT(mcp_config_tool_prefix(NULL), MCP_TOOL_PREFIX_SERVER);
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
    CHECK_INT(mcp_config_tool_prefix(c), MCP_TOOL_PREFIX_SHORT);
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

/* A copy is deep (it outlives its configuration: ASan sees any shared string), equal field by
 * field, and vectors missing from a hand-built entry come back empty. */
static void test_transport_name(void)
{
    CHECK_STR(mcp_transport_name(MCP_TRANSPORT_STDIO), "stdio");
    CHECK_STR(mcp_transport_name(MCP_TRANSPORT_HTTP), "http");
    CHECK_STR(mcp_transport_name(MCP_TRANSPORT_SSE), "sse");
    CHECK_STR(mcp_transport_name((enum mcp_transport)42), "unknown");
}

static void test_server_dup(void)
{
    struct err e = ERR_INIT;
    struct mcp_config *c = NULL;
    struct mcp_server *h = NULL, *st = NULL, *bad = NULL, *o = NULL;
    setup("dup");
    struct json_object *root = json_tokener_parse(
        "{\"mcpServers\": {"
        "\"h\": {\"url\": \"https://h.example/mcp\", \"timeout\": 1500, \"idleTimeout\": 60000,"
        "  \"headers\": {\"X-Key\": \"${TOK}\", \"Accept-Language\": \"fr\"},"
        "  \"lifecycle\": \"eager\", \"excludeTools\": [\"a\", \"b\"],"
        "  \"headersHelper\": \"get-headers\", \"bearerTokenEnv\": \"TOK\", \"future\": 1},"
        "\"s\": {\"command\": \"node\", \"args\": [\"server.js\", \"-v\"], \"cwd\": \"/tmp\","
        "  \"env\": {\"A\": \"1\", \"B\": \"${TOK}\"}},"
        "\"bad\": {\"url\": \"https://${NOPE}/\"},"
        "\"o\": {\"url\": \"https://o.example\", \"oauth\": {\"clientId\": \"cid\","
        "  \"clientSecret\": \"${SEC}\", \"clientMetadataUrl\": \"https://c.example/m.json\","
        "  \"scope\": \"read\", \"redirectUri\": \"http://127.0.0.1:8765/callback\","
        "  \"grant\": \"jwt-bearer\", \"privateKeyFile\": \"/k.pem\", \"privateKeyAlg\": \"ES256\","
        "  \"refreshScope\": true, \"sendResource\": false,"
        "  \"idp\": {\"issuer\": \"https://idp.example\","
        "    \"tokenEndpoint\": \"https://idp.example/t\","
        "    \"clientId\": \"icid\", \"clientSecret\": \"${ISEC}\", \"idToken\": \"${IDT}\"}}}"
        "}}");
    CHECK(root != NULL);
    static const char *const kv[] = {"TOK", "t0k", NULL};
    struct table t = {kv, 0};
    struct mcp_config_opts opts = {.lookup = table_lookup, .lookup_userdata = &t};
    CHECK_INT(mcp_config_load_object(root, "command line", &opts, &c, &e), 0);
    json_object_put(root);
    if (!c)
        return;
    CHECK_INT(mcp_server_dup(mcp_config_find(c, "h"), &h), 0);
    CHECK_INT(mcp_server_dup(mcp_config_find(c, "s"), &st), 0);
    CHECK_INT(mcp_server_dup(mcp_config_find(c, "bad"), &bad), 0);
    CHECK_INT(mcp_server_dup(mcp_config_find(c, "o"), &o), 0);
    const struct mcp_server *ch = mcp_config_find(c, "h");
    CHECK(h && ch && h->name != ch->name && h->headers != ch->headers &&
          h->headers[0] != ch->headers[0] && h->raw == ch->raw);
    mcp_config_free(c); /* the copies stand alone */
    if (h) {
        CHECK_STR(h->name, "h");
        CHECK_STR(h->source, "command line");
        CHECK_INT(h->layer, MCP_LAYER_USER);
        CHECK_INT(h->transport, MCP_TRANSPORT_HTTP);
        CHECK_STR(h->url, "https://h.example/mcp");
        CHECK_INT(vlen(h->headers), 2);
        CHECK_STR(h->headers[0], "X-Key: ${TOK}");
        CHECK_STR(h->headers[1], "Accept-Language: fr");
        CHECK_INT(h->timeout_ms, 1500);
        CHECK_INT(h->idle_timeout_ms, 60000);
        CHECK_STR(h->lifecycle, "eager");
        CHECK_STR(h->headers_helper, "get-headers");
        CHECK_INT(h->auth, MCP_AUTH_BEARER);
        CHECK_STR(h->bearer_token_env, "TOK");
        CHECK_INT(vlen(h->exclude_tools), 2);
        CHECK_STR(h->exclude_tools[1], "b");
        CHECK(h->raw && json_object_object_get_ex(h->raw, "future", NULL));
        CHECK(!h->command && !h->cwd && h->args && !h->args[0] && h->env && !h->env[0]);
        CHECK(!h->error && !h->missing_vars);
    }
    if (st) {
        CHECK_INT(st->transport, MCP_TRANSPORT_STDIO);
        CHECK_STR(st->command, "node");
        CHECK_INT(vlen(st->args), 2);
        CHECK_STR(st->args[1], "-v");
        CHECK_INT(vlen(st->env), 2);
        CHECK_STR(st->env[1], "B=${TOK}");
        CHECK_STR(st->cwd, "/tmp");
        CHECK(!st->url && st->headers && !st->headers[0]);
    }
    if (bad) {
        CHECK_CONTAINS(bad->error, "variable 'NOPE' is not set");
        CHECK(bad->missing_vars && vlen(bad->missing_vars) == 1);
        if (bad->missing_vars)
            CHECK_STR(bad->missing_vars[0], "NOPE");
    }
    if (o) {
        CHECK(!o->error);
        CHECK_INT(o->auth, MCP_AUTH_OAUTH);
        CHECK_STR(o->oauth.client_id, "cid");
        CHECK_STR(o->oauth.client_secret, "${SEC}");
        CHECK_STR(o->oauth.client_metadata_url, "https://c.example/m.json");
        CHECK_STR(o->oauth.scope, "read");
        CHECK_STR(o->oauth.redirect_uri, "http://127.0.0.1:8765/callback");
        CHECK_STR(o->oauth.grant, "jwt-bearer");
        CHECK_STR(o->oauth.private_key_file, "/k.pem");
        CHECK_STR(o->oauth.private_key_alg, "ES256");
        CHECK(o->oauth.refresh_sends_scope && o->oauth.omit_resource);
        CHECK_STR(o->oauth.idp_issuer, "https://idp.example");
        CHECK_STR(o->oauth.idp_token_endpoint, "https://idp.example/t");
        CHECK_STR(o->oauth.idp_client_id, "icid");
        CHECK_STR(o->oauth.idp_client_secret, "${ISEC}");
        CHECK_STR(o->oauth.idp_id_token, "${IDT}");
    }
    mcp_server_free(h);
    mcp_server_free(st);
    mcp_server_free(bad);
    mcp_server_free(o);

    /* built by hand: the vectors it lacks are empty in the copy, never NULL */
    char name[] = "hand", cmd[] = "x", a0[] = "--x";
    char *args[] = {a0, NULL};
    struct mcp_server by_hand = {.name = name, .command = cmd, .args = args};
    struct mcp_server *cp = NULL;
    CHECK_INT(mcp_server_dup(&by_hand, &cp), 0);
    CHECK(cp && cp->name != name && cp->args != args && cp->args[0] != a0);
    if (cp) {
        CHECK_STR(cp->name, "hand");
        CHECK_STR(cp->args[0], "--x");
        CHECK(!cp->args[1] && cp->env && !cp->env[0] && cp->headers && !cp->headers[0] &&
              cp->exclude_tools && !cp->exclude_tools[0]);
        CHECK(!cp->missing_vars && !cp->raw && !cp->source && !cp->url);
    }
    mcp_server_free(cp);

    struct mcp_server *none = &by_hand;
    CHECK_INT(mcp_server_dup(NULL, &none), -EINVAL);
    CHECK(none == &by_hand); /* untouched on failure */
    CHECK_INT(mcp_server_dup(&by_hand, NULL), -EINVAL);
    mcp_server_free(NULL);
}

TESTS_MAIN(test_layering, test_files_absent, test_xdg, test_root_keys, test_config_override,
           test_malformed, test_rejections, test_names, test_fields_and_types, test_oauth,
           test_expansion, test_many_missing, test_mcp_expand, test_lookup_callback,
           test_tool_prefix, test_sorted, test_load_object, test_server_dup, test_transport_name)
