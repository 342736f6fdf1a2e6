/* tty.c - prompts on the controlling terminal, echo off for secrets */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/tty.h"

#define TTY_LINE_MAX (64 * 1024)

bool tty_interactive(void)
{
    return isatty(STDIN_FILENO) && isatty(STDERR_FILENO);
}

static void write_str(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN && poll(&pfd, 1, 5000) > 0)
                continue;
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

/* The only static state in common/: a signal handler has nowhere else to write. It is set
 * only while a prompt is on screen, so a Ctrl-C there cancels the prompt and the terminal is
 * restored before the caller decides what to do. */
static volatile sig_atomic_t tty_interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    tty_interrupted = 1;
}

static const int prompt_sigs[] = {SIGINT, SIGTERM, SIGQUIT, SIGHUP};

/* The caller's signal handlers and mask while a prompt is on screen, and the mask ppoll()
 * waits with. */
struct prompt_signals {
    struct sigaction old_sa[ELEMENTSOF(prompt_sigs)];
    sigset_t orig_mask, wait_mask;
};

/* The signals stay blocked except inside ppoll(), which unblocks them atomically: a Ctrl-C
 * that lands between a check of the flag and the wait can then not be lost. */
static void prompt_signals_catch(struct prompt_signals *s)
{
    struct sigaction sa = {.sa_handler = on_interrupt}; /* no SA_RESTART: read() returns EINTR */
    sigset_t block;

    tty_interrupted = 0;
    sigemptyset(&sa.sa_mask);
    sigemptyset(&block);
    for (size_t i = 0; i < ELEMENTSOF(prompt_sigs); i++)
        sigaddset(&block, prompt_sigs[i]);
    (void)sigprocmask(SIG_BLOCK, &block, &s->orig_mask);
    s->wait_mask = s->orig_mask;
    for (size_t i = 0; i < ELEMENTSOF(prompt_sigs); i++) {
        (void)sigaction(prompt_sigs[i], &sa, &s->old_sa[i]);
        sigdelset(&s->wait_mask, prompt_sigs[i]);
    }
}

/* Unblocks while our handler is still in place, so a signal that arrived meanwhile lands there
 * (and is the cancellation it already was), then puts the caller's handlers back. */
static void prompt_signals_restore(struct prompt_signals *s)
{
    (void)sigprocmask(SIG_SETMASK, &s->orig_mask, NULL);
    for (size_t i = 0; i < ELEMENTSOF(prompt_sigs); i++)
        (void)sigaction(prompt_sigs[i], &s->old_sa[i], NULL);
}

/* Reads one line from fd into line, without its end: -ECANCELED on a signal or end of file. */
static int prompt_read_line(int fd, const sigset_t *wait_mask, struct buf *line)
{
    for (;;) {
        char c;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (tty_interrupted)
            return -ECANCELED;
        int pr = ppoll(&pfd, 1, NULL, wait_mask);
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        ssize_t n = read(fd, &c, 1);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -errno;
        }
        if (n == 0)
            return -ECANCELED;
        if (c == '\n' || c == '\r')
            return 0;
        int r = buf_append_char(line, c);
        if (r < 0)
            return r;
    }
}

int tty_prompt(const char *prompt, bool secret, char **ret)
{
    struct prompt_signals sigs;
    struct termios old, quiet;
    bool restore = false;
    struct buf line;
    int r;

    /* non-blocking: a line that Ctrl-C flushed after ppoll() saw it must not block read() */
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    buf_init(&line, TTY_LINE_MAX);
    line.secret = secret;
    prompt_signals_catch(&sigs);

    if (secret && tcgetattr(fd, &old) == 0) {
        quiet = old;
        quiet.c_lflag &= (tcflag_t) ~(ECHO | ECHONL);
        if (tcsetattr(fd, TCSAFLUSH, &quiet) == 0)
            restore = true;
    }
    write_str(fd, prompt);
    r = prompt_read_line(fd, &sigs.wait_mask, &line);
    if (restore)
        (void)tcsetattr(fd, TCSAFLUSH, &old);
    if (secret)
        write_str(fd, "\n");
    prompt_signals_restore(&sigs);
    close(fd);
    if (r < 0) {
        buf_release(&line);
        return r;
    }
    char *s = buf_detach(&line);
    if (!s)
        return -ENOMEM;
    *ret = s;
    return 0;
}
