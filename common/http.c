/* http.c - one bounded, synchronous HTTP request over a libcurl easy handle
 *
 * libcurl never follows a redirect here: http_do() reads Location itself, so that it can refuse
 * one that leaves the origin before anything (an Authorization header, a body) is sent there.
 * libcurl 7.88 initialises itself, thread-safely, on the first curl_easy_init(); no global.
 *
 * Request headers, response headers and (with secret_body) the response body may hold tokens:
 * our copies are wiped before they are freed, and none of them ever reaches an error message.
 * Messages quote the URL the caller asked for, never a URL taken from a Location header. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "credkit/http.h"
#include "credkit/secmem.h"
#include "credkit/url.h"
#include "credkit/util.h"
#include "credkit/version.h"

#define HTTP_MAX_REDIRECTS   5
#define HTTP_MAX_HEADERS     100
#define HTTP_MAX_HEADER_LINE (8 * 1024)
#define HTTP_USER_AGENT      "credkit/" PROJECT_VERSION_STR

/* State shared with the libcurl callbacks during one transfer. */
struct http_xfer {
    struct buf *body;
    char **headers; /* HTTP_MAX_HEADERS + 1 slots, NULL-terminated */
    size_t n_headers;
    int error; /* why a callback aborted the transfer, 0 if none */
    bool header_overflow;
};

static void headers_clear(char **headers, size_t *n)
{
    for (size_t i = 0; i < *n; i++) {
        secure_free(headers[i]);
        headers[i] = NULL;
    }
    *n = 0;
}

static size_t http_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct http_xfer *x = userdata;
    size_t n = size * nmemb;
    int r = buf_append(x->body, ptr, n);
    if (r < 0) {
        x->error = r;
        return 0; /* anything but n aborts with CURLE_WRITE_ERROR */
    }
    return n;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static size_t http_header_cb(char *line, size_t size, size_t nitems, void *userdata)
{
    struct http_xfer *x = userdata;
    size_t n = size * nitems;

    if (n > HTTP_MAX_HEADER_LINE + 2) {
        x->error = -E2BIG;
        x->header_overflow = true;
        return 0;
    }
    /* a status line starts a new response (after a 100 Continue, say): keep only the last's */
    if (n >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        headers_clear(x->headers, &x->n_headers);
        return n;
    }
    /* obsolete line folding and anything without a colon are ignored, like blank lines */
    if (n == 0 || line[0] == ' ' || line[0] == '\t')
        return n;
    const char *colon = memchr(line, ':', n);
    if (!colon)
        return n;
    size_t nlen = (size_t)(colon - line);
    while (nlen > 0 && is_ws(line[nlen - 1]))
        nlen--;
    if (nlen == 0)
        return n;
    const char *v = colon + 1, *end = line + n;
    while (v < end && is_ws(*v))
        v++;
    while (end > v && is_ws(end[-1]))
        end--;

    if (x->n_headers >= HTTP_MAX_HEADERS) {
        x->error = -E2BIG;
        x->header_overflow = true;
        return 0;
    }
    size_t vlen = (size_t)(end - v);
    char *h = malloc(nlen + 2 + vlen + 1);
    if (!h) {
        x->error = -ENOMEM;
        return 0;
    }
    for (size_t i = 0; i < nlen; i++)
        h[i] = (char)tolower((unsigned char)line[i]);
    memcpy(h + nlen, ": ", 2);
    memcpy(h + nlen + 2, v, vlen);
    h[nlen + 2 + vlen] = 0;
    x->headers[x->n_headers++] = h;
    return n;
}

/* The value of "name: value" when the name matches (case-insensitive), else NULL. */
static const char *header_match(const char *h, const char *name)
{
    size_t n = strlen(name);
    if (strncasecmp(h, name, n) == 0 && h[n] == ':' && h[n + 1] == ' ')
        return h + n + 2;
    return NULL;
}

