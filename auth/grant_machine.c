/* grant_machine.c - grants without a person: client_credentials (a client secret or
 * private_key_jwt) and jwt-bearer (enterprise cross-app access) */
#include <errno.h>
#include <string.h>

#include "credkit/secmem.h"
#include "credkit/url.h"

#include "client.h"
#include "crypto.h"
#include "grant.h"
#include "store.h"

static const char *target_name(const struct auth_target *t)
{
    return t->name ? t->name : t->server_url;
}

/* The answer to a grant made with the settings' own client (no registration of ours): the
 * tokens, and the client they belong to, into te. */
static int take_config_grant(struct token_entry *te, const struct token_response *tr,
                             const char *what, const struct oauth_client *client, const char *scope,
                             struct err *e)
{
    if (tr->error)
        return grant_oauth_error(what, tr, e);
    te->registration = REGISTRATION_PRE;
    int r = store_set_str(&te->client_id, client->client_id);
    if (r >= 0)
        r = store_set_str(&te->auth_method, client->auth_method);
    if (r >= 0)
        r = store_tokens(te, tr, scope, true);
    return r;
}

/* ---- client_credentials ------------------------------------------------------------------ */

/* Machine to machine: client secret or private_key_jwt, no person involved. */
static int client_credentials(const struct auth_target *t, const struct discovery *d,
                              struct token_entry *te, const char *scope, int64_t http_timeout,
                              struct err *e)
{
    const struct oauth_config *oa = t->oauth;
    char *secret = NULL, *assertion = NULL;
    struct token_response tr = {0};
    struct oauth_client client = {0};
    int r;
    if (!oa->client_id)
        return err_set(e, -EINVAL,
                       "client_credentials needs \"oauth\": {\"clientId\": ..., and "
                       "\"clientSecret\" or \"privateKeyFile\"} for '%s' in mcp.json",
                       target_name(t));
    client.client_id = oa->client_id;
    if (oa->private_key_file) {
        r = jwt_client_assertion(oa->private_key_file, oa->private_key_alg, NULL, oa->client_id,
                                 d->issuer, &assertion, e);
        if (r < 0)
            goto out;
        client.auth_method = "private_key_jwt";
        client.assertion = assertion;
    } else {
        r = client_config_secret(t, &secret, e);
        if (r < 0)
            goto out;
        if (!secret) {
            r = err_set(e, -EINVAL,
                        "client_credentials for '%s' needs oauth.clientSecret or "
                        "oauth.privateKeyFile in mcp.json",
                        target_name(t));
            goto out;
        }
        client.client_secret = secret;
        client.auth_method = client_secret_method(d);
    }
    const char *params[] = {
        "grant_type", "client_credentials", "scope", scope, "resource", grant_resource(t, d), NULL,
    };
    r = grant_request_tokens(te, d, &client, params, http_timeout, &tr, e);
    if (r >= 0)
        r = take_config_grant(te, &tr, "the client_credentials grant failed", &client, scope, e);
out:
    token_response_release(&tr);
    secure_free(secret);
    secure_free(assertion);
    return r;
}

static int client_credentials_sign_in(struct grant_session *s, struct err *e)
{
    int r = client_credentials(s->t, s->d, s->te, s->scope, s->http_timeout_ms, e);
    if (r < 0)
        grant_session_failed(s);
    return r;
}

static int client_credentials_renew(const struct auth_target *t, const struct discovery *d,
                                    struct token_entry *te, int64_t http_timeout_ms, struct err *e)
{
    return client_credentials(t, d, te, te->scope, http_timeout_ms, e);
}

const struct grant_ops grant_client_credentials = {
    .name = "client_credentials",
    .unattended = true,
    .sign_in = client_credentials_sign_in,
    .renew = client_credentials_renew,
};

/* ---- jwt-bearer -------------------------------------------------------------------------- */

/* The secrets the settings name, expanded: the ID token, the identity provider's client
 * secret, our client's secret. Each caller frees with secure_free(). */
static int jwt_bearer_secrets(const struct auth_target *t, char **ret_id_token,
                              char **ret_idp_secret, char **ret_secret, struct err *e)
{
    const struct oauth_config *oa = t->oauth;
    int r = url_check_secure(oa->idp_token_endpoint, "identity provider token endpoint", e);
    if (r >= 0)
        r = mcp_expand(oa->idp_id_token, NULL, NULL, ret_id_token, e);
    if (r >= 0 && oa->idp_client_secret)
        r = mcp_expand(oa->idp_client_secret, NULL, NULL, ret_idp_secret, e);
    if (r >= 0)
        r = client_config_secret(t, ret_secret, e);
    return r;
}

