/* mcp_tls.h - an entry's TLS settings, read into a struct http_tls for every tool alike.
 *
 * "caFile" names the CAs that verify the server (instead of the system's roots); "clientCert"
 * and "clientKey" the client certificate a server that demands one (mTLS) is shown, and
 * "clientKeyPassphrase" the key's passphrase. The paths take ${VAR} from the environment, a
 * leading "~/" and a path relative to the working directory, as the pi adapter reads "caFile".
 * The key is a secret: "clientKey" is either a path to a file only its owner can read (a file
 * that group or others can read is refused, with the chmod that fixes it), or a value whose
 * ${NAME} reference resolves, through the caller's lookup (`secrets` in the bridge), to the PEM
 * text itself. An encrypted key is decrypted here with its passphrase, so that libcurl only
 * ever gets the key in memory, and the passphrase never at all; neither appears in a message. */
#pragma once

#include "credkit/err.h"
#include "credkit/http.h"
#include "credkit/macro.h"
#include "credkit/mcp_template.h"

struct mcp_server; /* credkit/mcp_entry.h */

/* Reads s's TLS settings into *ret (an http_tls_init()ed value, released by the caller) for
 * requests to server_url (the entry's expanded URL: the client certificate goes to its origin
 * only). lookup (NULL: the environment) resolves the references of "clientKey" and
 * "clientKeyPassphrase". An entry without any of the keys leaves *ret empty. -EINVAL, -ENOENT,
 * -EACCES, -EKEYREJECTED (a key or passphrase that does not open, a key of another
 * certificate) with a message naming the key and the path, never the key's text. */
int mcp_server_tls(const struct mcp_server *s, const char *server_url, mcp_lookup_fn lookup,
                   void *userdata, struct http_tls *ret, struct err *e) _must_check_;
