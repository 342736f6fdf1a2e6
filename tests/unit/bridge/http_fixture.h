/* http_fixture.h - what the HTTP upstream's scenario tests share (header-only).
 *
 * test_http_upstream.c (Streamable HTTP: sessions, the GET stream, order, headers and
 * challenges), test_http_resume.c (a POST's answer resumed, 2025-11-25 polling) and
 * test_http_legacy.c (the 2024-11-05 HTTP+SSE transport) each run one in-test server
 * (libmicrohttpd on 127.0.0.1, httpd.h) and drive http_conn on a loop. The server's
 * plumbing is here: collecting a request's body, then handing it to the test's fx_route();
 * streamed answers (a head, then the events of a queue or keep-alive comments while the client
 * stays); the lock and condition every test's server state lives under; a guard timer. What a
 * server answers, and what it saw, stays in its test. The server starts on first use
 * (fx_url()) and is stopped at exit, every stream ended first. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <microhttpd.h>

#include "transport/http_conn.h"
#include "httpd.h"
#include "core/loop.h"
#include "tests.h"

#define F 64

static pthread_mutex_t fx_mu = PTHREAD_MUTEX_INITIALIZER; /* every test's server state */
static pthread_cond_t fx_cv = PTHREAD_COND_INITIALIZER;   /* with fx_mu: news for the streams */
static bool fx_stopping;                                  /* the server is going: end streams */
static struct MHD_Daemon *fx_daemon;
static unsigned fx_port;

/* A request being received, then answered. */
struct upload {
    char *data;
    size_t len;
    int track; /* the test's: non-zero to be told when the answer was sent (fx_on_completed) */
};

/* The test's answer to a complete request (its body in u). */
static enum MHD_Result fx_route(struct MHD_Connection *c, const char *url, const char *method,
                                struct upload *u);
/* Called (with fx_mu held) when a request with u->track set is over; NULL: none. */
static void (*fx_on_completed)(const struct upload *u, enum MHD_RequestTerminationCode toe);

static inline int64_t now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Events waiting for a streamed answer, under fx_mu; a stream of an earlier generation ends. */
struct fx_queue {
    char out[16384];
    size_t len;
    bool end; /* end the stream once the queue is empty */
    unsigned gen;
};

/* Called with fx_mu held. */
static inline void fx_queue_push(struct fx_queue *q, const char *ev)
{
    size_t n = strlen(ev);
    if (q->len + n <= sizeof(q->out)) {
        memcpy(q->out + q->len, ev, n);
        q->len += n;
    }
    pthread_cond_broadcast(&fx_cv);
}

/* A streamed answer: head, then the events of q until q->end (or a new generation), or
 * (hold) keep-alive comments until the client goes; at most until `until`. */
struct fx_stream {
    char *head;
    size_t len, off;
    struct fx_queue *q;
    bool hold;
    int64_t until;
    unsigned gen;
};

static inline ssize_t fx_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct fx_stream *s = cls;
    struct fx_queue *q = s->q;
    ssize_t ret = 0;
    (void)pos;

    if (s->off < s->len)
        return (ssize_t)httpd_copy_out(buf, max, s->head, s->len, &s->off);
    if (!q && !s->hold)
        return MHD_CONTENT_READER_END_OF_STREAM;
    pthread_mutex_lock(&fx_mu);
    for (;;) {
        if (fx_stopping || now_ms() >= s->until ||
            (q && (s->gen != q->gen || (q->end && !q->len)))) {
            ret = MHD_CONTENT_READER_END_OF_STREAM;
            break;
        }
        if (q && q->len) {
            ret = (ssize_t)httpd_pop(buf, max, q->out, &q->len);
            break;
        }
        ret = httpd_idle(&fx_cv, &fx_mu, buf, max);
        if (ret > 0)
            break;
    }
    pthread_mutex_unlock(&fx_mu);
    return ret;
}

static inline void fx_stream_free(void *cls)
{
    struct fx_stream *s = cls;
    free(s->head);
    free(s);
}

/* Answers 200 text/event-stream with head, then as struct fx_stream says (q: NULL for none;
 * gen: q's generation when the stream starts). */
