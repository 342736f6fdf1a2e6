/* cmd_trust.c - mcp-bridge trust: review and approve the entries a project wrote.
 *
 * A project's entries are inert until approved (credkit/mcp_trust.h). trust shows, for each entry of the
 * project that is not approved as it is now, exactly what it would run and which ${VAR}s it
 * would send where, every value as written (nothing is expanded or looked up) and escaped for
 * the terminal; then asks (on a terminal) or takes --yes, and records the approvals. --revoke
 * removes the project's approvals. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/jsonw.h"
#include "credkit/mcp_config.h"
#include "credkit/path.h"
#include "credkit/strv.h"
#include "credkit/textsafe.h"
#include "credkit/tty.h"

#include "cli/cli.h"
#include "cli/cmd_config.h"
#include "cli/cmd_creds.h"
#include "credkit/mcp_trust.h"

static const char trust_help[] =
    "usage: mcp-bridge trust [--project DIR] [--yes] [--json]\n"
    "       mcp-bridge trust [--project DIR] --revoke [--json]\n"
    "\n"
    "A project's configuration files (.mcp.json and .pi/mcp.json in the working directory, and\n"
    "the project files of imports: .cursor/mcp.json, .vscode/mcp.json) are written by whoever\n"
    "wrote the project: their entries could start any command and send your secrets anywhere.\n"
    "They are not used until you approve them: until then 'list' shows them as \"untrusted\",\n"
    "and serve, connect, test and call do not start them and expand none of their ${VAR}s.\n"
    "Your own files (~/.pi/agent/mcp.json, ~/.config/mcp/mcp.json, --config) are trusted.\n"
    "\n"
    "trust shows every entry of the project that is not approved as it is now: the command and\n"
    "arguments it runs, its working directory and environment, the URL and headers, as written\n"
    "(${...} not expanded), and which ${VAR} it would send where. Then it asks (on a terminal)\n"
    "and records your approval in ~/.pi/agent/mcp-trust.json: a SHA-256 of the entry's name,\n"
    "file and content. An entry changed in any way needs approval again.\n"
    "\n"
    "  --project DIR   the project directory (default: the working directory)\n"
    "  --yes           approve without asking (scripts, CI: review with --json first)\n"
    "  --revoke        remove every approval given for the project\n"
    "  --json          one JSON object for programs: {\"version\": 1, \"project\",\n"
    "                  \"entries\": [{\"name\",\n"
    "                  \"file\", \"trust\": \"untrusted\"|\"changed\"|\"approved\", \"sha256\",\n"
    "                  \"transport\", \"command\", \"args\", \"cwd\", \"env\": [names],\n"
    "                  \"url\", \"headers\": [\"Name: value\"], \"headers_helper\",\n"
    "                  \"variables\": [{\"name\", \"to\"}]}], \"approved\": [names]}, or\n"
    "                  {\"version\": 1, \"project\", \"revoked\": N}; without --yes it\n"
    "                  approves nothing; on failure {\"version\": 1, \"error\": {\"code\",\n"
    "                  \"message\", \"fix\"}} (docs/json.md)\n"
    "\n"
    "exit status: 0 approved (or nothing to approve, or --json without --yes: a report, or\n"
    "revoked), 1 nothing approved (declined, or not a terminal and no --yes) or the approvals\n"
    "could not be written, 2 usage error, 3 the configuration or the approvals file cannot be\n"
    "read, or DIR is not a directory\n"
    "\n"
    "examples:\n"
    "  mcp-bridge trust                        # review and approve this project's servers\n"
    "  mcp-bridge trust --json | jq '.entries[] | {name, command, url, variables}'\n"
    "  mcp-bridge trust --yes                  # in CI, for a checked configuration\n"
    "  mcp-bridge trust --revoke --project ~/src/repo\n";

struct trust_args {
    const char *project;
    bool yes, revoke, json;
};

/* ---- what an entry does ------------------------------------------------------------------ */

/* The ${VAR}s of one value and where they would go: "NAME\tWHERE" lines, each once. */
struct refs {
    struct strv *out;
    const char *to;
    int r;
};

static void on_ref(const char *name, void *userdata)
{
    struct refs *x = userdata;
    char *line = NULL;
    if (x->r < 0)
        return;
    if (asprintf(&line, "%s\t%s", name, x->to) < 0) {
        x->r = -ENOMEM;
        return;
    }
    if (strv_contains(x->out, line))
        free(line);
    else if (strv_push_take(x->out, line) < 0)
        x->r = -ENOMEM;
}

