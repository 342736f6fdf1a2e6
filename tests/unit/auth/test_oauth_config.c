/* test_oauth_config.c - mcp-auth's "oauth" section: every field, every rejection and its
 * message, as the configuration loader judged them */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "credkit/mcp_config.h"

#include "grant.h"
#include "oauth_config.h"
#include "tests.h"

/* An entry from text in which ' stands for " so that JSON reads well in C. */
static struct json_object *entry(const char *text)
{
    char *s = strdup(text);
    if (!s)
        abort();
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    struct json_object *o = json_tokener_parse(s);
    free(s);
    CHECK(o != NULL);
    return o;
}

/* The settings of an entry given as text; NULL (with the reason printed) when refused. */
static struct oauth_config *parse(const char *text)
{
    struct json_object *o = entry(text);
    struct oauth_config *c = NULL;
    struct err e = ERR_INIT;
    int r = oauth_config_parse(o, &c, &e);
    json_object_put(o);
    if (r < 0)
        fprintf(stderr, "  refused: %s\n", err_msg(&e));
    return r < 0 ? NULL : c;
}

/* clang-format off */
static const struct {
    const char *name, *entry, *reason;
} rejects[] = {
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
    {"r-oa-assertion-type",
     "{'url': 'https://x.example', 'oauth': {'grant': 'jwt-bearer', 'assertion': 7}}",
     "\"oauth.assertion\" must be a string, not a number"},
    {"r-oa-account", "{'url': 'https://x.example', 'oauth': {'account': 7}}",
     "\"oauth.account\" must be a string, not a number"},
    {"r-oa-account-blank", "{'url': 'https://x.example', 'oauth': {'account': ''}}",
     "\"oauth.account\" must not be blank"},
    {"r-oa-account-chars", "{'url': 'https://x.example', 'oauth': {'account': 'my work'}}",
     "\"oauth.account\" must be up to 64 letters, digits and '.', '_', '@', '+', '-'"},
    {"r-top-account-chars", "{'url': 'https://x.example', 'account': 'my work'}",
     "\"account\" must be up to 64 letters, digits and '.', '_', '@', '+', '-'"},
    {"r-top-account-differs",
     "{'url': 'https://x.example', 'account': 'a', 'oauth': {'account': 'b'}}",
     "\"account\" and \"oauth.account\" name different accounts ('a', 'b'): keep one"},
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
    {"r-oa-cb-ftp", "{'url': 'https://x.example', 'oauth': {'callbackUrl': 'ftp://dev.example/cb'}}",
     "\"oauth.callbackUrl\" must be an http:// or https:// URL with a host"},
    {"r-oa-cb-query",
     "{'url': 'https://x.example', 'oauth': {'callbackUrl': 'https://dev.example/cb?x=1'}}",
     "\"oauth.callbackUrl\" must be an http:// or https:// URL"},
    {"r-oa-cb-user",
     "{'url': 'https://x.example', 'oauth': {'callbackUrl': 'https://me@dev.example/cb'}}",
     "\"oauth.callbackUrl\" must be an http:// or https:// URL"},
    {"r-oa-cb-nohost", "{'url': 'https://x.example', 'oauth': {'callbackUrl': 'https:///cb'}}",
     "\"oauth.callbackUrl\" must be an http:// or https:// URL"},
    {"r-oa-cb-both",
     "{'url': 'https://x.example', 'oauth': {'callbackUrl': 'https://dev.example/cb', "
     "'redirectUri': 'http://127.0.0.1:8080/callback'}}",
     "\"oauth.callbackUrl\" and \"oauth.redirectUri\" both name the redirect URI: keep one"},
    {"r-oa-cbport-0", "{'url': 'https://x.example', 'oauth': {'callbackPort': 0}}",
     "\"oauth.callbackPort\" must be a port number from 1 to 65535"},
    {"r-oa-cbport-big", "{'url': 'https://x.example', 'oauth': {'callbackPort': 65536}}",
     "\"oauth.callbackPort\" must be a port number from 1 to 65535"},
    {"r-oa-cbport-str", "{'url': 'https://x.example', 'oauth': {'callbackPort': '8765'}}",
     "\"oauth.callbackPort\" must be a port number from 1 to 65535"},
    {"r-gt-word", "{'url': 'https://x.example', 'oauth': {'grantType': 'password'}}",
     "\"oauth.grantType\" must be \"authorization_code\" or \"client_credentials\" (\"oauth.grant\" names mcp-auth's other grants), not 'password'"},
    {"r-gt-jwt", "{'url': 'https://x.example', 'oauth': {'grantType': 'jwt-bearer'}}",
     "\"oauth.grantType\" must be \"authorization_code\" or \"client_credentials\""},
    {"r-gt-num", "{'url': 'https://x.example', 'oauth': {'grantType': 1}}",
     "\"oauth.grantType\" must be a string, not a number"},
    {"r-gt-clash", "{'url': 'https://x.example', 'oauth': {'grantType': 'client_credentials', 'grant': 'authorization_code'}}",
     "\"oauth.grantType\" is 'client_credentials' but \"oauth.grant\" is 'authorization_code': they name the same thing, keep one"},
    {"r-logo-rel", "{'url': 'https://x.example', 'oauth': {'logoUri': 'logo.png'}}",
     "\"oauth.logoUri\" must be an absolute http:// or https:// URL"},
    {"r-logo-file", "{'url': 'https://x.example', 'oauth': {'logoUri': 'file:///logo.png'}}",
     "\"oauth.logoUri\" must be an absolute http:// or https:// URL"},
    {"r-logo-user", "{'url': 'https://x.example', 'oauth': {'logoUri': 'https://u:p@l.example/l'}}",
     "without a user name or password"},
    {"r-asm-http",
     "{'url': 'https://x.example', 'oauth': {'authServerMetadataUrl': "
     "'http://as.example/.well-known/openid-configuration'}}",
     "\"oauth.authServerMetadataUrl\" 'http://as.example/.well-known/openid-configuration' is "
     "not https"},
    {"r-asm-num", "{'url': 'https://x.example', 'oauth': {'authServerMetadataUrl': 1}}",
     "\"oauth.authServerMetadataUrl\" must be a string, not a number"},
    {"r-skip-str",
     "{'url': 'https://x.example', 'oauth': {'skipIssuerMetadataValidation': 'yes'}}",
     "\"oauth.skipIssuerMetadataValidation\" must be true or false, not a string"},
    {"r-ap-type", "{'url': 'https://x.example', 'oauth': {'authorizationParams': 'a=b'}}",
     "\"oauth.authorizationParams\" must be an object of strings, not a string"},
    {"r-ap-num", "{'url': 'https://x.example', 'oauth': {'authorizationParams': {'prompt': 1}}}",
     "\"oauth.authorizationParams.prompt\" must be a string, not a number"},
    {"r-ap-state",
     "{'url': 'https://x.example', 'oauth': {'authorizationParams': {'state': 'x'}}}",
     "\"oauth.authorizationParams.state\" cannot override a parameter of the authorization "
     "request: mcp-auth sets it"},
    {"r-ap-redirect",
     "{'url': 'https://x.example', 'oauth': {'authorizationParams': {'redirect_uri': 'x'}}}",
     "\"oauth.authorizationParams.redirect_uri\" cannot override"},
    {"r-ap-empty", "{'url': 'https://x.example', 'oauth': {'authorizationParams': {'': 'x'}}}",
     "\"oauth.authorizationParams\" has a name that is empty"},
    {"r-cn-num", "{'url': 'https://x.example', 'oauth': {'clientName': 5}}",
     "\"oauth.clientName\" must be a string, not a number"},
    {"r-cn-blank", "{'url': 'https://x.example', 'oauth': {'clientName': ' '}}",
     "\"oauth.clientName\" must not be blank"},
    {"r-cn-ctl", "{'url': 'https://x.example', 'oauth': {'clientName': 'a\\nb'}}",
     "\"oauth.clientName\" must not contain control characters"},
    {"r-cu-http", "{'url': 'https://x.example', 'oauth': {'clientUri': 'http://pi.dev'}}",
     "\"oauth.clientUri\" must be an https:// URL without a user name or password"},
    {"r-cu-rel", "{'url': 'https://x.example', 'oauth': {'clientUri': 'pi.dev'}}",
     "\"oauth.clientUri\" must be an https:// URL"},
    {"r-cu-user", "{'url': 'https://x.example', 'oauth': {'clientUri': 'https://u:p@pi.dev'}}",
     "\"oauth.clientUri\" must be an https:// URL without a user name or password"},
    {"r-cu-arr", "{'url': 'https://x.example', 'oauth': {'clientUri': []}}",
     "\"oauth.clientUri\" must be a string, not an array"},
    {"r-tmpl-secret", "{'url': 'https://x.example', 'oauth': {'clientSecret': '${}'}}",
     "\"oauth.clientSecret\": invalid variable name"},
    {"r-tmpl-secret-open",
     "{'url': 'https://x.example', 'oauth': {'clientSecret': 'SECRETLITERAL${X'}}",
     "\"oauth.clientSecret\": unterminated \"${\" at character 14"},
    {"r-tmpl-secret-late",
     "{'url': 'https://x.example', 'oauth': {'clientSecret': '${MCPT_UNSET_VAR}${1}'}}",
     "\"oauth.clientSecret\": invalid variable name in \"${...}\" at character 18"},
    /* "!!x" is the template "!x": checked as one */
    {"r-tmpl-secret-bang", "{'url': 'https://x.example', 'oauth': {'clientSecret': '!!${}'}}",
     "\"oauth.clientSecret\": invalid variable name"},
};
/* clang-format on */

