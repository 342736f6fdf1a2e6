/* stdio_child.c - an MCP server run as a child process, spoken to over its stdin/stdout: the
 * stdio transport (transport.h's ops), its events given straight to the transport handler */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credkit/child.h"
#include "credkit/list.h"

#include "transport/stdio_child.h"

enum phase {
    P_RUNNING,
    P_STOPPING, /* shutdown: stdin flushed, then closed at the SIGTERM; the child's stop steps
                 * at the step timer */
    P_REAPED,   /* reaped; waiting for EOF on its pipes, at most until the step timer */
    P_DONE,     /* on_done called; the step timer, if armed, SIGKILLs stragglers */
    P_FREED,    /* stdio_child_free() called; the memory goes after the loop iteration */
};

/* The connection, as the transport handler sees it. */
enum conn_state {
    C_STARTING, /* not exec'd yet, as far as we know: the exec report is read from the loop */
    C_OPEN,
    C_INPUT_GONE, /* a send found its stdin closed: its output is still read, on_lost at the exit */
    C_CLOSED,     /* its output is over (EOF, or the framing failed): on_lost at the exit */
    C_LOST,       /* on_lost (or on_open_failed) called */
};

struct stdio_child {
    struct transport t; /* first: the ops of transport.h work on this object */
    struct loop *loop;
    struct log *log;
    char *name;    /* the server's, for the log */
    char *command; /* argv[0], for the log */
    struct child *child;
    struct framing *fr;      /* its stdout and stdin; NULL once broken or done */
    struct loop_io *err_io;  /* its stderr; NULL at EOF */
    struct loop_io *exec_io; /* the exec report, C_STARTING */
    struct loop_io *exit_io; /* the child's pidfd */
    struct loop_timer *poll; /* without a pidfd */
    struct loop_timer *step; /* shutdown steps, see enum phase */
    struct transport_handler h;
    void *userdata;
    int64_t term_after_ms, kill_after_ms;

    enum phase phase;
    enum conn_state conn;
    int end_reason; /* why the connection is over: 0 (EOF), -EPIPE, -E2BIG ... */
    bool out_done;  /* stdout at EOF, or no longer read */
    bool stdin_closed;
    int status; /* P_REAPED, P_DONE: as from waitpid(), -1 when someone else reaped it */

    char errline[STDIO_CHILD_STDERR_LINE];
    size_t errlen;
    bool errskip; /* dropping the rest of an overlong line */

    struct loop_release release; /* stdio_child_free() from inside a callback of ours */
};

static bool freed(const struct stdio_child *s)
{
    return s->phase == P_FREED;
}

static void close_stdin(struct stdio_child *s)
{
    if (s->stdin_closed)
        return;
    /* anything still queued is dropped; -EALREADY (released already) needs nothing more, and
     * a broken framing (fr_error) is freed before we get here */
    int r = s->fr ? framing_close_write(s->fr, NULL, NULL) : 0;
    (void)r;
    child_close_stdin(s->child);
    s->stdin_closed = true;
}

/* Stops watching everything but the step timer. */
static void stop_watching(struct stdio_child *s)
{
    framing_free(s->fr);
    s->fr = NULL;
    loop_io_remove(s->err_io);
    s->err_io = NULL;
    loop_io_remove(s->exec_io);
    s->exec_io = NULL;
    loop_io_remove(s->exit_io);
    s->exit_io = NULL;
    loop_timer_cancel(s->poll);
    s->poll = NULL;
}

/* Reports the end (on_lost), once: reason as the connection ended, status as from waitpid()
 * (-1: unknown). A server that crashes reads the same each time, however its pipes happened to
 * close. */
