/* discovery.c - probe, protected resource metadata, authorization server metadata */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/http.h"
#include "credkit/json.h"
#include "credkit/strv.h"
#include "credkit/url.h"
#include "credkit/util.h"
#include "credkit/version.h"

#include "credkit/challenge.h"
#include "discovery.h"
#include "net.h"

#define METADATA_MAX (256 * 1024)

void discovery_free(struct discovery *d)
{
    if (!d)
        return;
    free(d->server_url);
    free(d->resource);
    free(d->resource_metadata_url);
    json_object_put(d->prm);
    free(d->issuer);
    json_object_put(d->as);
    free(d->challenge_scope);
    free(d);
}

const char *discovery_as_string(const struct discovery *d, const char *key)
{
    return d && d->as ? json_get_string(d->as, key) : NULL;
}

bool discovery_as_lists(const struct discovery *d, const char *key, const char *value)
{
    struct json_object *arr = d && d->as ? json_get_array(d->as, key) : NULL;
    if (!arr)
        return false;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        struct json_object *v = json_object_array_get_idx(arr, i);
        if (json_object_is_type(v, json_type_string) &&
            strcmp(json_object_get_string(v), value) == 0)
            return true;
    }
    return false;
}

char *discovery_default_scope(const struct discovery *d)
{
    struct buf b;
    buf_init(&b, 16 * 1024);
    int r = 0;
    if (d->challenge_scope) {
        r = buf_append_str(&b, d->challenge_scope);
    } else if (d->prm && json_get_array(d->prm, "scopes_supported")) {
        struct json_object *arr = json_get_array(d->prm, "scopes_supported");
        for (size_t i = 0; r >= 0 && i < json_object_array_length(arr); i++) {
            struct json_object *v = json_object_array_get_idx(arr, i);
            if (!json_object_is_type(v, json_type_string))
                continue;
            if (b.len)
                r = buf_append_char(&b, ' ');
            if (r >= 0)
                r = buf_append_str(&b, json_object_get_string(v));
        }
    }
    /* a refresh token is worth asking for, but only where the server knows the scope */
    if (r >= 0 && b.len && discovery_as_lists(d, "scopes_supported", "offline_access") &&
        !strstr(buf_str(&b), "offline_access"))
        r = buf_append_str(&b, " offline_access");
    if (r < 0 || b.len == 0) {
        buf_release(&b);
        return NULL;
    }
    return buf_detach(&b);
}

/* GET a metadata document: 0 and *ret (an object), -ENOENT for a 4xx (try the next one), or
 * another error (network, malformed, oversized) that ends discovery. */
static int fetch_metadata(const char *url, const char *what, int64_t timeout_ms,
                          struct json_object **ret, struct err *e)
{
    static const char *const headers[] = {"Accept: application/json", NULL};
    struct http_request req = {
        .tls = net_tls(),
        .url = url,
        .headers = headers,
        .timeout_ms = timeout_ms,
        .max_body = METADATA_MAX,
        .follow_redirects = true,
    };
    struct http_response resp = {0};
    struct json_object *obj = NULL;
    int r = http_do(&req, &resp, e);
    if (r == -E2BIG)
        return err_set(e, r, "%s at '%s' is larger than %d bytes", what, url, METADATA_MAX);
    if (r < 0)
        return err_prefix(e, "cannot fetch the %s", what);
    if (resp.status >= 400 && resp.status < 500) {
        r = -ENOENT;
        goto out;
    }
    if (resp.status != 200) {
        r = err_set(e, -EPROTO, "%s at '%s': the server answered HTTP %ld", what, url, resp.status);
        goto out;
    }
    r = json_parse(resp.body.data ? resp.body.data : "", resp.body.len, METADATA_MAX, &obj, e);
    if (r < 0) {
        r = err_prefix(e, "%s at '%s' is not valid JSON", what, url);
        goto out;
    }
    if (!json_object_is_type(obj, json_type_object)) {
        r = err_set(e, -EBADMSG, "%s at '%s' is not a JSON object", what, url);
        goto out;
    }
    *ret = obj;
    obj = NULL;
    r = 0;
out:
    json_object_put(obj);
    http_response_release(&resp);
    return r;
}

