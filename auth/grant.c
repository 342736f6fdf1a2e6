/* grant.c - the registry of grants, the session's lock, what grants share at the token endpoint */
#include <errno.h>
#include <string.h>

#include "dpop.h"
#include "grant.h"
#include "ratelimit.h"
#include "store.h"

/* In the order messages list them; the first is the default. */
static const struct grant_ops *const registry[] = {
    &grant_authorization_code,
    &grant_client_credentials,
    &grant_jwt_bearer,
};

const struct grant_ops *grant_at(size_t i)
{
    return i < ELEMENTSOF(registry) ? registry[i] : NULL;
}

const struct grant_ops *grant_find(const char *name)
{
    if (!name)
        return registry[0];
    for (size_t i = 0; i < ELEMENTSOF(registry); i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

const struct grant_ops *grant_of(const struct auth_target *t)
{
    const struct grant_ops *g = grant_find(t->oauth->grant);
    return g ? g : registry[0];
}

int grant_session_pause(struct grant_session *s, struct err *e)
{
    if (!s->had_tokens || s->te->access_token) {
        int r = store_save(s->te, e);
        if (r < 0)
            return r;
    }
    file_lock_release(s->lock);
    s->lock = NULL;
    return 0;
}

int grant_session_resume(struct grant_session *s, int r, struct err *e)
{
    struct err le = ERR_INIT;
    int lr = store_lock(s->t->server_url, s->d->issuer, s->t->label, TOKENS_LOCK_TIMEOUT_MS,
                        &s->lock, &le);
    if (lr < 0 && r >= 0) {
        *e = le;
        return lr;
    }
    return r;
}

/* The registration a failed attempt made, adopted into now. */
static int adopt_registration(struct token_entry *now, const struct token_entry *attempt)
{
    token_entry_clear_registration(now);
    now->registration = attempt->registration;
    int r = store_set_str(&now->client_id, attempt->client_id);
    if (r >= 0)
        r = store_set_secret(&now->client_secret, attempt->client_secret);
    if (r >= 0)
        r = store_set_str(&now->auth_method, attempt->auth_method);
    if (r >= 0)
        r = store_set_str(&now->redirect_uri, attempt->redirect_uri);
    if (r >= 0)
        r = store_set_str(&now->registration_client_uri, attempt->registration_client_uri);
    if (r >= 0)
        r = store_set_secret(&now->registration_access_token, attempt->registration_access_token);
    now->client_secret_expires_at = attempt->client_secret_expires_at;
    now->registered_at = attempt->registered_at;
    return r;
}

static int record_failed_attempt(const char *server_url, const char *issuer, const char *label,
                                 const struct token_entry *attempt, struct err *e)
{
    struct token_entry *now = NULL;
    int r = store_load_or_new(server_url, issuer, label, &now, e);
    if (r < 0)
        return r;
    if (attempt->extra) {
        json_object_put(now->extra);
        now->extra = json_object_get(attempt->extra);
    }
    bool new_client =
        attempt->client_id && (!now->client_id || strcmp(now->client_id, attempt->client_id) != 0);
    if (new_client && !now->access_token)
        r = adopt_registration(now, attempt);
    if (r >= 0)
        r = store_save(now, e);
    token_entry_free(now);
    return r;
}

void grant_session_failed(struct grant_session *s)
{
    struct err se = ERR_INIT;
    if (s->lock &&
        record_failed_attempt(s->t->server_url, s->d->issuer, s->t->label, s->te, &se) < 0)
        auth_ui_say(s->ui, AUTH_SAY_INFO, "could not record this attempt: %s", err_msg(&se));
}

int grant_request_tokens(struct token_entry *te, const struct discovery *d,
                         const struct oauth_client *client, const char *const *params,
                         int64_t timeout_ms, struct token_response *ret, struct err *e)
{
    int r = ratelimit_check(te, RATELIMIT_TOKEN, e);
    if (r < 0)
        return r;
    return auth_dpop_token(te, d, client, params, timeout_ms, ret, e);
}

const char *grant_resource(const struct auth_target *t, const struct discovery *d)
{
    return t->oauth->omit_resource ? NULL : d->resource;
}

bool grant_is_client_error(const char *error)
{
    return error &&
           (strcmp(error, "invalid_client") == 0 || strcmp(error, "unauthorized_client") == 0);
}

int grant_oauth_error(const char *what, const struct token_response *tr, struct err *e)
{
    return err_set(e, -EPROTO, "%s: the authorization server answered %s%s%s", what, tr->error,
                   tr->error_description ? ": " : "",
                   tr->error_description ? tr->error_description : "");
}
