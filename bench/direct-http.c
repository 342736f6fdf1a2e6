/*
 * direct-http: bench/run's direct client for Streamable HTTP, in C on libcurl, so that the
 * baseline of the HTTP cases pays what the bridge pays for HTTP (libcurl) and not what node's
 * fetch does. The same sequence as driver.mjs: initialize, notifications/initialized,
 * tools/list (the tool named `echo`), warm-up calls, then for each concurrency level N calls of
 * `echo` with that many in flight (at least as many calls as in flight), each call's round trip
 * timed. One curl multi handle drives every request; its connection cache keeps the connections
 * alive between requests.
 *
 * It is also the HTTP agent of the bridge's listener cases (`mcp-bridge serve --listen`), in
 * either era: a 2025-11-25 agent (--protocol 2025-11-25) opens a session with initialize and
 * names it in Mcp-Session-Id; a 2026-07-28 agent (--stateless) sends no initialize, and each
 * request carries its `_meta` (protocol version, client capabilities) and the headers the
 * revision asks for (MCP-Protocol-Version, Mcp-Method, Mcp-Name). With --agents each call in
 * flight is an agent of its own: its own session (2025-11-25), set up before the level it first
 * takes part in, and the calls each agent made are counted, so that the level's line says how
 * evenly the server shared itself among them.
 *
 * Prints one JSON line per concurrency level, with the fields driver.mjs prints (p50_us, p99_us,
 * throughput, and the CPU and peak RSS of the --watch-pid process, the server or the bridge;
 * with --malloc-count FILE, the allocation counters of malloc-count.so loaded into it), and its
 * own CPU per call (self_sched_us_per_call, from /proc/self/schedstat): what a C client on
 * libcurl costs per call against that server, the least the HTTP side of any proxy pays.
 *
 * With --stdio it is no client but the floor of the HTTP relay cases: the least a stdio-to-HTTP
 * proxy can do. It reads newline JSON-RPC on stdin, POSTs each line as it comes to URL (libcurl
 * multi, keep-alive connections, as many in flight as lines arrive), and writes each answer's
 * body to stdout as a line (each `data:` of an event stream as one). It keeps the session the
 * server names in Mcp-Session-Id, and the protocol version of the answer that named it, for the
 * headers of the requests that follow; it parses nothing else. It ends at the end of stdin once
 * every answer is written (with a DELETE of the session). bench/run's driver measures it as it
 * measures the bridge.
 *
 *   direct-http URL [--calls N] [--warmup N] [--size BYTES] [--concurrency 1,16,64]
 *                   [--label TEXT] [--watch-pid PID] [--protocol VERSION] [--stateless]
 *                   [--agents] [--malloc-count FILE]
 *   direct-http URL --stdio
 *
 * Built by bench/run: cc -O2 -o direct-http direct-http.c $(pkg-config --cflags --libs libcurl)
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_INFLIGHT 256
#define MAX_LEVELS   8
#define MAX_BODY     (64u * 1024u * 1024u) /* an answer (or a --stdio line) larger is an error */
#define SESSION_MAX  256

struct req {
    CURL *easy;
    struct curl_slist *headers;
    char *body;      /* the request, owned */
    size_t body_cap; /* --stdio: body's size, kept from one request to the next */
    char *resp;      /* the answer read so far, owned */
    size_t resp_len;
    size_t resp_cap;
    long id;
    double t0_us;
    char *session; /* the agent's Mcp-Session-Id, SESSION_MAX bytes: sessions[agent], borrowed */
    int agent;
};

static const char *arg_url;
static const char *arg_label = "";
static long arg_calls = 2000, arg_warmup = 200, arg_size = 100, arg_watch_pid;
static long arg_levels[MAX_LEVELS] = {1, 16};
static int arg_nlevels = 2;
static bool arg_stateless, arg_agents, arg_stdio;
static const char *arg_malloc_count;
static char sessions[MAX_INFLIGHT][SESSION_MAX]; /* agent 0's serves every call without --agents */
static int agents_ready;                         /* agents set up so far */
static long agent_calls[MAX_INFLIGHT];           /* calls each agent made in this level */
static char protocol[64] = "2025-06-18";
/* what a 2026-07-28 request carries in its params, and a comma */
static const char meta[] = "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                           "\"io.modelcontextprotocol/clientCapabilities\":{},"
                           "\"io.modelcontextprotocol/clientInfo\":"
                           "{\"name\":\"bench-direct-http\",\"version\":\"1.0.0\"}},";
