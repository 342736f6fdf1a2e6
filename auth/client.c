/* client.c - the client registration before an interactive sign-in, the settings' client */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/mcp_template.h"
#include "credkit/secmem.h"
#include "credkit/util.h"

#include "client.h"
#include "secret_command.h"
#include "store.h"

void client_of(const struct token_entry *te, struct oauth_client *ret)
{
    *ret = (struct oauth_client){
        .client_id = te->client_id,
        .client_secret = te->client_secret,
        .auth_method = te->auth_method,
    };
}

int client_config_secret(const struct auth_target *t, char **ret, struct err *e)
{
    *ret = NULL;
    if (!t->oauth->client_secret)
        return 0;
    /* the pi adapter's forms: "!command" is run (by secrets), "!!x" is the literal "!x" */
    const char *cmd = mcp_value_command(t->oauth->client_secret);
    if (cmd) {
        char what[512];
        snprintf(what, sizeof(what), "oauth.clientSecret of '%s'",
                 t->name ? t->name : t->server_url);
        return secret_command_run(cmd, what, ret, e);
    }
    int r = mcp_expand(mcp_value_template(t->oauth->client_secret), NULL, NULL, ret, e);
    if (r < 0)
        return err_prefix(e, "oauth.clientSecret of '%s'", t->name ? t->name : t->server_url);
    return 0;
}

const char *client_secret_method(const struct discovery *d)
{
    if (discovery_as_lists(d, "token_endpoint_auth_methods_supported", "client_secret_basic"))
        return "client_secret_basic";
    if (discovery_as_lists(d, "token_endpoint_auth_methods_supported", "client_secret_post"))
        return "client_secret_post";
    return "client_secret_basic";
}

/* Client IDs belong to the authorization server that issued them (MCP 2026-07-28,
 * "Authorization Server Binding"): a pre-registered client this server was signed in with under
 * another issuer, and never under this one, is refused with an error instead of being presented
 * to the new server. The binding is what the store recorded at earlier sign-ins. */
static int check_preregistered_binding(const struct grant_session *s, struct err *e)
{
    const char *id = s->t->oauth->client_id;
    const struct token_entry *te = s->te;
    if (te->registration == REGISTRATION_PRE && te->client_id && strcmp(te->client_id, id) == 0)
        return 0; /* already used with this issuer */
    struct token_entry **all = NULL;
    size_t n = 0;
    struct err le = ERR_INIT;
    int r = tokens_list(&all, &n, &le); /* unreadable entries cannot testify: skipped */
    if (r < 0)
        return 0;
    const char *old = NULL;
    for (size_t i = 0; i < n && !old; i++)
        if (all[i]->registration == REGISTRATION_PRE && all[i]->client_id &&
            strcmp(all[i]->client_id, id) == 0 && strcmp(all[i]->server_url, te->server_url) == 0 &&
            strcmp(all[i]->issuer, te->issuer) != 0)
            old = all[i]->issuer;
    if (old)
        r = err_set(e, -EINVAL,
                    "the authorization server of '%s' changed from '%s' to '%s', and the "
                    "pre-registered client '%s' (oauth.clientId) belongs to '%s': register a "
                    "client at '%s' and set it as oauth.clientId (and oauth.clientSecret)",
                    te->server_url, old, te->issuer, id, old, te->issuer);
    for (size_t i = 0; i < n; i++)
        token_entry_free(all[i]);
    free(all);
    return old ? r : 0;
}

/* A client registered beforehand: oauth.clientId (and its secret) from the settings. */
static int use_preregistered(const struct grant_session *s, const char *redirect_uri, struct err *e)
{
    struct token_entry *te = s->te;
    char *secret = NULL;
    int r = check_preregistered_binding(s, e);
    if (r < 0)
        return r;
    r = client_config_secret(s->t, &secret, e);
    if (r < 0)
        return r;
    te->registration = REGISTRATION_PRE;
    r = store_set_str(&te->client_id, s->t->oauth->client_id);
    if (r >= 0)
        r = store_set_secret(&te->client_secret, secret);
    if (r >= 0)
        r = store_set_str(&te->auth_method, secret ? client_secret_method(s->d) : "none");
    if (r >= 0)
        r = store_set_str(&te->redirect_uri, redirect_uri);
    secure_free(secret);
    return r;
}

/* A client ID metadata document: 1 when the server takes one and te now uses it, 0 when the
 * server does not (dynamic registration is tried instead). */