static int refs_of(struct strv *out, const char *value, const char *to)
{
    struct refs x = {out, to, 0};
    if (value)
        mcp_template_vars(value, on_ref, &x);
    return x.r;
}

/* Every ${VAR} of the entry as written (raw), with where it would be sent. */
static int entry_refs(struct json_object *raw, struct strv *out)
{
    const char *url = json_get_string(raw, "url");
    char *to = NULL;
    int r = refs_of(out, url, "the URL");
    struct json_object *h = json_get_object(raw, "headers");
    if (h) {
        json_object_object_foreach(h, k, v)
        {
            if (r < 0 || !json_object_is_type(v, json_type_string))
                continue;
            free(to);
            to = NULL;
            if (asprintf(&to, "header '%s' to %s", k, url ? url : "the server") < 0)
                return -ENOMEM;
            r = refs_of(out, json_object_get_string(v), to);
        }
    }
    free(to);
    struct json_object *env = json_get_object(raw, "env");
    if (env) {
        json_object_object_foreach(env, k, v)
        {
            (void)k;
            if (r >= 0 && json_object_is_type(v, json_type_string))
                r = refs_of(out, json_object_get_string(v), "the command's environment");
        }
    }
    struct json_object *args = json_get_array(raw, "args");
    for (size_t i = 0; r >= 0 && args && i < json_object_array_length(args); i++) {
        struct json_object *v = json_object_array_get_idx(args, i);
        if (json_object_is_type(v, json_type_string))
            r = refs_of(out, json_object_get_string(v), "the command's arguments");
    }
    if (r >= 0)
        r = refs_of(out, json_get_string(raw, "cwd"), "the command's working directory");
    if (r >= 0)
        r = refs_of(out, json_get_string(raw, "bearerToken"), "the bearer token to the URL");
    const char *bte = json_get_string(raw, "bearerTokenEnv");
    if (r >= 0 && bte) {
        struct refs x = {out, "the bearer token to the URL", 0};
        on_ref(bte, &x);
        r = x.r;
    }
    return r;
}

/* "command arg..." shell-quoted, as written. */
static int command_line(struct json_object *raw, struct buf *out)
{
    const char *cmd = json_get_string(raw, "command");
    struct json_object *args = json_get_array(raw, "args");
    int r = cmd_creds_shell_quote(out, cmd ? cmd : "");
    for (size_t i = 0; r >= 0 && args && i < json_object_array_length(args); i++) {
        struct json_object *v = json_object_array_get_idx(args, i);
        r = buf_append_char(out, ' ');
        if (r >= 0)
            r = cmd_creds_shell_quote(out, json_object_is_type(v, json_type_string)
                                               ? json_object_get_string(v)
                                               : json_object_to_json_string(v));
    }
    return r;
}

static const char *state_text(enum mcp_trust t)
{
    switch (t) {
    case MCP_TRUST_CHANGED:
        return "changed since it was approved";
    case MCP_TRUST_APPROVED:
        return "approved";
    case MCP_TRUST_UNTRUSTED:
        return "untrusted, never approved";
    case MCP_TRUST_TRUSTED:
        break;
    }
    return "trusted";
}

