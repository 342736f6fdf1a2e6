/* mcp_template.c - ${VAR} templates: one scanner, two walks over it (expansion and the list of
 * variables a template names). */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/mcp_template.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "credkit/util.h"

#define VAR_NAME_MAX 256            /* bytes */
#define EXPANDED_MAX (256u * 1024u) /* one expanded value */

#define bad(e, ...) err_set((e), -EINVAL, __VA_ARGS__)

static int oom(struct err *e)
{
    return err_set(e, -ENOMEM, "out of memory");
}

struct scan_ops {
    int (*lit)(void *ud, const char *p, size_t n); /* literal text; NULL: ignored */
    /* a reference: its name as written ("NAME", "env:NAME", "input:ID"), and its default
     * (NULL when it has none; dflt_len bytes, not terminated); NULL: ignored */
    int (*var)(void *ud, const char *name, const char *dflt, size_t dflt_len);
};

static int scan_flush(const struct scan_ops *ops, void *ud, const char *p, size_t n)
{
    return ops->lit && n > 0 ? ops->lit(ud, p, n) : 0;
}

/* An input's ID (VS Code's "inputs"): letters, digits, '_', '-' and '.'. */
static bool input_id_is_valid(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-' || *s == '.'))
            return false;
    return true;
}

static bool ref_is_valid(const char *name)
{
    if (strncmp(name, MCP_TEMPLATE_ENV, strlen(MCP_TEMPLATE_ENV)) == 0)
        return name_is_valid(name + strlen(MCP_TEMPLATE_ENV));
    if (strncmp(name, MCP_TEMPLATE_INPUT, strlen(MCP_TEMPLATE_INPUT)) == 0)
        return input_id_is_valid(name + strlen(MCP_TEMPLATE_INPUT));
    return name_is_valid(name);
}

/* The reference whose "${" is at p (at is its 1-based position, for messages): "${NAME}",
 * "${NAME:-default}", "${env:NAME}", "${input:ID}"; its name checked and handed to ops->var;
 * *ret_end is the "}". The default is literal text up to the first "}". */
static int scan_var(const char *p, size_t at, const struct scan_ops *ops, void *ud,
                    const char **ret_end, struct err *e)
{
    const char *start = p + 2, *end = strchr(start, '}');
    if (!end)
        return bad(e,
                   "unterminated \"${\" at character %zu: close it with \"}\", or write "
                   "\"$${\" for a literal \"${\"",
                   at);
    const char *dflt = NULL;
    size_t n = (size_t)(end - start), dlen = 0;
    for (const char *q = start; q + 1 < end; q++)
        if (q[0] == ':' && q[1] == '-') {
            dflt = q + 2;
            dlen = (size_t)(end - dflt);
            n = (size_t)(q - start);
            break;
        }
    char name[VAR_NAME_MAX + 1];
    if (n > 0 && n <= VAR_NAME_MAX) {
        memcpy(name, start, n);
        name[n] = 0;
    }
    if (n == 0 || n > VAR_NAME_MAX || !ref_is_valid(name))
        return bad(e,
                   "invalid variable name in \"${...}\" at character %zu: use letters, "
                   "digits and '_', not starting with a digit (the forms are ${NAME}, "
                   "${NAME:-default}, ${env:NAME} and ${input:ID})",
                   at);
    if (ops->var) {
        int r = ops->var(ud, name, dflt, dlen);
        if (r < 0)
            return r;
    }
    *ret_end = end;
    return 0;
}

#define ADAPTER_ENV "$env:"

/* The length of the name after "$env:": the longest run of letters, digits and '_' (the
 * adapter's \w+), 0 when it is not a valid name (then "$env:" is literal text). */
static size_t env_name_len(const char *s)
{
    size_t n = 0;
    while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
           (s[n] >= '0' && s[n] <= '9') || s[n] == '_')
        n++;
    if (n == 0 || n > VAR_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    return n;
}

/* "$env:NAME" as the reference "env:NAME", without a default. */
static int scan_env(const char *s, size_t n, const struct scan_ops *ops, void *ud)
{
    char name[sizeof(MCP_TEMPLATE_ENV) + VAR_NAME_MAX];
    (void)snprintf(name, sizeof(name), "%s%.*s", MCP_TEMPLATE_ENV, (int)n, s);
    return ops->var ? ops->var(ud, name, NULL, 0) : 0;
}

/* Walks tmpl: "$$" is one literal "$", "$env:NAME" the reference "env:NAME", "${NAME}" a variable, any other "$" itself. Syntax errors
 * are -EINVAL with a message giving the position (never the text: it may hold a secret). */
