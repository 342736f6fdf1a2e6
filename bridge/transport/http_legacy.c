/* http_legacy.c - the 2024-11-05 HTTP+SSE transport of the HTTP upstream (see
 * docs/development.md, http_conn.h's "Legacy HTTP+SSE", and http_int.h).
 *
 * The upstream falls back to it when its initialize POST is refused as an old server refuses
 * it (http_legacy_fallback()), or speaks it from the start (spec.legacy_sse). Then the GET
 * stream (u->stream) is the connection: its first "endpoint" event gives the URI that every
 * message is POSTed to, and every answer comes back on it as a "message" event. Until the
 * endpoint is known (MODE_LEGACY_WAIT) the POSTs wait on the upstream's list, QUEUED, at most
 * timeout_ms; when the stream ends (MODE_LEGACY_OVER) those still waiting, and those sent
 * later, fail with the stream's reason. A POST to the endpoint (HREQ_LEGACY_POST) only counts
 * by its status: its body is discarded. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/url.h"

#include "transport/http_int.h"

static bool pending_post(const struct http_req *r)
{
    return r->kind == HREQ_POST && r->state == HREQ_QUEUED;
}

size_t http_legacy_count_pending(const struct http_conn *u)
{
    const struct list_node *i;
    size_t n = 0;

    list_for_each (i, &u->reqs) {
        n += pending_post(list_entry(i, struct http_req, node));
    }
    return n;
}

void http_legacy_fail_pending(struct http_conn *u, int error)
{
    struct list_node *i;

    for (;;) {
        struct http_req *r = NULL;
        if (http_gone(u))
            return;
        list_for_each (i, &u->reqs) {
            struct http_req *c = list_entry(i, struct http_req, node);
            if (pending_post(c)) {
                r = c; /* the oldest */
                break;
            }
        }
        if (!r)
            return;
        http_req_fail(r, error);
    }
}

void http_legacy_end(struct http_conn *u, int error)
{
    http_set_mode(u, MODE_LEGACY_OVER);
    u->legacy_error = error;
    loop_timer_cancel(u->endpoint_timer);
    u->endpoint_timer = NULL;
    http_legacy_fail_pending(u, error);
    http_emit_close(u, error);
}

static void endpoint_timeout(struct loop_timer *t, void *userdata)
{
    struct http_conn *u = userdata;

    loop_timer_cancel(t);
    u->endpoint_timer = NULL;
    if (http_gone(u) || u->mode != MODE_LEGACY_WAIT)
        return;
    if (u->stream) {
        http_req_free(u->stream); /* from a timer: libcurl is not on the stack */
        sse_end(&u->stream_sse);
    }
    http_legacy_end(u, -ETIMEDOUT);
}

int http_legacy_open(struct http_conn *u)
{
    struct http_req *g = http_req_new(u, HREQ_GET);
    if (!g)
        return -ENOMEM;
    int k = loop_timer_add(u->loop, u->timeout_ms, endpoint_timeout, u, &u->endpoint_timer);
    if (k >= 0)
        k = http_kick(u);
    if (k < 0) {
        loop_timer_cancel(u->endpoint_timer);
        u->endpoint_timer = NULL;
        http_req_free(g);
        return k;
    }
    http_stream_set(u, STREAM_ACTIVE, g); /* started by the kick, not held back */
    return 0;
}

bool http_legacy_fallback(struct http_req *r, CURLcode cc, long status, int *k)
{
    struct http_conn *u = r->u;

    /* 401 and 403 stay errors: authorization, not transport */
    if (!(r->flags & HTTP_CONN_INITIALIZE) || u->mode != MODE_STREAMABLE || cc != CURLE_OK ||
        r->error || (status != 400 && status != 404 && status != 405))
        return false;
    http_set_mode(u, MODE_LEGACY_WAIT);
    u->fallback_error = *k;
    free(u->session_id); /* a re-initialization's old session: not for the new transport */
    u->session_id = NULL;
    http_hdrs_changed(u);
    if (u->stream)
        http_req_stop(u->stream); /* a Streamable GET stream is not the legacy one */
    loop_timer_cancel(u->retry);
    u->retry = NULL;
    http_stream_set(u, STREAM_NONE, NULL);
    http_req_reset(r);
    http_req_set_state(r, HREQ_QUEUED); /* sent again once the endpoint is known */
    int f = http_legacy_open(u);
    if (f >= 0)
        return true;
    *k = f;
    return false;
}

/* The first "endpoint" event: where to POST, resolved against the SSE URL, same origin only. */
static int legacy_endpoint(struct http_conn *u, const char *data, size_t len)
{
    char *resolved = NULL;

    if (len == 0 || memchr(data, 0, len))
        return -EPROTO;
    int k = url_resolve(u->url, data, &resolved, NULL);
    if (k == -ENOMEM)
        return k;
    if (k < 0 || !url_same_origin(u->url, resolved)) { /* not a URL, or not the server's */
        free(resolved);
        return -EPROTO;
    }
    u->endpoint = resolved;
    http_set_mode(u, MODE_LEGACY_READY);
    loop_timer_cancel(u->endpoint_timer);
    u->endpoint_timer = NULL;
    return http_kick(u); /* the POSTs that waited */
}

int http_legacy_event(struct http_conn *u, const struct sse_event *ev)
{
    if (u->mode != MODE_LEGACY_WAIT) /* the first one counts */
        return 0;
    return legacy_endpoint(u, ev->data, ev->data_len);
}

void http_legacy_post_done(struct http_req *r, CURLcode cc, long status)
{
    struct http_conn *u = r->u;
    int k = http_req_error(r, cc, status);

    if (http_gone(u) || r->reply == REPLY_ARRIVED)
        return; /* answered: nothing more to say about it */
    if (k < 0)
        http_emit_error(u, k, r->tag);
}

void http_legacy_stream_done(struct http_req *r, CURLcode cc, long status)
{
    struct http_conn *u = r->u;
    int k = http_req_error(r, cc, status);

    http_stream_set(u, STREAM_NONE, NULL);
    sse_end(&u->stream_sse);
    /* refused like the initialize POST was: neither transport; that answer is the error */
    if (u->mode == MODE_LEGACY_WAIT && u->fallback_error && cc == CURLE_OK && !r->error &&
        (status == 400 || status == 404 || status == 405))
        k = u->fallback_error;
    http_legacy_end(u, k ? k : -ECONNRESET);
}
