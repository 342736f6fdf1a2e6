/* oauth.c - token, registration, revocation and device endpoints */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credkit/buf.h"
#include "credkit/http.h"
#include "credkit/json.h"
#include "credkit/secmem.h"
#include "credkit/textsafe.h"
#include "credkit/url.h"
#include "credkit/util.h"

#include "crypto.h"
#include "net.h"
#include "oauth.h"

#define ANSWER_MAX (256 * 1024)

static char *dup_json_string(struct json_object *o, const char *key)
{
    const char *s = json_get_string(o, key);
    return s ? strdup(s) : NULL;
}

void token_response_release(struct token_response *t)
{
    if (!t)
        return;
    secure_free(t->access_token);
    free(t->token_type);
    secure_free(t->refresh_token);
    free(t->scope);
    free(t->account);
    free(t->error);
    free(t->error_description);
    *t = (struct token_response){0};
}

void registration_release(struct registration *r)
{
    if (!r)
        return;
    free(r->client_id);
    secure_free(r->client_secret);
    free(r->auth_method);
    free(r->client_uri);
    secure_free(r->access_token);
    *r = (struct registration){0};
}

void device_authorization_release(struct device_authorization *d)
{
    if (!d)
        return;
    secure_free(d->device_code);
    free(d->user_code);
    free(d->verification_uri);
    free(d->verification_uri_complete);
    *d = (struct device_authorization){0};
}

static int form_add(struct buf *b, const char *name, const char *value)
{
    char *ev = url_encode(value);
    int r = ev ? 0 : -ENOMEM;
    if (r >= 0 && b->len)
        r = buf_append_char(b, '&');
    if (r >= 0)
        r = buf_printf(b, "%s=%s", name, ev);
    secure_free(ev);
    return r;
}