static int template_scan(const char *tmpl, const struct scan_ops *ops, void *ud, struct err *e)
{
    const char *p = tmpl, *run = tmpl;
    int r;

    while (*p) {
        if (p[0] != '$') {
            p++;
            continue;
        }
        if (p[1] == '$') {
            r = scan_flush(ops, ud, run, (size_t)(p + 1 - run));
            if (r < 0)
                return r;
            p += 2;
            run = p;
            continue;
        }
        size_t envlen = strlen(ADAPTER_ENV);
        if (p[1] != '{' && strncmp(p, ADAPTER_ENV, envlen) == 0) {
            /* the pi adapter's "$env:NAME" (NAME: letters, digits, '_'): ${env:NAME} */
            size_t n = env_name_len(p + envlen);
            if (n > 0) {
                r = scan_flush(ops, ud, run, (size_t)(p - run));
                if (r >= 0)
                    r = scan_env(p + envlen, n, ops, ud);
                if (r < 0)
                    return r;
                p += envlen + n;
                run = p;
                continue;
            }
        }
        if (p[1] != '{') {
            p++;
            continue;
        }
        r = scan_flush(ops, ud, run, (size_t)(p - run));
        if (r < 0)
            return r;
        const char *end = NULL;
        r = scan_var(p, (size_t)(p - tmpl) + 1, ops, ud, &end, e);
        if (r < 0)
            return r;
        p = end + 1;
        run = p;
    }
    return scan_flush(ops, ud, run, (size_t)(p - run));
}

struct vars_ctx {
    void (*fn)(const char *name, void *userdata);
    void (*ref_fn)(const char *name, bool has_default, void *userdata);
    void *userdata;
};

static int vars_var(void *ud, const char *name, const char *dflt, size_t dflt_len)
{
    struct vars_ctx *c = ud;
    (void)dflt_len;
    if (c->fn)
        c->fn(name, c->userdata);
    else
        c->ref_fn(name, dflt != NULL, c->userdata);
    return 0;
}

void mcp_template_vars(const char *tmpl, void (*fn)(const char *name, void *userdata),
                       void *userdata)
{
    if (!tmpl || !fn)
        return;
    struct vars_ctx c = {fn, NULL, userdata};
    const struct scan_ops ops = {NULL, vars_var};
    (void)template_scan(tmpl, &ops, &c, NULL);
}

void mcp_template_refs(const char *tmpl,
                       void (*fn)(const char *name, bool has_default, void *userdata),
                       void *userdata)
{
    if (!tmpl || !fn)
        return;
    struct vars_ctx c = {NULL, fn, userdata};
    const struct scan_ops ops = {NULL, vars_var};
    (void)template_scan(tmpl, &ops, &c, NULL);
}

const char *mcp_template_env_name(const char *name)
{
    if (strncmp(name, MCP_TEMPLATE_INPUT, strlen(MCP_TEMPLATE_INPUT)) == 0)
        return NULL;
    if (strncmp(name, MCP_TEMPLATE_ENV, strlen(MCP_TEMPLATE_ENV)) == 0)
        return name + strlen(MCP_TEMPLATE_ENV);
    return name;
}

const char *mcp_template_input_id(const char *name)
{
    if (strncmp(name, MCP_TEMPLATE_INPUT, strlen(MCP_TEMPLATE_INPUT)) == 0)
        return name + strlen(MCP_TEMPLATE_INPUT);
    return NULL;
}

int mcp_template_missing_hint(const char *name, char *buf, size_t size)
{
    const char *id = mcp_template_input_id(name);
    char secret[MCP_TEMPLATE_SECRET_BUF];
    if (strncmp(name, MCP_TEMPLATE_ENV, strlen(MCP_TEMPLATE_ENV)) == 0)
        return snprintf(buf, size,
                        "set %s in the environment the program starts in (\"%s\" reads nothing "
                        "else)",
                        name + strlen(MCP_TEMPLATE_ENV), name);
    if (!id)
        return snprintf(buf, size, "%s", "");
    const char *sn = mcp_template_secret_name(name, secret);
    if (!sn)
        return snprintf(buf, size, "the input's ID is too long to name a secret: shorten it");
    if (strcmp(sn, id) != 0)
        return snprintf(buf, size,
                        "run: secrets configure %s (the input '%s' is read from that "
                        "secret: a secret's name uses letters, digits and '_')",
                        sn, id);
    return snprintf(buf, size, "run: secrets configure %s", id);
}

