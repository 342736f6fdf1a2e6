/* upstream_trace.c - the upstream's hooks into the protocol trace (core/trace.h): every message
 * sent (from the one place that hands them to the transport) and received (once parsed, before
 * it is acted on), with the server's name, the wire's name in the adapter's words, and a
 * response's latency since its request was sent. */
#include "upstream/upstream_int.h"

static const char *transport_word(const struct upstream *u)
{
    switch (u->srv->transport) {
    case MCP_TRANSPORT_STDIO:
        return "stdio";
    case MCP_TRANSPORT_HTTP:
        return "streamable-http";
    case MCP_TRANSPORT_SSE:
        return "sse";
    }
    return "unknown";
}

void up_trace_sent(struct upstream *u, struct json_object *msg, size_t bytes, int r)
{
    if (!u->trace)
        return;
    struct trace_message tm = {
        .server = u->srv->name, /* not up_name(): this file stays a leaf of upstream/ */
        .transport = transport_word(u),
        .direction = TRACE_OUTBOUND,
        .status = r < 0 ? TRACE_ERROR : TRACE_SENT,
        .msg = msg,
        .bytes = bytes,
        .duration_ms = -1,
    };
    trace_record(u->trace, &tm);
}

void up_trace_received(struct upstream *u, const struct jrpc_msg *m, size_t bytes,
                       const struct upstream_call *c)
{
    if (!u->trace)
        return;
    int64_t ms = c && c->sent_at ? loop_now(u->loop) - c->sent_at : -1;
    struct trace_message tm = {
        .server = u->srv->name, /* not up_name(): this file stays a leaf of upstream/ */
        .transport = transport_word(u),
        .direction = TRACE_INBOUND,
        .status = TRACE_RECEIVED,
        .msg = m->root,
        .bytes = bytes,
        .duration_ms = ms < 0 ? -1 : ms,
    };
    trace_record(u->trace, &tm);
}
