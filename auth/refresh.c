/* refresh.c - a valid access token on demand: refresh under the entry's lock, exactly once */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credkit/secmem.h"
#include "credkit/util.h"

#include "client.h"
#include "discovery.h"
#include "dpop.h"
#include "grant.h"
#include "oauth.h"
#include "refresh.h"
#include "store.h"

#define UNKNOWN_LIFETIME_S 3600
/* Each request of the check for a server that wants a token of its own: a caller such as
 * mcp-bridge bounds the whole of `header` (10 s), and the server has just answered it. */
#define WANTS_TOKEN_TIMEOUT_MS (3 * 1000)

int64_t auth_refresh_margin(int64_t issued_at, int64_t expires_at)
{
    int64_t life = expires_at - issued_at;
    int64_t m = life > 0 ? life / 4 : 60;
    if (m > 60)
        m = 60;
    if (m < 1)
        m = 1;
    return m;
}

static int64_t effective_expiry(const struct token_entry *t)
{
    if (t->expires_at > 0)
        return t->expires_at;
    return t->issued_at + UNKNOWN_LIFETIME_S;
}

bool auth_token_sendable(const struct token_entry *t)
{
    return t->access_token && oauth_bearer_token_valid(t->access_token, strlen(t->access_token)) &&
           (!t->token_type || strcasecmp(t->token_type, "bearer") == 0 || auth_dpop_bound(t));
}

bool auth_token_fresh(const struct token_entry *t, int64_t now)
{
    if (!auth_token_sendable(t))
        return false;
    int64_t exp = effective_expiry(t);
    return now < exp - auth_refresh_margin(t->issued_at, exp);
}

/* The server's answer to a refresh request that failed: what it means for the entry. */
static int refresh_refused(struct token_entry *te, const struct token_response *tr, struct err *e)
{
    if (strcmp(tr->error, "invalid_grant") == 0) {
        token_entry_clear_tokens(te);
        return err_set(e, AUTH_LOGIN_REQUIRED,
                       "the authorization server no longer accepts the refresh token for '%s' "
                       "(invalid_grant)",
                       te->server_url);
    }
    if (grant_is_client_error(tr->error)) {
        token_entry_clear_registration(te);
        return err_set(e, AUTH_LOGIN_REQUIRED,
                       "the authorization server no longer knows the client registered for "
                       "'%s' (%s)",
                       te->server_url, tr->error);
    }
    return grant_oauth_error("refreshing the token failed", tr, e);
}

static int use_refresh_token(const struct auth_target *t, const struct discovery *d,
                             struct token_entry *te, int64_t http_timeout, struct err *e)
{
    struct token_response tr = {0};
    struct oauth_client client;
    client_of(te, &client);
    const char *params[] = {
        "grant_type",
        "refresh_token",
        "refresh_token",
        te->refresh_token,
        "resource",
        grant_resource(t, d),
        "scope",
        t->oauth->refresh_sends_scope ? te->scope : NULL,
        NULL,
    };
    int r = grant_request_tokens(te, d, &client, params, http_timeout, &tr, e);
    if (r >= 0)
        r = tr.error ? refresh_refused(te, &tr, e) : store_tokens(te, &tr, te->scope, false);
    token_response_release(&tr);
    return r;
}

/* Why no new token can be had for te without a person (it has no refresh token, and its grant
 * needs one). */
static int login_required(struct token_entry *te, struct err *e)
{
    if (te->access_token && !auth_token_sendable(te))
        return err_set(e, AUTH_LOGIN_REQUIRED,
                       "the stored token for '%s' is not a valid bearer token (RFC 6750: "
                       "letters, digits, -._~+/ and = at the end only, token type Bearer), so "
                       "it is never sent, and there is no refresh token",
                       te->server_url);
    return err_set(e, AUTH_LOGIN_REQUIRED,
                   !te->access_token ? "no sign-in for '%s' yet"
                   : auth_token_fresh(te, now_unix())
                       ? "the server refused the token for '%s' and there is no refresh token"
                       : "the token for '%s' has expired and there is no refresh token",
                   te->server_url);
}

/* New tokens for te, which the caller holds locked: with the refresh token, or from a grant
 * that needs no person when there is none. */
