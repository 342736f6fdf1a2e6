/* cmd_exec.c - "secrets exec [NAME...] -- CMD": CMD run with the secrets in its environment,
 * never on a command line */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "credkit/args.h"
#include "credkit/child.h"
#include "credkit/util.h"

#include "cli.h"

static const char exec_help[] =
    "usage: secrets exec [NAME...] -- CMD [ARGS...]\n"
    "\n"
    "Resolve the NAMEs (all recipes when none is given) and run CMD with each one in its\n"
    "environment as NAME=value. Values never appear on a command line. Nothing runs unless\n"
    "every name resolves.\n"
    "\n"
    "exit status: CMD's own, or 125 when a secret did not resolve, 126 when CMD cannot be\n"
    "run, 127 when it is not found\n"
    "\n"
    "examples:\n"
    "  secrets exec GITHUB_TOKEN -- gh repo list\n"
    "  secrets exec -- make deploy\n";

int cmd_exec(struct cli *c, int argc, char **argv)
{
    int dash = -1, r;
    char **env = NULL;

    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            dash = i;
            break;
        }
    if (dash < 0 && args_wants_help(argc, argv)) {
        fputs(exec_help, stdout);
        return EXIT_OK;
    }
    if (dash < 0 || dash + 1 >= argc) {
        (void)usage_error(c, "exec needs '-- CMD' after the names");
        return EXIT_EXEC_SELF;
    }
    for (int i = 1; i < dash; i++)
        if (!name_is_valid(argv[i])) {
            (void)usage_error(c, "'%s' is not a valid secret name", argv[i]);
            return EXIT_EXEC_SELF;
        }
    r = cli_open(c);
    if (r != EXIT_OK)
        return EXIT_EXEC_SELF;
    if (child_env_inherit(&env) < 0)
        return EXIT_EXEC_SELF;

    size_t count = dash > 1 ? (size_t)(dash - 1) : store_count(c->store);
    bool failed = false;
    for (size_t i = 0; i < count; i++) {
        const char *name = dash > 1 ? argv[1 + i] : store_name(c->store, i);
        struct err e = ERR_INIT;
        struct resolved res = {0};
        if (resolver_get(c->rs, name, &res, &e) < 0) {
            cli_error(c, "%s", err_msg(&e));
            failed = true;
            continue;
        }
        if (child_env_set(&env, name, res.value) < 0)
            failed = true;
        resolved_release(&res);
    }
    if (failed) {
        cli_error(c, "not running '%s': some secrets did not resolve", argv[dash + 1]);
        child_env_free(env);
        return EXIT_EXEC_SELF;
    }
    cli_close(c);
    (void)fflush(NULL);
    /* our no-core-dump limit is for us, not for the command: it gets the one we found */
    struct rlimit rl;
    if (getrlimit(RLIMIT_CORE, &rl) == 0) {
        rl.rlim_cur = (rlim_t)arg_core_soft;
        if (rl.rlim_cur > rl.rlim_max)
            rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_CORE, &rl);
    }
    execvpe(argv[dash + 1], argv + dash + 1, env);
    r = errno;
    child_env_free(env);
    cli_error(c, "cannot run '%s': %s", argv[dash + 1], strerror(r));
    return r == ENOENT ? EXIT_EXEC_NOTFOUND : EXIT_EXEC_CANNOT;
}
