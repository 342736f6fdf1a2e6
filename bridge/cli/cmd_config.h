/* cmd_config.h - what mcp-bridge list, add and remove share.
 *
 * The layered mcp.json files are shown by list (cmd_list.c) and changed by add (cmd_add.c,
 * guided by cmd_add_guided.c, names from cmd_add_names.c) and remove (cmd_remove.c), one file
 * at a time through cmd_cfgfile.h. This is what they have in common: the usage error, the
 * scopes (which file "user" and "project" mean), the configuration loaded for a report, and
 * the building of json-c values with one out-of-memory flag instead of a check per call.
 *
 * URLs, header values and env values are templates ("Bearer ${GITHUB_TOKEN}"): they are stored
 * and shown as written, never expanded here. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "credkit/args.h"
#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"

#define CFG_JSON_OUT_FLAGS                                                                         \
    (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Logs "MSG (see 'mcp-bridge CMD --help')" and returns BRIDGE_EXIT_USAGE. */
int cfg_usage_error(struct log *log, const char *cmd, const char *fmt, ...) _printf_(3, 4);

enum cfg_scope {
    CFG_SCOPE_NONE = -1,
    CFG_SCOPE_USER,
    CFG_SCOPE_PROJECT,
};

/* --scope's value into *ret; else a usage error reported, and BRIDGE_EXIT_USAGE returned. */
int cfg_parse_scope(struct log *log, const char *cmd, const char *s, int *ret);

/* The file a scope means: user: --config, else ~/.pi/agent/mcp.json; project: ./.mcp.json.
 * Absolute. Caller frees *ret. */
int cfg_scope_path(enum cfg_scope scope, const struct args_globals *g, char **ret,
                   struct err *e) _must_check_;

/* An absolute copy of p, relative to the working directory. Caller frees *ret. */
int cfg_absolute_path(const char *p, char **ret, struct err *e) _must_check_;

/* cli_load_config() without its warnings about files at the default level: list shows them in
 * its report, remove as files not searched. NULL (reported) when it cannot load at all. */
struct mcp_config *cfg_load_quietly(const struct args_globals *g, struct log *log);

/* json-c answers NULL only when out of memory: *oom remembers it once. A NULL s is JSON null;
 * cfg_jadd() and cfg_jpush() take v (and put it when they cannot add it). */
struct json_object *cfg_jstr(bool *oom, const char *s);
void cfg_jadd(bool *oom, struct json_object *o, const char *key, struct json_object *v);
void cfg_jpush(bool *oom, struct json_object *a, struct json_object *v);
/* An array of the strings of a NULL-terminated vector (NULL: empty). */
struct json_object *cfg_jstrv(bool *oom, char *const *v);
/* The object {name: value, ...} of n "Name: value" (sep ':') or "NAME=value" (sep '=')
 * strings. */
struct json_object *cfg_jpairs(bool *oom, char *const *v, size_t n, char sep);

/* Splits a --header ("Name: value", one space after the colon, as add leaves it) or an --env
 * ("NAME=value") string at sep: the name's length, and *ret_value (borrowed from s). */
size_t cfg_pair_split(const char *s, char sep, const char **ret_value);
