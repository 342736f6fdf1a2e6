/* oauth_config.c - the "oauth" object of an mcp.json entry, read by mcp-auth itself
 *
 * The rules and the messages are the configuration loader's (common/mcp_config.c), so that an
 * entry is judged the same whichever of the two reads it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/mcp_field.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "credkit/url.h"
#include "credkit/util.h"

#include "grant.h"
#include "oauth_config.h"
#include "tokens.h"

#define bad(e, ...) err_set((e), -EINVAL, __VA_ARGS__)

static int oom(struct err *e)
{
    return err_set(e, -ENOMEM, "out of memory");
}

/* The loader's typed readers (credkit/mcp_field.h), so that these keys speak as the others do;
 * a string that may be a secret (a client secret written out) is wiped when replaced. */
static int get_string(struct json_object *o, const char *key, const char *label, unsigned flags,
                      char **ret, struct err *e)
{
    char *v = NULL;
    int r = mcp_field_string(o, key, label, flags, &v, e);
    if (r < 0 || !v)
        return r;
    secure_free(*ret);
    *ret = v;
    return 0;
}

/* One of the given words, copied into *ret; *ret untouched when absent. */
static int get_word(struct json_object *o, const char *key, const char *label,
                    const char *const *words, const char *expect, char **ret, struct err *e)
{
    int i = -1;
    int r = mcp_field_enum(o, key, label, words, expect, &i, e);
    if (r < 0 || i < 0)
        return r;
    char *c = strdup(words[i]);
    if (!c)
        return oom(e);
    free(*ret);
    *ret = c;
    return 0;
}

/* ---- checks ------------------------------------------------------------------------------ */

/* oauth.clientMetadataUrl: https with a path (the document), or http on a loopback host. */
static int check_metadata_url(const char *url, struct err *e)
{
    char *canon = NULL, *path = NULL;
    bool ok = false;
    int r = url_canonical(url, &canon, NULL);
    if (r >= 0 && strncmp(canon, "https://", 8) == 0) {
        r = url_path(canon, &path);
        ok = r >= 0 && strcmp(path, "/") != 0;
    } else if (r >= 0) {
        ok = url_is_loopback(canon);
    }
    free(canon);
    free(path);
    if (r == -ENOMEM)
        return oom(e);
    if (!ok)
        return bad(e, "\"oauth.clientMetadataUrl\" must be an https:// URL with a path (the "
                      "client metadata document), or http:// on a loopback address");
    return 0;
}

/* oauth.redirectUri: an http loopback redirect (RFC 8252 7.3). The loopback listener serves
 * 127.0.0.1:<port>/callback: a fixed redirect URI must be one it can receive, or the sign-in
 * would wait for a request that can never arrive. */
static int check_redirect_uri(const char *url, struct err *e)
{
    static const char *const hosts[] = {"http://127.0.0.1:", "http://localhost:"};
    bool ok = false;
    for (size_t i = 0; i < ELEMENTSOF(hosts) && !ok; i++) {
        size_t n = strlen(hosts[i]);
        if (strncmp(url, hosts[i], n) != 0)
            continue;
        const char *p = url + n;
        size_t digits = strspn(p, "0123456789");
        long port = digits > 0 && digits <= 5 ? strtol(p, NULL, 10) : 0;
        ok = port > 0 && port <= 65535 && strcmp(p + digits, "/callback") == 0;
    }
    if (!ok)
        return bad(e, "\"oauth.redirectUri\" must be 'http://127.0.0.1:PORT/callback' (or "
                      "localhost) with an explicit port: that is where mcp-auth listens");
    return 0;
}

/* oauth.callbackUrl: the redirect URI for a machine the browser reaches through an ingress or a
 * port forward; the listener stays on loopback and takes the callback on this URL's path. */
int oauth_check_callback_url(const char *url, const char *label, struct err *e)
{
    size_t scheme = url_scheme_len(url);
    char *canonical = NULL;
    bool parsed = url_canonical(url, &canonical, NULL) >= 0;
    free(canonical);
    bool web = (scheme == 4 && strncasecmp(url, "http", 4) == 0) ||
               (scheme == 5 && strncasecmp(url, "https", 5) == 0);
    if (!web || strncmp(url + scheme, "://", 3) != 0 || url[scheme + 3] == '/' ||
        url_has_userinfo(url) || strpbrk(url, "?# \t\r\n") || !parsed)
        return bad(e,
                   "%s must be an http:// or https:// URL with a host and neither a query, a "
                   "fragment nor a user name: the address the browser is sent back to",
                   label);
    return 0;
}

