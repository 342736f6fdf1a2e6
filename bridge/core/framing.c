/* framing.c - newline-delimited JSON messages over a pair of non-blocking descriptors */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "credkit/io.h"
#include "credkit/list.h"

#include "core/framing.h"
#include "core/rblock.h"

/* The read buffer starts at this size (or max_frame + 2 when smaller) and grows by doubling up
 * to max_frame + 2 while a long line is arriving. */
#define READ_INIT (64u * 1024u)
/* A read gets at least this much room, when the bound allows: the unconsumed tail is moved to
 * the front only when less than this is left behind it, so moving is rare and each byte moves
 * at most once per line. */
#define READ_MIN (16u * 1024u)
/* An empty read buffer bigger than this (a big message went through: rblock.h) is kept as
 * the thread's spare while big messages follow each other, for whichever framing reads the next
 * one, and given back at the first line of at most READ_KEEP / 4. */
#define READ_KEEP RBLOCK_MAP
/* Before a write error is reported, at most this many reads of waiting input. */
#define DRAIN_READS 64
/* Queue chunks: small messages share one; a bigger remainder gets a chunk of its own size. */
#define CHUNK_SIZE (64u * 1024u)
#define WRITE_IOVS 16
/* What framing_sendv() could not write of a piece at least this long, lying in the read buffer
 * of the message being delivered, is queued as a reference to that buffer, not copied. */
#define HOLD_MIN (64u * 1024u)
/* A pipe that carries a line longer than its buffer is given a buffer of this size, or of
 * fs/pipe-max-size when that is smaller: fewer reads, writes and wakeups per big message.
 * Only those pipes: a user's pipes share a budget of pages (pipe-user-pages-soft). */
#define PIPE_BIG (1024u * 1024u)

struct wchunk {
    struct wchunk *next;
    struct rblock *held; /* the bytes are [ext, ext + len) of a read buffer; NULL: data[] */
    const char *ext;
    size_t start; /* written up to here */
    size_t len;   /* filled up to here */
    size_t cap;
    char data[];
};

enum wstate {
    W_OPEN,
    W_CLOSING,  /* framing_close_write() with done: flushing */
    W_RELEASED, /* wfd given back (or there never was one) */
};

struct framing {
    struct loop *loop;
    int rfd, wfd;
    struct loop_io *rio, *wio; /* the same watcher when rfd == wfd */
    struct loop_timer *notify; /* reports, from the loop, what framing_* calls left to do */
    struct framing_handler h;
    void *userdata;
    size_t max_frame, max_pending;

    /* input: bytes [rstart, rlen) of rb are unconsumed; no '\n' in [rstart, rscan) */
    struct rblock *rb;
    size_t rstart, rlen, rscan;
    size_t rlast; /* the length of the last line delivered */
    bool reading; /* wanted by the user */
    bool eof;     /* read() returned 0 */
    bool eof_reported;
    bool hup;          /* the writer hung up while reading was off (on_hangup was called) */
    bool rpipe, wpipe; /* rfd, wfd are pipes whose buffer may still be raised */

    /* output */
    struct wchunk *whead, *wtail, *wspare;
    size_t pending;
    enum wstate wstate;
    framing_done_fn done;
    void *done_userdata;
    int werr;        /* write error not yet reported */
    bool sock;       /* wfd is a socket: send(MSG_NOSIGNAL) */
    bool guard_pipe; /* SIGPIPE not ignored: protect each write */
    /* small messages sent from the loop's callbacks go out together, in one write after them */
    struct loop_deferred flush_later;

    int pending_err; /* a failure found outside a callback, reported by notify */
    bool broken;     /* on_error was called (or is being called) */
    bool freed;      /* framing_free() was called: the memory goes after the loop iteration */
    struct loop_release release;
};

/* Raises a pipe's buffer to PIPE_BIG, or to fs/pipe-max-size when that is smaller; failure is
 * no error (the pipe works as it was). */
