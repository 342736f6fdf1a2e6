/* downstream_fixture.h - the agent's side of the downstream's tests, and their main().
 *
 * The agent is the test: it speaks over a socketpair with the downstream, on the same loop.
 * The upstreams are the test program itself run again as small MCP servers over stdio
 * (downstream_server.h), configured through a temporary mcp.json loaded with mcp_config_load().
 * Every wait is for a message, bounded by a timeout. A test program includes this header, defines
 * its tests and ends with DOWNSTREAM_TESTS_MAIN(bench or NULL, test_a, test_b, ...). */
#pragma once

#include "downstream/downstream.h"
#include "core/framing.h"
#include "core/loop.h"
#include "tests.h"

#include "downstream_server.h"

/* ---- the agent side ---------------------------------------------------------------------- */

struct fx {
    struct loop *loop;
    struct log *log;
    struct downstream *d;
    struct framing *fr; /* the agent's end */
    int sv[2];
    int log_fd;
    struct json_object *q[512]; /* received, in order; taken out when matched */
    size_t nq;
    bool done;
    int done_status;
    char log_path[4200];
};

static inline void fx_message(const char *msg, size_t len, void *userdata)
{
    struct fx *f = userdata;
    struct json_object *o = NULL;
    struct err e = ERR_INIT;
    if (json_parse(msg, len, len, &o, &e) < 0) {
        fprintf(stderr, "agent: not JSON from the bridge: %.*s\n", (int)len, msg);
        CHECK(false);
    } else if (f->nq < ELEMENTSOF(f->q)) {
        f->q[f->nq++] = o;
    } else {
        json_object_put(o);
    }
    loop_quit(f->loop, 0);
}

static inline void fx_error(int error, void *userdata)
{
    struct fx *f = userdata;
    (void)error;
    framing_free(f->fr);
    f->fr = NULL;
}

static inline void fx_done(int status, void *userdata)
{
    struct fx *f = userdata;
    f->done = true;
    f->done_status = status;
    loop_quit(f->loop, 0);
}

static inline void fx_quit(struct loop_timer *t, void *userdata)
{
    (void)t;
    loop_quit(userdata, 0);
}

static inline const char *tmp_path(const char *name)
{
    static char p[8][4200];
    static int i;
    i = (i + 1) % 8;
    snprintf(p[i], sizeof(p[i]), "%s/%s", tests_tmpdir(), name);
    return p[i];
}

