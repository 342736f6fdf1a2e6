/* test_cred_proc.c - a helper process on the event loop: real children (small shell scripts
 * written at test time), a real loop.
 *
 * Covered: the result comes from the loop, never from inside cred_proc_start(); output, exit
 * status and the first line of stderr; the environment given; the output bound (-E2BIG, the
 * group killed at once) and the stderr cut; the timeout (SIGTERM, then SIGKILL a second later
 * for a helper that ignores it); a helper that closes its output but keeps running; a
 * grandchild holding the pipe; a helper killed by a signal; cancel (no callback, the process
 * gone); exec failures reported at start; input written to stdin (large, or not all read); helper_cmdline_split's quoting and errors;
 * cred_proc_first_line. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "credkit/strv.h"

#include "creds/cred_proc.h"
#include "core/loop.h"
#include "procwatch.h"
#include "tests.h"

#include "loop_wait.h"

/* ---- fixtures ------------------------------------------------------------------------------ */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* tmpdir/name, a shell script with body; the path in a static buffer of its own per call. */
static const char *script(const char *name, const char *body)
{
    static char paths[16][4096];
    static unsigned next;
    char *path = paths[next++ % 16];
    snprintf(path, 4096, "%s/%s", tests_tmpdir(), name);
    FILE *f = fopen(path, "we");
    CHECK(f != NULL);
    if (!f)
        return path;
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    CHECK_INT(chmod(path, 0755), 0);
    return path;
}

static const char *tmp_path(const char *name)
{
    static char paths[8][4096];
    static unsigned next;
    char *path = paths[next++ % 8];
    int n = snprintf(path, 4096, "%s/%s", tests_tmpdir(), name);
    CHECK(n > 0 && n < 4096);
    return path;
}

