/* ptydrive - drive a command through a real pseudo-terminal, like a very small expect(1).
 *
 * Interactive paths (a password read with echo off, a yes/no question) can only be tested on a
 * real terminal: isatty() must be true and the line discipline must echo, or not, exactly as it
 * does for a person. ptydrive runs CMD as the leader of a new session whose controlling terminal
 * is a fresh pty, feeds it input from SCRIPT, checks what it prints, and copies everything it
 * printed (the transcript, including the terminal's echo of what was typed) to stdout or to
 * --transcript FILE so the test can grep it afterwards.
 *
 *   ptydrive [--timeout SECONDS] [--transcript FILE] SCRIPT -- CMD [ARGS...]
 *
 * SCRIPT is a file ("-" for stdin), one command per line. Exactly one space separates the
 * keyword from TEXT, and TEXT runs verbatim to the end of the line, so a trailing blank counts:
 *   expect TEXT     wait until TEXT appears in the output after the previous match
 *   send TEXT       type TEXT
 *   sendline TEXT   type TEXT then Enter ("\r")
 *   sendfile PATH   wait until the file PATH ends with a newline (the test writes it while CMD
 *                   runs), then type what it holds, each newline as Enter
 *   noecho TEXT     fail if TEXT appears anywhere in the transcript so far
 *   wait N          wait until CMD exits, and fail unless its exit status is N
 *   # comment       (blank lines are ignored too)
 * TEXT understands \n \r \t \e \\ and \xHH (\x04 is ^D, end of input on a terminal).
 * expect and wait give up after the timeout (default 10 s, counted per command). A script that
 * ends without wait hangs up the terminal and reaps CMD.
 *
 * Exit status: 0 when the script succeeded, 1 on a failed expectation, a wrong exit status or a
 * system error (with a message on stderr, and CMD's whole session killed), 2 on a usage error
 * or a malformed script. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define SCRIPT_MAX     (1024 * 1024)      /* bytes of script */
#define TRANSCRIPT_MAX (16 * 1024 * 1024) /* bytes of output kept for matching */
#define TAIL_SHOWN     800                /* bytes of output shown in a failure message */
#define TICK_MS        50                 /* how often a running child is checked for exit */
#define HOLD_GRACE_MS                                                                              \
    300 /* after CMD exits, how long to wait for a process still holding the pty */
#define TIMEOUT_MAX_S 3600

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

enum op { OP_EXPECT, OP_SEND, OP_SENDLINE, OP_SENDFILE, OP_NOECHO, OP_WAIT };

static const char *const op_names[] = {
    [OP_EXPECT] = "expect",     [OP_SEND] = "send",     [OP_SENDLINE] = "sendline",
    [OP_SENDFILE] = "sendfile", [OP_NOECHO] = "noecho", [OP_WAIT] = "wait",
};

struct step {
    enum op op;
    unsigned line;
    char *text; /* decoded; may contain NUL, so use len. sendline's includes the "\r" */
    size_t len;
    int status; /* OP_WAIT */
};

struct script {
    const char *path;
    struct step *steps;
    size_t n;
};

struct session {
    int master; /* -1 once closed */
    pid_t pid;  /* leader of CMD's session and process group */
    bool reaped;
    int wstatus;
    bool eof;  /* every holder of the slave side is gone */
    char *out; /* transcript */
    size_t len, cap;
    size_t match; /* end of the previous expect match */
    int out_fd;
    bool out_broken;
    int64_t timeout_ms;
    const struct script *script;
};

static volatile sig_atomic_t arg_signal;

static void on_signal(int sig)
{
    arg_signal = sig;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void usage(FILE *f)
{
    fputs(
        "usage: ptydrive [--timeout SECONDS] [--transcript FILE] SCRIPT -- CMD [ARGS...]\n"
        "script commands: expect TEXT | send TEXT | sendline TEXT | noecho TEXT | wait N | # ...\n"
        "TEXT escapes: \\n \\r \\t \\e \\\\ \\xHH\n",
        f);
}

/* Prints bytes for a person: printable ASCII as is, newlines kept, the rest as escapes. */
static void show_bytes(FILE *f, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c == '\n')
            fputc('\n', f);
        else if (c == '\r')
            fputs("\\r", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c == '\\')
            fputs("\\\\", f);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
}

