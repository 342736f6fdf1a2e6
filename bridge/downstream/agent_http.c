/* agent_http.c - an agent over Streamable HTTP: its transport and its response streams
 * (agent_http.h). agent_http_listen.c makes the agents and streams from the requests; this file
 * routes what the downstream sends to the stream it belongs on and feeds the streams to
 * libmicrohttpd, suspending a connection while it has nothing to write.
 *
 * A 2026-07-28 request answered with an InputRequiredResult stays an agent after its stream
 * ended, for at most AH_ROUND_KEEP_MS: its retry (the same request with the requestState and
 * inputResponses) is a new POST, given to this agent, which holds the round.
 *
 * Where a message goes: an answer to the stream of its request; notifications/progress to the
 * stream of the request whose progress token it names; anything else (a server's request, a
 * log, a list change) to the session's GET stream, else to the newest open stream of the
 * agent. A message with nowhere to go is dropped (the spec's "the server MAY" for a client
 * that keeps no stream open). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"
#include "credkit/secmem.h"

#include "core/jsonscan.h"

#include "downstream/agent_http_int.h"

#define HANDLER(a) ((a)->base.h)

/* ---- streams ----------------------------------------------------------------------------- */

struct ah_stream *ah_stream_new(struct ah_agent *a, struct MHD_Connection *conn, bool sse)
{
    struct ah_stream *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->a = a;
    st->conn = conn;
    st->sse = sse;
    st->status = MHD_HTTP_OK;
    /* what waits, behind a message written in part: its event framing aside */
    buf_init(&st->out, AGENT_MAX_MESSAGE + AH_STREAM_QUEUE_MAX + 64);
    list_add_head(&a->streams, &st->node);
    a->h->n_streams++;
    return st;
}

static size_t stream_pending(const struct ah_stream *st)
{
    return st->out.len - st->off + st->given;
}

static size_t agent_pending(const struct ah_agent *a)
{
    size_t n = 0;
    const struct list_node *i;
    for (i = a->streams.next; i != &a->streams; i = i->next)
        n += stream_pending(list_entry(i, struct ah_stream, node));
    return n;
}

/* close_write() waits for everything to be written: done once it is. */
static void check_flushed(struct ah_agent *a)
{
    if (!a->done || agent_pending(a))
        return;
    agent_transport_done_fn done = a->done;
    a->done = NULL;
    done(0, a->done_userdata);
}

/* Something to write, or the stream's end: the connection goes on. */
static void stream_wake(struct ah_stream *st)
{
    if (!st->suspended || !st->conn)
        return;
    st->suspended = false;
    MHD_resume_connection(st->conn);
    if (st->a && st->a->h)
        ah_kick(st->a->h);
}

static void stream_detach(struct ah_stream *st)
{
    struct ah_agent *a = st->a;
    if (!a)
        return;
    list_remove(&st->node);
    if (a->get == st)
        a->get = NULL;
    if (a->h)
        a->h->n_streams--;
    st->a = NULL;
}

void ah_stream_free(struct ah_stream *st)
{
    if (!st)
        return;
    struct ah_agent *a = st->a;
    stream_detach(st);
    buf_release(&st->out);
    free(st);
    if (!a)
        return;
    if (a->kind == AH_REQUEST && list_is_empty(&a->streams) && !a->state)
        ah_agent_end(a); /* its one request is over (answered, or the client closed it) */
    else
        check_flushed(a);
}

/* libmicrohttpd asks for the next bytes of an SSE stream. */
static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct ah_stream *st = cls;
    (void)pos;
    size_t n = stream_pending(st);
    if (n) {
        if (n > max)
            n = max;
        memcpy(out, st->out.data + st->off, n);
        st->off += n;
        if (st->off == st->out.len) {
            buf_reset(&st->out);
            st->off = 0;
            struct ah_agent *a = st->a;
            if (a && !agent_pending(a)) {
                check_flushed(a);
                if (HANDLER(a) && HANDLER(a)->on_drain)
                    HANDLER(a)->on_drain(a->base.userdata);
            }
        }
        return (ssize_t)n;
    }
    if (st->closed || !st->a)
        return MHD_CONTENT_READER_END_OF_STREAM;
    st->suspended = true;
    MHD_suspend_connection(st->conn);
    return 0;
}

struct MHD_Response *ah_stream_sse_response(struct ah_stream *st)
{
    return MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, AH_READ_BLOCK, sse_read, st, NULL);
}

struct MHD_Response *ah_stream_json_response(struct ah_stream *st)
{
    size_t len = st->out.len;
    char *body = buf_detach(&st->out);
    if (!body)
        return NULL;
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return NULL;
    }
    st->given = len;
    return resp;
}

