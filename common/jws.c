/* jws.c - JWS signatures with OpenSSL: ES256 as raw R||S, RS256 as PKCS#1 v1.5; and their
 * verification (RS256, PS256, ES256, EdDSA) with a public key from a JWK */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include "credkit/base64.h"
#include "credkit/json.h"
#include "credkit/jws.h"

#define ES256_COORD  32 /* bytes of R and of S */
#define RSA_MIN_BITS 2048
#define ED25519_LEN  32
#define JWK_PART_MAX 1024 /* bytes of one decoded member: n of a 8192-bit key */

/* The signature over input: raw R||S for ES256 (JWS, RFC 7518 3.4), PKCS#1 v1.5 for RS256.
 * Caller frees *ret. */
static int sign(EVP_PKEY *pkey, bool es256, const char *input, size_t len, unsigned char **ret,
                size_t *ret_len)
{
    EVP_MD_CTX *ctx = NULL;
    EVP_PKEY_CTX *pctx = NULL; /* owned by ctx */
    ECDSA_SIG *sig = NULL;
    unsigned char *der = NULL, *raw = NULL;
    size_t der_len = 0;
    int r;

    ctx = EVP_MD_CTX_new();
    if (!ctx) {
        r = -ENOMEM;
        goto out;
    }
    if (EVP_DigestSignInit(ctx, &pctx, EVP_sha256(), NULL, pkey) != 1 ||
        (!es256 && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1) ||
        EVP_DigestSign(ctx, NULL, &der_len, (const unsigned char *)input, len) != 1) {
        r = -EIO;
        goto out;
    }
    der = malloc(der_len);
    if (!der) {
        r = -ENOMEM;
        goto out;
    }
    if (EVP_DigestSign(ctx, der, &der_len, (const unsigned char *)input, len) != 1) {
        r = -EIO;
        goto out;
    }
    if (!es256) {
        *ret = der;
        der = NULL;
        *ret_len = der_len;
        r = 0;
        goto out;
    }

    /* OpenSSL gives ECDSA-Sig-Value in DER; JOSE wants R and S, 32 bytes each */
    const unsigned char *p = der;
    sig = d2i_ECDSA_SIG(NULL, &p, (long)der_len);
    if (!sig) {
        r = -EIO;
        goto out;
    }
    const BIGNUM *br = NULL, *bs = NULL;
    ECDSA_SIG_get0(sig, &br, &bs);
    raw = malloc(2 * ES256_COORD);
    if (!raw) {
        r = -ENOMEM;
        goto out;
    }
    if (BN_bn2binpad(br, raw, ES256_COORD) != ES256_COORD ||
        BN_bn2binpad(bs, raw + ES256_COORD, ES256_COORD) != ES256_COORD) {
        r = -EIO;
        goto out;
    }
    *ret = raw;
    raw = NULL;
    *ret_len = 2 * ES256_COORD;
    r = 0;
out:
    ERR_clear_error();
    ECDSA_SIG_free(sig);
    free(raw);
    free(der);
    EVP_MD_CTX_free(ctx);
    return r;
}

int jws_sign(struct evp_pkey_st *pkey, bool es256, const char *input, size_t len, char **ret)
{
    unsigned char *sig = NULL;
    size_t sig_len = 0;
    int r = sign(pkey, es256, input, len, &sig, &sig_len);
    if (r < 0)
        return r;
    *ret = base64url_encode(sig, sig_len);
    free(sig);
    return *ret ? 0 : -ENOMEM;
}

/* ---- verification ------------------------------------------------------------------------ */

int jws_alg_from_name(const char *name, enum jws_alg *ret)
{
    static const struct {
        const char *name;
        enum jws_alg alg;
    } algs[] = {
        {"RS256", JWS_RS256},
        {"PS256", JWS_PS256},
        {"ES256", JWS_ES256},
        {"EdDSA", JWS_EDDSA},
    };
    for (size_t i = 0; name && i < sizeof(algs) / sizeof(algs[0]); i++)
        if (strcmp(name, algs[i].name) == 0) {
            *ret = algs[i].alg;
            return 0;
        }
    return -ENOTSUP;
}

/* A base64url member of jwk, decoded: 1 to JWK_PART_MAX bytes (exactly want when want != 0).
 * Caller frees *ret. */
