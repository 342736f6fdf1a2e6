/* cmd_add.c - mcp-bridge add: one server into a configuration file.
 *
 * Parse the options, decide what is missing (on a terminal, ask for it: cmd_add_guided.c),
 * then act: the entry is built, put into the file under its lock, checked by the loader the
 * bridge itself uses, and only then written (cmd_cfgfile.h). A refused entry, or a failed
 * write, leaves the file as it was. Values are stored as written: ${VAR} is never expanded. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/duration.h"
#include "credkit/mcp_config.h"
#include "credkit/path.h"
#include "credkit/strv.h"
#include "credkit/tty.h"
#include "credkit/util.h"

#include "cli/cli.h"
#include "cli/cmd_add.h"
#include "cli/cmd_add_names.h"
#include "cli/cmd_cfgfile.h"
#include "cli/cmd_config.h"
#include "cli/cmd_creds.h"
#include "config/server_config.h"

static const char add_help[] =
    "usage: mcp-bridge add [NAME] [OPTIONS]\n"
    "       mcp-bridge add NAME --url URL [--header 'Name: value']...\n"
    "                      [--oauth | --bearer-env VAR | --no-auth] [--type http|sse]\n"
    "                      [--timeout D] [--scope user|project] [--force]\n"
    "       mcp-bridge add NAME --command CMD [--arg A]... [--env K=V]... [--cwd DIR]\n"
    "                      [--timeout D] [--scope user|project] [--force]\n"
    "\n"
    "Add an MCP server to a configuration file. On a terminal, whatever the options do not say\n"
    "is asked step by step: the transport, the URL or command line, the name (suggested from\n"
    "the URL's host or the command's package), how it authenticates and where it is saved.\n"
    "The entry is checked as the bridge will read it before anything is written; the file is\n"
    "replaced atomically and keeps every other entry and key as it was.\n"
    "\n"
    "  --url URL          an HTTP server (Streamable HTTP, or the older SSE with --type sse)\n"
    "  --header 'N: V'    a header sent with every request; V may use ${NAME}, which the\n"
    "                     bridge asks 'secrets' for at each connect (never write a token here)\n"
    "  --oauth            the server uses OAuth: sign in once with 'mcp-auth NAME'; the bridge\n"
    "                     asks mcp-auth for a fresh token at each connect\n"
    "  --bearer-env VAR   send 'Authorization: Bearer <value of VAR>': the bridge asks\n"
    "                     'secrets' for VAR at each connect (its recipe, else the environment)\n"
    "  --no-auth          no credentials (do not ask)\n"
    "  --command CMD      a stdio server: the program to start (no shell)\n"
    "  --arg A            one argument for CMD (repeat for each)\n"
    "  --env K=V          an environment variable for CMD; V may use ${NAME}\n"
    "  --cwd DIR          the directory CMD runs in\n"
    "  --timeout D        the request timeout for this server (e.g. 30s; default 60s)\n"
    "  --scope S          user: ~/.pi/agent/mcp.json, or the --config file (default)\n"
    "                     project: .mcp.json in the working directory\n"
    "  --force            replace an entry of the same name in that file\n"
    "\n"
    "Without a terminal, NAME and --url or --command are required. Once written, each ${NAME}\n"
    "of the entry is asked of 'secrets' as the bridge will ask it: one that does not resolve\n"
    "is a warning that says how to set it up ('secrets configure NAME').\n"
    "\n"
    "exit status: 0 added, 1 the file could not be written, 2 usage error, 3 the entry is\n"
    "invalid, already exists (without --force) or the file cannot be changed, 130 cancelled\n"
    "\n"
    "examples:\n"
    "  mcp-bridge add                                          # guided\n"
    "  mcp-bridge add github --url https://api.githubcopilot.com/mcp/ --bearer-env GITHUB_TOKEN\n"
    "  mcp-bridge add linear --url https://mcp.linear.app/mcp --oauth\n"
    "  mcp-bridge add internal --url 'https://mcp.corp.example/${TEAM}' \\\n"
    "      --header 'X-Api-Key: ${CORP_API_KEY}' --scope project\n"
    "  mcp-bridge add everything --command npx --arg -y \\\n"
    "      --arg @modelcontextprotocol/server-everything\n"
    "  mcp-bridge add fs --command mcp-server-filesystem --arg ~/src --env LOG_LEVEL=info\n";

/* ---- parse --------------------------------------------------------------------------------- */

