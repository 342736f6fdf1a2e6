/* http.h - one HTTP request at a time, for the command-line tools.
 *
 * mcp-auth talks to authorization servers and probes MCP servers with short, bounded,
 * synchronous requests: a timeout on every request, a cap on every body, no redirects except
 * within the same origin (never to another origin: a redirect must not carry a credential
 * elsewhere), TLS verified by libcurl. The bridge does not use this: it drives libcurl multi
 * from its event loop.
 *
 * Every handle of the suite, these and the bridge's, goes through http_curl_network(): it
 * chooses the proxy from the environment itself (so that a log can say which one a request
 * used), and sets the CAs and the client certificate of a struct http_tls.
 *
 * Errors from libcurl become -errno with a message naming the URL:
 *   -ETIMEDOUT     the request timed out
 *   -ECONNREFUSED  nothing listens there
 *   -EHOSTUNREACH  the host name does not resolve / the network is unreachable
 *   -EPROTO        TLS or protocol failure
 *   -E2BIG         the body exceeded max_body
 *   -EXDEV         a redirect to another origin (or to a non-http(s) URL) was refused
 *   -ELOOP         more than 5 redirects
 *   -EINVAL        a request we would not send (not an http(s) URL, a header with a line break)
 *   -EIO           anything else
 * On failure *resp is left untouched and needs no release. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/buf.h"
#include "credkit/err.h"
#include "credkit/macro.h"

#define HTTP_TIMEOUT_DEFAULT_MS (30 * 1000)
#define HTTP_MAX_BODY_DEFAULT   (1024 * 1024)

/* The TLS a request is made with beyond libcurl's defaults: the CAs that replace the system's
 * roots (an entry's "caFile"), and a client certificate with its key (mTLS), each held in
 * memory and handed to libcurl from there. An embeddable value: http_tls_release() frees what
 * it holds and wipes the key and its passphrase. */
struct http_tls {
    char *ca_file;     /* PEM file of CAs, instead of the system's roots; NULL: the system's
                          (or SSL_CERT_FILE / CURL_CA_BUNDLE / SSL_CERT_DIR) */
    char *cert_origin; /* the client certificate goes to this origin only ("https://host[:port]");
                          NULL: to any origin the request is made to */
    struct buf cert;   /* PEM client certificate (chain); empty: none */
    struct buf key;    /* PEM private key: a secret buffer */
    char *key_pass;    /* the key's passphrase, a secret; NULL: none */
};

#define HTTP_TLS_PEM_MAX (256 * 1024)

/* An empty one: no CA file, no client certificate. */
void http_tls_init(struct http_tls *t);

/* Frees what t holds, the key and passphrase wiped; t is empty again. NULL-safe. */
void http_tls_release(struct http_tls *t);

/* Whether t holds a client certificate (and its key). */
bool http_tls_has_cert(const struct http_tls *t);

struct http_request {
    const char *method; /* "GET" (default when NULL), "POST", "DELETE" */
    const char *url;
    const char *const *headers; /* NULL-terminated "Name: value" strings; may hold secrets */
    const char *body;           /* NULL: none */
    size_t body_len;
    const char *content_type;   /* sets Content-Type when body is given */
    int64_t timeout_ms;         /* 0: HTTP_TIMEOUT_DEFAULT_MS */
    size_t max_body;            /* 0: HTTP_MAX_BODY_DEFAULT */
    bool follow_redirects;      /* follow up to 5 redirects within the same origin */
    bool secret_body;           /* the response body holds secrets (tokens): secret buffer */
    const struct http_tls *tls; /* borrowed; NULL: libcurl's defaults */
};

struct http_response {
    long status;
    char *media_type;    /* Content-Type without parameters, lowercase; NULL when absent */
    struct buf body;     /* NUL-terminated */
    char *effective_url; /* after redirects */
    char **headers;      /* NULL-terminated "name: value" (name lowercase), in order received */
};

/* Performs the request. Returns 0 whenever a response arrived, whatever its status: the caller
 * judges resp->status. On success the caller releases *resp. */
int http_do(const struct http_request *req, struct http_response *resp, struct err *e) _must_check_;

void http_response_release(struct http_response *resp);

/* The first value of header name (case-insensitive), or NULL. Borrowed. */
const char *http_response_header(const struct http_response *resp, const char *name);

/* The policy every libcurl handle of the suite starts from, the bridge's event-loop transfers
 * as much as http_do()'s: no signals (the bridge owns its signal handling), http and https only,
 * redirects never followed by libcurl (callers decide, by origin). Kept to that: the bridge sets
 * it on every request (http_do() adds its User-Agent). Returns 0, or -EINVAL when libcurl
 * refused an option (one too old). The handle is a CURL *, taken as void * so this header does
 * not pull in libcurl's. */
int http_curl_baseline(void *curl) _must_check_;

/* The network options of one request to url, on top of http_curl_baseline(): the proxy chosen
 * by http_proxy_for() (none when it says none: libcurl is never left to read the environment
 * itself), the CAs from tls or, without its ca_file, from SSL_CERT_FILE or CURL_CA_BUNDLE and
 * SSL_CERT_DIR (which libcurl itself does not read), and tls's client certificate when url is
 * of its origin. tls may be NULL; it is borrowed, and must outlive the transfer (the key is
 * handed over without a copy). Returns 0, -ENOMEM, or -EINVAL when libcurl refused an option. */
int http_curl_network(void *curl, const char *url, const struct http_tls *tls) _must_check_;

/* The proxy a request to url goes through, as the environment names it, in *ret (NULL:
 * direct), and in *ret_var the variable it came from (borrowed; may be NULL). As curl reads
 * them: https_proxy or HTTPS_PROXY for https, http_proxy or HTTP_PROXY for http, then
 * all_proxy or ALL_PROXY; no_proxy or NO_PROXY lists the hosts reached directly ("*": all;
 * "example.com" also its subdomains; an IP address, or a CIDR block). A loopback host is never
 * proxied: a proxy elsewhere could not reach it, and plain http to it carries credentials only
 * because it never leaves the machine. The proxy URL may carry a password: show it with
 * http_proxy_display(). Caller frees *ret. */
int http_proxy_for(const char *url, char **ret, const char **ret_var) _must_check_;

/* A proxy URL as shown in a log: its user and password masked (url_display()). Caller frees;
 * NULL on ENOMEM. */
char *http_proxy_display(const char *proxy);

/* Advice to append to a TLS failure from libcurl's error text (CURLOPT_ERRORBUFFER): a server
 * that asked for a client certificate, a certificate no trusted CA signed; "" when none fits.
 * Static. */
const char *http_tls_advice(const char *errbuf);

/* Sets one libcurl option unless an earlier one of the chain failed, so that a chain of
 * options ends with one result to check (for the files that include <curl/curl.h>):
 *     CURLcode cc = CURLE_OK;
 *     HTTP_SETOPT(cc, easy, CURLOPT_URL, url);
 *     HTTP_SETOPT(cc, easy, CURLOPT_TIMEOUT_MS, 5000L);
 *     if (cc != CURLE_OK) ... */
#define HTTP_SETOPT(cc, easy, opt, val)                                                            \
    do {                                                                                           \
        if ((cc) == CURLE_OK)                                                                      \
            (cc) = curl_easy_setopt((easy), (opt), (val));                                         \
    } while (0)