/* The pid a script wrote to a file, once it is there (0 when it never came). */
static pid_t read_pid(const char *path, int max_ms)
{
    for (int t = 0; t <= max_ms; t += 10) {
        FILE *f = fopen(path, "re");
        long pid = 0;
        if (f) {
            int n = fscanf(f, "%ld", &pid);
            fclose(f);
            if (n == 1 && pid > 0)
                return (pid_t)pid;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* What done saw, copied. */
struct run {
    int calls;
    int error;
    bool had_res;
    int exit_code, signal;
    bool timed_out;
    char *out, *err;
    size_t out_len, err_len;
    int64_t ended_ms;
};

static void run_release(struct run *r)
{
    free(r->out);
    free(r->err);
    *r = (struct run){0};
}

static void on_done(struct cred_proc *p, int error, const struct cred_proc_result *res,
                    void *userdata)
{
    struct run *r = userdata;
    (void)p;
    r->calls++;
    r->error = error;
    r->ended_ms = mono_ms();
    r->had_res = res != NULL;
    if (!res)
        return;
    CHECK(res->out && res->err);
    CHECK(res->out[res->out_len] == '\0' && res->err[res->err_len] == '\0');
    r->exit_code = res->exit_code;
    r->signal = res->signal;
    r->timed_out = res->timed_out;
    r->out_len = res->out_len;
    r->err_len = res->err_len;
    r->out = malloc(res->out_len + 1);
    r->err = malloc(res->err_len + 1);
    CHECK(r->out && r->err);
    if (r->out)
        memcpy(r->out, res->out, res->out_len + 1);
    if (r->err)
        memcpy(r->err, res->err, res->err_len + 1);
}

static bool run_done(void *ctx)
{
    return ((struct run *)ctx)->calls > 0;
}

/* Starts the script at path (no arguments); checks that done did not come from inside start. */
static int start_script(struct loop *l, const char *path, int64_t timeout_ms, size_t max_out,
                        struct run *r, struct cred_proc **ret)
{
    const char *argv[] = {path, NULL};
    struct cred_proc_spec spec = {.argv = argv, .timeout_ms = timeout_ms, .max_out = max_out};
    struct err e = ERR_INIT;
    struct cred_proc *p = NULL;
    int rc = cred_proc_start(l, &spec, on_done, r, &p, &e);
    if (rc < 0)
        fprintf(stderr, "  start: %s\n", err_msg(&e));
    CHECK_INT(rc, 0);
    CHECK(rc < 0 || p != NULL);
    CHECK_INT(r->calls, 0); /* from the loop, never from inside start */
    if (ret)
        *ret = p;
    return rc;
}

static void run_script(struct loop *l, const char *path, int64_t timeout_ms, size_t max_out,
                       struct run *r)
{
    if (start_script(l, path, timeout_ms, max_out, r, NULL) < 0)
        return;
    CHECK(wait_for(l, run_done, r, 15000));
    CHECK_INT(r->calls, 1);
}

/* ---- runs ---------------------------------------------------------------------------------- */

static void test_output_and_status(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct run r = {0};
    run_script(l,
               script("out.sh", "printf 'hello\\n'; printf '\\n  oops: it broke\\nline 2\\n' >&2; "
                                "exit 3"),
               0, 0, &r);
    CHECK_INT(r.error, 0);
    CHECK(r.had_res);
    CHECK_INT(r.exit_code, 3);
    CHECK_INT(r.signal, 0);
    CHECK(!r.timed_out);
    CHECK_STR(r.out, "hello\n");
    CHECK_INT(r.out_len, 6);
    char line[64];
    cred_proc_first_line(r.err, r.err_len, line, sizeof(line));
    CHECK_STR(line, "oops: it broke");
    run_release(&r);

    /* output in many reads, every byte kept; nothing on stderr */
    run_script(l, script("big.sh", "head -c 50000 /dev/zero | tr '\\0' 'x'"), 0, 0, &r);
    CHECK_INT(r.error, 0);
    CHECK_INT(r.exit_code, 0);
    CHECK_INT(r.out_len, 50000);
    CHECK(r.out && r.out[0] == 'x' && r.out[49999] == 'x');
    CHECK_INT(r.err_len, 0);
    CHECK_STR(r.err, "");
    run_release(&r);

    /* killed by a signal of its own */
    run_script(l, script("sig.sh", "echo before; kill -USR1 $$; sleep 5"), 0, 0, &r);
    CHECK_INT(r.error, 0);
    CHECK_INT(r.exit_code, -1);
    CHECK_INT(r.signal, SIGUSR1);
    CHECK(!r.timed_out);
    CHECK_STR(r.out, "before\n");
    run_release(&r);
    loop_free(l);
}

static void test_shell_and_env(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    const char *envp[] = {"HP_VALUE=from envp", "PATH=/usr/bin:/bin", NULL};
    struct cred_proc_spec spec = {
        .shell_command = "printf '%s|%s' \"$HP_VALUE\" \"${HP_OTHER-unset}\"",
        .envp = envp,
    };
    setenv("HP_OTHER", "ours", 1);
    struct run r = {0};
    struct cred_proc *p = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(cred_proc_start(l, &spec, on_done, &r, &p, &e), 0);
    CHECK(wait_for(l, run_done, &r, 10000));
    CHECK_INT(r.error, 0);
    CHECK_INT(r.exit_code, 0);
    CHECK_STR(r.out, "from envp|unset"); /* that environment only */
    run_release(&r);

    /* no envp: ours */
    spec.envp = NULL;
    CHECK_INT(cred_proc_start(l, &spec, on_done, &r, &p, &e), 0);
    CHECK(wait_for(l, run_done, &r, 10000));
    CHECK_STR(r.out, "|ours");
    run_release(&r);
    unsetenv("HP_OTHER");

    /* a shell command that does not exist: the shell's exit status 127, not a start failure */
    spec.shell_command = "/nonexistent/helper-xyz";
    CHECK_INT(cred_proc_start(l, &spec, on_done, &r, &p, &e), 0);
    CHECK(wait_for(l, run_done, &r, 10000));
    CHECK_INT(r.exit_code, 127);
    CHECK(r.err_len > 0);
    run_release(&r);
    loop_free(l);
}

/* What the caller gives is the helper's stdin, in full, however large; a helper that does
 * not read it all is no error. */
static void test_input(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    size_t n = 300 * 1024; /* several times a pipe's buffer */
    char *in = malloc(n);
    CHECK(in != NULL);
    if (!in) {
        loop_free(l);
        return;
    }
    for (size_t i = 0; i < n; i++)
        in[i] = (char)('a' + i % 26);
    const char *argv[] = {script("count.sh", "wc -c | tr -d ' \\n'"), NULL};
    struct cred_proc_spec spec = {.argv = argv, .input = in, .input_len = n};
    struct run r = {0};
    struct cred_proc *p = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(cred_proc_start(l, &spec, on_done, &r, &p, &e), 0);
    CHECK(wait_for(l, run_done, &r, 10000));
    CHECK_INT(r.error, 0);
    CHECK_INT(r.exit_code, 0);
    CHECK_STR(r.out, "307200");
    run_release(&r);

    /* the first line only, then it exits: the rest is not written, and that is fine */
    argv[0] = script("first.sh", "head -c 5");
    CHECK_INT(cred_proc_start(l, &spec, on_done, &r, &p, &e), 0);
    CHECK(wait_for(l, run_done, &r, 10000));
    CHECK_INT(r.error, 0);
    CHECK_INT(r.exit_code, 0);
    CHECK_STR(r.out, "abcde");
    run_release(&r);

    /* without input its stdin is /dev/null: EOF at once */
    spec.input = NULL;
    spec.input_len = 0;
    argv[0] = script("none.sh", "wc -c | tr -d ' \n'");
    CHECK_INT(cred_proc_start(l, &spec, on_done, &r, &p, &e), 0);
    CHECK(wait_for(l, run_done, &r, 10000));
    CHECK_STR(r.out, "0");
    run_release(&r);
    free(in);
    loop_free(l);
}

static void test_output_bound(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct run r = {0};

    /* exactly at the bound: fine; one byte more: -E2BIG and no result */
    run_script(l, script("ten.sh", "printf 0123456789"), 0, 10, &r);
    CHECK_INT(r.error, 0);
    CHECK_STR(r.out, "0123456789");
    run_release(&r);
    run_script(l, script("eleven.sh", "printf 0123456789A"), 0, 10, &r);
    CHECK_INT(r.error, -E2BIG);
    CHECK(!r.had_res);
    run_release(&r);

    /* the default bound is 64 KiB; the helper (and what it started) is killed at once, not at
     * its end or the timeout */
    const char *pidfile = tmp_path("big.pid");
    unlink(pidfile);
    char body[512];
    snprintf(body, sizeof(body),
             "sleep 30 & echo $! > '%s'\nhead -c 70000 /dev/zero\nsleep 30\necho never", pidfile);
    int64_t t0 = mono_ms();
    run_script(l, script("huge.sh", body), 20000, 0, &r);
    CHECK_INT(r.error, -E2BIG);
    CHECK(!r.had_res);
    CHECK(r.ended_ms - t0 < 5000);
    pid_t bg = read_pid(pidfile, 1000);
    CHECK(bg > 0);
    if (bg > 0)
        CHECK(wait_gone(bg, 3000));
    run_release(&r);
    loop_free(l);
}

static void test_stderr_cut(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct run r = {0};
    /* far more than the bound on stderr: read and dropped, the run goes on to its end */
    run_script(l, script("noisy.sh", "head -c 100000 /dev/zero | tr '\\0' 'e' >&2; echo done"), 0,
               0, &r);
    CHECK_INT(r.error, 0);
    CHECK_INT(r.exit_code, 0);
    CHECK_STR(r.out, "done\n");
    CHECK_INT(r.err_len, CRED_PROC_STDERR_MAX);
    CHECK(r.err && r.err[0] == 'e' && r.err[CRED_PROC_STDERR_MAX - 1] == 'e');
    run_release(&r);
    loop_free(l);
}

static void test_timeout(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct run r = {0};

    /* SIGTERM at the timeout ends an ordinary helper */
    int64_t t0 = mono_ms();
    run_script(l, script("slow.sh", "echo partial; sleep 30"), 200, 0, &r);
    int64_t took = r.ended_ms - t0;
    CHECK_INT(r.error, 0);
    CHECK(r.timed_out);
    CHECK_INT(r.signal, SIGTERM);
    CHECK_INT(r.exit_code, -1);
    CHECK_STR(r.out, "partial\n"); /* what it said is kept */
    CHECK(took >= 200);
    CHECK(took < 1000 + 2000); /* before the SIGKILL would have come, give or take a busy box */
    run_release(&r);

    /* one that ignores SIGTERM gets SIGKILL a second later */
    t0 = mono_ms();
    run_script(l, script("stubborn.sh", "trap '' TERM; echo up; sleep 30; sleep 30"), 200, 0, &r);
    took = r.ended_ms - t0;
    CHECK_INT(r.error, 0);
    CHECK(r.timed_out);
    CHECK_INT(r.signal, SIGKILL);
    CHECK(took >= 200 + 1000);
    CHECK(took < 200 + 1000 + 3000);
    run_release(&r);

    /* one that cleans up at SIGTERM (closing its output first) has its second to do so */
    run_script(l,
               script("tidy.sh", "trap 'exec >&- 2>&-; sleep 0.3; exit 7' TERM\necho up\n"
                                 "sleep 30 &\nwait"),
               200, 0, &r);
    CHECK_INT(r.error, 0);
    CHECK(r.timed_out);
    CHECK_INT(r.signal, 0);
    CHECK_INT(r.exit_code, 7);
    CHECK_STR(r.out, "up\n");
    run_release(&r);
    loop_free(l);
}

/* It closes its output but goes on running: the run still ends at the timeout, the helper
 * killed; a clean early exit after closing its output ends it at once. */
static void test_closed_output(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct run r = {0};
    const char *pidfile = tmp_path("closed.pid");
    unlink(pidfile);
    char body[512];
    snprintf(body, sizeof(body), "echo $$ > '%s'; echo said; exec >&- 2>&-; sleep 30", pidfile);
    int64_t t0 = mono_ms();
    run_script(l, script("closer.sh", body), 300, 0, &r);
    int64_t took = r.ended_ms - t0;
    CHECK_INT(r.error, 0);
    CHECK(r.timed_out);
    CHECK_INT(r.signal, SIGTERM);
    CHECK_STR(r.out, "said\n");
    CHECK(took >= 300);
    CHECK(took < 300 + 3000);
    pid_t pid = read_pid(pidfile, 1000);
    CHECK(pid > 0);
    if (pid > 0)
        CHECK(wait_gone(pid, 3000));
    run_release(&r);

    /* the same, ignoring SIGTERM: SIGKILL a second later; started after the loop sat idle
     * for a while (its cached time old), the timeout still counts from the start */
    struct timespec idle = {0, 400 * 1000 * 1000};
    (void)nanosleep(&idle, NULL);
    t0 = mono_ms();
    run_script(l, script("closer-stubborn.sh", "trap '' TERM; echo said; exec >&- 2>&-; sleep 30"),
               300, 0, &r);
    took = r.ended_ms - t0;
    CHECK(r.timed_out);
    CHECK_INT(r.signal, SIGKILL);
    CHECK(took >= 300 + 1000);
    CHECK(took < 300 + 1000 + 3000);
    run_release(&r);

    /* it closes its output, then exits on its own a little later: not a timeout */
    run_script(l, script("closer2.sh", "echo said; exec >&- 2>&-; sleep 0.2; exit 5"), 5000, 0, &r);
    CHECK_INT(r.error, 0);
    CHECK(!r.timed_out);
    CHECK_INT(r.exit_code, 5);
    CHECK_STR(r.out, "said\n");
    run_release(&r);
    loop_free(l);
}

/* The helper exits at once, but a background child of its keeps the pipe: the run ends at the
 * timeout with what the helper said and its exit status, and the grandchild is killed. */
static void test_grandchild_holds_pipe(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct run r = {0};
    const char *pidfile = tmp_path("grand.pid");
    unlink(pidfile);
    char body[512];
    snprintf(body, sizeof(body), "sleep 30 & echo $! > '%s'; echo '{\"headers\": {}}'; exit 0",
             pidfile);
    int64_t t0 = mono_ms();
    run_script(l, script("grand.sh", body), 300, 0, &r);
    int64_t took = r.ended_ms - t0;
    CHECK_INT(r.error, 0);
    CHECK(r.had_res);
    CHECK_STR(r.out, "{\"headers\": {}}\n");
    CHECK_INT(r.exit_code, 0); /* the helper's own status */
    CHECK(took < 300 + 3000);
    pid_t pid = read_pid(pidfile, 1000);
    CHECK(pid > 0);
    if (pid > 0)
        CHECK(wait_gone(pid, 3000)); /* nothing it started outlives the run */
    run_release(&r);
    loop_free(l);
}

static void test_cancel(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct run r = {0};
    struct cred_proc *p = NULL;
    const char *pidfile = tmp_path("cancel.pid");
    unlink(pidfile);
    char body[512];
    snprintf(body, sizeof(body), "sleep 30 & echo $! > '%s'; echo x; wait", pidfile);
    if (start_script(l, script("cancel.sh", body), 20000, 0, &r, &p) < 0) {
        loop_free(l);
        return;
    }
    pid_t bg = read_pid(pidfile, 3000);
    CHECK(bg > 0);
    cred_proc_cancel(p);
    /* the loop runs on: no callback follows */
    bool never = wait_for(l, run_done, &r, 300);
    CHECK(!never);
    CHECK_INT(r.calls, 0);
    if (bg > 0)
        CHECK(wait_gone(bg, 3000));
    cred_proc_cancel(NULL);

    /* cancelled before the loop ever ran */
    if (start_script(l, script("cancel2.sh", "echo hi"), 0, 0, &r, &p) == 0)
        cred_proc_cancel(p);
    CHECK(!wait_for(l, run_done, &r, 200));
    CHECK_INT(r.calls, 0);
    loop_free(l);
}

/* Its exit status cannot be had (SIGCHLD ignored: the kernel reaps it): -EIO, never a success
 * it did not report. */
static void test_status_lost(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct run r = {0};
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    CHECK_INT(sigaction(SIGCHLD, &ign, &old), 0);
    run_script(l, script("lost.sh", "echo answer; exit 3"), 5000, 0, &r);
    CHECK_INT(r.error, -EIO);
    CHECK(!r.had_res);
    CHECK_INT(sigaction(SIGCHLD, &old, NULL), 0);
    run_release(&r);
    loop_free(l);
}

/* done may start the next run */
struct chain {
    struct loop *l;
    int runs;
    struct run last;
};

static void chain_done(struct cred_proc *p, int error, const struct cred_proc_result *res,
                       void *userdata)
{
    struct chain *c = userdata;
    (void)p;
    CHECK_INT(error, 0);
    if (++c->runs < 3) {
        const char *argv[] = {"/bin/sh", "-c", "echo again", NULL};
        struct cred_proc_spec spec = {.argv = argv};
        struct cred_proc *n = NULL;
        CHECK_INT(cred_proc_start(c->l, &spec, chain_done, c, &n, NULL), 0);
        return;
    }
    on_done(p, error, res, &c->last);
}

static bool chain_over(void *ctx)
{
    return ((struct chain *)ctx)->last.calls > 0;
}

static void test_chain(void)
{
    struct chain c = {0};
    CHECK_INT(loop_new(&c.l), 0);
    const char *argv[] = {"echo", "first", NULL}; /* looked up on PATH */
    struct cred_proc_spec spec = {.argv = argv};
    struct cred_proc *p = NULL;
    CHECK_INT(cred_proc_start(c.l, &spec, chain_done, &c, &p, NULL), 0);
    CHECK(wait_for(c.l, chain_over, &c, 10000));
    CHECK_INT(c.runs, 3);
    CHECK_STR(c.last.out, "again\n");
    run_release(&c.last);
    loop_free(c.l);
}

static void test_start_failures(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct run r = {0};
    struct cred_proc *p = (struct cred_proc *)&r; /* untouched on failure */
    struct err e = ERR_INIT;

    const char *missing[] = {"/nonexistent/dir/helper", NULL};
    struct cred_proc_spec spec = {.argv = missing};
    CHECK_INT(cred_proc_start(l, &spec, on_done, &r, &p, &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "cannot run '/nonexistent/dir/helper'");
    CHECK(p == (struct cred_proc *)&r);

    const char *path = tmp_path("not-exec.sh");
    FILE *f = fopen(path, "we");
    CHECK(f != NULL);
    if (f) {
        fputs("#!/bin/sh\necho no\n", f);
        fclose(f);
    }
    CHECK_INT(chmod(path, 0644), 0);
    const char *noexec[] = {path, NULL};
    spec.argv = noexec;
    e = (struct err)ERR_INIT;
    CHECK_INT(cred_proc_start(l, &spec, on_done, &r, &p, &e), -EACCES);
    CHECK_CONTAINS(e.msg, "cannot run '");
    CHECK_CONTAINS(e.msg, "not-exec.sh'");

    const char *onpath[] = {"credkit-no-such-helper-on-path", NULL};
    spec.argv = onpath;
    CHECK_INT(cred_proc_start(l, &spec, on_done, &r, &p, &e), -ENOENT);

    struct cred_proc_spec none = {0};
    CHECK_INT(cred_proc_start(l, &none, on_done, &r, &p, &e), -EINVAL);
    spec.argv = missing;
    CHECK_INT(cred_proc_start(l, &spec, NULL, &r, &p, &e), -EINVAL);
    CHECK_INT(cred_proc_start(NULL, &spec, on_done, &r, &p, &e), -EINVAL);

    /* nothing started: no run ends */
    CHECK(!wait_for(l, run_done, &r, 100));
    CHECK_INT(r.calls, 0);
    loop_free(l);
}

/* ---- command lines ------------------------------------------------------------------------- */

struct split_case {
    const char *line;
    const char *words[6]; /* NULL-terminated */
};

static const struct split_case splits[] = {
    {"get-token", {"get-token"}},
    {"  a  b\tc\n", {"a", "b", "c"}},
    {"'a b' \"c d\"", {"a b", "c d"}},
    {"x'y'z\"w\"", {"xyzw"}},
    {"'' \"\" e", {"", "", "e"}},
    {"\"a\\\"b\\\\c\\d\"", {"a\"b\\c\\d"}}, /* \" and \\ escape in "...", \d stays */
    {"'a\\b' 'it\"s' \"it's\"", {"a\\b", "it\"s", "it's"}}, /* nothing escapes in '...' */
    {"back\\slash $HOME *", {"back\\slash", "$HOME", "*"}}, /* no variables, no globbing */
    {"--flag='x y'", {"--flag=x y"}},
};

static void test_cmdline_split(void)
{
    for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
        struct strv out = STRV_INIT;
        struct err e = ERR_INIT;
        int r = helper_cmdline_split(splits[i].line, &out, &e);
        CHECK_INT(r, 0);
        size_t n = 0;
        while (splits[i].words[n])
            n++;
        CHECK_INT(out.n, n);
        for (size_t k = 0; k < n && k < out.n; k++)
            CHECK_STR(out.v[k], splits[i].words[k]);
        if (r < 0 || out.n != n)
            fprintf(stderr, "  line: %s\n", splits[i].line);
        strv_release(&out);
    }

    /* words are appended to what is there */
    struct strv out = STRV_INIT;
    CHECK_INT(strv_push(&out, "first"), 0);
    CHECK_INT(helper_cmdline_split("second 'third'", &out, NULL), 0);
    CHECK_INT(out.n, 3);
    if (out.n == 3)
        CHECK_STR(out.v[2], "third");
    strv_release(&out);

    static const struct {
        const char *line, *msg;
    } bad[] = {
        {"", "the command line is empty"},
        {" \t\n ", "the command line is empty"},
        {"get 'token", "an unterminated single quote"},
        {"get \"token", "an unterminated double quote"},
        {"get \"token\\\"", "an unterminated double quote"}, /* the quote is escaped */
        {"'", "an unterminated single quote"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct strv v = STRV_INIT;
        struct err e = ERR_INIT;
        CHECK_INT(helper_cmdline_split(bad[i].line, &v, &e), -EINVAL);
        CHECK_CONTAINS(e.msg, bad[i].msg);
        strv_release(&v);
    }
}

static void test_first_line(void)
{
    char buf[32];
    static const char in1[] = "\n\r\n   first line  \r\nsecond";
    cred_proc_first_line(in1, sizeof(in1) - 1, buf, sizeof(buf));
    CHECK_STR(buf, "first line");
    static const char in2[] = "a\tb\x1b[31mred\x7f!";
    cred_proc_first_line(in2, sizeof(in2) - 1, buf, sizeof(buf));
    CHECK_STR(buf, "a?b?[31mred?!");
    /* cut at max - 1 bytes */
    cred_proc_first_line("abcdefgh", 8, buf, 5);
    CHECK_STR(buf, "abcd");
    /* len is the truth: the input need not be NUL-terminated */
    cred_proc_first_line("abcdef", 3, buf, sizeof(buf));
    CHECK_STR(buf, "abc");
    cred_proc_first_line("", 0, buf, sizeof(buf));
    CHECK_STR(buf, "");
    cred_proc_first_line("\n \n", 3, buf, sizeof(buf));
    CHECK_STR(buf, "");
    cred_proc_first_line("x", 1, buf, 1);
    CHECK_STR(buf, "");
    buf[0] = 'k';
    cred_proc_first_line("x", 1, buf, 0); /* nothing written */
    CHECK(buf[0] == 'k');
}

/* Standard error line by line while the run lasts (a sign-in's URL), and all of it at the end. */
struct line_run {
    struct run r; /* first: on_done takes the same userdata */
    char lines[512];
    int n_lines;
    bool before_done; /* every line came before done */
};

static void on_line(const char *line, size_t len, void *userdata)
{
    struct line_run *lr = userdata;
    size_t used = strlen(lr->lines);
    if (lr->r.calls)
        lr->before_done = false;
    snprintf(lr->lines + used, sizeof(lr->lines) - used, "[%.*s]", (int)len, line);
    lr->n_lines++;
}

static bool first_line_seen(void *ctx)
{
    return ((struct line_run *)ctx)->n_lines > 0;
}

static void test_err_lines(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    if (!l)
        return;
    const char *marker = tmp_path("lines-go");
    char body[512];
    /* the first line comes while the helper waits: it is handed on before the run ends */
    snprintf(body, sizeof(body),
             "printf 'open this URL:\\r\\n' >&2\n"
             "while [ ! -e '%s' ]; do sleep 0.02; done\n"
             "printf '  http://x/auth\\n\\nlast' >&2\necho out\n",
             marker);
    const char *path = script("lines.sh", body);
    const char *argv[] = {path, NULL};
    struct line_run lr = {.before_done = true};
    struct cred_proc_spec spec = {.argv = argv, .timeout_ms = 10000, .on_err_line = on_line};
    struct err e = ERR_INIT;
    struct cred_proc *p = NULL;
    CHECK_INT(cred_proc_start(l, &spec, on_done, &lr, &p, &e), 0);
    CHECK(wait_for(l, first_line_seen, &lr, 10000));
    CHECK_STR(lr.lines, "[open this URL:]");
    CHECK_INT(lr.r.calls, 0);
    FILE *f = fopen(marker, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    CHECK(wait_for(l, run_done, &lr.r, 10000));
    CHECK_STR(lr.lines, "[open this URL:][  http://x/auth][][last]");
    CHECK(lr.before_done);
    CHECK_INT(lr.r.exit_code, 0);
    CHECK(lr.r.err && strstr(lr.r.err, "http://x/auth"));
    run_release(&lr.r);
    unlink(marker);
    loop_free(l);
}

TESTS_MAIN(test_output_and_status, test_shell_and_env, test_input, test_output_bound,
           test_stderr_cut, test_timeout, test_closed_output, test_grandchild_holds_pipe,
           test_cancel, test_status_lost, test_chain, test_start_failures, test_cmdline_split,
           test_first_line, test_err_lines)
