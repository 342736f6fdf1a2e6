/* http_pool.c - what an HTTP upstream keeps across its transfers (see http_int.h).
 *
 * A transfer takes an idle easy handle of its upstream when it goes to the upstream's URL (the
 * options that never change, the proxy, CAs and client certificate among them, are then set
 * already) and gives it back when it is over; the plain POST's header list is built once and
 * shared by reference, so that a list a running transfer sends outlives a change of headers;
 * the answer buffer of the last transfer is kept, emptied, for the next one unless it grew
 * large, and so is the last freed transfer with its message buffer. docs/development.md, "The HTTP path's reuse rules". */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/secmem.h"

#include "transport/http_int.h"

void http_slist_free_wipe(struct curl_slist *l)
{
    for (struct curl_slist *s = l; s; s = s->next)
        secure_wipe(s->data, strlen(s->data));
    curl_slist_free_all(l);
}

void http_hdrs_unref(struct http_hdrs *h)
{
    if (!h || --h->refs > 0)
        return;
    http_slist_free_wipe(h->list);
    free(h);
}

void http_hdrs_changed(struct http_conn *u)
{
    http_hdrs_unref(u->post_hdrs);
    u->post_hdrs = NULL;
    http_hdrs_unref(u->modern_hdrs);
    u->modern_hdrs = NULL;
}

CURL *http_easy_take(struct http_conn *u, const char *url, bool *ret_ready)
{
    bool at_url = url == u->url;
    if (at_url && u->n_pool > 0) {
        *ret_ready = true;
        return u->pool[--u->n_pool];
    }
    *ret_ready = false;
    CURL *c = curl_easy_init();
    if (c)
        u->easy_inits++;
    return c;
}

void http_easy_give_back(struct http_req *r)
{
    CURL *c = r->easy;
    struct http_conn *u = r->u;
    char *priv = NULL;

    if (!c)
        return;
    r->easy = NULL;
    loop_curl_remove(r->loop, c); /* a no-op when it is not running */
    /* still on the multi handle (refused from inside libcurl's callbacks), or for another URL,
     * or nobody to keep it: freed as before */
    (void)curl_easy_getinfo(c, CURLINFO_PRIVATE, &priv);
    if (priv || !r->easy_at_url || !u || u->state == HTTP_DEAD || u->n_pool >= HTTP_POOL_MAX) {
        curl_easy_cleanup(c);
        return;
    }
    /* nothing of this transfer's stays pointed at: its memory goes before the next use */
    CURLcode cc = CURLE_OK;
    HTTP_SETOPT(cc, c, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
    HTTP_SETOPT(cc, c, CURLOPT_ERRORBUFFER, (char *)NULL);
    HTTP_SETOPT(cc, c, CURLOPT_WRITEDATA, (void *)NULL);
    HTTP_SETOPT(cc, c, CURLOPT_HEADERDATA, (void *)NULL);
    HTTP_SETOPT(cc, c, CURLOPT_POSTFIELDS, (char *)NULL);
    if (cc != CURLE_OK) {
        curl_easy_cleanup(c);
        return;
    }
    u->pool[u->n_pool++] = c;
}

void http_spare_give_back(struct http_req *r)
{
    struct http_conn *u = r->u;
    if (!u || u->state == HTTP_DEAD || u->spare.data || !r->json.data ||
        r->json.cap > HTTP_SPARE_MAX) {
        buf_release(&r->json);
        return;
    }
    buf_reset(&r->json);
    u->spare = r->json;
    buf_init(&r->json, u->max_message);
}

void http_pool_release(struct http_conn *u)
{
    while (u->n_pool > 0)
        curl_easy_cleanup(u->pool[--u->n_pool]);
    http_hdrs_changed(u);
    buf_release(&u->spare);
    if (u->spare_req) {
        sse_parser_release(&u->spare_req->sse);
        free(u->spare_req->msg);
        free(u->spare_req);
        u->spare_req = NULL;
    }
}

struct http_req *http_req_take(struct http_conn *u, bool *ret_sse_ready)
{
    struct http_req *r = u->spare_req;
    *ret_sse_ready = r != NULL;
    if (!r)
        return calloc(1, sizeof(*r));
    u->spare_req = NULL;
    char *msg = r->msg;
    size_t cap = r->msg_cap;
    struct sse_parser sse = r->sse;
    memset(r, 0, sizeof(*r));
    r->msg = msg;
    r->msg_cap = cap;
    r->sse = sse;
    return r;
}

bool http_req_give_back(struct http_conn *u, struct http_req *r)
{
    if (!u || u->state == HTTP_DEAD || u->spare_req || r->msg_cap > HTTP_SPARE_MAX)
        return false;
    u->spare_req = r;
    return true;
}

int http_req_msg_reserve(struct http_req *r, size_t len)
{
    if (len < SIZE_MAX && r->msg_cap > len)
        return 0;
    if (len == SIZE_MAX)
        return -ENOMEM;
    /* nothing in it to keep: a new buffer rather than realloc's copy */
    char *m = malloc(len + 1);
    if (!m)
        return -ENOMEM;
    free(r->msg);
    r->msg = m;
    r->msg_cap = len + 1;
    return 0;
}

void http_spare_take(struct http_conn *u, struct buf *ret)
{
    buf_init(ret, u->max_message);
    if (!u->spare.data)
        return;
    *ret = u->spare; /* the last answer's storage, empty */
    buf_init(&u->spare, u->max_message);
}
