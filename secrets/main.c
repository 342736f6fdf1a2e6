/* main.c - secrets: resolve named secrets from recipes in ~/.pi/agent/secrets.json */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/jsonw.h"
#include "credkit/secmem.h"
#include "credkit/suggest.h"
#include "credkit/version.h"

#include "cli.h"

extern char **environ;

/* The soft core-dump limit we started with, put back for `exec`'s command. */
unsigned long long arg_core_soft;

/* The help, around its list of commands (the command table's) */
static const char usage_head[] =
    "usage: secrets [-v|--verbose] [-q|--quiet] COMMAND [ARGS]\n"
    "\n"
    "Resolve named secrets from recipes in ~/.pi/agent/secrets.json (or\n"
    "$PI_CODING_AGENT_DIR/secrets.json): environment variables, the OS keychain,\n"
    "commands (with a TTL), files, secret managers (1Password, Bitwarden, pass, gopass,\n"
    "KeePassXC, Vault, AWS and GCP Secret Manager, with a TTL).\n"
    "\n"
    "commands:\n";

static const char usage_tail[] =
    "\n"
    "options:\n"
    "  -v, --verbose       say more (twice: debug)\n"
    "  -q, --quiet         errors only\n"
    "  -h, --help          this help ('secrets COMMAND --help' for a command)\n"
    "  -V, --version       print the version\n"
    "\n"
    "examples:\n"
    "  secrets configure GITHUB_TOKEN --command 'gh auth token' --ttl 8h\n"
    "  printf %s \"$KEY\" | secrets configure OPENAI_API_KEY --keychain\n"
    "  secrets get GITHUB_TOKEN\n"
    "  secrets resolve --json GITHUB_TOKEN OPENAI_API_KEY\n"
    "  secrets exec GITHUB_TOKEN -- gh repo list\n"
    "\n"
    "exit status: 0 ok, 1 some secret did not resolve, 2 usage error, 3 configuration\n"
    "error; exec: 125/126/127 as env(1), else the command's status. See docs/secrets.md.\n";

/* The options of every command */
static const struct option global_opts[] = {
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {0},
};

int cli_option_error(struct cli *c, char *const *argv, const char *shortopts,
                     const struct option *opts)
{
    struct buf msg;
    buf_init(&msg, 4096);
    struct log *cmd_log = log_new(argv[0], STDERR_FILENO);
    if (cmd_log)
        log_set_level(cmd_log, log_get_level(c->log));
    if (args_option_error(argv[0], argv, shortopts, opts, global_opts, &msg) < 0)
        buf_reset(&msg);
    log_msg(cmd_log ? cmd_log : c->log, LOG_ERROR, "%s",
            msg.len ? buf_str(&msg) : "invalid option");
    log_free(cmd_log);
    buf_release(&msg);
    return EXIT_USAGE;
}

/* ---- main ---- */

static int cmd_help(struct cli *c, int argc, char **argv);
static int cmd_completion(struct cli *c, int argc, char **argv);
static int cmd_complete(struct cli *c, int argc, char **argv);

typedef int (*command_fn)(struct cli *c, int argc, char **argv);
#define FN(f) ((args_fn)(f))
/* The commands: their dispatch, the help's list and the shell completion read this table */
static const struct args_command commands[] = {
    {"configure",
     "NAME [--keychain [--label L] | --command CMD [--ttl D] [--timeout D]\n"
     "                  | --env VAR | --file PATH | --op REF | --bw ITEM | --pass PATH\n"
     "                  | --gopass PATH | --keepassxc DB ENTRY | --vault PATH#FIELD\n"
     "                  | --aws ID | --gcloud NAME]",
     "set up how NAME is obtained (guided on a terminal)", configure_options, "secrets",
     FN(cmd_configure)},
    {"get", "NAME", "print the value of NAME", get_opts, "secrets", FN(cmd_get)},
    {"resolve", "[--json] [--no-cache] NAME...",
     "resolve names; --json prints values and expiry for programs", resolve_opts, "secrets...",
     FN(cmd_resolve)},
    {"list", "[--json] [--no-check]",
     "names, sources, TTLs and whether each resolves (never values)", list_opts, NULL,
     FN(cmd_list)},
    {"remove", "NAME", "delete the recipe (and its keychain item)", NULL, "secrets",
     FN(cmd_remove)},
    {"exec", "[NAME...] -- CMD [ARGS...]", "run CMD with the secrets in its environment", NULL,
     "secrets...", FN(cmd_exec)},
    {"help", "[COMMAND]", "this help, or COMMAND's (as 'secrets COMMAND --help')", NULL, "commands",
     FN(cmd_help)},
    {"completion", "SHELL", "print the completion script for bash, zsh or fish", NULL, "shells",
     FN(cmd_completion)},
    {"__complete", NULL, NULL, NULL, NULL, FN(cmd_complete)},
};

