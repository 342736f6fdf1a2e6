/* dpop.c - DPoP in mcp-auth: the key of each grant, and the proof on its token requests */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "credkit/buf.h"
#include "credkit/dpop.h"
#include "credkit/json.h"
#include "credkit/secmem.h"

#include "dpop.h"

bool auth_dpop_offered(const struct discovery *d)
{
    return discovery_as_lists(d, "dpop_signing_alg_values_supported", DPOP_ALG);
}

/* Whether the MCP server takes DPoP tokens: its 401 challenged with the DPoP scheme, or its
 * protected resource metadata (RFC 9728 2) lists ES256 or requires bound tokens. */
static bool resource_takes_dpop(const struct discovery *d)
{
    struct json_object *algs =
        d->prm ? json_get_array(d->prm, "dpop_signing_alg_values_supported") : NULL;
    bool required = false;
    for (size_t i = 0; algs && i < json_object_array_length(algs); i++) {
        struct json_object *v = json_object_array_get_idx(algs, i);
        if (json_object_is_type(v, json_type_string) &&
            strcmp(json_object_get_string(v), DPOP_ALG) == 0)
            return true;
    }
    return d->dpop_challenge ||
           (d->prm && json_get_bool(d->prm, "dpop_bound_access_tokens_required", &required) &&
            required);
}

bool auth_dpop_wanted(const struct token_entry *te, const struct discovery *d)
{
    /* an entry that held a DPoP key: the server wanted it before (a renewal may not probe) */
    return auth_dpop_offered(d) && (resource_takes_dpop(d) || te->dpop_key);
}

bool auth_dpop_bound(const struct token_entry *te)
{
    return te->dpop_key && te->token_type && strcasecmp(te->token_type, "DPoP") == 0;
}

int auth_dpop_key(const struct token_entry *te, struct dpop_key **ret, struct err *e)
{
    if (!te->dpop_key)
        return err_set(e, -ENOENT, "no DPoP key is stored for '%s'", te->server_url);
    int r = dpop_key_from_text(te->dpop_key, strlen(te->dpop_key), ret, e);
    if (r < 0)
        return err_set(e, -EBADMSG,
                       "the DPoP key stored for '%s' cannot be read (%s): sign in again",
                       te->server_url, err_msg(e));
    return 0;
}

/* The key for a token request of grant: the entry's own for a refresh (none when it has none),
 * else a new one when the server takes DPoP. *ret NULL: no proof. */
static int key_for(struct token_entry *te, const struct discovery *d, const char *grant,
                   struct dpop_key **ret, struct err *e)
{
    *ret = NULL;
    if (grant && strcmp(grant, "refresh_token") == 0)
        return te->dpop_key ? auth_dpop_key(te, ret, e) : 0;
    if (!auth_dpop_wanted(te, d))
        return 0;
    int r = dpop_key_generate(ret);
    return r < 0 ? err_set(e, r, "cannot make a DPoP key") : 0;
}

/* After a successful token answer: the key kept with a DPoP token, none with a bearer one. */
static int keep_key(struct token_entry *te, const struct token_response *tr,
                    const struct dpop_key *key)
{
    bool bound = key && tr->token_type && strcasecmp(tr->token_type, "DPoP") == 0;
    struct buf jwk;
    char *s = NULL;
    int r = 0;
    buf_init_secret(&jwk, 4096);
    if (bound) {
        r = dpop_key_write_jwk(key, &jwk);
        if (r >= 0 && !(s = buf_detach(&jwk)))
            r = -ENOMEM;
    }
    if (r >= 0) {
        secure_free(te->dpop_key);
        te->dpop_key = s;
    }
    buf_release(&jwk);
    return r;
}

int auth_dpop_token(struct token_entry *te, const struct discovery *d,
                    const struct oauth_client *client, const char *const *params,
                    int64_t timeout_ms, struct token_response *ret, struct err *e)
{
    const char *grant = params[0] && strcmp(params[0], "grant_type") == 0 ? params[1] : NULL;
    struct dpop_key *key = NULL;
    struct token_response tr = {0};
    int r = key_for(te, d, grant, &key, e);
    if (r < 0)
        return r;
    struct oauth_client c = *client;
    c.dpop = key;
    r = oauth_token(discovery_as_string(d, "token_endpoint"), &c, params, timeout_ms, &tr, e);
    if (r >= 0 && !tr.error) {
        r = keep_key(te, &tr, key);
        if (r < 0)
            r = err_set(e, r, "out of memory");
    }
    if (r >= 0) {
        *ret = tr;
        tr = (struct token_response){0};
    }
    token_response_release(&tr);
    dpop_key_unref(key);
    return r;
}
