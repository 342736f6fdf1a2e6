/* test_file.c - atomic replace, private permissions, directories, locks */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "credkit/file.h"

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

static mode_t mode_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return (mode_t)-1;
    return st.st_mode & 07777;
}

/* Number of entries in dir whose name starts with prefix: temporary files left behind. */
static int count_prefixed(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
            n++;
    closedir(d);
    return n;
}

/* Reads path into a fresh buffer; returns file_read's result, content in *out (caller
 * releases). */
static int slurp(const char *path, unsigned flags, size_t max, struct buf *out, struct err *e)
{
    buf_init(out, max);
    return file_read(path, flags, out, e);
}

static void test_write_atomic_replaces(void)
{
    struct err e = ERR_INIT;
    struct buf b;
    const char *p = tpath("replace.txt");

    umask(022);
    CHECK_INT(file_write_atomic(p, "old", 3, 0600, &e), 0);
    CHECK_INT(slurp(p, 0, 0, &b, &e), 0);
    CHECK_STR(buf_str(&b), "old");
    buf_release(&b);
    CHECK_INT(mode_of(p), 0600);

    CHECK_INT(file_write_atomic(p, "new content\n", 12, 0640, &e), 0);
    CHECK_INT(slurp(p, 0, 0, &b, &e), 0);
    CHECK_STR(buf_str(&b), "new content\n");
    CHECK_INT(b.len, 12);
    buf_release(&b);
    CHECK_INT(mode_of(p), 0640);

    /* the umask does not narrow or widen the mode asked for */
    umask(077);
    CHECK_INT(file_write_atomic(p, "", 0, 0644, &e), 0);
    CHECK_INT(mode_of(p), 0644);
    umask(022);

    CHECK_INT(count_prefixed(tests_tmpdir(), ".replace.txt."), 0);
}

