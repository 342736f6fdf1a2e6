/* test_jsonfile.c - locked read-modify-write of JSON files: create, modify, unchanged files left
 * alone, failed writes and refused changes leaving the old file, locks */
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/jsonfile.h"

#include "tests.h"

static char *tpath(const char *name)
{
    static char p[8][4096];
    static unsigned i;
    char *s = p[i++ % 8];
    int n = snprintf(s, 4096, "%s/%s", tests_tmpdir(), name);
    if (n < 0 || n >= 4096)
        abort();
    return s;
}

static void put(const char *path, const char *content, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK_INT(write(fd, content, strlen(content)), (long long)strlen(content));
    CHECK_INT(fchmod(fd, mode), 0);
    close(fd);
}

/* The file's content, in a static buffer ("(absent)" when it cannot be read). */
static const char *content(const char *path)
{
    static char text[8192];
    struct buf b;
    struct err e = ERR_INIT;
    buf_init(&b, sizeof(text) - 1);
    if (file_read(path, 0, &b, &e) < 0)
        snprintf(text, sizeof(text), "(absent)");
    else
        snprintf(text, sizeof(text), "%s", buf_str(&b));
    buf_release(&b);
    return text;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return (mode_t)-1;
    return st.st_mode & 07777;
}

static const struct jsonfile_opts dir_locked = {
    .lock_timeout_ms = 200,
    .max_size = 64 * 1024,
    .mode = 0600,
    .flags = JSONFILE_CREATE | JSONFILE_MKDIR | JSONFILE_KEEP_MODE,
};

/* Sets "key" (userdata) to 1. */
static int set_key(struct json_object *doc, void *userdata, struct err *e)
{
    (void)e;
    return json_object_object_add(doc, userdata, json_object_new_int(1)) < 0 ? -ENOMEM : 0;
}

static int leave_alone(struct json_object *doc, void *userdata, struct err *e)
{
    (void)doc;
    (void)userdata;
    (void)e;
    return 0;
}

static int refuse(struct json_object *doc, void *userdata, struct err *e)
{
    (void)userdata;
    /* a change made, then given up: none of it may reach the file */
    (void)json_object_object_add(doc, "half", json_object_new_int(1));
    return err_set(e, -EINVAL, "refused");
}

static void test_create(void)
{
    struct err e = ERR_INIT;
    const char *p = tpath("new/dir/mcp.json");

    /* missing file and directory: created, the directory private, the file with mode */
    CHECK_INT(jsonfile_edit(p, &dir_locked, set_key, "a", &e), 1);
    CHECK_STR(content(p), "{\n  \"a\": 1\n}\n");
    CHECK_INT(mode_of(p), 0600);
    CHECK_INT(mode_of(tpath("new/dir")), 0700);

    /* without JSONFILE_CREATE a missing file is an error */
    struct jsonfile_opts o = dir_locked;
    o.flags &= ~(unsigned)JSONFILE_CREATE;
    err_clear(&e);
    CHECK_INT(jsonfile_edit(tpath("new/dir/other.json"), &o, set_key, "a", &e), -ENOENT);
    CHECK_STR(content(tpath("new/dir/other.json")), "(absent)");

    /* a missing file that nothing was added to is not created */
    err_clear(&e);
    CHECK_INT(jsonfile_edit(tpath("new/dir/empty.json"), &dir_locked, leave_alone, NULL, &e), 0);
    CHECK_STR(content(tpath("new/dir/empty.json")), "(absent)");
}

