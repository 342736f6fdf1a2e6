/* test_crypto.c - PKCE, base64, and client assertions verified with the public key */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "credkit/secmem.h"
#include "credkit/util.h"

#include "crypto.h"
#include "tests.h"

static char *tpath(const char *name)
{
    static char p[8][4096];
    static unsigned i;
    char *s = p[i++ % 8];
    int n = snprintf(s, 4096, "%s/%s", tests_tmpdir(), name);
    if (n < 0 || n >= 4096)
        abort();
    return s;
}

static void put(const char *path, const void *content, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK_INT(write(fd, content, len), (long long)len);
    CHECK_INT(fchmod(fd, mode), 0);
    close(fd);
}

/* Writes key as PEM (PKCS#8, or the traditional "EC PRIVATE KEY" form) to a file. */
static void put_key(const char *path, EVP_PKEY *key, bool traditional, mode_t mode)
{
    BIO *bio = BIO_new(BIO_s_mem());
    CHECK(bio != NULL);
    int ok = traditional ? PEM_write_bio_PrivateKey_traditional(bio, key, NULL, NULL, 0, NULL, NULL)
                         : PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL);
    CHECK_INT(ok, 1);
    char *data = NULL;
    long n = BIO_get_mem_data(bio, &data);
    CHECK(n > 0);
    put(path, data, (size_t)n, mode);
    BIO_free(bio);
}

static int b64val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