/* The unauthenticated probe; reads the Bearer challenge of a 401. It is a 2026-07-28
 * server/discover request, not initialize: a server that protects every request answers both
 * with 401, but some let initialize through and protect only what follows (the challenge's
 * scope, which the sign-in should ask for, is then never seen), and a 2026-07-28 server has no
 * initialize at all. A server without authorization answers it with a result or an error, and
 * opens no session. */
static int probe(struct discovery *d, int64_t timeout_ms, char **ret_prm_url, struct err *e)
{
    static const char *const headers[] = {"Accept: application/json, text/event-stream",
                                          "MCP-Protocol-Version: 2026-07-28",
                                          "Mcp-Method: server/discover", NULL};
    char body[512];
    (void)snprintf(body, sizeof(body),
                   "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{"
                   "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                   "\"io.modelcontextprotocol/clientCapabilities\":{},"
                   "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"mcp-auth\","
                   "\"version\":\"%s\"}}}}",
                   PROJECT_VERSION_STR);
    struct http_request req = {
        .tls = net_tls(),
        .method = "POST",
        .url = d->server_url,
        .headers = headers,
        .body = body,
        .body_len = strlen(body),
        .content_type = "application/json",
        .timeout_ms = timeout_ms,
        .max_body = 64 * 1024,
    };
    struct http_response resp = {0};
    struct auth_challenges ch = {0};
    int r = http_do(&req, &resp, e);
    if (r == -E2BIG) {
        err_clear(e);
        return 0; /* a big answer to the probe: certainly not a 401 */
    }
    if (r < 0)
        return err_prefix(e, "cannot reach the MCP server");
    d->needs_auth = resp.status == 401 || resp.status == 403;
    for (char **h = resp.headers; h && *h; h++) {
        if (strncmp(*h, "www-authenticate:", 17) != 0)
            continue;
        struct err pe = ERR_INIT;
        /* a challenge we cannot parse only costs us its hints, not the flow */
        if (challenges_parse(*h + 17 + strspn(*h + 17, " \t"), &ch, &pe) < 0)
            continue;
    }
    /* a DPoP server's challenge carries the same parameters (RFC 9449 7.1) */
    const struct auth_challenge *bearer = challenges_find(&ch, "Bearer");
    d->dpop_challenge = challenges_find(&ch, "DPoP") != NULL;
    if (!bearer)
        bearer = challenges_find(&ch, "DPoP");
    if (bearer) {
        const char *rm = challenge_param(bearer, "resource_metadata");
        const char *scope = challenge_param(bearer, "scope");
        if (rm && !(*ret_prm_url = strdup(rm)))
            r = -ENOMEM;
        if (scope && *scope && !(d->challenge_scope = strdup(scope)))
            r = -ENOMEM;
    }
    /* the probe may have opened a session on a server without auth: close it politely */
    const char *sid = http_response_header(&resp, "mcp-session-id");
    if (resp.status == 200 && sid && strlen(sid) < 200) {
        char hdr[256];
        (void)snprintf(hdr, sizeof(hdr), "Mcp-Session-Id: %s", sid);
        const char *dh[] = {hdr, NULL};
        struct http_request del = {.tls = net_tls(),
                                   .method = "DELETE",
                                   .url = d->server_url,
                                   .headers = dh,
                                   .timeout_ms = timeout_ms};
        struct http_response dresp = {0};
        struct err de = ERR_INIT;
        if (http_do(&del, &dresp, &de) >= 0)
            http_response_release(&dresp);
    }
    challenges_release(&ch);
    http_response_release(&resp);
    return r;
}

/* "resource" of the PRM names this server: same origin, and its path a prefix of ours. */
static bool resource_matches(const char *server_url, const char *resource)
{
    char *canon = NULL, *rpath = NULL, *spath = NULL;
    bool ok = false;
    if (url_canonical(resource, &canon, NULL) < 0)
        return false;
    if (strcmp(canon, server_url) == 0) {
        ok = true;
    } else if (url_same_origin(canon, server_url) && url_path(canon, &rpath) >= 0 &&
               url_path(server_url, &spath) >= 0) {
        size_t n = strlen(rpath);
        ok = strcmp(rpath, "/") == 0 || (strncmp(spath, rpath, n) == 0 &&
                                         (spath[n] == 0 || spath[n] == '/' || rpath[n - 1] == '/'));
    }
    free(canon);
    free(rpath);
    free(spath);
    return ok;
}

