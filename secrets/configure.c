/* configure.c - secrets configure: set up one recipe, guided or by flags.
 *
 * A recipe is saved only after it resolved. For the keychain, the new value is stored first
 * and read back; if anything after that fails, the previous item (or its absence) is restored,
 * so a failed configure leaves both secrets.json and the keychain as they were. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/duration.h"
#include "credkit/jsonfile.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/tty.h"
#include "credkit/util.h"

#include "cli.h"
#include "keychain.h"

static const char configure_help[] =
    "usage: secrets configure NAME [SOURCE] [OPTIONS]\n"
    "\n"
    "Set up how NAME is obtained. The recipe must resolve before it is saved; when it does not,\n"
    "secrets.json and the keychain stay as they were. Without a SOURCE, on a terminal, you are\n"
    "asked step by step.\n"
    "\n"
    "sources:\n"
    "  --keychain          store a value in the OS keychain; the value is read from stdin\n"
    "                      (or typed with echo off on a terminal)\n"
    "  --label LABEL       keychain label to use (default: NAME)\n"
    "  --command CMD       run the shell command CMD; its trimmed stdout is the value\n"
    "  --ttl D             how long a command's value is reused (default 5m; 0 = every time)\n"
    "  --timeout D         how long the command may run (default 10s, at most 10m)\n"
    "  --env VAR           read the environment variable VAR\n"
    "  --file PATH         read the first line of PATH (must be private: chmod 600)\n"
    "  --description TEXT  a note kept with the recipe\n"
    "\n"
    "secret managers (the reference is one argument of the manager's CLI, never a shell\n"
    "command; --ttl and --timeout apply, see 'man secrets' for each default):\n"
    "  --op REF            1Password: op read REF (REF is op://vault/item/field)\n"
    "  --bw ITEM           Bitwarden: bw get password ITEM\n"
    "  --field F           bw: username, uri, totp or notes instead of the password;\n"
    "                      aws: the key F of a JSON secret\n"
    "  --pass PATH         pass: the first line of pass show PATH\n"
    "  --gopass PATH       gopass: the first line of gopass show PATH\n"
    "  --keepassxc DB ENTRY\n"
    "                      KeePassXC: the password of ENTRY in the database DB\n"
    "  --entry ENTRY       the KeePassXC entry (instead of the second argument)\n"
    "  --password-secret NAME\n"
    "                      the secret holding the database password, given to\n"
    "                      keepassxc-cli on stdin (default KEEPASSXC_PASSWORD)\n"
    "  --vault PATH#FIELD  HashiCorp Vault: vault kv get -field=FIELD PATH\n"
    "  --aws ID            AWS Secrets Manager: the SecretString of the secret ID\n"
    "  --gcloud NAME       GCP Secret Manager: the latest version of the secret NAME\n"
    "  --project P         gcloud: the project (default: gcloud's own)\n"
    "\n"
    "durations: 30s, 5m, 8h, 1d, 1h30m; a bare number is seconds\n"
    "\n"
    "examples:\n"
    "  secrets configure GITHUB_TOKEN                       # guided\n"
    "  secrets configure GITHUB_TOKEN --command 'gh auth token' --ttl 8h\n"
    "  printf %s \"$KEY\" | secrets configure OPENAI_API_KEY --keychain\n"
    "  secrets configure AWS_PROFILE --env AWS_PROFILE\n"
    "  secrets configure DB_PASSWORD --file ~/.config/db/password\n"
    "  secrets configure GITHUB_TOKEN --op op://Private/GitHub/token\n"
    "  secrets configure DB_PASSWORD --pass work/db --ttl 1h\n"
    "  secrets configure MAIL_PASSWORD --keepassxc ~/vault.kdbx mail\n";

struct configure_args {
    int kind; /* enum recipe_kind, -1 when not chosen */
    char *arg;
    char *label;
    char *entry, *password, *field, *project; /* the managers' options */
    char *description;
    int64_t ttl_ms;
    int64_t timeout_ms;
    bool have_ttl, have_timeout;
    char *value; /* keychain value, secret */
};

static void configure_args_release(struct configure_args *a)
{
    free(a->arg);
    free(a->label);
    free(a->entry);
    free(a->password);
    free(a->field);
    free(a->project);
    free(a->description);
    secure_free(a->value);
}

