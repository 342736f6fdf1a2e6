/* main.c - mcp-auth: sign in to MCP servers with OAuth, keep their tokens fresh */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "credkit/args.h"
#include "credkit/duration.h"
#include "credkit/helper_answer.h"
#include "credkit/http.h"
#include "credkit/jsonw.h"
#include "credkit/log.h"
#include "credkit/mcp_config.h"
#include "credkit/mcp_trust.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "credkit/suggest.h"
#include "credkit/textsafe.h"
#include "credkit/url.h"
#include "credkit/util.h"
#include "credkit/version.h"

#include "dpop.h"
#include "flow.h"
#include "import.h"
#include "logout.h"
#include "net.h"
#include "oauth_config.h"
#include "refresh.h"
#include "tokens.h"

/* Exit statuses, documented in docs/auth.md and docs/exit-codes.md */
enum {
    EXIT_OK = 0,
    EXIT_FAILED = 1,
    EXIT_USAGE = 2,
    EXIT_CONFIG = 3,
    EXIT_LOGIN_REQUIRED = 4,
    EXIT_SERVER = 5,
    EXIT_WANTS_TOKEN = 7,
};

/* The help, around its list of commands (the command table's) */
static const char usage_head[] =
    "usage: mcp-auth [OPTIONS] SERVER             sign in (same as 'mcp-auth login SERVER')\n"
    "       mcp-auth [OPTIONS] COMMAND [ARGS]\n"
    "\n"
    "Sign in to MCP servers that use OAuth, and keep their tokens fresh for every program that\n"
    "asks. SERVER is a server name from mcp.json or a URL.\n"
    "\n"
    "commands:\n";

static const char usage_tail[] =
    "\n"
    "options:\n"
    "  --config PATH        read this file instead of ~/.pi/agent/mcp.json\n"
    "  -v, --verbose        say more\n"
    "  -q, --quiet          errors only (the sign-in URL is still printed)\n"
    "  -h, --help           this help ('mcp-auth help COMMAND' for a command's own)\n"
    "  -V, --version        print the version\n"
    "\n"
    "examples:\n"
    "  mcp-auth github                  # sign in to the server named github in mcp.json\n"
    "  mcp-auth https://mcp.example.com/mcp --no-browser\n"
    "  mcp-auth header --json github\n"
    "  mcp-auth status\n"
    "  mcp-auth logout github\n"
    "\n"
    "exit status: 0 ok, 1 failed, 2 usage error, 3 configuration error, 4 sign-in required,\n"
    "5 authorization server or network error, 7 the server uses no OAuth (it wants a token of\n"
    "its own). See docs/auth.md.\n";

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

static const char status_help[] =
    "usage: mcp-auth status [--json] [--account NAME] [SERVER]\n"
    "\n"
    "Show each stored sign-in: server URL, issuer, how the client was registered, when the\n"
    "token expires, the scopes granted, and whether a refresh token exists. Never shows tokens.\n"
    "ACCOUNT is who signed in, as the server says; LABEL the account name given at sign-in\n"
    "(--account, or the entry's \"account\"), '-' for the default account. With --account NAME,\n"
    "only that account's sign-ins.\n"
    "\n"
    "examples:\n"
    "  mcp-auth status\n"
    "  mcp-auth status --account work\n"
    "  mcp-auth status --json github\n";

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

static const char import_help[] =
    "usage: mcp-auth import mcp-remote [SERVER] [--dir DIR] [--account NAME] [--force]\n"
    "                       [--dry-run] [--json]\n"
    "\n"
    "Take over the sign-ins mcp-remote keeps (~/.mcp-auth/mcp-remote-v1/, or\n"
    "$MCP_REMOTE_CONFIG_DIR): its tokens and its client registration, so that no new sign-in\n"
    "is needed; its refresh token refreshes here from then on. mcp-remote names each sign-in\n"
    "by a hash of the server URL it was given: without SERVER, every HTTP server of the\n"
    "configuration whose URL matches one is imported; the others are listed as skipped. A\n"
    "sign-in stored here that is newer than mcp-remote's is kept unless --force.\n"
    "\n"
    "  --dir DIR        mcp-remote's directory (the one holding mcp-remote-v1/, or it)\n"
    "  --account NAME   store them as the account NAME (see 'mcp-auth login --help')\n"
    "  --force          replace a newer sign-in stored here\n"
    "  --dry-run        say what would be imported, write nothing\n"
    "  --json           the answer as JSON on standard output (docs/json.md)\n"
    "\n"
    "examples:\n"
    "  mcp-auth import mcp-remote --dry-run\n"
    "  mcp-auth import mcp-remote github\n"
    "  mcp-auth import mcp-remote https://mcp.example.com/mcp --account work\n";
static const char store_help[] =
    "usage: mcp-auth store [migrate file|keyring]\n"
    "\n"
    "Say where the token store keeps its secrets (the tokens, client secrets): in its files\n"
    "under ~/.pi/agent/oauth/ (file) or in one item of the OS keychain, the Secret Service\n"
    "(keyring), the rest staying in the files. 'migrate' moves every secret of the store to\n"
    "the other backend in one step: until it has succeeded, the old backend holds every token.\n"
    "A new store chooses by MCP_AUTH_STORE (auto, file or keyring; auto, the default, takes\n"
    "the keychain when a Secret Service runs); an existing one stays where it is until moved.\n"
    "\n"
    "examples:\n"
    "  mcp-auth store\n"
    "  mcp-auth store migrate keyring\n";

static struct log *arg_log;
static const char *arg_config;
static bool arg_quiet;
/* --account NAME of login, header, status and logout; NULL: the entry's, else the default */
static const char *arg_account;
/* --json: the answer is on stdout (even a failed one), else main() writes the error object,
 * with arg_fix when the command knows the exact next step (docs/json.md) */
