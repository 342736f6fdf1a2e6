/* test_stdio.c - MCP servers as child processes, the stdio transport: cat as an echo server
 * (100 messages in order, with pidfd and with the waitpid poll), stderr lines to the log
 * callback (CRLF, empty, cut at 4 KiB), the minimal environment and cwd, a server that answers
 * and exits by itself, a frame over the bound, the shutdown sequence (exit on stdin EOF, on
 * SIGTERM, SIGKILL after the grace), a grandchild holding stdout killed with the group, command
 * not found, free while running and from inside a callback, and no zombie left at the end. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credkit/util.h"

#include "core/loop.h"
#include "transport/stdio_child.h"
#include "procwatch.h"
#include "tests.h"

__attribute__((constructor)) static void ignore_sigpipe(void)
{
    /* as mcp-bridge's main does */
    signal(SIGPIPE, SIG_IGN);
}

static struct loop *new_loop(void)
{
    struct loop *l = NULL;
    int r = loop_new(&l);
    CHECK_INT(r, 0);
    if (r < 0)
        exit(2);
    return l;
}

static void timeout_cb(struct loop_timer *t, void *userdata)
{
    (void)t;
    loop_quit(userdata, -ETIMEDOUT);
}

/* Runs until a callback quits (0) or ms pass (-ETIMEDOUT). */
static int run_for(struct loop *l, int64_t ms)
{
    struct loop_timer *t = NULL;
    CHECK_INT(loop_timer_add(l, ms, timeout_cb, l, &t), 0);
    int r = loop_run(l);
    loop_timer_cancel(t);
    return r;
}

/* Whether the loop has nothing left to wait for; a watcher left behind would make loop_run()
 * wait forever: SIGALRM ends the test then. */
static bool loop_ran_out(struct loop *l)
{
    alarm(10);
    int r = loop_run(l);
    alarm(0);
    return r == 0;
}

/* ---- a recording handler ---- */

#define LINES_MAX 256

struct srec {
    struct loop *l;
    struct stdio_child *s;
    int n;         /* messages */
    int bad_order; /* messages not as expected ({"id":N} in order) */
    char *last;    /* the last message */
    char *lines[LINES_MAX];
    size_t line_len[LINES_MAX];
    int nlines;
    int closes, close_reason, exits, status; /* closes: on_lost; exits: on_done */
    char why[128];                           /* on_lost's */
    int open_failed, open_error;             /* on_open_failed */
    char open_msg[256];
    int close_before_exit;
    int messages_after_close;
    int64_t t_exit;
    int quit_after; /* messages */
    const char *quit_on_line_prefix;
    bool free_on_message;
    bool check_ids;
};

static void s_message(const char *msg, size_t len, void *userdata)
{
    struct srec *r = userdata;
    if (r->closes)
        r->messages_after_close++;
    if (r->check_ids) {
        char want[64];
        int n = snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"id\":%d}", r->n);
        if ((size_t)n != len || memcmp(msg, want, len) != 0)
            r->bad_order++;
    }
    free(r->last);
    r->last = strndup(msg, len);
    r->n++;
    if (r->free_on_message) {
        stdio_child_free(r->s);
        r->s = NULL;
        loop_quit(r->l, 0);
    }
    if (r->quit_after && r->n == r->quit_after)
        loop_quit(r->l, 0);
}

static void s_stderr(const char *line, size_t len, void *userdata)
{
    struct srec *r = userdata;
    CHECK(len > 0 && len <= STDIO_CHILD_STDERR_LINE);
    CHECK(memchr(line, '\n', len) == NULL);
    if (r->nlines < LINES_MAX) {
        r->lines[r->nlines] = strndup(line, len);
        r->line_len[r->nlines] = len;
        r->nlines++;
    }
    if (r->quit_on_line_prefix &&
        strncmp(line, r->quit_on_line_prefix, strlen(r->quit_on_line_prefix)) == 0)
        loop_quit(r->l, 0);
}