/* The client's authentication: an Authorization header (basic) or form fields. */
static int client_auth(const struct oauth_client *c, struct buf *form, char **ret_header)
{
    const char *m = c->auth_method;
    int r = 0;
    *ret_header = NULL;
    if (!m)
        m = c->client_secret ? "client_secret_basic" : "none";
    if (strcmp(m, "client_secret_basic") == 0 && c->client_secret) {
        /* RFC 6749 2.3.1: form-urlencode both before joining and encoding */
        char *id = url_encode(c->client_id), *sec = url_encode(c->client_secret);
        struct buf raw;
        buf_init_secret(&raw, 16 * 1024);
        r = id && sec ? buf_printf(&raw, "%s:%s", id, sec) : -ENOMEM;
        char *b64 = r >= 0 ? base64_encode(raw.data, raw.len) : NULL;
        if (r >= 0 && !b64)
            r = -ENOMEM;
        if (r >= 0 && asprintf(ret_header, "Authorization: Basic %s", b64) < 0) {
            *ret_header = NULL;
            r = -ENOMEM;
        }
        secure_free(b64);
        secure_free(id);
        secure_free(sec);
        buf_release(&raw);
        return r;
    }
    r = form_add(form, "client_id", c->client_id);
    if (r >= 0 && strcmp(m, "client_secret_post") == 0 && c->client_secret)
        r = form_add(form, "client_secret", c->client_secret);
    if (r >= 0 && strcmp(m, "private_key_jwt") == 0 && c->assertion) {
        r = form_add(form, "client_assertion_type",
                     "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
        if (r >= 0)
            r = form_add(form, "client_assertion", c->assertion);
    }
    return r;
}

/* POSTs a form, with the header line extra when not NULL (a DPoP proof); parses a JSON object
 * answer into *ret_obj, and a valid DPoP-Nonce of the answer into *ret_nonce (when not NULL;
 * NULL when none). */
static int post_form_ex(const char *endpoint, const char *what, const struct oauth_client *client,
                        struct buf *form, const char *extra, int64_t timeout_ms, long *ret_status,
                        struct json_object **ret_obj, char **ret_nonce, struct err *e)
{
    char *auth = NULL;
    struct http_response resp = {0};
    struct json_object *obj = NULL;
    int r = client ? client_auth(client, form, &auth) : 0;
    if (r < 0)
        return r;
    /* the client's authentication goes into the form: once only, whatever the retries */
    const char *headers[] = {"Accept: application/json", auth ? auth : extra, auth ? extra : NULL,
                             NULL};
    struct http_request req = {
        .tls = net_tls(),
        .method = "POST",
        .url = endpoint,
        .headers = headers,
        .body = form->data ? form->data : "",
        .body_len = form->len,
        .content_type = "application/x-www-form-urlencoded",
        .timeout_ms = timeout_ms,
        .max_body = ANSWER_MAX,
        .secret_body = true,
    };
    r = http_do(&req, &resp, e);
    if (r < 0) {
        r = err_prefix(e, "%s", what);
        goto out;
    }
    *ret_status = resp.status;
    const char *nonce = ret_nonce ? http_response_header(&resp, "dpop-nonce") : NULL;
    if (nonce && dpop_nonce_valid(nonce, strlen(nonce)) && !(*ret_nonce = strdup(nonce))) {
        r = -ENOMEM;
        goto out;
    }
    if (resp.body.len == 0) {
        r = 0;
        goto out;
    }
    r = json_parse(resp.body.data, resp.body.len, ANSWER_MAX, &obj, e);
    if (r < 0 || !json_object_is_type(obj, json_type_object)) {
        r = err_set(e, -EBADMSG,
                    "%s: '%s' answered HTTP %ld with something that is not a JSON object", what,
                    endpoint, resp.status);
        goto out;
    }
    *ret_obj = obj;
    obj = NULL;
    r = 0;
out:
    json_object_put(obj);
    secure_free(auth);
    http_response_release(&resp);
    return r;
}

static int post_form(const char *endpoint, const char *what, const struct oauth_client *client,
                     struct buf *form, int64_t timeout_ms, long *ret_status,
                     struct json_object **ret_obj, struct err *e)
{
    return post_form_ex(endpoint, what, client, form, NULL, timeout_ms, ret_status, ret_obj, NULL,
                        e);
}

/* The token request, with a DPoP proof when client->dpop: a first try, and when the server
 * answers 400 use_dpop_nonce with a DPoP-Nonce (RFC 9449 8), one more with that nonce. The
 * form is built again for the second try (client_auth() adds to it). */
static int post_token(const char *endpoint, const struct oauth_client *client,
                      const struct buf *params, int64_t timeout_ms, long *ret_status,
                      struct json_object **ret_obj, struct err *e)
{
    char *nonce = NULL;
    int r = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        struct buf form;
        char *proof = NULL, *line = NULL, *got = NULL;
        buf_init_secret(&form, params->max);
        r = params->len ? buf_append(&form, params->data, params->len) : 0;
        if (r >= 0 && client->dpop) {
            r = dpop_proof(client->dpop, "POST", endpoint, NULL, nonce, now_unix(), &proof);
            if (r >= 0 && asprintf(&line, "DPoP: %s", proof) < 0) {
                line = NULL;
                r = -ENOMEM;
            }
            if (r < 0)
                r = err_set(e, r, "token request: cannot sign the DPoP proof for '%s'", endpoint);
        }
        if (r >= 0) {
            json_object_put(*ret_obj);
            *ret_obj = NULL;
            r = post_form_ex(endpoint, "token request", client, &form, line, timeout_ms, ret_status,
                             ret_obj, client->dpop ? &got : NULL, e);
        }
        free(proof);
        free(line);
        buf_release(&form);
        const char *error = r >= 0 && *ret_obj ? json_get_string(*ret_obj, "error") : NULL;
        bool again = attempt == 0 && got && *ret_status == 400 && error &&
                     strcmp(error, "use_dpop_nonce") == 0;
        free(nonce);
        nonce = got;
        if (!again)
            break;
    }
    free(nonce);
    return r;
}

bool oauth_bearer_token_valid(const char *token, size_t len)
{
    return token && b64token_valid(token, len);
}

