/* main.c - secrets: resolve named secrets from recipes in ~/.pi/agent/secrets.json */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "credkit/args.h"
#include "credkit/child.h"
#include "credkit/duration.h"
#include "credkit/file.h"
#include "credkit/helper_answer.h"
#include "credkit/jsonw.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/suggest.h"
#include "credkit/redact.h"
#include "credkit/textsafe.h"
#include "credkit/util.h"
#include "credkit/version.h"

#include "cli.h"
#include "keychain.h"
#include "request.h"

extern char **environ;

/* The soft core-dump limit we started with, put back for `exec`'s command. */
static unsigned long long arg_core_soft;

/* The help, around its list of commands (the command table's) */
static const char usage_head[] =
    "usage: secrets [-v|--verbose] [-q|--quiet] COMMAND [ARGS]\n"
    "\n"
    "Resolve named secrets from recipes in ~/.pi/agent/secrets.json (or\n"
    "$PI_CODING_AGENT_DIR/secrets.json): environment variables, the OS keychain,\n"
    "commands (with a TTL), files, secret managers (1Password, Bitwarden, pass, gopass,\n"
    "KeePassXC, Vault, AWS and GCP Secret Manager, with a TTL).\n"
    "\n"
    "commands:\n";

static const char usage_tail[] =
    "\n"
    "options:\n"
    "  -v, --verbose       say more (twice: debug)\n"
    "  -q, --quiet         errors only\n"
    "  -h, --help          this help ('secrets COMMAND --help' for a command)\n"
    "  -V, --version       print the version\n"
    "\n"
    "examples:\n"
    "  secrets configure GITHUB_TOKEN --command 'gh auth token' --ttl 8h\n"
    "  printf %s \"$KEY\" | secrets configure OPENAI_API_KEY --keychain\n"
    "  secrets get GITHUB_TOKEN\n"
    "  secrets resolve --json GITHUB_TOKEN OPENAI_API_KEY\n"
    "  secrets exec GITHUB_TOKEN -- gh repo list\n"
    "\n"
    "exit status: 0 ok, 1 some secret did not resolve, 2 usage error, 3 configuration\n"
    "error; exec: 125/126/127 as env(1), else the command's status. See docs/secrets.md.\n";

void cli_say(struct cli *c, enum log_level level, const char *fmt, ...)
{
    char msg[2 * ERR_MSG_MAX];
    va_list ap;
    if (log_get_level(c->log) < level)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* redacted before it is escaped: a value with a control character is still found */
    struct buf red;
    buf_init_secret(&red, 4 * sizeof(msg));
    int r = redact_apply(log_redact(c->log), msg, strlen(msg), &red);
    char *esc = r < 0 ? NULL : text_escape_dup(buf_str(&red));
    buf_release(&red);
    log_msg(c->log, level, "%s", esc ? esc : "(out of memory)");
    free(esc);
}

/* The options of every command */
static const struct option global_opts[] = {
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {0},
};

int cli_option_error(struct cli *c, char *const *argv, const char *shortopts,
                     const struct option *opts)
{
    struct buf msg;
    buf_init(&msg, 4096);
    struct log *cmd_log = log_new(argv[0], STDERR_FILENO);
    if (cmd_log)
        log_set_level(cmd_log, log_get_level(c->log));
    if (args_option_error(argv[0], argv, shortopts, opts, global_opts, &msg) < 0)
        buf_reset(&msg);
    log_msg(cmd_log ? cmd_log : c->log, LOG_ERROR, "%s",
            msg.len ? buf_str(&msg) : "invalid option");
    log_free(cmd_log);
    buf_release(&msg);
    return EXIT_USAGE;
}

static int usage_error(struct cli *c, const char *fmt, ...) _printf_(2, 3);
static int usage_error(struct cli *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cli_error(c, "%s (see 'secrets --help')", msg);
    return EXIT_USAGE;
}

/* The agent directory and secrets.json's path. An exit status. */
static int cli_paths(struct cli *c)
{
    struct err e = ERR_INIT;
    int r = path_agent_dir(&c->agent_dir, &e);
    if (r >= 0)
        r = path_agent_file("secrets.json", &c->store_path, &e);
    if (r < 0) {
        cli_error(c, "%s", err_msg(&e));
        return EXIT_CONFIG;
    }
    return EXIT_OK;
}

