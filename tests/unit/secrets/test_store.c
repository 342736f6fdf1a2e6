/* test_store.c - secrets.json: load, look up, change, save, lock */
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/path.h"

#include "recipe.h"
#include "store.h"
#include "tests.h"

/* $HOME is the test directory, so messages show "~/<rel>" */
static char *tmp_path(const char *rel)
{
    char *p = path_join(tests_tmpdir(), rel);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    char *dir = path_dirname(path);
    CHECK_INT(dir_ensure(dir, 0700, NULL), 0);
    free(dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK_INT(write(fd, text, strlen(text)), (long long)strlen(text));
    CHECK_INT(fchmod(fd, mode), 0);
    close(fd);
}

/* Whole file as a string (malloc'd), NULL when unreadable. */
static char *slurp(const char *path)
{
    struct buf b;
    buf_init(&b, 1 << 20);
    if (file_read(path, 0, &b, NULL) < 0) {
        buf_release(&b);
        return NULL;
    }
    return buf_detach(&b);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return (mode_t)-1;
    return st.st_mode & 07777;
}

static const char SAMPLE[] =
    "{\n"
    "  \"$schema\": \"https://example.com/secrets.schema.json\",\n"
    "  \"ZED\": \"!echo z\",\n"
    "  \"ALPHA\": \"env:ALPHA_SRC\",\n"
    "  \"BAD\": 42,\n"
    "  \"MID\": {\"literal\": \"hello-literal\", \"description\": \"d\"},\n"
    "  \"1NUM\": \"literal:x\",\n"
    "  \"$comment\": {\"keep\": [1, 2, {\"deep\": true}]}\n"
    "}\n";

static void test_missing_is_empty(void)
{
    char *path = tmp_path("missing/agent/secrets.json");
    struct store *s = NULL;
    struct err e = ERR_INIT;
    const struct recipe *r = NULL;
    CHECK_INT(store_load(path, &s, &e), 0);
    CHECK(s != NULL);
    if (!s)
        goto out;
    CHECK_INT(store_count(s), 0);
    CHECK(store_name(s, 0) == NULL);
    CHECK_STR(store_path(s), path);
    CHECK_INT(store_get(s, "ANY", &r, &e), -ENOENT);
    CHECK(r == NULL);
    CHECK_STR(e.msg, ""); /* the missing file is not an error */
    /* loading creates nothing */
    CHECK(access(path, F_OK) < 0);
    store_free(s);
out:
    free(path);
}

static void test_entries(void)
{
    char *path = tmp_path("entries/secrets.json");
    struct store *s = NULL;
    struct err e = ERR_INIT;
    const struct recipe *r = NULL;
    write_file(path, SAMPLE, 0600);
    CHECK_INT(store_load(path, &s, &e), 0);
    if (!s)
        goto out;
    /* file order, "$" keys left out, bad entries kept as names */
    CHECK_INT(store_count(s), 5);
    CHECK_STR(store_name(s, 0), "ZED");
    CHECK_STR(store_name(s, 1), "ALPHA");
    CHECK_STR(store_name(s, 2), "BAD");
    CHECK_STR(store_name(s, 3), "MID");
    CHECK_STR(store_name(s, 4), "1NUM");
    CHECK(store_name(s, 5) == NULL);

    CHECK_INT(store_get(s, "ZED", &r, &e), 0);
    if (r) {
        CHECK_INT(r->kind, RECIPE_COMMAND);
        CHECK_STR(r->arg, "echo z");
        CHECK_STR(r->name, "ZED");
    }
    r = NULL;
    CHECK_INT(store_get(s, "MID", &r, &e), 0);
    if (r) {
        CHECK_INT(r->kind, RECIPE_LITERAL);
        CHECK_STR(r->arg, "hello-literal");
        CHECK_STR(r->description, "d");
    }

    /* a bad entry: its own message, after the file it is in; the others still work */
    r = NULL;
    CHECK_INT(store_get(s, "BAD", &r, &e), -EINVAL);
    CHECK(r == NULL);
    CHECK_INT(e.code, -EINVAL);
    CHECK(strncmp(e.msg, "'~/entries/secrets.json': 'BAD': ", 33) == 0);
    CHECK_CONTAINS(e.msg, "a recipe must be a string or an object, not a number");
    err_clear(&e);
    CHECK_INT(store_get(s, "1NUM", &r, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "'~/entries/secrets.json': '1NUM' is not a valid secret name");
    CHECK(r == NULL);

    err_clear(&e);
    CHECK_INT(store_get(s, "ABSENT", &r, &e), -ENOENT);
    CHECK_INT(store_get(s, "$schema", &r, &e), -ENOENT);
    CHECK_INT(store_get(s, "$comment", &r, &e), -ENOENT);
    CHECK(r == NULL);
    CHECK_INT(store_get(s, "ALPHA", &r, &e), 0);
    CHECK(r && r->kind == RECIPE_ENV && strcmp(r->arg, "ALPHA_SRC") == 0);
    store_free(s);
out:
    free(path);
}

static void test_set_remove(void)
{
    char *path = tmp_path("setremove/secrets.json");
    struct store *s = NULL;
    struct err e = ERR_INIT;
    const struct recipe *got = NULL;
    struct recipe *r = NULL;
    write_file(path, SAMPLE, 0600);
    CHECK_INT(store_load(path, &s, &e), 0);
    if (!s)
        goto out;

    /* replace in place: the order stays */
    CHECK_INT(recipe_new("ALPHA", RECIPE_LITERAL, "replaced-value", &r), 0);
    CHECK_INT(store_set(s, r), 0);
    recipe_free(r);
    r = NULL;
    CHECK_INT(store_count(s), 5);
    CHECK_STR(store_name(s, 1), "ALPHA");
    CHECK_INT(store_get(s, "ALPHA", &got, &e), 0);
    CHECK(got && got->kind == RECIPE_LITERAL && strcmp(got->arg, "replaced-value") == 0);

    /* a bad entry can be replaced by a good one */
    CHECK_INT(recipe_new("BAD", RECIPE_ENV, "GOOD_NOW", &r), 0);
    CHECK_INT(store_set(s, r), 0);
    recipe_free(r);
    r = NULL;
    CHECK_STR(store_name(s, 2), "BAD");
    got = NULL;
    CHECK_INT(store_get(s, "BAD", &got, &e), 0);
    CHECK(got && got->kind == RECIPE_ENV && strcmp(got->arg, "GOOD_NOW") == 0);

    /* a new entry goes last */
    CHECK_INT(recipe_new("NEWONE", RECIPE_COMMAND, "gh auth token", &r), 0);
    r->ttl_ms = 3600 * 1000;
    CHECK_INT(store_set(s, r), 0);
    recipe_free(r);
    r = NULL;
    CHECK_INT(store_count(s), 6);
    CHECK_STR(store_name(s, 5), "NEWONE");
    got = NULL;
    CHECK_INT(store_get(s, "NEWONE", &got, &e), 0);
    CHECK(got && got->kind == RECIPE_COMMAND && got->ttl_ms == 3600 * 1000);

    /* remove */
    CHECK_INT(store_remove(s, "ZED"), 0);
    CHECK_INT(store_count(s), 5);
    CHECK_STR(store_name(s, 0), "ALPHA");
    CHECK_INT(store_get(s, "ZED", &got, &e), -ENOENT);
    CHECK_INT(store_remove(s, "ZED"), -ENOENT);
    CHECK_INT(store_remove(s, "NEVER"), -ENOENT);
    CHECK_INT(store_count(s), 5);

    /* nothing was written: the file is as it was */
    char *text = slurp(path);
    CHECK_STR(text, SAMPLE);
    free(text);
    store_free(s);
out:
    free(path);
}

/* Adds ZED and ADDED to s, whose agent directory was removed, and saves it twice: once creating
 * the directory, once tightening it. */
static void roundtrip_edit_and_save(struct store *s, const char *dir, const char *path,
                                    struct err *e)
{
    struct recipe *r = NULL;

    /* the agent directory goes away under the loaded store: save creates it again */
    CHECK_INT(unlink(path), 0);
    CHECK_INT(rmdir(dir), 0);
    CHECK_INT(recipe_new("ZED", RECIPE_FILE, "/etc/zed-token", &r), 0);
    CHECK_INT(store_set(s, r), 0);
    recipe_free(r);
    r = NULL;
    CHECK_INT(recipe_new("ADDED", RECIPE_KEYCHAIN, "work", &r), 0);
    CHECK_INT(store_set(s, r), 0);
    recipe_free(r);
    r = NULL;
    mode_t old_umask = umask(0);
    CHECK_INT(store_save(s, e), 0);
    umask(old_umask);
    CHECK_STR(e->msg, "");
    CHECK_INT(mode_of(dir), 0700);
    CHECK_INT(mode_of(path), 0600);
    /* an existing directory that is too open is tightened; the umask does not matter */
    CHECK_INT(chmod(dir, 0755), 0);
    CHECK_INT(chmod(path, 0600), 0);
    old_umask = umask(077);
    CHECK_INT(store_save(s, e), 0);
    umask(old_umask);
    CHECK_INT(mode_of(dir), 0700);
    CHECK_INT(mode_of(path), 0600);
}

/* unknown keys and bad entries come back unchanged; the changes are there. False when the
 * saved file could not be read. */
static bool roundtrip_check_json(struct json_object *before, const char *path, struct err *e)
{
    struct json_object *after = NULL, *v = NULL;

    CHECK_INT(json_read_file(path, 1 << 20, JSON_READ_SECRET, &after, e), 0);
    if (!after || !before) {
        json_object_put(after);
        return false;
    }
    CHECK_INT(json_object_object_length(after), 8);
    static const char *const same[] = {"$schema", "ALPHA", "BAD", "MID", "1NUM", "$comment"};
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        struct json_object *a = NULL, *b = NULL;
        CHECK(json_object_object_get_ex(before, same[i], &b));
        CHECK(json_object_object_get_ex(after, same[i], &a));
        if (!json_object_equal(a, b)) {
            fprintf(stderr, "key %s changed\n", same[i]);
            CHECK(0);
        }
    }
    CHECK(json_object_object_get_ex(after, "ZED", &v));
    CHECK_STR(json_object_get_string(v), "file:/etc/zed-token");
    CHECK(json_object_object_get_ex(after, "ADDED", &v));
    CHECK_STR(json_object_get_string(v), "keychain:work");
    json_object_put(after);
    return true;
}

/* and in the same order: re-load and compare names; no temporary file left beside it */
static void roundtrip_check_reload(const char *path, struct err *e)
{
    struct store *s2 = NULL;
    const struct recipe *got = NULL;

    CHECK_INT(store_load(path, &s2, e), 0);
    if (!s2)
        return;
    static const char *const order[] = {"ZED", "ALPHA", "BAD", "MID", "1NUM", "ADDED"};
    CHECK_INT(store_count(s2), 6);
    for (size_t i = 0; i < 6; i++)
        CHECK_STR(store_name(s2, i), order[i]);
    char *text = slurp(path);
    CHECK(text && strstr(text, "$schema") && strstr(text, "$comment"));
    CHECK(text && strstr(text, "$schema") < strstr(text, "\"ZED\"") &&
          strstr(text, "\"1NUM\"") < strstr(text, "$comment") &&
          strstr(text, "$comment") < strstr(text, "\"ADDED\""));
    free(text);
    CHECK_INT(store_get(s2, "BAD", &got, e), -EINVAL);
    CHECK_CONTAINS(e->msg, "not a number");
    got = NULL;
    CHECK_INT(store_get(s2, "ZED", &got, e), 0);
    CHECK(got && got->kind == RECIPE_FILE && strcmp(got->arg, "/etc/zed-token") == 0);

    CHECK_INT(access(path, F_OK), 0);
    char *lock = NULL;
    CHECK(asprintf(&lock, "%s.lock", path) > 0);
    CHECK(access(lock, F_OK) < 0);
    free(lock);
    store_free(s2);
}

static void test_save_roundtrip(void)
{
    char *src = tmp_path("saveroundtrip/src/secrets.json");
    char *dir = tmp_path("saveroundtrip/new/agent");
    char *path = tmp_path("saveroundtrip/new/agent/secrets.json");
    struct store *s = NULL;
    struct err e = ERR_INIT;
    struct json_object *before = NULL;

    write_file(src, SAMPLE, 0600);
    CHECK_INT(json_read_file(src, 1 << 20, 0, &before, &e), 0);
    write_file(path, SAMPLE, 0600);
    CHECK_INT(store_load(path, &s, &e), 0);
    if (!s)
        goto out;
    /* one error struct throughout, as store_save() must leave it empty */
    roundtrip_edit_and_save(s, dir, path, &e);
    if (roundtrip_check_json(before, path, &e))
        roundtrip_check_reload(path, &e);
out:
    json_object_put(before);
    store_free(s);
    free(src);
    free(dir);
    free(path);
}

static void test_malformed(void)
{
    static const char text[] = "{\n  \"A\": \"env:X\",\n  \"B\" \"env:Y\"\n}\n";
    char *path = tmp_path("malformed/secrets.json");
    struct store *s = NULL;
    struct err e = ERR_INIT;
    struct stat st1, st2;
    write_file(path, text, 0600);
    CHECK_INT(stat(path, &st1), 0);
    CHECK_INT(store_load(path, &s, &e), -EBADMSG);
    CHECK(s == NULL);
    CHECK_INT(e.code, -EBADMSG);
    CHECK_CONTAINS(e.msg, "'~/malformed/secrets.json'");
    CHECK_CONTAINS(e.msg, "line 3");
    /* untouched */
    char *now = slurp(path);
    CHECK_STR(now, text);
    free(now);
    CHECK_INT(stat(path, &st2), 0);
    CHECK_INT(st1.st_ino, st2.st_ino);
    CHECK_INT(st1.st_mtim.tv_sec, st2.st_mtim.tv_sec);
    CHECK_INT(st1.st_mtim.tv_nsec, st2.st_mtim.tv_nsec);
    CHECK_INT(st2.st_mode & 07777, 0600);

    /* truncated, empty, trailing junk: all refused */
    static const char *const bad[] = {"{\"A\": \"env:X\"", "{} {}", "{\"A\": }"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err_clear(&e);
        write_file(path, bad[i], 0600);
        CHECK_INT(store_load(path, &s, &e), -EBADMSG);
        CHECK(s == NULL);
        CHECK_CONTAINS(e.msg, "'~/malformed/secrets.json': line 1");
    }
    err_clear(&e);
    write_file(path, "", 0600); /* an empty file is not an empty store either */
    CHECK_INT(store_load(path, &s, &e), -EBADMSG);
    CHECK(s == NULL);
    CHECK_CONTAINS(e.msg, "'~/malformed/secrets.json': empty document");
    free(path);
}

static void test_not_an_object(void)
{
    char *path = tmp_path("array/secrets.json");
    struct store *s = NULL;
    struct err e = ERR_INIT;
    write_file(path, "[{\"A\": \"env:X\"}]\n", 0600);
    CHECK_INT(store_load(path, &s, &e), -EBADMSG);
    CHECK(s == NULL);
    CHECK_CONTAINS(e.msg, "'~/array/secrets.json'");
    CHECK_CONTAINS(e.msg, "the top level must be an object mapping names to recipes, not an array");
    err_clear(&e);
    write_file(path, "\"env:X\"\n", 0600);
    CHECK_INT(store_load(path, &s, &e), -EBADMSG);
    CHECK_CONTAINS(e.msg, "not a string");
    free(path);
}

static void test_open_mode_refused(void)
{
    char *path = tmp_path("openmode/secrets.json");
    struct store *s = NULL;
    struct err e = ERR_INIT;
    write_file(path, "{\"A\": \"literal:value\"}\n", 0644);
    CHECK_INT(store_load(path, &s, &e), -EACCES);
    CHECK(s == NULL);
    CHECK_CONTAINS(e.msg, "'~/openmode/secrets.json'");
    CHECK_CONTAINS(e.msg, "can be read by others");
    CHECK_CONTAINS(e.msg, "chmod 600");
    CHECK_INT(mode_of(path), 0644); /* advice, not a silent chmod */
    err_clear(&e);
    CHECK_INT(chmod(path, 0620), 0);
    CHECK_INT(store_load(path, &s, &e), -EACCES);
    CHECK_CONTAINS(e.msg, "chmod 600");
    CHECK_INT(chmod(path, 0600), 0);
    CHECK_INT(store_load(path, &s, &e), 0);
    CHECK(s != NULL);
    CHECK_INT(store_count(s), 1);
    store_free(s);
    free(path);
}

static void test_lock(void)
{
    char *dir = tmp_path("lock/agent");
    char *path = tmp_path("lock/agent/secrets.json");
    char *lockpath = tmp_path("lock/agent/secrets.json.lock");
    struct file_lock *l = NULL, *other = NULL;
    struct err e = ERR_INIT;
    struct stat st;

    mode_t old_umask = umask(0);
    CHECK_INT(store_lock(path, &l, &e), 0);
    umask(old_umask);
    CHECK(l != NULL);
    CHECK_INT(mode_of(dir), 0700); /* the missing agent dir was created private */
    CHECK_INT(lstat(lockpath, &st), 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK_INT(st.st_mode & 07777, 0600);
    CHECK(access(path, F_OK) < 0); /* locking does not create the store */

    /* really held: another open of the same lock file cannot take it */
    CHECK_INT(file_lock_acquire(lockpath, 50, &other, &e), -ETIMEDOUT);
    CHECK(other == NULL);
    CHECK_CONTAINS(e.msg, "secrets.json.lock");
    file_lock_release(l);
    l = NULL;

    /* released: it can be taken again, twice over */
    err_clear(&e);
    CHECK_INT(file_lock_acquire(lockpath, 50, &other, &e), 0);
    file_lock_release(other);
    CHECK_INT(store_lock(path, &l, &e), 0);
    CHECK(l != NULL);
    file_lock_release(l);
    l = NULL;
    CHECK_INT(store_lock(path, &l, &e), 0);
    CHECK(l != NULL);
    file_lock_release(l);
    CHECK_INT(lstat(lockpath, &st), 0); /* the lock file stays */

    /* a directory in the way of the agent dir is a clear error */
    char *blocked = tmp_path("lockblocked");
    write_file(blocked, "x", 0600);
    char *bpath = tmp_path("lockblocked/secrets.json");
    l = NULL;
    err_clear(&e);
    CHECK_INT(store_lock(bpath, &l, &e), -ENOTDIR);
    CHECK(l == NULL);
    CHECK_CONTAINS(e.msg, "not a directory");
    free(blocked);
    free(bpath);
    free(dir);
    free(path);
    free(lockpath);
}

/* A name given twice does not resolve (the lines are named), nor does a recipe with a key given
 * twice; the other names work; the store knows it must not be written. */
static void test_duplicates(void)
{
    char *path = tmp_path("dups/secrets.json");
    struct store *s = NULL;
    struct err e = ERR_INIT;
    const struct recipe *r = NULL;
    write_file(path,
               "{\n"
               "  \"TOKEN\": \"env:ONE\",\n"
               "  \"OTHER\": \"env:OTHER_SRC\",\n"
               "  \"TOKEN\": \"env:TWO\",\n"
               "  \"CMD\": {\"command\": \"echo a\",\n"
               "          \"command\": \"echo b\"}\n"
               "}\n",
               0600);
    CHECK_INT(store_load(path, &s, &e), 0);
    if (!s)
        goto out;
    CHECK_INT(store_get(s, "TOKEN", &r, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "'TOKEN' is given more than once (lines 2 and 4)");
    err_clear(&e);
    CHECK_INT(store_get(s, "CMD", &r, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "'CMD': \"command\" is given twice in its recipe (lines 5 and 6)");
    CHECK_INT(store_get(s, "OTHER", &r, &e), 0);
    CHECK_STR(r->arg, "OTHER_SRC");
    err_clear(&e);
    CHECK_INT(store_duplicates_error(s, &e), -ENOTUNIQ);
    /* two of them, first TOKEN */
    CHECK_CONTAINS(e.msg, "has keys given twice: 'TOKEN' on lines 2 and 4 (and 1 more)");
    CHECK_CONTAINS(e.msg, "remove the extra ones by hand");
    /* a change does not bring the hidden version back */
    struct recipe *nr = NULL;
    CHECK_INT(recipe_new("NEW", RECIPE_ENV, "NEW_SRC", &nr), 0);
    CHECK_INT(store_set(s, nr), 0);
    recipe_free(nr);
    CHECK_INT(store_get(s, "TOKEN", &r, NULL), -EINVAL);
    store_free(s);
    s = NULL;

    /* none: nothing to say */
    write_file(path, "{\"A\": \"env:A\", \"B\": {\"env\": \"B\"}}", 0600);
    CHECK_INT(store_load(path, &s, &e), 0);
    if (s) {
        CHECK_INT(store_duplicates_error(s, &e), 0);
    }
out:
    store_free(s);
    free(path);
}

/* secrets.json as a symbolic link is refused, naming the target; no chmod advised */
static void test_symlink_refused(void)
{
    char *target = tmp_path("real/secrets.json"), *dir = tmp_path("linked");
    char *path = tmp_path("linked/secrets.json");
    struct store *s = NULL;
    struct err e = ERR_INIT;
    write_file(target, "{}", 0600);
    CHECK_INT(dir_ensure(dir, 0700, NULL), 0);
    CHECK_INT(symlink(target, path), 0);
    CHECK_INT(store_load(path, &s, &e), -ELOOP);
    CHECK_CONTAINS(e.msg, "'~/linked/secrets.json' is a symbolic link to '");
    CHECK_CONTAINS(e.msg, "replace the link by the file itself");
    CHECK(strstr(e.msg, "chmod") == NULL);
    store_free(s);
    free(target);
    free(dir);
    free(path);
}

static double secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Looking up every name (what list and exec do) costs the time of n lookups, not n * n: with
 * 40000 entries a walk over the entries per lookup takes tens of seconds (and would hit the
 * test's timeout); by index, milliseconds. The ratio of 4n to n stays far below the 16 of a
 * quadratic lookup too (best of three, so that a busy machine does not make it fail). */
static double lookup_all(size_t n)
{
    struct json_object *root = json_object_new_object();
    struct store *s = NULL;
    char name[32];
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "N%zu", i);
        (void)json_object_object_add(root, name, json_object_new_string("env:X"));
    }
    CHECK_INT(store_from_json("/x/secrets.json", root, &s, NULL), 0);
    json_object_put(root);
    double best = 1e9;
    for (int round = 0; s && round < 3; round++) {
        double t0 = secs();
        for (size_t i = 0; i < store_count(s); i++) {
            const struct recipe *r = NULL;
            if (store_get(s, store_name(s, i), &r, NULL) < 0)
                CHECK(false);
        }
        double t = secs() - t0;
        best = t < best ? t : best;
    }
    store_free(s);
    return best;
}

static void test_lookup_linear(void)
{
    double small = lookup_all(10000), big = lookup_all(40000);
    CHECK(big < 2.0);
    CHECK(big < 8 * small + 0.05);
}

int main(void)
{
    /* never the real home: messages abbreviate the test directory to "~" */
    if (setenv("HOME", tests_tmpdir(), 1) < 0 ||
        setenv("PI_CODING_AGENT_DIR", tests_tmpdir(), 1) < 0)
        return 2;
    return TESTS_RUN(test_missing_is_empty, test_entries, test_set_remove, test_save_roundtrip,
                     test_malformed, test_not_an_object, test_open_mode_refused, test_lock,
                     test_duplicates, test_symlink_refused, test_lookup_linear);
}