static bool arg_answered;
static char arg_fix[1200];

/* ---- messages ---- */

/* Every message carries text from others: answers of the authorization server (error
 * descriptions, issuers, endpoints), the stored entries, the configuration. It reaches the
 * terminal escaped (textsafe.h), so that none of it can move the cursor, clear the screen or
 * reverse the text around it. */
_printf_(2, 0) static void vsay(enum log_level level, const char *fmt, va_list ap)
{
    struct buf raw, esc;
    buf_init_secret(&raw, 64 * 1024);
    buf_init_secret(&esc, 256 * 1024);
    if (buf_vprintf(&raw, fmt, ap) >= 0 && text_escape_append(&esc, raw.data, raw.len) >= 0)
        log_msg(arg_log, level, "%s", buf_str(&esc));
    else
        log_msg(arg_log, level, "%s", "(a message too long to show)");
    buf_release(&esc);
    buf_release(&raw);
}

_printf_(2, 3) static void say(enum log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(level, fmt, ap);
    va_end(ap);
}

#define say_error(...) say(LOG_ERROR, __VA_ARGS__)
#define say_warn(...)  say(LOG_WARN, __VA_ARGS__)
#define say_info(...)  say(LOG_INFO, __VA_ARGS__)

/* ---- the command line ---- */

/* Words other tools use for what a command of ours does: "mcp-auth list" is status, not a
 * sign-in to a server named "list" */
static const struct {
    const char *word, *command;
} command_synonyms[] = {
    {"list", "status"},    {"ls", "status"},       {"show", "status"},   {"whoami", "status"},
    {"token", "header"},   {"signin", "login"},    {"sign-in", "login"}, {"auth", "login"},
    {"signout", "logout"}, {"sign-out", "logout"}, {"revoke", "logout"},
};

/* "mcp-auth SERVER": set when the word was taken as login's SERVER without "login" */
static bool arg_implicit_login;

static void suggest_commands(struct suggest *s, const char *word);
static int unknown_command(const char *word);
static void print_usage(FILE *f);

/* The options of every command */
static const struct option global_opts[] = {
    {"config", required_argument, NULL, 0}, {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},      {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},    {0},
};

/* Reports the option getopt_long() just refused, as getopt would, by the command
 * ("mcp-auth login: unknown option ..."); EXIT_USAGE. */
static int option_error(char *const *argv, const char *shortopts, const struct option *opts)
{
    struct buf msg;
    buf_init(&msg, 4096);
    struct log *cmd_log = log_new(argv[0], STDERR_FILENO);
    if (cmd_log)
        log_set_level(cmd_log, log_get_level(arg_log));
    if (args_option_error(argv[0], argv, shortopts, opts, global_opts, &msg) < 0)
        buf_reset(&msg);
    log_msg(cmd_log ? cmd_log : arg_log, LOG_ERROR, "%s",
            msg.len ? buf_str(&msg) : "invalid option");
    log_free(cmd_log);
    buf_release(&msg);
    return EXIT_USAGE;
}

/* ---- resolving SERVER ---- */

struct target_ctx {
    struct mcp_config *config;
    char *url;
    char *name;
    struct oauth_config *oauth; /* the entry's settings; an empty one for a URL without */
    bool by_url;                /* SERVER was given as a URL */
    bool allow_http;            /* the entry's "allowHttp" */
    struct auth_target t;
};

static void target_release(struct target_ctx *tc)
{
    mcp_config_free(tc->config);
    oauth_config_free(tc->oauth);
    free(tc->url);
    free(tc->name);
    net_release();
}

static bool same_account(const char *a, const char *b)
{
    return a ? b && strcmp(a, b) == 0 : !b;
}