/* Reports why secrets.json could not be read. EXIT_CONFIG. */
static int store_failed(struct cli *c, int r, const struct err *e)
{
    cli_error(c, "%s", err_msg(e));
    if (r == -EBADMSG)
        cli_error(c, "fix the file by hand; it is left exactly as it is");
    return EXIT_CONFIG;
}

/* The cache and the resolver, once the store is open. An exit status. */
static int cli_start(struct cli *c)
{
    int r = cache_open(&c->cache);
    if (r < 0) {
        cli_error(c, "cannot open the cache: %s", strerror(-r));
        return EXIT_FAILED;
    }
    if (!c->cache)
        cli_debug(c, "no private runtime directory ($XDG_RUNTIME_DIR): commands run on "
                     "every resolution");
    r = resolver_new(c->store, c->cache, log_redact(c->log), c->agent_dir, c->resolve_flags,
                     &c->rs);
    if (r < 0) {
        cli_error(c, "%s", strerror(-r));
        return EXIT_FAILED;
    }
    return EXIT_OK;
}

int cli_open(struct cli *c)
{
    struct err e = ERR_INIT;
    int status = cli_paths(c);
    if (status != EXIT_OK)
        return status;
    /* a directory others can enter lets them swap the recipes: tightened to 0700 when ours,
     * refused with the fix when not, when reading too (as mcp-auth does its store); never
     * created here, and left alone while it holds no secrets.json */
    struct stat st;
    if (lstat(c->store_path, &st) == 0 && dir_ensure(c->agent_dir, 0700, &e) < 0) {
        cli_error(c, "%s", err_msg(&e));
        return EXIT_CONFIG;
    }
    int r = store_load(c->store_path, &c->store, &e);
    if (r < 0)
        return store_failed(c, r, &e);
    return cli_start(c);
}

int cli_open_locked(struct cli *c, struct jsonfile **ret)
{
    struct err e = ERR_INIT;
    struct jsonfile *f = NULL;
    int r, status = cli_paths(c);
    if (status != EXIT_OK)
        return status;
    char *lock = store_lock_path(c->store_path);
    if (!lock) {
        cli_error(c, "out of memory");
        return EXIT_FAILED;
    }
    const struct jsonfile_opts o = {
        .lock_path = lock,
        .lock_timeout_ms = STORE_LOCK_TIMEOUT_MS,
        .max_size = STORE_MAX_SIZE,
        .mode = 0600,
        /* a configure that stores a keychain value must fail, and restore the keychain, when
         * the file cannot be written: written even when the recipe is the same */
        .flags = JSONFILE_CREATE | JSONFILE_SECRET | JSONFILE_PRIVATE_DIR | JSONFILE_ALWAYS_WRITE |
                 JSONFILE_DUPLICATES,
    };
    r = jsonfile_open(c->store_path, &o, &f, &e);
    free(lock);
    if (r >= 0)
        r = store_from_json(c->store_path, jsonfile_doc(f), &c->store, &e);
    if (r >= 0) {
        const struct json_dup *d = NULL;
        size_t n = jsonfile_duplicates(f, &d);
        r = store_set_duplicates(c->store, d, n);
        /* a rewrite would keep only one of each: refused before anything is changed */
        if (r >= 0)
            r = store_duplicates_error(c->store, &e);
    }
    if (r < 0) {
        jsonfile_free(f);
        return store_failed(c, r, &e);
    }
    status = cli_start(c);
    if (status != EXIT_OK) {
        jsonfile_free(f);
        return status;
    }
    *ret = f;
    return EXIT_OK;
}

void cli_close(struct cli *c)
{
    resolver_free(c->rs);
    c->rs = NULL;
    cache_free(c->cache);
    c->cache = NULL;
    store_free(c->store);
    c->store = NULL;
    free(c->store_path);
    c->store_path = NULL;
    free(c->agent_dir);
    c->agent_dir = NULL;
}

void cli_mask(const char *value, size_t len, char *out, size_t size)
{
    /* a long value is recognisable by its first characters (ghp_, sk-) without being given
     * away; a short one shows nothing but its length */
    if (value && len >= 16)
        (void)snprintf(out, size, "%.3s... (%zu characters)", value, len);
    else
        (void)snprintf(out, size, "%zu character%s", len, len == 1 ? "" : "s");
}

bool cli_label_in_use(struct store *s, const char *label, const char *except_name)
{
    for (size_t i = 0; i < store_count(s); i++) {
        const struct recipe *o = NULL;
        const char *on = store_name(s, i);
        if (strcmp(on, except_name) != 0 && store_get(s, on, &o, NULL) >= 0 &&
            o->kind == RECIPE_KEYCHAIN && strcmp(o->arg, label) == 0)
            return true;
    }
    return false;
}