static const char *headers_find(char *const *headers, const char *name)
{
    for (size_t i = 0; headers && headers[i]; i++) {
        const char *v = header_match(headers[i], name);
        if (v)
            return v;
    }
    return NULL;
}

/* "type/subtype" from a Content-Type value: parameters dropped, whitespace trimmed,
 * lowercase. 0 with *ret NULL when nothing is left. */
static int media_type_parse(const char *ct, char **ret)
{
    size_t n = strcspn(ct, ";");
    while (n > 0 && is_ws(ct[n - 1]))
        n--;
    while (n > 0 && is_ws(*ct)) {
        ct++;
        n--;
    }
    if (n == 0) {
        *ret = NULL;
        return 0;
    }
    char *m = strndup(ct, n);
    if (!m)
        return -ENOMEM;
    for (char *c = m; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    *ret = m;
    return 0;
}

static void slist_free_wiped(struct curl_slist *l)
{
    for (struct curl_slist *i = l; i; i = i->next)
        secure_wipe(i->data, strlen(i->data));
    curl_slist_free_all(l);
}

/* The request headers for one hop. curl_slist_append copies each string; the copies are wiped
 * by slist_free_wiped. */
static int build_headers(const struct http_request *req, bool with_body, struct curl_slist **ret)
{
    struct curl_slist *l = NULL, *t;
    char *ct = NULL;
    int r;

    for (size_t i = 0; req->headers && req->headers[i]; i++) {
        t = curl_slist_append(l, req->headers[i]);
        if (!t) {
            r = -ENOMEM;
            goto out;
        }
        l = t;
    }
    if (with_body && req->content_type) {
        if (asprintf(&ct, "Content-Type: %s", req->content_type) < 0) {
            ct = NULL;
            r = -ENOMEM;
            goto out;
        }
        t = curl_slist_append(l, ct);
        if (!t) {
            r = -ENOMEM;
            goto out;
        }
        l = t;
    }
    /* no "Expect: 100-continue" round trip for a large body */
    t = curl_slist_append(l, "Expect:");
    if (!t) {
        r = -ENOMEM;
        goto out;
    }
    l = t;
    *ret = l;
    l = NULL;
    r = 0;
out:
    free(ct);
    slist_free_wiped(l);
    return r;
}

/* Header lines must be "Name: value" on one line: a CR or LF would let a value smuggle in
 * another header. Values are never quoted back. */
static int check_request(const struct http_request *req, struct err *e)
{
    const char *m = req->method;
    if (m) {
        if (!*m)
            return err_set(e, -EINVAL, "empty HTTP method for '%s'", req->url);
        for (const char *c = m; *c; c++)
            if (!isupper((unsigned char)*c))
                return err_set(e, -EINVAL, "invalid HTTP method '%s' for '%s'", m, req->url);
    }
    for (size_t i = 0; req->headers && req->headers[i]; i++) {
        const char *h = req->headers[i];
        size_t nlen = strcspn(h, ":\r\n");
        if (h[nlen] != ':' || nlen == 0 || strpbrk(h, "\r\n"))
            return err_set(e, -EINVAL,
                           "request header %zu for '%s' is not a single "
                           "'Name: value' line",
                           i + 1, req->url);
    }
    if (req->content_type && strpbrk(req->content_type, "\r\n"))
        return err_set(e, -EINVAL, "content type for '%s' contains a line break", req->url);
    if (req->body_len && !req->body)
        return err_set(e, -EINVAL, "body length without a body for '%s'", req->url);
    return 0;
}

int http_curl_baseline(void *curl)
{
    CURL *c = curl;
    /* kept to what every transfer needs: the bridge sets it on each of its requests */
    if (curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK)
        return -EINVAL;
    return 0;
}

/* ---- the network: proxy, CAs, client certificate ----------------------------------------- */

void http_tls_init(struct http_tls *t)
{
    *t = (struct http_tls){0};
    buf_init(&t->cert, HTTP_TLS_PEM_MAX);
    buf_init_secret(&t->key, HTTP_TLS_PEM_MAX);
}

void http_tls_release(struct http_tls *t)
{
    if (!t)
        return;
    free(t->ca_file);
    free(t->cert_origin);
    buf_release(&t->cert);
    buf_release(&t->key);
    *t = (struct http_tls){0};
}

bool http_tls_has_cert(const struct http_tls *t)
{
    return t && t->cert.len > 0 && t->key.len > 0;
}

/* The first of two variables that is set and not empty, and its name. */
static const char *env_either(const char *a, const char *b, const char **ret_var)
{
    const char *v = getenv(a);
    if (v && *v) {
        *ret_var = a;
        return v;
    }
    v = getenv(b);
    if (v && *v) {
        *ret_var = b;
        return v;
    }
    return NULL;
}

/* An IP address of either family in 16 bytes (IPv4 mapped): its family, or 0. */
static int ip_parse(const char *s, unsigned char out[16])
{
    unsigned char v4[4];
    if (inet_pton(AF_INET, s, v4) == 1) {
        memset(out, 0, 10);
        out[10] = out[11] = 0xff;
        memcpy(out + 12, v4, 4);
        return AF_INET;
    }
    return inet_pton(AF_INET6, s, out) == 1 ? AF_INET6 : 0;
}

/* Whether host (an IP address) is in the block "addr/bits", or is addr. */
static bool ip_in(const char *host, const char *entry)
{
    unsigned char h[16], a[16];
    char addr[64];
    const char *slash = strchr(entry, '/');
    size_t n = slash ? (size_t)(slash - entry) : strlen(entry);
    if (n >= sizeof(addr))
        return false;
    memcpy(addr, entry, n);
    addr[n] = 0;
    int fh = ip_parse(host, h), fa = ip_parse(addr, a);
    if (!fh || fh != fa)
        return false;
    unsigned long bits = 128;
    if (slash) {
        char *end = NULL;
        errno = 0;
        bits = strtoul(slash + 1, &end, 10);
        if (errno || end == slash + 1 || *end || bits > (fa == AF_INET ? 32u : 128u))
            return false;
        if (fa == AF_INET)
            bits += 96;
    }
    size_t whole = bits / 8, rest = bits % 8;
    if (memcmp(h, a, whole) != 0)
        return false;
    if (!rest)
        return true;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (h[whole] & mask) == (a[whole] & mask);
}

/* Whether no_proxy's list names host (lowercase, an IPv6 address without its brackets). */
static bool no_proxy_lists(const char *list, const char *host)
{
    size_t hlen = strlen(host);
    bool host_ip = ip_parse(host, (unsigned char[16]){0}) != 0;
    for (const char *p = list; *p;) {
        p += strspn(p, ", \t");
        size_t n = strcspn(p, ", \t");
        if (n == 0)
            break;
        char entry[256];
        const char *t = p;
        size_t tn = n;
        p += n;
        if (tn == 1 && *t == '*')
            return true;
        if (tn >= sizeof(entry))
            continue;
        while (tn && *t == '.') {
            t++;
            tn--;
        }
        while (tn && t[tn - 1] == '.')
            tn--;
        if (tn >= 2 && t[0] == '[' && memchr(t, ']', tn)) { /* "[::1]" */
            size_t close = (size_t)((const char *)memchr(t, ']', tn) - t);
            t++;
            tn = close - 1;
        }
        memcpy(entry, t, tn);
        entry[tn] = 0;
        if (!tn)
            continue;
        if (host_ip) {
            if (ip_in(host, entry))
                return true;
            continue;
        }
        if (hlen == tn && strcasecmp(host, entry) == 0)
            return true;
        if (hlen > tn && host[hlen - tn - 1] == '.' && strcasecmp(host + hlen - tn, entry) == 0)
            return true;
    }
    return false;
}

int http_proxy_for(const char *url, char **ret, const char **ret_var)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *proxy = NULL;
    const char *var = NULL, *v = NULL;
    int r;

    if (!u)
        return -ENOMEM;
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        r = -EINVAL;
        goto out;
    }
    if (url_is_loopback(url)) {
        r = 0;
        goto out;
    }
    if (strcasecmp(scheme, "https") == 0)
        v = env_either("https_proxy", "HTTPS_PROXY", &var);
    else if (strcasecmp(scheme, "http") == 0)
        v = env_either("http_proxy", "HTTP_PROXY", &var);
    if (!v)
        v = env_either("all_proxy", "ALL_PROXY", &var);
    if (!v) {
        r = 0;
        goto out;
    }
    const char *nvar = NULL, *list = env_either("no_proxy", "NO_PROXY", &nvar);
    char *h = host;
    size_t hl = strlen(h);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h[hl - 1] = 0;
        h++;
    }
    for (char *c = h; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    if (list && no_proxy_lists(list, h)) {
        r = 0;
        goto out;
    }
    proxy = strdup(v);
    if (!proxy) {
        r = -ENOMEM;
        goto out;
    }
    r = 0;
out:
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    if (r >= 0) {
        *ret = proxy;
        if (ret_var)
            *ret_var = proxy ? var : NULL;
    }
    return r;
}

