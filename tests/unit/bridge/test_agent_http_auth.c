/* test_agent_http_auth.c - jwt_check(): the access tokens an HTTP agent may bring, against a
 * key set, at a fixed time: taken, and each way of being refused (another issuer, audience,
 * key, a signature altered, expired, not yet valid, a scope missing, not a JWT, alg none) */
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>

#include "credkit/base64.h"
#include "credkit/json.h"
#include "credkit/jws.h"

#include "downstream/agent_http_auth.h"

#include "tests.h"

#define NOW    1800000000
#define ISSUER "https://as.example.com"
#define RES    "https://bridge.example.com/mcp"

static EVP_PKEY *key;
static struct json_object *jwks;

/* The key set of key, under kid "k1". */
static struct json_object *make_jwks(void)
{
    unsigned char pub[65];
    size_t n = 0;
    char text[512];
    if (EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub), &n) != 1 ||
        n != 65)
        return NULL;
    char *x = base64url_encode(pub + 1, 32), *y = base64url_encode(pub + 33, 32);
    snprintf(text, sizeof(text),
             "{\"keys\":[{\"kty\":\"RSA\",\"use\":\"enc\",\"kid\":\"k1\",\"n\":\"AQAB\",\"e\":"
             "\"AQAB\"},{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"k1\",\"use\":\"sig\","
             "\"alg\":\"ES256\",\"x\":\"%s\",\"y\":\"%s\"}]}",
             x, y);
    free(x);
    free(y);
    struct json_object *o = NULL;
    return json_parse(text, strlen(text), sizeof(text), &o, NULL) < 0 ? NULL : o;
}

/* A token: header and claims as JSON text, signed by key. Caller frees. */
static char *token(const char *header, const char *claims)
{
    char *h = base64url_encode(header, strlen(header)),
         *c = base64url_encode(claims, strlen(claims));
    char input[4096], *sig = NULL, *out = NULL;
    snprintf(input, sizeof(input), "%s.%s", h, c);
    if (jws_sign(key, true, input, strlen(input), &sig) == 0 &&
        asprintf(&out, "%s.%s", input, sig) < 0)
        out = NULL;
    free(h);
    free(c);
    free(sig);
    return out;
}

#define HDR "{\"alg\":\"ES256\",\"typ\":\"at+jwt\",\"kid\":\"k1\"}"

static const char *const scopes[] = {"mcp:read", NULL};
static const struct jwt_rules rules = {
    .issuer = ISSUER, .audience = RES, .scopes = scopes, .skew_s = 60};

/* jwt_check of a token made of header and claims. */
static int check(const char *header, const char *claims, char *sub)
{
    char *t = token(header, claims);
    const char *why = NULL;
    CHECK(t);
    int r = t ? jwt_check(t, jwks, &rules, NOW, sub, &why) : -999;
    CHECK(r == 0 ? !why : why && *why);
    free(t);
    return r;
}

static void test_taken(void)
{
    char sub[AH_AUTH_SUB_MAX] = "";
    CHECK_INT(check(HDR,
                    "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"sub\":\"alice\",\"exp\":"
                    "1800000100,\"scope\":\"openid mcp:read\"}",
                    sub),
              0);
    CHECK_STR(sub, "alice");
    /* aud as an array, nbf past, exp just within the skew; a subject with a control
     * character is not logged as it is */
    CHECK_INT(check(HDR,
                    "{\"iss\":\"" ISSUER "\",\"aud\":[\"other\",\"" RES "\"],\"sub\":\"a\\nb\","
                    "\"exp\":1799999950,\"nbf\":1800000030,\"scope\":\"mcp:read\"}",
                    sub),
              0);
    CHECK_STR(sub, "?");
}

