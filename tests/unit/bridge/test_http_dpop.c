/* test_http_dpop.c - DPoP proofs on the HTTP upstream's requests (cred_sign.h, cred_dpop.h)
 * against a tiny server (http_fixture.h): each request carries a fresh proof of its method and
 * URL with the token's ath; a 401 use_dpop_nonce with a DPoP-Nonce is answered once more with a
 * proof holding that nonce, and later requests carry it from the start; a server that asks
 * again with the same nonce gets no third request (the 401 is reported); a big request in
 * pieces is sent again byte for byte. */
#include <openssl/sha.h>

#include "credkit/base64.h"
#include "credkit/dpop.h"
#include "credkit/json.h"

#include "core/rblock.h"
#include "creds/cred_sign.h"
#include "http_fixture.h"
#include "httpd.h" /* also named here: CMake links libmicrohttpd to tests that include it */

#define MAXREQ 8
#define PROOF  2048

/* what the server saw, under fx_mu */
static struct {
    int n;
    char proof[MAXREQ][PROOF];
    char auth[MAXREQ][F];
    char *body[MAXREQ]; /* a copy of each body */
    size_t len[MAXREQ];
} seen;

static void seen_release(void)
{
    for (int i = 0; i < MAXREQ; i++)
        free(seen.body[i]);
    memset(&seen, 0, sizeof(seen));
}

static enum MHD_Result fx_route(struct MHD_Connection *c, const char *url, const char *method,
                                struct upload *u)
{
    char name[F], tool[F];
    (void)u;
    if (strcmp(method, "POST") != 0)
        return httpd_reply(c, 405, NULL, "", NULL);
    parse_post(u, name, tool);
    pthread_mutex_lock(&fx_mu);
    int i = seen.n < MAXREQ ? seen.n++ : MAXREQ - 1;
    httpd_header(c, "DPoP", seen.proof[i], PROOF);
    httpd_header(c, "Authorization", seen.auth[i], F);
    free(seen.body[i]);
    seen.body[i] = malloc(u->len + 1);
    if (seen.body[i] && u->data)
        memcpy(seen.body[i], u->data, u->len);
    seen.len[i] = u->len;
    /* /nonce: a proof without the nonce is refused; /stubborn: every proof is */
    bool refuse = strcmp(url, "/stubborn") == 0 || !strstr(seen.proof[i], ".");
    if (!refuse) {
        size_t n = 0;
        const char *p = strchr(seen.proof[i], '.') + 1;
        char *claims = base64url_decode(p, strcspn(p, "."), &n);
        refuse = !claims || !strstr(claims, "\"nonce\":\"n-1\"");
        free(claims);
    }
    pthread_mutex_unlock(&fx_mu);
    if (refuse) {
        struct MHD_Response *r = MHD_create_response_from_buffer(
            strlen("{\"error\":\"use_dpop_nonce\"}"), (void *)"{\"error\":\"use_dpop_nonce\"}",
            MHD_RESPMEM_PERSISTENT);
        (void)MHD_add_response_header(r, "WWW-Authenticate", "DPoP error=\"use_dpop_nonce\"");
        (void)MHD_add_response_header(r, "DPoP-Nonce", "n-1");
        return httpd_queue(c, 401, "application/json", NULL, r);
    }
    return httpd_reply(c, 200, "application/json",
                       strcmp(name, "initialize") == 0
                           ? "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"
                           : "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}",
                       NULL);
}

struct client {
    struct loop *loop;
    struct http_conn *u;
    int answers, error;
};

static void c_message(const char *msg, size_t len, void *userdata)
{
    struct client *c = userdata;
    int id = msg_id(msg, len, NULL);
    c->answers++;
    if (id == 1) {
        const char *m = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
        CHECK_INT(http_conn_send(c->u, m, strlen(m), 0, 2, NULL), 0);
    } else {
        loop_quit(c->loop, 0);
    }
}

