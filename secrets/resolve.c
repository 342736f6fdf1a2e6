/* resolve.c - run a recipe, with the TTL cache for commands */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/child.h"
#include "credkit/duration.h"
#include "credkit/file.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/suggest.h"
#include "credkit/textsafe.h"
#include "credkit/util.h"

#include "keychain.h"
#include "manager.h"
#include "resolve.h"

/* Beyond the command's own timeout, how long a second resolver waits for the first to finish
 * the same command before giving up. */
#define CACHE_LOCK_SLACK_MS 5000
#define STDERR_LINE_MAX     300

struct resolver {
    struct store *store;
    struct cache *cache;
    struct redact *redact;
    char *scope;
    unsigned flags;
};

void resolver_free(struct resolver *rs)
{
    if (!rs)
        return;
    free(rs->scope);
    free(rs);
}

int resolver_new(struct store *store, struct cache *cache, struct redact *redact, const char *scope,
                 unsigned flags, struct resolver **ret)
{
    struct resolver *rs = calloc(1, sizeof(*rs));
    if (!rs)
        return -ENOMEM;
    rs->scope = strdup(scope ? scope : "");
    if (!rs->scope) {
        free(rs);
        return -ENOMEM;
    }
    rs->store = store;
    rs->cache = cache;
    rs->redact = redact;
    rs->flags = flags;
    *ret = rs;
    return 0;
}

void resolved_release(struct resolved *r)
{
    if (!r)
        return;
    secure_free_len(r->value, r->len);
    *r = (struct resolved){0};
}

/* Takes ownership of value (secret buffer contents) into *ret. */
static int finish(struct resolver *rs, const char *name, struct buf *value, const char *source,
                  int64_t expires_at, struct resolved *ret, struct err *e)
{
    if (memchr(value->data ? value->data : "", 0, value->len))
        return err_set(e, -EINVAL, "'%s': the value contains a NUL byte", name);
    /* values travel in JSON answers and environment variables: text only */
    if (!utf8_valid(buf_str(value), value->len))
        return err_set(e, -EINVAL, "'%s': the value is not valid UTF-8 text", name);
    int r = redact_add(rs->redact, name, buf_str(value), value->len);
    if (r < 0)
        return r;
    size_t len = value->len;
    char *v = buf_detach(value);
    if (!v)
        return -ENOMEM;
    *ret = (struct resolved){.value = v, .len = len, .source = source, .expires_at = expires_at};
    return 0;
}

/* The first line of a command's stderr, for the error message, cut to a sane length. */
static void first_line(const struct buf *b, char *out, size_t size)
{
    const char *s = buf_str(b);
    s += strspn(s, " \t\r\n");
    size_t n = strcspn(s, "\r\n");
    if (n >= size)
        n = size - 1;
    memcpy(out, s, n);
    out[n] = 0;
}

static int run_command(struct resolver *rs, const struct recipe *r, struct buf *value,
                       struct err *e)
{
    struct child_spec spec = {
        .shell_command = r->arg,
        .flags = CHILD_STDOUT_PIPE | CHILD_STDERR_PIPE,
    };
    struct child_run_opts opts = {
        .timeout_ms = r->timeout_ms > 0 ? r->timeout_ms : RECIPE_COMMAND_TIMEOUT_DEFAULT,
        .max_stdout = SECRET_VALUE_MAX,
        .secret_output = true,
    };
    struct child_result res = {0};
    char line[STDERR_LINE_MAX], d[DURATION_BUF_SIZE];
    int ret = child_run(&spec, &opts, &res, e);
    if (ret == -E2BIG)
        return err_set(e, ret, "'%s': the command printed more than %d bytes", r->name,
                       SECRET_VALUE_MAX);
    if (ret < 0)
        return err_prefix(e, "'%s'", r->name);
    first_line(&res.err, line, sizeof(line));
    if (r->quiet)
        secure_wipe(line, sizeof(line));
    if (res.timed_out) {
        ret = err_set(e, -ETIMEDOUT,
                      "'%s': the command did not finish within %s and was killed (raise "
                      "\"timeout\" in the recipe if it needs longer)",
                      r->name, duration_format(opts.timeout_ms, d, sizeof(d)));
    } else if (res.signal) {
        ret = err_set(e, -EIO, "'%s': the command was killed by signal %d%s%s", r->name, res.signal,
                      line[0] ? ": " : "", line);
    } else if (res.exit_code != 0) {
        ret = err_set(e, -EIO, "'%s': the command exited with status %d%s%s", r->name,
                      res.exit_code, line[0] ? ": " : "", line);
    } else {
        buf_trim(&res.out);
        if (res.out.len == 0) {
            ret = err_set(e, -ENODATA, "'%s': the command printed nothing%s%s", r->name,
                          line[0] ? " (stderr: " : "", line);
            if (line[0] && e)
                (void)snprintf(e->msg + strlen(e->msg), sizeof(e->msg) - strlen(e->msg), ")");
        } else {
            ret = buf_append(value, res.out.data, res.out.len);
        }
    }
    child_result_release(&res);
    return ret;
}

