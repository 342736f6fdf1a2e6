/* http_req.c - one transfer of the HTTP upstream (see http_int.h).
 *
 * A struct http_req is one HTTP exchange on the loop's libcurl multi handle: a POST of a
 * message, the GET stream, a resumption or the DELETE. This file builds it (the caller's
 * headers, the session and protocol headers, Last-Event-ID), reads its answer as it comes
 * (libcurl's header and write callbacks: the session id of an initialize answer, the
 * challenge of a refusal, the body as JSON or as an event stream, or discarded), and turns a
 * finished one into -errno; what then happens to it is decided by the kind's own file
 * (http_conn.c, http_resume.c, http_legacy.c) from xfer_done below.
 *
 * A transfer stopped from inside libcurl's callbacks cannot be removed there (libcurl refuses
 * curl_multi_remove_handle): it is marked STOPPED and freed after the iteration through
 * loop_release(). When the upstream goes first, it lets go of such a transfer (r->u = NULL),
 * which its release then frees alone. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "credkit/dpop.h"
#include "credkit/http.h"
#include "credkit/json.h"

#include "transport/http_int.h"

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
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
        return -EKEYREJECTED; /* the server's certificate is not trusted, or the CAs unreadable */
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
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

int http_req_error(const struct http_req *r, CURLcode cc, long status)
{
    if (cc != CURLE_OK && !r->error && strstr(http_tls_advice(r->errbuf), "client certificate"))
        return -ENOKEY; /* the server asked for a client certificate, or refused ours */
    if (cc != CURLE_OK)
        return r->error ? r->error : curl_to_errno(cc);
    return status_to_errno(status, r->session == SESSION_SENT);
}

/* ---- the lifecycle ------------------------------------------------------------------------ */

static bool transition_ok(enum http_req_state from, enum http_req_state to)
{
    switch (to) {
    case HREQ_QUEUED:
        return from == HREQ_DONE; /* re-sent to a legacy endpoint */
    case HREQ_RUNNING:
        return from == HREQ_QUEUED || from == HREQ_WAITING;
    case HREQ_DONE:
        return from == HREQ_RUNNING;
    case HREQ_WAITING:
        return from == HREQ_DONE;
    case HREQ_STOPPED:
        return from != HREQ_STOPPED;
    }
    return false;
}

void http_req_set_state(struct http_req *r, enum http_req_state to)
{
    assert(transition_ok(r->state, to));
    (void)transition_ok;
    r->state = to;
}

/* An event of a request's answer (the POST's or a resumption's). */
static int req_event(const struct sse_event *ev, void *userdata)
{
    struct http_req *r = userdata;
    struct http_conn *u = r->u;

    if (ev->id[0])
        r->ids++;
    if (ev->data_len > 0 && http_event_is(ev, "message"))
        http_emit_event(u, ev, r->tag);
    return http_gone(u) || r->state == HREQ_STOPPED ? -ECANCELED : 0;
}

struct http_req *http_req_new(struct http_conn *u, enum http_req_kind kind)
{
    bool sse_ready = false;
    struct http_req *r = http_req_take(u, &sse_ready);
    if (!r)
        return NULL;
    r->u = u;
    r->loop = u->loop;
    r->kind = kind;
    r->state = HREQ_QUEUED;
    r->seq = ++u->seq;
    r->signed_hdrs = (struct strv)STRV_INIT;
    http_spare_take(r);
    if (sse_ready) /* the spare transfer's: same upstream, same bounds */
        sse_parser_reuse(&r->sse, req_event, r, HTTP_SPARE_MAX);
    else
        sse_parser_init(&r->sse, u->max_message, u->max_message, req_event, r);
    list_add_tail(&u->reqs, &r->node);
    return r;
}

