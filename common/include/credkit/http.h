/* http.h - one HTTP request at a time, for the command-line tools.
 *
 * mcp-auth talks to authorization servers and probes MCP servers with short, bounded,
 * synchronous requests: a timeout on every request, a cap on every body, no redirects except
 * within the same origin (never to another origin: a redirect must not carry a credential
 * elsewhere), TLS verified by libcurl. The bridge does not use this: it drives libcurl multi
 * from its event loop.
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

struct http_request {
    const char *method; /* "GET" (default when NULL), "POST", "DELETE" */
    const char *url;
    const char *const *headers; /* NULL-terminated "Name: value" strings; may hold secrets */
    const char *body;           /* NULL: none */
    size_t body_len;
    const char *content_type; /* sets Content-Type when body is given */
    int64_t timeout_ms;       /* 0: HTTP_TIMEOUT_DEFAULT_MS */
    size_t max_body;          /* 0: HTTP_MAX_BODY_DEFAULT */
    bool follow_redirects;    /* follow up to 5 redirects within the same origin */
    bool secret_body;         /* the response body holds secrets (tokens): secret buffer */
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
