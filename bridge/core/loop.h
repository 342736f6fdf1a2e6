/* loop.h - the bridge's single-threaded event loop.
 *
 * One loop per process, on one thread: epoll over file descriptors (the agent's stdin/stdout,
 * stdio children's pipes, helper processes, libcurl's sockets), a min-heap of timers
 * (timeouts, retries, backoff, token expiry), a signalfd for SIGCHLD/SIGHUP/SIGTERM/SIGINT,
 * and deferred calls that run after the current iteration (so an object is never freed while
 * a callback further up the stack still uses it). No callback may block.
 *
 * libcurl multi is hosted through its socket and timer callbacks (loop_curl_*): the loop
 * watches the sockets curl asks for and drives curl_multi_socket_action(), and reports each
 * finished transfer to the callback the transfer was added with. A socket of a connection
 * libcurl keeps for the next transfer stays in the epoll set while it idles (the loop sets
 * CURLOPT_SOCKOPTFUNCTION and CURLOPT_CLOSESOCKETFUNCTION on the handles it is given, to know
 * when such a socket opens and closes).
 *
 * One iteration: wait in epoll_wait (until the next timer is due, or not at all when deferred
 * calls are queued), refresh loop_now(), then run the phases: expired timers (by deadline,
 * ties in arming order), then ready descriptors (in the order epoll returns them), then
 * signals, then deferred calls, then once more libcurl when it asked for a timeout of 0
 * meanwhile (a transfer just added starts in the iteration that added it, without one more
 * epoll_wait). Everything is level-triggered. Callbacks get their userdata
 * back; a watcher or timer may be removed from inside any callback, including its own and
 * including one whose events are already pending in this iteration: it is marked dead, never
 * called again, and its memory is freed after the iteration. Not thread-safe: every function
 * is called from the loop's thread. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>

#include "credkit/err.h"
#include "credkit/list.h"
#include "credkit/macro.h"

struct loop;
struct loop_io;
struct loop_timer;

enum loop_events {
    LOOP_READ = 1 << 0,
    LOOP_WRITE = 1 << 1,
    LOOP_HUP = 1 << 2, /* peer hung up or error: always reported; asked alone, it watches a
                          descriptor for its peer going away while it is not read */
};

typedef void (*loop_io_fn)(struct loop_io *io, int fd, unsigned events, void *userdata);
typedef void (*loop_timer_fn)(struct loop_timer *t, void *userdata);
typedef void (*loop_signal_fn)(int signo, void *userdata);
typedef void (*loop_defer_fn)(void *userdata);
/* A finished transfer: result is curl's code for it. The easy handle is removed from the
 * multi handle before the call; the callee owns it again (may reuse or curl_easy_cleanup it). */
typedef void (*loop_curl_done_fn)(CURL *easy, CURLcode result, void *userdata);

/* Caller frees with loop_free(). */
int loop_new(struct loop **ret) _must_check_;

/* Frees the loop. Deferred calls still queued run first (they usually release memory).
 * Watchers and timers still registered are freed (their callbacks are not called); the fds
 * stay the caller's. Transfers still running are removed from the multi handle without their
 * done callbacks, but not freed: easy handles are always the caller's, who cleans them up
 * after loop_free(). Signals blocked by loop_signal() are unblocked again (the previous mask
 * is restored; ones that arrived meanwhile are discarded). Not from inside a callback.
 * NULL-safe. */
void loop_free(struct loop *l);

/* Monotonic time in milliseconds, cached per iteration (updated before timers run). */
int64_t loop_now(const struct loop *l);

/* Runs until loop_quit() or until there is nothing left to wait for: no watcher added with
 * loop_io_add() (whatever its events), no armed timer, no signal handler, no transfer, no
 * deferred call. Returns the code given to loop_quit() (0 when it ran out of work), < 0 on an
 * internal failure (epoll), -EBUSY when called from inside the loop. Can be run again. */
int loop_run(struct loop *l);
/* Makes loop_run() return code once the current iteration is complete (later phases and
 * deferred calls of this iteration still run). */
void loop_quit(struct loop *l, int code);

/* Watches fd for events (LOOP_READ and/or LOOP_WRITE, LOOP_HUP, or 0 for none yet). The fd
 * stays the caller's; one watcher per fd (-EEXIST otherwise). The callback gets LOOP_HUP on
 * hang-up or error, together with LOOP_READ when reading was asked for, so that a reader sees
 * EOF (or the error) from read(). A descriptor epoll cannot watch (a regular file, /dev/null)
 * is taken as poll() takes it, always readable and writable: its callback runs in every
 * iteration while it asks for LOOP_READ or LOOP_WRITE (never with LOOP_HUP), and the loop does
 * not sleep meanwhile. Caller frees with loop_io_remove() (or loop_free()). */
int loop_io_add(struct loop *l, int fd, unsigned events, loop_io_fn fn, void *userdata,
                struct loop_io **ret) _must_check_;
