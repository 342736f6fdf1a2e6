/* jws.h - JWS signatures (RFC 7515) with OpenSSL keys, as JWTs carry them.
 *
 * One signer for every JWT the suite makes: mcp-auth's client assertions (ES256 or RS256, from a
 * PEM key) and the DPoP proofs of mcp-auth and the bridge (ES256, credkit/dpop.h). ES256 is
 * the raw R||S form JOSE wants (RFC 7518 3.4), not OpenSSL's DER; RS256 is PKCS#1 v1.5. The key
 * is an EVP_PKEY, taken as its struct so that this header does not pull in OpenSSL's. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/macro.h"

struct evp_pkey_st; /* EVP_PKEY */

/* The signature of input[0..len) with pkey (ES256 when es256, else RS256), base64url without
 * padding, in *ret. -ENOMEM, -EIO (OpenSSL refused: a key of another type). Caller frees. */
int jws_sign(struct evp_pkey_st *pkey, bool es256, const char *input, size_t len,
             char **ret) _must_check_;