static int refresh_locked(const struct auth_target *t, struct token_entry *te, int64_t http_timeout,
                          struct err *e)
{
    const struct grant_ops *grant = grant_of(t);
    struct discovery *d = NULL;
    int r;
    if (!te->refresh_token && !grant->renew)
        return login_required(te, e); /* nothing to ask the authorization server */
    if (te->as_metadata)
        r = discovery_from_cache(te->server_url, te->issuer, te->as_metadata, te->prm,
                                 te->resource_metadata_url, te->discovered_at, &d);
    else
        r = discovery_run_opts(
            te->server_url, http_timeout,
            &(struct discovery_opts){.as_metadata_url = t->oauth->as_metadata_url,
                                     .skip_issuer_check = t->oauth->skip_issuer_check},
            &d, e);
    if (r < 0)
        return r;
    if (te->refresh_token)
        r = use_refresh_token(t, d, te, http_timeout, e);
    else
        r = grant->renew(t, d, te, http_timeout, e);
    discovery_free(d);
    return r;
}

/* Under the lock, looks again: another process may have refreshed meanwhile, and the refresh
 * token it used is gone (rotation); exactly one refresh reaches the server. A forced refresh
 * (the server refused the token) is skipped too when the token changed meanwhile: the new one
 * is what the caller needs. seen is the token the caller was refused (NULL: none). */
static int refresh_under_lock(const struct auth_target *t, const char *issuer, const char *seen,
                              bool force, int64_t http_timeout, struct token_entry **ret,
                              struct err *e)
{
    struct token_entry *te = NULL;
    struct file_lock *lock = NULL;
    int r = store_lock(t->server_url, issuer, t->label, TOKENS_LOCK_TIMEOUT_MS, &lock, e);
    if (r >= 0)
        r = store_load(t->server_url, issuer, t->label, &te, e);
    if (r < 0)
        goto out;
    bool same = seen && te->access_token && secure_streq(seen, te->access_token);
    if (!auth_token_fresh(te, now_unix()) || (force && same)) {
        r = refresh_locked(t, te, http_timeout, e);
        if (r < 0 && r != AUTH_LOGIN_REQUIRED && r != -ENOMEM)
            (void)err_prefix(e, "cannot refresh the token for '%s'", te->server_url);
        struct err se = ERR_INIT;
        int sr = store_save(te, r < 0 ? &se : e);
        if (r >= 0 && sr < 0) {
            (void)err_prefix(e, "the new token could not be stored (the stored sign-in is as "
                                "it was)");
            r = sr;
        }
        if (r < 0)
            goto out;
    }
    *ret = te;
    te = NULL;
    r = 0;
out:
    file_lock_release(lock);
    token_entry_free(te);
    return r;
}

int auth_fresh_token(const struct auth_target *t, int64_t http_timeout_ms, bool force,
                     struct token_entry **ret, struct err *e)
{
    struct token_entry *te = NULL;
    char *seen = NULL, *issuer = NULL;
    int64_t http_timeout = http_timeout_ms > 0 ? http_timeout_ms : AUTH_HTTP_TIMEOUT_DEFAULT_MS;
    int r = store_load(t->server_url, NULL, t->label, &te, e);
    if (r == -ENOENT) {
        if (grant_of(t)->unattended) {
            /* nobody needs to be there for this one: sign in now */
            struct login_opts o = {.http_timeout_ms = http_timeout};
            err_clear(e);
            return auth_login(t, &o, NULL, ret, e);
        }
        /* never signed in: a server that takes no OAuth at all is told from one that wants a
         * sign-in, so that the caller is not sent to a sign-in that cannot work */
        r = auth_check_wants_token(
            t, http_timeout < WANTS_TOKEN_TIMEOUT_MS ? http_timeout : WANTS_TOKEN_TIMEOUT_MS, e);
        if (r < 0)
            return r;
        return err_set(e, AUTH_LOGIN_REQUIRED, "no sign-in for '%s' yet", t->server_url);
    }
    if (r < 0)
        return r;
    if (!force && auth_token_fresh(te, now_unix())) {
        *ret = te;
        return 0;
    }
    issuer = strdup(te->issuer);
    if (issuer && te->access_token && !(seen = strdup(te->access_token))) {
        free(issuer);
        issuer = NULL;
    }
    token_entry_free(te);
    r = issuer ? refresh_under_lock(t, issuer, seen, force, http_timeout, ret, e) : -ENOMEM;
    secure_free(seen);
    free(issuer);
    return r;
}
