/* cmd_login.c - "mcp-auth login SERVER" (and "mcp-auth SERVER"): the sign-in with its
 * countdown, or --with-token's token from standard input */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/duration.h"
#include "credkit/log.h"
#include "credkit/textsafe.h"
#include "credkit/url.h"
#include "credkit/util.h"

#include "cli.h"
#include "flow.h"
#include "import.h"
#include "oauth_config.h"
#include "tokens.h"

static const char login_help[] =
    "usage: mcp-auth login SERVER [--scope S] [--no-browser] [--paste] [--device-code]\n"
    "                      [--timeout D] [--allow-http] [--account NAME] [--with-token]\n"
    "                      [--callback-url URL] [--callback-port PORT]\n"
    "       mcp-auth SERVER [same options]\n"
    "\n"
    "Sign in: discover the server's authorization server, register a client if needed, open\n"
    "the browser on the sign-in page, receive the answer on a loopback port, and store the\n"
    "tokens in ~/.pi/agent/oauth/. The sign-in URL is always printed too.\n"
    "\n"
    "Over SSH or in a container the browser's machine cannot reach the loopback port: open\n"
    "the URL anywhere, sign in, and paste the address the browser ends on (its page fails to\n"
    "load: http://127.0.0.1:PORT/callback?code=...) into the terminal; it is checked as the\n"
    "listener checks it. Use --device-code instead when the server offers it and no address\n"
    "can be copied (a TV, a phone).\n"
    "\n"
    "  --scope S        scopes to ask for; added to those already granted (step-up)\n"
    "  --no-browser     do not start a browser: print the URL and wait (SSH, headless)\n"
    "  --paste          read the pasted address from standard input even when it is not a\n"
    "                   terminal (scripts); on a terminal it is always read\n"
    "  --device-code    sign in on another device with a code (RFC 8628), when offered\n"
    "  --timeout D      how long to wait for the sign-in (default 5m)\n"
    "  --allow-http     sign in to a plain http:// URL on a host that is not loopback, whose\n"
    "                   token goes in clear (an entry says it with \"allowHttp\": true)\n"
    "  --account NAME   sign in as the account NAME (work, personal ...): each account of a\n"
    "                   server keeps its own tokens; without it, the entry's \"account\" or\n"
    "                   the default account\n"
    "  --with-token     no sign-in: store the token read from standard input (the access\n"
    "                   token on one line, or a JSON token response starting with '{')\n"
    "  --callback-url URL  the redirect URI to register and send, for a machine the browser\n"
    "                   reaches through an ingress or a port forward; mcp-auth still listens\n"
    "                   on 127.0.0.1 (the entry's \"callbackUrl\")\n"
    "  --callback-port PORT  the port of that listener (the entry's \"callbackPort\"; default:\n"
    "                   any free one)\n"
    "\n"
    "examples:\n"
    "  mcp-auth login github\n"
    "  mcp-auth login github --account work\n"
    "  mcp-auth github --scope 'repo read:org'\n"
    "  ssh box mcp-auth https://mcp.example.com/mcp --no-browser\n"
    "  mcp-auth login github --no-browser --paste <callback-address.txt\n"
    "  mcp-auth login tickets --with-token <token.txt\n";

/* The countdown's line is open (no newline yet): a message starts on a line of its own. */
static bool countdown_open;

_printf_(3, 4) static void ui_say(void *userdata, enum auth_say_level level, const char *fmt, ...)
{
    (void)userdata;
    if (arg_quiet && level != AUTH_SAY_ALWAYS)
        return;
    if (countdown_open) {
        (void)fputc('\n', stderr);
        countdown_open = false;
    }
    va_list ap;
    va_start(ap, fmt);
    if (level == AUTH_SAY_ALWAYS) {
        /* the URL must reach the user verbatim, whatever the log level */
        (void)vfprintf(stderr, fmt, ap);
        (void)fputc('\n', stderr);
    } else {
        vsay(LOG_ERROR, fmt, ap);
    }
    va_end(ap);
}

