/* cmd_add_names.c - the names mcp-bridge add accepts and suggests */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "credkit/macro.h"
#include "credkit/util.h"

#include "cli/cmd_add_names.h"

bool add_name_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= ADD_NAME_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

const char add_name_rule[] =
    "use letters, digits, '-', '_' or '.', at most 64 characters (it becomes part of tool names)";

/* Lowercase [a-z0-9_-] of s[0..n), other runs of characters as one '-', none at either end. */
static void sanitize_name(const char *s, size_t n, char out[ADD_SUGGEST_MAX])
{
    size_t o = 0;
    bool dash = false;
    for (size_t i = 0; i < n && o < ADD_SUGGEST_MAX - 1; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) && c < 0x80) {
            if (dash && o > 0 && o < ADD_SUGGEST_MAX - 2)
                out[o++] = '-';
            dash = false;
            out[o++] = (char)tolower(c);
        } else if (c == '_' && o > 0) {
            out[o++] = '_';
            dash = false;
        } else {
            dash = true;
        }
    }
    while (o > 0 && (out[o - 1] == '-' || out[o - 1] == '_'))
        o--;
    out[o] = 0;
}

static bool is_generic_label(const char *s, size_t n)
{
    static const char *const generic[] = {"mcp",    "api",     "www", "server", "servers",
                                          "remote", "gateway", "app", "sse",    NULL};
    for (size_t i = 0; generic[i]; i++)
        if (strlen(generic[i]) == n && strncasecmp(s, generic[i], n) == 0)
            return true;
    return false;
}

/* A name from a URL's host: its first label that says something (mcp.github.com -> github,
 * api.example.com -> example), the top-level domain aside. */
void add_name_from_url(const char *url, char out[ADD_SUGGEST_MAX])
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t n = strcspn(h, "/?#");
    const char *at = memchr(h, '@', n);
    if (at) {
        n -= (size_t)(at + 1 - h);
        h = at + 1;
    }
    out[0] = 0;
    if (n > 0 && h[0] == '[') {
        snprintf(out, ADD_SUGGEST_MAX, "%s", strncmp(h, "[::1]", 5) == 0 ? "local" : "server");
        return;
    }
    const char *colon = memchr(h, ':', n);
    if (colon)
        n = (size_t)(colon - h);
    if (n > 0 && strspn(h, "0123456789.") >= n) {
        snprintf(out, ADD_SUGGEST_MAX, "%s", strncmp(h, "127.", 4) == 0 ? "local" : "server");
        return;
    }
    /* labels, the last one (the top-level domain) dropped when there are several */
    const char *labels[32];
    size_t lens[32], k = 0;
    for (const char *p = h; p < h + n && k < ELEMENTSOF(labels);) {
        const char *dot = memchr(p, '.', (size_t)(h + n - p));
        size_t len = dot ? (size_t)(dot - p) : (size_t)(h + n - p);
        if (len > 0) {
            labels[k] = p;
            lens[k++] = len;
        }
        p += len + 1;
    }
    size_t usable = k > 1 ? k - 1 : k;
    for (size_t i = 0; i < usable && !out[0]; i++)
        if (!is_generic_label(labels[i], lens[i]))
            sanitize_name(labels[i], lens[i], out);
    if (!out[0] && usable > 0)
        sanitize_name(labels[0], lens[0], out);
}

static bool str_in(const char *s, const char *const *set)
{
    for (size_t i = 0; set[i]; i++)
        if (strcmp(s, set[i]) == 0)
            return true;
    return false;
}

/* A name from a command line: the program, or for a runner (npx, uvx, docker ...) the package
 * or image it runs, without scope, version, extension and "mcp-server-"-like decoration:
 * npx -y @modelcontextprotocol/server-everything -> everything. */
void add_name_from_command(const char *cmd, char *const *args, char out[ADD_SUGGEST_MAX])
{
    static const char *const runners[] = {"npx",    "bunx", "pnpx", "uvx",    "pipx",    "node",
                                          "nodejs", "deno", "bun",  "python", "python3", "uv",
                                          "npm",    "pnpm", "yarn", "docker", "podman",  "java",
                                          "ruby",   "go",   NULL};
    static const char *const verbs[] = {"run", "exec", "dlx", "x", "tool", "start", NULL};
    static const char *const exts[] = {".js", ".mjs", ".cjs", ".ts", ".py", ".jar", ".rb", NULL};
    static const char *const prefixes[] = {"mcp-server-", "server-", "mcp-", NULL};
    static const char *const suffixes[] = {"-mcp-server", "-server-mcp", "-mcp",
                                           "-server",     "_mcp",        NULL};
    const char *base = strrchr(cmd, '/');
    const char *word = base ? base + 1 : cmd;

    if (str_in(word, runners)) {
        bool last = strcmp(word, "docker") == 0 || strcmp(word, "podman") == 0;
        for (size_t i = 0; args && args[i]; i++) {
            if (args[i][0] == '-' || str_in(args[i], verbs) || !args[i][0])
                continue;
            word = args[i];
            if (!last)
                break;
        }
    }
    /* @scope/pkg@1.2, ghcr.io/org/image:tag, ./dist/server.js */
    if (word[0] == '@' && strchr(word, '/'))
        word = strchr(word, '/') + 1;
    const char *slash = strrchr(word, '/');
    if (slash && slash[1])
        word = slash + 1;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", word);
    buf[strcspn(buf, "@:")] = 0;
    for (size_t i = 0; exts[i]; i++) {
        size_t n = strlen(buf), m = strlen(exts[i]);
        if (n > m && strcasecmp(buf + n - m, exts[i]) == 0)
            buf[n - m] = 0;
    }
    sanitize_name(buf, strlen(buf), out);
    for (size_t i = 0; prefixes[i]; i++) {
        size_t m = strlen(prefixes[i]);
        if (strncmp(out, prefixes[i], m) == 0 && out[m]) {
            memmove(out, out + m, strlen(out + m) + 1);
            break;
        }
    }
    for (size_t i = 0; suffixes[i]; i++) {
        size_t n = strlen(out), m = strlen(suffixes[i]);
        if (n > m && strcmp(out + n - m, suffixes[i]) == 0) {
            out[n - m] = 0;
            break;
        }
    }
}

/* Default variable name for a bearer token: GITHUB_TOKEN for "github". */
void add_name_token_env(const char *name, char *out, size_t size)
{
    size_t o = 0;
    for (const char *p = name; *p && o + 7 < size; p++)
        out[o++] = isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_';
    snprintf(out + o, size - o, "_TOKEN");
    if (!name_is_valid(out))
        snprintf(out, size, "MCP_TOKEN");
}
