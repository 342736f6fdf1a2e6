/* flow.c - sign-in (authorization code + PKCE, device code, client credentials), refresh
 * under the entry's lock, sign-out */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/secmem.h"
#include "credkit/url.h"
#include "credkit/util.h"

#include "browser.h"
#include "callback.h"
#include "crypto.h"
#include "discovery.h"
#include "flow.h"
#include "oauth.h"

#define LOGIN_TIMEOUT_DEFAULT_MS (5 * 60 * 1000)
#define HTTP_TIMEOUT_MS_DEFAULT  (30 * 1000)
#define UNKNOWN_LIFETIME_S       3600
/* repeated failures never loop: at most this many token requests per server per minute */
#define TOKEN_REQUESTS_PER_MINUTE 12
#define SIGNINS_PER_MINUTE        5

/* The token store's failures are local problems (a corrupt or unreadable file, a lock held too
 * long), not the authorization server's: they get codes of their own before travelling up, so
 * that the exit status tells them apart (docs/exit-codes.md). */
static int store_code(int r)
{
    if (r >= 0 || r == -ENOENT || r == -ENOMEM)
        return r;
    return r == -ETIMEDOUT ? -ENOLCK : -EUCLEAN;
}

static int entry_load(const char *server_url, const char *issuer, struct token_entry **ret,
                      struct err *e)
{
    return store_code(tokens_load(server_url, issuer, ret, e));
}

static int entry_save(struct token_entry *t, struct err *e)
{
    return store_code(tokens_save(t, e));
}

static int entry_lock(const char *server_url, const char *issuer, int64_t timeout_ms,
                      struct file_lock **ret, struct err *e)
{
    return store_code(tokens_lock(server_url, issuer, timeout_ms, ret, e));
}

static void say(const struct auth_ui *ui, enum auth_say_level lvl, const char *fmt, ...)
    _printf_(3, 4);

static void say(const struct auth_ui *ui, enum auth_say_level lvl, const char *fmt, ...)
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

static bool token_fresh(const struct token_entry *t, int64_t now)
{
    if (!t->access_token)
        return false;
    int64_t exp = effective_expiry(t);
    return now < exp - auth_refresh_margin(t->issued_at, exp);
}

/* Counts an event of kind ("token", "signin") in the entry's extra data and refuses when the
 * cap for the last minute is reached. */
static int rate_check(struct token_entry *t, const char *kind, int cap, struct err *e)
{
    int64_t now = now_unix();
    struct json_object *rate = NULL, *list = NULL, *fresh = json_object_new_array();
    if (!fresh)
        return -ENOMEM;
    if (!t->extra && !(t->extra = json_object_new_object())) {
        json_object_put(fresh);
        return -ENOMEM;
    }
    if (!json_object_object_get_ex(t->extra, "rate", &rate) ||
        !json_object_is_type(rate, json_type_object)) {
        rate = json_object_new_object();
        (void)json_object_object_add(t->extra, "rate", rate);
    }
    if (json_object_object_get_ex(rate, kind, &list) && json_object_is_type(list, json_type_array))
        for (size_t i = 0; i < json_object_array_length(list); i++) {
            int64_t ts = json_object_get_int64(json_object_array_get_idx(list, i));
            if (ts > now - 60 && ts <= now)
                (void)json_object_array_add(fresh, json_object_new_int64(ts));
        }
    if ((int)json_object_array_length(fresh) >= cap) {
        json_object_put(fresh);
        return err_set(e, -EBUSY,
                       "already %d %s to '%s' in the last minute: stopping here so that a "
                       "failure cannot loop; wait a minute and try again",
                       cap, strcmp(kind, "signin") == 0 ? "sign-ins" : "token requests", t->issuer);
    }
    (void)json_object_array_add(fresh, json_object_new_int64(now));
    (void)json_object_object_add(rate, kind, fresh);
    return 0;
}

/* One token request (a grant, not device-code polling), counted against the per-minute cap
 * so that repeated failures can never loop. */
static int request_tokens(struct token_entry *te, const struct discovery *d,
                          const struct oauth_client *client, const char *const *params,
                          int64_t timeout_ms, struct token_response *ret, struct err *e)
{
    int r = rate_check(te, "token", TOKEN_REQUESTS_PER_MINUTE, e);
    if (r < 0)
        return r;
    return oauth_token(discovery_as_string(d, "token_endpoint"), client, params, timeout_ms, ret,
                       e);
}

static char *scope_union(const char *a, const char *b)
{
    struct buf out;
    buf_init(&out, 16 * 1024);
    const char *srcs[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        const char *p = srcs[k];
        while (p && *p) {
            p += strspn(p, " ");
            size_t n = strcspn(p, " ");
            if (n == 0)
                break;
            /* skip duplicates */
            bool dup = false;
            const char *q = buf_str(&out);
            while (*q) {
                size_t m = strcspn(q, " ");
                if (m == n && strncmp(q, p, n) == 0)
                    dup = true;
                q += m;
                q += strspn(q, " ");
            }
            if (!dup) {
                if ((out.len && buf_append_char(&out, ' ') < 0) || buf_append(&out, p, n) < 0) {
                    buf_release(&out);
                    return NULL;
                }
            }
            p += n;
        }
    }
    if (out.len == 0) {
        buf_release(&out);
        return NULL;
    }
    return buf_detach(&out);
}

static int set_str(char **dst, const char *src)
{
    char *n = src ? strdup(src) : NULL;
    if (src && !n)
        return -ENOMEM;
    free(*dst);
    *dst = n;
    return 0;
}

