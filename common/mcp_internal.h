/* mcp_internal.h - what the pieces of the MCP configuration (mcp_config.c: layers, mcp_entry.c:
 * the generic entry, mcp_oauth.c: the "oauth" object) share inside common/. Not installed. */
#pragma once

#include "credkit/mcp_config.h"

#define MCP_CONFIG_MAX_BYTES (4u * 1024u * 1024u) /* one mcp.json file */

/* Builds the entry name of source (a display path) from entry, validating it: the generic keys,
 * opts->check_entry, then the expansion of its templates through opts->lookup. An invalid entry
 * comes back with error (and maybe missing_vars) set; only -ENOMEM fails. entry is borrowed (a
 * reference is taken for raw). Caller frees with mcp_server_free(). */
int mcp_server_build(const char *name, struct json_object *entry, const char *source,
                     enum mcp_layer layer, const struct mcp_config_opts *opts,
                     struct mcp_server **ret) _must_check_;

/* Parses an "oauth" member into oa (zeroed by the caller); -EINVAL with the reason, -ENOMEM.
 * What was parsed before a failure stays in oa: release it with mcp_oauth_release(). */
int mcp_oauth_parse(struct json_object *o, struct mcp_oauth *oa, struct err *e) _must_check_;

/* Checks the syntax of the templates of oa (the client secret); a missing variable is not an
 * error here (it is reported when the secret is needed). -EINVAL with the reason, -ENOMEM. */
int mcp_oauth_check_templates(const struct mcp_oauth *oa, mcp_lookup_fn lookup, void *userdata,
                              struct err *e) _must_check_;

/* Copies s into c (zeroed by the caller). -ENOMEM, when c holds what was copied: release it. */
int mcp_oauth_dup(const struct mcp_oauth *s, struct mcp_oauth *c) _must_check_;

/* Frees what oa owns, wiping the secrets. */
void mcp_oauth_release(struct mcp_oauth *oa);
