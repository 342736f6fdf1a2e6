/* test_http.c - http_do against a real HTTP server (libmicrohttpd on 127.0.0.1, port 0) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <microhttpd.h>

#include "credkit/http.h"
#include "credkit/version.h"

#include "httpd.h"
#include "tests.h"

#define BIG_SIZE (2u * 1024u * 1024u)

struct server {
    struct MHD_Daemon *daemon;
    unsigned port;
    atomic_int requests;
    atomic_bool stopping;
};

/* the server everything is asked of, and a second one a cross-origin redirect points to */
static struct server main_srv, other_srv;
static char *big_body;

struct upload {
    char *data;
    size_t len;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status,
                             struct MHD_Response *resp)
{
    if (!resp)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result redirect(struct MHD_Connection *conn, unsigned status, const char *to)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    (void)MHD_add_response_header(r, "Location", to);
    return queue(conn, status, r);
}

static enum MHD_Result text(struct MHD_Connection *conn, unsigned status, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    return queue(conn, status, r);
}

static void add_str(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, v ? json_object_new_string(v) : NULL);
}

static enum MHD_Result echo(struct MHD_Connection *conn, const char *method, const struct upload *u)
{
    json_object *o = json_object_new_object();
    char *body = strndup(u->data ? u->data : "", u->len);
    add_str(o, "method", method);
    add_str(o, "body", body);
    add_str(o, "x_test", MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Test"));
    add_str(o, "content_type", MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type"));
    add_str(o, "user_agent", MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "User-Agent"));
    add_str(o, "from", MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "from"));
    free(body);
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(s), (void *)s, MHD_RESPMEM_MUST_COPY);
    json_object_put(o);
    if (r)
        (void)MHD_add_response_header(r, "Content-Type", "Application/JSON; charset=utf-8");
    return queue(conn, 200, r);
}

/* 2 MiB in pieces and without a Content-Length: only the write callback can stop it */
static ssize_t chunked_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    if (pos >= BIG_SIZE)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = BIG_SIZE - pos < max ? (size_t)(BIG_SIZE - pos) : max;
    if (n > 4096)
        n = 4096;
    memset(buf, 'c', n);
    return (ssize_t)n;
}

