/* http_upstream.c - Streamable HTTP upstream (see http_upstream.h).
 *
 * Every transfer is a struct hreq on the upstream's list. Transfers start from a deferred call
 * (kick), never from the caller's stack: a send may come from inside libcurl's write callback
 * (a message on an SSE answer), where libcurl refuses curl_multi_add_handle. Likewise the
 * upstream's memory is only freed once no callback of ours is on the stack (busy) and no
 * deferred call of ours is queued (defers).
 *
 * A request whose SSE answer ends unanswered becomes a resumption: the same struct hreq, its
 * parser kept (last id and retry survive sse_end), waits on its own timer and then GETs with
 * Last-Event-ID. A transfer we stop (a resumption answered elsewhere, the Streamable GET stream
 * after a legacy fallback) is only marked: the deferred kick frees it, as libcurl refuses
 * curl_multi_remove_handle from inside its callbacks.
 *
 * Legacy HTTP+SSE: the GET stream (u->stream) carries the "endpoint" event and every answer;
 * POSTs wait in the list (not started) until the endpoint is known, and are failed when the
 * stream ends or the endpoint does not come in time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "credkit/buf.h"
#include "credkit/http.h"
#include "credkit/json.h"
#include "credkit/secmem.h"
#include "credkit/url.h"

#include "http_upstream.h"
#include "sse.h"

enum hreq_kind {
    HREQ_POST,
    HREQ_GET,    /* the GET stream: server-initiated messages, or the legacy connection */
    HREQ_RESUME, /* a request's answer resumed with GET + Last-Event-ID */
    HREQ_DELETE,
};

enum hreq_body {
    BODY_UNKNOWN, /* no byte of the body seen yet */
    BODY_JSON,
    BODY_SSE,
    BODY_DISCARD, /* a non-2xx answer's body */
};

struct hreq {
    struct http_upstream *u;
    struct hreq *prev, *next;
    enum hreq_kind kind;
    CURL *easy;
    struct curl_slist *hdrs;
    char *msg; /* the POSTed message */
    size_t len;
    uint64_t tag; /* the caller's, 0: not resumable */
    bool is_init;
    bool had_session;
    bool running;
    bool sid_bad;
    bool sid_done;
    bool answered; /* http_upstream_answered(tag) */
    bool stop;     /* stopped by us: freed by kick without any callback */
    bool waiting;  /* a resumption waiting for its timer */
    bool legacy;   /* a POST to the legacy endpoint: its body is ignored */
    bool saw_id;   /* an event with an id came on this response */
    bool ordered;  /* the GET of http_upstream_open_stream(): see startable() */
    uint64_t seq;  /* order of creation */
    enum hreq_body body;
    struct buf json;          /* BODY_JSON */
    struct sse_parser sse;    /* BODY_SSE of a POST and its resumptions (not the GET stream) */
    char *sid;                /* MCP-Session-Id of an initialize answer */
    char *challenge;          /* WWW-Authenticate of the answer (the first one), NULL */
    char *start_id;           /* a resumption: the last id it was started with */
    int64_t deadline;         /* a POST and its resumptions: the hard timeout, loop clock */
    struct loop_timer *timer; /* a resumption's delay */
    size_t discarded;
    int error; /* why a callback of ours stopped the transfer */
};

struct http_upstream {
    struct loop *loop;
    char *url;
    char **headers; /* secrets */
    size_t n_headers;
    int64_t timeout_ms;
    size_t max_message;
    struct http_upstream_handler h;
    void *userdata;
    char *session_id;
    char *proto;
    char *challenge; /* of the last 401 or 403: http_upstream_challenge() */
    struct hreq *reqs;
    struct hreq *stream; /* the GET, also on reqs */
    uint64_t seq;        /* of the last hreq created */
    struct sse_parser stream_sse;
    struct loop_timer *retry;
    bool retry_armed;
    bool kick_queued;
    bool closing;
    bool dead;
    bool legacy;        /* the 2024-11-05 HTTP+SSE transport */
    bool legacy_over;   /* its GET stream ended: the connection is over */
    int legacy_error;   /* why (for messages sent later) */
    int fallback_error; /* the initialize POST's error that made us fall back, 0 */
    char *endpoint;     /* legacy: where messages are POSTed, once known */
    struct loop_timer *endpoint_timer;
    unsigned busy;
    unsigned defers;
    http_upstream_done_fn done;
};

static void slist_free_wipe(struct curl_slist *l)
{
    for (struct curl_slist *s = l; s; s = s->next)
        secure_wipe(s->data, strlen(s->data));
    curl_slist_free_all(l);
}

static bool visible_ascii(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

static void headers_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        secure_free(v[i]);
    free(v);
}

/* Copies "Name: value" strings (secrets) into *ret_v and *ret_n; -EINVAL with the index of the
 * first bad one in *ret_bad. */
static int headers_copy(const char *const *in, char ***ret_v, size_t *ret_n, size_t *ret_bad)
{
    size_t n = 0;
    while (in && in[n])
        n++;
    char **v = calloc(n + 1, sizeof(char *));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const char *s = in[i];
        const char *colon = strchr(s, ':');
        if (!colon || colon == s || strpbrk(s, "\r\n") || memchr(s, ' ', (size_t)(colon - s))) {
            headers_free(v, i);
            *ret_bad = i;
            return -EINVAL;
        }
        v[i] = strdup(s);
        if (!v[i]) {
            headers_free(v, i);
            return -ENOMEM;
        }
    }
    *ret_v = v;
    *ret_n = n;
    return 0;
}