/* A successful token answer's access_token and token_type, checked before anything is kept:
 * the token goes out as "Authorization: Bearer <token>", so one that is not an RFC 6750
 * b64token (a line break in it would make a second header line in every consumer) is refused
 * here and never stored. The message never quotes the token. */
static int token_check_answer(struct json_object *obj, const char *endpoint, bool dpop,
                              struct err *e)
{
    struct json_object *at = NULL;
    (void)json_object_object_get_ex(obj, "access_token", &at);
    if (!oauth_bearer_token_valid(json_object_get_string(at),
                                  (size_t)json_object_get_string_len(at)))
        return err_set(e, -EPROTO,
                       "token request: the access token from '%s' is not a valid bearer token "
                       "(RFC 6750 allows letters, digits, -._~+/ and = at the end only; it "
                       "would break the Authorization header): refused, nothing was stored; "
                       "report this to the authorization server's operator",
                       endpoint);
    const char *type = json_get_string(obj, "token_type");
    /* a DPoP token is good only with proofs of the key it is bound to: only when we sent one */
    if (type && strcasecmp(type, "bearer") != 0 && !(dpop && strcasecmp(type, "dpop") == 0)) {
        struct buf sc;
        buf_init(&sc, 256);
        int r = err_set(e, -EPROTO, "token request: unsupported token type '%.64s' (only %s)",
                        text_escaped(&sc, type), dpop ? "Bearer and DPoP" : "Bearer");
        buf_release(&sc);
        return r;
    }
    return 0;
}

int oauth_token(const char *endpoint, const struct oauth_client *client, const char *const *params,
                int64_t timeout_ms, struct token_response *ret, struct err *e)
{
    struct buf form;
    struct json_object *obj = NULL;
    struct token_response t = {.expires_in = -1};
    int r = 0;
    buf_init_secret(&form, 64 * 1024);
    for (size_t i = 0; r >= 0 && params[i]; i += 2)
        if (params[i + 1])
            r = form_add(&form, params[i], params[i + 1]);
    if (r < 0)
        goto out;
    r = post_token(endpoint, client, &form, timeout_ms, &t.status, &obj, e);
    if (r < 0)
        goto out;
    if (!obj) {
        r = err_set(e, -EBADMSG, "token request: '%s' answered HTTP %ld with an empty body",
                    endpoint, t.status);
        goto out;
    }
    if (t.status != 200 || json_get_string(obj, "error")) {
        t.error = dup_json_string(obj, "error");
        t.error_description = dup_json_string(obj, "error_description");
        if (!t.error) {
            r = err_set(e, -EPROTO, "token request: '%s' answered HTTP %ld without an OAuth error",
                        endpoint, t.status);
            goto out;
        }
    } else {
        const char *at = json_get_string(obj, "access_token");
        if (!at || !*at) {
            r = err_set(e, -EBADMSG, "token request: the answer from '%s' has no access_token",
                        endpoint);
            goto out;
        }
        r = token_check_answer(obj, endpoint, client->dpop != NULL, e);
        if (r < 0)
            goto out;
        t.access_token = strdup(at);
        t.token_type = dup_json_string(obj, "token_type");
        t.refresh_token = dup_json_string(obj, "refresh_token");
        t.scope = dup_json_string(obj, "scope");
        /* OpenID Connect's id_token, when the server gives one: only whom it names is kept */
        t.account = jwt_account(json_get_string(obj, "id_token"));
        int64_t ei;
        /* a lifetime beyond any sense (INT64_MAX) must not overflow the expiry computed from
         * it: a token that "expires" in the past, or never, would break a working sign-in */
        if (json_get_int64(obj, "expires_in", &ei) && ei >= 0)
            t.expires_in = ei < OAUTH_LIFETIME_MAX_S ? ei : OAUTH_LIFETIME_MAX_S;
        if (!t.access_token) {
            r = -ENOMEM;
            goto out;
        }
    }
    *ret = t;
    t = (struct token_response){0};
    r = 0;
out:
    token_response_release(&t);
    json_object_put(obj);
    buf_release(&form);
    return r;
}