/* Writes a configuration: @SELF@ in text becomes this program's path. */
static inline struct mcp_config *config_from(const char *text)
{
    char out[16384];
    size_t o = 0;
    for (const char *p = text; *p && o + 4200 < sizeof(out);) {
        if (strncmp(p, "@SELF@", 6) == 0) {
            o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", self_path);
            p += 6;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    const char *path = tmp_path("mcp.json");
    FILE *fp = fopen(path, "w");
    if (!fp || fputs(out, fp) < 0 || fclose(fp) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    struct mcp_config_opts opts = {.config_path = path};
    struct mcp_config *c = NULL;
    struct err e = ERR_INIT;
    if (mcp_config_load(&opts, &c, &e) < 0) {
        fprintf(stderr, "config: %s\n", err_msg(&e));
        exit(2);
    }
    for (size_t i = 0; i < mcp_config_count(c); i++)
        if (mcp_config_at(c, i)->error)
            fprintf(stderr, "config: %s\n", mcp_config_at(c, i)->error);
    return c;
}

/* fx_start() with single mode's --bridge-eras (downstream_opts.bridge_eras). */
static inline int fx_start_eras(struct fx *f, const char *config, enum downstream_mode mode,
                                const char *single, int64_t connect_timeout_ms, bool bridge_eras)
{
    static int n;
    memset(f, 0, sizeof(*f));
    f->sv[0] = f->sv[1] = f->log_fd = -1;
    if (loop_new(&f->loop) < 0)
        return -1;
    snprintf(f->log_path, sizeof(f->log_path), "%s/log-%d", tests_tmpdir(), ++n);
    f->log_fd = getenv("TEST_VERBOSE")
                    ? dup(2)
                    : open(f->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    f->log = log_new("test_downstream", f->log_fd);
    log_set_level(f->log, LOG_DEBUG);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, f->sv) < 0)
        return -1;
    struct framing_handler h = {.on_message = fx_message, .on_error = fx_error};
    if (framing_new(f->loop, f->sv[1], f->sv[1], &h, NULL, f, &f->fr) < 0)
        return -1;
    struct mcp_config *c = config_from(config);
    struct downstream_opts o = {
        .loop = f->loop,
        .log = f->log,
        .in_fd = f->sv[0],
        .out_fd = f->sv[0],
        .mode = mode,
        .config = c,
        .single_name = single,
        .bridge_eras = bridge_eras,
        .connect_timeout_ms = connect_timeout_ms,
        .on_done = fx_done,
        .userdata = f,
    };
    struct err e = ERR_INIT;
    int r = downstream_new(&o, &f->d, &e);
    mcp_config_free(c);
    if (r < 0)
        fprintf(stderr, "downstream_new: %s\n", err_msg(&e));
    return r;
}

static inline int fx_start(struct fx *f, const char *config, enum downstream_mode mode,
                           const char *single, int64_t connect_timeout_ms)
{
    return fx_start_eras(f, config, mode, single, connect_timeout_ms, false);
}

static inline void fx_stop(struct fx *f)
{
    downstream_free(f->d);
    framing_free(f->fr);
    for (size_t i = 0; i < f->nq; i++)
        json_object_put(f->q[i]);
    loop_free(f->loop);
    log_free(f->log);
    if (f->log_fd >= 0)
        close(f->log_fd);
    if (f->sv[0] >= 0)
        close(f->sv[0]);
    if (f->sv[1] >= 0)
        close(f->sv[1]);
}

static inline void fx_send(struct fx *f, const char *fmt, ...) _printf_(2, 3);
static inline void fx_send(struct fx *f, const char *fmt, ...)
{
    char text[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    CHECK(f->fr && framing_send(f->fr, text, strlen(text)) == 0);
}

typedef bool (*match_fn)(struct json_object *m, const char *a, const char *b);

/* Runs the loop until a received message matches (taken out of the queue and returned: the
 * caller puts it) or timeout_ms passed (NULL). */
static inline struct json_object *fx_wait(struct fx *f, match_fn match, const char *a,
                                          const char *b, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        for (size_t i = 0; i < f->nq; i++) {
            if (match(f->q[i], a, b)) {
                struct json_object *m = f->q[i];
                memmove(&f->q[i], &f->q[i + 1], (f->nq - i - 1) * sizeof(f->q[0]));
                f->nq--;
                return m;
            }
        }
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return NULL;
        struct loop_timer *t;
        if (loop_timer_add(f->loop, left, fx_quit, f->loop, &t) < 0)
            return NULL;
        int r = loop_run(f->loop);
        loop_timer_cancel(t);
        if (r < 0)
            return NULL;
    }
}

/* Runs the loop for ms (to see that something does not come). */
static inline void fx_idle(struct fx *f, int ms)
{
    int64_t deadline = now_ms() + ms;
    while (now_ms() < deadline) {
        struct loop_timer *t;
        if (loop_timer_add(f->loop, deadline - now_ms(), fx_quit, f->loop, &t) < 0)
            return;
        int r = loop_run(f->loop);
        loop_timer_cancel(t);
        if (r < 0)
            return;
    }
}

static inline bool match_id(struct json_object *m, const char *id, const char *unused)
{
    (void)unused;
    struct json_object *mid;
    return !json_object_object_get_ex(m, "method", NULL) &&
           json_object_object_get_ex(m, "id", &mid) && strcmp(jstr(mid), id) == 0;
}

/* a message with this method whose serialised params contain b (when given) */
static inline bool match_method(struct json_object *m, const char *method, const char *b)
{
    const char *mm = json_get_string(m, "method");
    return mm && strcmp(mm, method) == 0 &&
           (!b || strstr(jstr(json_object_object_get(m, "params")), b));
}

static inline struct json_object *fx_request(struct fx *f, const char *id, const char *method,
                                             const char *params)
{
    fx_send(f, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"%s\"%s%s}", id, method,
            params ? ",\"params\":" : "", params ? params : "");
    struct json_object *r = fx_wait(f, match_id, id, NULL, WAIT_MS);
    if (!r)
        fprintf(stderr, "no answer to %s %s\n", method, id);
    return r;
}

/* A tools/call of tool (its name as the agent knows it, without params) */
static inline struct json_object *call_tool(struct fx *f, const char *id, const char *tool)
{
    char params[256];
    snprintf(params, sizeof(params), "{\"name\":\"%s\"}", tool);
    return fx_request(f, id, "tools/call", params);
}

static inline struct json_object *path(struct json_object *o, const char *p)
{
    char key[128];
    while (o && *p) {
        size_t n = strcspn(p, ".");
        snprintf(key, sizeof(key), "%.*s", (int)n, p);
        char *end;
        long idx = strtol(key, &end, 10);
        if (*end == '\0' && json_object_is_type(o, json_type_array))
            o = json_object_array_get_idx(o, (size_t)idx);
        else
            o = json_object_object_get(o, key);
        p += n + (p[n] == '.');
    }
    return o;
}

static inline const char *path_str(struct json_object *o, const char *p)
{
    struct json_object *v = path(o, p);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static inline int64_t path_int(struct json_object *o, const char *p)
{
    struct json_object *v = path(o, p);
    return json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : INT64_MIN;
}

static inline void initialize(struct fx *f, const char *caps)
{
    struct json_object *r =
        fx_request(f, "0", "initialize",
                   caps ? caps
                        : "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                          "\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    fx_send(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

/* The names in a list result, joined by spaces. */
static inline const char *names_of(struct json_object *r, const char *key, const char *field)
{
    static char out[4096];
    size_t o = 0;
    out[0] = '\0';
    struct json_object *arr = path(path(r, "result"), key);
    for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
        const char *n = json_get_string(json_object_array_get_idx(arr, i), field);
        o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s", i ? " " : "", n ? n : "?");
    }
    return out;
}

static inline bool file_contains(const char *p, const char *needle)
{
    char buf[65536];
    FILE *fp = fopen(p, "r");
    if (!fp)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

#define SERVER(name, extra)                                                                        \
    "\"" name "\":{\"command\":\"@SELF@\",\"args\":[\"--server\",\"" name "\"" extra "]}"

/* ---- main -------------------------------------------------------------------------------- */

/* The main() of a downstream test program: "--server ..." is the scripted server, "--bench
 * ..." runs bench (when not NULL), anything else the tests fns, named by names ("a, b, c"). */
static inline int fx_main(int argc, char **argv, int (*bench)(int, char **), const char *names,
                          test_fn *fns, size_t n_fns)
{
    if (argc > 1 && strcmp(argv[1], "--server") == 0)
        return server_main(argc, argv);

    signal(SIGPIPE, SIG_IGN);
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
    if (n <= 0) {
        perror("readlink /proc/self/exe");
        return 2;
    }
    self_path[n] = '\0';
    /* no configuration of the user's may leak in */
    setenv("HOME", tests_tmpdir(), 1);
    setenv("XDG_CONFIG_HOME", tmp_path("xdg"), 1);
    setenv("PI_CODING_AGENT_DIR", tmp_path("pi"), 1);
    if (bench && argc > 1 && strcmp(argv[1], "--bench") == 0)
        return bench(argc, argv);

    return tests_run(names, fns, n_fns);
}

/* Defines main() running the tests given, in order. */
#define DOWNSTREAM_TESTS_MAIN(bench, ...)                                                          \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        test_fn fns_[] = {__VA_ARGS__};                                                            \
        return fx_main(argc, argv, bench, #__VA_ARGS__, fns_, ELEMENTSOF(fns_));                   \
    }
