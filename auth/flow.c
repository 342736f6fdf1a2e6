/* flow.c - the sign-in: what every grant shares, around the grant's own part (grant.h) */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"

#include "discovery.h"
#include "flow.h"
#include "grant.h"
#include "ratelimit.h"
#include "store.h"

void auth_ui_say(const struct auth_ui *ui, enum auth_say_level lvl, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    if (!ui || !ui->say)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ui->say(ui->userdata, lvl, "%s", msg);
}

/* The space-separated union of two scope lists, in order, without duplicates; NULL when empty
 * (or on ENOMEM). Caller frees. */
static char *scope_union(const char *a, const char *b)
{
    struct buf out;
    buf_init(&out, 16 * 1024);
    if (buf_append_new_words(&out, a) < 0 || buf_append_new_words(&out, b) < 0 || out.len == 0) {
        buf_release(&out);
        return NULL;
    }
    return buf_detach(&out);
}

static int save_discovery(struct token_entry *t, const struct discovery *d)
{
    json_object_put(t->as_metadata);
    t->as_metadata = d->as && !d->as_defaults ? json_object_get(d->as) : NULL;
    json_object_put(t->prm);
    t->prm = d->prm ? json_object_get(d->prm) : NULL;
    t->discovered_at = d->fetched_at;
    return store_set_str(&t->resource_metadata_url, d->resource_metadata_url);
}

/* What to ask for: --scope widens what we hold (step-up); else the settings, else the server's
 * hint. NULL: nothing in particular. Caller frees. */
static char *scope_to_ask(const struct auth_target *t, const struct login_opts *o,
                          const struct token_entry *te, const struct discovery *d)
{
    if (o->scope)
        return scope_union(te->scope, o->scope);
    if (t->oauth->scope)
        return strdup(t->oauth->scope);
    return discovery_default_scope(d);
}

/* The entry under its lock, with this discovery and this sign-in counted. */
static int prepare(struct grant_session *s, struct err *e)
{
    int r = store_lock(s->t->server_url, s->d->issuer, s->t->label, TOKENS_LOCK_TIMEOUT_MS,
                       &s->lock, e);
    if (r >= 0)
        r = store_load_or_new(s->t->server_url, s->d->issuer, s->t->label, &s->te, e);
    if (r < 0)
        return r;
    /* a new registration drops the tokens held (they belong to the old client): that may be
     * written only once new tokens replace them, never by a sign-in that fails */
    s->had_tokens = s->te->access_token != NULL;
    r = save_discovery(s->te, s->d);
    if (r >= 0)
        r = ratelimit_check(s->te, RATELIMIT_SIGNIN, e);
    return r;
}

/* After a sign-in at issuer for server_url as the account label: the tokens other
 * authorization servers issued for the same server and account are dropped (their registrations stay, bound to their issuers). The server
 * now names another authorization server, so those tokens are of no use to it, and they must
 * not be taken for the current ones (credentials are bound to the server that issued them).
 * Failures are only said: the sign-in itself succeeded. */
static void retire_other_issuers(const char *server_url, const char *issuer, const char *label,
                                 const struct auth_ui *ui)
{
    struct token_entry **v = NULL;
    size_t n = 0;
    struct err le = ERR_INIT;
    if (tokens_list(&v, &n, &le) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        const struct token_entry *o = v[i];
        if (strcmp(o->server_url, server_url) != 0 || strcmp(o->issuer, issuer) == 0 ||
            !o->label != !label || (label && strcmp(o->label, label) != 0) ||
            (!o->access_token && !o->refresh_token))
            continue;
        struct file_lock *lock = NULL;
        struct token_entry *te = NULL;
        struct err e = ERR_INIT;
        int r = store_lock(server_url, o->issuer, o->label, TOKENS_LOCK_TIMEOUT_MS, &lock, &e);
        if (r >= 0)
            r = store_load(server_url, o->issuer, o->label, &te, &e);
        if (r >= 0) {
            token_entry_clear_tokens(te);
            r = store_save(te, &e);
        }
        if (r >= 0)
            auth_ui_say(ui, AUTH_SAY_INFO,
                        "dropped the tokens of the previous authorization server %s", o->issuer);
        else
            auth_ui_say(ui, AUTH_SAY_INFO,
                        "could not drop the tokens of the previous authorization server %s: %s",
                        o->issuer, err_msg(&e));
        token_entry_free(te);
        file_lock_release(lock);
    }
    for (size_t i = 0; i < n; i++)
        token_entry_free(v[i]);
    free(v);
}

