/* test_resolve.c - from a name to a value: recipe kinds, fallback, TTL cache, checks, redaction
 *
 * Keychain recipes need a Secret Service; the integration tests cover them. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/path.h"
#include "credkit/redact.h"
#include "credkit/util.h"

#include "cache.h"
#include "recipe.h"
#include "resolve.h"
#include "store.h"
#include "tests.h"

static char runtime_dir[] = "/dev/shm/credkit-unit-resolve-XXXXXX";
static char *agent_dir, *store_file;
static struct store *store;
static struct cache *cache;
static struct redact *redact;

static char *tmp_path(const char *rel)
{
    char *p = path_join(tests_tmpdir(), rel);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static void write_file(const char *path, const char *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK_INT(write(fd, data, len), (long long)len);
    CHECK_INT(fchmod(fd, mode), 0);
    close(fd);
}

/* Lines in a file: how many times a command ran. */
static int count_lines(const char *path)
{
    struct buf b;
    int n = 0;
    buf_init(&b, 1 << 16);
    if (file_read(path, 0, &b, NULL) == 0)
        for (size_t i = 0; i < b.len; i++)
            n += b.data[i] == '\n';
    buf_release(&b);
    return n;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(p);
    return 0;
}

/* The value appears in no text this process prints once resolved. */
static void check_redacted(struct redact *rd, const char *name, const char *value)
{
    struct buf in, out;
    char want[512];
    buf_init(&in, 1 << 21);
    buf_init(&out, 1 << 21);
    CHECK_INT(buf_printf(&in, "before %s after", value), 0);
    CHECK_INT(redact_apply(rd, buf_str(&in), in.len, &out), 0);
    snprintf(want, sizeof(want), "before [REDACTED:%s] after", name);
    CHECK_STR(buf_str(&out), want);
    buf_release(&in);
    buf_release(&out);
}

static struct resolver *new_resolver(struct cache *c, struct redact *rd, unsigned flags)
{
    struct resolver *rs = NULL;
    CHECK_INT(resolver_new(store, c, rd, agent_dir, flags, &rs), 0);
    if (!rs) {
        fprintf(stderr, "cannot create a resolver\n");
        exit(2);
    }
    return rs;
}

/* Resolves name, expecting value from source; checks the redaction registry. */
static void expect_value(struct resolver *rs, const char *name, const char *value,
                         const char *source, struct resolved *out)
{
    struct resolved res = {0};
    struct err e = ERR_INIT;
    int r = resolver_get(rs, name, &res, &e);
    if (r < 0)
        fprintf(stderr, "resolving %s: %d %s\n", name, r, err_msg(&e));
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    CHECK_STR(res.value, value);
    CHECK_INT(res.len, strlen(value));
    CHECK_STR(res.source, source);
    CHECK_STR(e.msg, "");
    check_redacted(redact, name, value);
    if (out)
        *out = res;
    else
        resolved_release(&res);
}

/* Resolves name, expecting failure r with a message containing msg; never the value. */
static void expect_error(struct resolver *rs, const char *name, int want, const char *msg)
{
    struct resolved res = {0};
    struct err e = ERR_INIT;
    int r = resolver_get(rs, name, &res, &e);
    CHECK_INT(r, want);
    CHECK_INT(e.code, want);
    CHECK_CONTAINS(e.msg, msg);
    CHECK(res.value == NULL);
    if (r >= 0)
        resolved_release(&res);
}

/* resolver_run of an ad-hoc command recipe, ttl 0 */
static int run_adhoc(const char *name, const char *cmd, struct resolved *res, struct err *e)
{
    struct recipe *r = NULL;
    struct resolver *rs = new_resolver(cache, redact, 0);
    CHECK_INT(recipe_new(name, RECIPE_COMMAND, cmd, &r), 0);
    r->ttl_ms = 0;
    int rc = resolver_run(rs, r, res, e);
    recipe_free(r);
    resolver_free(rs);
    return rc;
}