/* ---- errors ---------------------------------------------------------------------------- */

static int curl_to_errno(CURLcode cc)
{
    switch (cc) {
    case CURLE_OK:
        return 0;
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return -EHOSTUNREACH;
    case CURLE_COULDNT_CONNECT:
        return -ECONNREFUSED;
    case CURLE_OUT_OF_MEMORY:
        return -ENOMEM;
    case CURLE_FILESIZE_EXCEEDED:
        return -E2BIG;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
        return -ECONNRESET;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return -EINVAL;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_USE_SSL_FAILED:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_BAD_CONTENT_ENCODING:
        return -EPROTO;
    default:
        return -EIO;
    }
}

static int status_to_errno(long status, bool had_session)
{
    if (status >= 200 && status < 300)
        return 0;
    switch (status) {
    case 400: /* the TypeScript SDK's servers answer an unknown session so */
        return had_session ? -ESTALE : -EPROTO;
    case 401:
        return -EACCES;
    case 403:
        return -EPERM;
    case 404:
        return had_session ? -ESTALE : -ENOENT;
    case 405:
        return -EOPNOTSUPP;
    case 408:
    case 504:
        return -ETIMEDOUT;
    case 413:
        return -E2BIG;
    case 429:
    case 503:
        return -EAGAIN;
    default:
        return status >= 500 ? -EREMOTEIO : -EPROTO;
    }
}

/* ---- callbacks to the caller ------------------------------------------------------------- */

static bool gone(const struct http_upstream *u)
{
    return u->dead || u->closing;
}

static void emit_message(struct http_upstream *u, const char *msg, size_t len)
{
    if (gone(u))
        return;
    u->busy++;
    u->h.on_message(msg, len, u->userdata);
    u->busy--;
}

static void emit_error(struct http_upstream *u, int error, uint64_t tag)
{
    if (gone(u) || !u->h.on_error)
        return;
    u->busy++;
    u->h.on_error(error, tag, u->userdata);
    u->busy--;
}

static void emit_close(struct http_upstream *u, int reason)
{
    if (gone(u) || !u->h.on_close)
        return;
    u->busy++;
    u->h.on_close(reason, u->userdata);
    u->busy--;
}

/* ---- requests ----------------------------------------------------------------------------- */

static bool event_is(const struct sse_event *ev, const char *type)
{
    size_t n = strlen(type);
    return ev->type_len == n && memcmp(ev->type, type, n) == 0;
}

/* Can be sent as Last-Event-ID: no control character (an id never holds CR, LF or NUL, but
 * other controls would make a bad header), no white space at either end, bounded. */
static bool id_usable(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > HTTP_UPSTREAM_SESSION_ID_MAX || id[0] == ' ' || id[n - 1] == ' ')
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)id[i] < 0x20 || (unsigned char)id[i] == 0x7f)
            return false;
    return true;
}

static int queue_req(struct http_upstream *u);
static void kick_soon(struct http_upstream *u);
static int legacy_endpoint(struct http_upstream *u, const char *data, size_t len);

/* An event of the GET stream. */
static int stream_event(const struct sse_event *ev, void *userdata)
{
    struct http_upstream *u = userdata;

    if (u->legacy && event_is(ev, "endpoint")) {
        if (!u->endpoint) { /* the first one counts */
            int k = legacy_endpoint(u, ev->data, ev->data_len);
            if (k < 0)
                return k;
        }
    } else if (ev->data_len > 0 && event_is(ev, "message")) {
        /* empty data: priming or keep-alive; the parser has recorded its id */
        emit_message(u, ev->data, ev->data_len);
    }
    return gone(u) ? -ECANCELED : 0;
}

/* An event of a request's answer (the POST's or a resumption's). */
static int req_event(const struct sse_event *ev, void *userdata)
{
    struct hreq *r = userdata;
    struct http_upstream *u = r->u;

    if (ev->id[0])
        r->saw_id = true;
    if (ev->data_len > 0 && event_is(ev, "message"))
        emit_message(u, ev->data, ev->data_len);
    return gone(u) || r->stop ? -ECANCELED : 0;
}

static void hreq_free(struct hreq *r)
{
    if (!r)
        return;
    struct http_upstream *u = r->u;
    if (r->running)
        loop_curl_remove(u->loop, r->easy);
    if (r->easy)
        curl_easy_cleanup(r->easy);
    slist_free_wipe(r->hdrs);
    if (r->prev)
        r->prev->next = r->next;
    else if (u->reqs == r)
        u->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    if (u->stream == r)
        u->stream = NULL;
    loop_timer_cancel(r->timer);
    free(r->msg);
    free(r->sid);
    free(r->challenge);
    free(r->start_id);
    buf_release(&r->json);
    sse_parser_release(&r->sse);
    free(r);
}

static struct hreq *hreq_new(struct http_upstream *u, enum hreq_kind kind)
{
    struct hreq *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->u = u;
    r->kind = kind;
    r->seq = ++u->seq;
    buf_init(&r->json, u->max_message);
    sse_parser_init(&r->sse, u->max_message, u->max_message, req_event, r);
    r->next = u->reqs;
    if (u->reqs)
        u->reqs->prev = r;
    u->reqs = r;
    return r;
}

/* A finished transfer made ready to start again (a resumption, or a POST re-sent in legacy
 * mode): the easy handle goes (its connection stays in the multi handle's pool). */