static void s_lost(int reason, const char *why, void *userdata)
{
    struct srec *r = userdata;
    r->closes++;
    r->close_reason = reason;
    snprintf(r->why, sizeof(r->why), "%s", why);
}

static void s_done(void *userdata)
{
    struct srec *r = userdata;
    r->exits++;
    r->status = stdio_child_status(r->s);
    r->close_before_exit = r->closes;
    r->t_exit = now_mono_ms();
    loop_quit(r->l, 0);
}

static void s_open_failed(int error, const char *message, void *userdata)
{
    struct srec *r = userdata;
    r->open_failed++;
    r->open_error = error;
    snprintf(r->open_msg, sizeof(r->open_msg), "%s", message);
}

static const struct transport_handler s_handler = {
    .on_message = s_message,
    .on_stderr = s_stderr,
    .on_lost = s_lost,
    .on_done = s_done,
    .on_open_failed = s_open_failed,
};

static void srec_release(struct srec *r)
{
    stdio_child_free(r->s);
    r->s = NULL;
    free(r->last);
    r->last = NULL;
    for (int i = 0; i < r->nlines; i++)
        free(r->lines[i]);
    r->nlines = 0;
}

static int start(struct loop *l, struct srec *r, struct stdio_child_spec *spec)
{
    struct err e = ERR_INIT;
    r->l = l;
    int ret = stdio_child_new(l, spec, &s_handler, r, &r->s, &e);
    if (ret < 0)
        fprintf(stderr, "start: %s\n", err_msg(&e));
    return ret;
}

static bool has_line(const struct srec *r, const char *s)
{
    for (int i = 0; i < r->nlines; i++)
        if (strcmp(r->lines[i], s) == 0)
            return true;
    return false;
}

static bool has_line_prefix(const struct srec *r, const char *s)
{
    for (int i = 0; i < r->nlines; i++)
        if (strncmp(r->lines[i], s, strlen(s)) == 0)
            return true;
    return false;
}

static bool no_zombies(void)
{
    errno = 0;
    return waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD;
}

/* "pid <grandchild> <server>", as the scripts below print it: both, when positive. */
static bool two_pids(const char *line, pid_t *ret_grandchild, pid_t *ret_server)
{
    int g = 0, sv = 0;
    if (sscanf(line, "pid %d %d", &g, &sv) != 2 || g <= 0 || sv <= 0)
        return false;
    *ret_grandchild = (pid_t)g;
    *ret_server = (pid_t)sv;
    return true;
}

/* ---- tests ---- */

static void echo_100(bool poll_exit)
{
    struct loop *l = new_loop();
    const char *argv[] = {"cat", NULL};
    struct stdio_child_spec spec = {.argv = argv, .term_after_ms = 5000, .poll_exit = poll_exit};
    struct srec r = {.quit_after = 100, .check_ids = true};
    CHECK_INT(start(l, &r, &spec), 0);
    if (!r.s) {
        loop_free(l);
        return;
    }
    for (int i = 0; i < 100; i++) {
        char m[64];
        int n = snprintf(m, sizeof(m), "{\"jsonrpc\":\"2.0\",\"id\":%d}", i);
        CHECK_INT(stdio_child_send(r.s, m, (size_t)n), 0);
    }
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.n, 100);
    CHECK_INT(r.bad_order, 0);
    CHECK_INT(r.closes, 0);

    /* cat exits on stdin EOF: quick, status 0, on_close first */
    int64_t t0 = now_mono_ms();
    stdio_child_shutdown(r.s);
    stdio_child_shutdown(r.s); /* idempotent */
    CHECK_INT(stdio_child_send(r.s, "{}", 2), -ESHUTDOWN);
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.exits, 1);
    CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    CHECK_INT(r.close_before_exit, 1);
    CHECK_INT(r.close_reason, -ECONNRESET); /* an ordinary end, said at the exit */
    CHECK_STR(r.why, "the server exited with status 0");
    CHECK(r.t_exit - t0 < 1000);
    CHECK_INT(r.messages_after_close, 0);
    srec_release(&r);
    loop_free(l);
    CHECK(no_zombies());
}