void add_args_release(struct add_args *a)
{
    free(a->name);
    free(a->url);
    free(a->command);
    free(a->cwd);
    free(a->bearer_env);
    strv_release_secure(&a->args);
    strv_release_secure(&a->env);
    strv_release_secure(&a->headers);
}

static int set_once(struct log *log, const char *opt, char **slot, const char *value)
{
    if (*slot) {
        log_error(log, "%s is given twice (see 'mcp-bridge add --help')", opt);
        return -EINVAL;
    }
    *slot = strdup(value);
    return *slot ? 0 : -ENOMEM;
}

/* "Name: value" -> "Name: value" with exactly one space, as the loader keeps headers. */
static int parse_header_opt(struct log *log, const char *s, struct strv *out)
{
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : 0;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (!colon || n == 0) {
        log_error(log, "--header takes 'Name: value', e.g. --header 'X-Team: ${TEAM_ID}' (see "
                       "'mcp-bridge add --help')");
        return -EINVAL;
    }
    const char *v = colon + 1;
    v += strspn(v, " \t");
    char *h = NULL;
    if (asprintf(&h, "%.*s: %s", (int)n, s, v) < 0)
        return -ENOMEM;
    return strv_push_take(out, h); /* the vector wipes it: a value may be a credential */
}

static int parse_env_opt(struct log *log, const char *s, struct strv *out)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s) {
        log_error(log, "--env takes K=V, e.g. --env API_KEY='${API_KEY}' (see 'mcp-bridge add "
                       "--help')");
        return -EINVAL;
    }
    return strv_push(out, s);
}

static int parse_type_opt(struct log *log, const char *s, int *ret)
{
    if (strcmp(s, "http") == 0)
        *ret = MCP_TRANSPORT_HTTP;
    else if (strcmp(s, "sse") == 0)
        *ret = MCP_TRANSPORT_SSE;
    else if (strcmp(s, "stdio") == 0)
        *ret = MCP_TRANSPORT_STDIO;
    else {
        (void)cfg_usage_error(log, "add", "--type is 'http', 'sse' or 'stdio', not '%s'", s);
        return -EINVAL;
    }
    return 0;
}

enum {
    OPT_URL = 256,
    OPT_COMMAND,
    OPT_ARG,
    OPT_ENV,
    OPT_CWD,
    OPT_HEADER,
    OPT_OAUTH,
    OPT_BEARER,
    OPT_NO_AUTH,
    OPT_TIMEOUT,
    OPT_SCOPE,
    OPT_FORCE,
    OPT_TYPE,
};

/* One option into a. 0, -EINVAL (reported) or -ENOMEM. */
static int add_option(struct log *log, struct add_args *a, int opt, const char *arg)
{
    int r = 0;
    switch (opt) {
    case OPT_URL:
        return set_once(log, "--url", &a->url, arg);
    case OPT_COMMAND:
        r = set_once(log, "--command", &a->command, arg);
        if (r >= 0 && !arg[strspn(arg, " \t")]) {
            log_error(log, "--command is blank: name the program to start");
            r = -EINVAL;
        }
        return r;
    case OPT_ARG:
        return strv_push(&a->args, arg);
    case OPT_ENV:
        return parse_env_opt(log, arg, &a->env);
    case OPT_CWD:
        return set_once(log, "--cwd", &a->cwd, arg);
    case OPT_HEADER:
        return parse_header_opt(log, arg, &a->headers);
    case OPT_OAUTH:
        a->oauth = true;
        return 0;
    case OPT_BEARER:
        r = set_once(log, "--bearer-env", &a->bearer_env, arg);
        if (r >= 0 && !name_is_valid(arg)) {
            log_error(log,
                      "--bearer-env takes the name of a secret or environment variable "
                      "(letters, digits and '_'), not '%s'",
                      arg);
            r = -EINVAL;
        }
        return r;
    case OPT_NO_AUTH:
        a->auth_none = true;
        return 0;
    case OPT_TIMEOUT:
        a->have_timeout = true;
        if (duration_parse(arg, &a->timeout_ms) < 0 || a->timeout_ms <= 0) {
            log_error(log, "--timeout: '%s' is not a duration above zero (e.g. 30s, 2m)", arg);
            return -EINVAL;
        }
        return 0;
    case OPT_SCOPE:
        return cfg_parse_scope(log, "add", arg, &a->scope) != 0 ? -EINVAL : 0;
    case OPT_FORCE:
        a->force = true;
        return 0;
    case OPT_TYPE:
        return parse_type_opt(log, arg, &a->type_flag);
    }
    (void)cfg_usage_error(log, "add", "unknown option");
    return -EINVAL;
}

