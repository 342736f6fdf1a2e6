/* test_callback.c - the loopback redirect receiver, driven by a real HTTP client (libcurl, or
 * raw sockets) in a forked child process while the test process waits on the server */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "credkit/util.h"

#include "callback.h"

#include "tests.h"

#define STATE "st-Zx9_q-3kT0"

/* The port the callback listens on, as its redirect URI says (how the browser learns it). */
static uint16_t cb_port(const struct callback *c)
{
    unsigned port = 0;
    if (sscanf(callback_redirect_uri(c), "http://127.0.0.1:%u/", &port) != 1 || port > 65535)
        return 0;
    return (uint16_t)port;
}

/* --- what the client child saw, in memory shared with the parent --- */

struct reply {
    long status; /* HTTP status, 0 when no response came */
    int curl_rc;
    size_t body_len;
    char body[8192];
    char headers[4096];
};

#define MAX_REPLIES 16

struct shared {
    int n;
    struct reply r[MAX_REPLIES];
};

static struct shared *shm;
static long client_timeout_ms = 5000; /* per request, in the child */

static void shm_reset(void)
{
    if (!shm) {
        void *p =
            mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            perror("mmap");
            exit(2);
        }
        shm = p;
    }
    memset(shm, 0, sizeof(*shm));
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static size_t on_body(char *p, size_t size, size_t n, void *userdata)
{
    struct reply *r = userdata;
    size_t len = size * n, room = sizeof(r->body) - 1 - r->body_len;
    size_t take = len < room ? len : room;
    memcpy(r->body + r->body_len, p, take);
    r->body_len += take;
    r->body[r->body_len] = 0;
    return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *userdata)
{
    struct reply *r = userdata;
    size_t len = size * n, used = strlen(r->headers), room = sizeof(r->headers) - 1 - used;
    size_t take = len < room ? len : room;
    memcpy(r->headers + used, p, take);
    r->headers[used + take] = 0;
    return len;
}

/* In the child: one request on a fresh connection, recorded in the next shared slot. */
static void http(uint16_t port, const char *method, const char *path_query, const char *host)
{
    if (shm->n >= MAX_REPLIES)
        _exit(3);
    struct reply *r = &shm->r[shm->n++];
    char url[65536];
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)port, path_query);
    CURL *c = curl_easy_init();
    if (!c)
        _exit(3);
    struct curl_slist *hdrs = NULL;
    char host_hdr[256];
    if (host) {
        (void)snprintf(host_hdr, sizeof(host_hdr), "Host: %s", host);
        hdrs = curl_slist_append(hdrs, host_hdr);
        (void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    }
    (void)curl_easy_setopt(c, CURLOPT_URL, url);
    (void)curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, client_timeout_ms);
    (void)curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    (void)curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    (void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    (void)curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    (void)curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    (void)curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    if (strcmp(method, "POST") == 0)
        (void)curl_easy_setopt(c, CURLOPT_POSTFIELDS, "code=posted&state=" STATE);
    r->curl_rc = (int)curl_easy_perform(c);
    (void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
}

static void get(uint16_t port, const char *path_query)
{
    http(port, "GET", path_query, NULL);
}

typedef void (*client_fn)(uint16_t port);

static pid_t spawn_client(client_fn fn, uint16_t port)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        fn(port);
        _exit(0);
    }
    return pid;
}

/* Reaps pid within max_ms (else kills it): returns its exit status, -1 when it had to die. */
static int reap(pid_t pid, int max_ms)
{
    int status;
    for (int t = 0; t <= max_ms; t += 10) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        sleep_ms(10);
    }
    (void)kill(pid, SIGKILL);
    (void)waitpid(pid, &status, 0);
    return -1;
}

static int ticks;
static int64_t tick_remaining[8];

static void on_tick(int64_t remaining_ms, void *userdata)
{
    CHECK(userdata == &ticks);
    if (ticks < (int)ELEMENTSOF(tick_remaining))
        tick_remaining[ticks] = remaining_ms;
    ticks++;
}

/* --- tests --- */