static void c_error(int error, uint64_t tag, void *userdata)
{
    struct client *c = userdata;
    (void)tag;
    c->error = error;
    loop_quit(c->loop, 0);
}

/* The claims of proof i, parsed. */
static struct json_object *claims(int i)
{
    const char *p = strchr(seen.proof[i], '.');
    size_t n = 0;
    char *s = p ? base64url_decode(p + 1, strcspn(p + 1, "."), &n) : NULL;
    struct json_object *o = NULL;
    if (!s || json_parse(s, n, 65536, &o, NULL) < 0)
        o = NULL;
    free(s);
    return o;
}

/* Runs initialize (and tools/list after it) against path with a DPoP token. */
static void run(const char *path, struct client *c)
{
    struct cred_sign *sign = NULL;
    struct dpop_key *key = NULL;
    struct loop_timer *t = NULL;
    struct log *log = NULL;
    char url[128];
    const char *headers[] = {"Authorization: DPoP tok.en", NULL};
    const struct http_conn_handler h = {.on_message = c_message, .on_error = c_error};

    seen_release();
    fx_url(url, sizeof(url), path);
    CHECK_INT(loop_new(&c->loop), 0);
    CHECK_INT(dpop_key_generate(&key), 0);
    CHECK_INT(cred_sign_new_bare(c->loop, log, "dpop", &sign), 0);
    CHECK(!cred_sign_wanted(sign)); /* no key yet: requests go out at once */
    CHECK_INT(cred_sign_set_dpop(sign, key, headers), 0);
    dpop_key_unref(key); /* the sign holds its own reference */
    CHECK(cred_sign_wanted(sign));
    struct http_conn_spec spec = {.url = url, .headers = headers, .timeout_ms = 5000, .sign = sign};
    CHECK_INT(http_conn_new(c->loop, &spec, &h, c, &c->u, NULL), 0);
    CHECK_INT(loop_timer_add(c->loop, 10000, fx_guard, c, &t), 0);
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}";
    CHECK_INT(http_conn_send(c->u, init, strlen(init), HTTP_CONN_INITIALIZE, 1, NULL), 0);
    CHECK_INT(loop_run(c->loop), 0);
    loop_timer_cancel(t);
    http_conn_free(c->u);
    loop_free(c->loop);
    cred_sign_free(sign);
}

static void test_nonce_retry(void)
{
    struct client c = {0};
    char url[128];
    run("/nonce", &c);
    CHECK_INT(c.error, 0);
    CHECK_INT(c.answers, 2);
    pthread_mutex_lock(&fx_mu);
    /* initialize without a nonce (refused), again with it, then tools/list with it at once */
    CHECK_INT(seen.n, 3);
    fx_url(url, sizeof(url), "/nonce");
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)"tok.en", 6, md);
    char *ath = base64url_encode(md, sizeof(md));
    const char *jti[3] = {0};
    struct json_object *o[3];
    for (int i = 0; i < 3; i++) {
        o[i] = claims(i);
        CHECK(o[i] != NULL);
        CHECK_STR(seen.auth[i], "DPoP tok.en");
        CHECK_STR(json_get_string(o[i], "htm"), "POST");
        CHECK_STR(json_get_string(o[i], "htu"), url);
        CHECK_STR(json_get_string(o[i], "ath"), ath);
        jti[i] = json_get_string(o[i], "jti");
    }
    CHECK(!json_get_string(o[0], "nonce"));
    CHECK_STR(json_get_string(o[1], "nonce"), "n-1");
    CHECK_STR(json_get_string(o[2], "nonce"), "n-1");
    CHECK(strcmp(jti[0], jti[1]) != 0 && strcmp(jti[1], jti[2]) != 0); /* each proof fresh */
    pthread_mutex_unlock(&fx_mu);
    for (int i = 0; i < 3; i++)
        json_object_put(o[i]);
    free(ath);
}

