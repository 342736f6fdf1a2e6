/* test_dpop.c - DPoP keys and proofs: the JWK round trip, the proof's header and claims, and
 * its signature checked by OpenSSL against the public key the proof carries */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/sha.h>

#include "credkit/base64.h"
#include "credkit/dpop.h"
#include "credkit/json.h"
#include "credkit/secmem.h"

#include "tests.h"

/* Part i (0, 1, 2) of a compact JWS, decoded; the JSON parts parsed into *ret_obj. */
static char *part(const char *jws, int i, size_t *ret_len)
{
    const char *p = jws;
    for (; i > 0; i--)
        p = strchr(p, '.') + 1;
    return base64url_decode(p, strcspn(p, "."), ret_len);
}

static struct json_object *part_json(const char *jws, int i)
{
    size_t n = 0;
    char *s = part(jws, i, &n);
    struct json_object *o = NULL;
    if (s && json_parse(s, n, 65536, &o, NULL) < 0)
        o = NULL;
    free(s);
    return o;
}

/* Verifies the ES256 signature of jws with the public key of its header's jwk. */
static bool verifies(const char *jws)
{
    struct json_object *h = part_json(jws, 0), *jwk = NULL;
    unsigned char pub[65] = {0x04};
    size_t xn = 0, yn = 0, sn = 0;
    bool ok = false;
    if (!h || !json_object_object_get_ex(h, "jwk", &jwk)) {
        json_object_put(h);
        return false;
    }
    char *x = base64url_decode(json_get_string(jwk, "x"), 43, &xn);
    char *y = base64url_decode(json_get_string(jwk, "y"), 43, &yn);
    char *sig = part(jws, 2, &sn);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    EVP_PKEY *pkey = NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    ECDSA_SIG *es = ECDSA_SIG_new();
    unsigned char *der = NULL;
    if (x && y && xn == 32 && yn == 32 && sig && sn == 64 && bld && ctx && md && es) {
        memcpy(pub + 1, x, 32);
        memcpy(pub + 33, y, 32);
        (void)OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
        (void)OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub));
        params = OSSL_PARAM_BLD_to_param(bld);
        BIGNUM *r = BN_bin2bn((unsigned char *)sig, 32, NULL),
               *s = BN_bin2bn((unsigned char *)sig + 32, 32, NULL);
        (void)ECDSA_SIG_set0(es, r, s);
        int dl = i2d_ECDSA_SIG(es, &der);
        size_t input = (size_t)(strrchr(jws, '.') - jws);
        ok = params && EVP_PKEY_fromdata_init(ctx) == 1 &&
             EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) == 1 && dl > 0 &&
             EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pkey) == 1 &&
             EVP_DigestVerify(md, der, (size_t)dl, (const unsigned char *)jws, input) == 1;
    }
    OPENSSL_free(der);
    ECDSA_SIG_free(es);
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pkey);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    free(x);
    free(y);
    free(sig);
    json_object_put(h);
    return ok;
}

static void test_proof(void)
{
    struct dpop_key *k = NULL;
    char *p = NULL;
    CHECK_INT(dpop_key_generate(&k), 0);
    CHECK_INT(
        dpop_proof(k, "POST", "https://mcp.example.com/mcp?x=1#f", "tok.en", "n-1", 1700000000, &p),
        0);
    struct json_object *h = part_json(p, 0), *c = part_json(p, 1), *jwk = NULL;
    CHECK(h && c);
    CHECK_STR(json_get_string(h, "typ"), "dpop+jwt");
    CHECK_STR(json_get_string(h, "alg"), "ES256");
    CHECK(json_object_object_get_ex(h, "jwk", &jwk));
    CHECK_STR(json_get_string(jwk, "kty"), "EC");
    CHECK_STR(json_get_string(jwk, "crv"), "P-256");
    CHECK(!json_get_string(jwk, "d")); /* never the private part */
    CHECK_STR(json_get_string(c, "htm"), "POST");
    CHECK_STR(json_get_string(c, "htu"), "https://mcp.example.com/mcp");
    CHECK_STR(json_get_string(c, "nonce"), "n-1");
    int64_t iat = 0;
    CHECK(json_get_int64(c, "iat", &iat) && iat == 1700000000);
    const char *jti = json_get_string(c, "jti");
    CHECK(jti && strlen(jti) >= 16);
    /* ath = base64url(SHA-256("tok.en")) */
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)"tok.en", 6, md);
    char *ath = base64url_encode(md, sizeof(md));
    CHECK_STR(json_get_string(c, "ath"), ath);
    CHECK(verifies(p));

    /* each proof is fresh: another jti; without a token or a nonce, no ath and no nonce */
    char *q = NULL;
    CHECK_INT(dpop_proof(k, "GET", "http://127.0.0.1:8/mcp", NULL, NULL, 1700000001, &q), 0);
    struct json_object *c2 = part_json(q, 1);
    CHECK(c2 && strcmp(json_get_string(c2, "jti"), jti) != 0);
    CHECK(!json_get_string(c2, "ath"));
    CHECK(!json_get_string(c2, "nonce"));
    CHECK(verifies(q));
    /* a proof altered after signing does not verify */
    q[strlen(q) - 2] = q[strlen(q) - 2] == 'A' ? 'B' : 'A';
    CHECK(!verifies(q));

    char *bad = NULL;
    CHECK_INT(dpop_proof(k, "POST", "file:///etc/passwd", NULL, NULL, 1, &bad), -EINVAL);
    CHECK_INT(dpop_proof(k, "POST", "https://a/", NULL, "a b", 1, &bad), -EINVAL);
    CHECK(!bad);
    json_object_put(h);
    json_object_put(c);
    json_object_put(c2);
    free(ath);
    free(p);
    free(q);
    dpop_key_unref(k);
}