static char tool[256];
static char *message; /* the payload, arg_size bytes of 'x' */
static long next_id = 1;

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
    va_list ap;

    fputs("direct-http: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static long parse_num(const char *opt, const char *s)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0)
        die("%s needs a number, not '%s'", opt, s);
    return v;
}

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
    struct req *r = userdata;
    size_t len = size * n;

    if (r->resp_len + len + 1 > r->resp_cap) {
        size_t cap = r->resp_cap ? r->resp_cap : 4096;
        char *p;

        while (cap < r->resp_len + len + 1)
            cap *= 2;
        if (cap > MAX_BODY)
            return 0; /* curl fails the transfer with CURLE_WRITE_ERROR */
        p = realloc(r->resp, cap);
        if (!p)
            return 0;
        r->resp = p;
        r->resp_cap = cap;
    }
    memcpy(r->resp + r->resp_len, data, len);
    r->resp_len += len;
    r->resp[r->resp_len] = '\0';
    return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *userdata)
{
    struct req *r = userdata;
    size_t len = size * n;
    static const char name[] = "mcp-session-id:";

    if (!r->session[0] && len > sizeof(name) - 1 &&
        strncasecmp(data, name, sizeof(name) - 1) == 0) {
        const char *v = data + sizeof(name) - 1;
        size_t vlen = len - (sizeof(name) - 1);

        while (vlen && (*v == ' ' || *v == '\t'))
            v++, vlen--;
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
            vlen--;
        if (vlen >= SESSION_MAX)
            vlen = SESSION_MAX - 1;
        memcpy(r->session, v, vlen);
        r->session[vlen] = '\0';
    }
    return len;
}

static void add_header(struct req *r, const char *name, const char *value)
{
    char h[320];

    snprintf(h, sizeof(h), "%s: %s", name, value);
    r->headers = curl_slist_append(r->headers, h);
}

/*
 * Sets up r (whose easy handle is kept across requests) for one POST of body (taken): a request
 * of method (NULL for a notification) naming name (the tool of a tools/call, else NULL).
 */
static void req_prepare(struct req *r, char *body, long id, const char *method, const char *name)
{

    if (!r->easy) {
        r->easy = curl_easy_init();
        if (!r->easy)
            die("curl_easy_init failed");
    }
    curl_slist_free_all(r->headers);
    r->headers = curl_slist_append(NULL, "Content-Type: application/json");
    r->headers = curl_slist_append(r->headers, "Accept: application/json, text/event-stream");
    if (arg_stateless) {
        add_header(r, "MCP-Protocol-Version", "2026-07-28");
        if (method)
            add_header(r, "Mcp-Method", method);
        if (name)
            add_header(r, "Mcp-Name", name);
    } else if (r->session[0]) {
        add_header(r, "Mcp-Session-Id", r->session);
        add_header(r, "Mcp-Protocol-Version", protocol);
    }
    if (!r->headers)
        die("out of memory");
    free(r->body);
    r->body = body;
    r->resp_len = 0;
    r->id = id;
    curl_easy_setopt(r->easy, CURLOPT_URL, arg_url);
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(r->body));
    curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
    curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
}

static char *call_body(long id)
{
    static const char fmt[] = "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\","
                              "\"params\":{%s\"name\":\"%s\",\"arguments\":{\"message\":\"%s\"}}}";
    char *body;

    if (asprintf(&body, fmt, id, arg_stateless ? meta : "", tool, message) < 0)
        die("out of memory");
    return body;
}

/* Whether r's answer is a result for its id carrying the message back. */
static bool answer_ok(const struct req *r, bool check_message)
{
    char key[32];
    long status = 0;
    const char *p;

    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200 || !r->resp)
        return false;
    snprintf(key, sizeof(key), "\"id\":%ld", r->id);
    p = strstr(r->resp, key);
    if (!p || (p[strlen(key)] != ',' && p[strlen(key)] != '}'))
        return false;
    if (!strstr(r->resp, "\"result\""))
        return false;
    return !check_message || (r->resp_len > (size_t)arg_size &&
                              memmem(r->resp, r->resp_len, message, (size_t)arg_size) != NULL);
}