static void hreq_reset(struct hreq *r)
{
    if (r->easy)
        curl_easy_cleanup(r->easy);
    r->easy = NULL;
    slist_free_wipe(r->hdrs);
    r->hdrs = NULL;
    r->body = BODY_UNKNOWN;
    r->discarded = 0;
    r->error = 0;
    r->had_session = false;
    r->sid_bad = false;
    r->sid_done = false;
    free(r->sid);
    r->sid = NULL;
    free(r->challenge);
    r->challenge = NULL;
    buf_release(&r->json);
    sse_end(&r->sse);
}

/* Stops r without any callback: marked now, freed by kick (never from inside libcurl). */
static void hreq_stop(struct hreq *r)
{
    struct http_upstream *u = r->u;

    r->stop = true;
    r->waiting = false;
    loop_timer_cancel(r->timer);
    r->timer = NULL;
    if (u->stream == r)
        u->stream = NULL;
    kick_soon(u);
}

/* A new session: the old session's GET stream (or its reconnection) and its last event id are
 * not for it; http_upstream_open_stream() starts the new one. */
static void stream_restart(struct http_upstream *u)
{
    if (u->stream)
        hreq_stop(u->stream);
    loop_timer_cancel(u->retry);
    u->retry = NULL;
    u->retry_armed = false;
    sse_parser_release(&u->stream_sse);
    sse_parser_init(&u->stream_sse, u->max_message, u->max_message, stream_event, u);
}

/* The session id of an initialize answer becomes ours once the answer is known to be 2xx, before
 * any message of it is delivered (the caller's next send must carry it). */
static int commit_session(struct hreq *r)
{
    struct http_upstream *u = r->u;

    if (!r->is_init || r->sid_done)
        return 0;
    r->sid_done = true;
    if (r->sid_bad)
        return -EPROTO;
    bool same =
        r->sid && u->session_id ? strcmp(r->sid, u->session_id) == 0 : !r->sid && !u->session_id;
    free(u->session_id);
    u->session_id = r->sid; /* an answer without one: no session (stateless) */
    r->sid = NULL;
    if (!same && !u->legacy)
        stream_restart(u);
    return 0;
}

static bool media_type_is(const char *ct, const char *want)
{
    if (!ct)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strcspn(ct, ";");
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    return n == strlen(want) && strncasecmp(ct, want, n) == 0;
}

static int classify(struct hreq *r)
{
    long status = 0;
    char *ct = NULL;

    (void)curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status >= 300 || r->kind == HREQ_DELETE || r->legacy) {
        r->body = BODY_DISCARD;
        return 0;
    }
    int k = commit_session(r);
    if (k < 0)
        return k;
    (void)curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
    if (media_type_is(ct, "text/event-stream"))
        r->body = BODY_SSE;
    else if (r->kind == HREQ_POST && media_type_is(ct, "application/json"))
        r->body = BODY_JSON;
    else
        return -EPROTO; /* a body we cannot read */
    return 0;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *userdata)
{
    struct hreq *r = userdata;
    struct http_upstream *u = r->u;
    size_t len = size * nmemb;
    int k;

    /* the DELETE runs while closing, and its answer may have a body (an HTML 404 page) */
    if (u->dead || (u->closing && r->kind != HREQ_DELETE) || r->stop)
        return 0;
    if (r->body == BODY_UNKNOWN) {
        k = classify(r);
        if (k < 0)
            goto fail;
    }
    switch (r->body) {
    case BODY_DISCARD:
        r->discarded += len;
        if (r->discarded > u->max_message) {
            k = -E2BIG;
            goto fail;
        }
        return len;
    case BODY_JSON:
        k = buf_append(&r->json, p, len);
        if (k < 0)
            goto fail;
        return len;
    case BODY_SSE:
        u->busy++;
        k = sse_feed(r->kind == HREQ_GET ? &u->stream_sse : &r->sse, p, len);
        u->busy--;
        if (gone(u) || r->stop)
            return 0;
        if (k < 0)
            goto fail;
        return len;
    default:
        k = -EPROTO;
        goto fail;
    }
fail:
    r->error = k;
    return 0;
}

/* The value of the header line p[0..len) when it is named name (lowercase, with its colon),
 * trimmed; NULL otherwise. */
static const char *header_value(const char *p, size_t len, const char *name, size_t *ret_n)
{
    size_t nl = strlen(name);
    if (len < nl || strncasecmp(p, name, nl) != 0)
        return NULL;
    const char *v = p + nl, *end = p + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *ret_n = (size_t)(end - v);
    return v;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *userdata)
{
    struct hreq *r = userdata;
    size_t len = size * nmemb, n = 0;
    const char *v;

    if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) { /* a new response (after 1xx) */
        free(r->sid);
        r->sid = NULL;
        r->sid_bad = false;
        free(r->challenge);
        r->challenge = NULL;
        return len;
    }
    v = header_value(p, len, "www-authenticate:", &n);
    if (v && !r->challenge) {
        r->challenge = strndup(v, n);
        if (!r->challenge) {
            r->error = -ENOMEM;
            return 0;
        }
        return len;
    }
    v = r->is_init ? header_value(p, len, "mcp-session-id:", &n) : NULL;
    if (!v)
        return len;
    free(r->sid);
    r->sid = NULL;
    if (n > HTTP_UPSTREAM_SESSION_ID_MAX || !visible_ascii(v, n)) {
        r->sid_bad = true;
        return len;
    }
    r->sid = strndup(v, n);
    if (!r->sid) {
        r->error = -ENOMEM;
        return 0;
    }
    return len;
}