static void report_lost(struct stdio_child *s, int reason, int status)
{
    char why[96];
    if (s->conn == C_LOST)
        return;
    s->conn = C_LOST;
    if (reason == -E2BIG)
        (void)snprintf(why, sizeof(why), "the server sent a message over the size bound");
    else if (reason != 0 && reason != -EPIPE)
        (void)snprintf(why, sizeof(why), "%s", strerror(-reason));
    else if (status >= 0 && WIFEXITED(status))
        (void)snprintf(why, sizeof(why), "the server exited with status %d", WEXITSTATUS(status));
    else if (status >= 0 && WIFSIGNALED(status))
        (void)snprintf(why, sizeof(why), "the server was killed by signal %d (%s)",
                       WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        (void)snprintf(why, sizeof(why), "the server exited");
    /* a server gone (its end seen first on stdout or on stdin) is one reason: -ECONNRESET */
    s->h.on_lost(reason < 0 && reason != -EPIPE ? reason : -ECONNRESET, why, s->userdata);
}

static void finish(struct stdio_child *s)
{
    if (s->phase != P_REAPED)
        return;
    stop_watching(s);
    s->out_done = true;
    s->phase = P_DONE;
    /* stragglers that ignored the SIGTERM get SIGKILL when the timer fires; nobody left */
    if (kill(-child_pid(s->child), 0) < 0) {
        loop_timer_cancel(s->step);
        s->step = NULL;
    }
    if (s->conn != C_LOST)
        s->conn = C_CLOSED; /* its output ended with it (end_reason is 0 or -EPIPE) */
    int status = s->status;
    if (status >= 0 && WIFEXITED(status))
        log_debug(s->log, "server '%s': exited with status %d", s->name, WEXITSTATUS(status));
    else if (status >= 0 && WIFSIGNALED(status))
        log_debug(s->log, "server '%s': killed by signal %d", s->name, WTERMSIG(status));
    report_lost(s, s->end_reason, status);
    if (!freed(s) && s->h.on_done)
        s->h.on_done(s->userdata);
}

static void maybe_finish(struct stdio_child *s)
{
    if (s->phase == P_REAPED && s->out_done && !s->err_io)
        finish(s);
}

static void stdin_flushed(int status, void *userdata)
{
    struct stdio_child *s = userdata;
    (void)status; /* a server that closed its stdin first has what it wanted */
    child_close_stdin(s->child);
    s->stdin_closed = true;
}

/* Arms the step timer for the child's next stop step; fallback_ms from now when none is due. */
static void arm_step(struct stdio_child *s, int64_t fallback_ms)
{
    int64_t at = child_stop_deadline(s->child);
    if (at != INT64_MAX)
        loop_timer_rearm(s->step, at - loop_now(s->loop));
    else if (fallback_ms >= 0)
        loop_timer_rearm(s->step, fallback_ms);
}

static void begin_shutdown(struct stdio_child *s)
{
    if (s->phase != P_RUNNING)
        return;
    s->phase = P_STOPPING;
    if (!s->stdin_closed && (!s->fr || framing_close_write(s->fr, stdin_flushed, s) < 0))
        close_stdin(s);
    child_stop(s->child, loop_now(s->loop), s->term_after_ms, s->kill_after_ms);
    arm_step(s, -1);
}

/* Its output is over (reason 0) or the framing failed (reason -errno): a reason of its own is
 * said at once, an ordinary end at the exit, with what became of the server. Then it is shut
 * down. */
static void connection_over(struct stdio_child *s, int reason)
{
    if (s->conn == C_CLOSED || s->conn == C_LOST)
        return;
    if (s->conn == C_OPEN || s->conn == C_STARTING || (s->end_reason == -EPIPE && reason != 0))
        s->end_reason = reason;
    s->conn = C_CLOSED;
    if (reason != 0 && reason != -EPIPE)
        report_lost(s, reason, -1);
    if (!freed(s))
        begin_shutdown(s);
}

/* ---- from the loop ---- */

static void on_step(struct loop_timer *t, void *userdata)
{
    struct stdio_child *s = userdata;
    (void)t;
    switch (s->phase) {
    case P_STOPPING:
        close_stdin(s); /* the flush had until the SIGTERM */
        (void)child_stop_step(s->child, loop_now(s->loop));
        arm_step(s, -1);
        break;
    case P_REAPED:
        /* something outside the group holds its pipes: stop waiting for them */
        (void)child_kill(s->child, SIGKILL);
        finish(s);
        break;
    case P_DONE:
        (void)child_kill(s->child, SIGKILL);
        loop_timer_cancel(s->step);
        s->step = NULL;
        break;
    default:
        break;
    }
}

static void reaped(struct stdio_child *s, int status)
{
    s->status = status;
    s->phase = P_REAPED;
    loop_io_remove(s->exit_io);
    s->exit_io = NULL;
    loop_timer_cancel(s->poll);
    s->poll = NULL;
    /* nothing it started outlives it (SIGTERM to the rest of its group now, SIGKILL
     * kill_after_ms later); a server that has exited reads no more input */
    close_stdin(s);
    child_stop(s->child, loop_now(s->loop), 0, s->kill_after_ms);
    arm_step(s, s->kill_after_ms);
    maybe_finish(s);
}

/* Reads the exec report once it is there. Whatever the child does after it - writing, closing
 * its output, exiting - is seen after it, so each of those settles it first: no message is
 * dropped, and an exec failure is never taken for an exit with status 127. */
static void settle_exec(struct stdio_child *s)
{
    if (s->conn != C_STARTING)
        return;
    struct err e = ERR_INIT;
    int r = child_exec_result(s->child, &e);
    if (r == -EAGAIN)
        return;
    loop_io_remove(s->exec_io);
    s->exec_io = NULL;
    if (r == 0) {
        s->conn = C_OPEN;
        log_debug(s->log, "server '%s': started '%s' (pid %d)", s->name, s->command,
                  (int)child_pid(s->child));
        return;
    }
    /* what stdio_child_new() would have failed with, had it waited for the exec */
    s->conn = C_LOST;
    if (s->h.on_open_failed)
        s->h.on_open_failed(r, err_msg(&e), s->userdata);
    else
        s->h.on_lost(r, err_msg(&e), s->userdata);
}

static void on_exec(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    (void)io;
    (void)fd;
    (void)events;
    settle_exec(userdata);
}

static void check_exit(struct stdio_child *s)
{
    settle_exec(s);
    if (freed(s))
        return;
    int status;
    int r = child_wait(s->child, false, &status);
    if (r == 0)
        return;
    reaped(s, r > 0 ? status : -1);
}

static void on_pidfd(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct stdio_child *s = userdata;
    (void)io;
    (void)fd;
    (void)events;
    check_exit(s);
}

static void on_poll(struct loop_timer *t, void *userdata)
{
    struct stdio_child *s = userdata;
    check_exit(s);
    if (!freed(s) && s->poll == t)
        loop_timer_rearm(t, STDIO_CHILD_POLL_MS);
}

static void drain_stderr(struct stdio_child *s);

static void fr_message(const char *msg, size_t len, void *userdata)
{
    struct stdio_child *s = userdata;
    settle_exec(s);
    if (!freed(s) && (s->conn == C_OPEN || s->conn == C_INPUT_GONE))
        s->h.on_message(msg, len, s->userdata);
}

static void fr_eof(void *userdata)
{
    struct stdio_child *s = userdata;
    settle_exec(s);
    if (freed(s))
        return;
    s->out_done = true;
    drain_stderr(s);
    if (freed(s))
        return;
    connection_over(s, 0);
    if (!freed(s))
        maybe_finish(s);
}

static void fr_error(int error, void *userdata)
{
    struct stdio_child *s = userdata;
    settle_exec(s);
    if (freed(s))
        return;
    /* the framing is finished with both pipes: stdout no longer read, stdin closed */
    framing_free(s->fr);
    s->fr = NULL;
    close_stdin(s);
    s->out_done = true;
    drain_stderr(s);
    if (freed(s))
        return;
    connection_over(s, error);
    if (!freed(s))
        maybe_finish(s);
}

static void emit_stderr(struct stdio_child *s)
{
    size_t n = s->errlen;
    s->errlen = 0;
    if (n > 0 && s->errline[n - 1] == '\r')
        n--;
    if (n > 0 && s->h.on_stderr)
        s->h.on_stderr(s->errline, n, s->userdata);
}

/* One read of its stderr, its lines delivered. 1 when there may be more now, 0 when it would
 * block, -1 at its end (or when s was freed meanwhile). At the end the server is finished
 * with when it can be, unless the caller does that itself (may_finish false). */
static int read_stderr(struct stdio_child *s, int fd, bool may_finish)
{
    char chunk[8192];
    ssize_t n;
    do
        n = read(fd, chunk, sizeof(chunk));
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    if (n <= 0) {
        /* EOF (or an error: nothing more will come either way) */
        if (!s->errskip)
            emit_stderr(s);
        if (freed(s))
            return -1;
        loop_io_remove(s->err_io);
        s->err_io = NULL;
        if (may_finish)
            maybe_finish(s);
        return -1;
    }
    for (const char *p = chunk, *end = chunk + n; p < end && !freed(s);) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!s->errskip) {
            size_t take = (size_t)((nl ? nl : end) - p);
            size_t room = sizeof(s->errline) - s->errlen;
            memcpy(s->errline + s->errlen, p, take < room ? take : room);
            s->errlen += take < room ? take : room;
            if (!nl && s->errlen == sizeof(s->errline)) {
                /* full: say what we have now, drop the rest of the line */
                emit_stderr(s);
                s->errskip = true;
            }
        }
        if (!nl)
            break;
        if (!s->errskip)
            emit_stderr(s);
        s->errskip = false;
        s->errlen = 0;
        p = nl + 1;
    }
    return freed(s) ? -1 : 1;
}

