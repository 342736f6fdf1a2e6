/* test_dpop_token.c - DPoP at the token endpoint (oauth.c, dpop.c): a proof on the request, one
 * more try with the server's nonce after use_dpop_nonce (and no third), token_type DPoP taken
 * only when a proof was sent, and the key kept in the entry with a DPoP token, dropped with a
 * bearer one, reused by a refresh; no proof for an MCP server that does not take DPoP tokens. An in-test HTTP server on 127.0.0.1 plays the authorization
 * server. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "credkit/base64.h"
#include "credkit/dpop.h"
#include "credkit/json.h"

#include "dpop.h"
#include "httpd.h" /* also named here: CMake links libmicrohttpd to tests that include it */
#include "oauth.h"
#include "tests.h"
#include "tokens.h"

#define MAXREQ 4
#define PROOF  2048

/* under mu: the server's answers, and what it saw */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static bool stubborn;          /* use_dpop_nonce whatever the proof */
static const char *token_type; /* of the answer to a proof with the nonce */
static int requests;
static char proofs[MAXREQ][PROOF];

static const char *const no_nonce = "{\"error\":\"use_dpop_nonce\",\"error_description\":\"x\"}";

/* The claims of a compact JWS, parsed (NULL when it is not one). */
static struct json_object *claims_of(const char *jws)
{
    const char *p = strchr(jws, '.');
    size_t n = 0;
    char *s = p ? base64url_decode(p + 1, strcspn(p + 1, "."), &n) : NULL;
    struct json_object *o = NULL;
    if (!s || json_parse(s, n, 65536, &o, NULL) < 0)
        o = NULL;
    free(s);
    return o;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *data_size, void **con_cls)
{
    (void)cls, (void)url, (void)method, (void)version;
    struct httpd_upload *u = NULL;
    enum MHD_Result now;
    char answer[256];
    if (!httpd_collect(con_cls, data, data_size, &u, &now))
        return now;
    pthread_mutex_lock(&mu);
    int i = requests < MAXREQ ? requests++ : MAXREQ - 1;
    httpd_header(c, "DPoP", proofs[i], PROOF);
    struct json_object *cl = claims_of(proofs[i]);
    bool nonce =
        cl && json_get_string(cl, "nonce") && strcmp(json_get_string(cl, "nonce"), "as-1") == 0;
    json_object_put(cl);
    snprintf(answer, sizeof(answer),
             "{\"access_token\":\"at-%d\",\"token_type\":\"%s\",\"expires_in\":60,"
             "\"refresh_token\":\"rt\"}",
             i, token_type);
    bool refuse = stubborn || (proofs[i][0] && !nonce);
    pthread_mutex_unlock(&mu);
    if (!refuse)
        return httpd_reply(c, 200, "application/json", answer, NULL);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(no_nonce), (void *)no_nonce, MHD_RESPMEM_PERSISTENT);
    (void)MHD_add_response_header(r, "DPoP-Nonce", "as-1");
    return httpd_queue(c, 400, "application/json", NULL, r);
}

static void reset(bool stubborn_, const char *type)
{
    pthread_mutex_lock(&mu);
    stubborn = stubborn_;
    token_type = type;
    requests = 0;
    memset(proofs, 0, sizeof(proofs));
    pthread_mutex_unlock(&mu);
}

static const char *const params[] = {"grant_type", "authorization_code", "code", "c", NULL};

static void nonce_retry(const char *endpoint)
{
    struct dpop_key *key = NULL;
    struct token_response tr = {0};
    struct err e = ERR_INIT;
    CHECK_INT(dpop_key_generate(&key), 0);
    struct oauth_client client = {.client_id = "cid", .dpop = key};
    reset(false, "DPoP");
    CHECK_INT(oauth_token(endpoint, &client, params, 5000, &tr, &e), 0);
    CHECK(!tr.error);
    CHECK_STR(tr.token_type, "DPoP");
    CHECK_STR(tr.access_token, "at-1");
    pthread_mutex_lock(&mu);
    CHECK_INT(requests, 2);
    struct json_object *c0 = claims_of(proofs[0]), *c1 = claims_of(proofs[1]);
    pthread_mutex_unlock(&mu);
    CHECK(c0 && c1);
    CHECK_STR(json_get_string(c0, "htm"), "POST");
    CHECK_STR(json_get_string(c0, "htu"), endpoint);
    CHECK(!json_get_string(c0, "nonce"));
    CHECK(!json_get_string(c0, "ath")); /* no token to prove yet */
    CHECK_STR(json_get_string(c1, "nonce"), "as-1");
    CHECK(strcmp(json_get_string(c0, "jti"), json_get_string(c1, "jti")) != 0);
    json_object_put(c0);
    json_object_put(c1);
    token_response_release(&tr);

    /* a server that asks again: one more try only, and its error is the answer */
    reset(true, "DPoP");
    CHECK_INT(oauth_token(endpoint, &client, params, 5000, &tr, &e), 0);
    CHECK_STR(tr.error, "use_dpop_nonce");
    pthread_mutex_lock(&mu);
    CHECK_INT(requests, 2);
    pthread_mutex_unlock(&mu);
    token_response_release(&tr);

    /* no proof sent: a DPoP token cannot be used, and is refused */
    struct oauth_client plain = {.client_id = "cid"};
    reset(false, "DPoP");
    CHECK_INT(oauth_token(endpoint, &plain, params, 5000, &tr, &e), -EPROTO);
    CHECK_CONTAINS(err_msg(&e), "unsupported token type 'DPoP' (only Bearer)");
    pthread_mutex_lock(&mu);
    CHECK_INT(requests, 1);
    CHECK_STR(proofs[0], "");
    pthread_mutex_unlock(&mu);
    token_response_release(&tr);
    dpop_key_unref(key);
}

