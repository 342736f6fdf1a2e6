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
    "durations: 30s, 5m, 8h, 1d, 1h30m; a bare number is seconds\n"
    "\n"
    "examples:\n"
    "  secrets configure GITHUB_TOKEN                       # guided\n"
    "  secrets configure GITHUB_TOKEN --command 'gh auth token' --ttl 8h\n"
    "  printf %s \"$KEY\" | secrets configure OPENAI_API_KEY --keychain\n"
    "  secrets configure AWS_PROFILE --env AWS_PROFILE\n"
    "  secrets configure DB_PASSWORD --file ~/.config/db/password\n";

struct configure_args {
    int kind; /* enum recipe_kind, -1 when not chosen */
    char *arg;
    char *label;
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
    free(a->description);
    secure_free(a->value);
}

static int set_kind(struct cli *c, struct configure_args *a, enum recipe_kind kind, const char *arg)
{
    if (a->kind >= 0) {
        log_error(c->log, "choose one source: --keychain, --command, --env or --file");
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
        log_error(c->log, "%s: '%s' is not a duration (use e.g. 30s, 5m, 8h, 1h30m or 0)", opt, s);
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
    for (;;) {
        char chunk[4096];
        ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = -errno;
            break;
        }
        if (n == 0)
            break;
        r = buf_append(&b, chunk, (size_t)n);
        secure_wipe(chunk, sizeof(chunk));
        if (r < 0)
            break;
    }
    if (r == -E2BIG)
        log_error(c->log, "the value on stdin is larger than 1 MiB");
    else if (r < 0)
        log_error(c->log, "cannot read the value from stdin: %s", strerror(-r));
    if (r >= 0) {
        if (b.len && b.data[b.len - 1] == '\n')
            b.data[--b.len] = 0;
        if (b.len && b.data[b.len - 1] == '\r')
            b.data[--b.len] = 0;
        if (b.len == 0) {
            log_error(c->log, "no value on stdin: pipe it in, e.g. printf %%s \"$VALUE\" | "
                              "secrets configure NAME --keychain");
            r = -ENODATA;
        } else if (memchr(b.data, 0, b.len)) {
            log_error(c->log, "the value on stdin contains a NUL byte");
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

static int guided(struct cli *c, const char *name, struct configure_args *a)
{
    char *answer = NULL;
    int r;

    fprintf(stderr,
            "How should '%s' be obtained?\n"
            "  1) keychain  store the value in the OS keychain (typed, not shown)\n"
            "  2) command   run a command that prints it (e.g. gh auth token)\n"
            "  3) env       read an environment variable\n"
            "  4) file      read the first line of a private file\n",
            name);
    for (;;) {
        r = tty_prompt("Choose 1-4: ", false, &answer);
        if (r < 0)
            return r;
        int64_t n = 0;
        bool ok = parse_int64(answer, &n) >= 0 && n >= 1 && n <= 4;
        if (!ok) {
            static const char *const words[] = {"keychain", "command", "env", "file"};
            for (int i = 0; i < 4; i++)
                if (strcmp(answer, words[i]) == 0) {
                    n = i + 1;
                    ok = true;
                }
        }
        free(answer);
        answer = NULL;
        if (ok) {
            static const enum recipe_kind kinds[] = {RECIPE_KEYCHAIN, RECIPE_COMMAND, RECIPE_ENV,
                                                     RECIPE_FILE};
            a->kind = (int)kinds[n - 1];
            break;
        }
        fprintf(stderr, "please answer 1, 2, 3 or 4\n");
    }

    switch (a->kind) {
    case RECIPE_KEYCHAIN:
        for (;;) {
            char prompt[256];
            (void)snprintf(prompt, sizeof(prompt), "Value for %s (input hidden): ", name);
            r = tty_prompt(prompt, true, &a->value);
            if (r < 0)
                return r;
            if (a->value[0])
                break;
            secure_free(a->value);
            a->value = NULL;
            fprintf(stderr, "the value is empty; type it, or press Ctrl-C to cancel\n");
        }
        break;
    case RECIPE_COMMAND:
        r = tty_prompt("Command (run with /bin/sh -c): ", false, &a->arg);
        if (r < 0)
            return r;
        r = tty_prompt("Reuse its value for how long? [5m]: ", false, &answer);
        if (r < 0)
            return r;
        if (answer[0]) {
            r = parse_duration_opt(c, "ttl", answer, &a->ttl_ms);
            free(answer);
            if (r < 0)
                return r;
            a->have_ttl = true;
        } else {
            free(answer);
        }
        break;
    case RECIPE_ENV: {
        char prompt[256];
        (void)snprintf(prompt, sizeof(prompt), "Environment variable [%s]: ", name);
        r = tty_prompt(prompt, false, &a->arg);
        if (r < 0)
            return r;
        if (!a->arg[0]) {
            free(a->arg);
            a->arg = strdup(name);
            if (!a->arg)
                return -ENOMEM;
        }
        break;
    }
    case RECIPE_FILE:
        r = tty_prompt("Path of the file: ", false, &a->arg);
        if (r < 0)
            return r;
        break;
    }
    return 0;
}

/* Saves the recipe, with the keychain transaction around it when there is a value to store. */
static int apply(struct cli *c, struct recipe *rec, const char *value, bool announce)
{
    struct err e = ERR_INIT;
    struct resolved res = {0};
    char *old_value = NULL, *old_label = NULL;
    bool stored = false, had_old = false;
    const struct recipe *prev = NULL;
    int r;

    if (store_get(c->store, rec->name, &prev, NULL) >= 0 && prev->kind == RECIPE_KEYCHAIN &&
        strcmp(prev->arg, rec->kind == RECIPE_KEYCHAIN ? rec->arg : "") != 0) {
        old_label = strdup(prev->arg);
        if (!old_label)
            return -ENOMEM;
    }

    if (rec->kind == RECIPE_KEYCHAIN && value && cli_label_in_use(c->store, rec->arg, rec->name)) {
        /* one item, two recipes: a new value here would silently change the other one */
        r = err_set(&e, -EEXIST,
                    "the keychain item '%s' is used by another recipe too: storing a value for "
                    "'%s' would change that one as well; choose another --label",
                    rec->arg, rec->name);
        goto fail;
    }
    if (rec->kind == RECIPE_KEYCHAIN && value) {
        r = keychain_lookup(rec->arg, &old_value, &e);
        if (r >= 0)
            had_old = true;
        else if (r != -ENOENT)
            goto fail;
        err_clear(&e);
        r = keychain_store(rec->arg, value, &e);
        if (r < 0)
            goto fail;
        stored = true;
        r = redact_add(log_redact(c->log), rec->name, value, strlen(value));
        if (r < 0)
            goto fail;
    }

    r = resolver_run(c->rs, rec, &res, &e);
    if (r < 0)
        goto fail;
    if (value && !secure_streq(res.value, value)) {
        r = err_set(&e, -EIO, "the keychain returned a different value than was stored");
        goto fail;
    }
    if (announce) {
        char mask[64];
        cli_mask(res.value, res.len, mask, sizeof(mask));
        fprintf(stderr, "resolved: %s\n", mask);
    }
    r = store_set(c->store, rec);
    if (r >= 0)
        r = store_save(c->store, &e);
    if (r < 0)
        goto fail;

    /* the recipe moved away from an item nothing else uses: do not leave it behind */
    if (old_label && !cli_label_in_use(c->store, old_label, rec->name)) {
        struct err e2 = ERR_INIT;
        if (keychain_delete(old_label, &e2) < 0 && e2.code != -ENOENT)
            log_warn(c->log, "could not delete the old keychain item '%s': %s", old_label,
                     err_msg(&e2));
    }
    r = 0;
    goto out;

fail:
    log_error(c->log, "%s", e.msg[0] ? err_msg(&e) : strerror(-r));
    if (stored) {
        struct err e2 = ERR_INIT;
        int rr =
            had_old ? keychain_store(rec->arg, old_value, &e2) : keychain_delete(rec->arg, &e2);
        if (rr < 0 && rr != -ENOENT)
            log_error(c->log, "could not restore the keychain item '%s': %s", rec->arg,
                      err_msg(&e2));
    }
    log_error(c->log, "nothing was changed");
out:
    resolved_release(&res);
    secure_free(old_value);
    free(old_label);
    return r;
}

int cmd_configure(struct cli *c, int argc, char **argv)
{
    enum { OPT_LABEL = 256, OPT_TTL, OPT_TIMEOUT, OPT_DESCRIPTION };
    static const struct option opts[] = {
        {"keychain", no_argument, NULL, 'k'},
        {"keyring", no_argument, NULL, 'k'},
        {"label", required_argument, NULL, OPT_LABEL},
        {"command", required_argument, NULL, 'c'},
        {"env", required_argument, NULL, 'e'},
        {"file", required_argument, NULL, 'f'},
        {"ttl", required_argument, NULL, OPT_TTL},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"description", required_argument, NULL, OPT_DESCRIPTION},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    struct configure_args a = {.kind = -1};
    struct recipe *rec = NULL;
    struct file_lock *lock = NULL;
    struct err e = ERR_INIT;
    const char *name = NULL;
    bool guided_mode = false;
    int opt, r, status = EXIT_USAGE;

    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(configure_help, stdout);
            status = EXIT_OK;
            goto out;
        case 'k':
            r = set_kind(c, &a, RECIPE_KEYCHAIN, NULL);
            break;
        case 'c':
            r = set_kind(c, &a, RECIPE_COMMAND, optarg);
            break;
        case 'e':
            r = set_kind(c, &a, RECIPE_ENV, optarg);
            break;
        case 'f':
            r = set_kind(c, &a, RECIPE_FILE, optarg);
            break;
        case OPT_LABEL:
            free(a.label);
            a.label = strdup(optarg);
            r = a.label ? 0 : -ENOMEM;
            break;
        case OPT_TTL:
            r = parse_duration_opt(c, "--ttl", optarg, &a.ttl_ms);
            a.have_ttl = true;
            break;
        case OPT_TIMEOUT:
            r = parse_duration_opt(c, "--timeout", optarg, &a.timeout_ms);
            a.have_timeout = true;
            break;
        case OPT_DESCRIPTION:
            free(a.description);
            a.description = strdup(optarg);
            r = a.description ? 0 : -ENOMEM;
            break;
        default:
            goto out;
        }
        if (r < 0)
            goto out;
    }
    if (argc - optind != 1) {
        log_error(c->log, "configure takes exactly one NAME (see 'secrets configure --help')");
        goto out;
    }
    name = argv[optind];
    if (!name_is_valid(name)) {
        log_error(c->log,
                  "'%s' is not a valid secret name: use letters, digits and '_', not starting "
                  "with a digit",
                  name);
        goto out;
    }
    if (a.label && a.kind != RECIPE_KEYCHAIN) {
        log_error(c->log, "--label goes with --keychain");
        goto out;
    }
    if (a.have_timeout && a.kind != RECIPE_COMMAND) {
        log_error(c->log, "--timeout goes with --command");
        goto out;
    }
    if (a.have_timeout && (a.timeout_ms <= 0 || a.timeout_ms > RECIPE_COMMAND_TIMEOUT_MAX)) {
        log_error(c->log, "--timeout must be more than 0 and at most 10m");
        goto out;
    }
    if (a.have_ttl && a.kind >= 0 && a.kind != RECIPE_COMMAND) {
        log_error(c->log, "--ttl goes with --command");
        goto out;
    }

    if (a.kind < 0) {
        if (!tty_interactive()) {
            log_error(c->log, "configure needs a source: --keychain, --command CMD, --env VAR or "
                              "--file PATH (or run it on a terminal to be guided)");
            goto out;
        }
        guided_mode = true;
        r = guided(c, name, &a);
        if (r < 0) {
            status = r == -ECANCELED ? 130 : EXIT_FAILED;
            if (r == -ECANCELED)
                fprintf(stderr, "cancelled; nothing was changed\n");
            goto out;
        }
    } else if (a.kind == RECIPE_KEYCHAIN) {
        if (isatty(STDIN_FILENO)) {
            char prompt[256];
            (void)snprintf(prompt, sizeof(prompt), "Value for %s (input hidden): ", name);
            r = tty_prompt(prompt, true, &a.value);
            if (r >= 0 && !a.value[0]) {
                log_error(c->log, "the value is empty; nothing was changed");
                r = -ENODATA;
            }
        } else {
            r = read_value_stdin(c, &a.value);
        }
        if (r < 0) {
            status = EXIT_FAILED;
            goto out;
        }
    }

    status = EXIT_FAILED;
    r = recipe_new(name, (enum recipe_kind)a.kind,
                   a.kind == RECIPE_KEYCHAIN ? (a.label ? a.label : name) : a.arg, &rec);
    if (r < 0)
        goto out;
    if (a.have_ttl)
        rec->ttl_ms = a.ttl_ms;
    if (a.have_timeout)
        rec->timeout_ms = a.timeout_ms;
    if (a.description) {
        rec->description = strdup(a.description);
        if (!rec->description)
            goto out;
    }
    /* the same checks a recipe read from the file gets */
    {
        struct json_object *j = recipe_to_json(rec);
        struct recipe *check = NULL;
        r = j ? recipe_parse(name, j, &check, &e) : -ENOMEM;
        json_object_put(j);
        recipe_free(check);
        if (r < 0) {
            log_error(c->log, "%s", err_msg(&e));
            status = EXIT_USAGE;
            goto out;
        }
    }

    r = path_agent_file("secrets.json", &c->store_path, &e);
    if (r >= 0)
        r = store_lock(c->store_path, &lock, &e);
    if (r < 0) {
        log_error(c->log, "%s", err_msg(&e));
        status = EXIT_CONFIG;
        goto out;
    }
    free(c->store_path);
    c->store_path = NULL;
    c->resolve_flags |= RESOLVE_NO_CACHE;
    status = cli_open(c);
    if (status != EXIT_OK)
        goto out;
    if (guided_mode && rec->kind == RECIPE_COMMAND)
        fprintf(stderr, "running the command to test it...\n");
    r = apply(c, rec, a.value, guided_mode);
    if (r < 0) {
        status = EXIT_FAILED;
        goto out;
    }
    /* quiet by default when scripted; a person being guided gets a confirmation */
    {
        char *disp = path_display(c->store_path);
        log_msg(c->log, guided_mode ? LOG_ERROR : LOG_INFO, "saved '%s' (%s '%s') in '%s'", name,
                recipe_kind_str(rec->kind), rec->arg, disp ? disp : c->store_path);
        free(disp);
    }
    status = EXIT_OK;
out:
    file_lock_release(lock);
    recipe_free(rec);
    configure_args_release(&a);
    return status;
}
