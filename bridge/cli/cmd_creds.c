/* cmd_creds.c - what the commands say about an entry's credentials (cmd_creds.h) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "credkit/child.h"
#include "credkit/duration.h"
#include "credkit/helper_answer.h"
#include "credkit/json.h"
#include "credkit/mcp_template.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/url.h"
#include "credkit/util.h"

#include "cli/cmd_creds.h"
#include "creds/cred.h"
#include "creds/cred_path.h"
#include "creds/cred_proc.h"
#include "config/server_config.h"

#define STATUS_ANSWER_MAX (1024u * 1024u) /* mcp-auth status --json: every stored sign-in */
#define STDERR_SHOWN      300             /* of a helper's stderr, in a reason */

struct cmd_creds_report {
    struct cmd_creds_server *servers;
    size_t n;
};

/* ---- names ----------------------------------------------------------------------------------- */

struct names_ctx {
    struct strv *out;
    int r;
};

static void add_name(const char *name, void *userdata)
{
    struct names_ctx *ctx = userdata;
    char secret[MCP_TEMPLATE_SECRET_BUF];
    name = mcp_template_secret_name(name, secret); /* input:ID is a secret; env:NAME none */
    if (name && ctx->r >= 0 && !strv_contains(ctx->out, name))
        ctx->r = strv_push(ctx->out, name);
}

/* The ${NAME}s of a value in the adapter's forms: none in a "!command" (the shell reads its
 * own variables when it runs), those of the template after "!!". */
static void value_names(const char *v, struct names_ctx *ctx)
{
    const char *tmpl = mcp_value_template(v);
    if (tmpl)
        mcp_template_vars(tmpl, add_name, ctx);
}

/* The ${NAME}s of the value part of "NAME<sep>value" strings. */
static void pair_names(char *const *v, char sep, struct names_ctx *ctx)
{
    for (size_t i = 0; v && v[i]; i++) {
        const char *at = strchr(v[i], sep);
        if (at)
            value_names(at + 1 + (sep == ':'), ctx);
    }
}

int cmd_creds_names_of(const struct mcp_server *s, struct strv *out)
{
    struct names_ctx ctx = {.out = out};
    if (s->url)
        mcp_template_vars(s->url, add_name, &ctx);
    pair_names(s->headers, ':', &ctx);
    pair_names(s->env, '=', &ctx);
    for (size_t i = 0; s->args && s->args[i]; i++)
        mcp_template_vars(s->args[i], add_name, &ctx);
    if (s->bearer_token)
        value_names(s->bearer_token, &ctx);
    if (s->bearer_token_env)
        add_name(s->bearer_token_env, &ctx);
    return ctx.r;
}

/* ---- secrets ----------------------------------------------------------------------------------- */

void cmd_creds_vars_release(struct cmd_creds_var *vars, size_t n)
{
    for (size_t i = 0; vars && i < n; i++) {
        free(vars[i].name);
        free(vars[i].source);
        free(vars[i].error);
        vars[i] = (struct cmd_creds_var){0};
    }
}

/* Why a helper's run gave no answer to read, into e. */
static int run_failed(const char *prog, const struct child_result *res, struct err *e)
{
    char line[STDERR_SHOWN + 1]; /* its first line, control characters replaced */
    cred_proc_first_line(res->err.data ? res->err.data : "", res->err.len, line, sizeof(line));
    if (res->timed_out)
        return err_set(e, -ETIMEDOUT, "'%s' did not answer within %d s", prog,
                       CREDS_HELPER_TIMEOUT_MS / 1000);
    if (res->signal)
        return err_set(e, -EIO, "'%s' was killed by signal %d", prog, res->signal);
    return err_set(e, -EIO, "'%s' failed (exit status %d)%s%s", prog, res->exit_code,
                   line[0] ? ": " : "", line);
}

/* Runs the helper prog (argv[0] its path) to its end and captures its output: 0 and *ret
 * (released by the caller) whenever it ran, whatever its exit status; -errno with e when it
 * could not be started or its output exceeded max_out. */