/* ---- script ---- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes the escapes of TEXT into a new buffer with room for one more byte. */
static int decode_text(const char *path, unsigned line, const char *s, size_t n, char **ret,
                       size_t *ret_len)
{
    char *d = malloc(n + 2);
    size_t k = 0;

    if (!d) {
        fprintf(stderr, "ptydrive: out of memory\n");
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') {
            d[k++] = s[i];
            continue;
        }
        if (++i == n) {
            fprintf(stderr, "ptydrive: %s:%u: '\\' at the end of the line (write \\\\)\n", path,
                    line);
            free(d);
            return -EINVAL;
        }
        switch (s[i]) {
        case 'n':
            d[k++] = '\n';
            break;
        case 'r':
            d[k++] = '\r';
            break;
        case 't':
            d[k++] = '\t';
            break;
        case 'e':
            d[k++] = '\033';
            break;
        case '\\':
            d[k++] = '\\';
            break;
        case 'x': {
            int hi = i + 1 < n ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(s[i + 2]) : -1;

            if (hi < 0 || lo < 0) {
                fprintf(stderr, "ptydrive: %s:%u: \\x needs two hex digits\n", path, line);
                free(d);
                return -EINVAL;
            }
            d[k++] = (char)(hi * 16 + lo);
            i += 2;
            break;
        }
        default:
            fprintf(stderr,
                    "ptydrive: %s:%u: unknown escape '\\%c' (use \\n \\r \\t \\e \\\\ \\xHH)\n",
                    path, line, s[i]);
            free(d);
            return -EINVAL;
        }
    }
    *ret = d;
    *ret_len = k;
    return 0;
}

static int parse_status(const char *path, unsigned line, const char *s, size_t n, int *ret)
{
    char buf[32], *end;
    long v;

    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0 || n >= sizeof buf)
        goto bad;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    v = strtol(buf, &end, 10);
    if (errno != 0 || end == buf || *end != '\0' || v < 0 || v > 255)
        goto bad;
    *ret = (int)v;
    return 0;
bad:
    fprintf(stderr, "ptydrive: %s:%u: wait needs an exit status from 0 to 255\n", path, line);
    return -EINVAL;
}

static int parse_line(const char *path, unsigned line, const char *s, size_t n, struct step *st,
                      bool *ret_empty)
{
    static const enum op ops[] = {OP_EXPECT, OP_SEND, OP_SENDLINE, OP_SENDFILE, OP_NOECHO, OP_WAIT};
    size_t i = 0, kw;
    const char *text;
    size_t text_len;

    if (n > 0 && s[n - 1] == '\r') /* a script saved with CRLF line ends */
        n--;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i == n || s[i] == '#') {
        *ret_empty = true;
        return 0;
    }
    kw = i;
    while (i < n && s[i] != ' ' && s[i] != '\t')
        i++;
    text = s + (i < n ? i + 1 : n); /* exactly one separator */
    text_len = (size_t)(s + n - text);

    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        const char *name = op_names[ops[o]];

        if (strlen(name) != i - kw || memcmp(name, s + kw, i - kw) != 0)
            continue;
        *st = (struct step){.op = ops[o], .line = line};
        if (ops[o] == OP_WAIT)
            return parse_status(path, line, text, text_len, &st->status);
        if (text_len == 0 && ops[o] != OP_SENDLINE) {
            fprintf(stderr, "ptydrive: %s:%u: %s needs a TEXT\n", path, line, name);
            return -EINVAL;
        }
        if (decode_text(path, line, text, text_len, &st->text, &st->len) < 0)
            return -EINVAL;
        if (ops[o] == OP_SENDLINE)
            st->text[st->len++] = '\r';
        *ret_empty = false;
        return 0;
    }
    fprintf(stderr,
            "ptydrive: %s:%u: unknown command '%.*s' (expect, send, sendline, sendfile, noecho, "
            "wait)\n",
            path, line, (int)(i - kw), s + kw);
    return -EINVAL;
}

static void script_release(struct script *sc)
{
    for (size_t i = 0; i < sc->n; i++)
        free(sc->steps[i].text);
    free(sc->steps);
    sc->steps = NULL;
    sc->n = 0;
}

static int read_all(int fd, char **ret, size_t *ret_len)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);

    if (!buf)
        return -ENOMEM;
    for (;;) {
        ssize_t r;

        if (len == cap) {
            char *nb;

            if (cap >= SCRIPT_MAX) {
                free(buf);
                return -EFBIG;
            }
            cap *= 2;
            nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                return -ENOMEM;
            }
            buf = nb;
        }
        r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = -errno;

            free(buf);
            return e;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    *ret = buf;
    *ret_len = len;
    return 0;
}