static int add_header(struct curl_slist **l, const char *name, const char *value)
{
    struct buf b;
    buf_init_secret(&b, 64 * 1024);
    int k = buf_printf(&b, "%s: %s", name, value);
    if (k >= 0) {
        struct curl_slist *n = curl_slist_append(*l, buf_str(&b));
        if (n)
            *l = n;
        else
            k = -ENOMEM;
    }
    buf_release(&b);
    return k;
}

static void xfer_done(CURL *easy, CURLcode cc, void *userdata);

static int hreq_start(struct hreq *r)
{
    struct http_upstream *u = r->u;
    struct curl_slist *l = NULL, *n;
    int k = -ENOMEM;

    bool get = r->kind == HREQ_GET || r->kind == HREQ_RESUME;
    const char *url = u->url;
    int64_t timeout = u->timeout_ms;

    if (r->kind == HREQ_POST) {
        r->legacy = u->legacy;
        if (r->legacy)
            url = u->endpoint;
        r->deadline = loop_now(u->loop) + timeout;
    } else if (r->kind == HREQ_RESUME) {
        timeout = r->deadline - loop_now(u->loop); /* what is left of the POST's */
        if (timeout <= 0)
            return -ETIMEDOUT;
        free(r->start_id);
        r->start_id = strdup(sse_last_id(&r->sse));
        if (!r->start_id)
            return -ENOMEM;
        r->saw_id = false;
    } else if (r->kind == HREQ_DELETE && timeout > HTTP_UPSTREAM_CLOSE_TIMEOUT_MS) {
        timeout = HTTP_UPSTREAM_CLOSE_TIMEOUT_MS;
    }
    if (!url)
        return -EINVAL;
    r->easy = curl_easy_init();
    if (!r->easy)
        return -ENOMEM;
    for (size_t i = 0; i < u->n_headers; i++) {
        n = curl_slist_append(l, u->headers[i]);
        if (!n)
            goto fail;
        l = n;
    }
    k = add_header(&l, "Accept", get ? "text/event-stream" : "application/json, text/event-stream");
    if (k >= 0 && r->kind == HREQ_POST)
        k = add_header(&l, "Content-Type", "application/json");
    if (k >= 0)
        k = add_header(&l, "Expect", ""); /* no 100-continue round trip */
    if (k >= 0 && u->session_id && !(r->kind == HREQ_POST && r->is_init)) {
        k = add_header(&l, "MCP-Session-Id", u->session_id);
        r->had_session = true;
    }
    if (k >= 0 && u->proto)
        k = add_header(&l, "MCP-Protocol-Version", u->proto);
    if (k >= 0 && get) {
        const char *id = sse_last_id(r->kind == HREQ_GET ? &u->stream_sse : &r->sse);
        if (id_usable(id))
            k = add_header(&l, "Last-Event-ID", id);
    }
    if (k < 0)
        goto fail;
    r->hdrs = l;
    l = NULL;

    CURL *c = r->easy;
    CURLcode cc = CURLE_OK;
#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (cc == CURLE_OK)                                                                        \
            cc = curl_easy_setopt(c, opt, val);                                                    \
    } while (0)
    if (http_curl_baseline(c) < 0)
        cc = CURLE_UNKNOWN_OPTION;
    SET(CURLOPT_URL, url);
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    SET(CURLOPT_HTTPHEADER, r->hdrs);
    SET(CURLOPT_WRITEFUNCTION, on_write);
    SET(CURLOPT_WRITEDATA, r);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, r);
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)timeout);
    if (r->kind != HREQ_GET)
        SET(CURLOPT_TIMEOUT_MS, (long)timeout);
    switch (r->kind) {
    case HREQ_POST:
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
        SET(CURLOPT_POSTFIELDS, r->msg);
        break;
    case HREQ_GET:
    case HREQ_RESUME:
        SET(CURLOPT_HTTPGET, 1L);
        break;
    case HREQ_DELETE:
        SET(CURLOPT_CUSTOMREQUEST, "DELETE");
        break;
    }
#undef SET
    if (cc != CURLE_OK) {
        k = curl_to_errno(cc);
        goto fail;
    }
    k = loop_curl_add(u->loop, r->easy, xfer_done, r);
    if (k < 0)
        goto fail;
    r->running = true;
    return 0;
fail:
    slist_free_wipe(l);
    return k;
}

/* ---- finished transfers ------------------------------------------------------------------ */

static void deliver_json(struct hreq *r)
{
    struct http_upstream *u = r->u;
    const char *p = r->json.data;
    size_t len = r->json.len;
    size_t i = 0;

    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    if (i == len)
        return; /* 200 with an empty body */
    if (p[i] != '[') {
        emit_message(u, p, len); /* one message: the caller parses it */
        return;
    }
    /* a 2025-03-26 server's batch answer: each element on its own */
    struct json_object *arr = NULL;
    if (json_parse(p, len, u->max_message, &arr, NULL) < 0 ||
        !json_object_is_type(arr, json_type_array)) {
        json_object_put(arr);
        emit_error(u, -EBADMSG, r->tag);
        return;
    }
    size_t n = json_object_array_length(arr);
    for (size_t j = 0; j < n && !gone(u); j++) {
        size_t sl = 0;
        const char *s = json_object_to_json_string_length(
            json_object_array_get_idx(arr, j),
            JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &sl);
        if (s)
            emit_message(u, s, sl);
    }
    json_object_put(arr);
}