static int run_helper(const char *prog, const char *const *argv, size_t max_out, bool secret,
                      struct child_result *ret, struct err *e)
{
    struct child_spec spec = {.argv = argv};
    struct child_run_opts o = {
        .timeout_ms = CREDS_HELPER_TIMEOUT_MS,
        .max_stdout = max_out,
        .secret_output = secret,
    };
    struct child_result res;
    struct err ce = ERR_INIT;
    int r = child_run(&spec, &o, &res, &ce);
    if (r == -E2BIG)
        return err_set(e, r, "the answer of '%s' is larger than %zu bytes", prog, max_out);
    if (r < 0)
        return err_set(e, r, "%s", err_msg(&ce)); /* "cannot run 'PATH': ..." */
    *ret = res;
    return 0;
}

static int var_error(struct cmd_creds_var *v, const char *msg)
{
    free(v->error);
    v->error = strdup(msg);
    v->resolved = false;
    return v->error ? 0 : -ENOMEM;
}

/* The names from a parsed answer: the state of each, never the value (the answer is released
 * by the caller, which wipes the values). */
static int vars_from_answer(const struct helper_secrets *a, const char *const *names, size_t n,
                            struct cmd_creds_var *vars)
{
    for (size_t i = 0; i < n; i++) {
        const struct helper_secret *hs = helper_secrets_find(a, names[i]);
        int r;
        if (!hs)
            r = var_error(&vars[i], "'secrets' did not answer for it");
        else if (hs->error)
            r = var_error(&vars[i], hs->error);
        else {
            vars[i].resolved = true;
            vars[i].expires_at = hs->expires_at;
            vars[i].source = strdup(hs->source ? hs->source : "secrets");
            r = vars[i].source ? 0 : -ENOMEM;
        }
        if (r < 0)
            return r;
    }
    return 0;
}

/* Runs secrets and reads its answer into vars; -errno with e when there is no answer. */
static int secrets_ask(const char *const *names, size_t n, struct cmd_creds_var *vars,
                       struct err *e)
{
    struct helper_secrets a = {0};
    struct child_result res = {0};
    char *path = NULL;
    const char **argv = NULL;
    bool ran = false;
    int r = cred_path_find(HELPER_SECRETS, &path, e);
    if (r < 0)
        goto out;
    argv = calloc(n + 5, sizeof(*argv));
    if (!argv) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    argv[0] = path;
    argv[1] = "resolve";
    argv[2] = "--json";
    argv[3] = "--";
    for (size_t i = 0; i < n; i++)
        argv[4 + i] = names[i];
    r = run_helper("secrets", argv, HELPER_ANSWER_MAX, true, &res, e);
    if (r < 0)
        goto out;
    ran = true;
    /* 0 and 1 carry the answer (1: a name failed); anything else, or nothing, is a failure */
    if (res.timed_out || res.signal || (res.exit_code != 0 && res.exit_code != 1) ||
        res.out.len == 0) {
        r = run_failed("secrets", &res, e);
        goto out;
    }
    struct err pe = ERR_INIT;
    r = helper_secrets_parse(res.out.data, res.out.len, &a, &pe);
    if (r < 0) {
        r = err_set(e, r, "cannot read the answer of 'secrets': %s", err_msg(&pe));
        goto out;
    }
    r = vars_from_answer(&a, names, n, vars);
    if (r < 0)
        (void)err_set(e, r, "out of memory");
out:
    helper_secrets_release(&a); /* the values are wiped here, unseen */
    if (ran)
        child_result_release(&res);
    free(argv);
    free(path);
    return r;
}

/* secrets_ask() for names[0..n): an answer too large for one run (many long values) is asked
 * for again in halves, so that only a single value over the bound fails. */
static int resolve_range(const char *const *names, size_t n, struct cmd_creds_var *vars)
{
    struct err e = ERR_INIT;
    int r = secrets_ask(names, n, vars, &e);
    if (r == -E2BIG && n > 1) {
        size_t half = n / 2;
        r = resolve_range(names, half, vars);
        return r < 0 ? r : resolve_range(names + half, n - half, vars + half);
    }
    if (r == -ENOMEM)
        return r;
    for (size_t i = 0; r < 0 && i < n; i++)
        if (var_error(&vars[i], err_msg(&e)) < 0)
            return -ENOMEM;
    return 0;
}

