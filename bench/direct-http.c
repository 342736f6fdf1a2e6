/*
 * direct-http: bench/run's direct client for Streamable HTTP, in C on libcurl, so that the
 * baseline of the HTTP cases pays what the bridge pays for HTTP (libcurl) and not what node's
 * fetch does. The same sequence as driver.mjs: initialize, notifications/initialized,
 * tools/list (the tool named `echo`), warm-up calls, then for each concurrency level N calls of
 * `echo` with that many in flight (at least as many calls as in flight), each call's round trip
 * timed. One curl multi handle drives every request; its connection cache keeps the connections
 * alive between requests.
 *
 * Prints one JSON line per concurrency level, with the fields driver.mjs prints (p50_us, p99_us,
 * throughput, and the CPU and peak RSS of the --watch-pid process, the server).
 *
 *   direct-http URL [--calls N] [--warmup N] [--size BYTES] [--concurrency 1,16,64]
 *                   [--label TEXT] [--watch-pid PID]
 *
 * Built by bench/run: cc -O2 -o direct-http direct-http.c $(pkg-config --cflags --libs libcurl)
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_INFLIGHT 256
#define MAX_LEVELS   8
#define MAX_BODY     (64u * 1024u * 1024u) /* an answer larger than this is an error */

struct req {
    CURL *easy;
    struct curl_slist *headers;
    char *body; /* the request, owned */
    char *resp; /* the answer read so far, owned */
    size_t resp_len;
    size_t resp_cap;
    long id;
    double t0_us;
};

static const char *arg_url;
static const char *arg_label = "";
static long arg_calls = 2000, arg_warmup = 200, arg_size = 100, arg_watch_pid;
static long arg_levels[MAX_LEVELS] = {1, 16};
static int arg_nlevels = 2;
static char session[256];
static char protocol[64] = "2025-06-18";
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
    size_t len = size * n;
    static const char name[] = "mcp-session-id:";

    (void)userdata;
    if (!session[0] && len > sizeof(name) - 1 && strncasecmp(data, name, sizeof(name) - 1) == 0) {
        const char *v = data + sizeof(name) - 1;
        size_t vlen = len - (sizeof(name) - 1);

        while (vlen && (*v == ' ' || *v == '\t'))
            v++, vlen--;
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
            vlen--;
        if (vlen >= sizeof(session))
            vlen = sizeof(session) - 1;
        memcpy(session, v, vlen);
        session[vlen] = '\0';
    }
    return len;
}

/* Sets up r (whose easy handle is kept across requests) for one POST of body (taken). */
static void req_prepare(struct req *r, char *body, long id)
{
    char h[320];

    if (!r->easy) {
        r->easy = curl_easy_init();
        if (!r->easy)
            die("curl_easy_init failed");
    }
    curl_slist_free_all(r->headers);
    r->headers = curl_slist_append(NULL, "Content-Type: application/json");
    r->headers = curl_slist_append(r->headers, "Accept: application/json, text/event-stream");
    if (session[0]) {
        snprintf(h, sizeof(h), "Mcp-Session-Id: %s", session);
        r->headers = curl_slist_append(r->headers, h);
        snprintf(h, sizeof(h), "Mcp-Protocol-Version: %s", protocol);
        r->headers = curl_slist_append(r->headers, h);
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
    curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
    curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
}

static char *call_body(long id)
{
    static const char fmt[] = "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\","
                              "\"params\":{\"name\":\"%s\",\"arguments\":{\"message\":\"%s\"}}}";
    char *body;

    if (asprintf(&body, fmt, id, tool, message) < 0)
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
static void exchange(CURLM *multi, struct req *r, char *body, long id, bool want_answer)
{
    int running = 1;
    long status = 0;

    req_prepare(r, body, id);
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

static void setup(CURLM *multi, struct req *r)
{
    char *body;
    const char *p, *q;

    body = strdup("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                  "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                  "\"clientInfo\":{\"name\":\"bench-direct-http\",\"version\":\"1.0.0\"}}}");
    exchange(multi, r, body, next_id++, true);
    if (!session[0])
        die("initialize: no Mcp-Session-Id in the answer");
    p = strstr(r->resp, "\"protocolVersion\":\"");
    if (p) {
        p += strlen("\"protocolVersion\":\"");
        q = strchr(p, '"');
        if (q && (size_t)(q - p) < sizeof(protocol))
            snprintf(protocol, sizeof(protocol), "%.*s", (int)(q - p), p);
    }
    exchange(multi, r, strdup("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"), 0,
             false);
    if (asprintf(&body, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/list\"}", next_id) < 0)
        die("out of memory");
    exchange(multi, r, body, next_id++, true);
    if (!strstr(r->resp, "\"name\":\"echo\""))
        die("no tool named echo in %.300s", r->resp);
    snprintf(tool, sizeof(tool), "echo");
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
    for (long i = 0; i < inflight; i++, issued++) {
        req_prepare(&reqs[i], call_body(next_id), next_id);
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
            if (issued < n) {
                req_prepare(r, call_body(next_id), next_id);
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
        else
            die("unknown option '%s'", a);
    }
    if (!arg_url || arg_calls < 1)
        die("usage: direct-http URL [--calls N] [--warmup N] [--size BYTES] "
            "[--concurrency 1,16] [--label TEXT] [--watch-pid PID]");
}

int main(int argc, char **argv)
{
    static struct req reqs[MAX_INFLIGHT];
    double *lat;
    CURLM *multi;

    parse_args(argc, argv);
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
    setup(multi, &reqs[0]);
    if (arg_warmup)
        (void)run_calls(multi, reqs, arg_warmup, 1, NULL);

    for (int l = 0; l < arg_nlevels; l++) {
        struct sample before = {0, 0}, after;
        /* at least one call per slot in flight, or fewer would be in flight than the level says */
        long n = arg_calls > arg_levels[l] ? arg_calls : arg_levels[l];
        double secs;

        if (arg_watch_pid)
            before = proc_sample(arg_watch_pid);
        secs = run_calls(multi, reqs, n, arg_levels[l], lat);
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
        if (arg_watch_pid) {
            after = proc_sample(arg_watch_pid);
            printf(",\"pid_cpu_us_per_call\":%.2f,\"pid_sched_us_per_call\":%.2f,"
                   "\"pid_hwm_kb\":%ld",
                   (after.ticks - before.ticks) * 1e4 / (double)n,
                   (after.ns - before.ns) / 1e3 / (double)n, hwm_kb(arg_watch_pid));
        }
        printf("}\n");
        fflush(stdout);
    }

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
