/* mcp_config.h - the layered MCP server configuration (mcp.json files).
 *
 * Layers, lowest to highest priority:
 *   1. bundled               (opts.bundled_path; ships empty)
 *   2. ~/.config/mcp/mcp.json  (shared with other MCP clients; $XDG_CONFIG_HOME honoured)
 *   3. ~/.pi/agent/mcp.json    (PI_CODING_AGENT_DIR honoured), or opts.config_path instead
 *   4. .mcp.json               in opts.cwd (project)
 *   5. .pi/mcp.json            in opts.cwd (project)
 * A higher layer replaces a whole entry of the same name. Each file's servers live under
 * "mcpServers" (pi, Claude Code, Cursor) or "servers" (the older pi bridge format); both are
 * read, "mcpServers" winning within one file. "settings" keys merge key by key, higher wins.
 *
 * Validation is per entry: an invalid entry is kept with its reason (so `mcp-bridge list` can
 * show it) and every other entry still works. A file that is not JSON is reported with line and
 * column and skipped as a whole layer; a missing file is simply absent. Unknown keys are ignored
 * (kept in `raw`); a key whose value is null counts as absent.
 *
 * ${VAR} references in "url", "headers" values and "env" values are kept as written in the
 * entry (templates) and expanded with mcp_expand() through a lookup callback: the process
 * environment by default, `secrets` later. Expansion happens at load time once, to validate (a
 * URL is checked after substitution) and to list missing variables; a consumer expands again
 * whenever it connects, so values that change (rotated tokens) are picked up. A missing
 * variable fails that entry with a message naming it: never an empty header. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"

enum mcp_transport {
    MCP_TRANSPORT_STDIO,
    MCP_TRANSPORT_HTTP, /* Streamable HTTP (falls back to legacy SSE on its own) */
    MCP_TRANSPORT_SSE,  /* "type": "sse": the 2024-11-05 HTTP+SSE transport */
};

/* The transport's name as "type" spells it in an entry: "stdio", "http", "sse". */
const char *mcp_transport_name(enum mcp_transport t);

enum mcp_auth_mode {
    MCP_AUTH_NONE,   /* nothing configured */
    MCP_AUTH_OAUTH,  /* "auth": "oauth", or an "oauth" object */
    MCP_AUTH_BEARER, /* "auth": "bearer" with "bearerTokenEnv" */
};

enum mcp_tool_prefix {
    MCP_TOOL_PREFIX_SERVER, /* mcp_<server>_<tool> (default) */
    MCP_TOOL_PREFIX_SHORT,  /* <server>_<tool> */
    MCP_TOOL_PREFIX_NONE,   /* <tool> */
};

enum mcp_layer {
    MCP_LAYER_BUNDLED,
    MCP_LAYER_SHARED,  /* ~/.config/mcp/mcp.json */
    MCP_LAYER_USER,    /* ~/.pi/agent/mcp.json or --config */
    MCP_LAYER_PROJECT, /* .mcp.json, .pi/mcp.json */
};

/* The "oauth" object of an entry. Strings NULL when absent. */
struct mcp_oauth {
    char *client_id;
    char *client_secret;       /* a template: may be "${VAR}" */
    char *client_metadata_url; /* Client ID Metadata Document URL */
    char *scope;               /* space-separated scopes to request */
    char *redirect_uri;        /* fixes the loopback redirect (pre-registered clients) */
    char *grant;               /* "authorization_code" (default), "client_credentials", or
                                  "jwt-bearer" (enterprise cross-app access, with idp below) */
    char *private_key_file;    /* PEM key for private_key_jwt (client_credentials) */
    char *private_key_alg;     /* "ES256" or "RS256"; NULL: from the key type */
    bool refresh_sends_scope;  /* quirk: send scope on refresh requests ("refreshScope": true) */
    bool omit_resource;        /* quirk: never send the RFC 8707 resource ("sendResource": false) */
    /* "idp": the enterprise identity provider for grant "jwt-bearer" (cross-app access): its ID
     * token is exchanged there (RFC 8693) for an identity assertion grant (ID-JAG), which the
     * MCP server's authorization server takes as a JWT bearer grant (RFC 7523) */
    char *idp_issuer;
    char *idp_token_endpoint;
    char *idp_client_id;
    char *idp_client_secret; /* template */
    char *idp_id_token;      /* template: "${VAR}" naming where the ID token is */
};