/* Exactly one listening socket holds the port, bound to 127.0.0.1, O_CLOEXEC. */
static void check_listener(uint16_t port)
{
    int found = 0;
    for (int fd = 0; fd < 1024; fd++) {
        int listening = 0;
        socklen_t len = sizeof(listening);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening)
            continue;
        struct sockaddr_storage ss;
        socklen_t sslen = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &sslen) < 0)
            continue;
        if (ss.ss_family == AF_INET6) {
            const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
            CHECK(ntohs(s6->sin6_port) != port); /* no IPv6 wildcard listener on our port */
            continue;
        }
        if (ss.ss_family != AF_INET)
            continue;
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
        if (ntohs(s4->sin_port) != port)
            continue;
        found++;
        CHECK_INT(ntohl(s4->sin_addr.s_addr), INADDR_LOOPBACK);
        CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    }
    CHECK_INT(found, 1);
}

static int connect_loopback(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
    (void)close(fd);
    return r;
}

static void test_start_loopback(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    uint16_t port = cb_port(cb);
    CHECK(port != 0);
    char want[64];
    (void)snprintf(want, sizeof(want), "http://127.0.0.1:%u/callback", (unsigned)port);
    CHECK_STR(callback_redirect_uri(cb), want);
    check_listener(port);
    CHECK_INT(connect_loopback(port), 0);
    callback_stop(cb);
    CHECK_INT(connect_loopback(port), -ECONNREFUSED);
    callback_stop(NULL);
}

static char big_state[5 * 1024 + 64];
static char big_iss[5 * 1024 + 64];
static char huge_url[48 * 1024];

static void client_requests(uint16_t port)
{
    get(port, "/other?state=" STATE "&code=c0");                               /* 0: 404 */
    http(port, "POST", "/callback", NULL);                                     /* 1: 405 */
    get(port, "/callback?state=wrong&code=c2");                                /* 2: 400 */
    get(port, "/callback?code=c3");                                            /* 3: 400 */
    get(port, big_state);                                                      /* 4: 400 */
    get(port, big_iss);                                                        /* 5: 400 */
    get(port, "/callback?state=" STATE);                                       /* 6: 400 */
    get(port, "/callback?state=" STATE "&state=" STATE "&code=c6");            /* 7: 400 */
    http(port, "GET", "/callback?state=" STATE "&code=c7", "evil.example:80"); /* 8: 400 */
    get(port, "/callback?state=" STATE "%00x&code=c8");                        /* 9: 400 */
    get(port, huge_url);                              /* 10: 4xx from the library */
    get(port, "/callback/?state=" STATE "&code=c10"); /* 11: 404 */
    get(port,
        "/callback?code=abc%2Bd&state=" STATE "&iss=https%3A%2F%2Fas.example%2F"); /* 12: 200 */
    client_timeout_ms = 1500;                     /* unanswered until the server stops */
    get(port, "/callback?code=c12&state=" STATE); /* 13: 410 or refused */
}

