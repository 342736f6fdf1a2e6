/* test_loop.c - the bridge's event loop: timer order and heap, removal from inside callbacks
 * (run under ASan, a use-after-free fails the test), pipes, signals, deferred calls, and
 * libcurl multi against a real HTTP server (libmicrohttpd on 127.0.0.1, port 0) */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <microhttpd.h>

#include "credkit/util.h"

#include "core/loop.h"
#include "httpd.h"
#include "tests.h"

static struct loop *new_loop(void)
{
    struct loop *l = NULL;
    int r = loop_new(&l);
    CHECK_INT(r, 0);
    if (r < 0)
        exit(2);
    return l;
}

static int take_fd(int *fd)
{
    int r = *fd;
    *fd = -1;
    return r;
}

/* ---- timers ---- */

struct order {
    int seen[64];
    int n;
};

struct tmark {
    struct order *o;
    int id;
    int64_t deadline;
    struct loop *l;
    struct loop_timer *t;
    struct loop_timer *victim[2]; /* cancelled when this one fires */
    int rearms;                   /* times left to rearm itself */
};

static void tmark_fire(struct loop_timer *t, void *userdata)
{
    struct tmark *m = userdata;
    CHECK(t == m->t);
    CHECK(loop_now(m->l) >= m->deadline);
    if (m->o->n < (int)ELEMENTSOF(m->o->seen))
        m->o->seen[m->o->n++] = m->id;
    for (size_t i = 0; i < ELEMENTSOF(m->victim); i++) {
        loop_timer_cancel(m->victim[i]);
        m->victim[i] = NULL;
    }
    if (m->rearms > 0) {
        m->rearms--;
        m->deadline = loop_now(m->l) + 2;
        loop_timer_rearm(t, 2);
    }
}

static void tmark_add(struct loop *l, struct tmark *m, struct order *o, int id, int64_t delay)
{
    m->o = o;
    m->id = id;
    m->l = l;
    CHECK_INT(loop_timer_add(l, delay, tmark_fire, m, &m->t), 0);
    m->deadline = loop_now(l) + delay;
}

/* Adds, from inside a callback where loop_now() stands still, timers whose deadlines tie. */
struct tie_ctx {
    struct loop *l;
    struct order o;
    struct tmark m[8];
};

static void tie_start(struct loop_timer *t, void *userdata)
{
    struct tie_ctx *c = userdata;
    static const int64_t delays[] = {30, 10, 20, 10, 0, 10, 30, 0};
    for (int i = 0; i < (int)ELEMENTSOF(delays); i++)
        tmark_add(c->l, &c->m[i], &c->o, i, delays[i]);
    loop_timer_cancel(t);
}

static void test_timer_order(void)
{
    struct loop *l = new_loop();
    struct tie_ctx c = {.l = l};
    struct loop_timer *start;
    CHECK_INT(loop_timer_add(l, 0, tie_start, &c, &start), 0);
    int64_t t0 = now_mono_ms();
    CHECK_INT(loop_run(l), 0);
    CHECK(now_mono_ms() - t0 >= 30);
    static const int want[] = {4, 7, 1, 3, 5, 2, 0, 6};
    CHECK_INT(c.o.n, ELEMENTSOF(want));
    for (int i = 0; i < (int)ELEMENTSOF(want) && i < c.o.n; i++)
        CHECK_INT(c.o.seen[i], want[i]);
    loop_free(l); /* frees the eight fired timers */
}

static void test_timer_cancel(void)
{
    struct loop *l = new_loop();
    struct order o = {0};
    struct tmark a = {0}, b = {0}, c = {0}, d = {0}, self = {0}, after = {0};

    /* a fires first and cancels b (due later) and c (due at the same time, already in the
     * same timer phase) */
    tmark_add(l, &a, &o, 1, 5);
    tmark_add(l, &c, &o, 3, 5);
    tmark_add(l, &b, &o, 2, 20);
    a.victim[0] = b.t;
    a.victim[1] = c.t;
    /* a timer cancelling itself; one after it still fires */
    tmark_add(l, &self, &o, 4, 10);
    self.victim[0] = self.t;
    tmark_add(l, &after, &o, 5, 10);
    /* cancelled before the loop runs */
    tmark_add(l, &d, &o, 6, 1);
    loop_timer_cancel(d.t);

    CHECK_INT(loop_run(l), 0);
    CHECK_INT(o.n, 3);
    CHECK_INT(o.seen[0], 1);
    CHECK_INT(o.seen[1], 4);
    CHECK_INT(o.seen[2], 5);
    loop_timer_cancel(a.t);
    loop_timer_cancel(after.t);
    loop_timer_cancel(NULL);
    loop_free(l);
}

