/* agent_stdio.c - the agent on a pair of descriptors, newline framing (agent_transport.h).
 *
 * core/framing.h does the work; this file relays its events to the bound handler. */
#include <errno.h>
#include <stdlib.h>

#include "core/framing.h"
#include "downstream/agent_transport.h"

struct agent_stdio {
    struct agent_transport base;
    struct framing *fr;
    agent_transport_done_fn done; /* close_write()'s */
    void *done_userdata;
};

#define HANDLER(a) ((a)->base.h)

static void on_message(const char *msg, size_t len, void *userdata)
{
    struct agent_stdio *a = userdata;
    if (HANDLER(a) && HANDLER(a)->on_message)
        HANDLER(a)->on_message(msg, len, a->base.userdata);
}

static void on_eof(void *userdata)
{
    struct agent_stdio *a = userdata;
    if (HANDLER(a) && HANDLER(a)->on_eof)
        HANDLER(a)->on_eof(a->base.userdata);
}

static void on_error(int error, void *userdata)
{
    struct agent_stdio *a = userdata;
    if (HANDLER(a) && HANDLER(a)->on_error)
        HANDLER(a)->on_error(error, a->base.userdata);
}

static void on_drain(void *userdata)
{
    struct agent_stdio *a = userdata;
    if (HANDLER(a) && HANDLER(a)->on_drain)
        HANDLER(a)->on_drain(a->base.userdata);
}

static void on_hangup(void *userdata)
{
    struct agent_stdio *a = userdata;
    if (HANDLER(a) && HANDLER(a)->on_hangup)
        HANDLER(a)->on_hangup(a->base.userdata);
}

static const struct framing_handler relay = {
    .on_message = on_message,
    .on_eof = on_eof,
    .on_error = on_error,
    .on_drain = on_drain,
    .on_hangup = on_hangup,
};

static int stdio_send(struct agent_transport *t, const char *msg, size_t len)
{
    return framing_send(((struct agent_stdio *)t)->fr, msg, len);
}

static int stdio_sendv(struct agent_transport *t, const struct iovec *iov, int n)
{
    return framing_sendv(((struct agent_stdio *)t)->fr, iov, n);
}

static size_t stdio_pending(const struct agent_transport *t)
{
    return framing_pending(((const struct agent_stdio *)t)->fr);
}

static void stdio_set_reading(struct agent_transport *t, bool on)
{
    framing_set_reading(((struct agent_stdio *)t)->fr, on);
}

static void on_flushed(int status, void *userdata)
{
    struct agent_stdio *a = userdata;
    a->done(status, a->done_userdata);
}

static int stdio_close_write(struct agent_transport *t, agent_transport_done_fn done,
                             void *userdata)
{
    struct agent_stdio *a = (struct agent_stdio *)t;
    a->done = done;
    a->done_userdata = userdata;
    return framing_close_write(a->fr, done ? on_flushed : NULL, done ? a : NULL);
}

static void stdio_free(struct agent_transport *t)
{
    struct agent_stdio *a = (struct agent_stdio *)t;
    framing_free(a->fr);
    free(a);
}

static const struct agent_transport_ops stdio_ops = {
    .name = "stdio",
    .send = stdio_send,
    .sendv = stdio_sendv,
    .pending = stdio_pending,
    .set_reading = stdio_set_reading,
    .close_write = stdio_close_write,
    .free = stdio_free,
};

int agent_stdio_open(struct loop *l, int in_fd, int out_fd, struct agent_transport **ret)
{
    if (!l || in_fd < 0 || out_fd < 0 || !ret)
        return -EINVAL;
    struct agent_stdio *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->base.ops = &stdio_ops;
    int r = framing_new(l, in_fd, out_fd, &relay, NULL, a, &a->fr);
    if (r < 0) {
        free(a);
        return r;
    }
    *ret = &a->base;
    return 0;
}
