/* mcp_oauth.c - the "oauth" object of an entry (mcp-auth's settings, read by common/ until
 * mcp-auth parses its own section of the entry). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/mcp_field.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "credkit/url.h"
#include "mcp_internal.h"

#define bad(e, ...) err_set((e), -EINVAL, __VA_ARGS__)

static int oom(struct err *e)
{
    return err_set(e, -ENOMEM, "out of memory");
}

/* oauth.clientMetadataUrl: https with a path (the document), or http on a loopback host. */
static int check_metadata_url(const char *url, struct err *e)
{
    char *canon = NULL, *path = NULL;
    bool ok = false;
    int r = url_canonical(url, &canon, NULL);
    if (r >= 0 && strncmp(canon, "https://", 8) == 0) {
        r = url_path(canon, &path);
        ok = r >= 0 && strcmp(path, "/") != 0;
    } else if (r >= 0) {
        ok = url_is_loopback(canon);
    }
    free(canon);
    free(path);
    if (r == -ENOMEM)
        return oom(e);
    if (!ok)
        return bad(e, "\"oauth.clientMetadataUrl\" must be an https:// URL with a path (the "
                      "client metadata document), or http:// on a loopback address");
    return 0;
}

/* oauth.redirectUri: an http loopback redirect (RFC 8252 7.3), where the bridge listens. */
/* The loopback listener serves 127.0.0.1:<port>/callback: a fixed redirect URI must be one it
 * can receive, or the sign-in would wait for a request that can never arrive. */
static int check_redirect_uri(const char *url, struct err *e)
{
    static const char *const hosts[] = {"http://127.0.0.1:", "http://localhost:"};
    bool ok = false;
    for (size_t i = 0; i < ELEMENTSOF(hosts) && !ok; i++) {
        size_t n = strlen(hosts[i]);
        if (strncmp(url, hosts[i], n) != 0)
            continue;
        const char *p = url + n;
        size_t digits = strspn(p, "0123456789");
        long port = digits > 0 && digits <= 5 ? strtol(p, NULL, 10) : 0;
        ok = port > 0 && port <= 65535 && strcmp(p + digits, "/callback") == 0;
    }
    if (!ok)
        return bad(e, "\"oauth.redirectUri\" must be 'http://127.0.0.1:PORT/callback' (or "
                      "localhost) with an explicit port: that is where mcp-auth listens");
    return 0;
}