static int set_secret(char **dst, const char *src)
{
    char *n = src ? strdup(src) : NULL;
    if (src && !n)
        return -ENOMEM;
    secure_free(*dst);
    *dst = n;
    return 0;
}

/* Records a token response in the entry. */
/* Records a token response. A refresh that brings no new refresh token keeps the old one
 * (it was not rotated); a new grant (sign-in) without one drops it: the old one belongs to an
 * older grant, which another process may have rotated away meanwhile. */
static int store_tokens(struct token_entry *t, const struct token_response *tr,
                        const char *requested_scope, bool new_grant)
{
    int64_t now = now_unix();
    int r = set_secret(&t->access_token, tr->access_token);
    if (r >= 0)
        r = set_str(&t->token_type, tr->token_type ? tr->token_type : "Bearer");
    if (r >= 0 && (tr->refresh_token || new_grant))
        r = set_secret(&t->refresh_token, tr->refresh_token);
    if (r >= 0 && (tr->scope || requested_scope))
        r = set_str(&t->scope, tr->scope ? tr->scope : requested_scope);
    t->issued_at = now;
    t->expires_at = tr->expires_in >= 0 ? now + tr->expires_in : 0;
    return r;
}

static int save_discovery(struct token_entry *t, const struct discovery *d)
{
    json_object_put(t->as_metadata);
    t->as_metadata = d->as && !d->as_defaults ? json_object_get(d->as) : NULL;
    json_object_put(t->prm);
    t->prm = d->prm ? json_object_get(d->prm) : NULL;
    t->discovered_at = d->fetched_at;
    return set_str(&t->resource_metadata_url, d->resource_metadata_url);
}

static const char *resource_param(const struct auth_target *t, const struct discovery *d)
{
    return t->oauth && t->oauth->omit_resource ? NULL : d->resource;
}

/* The client secret from the config, ${VAR} expanded. */
static int config_secret(const struct auth_target *t, char **ret, struct err *e)
{
    *ret = NULL;
    if (!t->oauth || !t->oauth->client_secret)
        return 0;
    int r = mcp_expand(t->oauth->client_secret, NULL, NULL, ret, e);
    if (r < 0)
        return err_prefix(e, "oauth.clientSecret of '%s'", t->name ? t->name : t->server_url);
    return 0;
}

static const char *pick_basic_or_post(const struct discovery *d)
{
    if (discovery_as_lists(d, "token_endpoint_auth_methods_supported", "client_secret_basic"))
        return "client_secret_basic";
    if (discovery_as_lists(d, "token_endpoint_auth_methods_supported", "client_secret_post"))
        return "client_secret_post";
    return "client_secret_basic";
}

/* Registration in priority order: pre-registered > metadata document > stored dynamic
 * registration for this redirect URI > new dynamic registration. */
static int ensure_registration(const struct auth_target *t, const struct discovery *d,
                               struct token_entry *te, const char *redirect_uri, bool device,
                               int64_t http_timeout, const struct auth_ui *ui, struct err *e)
{
    int r;
    if (t->oauth && t->oauth->client_id) {
        char *secret = NULL;
        r = config_secret(t, &secret, e);
        if (r < 0)
            return r;
        te->registration = REGISTRATION_PRE;
        r = set_str(&te->client_id, t->oauth->client_id);
        if (r >= 0)
            r = set_secret(&te->client_secret, secret);
        if (r >= 0)
            r = set_str(&te->auth_method, secret ? pick_basic_or_post(d) : "none");
        if (r >= 0)
            r = set_str(&te->redirect_uri, redirect_uri);
        secure_free(secret);
        return r;
    }
    if (t->oauth && t->oauth->client_metadata_url) {
        struct json_object *v = NULL;
        if (d->as &&
            json_object_object_get_ex(d->as, "client_id_metadata_document_supported", &v) &&
            json_object_get_boolean(v)) {
            te->registration = REGISTRATION_METADATA;
            r = set_str(&te->client_id, t->oauth->client_metadata_url);
            if (r >= 0)
                r = set_secret(&te->client_secret, NULL);
            if (r >= 0)
                r = set_str(&te->auth_method, "none");
            if (r >= 0)
                r = set_str(&te->redirect_uri, redirect_uri);
            return r;
        }
        say(ui, AUTH_SAY_INFO,
            "the authorization server does not support client ID metadata documents; trying "
            "dynamic registration");
    }
    if (te->registration == REGISTRATION_DYNAMIC && te->client_id && te->redirect_uri &&
        strcmp(te->redirect_uri, redirect_uri) == 0 &&
        (te->client_secret_expires_at == 0 || te->client_secret_expires_at > now_unix() + 60)) {
        /* the stored registration fits - if the server still knows it: an unknown client at
         * the authorization endpoint ends on an error page in the browser that never comes
         * back to us, so ask first where the server lets us (RFC 7592) */
        if (!te->registration_client_uri || !te->registration_access_token ||
            oauth_client_exists(te->registration_client_uri, te->registration_access_token,
                                http_timeout) != 0)
            return 0;
        say(ui, AUTH_SAY_INFO,
            "the authorization server no longer knows the stored client: "
            "registering again");
        token_entry_clear_registration(te);
    }
    const char *reg_ep = discovery_as_string(d, "registration_endpoint");
    if (!reg_ep)
        return err_set(e, -EINVAL,
                       "the authorization server '%s' does not offer dynamic client registration: "
                       "register a client there and set \"oauth\": {\"clientId\": \"...\", "
                       "\"clientSecret\": \"...\"} for this server in mcp.json",
                       d->issuer);
    say(ui, AUTH_SAY_INFO, "registering a client at %s", reg_ep);
    struct registration reg = {0};
    /* no "scope" in the registration: a server that takes it as the client's limit would
     * refuse a later step-up to wider scopes */
    r = oauth_register(reg_ep, redirect_uri, NULL, device, http_timeout, &reg, e);
    if (r < 0)
        return r;
    te->registration = REGISTRATION_DYNAMIC;
    r = set_str(&te->client_id, reg.client_id);
    if (r >= 0)
        r = set_secret(&te->client_secret, reg.client_secret);
    if (r >= 0)
        r = set_str(&te->auth_method, reg.auth_method     ? reg.auth_method
                                      : reg.client_secret ? "client_secret_basic"
                                                          : "none");
    if (r >= 0)
        r = set_str(&te->redirect_uri, redirect_uri);
    te->client_secret_expires_at = reg.client_secret_expires_at;
    if (r >= 0)
        r = set_str(&te->registration_client_uri, reg.client_uri);
    if (r >= 0)
        r = set_secret(&te->registration_access_token, reg.access_token);
    te->registered_at = now_unix();
    token_entry_clear_tokens(te); /* tokens belong to the old client */
    registration_release(&reg);
    return r;
}