static int jwk_part(struct json_object *jwk, const char *name, size_t want, unsigned char **ret,
                    size_t *ret_len)
{
    const char *s = json_get_string(jwk, name);
    size_t n = 0;
    char *raw = s ? base64url_decode(s, strlen(s), &n) : NULL;
    if (!raw || n == 0 || n > JWK_PART_MAX || (want && n != want)) {
        free(raw);
        return -EINVAL;
    }
    *ret = (unsigned char *)raw;
    *ret_len = n;
    return 0;
}

/* A public key from the parameters in bld, of type name ("RSA", "EC"). */
static int key_fromdata(const char *name, OSSL_PARAM_BLD *bld, EVP_PKEY **ret)
{
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, name, NULL);
    EVP_PKEY *pkey = NULL;
    int r = -EINVAL;
    if (!params || !ctx) {
        r = -ENOMEM;
        goto out;
    }
    if (EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
        goto out;
    *ret = pkey;
    r = 0;
out:
    OSSL_PARAM_free(params);
    EVP_PKEY_CTX_free(ctx);
    return r;
}

static int rsa_from_jwk(struct json_object *jwk, EVP_PKEY **ret)
{
    unsigned char *n = NULL, *e = NULL;
    size_t n_len = 0, e_len = 0;
    BIGNUM *bn = NULL, *be = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    EVP_PKEY *pkey = NULL;
    int r = jwk_part(jwk, "n", 0, &n, &n_len);
    if (r >= 0)
        r = jwk_part(jwk, "e", 0, &e, &e_len);
    if (r < 0)
        goto out;
    bn = BN_bin2bn(n, (int)n_len, NULL);
    be = BN_bin2bn(e, (int)e_len, NULL);
    bld = OSSL_PARAM_BLD_new();
    if (!bn || !be || !bld || OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) != 1 ||
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) != 1) {
        r = -ENOMEM;
        goto out;
    }
    /* a short modulus is a key anyone can forge with */
    if (BN_num_bits(bn) < RSA_MIN_BITS) {
        r = -EINVAL;
        goto out;
    }
    r = key_fromdata("RSA", bld, &pkey);
    if (r < 0)
        goto out;
    *ret = pkey;
out:
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
    free(n);
    free(e);
    return r;
}

static int ec_from_jwk(struct json_object *jwk, EVP_PKEY **ret)
{
    unsigned char pub[1 + 2 * ES256_COORD] = {0x04};
    unsigned char *x = NULL, *y = NULL;
    size_t x_len = 0, y_len = 0;
    OSSL_PARAM_BLD *bld = NULL;
    EVP_PKEY_CTX *check = NULL;
    EVP_PKEY *pkey = NULL;
    const char *crv = json_get_string(jwk, "crv");
    if (!crv || strcmp(crv, "P-256") != 0)
        return -ENOTSUP;
    int r = jwk_part(jwk, "x", ES256_COORD, &x, &x_len);
    if (r >= 0)
        r = jwk_part(jwk, "y", ES256_COORD, &y, &y_len);
    if (r < 0)
        goto out;
    memcpy(pub + 1, x, ES256_COORD);
    memcpy(pub + 1 + ES256_COORD, y, ES256_COORD);
    bld = OSSL_PARAM_BLD_new();
    if (!bld ||
        OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) != 1 ||
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub)) != 1) {
        r = -ENOMEM;
        goto out;
    }
    r = key_fromdata("EC", bld, &pkey);
    if (r < 0)
        goto out;
    /* a point off the curve invites invalid-curve attacks */
    check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    if (!check || EVP_PKEY_public_check(check) != 1) {
        r = -EINVAL;
        goto out;
    }
    *ret = pkey;
    pkey = NULL;
out:
    EVP_PKEY_CTX_free(check);
    EVP_PKEY_free(pkey);
    OSSL_PARAM_BLD_free(bld);
    free(x);
    free(y);
    return r;
}

static int okp_from_jwk(struct json_object *jwk, EVP_PKEY **ret)
{
    unsigned char *x = NULL;
    size_t x_len = 0;
    const char *crv = json_get_string(jwk, "crv");
    if (!crv || strcmp(crv, "Ed25519") != 0)
        return -ENOTSUP;
    int r = jwk_part(jwk, "x", ED25519_LEN, &x, &x_len);
    if (r < 0)
        return r;
    EVP_PKEY *pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, x_len);
    free(x);
    if (!pkey)
        return -EINVAL;
    *ret = pkey;
    return 0;
}

