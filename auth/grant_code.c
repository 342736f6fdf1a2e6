/* grant_code.c - the authorization code grant: PKCE, the browser and the loopback redirect, or
 * a device code (RFC 8628) typed on another device */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/secmem.h"
#include "credkit/textsafe.h"
#include "credkit/url.h"
#include "credkit/util.h"

#include "browser.h"
#include "callback.h"
#include "client.h"
#include "crypto.h"
#include "dpop.h"
#include "grant.h"
#include "iss.h"
#include "store.h"

#define LOGIN_TIMEOUT_DEFAULT_MS (5 * 60 * 1000)

static int64_t login_timeout(const struct login_opts *o)
{
    return o->timeout_ms > 0 ? o->timeout_ms : LOGIN_TIMEOUT_DEFAULT_MS;
}

/* ---- the browser ------------------------------------------------------------------------- */

/* The entry's "oauth.authorizationParams" ("name=value") appended to the authorization URL
 * in b; one the endpoint's own query already has is refused, as the flow's own are when the
 * entry is read (oauth_config.c). */
static int extra_params(struct buf *b, const char *ep, char *const *params, char sep, struct err *e)
{
    const char *query = strchr(ep, '?');
    int r = 0;
    for (size_t i = 0; r >= 0 && params && params[i]; i++) {
        const char *eq = strchr(params[i], '=');
        char *name = strndup(params[i], (size_t)(eq - params[i])), *have = NULL;
        char *n = name ? url_encode(name) : NULL, *v = n ? url_encode(eq + 1) : NULL;
        if (!v)
            r = err_set(e, -ENOMEM, "out of memory");
        else if (query && url_query_get(query + 1, name, &have) >= 0 && have)
            r = err_set(e, -EINVAL,
                        "\"oauth.authorizationParams.%s\" cannot override a parameter of the "
                        "authorization endpoint's own URL",
                        name);
        else
            r = buf_printf(b, "%c%s=%s", sep, n, v);
        sep = '&';
        free(have);
        free(name);
        free(n);
        free(v);
    }
    return r;
}

/* "select_account" when signing in as an account other than the default one, so that a
 * browser still signed in as another user lets the person choose (OpenID Connect Core 3.1.2.1);
 * NULL when the entry's authorizationParams or the endpoint's own URL says "prompt" itself, or
 * when the metadata lists the prompt values it supports without this one. */
static const char *account_prompt(const struct grant_session *s, const char *ep)
{
    const char *query = strchr(ep, '?');
    char *have = NULL;
    if (!s->t->label)
        return NULL;
    if (json_get_array(s->d->as, "prompt_values_supported") &&
        !discovery_as_lists(s->d, "prompt_values_supported", "select_account"))
        return NULL;
    for (char *const *p = s->t->oauth->authorization_params; p && *p; p++)
        if (strncmp(*p, "prompt=", 7) == 0)
            return NULL;
    if (query && url_query_get(query + 1, "prompt", &have) >= 0 && have) {
        free(have);
        return NULL;
    }
    return "select_account";
}

static int build_authorize_url(const struct grant_session *s, const char *challenge,
                               const char *state, char **ret, struct err *e)
{
    const char *ep = discovery_as_string(s->d, "authorization_endpoint");
    const struct token_entry *te = s->te;
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
        s->scope,
        "resource",
        grant_resource(s->t, s->d),
        "prompt",
        account_prompt(s, ep),
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
    r = r < 0 ? r : extra_params(&b, ep, s->t->oauth->authorization_params, sep, e);
    if (r < 0) {
        buf_release(&b);
        return r;
    }
    *ret = buf_detach(&b);
    return *ret ? 0 : -ENOMEM;
}

/* A pasted address, refused or taken: the person who pasted it sees why, even when quiet. */
static void paste_cb(const char *msg, void *userdata)
{
    auth_ui_say(userdata, AUTH_SAY_ALWAYS, "%s", msg);
}

static void countdown_cb(int64_t remaining_ms, void *userdata)
{
    const struct auth_ui *ui = userdata;
    if (ui && ui->countdown)
        ui->countdown(ui->userdata, remaining_ms);
}

