/* child_run.c - a child's whole life for a CLI (child.h's child_run()): spawned, fed, its
 * output collected and bounded, stopped at the timeout with child_stop()'s steps, reaped;
 * waiting in poll(). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credkit/child.h"
#include "credkit/io.h"
#include "credkit/secmem.h"
#include "credkit/util.h"

#define CHILD_MAX_STDERR_DEFAULT (64u * 1024u)
#define CHILD_KILL_GRACE_DEFAULT 1000

/* One run: what child_run() is doing, shared by its steps. */
struct run {
    const char *name; /* for messages: argv[0], or "/bin/sh" */
    struct child *c;
    int out_fd, err_fd; /* the child's stdout and stderr, -1 once at EOF or given up */
    const char *in_p;   /* what is left to write to its stdin */
    size_t in_left;
    struct buf out, err;
    int64_t deadline; /* the timeout, now_mono_ms() time */
    int64_t grace;    /* from SIGTERM to SIGKILL */
    bool timed_out;
    /* a SIGINT, SIGTERM, SIGHUP or SIGQUIT of ours while it runs */
    sigset_t oldmask;
    bool masked;
    int sigfd;
    int interrupted; /* the signal, 0 when none */
};

/* Checks the arguments; the command's name for messages in *ret_name. */
static int run_check(const struct child_spec *spec, const struct child_run_opts *opts,
                     struct child_result *ret, const char **ret_name, struct err *e)
{
    if (!spec || !opts || !ret)
        return err_set(e, -EINVAL, "no command to run");
    const char *name = spec->shell_command ? "/bin/sh" : spec->argv ? spec->argv[0] : NULL;
    if (!name)
        return err_set(e, -EINVAL, "no command to run");
    if (opts->timeout_ms <= 0 || opts->kill_grace_ms < 0 || (!opts->stdin_data && opts->stdin_len))
        return err_set(e, -EINVAL, "cannot run '%s': invalid options", name);
    *ret_name = name;
    return 0;
}

/* A SIGINT, SIGTERM or SIGHUP meant for us while the child runs: take its whole process group
 * down first (it is in a group of its own, so the terminal's Ctrl-C never reaches it), then let
 * the signal do what it would have done. Signals the caller had blocked stay the caller's
 * business. */
static void run_watch_signals(struct run *r)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    sigset_t watched, cur;
    sigemptyset(&watched);
    if (pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0) {
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
            if (!sigismember(&cur, sigs[i]))
                sigaddset(&watched, sigs[i]);
    }
    if (pthread_sigmask(SIG_BLOCK, &watched, &r->oldmask) == 0) {
        r->masked = true;
        r->sigfd = signalfd(-1, &watched, SFD_CLOEXEC | SFD_NONBLOCK);
    }
}

static void run_release(struct run *r)
{
    child_free(r->c);
    r->c = NULL;
    buf_release(&r->out);
    buf_release(&r->err);
    if (r->sigfd >= 0)
        (void)close(r->sigfd);
    r->sigfd = -1;
    if (r->masked)
        (void)pthread_sigmask(SIG_SETMASK, &r->oldmask, NULL);
    r->masked = false;
}

/* One read from a child's pipe into b. Returns 1 after data, 0 at EOF, -EAGAIN when there is
 * nothing now, -E2BIG when b is full (unless truncate: then the excess is dropped), -errno. */
static int read_into(int fd, struct buf *b, bool truncate)
{
    char chunk[16384];
    ssize_t n;
    do
        n = read(fd, chunk, sizeof(chunk));
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    if (n == 0)
        return 0;
    size_t len = (size_t)n;
    if (truncate && len > b->max - b->len)
        len = b->max - b->len;
    int r = buf_append(b, chunk, len);
    if (b->secret)
        secure_wipe(chunk, (size_t)n);
    return r < 0 ? r : 1;
}

