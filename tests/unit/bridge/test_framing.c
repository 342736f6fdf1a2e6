/* test_framing.c - newline-delimited JSON framing on the loop: lines split at every pair of
 * byte boundaries across reads, CRLF and empty lines, the frame bound (exact, over, detected
 * before the newline), EOF with an unterminated last line, 1 MiB messages both ways through
 * pipes and through one socket, backpressure and the queue bound, EPIPE (from send and from
 * the queue; with SIGPIPE at its default disposition too, in a child), close_write with done,
 * pausing, and framing_free() from inside callbacks (ASan catches a use after free); /dev/null
 * and regular files, which epoll refuses, both ways; a writer hanging up while reading is off
 * (a pipe and a socket), seen without reading; messages sent in pieces (partial writes inside
 * and between pieces, a relay whose big pieces stay in the reader's buffer while it reads on),
 * and small messages sent from callbacks written together after them. */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credkit/util.h"

#include "core/framing.h"
#include "core/loop.h"
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

static void new_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) {
        perror("pipe2");
        exit(2);
    }
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void quit_cb(void *userdata)
{
    loop_quit(userdata, 0);
}

/* One loop iteration: reads what is in the pipes now. */
static void run_once(struct loop *l)
{
    CHECK_INT(loop_defer(l, quit_cb, l), 0);
    CHECK_INT(loop_run(l), 0);
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

static void write_all(int fd, const void *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            fprintf(stderr, "write: %s\n", strerror(errno));
            exit(2);
        }
        p = (const char *)p + w;
        n -= (size_t)w;
    }
}

/* ---- a recording handler ---- */

#define REC_MAX 256

struct rec {
    struct loop *l;
    struct framing *f;
    char *msg[REC_MAX];
    size_t len[REC_MAX];
    int n;
    int eofs, errors, error, drains, hangups;
    bool quit_on_hangup;
    int quit_after;  /* loop_quit once this many messages arrived (0: never) */
    int free_after;  /* framing_free() from on_message after this many (0: never) */
    int pause_after; /* framing_set_reading(false) after this many */
    bool quit_on_eof, quit_on_error, free_on_error, free_on_eof;
    struct framing *echo; /* sends every message back through this framing */
    int echo_err;
};

static void rec_message(const char *msg, size_t len, void *userdata)
{
    struct rec *r = userdata;
    CHECK(len > 0);
    CHECK(memchr(msg, '\n', len) == NULL);
    if (r->n < REC_MAX) {
        r->msg[r->n] = malloc(len + 1);
        memcpy(r->msg[r->n], msg, len);
        r->msg[r->n][len] = 0;
        r->len[r->n] = len;
    }
    r->n++;
    if (r->echo) {
        int e = framing_send(r->echo, msg, len);
        if (e < 0)
            r->echo_err = e;
    }
    if (r->pause_after && r->n == r->pause_after)
        framing_set_reading(r->f, false);
    if (r->free_after && r->n == r->free_after) {
        framing_free(r->f);
        r->f = NULL;
    }
    if (r->quit_after && r->n == r->quit_after)
        loop_quit(r->l, 0);
}

static void rec_eof(void *userdata)
{
    struct rec *r = userdata;
    r->eofs++;
    if (r->free_on_eof) {
        framing_free(r->f);
        r->f = NULL;
    }
    if (r->quit_on_eof)
        loop_quit(r->l, 0);
}

static void rec_error(int error, void *userdata)
{
    struct rec *r = userdata;
    r->errors++;
    r->error = error;
    if (r->free_on_error) {
        framing_free(r->f);
        r->f = NULL;
    }
    if (r->quit_on_error)
        loop_quit(r->l, 0);
}

static void rec_drain(void *userdata)
{
    struct rec *r = userdata;
    r->drains++;
}

static void rec_hangup(void *userdata)
{
    struct rec *r = userdata;
    r->hangups++;
    if (r->quit_on_hangup)
        loop_quit(r->l, 0);
}

static const struct framing_handler rec_handler = {
    .on_message = rec_message,
    .on_eof = rec_eof,
    .on_error = rec_error,
    .on_drain = rec_drain,
    .on_hangup = rec_hangup,
};

static void rec_clear(struct rec *r)
{
    for (int i = 0; i < r->n && i < REC_MAX; i++)
        free(r->msg[i]);
    r->n = 0;
}

static struct framing *rec_framing(struct loop *l, struct rec *r, int rfd, int wfd,
                                   size_t max_frame, size_t max_pending)
{
    struct framing_opts o = {.max_frame = max_frame, .max_pending = max_pending};
    r->l = l;
    r->f = NULL;
    CHECK_INT(framing_new(l, rfd, wfd, &rec_handler, &o, r, &r->f), 0);
    if (!r->f)
        exit(2);
    return r->f;
}

/* ---- reading ---- */

static void test_split_every_boundary(void)
{
    static const char in[] = "{\"a\":1}\n\r\n{\"b\":\"x y\"}\r\n\n\n{\"c\":[]}\n{\"d\":0}";
    static const char *const want[] = {"{\"a\":1}", "{\"b\":\"x y\"}", "{\"c\":[]}", "{\"d\":0}"};
    const size_t n = sizeof(in) - 1;
    struct loop *l = new_loop();
    int bad = 0, runs = 0;

    /* three reads, split at every pair of positions (empty pieces included) */
    for (size_t i = 0; i <= n; i++) {
        for (size_t j = i; j <= n; j++) {
            int p[2];
            new_pipe(p);
            struct rec r = {0};
            rec_framing(l, &r, p[0], -1, 0, 0);
            write_all(p[1], in, i);
            run_once(l);
            write_all(p[1], in + i, j - i);
            run_once(l);
            write_all(p[1], in + j, n - j);
            run_once(l);
            /* the unterminated last message comes at EOF */
            int before_eof = r.n;
            close_fd(&p[1]);
            run_once(l);
            runs++;
            bool ok = before_eof == 3 && r.n == 4 && r.eofs == 1 && r.errors == 0;
            for (int k = 0; ok && k < 4; k++)
                ok = strcmp(r.msg[k], want[k]) == 0;
            if (!ok) {
                if (bad++ < 5)
                    fprintf(stderr, "split at %zu,%zu: %d messages (%d before EOF), eof %d\n", i, j,
                            r.n, before_eof, r.eofs);
            }
            framing_free(r.f);
            rec_clear(&r);
            close_fd(&p[0]);
        }
    }
    CHECK_INT(bad, 0);
    CHECK_INT(runs, (n + 1) * (n + 2) / 2);
    loop_free(l);
}