static void test_env_and_literal(void)
{
    struct resolver *rs = new_resolver(cache, redact, 0);
    struct resolved res = {0};

    CHECK_INT(setenv("UNIT_SRC_VAR", "env-source-value", 1), 0);
    CHECK_INT(unsetenv("ENVR"), 0);
    expect_value(rs, "ENVR", "env-source-value", "env", &res);
    CHECK_INT(res.expires_at, 0);
    CHECK(!res.cached);
    CHECK(!res.env_shadowed);
    resolved_release(&res);
    CHECK(res.value == NULL);

    CHECK_INT(unsetenv("UNIT_UNSET_VAR"), 0);
    expect_error(rs, "ENV_MISSING", -ENOENT,
                 "'ENV_MISSING': the environment variable 'UNIT_UNSET_VAR' is not set");
    CHECK_INT(setenv("UNIT_UNSET_VAR", "", 1), 0);
    expect_error(rs, "ENV_MISSING", -ENODATA,
                 "'ENV_MISSING': the environment variable 'UNIT_UNSET_VAR' is empty");
    CHECK_INT(unsetenv("UNIT_UNSET_VAR"), 0);

    expect_value(rs, "LIT", "literal-value-123", "literal", &res);
    CHECK_INT(res.expires_at, 0);
    CHECK(!res.cached);
    resolved_release(&res);

    /* a bad entry is an error, even when the environment could answer */
    CHECK_INT(setenv("BROKEN", "env-would-answer", 1), 0);
    expect_error(rs, "BROKEN", -EINVAL, "'~/agent/secrets.json': 'BROKEN': a recipe must be");
    CHECK_INT(unsetenv("BROKEN"), 0);

    /* a recipe that is not in the store */
    struct recipe *r = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(recipe_new("ADHOC", RECIPE_LITERAL, "adhoc-literal-val", &r), 0);
    CHECK_INT(resolver_run(rs, r, &res, &e), 0);
    CHECK_STR(res.value, "adhoc-literal-val");
    check_redacted(redact, "ADHOC", "adhoc-literal-val");
    resolved_release(&res);
    recipe_free(r);
    resolver_free(rs);
}

static void test_file(void)
{
    struct resolver *rs = new_resolver(cache, redact, 0);
    struct resolved res = {0};

    expect_value(rs, "FILEOK", "file-token-abc", "file", &res);
    CHECK_INT(res.expires_at, 0);
    resolved_release(&res);
    expect_value(rs, "FILECRLF", "crlf-token-1", "file", NULL);
    expect_value(rs, "FILENOEOL", "no-newline-token", "file", NULL);
    expect_error(rs, "FILEOPEN", -EACCES, "'FILEOPEN': '~/open.txt' can be read by others");
    expect_error(rs, "FILEOPEN", -EACCES, "chmod 600");
    expect_error(rs, "FILEEMPTY", -ENODATA,
                 "'FILEEMPTY': the first line of '~/empty.txt' is empty");
    expect_error(rs, "FILEZERO", -ENODATA, "'FILEZERO': the first line of '~/zero.txt' is empty");
    expect_error(rs, "FILEMISSING", -ENOENT, "'FILEMISSING': '~/nope.txt' does not exist");
    /* a NUL byte is refused, not silently cut at */
    expect_error(rs, "FILENUL", -EINVAL, "'FILENUL': the value contains a NUL byte");
    expect_error(rs, "FILEBADUTF", -EINVAL, "'FILEBADUTF': the value is not valid UTF-8 text");
    resolver_free(rs);
}