static int set_kind(struct cli *c, struct configure_args *a, enum recipe_kind kind, const char *arg)
{
    if (a->kind >= 0) {
        cli_error(c, "choose one source: --keychain, --command, --env, --file or one secret "
                     "manager (--op, --bw, --pass, --gopass, --keepassxc, --vault, --aws, "
                     "--gcloud)");
        return -EINVAL;
    }
    a->kind = (int)kind;
    if (arg) {
        a->arg = strdup(arg);
        if (!a->arg)
            return -ENOMEM;
    }
    return 0;
}

static int parse_duration_opt(struct cli *c, const char *opt, const char *s, int64_t *ret)
{
    if (duration_parse(s, ret) < 0) {
        cli_error(c, "%s: '%s' is not a duration (use e.g. 30s, 5m, 8h, 1h30m or 0)", opt, s);
        return -EINVAL;
    }
    return 0;
}

/* Reads the value for --keychain from stdin: everything, minus one trailing newline. */
static int read_value_stdin(struct cli *c, char **ret)
{
    struct buf b;
    int r = 0;
    buf_init_secret(&b, 1024 * 1024);
    r = cli_read_stdin(&b);
    if (r == -E2BIG)
        cli_error(c, "the value on stdin is larger than 1 MiB");
    else if (r < 0)
        cli_error(c, "cannot read the value from stdin: %s", strerror(-r));
    if (r >= 0) {
        if (b.len && b.data[b.len - 1] == '\n')
            b.data[--b.len] = 0;
        if (b.len && b.data[b.len - 1] == '\r')
            b.data[--b.len] = 0;
        if (b.len == 0) {
            cli_error(c, "no value on stdin: pipe it in, e.g. printf %%s \"$VALUE\" | "
                         "secrets configure NAME --keychain");
            r = -ENODATA;
        } else if (memchr(b.data, 0, b.len)) {
            cli_error(c, "the value on stdin contains a NUL byte");
            r = -EINVAL;
        }
    }
    if (r >= 0) {
        *ret = buf_detach(&b);
        r = *ret ? 0 : -ENOMEM;
    }
    buf_release(&b);
    return r;
}

/* The source, by number or by word. 0 or -ECANCELED. */
static int guided_kind(const char *name, struct configure_args *a)
{
    static const enum recipe_kind kinds[] = {RECIPE_KEYCHAIN, RECIPE_COMMAND, RECIPE_ENV,
                                             RECIPE_FILE};
    static const char *const words[] = {"keychain", "command", "env", "file"};
    fprintf(stderr,
            "How should '%s' be obtained?\n"
            "  1) keychain  store the value in the OS keychain (typed, not shown)\n"
            "  2) command   run a command that prints it (e.g. gh auth token)\n"
            "  3) env       read an environment variable\n"
            "  4) file      read the first line of a private file\n",
            name);
    for (;;) {
        char *answer = NULL;
        int r = tty_prompt("Choose 1-4: ", false, &answer);
        if (r < 0)
            return r;
        int64_t n = 0;
        bool ok = parse_int64(answer, &n) >= 0 && n >= 1 && n <= 4;
        for (int i = 0; !ok && i < 4; i++)
            if (strcmp(answer, words[i]) == 0) {
                n = i + 1;
                ok = true;
            }
        free(answer);
        if (ok) {
            a->kind = (int)kinds[n - 1];
            return 0;
        }
        fprintf(stderr, "please answer 1, 2, 3 or 4\n");
    }
}

static int guided_keychain(const char *name, struct configure_args *a)
{
    for (;;) {
        char prompt[256];
        (void)snprintf(prompt, sizeof(prompt), "Value for %s (input hidden): ", name);
        int r = tty_prompt(prompt, true, &a->value);
        if (r < 0)
            return r;
        if (a->value[0])
            return 0;
        secure_free(a->value);
        a->value = NULL;
        fprintf(stderr, "the value is empty; type it, or press Ctrl-C to cancel\n");
    }
}

static int guided_command(struct cli *c, struct configure_args *a)
{
    char *answer = NULL;
    int r = tty_prompt("Command (run with /bin/sh -c): ", false, &a->arg);
    if (r < 0)
        return r;
    r = tty_prompt("Reuse its value for how long? [5m]: ", false, &answer);
    if (r < 0)
        return r;
    if (answer[0]) {
        r = parse_duration_opt(c, "ttl", answer, &a->ttl_ms);
        a->have_ttl = r >= 0;
    }
    free(answer);
    return r < 0 ? r : 0;
}

