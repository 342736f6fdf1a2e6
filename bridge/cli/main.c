/* main.c - mcp-bridge: serve the MCP servers of the layered mcp.json files as one, over stdio */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/jsonw.h"
#include "credkit/log.h"
#include "credkit/secmem.h"
#include "credkit/suggest.h"
#include "credkit/util.h"
#include "credkit/version.h"

#include "cli/cli.h"

/* The help, around its list of commands (the command table's) */
static const char usage_head[] =
    "usage: mcp-bridge [OPTIONS] [serve] [--connect-timeout D]\n"
    "       mcp-bridge [OPTIONS] COMMAND [ARGS]\n"
    "\n"
    "An MCP server over stdio that serves the MCP servers of your mcp.json files as one. Run\n"
    "it as the agent's MCP server (Claude Code, Cursor, pi ...): every server's tools appear\n"
    "as mcp_<server>_<tool>. SERVER is a server name from mcp.json, or a URL.\n"
    "\n"
    "commands:\n";

static const char usage_tail[] =
    "\n"
    "options:\n"
    "  --config PATH        read this file instead of ~/.pi/agent/mcp.json\n"
    "  --mcp-config PATH    the same (the pi adapter's name for it)\n"
    "  -v, --verbose        say more (twice: debug, every message exchanged)\n"
    "  -q, --quiet          errors only\n"
    "  -h, --help           this help ('mcp-bridge COMMAND --help' for a command)\n"
    "  -V, --version        print the version\n"
    "\n"
    "configuration, lowest to highest priority: the bundled file, ~/.config/mcp/mcp.json,\n"
    "~/.pi/agent/mcp.json (or --config), .mcp.json and .pi/mcp.json in the working directory\n"
    "(the project's: used once approved with 'mcp-bridge trust').\n"
    "\n"
    "examples:\n"
    "  mcp-bridge                               # what the agent runs\n"
    "  mcp-bridge test github\n"
    "  mcp-bridge call github search_issues '{\"query\": \"bridge\"}'\n"
    "  mcp-bridge connect https://mcp.example.com/mcp --header 'Authorization: Bearer ${TOKEN}'\n"
    "  mcp-bridge install claude-code           # register it in Claude Code\n"
    "\n"
    "credentials: ${NAME} is asked of 'secrets' (a recipe, else the environment), OAuth of\n"
    "'mcp-auth', at each connect; CREDKIT_SECRETS and CREDKIT_MCP_AUTH name the helpers.\n"
    "\n"
    "exit status: 0 ok, 1 the server failed (could not connect, the call failed), 2 usage\n"
    "error, 3 configuration error (server or tool not found, or invalid), 4 the tool reported an\n"
    "error, 6 the server needs a sign-in (the message names the command). See docs/bridge.md.\n";

static int usage_error(struct log *log, const char *what)
{
    log_error(log, "%s (see 'mcp-bridge --help')", what);
    return BRIDGE_EXIT_USAGE;
}

/* "--mcp-config PATH" / "--mcp-config=PATH", the pi adapter's name for --config, rewritten to
 * --config in place, so that it is accepted wherever --config is (before or after the command)
 * and the last of the two wins. */
static void take_mcp_config(int argc, char **argv)
{
    static char config_opt[] = "--config";
    static const char mcp_config[] = "--mcp-config";
    const size_t k = sizeof(mcp_config) - 1;
    bool past_dashes = false;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        past_dashes |= strcmp(a, "--") == 0;
        if (!past_dashes && strcmp(a, mcp_config) == 0)
            argv[i] = config_opt;
        else if (!past_dashes && strncmp(a, mcp_config, k) == 0 && a[k] == '=')
            /* "--mcp-config=PATH" -> "--config=PATH": the same string, 4 bytes shorter */
            memmove(a + 2, a + 6, strlen(a + 6) + 1);
    }
}

typedef int (*cmd_fn)(int, char **, const struct args_globals *, struct log *);
static int cmd_completion(int argc, char **argv, const struct args_globals *g, struct log *log);