int cmd_creds_vars_resolve(const char *const *names, size_t n, struct cmd_creds_var *vars)
{
    for (size_t i = 0; i < n; i++) {
        vars[i].name = strdup(names[i]);
        if (!vars[i].name)
            return -ENOMEM;
    }
    return n == 0 ? 0 : resolve_range(names, n, vars);
}

/* ---- mcp-auth ---------------------------------------------------------------------------------- */

void cmd_creds_oauth_release(struct cmd_creds_oauth *o)
{
    free(o->command);
    free(o->error);
    *o = (struct cmd_creds_oauth){0};
}

/* The sign-in of url as the account (NULL: the default one) among the servers of a status
 * answer, or NULL. Borrowed. */
static struct json_object *find_signin(struct json_object *status, const char *url,
                                       const char *account)
{
    struct json_object *servers = json_get_array(status, "servers");
    for (size_t i = 0; servers && i < json_object_array_length(servers); i++) {
        struct json_object *t = json_object_array_get_idx(servers, i);
        const char *u = json_get_string(t, "url"), *label = json_get_string(t, "label");
        if (u && strcmp(u, url) == 0 && (account ? label && strcmp(label, account) == 0 : !label))
            return t;
    }
    return NULL;
}

int cmd_creds_oauth_from_status(struct json_object *status, const char *url, const char *account,
                                bool oauth_entry, const char *command, int64_t now,
                                struct cmd_creds_oauth *ret)
{
    struct cmd_creds_oauth o = {.state = CREDS_OAUTH_LOGIN_REQUIRED};
    struct json_object *t = status && url ? find_signin(status, url, account) : NULL;
    bool access = false;
    if (t) {
        (void)json_get_bool(t, "has_access_token", &access);
        (void)json_get_bool(t, "has_refresh_token", &o.refresh_token);
        if (!access || !json_get_int64(t, "expires_at", &o.expires_at))
            o.expires_at = 0;
        if (access && (o.expires_at == 0 || o.expires_at > now))
            o.state = CREDS_OAUTH_SIGNED_IN;
        else if (o.refresh_token)
            o.state = CREDS_OAUTH_EXPIRED;
    }
    if (o.state == CREDS_OAUTH_LOGIN_REQUIRED && !oauth_entry && !t)
        o.state = CREDS_OAUTH_NOT_USED;
    if (o.state == CREDS_OAUTH_LOGIN_REQUIRED) {
        o.command = strdup(command);
        if (!o.command)
            return -ENOMEM;
    }
    *ret = o;
    return 0;
}

/* The parsed answer of `mcp-auth [--config PATH] status --json` (every stored sign-in), or
 * -errno with e. Caller puts *ret. */
static int auth_status(const char *config_path, struct json_object **ret, struct err *e)
{
    struct child_result res = {0};
    char *path = NULL;
    bool ran = false;
    int r = cred_path_find(HELPER_MCP_AUTH, &path, e);
    if (r < 0)
        goto out;
    const char *argv[] = {path, "status", "--json", NULL, NULL, NULL};
    if (config_path) {
        argv[1] = "--config";
        argv[2] = config_path;
        argv[3] = "status";
        argv[4] = "--json";
    }
    r = run_helper("mcp-auth", argv, STATUS_ANSWER_MAX, false, &res, e);
    if (r < 0)
        goto out;
    ran = true;
    if (res.timed_out || res.signal || res.exit_code != 0 || res.out.len == 0) {
        r = run_failed("mcp-auth", &res, e);
        goto out;
    }
    struct err pe = ERR_INIT;
    r = json_parse(res.out.data, res.out.len, STATUS_ANSWER_MAX, ret, &pe);
    if (r < 0)
        r = err_set(e, r, "cannot read the answer of 'mcp-auth status --json': %s", err_msg(&pe));
out:
    if (ran)
        child_result_release(&res);
    free(path);
    return r;
}

/* The canonical URL mcp-auth files the entry's sign-in under: its url expanded from the
 * environment (as mcp-auth, a child with our environment, expands it), canonical. */