static void client_of(const struct token_entry *te, struct oauth_client *c)
{
    *c = (struct oauth_client){
        .client_id = te->client_id,
        .client_secret = te->client_secret,
        .auth_method = te->auth_method,
    };
}

static int build_authorize_url(const struct discovery *d, const struct auth_target *t,
                               const struct token_entry *te, const char *challenge,
                               const char *state, const char *scope, char **ret)
{
    const char *ep = discovery_as_string(d, "authorization_endpoint");
    struct buf b;
    int r;
    buf_init(&b, 64 * 1024);
    const char *params[] = {
        "response_type",
        "code",
        "client_id",
        te->client_id,
        "redirect_uri",
        te->redirect_uri,
        "code_challenge",
        challenge,
        "code_challenge_method",
        "S256",
        "state",
        state,
        "scope",
        scope,
        "resource",
        resource_param(t, d),
        NULL,
    };
    r = buf_append_str(&b, ep);
    char sep = strchr(ep, '?') ? '&' : '?';
    for (size_t i = 0; r >= 0 && params[i]; i += 2) {
        if (!params[i + 1])
            continue;
        char *v = url_encode(params[i + 1]);
        if (!v) {
            r = -ENOMEM;
            break;
        }
        r = buf_printf(&b, "%c%s=%s", sep, params[i], v);
        sep = '&';
        free(v);
    }
    if (r < 0) {
        buf_release(&b);
        return r;
    }
    *ret = buf_detach(&b);
    return *ret ? 0 : -ENOMEM;
}

static bool is_client_error(const char *err)
{
    return err && (strcmp(err, "invalid_client") == 0 || strcmp(err, "unauthorized_client") == 0);
}

static int oauth_error(const char *what, const struct token_response *tr, struct err *e)
{
    return err_set(e, -EPROTO, "%s: the authorization server answered %s%s%s", what, tr->error,
                   tr->error_description ? ": " : "",
                   tr->error_description ? tr->error_description : "");
}

static void countdown_cb(int64_t remaining_ms, void *userdata)
{
    const struct auth_ui *ui = userdata;
    if (ui && ui->countdown)
        ui->countdown(ui->userdata, remaining_ms);
}

/* One authorization-code attempt with the registration in te. Sets *ret_client_rejected when
 * the server did not know the client (the caller re-registers and tries once more). */
static int code_attempt(const struct auth_target *t, const struct login_opts *o,
                        const struct auth_ui *ui, const struct discovery *d, struct token_entry *te,
                        struct callback *cb, const char *scope, bool *ret_client_rejected,
                        struct err *e)
{
    char *verifier = NULL, *challenge = NULL, *state = NULL, *url = NULL;
    struct callback_result res = {0};
    struct token_response tr = {0};
    struct oauth_client client;
    int r;
    int64_t timeout = o->timeout_ms > 0 ? o->timeout_ms : LOGIN_TIMEOUT_DEFAULT_MS;
    int64_t http_timeout = o->http_timeout_ms > 0 ? o->http_timeout_ms : HTTP_TIMEOUT_MS_DEFAULT;

