/* cred_path.c - finding `secrets` and `mcp-auth` (cred_path.h). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static bool is_executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static int take_if_executable(const char *path, char **ret)
{
    if (!is_executable(path))
        return 0;
    *ret = strdup(path);
    return *ret ? 1 : -ENOMEM;
}

/* Our own executable's folder into dir (without the trailing slash); false when unknown. */
static bool own_folder(char *dir, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", dir, size - 1);
    if (n <= 0 || (size_t)n >= size - 1)
        return false;
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash)
        return false;
    *slash = '\0';
    return true;
}

/* Not path_find_program() (credkit/path.h), which searches as execvp() does: there an empty
 * element of PATH is the working directory and an unset PATH is /bin:/usr/bin. The helpers that
 * receive secrets are looked for only in the directories PATH names, never in the directory the
 * bridge happens to be started in. */
static int find_on_path(const char *prog, char **ret)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        return 0;
    const char *p = path;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        char full[PATH_MAX];
        if (n > 0 && n + 1 + strlen(prog) < sizeof(full)) {
            snprintf(full, sizeof(full), "%.*s/%s", (int)n, p, prog);
            int r = take_if_executable(full, ret);
            if (r != 0)
                return r;
        }
        if (!colon)
            return 0;
        p = colon + 1;
    }
}

int cred_path_find(enum helper_kind kind, char **ret, struct err *e)
{
    const char *prog = helper_kind_program(kind);
    const char *var = helper_kind_env(kind);
    const char *named = getenv(var);
    char dir[PATH_MAX], full[PATH_MAX + 64];
    int r;

    if (named && *named) {
        r = take_if_executable(named, ret);
        if (r == 0)
            return err_set(e, -ENOENT,
                           "%s names '%s', which is not an executable file: fix or unset it", var,
                           named);
        return r < 0 ? err_set(e, r, "out of memory") : 0;
    }
    if (own_folder(dir, sizeof(dir))) {
        snprintf(full, sizeof(full), "%s/%s", dir, prog);
        r = take_if_executable(full, ret);
        if (r == 0) {
            snprintf(full, sizeof(full), "%s/../%s/%s", dir, build_folder(kind), prog);
            r = take_if_executable(full, ret);
        }
        if (r != 0)
            return r < 0 ? err_set(e, r, "out of memory") : 0;
    }
    r = find_on_path(prog, ret);
    if (r != 0)
        return r < 0 ? err_set(e, r, "out of memory") : 0;
    return err_set(e, -ENOENT,
                   "'%s' is not installed: install it next to mcp-bridge or on PATH, or name it "
                   "with %s",
                   prog, var);
}
