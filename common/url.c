/* url.c - URLs, parsed by libcurl's URL API (CURLU) and put in canonical form by hand
 *
 * Every function that takes a URL goes through url_parse(), so the rules (http or https, a host,
 * no userinfo, a port in 1..65535) hold everywhere: an origin or a loopback test is never
 * computed from a string that url_canonical() would have refused. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "credkit/buf.h"
#include "credkit/secmem.h"
#include "credkit/curl_load.h"
#include "credkit/url.h"
#include "credkit/util.h"

/* A URL taken apart: every field malloc'd (plain malloc, not curl's), host lowercase and, for
 * an IPv6 literal, in brackets and in RFC 5952 form. */
struct url_parts {
    char *scheme; /* "http" or "https" */
    char *host;
    unsigned port; /* 0 when it is the scheme's default */
    char *path;    /* never empty: "/" at least */
    char *query;   /* NULL when absent or empty */
};

static void url_parts_release(struct url_parts *p)
{
    free(p->scheme);
    free(p->host);
    free(p->path);
    free(p->query);
    *p = (struct url_parts){0};
}

/* curl_url_get into a malloc'd copy (curl's strings must go back through curl_free). Returns
 * 0, 1 when the part is absent (*ret NULL), -ENOMEM, or -EINVAL for other CURLU errors. */
static int url_get_part(CURLU *h, CURLUPart what, char **ret)
{
    char *s = NULL;
    CURLUcode rc = curl_url_get(h, what, &s, 0);
    switch (rc) {
    case CURLUE_OK:
        break;
    case CURLUE_NO_SCHEME:
    case CURLUE_NO_USER:
    case CURLUE_NO_PASSWORD:
    case CURLUE_NO_OPTIONS:
    case CURLUE_NO_HOST:
    case CURLUE_NO_PORT:
    case CURLUE_NO_QUERY:
    case CURLUE_NO_FRAGMENT:
    case CURLUE_NO_ZONEID:
        *ret = NULL;
        return 1;
    case CURLUE_OUT_OF_MEMORY:
        return -ENOMEM;
    default:
        return -EINVAL;
    }
    char *copy = strdup(s);
    curl_free(s);
    if (!copy)
        return -ENOMEM;
    *ret = copy;
    return 0;
}

static void ascii_lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

/* "[addr]" (zone already removed by curl) plus an optional zone, in RFC 5952 form so that two
 * spellings of one address compare equal. */
static int url_ipv6_host(const char *bracketed, const char *zone, char **ret)
{
    size_t n = strlen(bracketed);
    if (n < 3 || bracketed[0] != '[' || bracketed[n - 1] != ']')
        return -EINVAL;
    char addr[INET6_ADDRSTRLEN + 2], text[INET6_ADDRSTRLEN];
    if (n - 2 >= sizeof(addr))
        return -EINVAL;
    memcpy(addr, bracketed + 1, n - 2);
    addr[n - 2] = 0;
    struct in6_addr a;
    if (inet_pton(AF_INET6, addr, &a) != 1 || !inet_ntop(AF_INET6, &a, text, sizeof(text)))
        return -EINVAL;
    char *h = NULL;
    int r = zone ? asprintf(&h, "[%s%%25%s]", text, zone) : asprintf(&h, "[%s]", text);
    if (r < 0)
        return -ENOMEM;
    *ret = h; /* inet_ntop writes lowercase hex; a zone (an interface name) keeps its case */
    return 0;
}

/* A CURLU handle holding in, which must be an absolute URL. */
static int url_handle(const char *in, CURLU **ret, struct err *e)
{
    if (!in || !*in)
        return err_set(e, -EINVAL, "empty URL: expected one like 'https://mcp.example.com'");
    CURLU *h = curl_url();
    if (!h) {
        int r = curl_load(e); /* a missing libcurl said as such */
        return r < 0 ? r : -ENOMEM;
    }
    /* no CURLU_DEFAULT_SCHEME and no CURLU_GUESS_SCHEME: a relative URL is an error */
    CURLUcode rc = curl_url_set(h, CURLUPART_URL, in, 0);
    if (rc != CURLUE_OK) {
        int r = rc == CURLUE_OUT_OF_MEMORY
                    ? -ENOMEM
                    : err_set(e, -EINVAL,
                              "'%s' is not a valid absolute URL: expected one like "
                              "'https://mcp.example.com'",
                              in);
        curl_url_cleanup(h);
        return r;
    }
    *ret = h;
    return 0;
}

