/* cred_path.h - where the bridge finds the helpers it asks for credentials: `secrets` and
 * `mcp-auth`.
 *
 * In order, the first that is an executable file wins:
 *   1. the environment variable that names it explicitly: CREDKIT_SECRETS, CREDKIT_MCP_AUTH
 *      (when set, it must name one: nothing else is tried);
 *   2. the program of that name next to the bridge's own executable (an installed suite);
 *   3. the build tree's layout: <bridge's folder>/../secrets/secrets, ../auth/mcp-auth;
 *   4. the first on PATH.
 * A helper that is found nowhere is a clear error naming what to install. */
#pragma once

#include "credkit/err.h"
#include "credkit/macro.h"

enum helper_kind {
    HELPER_SECRETS,
    HELPER_MCP_AUTH,
};

/* "secrets", "mcp-auth". Static. */
const char *helper_kind_program(enum helper_kind kind);
/* "CREDKIT_SECRETS", "CREDKIT_MCP_AUTH". Static. */
const char *helper_kind_env(enum helper_kind kind);

/* The absolute (or PATH-found) path of the helper, as above. Caller frees *ret. -ENOENT with
 * e saying what to install or set, -ENOMEM. */
int cred_path_find(enum helper_kind kind, char **ret, struct err *e) _must_check_;
