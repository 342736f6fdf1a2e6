/* path.c - where things live */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/path.h"

/* Length of s without trailing slashes, but never less than 1 for a non-empty s ("/" stays). */
static size_t len_without_trailing_slashes(const char *s)
{
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/')
        n--;
    return n;
}

static char *strndup_or_null(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

int path_home(char **ret)
{
    const char *h = getenv("HOME");
    if (h && h[0] == '/') {
        char *p = strndup_or_null(h, len_without_trailing_slashes(h));
        if (!p)
            return -ENOMEM;
        *ret = p;
        return 0;
    }

    /* $HOME is unset or unusable (relative, empty): ask the passwd database */
    long sz = sysconf(_SC_GETPW_R_SIZE_MAX);
    size_t bufsz = sz > 0 ? (size_t)sz : 1024;
    char *buf = NULL, *home = NULL;
    int r;
    for (;;) {
        struct passwd pw, *res = NULL;
        char *nb = realloc(buf, bufsz);
        if (!nb) {
            r = -ENOMEM;
            goto out;
        }
        buf = nb;
        int k = getpwuid_r(geteuid(), &pw, buf, bufsz, &res);
        if (k == ERANGE && bufsz < 1024 * 1024) {
            bufsz *= 2;
            continue;
        }
        if (k != 0) {
            r = -k;
            goto out;
        }
        if (!res || !res->pw_dir || res->pw_dir[0] != '/') {
            r = -ENOENT;
            goto out;
        }
        home = strndup_or_null(res->pw_dir, len_without_trailing_slashes(res->pw_dir));
        if (!home) {
            r = -ENOMEM;
            goto out;
        }
        break;
    }
    *ret = home;
    r = 0;
out:
    free(buf);
    return r;
}

char *path_join(const char *a, const char *b)
{
    size_t la = strlen(a);
    while (la > 0 && a[la - 1] == '/')
        la--;
    bool a_is_root = la == 0 && a[0] == '/';
    while (*b == '/')
        b++;
    size_t lb = strlen(b);

    if (la == 0 && !a_is_root)
        return strdup(b);
    if (lb == 0)
        return a_is_root ? strdup("/") : strndup_or_null(a, la);

    char *p = malloc(la + 1 + lb + 1);
    if (!p)
        return NULL;
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
    return p;
}

char *path_display(const char *path)
{
    const char *h = getenv("HOME");
    if (h && h[0] == '/') {
        size_t n = len_without_trailing_slashes(h);
        /* HOME=/ would turn every absolute path into "~/...", which helps nobody */
        if (!(n == 1 && h[0] == '/') && strncmp(path, h, n) == 0) {
            if (path[n] == 0)
                return strdup("~");
            if (path[n] == '/') {
                size_t rest = strlen(path + n);
                char *p = malloc(1 + rest + 1);
                if (!p)
                    return NULL;
                p[0] = '~';
                memcpy(p + 1, path + n, rest + 1);
                return p;
            }
        }
    }
    return strdup(path);
}

char *path_dirname(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    while (n > 0 && path[n - 1] != '/')
        n--;
    if (n == 0)
        return strdup(".");
    while (n > 1 && path[n - 1] == '/')
        n--;
    return strndup_or_null(path, n);
}

int path_agent_dir(char **ret, struct err *e)
{
    const char *env = getenv("PI_CODING_AGENT_DIR");
    char *home = NULL, *cwd = NULL, *dir = NULL;
    int r;

    if (env && *env) {
        if (env[0] == '/') {
            dir = strndup_or_null(env, len_without_trailing_slashes(env));
        } else if (strcmp(env, "~") == 0 || strncmp(env, "~/", 2) == 0) {
            /* pi expands a leading "~" itself (expandTildePath), so a quoted "~/x" means the
             * same directory to both */
            r = path_home(&home);
            if (r < 0) {
                r = err_set(e, -ENOENT,
                            "PI_CODING_AGENT_DIR starts with '~' but the home directory is "
                            "unknown: set HOME or use an absolute path");
                goto out;
            }
            dir = path_join(home, env + 1);
        } else {
            cwd = getcwd(NULL, 0);
            if (!cwd) {
                r = err_set(e, negerr_or(errno, -EIO),
                            "cannot resolve PI_CODING_AGENT_DIR '%s' against the current "
                            "directory: %s",
                            env, strerror(errno));
                goto out;
            }
            dir = path_join(cwd, env);
        }
    } else {
        r = path_home(&home);
        if (r < 0) {
            r = err_set(e, -ENOENT,
                        "cannot find the home directory: set HOME or PI_CODING_AGENT_DIR");
            goto out;
        }
        dir = path_join(home, ".pi/agent");
    }
    if (!dir) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    *ret = dir;
    dir = NULL;
    r = 0;
out:
    free(home);
    free(cwd);
    free(dir);
    return r;
}

int path_agent_file(const char *name, char **ret, struct err *e)
{
    char *dir = NULL, *p = NULL;
    int r = path_agent_dir(&dir, e);
    if (r < 0)
        goto out;
    p = path_join(dir, name);
    if (!p) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    *ret = p;
    p = NULL;
    r = 0;
out:
    free(dir);
    return r;
}

/* Whether path (relative ones taken from cwd, when given) is an executable regular file. */
static int is_program(const char *path, const char *cwd)
{
    char *full = NULL;
    struct stat st;
    bool yes;
    if (cwd && path[0] != '/') {
        full = path_join(cwd, path);
        if (!full)
            return -ENOMEM;
    }
    yes = stat(full ? full : path, &st) == 0 && S_ISREG(st.st_mode) &&
          access(full ? full : path, X_OK) == 0;
    free(full);
    return yes;
}

int path_find_program(const char *prog, const char *cwd, char **ret)
{
    const char *p = getenv("PATH");
    int r;
    if (!*prog)
        return -ENOENT;
    if (strchr(prog, '/')) {
        r = is_program(prog, cwd);
        if (r <= 0)
            return r < 0 ? r : -ENOENT;
        *ret = strdup(prog);
        return *ret ? 0 : -ENOMEM;
    }
    if (!p)
        p = "/bin:/usr/bin"; /* what glibc's execvp() searches without PATH */
    for (;;) {
        size_t n = strcspn(p, ":");
        char *full = NULL;
        if (asprintf(&full, "%.*s/%s", (int)(n ? n : 1), n ? p : ".", prog) < 0)
            return -ENOMEM;
        r = is_program(full, cwd);
        if (r > 0) {
            *ret = full;
            return 0;
        }
        free(full);
        if (r < 0)
            return r;
        if (!p[n])
            return -ENOENT;
        p += n + 1;
    }
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

/* Not path_find_program(), which searches as execvp() does: there an empty element of PATH is
 * the working directory and an unset PATH is /bin:/usr/bin. The helpers that receive secrets
 * are looked for only in the directories PATH names, never in the directory the program
 * happens to be started in. */
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
            memcpy(full, p, n);
            full[n] = '/';
            memcpy(full + n + 1, prog, strlen(prog) + 1);
            int r = take_if_executable(full, ret);
            if (r != 0)
                return r;
        }
        if (!colon)
            return 0;
        p = colon + 1;
    }
}

int path_find_helper(const char *prog, const char *var, const char *build_folder, char **ret,
                     struct err *e)
{
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
            snprintf(full, sizeof(full), "%s/../%s/%s", dir, build_folder, prog);
            r = take_if_executable(full, ret);
        }
        if (r != 0)
            return r < 0 ? err_set(e, r, "out of memory") : 0;
    }
    r = find_on_path(prog, ret);
    if (r != 0)
        return r < 0 ? err_set(e, r, "out of memory") : 0;
    return err_set(e, -ENOENT,
                   "'%s' is not installed: install it next to this program or on "
                   "PATH, or name it with %s",
                   prog, var);
}
