/* test_jws.c - JWS verification: each algorithm taken verifies what its key signed, and nothing
 * altered, nothing signed by another key, no key of another kind; JWKs read and refused */
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "credkit/base64.h"
#include "credkit/json.h"
#include "credkit/jws.h"

#include "tests.h"

static const char input[] = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9";

/* base64url of a BIGNUM parameter of pkey. */
static char *bn_b64(EVP_PKEY *pkey, const char *name)
{
    BIGNUM *bn = NULL;
    unsigned char buf[1024];
    char *s = NULL;
    if (EVP_PKEY_get_bn_param(pkey, name, &bn) == 1) {
        int n = BN_bn2bin(bn, buf);
        s = base64url_encode(buf, (size_t)n);
    }
    BN_free(bn);
    return s;
}

/* The public JWK of pkey, parsed. */
static struct json_object *jwk_of(EVP_PKEY *pkey)
{
    char text[2048];
    char *a = NULL, *b = NULL;
    if (EVP_PKEY_is_a(pkey, "RSA")) {
        a = bn_b64(pkey, OSSL_PKEY_PARAM_RSA_N);
        b = bn_b64(pkey, OSSL_PKEY_PARAM_RSA_E);
        snprintf(text, sizeof(text), "{\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"%s\"}", a, b);
    } else if (EVP_PKEY_is_a(pkey, "EC")) {
        unsigned char pub[65];
        size_t n = 0;
        if (EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub), &n) !=
                1 ||
            n != 65)
            return NULL;
        a = base64url_encode(pub + 1, 32);
        b = base64url_encode(pub + 33, 32);
        snprintf(text, sizeof(text), "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"%s\",\"y\":\"%s\"}",
                 a, b);
    } else {
        unsigned char pub[32];
        size_t n = sizeof(pub);
        if (EVP_PKEY_get_raw_public_key(pkey, pub, &n) != 1)
            return NULL;
        a = base64url_encode(pub, n);
        snprintf(text, sizeof(text), "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"%s\"}", a);
    }
    free(a);
    free(b);
    struct json_object *o = NULL;
    return json_parse(text, strlen(text), sizeof(text), &o, NULL) < 0 ? NULL : o;
}

/* The signature of input by pkey with alg, base64url (PS256 and EdDSA by OpenSSL here: the
 * suite signs only ES256 and RS256). */
static char *sign(EVP_PKEY *pkey, enum jws_alg alg)
{
    char *out = NULL;
    if (alg == JWS_ES256 || alg == JWS_RS256) {
        if (jws_sign(pkey, alg == JWS_ES256, input, strlen(input), &out) < 0)
            return NULL;
        return out;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    unsigned char sig[512];
    size_t n = sizeof(sig);
    if (EVP_DigestSignInit(ctx, &pctx, alg == JWS_EDDSA ? NULL : EVP_sha256(), NULL, pkey) == 1 &&
        (alg != JWS_PS256 || (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
                              EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 32) == 1)) &&
        EVP_DigestSign(ctx, sig, &n, (const unsigned char *)input, strlen(input)) == 1)
        out = base64url_encode(sig, n);
    EVP_MD_CTX_free(ctx);
    return out;
}

/* Verified with the key read back from its JWK: what it signed passes, an altered input or
 * signature does not, and a key of the same kind that did not sign it does not either. */
static void round_trip(EVP_PKEY *pkey, EVP_PKEY *other, enum jws_alg alg)
{
    struct json_object *jwk = jwk_of(pkey);
    EVP_PKEY *pub = NULL, *pub_other = NULL;
    char *sig = sign(pkey, alg);
    CHECK(jwk && sig);
    CHECK_INT(jws_key_from_jwk(jwk, &pub), 0);
    struct json_object *jwk_other = jwk_of(other);
    CHECK_INT(jws_key_from_jwk(jwk_other, &pub_other), 0);
    CHECK_INT(jws_verify(pub, alg, input, strlen(input), sig, strlen(sig)), 0);
    CHECK_INT(jws_verify(pub, alg, input, strlen(input) - 1, sig, strlen(sig)), -EBADMSG);
    CHECK_INT(jws_verify(pub_other, alg, input, strlen(input), sig, strlen(sig)), -EBADMSG);
    sig[3] = sig[3] == 'A' ? 'B' : 'A';
    CHECK_INT(jws_verify(pub, alg, input, strlen(input), sig, strlen(sig)), -EBADMSG);
    CHECK_INT(jws_verify(pub, alg, input, strlen(input), "", 0), -EBADMSG);
    EVP_PKEY_free(pub);
    EVP_PKEY_free(pub_other);
    json_object_put(jwk);
    json_object_put(jwk_other);
    free(sig);
}