/* Queues one message on st: an SSE event, or the JSON answer itself. */
static int stream_put(struct ah_stream *st, const char *msg, size_t len)
{
    if (st->closed)
        return -ESHUTDOWN;
    /* the bound is on what waits: one message (bounded by AGENT_MAX_MESSAGE) is always taken
     * by a stream with nothing waiting, or an 8 MiB result with its event's framing is lost */
    size_t pending = stream_pending(st);
    if (pending && pending + len > AH_STREAM_QUEUE_MAX)
        return -ENOBUFS;
    int r;
    if (st->sse) {
        r = buf_append_str(&st->out, "event: message\ndata: ");
        if (r >= 0)
            r = buf_append(&st->out, msg, len);
        if (r >= 0)
            r = buf_append_str(&st->out, "\n\n");
    } else {
        r = buf_append(&st->out, msg, len);
    }
    if (r < 0)
        return r;
    stream_wake(st);
    return 0;
}

void ah_agent_keepalive(struct ah_agent *a)
{
    struct list_node *i;
    list_for_each (i, &a->streams) {
        struct ah_stream *st = list_entry(i, struct ah_stream, node);
        if (st->sse && !st->closed && !stream_pending(st) &&
            buf_append_str(&st->out, ": keep-alive\n\n") >= 0)
            stream_wake(st);
    }
}

/* ---- routing ----------------------------------------------------------------------------- */

static struct ah_stream *stream_of_id(struct ah_agent *a, const char *key)
{
    struct list_node *i;
    list_for_each (i, &a->streams) {
        struct ah_stream *st = list_entry(i, struct ah_stream, node);
        if (st->waiting && strcmp(st->id_key, key) == 0)
            return st;
    }
    return NULL;
}

static struct ah_stream *stream_of_token(struct ah_agent *a, const char *key)
{
    struct list_node *i;
    list_for_each (i, &a->streams) {
        struct ah_stream *st = list_entry(i, struct ah_stream, node);
        if ((st->sse || st->upgrade) && !st->closed && st->token_key[0] &&
            strcmp(st->token_key, key) == 0)
            return st;
    }
    return NULL;
}

/* The GET stream, else the newest open SSE stream (or one that may become one). */
static struct ah_stream *stream_any(struct ah_agent *a)
{
    if (a->get && !a->get->closed)
        return a->get;
    struct list_node *i;
    list_for_each (i, &a->streams) {
        struct ah_stream *st = list_entry(i, struct ah_stream, node);
        if ((st->sse || st->upgrade) && !st->closed)
            return st;
    }
    return NULL;
}

/* Where the message goes, and whether it is the answer its stream waits for. */
static struct ah_stream *route(struct ah_agent *a, struct json_object *o, bool *ret_answer)
{
    char key[JRPC_ID_KEY_MAX + 2];
    *ret_answer = false;
    const char *method = json_get_string(o, "method");
    struct json_object *id = json_object_object_get(o, "id");
    if (!method) {
        if (!id || !jrpc_id_key(id, key, sizeof(key)))
            return NULL;
        *ret_answer = true;
        return stream_of_id(a, key);
    }
    if (strcmp(method, "notifications/progress") == 0) {
        struct json_object *token =
            json_object_object_get(json_get_object(o, "params"), "progressToken");
        struct ah_stream *st =
            token && jrpc_id_key(token, key, sizeof(key)) ? stream_of_token(a, key) : NULL;
        if (st)
            return st;
    }
    return stream_any(a);
}

/* The HTTP status of a 2026-07-28 answer sent as JSON (streamable-http.mdx: an unknown method
 * is 404; a version not served, a capability the agent did not declare or a header not matching
 * its body 400). */
static unsigned answer_status(const struct ah_agent *a, struct json_object *o)
{
    struct json_object *err = json_get_object(o, "error");
    if (a->kind != AH_REQUEST || !err)
        return MHD_HTTP_OK;
    int64_t code = json_object_get_int64(json_object_object_get(err, "code"));
    if (code == JRPC_METHOD_NOT_FOUND)
        return MHD_HTTP_NOT_FOUND;
    if (code == -32022 || code == -32021 || code == -32020 || code == JRPC_INVALID_REQUEST ||
        code == JRPC_PARSE_ERROR)
        return MHD_HTTP_BAD_REQUEST;
    return MHD_HTTP_OK;
}

static void on_idle(struct loop_timer *t, void *userdata);

/* An answer to a's request: an InputRequiredResult keeps a (and the round the downstream holds
 * for it) until its retry comes, within AH_ROUND_KEEP_MS. */