static void write_out(const char *p, size_t n)
{
    /* stdout going away (a closed pipe) is the reader's choice, not ours to report */
    (void)write_full(STDOUT_FILENO, p, n);
}

/* ---- get ---- */

static const char get_help[] =
    "usage: secrets get [-n|--no-newline] NAME\n"
    "\n"
    "Print the value of NAME on stdout, for scripts. The recipe answers first; without one, an\n"
    "environment variable of the same name does.\n"
    "\n"
    "examples:\n"
    "  export GITHUB_TOKEN=\"$(secrets get GITHUB_TOKEN)\"\n"
    "  secrets get -n API_KEY | some-tool --key-from-stdin\n";

static const struct option get_opts[] = {{"no-newline", no_argument, NULL, 'n'}, {0}};

static int cmd_get(struct cli *c, int argc, char **argv)
{
    const struct option *opts = get_opts;
    bool newline = true;
    int opt;
    if (args_wants_help(argc, argv)) {
        fputs(get_help, stdout);
        return EXIT_OK;
    }
    while ((opt = getopt_long(argc, argv, "n", opts, NULL)) != -1) {
        if (opt == 'n')
            newline = false;
        else
            return cli_option_error(c, argv, "n", opts);
    }
    if (argc - optind != 1)
        return usage_error(c, "get takes exactly one NAME");
    if (!name_is_valid(argv[optind]))
        return usage_error(c,
                           "'%s' is not a valid secret name (letters, digits and '_', not "
                           "starting with a digit)",
                           argv[optind]);
    int r = cli_open(c);
    if (r != EXIT_OK)
        return r;
    struct err e = ERR_INIT;
    struct resolved res = {0};
    if (resolver_get(c->rs, argv[optind], &res, &e) < 0) {
        cli_error(c, "%s", err_msg(&e));
        return EXIT_FAILED;
    }
    write_out(res.value, res.len);
    if (newline)
        write_out("\n", 1);
    resolved_release(&res);
    return EXIT_OK;
}

/* ---- resolve ---- */

static const char resolve_help[] =
    "usage: secrets resolve [--json] [--no-cache] NAME...\n"
    "       secrets resolve --json --stdin [NAME...]\n"
    "\n"
    "Resolve each NAME. With --json, print one JSON object for programs (the bridge uses it;\n"
    "docs/helper-protocol.md):\n"
    "  {\"version\": 1, \"secrets\": {\"NAME\": {\"value\": \"...\", \"source\": \"command\",\n"
    "    \"expires_at\": 1767225600}, \"OTHER\": {\"error\": \"...\"}}}\n"
    "expires_at is in unix seconds and absent when the value does not expire; ask again after\n"
    "it. Without --json, print one line per name saying where it came from (never the value).\n"
    "--no-cache runs command recipes even when a fresh value is cached.\n"
    "--stdin also reads {\"version\": 1, \"commands\": {\"NAME\": \"shell command\"}} on stdin\n"
    "(the bridge's \"!command\" values): each command runs as a command recipe would, never\n"
    "cached, its stderr never quoted, and its value is answered under NAME. A member\n"
    "\"bearerStores\": {\"NAME\": {\"server\": \"S\", \"url\": \"URL\"}} answers under NAME the "
    "token\n"
    "'pi-mcp-adapter token set S' stored in the keychain, when it is bound to URL.\n"
    "\n"
    "exit status: 0 all resolved, 1 some did not, 2 usage error, 3 configuration error\n"
    "\n"
    "examples:\n"
    "  secrets resolve GITHUB_TOKEN\n"
    "  secrets resolve --json GITHUB_TOKEN OPENAI_API_KEY | jq .\n";

/* Prints the line of `resolve` without --json for a resolved name (never the value). */
static void print_resolved(const char *name, const struct resolved *res)
{
    char when[64] = "does not expire";
    if (res->expires_at > 0 && res->expires_at <= now_unix()) {
        (void)snprintf(when, sizeof(when), "resolved afresh every time (ttl 0)");
    } else if (res->expires_at > 0) {
        char d[DURATION_BUF_SIZE];
        int64_t left = res->expires_at - now_unix();
        (void)snprintf(when, sizeof(when), "expires in %s%s",
                       duration_format(left > 0 ? left * 1000 : 0, d, sizeof(d)),
                       res->cached ? " (cached)" : "");
    }
    printf("%s: resolved from %s, %zu character%s, %s\n", name, res->source, res->len,
           res->len == 1 ? "" : "s", when);
}