static enum MHD_Result route(struct server *s, struct MHD_Connection *conn, const char *url,
                             const char *method, const struct upload *u)
{
    char to[256];
    struct MHD_Response *r;

    if (strcmp(url, "/echo") == 0)
        return echo(conn, method, u);
    if (strcmp(url, "/401") == 0) {
        r = MHD_create_response_from_buffer(2, (void *)"no", MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        snprintf(to, sizeof(to), "Bearer resource_metadata=\"http://127.0.0.1:%u/.well-known/x\"",
                 s->port);
        (void)MHD_add_response_header(r, "WWW-Authenticate", to);
        (void)MHD_add_response_header(r, "Www-Authenticate", "Basic realm=\"second\"");
        return queue(conn, 401, r);
    }
    if (strcmp(url, "/big") == 0) {
        r = MHD_create_response_from_buffer(BIG_SIZE, big_body, MHD_RESPMEM_PERSISTENT);
        return queue(conn, 200, r);
    }
    if (strcmp(url, "/big-chunked") == 0) {
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, chunked_reader, NULL, NULL);
        return queue(conn, 200, r);
    }
    if (strcmp(url, "/many-headers") == 0) {
        r = MHD_create_response_from_buffer(2, (void *)"ok", MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        for (int i = 0; i < 150; i++) {
            char name[32];
            snprintf(name, sizeof(name), "X-H-%d", i);
            (void)MHD_add_response_header(r, name, "v");
        }
        return queue(conn, 200, r);
    }
    if (strcmp(url, "/long-header") == 0) {
        static char v[10000];
        memset(v, 'v', sizeof(v) - 1);
        r = MHD_create_response_from_buffer(2, (void *)"ok", MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        (void)MHD_add_response_header(r, "X-Long", v);
        return queue(conn, 200, r);
    }
    if (strcmp(url, "/r/1") == 0)
        return redirect(conn, 302, "/r/2");
    if (strcmp(url, "/r/2") == 0) {
        snprintf(to, sizeof(to), "http://127.0.0.1:%u/r/3", s->port);
        return redirect(conn, 301, to);
    }
    if (strcmp(url, "/r/3") == 0)
        return redirect(conn, 307, "../echo?from=r3");
    if (strcmp(url, "/loop") == 0)
        return redirect(conn, 302, "/loop");
    if (strcmp(url, "/cross") == 0) {
        snprintf(to, sizeof(to), "http://127.0.0.1:%u/echo?code=SECRETCODE", other_srv.port);
        return redirect(conn, 302, to);
    }
    if (strcmp(url, "/to-ftp") == 0)
        return redirect(conn, 302, "ftp://127.0.0.1/x");
    if (strcmp(url, "/see-other") == 0)
        return redirect(conn, 303, "/echo?from=303");
    if (strcmp(url, "/found") == 0)
        return redirect(conn, 302, "/echo?from=302");
    if (strcmp(url, "/temporary") == 0)
        return redirect(conn, 307, "/echo?from=307");
    if (strcmp(url, "/not-modified") == 0)
        return text(conn, 304, "");
    if (strcmp(url, "/slow") == 0) {
        /* never answers within the client's timeout; gives up early when the test ends */
        for (int i = 0; i < 60 && !atomic_load(&s->stopping); i++)
            usleep(50 * 1000);
        return text(conn, 200, "late");
    }
    if (strcmp(url, "/empty") == 0)
        return text(conn, 204, "");
    return text(conn, 404, "not found");
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    struct server *s = cls;
    struct upload *u = *con_cls;

    if (!u) {
        u = calloc(1, sizeof(*u));
        if (!u)
            return MHD_NO;
        *con_cls = u;
        return MHD_YES;
    }
    if (*upload_data_size) {
        char *n = realloc(u->data, u->len + *upload_data_size);
        if (!n)
            return MHD_NO;
        memcpy(n + u->len, upload_data, *upload_data_size);
        u->data = n;
        u->len += *upload_data_size;
        *upload_data_size = 0;
        return MHD_YES;
    }
    atomic_fetch_add(&s->requests, 1);
    return route(s, conn, url, method, u);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct upload *u = *con_cls;
    if (u) {
        free(u->data);
        free(u);
        *con_cls = NULL;
    }
}

static void server_start(struct server *s)
{
    atomic_store(&s->requests, 0);
    atomic_store(&s->stopping, false);
    s->daemon = httpd_start(handler, s, completed, 256 * 1024, &s->port);
}

static void server_stop(struct server *s)
{
    atomic_store(&s->stopping, true);
    MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}

static void url_of(char *out, size_t n, const char *path)
{
    snprintf(out, n, "http://127.0.0.1:%u%s", main_srv.port, path);
}

/* The parsed JSON field of an /echo body, or NULL. */
static const char *field(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, k, &v) || !v)
        return NULL;
    return json_object_get_string(v);
}

static void test_setup(void)
{
    /* a proxy from the environment would stand between us and the test server */
    const char *proxies[] = {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                             "all_proxy",  "ALL_PROXY",   "no_proxy",   "NO_PROXY"};
    for (size_t i = 0; i < ELEMENTSOF(proxies); i++)
        unsetenv(proxies[i]);
    big_body = malloc(BIG_SIZE);
    CHECK(big_body != NULL);
    if (!big_body)
        exit(2);
    memset(big_body, 'b', BIG_SIZE);
    server_start(&main_srv);
    server_start(&other_srv);
    CHECK(main_srv.port != other_srv.port);
}

