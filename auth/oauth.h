/* oauth.h - the authorization server's endpoints: token, registration, revocation, device.
 *
 * Each call is one bounded HTTP request. Client authentication at the token and revocation
 * endpoints follows the registration: client_secret_basic (id and secret form-urlencoded
 * before base64, RFC 6749 section 2.3.1), client_secret_post, private_key_jwt (a signed
 * assertion, crypto.h), or none (client_id in the body). OAuth errors come back as data
 * (error, error_description) so the flow can react to invalid_grant and invalid_client. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/dpop.h"
#include "credkit/err.h"
#include "credkit/macro.h"

struct oauth_client {
    const char *client_id;
    const char *client_secret; /* NULL for public clients */
    const char *auth_method;   /* "none", "client_secret_basic", "client_secret_post",
                                  "private_key_jwt"; NULL: basic with a secret, else none */
    const char *assertion;     /* private_key_jwt: the signed JWT */
    /* DPoP (RFC 9449 5): oauth_token() sends a proof signed with this key, retries once with
     * the server's nonce on use_dpop_nonce, and takes a token of type DPoP. NULL: bearer only */
    const struct dpop_key *dpop;
};

/* The longest lifetime taken from an answer's "expires_in" (ten years): a larger one is read as
 * this, so that now + it can never overflow. */
#define OAUTH_LIFETIME_MAX_S ((int64_t)10 * 365 * 24 * 3600)

struct token_response {
    long status;
    char *access_token; /* secret */
    char *token_type;
    char *refresh_token; /* secret; NULL when none was issued */
    int64_t expires_in;  /* seconds; -1 when absent */
    char *scope;         /* NULL when absent (= as requested) */
    char *account;       /* who signed in, from an id_token's claims (jwt_account()); NULL */
    char *error;         /* OAuth error code; NULL on success */
    char *error_description;
};

/* POSTs the form params (NULL-terminated name, value pairs; values may be secrets) to the
 * token endpoint with the client's authentication. Returns 0 when the server answered with
 * either tokens or an OAuth error (check ret->error); < 0 for network failures and answers
 * that are neither (with a message). A success without access_token is -EBADMSG. With
 * client->dpop, the request carries a DPoP proof, a 400 use_dpop_nonce with a DPoP-Nonce is
 * answered once with a proof holding that nonce, and token_type "DPoP" is taken (else only
 * "Bearer"). */
int oauth_token(const char *endpoint, const struct oauth_client *client, const char *const *params,
                int64_t timeout_ms, struct token_response *ret, struct err *e) _must_check_;

void token_response_release(struct token_response *t);

/* Whether token[0..len) may be sent as "Authorization: Bearer <token>": an RFC 6750
 * b64token (NULL: no). oauth_token() refuses an answer whose access token is not one. */
bool oauth_bearer_token_valid(const char *token, size_t len);

/* RFC 8693 token exchange at an identity provider: subject_token (an ID token) for an
 * identity assertion authorization grant (ID-JAG) meant for audience (the MCP server's
 * authorization server) and resource. Caller secure_free()s *ret. */
int oauth_token_exchange(const char *endpoint, const struct oauth_client *client,
                         const char *subject_token, const char *audience, const char *resource,
                         const char *scope, int64_t timeout_ms, char **ret,
                         struct err *e) _must_check_;

struct registration {
    char *client_id;
    char *client_secret; /* secret; NULL for public clients */
    char *auth_method;   /* token_endpoint_auth_method as registered */
    int64_t client_secret_expires_at;
    char *client_uri;   /* RFC 7592 registration_client_uri; NULL when not offered */
    char *access_token; /* its registration_access_token (secret); NULL */
};

/* Asks an RFC 7592 client configuration endpoint whether the client still exists: 1 yes, 0
 * no (401, 403 or 404), negative when it cannot tell (network, other answers). */
int oauth_client_exists(const char *client_uri, const char *access_token, int64_t timeout_ms);

/* What a dynamic registration says of the client, as the consent screen shows it: the
 * entry's "oauth.clientName", "oauth.clientUri", "oauth.logoUri". Each NULL when not given:
 * mcp-auth's own name, no client_uri, no logo_uri. */
struct oauth_client_meta {
    const char *name;
    const char *uri;
    const char *logo_uri;
};

/* RFC 7591 dynamic registration of a public native client for redirect_uri (grants
 * authorization_code and refresh_token, plus the device code grant when device), described by
 * meta (NULL: mcp-auth's name only). -EBADMSG when the answer has no client_id; OAuth errors
 * become messages. */
int oauth_register(const char *endpoint, const char *redirect_uri, const char *scope, bool device,
                   const struct oauth_client_meta *meta, int64_t timeout_ms,
                   struct registration *ret, struct err *e) _must_check_;

void registration_release(struct registration *r);

/* RFC 7009 revocation of token (hint "access_token" or "refresh_token"). */
int oauth_revoke(const char *endpoint, const struct oauth_client *client, const char *token,
                 const char *hint, int64_t timeout_ms, struct err *e) _must_check_;

struct device_authorization {
    char *device_code; /* secret */
    char *user_code;
    char *verification_uri;
    char *verification_uri_complete; /* NULL when absent */
    int64_t expires_in;
    int64_t interval; /* seconds, default 5 */
};

/* RFC 8628 device authorization request. */
int oauth_device_authorize(const char *endpoint, const struct oauth_client *client,
                           const char *scope, const char *resource, int64_t timeout_ms,
                           struct device_authorization *ret, struct err *e) _must_check_;

void device_authorization_release(struct device_authorization *d);