    *ret_client_rejected = false;
    r = pkce_new(&verifier, &challenge);
    if (r >= 0)
        r = secure_random_token(32, &state);
    if (r >= 0)
        r = build_authorize_url(d, t, te, challenge, state, scope, &url);
    if (r < 0)
        goto out;
    say(ui, AUTH_SAY_ALWAYS, "open this URL to sign in:\n\n  %s\n", url);
    if (!o->no_browser) {
        struct err be = ERR_INIT;
        if (browser_open(url, &be) < 0)
            say(ui, AUTH_SAY_INFO, "could not open a browser (%s): open the URL above yourself",
                err_msg(&be));
    }
    say(ui, AUTH_SAY_INFO, "waiting for the browser to come back to %s (at most %llds)",
        callback_redirect_uri(cb), (long long)(timeout / 1000));
    r = callback_wait(cb, state, timeout, countdown_cb, (void *)ui, &res, e);
    if (r == -ETIMEDOUT)
        r = err_set(e, -ETIME,
                    "nobody signed in within %llds: run the command again%s, or use "
                    "--timeout to wait longer",
                    (long long)(timeout / 1000),
                    o->no_browser ? "" : ", or use --no-browser and open the URL yourself");
    if (r < 0)
        goto out;
    if (res.error) {
        if (is_client_error(res.error) && te->registration == REGISTRATION_DYNAMIC) {
            *ret_client_rejected = true;
            r = err_set(e, -EPROTO, "the authorization server does not know the client");
            goto out;
        }
        r = err_set(e, -EACCES, "sign-in failed: %s%s%s", res.error,
                    res.error_description ? ": " : "",
                    res.error_description ? res.error_description : "");
        goto out;
    }
    /* RFC 9207: a mix-up attack sends the code from another authorization server */
    if (res.iss && strcmp(res.iss, d->issuer) != 0) {
        r = err_set(e, -EPERM,
                    "the sign-in came back from issuer '%s', not '%s': refusing the code", res.iss,
                    d->issuer);
        goto out;
    }
    if (!res.iss) {
        struct json_object *v = NULL;
        if (d->as &&
            json_object_object_get_ex(d->as, "authorization_response_iss_parameter_supported",
                                      &v) &&
            json_object_get_boolean(v)) {
            r = err_set(e, -EPERM,
                        "the authorization server promises an 'iss' parameter but the sign-in "
                        "came back without one: refusing the code");
            goto out;
        }
    }
    client_of(te, &client);
    const char *params[] = {
        "grant_type",
        "authorization_code",
        "code",
        res.code,
        "redirect_uri",
        te->redirect_uri,
        "code_verifier",
        verifier,
        "resource",
        resource_param(t, d),
        NULL,
    };
    say(ui, AUTH_SAY_INFO, "exchanging the authorization code for tokens");
    r = request_tokens(te, d, &client, params, http_timeout, &tr, e);
    if (r < 0)
        goto out;
    if (tr.error) {
        if (is_client_error(tr.error) && te->registration == REGISTRATION_DYNAMIC) {
            *ret_client_rejected = true;
            r = err_set(e, -EPROTO, "the authorization server does not know the client");
            goto out;
        }
        r = oauth_error("the code exchange failed", &tr, e);
        goto out;
    }
    r = store_tokens(te, &tr, scope, true);
out:
    token_response_release(&tr);
    callback_result_release(&res);
    secure_free(verifier);
    secure_free(challenge);
    secure_free(state);
    free(url);
    return r;
}

static int device_flow(const struct auth_target *t, const struct login_opts *o,
                       const struct auth_ui *ui, const struct discovery *d, struct token_entry *te,
                       const char *scope, struct err *e)
{
    const char *ep = discovery_as_string(d, "device_authorization_endpoint");
    struct device_authorization da = {0};
    struct oauth_client client;
    int64_t http_timeout = o->http_timeout_ms > 0 ? o->http_timeout_ms : HTTP_TIMEOUT_MS_DEFAULT;
    int r;
    if (!ep)
        return err_set(e, -EINVAL,
                       "the authorization server '%s' does not offer the device authorization "
                       "grant: sign in with a browser (--no-browser prints the URL to open "
                       "elsewhere)",
                       d->issuer);
    client_of(te, &client);
    r = oauth_device_authorize(ep, &client, scope, resource_param(t, d), http_timeout, &da, e);
    if (r < 0)
        return r;
    if (da.verification_uri_complete)
        say(ui, AUTH_SAY_ALWAYS,
            "to sign in, open %s and enter the code %s\n  (or open %s , which carries the code)",
            da.verification_uri, da.user_code, da.verification_uri_complete);
    else
        say(ui, AUTH_SAY_ALWAYS, "to sign in, open %s and enter the code %s", da.verification_uri,
            da.user_code);
    int64_t deadline = now_mono_ms() + da.expires_in * 1000;
    int64_t limit = o->timeout_ms > 0 ? now_mono_ms() + o->timeout_ms : deadline;
    if (limit < deadline)
        deadline = limit;
    int64_t interval = da.interval;
    for (;;) {
        if (now_mono_ms() + interval * 1000 > deadline) {
            r = err_set(e, -ETIME, "the device code expired before the sign-in was completed");
            break;
        }
        /* waiting the interval the server asked for is the protocol, not a guess */
        struct timespec ts = {.tv_sec = (time_t)interval};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        if (ui && ui->countdown)
            ui->countdown(ui->userdata, deadline - now_mono_ms());
        struct token_response tr = {0};
        const char *params[] = {
            "grant_type",  "urn:ietf:params:oauth:grant-type:device_code",
            "device_code", da.device_code,
            "resource",    resource_param(t, d),
            NULL,
        };
        r = oauth_token(discovery_as_string(d, "token_endpoint"), &client, params, http_timeout,
                        &tr, e);
        if (r < 0)
            break;
        if (!tr.error) {
            r = store_tokens(te, &tr, scope, true);
            token_response_release(&tr);
            break;
        }
        if (strcmp(tr.error, "authorization_pending") == 0) {
            token_response_release(&tr);
            continue;
        }
        if (strcmp(tr.error, "slow_down") == 0) {
            interval += 5; /* RFC 8628 3.5 */
            token_response_release(&tr);
            continue;
        }
        r = oauth_error("the device sign-in failed", &tr, e);
        token_response_release(&tr);
        break;
    }
    device_authorization_release(&da);
    return r;
}

/* The answer to a grant made with the config's own client (no registration of ours): the
 * tokens, and the client they belong to, into te. */