const char *mcp_template_secret_name(const char *name, char buf[static MCP_TEMPLATE_SECRET_BUF])
{
    if (strncmp(name, MCP_TEMPLATE_ENV, strlen(MCP_TEMPLATE_ENV)) == 0)
        return NULL;
    if (strncmp(name, MCP_TEMPLATE_INPUT, strlen(MCP_TEMPLATE_INPUT)) != 0)
        return name;
    const char *id = name + strlen(MCP_TEMPLATE_INPUT);
    if (name_is_valid(id))
        return id;
    /* a VS Code id ("api-key", "gh.token"): each byte outside [A-Za-z0-9_] becomes '_', and
     * one that starts with a digit gets a '_' before it */
    size_t n = 0;
    if (*id >= '0' && *id <= '9')
        buf[n++] = '_';
    for (const char *p = id; *p; p++) {
        if (n + 1 >= MCP_TEMPLATE_SECRET_BUF)
            return NULL;
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || *p == '_';
        buf[n++] = ok ? *p : '_';
    }
    buf[n] = 0;
    return n > 0 && name_is_valid(buf) ? buf : NULL;
}

int mcp_lookup_env(void *userdata, const char *name, char **ret, struct err *e)
{
    (void)userdata;
    const char *env = mcp_template_env_name(name);
    if (!env)
        return -ENOENT; /* an input is a secret: the environment does not know it */
    const char *v = getenv(env);
    if (!v)
        return -ENOENT;
    char *c = strdup(v);
    if (!c)
        return oom(e);
    *ret = c;
    return 0;
}

struct expand_ctx {
    mcp_lookup_fn lookup;
    void *userdata;
    struct buf out;       /* secret */
    struct strv *missing; /* NULL: the first missing variable is the error */
    bool any_missing;
    struct err *e;
    mcp_ref_fn ref_fn; /* NULL: nobody is told */
    void *ref_userdata;
};

static void tell(const struct expand_ctx *c, const char *name, enum mcp_ref_state state)
{
    if (c->ref_fn)
        c->ref_fn(c->ref_userdata, name, state);
}

static int expand_lit(void *ud, const char *p, size_t n)
{
    struct expand_ctx *c = ud;
    if (c->any_missing) /* the result is thrown away anyway */
        return 0;
    int r = buf_append(&c->out, p, n);
    if (r == -E2BIG)
        return bad(c->e, "the value is longer than %u bytes after expanding variables",
                   EXPANDED_MAX);
    return r < 0 ? oom(c->e) : 0;
}

static int expand_var(void *ud, const char *name, const char *dflt, size_t dflt_len)
{
    struct expand_ctx *c = ud;
    struct err le = ERR_INIT;
    char *val = NULL;
    int r = c->lookup(c->userdata, name, &val, &le);
    /* ${NAME:-default}: the default when unset or empty, as in sh */
    if (dflt && (r == -ENOENT || (r >= 0 && (!val || !*val)))) {
        secure_free(val);
        tell(c, name, MCP_REF_DEFAULT);
        return expand_lit(c, dflt, dflt_len);
    }
    if (r == -ENOENT) {
        tell(c, name, MCP_REF_MISSING);
        c->any_missing = true;
        if (!c->missing) {
            char hint[VAR_NAME_MAX + 192];
            (void)mcp_template_missing_hint(name, hint, sizeof(hint));
            return err_set(c->e, -ENOENT, "variable '%s' is not set%s%s", name, *hint ? ": " : "",
                           hint);
        }
        if (strv_contains(c->missing, name))
            return 0;
        return strv_push(c->missing, name) < 0 ? oom(c->e) : 0;
    }
    if (r < 0) {
        if (r == -ENOMEM)
            return oom(c->e);
        return err_set(c->e, r, "cannot look up variable '%s': %s", name, err_msg(&le));
    }
    tell(c, name, MCP_REF_SET);
    r = expand_lit(c, val ? val : "", val ? strlen(val) : 0);
    secure_free(val);
    return r;
}

static int expand_told(const char *tmpl, mcp_lookup_fn lookup, void *userdata, struct strv *missing,
                       mcp_ref_fn fn, void *fn_userdata, char **ret, struct err *e);

/* Expands tmpl. With missing, every unset variable is added to it (once) and the result is
 * -ENOENT (without a message) when there was any; without, the first one is the error. */
static int expand(const char *tmpl, mcp_lookup_fn lookup, void *userdata, struct strv *missing,
                  char **ret, struct err *e)
{
    return expand_told(tmpl, lookup, userdata, missing, NULL, NULL, ret, e);
}

