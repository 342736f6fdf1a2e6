/* logout.c - signing out: revocation where offered, then the local entry deleted */
#include <errno.h>
#include <string.h>

#include "credkit/json.h"
#include "credkit/secmem.h"

#include "client.h"
#include "crypto.h"
#include "logout.h"
#include "store.h"

/* A confidential client whose credentials live in the settings (client_credentials,
 * jwt-bearer) authenticates with them, as it did for the token. *ret_assertion and *ret_secret
 * are what client borrows afterwards: the caller frees them with secure_free(). */
static void config_credentials(const struct auth_target *t, const struct token_entry *te,
                               struct oauth_client *client, char **ret_assertion, char **ret_secret)
{
    const struct oauth_config *oa = t->oauth;
    struct err ce = ERR_INIT;
    if (client->client_secret || !oa->client_id || strcmp(oa->client_id, te->client_id) != 0)
        return;
    if (oa->private_key_file && te->as_metadata &&
        jwt_client_assertion(oa->private_key_file, oa->private_key_alg, NULL, te->client_id,
                             te->issuer, ret_assertion, &ce) >= 0) {
        client->auth_method = "private_key_jwt";
        client->assertion = *ret_assertion;
    } else if (client_config_secret(t, ret_secret, &ce) >= 0 && *ret_secret) {
        client->client_secret = *ret_secret;
        if (!client->auth_method || strcmp(client->auth_method, "none") == 0)
            client->auth_method = "client_secret_basic";
    }
}

/* Revokes te's tokens at rev: true when the server took either. A failure is said in
 * *ret_warning (when not NULL) only when neither was taken. */
static bool revoke(const struct auth_target *t, const struct token_entry *te, const char *rev,
                   int64_t http_timeout, struct err *ret_warning)
{
    char *secret = NULL, *assertion = NULL;
    struct oauth_client client;
    struct err re = ERR_INIT;
    bool revoked = false;
    client_of(te, &client);
    config_credentials(t, te, &client, &assertion, &secret);
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
    secure_free(secret);
    secure_free(assertion);
    return revoked;
}

int auth_logout(const struct auth_target *t, int64_t http_timeout_ms, bool *ret_revoked,
                struct err *ret_warning, struct err *e)
{
    struct token_entry *te = NULL;
    struct file_lock *lock = NULL;
    int64_t http_timeout = http_timeout_ms > 0 ? http_timeout_ms : AUTH_HTTP_TIMEOUT_DEFAULT_MS;
    bool revoked = false;
    int r = store_load(t->server_url, NULL, t->label, &te, e);
    if (r < 0)
        return r;
    r = store_lock(t->server_url, te->issuer, te->label, TOKENS_LOCK_TIMEOUT_MS, &lock, e);
    if (r < 0)
        goto out;
    const char *rev =
        te->as_metadata ? json_get_string(te->as_metadata, "revocation_endpoint") : NULL;
    if (rev && te->client_id)
        revoked = revoke(t, te, rev, http_timeout, ret_warning);
    r = store_delete(te->server_url, te->issuer, te->label, e);
    if (r < 0)
        goto out;
    *ret_revoked = revoked;
    r = 0;
out:
    file_lock_release(lock);
    token_entry_free(te);
    return r;
}
