/* loop.c - the bridge's event loop: epoll, a timer min-heap, a signalfd, deferred calls, and
 * libcurl multi driven through its socket and timer callbacks (the shape of curl's
 * docs/examples/ephiperfifo.c, with libuv's phases and close semantics).
 *
 * Removal while dispatching: an epoll batch holds pointers to watchers, and a timer's
 * callback runs after the timer left the heap, so a watcher or timer removed during an
 * iteration is only marked dead (and taken out of epoll or the heap at once); dispatch skips
 * dead objects, and their memory is freed after the iteration (the zombie lists). Outside an
 * iteration nothing can point at them and they are freed at once. */
#include "core/loop.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "credkit/util.h"

#define LOOP_EPOLL_BATCH 64

struct loop_io {
    struct loop *loop;
    int fd;
    unsigned events; /* requested: LOOP_READ | LOOP_WRITE | LOOP_HUP */
    bool registered; /* in the epoll set (not while events == 0) */
    bool always;     /* epoll refused the fd (a regular file, /dev/null): always ready */
    bool dead;
    bool internal; /* the loop's own (signalfd, curl sockets): keeps nothing alive */
    loop_io_fn fn;
    void *userdata;
    struct loop_io *prev, *next; /* l->ios while live; l->dead_ios (next only) when dead */
};

/* Cancelled timers kept for reuse: a few more than the calls usually in flight. */
#define LOOP_SPARE_TIMERS 64

struct loop_timer {
    struct loop *loop;
    int64_t deadline;
    uint64_t seq;    /* ties on deadline fire in arming order */
    size_t heap_idx; /* SIZE_MAX when not armed */
    bool dead;
    bool internal;
    loop_timer_fn fn;
    void *userdata;
    struct loop_timer *prev, *next; /* l->timers while live; l->dead_timers when dead */
};

/* Finished transfers' bookkeeping kept for reuse: a few more than the transfers usually in
 * flight. */
#define LOOP_SPARE_XFERS 64

/* One transfer on the multi handle; found from the easy handle through CURLOPT_PRIVATE. */
struct loop_curl_xfer {
    struct loop *loop;
    CURL *easy;
    loop_curl_done_fn done;
    void *userdata;
    struct loop_curl_xfer *prev, *next;
};

/* A socket number the loop's transfers may use for a connection: known from
 * CURLOPT_SOCKOPTFUNCTION (libcurl opened it for a connection) until CURLOPT_CLOSESOCKETFUNCTION
 * (libcurl closes it). While its connection idles in libcurl's cache between transfers, its
 * watcher is parked: still in the epoll set with the interest of its last transfer, so that the
 * next transfer on it costs no EPOLL_CTL_DEL and EPOLL_CTL_ADD. */
struct loop_curl_sock {
    bool conn;
    struct loop_io *parked;
};

struct loop_sighandler {
    loop_signal_fn fn;
    void *userdata;
};

struct loop {
    int epfd;
    int64_t now;
    bool running;     /* inside loop_run() */
    bool dispatching; /* inside an iteration's callbacks: removals are deferred */
    bool quit;
    int quit_code;

    struct loop_io *ios, *dead_ios;
    size_t n_user_ios;
    size_t n_always_ready; /* live watchers of fds epoll refused, with reading or writing asked */

    struct loop_timer **heap;
    size_t heap_len, heap_cap;
    struct loop_timer *timers, *dead_timers;
    /* timers given back, kept for the next timer_new (next only): most timers are per request
     * (a call's timeout), and a calloc and free for each showed in the allocations per call */
    struct loop_timer *spare_timers;
    size_t n_spare_timers;
    size_t n_timers;     /* live timer objects (the heap's capacity covers them all) */
    size_t n_user_armed; /* armed, not internal */
    uint64_t seq;

    struct list_node deferred;         /* struct loop_deferred, in the order queued */
    struct loop_release *release_head; /* LIFO: each node's fn is independent of the others */

    int sigfd;
    struct loop_io *sig_io;
    bool sig_ready;
    bool mask_saved;
    sigset_t old_mask, sig_mask;
    size_t n_sighandlers;
    struct loop_sighandler sig[_NSIG];

    CURLM *multi;
    struct loop_timer *curl_timer;
    struct loop_curl_xfer *xfers;
    size_t n_xfers;
    /* bookkeeping of finished transfers kept for the next ones (next only), as spare_timers */
    struct loop_curl_xfer *spare_xfers;
    size_t n_spare_xfers;
    struct loop_curl_sock *curl_socks; /* indexed by fd */
    size_t n_curl_socks;
};

/* ---- time ---- */

