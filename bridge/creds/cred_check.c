/* cred_check.c - header safety and the plain-http rule for credentials (cred_check.h) */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credkit/helper_answer.h"
#include "credkit/mcp_template.h"
#include "credkit/secmem.h"
#include "credkit/url.h"

#include "creds/cred_check.h"

bool cred_check_plain_remote(const char *url)
{
    if (!url)
        return true;
    if (strncasecmp(url, "https://", 8) == 0)
        return false;
    return !url_is_loopback(url);
}

/* The name of "Name: value" into out (a token of at most size - 1 bytes): its length, or 0
 * when it has none that fits. */
static size_t header_name(const char *header, char *out, size_t size)
{
    const char *colon = strchr(header, ':');
    size_t n = colon ? (size_t)(colon - header) : 0;
    if (n == 0 || n >= size || !helper_header_name_valid(header, n))
        return 0;
    memcpy(out, header, n);
    out[n] = '\0';
    return n;
}

static bool always_credential(const char *name)
{
    return strcasecmp(name, "Authorization") == 0 || strcasecmp(name, "Proxy-Authorization") == 0 ||
           strcasecmp(name, "Cookie") == 0;
}

bool cred_check_is_credential(const struct mcp_server *s, const char *header)
{
    char name[256];
    size_t n = header_name(header, name, sizeof(name));
    if (n == 0 || always_credential(name))
        return true;
    /* the entry's own literal header, as written, is the only kind that is not one */
    for (size_t i = 0; s->headers && s->headers[i]; i++) {
        const char *t = s->headers[i];
        if (strncasecmp(t, name, n) != 0 || t[n] != ':')
            continue;
        const char *tv = t + n + 1 + strspn(t + n + 1, " ");
        const char *hv = header + n + 1 + strspn(header + n + 1, " ");
        return strstr(tv, "${") != NULL || strcmp(tv, hv) != 0;
    }
    return true; /* a helper's, mcp-auth's, the bearer token's */
}

static int check_safe(char *const *headers, struct err *e)
{
    for (size_t i = 0; headers && headers[i]; i++) {
        char name[256];
        const char *h = headers[i];
        if (header_name(h, name, sizeof(name)) == 0)
            return err_set(e, -EINVAL,
                           "a request header has no valid name (letters, digits and "
                           "!#$%%&'*+-.^_`|~): refused, the server is not connected");
        const char *v = h + strlen(name) + 1;
        v += strspn(v, " ");
        const char *why = helper_header_refusal(name, v, strlen(v));
        if (why)
            return err_set(e, -EINVAL,
                           "header '%s' is refused: %s (it comes from the entry's \"headers\" "
                           "and the values of its ${...}, or from a helper: fix what gives it); "
                           "the server is not connected",
                           name, why);
    }
    return 0;
}

int cred_check_answer(const struct mcp_server *s, const struct credentials *c, struct err *e)
{
    if (!s || s->transport == MCP_TRANSPORT_STDIO)
        return 0;
    char *const *headers = c ? c->headers : NULL;
    int r = check_safe(headers, e);
    if (r < 0 || s->allow_http || !s->url)
        return r;

    char *url = NULL;
    r = mcp_expand(s->url, cred_lookup, (void *)(uintptr_t)c, &url, e);
    if (r == -ENOMEM)
        return r;
    bool remote = r < 0 || cred_check_plain_remote(url);
    secure_free(url);
    err_clear(e);
    if (!remote)
        return 0;
    static const char fix[] = "use an https:// URL, or set \"allowHttp\": true in the entry if "
                              "the network on the way is trusted";
    if (strstr(s->url, "${"))
        return err_set(e, -EPERM,
                       "the URL is plain http to a host that is not loopback and carries "
                       "${...} values: they are not sent in clear; %s",
                       fix);
    for (size_t i = 0; headers && headers[i]; i++) {
        if (!cred_check_is_credential(s, headers[i]))
            continue;
        char name[256];
        if (header_name(headers[i], name, sizeof(name)) == 0)
            (void)snprintf(name, sizeof(name), "#%zu", i + 1);
        return err_set(e, -EPERM,
                       "the URL is plain http to a host that is not loopback: credentials "
                       "(header '%s') are not sent in clear; %s",
                       name, fix);
    }
    return 0;
}