static void test_timer_rearm(void)
{
    struct loop *l = new_loop();
    struct order o = {0};
    struct tmark a = {0}, b = {0}, r = {0};

    /* a pending timer moved later falls behind one that was due after it */
    tmark_add(l, &a, &o, 1, 5);
    tmark_add(l, &b, &o, 2, 15);
    loop_timer_rearm(a.t, 30);
    a.deadline = loop_now(l) + 30;
    /* a timer rearming itself from its callback fires again */
    tmark_add(l, &r, &o, 3, 1);
    r.rearms = 2;

    CHECK_INT(loop_run(l), 0);
    static const int want[] = {3, 3, 3, 2, 1};
    CHECK_INT(o.n, ELEMENTSOF(want));
    for (int i = 0; i < (int)ELEMENTSOF(want) && i < o.n; i++)
        CHECK_INT(o.seen[i], want[i]);

    /* a fired timer can be armed again from outside the loop */
    loop_timer_rearm(b.t, 1);
    b.deadline = loop_now(l) + 1;
    CHECK_INT(loop_run(l), 0);
    CHECK_INT(o.n, 6);
    CHECK_INT(o.seen[5], 2);

    loop_timer_cancel(a.t);
    loop_timer_cancel(b.t);
    loop_timer_cancel(r.t);
    loop_free(l);
}

#define MANY 10000

struct many_timer {
    struct many_ctx *c;
    struct loop_timer *t;
    int64_t deadline;
    int idx;
    uint64_t order; /* arming order among equal deadlines */
};

struct many_ctx {
    struct loop *l;
    struct many_timer m[MANY];
    int64_t last_deadline;
    uint64_t last_order;
    int fired, out_of_order, early, cancelled_fired;
    bool cancelled[MANY];
    unsigned seed;
};

static void many_fire(struct loop_timer *t, void *userdata)
{
    struct many_timer *m = userdata;
    struct many_ctx *c = m->c;
    c->fired++;
    if (c->cancelled[m->idx])
        c->cancelled_fired++;
    if (m->deadline < c->last_deadline ||
        (m->deadline == c->last_deadline && m->order < c->last_order))
        c->out_of_order++;
    if (loop_now(c->l) < m->deadline)
        c->early++;
    c->last_deadline = m->deadline;
    c->last_order = m->order;
    loop_timer_cancel(t);
    m->t = NULL;
    /* every 50th timer also cancels a random still-pending one: removal from the middle */
    if (m->idx % 50 == 0) {
        int v = (int)(rand_r(&c->seed) % MANY);
        if (!c->cancelled[v] && c->m[v].t) {
            c->cancelled[v] = true;
            loop_timer_cancel(c->m[v].t);
            c->m[v].t = NULL;
        }
    }
}

static void test_timer_many(void)
{
    struct many_ctx *c = calloc(1, sizeof(*c));
    CHECK(c != NULL);
    if (!c)
        return;
    c->l = new_loop();
    c->seed = 12345;
    c->last_deadline = INT64_MIN;
    uint64_t order = 0;
    for (int i = 0; i < MANY; i++) {
        struct many_timer *m = &c->m[i];
        m->c = c;
        m->idx = i;
        int64_t delay = (int64_t)(rand_r(&c->seed) % 60);
        CHECK_INT(loop_timer_add(c->l, delay, many_fire, m, &m->t), 0);
        m->deadline = loop_now(c->l) + delay;
        m->order = order++;
    }
    int expect = MANY;
    for (int i = 0; i < MANY; i += 7) { /* cancelled before running */
        c->cancelled[i] = true;
        loop_timer_cancel(c->m[i].t);
        c->m[i].t = NULL;
        expect--;
    }
    for (int i = 3; i < MANY; i += 11) { /* moved */
        if (c->cancelled[i])
            continue;
        int64_t delay = (int64_t)(rand_r(&c->seed) % 60);
        loop_timer_rearm(c->m[i].t, delay);
        c->m[i].deadline = loop_now(c->l) + delay;
        c->m[i].order = order++;
    }
    CHECK_INT(loop_run(c->l), 0);
    int cancelled = 0;
    for (int i = 0; i < MANY; i++)
        cancelled += c->cancelled[i];
    CHECK(cancelled > MANY / 7);
    CHECK_INT(c->fired, MANY - cancelled);
    CHECK(c->fired < expect); /* some were cancelled from callbacks */
    CHECK_INT(c->out_of_order, 0);
    CHECK_INT(c->early, 0);
    CHECK_INT(c->cancelled_fired, 0);
    loop_free(c->l);
    free(c);
}

/* A timer rearmed with delay 0 from its own callback fires once per iteration: a ready pipe
 * (never read, so always ready) gets its turn in between, and the loop does not spin inside
 * one timer phase. */
struct zero_ctx {
    char order[16];
    size_t n;
    struct loop_io *io;
};