int64_t loop_now(const struct loop *l)
{
    return l->now;
}

/* Outside an iteration the cached time may be old (the loop was idle or not running yet);
 * refresh it so that a timer added there is measured from the real present. */
static void loop_touch_now(struct loop *l)
{
    if (!l->dispatching)
        l->now = now_mono_ms();
}

bool loop_dispatching(const struct loop *l)
{
    return l && l->dispatching;
}

/* ---- timer heap ---- */

static bool timer_before(const struct loop_timer *a, const struct loop_timer *b)
{
    return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void heap_set(struct loop *l, size_t i, struct loop_timer *t)
{
    l->heap[i] = t;
    t->heap_idx = i;
}

static void heap_sift_up(struct loop *l, size_t i)
{
    struct loop_timer *t = l->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!timer_before(t, l->heap[parent]))
            break;
        heap_set(l, i, l->heap[parent]);
        i = parent;
    }
    heap_set(l, i, t);
}

static void heap_sift_down(struct loop *l, size_t i)
{
    struct loop_timer *t = l->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= l->heap_len)
            break;
        if (child + 1 < l->heap_len && timer_before(l->heap[child + 1], l->heap[child]))
            child++;
        if (!timer_before(l->heap[child], t))
            break;
        heap_set(l, i, l->heap[child]);
        i = child;
    }
    heap_set(l, i, t);
}

/* The heap's capacity is kept >= the number of live timers (loop_timer_add grows it), so
 * arming never allocates and loop_timer_rearm cannot fail. */
static void heap_insert(struct loop *l, struct loop_timer *t)
{
    heap_set(l, l->heap_len++, t);
    heap_sift_up(l, t->heap_idx);
    if (!t->internal)
        l->n_user_armed++;
}

static void heap_remove(struct loop *l, struct loop_timer *t)
{
    size_t i = t->heap_idx;
    if (i == SIZE_MAX)
        return;
    struct loop_timer *last = l->heap[--l->heap_len];
    t->heap_idx = SIZE_MAX;
    if (!t->internal)
        l->n_user_armed--;
    if (last == t)
        return;
    heap_set(l, i, last);
    if (i > 0 && timer_before(last, l->heap[(i - 1) / 2]))
        heap_sift_up(l, i);
    else
        heap_sift_down(l, i);
}

static void timer_arm(struct loop_timer *t, int64_t delay_ms)
{
    struct loop *l = t->loop;
    if (delay_ms < 0)
        delay_ms = 0;
    heap_remove(l, t);
    t->deadline = delay_ms > INT64_MAX - l->now ? INT64_MAX : l->now + delay_ms;
    t->seq = l->seq++;
    heap_insert(l, t);
}

static int timer_new(struct loop *l, bool internal, loop_timer_fn fn, void *userdata,
                     struct loop_timer **ret)
{
    if (l->n_timers >= l->heap_cap) {
        size_t cap = l->heap_cap ? l->heap_cap * 2 : 16;
        struct loop_timer **h = realloc(l->heap, cap * sizeof(*h));
        if (!h)
            return -ENOMEM;
        l->heap = h;
        l->heap_cap = cap;
    }
    struct loop_timer *t = l->spare_timers;
    if (t) {
        l->spare_timers = t->next;
        l->n_spare_timers--;
        *t = (struct loop_timer){0};
    } else {
        t = calloc(1, sizeof(*t));
        if (!t)
            return -ENOMEM;
    }
    t->loop = l;
    t->heap_idx = SIZE_MAX;
    t->internal = internal;
    t->fn = fn;
    t->userdata = userdata;
    t->next = l->timers;
    if (l->timers)
        l->timers->prev = t;
    l->timers = t;
    l->n_timers++;
    *ret = t;
    return 0;
}

/* The end of a cancelled timer no iteration can still see: kept for reuse, up to a bound. */
static void timer_drop(struct loop *l, struct loop_timer *t)
{
    if (l->n_spare_timers >= LOOP_SPARE_TIMERS) {
        free(t);
        return;
    }
    t->next = l->spare_timers;
    l->spare_timers = t;
    l->n_spare_timers++;
}

int loop_timer_add(struct loop *l, int64_t delay_ms, loop_timer_fn fn, void *userdata,
                   struct loop_timer **ret)
{
    struct loop_timer *t;
    if (!l || !fn || !ret)
        return -EINVAL;
    int r = timer_new(l, false, fn, userdata, &t);
    if (r < 0)
        return r;
    loop_touch_now(l);
    timer_arm(t, delay_ms);
    *ret = t;
    return 0;
}