/* The server publishes no OAuth metadata: what to do instead of signing in. The words match
 * those of mcp-bridge's own message (creds/cred_oauth.c). */
static int wants_token(const struct auth_target *t, struct err *e)
{
    if (t->name)
        return err_set(e, AUTH_WANTS_TOKEN,
                       "'%s' does not use OAuth (it answered 401 and publishes no OAuth "
                       "metadata): it wants a token of its own, not a sign-in. Give the entry "
                       "'%s' one: "
                       "\"bearerTokenEnv\": \"NAME\" (or \"headers\": {\"Authorization\": "
                       "\"Bearer ${NAME}\"}), and store the token with 'secrets configure NAME'",
                       t->server_url, t->name);
    return err_set(e, AUTH_WANTS_TOKEN,
                   "'%s' does not use OAuth (it answered 401 and publishes no OAuth metadata): it "
                   "wants a token of its own, not a sign-in. Give its entry in mcp.json one: "
                   "\"bearerTokenEnv\": \"NAME\" (or \"headers\": {\"Authorization\": "
                   "\"Bearer ${NAME}\"}), and store the token with 'secrets configure NAME'",
                   t->server_url);
}

int auth_check_wants_token(const struct auth_target *t, int64_t http_timeout_ms, struct err *e)
{
    struct err de = ERR_INIT;
    bool wants = false;
    if (t->oauth->client_id)
        return 0;
    if (discovery_wants_token(t->server_url, http_timeout_ms, &wants, &de) < 0 || !wants)
        return 0;
    return wants_token(t, e);
}

int auth_login(const struct auth_target *t, const struct login_opts *o, const struct auth_ui *ui,
               struct token_entry **ret, struct err *e)
{
    const struct grant_ops *grant = grant_of(t);
    struct discovery *d = NULL;
    char *scope = NULL;
    struct grant_session s = {
        .t = t,
        .o = o,
        .ui = ui,
        .http_timeout_ms =
            o->http_timeout_ms > 0 ? o->http_timeout_ms : AUTH_HTTP_TIMEOUT_DEFAULT_MS,
    };
    int r;

    auth_ui_say(ui, AUTH_SAY_INFO, "discovering how %s is protected", t->server_url);
    struct discovery_opts dopts = {.as_metadata_url = t->oauth->as_metadata_url,
                                   .skip_issuer_check = t->oauth->skip_issuer_check};
    r = discovery_run_opts(t->server_url, s.http_timeout_ms, &dopts, &d, e);
    if (r < 0)
        goto out;
    if (!d->needs_auth && !d->prm && !grant->unattended && !t->oauth->as_metadata_url) {
        r = err_set(e, -EALREADY,
                    "'%s' answered without asking for authorization: no sign-in is needed",
                    t->server_url);
        goto out;
    }
    if (d->no_oauth && !t->oauth->client_id) {
        /* the default endpoints would be a guess, and registering there fails: say what the
         * server wants instead */
        r = wants_token(t, e);
        goto out;
    }
    auth_ui_say(ui, AUTH_SAY_INFO, "authorization server: %s%s", d->issuer,
                d->as_defaults ? " (no metadata: using the default endpoints)" : "");
    s.d = d;
    r = prepare(&s, e);
    if (r < 0)
        goto out;
    scope = scope_to_ask(t, o, s.te, d);
    s.scope = scope;

    r = grant->sign_in(&s, e);
    if (r >= 0)
        r = store_save(s.te, e);
    if (r < 0)
        goto out;
    retire_other_issuers(t->server_url, d->issuer, t->label, ui);
    *ret = s.te;
    s.te = NULL;
    r = 0;
out:
    free(scope);
    file_lock_release(s.lock);
    token_entry_free(s.te);
    discovery_free(d);
    return r;
}