static void on_stderr_io(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    (void)io;
    (void)events;
    (void)read_stderr(userdata, fd, true);
}

/* What the server wrote to its stderr before its stdout ended (a crash: all of it is in the
 * pipe by now) is delivered before the end is, so that whoever reports the end can quote it.
 * Bounded: a server still writing is read on by the loop. The caller finishes (the end of
 * the connection with its own reason first). */
static void drain_stderr(struct stdio_child *s)
{
    for (int i = 0; i < 16 && s->err_io && !freed(s); i++)
        if (read_stderr(s, child_stderr_fd(s->child), false) <= 0)
            break;
}

/* ---- public ---- */

static void release_fn(struct loop_release *node)
{
    struct stdio_child *s = list_entry(node, struct stdio_child, release);
    free(s->name);
    free(s->command);
    free(s);
}

static int build_env(const char *const *env, bool inherit, char ***ret, struct err *e)
{
    char **envp = NULL;
    int r = inherit ? child_env_inherit(&envp) : child_env_minimal(&envp);
    if (r < 0)
        return err_set(e, r, "cannot build the environment: %s", strerror(-r));
    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq || eq == env[i]) {
            r = err_set(e, -EINVAL, "invalid environment entry %zu: expected NAME=value", i);
            goto out;
        }
        char *name = strndup(env[i], (size_t)(eq - env[i]));
        if (!name) {
            r = err_set(e, -ENOMEM, "cannot build the environment: out of memory");
            goto out;
        }
        r = child_env_set(&envp, name, eq + 1);
        if (r < 0)
            err_set(e, r, "invalid environment variable '%s'", name);
        free(name);
        if (r < 0)
            goto out;
    }
    *ret = envp;
    envp = NULL;
    r = 0;
