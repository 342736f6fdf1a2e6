/* store.c - the token store as mcp-auth's commands use it (store.h). Every command reaches
 * tokens.c through here: tokens.c speaks of files (-EBADMSG, -EINVAL, -EIO, a lock that timed
 * out, as its tests check), these of what the exit status must tell apart from the authorization
 * server's failures (-EUCLEAN, -ENOLCK); with them, the entry's setters that wipe and the
 * recording of a token response, which belong to no file format. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/secmem.h"
#include "credkit/util.h"

#include "crypto.h"
#include "store.h"

static int store_code(int r)
{
    if (r >= 0 || r == -ENOENT || r == -ENOMEM)
        return r;
    return r == -ETIMEDOUT ? -ENOLCK : -EUCLEAN;
}

int store_load(const char *server_url, const char *issuer, const char *label,
               struct token_entry **ret, struct err *e)
{
    return store_code(tokens_load(server_url, issuer, label, ret, e));
}

int store_save(struct token_entry *t, struct err *e)
{
    return store_code(tokens_save(t, e));
}

int store_lock(const char *server_url, const char *issuer, const char *label, int64_t timeout_ms,
               struct file_lock **ret, struct err *e)
{
    return store_code(tokens_lock(server_url, issuer, label, timeout_ms, ret, e));
}

int store_delete(const char *server_url, const char *issuer, const char *label, struct err *e)
{
    return store_code(tokens_delete(server_url, issuer, label, e));
}

int store_load_or_new(const char *server_url, const char *issuer, const char *label,
                      struct token_entry **ret, struct err *e)
{
    int r = store_load(server_url, issuer, label, ret, e);
    if (r == -ENOENT) {
        err_clear(e);
        r = token_entry_new(server_url, issuer, label, ret);
    }
    return r;
}

int store_set_str(char **dst, const char *src)
{
    char *n = src ? strdup(src) : NULL;
    if (src && !n)
        return -ENOMEM;
    free(*dst);
    *dst = n;
    return 0;
}

int store_set_secret(char **dst, const char *src)
{
    char *n = src ? strdup(src) : NULL;
    if (src && !n)
        return -ENOMEM;
    secure_free(*dst);
    *dst = n;
    return 0;
}

int store_tokens(struct token_entry *t, const struct token_response *tr,
                 const char *requested_scope, bool new_grant)
{
    int64_t now = now_unix();
    int r = store_set_secret(&t->access_token, tr->access_token);
    if (r >= 0)
        r = store_set_str(&t->token_type, tr->token_type ? tr->token_type : "Bearer");
    if (r >= 0 && (tr->refresh_token || new_grant))
        r = store_set_secret(&t->refresh_token, tr->refresh_token);
    if (r >= 0 && (tr->scope || requested_scope))
        r = store_set_str(&t->scope, tr->scope ? tr->scope : requested_scope);
    /* whom the grant names: the id_token's, else the access token's own claims when it is a
     * JWT; a refresh that names no one keeps the account of the sign-in */
    char *account = tr->account ? strdup(tr->account) : jwt_account(tr->access_token);
    if (account) {
        free(t->account);
        t->account = account;
    }
    t->issued_at = now;
    t->expires_at = tr->expires_in >= 0 ? now + tr->expires_in : 0;
    return r;
}
