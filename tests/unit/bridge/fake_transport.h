/* fake_transport.h - a transport written for the upstream's unit tests: nothing runs but the
 * loop. Each one opened is kept (at most FAKE_MAX, released by fakes_release()); it records
 * every message sent (parsed), the headers given at open and by set_headers, and the extra
 * headers of the last send_hdrs; the test plays the server with fake_deliver() (or
 * fake_deliver_on(), as on the answer stream of one request, as HTTP does). Its 401 reads
 * "the fake says 401" and its challenge is `Bearer scope="fake"`.
 *
 * Included by test_upstream_fake.c and test_mrtr_upstream.c, after tests.h, loop.h,
 * loop_wait.h, transport.h; every definition is static, and each file uses only some. */
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "credkit/json.h"

#define FAKE_MAX      8
#define FAKE_MAX_SENT 128

/* Runs the loop for ms (what is due meanwhile happens). */
static void spin(struct loop *l, int64_t ms)
{
    struct loop_timer *deadline = NULL;
    CHECK_INT(loop_timer_add(l, ms, waiter_deadline, l, &deadline), 0);
    (void)loop_run(l);
    loop_timer_cancel(deadline);
}

struct fake {
    struct transport t;
    const struct transport_handler *h;
    void *userdata;
    struct json_object *sent[FAKE_MAX_SENT];
    int nsent;
    char headers[8][128]; /* the last header set given, at open or by set_headers */
    int nheaders;
    int set_headers_calls;
    char url_var[64];     /* ${HOST} as the transport's lookup gave it at open */
    char last_hdrs[1024]; /* the extra headers of the last send_hdrs, joined with '|' */
    uint64_t message_tag; /* during fake_deliver_on(): the request whose stream it plays */
    bool freed;
};

static struct fake *fakes[FAKE_MAX];
static int nfakes;

static void fake_keep_headers(struct fake *f, const char *const *headers)
{
    f->nheaders = 0;
    for (size_t i = 0; headers && headers[i] && i < 8; i++)
        snprintf(f->headers[f->nheaders++], sizeof(f->headers[0]), "%s", headers[i]);
}

static int fake_send(struct transport *t, const char *msg, size_t len, unsigned flags, uint64_t tag)
{
    struct fake *f = (struct fake *)(void *)t;
    (void)flags, (void)tag;
    if (f->nsent >= FAKE_MAX_SENT)
        return -ENOBUFS;
    char *s = strndup(msg, len);
    f->sent[f->nsent++] = json_tokener_parse(s);
    free(s);
    return 0;
}

static int fake_send_hdrs(struct transport *t, const char *msg, size_t len, unsigned flags,
                          uint64_t tag, const char *const *hdrs)
{
    struct fake *f = (struct fake *)(void *)t;
    f->last_hdrs[0] = 0;
    for (size_t i = 0; hdrs && hdrs[i]; i++) {
        size_t n = strlen(f->last_hdrs);
        snprintf(f->last_hdrs + n, sizeof(f->last_hdrs) - n, "%s|", hdrs[i]);
    }
    return fake_send(t, msg, len, flags, tag);
}

static int fake_set_headers(struct transport *t, const char *const *headers)
{
    struct fake *f = (struct fake *)(void *)t;
    f->set_headers_calls++;
    fake_keep_headers(f, headers);
    return 0;
}

static int fake_shutdown(struct transport *t)
{
    (void)t;
    return -EOPNOTSUPP; /* nothing to wait for */
}

static void fake_free(struct transport *t)
{
    struct fake *f = (struct fake *)(void *)t;
    f->freed = true; /* the memory stays for the checks; released at the end of the test */
}

static const char *fake_strerror(int error)
{
    return error == -EACCES ? "the fake says 401" : NULL;
}

static const char *fake_challenge(const struct transport *t)
{
    (void)t;
    return "Bearer scope=\"fake\"";
}

static uint64_t fake_message_tag(const struct transport *t)
{
    return ((const struct fake *)(const void *)t)->message_tag;
}

static const struct transport_ops fake_ops = {
    .name = "fake",
    .challenge = fake_challenge,
    .strerror = fake_strerror,
    .send = fake_send,
    .send_hdrs = fake_send_hdrs,
    .set_headers = fake_set_headers,
    .shutdown = fake_shutdown,
    .free = fake_free,
    .message_tag = fake_message_tag,
};

static int fake_open(const struct transport_spec *spec, const struct transport_handler *h,
                     void *userdata, struct transport **ret, struct err *e)
{
    (void)e;
    struct fake *f = calloc(1, sizeof(*f));
    if (!f || nfakes >= FAKE_MAX) {
        free(f);
        return -ENOMEM;
    }
    f->t.ops = &fake_ops;
    f->h = h;
    f->userdata = userdata;
    fake_keep_headers(f, spec->headers);
    char *v = NULL;
    if (spec->lookup && spec->lookup(spec->lookup_userdata, "HOST", &v, NULL) == 0) {
        snprintf(f->url_var, sizeof(f->url_var), "%s", v);
        free(v);
    }
    fakes[nfakes++] = f;
    *ret = &f->t;
    return 0;
}

static void fakes_release(void)
{
    for (int i = 0; i < nfakes; i++) {
        for (int k = 0; k < fakes[i]->nsent; k++)
            json_object_put(fakes[i]->sent[k]);
        free(fakes[i]);
    }
    nfakes = 0;
}

/* The one opened last, NULL before any. */
static struct fake *cur(void)
{
    return nfakes ? fakes[nfakes - 1] : NULL;
}

static const char *sent_method(struct fake *f, int i)
{
    return i < f->nsent ? json_get_string(f->sent[i], "method") : NULL;
}

static int64_t sent_id(struct fake *f, int i)
{
    int64_t id = 0;
    return i < f->nsent && json_get_int64(f->sent[i], "id", &id) ? id : -1;
}

static int count_method(struct fake *f, const char *method)
{
    int n = 0;
    for (int i = 0; i < f->nsent; i++)
        n += sent_method(f, i) && strcmp(sent_method(f, i), method) == 0;
    return n;
}

/* The server's side: a message to the upstream. */
static void fake_deliver(struct fake *f, const char *text)
{
    f->h->on_message(text, strlen(text), f->userdata);
}

/* The same on the answer stream of the request sent with tag (its id). */
static void fake_deliver_on(struct fake *f, uint64_t tag, const char *text)
{
    f->message_tag = tag;
    f->h->on_message(text, strlen(text), f->userdata);
    f->message_tag = 0;
}

#pragma GCC diagnostic pop
