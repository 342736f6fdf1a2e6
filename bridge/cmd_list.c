/* cmd_list.c - mcp-bridge list: every server of the layered configuration, with its status.
 *
 * list is a report: every server after layering with its status and the state of the
 * credentials it needs (cmd_creds.h: the helpers asked once for all servers, never a value
 * shown), the files considered, and what was wrong with a file as a whole. An invalid entry is shown from the entry as written
 * (its parsed fields stop at its first problem). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/mcp_config.h"
#include "credkit/path.h"
#include "credkit/strv.h"
#include "credkit/util.h"

#include "cli.h"
#include "cmd_config.h"
#include "cmd_creds.h"

static const char *layer_word(enum mcp_layer l)
{
    switch (l) {
    case MCP_LAYER_BUNDLED:
        return "bundled";
    case MCP_LAYER_SHARED:
        return "shared";
    case MCP_LAYER_USER:
        return "user";
    case MCP_LAYER_PROJECT:
        return "project";
    }
    return "unknown";
}

/* What an entry is, for the report. A valid entry answers from its parsed fields; an invalid
 * one has them filled only up to its first problem, so it answers from the entry as written. */
static const char *view_transport(const struct mcp_server *s)
{
    if (!s->error)
        return mcp_transport_name(s->transport);
    const char *t = json_get_string(s->raw, "type");
    if (t && (strcmp(t, "stdio") == 0 || strcmp(t, "sse") == 0))
        return strcmp(t, "sse") == 0 ? "sse" : "stdio";
    if (t || json_get_string(s->raw, "url"))
        return "http";
    return "stdio";
}

static const char *view_command(const struct mcp_server *s)
{
    if (!s->error)
        return s->transport == MCP_TRANSPORT_STDIO ? s->command : NULL;
    return json_get_string(s->raw, "command");
}

static const char *view_url(const struct mcp_server *s)
{
    if (!s->error)
        return s->transport == MCP_TRANSPORT_STDIO ? NULL : s->url;
    return json_get_string(s->raw, "url");
}

/* The arguments of the command: the string elements of "args" as written for an invalid
 * entry. out borrows nothing. */