static void grow_pipe(int fd)
{
    if (fcntl(fd, F_SETPIPE_SZ, (int)PIPE_BIG) >= 0 || errno != EPERM)
        return;
    char text[24] = "";
    int pfd = open("/proc/sys/fs/pipe-max-size", O_RDONLY | O_CLOEXEC);
    if (pfd < 0)
        return;
    ssize_t n = read(pfd, text, sizeof(text) - 1);
    close(pfd);
    char *end;
    errno = 0;
    long max = n > 0 ? strtol(text, &end, 10) : 0;
    if (n > 0 && !errno && end != text && max > 0 && max < (long)PIPE_BIG)
        (void)fcntl(fd, F_SETPIPE_SZ, (int)max);
}

/* ---- plumbing ---- */

static void notify_soon(struct framing *f)
{
    loop_timer_rearm(f->notify, 0);
}

static unsigned read_interest(const struct framing *f)
{
    return f->rfd >= 0 && f->reading && !f->eof && !f->broken && !f->freed ? LOOP_READ : 0;
}

/* While reading is off, the writer's going away is still watched for (when someone asks). */
static unsigned hup_interest(const struct framing *f)
{
    return f->rfd >= 0 && f->h.on_hangup && !f->reading && !f->eof && !f->hup && !f->broken &&
                   !f->freed
               ? LOOP_HUP
               : 0;
}

/* Not while a batch waits for its write at the end of the iteration. */
static unsigned write_interest(const struct framing *f)
{
    return f->wio && f->wstate != W_RELEASED && f->pending > 0 && !f->werr && !f->broken &&
                   !f->freed && !f->flush_later.queued
               ? LOOP_WRITE
               : 0;
}

static int update_events(struct framing *f)
{
    int r = 0;
    if (f->rio && f->rio == f->wio)
        return loop_io_set_events(f->rio, read_interest(f) | hup_interest(f) | write_interest(f));
    if (f->rio)
        r = loop_io_set_events(f->rio, read_interest(f) | hup_interest(f));
    if (r >= 0 && f->wio)
        r = loop_io_set_events(f->wio, write_interest(f));
    return r;
}

/* A failure found outside a callback: reported from the loop. */
static void break_soon(struct framing *f, int err)
{
    if (!f->pending_err)
        f->pending_err = err;
    notify_soon(f);
}

static void refresh_events(struct framing *f)
{
    int r = update_events(f);
    if (r < 0)
        break_soon(f, r);
}

static void chunk_free(struct wchunk *c)
{
    rblock_put(c->held, true);
    free(c);
}

static const char *chunk_bytes(const struct wchunk *c)
{
    return c->held ? c->ext : c->data;
}

static void queue_clear(struct framing *f)
{
    while (f->whead) {
        struct wchunk *c = f->whead;
        f->whead = c->next;
        chunk_free(c);
    }
    f->wtail = NULL;
    f->pending = 0;
}

static void destroy(struct framing *f)
{
    queue_clear(f);
    free(f->wspare);
    rblock_put(f->rb, false);
    free(f);
    rblock_user_remove();
}

/* framing_free() may come from inside a callback of ours: it marks the framing, and the memory
 * goes through loop_release() once the iteration is over. */
static void release_fn(struct loop_release *node)
{
    destroy(list_entry(node, struct framing, release));
}

/* Calls on_error once; the framing stops watching. */
static void report_error(struct framing *f, int err)
{
    if (f->broken || f->freed)
        return;
    f->broken = true;
    (void)update_events(f); /* removing interest only: cannot fail for want of memory */
    f->h.on_error(err, f->userdata);
}

/* ---- output ---- */

