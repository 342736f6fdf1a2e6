/* cmd_import.c - "mcp-auth import mcp-remote [SERVER]": mcp-remote's sign-ins taken over, by
 * the hash it names each one by, for one server or every HTTP entry of the configuration */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/jsonw.h"
#include "credkit/log.h"
#include "credkit/mcp_config.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "credkit/textsafe.h"
#include "credkit/url.h"

#include "cli.h"
#include "import.h"
#include "oauth_config.h"

static const char import_help[] =
    "usage: mcp-auth import mcp-remote [SERVER] [--dir DIR] [--account NAME] [--force]\n"
    "                       [--dry-run] [--json]\n"
    "\n"
    "Take over the sign-ins mcp-remote keeps (~/.mcp-auth/mcp-remote-v1/, or\n"
    "$MCP_REMOTE_CONFIG_DIR): its tokens and its client registration, so that no new sign-in\n"
    "is needed; its refresh token refreshes here from then on. mcp-remote names each sign-in\n"
    "by a hash of the server URL it was given: without SERVER, every HTTP server of the\n"
    "configuration whose URL matches one is imported; the others are listed as skipped. A\n"
    "sign-in stored here that is newer than mcp-remote's is kept unless --force.\n"
    "\n"
    "  --dir DIR        mcp-remote's directory (the one holding mcp-remote-v1/, or it)\n"
    "  --account NAME   store them as the account NAME (see 'mcp-auth login --help')\n"
    "  --force          replace a newer sign-in stored here\n"
    "  --dry-run        say what would be imported, write nothing\n"
    "  --json           the answer as JSON on standard output (docs/json.md)\n"
    "\n"
    "examples:\n"
    "  mcp-auth import mcp-remote --dry-run\n"
    "  mcp-auth import mcp-remote github\n"
    "  mcp-auth import mcp-remote https://mcp.example.com/mcp --account work\n";

enum { OPT_DIR = 256, OPT_FORCE, OPT_DRY_RUN };
const struct option import_opts[] = {
    {"dir", required_argument, NULL, OPT_DIR}, {"account", required_argument, NULL, 'a'},
    {"force", no_argument, NULL, OPT_FORCE},   {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"json", no_argument, NULL, 'j'},          {0},
};

struct import_run {
    const char *dir;    /* mcp-remote's */
    struct strv hashes; /* its sign-ins */
    bool *taken;        /* per hash: a server of ours took it */
    bool force, dry_run;
    struct json_object *servers; /* the --json answer's */
    int status;
};

/* The hash of mcp-remote's sign-in for the URL url (as written in the entry, or given): the
 * URL as mcp-remote was given it, which may differ from ours in form; -1 when none. */
static ssize_t find_hash(const struct import_run *ir, const char *url, const char *canonical)
{
    const char *forms[4] = {url, canonical, NULL, NULL};
    char *slash = NULL;
    size_t n = strlen(canonical);
    /* "https://host" is "https://host/" to mcp-remote's URL parser when it was given so */
    if (n && canonical[n - 1] != '/' && asprintf(&slash, "%s/", canonical) >= 0)
        forms[2] = slash;
    ssize_t found = -1;
    for (size_t f = 0; f < ELEMENTSOF(forms) && forms[f] && found < 0; f++) {
        char h[33];
        import_mcp_remote_hash(forms[f], h);
        for (size_t i = 0; i < ir->hashes.n && found < 0; i++)
            if (strcmp(ir->hashes.v[i], h) == 0)
                found = (ssize_t)i;
    }
    free(slash);
    return found;
}

