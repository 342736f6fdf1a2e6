/* cred_setup.c - the helpers' provider, configured for one entry (cred_setup.h). */
#include <errno.h>
#include <string.h>

#include "creds/cred_helper.h"
#include "creds/cred_setup.h"
#include "config/server_config.h"

int cred_setup_provider(void *userdata, const struct mcp_config *config,
                        const struct mcp_server *entry, struct cred_provider **ret, struct err *e)
{
    const struct cred_setup *cs = userdata;
    const struct mcp_config *c = config ? config : cs->config;
    struct cred_helper_opts o = {
        .loop = cs->loop,
        .log = cs->log,
        .config_path = cs->g ? cs->g->config : NULL,
        .auth_target = cs->auth_target,
        .auto_auth = server_config_auto_auth(c, entry),
        .auth_required_message = server_config_auth_message(c),
    };
    int r = cred_helper_new(&o, ret);
    return r < 0 ? err_set(e, r, "cannot set up the credentials: %s", strerror(-r)) : 0;
}
