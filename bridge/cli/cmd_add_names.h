/* cmd_add_names.h - the names mcp-bridge add accepts and suggests.
 *
 * A server's name becomes part of its tools' names, so it is short and plain. When the user
 * gives none, one is suggested from the URL's host (mcp.github.com -> github) or from the
 * command line (npx -y @modelcontextprotocol/server-everything -> everything); the variable for
 * a bearer token is named after the server (GITHUB_TOKEN). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define ADD_NAME_MAX    64 /* tool names are at most 64 characters: leave room for them */
#define ADD_SUGGEST_MAX (ADD_NAME_MAX + 1)

/* What a name may be, in words for a message. */
extern const char add_name_rule[];

/* Whether s is a usable server name: 1-64 of letters, digits, '-', '_' and '.'. */
bool add_name_ok(const char *s);

/* A name from a URL's host: its first label that says something, the top-level domain aside;
 * "local" or "server" for addresses. out is "" when nothing fits. */
void add_name_from_url(const char *url, char out[ADD_SUGGEST_MAX]);

/* A name from a command line: the program, or for a runner (npx, uvx, docker ...) the package
 * or image it runs, without scope, version, extension and "mcp-server-"-like decoration. args
 * is NULL-terminated (or NULL). */
void add_name_from_command(const char *cmd, char *const *args, char out[ADD_SUGGEST_MAX]);

/* The default variable for a bearer token: GITHUB_TOKEN for "github", else MCP_TOKEN. */
void add_name_token_env(const char *name, char *out, size_t size);