out:
    child_env_free(envp);
    return r;
}

static int op_send(struct transport *t, const char *msg, size_t len, unsigned flags, uint64_t tag)
{
    (void)flags;
    (void)tag;
    return stdio_child_send((struct stdio_child *)(void *)t, msg, len);
}

static int op_sendv(struct transport *t, const struct iovec *iov, int n, struct rblock *held,
                    unsigned flags, uint64_t tag)
{
    (void)flags;
    (void)tag;
    return stdio_child_sendv((struct stdio_child *)(void *)t, iov, n, held);
}

static int op_shutdown(struct transport *t)
{
    stdio_child_shutdown((struct stdio_child *)(void *)t); /* on_done follows */
    return 0;
}

static void op_free(struct transport *t)
{
    stdio_child_free((struct stdio_child *)(void *)t);
}

static const struct transport_ops stdio_ops = {
    .name = "stdio",
    .send = op_send,
    .sendv = op_sendv,
    .shutdown = op_shutdown,
    .free = op_free,
};

/* Watches the child on the loop: its pipes, the exec report, its exit; the step timer. */
static int watch(struct stdio_child *s, const struct stdio_child_spec *spec)
{
    /* the step timer is armed now so that arming it later cannot fail; the first firing in
     * P_RUNNING does nothing */
    int r = loop_timer_add(s->loop, 0, on_step, s, &s->step);
    if (r < 0)
        return r;
    const struct framing_handler fh = {
        .on_message = fr_message,
        .on_eof = fr_eof,
        .on_error = fr_error,
    };
    const struct framing_opts fo = {.max_frame = spec->max_frame, .max_pending = spec->max_pending};
    r = framing_new(s->loop, child_stdout_fd(s->child), child_stdin_fd(s->child), &fh, &fo, s,
                    &s->fr);
    if (r < 0)
        return r;
    r = loop_io_add(s->loop, child_stderr_fd(s->child), LOOP_READ, on_stderr_io, s, &s->err_io);
    if (r < 0)
        return r;
    r = loop_io_add(s->loop, child_exec_fd(s->child), LOOP_READ, on_exec, s, &s->exec_io);
    if (r < 0)
        return r;

    int pidfd = spec->poll_exit ? -1 : child_pidfd(s->child);
    if (pidfd >= 0)
        r = loop_io_add(s->loop, pidfd, LOOP_READ, on_pidfd, s, &s->exit_io);
    else
        r = loop_timer_add(s->loop, STDIO_CHILD_POLL_MS, on_poll, s, &s->poll);
    return r;
}

int stdio_child_new(struct loop *l, const struct stdio_child_spec *spec,
                    const struct transport_handler *h, void *userdata, struct stdio_child **ret,
                    struct err *e)
{
    struct stdio_child *s = NULL;
    char **envp = NULL;
    int r;