/* One write of iov; -errno on failure (-EAGAIN when the descriptor is full). */
static ssize_t write_iov(struct framing *f, struct iovec *iov, int n)
{
    ssize_t w;
    do {
        if (f->sock) {
            struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
            w = sendmsg(f->wfd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        } else if (f->guard_pipe) {
            w = writev_nosigpipe(f->wfd, iov, n);
        } else {
            w = writev(f->wfd, iov, n);
        }
    } while (w < 0 && errno == EINTR);
    if (w < 0)
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    return w;
}

/* Writes queued bytes until the descriptor is full or the queue empty. 0 or -errno. */
static int flush(struct framing *f)
{
    while (f->whead) {
        struct iovec iov[WRITE_IOVS];
        int n = 0;
        for (struct wchunk *c = f->whead; c && n < WRITE_IOVS; c = c->next)
            iov[n++] = (struct iovec){(char *)chunk_bytes(c) + c->start, c->len - c->start};
        ssize_t w = write_iov(f, iov, n);
        if (w == -EAGAIN)
            return 0;
        if (w < 0)
            return (int)w;
        size_t left = (size_t)w;
        f->pending -= left;
        while (left > 0) {
            struct wchunk *c = f->whead;
            size_t in_c = c->len - c->start;
            if (left < in_c) {
                c->start += left;
                break;
            }
            left -= in_c;
            f->whead = c->next;
            if (!f->whead)
                f->wtail = NULL;
            if (!c->held && c->cap == CHUNK_SIZE && !f->wspare) {
                c->start = c->len = 0;
                c->next = NULL;
                f->wspare = c;
            } else {
                chunk_free(c);
            }
        }
    }
    return 0;
}

/* Copies p to the end of the queue. */
static int enqueue(struct framing *f, const char *p, size_t len)
{
    struct wchunk *c = f->wtail;
    if (!c || c->held || c->cap - c->len < len) {
        if (len <= CHUNK_SIZE && f->wspare) {
            c = f->wspare;
            f->wspare = NULL;
        } else {
            size_t cap = len > CHUNK_SIZE ? len : CHUNK_SIZE;
            c = malloc(sizeof(*c) + cap);
            if (!c)
                return -ENOMEM;
            c->cap = cap;
        }
        c->held = NULL;
        c->start = c->len = 0;
        c->next = NULL;
        if (f->wtail)
            f->wtail->next = c;
        else
            f->whead = c;
        f->wtail = c;
    }
    memcpy(c->data + c->len, p, len);
    c->len += len;
    f->pending += len;
    return 0;
}

/* Queues p, inside the read buffer b, as a reference to b. */
static int enqueue_held(struct framing *f, struct rblock *b, const char *p, size_t len)
{
    struct wchunk *c = malloc(sizeof(*c));
    if (!c)
        return -ENOMEM;
    *c = (struct wchunk){.held = b, .ext = p, .len = len};
    rblock_get(b);
    if (f->wtail)
        f->wtail->next = c;
    else
        f->whead = c;
    f->wtail = c;
    f->pending += len;
    return 0;
}

/* Queues iov[0..n) but its first skip bytes: the big pieces lying in held or in the message
 * being delivered held where they are, the rest copied. */
static int enqueue_iov(struct framing *f, const struct iovec *iov, int n, size_t skip,
                       struct rblock *held)
{
    for (int i = 0; i < n; i++) {
        const char *p = iov[i].iov_base;
        size_t len = iov[i].iov_len;
        if (skip >= len) {
            skip -= len;
            continue;
        }
        p += skip;
        len -= skip;
        skip = 0;
        struct rblock *b = NULL;
        if (len >= HOLD_MIN)
            b = rblock_holds(held, p, len) ? held : rblock_delivering();
        int r = b && rblock_holds(b, p, len) ? enqueue_held(f, b, p, len) : enqueue(f, p, len);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Gives wfd back: no more writing, watching or reporting about it. */
static void release_write(struct framing *f)
{
    f->wstate = W_RELEASED;
    f->done = NULL;
    f->done_userdata = NULL;
    f->werr = 0;
    queue_clear(f);
    if (f->wio && f->wio != f->rio)
        loop_io_remove(f->wio);
    f->wio = NULL;
    f->wfd = -1;
    if (f->rio)
        (void)update_events(f); /* interest only shrinks */
}

static void finish_close(struct framing *f, int status)
{
    framing_done_fn done = f->done;
    void *ud = f->done_userdata;
    release_write(f);
    if (done)
        done(status, ud);
}

static int read_once(struct framing *f);

/* A write failed in the loop: input already waiting is delivered first, then the error. */
static void write_failed(struct framing *f, int err)
{
    f->werr = err;
    if (f->wstate == W_CLOSING) {
        finish_close(f, err);
        return;
    }
    (void)update_events(f);
    for (int i = 0; i < DRAIN_READS && read_interest(f); i++)
        if (read_once(f) <= 0)
            break;
    if (!f->freed)
        report_error(f, err);
}

static void handle_writable(struct framing *f)
{
    int r = flush(f);
    if (r < 0) {
        write_failed(f, r);
        return;
    }
    if (f->pending > 0)
        return;
    (void)update_events(f);
    if (f->wstate == W_CLOSING)
        finish_close(f, 0);
    else if (f->h.on_drain)
        f->h.on_drain(f->userdata);
}

/* ---- input ---- */

/* Hands one line to on_message, its buffer marked as the one being delivered. */
static void deliver_line(struct framing *f, const char *line, size_t len)
{
    struct rblock *outer = rblock_set_delivering(f->rb);
    f->h.on_message(line, len, f->userdata);
    (void)rblock_set_delivering(outer);
}

/* Everything read has been delivered: the buffer is reused from its front, or left to the
 * writer holding part of it, or (when big) kept as the spare while big lines go on, else given
 * back. */
static void read_buffer_empty(struct framing *f)
{
    f->rstart = f->rlen = f->rscan = 0;
    struct rblock *b = f->rb;
    if (!b || (b->refs == 1 && b->cap <= READ_KEEP))
        return;
    f->rb = NULL;
    rblock_put(b, f->rlast > READ_KEEP / 4);
}

/* Delivers complete lines (and at EOF the unterminated last one) while the user reads. */
static void deliver(struct framing *f)
{
    while (f->reading && !f->broken && !f->freed && f->rstart < f->rlen) {
        char *line = f->rb->data + f->rstart;
        char *nl = memchr(f->rb->data + f->rscan, '\n', f->rlen - f->rscan);
        size_t len, consume;
        if (nl) {
            len = (size_t)(nl - line);
            consume = len + 1;
        } else {
            f->rscan = f->rlen;
            len = consume = f->rlen - f->rstart;
            /* a max_frame message may still be followed by "\r\n": wait for the '\n' */
            if (len > f->max_frame + 1 || (len == f->max_frame + 1 && line[len - 1] != '\r')) {
                report_error(f, -E2BIG);
                return;
            }
            if (!f->eof)
                return;
        }
        if (len > 0 && line[len - 1] == '\r')
            len--;
        if (len > f->max_frame) {
            report_error(f, -E2BIG);
            return;
        }
        f->rstart += consume;
        f->rscan = f->rstart;
        f->rlast = len;
        if (len <= READ_KEEP / 4)
            rblock_spare_drop(); /* big messages no longer follow each other */
        if (len > 0)
            deliver_line(f, line, len);
    }
    if (f->freed || f->broken)
        return;
    if (f->rstart == f->rlen)
        read_buffer_empty(f);
    if (f->eof && !f->eof_reported && f->reading && f->rlen == 0) {
        f->eof_reported = true;
        if (f->h.on_eof)
            f->h.on_eof(f->userdata);
    }
}

/* A buffer of its own for a framing whose buffer a writer holds (or that has none): the
 * unconsumed tail copied over, room for a read behind it. The spare when it is big enough. */
static int move_to_new_block(struct framing *f, size_t limit)
{
    size_t used = f->rlen - f->rstart;
    size_t cap = READ_INIT;
    while (cap < used + READ_MIN && cap < limit)
        cap *= 2;
    if (cap > limit)
        cap = limit;
    struct rblock *n = rblock_spare_take(cap);
    if (!n)
        n = rblock_new(cap);
    if (!n)
        return -ENOMEM;
    if (f->rb) {
        memcpy(n->data, f->rb->data + f->rstart, used);
        rblock_put(f->rb, true);
    }
    f->rb = n;
    f->rscan -= f->rstart;
    f->rlen = used;
    f->rstart = 0;
    return 0;
}

/* Makes room for a read: the largest of what is left behind the data, the front moved up,
 * the buffer doubled (or the spare taken); never beyond max_frame + 2. A buffer a writer
 * holds is never moved or written over: the reader goes on in another. */
static int make_room(struct framing *f)
{
    size_t limit = f->max_frame + 2;
    struct rblock *b = f->rb;
    if (b && b->cap - f->rlen >= READ_MIN)
        return 0;
    if (!b || b->refs > 1)
        return move_to_new_block(f, limit);
    if (f->rstart > 0) {
        memmove(b->data, b->data + f->rstart, f->rlen - f->rstart);
        f->rlen -= f->rstart;
        f->rscan -= f->rstart;
        f->rstart = 0;
        if (b->cap - f->rlen >= READ_MIN)
            return 0;
    }
    if (b->cap >= limit)
        return f->rlen < b->cap ? 0 : -E2BIG; /* deliver() reports long lines first */
    size_t cap = b->cap > limit / 2 ? limit : b->cap * 2;
    if (f->rpipe && cap > CHUNK_SIZE) {
        /* a long line: the rest of it in fewer, bigger reads */
        f->rpipe = false;
        grow_pipe(f->rfd);
    }
    struct rblock *n = rblock_spare_take(cap);
    if (n) {
        memcpy(n->data, b->data, f->rlen);
        rblock_put(b, false);
        f->rb = n;
        return 0;
    }
    return rblock_grow(&f->rb, cap, f->rlen);
}

/* One read and the deliveries it allows. 1 after data, 0 at EOF, -EAGAIN when nothing is
 * there, another -errno after reporting it. */
static int read_once(struct framing *f)
{
    int r = make_room(f);
    if (r < 0) {
        report_error(f, r);
        return r;
    }
    ssize_t n;
    do
        n = read(f->rfd, f->rb->data + f->rlen, f->rb->cap - f->rlen);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        r = errno == EWOULDBLOCK ? -EAGAIN : -errno;
        if (r != -EAGAIN)
            report_error(f, r);
        return r;
    }
    if (n == 0) {
        f->eof = true;
        (void)update_events(f);
    } else {
        f->rlen += (size_t)n;
    }
    deliver(f);
    return n > 0 ? 1 : 0;
}

/* ---- from the loop ---- */

static void on_io(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct framing *f = userdata;
    (void)fd;
    if (io == f->wio && (events & (LOOP_WRITE | LOOP_HUP)) && write_interest(f))
        handle_writable(f);
    if (io == f->rio && (events & (LOOP_READ | LOOP_HUP)) && read_interest(f)) {
        (void)read_once(f);
    } else if (io == f->rio && (events & LOOP_HUP) && hup_interest(f)) {
        /* level-triggered: reported once, then no longer watched */
        f->hup = true;
        (void)update_events(f); /* interest only shrinks */
        f->h.on_hangup(f->userdata);
    }
}

static void on_notify(struct loop_timer *t, void *userdata)
{
    struct framing *f = userdata;
    (void)t;
    if (f->broken || f->freed)
        return;
    if (f->pending_err) {
        report_error(f, f->pending_err);
    } else if (f->werr) {
        write_failed(f, f->werr);
    } else {
        if (f->wstate == W_CLOSING && f->pending == 0)
            finish_close(f, 0);
        if (!f->freed && !f->broken && f->reading)
            deliver(f); /* what waited while reading was off */
    }
}

/* ---- public ---- */

static bool sigpipe_ignored(void)
{
    struct sigaction sa;
    return sigaction(SIGPIPE, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) &&
           sa.sa_handler == SIG_IGN;
}

static int check_fd(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -errno;
    return fl & O_NONBLOCK ? 0 : -EINVAL;
}

int framing_new(struct loop *l, int rfd, int wfd, const struct framing_handler *h,
                const struct framing_opts *opts, void *userdata, struct framing **ret)
{
    struct framing *f = NULL;
    int r;

    if (!l || !h || !ret || !h->on_error || (rfd < 0 && wfd < 0) || (rfd >= 0 && !h->on_message))
        return -EINVAL;
    if (rfd >= 0) {
        r = check_fd(rfd);
        if (r < 0)
            return r;
    }
    if (wfd >= 0 && wfd != rfd) {
        r = check_fd(wfd);
        if (r < 0)
            return r;
    }

    f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    rblock_user_add(); /* destroy() counts it out */
    f->loop = l;
    f->rfd = rfd;
    f->wfd = wfd;
    f->h = *h;
    f->userdata = userdata;
    f->max_frame = opts && opts->max_frame ? opts->max_frame : FRAMING_MAX_FRAME_DEFAULT;
    f->max_pending = opts && opts->max_pending ? opts->max_pending : FRAMING_MAX_PENDING_DEFAULT;
    if (f->max_frame > SIZE_MAX / 4) {
        r = -EINVAL;
        goto out;
    }
    f->reading = rfd >= 0;
    f->wstate = wfd >= 0 ? W_OPEN : W_RELEASED;

    if (wfd >= 0) {
        struct stat st;
        if (fstat(wfd, &st) < 0) {
            r = -errno;
            goto out;
        }
        f->sock = S_ISSOCK(st.st_mode);
        f->guard_pipe = !f->sock && !sigpipe_ignored();
        f->wpipe = S_ISFIFO(st.st_mode);
    }
    if (rfd >= 0) {
        struct stat st;
        f->rpipe = fstat(rfd, &st) == 0 && S_ISFIFO(st.st_mode);
    }

    /* armed now so that arming it later cannot fail; its first firing finds nothing to do */
    r = loop_timer_add(l, 0, on_notify, f, &f->notify);
    if (r < 0)
        goto out;
    if (rfd >= 0) {
        r = loop_io_add(l, rfd, LOOP_READ, on_io, f, &f->rio);
        if (r < 0)
            goto out;
    }
    if (wfd >= 0 && wfd == rfd) {
        f->wio = f->rio;
    } else if (wfd >= 0) {
        r = loop_io_add(l, wfd, 0, on_io, f, &f->wio);
        if (r < 0)
            goto out;
    }
    *ret = f;
    f = NULL;
    r = 0;
out:
    if (f) {
        if (f->wio != f->rio)
            loop_io_remove(f->wio);
        loop_io_remove(f->rio);
        loop_timer_cancel(f->notify);
        destroy(f);
    }
    return r;
}

/* The batch of small messages sent from this iteration's callbacks, in one write. */
static void flush_batch(void *userdata)
{
    struct framing *f = userdata;
    if (f->freed || f->broken || f->werr || f->wstate == W_RELEASED)
        return;
    handle_writable(f);
    if (!f->freed && !f->broken && f->pending > 0)
        refresh_events(f);
}

static int sendv_held(struct framing *f, const struct iovec *iov, int n, struct rblock *held)
{
    size_t len = 0;
    if (!f || !iov || n <= 0 || n > FRAMING_SENDV_MAX || f->freed)
        return -EINVAL;
    for (int i = 0; i < n; i++) {
        if (iov[i].iov_len > 0 &&
            (!iov[i].iov_base || memchr(iov[i].iov_base, '\n', iov[i].iov_len)))
            return -EINVAL;
        len += iov[i].iov_len;
    }
    if (len == 0)
        return -EINVAL;
    if (f->broken)
        return f->werr ? f->werr : -EPIPE;
    if (f->werr)
        return f->werr;
    if (f->wstate != W_OPEN)
        return -ESHUTDOWN;
    if (f->pending > f->max_pending || len >= f->max_pending - f->pending)
        return -ENOBUFS;

    struct iovec v[FRAMING_SENDV_MAX + 1];
    memcpy(v, iov, (size_t)n * sizeof(*v));
    v[n] = (struct iovec){(void *)"\n", 1};
    /* small messages sent from the loop's callbacks wait for the end of the iteration, when
     * those sent after them go out in the same write */
    bool batch = len < CHUNK_SIZE && loop_dispatching(f->loop);
    bool was_empty = !f->whead;
    size_t sent = 0;
    if (f->wpipe && len >= CHUNK_SIZE) {
        /* a long line: in fewer, bigger writes */
        f->wpipe = false;
        grow_pipe(f->wfd);
    }
    if (was_empty && !batch) {
        ssize_t w = write_iov(f, v, n + 1);
        if (w < 0 && w != -EAGAIN) {
            f->werr = (int)w;
            notify_soon(f);
            return (int)w;
        }
        if (w == (ssize_t)len + 1)
            return 0;
        if (w > 0)
            sent = (size_t)w;
    }
    size_t before = f->pending;
    int r = enqueue_iov(f, v, n + 1, sent, held);
    if (r < 0) {
        if (sent > 0 || f->pending > before) {
            /* part of the line is out or queued: the stream cannot be resumed */
            f->werr = r;
            notify_soon(f);
        }
        return r;
    }
    if (batch && was_empty)
        loop_defer_queue(f->loop, &f->flush_later, flush_batch, f);
    refresh_events(f);
    return 0;
}

int framing_sendv(struct framing *f, const struct iovec *iov, int n)
{
    return sendv_held(f, iov, n, NULL);
}

int framing_sendv_held(struct framing *f, const struct iovec *iov, int n, struct rblock *held)
{
    return sendv_held(f, iov, n, held);
}

int framing_send(struct framing *f, const char *msg, size_t len)
{
    struct iovec iov = {(void *)msg, len};
    if (!msg)
        return -EINVAL;
    return framing_sendv(f, &iov, 1);
}

size_t framing_read_buffers(void)
{
    return rblock_live();
}

size_t framing_pending(const struct framing *f)
{
    return f ? f->pending : 0;
}

void framing_set_reading(struct framing *f, bool on)
{
    if (!f || f->rfd < 0 || f->freed || f->reading == on)
        return;
    f->reading = on;
    refresh_events(f);
    if (on && (f->rlen > f->rstart || (f->eof && !f->eof_reported)))
        notify_soon(f);
}

int framing_close_write(struct framing *f, framing_done_fn done, void *userdata)
{
    if (!f || f->freed)
        return -EINVAL;
    if (f->wstate == W_RELEASED)
        return -EALREADY;
    if (f->broken)
        return f->werr ? f->werr : -EPIPE;
    if (!done) {
        if (!f->werr)
            (void)flush(f);
        release_write(f);
        return 0;
    }
    if (f->wstate == W_CLOSING)
        return -ESHUTDOWN;
    f->wstate = W_CLOSING;
    f->done = done;
    f->done_userdata = userdata;
    if (f->pending == 0 || f->werr)
        notify_soon(f);
    return 0;
}

void framing_free(struct framing *f)
{
    if (!f || f->freed)
        return;
    if (f->wstate != W_RELEASED && !f->werr && !f->broken)
        (void)flush(f);
    f->freed = true;
    loop_defer_cancel(&f->flush_later);
    if (f->wio && f->wio != f->rio)
        loop_io_remove(f->wio);
    loop_io_remove(f->rio);
    f->wio = f->rio = NULL;
    loop_timer_cancel(f->notify);
    f->notify = NULL;
    loop_release(f->loop, &f->release, release_fn);
}
