/* cmd_doctor.c - "mcp-bridge doctor": what breaks setups, checked in one go, each problem with
 * its fix.
 *
 * The checks, in the order they are reported: the helpers (found, and of the bridge's own
 * version), the secrets' recipes (`secrets list --json`: a keychain that cannot be reached shows
 * here), the configuration (files, entries, approvals), each server (its credentials, its
 * command, then a real connection, bounded and in parallel, as `list --check`), and which agents
 * have the bridge registered. Nothing is changed and no value is ever printed. Each finding is
 * ok, a note, a warning or a problem; the exit status is 1 when there is a problem. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/child.h"
#include "credkit/json.h"
#include "credkit/log.h"
#include "credkit/mcp_config.h"
#include "credkit/mcp_import.h"
#include "credkit/path.h"
#include "credkit/textsafe.h"
#include "credkit/version.h"

#include "cli/cli.h"
#include "cli/cmd_client.h"
#include "cli/cmd_config.h"
#include "cli/cmd_creds.h"
#include "cli/cmd_list.h"
#include "creds/cred_path.h"

#define DOCTOR_PARALLEL   8           /* servers connected at once */
#define DOCTOR_VERSION_MS (5 * 1000)  /* a helper's --version */
#define DOCTOR_SECRETS_MS (30 * 1000) /* secrets list: it resolves every recipe */

static const char doctor_help[] =
    "usage: mcp-bridge doctor [--json] [--no-connect] [--connect-timeout D]\n"
    "\n"
    "Check what breaks setups, and say how to fix each problem: the helpers (secrets and\n"
    "mcp-auth found, and of this version), the secrets' recipes (a keychain that cannot be\n"
    "reached shows here), the configuration files and entries, the project servers waiting for\n"
    "approval, each server's credentials and command, a real connection to each (8 at a time;\n"
    "--no-connect skips it), and which agents have the bridge registered. Nothing is changed.\n"
    "\n"
    "options:\n"
    "  --json               one JSON object (docs/json.md)\n"
    "  --no-connect         do not connect the servers\n"
    "  --connect-timeout D  how long each server may take to connect (default 15s)\n"
    "\n"
    "exit status: 0 no problem (warnings and notes allowed), 1 a problem was found, 2 usage\n"
    "error, 3 the configuration cannot be loaded at all.\n"
    "\n"
    "examples:\n"
    "  mcp-bridge doctor\n"
    "  mcp-bridge doctor --no-connect\n"
    "  mcp-bridge doctor --json | jq '.checks[] | select(.level == \"problem\")'\n";

enum level {
    LEVEL_OK,
    LEVEL_NOTE,
    LEVEL_WARNING,
    LEVEL_PROBLEM,
};

static const char *const level_words[] = {
    [LEVEL_OK] = "ok",
    [LEVEL_NOTE] = "note",
    [LEVEL_WARNING] = "warning",
    [LEVEL_PROBLEM] = "problem",
};

struct finding {
    const char *area; /* static: "helpers", "secrets", "configuration", "servers", "agents" */
    char *subject;    /* what it is about: a helper, a file, a server, an agent */
    enum level level;
    char *message;
    char *fix; /* NULL: none to give */
};

struct doctor {
    struct finding *v;
    size_t n, cap;
    bool oom;
    size_t counts[LEVEL_PROBLEM + 1];
};

static void add(struct doctor *d, const char *area, enum level level, const char *subject,
                const char *fix, const char *fmt, ...) _printf_(6, 7);
static void add(struct doctor *d, const char *area, enum level level, const char *subject,
                const char *fix, const char *fmt, ...)
{
    if (d->oom)
        return;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 32;
        struct finding *v = realloc(d->v, cap * sizeof(*v));
        if (!v) {
            d->oom = true;
            return;
        }
        d->v = v;
        d->cap = cap;
    }
    struct finding *f = &d->v[d->n];
    *f = (struct finding){.area = area, .level = level};
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&f->message, fmt, ap);
    va_end(ap);
    f->subject = strdup(subject ? subject : "");
    f->fix = fix ? strdup(fix) : NULL;
    if (k < 0 || !f->subject || (fix && !f->fix)) {
        if (k >= 0)
            free(f->message);
        free(f->subject);
        free(f->fix);
        d->oom = true;
        return;
    }
    d->counts[level]++;
    d->n++;
}