/* -EINVAL when the URL carries a user name or a password. */
static int url_check_userinfo(CURLU *h, struct err *e)
{
    char *user = NULL, *password = NULL;
    int r, r2;

    r = url_get_part(h, CURLUPART_USER, &user);
    if (r < 0)
        goto out;
    r2 = url_get_part(h, CURLUPART_PASSWORD, &password);
    if (r2 < 0) {
        r = r2;
        goto out;
    }
    if (r == 0 || r2 == 0) {
        /* the URL itself would then be a secret (so it is not quoted back), and
         * "https://good.example@evil.example" misleads readers */
        r = err_set(e, -EINVAL,
                    "a URL with a user name or password is not accepted: remove "
                    "the 'user:password@' part");
        goto out;
    }
    r = 0;
out:
    free(user);
    secure_free(password);
    return r;
}

/* p->host: lowercase, or an IPv6 literal in RFC 5952 form with its zone. */
static int url_take_host(CURLU *h, const char *in, struct url_parts *p, struct err *e)
{
    char *host = NULL, *zone = NULL;
    int r;

    r = url_get_part(h, CURLUPART_HOST, &host);
    if (r < 0)
        goto out;
    if (r > 0 || !*host) {
        r = err_set(e, -EINVAL, "'%s' has no host name", in);
        goto out;
    }
    if (host[0] == '[') {
        r = url_get_part(h, CURLUPART_ZONEID, &zone);
        if (r < 0)
            goto out;
        r = url_ipv6_host(host, zone, &p->host);
        if (r == -EINVAL)
            r = err_set(e, -EINVAL, "'%s' has an invalid IPv6 address", in);
        if (r < 0)
            goto out;
    } else {
        ascii_lower(host);
        p->host = host;
        host = NULL;
    }
    r = 0;
out:
    free(host);
    free(zone);
    return r;
}

/* p->port: 0 when absent or the scheme's default (p->scheme is set). */
static int url_take_port(CURLU *h, const char *in, struct url_parts *p, struct err *e)
{
    char *port = NULL;
    int r;

    r = url_get_part(h, CURLUPART_PORT, &port);
    if (r < 0)
        goto out;
    if (r == 0) {
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(port, &end, 10);
        if (errno || end == port || *end || v == 0 || v > 65535) {
            r = err_set(e, -EINVAL, "'%s' has an invalid port number", in);
            goto out;
        }
        unsigned def = strcmp(p->scheme, "https") == 0 ? 443 : 80;
        p->port = v == def ? 0 : (unsigned)v;
    }
    r = 0;
out:
    free(port);
    return r;
}

/* p->path ("/" at least) and p->query (NULL when empty). */
static int url_take_path_query(CURLU *h, struct url_parts *p)
{
    int r = url_get_part(h, CURLUPART_PATH, &p->path);
    if (r < 0)
        return r;
    if (r > 0 || !*p->path) {
        free(p->path);
        p->path = strdup("/");
        if (!p->path)
            return -ENOMEM;
    }
    r = url_get_part(h, CURLUPART_QUERY, &p->query);
    if (r < 0)
        return r;
    if (p->query && !*p->query) {
        free(p->query);
        p->query = NULL;
    }
    return 0;
}

/* Parses an absolute http(s) URL. -EINVAL with a message naming what is wrong, -ENOMEM. */
static int url_parse(const char *in, struct url_parts *ret, struct err *e)
{
    struct url_parts p = {0};
    CURLU *h = NULL;
    int r;

    r = url_handle(in, &h, e);
    if (r < 0)
        goto out;
    r = url_check_userinfo(h, e);
    if (r < 0)
        goto out;
    r = url_get_part(h, CURLUPART_SCHEME, &p.scheme);
    if (r < 0)
        goto out;
    if (r > 0 || (strcmp(p.scheme, "http") != 0 && strcmp(p.scheme, "https") != 0)) {
        r = err_set(e, -EINVAL, "'%s' is not an http or https URL", in);
        goto out;
    }
    r = url_take_host(h, in, &p, e);
    if (r >= 0)
        r = url_take_port(h, in, &p, e);
    if (r >= 0)
        r = url_take_path_query(h, &p);
    if (r < 0)
        goto out;

    *ret = p;
    p = (struct url_parts){0};
    r = 0;
out:
    url_parts_release(&p);
    curl_url_cleanup(h);
    return r;
}