/* Resolves name into the answer (with --json) or prints its line (without). Returns -errno
 * when the answer cannot be built; a name that does not resolve sets *status. */
static int resolve_one(struct cli *c, const char *name, bool json, struct helper_secrets *answer,
                       int *status)
{
    struct err e = ERR_INIT;
    struct resolved res = {0};
    int r = 0;
    if (resolver_get(c->rs, name, &res, &e) < 0) {
        *status = EXIT_FAILED;
        if (!json) {
            cli_error(c, "%s", err_msg(&e));
            return 0;
        }
        /* the message goes through redaction too: it may quote a command's stderr */
        struct buf msg;
        buf_init(&msg, ERR_MSG_MAX * 2);
        r = redact_apply(log_redact(c->log), err_msg(&e), strlen(err_msg(&e)), &msg);
        if (r >= 0)
            r = helper_secrets_add_error(answer, name, buf_str(&msg));
        buf_release(&msg);
        return r;
    }
    if (json)
        r = helper_secrets_add_value(answer, name, res.value, res.len, res.source,
                                     res.expires_at > 0 ? res.expires_at : 0);
    else
        print_resolved(name, &res);
    if (res.env_shadowed)
        cli_info(c,
                 "'%s': an environment variable of the same name is set and ignored: the recipe "
                 "wins",
                 name);
    resolved_release(&res);
    return r;
}

/* The answer of a resolve that failed for some names carries the error object too
 * (docs/json.md), after the values that did resolve: its member goes before the closing "}\n"
 * helper_secrets_write() ends the answer with. 0 or -errno. */
static int resolve_error_member(const struct helper_secrets *a, struct buf *out)
{
    size_t failed = 0;
    for (size_t i = 0; i < a->n; i++)
        failed += a->v[i].error != NULL;
    if (out->len < 2 || memcmp(out->data + out->len - 2, "}\n", 2) != 0)
        return -EINVAL;
    struct buf msg;
    buf_init(&msg, 1024);
    int r = buf_printf(&msg,
                       "%zu of %zu name%s did not resolve (each one's \"error\" says why):", failed,
                       a->n, a->n == 1 ? "" : "s");
    for (size_t i = 0, k = 0; r >= 0 && i < a->n; i++) {
        if (!a->v[i].error)
            continue;
        /* the names as long as they fit, the count says the rest */
        if (buf_printf(&msg, "%s %s", k++ ? "," : "", a->v[i].name) < 0)
            break;
    }
    if (r >= 0) {
        out->len -= 2;
        r = buf_append_char(out, ',');
    }
    if (r >= 0)
        r = jsonw_error_member(out, "failed", buf_str(&msg),
                               "configure each name with 'secrets configure NAME'; 'secrets "
                               "list' shows each recipe and why it does not resolve");
    if (r >= 0)
        r = buf_append_str(out, "}\n");
    buf_release(&msg);
    return r;
}

static const struct option resolve_opts[] = {{"json", no_argument, NULL, 'j'},
                                             {"no-cache", no_argument, NULL, 'C'},
                                             {"stdin", no_argument, NULL, 'S'},
                                             {0}};

static int cmd_resolve(struct cli *c, int argc, char **argv)
{
    const struct option *opts = resolve_opts;
    struct json_object *req = NULL;
    bool json = false, from_stdin = false;
    int opt, status = EXIT_OK, r;
    struct helper_secrets answer = {0};
    struct buf out;

    if (args_wants_help(argc, argv)) {
        fputs(resolve_help, stdout);
        return EXIT_OK;
    }
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'j')
            json = true;
        else if (opt == 'C')
            c->resolve_flags |= RESOLVE_NO_CACHE;
        else if (opt == 'S')
            from_stdin = true;
        else
            return cli_option_error(c, argv, "", opts);
    }
    if (from_stdin && !json)
        return usage_error(c, "--stdin answers only with --json");
    if (optind >= argc && !from_stdin)
        return usage_error(c, "resolve needs at least one NAME");
    for (int i = optind; i < argc; i++)
        if (!name_is_valid(argv[i]))
            return usage_error(c,
                               "'%s' is not a valid secret name (letters, digits and '_', not "
                               "starting with a digit)",
                               argv[i]);
    if (from_stdin) {
        r = request_read(c, &req);
        if (r != EXIT_OK)
            return r;
    }
    r = cli_open(c);
    if (r != EXIT_OK) {
        request_free(req);
        return r;
    }

    r = 0;
    for (int i = optind; r >= 0 && i < argc; i++) {
        bool dup = false;
        for (int k = optind; k < i; k++)
            dup |= strcmp(argv[k], argv[i]) == 0;
        if (!dup)
            r = resolve_one(c, argv[i], json, &answer, &status);
    }
    if (r >= 0 && req)
        r = request_resolve(c, req, (const char *const *)argv + optind, (size_t)(argc - optind),
                            &answer, &status);
    request_free(req);
    buf_init_secret(&out, 64 * 1024 * 1024);
    if (r >= 0 && json)
        r = helper_secrets_write(&answer, &out);
    if (r >= 0 && json && status == EXIT_FAILED)
        r = resolve_error_member(&answer, &out);
    if (r < 0) {
        cli_error(c, "cannot build the answer: %s", strerror(-r));
        status = EXIT_FAILED;
    } else if (json) {
        write_out(out.data, out.len);
        c->answered = true;
    }
    buf_release(&out);
    helper_secrets_release(&answer);
    return status;
}

