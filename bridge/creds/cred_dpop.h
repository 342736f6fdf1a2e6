/* cred_dpop.h - the DPoP proofs of one HTTP connection (RFC 9449 7): what the bridge needs to
 * prove each request itself, without reading the token store.
 *
 * mcp-auth hands the key over in its headers answer (docs/helper-protocol.md, "dpop"), beside
 * "Authorization: DPoP <token>"; the upstream gives both to its transport, whose per-request
 * headers (cred_sign.h) then carry a fresh proof on every request: htm and htu of that request,
 * ath of the token, and the latest nonce the server sent (DPoP-Nonce, in any answer). The key is
 * a reference (released when replaced and when the connection goes; OpenSSL clears it), the
 * token a copy wiped likewise; neither is ever logged.
 *
 * Embedded value: struct cred_dpop d = {0}; ...; cred_dpop_release(&d). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/dpop.h"
#include "credkit/macro.h"

struct cred_dpop {
    struct dpop_key *key; /* NULL: no DPoP */
    char *token;          /* secret: the access token of "Authorization: DPoP <token>" */
    char *nonce;          /* the server's latest DPoP-Nonce; NULL */
};

/* Takes key (a new reference; NULL turns DPoP off) and the token of the "Authorization: DPoP"
 * line of headers ("Name: value", NULL-terminated), the old ones wiped. A key without such a
 * line proves requests without ath. The nonce is kept: it is the server's, not the token's.
 * -ENOMEM leaves d as it was. */
int cred_dpop_set(struct cred_dpop *d, struct dpop_key *key,
                  const char *const *headers) _must_check_;

/* Keeps nonce[0..len) for the next proofs when it is a valid one (dpop_nonce_valid()); returns
 * whether it differs from the one kept before. */
bool cred_dpop_nonce(struct cred_dpop *d, const char *nonce, size_t len);

/* "DPoP: <proof>" for one request (method, url) into *ret; -ENOENT when there is no key. Caller
 * frees. */
int cred_dpop_header(const struct cred_dpop *d, const char *method, const char *url,
                     char **ret) _must_check_;

/* Wipes and frees; d is empty after. NULL-safe. */
void cred_dpop_release(struct cred_dpop *d);
