/* cmd_client.c - "test" and "call": one-shot clients of one server */
#include "cli.h"

int cmd_test(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    (void)argc, (void)argv, (void)g;
    log_error(log, "test: not implemented yet");
    return BRIDGE_EXIT_FAILED;
}

int cmd_call(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    (void)argc, (void)argv, (void)g;
    log_error(log, "call: not implemented yet");
    return BRIDGE_EXIT_FAILED;
}