/* The exit status for an error of the flow (docs/exit-codes.md). */
static int exit_for(int r)
{
    switch (r) {
    case AUTH_LOGIN_REQUIRED:
        return EXIT_LOGIN_REQUIRED;
    case AUTH_WANTS_TOKEN:
        return EXIT_WANTS_TOKEN;
    /* the authorization server or the network */
    case -ETIMEDOUT:
    case -ECONNREFUSED:
    case -EHOSTUNREACH:
    case -EPROTO:
    case -EXDEV:
    case -ELOOP:
    case -EPERM:
    case -EBADMSG:
    case -E2BIG:
    case -EACCES:
        return EXIT_SERVER;
    /* what the user configured */
    case -EINVAL:
    case -ENOENT:
        return EXIT_CONFIG;
    /* local: the store (-EUCLEAN), its lock (-ENOLCK), nobody signed in (-ETIME), the rate
     * limit (-EBUSY), an interruption (-ECANCELED) */
    default:
        return EXIT_FAILED;
    }
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
static int target_by_name(const char *arg, struct target_ctx *tc)
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
static int load_config(struct target_ctx *tc, bool quiet)
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
static int take_account(const char *name)
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
static int resolve_target(const char *arg, struct target_ctx *tc)
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
static int check_plain_http(const struct target_ctx *tc, bool allow_http)
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

/* ---- output ---- */

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

static void describe_expiry(int64_t expires_at, char *out, size_t size)
{
    char d[DURATION_BUF_SIZE];
    int64_t left = expires_at - now_unix();
    if (expires_at <= 0)
        (void)snprintf(out, size, "unknown");
    else if (left <= 0)
        (void)snprintf(out, size, "expired");
    else
        (void)snprintf(out, size, "in %s", duration_format(left * 1000, d, sizeof(d)));
}

/* The sign-in command to suggest, as the user would type it: the account named when the
 * entry does not name it itself. */
static void signin_command(const struct target_ctx *tc, char *out, size_t size)
{
    bool account = tc->t.label && !(tc->name && tc->oauth && tc->oauth->account &&
                                    strcmp(tc->oauth->account, tc->t.label) == 0);
    (void)snprintf(out, size, "mcp-auth%s%s%s %s%s%s", arg_config ? " --config '" : "",
                   arg_config ? arg_config : "", arg_config ? "'" : "",
                   tc->name ? tc->name : tc->url, account ? " --account " : "",
                   account ? tc->t.label : "");
}

/* ---- commands ---- */

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
static const struct option login_opts[] = {
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
static bool is_login_option(const char *arg)
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

static int cmd_login(int argc, char **argv)
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

static const struct option header_opts[] = {{"json", no_argument, NULL, 'j'},
                                            {"refresh", no_argument, NULL, 'r'},
                                            {"allow-http", no_argument, NULL, 'H'},
                                            {"account", required_argument, NULL, 'a'},
                                            {0}};

static int cmd_header(int argc, char **argv)
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

/* The names of the configuration's entries whose URL is url (canonical) and whose account is
 * label, into out (none when there is no configuration). A URL with a ${VAR} that does not
 * resolve names no entry. */
static void names_of(const struct mcp_config *c, const char *url, const char *label,
                     struct strv *out)
{
    strv_release(out);
    for (size_t i = 0; c && i < mcp_config_count(c); i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        char *u = NULL, *canon = NULL;
        struct err e = ERR_INIT;
        if (s->error || !s->url || s->transport == MCP_TRANSPORT_STDIO)
            continue;
        bool same = mcp_expand(s->url, NULL, NULL, &u, &e) >= 0 &&
                    url_canonical(u, &canon, &e) >= 0 && strcmp(canon, url) == 0;
        secure_free(u);
        free(canon);
        struct oauth_config *oc = NULL;
        if (same)
            same = oauth_config_parse_server(s, &oc, NULL) >= 0 && same_account(oc->account, label);
        oauth_config_free(oc);
        if (same && strv_push(out, s->name) < 0)
            return; /* the names that fit */
    }
}

/* One stored sign-in as `status --json` shows it: never a token. names: its entries in the
 * configuration. */
static struct json_object *status_json(const struct token_entry *t, const struct strv *names)
{
    struct json_object *o = json_object_new_object(), *n = json_object_new_array();
    for (size_t i = 0; i < names->n; i++)
        (void)json_object_array_add(n, json_object_new_string(names->v[i]));
    (void)json_object_object_add(o, "names", n);
    (void)json_object_object_add(o, "url", json_object_new_string(t->server_url));
    (void)json_object_object_add(o, "account",
                                 t->account ? json_object_new_string(t->account) : NULL);
    (void)json_object_object_add(o, "label", t->label ? json_object_new_string(t->label) : NULL);
    (void)json_object_object_add(o, "issuer", json_object_new_string(t->issuer));
    (void)json_object_object_add(o, "registration",
                                 json_object_new_string(registration_method_str(t->registration)));
    if (t->client_id)
        (void)json_object_object_add(o, "client_id", json_object_new_string(t->client_id));
    (void)json_object_object_add(o, "has_access_token",
                                 json_object_new_boolean(t->access_token != NULL));
    if (t->access_token)
        (void)json_object_object_add(o, "access_token_usable",
                                     json_object_new_boolean(auth_token_sendable(t)));
    if (t->access_token && t->expires_at > 0)
        (void)json_object_object_add(o, "expires_at", json_object_new_int64(t->expires_at));
    if (t->scope)
        (void)json_object_object_add(o, "scope", json_object_new_string(t->scope));
    (void)json_object_object_add(o, "has_refresh_token",
                                 json_object_new_boolean(t->refresh_token != NULL));
    return o;
}

/* Prints the stored sign-ins (those of tc's url only, when it has one; of its account only,
 * when it has a url or --account names one) as a table or as JSON;
 * returns how many were shown. With --json, none for a SERVER is the answer's error. Each is
 * named by the configuration's entries for its URL (tc->config), as users signed in. */
static size_t status_print(struct token_entry *const *all, size_t n, const struct target_ctx *tc,
                           enum tokens_backend backend, bool json)
{
    const char *url = tc->url;
    struct json_object *arr = json_object_new_array();
    struct strv names = STRV_INIT;
    struct buf joined;
    buf_init(&joined, 64 * 1024);
    if (!json)
        printf("%-16s %-24s %-12s %-12s %-7s %-24s %s\n", "NAME", "ACCOUNT", "LABEL", "EXPIRES",
               "REFRESH", "SCOPES", "SERVER");
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        const struct token_entry *t = all[i];
        if (url && strcmp(t->server_url, url) != 0)
            continue;
        if ((url || arg_account) && !same_account(t->label, tc->t.label))
            continue;
        shown++;
        names_of(tc->config, t->server_url, t->label, &names);
        char exp[64];
        describe_expiry(t->access_token ? t->expires_at : 0, exp, sizeof(exp));
        if (!t->access_token)
            (void)snprintf(exp, sizeof(exp), "signed out");
        else if (!auth_token_sendable(t))
            (void)snprintf(exp, sizeof(exp), "unusable"); /* never sent: see `header` */
        if (json) {
            (void)json_object_array_add(arr, status_json(t, &names));
        } else {
            struct buf su, sn, sa, ss;
            buf_init(&su, 64 * 1024);
            buf_init(&sn, 64 * 1024);
            buf_init(&sa, 64 * 1024);
            buf_init(&ss, 64 * 1024);
            buf_reset(&joined);
            for (size_t k = 0; k < names.n; k++)
                if (buf_printf(&joined, "%s%s", k ? "," : "", names.v[k]) < 0)
                    break;
            /* a key written in the URL's query is not shown (--json has the URL whole: it
             * names the entry for programs) */
            char *url_shown = url_display(t->server_url);
            printf("%-16s %-24s %-12s %-12s %-7s %-24s %s\n",
                   joined.len ? text_escaped(&sn, buf_str(&joined)) : "-",
                   t->account ? text_escaped(&sa, t->account) : "-", t->label ? t->label : "-", exp,
                   t->refresh_token ? "yes" : "no", t->scope ? text_escaped(&ss, t->scope) : "-",
                   url_shown ? text_escaped(&su, url_shown) : "-");
            free(url_shown);
            buf_release(&su);
            buf_release(&sn);
            buf_release(&sa);
            buf_release(&ss);
        }
    }
    strv_release(&names);
    buf_release(&joined);
    if (json) {
        struct json_object *root = jsonw_answer_new();
        char msg[1200], cmd[1024];
        if (!root) {
            json_object_put(arr);
            return shown;
        }
        (void)json_object_object_add(root, "servers", json_object_get(arr));
        (void)json_object_object_add(root, "store",
                                     json_object_new_string(tokens_backend_str(backend)));
        if (shown == 0 && url) {
            signin_command(tc, cmd, sizeof(cmd));
            (void)snprintf(msg, sizeof(msg), "no sign-in stored for %s", url);
            (void)snprintf(arg_fix, sizeof(arg_fix), "run '%s'", cmd);
            if (jsonw_answer_add_error(root, "login_required", msg, arg_fix) < 0)
                say_error("out of memory");
        }
        arg_answered = true;
        printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_SPACED |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
    } else if (shown == 0) {
        printf("(no sign-ins stored%s%s)\n", url ? " for " : "", url ? url : "");
    }
    if (!json && backend == TOKENS_BACKEND_KEYRING)
        printf("(the tokens are in the keychain: see 'mcp-auth store')\n");
    json_object_put(arr);
    return shown;
}

static const struct option status_opts[] = {
    {"json", no_argument, NULL, 'j'}, {"account", required_argument, NULL, 'a'}, {0}};

static int cmd_status(int argc, char **argv)
{
    const struct option *opts = status_opts;
    bool json = false;
    struct target_ctx tc = {0};
    struct token_entry **all = NULL;
    struct err e = ERR_INIT;
    size_t n = 0;
    int opt, status = EXIT_OK;
    if (args_wants_help(argc, argv)) {
        fputs(status_help, stdout);
        return EXIT_OK;
    }
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'j')
            json = true;
        else if (opt == 'a' && take_account(optarg) != EXIT_OK)
            return EXIT_USAGE;
        else if (opt != 'a')
            return option_error(argv, "", opts);
    }
    if (argc - optind > 1) {
        say_error("status takes at most one SERVER");
        return EXIT_USAGE;
    }
    if (argc - optind == 1)
        status = resolve_target(argv[optind], &tc);
    else if (arg_config)
        status = load_config(&tc, false); /* a --config that names no file is an error here too */
    else
        (void)load_config(&tc, true); /* only to name each sign-in by its entries */
    if (!tc.url)
        tc.t.label = arg_account;
    if (status != EXIT_OK)
        goto out;
    enum tokens_backend backend = TOKENS_BACKEND_FILE;
    if (tokens_store_backend(&backend, &e) < 0 || tokens_list(&all, &n, &e) < 0) {
        say_error("%s", err_msg(&e));
        status = EXIT_FAILED;
        goto out;
    }
    if (e.msg[0])
        say_warn("%s", err_msg(&e));
    if (status_print(all, n, &tc, backend, json) == 0 && tc.url)
        status = EXIT_LOGIN_REQUIRED;