/* Says (and records for --json) what became of one server. */
static void import_report(struct import_run *ir, const struct target_ctx *tc, const char *what,
                          const char *issuer, const struct import_signin *s, const char *reason)
{
    char *shown = url_display(tc->url);
    const char *who = tc->name ? tc->name : shown ? shown : tc->url;
    if (strcmp(what, "failed") == 0)
        say_error("cannot import '%s' from mcp-remote: %s", who, reason);
    else if (!arg_quiet && strcmp(what, "kept") == 0)
        fprintf(stderr, "skipped '%s': %s\n", who, reason);
    else if (!arg_quiet) {
        char exp[64];
        describe_expiry(s->expires_at, exp, sizeof(exp));
        struct buf b;
        buf_init(&b, 64 * 1024);
        fprintf(stderr, "%s '%s'%s%s%s from mcp-remote\n  issuer:  %s\n  expires: %s%s\n",
                strcmp(what, "imported") == 0 ? "imported" : "would import", who,
                tc->t.label ? " as the account '" : "", tc->t.label ? tc->t.label : "",
                tc->t.label ? "'" : "", text_escaped(&b, issuer), exp,
                s->refresh_token ? " (refreshed automatically)" : "");
        buf_release(&b);
    }
    free(shown);
    if (!ir->servers)
        return;
    struct json_object *o = json_object_new_object();
    if (tc->name)
        (void)json_object_object_add(o, "name", json_object_new_string(tc->name));
    (void)json_object_object_add(o, "url", json_object_new_string(tc->url));
    (void)json_object_object_add(o, "label",
                                 tc->t.label ? json_object_new_string(tc->t.label) : NULL);
    (void)json_object_object_add(o, "result", json_object_new_string(what));
    if (issuer)
        (void)json_object_object_add(o, "issuer", json_object_new_string(issuer));
    if (s && strcmp(what, "kept") != 0) {
        if (s->expires_at > 0)
            (void)json_object_object_add(o, "expires_at", json_object_new_int64(s->expires_at));
        (void)json_object_object_add(o, "has_refresh_token",
                                     json_object_new_boolean(s->refresh_token != NULL));
    }
    if (reason)
        (void)json_object_object_add(o, "reason", json_object_new_string(reason));
    (void)json_object_array_add(ir->servers, o);
}

/* Imports mcp-remote's sign-in for tc's server, when it has one (raw: the URL as written). */
static void import_one(struct import_run *ir, const struct target_ctx *tc, const char *raw,
                       bool named)
{
    struct import_signin s = {0};
    struct err e = ERR_INIT;
    char *issuer = NULL;
    enum import_outcome outcome;
    ssize_t i = find_hash(ir, raw, tc->url);
    if (i < 0) {
        if (named) {
            char *shown = path_display(ir->dir);
            char reason[1024];
            (void)snprintf(reason, sizeof(reason), "mcp-remote has no sign-in for it in '%s'",
                           shown ? shown : ir->dir);
            free(shown);
            import_report(ir, tc, "failed", NULL, NULL, reason);
            ir->status = EXIT_LOGIN_REQUIRED;
        }
        return;
    }
    if (ir->taken[i])
        return; /* another entry of the same server and account took it */
    ir->taken[i] = true;
    int r = import_mcp_remote_read(ir->dir, ir->hashes.v[i], &s, &e);
    if (r >= 0 && (redact_add(log_redact(arg_log), "access_token", s.access_token,
                              strlen(s.access_token)) < 0 ||
                   (s.refresh_token && redact_add(log_redact(arg_log), "refresh_token",
                                                  s.refresh_token, strlen(s.refresh_token)) < 0)))
        r = -ENOMEM;
    /* mcp-remote's file is a local problem, not the authorization server's */
    bool local = r < 0;
    if (r >= 0)
        r = import_store(&tc->t, &s, ir->force, ir->dry_run, 0, &outcome, &issuer, &e);
    if (r < 0) {
        import_report(ir, tc, "failed", NULL, NULL, r == -ENOMEM ? "out of memory" : err_msg(&e));
        ir->status = local ? EXIT_FAILED : exit_for(r);
    } else if (outcome == IMPORT_KEPT_NEWER) {
        import_report(ir, tc, "kept", issuer, &s,
                      "the sign-in stored here is newer than mcp-remote's (--force replaces it)");
    } else {
        import_report(ir, tc, outcome == IMPORT_SAVED ? "imported" : "would_import", issuer, &s,
                      NULL);
    }
    free(issuer);
    import_signin_release(&s);
}

/* Every HTTP entry of the configuration, each server and account once. */
static void import_all(struct import_run *ir, struct mcp_config *config)
{
    for (size_t i = 0; i < mcp_config_count(config); i++) {
        const struct mcp_server *sv = mcp_config_at(config, i);
        struct target_ctx tc = {.config = config};
        char *raw = NULL;
        if (sv->error || sv->transport == MCP_TRANSPORT_STDIO || !sv->url ||
            mcp_expand(sv->url, NULL, NULL, &raw, NULL) < 0)
            continue;
        if (target_by_name(sv->name, &tc) == EXIT_OK) {
            tc.t.oauth = tc.oauth;
            tc.t.name = tc.name;
            tc.t.server_url = tc.url;
            tc.t.label = arg_account ? arg_account : tc.oauth->account;
            if (redact_add_url(log_redact(arg_log), tc.url) >= 0)
                import_one(ir, &tc, raw, false);
        }
        secure_free(raw);
        tc.config = NULL; /* shared */
        target_release(&tc);
    }
}