static void test_echo(void)
{
    echo_100(false);
}

static void test_echo_poll(void)
{
    echo_100(true);
}

static void test_stderr_lines(void)
{
    struct loop *l = new_loop();
    const char *argv[] = {
        "sh", "-c",
        "echo oops >&2; printf 'crlf\\r\\n\\n\\r\\n' >&2; printf '%10000s\\n' '' | tr ' ' x >&2;"
        "printf '%4096s\\n' '' | tr ' ' y >&2; echo tail >&2; printf 'no newline' >&2; exec cat",
        NULL};
    struct stdio_child_spec spec = {.argv = argv};
    struct srec r = {0};
    CHECK_INT(start(l, &r, &spec), 0);
    if (!r.s) {
        loop_free(l);
        return;
    }
    r.quit_on_line_prefix = "tail";
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.nlines, 5);
    if (r.nlines == 5) {
        CHECK_STR(r.lines[0], "oops");
        CHECK_STR(r.lines[1], "crlf");
        /* cut at 4 KiB, the rest of the line dropped */
        CHECK_INT(r.line_len[2], STDIO_CHILD_STDERR_LINE);
        CHECK(strspn(r.lines[2], "x") == STDIO_CHILD_STDERR_LINE);
        /* exactly 4 KiB is whole, once */
        CHECK_INT(r.line_len[3], STDIO_CHILD_STDERR_LINE);
        CHECK(strspn(r.lines[3], "y") == STDIO_CHILD_STDERR_LINE);
        CHECK_STR(r.lines[4], "tail");
    }
    /* an unterminated last line comes when stderr closes */
    r.quit_on_line_prefix = NULL;
    stdio_child_shutdown(r.s);
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.exits, 1);
    CHECK_INT(r.nlines, 6);
    if (r.nlines == 6)
        CHECK_STR(r.lines[5], "no newline");
    CHECK_INT(r.n, 0);
    srec_release(&r);
    loop_free(l);
}

static void test_stderr_long_line_at_once(void)
{
    /* a full 4 KiB is said at once, without waiting for a newline that may never come */
    struct loop *l = new_loop();
    const char *argv[] = {"sh", "-c", "printf '%5000s' '' | tr ' ' z >&2; exec cat", NULL};
    struct stdio_child_spec spec = {.argv = argv};
    struct srec r = {.quit_on_line_prefix = "z"};
    CHECK_INT(start(l, &r, &spec), 0);
    if (!r.s) {
        loop_free(l);
        return;
    }
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.nlines, 1);
    CHECK_INT(r.line_len[0], STDIO_CHILD_STDERR_LINE);
    r.quit_on_line_prefix = NULL;
    stdio_child_shutdown(r.s);
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.exits, 1);
    CHECK_INT(r.nlines, 1); /* the rest of the line is dropped, also at EOF */
    srec_release(&r);
    loop_free(l);
}

