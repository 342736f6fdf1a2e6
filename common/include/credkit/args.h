/* args.h - command-line conventions the tools share.
 *
 * Every tool takes its global options (-v, -q, and for some --config PATH) before or after
 * the command ("secrets configure X --command C -v"), answers -h/--help anywhere before "--",
 * and passes everything after "--" on untouched (secrets exec's command line). */
#pragma once

#include <stdbool.h>

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
 * options those getopt_long() was given. 0, -ENOMEM, -E2BIG. */
int args_option_error(const char *prog, char *const *argv, const char *shortopts,
                      const struct option *longopts, struct buf *out) _must_check_;

/* The index in argv[1..argc) of the first operand (the command word), skipping options and the
 * separate values of the options named in with_value (NULL-terminated: "--scope", "-H"); argc
 * when there is none before the end or "--". Lets options come before the command too
 * ("mcp-auth --no-browser SERVER"): the caller moves that word first. */
int args_first_operand(int argc, char *const *argv, const char *const *with_value);

/* Moves argv[i] to argv[1], the words between shifted one place right. */
void args_move_first(char **argv, int i);
