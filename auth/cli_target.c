/* cli_target.c - SERVER resolved: the layered configuration loaded, a URL or an entry's name
 * turned into the server, its oauth settings and account (struct target_ctx), its network
 * settings taken, a plain http:// server refused unless allowed */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/http.h"
#include "credkit/log.h"
#include "credkit/mcp_config.h"
#include "credkit/mcp_trust.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/suggest.h"
#include "credkit/url.h"

#include "cli.h"
#include "net.h"
#include "oauth_config.h"
#include "tokens.h"

void target_release(struct target_ctx *tc)
{
    mcp_config_free(tc->config);
    oauth_config_free(tc->oauth);
    free(tc->url);
    free(tc->name);
    net_release();
}

bool same_account(const char *a, const char *b)
{
    return a ? b && strcmp(a, b) == 0 : !b;
}

/* SERVER given as a URL: a URL that one valid entry points at, for the same account
 * (--account, else the default), gets that entry's oauth settings (and its name, for the
 * messages). */
static int target_by_url(const char *arg, struct target_ctx *tc)
{
    struct err e = ERR_INIT;
    int r = url_canonical(arg, &tc->url, &e);
    if (r < 0) {
        say_error("%s", err_msg(&e));
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < mcp_config_count(tc->config) && !tc->oauth; i++) {
        const struct mcp_server *s = mcp_config_at(tc->config, i);
        char *u = NULL, *cu = NULL;
        if (s->error || !s->url || mcp_expand(s->url, NULL, NULL, &u, NULL) < 0)
            continue;
        if (url_canonical(u, &cu, NULL) >= 0 && strcmp(cu, tc->url) == 0 &&
            oauth_config_parse_server(s, &tc->oauth, NULL) >= 0) {
            if (!same_account(tc->oauth->account, arg_account)) {
                oauth_config_free(tc->oauth); /* another account's entry */
                tc->oauth = NULL;
            } else {
                tc->name = strdup(s->name);
                tc->allow_http = s->allow_http;
            }
        }
        free(cu);
        secure_free(u);
    }
    if (!tc->oauth && oauth_config_parse(NULL, &tc->oauth, &e) < 0) {
        say_error("%s", err_msg(&e));
        return EXIT_FAILED;
    }
    return EXIT_OK;
}

/* No entry of that name: says where entries were looked for, and the close names. A word given
 * as "mcp-auth WORD" that reads like a command is a command mistyped (2), not a server. */
static int unknown_name(const char *arg, const struct mcp_config *config)
{
    struct buf files, close;
    struct suggest s;
    if (arg_implicit_login) {
        suggest_init(&s, arg);
        suggest_commands(&s, arg);
        const char *const *v;
        bool command_like = suggest_result(&s, &v) > 0;
        suggest_release(&s);
        if (command_like)
            return unknown_command(arg);
    }
    suggest_init(&s, arg);
    for (size_t i = 0; i < mcp_config_count(config); i++)
        suggest_add(&s, mcp_config_at(config, i)->name);
    buf_init(&close, 4096);
    if (suggest_append(&s, NULL, &close) < 0)
        buf_reset(&close);
    suggest_release(&s);
    buf_init(&files, 8192);
    for (size_t i = 0; i < mcp_config_file_count(config); i++) {
        bool exists = false;
        const char *f = mcp_config_file_at(config, i, &exists);
        char *disp = path_display(f);
        int r = buf_printf(&files, "%s%s%s", files.len ? ", " : "", disp ? disp : f,
                           exists ? "" : " (absent)");
        free(disp);
        if (r < 0)
            break;
    }
    say_error("no server named '%s' in %s%s%s give its URL instead, or add it to one of "
              "those files (see docs/auth.md)",
              arg, files.len ? buf_str(&files) : "the MCP configuration", buf_str(&close),
              close.len ? "" : ":");
    buf_release(&close);
    buf_release(&files);
    return EXIT_CONFIG;
}

/* SERVER given as an mcp.json entry name: a valid HTTP entry, with its oauth settings. */
int target_by_name(const char *arg, struct target_ctx *tc)
{
    struct err e = ERR_INIT;
    const struct mcp_server *s = mcp_config_find(tc->config, arg);
    if (!s)
        return unknown_name(arg, tc->config);
    if (s->error) {
        say_error("%s", s->error);
        return EXIT_CONFIG;
    }
    int r = oauth_config_parse_server(s, &tc->oauth, &e);
    if (r < 0) {
        say_error("%s", err_msg(&e));
        return r == -ENOMEM ? EXIT_FAILED : EXIT_CONFIG;
    }
    if (s->transport == MCP_TRANSPORT_STDIO || !s->url) {
        say_error("'%s' is a stdio server: it takes credentials from its environment, not "
                  "from OAuth",
                  arg);
        return EXIT_CONFIG;
    }
    char *u = NULL;
    r = mcp_expand(s->url, NULL, NULL, &u, &e);
    if (r >= 0)
        r = url_canonical(u, &tc->url, &e);
    secure_free(u);
    if (r < 0) {
        say_error("'%s': %s", arg, err_msg(&e));
        return EXIT_CONFIG;
    }
    tc->name = strdup(arg);
    tc->allow_http = s->allow_http;
    return EXIT_OK;
}