/* The database password of a keepassxc recipe: the secret it names, resolved as any name is
 * (its recipe, else the variable), with a line break after it as keepassxc-cli reads it on
 * stdin. Never another keepassxc recipe: one database never waits on another. */
static int keepassxc_password(struct resolver *rs, const struct recipe *r, struct buf *ret,
                              struct err *e)
{
    const char *pw_name = r->password ? r->password : RECIPE_KEEPASSXC_PASSWORD_DEFAULT;
    const struct recipe *pw_rec = NULL;
    struct resolved pw = {0};
    if (store_get(rs->store, pw_name, &pw_rec, NULL) >= 0 && pw_rec->kind == RECIPE_KEEPASSXC)
        return err_set(e, -ELOOP,
                       "'%s': the database password '%s' is itself read from KeePassXC: keep it "
                       "in the keychain ('secrets configure %s --keychain') or another source",
                       r->name, pw_name, pw_name);
    int rc = resolver_get(rs, pw_name, &pw, e);
    if (rc < 0)
        return err_prefix(e, "'%s': the database password", r->name);
    rc = buf_append(ret, pw.value, pw.len);
    if (rc >= 0)
        rc = buf_append_char(ret, '\n');
    resolved_release(&pw);
    return rc;
}

/* A secret manager's reference: its CLI with an argv built here (no shell), run by the same
 * runner as commands; the value from its stdout, errors from its stderr (manager.c). */
static int run_manager(struct resolver *rs, const struct recipe *r, struct buf *value,
                       struct err *e)
{
    const struct manager *m = manager_of(r->kind);
    struct strv argv = STRV_INIT;
    struct buf input;
    struct child_result res = {0};
    int rc;

    buf_init_secret(&input, SECRET_VALUE_MAX);
    if (!m)
        return -EINVAL;
    rc = manager_argv(m, r, &argv);
    if (rc < 0)
        goto out;
    if (r->kind == RECIPE_KEEPASSXC) {
        rc = keepassxc_password(rs, r, &input, e);
        if (rc < 0)
            goto out;
    }
    struct child_spec spec = {
        .argv = (const char *const *)argv.v,
        .flags = CHILD_STDOUT_PIPE | CHILD_STDERR_PIPE,
    };
    struct child_run_opts opts = {
        .timeout_ms = r->timeout_ms > 0 ? r->timeout_ms : RECIPE_MANAGER_TIMEOUT_DEFAULT,
        .max_stdout = SECRET_VALUE_MAX,
        .secret_output = true,
        .stdin_data = input.len ? input.data : NULL,
        .stdin_len = input.len,
    };
    rc = child_run(&spec, &opts, &res, e);
    if (rc == -E2BIG) {
        rc = err_set(e, rc, "'%s': %s printed more than %d bytes", r->name, manager_program(m),
                     SECRET_VALUE_MAX);
        goto out;
    }
    if (rc < 0) {
        rc = manager_not_started(m, r, rc, e);
        goto out;
    }
    if (res.timed_out || res.signal || res.exit_code != 0)
        rc = manager_failed(m, r, &res, opts.timeout_ms, e);
    else
        rc = manager_value(m, r, &res.out, value, e);
    child_result_release(&res);
out:
    buf_release(&input);
    strv_release(&argv);
    return rc;
}