static void entry_key(const char *endpoint)
{
    struct token_entry *te = NULL;
    struct token_response tr = {0};
    struct err e = ERR_INIT;
    struct dpop_key *kept = NULL;
    char md[512];
    snprintf(md, sizeof(md),
             "{\"issuer\":\"https://as.example.com\",\"token_endpoint\":\"%s\","
             "\"dpop_signing_alg_values_supported\":[\"RS256\",\"ES256\"]}",
             endpoint);
    struct discovery d = {.as = json_tokener_parse(md)};
    struct oauth_client client = {.client_id = "cid"};
    CHECK(auth_dpop_offered(&d));
    CHECK_INT(token_entry_new("https://mcp.example.com/mcp", "https://as.example.com", NULL, &te),
              0);

    /* an MCP server that knows only Bearer: no proof, whatever the authorization server takes */
    CHECK(!auth_dpop_wanted(te, &d));
    reset(false, "Bearer");
    CHECK_INT(auth_dpop_token(te, &d, &client, params, 5000, &tr, &e), 0);
    pthread_mutex_lock(&mu);
    CHECK_STR(proofs[0], "");
    pthread_mutex_unlock(&mu);
    CHECK(te->dpop_key == NULL);
    token_response_release(&tr);
    /* its protected resource metadata can say it takes them, as its challenge can */
    d.prm = json_tokener_parse("{\"dpop_signing_alg_values_supported\": [\"ES256\"]}");
    CHECK(auth_dpop_wanted(te, &d));
    json_object_put(d.prm);
    d.prm = json_tokener_parse("{\"dpop_bound_access_tokens_required\": true}");
    CHECK(auth_dpop_wanted(te, &d));
    json_object_put(d.prm);
    d.prm = NULL;
    d.dpop_challenge = true; /* its 401 said "WWW-Authenticate: DPoP ..." */
    CHECK(auth_dpop_wanted(te, &d));

    /* a sign-in: a new key, kept with the DPoP token */
    reset(false, "DPoP");
    CHECK_INT(auth_dpop_token(te, &d, &client, params, 5000, &tr, &e), 0);
    CHECK(te->dpop_key != NULL);
    CHECK_CONTAINS(te->dpop_key, "\"d\":\"");
    free(te->token_type);
    te->token_type = strdup("DPoP");
    CHECK(auth_dpop_bound(te));
    CHECK_INT(auth_dpop_key(te, &kept, &e), 0); /* it reads back */
    token_response_release(&tr);

    /* a refresh proves with the same key */
    static const char *const refresh[] = {"grant_type", "refresh_token", "refresh_token", "rt",
                                          NULL};
    reset(false, "DPoP");
    CHECK_INT(auth_dpop_token(te, &d, &client, refresh, 5000, &tr, &e), 0);
    pthread_mutex_lock(&mu);
    size_t n = 0;
    char *header = base64url_decode(proofs[1], strcspn(proofs[1], "."), &n);
    pthread_mutex_unlock(&mu);
    struct json_object *h = NULL, *jwk = NULL;
    CHECK(header && json_parse(header, n, 65536, &h, NULL) == 0);
    CHECK(json_object_object_get_ex(h, "jwk", &jwk));
    /* the proof's public key is the one kept */
    CHECK_CONTAINS(te->dpop_key, json_get_string(jwk, "x"));
    CHECK_CONTAINS(te->dpop_key, json_get_string(jwk, "y"));
    token_response_release(&tr);

    /* a bearer answer keeps no key */
    reset(false, "Bearer");
    CHECK_INT(auth_dpop_token(te, &d, &client, params, 5000, &tr, &e), 0);
    CHECK(te->dpop_key == NULL);
    token_response_release(&tr);

    /* an authorization server without DPoP gets no proof */
    json_object_object_del(d.as, "dpop_signing_alg_values_supported");
    CHECK(!auth_dpop_offered(&d));
    CHECK(!auth_dpop_wanted(te, &d));
    reset(false, "Bearer");
    CHECK_INT(auth_dpop_token(te, &d, &client, params, 5000, &tr, &e), 0);
    pthread_mutex_lock(&mu);
    CHECK_INT(requests, 1);
    CHECK_STR(proofs[0], "");
    pthread_mutex_unlock(&mu);
    token_response_release(&tr);

    json_object_put(h);
    free(header);
    dpop_key_unref(kept);
    json_object_put(d.as);
    token_entry_free(te);
}

static void test_dpop_token(void)
{
    unsigned port = 0;
    struct MHD_Daemon *d = httpd_start(handler, NULL, httpd_upload_completed, 0, &port);
    char endpoint[64];
    snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u/token", port);
    nonce_retry(endpoint);
    entry_key(endpoint);
    MHD_stop_daemon(d);
}

TESTS_MAIN(test_dpop_token)
