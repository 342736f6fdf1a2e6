/* server_config.h - the bridge's own keys of the MCP configuration.
 *
 * common/ reads the layers and the generic entry (credkit/mcp_config.h); the keys only the bridge
 * acts on are read here, from the entry's raw object ("includeTools", "excludeTools",
 * "lifecycle", "idleTimeout", "requestTimeoutMs", "toolPrefix", "autoAuth", "directTools",
 * "exposeResources", "debug", "trace") and from the merged settings ("toolPrefix", "idleTimeout",
 * "requestTimeoutMs", "directTools", "disableProxyTool", "autoAuth", "authRequiredMessage",
 * "sampling", "samplingAutoApprove", "settleTimeout", "trace"), with the meanings of the pi adapter
 * (docs/bridge.md has the table for users, docs/development.md, "Modules in detail", each key's
 * reading). The bridge loads its configuration with server_config_load() or
 * server_config_load_object(), which register the checks below with the loader. One bad value
 * costs one key: a key of an entry or a setting whose value is not of its kind is dropped alone,
 * with a warning naming it, and the rest of the entry or settings object stands (a dropped
 * setting leaves the lower layers' value in force). The adapter's keys and settings the bridge
 * does not act on are accepted with a warning saying what it does instead. Warnings about an
 * entry's keys are in its `warnings`, about settings diagnostics of their file. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"
#include "config/naming.h"

enum server_lifecycle {
    SERVER_LIFECYCLE_LAZY,       /* default: connect on first use, close after idleTimeout */
    SERVER_LIFECYCLE_EAGER,      /* connect at start, close after idleTimeout */
    SERVER_LIFECYCLE_KEEP_ALIVE, /* connect at start, reconnect whenever it drops, never idle */
    SERVER_LIFECYCLE_LAZY_KEEP_ALIVE, /* connect on first use, then as keep-alive */
};

/* "directTools" of an entry */
enum server_direct {
    SERVER_DIRECT_UNSET = -1, /* absent: settings.directTools decides */
    SERVER_DIRECT_NONE = 0,   /* false: only through the proxy tool */
    SERVER_DIRECT_ALL = 1,    /* true: every tool listed directly */
    SERVER_DIRECT_LIST = 2,   /* a list: those tools (raw names) directly */
    SERVER_DIRECT_SEARCH = 3, /* "search": each tool once the proxy tool's search finds it */
};

/* The bridge's keys of one entry. An embeddable value: zero it (SERVER_CONFIG_INIT), fill it
 * with server_config_parse(), free what it holds with server_config_release(). */
struct server_config {
    char **include_tools;                /* "includeTools": NULL when absent (every tool); names
                                      * or globs, raw or exposed (catalog.h matches them) */
    char **exclude_tools;                /* NULL-terminated; never NULL once parsed (empty when
                                      * absent); raw or exposed (prefixed) names, or globs */
    enum server_lifecycle lifecycle;     /* LAZY when absent */
    int64_t idle_timeout_ms;             /* "idleTimeout" (minutes) in ms: -1 absent (the
                                      * settings'), 0 never */
    int auto_auth;                       /* "autoAuth": 1 true, 0 false, -1 absent (settings) */
    enum server_direct direct;           /* "directTools" */
    char **direct_tools;                 /* SERVER_DIRECT_LIST: the names; else NULL */
    int expose_resources;                /* "exposeResources": 1, 0, -1 absent (false) */
    bool debug;                          /* "debug": the server's stderr at the default level */
    int tool_prefix;                     /* "toolPrefix": an enum mcp_tool_prefix, -1 absent */
    int64_t request_timeout_ms;          /* "requestTimeoutMs": -1 absent or <= 0 (the default) */
    struct json_object *search_keywords; /* "searchKeywords": tool name or glob -> keywords (a
                                          * reference); NULL when absent */
    int trace; /* "trace": 1, 0, -1 absent (settings.trace.enabled decides) */
};

#define SERVER_CONFIG_INIT                                                                         \
    {                                                                                              \
        NULL, NULL, SERVER_LIFECYCLE_LAZY, -1, -1, SERVER_DIRECT_UNSET, NULL, -1, false, -1, -1,   \
            NULL, -1                                                                               \
    }

/* The merged "settings" as the bridge reads them, defaults filled in. */
struct server_settings {
    enum mcp_tool_prefix tool_prefix;  /* "toolPrefix"; default MCP_TOOL_PREFIX_MCP */
    int64_t idle_timeout_ms;           /* "idleTimeout" (minutes); default 10 min; 0 never */
    bool direct_tools;                 /* "directTools"; default true (see docs/bridge.md) */
    bool direct_search;                /* "directTools" is "search" (direct_tools false) */
    bool disable_proxy_tool;           /* "disableProxyTool"; default false */
    bool auto_auth;                    /* "autoAuth"; default false */
    const char *auth_required_message; /* borrowed from the configuration; NULL: none */
    bool sampling;                     /* "sampling"; default true */
    bool sampling_auto_approve;        /* "samplingAutoApprove"; default false */
    int64_t settle_timeout_ms;         /* "settleTimeout" (ms); default 1500 */
    int64_t request_timeout_ms;        /* "requestTimeoutMs"; 0 (default): the upstream's */
    bool trace;                        /* "trace.enabled"; default false */
};