static void test_environment(void)
{
    struct loop *l = new_loop();
    CHECK_INT(setenv("CREDKIT_TEST_LEAK", "do-not-pass", 1), 0);
    const char *argv[] = {"sh", "-c", "env >&2; pwd >&2; echo done >&2; exec cat", NULL};
    const char *env[] = {"ENTRY_VAR=hello world", "ENTRY_EMPTY=", "ENTRY_EQ=a=b", NULL};
    const char *dir = tests_tmpdir();
    struct stdio_child_spec spec = {.argv = argv, .env = env, .cwd = dir};
    struct srec r = {.quit_on_line_prefix = "done"};
    CHECK_INT(start(l, &r, &spec), 0);
    if (!r.s) {
        loop_free(l);
        return;
    }
    CHECK_INT(run_for(l, 10000), 0);
    CHECK(!has_line_prefix(&r, "CREDKIT_TEST_LEAK="));
    CHECK(has_line(&r, "ENTRY_VAR=hello world"));
    CHECK(has_line(&r, "ENTRY_EMPTY="));
    CHECK(has_line(&r, "ENTRY_EQ=a=b"));
    if (getenv("PATH"))
        CHECK(has_line_prefix(&r, "PATH="));
    CHECK(has_line(&r, dir));
    /* nothing of ours beyond the minimal set (sh itself adds PWD, maybe SHLVL and _) */
    static const char *const allowed[] = {
        "HOME=",  "PATH=", "USER=",   "LOGNAME=", "SHELL=", "TERM=", "LANG=",
        "ENTRY_", "PWD=",  "OLDPWD=", "SHLVL=",   "_=",     "done",  "/"};
    int foreign = 0;
    for (int i = 0; i < r.nlines; i++) {
        bool ok = false;
        for (size_t k = 0; k < ELEMENTSOF(allowed) && !ok; k++)
            ok = strncmp(r.lines[i], allowed[k], strlen(allowed[k])) == 0;
        if (!ok && foreign++ < 5)
            fprintf(stderr, "unexpected in the child's environment: %s\n", r.lines[i]);
    }
    CHECK_INT(foreign, 0);
    CHECK_INT(r.n, 0); /* stdout carried nothing but messages: none */
    r.quit_on_line_prefix = NULL;
    stdio_child_shutdown(r.s);
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.exits, 1);
    srec_release(&r);
    unsetenv("CREDKIT_TEST_LEAK");
    loop_free(l);
}

/* A command that cannot be exec'd: stdio_child_new() does not wait for the exec; the failure
 * comes from the loop, with the message it would have failed with, then on_done. */
static void exec_fails(struct loop *l, struct stdio_child_spec *spec, int want_error,
                       const char *want_msg, bool exact)
{
    struct srec r = {0};
    CHECK_INT(start(l, &r, spec), 0);
    if (!r.s)
        return;
    CHECK_INT(r.open_failed, 0); /* not from inside the call */
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.open_failed, 1);
    CHECK_INT(r.open_error, want_error);
    if (exact)
        CHECK_STR(r.open_msg, want_msg);
    else
        CHECK_CONTAINS(r.open_msg, want_msg);
    CHECK_INT(r.closes, 0); /* no on_lost after it */
    CHECK_INT(r.exits, 1);
    CHECK_INT(r.n, 0);
    srec_release(&r);
}

static void test_start_failures(void)
{
    struct loop *l = new_loop();
    struct stdio_child *s = NULL;
    struct err e = ERR_INIT;
    struct srec r = {.l = l};

    const char *argv[] = {"credkit-no-such-command", "--stdio", NULL};
    struct stdio_child_spec spec = {.argv = argv};
    exec_fails(l, &spec, -ENOENT, "cannot run 'credkit-no-such-command': No such file or directory",
               true);

    const char *argv_cat[] = {"cat", NULL};
    char missing[4200];
    snprintf(missing, sizeof(missing), "%s/missing", tests_tmpdir());
    struct stdio_child_spec spec2 = {.argv = argv_cat, .cwd = missing};
    exec_fails(l, &spec2, -ENOENT, "cannot change to directory", false);

    const char *env[] = {"SECRETVALUE", NULL};
    struct stdio_child_spec spec3 = {.argv = argv_cat, .env = env};
    err_clear(&e);
    CHECK_INT(stdio_child_new(l, &spec3, &s_handler, &r, &s, &e), -EINVAL);
    CHECK(s == NULL);
    CHECK_CONTAINS(err_msg(&e), "cannot run 'cat': invalid environment entry 0");
    CHECK(strstr(err_msg(&e), "SECRETVALUE") == NULL); /* a value is never quoted */

    const char *empty[] = {"", NULL};
    struct stdio_child_spec spec4 = {.argv = empty};
    CHECK_INT(stdio_child_new(l, &spec4, &s_handler, &r, &s, &e), -EINVAL);
    CHECK(s == NULL);
    CHECK(loop_ran_out(l)); /* nothing left on the loop */
    loop_free(l);
    CHECK(no_zombies());
}