static void test_nonce_retried_once(void)
{
    struct client c = {0};
    run("/stubborn", &c);
    CHECK_INT(c.error, -EACCES);
    CHECK_INT(c.answers, 0);
    pthread_mutex_lock(&fx_mu);
    CHECK_INT(seen.n, 2); /* once more with the nonce, and no more */
    pthread_mutex_unlock(&fx_mu);
}

/* A big request in pieces (http_conn_sendv), its params lying in a read buffer the transfer
 * holds: refused with use_dpop_nonce and sent again, both times whole and byte for byte. */
static void test_nonce_retry_pieces(void)
{
    struct client c = {0};
    struct cred_sign *sign = NULL;
    struct dpop_key *key = NULL;
    struct loop_timer *t = NULL;
    char url[128];
    const char *headers[] = {"Authorization: DPoP tok.en", NULL};
    const struct http_conn_handler h = {.on_message = c_message, .on_error = c_error};
    const size_t plen = 2u * 1024u * 1024u + 3u;

    pthread_mutex_lock(&fx_mu);
    seen_release();
    pthread_mutex_unlock(&fx_mu);
    fx_url(url, sizeof(url), "/nonce");
    CHECK_INT(loop_new(&c.loop), 0);
    CHECK_INT(dpop_key_generate(&key), 0);
    CHECK_INT(cred_sign_new_bare(c.loop, NULL, "dpop", &sign), 0);
    CHECK_INT(cred_sign_set_dpop(sign, key, headers), 0);
    dpop_key_unref(key);
    CHECK(!cred_sign_reads_body(sign)); /* a proof alone: the pieces are not copied */
    struct http_conn_spec spec = {
        .url = url, .headers = headers, .timeout_ms = 10000, .sign = sign};
    CHECK_INT(http_conn_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 20000, fx_guard, &c, &t), 0);

    struct rblock *b = rblock_new(plen);
    CHECK(b != NULL);
    if (!b)
        exit(2);
    const char phead[] = "{\"name\":\"echo\",\"arguments\":{\"x\":\"";
    memcpy(b->data, phead, sizeof(phead) - 1);
    for (size_t i = sizeof(phead) - 1; i < plen - 3; i++)
        b->data[i] = (char)('A' + i % 26);
    memcpy(b->data + plen - 3, "\"}}", 3);
    char head[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":";
    struct iovec iov[3] = {{.iov_base = head, .iov_len = strlen(head)},
                           {.iov_base = b->data, .iov_len = plen},
                           {.iov_base = (void *)"}", .iov_len = 1}};
    size_t want_len = strlen(head) + plen + 1;
    char *want = malloc(want_len);
    CHECK(want != NULL);
    if (!want)
        exit(2);
    memcpy(want, head, strlen(head));
    memcpy(want + strlen(head), b->data, plen);
    want[want_len - 1] = '}';
    CHECK_INT(http_conn_sendv(c.u, iov, 3, b, 0, 2, NULL), 0);
    rblock_put(b, false); /* the transfer holds its own reference */
    memset(head, '#', strlen(head));
    CHECK_INT(loop_run(c.loop), 0);
    CHECK_INT(c.error, 0);
    CHECK_INT(c.answers, 1);

    pthread_mutex_lock(&fx_mu);
    CHECK_INT(seen.n, 2); /* refused without the nonce, then with it */
    for (int i = 0; i < 2; i++) {
        CHECK_INT(seen.len[i], want_len);
        CHECK(seen.body[i] && memcmp(seen.body[i], want, want_len) == 0);
    }
    seen_release();
    pthread_mutex_unlock(&fx_mu);
    free(want);
    loop_timer_cancel(t);
    http_conn_free(c.u);
    loop_free(c.loop);
    cred_sign_free(sign);
}

TESTS_MAIN(test_nonce_retry, test_nonce_retried_once, test_nonce_retry_pieces)
