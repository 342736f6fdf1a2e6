/* httpd.h - the pieces every in-test HTTP server shares (header-only, for unit tests).
 *
 * A test that needs an HTTP peer runs libmicrohttpd on 127.0.0.1, port 0, with a thread per
 * connection, and keeps what the server saw in its own structure under its own mutex. What is
 * the same from one such server to the next lives here: starting the daemon, collecting a
 * request body, answering with a buffer, and the SSE stream reader's steps (its head, its queue
 * of events, keep-alive comments while idle). What a server answers stays in its test. */
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include <microhttpd.h>

/* Starts the daemon on 127.0.0.1 with a free port (*ret_port), a thread per connection:
 * handler gets cls; completed may be NULL; memory_limit is the per-connection memory
 * (0: libmicrohttpd's default). Exits the test program with 2 when it cannot: nothing could be
 * tested. Stop with MHD_stop_daemon(). */
static inline struct MHD_Daemon *httpd_start(MHD_AccessHandlerCallback handler, void *cls,
                                             MHD_RequestCompletedCallback completed,
                                             size_t memory_limit, unsigned *ret_port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_OptionItem opts[] = {
        {memory_limit ? MHD_OPTION_CONNECTION_MEMORY_LIMIT : MHD_OPTION_END, (intptr_t)memory_limit,
         NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL, handler,
        cls, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, completed,
        NULL, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "cannot start the test HTTP server\n");
        exit(2);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || !info->port) {
        fprintf(stderr, "cannot read the test HTTP server's port\n");
        exit(2);
    }
    *ret_port = info->port;
    return d;
}

/* Copies the request header name into out[size] ("" when absent; cut to fit). */
static inline void httpd_header(struct MHD_Connection *c, const char *name, char *out, size_t size)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    snprintf(out, size, "%s", v ? v : "");
}

/* Appends the chunk of a request body MHD hands the access handler to *data (kept
 * NUL-terminated) and marks the chunk as taken. false on ENOMEM: the handler answers MHD_NO. */
static inline bool httpd_upload_append(char **data, size_t *len, const char *chunk,
                                       size_t *chunk_size)
{
    char *n = realloc(*data, *len + *chunk_size + 1);
    if (!n)
        return false;
    memcpy(n + *len, chunk, *chunk_size);
    *data = n;
    *len += *chunk_size;
    n[*len] = 0;
    *chunk_size = 0;
    return true;
}

/* A request body, collected in *con_cls across the calls MHD makes to the access handler. */
struct httpd_upload {
    char *data; /* NUL-terminated; NULL when the body is empty */
    size_t len;
};

/* The access handler's first step: true with *ret the upload once the whole body is there;
 * false with *now what the handler returns meanwhile (the first call, a chunk, no memory). */
static inline bool httpd_collect(void **con_cls, const char *data, size_t *data_size,
                                 struct httpd_upload **ret, enum MHD_Result *now)
{
    struct httpd_upload *u = *con_cls;
    if (!u) {
        u = calloc(1, sizeof(*u));
        *con_cls = u;
        *now = u ? MHD_YES : MHD_NO;
        return false;
    }
    if (*data_size) {
        *now = httpd_upload_append(&u->data, &u->len, data, data_size) ? MHD_YES : MHD_NO;
        return false;
    }
    *ret = u;
    return true;
}

/* The request-completed callback that frees what httpd_collect() collected. */
static inline void httpd_upload_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                                          enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    struct httpd_upload *u = *con_cls;
    if (u)
        free(u->data);
    free(u);
    *con_cls = NULL;
}

/* Queues r (taken, also when NULL: MHD_NO) with a Content-Type and an Mcp-Session-Id when
 * not NULL. */
static inline enum MHD_Result httpd_queue(struct MHD_Connection *c, unsigned status,
                                          const char *ctype, const char *sid,
                                          struct MHD_Response *r)
{
    if (!r)
        return MHD_NO;
    if (ctype)
        (void)MHD_add_response_header(r, "Content-Type", ctype);
    if (sid)
        (void)MHD_add_response_header(r, "Mcp-Session-Id", sid);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Answers with a copy of body. */
static inline enum MHD_Result httpd_reply(struct MHD_Connection *c, unsigned status,
                                          const char *ctype, const char *body, const char *sid)
{
    return httpd_queue(
        c, status, ctype, sid,
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY));
}

/* For a stream reader: copies what is left of src[0..len) from *off into buf[max], advancing
 * *off; the count (0 once all of it was sent). */
static inline size_t httpd_copy_out(char *buf, size_t max, const char *src, size_t len, size_t *off)
{
    size_t n = len - *off < max ? len - *off : max;
    memcpy(buf, src + *off, n);
    *off += n;
    return n;
}

/* For a stream reader: moves the head of the queue q[0..*qlen) into buf[max]; the count. */
static inline size_t httpd_pop(char *buf, size_t max, char *q, size_t *qlen)
{
    size_t n = *qlen < max ? *qlen : max;
    memcpy(buf, q, n);
    memmove(q, q + n, *qlen - n);
    *qlen -= n;
    return n;
}

/* For a stream reader with mu held: waits up to 50 ms for news on cv. When none came, writes
 * a keep-alive comment into buf[max] and returns its length (sending something is how a
 * client that left is noticed); 0 when woken, or when buf is too small for the comment: the
 * caller looks at its state again. */
static inline ssize_t httpd_idle(pthread_cond_t *cv, pthread_mutex_t *mu, char *buf, size_t max)
{
    static const char ka[] = ": keep-alive\n\n";
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    if (pthread_cond_timedwait(cv, mu, &ts) != 0 && max >= sizeof(ka) - 1) {
        memcpy(buf, ka, sizeof(ka) - 1);
        return (ssize_t)(sizeof(ka) - 1);
    }
    return 0;
}