/* base64url (no padding) of s[0..n) into a fresh buffer; -1 on bad input. */
static long b64url_decode(const char *s, size_t n, unsigned char **ret)
{
    unsigned char *out = malloc(n * 3 / 4 + 3);
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    if (!out || n % 4 == 1) {
        free(out);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int v = b64val(s[i]);
        if (v < 0) {
            free(out);
            return -1;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    out[o] = 0;
    *ret = out;
    return (long)o;
}

static void test_base64(void)
{
    static const struct {
        const char *in, *url, *std;
    } v[] = {
        {"", "", ""},
        {"f", "Zg", "Zg=="},
        {"fo", "Zm8", "Zm8="},
        {"foo", "Zm9v", "Zm9v"},
        {"foob", "Zm9vYg", "Zm9vYg=="},
        {"fooba", "Zm9vYmE", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < ELEMENTSOF(v); i++) {
        char *u = base64url_encode(v[i].in, strlen(v[i].in));
        char *s = base64_encode(v[i].in, strlen(v[i].in));
        CHECK_STR(u, v[i].url);
        CHECK_STR(s, v[i].std);
        free(u);
        secure_free(s);
    }
    /* the two alphabets differ exactly in 62 and 63 */
    const unsigned char x[] = {0xfb, 0xff, 0xbf, 0xfe};
    char *u = base64url_encode(x, sizeof(x));
    char *s = base64_encode(x, sizeof(x));
    CHECK_STR(u, "-_-__g");
    CHECK_STR(s, "+/+//g==");
    free(u);
    secure_free(s);
    /* client_secret_basic's user:password */
    s = base64_encode("Aladdin:open sesame", 19);
    CHECK_STR(s, "QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
    secure_free(s);
}

/* base64url as JWTs write it (no padding), and whom a JWT names, for status */
static void test_jwt_account(void)
{
    size_t n = 0;
    char *d = base64url_decode("aGVsbG8_Pg", 10, &n);
    CHECK(d && n == 7 && memcmp(d, "hello?>", 7) == 0);
    free(d);
    d = base64url_decode("YQ", 2, &n);
    CHECK(d && n == 1 && d[0] == 'a');
    free(d);
    d = base64url_decode("YWI", 3, &n);
    CHECK(d && n == 2 && memcmp(d, "ab", 2) == 0);
    free(d);
    CHECK(base64url_decode("YQ==", 4, &n) == NULL); /* padding is not JWT's */
    CHECK(base64url_decode("Y", 1, &n) == NULL);
    CHECK(base64url_decode("a+b/", 4, &n) == NULL); /* the standard alphabet is not url's */

    char *a =
        jwt_account("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1MSIsImVtYWlsIjoibWVAZXhhbXBsZS5jb20ifQ.sig");
    CHECK_STR(a, "me@example.com"); /* email first */
    free(a);
    a = jwt_account("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4IiwicHJlZmVycmVkX3VzZXJuYW1lIjoiYWxpY2UifQ.s");
    CHECK_STR(a, "alice"); /* then the user name */
    free(a);
    a = jwt_account("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1c2VyLTcifQ.");
    CHECK_STR(a, "user-7"); /* then the subject */
    free(a);
    CHECK(jwt_account("opaque-token-abc") == NULL);
    CHECK(jwt_account("a.b") == NULL);
    CHECK(jwt_account("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1c2VyLTcifQ.x.y") == NULL);
    CHECK(jwt_account("eyJhbGciOiJub25lIn0.bm90IGpzb24.s") == NULL); /* not JSON */
    CHECK(jwt_account(NULL) == NULL);
}

static void test_pkce_vector(void)
{
    /* RFC 7636 appendix B */
    char *c = NULL;
    CHECK_INT(pkce_challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", &c), 0);
    CHECK_STR(c, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    free(c);

    char *sentinel = (char *)"unchanged";
    c = sentinel;
    CHECK_INT(pkce_challenge_of("short", &c), -EINVAL);
    CHECK_INT(pkce_challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjX!", &c), -EINVAL);
    CHECK_INT(pkce_challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjX=", &c), -EINVAL);
    CHECK_INT(pkce_challenge_of(NULL, &c), -EINVAL);
    char longv[130];
    memset(longv, 'a', 129);
    longv[129] = 0;
    CHECK_INT(pkce_challenge_of(longv, &c), -EINVAL);
    CHECK(c == sentinel);
    longv[128] = 0; /* 128 is the most allowed; every allowed character */
    memcpy(longv, "AZaz09-._~", 10);
    CHECK_INT(pkce_challenge_of(longv, &c), 0);
    CHECK_INT(strlen(c), 43);
    free(c);
}

static void test_pkce_new(void)
{
    char *v[8] = {0}, *c[8] = {0};
    for (int i = 0; i < 8; i++) {
        CHECK_INT(pkce_new(&v[i], &c[i]), 0);
        CHECK_INT(strlen(v[i]), 43);
        CHECK_INT(
            strspn(v[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"), 43);
        CHECK_INT(strlen(c[i]), 43);
        char *again = NULL;
        CHECK_INT(pkce_challenge_of(v[i], &again), 0);
        CHECK_STR(again, c[i]);
        free(again);
        for (int j = 0; j < i; j++) {
            CHECK(strcmp(v[i], v[j]) != 0);
            CHECK(strcmp(c[i], c[j]) != 0);
        }
    }
    for (int i = 0; i < 8; i++) {
        secure_free(v[i]);
        secure_free(c[i]);
    }
}

/* Splits a JWT, checks its header and claims and verifies its signature with key. */
static void verify_jwt(const char *jwt, EVP_PKEY *key, const char *alg, const char *kid,
                       const char *client_id, const char *aud, char **ret_jti)
{
    const char *d1 = strchr(jwt, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    CHECK(d1 && d2 && !strchr(d2 + 1, '.'));
    if (!d1 || !d2)
        return;
    unsigned char *h = NULL, *c = NULL, *sig = NULL;
    long hl = b64url_decode(jwt, (size_t)(d1 - jwt), &h);
    long cl = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &c);
    long sl = b64url_decode(d2 + 1, strlen(d2 + 1), &sig);
    CHECK(hl > 0 && cl > 0 && sl > 0);
    if (hl <= 0 || cl <= 0 || sl <= 0)
        goto out;

    struct json_object *hj = json_tokener_parse((char *)h);
    struct json_object *cj = json_tokener_parse((char *)c);
    struct json_object *v;
    CHECK(hj && cj);
    CHECK(json_object_object_get_ex(hj, "alg", &v) && strcmp(json_object_get_string(v), alg) == 0);
    CHECK(json_object_object_get_ex(hj, "typ", &v) &&
          strcmp(json_object_get_string(v), "JWT") == 0);
    if (kid)
        CHECK(json_object_object_get_ex(hj, "kid", &v) &&
              strcmp(json_object_get_string(v), kid) == 0);
    else
        CHECK(!json_object_object_get_ex(hj, "kid", &v));
    CHECK_INT(json_object_object_length(hj), kid ? 3 : 2);
    CHECK(json_object_object_get_ex(cj, "iss", &v) &&
          strcmp(json_object_get_string(v), client_id) == 0);
    CHECK(json_object_object_get_ex(cj, "sub", &v) &&
          strcmp(json_object_get_string(v), client_id) == 0);
    CHECK(json_object_object_get_ex(cj, "aud", &v) && strcmp(json_object_get_string(v), aud) == 0);
    int64_t iat = 0, exp = 0, now = now_unix();
    CHECK(json_object_object_get_ex(cj, "iat", &v) && json_object_is_type(v, json_type_int));
    iat = json_object_get_int64(v);
    CHECK(json_object_object_get_ex(cj, "exp", &v) && json_object_is_type(v, json_type_int));
    exp = json_object_get_int64(v);
    CHECK(iat <= now && iat >= now - 5);
    CHECK_INT(exp, iat + 300);
    CHECK(json_object_object_get_ex(cj, "jti", &v) && json_object_get_string_len(v) >= 22);
    if (ret_jti && v)
        *ret_jti = strdup(json_object_get_string(v));
    json_object_put(hj);
    json_object_put(cj);

    /* the signature, over "header.claims" */
    unsigned char *der = NULL;
    size_t der_len = (size_t)sl;
    const unsigned char *to_verify = sig;
    if (strcmp(alg, "ES256") == 0) {
        CHECK_INT(sl, 64);
        ECDSA_SIG *es = ECDSA_SIG_new();
        CHECK_INT(ECDSA_SIG_set0(es, BN_bin2bn(sig, 32, NULL), BN_bin2bn(sig + 32, 32, NULL)), 1);
        int n = i2d_ECDSA_SIG(es, &der);
        CHECK(n > 0);
        der_len = (size_t)n;
        to_verify = der;
        ECDSA_SIG_free(es);
    } else {
        CHECK_INT(sl, EVP_PKEY_get_size(key));
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    CHECK_INT(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
    CHECK_INT(
        EVP_DigestVerify(ctx, to_verify, der_len, (const unsigned char *)jwt, (size_t)(d2 - jwt)),
        1);
    /* and a changed claim breaks it: the check above can fail */
    char *tampered = strndup(jwt, (size_t)(d2 - jwt));
    tampered[d1 - jwt + 3] ^= 1;
    CHECK_INT(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
    CHECK(EVP_DigestVerify(ctx, to_verify, der_len, (unsigned char *)tampered, strlen(tampered)) !=
          1);
    ERR_clear_error();
    free(tampered);
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der);
out:
    free(h);
    free(c);
    free(sig);
}

static void test_es256(void)
{
    struct err e = ERR_INIT;
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    CHECK(key != NULL);
    const char *p = tpath("ec.pem");
    put_key(p, key, false, 0600);

    char *jwt = NULL, *jwt2 = NULL, *jti1 = NULL, *jti2 = NULL;
    CHECK_INT(
        jwt_client_assertion(p, "ES256", "key-1", "client/1", "https://as.example/token", &jwt, &e),
        0);
    if (jwt)
        verify_jwt(jwt, key, "ES256", "key-1", "client/1", "https://as.example/token", &jti1);
    /* alg picked from the key, no kid, the traditional PEM form */
    put_key(p, key, true, 0400);
    CHECK_INT(jwt_client_assertion(p, NULL, NULL, "c", "https://as", &jwt2, &e), 0);
    if (jwt2)
        verify_jwt(jwt2, key, "ES256", NULL, "c", "https://as", &jti2);
    CHECK(jti1 && jti2 && strcmp(jti1, jti2) != 0);
    secure_free(jwt);
    secure_free(jwt2);
    free(jti1);
    free(jti2);

    /* an RSA key for ES256 */
    char *out = (char *)"unchanged";
    EVP_PKEY *rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    const char *rp = tpath("rsa-for-es.pem");
    put_key(rp, rsa, false, 0600);
    CHECK_INT(jwt_client_assertion(rp, "ES256", NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "holds an RSA key, which cannot sign ES256");
    CHECK_STR(out, "unchanged");
    EVP_PKEY_free(rsa);

    /* P-384 is not ES256 */
    EVP_PKEY *p384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
    const char *p3 = tpath("p384.pem");
    put_key(p3, p384, false, 0600);
    CHECK_INT(jwt_client_assertion(p3, "ES256", NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "curve 'secp384r1': ES256 needs P-256");
    CHECK_INT(jwt_client_assertion(p3, NULL, NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_STR(out, "unchanged");
    EVP_PKEY_free(p384);
    EVP_PKEY_free(key);
}

static void test_rs256(void)
{
    struct err e = ERR_INIT;
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    CHECK(key != NULL);
    const char *p = tpath("rsa.pem");
    put_key(p, key, false, 0600);

    char *jwt = NULL;
    CHECK_INT(jwt_client_assertion(p, "RS256", NULL, "my-client", "https://as/token", &jwt, &e), 0);
    if (jwt)
        verify_jwt(jwt, key, "RS256", NULL, "my-client", "https://as/token", NULL);
    secure_free(jwt);
    jwt = NULL;
    CHECK_INT(jwt_client_assertion(p, NULL, "k\"2", "my-client", "https://as/token", &jwt, &e), 0);
    if (jwt)
        verify_jwt(jwt, key, "RS256", "k\"2", "my-client", "https://as/token", NULL);
    secure_free(jwt);

    /* an EC key for RS256 */
    char *out = (char *)"unchanged";
    EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    const char *ep = tpath("ec-for-rs.pem");
    put_key(ep, ec, false, 0600);
    CHECK_INT(jwt_client_assertion(ep, "RS256", NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "holds an EC key, which cannot sign RS256");
    EVP_PKEY_free(ec);

    /* too small for RS256 */
    EVP_PKEY *small = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
    const char *sp = tpath("rsa1024.pem");
    put_key(sp, small, false, 0600);
    CHECK_INT(jwt_client_assertion(sp, NULL, NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "1024-bit RSA key: RS256 needs at least 2048 bits");
    EVP_PKEY_free(small);

    /* neither EC nor RSA */
    EVP_PKEY *ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    const char *dp = tpath("ed.pem");
    put_key(dp, ed, false, 0600);
    CHECK_INT(jwt_client_assertion(dp, NULL, NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "ED25519 key: use an EC P-256 key (ES256) or an RSA key (RS256)");
    EVP_PKEY_free(ed);
    CHECK_STR(out, "unchanged");
    EVP_PKEY_free(key);
}

static void test_bad_key_files(void)
{
    struct err e = ERR_INIT;
    char *out = (char *)"unchanged";
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");

    /* readable by others: refused with the chmod that fixes it */
    const char *p = tpath("open.pem");
    put_key(p, key, false, 0644);
    CHECK_INT(jwt_client_assertion(p, "ES256", NULL, "c", "a", &out, &e), -EACCES);
    CHECK_CONTAINS(e.msg, "chmod 600");
    CHECK_CONTAINS(e.msg, "open.pem");
    put_key(p, key, false, 0640);
    CHECK_INT(jwt_client_assertion(p, "ES256", NULL, "c", "a", &out, &e), -EACCES);

    /* missing */
    CHECK_INT(jwt_client_assertion(tpath("nope.pem"), NULL, NULL, "c", "a", &out, &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "nope.pem' does not exist");

    /* garbage */
    const char *g = tpath("garbage.pem");
    put(g, "hello world\n", 12, 0600);
    CHECK_INT(jwt_client_assertion(g, NULL, NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "garbage.pem' is not a PEM file");
    /* a PEM frame around junk (spelled in pieces so it never looks like a committed key) */
    const char *block = "-----BEGIN "
                        "PRIVATE KEY-----\nAAAAAAAA\n-----END "
                        "PRIVATE KEY-----\n";
    put(g, block, strlen(block), 0600);
    CHECK_INT(jwt_client_assertion(g, NULL, NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "holds no readable private key");
    put(g, "", 0, 0600);
    CHECK_INT(jwt_client_assertion(g, NULL, NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "is empty");

    /* a passphrase: refused, never prompted for (stdin is not even looked at) */
    BIO *bio = BIO_new(BIO_s_mem());
    CHECK_INT(
        PEM_write_bio_PrivateKey(bio, key, EVP_aes_256_cbc(), (unsigned char *)"pw", 2, NULL, NULL),
        1);
    char *data = NULL;
    long n = BIO_get_mem_data(bio, &data);
    const char *enc = tpath("enc.pem");
    put(enc, data, (size_t)n, 0600);
    BIO_free(bio);
    CHECK_INT(jwt_client_assertion(enc, NULL, NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "protected by a passphrase");

    /* arguments */
    const char *ok = tpath("ok.pem");
    put_key(ok, key, false, 0600);
    CHECK_INT(jwt_client_assertion(ok, "HS256", NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "unsupported signing algorithm 'HS256'");
    CHECK_INT(jwt_client_assertion(ok, "ES256", NULL, "", "a", &out, &e), -EINVAL);
    CHECK_INT(jwt_client_assertion(ok, "ES256", NULL, "c", NULL, &out, &e), -EINVAL);
    CHECK_INT(jwt_client_assertion(NULL, "ES256", NULL, "c", "a", &out, &e), -EINVAL);
    CHECK_STR(out, "unchanged");
    CHECK_INT(ERR_peek_error(), 0); /* nothing left on OpenSSL's error queue */
    EVP_PKEY_free(key);
}

TESTS_MAIN(test_base64, test_jwt_account, test_pkce_vector, test_pkce_new, test_es256, test_rs256,
           test_bad_key_files)
