/* cred_check.h - the last look at an upstream's credentials before they go to its server.
 *
 * Every answer of a credentials provider (the entry's own headers and ${...} values, the
 * headers of `secrets`, a headersHelper, `mcp-auth`) passes here before the upstream opens a
 * connection with it or replaces its request headers, wherever the values came from:
 *
 * - each header must be one that every consumer reads as one header (helper_header_refusal():
 *   no control character, no leading or trailing blank, not empty; an Authorization bearer
 *   token an RFC 6750 b64token; none that frames the request or its MCP session, such as
 *   Content-Length or MCP-Session-Id), or the server is not connected;
 * - credentials never go over plain http to a host that is not loopback (OAuth 2.1 requires
 *   TLS), unless the entry says "allowHttp": true. Credentials are the Authorization,
 *   Proxy-Authorization and Cookie headers whatever their source, every header a helper gave,
 *   every header whose template has a ${...}, and a url with a ${...} in it; a literal header of
 *   the entry's own (no ${...}) is not one. Loopback is 127.0.0.0/8, [::1] and "localhost".
 *
 * Messages name the header and say what to do, never a value. Pure functions; no I/O. */
#pragma once

#include <stdbool.h>

#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/mcp_entry.h"

#include "creds/cred.h"

/* Whether url (expanded) is plain http:// to a host that is not loopback (an unparsable URL
 * counts as one: nothing is sent to what cannot be told apart). */
bool cred_check_plain_remote(const char *url);

/* Whether the header "Name: value" of an answer for s is a credential (see above). */
bool cred_check_is_credential(const struct mcp_server *s, const char *header);

/* Checks the answer c for the entry s: 0 when it may go; -EINVAL (a header that is not safe)
 * or -EPERM (credentials over plain http to a host that is not loopback) with e naming the
 * header and the fix, without the server's name (the caller adds it). -ENOMEM. A stdio entry
 * has no headers and no URL: always 0. */
int cred_check_answer(const struct mcp_server *s, const struct credentials *c,
                      struct err *e) _must_check_;