static int guided_env(const char *name, struct configure_args *a)
{
    char prompt[256];
    (void)snprintf(prompt, sizeof(prompt), "Environment variable [%s]: ", name);
    int r = tty_prompt(prompt, false, &a->arg);
    if (r < 0)
        return r;
    if (!a->arg[0]) {
        free(a->arg);
        a->arg = strdup(name);
        if (!a->arg)
            return -ENOMEM;
    }
    return 0;
}

/* Asks for the source and what it needs. 0, -ECANCELED, or another error (said). */
static int guided(struct cli *c, const char *name, struct configure_args *a)
{
    int r = guided_kind(name, a);
    if (r < 0)
        return r;
    switch (a->kind) {
    case RECIPE_KEYCHAIN:
        return guided_keychain(name, a);
    case RECIPE_COMMAND:
        return guided_command(c, a);
    case RECIPE_ENV:
        return guided_env(name, a);
    case RECIPE_FILE:
        return tty_prompt("Path of the file: ", false, &a->arg);
    }
    return 0;
}

/* ---- the keychain transaction -------------------------------------------------------------- */

/* A value stored in the keychain for a recipe, with what was there before (to put back). */
struct kc_txn {
    const char *label;
    char *old_value; /* secret */
    bool stored, had_old;
};

/* Stores value under label, remembering the item it replaces. 0, or an error in e. */
static int kc_txn_store(struct cli *c, struct kc_txn *t, const struct recipe *rec,
                        const char *value, struct err *e)
{
    int r;
    if (cli_label_in_use(c->store, rec->arg, rec->name))
        /* one item, two recipes: a new value here would silently change the other one */
        return err_set(e, -EEXIST,
                       "the keychain item '%s' is used by another recipe too: storing a value for "
                       "'%s' would change that one as well; choose another --label",
                       rec->arg, rec->name);
    t->label = rec->arg;
    r = keychain_lookup(rec->arg, &t->old_value, e);
    if (r >= 0)
        t->had_old = true;
    else if (r != -ENOENT)
        return r;
    err_clear(e);
    r = keychain_store(rec->arg, value, e);
    if (r < 0)
        return r;
    t->stored = true;
    return redact_add(log_redact(c->log), rec->name, value, strlen(value));
}

/* Puts the previous item (or its absence) back, when a value was stored. */
static void kc_txn_rollback(struct cli *c, struct kc_txn *t)
{
    struct err e2 = ERR_INIT;
    if (!t->stored)
        return;
    int rr =
        t->had_old ? keychain_store(t->label, t->old_value, &e2) : keychain_delete(t->label, &e2);
    if (rr < 0 && rr != -ENOENT)
        cli_error(c, "could not restore the keychain item '%s': %s", t->label, err_msg(&e2));
}

static void kc_txn_release(struct kc_txn *t)
{
    secure_free(t->old_value);
    *t = (struct kc_txn){0};
}

/* The recipe moved away from an item nothing else uses: do not leave it behind. */
static void drop_old_item(struct cli *c, const char *old_label, const char *name)
{
    struct err e2 = ERR_INIT;
    if (!old_label || cli_label_in_use(c->store, old_label, name))
        return;
    if (keychain_delete(old_label, &e2) < 0 && e2.code != -ENOENT)
        cli_warn(c, "could not delete the old keychain item '%s': %s", old_label, err_msg(&e2));
}

/* ---- apply --------------------------------------------------------------------------------- */

/* The keychain label name's recipe uses now, when the new recipe moves away from it: *ret
 * (caller frees), else NULL. 0 or -ENOMEM. */
static int old_label_of(struct cli *c, const struct recipe *rec, char **ret)
{
    const struct recipe *prev = NULL;
    *ret = NULL;
    if (store_get(c->store, rec->name, &prev, NULL) >= 0 && prev->kind == RECIPE_KEYCHAIN &&
        strcmp(prev->arg, rec->kind == RECIPE_KEYCHAIN ? rec->arg : "") != 0) {
        *ret = strdup(prev->arg);
        if (!*ret)
            return -ENOMEM;
    }
    return 0;
}

/* Resolves the recipe as it will be resolved from now on; a value just stored must come back
 * as it was. */
