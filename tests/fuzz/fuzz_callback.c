/* fuzz_callback.c - libFuzzer target: the browser's redirect to the loopback callback
 * (auth/callback.c).
 *
 * The callback server runs as mcp-auth runs it, on 127.0.0.1, waiting for the state
 * "fuzz-state". Input: the request target the browser asks for, sent as
 * "GET <input> HTTP/1.1" with a Host of the server (the seeds look like
 * "/callback?code=...&state=fuzz-state&iss=..."); a CR or LF in it ends the request line.
 * The wait must return exactly the callback a 200 page was sent for, with the values of the
 * query as libmicrohttpd decodes them; any other answer is a refusal, after which a valid
 * callback is still accepted (the fuzzed request must not have spoiled the wait). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "credkit/secmem.h"

#include "callback.h"

#include "fuzz.h"

#define STATE "fuzz-state"

static struct callback *cb;

/* The port the callback listens on, as its redirect URI says (how the browser learns it). */
static uint16_t cb_port(const struct callback *c)
{
    unsigned port = 0;
    if (sscanf(callback_redirect_uri(c), "http://127.0.0.1:%u/", &port) != 1 || port > 65535)
        return 0;
    return (uint16_t)port;
}

struct client {
    const char *target;
    size_t target_len;
    int first_status; /* of the fuzzed request */
    int second_status;
};

/* Sends one request for target and returns the HTTP status of the answer (0: none). */
static int get(const char *target, size_t len)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(cb_port(cb))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), status = 0;
    fuzz_check(fd >= 0);
    fuzz_check(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    char head[128];
    int n =
        snprintf(head, sizeof(head), " HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n\r\n",
                 (unsigned)cb_port(cb));
    /* the request may be refused before it is all sent: EPIPE is an answer too */
    if (send(fd, "GET ", 4, MSG_NOSIGNAL) == 4 &&
        send(fd, target, len, MSG_NOSIGNAL) == (ssize_t)len)
        (void)send(fd, head, (size_t)n, MSG_NOSIGNAL);
    char buf[4096];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof(buf) - 1 && (r = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
        got += (size_t)r;
    buf[got] = 0;
    if (sscanf(buf, "HTTP/1.%*c %d", &status) != 1)
        status = 0;
    (void)close(fd);
    return status;
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    static const char valid[] = "/callback?code=second&state=" STATE;
    c->first_status = get(c->target, c->target_len);
    if (c->first_status != 200)
        c->second_status = get(valid, sizeof(valid) - 1);
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct err e = ERR_INIT;
    if (callback_start(0, &cb, &e) < 0) {
        fprintf(stderr, "cannot start the callback server: %s\n", e.msg);
        exit(2);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the request line ends at a line break (a bare CR too): what follows would be headers,
     * and a request with a body the server waits for is not a redirect */
    size_t len = 0;
    while (len < size && data[len] != '\n' && data[len] != '\r')
        len++;
    if (len > 16 * 1024)
        return 0;
    struct client c = {.target = (const char *)data, .target_len = len};
    struct callback_result res = {0};
    struct err e = ERR_INIT;
    pthread_t t;

    fuzz_check(pthread_create(&t, NULL, client_main, &c) == 0);
    int r = callback_wait(cb, STATE, 10000, NULL, NULL, &res, &e);
    fuzz_check(pthread_join(t, NULL) == 0);
    fuzz_check(r == 0);
    fuzz_check(res.state && strcmp(res.state, STATE) == 0);
    fuzz_check(res.code || res.error);
    fuzz_check(!(res.code && res.error));
    if (c.first_status != 200) {
        fuzz_check(c.second_status == 200);
        fuzz_check(res.code && strcmp(res.code, "second") == 0);
    }
    callback_result_release(&res);
    return 0;
}
