/* dpop.h - DPoP (RFC 9449): a key that proves possession, and the proofs it signs.
 *
 * A DPoP-bound access token is only good together with a fresh proof, a JWT signed with the
 * private key the token was bound to, on every request that presents it: mcp-auth sends one on
 * each token request, mcp-bridge on each request to the MCP server. Both build them here, so the
 * proof has one shape: header {"typ": "dpop+jwt", "alg": "ES256", "jwk": the public key},
 * claims {jti, htm, htu, iat, and ath and nonce when given}.
 *
 * The key is ES256 (P-256) only. It travels as a private JWK (RFC 7517: kty, crv, x, y, d),
 * which is a secret: dpop_key_write_jwk() writes it into a buffer the caller made secret, and
 * dpop_key_from_json() wipes nothing of the caller's (the caller wipes its JSON). A key is
 * reference counted, so that an answer and the connections using it can share it; the last
 * dpop_key_unref() frees it (OpenSSL clears the private scalar). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/buf.h"
#include "credkit/err.h"
#include "credkit/macro.h"

/* The only algorithm: the one every DPoP server must accept in practice (RFC 9449 5.1). */
#define DPOP_ALG "ES256"

/* The longest nonce kept from a server (DPoP-Nonce), in bytes. */
#define DPOP_NONCE_MAX 512

struct dpop_key;

/* A fresh P-256 key pair from OpenSSL's CSPRNG. -ENOMEM, -EIO. Caller unrefs. */
int dpop_key_generate(struct dpop_key **ret) _must_check_;

/* The key of a private JWK (a JSON object: kty "EC", crv "P-256", x, y, d in base64url).
 * -EINVAL with e saying which member is wrong (never a value) for anything else, a point not
 * on the curve or a d that does not match it. Caller unrefs. */
int dpop_key_from_json(struct json_object *jwk, struct dpop_key **ret, struct err *e) _must_check_;

/* dpop_key_from_json() over the text of one. */
int dpop_key_from_text(const char *text, size_t len, struct dpop_key **ret,
                       struct err *e) _must_check_;

/* Appends the private JWK, compact JSON (kty, crv, x, y, d), to out, which should be secret.
 * -E2BIG, -ENOMEM, -EIO. */
int dpop_key_write_jwk(const struct dpop_key *k, struct buf *out) _must_check_;

/* The RFC 7638 thumbprint of the public key, base64url(SHA-256) (the cnf.jkt a server binds
 * the token to). Caller frees. */
int dpop_key_thumbprint(const struct dpop_key *k, char **ret) _must_check_;

/* Another reference to k (NULL-safe; returns k). */
struct dpop_key *dpop_key_ref(struct dpop_key *k);
/* Drops a reference; the last one frees. NULL-safe. */
void dpop_key_unref(struct dpop_key *k);

/* A proof for one request: htm the method, htu the request URL (its query and fragment are
 * left out, RFC 9449 4.2), iat the Unix time, a random jti; ath = base64url(SHA-256(token))
 * when access_token is not NULL; nonce when not NULL (it must be dpop_nonce_valid()). -EINVAL
 * for an htu that is not an http(s) URL or a bad nonce, -ENOMEM, -EIO. Caller frees (not a
 * secret: it is good for one request only, but it is not logged either). */
int dpop_proof(const struct dpop_key *k, const char *htm, const char *htu, const char *access_token,
               const char *nonce, int64_t iat, char **ret) _must_check_;

/* Whether s[0..len) may be a DPoP nonce: 1 to DPOP_NONCE_MAX characters of NQCHAR (visible
 * ASCII but '"' and '\', RFC 9449 8.1). */
bool dpop_nonce_valid(const char *s, size_t len);

/* Whether a WWW-Authenticate value, or an OAuth error code, says use_dpop_nonce: a DPoP
 * challenge with error="use_dpop_nonce" (RFC 9449 9). */
bool dpop_challenge_wants_nonce(const char *challenge);
