/* crypto.c - PKCE, base64, and the private_key_jwt client assertion, on OpenSSL 3 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/jws.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/util.h"

#include "crypto.h"

#define PKCE_VERIFIER_BYTES 32 /* 43 characters of base64url */
#define PKCE_VERIFIER_MIN   43
#define PKCE_VERIFIER_MAX   128
#define KEY_FILE_MAX        (64u * 1024u)
#define ASSERTION_LIFETIME  300
#define ASSERTION_JTI_BYTES 16
#define ASSERTION_MAX       (64u * 1024u)
#define RS256_MIN_BITS      2048 /* RFC 7518 3.3 */

char *jwt_account(const char *jwt)
{
    static const char *const claims[] = {"email", "preferred_username", "sub"};
    const char *dot1 = jwt ? strchr(jwt, '.') : NULL;
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot2 || strchr(dot2 + 1, '.'))
        return NULL;
    size_t n = 0;
    char *payload = base64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &n);
    if (!payload)
        return NULL;
    struct json_tokener *tok = json_tokener_new();
    struct json_object *o = tok ? json_tokener_parse_ex(tok, payload, (int)n) : NULL;
    char *account = NULL;
    for (size_t i = 0; !account && json_object_is_type(o, json_type_object) && i < 3; i++) {
        struct json_object *v = NULL;
        if (json_object_object_get_ex(o, claims[i], &v) &&
            json_object_is_type(v, json_type_string) && json_object_get_string_len(v) > 0 &&
            json_object_get_string_len(v) <= 256)
            account = strdup(json_object_get_string(v));
    }
    json_object_put(o);
    json_tokener_free(tok);
    secure_free_len(payload, n); /* an access token's claims: not for anyone else to read */
    return account;
}

static bool is_verifier_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

int pkce_challenge_of(const char *verifier, char **ret)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char *c = NULL;
    int r;

    if (!verifier)
        return -EINVAL;
    size_t n = strnlen(verifier, PKCE_VERIFIER_MAX + 1);
    if (n < PKCE_VERIFIER_MIN || n > PKCE_VERIFIER_MAX)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!is_verifier_char(verifier[i]))
            return -EINVAL;

    if (EVP_Digest(verifier, n, md, &mdlen, EVP_sha256(), NULL) != 1) {
        ERR_clear_error();
        r = -EIO;
        goto out;
    }
    c = base64url_encode(md, mdlen);
    if (!c) {
        r = -ENOMEM;
        goto out;
    }
    *ret = c;
    c = NULL;
    r = 0;
out:
    secure_wipe(md, sizeof(md));
    return r;
}

int pkce_new(char **ret_verifier, char **ret_challenge)
{
    char *v = NULL, *c = NULL;
    int r = secure_random_token(PKCE_VERIFIER_BYTES, &v);
    if (r < 0)
        goto out;
    r = pkce_challenge_of(v, &c);
    if (r < 0)
        goto out;
    *ret_verifier = v;
    v = NULL;
    *ret_challenge = c;
    c = NULL;
    r = 0;
out:
    secure_free(v);
    free(c);
    return r;
}

/* OpenSSL would otherwise ask for a passphrase on the terminal: library code never prompts */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    return -1;
}

