/* crypto.h - the small cryptographic pieces of OAuth, on OpenSSL.
 *
 * PKCE (RFC 7636, S256 only), base64 (credkit/base64.h, re-exported here), and the private_key_jwt client assertion (RFC 7523,
 * RFC 7521) signed with an ES256 or RS256 PEM key for client_credentials. */
#pragma once

#include <stddef.h>

#include "credkit/base64.h"
#include "credkit/err.h"
#include "credkit/macro.h"

/* A fresh PKCE pair: verifier = 43 characters of base64url from 32 CSPRNG bytes; challenge =
 * base64url(SHA-256(verifier)). Caller secure_free()s both. */
int pkce_new(char **ret_verifier, char **ret_challenge) _must_check_;

/* The S256 challenge of a verifier: base64url(SHA-256(verifier)). -EINVAL unless the verifier
 * is 43-128 characters of [A-Za-z0-9-._~] (RFC 7636 4.1). Caller frees. */
int pkce_challenge_of(const char *verifier, char **ret) _must_check_;

/* The account a JWT (an ID token, or an access token that is one) names, for people: its
 * payload's "email", else "preferred_username", else "sub". The signature is not checked: it
 * is a label shown by status, never a decision. NULL when jwt is not a JWT or names none.
 * Caller frees. */
char *jwt_account(const char *jwt);

/* A signed JWT client assertion: header {"alg", "typ": "JWT", "kid" when given}; claims iss =
 * sub = client_id, aud = audience, iat, exp = iat + 300, jti = random. The key file is PEM
 * (EC P-256 for ES256 — the signature is the raw R||S JOSE form, not DER — or RSA of at least
 * 2048 bits for RS256), without a passphrase (never prompted for); alg NULL picks it from the
 * key type. Errors, each with a message naming the file: -ENOENT when it is missing, -EACCES
 * when group or others can access it (advice: chmod 600), -EINVAL for anything that is not a
 * usable key, a key that does not fit alg (an RSA key for ES256, a P-384 key) or an alg other
 * than ES256/RS256. Caller secure_free()s. */
int jwt_client_assertion(const char *pem_path, const char *alg, const char *kid,
                         const char *client_id, const char *audience, char **ret,
                         struct err *e) _must_check_;