/* Frees r for good: off the multi handle, off the list. */
static void req_destroy(struct http_req *r)
{
    http_easy_give_back(r);
    http_slist_free_wipe(r->hdrs);
    http_hdrs_unref(r->shared);
    cred_sign_cancel(r->sign_run);
    strv_release_secure(&r->signed_hdrs);
    list_remove(&r->node);
    if (r->u && r->u->stream == r)
        http_stream_set(r->u, STREAM_NONE, NULL);
    loop_timer_cancel(r->timer);
    strv_release_secure(&r->extra);
    free(r->sid);
    free(r->challenge);
    free(r->start_id);
    http_spare_give_back(r);
    http_req_body_release(r);
    if (http_req_give_back(r->u, r))
        return;
    sse_parser_release(&r->sse);
    free(r->msg);
    free(r);
}

static void req_released(struct loop_release *node)
{
    req_destroy(list_entry(node, struct http_req, release));
}

void http_req_free(struct http_req *r)
{
    if (!r)
        return;
    if (r->state == HREQ_STOPPED) { /* its release, queued, frees it */
        list_remove(&r->node);
        r->u = NULL;
        return;
    }
    req_destroy(r);
}

void http_req_stop(struct http_req *r)
{
    struct http_conn *u = r->u;

    if (r->state == HREQ_STOPPED)
        return;
    http_req_set_state(r, HREQ_STOPPED);
    loop_timer_cancel(r->timer);
    r->timer = NULL;
    cred_sign_cancel(r->sign_run);
    r->sign_run = NULL;
    if (u && u->stream == r)
        http_stream_set(u, STREAM_NONE, NULL);
    loop_release(r->loop, &r->release, req_released);
    if (u)
        (void)http_kick(u); /* what waited for it may start */
}

void http_req_reset(struct http_req *r)
{
    http_easy_give_back(r);
    http_slist_free_wipe(r->hdrs);
    r->hdrs = NULL;
    http_hdrs_unref(r->shared);
    r->shared = NULL;
    strv_release_secure(&r->signed_hdrs);
    r->body = BODY_UNKNOWN;
    r->discarded = 0;
    r->error = 0;
    r->session = SESSION_NONE;
    free(r->sid);
    r->sid = NULL;
    free(r->challenge);
    r->challenge = NULL;
    r->new_nonce = false;
    http_ans_reset(r);
    sse_end(&r->sse);
}

void http_req_body_release(struct http_req *r)
{
    rblock_put(r->held, true);
    r->held = NULL;
    r->n_piece = 0;
}

void http_req_fail(struct http_req *r, int error)
{
    struct http_conn *u = r->u;
    uint64_t tag = r->tag;

    http_req_free(r);
    http_emit_error(u, error, tag);
}

/* ---- reading the answer --------------------------------------------------------------------- */

bool http_event_is(const struct sse_event *ev, const char *type)
{
    size_t n = strlen(type);
    return ev->type_len == n && memcmp(ev->type, type, n) == 0;
}

/* Can be sent as Last-Event-ID: no control character (an id never holds CR, LF or NUL, but
 * other controls would make a bad header), no white space at either end, bounded. */
bool http_id_usable(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > HTTP_CONN_SESSION_ID_MAX || id[0] == ' ' || id[n - 1] == ' ')
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)id[i] < 0x20 || (unsigned char)id[i] == 0x7f)
            return false;
    return true;
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