static void test_requests(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {0};

    (void)snprintf(big_state, sizeof(big_state), "/callback?code=c4&state=");
    size_t n = strlen(big_state);
    memset(big_state + n, 'a', 5 * 1024);
    big_state[n + 5 * 1024] = 0;
    (void)snprintf(big_iss, sizeof(big_iss), "/callback?code=c4b&state=" STATE "&iss=");
    n = strlen(big_iss);
    memset(big_iss + n, 'i', 5 * 1024);
    big_iss[n + 5 * 1024] = 0;
    (void)snprintf(huge_url, sizeof(huge_url), "/callback?code=c9&state=" STATE "&pad=");
    n = strlen(huge_url);
    memset(huge_url + n, 'b', sizeof(huge_url) - n - 1);
    huge_url[sizeof(huge_url) - 1] = 0;

    shm_reset();
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    pid_t pid = spawn_client(client_requests, cb_port(cb));
    ticks = 0;
    int64_t t0 = now_mono_ms();
    CHECK_INT(callback_wait(cb, STATE, 20000, on_tick, &ticks, &res, &e), 0);
    CHECK(now_mono_ms() - t0 < 15000);
    CHECK(ticks >= 1);
    CHECK(tick_remaining[0] > 19000 && tick_remaining[0] <= 20000);

    /* only the valid callback was taken, as sent */
    CHECK_STR(res.code, "abc+d");
    CHECK_STR(res.state, STATE);
    CHECK_STR(res.iss, "https://as.example/");
    CHECK(res.error == NULL);
    CHECK(res.error_description == NULL);
    CHECK(res.error_uri == NULL);

    sleep_ms(300); /* the last request is under way, unanswered: stopping resets it */
    callback_stop(cb);
    CHECK_INT(reap(pid, 10000), 0);
    callback_result_release(&res);
    CHECK(res.code == NULL);

    CHECK_INT(shm->n, 14);
    CHECK_INT(shm->r[0].status, 404);
    CHECK_INT(shm->r[1].status, 405);
    CHECK_CONTAINS(shm->r[1].headers, "Allow: GET");
    for (int i = 2; i <= 9; i++) {
        CHECK_INT(shm->r[i].status, 400);
        CHECK_CONTAINS(shm->r[i].body, "not valid or has expired");
    }
    CHECK(shm->r[10].status >= 400 && shm->r[10].status < 500);
    CHECK_INT(shm->r[11].status, 404);

    const struct reply *ok = &shm->r[12];
    CHECK_INT(ok->status, 200);
    CHECK_CONTAINS(ok->body, "Signed in");
    CHECK(strstr(ok->body, "abc") == NULL); /* the code is never echoed */
    CHECK(strstr(ok->body, "src=") == NULL && strstr(ok->body, "href=") == NULL);
    CHECK_CONTAINS(ok->headers, "Content-Type: text/html; charset=utf-8");
    CHECK_CONTAINS(ok->headers, "Cache-Control: no-store");
    CHECK_CONTAINS(ok->headers, "Referrer-Policy: no-referrer");

    /* after the accepted one: "already used", or nothing at all once the server stopped */
    CHECK(shm->r[13].status == 410 || shm->r[13].status == 0);
    CHECK(shm->r[13].status != 0 || shm->r[13].curl_rc != CURLE_OK);
}

static void client_error(uint16_t port)
{
    get(port, "/callback?error=access_denied&error_description=User+denied&state=" STATE
              "&error_uri=https%3A%2F%2Fas.example%2Fhelp");
}

static void test_error_callback(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {0};
    shm_reset();
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    pid_t pid = spawn_client(client_error, cb_port(cb));
    CHECK_INT(callback_wait(cb, STATE, 10000, NULL, NULL, &res, &e), 0);
    CHECK_INT(reap(pid, 10000), 0);
    callback_stop(cb);

    CHECK(res.code == NULL);
    CHECK_STR(res.error, "access_denied");
    CHECK_STR(res.error_description, "User denied");
    CHECK_STR(res.error_uri, "https://as.example/help");
    CHECK_STR(res.state, STATE);
    CHECK(res.iss == NULL);
    callback_result_release(&res);

    CHECK_INT(shm->n, 1);
    CHECK_INT(shm->r[0].status, 200);
    CHECK_CONTAINS(shm->r[0].body, "Sign-in failed");
    CHECK_CONTAINS(shm->r[0].body, "access_denied");
    CHECK_CONTAINS(shm->r[0].headers, "Cache-Control: no-store");
}

#define STATE2 "st2-Qw8RtY"

static void client_retry(uint16_t port)
{
    get(port, "/callback?error=invalid_client&state=" STATE);
}

static void client_retry2(uint16_t port)
{
    get(port, "/callback?code=stale&state=" STATE); /* the first attempt's state: void now */
    get(port, "/callback?code=fresh&state=" STATE2);
}

/* A retry on the same server (the flow re-registers the client after invalid_client and tries
 * again): the next wait takes a callback for its own state only. */
static void test_next_attempt(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {0};
    shm_reset();
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    pid_t pid = spawn_client(client_retry, cb_port(cb));
    CHECK_INT(callback_wait(cb, STATE, 10000, NULL, NULL, &res, &e), 0);
    CHECK_INT(reap(pid, 10000), 0);
    CHECK_STR(res.error, "invalid_client");
    callback_result_release(&res);

    shm_reset();
    pid = spawn_client(client_retry2, cb_port(cb));
    CHECK_INT(callback_wait(cb, STATE2, 10000, NULL, NULL, &res, &e), 0);
    CHECK_INT(reap(pid, 10000), 0);
    callback_stop(cb);
    CHECK_STR(res.code, "fresh");
    CHECK_STR(res.state, STATE2);
    CHECK(res.error == NULL);
    callback_result_release(&res);
    CHECK_INT(shm->n, 2);
    CHECK_INT(shm->r[0].status, 400);
    CHECK_INT(shm->r[1].status, 200);
}