void loop_timer_rearm(struct loop_timer *t, int64_t delay_ms)
{
    if (!t || t->dead)
        return;
    loop_touch_now(t->loop);
    timer_arm(t, delay_ms);
}

void loop_timer_cancel(struct loop_timer *t)
{
    if (!t || t->dead)
        return;
    struct loop *l = t->loop;
    heap_remove(l, t);
    t->dead = true;
    if (t->prev)
        t->prev->next = t->next;
    else
        l->timers = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->prev = NULL;
    l->n_timers--;
    if (l->dispatching) {
        t->next = l->dead_timers;
        l->dead_timers = t;
    } else {
        timer_drop(l, t);
    }
}

/* ---- io ---- */

static uint32_t io_epoll_events(unsigned events)
{
    uint32_t e = 0;
    if (events & LOOP_READ)
        e |= EPOLLIN | EPOLLRDHUP;
    if (events & LOOP_WRITE)
        e |= EPOLLOUT;
    if (events & LOOP_HUP)
        e |= EPOLLRDHUP; /* EPOLLHUP and EPOLLERR come whatever is asked */
    return e;
}

static bool io_always_ready(const struct loop_io *io)
{
    return io->always && !io->dead && (io->events & (LOOP_READ | LOOP_WRITE));
}

/* An fd epoll refuses is one poll() reports always readable and writable (a regular file,
 * /dev/null): read() and write() on it never block, so its watcher is called every iteration
 * while it asks for reading or writing, and the loop does not sleep meanwhile. */
static void io_set_always(struct loop_io *io, unsigned events)
{
    struct loop *l = io->loop;
    if (io_always_ready(io))
        l->n_always_ready--;
    io->events = events;
    if (io_always_ready(io))
        l->n_always_ready++;
}

static int io_apply(struct loop_io *io, unsigned events)
{
    struct loop *l = io->loop;
    struct epoll_event ev = {.events = io_epoll_events(events), .data.ptr = io};
    int op;

    if (io->always) {
        io_set_always(io, events);
        return 0;
    }

    /* an fd with no interest leaves the set: level-triggered HUP/ERR would otherwise be
     * reported on every iteration to a watcher that asked for nothing */
    if (events == 0)
        op = io->registered ? EPOLL_CTL_DEL : -1;
    else
        op = io->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (op >= 0 && epoll_ctl(l->epfd, op, io->fd, &ev) < 0) {
        if (errno != EPERM || op != EPOLL_CTL_ADD || io->internal)
            return -errno;
        io->always = true;
        io_set_always(io, events);
        return 0;
    }
    io->registered = events != 0;
    io->events = events;
    return 0;
}

static int io_new(struct loop *l, int fd, unsigned events, bool internal, loop_io_fn fn,
                  void *userdata, struct loop_io **ret)
{
    if (fd < 0)
        return -EBADF;
    if ((events & ~(unsigned)(LOOP_READ | LOOP_WRITE | LOOP_HUP)) || !fn)
        return -EINVAL;
    struct loop_io *io = calloc(1, sizeof(*io));
    if (!io)
        return -ENOMEM;
    io->loop = l;
    io->fd = fd;
    io->internal = internal;
    io->fn = fn;
    io->userdata = userdata;
    int r = io_apply(io, events);
    if (r < 0) {
        free(io);
        return r;
    }
    io->next = l->ios;
    if (l->ios)
        l->ios->prev = io;
    l->ios = io;
    if (!internal)
        l->n_user_ios++;
    *ret = io;
    return 0;
}

int loop_io_add(struct loop *l, int fd, unsigned events, loop_io_fn fn, void *userdata,
                struct loop_io **ret)
{
    if (!l || !ret)
        return -EINVAL;
    return io_new(l, fd, events, false, fn, userdata, ret);
}

int loop_io_set_events(struct loop_io *io, unsigned events)
{
    if (!io || io->dead || (events & ~(unsigned)(LOOP_READ | LOOP_WRITE | LOOP_HUP)))
        return -EINVAL;
    if (events == io->events)
        return 0;
    return io_apply(io, events);
}