const struct option cli_add_options[] = {
    {"url", required_argument, NULL, OPT_URL},
    {"command", required_argument, NULL, OPT_COMMAND},
    {"arg", required_argument, NULL, OPT_ARG},
    {"env", required_argument, NULL, OPT_ENV},
    {"cwd", required_argument, NULL, OPT_CWD},
    {"header", required_argument, NULL, OPT_HEADER},
    {"oauth", no_argument, NULL, OPT_OAUTH},
    {"bearer-env", required_argument, NULL, OPT_BEARER},
    {"no-auth", no_argument, NULL, OPT_NO_AUTH},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"scope", required_argument, NULL, OPT_SCOPE},
    {"force", no_argument, NULL, OPT_FORCE},
    {"type", required_argument, NULL, OPT_TYPE},
    {0},
};

/* The command line into a. -1 to go on, else the exit status (help printed, or the error
 * reported). */
static int add_parse(int argc, char **argv, struct log *log, struct add_args *a)
{
    int opt;

    if (args_wants_help(argc, argv)) {
        fputs(add_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    optind = 0;
    while ((opt = getopt_long(argc, argv, "", cli_add_options, NULL)) != -1) {
        if (opt == '?')
            return cli_option_error(log, argv, "", cli_add_options);
        int r = add_option(log, a, opt, optarg);
        if (r == -ENOMEM) {
            log_error(log, "out of memory");
            return BRIDGE_EXIT_FAILED;
        }
        if (r < 0)
            return BRIDGE_EXIT_USAGE;
    }
    if (argc - optind > 1)
        return cfg_usage_error(log, "add", "add takes one NAME, and options");
    if (argc - optind == 1) {
        if (!add_name_ok(argv[optind]))
            return cfg_usage_error(log, "add", "'%s' is not a usable name: %s", argv[optind],
                                   add_name_rule);
        a->name = strdup(argv[optind]);
        if (!a->name)
            return BRIDGE_EXIT_FAILED;
    }
    return -1;
}

/* ---- decide -------------------------------------------------------------------------------- */

/* Which transport the options point at, and whether they agree. -1 to go on, else the exit
 * status (a usage error reported). */
static int add_decide_transport(struct log *log, struct add_args *a)
{
    bool http_opts = a->url || a->headers.n || a->oauth || a->bearer_env || a->auth_none;
    bool stdio_opts = a->command || a->args.n || a->env.n || a->cwd;
    if (a->url && a->command)
        return cfg_usage_error(log, "add",
                               "give --url (an HTTP server) or --command (a stdio server), not "
                               "both");
    if (http_opts && stdio_opts)
        return cfg_usage_error(log, "add",
                               "--header, --oauth, --bearer-env and --no-auth go with --url; "
                               "--arg, --env and --cwd with --command");
    if ((a->oauth != 0) + (a->bearer_env != NULL) + (a->auth_none != 0) > 1)
        return cfg_usage_error(log, "add", "choose one of --oauth, --bearer-env and --no-auth");
    if (a->type_flag >= 0 && ((a->type_flag == MCP_TRANSPORT_STDIO && http_opts) ||
                              (a->type_flag != MCP_TRANSPORT_STDIO && stdio_opts)))
        return cfg_usage_error(log, "add", "--type %s does not go with %s",
                               mcp_transport_name((enum mcp_transport)a->type_flag),
                               http_opts ? "--url" : "--command");
    if (a->type_flag >= 0)
        a->transport = a->type_flag;
    else if (http_opts)
        a->transport = MCP_TRANSPORT_HTTP;
    else if (stdio_opts)
        a->transport = MCP_TRANSPORT_STDIO;
    return -1;
}

/* The two files add may write, absolute and for messages. */
struct add_files {
    char *user, *project;
    char *user_disp, *project_disp;
};

static void add_files_release(struct add_files *f)
{
    free(f->user);
    free(f->project);
    free(f->user_disp);
    free(f->project_disp);
}

static int add_files_init(const struct args_globals *g, struct log *log, struct add_files *f)
{
    struct err e = ERR_INIT;
    int r = cfg_scope_path(CFG_SCOPE_USER, g, &f->user, &e);
    if (r >= 0)
        r = cfg_scope_path(CFG_SCOPE_PROJECT, g, &f->project, &e);
    if (r < 0) {
        log_error(log, "%s", err_msg(&e));
        return BRIDGE_EXIT_CONFIG;
    }
    f->user_disp = path_display(f->user);
    f->project_disp = path_display(f->project);
    if (!f->user_disp || !f->project_disp)
        return BRIDGE_EXIT_FAILED;
    return -1;
}

/* Without a name and a URL or command, a person is asked (*ret_guided) and a script told what
 * is missing. -1 to go on, else the exit status (reported). */
static int add_decide_missing(struct log *log, struct add_args *a, const struct add_files *files,
                              bool *ret_guided)
{
    if (a->name && (a->url || a->command))
        return -1;
    if (!tty_interactive()) {
        char suggestion[ADD_SUGGEST_MAX] = "";
        if (a->url)
            add_name_from_url(a->url, suggestion);
        else if (a->command)
            add_name_from_command(a->command, a->args.v, suggestion);
        if (a->url || a->command)
            return cfg_usage_error(log, "add",
                                   "add needs a NAME for the server, e.g. 'mcp-bridge add %s %s "
                                   "...'",
                                   add_name_ok(suggestion) ? suggestion : "NAME",
                                   a->url ? "--url" : "--command");
        return cfg_usage_error(log, "add",
                               "add needs NAME and --url URL or --command CMD; on a terminal it "
                               "asks for them");
    }
    *ret_guided = true;
    int r = add_guided(a, files->user_disp, files->project_disp);
    if (r == -ECANCELED) {
        fprintf(stderr, "\ncancelled; nothing was changed\n");
        return ADD_EXIT_CANCELLED;
    }
    if (r < 0) {
        log_error(log, "cannot ask: %s", strerror(-r));
        return BRIDGE_EXIT_FAILED;
    }
    return -1;
}

static bool contains_ci(const char *s, const char *word)
{
    return strcasestr(s, word) != NULL;
}

/* Whether a value stored in clear looks like a credential: a literal (no ${VAR}) Authorization
 * value, or any literal value of a header or variable named like a key or token. */
static bool looks_secret(const char *name, const char *value)
{
    static const char *const words[] = {"token", "secret",     "key",    "password", "passwd",
                                        "auth",  "credential", "cookie", NULL};
    if (!*value || strstr(value, "${"))
        return false;
    if (strncasecmp(value, "Bearer ", 7) == 0 || strncasecmp(value, "Basic ", 6) == 0)
        return true;
    for (size_t i = 0; words[i]; i++)
        if (contains_ci(name, words[i]))
            return true;
    return false;
}

/* A credential written out in the file: said (not refused: it may be meant). disp names the
 * file. The values themselves are never shown. */
static void add_warn_clear_secrets(struct log *log, const struct add_args *a, const char *disp)
{
    for (size_t i = 0; i < a->headers.n; i++) {
        const char *v;
        char hname[128];
        (void)snprintf(hname, sizeof(hname), "%.*s", (int)cfg_pair_split(a->headers.v[i], ':', &v),
                       a->headers.v[i]);
        const char *scheme = strncasecmp(v, "Bearer ", 7) == 0  ? "Bearer "
                             : strncasecmp(v, "Basic ", 6) == 0 ? "Basic "
                                                                : "";
        if (looks_secret(hname, v))
            log_warn(log,
                     "the header '%s' looks like a credential written out: it is stored in clear "
                     "in '%s'; write a variable instead, e.g. --header '%s: %s${TOKEN_VAR}'%s",
                     hname, disp, hname, scheme,
                     *scheme == 'B' && scheme[1] == 'e' ? ", or use --bearer-env or --oauth" : "");
    }
    for (size_t i = 0; i < a->env.n; i++) {
        const char *v;
        char ename[128];
        (void)snprintf(ename, sizeof(ename), "%.*s", (int)cfg_pair_split(a->env.v[i], '=', &v),
                       a->env.v[i]);
        if (looks_secret(ename, v))
            log_warn(log,
                     "the value of %s looks like a credential written out: it is stored in clear "
                     "in '%s'; write ${%s} instead and give it a recipe: secrets configure %s",
                     ename, disp, ename, ename);
    }
}

/* A person being guided is asked before an entry of the same name is replaced: before the
 * lock is taken, so nobody waits on a person. -1 to go on, else the exit status. */
static int add_confirm_replace(struct log *log, struct add_args *a, const char *path,
                               const char *disp)
{
    char prompt[512];
    bool yes = false;
    if (cfg_path_defines(path, a->name, NULL) <= 0)
        return -1;
    (void)snprintf(prompt, sizeof(prompt), "'%s' is already in '%s': replace it? [y/N]: ", a->name,
                   disp);
    int r = add_ask_yes_no(prompt, &yes);
    if (r == -ECANCELED || (r >= 0 && !yes)) {
        fprintf(stderr, "%snothing was changed\n", r < 0 ? "\ncancelled; " : "");
        return r < 0 ? ADD_EXIT_CANCELLED : BRIDGE_EXIT_CONFIG;
    }
    if (r < 0) {
        log_error(log, "cannot ask: %s", strerror(-r));
        return BRIDGE_EXIT_FAILED;
    }
    a->force = true;
    return -1;
}

/* ---- act ----------------------------------------------------------------------------------- */

static int build_entry(const struct add_args *a, struct json_object **ret)
{
    struct json_object *o = json_object_new_object();
    bool oom = !o;

    if (a->transport != MCP_TRANSPORT_STDIO) {
        /* "type" as Claude Code writes it: it reads .mcp.json too, and wants it for URLs */
        cfg_jadd(&oom, o, "type",
                 cfg_jstr(&oom, a->transport == MCP_TRANSPORT_SSE ? "sse" : "http"));
        cfg_jadd(&oom, o, "url", cfg_jstr(&oom, a->url));
        if (a->headers.n > 0)
            cfg_jadd(&oom, o, "headers", cfg_jpairs(&oom, a->headers.v, a->headers.n, ':'));
    } else {
        cfg_jadd(&oom, o, "command", cfg_jstr(&oom, a->command));
        if (a->args.n > 0)
            cfg_jadd(&oom, o, "args", cfg_jstrv(&oom, a->args.v));
        if (a->env.n > 0)
            cfg_jadd(&oom, o, "env", cfg_jpairs(&oom, a->env.v, a->env.n, '='));
        if (a->cwd)
            cfg_jadd(&oom, o, "cwd", cfg_jstr(&oom, a->cwd));
    }
    if (a->have_timeout) {
        struct json_object *t = json_object_new_int64(a->timeout_ms);
        oom |= !t;
        cfg_jadd(&oom, o, "timeout", t);
    }
    if (a->oauth)
        cfg_jadd(&oom, o, "auth", cfg_jstr(&oom, "oauth"));
    if (a->bearer_env)
        cfg_jadd(&oom, o, "bearerTokenEnv", cfg_jstr(&oom, a->bearer_env));
    if (oom) {
        json_object_put(o);
        return -ENOMEM;
    }
    *ret = o;
    return 0;
}

/* Checks the entry name in root as the bridge will read it: the loader validates the whole
 * document as if it were the file display. An invalid entry: -EINVAL with the loader's
 * reason. Names that are not in the environment do not make it invalid (the bridge asks
 * `secrets` for them at connect). The names its credentials refer to (cmd_creds.h) are
 * appended to names. */
static int check_entry(struct json_object *root, const char *name, const char *display,
                       struct strv *names, struct err *e)
{
    struct mcp_config_opts o = {.defer_vars = true};
    struct mcp_config *c = NULL;
    struct err le = ERR_INIT;
    int r;

    r = server_config_load_object(root, display, &o, &c, &le);
    if (r < 0) {
        r = err_set(e, r, "cannot check the entry: %s", err_msg(&le));
        goto out;
    }
    const struct mcp_server *s = mcp_config_find(c, name);
    if (!s) {
        r = err_set(e, -EIO, "cannot check the entry: the loader does not see '%s'", name);
        goto out;
    }
    if (s->error) {
        r = err_set(e, -EINVAL, "%s", s->error);
        goto out;
    }
    r = cmd_creds_names_of(s, names);
    if (r < 0)
        r = err_set(e, -ENOMEM, "out of memory");
out:
    mcp_config_free(c);
    return r;
}

/* What comes next, for a person being guided (plain lines), else at info level. */
_printf_(3, 4) static void add_say(struct log *log, bool guided, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (guided)
        fprintf(stderr, "%s\n", msg);
    else
        log_info(log, "%s", msg);
}

/* Each ${NAME} of the entry, asked of `secrets` now as the bridge will ask it at each
 * connect: one that does not resolve is a warning with secrets' reason (which says what to
 * run); one that only the environment of this shell answers may be missing where the bridge
 * runs. Values are never seen: cmd_creds.h keeps only the state. */
static void add_report_names(struct log *log, const struct add_args *a, const struct strv *names,
                             bool guided)
{
    struct cmd_creds_var *vars = calloc(names->n ? names->n : 1, sizeof(*vars));
    if (!vars || cmd_creds_vars_resolve((const char *const *)names->v, names->n, vars) < 0) {
        log_warn(log, "cannot check the names '%s' uses: out of memory", a->name);
        goto out;
    }
    for (size_t i = 0; i < names->n; i++) {
        const struct cmd_creds_var *v = &vars[i];
        if (!v->resolved)
            log_warn(log, "'%s' uses ${%s}, which does not resolve now: %s", a->name, v->name,
                     v->error);
        else if (strcmp(v->source, "environment") == 0)
            add_say(log, guided,
                    "${%s} comes from the environment of this shell (no recipe): the bridge "
                    "needs it in its own environment too, or a recipe: secrets configure %s",
                    v->name, v->name);
        else
            add_say(log, guided,
                    "${%s} resolves now (source: %s): the bridge asks 'secrets' for it at each "
                    "connect",
                    v->name, v->source);
    }
out:
    cmd_creds_vars_release(vars, names->n);
    free(vars);
}

/* After the write: what comes next, and what may stand in the entry's way. */
static void add_report(const struct args_globals *g, struct log *log, const struct add_args *a,
                       const char *disp, const struct strv *names, bool guided)
{
    /* quiet when scripted; a person being guided gets a confirmation and what comes next */
    log_msg(log, guided ? LOG_ERROR : LOG_INFO, "added '%s' to '%s'", a->name, disp);
    if (a->bearer_env)
        add_say(log, guided,
                "'%s' is sent 'Authorization: Bearer <${%s}>': the bridge asks 'secrets' for %s "
                "at each connect (its recipe, else the bridge's environment)",
                a->name, a->bearer_env, a->bearer_env);
    add_report_names(log, a, names, guided);

    /* a higher layer with the same name would hide the new entry */
    struct mcp_config *c = NULL;
    char *cwd = getcwd(NULL, 0);
    struct mcp_config_opts o = {.config_path = g->config, .cwd = cwd};
    if (cwd && mcp_config_load(&o, &c, NULL) >= 0) {
        const struct mcp_server *s = mcp_config_find(c, a->name);
        if (s && strcmp(s->source, disp) != 0)
            log_warn(log, "'%s' is also defined in '%s', which takes precedence", a->name,
                     s->source);
    }
    mcp_config_free(c);
    free(cwd);

    if (a->oauth) {
        char *cmd = NULL;
        if (cmd_creds_login_command(a->name, g->config, &cmd) >= 0)
            add_say(log, guided,
                    "sign in once with: %s (the bridge then asks mcp-auth for a fresh token at "
                    "each connect)",
                    cmd);
        free(cmd);
    }
    add_say(log, guided, "try it with: mcp-bridge%s%s%s test %s", g->config ? " --config \"" : "",
            g->config ? g->config : "", g->config ? "\"" : "", a->name);
}

/* Puts the entry into the file at path under its lock, checks it as the bridge will read it,
 * and writes the file; then reports. The exit status (reported). */
static int add_write(const struct args_globals *g, struct log *log, const struct add_args *a,
                     const char *path, struct json_object *entry, bool guided)
{
    bool user = a->scope == CFG_SCOPE_USER;
    struct cfg_file *f = NULL;
    struct err e = ERR_INIT;
    struct strv names = STRV_INIT;
    int r, status = BRIDGE_EXIT_CONFIG;

    r = cfg_file_open(path, user, user ? 0600 : 0644, &f, &e);
    if (r < 0)
        return cfg_file_open_failed(log, r, &e);
    if (cfg_file_defines(f, a->name) && !a->force) {
        log_error(log,
                  "'%s' is already in '%s': add --force to replace it, or remove it first with "
                  "'mcp-bridge remove %s' (nothing was changed)",
                  a->name, cfg_file_display(f), a->name);
        goto out;
    }
    if (cfg_file_put(f, a->name, entry) < 0) {
        log_error(log, "out of memory");
        status = BRIDGE_EXIT_FAILED;
        goto out;
    }
    r = check_entry(cfg_file_doc(f), a->name, cfg_file_display(f), &names, &e);
    if (r < 0) {
        log_error(log, "%s (nothing was changed)", err_msg(&e));
        status = r == -EINVAL ? BRIDGE_EXIT_CONFIG : BRIDGE_EXIT_FAILED;
        goto out;
    }
    r = cfg_file_commit(f, &e);
    if (r < 0) {
        log_error(log, "%s (the file is as it was)", err_msg(&e));
        status = BRIDGE_EXIT_FAILED;
        goto out;
    }
    status = BRIDGE_EXIT_OK;
    /* the lock is let go first: the report asks secrets, which may run a command recipe */
    char *disp = strdup(cfg_file_display(f));
    cfg_file_free(f);
    f = NULL;
    if (disp)
        add_report(g, log, a, disp, &names, guided);
    free(disp);
out:
    cfg_file_free(f);
    strv_release(&names);
    return status;
}

/* Parse, decide what is missing (asking a person for it), then act: warn about credentials
 * written out, build the entry, and write it. */
int cmd_add(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    struct add_args a = ADD_ARGS_INIT;
    struct add_files files = {0};
    struct json_object *entry = NULL;
    bool guided = false;

    int status = add_parse(argc, argv, log, &a);
    if (status < 0)
        status = add_decide_transport(log, &a);
    if (status < 0)
        status = add_files_init(g, log, &files);
    if (status < 0)
        status = add_decide_missing(log, &a, &files, &guided);
    if (status >= 0)
        goto out;
    if (a.scope == CFG_SCOPE_NONE)
        a.scope = CFG_SCOPE_USER;
    bool user = a.scope == CFG_SCOPE_USER;
    const char *path = user ? files.user : files.project;
    const char *disp = user ? files.user_disp : files.project_disp;

    add_warn_clear_secrets(log, &a, disp);
    if (build_entry(&a, &entry) < 0) {
        log_error(log, "out of memory");
        status = BRIDGE_EXIT_FAILED;
        goto out;
    }
    if (guided && !a.force)
        status = add_confirm_replace(log, &a, path, disp);
    if (status < 0)
        status = add_write(g, log, &a, path, entry, guided);
out:
    json_object_put(entry);
    add_files_release(&files);
    add_args_release(&a);
    return status;
}
