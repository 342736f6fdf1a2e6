/* cmd_store.c - "mcp-auth store [migrate file|keyring]": where the token store keeps its
 * secrets, and moving them to the other backend */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/args.h"
#include "credkit/log.h"
#include "credkit/path.h"

#include "cli.h"
#include "tokens.h"
#include "tokens_secrets.h"

static const char store_help[] =
    "usage: mcp-auth store [migrate file|keyring]\n"
    "\n"
    "Say where the token store keeps its secrets (the tokens, client secrets): in its files\n"
    "under ~/.pi/agent/oauth/ (file) or in one item of the OS keychain, the Secret Service\n"
    "(keyring), the rest staying in the files. 'migrate' moves every secret of the store to\n"
    "the other backend in one step: until it has succeeded, the old backend holds every token.\n"
    "A new store chooses by MCP_AUTH_STORE (auto, file or keyring; auto, the default, takes\n"
    "the keychain when a Secret Service runs); an existing one stays where it is until moved.\n"
    "\n"
    "examples:\n"
    "  mcp-auth store\n"
    "  mcp-auth store migrate keyring\n";

/* "store": where the secrets are; "store migrate BACKEND": moves them (tokens_migrate()). */
int cmd_store(int argc, char **argv)
{
    struct err e = ERR_INIT, warn = ERR_INIT;
    enum tokens_backend b = TOKENS_BACKEND_FILE;
    char *dir = NULL, *disp = NULL;
    size_t moved = 0;
    int status = EXIT_FAILED;
    if (args_wants_help(argc, argv)) {
        fputs(store_help, stdout);
        return EXIT_OK;
    }
    bool migrate = argc >= 2 && strcmp(argv[1], "migrate") == 0;
    if (!(argc == 1 || (migrate && argc == 3)) ||
        (migrate && tokens_backend_from_str(argv[2], &b) < 0)) {
        say_error("usage: mcp-auth store [migrate file|keyring]");
        return EXIT_USAGE;
    }
    if (tokens_dir(false, &dir, &e) < 0) {
        say_error("%s", err_msg(&e));
        goto out;
    }
    disp = path_display(dir);
    if (!migrate) {
        if (tokens_store_backend(&b, &e) < 0) {
            say_error("%s", err_msg(&e));
            goto out;
        }
        printf("%s: the secrets are %s\n", disp ? disp : dir,
               b == TOKENS_BACKEND_KEYRING ? "in the keychain (keyring)" : "in the files (file)");
        status = EXIT_OK;
        goto out;
    }
    if (tokens_migrate(b, &moved, &warn, &e) < 0) {
        say_error("cannot move the token store to the %s (it is as it was): %s",
                  b == TOKENS_BACKEND_KEYRING ? "keychain" : "files", err_msg(&e));
        goto out;
    }
    if (warn.msg[0])
        say_warn("%s", err_msg(&warn));
    /* the outcome is the command's answer, said as login says "signed in" */
    if (arg_quiet)
        ;
    else if (moved == 0)
        fprintf(stderr, "the token store '%s' keeps its secrets in the %s already\n",
                disp ? disp : dir, b == TOKENS_BACKEND_KEYRING ? "keychain" : "files");
    else
        fprintf(stderr, "moved the secrets of %zu sign-in%s to the %s\n", moved,
                moved == 1 ? "" : "s", b == TOKENS_BACKEND_KEYRING ? "keychain" : "files");
    status = EXIT_OK;
out:
    tokens_secrets_forget();
    free(disp);
    free(dir);
    return status;
}