void loop_io_remove(struct loop_io *io)
{
    if (!io || io->dead)
        return;
    struct loop *l = io->loop;
    /* at once, not after the iteration: the caller may close the fd as soon as we return */
    if (io->registered)
        (void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
    if (io_always_ready(io))
        l->n_always_ready--;
    io->registered = false;
    io->dead = true;
    if (io->prev)
        io->prev->next = io->next;
    else
        l->ios = io->next;
    if (io->next)
        io->next->prev = io->prev;
    io->prev = NULL;
    if (!io->internal)
        l->n_user_ios--;
    if (l->dispatching) {
        io->next = l->dead_ios;
        l->dead_ios = io;
    } else {
        free(io);
    }
}

static unsigned io_revents(uint32_t e, unsigned want)
{
    unsigned r = 0;
    if (e & EPOLLIN)
        r |= LOOP_READ;
    if (e & EPOLLOUT)
        r |= LOOP_WRITE;
    if (e & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
        r |= LOOP_HUP | LOOP_READ; /* a reader learns of the hang-up by reading EOF */
    /* interest may have changed since epoll_wait returned, earlier in this iteration */
    return r & (want | LOOP_HUP);
}

/* ---- deferred calls ---- */

static void defer_link(struct loop *l, struct loop_deferred *d, loop_defer_fn fn, void *userdata)
{
    d->fn = fn;
    d->userdata = userdata;
    d->queued = true;
    list_add_tail(&l->deferred, &d->node);
}

int loop_defer(struct loop *l, loop_defer_fn fn, void *userdata)
{
    if (!l || !fn)
        return -EINVAL;
    struct loop_deferred *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->owned = true;
    defer_link(l, d, fn, userdata);
    return 0;
}

void loop_defer_queue(struct loop *l, struct loop_deferred *d, loop_defer_fn fn, void *userdata)
{
    if (d->queued)
        return;
    defer_link(l, d, fn, userdata);
}

void loop_defer_cancel(struct loop_deferred *d)
{
    if (!d->queued)
        return;
    list_remove(&d->node);
    d->queued = false;
}

/* Runs the calls queued so far; calls they queue wait for the next round. One taken back with
 * loop_defer_cancel() while this round runs is simply no longer on the round's list. */
static void defer_run(struct loop *l)
{
    struct list_node round;
    if (list_is_empty(&l->deferred))
        return;
    /* the queue becomes this round's list; the loop's queue starts empty again */
    round = l->deferred;
    round.next->prev = &round;
    round.prev->next = &round;
    list_init(&l->deferred);
    while (!list_is_empty(&round)) {
        struct loop_deferred *d = list_entry(list_first(&round), struct loop_deferred, node);
        list_remove(&d->node);
        d->queued = false;
        loop_defer_fn fn = d->fn;
        void *userdata = d->userdata;
        if (d->owned)
            free(d);
        fn(userdata);
    }
}

void loop_release(struct loop *l, struct loop_release *node, void (*fn)(struct loop_release *node))
{
    if (node->queued)
        return;
    node->queued = true;
    node->fn = fn;
    node->next = l->release_head;
    l->release_head = node;
}

/* Runs the releases queued so far, and those they queue in turn (a release may drop the last
 * reference to another object). */
static void release_run(struct loop *l)
{
    while (l->release_head) {
        struct loop_release *n = l->release_head;
        l->release_head = n->next;
        n->next = NULL;
        n->queued = false;
        n->fn(n);
    }
}

/* ---- signals ---- */

static void sig_io_ready(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct loop *l = userdata;
    l->sig_ready = true; /* read after the other descriptors: signals are their own phase */
}

static void sig_dispatch(struct loop *l)
{
    struct signalfd_siginfo si;
    for (;;) {
        ssize_t n = read(l->sigfd, &si, sizeof(si));
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof(si))
            return; /* EAGAIN: drained */
        int signo = (int)si.ssi_signo;
        if (signo <= 0 || signo >= _NSIG || !l->sig[signo].fn)
            continue;
        l->sig[signo].fn(signo, l->sig[signo].userdata);
    }
}

int loop_signal(struct loop *l, int signo, loop_signal_fn fn, void *userdata)
{
    if (!l || signo <= 0 || signo >= _NSIG || signo == SIGKILL || signo == SIGSTOP)
        return -EINVAL;
    if (!fn) {
        if (l->sig[signo].fn)
            l->n_sighandlers--;
        l->sig[signo].fn = NULL;
        l->sig[signo].userdata = NULL;
        return 0;
    }
    if (l->sig[signo].fn)
        return -EEXIST;

    sigset_t mask = l->sig_mask, one;
    (void)sigemptyset(&one);
    (void)sigaddset(&one, signo);
    (void)sigaddset(&mask, signo);

    /* the new mask is given to the signalfd before the signal is blocked, so that there is no
     * moment where it is blocked and unwatched */
    int fd = signalfd(l->sigfd, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (l->sigfd < 0) {
        struct loop_io *io;
        int r = io_new(l, fd, LOOP_READ, true, sig_io_ready, l, &io);
        if (r < 0) {
            close(fd);
            return r;
        }
        l->sigfd = fd;
        l->sig_io = io;
    }
    /* the bridge is single-threaded, so the process mask is the thread's mask */
    if (sigprocmask(SIG_BLOCK, &one, l->mask_saved ? NULL : &l->old_mask) < 0) {
        int r = -errno;
        (void)signalfd(l->sigfd, &l->sig_mask, SFD_NONBLOCK | SFD_CLOEXEC);
        return r;
    }
    l->mask_saved = true;
    l->sig_mask = mask;
    l->sig[signo].fn = fn;
    l->sig[signo].userdata = userdata;
    l->n_sighandlers++;
    return 0;
}

/* ---- libcurl multi ---- */

static int curl_err(CURLMcode c)
{
    switch (c) {
    case CURLM_OK:
        return 0;
    case CURLM_OUT_OF_MEMORY:
        return -ENOMEM;
    case CURLM_BAD_EASY_HANDLE:
    case CURLM_BAD_HANDLE:
        return -EINVAL;
    case CURLM_ADDED_ALREADY:
        return -EALREADY;
    case CURLM_RECURSIVE_API_CALL:
        return -EDEADLK;
    default:
        return -EIO;
    }
}

static void xfer_unlink(struct loop *l, struct loop_curl_xfer *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        l->xfers = x->next;
    if (x->next)
        x->next->prev = x->prev;
    l->n_xfers--;
    /* the handle is the caller's again: nothing of it points at the loop any more */
    (void)curl_easy_setopt(x->easy, CURLOPT_PRIVATE, NULL);
    (void)curl_easy_setopt(x->easy, CURLOPT_SOCKOPTFUNCTION, NULL);
    (void)curl_easy_setopt(x->easy, CURLOPT_SOCKOPTDATA, NULL);
    (void)curl_easy_setopt(x->easy, CURLOPT_CLOSESOCKETFUNCTION, NULL);
    (void)curl_easy_setopt(x->easy, CURLOPT_CLOSESOCKETDATA, NULL);
    if (l->n_spare_xfers >= LOOP_SPARE_XFERS) {
        free(x);
        return;
    }
    x->next = l->spare_xfers;
    l->spare_xfers = x;
    l->n_spare_xfers++;
}

/* Reports finished transfers. Each message is copied out before the handle is removed (the
 * message lives in the easy handle); a done callback may add or remove other transfers, and
 * removing one drops its queued message too. */
static void curl_check_done(struct loop *l)
{
    CURLMsg *m;
    int left;
    while (l->multi && (m = curl_multi_info_read(l->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *easy = m->easy_handle;
        CURLcode result = m->data.result;
        char *priv = NULL;
        (void)curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
        struct loop_curl_xfer *x = (struct loop_curl_xfer *)(void *)priv;
        (void)curl_multi_remove_handle(l->multi, easy);
        if (!x || x->loop != l)
            continue; /* added to the multi handle behind the loop's back */
        loop_curl_done_fn done = x->done;
        void *userdata = x->userdata;
        xfer_unlink(l, x);
        done(easy, result, userdata);
    }
}

static struct loop_curl_sock *curl_sock(struct loop *l, curl_socket_t s)
{
    return s >= 0 && (size_t)s < l->n_curl_socks ? &l->curl_socks[s] : NULL;
}

/* A parked watcher leaves the epoll set for good (its connection closes, or went bad while
 * idle: libcurl finds that out itself when it next looks at it). */
static void curl_unpark(struct loop *l, struct loop_curl_sock *cs)
{
    if (!cs || !cs->parked)
        return;
    loop_io_remove(cs->parked);
    cs->parked = NULL;
}

static void curl_io_ready(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct loop *l = userdata;
    int mask = 0, running;
    struct loop_curl_sock *cs = curl_sock(l, fd);
    if (cs && cs->parked == io) { /* no transfer on it: the idle connection closed or broke */
        curl_unpark(l, cs);
        return;
    }
    if (events & LOOP_READ)
        mask |= CURL_CSELECT_IN;
    if (events & LOOP_WRITE)
        mask |= CURL_CSELECT_OUT;
    if (events & LOOP_HUP)
        mask |= CURL_CSELECT_ERR;
    (void)curl_multi_socket_action(l->multi, fd, mask, &running);
    curl_check_done(l);
}

static void curl_timer_fired(struct loop_timer *t, void *userdata)
{
    struct loop *l = userdata;
    int running;
    (void)curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    curl_check_done(l);
}

/* A socket no transfer uses any more: parked when it is the socket of a connection libcurl
 * keeps for reuse (the handle's last connection, one the loop saw opened: its close will be
 * reported), else out of the epoll set now. */
static void curl_socket_gone(struct loop *l, CURL *easy, curl_socket_t s, struct loop_io *io)
{
    struct loop_curl_sock *cs = curl_sock(l, s);
    curl_socket_t active = CURL_SOCKET_BAD;

    (void)curl_multi_assign(l->multi, s, NULL);
    /* read interest only: an idle socket is always writable, and would wake the loop at once */
    if (cs && cs->conn && !cs->parked && io->events == LOOP_READ &&
        curl_easy_getinfo(easy, CURLINFO_ACTIVESOCKET, &active) == CURLE_OK && active == s) {
        cs->parked = io;
        return;
    }
    loop_io_remove(io);
}

/* CURLMOPT_SOCKETFUNCTION: one internal watcher per socket, remembered with
 * curl_multi_assign(). Returning -1 makes curl fail the transfer. */
static int curl_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct loop *l = userp;
    struct loop_io *io = socketp;

    if (what == CURL_POLL_REMOVE) {
        if (io)
            curl_socket_gone(l, easy, s, io);
        return 0;
    }
    unsigned events = 0;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        events |= LOOP_READ;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        events |= LOOP_WRITE;
    struct loop_curl_sock *cs = curl_sock(l, s);
    if (!io && cs && cs->parked) { /* the next transfer on a kept connection */
        io = cs->parked;
        cs->parked = NULL;
        if (curl_multi_assign(l->multi, s, io) != CURLM_OK) {
            loop_io_remove(io);
            return -1;
        }
    }
    if (io)
        return loop_io_set_events(io, events) < 0 ? -1 : 0;
    if (io_new(l, s, events, true, curl_io_ready, l, &io) < 0)
        return -1;
    if (curl_multi_assign(l->multi, s, io) != CURLM_OK) {
        loop_io_remove(io);
        return -1;
    }
    return 0;
}

/* CURLOPT_SOCKOPTFUNCTION: libcurl opened s for a connection of one of the loop's transfers. */
static int curl_sockopt_cb(void *clientp, curl_socket_t s, curlsocktype purpose)
{
    struct loop *l = clientp;
    if (purpose != CURLSOCKTYPE_IPCXN || s < 0)
        return CURL_SOCKOPT_OK;
    if ((size_t)s >= l->n_curl_socks) {
        size_t n = (size_t)s + 16;
        struct loop_curl_sock *v = realloc(l->curl_socks, n * sizeof(*v));
        if (!v)
            return CURL_SOCKOPT_OK; /* not known: its watcher is never parked */
        memset(v + l->n_curl_socks, 0, (n - l->n_curl_socks) * sizeof(*v));
        l->curl_socks = v;
        l->n_curl_socks = n;
    }
    /* a socket of that number closed without the callback (one libcurl never used) */
    curl_unpark(l, &l->curl_socks[s]);
    l->curl_socks[s].conn = true;
    return CURL_SOCKOPT_OK;
}

/* CURLOPT_CLOSESOCKETFUNCTION: a parked watcher leaves the epoll set before its fd closes. */
static int curl_closesocket_cb(void *clientp, curl_socket_t s)
{
    struct loop *l = clientp;
    struct loop_curl_sock *cs = curl_sock(l, s);
    if (cs) {
        curl_unpark(l, cs);
        cs->conn = false;
    }
    return close(s);
}

/* CURLMOPT_TIMERFUNCTION: -1 disarms; 0 fires at the end of this iteration (curl_run_due())
 * or, when that already ran, in the next one; never from inside this callback. */
static int curl_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct loop *l = userp;
    if (timeout_ms < 0)
        heap_remove(l, l->curl_timer);
    else
        loop_timer_rearm(l->curl_timer, timeout_ms);
    return 0;
}

/* A 0 ms timeout libcurl asked for during this iteration (a transfer was added: libcurl starts
 * it from its timer) acted on at the end of the iteration, once, instead of after one more
 * round through epoll_wait: libcurl's documentation lets a 0 timeout be acted on at once, only
 * not from inside the timer callback. Returns whether it ran. */
static bool curl_run_due(struct loop *l)
{
    struct loop_timer *t = l->curl_timer;
    if (!t || t->heap_idx == SIZE_MAX || t->deadline > l->now)
        return false;
    heap_remove(l, t);
    curl_timer_fired(t, l);
    return true;
}

/* Idle connections the loop's multi handle keeps, over every server. */
#define LOOP_CURL_MAX_IDLE 128

CURLM *loop_curl_multi(struct loop *l)
{
    if (!l)
        return NULL;
    if (l->multi)
        return l->multi;
    if (!l->curl_timer && timer_new(l, true, curl_timer_fired, l, &l->curl_timer) < 0)
        return NULL;
    CURLM *m = curl_multi_init();
    if (!m)
        return NULL;
    if (curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, curl_socket_cb) != CURLM_OK ||
        curl_multi_setopt(m, CURLMOPT_SOCKETDATA, l) != CURLM_OK ||
        curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, curl_timer_cb) != CURLM_OK ||
        curl_multi_setopt(m, CURLMOPT_TIMERDATA, l) != CURLM_OK ||
        /* idle connections kept for the next requests: libcurl's default (4 per transfer
         * added) closes some whenever the transfers in flight dip, and a burst then pays for
         * new connections (bench/README.md, "The HTTP path kept across requests") */
        curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)LOOP_CURL_MAX_IDLE) != CURLM_OK) {
        (void)curl_multi_cleanup(m);
        return NULL;
    }
    l->multi = m;
    return m;
}