/* The JWT bearer grant (RFC 7523) with assertion at the authorization server, as the configured
 * client (secret NULL: a public one). */
static int jwt_bearer_grant(const struct auth_target *t, const struct discovery *d,
                            struct token_entry *te, const char *secret, const char *assertion,
                            const char *scope, int64_t http_timeout, struct err *e)
{
    struct token_response tr = {0};
    struct oauth_client client = {
        .client_id = t->oauth->client_id,
        .client_secret = secret,
        .auth_method = secret ? client_secret_method(d) : "none",
    };
    const char *params[] = {
        "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "assertion",  assertion,
        "scope",      scope,
        "resource",   grant_resource(t, d),
        NULL,
    };
    int r = grant_request_tokens(te, d, &client, params, http_timeout, &tr, e);
    if (r >= 0)
        r = take_config_grant(te, &tr, "the JWT bearer grant failed", &client, scope, e);
    token_response_release(&tr);
    return r;
}

/* Workload identity federation (RFC 7523 section 2.1): the workload's own JWT, from the
 * environment, is the JWT bearer grant itself. A refused assertion is an error: neither
 * retried nor replaced by another grant. */
static int workload_jwt(const struct auth_target *t, const struct discovery *d,
                        struct token_entry *te, const char *scope, int64_t http_timeout,
                        struct err *e)
{
    const struct oauth_config *oa = t->oauth;
    char *assertion = NULL, *secret = NULL;
    if (!oa->client_id)
        return err_set(e, -EINVAL,
                       "grant \"jwt-bearer\" with oauth.assertion needs oauth.clientId for '%s' "
                       "in mcp.json",
                       target_name(t));
    int r = mcp_expand(oa->assertion, NULL, NULL, &assertion, e);
    if (r < 0) {
        r = err_prefix(e, "oauth.assertion of '%s'", target_name(t));
        goto out;
    }
    r = client_config_secret(t, &secret, e);
    if (r < 0)
        goto out;
    r = jwt_bearer_grant(t, d, te, secret, assertion, scope, http_timeout, e);
out:
    secure_free(assertion);
    secure_free(secret);
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
    const struct oauth_config *oa = t->oauth;
    int r;
    if (oa->assertion && !oa->idp_token_endpoint)
        return workload_jwt(t, d, te, scope, http_timeout, e);
    if (!oa->client_id || !oa->idp_token_endpoint || !oa->idp_id_token)
        return err_set(e, -EINVAL,
                       "grant \"jwt-bearer\" needs oauth.clientId and oauth.idp.tokenEndpoint and "
                       "oauth.idp.idToken for '%s' in mcp.json",
                       target_name(t));
    r = jwt_bearer_secrets(t, &id_token, &idp_secret, &secret, e);
    if (r < 0)
        goto out;
    struct oauth_client idp = {
        .client_id = oa->idp_client_id ? oa->idp_client_id : oa->client_id,
        .client_secret = idp_secret,
    };
    r = oauth_token_exchange(oa->idp_token_endpoint, &idp, id_token, d->issuer,
                             grant_resource(t, d), scope, http_timeout, &jag, e);
    if (r < 0)
        goto out;
    r = jwt_bearer_grant(t, d, te, secret, jag, scope, http_timeout, e);
out:
    secure_free(id_token);
    secure_free(idp_secret);
    secure_free(secret);
    secure_free(jag);
    return r;
}

static int jwt_bearer_sign_in(struct grant_session *s, struct err *e)
{
    int r = jwt_bearer(s->t, s->d, s->te, s->scope, s->http_timeout_ms, e);
    if (r < 0)
        grant_session_failed(s);
    return r;
}

static int jwt_bearer_renew(const struct auth_target *t, const struct discovery *d,
                            struct token_entry *te, int64_t http_timeout_ms, struct err *e)
{
    return jwt_bearer(t, d, te, te->scope, http_timeout_ms, e);
}

const struct grant_ops grant_jwt_bearer = {
    .name = "jwt-bearer",
    .needs_idp = true,
    .unattended = true,
    .sign_in = jwt_bearer_sign_in,
    .renew = jwt_bearer_renew,
};