static int run_feed(struct run *r, struct err *e)
{
    ssize_t w = write_nosigpipe(child_stdin_fd(r->c), r->in_p, r->in_left);
    if (w >= 0) {
        r->in_p += w;
        r->in_left -= (size_t)w;
        if (r->in_left == 0)
            child_close_stdin(r->c);
    } else if (errno == EPIPE) {
        child_close_stdin(r->c); /* it stopped reading: its exit status will tell */
    } else if (errno != EAGAIN) {
        return err_set(e, -errno, "cannot write to '%s': %s", r->name, strerror(errno));
    }
    return 0;
}

static int run_read_out(struct run *r, struct err *e)
{
    int k = read_into(r->out_fd, &r->out, false);
    if (k == 0)
        r->out_fd = -1;
    else if (k == -E2BIG)
        return err_set(e, -E2BIG, "output exceeds %zu bytes", r->out.max);
    else if (k < 0 && k != -EAGAIN)
        return err_set(e, k, "cannot read the output of '%s': %s", r->name, strerror(-k));
    return 0;
}

static int run_read_err(struct run *r, struct err *e)
{
    int k = read_into(r->err_fd, &r->err, true);
    if (k == 0)
        r->err_fd = -1;
    else if (k < 0 && k != -EAGAIN)
        return err_set(e, k, "cannot read the errors of '%s': %s", r->name, strerror(-k));
    return 0;
}

/* Waits (poll) until one of the pipes, the exit, a signal of ours or the next deadline, and
 * handles what came. */
