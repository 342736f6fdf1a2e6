/* logout.h - signing out: the local tokens deleted, and revoked where the server allows.
 *
 * The revocation (RFC 7009) authenticates as the token request did: with the stored client, or
 * with the credentials the configuration holds for a confidential client (a secret, or a
 * private key for private_key_jwt). A failed revocation never keeps the local tokens. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "flow.h"

/* Deletes the local tokens and registration for the target and revokes the tokens where the
 * authorization server has a revocation endpoint. *ret_revoked tells whether it did; when a
 * revocation failed, *ret_warning says why (the local tokens are deleted all the same).
 * -ENOENT when there was nothing to delete. */
int auth_logout(const struct auth_target *t, int64_t http_timeout_ms, bool *ret_revoked,
                struct err *ret_warning, struct err *e) _must_check_;
