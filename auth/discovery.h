/* discovery.h - from an MCP server URL to its authorization server (spec §3 of
 * docs/auth.md; MCP authorization, RFC 9728, RFC 8414, OpenID Connect Discovery).
 *
 *  1. Probe: an unauthenticated MCP server/discover POST (2026-07-28; any era's server
 *     protecting its endpoint answers it with 401); a 401's WWW-Authenticate (parsed with
 *     challenge.h) may name the protected resource metadata and the scope to ask for.
 *  2. Protected resource metadata, in order: the challenge's resource_metadata URL, then
 *     /.well-known/oauth-protected-resource/<path>, then the root variant. Its "resource" must
 *     match the server (same origin and a path prefix); otherwise discovery fails and no
 *     authorization may start.
 *  3. Authorization server metadata of authorization_servers[0], path-aware: RFC 8414 then
 *     OpenID discovery; its "issuer" must equal the issuer asked for.
 *  4. Back-compat (2025-03-26): no protected resource metadata at all -> the server's origin
 *     is the issuer; without metadata there either, default endpoints /authorize, /token,
 *     /register, unless /token is not there (no_oauth: the server wants a token of its own).
 * Every endpoint must be https (loopback http excepted). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"

struct discovery {
    char *server_url;            /* canonical */
    char *resource;              /* what to send as RFC 8707 resource: the PRM's "resource" as
                                    published (it must name this server), else the canonical
                                    server URL */
    char *resource_metadata_url; /* where the PRM came from; NULL when none */
    struct json_object *prm;     /* NULL: the server has none */
    char *issuer;
    struct json_object *as; /* the AS metadata, or the back-compat defaults */
    bool as_defaults;       /* no AS metadata: default endpoints */
    char *challenge_scope;  /* "scope" of the 401 challenge, NULL when none */
    bool needs_auth;        /* the probe got 401 */
    bool dpop_challenge;    /* ... with a challenge of the DPoP scheme (RFC 9449 7.1) */
    bool no_oauth;          /* needs_auth, neither protected resource metadata nor authorization
                      server metadata was found (as_defaults), and the default token endpoint
                      is not there either (404, 405, 410 to an empty POST): not an OAuth
                      server, but one that wants a token of its own */
    int64_t fetched_at;
};

/* What an entry's "oauth" object changes in the discovery (oauth_config.h). */
struct discovery_opts {
    /* "authServerMetadataUrl": the authorization server's metadata is fetched from here and
     * used as it is: steps 2-4 are skipped (the probe still runs, for its challenge). Its
     * "issuer" must be the one the URL's location names (RFC 8414 3.1 or OpenID Discovery: the
     * path around the well-known segment), else the URL's origin. NULL: discovery as above. */
    const char *as_metadata_url;
    /* "skipIssuerMetadataValidation": the metadata's issuer is taken as it is, in step 3 and
     * with as_metadata_url alike, never checked against the one asked for */
    bool skip_issuer_check;
};

/* Runs steps 1-4. Each HTTP request is bounded by timeout_ms. Caller frees with
 * discovery_free(). */
int discovery_run(const char *server_url, int64_t timeout_ms, struct discovery **ret,
                  struct err *e) _must_check_;

/* discovery_run() as opts say (NULL: the same as discovery_run()). */
int discovery_run_opts(const char *server_url, int64_t timeout_ms,
                       const struct discovery_opts *opts, struct discovery **ret,
                       struct err *e) _must_check_;

/* Whether the server wants a token of its own rather than an OAuth sign-in: what
 * discovery_run() says in no_oauth. The well-known protected resource metadata is looked for
 * first, which asks the MCP server itself nothing (a caller that runs often costs an OAuth
 * server no request); only without it does the whole discovery run. *ret is written on
 * success. */
int discovery_wants_token(const char *server_url, int64_t timeout_ms, bool *ret,
                          struct err *e) _must_check_;

/* Builds a discovery from what the token store cached (no network). Takes references. */
int discovery_from_cache(const char *server_url, const char *issuer, struct json_object *as,
                         struct json_object *prm, const char *resource_metadata_url,
                         int64_t fetched_at, struct discovery **ret) _must_check_;

void discovery_free(struct discovery *d);

/* A string member of the AS metadata ("token_endpoint" ...), or NULL. Borrowed. */
const char *discovery_as_string(const struct discovery *d, const char *key);

/* Whether the AS metadata lists value in the array member key. */
bool discovery_as_lists(const struct discovery *d, const char *key, const char *value);

/* The scopes to request when none was given: the challenge's, else the PRM's scopes_supported
 * joined, else NULL. offline_access is added when the AS lists it. Caller frees. */
char *discovery_default_scope(const struct discovery *d);
