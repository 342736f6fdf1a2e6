/* agent_http_auth.c - JWT access tokens of one issuer checked against its keys (agent_http_auth.h):
 * the pure check of a token, the fetch of the issuer's metadata and keys on the loop, and the
 * protected-resource metadata and challenges the listener sends. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "credkit/base64.h"
#include "credkit/buf.h"
#include "credkit/http.h"
#include "credkit/json.h"
#include "credkit/jws.h"
#include "credkit/strv.h"
#include "credkit/url.h"

#include "downstream/agent_http_auth.h"

#define PRM_PATH  "/.well-known/oauth-protected-resource"
#define PART_MAX  (8 * 1024) /* bytes of a token's header or claims, decoded */
#define JWKS_KEYS 64         /* keys of a set looked at */
#define SCOPE_MAX 1024       /* bytes of the scopes a challenge names */

/* ---- a token against a key set ----------------------------------------------------------- */

/* Part [s, s + len) of a token, base64url JSON, parsed. */
static struct json_object *part_json(const char *s, size_t len)
{
    size_t n = 0;
    char *raw = len <= PART_MAX * 2 ? base64url_decode(s, len, &n) : NULL;
    struct json_object *o = NULL;
    if (raw &&
        (json_parse(raw, n, PART_MAX, &o, NULL) < 0 || !json_object_is_type(o, json_type_object))) {
        json_object_put(o);
        o = NULL;
    }
    free(raw);
    return o;
}

/* The key of jwks that kid names (any signing key when kid is NULL and the set holds one). */
static struct json_object *find_key(struct json_object *jwks, const char *kid)
{
    struct json_object *keys = NULL, *found = NULL;
    if (!jwks || !json_object_object_get_ex(jwks, "keys", &keys) ||
        !json_object_is_type(keys, json_type_array))
        return NULL;
    size_t n = json_object_array_length(keys), candidates = 0;
    for (size_t i = 0; i < n && i < JWKS_KEYS; i++) {
        struct json_object *k = json_object_array_get_idx(keys, i);
        const char *use = json_get_string(k, "use"), *id = json_get_string(k, "kid");
        if (use && strcmp(use, "sig") != 0)
            continue; /* an encryption key signs nothing */
        if (kid ? id && strcmp(id, kid) == 0 : true) {
            found = k;
            candidates++;
        }
    }
    return candidates == 1 ? found : NULL;
}

