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