/* Shows the authorization URL (and opens the browser on it), then waits for the callback. */
static int authorize(const struct grant_session *s, struct callback *cb, const char *url,
                     const char *state, struct callback_result *ret, struct err *e)
{
    const struct login_opts *o = s->o;
    int64_t timeout = login_timeout(o);
    /* shown as is but escaped: the endpoint in it is the authorization server's text */
    struct buf su;
    buf_init(&su, 64 * 1024);
    auth_ui_say(s->ui, AUTH_SAY_ALWAYS, "open this URL to sign in:\n\n  %s\n",
                text_escaped(&su, url));
    buf_release(&su);
    if (!o->no_browser) {
        struct err be = ERR_INIT;
        if (browser_open(url, &be) < 0)
            auth_ui_say(s->ui, AUTH_SAY_INFO,
                        "could not open a browser (%s): open the URL above yourself", err_msg(&be));
    }
    auth_ui_say(s->ui, AUTH_SAY_INFO, "waiting for the browser to come back to %s (at most %llds)",
                callback_redirect_uri(cb), (long long)(timeout / 1000));
    if (o->paste) {
        /* the browser on another machine cannot reach our listener: its page fails to load,
         * and the address it tried is the answer */
        auth_ui_say(s->ui, AUTH_SAY_ALWAYS,
                    "or paste the address your browser ends on here (%s?code=...; its page may "
                    "fail to load)",
                    callback_redirect_uri(cb));
        callback_paste_from(cb, STDIN_FILENO, paste_cb, (void *)s->ui);
    }
    int r = callback_wait(cb, state, timeout, countdown_cb, (void *)s->ui, ret, e);
    if (r == -ETIMEDOUT)
        r = err_set(e, -ETIME,
                    "nobody signed in within %llds: run the command again%s, or use "
                    "--timeout to wait longer",
                    (long long)(timeout / 1000),
                    o->no_browser ? "" : ", or use --no-browser and open the URL yourself");
    return r;
}

/* Judges what came back to the redirect. The issuer first (RFC 9207, MCP 2026-07-28): a
 * mix-up attack sends the response of another authorization server, and a response that fails
 * the check is neither acted on nor shown - not even its error, which is the attacker's text.
 * Then an error, or the code. */
static int check_callback(const struct grant_session *s, const char *recorded_issuer,
                          const struct callback_result *res, bool *ret_client_rejected,
                          struct err *e)
{
    const struct discovery *d = s->d;
    switch (iss_check(recorded_issuer, iss_advertised(d->as), res->iss)) {
    case ISS_MISSING:
        return err_set(e, -EPERM,
                       "the response to the sign-in did not come from the expected authorization "
                       "server: '%s' promises an 'iss' parameter "
                       "(authorization_response_iss_parameter_supported) but the response has "
                       "none: refusing it",
                       recorded_issuer);
    case ISS_MISMATCH:
        /* the iss itself is shown: it names who answered, and a user must see the mix-up */
        return err_set(e, -EPERM,
                       "the response to the sign-in did not come from the expected authorization "
                       "server: it came back from issuer '%s', not '%s': refusing it (start "
                       "again; if this persists, suspect a mix-up attack)",
                       res->iss, recorded_issuer);
    case ISS_OK:
        break;
    }
    if (res->error) {
        if (grant_is_client_error(res->error) && s->te->registration == REGISTRATION_DYNAMIC) {
            *ret_client_rejected = true;
            return err_set(e, -EPROTO, "the authorization server does not know the client");
        }
        return err_set(e, -EACCES, "sign-in failed: %s%s%s", res->error,
                       res->error_description ? ": " : "",
                       res->error_description ? res->error_description : "");
    }
    return 0;
}

static int exchange_code(struct grant_session *s, const char *code, const char *verifier,
                         bool *ret_client_rejected, struct err *e)
{
    struct token_entry *te = s->te;
    struct token_response tr = {0};
    struct oauth_client client;
    client_of(te, &client);
    const char *params[] = {
        "grant_type",
        "authorization_code",
        "code",
        code,
        "redirect_uri",
        te->redirect_uri,
        "code_verifier",
        verifier,
        "resource",
        grant_resource(s->t, s->d),
        NULL,
    };
    auth_ui_say(s->ui, AUTH_SAY_INFO, "exchanging the authorization code for tokens");
    int r = grant_request_tokens(te, s->d, &client, params, s->http_timeout_ms, &tr, e);
    if (r < 0)
        goto out;
    if (tr.error) {
        if (grant_is_client_error(tr.error) && te->registration == REGISTRATION_DYNAMIC) {
            *ret_client_rejected = true;
            r = err_set(e, -EPROTO, "the authorization server does not know the client");
            goto out;
        }
        r = grant_oauth_error("the code exchange failed", &tr, e);
        goto out;
    }
    r = store_tokens(te, &tr, s->scope, true);
out:
    token_response_release(&tr);
    return r;
}

