/* args.h - command-line conventions the tools share.
 *
 * Every tool takes its global options (-v, -q, and for some --config PATH) before or after
 * the command ("secrets configure X --command C -v"), and a command's own options before the
 * command word too ("mcp-bridge --json list": the word is moved first); it answers -h/--help
 * anywhere before "--", and passes everything after "--" on untouched (secrets exec's command
 * line). A refused option is worded the same way by the three, with the close ones
 * (suggest.h). Each tool describes its commands in one table (struct args_tool) that its
 * dispatch, its help's list of commands and its shell completion (args_complete.c) read. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "credkit/err.h"
#include "credkit/macro.h"

/* Whether -h or --help appears in argv[1..] before a "--". */
bool args_wants_help(int argc, char **argv);

struct args_globals {
    int verbosity;      /* each -v/--verbose adds one */
    bool quiet;         /* -q/--quiet */
    const char *config; /* --config PATH / --config=PATH, when accept_config */
};

/* Takes the global options out of a command's argv[1..argc) (never past "--"; -v and -q also
 * bundled, "-vv"), compacting the
 * rest in place and NULL-terminating it; returns the new argc. --config is recognised only
 * with accept_config. */
int args_take_globals(int argc, char **argv, bool accept_config, struct args_globals *g);

struct buf;
struct option;

/* The message for the option getopt_long() just refused (it returned '?'; the tools set opterr
 * to 0 so that getopt prints nothing), into out: "unknown option '--jsn'; did you mean
 * '--json'?", "option '--scope' needs a value", "option '--json' takes no value", each followed
 * by " (see 'PROG --help')". prog is the command as typed ("mcp-bridge list"), argv and the
 * options those getopt_long() was given; globals (may be NULL), the tool's options of every
 * command, are suggested too ("--confg": "--config"). 0, -ENOMEM, -E2BIG. */
int args_option_error(const char *prog, char *const *argv, const char *shortopts,
                      const struct option *longopts, const struct option *globals,
                      struct buf *out) _must_check_;

/* Moves argv[i] to argv[1], the words between shifted one place right. */
void args_move_first(char **argv, int i);

/* ---- a tool's command table ----
 *
 * Each tool describes its commands once; its dispatch, its help's list of commands and its
 * shell completion all read that table, so that none of them can name a command or an option
 * the others do not know. */

/* A command's handler, cast to the tool's own function type and back (C allows the round trip
 * through any function pointer type; this one is exempt from -Wcast-function-type). */
typedef void (*args_fn)(void);

struct args_command {
    const char *name;
    const char *args;          /* after the name in the help ("SERVER [--json]"), NULL: none; a '\n'
                          * continues it on the next line as written */
    const char *summary;       /* the help's description, '\n' between its lines; NULL: hidden */
    const struct option *opts; /* the command's getopt_long() options; NULL: none */
    const char *operands;      /* what completes each operand, space-separated ("servers tools"), a
                           * trailing "..." repeating the last ("secrets..."); NULL: none */
    args_fn fn;
};

struct args_tool {
    const char *prog; /* "mcp-bridge" */
    const struct args_command *cmds;
    size_t n_cmds;
    const struct option *globals; /* the options of every command */
    const char *first_word;       /* what completes the first word besides the commands
                                   * ("servers" for "mcp-auth SERVER"); NULL: commands only */
    int help_column;              /* where the help's descriptions start (0-based) */
};

/* The command called name, NULL when none. */
const struct args_command *args_command_find(const struct args_tool *t, const char *name);

/* The index in argv[1..argc) of the first operand (the command word), skipping options and the
 * separate values of the table's options that take one ("--scope S"); argc when there is none
 * before the end or "--". Lets options come before the command too ("mcp-auth --no-browser
 * SERVER"): the caller moves that word first (args_move_first). */
int args_tool_first_operand(const struct args_tool *t, int argc, char *const *argv);

/* Appends the help's list of commands (not the hidden ones), one or more lines each:
 * "  NAME ARGS" and the summary from help_column on (on a line of its own when NAME ARGS does
 * not leave room). 0, -ENOMEM, -E2BIG. */
int args_help_commands(const struct args_tool *t, struct buf *out) _must_check_;

/* Appends the completion script for shell ("bash", "zsh" or "fish") to out: the commands and
 * their options from t, and the operands each completes asked of "PROG __complete KIND
 * [OPERAND...]" (with --config when the command line has one) at each completion. -EINVAL for
 * another shell, -ENOMEM, -E2BIG. */
int args_completion(const struct args_tool *t, const char *shell, struct buf *out) _must_check_;

/* "PROG completion SHELL", the command (argv[0] "completion"): its help, with what the scripts
 * complete besides commands and options ("server names"), or the script on stdout. 0 when
 * printed; -EINVAL (a usage error: no shell, or another one) and -ENOMEM with e saying so. */
int args_completion_command(const struct args_tool *t, const char *what, int argc, char **argv,
                            struct err *e) _must_check_;

/* The tool's help on f: head, the list of commands (args_help_commands()), tail. */
void args_print_usage(const struct args_tool *t, const char *head, const char *tail, FILE *f);
