/* agent_transport.h - the wire to one agent under the downstream, behind a small ops table (as
 * transport.h is for the servers), so the downstream never asks which one it has.
 *
 * The downstream sees the agent's messages one by one (a line each on stdio), sends its own to
 * the agent it was given, and does its flow control through the transport: it stops reading
 * when too much waits to be written to the agent (pending()), and reads again on on_drain. One
 * transport is one agent: the transport is the tag that says which agent a message is for.
 * agent_stdio.c is the one implementation (newline framing over core/framing.h: the agent's
 * stdin and stdout); a test plugs a fake one in by filling a struct agent_transport with its
 * own ops and calling the bound handler itself.
 *
 * The downstream binds its handler (agent_transport_bind) when it takes the transport, before
 * the loop runs again. Events come from the loop, never from inside an op; any op, free
 * included, may be called from inside them. Not thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "credkit/macro.h"

#include "core/framing.h"
#include "core/loop.h"

/* The largest message of an agent (a bigger one breaks the connection: on_error -E2BIG). */
#define AGENT_MAX_MESSAGE FRAMING_MAX_FRAME_DEFAULT

/* What the transport reports; userdata is the one given to agent_transport_bind(). */
struct agent_transport_handler {
    /* One message of the agent (borrowed, not NUL-terminated, valid during the call). */
    void (*on_message)(const char *msg, size_t len, void *userdata);
    /* The agent closed its side: nothing more comes; sending still works. */
    void (*on_eof)(void *userdata);
    /* The connection broke (-EPIPE: the agent closed its reading side; -E2BIG: a message over
     * the frame bound): nothing follows, and the transport is only to be freed. */
    void (*on_error)(int error, void *userdata);
    /* Everything queued for the agent is written (after pending() was > 0). */
    void (*on_drain)(void *userdata);
    /* The agent went away while reading was stopped; at most once. */
    void (*on_hangup)(void *userdata);
};

/* close_write() finished: 0 when everything was written, else -errno. */
typedef void (*agent_transport_done_fn)(int status, void *userdata);

struct agent_transport;

struct agent_transport_ops {
    const char *name; /* "stdio" */
    /* Sends one message (the caller's: copied when it must wait). -ENOBUFS when it does not fit
     * in what may be queued (dropped), -ESHUTDOWN after close_write, or the wire's -errno
     * (on_error follows). */
    int (*send)(struct agent_transport *t, const char *msg, size_t len);
    /* send of one message given in pieces (core/framing.h's framing_sendv: a big piece of a
     * message being read from a server is not copied). Optional: without it the caller joins
     * the pieces and sends. */
    int (*sendv)(struct agent_transport *t, const struct iovec *iov, int n);
    /* Bytes queued for the agent and not written yet. */
    size_t (*pending)(const struct agent_transport *t);
    /* Stops (false) or resumes (true) reading the agent. */
    void (*set_reading)(struct agent_transport *t, bool on);
    /* No more sends: with done, what is queued is written first and done follows (instead of
     * on_error) once it is, or failed; without done, what the wire takes now is written and
     * the rest dropped. -errno when there is nothing to wait for. */
    int (*close_write)(struct agent_transport *t, agent_transport_done_fn done, void *userdata);
    /* Frees at once, without a callback. */
    void (*free)(struct agent_transport *t);
};

/* Every implementation embeds this first. */
struct agent_transport {
    const struct agent_transport_ops *ops;
    const struct agent_transport_handler *h; /* agent_transport_bind(); NULL before */
    void *userdata;
};

/* The agent on the descriptors in_fd and out_fd (O_NONBLOCK; they stay the caller's), read at
 * once (what comes before agent_transport_bind() waits in the loop). -EINVAL, -ENOMEM. Caller
 * frees with agent_transport_free(), before loop_free(). */
int agent_stdio_open(struct loop *l, int in_fd, int out_fd,
                     struct agent_transport **ret) _must_check_;

/* Whom the transport reports to from now on (h borrowed: it must outlive t). */
void agent_transport_bind(struct agent_transport *t, const struct agent_transport_handler *h,
                          void *userdata);

/* The ops. NULL-safe where it makes sense: a NULL transport sends nothing (-ENOTCONN), has
 * nothing pending, and is freed as nothing. */
int agent_transport_send(struct agent_transport *t, const char *msg, size_t len) _must_check_;
/* -EOPNOTSUPP when the transport has no sendv. */
int agent_transport_sendv(struct agent_transport *t, const struct iovec *iov, int n) _must_check_;
size_t agent_transport_pending(const struct agent_transport *t);
void agent_transport_set_reading(struct agent_transport *t, bool on);
int agent_transport_close_write(struct agent_transport *t, agent_transport_done_fn done,
                                void *userdata) _must_check_;
void agent_transport_free(struct agent_transport *t);
