/* cred_proc.c - a helper process on the event loop (cred_proc.h). */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/child.h"
#include "credkit/helper_answer.h"
#include "credkit/io.h"
#include "credkit/strv.h"

#include "creds/cred_proc.h"

#define KILL_GRACE_MS 1000

enum proc_phase {
    PROC_RUNNING,  /* reading its output */
    PROC_TERMED,   /* timed out: SIGTERM sent, SIGKILL at child_stop_deadline() */
    PROC_REAPING,  /* both pipes at EOF (or given up): waiting for the exit status */
    PROC_DONE,     /* done is being called */
    PROC_ABANDONED /* cancelled */
};

struct cred_proc {
    struct loop *loop;
    struct child *child;
    struct loop_io *out_io, *err_io;
    struct loop_io *in_io;   /* its stdin, while input is left to write */
    struct buf in;           /* the input (a secret) */
    size_t in_off;           /* how much of it was written */
    struct loop_io *exit_io; /* its pidfd, while reaping */
    struct loop_timer *timer;
    struct buf out, err;
    size_t max_out;
    enum proc_phase phase;
    bool timed_out;
    int64_t deadline; /* loop time of the timeout */
    int error;
    cred_proc_done_fn done;
    void *userdata;
    void (*on_err_line)(const char *line, size_t len, void *userdata);
    char line[CRED_PROC_LINE_MAX]; /* the stderr line being read, for on_err_line */
    size_t line_len;
    struct loop_release release;
};

static void proc_release(struct loop_release *node)
{
    struct cred_proc *p =
        (struct cred_proc *)(void *)((char *)node - offsetof(struct cred_proc, release));
    buf_release(&p->out);
    buf_release(&p->err);
    buf_release(&p->in);
    free(p);
}

/* Stops watching and kills what is left; the memory goes after the iteration. */
static void proc_free(struct cred_proc *p)
{
    loop_io_remove(p->out_io);
    loop_io_remove(p->err_io);
    loop_io_remove(p->exit_io);
    loop_io_remove(p->in_io);
    p->out_io = p->err_io = p->exit_io = p->in_io = NULL;
    loop_timer_cancel(p->timer);
    p->timer = NULL;
    if (p->child)
        (void)child_kill(p->child, SIGKILL); /* whatever the helper left behind */
    child_free(p->child);
    p->child = NULL;
    loop_release(p->loop, &p->release, proc_release);
}

static void finish(struct cred_proc *p, int status)
{
    struct cred_proc_result res = {
        .exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
        .signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0,
        .timed_out = p->timed_out,
        .out = p->out.data ? p->out.data : "",
        .out_len = p->out.len,
        .err = p->err.data ? p->err.data : "",
        .err_len = p->err.len,
    };
    p->phase = PROC_DONE;
    p->done(p, p->error, p->error ? NULL : &res, p->userdata);
    proc_free(p);
}

static void timer_fired(struct loop_timer *t, void *userdata);

static void arm(struct cred_proc *p, int64_t ms)
{
    if (p->timer)
        loop_timer_rearm(p->timer, ms);
    else if (loop_timer_add(p->loop, ms, timer_fired, p, &p->timer) < 0)
        p->timer = NULL; /* the run then ends at EOF only: child_free() kills at worst */
}

static void timed_out(struct cred_proc *p)
{
    p->timed_out = true;
    p->phase = PROC_TERMED;
    child_stop(p->child, loop_now(p->loop), 0, KILL_GRACE_MS); /* SIGTERM now */
}

static void try_reap(struct cred_proc *p);

static void on_exit_fd(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    (void)io;
    (void)fd;
    (void)events;
    try_reap(userdata);
}

/* Waits for the exit: by its pidfd where there is one (the timer then keeps the deadlines
 * only), else by a poll. */
static void wait_exit(struct cred_proc *p)
{
    int fd = child_pidfd(p->child);
    if (fd >= 0 && !p->exit_io &&
        loop_io_add(p->loop, fd, LOOP_READ, on_exit_fd, p, &p->exit_io) < 0)
        p->exit_io = NULL;
    if (!p->exit_io) {
        arm(p, CHILD_REAP_POLL_MS);
        return;
    }
    int64_t at = p->phase == PROC_TERMED    ? child_stop_deadline(p->child)
                 : p->timed_out || p->error ? INT64_MAX
                                            : p->deadline;
    if (at != INT64_MAX)
        arm(p, at - loop_now(p->loop));
}

/* Both pipes are done with (or given up on): reap it, waiting for its exit if need be. */
static void try_reap(struct cred_proc *p)
{
    int status = 0;
    int r = child_wait(p->child, false, &status);
    if (r == 0) {
        /* it closed its output but goes on running: at the timeout it gets SIGTERM, and
         * SIGKILL a second later, as a helper that keeps its output open does */
        if (p->phase == PROC_REAPING && !p->timed_out && !p->error &&
            loop_now(p->loop) >= p->deadline)
            timed_out(p);
        wait_exit(p);
        return;
    }
    if (r < 0 && !p->error)
        p->error = -EIO; /* its exit status is unknown (reaped behind our back): not a success */
    (void)child_kill(p->child, SIGKILL); /* its group: nothing outlives the helper */
    finish(p, status);
}