static void client_script(uint16_t port)
{
    get(port, "/callback?state=" STATE "&code=c1&error=%3Cscript%3Ealert(1)%3C%2Fscript%3E"
              "&error_description=%3Cimg%20src%3Dx%20onerror%3Dalert(2)%3E%22%27%26");
}

static void test_error_escaped(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {0};
    shm_reset();
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    pid_t pid = spawn_client(client_script, cb_port(cb));
    CHECK_INT(callback_wait(cb, STATE, 10000, NULL, NULL, &res, &e), 0);
    CHECK_INT(reap(pid, 10000), 0);
    callback_stop(cb);

    CHECK_STR(res.error, "<script>alert(1)</script>");
    CHECK(res.code == NULL); /* an error callback carries no code, even when one was sent */
    callback_result_release(&res);

    const char *body = shm->r[0].body;
    CHECK_INT(shm->r[0].status, 200);
    CHECK(strstr(body, "<script") == NULL);
    CHECK(strstr(body, "<img") == NULL);
    CHECK_CONTAINS(body, "&lt;script&gt;alert(1)&lt;/script&gt;");
    CHECK_CONTAINS(body, "&lt;img src=x onerror=alert(2)&gt;&quot;&#39;&amp;");
}

static void test_timeout(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {.code = (char *)"untouched"};
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    int64_t t0 = now_mono_ms();
    CHECK_INT(callback_wait(cb, STATE, 200, NULL, NULL, &res, &e), -ETIMEDOUT);
    int64_t took = now_mono_ms() - t0;
    CHECK(took >= 190);
    CHECK(took < 2000);
    CHECK_INT(e.code, -ETIMEDOUT);
    CHECK_CONTAINS(e.msg, "no answer from the browser within 1s");
    CHECK_STR(res.code, "untouched");

    /* bad arguments */
    CHECK_INT(callback_wait(cb, "", 200, NULL, NULL, &res, &e), -EINVAL);
    CHECK_INT(callback_wait(cb, NULL, 200, NULL, NULL, &res, &e), -EINVAL);
    CHECK_INT(callback_wait(cb, STATE, 0, NULL, NULL, &res, &e), -EINVAL);
    callback_stop(cb);
}

static void test_tick(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {0};
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    ticks = 0;
    CHECK_INT(callback_wait(cb, STATE, 1500, on_tick, &ticks, &res, &e), -ETIMEDOUT);
    CHECK_INT(ticks, 2); /* at the start and a second later */
    CHECK(tick_remaining[0] > 1400 && tick_remaining[0] <= 1500);
    CHECK(tick_remaining[1] > 300 && tick_remaining[1] <= 600);
    callback_stop(cb);
}

static int listen_on(uint32_t addr, uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(addr)};
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0) {
        perror("listen_on");
        exit(2);
    }
    return fd;
}

static uint16_t port_of(int fd)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
        return 0;
    return ntohs(sa.sin_port);
}

static void test_port_in_use(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = (struct callback *)&e; /* must stay untouched on failure */
    int fd = listen_on(INADDR_LOOPBACK, 0);
    uint16_t port = port_of(fd);
    char want[64];
    (void)snprintf(want, sizeof(want), "port %u on 127.0.0.1 is in use", (unsigned)port);

    CHECK_INT(callback_start(port, &cb, &e), -EADDRINUSE);
    CHECK_INT(e.code, -EADDRINUSE);
    CHECK_CONTAINS(e.msg, want);
    CHECK(cb == (struct callback *)&e);
    (void)close(fd);

    /* a wildcard listener holds the loopback address too */
    fd = listen_on(INADDR_ANY, port);
    err_clear(&e);
    CHECK_INT(callback_start(port, &cb, &e), -EADDRINUSE);
    CHECK_CONTAINS(e.msg, want);
    (void)close(fd);

    /* free again: the fixed port is ours */
    cb = NULL;
    CHECK_INT(callback_start(port, &cb, &e), 0);
    if (cb) {
        CHECK_INT(cb_port(cb), port);
        check_listener(port);
        callback_stop(cb);
    }
}