    if (!l || !spec || !h || !h->on_message || !h->on_lost || !ret)
        return err_set(e, -EINVAL, "invalid arguments");
    if (!spec->argv || !spec->argv[0] || !spec->argv[0][0])
        return err_set(e, -EINVAL, "no command to run");
    if (spec->term_after_ms < 0 || spec->kill_after_ms < 0)
        return err_set(e, -EINVAL, "cannot run '%s': invalid shutdown times", spec->argv[0]);

    s = calloc(1, sizeof(*s));
    if (!s)
        return err_set(e, -ENOMEM, "cannot run '%s': out of memory", spec->argv[0]);
    s->t.ops = &stdio_ops;
    s->loop = l;
    s->log = spec->log;
    s->name = strdup(spec->name ? spec->name : spec->argv[0]);
    s->command = strdup(spec->argv[0]);
    if (!s->name || !s->command) {
        free(s->name);
        free(s->command);
        free(s);
        return err_set(e, -ENOMEM, "cannot run '%s': out of memory", spec->argv[0]);
    }
    s->h = *h;
    s->userdata = userdata;
    s->term_after_ms = spec->term_after_ms ? spec->term_after_ms : STDIO_CHILD_TERM_AFTER_MS;
    s->kill_after_ms = spec->kill_after_ms ? spec->kill_after_ms : STDIO_CHILD_KILL_AFTER_MS;

    r = build_env(spec->env, spec->inherit_env, &envp, e);
    if (r < 0) {
        err_prefix(e, "cannot run '%s'", spec->argv[0]);
        goto out;
    }
    struct child_spec cs = {
        .argv = spec->argv,
        .envp = (const char *const *)envp,
        .cwd = spec->cwd,
        /* the exec is not waited for (10-50 ms on a busy machine, the loop's time): its
         * report is read from the loop */
        .flags = CHILD_STDIN_PIPE | CHILD_STDOUT_PIPE | CHILD_STDERR_PIPE | CHILD_EXEC_LATER,
    };
    r = child_spawn(&cs, &s->child, e);
    if (r < 0)
        goto out;

    r = watch(s, spec);
    if (r < 0)
        goto fail;

    *ret = s;
    s = NULL;
    r = 0;
    goto out;
fail:
    r = err_set(e, r, "cannot watch '%s': %s", spec->argv[0], strerror(-r));
out:
    child_env_free(envp);
    stdio_child_free(s);
    return r;
}

/* What a send to the child's stdin returned (r), as stdio_child_send() says. */
static int sent(struct stdio_child *s, int r)
{
    if (r == -EPIPE && (s->conn == C_OPEN || s->conn == C_STARTING)) {
        /* it closed its input, most likely by exiting: the end of its output and its exit
         * follow (while starting, the exec report first: it may say why) */
        if (s->conn == C_OPEN)
            s->conn = C_INPUT_GONE;
        s->end_reason = -EPIPE;
        return 0;
    }
    return r;
}

int stdio_child_send(struct stdio_child *s, const char *msg, size_t len)
{
    if (!s || freed(s))
        return -EINVAL;
    if (s->conn == C_INPUT_GONE || s->conn == C_CLOSED)
        return 0; /* the server is going: on_lost says how, at its exit */
    return sent(s, !s->fr                  ? -EPIPE
                   : s->phase != P_RUNNING ? -ESHUTDOWN
                                           : framing_send(s->fr, msg, len));
}

int stdio_child_sendv(struct stdio_child *s, const struct iovec *iov, int n, struct rblock *held)
{
    if (!s || freed(s))
        return -EINVAL;
    if (s->conn == C_INPUT_GONE || s->conn == C_CLOSED)
        return 0;
    return sent(s, !s->fr                  ? -EPIPE
                   : s->phase != P_RUNNING ? -ESHUTDOWN
                                           : framing_sendv_held(s->fr, iov, n, held));
}

void stdio_child_shutdown(struct stdio_child *s)
{
    if (s && !freed(s))
        begin_shutdown(s);
}

int stdio_child_status(const struct stdio_child *s)
{
    return s->phase == P_REAPED || s->phase == P_DONE ? s->status : -1;
}

struct transport *stdio_child_transport(struct stdio_child *s)
{
    return &s->t;
}

void stdio_child_free(struct stdio_child *s)
{
    if (!s || freed(s))
        return;
    stop_watching(s);
    /* stragglers of a server already reaped: child_free() only kills an unreaped one */
    if (s->step && (s->phase == P_REAPED || s->phase == P_DONE))
        (void)child_kill(s->child, SIGKILL);
    loop_timer_cancel(s->step);
    s->step = NULL;
    child_free(s->child);
    s->child = NULL;
    s->phase = P_FREED;
    loop_release(s->loop, &s->release, release_fn);
}