static void stream_closed(struct cred_proc *p, struct loop_io **io)
{
    loop_io_remove(*io);
    *io = NULL;
    if (!p->out_io && !p->err_io && p->phase != PROC_REAPING) {
        if (p->phase != PROC_TERMED)
            p->phase = PROC_REAPING;
        try_reap(p);
    }
}

static void give_up(struct cred_proc *p, int error)
{
    p->error = error;
    (void)child_kill(p->child, SIGKILL);
    loop_io_remove(p->out_io);
    loop_io_remove(p->err_io);
    p->out_io = p->err_io = NULL;
    p->phase = PROC_REAPING;
    try_reap(p);
}

static void on_out(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct cred_proc *p = userdata;
    char chunk[4096];
    (void)io;
    (void)events;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n > 0) {
            bool over = p->out.len + (size_t)n > p->max_out;
            int r = over ? -E2BIG : buf_append(&p->out, chunk, (size_t)n);
            explicit_bzero(chunk, (size_t)n);
            if (r < 0) {
                give_up(p, r == -ENOMEM ? -ENOMEM : -E2BIG);
                return;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0) {
            give_up(p, -EIO);
            return;
        }
        stream_closed(p, &p->out_io);
        return;
    }
}

/* Its input is written or will not be: our end of its stdin is closed (EOF for it). */
static void input_over(struct cred_proc *p)
{
    loop_io_remove(p->in_io);
    p->in_io = NULL;
    child_close_stdin(p->child);
}

/* Writes what it reads of its input; a helper that closed its stdin (EPIPE) has read all it
 * wanted: what it answers decides. */
static void on_in(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct cred_proc *p = userdata;
    (void)io;
    (void)events;
    while (p->in_off < p->in.len) {
        ssize_t n = write_nosigpipe(fd, p->in.data + p->in_off, p->in.len - p->in_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0)
            break;
        p->in_off += (size_t)n;
    }
    input_over(p);
}

/* Hands on_err_line every complete line of chunk (and what is left at EOF). */
static void err_lines(struct cred_proc *p, const char *chunk, size_t n, bool eof)
{
    for (size_t i = 0; i < n && p->phase != PROC_ABANDONED; i++) {
        if (chunk[i] != '\n') {
            if (p->line_len < sizeof(p->line))
                p->line[p->line_len++] = chunk[i];
            continue;
        }
        size_t len = p->line_len;
        if (len && p->line[len - 1] == '\r')
            len--;
        p->on_err_line(p->line, len, p->userdata);
        p->line_len = 0;
    }
    if (eof && p->line_len && p->phase != PROC_ABANDONED) {
        p->on_err_line(p->line, p->line_len, p->userdata);
        p->line_len = 0;
    }
}

static void on_err(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct cred_proc *p = userdata;
    char chunk[1024];
    (void)io;
    (void)events;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n > 0) {
            if (p->on_err_line) {
                err_lines(p, chunk, (size_t)n, false);
                if (p->phase == PROC_ABANDONED)
                    return; /* cancelled from the callback: the memory goes after the loop */
            }
            size_t room = p->err.max > p->err.len ? p->err.max - p->err.len : 0;
            if (room && buf_append(&p->err, chunk, (size_t)n < room ? (size_t)n : room) < 0)
                continue; /* out of memory: the message is only shorter */
            continue;     /* beyond the bound it is read and dropped */
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (p->on_err_line) {
            err_lines(p, NULL, 0, true);
            if (p->phase == PROC_ABANDONED)
                return;
        }
        stream_closed(p, &p->err_io);
        return;
    }
}

static void timer_fired(struct loop_timer *t, void *userdata)
{
    struct cred_proc *p = userdata;
    (void)t;
    switch (p->phase) {
    case PROC_RUNNING:
        timed_out(p);
        arm(p, KILL_GRACE_MS);
        break;
    case PROC_TERMED:
        /* its pipes are closed, and it has what is left of its grace to exit: the reap waits
         * (try_reap() rearmed this timer) */
        if (!p->out_io && !p->err_io && loop_now(p->loop) < child_stop_deadline(p->child)) {
            try_reap(p);
            break;
        }
        /* a helper that ignores SIGTERM, or a grandchild holding the pipes */
        (void)child_stop_step(p->child, loop_now(p->loop)); /* SIGKILL */
        give_up(p, 0);
        break;
    case PROC_REAPING:
        try_reap(p);
        break;
    case PROC_DONE:
    case PROC_ABANDONED:
        break;
    }
}