static int xfer_error(struct hreq *r, CURLcode cc, long status)
{
    if (cc != CURLE_OK)
        return r->error ? r->error : curl_to_errno(cc);
    return status_to_errno(status, r->had_session);
}

/* A request that cannot go on: r freed, then the caller told. */
static void fail_req(struct hreq *r, int error)
{
    struct http_upstream *u = r->u;
    uint64_t tag = r->tag;

    hreq_free(r);
    emit_error(u, error, tag);
}

/* ---- resuming an answer ------------------------------------------------------------------- */

static void resume_fired(struct loop_timer *t, void *userdata)
{
    struct hreq *r = userdata;
    struct http_upstream *u = r->u;
    (void)t;

    r->waiting = false;
    if (gone(u) || r->stop)
        return;
    int k = loop_now(u->loop) >= r->deadline ? -ETIMEDOUT : hreq_start(r);
    if (k < 0)
        fail_req(r, k);
}

/* The answer of r ended unanswered with an id to resume from: GET it again after the server's
 * retry, or at the hard deadline (which then fails it). r's transfer is over. */
static int resume_arm(struct hreq *r)
{
    struct http_upstream *u = r->u;
    int64_t delay = sse_retry_ms(&r->sse);
    int64_t left = r->deadline - loop_now(u->loop);

    if (delay < 0)
        delay = HTTP_UPSTREAM_RETRY_DEFAULT_MS;
    if (delay > left)
        delay = left > 0 ? left : 0;
    hreq_reset(r);
    r->kind = HREQ_RESUME;
    if (!r->timer) {
        int k = loop_timer_add(u->loop, delay, resume_fired, r, &r->timer);
        if (k < 0)
            return k;
    } else {
        loop_timer_rearm(r->timer, delay);
    }
    r->waiting = true;
    return 0;
}

/* Whether the answer that just ended can be resumed: an SSE stream that ended or broke (not
 * one we stopped, not the hard timeout) with an id to send back. A resumption must also have
 * brought an event with an id: a server that answers the same Last-Event-ID with nothing new
 * would otherwise be polled until the hard timeout. */
static bool resumable(struct hreq *r, CURLcode cc, long status)
{
    const char *id = sse_last_id(&r->sse);

    if (r->body != BODY_SSE || r->error || cc == CURLE_OPERATION_TIMEDOUT || status < 200 ||
        status >= 300 || !id_usable(id))
        return false;
    if (r->kind == HREQ_RESUME)
        return r->saw_id || strcmp(id, r->start_id ? r->start_id : "") != 0;
    return true;
}

/* ---- legacy HTTP+SSE ---------------------------------------------------------------------- */

static bool pending_post(const struct hreq *r)
{
    return r->kind == HREQ_POST && !r->running && !r->easy && !r->stop;
}

static size_t count_pending(const struct http_upstream *u)
{
    size_t n = 0;
    for (const struct hreq *r = u->reqs; r; r = r->next)
        n += pending_post(r);
    return n;
}

/* Fails the POSTs not yet sent, oldest first (a callback may send more, or free us). */
static void fail_pending(struct http_upstream *u, int error)
{
    for (;;) {
        struct hreq *r = NULL;
        if (gone(u))
            return;
        for (struct hreq *i = u->reqs; i; i = i->next)
            if (pending_post(i))
                r = i;
        if (!r)
            return;
        fail_req(r, error);
    }
}

/* The legacy connection is over: what waits for it fails, and the caller is told. */
static void legacy_end(struct http_upstream *u, int error)
{
    u->legacy_over = true;
    u->legacy_error = error;
    loop_timer_cancel(u->endpoint_timer);
    u->endpoint_timer = NULL;
    fail_pending(u, error);
    emit_close(u, error);
}

static void endpoint_timeout(struct loop_timer *t, void *userdata)
{
    struct http_upstream *u = userdata;

    loop_timer_cancel(t);
    u->endpoint_timer = NULL;
    if (gone(u) || u->endpoint || u->legacy_over)
        return;
    if (u->stream) {
        struct hreq *g = u->stream;
        hreq_free(g); /* from a timer: libcurl is not on the stack */
        sse_end(&u->stream_sse);
    }
    legacy_end(u, -ETIMEDOUT);
}

/* Opens the legacy GET stream; the POSTs wait for its endpoint event, u->timeout_ms at most. */
static int legacy_open(struct http_upstream *u)
{
    struct hreq *g = hreq_new(u, HREQ_GET);
    if (!g)
        return -ENOMEM;
    int k = loop_timer_add(u->loop, u->timeout_ms, endpoint_timeout, u, &u->endpoint_timer);
    if (k >= 0)
        k = queue_req(u);
    if (k < 0) {
        loop_timer_cancel(u->endpoint_timer);
        u->endpoint_timer = NULL;
        hreq_free(g);
        return k;
    }
    u->stream = g;
    return 0;
}

/* The initialize POST r was refused as a 2024-11-05 server refuses it (error: how): switch
 * to the old transport and send r again once the endpoint is known. */
static int legacy_fallback(struct hreq *r, int error)
{
    struct http_upstream *u = r->u;

    u->legacy = true;
    u->fallback_error = error;
    free(u->session_id); /* a re-initialization's old session: not for the new transport */
    u->session_id = NULL;
    if (u->stream)
        hreq_stop(u->stream); /* a Streamable GET stream is not the legacy one */
    loop_timer_cancel(u->retry);
    u->retry = NULL;
    u->retry_armed = false;
    hreq_reset(r);
    return legacy_open(u);
}