static void keep_round(struct ah_agent *a, struct json_object *answer)
{
    struct json_object *result = json_get_object(answer, "result");
    const char *type = json_get_string(result, "resultType");
    const char *state = json_get_string(result, "requestState");
    if (!type || strcmp(type, "input_required") != 0 || !state || !a->h)
        return;
    char *copy = strdup(state);
    if (!copy)
        return; /* the retry finds no agent: the client is told the state is unknown */
    free(a->state);
    a->state = copy;
    if (a->idle)
        loop_timer_rearm(a->idle, AH_ROUND_KEEP_MS);
    else if (loop_timer_add(a->h->loop, AH_ROUND_KEEP_MS, on_idle, a, &a->idle) < 0)
        a->idle = NULL; /* ends with the downstream's own bound on the round */
}

/* ---- the transport ----------------------------------------------------------------------- */

/* The canonical key of an id or token as written (jrpc_id_key's text: an integer's digits, a
 * string's contents after 's'), for the plain cases only: false for a sign, a fraction, an
 * escape or a long one, which the tree decides. */
static bool span_key(const char *msg, struct jscan_span sp, char *buf, size_t size)
{
    const char *s = msg + sp.off;
    if (sp.len >= 2 && s[0] == '"') {
        size_t n = sp.len - 2;
        if (n > JRPC_ID_KEY_MAX || n + 2 > size || memchr(s + 1, '\\', n))
            return false;
        buf[0] = 's';
        memcpy(buf + 1, s + 1, n);
        buf[n + 1] = '\0';
        return true;
    }
    /* 18 digits at most: never clamped by json-c (is_exact_int) */
    if (sp.len == 0 || sp.len > 18 || sp.len + 1 > size)
        return false;
    for (size_t i = 0; i < sp.len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    memcpy(buf, s, sp.len);
    buf[sp.len] = '\0';
    return true;
}

/* route() from the scan of the message, without a tree: false when only the tree can say
 * (not scanned, a progress notification, an id not plain, a 2026-07-28 error whose code makes
 * the status, a result that may be an InputRequiredResult); then neither out is written. A
 * message this settles needs no answer_status() (200) and no keep_round(). */
static bool route_scan(struct ah_agent *a, const char *msg, size_t len, struct ah_stream **ret_st,
                       bool *ret_answer)
{
    struct jscan j;
    char key[JRPC_ID_KEY_MAX + 2];
    if (jscan_message(msg, len, &j) < 0)
        return false;
    if (j.method.len) {
        if (jscan_span_is(msg, j.method, "notifications/progress"))
            return false; /* its token is params.progressToken, which the scan does not keep */
        *ret_answer = false;
        *ret_st = stream_any(a);
        return true;
    }
    if (!j.id.len || !span_key(msg, j.id, key, sizeof(key)))
        return false;
    if (a->kind == AH_REQUEST &&
        (j.error.len || memmem(msg + j.result.off, j.result.len, "input_required", 14) ||
         memmem(msg + j.result.off, j.result.len, "\\u00", 4))) /* a key or value escaped */
        return false;
    *ret_answer = true;
    *ret_st = stream_of_id(a, key);
    return true;
}

static int http_send(struct agent_transport *t, const char *msg, size_t len)
{
    struct ah_agent *a = (struct ah_agent *)t;
    if (a->write_closed)
        return -ESHUTDOWN;
    struct json_object *o = NULL; /* only when the scan cannot route the message */
    struct ah_stream *st = NULL;
    bool answer = false;
    if (!route_scan(a, msg, len, &st, &answer)) {
        struct json_tokener *tok = json_tokener_new();
        if (!tok)
            return -ENOMEM;
        o = json_tokener_parse_ex(tok, msg, (int)len);
        json_tokener_free(tok);
        if (!o)
            return -EBADMSG; /* the downstream's own serialisation: not expected */
        st = route(a, o, &answer);
    }
    int r = 0;
    if (!st) {
        /* nowhere to go: the request's stream was closed, or no stream is open */
        json_object_put(o);
        return 0;
    }
    if (!st->sse && !answer && st->upgrade) {
        st->sse = true; /* agent_http_listen.c queues the SSE response once resumed */
    } else if (!st->sse && !answer) {
        json_object_put(o);
        return 0; /* a JSON answer carries the answer only */
    }
    if (answer && !st->sse)
        st->status = o ? answer_status(a, o) : MHD_HTTP_OK;
    if (answer && a->kind == AH_REQUEST && o)
        keep_round(a, o);
    json_object_put(o);
    r = stream_put(st, msg, len);
    if (answer && r >= 0) {
        st->waiting = false;
        st->closed = true; /* one request per POST: its stream ends with its answer */
        stream_wake(st);
    }
    return r;
}

static size_t http_pending(const struct agent_transport *t)
{
    return agent_pending((const struct ah_agent *)t);
}

static void http_set_reading(struct agent_transport *t, bool on)
{
    ((struct ah_agent *)t)->reading = on;
}

static int http_close_write(struct agent_transport *t, agent_transport_done_fn done, void *userdata)
{
    struct ah_agent *a = (struct ah_agent *)t;
    a->write_closed = true;
    struct list_node *i;
    list_for_each (i, &a->streams) {
        struct ah_stream *st = list_entry(i, struct ah_stream, node);
        st->closed = true;
        stream_wake(st);
    }
    if (!done || !agent_pending(a))
        return -EALREADY; /* nothing to wait for */
    a->done = done;
    a->done_userdata = userdata;
    return 0;
}

static void http_free(struct agent_transport *t)
{
    struct ah_agent *a = (struct ah_agent *)t;
    while (!list_is_empty(&a->streams)) {
        struct ah_stream *st = list_entry(list_first(&a->streams), struct ah_stream, node);
        st->closed = true;
        stream_wake(st);
        stream_detach(st); /* its request frees it when the connection ends */
    }
    if (a->h) {
        list_remove(&a->node);
        if (!a->ended)
            a->h->n_agents--;
    }
    loop_timer_cancel(a->idle);
    free(a->sid);
    free(a->state);
    free(a);
}

static const struct agent_transport_ops http_ops = {
    .name = "http",
    .send = http_send,
    .pending = http_pending,
    .set_reading = http_set_reading,
    .close_write = http_close_write,
    .free = http_free,
};

/* ---- agents ------------------------------------------------------------------------------ */

static void on_idle(struct loop_timer *t, void *userdata)
{
    struct ah_agent *a = userdata;
    (void)t;
    if (!list_is_empty(&a->streams)) {
        loop_timer_rearm(a->idle, AH_SESSION_IDLE_MS);
        return;
    }
    if (a->h && a->kind == AH_SESSION)
        log_info(a->h->log, "an HTTP session was idle for %d minutes: ended",
                 AH_SESSION_IDLE_MS / 60000);
    free(a->state); /* a round not resumed in time */
    a->state = NULL;
    ah_agent_end(a);
}

struct ah_agent *ah_agent_new(struct agent_http *h, enum ah_kind kind)
{
    struct ah_agent *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->base.ops = &http_ops;
    a->h = h;
    a->kind = kind;
    a->reading = true;
    list_init(&a->streams);
    if (kind == AH_SESSION &&
        (secure_random_token(AH_SESSION_ID_BYTES, &a->sid) < 0 ||
         loop_timer_add(h->loop, AH_SESSION_IDLE_MS, on_idle, a, &a->idle) < 0)) {
        free(a->sid);
        free(a);
        return NULL;
    }
    list_add_tail(&h->agents, &a->node);
    h->n_agents++;
    return a;
}

struct ah_agent *ah_agent_find(struct agent_http *h, const char *sid)
{
    struct list_node *i;
    list_for_each (i, &h->agents) {
        struct ah_agent *a = list_entry(i, struct ah_agent, node);
        if (a->sid && !a->ended && secure_streq(a->sid, sid))
            return a;
    }
    return NULL;
}

struct ah_agent *ah_agent_of_state(struct agent_http *h, const char *state)
{
    struct list_node *i;
    list_for_each (i, &h->agents) {
        struct ah_agent *a = list_entry(i, struct ah_agent, node);
        if (a->state && !a->ended && secure_streq(a->state, state)) {
            free(a->state);
            a->state = NULL;
            return a;
        }
    }
    return NULL;
}

void ah_agent_touch(struct ah_agent *a)
{
    if (a->idle)
        loop_timer_rearm(a->idle, AH_SESSION_IDLE_MS);
}

void ah_agent_end(struct ah_agent *a)
{
    if (a->ended)
        return;
    a->ended = true;
    /* no longer counted against --max-agents: an ended agent only waits for the downstream to
     * let it go, on the loop's next turn, and a client keeping N requests in flight must not
     * be refused for the ones already answered */
    if (a->h)
        a->h->n_agents--;
    loop_timer_cancel(a->idle);
    a->idle = NULL;
    struct list_node *i;
    list_for_each (i, &a->streams) {
        struct ah_stream *st = list_entry(i, struct ah_stream, node);
        if (!st->waiting) {
            st->closed = true; /* a GET stream; answers still to come go on their POST's */
            stream_wake(st);
        }
    }
    if (HANDLER(a) && HANDLER(a)->on_eof)
        HANDLER(a)->on_eof(a->base.userdata);
}