out:
    for (size_t i = 0; i < n; i++)
        token_entry_free(all[i]);
    free(all);
    target_release(&tc);
    return status;
}

static const struct option logout_opts[] = {{"account", required_argument, NULL, 'a'}, {0}};

static int cmd_logout(int argc, char **argv)
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

/* The exit statuses, as the failed answers of the commands given --json name them
 * (docs/json.md) */
static const struct jsonw_status_code json_codes[] = {
    {EXIT_FAILED, "failed", "see the message; run the command again once its cause is gone"},
    {EXIT_USAGE, "usage", NULL}, /* the command's own help, below */
    {EXIT_CONFIG, "config", "correct the mcp.json entry as the message says"},
    {EXIT_LOGIN_REQUIRED, "login_required", "sign in with 'mcp-auth SERVER'"},
    {EXIT_SERVER, "auth_server",
     "try again later; if it lasts, see the message for the authorization server's answer"},
    {EXIT_WANTS_TOKEN, "no_oauth",
     "give the entry a token of its own: \"bearerTokenEnv\": \"NAME\", then 'secrets "
     "configure NAME'"},
};

/* ---- import ---- */

enum { OPT_DIR = 256, OPT_FORCE, OPT_DRY_RUN };
static const struct option import_opts[] = {
    {"dir", required_argument, NULL, OPT_DIR}, {"account", required_argument, NULL, 'a'},
    {"force", no_argument, NULL, OPT_FORCE},   {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"json", no_argument, NULL, 'j'},          {0},
};

struct import_run {
    const char *dir;    /* mcp-remote's */
    struct strv hashes; /* its sign-ins */
    bool *taken;        /* per hash: a server of ours took it */
    bool force, dry_run;
    struct json_object *servers; /* the --json answer's */
    int status;
};

/* The hash of mcp-remote's sign-in for the URL url (as written in the entry, or given): the
 * URL as mcp-remote was given it, which may differ from ours in form; -1 when none. */