static void test_command(void)
{
    struct resolver *rs = new_resolver(cache, redact, 0);
    struct resolved res = {0};
    struct err e = ERR_INIT;

    int64_t before = now_unix();
    expect_value(rs, "CMD", "cmd-value-xyz", "command", &res);
    int64_t after = now_unix();
    /* ttl 0: expires now, never cached */
    CHECK(res.expires_at >= before && res.expires_at <= after);
    CHECK(!res.cached);
    resolved_release(&res);

    /* exit status, with the first stderr line; stdout and later lines stay out */
    expect_error(rs, "CMDFAIL", -EIO,
                 "'CMDFAIL': the command exited with status 3: bad thing happened");
    CHECK_INT(resolver_get(rs, "CMDFAIL", &res, &e), -EIO);
    CHECK(!strstr(e.msg, "second line"));
    CHECK(!strstr(e.msg, "stdout-secret"));
    err_clear(&e);
    expect_error(rs, "CMDSIG", -EIO, "'CMDSIG': the command was killed by signal 15");

    /* nothing printed */
    CHECK_INT(resolver_get(rs, "CMDEMPTY", &res, &e), -ENODATA);
    CHECK_STR(e.msg, "'CMDEMPTY': the command printed nothing");
    err_clear(&e);
    CHECK_INT(resolver_get(rs, "CMDEMPTYERR", &res, &e), -ENODATA);
    CHECK_STR(e.msg, "'CMDEMPTYERR': the command printed nothing (stderr: only a warning)");
    /* without an error struct: the same code, and no crash */
    CHECK_INT(resolver_get(rs, "CMDEMPTYERR", &res, NULL), -ENODATA);
    CHECK_INT(resolver_get(rs, "CMDFAIL", &res, NULL), -EIO);
    CHECK(res.value == NULL);

    /* timeout */
    int64_t t0 = now_mono_ms();
    expect_error(rs, "CMDSLOW", -ETIMEDOUT,
                 "'CMDSLOW': the command did not finish within 300ms and was killed (raise "
                 "\"timeout\" in the recipe");
    CHECK(now_mono_ms() - t0 < 4000);

    /* values are text: invalid UTF-8 and NUL bytes are refused */
    expect_error(rs, "CMDUTF", -EINVAL, "'CMDUTF': the value is not valid UTF-8 text");
    expect_error(rs, "CMDNUL", -EINVAL, "'CMDNUL': the value contains a NUL byte");
    static const struct {
        const char *cmd, *why;
    } bad_utf8[] = {
        {"printf 'a\\300\\257b'", "overlong"},
        {"printf 'a\\355\\240\\200b'", "surrogate"},
        {"printf 'ab\\342\\202'", "truncated at the end"},
        {"printf 'a\\342\\202b'", "truncated in the middle"},
        {"printf 'a\\364\\220\\200\\200b'", "above U+10FFFF"},
        {"printf 'a\\200b'", "lone continuation byte"},
        {"printf 'a\\370\\210\\200\\200\\200b'", "five-byte form"},
    };
    for (size_t i = 0; i < sizeof(bad_utf8) / sizeof(bad_utf8[0]); i++) {
        err_clear(&e);
        int r = run_adhoc("ADHOC_UTF", bad_utf8[i].cmd, &res, &e);
        if (r != -EINVAL)
            fprintf(stderr, "invalid UTF-8 (%s) accepted: %d\n", bad_utf8[i].why, r);
        CHECK_INT(r, -EINVAL);
        CHECK_CONTAINS(e.msg, "not valid UTF-8");
    }
    err_clear(&e);
    CHECK_INT(run_adhoc("ADHOC_GOOD",
                        "printf 'h\\303\\251llo \\342\\234\\223 \\360\\237\\230\\200'", &res, &e),
              0);
    CHECK_STR(res.value, "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80");
    CHECK_STR(res.source, "command");
    check_redacted(redact, "ADHOC_GOOD", "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80");
    resolved_release(&res);

    /* bounded output */
    err_clear(&e);
    CHECK_INT(run_adhoc("ADHOC_BIG", "head -c 1100000 /dev/zero | tr '\\0' a", &res, &e), -E2BIG);
    CHECK_CONTAINS(e.msg, "'ADHOC_BIG': the command printed more than 1048576 bytes");
    resolver_free(rs);
}