static bool aud_holds(struct json_object *aud, const char *want)
{
    if (json_object_is_type(aud, json_type_string))
        return strcmp(json_object_get_string(aud), want) == 0;
    if (!json_object_is_type(aud, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(aud); i++) {
        struct json_object *v = json_object_array_get_idx(aud, i);
        if (json_object_is_type(v, json_type_string) &&
            strcmp(json_object_get_string(v), want) == 0)
            return true;
    }
    return false;
}

static bool scope_holds(const char *scope, const char *want)
{
    size_t n = strlen(want);
    for (const char *p = scope; p && *p;) {
        size_t w = strcspn(p, " ");
        if (w == n && strncmp(p, want, n) == 0)
            return true;
        p += w;
        p += strspn(p, " ");
    }
    return false;
}

/* A NumericDate claim: false when absent; *ret_ok false when present but not an integer. */
static bool time_claim(struct json_object *claims, const char *name, int64_t *ret, bool *ret_ok)
{
    struct json_object *v = NULL;
    *ret_ok = true;
    if (!json_object_object_get_ex(claims, name, &v))
        return false;
    if (!json_object_is_type(v, json_type_int)) {
        *ret_ok = false;
        return false;
    }
    *ret = json_object_get_int64(v); /* json-c saturates: no overflow here */
    return true;
}

/* iss, aud, exp, nbf and scope of the claims. */
static int check_claims(struct json_object *claims, const struct jwt_rules *rules, int64_t now,
                        const char **ret_why)
{
    int64_t exp = 0, nbf = 0;
    bool ok;
    const char *iss = json_get_string(claims, "iss");
    struct json_object *aud = NULL;
    if (!iss || strcmp(iss, rules->issuer) != 0) {
        *ret_why = "the token is from another issuer";
        return -EACCES;
    }
    if (!json_object_object_get_ex(claims, "aud", &aud) || !aud_holds(aud, rules->audience)) {
        *ret_why = "the token is for another audience (resource)";
        return -EACCES;
    }
    /* now is a clock's seconds, skew a minute: now - skew and now + skew cannot overflow,
     * whatever the token's values */
    if (!time_claim(claims, "exp", &exp, &ok) || !ok) {
        *ret_why = "the token has no valid \"exp\"";
        return -EBADMSG;
    }
    if (exp < now - rules->skew_s) {
        *ret_why = "the token has expired";
        return -EKEYEXPIRED;
    }
    if (time_claim(claims, "nbf", &nbf, &ok) ? nbf > now + rules->skew_s : !ok) {
        *ret_why = "the token is not valid yet";
        return -EKEYEXPIRED;
    }
    const char *scope = json_get_string(claims, "scope");
    for (size_t i = 0; rules->scopes && rules->scopes[i]; i++)
        if (!scope_holds(scope, rules->scopes[i])) {
            *ret_why = "the token lacks a scope this bridge requires";
            return -EPERM;
        }
    return 0;
}

static void copy_sub(struct json_object *claims, char *ret_sub)
{
    const char *sub = json_get_string(claims, "sub");
    size_t n = sub ? strlen(sub) : 0;
    bool printable = n > 0 && n < AH_AUTH_SUB_MAX;
    for (size_t i = 0; printable && i < n; i++)
        printable = sub[i] > 0x20 && sub[i] < 0x7f;
    snprintf(ret_sub, AH_AUTH_SUB_MAX, "%s", printable ? sub : "?");
}

int jwt_check(const char *token, struct json_object *jwks, const struct jwt_rules *rules,
              int64_t now, char *ret_sub, const char **ret_why)
{
    struct json_object *header = NULL, *claims = NULL;
    EVP_PKEY *pkey = NULL;
    enum jws_alg alg;
    int r = -EBADMSG;
    *ret_why = "not a JWT: this bridge takes JWT access tokens only (an opaque token would need "
               "introspection, which it does not do)";
    const char *dot1 = strchr(token, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot1 || !dot2 || strchr(dot2 + 1, '.'))
        goto out;
    header = part_json(token, (size_t)(dot1 - token));
    claims = part_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (!header || !claims)
        goto out;
    /* RFC 7515 4.1.11: an extension the header marks critical must be understood, and none is */
    if (json_object_object_get_ex(header, "crit", NULL)) {
        *ret_why = "the token's header has critical extensions this bridge does not know";
        goto out;
    }
    /* a token bound to a key (DPoP, RFC 9449; mTLS, RFC 8705) is only as good as the proof of
     * that key, which this bridge does not check: taking it as a bearer token would undo the
     * binding */
    if (json_object_object_get_ex(claims, "cnf", NULL)) {
        *ret_why = "the token is bound to a key (DPoP or mTLS), which this bridge does not check";
        r = -EACCES;
        goto out;
    }
    if (jws_alg_from_name(json_get_string(header, "alg"), &alg) < 0) {
        *ret_why = "the token's algorithm is not taken (RS256, PS256, ES256, EdDSA)";
        r = -ENOTSUP;
        goto out;
    }
    struct json_object *jwk = find_key(jwks, json_get_string(header, "kid"));
    if (!jwk) {
        *ret_why = "the token's key is not one of the issuer's";
        r = -ENOKEY;
        goto out;
    }
    const char *key_alg = json_get_string(jwk, "alg");
    if ((key_alg && strcmp(key_alg, json_get_string(header, "alg")) != 0) ||
        jws_key_from_jwk(jwk, &pkey) < 0) {
        *ret_why = "the issuer's key does not fit the token's algorithm";
        goto out;
    }
    r = jws_verify(pkey, alg, token, (size_t)(dot2 - token), dot2 + 1, strlen(dot2 + 1));
    if (r < 0) {
        *ret_why = "the token's signature does not verify";
        r = r == -ENOMEM ? r : -EBADMSG;
        goto out;
    }
    r = check_claims(claims, rules, now, ret_why);
    if (r < 0)
        goto out;
    copy_sub(claims, ret_sub);
    *ret_why = NULL;
out:
    EVP_PKEY_free(pkey);
    json_object_put(header);
    json_object_put(claims);
    return r;
}

/* ---- the issuer's keys, fetched on the loop ---------------------------------------------- */

/* What is being fetched: the discovery documents in order, then the keys. */
enum fetch_step {
    FETCH_IDLE,
    FETCH_OAUTH_META, /* RFC 8414 */
    FETCH_OIDC_META,  /* OpenID Connect Discovery */
    FETCH_JWKS,
};

struct ah_auth {
    struct loop *loop;
    struct log *log;
    ah_auth_keys_fn on_keys;
    void *userdata;
    char *issuer, *resource, *audience, *prm_url, *resource_path;
    struct strv scopes;
    char *metadata;           /* the protected-resource metadata, JSON */
    char *jwks_uri;           /* NULL until discovered */
    struct json_object *jwks; /* the keys; NULL until fetched */
    enum fetch_step step;
    int64_t last_fetch_ms; /* when the last round of fetches began; 0 never */
    bool failed;           /* the last fetch ended without keys */
    CURL *easy;
    struct buf body;
    char errbuf[CURL_ERROR_SIZE];
};

static void fetch_start(struct ah_auth *a, enum fetch_step step);

static size_t on_write(char *data, size_t size, size_t n, void *userdata)
{
    struct ah_auth *a = userdata;
    return buf_append(&a->body, data, size * n) < 0 ? 0 : size * n;
}

/* The fetch is over (keys or not): the waiting requests ask again. */
static void fetch_end(struct ah_auth *a, bool failed)
{
    a->step = FETCH_IDLE;
    a->failed = failed;
    if (a->on_keys)
        a->on_keys(a->userdata);
}

/* The URL of step's document (caller frees), NULL on ENOMEM. */
static char *step_url(const struct ah_auth *a, enum fetch_step step)
{
    struct buf b;
    buf_init(&b, 4096);
    size_t n = strlen(a->issuer);
    while (n > 0 && a->issuer[n - 1] == '/')
        n--;
    if (step == FETCH_OAUTH_META) {
        /* RFC 8414 3.1: the well-known segment between the host and the issuer's path */
        size_t scheme = url_scheme_len(a->issuer) + 3;
        size_t host = scheme + strcspn(a->issuer + scheme, "/");
        if (host > n)
            host = n;
        if (buf_printf(&b, "%.*s/.well-known/oauth-authorization-server%.*s", (int)host, a->issuer,
                       (int)(n - host), a->issuer + host) < 0)
            goto oom;
    } else if (step == FETCH_OIDC_META) {
        if (buf_printf(&b, "%.*s/.well-known/openid-configuration", (int)n, a->issuer) < 0)
            goto oom;
    } else if (buf_append_str(&b, a->jwks_uri) < 0) {
        goto oom;
    }
    return buf_detach(&b);
oom:
    buf_release(&b);
    return NULL;
}

/* A metadata document: its issuer must be ours (RFC 8414 3.3), its jwks_uri secure. */
static int take_metadata(struct ah_auth *a, struct json_object *doc)
{
    struct err e = ERR_INIT;
    const char *iss = json_get_string(doc, "issuer"), *uri = json_get_string(doc, "jwks_uri");
    if (!iss || strcmp(iss, a->issuer) != 0) {
        log_warn(a->log, "--listen-issuer '%s': its metadata names another issuer ('%s')",
                 a->issuer, iss ? iss : "");
        return -EPROTO;
    }
    if (!uri || url_check_secure(uri, "jwks_uri", &e) < 0) {
        log_warn(a->log, "--listen-issuer '%s': %s", a->issuer,
                 uri ? err_msg(&e) : "its metadata has no jwks_uri");
        return -EPROTO;
    }
    free(a->jwks_uri);
    a->jwks_uri = strdup(uri);
    return a->jwks_uri ? 0 : -ENOMEM;
}

static void on_done(CURL *easy, CURLcode result, void *userdata)
{
    struct ah_auth *a = userdata;
    struct json_object *doc = NULL;
    long status = 0;
    enum fetch_step step = a->step;
    (void)curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (result != CURLE_OK || status != 200 ||
        json_parse(a->body.data ? a->body.data : "", a->body.len, AH_AUTH_DOC_MAX, &doc, NULL) <
            0 ||
        !json_object_is_type(doc, json_type_object)) {
        if (step == FETCH_OAUTH_META) { /* many issuers serve only OpenID's */
            fetch_start(a, FETCH_OIDC_META);
            goto out;
        }
        log_warn(a->log, "--listen-issuer '%s': cannot fetch %s: %s", a->issuer,
                 step == FETCH_JWKS ? "its keys (jwks_uri)" : "its metadata",
                 result != CURLE_OK ? (a->errbuf[0] ? a->errbuf : curl_easy_strerror(result))
                 : status != 200    ? "not 200 OK"
                                    : "not a JSON object");
        fetch_end(a, true);
        goto out;
    }
    if (step != FETCH_JWKS) {
        if (take_metadata(a, doc) < 0)
            fetch_end(a, true);
        else
            fetch_start(a, FETCH_JWKS);
        goto out;
    }
    json_object_put(a->jwks);
    a->jwks = doc;
    doc = NULL;
    log_info(a->log, "--listen-issuer '%s': keys fetched", a->issuer);
    fetch_end(a, false);
out:
    json_object_put(doc);
}

static void fetch_start(struct ah_auth *a, enum fetch_step step)
{
    char *url = step_url(a, step);
    CURLcode cc = CURLE_OK;
    int r = url ? 0 : -ENOMEM;
    if (a->step == FETCH_IDLE) /* a new round: the rate limit counts rounds */
        a->last_fetch_ms = loop_now(a->loop);
    a->step = step;
    buf_reset(&a->body);
    a->errbuf[0] = '\0';
    if (r >= 0 && !a->easy && !(a->easy = curl_easy_init()))
        r = -ENOMEM;
    if (r >= 0) {
        curl_easy_reset(a->easy);
        r = http_curl_baseline(a->easy);
    }
    if (r >= 0)
        r = http_curl_network(a->easy, url, NULL);
    if (r >= 0) {
        HTTP_SETOPT(cc, a->easy, CURLOPT_URL, url);
        HTTP_SETOPT(cc, a->easy, CURLOPT_HTTPGET, 1L);
        HTTP_SETOPT(cc, a->easy, CURLOPT_TIMEOUT_MS, (long)AH_AUTH_FETCH_MS);
        HTTP_SETOPT(cc, a->easy, CURLOPT_WRITEFUNCTION, on_write);
        HTTP_SETOPT(cc, a->easy, CURLOPT_WRITEDATA, a);
        HTTP_SETOPT(cc, a->easy, CURLOPT_ERRORBUFFER, a->errbuf);
        r = cc == CURLE_OK ? 0 : -EINVAL;
    }
    if (r >= 0)
        r = loop_curl_add(a->loop, a->easy, on_done, a);
    free(url);
    if (r < 0) {
        log_warn(a->log, "--listen-issuer '%s': cannot start a fetch: %s", a->issuer, strerror(-r));
        fetch_end(a, true);
    }
}

/* The keys again (the metadata first when never had); a no-op while a fetch runs. */
static void refetch(struct ah_auth *a)
{
    if (a->step == FETCH_IDLE)
        fetch_start(a, a->jwks_uri ? FETCH_JWKS : FETCH_OAUTH_META);
}

/* ---- the resource server ----------------------------------------------------------------- */

enum ah_auth_verdict ah_auth_check(struct ah_auth *a, const char *authorization,
                                   const char **ret_why)
{
    char sub[AH_AUTH_SUB_MAX];
    *ret_why = "this bridge needs an access token of its issuer (Authorization: Bearer ...)";
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0 ||
        !authorization[7 + strspn(authorization + 7, " ")])
        return AH_AUTH_MISSING;
    const char *token = authorization + 7 + strspn(authorization + 7, " ");
    if (strlen(token) > AH_AUTH_TOKEN_MAX) {
        *ret_why = "the token is too long";
        return AH_AUTH_INVALID;
    }
    bool may_fetch =
        !a->last_fetch_ms || loop_now(a->loop) - a->last_fetch_ms >= AH_AUTH_REFETCH_MS;
    if (!a->jwks && a->step == FETCH_IDLE && !may_fetch) {
        *ret_why = "the issuer's keys cannot be fetched now: try again later";
        return AH_AUTH_UNAVAILABLE;
    }
    struct jwt_rules rules = {
        .issuer = a->issuer,
        .audience = a->audience,
        .scopes = (const char *const *)a->scopes.v,
        .skew_s = AH_AUTH_SKEW_S,
    };
    int r =
        a->jwks ? jwt_check(token, a->jwks, &rules, (int64_t)time(NULL), sub, ret_why) : -ENOKEY;
    switch (r) {
    case 0:
        log_info(a->log, "an HTTP agent authenticated as '%s'", sub);
        return AH_AUTH_OK;
    case -ENOKEY:
        if (a->step != FETCH_IDLE)
            return AH_AUTH_PENDING;
        if (may_fetch) {
            refetch(a);
            if (a->step != FETCH_IDLE)
                return AH_AUTH_PENDING;
        }
        return a->jwks ? AH_AUTH_INVALID : AH_AUTH_UNAVAILABLE;
    case -EPERM:
        return AH_AUTH_SCOPE;
    default:
        return AH_AUTH_INVALID;
    }
}

