/* http.c - one bounded, synchronous HTTP request over a libcurl easy handle
 *
 * libcurl never follows a redirect here: http_do() reads Location itself, so that it can refuse
 * one that leaves the origin before anything (an Authorization header, a body) is sent there.
 * libcurl 7.88 initialises itself, thread-safely, on the first curl_easy_init(); no global.
 *
 * Request headers, response headers and (with secret_body) the response body may hold tokens:
 * our copies are wiped before they are freed, and none of them ever reaches an error message.
 * Messages quote the URL the caller asked for, never a URL taken from a Location header. */
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
    if (curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_USERAGENT, HTTP_USER_AGENT) != CURLE_OK)
        return -EINVAL;
    return 0;
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
        return err_set(e, -EPROTO, "TLS failure with '%s': %s", url,
                       errbuf[0] ? errbuf : curl_easy_strerror(cc));
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
#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (cc == CURLE_OK)                                                                        \
            cc = curl_easy_setopt(c, opt, val);                                                    \
    } while (0)
    if (http_curl_baseline(c) < 0)
        cc = CURLE_UNKNOWN_OPTION;
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

int http_do(const struct http_request *req, struct http_response *resp, struct err *e)
{
    CURL *c = NULL;
    struct curl_slist *headers = NULL;
    struct http_xfer x = {0};
    struct buf body;
    char *url = NULL, *next = NULL, *canon = NULL, *media = NULL, *effective = NULL;
    char errbuf[CURL_ERROR_SIZE];
    const char *method = req->method ? req->method : "GET";
    bool with_body = req->body != NULL;
    int64_t timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : HTTP_TIMEOUT_DEFAULT_MS;
    int64_t deadline = now_mono_ms() + timeout_ms;
    long status = 0;
    int r;

    if (req->secret_body)
        buf_init_secret(&body, req->max_body ? req->max_body : HTTP_MAX_BODY_DEFAULT);
    else
        buf_init(&body, req->max_body ? req->max_body : HTTP_MAX_BODY_DEFAULT);
    x.body = &body;

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

    x.headers = calloc(HTTP_MAX_HEADERS + 1, sizeof(char *));
    url = strdup(req->url);
    c = curl_easy_init();
    if (!x.headers || !url || !c) {
        r = -ENOMEM;
        goto out;
    }

    for (int hops = 0;; hops++) {
        int64_t left = deadline - now_mono_ms();
        if (left <= 0) {
            r = timed_out(req->url, timeout_ms, e);
            goto out;
        }
        headers_clear(x.headers, &x.n_headers);
        x.error = 0;
        x.header_overflow = false;
        buf_reset(&body);
        slist_free_wiped(headers);
        headers = NULL;
        r = build_headers(req, with_body, &headers);
        if (r < 0)
            goto out;

        curl_easy_reset(c); /* keeps the connection cache for a same-origin hop */
        errbuf[0] = 0;
        CURLcode cc =
            http_setup(c, url, method, with_body, req, headers, left, body.max, &x, errbuf);
        if (cc != CURLE_OK) {
            r = cc == CURLE_OUT_OF_MEMORY ? -ENOMEM
                                          : err_set(e, -EIO, "cannot set up a request to '%s': %s",
                                                    req->url, curl_easy_strerror(cc));
            goto out;
        }
        cc = curl_easy_perform(c);
        if (cc != CURLE_OK) {
            r = http_error(c, cc, &x, req->url, timeout_ms, body.max, errbuf, e);
            goto out;
        }
        (void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);

        if (!req->follow_redirects || status < 300 || status > 399)
            break;
        const char *location = headers_find(x.headers, "location");
        if (!location)
            break; /* 304 and the like: a response like any other */

        /* the Location value is never quoted: it may carry a code or a token */
        r = url_resolve(url, location, &next, NULL);
        if (r == -ENOMEM)
            goto out;
        if (r < 0) {
            r = err_set(e, -EXDEV,
                        "'%s' redirected to a location that is not an http(s) URL: "
                        "refused",
                        req->url);
            goto out;
        }
        if (!url_same_origin(url, next)) {
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
        if (status == 303 || ((status == 301 || status == 302) && strcmp(method, "POST") == 0)) {
            if (strcmp(method, "HEAD") != 0)
                method = "GET";
            with_body = false;
        }
        free(url);
        url = next;
        next = NULL;
    }

    char *eff = NULL;
    if (curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff) != CURLE_OK || !eff)
        eff = url;
    effective = strdup(eff);
    if (!effective) {
        r = -ENOMEM;
        goto out;
    }
    const char *ct = headers_find(x.headers, "content-type");
    if (ct) {
        r = media_type_parse(ct, &media);
        if (r < 0)
            goto out;
    }
    r = buf_reserve(&body, 0); /* data is never NULL, even for an empty body */
    if (r < 0)
        goto out;

    *resp = (struct http_response){
        .status = status,
        .media_type = media,
        .body = body,
        .effective_url = effective,
        .headers = x.headers,
    };
    media = NULL;
    effective = NULL;
    x.headers = NULL;
    buf_init(&body, 0); /* moved into *resp */
    r = 0;
out:
    if (x.headers) {
        headers_clear(x.headers, &x.n_headers);
        free(x.headers);
    }
    buf_release(&body);
    slist_free_wiped(headers);
    curl_easy_cleanup(c);
    free(url);
    free(next);
    free(canon);
    free(media);
    free(effective);
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

void http_response_header_each(const struct http_response *resp, const char *name,
                               void (*fn)(const char *value, void *userdata), void *userdata)
{
    if (!resp || !name || !fn)
        return;
    for (size_t i = 0; resp->headers && resp->headers[i]; i++) {
        const char *v = header_match(resp->headers[i], name);
        if (v)
            fn(v, userdata);
    }
}