static int find_prm(struct discovery *d, const char *hinted, int64_t timeout_ms, struct err *e)
{
    char *origin = NULL, *path = NULL;
    struct strv cands = STRV_INIT;
    int r = url_origin(d->server_url, &origin);
    if (r >= 0)
        r = url_path(d->server_url, &path);
    if (r < 0)
        goto out;
    if (hinted) {
        r = url_check_secure(hinted, "protected resource metadata URL", e);
        if (r >= 0)
            r = strv_push(&cands, hinted);
        if (r < 0)
            goto out;
    }
    if (strcmp(path, "/") != 0)
        r = strv_pushf(&cands, "%s/.well-known/oauth-protected-resource%s", origin, path);
    if (r >= 0)
        r = strv_pushf(&cands, "%s/.well-known/oauth-protected-resource", origin);
    if (r < 0)
        goto out;
    for (size_t i = 0; i < cands.n; i++) {
        struct json_object *prm = NULL;
        r = fetch_metadata(cands.v[i], "protected resource metadata", timeout_ms, &prm, e);
        if (r == -ENOENT)
            continue;
        if (r < 0)
            goto out;
        const char *resource = json_get_string(prm, "resource");
        if (!resource || !resource_matches(d->server_url, resource)) {
            r = err_set(e, -EPERM,
                        "the protected resource metadata at '%s' is for '%s', not for '%s': "
                        "refusing to authorize (the server is misconfigured, or something is "
                        "impersonating it)",
                        cands.v[i], resource ? resource : "(no resource)", d->server_url);
            json_object_put(prm);
            goto out;
        }
        d->prm = prm;
        d->resource_metadata_url = strdup(cands.v[i]);
        /* RFC 9728 section 3.3: the resource identifier as the metadata publishes it, byte for
         * byte (it names this server, checked above), is what RFC 8707 requests carry */
        d->resource = strdup(resource);
        if (!d->resource_metadata_url || !d->resource) {
            r = -ENOMEM;
            goto out;
        }
        break;
    }
    r = 0;
out:
    strv_release(&cands);
    free(origin);
    free(path);
    return r;
}

/* Where the authorization server metadata of issuer may be, in the order to try. RFC 8414
 * section 3.1 inserts the well-known segment before the issuer's path; OpenID Connect
 * Discovery appends it. Trailing slashes of the path are not part of it. */
static int as_metadata_urls(const char *issuer, struct strv *ret)
{
    char *origin = NULL, *path = NULL;
    int r = url_origin(issuer, &origin);
    if (r >= 0)
        r = url_path(issuer, &path);
    if (r < 0)
        goto out;
    size_t plen = strlen(path);
    while (plen > 1 && path[plen - 1] == '/')
        path[--plen] = 0;
    if (strcmp(path, "/") != 0) {
        r = strv_pushf(ret, "%s/.well-known/oauth-authorization-server%s", origin, path);
        if (r >= 0)
            r = strv_pushf(ret, "%s/.well-known/openid-configuration%s", origin, path);
        if (r >= 0)
            r = strv_pushf(ret, "%s%s/.well-known/openid-configuration", origin, path);
    } else {
        r = strv_pushf(ret, "%s/.well-known/oauth-authorization-server", origin);
        if (r >= 0)
            r = strv_pushf(ret, "%s/.well-known/openid-configuration", origin);
    }
out:
    free(origin);
    free(path);
    return r;
}

/* strict: the metadata's issuer must be the one asked for (RFC 8414 3.3). Without
 * protected resource metadata (2025-03-26) the metadata location, not the issuer, is what the
 * server pointed at: its issuer is adopted instead. */
