/* args.h - command-line conventions the tools share.
 *
 * Every tool takes its global options (-v, -q, and for some --config PATH) before or after
 * the command ("secrets configure X --command C -v"), answers -h/--help anywhere before "--",
 * and passes everything after "--" on untouched (secrets exec's command line). */
#pragma once

#include <stdbool.h>

/* Whether -h or --help appears in argv[1..] before a "--". */
bool args_wants_help(int argc, char **argv);

struct args_globals {
    int verbosity;      /* each -v/--verbose adds one */
    bool quiet;         /* -q/--quiet */
    const char *config; /* --config PATH / --config=PATH, when accept_config */
};

/* Takes the global options out of a command's argv[1..argc) (never past "--"), compacting the
 * rest in place and NULL-terminating it; returns the new argc. --config is recognised only
 * with accept_config. */
int args_take_globals(int argc, char **argv, bool accept_config, struct args_globals *g);