static int take_config_grant(struct token_entry *te, const struct token_response *tr,
                             const char *what, const struct oauth_client *client, const char *scope,
                             struct err *e)
{
    if (tr->error)
        return oauth_error(what, tr, e);
    te->registration = REGISTRATION_PRE;
    int r = set_str(&te->client_id, client->client_id);
    if (r >= 0)
        r = set_str(&te->auth_method, client->auth_method);
    if (r >= 0)
        r = store_tokens(te, tr, scope, true);
    return r;
}

/* Machine to machine: client secret or private_key_jwt, no person involved. */
static int client_credentials(const struct auth_target *t, const struct discovery *d,
                              struct token_entry *te, const char *scope, int64_t http_timeout,
                              struct err *e)
{
    char *secret = NULL, *assertion = NULL;
    struct token_response tr = {0};
    struct oauth_client client = {0};
    int r;
    if (!t->oauth || !t->oauth->client_id)
        return err_set(e, -EINVAL,
                       "client_credentials needs \"oauth\": {\"clientId\": ..., and "
                       "\"clientSecret\" or \"privateKeyFile\"} for '%s' in mcp.json",
                       t->name ? t->name : t->server_url);
    client.client_id = t->oauth->client_id;
    if (t->oauth->private_key_file) {
        r = jwt_client_assertion(t->oauth->private_key_file, t->oauth->private_key_alg, NULL,
                                 t->oauth->client_id, d->issuer, &assertion, e);
        if (r < 0)
            goto out;
        client.auth_method = "private_key_jwt";
        client.assertion = assertion;
    } else {
        r = config_secret(t, &secret, e);
        if (r < 0)
            goto out;
        if (!secret) {
            r = err_set(e, -EINVAL,
                        "client_credentials for '%s' needs oauth.clientSecret or "
                        "oauth.privateKeyFile in mcp.json",
                        t->name ? t->name : t->server_url);
            goto out;
        }
        client.client_secret = secret;
        client.auth_method = pick_basic_or_post(d);
    }
    const char *params[] = {
        "grant_type", "client_credentials", "scope", scope, "resource", resource_param(t, d), NULL,
    };
    r = request_tokens(te, d, &client, params, http_timeout, &tr, e);
    if (r >= 0)
        r = take_config_grant(te, &tr, "the client_credentials grant failed", &client, scope, e);
out:
    token_response_release(&tr);
    secure_free(secret);
    secure_free(assertion);
    return r;
}

/* Enterprise cross-app access: the identity provider's ID token is exchanged there for an
 * identity assertion grant, which the MCP server's authorization server takes as a JWT bearer
 * grant. No browser. */
static int jwt_bearer(const struct auth_target *t, const struct discovery *d,
                      struct token_entry *te, const char *scope, int64_t http_timeout,
                      struct err *e)
{
    char *id_token = NULL, *idp_secret = NULL, *secret = NULL, *jag = NULL;
    struct token_response tr = {0};
    const struct mcp_oauth *oa = t->oauth;
    int r;
    if (!oa || !oa->client_id || !oa->idp_token_endpoint || !oa->idp_id_token)
        return err_set(e, -EINVAL,
                       "grant \"jwt-bearer\" needs oauth.clientId and oauth.idp.tokenEndpoint and "
                       "oauth.idp.idToken for '%s' in mcp.json",
                       t->name ? t->name : t->server_url);
    r = url_check_secure(oa->idp_token_endpoint, "identity provider token endpoint", e);
    if (r >= 0)
        r = mcp_expand(oa->idp_id_token, NULL, NULL, &id_token, e);
    if (r >= 0 && oa->idp_client_secret)
        r = mcp_expand(oa->idp_client_secret, NULL, NULL, &idp_secret, e);
    if (r >= 0)
        r = config_secret(t, &secret, e);
    if (r < 0)
        goto out;
    struct oauth_client idp = {
        .client_id = oa->idp_client_id ? oa->idp_client_id : oa->client_id,
        .client_secret = idp_secret,
    };
    r = oauth_token_exchange(oa->idp_token_endpoint, &idp, id_token, d->issuer,
                             resource_param(t, d), scope, http_timeout, &jag, e);
    if (r < 0)
        goto out;
    struct oauth_client client = {
        .client_id = oa->client_id,
        .client_secret = secret,
        .auth_method = secret ? pick_basic_or_post(d) : "none",
    };
    const char *params[] = {
        "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "assertion",  jag,
        "scope",      scope,
        "resource",   resource_param(t, d),
        NULL,
    };
    r = request_tokens(te, d, &client, params, http_timeout, &tr, e);
    if (r >= 0)
        r = take_config_grant(te, &tr, "the JWT bearer grant failed", &client, scope, e);
out:
    token_response_release(&tr);
    secure_free(id_token);
    secure_free(idp_secret);
    secure_free(secret);
    secure_free(jag);
    return r;
}

static bool wants_jwt_bearer(const struct auth_target *t)
{
    return t->oauth && t->oauth->grant && strcmp(t->oauth->grant, "jwt-bearer") == 0;
}

static bool wants_client_credentials(const struct auth_target *t)
{
    return t->oauth && t->oauth->grant && strcmp(t->oauth->grant, "client_credentials") == 0;
}

/* Loads the entry for (url, issuer) or makes a new one. */
static int load_or_new(const char *server_url, const char *issuer, struct token_entry **ret,
                       struct err *e)
{
    int r = entry_load(server_url, issuer, ret, e);
    if (r == -ENOENT) {
        err_clear(e);
        r = token_entry_new(server_url, issuer, ret);
    }
    return r;
}

