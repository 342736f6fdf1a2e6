/* grant.h - the ways to get tokens (OAuth grants), each behind one table of operations.
 *
 * A sign-in (flow.c) prepares what every grant shares - discovery, the entry loaded under its
 * lock, the cap on sign-ins, the scope to ask for - into a struct grant_session and hands the
 * getting of the tokens to the grant that the entry's "oauth.grant" names; a refresh
 * (refresh.c) asks the grant to renew the tokens when there is no refresh token. Neither asks
 * which grant it has: they read the table's properties. Adding a grant is a file defining one
 * struct grant_ops, declared below and listed in the registry (grant.c); the configuration
 * parser (oauth_config.c) takes the names it accepts from the registry.
 *
 * The grants:
 *   authorization_code  the browser and the loopback redirect, or a device code (grant_code.c)
 *   client_credentials  a client secret or private_key_jwt, no person (grant_machine.c)
 *   jwt-bearer          enterprise cross-app access: an identity provider's ID token exchanged
 *                       for an identity assertion grant (grant_machine.c)
 *
 * Also here, what the grants share to talk to the token endpoint. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/file.h"
#include "credkit/macro.h"

#include "discovery.h"
#include "flow.h"
#include "oauth.h"
#include "tokens.h"

/* One sign-in, as the generic part prepared it. Everything is borrowed from flow.c except te
 * and lock, which the session holds for it: a grant changes te, and may drop the lock while a
 * person acts (grant_session_pause()/grant_session_resume()). */
struct grant_session {
    const struct auth_target *t;
    const struct login_opts *o;
    const struct auth_ui *ui;
    const struct discovery *d;
    struct token_entry *te; /* loaded under the lock; the new tokens go here */
    struct file_lock *lock; /* NULL while paused */
    const char *scope;      /* what to ask for; NULL: nothing in particular */
    bool had_tokens;        /* te held tokens before this sign-in */
    int64_t http_timeout_ms;
};

struct grant_ops {
    const char *name; /* as "oauth.grant" spells it */
    bool needs_idp;   /* the settings must have an "oauth.idp" object */
    /* No person takes part: the tokens can be had whenever they are needed (`header` signs in
     * by itself, and a server that does not ask for authorization is signed in to anyway). */
    bool unattended;
    /* Gets new tokens into s->te (store_tokens()), with the client they belong to; the caller
     * saves s->te on success. Called under the entry's lock. When the tokens were asked for and
     * the answer was a failure, it calls grant_session_failed() before returning (a failure
     * before that point, such as a client that cannot be registered, keeps nothing). */
    int (*sign_in)(struct grant_session *s, struct err *e);
    /* New tokens into te without a person, for a refresh that finds no refresh token, under
     * the entry's lock; NULL when the grant cannot (a sign-in is needed). */
    int (*renew)(const struct auth_target *t, const struct discovery *d, struct token_entry *te,
                 int64_t http_timeout_ms, struct err *e);
};

extern const struct grant_ops grant_authorization_code;
extern const struct grant_ops grant_client_credentials;
extern const struct grant_ops grant_jwt_bearer;

/* The grant named name; NULL names the default (authorization_code). NULL for an unknown
 * name. Static. */
const struct grant_ops *grant_find(const char *name);

/* The i-th grant of the registry, in the order messages list them; NULL past the last. */
const struct grant_ops *grant_at(size_t i);

/* The grant of a target: the one its settings name (validated when they were parsed). */
const struct grant_ops *grant_of(const struct auth_target *t);

/* Writes what the session learned so far (a registration is worth keeping even if the sign-in
 * fails - not at the price of the tokens held: only when there were none, or new ones replace
 * them), then drops the lock so that nobody waits on it while a person is at the browser or
 * types a code (`header` callers refresh under it). */
int grant_session_pause(struct grant_session *s, struct err *e) _must_check_;

/* Takes the lock again after grant_session_pause(). r is the result of what ran meanwhile:
 * returned as it is when the lock is had, else the lock's error (with e) unless r already
 * failed. */
int grant_session_resume(struct grant_session *s, int r, struct err *e) _must_check_;

/* After a failed attempt, under the entry's lock (nothing when s->lock is NULL): writes the
 * entry as stored now, plus what the attempt learned - its rate bookkeeping, and a
 * registration it made, unless adopting that would drop tokens that still work. Never the
 * tokens loaded before the attempt: meanwhile another process may have refreshed them, and the
 * refresh token held may be rotated away. A failure to write is said through s->ui. */
void grant_session_failed(struct grant_session *s);

/* One request to the token endpoint of d (params: NULL-terminated name, value pairs; a NULL
 * value is left out), counted against the per-minute cap in te (ratelimit.h). As
 * oauth_token(): 0 when the server answered, tokens or an OAuth error in *ret. */
int grant_request_tokens(struct token_entry *te, const struct discovery *d,
                         const struct oauth_client *client, const char *const *params,
                         int64_t timeout_ms, struct token_response *ret,
                         struct err *e) _must_check_;

/* The RFC 8707 resource to send: the server's, unless the settings say "sendResource": false
 * (then NULL). Borrowed. */
const char *grant_resource(const struct auth_target *t, const struct discovery *d);

/* Whether an OAuth error code says the server does not know or accept the client. */
bool grant_is_client_error(const char *error);

/* -EPROTO with "<what>: the authorization server answered <error>[: <description>]". */
int grant_oauth_error(const char *what, const struct token_response *tr, struct err *e);