static void test_crlf_and_empty_lines(void)
{
    struct loop *l = new_loop();
    int p[2];
    new_pipe(p);
    struct rec r = {0};
    rec_framing(l, &r, p[0], -1, 0, 0);
    static const char in[] = "\n\r\n\n[1]\r\n\r\n[2]\n[3]\r\r\n \n";
    write_all(p[1], in, sizeof(in) - 1);
    run_once(l);
    CHECK_INT(r.n, 4);
    if (r.n == 4) {
        CHECK_STR(r.msg[0], "[1]");
        CHECK_STR(r.msg[1], "[2]");
        CHECK_STR(r.msg[2], "[3]\r"); /* one '\r' is stripped, not more */
        CHECK_STR(r.msg[3], " ");     /* not empty: the JSON parser behind us judges it */
    }
    CHECK_INT(r.errors, 0);
    CHECK_INT(r.eofs, 0);
    framing_free(r.f);
    rec_clear(&r);
    close_fd(&p[0]);
    close_fd(&p[1]);
    loop_free(l);
}

/* The frame bound at its edges: exactly max, max + 1, an overlong line before its newline,
 * a lone '\r', the default bound (over 80 lines: one list of edge cases, each a few lines). */
static void test_frame_bound(void)
{
    struct loop *l = new_loop();
    const size_t max = 16;
    char at[32], over[32];
    memset(at, 'a', max);
    memset(over, 'o', max + 1);

    /* exactly max bytes passes, with "\n" and with "\r\n", also split inside the "\r\n" */
    int p[2];
    new_pipe(p);
    struct rec r = {0};
    rec_framing(l, &r, p[0], -1, max, 0);
    write_all(p[1], at, max);
    write_all(p[1], "\n", 1);
    write_all(p[1], at, max);
    write_all(p[1], "\r", 1);
    run_once(l);
    CHECK_INT(r.n, 1);
    CHECK_INT(r.errors, 0); /* max bytes and a '\r' may still be a max-byte message */
    write_all(p[1], "\n", 1);
    run_once(l);
    CHECK_INT(r.n, 2);
    CHECK_INT(r.errors, 0);
    for (int i = 0; i < r.n; i++)
        CHECK_INT(r.len[i], max);
    /* max + 1 with its newline: an error, not a message */
    write_all(p[1], over, max + 1);
    write_all(p[1], "\n[ok]\n", 6);
    run_once(l);
    CHECK_INT(r.n, 2);
    CHECK_INT(r.errors, 1);
    CHECK_INT(r.error, -E2BIG);
    /* nothing after the error: the connection is to be dropped */
    write_all(p[1], "[late]\n", 7);
    run_once(l);
    CHECK_INT(r.n, 2);
    CHECK_INT(r.errors, 1);
    CHECK_INT(framing_send(r.f, "x", 1), -EPIPE);
    framing_free(r.f);
    rec_clear(&r);
    close_fd(&p[0]);
    close_fd(&p[1]);

    /* an overlong line is refused before its newline arrives: nothing waits for it */
    new_pipe(p);
    struct rec r2 = {0};
    rec_framing(l, &r2, p[0], -1, max, 0);
    write_all(p[1], over, max + 1);
    run_once(l);
    CHECK_INT(r2.errors, 1);
    CHECK_INT(r2.error, -E2BIG);
    CHECK_INT(r2.n, 0);
    framing_free(r2.f);
    close_fd(&p[0]);
    close_fd(&p[1]);

    /* max bytes, '\r', then not '\n': over */
    new_pipe(p);
    struct rec r3 = {0};
    rec_framing(l, &r3, p[0], -1, max, 0);
    write_all(p[1], at, max);
    write_all(p[1], "\r", 1);
    run_once(l);
    CHECK_INT(r3.errors, 0);
    write_all(p[1], "x", 1);
    run_once(l);
    CHECK_INT(r3.errors, 1);
    CHECK_INT(r3.error, -E2BIG);
    CHECK_INT(r3.n, 0);
    framing_free(r3.f);
    close_fd(&p[0]);
    close_fd(&p[1]);

    /* the default bound, 16 MiB, and a bigger line: refused after about 16 MiB */
    new_pipe(p);
    struct rec r4 = {.quit_on_error = true};
    rec_framing(l, &r4, p[0], -1, 0, 0);
    size_t chunk = 1024 * 1024;
    char *big = malloc(chunk);
    memset(big, 'b', chunk);
    size_t written = 0;
    int fl = fcntl(p[1], F_GETFL);
    (void)fcntl(p[1], F_SETFL, fl & ~O_NONBLOCK);
    while (r4.errors == 0 && written < 20 * chunk) {
        /* the pipe holds 64 KiB: interleave writing and reading */
        for (size_t off = 0; off < chunk; off += 32768) {
            write_all(p[1], big + off, 32768);
            run_once(l);
            if (r4.errors)
                break;
        }
        written += chunk;
    }
    CHECK_INT(r4.errors, 1);
    CHECK_INT(r4.error, -E2BIG);
    CHECK(written > FRAMING_MAX_FRAME_DEFAULT);
    CHECK(written <= FRAMING_MAX_FRAME_DEFAULT + chunk);
    free(big);
    framing_free(r4.f);
    close_fd(&p[0]);
    close_fd(&p[1]);
    loop_free(l);
}