static int script_load(const char *path, struct script *ret)
{
    struct script sc = {.path = strcmp(path, "-") == 0 ? "<stdin>" : path};
    char *data = NULL;
    size_t len = 0, nlines = 1;
    unsigned line = 0;
    int fd, r;

    fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "ptydrive: cannot open script '%s': %s\n", path, strerror(errno));
        return -errno;
    }
    r = read_all(fd, &data, &len);
    if (fd != STDIN_FILENO)
        (void)close(fd);
    if (r < 0) {
        fprintf(stderr, "ptydrive: cannot read script '%s': %s\n", sc.path,
                r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
        return r;
    }
    for (size_t i = 0; i < len; i++)
        nlines += data[i] == '\n';
    sc.steps = calloc(nlines, sizeof *sc.steps);
    if (!sc.steps) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t start = 0; start < len;) {
        const char *nl = memchr(data + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - data) : len;
        bool empty = false;

        line++;
        r = parse_line(sc.path, line, data + start, end - start, &sc.steps[sc.n], &empty);
        if (r < 0)
            goto out;
        if (!empty)
            sc.n++;
        start = end + 1;
    }
    if (sc.n == 0) {
        fprintf(stderr, "ptydrive: %s: the script has no commands\n", sc.path);
        r = -EINVAL;
        goto out;
    }
    *ret = sc;
    sc = (struct script){0};
    r = 0;
out:
    script_release(&sc);
    free(data);
    return r;
}

/* ---- session ---- */