static void zero_timer(struct loop_timer *t, void *userdata)
{
    struct zero_ctx *c = userdata;
    c->order[c->n++] = 'T';
    if (c->n < 9)
        loop_timer_rearm(t, 0);
    else {
        loop_io_remove(c->io);
        c->io = NULL;
    }
}

static void zero_io(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct zero_ctx *c = userdata;
    if (c->n < sizeof(c->order) - 1)
        c->order[c->n++] = 'I';
}

static void test_timer_zero(void)
{
    struct loop *l = new_loop();
    struct zero_ctx c = {0};
    int p[2];
    CHECK_INT(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
    CHECK_INT(write(p[1], "x", 1), 1);
    CHECK_INT(loop_io_add(l, p[0], LOOP_READ, zero_io, &c, &c.io), 0);
    struct loop_timer *t;
    CHECK_INT(loop_timer_add(l, 0, zero_timer, &c, &t), 0);
    CHECK_INT(loop_run(l), 0);
    CHECK_STR(c.order, "TITITITIT");
    loop_timer_cancel(t);
    close(p[0]);
    close(p[1]);
    loop_free(l);
}

/* ---- io ---- */

struct pipe_ctx {
    struct loop *l;
    int rfd, wfd;
    struct loop_io *rio, *wio;
    char got[64];
    size_t got_len;
    int writes, reads, hups, read_with_hup;
    const char *chunks[2];
};

static void pipe_write(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct pipe_ctx *c = userdata;
    CHECK(events & LOOP_WRITE);
    CHECK(!(events & LOOP_READ));
    if (c->writes >= 2) {
        FAIL("write called after the last chunk");
        return;
    }
    const char *s = c->chunks[c->writes++];
    CHECK_INT(write(fd, s, strlen(s)), strlen(s));
    /* nothing more to say until the reader asks: the write callback must not come again */
    CHECK_INT(loop_io_set_events(io, 0), 0);
    if (c->writes == 2) {
        loop_io_remove(c->wio);
        c->wio = NULL;
        close(take_fd(&c->wfd));
    }
}

static void pipe_read(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct pipe_ctx *c = userdata;
    CHECK(events & LOOP_READ);
    c->reads++;
    if (events & LOOP_HUP)
        c->hups++;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0 && c->got_len + (size_t)n < sizeof(c->got)) {
        memcpy(c->got + c->got_len, buf, (size_t)n);
        c->got_len += (size_t)n;
        if (c->wio) /* ask for the second chunk */
            CHECK_INT(loop_io_set_events(c->wio, LOOP_WRITE), 0);
    } else if (n == 0) {
        c->read_with_hup = (events & LOOP_HUP) != 0;
        loop_io_remove(c->rio);
        c->rio = NULL;
        close(take_fd(&c->rfd));
    }
}