static void test_modify(void)
{
    struct err e = ERR_INIT;
    const char *p = tpath("modify.json");
    put(p, "{\"z\": [1, 2], \"b\": {\"x\": \"/a/b\"}}", 0640);

    /* other keys keep their order; the mode of the file is kept (JSONFILE_KEEP_MODE) */
    CHECK_INT(jsonfile_edit(p, &dir_locked, set_key, "a", &e), 1);
    CHECK_STR(content(p), "{\n  \"z\": [\n    1,\n    2\n  ],\n  \"b\": {\n    \"x\": \"/a/b\"\n  "
                          "},\n  \"a\": 1\n}\n");
    CHECK_INT(mode_of(p), 0640);

    /* without it, the file gets the mode asked for */
    struct jsonfile_opts o = dir_locked;
    o.flags &= ~(unsigned)JSONFILE_KEEP_MODE;
    CHECK_INT(jsonfile_edit(p, &o, set_key, "c", &e), 1);
    CHECK_INT(mode_of(p), 0600);

    /* open / change / commit, then a second commit with nothing new */
    struct jsonfile *f = NULL;
    CHECK_INT(jsonfile_open(p, &dir_locked, &f, &e), 0);
    if (!f)
        return;
    CHECK_STR(jsonfile_display(f), p);
    json_object_object_del(jsonfile_doc(f), "z");
    CHECK_INT(jsonfile_commit(f, &e), 1);
    CHECK_INT(jsonfile_commit(f, &e), 0);
    json_object_object_add(jsonfile_doc(f), "b", json_object_new_array());
    CHECK_INT(jsonfile_commit(f, &e), 1);
    jsonfile_free(f);
    CHECK_STR(content(p), "{\n  \"b\": [\n  ],\n  \"a\": 1,\n  \"c\": 1\n}\n");

    /* not JSON: refused with the position, left as it is */
    put(p, "{\"a\": 1,}", 0600);
    err_clear(&e);
    CHECK_INT(jsonfile_edit(p, &dir_locked, set_key, "b", &e), -EBADMSG);
    CHECK_CONTAINS(e.msg, "line 1, column");
    CHECK_STR(content(p), "{\"a\": 1,}");
}

/* A document the change leaves as it was is not rewritten: not reformatted, not replaced. */
static void test_unchanged_not_rewritten(void)
{
    struct err e = ERR_INIT;
    struct stat before, after;
    const char *p = tpath("unchanged.json");
    put(p, "{\"a\":1,   \"b\":[true]}", 0644);
    CHECK_INT(stat(p, &before), 0);

    CHECK_INT(jsonfile_edit(p, &dir_locked, leave_alone, NULL, &e), 0);
    /* setting a key to the value it has changes nothing either */
    CHECK_INT(jsonfile_edit(p, &dir_locked, set_key, "a", &e), 0);
    CHECK_INT(stat(p, &after), 0);
    CHECK_STR(content(p), "{\"a\":1,   \"b\":[true]}");
    CHECK_INT(after.st_ino, before.st_ino);
    CHECK_INT(mode_of(p), 0644);

    /* unless asked: then it is written as the document reads */
    struct jsonfile_opts o = dir_locked;
    o.flags |= JSONFILE_ALWAYS_WRITE;
    CHECK_INT(jsonfile_edit(p, &o, leave_alone, NULL, &e), 1);
    CHECK_STR(content(p), "{\n  \"a\": 1,\n  \"b\": [\n    true\n  ]\n}\n");
}

/* A change the callback gives up, and a write that fails half-way, leave the old file. */
static void test_failed_write_keeps_old(void)
{
    struct err e = ERR_INIT;
    const char *p = tpath("keep.json");
    put(p, "{\"old\": true}", 0600);

    CHECK_INT(jsonfile_edit(p, &dir_locked, refuse, NULL, &e), -EINVAL);
    CHECK_STR(e.msg, "refused");
    CHECK_STR(content(p), "{\"old\": true}");

    /* a file size limit makes the write fail (works as root too); in a child, to keep it there */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {.rlim_cur = 8, .rlim_max = RLIM_INFINITY};
        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
            _exit(3);
        err_clear(&e);
        int r = jsonfile_edit(p, &dir_locked, set_key, "a-rather-long-key", &e);
        _exit(r == -EFBIG && strstr(e.msg, "cannot write '") ? 0 : 1);
    }
    int status = -1;
    CHECK_INT(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_INT(WEXITSTATUS(status), 0);
    CHECK_STR(content(p), "{\"old\": true}");
}

static void test_symlink_followed(void)
{
    struct err e = ERR_INIT;
    struct stat st;
    const char *target = tpath("target.json"), *link = tpath("link.json");
    put(target, "{}", 0600);
    CHECK_INT(symlink(target, link), 0);

    struct jsonfile_opts o = dir_locked;
    o.flags |= JSONFILE_FOLLOW_SYMLINK;
    CHECK_INT(jsonfile_edit(link, &o, set_key, "a", &e), 1);
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK_STR(content(target), "{\n  \"a\": 1\n}\n");
}