static void test_eof(void)
{
    struct loop *l = new_loop();
    int p[2];
    new_pipe(p);
    struct rec r = {0};
    rec_framing(l, &r, p[0], -1, 0, 0);
    write_all(p[1], "[1]\n[2]", 7);
    run_once(l);
    CHECK_INT(r.n, 1);
    close_fd(&p[1]);
    run_once(l);
    CHECK_INT(r.n, 2);
    if (r.n == 2)
        CHECK_STR(r.msg[1], "[2]");
    CHECK_INT(r.eofs, 1);
    CHECK_INT(r.errors, 0);
    run_once(l);
    CHECK_INT(r.eofs, 1);
    framing_free(r.f);
    rec_clear(&r);
    close_fd(&p[0]);

    /* EOF right after a complete line, and free from inside on_eof */
    new_pipe(p);
    struct rec r2 = {.free_on_eof = true};
    rec_framing(l, &r2, p[0], -1, 0, 0);
    write_all(p[1], "[1]\n", 4);
    close_fd(&p[1]);
    run_once(l); /* one read per wake-up: the data */
    run_once(l); /* and EOF */
    CHECK_INT(r2.n, 1);
    CHECK_INT(r2.eofs, 1);
    CHECK(r2.f == NULL);
    rec_clear(&r2);
    close_fd(&p[0]);
    loop_free(l);
}

static void test_pause_and_free_in_callback(void)
{
    struct loop *l = new_loop();
    int p[2];
    new_pipe(p);
    struct rec r = {.pause_after = 2};
    rec_framing(l, &r, p[0], -1, 0, 0);
    write_all(p[1], "[1]\n[2]\n[3]\n[4]\n", 16);
    close_fd(&p[1]);
    run_once(l);
    CHECK_INT(r.n, 2); /* read together, but delivery stops at once */
    run_once(l);
    CHECK_INT(r.n, 2);
    CHECK_INT(r.eofs, 0);
    /* resumed: the rest, then EOF, from the loop */
    r.quit_on_eof = true;
    framing_set_reading(r.f, true);
    CHECK_INT(r.n, 2);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(r.n, 4);
    CHECK_INT(r.eofs, 1);
    if (r.n == 4)
        CHECK_STR(r.msg[3], "[4]");
    framing_free(r.f);
    rec_clear(&r);
    close_fd(&p[0]);

    /* paused while the last, unterminated line is delivered at EOF: on_eof waits for the
     * resume, which has no more input to wake it */
    new_pipe(p);
    struct rec r4 = {.pause_after = 2};
    rec_framing(l, &r4, p[0], -1, 0, 0);
    write_all(p[1], "[1]\n[2]", 7);
    run_once(l);
    CHECK_INT(r4.n, 1);
    close_fd(&p[1]);
    run_once(l);
    CHECK_INT(r4.n, 2);
    CHECK_INT(r4.eofs, 0);
    r4.quit_on_eof = true;
    framing_set_reading(r4.f, true);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(r4.eofs, 1);
    framing_free(r4.f);
    rec_clear(&r4);
    close_fd(&p[0]);

    /* framing_free() from on_message, with more messages waiting in the same buffer */
    new_pipe(p);
    struct rec r2 = {.free_after = 2};
    rec_framing(l, &r2, p[0], -1, 0, 0);
    write_all(p[1], "[1]\n[2]\n[3]\n[4]\n", 16);
    run_once(l);
    CHECK_INT(r2.n, 2);
    CHECK(r2.f == NULL);
    rec_clear(&r2);
    close_fd(&p[0]);
    close_fd(&p[1]);

    /* framing_free() from on_error */
    new_pipe(p);
    struct rec r3 = {.free_on_error = true, .quit_on_error = true};
    rec_framing(l, &r3, p[0], -1, 4, 0); /* a 6-byte buffer: several reads */
    write_all(p[1], "[1]\n[2345]\n[3]\n", 15);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(r3.n, 1);
    CHECK_INT(r3.errors, 1);
    CHECK(r3.f == NULL);
    rec_clear(&r3);
    close_fd(&p[0]);
    close_fd(&p[1]);
    loop_free(l);
}

/* ---- writing ---- */

static void test_send_arguments(void)
{
    struct loop *l = new_loop();
    int p[2];
    new_pipe(p);
    struct rec r = {0};
    rec_framing(l, &r, -1, p[1], 0, 0);
    CHECK_INT(framing_send(r.f, "", 0), -EINVAL);
    CHECK_INT(framing_send(r.f, "a\nb", 3), -EINVAL);
    CHECK_INT(framing_send(r.f, "{}", 2), 0);
    CHECK_INT(framing_pending(r.f), 0); /* written at once */
    char got[8] = {0};
    CHECK_INT(read(p[0], got, sizeof(got)), 3);
    CHECK_STR(got, "{}\n");
    framing_free(r.f);

    /* a blocking descriptor would block the loop: refused */
    struct framing *f = NULL;
    int fl = fcntl(p[1], F_GETFL);
    (void)fcntl(p[1], F_SETFL, fl & ~O_NONBLOCK);
    CHECK_INT(framing_new(l, -1, p[1], &rec_handler, NULL, &r, &f), -EINVAL);
    CHECK(f == NULL);
    CHECK_INT(framing_new(l, -1, -1, &rec_handler, NULL, &r, &f), -EINVAL);
    close_fd(&p[0]);
    close_fd(&p[1]);
    loop_free(l);
}

