/* cmd_remove.c - "secrets remove NAME": the recipe deleted, and the keychain item it alone
 * names */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/suggest.h"
#include "credkit/util.h"

#include "cli.h"
#include "keychain.h"

static const char remove_help[] =
    "usage: secrets remove NAME\n"
    "\n"
    "Delete the recipe for NAME from secrets.json and, for a keychain recipe, its keychain item\n"
    "(unless another recipe uses the same item).\n"
    "\n"
    "example:\n"
    "  secrets remove OLD_TOKEN\n";

/* The keychain item to delete with name's recipe, when it is one and no other recipe uses it:
 * *ret_label (caller frees), else NULL. 0 or -ENOMEM. */
static int remove_label(struct cli *c, const struct recipe *rec, const char *name, char **ret_label)
{
    *ret_label = NULL;
    if (rec->kind != RECIPE_KEYCHAIN)
        return 0;
    /* keep an item another recipe still points at */
    if (cli_label_in_use(c->store, rec->arg, name)) {
        cli_info(c, "keeping keychain item '%s': another recipe uses it", rec->arg);
        return 0;
    }
    *ret_label = strdup(rec->arg);
    return *ret_label ? 0 : -ENOMEM;
}

int cmd_remove(struct cli *c, int argc, char **argv)
{
    struct jsonfile *f = NULL;
    struct err e = ERR_INIT;
    const struct recipe *rec = NULL;
    char *label = NULL;
    int r, status = EXIT_FAILED;

    if (args_wants_help(argc, argv)) {
        fputs(remove_help, stdout);
        return EXIT_OK;
    }
    static const struct option no_opts[] = {{0}};
    while (getopt_long(argc, argv, "", no_opts, NULL) != -1)
        return cli_option_error(c, argv, "", no_opts);
    if (argc - optind != 1)
        return usage_error(c, "remove takes exactly one NAME");
    const char *name = argv[optind];
    if (!name_is_valid(name))
        return usage_error(c, "'%s' is not a valid secret name", name);
    status = cli_open_locked(c, &f);
    if (status != EXIT_OK)
        return status;
    status = EXIT_FAILED;
    r = store_get(c->store, name, &rec, &e);
    if (r == -ENOENT) {
        struct suggest s;
        struct buf close;
        suggest_init(&s, name);
        for (size_t i = 0; i < store_count(c->store); i++)
            suggest_add(&s, store_name(c->store, i));
        buf_init(&close, 4096);
        if (suggest_append(&s, NULL, &close) < 0)
            buf_reset(&close);
        cli_error(c, "'%s' has no recipe%s", name, buf_str(&close));
        buf_release(&close);
        suggest_release(&s);
        goto out;
    }
    if (r >= 0 && remove_label(c, rec, name, &label) < 0)
        goto out;
    err_clear(&e);
    r = store_remove(c->store, name);
    if (r >= 0)
        r = jsonfile_commit(f, &e);
    if (r < 0) {
        cli_error(c, "%s", e.msg[0] ? err_msg(&e) : strerror(-r));
        goto out;
    }
    if (label) {
        err_clear(&e);
        r = keychain_delete(label, &e);
        if (r < 0 && r != -ENOENT) {
            cli_error(c,
                      "removed the recipe, but not its keychain item '%s': %s (delete it later "
                      "with: secret-tool clear label '%s')",
                      label, err_msg(&e), label);
            goto out;
        }
    }
    cli_info(c, "removed '%s'", name);
    status = EXIT_OK;
out:
    free(label);
    jsonfile_free(f);
    return status;
}