/* "scheme://host[:port]", with the path and query when with_rest. */
static int url_format(const struct url_parts *p, bool with_rest, char **ret)
{
    struct buf b;
    int r;

    buf_init(&b, 0);
    r = buf_printf(&b, "%s://%s", p->scheme, p->host);
    if (r >= 0 && p->port)
        r = buf_printf(&b, ":%u", p->port);
    if (r >= 0 && with_rest && strcmp(p->path, "/") != 0)
        r = buf_append_str(&b, p->path);
    if (r >= 0 && with_rest && p->query)
        r = buf_printf(&b, "?%s", p->query);
    if (r < 0)
        goto out;
    char *s = buf_detach(&b);
    if (!s) {
        r = -ENOMEM;
        goto out;
    }
    *ret = s;
    r = 0;
out:
    buf_release(&b);
    return r;
}

int url_canonical(const char *in, char **ret, struct err *e)
{
    struct url_parts p = {0};
    char *s = NULL;
    int r = url_parse(in, &p, e);
    if (r < 0)
        goto out;
    r = url_format(&p, true, &s);
    if (r < 0)
        goto out;
    *ret = s;
    s = NULL;
out:
    url_parts_release(&p);
    return r;
}

/* 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104, "localhost": decided on the parsed host, so
 * "127.0.0.1.evil.com" and "localhost.evil.com" are not loopback. */
static bool host_is_loopback(const char *host)
{
    if (strcmp(host, "localhost") == 0)
        return true;
    struct in_addr a4;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    size_t n = strlen(host);
    if (n > 2 && host[0] == '[' && host[n - 1] == ']' && !strchr(host, '%')) {
        char addr[INET6_ADDRSTRLEN];
        struct in6_addr a6;
        if (n - 2 >= sizeof(addr))
            return false;
        memcpy(addr, host + 1, n - 2);
        addr[n - 2] = 0;
        if (inet_pton(AF_INET6, addr, &a6) != 1)
            return false;
        if (IN6_IS_ADDR_LOOPBACK(&a6))
            return true;
        return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
    }
    return false;
}

bool url_is_loopback(const char *url)
{
    struct url_parts p = {0};
    if (url_parse(url, &p, NULL) < 0)
        return false;
    bool yes = host_is_loopback(p.host);
    url_parts_release(&p);
    return yes;
}

int url_check_secure(const char *url, const char *what, struct err *e)
{
    struct url_parts p = {0};
    const char *w = what ? what : "URL";
    int r = url_parse(url, &p, e);
    if (r < 0) {
        (void)err_prefix(e, "%s", w);
        goto out;
    }
    if (strcmp(p.scheme, "https") != 0 && !host_is_loopback(p.host)) {
        r = err_set(e, -EINVAL,
                    "%s '%s' is not https: only https is accepted (or http to "
                    "localhost); ask the server's operator for its https address",
                    w, url);
        goto out;
    }
    r = 0;
out:
    url_parts_release(&p);
    return r;
}

int url_origin(const char *url, char **ret)
{
    struct url_parts p = {0};
    char *s = NULL;
    int r = url_parse(url, &p, NULL);
    if (r < 0)
        goto out;
    r = url_format(&p, false, &s);
    if (r < 0)
        goto out;
    *ret = s;
    s = NULL;
out:
    url_parts_release(&p);
    return r;
}

bool url_same_origin(const char *a, const char *b)
{
    char *oa = NULL, *ob = NULL;
    bool same = url_origin(a, &oa) >= 0 && url_origin(b, &ob) >= 0 && strcmp(oa, ob) == 0;
    free(oa);
    free(ob);
    return same;
}

int url_path(const char *url, char **ret)
{
    struct url_parts p = {0};
    int r = url_parse(url, &p, NULL);
    if (r < 0)
        goto out;
    *ret = p.path;
    p.path = NULL;
out:
    url_parts_release(&p);
    return r;
}

/* base without its fragment, followed by suffix (a "#..." reference or ""). libcurl 7.88 gets
 * these two cases of RFC 3986 section 5.2 wrong (it drops the last path segment). */
static int url_resolve_same_document(const char *base, const char *suffix, char **ret)
{
    size_t n = strcspn(base, "#");
    char *s = NULL;
    if (asprintf(&s, "%.*s%s", (int)n, base, suffix) < 0)
        return -ENOMEM;
    *ret = s;
    return 0;
}