/* How to read the body, from the status and Content-Type, at its first byte. */
static int classify(struct http_req *r)
{
    long status = 0;
    char *ct = NULL;

    (void)curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if ((status == 400 || status == 404) && r->kind == HREQ_POST && (r->flags & HTTP_CONN_MODERN)) {
        /* a 2026-07-28 server's refusal carries a JSON-RPC error: read it */
        (void)curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
        r->body = media_type_is(ct, "application/json") ? BODY_JSON : BODY_DISCARD;
        r->error_body = r->body == BODY_JSON;
        return 0;
    }
    if (status < 200 || status >= 300 || r->kind == HREQ_DELETE || r->kind == HREQ_LEGACY_POST) {
        r->body = BODY_DISCARD;
        return 0;
    }
    int k = http_commit_session(r);
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

/* Whether the transfer is to go on taking bytes. */
static bool req_live(const struct http_req *r)
{
    const struct http_conn *u = r->u;
    if (!u || r->state == HREQ_STOPPED || u->state == HTTP_DEAD)
        return false;
    /* the DELETE runs while closing, and its answer may have a body (an HTML 404 page) */
    return u->state == HTTP_OPEN || r->kind == HREQ_DELETE;
}

/* The answer's Content-Length, 0 when it has none (chunked) */
static size_t announced(const struct http_req *r)
{
    curl_off_t n = -1;
    if (curl_easy_getinfo(r->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &n) != CURLE_OK || n <= 0 ||
        (uint64_t)n > SIZE_MAX - 1)
        return 0;
    return (size_t)n;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *userdata)
{
    struct http_req *r = userdata;
    struct http_conn *u = r->u;
    size_t len = size * nmemb;
    int k;

    if (!req_live(r))
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
        k = http_ans_reserve(r, len, r->ans_len ? 0 : announced(r));
        if (k < 0)
            goto fail;
        memcpy(r->ans->data + r->ans_len, p, len);
        r->ans_len += len;
        r->ans->data[r->ans_len] = 0;
        return len;
    case BODY_SSE:
        k = sse_feed(r->kind == HREQ_GET ? &u->stream_sse : &r->sse, p, len);
        if (!req_live(r))
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
    /* name is lowercase: the first letter rules out most header lines without a call */
    if (len < nl || ((unsigned char)p[0] | 0x20) != (unsigned char)name[0] ||
        strncasecmp(p, name, nl) != 0)
        return NULL;
    const char *v = p + nl, *end = p + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *ret_n = (size_t)(end - v);
    return v;
}

/* The MCP-Session-Id of an initialize answer: kept when usable, judged at commit. */
static size_t offer_session(struct http_req *r, const char *v, size_t n, size_t len)
{
    free(r->sid);
    r->sid = NULL;
    if (n > HTTP_CONN_SESSION_ID_MAX || !visible_ascii(v, n)) {
        r->session = SESSION_BAD;
        return len;
    }
    r->sid = strndup(v, n);
    if (!r->sid) {
        r->error = -ENOMEM;
        return 0;
    }
    r->session = SESSION_OFFERED;
    return len;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *userdata)
{
    struct http_req *r = userdata;
    size_t len = size * nmemb, n = 0;
    const char *v;

    if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) { /* a new response (after 1xx) */
        free(r->sid);
        r->sid = NULL;
        if (r->session == SESSION_OFFERED || r->session == SESSION_BAD)
            r->session = SESSION_NONE;
        free(r->challenge);
        r->challenge = NULL;
        return len;
    }
    v = header_value(p, len, "dpop-nonce:", &n);
    if (v && r->u && r->u->sign) { /* any answer may carry the next nonce (RFC 9449 8, 9) */
        r->new_nonce = cred_sign_dpop_nonce(r->u->sign, v, n) || r->new_nonce;
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
    if (!(r->flags & HTTP_CONN_INITIALIZE) || r->session == SESSION_TAKEN)
        return len;
    v = header_value(p, len, "mcp-session-id:", &n);
    return v ? offer_session(r, v, n, len) : len;
}

void http_req_deliver_json(struct http_req *r)
{
    struct http_conn *u = r->u;
    const char *p = r->ans ? r->ans->data : "";
    size_t len = r->ans_len;
    size_t i = 0;

    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    if (i == len)
        return; /* 200 with an empty body */
    if (p[i] != '[') {
        /* one message: the caller parses it, and a writer that cannot take a big piece of it
         * at once holds the buffer instead of copying (as for a framing's reads) */
        struct rblock *outer = rblock_set_delivering(r->ans);
        http_emit_message(u, p, len, r->tag);
        (void)rblock_set_delivering(outer);
        return;
    }
    /* a 2025-03-26 server's batch answer: each element on its own */
    struct json_object *arr = NULL;
    if (json_parse(p, len, u->max_message, &arr, NULL) < 0 ||
        !json_object_is_type(arr, json_type_array)) {
        json_object_put(arr);
        http_emit_error(u, -EBADMSG, r->tag);
        return;
    }
    size_t n = json_object_array_length(arr);
    for (size_t j = 0; j < n && !http_gone(u); j++) {
        size_t sl = 0;
        const char *s = json_object_to_json_string_length(
            json_object_array_get_idx(arr, j),
            JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &sl);
        if (s)
            http_emit_message(u, s, sl, r->tag);
    }
    json_object_put(arr);
}

/* ---- starting ------------------------------------------------------------------------------- */

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

/* Whether the header line h ("Name: value") is called as the one of line name. */
static bool same_name(const char *h, const char *name)
{
    size_t n = strcspn(name, ":");
    return strncasecmp(h, name, n) == 0 && h[n] == ':';
}

/* The requestHeadersCommand's headers sent last, each replacing the one of its name (as the
 * adapter applies them: over the entry's, the credentials' and ours). */
static int override_headers(struct curl_slist **l, const struct strv *sig)
{
    struct curl_slist *out = NULL, *n;
    int k = 0;
    for (struct curl_slist *h = *l; h && k >= 0; h = h->next) {
        bool replaced = false;
        for (size_t i = 0; i < sig->n && !replaced; i++)
            replaced = same_name(h->data, sig->v[i]);
        if (replaced)
            continue;
        n = curl_slist_append(out, h->data);
        if (n)
            out = n;
        else
            k = -ENOMEM;
    }
    for (size_t i = 0; i < sig->n && k >= 0; i++) {
        n = curl_slist_append(out, sig->v[i]);
        if (n)
            out = n;
        else
            k = -ENOMEM;
    }
    if (k < 0) {
        http_slist_free_wipe(out);
        return k;
    }
    http_slist_free_wipe(*l);
    *l = out;
    return 0;
}

/* The request's headers: the caller's, then ours; r's per-send ones (r->extra) unless
 * shared (a shared list has them put in front of it instead). */
static int req_headers(struct http_req *r, bool shared, struct curl_slist **ret)
{
    struct http_conn *u = r->u;
    struct curl_slist *l = NULL, *n;
    bool get = r->kind == HREQ_GET || r->kind == HREQ_RESUME;
    bool post = r->kind == HREQ_POST || r->kind == HREQ_LEGACY_POST;
    bool modern = (r->flags & HTTP_CONN_MODERN) != 0;
    int k = 0;

    for (size_t i = 0; i < u->headers.n && k >= 0; i++) {
        n = curl_slist_append(l, u->headers.v[i]);
        if (n)
            l = n;
        else
            k = -ENOMEM;
    }
    for (size_t i = 0; !shared && i < r->extra.n && k >= 0; i++) {
        n = curl_slist_append(l, r->extra.v[i]);
        if (n)
            l = n;
        else
            k = -ENOMEM;
    }
    if (k >= 0)
        k = add_header(&l, "Accept",
                       get ? "text/event-stream" : "application/json, text/event-stream");
    if (k >= 0 && post)
        k = add_header(&l, "Content-Type", "application/json");
    if (k >= 0)
        k = add_header(&l, "Expect", ""); /* no 100-continue round trip */
    if (k >= 0 && u->session_id && !modern && !(post && (r->flags & HTTP_CONN_INITIALIZE))) {
        k = add_header(&l, "MCP-Session-Id", u->session_id);
        r->session = SESSION_SENT;
    }
    if (k >= 0 && u->proto && !modern)
        k = add_header(&l, "MCP-Protocol-Version", u->proto);
    if (k >= 0 && get) {
        const char *id = sse_last_id(r->kind == HREQ_GET ? &u->stream_sse : &r->sse);
        if (http_id_usable(id))
            k = add_header(&l, "Last-Event-ID", id);
    }
    if (k >= 0 && r->signed_hdrs.n)
        k = override_headers(&l, &r->signed_hdrs);
    if (k < 0) {
        http_slist_free_wipe(l);
        return k;
    }
    *ret = l;
    return 0;
}

/* Whether r sends a POST's headers the upstream's POSTs share (with its few per-send ones,
 * Mcp-Method and the like, in front): no requestHeadersCommand's answer or DPoP proof (built
 * for each request by design), not the initialize. */
static bool hdrs_shareable(const struct http_req *r)
{
    return (r->kind == HREQ_POST || r->kind == HREQ_LEGACY_POST) && r->extra.n <= HTTP_HEAD_MAX &&
           r->signed_hdrs.n == 0 && !(r->flags & HTTP_CONN_INITIALIZE);
}

/* The header list r is sent with: r's per-send headers in front of the upstream's shared list
 * when r may share it (built now if it is out of date), else r's own. */
static int req_header_list(struct http_req *r, struct curl_slist **ret)
{
    struct http_conn *u = r->u;
    bool modern = (r->flags & HTTP_CONN_MODERN) != 0;
    struct http_hdrs **slot = modern ? &u->modern_hdrs : &u->post_hdrs;
    int k;

    if (!hdrs_shareable(r)) {
        k = req_headers(r, false, &r->hdrs);
        if (k >= 0)
            *ret = r->hdrs;
        return k;
    }
    if (!*slot) {
        struct http_hdrs *h = calloc(1, sizeof(*h));
        if (!h)
            return -ENOMEM;
        k = req_headers(r, true, &h->list);
        if (k < 0) {
            free(h);
            return k;
        }
        h->refs = 1;
        *slot = h;
    }
    if (u->session_id && !modern) /* as req_headers() marks it: the list holds it */
        r->session = SESSION_SENT;
    (*slot)->refs++;
    r->shared = *slot;
    struct curl_slist *l = r->shared->list;
    for (size_t i = r->extra.n; i-- > 0;) { /* libcurl only reads the list */
        r->head[i] = (struct curl_slist){.data = r->extra.v[i], .next = l};
        l = &r->head[i];
    }
    *ret = l;
    return 0;
}

static void xfer_done(CURL *easy, CURLcode cc, void *userdata);

/* The options of a handle that are the same for every transfer to url: set once per handle,
 * kept while it is pooled (the environment's proxy and CAs are read once per handle). */
static CURLcode easy_constant(struct http_req *r, const char *url)
{
    CURL *c = r->easy;
    CURLcode cc = CURLE_OK;
    if (http_curl_baseline(c) < 0)
        return CURLE_UNKNOWN_OPTION;
    HTTP_SETOPT(cc, c, CURLOPT_URL, url);
    HTTP_SETOPT(cc, c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    HTTP_SETOPT(cc, c, CURLOPT_WRITEFUNCTION, on_write);
    HTTP_SETOPT(cc, c, CURLOPT_HEADERFUNCTION, on_header);
    /* the proxy, the entry's CAs (as the adapter's "caFile": instead of the system's roots)
     * and its client certificate, as every request of the suite gets them */
    int k = cc == CURLE_OK ? http_curl_network(c, url, &r->u->tls) : 0;
    if (k < 0)
        cc = k == -ENOMEM ? CURLE_OUT_OF_MEMORY : CURLE_UNKNOWN_OPTION;
    return cc;
}

/* ---- a message in pieces -------------------------------------------------------------------- */

/* libcurl asks for the next bytes of a message sent in pieces: copied from where they lie, no
 * more than it has room for. userdata NULL: a pooled handle's (never read from). */
static size_t on_read(char *buf, size_t size, size_t nitems, void *userdata)
{
    struct http_req *r = userdata;
    size_t room = size * nitems, done = 0;

    if (!r)
        return CURL_READFUNC_ABORT;
    while (done < room && r->piece_i < r->n_piece) {
        const struct iovec *v = &r->piece[r->piece_i];
        size_t n = v->iov_len - r->piece_off;
        if (n > room - done)
            n = room - done;
        memcpy(buf + done, (const char *)v->iov_base + r->piece_off, n);
        done += n;
        r->piece_off += n;
        if (r->piece_off == v->iov_len) {
            r->piece_i++;
            r->piece_off = 0;
        }
    }
    return done;
}

/* libcurl sends the body again by itself (a reused connection that turned out closed): the
 * cursor goes back to offset. */
static int on_seek(void *userdata, curl_off_t offset, int origin)
{
    struct http_req *r = userdata;

    if (!r || origin != SEEK_SET || offset < 0 || (uint64_t)offset > r->len)
        return CURL_SEEKFUNC_FAIL;
    size_t left = (size_t)offset;
    r->piece_i = 0;
    r->piece_off = 0;
    while (left > 0 && r->piece_i < r->n_piece) {
        size_t l = r->piece[r->piece_i].iov_len;
        if (left < l) {
            r->piece_off = left;
            break;
        }
        left -= l;
        r->piece_i++;
    }
    return CURL_SEEKFUNC_OK;
}

/* The options of this transfer: every one a pooled handle's last transfer may have set
 * differently is set again. */
static int req_setopt(struct http_req *r, struct curl_slist *hdrs, int64_t timeout)
{
    CURL *c = r->easy;
    CURLcode cc = CURLE_OK;
#define SET(opt, val) HTTP_SETOPT(cc, c, opt, val)
    SET(CURLOPT_HTTPHEADER, hdrs);
    SET(CURLOPT_WRITEDATA, r);
    SET(CURLOPT_HEADERDATA, r);
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)timeout);
    SET(CURLOPT_ERRORBUFFER, r->errbuf);
    SET(CURLOPT_TIMEOUT_MS, r->kind != HREQ_GET ? (long)timeout : 0L);
    switch (r->kind) {
    case HREQ_POST:
    case HREQ_LEGACY_POST:
        SET(CURLOPT_CUSTOMREQUEST, (char *)NULL);
        if (r->n_piece > 0) {
            /* read from the pieces, from the start (a launch again sends the same bytes); the
             * size known, so neither chunked nor Expect (req_headers() empties it) */
            r->piece_i = 0;
            r->piece_off = 0;
            r->easy_reads = true;
            SET(CURLOPT_POSTFIELDS, (char *)NULL);
            SET(CURLOPT_POST, 1L);
            SET(CURLOPT_READFUNCTION, on_read);
            SET(CURLOPT_READDATA, r);
            SET(CURLOPT_SEEKFUNCTION, on_seek);
            SET(CURLOPT_SEEKDATA, r);
            SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
        } else {
            SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
            SET(CURLOPT_POSTFIELDS, r->msg);
        }
        break;
    case HREQ_GET:
    case HREQ_RESUME:
        SET(CURLOPT_CUSTOMREQUEST, (char *)NULL);
        SET(CURLOPT_HTTPGET, 1L);
        break;
    case HREQ_DELETE:
        SET(CURLOPT_HTTPGET, 1L);
        SET(CURLOPT_CUSTOMREQUEST, "DELETE");
        break;
    }
#undef SET
    return curl_to_errno(cc);
}