int loop_curl_add(struct loop *l, CURL *easy, loop_curl_done_fn done, void *userdata)
{
    if (!l || !easy || !done)
        return -EINVAL;
    CURLM *m = loop_curl_multi(l);
    if (!m)
        return -ENOMEM;
    struct loop_curl_xfer *x = l->spare_xfers;
    if (x) {
        l->spare_xfers = x->next;
        l->n_spare_xfers--;
    } else {
        x = malloc(sizeof(*x));
        if (!x)
            return -ENOMEM;
    }
    *x = (struct loop_curl_xfer){0};
    x->loop = l;
    x->easy = easy;
    x->done = done;
    x->userdata = userdata;
    /* added before CURLOPT_PRIVATE is touched: a handle that is running already (here or on
     * another multi handle) is refused and keeps its bookkeeping. Adding only arms the timer;
     * the transfer starts, and can finish, no earlier than the next iteration. */
    int r = curl_err(curl_multi_add_handle(m, easy));
    if (r < 0) {
        x->next = l->spare_xfers;
        l->spare_xfers = x;
        l->n_spare_xfers++;
        return r;
    }
    (void)curl_easy_setopt(easy, CURLOPT_PRIVATE, (void *)x);
    /* the connections it opens are known from their opening to their close (parking) */
    (void)curl_easy_setopt(easy, CURLOPT_SOCKOPTFUNCTION, curl_sockopt_cb);
    (void)curl_easy_setopt(easy, CURLOPT_SOCKOPTDATA, (void *)l);
    (void)curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, curl_closesocket_cb);
    (void)curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, (void *)l);
    x->next = l->xfers;
    if (l->xfers)
        l->xfers->prev = x;
    l->xfers = x;
    l->n_xfers++;
    return 0;
}