int url_resolve(const char *base, const char *ref, char **ret, struct err *e)
{
    struct url_parts p = {0};
    CURLU *h = NULL;
    char *result = NULL;
    int r;

    r = url_parse(base, &p, e);
    if (r < 0)
        goto out;
    if (!ref) {
        r = err_set(e, -EINVAL, "no URL to resolve against '%s'", base);
        goto out;
    }
    if (ref[0] == 0 || ref[0] == '#') {
        r = url_resolve_same_document(base, ref, &result);
        if (r < 0)
            goto out;
    } else {
        h = curl_url();
        if (!h) {
            r = -ENOMEM;
            goto out;
        }
        CURLUcode rc = curl_url_set(h, CURLUPART_URL, base, 0);
        if (rc == CURLUE_OK)
            rc = curl_url_set(h, CURLUPART_URL, ref, 0);
        if (rc == CURLUE_OUT_OF_MEMORY) {
            r = -ENOMEM;
            goto out;
        }
        if (rc != CURLUE_OK) {
            r = err_set(e, -EINVAL, "cannot resolve '%s' against '%s': not a valid URL", ref, base);
            goto out;
        }
        r = url_get_part(h, CURLUPART_URL, &result);
        if (r < 0)
            goto out;
        if (r > 0) {
            r = err_set(e, -EINVAL, "cannot resolve '%s' against '%s'", ref, base);
            goto out;
        }
    }
    /* the result must itself be a URL we accept (a reference may name "ftp:" or userinfo) */
    url_parts_release(&p);
    r = url_parse(result, &p, e);
    if (r < 0) {
        (void)err_prefix(e, "'%s' resolved against '%s'", ref, base);
        goto out;
    }
    *ret = result;
    result = NULL;
    r = 0;
out:
    url_parts_release(&p);
    curl_url_cleanup(h);
    free(result);
    return r;
}

char *url_encode(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = malloc(3 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        /* RFC 3986 unreserved, exactly what curl_easy_escape leaves alone */
        if (isalnum(*c) || *c == '-' || *c == '.' || *c == '_' || *c == '~') {
            *o++ = (char)*c;
        } else {
            *o++ = '%';
            *o++ = hex[*c >> 4];
            *o++ = hex[*c & 15];
        }
    }
    *o = 0;
    return out;
}

/* Form-decodes s[0..n) into a new string: '+' is a space, %XX a byte, a '%' not followed by
 * two hex digits stays as it is (as with curl_easy_unescape). -EBADMSG for %00, which would cut
 * the C string short. Caller frees with secure_free(). */
static int form_decode(const char *s, size_t n, char **ret)
{
    char *out = malloc(n + 1);
    size_t o = 0;
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '+') {
            out[o++] = ' ';
        } else if (s[i] == '%' && i + 2 < n && (hi = hex_digit(s[i + 1])) >= 0 &&
                   (lo = hex_digit(s[i + 2])) >= 0) {
            char c = (char)(hi << 4 | lo);
            if (c == 0) {
                secure_free_len(out, n + 1);
                return -EBADMSG;
            }
            out[o++] = c;
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = 0;
    if (o < n)
        secure_wipe(out + o + 1, n - o); /* nothing of the encoded form lingers after the NUL */
    *ret = out;
    return 0;
}

int url_query_get(const char *query, const char *key, char **ret)
{
    char *name = NULL, *value = NULL;
    int r;

    if (!query || !key)
        return -EINVAL;
    /* "?a=1", "a=1" or ".../path?a=1#frag": the query starts after a '?' that comes before
     * any '=' or '&' (a '?' inside a value is data) */
    const char *q = query + strcspn(query, "?=&#");
    q = *q == '?' ? q + 1 : query;
    size_t qlen = strcspn(q, "#");

    r = -ENOENT;
    for (size_t i = 0; i < qlen;) {
        size_t len = strcspn(q + i, "&#");
        if (len > qlen - i)
            len = qlen - i;
        const char *pair = q + i;
        i += len + 1;
        if (len == 0)
            continue;
        const char *eq = memchr(pair, '=', len);
        size_t klen = eq ? (size_t)(eq - pair) : len;
        int k = form_decode(pair, klen, &name);
        if (k < 0) {
            if (k == -ENOMEM) {
                r = k;
                goto out;
            }
            continue; /* a key with %00 cannot be the one asked for */
        }
        bool match = strcmp(name, key) == 0;
        secure_free(name);
        name = NULL;
        if (!match)
            continue;
        r = eq ? form_decode(eq + 1, len - klen - 1, &value) : form_decode("", 0, &value);
        if (r < 0)
            goto out;
        *ret = value;
        value = NULL;
        r = 0;
        goto out;
    }
out:
    secure_free(name);
    secure_free(value);
    return r;
}

size_t url_scheme_len(const char *url)
{
    size_t n = 0;
    while ((url[n] >= 'a' && url[n] <= 'z') || (url[n] >= 'A' && url[n] <= 'Z') ||
           (n > 0 &&
            ((url[n] >= '0' && url[n] <= '9') || url[n] == '+' || url[n] == '-' || url[n] == '.')))
        n++;
    return n > 0 && url[n] == ':' ? n : 0;
}

