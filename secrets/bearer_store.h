/* bearer_store.h - the bearer tokens pi-mcp-adapter keeps in the OS keychain ("bearerTokenStore").
 *
 * `pi-mcp-adapter token set SERVER` stores, through keyring-rs, one Secret Service item with the
 * attributes service "pi-mcp-adapter.bearer" and username "sha256-<hex SHA-256 of SERVER>",
 * whose secret is {"token": ..., "serverUrl": ...}; a record longer than 1000 characters is cut
 * into chunk items named by a manifest stored in its place. The record is bound to the server's
 * URL: a token stored for another URL is refused, never sent. Nothing here writes the store:
 * the adapter's own command does. */
#pragma once

#include "credkit/err.h"
#include "credkit/macro.h"

#define BEARER_STORE_SERVICE "pi-mcp-adapter.bearer"

/* The token stored for server, when its record is bound to url. -ENOENT when none is stored,
 * -EBADMSG for a malformed record, -EACCES for another URL, and the keychain's errors; each
 * message names the server and the fix, never the token nor the URLs. Caller secure_free()s
 * *ret. */
int bearer_store_read(const char *server, const char *url, char **ret, struct err *e) _must_check_;