static const struct args_tool tool = {
    .prog = "secrets",
    .cmds = commands,
    .n_cmds = ELEMENTSOF(commands),
    .globals = global_opts,
    .help_column = 22,
};

static void print_usage(FILE *f)
{
    args_print_usage(&tool, usage_head, usage_tail, f);
}

/* "completion SHELL": the script, from the table above. */
static int cmd_completion(struct cli *c, int argc, char **argv)
{
    struct err e = ERR_INIT;
    int r = args_completion_command(&tool, "the names of secrets.json's recipes (never a value)",
                                    argc, argv, &e);
    if (r < 0)
        cli_error(c, "%s", err_msg(&e));
    return r == -EINVAL ? EXIT_USAGE : r < 0 ? EXIT_FAILED : EXIT_OK;
}

/* "__complete KIND": the values the completion scripts ask for, one per line, quietly: the
 * recipes' names (read from secrets.json, nothing resolved), the shells. */
static int cmd_complete(struct cli *c, int argc, char **argv)
{
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        (void)dup2(null, STDERR_FILENO);
        (void)close(null);
    }
    if (argc >= 2 && strcmp(argv[1], "secrets") == 0) {
        struct err e = ERR_INIT;
        if (cli_paths(c) == EXIT_OK && store_load(c->store_path, &c->store, &e) >= 0)
            for (size_t i = 0; i < store_count(c->store); i++)
                printf("%s\n", store_name(c->store, i));
    } else if (argc >= 2 && strcmp(argv[1], "shells") == 0) {
        printf("bash\nzsh\nfish\n");
    }
    return EXIT_OK;
}

static int unknown_command(struct cli *c, const char *word, const char *why)
{
    struct suggest s;
    struct buf close;
    suggest_init(&s, word);
    for (size_t i = 0; i < ELEMENTSOF(commands); i++)
        if (commands[i].name[0] != '_')
            suggest_add(&s, commands[i].name);
    buf_init(&close, 4096);
    if (suggest_append(&s, NULL, &close) < 0)
        buf_reset(&close);
    int status =
        usage_error(c, "unknown command '%s'%s%s", word, close.len ? "" : why, buf_str(&close));
    buf_release(&close);
    suggest_release(&s);
    return status;
}

/* An option before any command that is no option of the tool's: the close ones of all. */
static int unknown_option(struct cli *c, const char *arg)
{
    struct suggest s;
    struct buf close;
    suggest_init(&s, arg + strspn(arg, "-"));
    for (size_t i = 0; i <= ELEMENTSOF(commands); i++) {
        const struct option *o = i == ELEMENTSOF(commands) ? global_opts : commands[i].opts;
        for (; o && o->name; o++)
            suggest_add(&s, o->name);
    }
    buf_init(&close, 4096);
    if (suggest_append(&s, "--", &close) < 0)
        buf_reset(&close);
    int status = usage_error(c, "unknown option '%s'%s", arg, buf_str(&close));
    buf_release(&close);
    suggest_release(&s);
    return status;
}