#define BIG       (1024 * 1024)
#define BIG_COUNT 8

struct pingpong {
    struct loop *l;
    struct framing *a;
    char *expect[BIG_COUNT];
    int got, bad;
};

static void pp_message(const char *msg, size_t len, void *userdata)
{
    struct pingpong *pp = userdata;
    if (pp->got < BIG_COUNT && (len != BIG || memcmp(msg, pp->expect[pp->got], len) != 0))
        pp->bad++;
    if (++pp->got == BIG_COUNT)
        loop_quit(pp->l, 0);
}

static void pp_error(int error, void *userdata)
{
    struct pingpong *pp = userdata;
    fprintf(stderr, "pingpong: error %d\n", error);
    pp->bad++;
    loop_quit(pp->l, error);
}

static char *big_message(int i)
{
    char *m = malloc(BIG);
    m[0] = '"';
    for (size_t k = 1; k < BIG - 1; k++)
        m[k] = (char)('a' + (k * 7 + (size_t)i) % 26);
    m[BIG - 1] = '"';
    return m;
}

/* A sends 1 MiB messages; B echoes each; A checks what comes back. */
static void pingpong(struct loop *l, int a_r, int a_w, int b_r, int b_w)
{
    struct pingpong pp = {.l = l};
    struct rec b = {0};
    const struct framing_handler ha = {.on_message = pp_message, .on_error = pp_error};
    CHECK_INT(framing_new(l, a_r, a_w, &ha, NULL, &pp, &pp.a), 0);
    rec_framing(l, &b, b_r, b_w, 0, 0);
    b.echo = b.f;
    for (int i = 0; i < BIG_COUNT; i++) {
        pp.expect[i] = big_message(i);
        CHECK_INT(framing_send(pp.a, pp.expect[i], BIG), 0);
    }
    CHECK(framing_pending(pp.a) > 0); /* the pipe does not take 8 MiB at once */
    int64_t t0 = now_mono_ms();
    CHECK_INT(run_for(l, 30000), 0);
    int64_t took = now_mono_ms() - t0;
    fprintf(stderr, "%d x 1 MiB echoed in %lld ms\n", BIG_COUNT, (long long)took);
    CHECK_INT(pp.got, BIG_COUNT);
    CHECK_INT(pp.bad, 0);
    CHECK_INT(b.n, BIG_COUNT);
    CHECK_INT(b.echo_err, 0);
    CHECK_INT(b.errors, 0);
    CHECK_INT(framing_pending(pp.a), 0);
    CHECK_INT(framing_pending(b.f), 0);
    CHECK(took < 20000);
    for (int i = 0; i < BIG_COUNT; i++)
        free(pp.expect[i]);
    framing_free(pp.a);
    framing_free(b.f);
    rec_clear(&b);
}

static void test_big_messages_pipes(void)
{
    struct loop *l = new_loop();
    int ab[2], ba[2];
    new_pipe(ab);
    new_pipe(ba);
    pingpong(l, ba[0], ab[1], ab[0], ba[1]);
    close_fd(&ab[0]);
    close_fd(&ab[1]);
    close_fd(&ba[0]);
    close_fd(&ba[1]);
    loop_free(l);
}

static void test_big_messages_socket(void)
{
    /* one descriptor for both directions */
    struct loop *l = new_loop();
    int sv[2];
    CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    pingpong(l, sv[0], sv[0], sv[1], sv[1]);

    /* a peer gone: EPIPE without SIGPIPE (MSG_NOSIGNAL; SIGPIPE is ignored here anyway) */
    struct rec r = {.quit_on_error = true, .quit_on_eof = true};
    rec_framing(l, &r, sv[0], sv[0], 0, 0);
    close_fd(&sv[1]);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(r.eofs, 1); /* EOF first */
    CHECK_INT(r.errors, 0);
    int e = framing_send(r.f, "[1]", 3);
    CHECK(e == -EPIPE || e == -ECONNRESET);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(r.errors, 1);
    CHECK_INT(r.error, e);
    framing_free(r.f);
    close_fd(&sv[0]);
    loop_free(l);
}

static void test_backpressure(void)
{
    struct loop *l = new_loop();
    int p[2];
    new_pipe(p);
    const size_t max_pending = 1024 * 1024;
    struct rec w = {0};
    rec_framing(l, &w, -1, p[1], 0, max_pending);

    /* nobody reads: the pipe fills (64 KiB), then the queue, up to its bound */
    char msg[10000];
    int sent = 0, r = 0;
    size_t before = 0;
    for (; sent < 1000; sent++) {
        snprintf(msg, sizeof(msg), "[%06d,\"", sent);
        memset(msg + 10, 'x', sizeof(msg) - 12);
        memcpy(msg + sizeof(msg) - 2, "\"]", 2);
        before = framing_pending(w.f);
        r = framing_send(w.f, msg, sizeof(msg));
        if (r < 0)
            break;
    }
    CHECK_INT(r, -ENOBUFS);
    CHECK(sent > 100 && sent < 120);
    CHECK_INT(framing_pending(w.f), before); /* nothing of the refused message queued */
    CHECK(before <= max_pending);
    CHECK(before + sizeof(msg) + 1 > max_pending);
    /* the writer never blocks: the loop keeps running, the queue just waits */
    CHECK_INT(run_for(l, 50), -ETIMEDOUT);
    CHECK_INT(framing_pending(w.f), before);
    CHECK_INT(w.drains, 0);
    CHECK_INT(w.errors, 0);

    /* the reader resumes: everything arrives, in order, and the queue drains */
    struct rec rd = {.quit_after = sent};
    rec_framing(l, &rd, p[0], -1, 0, 0);
    CHECK_INT(run_for(l, 10000), 0);
    CHECK_INT(rd.n, sent);
    int bad = 0;
    for (int i = 0; i < rd.n && i < REC_MAX; i++) {
        char head[16];
        snprintf(head, sizeof(head), "[%06d,\"", i);
        if (rd.len[i] != sizeof(msg) || memcmp(rd.msg[i], head, 9) != 0 ||
            memcmp(rd.msg[i] + sizeof(msg) - 2, "\"]", 2) != 0)
            bad++;
    }
    CHECK_INT(bad, 0);
    CHECK_INT(framing_pending(w.f), 0);
    CHECK_INT(w.drains, 1);
    CHECK_INT(rd.errors, 0);
    /* room again */
    CHECK_INT(framing_send(w.f, msg, sizeof(msg)), 0);
    framing_free(w.f);
    framing_free(rd.f);
    rec_clear(&rd);
    close_fd(&p[0]);
    close_fd(&p[1]);
    loop_free(l);
}