static void test_echo_post(void)
{
    char url[128];
    url_of(url, sizeof(url), "/echo");
    const char *headers[] = {"X-Test: hello there", "Authorization: Bearer t0k3n", NULL};
    struct http_request req = {
        .method = "POST",
        .url = url,
        .headers = headers,
        .body = "{\"a\":1}",
        .body_len = 7,
        .content_type = "application/json",
    };
    struct http_response resp;
    struct err e = ERR_INIT;

    CHECK_INT(http_do(&req, &resp, &e), 0);
    CHECK_INT(resp.status, 200);
    CHECK_STR(resp.media_type, "application/json");
    CHECK_STR(http_response_header(&resp, "CONTENT-TYPE"), "Application/JSON; charset=utf-8");
    CHECK_STR(http_response_header(&resp, "content-type"), "Application/JSON; charset=utf-8");
    CHECK(http_response_header(&resp, "content-typ") == NULL);
    CHECK(http_response_header(&resp, "x-absent") == NULL);
    CHECK_STR(resp.effective_url, url);
    CHECK(!resp.body.secret);
    CHECK(resp.body.data && resp.body.data[resp.body.len] == 0);
    /* names are lowercase, "name: value" */
    bool found = false;
    for (size_t i = 0; resp.headers && resp.headers[i]; i++)
        if (strcmp(resp.headers[i], "content-type: Application/JSON; charset=utf-8") == 0)
            found = true;
    CHECK(found);

    json_object *o = json_tokener_parse(resp.body.data);
    CHECK(o != NULL);
    CHECK_STR(field(o, "method"), "POST");
    CHECK_STR(field(o, "body"), "{\"a\":1}");
    CHECK_STR(field(o, "x_test"), "hello there");
    CHECK_STR(field(o, "content_type"), "application/json");
    CHECK_CONTAINS(field(o, "user_agent"), "credkit/" PROJECT_VERSION_STR);
    json_object_put(o);
    http_response_release(&resp);
    CHECK(resp.headers == NULL && resp.body.data == NULL);
    http_response_release(&resp); /* twice is harmless */
}

static void test_methods(void)
{
    char url[128];
    url_of(url, sizeof(url), "/echo");
    struct err e = ERR_INIT;
    struct http_response resp;
    json_object *o;

    /* GET by default */
    struct http_request get = {.url = url};
    CHECK_INT(http_do(&get, &resp, &e), 0);
    o = json_tokener_parse(resp.body.data);
    CHECK_STR(field(o, "method"), "GET");
    CHECK_STR(field(o, "body"), "");
    CHECK(field(o, "content_type") == NULL);
    json_object_put(o);
    http_response_release(&resp);

    /* DELETE without a body */
    struct http_request del = {.method = "DELETE", .url = url, .content_type = "text/plain"};
    CHECK_INT(http_do(&del, &resp, &e), 0);
    o = json_tokener_parse(resp.body.data);
    CHECK_STR(field(o, "method"), "DELETE");
    CHECK_STR(field(o, "body"), "");
    CHECK(field(o, "content_type") == NULL); /* only with a body */
    json_object_put(o);
    http_response_release(&resp);

    /* a body with NULs: body_len is the truth */
    struct http_request bin = {.method = "POST",
                               .url = url,
                               .body = "a\0b",
                               .body_len = 3,
                               .content_type = "application/octet-stream"};
    CHECK_INT(http_do(&bin, &resp, &e), 0);
    CHECK_INT(resp.status, 200);
    http_response_release(&resp);

    /* an empty response body is still a NUL-terminated string */
    char empty[128];
    url_of(empty, sizeof(empty), "/empty");
    struct http_request em = {.url = empty};
    CHECK_INT(http_do(&em, &resp, &e), 0);
    CHECK_INT(resp.status, 204);
    CHECK(resp.body.data != NULL);
    CHECK_INT(resp.body.len, 0);
    CHECK(resp.media_type == NULL);
    http_response_release(&resp);

    /* a 404 is a response, not an error */
    char nf[128];
    url_of(nf, sizeof(nf), "/nope");
    struct http_request r404 = {.url = nf};
    CHECK_INT(http_do(&r404, &resp, &e), 0);
    CHECK_INT(resp.status, 404);
    CHECK_STR(resp.body.data, "not found");
    http_response_release(&resp);
}

struct collected {
    char values[4][256];
    int n;
};

static void collect(const char *value, void *userdata)
{
    struct collected *c = userdata;
    if (c->n < 4)
        snprintf(c->values[c->n], sizeof(c->values[0]), "%s", value);
    c->n++;
}