/* "secrets help": the usage; "secrets help get": get's own help, as "secrets get --help". */
static int cmd_help(struct cli *c, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        print_usage(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
        if (strcmp(argv[1], commands[i].name) != 0 || commands[i].fn == FN(cmd_help) ||
            commands[i].name[0] == '_')
            continue;
        char progname[64], help_opt[] = "--help";
        (void)snprintf(progname, sizeof(progname), "secrets %s", commands[i].name);
        char *help_argv[] = {progname, help_opt, NULL};
        optind = 0;
        return ((command_fn)commands[i].fn)(c, 2, help_argv);
    }
    if (strcmp(argv[1], "help") == 0) {
        print_usage(stdout);
        return EXIT_OK;
    }
    return unknown_command(c, argv[1], ": there is no help for it");
}

/* The exit statuses of the commands that take --json, as their failed answers name them
 * (docs/json.md) */
static const struct jsonw_status_code json_codes[] = {
    {EXIT_FAILED, "failed",
     "see the message; 'secrets list' shows each recipe and why it does not "
     "resolve"},
    {EXIT_USAGE, "usage", NULL}, /* the command's own help, below */
    {EXIT_CONFIG, "config",
     "correct secrets.json or the agent directory as the message says: "
     "nothing is changed until then"},
};

/* The failed answer of a command given --json: the message is what was said on stderr. */
static void json_failed(struct log *log, const char *cmd, int status)
{
    char help[96];
    (void)snprintf(help, sizeof(help), "see 'secrets %.32s --help'", cmd);
    struct buf b;
    buf_init(&b, 64 * 1024);
    if (jsonw_status_answer(&b, json_codes, ELEMENTSOF(json_codes), status, log_errors(log),
                            status == EXIT_USAGE ? help : NULL) >= 0) {
        (void)fflush(stdout);
        write_out(b.data, b.len);
    }
    buf_release(&b);
}

int main(int argc, char **argv)
{
    struct cli c = {0};
    int status;

    if (secure_harden_process(&arg_core_soft) < 0)
        arg_core_soft = 0;
    c.log = log_new("secrets", STDERR_FILENO);
    if (!c.log)
        return EXIT_FAILED;
    /* -v and -q anywhere before "--" ("secrets configure X --command C -v"; never past "--":
     * those belong to exec's CMD), and a command's own options before the command word too
     * ("secrets --json resolve X"): the command word goes first */
    struct args_globals g = {0};
    argc = args_take_globals(argc, argv, false, &g);
    if (argc < 2) {
        print_usage(stderr);
        log_free(c.log);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
        if (argv[1][1] == 'h' || argv[1][2] == 'h')
            print_usage(stdout);
        else
            printf("secrets (%s) %s\n", PROJECT_NAME_STR, PROJECT_VERSION_STR);
        log_free(c.log);
        return EXIT_OK;
    }
    int first = args_tool_first_operand(&tool, argc, argv);
    if (first > 1 && first < argc)
        args_move_first(argv, first);
    const char *cmd = argv[1];
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    log_set_level(c.log, g.quiet            ? LOG_ERROR
                         : g.verbosity >= 2 ? LOG_DEBUG
                         : g.verbosity      ? LOG_INFO
                                            : LOG_WARN);
    opterr = 0; /* the commands word getopt's complaints themselves (cli_option_error) */
    char progname[64];
    (void)snprintf(progname, sizeof(progname), "secrets %s", cmd);
    sub_argv[0] = progname; /* getopt's own messages then read "secrets get: ..." */
    optind = 0; /* each command parses its own options from its own argv (0: full reset) */

    const struct args_command *found = args_command_find(&tool, cmd);
    command_fn fn = found ? (command_fn)found->fn : NULL;
    if (!fn && cmd[0] == '-')
        status = unknown_option(&c, cmd);
    else
        status = fn ? fn(&c, sub_argc, sub_argv) : unknown_command(&c, cmd, "");

    if (status != EXIT_OK && !c.answered && jsonw_wanted(sub_argc, sub_argv))
        json_failed(c.log, cmd, status);
    cli_close(&c);
    log_free(c.log);
    return status;
}
