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
 * with --malloc-count FILE, the allocation counters of malloc-count.so loaded into it).
 *
 *   direct-http URL [--calls N] [--warmup N] [--size BYTES] [--concurrency 1,16,64]
 *                   [--label TEXT] [--watch-pid PID] [--protocol VERSION] [--stateless]
 *                   [--agents] [--malloc-count FILE]
 *
 * Built by bench/run: cc -O2 -o direct-http direct-http.c $(pkg-config --cflags --libs libcurl)
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_INFLIGHT 256
#define MAX_LEVELS   8
#define MAX_BODY     (64u * 1024u * 1024u) /* an answer larger than this is an error */
#define SESSION_MAX  256

struct req {
    CURL *easy;
    struct curl_slist *headers;
    char *body; /* the request, owned */
    char *resp; /* the answer read so far, owned */
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
static bool arg_stateless, arg_agents;
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
            "[--stateless] [--agents] [--malloc-count FILE]");
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
    setup_agents(multi, reqs, 1);
    if (arg_warmup)
        (void)run_calls(multi, reqs, arg_warmup, 1, NULL);

    for (int l = 0; l < arg_nlevels; l++) {
        struct sample before = {0, 0}, after;
        struct allocs mbefore, mafter;
        /* at least one call per slot in flight, or fewer would be in flight than the level says */
        long n = arg_calls > arg_levels[l] ? arg_calls : arg_levels[l];
        double secs;

        setup_agents(multi, reqs, arg_levels[l]);
        mbefore = malloc_sample();
        if (arg_watch_pid)
            before = proc_sample(arg_watch_pid);
        secs = run_calls(multi, reqs, n, arg_levels[l], lat);
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