static int legacy_endpoint(struct http_upstream *u, const char *data, size_t len)
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
    loop_timer_cancel(u->endpoint_timer);
    u->endpoint_timer = NULL;
    return queue_req(u); /* the POSTs that waited */
}

/* ---- finished transfers, continued ---------------------------------------------------- */

/* Returns true when r lives on (resumed, or re-sent to the legacy endpoint). */
static bool post_done(struct hreq *r, CURLcode cc, long status)
{
    struct http_upstream *u = r->u;
    int k = xfer_error(r, cc, status);

    if (gone(u))
        return false;
    if (r->is_init && !r->legacy && !u->legacy && cc == CURLE_OK && !r->error &&
        (status == 400 || status == 404 || status == 405)) {
        int f = legacy_fallback(r, k);
        if (f >= 0)
            return true;
        k = f;
    }
    if (k == 0 && !r->legacy)
        k = commit_session(r);
    if (k == 0 && r->body == BODY_JSON)
        deliver_json(r);
    if (r->tag && r->answered) /* the request is over: nothing more to say about it */
        return false;
    if (r->tag && r->body == BODY_SSE && !gone(u)) {
        if (resumable(r, cc, status)) {
            k = resume_arm(r);
            if (k >= 0)
                return true;
        } else if (k == 0 || (!r->error && cc != CURLE_OPERATION_TIMEDOUT)) {
            k = -ECONNRESET; /* ended or broke without the response, nothing to resume from */
        }
    }
    if (k < 0)
        emit_error(u, k, r->tag);
    return false;
}

static bool resume_done(struct hreq *r, CURLcode cc, long status)
{
    struct http_upstream *u = r->u;
    int k = xfer_error(r, cc, status);

    if (gone(u) || r->answered)
        return false;
    if (resumable(r, cc, status)) {
        k = resume_arm(r);
        if (k >= 0)
            return true;
    } else if (k == 0 || k == -EOPNOTSUPP) {
        k = -ECONNRESET; /* nothing new, or a server that cannot resume: the answer is lost */
    }
    emit_error(u, k, r->tag);
    return false;
}

static void retry_fired(struct loop_timer *t, void *userdata);

static int arm_retry(struct http_upstream *u, int64_t delay)
{
    if (!u->retry) {
        int k = loop_timer_add(u->loop, delay, retry_fired, u, &u->retry);
        if (k < 0)
            return k;
    } else {
        loop_timer_rearm(u->retry, delay);
    }
    u->retry_armed = true;
    return 0;
}

static void stream_done(struct hreq *r, CURLcode cc, long status)
{
    struct http_upstream *u = r->u;
    bool was_sse =
        r->body == BODY_SSE || (r->body == BODY_UNKNOWN && status >= 200 && status < 300);
    int k = xfer_error(r, cc, status);

    u->stream = NULL;
    sse_end(&u->stream_sse);
    if (u->legacy) {
        /* refused like the initialize POST was: neither transport; that answer is the error */
        if (!u->endpoint && u->fallback_error && cc == CURLE_OK && !r->error &&
            (status == 400 || status == 404 || status == 405))
            k = u->fallback_error;
        legacy_end(u, k ? k : -ECONNRESET);
        return;
    }
    /* a stream that ran and then ended or broke (not one we stopped) may be resumed */
    if (was_sse && !r->error &&
        (sse_retry_ms(&u->stream_sse) >= 0 || sse_last_id(&u->stream_sse)[0])) {
        int64_t delay = sse_retry_ms(&u->stream_sse);
        if (delay < 0)
            delay = HTTP_UPSTREAM_RETRY_DEFAULT_MS;
        k = arm_retry(u, delay);
        if (k >= 0)
            return;
    }
    if (k == -EOPNOTSUPP) /* 405: the server offers no GET stream */
        k = 0;
    if (k == -ESTALE)
        emit_error(u, k, 0);
    emit_close(u, k);
}

static void delete_done(struct hreq *r, CURLcode cc, long status)
{
    struct http_upstream *u = r->u;
    int k = xfer_error(r, cc, status);

    if (k == -EOPNOTSUPP || k == -ESTALE || k == -ENOENT)
        k = 0;
    http_upstream_done_fn done = u->done;
    u->done = NULL;
    if (done && !u->dead) {
        u->busy++;
        done(k, u->userdata);
        u->busy--;
    }
}

static void xfer_done(CURL *easy, CURLcode cc, void *userdata)
{
    struct hreq *r = userdata;
    struct http_upstream *u = r->u;
    long status = 0;
    bool keep = false;

    r->running = false;
    (void)curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (status == 401 || status == 403) { /* the latest refusal's challenge, for the caller */
        free(u->challenge);
        u->challenge = r->challenge;
        r->challenge = NULL;
    }
    if (!r->stop) {
        switch (r->kind) {
        case HREQ_POST:
            keep = post_done(r, cc, status);
            break;
        case HREQ_GET:
            stream_done(r, cc, status);
            break;
        case HREQ_RESUME:
            keep = resume_done(r, cc, status);
            break;
        case HREQ_DELETE:
            delete_done(r, cc, status);
            break;
        }
    }
    if (u->dead) /* freed from a callback: the deferred free takes r with it */
        return;
    if (!keep)
        hreq_free(r);
    if (u->stream && u->stream->ordered && !u->stream->easy && !gone(u))
        kick_soon(u); /* it may have waited for this one */
}

/* ---- deferred work --------------------------------------------------------------------- */

