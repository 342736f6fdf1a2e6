/* transport_stdio.c - transport.h over a child process: the entry's command and args run with
 * its env expanded from the credentials' answer. The transport itself, its ops and its events,
 * is stdio_child.h's object: this file only turns an entry into a stdio_child_spec. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/mcp_field.h"
#include "credkit/mcp_template.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"

#include "creds/cred.h"
#include "transport/stdio_child.h"
#include "transport/transport.h"

int transport_stdio_open(const struct transport_spec *spec, const struct transport_handler *h,
                         void *userdata, struct transport **ret, struct err *e)
{
    const struct mcp_server *srv = spec->server;
    struct strv env = STRV_INIT, argv = STRV_INIT;
    struct stdio_child *s = NULL;
    char *cwd = NULL;
    int r;

    r = cred_expand_pairs(srv->env, "=", spec->lookup, spec->lookup_userdata, &env, e);
    if (r < 0) {
        err_prefix(e, "env");
        goto out;
    }
    r = strv_push(&argv, srv->command);
    for (size_t i = 0; r >= 0 && srv->args && srv->args[i]; i++) {
        /* ${NAME}s resolved at each start: a rotated value is used from the next one on */
        char *arg = NULL;
        r = mcp_expand(srv->args[i], spec->lookup, spec->lookup_userdata, &arg, e);
        if (r < 0) {
            err_prefix(e, "\"args\" element %zu", i + 1);
            goto out;
        }
        r = strv_push_take(&argv, arg); /* wiped and freed on failure */
    }
    if (r >= 0) {
        r = mcp_server_expand_cwd(srv, spec->lookup, spec->lookup_userdata, &cwd, e);
        if (r < 0)
            goto out;
    }
    if (r < 0) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    /* "inheritEnv": true, the pi adapter's default, is the one way to the whole environment:
     * absent or false, the server gets the minimal one */
    bool inherit = false;
    if (mcp_field_bool(srv->raw, "inheritEnv", "", &inherit, NULL) < 0)
        inherit = false;
    struct stdio_child_spec sp = {
        .argv = (const char *const *)argv.v,
        .name = srv->name,
        .log = spec->log,
        .env = (const char *const *)env.v,
        .inherit_env = inherit,
        .cwd = cwd,
        .max_frame = spec->max_message,
    };
    r = stdio_child_new(spec->loop, &sp, h, userdata, &s, e);
    if (r < 0)
        goto out;
    *ret = stdio_child_transport(s);
out:
    strv_release_secure(&argv); /* an argument may hold a secret the user put there */
    strv_release_secure(&env);
    secure_free(cwd);
    return r;
}