static ssize_t find_hash(const struct import_run *ir, const char *url, const char *canonical)
{
    const char *forms[4] = {url, canonical, NULL, NULL};
    char *slash = NULL;
    size_t n = strlen(canonical);
    /* "https://host" is "https://host/" to mcp-remote's URL parser when it was given so */
    if (n && canonical[n - 1] != '/' && asprintf(&slash, "%s/", canonical) >= 0)
        forms[2] = slash;
    ssize_t found = -1;
    for (size_t f = 0; f < ELEMENTSOF(forms) && forms[f] && found < 0; f++) {
        char h[33];
        import_mcp_remote_hash(forms[f], h);
        for (size_t i = 0; i < ir->hashes.n && found < 0; i++)
            if (strcmp(ir->hashes.v[i], h) == 0)
                found = (ssize_t)i;
    }
    free(slash);
    return found;
}

/* Says (and records for --json) what became of one server. */
static void import_report(struct import_run *ir, const struct target_ctx *tc, const char *what,
                          const char *issuer, const struct import_signin *s, const char *reason)
{
    char *shown = url_display(tc->url);
    const char *who = tc->name ? tc->name : shown ? shown : tc->url;
    if (strcmp(what, "failed") == 0)
        say_error("cannot import '%s' from mcp-remote: %s", who, reason);
    else if (!arg_quiet && strcmp(what, "kept") == 0)
        fprintf(stderr, "skipped '%s': %s\n", who, reason);
    else if (!arg_quiet) {
        char exp[64];
        describe_expiry(s->expires_at, exp, sizeof(exp));
        struct buf b;
        buf_init(&b, 64 * 1024);
        fprintf(stderr, "%s '%s'%s%s%s from mcp-remote\n  issuer:  %s\n  expires: %s%s\n",
                strcmp(what, "imported") == 0 ? "imported" : "would import", who,
                tc->t.label ? " as the account '" : "", tc->t.label ? tc->t.label : "",
                tc->t.label ? "'" : "", text_escaped(&b, issuer), exp,
                s->refresh_token ? " (refreshed automatically)" : "");
        buf_release(&b);
    }
    free(shown);
    if (!ir->servers)
        return;
    struct json_object *o = json_object_new_object();
    if (tc->name)
        (void)json_object_object_add(o, "name", json_object_new_string(tc->name));
    (void)json_object_object_add(o, "url", json_object_new_string(tc->url));
    (void)json_object_object_add(o, "label",
                                 tc->t.label ? json_object_new_string(tc->t.label) : NULL);
    (void)json_object_object_add(o, "result", json_object_new_string(what));
    if (issuer)
        (void)json_object_object_add(o, "issuer", json_object_new_string(issuer));
    if (s && strcmp(what, "kept") != 0) {
        if (s->expires_at > 0)
            (void)json_object_object_add(o, "expires_at", json_object_new_int64(s->expires_at));
        (void)json_object_object_add(o, "has_refresh_token",
                                     json_object_new_boolean(s->refresh_token != NULL));
    }
    if (reason)
        (void)json_object_object_add(o, "reason", json_object_new_string(reason));
    (void)json_object_array_add(ir->servers, o);
}

/* Imports mcp-remote's sign-in for tc's server, when it has one (raw: the URL as written). */
static void import_one(struct import_run *ir, const struct target_ctx *tc, const char *raw,
                       bool named)
{
    struct import_signin s = {0};
    struct err e = ERR_INIT;
    char *issuer = NULL;
    enum import_outcome outcome;
    ssize_t i = find_hash(ir, raw, tc->url);
    if (i < 0) {
        if (named) {
            char *shown = path_display(ir->dir);
            char reason[1024];
            (void)snprintf(reason, sizeof(reason), "mcp-remote has no sign-in for it in '%s'",
                           shown ? shown : ir->dir);
            free(shown);
            import_report(ir, tc, "failed", NULL, NULL, reason);
            ir->status = EXIT_LOGIN_REQUIRED;
        }
        return;
    }
    if (ir->taken[i])
        return; /* another entry of the same server and account took it */
    ir->taken[i] = true;
    int r = import_mcp_remote_read(ir->dir, ir->hashes.v[i], &s, &e);
    if (r >= 0 && (redact_add(log_redact(arg_log), "access_token", s.access_token,
                              strlen(s.access_token)) < 0 ||
                   (s.refresh_token && redact_add(log_redact(arg_log), "refresh_token",
                                                  s.refresh_token, strlen(s.refresh_token)) < 0)))
        r = -ENOMEM;
    /* mcp-remote's file is a local problem, not the authorization server's */
    bool local = r < 0;
    if (r >= 0)
        r = import_store(&tc->t, &s, ir->force, ir->dry_run, 0, &outcome, &issuer, &e);
    if (r < 0) {
        import_report(ir, tc, "failed", NULL, NULL, r == -ENOMEM ? "out of memory" : err_msg(&e));
        ir->status = local ? EXIT_FAILED : exit_for(r);
    } else if (outcome == IMPORT_KEPT_NEWER) {
        import_report(ir, tc, "kept", issuer, &s,
                      "the sign-in stored here is newer than mcp-remote's (--force replaces it)");
    } else {
        import_report(ir, tc, outcome == IMPORT_SAVED ? "imported" : "would_import", issuer, &s,
                      NULL);
    }
    free(issuer);
    import_signin_release(&s);
}

/* Every HTTP entry of the configuration, each server and account once. */
static void import_all(struct import_run *ir, struct mcp_config *config)
{
    for (size_t i = 0; i < mcp_config_count(config); i++) {
        const struct mcp_server *sv = mcp_config_at(config, i);
        struct target_ctx tc = {.config = config};
        char *raw = NULL;
        if (sv->error || sv->transport == MCP_TRANSPORT_STDIO || !sv->url ||
            mcp_expand(sv->url, NULL, NULL, &raw, NULL) < 0)
            continue;
        if (target_by_name(sv->name, &tc) == EXIT_OK) {
            tc.t.oauth = tc.oauth;
            tc.t.name = tc.name;
            tc.t.server_url = tc.url;
            tc.t.label = arg_account ? arg_account : tc.oauth->account;
            if (redact_add_url(log_redact(arg_log), tc.url) >= 0)
                import_one(ir, &tc, raw, false);
        }
        secure_free(raw);
        tc.config = NULL; /* shared */
        target_release(&tc);
    }
}