static int entry_canonical_url(const struct mcp_server *s, char **ret, struct err *e)
{
    char *u = NULL;
    int r = mcp_expand(s->url, NULL, NULL, &u, e);
    if (r >= 0)
        r = url_canonical(u, ret, e);
    secure_free(u);
    return r;
}

/* Whether mcp-auth may hold a sign-in the bridge uses for s: the provider's own rule
 * (cred_oauth_use()), OAuth entries and those a Bearer challenge signs in. */
static bool oauth_applies(const struct mcp_server *s)
{
    return cred_oauth_use(s) != CRED_OAUTH_NEVER;
}

static int oauth_unknown(struct cmd_creds_oauth *o, const char *why)
{
    *o = (struct cmd_creds_oauth){.state = CREDS_OAUTH_UNKNOWN, .error = strdup(why)};
    return o->error ? 0 : -ENOMEM;
}

static int server_oauth(struct cmd_creds_server *cs, struct json_object *status, const char *why,
                        const char *config_path, int64_t now)
{
    const struct mcp_server *s = cs->server;
    bool oauth = cred_oauth_use(s) == CRED_OAUTH_ALWAYS;
    struct err e = ERR_INIT;
    char *url = NULL, *cmd = NULL;
    int r;
    if (!status)
        return oauth ? oauth_unknown(&cs->oauth, why) : 0;
    if (entry_canonical_url(s, &url, &e) < 0) {
        if (!oauth)
            return 0;
        char msg[ERR_MSG_MAX + 64];
        (void)snprintf(msg, sizeof(msg), "mcp-auth cannot tell the server's URL: %s", err_msg(&e));
        return oauth_unknown(&cs->oauth, msg);
    }
    r = cmd_creds_login_command(s->name, config_path, &cmd);
    if (r >= 0)
        r = cmd_creds_oauth_from_status(status, url, cred_oauth_account(s), oauth, cmd, now,
                                        &cs->oauth);
    free(url);
    free(cmd);
    return r;
}

/* ---- headersHelper --------------------------------------------------------------------------- */

int cmd_creds_helper_program(const char *cmdline, char **ret, bool *ret_shell)
{
    struct strv words = STRV_INIT;
    struct err e = ERR_INIT;
    const char *p = cmdline + strspn(cmdline, " \t");
    if (*p == '!') {
        *ret_shell = true;
        *ret = strdup("/bin/sh");
        return *ret ? 0 : -ENOMEM;
    }
    /* split as the bridge splits it when it runs the command */
    int r = helper_cmdline_split(cmdline, &words, &e);
    if (r >= 0 && (words.n == 0 || !words.v[0][0]))
        r = -EINVAL;
    if (r >= 0) {
        *ret = strdup(words.v[0]);
        *ret_shell = false;
        r = *ret ? 0 : -ENOMEM;
    }
    strv_release(&words);
    return r;
}

char *cmd_creds_program_path(const char *prog)
{
    char *path = NULL;
    return path_find_program(prog, NULL, &path) < 0 ? NULL : path;
}

static int server_helper(struct cmd_creds_server *cs)
{
    struct cmd_creds_helper *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    cs->helper = h;
    int r = cmd_creds_helper_program(cs->server->headers_helper, &h->program, &h->shell);
    if (r == -EINVAL) {
        /* the bridge will not be able to run it either: say what it is, unfound */
        h->program = strdup(cs->server->headers_helper);
        r = h->program ? 0 : -ENOMEM;
    }
    if (r >= 0 && h->program) {
        h->path = cmd_creds_program_path(h->program);
    }
    return r;
}

/* ---- the report ------------------------------------------------------------------------------ */

bool cmd_creds_server_missing_vars(const struct cmd_creds_server *cs)
{
    for (size_t i = 0; i < cs->n_vars; i++)
        if (!cs->vars[i].resolved)
            return true;
    return false;
}

const char *cmd_creds_server_status(const struct cmd_creds_server *cs)
{
    if (cmd_creds_server_missing_vars(cs) || (cs->helper && !cs->helper->path) ||
        cs->oauth.state == CREDS_OAUTH_UNKNOWN)
        return "missing";
    if (cs->oauth.state == CREDS_OAUTH_LOGIN_REQUIRED)
        return "login";
    return "ok";
}