static void test_rejections(void)
{
    unsetenv("MCPT_UNSET_VAR");
    for (size_t i = 0; i < ELEMENTSOF(rejects); i++) {
        char name[64], source[] = "~/.pi/agent/mcp.json";
        snprintf(name, sizeof(name), "%s", rejects[i].name);
        struct mcp_server s = {.name = name, .source = source, .raw = entry(rejects[i].entry)};
        struct oauth_config *c = NULL, *untouched = (struct oauth_config *)&s;
        struct err e = ERR_INIT;
        int r = oauth_config_parse_server(&s, &c, &e);
        CHECK_INT(r, -EINVAL);
        CHECK(c == NULL);
        if (r >= 0) {
            fprintf(stderr, "  entry '%s' was accepted\n", rejects[i].name);
            oauth_config_free(c);
            json_object_put(s.raw);
            continue;
        }
        char prefix[256];
        snprintf(prefix, sizeof(prefix), "'~/.pi/agent/mcp.json': server '%s': ", name);
        CHECK(strncmp(err_msg(&e), prefix, strlen(prefix)) == 0);
        CHECK_CONTAINS(err_msg(&e), rejects[i].reason);
        /* no control character in a message, no literal value */
        for (const char *p = err_msg(&e); *p; p++)
            CHECK((unsigned char)*p >= 0x20);
        CHECK(!strstr(err_msg(&e), "SECRETLITERAL"));

        /* the reason alone, without file and server; *ret untouched */
        struct err why = ERR_INIT;
        c = untouched;
        CHECK_INT(oauth_config_parse(s.raw, &c, &why), -EINVAL);
        CHECK(c == untouched);
        CHECK_CONTAINS(err_msg(&why), rejects[i].reason);
        CHECK(strstr(err_msg(&why), "server '") == NULL);
        json_object_put(s.raw);
    }
}