static int find_as_metadata(struct discovery *d, bool strict, int64_t timeout_ms, struct err *e)
{
    struct strv cands = STRV_INIT;
    int r = as_metadata_urls(d->issuer, &cands);
    if (r < 0)
        goto out;
    for (size_t i = 0; i < cands.n; i++) {
        struct json_object *as = NULL;
        r = fetch_metadata(cands.v[i], "authorization server metadata", timeout_ms, &as, e);
        if (r == -ENOENT)
            continue;
        if (r < 0)
            goto out;
        const char *iss = json_get_string(as, "issuer");
        if (!strict && iss && strcmp(iss, d->issuer) != 0) {
            r = url_check_secure(iss, "issuer", e);
            char *adopted = r >= 0 ? strdup(iss) : NULL;
            if (r >= 0 && !adopted)
                r = -ENOMEM;
            if (r < 0) {
                json_object_put(as);
                goto out;
            }
            free(d->issuer);
            d->issuer = adopted;
        }
        if (!iss || strcmp(iss, d->issuer) != 0) {
            r = err_set(e, -EPERM,
                        "the authorization server metadata at '%s' names the issuer '%s', not "
                        "'%s': refusing to use it",
                        cands.v[i], iss ? iss : "(none)", d->issuer);
            json_object_put(as);
            goto out;
        }
        d->as = as;
        r = 0;
        goto out;
    }
    r = -ENOENT;
out:
    strv_release(&cands);
    return r;
}

/* The issuer whose metadata the document at url is, by its location: RFC 8414 3.1 inserts the
 * well-known segment before the issuer's path, OpenID Discovery appends it (or some servers
 * insert it); any other location: its origin. Without a trailing slash. Caller frees. */
static int issuer_of_metadata_url(const char *url, char **ret)
{
    static const char *const wk[] = {"/.well-known/oauth-authorization-server",
                                     "/.well-known/openid-configuration"};
    char *origin = NULL, *path = NULL;
    int r = url_origin(url, &origin);
    if (r >= 0)
        r = url_path(url, &path);
    if (r < 0)
        goto out;
    size_t plen = strlen(path);
    while (plen > 1 && path[plen - 1] == '/')
        path[--plen] = 0;
    const char *issuer_path = NULL;
    for (size_t i = 0; i < ELEMENTSOF(wk) && !issuer_path; i++) {
        size_t n = strlen(wk[i]);
        if (strncmp(path, wk[i], n) == 0 && (path[n] == 0 || path[n] == '/')) {
            issuer_path = path + n; /* inserted before the issuer's path */
        } else if (plen >= n && strcmp(path + plen - n, wk[i]) == 0) {
            path[plen - n] = 0; /* appended to it */
            issuer_path = path;
        }
    }
    if (!issuer_path)
        issuer_path = "";
    r = asprintf(ret, "%s%s", origin, strcmp(issuer_path, "/") == 0 ? "" : issuer_path) < 0
            ? -ENOMEM
            : 0;
out:
    free(origin);
    free(path);
    return r;
}

/* Whether two issuers are the same but for a trailing slash. */
static bool issuers_match(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    while (na > 0 && a[na - 1] == '/')
        na--;
    while (nb > 0 && b[nb - 1] == '/')
        nb--;
    return na == nb && strncmp(a, b, na) == 0;
}

/* The metadata of "oauth.authServerMetadataUrl", used as it is (discovery_opts). */
static int configured_as_metadata(struct discovery *d, const struct discovery_opts *o,
                                  int64_t timeout_ms, struct err *e)
{
    const char *url = o->as_metadata_url;
    struct json_object *as = NULL;
    char *want = NULL;
    int r = url_check_secure(url, "\"oauth.authServerMetadataUrl\"", e);
    if (r >= 0)
        r = fetch_metadata(url, "authorization server metadata", timeout_ms, &as, e);
    if (r == -ENOENT)
        r = err_set(e, r,
                    "\"oauth.authServerMetadataUrl\" '%s': the server answered with an error: "
                    "check the URL",
                    url);
    if (r < 0)
        goto out;
    const char *iss = json_get_string(as, "issuer");
    if (!iss) {
        r = err_set(e, -EBADMSG, "the authorization server metadata at '%s' names no issuer", url);
        goto out;
    }
    r = url_check_secure(iss, "issuer", e);
    if (r < 0)
        goto out;
    r = issuer_of_metadata_url(url, &want);
    if (r < 0)
        goto out;
    if (!o->skip_issuer_check && !issuers_match(want, iss)) {
        r = err_set(
            e, -EPERM,
            "the authorization server metadata at '%s' names the issuer '%s', not '%s' "
            "(where it was found): refusing to use it (\"oauth.skipIssuerMetadataValidation\""
            ": true accepts it, for a server known to be misconfigured only)",
            url, iss, want);
        goto out;
    }
    d->issuer = strdup(iss);
    if (!d->issuer) {
        r = -ENOMEM;
        goto out;
    }
    d->as = as;
    as = NULL;
    r = 0;
out:
    json_object_put(as);
    free(want);
    return r;
}

