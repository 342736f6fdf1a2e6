/* main.c - mcp-auth: sign in to MCP servers with OAuth, keep their tokens fresh */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/jsonw.h"
#include "credkit/log.h"
#include "credkit/mcp_config.h"
#include "credkit/redact.h"
#include "credkit/secmem.h"
#include "credkit/suggest.h"
#include "credkit/util.h"
#include "credkit/version.h"

#include "cli.h"
#include "tokens_secrets.h"

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

/* The run's settings and what the commands tell main() (cli.h) */
struct log *arg_log;
const char *arg_config;
bool arg_quiet;
const char *arg_account;
bool arg_answered;
char arg_fix[1200];

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

bool arg_implicit_login;

/* The options of every command */
static const struct option global_opts[] = {
    {"config", required_argument, NULL, 0}, {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},      {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},    {0},
};

/* Reports the option getopt_long() just refused, as getopt would, by the command
 * ("mcp-auth login: unknown option ..."); EXIT_USAGE. */
int option_error(char *const *argv, const char *shortopts, const struct option *opts)
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

/* The exit statuses, as the failed answers of the commands given --json name them
 * (docs/json.md) */
const struct jsonw_status_code json_codes[] = {
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
const size_t json_codes_n = ELEMENTSOF(json_codes);

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
void suggest_commands(struct suggest *s, const char *word)
{
    for (size_t i = 0; i < ELEMENTSOF(command_synonyms); i++)
        if (strcasecmp(word, command_synonyms[i].word) == 0)
            suggest_add_as(s, word, command_synonyms[i].command); /* as close as can be */
    for (size_t i = 0; i < ELEMENTSOF(commands); i++)
        if (commands[i].name[0] != '_')
            suggest_add(s, commands[i].name);
}

int unknown_command(const char *word)
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
    if (jsonw_status_answer(&b, json_codes, json_codes_n, status, log_errors(arg_log),
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