/* Every name of every valid entry once, each entry's names in its own vector. */
static int collect_names(struct cmd_creds_report *rep, struct strv *per, struct strv *all)
{
    for (size_t i = 0; i < rep->n; i++) {
        if (!rep->servers[i].checked)
            continue;
        int r = cmd_creds_names_of(rep->servers[i].server, &per[i]);
        for (size_t k = 0; r >= 0 && k < per[i].n; k++)
            if (!strv_contains(all, per[i].v[k]))
                r = strv_push(all, per[i].v[k]);
        if (r < 0)
            return r;
    }
    return 0;
}

static int copy_var(struct cmd_creds_var *dst, const struct cmd_creds_var *src)
{
    dst->name = strdup(src->name);
    dst->resolved = src->resolved;
    dst->expires_at = src->expires_at;
    dst->source = src->source ? strdup(src->source) : NULL;
    dst->error = src->error ? strdup(src->error) : NULL;
    if (!dst->name || (src->source && !dst->source) || (src->error && !dst->error))
        return -ENOMEM;
    return 0;
}

/* Each entry's variables, from the one answer for all names. */
static int spread_vars(struct cmd_creds_report *rep, struct strv *per, const struct strv *all,
                       const struct cmd_creds_var *vars)
{
    for (size_t i = 0; i < rep->n; i++) {
        struct cmd_creds_server *cs = &rep->servers[i];
        if (per[i].n == 0)
            continue;
        cs->vars = calloc(per[i].n, sizeof(*cs->vars));
        if (!cs->vars)
            return -ENOMEM;
        cs->n_vars = per[i].n;
        for (size_t k = 0; k < per[i].n; k++) {
            size_t j = 0;
            while (strcmp(all->v[j], per[i].v[k]) != 0)
                j++;
            if (copy_var(&cs->vars[k], &vars[j]) < 0)
                return -ENOMEM;
        }
    }
    return 0;
}

static int report_vars(struct cmd_creds_report *rep)
{
    struct strv *per = calloc(rep->n ? rep->n : 1, sizeof(*per));
    struct strv all = STRV_INIT;
    struct cmd_creds_var *vars = NULL;
    int r = per ? collect_names(rep, per, &all) : -ENOMEM;
    if (r >= 0 && all.n > 0) {
        vars = calloc(all.n, sizeof(*vars));
        r = vars ? cmd_creds_vars_resolve((const char *const *)all.v, all.n, vars) : -ENOMEM;
    }
    if (r >= 0)
        r = spread_vars(rep, per, &all, vars);
    cmd_creds_vars_release(vars, all.n);
    free(vars);
    for (size_t i = 0; per && i < rep->n; i++)
        strv_release(&per[i]);
    free(per);
    strv_release(&all);
    return r;
}

/* ---- what a connect would make of each reference -------------------------------------------- */

/* One reference of an entry, and what the expansion made of it wherever it appears. */
struct ref_fate {
    char *name; /* as written: "NAME", "env:NAME", "input:ID" */
    bool set, defaulted, missing;
};

struct fates {
    const struct cmd_creds_server *cs;
    struct ref_fate *v;
    size_t n;
    bool oom;
};

/* The lookup a connect would do, from the report: a secret resolved by `secrets` (its value is
 * not kept: any non-empty text stands for it), the environment for ${env:NAME}. */
static int report_lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    const struct fates *f = userdata;
    if (strncmp(name, MCP_TEMPLATE_ENV, strlen(MCP_TEMPLATE_ENV)) == 0)
        return mcp_lookup_env(NULL, name, ret, e);
    char buf[MCP_TEMPLATE_SECRET_BUF];
    const char *secret = mcp_template_secret_name(name, buf);
    for (size_t i = 0; secret && i < f->cs->n_vars; i++) {
        if (strcmp(f->cs->vars[i].name, secret) != 0 || !f->cs->vars[i].resolved)
            continue;
        *ret = strdup("resolved");
        return *ret ? 0 : err_set(e, -ENOMEM, "out of memory");
    }
    return -ENOENT;
}