/* A server that answers, then exits by itself: the answer first, then on_close, on_exit. */
static void test_server_exits(void)
{
    struct loop *l = new_loop();
    const char *argv[] = {"sh", "-c", "read line; echo \"{\\\"got\\\":$line}\"; exit 5", NULL};
    struct stdio_child_spec spec = {.argv = argv};
    struct srec r = {0};
    CHECK_INT(start(l, &r, &spec), 0);
    if (!r.s) {
        loop_free(l);
        return;
    }
    CHECK_INT(stdio_child_send(r.s, "[42]", 4), 0);
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.n, 1);
    CHECK_STR(r.last, "{\"got\":[42]}");
    CHECK_INT(r.exits, 1);
    CHECK_INT(r.close_before_exit, 1);
    CHECK_INT(r.close_reason, -ECONNRESET);
    CHECK_STR(r.why, "the server exited with status 5");
    CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 5);
    int e = stdio_child_send(r.s, "[1]", 3);
    CHECK(e == -ESHUTDOWN || e == -EPIPE);
    srec_release(&r);
    loop_free(l);
}

static void test_frame_over_bound(void)
{
    struct loop *l = new_loop();
    const char *argv[] = {"sh", "-c", "echo '[1]'; printf '[%100s]\\n' ''; exec cat", NULL};
    struct stdio_child_spec spec = {.argv = argv, .max_frame = 16};
    struct srec r = {0};
    CHECK_INT(start(l, &r, &spec), 0);
    if (!r.s) {
        loop_free(l);
        return;
    }
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.n, 1);
    CHECK_INT(r.closes, 1);
    CHECK_INT(r.close_reason, -E2BIG);
    CHECK_STR(r.why, "the server sent a message over the size bound");
    CHECK_INT(r.exits, 1); /* shut down by itself: cat saw stdin EOF */
    CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    srec_release(&r);
    loop_free(l);
}

static void shutdown_case(const char *script, int64_t term_ms, int64_t kill_ms, int64_t min_ms,
                          int64_t max_ms, int want_exit, int want_signal)
{
    struct loop *l = new_loop();
    const char *argv[] = {"sh", "-c", script, NULL};
    struct stdio_child_spec spec = {
        .argv = argv, .term_after_ms = term_ms, .kill_after_ms = kill_ms};
    struct srec r = {.quit_on_line_prefix = "ready"};
    CHECK_INT(start(l, &r, &spec), 0);
    if (!r.s) {
        loop_free(l);
        return;
    }
    CHECK_INT(run_for(l, 10000), 0); /* its traps are set */
    r.quit_on_line_prefix = NULL;
    int64_t t0 = now_mono_ms();
    stdio_child_shutdown(r.s);
    CHECK_INT(run_for(l, 10000), 0);
    int64_t took = r.t_exit - t0;
    CHECK_INT(r.exits, 1);
    CHECK_INT(r.close_before_exit, 1);
    if (want_signal) {
        CHECK(WIFSIGNALED(r.status));
        CHECK_INT(WIFSIGNALED(r.status) ? WTERMSIG(r.status) : -1, want_signal);
    } else {
        CHECK(WIFEXITED(r.status));
        CHECK_INT(WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1, want_exit);
    }
    if (took < min_ms || took > max_ms)
        fprintf(stderr, "shutdown of '%s' took %lld ms, expected %lld..%lld\n", script,
                (long long)took, (long long)min_ms, (long long)max_ms);
    CHECK(took >= min_ms);
    CHECK(took <= max_ms);
    srec_release(&r);
    loop_free(l);
}