static int handler_calls;

static void counting_handler(int sig)
{
    handler_calls++;
}

static void client_sigint(uint16_t port)
{
    sleep_ms(100);
    (void)kill(getppid(), SIGINT);
}

static void client_sigterm(uint16_t port)
{
    sleep_ms(100);
    (void)kill(getppid(), SIGTERM);
}

static void client_valid(uint16_t port)
{
    get(port, "/callback?code=later&state=" STATE);
}

static void test_signals(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {0};
    struct sigaction sa = {.sa_handler = counting_handler}, prev, cur;
    (void)sigemptyset(&sa.sa_mask);
    CHECK_INT(sigaction(SIGINT, &sa, &prev), 0);
    handler_calls = 0;

    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;

    /* SIGINT with a handler of the caller's in place */
    pid_t pid = spawn_client(client_sigint, cb_port(cb));
    int64_t t0 = now_mono_ms();
    CHECK_INT(callback_wait(cb, STATE, 5000, NULL, NULL, &res, &e), -ECANCELED);
    CHECK(now_mono_ms() - t0 < 2000);
    CHECK_CONTAINS(e.msg, "interrupted");
    CHECK_INT(reap(pid, 5000), 0);
    CHECK_INT(handler_calls, 0); /* the wait took it */
    CHECK_INT(sigaction(SIGINT, NULL, &cur), 0);
    CHECK(cur.sa_handler == counting_handler);
    sigset_t mask;
    CHECK_INT(pthread_sigmask(SIG_SETMASK, NULL, &mask), 0);
    CHECK_INT(sigismember(&mask, SIGINT), 0);
    CHECK_INT(sigismember(&mask, SIGTERM), 0);
    CHECK_INT(raise(SIGINT), 0);
    CHECK_INT(handler_calls, 1); /* ours again */

    /* SIGTERM with the default disposition (which would kill us if it reached it) */
    pid = spawn_client(client_sigterm, cb_port(cb));
    CHECK_INT(callback_wait(cb, STATE, 5000, NULL, NULL, &res, &e), -ECANCELED);
    CHECK_INT(reap(pid, 5000), 0);
    CHECK_INT(sigaction(SIGTERM, NULL, &cur), 0);
    CHECK(cur.sa_handler == SIG_DFL);

    /* the server is still usable after an interrupted wait */
    shm_reset();
    pid = spawn_client(client_valid, cb_port(cb));
    CHECK_INT(callback_wait(cb, STATE, 5000, NULL, NULL, &res, &e), 0);
    CHECK_STR(res.code, "later");
    CHECK_INT(reap(pid, 5000), 0);
    CHECK_INT(shm->r[0].status, 200);
    callback_result_release(&res);
    callback_stop(cb);

    CHECK_INT(sigaction(SIGINT, &prev, NULL), 0);
}

/* Two complete valid requests already queued before the server runs: one is taken, the other
 * gets "already used", on the wire and before callback_wait() returns. */
static int report_fd = -1;

static int raw_request(uint16_t port, const char *code)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        _exit(4);
    char req[512];
    int n = snprintf(req, sizeof(req),
                     "GET /callback?code=%s&state=" STATE " HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n",
                     code, (unsigned)port);
    if (write(fd, req, (size_t)n) != n)
        _exit(4);
    return fd;
}