static int verify(struct cli *c, const struct recipe *rec, const char *value, bool announce,
                  struct err *e)
{
    struct resolved res = {0};
    int r = resolver_run(c->rs, rec, &res, e);
    if (r < 0)
        return r;
    if (value && !secure_streq(res.value, value)) {
        r = err_set(e, -EIO, "the keychain returned a different value than was stored");
    } else if (announce) {
        char mask[64];
        cli_mask(res.value, res.len, mask, sizeof(mask));
        fprintf(stderr, "resolved: %s\n", mask);
    }
    resolved_release(&res);
    return r;
}

/* Saves the recipe into f (secrets.json, locked), with the keychain transaction around it when
 * there is a value to store: on any failure the keychain is put back and nothing is written. */
static int apply(struct cli *c, struct jsonfile *f, struct recipe *rec, const char *value,
                 bool announce)
{
    struct err e = ERR_INIT;
    struct kc_txn t = {0};
    char *old_label = NULL;
    int r = old_label_of(c, rec, &old_label);
    if (r < 0)
        return r;

    if (rec->kind == RECIPE_KEYCHAIN && value)
        r = kc_txn_store(c, &t, rec, value, &e);
    if (r >= 0)
        r = verify(c, rec, value, announce, &e);
    if (r >= 0)
        r = store_set(c->store, rec);
    if (r >= 0)
        r = jsonfile_commit(f, &e);
    if (r < 0) {
        cli_error(c, "%s", e.msg[0] ? err_msg(&e) : strerror(-r));
        kc_txn_rollback(c, &t);
        cli_error(c, "nothing was changed");
    } else {
        drop_old_item(c, old_label, rec->name);
        r = 0;
    }
    kc_txn_release(&t);
    free(old_label);
    return r;
}

/* ---- parse, decide, act -------------------------------------------------------------------- */

enum {
    OPT_LABEL = 256,
    OPT_TTL,
    OPT_TIMEOUT,
    OPT_DESCRIPTION,
    OPT_ENTRY,
    OPT_PASSWORD_SECRET,
    OPT_FIELD,
    OPT_PROJECT,
    /* a manager's flag is OPT_MANAGER + its recipe kind */
    OPT_MANAGER = 512,
};

static int set_string(char **slot, const char *s)
{
    free(*slot);
    *slot = strdup(s);
    return *slot ? 0 : -ENOMEM;
}

/* One option into a. 0, or < 0 (said, except -ENOMEM; 1 for --help, printed). */
static int configure_option(struct cli *c, struct configure_args *a, int opt, const char *arg)
{
    switch (opt) {
    case 'h':
        fputs(configure_help, stdout);
        return 1;
    case 'k':
        return set_kind(c, a, RECIPE_KEYCHAIN, NULL);
    case 'c':
        return set_kind(c, a, RECIPE_COMMAND, arg);
    case 'e':
        return set_kind(c, a, RECIPE_ENV, arg);
    case 'f':
        return set_kind(c, a, RECIPE_FILE, arg);
    case OPT_LABEL:
        return set_string(&a->label, arg);
    case OPT_TTL:
        a->have_ttl = true;
        return parse_duration_opt(c, "--ttl", arg, &a->ttl_ms);
    case OPT_TIMEOUT:
        a->have_timeout = true;
        return parse_duration_opt(c, "--timeout", arg, &a->timeout_ms);
    case OPT_DESCRIPTION:
        return set_string(&a->description, arg);
    case OPT_ENTRY:
        return set_string(&a->entry, arg);
    case OPT_PASSWORD_SECRET:
        return set_string(&a->password, arg);
    case OPT_FIELD:
        return set_string(&a->field, arg);
    case OPT_PROJECT:
        return set_string(&a->project, arg);
    }
    if (opt >= OPT_MANAGER + RECIPE_OP && opt <= OPT_MANAGER + RECIPE_GCLOUD)
        return set_kind(c, a, (enum recipe_kind)(opt - OPT_MANAGER), arg);
    return -EINVAL; /* getopt said what */
}