static void doctor_release(struct doctor *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].subject);
        free(d->v[i].message);
        free(d->v[i].fix);
    }
    free(d->v);
}

/* ---- helpers ----------------------------------------------------------------------------- */

/* Runs `path ARG...` to its end (bounded): 0 and *ret whatever its status; < 0 with e. */
static int run_quietly(const char *const *argv, int64_t timeout_ms, struct child_result *ret,
                       struct err *e)
{
    struct child_spec spec = {.argv = argv};
    struct child_run_opts o = {.timeout_ms = timeout_ms, .max_stdout = 4 << 20};
    return child_run(&spec, &o, ret, e);
}

/* The version a helper prints ("secrets (credkit) 0.1.0" -> "0.1.0") into out; false when its
 * answer has no such line. */
static bool parse_version(const char *text, char *out, size_t n)
{
    const char *nl = strchr(text, '\n');
    size_t len = nl ? (size_t)(nl - text) : strlen(text);
    const char *sp = memrchr(text, ' ', len);
    if (!sp || len - (size_t)(sp + 1 - text) == 0 || len - (size_t)(sp + 1 - text) >= n)
        return false;
    size_t k = len - (size_t)(sp + 1 - text);
    memcpy(out, sp + 1, k);
    out[k] = '\0';
    return true;
}

static void check_helper(struct doctor *d, enum helper_kind kind, char **ret_path)
{
    const char *prog = helper_kind_program(kind);
    char *path = NULL, fix[256];
    struct err e = ERR_INIT;
    struct buf shown;
    buf_init(&shown, 256);

    *ret_path = NULL;
    if (cred_path_find(kind, &path, &e) < 0) {
        snprintf(fix, sizeof(fix),
                 "install %s with mcp-bridge (they ship together), or set %s to its path", prog,
                 helper_kind_env(kind));
        add(d, "helpers", LEVEL_PROBLEM, prog, fix, "%s", err_msg(&e));
        goto out;
    }
    const char *argv[] = {path, "--version", NULL};
    struct child_result res;
    int r = run_quietly(argv, DOCTOR_VERSION_MS, &res, &e);
    if (r < 0) {
        add(d, "helpers", LEVEL_PROBLEM, prog, "reinstall it", "%s", err_msg(&e));
        goto out;
    }
    char version[64];
    bool ran = res.exit_code == 0 && !res.timed_out;
    bool parsed = ran && parse_version(buf_str(&res.out), version, sizeof(version));
    child_result_release(&res);
    if (!parsed) {
        add(d, "helpers", LEVEL_PROBLEM, prog, "reinstall it",
            "'%s --version' did not answer with a version", text_escaped(&shown, path));
    } else if (strcmp(version, PROJECT_VERSION_STR) != 0) {
        snprintf(fix, sizeof(fix),
                 "install mcp-bridge, secrets and mcp-auth of one version (they ship together)");
        add(d, "helpers", LEVEL_PROBLEM, prog, fix,
            "%s is version %s, mcp-bridge %s: the helper protocol may differ",
            text_escaped(&shown, path), version, PROJECT_VERSION_STR);
    } else {
        add(d, "helpers", LEVEL_OK, prog, NULL, "%s %s", text_escaped(&shown, path), version);
        *ret_path = path;
        path = NULL;
    }
out:
    buf_release(&shown);
    free(path);
}

/* ---- the secrets' recipes ---------------------------------------------------------------- */