/* the name is quoted as the loader quotes it: control characters escaped, long ones cut */
static void test_server_name(void)
{
    char name[] = "n\001x", source[] = "command line";
    struct mcp_server s = {
        .name = name, .source = source, .raw = entry("{'url': 'https://x.example', 'oauth': 1}")};
    struct oauth_config *c = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(oauth_config_parse_server(&s, &c, &e), -EINVAL);
    CHECK_STR(err_msg(&e),
              "'command line': server 'n\\x01x': \"oauth\" must be an object, not a number");
    char long_name[200];
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = 0;
    s.name = long_name;
    CHECK_INT(oauth_config_parse_server(&s, &c, &e), -EINVAL);
    char want[160];
    snprintf(want, sizeof(want), "'command line': server '%.96s...': ", long_name);
    CHECK(strncmp(err_msg(&e), want, strlen(want)) == 0);
    json_object_put(s.raw);
}

static void test_oauth(void)
{
    setenv("MCPT_CLIENT_SECRET", "s3cr3t", 1);
    unsetenv("MCPT_NO_SECRET");
    struct oauth_config *f =
        parse("{'url': 'https://a.example/mcp', 'oauth': {'clientId': 'cid',"
              "  'clientSecret': '${MCPT_CLIENT_SECRET}', 'scope': 'read write',"
              "  'redirectUri': 'http://127.0.0.1:8765/callback', 'grant': 'client_credentials',"
              "  'privateKeyFile': '/keys/k.pem', 'privateKeyAlg': 'ES256',"
              "  'clientMetadataUrl': 'https://client.example/meta.json', 'account': 'work',"
              "  'refreshScope': true, 'sendResource': false, 'someday': 1,"
              "  'logoUri': 'https://client.example/logo.png',"
              "  'authServerMetadataUrl': 'https://as.example/.well-known/openid-configuration',"
              "  'skipIssuerMetadataValidation': true,"
              "  'authorizationParams': {'prompt': 'consent', 'ui_locales': 'fr de'}}}");
    CHECK(f != NULL);
    if (f) {
        CHECK_STR(f->client_id, "cid");
        CHECK_STR(f->account, "work");
        CHECK_STR(f->client_secret, "${MCPT_CLIENT_SECRET}"); /* the template, kept */
        CHECK_STR(f->scope, "read write");
        CHECK_STR(f->redirect_uri, "http://127.0.0.1:8765/callback");
        CHECK_STR(f->grant, "client_credentials");
        CHECK_STR(f->private_key_file, "/keys/k.pem");
        CHECK_STR(f->private_key_alg, "ES256");
        CHECK_STR(f->client_metadata_url, "https://client.example/meta.json");
        CHECK(f->refresh_sends_scope);
        CHECK(f->omit_resource);
        CHECK_STR(f->logo_uri, "https://client.example/logo.png");
        CHECK_STR(f->as_metadata_url, "https://as.example/.well-known/openid-configuration");
        CHECK(f->skip_issuer_check);
        CHECK(f->authorization_params && f->authorization_params[0] && f->authorization_params[1] &&
              !f->authorization_params[2]);
        if (f->authorization_params && f->authorization_params[0] && f->authorization_params[1]) {
            CHECK_STR(f->authorization_params[0], "prompt=consent");
            CHECK_STR(f->authorization_params[1], "ui_locales=fr de");
        }
    }
    oauth_config_free(f);
    f = parse("{'url': 'https://a.example/mcp', 'oauth': {'callbackUrl': "
              "'https://devbox.example/oauth/callback', 'callbackPort': 8765}}");
    CHECK(f && f->callback_url && f->callback_port == 8765);
    if (f)
        CHECK_STR(f->callback_url, "https://devbox.example/oauth/callback");
    oauth_config_free(f);
    struct oauth_config *d = parse("{'url': 'https://a.example/mcp', 'oauth': {'clientId': 'x'}}");
    CHECK(d && !d->omit_resource && !d->refresh_sends_scope && !d->grant && !d->client_secret &&
          !d->private_key_alg && !d->logo_uri && !d->as_metadata_url && !d->skip_issuer_check &&
          !d->authorization_params);
    oauth_config_free(d);
    struct oauth_config *x;
    x = parse("{'url': 'https://a.example', 'oauth': {'redirectUri': "
              "'http://localhost:8/callback',"
              "  'clientMetadataUrl': 'http://127.0.0.1:3000/c.json'}}");
    CHECK(x != NULL);
    oauth_config_free(x);
    x = parse("{'url': 'https://a.example', 'oauth': {'redirectUri': "
              "'http://127.0.0.1:9/callback'}}");
    CHECK(x != NULL);
    oauth_config_free(x);
    /* a missing client secret variable is reported when the secret is needed (sign-in,
     * refresh), not at load: a stored token stays usable without it */
    x = parse("{'url': 'https://a.example', 'oauth': {'clientSecret': '${MCPT_NO_SECRET}'}}");
    CHECK(x != NULL);
    if (x)
        CHECK_STR(x->client_secret, "${MCPT_NO_SECRET}");
    oauth_config_free(x);
    /* a "!command" is run when the secret is needed, never at load; "${" in it is the
     * command's own */
    x = parse("{'url': 'https://a.example', 'oauth': {'clientSecret': '!echo ${'}}");
    CHECK(x != NULL);
    if (x)
        CHECK_STR(x->client_secret, "!echo ${");
    oauth_config_free(x);
    unsetenv("MCPT_CLIENT_SECRET");
}