/* Builds the transfer and adds it to the multi handle. */
static int req_launch(struct http_req *r, int64_t timeout)
{
    struct http_conn *u = r->u;
    const char *url = r->kind == HREQ_LEGACY_POST ? u->endpoint : u->url;
    struct curl_slist *hdrs = NULL;
    bool ready = false;
    int k;
    if (!url)
        return -EINVAL;
    r->easy = http_easy_take(u, url, &ready);
    if (!r->easy)
        return -ENOMEM;
    r->easy_at_url = false; /* until its constant options are known to be set */
    k = ready ? 0 : curl_to_errno(easy_constant(r, url));
    if (k >= 0)
        r->easy_at_url = url == u->url;
    if (k >= 0)
        k = req_header_list(r, &hdrs);
    if (k >= 0)
        k = req_setopt(r, hdrs, timeout);
    if (k >= 0)
        k = loop_curl_add(u->loop, r->easy, xfer_done, r);
    return k;
}

/* The requestHeadersCommand answered: the transfer goes out with its headers, or ends with
 * the failure as a transfer that failed (-ECOMM: the reason is in the log). */
static void signed_done(int error, const char *const *headers, void *userdata)
{
    struct http_req *r = userdata;
    int k = error < 0 ? error : 0;
    r->sign_run = NULL;
    if (r->state == HREQ_STOPPED || !r->u || r->u->state == HTTP_DEAD)
        return;
    for (size_t i = 0; k >= 0 && headers && headers[i]; i++)
        k = strv_push(&r->signed_hdrs, headers[i]);
    int64_t timeout = r->sign_timeout;
    if (k >= 0 && r->kind != HREQ_GET && r->kind != HREQ_DELETE) {
        timeout = r->deadline - loop_now(r->loop); /* the command's time counts */
        if (timeout <= 0)
            k = -ETIMEDOUT;
    }
    if (k >= 0)
        k = req_launch(r, timeout);
    if (k >= 0)
        return;
    r->error = k == -ENOMEM || k == -ETIMEDOUT ? k : -ECOMM;
    xfer_done(r->easy, CURLE_ABORTED_BY_CALLBACK, r);
}