/* The 2025-03-26 defaults for a server with no metadata at all. */
static int as_defaults(struct discovery *d)
{
    static const struct {
        const char *key, *path;
    } eps[] = {{"authorization_endpoint", "/authorize"},
               {"token_endpoint", "/token"},
               {"registration_endpoint", "/register"}};
    struct json_object *as = json_object_new_object();
    if (!as)
        return -ENOMEM;
    (void)json_object_object_add(as, "issuer", json_object_new_string(d->issuer));
    for (size_t i = 0; i < ELEMENTSOF(eps); i++) {
        char *u = NULL;
        if (asprintf(&u, "%s%s", d->issuer, eps[i].path) < 0) {
            json_object_put(as);
            return -ENOMEM;
        }
        (void)json_object_object_add(as, eps[i].key, json_object_new_string(u));
        free(u);
    }
    struct json_object *methods = json_object_new_array();
    (void)json_object_array_add(methods, json_object_new_string("S256"));
    (void)json_object_object_add(as, "code_challenge_methods_supported", methods);
    d->as = as;
    d->as_defaults = true;
    return 0;
}

/* Whether the default token endpoint of a server without any metadata is absent: a
 * 2025-03-26 server has one there, a server that takes a token of its own has none. An empty
 * POST (nothing secret, no grant) is enough: an authorization server refuses it with 400 or 401,
 * a server without the endpoint says 404, 405 or 410. Whatever else happens, the defaults stand. */
static bool default_token_endpoint_absent(const struct discovery *d, int64_t timeout_ms)
{
    static const char *const headers[] = {"Accept: application/json", NULL};
    struct http_request req = {
        .tls = net_tls(),
        .method = "POST",
        .url = discovery_as_string(d, "token_endpoint"),
        .headers = headers,
        .body = "",
        .body_len = 0,
        .content_type = "application/x-www-form-urlencoded",
        .timeout_ms = timeout_ms,
        .max_body = 64 * 1024,
    };
    struct http_response resp = {0};
    struct err e = ERR_INIT;
    if (!req.url || http_do(&req, &resp, &e) < 0)
        return false;
    bool absent = resp.status == 404 || resp.status == 405 || resp.status == 410;
    http_response_release(&resp);
    return absent;
}

static int check_endpoints(const struct discovery *d, struct err *e)
{
    static const char *const keys[] = {"authorization_endpoint", "token_endpoint",
                                       "registration_endpoint", "revocation_endpoint",
                                       "device_authorization_endpoint"};
    for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
        const char *u = discovery_as_string(d, keys[i]);
        /* the server published it: its misconfiguration, not ours */
        if (u && url_check_secure(u, keys[i], e) < 0) {
            (void)err_prefix(e, "authorization server '%s'", d->issuer);
            return e ? (e->code = -EPROTO) : -EPROTO;
        }
    }
    if (!discovery_as_string(d, "token_endpoint"))
        return err_set(e, -EBADMSG, "authorization server '%s' has no token_endpoint", d->issuer);
    return 0;
}

int discovery_run(const char *server_url, int64_t timeout_ms, struct discovery **ret, struct err *e)
{
    return discovery_run_opts(server_url, timeout_ms, NULL, ret, e);
}

