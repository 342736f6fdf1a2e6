/* server_config.h - the bridge's own keys of the MCP configuration.
 *
 * common/ reads the layers and the generic entry (credkit/mcp_config.h); the keys only the bridge
 * acts on are read here, from the entry's raw object and from the merged settings:
 *   per entry   "excludeTools"  tools (as the server names them) left out of the agent's list
 *               "lifecycle"     when to start the server ("lazy", "eager", ...), kept as written
 *               "idleTimeout"   how long an unused server is kept, in milliseconds
 *               "autoAuth"      sign in by itself when a sign-in is needed (cred_helper.h)
 *   settings    "toolPrefix"    how tools are named (naming.h): "server", "short" or "none"
 *               "autoAuth"      the same for every entry that does not say
 *               "authRequiredMessage"  the "login required" text, with ${server}
 * The bridge loads its configuration with server_config_load() or server_config_load_object(),
 * which register the checks below with the loader: an invalid key of an entry makes that entry
 * invalid (in `mcp-bridge list` as in `serve`), and an invalid setting is a diagnostic of its
 * file that leaves the lower layers' value in force, as for common's own keys. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"
#include "naming.h"

/* The bridge's keys of one entry. An embeddable value: zero it (SERVER_CONFIG_INIT), fill it
 * with server_config_parse(), free what it holds with server_config_release(). */
struct server_config {
    char **exclude_tools;    /* NULL-terminated; never NULL once parsed (empty when absent) */
    char *lifecycle;         /* as written; NULL when absent */
    int64_t idle_timeout_ms; /* 0: none */
    int auto_auth;           /* "autoAuth": 1 true, 0 false, -1 absent (settings.autoAuth) */
};

#define SERVER_CONFIG_INIT                                                                         \
    {                                                                                              \
        NULL, NULL, 0, -1                                                                          \
    }

/* Parses the bridge's keys of raw (an entry, borrowed) into *ret, which is written only on
 * success (release it with server_config_release()). -EINVAL with the reason, in the words of
 * the loader ('"idleTimeout" must be a positive number of milliseconds, not -1'), -ENOMEM. */
int server_config_parse(struct json_object *raw, struct server_config *ret,
                        struct err *e) _must_check_;

/* Frees what sc holds and zeroes it; NULL is fine. */
void server_config_release(struct server_config *sc);

/* The exposed-name prefix of the configuration (settings.toolPrefix); the default, "server",
 * when no layer sets it validly (or for NULL). */
enum mcp_tool_prefix server_config_tool_prefix(const struct mcp_config *c);

/* Whether entry s signs in by itself: its "autoAuth", else settings.autoAuth, else false. */
bool server_config_auto_auth(const struct mcp_config *c, const struct mcp_server *s);

/* settings.authRequiredMessage, or NULL. Borrowed from c. */
const char *server_config_auth_message(const struct mcp_config *c);

/* The loader's checks (mcp_config_opts.check_entry, .check_settings; userdata unused): the
 * entry's keys parse, the settings' toolPrefix is one of the three words. */
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