/* One request, alone, to the end: the set-up exchanges. */
static void exchange(CURLM *multi, struct req *r, char *body, long id, const char *method,
                     bool want_answer)
{
    int running = 1;
    long status = 0;

    req_prepare(r, body, id, method, NULL);
    curl_multi_add_handle(multi, r->easy);
    while (running) {
        if (curl_multi_perform(multi, &running) != CURLM_OK)
            die("curl_multi_perform failed");
        if (running && curl_multi_poll(multi, NULL, 0, 1000, NULL) != CURLM_OK)
            die("curl_multi_poll failed");
    }
    for (CURLMsg *m; (m = curl_multi_info_read(multi, &running));)
        if (m->msg == CURLMSG_DONE && m->data.result != CURLE_OK)
            die("%s: %s", arg_url, curl_easy_strerror(m->data.result));
    curl_multi_remove_handle(multi, r->easy);
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if (want_answer ? !answer_ok(r, false) : (status != 202 && status != 200))
        die("unexpected answer (HTTP %ld): %.300s", status, r->resp ? r->resp : "");
}

/*
 * Sets tool to the echo tool of a tools/list answer: `echo`, or a name ending in `_echo` (the
 * bridge's serve names it after its server). Whether it found one.
 */
static bool find_tool(const char *resp)
{
    static const char key[] = "\"name\":\"";

    for (const char *p = strstr(resp, key); p; p = strstr(p, key)) {
        const char *q;
        size_t len;

        p += strlen(key);
        q = strchr(p, '"');
        if (!q)
            break;
        len = (size_t)(q - p);
        if (len < sizeof(tool) && ((len == 4 && memcmp(p, "echo", 4) == 0) ||
                                   (len > 5 && memcmp(q - 5, "_echo", 5) == 0))) {
            snprintf(tool, sizeof(tool), "%.*s", (int)len, p);
            return true;
        }
    }
    return false;
}

/*
 * tools/list until it holds the echo tool: a bridge lists a server's tools once it has
 * connected, which the first request starts. At most 60 s.
 */
static void list_tools(CURLM *multi, struct req *r)
{
    double until = now_us() + 60e6;

    for (;;) {
        char *body;

        /* the params of a 2026-07-28 tools/list: its _meta, without meta's closing comma */
        if (asprintf(&body, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/list\"%s%.*s%s}",
                     next_id, arg_stateless ? ",\"params\":{" : "",
                     arg_stateless ? (int)sizeof(meta) - 2 : 0, meta, arg_stateless ? "}" : "") < 0)
            die("out of memory");
        exchange(multi, r, body, next_id++, "tools/list", true);
        if (find_tool(r->resp))
            return;
        if (now_us() > until)
            die("no tool named echo after 60 s in %.300s", r->resp);
        (void)usleep(100 * 1000);
    }
}

/* Sets agent a up: initialize and its notification (a session), then the tool, once. */
static void setup_agent(CURLM *multi, struct req *r, int a)
{
    char *body;
    const char *p, *q;

    r->session = sessions[a];
    if (!arg_stateless) {
        if (asprintf(&body,
                     "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"initialize\",\"params\":{"
                     "\"protocolVersion\":\"%s\",\"capabilities\":{},"
                     "\"clientInfo\":{\"name\":\"bench-direct-http\",\"version\":\"1.0.0\"}}}",
                     next_id, protocol) < 0)
            die("out of memory");
        exchange(multi, r, body, next_id++, "initialize", true);
        if (!r->session[0])
            die("initialize: no Mcp-Session-Id in the answer");
        p = strstr(r->resp, "\"protocolVersion\":\"");
        if (p && a == 0) {
            p += strlen("\"protocolVersion\":\"");
            q = strchr(p, '"');
            if (q && (size_t)(q - p) < sizeof(protocol))
                snprintf(protocol, sizeof(protocol), "%.*s", (int)(q - p), p);
        }
        exchange(multi, r, strdup("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"),
                 0, NULL, false);
    }
    if (!tool[0])
        list_tools(multi, r);
}

/*
 * DELETE of every agent's session, as an agent leaving does: a session left open would count
 * against the bridge's bound on agents for 30 minutes.
 */