static int run_poll(struct run *r, int64_t now, struct err *e)
{
    struct pollfd pfd[5];
    int nfds = 0, i_in = -1, i_out = -1, i_err = -1, i_sig = -1;
    bool running = child_wait(r->c, false, NULL) == 0;
    /* reaped just now, its pipes already at EOF: nothing is left to wait for (polling the
     * signalfd alone would sleep until the timeout) */
    if (!running && r->out_fd < 0 && r->err_fd < 0)
        return 0;
    int pidfd = running ? child_pidfd(r->c) : -1;
    if (child_stdin_fd(r->c) >= 0) {
        i_in = nfds;
        pfd[nfds++] = (struct pollfd){.fd = child_stdin_fd(r->c), .events = POLLOUT};
    }
    if (r->out_fd >= 0) {
        i_out = nfds;
        pfd[nfds++] = (struct pollfd){.fd = r->out_fd, .events = POLLIN};
    }
    if (r->err_fd >= 0) {
        i_err = nfds;
        pfd[nfds++] = (struct pollfd){.fd = r->err_fd, .events = POLLIN};
    }
    if (pidfd >= 0)
        pfd[nfds++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
    if (r->sigfd >= 0 && !r->interrupted) {
        i_sig = nfds;
        pfd[nfds++] = (struct pollfd){.fd = r->sigfd, .events = POLLIN};
    }

    int64_t wait = (r->timed_out ? child_stop_deadline(r->c) : r->deadline) - now;
    if (running && pidfd < 0 && wait > CHILD_REAP_POLL_MS)
        wait = CHILD_REAP_POLL_MS;
    if (wait > INT32_MAX)
        wait = INT32_MAX;
    if (poll(pfd, (nfds_t)nfds, (int)wait) < 0) {
        if (errno == EINTR || errno == EAGAIN)
            return 0;
        return err_set(e, -errno, "cannot run '%s': poll: %s", r->name, strerror(errno));
    }

    if (i_sig >= 0 && pfd[i_sig].revents) {
        struct signalfd_siginfo si;
        if (read(r->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
            r->interrupted = (int)si.ssi_signo;
            r->deadline = now_mono_ms(); /* the same path as a timeout, starting now */
        }
        return 0;
    }
    int k = 0;
    if (i_in >= 0 && pfd[i_in].revents)
        k = run_feed(r, e);
    if (k >= 0 && i_out >= 0 && pfd[i_out].revents)
        k = run_read_out(r, e);
    if (k >= 0 && i_err >= 0 && pfd[i_err].revents)
        k = run_read_err(r, e);
    return k;
}

/* Runs until the child has been reaped and its pipes are at EOF (a grandchild may hold them
 * after the child exits: read on until EOF or the timeout), or until the stop's SIGKILL. */
static int run_wait(struct run *r, struct err *e)
{
    for (;;) {
        int k = child_wait(r->c, false, NULL);
        if (k < 0)
            return err_set(e, k, "cannot wait for '%s': %s", r->name, strerror(-k));
        if (k > 0 && r->out_fd < 0 && r->err_fd < 0)
            return 0;

        int64_t now = now_mono_ms();
        if (!r->timed_out && now >= r->deadline) {
            r->timed_out = true;
            child_stop(r->c, now, 0, r->grace);
        }
        if (r->timed_out && child_stop_step(r->c, now) == CHILD_STOP_KILLED) {
            /* no waiting for EOF now: whoever escaped the group could hold the pipes forever */
            child_close_stdin(r->c);
            r->out_fd = r->err_fd = -1;
            k = child_wait(r->c, true, NULL);
            if (k < 0)
                return err_set(e, k, "cannot wait for '%s': %s", r->name, strerror(-k));
            return 0;
        }
        k = run_poll(r, now, e);
        if (k < 0)
            return k;
    }
}

int child_run(const struct child_spec *spec, const struct child_run_opts *opts,
              struct child_result *ret, struct err *e)
{
    struct run r = {.out_fd = -1, .err_fd = -1, .sigfd = -1};
    int k;

    k = run_check(spec, opts, ret, &r.name, e);
    if (k < 0)
        return k;
    size_t max_out = opts->max_stdout ? opts->max_stdout : BUF_MAX_DEFAULT;
    size_t max_err = opts->max_stderr ? opts->max_stderr : CHILD_MAX_STDERR_DEFAULT;
    r.grace = opts->kill_grace_ms ? opts->kill_grace_ms : CHILD_KILL_GRACE_DEFAULT;
    if (opts->secret_output)
        buf_init_secret(&r.out, max_out);
    else
        buf_init(&r.out, max_out);
    buf_init(&r.err, max_err);
    run_watch_signals(&r);

    struct child_spec s = *spec;
    s.flags = CHILD_STDOUT_PIPE | (opts->stdin_data ? CHILD_STDIN_PIPE : 0) |
              (spec->flags & CHILD_STDERR_INHERIT ? CHILD_STDERR_INHERIT : CHILD_STDERR_PIPE);
    k = child_spawn(&s, &r.c, e);
    if (k < 0)
        goto out;
    r.out_fd = child_stdout_fd(r.c);
    r.err_fd = child_stderr_fd(r.c);
    r.in_p = opts->stdin_data;
    r.in_left = opts->stdin_len;
    if (r.in_left == 0)
        child_close_stdin(r.c);
    int64_t now = now_mono_ms();
    r.deadline = opts->timeout_ms > INT64_MAX - now ? INT64_MAX : now + opts->timeout_ms;

    k = run_wait(&r, e);
    if (k < 0)
        goto out;
    if (r.interrupted) {
        k = err_set(e, -EINTR, "'%s' was stopped: we were interrupted by signal %d", r.name,
                    r.interrupted);
        goto out;
    }
    int status = 0;
    k = child_wait(r.c, false, &status); /* reaped by run_wait(): the status is remembered */
    if (k < 0)
        goto out;
    *ret = (struct child_result){
        .exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
        .signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0,
        .timed_out = r.timed_out,
        .out = r.out,
        .err = r.err,
    };
    /* handed over: nothing left to release here */
    buf_init(&r.out, max_out);
    buf_init(&r.err, max_err);
    k = 0;
out:
    if (k < 0 && r.c)
        (void)child_kill(r.c, SIGKILL); /* leave nothing of it running; child_free() reaps */
    run_release(&r);
    /* the child is gone: now the signal may do what it was sent to do */
    if (r.interrupted)
        (void)raise(r.interrupted);
    return k;
}

void child_result_release(struct child_result *r)
{
    if (!r)
        return;
    buf_release(&r->out);
    buf_release(&r->err);
}