static void test_epipe(void)
{
    struct loop *l = new_loop();

    /* found by send: returned, then reported from the loop, once */
    int p[2];
    new_pipe(p);
    struct rec w = {.quit_on_error = true};
    rec_framing(l, &w, -1, p[1], 0, 0);
    close_fd(&p[0]);
    CHECK_INT(framing_send(w.f, "[1]", 3), -EPIPE);
    CHECK_INT(w.errors, 0); /* never from inside a framing_* call */
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(w.errors, 1);
    CHECK_INT(w.error, -EPIPE);
    CHECK_INT(framing_send(w.f, "[2]", 3), -EPIPE);
    run_once(l);
    CHECK_INT(w.errors, 1);
    framing_free(w.f);
    close_fd(&p[1]);

    /* found while flushing the queue */
    new_pipe(p);
    struct rec w2 = {.quit_on_error = true};
    rec_framing(l, &w2, -1, p[1], 0, 0);
    char msg[4096];
    memset(msg, 'q', sizeof(msg));
    for (int i = 0; i < 40; i++)
        CHECK_INT(framing_send(w2.f, msg, sizeof(msg)), 0);
    CHECK(framing_pending(w2.f) > 0);
    close_fd(&p[0]);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(w2.errors, 1);
    CHECK_INT(w2.error, -EPIPE);
    framing_free(w2.f);
    close_fd(&p[1]);

    /* a reply the peer wrote before it went away is delivered before the write error, even
     * when the error was found first (by send; reported in the timer phase, before reads) */
    int in[2], out[2];
    new_pipe(in);
    new_pipe(out);
    struct rec rw = {.quit_on_error = true};
    rec_framing(l, &rw, in[0], out[1], 0, 0);
    close_fd(&out[0]);
    write_all(in[1], "{\"last\":1}\n", 11);
    CHECK_INT(framing_send(rw.f, "[1]", 3), -EPIPE);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(rw.n, 1);
    CHECK_INT(rw.errors, 1);
    CHECK_INT(rw.error, -EPIPE);
    framing_free(rw.f);
    rec_clear(&rw);
    close_fd(&in[0]);
    close_fd(&in[1]);
    close_fd(&out[1]);
    loop_free(l);
}

/* With SIGPIPE at its default disposition (a library user who did not ignore it), writing to
 * a closed pipe must still be -EPIPE, not death. In a child, to keep our disposition. */
static void test_epipe_sigpipe_default(void)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        struct loop *l = new_loop();
        int p[2];
        new_pipe(p);
        struct rec w = {.quit_on_error = true};
        rec_framing(l, &w, -1, p[1], 0, 0);
        char msg[4096];
        memset(msg, 'q', sizeof(msg));
        int ok = 1;
        for (int i = 0; i < 40; i++) /* also some queued, flushed from the loop */
            ok &= framing_send(w.f, msg, sizeof(msg)) == 0;
        close(p[0]);
        ok &= run_for(l, 5000) == 0 && w.errors == 1 && w.error == -EPIPE;
        ok &= framing_send(w.f, msg, sizeof(msg)) == -EPIPE;
        framing_free(w.f);
        struct framing *f2 = NULL;
        struct rec w3 = {0};
        ok &= framing_new(l, -1, p[1], &rec_handler, NULL, &w3, &f2) == 0;
        ok &= framing_send(f2, "[1]", 3) == -EPIPE;
        sigset_t pending;
        sigpending(&pending);
        ok &= !sigismember(&pending, SIGPIPE);
        framing_free(f2);
        loop_free(l);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK_INT(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status), 0);
}

static void done_cb(int status, void *userdata)
{
    struct rec *r = userdata;
    r->drains += 100;
    r->error = status;
    loop_quit(r->l, 0);
}

struct closer {
    struct rec *r;
    int *fd;
};

static void done_close_cb(int status, void *userdata)
{
    struct closer *c = userdata;
    c->r->error = status;
    c->r->drains += 100;
    /* after done, the framing no longer uses wfd: closing it here is allowed */
    close_fd(c->fd);
}