static void end_sessions(struct req *reqs)
{
    for (int a = 0; a < agents_ready && !arg_stateless; a++) {
        struct req *r = &reqs[a];
        long status = 0;

        r->session = sessions[a];
        req_prepare(r, strdup(""), 0, NULL, NULL);
        curl_easy_setopt(r->easy, CURLOPT_CUSTOMREQUEST, "DELETE");
        curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
        if (curl_easy_perform(r->easy) != CURLE_OK)
            die("DELETE of a session: %s", arg_url);
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200 && status != 204)
            die("DELETE of a session: HTTP %ld", status);
    }
}

/* Sets up the agents the next level needs that are not yet. */
static void setup_agents(CURLM *multi, struct req *reqs, long n)
{
    if (!arg_agents)
        n = 1;
    for (; agents_ready < n; agents_ready++)
        setup_agent(multi, &reqs[agents_ready], agents_ready);
}

struct sample {
    double ticks; /* utime + stime, in clock ticks */
    double ns;    /* schedstat: ns on a CPU */
};

static struct sample proc_sample(long pid)
{
    struct sample s = {0, 0};
    char path[64], buf[1024];
    unsigned long utime, stime;
    unsigned long long ns;
    FILE *f;
    char *p;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    f = fopen(path, "re");
    if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2)
        s.ticks = (double)utime + (double)stime;
    if (f)
        fclose(f);
    snprintf(path, sizeof(path), "/proc/%ld/schedstat", pid);
    f = fopen(path, "re");
    if (f && fscanf(f, "%llu", &ns) == 1)
        s.ns = (double)ns;
    if (f)
        fclose(f);
    return s;
}

