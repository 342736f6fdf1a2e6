/* cred_dpop.c - a connection's DPoP key, token and nonce, and the proof of each request */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credkit/secmem.h"
#include "credkit/util.h"

#include "creds/cred_dpop.h"

/* The token of an "Authorization: DPoP <token>" line, or NULL. Borrowed from headers. */
static const char *dpop_token(const char *const *headers)
{
    static const char name[] = "Authorization:";
    for (size_t i = 0; headers && headers[i]; i++) {
        const char *h = headers[i];
        if (strncasecmp(h, name, sizeof(name) - 1) != 0)
            continue;
        h += sizeof(name) - 1;
        h += strspn(h, " \t");
        if (strncasecmp(h, "DPoP ", 5) == 0)
            return h + 5;
    }
    return NULL;
}

int cred_dpop_set(struct cred_dpop *d, struct dpop_key *key, const char *const *headers)
{
    const char *t = key ? dpop_token(headers) : NULL;
    char *token = t ? strdup(t) : NULL;
    if (t && !token)
        return -ENOMEM;
    secure_free(d->token);
    d->token = token;
    dpop_key_unref(d->key);
    d->key = dpop_key_ref(key);
    return 0;
}

bool cred_dpop_nonce(struct cred_dpop *d, const char *nonce, size_t len)
{
    if (!dpop_nonce_valid(nonce, len) ||
        (d->nonce && strlen(d->nonce) == len && memcmp(d->nonce, nonce, len) == 0))
        return false;
    char *n = strndup(nonce, len);
    if (!n)
        return false;
    free(d->nonce);
    d->nonce = n;
    return true;
}

int cred_dpop_header(const struct cred_dpop *d, const char *method, const char *url, char **ret)
{
    char *proof = NULL;
    if (!d->key)
        return -ENOENT;
    int r = dpop_proof(d->key, method, url, d->token, d->nonce, now_unix(), &proof);
    if (r < 0)
        return r;
    if (asprintf(ret, "DPoP: %s", proof) < 0)
        r = -ENOMEM;
    free(proof);
    return r;
}

void cred_dpop_release(struct cred_dpop *d)
{
    if (!d)
        return;
    dpop_key_unref(d->key);
    secure_free(d->token);
    free(d->nonce);
    *d = (struct cred_dpop){0};
}