static long raw_status(int fd)
{
    char buf[4096];
    size_t len = 0;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    while (len < sizeof(buf) - 1 && poll(&pfd, 1, 5000) == 1) {
        ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = 0;
    long status = 0;
    if (sscanf(buf, "HTTP/1.%*d %ld", &status) != 1)
        return 0;
    return status;
}

static void client_two(uint16_t port)
{
    int a = raw_request(port, "first");
    int b = raw_request(port, "second");
    char ready = 'r';
    if (write(report_fd, &ready, 1) != 1)
        _exit(4);
    shm->r[0].status = raw_status(a);
    shm->r[1].status = raw_status(b);
    shm->n = 2;
}

static void test_second_request_gone(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {0};
    int p[2];
    CHECK_INT(pipe2(p, O_CLOEXEC), 0);
    shm_reset();
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    report_fd = p[1];
    pid_t pid = spawn_client(client_two, cb_port(cb));
    (void)close(p[1]);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    CHECK_INT(poll(&pfd, 1, 5000), 1); /* both requests are queued */
    (void)close(p[0]);

    CHECK_INT(callback_wait(cb, STATE, 5000, NULL, NULL, &res, &e), 0);
    CHECK(res.code && (strcmp(res.code, "first") == 0 || strcmp(res.code, "second") == 0));
    CHECK_INT(reap(pid, 5000), 0); /* both answered: the child is done before we stop */
    callback_stop(cb);
    CHECK_INT(shm->n, 2);
    bool first = res.code && strcmp(res.code, "first") == 0;
    CHECK_INT(shm->r[first ? 0 : 1].status, 200);
    CHECK_INT(shm->r[first ? 1 : 0].status, 410);
    callback_result_release(&res);
}

/* Slow connections cannot hold the listener shut. A local user opens more connections than it
 * has slots and keeps each active with a byte of a request head every 200 ms, reconnecting
 * whenever one is dropped; the browser's redirect still gets through, at once. */
#define SLOW_CONNS 80

static int slow_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
        (void)close(fd);
        return -1;
    }
    return fd;
}

static void client_slowloris(uint16_t port)
{
    static const char head[] = "GET /callback?code=slow&state=" STATE " HTTP/1.1\r\nX-Slow: ";
    int fds[SLOW_CONNS];
    size_t sent[SLOW_CONNS] = {0};
    for (size_t i = 0; i < SLOW_CONNS; i++)
        fds[i] = slow_connect(port);
    pid_t browser = -1;
    int64_t start = now_mono_ms();
    while (now_mono_ms() - start < 15000) {
        for (size_t i = 0; i < SLOW_CONNS; i++) {
            char c = sent[i] < sizeof(head) - 1 ? head[sent[i]] : 'x';
            if (fds[i] >= 0 && send(fds[i], &c, 1, MSG_NOSIGNAL) == 1) {
                sent[i]++;
                continue;
            }
            if (fds[i] >= 0 && (errno == EAGAIN || errno == ENOTCONN))
                continue; /* not accepted yet: still in the backlog */
            if (fds[i] >= 0)
                (void)close(fds[i]);
            fds[i] = slow_connect(port); /* dropped: come back at once */
            sent[i] = 0;
        }
        /* the browser comes once the slow connections fill the listener */
        if (browser < 0 && now_mono_ms() - start >= 1500) {
            fflush(NULL);
            browser = fork();
            if (browser == 0) {
                get(port, "/callback?code=real&state=" STATE);
                _exit(0);
            }
        }
        if (browser > 0 && waitpid(browser, NULL, WNOHANG) == browser)
            break;
        sleep_ms(200);
    }
    if (browser > 0 && waitpid(browser, NULL, WNOHANG) == 0) {
        (void)kill(browser, SIGKILL);
        (void)waitpid(browser, NULL, 0);
    }
}

/* One connection that keeps sending a byte of its request head every 200 ms is active, but
 * it gets 5 s from its accept to a complete head: then it is closed. */
static void client_trickle(uint16_t port)
{
    static const char head[] = "GET /callback?state=" STATE " HTTP/1.1\r\nX-Slow: ";
    int fd = slow_connect(port);
    int64_t start = now_mono_ms();
    for (size_t sent = 0; fd >= 0 && now_mono_ms() - start < 9000; sent++) {
        char c = sent < sizeof(head) - 1 ? head[sent] : 'x', in;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 0) == 1 && recv(fd, &in, 1, MSG_DONTWAIT) <= 0)
            break; /* closed by the server */
        if (send(fd, &c, 1, MSG_NOSIGNAL) != 1 && errno != EAGAIN && errno != ENOTCONN)
            break;
        sleep_ms(200);
    }
    shm->r[0].status = (long)(now_mono_ms() - start); /* when it was closed */
    shm->n = 1;
}

