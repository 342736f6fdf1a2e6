/* cmd_logout.c - "mcp-auth logout SERVER": one account's tokens deleted here and revoked at
 * the authorization server */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "credkit/args.h"
#include "credkit/log.h"

#include "cli.h"
#include "logout.h"

static const char logout_help[] =
    "usage: mcp-auth logout [--account NAME] SERVER\n"
    "\n"
    "Delete the stored tokens and client registration for SERVER, and revoke the tokens at the\n"
    "authorization server when it offers revocation (RFC 7009). Only the one account's: with\n"
    "--account NAME (or the entry's \"account\") that one, else the default account; the\n"
    "other accounts of the server stay signed in.\n"
    "\n"
    "examples:\n"
    "  mcp-auth logout github\n"
    "  mcp-auth logout github --account personal\n";

const struct option logout_opts[] = {{"account", required_argument, NULL, 'a'}, {0}};

int cmd_logout(int argc, char **argv)
{
    struct target_ctx tc = {0};
    struct err e = ERR_INIT, warn = ERR_INIT;
    bool revoked = false;
    int status;
    if (args_wants_help(argc, argv)) {
        fputs(logout_help, stdout);
        return EXIT_OK;
    }
    int opt;
    while ((opt = getopt_long(argc, argv, "", logout_opts, NULL)) != -1) {
        if (opt != 'a')
            return option_error(argv, "", logout_opts);
        if (take_account(optarg) != EXIT_OK)
            return EXIT_USAGE;
    }
    if (argc - optind != 1) {
        say_error("logout takes exactly one SERVER");
        return EXIT_USAGE;
    }
    status = resolve_target(argv[optind], &tc);
    if (status != EXIT_OK)
        goto out;
    int r = auth_logout(&tc.t, 0, &revoked, &warn, &e);
    if (r == -ENOENT) {
        say_info("nothing stored for %s%s%s%s", tc.url, tc.t.label ? " as the account '" : "",
                 tc.t.label ? tc.t.label : "", tc.t.label ? "'" : "");
        status = EXIT_OK;
        goto out;
    }
    if (r < 0) {
        say_error("%s", err_msg(&e));
        status = exit_for(r);
        goto out;
    }
    if (warn.msg[0])
        say_warn("deleted the local tokens, but revoking them failed: %s", err_msg(&warn));
    say_info("signed out of %s%s%s%s%s", tc.url, tc.t.label ? " as the account '" : "",
             tc.t.label ? tc.t.label : "", tc.t.label ? "'" : "",
             revoked ? " (tokens revoked at the authorization server)" : "");
    status = EXIT_OK;
out:
    target_release(&tc);
    return status;
}