static void on_fate(void *userdata, const char *name, enum mcp_ref_state state)
{
    struct fates *f = userdata;
    struct ref_fate *x = NULL;
    for (size_t i = 0; i < f->n && !x; i++)
        if (strcmp(f->v[i].name, name) == 0)
            x = &f->v[i];
    if (!x) {
        struct ref_fate *v = realloc(f->v, (f->n + 1) * sizeof(*v));
        char *dup = strdup(name);
        if (v)
            f->v = v;
        if (!v || !dup) {
            free(dup);
            f->oom = true;
            return;
        }
        x = &f->v[f->n++];
        *x = (struct ref_fate){.name = dup};
    }
    x->set |= state == MCP_REF_SET;
    x->defaulted |= state == MCP_REF_DEFAULT;
    x->missing |= state == MCP_REF_MISSING;
}

/* One value through the evaluator (a value form: "!command" and "!!" apply); a syntax error is
 * the loader's to report, a missing reference is told to on_fate. */
static void fate_of_value(struct fates *f, const char *v, bool value_form)
{
    int r = value_form ? mcp_value_eval(v, report_lookup, f, on_fate, f, NULL)
                       : mcp_template_eval(v, report_lookup, f, on_fate, f, NULL);
    if (r == -ENOMEM)
        f->oom = true;
}

static void fate_pairs(struct fates *f, char *const *v, char sep)
{
    for (size_t i = 0; v && v[i]; i++) {
        const char *at = strchr(v[i], sep);
        if (at)
            fate_of_value(f, at + 1 + (sep == ':'), true);
    }
}

/* Every reference of the entry through the evaluator a connect uses (mcp_template.h). */
static int collect_fates(struct fates *f)
{
    const struct mcp_server *s = f->cs->server;
    if (s->url)
        fate_of_value(f, s->url, false);
    fate_pairs(f, s->headers, ':');
    fate_pairs(f, s->env, '=');
    for (size_t i = 0; s->args && s->args[i]; i++)
        fate_of_value(f, s->args[i], false);
    if (s->cwd)
        fate_of_value(f, s->cwd, false);
    if (s->bearer_token)
        fate_of_value(f, s->bearer_token, true);
    return f->oom ? -ENOMEM : 0;
}

static struct ref_fate *fate_of(struct fates *f, const char *secret)
{
    char buf[MCP_TEMPLATE_SECRET_BUF];
    for (size_t i = 0; i < f->n; i++) {
        const char *sn = mcp_template_secret_name(f->v[i].name, buf);
        if (sn && strcmp(sn, secret) == 0)
            return &f->v[i];
    }
    return NULL;
}

/* A reference that does not resolve, but whose every use has a default, is what a connect does
 * with it: the default (secrets' "source" then "default"). */
static int var_defaulted(struct cmd_creds_var *v)
{
    free(v->error);
    free(v->source);
    v->error = NULL;
    v->resolved = true;
    v->source = strdup("default");
    return v->source ? 0 : -ENOMEM;
}