/* ---- list ---- */

static const char list_help[] =
    "usage: secrets list [--json] [--no-check]\n"
    "\n"
    "Show each recipe: name, source, TTL and whether it resolves now (or why not). Values are\n"
    "never shown; a resolved value is described by its length. --no-check skips resolving.\n"
    "Notes flag literal values stored in secrets.json and environment variables that a recipe\n"
    "shadows.\n"
    "\n"
    "examples:\n"
    "  secrets list\n"
    "  secrets list --json | jq '.secrets[] | select(.status != \"ok\")'\n";

/* One recipe's line in the report (its object for --json is built beside it). */
struct list_row {
    const struct recipe *rec; /* NULL when the entry is invalid */
    const char *kind;
    char ttl[DURATION_BUF_SIZE];
    char status[ERR_MSG_MAX + 64];
    bool shadowed;
};

/* Resolves rec now, into row's status and o's "status", "error", "length", "expires_at" and
 * "cached". The value is described by its length only; an error is redacted. */
static void list_check(struct cli *c, const struct recipe *rec, struct json_object *o,
                       struct list_row *row)
{
    struct err e = ERR_INIT;
    struct resolved res = {0};
    if (resolver_run(c->rs, rec, &res, &e) < 0) {
        struct buf msg;
        buf_init(&msg, sizeof(row->status));
        /* never show an unredacted message, even when redaction itself fails */
        if (redact_apply(log_redact(c->log), err_msg(&e), strlen(err_msg(&e)), &msg) < 0)
            buf_reset(&msg);
        (void)snprintf(row->status, sizeof(row->status), "error: %s", buf_str(&msg));
        (void)json_object_object_add(o, "status", json_object_new_string("error"));
        (void)json_object_object_add(o, "error", json_object_new_string(buf_str(&msg)));
        buf_release(&msg);
        return;
    }
    char mask[64];
    cli_mask(NULL, res.len, mask, sizeof(mask));
    (void)snprintf(row->status, sizeof(row->status), "ok (%s%s)", mask,
                   res.cached ? ", cached" : "");
    (void)json_object_object_add(o, "status", json_object_new_string("ok"));
    (void)json_object_object_add(o, "length", json_object_new_int64((int64_t)res.len));
    if (res.expires_at > 0)
        (void)json_object_object_add(o, "expires_at", json_object_new_int64(res.expires_at));
    (void)json_object_object_add(o, "cached", json_object_new_boolean(res.cached));
    resolved_release(&res);
}