static void test_close_write(void)
{
    struct loop *l = new_loop();
    int p[2];
    new_pipe(p);
    struct rec w = {.error = 1};
    rec_framing(l, &w, -1, p[1], 0, 0);
    char msg[8192];
    memset(msg, 'c', sizeof(msg));
    for (int i = 0; i < 20; i++)
        CHECK_INT(framing_send(w.f, msg, sizeof(msg)), 0);
    CHECK(framing_pending(w.f) > 0);
    struct closer c = {&w, &p[1]};
    CHECK_INT(framing_close_write(w.f, done_close_cb, &c), 0);
    CHECK_INT(framing_close_write(w.f, done_close_cb, &c), -ESHUTDOWN);
    CHECK_INT(framing_send(w.f, "[1]", 3), -ESHUTDOWN);
    CHECK_INT(run_for(l, 30), -ETIMEDOUT); /* nobody reads yet */
    CHECK_INT(w.drains, 0);

    /* the reader gets everything, then EOF once done closed the pipe */
    struct rec rd = {.quit_on_eof = true};
    rec_framing(l, &rd, p[0], -1, 0, 0);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(rd.n, 20);
    CHECK_INT(rd.eofs, 1);
    CHECK_INT(w.drains, 100); /* done, not on_drain */
    CHECK_INT(w.error, 0);
    CHECK_INT(w.errors, 0);
    CHECK_INT(framing_close_write(w.f, NULL, NULL), -EALREADY);
    framing_free(w.f);
    framing_free(rd.f);
    rec_clear(&rd);
    close_fd(&p[0]);

    /* nothing queued: done still comes from the loop, not from inside the call */
    new_pipe(p);
    struct rec w2 = {.error = 1};
    rec_framing(l, &w2, -1, p[1], 0, 0);
    CHECK_INT(framing_close_write(w2.f, done_cb, &w2), 0);
    CHECK_INT(w2.drains, 0);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(w2.drains, 100);
    CHECK_INT(w2.error, 0);
    framing_free(w2.f);
    close_fd(&p[0]);
    close_fd(&p[1]);

    /* the reader is gone: done gets the error, on_error is not called */
    new_pipe(p);
    struct rec w3 = {0};
    rec_framing(l, &w3, -1, p[1], 0, 0);
    for (int i = 0; i < 20; i++)
        CHECK_INT(framing_send(w3.f, msg, sizeof(msg)), 0);
    CHECK_INT(framing_close_write(w3.f, done_cb, &w3), 0);
    close_fd(&p[0]);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(w3.drains, 100);
    CHECK_INT(w3.error, -EPIPE);
    CHECK_INT(w3.errors, 0);
    framing_free(w3.f);
    close_fd(&p[1]);

    /* without done: the queue is dropped at once and wfd released; a pending done is not
     * called */
    new_pipe(p);
    struct rec w4 = {0};
    rec_framing(l, &w4, -1, p[1], 0, 0);
    for (int i = 0; i < 20; i++)
        CHECK_INT(framing_send(w4.f, msg, sizeof(msg)), 0);
    CHECK_INT(framing_close_write(w4.f, done_cb, &w4), 0);
    CHECK_INT(framing_close_write(w4.f, NULL, NULL), 0);
    CHECK_INT(framing_pending(w4.f), 0);
    CHECK_INT(run_for(l, 30), -ETIMEDOUT);
    CHECK_INT(w4.drains, 0);
    CHECK_INT(w4.errors, 0);
    framing_free(w4.f);
    close_fd(&p[0]);
    close_fd(&p[1]);
    loop_free(l);
}