static void check_secrets(struct doctor *d, const char *secrets_path)
{
    const char *argv[] = {secrets_path, "list", "--json", NULL};
    struct child_result res;
    struct err e = ERR_INIT;
    struct json_object *root = NULL, *list = NULL;
    struct buf shown;
    buf_init(&shown, 256);

    if (run_quietly(argv, DOCTOR_SECRETS_MS, &res, &e) < 0) {
        add(d, "secrets", LEVEL_PROBLEM, "secrets", NULL, "%s", err_msg(&e));
        goto out;
    }
    if (res.timed_out) {
        add(d, "secrets", LEVEL_PROBLEM, "secrets", "see 'secrets list'",
            "'secrets list' did not finish within %d s", DOCTOR_SECRETS_MS / 1000);
    } else if (json_parse(buf_str(&res.out), res.out.len, res.out.len + 1, &root, &e) < 0 ||
               !json_object_object_get_ex(root, "secrets", &list) ||
               !json_object_is_type(list, json_type_array)) {
        const char *why = res.err.len ? buf_str(&res.err) : "no answer";
        add(d, "secrets", LEVEL_PROBLEM, "secrets.json", "see 'secrets list'",
            "'secrets list' failed: %s", text_escaped(&shown, why));
    } else if (json_object_array_length(list) == 0) {
        add(d, "secrets", LEVEL_NOTE, "secrets.json", NULL,
            "no recipe: ${NAME}s are read from the environment");
    } else {
        size_t bad = 0, n = json_object_array_length(list);
        for (size_t i = 0; i < n; i++) {
            struct json_object *o = json_object_array_get_idx(list, i);
            const char *name = json_get_string(o, "name"), *status = json_get_string(o, "status");
            const char *error = json_get_string(o, "error");
            if (!name || (status && strcmp(status, "ok") == 0) || !error)
                continue;
            char fix[300];
            snprintf(fix, sizeof(fix), "secrets configure %s", name);
            add(d, "secrets", LEVEL_PROBLEM, name, fix, "%s", text_escaped(&shown, error));
            bad++;
        }
        if (!bad)
            add(d, "secrets", LEVEL_OK, "secrets.json", NULL, "%zu recipe%s, each resolves", n,
                n == 1 ? "" : "s");
    }
    child_result_release(&res);
out:
    json_object_put(root);
    buf_release(&shown);
}

/* ---- the configuration ------------------------------------------------------------------- */

static bool untrusted(enum mcp_trust t)
{
    return t == MCP_TRUST_UNTRUSTED || t == MCP_TRUST_CHANGED;
}

static void check_config(struct doctor *d, const struct mcp_config *c)
{
    struct buf shown;
    buf_init(&shown, 256);
    size_t read = 0, problems = d->counts[LEVEL_PROBLEM];
    for (size_t i = 0; i < mcp_config_file_count(c); i++) {
        bool exists = false;
        (void)mcp_config_file_at(c, i, &exists);
        read += exists;
    }
    if (!read)
        add(d, "configuration", LEVEL_PROBLEM, "mcp.json", "mcp-bridge add",
            "no configuration file exists: the bridge has no server to serve");
    for (size_t i = 0; i < mcp_config_diag_count(c); i++) {
        const struct mcp_config_diag *g = mcp_config_diag_at(c, i);
        add(d, "configuration", g->warning ? LEVEL_WARNING : LEVEL_PROBLEM, g->source, NULL, "%s",
            text_escaped(&shown, g->message));
    }
    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        if (untrusted(mcp_config_trust_at(c, i)))
            add(d, "configuration", LEVEL_PROBLEM, s->name, "mcp-bridge trust",
                "a project server from '%s' that is not used until you approve it",
                text_escaped(&shown, s->source));
        else if (s->error)
            add(d, "configuration", LEVEL_PROBLEM, s->name, NULL, "%s",
                text_escaped(&shown, s->error));
        for (size_t k = 0; s->warnings && s->warnings[k]; k++)
            add(d, "configuration", LEVEL_WARNING, s->name, NULL, "'%s': %s",
                text_escaped(&shown, s->source), s->warnings[k]);
    }
    if (d->counts[LEVEL_PROBLEM] == problems && read)
        add(d, "configuration", LEVEL_OK, "mcp.json", NULL, "%zu server%s in %zu file%s",
            mcp_config_count(c), mcp_config_count(c) == 1 ? "" : "s", read, read == 1 ? "" : "s");
    buf_release(&shown);
}

/* ---- the servers ------------------------------------------------------------------------- */