/* the settings are read whatever "auth" says; an empty object and no object are empty */
static void test_fields_and_types(void)
{
    struct oauth_config *x =
        parse("{'url': 'https://a.example', 'auth': 'none', 'oauth': {'clientId': 'c'}}");
    CHECK(x && x->client_id && strcmp(x->client_id, "c") == 0);
    oauth_config_free(x);
    const char *empties[] = {
        "{'url': 'https://a.example', 'oauth': {}}",
        "{'url': 'https://a.example', 'auth': 'oauth'}",
        "{'url': 'https://a.example', 'oauth': null}",
        "{'url': 'https://a.example', 'oauth': {'clientId': null, 'grant': null, 'idp': null}}",
        "{'command': 'x'}",
    };
    for (size_t i = 0; i < ELEMENTSOF(empties); i++) {
        x = parse(empties[i]);
        CHECK(x && !x->client_id && !x->client_secret && !x->client_metadata_url && !x->scope &&
              !x->redirect_uri && !x->grant && !x->private_key_file && !x->private_key_alg &&
              !x->refresh_sends_scope && !x->omit_resource && !x->idp_issuer &&
              !x->idp_token_endpoint && !x->idp_client_id && !x->idp_client_secret &&
              !x->idp_id_token);
        oauth_config_free(x);
    }
    struct err e = ERR_INIT;
    x = NULL;
    CHECK_INT(oauth_config_parse(NULL, &x, &e), 0);
    CHECK(x && !x->client_id && !x->grant);
    oauth_config_free(x);
    oauth_config_free(NULL);
}

