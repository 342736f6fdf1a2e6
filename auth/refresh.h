/* refresh.h - a valid access token on demand, refreshed under the entry's lock.
 *
 * What `mcp-auth header` and every program asking for a header rely on: never a prompt, never a
 * browser. A token about to expire is refreshed first; concurrent callers (other processes
 * included) cause exactly one refresh, because the refresh happens under the entry's lock after
 * reading the entry again. A grant that needs no person (grant.h) gets new tokens by itself
 * where a sign-in by a person would be required. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "flow.h"
#include "tokens.h"

/* A valid access token for the target, refreshing it first (under the entry's lock) when it
 * is expired or about to, or when force is set (the resource server refused the token before
 * its time: a 401). Never prompts and never opens a browser: AUTH_LOGIN_REQUIRED when no valid
 * token can be had, with the command to run in the message; AUTH_WANTS_TOKEN instead when nothing
 * was ever stored and the server publishes no OAuth metadata (auth_check_wants_token()): no
 * sign-in can help there. client_credentials and
 * jwt-bearer targets get a new token without a person. Caller frees *ret. */
int auth_fresh_token(const struct auth_target *t, int64_t http_timeout_ms, bool force,
                     struct token_entry **ret, struct err *e) _must_check_;

/* When a token expiring at expires_at (issued at issued_at) must be refreshed: the smaller of
 * 60 s and a quarter of its lifetime before expiry, at least 1 s. */
int64_t auth_refresh_margin(int64_t issued_at, int64_t expires_at);

/* Whether t's access token may be handed out as "Authorization: Bearer <token>": present, an
 * RFC 6750 b64token, of token type Bearer (or none). A store written by an older version or
 * edited by hand may hold one that is not: it is never sent, and counts as expired. */
bool auth_token_sendable(const struct token_entry *t);

/* Whether t holds a sendable access token that needs no refresh yet at now (unix seconds):
 * one of an unknown lifetime counts as expiring an hour after it was issued. */
bool auth_token_fresh(const struct token_entry *t, int64_t now);
