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
#include "credkit/duration.h"
#include "credkit/json.h"
#include "credkit/jsonw.h"
#include "credkit/mcp_config.h"
#include "credkit/path.h"
#include "credkit/strv.h"
#include "credkit/textsafe.h"
#include "credkit/url.h"
#include "credkit/util.h"

#include "cli/cli.h"
#include "cli/cmd_client.h"
#include "cli/cmd_config.h"
#include "cli/cmd_creds.h"
#include "cli/cmd_list.h"
#include "config/server_config.h"

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

/* The URL as shown (url_display(): a key written in its query is not), or NULL without one.
 * -ENOMEM. Caller frees. */
static int view_url_display(const struct mcp_server *s, char **ret)
{
    const char *url = view_url(s);
    char *d = url ? url_display(url) : NULL;
    if (url && !d)
        return -ENOMEM;
    *ret = d;
    return 0;
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

/* The URL as shown, else "command arg...", else "-". Templates as written. */
static int entry_target(const struct mcp_server *s, struct buf *out)
{
    const char *cmd = view_command(s);
    struct strv args = STRV_INIT;
    char *url = NULL;
    int r = view_url_display(s, &url);
    if (r < 0 || url || !cmd) {
        if (r >= 0)
            r = buf_append_str(out, url ? url : "-");
        free(url);
        return r;
    }
    r = view_args(s, &args);
    if (r >= 0)
        r = cmd_creds_shell_quote(out, cmd);
    for (size_t i = 0; r >= 0 && i < args.n; i++) {
        r = buf_append_char(out, ' ');
        if (r >= 0)
            r = cmd_creds_shell_quote(out, args.v[i]);
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

/* Appends s escaped for a terminal (textsafe: controls, bidi overrides, invalid UTF-8): names,
 * paths, commands and messages come from files anyone may have written. When s does not fit in
 * what out may still hold, as much of it as fits and a note of its length: one huge entry must
 * not make the whole report fail. 0, or -ENOMEM (-E2BIG when out cannot even hold the note). */
static int append_escaped(struct buf *out, const char *s)
{
    size_t start = out->len, n = strlen(s), done = 0;
    int r = text_escape_append(out, s, n);
    if (r != -E2BIG)
        return r;
    char note[128];
    int k = snprintf(note, sizeof(note),
                     "... (%zu bytes, too long to show: see 'mcp-bridge list --json')", n);
    /* again, a piece at a time while the worst case of a piece (4 bytes shown for each byte)
     * and the note still fit; never a character cut in two */
    out->len = start;
    if (out->data)
        out->data[start] = '\0';
    while (done < n && out->len + 4 * 1024 + (size_t)k + 1 <= out->max) {
        size_t piece = n - done < 1024 ? n - done : 1024;
        while (piece > 1 && done + piece < n && ((unsigned char)s[done + piece] & 0xc0) == 0x80)
            piece--;
        r = text_escape_append(out, s + done, piece);
        if (r < 0)
            return r;
        done += piece;
    }
    return buf_append_str(out, note);
}

/* s escaped, in out (reset first); "" when it does not fit. Borrowed from out. */
static const char *escaped(struct buf *out, const char *s)
{
    buf_reset(out);
    return append_escaped(out, s ? s : "") < 0 ? "" : buf_str(out);
}

/* Where the entry came from: its file's display path, and "(import NAME)" for an imported one.
 * Escaped. */
static int entry_origin(const struct mcp_server *s, struct buf *out)
{
    int r = append_escaped(out, s->source);
    if (r >= 0 && s->import) {
        r = buf_append_str(out, " (import ");
        if (r >= 0)
            r = append_escaped(out, s->import);
        if (r >= 0)
            r = buf_append_char(out, ')');
    }
    return r;
}

static const char *lifecycle_word(enum server_lifecycle l)
{
    switch (l) {
    case SERVER_LIFECYCLE_LAZY:
        return "lazy";
    case SERVER_LIFECYCLE_EAGER:
        return "eager";
    case SERVER_LIFECYCLE_KEEP_ALIVE:
        return "keep-alive";
    case SERVER_LIFECYCLE_LAZY_KEEP_ALIVE:
        return "lazy-keep-alive";
    }
    return "lazy";
}

/* The entry's lifecycle and the idle timeout that applies to it (*ret_idle_ms: 0 never, -1
 * keep-alive, which is never idle-closed). -EINVAL for an invalid entry (none applies). */
static int entry_lifecycle(const struct mcp_server *s, const struct server_settings *st,
                           enum server_lifecycle *ret_l, int64_t *ret_idle_ms)
{
    struct server_config sc = SERVER_CONFIG_INIT;
    if (s->error || !s->raw || server_config_parse(s->raw, &sc, NULL) < 0)
        return -EINVAL;
    *ret_l = sc.lifecycle;
    *ret_idle_ms = sc.lifecycle == SERVER_LIFECYCLE_KEEP_ALIVE ||
                           sc.lifecycle == SERVER_LIFECYCLE_LAZY_KEEP_ALIVE
                       ? -1
                       : server_config_idle_ms(&sc, st);
    server_config_release(&sc);
    return 0;
}

int list_lifecycle_text(const struct mcp_server *s, const struct server_settings *st,
                        struct buf *out)
{
    enum server_lifecycle l;
    int64_t idle;
    char d[32];
    if (entry_lifecycle(s, st, &l, &idle) < 0)
        return buf_append_str(out, "-");
    if (idle < 0)
        return buf_append_str(out, lifecycle_word(l));
    return buf_printf(out, "%s %s", lifecycle_word(l),
                      idle == 0 ? "never" : duration_format(idle, d, sizeof(d)));
}

#define LIST_CHECK_PARALLEL 8 /* --check: servers connected at once */

/* ---- list -------------------------------------------------------------------------------- */

static const char list_help[] =
    "usage: mcp-bridge list [--json] [--check [--connect-timeout D]]\n"
    "\n"
    "Show every MCP server of the layered configuration, as the bridge sees it: name,\n"
    "transport, command or URL (as written: ${VAR} references are not expanded; the values\n"
    "of its query shown as ***), the file that defines it, and its status; under it, the\n"
    "credentials it needs and their state, never a value. Then the files that were considered "
    "(lowest priority first) and what was wrong\n"
    "with any of them as a whole: the problems that leave their servers unused (not JSON,\n"
    "with line and column) apart from the warnings (a setting ignored).\n"
    "\n"
    "STATUS: ok; disabled (\"disabled\": true: listed, never started); invalid (the entry\n"
    "cannot be used: why); missing (a ${NAME} does not resolve, a headersHelper or mcp-auth is\n"
    "not there); login (OAuth: sign in with the command shown); untrusted (an entry of the\n"
    "project's files, not used until approved: run mcp-bridge trust; also when it changed\n"
    "since it was approved); not installed (a stdio command not found as the bridge would\n"
    "look for it: on PATH, or the path given). list alone connects to nothing.\n"
    "With --check: ready (connected, with its tool count), failed (why), sign-in required\n"
    "(the command that signs in).\n"
    "SOURCE: the file, and \"(import NAME)\" for an entry an \"imports\" list brought in; under\n"
    "the entry, \"shadows:\" names the entries of the same name it won over (lower layers,\n"
    "imports), and \"warning:\" what is odd in it without making it invalid (an unknown key).\n"
    "LIFECYCLE: lazy (started at the first use), eager (at start), keep-alive (at start,\n"
    "restarted when it drops) or lazy-keep-alive (at the first use, then as keep-alive), with\n"
    "the idle timeout after which it is closed (never: 0).\n"
    "The credentials are asked as the bridge asks them at connect, once for all servers:\n"
    "  ${NAME}         'secrets resolve --json' (a recipe first, then the environment): ok and\n"
    "                  where from, or why not (command recipes run, or answer from their cache)\n"
    "  oauth           'mcp-auth status --json': signed in (expires in ...), login required\n"
    "  headersHelper   the program and whether it is there: it is NOT run (it may have side\n"
    "                  effects; 'mcp-bridge test NAME' runs it)\n"
    "\n";

/* the rest of the help: one string is bounded in length */
static const char list_help_json[] =
    "Layers, lowest to highest: the bundled configuration, ~/.config/mcp/mcp.json,\n"
    "~/.pi/agent/mcp.json (or --config PATH, --mcp-config PATH), .mcp.json and .pi/mcp.json in\n"
    "the working directory. A higher layer replaces a whole entry of the same name; a layer's\n"
    "own entries win over those it imports.\n"
    "\n"
    "  --check       connect every server that would be used, as 'mcp-bridge test' does, at\n"
    "                most 8 at once on one event loop, and list its tools\n"
    "  --connect-timeout D  with --check: how long each may take to connect (default 15s)\n"
    "  --json        one JSON object for programs (paths absolute, every key always present;\n"
    "                \"check\" only with --check):\n"
    "                {\"version\": 1,\n"
    "                 \"servers\": [{\"name\", \"transport\": \"stdio\"|\"http\"|\"sse\",\n"
    "                  \"command\": string|null, \"args\": [string], \"url\": string|null,\n"
    "                  \"source\": path, \"layer\": \"bundled\"|\"shared\"|\"user\"|\"project\",\n"
    "                  \"import\": string|null, \"shadowed\": [string], \"disabled\": bool,\n"
    "                  \"warnings\": [string],\n"
    "                  \"lifecycle\": \"lazy\"|\"eager\"|\"keep-alive\"|null (invalid),\n"
    "                  \"idle_timeout_ms\": number|null (0: never; null: keep-alive, invalid),\n"
    "                  \"tool_prefix\", \"include_tools\", \"exclude_tools\",\n"
    "                  \"request_timeout_ms\",\n"
    "                  \"valid\": bool, \"error\": string|null, \"missing_variables\": [string],\n"
    "                  \"status\": \"ok\"|\"disabled\"|\"invalid\"|\"missing\"|\"login\"|\n"
    "                    \"untrusted\"|\"not-installed\"|\"ready\"|\"failed\"|\n"
    "                    \"sign-in-required\",\n"
    "                  \"check\": null|{\"state\", \"tools\": number|null,\n"
    "                    \"error\": string|null},\n"
    "                  \"trust\": \"trusted\"|\"approved\"|\"untrusted\"|\"changed\",\n"
    "                  \"credentials\": {\"variables\": [{\"name\", \"resolved\": bool,\n"
    "                     \"source\": string|null, \"expires_at\": number|null,\n"
    "                     \"error\": string|null}],\n"
    "                   \"oauth\": null|{\"state\": \"signed-in\"|\"expired\"|\"login-required\"|\n"
    "                     \"unknown\", \"expires_at\": number|null, \"refresh_token\": bool,\n"
    "                     \"auto_auth\": bool, \"command\": string|null,\n"
    "                     \"error\": string|null},\n"
    "                   \"headers_helper\": null|{\"program\", \"shell\": bool,\n"
    "                     \"path\": string|null}}}],\n"
    "                 \"files\": [{\"path\", \"exists\": bool}],\n"
    "                 \"imported_files\": [{\"path\", \"import\", \"exists\": bool}],\n"
    "                 \"diagnostics\": [{\"source\", \"message\", \"warning\": bool}]}\n"
    "                (docs/json.md; on failure {\"version\": 1, \"error\": {\"code\",\n"
    "                \"message\", \"fix\"}})\n"
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

int list_file_displays(const struct mcp_config *c, struct strv *ret)
{
    size_t nl = mcp_config_file_count(c), ni = mcp_config_import_file_count(c);
    for (size_t i = 0; i < nl + ni; i++) {
        const char *p = i < nl ? mcp_config_file_at(c, i, NULL)
                               : mcp_config_import_file_at(c, i - nl, NULL, NULL);
        if (strv_push_take(ret, path_display(p)) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Display path -> absolute path of a file the configuration considered, a layer or an imported
 * file (displays: list_file_displays()). Borrowed; disp itself when unknown. */
static const char *source_path(const struct mcp_config *c, const struct strv *displays,
                               const char *disp)
{
    size_t nl = mcp_config_file_count(c);
    for (size_t i = 0; i < displays->n; i++)
        if (strcmp(displays->v[i], disp) == 0)
            return i < nl ? mcp_config_file_at(c, i, NULL)
                          : mcp_config_import_file_at(c, i - nl, NULL, NULL);
    return disp;
}

static bool untrusted(enum mcp_trust t)
{
    return t == MCP_TRUST_UNTRUSTED || t == MCP_TRUST_CHANGED;
}

/* Whether a valid stdio entry's command is not where the bridge's spawn would look for it
 * (path_find_program(): execvp's lookup, from the entry's "cwd" when that has no ${VAR}). A
 * command that holds a ${VAR} cannot be told: it counts as found. */
bool list_not_installed(const struct mcp_server *s)
{
    char *p = NULL;
    if (s->error || s->transport != MCP_TRANSPORT_STDIO || !s->command || strchr(s->command, '$'))
        return false;
    int r = path_find_program(s->command, s->cwd && !strchr(s->cwd, '$') ? s->cwd : NULL, &p);
    free(p);
    return r == -ENOENT;
}

/* The STATUS of an entry, as the text shows it (the JSON's word has '-' for each space);
 * probe: what --check found, NULL without it. Static. */
static const char *entry_status(const struct cmd_creds_server *cs, enum mcp_trust t,
                                const struct client_probe *probe)
{
    if (untrusted(t))
        return "untrusted";
    if (cs->server->error)
        return "invalid";
    if (cs->server->disabled)
        return "disabled";
    /* what was connected is the truth; else what the credentials are, then the program */
    switch (probe ? probe->state : CLIENT_PROBE_NOT_RUN) {
    case CLIENT_PROBE_READY:
        return "ready";
    case CLIENT_PROBE_FAILED:
        return "failed";
    case CLIENT_PROBE_LOGIN:
        return "sign-in required";
    case CLIENT_PROBE_NOT_RUN:
        break;
    }
    const char *creds = cmd_creds_server_status(cs);
    if (strcmp(creds, "ok") == 0 && list_not_installed(cs->server))
        return "not installed";
    return creds;
}

/* The JSON word of a STATUS: "not installed" -> "not-installed". */
static struct json_object *json_status(bool *oom, const char *text)
{
    char w[32];
    size_t n = strlen(text) < sizeof(w) - 1 ? strlen(text) : sizeof(w) - 1;
    for (size_t i = 0; i < n; i++)
        w[i] = text[i] == ' ' ? '-' : text[i];
    w[n] = '\0';
    return cfg_jstr(oom, w);
}

/* What --check found, null when it did not connect the entry. */
static struct json_object *json_check(bool *oom, const struct client_probe *p)
{
    static const char *const states[] = {
        [CLIENT_PROBE_READY] = "ready",
        [CLIENT_PROBE_FAILED] = "failed",
        [CLIENT_PROBE_LOGIN] = "sign-in-required",
    };
    if (!p || p->state == CLIENT_PROBE_NOT_RUN)
        return NULL;
    struct json_object *o = json_object_new_object();
    if (!o)
        *oom = true;
    struct json_object *tools =
        p->state == CLIENT_PROBE_READY ? json_object_new_int64((int64_t)p->n_tools) : NULL;
    if (p->state == CLIENT_PROBE_READY && !tools)
        *oom = true;
    cfg_jadd(oom, o, "state", cfg_jstr(oom, states[p->state]));
    cfg_jadd(oom, o, "tools", tools);
    cfg_jadd(oom, o, "error", cfg_jstr(oom, p->state == CLIENT_PROBE_READY ? NULL : p->message));
    return o;
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
static struct json_object *json_missing(bool *oom, const struct cmd_creds_server *cs)
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

static struct json_object *json_oauth(bool *oom, const struct cmd_creds_oauth *oa)
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
    cfg_jadd(oom, o, "expires_at", jint_or_null(oom, oa->expires_at));
    cfg_jadd(oom, o, "refresh_token", jbool(oom, oa->refresh_token));
    cfg_jadd(oom, o, "auto_auth", jbool(oom, oa->auto_auth));
    cfg_jadd(oom, o, "command", cfg_jstr(oom, oa->command));
    cfg_jadd(oom, o, "error", cfg_jstr(oom, oa->error));
    return o;
}

static struct json_object *json_credentials(bool *oom, const struct cmd_creds_server *cs)
{
    struct json_object *o = json_object_new_object(), *vars = json_object_new_array();
    for (size_t i = 0; i < cs->n_vars; i++) {
        const struct cmd_creds_var *v = &cs->vars[i];
        struct json_object *jv = json_object_new_object();
        cfg_jadd(oom, jv, "name", cfg_jstr(oom, v->name));
        cfg_jadd(oom, jv, "resolved", jbool(oom, v->resolved));
        cfg_jadd(oom, jv, "source", cfg_jstr(oom, v->source));
        cfg_jadd(oom, jv, "expires_at", jint_or_null(oom, v->expires_at));
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
    cfg_jadd(oom, o, "headers_helper", h);
    return o;
}

/* The lifecycle keys of an entry's JSON object. */
static void json_lifecycle(bool *oom, struct json_object *o, const struct mcp_server *s,
                           const struct server_settings *st)
{
    enum server_lifecycle l;
    int64_t idle;
    bool valid = entry_lifecycle(s, st, &l, &idle) >= 0;
    cfg_jadd(oom, o, "lifecycle", valid ? cfg_jstr(oom, lifecycle_word(l)) : NULL);
    struct json_object *jidle = valid && idle >= 0 ? json_object_new_int64(idle) : NULL;
    if (valid && idle >= 0 && !jidle)
        *oom = true;
    cfg_jadd(oom, o, "idle_timeout_ms", jidle);
    /* the keys that shape what the agent gets of the server, as they apply */
    struct server_config sc = SERVER_CONFIG_INIT;
    valid = valid && server_config_parse(s->raw, &sc, NULL) >= 0;
    static const char *const prefix_words[] = {"mcp", "server", "short", "none"};
    int64_t rq = valid ? server_config_request_ms(&sc, s, st) : 0;
    if (valid && rq == 0)
        rq = s->timeout_ms;
    cfg_jadd(oom, o, "tool_prefix",
             valid ? cfg_jstr(oom, prefix_words[server_config_prefix_of(&sc, st->tool_prefix)])
                   : NULL);
    cfg_jadd(oom, o, "include_tools",
             valid && sc.include_tools ? cfg_jstrv(oom, sc.include_tools) : NULL);
    cfg_jadd(oom, o, "exclude_tools", valid ? cfg_jstrv(oom, sc.exclude_tools) : NULL);
    struct json_object *jrq = valid && rq > 0 ? json_object_new_int64(rq) : NULL;
    if (valid && rq > 0 && !jrq)
        *oom = true;
    cfg_jadd(oom, o, "request_timeout_ms", jrq);
    server_config_release(&sc);
}

int list_json(const struct mcp_config *c, const struct cmd_creds_report *rep,
              const struct strv *displays, const struct client_probe *probes)
{
    struct server_settings st;
    server_settings_get(c, &st);
    bool oom = false;
    struct json_object *root = jsonw_answer_new();
    struct json_object *servers = json_object_new_array(), *files = json_object_new_array(),
                       *imported = json_object_new_array(), *diags = json_object_new_array();

    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct cmd_creds_server *cs = cmd_creds_report_at(rep, i);
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
        char *url = NULL;
        if (view_url_display(s, &url) < 0)
            oom = true;
        cfg_jadd(&oom, o, "url", cfg_jstr(&oom, url));
        free(url);
        cfg_jadd(&oom, o, "source", cfg_jstr(&oom, source_path(c, displays, s->source)));
        cfg_jadd(&oom, o, "layer", cfg_jstr(&oom, layer_word(s->layer)));
        cfg_jadd(&oom, o, "import", cfg_jstr(&oom, s->import));
        cfg_jadd(&oom, o, "shadowed", cfg_jstrv(&oom, s->shadowed));
        cfg_jadd(&oom, o, "disabled", jbool(&oom, s->disabled));
        cfg_jadd(&oom, o, "warnings", cfg_jstrv(&oom, s->warnings));
        json_lifecycle(&oom, o, s, &st);
        cfg_jadd(&oom, o, "valid", json_object_new_boolean(!s->error));
        cfg_jadd(&oom, o, "error", cfg_jstr(&oom, s->error));
        cfg_jadd(&oom, o, "missing_variables", json_missing(&oom, cs));
        const struct client_probe *p = probes ? &probes[i] : NULL;
        cfg_jadd(&oom, o, "status",
                 json_status(&oom, entry_status(cs, mcp_config_trust_at(c, i), p)));
        if (probes) /* the key set without --check stays what programs already read */
            cfg_jadd(&oom, o, "check", json_check(&oom, p));
        cfg_jadd(&oom, o, "trust", cfg_jstr(&oom, mcp_trust_name(mcp_config_trust_at(c, i))));
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
    for (size_t i = 0; i < mcp_config_import_file_count(c); i++) {
        bool exists = false;
        const char *name = NULL;
        const char *p = mcp_config_import_file_at(c, i, &name, &exists);
        struct json_object *o = json_object_new_object();
        cfg_jadd(&oom, o, "path", cfg_jstr(&oom, p));
        cfg_jadd(&oom, o, "import", cfg_jstr(&oom, name));
        cfg_jadd(&oom, o, "exists", json_object_new_boolean(exists));
        cfg_jpush(&oom, imported, o);
    }
    for (size_t i = 0; i < mcp_config_diag_count(c); i++) {
        const struct mcp_config_diag *d = mcp_config_diag_at(c, i);
        struct json_object *o = json_object_new_object();
        cfg_jadd(&oom, o, "source", cfg_jstr(&oom, source_path(c, displays, d->source)));
        cfg_jadd(&oom, o, "message", cfg_jstr(&oom, d->message));
        cfg_jadd(&oom, o, "warning", jbool(&oom, d->warning));
        cfg_jpush(&oom, diags, o);
    }
    cfg_jadd(&oom, root, "servers", servers);
    cfg_jadd(&oom, root, "files", files);
    cfg_jadd(&oom, root, "imported_files", imported);
    cfg_jadd(&oom, root, "diagnostics", diags);
    const char *text = oom ? NULL : json_object_to_json_string_ext(root, CFG_JSON_OUT_FLAGS);
    if (text)
        printf("%s\n", text);
    json_object_put(root);
    return text ? 0 : -ENOMEM;
}

/* The lines under an entry that say where else it is written and what is odd in it: the
 * entries it won over, its warnings. Escaped. */
static void print_origin_details(const struct mcp_server *s, struct buf *line)
{
    for (size_t i = 0; s->shadowed && s->shadowed[i]; i++)
        printf("    shadows: %s\n", escaped(line, s->shadowed[i]));
    for (size_t i = 0; s->warnings && s->warnings[i]; i++)
        printf("    warning: %s\n", escaped(line, s->warnings[i]));
}

/* The lines under an entry: why it is invalid, or the state of each credential it needs. */
static int print_details(const struct cmd_creds_server *cs, enum mcp_trust t,
                         const struct client_probe *probe, int64_t now, struct buf *line)
{
    int r = 0;
    print_origin_details(cs->server, line);
    if (untrusted(t)) {
        printf("    %s (run: mcp-bridge trust)\n",
               t == MCP_TRUST_CHANGED ? "untrusted: changed since it was approved" : "untrusted");
        return 0;
    }
    if (cs->server->error) {
        printf("    error: %s\n", escaped(line, entry_reason(cs->server)));
        return 0;
    }
    if (cs->server->disabled)
        return 0; /* never started: what it would need is not its state */
    if (list_not_installed(cs->server))
        printf("    not installed: '%s' %s\n", escaped(line, cs->server->command),
               strchr(cs->server->command, '/') ? "is not there or not executable"
                                                : "is not found on PATH");
    if (probe && probe->state == CLIENT_PROBE_READY)
        printf("    check: ready, %zu tool%s\n", probe->n_tools, probe->n_tools == 1 ? "" : "s");
    else if (probe && probe->state != CLIENT_PROBE_NOT_RUN)
        printf("    check: %s: %s\n",
               probe->state == CLIENT_PROBE_LOGIN ? "sign-in required" : "failed",
               escaped(line, probe->message ? probe->message : "out of memory"));
    /* the helpers' answers quote their own errors: escaped as the rest */
    struct buf shown;
    buf_init(&shown, 2 * line->max + 64);
    for (size_t i = 0; r >= 0 && i < cs->n_vars; i++) {
        buf_reset(line);
        r = cmd_creds_describe_var(&cs->vars[i], now, line);
        if (r >= 0) {
            printf("    ${%s}: ", escaped(&shown, cs->vars[i].name));
            printf("%s\n", escaped(&shown, buf_str(line)));
        }
    }
    if (r >= 0 && cs->oauth.state != CREDS_OAUTH_NOT_USED) {
        buf_reset(line);
        r = cmd_creds_describe_oauth(&cs->oauth, now, line);
        if (r >= 0)
            printf("    oauth: %s\n", escaped(&shown, buf_str(line)));
    }
    if (r >= 0 && cs->helper) {
        buf_reset(line);
        r = cmd_creds_describe_helper(cs->helper, line);
        if (r >= 0)
            printf("    headersHelper: %s\n", escaped(&shown, buf_str(line)));
    }
    buf_release(&shown);
    return r;
}

/* The columns of one entry, escaped, each in its own buffer. */
struct list_row {
    struct buf name, origin, lifecycle, target, raw_target;
};

static void list_row_init(struct list_row *w)
{
    buf_init(&w->name, 64 * 1024);
    buf_init(&w->origin, 64 * 1024);
    buf_init(&w->lifecycle, 64);
    buf_init(&w->target, 64 * 1024);
    /* a whole file's entry, shell-quoted (each ' four bytes): what is shown is capped in target */
    buf_init(&w->raw_target, 64u * 1024 * 1024);
}

static void list_row_release(struct list_row *w)
{
    buf_release(&w->name);
    buf_release(&w->origin);
    buf_release(&w->lifecycle);
    buf_release(&w->target);
    buf_release(&w->raw_target);
}

static int list_row_fill(struct list_row *w, const struct mcp_server *s,
                         const struct server_settings *st)
{
    buf_reset(&w->name);
    buf_reset(&w->origin);
    buf_reset(&w->lifecycle);
    buf_reset(&w->target);
    buf_reset(&w->raw_target);
    int r = append_escaped(&w->name, s->name);
    if (r >= 0)
        r = entry_origin(s, &w->origin);
    if (r >= 0)
        r = list_lifecycle_text(s, st, &w->lifecycle);
    if (r >= 0)
        r = entry_target(s, &w->raw_target);
    if (r >= 0)
        r = append_escaped(&w->target, buf_str(&w->raw_target));
    return r;
}

/* The widest a column is padded to */
#define LIST_COLUMN_MAX 48

/* One line of the files sections: the display path (escaped), its import, whether it exists. */
static void print_file(const char *path, const char *import, bool exists)
{
    char *d = path_display(path);
    struct buf shown, shown_import;
    buf_init(&shown, 64 * 1024);
    buf_init(&shown_import, 1024);
    printf("  %s%s%s%s%s\n", escaped(&shown, d ? d : path), import ? " (import " : "",
           import ? escaped(&shown_import, import) : "", import ? ")" : "",
           exists ? "" : " (absent)");
    buf_release(&shown);
    buf_release(&shown_import);
    free(d);
}

/* The files' diagnostics of one kind under their heading: what leaves servers unused apart
 * from what is only odd, so that a warning does not read as a server lost. */
static void print_diags(const struct mcp_config *c, bool warnings, const char *heading)
{
    struct buf msg;
    bool any = false;
    buf_init(&msg, 64 * 1024);
    for (size_t i = 0; i < mcp_config_diag_count(c); i++) {
        const struct mcp_config_diag *d = mcp_config_diag_at(c, i);
        if (d->warning != warnings)
            continue;
        if (!any)
            printf("\n%s:\n", heading);
        any = true;
        printf("  %s\n", escaped(&msg, d->message));
    }
    buf_release(&msg);
}

int list_text(const struct mcp_config *c, const struct cmd_creds_report *rep,
              const struct client_probe *probes)
{
    size_t n = mcp_config_count(c), w_name = 4, w_src = 6, w_life = 9, w_status = 9;
    int64_t now = (int64_t)time(NULL);
    struct server_settings st;
    struct list_row row;
    struct buf line;
    int r = 0;

    server_settings_get(c, &st);
    list_row_init(&row);
    for (size_t i = 0; i < n && r >= 0; i++) {
        r = list_row_fill(&row, mcp_config_at(c, i), &st);
        w_name = row.name.len > w_name ? row.name.len : w_name;
        w_src = row.origin.len > w_src ? row.origin.len : w_src;
        w_life = row.lifecycle.len > w_life ? row.lifecycle.len : w_life;
        size_t k = strlen(entry_status(cmd_creds_report_at(rep, i), mcp_config_trust_at(c, i),
                                       probes ? &probes[i] : NULL));
        w_status = k > w_status ? k : w_status;
    }
    /* one long name or path overflows its own row, not the alignment of every other one */
    w_name = w_name > LIST_COLUMN_MAX ? LIST_COLUMN_MAX : w_name;
    w_src = w_src > LIST_COLUMN_MAX ? LIST_COLUMN_MAX : w_src;
    if (n == 0)
        printf("no MCP servers configured: add one with 'mcp-bridge add'\n");
    else
        printf("%-*s  %-9s  %-*s  %-*s  %-*s  %s\n", (int)w_name, "NAME", "TRANSPORT",
               (int)w_status, "STATUS", (int)w_life, "LIFECYCLE", (int)w_src, "SOURCE",
               "COMMAND OR URL");
    buf_init(&line, 64 * 1024);
    for (size_t i = 0; i < n && r >= 0; i++) {
        const struct cmd_creds_server *cs = cmd_creds_report_at(rep, i);
        const struct mcp_server *s = cs->server;
        r = list_row_fill(&row, s, &st);
        if (r < 0)
            break;
        enum mcp_trust t = mcp_config_trust_at(c, i);
        const struct client_probe *p = probes ? &probes[i] : NULL;
        printf("%-*s  %-9s  %-*s  %-*s  %-*s  %s\n", (int)w_name, buf_str(&row.name),
               view_transport(s), (int)w_status, entry_status(cs, t, p), (int)w_life,
               buf_str(&row.lifecycle), (int)w_src, buf_str(&row.origin), buf_str(&row.target));
        r = print_details(cs, t, p, now, &line);
    }
    list_row_release(&row);
    buf_release(&line);

    printf("\nfiles, lowest priority first:\n");
    for (size_t i = 0; i < mcp_config_file_count(c); i++) {
        bool exists = false;
        const char *p = mcp_config_file_at(c, i, &exists);
        print_file(p, NULL, exists);
    }
    if (mcp_config_import_file_count(c) > 0)
        printf("\nimported files (\"imports\"; never written to):\n");
    for (size_t i = 0; i < mcp_config_import_file_count(c); i++) {
        bool exists = false;
        const char *name = NULL;
        const char *p = mcp_config_import_file_at(c, i, &name, &exists);
        print_file(p, name ? name : "?", exists);
    }
    print_diags(c, false, "problems with files (their servers are not used)");
    print_diags(c, true, "warnings about files (their servers are used)");
    return r;
}

/* --check: connects every entry that would be started (valid, enabled, trusted, its command
 * found) as `mcp-bridge test` does, LIST_CHECK_PARALLEL at once on one loop. *ret: one probe
 * per entry of c, the caller's to release and free. */
static int list_check(const struct mcp_config *c, const struct cmd_creds_report *rep,
                      int64_t connect_timeout_ms, const struct args_globals *g, struct log *log,
                      struct client_probe **ret)
{
    size_t n = mcp_config_count(c);
    struct client_probe *probes = calloc(n ? n : 1, sizeof(*probes));
    if (!probes)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct mcp_server *s = cmd_creds_report_at(rep, i)->server;
        if (!s->error && !s->disabled && !untrusted(mcp_config_trust_at(c, i)) &&
            !list_not_installed(s))
            probes[i].server = s;
    }
    int r = client_probe_run(c, probes, n, LIST_CHECK_PARALLEL, connect_timeout_ms, g, log);
    if (r < 0) {
        for (size_t i = 0; i < n; i++)
            client_probe_release(&probes[i]);
        free(probes);
        return r;
    }
    *ret = probes;
    return 0;
}

enum { OPT_CONNECT_TIMEOUT = 256 };
const struct option cli_list_options[] = {
    {"json", no_argument, NULL, 'j'},
    {"check", no_argument, NULL, 'c'},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {0},
};

int cmd_list(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    struct mcp_config *c = NULL;
    struct cmd_creds_report *rep = NULL;
    struct client_probe *probes = NULL;
    struct strv displays = STRV_INIT;
    bool json = false, check = false, timeout_given = false;
    int64_t connect_timeout_ms = 0; /* the upstream's default, 15 s, as test's */
    int opt, r, status = BRIDGE_EXIT_FAILED;

    if (args_wants_help(argc, argv)) {
        fputs(list_help, stdout);
        fputs(list_help_json, stdout);
        return BRIDGE_EXIT_OK;
    }
    optind = 0;
    while ((opt = getopt_long(argc, argv, "", cli_list_options, NULL)) != -1) {
        if (opt == 'j') {
            json = true;
        } else if (opt == 'c') {
            check = true;
        } else if (opt == OPT_CONNECT_TIMEOUT) {
            if (cli_parse_duration("--connect-timeout", optarg, log, &connect_timeout_ms) < 0)
                return BRIDGE_EXIT_USAGE;
            timeout_given = true;
        } else {
            return cli_option_error(log, argv, "", cli_list_options);
        }
    }
    if (optind != argc)
        return cfg_usage_error(log, "list", "list takes no arguments");
    if (timeout_given && !check)
        return cfg_usage_error(log, "list", "--connect-timeout goes with --check");

    /* the problems with files are part of the report: not warnings printed on top of it */
    c = cfg_load_quietly(g, log);
    if (!c)
        return BRIDGE_EXIT_CONFIG;

    if (list_file_displays(c, &displays) < 0) {
        log_error(log, "out of memory");
        goto out;
    }
    /* the helpers are asked once for all the servers; a failing one is a server's state */
    r = cmd_creds_report_new(c, g->config, &rep);
    if (r < 0) {
        log_error(log, "cannot check the credentials: %s", strerror(-r));
        goto out;
    }
    if (check) {
        r = list_check(c, rep, connect_timeout_ms, g, log, &probes);
        if (r < 0) {
            log_error(log, "cannot check the servers: %s", strerror(-r));
            goto out;
        }
    }
    r = json ? list_json(c, rep, &displays, probes) : list_text(c, rep, probes);
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
    for (size_t i = 0; probes && i < mcp_config_count(c); i++)
        client_probe_release(&probes[i]);
    free(probes);
    strv_release(&displays);
    cmd_creds_report_free(rep);
    mcp_config_free(c);
    return status;
}