static void test_refused(void)
{
    char sub[AH_AUTH_SUB_MAX];
    /* each claim wrong in turn */
    CHECK_INT(check(HDR,
                    "{\"iss\":\"https://evil.example.com\",\"aud\":\"" RES "\",\"exp\":1800000100,"
                    "\"scope\":\"mcp:read\"}",
                    sub),
              -EACCES);
    CHECK_INT(check(HDR,
                    "{\"iss\":\"" ISSUER "\",\"aud\":\"https://other.example.com/mcp\",\"exp\":"
                    "1800000100,\"scope\":\"mcp:read\"}",
                    sub),
              -EACCES);
    CHECK_INT(check(HDR, "{\"iss\":\"" ISSUER "\",\"exp\":1800000100,\"scope\":\"mcp:read\"}", sub),
              -EACCES);
    CHECK_INT(check(HDR,
                    "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"exp\":1799999900,"
                    "\"scope\":\"mcp:read\"}",
                    sub),
              -EKEYEXPIRED);
    CHECK_INT(check(HDR,
                    "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"exp\":1800000100,\"nbf\":"
                    "1800000100,\"scope\":\"mcp:read\"}",
                    sub),
              -EKEYEXPIRED);
    /* times at the ends of the range: no overflow makes them valid */
    CHECK_INT(check(HDR,
                    "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"exp\":-9223372036854775808,"
                    "\"scope\":\"mcp:read\"}",
                    sub),
              -EKEYEXPIRED);
    CHECK_INT(check(HDR,
                    "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"exp\":99999999999999999999,"
                    "\"nbf\":9223372036854775807,\"scope\":\"mcp:read\"}",
                    sub),
              -EKEYEXPIRED);
    CHECK_INT(
        check(HDR, "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"scope\":\"mcp:read\"}", sub),
        -EBADMSG);
    CHECK_INT(check(HDR,
                    "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"exp\":\"1800000100\","
                    "\"scope\":\"mcp:read\"}",
                    sub),
              -EBADMSG);
    CHECK_INT(check(HDR,
                    "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"exp\":1800000100,"
                    "\"scope\":\"mcp:readonly mcp:write\"}",
                    sub),
              -EPERM);
    CHECK_INT(check(HDR, "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"exp\":1800000100}", sub),
              -EPERM);
    /* the header: another key, another algorithm, none */
    const char *ok = "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"exp\":1800000100,"
                     "\"scope\":\"mcp:read\"}";
    CHECK_INT(check("{\"alg\":\"ES256\",\"kid\":\"k2\"}", ok, sub), -ENOKEY);
    CHECK_INT(check("{\"alg\":\"RS256\",\"kid\":\"k1\"}", ok, sub), -EBADMSG);
    CHECK_INT(check("{\"alg\":\"none\",\"kid\":\"k1\"}", ok, sub), -ENOTSUP);
    CHECK_INT(check("{\"alg\":\"HS256\",\"kid\":\"k1\"}", ok, sub), -ENOTSUP);
    /* a header with critical extensions; a token bound to a DPoP key */
    CHECK_INT(check("{\"alg\":\"ES256\",\"kid\":\"k1\",\"crit\":[\"b64\"],\"b64\":false}", ok, sub),
              -EBADMSG);
    CHECK_INT(check(HDR,
                    "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"exp\":1800000100,"
                    "\"scope\":\"mcp:read\",\"cnf\":{\"jkt\":\"0ZcOCORZNYy-"
                    "DWpqq30jZyJGHTN0d2HglBV3uiguA4I\"}}",
                    sub),
              -EACCES);
    /* without a kid: the one signing key of the set */
    CHECK_INT(check("{\"alg\":\"ES256\"}", ok, sub), 0);
}

static void test_not_jwts(void)
{
    char sub[AH_AUTH_SUB_MAX];
    const char *why = NULL;
    char *t = token(HDR, "{\"iss\":\"" ISSUER "\",\"aud\":\"" RES "\",\"exp\":1800000100,"
                         "\"scope\":\"mcp:read\"}");
    CHECK(t);
    CHECK_INT(jwt_check(t, jwks, &rules, NOW, sub, &why), 0);
    CHECK_INT(jwt_check(t, NULL, &rules, NOW, sub, &why), -ENOKEY);
    /* the signature altered, the claims altered */
    size_t n = strlen(t);
    t[n - 5] = t[n - 5] == 'A' ? 'B' : 'A';
    CHECK_INT(jwt_check(t, jwks, &rules, NOW, sub, &why), -EBADMSG);
    t[n - 5] = t[n - 5] == 'A' ? 'B' : 'A';
    char *dot = strchr(t, '.');
    dot[3] = dot[3] == 'A' ? 'B' : 'A';
    CHECK(jwt_check(t, jwks, &rules, NOW, sub, &why) < 0);
    free(t);
    /* opaque tokens and broken forms */
    CHECK_INT(jwt_check("2YotnFZFEjr1zCsicMWpAA", jwks, &rules, NOW, sub, &why), -EBADMSG);
    CHECK_CONTAINS(why, "JWT access tokens only");
    CHECK_INT(jwt_check("a.b.c.d", jwks, &rules, NOW, sub, &why), -EBADMSG);
    CHECK_INT(jwt_check("..", jwks, &rules, NOW, sub, &why), -EBADMSG);
    CHECK_INT(jwt_check("", jwks, &rules, NOW, sub, &why), -EBADMSG);
}

int main(void)
{
    key = EVP_EC_gen("P-256");
    jwks = key ? make_jwks() : NULL;
    if (!jwks) {
        fprintf(stderr, "cannot make a key\n");
        return 1;
    }
    int r = TESTS_RUN(test_taken, test_refused, test_not_jwts);
    json_object_put(jwks);
    EVP_PKEY_free(key);
    return r;
}