static int use_metadata_document(const struct grant_session *s, const char *redirect_uri)
{
    struct token_entry *te = s->te;
    struct json_object *v = NULL;
    if (!s->d->as ||
        !json_object_object_get_ex(s->d->as, "client_id_metadata_document_supported", &v) ||
        !json_object_get_boolean(v)) {
        auth_ui_say(s->ui, AUTH_SAY_INFO,
                    "the authorization server does not support client ID metadata documents; "
                    "trying dynamic registration");
        return 0;
    }
    te->registration = REGISTRATION_METADATA;
    int r = store_set_str(&te->client_id, s->t->oauth->client_metadata_url);
    if (r >= 0)
        r = store_set_secret(&te->client_secret, NULL);
    if (r >= 0)
        r = store_set_str(&te->auth_method, "none");
    if (r >= 0)
        r = store_set_str(&te->redirect_uri, redirect_uri);
    return r < 0 ? r : 1;
}

/* Whether the stored dynamic registration fits redirect_uri - if the server still knows it: an
 * unknown client at the authorization endpoint ends on an error page in the browser that never
 * comes back to us, so ask first where the server lets us (RFC 7592). A stored client the
 * server no longer knows is dropped. */
static bool stored_fits(const struct grant_session *s, const char *redirect_uri)
{
    struct token_entry *te = s->te;
    if (te->registration != REGISTRATION_DYNAMIC || !te->client_id || !te->redirect_uri ||
        strcmp(te->redirect_uri, redirect_uri) != 0 ||
        (te->client_secret_expires_at != 0 && te->client_secret_expires_at <= now_unix() + 60))
        return false;
    if (!te->registration_client_uri || !te->registration_access_token ||
        oauth_client_exists(te->registration_client_uri, te->registration_access_token,
                            s->http_timeout_ms) != 0)
        return true;
    auth_ui_say(s->ui, AUTH_SAY_INFO,
                "the authorization server no longer knows the stored client: "
                "registering again");
    token_entry_clear_registration(te);
    return false;
}

/* A new dynamic registration (RFC 7591) for redirect_uri. */
static int register_dynamic(const struct grant_session *s, const char *redirect_uri, bool device,
                            struct err *e)
{
    struct token_entry *te = s->te;
    const char *reg_ep = discovery_as_string(s->d, "registration_endpoint");
    if (!reg_ep)
        return err_set(e, -EINVAL,
                       "the authorization server '%s' does not offer dynamic client registration: "
                       "register a client there and set \"oauth\": {\"clientId\": \"...\", "
                       "\"clientSecret\": \"...\"} for this server in mcp.json",
                       s->d->issuer);
    auth_ui_say(s->ui, AUTH_SAY_INFO, "registering a client at %s", reg_ep);
    struct registration reg = {0};
    /* no "scope" in the registration: a server that takes it as the client's limit would
     * refuse a later step-up to wider scopes */
    const struct oauth_client_meta meta = {.name = s->t->oauth->client_name,
                                           .uri = s->t->oauth->client_uri,
                                           .logo_uri = s->t->oauth->logo_uri};
    int r = oauth_register(reg_ep, redirect_uri, NULL, device, &meta, s->http_timeout_ms, &reg, e);
    if (r < 0)
        return r;
    te->registration = REGISTRATION_DYNAMIC;
    r = store_set_str(&te->client_id, reg.client_id);
    if (r >= 0)
        r = store_set_secret(&te->client_secret, reg.client_secret);
    if (r >= 0)
        r = store_set_str(&te->auth_method, reg.auth_method     ? reg.auth_method
                                            : reg.client_secret ? "client_secret_basic"
                                                                : "none");
    if (r >= 0)
        r = store_set_str(&te->redirect_uri, redirect_uri);
    te->client_secret_expires_at = reg.client_secret_expires_at;
    if (r >= 0)
        r = store_set_str(&te->registration_client_uri, reg.client_uri);
    if (r >= 0)
        r = store_set_secret(&te->registration_access_token, reg.access_token);
    te->registered_at = now_unix();
    token_entry_clear_tokens(te); /* tokens belong to the old client */
    registration_release(&reg);
    return r;
}

int client_ensure(const struct grant_session *s, const char *redirect_uri, bool device,
                  struct err *e)
{
    if (s->t->oauth->client_id)
        return use_preregistered(s, redirect_uri, e);
    if (s->t->oauth->client_metadata_url) {
        int r = use_metadata_document(s, redirect_uri);
        if (r != 0)
            return r < 0 ? r : 0;
    }
    if (stored_fits(s, redirect_uri))
        return 0;
    return register_dynamic(s, redirect_uri, device, e);
}
