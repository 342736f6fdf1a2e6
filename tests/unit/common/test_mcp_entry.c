/* test_mcp_entry.c - one entry: its generic keys and their messages, names, the expansion of its
 * templates at load time, copies (the "oauth" object is mcp-auth's: unit/auth/test_oauth_config.c) */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/mcp_config.h"
#include "credkit/mcp_field.h"
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
    {"r-hdr-cl", "{'url': 'https://x.example', 'headers': {'content-length': '5'}}",
     "header 'content-length' in \"headers\" is refused: it frames the HTTP request, which "
     "only the transport sets: remove it"},
    {"r-hdr-te", "{'url': 'https://x.example', 'headers': {'Transfer-Encoding': 'chunked'}}",
     "header 'Transfer-Encoding' in \"headers\" is refused: it frames the HTTP request"},
    {"r-hdr-host", "{'url': 'https://x.example', 'headers': {'Host': 'y.example'}}",
     "header 'Host' in \"headers\" is refused: it frames the HTTP request"},
    {"r-hdr-sess", "{'url': 'https://x.example', 'headers': {'Mcp-Session-Id': 's'}}",
     "header 'Mcp-Session-Id' in \"headers\" is refused: it belongs to the MCP session"},
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
     "\"auth\" must be \"oauth\", \"bearer\", \"none\" or false, not 'basic'"},
    {"r-auth-bool", "{'url': 'https://x.example', 'auth': true}",
     "\"auth\" is true, which names no way to sign in"},
    {"r-auth-num", "{'url': 'https://x.example', 'auth': 1}",
     "\"auth\" must be a string, not a number"},
    {"r-bearer-both", "{'url': 'https://x.example', 'bearerToken': 't', 'bearerTokenEnv': 'T'}",
     "both \"bearerToken\" and \"bearerTokenEnv\" are set"},
    {"r-oauth-header",
     "{'url': 'https://x.example', 'auth': 'oauth', 'headers': {'authorization': 'Bearer x'}}",
     "\"headers\" sets Authorization, and the entry also signs in with OAuth"},
    {"r-bearer", "{'url': 'https://x.example', 'auth': 'bearer'}",
     "\"auth\" is \"bearer\" but neither \"bearerTokenEnv\" nor \"bearerToken\" is set"},
    {"r-bearer-store", "{'url': 'https://x.example', 'auth': 'bearer', 'bearerTokenStore': 'yes'}",
     "set \"bearerTokenStore\": true and store it with 'pi-mcp-adapter token set NAME'"},
    {"r-bearer-env", "{'url': 'https://x.example', 'auth': 'bearer', 'bearerTokenEnv': '1TOKEN'}",
     "\"bearerTokenEnv\" must be the name of an environment variable"},
    {"r-bearer-env2", "{'url': 'https://x.example', 'bearerTokenEnv': 'MY-TOKEN'}",
     "not 'MY-TOKEN'"},
    {"r-bearer-hdr",
     "{'url': 'https://x.example', 'bearerTokenEnv': 'T', 'headers': "
     "{'AUTHORIZATION': 'Bearer SECRETLITERAL'}}",
     "\"headers\" sets Authorization, and the entry also signs in with a bearer token"},
    {"r-bearer-tok-hdr",
     "{'url': 'https://x.example', 'auth': 'bearer', 'bearerToken': 'x', "
     "'headers': {'Authorization': 'x'}}",
     "\"headers\" sets Authorization, and the entry also signs in with a bearer token"},
    {"r-oauth-obj-hdr",
     "{'url': 'https://x.example', 'oauth': {}, 'headers': "
     "{'Authorization': 'Basic SECRETLITERAL'}}",
     "\"headers\" sets Authorization, and the entry also signs in with OAuth"},
    {"r-oauth-bearer", "{'url': 'https://x.example', 'auth': 'oauth', 'bearerTokenEnv': 'T'}",
     "the entry signs in with OAuth and also names a bearer token"},
    {"r-oauth-obj-bearer", "{'url': 'https://x.example', 'oauth': {}, 'bearerToken': '${T}'}",
     "the entry signs in with OAuth and also names a bearer token"},
    {"r-bearer-tok-blank", "{'url': 'https://x.example', 'bearerToken': ' '}",
     "\"bearerToken\" must not be blank"},
    {"r-bearer-tok-num", "{'url': 'https://x.example', 'bearerToken': 5}",
     "\"bearerToken\" must be a string, not a number"},
    {"r-bearer-tok-tmpl", "{'url': 'https://x.example', 'bearerToken': 'SECRETLITERAL${T'}",
     "\"bearerToken\": unterminated \"${\""},
    {"r-args-tmpl", "{'command': 'x', 'args': ['ok', '--k=${1X}']}",
     "\"args\" element 2: invalid variable name"},
    {"r-auth-false-str", "{'url': 'https://x.example', 'auth': 'false'}",
     "\"auth\" must be \"oauth\", \"bearer\", \"none\" or false, not 'false'"},
    {"r-oauth-num", "{'url': 'https://x.example', 'oauth': 0}",
     "\"oauth\" must be an object (or false), not a number"},
    {"r-helper", "{'url': 'https://x.example', 'headersHelper': '  '}",
     "\"headersHelper\" must not be blank"},
    {"r-helper-num", "{'url': 'https://x.example', 'headersHelper': 1}",
     "\"headersHelper\" must be a string, not a number"},
    {"r-oauth", "{'url': 'https://x.example', 'oauth': 'yes'}",
     "\"oauth\" must be an object (or false), not a string"},
    {"r-oauth-true", "{'url': 'https://x.example', 'oauth': true}",
     "\"oauth\" must be an object (or false), not a boolean"},
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
        CHECK(s->args && s->env && s->headers);
    }
    CHECK(mcp_config_at(c, mcp_config_count(c)) == NULL);

    const struct mcp_server *h = mcp_config_find(c, "h");
    if (h) {
        CHECK_INT(h->transport, MCP_TRANSPORT_HTTP);
        CHECK_INT(h->timeout_ms, 1000);
        CHECK_INT(vlen(h->headers), 2);
        CHECK_STR(h->headers[0], "X-Key: v");
        CHECK_STR(h->headers[1], "Accept-Language: fr");
        CHECK_STR(h->headers_helper, "get-headers --x");
        CHECK_INT(h->auth, MCP_AUTH_NONE);
        /* unknown keys, and the tools' own, are kept in raw */
        CHECK(h->raw && json_object_object_get_ex(h->raw, "future", NULL));
        CHECK(h->raw && json_object_object_get_ex(h->raw, "excludeTools", NULL));
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
    CHECK((x = mcp_config_find(c, "au-none")) && x->auth == MCP_AUTH_DISABLED);
    CHECK((x = mcp_config_find(c, "au-explicit")) && x->auth == MCP_AUTH_OAUTH);
    CHECK((x = mcp_config_find(c, "nulls")) && !x->cwd && x->timeout_ms == 0 && !x->env[0]);
    mcp_config_free(c);
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
        "  'auth': 'none', 'oauth': {'clientSecret': '${MCPT_MISSING2}'}},"
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

/* "auth": false / "none" / "oauth": false turn signing in off; "bearerToken"; which
 * Authorization headers the entry may set itself */
static void test_auth_modes(void)
{
    setup("authmodes");
    put(USER, "{'mcpServers': {"
              "'off-false': {'url': 'https://a.example', 'auth': false},"
              "'off-none': {'url': 'https://a.example', 'auth': 'none'},"
              "'off-oauth': {'url': 'https://a.example', 'oauth': false},"
              "'off-oauth-null': {'url': 'https://a.example', 'oauth': null},"
              "'oauth-over-false': {'url': 'https://a.example', 'oauth': false, 'auth': 'oauth'},"
              "'bearer-over-false': {'url': 'https://a.example', 'oauth': false,"
              "  'bearerTokenEnv': 'TOK'},"
              "'tok-literal': {'url': 'https://a.example', 'bearerToken': 'lit'},"
              "'tok-template': {'url': 'https://a.example', 'auth': 'bearer',"
              "  'bearerToken': 'Bearer-less ${MCPT_AM_TOKEN}'},"
              "'static': {'url': 'https://a.example', 'headers': {'Authorization': 'Bearer s'}},"
              "'static-none': {'url': 'https://a.example', 'auth': 'none',"
              "  'headers': {'Authorization': 'Bearer s'}},"
              "'static-off': {'url': 'https://a.example', 'oauth': false,"
              "  'headers': {'authorization': 'Bearer s'}},"
              "'static-helper': {'url': 'https://a.example', 'headersHelper': 'h',"
              "  'headers': {'Authorization': 'Bearer s'}},"
              "'bearer-auth-none': {'url': 'https://a.example', 'auth': 'bearer',"
              "  'bearerTokenEnv': 'TOK', 'oauth': {'clientId': 'c'}}"
              "}}");
    setenv("MCPT_AM_TOKEN", "tok", 1);
    struct mcp_config *c = load();
    unsetenv("MCPT_AM_TOKEN");
    if (!c)
        return;
    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        CHECK(s->error == NULL);
        if (s->error)
            fprintf(stderr, "  %s\n", s->error);
    }
    static const struct {
        const char *name;
        enum mcp_auth_mode auth;
    } modes[] = {
        {"off-false", MCP_AUTH_DISABLED},
        {"off-none", MCP_AUTH_DISABLED},
        {"off-oauth", MCP_AUTH_DISABLED},
        {"off-oauth-null", MCP_AUTH_NONE},
        {"oauth-over-false", MCP_AUTH_OAUTH},
        {"bearer-over-false", MCP_AUTH_BEARER},
        {"tok-literal", MCP_AUTH_BEARER},
        {"tok-template", MCP_AUTH_BEARER},
        {"static", MCP_AUTH_NONE},
        {"static-none", MCP_AUTH_DISABLED},
        {"static-off", MCP_AUTH_DISABLED},
        {"static-helper", MCP_AUTH_NONE},
        {"bearer-auth-none", MCP_AUTH_BEARER},
    };
    for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
        const struct mcp_server *s = mcp_config_find(c, modes[i].name);
        CHECK(s != NULL);
        if (s)
            CHECK_INT(s->auth, modes[i].auth);
        if (s && s->auth != modes[i].auth)
            fprintf(stderr, "  entry '%s'\n", modes[i].name);
    }
    const struct mcp_server *s = mcp_config_find(c, "tok-literal");
    CHECK(s && s->bearer_token && strcmp(s->bearer_token, "lit") == 0 && !s->bearer_token_env);
    s = mcp_config_find(c, "tok-template");
    CHECK(s && s->bearer_token && strcmp(s->bearer_token, "Bearer-less ${MCPT_AM_TOKEN}") == 0);
    CHECK(s && !s->missing_vars);

    /* a copy keeps the bearer token */
    struct mcp_server *cp = NULL;
    CHECK_INT(mcp_server_dup(s, &cp), 0);
    mcp_config_free(c);
    CHECK(cp && cp->bearer_token && strcmp(cp->bearer_token, "Bearer-less ${MCPT_AM_TOKEN}") == 0);
    CHECK(cp && cp->auth == MCP_AUTH_BEARER);
    mcp_server_free(cp);
}