#define FN(f) ((args_fn)(f))
/* The commands: their dispatch, the help's list and the shell completion read this table */
static const struct args_command commands[] = {
    {"serve", NULL, "serve every configured server on stdin/stdout (the default)",
     cli_serve_options, NULL, FN(cmd_serve)},
    {"connect", "SERVER [--header 'Name: value']... [--bridge-eras]",
     "serve one server as it is, names and protocol era unchanged\n"
     "(replaces 'npx mcp-remote URL')",
     cli_connect_options, "servers", FN(cmd_connect)},
    {"test", "SERVER [--json]", "connect, list the tools, disconnect", cli_client_options,
     "servers", FN(cmd_test)},
    {"call", "SERVER TOOL [JSON-ARGS] [--json] [--timeout D]", "call one tool and print its result",
     cli_client_options, "servers tools", FN(cmd_call)},
    {"list", NULL,
     "the configured servers, where they come from, their problems,\n"
     "the credentials each needs and their state",
     cli_list_options, NULL, FN(cmd_list)},
    {"add", NULL, "add a server (guided on a terminal, or by flags)", cli_add_options, NULL,
     FN(cmd_add)},
    {"remove", "SERVER", "remove a server from its file", cli_remove_options, "servers",
     FN(cmd_remove)},
    {"doctor", "[--json] [--no-connect]",
     "check the helpers, secrets, files, servers and agents, and say\n"
     "how to fix each problem",
     cli_doctor_options, NULL, FN(cmd_doctor)},
    {"trust", "[--project DIR] [--yes] [--revoke]",
     "review and approve the servers a project's files define: they\n"
     "are not used until approved (a changed one needs it again)",
     cli_trust_options, NULL, FN(cmd_trust)},
    {"reload", NULL,
     "make every running 'mcp-bridge serve' of yours reload its\n"
     "configuration now (they apply a changed file by themselves)",
     cli_reload_options, NULL, FN(cmd_reload)},
    {"install", "AGENT [--scope user|project] [--dry-run] [--json]",
     "register the bridge with claude-code, cursor, vscode, codex,\n"
     "claude-desktop or pi, its servers moved behind it",
     cli_install_options, "agents", FN(cmd_install)},
    {"uninstall", "AGENT", "undo it: the agent's servers back, the bridge's entry gone",
     cli_install_options, "agents", FN(cmd_uninstall)},
    {"completion", "SHELL", "print the completion script for bash, zsh or fish", NULL, "shells",
     FN(cmd_completion)},
    {"help", NULL, NULL, NULL, "commands", NULL},
    {"__complete", NULL, NULL, NULL, NULL, FN(cmd_complete)},
};

static const struct args_tool tool = {
    .prog = "mcp-bridge",
    .cmds = commands,
    .n_cmds = sizeof(commands) / sizeof(commands[0]),
    .globals = cli_global_options,
    .help_column = 23,
};

bool cli_command_line_serves(int argc, char *const *argv)
{
    int first = args_tool_first_operand(&tool, argc, argv);
    return first >= argc || strcmp(argv[first], "serve") == 0;
}

static void print_usage(void)
{
    args_print_usage(&tool, usage_head, usage_tail, stdout);
}

/* "completion SHELL": the script, from the table above. */
static int cmd_completion(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    struct err e = ERR_INIT;
    (void)g;
    int r = args_completion_command(&tool,
                                    "server names, agent names and a server's tool names (from\n"
                                    "the metadata cache, never connecting)",
                                    argc, argv, &e);
    if (r < 0)
        log_error(log, "%s", err_msg(&e));
    return r == -EINVAL ? BRIDGE_EXIT_USAGE : r < 0 ? BRIDGE_EXIT_FAILED : BRIDGE_EXIT_OK;
}

static int unknown_command(struct log *log, const char *cmd)
{
    struct suggest s;
    struct buf msg;
    suggest_init(&s, cmd);
    for (size_t i = 0; i < tool.n_cmds; i++)
        if (commands[i].name[0] != '_')
            suggest_add(&s, commands[i].name);
    buf_init(&msg, 4096);
    int r = buf_printf(&msg, "unknown command '%.64s'", cmd);
    if (r >= 0)
        r = suggest_append(&s, NULL, &msg);
    int status = usage_error(log, r >= 0 ? buf_str(&msg) : "unknown command");
    buf_release(&msg);
    suggest_release(&s);
    return status;
}

/* The exit statuses, as the failed answers of the commands given --json name them
 * (docs/json.md) */
static const struct jsonw_status_code json_codes[] = {
    {BRIDGE_EXIT_FAILED, "failed",
     "see the message: it says why the server failed, with the last lines it wrote on its "
     "stderr"},
    {BRIDGE_EXIT_USAGE, "usage", NULL}, /* the command's own help, below */
    {BRIDGE_EXIT_CONFIG, "config",
     "correct the entry or the file the message names ('mcp-bridge list' shows every entry and "
     "why it is not used)"},
    {BRIDGE_EXIT_TOOL_ERROR, "tool_error", NULL},
    {BRIDGE_EXIT_LOGIN_REQUIRED, "login_required",
     "sign in with the command the message names ('mcp-auth NAME')"},
};

