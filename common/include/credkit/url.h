/* url.h - URLs, parsed and canonicalised by libcurl's URL API.
 *
 * Tokens are bound to the canonical form of a server's URL (RFC 8707 resource): scheme and
 * host lowercase, default port dropped, fragment dropped, an empty or "/" path dropped
 * ("https://mcp.example.com"), any other path and the query kept as written. Two spellings of
 * the same server therefore share one token-store entry, and two servers never do. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/err.h"
#include "credkit/macro.h"

/* Canonical form of an absolute http(s) URL. -EINVAL with a message for anything else (other
 * schemes, relative URLs, userinfo, junk). Caller frees. */
int url_canonical(const char *in, char **ret, struct err *e) _must_check_;

/* Whether the URL's host is a loopback address (127.0.0.0/8, [::1]) or "localhost". */
bool url_is_loopback(const char *url);

/* https, or http to a loopback host: what authorization-server endpoints must be. -EINVAL with
 * a message naming what (e.g. "token endpoint") otherwise. */
int url_check_secure(const char *url, const char *what, struct err *e) _must_check_;

/* "scheme://host[:port]" of url, canonical. Caller frees. */
int url_origin(const char *url, char **ret) _must_check_;

/* Same scheme, host and port (after canonicalisation). */
bool url_same_origin(const char *a, const char *b);

/* The path of url ("/" when empty), without query. Caller frees. */
int url_path(const char *url, char **ret) _must_check_;

/* Resolves ref (absolute or relative) against base (RFC 3986 section 5). -EINVAL when base or
 * the result is not a URL url_canonical() accepts (a reference may name "ftp:"). Caller frees. */
int url_resolve(const char *base, const char *ref, char **ret, struct err *e) _must_check_;

/* application/x-www-form-urlencoded encoding of s (space as %20 is also accepted by servers;
 * we emit %20). Caller frees; NULL on ENOMEM. */
char *url_encode(const char *s);

/* Looks key up in a query string ("a=1&b=2", with or without a leading '?', or a whole URL whose
 * query is used) and decodes its value ('+' is a space; a '%' not followed by two hex digits is
 * kept as it is). The first occurrence wins. -ENOENT when absent, -EBADMSG when the value
 * decodes to a NUL byte. Caller frees (secure_free: callback parameters hold authorization
 * codes). Kept beside url_encode() as its inverse: the unit and fuzz tests check that every
 * encoding decodes back through it (the callback's own query is read by libmicrohttpd). */
int url_query_get(const char *query, const char *key, char **ret) _must_check_;

/* The length of the scheme url begins with ("ftp" in "ftp://x": 3), as RFC 3986 spells one (a
 * letter, then letters, digits, '+', '-', '.') followed by ':'; 0 when it begins with none. For
 * messages about a URL url_canonical() refuses, which must not quote the rest of it. */
size_t url_scheme_len(const char *url);

/* Whether the authority of an absolute URL ("scheme://authority/...") carries
 * "user[:password]@". */
bool url_has_userinfo(const char *url);

/* What replaces a value in url_display(). */
#define URL_DISPLAY_MASK "***"

/* url as shown to a person (a list, a report, a log line): a query string or a fragment may
 * carry a key ("?api_key=..."), and userinfo a password, so each query or fragment value
 * becomes URL_DISPLAY_MASK ("?api_key=***&region=***"; a component without '=' whole), and so
 * do the user and the password ("***:***@"); a value that is one ${NAME} reference is a name and stays. Works on
 * templates and on what url_canonical() refuses alike: no parsing, nothing refused. Caller
 * frees; NULL on ENOMEM. */
char *url_display(const char *url);

/* Calls fn with each piece of url that url_display() masks (each query or fragment value, a
 * bare component, the userinfo), borrowed, not NUL-terminated: what a caller registers with its
 * log's redaction, so that no log line that quotes the URL shows them either. */
void url_each_masked(const char *url, void (*fn)(const char *part, size_t len, void *userdata),
                     void *userdata);