/* defer_vars: names the environment lacks leave the entry valid, listed in missing_vars, for a
 * tool that resolves them at each connect; everything else is still checked */
static void test_defer_vars(void)
{
    setup("defer");
    unsetenv("MCPT_D_HOST");
    unsetenv("MCPT_D_KEY");
    unsetenv("MCPT_D_ARG");
    unsetenv("MCPT_D_TOK");
    setenv("MCPT_D_FTP", "ftp://x.example", 1);
    put(USER,
        "{'mcpServers': {"
        "'url': {'url': 'https://${MCPT_D_HOST}/mcp', 'headers': {'X-K': '${MCPT_D_KEY}',"
        "  'X-K2': 'again ${MCPT_D_KEY} ${MCPT_D_HOST}'}},"
        "'args': {'command': 'x', 'args': ['--a=${MCPT_D_ARG}', 'b'],"
        "  'env': {'E': '${MCPT_D_KEY}'}},"
        "'tok': {'url': 'https://a.example', 'auth': 'bearer',"
        "  'bearerToken': '${MCPT_D_TOK}'},"
        "'bad-url': {'url': 'ftp://a.example/mcp', 'headers': {'X-K': '${MCPT_D_KEY}'}},"
        "'bad-url-var': {'url': '${MCPT_D_FTP}/mcp', 'headers': {'X-K': '${MCPT_D_KEY}'}},"
        "'cred-url': {'url': 'https://me:pw@a.example/', 'headers': {'X-K': '${MCPT_D_KEY}'}},"
        "'bad-tmpl': {'url': 'https://a.example', 'headers': {'X-K': '${MCPT_D_KEY'},"
        "  'env': {}},"
        "'crlf': {'url': 'https://a.example', 'headers': {'X-K': '${MCPT_D_KEY}'}}"
        "}}");
    struct mcp_config_opts o = {.cwd = P("home/proj"), .defer_vars = true};
    struct mcp_config *c = load_opts(&o);
    if (!c)
        return;
    const struct mcp_server *s = mcp_config_find(c, "url");
    CHECK(s && !s->error);
    CHECK(s && vlen(s->missing_vars) == 2);
    if (s && vlen(s->missing_vars) == 2) {
        CHECK_STR(s->missing_vars[0], "MCPT_D_HOST");
        CHECK_STR(s->missing_vars[1], "MCPT_D_KEY");
        CHECK_STR(s->url, "https://${MCPT_D_HOST}/mcp"); /* the template, kept */
    }
    s = mcp_config_find(c, "args");
    CHECK(s && !s->error && vlen(s->missing_vars) == 2);
    if (s && vlen(s->missing_vars) == 2) {
        CHECK_STR(s->missing_vars[0], "MCPT_D_KEY"); /* env before args */
        CHECK_STR(s->missing_vars[1], "MCPT_D_ARG");
    }
    s = mcp_config_find(c, "tok");
    CHECK(s && !s->error && vlen(s->missing_vars) == 1);
    /* what does not depend on a missing name is checked now */
    s = mcp_config_find(c, "bad-url");
    CHECK(s && s->error && strstr(s->error, "must be an http:// or https:// URL, not 'ftp:'"));
    s = mcp_config_find(c, "bad-url-var");
    CHECK(s && s->error &&
          strstr(s->error, "must be an http:// or https:// URL after expanding variables"));
    s = mcp_config_find(c, "cred-url");
    CHECK(s && s->error && strstr(s->error, "must not contain a user name or password"));
    CHECK(s && s->error && !strstr(s->error, "pw"));
    s = mcp_config_find(c, "bad-tmpl");
    CHECK(s && s->error && strstr(s->error, "unterminated"));
    mcp_config_free(c);

    /* without defer_vars, the same entries are invalid, naming what is missing */
    o.defer_vars = false;
    c = load_opts(&o);
    if (!c)
        return;
    s = mcp_config_find(c, "url");
    CHECK(s && s->error && strstr(s->error, "variables 'MCPT_D_HOST', 'MCPT_D_KEY' are not set"));
    CHECK(s && vlen(s->missing_vars) == 2);
    s = mcp_config_find(c, "args");
    CHECK(s && s->error && strstr(s->error, "'MCPT_D_ARG'"));
    s = mcp_config_find(c, "tok");
    CHECK(s && s->error && strstr(s->error, "variable 'MCPT_D_TOK' is not set"));
    mcp_config_free(c);

    /* once the names are there, the values are checked as always */
    setenv("MCPT_D_HOST", "h.example", 1);
    setenv("MCPT_D_KEY", "a\r\nX-Evil: 1", 1);
    setenv("MCPT_D_ARG", "1", 1);
    setenv("MCPT_D_TOK", "t", 1);
    o.defer_vars = true;
    c = load_opts(&o);
    if (c) {
        s = mcp_config_find(c, "url");
        CHECK(s && s->error && strstr(s->error, "contains a line break after expanding"));
        s = mcp_config_find(c, "args");
        CHECK(s && !s->error && !s->missing_vars);
        s = mcp_config_find(c, "tok");
        CHECK(s && !s->error && !s->missing_vars);
        mcp_config_free(c);
    }
    unsetenv("MCPT_D_HOST");
    unsetenv("MCPT_D_KEY");
    unsetenv("MCPT_D_ARG");
    unsetenv("MCPT_D_TOK");
    unsetenv("MCPT_D_FTP");
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

static void test_transport_name(void)
{
    CHECK_STR(mcp_transport_name(MCP_TRANSPORT_STDIO), "stdio");
    CHECK_STR(mcp_transport_name(MCP_TRANSPORT_HTTP), "http");
    CHECK_STR(mcp_transport_name(MCP_TRANSPORT_SSE), "sse");
    CHECK_STR(mcp_transport_name((enum mcp_transport)42), "unknown");
}

/* A copy is deep (it outlives its configuration: ASan sees any shared string), equal field by
 * field, and vectors missing from a hand-built entry come back empty. */
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
        CHECK_STR(h->headers_helper, "get-headers");
        CHECK_INT(h->auth, MCP_AUTH_BEARER);
        CHECK_STR(h->bearer_token_env, "TOK");
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
    mcp_server_free(h);
    mcp_server_free(st);
    mcp_server_free(bad);
    /* an "oauth" entry copies like any other (its object is mcp-auth's, in raw) */
    CHECK(o && !o->error && o->auth == MCP_AUTH_OAUTH && json_object_object_get(o->raw, "oauth"));
    mcp_server_free(o);
}