/* The failed answer of a command given --json: the message is what was said on stderr. */
static void json_failed(struct log *log, const char *cmd, int status)
{
    char help[96];
    (void)snprintf(help, sizeof(help), "see 'mcp-bridge %.32s --help'", cmd);
    struct buf b;
    buf_init(&b, 64 * 1024);
    if (jsonw_status_answer(&b, json_codes, ELEMENTSOF(json_codes), status, log_errors(log),
                            status == BRIDGE_EXIT_USAGE ? help : NULL) >= 0) {
        (void)fflush(stdout);
        (void)write_full(STDOUT_FILENO, b.data, b.len);
    }
    buf_release(&b);
}

int main(int argc, char **argv)
{
    struct args_globals g = {0};
    struct log *log;
    int status;

    /* the agent may go away at any moment: a write to its closed pipe must be an error to
     * handle (EPIPE), not the end of the process */
    (void)signal(SIGPIPE, SIG_IGN);
    (void)secure_harden_process(NULL);
    log = log_new("mcp-bridge", STDERR_FILENO);
    if (!log)
        return BRIDGE_EXIT_FAILED;

    /* global options may come before or after the command ("mcp-bridge test x -v") */
    take_mcp_config(argc, argv);
    argc = args_take_globals(argc, argv, true, &g); /* -vv, -qv bundled too */
    /* and so may a command's own ("mcp-bridge --json list"): the command word goes first */
    int first = args_tool_first_operand(&tool, argc, argv);
    if (first > 1 && first < argc)
        args_move_first(argv, first);
    opterr = 0; /* the commands word getopt's complaints themselves (cli_option_error) */
    log_set_level(log, g.quiet            ? LOG_ERROR
                       : g.verbosity >= 2 ? LOG_DEBUG
                       : g.verbosity      ? LOG_INFO
                                          : LOG_WARN);

    const char *cmd = argc > 1 ? argv[1] : NULL;
    /* "mcp-bridge help call": the command's own help (the vector lives as long as main) */
    static char help_opt[] = "--help";
    char *help_argv[] = {argv[0], argc > 2 ? argv[2] : NULL, help_opt, NULL};
    if (cmd && strcmp(cmd, "help") == 0 && argc > 2) {
        argc = 3;
        argv = help_argv;
        cmd = argv[1];
    }
    if (cmd && (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0)) {
        print_usage();
        status = BRIDGE_EXIT_OK;
        goto out;
    }
    if (cmd &&
        (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0)) {
        printf("mcp-bridge (%s) %s\n", PROJECT_NAME_STR, PROJECT_VERSION_STR);
        status = BRIDGE_EXIT_OK;
        goto out;
    }
    if (!cmd || cmd[0] == '-') {
        /* no command: serve, with whatever options follow ("mcp-bridge --connect-timeout 5s") */
        char progname[] = "mcp-bridge serve";
        argv[0] = progname;
        optind = 0;
        status = cmd_serve(argc, argv, &g, log);
        goto out;
    }
    const struct args_command *c = args_command_find(&tool, cmd);
    if (c && c->fn) {
        char progname[64];
        (void)snprintf(progname, sizeof(progname), "mcp-bridge %s", cmd);
        argv[1] = progname; /* the commands' messages then read "mcp-bridge call: ..." */
        optind = 0;         /* each command parses its own argv (0: full reset) */
        status = ((cmd_fn)c->fn)(argc - 1, argv + 1, &g, log);
        /* serve and connect speak the protocol on stdout; call's isError is its answer, and
         * so is doctor's report of the problems it found */
        if (status != BRIDGE_EXIT_OK && status != BRIDGE_EXIT_TOOL_ERROR &&
            !(status == BRIDGE_EXIT_FAILED && strcmp(cmd, "doctor") == 0) &&
            strcmp(cmd, "serve") != 0 && strcmp(cmd, "connect") != 0 &&
            jsonw_wanted(argc - 1, argv + 1))
            json_failed(log, cmd, status);
        goto out;
    }
    status = unknown_command(log, cmd);
out:
    /* output cut short (a full disk, a reader gone) must not look like success */
    if ((fflush(stdout) != 0 || ferror(stdout)) && status == BRIDGE_EXIT_OK) {
        log_error(log, "cannot write to stdout: %s", strerror(errno));
        status = BRIDGE_EXIT_FAILED;
    }
    log_free(log);
    return status;
}
