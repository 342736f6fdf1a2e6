/* child.c - child processes, spawned safely and always reaped */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "credkit/child.h"
#include "credkit/io.h"
#include "credkit/secmem.h"
#include "credkit/util.h"

#define CHILD_MAX_STDERR_DEFAULT (64u * 1024u)
#define CHILD_KILL_GRACE_DEFAULT 1000
/* Without a pidfd we cannot poll for the child's exit, so we look at least this often. */
#define CHILD_REAP_POLL_MS 10

struct child {
    pid_t pid; /* also the process group id */
    int fd_in, fd_out, fd_err;
    bool reaped;
    bool lost; /* reaped by someone else (ECHILD): no status, nothing left to reap */
    int status;
};

/* What the child tells the parent through the exec-error pipe when it cannot exec. */
enum child_stage {
    STAGE_SETUP,
    STAGE_CHDIR,
    STAGE_EXEC,
};

struct child_report {
    int stage;
    int errnum;
};

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        (void)close(*fd);
        *fd = -1;
    }
}

/* --- In the forked child: async-signal-safe calls only, then exec or _exit. --- */

static _noreturn_ void child_fail(int report_fd, int stage, int errnum)
{
    struct child_report rep = {.stage = stage, .errnum = errnum};
    ssize_t n;
    do
        n = write(report_fd, &rep, sizeof(rep));
    while (n < 0 && errno == EINTR);
    _exit(127);
}

/* Moves fd out of the stdio range so that dup2()ing one stream cannot clobber the source of
 * another (possible only when our own 0/1/2 were closed and a pipe took their number). */
static int lift_fd(int fd)
{
    if (fd < 0 || fd > STDERR_FILENO)
        return fd;
    return fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
}

struct exec_plan {
    const char *path; /* execve path for the shell, NULL for PATH lookup of argv[0] */
    char *const *argv;
    char *const *envp; /* NULL: keep environ */
    const char *cwd;
    int src[3]; /* what becomes fd 0, 1, 2; -1 keeps ours (stderr inherit) */
    int report_fd;
};

int child_reset_signals(void)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    (void)sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; sig++)
        (void)sigaction(sig, &dfl, NULL); /* fails for SIGKILL, SIGSTOP and libc's own: fine */
    sigset_t none;
    (void)sigemptyset(&none);
    return sigprocmask(SIG_SETMASK, &none, NULL) < 0 ? -errno : 0;
}

static _noreturn_ void child_exec(struct exec_plan *p)
{
    /* Our own process group, so that a timeout can kill everything the child starts. The
     * parent does the same to close the race; whoever is second gets 0 or EACCES. */
    if (setpgid(0, 0) < 0)
        child_fail(p->report_fd, STAGE_SETUP, errno);

    /* Handlers are reset by exec anyway, but ignored signals would stay ignored. The parent
     * blocked everything around fork(), so no handler of ours can run in here meanwhile. */
    if (child_reset_signals() < 0)
        child_fail(p->report_fd, STAGE_SETUP, errno);

    int fd = lift_fd(p->report_fd);
    if (fd < 0)
        child_fail(p->report_fd, STAGE_SETUP, errno); /* still intact: nothing dup2'd yet */
    p->report_fd = fd;
    for (int i = 0; i < 3; i++) {
        if (p->src[i] < 0)
            continue;
        p->src[i] = lift_fd(p->src[i]);
        if (p->src[i] < 0)
            child_fail(p->report_fd, STAGE_SETUP, errno);
    }
    /* dup2 clears FD_CLOEXEC on the target; the (O_CLOEXEC) sources vanish at exec */
    for (int i = 0; i < 3; i++)
        if (p->src[i] >= 0 && dup2(p->src[i], i) < 0)
            child_fail(p->report_fd, STAGE_SETUP, errno);

    if (p->cwd && chdir(p->cwd) < 0)
        child_fail(p->report_fd, STAGE_CHDIR, errno);

    if (p->path)
        (void)execve(p->path, p->argv, p->envp ? p->envp : environ);
    else if (p->envp)
        (void)execvpe(p->argv[0], p->argv, p->envp);
    else
        (void)execvp(p->argv[0], p->argv);
    child_fail(p->report_fd, STAGE_EXEC, errno);
}

/* --- The parent side. --- */

/* A pipe whose both ends are O_CLOEXEC; ours is also O_NONBLOCK. On failure nothing is left
 * open. */