/* built by hand: the vectors it lacks are empty in the copy, never NULL */
static void test_server_dup_by_hand(void)
{
    char name[] = "hand", cmd[] = "x", a0[] = "--x";
    char *args[] = {a0, NULL};
    struct mcp_server by_hand = {.name = name, .command = cmd, .args = args};
    struct mcp_server *cp = NULL;
    CHECK_INT(mcp_server_dup(&by_hand, &cp), 0);
    CHECK(cp && cp->name != name && cp->args != args && cp->args[0] != a0);
    if (cp) {
        CHECK_STR(cp->name, "hand");
        CHECK_STR(cp->args[0], "--x");
        CHECK(!cp->args[1] && cp->env && !cp->env[0] && cp->headers && !cp->headers[0]);
        CHECK(!cp->missing_vars && !cp->raw && !cp->source && !cp->url);
    }
    mcp_server_free(cp);

    struct mcp_server *none = &by_hand;
    CHECK_INT(mcp_server_dup(NULL, &none), -EINVAL);
    CHECK(none == &by_hand); /* untouched on failure */
    CHECK_INT(mcp_server_dup(&by_hand, NULL), -EINVAL);
    mcp_server_free(NULL);
}

/* a check of a tool's keys that accepts them with warnings (one a line) */
static int warn_check(void *userdata, const char *name, struct json_object *raw, struct err *e)
{
    (void)userdata;
    if (strcmp(name, "w") == 0) {
        mcp_field_warn(e, "\"first\" is odd");
        return mcp_field_warn(e, "\"second\" too");
    }
    if (strcmp(name, "bad") == 0)
        return err_set(e, -EINVAL, "\"x\" is bad");
    (void)raw;
    return 0;
}