static const char *req_method(const struct http_req *r)
{
    switch (r->kind) {
    case HREQ_POST:
    case HREQ_LEGACY_POST:
        return "POST";
    case HREQ_DELETE:
        return "DELETE";
    case HREQ_GET:
    case HREQ_RESUME:
        break;
    }
    return "GET";
}

int http_req_start(struct http_req *r)
{
    struct http_conn *u = r->u;
    const char *url = u->url;
    int64_t timeout = u->timeout_ms;
    int k;

    if (r->kind == HREQ_POST && u->mode != MODE_STREAMABLE)
        r->kind = HREQ_LEGACY_POST; /* sent by the old transport: only its status counts */
    if (r->kind == HREQ_POST || r->kind == HREQ_LEGACY_POST) {
        if (r->kind == HREQ_LEGACY_POST)
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
        r->ids = 0;
    } else if (r->kind == HREQ_DELETE && timeout > HTTP_CONN_CLOSE_TIMEOUT_MS) {
        timeout = HTTP_CONN_CLOSE_TIMEOUT_MS;
    }
    if (!url)
        return -EINVAL;
    if (cred_sign_wanted(u->sign)) {
        bool post = r->kind == HREQ_POST || r->kind == HREQ_LEGACY_POST;
        r->sign_timeout = timeout;
        strv_release_secure(&r->signed_hdrs);
        /* a message in pieces only without a command: a DPoP proof alone reads no body */
        bool body = post && r->n_piece == 0;
        k = cred_sign_start(u->sign, req_method(r), url, body ? r->msg : NULL, body ? r->len : 0,
                            signed_done, r, &r->sign_run, NULL);
        if (k < 0)
            return k == -ENOMEM ? k : -ECOMM;
    } else {
        k = req_launch(r, timeout);
        if (k < 0)
            return k;
    }
    http_req_set_state(r, HREQ_RUNNING);
    return 0;
}

