/* jws.h - JWS signatures (RFC 7515) with OpenSSL keys, as JWTs carry them.
 *
 * One signer for every JWT the suite makes: mcp-auth's client assertions (ES256 or RS256, from a
 * PEM key) and the DPoP proofs of mcp-auth and the bridge (ES256, credkit/dpop.h). ES256 is
 * the raw R||S form JOSE wants (RFC 7518 3.4), not OpenSSL's DER; RS256 is PKCS#1 v1.5. The key
 * is an EVP_PKEY, taken as its struct so that this header does not pull in OpenSSL's.
 * The other half checks signatures, as the bridge does of the JWT access tokens its HTTP agents
 * send: the public key from the issuer's JWK, then RS256, PS256, ES256 or EdDSA. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/macro.h"

struct evp_pkey_st; /* EVP_PKEY */

/* The signature of input[0..len) with pkey (ES256 when es256, else RS256), base64url without
 * padding, in *ret. -ENOMEM, -EIO (OpenSSL refused: a key of another type). Caller frees. */
int jws_sign(struct evp_pkey_st *pkey, bool es256, const char *input, size_t len,
             char **ret) _must_check_;

/* ---- verification (a resource server checking the JWT access tokens it is sent) ---------- */

struct json_object;

/* The signature algorithms verified: those an authorization server signs access tokens with.
 * "none" and the HMAC ones are never taken: a public key must decide. */
enum jws_alg {
    JWS_RS256, /* RSA PKCS#1 v1.5, SHA-256 */
    JWS_PS256, /* RSA-PSS, SHA-256, salt of 32 bytes */
    JWS_ES256, /* ECDSA P-256, SHA-256, raw R||S */
    JWS_EDDSA, /* Ed25519 */
};

/* The algorithm of a JWS header's "alg" in *ret: 0, or -ENOTSUP for any other (none, HS256 ...). */
int jws_alg_from_name(const char *name, enum jws_alg *ret) _must_check_;

/* The public key of a JWK (RFC 7517): kty RSA (n, e; 2048 bits at least), EC crv P-256 (x, y,
 * on the curve) or OKP crv Ed25519 (x). -ENOTSUP for another kind, -EINVAL for a malformed
 * one, -ENOMEM. Caller frees with EVP_PKEY_free(). */
int jws_key_from_jwk(struct json_object *jwk, struct evp_pkey_st **ret) _must_check_;

/* Whether sig (base64url, sig_len bytes) is alg's signature of input[0..len) by pkey: 0 when
 * it is, -EBADMSG when it is not (or is malformed), -EKEYREJECTED when the key is not of alg's
 * kind (an RSA key for ES256), -ENOMEM. */
int jws_verify(struct evp_pkey_st *pkey, enum jws_alg alg, const char *input, size_t len,
               const char *sig, size_t sig_len) _must_check_;