char *http_proxy_display(const char *proxy)
{
    if (!proxy)
        return NULL;
    /* "user:pass@host:3128" without a scheme is http://, and its userinfo is masked as such */
    if (!strstr(proxy, "://")) {
        char *full = NULL, *d;
        if (asprintf(&full, "http://%s", proxy) < 0)
            return NULL;
        d = url_display(full);
        secure_free(full);
        return d;
    }
    return url_display(proxy);
}

/* The CA file and directory the environment names, as the curl tool and OpenSSL read them:
 * libcurl itself starts from the bundle it was built with and reads neither. */
static void env_cas(const char **ret_file, const char **ret_dir)
{
    const char *var, *dir = getenv("SSL_CERT_DIR");
    *ret_file = env_either("CURL_CA_BUNDLE", "SSL_CERT_FILE", &var);
    *ret_dir = dir && *dir ? dir : NULL;
}

/* Whether tls's client certificate goes with a request to url. */
static bool cert_for(const struct http_tls *tls, const char *url)
{
    if (!http_tls_has_cert(tls))
        return false;
    return !tls->cert_origin || url_same_origin(tls->cert_origin, url);
}

int http_curl_network(void *curl, const char *url, const struct http_tls *tls)
{
    CURL *c = curl;
    CURLcode cc = CURLE_OK;
    char *proxy = NULL;
    const char *ca_file = NULL, *ca_dir = NULL;
    int r = http_proxy_for(url, &proxy, NULL);
    if (r < 0)
        return r;
    /* the choice is ours, never libcurl's reading of the environment: what -v shows is what
     * is used ("" is no proxy, and the empty no-proxy list keeps NO_PROXY from applying twice) */
    HTTP_SETOPT(cc, c, CURLOPT_PROXY, proxy ? proxy : "");
    HTTP_SETOPT(cc, c, CURLOPT_NOPROXY, "");
    secure_free(proxy); /* libcurl keeps its own copy */

    env_cas(&ca_file, &ca_dir);
    if (tls && tls->ca_file) {
        /* the entry's CAs replace the system's roots for this server: no CA directory is
         * searched besides the file */
        HTTP_SETOPT(cc, c, CURLOPT_CAINFO, tls->ca_file);
        HTTP_SETOPT(cc, c, CURLOPT_CAPATH, (const char *)NULL);
    } else {
        if (ca_file)
            HTTP_SETOPT(cc, c, CURLOPT_CAINFO, ca_file);
        if (ca_dir)
            HTTP_SETOPT(cc, c, CURLOPT_CAPATH, ca_dir);
    }
    /* an https proxy is verified against the environment's CAs, never an entry's */
    if (ca_file)
        HTTP_SETOPT(cc, c, CURLOPT_PROXY_CAINFO, ca_file);
    if (ca_dir)
        HTTP_SETOPT(cc, c, CURLOPT_PROXY_CAPATH, ca_dir);

    if (cert_for(tls, url)) {
        /* without a copy: libcurl's would be freed unwiped; ours outlives the transfer */
        struct curl_blob cert = {tls->cert.data, tls->cert.len, CURL_BLOB_NOCOPY};
        struct curl_blob key = {tls->key.data, tls->key.len, CURL_BLOB_NOCOPY};
        HTTP_SETOPT(cc, c, CURLOPT_SSLCERT_BLOB, &cert);
        HTTP_SETOPT(cc, c, CURLOPT_SSLCERTTYPE, "PEM");
        HTTP_SETOPT(cc, c, CURLOPT_SSLKEY_BLOB, &key);
        HTTP_SETOPT(cc, c, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (cc == CURLE_OUT_OF_MEMORY)
        return -ENOMEM;
    return cc == CURLE_OK ? 0 : -EINVAL;
}

/* What a TLS failure's text says the user should do, or "". */
const char *http_tls_advice(const char *errbuf)
{
    if (!errbuf)
        return "";
    if (strstr(errbuf, "certificate required") || strstr(errbuf, "alert bad certificate"))
        return ": the server asks for a client certificate: set \"clientCert\" and \"clientKey\" "
               "in the entry (or the one given was refused)";
    if (strstr(errbuf, "unable to get local issuer") || strstr(errbuf, "self-signed") ||
        strstr(errbuf, "self signed"))
        return ": the server's certificate is not signed by a trusted CA: set \"caFile\" in the "
               "entry (or SSL_CERT_FILE) to the PEM file of the CA that signed it";
    return "";
}

static void format_ms(int64_t ms, char *out, size_t n)
{
    if (ms % 1000 == 0)
        (void)snprintf(out, n, "%llds", (long long)(ms / 1000));
    else
        (void)snprintf(out, n, "%lldms", (long long)ms);
}

static int timed_out(const char *url, int64_t timeout_ms, struct err *e)
{
    char t[32];
    format_ms(timeout_ms, t, sizeof(t));
    return err_set(e, -ETIMEDOUT,
                   "'%s' did not answer within %s: check the network, or try "
                   "again later",
                   url, t);
}

/* A CURLcode as -errno with a message. errbuf (CURLOPT_ERRORBUFFER) is only used for TLS
 * failures, where it names the certificate problem; it never holds header values. */
static int http_error(CURL *c, CURLcode cc, const struct http_xfer *x, const char *url,
                      int64_t timeout_ms, size_t max_body, const char *errbuf, struct err *e)
{
    long os_errno = 0;

    if ((cc == CURLE_WRITE_ERROR || cc == CURLE_ABORTED_BY_CALLBACK) && x->error) {
        if (x->error == -E2BIG && x->header_overflow)
            return err_set(e, -E2BIG,
                           "the response from '%s' has more than %d header lines "
                           "or one longer than %d bytes",
                           url, HTTP_MAX_HEADERS, HTTP_MAX_HEADER_LINE);
        if (x->error == -E2BIG)
            return err_set(e, -E2BIG, "the response from '%s' is larger than %zu bytes", url,
                           max_body);
        return err_set(e, x->error, "cannot read the response from '%s': %s", url,
                       strerror(-x->error));
    }

    switch (cc) {
    case CURLE_FILESIZE_EXCEEDED:
        return err_set(e, -E2BIG, "the response from '%s' is larger than %zu bytes", url, max_body);
    case CURLE_OPERATION_TIMEDOUT:
        return timed_out(url, timeout_ms, e);
    case CURLE_COULDNT_RESOLVE_HOST:
        return err_set(e, -EHOSTUNREACH,
                       "cannot reach '%s': the host name does not resolve; "
                       "check the URL and the network",
                       url);
    case CURLE_COULDNT_RESOLVE_PROXY:
        return err_set(e, -EHOSTUNREACH,
                       "cannot reach '%s': the proxy's host name does not "
                       "resolve; check the proxy settings",
                       url);
    case CURLE_COULDNT_CONNECT:
        (void)curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
        if (os_errno == ENETUNREACH || os_errno == EHOSTUNREACH)
            return err_set(e, -EHOSTUNREACH, "cannot reach '%s': %s", url, strerror((int)os_errno));
        if (os_errno == ECONNREFUSED || os_errno == 0)
            return err_set(e, -ECONNREFUSED,
                           "cannot reach '%s': connection refused; is the "
                           "server running?",
                           url);
        return err_set(e, -ECONNREFUSED, "cannot reach '%s': %s", url, strerror((int)os_errno));
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
        return err_set(e, -EPROTO, "TLS failure with '%s': %s%s", url,
                       errbuf[0] ? errbuf : curl_easy_strerror(cc), http_tls_advice(errbuf));
    case CURLE_RECV_ERROR:
        /* TLS 1.3: a server that wants a client certificate says so at the first read */
        if (*http_tls_advice(errbuf))
            return err_set(e, -EPROTO, "TLS failure with '%s': %s%s", url, errbuf,
                           http_tls_advice(errbuf));
        return err_set(e, -EIO, "request to '%s' failed: %s", url, curl_easy_strerror(cc));
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
    case CURLE_QUIC_CONNECT_ERROR:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_TOO_MANY_REDIRECTS:
        return err_set(e, -EPROTO, "'%s' broke the HTTP protocol: %s", url, curl_easy_strerror(cc));
    case CURLE_OUT_OF_MEMORY:
        return -ENOMEM;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return err_set(e, -EINVAL, "cannot request '%s': %s", url, curl_easy_strerror(cc));
    default:
        return err_set(e, -EIO, "request to '%s' failed: %s", url, curl_easy_strerror(cc));
    }
}

/* Options for one hop; the handle was just reset. */
static CURLcode http_setup(CURL *c, const char *url, const char *method, bool with_body,
                           const struct http_request *req, struct curl_slist *headers,
                           int64_t timeout_ms, size_t max_body, struct http_xfer *x, char *errbuf)
{
    CURLcode cc = CURLE_OK;
#define SET(opt, val) HTTP_SETOPT(cc, c, opt, val)
    if (http_curl_baseline(c) < 0)
        cc = CURLE_UNKNOWN_OPTION;
    int r = http_curl_network(c, url, req->tls);
    if (r < 0 && cc == CURLE_OK)
        cc = r == -ENOMEM ? CURLE_OUT_OF_MEMORY : CURLE_UNKNOWN_OPTION;
    /* a redirect is followed by hand (same origin only), never by libcurl: the protocols are a
     * second fence */
    SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_USERAGENT, HTTP_USER_AGENT);
    SET(CURLOPT_ERRORBUFFER, errbuf);
    SET(CURLOPT_URL, url);
    SET(CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    SET(CURLOPT_HTTPHEADER, headers);
    SET(CURLOPT_WRITEFUNCTION, http_write_cb);
    SET(CURLOPT_WRITEDATA, x);
    SET(CURLOPT_HEADERFUNCTION, http_header_cb);
    SET(CURLOPT_HEADERDATA, x);
    /* refuses early when Content-Length already says too much; the write callback catches
     * the rest */
    SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max_body);

    if (with_body) {
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        SET(CURLOPT_POSTFIELDS, req->body);
        if (strcmp(method, "POST") != 0)
            SET(CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "GET") == 0) {
        SET(CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        SET(CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "POST") == 0) {
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
        SET(CURLOPT_POSTFIELDS, "");
    } else {
        SET(CURLOPT_CUSTOMREQUEST, method);
    }
#undef SET
    return cc;
}

/* One request across its hops: the libcurl handle, the URL and method of the current hop, and
 * what the callbacks gathered of its response. */
struct http_call {
    const struct http_request *req;
    CURL *c;
    struct curl_slist *headers; /* this hop's request headers, wiped when freed */
    struct http_xfer x;
    struct buf body;
    char *url; /* this hop's URL */
    const char *method;
    bool with_body;
    int64_t timeout_ms, deadline;
    long status;
    char errbuf[CURL_ERROR_SIZE];
};

/* The deadline counts from here, before anything is checked or allocated. */
static void http_call_init(struct http_call *h, const struct http_request *req)
{
    int64_t timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : HTTP_TIMEOUT_DEFAULT_MS;

    *h = (struct http_call){
        .req = req,
        .method = req->method ? req->method : "GET",
        .with_body = req->body != NULL,
        .timeout_ms = timeout_ms,
        .deadline = now_mono_ms() + timeout_ms,
    };
    if (req->secret_body)
        buf_init_secret(&h->body, req->max_body ? req->max_body : HTTP_MAX_BODY_DEFAULT);
    else
        buf_init(&h->body, req->max_body ? req->max_body : HTTP_MAX_BODY_DEFAULT);
    h->x.body = &h->body;
}

static void http_call_release(struct http_call *h)
{
    if (h->x.headers) {
        headers_clear(h->x.headers, &h->x.n_headers);
        free(h->x.headers);
        h->x.headers = NULL;
    }
    buf_release(&h->body);
    slist_free_wiped(h->headers);
    h->headers = NULL;
    curl_easy_cleanup(h->c);
    h->c = NULL;
    free(h->url);
    h->url = NULL;
}

/* One exchange with h->url, within what is left of the deadline: on success h->status, h->x
 * and h->body hold its response (the previous hop's are dropped first). */
static int http_hop(struct http_call *h, struct err *e)
{
    const struct http_request *req = h->req;
    int64_t left = h->deadline - now_mono_ms();
    int r;

    if (left <= 0)
        return timed_out(req->url, h->timeout_ms, e);
    headers_clear(h->x.headers, &h->x.n_headers);
    h->x.error = 0;
    h->x.header_overflow = false;
    buf_reset(&h->body);
    slist_free_wiped(h->headers);
    h->headers = NULL;
    r = build_headers(req, h->with_body, &h->headers);
    if (r < 0)
        return r;

    curl_easy_reset(h->c); /* keeps the connection cache for a same-origin hop */
    h->errbuf[0] = 0;
    CURLcode cc = http_setup(h->c, h->url, h->method, h->with_body, req, h->headers, left,
                             h->body.max, &h->x, h->errbuf);
    if (cc != CURLE_OK)
        return cc == CURLE_OUT_OF_MEMORY ? -ENOMEM
                                         : err_set(e, -EIO, "cannot set up a request to '%s': %s",
                                                   req->url, curl_easy_strerror(cc));
    cc = curl_easy_perform(h->c);
    if (cc != CURLE_OK)
        return http_error(h->c, cc, &h->x, req->url, h->timeout_ms, h->body.max, h->errbuf, e);
    (void)curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &h->status);
    return 0;
}

/* Whether to follow the response of hop number hops: 0 when it is the answer, 1 when h now
 * names the next hop (its URL, and its method after RFC 9110's rewrites), or why the redirect
 * is refused. */
static int redirect_decide(struct http_call *h, int hops, struct err *e)
{
    const struct http_request *req = h->req;
    char *next = NULL;
    int r;

    if (!req->follow_redirects || h->status < 300 || h->status > 399)
        return 0;
    const char *location = headers_find(h->x.headers, "location");
    if (!location)
        return 0; /* 304 and the like: a response like any other */

    /* the Location value is never quoted: it may carry a code or a token */
    r = url_resolve(h->url, location, &next, NULL);
    if (r == -ENOMEM)
        goto out;
    if (r < 0) {
        r = err_set(e, -EXDEV,
                    "'%s' redirected to a location that is not an http(s) URL: "
                    "refused",
                    req->url);
        goto out;
    }
    if (!url_same_origin(h->url, next)) {
        char *other = NULL;
        r = url_origin(next, &other);
        if (r == -ENOMEM)
            goto out;
        r = err_set(e, -EXDEV, "'%s' redirected to another origin ('%s'): refused", req->url,
                    other ? other : "?");
        free(other);
        goto out;
    }
    if (hops >= HTTP_MAX_REDIRECTS) {
        r = err_set(e, -ELOOP, "'%s' redirected more than %d times: refused", req->url,
                    HTTP_MAX_REDIRECTS);
        goto out;
    }
    /* RFC 9110 15.4: 303 always, and 301/302 after a POST by custom, become GET */
    if (h->status == 303 ||
        ((h->status == 301 || h->status == 302) && strcmp(h->method, "POST") == 0)) {
        if (strcmp(h->method, "HEAD") != 0)
            h->method = "GET";
        h->with_body = false;
    }
    free(h->url);
    h->url = next;
    next = NULL;
    r = 1;
out:
    free(next);
    return r;
}

/* Moves the last hop's response into *resp. */
static int response_take(struct http_call *h, struct http_response *resp)
{
    char *media = NULL, *effective = NULL, *eff = NULL;
    int r;

    if (curl_easy_getinfo(h->c, CURLINFO_EFFECTIVE_URL, &eff) != CURLE_OK || !eff)
        eff = h->url;
    effective = strdup(eff);
    if (!effective) {
        r = -ENOMEM;
        goto out;
    }
    const char *ct = headers_find(h->x.headers, "content-type");
    if (ct) {
        r = media_type_parse(ct, &media);
        if (r < 0)
            goto out;
    }
    r = buf_reserve(&h->body, 0); /* data is never NULL, even for an empty body */
    if (r < 0)
        goto out;

    *resp = (struct http_response){
        .status = h->status,
        .media_type = media,
        .body = h->body,
        .effective_url = effective,
        .headers = h->x.headers,
    };
    media = NULL;
    effective = NULL;
    h->x.headers = NULL;
    buf_init(&h->body, 0); /* moved into *resp */
    r = 0;
out:
    free(media);
    free(effective);
    return r;
}

int http_do(const struct http_request *req, struct http_response *resp, struct err *e)
{
    struct http_call h;
    char *canon = NULL;
    int r;

    http_call_init(&h, req);
    if (!req->url) {
        r = err_set(e, -EINVAL, "no URL to request");
        goto out;
    }
    r = url_canonical(req->url, &canon, e); /* http(s), a host, no userinfo */
    if (r < 0)
        goto out;
    r = check_request(req, e);
    if (r < 0)
        goto out;

    h.x.headers = calloc(HTTP_MAX_HEADERS + 1, sizeof(char *));
    h.url = strdup(req->url);
    h.c = curl_easy_init();
    if (!h.x.headers || !h.url || !h.c) {
        r = -ENOMEM;
        goto out;
    }

    for (int hops = 0;; hops++) {
        r = http_hop(&h, e);
        if (r < 0)
            goto out;
        r = redirect_decide(&h, hops, e);
        if (r < 0)
            goto out;
        if (r == 0)
            break;
    }
    r = response_take(&h, resp);
out:
    http_call_release(&h);
    free(canon);
    return r;
}

void http_response_release(struct http_response *resp)
{
    if (!resp)
        return;
    buf_release(&resp->body);
    free(resp->media_type);
    free(resp->effective_url);
    for (size_t i = 0; resp->headers && resp->headers[i]; i++)
        secure_free(resp->headers[i]);
    free(resp->headers);
    *resp = (struct http_response){0};
}

const char *http_response_header(const struct http_response *resp, const char *name)
{
    if (!resp || !name)
        return NULL;
    return headers_find(resp->headers, name);
}