void loop_curl_remove(struct loop *l, CURL *easy)
{
    if (!l || !easy || !l->multi)
        return;
    char *priv = NULL;
    (void)curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
    struct loop_curl_xfer *x = (struct loop_curl_xfer *)(void *)priv;
    if (!x || x->loop != l || x->easy != easy)
        return; /* not ours, or already finished */
    /* refused from inside one of curl's own callbacks: then the transfer goes on */
    if (curl_multi_remove_handle(l->multi, easy) != CURLM_OK)
        return;
    xfer_unlink(l, x);
}

/* ---- the loop ---- */

int loop_new(struct loop **ret)
{
    if (!ret)
        return -EINVAL;
    struct loop *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0) {
        int r = -errno;
        free(l);
        return r;
    }
    list_init(&l->deferred);
    l->sigfd = -1;
    (void)sigemptyset(&l->sig_mask);
    l->now = now_mono_ms();
    *ret = l;
    return 0;
}

static void free_zombies(struct loop *l)
{
    while (l->dead_ios) {
        struct loop_io *io = l->dead_ios;
        l->dead_ios = io->next;
        free(io);
    }
    while (l->dead_timers) {
        struct loop_timer *t = l->dead_timers;
        l->dead_timers = t->next;
        timer_drop(l, t);
    }
}