static void transcript_write(struct session *s, const char *p, size_t n)
{
    while (n > 0 && !s->out_broken) {
        ssize_t w = write(s->out_fd, p, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            if (errno != EPIPE)
                fprintf(stderr, "ptydrive: cannot write the transcript: %s\n", strerror(errno));
            s->out_broken = true;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Reads everything the terminal has for us now. */
static int session_read(struct session *s)
{
    char buf[4096];

    if (s->eof)
        return 0;
    for (;;) {
        ssize_t n = read(s->master, buf, sizeof buf);

        if (n > 0) {
            size_t un = (size_t)n;

            if (s->len + un > TRANSCRIPT_MAX)
                return -EFBIG;
            if (s->len + un > s->cap) {
                size_t cap = s->cap;
                char *nb;

                while (cap < s->len + un)
                    cap *= 2;
                nb = realloc(s->out, cap);
                if (!nb)
                    return -ENOMEM;
                s->out = nb;
                s->cap = cap;
            }
            memcpy(s->out + s->len, buf, un);
            s->len += un;
            transcript_write(s, buf, un);
            continue;
        }
        /* Linux says EIO once the last holder of the slave side closed it. */
        if (n == 0 || errno == EIO) {
            s->eof = true;
            return 0;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN)
            return 0;
        return -errno;
    }
}

static void session_reap(struct session *s)
{
    int st;

    if (s->reaped)
        return;
    if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
        s->reaped = true;
        s->wstatus = st;
    }
}

/* Waits for output (also for room to write when want_out) until deadline, at most one tick
 * while CMD runs, then reads what came and notes whether CMD exited. Returns POLLOUT when the
 * terminal can take input, 0 otherwise, -EINTR when we got a signal, or -errno. */
static int session_pump(struct session *s, int64_t deadline, bool want_out)
{
    struct pollfd p = {.fd = s->master,
                       .events = (short)((s->eof ? 0 : POLLIN) | (want_out ? POLLOUT : 0))};
    int64_t left = deadline - now_ms();
    int ms, r, ready = 0;

    if (left < 0)
        left = 0;
    if (!s->reaped && left > TICK_MS)
        left = TICK_MS;
    ms = (int)left;
    if (arg_signal)
        return -EINTR;
    r = poll(&p, p.events ? 1 : 0, ms);
    if (r < 0 && errno != EINTR)
        return -errno;
    if (arg_signal)
        return -EINTR;
    if (r > 0 && (p.revents & POLLOUT))
        ready = POLLOUT;
    if (r > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
        r = session_read(s);
        if (r < 0)
            return r;
    }
    session_reap(s);
    return ready;
}

/* Prints why the step failed and the output that led there. */
static void fail(const struct session *s, const struct step *st, size_t from, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail(const struct session *s, const struct step *st, size_t from, const char *fmt, ...)
{
    va_list ap;
    size_t n = s->len - from;

    fprintf(stderr, "ptydrive: %s:%u: %s", s->script->path, st->line, op_names[st->op]);
    if (st->op == OP_WAIT) {
        fprintf(stderr, " %d", st->status);
    } else {
        fputs(" \"", stderr);
        show_bytes(stderr, st->text, st->op == OP_SENDLINE ? st->len - 1 : st->len);
        fputc('"', stderr);
    }
    fputs(": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (n == 0 && s->len > 0) { /* nothing new: show what came before instead */
        fputs("ptydrive: nothing new since the previous match\n", stderr);
        from = s->len > TAIL_SHOWN ? s->len - TAIL_SHOWN : 0;
        n = s->len - from;
    }
    if (n > TAIL_SHOWN) {
        from = s->len - TAIL_SHOWN;
        n = TAIL_SHOWN;
    }
    if (s->len == 0) {
        fputs("ptydrive: the command printed nothing\n", stderr);
        return;
    }
    fprintf(stderr, "ptydrive: %s (%zu bytes):\n-----\n",
            from == 0 ? "output so far" : "recent output", n);
    show_bytes(stderr, s->out + from, n);
    fputs(n > 0 && s->out[s->len - 1] == '\n' ? "-----\n" : "\n-----\n", stderr);
}

static int fail_errno(const struct session *s, const struct step *st, int r)
{
    if (r == -EINTR)
        fail(s, st, s->match, "interrupted by signal %d", (int)arg_signal);
    else if (r == -EFBIG)
        fail(s, st, s->match, "the command printed more than %d MiB", TRANSCRIPT_MAX >> 20);
    else
        fail(s, st, s->match, "%s", strerror(-r));
    return -1;
}

static int do_expect(struct session *s, const struct step *st)
{
    int64_t deadline = now_ms() + s->timeout_ms;

    for (;;) {
        const char *hit = memmem(s->out + s->match, s->len - s->match, st->text, st->len);
        int r;

        if (hit) {
            s->match = (size_t)(hit - s->out) + st->len;
            return 0;
        }
        if (s->eof) {
            fail(s, st, s->match, "the command closed its terminal%s before that appeared",
                 s->reaped ? " (it exited)" : "");
            return -1;
        }
        if (now_ms() >= deadline) {
            fail(s, st, s->match, "not seen within %" PRId64 " s", s->timeout_ms / 1000);
            return -1;
        }
        r = session_pump(s, deadline, false);
        if (r < 0)
            return fail_errno(s, st, r);
    }
}

static int do_noecho(struct session *s, const struct step *st)
{
    const char *hit;
    int r;

    /* Take in what the terminal has already, so "so far" means now. */
    r = session_pump(s, now_ms(), false);
    if (r < 0)
        return fail_errno(s, st, r);
    hit = memmem(s->out, s->len, st->text, st->len);
    if (hit) {
        size_t at = (size_t)(hit - s->out);

        fail(s, st, at > 200 ? at - 200 : 0, "it appeared in the output at byte %zu", at);
        return -1;
    }
    return 0;
}

static int do_send(struct session *s, const struct step *st)
{
    int64_t deadline = now_ms() + s->timeout_ms;
    size_t off = 0;

    while (off < st->len) {
        ssize_t w = write(s->master, st->text + off, st->len - off);
        int r;

        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN) {
            fail(s, st, s->match, "cannot type: %s",
                 errno == EIO ? "the terminal is closed" : strerror(errno));
            return -1;
        }
        /* The terminal's input queue is full: keep reading output so CMD can go on. */
        if (now_ms() >= deadline) {
            fail(s, st, s->match, "the command did not read its input within %" PRId64 " s",
                 s->timeout_ms / 1000);
            return -1;
        }
        r = session_pump(s, deadline, true);
        if (r < 0)
            return fail_errno(s, st, r);
    }
    return 0;
}

static int do_wait(struct session *s, const struct step *st)
{
    int64_t deadline = now_ms() + s->timeout_ms, hold_end = -1;

    for (;;) {
        int64_t until = deadline;
        int r;

        if (s->reaped) {
            if (s->eof)
                break;
            /* A background process may still hold the terminal; do not wait for it long. */
            if (hold_end < 0)
                hold_end = now_ms() + HOLD_GRACE_MS;
            else if (now_ms() >= hold_end)
                break;
            if (hold_end < until)
                until = hold_end;
        } else if (now_ms() >= deadline) {
            fail(s, st, s->match, "the command is still running after %" PRId64 " s",
                 s->timeout_ms / 1000);
            return -1;
        }
        r = session_pump(s, until, false);
        if (r < 0)
            return fail_errno(s, st, r);
    }
    if (WIFSIGNALED(s->wstatus)) {
        fail(s, st, s->match, "the command was killed by signal %d (%s)", WTERMSIG(s->wstatus),
             strsignal(WTERMSIG(s->wstatus)));
        return -1;
    }
    if (!WIFEXITED(s->wstatus) || WEXITSTATUS(s->wstatus) != st->status) {
        fail(s, st, s->match, "the command exited with status %d", WEXITSTATUS(s->wstatus));
        return -1;
    }
    return 0;
}

/* Types what the file named by st->text holds, once it ends with a newline: a value the test
 * learns only while CMD runs (an address a browser was sent to). */
static int do_sendfile(struct session *s, const struct step *st)
{
    int64_t deadline = now_ms() + s->timeout_ms;
    char path[4096];
    int r;

    (void)snprintf(path, sizeof path, "%.*s", (int)st->len, st->text);
    for (;;) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd >= 0) {
            char *data = NULL;
            size_t n = 0;

            r = read_all(fd, &data, &n);
            (void)close(fd);
            if (r < 0)
                return fail_errno(s, st, r);
            if (n > 0 && data[n - 1] == '\n') {
                struct step typed = *st;

                for (size_t i = 0; i < n; i++)
                    if (data[i] == '\n')
                        data[i] = '\r';
                typed.text = data;
                typed.len = n;
                r = do_send(s, &typed);
                free(data);
                return r;
            }
            free(data);
        }
        if (now_ms() >= deadline) {
            fail(s, st, s->match, "'%s' held no complete line within %" PRId64 " s", path,
                 s->timeout_ms / 1000);
            return -1;
        }
        r = session_pump(s, now_ms() + TICK_MS, false);
        if (r < 0)
            return fail_errno(s, st, r);
    }
}