static int open_pipe(bool we_read, int *ret_ours, int *ret_theirs)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    /* O_NONBLOCK lives on the open file description: set it on our end only, a child handed a
     * non-blocking stdio stream would see spurious EAGAIN. */
    int ours = we_read ? fds[0] : fds[1];
    int flags = fcntl(ours, F_GETFL);
    if (flags < 0 || fcntl(ours, F_SETFL, flags | O_NONBLOCK) < 0) {
        int r = -errno;
        (void)close(fds[0]);
        (void)close(fds[1]);
        return r;
    }
    *ret_ours = ours;
    *ret_theirs = we_read ? fds[1] : fds[0];
    return 0;
}

static int reap(struct child *c, int options)
{
    if (c->reaped)
        return 1;
    if (c->lost)
        return -ECHILD;
    int status;
    pid_t p;
    do
        p = waitpid(c->pid, &status, options);
    while (p < 0 && errno == EINTR);
    if (p < 0) {
        int r = -errno;
        if (r == -ECHILD) /* someone reaped it behind our back: it is gone, do not retry */
            c->lost = true;
        return r;
    }
    if (p == 0)
        return 0;
    c->reaped = true;
    c->status = status;
    return 1;
}

/* The descriptors child_spawn() opens: ours stay with the parent (O_NONBLOCK), theirs become
 * the child's stdio, and the report pipe brings back why the child could not exec. */
struct spawn_fds {
    int devnull;
    int in_ours, in_theirs, out_ours, out_theirs, err_ours, err_theirs;
    int rep[2];
};

static void spawn_fds_init(struct spawn_fds *f)
{
    *f = (struct spawn_fds){
        .devnull = -1,
        .in_ours = -1,
        .in_theirs = -1,
        .out_ours = -1,
        .out_theirs = -1,
        .err_ours = -1,
        .err_theirs = -1,
        .rep = {-1, -1},
    };
}

/* After fork(): our copies of the child's ends go, so that EOF on ours means the child closed
 * them. */
static void spawn_fds_close_theirs(struct spawn_fds *f)
{
    close_fd(&f->devnull);
    close_fd(&f->in_theirs);
    close_fd(&f->out_theirs);
    close_fd(&f->err_theirs);
    close_fd(&f->rep[1]);
}

static void spawn_fds_close(struct spawn_fds *f)
{
    close_fd(&f->devnull);
    close_fd(&f->in_ours);
    close_fd(&f->in_theirs);
    close_fd(&f->out_ours);
    close_fd(&f->out_theirs);
    close_fd(&f->err_ours);
    close_fd(&f->err_theirs);
    close_fd(&f->rep[0]);
    close_fd(&f->rep[1]);
}

static int spawn_check(const struct child_spec *spec, struct child **ret, struct err *e)
{
    if (!spec || !ret)
        return err_set(e, -EINVAL, "no command to run");
    if (!spec->shell_command && (!spec->argv || !spec->argv[0] || !spec->argv[0][0]))
        return err_set(e, -EINVAL, "no command to run");
    if ((spec->flags & CHILD_STDERR_PIPE) && (spec->flags & CHILD_STDERR_INHERIT))
        return err_set(e, -EINVAL, "stderr cannot be both piped and inherited");
    return 0;
}

/* Opens /dev/null for the streams that are neither piped nor inherited, the pipes asked for and
 * the report pipe, and points plan at the child's ends. On failure f holds what was opened. */
static int spawn_open_fds(const struct child_spec *spec, const char *name, struct spawn_fds *f,
                          struct exec_plan *plan, struct err *e)
{
    int r;

