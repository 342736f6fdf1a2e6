/* mcp_internal.h - what the pieces of the MCP configuration (mcp_config.c: layers, mcp_entry.c:
 * the generic entry) share inside common/. Not installed. */
#pragma once

#include "credkit/json.h"
#include "credkit/mcp_config.h"

#define MCP_CONFIG_MAX_BYTES (4u * 1024u * 1024u) /* one mcp.json file */

/* Builds the entry name of source (a display path) from entry, validating it: the generic keys,
 * opts->check_entry, then the expansion of its templates through opts->lookup. An invalid entry
 * comes back with error (and maybe missing_vars) set; only -ENOMEM fails. entry is borrowed (a
 * reference is taken for raw). Caller frees with mcp_server_free(). */
int mcp_server_build(const char *name, struct json_object *entry, const char *source,
                     enum mcp_layer layer, const struct mcp_config_opts *opts,
                     struct mcp_server **ret) _must_check_;

/* Reads and parses the JSON file path (at most max bytes), as json_read_file() does (same
 * errors and messages), and finds the keys it gives twice in one object (json_find_duplicates():
 * *ret_dups, *ret_ndups; NULL and 0 when none). Caller puts *ret and frees the duplicates with
 * json_dups_free(). */
int mcp_read_json(const char *path, size_t max, struct json_object **ret,
                  struct json_dup **ret_dups, size_t *ret_ndups, struct err *e) _must_check_;
