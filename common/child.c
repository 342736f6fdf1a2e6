/* child.c - child processes, spawned safely and always reaped */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credkit/child.h"
#include "credkit/secmem.h"

#define PIDFD_UNTRIED (-2)

struct child {
    pid_t pid; /* also the process group id */
    int fd_in, fd_out, fd_err;
    int pidfd;     /* PIDFD_UNTRIED until child_pidfd() is first asked, -1: none to be had */
    int report_fd; /* CHILD_EXEC_LATER: the exec report's read end until it is read */
    /* ... and once read: kept open until child_free(), since a caller's event loop may still
     * watch it (a descriptor closed under epoll stays registered while a forked sibling holds
     * its pipe, and its events then name freed memory) */
    int report_spent;
    char *name; /* CHILD_EXEC_LATER: for the exec report's message */
    char *cwd;  /* CHILD_EXEC_LATER: likewise */
    enum {
        LIFE_RUNNING,
        LIFE_REAPED, /* status known */
        LIFE_LOST,   /* reaped by someone else (ECHILD): no status, nothing left to reap */
    } life;
    enum child_stop stop;
    int64_t stop_at;       /* CHILD_STOP_TERM_DUE, CHILD_STOP_KILL_DUE: when the step is due */
    int64_t kill_after_ms; /* CHILD_STOP_TERM_DUE: from SIGTERM to SIGKILL */
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

static bool gone(const struct child *c)
{
    return c->life != LIFE_RUNNING;
}

static int reap(struct child *c, int options)
{
    if (c->life == LIFE_REAPED)
        return 1;
    if (c->life == LIFE_LOST)
        return -ECHILD;
    int status;
    pid_t p;
    do
        p = waitpid(c->pid, &status, options);
    while (p < 0 && errno == EINTR);
    if (p < 0) {
        int r = -errno;
        if (r == -ECHILD) /* someone reaped it behind our back: it is gone, do not retry */
            c->life = LIFE_LOST;
        return r;
    }
    if (p == 0)
        return 0;
    c->life = LIFE_REAPED;
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
    if (pipe2(f->rep, O_CLOEXEC | (spec->flags & CHILD_EXEC_LATER ? O_NONBLOCK : 0)) < 0) {
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
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return -EAGAIN; /* CHILD_EXEC_LATER: not exec'd yet */
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
    c->pidfd = PIDFD_UNTRIED;
    c->report_fd = -1;
    c->report_spent = -1;
    c->stop_at = INT64_MAX;

    r = spawn_open_fds(spec, name, &f, &plan, e);
    if (r < 0)
        goto out;
    r = spawn_fork(&plan, name, &pid, e);
    if (r < 0)
        goto out;
    c->pid = pid;
    (void)setpgid(pid, pid); /* EACCES once the child has exec'd: it did it itself */
    spawn_fds_close_theirs(&f);

    if (spec->flags & CHILD_EXEC_LATER) {
        /* the caller reads the report when it comes (child_exec_result()) */
        c->name = strdup(name);
        c->cwd = spec->cwd ? strdup(spec->cwd) : NULL;
        if (!c->name || (spec->cwd && !c->cwd)) {
            r = err_set(e, -ENOMEM, "cannot run '%s': out of memory", name);
            goto out;
        }
        c->report_fd = f.rep[0];
        f.rep[0] = -1;
    } else {
        r = spawn_read_report(f.rep[0], name, spec->cwd, e);
        if (r < 0)
            goto out; /* child_free() below reaps it */
    }

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

int child_exec_fd(const struct child *c)
{
    return c->report_fd;
}

int child_exec_result(struct child *c, struct err *e)
{
    if (c->report_fd < 0)
        return 0;
    int r = spawn_read_report(c->report_fd, c->name, c->cwd, e);
    if (r == -EAGAIN)
        return r;
    c->report_spent = c->report_fd;
    c->report_fd = -1;
    return r;
}

int child_pidfd(struct child *c)
{
    if (c->pidfd != PIDFD_UNTRIED)
        return c->pidfd;
    c->pidfd = -1;
#ifdef SYS_pidfd_open
    /* only while it is unreaped: afterwards its pid may belong to another process */
    if (c->pid > 0 && !gone(c)) {
        int fd = (int)syscall(SYS_pidfd_open, c->pid, 0);
        c->pidfd = fd < 0 ? -1 : fd; /* ENOSYS before Linux 5.3; ESRCH when auto-reaped */
    }
#endif
    return c->pidfd;
}

static int64_t add_ms(int64_t t, int64_t d)
{
    return d > INT64_MAX - t ? INT64_MAX : t + d;
}

void child_stop(struct child *c, int64_t now_ms, int64_t term_after_ms, int64_t kill_after_ms)
{
    int64_t at = add_ms(now_ms, term_after_ms > 0 ? term_after_ms : 0);
    if (c->stop == CHILD_STOP_NONE || (c->stop == CHILD_STOP_TERM_DUE && at < c->stop_at)) {
        c->stop = CHILD_STOP_TERM_DUE;
        c->stop_at = at;
        c->kill_after_ms = kill_after_ms > 0 ? kill_after_ms : 0;
    }
    (void)child_stop_step(c, now_ms);
}

int64_t child_stop_deadline(const struct child *c)
{
    return c->stop == CHILD_STOP_TERM_DUE || c->stop == CHILD_STOP_KILL_DUE ? c->stop_at
                                                                            : INT64_MAX;
}

enum child_stop child_stop_step(struct child *c, int64_t now_ms)
{
    if (c->stop == CHILD_STOP_TERM_DUE && now_ms >= c->stop_at) {
        (void)child_kill(c, SIGTERM);
        c->stop = CHILD_STOP_KILL_DUE;
        c->stop_at = add_ms(now_ms, c->kill_after_ms);
    }
    if (c->stop == CHILD_STOP_KILL_DUE && now_ms >= c->stop_at) {
        (void)child_kill(c, SIGKILL);
        c->stop = CHILD_STOP_KILLED;
        c->stop_at = INT64_MAX;
    }
    return c->stop;
}

void child_free(struct child *c)
{
    if (!c)
        return;
    close_fd(&c->fd_in);
    close_fd(&c->fd_out);
    close_fd(&c->fd_err);
    close_fd(&c->report_fd);
    close_fd(&c->report_spent);
    if (c->pid > 0 && !gone(c)) {
        (void)kill(-c->pid, SIGKILL);
        /* the leader itself, should it not be in its group yet; safe: it is unreaped, so its
         * pid cannot have been reused */
        (void)kill(c->pid, SIGKILL);
        (void)reap(c, 0);
    }
    if (c->pidfd >= 0)
        (void)close(c->pidfd);
    free(c->name);
    secure_free(c->cwd);
    free(c);
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