    if (!(spec->flags & CHILD_STDIN_PIPE) || !(spec->flags & CHILD_STDOUT_PIPE) ||
        !(spec->flags & (CHILD_STDERR_PIPE | CHILD_STDERR_INHERIT))) {
        f->devnull = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (f->devnull < 0)
            return err_set(e, -errno, "cannot run '%s': cannot open '/dev/null': %s", name,
                           strerror(errno));
    }
    plan->src[0] = plan->src[1] = plan->src[2] = f->devnull;
    if (spec->flags & CHILD_STDERR_INHERIT)
        plan->src[2] = -1;
    if (spec->flags & CHILD_STDIN_PIPE) {
        r = open_pipe(false, &f->in_ours, &f->in_theirs);
        if (r < 0)
            goto fail_pipe;
        plan->src[0] = f->in_theirs;
    }
    if (spec->flags & CHILD_STDOUT_PIPE) {
        r = open_pipe(true, &f->out_ours, &f->out_theirs);
        if (r < 0)
            goto fail_pipe;
        plan->src[1] = f->out_theirs;
    }
    if (spec->flags & CHILD_STDERR_PIPE) {
        r = open_pipe(true, &f->err_ours, &f->err_theirs);
        if (r < 0)
            goto fail_pipe;
        plan->src[2] = f->err_theirs;
    }
    /* the child writes errno here when it cannot exec; a successful exec closes it (EOF) */
    if (pipe2(f->rep, O_CLOEXEC) < 0) {
        r = -errno;
        goto fail_pipe;
    }
    plan->report_fd = f->rep[1];
    return 0;

fail_pipe:
    return err_set(e, r, "cannot run '%s': cannot create a pipe: %s", name, strerror(-r));
}

