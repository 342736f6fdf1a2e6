/* dpop.h - DPoP in mcp-auth: which token requests carry a proof, and the key kept with the
 * tokens.
 *
 * When the authorization server's metadata lists ES256 in dpop_signing_alg_values_supported,
 * and the MCP server takes DPoP tokens (its 401 challenged with the DPoP scheme, or its
 * protected resource metadata lists ES256 or requires bound tokens: a server that knows only
 * Bearer must not get a token it cannot use), every new grant (a sign-in, the
 * client_credentials and jwt-bearer grants, the device flow) uses a key pair made for it, and
 * its token request carries a proof (credkit/dpop.h); a refresh uses the key of the tokens it
 * refreshes (the server bound the refresh token to it).
 * When the answer is a DPoP token, the private key is kept in the entry (token_entry.dpop_key,
 * a secret like the refresh token) for `header` to hand to the bridge; a bearer answer keeps
 * none. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "discovery.h"
#include "oauth.h"
#include "tokens.h"

/* Whether the authorization server of d takes DPoP proofs signed with ES256. */
bool auth_dpop_offered(const struct discovery *d);

/* Whether a new grant for te gets DPoP (see above): the authorization server offers it and the
 * MCP server takes it (or te was DPoP-bound before). */
bool auth_dpop_wanted(const struct token_entry *te, const struct discovery *d);

/* Whether te's access token is DPoP-bound: token_type "DPoP" and a key kept. */
bool auth_dpop_bound(const struct token_entry *te);

/* oauth_token() at d's token endpoint for te, as the header says: the key chosen by the grant
 * in params (its "grant_type" first), and on a success te->dpop_key set to it (DPoP) or
 * dropped (Bearer). A stored key that cannot be read is a -EBADMSG that asks for a sign-in.
 * ret as oauth_token(). */
int auth_dpop_token(struct token_entry *te, const struct discovery *d,
                    const struct oauth_client *client, const char *const *params,
                    int64_t timeout_ms, struct token_response *ret, struct err *e) _must_check_;

/* The key of te (auth_dpop_bound()), read back from the entry. Caller unrefs. */
int auth_dpop_key(const struct token_entry *te, struct dpop_key **ret, struct err *e) _must_check_;
