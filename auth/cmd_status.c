/* cmd_status.c - "mcp-auth status [SERVER]": the stored sign-ins, as a table or as JSON, each
 * named by the configuration's entries for its URL; never a token */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/jsonw.h"
#include "credkit/log.h"
#include "credkit/mcp_config.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "credkit/textsafe.h"
#include "credkit/url.h"

#include "cli.h"
#include "oauth_config.h"
#include "refresh.h"
#include "tokens.h"

static const char status_help[] =
    "usage: mcp-auth status [--json] [--account NAME] [SERVER]\n"
    "\n"
    "Show each stored sign-in: server URL, issuer, how the client was registered, when the\n"
    "token expires, the scopes granted, and whether a refresh token exists. Never shows tokens.\n"
    "ACCOUNT is who signed in, as the server says; LABEL the account name given at sign-in\n"
    "(--account, or the entry's \"account\"), '-' for the default account. With --account NAME,\n"
    "only that account's sign-ins.\n"
    "\n"
    "examples:\n"
    "  mcp-auth status\n"
    "  mcp-auth status --account work\n"
    "  mcp-auth status --json github\n";

/* The names of the configuration's entries whose URL is url (canonical) and whose account is
 * label, into out (none when there is no configuration). A URL with a ${VAR} that does not
 * resolve names no entry. */
static void names_of(const struct mcp_config *c, const char *url, const char *label,
                     struct strv *out)
{
    strv_release(out);
    for (size_t i = 0; c && i < mcp_config_count(c); i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        char *u = NULL, *canon = NULL;
        struct err e = ERR_INIT;
        if (s->error || !s->url || s->transport == MCP_TRANSPORT_STDIO)
            continue;
        bool same = mcp_expand(s->url, NULL, NULL, &u, &e) >= 0 &&
                    url_canonical(u, &canon, &e) >= 0 && strcmp(canon, url) == 0;
        secure_free(u);
        free(canon);
        struct oauth_config *oc = NULL;
        if (same)
            same = oauth_config_parse_server(s, &oc, NULL) >= 0 && same_account(oc->account, label);
        oauth_config_free(oc);
        if (same && strv_push(out, s->name) < 0)
            return; /* the names that fit */
    }
}

/* One stored sign-in as `status --json` shows it: never a token. names: its entries in the
 * configuration. */
static struct json_object *status_json(const struct token_entry *t, const struct strv *names)
{
    struct json_object *o = json_object_new_object(), *n = json_object_new_array();
    for (size_t i = 0; i < names->n; i++)
        (void)json_object_array_add(n, json_object_new_string(names->v[i]));
    (void)json_object_object_add(o, "names", n);
    (void)json_object_object_add(o, "url", json_object_new_string(t->server_url));
    (void)json_object_object_add(o, "account",
                                 t->account ? json_object_new_string(t->account) : NULL);
    (void)json_object_object_add(o, "label", t->label ? json_object_new_string(t->label) : NULL);
    (void)json_object_object_add(o, "issuer", json_object_new_string(t->issuer));
    (void)json_object_object_add(o, "registration",
                                 json_object_new_string(registration_method_str(t->registration)));
    if (t->client_id)
        (void)json_object_object_add(o, "client_id", json_object_new_string(t->client_id));
    (void)json_object_object_add(o, "has_access_token",
                                 json_object_new_boolean(t->access_token != NULL));
    if (t->access_token)
        (void)json_object_object_add(o, "access_token_usable",
                                     json_object_new_boolean(auth_token_sendable(t)));
    if (t->access_token && t->expires_at > 0)
        (void)json_object_object_add(o, "expires_at", json_object_new_int64(t->expires_at));
    if (t->scope)
        (void)json_object_object_add(o, "scope", json_object_new_string(t->scope));
    (void)json_object_object_add(o, "has_refresh_token",
                                 json_object_new_boolean(t->refresh_token != NULL));
    return o;
}

/* Prints the stored sign-ins (those of tc's url only, when it has one; of its account only,
 * when it has a url or --account names one) as a table or as JSON;
 * returns how many were shown. With --json, none for a SERVER is the answer's error. Each is
 * named by the configuration's entries for its URL (tc->config), as users signed in. */