/* oauth.callbackPort: the port the loopback listener binds, whole and from 1 to 65535. */
static int parse_callback_port(struct json_object *o, uint16_t *ret, struct err *e)
{
    struct json_object *v;
    int64_t port = 0;
    if (!json_object_object_get_ex(o, "callbackPort", &v) || json_object_is_type(v, json_type_null))
        return 0;
    if (!json_get_int64(o, "callbackPort", &port) || port < 1 || port > 65535)
        return bad(e, "\"oauth.callbackPort\" must be a port number from 1 to 65535");
    *ret = (uint16_t)port;
    return 0;
}

/* Every variable counts as set (with its value, or empty): only the template's syntax and the
 * bound on its expansion are judged, never whether the variable exists. */
static int any_var(void *userdata, const char *name, char **ret, struct err *e)
{
    (void)userdata;
    const char *v = getenv(name);
    char *c = strdup(v ? v : "");
    if (!c)
        return err_set(e, -ENOMEM, "out of memory");
    *ret = c;
    return 0;
}

/* The clientSecret template, checked for syntax only (the loader's expansion at load time). A
 * "!command" is not run here: only when a secret is needed (client_config_secret). */
static int check_secret_template(const char *value, struct err *e)
{
    char *val = NULL;
    const char *tmpl = mcp_value_template(value);
    if (!tmpl)
        return 0;
    int r = mcp_expand(tmpl, any_var, NULL, &val, e);
    secure_free(val);
    if (r == -ENOMEM)
        return oom(e);
    if (r < 0)
        return err_prefix(e, "\"oauth.clientSecret\"");
    return 0;
}

/* ---- the object -------------------------------------------------------------------------- */

#define CLIENT_NAME_MAX 200 /* bytes */

/* oauth.clientName: shown to the user on the consent screen: one line of text */
static int check_client_name(const char *name, struct err *e)
{
    if (strlen(name) > CLIENT_NAME_MAX)
        return bad(e, "\"oauth.clientName\" must be at most %d bytes", CLIENT_NAME_MAX);
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return bad(e, "\"oauth.clientName\" must not contain control characters");
    return 0;
}

/* oauth.clientUri: the client's home page as the consent screen links it (RFC 7591 2): an
 * https:// URL, which an authorization server may check, without credentials in it. */
static int check_client_uri(const char *url, struct err *e)
{
    char *canon = NULL;
    int r = url_has_userinfo(url) ? -EINVAL : url_canonical(url, &canon, NULL);
    bool ok = r >= 0 && strncmp(canon, "https://", 8) == 0;
    free(canon);
    if (r == -ENOMEM)
        return oom(e);
    if (!ok)
        return bad(e, "\"oauth.clientUri\" must be an https:// URL without a user name or "
                      "password (the client's home page, which the sign-in page links): it is "
                      "sent in the client registration");
    return 0;
}

/* oauth.logoUri: the client's logo as the consent screen shows it (RFC 7591 2), fetched by the
 * authorization server: an absolute http(s) URL without credentials in it. */
static int check_logo_uri(const char *url, struct err *e)
{
    char *canon = NULL;
    int r = url_has_userinfo(url) ? -EINVAL : url_canonical(url, &canon, NULL);
    bool ok = r >= 0 && (strncmp(canon, "https://", 8) == 0 || strncmp(canon, "http://", 7) == 0);
    free(canon);
    if (r == -ENOMEM)
        return oom(e);
    if (!ok)
        return bad(e, "\"oauth.logoUri\" must be an absolute http:// or https:// URL without a "
                      "user name or password (the authorization server fetches it for its "
                      "sign-in page): it is sent in the client registration");
    return 0;
}

/* oauth.authorizationParams: an object of strings, none of them a parameter the authorization
 * request already carries (the pi adapter's reserved names). */