/* Ends CMD's session: hang up the terminal, and kill what is left of its process group. */
static void session_end(struct session *s, bool force)
{
    if (!s->reaped && force)
        (void)kill(-s->pid, SIGKILL); /* the leader is not reaped, so the group id is still ours */
    if (s->master >= 0) {
        (void)session_read(s);
        (void)close(s->master); /* SIGHUP to the terminal's foreground group */
        s->master = -1;
    }
    if (!s->reaped) {
        int64_t end = now_ms() + 2000;

        while (!s->reaped && now_ms() < end) {
            (void)poll(NULL, 0, 20);
            session_reap(s);
        }
        if (!s->reaped) {
            (void)kill(-s->pid, SIGKILL);
            while (waitpid(s->pid, &s->wstatus, 0) < 0 && errno == EINTR)
                ;
            s->reaped = true;
        }
    }
}

static int session_run(struct session *s)
{
    for (size_t i = 0; i < s->script->n; i++) {
        const struct step *st = &s->script->steps[i];
        int r = 0;

        switch (st->op) {
        case OP_EXPECT:
            r = do_expect(s, st);
            break;
        case OP_SEND:
        case OP_SENDLINE:
            r = do_send(s, st);
            break;
        case OP_SENDFILE:
            r = do_sendfile(s, st);
            break;
        case OP_NOECHO:
            r = do_noecho(s, st);
            break;
        case OP_WAIT:
            r = do_wait(s, st);
            break;
        }
        if (r < 0)
            return r;
    }
    return 0;
}

/* In the child: become a session leader with the pty's slave side as controlling terminal and
 * stdin/stdout/stderr, then run CMD. On failure, errno goes back to the parent through errfd. */
static _Noreturn void child_exec(int slave, int errfd, char **argv)
{
    sigset_t none;
    int e;

    (void)sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
    (void)signal(SIGPIPE, SIG_DFL); /* ignored dispositions survive exec */
    if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
        goto fail;
    for (int fd = 0; fd < 3; fd++)
        if (dup2(slave, fd) < 0)
            goto fail;
    if (slave > 2)
        (void)close(slave);
    execvp(argv[0], argv);
fail:
    e = errno;
    (void)!write(errfd, &e, sizeof e);
    _exit(127);
}