static void test_environment_fallback(void)
{
    struct resolver *rs = new_resolver(cache, redact, 0);
    struct resolver *strict = new_resolver(cache, redact, RESOLVE_NO_ENV_FALLBACK);
    struct resolved res = {0};

    CHECK_INT(setenv("ONLY_ENV", "env-only-value", 1), 0);
    expect_value(rs, "ONLY_ENV", "env-only-value", "environment", &res);
    CHECK_INT(res.expires_at, 0);
    CHECK(!res.cached);
    CHECK(!res.env_shadowed);
    resolved_release(&res);
    expect_error(strict, "ONLY_ENV", -ENOENT,
                 "'ONLY_ENV' has no recipe and no environment variable of that name: run "
                 "'secrets configure ONLY_ENV'");
    /* the recipe still comes first for the strict resolver */
    expect_value(strict, "LIT", "literal-value-123", "literal", NULL);

    CHECK_INT(setenv("ONLY_ENV", "", 1), 0);
    expect_error(rs, "ONLY_ENV", -ENOENT, "run 'secrets configure ONLY_ENV'");
    CHECK_INT(unsetenv("ONLY_ENV"), 0);
    CHECK_INT(unsetenv("NOTHING_AT_ALL"), 0);
    expect_error(rs, "NOTHING_AT_ALL", -ENOENT,
                 "'NOTHING_AT_ALL' has no recipe and no environment variable of that name: run "
                 "'secrets configure NOTHING_AT_ALL'");

    /* names are checked before anything is looked up */
    CHECK_INT(setenv("9LIVES", "nine-lives-value", 1), 0);
    expect_error(rs, "9LIVES", -EINVAL, "'9LIVES' is not a valid secret name");
    CHECK_INT(unsetenv("9LIVES"), 0);
    expect_error(rs, "A-B", -EINVAL, "'A-B' is not a valid secret name");
    expect_error(rs, "", -EINVAL, "is not a valid secret name");
    resolver_free(strict);
    resolver_free(rs);
}

static void test_env_shadowed(void)
{
    struct resolver *rs = new_resolver(cache, redact, 0);
    struct resolved res = {0};

    CHECK_INT(setenv("SHADOW", "from-env-shadow", 1), 0);
    expect_value(rs, "SHADOW", "shadow-literal-val", "literal", &res);
    CHECK(res.env_shadowed);
    resolved_release(&res);
    CHECK_INT(unsetenv("SHADOW"), 0);
    expect_value(rs, "SHADOW", "shadow-literal-val", "literal", &res);
    CHECK(!res.env_shadowed);
    resolved_release(&res);

    /* an env recipe naming itself is the environment variable: nothing is shadowed */
    CHECK_INT(setenv("UNIT_SELF", "self-env-value", 1), 0);
    expect_value(rs, "UNIT_SELF", "self-env-value", "env", &res);
    CHECK(!res.env_shadowed);
    resolved_release(&res);
    CHECK_INT(setenv("UNIT_BARE", "bare-env-value", 1), 0);
    expect_value(rs, "UNIT_BARE", "bare-env-value", "env", &res);
    CHECK(!res.env_shadowed);
    resolved_release(&res);

    /* an env recipe reading another variable shadows one of its own name */
    CHECK_INT(setenv("UNIT_SRC_VAR", "env-source-value", 1), 0);
    CHECK_INT(setenv("ENVR", "ignored-env-value", 1), 0);
    expect_value(rs, "ENVR", "env-source-value", "env", &res);
    CHECK(res.env_shadowed);
    resolved_release(&res);
    CHECK_INT(unsetenv("ENVR"), 0);
    resolver_free(rs);
}

static char *runs_ttl, *runs_zero;

/* The CMDTTL scenario: one recipe's cache entry seen through resolvers with and without the
 * cache, the command's run count growing step by step; each step below starts where the last
 * one left it. */
struct ttl_case {
    struct resolver *rs, *nocache, *nullcache;
    const struct recipe *r;
    char key[65];
    char *entry;
    struct resolved a; /* the first answer: later expiries are measured against it */
    int64_t refreshed; /* the expiry RESOLVE_NO_CACHE wrote */
};