static int cmd_import(int argc, char **argv)
{
    const struct option *opts = import_opts;
    const char *dir_opt = NULL;
    bool json = false;
    struct import_run ir = {.status = EXIT_OK};
    struct target_ctx tc = {0};
    struct err e = ERR_INIT;
    char *dir = NULL;
    int opt, status;
    if (args_wants_help(argc, argv)) {
        fputs(import_help, stdout);
        return EXIT_OK;
    }
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'j')
            json = true;
        else if (opt == OPT_DIR)
            dir_opt = optarg;
        else if (opt == OPT_FORCE)
            ir.force = true;
        else if (opt == OPT_DRY_RUN)
            ir.dry_run = true;
        else if (opt == 'a' && take_account(optarg) != EXIT_OK)
            return EXIT_USAGE;
        else if (opt != 'a')
            return option_error(argv, "", opts);
    }
    if (argc - optind < 1 || argc - optind > 2) {
        say_error("import takes the program to import from, mcp-remote, and at most one SERVER "
                  "(see 'mcp-auth import --help')");
        return EXIT_USAGE;
    }
    if (strcmp(argv[optind], "mcp-remote") != 0) {
        say_error("cannot import from '%s': mcp-auth imports from mcp-remote (see 'mcp-auth "
                  "import --help')",
                  argv[optind]);
        return EXIT_USAGE;
    }
    if (import_mcp_remote_dir(dir_opt, &dir, &e) < 0) {
        say_error("%s", err_msg(&e));
        return EXIT_FAILED;
    }
    ir.dir = dir;
    if (import_mcp_remote_list(dir, &ir.hashes, &e) < 0) {
        say_error("%s", err_msg(&e));
        status = EXIT_FAILED;
        goto out;
    }
    if (!(ir.taken = calloc(ir.hashes.n + 1, sizeof(bool)))) {
        status = EXIT_FAILED;
        goto out;
    }
    if (json)
        ir.servers = json_object_new_array();
    if (argc - optind == 2) {
        const char *arg = argv[optind + 1];
        status = resolve_target(arg, &tc);
        if (status != EXIT_OK)
            goto out;
        char *raw = NULL;
        const struct mcp_server *sv = tc.by_url ? NULL : mcp_config_find(tc.config, arg);
        if (sv && mcp_expand(sv->url, NULL, NULL, &raw, NULL) < 0)
            raw = NULL;
        import_one(&ir, &tc, raw ? raw : tc.by_url ? arg : tc.url, true);
        secure_free(raw);
    } else {
        status = load_config(&tc, false);
        if (status != EXIT_OK)
            goto out;
        import_all(&ir, tc.config);
    }
    /* what no server of ours took: said, so that the user can name its URL */
    struct json_object *unmatched = json ? json_object_new_array() : NULL;
    for (size_t i = 0; argc - optind == 1 && i < ir.hashes.n; i++) {
        if (ir.taken[i])
            continue;
        if (!arg_quiet)
            fprintf(stderr,
                    "skipped mcp-remote's sign-in %s: no HTTP server in the configuration has "
                    "its URL (name the URL: mcp-auth import mcp-remote URL)\n",
                    ir.hashes.v[i]);
        if (unmatched)
            (void)json_object_array_add(unmatched, json_object_new_string(ir.hashes.v[i]));
    }
    if (!arg_quiet && ir.hashes.n == 0) {
        char *shown = path_display(dir);
        fprintf(stderr, "mcp-remote keeps no sign-in in '%s'\n", shown ? shown : dir);
        free(shown);
    }
    if (json) {
        struct json_object *answer = jsonw_answer_new();
        (void)json_object_object_add(answer, "source", json_object_new_string("mcp-remote"));
        (void)json_object_object_add(answer, "dir", json_object_new_string(dir));
        (void)json_object_object_add(answer, "dry_run", json_object_new_boolean(ir.dry_run));
        (void)json_object_object_add(answer, "servers", ir.servers);
        (void)json_object_object_add(answer, "unmatched", unmatched);
        ir.servers = NULL;
        if (ir.status != EXIT_OK) {
            const char *code = NULL;
            for (size_t i = 0; i < ELEMENTSOF(json_codes); i++)
                if (json_codes[i].status == ir.status)
                    code = json_codes[i].code;
            if (jsonw_answer_add_error(answer, code ? code : "failed", log_errors(arg_log), NULL) <
                0)
                ir.status = EXIT_FAILED;
        }
        const char *text = json_object_to_json_string_ext(
            answer, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        printf("%s\n", text);
        (void)fflush(stdout);
        json_object_put(answer);
        arg_answered = true;
    } else {
        json_object_put(unmatched);
    }
    status = ir.status;
out:
    json_object_put(ir.servers);
    free(ir.taken);
    strv_release(&ir.hashes);
    free(dir);
    target_release(&tc);
    return status;
}