/* One entry for a person: every value escaped. */
static int print_entry(const struct mcp_server *s, const char *file, enum mcp_trust t)
{
    struct json_object *raw = s->raw;
    struct buf e1, e2, line;
    struct strv refs = STRV_INIT;
    char *disp = path_display(file);
    int r = 0;

    buf_init(&e1, 64 * 1024);
    buf_init(&e2, 64 * 1024);
    buf_init(&line, 64 * 1024);
    printf("server '%s' in %s: %s\n", text_escaped(&e1, s->name),
           text_escaped(&e2, disp ? disp : file), state_text(t));
    if (json_get_string(raw, "command")) {
        r = command_line(raw, &line);
        printf("  runs:      %s\n", r >= 0 ? text_escaped(&e1, buf_str(&line)) : "(too long)");
    }
    if (json_get_string(raw, "cwd"))
        printf("  in:        %s\n", text_escaped(&e1, json_get_string(raw, "cwd")));
    struct json_object *env = json_get_object(raw, "env");
    if (env) {
        json_object_object_foreach(env, k, v)
        {
            printf("  env:       %s=%s\n", text_escaped(&e1, k),
                   text_escaped(&e2, json_object_is_type(v, json_type_string)
                                         ? json_object_get_string(v)
                                         : json_object_to_json_string(v)));
        }
    }
    if (json_get_string(raw, "url"))
        printf("  url:       %s\n", text_escaped(&e1, json_get_string(raw, "url")));
    struct json_object *h = json_get_object(raw, "headers");
    if (h) {
        json_object_object_foreach(h, k, v)
        {
            printf("  header:    %s: %s\n", text_escaped(&e1, k),
                   text_escaped(&e2, json_object_is_type(v, json_type_string)
                                         ? json_object_get_string(v)
                                         : json_object_to_json_string(v)));
        }
    }
    if (json_get_string(raw, "headersHelper"))
        printf("  runs for its headers: %s\n",
               text_escaped(&e1, json_get_string(raw, "headersHelper")));
    if (json_get_object(raw, "oauth") ||
        (json_get_string(raw, "auth") && strcmp(json_get_string(raw, "auth"), "oauth") == 0))
        printf("  signs in:  OAuth at the URL's authorization server (mcp-auth)\n");
    if (r >= 0)
        r = entry_refs(raw, &refs);
    for (size_t i = 0; r >= 0 && i < refs.n; i++) {
        const char *tab = strchr(refs.v[i], '\t');
        buf_reset(&line);
        if (buf_append(&line, refs.v[i], (size_t)(tab - refs.v[i])) < 0)
            continue;
        printf("  sends:     ${%s} in %s\n", text_escaped(&e1, buf_str(&line)),
               text_escaped(&e2, tab + 1));
    }
    if (r >= 0 && refs.n == 0)
        printf("  sends:     no ${VAR}\n");
    strv_release(&refs);
    buf_release(&e1);
    buf_release(&e2);
    buf_release(&line);
    free(disp);
    return r;
}

static struct json_object *entry_json(bool *oom, const struct mcp_server *s, const char *file,
                                      enum mcp_trust t)
{
    struct json_object *raw = s->raw, *o = json_object_new_object();
    char hex[TRUST_HEX];
    struct strv refs = STRV_INIT;
    cfg_jadd(oom, o, "name", cfg_jstr(oom, s->name));
    cfg_jadd(oom, o, "file", cfg_jstr(oom, file));
    cfg_jadd(oom, o, "trust", cfg_jstr(oom, mcp_trust_name(t)));
    cfg_jadd(oom, o, "sha256",
             trust_digest(s->name, file, raw, hex) >= 0 ? cfg_jstr(oom, hex) : NULL);
    const char *type = json_get_string(raw, "type");
    cfg_jadd(oom, o, "transport",
             cfg_jstr(oom, type                              ? type
                           : json_get_string(raw, "command") ? "stdio"
                                                             : "http"));
    cfg_jadd(oom, o, "command", cfg_jstr(oom, json_get_string(raw, "command")));
    struct json_object *args = json_get_array(raw, "args");
    cfg_jadd(oom, o, "args", args ? json_object_get(args) : json_object_new_array());
    cfg_jadd(oom, o, "cwd", cfg_jstr(oom, json_get_string(raw, "cwd")));
    struct json_object *names = json_object_new_array();
    struct json_object *env = json_get_object(raw, "env");
    if (env) {
        json_object_object_foreach(env, k, v)
        {
            (void)v;
            cfg_jpush(oom, names, cfg_jstr(oom, k));
        }
    }
    cfg_jadd(oom, o, "env", names);
    cfg_jadd(oom, o, "url", cfg_jstr(oom, json_get_string(raw, "url")));
    struct json_object *hs = json_object_new_array(), *h = json_get_object(raw, "headers");
    if (h) {
        json_object_object_foreach(h, k, v)
        {
            char *line = NULL;
            if (asprintf(&line, "%s: %s", k,
                         json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                  : "") < 0) {
                *oom = true;
                continue;
            }
            cfg_jpush(oom, hs, cfg_jstr(oom, line));
            free(line);
        }
    }
    cfg_jadd(oom, o, "headers", hs);
    cfg_jadd(oom, o, "headers_helper", cfg_jstr(oom, json_get_string(raw, "headersHelper")));
    struct json_object *vars = json_object_new_array();
    if (entry_refs(raw, &refs) < 0)
        *oom = true;
    for (size_t i = 0; i < refs.n; i++) {
        char *tab = strchr(refs.v[i], '\t');
        *tab = '\0';
        struct json_object *v = json_object_new_object();
        cfg_jadd(oom, v, "name", cfg_jstr(oom, refs.v[i]));
        cfg_jadd(oom, v, "to", cfg_jstr(oom, tab + 1));
        cfg_jpush(oom, vars, v);
    }
    strv_release(&refs);
    cfg_jadd(oom, o, "variables", vars);
    return o;
}