static void test_io_pipe(void)
{
    struct loop *l = new_loop();
    struct pipe_ctx c = {.l = l, .chunks = {"hello ", "world"}};
    int p[2];
    CHECK_INT(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
    c.rfd = p[0];
    c.wfd = p[1];
    CHECK_INT(loop_io_add(l, c.rfd, LOOP_READ, pipe_read, &c, &c.rio), 0);
    CHECK_INT(loop_io_add(l, c.wfd, LOOP_WRITE, pipe_write, &c, &c.wio), 0);
    struct loop_io *dup_io = NULL;
    CHECK_INT(loop_io_add(l, c.rfd, LOOP_READ, pipe_read, &c, &dup_io), -EEXIST);
    CHECK_INT(loop_io_add(l, -1, LOOP_READ, pipe_read, &c, &dup_io), -EBADF);
    CHECK_INT(loop_io_add(l, c.rfd, 1u << 5, pipe_read, &c, &dup_io), -EINVAL);
    CHECK_INT(loop_run(l), 0); /* ends once both ends are removed */
    CHECK_INT(c.writes, 2);
    c.got[c.got_len] = '\0';
    CHECK_STR(c.got, "hello world");
    CHECK(c.hups >= 1);
    CHECK(c.read_with_hup);
    CHECK(c.rio == NULL && c.wio == NULL);
    loop_free(l);
}

/* Two pipes ready in the same epoll batch: whichever callback runs first removes the other
 * watcher and closes its fd; the other is never called. */
struct batch_ctx {
    int fd[2];
    struct loop_io *io[2];
    int calls[2];
};

static void batch_read(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct batch_ctx *c = userdata;
    int me = io == c->io[0] ? 0 : 1;
    CHECK(io == c->io[me]);
    c->calls[me]++;
    int other = 1 - me;
    loop_io_remove(c->io[other]);
    c->io[other] = NULL;
    close(take_fd(&c->fd[other]));
    loop_io_remove(c->io[me]); /* and itself, while its own callback runs */
    c->io[me] = NULL;
    close(take_fd(&c->fd[me]));
}

/* A timer due in the same iteration as a ready descriptor removes its watcher first. */
struct timer_io_ctx {
    struct loop_io *io;
    int fd;
    int io_calls, timer_calls;
};

static void tio_read(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct timer_io_ctx *c = userdata;
    c->io_calls++;
    loop_io_remove(io);
}

static void tio_timer(struct loop_timer *t, void *userdata)
{
    struct timer_io_ctx *c = userdata;
    c->timer_calls++;
    loop_io_remove(c->io);
    c->io = NULL;
    loop_timer_cancel(t);
}

static void test_io_remove_in_batch(void)
{
    struct loop *l = new_loop();
    struct batch_ctx c = {0};
    int wfd[2];
    for (int i = 0; i < 2; i++) {
        int p[2];
        CHECK_INT(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        c.fd[i] = p[0];
        wfd[i] = p[1];
        CHECK_INT(write(p[1], "x", 1), 1);
        CHECK_INT(loop_io_add(l, p[0], LOOP_READ, batch_read, &c, &c.io[i]), 0);
    }
    CHECK_INT(loop_run(l), 0);
    CHECK_INT(c.calls[0] + c.calls[1], 1);
    close(wfd[0]);
    close(wfd[1]);

    struct timer_io_ctx t = {0};
    int p[2];
    CHECK_INT(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
    CHECK_INT(write(p[1], "x", 1), 1);
    CHECK_INT(loop_io_add(l, p[0], LOOP_READ, tio_read, &t, &t.io), 0);
    struct loop_timer *timer;
    CHECK_INT(loop_timer_add(l, 0, tio_timer, &t, &timer), 0);
    CHECK_INT(loop_run(l), 0);
    CHECK_INT(t.timer_calls, 1);
    CHECK_INT(t.io_calls, 0);
    close(p[0]);
    close(p[1]);
    loop_free(l);
}

/* ---- loop_run and loop_quit ---- */

static void quit_with(struct loop_timer *t, void *userdata)
{
    struct loop *l = *(struct loop **)userdata;
    loop_quit(l, 42);
}

static void never_read(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    FAIL("read callback on an empty pipe");
}

static void count_timer(struct loop_timer *t, void *userdata)
{
    (*(int *)userdata)++;
}

/* Descriptors epoll refuses (/dev/null, a regular file) are always ready while they ask for
 * reading or writing, never with LOOP_HUP; asking for nothing lets the loop end. */
struct always_ctx {
    struct loop_io *io;
    int calls;
    unsigned last;
    int stop_after;
};

static void always_ready(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct always_ctx *c = userdata;
    c->calls++;
    c->last = events;
    if (c->calls == c->stop_after)
        CHECK_INT(loop_io_set_events(io, 0), 0);
}

static void test_io_unpollable(void)
{
    struct loop *l = new_loop();
    int fd = open("/dev/null", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    CHECK(fd >= 0);
    struct always_ctx c = {.stop_after = 3};
    CHECK_INT(loop_io_add(l, fd, LOOP_READ | LOOP_WRITE, always_ready, &c, &c.io), 0);
    struct loop_timer *t = NULL;
    struct loop *lp = l;
    CHECK_INT(loop_timer_add(l, 20, quit_with, &lp, &t), 0);
    /* three calls in a row without sleeping, then nothing asked: the loop sleeps again (a
     * watcher keeps it alive, as any other) until the timer */
    CHECK_INT(loop_run(l), 42);
    CHECK_INT(c.calls, 3);
    CHECK_INT(c.last, LOOP_READ | LOOP_WRITE);
    loop_timer_cancel(t);
    CHECK_INT(loop_timer_add(l, 20, quit_with, &lp, &t), 0);
    CHECK_INT(loop_io_set_events(c.io, LOOP_HUP), 0); /* a file never hangs up */
    CHECK_INT(loop_run(l), 42);
    CHECK_INT(c.calls, 3);
    loop_timer_cancel(t);
    loop_io_remove(c.io);
    c.io = NULL;
    close(fd);
    loop_free(l);
}

/* LOOP_HUP alone: a pipe's last writer closing is reported without reading, and data alone
 * is not. */
struct hup_ctx {
    struct loop *l;
    int hups, others;
};

static void hup_only(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct hup_ctx *c = userdata;
    if (events == LOOP_HUP)
        c->hups++;
    else
        c->others++;
    loop_io_remove(io);
    loop_quit(c->l, 0);
}

static void test_io_hup_only(void)
{
    struct loop *l = new_loop();
    struct loop *lp = l;
    int p[2];
    CHECK_INT(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
    struct hup_ctx c = {.l = l};
    struct loop_io *io = NULL;
    CHECK_INT(loop_io_add(l, p[0], LOOP_HUP, hup_only, &c, &io), 0);
    CHECK_INT(write(p[1], "x", 1), 1);
    struct loop_timer *t = NULL;
    CHECK_INT(loop_timer_add(l, 30, quit_with, &lp, &t), 0);
    CHECK_INT(loop_run(l), 42);
    CHECK_INT(c.hups + c.others, 0);
    close(p[1]);
    loop_timer_rearm(t, 5000);
    CHECK_INT(loop_run(l), 0);
    CHECK_INT(c.hups, 1);
    CHECK_INT(c.others, 0);
    loop_timer_cancel(t);
    close(p[0]);
    loop_free(l);
}

static void test_quit(void)
{
    struct loop *l = new_loop();
    int p[2];
    CHECK_INT(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);

    /* nothing to do */
    CHECK_INT(loop_run(l), 0);

    /* one timer: runs it, then runs out of work */
    int count = 0;
    struct loop_timer *t;
    CHECK_INT(loop_timer_add(l, 1, count_timer, &count, &t), 0);
    CHECK_INT(loop_run(l), 0);
    CHECK_INT(count, 1);
    /* a fired timer keeps nothing alive */
    CHECK_INT(loop_run(l), 0);
    CHECK_INT(count, 1);
    loop_timer_cancel(t);

    /* a watcher that never fires keeps the loop alive until loop_quit */
    struct loop_io *io;
    CHECK_INT(loop_io_add(l, p[0], LOOP_READ, never_read, NULL, &io), 0);
    CHECK_INT(loop_timer_add(l, 5, quit_with, &l, &t), 0);
    int64_t t0 = now_mono_ms();
    CHECK_INT(loop_run(l), 42);
    CHECK(now_mono_ms() - t0 >= 5);
    /* and again: the quit request does not stick */
    loop_timer_rearm(t, 1);
    CHECK_INT(loop_run(l), 42);
    loop_timer_cancel(t);

    loop_io_remove(io);
    CHECK_INT(loop_run(l), 0);
    close(p[0]);
    close(p[1]);
    loop_free(l);
    loop_free(NULL);
}

/* ---- signals ---- */

struct sig_ctx {
    struct loop *l;
    int calls, signo, calls_when_raised;
};

static void on_signal(int signo, void *userdata)
{
    struct sig_ctx *c = userdata;
    c->calls++;
    c->signo = signo;
    loop_quit(c->l, 5);
}

static void raise_usr1(struct loop_timer *t, void *userdata)
{
    struct sig_ctx *c = userdata;
    CHECK_INT(raise(SIGUSR1), 0);
    c->calls_when_raised = c->calls; /* 0: not run by an asynchronous handler */
    loop_timer_cancel(t);
}

static bool usr1_blocked(void)
{
    sigset_t cur;
    (void)sigprocmask(SIG_BLOCK, NULL, &cur);
    return sigismember(&cur, SIGUSR1) == 1;
}

static void test_signal(void)
{
    struct loop *l = new_loop();
    struct sig_ctx c = {.l = l, .calls_when_raised = -1};
    CHECK(!usr1_blocked());
    CHECK_INT(loop_signal(l, SIGUSR1, on_signal, &c), 0);
    CHECK(usr1_blocked());
    CHECK_INT(loop_signal(l, SIGUSR1, on_signal, &c), -EEXIST);
    CHECK_INT(loop_signal(l, SIGKILL, on_signal, &c), -EINVAL);
    CHECK_INT(loop_signal(l, 0, on_signal, &c), -EINVAL);
    struct loop_timer *t;
    CHECK_INT(loop_timer_add(l, 1, raise_usr1, &c, &t), 0);
    CHECK_INT(loop_run(l), 5);
    CHECK_INT(c.calls, 1);
    CHECK_INT(c.calls_when_raised, 0);
    CHECK_INT(c.signo, SIGUSR1);

    /* a handler keeps the loop alive; removed, it does not */
    CHECK_INT(loop_signal(l, SIGUSR1, NULL, NULL), 0);
    CHECK_INT(loop_run(l), 0);
    CHECK(usr1_blocked());

    /* a signal that arrives while nobody runs the loop is discarded by loop_free, not
     * delivered (SIGUSR1's default action would end this program) */
    CHECK_INT(raise(SIGUSR1), 0);
    loop_free(l);
    CHECK(!usr1_blocked());
    CHECK_INT(c.calls, 1);
}

/* ---- curl ---- */

#define NGET 16

struct server {
    struct MHD_Daemon *daemon;
    unsigned port;
    atomic_bool stopping;
};

static char *body_for(unsigned i)
{
    /* different sizes, some larger than one read */
    size_t n = 100 + (size_t)i * 997;
    char *b = malloc(n + 1);
    if (!b)
        exit(2);
    for (size_t k = 0; k < n; k++)
        b[k] = (char)('a' + (k + i) % 26);
    b[n] = '\0';
    return b;
}

/* /slow: one byte every 50 ms for up to 10 s; only a client hanging up ends it early */
static ssize_t slow_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct server *s = cls;
    if (atomic_load(&s->stopping))
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (pos >= 200)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (pos > 0)
        usleep(50 * 1000);
    buf[0] = 's';
    return 1;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    struct server *s = cls;
    struct MHD_Response *r = NULL;
    unsigned i, status = 200;
    if (strcmp(url, "/slow") == 0) {
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64, slow_reader, s, NULL);
    } else if (sscanf(url, "/n/%u", &i) == 1 && i < NGET) {
        char *b = body_for(i);
        r = MHD_create_response_from_buffer(strlen(b), b, MHD_RESPMEM_MUST_FREE);
    } else {
        status = 404;
        r = MHD_create_response_from_buffer(9, (void *)"not found", MHD_RESPMEM_PERSISTENT);
    }
    if (!r)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static void server_start(struct server *s)
{
    atomic_store(&s->stopping, false);
    s->daemon = httpd_start(handler, s, NULL, 0, &s->port);
}

static void server_stop(struct server *s)
{
    atomic_store(&s->stopping, true);
    MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}

struct xfer {
    struct curl_ctx *c;
    CURL *easy;
    char *body;
    size_t len;
    bool done;
    int done_calls;
    CURLcode result;
};

struct curl_ctx {
    struct loop *l;
    struct xfer get[NGET], refused, slow_timer, slow_done;
    int finished;
    struct loop_timer *cancel;
};

static size_t collect(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct xfer *x = userdata;
    size_t n = size * nmemb;
    if (x->len + n > 1u << 20)
        return 0;
    char *b = realloc(x->body, x->len + n + 1);
    if (!b)
        return 0;
    memcpy(b + x->len, data, n);
    x->len += n;
    b[x->len] = '\0';
    x->body = b;
    return n;
}

static void xfer_done(CURL *easy, CURLcode result, void *userdata)
{
    struct xfer *x = userdata;
    CHECK(easy == x->easy);
    x->done = true;
    x->done_calls++;
    x->result = result;
    x->c->finished++;
    /* the first transfer to finish stops the other slow transfer while it is in flight */
    if (x->c->finished == 1) {
        loop_curl_remove(x->c->l, x->c->slow_done.easy);
        loop_curl_remove(x->c->l, easy); /* no longer running: a no-op */
    }
}

static void xfer_setup(struct curl_ctx *c, struct xfer *x, const char *url)
{
    x->c = c;
    x->easy = curl_easy_init();
    CHECK(x->easy != NULL);
    if (!x->easy)
        exit(2);
    (void)curl_easy_setopt(x->easy, CURLOPT_URL, url);
    (void)curl_easy_setopt(x->easy, CURLOPT_PROXY, "");
    (void)curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
    (void)curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, collect);
    (void)curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
    (void)curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, 20000L);
    CHECK_INT(loop_curl_add(c->l, x->easy, xfer_done, x), 0);
}

static void xfer_release(struct xfer *x)
{
    curl_easy_cleanup(x->easy);
    free(x->body);
}

/* Cancels /slow from a timer once it has started to arrive. */
static void cancel_slow(struct loop_timer *t, void *userdata)
{
    struct curl_ctx *c = userdata;
    if (c->slow_timer.len == 0) {
        loop_timer_rearm(t, 20);
        return;
    }
    loop_curl_remove(c->l, c->slow_timer.easy);
    loop_timer_cancel(t);
    c->cancel = NULL;
}

/* A bound socket that does not listen, so that connect() to it is refused; its port in *ret_port. */
static int refusing_socket(unsigned *ret_port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t salen = sizeof(sa);
    CHECK(fd >= 0);
    CHECK_INT(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    CHECK_INT(getsockname(fd, (struct sockaddr *)&sa, &salen), 0);
    *ret_port = ntohs(sa.sin_port);
    return fd;
}

/* A loop with NGET quick transfers, one refused, two slow ones and the timer that cancels one of
 * them, all added. */
static struct curl_ctx *curl_ctx_start(unsigned srv_port, unsigned refused_port)
{
    struct curl_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        exit(2);
    c->l = new_loop();
    CHECK(loop_curl_multi(c->l) != NULL);
    CHECK(loop_curl_multi(c->l) == loop_curl_multi(c->l));
    char url[128];
    for (unsigned i = 0; i < NGET; i++) {
        snprintf(url, sizeof(url), "http://127.0.0.1:%u/n/%u", srv_port, i);
        xfer_setup(c, &c->get[i], url);
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/x", refused_port);
    xfer_setup(c, &c->refused, url);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/slow", srv_port);
    xfer_setup(c, &c->slow_timer, url);
    xfer_setup(c, &c->slow_done, url);
    CHECK_INT(loop_curl_add(c->l, c->get[0].easy, xfer_done, &c->get[0]), -EALREADY);
    CHECK_INT(loop_timer_add(c->l, 20, cancel_slow, c, &c->cancel), 0);
    return c;
}

/* After the first run: every quick transfer answered, the refused one failed, the slow ones
 * stopped without their done callback. */
static void curl_check_first_run(struct curl_ctx *c)
{
    for (unsigned i = 0; i < NGET; i++) {
        struct xfer *x = &c->get[i];
        CHECK_INT(x->done_calls, 1);
        CHECK_INT(x->result, CURLE_OK);
        long code = 0;
        (void)curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
        CHECK_INT(code, 200);
        char *want = body_for(i);
        CHECK(x->body != NULL && strcmp(x->body, want) == 0);
        free(want);
    }
    CHECK_INT(c->refused.done_calls, 1);
    CHECK_INT(c->refused.result, CURLE_COULDNT_CONNECT);
    CHECK_INT(c->slow_timer.done_calls, 0);
    CHECK(c->slow_timer.len > 0 && c->slow_timer.len < 200);
    CHECK_INT(c->slow_done.done_calls, 0);
    CHECK(c->cancel == NULL);
}

/* a handle the loop gave back can go round again */
static void curl_check_again(struct curl_ctx *c)
{
    free(c->get[0].body);
    c->get[0].body = NULL;
    c->get[0].len = 0;
    CHECK_INT(loop_curl_add(c->l, c->get[0].easy, xfer_done, &c->get[0]), 0);
    CHECK_INT(loop_run(c->l), 0);
    CHECK_INT(c->get[0].done_calls, 2);
    CHECK_INT(c->get[0].result, CURLE_OK);
    CHECK_INT(c->get[0].len, 100);
}

/* loop_free with a transfer still running: taken off the multi handle, done not called, the
 * handle still ours to free */
static void curl_check_free_running(struct curl_ctx *c)
{
    c->slow_timer.len = 0;
    CHECK_INT(loop_curl_add(c->l, c->slow_timer.easy, xfer_done, &c->slow_timer), 0);
    struct loop_timer *q;
    CHECK_INT(loop_timer_add(c->l, 100, quit_with, &c->l, &q), 0);
    CHECK_INT(loop_run(c->l), 42);
    CHECK(c->slow_timer.len > 0);
    loop_free(c->l);
    CHECK_INT(c->slow_timer.done_calls, 0);
}

static void curl_ctx_free(struct curl_ctx *c)
{
    for (unsigned i = 0; i < NGET; i++)
        xfer_release(&c->get[i]);
    xfer_release(&c->refused);
    xfer_release(&c->slow_timer);
    xfer_release(&c->slow_done);
    free(c);
}

static void test_curl(void)
{
    CHECK_INT(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
    struct server srv;
    server_start(&srv);
    unsigned refused_port = 0;
    int fd = refusing_socket(&refused_port);
    struct curl_ctx *c = curl_ctx_start(srv.port, refused_port);

    int64_t t0 = now_mono_ms();
    CHECK_INT(loop_run(c->l), 0); /* ends when the last transfer has finished or gone */
    int64_t took = now_mono_ms() - t0;
    CHECK(took < 5000); /* the slow ones were stopped, they would take 10 s */
    curl_check_first_run(c);
    curl_check_again(c);
    curl_check_free_running(c);

    curl_ctx_free(c);
    close(fd);
    server_stop(&srv);
    curl_global_cleanup();
}

/* A keep-alive HTTP/1.1 server in a child process (the test's libmicrohttpd server closes
 * every connection after its answer): one connection at a time, each request answered with
 * body_for(1), "/close" with "close" and Connection: close. On *port, or any port when 0 (then
 * written to *port). */
static pid_t keepalive_server(unsigned *port)
{
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t salen = sizeof(sa);
    CHECK(ls >= 0);
    CHECK_INT(setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
    CHECK_INT(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
    CHECK_INT(getsockname(ls, (struct sockaddr *)&sa, &salen), 0);
    *port = ntohs(sa.sin_port);
    CHECK_INT(listen(ls, 4), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid != 0) {
        close(ls);
        return pid;
    }
    char *body = body_for(1);
    for (;;) {
        int c = accept(ls, NULL, NULL);
        if (c < 0)
            _exit(0);
        char req[4096];
        size_t have = 0;
        ssize_t n;
        while ((n = read(c, req + have, sizeof(req) - 1 - have)) > 0) {
            have += (size_t)n;
            req[have] = '\0';
            if (!strstr(req, "\r\n\r\n"))
                continue;
            bool last = strncmp(req, "GET /close ", 11) == 0;
            const char *b = last ? "close" : body;
            dprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n%s\r\n%s", strlen(b),
                    last ? "Connection: close\r\n" : "", b);
            have = 0;
            if (last)
                break;
        }
        close(c);
    }
}

/* One more transfer of x to url, run to its end: its result, and the connections it opened. */
static CURLcode curl_once(struct curl_ctx *c, struct xfer *x, const char *url, long *ret_connects)
{
    free(x->body);
    x->body = NULL;
    x->len = 0;
    x->done = false;
    (void)curl_easy_setopt(x->easy, CURLOPT_URL, url);
    CHECK_INT(loop_curl_add(c->l, x->easy, xfer_done, x), 0);
    CHECK_INT(loop_run(c->l), 0);
    CHECK(x->done);
    *ret_connects = -1;
    (void)curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, ret_connects);
    return x->result;
}

/* A connection libcurl keeps between transfers keeps its place in the epoll set (parked): the
 * next transfer on it goes out and is answered; one closed after its transfer (Connection:
 * close) is let go of, and the next socket, often of the same number, is watched anew; one the
 * server closes while it idles is let go of, and a transfer elsewhere still runs. */
static void test_curl_kept_connection(void)
{
    CHECK_INT(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
    unsigned port = 0;
    pid_t a = keepalive_server(&port);
    struct server b;
    server_start(&b);
    struct curl_ctx c = {.l = new_loop()};
    struct xfer x = {.c = &c, .easy = curl_easy_init()};
    CHECK(x.easy != NULL);
    if (!x.easy)
        exit(2);
    (void)curl_easy_setopt(x.easy, CURLOPT_PROXY, "");
    (void)curl_easy_setopt(x.easy, CURLOPT_NOSIGNAL, 1L);
    (void)curl_easy_setopt(x.easy, CURLOPT_WRITEFUNCTION, collect);
    (void)curl_easy_setopt(x.easy, CURLOPT_WRITEDATA, &x);
    (void)curl_easy_setopt(x.easy, CURLOPT_TIMEOUT_MS, 5000L);
    char n1[128], cl[128], other[128];
    snprintf(n1, sizeof(n1), "http://127.0.0.1:%u/n/1", port);
    snprintf(cl, sizeof(cl), "http://127.0.0.1:%u/close", port);
    snprintf(other, sizeof(other), "http://127.0.0.1:%u/n/2", b.port);
    long connects = 0;

    CHECK_INT(curl_once(&c, &x, n1, &connects), CURLE_OK);
    CHECK_INT(connects, 1);
    for (int i = 0; i < 3; i++) { /* kept: no new connection, answered */
        CHECK_INT(curl_once(&c, &x, n1, &connects), CURLE_OK);
        CHECK_INT(connects, 0);
        CHECK_INT(x.len, 1097);
    }
    for (int i = 0; i < 3; i++) { /* closed after each: a new socket each time */
        CHECK_INT(curl_once(&c, &x, cl, &connects), CURLE_OK);
        CHECK(x.body && strcmp(x.body, "close") == 0);
        CHECK_INT(curl_once(&c, &x, n1, &connects), CURLE_OK);
        CHECK_INT(connects, 1);
        CHECK_INT(x.len, 1097);
    }
    /* the server goes, and another comes on its port, while the loop does not run: libcurl
     * finds the kept connection dead, closes it and opens another, often of the same number */
    CHECK_INT(kill(a, SIGKILL), 0);
    CHECK_INT(waitpid(a, NULL, 0), a);
    a = keepalive_server(&port);
    CHECK_INT(curl_once(&c, &x, n1, &connects), CURLE_OK);
    CHECK_INT(connects, 1);
    CHECK_INT(x.len, 1097);
    /* the idle connection goes away while the loop runs (a timer keeps it running) */
    CHECK_INT(kill(a, SIGKILL), 0);
    CHECK_INT(waitpid(a, NULL, 0), a);
    struct loop_timer *q;
    CHECK_INT(loop_timer_add(c.l, 100, quit_with, &c.l, &q), 0);
    CHECK_INT(loop_run(c.l), 42);
    int64_t t0 = now_mono_ms();
    CHECK_INT(curl_once(&c, &x, other, &connects), CURLE_OK);
    CHECK(now_mono_ms() - t0 < 4000);
    CHECK_INT(connects, 1);
    CHECK_INT(x.len, 2094);

    loop_free(c.l);
    xfer_release(&x);
    server_stop(&b);
    curl_global_cleanup();
}

TESTS_MAIN(test_timer_order, test_timer_cancel, test_timer_rearm, test_timer_zero, test_timer_many,
           test_io_pipe, test_io_remove_in_batch, test_io_unpollable, test_io_hup_only, test_quit,
           test_signal, test_curl, test_curl_kept_connection)
