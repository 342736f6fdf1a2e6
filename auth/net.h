/* net.h - the TLS of mcp-auth's requests: the entry's CAs and client certificate.
 *
 * mcp-auth signs in to one server a run. Its entry's "caFile" applies to every request of the
 * run (the server's probe and metadata, and its authorization server's discovery, registration,
 * token, revocation and device requests), and its client certificate to the requests to the
 * server's own origin only (mcp_tls.h): a certificate proves who the user is to the server the
 * entry names, not to an authorization server elsewhere. The proxy is common/http.c's, from the
 * environment. The settings are read once, before the first request, and held here like
 * main.c's parsed options, rather than passed through every grant's functions; a request
 * takes them with net_tls(). */
#pragma once

#include "credkit/err.h"
#include "credkit/http.h"
#include "credkit/macro.h"

struct mcp_server;

/* Reads s's TLS settings for requests about server_url (s NULL: none); the key's references
 * are resolved through `secrets`. -errno with a message naming the key. */
int net_load(const struct mcp_server *s, const char *server_url, struct err *e) _must_check_;

/* What every request of the run carries (borrowed; never NULL). */
const struct http_tls *net_tls(void);

/* Wipes and frees what net_load() read. */
void net_release(void);