int cred_proc_start(struct loop *l, const struct cred_proc_spec *spec, cred_proc_done_fn done,
                    void *userdata, struct cred_proc **ret, struct err *e)
{
    if (!l || !spec || (!spec->argv && !spec->shell_command) || !done || !ret)
        return err_set(e, -EINVAL, "cred_proc_start: missing arguments");
    struct cred_proc *p = calloc(1, sizeof(*p));
    if (!p)
        return err_set(e, -ENOMEM, "out of memory");
    p->loop = l;
    p->done = done;
    p->userdata = userdata;
    p->on_err_line = spec->on_err_line;
    p->max_out = spec->max_out ? spec->max_out : HELPER_ANSWER_MAX;
    buf_init_secret(&p->out, p->max_out + 1);
    buf_init(&p->err, CRED_PROC_STDERR_MAX);
    buf_init_secret(&p->in, spec->input_len + 1);
    struct child_spec cs = {
        .argv = spec->argv,
        .shell_command = spec->shell_command,
        .envp = spec->envp,
        .flags = CHILD_STDOUT_PIPE | CHILD_STDERR_PIPE | (spec->input ? CHILD_STDIN_PIPE : 0),
    };
    int r = spec->input ? buf_append(&p->in, spec->input, spec->input_len) : 0;
    if (r >= 0)
        r = child_spawn(&cs, &p->child, e);
    else
        err_set(e, r, "out of memory");
    if (r < 0) {
        buf_release(&p->out);
        buf_release(&p->err);
        buf_release(&p->in);
        free(p);
        return r;
    }
    r = loop_io_add(l, child_stdout_fd(p->child), LOOP_READ, on_out, p, &p->out_io);
    if (r >= 0)
        r = loop_io_add(l, child_stderr_fd(p->child), LOOP_READ, on_err, p, &p->err_io);
    if (r >= 0 && spec->input)
        r = loop_io_add(l, child_stdin_fd(p->child), LOOP_WRITE, on_in, p, &p->in_io);
    int64_t timeout = spec->timeout_ms > 0 ? spec->timeout_ms : CRED_PROC_TIMEOUT_DEFAULT_MS;
    if (r >= 0)
        r = loop_timer_add(l, timeout, timer_fired, p, &p->timer);
    /* after the timer: added outside an iteration, it refreshed the loop's time, which may have
     * been old (the loop idle, or not running yet): the deadline is the timer's, never earlier */
    p->deadline = loop_now(l) + timeout;
    if (r < 0) {
        p->phase = PROC_ABANDONED;
        proc_free(p);
        return err_set(e, r, "cannot watch the helper: %s", strerror(-r));
    }
    *ret = p;
    return 0;
}

void cred_proc_cancel(struct cred_proc *p)
{
    if (!p || p->phase == PROC_ABANDONED || p->phase == PROC_DONE)
        return;
    p->phase = PROC_ABANDONED;
    proc_free(p);
}

/* ---- command lines ------------------------------------------------------------------------ */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int helper_cmdline_split(const char *line, struct strv *out, struct err *e)
{
    struct buf w;
    size_t words = 0;
    int r = 0;
    buf_init(&w, 0);
    for (const char *s = line; *s;) {
        while (is_blank(*s))
            s++;
        if (!*s)
            break;
        buf_release(&w);
        buf_init(&w, 0);
        bool any = false;
        while (*s && !is_blank(*s) && r >= 0) {
            char q = *s;
            if (q == '\'' || q == '"') {
                const char *start = ++s;
                while (*s && *s != q) {
                    if (q == '"' && *s == '\\' && (s[1] == '"' || s[1] == '\\'))
                        s++;
                    r = buf_append_char(&w, *s++);
                    if (r < 0)
                        break;
                }
                if (r < 0)
                    break; /* s may be at the end already: not one step further */
                if (*s != q) {
                    buf_release(&w);
                    return err_set(e, -EINVAL, "an unterminated %s quote (from '%.20s')",
                                   q == '"' ? "double" : "single", start - 1);
                }
                s++;
                any = true;
                continue;
            }
            r = buf_append_char(&w, *s++);
            any = true;
        }
        if (r >= 0 && any) {
            r = strv_push(out, w.data ? w.data : "");
            words++;
        }
        if (r < 0)
            break;
    }
    buf_release(&w);
    if (r < 0)
        return err_set(e, -ENOMEM, "out of memory");
    if (!words)
        return err_set(e, -EINVAL, "the command line is empty");
    return 0;
}

void cred_proc_first_line(const char *err, size_t len, char *buf, size_t max)
{
    size_t i = 0, end, o = 0;
    if (!max)
        return;
    while (i < len && (err[i] == '\n' || err[i] == '\r' || err[i] == ' '))
        i++;
    /* the line's end, without the blanks and the CR of a CRLF before it: trimmed before the
     * control characters are replaced, or a CR would show as '?' */
    for (end = i; end < len && err[end] != '\n'; end++)
        ;
    while (end > i && (err[end - 1] == '\r' || err[end - 1] == ' '))
        end--;
    for (; i < end && o + 1 < max; i++) {
        unsigned char c = (unsigned char)err[i];
        buf[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    buf[o] = '\0';
}