static void test_algorithms(void)
{
    EVP_PKEY *rsa = EVP_RSA_gen(2048), *rsa2 = EVP_RSA_gen(2048);
    EVP_PKEY *ec = EVP_EC_gen("P-256"), *ec2 = EVP_EC_gen("P-256");
    EVP_PKEY *ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519"),
             *ed2 = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    CHECK(rsa && rsa2 && ec && ec2 && ed && ed2);
    round_trip(rsa, rsa2, JWS_RS256);
    round_trip(rsa, rsa2, JWS_PS256);
    round_trip(ec, ec2, JWS_ES256);
    round_trip(ed, ed2, JWS_EDDSA);

    /* a key of another kind than the algorithm's is refused before anything is checked, and
     * an RS256 signature is no PS256 one */
    char *sig = sign(ec, JWS_ES256), *rs = sign(rsa, JWS_RS256);
    CHECK_INT(jws_verify(rsa, JWS_ES256, input, strlen(input), sig, strlen(sig)), -EKEYREJECTED);
    CHECK_INT(jws_verify(ec, JWS_RS256, input, strlen(input), sig, strlen(sig)), -EKEYREJECTED);
    CHECK_INT(jws_verify(ec, JWS_EDDSA, input, strlen(input), sig, strlen(sig)), -EKEYREJECTED);
    CHECK_INT(jws_verify(rsa, JWS_PS256, input, strlen(input), rs, strlen(rs)), -EBADMSG);
    free(sig);
    free(rs);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(rsa2);
    EVP_PKEY_free(ec);
    EVP_PKEY_free(ec2);
    EVP_PKEY_free(ed);
    EVP_PKEY_free(ed2);
}

static void test_alg_names(void)
{
    enum jws_alg alg = JWS_RS256;
    CHECK_INT(jws_alg_from_name("ES256", &alg), 0);
    CHECK(alg == JWS_ES256);
    CHECK_INT(jws_alg_from_name("PS256", &alg), 0);
    CHECK(alg == JWS_PS256);
    CHECK_INT(jws_alg_from_name("EdDSA", &alg), 0);
    CHECK(alg == JWS_EDDSA);
    CHECK_INT(jws_alg_from_name("none", &alg), -ENOTSUP);
    CHECK_INT(jws_alg_from_name("HS256", &alg), -ENOTSUP);
    CHECK_INT(jws_alg_from_name("es256", &alg), -ENOTSUP);
    CHECK_INT(jws_alg_from_name(NULL, &alg), -ENOTSUP);
}

static int from_text(const char *text)
{
    struct json_object *o = NULL;
    EVP_PKEY *pkey = NULL;
    if (json_parse(text, strlen(text), 4096, &o, NULL) < 0)
        return -999;
    int r = jws_key_from_jwk(o, &pkey);
    CHECK(r < 0 || pkey);
    EVP_PKEY_free(pkey);
    json_object_put(o);
    return r;
}

static void test_bad_jwks(void)
{
    /* RFC 7515 A.3's P-256 key: taken; the same with y changed is off the curve */
    CHECK_INT(from_text("{\"kty\":\"EC\",\"crv\":\"P-256\","
                        "\"x\":\"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\","
                        "\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0\"}"),
              0);
    CHECK_INT(from_text("{\"kty\":\"EC\",\"crv\":\"P-256\","
                        "\"x\":\"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\","
                        "\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5b0\"}"),
              -EINVAL);
    CHECK_INT(from_text("{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AA\",\"y\":\"AA\"}"), -ENOTSUP);
    CHECK_INT(from_text("{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AA\"}"), -EINVAL);
    CHECK_INT(from_text("{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}"), -ENOTSUP);
    CHECK_INT(from_text("{\"kty\":\"OKP\",\"crv\":\"X25519\",\"x\":\"AA\"}"), -ENOTSUP);
    CHECK_INT(from_text("{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AA\"}"), -EINVAL);
    CHECK_INT(from_text("{\"n\":\"AQAB\",\"e\":\"AQAB\"}"), -EINVAL);
    /* an RSA modulus of 512 bits is too short to trust */
    CHECK_INT(from_text("{\"kty\":\"RSA\",\"e\":\"AQAB\",\"n\":\"yeNlzlub94YgerT030codqEztjfU_S6X4"
                        "DbDA_iVKkjAWtYfPHDzz_sPCT1Axz6isZdf3lHpq_gYX4Sz-cbe4rjmigxUxr-FgKHQ\"}"),
              -EINVAL);
    CHECK_INT(jws_key_from_jwk(NULL, &(EVP_PKEY *){NULL}), -EINVAL);
}

TESTS_MAIN(test_algorithms, test_alg_names, test_bad_jwks)
