/* cmd_complete.c - "mcp-bridge __complete KIND [OPERAND...]": the values the completion scripts
 * ask for, one per line, read from the user's files only (never a server connected): the
 * configured server names, and a server's tool names from the metadata cache. Quiet: a file
 * that cannot be read completes nothing, and says nothing on the terminal being typed in. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "credkit/json.h"
#include "credkit/mcp_config.h"
#include "credkit/util.h"

#include "cli/cli.h"
#include "downstream/meta_cache.h"

static void print_servers(const struct args_globals *g, struct log *log)
{
    struct mcp_config *c = cli_load_config(g, log);
    for (size_t i = 0; i < mcp_config_count(c); i++)
        printf("%s\n", mcp_config_at(c, i)->name);
    mcp_config_free(c);
}

/* The tools the metadata cache holds for server (any agent's lists, not expired). */
static void print_tools(const char *server)
{
    struct meta_cache *mc = NULL;
    struct err e = ERR_INIT;
    if (meta_cache_open(NULL, &mc, &e) < 0)
        return;
    struct json_object *lists = meta_cache_peek(mc, server, now_unix() * 1000);
    struct json_object *tools = json_get_array(lists, "tools");
    for (size_t i = 0; i < json_object_array_length(tools); i++) {
        const char *name = json_get_string(json_object_array_get_idx(tools, i), "name");
        if (name && !strpbrk(name, " \t\n"))
            printf("%s\n", name);
    }
    meta_cache_free(mc);
}

int cmd_complete(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        (void)dup2(null, STDERR_FILENO);
        (void)close(null);
    }
    if (argc < 2)
        return BRIDGE_EXIT_USAGE;
    if (strcmp(argv[1], "servers") == 0)
        print_servers(g, log);
    else if (strcmp(argv[1], "tools") == 0 && argc > 2)
        print_tools(argv[2]);
    else if (strcmp(argv[1], "shells") == 0)
        printf("bash\nzsh\nfish\n");
    else if (strcmp(argv[1], "agents") == 0)
        printf("claude-code\ncursor\nvscode\ncodex\nclaude-desktop\npi\n");
    return BRIDGE_EXIT_OK;
}
