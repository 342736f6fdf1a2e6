/* http_resume.c - a POST's answer resumed with GET + Last-Event-ID (2025-11-25 polling; see
 * docs/development.md, http_conn.h's "Resuming a POST's answer", and http_int.h).
 *
 * When the SSE answer to a tagged request ends before the request was answered and an event
 * id was seen on it, the same struct http_req becomes a resumption (HREQ_RESUME): its parser is
 * kept (the last id and retry survive sse_end), it waits on its own timer (WAITING) for the
 * server's retry, then GETs with Last-Event-ID, again and again while events with ids keep
 * coming, within the POST's hard deadline. Whatever ends it without the answer is reported
 * with the request's tag; a resumption answered elsewhere is stopped by
 * http_conn_answered(). */
#include <errno.h>
#include <string.h>

#include "transport/http_int.h"

static void resume_fired(struct loop_timer *t, void *userdata)
{
    struct http_req *r = userdata;
    struct http_conn *u = r->u;
    (void)t;

    if (!u || http_gone(u) || r->state != HREQ_WAITING)
        return;
    int k = loop_now(u->loop) >= r->deadline ? -ETIMEDOUT : http_req_start(r);
    if (k < 0)
        http_req_fail(r, k);
}

/* The answer of r ended unanswered with an id to resume from: GET it again after the server's
 * retry, or at the hard deadline (which then fails it). r's transfer is over. */
static int resume_arm(struct http_req *r)
{
    struct http_conn *u = r->u;
    int64_t delay = sse_retry_ms(&r->sse);
    int64_t left = r->deadline - loop_now(u->loop);

    if (delay < 0)
        delay = HTTP_CONN_RETRY_DEFAULT_MS;
    if (delay > left)
        delay = left > 0 ? left : 0;
    http_req_reset(r);
    r->kind = HREQ_RESUME;
    if (!r->timer) {
        int k = loop_timer_add(u->loop, delay, resume_fired, r, &r->timer);
        if (k < 0)
            return k;
    } else {
        loop_timer_rearm(r->timer, delay);
    }
    http_req_set_state(r, HREQ_WAITING);
    return 0;
}

/* Whether the answer that just ended can be resumed: an SSE stream that ended or broke (not
 * one we stopped, not the hard timeout) with an id to send back. A resumption must also have
 * brought an event with an id: a server that answers the same Last-Event-ID with nothing new
 * would otherwise be polled until the hard timeout. */
static bool resumable(const struct http_req *r, CURLcode cc, long status)
{
    const char *id = sse_last_id(&r->sse);

    if (r->body != BODY_SSE || r->error || cc == CURLE_OPERATION_TIMEDOUT || status < 200 ||
        status >= 300 || !http_id_usable(id))
        return false;
    if (r->kind == HREQ_RESUME)
        return r->ids > 0 || strcmp(id, r->start_id ? r->start_id : "") != 0;
    return true;
}

bool http_resume_post_ended(struct http_req *r, CURLcode cc, long status, int *k)
{
    if (resumable(r, cc, status)) {
        int a = resume_arm(r);
        if (a >= 0)
            return true;
        *k = a;
    } else if (*k == 0 || (!r->error && cc != CURLE_OPERATION_TIMEDOUT)) {
        *k = -ECONNRESET; /* ended or broke without the response, nothing to resume from */
    }
    return false;
}

bool http_resume_done(struct http_req *r, CURLcode cc, long status)
{
    struct http_conn *u = r->u;
    int k = http_req_error(r, cc, status);

    if (http_gone(u) || r->reply == REPLY_ARRIVED)
        return false;
    if (resumable(r, cc, status)) {
        k = resume_arm(r);
        if (k >= 0)
            return true;
    } else if (k == 0 || k == -EOPNOTSUPP) {
        k = -ECONNRESET; /* nothing new, or a server that cannot resume: the answer is lost */
    }
    http_emit_error(u, k, r->tag);
    return false;
}