static long hwm_kb(long pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    f = fopen(path, "re");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* malloc-count.so's counters: malloc + calloc + realloc, free, bytes; zeros without the file */
struct allocs {
    double allocs, frees, bytes;
};

static struct allocs malloc_sample(void)
{
    struct allocs a = {0, 0, 0};
    uint64_t v[5];
    int fd;

    if (!arg_malloc_count)
        return a;
    fd = open(arg_malloc_count, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || pread(fd, v, sizeof(v), 0) != (ssize_t)sizeof(v))
        die("%s: not a malloc-count file (was malloc-count.so loaded?)", arg_malloc_count);
    (void)close(fd);
    a.allocs = (double)(v[0] + v[1] + v[2]);
    a.frees = (double)v[3];
    a.bytes = (double)v[4];
    return a;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/*
 * n calls with `inflight` in flight; each call's round trip goes to lat (when not NULL).
 * Returns the seconds it took.
 */
static double run_calls(CURLM *multi, struct req *reqs, long n, long inflight, double *lat)
{
    long issued = 0, done = 0;
    double t0 = now_us();
    int running = 0;

    if (inflight > n)
        inflight = n;
    for (long i = 0; i < inflight; i++) {
        reqs[i].session = sessions[arg_agents ? i : 0];
        reqs[i].agent = arg_agents ? (int)i : 0;
        agent_calls[i] = 0;
    }
    for (long i = 0; i < inflight; i++, issued++) {
        req_prepare(&reqs[i], call_body(next_id), next_id, "tools/call", tool);
        next_id++;
        reqs[i].t0_us = now_us();
        curl_multi_add_handle(multi, reqs[i].easy);
    }
    while (done < n) {
        CURLMsg *m;
        int left;

        if (curl_multi_perform(multi, &running) != CURLM_OK)
            die("curl_multi_perform failed");
        while ((m = curl_multi_info_read(multi, &left))) {
            struct req *r;

            if (m->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            if (m->data.result != CURLE_OK)
                die("%s: %s", arg_url, curl_easy_strerror(m->data.result));
            curl_multi_remove_handle(multi, r->easy);
            if (!answer_ok(r, true))
                die("bad echo answer: %.300s", r->resp ? r->resp : "");
            if (lat)
                lat[done] = now_us() - r->t0_us;
            done++;
            agent_calls[r->agent]++;
            if (issued < n) {
                req_prepare(r, call_body(next_id), next_id, "tools/call", tool);
                next_id++;
                issued++;
                r->t0_us = now_us();
                curl_multi_add_handle(multi, r->easy);
            }
        }
        if (done < n && curl_multi_poll(multi, NULL, 0, 1000, NULL) != CURLM_OK)
            die("curl_multi_poll failed");
    }
    return (now_us() - t0) / 1e6;
}

/* ---- --stdio: the floor of the HTTP relay cases ---- */

/* what --stdio has read from stdin and not yet posted: buf[start, len), with no end of line before
 * `scanned` */
struct inbuf {
    char *buf;
    size_t start, len, cap, scanned;
};

/*
 * The headers every --stdio request shares, built again only when the server names a session:
 * a list some transfer may still use is kept until the end, as its transfer may be in flight.
 */
static struct curl_slist *stdio_headers, *stdio_headers_old[4];
static int stdio_headers_nold;
static bool stdio_headers_session; /* stdio_headers name the session */

static void stdio_build_headers(void)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    char line[SESSION_MAX + 64];

    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    if (sessions[0][0]) {
        snprintf(line, sizeof(line), "Mcp-Session-Id: %s", sessions[0]);
        h = curl_slist_append(h, line);
        snprintf(line, sizeof(line), "Mcp-Protocol-Version: %s", protocol);
        h = curl_slist_append(h, line);
    }
    if (!h)
        die("out of memory");
    stdio_headers_session = sessions[0][0] != '\0';
    if (stdio_headers) {
        if (stdio_headers_nold == (int)(sizeof(stdio_headers_old) / sizeof(*stdio_headers_old)))
            die("the server named a new session %d times", stdio_headers_nold);
        stdio_headers_old[stdio_headers_nold++] = stdio_headers;
    }
    stdio_headers = h;
}

/* Writes all of iov to stdout, blocking: the agent (bench/driver.mjs) always reads. */
static void write_all(struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(STDOUT_FILENO, iov, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            die("write to stdout: %s", strerror(errno));
        for (; n > 0 && (size_t)w >= iov->iov_len; iov++, n--)
            w -= (ssize_t)iov->iov_len;
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
}

/*
 * Writes r's answer to stdout as lines: a JSON body as one (a notification's 202 has none), an
 * event stream's `data:` fields one each.
 */
static void stdio_answer(struct req *r)
{
    char nl[] = "\n";
    const char *type = NULL;
    size_t len = r->resp_len;

    while (len && (r->resp[len - 1] == '\n' || r->resp[len - 1] == '\r' || r->resp[len - 1] == ' '))
        len--;
    if (!len)
        return;
    curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &type);
    if (type && strncasecmp(type, "text/event-stream", 17) == 0) {
        for (char *p = r->resp, *end = r->resp + len; p < end;) {
            char *eol = memchr(p, '\n', (size_t)(end - p));
            size_t l = eol ? (size_t)(eol - p) : (size_t)(end - p);

            if (l > 0 && p[l - 1] == '\r')
                l--;
            if (l > 5 && memcmp(p, "data:", 5) == 0) {
                size_t skip = p[5] == ' ' ? 6 : 5;
                struct iovec iov[2] = {{p + skip, l - skip}, {nl, 1}};

                write_all(iov, 2);
            }
            p = eol ? eol + 1 : end;
        }
        return;
    }
    struct iovec iov[2] = {{r->resp, len}, {nl, 1}};

    write_all(iov, 2);
}

/* a line at least this long is posted from the buffer it was read into, not copied */
#define STDIO_TAKE_MIN (64u * 1024u)

/*
 * Posts the line in->buf[in->start, end) with a free transfer r (its easy handle set up on first
 * use), and consumes it and its newline from in. A short line is copied into r's body; a long
 * one is posted where it was read: r takes in's buffer, and in goes on in r's previous one with
 * what followed the line, so that a large message is held once, as a relay must hold it.
 */
static void stdio_post(CURLM *multi, struct req *r, struct inbuf *in, size_t end)
{
    size_t len = end - in->start;
    const char *post;

    if (!r->easy) {
        r->easy = curl_easy_init();
        if (!r->easy)
            die("curl_easy_init failed");
        r->session = sessions[0];
        curl_easy_setopt(r->easy, CURLOPT_URL, arg_url);
        curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
        curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
        curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
    }
    if (len >= STDIO_TAKE_MIN) {
        size_t rest = in->len - end - 1;
        char *next = r->body;
        size_t next_cap = r->body_cap;

        if (next_cap < rest) {
            next = realloc(next, rest);
            if (!next)
                die("out of memory");
            next_cap = rest;
        }
        if (rest)
            memcpy(next, in->buf + end + 1, rest);
        r->body = in->buf;
        r->body_cap = in->cap;
        post = r->body + in->start;
        *in = (struct inbuf){next, 0, rest, next_cap, 0};
    } else {
        if (len > r->body_cap) {
            char *p = realloc(r->body, len);

            if (!p)
                die("out of memory");
            r->body = p;
            r->body_cap = len;
        }
        memcpy(r->body, in->buf + in->start, len);
        post = r->body;
        in->start = in->scanned = end + 1;
    }
    r->resp_len = 0;
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, stdio_headers);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, post);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    if (curl_multi_add_handle(multi, r->easy) != CURLM_OK)
        die("curl_multi_add_handle failed");
}