static int parse_authorization_params(struct json_object *o, struct oauth_config *c, struct err *e)
{
    static const char *const reserved[] = {
        "client_id",    "code_challenge", "code_challenge_method",
        "redirect_uri", "resource",       "response_type",
        "scope",        "state"};
    struct json_object *v = mcp_field_member(o, "authorizationParams");
    struct strv sv = STRV_INIT;
    int r = 0;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_object))
        return bad(e, "\"oauth.authorizationParams\" must be an object of strings, not %s",
                   mcp_field_type(v));
    json_object_object_foreach(v, k, val)
    {
        char kd[MCP_DISP_BUF];
        mcp_disp(kd, k);
        if (!k[0] || strpbrk(k, "=&#"))
            r = bad(e,
                    "\"oauth.authorizationParams\" has a name that is empty or holds '=', '&' "
                    "or '#': '%s'",
                    kd);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(reserved); i++)
            if (strcmp(k, reserved[i]) == 0)
                r = bad(e,
                        "\"oauth.authorizationParams.%s\" cannot override a parameter of the "
                        "authorization request: mcp-auth sets it",
                        kd);
        if (r >= 0 && !json_object_is_type(val, json_type_string))
            r = bad(e, "\"oauth.authorizationParams.%s\" must be a string, not %s", kd,
                    mcp_field_type(val));
        if (r >= 0 && strv_pushf(&sv, "%s=%s", k, json_object_get_string(val)) < 0)
            r = oom(e);
        if (r < 0)
            break;
    }
    char **out = r >= 0 && sv.n ? strv_detach(&sv) : NULL;
    if (r >= 0 && sv.n && !out)
        r = oom(e);
    strv_release(&sv);
    if (r >= 0) {
        strv_free(c->authorization_params);
        c->authorization_params = out;
    }
    return r;
}

/* "grantType" (the pi adapter's key) as "grant": the same word, or no more than the adapter's
 * two; both keys given must agree. */
static int parse_grant_type(struct json_object *o, struct oauth_config *c, struct err *e)
{
    static const char *const types[] = {"authorization_code", "client_credentials", NULL};
    char *t = NULL;
    int r = get_word(o, "grantType", "oauth.grantType", types,
                     "\"authorization_code\" or \"client_credentials\" (\"oauth.grant\" names "
                     "mcp-auth's other grants)",
                     &t, e);
    if (r < 0 || !t)
        return r;
    if (c->grant && strcmp(c->grant, t) != 0) {
        r = bad(e,
                "\"oauth.grantType\" is '%s' but \"oauth.grant\" is '%s': they name the same "
                "thing, keep one",
                t, c->grant);
        free(t);
        return r;
    }
    free(c->grant);
    c->grant = t;
    return 0;
}

/* "\"a\", \"b\" or \"c\"": the grants as the message lists them. */
static int grant_words(const char **words, size_t max, char *expect, size_t size)
{
    size_t n = 0, o = 0;
    for (const struct grant_ops *g; n + 1 < max && (g = grant_at(n)); n++)
        words[n] = g->name;
    words[n] = NULL;
    expect[0] = 0;
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(expect + o, size - o, "%s\"%s\"",
                         i == 0       ? ""
                         : i + 1 == n ? " or "
                                      : ", ",
                         words[i]);
        if (w < 0 || (size_t)w >= size - o)
            return -ENOMEM;
        o += (size_t)w;
    }
    return 0;
}

static int parse_idp(struct json_object *idp, struct oauth_config *c, struct err *e)
{
    int r;
    if (!json_object_is_type(idp, json_type_object))
        return bad(e, "\"oauth.idp\" must be an object, not %s", mcp_field_type(idp));
    r = get_string(idp, "issuer", "oauth.idp.issuer", MCP_FIELD_NONBLANK, &c->idp_issuer, e);
    if (r >= 0)
        r = get_string(idp, "tokenEndpoint", "oauth.idp.tokenEndpoint", MCP_FIELD_NONBLANK,
                       &c->idp_token_endpoint, e);
    if (r >= 0)
        r = get_string(idp, "clientId", "oauth.idp.clientId", MCP_FIELD_NONBLANK, &c->idp_client_id,
                       e);
    if (r >= 0)
        r = get_string(idp, "clientSecret", "oauth.idp.clientSecret", MCP_FIELD_NONBLANK,
                       &c->idp_client_secret, e);
    if (r >= 0)
        r = get_string(idp, "idToken", "oauth.idp.idToken", MCP_FIELD_NONBLANK, &c->idp_id_token,
                       e);
    if (r < 0)
        return r;
    if (!c->idp_token_endpoint || !c->idp_id_token)
        return bad(e, "\"oauth.idp\" needs \"tokenEndpoint\" and \"idToken\"");
    return 0;
}