static void test_shutdown_sigterm(void)
{
    /* ignores stdin EOF, exits on SIGTERM (the whole group gets it, the sleep too) */
    shutdown_case("trap 'exit 3' TERM; echo ready >&2; while :; do sleep 0.1; done", 200, 5000, 200,
                  1500, 3, 0);
}

static void test_shutdown_sigkill(void)
{
    /* ignores SIGTERM too (and so does its sleep, which inherits the ignored disposition) */
    shutdown_case("trap '' TERM; echo ready >&2; while :; do sleep 0.1; done", 200, 200, 400, 2000,
                  0, SIGKILL);
}

static void test_shutdown_stdin_eof(void)
{
    /* exits on stdin EOF at once: long grace times are never waited for */
    shutdown_case("echo ready >&2; exec cat", 5000, 5000, 0, 1000, 0, 0);
}

static void test_grandchild_killed(void)
{
    /* the grandchild holds stdout (and stderr): the group goes when the server exits */
    struct loop *l = new_loop();
    const char *argv[] = {"sh", "-c", "sleep 30 & echo \"pid $! $$\" >&2; cat", NULL};
    struct stdio_child_spec spec = {.argv = argv, .term_after_ms = 5000, .kill_after_ms = 5000};
    struct srec r = {.quit_on_line_prefix = "pid "};
    CHECK_INT(start(l, &r, &spec), 0);
    if (!r.s) {
        loop_free(l);
        return;
    }
    CHECK_INT(run_for(l, 10000), 0);
    /* the server's pid (sh's $$) is its process group's id, the grandchild's too */
    pid_t gpid = 0, pgid = 0;
    CHECK(r.nlines == 1 && two_pids(r.lines[0], &gpid, &pgid));
    r.quit_on_line_prefix = NULL;
    CHECK_INT(getpgid(pgid), pgid);
    CHECK_INT(getpgid(gpid), pgid);
    int64_t t0 = now_mono_ms();
    stdio_child_shutdown(r.s);
    CHECK_INT(run_for(l, 20000), 0);
    CHECK_INT(r.exits, 1);
    CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    CHECK(r.t_exit - t0 < 2000); /* not the 5 s bound: the pipes closed when sleep died */
    CHECK(wait_gone((pid_t)gpid, 2000));
    srec_release(&r);
    loop_free(l);
}

/* A server that exits by itself, leaving a process in its group that ignores SIGTERM and
 * does not hold the pipes: on_exit comes at once, the straggler gets SIGKILL kill_after_ms
 * later, or when the upstream is freed before that. */
static void straggler_case(bool free_early)
{
    struct loop *l = new_loop();
    const char *argv[] = {
        "sh", "-c",
        "trap '' TERM; sleep 30 </dev/null >/dev/null 2>&1 & echo \"pid $!\" >&2; exit 7", NULL};
    struct stdio_child_spec spec = {.argv = argv, .kill_after_ms = free_early ? 5000 : 200};
    struct srec r = {0};
    CHECK_INT(start(l, &r, &spec), 0);
    if (!r.s) {
        loop_free(l);
        return;
    }
    int64_t t0 = now_mono_ms();
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.exits, 1);
    CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 7);
    CHECK(r.t_exit - t0 < 1000);
    int64_t gpid = 0;
    CHECK(r.nlines == 1 && parse_int64(r.lines[0] + 4, &gpid) == 0 && gpid > 0);
    CHECK(!process_gone((pid_t)gpid)); /* it ignored the SIGTERM */
    if (free_early) {
        srec_release(&r);
        CHECK(wait_gone((pid_t)gpid, 2000));
    } else {
        CHECK(loop_ran_out(l));           /* the straggler timer, then nothing */
        CHECK(now_mono_ms() - t0 >= 200); /* armed when it was reaped, a little before on_exit */
        CHECK(wait_gone((pid_t)gpid, 2000));
        srec_release(&r);
    }
    if (!process_gone((pid_t)gpid))
        kill((pid_t)gpid, SIGKILL);
    loop_free(l);
}