int jws_key_from_jwk(struct json_object *jwk, struct evp_pkey_st **ret)
{
    const char *kty =
        jwk && json_object_is_type(jwk, json_type_object) ? json_get_string(jwk, "kty") : NULL;
    int r;
    if (!kty)
        return -EINVAL;
    if (strcmp(kty, "RSA") == 0)
        r = rsa_from_jwk(jwk, ret);
    else if (strcmp(kty, "EC") == 0)
        r = ec_from_jwk(jwk, ret);
    else if (strcmp(kty, "OKP") == 0)
        r = okp_from_jwk(jwk, ret);
    else
        r = -ENOTSUP;
    ERR_clear_error();
    return r;
}

/* JOSE's R||S as the DER ECDSA-Sig-Value OpenSSL verifies. Caller frees *ret. */
static int es256_der(const unsigned char *raw, size_t len, unsigned char **ret, size_t *ret_len)
{
    if (len != 2 * ES256_COORD)
        return -EBADMSG;
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *br = BN_bin2bn(raw, ES256_COORD, NULL);
    BIGNUM *bs = BN_bin2bn(raw + ES256_COORD, ES256_COORD, NULL);
    unsigned char *der = NULL;
    int r = -ENOMEM;
    if (!sig || !br || !bs || ECDSA_SIG_set0(sig, br, bs) != 1)
        goto out;
    br = bs = NULL; /* sig's now */
    int n = i2d_ECDSA_SIG(sig, &der);
    if (n <= 0)
        goto out;
    *ret = der;
    *ret_len = (size_t)n;
    r = 0;
out:
    BN_free(br);
    BN_free(bs);
    ECDSA_SIG_free(sig);
    return r;
}

static bool key_fits(EVP_PKEY *pkey, enum jws_alg alg)
{
    switch (alg) {
    case JWS_RS256:
    case JWS_PS256:
        return EVP_PKEY_is_a(pkey, "RSA") && EVP_PKEY_get_bits(pkey) >= RSA_MIN_BITS;
    case JWS_ES256:
        return EVP_PKEY_is_a(pkey, "EC") && EVP_PKEY_get_bits(pkey) == 256;
    case JWS_EDDSA:
        return EVP_PKEY_is_a(pkey, "ED25519");
    }
    return false;
}

int jws_verify(struct evp_pkey_st *pkey, enum jws_alg alg, const char *input, size_t len,
               const char *sig, size_t sig_len)
{
    EVP_MD_CTX *ctx = NULL;
    EVP_PKEY_CTX *pctx = NULL; /* owned by ctx */
    unsigned char *raw = NULL, *der = NULL;
    size_t raw_len = 0, der_len = 0;
    int r;
    if (!pkey || !key_fits(pkey, alg))
        return -EKEYREJECTED;
    raw = (unsigned char *)base64url_decode(sig, sig_len, &raw_len);
    if (!raw) {
        r = -EBADMSG;
        goto out;
    }
    if (alg == JWS_ES256) {
        r = es256_der(raw, raw_len, &der, &der_len);
        if (r < 0)
            goto out;
    }
    ctx = EVP_MD_CTX_new();
    if (!ctx) {
        r = -ENOMEM;
        goto out;
    }
    if (EVP_DigestVerifyInit(ctx, &pctx, alg == JWS_EDDSA ? NULL : EVP_sha256(), NULL, pkey) != 1 ||
        (alg == JWS_PS256 && (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
                              EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 32) != 1 ||
                              EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) != 1)) ||
        (alg == JWS_RS256 && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1)) {
        r = -EKEYREJECTED;
        goto out;
    }
    /* one-shot: Ed25519 has no streaming form */
    r = EVP_DigestVerify(ctx, der ? der : raw, der ? der_len : raw_len,
                         (const unsigned char *)input, len) == 1
            ? 0
            : -EBADMSG;
out:
    ERR_clear_error();
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der); /* i2d_ECDSA_SIG's */
    free(raw);
    return r;
}