void loop_free(struct loop *l)
{
    if (!l)
        return;

    /* deferred calls usually release memory: run them while the loop is still whole */
    l->dispatching = true;
    while (!list_is_empty(&l->deferred) || l->release_head) {
        defer_run(l);
        release_run(l);
    }
    l->dispatching = false;
    free_zombies(l);

    /* the easy handles are the caller's: take them off the multi handle, do not free them */
    while (l->xfers) {
        struct loop_curl_xfer *x = l->xfers;
        (void)curl_multi_remove_handle(l->multi, x->easy);
        xfer_unlink(l, x);
    }
    if (l->multi) {
        (void)curl_multi_cleanup(l->multi); /* may still call the socket callback */
        l->multi = NULL;
    }

    while (l->ios)
        loop_io_remove(l->ios);
    while (l->timers)
        loop_timer_cancel(l->timers);
    while (l->spare_timers) {
        struct loop_timer *t = l->spare_timers;
        l->spare_timers = t->next;
        free(t);
    }
    free(l->heap);

    if (l->sigfd >= 0) {
        /* consume what arrived while blocked, so restoring the mask does not deliver it */
        struct signalfd_siginfo si;
        while (read(l->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            ;
        close(l->sigfd);
    }
    if (l->mask_saved)
        (void)sigprocmask(SIG_SETMASK, &l->old_mask, NULL);

    while (l->spare_xfers) {
        struct loop_curl_xfer *x = l->spare_xfers;
        l->spare_xfers = x->next;
        free(x);
    }
    free(l->curl_socks);
    close(l->epfd);
    free(l);
}

void loop_quit(struct loop *l, int code)
{
    if (!l)
        return;
    l->quit = true;
    l->quit_code = code;
}

static bool loop_alive(const struct loop *l)
{
    return l->n_user_ios > 0 || l->n_user_armed > 0 || l->n_sighandlers > 0 || l->n_xfers > 0 ||
           !list_is_empty(&l->deferred) || l->release_head;
}

static int loop_timeout(const struct loop *l)
{
    if (!list_is_empty(&l->deferred) || l->release_head || l->n_always_ready > 0)
        return 0;
    if (l->heap_len == 0)
        return -1;
    /* measured from the clock, not the cached time: callbacks took time since it was read */
    int64_t d = l->heap[0]->deadline - now_mono_ms();
    if (d <= 0)
        return 0;
    return d > INT_MAX ? INT_MAX : (int)d;
}

static void run_timers(struct loop *l)
{
    /* timers armed from here on (even with delay 0) wait for the next iteration; they sort
     * after every timer due now, since their deadline is >= now and their sequence is newer */
    uint64_t limit = l->seq;
    while (l->heap_len > 0) {
        struct loop_timer *t = l->heap[0];
        if (t->deadline > l->now || t->seq >= limit)
            break;
        heap_remove(l, t);
        t->fn(t, t->userdata);
    }
}

static void run_io(struct loop *l, const struct epoll_event *evs, int n)
{
    for (int i = 0; i < n; i++) {
        struct loop_io *io = evs[i].data.ptr;
        if (io->dead || io->events == 0)
            continue;
        unsigned ev = io_revents(evs[i].events, io->events);
        if (ev)
            io->fn(io, io->fd, ev, io->userdata);
    }
}

/* The watchers of fds epoll refused, as if epoll had reported them ready (at most a batch per
 * iteration; the loop does not sleep while one is left). Collected first: a callback may remove
 * any watcher, whose memory stays until the iteration ends. */
static void run_always(struct loop *l)
{
    struct loop_io *ready[LOOP_EPOLL_BATCH];
    size_t n = 0;
    if (l->n_always_ready == 0)
        return;
    for (struct loop_io *io = l->ios; io && n < LOOP_EPOLL_BATCH; io = io->next)
        if (io_always_ready(io))
            ready[n++] = io;
    for (size_t i = 0; i < n; i++) {
        struct loop_io *io = ready[i];
        if (io_always_ready(io))
            io->fn(io, io->fd, io->events & (LOOP_READ | LOOP_WRITE), io->userdata);
    }
}

static int loop_iterate(struct loop *l)
{
    struct epoll_event evs[LOOP_EPOLL_BATCH];
    int n = epoll_wait(l->epfd, evs, LOOP_EPOLL_BATCH, loop_timeout(l));
    if (n < 0) {
        if (errno != EINTR)
            return -errno;
        n = 0;
    }
    l->now = now_mono_ms();
    l->dispatching = true;
    run_timers(l);
    run_io(l, evs, n);
    run_always(l);
    if (l->sig_ready) {
        l->sig_ready = false;
        sig_dispatch(l);
    }
    defer_run(l);
    if (curl_run_due(l))
        defer_run(l);
    release_run(l);
    l->dispatching = false;
    free_zombies(l);
    return 0;
}

int loop_run(struct loop *l)
{
    if (!l)
        return -EINVAL;
    if (l->running)
        return -EBUSY;
    l->running = true;
    int r = 0;
    for (;;) {
        if (l->quit) {
            r = l->quit_code;
            break;
        }
        if (!loop_alive(l))
            break;
        r = loop_iterate(l);
        if (r < 0)
            break;
    }
    l->quit = false;
    l->quit_code = 0;
    l->running = false;
    return r;
}