int mcp_oauth_parse(struct json_object *o, struct mcp_oauth *oa, struct err *e)
{
    static const char *const grants[] = {"authorization_code", "client_credentials", "jwt-bearer",
                                         NULL};
    static const char *const algs[] = {"ES256", "RS256", NULL};
    int r, i = -1;
    bool send_resource = true;

    if (!json_object_is_type(o, json_type_object))
        return bad(e, "\"oauth\" must be an object, not %s", mcp_field_type(o));
    if ((r = mcp_field_string(o, "clientId", "oauth.clientId", MCP_FIELD_NONBLANK, &oa->client_id,
                              e)) < 0 ||
        (r = mcp_field_string(o, "clientSecret", "oauth.clientSecret", MCP_FIELD_NONBLANK,
                              &oa->client_secret, e)) < 0 ||
        (r = mcp_field_string(o, "clientMetadataUrl", "oauth.clientMetadataUrl", 0,
                              &oa->client_metadata_url, e)) < 0 ||
        (r = mcp_field_string(o, "scope", "oauth.scope", 0, &oa->scope, e)) < 0 ||
        (r = mcp_field_string(o, "redirectUri", "oauth.redirectUri", 0, &oa->redirect_uri, e)) <
            0 ||
        (r = mcp_field_string(o, "privateKeyFile", "oauth.privateKeyFile", MCP_FIELD_NONBLANK,
                              &oa->private_key_file, e)) < 0 ||
        (r = mcp_field_bool(o, "refreshScope", "oauth.refreshScope", &oa->refresh_sends_scope, e)) <
            0 ||
        (r = mcp_field_bool(o, "sendResource", "oauth.sendResource", &send_resource, e)) < 0)
        return r;
    oa->omit_resource = !send_resource;

    r = mcp_field_enum(o, "grant", "oauth.grant", grants,
                       "\"authorization_code\", \"client_credentials\" or \"jwt-bearer\"", &i, e);
    if (r < 0)
        return r;
    if (i >= 0 && !(oa->grant = strdup(grants[i])))
        return oom(e);
    i = -1;
    r = mcp_field_enum(o, "privateKeyAlg", "oauth.privateKeyAlg", algs, "\"ES256\" or \"RS256\"",
                       &i, e);
    if (r < 0)
        return r;
    if (i >= 0 && !(oa->private_key_alg = strdup(algs[i])))
        return oom(e);

    struct json_object *idp = mcp_field_member(o, "idp");
    if (idp) {
        if (!json_object_is_type(idp, json_type_object))
            return bad(e, "\"oauth.idp\" must be an object, not %s", mcp_field_type(idp));
        if ((r = mcp_field_string(idp, "issuer", "oauth.idp.issuer", MCP_FIELD_NONBLANK,
                                  &oa->idp_issuer, e)) < 0 ||
            (r = mcp_field_string(idp, "tokenEndpoint", "oauth.idp.tokenEndpoint",
                                  MCP_FIELD_NONBLANK, &oa->idp_token_endpoint, e)) < 0 ||
            (r = mcp_field_string(idp, "clientId", "oauth.idp.clientId", MCP_FIELD_NONBLANK,
                                  &oa->idp_client_id, e)) < 0 ||
            (r = mcp_field_string(idp, "clientSecret", "oauth.idp.clientSecret", MCP_FIELD_NONBLANK,
                                  &oa->idp_client_secret, e)) < 0 ||
            (r = mcp_field_string(idp, "idToken", "oauth.idp.idToken", MCP_FIELD_NONBLANK,
                                  &oa->idp_id_token, e)) < 0)
            return r;
        if (!oa->idp_token_endpoint || !oa->idp_id_token)
            return bad(e, "\"oauth.idp\" needs \"tokenEndpoint\" and \"idToken\"");
    }
    if (oa->grant && strcmp(oa->grant, "jwt-bearer") == 0 && !idp)
        return bad(e, "\"oauth.grant\": \"jwt-bearer\" needs an \"oauth.idp\" object");
    if (oa->client_metadata_url && (r = check_metadata_url(oa->client_metadata_url, e)) < 0)
        return r;
    if (oa->redirect_uri && (r = check_redirect_uri(oa->redirect_uri, e)) < 0)
        return r;
    return 0;
}

int mcp_oauth_check_templates(const struct mcp_oauth *oa, mcp_lookup_fn lookup, void *userdata,
                              struct err *e)
{
    if (!oa->client_secret)
        return 0;
    /* checked for syntax only: the secret is needed at sign-in and refresh, where a missing
     * variable is reported then; a stored token must stay usable without it */
    struct strv later = STRV_INIT;
    char *val = NULL;
    int r = mcp_expand_collect(oa->client_secret, lookup, userdata, &later, &val, e);
    secure_free(val);
    strv_release(&later);
    if (r < 0 && r != -ENOENT) {
        (void)err_prefix(e, "\"oauth.clientSecret\"");
        return r;
    }
    return 0;
}

int mcp_oauth_dup(const struct mcp_oauth *s, struct mcp_oauth *c)
{
    bool oom = false;
#define DUP(f)                                                                                     \
    do {                                                                                           \
        if (s->f && !(c->f = strdup(s->f)))                                                        \
            oom = true;                                                                            \
    } while (0)
    DUP(client_id);
    DUP(client_secret);
    DUP(client_metadata_url);
    DUP(scope);
    DUP(redirect_uri);
    DUP(grant);
    DUP(private_key_file);
    DUP(private_key_alg);
    DUP(idp_issuer);
    DUP(idp_token_endpoint);
    DUP(idp_client_id);
    DUP(idp_client_secret);
    DUP(idp_id_token);
#undef DUP
    c->refresh_sends_scope = s->refresh_sends_scope;
    c->omit_resource = s->omit_resource;
    return oom ? -ENOMEM : 0;
}

void mcp_oauth_release(struct mcp_oauth *oa)
{
    free(oa->client_id);
    secure_free(oa->client_secret);
    free(oa->client_metadata_url);
    free(oa->scope);
    free(oa->redirect_uri);
    free(oa->grant);
    free(oa->private_key_file);
    free(oa->private_key_alg);
    free(oa->idp_issuer);
    free(oa->idp_token_endpoint);
    free(oa->idp_client_id);
    secure_free(oa->idp_client_secret);
    secure_free(oa->idp_id_token);
}