/* Forks; the child goes straight to child_exec() and never returns here. */
static int spawn_fork(struct exec_plan *plan, const char *name, pid_t *ret_pid, struct err *e)
{
    sigset_t all, old;
    int r;

    /* Block every signal across fork(): a handler of ours must not run in the child before
     * it has reset the dispositions. The child unblocks after resetting. */
    (void)sigfillset(&all);
    r = -pthread_sigmask(SIG_SETMASK, &all, &old);
    if (r < 0)
        return err_set(e, r, "cannot run '%s': %s", name, strerror(-r));

    pid_t pid = fork();
    if (pid < 0) {
        r = err_set(e, -errno, "cannot run '%s': %s", name, strerror(errno));
        (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
        return r;
    }
    if (pid == 0)
        child_exec(plan);

    (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    *ret_pid = pid;
    return 0;
}

/* 0 when the child exec'd (the report pipe closed without a word), else why it could not. */
static int spawn_read_report(int fd, const char *name, const char *cwd, struct err *e)
{
    struct child_report rep;
    ssize_t n;

    do
        n = read(fd, &rep, sizeof(rep));
    while (n < 0 && errno == EINTR);
    if (n == 0)
        return 0;
    if (n < 0)
        return err_set(e, -errno, "cannot run '%s': %s", name, strerror(errno));
    if (n != (ssize_t)sizeof(rep) || rep.errnum <= 0)
        return err_set(e, -EIO, "cannot run '%s': the child failed before exec", name);
    if (rep.stage == STAGE_CHDIR)
        return err_set(e, -rep.errnum, "cannot run '%s': cannot change to directory '%s': %s", name,
                       cwd, strerror(rep.errnum));
    return err_set(e, -rep.errnum, "cannot run '%s': %s", name, strerror(rep.errnum));
}

int child_spawn(const struct child_spec *spec, struct child **ret, struct err *e)
{
    struct spawn_fds f;
    struct child *c = NULL;
    pid_t pid = -1;
    int r;

    r = spawn_check(spec, ret, e);
    if (r < 0)
        return r;

    const char *name = spec->shell_command ? "/bin/sh" : spec->argv[0];
    const char *sh_argv[] = {"sh", "-c", spec->shell_command, NULL};
    struct exec_plan plan = {
        .path = spec->shell_command ? "/bin/sh" : NULL,
        /* exec*() take char *const[] for historical reasons; they do not write to them */
        .argv = (char *const *)(spec->shell_command ? sh_argv : spec->argv),
        .envp = (char *const *)spec->envp,
        .cwd = spec->cwd,
        .src = {-1, -1, -1},
    };

    spawn_fds_init(&f);
    c = calloc(1, sizeof(*c));
    if (!c)
        return err_set(e, -ENOMEM, "cannot run '%s': out of memory", name);
    c->pid = -1;
    c->fd_in = c->fd_out = c->fd_err = -1;

    r = spawn_open_fds(spec, name, &f, &plan, e);
    if (r < 0)
        goto out;
    r = spawn_fork(&plan, name, &pid, e);
    if (r < 0)
        goto out;
    c->pid = pid;
    (void)setpgid(pid, pid); /* EACCES once the child has exec'd: it did it itself */
    spawn_fds_close_theirs(&f);

    r = spawn_read_report(f.rep[0], name, spec->cwd, e);
    if (r < 0)
        goto out; /* child_free() below reaps it */

    c->fd_in = f.in_ours;
    c->fd_out = f.out_ours;
    c->fd_err = f.err_ours;
    f.in_ours = f.out_ours = f.err_ours = -1;
    *ret = c;
    c = NULL;
    r = 0;
out:
    spawn_fds_close(&f);
    child_free(c);
    return r;
}

pid_t child_pid(const struct child *c)
{
    return c->pid;
}

int child_stdin_fd(const struct child *c)
{
    return c->fd_in;
}

int child_stdout_fd(const struct child *c)
{
    return c->fd_out;
}

int child_stderr_fd(const struct child *c)
{
    return c->fd_err;
}

void child_close_stdin(struct child *c)
{
    close_fd(&c->fd_in);
}

int child_kill(struct child *c, int sig)
{
    if (c->pid <= 0)
        return -ESRCH;
    /* The group outlives its leader while grandchildren remain, and Linux does not reuse a pid
     * that is still some group's id, so killing the group after the leader was reaped is how
     * stragglers are stopped. */
    if (kill(-c->pid, sig) < 0) {
        if (errno == ESRCH)
            return 0; /* everyone is gone already */
        return -errno;
    }
    return 0;
}

int child_wait(struct child *c, bool block, int *ret_status)
{
    int r = reap(c, block ? 0 : WNOHANG);
    if (r <= 0)
        return r;
    if (ret_status)
        *ret_status = c->status;
    return 1;
}

void child_free(struct child *c)
{
    if (!c)
        return;
    close_fd(&c->fd_in);
    close_fd(&c->fd_out);
    close_fd(&c->fd_err);
    if (c->pid > 0 && !c->reaped && !c->lost) {
        (void)kill(-c->pid, SIGKILL);
        /* the leader itself, should it not be in its group yet; safe: it is unreaped, so its
         * pid cannot have been reused */
        (void)kill(c->pid, SIGKILL);
        (void)reap(c, 0);
    }
    free(c);
}

/* --- child_run(): the whole life of a child for a CLI. --- */

static int64_t add_ms(int64_t t, int64_t d)
{
    return d > INT64_MAX - t ? INT64_MAX : t + d;
}

/* A descriptor that becomes readable when the child exits (Linux >= 5.3), so poll() can wait
 * for the exit and the pipes at once. -1 when unavailable: the caller then looks every
 * CHILD_REAP_POLL_MS. A pidfd is always close-on-exec. */
static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
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

int child_run(const struct child_spec *spec, const struct child_run_opts *opts,
              struct child_result *ret, struct err *e)
{
    struct child *c = NULL;
    struct buf out, errb;
    int pidfd = -1, sigfd = -1, interrupted = 0;
    sigset_t watched, oldmask;
    bool masked = false;
    int r;

    if (!spec || !opts || !ret)
        return err_set(e, -EINVAL, "no command to run");
    const char *name = spec->shell_command ? "/bin/sh" : spec->argv ? spec->argv[0] : NULL;
    if (!name)
        return err_set(e, -EINVAL, "no command to run");
    if (opts->timeout_ms <= 0 || opts->kill_grace_ms < 0 || (!opts->stdin_data && opts->stdin_len))
        return err_set(e, -EINVAL, "cannot run '%s': invalid options", name);

    size_t max_out = opts->max_stdout ? opts->max_stdout : BUF_MAX_DEFAULT;
    size_t max_err = opts->max_stderr ? opts->max_stderr : CHILD_MAX_STDERR_DEFAULT;
    int64_t grace = opts->kill_grace_ms ? opts->kill_grace_ms : CHILD_KILL_GRACE_DEFAULT;
    if (opts->secret_output)
        buf_init_secret(&out, max_out);
    else
        buf_init(&out, max_out);
    buf_init(&errb, max_err);

    /* A SIGINT, SIGTERM or SIGHUP meant for us while the child runs: take its whole process
     * group down first (it is in a group of its own, so the terminal's Ctrl-C never reaches
     * it), then let the signal do what it would have done. Signals the caller had blocked stay
     * the caller's business. */
    sigemptyset(&watched);
    sigset_t cur;
    if (pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0) {
        static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
            if (!sigismember(&cur, sigs[i]))
                sigaddset(&watched, sigs[i]);
    }
    if (pthread_sigmask(SIG_BLOCK, &watched, &oldmask) == 0) {
        masked = true;
        sigfd = signalfd(-1, &watched, SFD_CLOEXEC | SFD_NONBLOCK);
    }

    struct child_spec s = *spec;
    s.flags = CHILD_STDOUT_PIPE | (opts->stdin_data ? CHILD_STDIN_PIPE : 0) |
              (spec->flags & CHILD_STDERR_INHERIT ? CHILD_STDERR_INHERIT : CHILD_STDERR_PIPE);
    r = child_spawn(&s, &c, e);
    if (r < 0)
        goto out;
    pidfd = open_pidfd(c->pid);

    const char *in_p = opts->stdin_data;
    size_t in_left = opts->stdin_len;
    if (in_left == 0)
        child_close_stdin(c);

    int64_t deadline = add_ms(now_mono_ms(), opts->timeout_ms);
    int64_t kill_at = INT64_MAX;
    bool timed_out = false;

    for (;;) {
        if (!c->reaped) {
            r = reap(c, WNOHANG);
            if (r < 0) {
                r = err_set(e, r, "cannot wait for '%s': %s", name, strerror(-r));
                goto out;
            }
        }
        if (c->reaped)
            close_fd(&pidfd);
        /* done when it has exited and everything it wrote is read; a grandchild may hold the
         * pipes after the child exits, we keep reading until EOF or the timeout */
        if (c->reaped && c->fd_out < 0 && c->fd_err < 0)
            break;

        int64_t now = now_mono_ms();
        if (!timed_out && now >= deadline) {
            timed_out = true;
            (void)child_kill(c, SIGTERM);
            kill_at = add_ms(now, grace);
        }
        if (timed_out && now >= kill_at) {
            (void)child_kill(c, SIGKILL);
            /* no waiting for EOF now: whoever escaped the group could hold the pipes forever */
            child_close_stdin(c);
            close_fd(&c->fd_out);
            close_fd(&c->fd_err);
            if (!c->reaped) {
                r = reap(c, 0);
                if (r < 0) {
                    r = err_set(e, r, "cannot wait for '%s': %s", name, strerror(-r));
                    goto out;
                }
            }
            break;
        }

        struct pollfd pfd[5];
        int nfds = 0, i_in = -1, i_out = -1, i_err = -1;
        if (c->fd_in >= 0) {
            i_in = nfds;
            pfd[nfds++] = (struct pollfd){.fd = c->fd_in, .events = POLLOUT};
        }
        if (c->fd_out >= 0) {
            i_out = nfds;
            pfd[nfds++] = (struct pollfd){.fd = c->fd_out, .events = POLLIN};
        }
        if (c->fd_err >= 0) {
            i_err = nfds;
            pfd[nfds++] = (struct pollfd){.fd = c->fd_err, .events = POLLIN};
        }
        if (pidfd >= 0)
            pfd[nfds++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
        int i_sig = -1;
        if (sigfd >= 0 && !interrupted) {
            i_sig = nfds;
            pfd[nfds++] = (struct pollfd){.fd = sigfd, .events = POLLIN};
        }

        int64_t wait = (timed_out ? kill_at : deadline) - now;
        if (!c->reaped && pidfd < 0 && wait > CHILD_REAP_POLL_MS)
            wait = CHILD_REAP_POLL_MS;
        if (wait > INT32_MAX)
            wait = INT32_MAX;
        if (poll(pfd, (nfds_t)nfds, (int)wait) < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            r = err_set(e, -errno, "cannot run '%s': poll: %s", name, strerror(errno));
            goto out;
        }

        if (i_sig >= 0 && pfd[i_sig].revents) {
            struct signalfd_siginfo si;
            if (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                interrupted = (int)si.ssi_signo;
                /* the same path as a timeout, starting now */
                deadline = now_mono_ms();
            }
            continue;
        }
        if (i_in >= 0 && pfd[i_in].revents) {
            ssize_t w = write_nosigpipe(c->fd_in, in_p, in_left);
            if (w >= 0) {
                in_p += w;
                in_left -= (size_t)w;
                if (in_left == 0)
                    child_close_stdin(c);
            } else if (errno == EPIPE) {
                child_close_stdin(c); /* it stopped reading: its exit status will tell */
            } else if (errno != EAGAIN) {
                r = err_set(e, -errno, "cannot write to '%s': %s", name, strerror(errno));
                goto out;
            }
        }
        if (i_out >= 0 && pfd[i_out].revents) {
            r = read_into(c->fd_out, &out, false);
            if (r == 0) {
                close_fd(&c->fd_out);
            } else if (r == -E2BIG) {
                r = err_set(e, -E2BIG, "output exceeds %zu bytes", max_out);
                goto out;
            } else if (r < 0 && r != -EAGAIN) {
                r = err_set(e, r, "cannot read the output of '%s': %s", name, strerror(-r));
                goto out;
            }
        }
        if (i_err >= 0 && pfd[i_err].revents) {
            r = read_into(c->fd_err, &errb, true);
            if (r == 0) {
                close_fd(&c->fd_err);
            } else if (r < 0 && r != -EAGAIN) {
                r = err_set(e, r, "cannot read the errors of '%s': %s", name, strerror(-r));
                goto out;
            }
        }
    }

    if (interrupted) {
        r = err_set(e, -EINTR, "'%s' was stopped: we were interrupted by signal %d", name,
                    interrupted);
        goto out;
    }
    int status = c->status;
    *ret = (struct child_result){
        .exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
        .signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0,
        .timed_out = timed_out,
        .out = out,
        .err = errb,
    };
    /* handed over: nothing left to release here */
    buf_init(&out, max_out);
    buf_init(&errb, max_err);
    r = 0;

out:
    close_fd(&pidfd);
    if (r < 0 && c)
        (void)child_kill(c, SIGKILL); /* leave nothing of it running; child_free() reaps */
    child_free(c);
    buf_release(&out);
    buf_release(&errb);
    close_fd(&sigfd);
    if (masked)
        (void)pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
    /* the child is gone: now the signal may do what it was sent to do */
    if (interrupted)
        (void)raise(interrupted);
    return r;
}

void child_result_release(struct child_result *r)
{
    if (!r)
        return;
    buf_release(&r->out);
    buf_release(&r->err);
}

/* --- Environment vectors. --- */

static size_t env_len(char *const *envp)
{
    size_t n = 0;
    while (envp && envp[n])
        n++;
    return n;
}

static char *env_entry(const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    if (nl > SIZE_MAX - vl - 2)
        return NULL;
    char *s = malloc(nl + vl + 2);
    if (!s)
        return NULL;
    memcpy(s, name, nl);
    s[nl] = '=';
    memcpy(s + nl + 1, value, vl + 1);
    return s;
}

void child_env_free(char **envp)
{
    if (!envp)
        return;
    for (size_t i = 0; envp[i]; i++)
        secure_free(envp[i]);
    free(envp);
}

int child_env_minimal(char ***ret)
{
    static const char *const keep[] = {"HOME", "PATH", "USER", "LOGNAME", "SHELL", "TERM", "LANG"};
    char **v = calloc(ELEMENTSOF(keep) + 1, sizeof(char *));
    size_t n = 0;
    int r;

    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < ELEMENTSOF(keep); i++) {
        const char *val = getenv(keep[i]);
        if (!val)
            continue;
        v[n] = env_entry(keep[i], val);
        if (!v[n]) {
            r = -ENOMEM;
            goto out;
        }
        n++;
    }
    *ret = v;
    v = NULL;
    r = 0;
out:
    child_env_free(v);
    return r;
}

int child_env_inherit(char ***ret)
{
    size_t n = env_len(environ);
    char **v = calloc(n + 1, sizeof(char *));
    int r;

    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        v[i] = strdup(environ[i]);
        if (!v[i]) {
            r = -ENOMEM;
            goto out;
        }
    }
    *ret = v;
    v = NULL;
    r = 0;
out:
    child_env_free(v);
    return r;
}

int child_env_set(char ***envp, const char *name, const char *value)
{
    if (!envp || !name || !*name || strchr(name, '=') || !value)
        return -EINVAL;

    char *entry = env_entry(name, value);
    if (!entry)
        return -ENOMEM;

    size_t nl = strlen(name), n = env_len(*envp);
    for (size_t i = 0; i < n; i++) {
        if (strncmp((*envp)[i], name, nl) == 0 && (*envp)[i][nl] == '=') {
            secure_free((*envp)[i]);
            (*envp)[i] = entry;
            return 0;
        }
    }
    /* the vector holds only pointers, nothing secret: a plain realloc is fine */
    char **v = realloc(*envp, (n + 2) * sizeof(char *));
    if (!v) {
        secure_free(entry);
        return -ENOMEM;
    }
    v[n] = entry;
    v[n + 1] = NULL;
    *envp = v;
    return 0;
}