bool url_has_userinfo(const char *url)
{
    const char *p = strstr(url, "://");
    if (!p)
        return false;
    p += 3;
    size_t n = strcspn(p, "/?#");
    return memchr(p, '@', n) != NULL;
}

/* Whether s[0..n) is one ${...} reference and nothing else: a name, not a value. */
static bool is_one_reference(const char *s, size_t n)
{
    return n > 3 && s[0] == '$' && s[1] == '{' && s[n - 1] == '}' &&
           memchr(s + 2, '}', n - 3) == NULL && memchr(s + 2, '$', n - 3) == NULL;
}

/* The pieces of a URL, in order, each said to be shown or masked: what url_display() and
 * url_each_masked() share. emit returns < 0 to stop, which is returned. */
typedef int (*url_emit_fn)(const char *s, size_t n, bool masked, void *userdata);

/* A value of a query or the fragment: masked unless empty or a ${...} reference. */
static int walk_value(const char *v, size_t n, url_emit_fn emit, void *ud)
{
    return emit(v, n, n > 0 && !is_one_reference(v, n), ud);
}

/* The components of a query (or a fragment) q[0..n): "key=" shown, the value walked; a bare
 * component walked whole. */
static int walk_query(const char *q, size_t n, url_emit_fn emit, void *ud)
{
    int r = 0;
    while (r >= 0) {
        const char *amp = memchr(q, '&', n);
        size_t len = amp ? (size_t)(amp - q) : n;
        const char *eq = memchr(q, '=', len);
        if (eq) {
            r = emit(q, (size_t)(eq - q) + 1, false, ud);
            if (r >= 0)
                r = walk_value(eq + 1, len - (size_t)(eq - q) - 1, emit, ud);
        } else {
            r = walk_value(q, len, emit, ud);
        }
        if (!amp || r < 0)
            break;
        r = emit("&", 1, false, ud);
        q = amp + 1;
        n -= len + 1;
    }
    return r;
}

static int walk_url(const char *url, url_emit_fn emit, void *ud)
{
    const char *p = url, *sep = strstr(url, "://");
    int r = 0;
    if (sep) {
        const char *auth = sep + 3;
        size_t alen = strcspn(auth, "/?#");
        const char *at = NULL;
        for (const char *c = auth; c < auth + alen; c++)
            if (*c == '@')
                at = c;
        if (at) {
            /* "user:password@": both may be credentials */
            const char *colon = memchr(auth, ':', (size_t)(at - auth));
            r = emit(url, (size_t)(auth - url), false, ud);
            if (r >= 0)
                r = emit(auth, (size_t)((colon ? colon : at) - auth), true, ud);
            if (r >= 0 && colon)
                r = emit(":", 1, false, ud);
            if (r >= 0 && colon)
                r = emit(colon + 1, (size_t)(at - colon - 1), true, ud);
            if (r >= 0)
                r = emit("@", 1, false, ud);
            p = at + 1;
        }
    }
    size_t head = strcspn(p, "?#");
    if (r >= 0)
        r = emit(p, head, false, ud);
    p += head;
    if (r >= 0 && *p == '?') {
        size_t qlen = strcspn(p + 1, "#");
        r = emit("?", 1, false, ud);
        if (r >= 0)
            r = walk_query(p + 1, qlen, emit, ud);
        p += 1 + qlen;
    }
    if (r >= 0 && *p == '#') {
        r = emit("#", 1, false, ud);
        if (r >= 0)
            r = walk_query(p + 1, strlen(p + 1), emit, ud);
    }
    return r;
}

static int display_emit(const char *s, size_t n, bool masked, void *userdata)
{
    struct buf *b = userdata;
    return masked ? buf_append_str(b, URL_DISPLAY_MASK) : buf_append(b, s, n);
}

char *url_display(const char *url)
{
    struct buf b;
    /* each masked piece is at least one byte long in url */
    buf_init(&b, strlen(url) * sizeof(URL_DISPLAY_MASK) + 16);
    if (walk_url(url, display_emit, &b) < 0) {
        buf_release(&b);
        return NULL;
    }
    return buf_detach(&b);
}

struct each_masked {
    void (*fn)(const char *part, size_t len, void *userdata);
    void *userdata;
};

static int each_masked_emit(const char *s, size_t n, bool masked, void *userdata)
{
    struct each_masked *m = userdata;
    if (masked)
        m->fn(s, n, m->userdata);
    return 0;
}

void url_each_masked(const char *url, void (*fn)(const char *part, size_t len, void *userdata),
                     void *userdata)
{
    struct each_masked m = {fn, userdata};
    (void)walk_url(url, each_masked_emit, &m);
}