static void test_head_deadline(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {0};
    shm_reset();
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    pid_t pid = spawn_client(client_trickle, cb_port(cb));
    CHECK_INT(callback_wait(cb, STATE, 7000, NULL, NULL, &res, &e), -ETIMEDOUT);
    CHECK_INT(reap(pid, 5000), 0);
    CHECK_INT(shm->n, 1);
    /* CALLBACK_HEAD_MS after its accept, give or take a poll */
    CHECK(shm->r[0].status >= 4500 && shm->r[0].status < 6500);
    callback_stop(cb);
}

static void test_slow_connections(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {0};
    shm_reset();
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    long saved = client_timeout_ms;
    client_timeout_ms = 8000;
    pid_t pid = spawn_client(client_slowloris, cb_port(cb));
    int64_t t0 = now_mono_ms();
    CHECK_INT(callback_wait(cb, STATE, 12000, NULL, NULL, &res, &e), 0);
    /* 1.5 s before the browser comes; then at once, not after the slow ones gave up */
    CHECK(now_mono_ms() - t0 < 3500);
    CHECK_STR(res.code, "real");
    CHECK_INT(reap(pid, 20000), 0);
    CHECK_INT(shm->n, 1);
    CHECK_INT(shm->r[0].status, 200);
    client_timeout_ms = saved;
    callback_result_release(&res);
    callback_stop(cb);
}

/* --- the pasted address --- */

struct notes {
    int n;
    char last[8][512];
};

static void on_note(const char *msg, void *userdata)
{
    struct notes *nt = userdata;
    if (nt->n < 8)
        (void)snprintf(nt->last[nt->n], sizeof(nt->last[0]), "%s", msg);
    nt->n++;
}

/* Writes lines into a pipe whose read end the callback reads; the write end is closed (the
 * input ends) when close_it. Returns the read end. */
static int paste_pipe(const char *text, bool close_it, int *ret_w)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    size_t len = strlen(text);
    CHECK(write(fds[1], text, len) == (ssize_t)len);
    if (close_it) {
        (void)close(fds[1]);
        fds[1] = -1;
    }
    *ret_w = fds[1];
    return fds[0];
}

/* Refused lines are said, never quoted, and the wait goes on; the valid one, decoded as the
 * listener decodes, wins; the code is not in any message. */
static void test_paste(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {0};
    struct notes nt = {0};
    char text[4096];
    int w = -1;
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    unsigned port = cb_port(cb);
    (void)snprintf(text, sizeof(text),
                   "\n"
                   "http://127.0.0.1:%u/callback?code=k1&state=wrong-state\n"
                   "http://evil.example:%u/callback?code=k2&state=" STATE "\n"
                   "https://127.0.0.1:%u/callback?code=k3&state=" STATE "\n"
                   "http://127.0.0.1:%u/other?code=k4&state=" STATE "\n"
                   "code=k5&state=" STATE "&code=k6\n"
                   "?state=" STATE "\n"
                   "  http://localhost:%u/callback?code=sec%%2Bret+code&state=" STATE
                   "&iss=https%%3A%%2F%%2Fas.example%%2F#frag  \n",
                   port, port, port, port, port);
    int r = paste_pipe(text, false, &w);
    CHECK(r >= 0);
    callback_paste_from(cb, r, on_note, &nt);
    CHECK_INT(callback_wait(cb, STATE, 5000, NULL, NULL, &res, &e), 0);
    CHECK_STR(res.code, "sec+ret code");
    CHECK_STR(res.iss, "https://as.example/");
    CHECK_INT(nt.n, 7);
    CHECK_CONTAINS(nt.last[0], "its state is not this sign-in's");
    for (int i = 1; i <= 3; i++)
        CHECK_CONTAINS(nt.last[i], "it is not this sign-in's");
    CHECK_CONTAINS(nt.last[4], "appears twice");
    CHECK_CONTAINS(nt.last[5], "neither a code nor an error");
    CHECK_CONTAINS(nt.last[6], "took the pasted address");
    for (int i = 0; i < 7; i++)
        CHECK(strstr(nt.last[i], "sec") == NULL && strstr(nt.last[i], "k1") == NULL);
    callback_result_release(&res);

    /* a new wait: the earlier state no longer valid; an error with the state is an answer, and
     * the last line needs no newline at the end of the input */
    (void)close(r);
    (void)close(w);
    nt = (struct notes){0};
    r = paste_pipe("state=" STATE "&code=old\nerror=access_denied&state=" STATE2
                   "&iss=https://as.example/",
                   true, &w);
    callback_paste_from(cb, r, on_note, &nt);
    CHECK_INT(callback_wait(cb, STATE2, 5000, NULL, NULL, &res, &e), 0);
    CHECK(res.code == NULL);
    CHECK_STR(res.error, "access_denied");
    CHECK_STR(res.iss, "https://as.example/"); /* a query alone, its "://" not a scheme's */
    CHECK_CONTAINS(nt.last[0], "its state is not this sign-in's");
    callback_result_release(&res);
    (void)close(r);

    /* the input ends without an answer: the listener alone, until the timeout */
    nt = (struct notes){0};
    r = paste_pipe("code=x&state=nope\n", true, &w);
    callback_paste_from(cb, r, on_note, &nt);
    CHECK_INT(callback_wait(cb, STATE, 600, NULL, NULL, &res, &e), -ETIMEDOUT);
    CHECK_INT(nt.n, 2);
    CHECK_CONTAINS(nt.last[1], "the input ended");
    (void)close(r);
    callback_stop(cb);
}