/* What the credentials of a valid entry lack, as findings; whether it lacks anything. */
static bool check_creds(struct doctor *d, const struct cmd_creds_server *cs)
{
    const char *name = cs->server->name;
    struct buf shown;
    buf_init(&shown, 256);
    bool lacking = false;
    char fix[300];
    for (size_t k = 0; k < cs->n_vars; k++) {
        const struct cmd_creds_var *v = &cs->vars[k];
        if (v->resolved)
            continue;
        snprintf(fix, sizeof(fix), "secrets configure %s", v->name);
        add(d, "servers", LEVEL_PROBLEM, name, fix, "${%s} does not resolve%s%s", v->name,
            v->error ? ": " : "", v->error ? text_escaped(&shown, v->error) : "");
        lacking = true;
    }
    if (cs->helper && !cs->helper->path) {
        add(d, "servers", LEVEL_PROBLEM, name, "install it, or fix \"headersHelper\"",
            "its headersHelper '%s' is not installed", text_escaped(&shown, cs->helper->program));
        lacking = true;
    }
    if (cs->oauth.state == CREDS_OAUTH_UNKNOWN) {
        add(d, "servers", LEVEL_PROBLEM, name, NULL, "mcp-auth could not be asked: %s",
            cs->oauth.error ? text_escaped(&shown, cs->oauth.error) : "no reason given");
        lacking = true;
    } else if (cs->oauth.state == CREDS_OAUTH_LOGIN_REQUIRED && !cs->oauth.auto_auth) {
        add(d, "servers", LEVEL_PROBLEM, name, cs->oauth.command, "needs a sign-in");
        lacking = true;
    }
    buf_release(&shown);
    return lacking;
}

static void check_servers(struct doctor *d, const struct mcp_config *c,
                          const struct cmd_creds_report *rep, bool connect, int64_t timeout_ms,
                          const struct args_globals *g, struct log *log)
{
    size_t n = mcp_config_count(c);
    struct client_probe *probes = calloc(n ? n : 1, sizeof(*probes));
    struct buf shown;
    buf_init(&shown, 256);
    if (!probes) {
        d->oom = true;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct cmd_creds_server *cs = cmd_creds_report_at(rep, i);
        const struct mcp_server *s = cs->server;
        if (s->error || untrusted(mcp_config_trust_at(c, i)))
            continue; /* said under the configuration */
        if (s->disabled) {
            add(d, "servers", LEVEL_NOTE, s->name, NULL, "disabled (\"disabled\": true)");
            continue;
        }
        if (check_creds(d, cs))
            continue;
        if (list_not_installed(s)) {
            add(d, "servers", LEVEL_PROBLEM, s->name,
                "install it, or give its full path in \"command\"",
                "its command '%s' is not installed (not found on PATH)",
                text_escaped(&shown, s->command));
            continue;
        }
        probes[i].server = s;
    }
    if (connect && client_probe_run(c, probes, n, DOCTOR_PARALLEL, timeout_ms, g, log) < 0)
        d->oom = true;
    for (size_t i = 0; i < n; i++) {
        const struct client_probe *p = &probes[i];
        if (!p->server)
            continue;
        const char *name = p->server->name;
        switch (connect ? p->state : CLIENT_PROBE_NOT_RUN) {
        case CLIENT_PROBE_READY:
            add(d, "servers", LEVEL_OK, name, NULL, "ready, %zu tool%s", p->n_tools,
                p->n_tools == 1 ? "" : "s");
            break;
        case CLIENT_PROBE_FAILED: {
            char fix[300];
            snprintf(fix, sizeof(fix), "'mcp-bridge test %s -v' shows more", name);
            add(d, "servers", LEVEL_PROBLEM, name, fix, "%s",
                p->message ? text_escaped(&shown, p->message) : "failed");
            break;
        }
        case CLIENT_PROBE_LOGIN:
            add(d, "servers", LEVEL_PROBLEM, name, NULL, "%s",
                p->message ? text_escaped(&shown, p->message) : "needs a sign-in");
            break;
        case CLIENT_PROBE_NOT_RUN:
            add(d, "servers", LEVEL_OK, name, NULL,
                connect ? "not connected (interrupted)" : "credentials and command found");
            break;
        }
    }
    for (size_t i = 0; i < n; i++)
        client_probe_release(&probes[i]);
    free(probes);
    buf_release(&shown);
}

/* ---- the agents -------------------------------------------------------------------------- */

