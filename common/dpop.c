/* dpop.c - DPoP keys (P-256, as private JWKs) and proofs, on OpenSSL 3 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/sha.h>

#include "credkit/base64.h"
#include "credkit/challenge.h"
#include "credkit/dpop.h"
#include "credkit/json.h"
#include "credkit/jsonw.h"
#include "credkit/jws.h"
#include "credkit/secmem.h"

#define COORD     32 /* bytes of x, y and d */
#define JTI_BYTES 16
#define PROOF_MAX (16u * 1024u)
#define HTU_MAX   (8u * 1024u)
#define GROUP     "prime256v1"

struct dpop_key {
    unsigned refs;
    EVP_PKEY *pkey;
    char x[48], y[48]; /* base64url of the public coordinates */
};

struct dpop_key *dpop_key_ref(struct dpop_key *k)
{
    if (k)
        k->refs++;
    return k;
}

void dpop_key_unref(struct dpop_key *k)
{
    if (!k || --k->refs > 0)
        return;
    EVP_PKEY_free(k->pkey); /* clears the private scalar */
    free(k);
}

/* The public point's coordinates into k->x, k->y. */
static int key_fill_public(struct dpop_key *k)
{
    unsigned char pub[1 + 2 * COORD];
    size_t len = 0;
    if (EVP_PKEY_get_octet_string_param(k->pkey, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub), &len) !=
            1 ||
        len != sizeof(pub) || pub[0] != 0x04)
        return -EIO;
    char *x = base64url_encode(pub + 1, COORD), *y = base64url_encode(pub + 1 + COORD, COORD);
    int r = x && y && strlen(x) < sizeof(k->x) && strlen(y) < sizeof(k->y) ? 0 : -ENOMEM;
    if (r >= 0) {
        memcpy(k->x, x, strlen(x) + 1);
        memcpy(k->y, y, strlen(y) + 1);
    }
    free(x);
    free(y);
    return r;
}

static int key_wrap(EVP_PKEY *pkey, struct dpop_key **ret)
{
    struct dpop_key *k = calloc(1, sizeof(*k));
    if (!k) {
        EVP_PKEY_free(pkey);
        return -ENOMEM;
    }
    k->refs = 1;
    k->pkey = pkey;
    int r = key_fill_public(k);
    if (r < 0) {
        dpop_key_unref(k);
        return r;
    }
    *ret = k;
    return 0;
}

int dpop_key_generate(struct dpop_key **ret)
{
    EVP_PKEY *pkey = EVP_EC_gen(GROUP);
    ERR_clear_error();
    if (!pkey)
        return -EIO;
    return key_wrap(pkey, ret);
}

/* A base64url member of exactly COORD bytes into out. */
static int jwk_coord(struct json_object *jwk, const char *name, unsigned char *out, struct err *e)
{
    const char *s = json_get_string(jwk, name);
    size_t n = 0;
    char *raw = s ? base64url_decode(s, strlen(s), &n) : NULL;
    if (!raw || n != COORD) {
        secure_free_len(raw, raw ? n : 0);
        return err_set(e, -EINVAL, "the DPoP key's \"%s\" is not 32 bytes of base64url", name);
    }
    memcpy(out, raw, COORD);
    secure_free_len(raw, n);
    return 0;
}

int dpop_key_from_json(struct json_object *jwk, struct dpop_key **ret, struct err *e)
{
    unsigned char pub[1 + 2 * COORD], d[COORD];
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL, *check = NULL;
    EVP_PKEY *pkey = NULL;
    BIGNUM *bn = NULL;
    int r;

    if (!jwk || !json_object_is_type(jwk, json_type_object))
        return err_set(e, -EINVAL, "the DPoP key is not a JSON object");
    const char *kty = json_get_string(jwk, "kty"), *crv = json_get_string(jwk, "crv");
    if (!kty || strcmp(kty, "EC") != 0 || !crv || strcmp(crv, "P-256") != 0)
        return err_set(e, -EINVAL, "the DPoP key is not an EC P-256 key (\"kty\", \"crv\")");
    pub[0] = 0x04;
    r = jwk_coord(jwk, "x", pub + 1, e);
    if (r >= 0)
        r = jwk_coord(jwk, "y", pub + 1 + COORD, e);
    if (r >= 0)
        r = jwk_coord(jwk, "d", d, e);
    if (r < 0)
        goto out;
    bn = BN_secure_new();
    bld = OSSL_PARAM_BLD_new();
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (!bn || !bld || !ctx || !BN_bin2bn(d, COORD, bn) ||
        OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, GROUP, 0) != 1 ||
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub)) != 1 ||
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, bn) != 1 ||
        !(params = OSSL_PARAM_BLD_to_param(bld)) || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEYPAIR, params) != 1) {
        r = err_set(e, -EINVAL, "the DPoP key is not a usable P-256 key");
        goto out;
    }
    /* the public point must be on the curve and belong to d */
    check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    if (!check || EVP_PKEY_pairwise_check(check) != 1) {
        r = err_set(e, -EINVAL, "the DPoP key's public and private parts do not match");
        goto out;
    }
    r = key_wrap(pkey, ret);
    pkey = NULL;
    if (r < 0)
        r = err_set(e, r, "cannot read the DPoP key");
out:
    ERR_clear_error();
    secure_wipe(d, sizeof(d));
    EVP_PKEY_free(pkey);
    EVP_PKEY_CTX_free(check);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params); /* OSSL_PARAM_clear_free is 3.2+: the BN is secure memory */
    OSSL_PARAM_BLD_free(bld);
    BN_clear_free(bn);
    return r;
}