static void really_free(struct http_upstream *u)
{
    while (u->reqs)
        hreq_free(u->reqs);
    loop_timer_cancel(u->retry);
    loop_timer_cancel(u->endpoint_timer);
    headers_free(u->headers, u->n_headers);
    free(u->url);
    free(u->endpoint);
    free(u->session_id);
    free(u->proto);
    free(u->challenge);
    sse_parser_release(&u->stream_sse);
    free(u);
}

static int schedule(struct http_upstream *u, loop_defer_fn fn)
{
    int k = loop_defer(u->loop, fn, u);
    if (k >= 0)
        u->defers++;
    return k;
}

/* Entering a deferred call: false when the upstream is dead (and freed, if this was the last
 * thing holding it). */
static bool defer_enter(struct http_upstream *u)
{
    u->defers--;
    if (!u->dead)
        return true;
    if (!u->defers && !u->busy)
        really_free(u);
    return false;
}

static void deferred_free(void *userdata)
{
    (void)defer_enter(userdata);
}

/* The GET stream of http_upstream_open_stream() starts once the notifications (and responses)
 * POSTed before it have been answered - notifications/initialized must have got its 202 - and
 * the POSTs sent after it start once it has started, so that a request never reaches the
 * server before the stream that may carry its answer (conformance: sse-retry). */
static bool startable(const struct http_upstream *u, const struct hreq *r)
{
    if (r->running || r->easy || r->stop || r->kind == HREQ_RESUME)
        return false;                      /* resumptions start from their timers */
    if (r->kind == HREQ_POST && u->legacy) /* after the end, kick fails them */
        return u->endpoint && !u->legacy_over;
    if (r->kind == HREQ_GET && r->ordered) {
        for (const struct hreq *i = u->reqs; i; i = i->next)
            if (i->kind == HREQ_POST && !i->tag && !i->stop && i->seq < r->seq)
                return false;
    }
    if (r->kind == HREQ_POST && u->stream && u->stream->ordered && !u->stream->easy &&
        u->stream->seq < r->seq)
        return false;
    return true;
}

static void kick(void *userdata)
{
    struct http_upstream *u = userdata;

    if (!defer_enter(u))
        return;
    u->kick_queued = false;
    /* transfers we stopped: no libcurl callback is on the stack here */
    for (struct hreq *i = u->reqs, *next; i; i = next) {
        next = i->next;
        if (i->stop)
            hreq_free(i);
    }
    if (u->legacy_over)
        fail_pending(u, u->legacy_error);
    for (;;) {
        struct hreq *r = NULL;
        if (gone(u))
            return;
        for (struct hreq *i = u->reqs; i; i = i->next)
            if (startable(u, i))
                r = i; /* the oldest, as new ones go to the front */
        if (!r)
            return;
        int k = hreq_start(r);
        if (k >= 0)
            continue;
        if (r->kind == HREQ_GET) {
            hreq_free(r);
            sse_end(&u->stream_sse);
            if (u->legacy)
                legacy_end(u, k);
            else
                emit_close(u, k);
        } else {
            fail_req(r, k);
        }
    }
}

static int queue_req(struct http_upstream *u)
{
    if (u->kick_queued)
        return 0;
    int k = schedule(u, kick);
    if (k >= 0)
        u->kick_queued = true;
    return k;
}

/* Should queuing fail (ENOMEM), what was marked waits for the next kick or the free. */
static void kick_soon(struct http_upstream *u)
{
    if (queue_req(u) < 0)
        return;
}

static void retry_fired(struct loop_timer *t, void *userdata)
{
    struct http_upstream *u = userdata;
    (void)t;

    u->retry_armed = false;
    if (gone(u) || u->stream || u->legacy)
        return;
    struct hreq *r = hreq_new(u, HREQ_GET);
    int k = r ? 0 : -ENOMEM;
    if (r) {
        u->stream = r;
        k = hreq_start(r);
        if (k < 0)
            hreq_free(r);
    }
    if (k < 0)
        emit_close(u, k);
}

static void close_work(void *userdata)
{
    struct http_upstream *u = userdata;

    if (!defer_enter(u))
        return;
    while (u->reqs)
        hreq_free(u->reqs);
    loop_timer_cancel(u->retry);
    u->retry = NULL;
    u->retry_armed = false;
    loop_timer_cancel(u->endpoint_timer);
    u->endpoint_timer = NULL;
    int k = 0;
    if (u->session_id) {
        struct hreq *r = hreq_new(u, HREQ_DELETE);
        k = r ? hreq_start(r) : -ENOMEM;
        if (k >= 0)
            return; /* delete_done calls done */
        hreq_free(r);
    }
    http_upstream_done_fn done = u->done;
    u->done = NULL;
    if (done) {
        u->busy++;
        done(k, u->userdata);
        u->busy--;
    }
}
/* ---- public ------------------------------------------------------------------------------ */

int http_upstream_new(struct loop *l, const struct http_upstream_spec *spec,
                      const struct http_upstream_handler *h, void *userdata,
                      struct http_upstream **ret, struct err *e)
{
    struct http_upstream *u = NULL;
    int k;

    if (!l || !spec || !h || !h->on_message || !ret)
        return err_set(e, -EINVAL, "invalid arguments");
    if (!spec->url ||
        (strncasecmp(spec->url, "http://", 7) != 0 && strncasecmp(spec->url, "https://", 8) != 0))
        return err_set(e, -EINVAL, "the server URL is not an http:// or https:// URL");
    /* the URL is not quoted: expanded, it may hold a token in its query */
    if (strpbrk(spec->url, "\r\n \t"))
        return err_set(e, -EINVAL, "the server URL holds white space");
    if (spec->timeout_ms < 0)
        return err_set(e, -EINVAL, "a negative timeout");