/* The layered configuration into tc->config, its diagnostics said (not when quiet: a command
 * that only names what it shows by it). An exit status. */
int load_config(struct target_ctx *tc, bool quiet)
{
    struct err e = ERR_INIT;
    char cwd[4096];
    struct trust_store *trust = NULL;
    struct err te = ERR_INIT;
    /* a project's entries are inert until approved (credkit/mcp_trust.h): mcp-auth neither
     * expands their variables nor signs in to the URLs they name */
    if (trust_store_load(NULL, &trust, &te) < 0)
        say_warn("%s: no project entry is used until this is fixed", err_msg(&te));
    struct mcp_config_opts opts = {
        .config_path = arg_config,
        .cwd = getcwd(cwd, sizeof(cwd)),
        .trust = trust_check,
        .trust_userdata = trust,
        .trust_hint = "run mcp-bridge trust",
    };
    int r = mcp_config_load(&opts, &tc->config, &e);
    trust_store_free(trust);
    if (r < 0) {
        if (!quiet)
            say_error("%s", err_msg(&e));
        return EXIT_CONFIG;
    }
    /* a file that could not be read at all: its servers are missing, say why */
    for (size_t i = 0; !quiet && i < mcp_config_diag_count(tc->config); i++) {
        const struct mcp_config_diag *dg = mcp_config_diag_at(tc->config, i);
        say_warn("%s", dg->message);
    }
    return EXIT_OK;
}

/* --account NAME: an exit status. */
int take_account(const char *name)
{
    if (!tokens_label_valid(name)) {
        say_error("--account: '%.*s' is not an account name: up to %d letters, digits and "
                  "'.', '_', '@', '+', '-'",
                  TOKENS_LABEL_MAX, name, TOKENS_LABEL_MAX);
        return EXIT_USAGE;
    }
    arg_account = name;
    return EXIT_OK;
}

/* The entry's CAs and client certificate for every request of the run (net.h), and at -v the
 * proxy the server is reached through. Settings that cannot be read are a warning: a command
 * that needs no request (status, a local logout) still works, and a request that needed them
 * fails after it. */
static int target_network(struct target_ctx *tc)
{
    struct err e = ERR_INIT;
    const struct mcp_server *s = tc->name ? mcp_config_find(tc->config, tc->name) : NULL;
    char *proxy = NULL;
    const char *var = NULL;
    if (net_load(s, tc->url, &e) < 0)
        say_warn("'%s': %s: its requests go without the entry's TLS settings", tc->name,
                 err_msg(&e));
    if (http_proxy_for(tc->url, &proxy, &var) < 0)
        return EXIT_FAILED;
    if (proxy) {
        char *shown = http_proxy_display(proxy);
        say_info("'%s' is reached through the proxy '%s' (%s)", tc->url, shown ? shown : "?", var);
        free(shown);
    }
    secure_free(proxy);
    return EXIT_OK;
}

/* SERVER is a URL or an mcp.json entry name. */
int resolve_target(const char *arg, struct target_ctx *tc)
{
    int status = load_config(tc, false);
    if (status != EXIT_OK)
        return status;
    tc->by_url = strstr(arg, "://") != NULL;
    status = tc->by_url ? target_by_url(arg, tc) : target_by_name(arg, tc);
    if (status != EXIT_OK)
        return status;
    tc->t.oauth = tc->oauth;
    tc->t.name = tc->name;
    tc->t.server_url = tc->url;
    /* --account, else the entry's: a command line that names one means it */
    tc->t.label = arg_account ? arg_account : tc->oauth->account;
    /* a key written in the URL's query is not repeated by any message */
    if (redact_add_url(log_redact(arg_log), tc->url) < 0)
        return EXIT_FAILED;
    return target_network(tc);
}

/* A plain http:// server on a host that is not loopback would get its token in clear, which
 * the bridge refuses to send there (docs/bridge.md): refused here too, unless the entry says
 * "allowHttp": true or, for a URL, allow_http (--allow-http) does. An exit status. */
int check_plain_http(const struct target_ctx *tc, bool allow_http)
{
    static const char trusted[] = "if the network on the way is trusted";
    if (allow_http && !tc->by_url) {
        say_error("--allow-http goes with a URL; for '%s' set \"allowHttp\": true in its "
                  "configuration entry",
                  tc->name);
        return EXIT_CONFIG;
    }
    if (allow_http || tc->allow_http || url_check_secure(tc->url, "the server", NULL) >= 0)
        return EXIT_OK;
    if (tc->name) {
        say_error("'%s' is plain http to a host that is not loopback: its token would go in "
                  "clear; use an https:// URL, or set \"allowHttp\": true in the entry %s",
                  tc->name, trusted);
        (void)snprintf(arg_fix, sizeof(arg_fix),
                       "use an https:// URL, or set \"allowHttp\": true in the entry");
    } else {
        char *shown = url_display(tc->url);
        say_error("'%s' is plain http to a host that is not loopback: its token would go in "
                  "clear; use an https:// URL, or give --allow-http %s",
                  shown ? shown : "the server", trusted);
        free(shown);
        (void)snprintf(arg_fix, sizeof(arg_fix), "use an https:// URL, or give --allow-http");
    }
    return EXIT_CONFIG;
}