static uint16_t port_of(const char *uri)
{
    const char *p = strstr(uri ? uri : "", "://");
    if (!p)
        return 0;
    p += 3;
    if (*p == '[')
        p = strchr(p, ']');
    p = p ? strchr(p, ':') : NULL;
    if (!p)
        return 0;
    int64_t v = 0;
    char buf[8];
    size_t n = strspn(p + 1, "0123456789");
    if (n == 0 || n >= sizeof(buf))
        return 0;
    memcpy(buf, p + 1, n);
    buf[n] = 0;
    if (parse_int64(buf, &v) < 0 || v <= 0 || v > 65535)
        return 0;
    return (uint16_t)v;
}

/* After a failed sign-in, under the entry's lock: the entry as stored now, plus what the
 * attempt learned - its rate bookkeeping, and a registration it made, unless adopting that
 * would drop tokens that still work. */
static int record_failed_attempt(const char *server_url, const char *issuer,
                                 struct token_entry *attempt, struct err *e)
{
    struct token_entry *now = NULL;
    int r = entry_load(server_url, issuer, &now, e);
    if (r == -ENOENT) {
        err_clear(e);
        r = token_entry_new(server_url, issuer, &now);
    }
    if (r < 0)
        return r;
    if (attempt->extra) {
        json_object_put(now->extra);
        now->extra = json_object_get(attempt->extra);
    }
    bool new_client =
        attempt->client_id && (!now->client_id || strcmp(now->client_id, attempt->client_id) != 0);
    if (new_client && !now->access_token) {
        token_entry_clear_registration(now);
        now->registration = attempt->registration;
        r = set_str(&now->client_id, attempt->client_id);
        if (r >= 0)
            r = set_secret(&now->client_secret, attempt->client_secret);
        if (r >= 0)
            r = set_str(&now->auth_method, attempt->auth_method);
        if (r >= 0)
            r = set_str(&now->redirect_uri, attempt->redirect_uri);
        if (r >= 0)
            r = set_str(&now->registration_client_uri, attempt->registration_client_uri);
        if (r >= 0)
            r = set_secret(&now->registration_access_token, attempt->registration_access_token);
        now->client_secret_expires_at = attempt->client_secret_expires_at;
        now->registered_at = attempt->registered_at;
    }
    if (r >= 0)
        r = entry_save(now, e);
    token_entry_free(now);
    return r;
}

int auth_login(const struct auth_target *t, const struct login_opts *o, const struct auth_ui *ui,
               struct token_entry **ret, struct err *e)
{
    struct discovery *d = NULL;
    struct token_entry *te = NULL;
    struct file_lock *lock = NULL;
    struct callback *cb = NULL;
    char *scope = NULL;
    int64_t http_timeout = o->http_timeout_ms > 0 ? o->http_timeout_ms : HTTP_TIMEOUT_MS_DEFAULT;
    int r;

    say(ui, AUTH_SAY_INFO, "discovering how %s is protected", t->server_url);
    r = discovery_run(t->server_url, http_timeout, &d, e);
    if (r < 0)
        goto out;
    if (!d->needs_auth && !d->prm && !wants_client_credentials(t) && !wants_jwt_bearer(t)) {
        r = err_set(e, -EALREADY,
                    "'%s' answered without asking for authorization: no sign-in is needed",
                    t->server_url);
        goto out;
    }
    say(ui, AUTH_SAY_INFO, "authorization server: %s%s", d->issuer,
        d->as_defaults ? " (no metadata: using the default endpoints)" : "");

    r = entry_lock(t->server_url, d->issuer, TOKENS_LOCK_TIMEOUT_MS, &lock, e);
    if (r < 0)
        goto out;
    r = load_or_new(t->server_url, d->issuer, &te, e);
    if (r < 0)
        goto out;
    /* a new registration drops the tokens held (they belong to the old client): that may be
     * written only once new tokens replace them, never by a sign-in that fails */
    bool had_tokens = te->access_token != NULL;
    r = save_discovery(te, d);
    if (r < 0)
        goto out;
    r = rate_check(te, "signin", SIGNINS_PER_MINUTE, e);
    if (r < 0)
        goto out;

    /* what to ask for: --scope widens what we hold (step-up); else the config, else the
     * server's hint */
    if (o->scope)
        scope = scope_union(te->scope, o->scope);
    else if (t->oauth && t->oauth->scope)
        scope = strdup(t->oauth->scope);
    else
        scope = discovery_default_scope(d);

    if (wants_client_credentials(t)) {
        r = client_credentials(t, d, te, scope, http_timeout, e);
        goto saved;
    }
    if (wants_jwt_bearer(t)) {
        r = jwt_bearer(t, d, te, scope, http_timeout, e);
        goto saved;
    }
    if (!o->device_code && !d->as_defaults &&
        !discovery_as_lists(d, "code_challenge_methods_supported", "S256")) {
        r = err_set(e, -EPROTO,
                    "the authorization server '%s' does not advertise PKCE with S256 "
                    "(code_challenge_methods_supported): refusing to sign in without it",
                    d->issuer);
        goto out;
    }

