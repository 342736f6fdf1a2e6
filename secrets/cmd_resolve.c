/* cmd_resolve.c - "secrets get NAME" and "secrets resolve NAME...": values out, for scripts and
 * for programs (the helper protocol's answer with --json) */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/duration.h"
#include "credkit/helper_answer.h"
#include "credkit/jsonw.h"
#include "credkit/redact.h"
#include "credkit/util.h"

#include "cli.h"
#include "request.h"

static const char get_help[] =
    "usage: secrets get [-n|--no-newline] NAME\n"
    "\n"
    "Print the value of NAME on stdout, for scripts. The recipe answers first; without one, an\n"
    "environment variable of the same name does.\n"
    "\n"
    "examples:\n"
    "  export GITHUB_TOKEN=\"$(secrets get GITHUB_TOKEN)\"\n"
    "  secrets get -n API_KEY | some-tool --key-from-stdin\n";

const struct option get_opts[] = {{"no-newline", no_argument, NULL, 'n'}, {0}};

int cmd_get(struct cli *c, int argc, char **argv)
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

const struct option resolve_opts[] = {{"json", no_argument, NULL, 'j'},
                                      {"no-cache", no_argument, NULL, 'C'},
                                      {"stdin", no_argument, NULL, 'S'},
                                      {0}};

int cmd_resolve(struct cli *c, int argc, char **argv)
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
