/* framing.h - newline-delimited JSON messages over a pair of non-blocking descriptors.
 *
 * The stdio transport in both directions: the agent's stdin/stdout downstream, a server
 * child's stdout/stdin upstream. One message per line, no embedded newline (compact JSON never
 * has one). A framing watches its descriptors on the loop and never blocks. Messages read are
 * handed over as pointers into one bounded buffer, valid during the call; messages sent go out
 * at once (small ones sent from the loop's callbacks together, in one write at the end of the
 * iteration) or into a queue bounded by max_pending (-ENOBUFS beyond it), whose fill lets a
 * forwarder stop reading while its destination is slow. A message over max_frame (-E2BIG), a
 * reader gone (-EPIPE, never a SIGPIPE that kills) or a failed read or write breaks the
 * connection: on_error comes once and the caller frees the framing. docs/development.md,
 * "Modules in detail", has reading, writing, SIGPIPE, errors, descriptors and hang-up in full.
 *
 * The descriptors stay the caller's: the framing neither closes them nor changes their flags.
 * Callbacks come from the loop, never from inside a framing_* call. Any framing function may
 * be called from inside a callback, including framing_free() on this framing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "core/loop.h"

#define FRAMING_MAX_FRAME_DEFAULT   (16u * 1024u * 1024u)
#define FRAMING_MAX_PENDING_DEFAULT (64u * 1024u * 1024u)
#define FRAMING_SENDV_MAX           8 /* pieces of one framing_sendv() */

struct framing;
struct rblock; /* a framing's read buffer, held by whoever keeps a big message's bytes */

/* A complete message, without its line end and never empty. msg is borrowed: valid only
 * during the call, and not NUL-terminated. */
typedef void (*framing_message_fn)(const char *msg, size_t len, void *userdata);
/* End of input; reading has stopped, writing still works. */
typedef void (*framing_eof_fn)(void *userdata);
/* The connection is broken (see above); nothing follows. */
typedef void (*framing_error_fn)(int error, void *userdata);
/* The outgoing queue has become empty (after framing_pending() was > 0). */
typedef void (*framing_drain_fn)(void *userdata);
/* The writer of rfd went away while reading was off (framing_set_reading(false)): what it
 * wrote before is still there to be read when reading resumes, then on_eof follows. Called at
 * most once. */
typedef void (*framing_hangup_fn)(void *userdata);
/* framing_close_write() finished: 0 when everything was written, else -errno. */
typedef void (*framing_done_fn)(int status, void *userdata);

struct framing_handler {
    framing_message_fn on_message; /* required when rfd >= 0 */
    framing_eof_fn on_eof;         /* optional */
    framing_error_fn on_error;     /* required */
    framing_drain_fn on_drain;     /* optional */
    framing_hangup_fn on_hangup;   /* optional: without it a hang-up is seen only by reading */
};

struct framing_opts {
    size_t max_frame;   /* 0: FRAMING_MAX_FRAME_DEFAULT */
    size_t max_pending; /* 0: FRAMING_MAX_PENDING_DEFAULT; bytes queued, line ends included */
};

/* Starts framing on rfd (input, -1 for none) and wfd (output, -1 for none), both
 * non-blocking; reading starts at once. h is copied; opts may be NULL. userdata is passed to
 * every callback. -EINVAL for bad arguments, -ENOMEM. Caller frees with framing_free(), before loop_free(). */
int framing_new(struct loop *l, int rfd, int wfd, const struct framing_handler *h,
                const struct framing_opts *opts, void *userdata, struct framing **ret) _must_check_;

/* Sends msg + "\n": written now as far as the descriptor takes it, the rest queued (copied)
 * and written from the loop; a message under 64 KiB sent from a loop callback is queued and
 * written at the end of the iteration, with the others sent in it (its write errors then come
 * through on_error only). msg stays the caller's and may be reused on return. -EINVAL for
 * an empty message or one containing '\n', -ENOBUFS when it does not fit within max_pending
 * (nothing is queued then; the queue is not dropped), -EPIPE (and other write errors) once the
 * connection is broken, -ESHUTDOWN after framing_close_write() or without wfd. */
int framing_send(struct framing *f, const char *msg, size_t len) _must_check_;

/* framing_send() of a message in pieces (at most FRAMING_SENDV_MAX, empty ones allowed): the
 * bytes of iov[0], then iov[1] ... as one message. A big piece lying in the message that
 * on_message of a framing of this thread is being called with (a splice of a message read,
 * such as a result whose id was replaced) is not copied when it must wait: the queue holds that
 * framing's read buffer until it is written, and the reader goes on in another. The same
 * errors. */
int framing_sendv(struct framing *f, const struct iovec *iov, int n) _must_check_;
/* framing_sendv() whose big pieces lying in held (a read buffer someone keeps a reference to:
 * jsonrpc.h's stand-in of a big request's params), or in the message being delivered, are
 * queued as references to that buffer instead of copies. held may be NULL. */
int framing_sendv_held(struct framing *f, const struct iovec *iov, int n,
                       struct rblock *held) _must_check_;

/* The read buffers of this thread's framings alive: in use, held by a queue or a stand-in
 * (jsonrpc.h), or the spare. For the tests: a held buffer is given back with its last user. */
size_t framing_read_buffers(void);

/* Bytes queued and not yet written. */
size_t framing_pending(const struct framing *f);

/* Stops (false) or resumes (true) reading; messages already read but not yet delivered wait
 * too. For flow control. */
void framing_set_reading(struct framing *f, bool on);

/* Closes the writing direction (not the descriptor): later sends fail with -ESHUTDOWN.
 * With done: the queue is flushed from the loop and done(status) is called once when it is
 * empty (0) or writing failed (-errno; then instead of on_error); after that the framing never
 * touches wfd again and the caller may close it. Without done (NULL): what the descriptor
 * takes right now is written, the rest discarded, and wfd is released at once; this also
 * cancels an earlier close with done, whose done is then not called. Reading is unaffected.
 * -EALREADY when the writing direction was already released; -ESHUTDOWN when a close with
 * done is already under way and done is given again; -EPIPE etc. when the connection is
 * already broken. */
int framing_close_write(struct framing *f, framing_done_fn done, void *userdata) _must_check_;

/* Writes what the descriptor takes right now (no waiting), discards the rest, stops watching
 * and frees. No callback is called. The descriptors stay the caller's. Safe from inside this
 * framing's callbacks. NULL-safe. */
void framing_free(struct framing *f);