    if (o->device_code) {
        /* a client of its own, registered for the device grant (its redirect URI is never
         * used); a stored one for the same URI is reused */
        r = ensure_registration(t, d, te, "http://127.0.0.1/device", true, http_timeout, ui, e);
        if (r < 0)
            goto out;
        if (!had_tokens || te->access_token) {
            r = entry_save(te, e);
            if (r < 0)
                goto out;
        }
        /* nobody waits on our lock while a person types a code elsewhere */
        file_lock_release(lock);
        lock = NULL;
        r = device_flow(t, o, ui, d, te, scope, e);
        struct err le = ERR_INIT;
        int lr = entry_lock(t->server_url, d->issuer, TOKENS_LOCK_TIMEOUT_MS, &lock, &le);
        if (lr < 0 && r >= 0) {
            *e = le;
            r = lr;
        }
        goto saved;
    }

    /* the listener is up before the browser starts; a pre-registered redirect URI fixes its
     * port, a stored dynamic registration's port is reused when free */
    uint16_t port = 0;
    bool fixed = false;
    if (t->oauth && t->oauth->redirect_uri) {
        port = port_of(t->oauth->redirect_uri);
        fixed = true;
    } else if (te->registration == REGISTRATION_DYNAMIC && !(t->oauth && t->oauth->client_id)) {
        port = port_of(te->redirect_uri);
    }
    r = callback_start(port, &cb, e);
    if (r < 0 && port && !fixed) {
        err_clear(e);
        r = callback_start(0, &cb, e);
    }
    if (r < 0)
        goto out;
    const char *redirect = fixed ? t->oauth->redirect_uri : callback_redirect_uri(cb);

    for (int attempt = 0;; attempt++) {
        bool rejected = false;
        r = ensure_registration(t, d, te, redirect, false, http_timeout, ui, e);
        if (r < 0)
            goto out;
        /* a registration is worth keeping even if the sign-in fails (not at the price of the
         * tokens held) */
        if (!had_tokens || te->access_token) {
            r = entry_save(te, e);
            if (r < 0)
                goto out;
        }
        /* nobody else waits on us while a person is at the browser: `header` callers refresh
         * under this lock */
        file_lock_release(lock);
        lock = NULL;
        r = code_attempt(t, o, ui, d, te, cb, scope, &rejected, e);
        struct err le = ERR_INIT;
        int lr = entry_lock(t->server_url, d->issuer, TOKENS_LOCK_TIMEOUT_MS, &lock, &le);
        if (lr < 0) {
            if (r >= 0)
                *e = le;
            r = r < 0 ? r : lr;
            goto out;
        }
        if (r >= 0 || !rejected || attempt >= 1)
            break;
        say(ui, AUTH_SAY_INFO,
            "the authorization server no longer knows this client: registering "
            "again");
        token_entry_clear_registration(te);
        err_clear(e);
    }

saved:
    if (r < 0) {
        /* keep the rate bookkeeping (and a new registration where no tokens are lost by it),
         * but never write back the tokens we loaded before the browser: meanwhile another
         * process may have refreshed them, and the refresh token we hold may be rotated away */
        struct err se = ERR_INIT;
        if (lock && record_failed_attempt(t->server_url, d->issuer, te, &se) < 0)
            say(ui, AUTH_SAY_INFO, "could not record this attempt: %s", err_msg(&se));
        goto out;
    }
    r = entry_save(te, e);
    if (r < 0)
        goto out;
    *ret = te;
    te = NULL;
    r = 0;
out:
    callback_stop(cb);
    free(scope);
    file_lock_release(lock);
    token_entry_free(te);
    discovery_free(d);
    return r;
}

static int refresh_locked(const struct auth_target *t, struct token_entry *te, int64_t http_timeout,
                          struct err *e)
{
    struct discovery *d = NULL;
    struct token_response tr = {0};
    struct oauth_client client;
    int r;
    if (te->as_metadata) {
        r = discovery_from_cache(te->server_url, te->issuer, te->as_metadata, te->prm,
                                 te->resource_metadata_url, te->discovered_at, &d);
    } else {
        r = discovery_run(te->server_url, http_timeout, &d, e);
    }
    if (r < 0)
        return r;
    if (wants_client_credentials(t) && !te->refresh_token) {
        r = client_credentials(t, d, te, te->scope, http_timeout, e);
        goto out;
    }
    if (wants_jwt_bearer(t) && !te->refresh_token) {
        r = jwt_bearer(t, d, te, te->scope, http_timeout, e);
        goto out;
    }
    if (!te->refresh_token) {
        r = err_set(e, AUTH_LOGIN_REQUIRED,
                    !te->access_token ? "no sign-in for '%s' yet"
                    : token_fresh(te, now_unix())
                        ? "the server refused the token for '%s' and there is no refresh token"
                        : "the token for '%s' has expired and there is no refresh token",
                    te->server_url);
        goto out;
    }
    client_of(te, &client);
    const char *params[] = {
        "grant_type",
        "refresh_token",
        "refresh_token",
        te->refresh_token,
        "resource",
        resource_param(t, d),
        "scope",
        t->oauth && t->oauth->refresh_sends_scope ? te->scope : NULL,
        NULL,
    };
    r = request_tokens(te, d, &client, params, http_timeout, &tr, e);
    if (r < 0)
        goto out;
    if (tr.error) {
        if (strcmp(tr.error, "invalid_grant") == 0) {
            token_entry_clear_tokens(te);
            r = err_set(e, AUTH_LOGIN_REQUIRED,
                        "the authorization server no longer accepts the refresh token for '%s' "
                        "(invalid_grant)",
                        te->server_url);
        } else if (is_client_error(tr.error)) {
            token_entry_clear_registration(te);
            r = err_set(e, AUTH_LOGIN_REQUIRED,
                        "the authorization server no longer knows the client registered for "
                        "'%s' (%s)",
                        te->server_url, tr.error);
        } else {
            r = oauth_error("refreshing the token failed", &tr, e);
        }
        goto out;
    }
    r = store_tokens(te, &tr, te->scope, false);
out:
    token_response_release(&tr);
    discovery_free(d);
    return r;
}