static void test_jwk(void)
{
    struct dpop_key *k = NULL, *k2 = NULL;
    struct buf b;
    char *t1 = NULL, *t2 = NULL, *p = NULL;
    struct err e = {0};
    buf_init_secret(&b, 4096);
    CHECK_INT(dpop_key_generate(&k), 0);
    CHECK_INT(dpop_key_write_jwk(k, &b), 0);
    CHECK_CONTAINS(buf_str(&b), "\"d\":\"");
    CHECK_INT(dpop_key_from_text(b.data, b.len, &k2, &e), 0);
    CHECK_INT(dpop_key_thumbprint(k, &t1), 0);
    CHECK_INT(dpop_key_thumbprint(k2, &t2), 0);
    CHECK_STR(t1, t2);
    CHECK_INT(strlen(t1), 43);
    /* the key read back signs proofs that verify */
    CHECK_INT(dpop_proof(k2, "POST", "https://as.example/token", NULL, NULL, 1, &p), 0);
    CHECK(verifies(p));

    /* a private part that does not belong to the public one is refused */
    struct dpop_key *other = NULL, *mixed = NULL;
    struct buf ob;
    buf_init_secret(&ob, 4096);
    CHECK_INT(dpop_key_generate(&other), 0);
    CHECK_INT(dpop_key_write_jwk(other, &ob), 0);
    struct json_object *j1 = NULL, *j2 = NULL;
    CHECK_INT(json_parse(b.data, b.len, 4096, &j1, NULL), 0);
    CHECK_INT(json_parse(ob.data, ob.len, 4096, &j2, NULL), 0);
    json_object_object_add(j1, "d", json_object_get(json_object_object_get(j2, "d")));
    CHECK(dpop_key_from_json(j1, &mixed, &e) < 0);
    CHECK(!mixed);
    CHECK(!strstr(err_msg(&e), json_get_string(j2, "d"))); /* never quoted */
    json_object_object_add(j1, "crv", json_object_new_string("P-384"));
    CHECK_INT(dpop_key_from_json(j1, &mixed, &e), -EINVAL);
    CHECK_INT(dpop_key_from_text("[]", 2, &mixed, &e), -EINVAL);

    /* references: the key lives until the last one goes */
    CHECK(dpop_key_ref(k) == k);
    dpop_key_unref(k);
    json_object_put(j1);
    json_object_put(j2);
    buf_release(&ob);
    buf_release(&b);
    dpop_key_unref(other);
    dpop_key_unref(k);
    dpop_key_unref(k2);
    dpop_key_unref(NULL);
    free(t1);
    free(t2);
    free(p);
}

static void test_nonce(void)
{
    CHECK(dpop_nonce_valid("eyJ7S_zG.-~", 11));
    CHECK(!dpop_nonce_valid("", 0));
    CHECK(!dpop_nonce_valid("a b", 3));
    CHECK(!dpop_nonce_valid("a\"b", 3));
    CHECK(!dpop_nonce_valid("a\\b", 3));
    CHECK(dpop_challenge_wants_nonce("DPoP error=\"use_dpop_nonce\", error_description=\"x\""));
    CHECK(dpop_challenge_wants_nonce(
        "Bearer realm=\"a\", DPoP algs=\"ES256\", error=use_dpop_nonce"));
    CHECK(!dpop_challenge_wants_nonce("DPoP error=\"invalid_token\""));
    CHECK(!dpop_challenge_wants_nonce("Bearer error=\"use_dpop_nonce\""));
    CHECK(!dpop_challenge_wants_nonce(NULL));
}

TESTS_MAIN(test_proof, test_jwk, test_nonce)
