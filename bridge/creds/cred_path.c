/* cred_path.c - finding `secrets` and `mcp-auth` (cred_path.h). */
#include <errno.h>
#include <stdlib.h>

#include "credkit/path.h"

#include "creds/cred_path.h"

const char *helper_kind_program(enum helper_kind kind)
{
    return kind == HELPER_SECRETS ? "secrets" : "mcp-auth";
}

const char *helper_kind_env(enum helper_kind kind)
{
    return kind == HELPER_SECRETS ? "CREDKIT_SECRETS" : "CREDKIT_MCP_AUTH";
}

/* The folder in the build tree that holds the helper's executable. */
static const char *build_folder(enum helper_kind kind)
{
    return kind == HELPER_SECRETS ? "secrets" : "auth";
}

int cred_path_find(enum helper_kind kind, char **ret, struct err *e)
{
    const char *named = getenv(helper_kind_env(kind));
    int r = path_find_helper(helper_kind_program(kind), helper_kind_env(kind), build_folder(kind),
                             ret, e);
    /* the bridge's own words when nothing named it */
    if (r == -ENOENT && (!named || !*named))
        return err_set(
            e, -ENOENT,
            "'%s' is not installed: install it next to mcp-bridge or on PATH, or name it "
            "with %s",
            helper_kind_program(kind), helper_kind_env(kind));
    return r;
}
