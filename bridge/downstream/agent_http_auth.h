/* agent_http_auth.h - the HTTP listener as an OAuth 2.1 resource server: agents send JWT access
 * tokens (RFC 9068) of one issuer, checked against that issuer's keys (MCP authorization;
 * RFC 9728 for the metadata, RFC 6750 for the challenges, RFC 8707 for the audience).
 *
 * ah_auth_new() starts fetching the issuer's metadata (RFC 8414, else OpenID discovery) and
 * then its jwks_uri, on the loop's libcurl multi (http_curl_network(): proxies and CAs apply).
 * ah_auth_check() judges one Authorization header: the signature by the key its "kid" names
 * (jws.h), then iss, aud (the bridge's resource URL), exp and nbf with a small skew, the scopes
 * required. A token whose key is not known yet waits (AH_AUTH_PENDING) for the keys, which are
 * fetched again for an unknown kid at most once per AH_AUTH_REFETCH_MS; on_keys tells the owner
 * when a fetch ended, so that the requests waiting ask again. jwt_check() is the pure half (a
 * token against a key set at a given time). The agent's token is judged here and nowhere else:
 * nothing of it goes upstream. Not thread-safe; callbacks from the loop. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"

#include "core/loop.h"

#define AH_AUTH_SKEW_S     60           /* clock skew allowed on exp and nbf */
#define AH_AUTH_REFETCH_MS (5 * 1000)   /* the keys fetched again at most this often */
#define AH_AUTH_FETCH_MS   (10 * 1000)  /* one fetch of metadata or keys, at most */
#define AH_AUTH_DOC_MAX    (256 * 1024) /* bytes of a metadata document or key set */
#define AH_AUTH_TOKEN_MAX  (16 * 1024)  /* bytes of a token */
#define AH_AUTH_SUB_MAX    128

struct json_object;
struct ah_auth;

/* What a token must be: issued by issuer, for audience, with every one of scopes. */
struct jwt_rules {
    const char *issuer;        /* required: "iss" equals it */
    const char *audience;      /* required: "aud" is it or an array holding it */
    const char *const *scopes; /* each a word of "scope"; NULL-ended; NULL: none */
    int64_t skew_s;            /* allowed on exp and nbf */
};

/* Checks the compact JWS token against the JWK Set jwks (a JSON object with "keys"; NULL: none
 * known) at now (seconds since the epoch). 0, with the subject ("sub", printable ASCII, else
 * "?") in ret_sub (AH_AUTH_SUB_MAX bytes); else -ENOKEY (no key of its kid: fetch the keys
 * again), -EBADMSG (not a JWT, a bad signature), -ENOTSUP (an algorithm not taken),
 * -EKEYEXPIRED (expired, not yet valid), -EACCES (another issuer or audience, or bound to a
 * key: "cnf"), -EPERM (a scope missing); *ret_why says why (static text). */
int jwt_check(const char *token, struct json_object *jwks, const struct jwt_rules *rules,
              int64_t now, char *ret_sub, const char **ret_why) _must_check_;

enum ah_auth_verdict {
    AH_AUTH_OK,
    AH_AUTH_PENDING,     /* the issuer's keys are on their way: ask again after on_keys */
    AH_AUTH_MISSING,     /* 401: no bearer token */
    AH_AUTH_INVALID,     /* 401 invalid_token */
    AH_AUTH_SCOPE,       /* 403 insufficient_scope */
    AH_AUTH_UNAVAILABLE, /* 503: the issuer's keys cannot be had */
};

struct ah_auth_opts {
    const char *issuer;        /* required: http(s) URL (http only to a loopback host) */
    const char *resource;      /* required: the bridge's URL as agents see it (the metadata's) */
    const char *audience;      /* what "aud" must hold; NULL: resource */
    const char *const *scopes; /* required of every token, NULL-ended; NULL: none */
};

/* A fetch of the keys ended (with them or not): the requests that got AH_AUTH_PENDING ask
 * again. */
typedef void (*ah_auth_keys_fn)(void *userdata);

/* Starts fetching the issuer's keys. o is copied. -EINVAL (a URL refused), -ENOMEM, with e
 * set. Caller frees with ah_auth_free(). */
int ah_auth_new(struct loop *l, struct log *log, const struct ah_auth_opts *o,
                ah_auth_keys_fn on_keys, void *userdata, struct ah_auth **ret,
                struct err *e) _must_check_;

/* Stops any fetch. NULL-safe. */
void ah_auth_free(struct ah_auth *a);

/* Judges an Authorization header (NULL: none); *ret_why says why for a refusal (static). The
 * subject of a token taken is logged at -v (the token never is). */
enum ah_auth_verdict ah_auth_check(struct ah_auth *a, const char *authorization,
                                   const char **ret_why);

/* The WWW-Authenticate value of a refusal (v one of MISSING, INVALID, SCOPE): Bearer with
 * resource_metadata, scope, and error for INVALID and SCOPE. Caller frees; NULL on ENOMEM. */
char *ah_auth_challenge(const struct ah_auth *a, enum ah_auth_verdict v, const char *why);

/* Whether path is the protected-resource metadata's: /.well-known/oauth-protected-resource,
 * alone or followed by the resource's path. */
bool ah_auth_is_metadata_path(const struct ah_auth *a, const char *path);

/* The protected-resource metadata (RFC 9728), JSON. Borrowed. */
const char *ah_auth_metadata(const struct ah_auth *a);