static void test_idp(void)
{
    struct oauth_config *o =
        parse("{'url': 'https://o.example', 'oauth': {'clientId': 'cid',"
              "  'clientSecret': '${SEC}', 'clientMetadataUrl': 'https://c.example/m.json',"
              "  'scope': 'read', 'redirectUri': 'http://127.0.0.1:8765/callback',"
              "  'grant': 'jwt-bearer', 'privateKeyFile': '/k.pem', 'privateKeyAlg': 'ES256',"
              "  'refreshScope': true, 'sendResource': false,"
              "  'idp': {'issuer': 'https://idp.example',"
              "    'tokenEndpoint': 'https://idp.example/t',"
              "    'clientId': 'icid', 'clientSecret': '${ISEC}', 'idToken': '${IDT}'}}}");
    CHECK(o != NULL);
    if (o) {
        CHECK_STR(o->client_id, "cid");
        CHECK_STR(o->client_secret, "${SEC}");
        CHECK_STR(o->client_metadata_url, "https://c.example/m.json");
        CHECK_STR(o->scope, "read");
        CHECK_STR(o->redirect_uri, "http://127.0.0.1:8765/callback");
        CHECK_STR(o->grant, "jwt-bearer");
        CHECK_STR(o->private_key_file, "/k.pem");
        CHECK_STR(o->private_key_alg, "ES256");
        CHECK(o->refresh_sends_scope && o->omit_resource);
        CHECK_STR(o->idp_issuer, "https://idp.example");
        CHECK_STR(o->idp_token_endpoint, "https://idp.example/t");
        CHECK_STR(o->idp_client_id, "icid");
        CHECK_STR(o->idp_client_secret, "${ISEC}");
        CHECK_STR(o->idp_id_token, "${IDT}");
    }
    oauth_config_free(o);
}

