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
    bool reads = r->easy_reads;
    r->easy = NULL;
    r->easy_reads = false;
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
    if (reads) { /* only then: two more calls into libcurl for every small request */
        HTTP_SETOPT(cc, c, CURLOPT_READDATA, (void *)NULL);
        HTTP_SETOPT(cc, c, CURLOPT_SEEKDATA, (void *)NULL);
    }
    if (cc != CURLE_OK) {
        curl_easy_cleanup(c);
        return;
    }
    u->pool[u->n_pool++] = c;
}

void http_spare_give_back(struct http_req *r)
{
    struct http_conn *u = r->u;
    struct rblock *b = r->ans;
    bool alive = u && u->state != HTTP_DEAD;

    r->ans = NULL;
    r->ans_len = 0;
    if (!b)
        return;
    if (alive && !u->spare && b->refs == 1 && b->cap <= HTTP_SPARE_MAX) {
        u->spare = b;
        return;
    }
    /* a big one is kept while big messages follow each other: the agent's next request, or
     * the next answer, is read into its pages (the framing gives it back after a small line) */
    rblock_put(b, alive);
}

/* An answer buffer of at least cap bytes (r's first): u's spare is taken at r's start. */
static struct rblock *ans_new(size_t cap)
{
    struct rblock *b = cap > RBLOCK_MAP ? rblock_spare_take(cap) : NULL;
    return b ? b : rblock_new(cap);
}

int http_ans_reserve(struct http_req *r, size_t len, size_t want)
{
    size_t max = r->u->max_message;
    struct rblock *b = r->ans;

    if (len > max || r->ans_len > max - len)
        return -E2BIG;
    size_t need = r->ans_len + len + 1;
    if (b && b->cap >= need)
        return 0;
    size_t cap = b ? b->cap : HTTP_ANS_MIN;
    if (!b && want >= need && want <= max)
        cap = want + 1; /* Content-Length: one buffer of the right size, never grown */
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > max + 1)
        cap = max + 1; /* need <= max + 1 */
    if (!b || (cap > RBLOCK_MAP && !b->mapped)) {
        /* the first buffer, or a small one outgrown: a big one is the spare's or a mapping */
        struct rblock *n = ans_new(cap);
        if (!n)
            return -ENOMEM;
        if (b) {
            memcpy(n->data, b->data, r->ans_len);
            rblock_put(b, false);
        }
        r->ans = n;
        return 0;
    }
    /* read into by no one else: a writer holds an answer only once it is delivered */
    return rblock_grow(&r->ans, cap, r->ans_len);
}

void http_ans_reset(struct http_req *r)
{
    if (r->ans && r->ans->refs > 1) { /* delivered, and held by a writer: never written over */
        rblock_put(r->ans, true);
        r->ans = NULL;
    }
    r->ans_len = 0;
}

void http_pool_release(struct http_conn *u)
{
    while (u->n_pool > 0)
        curl_easy_cleanup(u->pool[--u->n_pool]);
    http_hdrs_changed(u);
    rblock_put(u->spare, false);
    u->spare = NULL;
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

void http_spare_take(struct http_req *r)
{
    r->ans = r->u->spare; /* the last answer's storage, empty (or NULL) */
    r->ans_len = 0;
    r->u->spare = NULL;
}