static void test_straggler_timer(void)
{
    straggler_case(false);
}

static void test_straggler_free(void)
{
    straggler_case(true);
}

static void test_free_while_running(void)
{
    struct loop *l = new_loop();
    const char *argv[] = {"sh", "-c", "trap '' TERM; sleep 30 & echo \"pid $! $$\" >&2; wait",
                          NULL};
    struct stdio_child_spec spec = {.argv = argv};
    struct srec r = {.quit_on_line_prefix = "pid "};
    CHECK_INT(start(l, &r, &spec), 0);
    if (!r.s) {
        loop_free(l);
        return;
    }
    CHECK_INT(run_for(l, 10000), 0);
    pid_t gpid = 0, pid = 0;
    CHECK(r.nlines == 1 && two_pids(r.lines[0], &gpid, &pid));
    int64_t t0 = now_mono_ms();
    srec_release(&r); /* SIGKILL to the group, reaped before it returns */
    CHECK(now_mono_ms() - t0 < 1000);
    CHECK_INT(r.exits, 0); /* no callback from free */
    CHECK(process_gone(pid));
    CHECK(wait_gone((pid_t)gpid, 2000));
    CHECK(no_zombies());
    CHECK(loop_ran_out(l)); /* nothing of it left on the loop */
    loop_free(l);

    /* free from inside on_message (ASan: no use after free) */
    l = new_loop();
    const char *argv_cat[] = {"cat", NULL};
    struct stdio_child_spec spec2 = {.argv = argv_cat};
    struct srec r2 = {.free_on_message = true};
    CHECK_INT(start(l, &r2, &spec2), 0);
    if (!r2.s) {
        loop_free(l);
        return;
    }
    CHECK_INT(stdio_child_send(r2.s, "[1]", 3), 0);
    CHECK_INT(stdio_child_send(r2.s, "[2]", 3), 0);
    CHECK_INT(stdio_child_send(r2.s, "[3]", 3), 0);
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r2.n, 1);
    CHECK(r2.s == NULL);
    CHECK_INT(r2.exits, 0);
    srec_release(&r2);
    loop_free(l);
    CHECK(no_zombies());
}

/* free from inside on_lost */
static void free_on_close(int reason, const char *why, void *userdata)
{
    struct srec *r = userdata;
    (void)why;
    r->closes++;
    r->close_reason = reason;
    stdio_child_free(r->s);
    r->s = NULL;
    loop_quit(r->l, 0);
}

static void test_free_in_close(void)
{
    struct loop *l = new_loop();
    const char *argv[] = {"sh", "-c", "echo '[1]'; exit 0", NULL};
    struct stdio_child_spec spec = {.argv = argv};
    struct transport_handler h = s_handler;
    h.on_lost = free_on_close;
    struct srec r = {.l = l};
    struct err e = ERR_INIT;
    CHECK_INT(stdio_child_new(l, &spec, &h, &r, &r.s, &e), 0);
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(r.n, 1);
    CHECK_INT(r.closes, 1);
    CHECK_INT(r.exits, 0);
    CHECK(r.s == NULL);
    srec_release(&r);
    loop_free(l);
    CHECK(no_zombies());
}

static void test_no_zombies(void)
{
    /* the last test: every child of every test above was reaped */
    CHECK(no_zombies());
}

TESTS_MAIN(test_echo, test_echo_poll, test_stderr_lines, test_stderr_long_line_at_once,
           test_environment, test_straggler_timer, test_straggler_free, test_start_failures,
           test_server_exits, test_frame_over_bound, test_shutdown_sigterm, test_shutdown_sigkill,
           test_shutdown_stdin_eof, test_grandchild_killed, test_free_while_running,
           test_free_in_close, test_no_zombies)
