/* cmd_config.c - stubs so that the executable links; replaced by the real commands */
#include "cli.h"

int cmd_list(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    (void)argc, (void)argv, (void)g;
    log_error(log, "list: not implemented yet");
    return BRIDGE_EXIT_FAILED;
}

int cmd_add(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    (void)argc, (void)argv, (void)g;
    log_error(log, "add: not implemented yet");
    return BRIDGE_EXIT_FAILED;
}

int cmd_remove(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    (void)argc, (void)argv, (void)g;
    log_error(log, "remove: not implemented yet");
    return BRIDGE_EXIT_FAILED;
}