/* Replaces the interest set (0 stops reporting anything, LOOP_HUP included, until set again). */
int loop_io_set_events(struct loop_io *io, unsigned events) _must_check_;
/* Stops watching and frees the watcher. Call it before closing the fd. Safe from inside
 * callbacks. NULL-safe. */
void loop_io_remove(struct loop_io *io);

/* A one-shot timer firing delay_ms after loop_now() (0, or negative: in the next iteration's
 * timer phase, never in the running one). A fired timer is disarmed, not freed: the caller
 * frees it with loop_timer_cancel() (or loop_free()), and may rearm it until then. */
int loop_timer_add(struct loop *l, int64_t delay_ms, loop_timer_fn fn, void *userdata,
                   struct loop_timer **ret) _must_check_;
/* Re-arms an existing timer (pending or already fired) to fire delay_ms from now; as if it were
 * new, so it fires after the timers already due at the same time. Cannot fail. */
void loop_timer_rearm(struct loop_timer *t, int64_t delay_ms);
/* Cancels and frees. Safe from inside callbacks, including the timer's own. NULL-safe. */
void loop_timer_cancel(struct loop_timer *t);

/* Delivers signo through the loop: it is blocked with sigprocmask() (the bridge has one
 * thread; call this before any thread is started, so that threads inherit the mask) and read
 * from a signalfd in the signal phase. One handler per signal (-EEXIST); fn NULL removes the
 * handler, leaving the signal blocked (and ignored) until loop_free(). */
int loop_signal(struct loop *l, int signo, loop_signal_fn fn, void *userdata) _must_check_;

/* true while the loop runs an iteration's callbacks: what is deferred now runs before the
 * loop sleeps again. */
bool loop_dispatching(const struct loop *l);

/* Runs fn(userdata) after the current iteration's other callbacks, in the order queued. A call
 * queued by a deferred call runs in the next iteration. */
int loop_defer(struct loop *l, loop_defer_fn fn, void *userdata) _must_check_;

/* The same call embedded in the object it works on, so that queuing it cannot fail and the
 * object can take it back when it goes away: zero it (or LOOP_DEFERRED_INIT), queue it with
 * loop_defer_queue() (a no-op while it is queued: one run however often it is asked for, as a
 * "kick"), and loop_defer_cancel() it before the object is freed. It runs in the same phase and
 * order as loop_defer()'s calls. The loop only links it; the caller owns the memory. */
struct loop_deferred {
    struct list_node node; /* on the loop's queue while queued */
    loop_defer_fn fn;
    void *userdata;
    bool queued;
    bool owned; /* allocated by loop_defer(): freed after it ran */
};

#define LOOP_DEFERRED_INIT                                                                         \
    {                                                                                              \
        {NULL, NULL}, NULL, NULL, false, false                                                     \
    }

void loop_defer_queue(struct loop *l, struct loop_deferred *d, loop_defer_fn fn, void *userdata);
/* Takes d off the queue (nothing happens when it is not queued). */
void loop_defer_cancel(struct loop_deferred *d);

/* Deferred release, as libuv's close callback: an object that a callback further up the stack
 * may still be using embeds a struct loop_release and, where it would free itself, queues
 * itself with loop_release() instead. fn(node) runs after the current iteration, once every
 * callback of the iteration has returned (or at loop_free(), or in the next iteration when
 * queued outside one); fn gets the node back and finds its object with list_entry()-style
 * arithmetic (credkit/list.h). Cannot fail: nothing is allocated. Queuing a node already queued
 * is a no-op. The object must stay valid until fn runs. This is the one way the bridge's
 * objects defer their free; a "busy" count of their own is not needed. */
struct loop_release {
    struct loop_release *next;
    void (*fn)(struct loop_release *node);
    bool queued;
};

void loop_release(struct loop *l, struct loop_release *node, void (*fn)(struct loop_release *node));

/* The loop's curl multi handle (created on first use, with socket and timer callbacks wired
 * to the loop). Borrowed. */
CURLM *loop_curl_multi(struct loop *l);

/* Starts a transfer on the loop; done is called once when it finishes (or fails), from the
 * loop, never from inside loop_curl_add(). The handle stays the caller's but must not be freed
 * or changed until done, loop_curl_remove() or loop_free(). The loop keeps its bookkeeping in
 * CURLOPT_PRIVATE, and sets CURLOPT_SOCKOPTFUNCTION and CURLOPT_CLOSESOCKETFUNCTION (with their
 * data) until the transfer ends: callers must not set those on handles they give the loop. */
int loop_curl_add(struct loop *l, CURL *easy, loop_curl_done_fn done, void *userdata) _must_check_;

/* Stops a running transfer without calling done; the caller owns easy again. A no-op for a
 * handle that is not running on this loop. Not from inside libcurl's own callbacks (write,
 * header, progress ...): libcurl refuses that, and the transfer goes on; use loop_defer(). */
void loop_curl_remove(struct loop *l, CURL *easy);