static void test_locks(void)
{
    struct err e = ERR_INIT;
    struct jsonfile *held = NULL, *other = NULL;
    const char *p = tpath("locked.json");

    /* the directory lock: a second writer times out, told who holds it */
    struct jsonfile_opts o = dir_locked;
    o.lock_holder = "test writer";
    CHECK_INT(jsonfile_open(p, &o, &held, &e), 0);
    CHECK_INT(jsonfile_open(tpath("sibling.json"), &o, &other, &e), -ETIMEDOUT);
    CHECK_CONTAINS(e.msg, "another test writer is changing a file in '");
    CHECK(other == NULL);
    jsonfile_free(held);
    held = NULL;
    CHECK_INT(jsonfile_open(tpath("sibling.json"), &o, &other, &e), 0);
    jsonfile_free(other);
    other = NULL;

    /* a lock file of its own: the directory stays free, the lock file excludes */
    struct jsonfile_opts lf = dir_locked;
    lf.lock_path = tpath("locked.json.lock");
    lf.flags |= JSONFILE_SECRET | JSONFILE_PRIVATE_DIR;
    CHECK_INT(jsonfile_open(p, &lf, &held, &e), 0);
    CHECK_INT(mode_of(tpath("locked.json.lock")), 0600);
    CHECK_INT(jsonfile_open(tpath("sibling.json"), &o, &other, &e), 0);
    jsonfile_free(other);
    err_clear(&e);
    CHECK_INT(jsonfile_open(p, &lf, &other, &e), -ETIMEDOUT);
    CHECK_CONTAINS(e.msg, "locked.json.lock");
    jsonfile_free(held);

    /* JSONFILE_SECRET refuses a file others can read */
    put(p, "{}", 0644);
    err_clear(&e);
    CHECK_INT(jsonfile_open(p, &lf, &held, &e), -EACCES);
    CHECK_CONTAINS(e.msg, "chmod 600");
}

/* A document its own reader would refuse (bigger than max_size) is never written. */
static void test_size_limit_on_write(void)
{
    struct err e = ERR_INIT;
    const char *p = tpath("limited.json");
    put(p, "{\"a\": 1}\n", 0600);
    struct jsonfile_opts o = dir_locked;
    o.max_size = 22;
    /* {"a": 1, "b": 1} pretty-printed with its newline: 23 bytes */
    CHECK_INT(jsonfile_edit(p, &o, set_key, "b", &e), -EFBIG);
    CHECK_CONTAINS(e.msg,
                   "limited.json': it would be 23 bytes, more than the 22 bytes it may hold");
    CHECK_STR(content(p), "{\"a\": 1}\n");
    o.max_size = 23;
    CHECK_INT(jsonfile_edit(p, &o, set_key, "b", &e), 1);
    struct json_object *doc = NULL;
    CHECK_INT(json_read_file(p, 23, 0, &doc, &e), 0);
    json_object_put(doc);
}

/* With JSONFILE_DUPLICATES the keys given twice are found, and the file is not rewritten
 * (which would keep only one of them). */
static void test_duplicates_refuse_write(void)
{
    struct err e = ERR_INIT;
    struct jsonfile *f = NULL;
    const struct json_dup *d = NULL;
    const char *p = tpath("dups.json");
    const char *text = "{\n  \"x\": 1,\n  \"x\": 2\n}\n";
    put(p, text, 0600);
    struct jsonfile_opts o = dir_locked;
    o.flags |= JSONFILE_DUPLICATES;
    CHECK_INT(jsonfile_open(p, &o, &f, &e), 0);
    if (!f)
        return;
    CHECK_INT(jsonfile_duplicates(f, &d), 1);
    CHECK_STR(d[0].key, "x");
    CHECK_INT(d[0].first, 2);
    CHECK_INT(d[0].line, 3);
    (void)json_object_object_add(jsonfile_doc(f), "y", json_object_new_int(3));
    CHECK_INT(jsonfile_commit(f, &e), -ENOTUNIQ);
    CHECK_CONTAINS(e.msg, "\"x\" is given twice (lines 2 and 3)");
    jsonfile_free(f);
    CHECK_STR(content(p), text);
    /* without the flag: none found, as before */
    CHECK_INT(jsonfile_open(p, &dir_locked, &f, &e), 0);
    CHECK_INT(jsonfile_duplicates(f, &d), 0);
    jsonfile_free(f);
    /* a malformed file is still reported with its position */
    put(p, "{\"x\": }", 0600);
    CHECK_INT(jsonfile_open(p, &o, &f, &e), -EBADMSG);
    CHECK_CONTAINS(e.msg, "dups.json': line 1");
}

TESTS_MAIN(test_size_limit_on_write, test_duplicates_refuse_write, test_create, test_modify,
           test_unchanged_not_rewritten, test_failed_write_keeps_old, test_symlink_followed,
           test_locks)
