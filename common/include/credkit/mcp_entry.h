/* mcp_entry.h - one server entry of the MCP configuration, as every tool reads it.
 *
 * The generic entry: its name and where it came from, the transport and how to reach the server
 * (command, args, env and cwd for stdio; url and headers for HTTP), the timeout, and the
 * credential mode that both mcp-auth and the bridge read (auth, bearerTokenEnv, headersHelper).
 * Everything else an entry holds is a tool's own business: it stays in `raw`, which a tool parses
 * with the readers of credkit/mcp_field.h (the bridge's "excludeTools", "lifecycle",
 * "idleTimeout") and checks while the configuration loads (mcp_config_opts.check_entry).
 *
 * Values that may hold secrets (url, headers, env values, client secrets) are templates, kept as
 * written (credkit/mcp_template.h), and wiped when the entry is freed. Entries are built by the
 * loader (credkit/mcp_config.h), which validates them: an invalid entry is kept with its reason
 * so that `mcp-bridge list` can show it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/macro.h"
#include "credkit/mcp_template.h"

enum mcp_transport {
    MCP_TRANSPORT_STDIO,
    MCP_TRANSPORT_HTTP, /* Streamable HTTP (falls back to legacy SSE on its own) */
    MCP_TRANSPORT_SSE,  /* "type": "sse": the 2024-11-05 HTTP+SSE transport */
};

/* The transport's name as "type" spells it in an entry: "stdio", "http", "sse". Static. */
const char *mcp_transport_name(enum mcp_transport t);

/* "protocolVersion": which era of MCP to speak to the server (the bridge's upstream). */
enum mcp_protocol_mode {
    MCP_PROTOCOL_AUTO,   /* absent or "auto": probe with server/discover, else initialize */
    MCP_PROTOCOL_LEGACY, /* "legacy": the initialize handshake only (2024-11-05 .. 2025-11-25) */
    MCP_PROTOCOL_MODERN, /* "2026-07-28": no initialize; a server that is not modern fails */
};

enum mcp_auth_mode {
    MCP_AUTH_NONE,     /* nothing configured */
    MCP_AUTH_OAUTH,    /* "auth": "oauth", or an "oauth" object */
    MCP_AUTH_BEARER,   /* "auth": "bearer" with "bearerTokenEnv" or "bearerToken" */
    MCP_AUTH_DISABLED, /* "auth": "none" or false, or "oauth": false: never sign in, not even
                        * after a 401 with a Bearer challenge */
};

enum mcp_layer {
    MCP_LAYER_BUNDLED,
    MCP_LAYER_SHARED,  /* ~/.config/mcp/mcp.json */
    MCP_LAYER_USER,    /* ~/.pi/agent/mcp.json or --config */
    MCP_LAYER_PROJECT, /* .mcp.json, .pi/mcp.json */
};

struct mcp_server {
    char *name;
    char *source; /* display path of the file that defined it */
    enum mcp_layer layer;
    enum mcp_transport transport;
    /* stdio. The three vectors below are NULL-terminated and never NULL (empty when absent). */
    char *command;
    char **args;
    char **env; /* "NAME=template" */
    char *cwd;
    /* http, sse */
    char *url;                       /* template, as written */
    char **headers;                  /* "Name: template" (exactly one space after the colon) */
    int64_t timeout_ms;              /* 0: the consumer's default */
    enum mcp_protocol_mode protocol; /* "protocolVersion" */
    /* credentials. An explicit "auth" wins; without it an "oauth" object means OAUTH, else
     * "bearerTokenEnv" means BEARER. */
    enum mcp_auth_mode auth;
    char *bearer_token_env; /* a ${NAME}: the secret or variable holding the token */
    char *bearer_token;     /* template (a literal token or ${NAME}), as written */
    char *headers_helper;   /* command whose answer gives headers */
    /* "auth": "bearer" with "bearerTokenStore": true and neither bearerToken nor
     * bearerTokenEnv: the token is the one pi-mcp-adapter stored for this server's name, bound
     * to its URL ('pi-mcp-adapter token set NAME'), which `secrets` reads from the keychain. */
    bool bearer_token_store;
    struct json_object *raw; /* the entry as written (owned reference): the tools' own keys */
    /* "disabled": true (Claude Code, Cursor, the pi adapter): the entry is valid and listed, as
     * disabled, but no tool starts it. */
    bool disabled;
    /* "allowHttp": true: credentials (an Authorization header, a helper's or mcp-auth's
     * headers, headers and a url with ${...} values) may go to a plain http:// URL whose host
     * is not loopback. Without it the bridge refuses to connect such an entry with credentials:
     * OAuth 2.1 requires TLS, and anyone on the path reads a plain http request. */
    bool allow_http;
    /* Where it came from beyond source: NULL for a layer's own "mcpServers"/"servers", else the
     * import that brought it ("cursor", "claude-code", ...; credkit/mcp_import.h). */
    char *import;
    /* The entries of the same name this one won over (higher layer, or a layer's own entry over
     * an import), highest first, each as "<display path>" or "<display path> (import <name>)".
     * NULL-terminated; never NULL in an entry of a configuration (empty when none), NULL
     * in one built by hand. */
    char **shadowed;
    /* Problems that did not make the entry invalid: a key no tool knows, a value read with an
     * older meaning ('"idleTimeout" is in minutes: 60000 is 41 days'). Each names the key and
     * says what to do, without file and server (the reader adds them). NULL-terminated, as
     * shadowed. */
    char **warnings;
    /* validation. Fields parsed before the first problem are filled in, the rest are not. */
    char *error;         /* NULL when valid; else why the entry cannot be used:
                          * "'<file>': server '<name>': <reason>", never a value */
    char **missing_vars; /* NULL-terminated names of unset ${VAR}s, deduplicated, in order of
                          * appearance; NULL when none (and when the entry failed before
                          * expansion) */
};

/* Whether the entry's "headers" set the header called name (any case). */
bool mcp_server_sets_header(const struct mcp_server *s, const char *name);

/* Checks a server URL after its ${VAR}s were expanded (had_vars: say so in the message): an
 * http:// or https:// URL with a host and no user name or password. -EINVAL with a message that
 * never quotes the URL (a query may hold a key), -ENOMEM. The loader checks every URL it can;
 * one whose variables were deferred (defer_vars) is checked by the tool that expands it. */
int mcp_server_check_url(const char *url, bool had_vars, struct err *e) _must_check_;

/* The working directory of a stdio entry, its ${VAR}s expanded through lookup (NULL: the
 * environment) as "args" are at each start, then a leading "~" or "~/" made $HOME (as the pi
 * adapter reads it): *ret is NULL when the entry has no "cwd". Errors as mcp_expand(), the
 * message prefixed with "\"cwd\"". Caller frees with secure_free(). */
int mcp_server_expand_cwd(const struct mcp_server *s, mcp_lookup_fn lookup, void *userdata,
                          char **ret, struct err *e) _must_check_;

/* Copies s deeply into *ret (raw is shared: a new reference is taken), so that it outlives the
 * configuration it came from. A NULL vector among args, env and headers becomes an empty one
 * in the copy (an entry built by hand). -EINVAL for a NULL argument, -ENOMEM; *ret untouched
 * on failure. Caller frees with mcp_server_free(). */
int mcp_server_dup(const struct mcp_server *s, struct mcp_server **ret) _must_check_;

/* Frees s and all it owns, wiping what may hold secrets (url, headers, env).
 * NULL is fine. Only for a server from mcp_server_dup(): an entry of a configuration is
 * borrowed and goes with mcp_config_free(). */
void mcp_server_free(struct mcp_server *s);