/*
 * One read of stdin into in (poll said it is readable): whether stdin is still open. What was
 * posted goes first; then in grows so that a read can take 64 KiB at least.
 */
static bool stdio_read(struct inbuf *in)
{
    ssize_t n;

    if (in->start) {
        memmove(in->buf, in->buf + in->start, in->len - in->start);
        in->len -= in->start;
        in->scanned -= in->start;
        in->start = 0;
    }
    if (in->cap - in->len < 65536) {
        size_t cap = in->cap ? in->cap : 131072;
        char *p;

        if (in->len > MAX_BODY)
            die("more than %u bytes of stdin wait to be posted", MAX_BODY);
        while (cap - in->len < 65536)
            cap *= 2;
        p = realloc(in->buf, cap);
        if (!p)
            die("out of memory");
        in->buf = p;
        in->cap = cap;
    }
    do
        n = read(STDIN_FILENO, in->buf + in->len, in->cap - in->len);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        die("read of stdin: %s", strerror(errno));
    in->len += (size_t)n;
    return n > 0;
}

/* Posts each complete line of in while a transfer is free; only new bytes are searched. */
static void stdio_dispatch(CURLM *multi, struct inbuf *in, struct req **free_reqs, int *nfree)
{
    while (*nfree > 0) {
        /* (after a long line is taken, buf may be NULL with nothing in it) */
        char *nl = in->len > in->scanned
                       ? memchr(in->buf + in->scanned, '\n', in->len - in->scanned)
                       : NULL;
        size_t end;

        if (!nl) {
            in->scanned = in->len;
            return;
        }
        end = (size_t)(nl - in->buf);
        if (end > in->start)
            stdio_post(multi, free_reqs[--*nfree], in, end);
        else
            in->start = in->scanned = end + 1; /* an empty line */
    }
}

static int stdio_proxy(void)
{
    static struct req reqs[MAX_INFLIGHT];
    struct req *free_reqs[MAX_INFLIGHT];
    struct inbuf in = {NULL, 0, 0, 0, 0};
    int nfree = MAX_INFLIGHT, running = 0;
    bool in_open = true;
    CURLM *multi;

    for (int i = 0; i < MAX_INFLIGHT; i++)
        free_reqs[i] = &reqs[MAX_INFLIGHT - 1 - i];
    /*
     * Large buffers mapped on their own, so that one given back leaves the process at once and a
     * growing one is moved by mremap, not copied: glibc's threshold otherwise rises to the
     * largest buffer freed, and the heap keeps it.
     */
    (void)mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        die("curl_global_init failed");
    multi = curl_multi_init();
    if (!multi)
        die("curl_multi_init failed");
    /* every connection kept alive, as the bridge keeps them (its loop's multi handle) */
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)MAX_INFLIGHT);
    stdio_build_headers();

    while (in_open || nfree < MAX_INFLIGHT) {
        /* stdin is read only while a transfer is free for its next line */
        struct curl_waitfd wfd = {STDIN_FILENO, CURL_WAIT_POLLIN, 0};
        unsigned nwfd = in_open && nfree > 0 ? 1 : 0;
        CURLMsg *m;
        int left;

        if (curl_multi_poll(multi, &wfd, nwfd, 1000, NULL) != CURLM_OK)
            die("curl_multi_poll failed");
        if (nwfd && (wfd.revents & (POLLIN | POLLHUP | POLLERR))) {
            in_open = stdio_read(&in);
            stdio_dispatch(multi, &in, free_reqs, &nfree);
        }
        if (curl_multi_perform(multi, &running) != CURLM_OK)
            die("curl_multi_perform failed");
        while ((m = curl_multi_info_read(multi, &left))) {
            struct req *r;

            if (m->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            if (m->data.result != CURLE_OK)
                die("%s: %s", arg_url, curl_easy_strerror(m->data.result));
            curl_multi_remove_handle(multi, r->easy);
            if (!stdio_headers_session && sessions[0][0]) {
                /* the answer that named the session (initialize's) names the protocol too */
                const char *p = r->resp ? strstr(r->resp, "\"protocolVersion\":\"") : NULL;
                const char *q = p ? strchr(p + 19, '"') : NULL;

                if (q && (size_t)(q - p - 19) < sizeof(protocol))
                    snprintf(protocol, sizeof(protocol), "%.*s", (int)(q - p - 19), p + 19);
                stdio_build_headers();
            }
            stdio_answer(r);
            if (r->body_cap >= STDIO_TAKE_MIN) {
                /* a large request given back once sent: kept, it would be a third copy */
                free(r->body);
                r->body = NULL;
                r->body_cap = 0;
            }
            free_reqs[nfree++] = r;
        }
        /* lines that waited for a free transfer */
        if (in.start < in.len)
            stdio_dispatch(multi, &in, free_reqs, &nfree);
    }
    if (in.start < in.len)
        die("stdin ended inside a line");
    agents_ready = sessions[0][0] ? 1 : 0;
    end_sessions(reqs);
    for (int i = 0; i < MAX_INFLIGHT; i++) {
        if (reqs[i].easy)
            curl_easy_cleanup(reqs[i].easy);
        curl_slist_free_all(reqs[i].headers);
        free(reqs[i].body);
        free(reqs[i].resp);
    }
    curl_slist_free_all(stdio_headers);
    for (int i = 0; i < stdio_headers_nold; i++)
        curl_slist_free_all(stdio_headers_old[i]);
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    free(in.buf);
    return 0;
}