/* The report on the recipe name: its object (NULL when out of memory), and row. */
static struct json_object *list_entry(struct cli *c, const char *name, bool check,
                                      struct list_row *row)
{
    struct err e = ERR_INIT;
    struct json_object *o = json_object_new_object();
    *row = (struct list_row){.kind = "invalid", .ttl = "-"};
    if (!o)
        return NULL;
    (void)json_object_object_add(o, "name", json_object_new_string(name));
    if (store_get(c->store, name, &row->rec, &e) < 0) {
        row->rec = NULL;
        (void)snprintf(row->status, sizeof(row->status), "invalid: %s", err_msg(&e));
        (void)json_object_object_add(o, "status", json_object_new_string("invalid"));
        (void)json_object_object_add(o, "error", json_object_new_string(err_msg(&e)));
        return o;
    }
    const struct recipe *rec = row->rec;
    row->kind = recipe_kind_str(rec->kind);
    if (rec->ttl_ms >= 0)
        (void)duration_format(rec->ttl_ms, row->ttl, sizeof(row->ttl));
    (void)json_object_object_add(o, "source", json_object_new_string(row->kind));
    (void)json_object_object_add(
        o, "ttl_seconds", rec->ttl_ms >= 0 ? json_object_new_int64(rec->ttl_ms / 1000) : NULL);
    if (rec->description)
        (void)json_object_object_add(o, "description", json_object_new_string(rec->description));
    row->shadowed =
        getenv(name) != NULL && !(rec->kind == RECIPE_ENV && strcmp(rec->arg, name) == 0);
    if (check) {
        list_check(c, rec, o, row);
    } else {
        (void)snprintf(row->status, sizeof(row->status), "not checked");
        (void)json_object_object_add(o, "status", json_object_new_string("unchecked"));
    }
    (void)json_object_object_add(o, "environment_shadowed", json_object_new_boolean(row->shadowed));
    (void)json_object_object_add(o, "literal",
                                 json_object_new_boolean(rec->kind == RECIPE_LITERAL));
    return o;
}

/* The row on stdout. The name (a key of the file) and the status (which quotes a command's
 * stderr) are escaped: neither may act on the terminal or forge a row. scratch is reused. */
static void list_print_row(const char *raw_name, const struct list_row *row, struct buf *scratch)
{
    struct buf st;
    buf_init(&st, 4 * sizeof(row->status) + 16);
    const char *status = text_escaped(&st, row->status);
    const char *name = text_escaped(scratch, raw_name);
    printf("%-24s %-9s %-6s %s\n", name, row->kind, row->ttl, status);
    if (row->rec && row->rec->kind == RECIPE_LITERAL)
        printf("  warning: the value is stored in secrets.json in clear: move it to the "
               "keychain with 'secrets configure %s --keychain'\n",
               name);
    if (row->shadowed)
        printf("  note: the environment variable %s is also set; the recipe answers, not the "
               "environment\n",
               name);
    buf_release(&st);
}

static void list_print_json(struct json_object *arr)
{
    struct json_object *root = jsonw_answer_new();
    if (!root)
        return;
    (void)json_object_object_add(root, "secrets", json_object_get(arr));
    printf("%s\n",
           json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                    JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(root);
}

static const struct option list_opts[] = {
    {"json", no_argument, NULL, 'j'}, {"no-check", no_argument, NULL, 'N'}, {0}};

static int cmd_list(struct cli *c, int argc, char **argv)
{
    const struct option *opts = list_opts;
    bool json = false, check = true;
    int opt, r;
    if (args_wants_help(argc, argv)) {
        fputs(list_help, stdout);
        return EXIT_OK;
    }
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'j')
            json = true;
        else if (opt == 'N')
            check = false;
        else
            return cli_option_error(c, argv, "", opts);
    }
    if (optind != argc)
        return usage_error(c, "list takes no arguments");
    r = cli_open(c);
    if (r != EXIT_OK)
        return r;

    struct json_object *arr = json_object_new_array();
    struct buf scratch;
    buf_init(&scratch, 64 * 1024);
    size_t n = store_count(c->store);
    if (!json && n == 0) {
        char *disp = path_display(c->store_path);
        printf("no recipes in '%s': add one with 'secrets configure NAME'\n",
               text_escaped(&scratch, disp ? disp : c->store_path));
        free(disp);
    } else if (!json) {
        printf("%-24s %-9s %-6s %s\n", "NAME", "SOURCE", "TTL", "STATUS");
    }
    for (size_t i = 0; i < n && arr; i++) {
        const char *name = store_name(c->store, i);
        struct list_row row;
        struct json_object *o = list_entry(c, name, check, &row);
        if (!o)
            break;
        if (!json)
            list_print_row(name, &row, &scratch);
        (void)json_object_array_add(arr, o);
    }
    if (json && arr)
        list_print_json(arr);
    json_object_put(arr);
    buf_release(&scratch);
    return EXIT_OK;
}

/* ---- remove ---- */

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

static int cmd_remove(struct cli *c, int argc, char **argv)
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

/* ---- exec ---- */

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

static int cmd_exec(struct cli *c, int argc, char **argv)
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

/* ---- main ---- */

static int cmd_help(struct cli *c, int argc, char **argv);
static int cmd_completion(struct cli *c, int argc, char **argv);
static int cmd_complete(struct cli *c, int argc, char **argv);