/* Loads the PEM private key at path. dp is the path for messages. */
static int key_load(const char *path, const char *dp, EVP_PKEY **ret, struct err *e)
{
    struct buf pem;
    BIO *bio = NULL;
    EVP_PKEY *pkey = NULL;
    int r;

    buf_init_secret(&pem, KEY_FILE_MAX);
    /* refuses a key that group or others can read, with the chmod that fixes it */
    r = file_read(path, FILE_SECRET, &pem, e);
    if (r < 0)
        goto out;
    if (pem.len == 0) {
        r = err_set(e, -EINVAL, "'%s' is empty: expected a PEM private key", dp);
        goto out;
    }
    bio = BIO_new_mem_buf(pem.data, (int)pem.len); /* pem.len <= KEY_FILE_MAX */
    if (!bio) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    pkey = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
    if (!pkey) {
        const char *text = buf_str(&pem);
        ERR_clear_error();
        if (strstr(text, "ENCRYPTED"))
            r = err_set(e, -EINVAL,
                        "'%s' is protected by a passphrase, which mcp-auth cannot ask for: "
                        "store the key without one (openssl pkey -in old.pem -out new.pem) "
                        "and chmod 600 it",
                        dp);
        else if (!strstr(text, "-----BEGIN "))
            r = err_set(e, -EINVAL, "'%s' is not a PEM file: expected a 'BEGIN PRIVATE KEY' block",
                        dp);
        else
            r = err_set(e, -EINVAL,
                        "'%s' holds no readable private key: expected a PEM EC P-256 (ES256) "
                        "or RSA (RS256) private key",
                        dp);
        goto out;
    }
    *ret = pkey;
    pkey = NULL;
    r = 0;
out:
    EVP_PKEY_free(pkey);
    BIO_free(bio);
    buf_release(&pem);
    return r;
}

/* Checks that pkey can sign *alg (picking it when NULL); *ret_es256 tells the signature form. */
static int key_check(EVP_PKEY *pkey, const char *alg, const char *dp, bool *ret_es256,
                     struct err *e)
{
    int id = EVP_PKEY_get_base_id(pkey);
    bool es256;

    if (id == EVP_PKEY_EC)
        es256 = true;
    else if (id == EVP_PKEY_RSA)
        es256 = false;
    else {
        const char *type = EVP_PKEY_get0_type_name(pkey);
        return err_set(
            e, -EINVAL, "'%s' holds a%s %s key: use an EC P-256 key (ES256) or an RSA key (RS256)",
            dp, type && strchr("aeiouAEIOU", type[0]) ? "n" : "", type ? type : "unknown");
    }
    if (alg && strcmp(alg, es256 ? "ES256" : "RS256") != 0)
        return err_set(e, -EINVAL, "'%s' holds %s key, which cannot sign %s: use %s", dp,
                       es256 ? "an EC" : "an RSA", alg,
                       es256 ? "ES256 with this key, or an RSA key for RS256"
                             : "RS256 with this key, or an EC P-256 key for ES256");

    if (es256) {
        char group[80] = "";
        size_t glen = 0;
        if (EVP_PKEY_get_group_name(pkey, group, sizeof(group), &glen) != 1) {
            ERR_clear_error();
            (void)snprintf(group, sizeof(group), "unknown");
        }
        if (strcmp(group, "prime256v1") != 0 && strcmp(group, "P-256") != 0)
            return err_set(e, -EINVAL,
                           "'%s' holds an EC key on the curve '%s': ES256 needs P-256 "
                           "(openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256)",
                           dp, group);
    } else {
        int bits = EVP_PKEY_get_bits(pkey);
        if (bits < RS256_MIN_BITS)
            return err_set(e, -EINVAL, "'%s' holds a %d-bit RSA key: RS256 needs at least %d bits",
                           dp, bits, RS256_MIN_BITS);
    }
    *ret_es256 = es256;
    return 0;
}

static int add_str(struct json_object *o, const char *key, const char *v)
{
    struct json_object *s = json_object_new_string(v);
    if (!s || json_object_object_add(o, key, s) < 0) {
        json_object_put(s);
        return -ENOMEM;
    }
    return 0;
}

static int add_int(struct json_object *o, const char *key, int64_t v)
{
    struct json_object *n = json_object_new_int64(v);
    if (!n || json_object_object_add(o, key, n) < 0) {
        json_object_put(n);
        return -ENOMEM;
    }
    return 0;
}

/* Appends base64url(compact JSON of o) to b. */
static int append_json_b64(struct buf *b, struct json_object *o)
{
    const char *s =
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!s)
        return -ENOMEM;
    char *enc = base64url_encode(s, strlen(s));
    if (!enc)
        return -ENOMEM;
    int r = buf_append_str(b, enc);
    free(enc);
    return r;
}

