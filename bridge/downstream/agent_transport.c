/* agent_transport.c - the ops of an agent's transport, for any implementation
 * (agent_transport.h). */
#include <errno.h>

#include "downstream/agent_transport.h"

void agent_transport_bind(struct agent_transport *t, const struct agent_transport_handler *h,
                          void *userdata)
{
    t->h = h;
    t->userdata = userdata;
}

int agent_transport_send(struct agent_transport *t, const char *msg, size_t len)
{
    return t ? t->ops->send(t, msg, len) : -ENOTCONN;
}

int agent_transport_sendv(struct agent_transport *t, const struct iovec *iov, int n)
{
    if (!t)
        return -ENOTCONN;
    return t->ops->sendv ? t->ops->sendv(t, iov, n) : -EOPNOTSUPP;
}

size_t agent_transport_pending(const struct agent_transport *t)
{
    return t ? t->ops->pending(t) : 0;
}

void agent_transport_set_reading(struct agent_transport *t, bool on)
{
    if (t)
        t->ops->set_reading(t, on);
}

int agent_transport_close_write(struct agent_transport *t, agent_transport_done_fn done,
                                void *userdata)
{
    return t ? t->ops->close_write(t, done, userdata) : -ENOTCONN;
}

void agent_transport_free(struct agent_transport *t)
{
    if (t)
        t->ops->free(t);
}