/* The members in the loader's order, so that the first problem reported is the same. */
static int parse_members(struct json_object *o, struct oauth_config *c, struct err *e)
{
    static const char *const algs[] = {"ES256", "RS256", NULL};
    const char *grants[16];
    char expect[512];
    bool send_resource = true;
    int r;

    if (!json_object_is_type(o, json_type_object))
        return bad(e, "\"oauth\" must be an object, not %s", mcp_field_type(o));
    r = get_string(o, "clientId", "oauth.clientId", MCP_FIELD_NONBLANK, &c->client_id, e);
    if (r >= 0)
        r = get_string(o, "clientSecret", "oauth.clientSecret", MCP_FIELD_NONBLANK,
                       &c->client_secret, e);
    if (r >= 0)
        r = get_string(o, "clientMetadataUrl", "oauth.clientMetadataUrl", 0,
                       &c->client_metadata_url, e);
    if (r >= 0)
        r = get_string(o, "scope", "oauth.scope", 0, &c->scope, e);
    if (r >= 0)
        r = get_string(o, "redirectUri", "oauth.redirectUri", 0, &c->redirect_uri, e);
    if (r >= 0)
        r = get_string(o, "callbackUrl", "oauth.callbackUrl", 0, &c->callback_url, e);
    if (r >= 0)
        r = parse_callback_port(o, &c->callback_port, e);
    if (r >= 0)
        r = get_string(o, "account", "oauth.account", MCP_FIELD_NONBLANK, &c->account, e);
    if (r >= 0 && c->account && !tokens_label_valid(c->account))
        r = bad(e,
                "\"oauth.account\" must be up to %d letters, digits and '.', '_', '@', '+', "
                "'-'",
                TOKENS_LABEL_MAX);
    if (r >= 0)
        r = get_string(o, "privateKeyFile", "oauth.privateKeyFile", MCP_FIELD_NONBLANK,
                       &c->private_key_file, e);
    if (r >= 0)
        r = get_string(o, "assertion", "oauth.assertion", MCP_FIELD_NONBLANK, &c->assertion, e);
    if (r >= 0)
        r = mcp_field_bool(o, "refreshScope", "oauth.refreshScope", &c->refresh_sends_scope, e);
    if (r >= 0)
        r = mcp_field_bool(o, "sendResource", "oauth.sendResource", &send_resource, e);
    if (r < 0)
        return r;
    c->omit_resource = !send_resource;

    if (grant_words(grants, ELEMENTSOF(grants), expect, sizeof(expect)) < 0)
        return oom(e);
    r = get_word(o, "grant", "oauth.grant", grants, expect, &c->grant, e);
    if (r >= 0)
        r = parse_grant_type(o, c, e);
    if (r >= 0)
        r = get_string(o, "clientName", "oauth.clientName", MCP_FIELD_NONBLANK, &c->client_name, e);
    if (r >= 0)
        r = get_string(o, "clientUri", "oauth.clientUri", MCP_FIELD_NONBLANK, &c->client_uri, e);
    if (r >= 0)
        r = get_word(o, "privateKeyAlg", "oauth.privateKeyAlg", algs, "\"ES256\" or \"RS256\"",
                     &c->private_key_alg, e);
    if (r >= 0)
        r = get_string(o, "logoUri", "oauth.logoUri", MCP_FIELD_NONBLANK, &c->logo_uri, e);
    if (r >= 0)
        r = get_string(o, "authServerMetadataUrl", "oauth.authServerMetadataUrl",
                       MCP_FIELD_NONBLANK, &c->as_metadata_url, e);
    if (r >= 0)
        r = mcp_field_bool(o, "skipIssuerMetadataValidation", "oauth.skipIssuerMetadataValidation",
                           &c->skip_issuer_check, e);
    if (r >= 0)
        r = parse_authorization_params(o, c, e);
    if (r < 0)
        return r;

    struct json_object *idp = mcp_field_member(o, "idp");
    if (idp) {
        r = parse_idp(idp, c, e);
        if (r < 0)
            return r;
    }
    const struct grant_ops *g = grant_find(c->grant);
    if (g && g->needs_idp && !idp && !c->assertion)
        return bad(e,
                   "\"oauth.grant\": \"%s\" needs an \"oauth.idp\" object (or an "
                   "\"oauth.assertion\", the workload's own JWT)",
                   g->name);
    if (c->client_metadata_url) {
        r = check_metadata_url(c->client_metadata_url, e);
        if (r < 0)
            return r;
    }
    if (c->client_name) {
        r = check_client_name(c->client_name, e);
        if (r < 0)
            return r;
    }
    if (c->client_uri) {
        r = check_client_uri(c->client_uri, e);
        if (r < 0)
            return r;
    }
    if (c->logo_uri) {
        r = check_logo_uri(c->logo_uri, e);
        if (r < 0)
            return r;
    }
    if (c->as_metadata_url) {
        r = url_check_secure(c->as_metadata_url, "\"oauth.authServerMetadataUrl\"", e);
        if (r < 0)
            return r == -ENOMEM ? oom(e) : (e ? (e->code = -EINVAL) : -EINVAL);
    }
    if (c->redirect_uri) {
        r = check_redirect_uri(c->redirect_uri, e);
        if (r < 0)
            return r;
    }
    if (c->callback_url) {
        if (c->redirect_uri)
            return bad(e, "\"oauth.callbackUrl\" and \"oauth.redirectUri\" both name the "
                          "redirect URI: keep one");
        r = oauth_check_callback_url(c->callback_url, "\"oauth.callbackUrl\"", e);
        if (r < 0)
            return r;
    }
    if (c->client_secret) {
        r = check_secret_template(c->client_secret, e);
        if (r < 0)
            return r;
    }
    return 0;
}