int oauth_token_exchange(const char *endpoint, const struct oauth_client *client,
                         const char *subject_token, const char *audience, const char *resource,
                         const char *scope, int64_t timeout_ms, char **ret, struct err *e)
{
    static const char id_jag[] = "urn:ietf:params:oauth:token-type:id-jag";
    struct buf form;
    struct json_object *obj = NULL;
    long status = 0;
    int r;
    buf_init_secret(&form, 64 * 1024);
    r = form_add(&form, "grant_type", "urn:ietf:params:oauth:grant-type:token-exchange");
    if (r >= 0)
        r = form_add(&form, "requested_token_type", id_jag);
    if (r >= 0)
        r = form_add(&form, "subject_token", subject_token);
    if (r >= 0)
        r = form_add(&form, "subject_token_type", "urn:ietf:params:oauth:token-type:id_token");
    if (r >= 0)
        r = form_add(&form, "audience", audience);
    if (r >= 0 && resource)
        r = form_add(&form, "resource", resource);
    if (r >= 0 && scope)
        r = form_add(&form, "scope", scope);
    if (r >= 0)
        r = post_form(endpoint, "token exchange", client, &form, timeout_ms, &status, &obj, e);
    if (r < 0)
        goto out;
    const char *err = obj ? json_get_string(obj, "error") : NULL;
    if (status != 200 || err || !obj) {
        const char *desc = obj ? json_get_string(obj, "error_description") : NULL;
        r = err_set(
            e, -EPROTO, "token exchange at the identity provider '%s' failed: HTTP %ld%s%s%s%s",
            endpoint, status, err ? ": " : "", err ? err : "", desc ? ": " : "", desc ? desc : "");
        goto out;
    }
    const char *tok = json_get_string(obj, "access_token");
    const char *type = json_get_string(obj, "issued_token_type");
    if (!tok || !*tok || (type && strcmp(type, id_jag) != 0)) {
        r = err_set(e, -EBADMSG,
                    "token exchange at '%s': the answer holds no identity assertion grant",
                    endpoint);
        goto out;
    }
    *ret = strdup(tok);
    r = *ret ? 0 : -ENOMEM;
out:
    json_object_put(obj);
    buf_release(&form);
    return r;
}

/* The RFC 7591 registration request of a public native client. NULL on ENOMEM. Caller puts. */
static struct json_object *registration_request(const char *redirect_uri, const char *scope,
                                                bool device, const struct oauth_client_meta *meta)
{
    static const struct oauth_client_meta none;
    if (!meta)
        meta = &none;
    struct json_object *req = json_object_new_object();
    struct json_object *uris = json_object_new_array(), *grants = json_object_new_array(),
                       *types = json_object_new_array();
    if (!req || !uris || !grants || !types) {
        json_object_put(req);
        json_object_put(uris);
        json_object_put(grants);
        json_object_put(types);
        return NULL;
    }
    (void)json_object_array_add(uris, json_object_new_string(redirect_uri));
    (void)json_object_array_add(grants, json_object_new_string("authorization_code"));
    (void)json_object_array_add(grants, json_object_new_string("refresh_token"));
    if (device)
        (void)json_object_array_add(
            grants, json_object_new_string("urn:ietf:params:oauth:grant-type:device_code"));
    (void)json_object_array_add(types, json_object_new_string("code"));
    (void)json_object_object_add(
        req, "client_name", json_object_new_string(meta->name ? meta->name : "mcp-auth (credkit)"));
    if (meta->uri)
        (void)json_object_object_add(req, "client_uri", json_object_new_string(meta->uri));
    if (meta->logo_uri)
        (void)json_object_object_add(req, "logo_uri", json_object_new_string(meta->logo_uri));
    (void)json_object_object_add(req, "redirect_uris", uris);
    (void)json_object_object_add(req, "grant_types", grants);
    (void)json_object_object_add(req, "response_types", types);
    (void)json_object_object_add(req, "token_endpoint_auth_method", json_object_new_string("none"));
    (void)json_object_object_add(req, "application_type", json_object_new_string("native"));
    if (scope)
        (void)json_object_object_add(req, "scope", json_object_new_string(scope));
    return req;
}