static void test_write_atomic_failures(void)
{
    struct err e = ERR_INIT;
    const char *dir = tests_tmpdir();

    /* the directory does not exist */
    CHECK_INT(file_write_atomic(tpath("missing/dir/x.json"), "x", 1, 0600, &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "cannot write '");
    CHECK_CONTAINS(e.msg, "missing/dir/x.json'");

    /* the target is a directory: rename fails after the temporary file was written */
    const char *target = tpath("target_dir");
    CHECK_INT(mkdir(target, 0700), 0);
    err_clear(&e);
    int r = file_write_atomic(target, "data", 4, 0600, &e);
    CHECK(r == -EISDIR || r == -EEXIST || r == -ENOTEMPTY);
    CHECK_CONTAINS(e.msg, "cannot replace it");
    struct stat st;
    CHECK(stat(target, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK_INT(count_prefixed(dir, ".target_dir."), 0);

    /* a trailing slash is not a file name */
    err_clear(&e);
    CHECK_INT(file_write_atomic(tpath("x/"), "x", 1, 0600, &e), -EINVAL);
}

/* A write that fails half-way (file size limit: works as root too) leaves the old content
 * and no temporary file. Runs in a child so the limit stays there. */
static void test_write_atomic_midway_failure_keeps_old(void)
{
    const char *p = tpath("keep.txt");
    put(p, "old", 0600);

    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct err e = ERR_INIT;
        struct rlimit rl = {.rlim_cur = 16, .rlim_max = RLIM_INFINITY};
        char big[100];
        memset(big, 'x', sizeof(big));
        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
            _exit(3);
        int r = file_write_atomic(p, big, sizeof(big), 0600, &e);
        if (r != -EFBIG) {
            fprintf(stderr, "child: r=%d msg=%s\n", r, e.msg);
            _exit(1);
        }
        _exit(strstr(e.msg, "cannot write '") ? 0 : 2);
    }
    int status = -1;
    CHECK_INT(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_INT(WEXITSTATUS(status), 0);

    struct err e = ERR_INIT;
    struct buf b;
    CHECK_INT(slurp(p, 0, 0, &b, &e), 0);
    CHECK_STR(buf_str(&b), "old");
    buf_release(&b);
    CHECK_INT(count_prefixed(tests_tmpdir(), ".keep.txt."), 0);
}

static void test_dir_ensure(void)
{
    struct err e = ERR_INIT;
    umask(022);

    const char *top = tpath("d1");
    const char *deep = tpath("d1/a/b/c");
    CHECK_INT(dir_ensure(deep, 0700, &e), 0);
    CHECK_INT(mode_of(top), 0700);
    CHECK_INT(mode_of(tpath("d1/a")), 0700);
    CHECK_INT(mode_of(tpath("d1/a/b")), 0700);
    CHECK_INT(mode_of(deep), 0700);
    /* again: nothing to do */
    CHECK_INT(dir_ensure(deep, 0700, &e), 0);

    /* an existing directory that is too open is tightened */
    const char *open_dir = tpath("d2");
    CHECK_INT(mkdir(open_dir, 0755), 0);
    CHECK_INT(chmod(open_dir, 0755), 0);
    CHECK_INT(dir_ensure(open_dir, 0700, &e), 0);
    CHECK_INT(mode_of(open_dir), 0700);

    /* one that is narrower than asked is left alone */
    const char *narrow = tpath("d3");
    CHECK_INT(mkdir(narrow, 0500), 0);
    CHECK_INT(dir_ensure(narrow, 0700, &e), 0);
    CHECK_INT(mode_of(narrow), 0500);

    /* the last component gets its mode whatever the umask */
    umask(077);
    const char *shared = tpath("d4/shared/");
    CHECK_INT(dir_ensure(shared, 0750, &e), 0);
    CHECK_INT(mode_of(tpath("d4/shared")), 0750);
    CHECK_INT(mode_of(tpath("d4")), 0700);
    umask(022);

    /* a file in the way, last or in the middle */
    const char *file = tpath("d5");
    put(file, "x", 0600);
    err_clear(&e);
    CHECK_INT(dir_ensure(file, 0700, &e), -ENOTDIR);
    CHECK_CONTAINS(e.msg, "d5' exists but is not a directory");
    err_clear(&e);
    CHECK_INT(dir_ensure(tpath("d5/sub/x"), 0700, &e), -ENOTDIR);
    CHECK_CONTAINS(e.msg, "not a directory");

    CHECK_INT(dir_ensure("", 0700, &e), -EINVAL);
}

static void test_read_refuses_non_files(void)
{
    struct err e = ERR_INIT;
    struct buf b;

    CHECK_INT(slurp(tests_tmpdir(), 0, 0, &b, &e), -EISDIR);
    CHECK_CONTAINS(e.msg, "is a directory");
    buf_release(&b);

    /* a FIFO without a writer: refused, not waited on */
    const char *fifo = tpath("fifo");
    CHECK_INT(mkfifo(fifo, 0600), 0);
    err_clear(&e);
    CHECK_INT(slurp(fifo, 0, 0, &b, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "is not a regular file");
    buf_release(&b);

    err_clear(&e);
    CHECK_INT(slurp(tpath("nope"), 0, 0, &b, &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "nope' does not exist");
    CHECK_INT(b.len, 0);
    buf_release(&b);
}

static void test_read_size_cap(void)
{
    struct err e = ERR_INIT;
    struct buf b;
    const char *p = tpath("hundred");
    char content[101];
    memset(content, 'a', 100);
    content[100] = 0;
    put(p, content, 0600);

    CHECK_INT(slurp(p, 0, 100, &b, &e), 0);
    CHECK_INT(b.len, 100);
    buf_release(&b);

    CHECK_INT(slurp(p, 0, 99, &b, &e), -E2BIG);
    CHECK_CONTAINS(e.msg, "hundred' is larger than 99 bytes");
    CHECK_INT(b.len, 0);
    buf_release(&b);

    /* appends to what the buffer holds, within the same cap; unchanged on failure */
    buf_init(&b, 120);
    CHECK_INT(buf_append_str(&b, "0123456789"), 0);
    CHECK_INT(file_read(p, 0, &b, &e), 0);
    CHECK_INT(b.len, 110);
    CHECK_INT(file_read(p, 0, &b, &e), -E2BIG);
    CHECK_INT(b.len, 110);
    buf_release(&b);

    /* a file whose size lies (procfs says 0): the cap holds while reading, and the buffer is
     * restored when it is exceeded half-way */
    buf_init(&b, 30);
    CHECK_INT(buf_append_str(&b, "0123456789"), 0);
    CHECK_INT(file_read("/proc/self/status", 0, &b, &e), -E2BIG);
    CHECK_INT(b.len, 10);
    CHECK_STR(buf_str(&b), "0123456789");
    buf_release(&b);
    CHECK_INT(slurp("/proc/self/status", 0, 0, &b, &e), 0);
    CHECK_CONTAINS(buf_str(&b), "Name:");
    buf_release(&b);

    /* empty file */
    const char *empty = tpath("empty");
    put(empty, "", 0600);
    CHECK_INT(slurp(empty, 0, 10, &b, &e), 0);
    CHECK_INT(b.len, 0);
    CHECK_STR(buf_str(&b), "");
    buf_release(&b);
}

/* A file others can change: the file itself, then its directory; sticky directories are fine. */
static void test_owner_only_writes(void)
{
    struct err e = ERR_INIT;
    const char *d = tpath("cfgdir");
    CHECK_INT(mkdir(d, 0700), 0);
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/mcp.json", d);
    put(p, "{}", 0644);
    CHECK_INT(file_check_owner_only_writes(p, &e), 0);

    CHECK_INT(chmod(p, 0666), 0);
    CHECK_INT(file_check_owner_only_writes(p, &e), -EPERM);
    CHECK_CONTAINS(e.msg, "can be changed by every user (mode 0666)");
    CHECK_CONTAINS(e.msg, "chmod go-w '");
    CHECK_INT(chmod(p, 0664), 0);
    CHECK_INT(file_check_owner_only_writes(p, &e), -EPERM);
    CHECK_CONTAINS(e.msg, "by its group");
    CHECK_INT(chmod(p, 0644), 0);

    CHECK_INT(chmod(d, 0777), 0);
    CHECK_INT(file_check_owner_only_writes(p, &e), -EPERM);
    CHECK_CONTAINS(e.msg, "the directory of");
    CHECK_CONTAINS(e.msg, "whoever can change it can replace the file");
    /* sticky, as /tmp: no one can replace another's file */
    CHECK_INT(chmod(d, 01777), 0);
    CHECK_INT(file_check_owner_only_writes(p, &e), 0);
    CHECK_INT(chmod(d, 0700), 0);

    CHECK_INT(file_check_owner_only_writes(tpath("nope"), &e), -ENOENT);
    if (geteuid() == 0) {
        CHECK_INT(chown(p, 65534, 65534), 0);
        CHECK_INT(file_check_owner_only_writes(p, &e), -EPERM);
        CHECK_CONTAINS(e.msg, "is owned by ");
        CHECK_INT(chown(p, 0, 0), 0);
    }
}

static void test_read_secret(void)
{
    struct err e = ERR_INIT;
    struct buf b;
    const char *p = tpath("secret.json");

    /* messages abbreviate HOME, the chmod command has the real path */
    setenv("HOME", tests_tmpdir(), 1);
    put(p, "{}", 0644);
    CHECK_INT(slurp(p, FILE_SECRET, 0, &b, &e), -EACCES);
    CHECK_CONTAINS(e.msg, "'~/secret.json' can be read by others");
    char want[8192];
    snprintf(want, sizeof(want), "run chmod 600 '%s'", p);
    CHECK_CONTAINS(e.msg, want);
    CHECK_INT(b.len, 0);
    buf_release(&b);

    /* without the flag it is just a file */
    CHECK_INT(slurp(p, 0, 0, &b, &e), 0);
    CHECK_STR(buf_str(&b), "{}");
    buf_release(&b);

    CHECK_INT(chmod(p, 0620), 0);
    CHECK_INT(slurp(p, FILE_SECRET, 0, &b, &e), -EACCES);
    CHECK_CONTAINS(e.msg, "can be changed by others");
    buf_release(&b);

    CHECK_INT(chmod(p, 0600), 0);
    CHECK_INT(slurp(p, FILE_SECRET, 0, &b, &e), 0);
    CHECK_STR(buf_str(&b), "{}");
    buf_release(&b);

    CHECK_INT(file_check_private(p, &e), 0);
    CHECK_INT(chmod(p, 0640), 0);
    CHECK_INT(file_check_private(p, &e), -EACCES);
    CHECK_CONTAINS(e.msg, "chmod 600");
    CHECK_INT(file_check_private(tpath("nope"), &e), -ENOENT);

    /* a quote in the name is quoted for the shell */
    const char *q = tpath("it's");
    put(q, "x", 0644);
    CHECK_INT(file_check_private(q, &e), -EACCES);
    CHECK_CONTAINS(e.msg, "it'\\''s'");

    /* owned by someone else: only root can arrange that */
    if (geteuid() == 0) {
        CHECK_INT(chmod(p, 0600), 0);
        CHECK_INT(chown(p, 65534, 65534), 0);
        CHECK_INT(slurp(p, FILE_SECRET, 0, &b, &e), -EACCES);
        CHECK_CONTAINS(e.msg, "is owned by ");
        CHECK_CONTAINS(e.msg, "65534");
        buf_release(&b);
        CHECK_INT(file_check_private(p, &e), -EACCES);
        CHECK_INT(chown(p, 0, 0), 0);
    }
    unsetenv("HOME");
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* In a child: try the lock with timeout_ms; exit 0 when the result is `want`. */
static int child_try_lock(const char *path, int64_t timeout_ms, int want)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        struct err e = ERR_INIT;
        struct file_lock *l = NULL;
        int64_t t0 = now_ms();
        int r = file_lock_acquire(path, timeout_ms, &l, &e);
        int64_t took = now_ms() - t0;
        file_lock_release(l);
        if (r != want) {
            fprintf(stderr, "child: got %d want %d (%s)\n", r, want, e.msg);
            _exit(1);
        }
        if (r == -ETIMEDOUT && (took < timeout_ms || !strstr(e.msg, "timed out after")))
            _exit(2);
        _exit(0);
    }
    int status = -1;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static void test_lock(void)
{
    struct err e = ERR_INIT;
    struct file_lock *l = NULL, *l2 = NULL;
    const char *p = tpath("secrets.lock");

    CHECK_INT(file_lock_acquire(p, 1000, &l, &e), 0);
    CHECK(l != NULL);
    CHECK_INT(mode_of(p), 0600);

    /* another process waits, then gives up */
    CHECK_INT(child_try_lock(p, 200, -ETIMEDOUT), 0);

    /* so does another open in this process */
    CHECK_INT(file_lock_acquire(p, 50, &l2, &e), -ETIMEDOUT);
    CHECK(l2 == NULL);
    CHECK_CONTAINS(e.msg, "timed out after 50ms waiting for the lock on '");
    CHECK_CONTAINS(e.msg, "secrets.lock': another process holds it");

    file_lock_release(l);
    l = NULL;
    CHECK_INT(child_try_lock(p, 2000, 0), 0);

    /* released when the holder goes away without releasing */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct file_lock *cl = NULL;
        if (file_lock_acquire(p, 1000, &cl, NULL) < 0)
            _exit(1);
        _exit(0);
    }
    int status = -1;
    CHECK_INT(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_INT(file_lock_acquire(p, 500, &l, &e), 0);
    file_lock_release(l);
    file_lock_release(NULL);

    err_clear(&e);
    CHECK_INT(file_lock_acquire(tpath("no/such/dir.lock"), 10, &l2, &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "cannot open the lock file");
}

/* A secret file that is a symbolic link is refused, naming the target (a chmod advised for the
 * link would change the target); without FILE_SECRET links are followed. */
static void test_read_secret_symlink(void)
{
    struct err e = ERR_INIT;
    struct buf b;
    const char *target = tpath("real-secret.json");
    const char *link = tpath("linked-secret.json");
    put(target, "{}", 0600);
    CHECK_INT(symlink(target, link), 0);
    CHECK_INT(slurp(link, FILE_SECRET, 0, &b, &e), -ELOOP);
    CHECK_CONTAINS(e.msg, "linked-secret.json' is a symbolic link to '");
    CHECK_CONTAINS(e.msg, "real-secret.json'");
    CHECK_CONTAINS(e.msg, "replace the link by the file itself");
    CHECK(strstr(e.msg, "chmod") == NULL);
    CHECK_INT(b.len, 0);
    buf_release(&b);
    CHECK_INT(slurp(link, 0, 0, &b, &e), 0);
    CHECK_STR(buf_str(&b), "{}");
    buf_release(&b);

    /* a target with control characters is shown escaped */
    const char *evil = tpath("evil-link");
    CHECK_INT(symlink("/tmp/\033[2Jx", evil), 0);
    err_clear(&e);
    CHECK_INT(slurp(evil, FILE_SECRET, 0, &b, &e), -ELOOP);
    CHECK(strchr(e.msg, 033) == NULL);
    CHECK_CONTAINS(e.msg, "\\x1b[2Jx'");
    buf_release(&b);
}

/* A lock file that is a symbolic link is never followed (nothing is created at its target). */
static void test_lock_symlink_refused(void)
{
    struct err e = ERR_INIT;
    struct file_lock *l = NULL;
    const char *target = tpath("lock-target");
    const char *link = tpath("linked.lock");
    CHECK_INT(symlink(target, link), 0);
    CHECK_INT(file_lock_acquire(link, 10, &l, &e), -ELOOP);
    CHECK(l == NULL);
    CHECK_CONTAINS(e.msg, "linked.lock' is a symbolic link to '");
    CHECK_CONTAINS(e.msg, "remove the link");
    CHECK(access(target, F_OK) < 0);
}

/* A pid that is surely gone: a child that has exited and been reaped. */
static pid_t gone_pid(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    int status;
    (void)waitpid(pid, &status, 0);
    return pid;
}

/* The temporaries a killed writer left are removed by the next write of that file; a live
 * writer's, another file's and the user's own files are not. */
static void test_write_atomic_sweeps_stale(void)
{
    struct err e = ERR_INIT;
    char name[8192];
    const char *p = tpath("swept.json");
    put(p, "old", 0600);

    snprintf(name, sizeof(name), "%s/.swept.json.%ld.Ab12cd", tests_tmpdir(), (long)gone_pid());
    put(name, "stale copy", 0600);
    char live[8192];
    /* our parent is alive: its temporary stays */
    snprintf(live, sizeof(live), "%s/.swept.json.%ld.Ab12cd", tests_tmpdir(), (long)getppid());
    put(live, "live copy", 0600);
    char other[8192];
    snprintf(other, sizeof(other), "%s/.other.json.%ld.Ab12cd", tests_tmpdir(), (long)gone_pid());
    put(other, "x", 0600);
    char backup[8192];
    snprintf(backup, sizeof(backup), "%s/.swept.json.backup", tests_tmpdir());
    put(backup, "mine", 0600);
    char oldfmt[8192], recent[8192];
    snprintf(oldfmt, sizeof(oldfmt), "%s/.swept.json.Qx7Zp2", tests_tmpdir());
    put(oldfmt, "stale, old naming", 0600);
    struct timespec times[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
    CHECK_INT(utimensat(AT_FDCWD, oldfmt, times, 0), 0);
    CHECK_INT(utimensat(AT_FDCWD, backup, times, 0), 0);
    snprintf(recent, sizeof(recent), "%s/.swept.json.Rt5Yq1", tests_tmpdir());
    put(recent, "maybe a writer of the old naming", 0600);

    CHECK_INT(file_write_atomic(p, "new", 3, 0600, &e), 0);
    CHECK(access(name, F_OK) < 0);
    CHECK(access(oldfmt, F_OK) < 0);
    CHECK_INT(access(live, F_OK), 0);
    CHECK_INT(access(other, F_OK), 0);
    CHECK_INT(access(backup, F_OK), 0);
    CHECK_INT(access(recent, F_OK), 0);
    (void)unlink(live);
    (void)unlink(other);
    (void)unlink(backup);
    (void)unlink(recent);
    CHECK_INT(count_prefixed(tests_tmpdir(), ".swept.json."), 0);
}

TESTS_MAIN(test_write_atomic_replaces, test_write_atomic_failures,
           test_write_atomic_midway_failure_keeps_old, test_dir_ensure, test_read_refuses_non_files,
           test_read_size_cap, test_read_secret, test_read_secret_symlink, test_lock,
           test_lock_symlink_refused, test_write_atomic_sweeps_stale, test_owner_only_writes)