/* One authorization-code attempt with the registration in s->te. Sets *ret_client_rejected
 * when the server did not know the client (the caller re-registers and tries once more). */
static int code_attempt(struct grant_session *s, struct callback *cb, bool *ret_client_rejected,
                        struct err *e)
{
    char *verifier = NULL, *challenge = NULL, *state = NULL, *url = NULL, *issuer = NULL;
    struct callback_result res = {0};
    int r;

    *ret_client_rejected = false;
    /* the issuer of the validated metadata, recorded with the verifier and the state of this
     * one request: the response is judged against it (RFC 9207) */
    issuer = strdup(s->d->issuer);
    r = issuer ? pkce_new(&verifier, &challenge) : -ENOMEM;
    if (r >= 0)
        r = secure_random_token(32, &state);
    if (r >= 0)
        r = build_authorize_url(s, challenge, state, &url, e);
    if (r >= 0)
        r = authorize(s, cb, url, state, &res, e);
    if (r >= 0)
        r = check_callback(s, issuer, &res, ret_client_rejected, e);
    if (r >= 0)
        r = exchange_code(s, res.code, verifier, ret_client_rejected, e);
    callback_result_release(&res);
    secure_free(verifier);
    secure_free(challenge);
    secure_free(state);
    free(issuer);
    free(url);
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

/* The listener is up before the browser starts; a pre-registered redirect URI fixes its port,
 * a stored dynamic registration's port is reused when free. A callback URL override (an ingress
 * or a port forward in front of this machine) is the redirect URI instead, while the listener
 * stays on loopback, on the callback port when one is given. */
static int listen_for_redirect(const struct grant_session *s, struct callback **ret,
                               const char **ret_redirect, struct err *e)
{
    const struct oauth_config *oa = s->t->oauth;
    const char *override = s->o->callback_url ? s->o->callback_url : oa->callback_url;
    uint16_t fixed = s->o->callback_port ? s->o->callback_port : oa->callback_port;
    uint16_t port = fixed;
    if (!port && !override && oa->redirect_uri)
        port = port_of(oa->redirect_uri);
    else if (!port && !override && s->te->registration == REGISTRATION_DYNAMIC && !oa->client_id)
        port = port_of(s->te->redirect_uri);
    bool must = fixed || (!override && oa->redirect_uri);
    if (fixed && !override && oa->redirect_uri && port_of(oa->redirect_uri) != fixed)
        return err_set(e, -EINVAL,
                       "the callback port %u is not the port of \"oauth.redirectUri\" '%s', where "
                       "the browser is sent back: leave the callback port out",
                       (unsigned)fixed, oa->redirect_uri);
    int r = callback_start(port, ret, e);
    if (r < 0 && port && !must) {
        err_clear(e);
        r = callback_start(0, ret, e);
    }
    if (r >= 0 && override && (r = callback_set_redirect_uri(*ret, override, e)) < 0) {
        callback_stop(*ret);
        *ret = NULL;
    }
    if (r < 0)
        return r;
    *ret_redirect = override || !oa->redirect_uri ? callback_redirect_uri(*ret) : oa->redirect_uri;
    return 0;
}

/* With the browser: a client for the redirect, one attempt, and one more with a new
 * registration when the server did not know a dynamically registered client. */
static int browser_sign_in(struct grant_session *s, struct err *e)
{
    struct callback *cb = NULL;
    const char *redirect = NULL;
    int r = listen_for_redirect(s, &cb, &redirect, e);
    if (r < 0)
        return r;
    for (int attempt = 0;; attempt++) {
        bool rejected = false;
        r = client_ensure(s, redirect, false, e);
        if (r >= 0)
            r = grant_session_pause(s, e);
        if (r < 0)
            break;
        r = code_attempt(s, cb, &rejected, e);
        r = grant_session_resume(s, r, e);
        if (r >= 0 || !s->lock)
            break;
        if (!rejected || attempt >= 1) {
            grant_session_failed(s);
            break;
        }
        auth_ui_say(s->ui, AUTH_SAY_INFO,
                    "the authorization server no longer knows this client: registering "
                    "again");
        token_entry_clear_registration(s->te);
        err_clear(e);
    }
    callback_stop(cb);
    return r;
}

/* ---- the device code --------------------------------------------------------------------- */

/* Polls the token endpoint at the interval the server asked for until the person signed in,
 * refused, or the code expired (at deadline, monotonic). */
static int device_poll(struct grant_session *s, const struct oauth_client *client,
                       const struct device_authorization *da, int64_t deadline, struct err *e)
{
    int64_t interval = da->interval;
    const struct auth_ui *ui = s->ui;
    for (;;) {
        if (now_mono_ms() + interval * 1000 > deadline)
            return err_set(e, -ETIME, "the device code expired before the sign-in was completed");
        /* waiting the interval the server asked for is the protocol, not a guess */
        struct timespec ts = {.tv_sec = (time_t)interval};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        if (ui && ui->countdown)
            ui->countdown(ui->userdata, deadline - now_mono_ms());
        struct token_response tr = {0};
        const char *params[] = {
            "grant_type",  "urn:ietf:params:oauth:grant-type:device_code",
            "device_code", da->device_code,
            "resource",    grant_resource(s->t, s->d),
            NULL,
        };
        int r = auth_dpop_token(s->te, s->d, client, params, s->http_timeout_ms, &tr, e);
        if (r >= 0 && !tr.error)
            r = store_tokens(s->te, &tr, s->scope, true);
        else if (r >= 0 && strcmp(tr.error, "authorization_pending") == 0)
            r = 1;
        else if (r >= 0 && strcmp(tr.error, "slow_down") == 0) {
            interval += 5; /* RFC 8628 3.5 */
            r = 1;
        } else if (r >= 0)
            r = grant_oauth_error("the device sign-in failed", &tr, e);
        token_response_release(&tr);
        if (r <= 0)
            return r;
    }
}

static int device_flow(struct grant_session *s, struct err *e)
{
    const struct discovery *d = s->d;
    const char *ep = discovery_as_string(d, "device_authorization_endpoint");
    struct device_authorization da = {0};
    struct oauth_client client;
    int r;
    if (!ep)
        return err_set(e, -EINVAL,
                       "the authorization server '%s' does not offer the device authorization "
                       "grant: sign in with a browser (--no-browser prints the URL to open "
                       "elsewhere)",
                       d->issuer);
    client_of(s->te, &client);
    r = oauth_device_authorize(ep, &client, s->scope, grant_resource(s->t, d), s->http_timeout_ms,
                               &da, e);
    if (r < 0)
        return r;
    /* all three are the authorization server's text: escaped for the terminal */
    struct buf sv, sc, sf;
    buf_init(&sv, 64 * 1024);
    buf_init(&sc, 64 * 1024);
    buf_init(&sf, 64 * 1024);
    if (da.verification_uri_complete)
        auth_ui_say(s->ui, AUTH_SAY_ALWAYS,
                    "to sign in, open %s and enter the code %s\n  (or open %s , which carries "
                    "the code)",
                    text_escaped(&sv, da.verification_uri), text_escaped(&sc, da.user_code),
                    text_escaped(&sf, da.verification_uri_complete));
    else
        auth_ui_say(s->ui, AUTH_SAY_ALWAYS, "to sign in, open %s and enter the code %s",
                    text_escaped(&sv, da.verification_uri), text_escaped(&sc, da.user_code));
    buf_release(&sv);
    buf_release(&sc);
    buf_release(&sf);
    int64_t deadline = now_mono_ms() + da.expires_in * 1000;
    int64_t limit = s->o->timeout_ms > 0 ? now_mono_ms() + s->o->timeout_ms : deadline;
    if (limit < deadline)
        deadline = limit;
    r = device_poll(s, &client, &da, deadline, e);
    device_authorization_release(&da);
    return r;
}

/* A client of its own, registered for the device grant (its redirect URI is never used); a
 * stored one for the same URI is reused. Nobody waits on our lock while a person types a code
 * elsewhere. */
static int device_sign_in(struct grant_session *s, struct err *e)
{
    int r = client_ensure(s, "http://127.0.0.1/device", true, e);
    if (r >= 0)
        r = grant_session_pause(s, e);
    if (r < 0)
        return r;
    r = grant_session_resume(s, device_flow(s, e), e);
    if (r < 0)
        grant_session_failed(s);
    return r;
}

static int code_sign_in(struct grant_session *s, struct err *e)
{
    if (s->o->device_code)
        return device_sign_in(s, e);
    if (!s->d->as_defaults && !discovery_as_lists(s->d, "code_challenge_methods_supported", "S256"))
        return err_set(e, -EPROTO,
                       "the authorization server '%s' does not advertise PKCE with S256 "
                       "(code_challenge_methods_supported): refusing to sign in without it",
                       s->d->issuer);
    return browser_sign_in(s, e);
}

const struct grant_ops grant_authorization_code = {
    .name = "authorization_code",
    .sign_in = code_sign_in,
};