static size_t status_print(struct token_entry *const *all, size_t n, const struct target_ctx *tc,
                           enum tokens_backend backend, bool json)
{
    const char *url = tc->url;
    struct json_object *arr = json_object_new_array();
    struct strv names = STRV_INIT;
    struct buf joined;
    buf_init(&joined, 64 * 1024);
    if (!json)
        printf("%-16s %-24s %-12s %-12s %-7s %-24s %s\n", "NAME", "ACCOUNT", "LABEL", "EXPIRES",
               "REFRESH", "SCOPES", "SERVER");
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        const struct token_entry *t = all[i];
        if (url && strcmp(t->server_url, url) != 0)
            continue;
        if ((url || arg_account) && !same_account(t->label, tc->t.label))
            continue;
        shown++;
        names_of(tc->config, t->server_url, t->label, &names);
        char exp[64];
        describe_expiry(t->access_token ? t->expires_at : 0, exp, sizeof(exp));
        if (!t->access_token)
            (void)snprintf(exp, sizeof(exp), "signed out");
        else if (!auth_token_sendable(t))
            (void)snprintf(exp, sizeof(exp), "unusable"); /* never sent: see `header` */
        if (json) {
            (void)json_object_array_add(arr, status_json(t, &names));
        } else {
            struct buf su, sn, sa, ss;
            buf_init(&su, 64 * 1024);
            buf_init(&sn, 64 * 1024);
            buf_init(&sa, 64 * 1024);
            buf_init(&ss, 64 * 1024);
            buf_reset(&joined);
            for (size_t k = 0; k < names.n; k++)
                if (buf_printf(&joined, "%s%s", k ? "," : "", names.v[k]) < 0)
                    break;
            /* a key written in the URL's query is not shown (--json has the URL whole: it
             * names the entry for programs) */
            char *url_shown = url_display(t->server_url);
            printf("%-16s %-24s %-12s %-12s %-7s %-24s %s\n",
                   joined.len ? text_escaped(&sn, buf_str(&joined)) : "-",
                   t->account ? text_escaped(&sa, t->account) : "-", t->label ? t->label : "-", exp,
                   t->refresh_token ? "yes" : "no", t->scope ? text_escaped(&ss, t->scope) : "-",
                   url_shown ? text_escaped(&su, url_shown) : "-");
            free(url_shown);
            buf_release(&su);
            buf_release(&sn);
            buf_release(&sa);
            buf_release(&ss);
        }
    }
    strv_release(&names);
    buf_release(&joined);
    if (json) {
        struct json_object *root = jsonw_answer_new();
        char msg[1200], cmd[1024];
        if (!root) {
            json_object_put(arr);
            return shown;
        }
        (void)json_object_object_add(root, "servers", json_object_get(arr));
        (void)json_object_object_add(root, "store",
                                     json_object_new_string(tokens_backend_str(backend)));
        if (shown == 0 && url) {
            signin_command(tc, cmd, sizeof(cmd));
            (void)snprintf(msg, sizeof(msg), "no sign-in stored for %s", url);
            (void)snprintf(arg_fix, sizeof(arg_fix), "run '%s'", cmd);
            if (jsonw_answer_add_error(root, "login_required", msg, arg_fix) < 0)
                say_error("out of memory");
        }
        arg_answered = true;
        printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_SPACED |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
    } else if (shown == 0) {
        printf("(no sign-ins stored%s%s)\n", url ? " for " : "", url ? url : "");
    }
    if (!json && backend == TOKENS_BACKEND_KEYRING)
        printf("(the tokens are in the keychain: see 'mcp-auth store')\n");
    json_object_put(arr);
    return shown;
}

const struct option status_opts[] = {
    {"json", no_argument, NULL, 'j'}, {"account", required_argument, NULL, 'a'}, {0}};

int cmd_status(int argc, char **argv)
{
    const struct option *opts = status_opts;
    bool json = false;
    struct target_ctx tc = {0};
    struct token_entry **all = NULL;
    struct err e = ERR_INIT;
    size_t n = 0;
    int opt, status = EXIT_OK;
    if (args_wants_help(argc, argv)) {
        fputs(status_help, stdout);
        return EXIT_OK;
    }
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'j')
            json = true;
        else if (opt == 'a' && take_account(optarg) != EXIT_OK)
            return EXIT_USAGE;
        else if (opt != 'a')
            return option_error(argv, "", opts);
    }
    if (argc - optind > 1) {
        say_error("status takes at most one SERVER");
        return EXIT_USAGE;
    }
    if (argc - optind == 1)
        status = resolve_target(argv[optind], &tc);
    else if (arg_config)
        status = load_config(&tc, false); /* a --config that names no file is an error here too */
    else
        (void)load_config(&tc, true); /* only to name each sign-in by its entries */
    if (!tc.url)
        tc.t.label = arg_account;
    if (status != EXIT_OK)
        goto out;
    enum tokens_backend backend = TOKENS_BACKEND_FILE;
    if (tokens_store_backend(&backend, &e) < 0 || tokens_list(&all, &n, &e) < 0) {
        say_error("%s", err_msg(&e));
        status = EXIT_FAILED;
        goto out;
    }
    if (e.msg[0])
        say_warn("%s", err_msg(&e));
    if (status_print(all, n, &tc, backend, json) == 0 && tc.url)
        status = EXIT_LOGIN_REQUIRED;
out:
    for (size_t i = 0; i < n; i++)
        token_entry_free(all[i]);
    free(all);
    target_release(&tc);
    return status;
}