static int run_file(const struct recipe *r, struct buf *value, struct err *e)
{
    struct buf raw;
    int ret;
    buf_init_secret(&raw, SECRET_VALUE_MAX);
    ret = file_read(r->arg, FILE_SECRET, &raw, e);
    if (ret < 0) {
        ret = err_prefix(e, "'%s'", r->name);
        goto out;
    }
    /* by length, not as a C string: a NUL byte must reach the check in finish(), not cut the
     * value short */
    size_t n = 0;
    while (n < raw.len && raw.data[n] != '\r' && raw.data[n] != '\n')
        n++;
    ret = buf_append(value, raw.data, n);
    if (ret < 0)
        goto out;
    buf_trim(value);
    if (value->len == 0) {
        char *disp = path_display(r->arg);
        ret = err_set(e, -ENODATA, "'%s': the first line of '%s' is empty", r->name,
                      disp ? disp : r->arg);
        free(disp);
    }
out:
    buf_release(&raw);
    return ret;
}

static int run_env(const struct recipe *r, struct buf *value, struct err *e)
{
    const char *v = getenv(r->arg);
    if (!v)
        return err_set(e, -ENOENT, "'%s': the environment variable '%s' is not set", r->name,
                       r->arg);
    if (!*v)
        return err_set(e, -ENODATA, "'%s': the environment variable '%s' is empty", r->name,
                       r->arg);
    return buf_append_str(value, v);
}

static int run_keychain(const struct recipe *r, struct buf *value, struct err *e)
{
    char *v = NULL;
    int rc = keychain_lookup(r->arg, &v, e);
    if (rc == -ENOENT && strcmp(r->arg, r->name) == 0)
        rc = err_set(e, rc,
                     "'%s': the keychain has no item '%s': run 'secrets configure %s "
                     "--keychain' to store it",
                     r->name, r->arg, r->name);
    else if (rc == -ENOENT)
        rc = err_set(e, rc,
                     "'%s': the keychain has no item '%s': to store it, run: secrets "
                     "configure %s --keychain --label \"%s\"",
                     r->name, r->arg, r->name, r->arg);
    else if (rc < 0)
        rc = err_prefix(e, "'%s'", r->name);
    else
        rc = buf_append_str(value, v);
    secure_free(v);
    return rc;
}

/* A command or a manager's reference, run now. */
static int run_child(struct resolver *rs, const struct recipe *r, struct buf *value, struct err *e)
{
    return r->kind == RECIPE_COMMAND ? run_command(rs, r, value, e) : run_manager(rs, r, value, e);
}

/* A command (or a manager) with a TTL, through the cache: under the cache's lock for the
 * recipe, the cached value when there is a fresh one (unless RESOLVE_NO_CACHE), else the
 * command's, stored with its expiry. *expires_at and *cached are set on success. */
static int run_cached_command(struct resolver *rs, const struct recipe *r, int64_t now,
                              struct buf *value, int64_t *expires_at, bool *cached, struct err *e)
{
    struct file_lock *lock = NULL;
    char key[65];
    int rc;

    recipe_fingerprint(r, rs->scope, key);
    rc = cache_lock(rs->cache, key, r->timeout_ms + CACHE_LOCK_SLACK_MS, &lock, e);
    if (rc < 0) {
        rc = err_prefix(e, "'%s'", r->name);
        goto out;
    }
    if (!(rs->flags & RESOLVE_NO_CACHE) &&
        cache_lookup(rs->cache, key, now, value, expires_at) >= 0) {
        *cached = true;
        goto out;
    }
    rc = run_child(rs, r, value, e);
    if (rc >= 0) {
        /* the TTL starts when the command finished, not when we were asked */
        *expires_at = now_unix() + (r->ttl_ms + 999) / 1000;
        if (cache_store(rs->cache, key, value->data, value->len, *expires_at) < 0)
            cache_drop(rs->cache, key);
    }
out:
    file_lock_release(lock);
    return rc;
}