static void parse_levels(const char *s)
{
    char *copy = strdup(s), *save = NULL;

    arg_nlevels = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (arg_nlevels == MAX_LEVELS)
            die("--concurrency: at most %d levels", MAX_LEVELS);
        arg_levels[arg_nlevels] = parse_num("--concurrency", t);
        if (arg_levels[arg_nlevels] < 1 || arg_levels[arg_nlevels] > MAX_INFLIGHT)
            die("--concurrency: 1 to %d", MAX_INFLIGHT);
        arg_nlevels++;
    }
    free(copy);
    if (!arg_nlevels)
        die("--concurrency: no level");
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (a[0] != '-') {
            arg_url = a;
            continue;
        }
        if (strcmp(a, "--stateless") == 0) {
            arg_stateless = true;
            continue;
        }
        if (strcmp(a, "--stdio") == 0) {
            arg_stdio = true;
            continue;
        }
        if (strcmp(a, "--agents") == 0) {
            arg_agents = true;
            continue;
        }
        if (!v)
            die("%s needs a value", a);
        i++;
        if (strcmp(a, "--calls") == 0)
            arg_calls = parse_num(a, v);
        else if (strcmp(a, "--warmup") == 0)
            arg_warmup = parse_num(a, v);
        else if (strcmp(a, "--size") == 0)
            arg_size = parse_num(a, v);
        else if (strcmp(a, "--watch-pid") == 0)
            arg_watch_pid = parse_num(a, v);
        else if (strcmp(a, "--concurrency") == 0)
            parse_levels(v);
        else if (strcmp(a, "--label") == 0)
            arg_label = v;
        else if (strcmp(a, "--protocol") == 0)
            snprintf(protocol, sizeof(protocol), "%s", v);
        else if (strcmp(a, "--malloc-count") == 0)
            arg_malloc_count = v;
        else
            die("unknown option '%s'", a);
    }
    if (!arg_url || arg_calls < 1)
        die("usage: direct-http URL [--calls N] [--warmup N] [--size BYTES] "
            "[--concurrency 1,16] [--label TEXT] [--watch-pid PID] [--protocol VERSION] "
            "[--stateless] [--agents] [--malloc-count FILE] | direct-http URL --stdio");
}

