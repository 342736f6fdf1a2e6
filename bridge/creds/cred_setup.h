/* cred_setup.h - the credentials provider the commands give each upstream: the helpers
 * (cred_helper.h), configured from the command line (--config, a URL given as the server) and
 * the configuration (the entry's autoAuth, settings.autoAuth and authRequiredMessage). */
#pragma once

#include "credkit/args.h"
#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

#include "creds/cred.h"
#include "core/loop.h"

struct cred_setup {
    struct loop *loop;
    struct log *log;
    const struct args_globals *g;    /* --config is passed on to mcp-auth */
    const struct mcp_config *config; /* the configuration in force (borrowed) */
    const char *auth_target;         /* the URL given as the server on the command line, or
                                      * NULL: mcp-auth is told the entry's name */
};

/* The provider for entry (downstream_opts.cred_new; userdata: struct cred_setup).
 * config: the configuration entry comes from, NULL for setup->config. Caller frees (or hands it
 * to upstream_opts.credentials). -ENOMEM. */
int cred_setup_provider(void *userdata, const struct mcp_config *config,
                        const struct mcp_server *entry, struct cred_provider **ret,
                        struct err *e) _must_check_;