/* ---- finished transfers ------------------------------------------------------------------ */

/* The JSON body of a 2026-07-28 request's 400 or 404: a JSON-RPC error is delivered as the
 * answer (its id the request's when the server gave none, as an error about the request
 * itself may); anything else leaves the status's error to report. */
static void modern_refusal(struct http_req *r)
{
    struct json_object *o = NULL, *err = NULL, *id = NULL;
    if (!r->ans || json_parse(r->ans->data, r->ans_len, r->u->max_message, &o, NULL) < 0 ||
        !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "error", &err) ||
        !json_object_is_type(err, json_type_object)) {
        json_object_put(o);
        return;
    }
    if (r->tag && (!json_object_object_get_ex(o, "id", &id) || !id) &&
        json_object_object_add(o, "id", json_object_new_int64((int64_t)r->tag)) < 0) {
        json_object_put(o);
        return;
    }
    size_t n = 0;
    const char *s = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    if (s)
        http_emit_message(r->u, s, n, r->tag);
    json_object_put(o);
}

/* A Streamable POST finished. Returns true when r lives on (resumed, or re-sent to the legacy
 * endpoint). */
/* A POST refused with 401 use_dpop_nonce and a new DPoP-Nonce: sent again once, with a proof
 * that holds the nonce (RFC 9449 9), before anyone hears of the 401. */