/* what the pi adapter's entries hold, and the other clients' keys: accepted; a key no tool
 * reads is a warning naming it; "disabled" and "cwd" */
static void test_compat_keys(void)
{
    setup("compat");
    unsetenv("MCPT_CW_UNSET");
    setenv("MCPT_CW_DIR", "/srv", 1);
    put(USER, "{'mcpServers': {"
              "'bearer-lit': {'url': 'https://a.example', 'auth': 'bearer',"
              "  'bearerToken': 'static-token'},"
              "'bearer-env': {'url': 'https://a.example', 'auth': 'bearer',"
              "  'bearerTokenEnv': 'MY_API_KEY'},"
              "'both-off': {'url': 'https://a.example', 'auth': false, 'oauth': false},"
              "'idle0': {'command': 'x', 'idleTimeout': 0, 'lifecycle': 'eager'},"
              "'dis': {'command': 'x', 'disabled': true},"
              "'en': {'command': 'x', 'disabled': false},"
              "'dis-bad': {'command': 'x', 'disabled': 'yes'},"
              "'plain': {'url': 'http://mcp.example:8080/mcp', 'allowHttp': true},"
              "'plain-bad': {'url': 'http://mcp.example/mcp', 'allowHttp': 1},"
              "'cwd': {'command': 'x', 'cwd': '${MCPT_CW_DIR}/${MCPT_CW_SUB:-app}'},"
              "'cwd-miss': {'command': 'x', 'cwd': '${MCPT_CW_UNSET}'},"
              "'cwd-bad': {'command': 'x', 'cwd': '${MCPT CW}'},"
              "'input': {'command': 'x', 'args': ['--key=${input:api_key}']},"
              "'others': {'command': 'x', 'type': 'stdio', 'description': 'd', 'alwaysAllow': [],"
              "  'autoApprove': ['t'], 'timeout': 60000, 'dev': {}},"
              "'unk': {'command': 'x', 'zzz': 1, 'envFile': '.env', 'qqq': null},"
              "'unk-bad': {'command': 5, 'zzz': 1},"
              "'many': {'command': 'x', 'k0': 0, 'k1': 0, 'k2': 0, 'k3': 0, 'k4': 0, 'k5': 0,"
              "  'k6': 0, 'k7': 0, 'k8': 0, 'k9': 0, 'k10': 0, 'k11': 0, 'k12': 0, 'k13': 0,"
              "  'k14': 0, 'k15': 0, 'k16': 0, 'k17': 0, 'k18': 0, 'k19': 0}"
              "}}");
    struct mcp_config *c = load();
    if (!c)
        goto out;
    static const char *const valid[] = {"bearer-lit", "bearer-env", "both-off", "idle0", "dis",
                                        "en",         "cwd",        "others",   "unk",   "plain"};
    for (size_t i = 0; i < ELEMENTSOF(valid); i++) {
        const struct mcp_server *s = mcp_config_find(c, valid[i]);
        CHECK(s && !s->error);
        if (s && s->error)
            fprintf(stderr, "  %s\n", s->error);
        if (s && strcmp(valid[i], "unk") != 0)
            CHECK_INT(vlen(s->warnings), 0);
    }
    const struct mcp_server *s = mcp_config_find(c, "bearer-lit");
    CHECK(s && s->auth == MCP_AUTH_BEARER && s->bearer_token);
    s = mcp_config_find(c, "bearer-env");
    CHECK(s && s->auth == MCP_AUTH_BEARER && s->bearer_token_env);
    s = mcp_config_find(c, "both-off");
    CHECK(s && s->auth == MCP_AUTH_DISABLED);
    CHECK(mcp_config_find(c, "dis")->disabled);
    CHECK(!mcp_config_find(c, "en")->disabled);
    CHECK(!mcp_config_find(c, "idle0")->disabled);
    s = mcp_config_find(c, "dis-bad");
    CHECK(s && s->error && strstr(s->error, "\"disabled\" must be true or false, not a string"));
    CHECK(mcp_config_find(c, "plain")->allow_http);
    CHECK(!mcp_config_find(c, "bearer-lit")->allow_http);
    s = mcp_config_find(c, "plain-bad");
    CHECK(s && s->error && strstr(s->error, "\"allowHttp\" must be true or false, not a number"));

    /* cwd: a template, checked at load and expanded at each start */
    s = mcp_config_find(c, "cwd");
    CHECK(s && s->cwd && strcmp(s->cwd, "${MCPT_CW_DIR}/${MCPT_CW_SUB:-app}") == 0);
    char *dir = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(mcp_server_expand_cwd(s, NULL, NULL, &dir, &e), 0);
    CHECK_STR(dir, "/srv/app");
    secure_free(dir);
    CHECK_INT(mcp_server_expand_cwd(mcp_config_find(c, "en"), NULL, NULL, &dir, &e), 0);
    CHECK(dir == NULL);
    s = mcp_config_find(c, "cwd-miss");
    CHECK(s && s->error && strstr(s->error, "variable 'MCPT_CW_UNSET' is not set"));
    CHECK(s && vlen(s->missing_vars) == 1);
    s = mcp_config_find(c, "cwd-bad");
    CHECK(s && s->error && strstr(s->error, "\"cwd\": invalid variable name"));
    s = mcp_config_find(c, "input");
    CHECK(s && s->error &&
          strstr(s->error, "variable 'input:api_key' is not set: run: secrets configure api_key"));

    /* keys no tool reads: warnings, in the file's order; the entry stays valid */
    s = mcp_config_find(c, "unk");
    CHECK(s && !s->error && vlen(s->warnings) == 3);
    if (s && vlen(s->warnings) == 3) {
        CHECK_STR(s->warnings[0], "\"zzz\" is not a key of an entry: it is ignored (check the "
                                  "spelling)");
        CHECK_STR(s->warnings[1], "\"envFile\" is ignored: the file is not read: put the "
                                  "variables in \"env\"");
        CHECK_STR(s->warnings[2], "\"qqq\" is not a key of an entry: it is ignored (check the "
                                  "spelling)");
        struct mcp_server *cp = NULL;
        CHECK_INT(mcp_server_dup(s, &cp), 0);
        CHECK(cp && vlen(cp->warnings) == 3 && strcmp(cp->warnings[2], s->warnings[2]) == 0);
        mcp_server_free(cp);
    }
    s = mcp_config_find(c, "many");
    CHECK(s && !s->error && vlen(s->warnings) == 17);
    if (s && vlen(s->warnings) == 17) {
        CHECK_CONTAINS(s->warnings[15], "\"k15\" is not a key");
        CHECK_STR(s->warnings[16], "4 more keys no tool reads: they are ignored");
    }
    s = mcp_config_find(c, "unk-bad"); /* an invalid entry says both */
    CHECK(s && s->error && vlen(s->warnings) == 1);
    struct mcp_server *cp = NULL;
    CHECK_INT(mcp_server_dup(mcp_config_find(c, "dis"), &cp), 0);
    CHECK(cp && cp->disabled);
    mcp_server_free(cp);
    cp = NULL;
    CHECK_INT(mcp_server_dup(mcp_config_find(c, "plain"), &cp), 0);
    CHECK(cp && cp->allow_http);
    mcp_server_free(cp);
    mcp_config_free(c);

    /* a tool's check that accepts with warnings: each line one warning, before the unknown keys */
    put(USER, "{'mcpServers': {'w': {'command': 'x', 'q': 1}, 'bad': {'command': 'x'},"
              " 'plain': {'command': 'x'}}}");
    struct mcp_config_opts o = {.cwd = P("home/proj"), .check_entry = warn_check};
    c = load_opts(&o);
    if (!c)
        goto out;
    s = mcp_config_find(c, "w");
    CHECK(s && !s->error && vlen(s->warnings) == 3);
    if (s && vlen(s->warnings) == 3) {
        CHECK_STR(s->warnings[0], "\"first\" is odd");
        CHECK_STR(s->warnings[1], "\"second\" too");
        CHECK_CONTAINS(s->warnings[2], "\"q\" is not a key");
    }
    s = mcp_config_find(c, "bad");
    CHECK(s && s->error && strstr(s->error, "server 'bad': \"x\" is bad"));
    s = mcp_config_find(c, "plain");
    CHECK(s && !s->error && vlen(s->warnings) == 0);
    mcp_config_free(c);
out:
    unsetenv("MCPT_CW_DIR");
}