/* ---- the command ------------------------------------------------------------------------- */

const struct option cli_trust_options[] = {{"project", required_argument, NULL, 'p'},
                                           {"yes", no_argument, NULL, 'y'},
                                           {"revoke", no_argument, NULL, 'r'},
                                           {"json", no_argument, NULL, 'j'},
                                           {0}};

static int parse(int argc, char **argv, struct trust_args *a, struct log *log)
{
    int opt;
    optind = 0;
    while ((opt = getopt_long(argc, argv, "y", cli_trust_options, NULL)) != -1) {
        switch (opt) {
        case 'p':
            a->project = optarg;
            break;
        case 'y':
            a->yes = true;
            break;
        case 'r':
            a->revoke = true;
            break;
        case 'j':
            a->json = true;
            break;
        default:
            return cli_option_error(log, argv, "y", cli_trust_options);
        }
    }
    if (optind != argc)
        return cfg_usage_error(log, "trust", "trust takes no arguments ('%s' is one)",
                               argv[optind]);
    if (a->revoke && a->yes)
        return cfg_usage_error(log, "trust", "--revoke and --yes do not go together");
    return BRIDGE_EXIT_OK;
}

static int revoke(const char *dir, bool json, struct log *log)
{
    struct err e = ERR_INIT;
    size_t n = 0;
    struct buf shown;
    if (trust_revoke(NULL, dir, &n, &e) < 0) {
        log_error(log, "cannot remove the approvals: %s (nothing was changed)", err_msg(&e));
        return BRIDGE_EXIT_FAILED;
    }
    buf_init(&shown, 64 * 1024);
    if (json) {
        bool oom = false;
        struct json_object *o = jsonw_answer_new();
        cfg_jadd(&oom, o, "project", cfg_jstr(&oom, dir));
        cfg_jadd(&oom, o, "revoked", json_object_new_int64((int64_t)n));
        if (!oom)
            printf("%s\n", json_object_to_json_string_ext(o, CFG_JSON_OUT_FLAGS));
        json_object_put(o);
    } else
        printf("%zu approval%s of '%s' removed: its entries are untrusted again\n", n,
               n == 1 ? "" : "s", text_escaped(&shown, dir));
    buf_release(&shown);
    return BRIDGE_EXIT_OK;
}

/* Whether the person at the terminal approves; false when there is none (said why). */
static bool ask(size_t n, struct log *log)
{
    char *answer = NULL;
    char prompt[96];
    if (!tty_interactive()) {
        log_error(log, "nothing was approved: standard input is not a terminal; review the "
                       "entries above, then run 'mcp-bridge trust --yes'");
        return false;
    }
    (void)snprintf(prompt, sizeof(prompt), "approve %s? [y/N] ",
                   n == 1 ? "this entry" : "these entries");
    if (tty_prompt(prompt, false, &answer) < 0)
        answer = NULL;
    bool yes = answer &&
               (strcmp(answer, "y") == 0 || strcmp(answer, "yes") == 0 || strcmp(answer, "Y") == 0);
    free(answer);
    if (!yes)
        log_error(log, "nothing was approved");
    return yes;
}

