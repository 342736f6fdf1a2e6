/* fuzz_mcp_config.c - libFuzzer target: the MCP configuration loader over every layer and
 * import (common/mcp_config.c, mcp_import.c, mcp_entry.c, mcp_toml.c, mcp_template.c).
 *
 * Input: up to twelve files separated by NUL bytes (a JSON or TOML text has none), written to a
 * private home and project directory before each load, in this order: the user layers
 * (~/.config/mcp/mcp.json, ~/.pi/agent/mcp.json), the project layers (.mcp.json, .pi/mcp.json),
 * then the files of the imports (~/.cursor/mcp.json, .cursor/mcp.json, ~/.claude/mcp.json,
 * ~/.claude.json, ~/.config/Claude/claude_desktop_config.json, .vscode/mcp.json,
 * ~/.codeium/windsurf/mcp_config.json, ~/.codex/config.toml); a file the input does not reach is
 * absent. ${VAR} references resolve through a lookup that knows a few names.
 *
 * The load never fails but for memory; every entry has a name, a source and a layer, is found
 * again by its name, comes in name order, and is either valid or says why not; every diagnostic
 * names a file and says something. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/mcp_config.h"

#include "fuzz.h"

static const char *const files[] = {
    "home/.config/mcp/mcp.json",
    "home/.pi/agent/mcp.json",
    "proj/.mcp.json",
    "proj/.pi/mcp.json",
    "home/.cursor/mcp.json",
    "proj/.cursor/mcp.json",
    "home/.claude/mcp.json",
    "home/.claude.json",
    "home/.config/Claude/claude_desktop_config.json",
    "proj/.vscode/mcp.json",
    "home/.codeium/windsurf/mcp_config.json",
    "home/.codex/config.toml",
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static char root[256];
static char proj[300];

static void mkdirs(const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        (void)mkdir(path, 0700);
        *p = '/';
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    snprintf(root, sizeof(root), "%s", fuzz_tmpdir("fuzz_mcp_config"));
    for (size_t i = 0; i < NFILES; i++)
        mkdirs(files[i]);
    char home[300];
    snprintf(home, sizeof(home), "%s/home", root);
    snprintf(proj, sizeof(proj), "%s/proj", root);
    setenv("HOME", home, 1);
    unsetenv("XDG_CONFIG_HOME");
    unsetenv("PI_CODING_AGENT_DIR");
    return 0;
}

static void put_file(const char *rel, const char *text, size_t len, bool present)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    if (!present) {
        (void)unlink(path);
        return;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    fuzz_check(fd >= 0);
    fuzz_check(write(fd, text, len) == (ssize_t)len);
    fuzz_check(close(fd) == 0);
}

static int lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    (void)userdata;
    if (strcmp(name, "API_KEY") == 0 || strcmp(name, "env:API_KEY") == 0 ||
        strcmp(name, "input:api-key") == 0 || strcmp(name, "GITHUB_TOKEN") == 0) {
        *ret = strdup("k-1234");
        return *ret ? 0 : -ENOMEM;
    }
    if (strcmp(name, "HOST") == 0) {
        *ret = strdup("mcp.example.com");
        return *ret ? 0 : -ENOMEM;
    }
    return -ENOENT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    for (size_t i = 0; i < NFILES; i++) {
        bool present = p <= end && size > 0;
        const char *z = present ? memchr(p, 0, (size_t)(end - p)) : NULL;
        size_t n = present ? (z ? (size_t)(z - p) : (size_t)(end - p)) : 0;
        put_file(files[i], p, n, present);
        p += n + 1;
    }

    for (int defer = 0; defer < 2; defer++) {
        struct mcp_config_opts opts = {.cwd = proj, .lookup = lookup, .defer_vars = defer != 0};
        struct mcp_config *c = NULL;
        struct err e = ERR_INIT;
        int r = mcp_config_load(&opts, &c, &e);
        if (r < 0) {
            fuzz_check(r == -ENOMEM);
            return 0;
        }
        const char *last = NULL;
        for (size_t i = 0; i < mcp_config_count(c); i++) {
            const struct mcp_server *s = mcp_config_at(c, i);
            fuzz_check(s && s->name && s->source);
            fuzz_check(mcp_config_find(c, s->name) == s);
            fuzz_check(!last || strcmp(last, s->name) < 0);
            fuzz_check(s->shadowed && s->warnings);
            fuzz_check(!s->error || s->error[0]);
            last = s->name;
        }
        for (size_t i = 0; i < mcp_config_diag_count(c); i++) {
            const struct mcp_config_diag *d = mcp_config_diag_at(c, i);
            fuzz_check(d && d->source && d->message && d->message[0]);
        }
        fuzz_check(mcp_config_settings(c) != NULL);
        for (size_t i = 0; i < mcp_config_file_count(c); i++) {
            bool exists;
            fuzz_check(mcp_config_file_at(c, i, &exists) != NULL);
        }
        for (size_t i = 0; i < mcp_config_import_file_count(c); i++) {
            bool exists;
            const char *imp = NULL;
            fuzz_check(mcp_config_import_file_at(c, i, &imp, &exists) != NULL && imp);
        }
        mcp_config_free(c);
    }
    return 0;
}