static void ttl_first_then_cached(struct ttl_case *t)
{
    struct resolved b = {0};

    /* first: runs, expires one TTL after it ran */
    int64_t before = now_unix();
    expect_value(t->rs, "CMDTTL", "ttl-value-777", "command", &t->a);
    int64_t after = now_unix();
    CHECK(!t->a.cached);
    CHECK(t->a.expires_at >= before + 3600 && t->a.expires_at <= after + 3600);
    CHECK_INT(count_lines(runs_ttl), 1);
    CHECK(exists(t->entry));

    /* second: from the cache, same value and expiry, no run */
    expect_value(t->rs, "CMDTTL", "ttl-value-777", "command", &b);
    CHECK(b.cached);
    CHECK_INT(b.expires_at, t->a.expires_at);
    CHECK_INT(count_lines(runs_ttl), 1);
    resolved_release(&b);
}

/* served from the cache, the value is still registered for redaction */
static void ttl_cached_is_redacted(void)
{
    struct resolved b = {0};
    struct err e = ERR_INIT;

    struct redact *fresh = redact_new();
    CHECK(fresh != NULL);
    struct resolver *rs2 = new_resolver(cache, fresh, 0);
    CHECK_INT(resolver_get(rs2, "CMDTTL", &b, &e), 0);
    CHECK(b.cached);
    check_redacted(fresh, "CMDTTL", "ttl-value-777");
    resolved_release(&b);
    resolver_free(rs2);
    redact_free(fresh);
}

/* RESOLVE_NO_CACHE runs again (and refreshes the entry) */
static void ttl_no_cache_flag(struct ttl_case *t)
{
    struct resolved b = {0};

    expect_value(t->nocache, "CMDTTL", "ttl-value-777", "command", &b);
    CHECK(!b.cached);
    CHECK_INT(count_lines(runs_ttl), 2);
    CHECK(b.expires_at >= t->a.expires_at);
    t->refreshed = b.expires_at;
    resolved_release(&b);
    expect_value(t->rs, "CMDTTL", "ttl-value-777", "command", &b);
    CHECK(b.cached);
    CHECK_INT(b.expires_at, t->refreshed);
    CHECK_INT(count_lines(runs_ttl), 2);
    resolved_release(&b);
}

/* no cache at all: runs every time, still with its expiry */
static void ttl_without_cache(struct ttl_case *t)
{
    struct resolved b = {0};

    int64_t before = now_unix();
    expect_value(t->nullcache, "CMDTTL", "ttl-value-777", "command", &b);
    int64_t after = now_unix();
    CHECK(!b.cached);
    CHECK(b.expires_at >= before + 3600 && b.expires_at <= after + 3600);
    CHECK_INT(count_lines(runs_ttl), 3);
    resolved_release(&b);
}

/* an expired entry is not served */
static void ttl_expired_entry(struct ttl_case *t)
{
    struct resolved b = {0};
    struct stat st;

    CHECK_INT(stat(t->entry, &st), 0);
    CHECK_INT(st.st_mode & 07777, 0600);
    CHECK_INT(st.st_mtime, t->refreshed);
    CHECK_INT(cache_store(cache, t->key, "stale-value", 11, now_unix() - 1), 0);
    expect_value(t->rs, "CMDTTL", "ttl-value-777", "command", &b);
    CHECK(!b.cached);
    CHECK_INT(count_lines(runs_ttl), 4);
    resolved_release(&b);
}

/* a changed recipe (another TTL) never gets the old value */
static void ttl_changed_recipe(struct ttl_case *t)
{
    struct resolved b = {0};
    struct err e = ERR_INIT;
    struct recipe *changed = NULL;

    CHECK_INT(recipe_new("CMDTTL", RECIPE_COMMAND, t->r->arg, &changed), 0);
    changed->ttl_ms = 2 * 3600 * 1000;
    CHECK_INT(resolver_run(t->rs, changed, &b, &e), 0);
    CHECK(!b.cached);
    CHECK_INT(count_lines(runs_ttl), 5);
    resolved_release(&b);
    /* a part-second TTL is rounded up */
    changed->ttl_ms = 1500;
    int64_t before = now_unix();
    CHECK_INT(resolver_run(t->rs, changed, &b, &e), 0);
    int64_t after = now_unix();
    CHECK(b.expires_at >= before + 2 && b.expires_at <= after + 2);
    resolved_release(&b);
    recipe_free(changed);
}