/* Which of the agents' own files register the bridge (an entry that runs mcp-bridge), and the
 * servers an agent with the bridge registered also starts itself when the bridge serves them
 * too (started twice). pi's file is the bridge's own user layer: its entries that run the bridge
 * are the configuration's notes, read here from the file itself. */
static void check_agents(struct doctor *d, const struct mcp_config *c, const char *cwd)
{
    static const char *const agents[] = {"claude-code", "cursor", "vscode",
                                         "windsurf",    "codex",  "claude-desktop"};
    struct buf shown;
    buf_init(&shown, 256);
    size_t registered = 0;
    for (size_t a = 0; a < sizeof(agents) / sizeof(agents[0]); a++) {
        struct mcp_import *im = NULL;
        struct err e = ERR_INIT;
        if (mcp_import_read(agents[a], cwd, &im, &e) < 0) {
            d->oom = true;
            break;
        }
        const char *where = NULL;
        for (size_t i = 0; i < mcp_import_count(im); i++) {
            const struct mcp_import_entry *x = mcp_import_at(im, i);
            if (mcp_import_runs_bridge(x->entry)) {
                where = x->source;
                add(d, "agents", LEVEL_OK, agents[a], NULL,
                    "the bridge is registered as '%s' in '%s'", text_escaped(&shown, x->name),
                    x->source);
            }
        }
        for (size_t i = 0; where && i < mcp_import_count(im); i++) {
            const struct mcp_import_entry *x = mcp_import_at(im, i);
            const struct mcp_server *s = mcp_config_find(c, x->name);
            if (mcp_import_runs_bridge(x->entry) || !s ||
                (s->import && !strcmp(s->import, agents[a])))
                continue;
            add(d, "agents", LEVEL_WARNING, agents[a], "remove it from one of the two",
                "'%s' in '%s' is started by the agent itself and served by the bridge too",
                text_escaped(&shown, x->name), x->source);
        }
        registered += where != NULL;
        mcp_import_free(im);
    }
    /* pi: pi-mcp-adapter reads ~/.pi/agent/mcp.json ($PI_CODING_AGENT_DIR), the bridge's own */
    char *pi = NULL;
    struct json_object *root = NULL, *ms = NULL;
    struct err e = ERR_INIT;
    if (path_agent_file("mcp.json", &pi, &e) >= 0 &&
        json_read_file(pi, 4 << 20, 0, &root, &e) >= 0 &&
        (json_object_object_get_ex(root, "mcpServers", &ms) ||
         json_object_object_get_ex(root, "servers", &ms)) &&
        json_object_is_type(ms, json_type_object)) {
        json_object_object_foreach(ms, name, entry)
        {
            if (!mcp_import_runs_bridge(entry))
                continue;
            char *disp = path_display(pi);
            add(d, "agents", LEVEL_OK, "pi", NULL, "the bridge is registered as '%s' in '%s'",
                text_escaped(&shown, name), disp ? disp : pi);
            free(disp);
            registered++;
        }
    }
    json_object_put(root);
    free(pi);
    if (!registered)
        add(d, "agents", LEVEL_NOTE, "-", "mcp-bridge install AGENT",
            "no agent has the bridge registered (looked at Claude Code, Cursor, VS Code, Windsurf, "
            "Codex, Claude Desktop and pi)");
    buf_release(&shown);
}

/* ---- the report -------------------------------------------------------------------------- */

static int print_text(const struct doctor *d)
{
    const char *area = NULL;
    for (size_t i = 0; i < d->n; i++) {
        const struct finding *f = &d->v[i];
        if (!area || strcmp(area, f->area) != 0)
            printf("%s%s\n", area ? "\n" : "", f->area);
        area = f->area;
        printf("  %-8s %s: %s\n", level_words[f->level], f->subject, f->message);
        if (f->fix)
            printf("           fix: %s\n", f->fix);
    }
    size_t p = d->counts[LEVEL_PROBLEM], w = d->counts[LEVEL_WARNING];
    if (!p && !w)
        printf("\nno problem found\n");
    else
        printf("\n%zu problem%s, %zu warning%s\n", p, p == 1 ? "" : "s", w, w == 1 ? "" : "s");
    return 0;
}