static inline enum MHD_Result fx_reply_stream(struct MHD_Connection *c, const char *head,
                                              struct fx_queue *q, unsigned gen, bool hold)
{
    struct fx_stream *s = calloc(1, sizeof(*s));
    if (!s || !(s->head = strdup(head))) {
        free(s);
        return MHD_NO;
    }
    s->len = strlen(head);
    s->q = q;
    s->hold = hold;
    s->until = now_ms() + 5000;
    s->gen = gen;
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024,
                                                               fx_stream_read, s, fx_stream_free);
    if (!r) {
        fx_stream_free(s);
        return MHD_NO;
    }
    return httpd_queue(c, 200, "text/event-stream", NULL, r);
}

/* the method of a POSTed message, and for tools/call the tool's name */
static inline void parse_post(const struct upload *u, char method[F], char tool[F])
{
    json_object *o = json_tokener_parse(u->data ? u->data : "");
    json_object *m = NULL, *params = NULL, *n = NULL;
    const char *s =
        o && json_object_object_get_ex(o, "method", &m) ? json_object_get_string(m) : "";
    snprintf(method, F, "%s", s ? s : "");
    s = o && json_object_object_get_ex(o, "params", &params) &&
                json_object_object_get_ex(params, "name", &n)
            ? json_object_get_string(n)
            : "";
    snprintf(tool, F, "%s", s ? s : "");
    json_object_put(o);
}

/* The id of a message (-1 when none) and, in *method when not NULL, its method ("" when none;
 * a static buffer). */
static inline int msg_id(const char *msg, size_t len, const char **method)
{
    char *s = strndup(msg, len);
    json_object *o = s ? json_tokener_parse(s) : NULL, *v = NULL;
    int id = -1;
    static char m[F];
    free(s);
    m[0] = 0;
    if (o && json_object_object_get_ex(o, "id", &v))
        id = json_object_get_int(v);
    if (o && json_object_object_get_ex(o, "method", &v))
        snprintf(m, sizeof(m), "%s", json_object_get_string(v));
    json_object_put(o);
    if (method)
        *method = m;
    return id;
}

static inline bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static inline enum MHD_Result fx_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                         const char *method, const char *version,
                                         const char *upload_data, size_t *upload_data_size,
                                         void **con_cls)
{
    struct upload *u = *con_cls;
    (void)cls, (void)version;

    if (!u) {
        u = calloc(1, sizeof(*u));
        if (!u)
            return MHD_NO;
        *con_cls = u;
        return MHD_YES;
    }
    if (*upload_data_size)
        return httpd_upload_append(&u->data, &u->len, upload_data, upload_data_size) ? MHD_YES
                                                                                     : MHD_NO;
    return fx_route(conn, url, method, u);
}

static inline void fx_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                                enum MHD_RequestTerminationCode toe)
{
    struct upload *u = *con_cls;
    (void)cls, (void)conn;
    if (u && u->track && fx_on_completed) {
        pthread_mutex_lock(&fx_mu);
        fx_on_completed(u, toe);
        pthread_mutex_unlock(&fx_mu);
    }
    if (u) {
        free(u->data);
        free(u);
        *con_cls = NULL;
    }
}

static inline void fx_stop(void)
{
    pthread_mutex_lock(&fx_mu);
    fx_stopping = true;
    pthread_cond_broadcast(&fx_cv);
    pthread_mutex_unlock(&fx_mu);
    MHD_stop_daemon(fx_daemon);
}

/* "http://127.0.0.1:PORT" + path in url[size], the server started on first use. */
static inline void fx_url(char *url, size_t size, const char *path)
{
    if (!fx_daemon) {
        fx_daemon = httpd_start(fx_handler, NULL, fx_completed, 0, &fx_port);
        (void)atexit(fx_stop);
    }
    snprintf(url, size, "http://127.0.0.1:%u%s", fx_port, path);
}

/* A guard timer's callback: the test took too long. userdata points at a struct whose first
 * member is its struct loop *. */
static inline void fx_guard(struct loop_timer *t, void *userdata)
{
    struct loop *l = *(struct loop **)userdata;
    (void)t;
    fprintf(stderr, "timed out\n");
    loop_quit(l, -ETIMEDOUT);
}