/* ${env:NAME}, as a connect reads it: the environment only, never `secrets`. */
static int add_env_var(struct cmd_creds_server *cs, const struct ref_fate *x)
{
    struct cmd_creds_var *v = realloc(cs->vars, (cs->n_vars + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    cs->vars = v;
    v = &cs->vars[cs->n_vars++];
    *v = (struct cmd_creds_var){.name = strdup(x->name)};
    const char *env = mcp_template_env_name(x->name);
    if (!v->name)
        return -ENOMEM;
    if (x->missing) {
        char msg[512];
        (void)snprintf(msg, sizeof(msg),
                       "'%s' is not set in the environment, which is all that ${%s} reads: set "
                       "it where the bridge starts, or write ${%s} to have it from `secrets`",
                       env, x->name, env);
        return var_error(v, msg);
    }
    v->resolved = true;
    v->source = strdup(x->set ? "environment" : "default");
    return v->source ? 0 : -ENOMEM;
}

/* The entry's references as a connect would make of them, one evaluator for both. */
static int settle_vars(struct cmd_creds_server *cs)
{
    struct fates f = {.cs = cs};
    int r = collect_fates(&f);
    for (size_t i = 0; r >= 0 && i < cs->n_vars; i++) {
        struct cmd_creds_var *v = &cs->vars[i];
        const struct ref_fate *x = fate_of(&f, v->name);
        bool is_token_env =
            cs->server->bearer_token_env && strcmp(cs->server->bearer_token_env, v->name) == 0;
        if (!v->resolved && x && !x->missing && x->defaulted && !is_token_env)
            r = var_defaulted(v);
    }
    for (size_t i = 0; r >= 0 && i < f.n; i++)
        if (strncmp(f.v[i].name, MCP_TEMPLATE_ENV, strlen(MCP_TEMPLATE_ENV)) == 0)
            r = add_env_var(cs, &f.v[i]);
    for (size_t i = 0; i < f.n; i++)
        free(f.v[i].name);
    free(f.v);
    return r;
}

static int report_oauth(struct cmd_creds_report *rep, const struct mcp_config *c,
                        const char *config_path)
{
    struct json_object *status = NULL;
    struct err e = ERR_INIT;
    bool needed = false, asked = false;
    int r = 0;
    for (size_t i = 0; i < rep->n; i++)
        needed |= rep->servers[i].checked && oauth_applies(rep->servers[i].server);
    if (!needed)
        return 0;
    int64_t now = (int64_t)time(NULL);
    for (size_t i = 0; r >= 0 && i < rep->n; i++) {
        struct cmd_creds_server *cs = &rep->servers[i];
        if (!cs->checked || !oauth_applies(cs->server))
            continue;
        if (!asked) {
            asked = true;
            if (auth_status(config_path, &status, &e) == -ENOMEM)
                return -ENOMEM;
        }
        r = server_oauth(cs, status, err_msg(&e), config_path, now);
        cs->oauth.auto_auth = server_config_auto_auth(c, cs->server);
    }
    json_object_put(status);
    return r;
}

int cmd_creds_report_new(const struct mcp_config *c, const char *config_path,
                         struct cmd_creds_report **ret)
{
    struct cmd_creds_report *rep = calloc(1, sizeof(*rep));
    size_t n = mcp_config_count(c);
    int r = -ENOMEM;
    if (!rep)
        return -ENOMEM;
    rep->servers = calloc(n ? n : 1, sizeof(*rep->servers));
    if (!rep->servers)
        goto out;
    rep->n = n;
    for (size_t i = 0; i < n; i++) {
        rep->servers[i].server = mcp_config_at(c, i);
        rep->servers[i].checked = !rep->servers[i].server->error;
    }
    r = report_vars(rep);
    for (size_t i = 0; r >= 0 && i < n; i++)
        if (rep->servers[i].checked)
            r = settle_vars(&rep->servers[i]);
    if (r >= 0)
        r = report_oauth(rep, c, config_path);
    for (size_t i = 0; r >= 0 && i < n; i++)
        if (rep->servers[i].checked && rep->servers[i].server->headers_helper)
            r = server_helper(&rep->servers[i]);
    if (r >= 0) {
        *ret = rep;
        rep = NULL;
    }
out:
    cmd_creds_report_free(rep);
    return r;
}

const struct cmd_creds_server *cmd_creds_report_at(const struct cmd_creds_report *r, size_t i)
{
    return r && i < r->n ? &r->servers[i] : NULL;
}

void cmd_creds_report_free(struct cmd_creds_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->servers && i < r->n; i++) {
        struct cmd_creds_server *cs = &r->servers[i];
        cmd_creds_vars_release(cs->vars, cs->n_vars);
        free(cs->vars);
        cmd_creds_oauth_release(&cs->oauth);
        if (cs->helper) {
            free(cs->helper->program);
            free(cs->helper->path);
            free(cs->helper);
        }
    }
    free(r->servers);
    free(r);
}

/* ---- words ----------------------------------------------------------------------------------- */

int cmd_creds_shell_quote(struct buf *b, const char *s)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                               "@%+=:,./_-";
    int r;
    if (*s && strspn(s, safe) == strlen(s))
        return buf_append_str(b, s);
    r = buf_append_char(b, '\'');
    for (const char *p = s; r >= 0 && *p; p++)
        r = *p == '\'' ? buf_append_str(b, "'\\''") : buf_append_char(b, *p);
    if (r >= 0)
        r = buf_append_char(b, '\'');
    return r;
}