typedef int (*command_fn)(struct cli *c, int argc, char **argv);
#define FN(f) ((args_fn)(f))
/* The commands: their dispatch, the help's list and the shell completion read this table */
static const struct args_command commands[] = {
    {"configure",
     "NAME [--keychain [--label L] | --command CMD [--ttl D] [--timeout D]\n"
     "                  | --env VAR | --file PATH | --op REF | --bw ITEM | --pass PATH\n"
     "                  | --gopass PATH | --keepassxc DB ENTRY | --vault PATH#FIELD\n"
     "                  | --aws ID | --gcloud NAME]",
     "set up how NAME is obtained (guided on a terminal)", configure_options, "secrets",
     FN(cmd_configure)},
    {"get", "NAME", "print the value of NAME", get_opts, "secrets", FN(cmd_get)},
    {"resolve", "[--json] [--no-cache] NAME...",
     "resolve names; --json prints values and expiry for programs", resolve_opts, "secrets...",
     FN(cmd_resolve)},
    {"list", "[--json] [--no-check]",
     "names, sources, TTLs and whether each resolves (never values)", list_opts, NULL,
     FN(cmd_list)},
    {"remove", "NAME", "delete the recipe (and its keychain item)", NULL, "secrets",
     FN(cmd_remove)},
    {"exec", "[NAME...] -- CMD [ARGS...]", "run CMD with the secrets in its environment", NULL,
     "secrets...", FN(cmd_exec)},
    {"help", "[COMMAND]", "this help, or COMMAND's (as 'secrets COMMAND --help')", NULL, "commands",
     FN(cmd_help)},
    {"completion", "SHELL", "print the completion script for bash, zsh or fish", NULL, "shells",
     FN(cmd_completion)},
    {"__complete", NULL, NULL, NULL, NULL, FN(cmd_complete)},
};

static const struct args_tool tool = {
    .prog = "secrets",
    .cmds = commands,
    .n_cmds = ELEMENTSOF(commands),
    .globals = global_opts,
    .help_column = 22,
};

static void print_usage(FILE *f)
{
    args_print_usage(&tool, usage_head, usage_tail, f);
}

/* "completion SHELL": the script, from the table above. */
static int cmd_completion(struct cli *c, int argc, char **argv)
{
    struct err e = ERR_INIT;
    int r = args_completion_command(&tool, "the names of secrets.json's recipes (never a value)",
                                    argc, argv, &e);
    if (r < 0)
        cli_error(c, "%s", err_msg(&e));
    return r == -EINVAL ? EXIT_USAGE : r < 0 ? EXIT_FAILED : EXIT_OK;
}

/* "__complete KIND": the values the completion scripts ask for, one per line, quietly: the
 * recipes' names (read from secrets.json, nothing resolved), the shells. */
static int cmd_complete(struct cli *c, int argc, char **argv)
{
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        (void)dup2(null, STDERR_FILENO);
        (void)close(null);
    }
    if (argc >= 2 && strcmp(argv[1], "secrets") == 0) {
        struct err e = ERR_INIT;
        if (cli_paths(c) == EXIT_OK && store_load(c->store_path, &c->store, &e) >= 0)
            for (size_t i = 0; i < store_count(c->store); i++)
                printf("%s\n", store_name(c->store, i));
    } else if (argc >= 2 && strcmp(argv[1], "shells") == 0) {
        printf("bash\nzsh\nfish\n");
    }
    return EXIT_OK;
}

static int unknown_command(struct cli *c, const char *word, const char *why)
{
    struct suggest s;
    struct buf close;
    suggest_init(&s, word);
    for (size_t i = 0; i < ELEMENTSOF(commands); i++)
        if (commands[i].name[0] != '_')
            suggest_add(&s, commands[i].name);
    buf_init(&close, 4096);
    if (suggest_append(&s, NULL, &close) < 0)
        buf_reset(&close);
    int status =
        usage_error(c, "unknown command '%s'%s%s", word, close.len ? "" : why, buf_str(&close));
    buf_release(&close);
    suggest_release(&s);
    return status;
}

/* An option before any command that is no option of the tool's: the close ones of all. */
static int unknown_option(struct cli *c, const char *arg)
{
    struct suggest s;
    struct buf close;
    suggest_init(&s, arg + strspn(arg, "-"));
    for (size_t i = 0; i <= ELEMENTSOF(commands); i++) {
        const struct option *o = i == ELEMENTSOF(commands) ? global_opts : commands[i].opts;
        for (; o && o->name; o++)
            suggest_add(&s, o->name);
    }
    buf_init(&close, 4096);
    if (suggest_append(&s, "--", &close) < 0)
        buf_reset(&close);
    int status = usage_error(c, "unknown option '%s'%s", arg, buf_str(&close));
    buf_release(&close);
    suggest_release(&s);
    return status;
}