/* workload identity federation: jwt-bearer with the workload's own JWT instead of an idp */
static void test_assertion(void)
{
    struct oauth_config *o = parse("{'url': 'https://o.example', 'oauth': {'clientId': 'w',"
                                   "  'grant': 'jwt-bearer', 'assertion': '${WORKLOAD_JWT}'}}");
    CHECK(o != NULL);
    if (o) {
        CHECK_STR(o->grant, "jwt-bearer");
        CHECK_STR(o->assertion, "${WORKLOAD_JWT}");
        CHECK(o->idp_token_endpoint == NULL);
    }
    oauth_config_free(o);
}

/* the pi adapter's sub-keys: grantType (as grant), clientName, clientUri; "oauth": false */
static void test_adapter_keys(void)
{
    struct oauth_config *c =
        parse("{'url': 'https://a.example', 'auth': 'oauth', 'oauth': {"
              "  'grantType': 'authorization_code', 'clientId': 'optional-pre-registered-id',"
              "  'clientSecret': 'optional-secret', 'scope': 'optional-scopes',"
              "  'redirectUri': 'http://127.0.0.1:9000/callback', 'clientName': 'Pi MCP Client',"
              "  'clientUri': 'https://pi.dev'}}");
    CHECK(c != NULL);
    if (c) {
        CHECK_STR(c->grant, "authorization_code");
        CHECK_STR(c->client_id, "optional-pre-registered-id");
        CHECK_STR(c->client_secret, "optional-secret");
        CHECK_STR(c->scope, "optional-scopes");
        CHECK_STR(c->redirect_uri, "http://127.0.0.1:9000/callback");
        CHECK_STR(c->client_name, "Pi MCP Client");
        CHECK_STR(c->client_uri, "https://pi.dev");
    }
    oauth_config_free(c);
    c = parse("{'url': 'https://a.example', 'oauth': {'grantType': 'client_credentials',"
              " 'grant': 'client_credentials', 'clientId': 'c', 'clientSecret': 's'}}");
    CHECK(c && c->grant && strcmp(c->grant, "client_credentials") == 0);
    CHECK(c && grant_find(c->grant) == &grant_client_credentials);
    CHECK(c && !c->client_name && !c->client_uri);
    oauth_config_free(c);
    c = parse("{'url': 'https://a.example', 'oauth': {'grantType': null, 'clientName': null}}");
    CHECK(c && !c->grant && !c->client_name);
    oauth_config_free(c);
    /* false: no OAuth, no settings (the loader makes the entry's auth DISABLED) */
    c = parse("{'url': 'https://a.example', 'oauth': false}");
    CHECK(c && !c->client_id && !c->grant);
    oauth_config_free(c);
    c = parse("{'url': 'https://a.example', 'auth': false, 'oauth': false}");
    CHECK(c != NULL);
    oauth_config_free(c);
}

/* the names the parser accepts are the registry's; the default is the first */
static void test_grants(void)
{
    CHECK(grant_find(NULL) == &grant_authorization_code);
    CHECK(grant_find("authorization_code") == &grant_authorization_code);
    CHECK(grant_find("client_credentials") == &grant_client_credentials);
    CHECK(grant_find("jwt-bearer") == &grant_jwt_bearer);
    CHECK(grant_find("password") == NULL);
    CHECK(grant_at(0) == &grant_authorization_code && grant_at(3) == NULL);
    for (size_t i = 0; grant_at(i); i++) {
        char text[256];
        snprintf(text, sizeof(text),
                 "{'url': 'https://a.example', 'oauth': {'grant': '%s', 'idp': "
                 "{'tokenEndpoint': 'https://i/t', 'idToken': '${T}'}}}",
                 grant_at(i)->name);
        struct oauth_config *c = parse(text);
        CHECK(c && c->grant && strcmp(c->grant, grant_at(i)->name) == 0);
        oauth_config_free(c);
        CHECK(grant_at(i)->sign_in != NULL);
        /* a grant without a person renews by itself; one with a person never does */
        CHECK(grant_at(i)->unattended == (grant_at(i)->renew != NULL));
    }
}

TESTS_MAIN(test_rejections, test_server_name, test_oauth, test_fields_and_types, test_idp,
           test_assertion, test_grants, test_adapter_keys)