int dpop_key_from_text(const char *text, size_t len, struct dpop_key **ret, struct err *e)
{
    struct json_object *o = NULL;
    int r = json_parse(text, len, 4096, &o, NULL);
    if (r < 0)
        return err_set(e, -EINVAL, "the DPoP key is not JSON");
    r = dpop_key_from_json(o, ret, e);
    json_wipe_strings(o);
    json_object_put(o);
    return r;
}

int dpop_key_write_jwk(const struct dpop_key *k, struct buf *out)
{
    unsigned char d[COORD];
    BIGNUM *bn = NULL;
    char *db64 = NULL;
    int r = -EIO;
    if (EVP_PKEY_get_bn_param(k->pkey, OSSL_PKEY_PARAM_PRIV_KEY, &bn) != 1 ||
        BN_bn2binpad(bn, d, COORD) != COORD)
        goto out;
    db64 = base64url_encode(d, COORD);
    r = db64 ? buf_printf(
                   out, "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"%s\",\"y\":\"%s\",\"d\":\"%s\"}",
                   k->x, k->y, db64)
             : -ENOMEM;
out:
    ERR_clear_error();
    secure_wipe(d, sizeof(d));
    secure_free(db64);
    BN_clear_free(bn);
    return r;
}

int dpop_key_thumbprint(const struct dpop_key *k, char **ret)
{
    /* RFC 7638: the required members in lexicographic order, no white space */
    unsigned char md[SHA256_DIGEST_LENGTH];
    struct buf b;
    buf_init(&b, 512);
    int r =
        buf_printf(&b, "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"%s\",\"y\":\"%s\"}", k->x, k->y);
    if (r >= 0) {
        SHA256((const unsigned char *)b.data, b.len, md);
        *ret = base64url_encode(md, sizeof(md));
        r = *ret ? 0 : -ENOMEM;
    }
    buf_release(&b);
    return r;
}

static int append_b64(struct buf *b, const struct buf *json)
{
    char *s = base64url_encode(json->data, json->len);
    int r = s ? buf_append_str(b, s) : -ENOMEM;
    free(s);
    return r;
}

/* htu: the URL without its query and fragment. */
static int htu_of(const char *url, struct buf *out)
{
    if (strncasecmp(url, "https://", 8) != 0 && strncasecmp(url, "http://", 7) != 0)
        return -EINVAL;
    size_t n = strcspn(url, "?#");
    if (n > HTU_MAX)
        return -EINVAL;
    return jsonw_string(out, url, n);
}

int dpop_proof(const struct dpop_key *k, const char *htm, const char *htu, const char *access_token,
               const char *nonce, int64_t iat, char **ret)
{
    struct buf header, claims, out;
    char *jti = NULL, *sig = NULL;
    int r;
    if (!k || !htm || !*htm || !htu || (nonce && !dpop_nonce_valid(nonce, strlen(nonce))))
        return -EINVAL;
    buf_init(&header, 1024);
    buf_init(&claims, PROOF_MAX);
    buf_init(&out, PROOF_MAX);
    r = secure_random_token(JTI_BYTES, &jti);
    if (r >= 0)
        r = buf_printf(&header,
                       "{\"typ\":\"dpop+jwt\",\"alg\":\"" DPOP_ALG "\",\"jwk\":{\"kty\":\"EC\","
                       "\"crv\":\"P-256\",\"x\":\"%s\",\"y\":\"%s\"}}",
                       k->x, k->y);
    if (r >= 0)
        r = buf_printf(&claims, "{\"jti\":\"%s\",\"htm\":", jti);
    if (r >= 0)
        r = jsonw_string(&claims, htm, strlen(htm));
    if (r >= 0)
        r = buf_append_str(&claims, ",\"htu\":");
    if (r >= 0)
        r = htu_of(htu, &claims);
    if (r >= 0)
        r = buf_printf(&claims, ",\"iat\":%lld", (long long)iat);
    if (r >= 0 && access_token) {
        unsigned char md[SHA256_DIGEST_LENGTH];
        SHA256((const unsigned char *)access_token, strlen(access_token), md);
        char *ath = base64url_encode(md, sizeof(md));
        r = ath ? buf_printf(&claims, ",\"ath\":\"%s\"", ath) : -ENOMEM;
        free(ath);
    }
    if (r >= 0 && nonce) {
        r = buf_append_str(&claims, ",\"nonce\":");
        if (r >= 0)
            r = jsonw_string(&claims, nonce, strlen(nonce));
    }
    if (r >= 0)
        r = buf_append_char(&claims, '}');
    if (r >= 0)
        r = append_b64(&out, &header);
    if (r >= 0)
        r = buf_append_char(&out, '.');
    if (r >= 0)
        r = append_b64(&out, &claims);
    if (r >= 0)
        r = jws_sign(k->pkey, true, out.data, out.len, &sig);
    if (r >= 0)
        r = buf_printf(&out, ".%s", sig);
    if (r >= 0) {
        char *s = buf_detach(&out);
        r = s ? 0 : -ENOMEM;
        if (s)
            *ret = s;
    }
    secure_free(jti);
    free(sig);
    buf_release(&header);
    buf_release(&claims);
    buf_release(&out);
    return r;
}

bool dpop_nonce_valid(const char *s, size_t len)
{
    if (!s || len == 0 || len > DPOP_NONCE_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e || c == '"' || c == '\\')
            return false;
    }
    return true;
}

bool dpop_challenge_wants_nonce(const char *challenge)
{
    struct auth_challenges ch = {0};
    bool wants = false;
    if (!challenge)
        return false;
    if (challenges_parse(challenge, &ch, NULL) > 0) {
        const struct auth_challenge *c = challenges_find(&ch, "DPoP");
        const char *err = c ? challenge_param(c, "error") : NULL;
        wants = err && strcmp(err, "use_dpop_nonce") == 0;
    }
    challenges_release(&ch);
    return wants;
}