/* Options that do not go together. A message, or NULL when they agree. */
static const char *configure_conflict(const struct configure_args *a)
{
    if (a->label && a->kind != RECIPE_KEYCHAIN)
        return "--label goes with --keychain";
    bool child = a->kind == RECIPE_COMMAND || RECIPE_IS_MANAGER(a->kind);
    if (a->have_timeout && !child)
        return "--timeout goes with --command or a secret manager";
    if (a->have_timeout && (a->timeout_ms <= 0 || a->timeout_ms > RECIPE_COMMAND_TIMEOUT_MAX))
        return "--timeout must be more than 0 and at most 10m";
    if (a->have_ttl && a->kind >= 0 && !child)
        return "--ttl goes with --command or a secret manager";
    if ((a->entry || a->password) && a->kind != RECIPE_KEEPASSXC)
        return a->entry ? "--entry goes with --keepassxc"
                        : "--password-secret goes with --keepassxc";
    if (a->field && a->kind != RECIPE_BW && a->kind != RECIPE_AWS)
        return "--field goes with --bw or --aws";
    if (a->project && a->kind != RECIPE_GCLOUD)
        return "--project goes with --gcloud";
    return NULL;
}

const struct option configure_options[] = {
    {"keychain", no_argument, NULL, 'k'},
    {"keyring", no_argument, NULL, 'k'},
    {"label", required_argument, NULL, OPT_LABEL},
    {"command", required_argument, NULL, 'c'},
    {"env", required_argument, NULL, 'e'},
    {"file", required_argument, NULL, 'f'},
    {"ttl", required_argument, NULL, OPT_TTL},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"description", required_argument, NULL, OPT_DESCRIPTION},
    {"op", required_argument, NULL, OPT_MANAGER + RECIPE_OP},
    {"bw", required_argument, NULL, OPT_MANAGER + RECIPE_BW},
    {"pass", required_argument, NULL, OPT_MANAGER + RECIPE_PASS},
    {"gopass", required_argument, NULL, OPT_MANAGER + RECIPE_GOPASS},
    {"keepassxc", required_argument, NULL, OPT_MANAGER + RECIPE_KEEPASSXC},
    {"vault", required_argument, NULL, OPT_MANAGER + RECIPE_VAULT},
    {"aws", required_argument, NULL, OPT_MANAGER + RECIPE_AWS},
    {"gcloud", required_argument, NULL, OPT_MANAGER + RECIPE_GCLOUD},
    {"entry", required_argument, NULL, OPT_ENTRY},
    {"password-secret", required_argument, NULL, OPT_PASSWORD_SECRET},
    {"field", required_argument, NULL, OPT_FIELD},
    {"project", required_argument, NULL, OPT_PROJECT},
    {"help", no_argument, NULL, 'h'},
    {0},
};

/* The command line into a and *ret_name (borrowed from argv). -1 to go on, else the exit
 * status (help printed, or the error reported). */
static int configure_parse(struct cli *c, int argc, char **argv, struct configure_args *a,
                           const char **ret_name)
{
    const struct option *opts = configure_options;
    int opt;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (opt == '?')
            return cli_option_error(c, argv, "h", opts);
        int r = configure_option(c, a, opt, optarg);
        if (r > 0)
            return EXIT_OK;
        if (r < 0)
            return EXIT_USAGE;
    }
    /* --keepassxc DB ENTRY: the entry is the argument after NAME */
    if (a->kind == RECIPE_KEEPASSXC && !a->entry && argc - optind == 2) {
        if (set_string(&a->entry, argv[optind + 1]) < 0)
            return EXIT_FAILED;
    } else if (a->kind == RECIPE_KEEPASSXC && !a->entry && argc - optind == 1) {
        cli_error(c, "--keepassxc needs the entry: --keepassxc DB ENTRY");
        return EXIT_USAGE;
    } else if (argc - optind != 1) {
        cli_error(c, "configure takes exactly one NAME (see 'secrets configure --help')");
        return EXIT_USAGE;
    }
    const char *name = argv[optind];
    if (!name_is_valid(name)) {
        cli_error(c,
                  "'%s' is not a valid secret name: use letters, digits and '_', not starting "
                  "with a digit",
                  name);
        return EXIT_USAGE;
    }
    const char *conflict = configure_conflict(a);
    if (conflict) {
        cli_error(c, "%s", conflict);
        return EXIT_USAGE;
    }
    *ret_name = name;
    return -1;
}

/* The keychain value given with --keychain: typed with echo off on a terminal, else stdin. */
static int read_value(struct cli *c, const char *name, struct configure_args *a)
{
    if (!isatty(STDIN_FILENO))
        return read_value_stdin(c, &a->value);
    char prompt[256];
    (void)snprintf(prompt, sizeof(prompt), "Value for %s (input hidden): ", name);
    int r = tty_prompt(prompt, true, &a->value);
    if (r >= 0 && !a->value[0]) {
        cli_error(c, "the value is empty; nothing was changed");
        r = -ENODATA;
    }
    return r;
}