static void test_ttl_cache(void)
{
    struct ttl_case t = {
        .rs = new_resolver(cache, redact, 0),
        .nocache = new_resolver(cache, redact, RESOLVE_NO_CACHE),
        .nullcache = new_resolver(NULL, redact, 0),
    };
    struct err e = ERR_INIT;

    CHECK(cache != NULL);
    CHECK_INT(store_get(store, "CMDTTL", &t.r, &e), 0);
    if (!t.r || !cache)
        goto out;
    recipe_fingerprint(t.r, agent_dir, t.key);
    CHECK_INT(strlen(t.key), 64);
    CHECK(asprintf(&t.entry, "%s/credkit-secrets/%s", runtime_dir, t.key) > 0);
    CHECK(!exists(t.entry));

    ttl_first_then_cached(&t);
    ttl_cached_is_redacted();
    ttl_no_cache_flag(&t);
    ttl_without_cache(&t);
    ttl_expired_entry(&t);
    ttl_changed_recipe(&t);
out:
    resolved_release(&t.a);
    free(t.entry);
    resolver_free(t.nullcache);
    resolver_free(t.nocache);
    resolver_free(t.rs);
}

/* ttl 0: runs every time, expires now, nothing cached */
static void test_ttl_zero(void)
{
    struct resolver *rs = new_resolver(cache, redact, 0);
    struct resolved b = {0};
    const struct recipe *r = NULL;
    struct err e = ERR_INIT;

    CHECK_INT(store_get(store, "CMDTTL0", &r, &e), 0);
    if (r) {
        char key0[65], *entry0 = NULL;
        recipe_fingerprint(r, agent_dir, key0);
        CHECK(asprintf(&entry0, "%s/credkit-secrets/%s", runtime_dir, key0) > 0);
        for (int i = 1; i <= 2; i++) {
            int64_t before = now_unix();
            expect_value(rs, "CMDTTL0", "zero-ttl-value", "command", &b);
            int64_t after = now_unix();
            CHECK(!b.cached);
            CHECK(b.expires_at >= before && b.expires_at <= after);
            CHECK_INT(count_lines(runs_zero), i);
            resolved_release(&b);
        }
        CHECK(!exists(entry0));
        free(entry0);
    }
    resolver_free(rs);
}

static void add(struct json_object *root, const char *name, struct json_object *v)
{
    CHECK(v != NULL);
    CHECK_INT(json_object_object_add(root, name, v), 0);
}

static void add_str(struct json_object *root, const char *name, const char *recipe)
{
    add(root, name, json_object_new_string(recipe));
}

static void add_file(struct json_object *root, const char *name, const char *rel, const char *data,
                     size_t len, mode_t mode)
{
    char *p = tmp_path(rel), *recipe = NULL;
    if (data)
        write_file(p, data, len, mode);
    CHECK(asprintf(&recipe, "file:%s", p) > 0);
    add_str(root, name, recipe);
    free(recipe);
    free(p);
}

static void add_cmd(struct json_object *root, const char *name, const char *cmd, const char *ttl,
                    const char *timeout)
{
    struct json_object *o = json_object_new_object();
    add(o, "command", json_object_new_string(cmd));
    if (ttl)
        add(o, "ttl", json_object_new_string(ttl));
    if (timeout)
        add(o, "timeout", json_object_new_string(timeout));
    add(root, name, o);
}