static void ui_countdown(void *userdata, int64_t remaining_ms)
{
    (void)userdata;
    if (arg_quiet || !isatty(STDERR_FILENO))
        return;
    int64_t s = remaining_ms > 0 ? remaining_ms / 1000 : 0;
    fprintf(stderr, "\rwaiting for the sign-in: %lld:%02lld left ", (long long)(s / 60),
            (long long)(s % 60));
    countdown_open = s > 0;
    if (s == 0)
        fputc('\n', stderr);
}

enum {
    OPT_SCOPE = 256,
    OPT_NO_BROWSER,
    OPT_PASTE,
    OPT_DEVICE,
    OPT_TIMEOUT,
    OPT_ALLOW_HTTP,
    OPT_ACCOUNT,
    OPT_WITH_TOKEN,
    OPT_CALLBACK_URL,
    OPT_CALLBACK_PORT,
};
const struct option login_opts[] = {
    {"scope", required_argument, NULL, OPT_SCOPE},
    {"no-browser", no_argument, NULL, OPT_NO_BROWSER},
    {"paste", no_argument, NULL, OPT_PASTE},
    {"device-code", no_argument, NULL, OPT_DEVICE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"allow-http", no_argument, NULL, OPT_ALLOW_HTTP},
    {"account", required_argument, NULL, OPT_ACCOUNT},
    {"with-token", no_argument, NULL, OPT_WITH_TOKEN},
    {"callback-url", required_argument, NULL, OPT_CALLBACK_URL},
    {"callback-port", required_argument, NULL, OPT_CALLBACK_PORT},
    {0},
};

/* Whether arg ("--scope", "--scope=S") is one of login's options. */
bool is_login_option(const char *arg)
{
    if (strncmp(arg, "--", 2) != 0)
        return false;
    size_t len = strcspn(arg + 2, "=");
    for (size_t i = 0; login_opts[i].name; i++)
        if (strlen(login_opts[i].name) == len && strncmp(login_opts[i].name, arg + 2, len) == 0)
            return true;
    return false;
}

/* login --with-token: the token from standard input, never from argv, stored as the sign-in
 * of tc's server and account. An exit status. */
static int login_with_token(const struct target_ctx *tc)
{
    struct import_signin s = {0};
    struct err e = ERR_INIT;
    char *issuer = NULL;
    enum import_outcome outcome;
    int status = EXIT_FAILED;
    if (isatty(STDIN_FILENO)) {
        say_error("--with-token reads the token from standard input: pipe it in, e.g. "
                  "mcp-auth login %s --with-token <token.txt",
                  tc->name ? tc->name : "SERVER");
        status = EXIT_USAGE;
        goto out;
    }
    int r = import_read_token(STDIN_FILENO, &s, &e);
    if (r < 0) {
        say_error("--with-token: %s", err_msg(&e));
        status = r == -EINVAL || r == -E2BIG ? EXIT_USAGE : EXIT_FAILED;
        goto out;
    }
    if (redact_add(log_redact(arg_log), "access_token", s.access_token, strlen(s.access_token)) <
            0 ||
        (s.refresh_token && redact_add(log_redact(arg_log), "refresh_token", s.refresh_token,
                                       strlen(s.refresh_token)) < 0))
        goto out;
    r = import_store(&tc->t, &s, true, false, 0, &outcome, &issuer, &e);
    if (r < 0) {
        say_error("%s", err_msg(&e));
        status = exit_for(r);
        goto out;
    }
    if (!arg_quiet) {
        char exp[64];
        struct buf su;
        buf_init(&su, 64 * 1024);
        char *shown = url_display(tc->url);
        describe_expiry(s.expires_at, exp, sizeof(exp));
        fprintf(stderr, "stored the token for %s%s%s%s\n  expires: %s%s\n",
                shown ? text_escaped(&su, shown) : "the server",
                tc->t.label ? " as the account '" : "", tc->t.label ? tc->t.label : "",
                tc->t.label ? "'" : "",
                s.expires_at ? exp : "not known (taken as an hour from now)",
                s.refresh_token ? " (refreshed automatically)" : "");
        free(shown);
        buf_release(&su);
    }
    status = EXIT_OK;
out:
    free(issuer);
    import_signin_release(&s);
    return status;
}