/* Without a source, a person is asked (*ret_guided) and a script told what is missing; a
 * keychain value is read. -1 to go on, else the exit status (reported). */
static int configure_decide(struct cli *c, const char *name, struct configure_args *a,
                            bool *ret_guided)
{
    int r;
    if (a->kind < 0) {
        if (!tty_interactive()) {
            cli_error(c, "configure needs a source: --keychain, --command CMD, --env VAR, "
                         "--file PATH or a secret manager (--op, --bw, --pass, --gopass, "
                         "--keepassxc, --vault, --aws, --gcloud; see 'secrets configure "
                         "--help'), or run it on a terminal to be guided");
            return EXIT_USAGE;
        }
        *ret_guided = true;
        r = guided(c, name, a);
        if (r == -ECANCELED)
            fprintf(stderr, "cancelled; nothing was changed\n");
        if (r < 0)
            return r == -ECANCELED ? 130 : EXIT_FAILED;
    } else if (a->kind == RECIPE_KEYCHAIN) {
        r = read_value(c, name, a);
        if (r < 0)
            return EXIT_FAILED;
    }
    return -1;
}

/* The recipe a describes, checked as a recipe read from the file is. -1 to go on (*ret set),
 * else the exit status. */
static int configure_recipe(struct cli *c, const char *name, const struct configure_args *a,
                            struct recipe **ret)
{
    struct recipe *rec = NULL, *check = NULL;
    struct err e = ERR_INIT;
    int r = recipe_new(name, (enum recipe_kind)a->kind,
                       a->kind == RECIPE_KEYCHAIN ? (a->label ? a->label : name) : a->arg, &rec);
    if (r < 0)
        return EXIT_FAILED;
    if (a->have_ttl)
        rec->ttl_ms = a->ttl_ms;
    if (a->have_timeout)
        rec->timeout_ms = a->timeout_ms;
    char **slots[] = {&rec->description, &rec->entry, &rec->password, &rec->field, &rec->project};
    const char *vals[] = {a->description, a->entry, a->password, a->field, a->project};
    for (size_t i = 0; i < ELEMENTSOF(slots); i++)
        if (vals[i] && !(*slots[i] = strdup(vals[i]))) {
            recipe_free(rec);
            return EXIT_FAILED;
        }
    struct json_object *j = recipe_to_json(rec);
    r = j ? recipe_parse(name, j, &check, &e) : -ENOMEM;
    json_object_put(j);
    recipe_free(check);
    if (r < 0) {
        cli_error(c, "%s", err_msg(&e));
        recipe_free(rec);
        return EXIT_USAGE;
    }
    *ret = rec;
    return -1;
}

/* Parse, decide (asking a person for what is missing), build the recipe, then act: under the
 * lock of secrets.json, resolve it and save it (apply). */
int cmd_configure(struct cli *c, int argc, char **argv)
{
    struct configure_args a = {.kind = -1};
    struct recipe *rec = NULL;
    struct jsonfile *f = NULL;
    const char *name = NULL;
    bool guided_mode = false;

    int status = configure_parse(c, argc, argv, &a, &name);
    if (status < 0)
        status = configure_decide(c, name, &a, &guided_mode);
    if (status < 0)
        status = configure_recipe(c, name, &a, &rec);
    if (status >= 0)
        goto out;

    c->resolve_flags |= RESOLVE_NO_CACHE;
    status = cli_open_locked(c, &f);
    if (status != EXIT_OK)
        goto out;
    if (guided_mode && rec->kind == RECIPE_COMMAND)
        fprintf(stderr, "running the command to test it...\n");
    if (apply(c, f, rec, a.value, guided_mode) < 0) {
        status = EXIT_FAILED;
        goto out;
    }
    /* quiet by default when scripted; a person being guided gets a confirmation */
    char *disp = path_display(c->store_path);
    cli_say(c, guided_mode ? LOG_ERROR : LOG_INFO, "saved '%s' (%s '%s') in '%s'", name,
            recipe_kind_str(rec->kind), rec->arg, disp ? disp : c->store_path);
    free(disp);
    status = EXIT_OK;
out:
    jsonfile_free(f);
    recipe_free(rec);
    configure_args_release(&a);
    return status;
}