static void setup_store(void)
{
    struct json_object *root = json_object_new_object();
    struct err e = ERR_INIT;
    char *cmd = NULL;

    add_str(root, "$schema", "https://example.com/secrets.schema.json");
    add_str(root, "ENVR", "env:UNIT_SRC_VAR");
    add_str(root, "ENV_MISSING", "env:UNIT_UNSET_VAR");
    add_str(root, "UNIT_SELF", "env:UNIT_SELF");
    add_str(root, "UNIT_BARE", "UNIT_BARE");
    add_str(root, "LIT", "literal:literal-value-123");
    add_str(root, "SHADOW", "literal:shadow-literal-val");
    add(root, "BROKEN", json_object_new_int(42));

    static const char ok[] = "  file-token-abc \t\nsecond line\n";
    static const char nul[] = "abc\0def\n";
    add_file(root, "FILEOK", "ok.txt", ok, sizeof(ok) - 1, 0600);
    add_file(root, "FILECRLF", "crlf.txt", "crlf-token-1\r\nx\r\n", 16, 0600);
    add_file(root, "FILENOEOL", "noeol.txt", "no-newline-token", 16, 0400);
    add_file(root, "FILEOPEN", "open.txt", "open-token\n", 11, 0644);
    add_file(root, "FILEEMPTY", "empty.txt", " \t \nsecond line\n", 16, 0600);
    add_file(root, "FILEZERO", "zero.txt", "", 0, 0600);
    add_file(root, "FILEMISSING", "nope.txt", NULL, 0, 0);
    add_file(root, "FILENUL", "nul.txt", nul, sizeof(nul) - 1, 0600);
    add_file(root, "FILEBADUTF", "badutf.txt", "\xff\xfe-token\n", 9, 0600);

    add_cmd(root, "CMD", "printf '  cmd-value-xyz \\n'", "0", NULL);
    add_cmd(root, "CMDFAIL",
            "echo '  bad thing happened' >&2; echo 'second line' >&2; echo stdout-secret; exit 3",
            "0", NULL);
    add_cmd(root, "CMDSIG", "kill -TERM $$", "0", NULL);
    add_cmd(root, "CMDEMPTY", "true", "0", NULL);
    add_cmd(root, "CMDEMPTYERR", "echo '  only a warning' >&2; printf ' \\n\\t'", "0", NULL);
    add_cmd(root, "CMDSLOW", "sleep 5", "0", "300ms");
    add_cmd(root, "CMDUTF", "printf 'ab\\377cd'", "0", NULL);
    add_cmd(root, "CMDNUL", "printf 'ab\\000cd'", "0", NULL);
    CHECK(asprintf(&cmd, "echo run >> '%s'; echo ttl-value-777", runs_ttl) > 0);
    add_cmd(root, "CMDTTL", cmd, "1h", NULL);
    free(cmd);
    CHECK(asprintf(&cmd, "echo run >> '%s'; echo zero-ttl-value", runs_zero) > 0);
    add_cmd(root, "CMDTTL0", cmd, "0", NULL);
    free(cmd);

    CHECK_INT(dir_ensure(agent_dir, 0700, &e), 0);
    CHECK_INT(json_write_file(store_file, root, 0600, &e), 0);
    json_object_put(root);
    CHECK_INT(store_load(store_file, &store, &e), 0);
    if (!store) {
        fprintf(stderr, "cannot load the store: %s\n", err_msg(&e));
        exit(2);
    }
}

int main(void)
{
    /* never the real home; the cache on tmpfs */
    if (!mkdtemp(runtime_dir)) {
        fprintf(stderr, "mkdtemp %s: %s\n", runtime_dir, strerror(errno));
        return 2;
    }
    agent_dir = tmp_path("agent");
    store_file = tmp_path("agent/secrets.json");
    runs_ttl = tmp_path("runs-ttl");
    runs_zero = tmp_path("runs-zero");
    if (setenv("HOME", tests_tmpdir(), 1) < 0 || setenv("PI_CODING_AGENT_DIR", agent_dir, 1) < 0 ||
        setenv("XDG_RUNTIME_DIR", runtime_dir, 1) < 0)
        return 2;
    setup_store();
    redact = redact_new();
    if (!redact || cache_open(&cache) < 0)
        return 2;
    if (!cache)
        fprintf(stderr, "no cache in %s\n", runtime_dir);

    int r = TESTS_RUN(test_env_and_literal, test_file, test_command, test_environment_fallback,
                      test_env_shadowed, test_ttl_cache, test_ttl_zero);

    cache_free(cache);
    redact_free(redact);
    store_free(store);
    free(agent_dir);
    free(store_file);
    free(runs_ttl);
    free(runs_zero);
    (void)nftw(runtime_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return r;
}