int auth_fresh_token(const struct auth_target *t, int64_t http_timeout_ms, bool force,
                     struct token_entry **ret, struct err *e)
{
    struct token_entry *te = NULL;
    struct file_lock *lock = NULL;
    char *seen = NULL;
    int64_t http_timeout = http_timeout_ms > 0 ? http_timeout_ms : HTTP_TIMEOUT_MS_DEFAULT;
    int r = entry_load(t->server_url, NULL, &te, e);
    if (r == -ENOENT) {
        if (wants_client_credentials(t) || wants_jwt_bearer(t)) {
            /* nobody needs to be there for this one: sign in now */
            struct login_opts o = {.http_timeout_ms = http_timeout};
            err_clear(e);
            return auth_login(t, &o, NULL, ret, e);
        }
        return err_set(e, AUTH_LOGIN_REQUIRED, "no sign-in for '%s' yet", t->server_url);
    }
    if (r < 0)
        return r;
    if (!force && token_fresh(te, now_unix()))
        goto done;

    /* under the lock, look again: another process may have refreshed meanwhile, and the
     * refresh token it used is gone (rotation); exactly one refresh reaches the server. A
     * forced refresh (the server refused the token) is skipped too when the token changed
     * meanwhile: the new one is what the caller needs. */
    char *issuer = strdup(te->issuer);
    if (te->access_token && !(seen = strdup(te->access_token))) {
        free(issuer);
        issuer = NULL;
    }
    token_entry_free(te);
    te = NULL;
    if (!issuer)
        return -ENOMEM;
    r = entry_lock(t->server_url, issuer, TOKENS_LOCK_TIMEOUT_MS, &lock, e);
    if (r >= 0)
        r = entry_load(t->server_url, issuer, &te, e);
    free(issuer);
    if (r < 0)
        goto out;
    bool same = seen && te->access_token && secure_streq(seen, te->access_token);
    if (!token_fresh(te, now_unix()) || (force && same)) {
        r = refresh_locked(t, te, http_timeout, e);
        struct err se = ERR_INIT;
        int sr = entry_save(te, r < 0 ? &se : e);
        if (r >= 0 && sr < 0)
            r = sr;
        if (r < 0)
            goto out;
    }
done:
    *ret = te;
    te = NULL;
    r = 0;
out:
    secure_free(seen);
    file_lock_release(lock);
    token_entry_free(te);
    return r;
}

int auth_logout(const struct auth_target *t, int64_t http_timeout_ms, bool *ret_revoked,
                struct err *ret_warning, struct err *e)
{
    struct token_entry *te = NULL;
    struct file_lock *lock = NULL;
    int64_t http_timeout = http_timeout_ms > 0 ? http_timeout_ms : HTTP_TIMEOUT_MS_DEFAULT;
    bool revoked = false;
    char *secret = NULL, *assertion = NULL;
    int r = entry_load(t->server_url, NULL, &te, e);
    if (r < 0)
        return r;
    r = entry_lock(t->server_url, te->issuer, TOKENS_LOCK_TIMEOUT_MS, &lock, e);
    if (r < 0)
        goto out;
    const char *rev =
        te->as_metadata ? json_get_string(te->as_metadata, "revocation_endpoint") : NULL;
    if (rev && te->client_id) {
        struct oauth_client client;
        client_of(te, &client);
        /* a confidential client whose credentials live in the config (client_credentials,
         * jwt-bearer) authenticates with them, as it did for the token */
        if (!client.client_secret && t->oauth && t->oauth->client_id &&
            strcmp(t->oauth->client_id, te->client_id) == 0) {
            struct err ce = ERR_INIT;
            if (t->oauth->private_key_file && te->as_metadata &&
                jwt_client_assertion(t->oauth->private_key_file, t->oauth->private_key_alg, NULL,
                                     te->client_id, te->issuer, &assertion, &ce) >= 0) {
                client.auth_method = "private_key_jwt";
                client.assertion = assertion;
            } else if (config_secret(t, &secret, &ce) >= 0 && secret) {
                client.client_secret = secret;
                if (!client.auth_method || strcmp(client.auth_method, "none") == 0)
                    client.auth_method = "client_secret_basic";
            }
        }
        struct err re = ERR_INIT;
        /* the refresh token first: revoking it ends the whole grant at most servers */
        if (te->refresh_token &&
            oauth_revoke(rev, &client, te->refresh_token, "refresh_token", http_timeout, &re) >= 0)
            revoked = true;
        if (te->access_token &&
            oauth_revoke(rev, &client, te->access_token, "access_token", http_timeout, &re) >= 0)
            revoked = true;
        /* local tokens go regardless; the warning tells what the server said */
        if (!revoked && re.msg[0] && ret_warning)
            *ret_warning = re;
    }
    r = store_code(tokens_delete(te->server_url, te->issuer, e));
    if (r < 0)
        goto out;
    *ret_revoked = revoked;
    r = 0;
out:
    secure_free(secret);
    secure_free(assertion);
    file_lock_release(lock);
    token_entry_free(te);
    return r;
}
