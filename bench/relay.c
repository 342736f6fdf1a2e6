/*
 * relay: the floor of the stdio cases. The least any process between an agent and a stdio
 * server can do: it starts the server's command with a pipe on its stdin and one on its stdout,
 * and copies bytes both ways with one epoll loop, nothing else: no parsing, no framing, no
 * allocation after the start. bench/run measures it exactly as it measures the bridge (its CPU
 * per call, its peak RSS, its allocations), so that the cost of being a process in the middle
 * (the kernel's two extra sleeps and wake-ups of each call) reads apart from the bridge's own.
 *
 * The syscalls per message are those of the bridge: epoll_wait, read, write, each way. A write
 * is tried at once after its read; only a write that would block waits in the direction's
 * buffer, and the direction stops reading until the buffer has drained: each direction holds at
 * most one buffer and never waits on the other, so 8 MiB each way at once cannot deadlock, as a
 * relay blocking on a full pipe would.
 *
 * It ends when the agent closes its stdin (what is queued for the server is written, the
 * server's stdin closed, and the server's output relayed until it closes), when the server
 * closes its stdout (what is queued for the agent is written) or when the agent stops reading.
 * A write to a reader that is gone drops that direction. Exit status: the server's (128 +
 * the signal when killed), 1 on an error of its own.
 *
 *   relay COMMAND [ARGS...]
 *
 * Built by bench/run: cc -O2 -o relay relay.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

/* a pipe's default capacity: one read takes what one wake-up brought */
#define CHUNK (64u * 1024u)

extern char **environ;

/* One direction: bytes read from `in`, written to `out`; buf[off, len) is still to be written. */
struct dir {
    int in, out;
    bool in_open;  /* not yet at end of file */
    bool waiting;  /* out is registered for EPOLLOUT: a write would have blocked */
    bool shut_out; /* close `out` once the buffer drains (the agent closed: the server's stdin) */
    size_t off, len;
    char buf[CHUNK];
};

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
    va_list ap;

    fputs("relay: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        die("fcntl: %s", strerror(errno));
}

/* Registers (op) fd for events, with the direction as its data. */
static void watch(int ep, int op, int fd, uint32_t events, struct dir *d)
{
    struct epoll_event ev = {.events = events, .data.ptr = d};

    if (epoll_ctl(ep, op, fd, &ev) < 0)
        die("epoll_ctl: %s", strerror(errno));
}

/*
 * The reader of d's output is gone: what d holds is dropped and it reads no more (closing a
 * descriptor takes it out of the epoll set). When the agent is gone, the loop ends.
 */
static void drop(struct dir *d)
{
    if (d->in_open)
        (void)close(d->in);
    (void)close(d->out);
    d->in_open = d->waiting = false;
    d->out = -1;
    d->off = d->len = 0;
}

/*
 * Writes what d holds. Returns whether it all went: when the pipe is full the rest stays, `out`
 * waits for EPOLLOUT and `in` stops being read until it has gone.
 */
static bool flush(int ep, struct dir *d)
{
    while (d->off < d->len) {
        ssize_t n = write(d->out, d->buf + d->off, d->len - d->off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            if (!d->waiting) {
                watch(ep, EPOLL_CTL_ADD, d->out, EPOLLOUT, d);
                if (d->in_open)
                    watch(ep, EPOLL_CTL_DEL, d->in, 0, NULL);
                d->waiting = true;
            }
            return false;
        }
        if (n < 0 && errno == EPIPE) {
            drop(d);
            return true;
        }
        if (n < 0)
            die("write: %s", strerror(errno));
        d->off += (size_t)n;
    }
    d->off = d->len = 0;
    if (d->waiting) {
        watch(ep, EPOLL_CTL_DEL, d->out, 0, NULL);
        if (d->in_open)
            watch(ep, EPOLL_CTL_ADD, d->in, EPOLLIN, d);
        d->waiting = false;
    }
    if (!d->in_open && d->shut_out && d->out >= 0) {
        (void)close(d->out);
        d->out = -1;
    }
    return true;
}

/* One read of d's input (the loop said it is readable), written on at once. */
static void pump(int ep, struct dir *d)
{
    ssize_t n;

    do
        n = read(d->in, d->buf, sizeof(d->buf));
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN)
        return;
    if (n < 0)
        die("read: %s", strerror(errno));
    if (n == 0) {
        /* end of file; the epoll registration goes with the close */
        (void)close(d->in);
        d->in_open = false;
        (void)flush(ep, d);
        return;
    }
    d->len = (size_t)n;
    d->off = 0;
    (void)flush(ep, d);
}

static pid_t spawn_server(char **argv, int *ret_to, int *ret_from)
{
    posix_spawn_file_actions_t fa;
    int to[2], from[2], r;
    pid_t pid;

    if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
        die("pipe2: %s", strerror(errno));
    /* dup2 clears O_CLOEXEC on the copies: only the server's stdin and stdout stay open */
    if (posix_spawn_file_actions_init(&fa) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, to[0], STDIN_FILENO) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, from[1], STDOUT_FILENO) != 0)
        die("posix_spawn_file_actions: out of memory");
    r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0)
        die("cannot start '%s': %s", argv[0], strerror(r));
    (void)close(to[0]);
    (void)close(from[1]);
    *ret_to = to[1];
    *ret_from = from[0];
    return pid;
}

int main(int argc, char **argv)
{
    /* static: 2 × 64 KiB would be a large stack frame, and the floor allocates nothing */
    static struct dir up, down; /* up: agent → server; down: server → agent */
    struct epoll_event evs[4];
    int ep, to_server, from_server, status;
    pid_t pid;

    if (argc < 2)
        die("usage: relay COMMAND [ARGS...]");
    /* a reader gone is an EPIPE of write(), not a signal */
    (void)signal(SIGPIPE, SIG_IGN);
    pid = spawn_server(argv + 1, &to_server, &from_server);
    up = (struct dir){.in = STDIN_FILENO, .out = to_server, .in_open = true, .shut_out = true};
    down = (struct dir){.in = from_server, .out = STDOUT_FILENO, .in_open = true};
    set_nonblock(STDIN_FILENO);
    set_nonblock(STDOUT_FILENO);
    set_nonblock(to_server);
    set_nonblock(from_server);
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        die("epoll_create1: %s", strerror(errno));
    if (epoll_ctl(ep, EPOLL_CTL_ADD, up.in,
                  &(struct epoll_event){.events = EPOLLIN, .data.ptr = &up}) < 0) {
        /* EPERM: a stdin that cannot be polled (/dev/null, a file) is read as at its end */
        if (errno != EPERM)
            die("epoll_ctl: %s", strerror(errno));
        (void)close(up.in);
        up.in_open = false;
        (void)flush(ep, &up);
    }
    watch(ep, EPOLL_CTL_ADD, down.in, EPOLLIN, &down);

    /* until the server's output has closed and all of it has reached the agent */
    while (down.in_open || down.len) {
        int n = epoll_wait(ep, evs, 4, -1);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("epoll_wait: %s", strerror(errno));
        for (int i = 0; i < n; i++) {
            struct dir *d = evs[i].data.ptr;
            bool writable = d->waiting && (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP));

            /* which fd of d fired: while d waits only its out is registered */
            if (writable)
                (void)flush(ep, d);
            else if (!d->waiting && d->in_open)
                pump(ep, d);
        }
    }
    if (up.out >= 0)
        (void)close(up.out); /* the server closed first: its stdin goes too */
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            die("waitpid: %s", strerror(errno));
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