struct mcp_server {
    char *name;
    char *source; /* display path of the file that defined it */
    enum mcp_layer layer;
    enum mcp_transport transport;
    /* stdio. The four vectors below are NULL-terminated and never NULL (empty when absent). */
    char *command;
    char **args;
    char **env; /* "NAME=template" */
    char *cwd;
    /* http, sse */
    char *url;          /* template, as written */
    char **headers;     /* "Name: template" (exactly one space after the colon) */
    int64_t timeout_ms; /* 0: the consumer's default */
    /* credentials and lifecycle. An explicit "auth" wins; without it an "oauth" object means
     * OAUTH, else "bearerTokenEnv" means BEARER. */
    enum mcp_auth_mode auth;
    struct mcp_oauth oauth;
    char *bearer_token_env;
    char *headers_helper;    /* command whose answer gives headers */
    char *lifecycle;         /* "lazy", "eager", "keep-alive" ... as written; NULL */
    int64_t idle_timeout_ms; /* 0: none */
    char **exclude_tools;
    struct json_object *raw; /* the entry as written (owned reference) */
    /* validation. Fields parsed before the first problem are filled in, the rest are not. */
    char *error;         /* NULL when valid; else why the entry cannot be used:
                                * "'<file>': server '<name>': <reason>", never a value */
    char **missing_vars; /* NULL-terminated names of unset ${VAR}s, deduplicated, in order of
                                * appearance; NULL when none (and when the entry failed before
                                * expansion) */
};

/* Looks a variable up: 0 and *ret (caller frees with secure_free), -ENOENT when unset, other
 * negative errno (with e) when the lookup itself failed. */
typedef int (*mcp_lookup_fn)(void *userdata, const char *name, char **ret, struct err *e);

struct mcp_config_opts {
    const char *config_path;  /* replaces ~/.pi/agent/mcp.json (--config); NULL: default */
    const char *cwd;          /* for the project layers; NULL: no project layers */
    const char *bundled_path; /* NULL: no bundled layer */
    mcp_lookup_fn lookup;     /* NULL: the process environment */
    void *lookup_userdata;
};

/* A problem with a whole file (not JSON, root not an object, unreadable). */
struct mcp_config_diag {
    char *source; /* display path */
    char *message;
};

struct mcp_config;

/* Loads every layer (opts NULL: no bundled, no project layers, the environment). Fails only on
 * ENOMEM or an unusable opts.config_path (given explicitly and missing: -ENOENT with a message);
 * everything else becomes a per-file diagnostic or a per-entry error. An invalid
 * settings.toolPrefix is a diagnostic and does not override lower layers. Only the winning entry
 * of each name is validated and expanded (lookup is never called for a replaced one). Caller
 * frees with mcp_config_free(). */
int mcp_config_load(const struct mcp_config_opts *opts, struct mcp_config **ret,
                    struct err *e) _must_check_;
void mcp_config_free(struct mcp_config *c);

/* Loads one configuration held in memory instead of the layers: root has the shape of an
 * mcp.json file ("mcpServers"/"servers", "settings") and is validated and expanded exactly like
 * one (through opts->lookup; the paths of opts are not used). source names it in messages (e.g.
 * "command line"). A root, or a servers key, that is not an object is a diagnostic, as for a
 * file. Lists no files. Fails only on ENOMEM or a NULL argument (-EINVAL). root is borrowed.
 * Caller frees with mcp_config_free(). */
int mcp_config_load_object(struct json_object *root, const char *source,
                           const struct mcp_config_opts *opts, struct mcp_config **ret,
                           struct err *e) _must_check_;

/* Copies s deeply into *ret (raw is shared: a new reference is taken), so that it outlives the
 * configuration it came from. A NULL vector among args, env, headers and exclude_tools becomes
 * an empty one in the copy (an entry built by hand). -EINVAL for a NULL argument, -ENOMEM.
 * Caller frees with mcp_server_free(). */
int mcp_server_dup(const struct mcp_server *s, struct mcp_server **ret) _must_check_;

/* Frees s and all it owns, wiping what may hold secrets (url, headers, env, client secrets).
 * NULL is fine. Only for a server from mcp_server_dup(): an entry of a configuration is
 * borrowed and goes with mcp_config_free(). */
void mcp_server_free(struct mcp_server *s);

/* Entries after layering, sorted by name. Borrowed. */
size_t mcp_config_count(const struct mcp_config *c);
const struct mcp_server *mcp_config_at(const struct mcp_config *c, size_t i);
const struct mcp_server *mcp_config_find(const struct mcp_config *c, const char *name);

enum mcp_tool_prefix mcp_config_tool_prefix(const struct mcp_config *c);

size_t mcp_config_diag_count(const struct mcp_config *c);
const struct mcp_config_diag *mcp_config_diag_at(const struct mcp_config *c, size_t i);

/* The files that were considered, in layer order, whether they existed or not (for
 * `mcp-bridge list` and `add`). Borrowed absolute paths. */
size_t mcp_config_file_count(const struct mcp_config *c);
const char *mcp_config_file_at(const struct mcp_config *c, size_t i, bool *ret_exists);

/* Expands ${VAR} references in tmpl ("$$" is a literal "$"; "${" without "}" is an error).
 * -ENOENT with a message naming the first missing variable. The result may hold secrets:
 * caller frees with secure_free(). */
int mcp_expand(const char *tmpl, mcp_lookup_fn lookup, void *userdata, char **ret,
               struct err *e) _must_check_;

/* Calls fn for each variable name referenced in tmpl, in order (repeats included), stopping
 * silently at a syntax error (mcp_expand() reports it). */
void mcp_template_vars(const char *tmpl, void (*fn)(const char *name, void *userdata),
                       void *userdata);