/* "protocolVersion": auto by default, legacy, 2026-07-28; anything else names the three */
static void test_protocol_version(void)
{
    setup("protover");
    put(USER, "{'mcpServers': {"
              "'none': {'command': 'x'},"
              "'auto': {'command': 'x', 'protocolVersion': 'auto'},"
              "'legacy': {'url': 'https://a.example', 'protocolVersion': 'legacy'},"
              "'modern': {'url': 'https://a.example', 'protocolVersion': '2026-07-28'},"
              "'old': {'command': 'x', 'protocolVersion': '2025-11-25'},"
              "'num': {'command': 'x', 'protocolVersion': 2026}"
              "}}");
    struct mcp_config *c = load();
    if (!c)
        return;
    const struct mcp_server *s = mcp_config_find(c, "none");
    CHECK(s && !s->error && s->protocol == MCP_PROTOCOL_AUTO && vlen(s->warnings) == 0);
    s = mcp_config_find(c, "auto");
    CHECK(s && !s->error && s->protocol == MCP_PROTOCOL_AUTO);
    s = mcp_config_find(c, "legacy");
    CHECK(s && !s->error && s->protocol == MCP_PROTOCOL_LEGACY);
    s = mcp_config_find(c, "modern");
    CHECK(s && !s->error && s->protocol == MCP_PROTOCOL_MODERN && vlen(s->warnings) == 0);
    s = mcp_config_find(c, "old");
    CHECK(s && s->error &&
          strstr(s->error, "\"protocolVersion\" must be \"auto\", \"legacy\" or "
                           "\"2026-07-28\", not '2025-11-25'"));
    s = mcp_config_find(c, "num");
    CHECK(s && s->error && strstr(s->error, "\"protocolVersion\" must be a string"));
    struct mcp_server *cp = NULL;
    CHECK_INT(mcp_server_dup(mcp_config_find(c, "modern"), &cp), 0);
    CHECK(cp && cp->protocol == MCP_PROTOCOL_MODERN);
    mcp_server_free(cp);
    mcp_config_free(c);
}

TESTS_MAIN(test_protocol_version, test_compat_keys, test_rejections, test_names,
           test_fields_and_types, test_auth_modes, test_defer_vars, test_expansion,
           test_many_missing, test_server_dup, test_server_dup_by_hand, test_transport_name)