int cmd_login(int argc, char **argv)
{
    const struct option *opts = login_opts;
    struct login_opts lo = {0};
    struct target_ctx tc = {0};
    struct token_entry *te = NULL;
    struct err e = ERR_INIT;
    bool allow_http = false, with_token = false;
    int opt, status;
    if (args_wants_help(argc, argv)) {
        fputs(login_help, stdout);
        return EXIT_OK;
    }
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case OPT_SCOPE:
            lo.scope = optarg;
            break;
        case OPT_NO_BROWSER:
            lo.no_browser = true;
            break;
        case OPT_PASTE:
            lo.paste = true;
            break;
        case OPT_DEVICE:
            lo.device_code = true;
            break;
        case OPT_ALLOW_HTTP:
            allow_http = true;
            break;
        case OPT_ACCOUNT:
            if (take_account(optarg) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case OPT_WITH_TOKEN:
            with_token = true;
            break;
        case OPT_CALLBACK_URL:
            if (oauth_check_callback_url(optarg, "--callback-url", &e) < 0) {
                say_error("%s", err_msg(&e));
                return EXIT_USAGE;
            }
            lo.callback_url = optarg;
            break;
        case OPT_CALLBACK_PORT: {
            int64_t port = 0;
            if (parse_int64(optarg, &port) < 0 || port < 1 || port > 65535) {
                say_error("--callback-port: '%s' is not a port number from 1 to 65535", optarg);
                return EXIT_USAGE;
            }
            lo.callback_port = (uint16_t)port;
            break;
        }
        case OPT_TIMEOUT:
            if (duration_parse(optarg, &lo.timeout_ms) < 0 || lo.timeout_ms <= 0) {
                say_error("--timeout: '%s' is not a positive duration (e.g. 90s, 5m)", optarg);
                return EXIT_USAGE;
            }
            break;
        default:
            return option_error(argv, "", opts);
        }
    }
    if (argc - optind != 1) {
        say_error("login takes exactly one SERVER (see 'mcp-auth login --help')");
        return EXIT_USAGE;
    }
    status = resolve_target(argv[optind], &tc);
    if (status == EXIT_OK)
        status = check_plain_http(&tc, allow_http);
    if (status != EXIT_OK)
        goto out;
    if (with_token) {
        if (lo.scope || lo.no_browser || lo.paste || lo.device_code || lo.timeout_ms ||
            lo.callback_url || lo.callback_port) {
            say_error("--with-token signs in with no browser and no code: it takes none of "
                      "--scope, --no-browser, --paste, --device-code, --timeout, --callback-url, "
                      "--callback-port");
            status = EXIT_USAGE;
            goto out;
        }
        status = login_with_token(&tc);
        goto out;
    }
    /* a terminal in the foreground is a person who may paste; a background job reading it
     * would be stopped (SIGTTIN) */
    if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp())
        lo.paste = true;
    struct auth_ui ui = {.say = ui_say, .countdown = ui_countdown};
    int r = auth_login(&tc.t, &lo, &ui, &te, &e);
    if (r == -EALREADY) {
        say(arg_quiet ? LOG_INFO : LOG_ERROR, "%s", err_msg(&e));
        status = EXIT_OK;
        goto out;
    }
    if (r < 0) {
        say_error("%s", err_msg(&e));
        status = exit_for(r);
        goto out;
    }
    char exp[64];
    describe_expiry(te->expires_at, exp, sizeof(exp));
    if (!arg_quiet) {
        struct buf su, ss;
        buf_init(&su, 64 * 1024);
        buf_init(&ss, 64 * 1024);
        char *shown = url_display(tc.url);
        fprintf(stderr, "signed in to %s%s%s%s\n  scopes:  %s\n  expires: %s%s\n",
                shown ? text_escaped(&su, shown) : "the server",
                tc.t.label ? " as the account '" : "", tc.t.label ? tc.t.label : "",
                tc.t.label ? "'" : "",
                te->scope && *te->scope ? text_escaped(&ss, te->scope) : "(none)", exp,
                te->refresh_token ? " (refreshed automatically)" : "");
        free(shown);
        buf_release(&su);
        buf_release(&ss);
    }
    status = EXIT_OK;
out:
    token_entry_free(te);
    target_release(&tc);
    return status;
}
