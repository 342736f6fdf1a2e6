/* oauth_config.h - mcp-auth's own section of an mcp.json entry: its "oauth" object.
 *
 * The configuration loader (credkit/mcp_config.h) keeps each entry as written (struct
 * mcp_server's raw); mcp-auth reads its settings from there itself, so that a new grant or a new
 * setting changes auth/ only. The validation and its messages are those of the loader: a wrong
 * type, a blank clientId, an unknown grant or key algorithm, an idp object without its token
 * endpoint or ID token, a client metadata URL that is not https with a path (or loopback http),
 * a redirect URI the loopback listener cannot receive, a callback URL that is no http(s) URL,
 * a callback port out of range, a clientSecret template with a syntax
 * error, an authorization server metadata URL that is not https (or loopback http), a logo URI
 * that is not http(s), an authorization parameter the flow sets itself. A clientSecret naming an unset variable is not an error here: the secret is needed at
 * sign-in and refresh only, where a missing variable is reported; a stored token stays usable
 * without it. Unknown keys are ignored; a key whose value is null counts as absent. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

/* The settings of one entry. Strings NULL when absent. */
struct oauth_config {
    char *client_id;
    char *client_secret;       /* a template ("${VAR}"), may be a literal secret: wiped on free */
    char *client_metadata_url; /* Client ID Metadata Document URL */
    char *scope;               /* space-separated scopes to request */
    char *redirect_uri;        /* fixes the loopback redirect (pre-registered clients) */
    char *callback_url;        /* "callbackUrl": the redirect URI in front of the loopback
                                  listener (an ingress, a port forward) */
    uint16_t callback_port;    /* "callbackPort": the listener's port; 0: any */
    char *account;             /* "account": the account name this entry signs in as
                                  (tokens.h's label); NULL: the default account */
    char *grant;               /* as written: one of the grants of grant.h; NULL: the default,
                                  "authorization_code". The pi adapter's "grantType" is read as
                                  this ("authorization_code" or "client_credentials") */
    char *client_name;         /* "clientName": client_name of a dynamic registration; NULL:
                                  mcp-auth's own */
    char *client_uri;          /* "clientUri": client_uri of a dynamic registration (https) */
    char *logo_uri;            /* "logoUri": logo_uri of a dynamic registration (http(s)) */
    /* "authServerMetadataUrl": the authorization server's metadata document, used as it is
     * instead of the discovery through the server's protected resource metadata (https, or
     * http on loopback); its issuer is still checked against the URL unless skip_issuer_check */
    char *as_metadata_url;
    /* "skipIssuerMetadataValidation": true: the metadata's issuer is taken as it is, not
     * checked against where it was found (RFC 8414 3.3); a known-misconfigured server only */
    bool skip_issuer_check;
    /* "authorizationParams": extra parameters of the authorization request, "name=value"
     * (NULL-terminated; NULL when none); never one the flow sets itself */
    char **authorization_params;
    char *private_key_file;   /* PEM key for private_key_jwt */
    char *private_key_alg;    /* "ES256" or "RS256"; NULL: from the key type */
    bool refresh_sends_scope; /* quirk: send scope on refresh requests ("refreshScope": true) */
    bool omit_resource;       /* quirk: never send the RFC 8707 resource ("sendResource": false) */
    /* "idp": the enterprise identity provider for grant "jwt-bearer" (cross-app access) */
    char *idp_issuer;
    char *idp_token_endpoint;
    char *idp_client_id;
    char *idp_client_secret; /* template; wiped on free */
    char *idp_id_token;      /* template: "${VAR}" naming where the ID token is */
    /* "assertion": for grant "jwt-bearer" without "idp", the workload's own JWT (RFC 7523,
     * workload identity federation), a template ("${VAR}"); wiped on free */
    char *assertion;
};

/* Parses the "oauth" object of entry (the entry object as written; borrowed). An entry without
 * one, and a NULL entry, give an empty configuration (every string NULL, the booleans false).
 * -EINVAL with the reason in e (without file or server: "\"oauth.grant\" must be ..."), never
 * quoting a secret; -ENOMEM. Caller frees *ret with oauth_config_free(). */
int oauth_config_parse(struct json_object *entry, struct oauth_config **ret,
                       struct err *e) _must_check_;

/* oauth_config_parse() on the raw object of a configuration entry (borrowed), with the reason
 * of a failure prefixed as the loader prefixes an entry's: "'<file>': server '<name>': ...".
 * Caller frees *ret with oauth_config_free(). */
int oauth_config_parse_server(const struct mcp_server *s, struct oauth_config **ret,
                              struct err *e) _must_check_;

/* Frees c, wiping the secret templates. NULL is fine. */
void oauth_config_free(struct oauth_config *c);

/* Whether url can be a callback URL override (oauth.callbackUrl, --callback-url): http:// or
 * https://, with a host, without query, fragment or user name. -EINVAL with a message that
 * names it as label. */
int oauth_check_callback_url(const char *url, const char *label, struct err *e) _must_check_;