static int view_args(const struct mcp_server *s, struct strv *out)
{
    if (!s->error) {
        for (size_t i = 0; s->args[i]; i++)
            if (strv_push(out, s->args[i]) < 0)
                return -ENOMEM;
        return 0;
    }
    struct json_object *a = json_get_array(s->raw, "args");
    for (size_t i = 0; a && i < json_object_array_length(a); i++) {
        struct json_object *v = json_object_array_get_idx(a, i);
        if (json_object_is_type(v, json_type_string) &&
            strv_push(out, json_object_get_string(v)) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* The URL, else "command arg...", else "-". Templates as written. */
static int entry_target(const struct mcp_server *s, struct buf *out)
{
    const char *url = view_url(s), *cmd = view_command(s);
    struct strv args = STRV_INIT;
    int r;
    if (url || !cmd)
        return buf_append_str(out, url ? url : "-");
    r = view_args(s, &args);
    if (r >= 0)
        r = creds_shell_quote(out, cmd);
    for (size_t i = 0; r >= 0 && i < args.n; i++) {
        r = buf_append_char(out, ' ');
        if (r >= 0)
            r = creds_shell_quote(out, args.v[i]);
    }
    strv_release_secure(&args);
    return r;
}

/* The loader's reason without its "'<file>': server '<name>': " prefix (shown in columns of
 * their own); the whole message when it does not start that way. Borrowed. */
static const char *entry_reason(const struct mcp_server *s)
{
    const char *p = s->error;
    size_t n = strlen(s->source), k = strlen(s->name);
    if (p[0] != '\'' || strncmp(p + 1, s->source, n) != 0)
        return s->error;
    p += 1 + n;
    if (strncmp(p, "': server '", 11) != 0)
        return s->error;
    p += 11;
    if (strncmp(p, s->name, k) != 0 || strncmp(p + k, "': ", 3) != 0)
        return s->error;
    return p + k + 3;
}

/* ---- list -------------------------------------------------------------------------------- */

static const char list_help[] =
    "usage: mcp-bridge list [--json]\n"
    "\n"
    "Show every MCP server of the layered configuration, as the bridge sees it: name,\n"
    "transport, command or URL (as written: ${VAR} references are not expanded), the file that\n"
    "defines it, and its status; under it, the credentials it needs and their state, never a\n"
    "value. Then the files that were considered (lowest priority first) and what was wrong\n"
    "with any of them as a whole (not JSON, with line and column).\n"
    "\n"
    "STATUS: ok; invalid (the entry cannot be used: why); missing (a ${NAME} does not resolve,\n"
    "a headersHelper or mcp-auth is not there); login (OAuth: sign in with the command shown).\n"
    "The credentials are asked as the bridge asks them at connect, once for all servers:\n"
    "  ${NAME}         'secrets resolve --json' (a recipe first, then the environment): ok and\n"
    "                  where from, or why not (command recipes run, or answer from their cache)\n"
    "  oauth           'mcp-auth status --json': signed in (expires in ...), login required\n"
    "  headersHelper   the program and whether it is there: it is NOT run (it may have side\n"
    "                  effects; 'mcp-bridge test NAME' runs it)\n"
    "\n"
    "Layers, lowest to highest: the bundled configuration, ~/.config/mcp/mcp.json,\n"
    "~/.pi/agent/mcp.json (or --config PATH), .mcp.json and .pi/mcp.json in the working\n"
    "directory. A higher layer replaces a whole entry of the same name.\n"
    "\n"
    "  --json        one JSON object for programs (paths absolute, every key always present):\n"
    "                {\"servers\": [{\"name\", \"transport\": \"stdio\"|\"http\"|\"sse\",\n"
    "                  \"command\": string|null, \"args\": [string], \"url\": string|null,\n"
    "                  \"source\": path, \"layer\": \"bundled\"|\"shared\"|\"user\"|\"project\",\n"
    "                  \"valid\": bool, \"error\": string|null, \"missingVariables\": [string],\n"
    "                  \"status\": \"ok\"|\"invalid\"|\"missing\"|\"login\",\n"
    "                  \"credentials\": {\"variables\": [{\"name\", \"resolved\": bool,\n"
    "                     \"source\": string|null, \"expiresAt\": number|null,\n"
    "                     \"error\": string|null}],\n"
    "                   \"oauth\": null|{\"state\": \"signed-in\"|\"expired\"|\"login-required\"|\n"
    "                     \"unknown\", \"expiresAt\": number|null, \"refreshToken\": bool,\n"
    "                     \"autoAuth\": bool, \"command\": string|null,\n"
    "                     \"error\": string|null},\n"
    "                   \"headersHelper\": null|{\"program\", \"shell\": bool,\n"
    "                     \"path\": string|null}}}],\n"
    "                 \"files\": [{\"path\", \"exists\": bool}],\n"
    "                 \"diagnostics\": [{\"source\", \"message\"}]}\n"
    "\n"
    "Helpers: $CREDKIT_SECRETS and $CREDKIT_MCP_AUTH name them; else they are looked for next\n"
    "to mcp-bridge, then on PATH. One that is missing is shown under each server that needs it.\n"
    "\n"
    "exit status: 0 (also when some entries are invalid or miss credentials: this is a report),\n"
    "3 when the configuration cannot be loaded at all (--config names a missing file)\n"
    "\n"
    "examples:\n"
    "  mcp-bridge list\n"
    "  mcp-bridge list --json | jq '.servers[] | select(.status != \"ok\") | .name'\n";

/* Display path -> absolute path of the files the configuration considered (entries and
 * diagnostics name files by their display path). Borrowed; disp itself when unknown. */
static const char *source_path(const struct mcp_config *c, char *const *displays, const char *disp)
{
    for (size_t i = 0; i < mcp_config_file_count(c); i++)
        if (displays[i] && strcmp(displays[i], disp) == 0)
            return mcp_config_file_at(c, i, NULL);
    return disp;
}

/* The STATUS of an entry. Static. */
static const char *entry_status(const struct creds_server *cs)
{
    return cs->server->error ? "invalid" : creds_server_status(cs);
}

static struct json_object *jint_or_null(bool *oom, int64_t v)
{
    struct json_object *o = v > 0 ? json_object_new_int64(v) : NULL;
    if (v > 0 && !o)
        *oom = true;
    return o;
}

static struct json_object *jbool(bool *oom, bool v)
{
    struct json_object *o = json_object_new_boolean(v);
    if (!o)
        *oom = true;
    return o;
}

/* The names that do not resolve: from the secrets answer for a valid entry, the loader's (not
 * in the environment) for an invalid one. */
static struct json_object *json_missing(bool *oom, const struct creds_server *cs)
{
    if (!cs->checked)
        return cfg_jstrv(oom, cs->server->missing_vars);
    struct json_object *a = json_object_new_array();
    if (!a)
        *oom = true;
    for (size_t i = 0; a && i < cs->n_vars; i++)
        if (!cs->vars[i].resolved)
            cfg_jpush(oom, a, cfg_jstr(oom, cs->vars[i].name));
    return a;
}

static struct json_object *json_oauth(bool *oom, const struct creds_oauth *oa)
{
    static const char *const states[] = {
        [CREDS_OAUTH_SIGNED_IN] = "signed-in",
        [CREDS_OAUTH_EXPIRED] = "expired",
        [CREDS_OAUTH_LOGIN_REQUIRED] = "login-required",
        [CREDS_OAUTH_UNKNOWN] = "unknown",
    };
    if (oa->state == CREDS_OAUTH_NOT_USED)
        return NULL;
    struct json_object *o = json_object_new_object();
    cfg_jadd(oom, o, "state", cfg_jstr(oom, states[oa->state]));
    cfg_jadd(oom, o, "expiresAt", jint_or_null(oom, oa->expires_at));
    cfg_jadd(oom, o, "refreshToken", jbool(oom, oa->refresh_token));
    cfg_jadd(oom, o, "autoAuth", jbool(oom, oa->auto_auth));
    cfg_jadd(oom, o, "command", cfg_jstr(oom, oa->command));
    cfg_jadd(oom, o, "error", cfg_jstr(oom, oa->error));
    return o;
}

static struct json_object *json_credentials(bool *oom, const struct creds_server *cs)
{
    struct json_object *o = json_object_new_object(), *vars = json_object_new_array();
    for (size_t i = 0; i < cs->n_vars; i++) {
        const struct creds_var *v = &cs->vars[i];
        struct json_object *jv = json_object_new_object();
        cfg_jadd(oom, jv, "name", cfg_jstr(oom, v->name));
        cfg_jadd(oom, jv, "resolved", jbool(oom, v->resolved));
        cfg_jadd(oom, jv, "source", cfg_jstr(oom, v->source));
        cfg_jadd(oom, jv, "expiresAt", jint_or_null(oom, v->expires_at));
        cfg_jadd(oom, jv, "error", cfg_jstr(oom, v->error));
        cfg_jpush(oom, vars, jv);
    }
    cfg_jadd(oom, o, "variables", vars);
    cfg_jadd(oom, o, "oauth", json_oauth(oom, &cs->oauth));
    struct json_object *h = NULL;
    if (cs->helper) {
        h = json_object_new_object();
        cfg_jadd(oom, h, "program", cfg_jstr(oom, cs->helper->program));
        cfg_jadd(oom, h, "shell", jbool(oom, cs->helper->shell));
        cfg_jadd(oom, h, "path", cfg_jstr(oom, cs->helper->path));
        if (!h)
            *oom = true;
    }
    cfg_jadd(oom, o, "headersHelper", h);
    return o;
}

static int list_json(const struct mcp_config *c, const struct creds_report *rep,
                     char *const *displays)
{
    bool oom = false;
    struct json_object *root = json_object_new_object();
    struct json_object *servers = json_object_new_array(), *files = json_object_new_array(),
                       *diags = json_object_new_array();

    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct creds_server *cs = creds_report_at(rep, i);
        const struct mcp_server *s = cs->server;
        const char *cmd = view_command(s);
        struct strv args = STRV_INIT;
        struct json_object *o = json_object_new_object();
        if (cmd && view_args(s, &args) < 0)
            oom = true;
        cfg_jadd(&oom, o, "name", cfg_jstr(&oom, s->name));
        cfg_jadd(&oom, o, "transport", cfg_jstr(&oom, view_transport(s)));
        cfg_jadd(&oom, o, "command", cfg_jstr(&oom, cmd));
        cfg_jadd(&oom, o, "args", cfg_jstrv(&oom, args.v));
        strv_release_secure(&args);
        cfg_jadd(&oom, o, "url", cfg_jstr(&oom, view_url(s)));
        cfg_jadd(&oom, o, "source", cfg_jstr(&oom, source_path(c, displays, s->source)));
        cfg_jadd(&oom, o, "layer", cfg_jstr(&oom, layer_word(s->layer)));
        cfg_jadd(&oom, o, "valid", json_object_new_boolean(!s->error));
        cfg_jadd(&oom, o, "error", cfg_jstr(&oom, s->error));
        cfg_jadd(&oom, o, "missingVariables", json_missing(&oom, cs));
        cfg_jadd(&oom, o, "status", cfg_jstr(&oom, entry_status(cs)));
        cfg_jadd(&oom, o, "credentials", json_credentials(&oom, cs));
        cfg_jpush(&oom, servers, o);
    }
    for (size_t i = 0; i < mcp_config_file_count(c); i++) {
        bool exists = false;
        const char *p = mcp_config_file_at(c, i, &exists);
        struct json_object *o = json_object_new_object();
        cfg_jadd(&oom, o, "path", cfg_jstr(&oom, p));
        cfg_jadd(&oom, o, "exists", json_object_new_boolean(exists));
        cfg_jpush(&oom, files, o);
    }
    for (size_t i = 0; i < mcp_config_diag_count(c); i++) {
        const struct mcp_config_diag *d = mcp_config_diag_at(c, i);
        struct json_object *o = json_object_new_object();
        cfg_jadd(&oom, o, "source", cfg_jstr(&oom, source_path(c, displays, d->source)));
        cfg_jadd(&oom, o, "message", cfg_jstr(&oom, d->message));
        cfg_jpush(&oom, diags, o);
    }
    cfg_jadd(&oom, root, "servers", servers);
    cfg_jadd(&oom, root, "files", files);
    cfg_jadd(&oom, root, "diagnostics", diags);
    const char *text = oom ? NULL : json_object_to_json_string_ext(root, CFG_JSON_OUT_FLAGS);
    if (text)
        printf("%s\n", text);
    json_object_put(root);
    return text ? 0 : -ENOMEM;
}

/* The lines under an entry: why it is invalid, or the state of each credential it needs. */
static int print_details(const struct creds_server *cs, int64_t now, struct buf *line)
{
    int r = 0;
    if (cs->server->error) {
        printf("    error: %s\n", entry_reason(cs->server));
        return 0;
    }
    for (size_t i = 0; r >= 0 && i < cs->n_vars; i++) {
        buf_reset(line);
        r = creds_describe_var(&cs->vars[i], now, line);
        if (r >= 0)
            printf("    ${%s}: %s\n", cs->vars[i].name, buf_str(line));
    }
    if (r >= 0 && cs->oauth.state != CREDS_OAUTH_NOT_USED) {
        buf_reset(line);
        r = creds_describe_oauth(&cs->oauth, now, line);
        if (r >= 0)
            printf("    oauth: %s\n", buf_str(line));
    }
    if (r >= 0 && cs->helper) {
        buf_reset(line);
        r = creds_describe_helper(cs->helper, line);
        if (r >= 0)
            printf("    headersHelper: %s\n", buf_str(line));
    }
    return r;
}

static int list_text(const struct mcp_config *c, const struct creds_report *rep)
{
    size_t n = mcp_config_count(c), w_name = 4, w_src = 6;
    int64_t now = (int64_t)time(NULL);
    struct buf target, line;
    int r = 0;

    for (size_t i = 0; i < n; i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        size_t k = strlen(s->name), m = strlen(s->source);
        w_name = k > w_name ? k : w_name;
        w_src = m > w_src ? m : w_src;
    }
    if (n == 0)
        printf("no MCP servers configured: add one with 'mcp-bridge add'\n");
    else
        printf("%-*s  %-9s  %-7s  %-*s  %s\n", (int)w_name, "NAME", "TRANSPORT", "STATUS",
               (int)w_src, "SOURCE", "COMMAND OR URL");
    buf_init(&target, 256 * 1024);
    buf_init(&line, 64 * 1024);
    for (size_t i = 0; i < n && r >= 0; i++) {
        const struct creds_server *cs = creds_report_at(rep, i);
        const struct mcp_server *s = cs->server;
        buf_reset(&target);
        r = entry_target(s, &target);
        if (r < 0)
            break;
        printf("%-*s  %-9s  %-7s  %-*s  %s\n", (int)w_name, s->name, view_transport(s),
               entry_status(cs), (int)w_src, s->source, buf_str(&target));
        r = print_details(cs, now, &line);
    }
    buf_release(&target);
    buf_release(&line);

    printf("\nfiles, lowest priority first:\n");
    for (size_t i = 0; i < mcp_config_file_count(c); i++) {
        bool exists = false;
        const char *p = mcp_config_file_at(c, i, &exists);
        char *d = path_display(p);
        printf("  %s%s\n", d ? d : p, exists ? "" : " (absent)");
        free(d);
    }
    if (mcp_config_diag_count(c) > 0) {
        printf("\nproblems with files (their servers are not used):\n");
        for (size_t i = 0; i < mcp_config_diag_count(c); i++)
            printf("  %s\n", mcp_config_diag_at(c, i)->message);
    }
    return r;
}

int cmd_list(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {0}};
    struct mcp_config *c = NULL;
    struct creds_report *rep = NULL;
    char *displays[8] = {0};
    bool json = false;
    int opt, r, status = BRIDGE_EXIT_FAILED;

    if (args_wants_help(argc, argv)) {
        fputs(list_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    optind = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt != 'j')
            return cfg_usage_error(log, "list", "unknown option");
        json = true;
    }
    if (optind != argc)
        return cfg_usage_error(log, "list", "list takes no arguments");

    /* the problems with files are part of the report: not warnings printed on top of it */
    c = cfg_load_quietly(g, log);
    if (!c)
        return BRIDGE_EXIT_CONFIG;

    for (size_t i = 0; i < mcp_config_file_count(c) && i < ELEMENTSOF(displays); i++) {
        displays[i] = path_display(mcp_config_file_at(c, i, NULL));
        if (!displays[i])
            goto out;
    }
    /* the helpers are asked once for all the servers; a failing one is a server's state */
    r = creds_report_new(c, g->config, &rep);
    if (r < 0) {
        log_error(log, "cannot check the credentials: %s", strerror(-r));
        goto out;
    }
    r = json ? list_json(c, rep, displays) : list_text(c, rep);
    if (r < 0) {
        log_error(log, "cannot print the list: %s", strerror(-r));
        goto out;
    }
    if (fflush(stdout) != 0) {
        log_error(log, "cannot write the list: %s", strerror(errno));
        goto out;
    }
    status = BRIDGE_EXIT_OK;
out:
    for (size_t i = 0; i < ELEMENTSOF(displays); i++)
        free(displays[i]);
    creds_report_free(rep);
    mcp_config_free(c);
    return status;
}
