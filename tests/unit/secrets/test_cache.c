/* test_cache.c - the TTL cache: where it may live, entries, expiry, sweeping, corruption */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/path.h"
#include "credkit/util.h"

#include "cache.h"
#include "tests.h"

/* The runtime directory of these tests: a private directory on /dev/shm (tmpfs). */
static char runtime_dir[] = "/dev/shm/credkit-unit-cache-XXXXXX";

static const char KEY1[] = "1111111111111111111111111111111111111111111111111111111111111111";
static const char KEY2[] = "2222222222222222222222222222222222222222222222222222222222222222";
static const char KEY3[] = "3333333333333333333333333333333333333333333333333333333333333333";

static char *cache_path(const char *name)
{
    char *dir = path_join(runtime_dir, "credkit-secrets");
    char *p = dir ? path_join(dir, name) : NULL;
    free(dir);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
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

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(p);
    return 0;
}

static void rm_rf(const char *p)
{
    (void)nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static bool on_memory_fs(const char *p)
{
    struct statfs sf;
    return statfs(p, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

/* cache_open with XDG_RUNTIME_DIR = rt (NULL: unset): expects no cache and no error */
static void expect_no_cache(const char *rt, const char *why)
{
    struct cache *c = (struct cache *)&c; /* not NULL: cache_open must set it */
    if (rt)
        CHECK_INT(setenv("XDG_RUNTIME_DIR", rt, 1), 0);
    else
        CHECK_INT(unsetenv("XDG_RUNTIME_DIR"), 0);
    CHECK_INT(cache_open(&c), 0);
    if (c != NULL) {
        fprintf(stderr, "a cache was opened although %s\n", why);
        CHECK(c == NULL);
        if (c != (struct cache *)&c)
            cache_free(c);
    }
}

static void use_runtime_dir(void)
{
    CHECK_INT(setenv("XDG_RUNTIME_DIR", runtime_dir, 1), 0);
}

static void test_unusable_runtime_dir(void)
{
    char sub[sizeof(runtime_dir) + 64];

    expect_no_cache(NULL, "XDG_RUNTIME_DIR is unset");
    expect_no_cache("", "XDG_RUNTIME_DIR is empty");
    expect_no_cache("run/user/0", "XDG_RUNTIME_DIR is relative");

    snprintf(sub, sizeof(sub), "%s/missing", runtime_dir);
    expect_no_cache(sub, "XDG_RUNTIME_DIR does not exist");
    CHECK(!exists(sub));

    snprintf(sub, sizeof(sub), "%s/afile", runtime_dir);
    write_file(sub, "x", 1, 0700);
    expect_no_cache(sub, "XDG_RUNTIME_DIR is a file");
    CHECK_INT(unlink(sub), 0);

    /* group/other access: not private */
    static const mode_t modes[] = {0755, 0750, 0701, 0770};
    snprintf(sub, sizeof(sub), "%s/open", runtime_dir);
    CHECK_INT(mkdir(sub, 0700), 0);
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        CHECK_INT(chmod(sub, modes[i]), 0);
        expect_no_cache(sub, "XDG_RUNTIME_DIR is open to others");
    }
    char *inner = path_join(sub, "credkit-secrets");
    CHECK(inner && !exists(inner)); /* nothing was created there */
    free(inner);
    rm_rf(sub);

    /* not ours: only root can make one to try */
    snprintf(sub, sizeof(sub), "%s/notours", runtime_dir);
    CHECK_INT(mkdir(sub, 0700), 0);
    if (chown(sub, 65534, 65534) == 0)
        expect_no_cache(sub, "XDG_RUNTIME_DIR belongs to another user");
    else
        fprintf(stderr, "note: cannot chown as uid %u, not-ours case skipped\n", geteuid());
    rm_rf(sub);

    /* persistent storage (ext4 under the test directory): values must never land there */
    char disk[8192];
    snprintf(disk, sizeof(disk), "%s/rt-XXXXXX", tests_tmpdir());
    if (on_memory_fs(tests_tmpdir()))
        snprintf(disk, sizeof(disk), "./rt-disk-XXXXXX");
    if (!mkdtemp(disk)) {
        CHECK(0);
    } else if (on_memory_fs(disk)) {
        fprintf(stderr, "note: no disk-backed directory at hand, non-tmpfs case skipped\n");
        rm_rf(disk);
    } else {
        CHECK_INT(chmod(disk, 0700), 0);
        expect_no_cache(disk, "XDG_RUNTIME_DIR is on a disk filesystem");
        char *d = path_join(disk, "credkit-secrets");
        CHECK(d && !exists(d));
        free(d);
        rm_rf(disk);
    }
}

static void test_store_lookup(void)
{
    struct cache *c = NULL;
    struct buf out;
    struct stat st;
    int64_t now = now_unix(), exp = 0;
    static const char value[] = "s3cret-value\nwith a second line";

    use_runtime_dir();
    CHECK_INT(cache_open(&c), 0);
    CHECK(c != NULL);
    if (!c)
        return;
    char *dir = path_join(runtime_dir, "credkit-secrets");
    CHECK_INT(lstat(dir, &st), 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK_INT(st.st_mode & 07777, 0700);
    free(dir);

    buf_init_secret(&out, 4096);
    CHECK_INT(cache_lookup(c, KEY1, now, &out, &exp), -ENOENT); /* nothing yet */
    CHECK_INT(out.len, 0);
    CHECK_INT(exp, 0);

    mode_t old_umask = umask(0);
    CHECK_INT(cache_store(c, KEY1, value, strlen(value), now + 100), 0);
    umask(old_umask);
    CHECK_INT(cache_lookup(c, KEY1, now, &out, &exp), 0);
    CHECK_INT(out.len, strlen(value));
    CHECK_STR(buf_str(&out), value);
    CHECK_INT(exp, now + 100);

    char *p = cache_path(KEY1);
    CHECK_INT(lstat(p, &st), 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK_INT(st.st_mode & 07777, 0600);
    CHECK_INT(st.st_mtime, now + 100); /* the mtime is the expiry */

    /* the expiry is exclusive: at now + 100 the entry is gone */
    buf_reset(&out);
    exp = 0;
    CHECK_INT(cache_lookup(c, KEY1, now + 99, &out, &exp), 0);
    CHECK_INT(exp, now + 100);
    buf_reset(&out);
    exp = 7;
    CHECK_INT(cache_lookup(c, KEY1, now + 100, &out, &exp), -ENOENT);
    CHECK_INT(out.len, 0); /* outputs untouched on a miss */
    CHECK_INT(exp, 7);

    /* replacing an entry; binary values keep their length */
    static const char bin[] = {'a', 0, 'b', '\n', 'c'};
    CHECK_INT(cache_store(c, KEY1, bin, sizeof(bin), now + 200), 0);
    buf_reset(&out);
    CHECK_INT(cache_lookup(c, KEY1, now, &out, &exp), 0);
    CHECK_INT(out.len, sizeof(bin));
    CHECK(out.len == sizeof(bin) && memcmp(out.data, bin, sizeof(bin)) == 0);
    CHECK_INT(exp, now + 200);
    CHECK_INT(lstat(p, &st), 0);
    CHECK_INT(st.st_mtime, now + 200);
    CHECK_INT(st.st_mode & 07777, 0600);

    /* an empty value is a value */
    CHECK_INT(cache_store(c, KEY2, "", 0, now + 50), 0);
    buf_reset(&out);
    CHECK_INT(cache_lookup(c, KEY2, now, &out, &exp), 0);
    CHECK_INT(out.len, 0);
    CHECK_INT(exp, now + 50);

    /* drop */
    cache_drop(c, KEY1);
    CHECK(!exists(p));
    CHECK_INT(cache_lookup(c, KEY1, now, &out, &exp), -ENOENT);
    cache_drop(c, KEY1); /* absent: fine */
    cache_drop(c, KEY2);

    buf_release(&out);
    free(p);
    cache_free(c);
}

static void test_expiry_and_sweep(void)
{
    struct cache *c = NULL;
    struct buf out;
    int64_t now = now_unix(), exp = 0;

    use_runtime_dir();
    CHECK_INT(cache_open(&c), 0);
    if (!c)
        return;
    buf_init_secret(&out, 4096);
    CHECK_INT(cache_store(c, KEY1, "old-value", 9, now - 10), 0);
    CHECK_INT(cache_store(c, KEY2, "fresh-value", 11, now + 3600), 0);
    CHECK_INT(cache_lookup(c, KEY1, now, &out, &exp), -ENOENT);
    CHECK_INT(out.len, 0);

    char *p1 = cache_path(KEY1), *p2 = cache_path(KEY2);
    char *other = cache_path("not-an-entry"), *lock = NULL;
    CHECK(asprintf(&lock, "%s.lock", p1) > 0);
    write_file(other, "keep me", 7, 0600);
    write_file(lock, "", 0, 0600);
    /* both older than now: only the entry may go */
    struct timespec old[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};
    CHECK_INT(utimensat(AT_FDCWD, other, old, 0), 0);
    CHECK_INT(utimensat(AT_FDCWD, lock, old, 0), 0);
    CHECK(exists(p1));
    cache_free(c);

    /* opening sweeps what expired */
    c = NULL;
    CHECK_INT(cache_open(&c), 0);
    CHECK(c != NULL);
    CHECK(!exists(p1));
    CHECK(exists(p2));
    CHECK(exists(other));
    CHECK(exists(lock));
    buf_reset(&out);
    CHECK_INT(cache_lookup(c, KEY2, now, &out, &exp), 0);
    CHECK_STR(buf_str(&out), "fresh-value");
    CHECK_INT(exp, now + 3600);

    cache_drop(c, KEY2);
    (void)unlink(other);
    (void)unlink(lock);
    buf_release(&out);
    free(p1);
    free(p2);
    free(other);
    free(lock);
    cache_free(c);
}

static void test_corrupt_entries(void)
{
    static const struct {
        const char *text;
        const char *why;
    } bad[] = {
        {"no newline at all", "no newline"},
        {"12abc\nvalue", "junk in the number"},
        {"\nvalue", "empty number"},
        {" 99999999999\nvalue", "leading space"},
        {"+99999999999\nvalue", "leading plus"},
        {"99999999999999999999999\nvalue", "number out of range"},
        {"", "empty file"},
    };
    struct cache *c = NULL;
    struct buf out;
    int64_t now = now_unix(), exp = 5;

    use_runtime_dir();
    CHECK_INT(cache_open(&c), 0);
    if (!c)
        return;
    buf_init_secret(&out, 4096);
    char *p = cache_path(KEY3);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_file(p, bad[i].text, strlen(bad[i].text), 0600);
        int r = cache_lookup(c, KEY3, now, &out, &exp);
        if (r != -ENOENT || exists(p))
            fprintf(stderr, "corrupt entry (%s): lookup %d, file %s\n", bad[i].why, r,
                    exists(p) ? "kept" : "removed");
        CHECK_INT(r, -ENOENT);
        CHECK(!exists(p)); /* a corrupt entry is removed */
        CHECK_INT(out.len, 0);
        CHECK_INT(exp, 5);
    }

    /* a valid entry someone else could read is not served */
    char text[64];
    snprintf(text, sizeof(text), "%lld\nvalue", (long long)(now + 100));
    write_file(p, text, strlen(text), 0644);
    CHECK_INT(cache_lookup(c, KEY3, now, &out, &exp), -ENOENT);
    CHECK_INT(out.len, 0);
    CHECK_INT(chmod(p, 0600), 0);
    CHECK_INT(cache_lookup(c, KEY3, now, &out, &exp), 0);
    CHECK_STR(buf_str(&out), "value");
    CHECK_INT(exp, now + 100);
    cache_drop(c, KEY3);

    buf_release(&out);
    free(p);
    cache_free(c);
}

static void test_lock(void)
{
    struct cache *c = NULL;
    struct file_lock *l = NULL, *l2 = NULL;
    struct err e = ERR_INIT;
    struct stat st;

    use_runtime_dir();
    CHECK_INT(cache_open(&c), 0);
    if (!c)
        return;
    CHECK_INT(cache_lock(c, KEY1, 1000, &l, &e), 0);
    CHECK(l != NULL);
    char *lp = NULL, *p = cache_path(KEY1);
    CHECK(asprintf(&lp, "%s.lock", p) > 0);
    CHECK_INT(lstat(lp, &st), 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK_INT(st.st_mode & 07777, 0600);
    /* held: a second locker waits and gives up */
    l2 = (struct file_lock *)&l2;
    CHECK_INT(cache_lock(c, KEY1, 50, &l2, &e), -ETIMEDOUT);
    CHECK(l2 == NULL || l2 == (struct file_lock *)&l2);
    CHECK_CONTAINS(e.msg, KEY1);
    /* another key is independent */
    l2 = NULL;
    CHECK_INT(cache_lock(c, KEY2, 50, &l2, &e), 0);
    CHECK(l2 != NULL);
    file_lock_release(l2);
    file_lock_release(l);
    l2 = NULL;
    CHECK_INT(cache_lock(c, KEY1, 50, &l2, &e), 0);
    CHECK(l2 != NULL);
    file_lock_release(l2);
    free(lp);
    free(p);
    cache_free(c);
}

static void test_null_cache(void)
{
    struct buf out;
    struct file_lock *l = (struct file_lock *)&l;
    struct err e = ERR_INIT;
    int64_t exp = 9;
    buf_init_secret(&out, 64);
    CHECK_INT(cache_lookup(NULL, KEY1, now_unix(), &out, &exp), -ENOENT);
    CHECK_INT(out.len, 0);
    CHECK_INT(exp, 9);
    CHECK_INT(cache_store(NULL, KEY1, "v", 1, now_unix() + 10), 0);
    CHECK_INT(cache_lock(NULL, KEY1, 10, &l, &e), 0);
    CHECK(l == NULL);
    cache_drop(NULL, KEY1);
    cache_free(NULL);
    buf_release(&out);
}

int main(void)
{
    if (!mkdtemp(runtime_dir)) {
        fprintf(stderr, "mkdtemp %s: %s\n", runtime_dir, strerror(errno));
        return 2;
    }
    if (!on_memory_fs(runtime_dir)) {
        fprintf(stderr, "%s is not on tmpfs\n", runtime_dir);
        rm_rf(runtime_dir);
        return 2;
    }
    /* never the real home */
    if (setenv("HOME", tests_tmpdir(), 1) < 0 ||
        setenv("PI_CODING_AGENT_DIR", tests_tmpdir(), 1) < 0)
        return 2;
    int r = TESTS_RUN(test_unusable_runtime_dir, test_store_lookup, test_expiry_and_sweep,
                      test_corrupt_entries, test_lock, test_null_cache);
    rm_rf(runtime_dir);
    return r;
}
