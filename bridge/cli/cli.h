/* cli.h - mcp-bridge's commands (main.c dispatches; each cmd_*.c holds one family).
 *
 * Every command gets its own argv (argv[0] is the command name, global options already taken
 * out by args_take_globals), the global options, and the tool's log; it returns the process
 * exit status (BRIDGE_EXIT_*), having reported any error itself. */
#pragma once

#include <getopt.h>
#include <stdint.h>

#include "credkit/args.h"
#include "credkit/log.h"
#include "credkit/macro.h"

/* Exit statuses, documented in docs/bridge.md and docs/exit-codes.md */
enum {
    BRIDGE_EXIT_OK = 0,
    BRIDGE_EXIT_FAILED = 1,     /* the server failed: could not connect, the call failed */
    BRIDGE_EXIT_USAGE = 2,      /* bad command line */
    BRIDGE_EXIT_CONFIG = 3,     /* bad or missing configuration (entry not found, invalid) */
    BRIDGE_EXIT_TOOL_ERROR = 4, /* call: the tool answered with isError */
    /* 5 is mcp-auth's (the authorization server or the network failed) */
    BRIDGE_EXIT_LOGIN_REQUIRED = 6, /* test, call: the server needs a sign-in (upstream -ENOKEY) */
};

/* Each command's options (getopt_long()'s), which main.c's command table also reads: its help
 * and completion name no option the parser does not take. */
/* the options of every command (--config, -v ...) */
extern const struct option cli_global_options[];
extern const struct option cli_serve_options[], cli_connect_options[], cli_client_options[],
    cli_list_options[], cli_add_options[], cli_remove_options[], cli_trust_options[],
    cli_doctor_options[], cli_install_options[], cli_reload_options[];

/* cmd_serve.c: "serve" (aggregate) and "connect NAME|URL" (single mode) */
int cmd_serve(int argc, char **argv, const struct args_globals *g, struct log *log);
int cmd_connect(int argc, char **argv, const struct args_globals *g, struct log *log);

/* cmd_client.c: "test NAME|URL" and "call NAME|URL TOOL [JSON]" */
int cmd_test(int argc, char **argv, const struct args_globals *g, struct log *log);
int cmd_call(int argc, char **argv, const struct args_globals *g, struct log *log);

/* cmd_config.c: "list", "add", "remove NAME" */
int cmd_list(int argc, char **argv, const struct args_globals *g, struct log *log);
int cmd_add(int argc, char **argv, const struct args_globals *g, struct log *log);
int cmd_remove(int argc, char **argv, const struct args_globals *g, struct log *log);

/* cmd_trust.c: "trust [--project DIR] [--yes] [--revoke] [--json]" */
int cmd_trust(int argc, char **argv, const struct args_globals *g, struct log *log);

/* main.c: whether the mcp-bridge command line argv[0..argc) serves, as main() reads it (its
 * command is serve, or it names none): from the command table, so a new command is never taken
 * for a serve */
bool cli_command_line_serves(int argc, char *const *argv);

/* cmd_reload.c: "reload": SIGHUP to every running mcp-bridge serve of this user */
int cmd_reload(int argc, char **argv, const struct args_globals *g, struct log *log);

/* cmd_doctor.c: "doctor [--json] [--no-connect] [--connect-timeout D]" */
int cmd_doctor(int argc, char **argv, const struct args_globals *g, struct log *log);

/* cmd_install.c: "install AGENT" and "uninstall AGENT" [--scope user|project] [--dry-run]
 * [--json] */
int cmd_install(int argc, char **argv, const struct args_globals *g, struct log *log);
int cmd_uninstall(int argc, char **argv, const struct args_globals *g, struct log *log);

/* cmd_common.c: shared by the commands */
struct mcp_config;
/* Loads the layered configuration as every command sees it: --config, the project layers of
 * the working directory, and the bundled layer ($CREDKIT_BRIDGE_BUNDLED, else
 * <prefix>/share/credkit/mcp.json next to the binary, else none). Reports errors through log
 * and returns NULL on failure (the caller exits BRIDGE_EXIT_CONFIG); file diagnostics are
 * logged as warnings. The secrets of every entry (header and env values as written, the values
 * of the ${VAR}s of url, headers and env) are registered with the log's redaction, so that no
 * message of the process prints them; cli_config_for() does the same. */
struct mcp_config *cli_load_config(const struct args_globals *g, struct log *log);
/* The same with the project layers of cwd (absolute; NULL: none) instead of the working
 * directory's. The project's entries are inert until approved (trust.h: "mcp-bridge trust"):
 * each of them is invalid with the reason, and its ${VAR}s are never looked up. */
struct mcp_config *cli_load_config_at(const struct args_globals *g, struct log *log,
                                      const char *cwd);
/* A duration option ("--timeout 30s"): a positive duration into *ret_ms, else reported
 * ("OPT: 'ARG' is not a positive duration") and -EINVAL (the caller exits BRIDGE_EXIT_USAGE). */
int cli_parse_duration(const char *opt, const char *arg, struct log *log,
                       int64_t *ret_ms) _must_check_;
/* Reports the option getopt_long() just refused (argv[0] is the command as typed, "mcp-bridge
 * list"; args_option_error() words it, with the close options) and returns BRIDGE_EXIT_USAGE. */
int cli_option_error(struct log *log, char *const *argv, const char *shortopts,
                     const struct option *opts);
/* Whether the SERVER argument is a URL rather than an entry's name. */
bool cli_is_url(const char *target);

/* cli_config_for()'s flags */
enum {
    CLI_ALLOW_HTTP = 1 << 0, /* --allow-http: the URL's entry says "allowHttp": true */
};

/* A one-entry configuration for NAME|URL: an http(s) URL becomes an entry named after its host
 * (with the given "Name: value" headers, templates allowed; CLI_ALLOW_HTTP as "allowHttp"),
 * anything else is looked up by name in the layered configuration (headers and CLI_ALLOW_HTTP
 * are then usage errors: they belong in the entry). NULL (reported) when not found or
 * invalid. *ret_name gets the entry's name (borrowed from the returned config). */
struct mcp_config *cli_config_for(const char *target, const char *const *headers, unsigned flags,
                                  const struct args_globals *g, struct log *log,
                                  const char **ret_name);

/* cmd_complete.c: "__complete KIND [OPERAND...]", the values shell completion asks for */
int cmd_complete(int argc, char **argv, const struct args_globals *g, struct log *log);
/* The exit status when cli_config_for(target) failed: BRIDGE_EXIT_USAGE for a URL that is no
 * http(s) URL at all (an invalid argument, as for mcp-auth), else BRIDGE_EXIT_CONFIG. */
int cli_config_for_failed(const char *target);