/* "secrets help": the usage; "secrets help get": get's own help, as "secrets get --help". */
static int cmd_help(struct cli *c, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        print_usage(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
        if (strcmp(argv[1], commands[i].name) != 0 || commands[i].fn == FN(cmd_help) ||
            commands[i].name[0] == '_')
            continue;
        char progname[64], help_opt[] = "--help";
        (void)snprintf(progname, sizeof(progname), "secrets %s", commands[i].name);
        char *help_argv[] = {progname, help_opt, NULL};
        optind = 0;
        return ((command_fn)commands[i].fn)(c, 2, help_argv);
    }
    if (strcmp(argv[1], "help") == 0) {
        print_usage(stdout);
        return EXIT_OK;
    }
    return unknown_command(c, argv[1], ": there is no help for it");
}

/* The exit statuses of the commands that take --json, as their failed answers name them
 * (docs/json.md) */
static const struct jsonw_status_code json_codes[] = {
    {EXIT_FAILED, "failed",
     "see the message; 'secrets list' shows each recipe and why it does not "
     "resolve"},
    {EXIT_USAGE, "usage", NULL}, /* the command's own help, below */
    {EXIT_CONFIG, "config",
     "correct secrets.json or the agent directory as the message says: "
     "nothing is changed until then"},
};

/* The failed answer of a command given --json: the message is what was said on stderr. */
static void json_failed(struct log *log, const char *cmd, int status)
{
    char help[96];
    (void)snprintf(help, sizeof(help), "see 'secrets %.32s --help'", cmd);
    struct buf b;
    buf_init(&b, 64 * 1024);
    if (jsonw_status_answer(&b, json_codes, ELEMENTSOF(json_codes), status, log_errors(log),
                            status == EXIT_USAGE ? help : NULL) >= 0) {
        (void)fflush(stdout);
        write_out(b.data, b.len);
    }
    buf_release(&b);
}

int main(int argc, char **argv)
{
    struct cli c = {0};
    int status;

    if (secure_harden_process(&arg_core_soft) < 0)
        arg_core_soft = 0;
    c.log = log_new("secrets", STDERR_FILENO);
    if (!c.log)
        return EXIT_FAILED;
    /* -v and -q anywhere before "--" ("secrets configure X --command C -v"; never past "--":
     * those belong to exec's CMD), and a command's own options before the command word too
     * ("secrets --json resolve X"): the command word goes first */
    struct args_globals g = {0};
    argc = args_take_globals(argc, argv, false, &g);
    if (argc < 2) {
        print_usage(stderr);
        log_free(c.log);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
        if (argv[1][1] == 'h' || argv[1][2] == 'h')
            print_usage(stdout);
        else
            printf("secrets (%s) %s\n", PROJECT_NAME_STR, PROJECT_VERSION_STR);
        log_free(c.log);
        return EXIT_OK;
    }
    int first = args_tool_first_operand(&tool, argc, argv);
    if (first > 1 && first < argc)
        args_move_first(argv, first);
    const char *cmd = argv[1];
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    log_set_level(c.log, g.quiet            ? LOG_ERROR
                         : g.verbosity >= 2 ? LOG_DEBUG
                         : g.verbosity      ? LOG_INFO
                                            : LOG_WARN);
    opterr = 0; /* the commands word getopt's complaints themselves (cli_option_error) */
    char progname[64];
    (void)snprintf(progname, sizeof(progname), "secrets %s", cmd);
    sub_argv[0] = progname; /* getopt's own messages then read "secrets get: ..." */
    optind = 0; /* each command parses its own options from its own argv (0: full reset) */

    const struct args_command *found = args_command_find(&tool, cmd);
    command_fn fn = found ? (command_fn)found->fn : NULL;
    if (!fn && cmd[0] == '-')
        status = unknown_option(&c, cmd);
    else
        status = fn ? fn(&c, sub_argc, sub_argv) : unknown_command(&c, cmd, "");

    if (status != EXIT_OK && !c.answered && jsonw_wanted(sub_argc, sub_argv))
        json_failed(c.log, cmd, status);
    cli_close(&c);
    log_free(c.log);
    return status;
}