/* A quoted-string's content: the characters RFC 6750's values may hold, others dropped. */
static int append_quoted(struct buf *b, const char *s)
{
    int r = 0;
    for (; r >= 0 && *s; s++)
        if (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\')
            r = buf_append_char(b, *s);
    return r;
}

char *ah_auth_challenge(const struct ah_auth *a, enum ah_auth_verdict v, const char *why)
{
    struct buf b;
    buf_init(&b, 4096);
    int r = buf_printf(&b, "Bearer resource_metadata=\"%s\"", a->prm_url);
    if (r >= 0 && a->scopes.n) {
        r = buf_append_str(&b, ", scope=\"");
        for (size_t i = 0; r >= 0 && i < a->scopes.n; i++) {
            r = i ? buf_append_char(&b, ' ') : 0;
            if (r >= 0)
                r = append_quoted(&b, a->scopes.v[i]);
        }
        if (r >= 0)
            r = buf_append_char(&b, '"');
    }
    if (r >= 0 && (v == AH_AUTH_INVALID || v == AH_AUTH_SCOPE))
        r = buf_append_str(&b, v == AH_AUTH_SCOPE ? ", error=\"insufficient_scope\""
                                                  : ", error=\"invalid_token\"");
    if (r >= 0 && why && v != AH_AUTH_MISSING) {
        r = buf_append_str(&b, ", error_description=\"");
        if (r >= 0)
            r = append_quoted(&b, why);
        if (r >= 0)
            r = buf_append_char(&b, '"');
    }
    if (r < 0) {
        buf_release(&b);
        return NULL;
    }
    return buf_detach(&b);
}

bool ah_auth_is_metadata_path(const struct ah_auth *a, const char *path)
{
    size_t n = strlen(PRM_PATH);
    if (strncmp(path, PRM_PATH, n) != 0)
        return false;
    return !path[n] || strcmp(path + n, a->resource_path) == 0;
}

const char *ah_auth_metadata(const struct ah_auth *a)
{
    return a->metadata;
}

/* The protected-resource metadata (RFC 9728 2): the resource, its issuer, how tokens come,
 * the scopes. */
static int build_metadata(struct ah_auth *a)
{
    struct json_object *o = json_object_new_object(), *servers = json_object_new_array(),
                       *methods = json_object_new_array(), *scopes = json_object_new_array();
    int r = -ENOMEM;
    if (!o || !servers || !methods || !scopes)
        goto out;
    if (json_object_array_add(servers, json_object_new_string(a->issuer)) < 0 ||
        json_object_array_add(methods, json_object_new_string("header")) < 0)
        goto out;
    for (size_t i = 0; i < a->scopes.n; i++)
        if (json_object_array_add(scopes, json_object_new_string(a->scopes.v[i])) < 0)
            goto out;
    json_object_object_add(o, "resource", json_object_new_string(a->resource));
    json_object_object_add(o, "authorization_servers", servers);
    servers = NULL;
    json_object_object_add(o, "bearer_methods_supported", methods);
    methods = NULL;
    if (a->scopes.n) {
        json_object_object_add(o, "scopes_supported", scopes);
        scopes = NULL;
    }
    json_object_object_add(o, "resource_name", json_object_new_string("mcp-bridge"));
    const char *text =
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    a->metadata = text ? strdup(text) : NULL;
    r = a->metadata ? 0 : -ENOMEM;
out:
    json_object_put(o);
    json_object_put(servers);
    json_object_put(methods);
    json_object_put(scopes);
    return r;
}

/* The metadata's URL (RFC 9728 3.1: the well-known segment between the host and the
 * resource's path) and the path itself. */
static int metadata_url(struct ah_auth *a)
{
    char *origin = NULL, *path = NULL;
    int r = url_origin(a->resource, &origin);
    if (r >= 0)
        r = url_path(a->resource, &path);
    if (r >= 0 && strcmp(path, "/") == 0)
        path[0] = '\0';
    if (r >= 0 && asprintf(&a->prm_url, "%s" PRM_PATH "%s", origin, path) < 0) {
        a->prm_url = NULL;
        r = -ENOMEM;
    }
    if (r >= 0) {
        a->resource_path = path;
        path = NULL;
    }
    free(origin);
    free(path);
    return r;
}

int ah_auth_new(struct loop *l, struct log *log, const struct ah_auth_opts *o,
                ah_auth_keys_fn on_keys, void *userdata, struct ah_auth **ret, struct err *e)
{
    int r;
    if (!o || !o->issuer || !o->resource)
        return err_set(e, -EINVAL, "agent_http_auth: missing options");
    r = url_check_secure(o->issuer, "--listen-issuer", e);
    if (r < 0)
        return r;
    struct ah_auth *a = calloc(1, sizeof(*a));
    if (!a)
        return err_set(e, -ENOMEM, "out of memory");
    a->loop = l;
    a->log = log;
    a->on_keys = on_keys;
    a->userdata = userdata;
    buf_init(&a->body, AH_AUTH_DOC_MAX);
    a->issuer = strdup(o->issuer);
    a->resource = strdup(o->resource);
    a->audience = strdup(o->audience ? o->audience : o->resource);
    if (!a->issuer || !a->resource || !a->audience)
        goto oom;
    for (size_t i = 0; o->scopes && o->scopes[i]; i++)
        if (strv_push(&a->scopes, o->scopes[i]) < 0)
            goto oom;
    r = metadata_url(a);
    if (r == -EINVAL) {
        r = err_set(e, r, "--listen-public-url '%s' is not an http(s) URL", o->resource);
        goto fail;
    }
    if (r < 0 || build_metadata(a) < 0)
        goto oom;
    fetch_start(a, FETCH_OAUTH_META); /* the keys are there before the first agent, mostly */
    *ret = a;
    return 0;
oom:
    r = err_set(e, -ENOMEM, "out of memory");
fail:
    ah_auth_free(a);
    return r;
}

void ah_auth_free(struct ah_auth *a)
{
    if (!a)
        return;
    if (a->easy) {
        loop_curl_remove(a->loop, a->easy);
        curl_easy_cleanup(a->easy);
    }
    buf_release(&a->body);
    json_object_put(a->jwks);
    strv_release(&a->scopes);
    free(a->issuer);
    free(a->resource);
    free(a->audience);
    free(a->prm_url);
    free(a->resource_path);
    free(a->metadata);
    free(a->jwks_uri);
    free(a);
}