static int approve(const struct mcp_config *c, const bool *pending, const char *dir,
                   struct log *log)
{
    size_t n = mcp_config_count(c), k = 0;
    struct trust_approval *a = calloc(n ? n : 1, sizeof(*a));
    char(*hex)[TRUST_HEX] = calloc(n ? n : 1, sizeof(*hex));
    struct err e = ERR_INIT;
    int status = BRIDGE_EXIT_FAILED;
    if (!a || !hex) {
        log_error(log, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (!pending[i])
            continue;
        const struct mcp_server *s = mcp_config_at(c, i);
        const char *file = mcp_config_path_at(c, i);
        if (trust_digest(s->name, file, s->raw, hex[k]) < 0) {
            log_error(log, "server '%s': cannot compute its digest", s->name);
            goto out;
        }
        a[k] = (struct trust_approval){s->name, file, hex[k]};
        k++;
    }
    int r = trust_approve(NULL, dir, a, k, &e);
    if (r < 0) {
        log_error(log, "cannot record the approvals: %s (nothing was changed)", err_msg(&e));
        status = r == -EBADMSG ? BRIDGE_EXIT_CONFIG : BRIDGE_EXIT_FAILED;
        goto out;
    }
    status = BRIDGE_EXIT_OK;
out:
    free(a);
    free(hex);
    return status;
}

int cmd_trust(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    struct trust_args a = {0};
    struct mcp_config *c = NULL;
    bool *pending = NULL;
    char *dir = NULL;
    int status;

    if (args_wants_help(argc, argv)) {
        fputs(trust_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    status = parse(argc, argv, &a, log);
    if (status != BRIDGE_EXIT_OK)
        return status;
    dir = realpath(a.project ? a.project : ".", NULL);
    if (!dir) {
        log_error(log, "cannot use the project directory '%s': %s", a.project ? a.project : ".",
                  strerror(errno));
        return BRIDGE_EXIT_CONFIG;
    }
    if (a.revoke) {
        status = revoke(dir, a.json, log);
        goto out;
    }
    status = BRIDGE_EXIT_CONFIG;
    c = cli_load_config_at(g, log, dir);
    if (!c)
        goto out;
    size_t n = mcp_config_count(c), n_pending = 0, n_project = 0;
    pending = calloc(n ? n : 1, sizeof(*pending));
    if (!pending) {
        log_error(log, "out of memory");
        status = BRIDGE_EXIT_FAILED;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        enum mcp_trust t = mcp_config_trust_at(c, i);
        pending[i] = t == MCP_TRUST_UNTRUSTED || t == MCP_TRUST_CHANGED;
        n_pending += pending[i];
        n_project += t != MCP_TRUST_TRUSTED;
    }

    bool approved = false;
    if (a.json && a.yes && n_pending > 0) {
        status = approve(c, pending, dir, log);
        if (status != BRIDGE_EXIT_OK)
            goto out;
        approved = true;
    }
    if (a.json) {
        bool oom = false;
        struct json_object *root = jsonw_answer_new(), *entries = json_object_new_array(),
                           *names = json_object_new_array();
        cfg_jadd(&oom, root, "project", cfg_jstr(&oom, dir));
        for (size_t i = 0; i < n; i++) {
            enum mcp_trust t = mcp_config_trust_at(c, i);
            if (t == MCP_TRUST_TRUSTED)
                continue;
            const struct mcp_server *s = mcp_config_at(c, i);
            cfg_jpush(&oom, entries,
                      entry_json(&oom, s, mcp_config_path_at(c, i),
                                 approved && pending[i] ? MCP_TRUST_APPROVED : t));
            if (approved && pending[i])
                cfg_jpush(&oom, names, cfg_jstr(&oom, s->name));
        }
        cfg_jadd(&oom, root, "entries", entries);
        cfg_jadd(&oom, root, "approved", names);
        const char *text = oom ? NULL : json_object_to_json_string_ext(root, CFG_JSON_OUT_FLAGS);
        if (text)
            printf("%s\n", text);
        json_object_put(root);
        status = text ? BRIDGE_EXIT_OK : BRIDGE_EXIT_FAILED;
        goto out;
    }

    struct buf shown;
    buf_init(&shown, 64 * 1024);
    if (n_pending == 0) {
        printf(n_project ? "every entry of '%s' is approved as it is: nothing to do\n"
                         : "'%s' has no project entries: nothing to approve\n",
               text_escaped(&shown, dir));
        buf_release(&shown);
        status = BRIDGE_EXIT_OK;
        goto out;
    }
    {
        printf("the configuration of '%s' has %zu entr%s to review; nothing below is expanded "
               "or run:\n\n",
               text_escaped(&shown, dir), n_pending, n_pending == 1 ? "y" : "ies");
        for (size_t i = 0; i < n; i++)
            if (pending[i] && print_entry(mcp_config_at(c, i), mcp_config_path_at(c, i),
                                          mcp_config_trust_at(c, i)) < 0)
                log_error(log, "out of memory");
        printf("\n");
        (void)fflush(stdout);
        status = BRIDGE_EXIT_FAILED;
        if (!a.yes && !ask(n_pending, log)) {
            buf_release(&shown);
            goto out;
        }
        status = approve(c, pending, dir, log);
        if (status != BRIDGE_EXIT_OK) {
            buf_release(&shown);
            goto out;
        }
    }
    printf("approved %zu entr%s of '%s': used from now on; a change to one needs approval "
           "again\n",
           n_pending, n_pending == 1 ? "y" : "ies", text_escaped(&shown, dir));
    buf_release(&shown);
    status = BRIDGE_EXIT_OK;
out:
    free(pending);
    mcp_config_free(c);
    free(dir);
    return status;
}