int resolver_run(struct resolver *rs, const struct recipe *r, struct resolved *ret, struct err *e)
{
    struct buf value;
    int64_t expires_at = 0, now = now_unix();
    bool cached = false;
    int rc = 0;

    buf_init_secret(&value, SECRET_VALUE_MAX);
    if (r->ttl_ms > 0)
        expires_at = now + (r->ttl_ms + 999) / 1000;
    else if (r->ttl_ms == 0)
        expires_at = now; /* resolve again every time */

    switch (r->kind) {
    case RECIPE_ENV:
        rc = run_env(r, &value, e);
        break;
    case RECIPE_LITERAL:
        rc = buf_append_str(&value, r->arg);
        break;
    case RECIPE_FILE:
        rc = run_file(r, &value, e);
        break;
    case RECIPE_KEYCHAIN:
        rc = run_keychain(r, &value, e);
        break;
    default: /* a command or a manager's reference */
        if (r->ttl_ms <= 0 || !rs->cache)
            rc = run_child(rs, r, &value, e);
        else
            rc = run_cached_command(rs, r, now, &value, &expires_at, &cached, e);
        break;
    }
    if (rc >= 0)
        rc = finish(rs, r->name, &value, recipe_kind_str(r->kind), expires_at, ret, e);
    if (rc >= 0)
        ret->cached = cached;
    buf_release(&value);
    return rc;
}

/* A name with neither a recipe nor a variable: the close names when there are (a typo is not
 * to be configured), else how to configure it. -ENOENT. */
static int no_recipe(const struct resolver *rs, const char *name, struct err *e)
{
    struct suggest s;
    struct buf close;
    suggest_init(&s, name);
    for (size_t i = 0; i < store_count(rs->store); i++)
        suggest_add(&s, store_name(rs->store, i));
    buf_init(&close, 4096);
    int r = suggest_append(&s, NULL, &close);
    suggest_release(&s);
    if (r >= 0 && close.len)
        r = err_set(e, -ENOENT, "'%s' has no recipe and no environment variable of that name%s",
                    name, buf_str(&close));
    else
        r = err_set(e, -ENOENT,
                    "'%s' has no recipe and no environment variable of that name: run "
                    "'secrets configure %s'",
                    name, name);
    buf_release(&close);
    return r;
}

int resolver_get(struct resolver *rs, const char *name, struct resolved *ret, struct err *e)
{
    const struct recipe *r = NULL;
    int rc;

    if (!name_is_valid(name))
        return err_set(e, -EINVAL,
                       "'%s' is not a valid secret name: use letters, digits and '_', not "
                       "starting with a digit",
                       name);
    rc = store_get(rs->store, name, &r, e);
    if (rc == -ENOENT) {
        const char *v = (rs->flags & RESOLVE_NO_ENV_FALLBACK) ? NULL : getenv(name);
        if (!v || !*v)
            return no_recipe(rs, name, e);
        struct buf value;
        buf_init_secret(&value, SECRET_VALUE_MAX);
        rc = buf_append_str(&value, v);
        if (rc >= 0)
            rc = finish(rs, name, &value, "environment", 0, ret, e);
        buf_release(&value);
        return rc;
    }
    if (rc < 0)
        return rc;
    rc = resolver_run(rs, r, ret, e);
    if (rc < 0)
        return rc;
    /* the recipe wins; say so when the environment would have answered otherwise */
    ret->env_shadowed =
        getenv(name) != NULL && !(r->kind == RECIPE_ENV && strcmp(r->arg, name) == 0);
    return 0;
}
