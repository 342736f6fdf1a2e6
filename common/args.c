/* args.c - command-line conventions the tools share */
#include <string.h>

#include "credkit/args.h"

bool args_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return true;
    }
    return false;
}

int args_take_globals(int argc, char **argv, bool accept_config, struct args_globals *g)
{
    int w = 1;
    bool past_dashes = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        past_dashes |= strcmp(a, "--") == 0;
        if (past_dashes)
            argv[w++] = argv[i];
        else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0)
            g->verbosity++;
        else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0)
            g->quiet = true;
        else if (accept_config && strcmp(a, "--config") == 0 && i + 1 < argc)
            g->config = argv[++i];
        else if (accept_config && strncmp(a, "--config=", 9) == 0)
            g->config = a + 9;
        else
            argv[w++] = argv[i];
    }
    argv[w] = NULL;
    return w;
}