static int session_start(struct session *s, char **argv)
{
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    char name[128];
    int slave = -1, pipefd[2] = {-1, -1}, e = 0, r;
    ssize_t n;

    s->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s->master < 0 || grantpt(s->master) < 0 || unlockpt(s->master) < 0 ||
        ptsname_r(s->master, name, sizeof name) != 0) {
        r = -errno;
        fprintf(stderr, "ptydrive: cannot open a pseudo-terminal: %s\n", strerror(errno));
        goto out;
    }
    /* Holding the slave open until CMD has it means an early read cannot see a hang-up. */
    slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0 || ioctl(s->master, TIOCSWINSZ, &ws) < 0 ||
        fcntl(s->master, F_SETFL, fcntl(s->master, F_GETFL) | O_NONBLOCK) < 0 ||
        pipe2(pipefd, O_CLOEXEC) < 0) {
        r = -errno;
        fprintf(stderr, "ptydrive: cannot set up '%s': %s\n", name, strerror(errno));
        goto out;
    }
    s->pid = fork();
    if (s->pid < 0) {
        r = -errno;
        fprintf(stderr, "ptydrive: cannot fork: %s\n", strerror(errno));
        goto out;
    }
    if (s->pid == 0)
        child_exec(slave, pipefd[1], argv);
    (void)close(pipefd[1]);
    pipefd[1] = -1;
    do
        n = read(pipefd[0], &e, sizeof e); /* EOF: exec succeeded and closed the pipe */
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof e) {
        fprintf(stderr, "ptydrive: cannot run '%s': %s\n", argv[0], strerror(e));
        while (waitpid(s->pid, &s->wstatus, 0) < 0 && errno == EINTR)
            ;
        s->reaped = true;
        r = -e;
        goto out;
    }
    r = 0;
out:
    if (slave >= 0)
        (void)close(slave);
    if (pipefd[0] >= 0)
        (void)close(pipefd[0]);
    if (pipefd[1] >= 0)
        (void)close(pipefd[1]);
    return r;
}

static int parse_timeout(const char *s, int64_t *ret)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 1 || v > TIMEOUT_MAX_S) {
        fprintf(stderr, "ptydrive: --timeout needs whole seconds from 1 to %d, not '%s'\n",
                TIMEOUT_MAX_S, s);
        return -EINVAL;
    }
    *ret = (int64_t)v * 1000;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"timeout", required_argument, NULL, 't'},
        {"transcript", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    struct script sc = {0};
    struct session s = {.master = -1, .out_fd = STDOUT_FILENO, .timeout_ms = 10000};
    const char *transcript = NULL;
    struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: poll must return */
    int c, r, ret = EXIT_FAIL;

    while ((c = getopt_long(argc, argv, "+t:o:h", options, NULL)) != -1) {
        switch (c) {
        case 't':
            if (parse_timeout(optarg, &s.timeout_ms) < 0)
                return EXIT_USAGE;
            break;
        case 'o':
            transcript = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (argc - optind < 3 || strcmp(argv[optind + 1], "--") != 0) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (script_load(argv[optind], &sc) < 0)
        return EXIT_USAGE;
    s.script = &sc;
    s.cap = 64 * 1024;
    s.out = malloc(s.cap);
    if (!s.out) {
        fprintf(stderr, "ptydrive: out of memory\n");
        goto out;
    }
    if (transcript) {
        s.out_fd = open(transcript, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (s.out_fd < 0) {
            fprintf(stderr, "ptydrive: cannot write '%s': %s\n", transcript, strerror(errno));
            goto out;
        }
    }

    (void)signal(SIGPIPE, SIG_IGN);
    (void)sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGINT, &sa, NULL);
    (void)sigaction(SIGTERM, &sa, NULL);
    (void)sigaction(SIGHUP, &sa, NULL);

    if (session_start(&s, argv + optind + 2) < 0)
        goto out;
    r = session_run(&s);
    session_end(&s, r < 0);
    if (r == 0)
        ret = 0;
out:
    if (transcript && s.out_fd >= 0)
        (void)close(s.out_fd);
    free(s.out);
    script_release(&sc);
    if (arg_signal) {
        (void)signal((int)arg_signal, SIG_DFL);
        (void)raise((int)arg_signal);
    }
    return ret;
}
