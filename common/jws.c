/* jws.c - JWS signatures with OpenSSL: ES256 as raw R||S, RS256 as PKCS#1 v1.5 */
#include <errno.h>
#include <stdlib.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "credkit/base64.h"
#include "credkit/jws.h"

#define ES256_COORD 32 /* bytes of R and of S */

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