/* Appends the signing input of the assertion to out: the header and the claims, each
 * base64url-encoded JSON, joined by '.'. -ENOMEM and -E2BIG without a message (the caller
 * words them). */
static int assertion_input(struct buf *out, bool es256, const char *kid, const char *client_id,
                           const char *audience, struct err *e)
{
    struct json_object *header = NULL, *claims = NULL;
    char *jti = NULL;
    int r = secure_random_token(ASSERTION_JTI_BYTES, &jti);
    if (r < 0)
        return err_set(e, r, "cannot draw random bytes for the client assertion");
    int64_t now = now_unix();
    header = json_object_new_object();
    claims = json_object_new_object();
    r = header && claims ? 0 : -ENOMEM;
    if (r >= 0)
        r = add_str(header, "alg", es256 ? "ES256" : "RS256");
    if (r >= 0)
        r = add_str(header, "typ", "JWT");
    if (r >= 0 && kid && *kid)
        r = add_str(header, "kid", kid);
    if (r >= 0)
        r = add_str(claims, "iss", client_id);
    if (r >= 0)
        r = add_str(claims, "sub", client_id);
    if (r >= 0)
        r = add_str(claims, "aud", audience);
    if (r >= 0)
        r = add_int(claims, "iat", now);
    if (r >= 0)
        r = add_int(claims, "exp", now + ASSERTION_LIFETIME);
    if (r >= 0)
        r = add_str(claims, "jti", jti);
    if (r >= 0)
        r = append_json_b64(out, header);
    if (r >= 0)
        r = buf_append_char(out, '.');
    if (r >= 0)
        r = append_json_b64(out, claims);
    json_object_put(header);
    json_object_put(claims);
    secure_free(jti);
    return r;
}

int jwt_client_assertion(const char *pem_path, const char *alg, const char *kid,
                         const char *client_id, const char *audience, char **ret, struct err *e)
{
    EVP_PKEY *pkey = NULL;
    char *disp = NULL, *sig_b64 = NULL;
    struct buf out;
    bool es256 = false;
    int r;

    buf_init_secret(&out, ASSERTION_MAX);
    if (!pem_path || !*pem_path) {
        r = err_set(e, -EINVAL, "no private key file for the client assertion");
        goto out;
    }
    if (!client_id || !*client_id || !audience || !*audience) {
        r = err_set(e, -EINVAL, "a client assertion needs a client ID and an audience");
        goto out;
    }
    if (alg && strcmp(alg, "ES256") != 0 && strcmp(alg, "RS256") != 0) {
        r = err_set(e, -EINVAL, "unsupported signing algorithm '%.32s': use ES256 or RS256", alg);
        goto out;
    }
    disp = path_display(pem_path);
    const char *dp = disp ? disp : pem_path;

    r = key_load(pem_path, dp, &pkey, e);
    if (r >= 0)
        r = key_check(pkey, alg, dp, &es256, e);
    if (r >= 0)
        r = assertion_input(&out, es256, kid, client_id, audience, e);
    if (r < 0)
        goto out;
    r = jws_sign(pkey, es256, out.data, out.len, &sig_b64);
    if (r < 0) {
        if (r == -EIO)
            r = err_set(e, -EIO, "cannot sign the client assertion with '%s'", dp);
        goto out;
    }
    r = buf_append_char(&out, '.');
    if (r >= 0)
        r = buf_append_str(&out, sig_b64);
    if (r < 0)
        goto out;
    char *s = buf_detach(&out);
    if (!s) {
        r = -ENOMEM;
        goto out;
    }
    *ret = s;
    r = 0;
out:
    if (r == -ENOMEM)
        r = err_set(e, -ENOMEM, "out of memory");
    else if (r == -E2BIG)
        r = err_set(e, -E2BIG, "the client assertion would be larger than %u bytes", ASSERTION_MAX);
    EVP_PKEY_free(pkey);
    free(sig_b64);
    free(disp);
    buf_release(&out);
    return r;
}