    u = calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    u->loop = l;
    u->h = *h;
    u->userdata = userdata;
    u->timeout_ms = spec->timeout_ms ? spec->timeout_ms : HTTP_UPSTREAM_TIMEOUT_DEFAULT_MS;
    u->max_message = spec->max_message ? spec->max_message : HTTP_UPSTREAM_MAX_MESSAGE_DEFAULT;
    u->legacy = spec->legacy_sse;
    sse_parser_init(&u->stream_sse, u->max_message, u->max_message, stream_event, u);
    u->url = strdup(spec->url);
    if (!u->url) {
        k = -ENOMEM;
        goto out;
    }
    size_t bad = 0;
    k = headers_copy(spec->headers, &u->headers, &u->n_headers, &bad);
    if (k == -EINVAL) /* the number only: the value may be a secret */
        k = err_set(e, -EINVAL, "header %zu is not 'Name: value'", bad + 1);
    if (k < 0)
        goto out;
    *ret = u;
    u = NULL;
    k = 0;
out:
    if (u)
        really_free(u);
    return k;
}

void http_upstream_answered(struct http_upstream *u, uint64_t tag)
{
    if (!u || !tag || u->dead)
        return;
    for (struct hreq *r = u->reqs; r; r = r->next) {
        if (r->tag != tag || r->stop || r->kind == HREQ_DELETE)
            continue;
        r->answered = true; /* a POST ends by itself: not resumed, no error */
        if (r->kind == HREQ_RESUME)
            hreq_stop(r); /* a resumed GET may stay open for more */
    }
}

bool http_upstream_is_legacy(const struct http_upstream *u)
{
    return u && u->legacy;
}

int http_upstream_send(struct http_upstream *u, const char *msg, size_t len, unsigned flags,
                       uint64_t tag)
{
    int k;

    if (!u || !msg || len == 0)
        return -EINVAL;
    if (u->closing || u->dead)
        return -ESHUTDOWN;
    if (len > u->max_message)
        return -E2BIG;
    bool wait_endpoint = u->legacy && !u->endpoint && !u->legacy_over;
    if (wait_endpoint && count_pending(u) >= HTTP_UPSTREAM_PENDING_MAX)
        return -ENOBUFS;
    char *copy = malloc(len + 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, msg, len);
    copy[len] = 0;
    if (wait_endpoint && !u->stream) { /* spec.legacy_sse: the connection starts now */
        k = legacy_open(u);
        if (k < 0) {
            free(copy);
            return k;
        }
    }
    struct hreq *r = hreq_new(u, HREQ_POST);
    if (!r) {
        free(copy);
        return -ENOMEM;
    }
    r->msg = copy;
    r->len = len;
    r->is_init = flags & HTTP_UPSTREAM_INITIALIZE;
    r->tag = tag;
    k = queue_req(u);
    if (k < 0)
        hreq_free(r);
    return k;
}

int http_upstream_set_protocol_version(struct http_upstream *u, const char *version)
{
    if (!u || !version || strlen(version) > 64 || !visible_ascii(version, strlen(version)))
        return -EINVAL;
    char *v = strdup(version);
    if (!v)
        return -ENOMEM;
    free(u->proto);
    u->proto = v;
    return 0;
}

int http_upstream_set_headers(struct http_upstream *u, const char *const *headers)
{
    char **v = NULL;
    size_t n = 0, bad = 0;

    if (!u)
        return -EINVAL;
    int k = headers_copy(headers, &v, &n, &bad);
    if (k < 0)
        return k;
    headers_free(u->headers, u->n_headers);
    u->headers = v;
    u->n_headers = n;
    return 0;
}

const char *http_upstream_challenge(const struct http_upstream *u)
{
    return u ? u->challenge : NULL;
}

const char *http_upstream_session_id(const struct http_upstream *u)
{
    return u && u->session_id ? u->session_id : "";
}

int http_upstream_open_stream(struct http_upstream *u)
{
    if (!u)
        return -EINVAL;
    if (u->closing || u->dead)
        return -ESHUTDOWN;
    if (u->legacy) /* the legacy stream is the connection itself */
        return 0;
    if (u->stream || u->retry_armed)
        return -EALREADY;
    struct hreq *r = hreq_new(u, HREQ_GET);
    if (!r)
        return -ENOMEM;
    r->ordered = true; /* see startable() */
    int k = queue_req(u);
    if (k < 0) {
        hreq_free(r);
        return k;
    }
    u->stream = r;
    return 0;
}

int http_upstream_close(struct http_upstream *u, http_upstream_done_fn done)
{
    if (!u)
        return -EINVAL;
    if (u->closing || u->dead)
        return -ESHUTDOWN;
    int k = schedule(u, close_work);
    if (k < 0)
        return k;
    u->closing = true;
    u->done = done;
    return 0;
}

void http_upstream_free(struct http_upstream *u)
{
    if (!u || u->dead)
        return;
    u->dead = true;
    if (u->busy || u->defers) {
        /* on our stack, maybe inside libcurl: free after the iteration. Should queuing fail
         * (ENOMEM) with nothing else queued, the memory is leaked rather than freed under a
         * running callback. */
        if (!u->defers)
            (void)schedule(u, deferred_free);
        return;
    }
    really_free(u);
}