static bool dpop_nonce_retry(struct http_req *r, CURLcode cc, long status)
{
    if (cc != CURLE_OK || status != 401 || r->nonce_retried || !r->new_nonce ||
        !dpop_challenge_wants_nonce(r->u->challenge))
        return false;
    r->nonce_retried = true;
    http_req_reset(r);
    http_req_set_state(r, HREQ_QUEUED);
    (void)http_kick(r->u);
    return true;
}

static bool post_done(struct http_req *r, CURLcode cc, long status)
{
    struct http_conn *u = r->u;
    int k = http_req_error(r, cc, status);

    if (http_gone(u))
        return false;
    if (dpop_nonce_retry(r, cc, status))
        return true;
    if (http_legacy_fallback(r, cc, status, &k))
        return true;
    /* never sent again from here on: a large message's copy goes before its answer is passed
     * on (which makes copies of its own), not after */
    if (r->msg_cap > HTTP_SPARE_MAX) {
        free(r->msg);
        r->msg = NULL;
        r->msg_cap = 0;
    }
    http_req_body_release(r);
    if (r->error_body) {
        if (cc == CURLE_OK)
            modern_refusal(r);
    } else {
        if (k == 0)
            k = http_commit_session(r);
        if (k == 0 && r->body == BODY_JSON)
            http_req_deliver_json(r);
    }
    if (r->reply == REPLY_ARRIVED) /* the request is over: nothing more to say about it */
        return false;
    if ((r->flags & HTTP_CONN_MODERN) && r->reply == REPLY_AWAITED && r->body == BODY_SSE) {
        http_emit_error(u, -ECONNRESET, r->tag); /* no resumption in 2026-07-28 */
        return false;
    }
    if (r->reply == REPLY_AWAITED && r->body == BODY_SSE && !http_gone(u) &&
        http_resume_post_ended(r, cc, status, &k))
        return true;
    if (k < 0)
        http_emit_error(u, k, r->tag);
    return false;
}