/* /dev/null and regular files: epoll refuses them; they are always ready, as poll() has it */
static void test_unpollable(void)
{
    struct loop *l = new_loop();
    int in = open("/dev/null", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    int out = open("/dev/null", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    CHECK(in >= 0 && out >= 0);
    struct rec r = {.quit_on_eof = true};
    rec_framing(l, &r, in, out, 0, 0);
    CHECK_INT(framing_send(r.f, "[0]", 3), 0);
    CHECK_INT(run_for(l, 5000), 0); /* end of input at once, not -EPERM */
    CHECK_INT(r.eofs, 1);
    CHECK_INT(r.n, 0);
    CHECK_INT(r.errors, 0);
    framing_free(r.f);
    close_fd(&in);
    close_fd(&out);

    /* a file of messages in, a file out: every message, then EOF; the loop then has nothing
     * left to wait for but the watchers that ask for nothing */
    char inpath[] = "/tmp/test_framing_inXXXXXX", outpath[] = "/tmp/test_framing_outXXXXXX";
    int fi = mkstemp(inpath), fo = mkstemp(outpath);
    CHECK(fi >= 0 && fo >= 0);
    for (int i = 0; i < 1000; i++) {
        char line[32];
        int n = snprintf(line, sizeof(line), "[%d]\n", i);
        write_all(fi, line, (size_t)n);
    }
    CHECK(lseek(fi, 0, SEEK_SET) == 0);
    CHECK(fcntl(fi, F_SETFL, O_NONBLOCK) == 0);
    CHECK(fcntl(fo, F_SETFL, O_NONBLOCK) == 0);
    struct rec r2 = {.quit_on_eof = true};
    rec_framing(l, &r2, fi, fo, 0, 0);
    r2.echo = r2.f;
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(r2.n, 1000);
    CHECK_INT(r2.eofs, 1);
    CHECK_INT(r2.echo_err, 0);
    CHECK_INT(framing_pending(r2.f), 0);
    framing_free(r2.f);
    rec_clear(&r2);
    struct stat st;
    CHECK(fstat(fo, &st) == 0 && st.st_size > 1000 * 4);
    close_fd(&fi);
    close_fd(&fo);
    unlink(inpath);
    unlink(outpath);
    loop_free(l);
}

/* Reading is off (flow control) and the writer goes: noticed without reading, once; what it
 * wrote before is still delivered when reading resumes, then EOF. */
static void test_hangup_while_paused(void)
{
    struct loop *l = new_loop();
    int p[2];
    new_pipe(p);
    struct rec r = {.quit_on_hangup = true};
    rec_framing(l, &r, p[0], -1, 0, 0);
    framing_set_reading(r.f, false);
    write_all(p[1], "[1]\n[2]\n", 8);
    CHECK_INT(run_for(l, 50), -ETIMEDOUT); /* data alone wakes nobody */
    CHECK_INT(r.n, 0);
    CHECK_INT(r.hangups, 0);
    close_fd(&p[1]);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(r.hangups, 1);
    CHECK_INT(r.n, 0);
    CHECK_INT(r.eofs, 0);
    CHECK_INT(run_for(l, 30), -ETIMEDOUT); /* reported once, not on every iteration */
    CHECK_INT(r.hangups, 1);
    r.quit_on_eof = true;
    framing_set_reading(r.f, true);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(r.n, 2);
    CHECK_INT(r.eofs, 1);
    CHECK_INT(r.hangups, 1);
    framing_free(r.f);
    rec_clear(&r);
    close_fd(&p[0]);

    /* a socket whose peer shuts down its writing side (and keeps reading) */
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    struct rec r2 = {.quit_on_hangup = true};
    rec_framing(l, &r2, sv[0], sv[0], 0, 0);
    framing_set_reading(r2.f, false);
    CHECK_INT(framing_send(r2.f, "[0]", 3), 0);
    CHECK_INT(run_for(l, 30), -ETIMEDOUT);
    CHECK(shutdown(sv[1], SHUT_WR) == 0);
    CHECK_INT(run_for(l, 5000), 0);
    CHECK_INT(r2.hangups, 1);
    CHECK_INT(r2.errors, 0);
    framing_free(r2.f);
    close_fd(&sv[0]);
    close_fd(&sv[1]);

    /* without on_hangup nothing is watched while paused: the old behaviour */
    new_pipe(p);
    struct framing_handler h = rec_handler;
    h.on_hangup = NULL;
    struct rec r3 = {0};
    r3.l = l;
    CHECK_INT(framing_new(l, p[0], -1, &h, NULL, &r3, &r3.f), 0);
    framing_set_reading(r3.f, false);
    close_fd(&p[1]);
    CHECK_INT(run_for(l, 50), -ETIMEDOUT);
    CHECK_INT(r3.hangups, 0);
    framing_free(r3.f);
    close_fd(&p[0]);
    loop_free(l);
}

/* ---- writing in pieces ---- */

/* Reads what the pipe holds, at most max bytes, appending to out. */
static size_t read_some(int fd, char *out, size_t have, size_t cap, size_t max)
{
    size_t want = cap - have < max ? cap - have : max;
    ssize_t n = want ? read(fd, out + have, want) : 0;
    return n > 0 ? have + (size_t)n : have;
}

/* framing_sendv from outside the loop: what the pipe does not take at once is queued; the
 * reader takes odd amounts, so partial writes end inside pieces, at their boundaries and on
 * EAGAIN between; the bytes arrive as the pieces joined, then "\n". */
static void test_sendv_partial(void)
{
    static const size_t layouts[][4] = {
        {65535, 1, 65537, 0},
        {0, 10, 200000, 0},
        {70000, 5, 3, 70000},
        {1, 2, 3, 4},
    };
    for (size_t t = 0; t < sizeof(layouts) / sizeof(layouts[0]); t++) {
        struct loop *l = new_loop();
        int p[2];
        new_pipe(p);
        struct rec w = {0};
        rec_framing(l, &w, -1, p[1], 0, 0);
        struct iovec iov[4];
        size_t total = 0;
        for (int i = 0; i < 4; i++)
            total += layouts[t][i];
        char *msg = malloc(total + 1), *got = malloc(total + 1);
        for (size_t k = 0; k < total; k++)
            msg[k] = (char)('a' + (k * 13 + t) % 26);
        msg[total] = '\n';
        size_t off = 0;
        for (int i = 0; i < 4; i++) {
            iov[i] = (struct iovec){msg + off, layouts[t][i]};
            off += layouts[t][i];
        }
        CHECK_INT(framing_sendv(w.f, iov, 4), 0);
        memset(msg, '?', total); /* the caller's bytes may be reused at once */
        for (size_t k = 0; k < total; k++)
            msg[k] = (char)('a' + (k * 13 + t) % 26);
        size_t have = 0;
        static const size_t steps[] = {1, 4093, 65536, 7, 100000};
        for (int i = 0; have < total + 1 && i < 10000; i++) {
            have = read_some(p[0], got, have, total + 1, steps[i % 5]);
            run_once(l);
        }
        CHECK_INT(have, total + 1);
        CHECK(memcmp(got, msg, total + 1) == 0);
        CHECK_INT(framing_pending(w.f), 0);
        CHECK_INT(w.errors, 0);
        free(msg);
        free(got);
        framing_free(w.f);
        close_fd(&p[0]);
        close_fd(&p[1]);
        loop_free(l);
    }
}

/* A relay: each message read from one pipe is sent on in pieces with bytes 10 and 11 replaced
 * by "<ID>", as the bridge sends a result with the agent's id; short ones as they are. The big
 * pieces are held in the reader's buffer while the writer waits, and the reader goes on
 * reading into another: what arrives must be exactly the messages so changed, in order. */
struct relay {
    struct framing *in, *out;
    int n, err;
};

static void relay_message(const char *msg, size_t len, void *userdata)
{
    struct relay *r = userdata;
    int e;
    r->n++;
    if (len > 20) {
        struct iovec iov[3] = {
            {(void *)msg, 10}, {(void *)"<ID>", 4}, {(void *)(msg + 12), len - 12}};
        e = framing_sendv(r->out, iov, 3);
    } else {
        struct iovec iov = {(void *)msg, len};
        e = framing_sendv(r->out, &iov, 1);
    }
    if (e < 0)
        r->err = e;
}

static void relay_error(int error, void *userdata)
{
    struct relay *r = userdata;
    r->err = error;
}

static char *relay_line(size_t len, int seed)
{
    char *m = malloc(len + 1);
    for (size_t k = 0; k < len; k++)
        m[k] = (char)('A' + (k * 7 + (size_t)seed) % 26);
    m[len] = 0;
    return m;
}

static void test_sendv_held(void)
{
    struct loop *l = new_loop();
    int a[2], b[2];
    new_pipe(a);
    new_pipe(b);
    struct rec src = {0};
    rec_framing(l, &src, -1, a[1], 0, 0);
    struct relay rl = {0};
    const struct framing_handler h = {.on_message = relay_message, .on_error = relay_error};
    CHECK_INT(framing_new(l, a[0], -1, &h, NULL, &rl, &rl.in), 0);
    CHECK_INT(framing_new(l, -1, b[1], &h, NULL, &rl, &rl.out), 0);

    /* a big message, small ones behind it (read into the same buffer while the big one is
     * held), a second big one, small ones again */
    static const size_t lens[] = {2u << 20, 30, 5, 100, 3000, 1u << 20, 25, 40000, 70000, 9};
    enum { N = sizeof(lens) / sizeof(lens[0]) };
    size_t expect_len = 0;
    char *lines[N];
    for (int i = 0; i < N; i++) {
        lines[i] = relay_line(lens[i], i);
        CHECK_INT(framing_send(src.f, lines[i], lens[i]), 0);
        expect_len += lens[i] + 1 + (lens[i] > 20 ? 2 : 0);
    }
    char *expect = malloc(expect_len), *got = malloc(expect_len + 1);
    size_t off = 0;
    for (int i = 0; i < N; i++) {
        if (lens[i] > 20) {
            memcpy(expect + off, lines[i], 10);
            memcpy(expect + off + 10, "<ID>", 4);
            memcpy(expect + off + 14, lines[i] + 12, lens[i] - 12);
            off += lens[i] + 2;
        } else {
            memcpy(expect + off, lines[i], lens[i]);
            off += lens[i];
        }
        expect[off++] = '\n';
    }
    CHECK_INT(off, expect_len);

    /* the far end reads slowly: the writer waits (EAGAIN) with the big pieces held */
    size_t have = 0;
    int64_t t0 = now_mono_ms();
    for (int i = 0; have < expect_len && now_mono_ms() - t0 < 20000; i++) {
        run_once(l);
        if (i % 3 == 0)
            have = read_some(b[0], got, have, expect_len + 1, i % 2 ? 30000 : 4096);
    }
    CHECK_INT(have, expect_len);
    CHECK(memcmp(got, expect, expect_len) == 0);
    CHECK_INT(rl.n, N);
    CHECK_INT(rl.err, 0);
    CHECK_INT(framing_pending(rl.out), 0);

    /* and the relay goes on, with small messages only (the spare buffer is given back) */
    CHECK_INT(framing_send(src.f, "[42]", 4), 0);
    have = 0;
    for (int i = 0; have < 5 && i < 100; i++) {
        run_once(l);
        have = read_some(b[0], got, have, 5, 5);
    }
    CHECK_INT(have, 5);
    CHECK(memcmp(got, "[42]\n", 5) == 0);

    for (int i = 0; i < N; i++)
        free(lines[i]);
    free(expect);
    free(got);
    framing_free(src.f);
    framing_free(rl.in);
    framing_free(rl.out);
    for (int i = 0; i < 2; i++) {
        close_fd(&a[i]);
        close_fd(&b[i]);
    }
    loop_free(l);
}

/* Small messages sent from callbacks wait for the end of the iteration and go out together:
 * three lines read at once, relayed, are all queued inside the callbacks and all written,
 * in order, once the iteration is over. */
struct batch {
    struct framing *in, *out;
    size_t pending_seen[4];
    int n;
};

static void batch_message(const char *msg, size_t len, void *userdata)
{
    struct batch *bt = userdata;
    CHECK_INT(framing_send(bt->out, msg, len), 0);
    if (bt->n < 4)
        bt->pending_seen[bt->n] = framing_pending(bt->out);
    bt->n++;
}

static void test_batch(void)
{
    struct loop *l = new_loop();
    int a[2], b[2];
    new_pipe(a);
    new_pipe(b);
    struct batch bt = {0};
    const struct framing_handler h = {.on_message = batch_message, .on_error = relay_error};
    CHECK_INT(framing_new(l, a[0], -1, &h, NULL, &bt, &bt.in), 0);
    CHECK_INT(framing_new(l, -1, b[1], &h, NULL, &bt, &bt.out), 0);
    write_all(a[1], "[1]\n[22]\n[333]\n", 15);
    run_once(l);
    CHECK_INT(bt.n, 3);
    CHECK_INT(bt.pending_seen[0], 4);
    CHECK_INT(bt.pending_seen[1], 9);
    CHECK_INT(bt.pending_seen[2], 15);
    CHECK_INT(framing_pending(bt.out), 0);
    char got[32];
    CHECK_INT(read(b[0], got, sizeof(got)), 15);
    CHECK(memcmp(got, "[1]\n[22]\n[333]\n", 15) == 0);
    /* outside the loop a send is written at once, as before */
    CHECK_INT(framing_send(bt.out, "[4]", 3), 0);
    CHECK_INT(framing_pending(bt.out), 0);
    CHECK_INT(read(b[0], got, sizeof(got)), 4);
    framing_free(bt.in);
    framing_free(bt.out);
    for (int i = 0; i < 2; i++) {
        close_fd(&a[i]);
        close_fd(&b[i]);
    }
    loop_free(l);
}

TESTS_MAIN(test_split_every_boundary, test_crlf_and_empty_lines, test_frame_bound, test_eof,
           test_pause_and_free_in_callback, test_send_arguments, test_big_messages_pipes,
           test_big_messages_socket, test_backpressure, test_epipe, test_epipe_sigpipe_default,
           test_close_write, test_unpollable, test_hangup_while_paused, test_sendv_partial,
           test_sendv_held, test_batch)
