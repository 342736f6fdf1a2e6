/* cmd_list.c - "secrets list": every recipe, its source and TTL, and whether it resolves; never
 * a value */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/duration.h"
#include "credkit/jsonw.h"
#include "credkit/path.h"
#include "credkit/redact.h"
#include "credkit/textsafe.h"

#include "cli.h"

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

const struct option list_opts[] = {
    {"json", no_argument, NULL, 'j'}, {"no-check", no_argument, NULL, 'N'}, {0}};

int cmd_list(struct cli *c, int argc, char **argv)
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