static void test_www_authenticate(void)
{
    char url[128], expect[256];
    url_of(url, sizeof(url), "/401");
    struct http_request req = {.url = url};
    struct http_response resp;
    struct err e = ERR_INIT;

    CHECK_INT(http_do(&req, &resp, &e), 0);
    CHECK_INT(resp.status, 401);
    /* a header that repeats: every value is in resp.headers, in order, the name lowercase
     * (the discovery probe reads them so) */
    struct collected c = {.n = 0};
    for (char **h = resp.headers; h && *h; h++)
        if (strncmp(*h, "www-authenticate: ", 18) == 0)
            collect(*h + 18, &c);
    CHECK_INT(c.n, 2);
    snprintf(expect, sizeof(expect),
             "Bearer resource_metadata=\"http://127.0.0.1:%u/.well-known/x\"", main_srv.port);
    CHECK_STR(c.values[0], expect);
    CHECK_STR(c.values[1], "Basic realm=\"second\"");
    CHECK_STR(http_response_header(&resp, "www-authenticate"), expect);
    CHECK(http_response_header(&resp, "WWW-Authenticat") == NULL);
    http_response_release(&resp);
}

static void test_limits(void)
{
    char url[128];
    struct http_response resp = {.status = -7};
    struct err e = ERR_INIT;

    /* Content-Length says 2 MiB, the cap is 1 MiB (the default) */
    url_of(url, sizeof(url), "/big");
    struct http_request big = {.url = url};
    CHECK_INT(http_do(&big, &resp, &e), -E2BIG);
    CHECK_CONTAINS(e.msg, url);
    CHECK_INT(resp.status, -7); /* untouched on failure */

    /* the same without a Content-Length: the write callback stops it */
    err_clear(&e);
    url_of(url, sizeof(url), "/big-chunked");
    struct http_request chunked = {.url = url, .max_body = 1024 * 1024};
    CHECK_INT(http_do(&chunked, &resp, &e), -E2BIG);
    CHECK_CONTAINS(e.msg, "1048576");
    CHECK_INT(resp.status, -7);

    /* a cap larger than the body lets it through, byte for byte */
    url_of(url, sizeof(url), "/big");
    struct http_request bigger = {.url = url, .max_body = 3 * 1024 * 1024};
    CHECK_INT(http_do(&bigger, &resp, &e), 0);
    CHECK_INT(resp.body.len, BIG_SIZE);
    CHECK(resp.body.data && memcmp(resp.body.data, big_body, BIG_SIZE) == 0);
    http_response_release(&resp);
    resp.status = -7;

    /* a small cap on a small body */
    url_of(url, sizeof(url), "/echo");
    struct http_request small = {.url = url, .max_body = 10};
    CHECK_INT(http_do(&small, &resp, &e), -E2BIG);

    /* headers are bounded too */
    err_clear(&e);
    url_of(url, sizeof(url), "/many-headers");
    struct http_request many = {.url = url};
    CHECK_INT(http_do(&many, &resp, &e), -E2BIG);
    CHECK_CONTAINS(e.msg, "header");
    url_of(url, sizeof(url), "/long-header");
    struct http_request longh = {.url = url};
    CHECK_INT(http_do(&longh, &resp, &e), -E2BIG);
    CHECK_INT(resp.status, -7);
}