/* expand(), telling fn (when not NULL) what became of each reference. */
static int expand_told(const char *tmpl, mcp_lookup_fn lookup, void *userdata, struct strv *missing,
                       mcp_ref_fn fn, void *fn_userdata, char **ret, struct err *e)
{
    struct expand_ctx c = {
        lookup ? lookup : mcp_lookup_env, userdata, {0}, missing, false, e, fn, fn_userdata};
    const struct scan_ops ops = {expand_lit, expand_var};
    int r;

    buf_init_secret(&c.out, EXPANDED_MAX);
    r = template_scan(tmpl, &ops, &c, e);
    if (r < 0)
        goto out;
    if (c.any_missing) {
        r = -ENOENT;
        goto out;
    }
    char *s = buf_detach(&c.out);
    if (!s) {
        r = oom(e);
        goto out;
    }
    *ret = s;
    r = 0;
out:
    buf_release(&c.out);
    return r;
}

int mcp_expand(const char *tmpl, mcp_lookup_fn lookup, void *userdata, char **ret, struct err *e)
{
    if (!tmpl)
        return bad(e, "no template to expand");
    return expand(tmpl, lookup, userdata, NULL, ret, e);
}

int mcp_expand_collect(const char *tmpl, mcp_lookup_fn lookup, void *userdata, struct strv *missing,
                       char **ret, struct err *e)
{
    if (!tmpl || !missing)
        return bad(e, "no template to expand");
    return expand(tmpl, lookup, userdata, missing, ret, e);
}

int mcp_template_eval(const char *tmpl, mcp_lookup_fn lookup, void *userdata, mcp_ref_fn fn,
                      void *fn_userdata, struct err *e)
{
    struct strv missing = STRV_INIT;
    char *v = NULL;
    if (!tmpl)
        return bad(e, "no template to expand");
    int r = expand_told(tmpl, lookup, userdata, &missing, fn, fn_userdata, &v, e);
    secure_free(v);
    strv_release(&missing);
    return r;
}

/* ---- the pi adapter's value forms -------------------------------------------------------- */

const char *mcp_value_command(const char *v)
{
    return v && v[0] == '!' && v[1] != '!' ? v + 1 : NULL;
}

const char *mcp_value_template(const char *v)
{
    if (!v || mcp_value_command(v))
        return NULL;
    return v[0] == '!' ? v + 1 : v; /* "!!x" is the template "!x" */
}

const char *mcp_value_command_name(const char *cmd, char buf[static MCP_VALUE_COMMAND_NAME_BUF])
{
    /* FNV-1a, 64 bits: a name that is the same for the same command, at every run and in every
     * program, and says nothing of it */
    uint64_t h = UINT64_C(14695981039346656037);
    for (const unsigned char *p = (const unsigned char *)cmd; *p; p++) {
        h ^= *p;
        h *= UINT64_C(1099511628211);
    }
    (void)snprintf(buf, MCP_VALUE_COMMAND_NAME_BUF, "%s%016" PRIx64, MCP_VALUE_COMMAND_PREFIX, h);
    return buf;
}

bool mcp_value_is_command_name(const char *name)
{
    size_t n = strlen(MCP_VALUE_COMMAND_PREFIX);
    return strncmp(name, MCP_VALUE_COMMAND_PREFIX, n) == 0 &&
           strlen(name) == MCP_VALUE_COMMAND_NAME_BUF - 1 &&
           strspn(name + n, "0123456789abcdef") == 16;
}

int mcp_value_expand(const char *v, mcp_lookup_fn lookup, void *userdata, char **ret, struct err *e)
{
    const char *cmd = mcp_value_command(v);
    if (!cmd)
        return mcp_expand(mcp_value_template(v), lookup, userdata, ret, e);
    char name[MCP_VALUE_COMMAND_NAME_BUF];
    char *val = NULL;
    struct err le = ERR_INIT;
    int r =
        (lookup ? lookup : mcp_lookup_env)(userdata, mcp_value_command_name(cmd, name), &val, &le);
    if (r == -ENOENT)
        return err_set(e, -ENOENT,
                       "the command of its \"!...\" value has not run (the value is had from "
                       "`secrets` when the server connects)");
    if (r < 0)
        return r == -ENOMEM ? oom(e) : err_set(e, r, "%s", err_msg(&le));
    *ret = val;
    return 0;
}

int mcp_value_eval(const char *v, mcp_lookup_fn lookup, void *userdata, mcp_ref_fn fn,
                   void *fn_userdata, struct err *e)
{
    if (mcp_value_command(v))
        return 0; /* run when connecting, never to look */
    return mcp_template_eval(mcp_value_template(v), lookup, userdata, fn, fn_userdata, e);
}