/* "store": where the secrets are; "store migrate BACKEND": moves them (tokens_migrate()). */
static int cmd_store(int argc, char **argv)
{
    struct err e = ERR_INIT, warn = ERR_INIT;
    enum tokens_backend b = TOKENS_BACKEND_FILE;
    char *dir = NULL, *disp = NULL;
    size_t moved = 0;
    int status = EXIT_FAILED;
    if (args_wants_help(argc, argv)) {
        fputs(store_help, stdout);
        return EXIT_OK;
    }
    bool migrate = argc >= 2 && strcmp(argv[1], "migrate") == 0;
    if (!(argc == 1 || (migrate && argc == 3)) ||
        (migrate && tokens_backend_from_str(argv[2], &b) < 0)) {
        say_error("usage: mcp-auth store [migrate file|keyring]");
        return EXIT_USAGE;
    }
    if (tokens_dir(false, &dir, &e) < 0) {
        say_error("%s", err_msg(&e));
        goto out;
    }
    disp = path_display(dir);
    if (!migrate) {
        if (tokens_store_backend(&b, &e) < 0) {
            say_error("%s", err_msg(&e));
            goto out;
        }
        printf("%s: the secrets are %s\n", disp ? disp : dir,
               b == TOKENS_BACKEND_KEYRING ? "in the keychain (keyring)" : "in the files (file)");
        status = EXIT_OK;
        goto out;
    }
    if (tokens_migrate(b, &moved, &warn, &e) < 0) {
        say_error("cannot move the token store to the %s (it is as it was): %s",
                  b == TOKENS_BACKEND_KEYRING ? "keychain" : "files", err_msg(&e));
        goto out;
    }
    if (warn.msg[0])
        say_warn("%s", err_msg(&warn));
    /* the outcome is the command's answer, said as login says "signed in" */
    if (arg_quiet)
        ;
    else if (moved == 0)
        fprintf(stderr, "the token store '%s' keeps its secrets in the %s already\n",
                disp ? disp : dir, b == TOKENS_BACKEND_KEYRING ? "keychain" : "files");
    else
        fprintf(stderr, "moved the secrets of %zu sign-in%s to the %s\n", moved,
                moved == 1 ? "" : "s", b == TOKENS_BACKEND_KEYRING ? "keychain" : "files");
    status = EXIT_OK;
out:
    tokens_secrets_forget();
    free(disp);
    free(dir);
    return status;
}

static int cmd_completion(int argc, char **argv);
static int cmd_complete(int argc, char **argv);

typedef int (*command_fn)(int argc, char **argv);
#define FN(f) ((args_fn)(f))
/* The commands: their dispatch, the help's list and the shell completion read this table */
static const struct args_command commands[] = {
    {"login",
     "SERVER [--scope S] [--no-browser] [--paste] [--device-code] [--timeout D] [--allow-http]",
     "sign in (opens the browser)", login_opts, "servers", FN(cmd_login)},
    {"header", "[--json] [--refresh] [--allow-http] [--account NAME] SERVER",
     "print a valid Authorization header, refreshing it first when\n"
     "needed; never prompts (exit 4: sign-in required)",
     header_opts, "servers", FN(cmd_header)},
    {"status", "[--json] [--account NAME] [SERVER]",
     "what is stored: names, account, label, expiry, scopes, refresh\ntoken", status_opts,
     "servers", FN(cmd_status)},
    {"logout", "[--account NAME] SERVER", "delete the tokens here and revoke them at the server",
     logout_opts, "servers", FN(cmd_logout)},
    {"import", "mcp-remote [SERVER] [--dir DIR] [--account NAME] [--force] [--dry-run] [--json]",
     "take over the sign-ins of mcp-remote (its tokens and client)", import_opts, "servers",
     FN(cmd_import)},
    {"store", "[migrate file|keyring]",
     "where the tokens are: files or the keychain; migrate moves\nthem", NULL,
     "store-actions backends", FN(cmd_store)},
    {"completion", "SHELL", "print the completion script for bash, zsh or fish", NULL, "shells",
     FN(cmd_completion)},
    {"help", NULL, NULL, NULL, "commands", NULL},
    {"__complete", NULL, NULL, NULL, NULL, FN(cmd_complete)},
};

static const struct args_tool tool = {
    .prog = "mcp-auth",
    .cmds = commands,
    .n_cmds = ELEMENTSOF(commands),
    .globals = global_opts,
    .first_word = "servers",
    .help_column = 23,
};

static void print_usage(FILE *f)
{
    args_print_usage(&tool, usage_head, usage_tail, f);
}

/* The commands close to word (git's "did you mean", with the synonyms above) into s. */
static void suggest_commands(struct suggest *s, const char *word)
{
    for (size_t i = 0; i < ELEMENTSOF(command_synonyms); i++)
        if (strcasecmp(word, command_synonyms[i].word) == 0)
            suggest_add_as(s, word, command_synonyms[i].command); /* as close as can be */
    for (size_t i = 0; i < ELEMENTSOF(commands); i++)
        if (commands[i].name[0] != '_')
            suggest_add(s, commands[i].name);
}

static int unknown_command(const char *word)
{
    struct suggest s;
    struct buf close;
    suggest_init(&s, word);
    suggest_commands(&s, word);
    buf_init(&close, 4096);
    if (suggest_append(&s, NULL, &close) < 0)
        buf_reset(&close);
    say_error("unknown command '%s'%s (see 'mcp-auth --help')", word, buf_str(&close));
    buf_release(&close);
    suggest_release(&s);
    return EXIT_USAGE;
}

/* "completion SHELL": the script, from the table above. */
static int cmd_completion(int argc, char **argv)
{
    struct err e = ERR_INIT;
    int r = args_completion_command(&tool, "server names", argc, argv, &e);
    if (r < 0)
        say_error("%s", err_msg(&e));
    return r == -EINVAL ? EXIT_USAGE : r < 0 ? EXIT_FAILED : EXIT_OK;
}

/* "__complete KIND": the values the completion scripts ask for, one per line, quietly: the
 * names of the servers mcp-auth signs in to (not the stdio ones), the shells. */