static void test_redirects(void)
{
    char url[128], expect[128];
    struct http_response resp;
    struct err e = ERR_INIT;
    json_object *o;

    /* not followed unless asked */
    url_of(url, sizeof(url), "/r/1");
    struct http_request plain = {.url = url};
    CHECK_INT(http_do(&plain, &resp, &e), 0);
    CHECK_INT(resp.status, 302);
    CHECK_STR(http_response_header(&resp, "Location"), "/r/2");
    CHECK_STR(resp.effective_url, url);
    http_response_release(&resp);

    /* 302 -> 301 (absolute) -> 307 (relative "../") -> 200, all on one origin */
    struct http_request follow = {.url = url, .follow_redirects = true};
    CHECK_INT(http_do(&follow, &resp, &e), 0);
    CHECK_INT(resp.status, 200);
    url_of(expect, sizeof(expect), "/echo?from=r3");
    CHECK_STR(resp.effective_url, expect);
    o = json_tokener_parse(resp.body.data);
    CHECK_STR(field(o, "from"), "r3");
    json_object_put(o);
    http_response_release(&resp);

    /* 303 after a POST: GET, no body, no Content-Type */
    url_of(url, sizeof(url), "/see-other");
    struct http_request see = {.method = "POST",
                               .url = url,
                               .body = "grant=1",
                               .body_len = 7,
                               .content_type = "application/x-www-form-urlencoded",
                               .follow_redirects = true};
    CHECK_INT(http_do(&see, &resp, &e), 0);
    CHECK_INT(resp.status, 200);
    o = json_tokener_parse(resp.body.data);
    CHECK_STR(field(o, "method"), "GET");
    CHECK_STR(field(o, "body"), "");
    CHECK(field(o, "content_type") == NULL);
    CHECK_STR(field(o, "from"), "303");
    json_object_put(o);
    http_response_release(&resp);

    /* 302 after a POST: GET as well */
    url_of(url, sizeof(url), "/found");
    see.url = url;
    CHECK_INT(http_do(&see, &resp, &e), 0);
    o = json_tokener_parse(resp.body.data);
    CHECK_STR(field(o, "method"), "GET");
    CHECK_STR(field(o, "from"), "302");
    json_object_put(o);
    http_response_release(&resp);

    /* 307 keeps the method and the body */
    url_of(url, sizeof(url), "/temporary");
    see.url = url;
    CHECK_INT(http_do(&see, &resp, &e), 0);
    o = json_tokener_parse(resp.body.data);
    CHECK_STR(field(o, "method"), "POST");
    CHECK_STR(field(o, "body"), "grant=1");
    CHECK_STR(field(o, "content_type"), "application/x-www-form-urlencoded");
    CHECK_STR(field(o, "from"), "307");
    json_object_put(o);
    http_response_release(&resp);

    /* a 3xx without Location is an answer */
    url_of(url, sizeof(url), "/not-modified");
    struct http_request nm = {.url = url, .follow_redirects = true};
    CHECK_INT(http_do(&nm, &resp, &e), 0);
    CHECK_INT(resp.status, 304);
    http_response_release(&resp);

    /* a loop ends */
    resp.status = -7;
    url_of(url, sizeof(url), "/loop");
    struct http_request loop = {.url = url, .follow_redirects = true};
    CHECK_INT(http_do(&loop, &resp, &e), -ELOOP);
    CHECK_CONTAINS(e.msg, url);
    CHECK_INT(resp.status, -7);
}

static void test_cross_origin_redirect(void)
{
    char url[128], other[512];
    struct http_response resp = {.status = -7};
    struct err e = ERR_INIT;
    const char *headers[] = {"Authorization: Bearer must-not-leak", NULL};

    url_of(url, sizeof(url), "/cross");
    struct http_request req = {.url = url, .headers = headers, .follow_redirects = true};
    CHECK_INT(http_do(&req, &resp, &e), -EXDEV);
    snprintf(other, sizeof(other),
             "'%s' redirected to another origin ('http://127.0.0.1:%u'): "
             "refused",
             url, other_srv.port);
    CHECK_STR(e.msg, other);
    CHECK(!strstr(e.msg, "SECRETCODE")); /* the Location's query is not quoted */
    CHECK(!strstr(e.msg, "must-not-leak"));
    CHECK_INT(resp.status, -7);
    CHECK_INT(atomic_load(&other_srv.requests), 0);

    /* to another scheme: refused too */
    url_of(url, sizeof(url), "/to-ftp");
    req.url = url;
    CHECK_INT(http_do(&req, &resp, &e), -EXDEV);
    CHECK_INT(resp.status, -7);

    /* the other server does answer: it was the policy that kept us away */
    snprintf(other, sizeof(other), "http://127.0.0.1:%u/echo", other_srv.port);
    struct http_request direct = {.url = other};
    CHECK_INT(http_do(&direct, &resp, &e), 0);
    CHECK_INT(resp.status, 200);
    http_response_release(&resp);
    CHECK_INT(atomic_load(&other_srv.requests), 1);
}