/* The registration in a successful answer (a JSON object with a client_id). */
static int registration_from_answer(struct json_object *answer, const char *endpoint,
                                    struct registration *ret, struct err *e)
{
    struct registration reg = {0};
    if (!answer || !json_object_is_type(answer, json_type_object))
        return err_set(e, -EBADMSG, "client registration at '%s': the answer is not a JSON object",
                       endpoint);
    const char *cid = json_get_string(answer, "client_id");
    if (!cid || !*cid)
        return err_set(e, -EBADMSG, "client registration at '%s': the answer has no client_id",
                       endpoint);
    reg.client_id = strdup(cid);
    reg.client_secret = dup_json_string(answer, "client_secret");
    reg.auth_method = dup_json_string(answer, "token_endpoint_auth_method");
    json_get_int64(answer, "client_secret_expires_at", &reg.client_secret_expires_at);
    reg.client_uri = dup_json_string(answer, "registration_client_uri");
    reg.access_token = dup_json_string(answer, "registration_access_token");
    if (reg.access_token && !oauth_bearer_token_valid(reg.access_token, strlen(reg.access_token))) {
        /* it would go out as a bearer token: one that cannot is not kept (the registration
         * works without it; only the check that the client still exists is skipped) */
        secure_free(reg.access_token);
        reg.access_token = NULL;
    }
    if (reg.client_uri && url_check_secure(reg.client_uri, "registration_client_uri", NULL) < 0) {
        free(reg.client_uri); /* never send a token to an insecure endpoint */
        reg.client_uri = NULL;
        secure_free(reg.access_token);
        reg.access_token = NULL;
    }
    if (!reg.client_id) {
        registration_release(&reg);
        return -ENOMEM;
    }
    *ret = reg;
    return 0;
}

int oauth_register(const char *endpoint, const char *redirect_uri, const char *scope, bool device,
                   const struct oauth_client_meta *meta, int64_t timeout_ms,
                   struct registration *ret, struct err *e)
{
    static const char *const headers[] = {"Accept: application/json", NULL};
    struct json_object *req = registration_request(redirect_uri, scope, device, meta),
                       *answer = NULL;
    struct http_response resp = {0};
    int r;
    if (!req)
        return -ENOMEM;
    const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE);
    struct http_request hreq = {
        .tls = net_tls(),
        .method = "POST",
        .url = endpoint,
        .headers = headers,
        .body = body,
        .body_len = strlen(body),
        .content_type = "application/json",
        .timeout_ms = timeout_ms,
        .max_body = ANSWER_MAX,
        .secret_body = true,
    };
    r = http_do(&hreq, &resp, e);
    if (r < 0) {
        r = err_prefix(e, "client registration");
        goto out;
    }
    /* an answer that is not JSON is judged by its status below */
    if (resp.body.len && json_parse(resp.body.data, resp.body.len, ANSWER_MAX, &answer, NULL) < 0)
        answer = NULL;
    if (resp.status != 200 && resp.status != 201) {
        const char *err = answer ? json_get_string(answer, "error") : NULL;
        const char *desc = answer ? json_get_string(answer, "error_description") : NULL;
        r = err_set(e, -EPROTO, "client registration at '%s' failed: HTTP %ld%s%s%s%s", endpoint,
                    resp.status, err ? ": " : "", err ? err : "", desc ? ": " : "",
                    desc ? desc : "");
        goto out;
    }
    r = registration_from_answer(answer, endpoint, ret, e);
out:
    json_object_put(answer);
    json_object_put(req);
    http_response_release(&resp);
    return r;
}