/* settings.trace: the protocol trace of the session (core/trace.h), as the adapter reads it. */
struct server_trace_settings {
    bool enabled;       /* "enabled": every server traced unless its entry says "trace": false */
    const char *file;   /* "file": borrowed from the configuration; NULL: the session's own */
    int64_t max_bytes;  /* "maxBytes"; 0: the default */
    int64_t max_events; /* "maxEvents"; 0: the default */
};

#define SERVER_IDLE_TIMEOUT_DEFAULT_MS   (10 * 60 * 1000)
#define SERVER_SETTLE_TIMEOUT_DEFAULT_MS 1500
#define SERVER_SETTLE_TIMEOUT_MAX_MS     60000
#define SERVER_REQUEST_TIMEOUT_MAX_MS    (24LL * 60 * 60 * 1000)

/* The settings of c (NULL: the defaults). Values that failed their check at load time are
 * left at the lower layers' or the default. */
void server_settings_get(const struct mcp_config *c, struct server_settings *ret);

/* settings.trace of c (NULL: the defaults, tracing off); file borrowed from c. */
void server_config_trace_settings(const struct mcp_config *c, struct server_trace_settings *ret);

/* Whether entry s is traced: its "trace", else settings.trace.enabled (st->trace). */
bool server_config_entry_traced(const struct mcp_server *s, const struct server_settings *st);

/* The idle timeout that applies to an entry: 0 (never) for "keep-alive" and
 * "lazy-keep-alive", else its own, else the settings'. 0: never. */
int64_t server_config_idle_ms(const struct server_config *sc, const struct server_settings *st);

/* The request timeout of the entry's calls: its "requestTimeoutMs", else 0 when the entry has
 * the generic "timeout" (which the upstream then takes), else settings.requestTimeoutMs, else 0
 * (the upstream's default). */
int64_t server_config_request_ms(const struct server_config *sc, const struct mcp_server *s,
                                 const struct server_settings *st);
/* The same, the entry's keys read from its raw object (0 when they cannot be: the default),
 * for the callers that make an upstream of it (serve, test, call). */
int64_t server_config_entry_request_ms(const struct mcp_server *s,
                                       const struct server_settings *st);

/* The exposed-name prefix of an entry: its "toolPrefix", else the settings'. */
enum mcp_tool_prefix server_config_prefix_of(const struct server_config *sc,
                                             enum mcp_tool_prefix settings_prefix);

/* Parses the bridge's keys of raw (an entry, borrowed) into *ret (release it with
 * server_config_release()). A key whose value is not of its kind is left at its default and
 * named in a warning in e (one a line, mcp_field_warn(); e may be NULL), in the words of the
 * loader ('"lifecycle" must be "lazy", "eager", "keep-alive" or "lazy-keep-alive", not 'x': it
 * is ignored'). 0, 1 with warnings, or -ENOMEM (*ret then untouched). */
int server_config_parse(struct json_object *raw, struct server_config *ret,
                        struct err *e) _must_check_;

/* Frees what sc holds and zeroes it; NULL is fine. */
void server_config_release(struct server_config *sc);

/* The exposed-name prefix of the configuration (settings.toolPrefix); the default,
 * MCP_TOOL_PREFIX_MCP, when no layer sets it validly (or for NULL). */
enum mcp_tool_prefix server_config_tool_prefix(const struct mcp_config *c);

/* Whether entry s signs in by itself: its "autoAuth", else settings.autoAuth, else false. */
bool server_config_auto_auth(const struct mcp_config *c, const struct mcp_server *s);

/* settings.authRequiredMessage, or NULL. Borrowed from c. */
const char *server_config_auth_message(const struct mcp_config *c);

/* The loader's checks (mcp_config_opts.check_entry, .check_settings; userdata unused). 1 with
 * the warnings in e, one a line (mcp_field_warn()), when the keys are accepted with warnings:
 * a key or setting with a bad value (dropped alone: the settings check deletes it from
 * settings, so that the lower layers' value holds), an "idleTimeout" of 1000 or more, an
 * adapter key the bridge does not act on, an unknown setting, "samplingAutoApprove". Only
 * -ENOMEM fails. */
int server_config_check_entry(void *userdata, const char *name, struct json_object *raw,
                              struct err *e) _must_check_;
int server_config_check_settings(void *userdata, struct json_object *settings,
                                 struct err *e) _must_check_;

/* mcp_config_load() and mcp_config_load_object() (same contracts, opts NULL as there) with the
 * checks above registered. Caller frees with mcp_config_free(). */
int server_config_load(const struct mcp_config_opts *opts, struct mcp_config **ret,
                       struct err *e) _must_check_;
int server_config_load_object(struct json_object *root, const char *source,
                              const struct mcp_config_opts *opts, struct mcp_config **ret,
                              struct err *e) _must_check_;