int main(int argc, char **argv)
{
    static struct req reqs[MAX_INFLIGHT];
    double *lat;
    CURLM *multi;

    parse_args(argc, argv);
    if (arg_stdio)
        return stdio_proxy();
    message = malloc((size_t)arg_size + 1);
    lat = calloc((size_t)(arg_calls > MAX_INFLIGHT ? arg_calls : MAX_INFLIGHT), sizeof(*lat));
    if (!message || !lat)
        die("out of memory");
    memset(message, 'x', (size_t)arg_size);
    message[arg_size] = '\0';
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        die("curl_global_init failed");
    multi = curl_multi_init();
    if (!multi)
        die("curl_multi_init failed");
    setup_agents(multi, reqs, 1);
    if (arg_warmup)
        (void)run_calls(multi, reqs, arg_warmup, 1, NULL);

    for (int l = 0; l < arg_nlevels; l++) {
        struct sample before = {0, 0}, after, self_before, self_after;
        struct allocs mbefore, mafter;
        /* at least one call per slot in flight, or fewer would be in flight than the level says */
        long n = arg_calls > arg_levels[l] ? arg_calls : arg_levels[l];
        double secs;

        setup_agents(multi, reqs, arg_levels[l]);
        mbefore = malloc_sample();
        if (arg_watch_pid)
            before = proc_sample(arg_watch_pid);
        self_before = proc_sample((long)getpid());
        secs = run_calls(multi, reqs, n, arg_levels[l], lat);
        self_after = proc_sample((long)getpid());
        mafter = malloc_sample();
        qsort(lat, (size_t)n, sizeof(*lat), cmp_double);
        double mean = 0;
        long p99 = (long)((double)n * 0.99);

        if (p99 >= n)
            p99 = n - 1;
        for (long i = 0; i < n; i++)
            mean += lat[i];
        mean /= (double)n;
        printf("{\"label\":\"%s\",\"mode\":\"http\",\"size\":%ld,\"calls\":%ld,\"inflight\":%ld,"
               "\"p50_us\":%.1f,\"p99_us\":%.1f,\"mean_us\":%.1f,\"throughput\":%.1f",
               arg_label, arg_size, n, arg_levels[l], lat[n / 2], lat[p99], mean, (double)n / secs);
        /* its own cost, the C client's: what the HTTP side of any proxy pays at least */
        printf(",\"self_cpu_us_per_call\":%.2f,\"self_sched_us_per_call\":%.2f",
               (self_after.ticks - self_before.ticks) * 1e4 / (double)n,
               (self_after.ns - self_before.ns) / 1e3 / (double)n);
        if (arg_watch_pid) {
            after = proc_sample(arg_watch_pid);
            printf(",\"pid_cpu_us_per_call\":%.2f,\"pid_sched_us_per_call\":%.2f,"
                   "\"pid_hwm_kb\":%ld",
                   (after.ticks - before.ticks) * 1e4 / (double)n,
                   (after.ns - before.ns) / 1e3 / (double)n, hwm_kb(arg_watch_pid));
        }
        if (arg_malloc_count)
            printf(
                ",\"allocs_per_call\":%.2f,\"frees_per_call\":%.2f,\"alloc_bytes_per_call\":%.1f",
                (mafter.allocs - mbefore.allocs) / (double)n,
                (mafter.frees - mbefore.frees) / (double)n,
                (mafter.bytes - mbefore.bytes) / (double)n);
        if (arg_agents) {
            /* each agent's share of the calls against the mean share: 1 is perfectly even */
            long k = arg_levels[l] < n ? arg_levels[l] : n, lo = n, hi = 0;
            double mean_share = (double)n / (double)k;

            for (long i = 0; i < k; i++) {
                lo = agent_calls[i] < lo ? agent_calls[i] : lo;
                hi = agent_calls[i] > hi ? agent_calls[i] : hi;
            }
            printf(",\"agents\":%ld,\"agent_calls_min\":%ld,\"agent_calls_max\":%ld,"
                   "\"agent_share_min\":%.3f,\"agent_share_max\":%.3f",
                   k, lo, hi, (double)lo / mean_share, (double)hi / mean_share);
        }
        printf("}\n");
        fflush(stdout);
    }

    end_sessions(reqs);
    for (int i = 0; i < MAX_INFLIGHT; i++) {
        if (reqs[i].easy)
            curl_easy_cleanup(reqs[i].easy);
        curl_slist_free_all(reqs[i].headers);
        free(reqs[i].body);
        free(reqs[i].resp);
    }
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    free(lat);
    free(message);
    return 0;
}
