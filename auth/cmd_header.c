/* cmd_header.c - "mcp-auth header SERVER": a valid Authorization header, refreshed first when
 * needed, as a line or as the helper protocol's JSON answer; never a prompt */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/helper_answer.h"
#include "credkit/log.h"
#include "credkit/textsafe.h"

#include "cli.h"
#include "dpop.h"
#include "refresh.h"
#include "tokens.h"

static const char header_help[] =
    "usage: mcp-auth header [--json] [--refresh] [--allow-http] [--account NAME] SERVER\n"
    "\n"
    "Print a valid Authorization header for SERVER, refreshing the token first when it has\n"
    "expired or is about to. Never prompts and never opens a browser: when no valid token can\n"
    "be had it exits with status 4 and says which command signs in (status 7 when the server\n"
    "uses no OAuth at all: it wants a token of its own). With --json, one line for\n"
    "programs (docs/helper-protocol.md):\n"
    "  {\"headers\": {\"Authorization\": \"Bearer ...\"}, \"expires_at\": 1767225600,\n"
    "   \"version\": 1}\n"
    "--refresh refreshes now even when the token looks valid (the server refused it: a 401);\n"
    "callers that refresh at the same moment still cause one refresh.\n"
    "--allow-http gives the token of a plain http:// URL on a host that is not loopback (an\n"
    "entry says it with \"allowHttp\": true); without it such a server is refused.\n"
    "--account NAME gives the token of the account NAME (see 'mcp-auth login --help').\n"
    "\n"
    "examples:\n"
    "  curl -H \"$(mcp-auth header github)\" https://mcp.example.com/mcp\n"
    "  mcp-auth header --json github\n";

/* The answer of `header` for te into out: with json the helper protocol's headers answer (the
 * Authorization header and the token's expiry; when the server gave none, an hour after it was
 * issued; for a DPoP-bound token, "Authorization: DPoP" and the key, for the bridge to sign each
 * request's proof), else the header line. A token that could not be sent as a header value (a control
 * character) is refused in both forms, with a message in e that never quotes it. */
static int write_header_answer(const struct token_entry *te, bool json, struct buf *out,
                               struct err *e)
{
    struct helper_headers h = {0};
    struct buf value;
    if (!auth_token_sendable(te))
        return err_set(e, AUTH_LOGIN_REQUIRED,
                       "the stored token for '%s' is not a valid bearer token (RFC 6750), so it "
                       "is never sent",
                       te->server_url);
    buf_init_secret(&value, 1024 * 1024);
    bool dpop = auth_dpop_bound(te);
    int r = buf_printf(&value, "%s %s", dpop ? "DPoP" : "Bearer", te->access_token);
    if (r >= 0 && dpop && json)
        r = auth_dpop_key(te, &h.dpop, e);
    if (r >= 0 && !header_value_safe(value.data, value.len))
        r = err_set(e, AUTH_LOGIN_REQUIRED,
                    "the stored token for '%s' cannot be sent as a header value", te->server_url);
    if (r >= 0)
        r = helper_headers_add(&h, "Authorization", value.data, value.len, e);
    h.expires_at = te->expires_at > 0 ? te->expires_at : te->issued_at + 3600;
    if (r >= 0) {
        r = json ? helper_headers_write(&h, out)
                 : buf_printf(out, "Authorization: %s\n", h.v[0].value);
        if (r < 0)
            (void)err_set(e, r, "%s", strerror(-r));
    }
    buf_release(&value);
    helper_headers_release(&h);
    return r;
}

const struct option header_opts[] = {{"json", no_argument, NULL, 'j'},
                                     {"refresh", no_argument, NULL, 'r'},
                                     {"allow-http", no_argument, NULL, 'H'},
                                     {"account", required_argument, NULL, 'a'},
                                     {0}};

int cmd_header(int argc, char **argv)
{
    const struct option *opts = header_opts;
    bool json = false, force = false, allow_http = false;
    struct target_ctx tc = {0};
    struct token_entry *te = NULL;
    struct err e = ERR_INIT;
    int opt, status;
    if (args_wants_help(argc, argv)) {
        fputs(header_help, stdout);
        return EXIT_OK;
    }
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'j')
            json = true;
        else if (opt == 'r')
            force = true;
        else if (opt == 'H')
            allow_http = true;
        else if (opt == 'a' && take_account(optarg) != EXIT_OK)
            return EXIT_USAGE;
        else if (opt != 'a')
            return option_error(argv, "", opts);
    }
    if (argc - optind != 1) {
        say_error("header takes exactly one SERVER (see 'mcp-auth header --help')");
        return EXIT_USAGE;
    }
    status = resolve_target(argv[optind], &tc);
    if (status == EXIT_OK)
        status = check_plain_http(&tc, allow_http);
    if (status != EXIT_OK)
        goto out;
    int r = auth_fresh_token(&tc.t, 0, force, &te, &e);
    if (r >= 0 && !auth_token_sendable(te))
        r = err_set(&e, AUTH_LOGIN_REQUIRED,
                    "the stored token for '%s' is not a valid bearer token (RFC 6750), so it "
                    "is never sent",
                    te->server_url);
    if (r == AUTH_LOGIN_REQUIRED) {
        char cmd[1024];
        signin_command(&tc, cmd, sizeof(cmd));
        say_error("%s: sign in with: %s", err_msg(&e), cmd);
        (void)snprintf(arg_fix, sizeof(arg_fix), "run '%s'", cmd);
        status = EXIT_LOGIN_REQUIRED;
        goto out;
    }
    if (r < 0) {
        say_error("%s", err_msg(&e));
        status = exit_for(r);
        goto out;
    }
    if (redact_add(log_redact(arg_log), "access_token", te->access_token,
                   strlen(te->access_token)) < 0) {
        status = EXIT_FAILED;
        goto out;
    }
    struct buf b;
    buf_init_secret(&b, 1024 * 1024);
    r = write_header_answer(te, json, &b, &e);
    if (r == AUTH_LOGIN_REQUIRED) {
        char cmd[1024];
        signin_command(&tc, cmd, sizeof(cmd));
        say_error("%s: sign in with: %s", err_msg(&e), cmd);
        (void)snprintf(arg_fix, sizeof(arg_fix), "run '%s'", cmd);
        buf_release(&b);
        status = EXIT_LOGIN_REQUIRED;
        goto out;
    }
    if (r < 0)
        say_error("cannot build the answer: %s", err_msg(&e));
    if (r >= 0 && fwrite(b.data, 1, b.len, stdout) != b.len)
        r = -EIO;
    (void)fflush(stdout);
    buf_release(&b);
    status = r < 0 ? EXIT_FAILED : EXIT_OK;
out:
    token_entry_free(te);
    target_release(&tc);
    return status;
}
