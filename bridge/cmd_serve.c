/* cmd_serve.c - "serve" (aggregate mode) and "connect" (single mode) */
#include "cli.h"

int cmd_serve(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    (void)argc, (void)argv, (void)g;
    log_error(log, "serve: not implemented yet");
    return BRIDGE_EXIT_FAILED;
}

int cmd_connect(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    (void)argc, (void)argv, (void)g;
    log_error(log, "connect: not implemented yet");
    return BRIDGE_EXIT_FAILED;
}