/* "account" at the top of the entry: "oauth.account" written there (both: the same name) */
static int parse_top_account(struct json_object *entry, struct oauth_config *c, struct err *e)
{
    char *top = NULL;
    if (!entry || !json_object_is_type(entry, json_type_object))
        return 0;
    int r = get_string(entry, "account", "account", MCP_FIELD_NONBLANK, &top, e);
    if (r < 0 || !top)
        return r;
    if (c->account && strcmp(c->account, top) != 0)
        r = bad(e,
                "\"account\" and \"oauth.account\" name different accounts ('%s', '%s'): "
                "keep one",
                top, c->account);
    else if (!tokens_label_valid(top))
        r = bad(e, "\"account\" must be up to %d letters, digits and '.', '_', '@', '+', '-'",
                TOKENS_LABEL_MAX);
    if (r >= 0 && !c->account) {
        c->account = top;
        top = NULL;
    }
    free(top);
    return r;
}

int oauth_config_parse(struct json_object *entry, struct oauth_config **ret, struct err *e)
{
    struct oauth_config *c = calloc(1, sizeof(*c));
    int r;
    if (!c)
        return oom(e);
    struct json_object *o = entry && json_object_is_type(entry, json_type_object)
                                ? mcp_field_member(entry, "oauth")
                                : NULL;
    /* "oauth": false (the pi adapter's) says no OAuth: the loader's "auth" mode; no settings */
    if (o && json_object_is_type(o, json_type_boolean) && !json_object_get_boolean(o))
        o = NULL;
    if (o) {
        r = parse_members(o, c, e);
        if (r < 0)
            goto out;
    }
    r = parse_top_account(entry, c, e);
    if (r < 0)
        goto out;
    *ret = c;
    c = NULL;
    r = 0;
out:
    oauth_config_free(c);
    return r;
}

int oauth_config_parse_server(const struct mcp_server *s, struct oauth_config **ret, struct err *e)
{
    struct err why = ERR_INIT;
    int r = oauth_config_parse(s->raw, ret, &why);
    if (r == -ENOMEM)
        return oom(e);
    if (r < 0) {
        char nd[MCP_DISP_BUF];
        mcp_disp(nd, s->name ? s->name : "");
        return err_set(e, r, "'%s': server '%s': %s", s->source ? s->source : "", nd,
                       err_msg(&why));
    }
    return 0;
}

void oauth_config_free(struct oauth_config *c)
{
    if (!c)
        return;
    free(c->client_id);
    free(c->account);
    secure_free(c->client_secret);
    free(c->client_metadata_url);
    free(c->scope);
    free(c->redirect_uri);
    free(c->callback_url);
    free(c->grant);
    free(c->client_name);
    free(c->client_uri);
    free(c->logo_uri);
    free(c->as_metadata_url);
    strv_free(c->authorization_params);
    free(c->private_key_file);
    free(c->private_key_alg);
    free(c->idp_issuer);
    free(c->idp_token_endpoint);
    free(c->idp_client_id);
    secure_free(c->idp_client_secret);
    secure_free(c->idp_id_token);
    secure_free(c->assertion);
    free(c);
}