static int cmd_complete(int argc, char **argv)
{
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        (void)dup2(null, STDERR_FILENO);
        (void)close(null);
    }
    if (argc >= 2 && strcmp(argv[1], "servers") == 0) {
        struct target_ctx tc = {0};
        if (load_config(&tc, false) == EXIT_OK)
            for (size_t i = 0; i < mcp_config_count(tc.config); i++) {
                const struct mcp_server *s = mcp_config_at(tc.config, i);
                if (s->transport != MCP_TRANSPORT_STDIO && s->url)
                    printf("%s\n", s->name);
            }
        target_release(&tc);
    } else if (argc >= 2 && strcmp(argv[1], "shells") == 0) {
        printf("bash\nzsh\nfish\n");
    } else if (argc >= 2 && strcmp(argv[1], "store-actions") == 0) {
        printf("migrate\n");
    } else if (argc >= 2 && strcmp(argv[1], "backends") == 0) {
        printf("file\nkeyring\n");
    }
    return EXIT_OK;
}

/* Runs the command named cmd with its arguments (argv[0] is the command). */
static int dispatch(const char *cmd, int sub_argc, char **sub_argv)
{
    char progname[64];
    (void)snprintf(progname, sizeof(progname), "mcp-auth %s", cmd);
    const struct args_command *c = args_command_find(&tool, cmd);
    if (c && c->fn) {
        sub_argv[0] = progname;
        return ((command_fn)c->fn)(sub_argc, sub_argv);
    }
    if (strcmp(cmd, "help") == 0) {
        if (sub_argc > 2) {
            say_error("help takes at most one COMMAND (see 'mcp-auth --help')");
            return EXIT_USAGE;
        }
        /* "mcp-auth help header": header's own help, as "mcp-auth header --help" */
        for (size_t i = 0; sub_argc > 1 && i < ELEMENTSOF(commands); i++) {
            if (strcmp(sub_argv[1], commands[i].name) != 0 || !commands[i].fn)
                continue;
            char help_opt[] = "--help";
            char *help_argv[] = {sub_argv[1], help_opt, NULL};
            return dispatch(sub_argv[1], 2, help_argv);
        }
        if (sub_argc > 1 && strcmp(sub_argv[1], "help") != 0)
            return unknown_command(sub_argv[1]);
        print_usage(stdout);
        return EXIT_OK;
    }
    if (cmd[0] == '-' && !is_login_option(cmd)) {
        /* options alone, and one that is no command's */
        struct suggest s;
        struct buf close;
        const char *word = cmd + strspn(cmd, "-");
        suggest_init(&s, word);
        for (size_t i = 0; global_opts[i].name; i++)
            suggest_add(&s, global_opts[i].name);
        for (size_t i = 0; login_opts[i].name; i++)
            suggest_add(&s, login_opts[i].name);
        buf_init(&close, 4096);
        if (suggest_append(&s, "--", &close) < 0)
            buf_reset(&close);
        say_error("unknown option '%s'%s (see 'mcp-auth --help')", cmd, buf_str(&close));
        buf_release(&close);
        suggest_release(&s);
        return EXIT_USAGE;
    }
    /* "mcp-auth SERVER [options]": login; the server stays in argv as the operand. A word that
     * is no server and reads like a command is a usage error (target_by_name) */
    arg_implicit_login = true;
    char *login_argv[256];
    int n = 0;
    login_argv[n++] = (char *)"mcp-auth login";
    for (int i = 0; i < sub_argc && n < 255; i++)
        login_argv[n++] = sub_argv[i];
    login_argv[n] = NULL;
    return cmd_login(n, login_argv);
}

/* The failed answer of a command given --json: the message is what was said on stderr, the
 * fix the command's own (arg_fix) when it knew one. */
static void json_failed(const char *cmd, int status)
{
    char help[96];
    (void)snprintf(help, sizeof(help), "see 'mcp-auth %.32s --help'", cmd);
    struct buf b, fix;
    buf_init(&b, 64 * 1024);
    buf_init(&fix, 64 * 1024);
    /* the fix may name the server by its URL: redacted as the messages are */
    bool fixed =
        arg_fix[0] && redact_apply(log_redact(arg_log), arg_fix, strlen(arg_fix), &fix) >= 0;
    if (jsonw_status_answer(&b, json_codes, ELEMENTSOF(json_codes), status, log_errors(arg_log),
                            fixed                  ? buf_str(&fix)
                            : status == EXIT_USAGE ? help
                                                   : NULL) >= 0) {
        (void)fflush(stdout);
        (void)write_full(STDOUT_FILENO, b.data, b.len);
    }
    buf_release(&fix);
    buf_release(&b);
}

int main(int argc, char **argv)
{
    struct args_globals g = {0};
    int status;

    (void)secure_harden_process(NULL);
    arg_log = log_new("mcp-auth", STDERR_FILENO);
    if (!arg_log)
        return EXIT_FAILED;
    /* -v, -q and --config anywhere before "--"; a command's own options before the command
     * word too ("mcp-auth --no-browser SERVER"): the command word goes first */
    argc = args_take_globals(argc, argv, true, &g);
    arg_quiet = g.quiet;
    arg_config = g.config;
    log_set_level(arg_log, arg_quiet          ? LOG_ERROR
                           : g.verbosity >= 2 ? LOG_DEBUG
                           : g.verbosity      ? LOG_INFO
                                              : LOG_WARN);
    opterr = 0; /* the commands word getopt's complaints themselves (option_error) */
    if (argc < 2) {
        print_usage(stderr);
        status = EXIT_USAGE;
    } else if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        print_usage(stdout);
        status = EXIT_OK;
    } else if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("mcp-auth (%s) %s\n", PROJECT_NAME_STR, PROJECT_VERSION_STR);
        status = EXIT_OK;
    } else {
        int first = args_tool_first_operand(&tool, argc, argv);
        if (first > 1 && first < argc)
            args_move_first(argv, first);
        optind = 0;
        status = dispatch(argv[1], argc - 1, argv + 1);
        if (status != EXIT_OK && !arg_answered && jsonw_wanted(argc - 1, argv + 1))
            json_failed(argv[1], status);
    }
    tokens_secrets_forget();
    log_free(arg_log);
    return status;
}