/* The latest refusal's challenge, for http_conn_challenge(). */
static void keep_challenge(struct http_req *r, long status)
{
    if (status != 401 && status != 403)
        return;
    free(r->u->challenge);
    r->u->challenge = r->challenge;
    r->challenge = NULL;
}

static void xfer_done(CURL *easy, CURLcode cc, void *userdata)
{
    struct http_req *r = userdata;
    struct http_conn *u = r->u;
    long status = 0;
    bool keep = false;

    if (r->state == HREQ_STOPPED || !u || u->state == HTTP_DEAD)
        return; /* freed by its release, or the upstream's */
    http_req_set_state(r, HREQ_DONE);
    if (easy) /* none: the requestHeadersCommand failed, the request was never sent */
        (void)curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    keep_challenge(r, status);
    switch (r->kind) {
    case HREQ_POST:
        keep = post_done(r, cc, status);
        break;
    case HREQ_LEGACY_POST:
        http_legacy_post_done(r, cc, status);
        break;
    case HREQ_GET:
        if (u->mode != MODE_STREAMABLE)
            http_legacy_stream_done(r, cc, status);
        else
            http_stream_done(r, cc, status);
        break;
    case HREQ_RESUME:
        keep = http_resume_done(r, cc, status);
        break;
    case HREQ_DELETE:
        http_delete_done(r, cc, status);
        break;
    }
    if (u->state == HTTP_DEAD) /* freed from a callback: the release takes r with it */
        return;
    if (!keep)
        http_req_free(r);
    if (u->stream_state == STREAM_ORDERED && !http_gone(u))
        (void)http_kick(u); /* it may have waited for this one */
}
