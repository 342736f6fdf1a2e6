/* cli.h - what mcp-auth's commands share (main.c dispatches; each cmd_*.c holds one command).
 *
 * Every command gets its own argv (argv[0] is "mcp-auth COMMAND", the global options already
 * taken out by args_take_globals) and returns the process exit status (EXIT_*), having said any
 * error itself through say(). cli_target.c turns SERVER into a struct target_ctx (the entry,
 * its URL, oauth settings, account and network settings), cli_common.c holds the messages.
 *
 * The run's settings are the parsed arg_* globals main.c defines, declared here one by one
 * rather than gathered in a struct handed to every function: a process runs one command once,
 * the messages and the target resolution read them at every depth, and a struct would be passed
 * through every call only to reach the same single values (main.c's parsed options are the one
 * global state the house allows, as systemd's arg_*). */
#pragma once

#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/jsonw.h"
#include "credkit/log.h"
#include "credkit/macro.h"

#include "flow.h"

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

/* ---- the run (main.c) ---- */

/* the tool's log: its level from -v/-q, the redaction of every secret seen */
extern struct log *arg_log;
extern const char *arg_config; /* --config PATH; NULL: the layered configuration */
extern bool arg_quiet;
/* --account NAME of login, header, status and logout; NULL: the entry's, else the default */
extern const char *arg_account;
/* --json: the answer is on stdout (even a failed one), else main() writes the error object,
 * with arg_fix when the command knows the exact next step (docs/json.md) */
extern bool arg_answered;
extern char arg_fix[1200];
/* "mcp-auth SERVER": set when the word was taken as login's SERVER without "login" */
extern bool arg_implicit_login;

/* The exit statuses, as the failed answers of the commands given --json name them */
extern const struct jsonw_status_code json_codes[];
extern const size_t json_codes_n;

/* Reports the option getopt_long() just refused, as getopt would, by the command
 * ("mcp-auth login: unknown option ..."); EXIT_USAGE. */
int option_error(char *const *argv, const char *shortopts, const struct option *opts);

struct suggest;
/* The commands close to word (git's "did you mean", with the synonyms) into s. */
void suggest_commands(struct suggest *s, const char *word);
/* Says that word is no command, with the close ones; EXIT_USAGE. */
int unknown_command(const char *word);

/* ---- messages (cli_common.c) ---- */

/* Every message carries text from others: answers of the authorization server (error
 * descriptions, issuers, endpoints), the stored entries, the configuration. It reaches the
 * terminal escaped (textsafe.h), so that none of it can move the cursor, clear the screen or
 * reverse the text around it. */
_printf_(2, 0) void vsay(enum log_level level, const char *fmt, va_list ap);
_printf_(2, 3) void say(enum log_level level, const char *fmt, ...);

#define say_error(...) say(LOG_ERROR, __VA_ARGS__)
#define say_warn(...)  say(LOG_WARN, __VA_ARGS__)
#define say_info(...)  say(LOG_INFO, __VA_ARGS__)

/* The exit status for an error of the flow (docs/exit-codes.md). */
int exit_for(int r);
/* "in 59m", "expired" or "unknown" (expires_at <= 0) into out. */
void describe_expiry(int64_t expires_at, char *out, size_t size);

/* ---- resolving SERVER (cli_target.c) ---- */

struct target_ctx {
    struct mcp_config *config;
    char *url;
    char *name;
    struct oauth_config *oauth; /* the entry's settings; an empty one for a URL without */
    bool by_url;                /* SERVER was given as a URL */
    bool allow_http;            /* the entry's "allowHttp" */
    struct auth_target t;
};

/* Frees what tc holds (its config too: set it NULL first when it is borrowed) and the run's
 * network settings (net.h). */
void target_release(struct target_ctx *tc);
/* Whether two account labels are the same (NULL: the default account). */
bool same_account(const char *a, const char *b);
/* SERVER given as an mcp.json entry name (tc->config loaded): a valid HTTP entry, with its oauth
 * settings, into tc; an exit status, the error said. tc->t is not filled. */
int target_by_name(const char *arg, struct target_ctx *tc);
/* The layered configuration into tc->config, its diagnostics said (not when quiet: a command
 * that only names what it shows by it). An exit status. */
int load_config(struct target_ctx *tc, bool quiet);
/* --account NAME, checked, into arg_account: an exit status. */
int take_account(const char *name);
/* SERVER, a URL or an mcp.json entry name, into tc (tc->t ready for the flow), its network
 * settings taken for the run. An exit status, the error said. */
int resolve_target(const char *arg, struct target_ctx *tc);
/* A plain http:// server on a host that is not loopback refused unless the entry or, for a
 * URL, allow_http (--allow-http) says it may; arg_fix set. An exit status. */
int check_plain_http(const struct target_ctx *tc, bool allow_http);
/* The sign-in command to suggest for tc, as the user would type it, into out. */
void signin_command(const struct target_ctx *tc, char *out, size_t size);

/* ---- the commands: each its options (getopt_long()'s, which main.c's command table also
 * reads for the help and the completion), its own help (--help) ---- */

/* cmd_login.c: "login SERVER" and "SERVER" alone */
extern const struct option login_opts[];
int cmd_login(int argc, char **argv);
/* Whether arg ("--scope", "--scope=S") is one of login's options. */
bool is_login_option(const char *arg);

/* cmd_header.c: "header SERVER" */
extern const struct option header_opts[];
int cmd_header(int argc, char **argv);

/* cmd_status.c: "status [SERVER]" */
extern const struct option status_opts[];
int cmd_status(int argc, char **argv);

/* cmd_logout.c: "logout SERVER" */
extern const struct option logout_opts[];
int cmd_logout(int argc, char **argv);

/* cmd_import.c: "import mcp-remote [SERVER]" */
extern const struct option import_opts[];
int cmd_import(int argc, char **argv);

/* cmd_store.c: "store [migrate file|keyring]" */
int cmd_store(int argc, char **argv);