int cmd_import(int argc, char **argv)
{
    const struct option *opts = import_opts;
    const char *dir_opt = NULL;
    bool json = false;
    struct import_run ir = {.status = EXIT_OK};
    struct target_ctx tc = {0};
    struct err e = ERR_INIT;
    char *dir = NULL;
    int opt, status;
    if (args_wants_help(argc, argv)) {
        fputs(import_help, stdout);
        return EXIT_OK;
    }
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'j')
            json = true;
        else if (opt == OPT_DIR)
            dir_opt = optarg;
        else if (opt == OPT_FORCE)
            ir.force = true;
        else if (opt == OPT_DRY_RUN)
            ir.dry_run = true;
        else if (opt == 'a' && take_account(optarg) != EXIT_OK)
            return EXIT_USAGE;
        else if (opt != 'a')
            return option_error(argv, "", opts);
    }
    if (argc - optind < 1 || argc - optind > 2) {
        say_error("import takes the program to import from, mcp-remote, and at most one SERVER "
                  "(see 'mcp-auth import --help')");
        return EXIT_USAGE;
    }
    if (strcmp(argv[optind], "mcp-remote") != 0) {
        say_error("cannot import from '%s': mcp-auth imports from mcp-remote (see 'mcp-auth "
                  "import --help')",
                  argv[optind]);
        return EXIT_USAGE;
    }
    if (import_mcp_remote_dir(dir_opt, &dir, &e) < 0) {
        say_error("%s", err_msg(&e));
        return EXIT_FAILED;
    }
    ir.dir = dir;
    if (import_mcp_remote_list(dir, &ir.hashes, &e) < 0) {
        say_error("%s", err_msg(&e));
        status = EXIT_FAILED;
        goto out;
    }
    if (!(ir.taken = calloc(ir.hashes.n + 1, sizeof(bool)))) {
        status = EXIT_FAILED;
        goto out;
    }
    if (json)
        ir.servers = json_object_new_array();
    if (argc - optind == 2) {
        const char *arg = argv[optind + 1];
        status = resolve_target(arg, &tc);
        if (status != EXIT_OK)
            goto out;
        char *raw = NULL;
        const struct mcp_server *sv = tc.by_url ? NULL : mcp_config_find(tc.config, arg);
        if (sv && mcp_expand(sv->url, NULL, NULL, &raw, NULL) < 0)
            raw = NULL;
        import_one(&ir, &tc, raw ? raw : tc.by_url ? arg : tc.url, true);
        secure_free(raw);
    } else {
        status = load_config(&tc, false);
        if (status != EXIT_OK)
            goto out;
        import_all(&ir, tc.config);
    }
    /* what no server of ours took: said, so that the user can name its URL */
    struct json_object *unmatched = json ? json_object_new_array() : NULL;
    for (size_t i = 0; argc - optind == 1 && i < ir.hashes.n; i++) {
        if (ir.taken[i])
            continue;
        if (!arg_quiet)
            fprintf(stderr,
                    "skipped mcp-remote's sign-in %s: no HTTP server in the configuration has "
                    "its URL (name the URL: mcp-auth import mcp-remote URL)\n",
                    ir.hashes.v[i]);
        if (unmatched)
            (void)json_object_array_add(unmatched, json_object_new_string(ir.hashes.v[i]));
    }
    if (!arg_quiet && ir.hashes.n == 0) {
        char *shown = path_display(dir);
        fprintf(stderr, "mcp-remote keeps no sign-in in '%s'\n", shown ? shown : dir);
        free(shown);
    }
    if (json) {
        struct json_object *answer = jsonw_answer_new();
        (void)json_object_object_add(answer, "source", json_object_new_string("mcp-remote"));
        (void)json_object_object_add(answer, "dir", json_object_new_string(dir));
        (void)json_object_object_add(answer, "dry_run", json_object_new_boolean(ir.dry_run));
        (void)json_object_object_add(answer, "servers", ir.servers);
        (void)json_object_object_add(answer, "unmatched", unmatched);
        ir.servers = NULL;
        if (ir.status != EXIT_OK) {
            const char *code = NULL;
            for (size_t i = 0; i < json_codes_n; i++)
                if (json_codes[i].status == ir.status)
                    code = json_codes[i].code;
            if (jsonw_answer_add_error(answer, code ? code : "failed", log_errors(arg_log), NULL) <
                0)
                ir.status = EXIT_FAILED;
        }
        const char *text = json_object_to_json_string_ext(
            answer, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        printf("%s\n", text);
        (void)fflush(stdout);
        json_object_put(answer);
        arg_answered = true;
    } else {
        json_object_put(unmatched);
    }
    status = ir.status;
out:
    json_object_put(ir.servers);
    free(ir.taken);
    strv_release(&ir.hashes);
    free(dir);
    target_release(&tc);
    return status;
}