int cmd_creds_login_command(const char *name, const char *config_path, char **ret)
{
    struct buf b;
    int r;
    buf_init(&b, 8192);
    r = buf_append_str(&b, "mcp-auth ");
    /* --config "PATH", as the bridge's own messages write it (cred_helper.c) */
    if (r >= 0 && config_path)
        r = buf_printf(&b, "--config \"%s\" ", config_path);
    if (r >= 0)
        r = cmd_creds_shell_quote(&b, name);
    if (r >= 0) {
        *ret = buf_detach(&b);
        r = *ret ? 0 : -ENOMEM;
    }
    buf_release(&b);
    return r;
}

/* ", expires in 7h59m" (or "expired") for an expiry, nothing for none. */
static int append_expiry(struct buf *out, int64_t expires_at, int64_t now)
{
    char d[DURATION_BUF_SIZE];
    if (expires_at <= 0)
        return 0;
    if (expires_at <= now)
        return buf_append_str(out, ", expired");
    return buf_printf(out, ", expires in %s",
                      duration_format((expires_at - now) * 1000, d, sizeof(d)));
}

/* secrets' source word, as a person reads it. Static. */
static const char *source_words(const char *source)
{
    static const struct {
        const char *source, *words;
    } words[] = {
        {"command", "a command recipe"},
        {"keychain", "a keychain recipe"},
        {"env", "an env: recipe"},
        {"file", "a file recipe"},
        {"literal", "a literal in secrets.json"},
        {"environment", "the environment, no recipe"},
        {"default", "the default written in the entry: it is not set"},
    };
    for (size_t i = 0; i < ELEMENTSOF(words); i++)
        if (strcmp(source, words[i].source) == 0)
            return words[i].words;
    return source;
}

int cmd_creds_describe_var(const struct cmd_creds_var *v, int64_t now, struct buf *out)
{
    if (!v->resolved)
        return buf_printf(out, "missing: %s", v->error ? v->error : "not resolved");
    int r = buf_printf(out, "ok (from %s", source_words(v->source ? v->source : "secrets"));
    if (r >= 0)
        r = append_expiry(out, v->expires_at, now);
    if (r >= 0)
        r = buf_append_char(out, ')');
    return r;
}

int cmd_creds_describe_oauth(const struct cmd_creds_oauth *o, int64_t now, struct buf *out)
{
    int r;
    switch (o->state) {
    case CREDS_OAUTH_SIGNED_IN:
        r = buf_append_str(out, "signed in");
        if (r >= 0)
            r = append_expiry(out, o->expires_at, now);
        if (r >= 0 && o->refresh_token)
            r = buf_append_str(out, ", refreshed by itself");
        return r;
    case CREDS_OAUTH_EXPIRED:
        return buf_append_str(out, "signed in, the token expired: it is refreshed at the next "
                                   "connect");
    case CREDS_OAUTH_LOGIN_REQUIRED:
        return buf_printf(out, "login required: run '%s'%s", o->command ? o->command : "mcp-auth",
                          o->auto_auth ? " (autoAuth is on: the bridge also signs in by itself "
                                         "when a call needs it)"
                                       : "");
    case CREDS_OAUTH_UNKNOWN:
        return buf_printf(out, "cannot tell: %s", o->error ? o->error : "mcp-auth failed");
    case CREDS_OAUTH_NOT_USED:
        break;
    }
    return buf_append_str(out, "not used");
}

int cmd_creds_describe_helper(const struct cmd_creds_helper *h, struct buf *out)
{
    if (h->shell)
        return buf_printf(out, "a shell command, not checked%s (list does not run it)",
                          h->path ? "" : ": /bin/sh is not there");
    if (!h->path)
        return buf_printf(out, "'%s' is not found%s", h->program,
                          strchr(h->program, '/') ? " or not executable" : " on PATH");
    return buf_printf(out, "%s, found at %s (list does not run it)", h->program, h->path);
}