int oauth_client_exists(const char *client_uri, const char *access_token, int64_t timeout_ms)
{
    struct buf hdr;
    struct http_response resp = {0};
    int r;
    if (!oauth_bearer_token_valid(access_token, access_token ? strlen(access_token) : 0))
        return -EINVAL; /* cannot tell: never a header built from it */
    buf_init_secret(&hdr, 16 * 1024);
    r = buf_printf(&hdr, "Authorization: Bearer %s", access_token);
    if (r < 0)
        goto out;
    const char *headers[] = {"Accept: application/json", hdr.data, NULL};
    struct http_request req = {.tls = net_tls(),
                               .url = client_uri,
                               .headers = headers,
                               .timeout_ms = timeout_ms,
                               .max_body = 256 * 1024,
                               .secret_body = true};
    r = http_do(&req, &resp, NULL);
    if (r < 0)
        goto out;
    if (resp.status == 200)
        r = 1;
    else if (resp.status == 401 || resp.status == 403 || resp.status == 404)
        r = 0;
    else
        r = -EPROTO;
    http_response_release(&resp);
out:
    buf_release(&hdr);
    return r;
}

int oauth_revoke(const char *endpoint, const struct oauth_client *client, const char *token,
                 const char *hint, int64_t timeout_ms, struct err *e)
{
    struct buf form;
    struct json_object *obj = NULL;
    long status = 0;
    int r;
    buf_init_secret(&form, 64 * 1024);
    r = form_add(&form, "token", token);
    if (r >= 0 && hint)
        r = form_add(&form, "token_type_hint", hint);
    if (r >= 0)
        r = post_form(endpoint, "token revocation", client, &form, timeout_ms, &status, &obj, e);
    if (r >= 0 && status != 200) {
        const char *err = obj ? json_get_string(obj, "error") : NULL;
        r = err_set(e, -EPROTO, "token revocation at '%s' failed: HTTP %ld%s%s", endpoint, status,
                    err ? ": " : "", err ? err : "");
    }
    json_object_put(obj);
    buf_release(&form);
    return r;
}

int oauth_device_authorize(const char *endpoint, const struct oauth_client *client,
                           const char *scope, const char *resource, int64_t timeout_ms,
                           struct device_authorization *ret, struct err *e)
{
    struct buf form;
    struct json_object *obj = NULL;
    struct device_authorization d = {.interval = 5};
    long status = 0;
    int r = 0;
    buf_init_secret(&form, 64 * 1024);
    if (scope)
        r = form_add(&form, "scope", scope);
    if (r >= 0 && resource)
        r = form_add(&form, "resource", resource);
    if (r >= 0)
        r = post_form(endpoint, "device authorization", client, &form, timeout_ms, &status, &obj,
                      e);
    if (r < 0)
        goto out;
    if (status != 200 || !obj) {
        const char *err = obj ? json_get_string(obj, "error") : NULL;
        const char *desc = obj ? json_get_string(obj, "error_description") : NULL;
        r = err_set(e, -EPROTO, "device authorization at '%s' failed: HTTP %ld%s%s%s%s", endpoint,
                    status, err ? ": " : "", err ? err : "", desc ? ": " : "", desc ? desc : "");
        goto out;
    }
    d.device_code = dup_json_string(obj, "device_code");
    d.user_code = dup_json_string(obj, "user_code");
    d.verification_uri = dup_json_string(obj, "verification_uri");
    d.verification_uri_complete = dup_json_string(obj, "verification_uri_complete");
    if (!json_get_int64(obj, "expires_in", &d.expires_in) || d.expires_in <= 0)
        d.expires_in = 600;
    else if (d.expires_in > OAUTH_LIFETIME_MAX_S)
        d.expires_in = OAUTH_LIFETIME_MAX_S; /* now + it, in milliseconds, must not overflow */
    if (!json_get_int64(obj, "interval", &d.interval) || d.interval <= 0)
        d.interval = 5;
    if (!d.device_code || !d.user_code || !d.verification_uri) {
        r = err_set(e, -EBADMSG,
                    "device authorization at '%s': the answer lacks device_code, user_code or "
                    "verification_uri",
                    endpoint);
        goto out;
    }
    *ret = d;
    d = (struct device_authorization){0};
    r = 0;
out:
    device_authorization_release(&d);
    json_object_put(obj);
    buf_release(&form);
    return r;
}