static int print_json(const struct doctor *d)
{
    bool oom = false;
    struct json_object *o = json_object_new_object(), *a = json_object_new_array();
    if (!o || !a) {
        json_object_put(o);
        json_object_put(a);
        return -ENOMEM;
    }
    cfg_jadd(&oom, o, "version", json_object_new_int(1));
    cfg_jadd(&oom, o, "ok", json_object_new_boolean(d->counts[LEVEL_PROBLEM] == 0));
    cfg_jadd(&oom, o, "problems", json_object_new_int64((int64_t)d->counts[LEVEL_PROBLEM]));
    cfg_jadd(&oom, o, "warnings", json_object_new_int64((int64_t)d->counts[LEVEL_WARNING]));
    for (size_t i = 0; i < d->n; i++) {
        const struct finding *f = &d->v[i];
        struct json_object *x = json_object_new_object();
        if (!x) {
            oom = true;
            break;
        }
        cfg_jadd(&oom, x, "area", cfg_jstr(&oom, f->area));
        cfg_jadd(&oom, x, "subject", cfg_jstr(&oom, f->subject));
        cfg_jadd(&oom, x, "level", cfg_jstr(&oom, level_words[f->level]));
        cfg_jadd(&oom, x, "message", cfg_jstr(&oom, f->message));
        cfg_jadd(&oom, x, "fix", f->fix ? cfg_jstr(&oom, f->fix) : NULL);
        cfg_jpush(&oom, a, x);
    }
    cfg_jadd(&oom, o, "checks", a);
    if (!oom)
        puts(json_object_to_json_string_ext(o, CFG_JSON_OUT_FLAGS));
    json_object_put(o);
    return oom ? -ENOMEM : 0;
}

enum { OPT_CONNECT_TIMEOUT = 256, OPT_NO_CONNECT };

const struct option cli_doctor_options[] = {
    {"json", no_argument, NULL, 'j'},
    {"no-connect", no_argument, NULL, OPT_NO_CONNECT},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {0},
};

int cmd_doctor(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    struct doctor d = {0};
    struct mcp_config *c = NULL;
    struct cmd_creds_report *rep = NULL;
    char *secrets_path = NULL, *auth_path = NULL, *cwd = NULL;
    bool json = false, connect = true;
    int64_t timeout_ms = 0;
    int opt, status = BRIDGE_EXIT_FAILED;

    if (args_wants_help(argc, argv)) {
        fputs(doctor_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    optind = 0;
    while ((opt = getopt_long(argc, argv, "", cli_doctor_options, NULL)) != -1) {
        if (opt == 'j')
            json = true;
        else if (opt == OPT_NO_CONNECT)
            connect = false;
        else if (opt == OPT_CONNECT_TIMEOUT) {
            if (cli_parse_duration("--connect-timeout", optarg, log, &timeout_ms) < 0)
                return BRIDGE_EXIT_USAGE;
        } else
            return cli_option_error(log, argv, "", cli_doctor_options);
    }
    if (optind != argc)
        return cfg_usage_error(log, "doctor", "doctor takes no arguments");

    c = cfg_load_quietly(g, log);
    if (!c)
        return BRIDGE_EXIT_CONFIG;
    cwd = getcwd(NULL, 0);

    check_helper(&d, HELPER_SECRETS, &secrets_path);
    check_helper(&d, HELPER_MCP_AUTH, &auth_path);
    if (secrets_path)
        check_secrets(&d, secrets_path);
    check_config(&d, c);
    if (cmd_creds_report_new(c, g->config, &rep) < 0)
        d.oom = true;
    else
        check_servers(&d, c, rep, connect, timeout_ms, g, log);
    check_agents(&d, c, cwd);

    if (d.oom) {
        log_error(log, "out of memory");
        goto out;
    }
    if ((json ? print_json(&d) : print_text(&d)) < 0 || fflush(stdout) != 0) {
        log_error(log, "cannot write the report: %s", strerror(errno ? errno : ENOMEM));
        goto out;
    }
    status = d.counts[LEVEL_PROBLEM] ? BRIDGE_EXIT_FAILED : BRIDGE_EXIT_OK;
out:
    doctor_release(&d);
    cmd_creds_report_free(rep);
    mcp_config_free(c);
    free(secrets_path);
    free(auth_path);
    free(cwd);
    return status;
}
