/* transport.c - the ops of transport.h dispatched, and the entry's "type" mapped to its wire. */
#include <errno.h>
#include <string.h>

#include "transport/transport.h"

int transport_open(const struct transport_spec *spec, const struct transport_handler *h,
                   void *userdata, struct transport **ret, struct err *e)
{
    if (!spec || !spec->server || !h || !ret)
        return err_set(e, -EINVAL, "transport: missing arguments");
    if (spec->server->transport == MCP_TRANSPORT_STDIO)
        return transport_stdio_open(spec, h, userdata, ret, e);
    return transport_http_open(spec, h, userdata, ret, e);
}

int transport_send(struct transport *t, const char *msg, size_t len, unsigned flags, uint64_t tag)
{
    if (!t)
        return -ENOTCONN;
    return t->ops->send(t, msg, len, flags, tag);
}

int transport_send_take(struct transport *t, char **msg, size_t len, size_t cap, unsigned flags,
                        uint64_t tag)
{
    if (!t)
        return -ENOTCONN;
    if (t->ops->send_take)
        return t->ops->send_take(t, msg, len, cap, flags, tag);
    return t->ops->send(t, *msg, len, flags, tag);
}

int transport_send_hdrs(struct transport *t, const char *msg, size_t len, unsigned flags,
                        uint64_t tag, const char *const *hdrs)
{
    if (!t)
        return -ENOTCONN;
    if (t->ops->send_hdrs)
        return t->ops->send_hdrs(t, msg, len, flags, tag, hdrs);
    return t->ops->send(t, msg, len, flags, tag);
}

bool transport_can_sendv(const struct transport *t)
{
    return t && t->ops->sendv;
}

int transport_sendv(struct transport *t, const struct iovec *iov, int n, struct rblock *held,
                    unsigned flags, uint64_t tag)
{
    if (!t)
        return -ENOTCONN;
    if (!t->ops->sendv)
        return -EOPNOTSUPP;
    return t->ops->sendv(t, iov, n, held, flags, tag);
}

bool transport_can_abort(const struct transport *t)
{
    return t && t->ops->abort;
}

void transport_abort(struct transport *t, uint64_t tag)
{
    if (t && t->ops->abort)
        t->ops->abort(t, tag);
}

void transport_answered(struct transport *t, uint64_t tag)
{
    if (t && t->ops->answered)
        t->ops->answered(t, tag);
}

int transport_session_open(struct transport *t, const char *version)
{
    if (!t)
        return -ENOTCONN;
    return t->ops->session_open ? t->ops->session_open(t, version) : 0;
}

int transport_set_headers(struct transport *t, const char *const *headers)
{
    if (!t)
        return -ENOTCONN;
    return t->ops->set_headers ? t->ops->set_headers(t, headers) : -EOPNOTSUPP;
}

int transport_set_dpop(struct transport *t, struct dpop_key *key, const char *const *headers)
{
    if (!t)
        return -ENOTCONN;
    if (!t->ops->set_dpop)
        return key ? -EOPNOTSUPP : 0;
    return t->ops->set_dpop(t, key, headers);
}

int transport_shutdown(struct transport *t)
{
    if (!t)
        return -ENOTCONN;
    return t->ops->shutdown ? t->ops->shutdown(t) : -EOPNOTSUPP;
}

void transport_free(struct transport *t)
{
    if (t)
        t->ops->free(t);
}

const char *transport_challenge(const struct transport *t)
{
    return t && t->ops->challenge ? t->ops->challenge(t) : NULL;
}

uint64_t transport_message_tag(const struct transport *t)
{
    return t && t->ops->message_tag ? t->ops->message_tag(t) : 0;
}

const char *transport_strerror(const struct transport *t, int error)
{
    const char *s = t && t->ops->strerror ? t->ops->strerror(error) : NULL;
    if (s)
        return s;
    switch (error) {
    case -ETIMEDOUT:
        return "the request timed out";
    case -EPROTO:
        return "the answer broke the protocol";
    case -E2BIG:
        return "a message is over the size bound";
    case -ENOBUFS:
        return "the server is not reading its input";
    case -ECONNRESET:
    case -EPIPE:
    case -ESHUTDOWN:
        return "the connection was lost";
    default:
        return strerror(-error);
    }
}