int discovery_run_opts(const char *server_url, int64_t timeout_ms,
                       const struct discovery_opts *opts, struct discovery **ret, struct err *e)
{
    static const struct discovery_opts none;
    struct discovery *d = calloc(1, sizeof(*d));
    char *hinted = NULL;
    int r;
    if (!d)
        return -ENOMEM;
    if (!opts)
        opts = &none;
    r = url_canonical(server_url, &d->server_url, e);
    if (r < 0)
        goto out;
    r = probe(d, timeout_ms, &hinted, e);
    if (r < 0)
        goto out;
    if (!opts->as_metadata_url)
        r = find_prm(d, hinted, timeout_ms, e);
    if (r < 0)
        goto out;
    if (opts->as_metadata_url) {
        r = configured_as_metadata(d, opts, timeout_ms, e);
        if (r < 0)
            goto out;
    } else if (d->prm) {
        struct json_object *servers = json_get_array(d->prm, "authorization_servers");
        struct json_object *first = servers && json_object_array_length(servers) > 0
                                        ? json_object_array_get_idx(servers, 0)
                                        : NULL;
        if (!first || !json_object_is_type(first, json_type_string)) {
            r = err_set(e, -EBADMSG,
                        "the protected resource metadata at '%s' names no authorization server",
                        d->resource_metadata_url);
            goto out;
        }
        d->issuer = strdup(json_object_get_string(first));
        if (!d->issuer) {
            r = -ENOMEM;
            goto out;
        }
        r = url_check_secure(d->issuer, "authorization server", e);
        if (r < 0)
            goto out;
        r = find_as_metadata(d, !opts->skip_issuer_check, timeout_ms, e);
        if (r == -ENOENT)
            r = err_set(e, r,
                        "authorization server '%s' publishes no metadata (neither RFC 8414 nor "
                        "OpenID discovery)",
                        d->issuer);
        if (r < 0)
            goto out;
    } else {
        /* 2025-03-26: the MCP server's origin is the authorization server */
        r = url_origin(d->server_url, &d->issuer);
        if (r < 0)
            goto out;
        r = find_as_metadata(d, false, timeout_ms, e);
        if (r == -ENOENT) {
            err_clear(e);
            r = as_defaults(d);
        }
        if (r < 0)
            goto out;
    }
    if (!d->resource && !(d->resource = strdup(d->server_url))) {
        r = -ENOMEM;
        goto out;
    }
    r = check_endpoints(d, e);
    if (r < 0)
        goto out;
    d->no_oauth =
        d->needs_auth && !d->prm && d->as_defaults && default_token_endpoint_absent(d, timeout_ms);
    d->fetched_at = now_unix();
    *ret = d;
    d = NULL;
    r = 0;
out:
    free(hinted);
    discovery_free(d);
    return r;
}

int discovery_wants_token(const char *server_url, int64_t timeout_ms, bool *ret, struct err *e)
{
    struct discovery *d = calloc(1, sizeof(*d));
    bool wants = false;
    int r;
    if (!d)
        return -ENOMEM;
    r = url_canonical(server_url, &d->server_url, e);
    if (r >= 0)
        r = find_prm(d, NULL, timeout_ms, e);
    if (r < 0)
        goto out;
    if (!d->prm) {
        struct discovery *full = NULL;
        r = discovery_run(server_url, timeout_ms, &full, e);
        if (r < 0)
            goto out;
        wants = full->no_oauth;
        discovery_free(full);
    }
    *ret = wants;
    r = 0;
out:
    discovery_free(d);
    return r;
}

int discovery_from_cache(const char *server_url, const char *issuer, struct json_object *as,
                         struct json_object *prm, const char *resource_metadata_url,
                         int64_t fetched_at, struct discovery **ret)
{
    struct discovery *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->server_url = strdup(server_url);
    d->issuer = strdup(issuer);
    const char *published = prm ? json_get_string(prm, "resource") : NULL;
    d->resource = strdup(published ? published : server_url);
    if (resource_metadata_url)
        d->resource_metadata_url = strdup(resource_metadata_url);
    if (!d->server_url || !d->issuer || !d->resource ||
        (resource_metadata_url && !d->resource_metadata_url)) {
        discovery_free(d);
        return -ENOMEM;
    }
    d->as = as ? json_object_get(as) : NULL;
    d->prm = prm ? json_object_get(prm) : NULL;
    d->fetched_at = fetched_at;
    *ret = d;
    return 0;
}
