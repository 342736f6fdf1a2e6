/* test_child.c - spawning, feeding, bounding, timing out and reaping children */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "credkit/child.h"

#include "procwatch.h"
#include "tests.h"

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* None of our children is left, reaped or not. */
static void check_no_children(void)
{
    errno = 0;
    CHECK_INT(waitpid(-1, NULL, WNOHANG), -1);
    CHECK_INT(errno, ECHILD);
}

static int run_sh(const char *cmd, const struct child_run_opts *o, struct child_result *res,
                  struct err *e)
{
    struct child_spec spec = {.shell_command = cmd};
    return child_run(&spec, o, res, e);
}

static void test_echo_argv(void)
{
    const char *argv[] = {"echo", "hello", "world", NULL};
    struct child_spec spec = {.argv = argv};
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = child_run(&spec, &o, &res, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    CHECK_STR(buf_str(&res.out), "hello world\n");
    CHECK_INT(res.out.len, 12);
    CHECK_INT(res.exit_code, 0);
    CHECK_INT(res.signal, 0);
    CHECK(!res.timed_out);
    CHECK(!res.out.secret);
    CHECK_INT(res.err.len, 0);
    child_result_release(&res);
    check_no_children();
}

static void test_shell_pipe(void)
{
    struct child_run_opts o = {.timeout_ms = 5000, .secret_output = true};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = run_sh("printf 'a b' | tr a-z A-Z", &o, &res, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    CHECK_STR(buf_str(&res.out), "A B");
    CHECK(res.out.secret);
    CHECK_INT(res.exit_code, 0);
    child_result_release(&res);
}

static void test_exit_code_and_stderr(void)
{
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = run_sh("echo out; echo oops >&2; exit 3", &o, &res, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    CHECK_INT(res.exit_code, 3);
    CHECK_INT(res.signal, 0);
    CHECK_STR(buf_str(&res.err), "oops\n");
    CHECK_STR(buf_str(&res.out), "out\n");
    child_result_release(&res);
}

static void test_killed_by_signal(void)
{
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = run_sh("kill -USR1 $$", &o, &res, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    CHECK_INT(res.exit_code, -1);
    CHECK_INT(res.signal, SIGUSR1);
    CHECK(!res.timed_out);
    child_result_release(&res);
}

static void test_stdin_data(void)
{
    const char *argv[] = {"cat", NULL};
    struct child_spec spec = {.argv = argv};
    struct child_run_opts o = {
        .timeout_ms = 5000, .stdin_data = "line one\nline two", .stdin_len = 17};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = child_run(&spec, &o, &res, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    CHECK_STR(buf_str(&res.out), "line one\nline two");
    CHECK_INT(res.exit_code, 0);
    child_result_release(&res);
}

/* More than a pipe holds, both ways at once: only a real poll loop gets through. */
static void test_stdin_large_roundtrip(void)
{
    size_t n = 3 * 1024 * 1024;
    char *data = malloc(n);
    CHECK(data != NULL);
    if (!data)
        return;
    for (size_t i = 0; i < n; i++)
        data[i] = (char)('a' + i % 26);
    const char *argv[] = {"cat", NULL};
    struct child_spec spec = {.argv = argv};
    struct child_run_opts o = {
        .timeout_ms = 20000, .max_stdout = n, .stdin_data = data, .stdin_len = n};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = child_run(&spec, &o, &res, &e);
    CHECK_INT(r, 0);
    if (r == 0) {
        CHECK_INT(res.out.len, n);
        CHECK(res.out.len == n && memcmp(res.out.data, data, n) == 0);
        child_result_release(&res);
    }
    free(data);
}

/* The child stops reading: EPIPE for us, not a SIGPIPE that would kill the test. */
static void test_stdin_not_read(void)
{
    size_t n = 1024 * 1024;
    char *data = calloc(1, n);
    CHECK(data != NULL);
    if (!data)
        return;
    struct child_run_opts o = {.timeout_ms = 5000, .stdin_data = data, .stdin_len = n};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = run_sh("head -c 10 >/dev/null; echo read", &o, &res, &e);
    CHECK_INT(r, 0);
    if (r == 0) {
        CHECK_STR(buf_str(&res.out), "read\n");
        CHECK_INT(res.exit_code, 0);
        child_result_release(&res);
    }
    sigset_t pending;
    sigpending(&pending);
    CHECK(!sigismember(&pending, SIGPIPE));
    free(data);
}

static void test_not_found(void)
{
    const char *argv[] = {"no-such-command-xyzzy", "arg", NULL};
    struct child_spec spec = {.argv = argv};
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res = {.exit_code = 42};
    struct err e = ERR_INIT;
    int r = child_run(&spec, &o, &res, &e);
    CHECK_INT(r, -ENOENT);
    CHECK_INT(e.code, -ENOENT);
    CHECK_STR(e.msg, "cannot run 'no-such-command-xyzzy': No such file or directory");
    CHECK_INT(res.exit_code, 42); /* untouched on failure */
    check_no_children();

    struct child *c = NULL;
    err_clear(&e);
    r = child_spawn(&spec, &c, &e);
    CHECK_INT(r, -ENOENT);
    CHECK(c == NULL);
    CHECK_CONTAINS(e.msg, "no-such-command-xyzzy");
    check_no_children();
}

static void test_not_executable(void)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/not-exec.sh", tests_tmpdir());
    FILE *f = fopen(path, "we");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("#!/bin/sh\necho hi\n", f);
    fclose(f);
    chmod(path, 0644);
    const char *argv[] = {path, NULL};
    struct child_spec spec = {.argv = argv};
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = child_run(&spec, &o, &res, &e);
    CHECK_INT(r, -EACCES); /* root too: no execute bit anywhere */
    CHECK_CONTAINS(e.msg, "not-exec.sh");
    CHECK_CONTAINS(e.msg, "Permission denied");
    if (r == 0)
        child_result_release(&res);
    check_no_children();
}

static void test_bad_cwd(void)
{
    const char *argv[] = {"pwd", NULL};
    struct child_spec spec = {.argv = argv, .cwd = "/nonexistent/dir/xyzzy"};
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = child_run(&spec, &o, &res, &e);
    CHECK_INT(r, -ENOENT);
    CHECK_CONTAINS(e.msg, "'/nonexistent/dir/xyzzy'");
    if (r == 0)
        child_result_release(&res);
    check_no_children();
}

static void test_timeout_kills_grandchild(void)
{
    char pidfile[4200], cmd[8500];
    snprintf(pidfile, sizeof(pidfile), "%s/grandchild.pid", tests_tmpdir());
    snprintf(cmd, sizeof(cmd), "sleep 30 & echo $! > '%s'; wait", pidfile);
    struct child_run_opts o = {.timeout_ms = 300};
    struct child_result res;
    struct err e = ERR_INIT;
    int64_t t0 = mono_ms();
    int r = run_sh(cmd, &o, &res, &e);
    int64_t took = mono_ms() - t0;
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    CHECK(res.timed_out);
    CHECK_INT(res.signal, SIGTERM);
    CHECK_INT(res.exit_code, -1);
    CHECK(took >= 300);
    CHECK(took < 5000);
    child_result_release(&res);
    check_no_children();

    FILE *f = fopen(pidfile, "re");
    CHECK(f != NULL);
    if (!f)
        return;
    int gpid = 0;
    CHECK_INT(fscanf(f, "%d", &gpid), 1);
    fclose(f);
    CHECK(gpid > 1);
    if (gpid > 1)
        CHECK(wait_gone(gpid, 2000));
}

static void test_term_ignored_gets_kill(void)
{
    struct child_run_opts o = {.timeout_ms = 200, .kill_grace_ms = 300};
    struct child_result res;
    struct err e = ERR_INIT;
    int64_t t0 = mono_ms();
    int r = run_sh("trap '' TERM; sleep 30; echo survived", &o, &res, &e);
    int64_t took = mono_ms() - t0;
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    CHECK(res.timed_out);
    CHECK_INT(res.signal, SIGKILL);
    CHECK_INT(res.out.len, 0);
    CHECK(took >= 500);
    CHECK(took < 5000);
    child_result_release(&res);
    check_no_children();
}

static void test_stdout_overflow(void)
{
    struct child_run_opts o = {.timeout_ms = 10000, .max_stdout = 1024 * 1024};
    struct child_result res = {.exit_code = 42};
    struct err e = ERR_INIT;
    int64_t t0 = mono_ms();
    int r = run_sh("head -c 2000000 /dev/zero; sleep 30", &o, &res, &e);
    CHECK_INT(r, -E2BIG);
    CHECK_STR(e.msg, "output exceeds 1048576 bytes");
    CHECK_INT(res.exit_code, 42);
    CHECK(mono_ms() - t0 < 5000); /* killed, not waited for */
    if (r == 0)
        child_result_release(&res);
    check_no_children();

    /* exactly at the limit is fine */
    o.max_stdout = 1000;
    r = run_sh("head -c 1000 /dev/zero", &o, &res, &e);
    CHECK_INT(r, 0);
    if (r == 0) {
        CHECK_INT(res.out.len, 1000);
        child_result_release(&res);
    }
}

static void test_stderr_truncated(void)
{
    struct child_run_opts o = {.timeout_ms = 10000, .max_stderr = 1000};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = run_sh("head -c 300000 /dev/zero | tr '\\0' x >&2; echo done", &o, &res, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    CHECK_INT(res.err.len, 1000);
    CHECK_INT(res.err.data ? res.err.data[999] : 0, 'x');
    CHECK_STR(buf_str(&res.out), "done\n");
    CHECK_INT(res.exit_code, 0);
    child_result_release(&res);
}

static void test_env_minimal(void)
{
    CHECK_INT(setenv("LEAKY_SECRET", "hunter2", 1), 0);
    char **env = NULL;
    CHECK_INT(child_env_minimal(&env), 0);
    CHECK_INT(child_env_set(&env, "FOO", "bar"), 0);
    CHECK_INT(child_env_set(&env, "FOO2", "x"), 0);
    CHECK_INT(child_env_set(&env, "FOO", "baz"), 0); /* replaces */
    CHECK_INT(child_env_set(&env, "BAD=NAME", "x"), -EINVAL);
    CHECK_INT(child_env_set(&env, "", "x"), -EINVAL);

    const char *argv[] = {"env", NULL};
    struct child_spec spec = {.argv = argv, .envp = (const char *const *)env};
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = child_run(&spec, &o, &res, &e);
    CHECK_INT(r, 0);
    if (r == 0) {
        const char *out = buf_str(&res.out);
        CHECK_CONTAINS(out, "FOO=baz\n");
        CHECK_CONTAINS(out, "FOO2=x\n");
        CHECK(!strstr(out, "FOO=bar"));
        CHECK(!strstr(out, "LEAKY_SECRET"));
        CHECK(!strstr(out, "hunter2"));
        if (getenv("PATH"))
            CHECK_CONTAINS(out, "PATH=");
        child_result_release(&res);
    }
    child_env_free(env);
    child_env_free(NULL);

    /* from nothing */
    env = NULL;
    CHECK_INT(child_env_set(&env, "ONLY", "one"), 0);
    CHECK(env && env[0] && !env[1]);
    if (env && env[0])
        CHECK_STR(env[0], "ONLY=one");
    child_env_free(env);
    unsetenv("LEAKY_SECRET");
}

static void test_env_inherit(void)
{
    CHECK_INT(setenv("INHERITED_VAR", "yes it is", 1), 0);
    const char *argv[] = {"env", NULL};
    struct child_spec spec = {.argv = argv};
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = child_run(&spec, &o, &res, &e);
    CHECK_INT(r, 0);
    if (r == 0) {
        CHECK_CONTAINS(buf_str(&res.out), "INHERITED_VAR=yes it is\n");
        child_result_release(&res);
    }

    char **env = NULL;
    CHECK_INT(child_env_inherit(&env), 0);
    bool found = false;
    for (size_t i = 0; env && env[i]; i++)
        found |= strcmp(env[i], "INHERITED_VAR=yes it is") == 0;
    CHECK(found);
    child_env_free(env);
    unsetenv("INHERITED_VAR");
}

static void test_cwd(void)
{
    char real[PATH_MAX];
    CHECK(realpath(tests_tmpdir(), real) != NULL);
    const char *argv[] = {"pwd", "-P", NULL};
    struct child_spec spec = {.argv = argv, .cwd = tests_tmpdir()};
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = child_run(&spec, &o, &res, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    buf_trim(&res.out);
    CHECK_STR(buf_str(&res.out), real);
    child_result_release(&res);
}

/* The child exits at once; its background job writes 200 ms later through the same pipe. */
static void test_grandchild_holds_stdout(void)
{
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    int64_t t0 = mono_ms();
    int r = run_sh("(sleep 0.2; echo late) & echo early", &o, &res, &e);
    int64_t took = mono_ms() - t0;
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    CHECK_STR(buf_str(&res.out), "early\nlate\n");
    CHECK_INT(res.exit_code, 0);
    CHECK(!res.timed_out);
    CHECK(took >= 150);
    CHECK(took < 4000);
    child_result_release(&res);
    check_no_children();
}

static void test_unpiped_stdio_is_devnull(void)
{
    /* stdin is /dev/null without stdin_data: cat ends at once */
    const char *argv[] = {"cat", NULL};
    struct child_spec spec = {.argv = argv};
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = child_run(&spec, &o, &res, &e);
    CHECK_INT(r, 0);
    if (r == 0) {
        CHECK_INT(res.out.len, 0);
        CHECK_INT(res.exit_code, 0);
        CHECK(!res.timed_out);
        child_result_release(&res);
    }
    /* no descriptor of ours leaks: beyond 0, 1, 2 the child holds only what we hold without
     * FD_CLOEXEC (whatever our own parent leaked to us), in particular none of our pipes */
    bool inheritable[1024] = {false};
    for (int fd = 3; fd < 1024; fd++) {
        int fl = fcntl(fd, F_GETFD);
        inheritable[fd] = fl >= 0 && !(fl & FD_CLOEXEC);
    }
    int keep = open("/dev/null", O_RDONLY | O_CLOEXEC); /* one of ours, to look for */
    CHECK(keep >= 0);
    r = run_sh("ls /proc/$$/fd", &o, &res, &e);
    CHECK_INT(r, 0);
    if (r == 0) {
        int n = 0, leaked = 0;
        char *save = NULL;
        for (char *tok = strtok_r(res.out.data, "\n", &save); tok;
             tok = strtok_r(NULL, "\n", &save)) {
            int fd = atoi(tok);
            n++;
            if (fd > 2 && (fd >= 1024 || !inheritable[fd])) {
                fprintf(stderr, "leaked fd %d\n", fd);
                leaked++;
            }
        }
        CHECK(n >= 3);
        CHECK_INT(leaked, 0);
        child_result_release(&res);
    }
    if (keep >= 0)
        close(keep);
}

/* O_NONBLOCK is on our ends only: a child must see ordinary blocking stdio */
static void test_child_ends_blocking(void)
{
    struct child_run_opts o = {.timeout_ms = 5000, .stdin_data = "x", .stdin_len = 1};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = run_sh("for f in 0 1 2; do sed -n 's/^flags:[[:space:]]*//p' /proc/$$/fdinfo/$f; done",
                   &o, &res, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    int lines = 0;
    char *save = NULL;
    for (char *tok = strtok_r(res.out.data, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
        long flags = strtol(tok, NULL, 8);
        CHECK(!(flags & O_NONBLOCK));
        CHECK(!(flags & O_CLOEXEC)); /* 02000000 in fdinfo: the child's stdio survives exec */
        lines++;
    }
    CHECK_INT(lines, 3);
    child_result_release(&res);
}

static void test_signals_reset(void)
{
    /* an ignored SIGTERM in the parent must not be inherited */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigaction(SIGTERM, &ign, &old);
    sigset_t block, oldmask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &oldmask);
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    int r = run_sh("grep -E '^(SigIgn|SigBlk)' /proc/self/status", &o, &res, &e);
    sigaction(SIGTERM, &old, NULL);
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    /* the shell itself ignores nothing when started non-interactively with -c */
    CHECK_CONTAINS(buf_str(&res.out), "SigBlk:\t0000000000000000\n");
    CHECK_CONTAINS(buf_str(&res.out), "SigIgn:\t0000000000000000\n");
    child_result_release(&res);
}

static void test_async_cat(void)
{
    const char *argv[] = {"cat", NULL};
    struct child_spec spec = {.argv = argv, .flags = CHILD_STDIN_PIPE | CHILD_STDOUT_PIPE};
    struct child *c = NULL;
    struct err e = ERR_INIT;
    int r = child_spawn(&spec, &c, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        return;
    CHECK(child_pid(c) > 0);
    CHECK_INT(getpgid(child_pid(c)), child_pid(c)); /* its own group */
    CHECK(child_stdin_fd(c) >= 0);
    CHECK(child_stdout_fd(c) >= 0);
    CHECK_INT(child_stderr_fd(c), -1);
    CHECK(fcntl(child_stdout_fd(c), F_GETFL) & O_NONBLOCK);
    CHECK(fcntl(child_stdout_fd(c), F_GETFD) & FD_CLOEXEC);
    CHECK(fcntl(child_stdin_fd(c), F_GETFD) & FD_CLOEXEC);

    int st = -1;
    CHECK_INT(child_wait(c, false, &st), 0); /* still running */
    CHECK_INT(write(child_stdin_fd(c), "ping\n", 5), 5);
    child_close_stdin(c);
    CHECK_INT(child_stdin_fd(c), -1);

    char got[64];
    size_t len = 0;
    int64_t end = mono_ms() + 5000;
    for (;;) {
        struct pollfd p = {.fd = child_stdout_fd(c), .events = POLLIN};
        int64_t left = end - mono_ms();
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t n = read(p.fd, got + len, sizeof(got) - 1 - len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    got[len] = 0;
    CHECK_STR(got, "ping\n");
    CHECK_INT(child_wait(c, true, &st), 1);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = -1;
    CHECK_INT(child_wait(c, false, &st), 1); /* remembered */
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    child_free(c);
    check_no_children();
}

static void test_async_kill_and_free(void)
{
    const char *argv[] = {"sleep", "30", NULL};
    struct child_spec spec = {.argv = argv};
    struct child *c = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(child_spawn(&spec, &c, &e), 0);
    if (!c)
        return;
    CHECK_INT(child_kill(c, SIGTERM), 0);
    int st = 0;
    CHECK_INT(child_wait(c, true, &st), 1);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    CHECK_INT(child_kill(c, SIGTERM), 0); /* group gone: ESRCH is success */
    child_free(c);

    /* freeing a running child kills and reaps it */
    c = NULL;
    CHECK_INT(child_spawn(&spec, &c, &e), 0);
    if (!c)
        return;
    pid_t pid = child_pid(c);
    int64_t t0 = mono_ms();
    child_free(c);
    CHECK(mono_ms() - t0 < 2000);
    CHECK(process_gone(pid));
    check_no_children();
    child_free(NULL);
}

/* Waits up to ms for fd to become readable. */
static bool readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

/* The stop's steps: SIGTERM at once, SIGKILL when due (not before), the exit on the pidfd. */
static void test_stop_steps(void)
{
    const char *argv[] = {"sh", "-c", "trap '' TERM; echo up; exec sleep 30", NULL};
    struct child_spec spec = {.argv = argv, .flags = CHILD_STDOUT_PIPE};
    struct child *c = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(child_spawn(&spec, &c, &e), 0);
    if (!c)
        return;
    CHECK(readable(child_stdout_fd(c), 5000)); /* its trap is set */
    int pidfd = child_pidfd(c);
    CHECK_INT(child_pidfd(c), pidfd); /* one, kept */
    int64_t now = mono_ms();
    CHECK_INT(child_stop_deadline(c), INT64_MAX);
    child_stop(c, now, 0, 300);
    CHECK_INT(child_stop_step(c, now), CHILD_STOP_KILL_DUE); /* SIGTERM sent */
    CHECK_INT(child_stop_deadline(c), now + 300);
    if (pidfd >= 0)
        CHECK(!readable(pidfd, 100)); /* it ignores SIGTERM */
    CHECK_INT(child_wait(c, false, NULL), 0);
    child_stop(c, now, 0, 0); /* SIGTERM sent already: nothing changes */
    CHECK_INT(child_stop_deadline(c), now + 300);
    CHECK_INT(child_stop_step(c, now + 300), CHILD_STOP_KILLED);
    CHECK_INT(child_stop_deadline(c), INT64_MAX);
    if (pidfd >= 0)
        CHECK(readable(pidfd, 5000));
    int st = 0;
    CHECK_INT(child_wait(c, true, &st), 1);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    child_free(c);
    check_no_children();
}

/* CHILD_EXEC_LATER: child_spawn() returns before the exec; the report tells it later. */
static void test_exec_later(void)
{
    const char *bad[] = {"credkit-no-such-command", NULL};
    struct child_spec spec = {.argv = bad, .flags = CHILD_EXEC_LATER};
    struct child *c = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(child_spawn(&spec, &c, &e), 0);
    if (!c)
        return;
    CHECK(child_exec_fd(c) >= 0);
    CHECK(readable(child_exec_fd(c), 5000));
    CHECK_INT(child_exec_result(c, &e), -ENOENT);
    CHECK_STR(err_msg(&e), "cannot run 'credkit-no-such-command': No such file or directory");
    CHECK_INT(child_exec_fd(c), -1);
    int st = 0;
    CHECK_INT(child_wait(c, true, &st), 1);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 127);
    child_free(c);

    const char *ok[] = {"true", NULL};
    spec.argv = ok;
    c = NULL;
    CHECK_INT(child_spawn(&spec, &c, &e), 0);
    if (!c)
        return;
    CHECK(readable(child_exec_fd(c), 5000));
    CHECK_INT(child_exec_result(c, &e), 0);
    CHECK_INT(child_exec_result(c, &e), 0);
    child_free(c);
    check_no_children();
}

static void test_bad_args(void)
{
    struct child_spec spec = {0};
    struct child_run_opts o = {.timeout_ms = 5000};
    struct child_result res;
    struct err e = ERR_INIT;
    CHECK_INT(child_run(&spec, &o, &res, &e), -EINVAL);
    struct child_spec sh = {.shell_command = "true"};
    o.timeout_ms = 0;
    CHECK_INT(child_run(&sh, &o, &res, &e), -EINVAL);
    struct child *c = NULL;
    sh.flags = CHILD_STDERR_PIPE | CHILD_STDERR_INHERIT;
    CHECK_INT(child_spawn(&sh, &c, &e), -EINVAL);
    CHECK(c == NULL);
    check_no_children();
}

TESTS_MAIN(test_echo_argv, test_shell_pipe, test_exit_code_and_stderr, test_killed_by_signal,
           test_stdin_data, test_stdin_large_roundtrip, test_stdin_not_read, test_not_found,
           test_not_executable, test_bad_cwd, test_timeout_kills_grandchild,
           test_term_ignored_gets_kill, test_stdout_overflow, test_stderr_truncated,
           test_env_minimal, test_env_inherit, test_cwd, test_grandchild_holds_stdout,
           test_unpiped_stdio_is_devnull, test_child_ends_blocking, test_signals_reset,
           test_async_cat, test_async_kill_and_free, test_stop_steps, test_exec_later,
           test_bad_args)