/* A redirect URI set in front of the listener (an ingress, a port forward): it is the one
 * handed out; a callback on its path with its authority (or ours) is taken, the listener's own
 * path and other hosts are not; what cannot be one is refused. */
static void test_override(void)
{
    struct err e = ERR_INIT;
    struct callback *cb = NULL;
    struct callback_result res = {0};
    struct notes nt = {0};
    char text[4096];
    int w = -1;
    CHECK_INT(callback_start(0, &cb, &e), 0);
    if (!cb)
        return;
    static const char *const bad[] = {
        "ftp://devbox.example/cb",     "https:///cb",
        "https://u@devbox.example/cb", "https://devbox.example/cb?x=1",
        "https://devbox.example/cb#f", "devbox.example/cb",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_INT(callback_set_redirect_uri(cb, bad[i], &e), -EINVAL);
    CHECK_CONTAINS(callback_redirect_uri(cb), "http://127.0.0.1:");
    CHECK_INT(callback_set_redirect_uri(cb, "https://DevBox.example:443/oauth/cb", &e), 0);
    CHECK_STR(callback_redirect_uri(cb), "https://DevBox.example:443/oauth/cb");
    unsigned port = cb_port(cb);
    (void)snprintf(text, sizeof(text),
                   "http://127.0.0.1:%u/callback?code=k1&state=" STATE "\n"
                   "https://other.example/oauth/cb?code=k2&state=" STATE "\n"
                   "https://devbox.example:8443/oauth/cb?code=k3&state=" STATE "\n"
                   "https://devbox.example/oauth/cb?code=k4&state=" STATE "\n",
                   port);
    int r = paste_pipe(text, false, &w);
    CHECK(r >= 0);
    callback_paste_from(cb, r, on_note, &nt);
    CHECK_INT(callback_wait(cb, STATE, 5000, NULL, NULL, &res, &e), 0);
    CHECK_STR(res.code, "k4");
    CHECK_INT(nt.n, 4);
    for (int i = 0; i < 3; i++)
        CHECK_CONTAINS(nt.last[i], "which begins with https://DevBox.example:443/oauth/cb");
    callback_result_release(&res);
    (void)close(r);
    (void)close(w);
    /* a query alone is judged as if it came to the redirect URI */
    nt = (struct notes){0};
    r = paste_pipe("code=k5&state=" STATE2 "\n", true, &w);
    callback_paste_from(cb, r, on_note, &nt);
    CHECK_INT(callback_wait(cb, STATE2, 5000, NULL, NULL, &res, &e), 0);
    CHECK_STR(res.code, "k5");
    callback_result_release(&res);
    (void)close(r);
    callback_stop(cb);
}

TESTS_MAIN(test_override, test_paste, test_start_loopback, test_requests, test_error_callback,
           test_next_attempt, test_error_escaped, test_timeout, test_tick, test_port_in_use,
           test_signals, test_second_request_gone, test_slow_connections, test_head_deadline)