static void test_timeout(void)
{
    char url[128];
    struct http_response resp = {.status = -7};
    struct err e = ERR_INIT;

    url_of(url, sizeof(url), "/slow");
    struct http_request req = {.url = url, .timeout_ms = 300};
    int64_t t0 = now_ms();
    CHECK_INT(http_do(&req, &resp, &e), -ETIMEDOUT);
    int64_t took = now_ms() - t0;
    CHECK(took >= 250);
    CHECK(took < 2000);
    CHECK_CONTAINS(e.msg, url);
    CHECK_CONTAINS(e.msg, "did not answer within 300ms");
    CHECK_INT(resp.status, -7);
}

static void test_connection_errors(void)
{
    struct http_response resp = {.status = -7};
    struct err e = ERR_INIT;
    char url[128];

    /* a bound socket that does not listen: connect() is refused, and no one can take the port */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    CHECK(fd >= 0);
    CHECK_INT(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    CHECK_INT(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/x", ntohs(sa.sin_port));
    struct http_request req = {.url = url, .timeout_ms = 5000};
    CHECK_INT(http_do(&req, &resp, &e), -ECONNREFUSED);
    char expect[256];
    snprintf(expect, sizeof(expect), "cannot reach '%s': connection refused", url);
    CHECK_CONTAINS(e.msg, expect);
    close(fd);

    err_clear(&e);
    struct http_request nx = {.url = "http://nonexistent.invalid/", .timeout_ms = 10000};
    CHECK_INT(http_do(&nx, &resp, &e), -EHOSTUNREACH);
    CHECK_CONTAINS(e.msg, "'http://nonexistent.invalid/'");
    CHECK_INT(resp.status, -7);
}

static void test_bad_requests(void)
{
    struct http_response resp = {.status = -7};
    struct err e = ERR_INIT;
    char url[128];
    url_of(url, sizeof(url), "/echo");
    int before = atomic_load(&main_srv.requests);

    struct http_request nourl = {.url = NULL};
    CHECK_INT(http_do(&nourl, &resp, &e), -EINVAL);
    struct http_request ftp = {.url = "ftp://127.0.0.1/x"};
    CHECK_INT(http_do(&ftp, &resp, &e), -EINVAL);
    struct http_request rel = {.url = "/echo"};
    CHECK_INT(http_do(&rel, &resp, &e), -EINVAL);

    const char *inject[] = {"X-Test: a\r\nX-Evil: b", NULL};
    struct http_request inj = {.url = url, .headers = inject};
    err_clear(&e);
    CHECK_INT(http_do(&inj, &resp, &e), -EINVAL);
    CHECK(!strstr(e.msg, "X-Evil")); /* values are not quoted */
    const char *nocolon[] = {"Authorization Bearer x", NULL};
    struct http_request nc = {.url = url, .headers = nocolon};
    CHECK_INT(http_do(&nc, &resp, &e), -EINVAL);
    CHECK(!strstr(e.msg, "Bearer"));
    struct http_request badm = {.method = "GET /x HTTP/1.1\r\n", .url = url};
    CHECK_INT(http_do(&badm, &resp, &e), -EINVAL);
    struct http_request ct = {
        .url = url, .body = "x", .body_len = 1, .content_type = "text/plain\r\nX-Evil: 1"};
    CHECK_INT(http_do(&ct, &resp, &e), -EINVAL);

    CHECK_INT(resp.status, -7);
    CHECK_INT(atomic_load(&main_srv.requests), before); /* nothing was sent */
}

static void test_secret_body(void)
{
    char url[128];
    url_of(url, sizeof(url), "/echo");
    struct http_request req = {.method = "POST",
                               .url = url,
                               .body = "access_token=abc",
                               .body_len = 16,
                               .secret_body = true};
    struct http_response resp;
    struct err e = ERR_INIT;

    CHECK_INT(http_do(&req, &resp, &e), 0);
    CHECK(resp.body.secret);
    CHECK_CONTAINS(resp.body.data, "access_token=abc");
    http_response_release(&resp);

    req.secret_body = false;
    CHECK_INT(http_do(&req, &resp, &e), 0);
    CHECK(!resp.body.secret);
    http_response_release(&resp);
}

static const char *const proxy_vars[] = {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY",
                                         "all_proxy",   "ALL_PROXY",   "no_proxy",   "NO_PROXY"};

static void proxy_env_clear(void)
{
    for (size_t i = 0; i < sizeof(proxy_vars) / sizeof(proxy_vars[0]); i++)
        (void)unsetenv(proxy_vars[i]);
}

/* The proxy http_proxy_for() picks for url ("" for none), and the variable it came from. */
static void check_proxy(const char *url, const char *want, const char *want_var)
{
    char *p = NULL;
    const char *var = NULL;
    CHECK_INT(http_proxy_for(url, &p, &var), 0);
    CHECK_STR(p ? p : "", want);
    CHECK_STR(var ? var : "", want_var);
    free(p);
}

static void test_proxy_choice(void)
{
    proxy_env_clear();
    check_proxy("https://mcp.example.com/mcp", "", "");

    CHECK_INT(setenv("HTTPS_PROXY", "http://proxy.corp:3128", 1), 0);
    CHECK_INT(setenv("HTTP_PROXY", "http://plain.corp:80", 1), 0);
    check_proxy("https://mcp.example.com/mcp", "http://proxy.corp:3128", "HTTPS_PROXY");
    check_proxy("http://mcp.example.com/mcp", "http://plain.corp:80", "HTTP_PROXY");
    CHECK_INT(setenv("https_proxy", "http://lower.corp:1", 1), 0); /* curl's order */
    check_proxy("https://mcp.example.com/mcp", "http://lower.corp:1", "https_proxy");
    /* loopback is never proxied: a proxy elsewhere cannot reach it, and plain http to it
     * carries credentials only because it stays on the machine */
    check_proxy("http://127.0.0.1:8080/mcp", "", "");
    check_proxy("https://localhost/mcp", "", "");
    check_proxy("https://[::1]:8443/mcp", "", "");

    proxy_env_clear();
    CHECK_INT(setenv("ALL_PROXY", "socks5://s.corp:1080", 1), 0);
    check_proxy("https://mcp.example.com/mcp", "socks5://s.corp:1080", "ALL_PROXY");
    CHECK_INT(setenv("NO_PROXY", "example.com, .internal,10.0.0.0/8 ,[2001:db8::1]", 1), 0);
    check_proxy("https://mcp.example.com/mcp", "", ""); /* a subdomain */
    check_proxy("https://EXAMPLE.com/mcp", "", "");     /* the domain, any case */
    check_proxy("https://notexample.com/mcp", "socks5://s.corp:1080", "ALL_PROXY");
    check_proxy("https://a.b.internal/mcp", "", ""); /* a leading dot */
    check_proxy("https://10.20.30.40/mcp", "", "");  /* in the CIDR block */
    check_proxy("https://11.0.0.1/mcp", "socks5://s.corp:1080", "ALL_PROXY");
    check_proxy("https://[2001:db8::1]/mcp", "", ""); /* an IPv6 address */
    check_proxy("https://[2001:db8::2]/mcp", "socks5://s.corp:1080", "ALL_PROXY");
    CHECK_INT(setenv("no_proxy", "*", 1), 0);
    check_proxy("https://anything.example.org/mcp", "", "");

    /* the password of a proxy is never shown */
    char *d = http_proxy_display("http://user:s3cret@proxy.corp:3128");
    CHECK(d && !strstr(d, "s3cret") && !strstr(d, "user"));
    CHECK_CONTAINS(d, "proxy.corp:3128");
    free(d);
    d = http_proxy_display("user:s3cret@proxy.corp:3128");
    CHECK(d && !strstr(d, "s3cret"));
    free(d);
    proxy_env_clear();
}

static void test_teardown(void)
{
    server_stop(&other_srv);
    server_stop(&main_srv);
    free(big_body);
    big_body = NULL;
    CHECK(main_srv.daemon == NULL);
}

TESTS_MAIN(test_setup, test_echo_post, test_methods, test_www_authenticate, test_limits,
           test_redirects, test_cross_origin_redirect, test_timeout, test_connection_errors,
           test_bad_requests, test_secret_body, test_proxy_choice, test_teardown)
