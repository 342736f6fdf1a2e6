/* test_upstream.c - MCP client sessions against a scripted MCP server: this very program,
 * re-executed as "test_upstream --server SCENARIO" over stdio, and a tiny Streamable HTTP
 * server (libmicrohttpd on 127.0.0.1, its own thread) for sessions that expire.
 *
 * Covered: handshake (version negotiation, capabilities, serverInfo, instructions), a version
 * the bridge does not speak, answers out of order, progress tokens mapped both ways and the
 * timeout re-armed up to its hard maximum, a timeout sending notifications/cancelled and a
 * ping, a hung server restarted, a server exiting mid-call (-ECONNRESET, reconnect by itself,
 * and at once for a call made in BACKOFF), backoff growth, server requests through on_request
 * and upstream_respond (and -32601 without a handler), pings answered, notifications passed
 * on, pagination (3 pages, a cursor that never ends, -32601), ${VAR} in env (expanded and
 * missing), a command that does not exist, close reaping the child, free from inside
 * callbacks, and over HTTP: headers expanded at each connect, a lost session re-initialized
 * and the request sent again once, the headers hook asked again with force after a 401. */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <microhttpd.h>

#include "credkit/json.h"
#include "credkit/log.h"
#include "credkit/util.h"

#include "httpd.h"
#include "loop.h"
#include "tests.h"
#include "upstream.h"

__attribute__((constructor)) static void ignore_sigpipe(void)
{
    signal(SIGPIPE, SIG_IGN);
}

/* ==== the scripted server ================================================================ */

#define SQ_MAX 4096

struct sched {
    int64_t due;
    uint64_t seq;
    char *line;
};

static struct sched sq[SQ_MAX];
static int nsq;
static uint64_t sq_seq;
static const char *scenario;
static char cancels[8192];
static struct json_object *waiting_call; /* the tools/call waiting for the client's answer */

static void out_text(const char *s)
{
    if (write_full(1, s, strlen(s)) < 0 || write_full(1, "\n", 1) < 0)
        _exit(0);
}

static void out(struct json_object *o)
{
    out_text(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
}

static void later(int64_t delay, struct json_object *o)
{
    if (nsq < SQ_MAX) {
        sq[nsq].due = now_mono_ms() + delay;
        sq[nsq].seq = sq_seq++;
        sq[nsq].line = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        nsq++;
    }
    json_object_put(o);
}

static struct json_object *msg_new(struct json_object *id)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    if (id)
        json_object_object_add(o, "id", json_object_get(id));
    return o;
}

static struct json_object *result_text(struct json_object *id, const char *text)
{
    struct json_object *o = msg_new(id), *r = json_object_new_object(),
                       *content = json_object_new_array(), *t = json_object_new_object();
    json_object_object_add(t, "type", json_object_new_string("text"));
    json_object_object_add(t, "text", json_object_new_string(text));
    json_object_array_add(content, t);
    json_object_object_add(r, "content", content);
    json_object_object_add(o, "result", r);
    return o;
}

static struct json_object *error_msg(struct json_object *id, int code, const char *message)
{
    struct json_object *o = msg_new(id), *e = json_object_new_object();
    json_object_object_add(e, "code", json_object_new_int(code));
    json_object_object_add(e, "message", json_object_new_string(message));
    json_object_object_add(o, "error", e);
    return o;
}

static struct json_object *notification(const char *method, struct json_object *params)
{
    struct json_object *o = msg_new(NULL);
    json_object_object_add(o, "method", json_object_new_string(method));
    if (params)
        json_object_object_add(o, "params", params);
    return o;
}

static struct json_object *progress_msg(struct json_object *token, int i, int total)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "progressToken", json_object_get(token));
    json_object_object_add(p, "progress", json_object_new_int(i));
    if (total)
        json_object_object_add(p, "total", json_object_new_int(total));
    return notification("notifications/progress", p);
}

static int64_t arg_int(struct json_object *args, const char *key, int64_t def)
{
    int64_t v;
    return json_get_int64(args, key, &v) ? v : def;
}

static void tools_call(struct json_object *id, struct json_object *params)
{
    const char *name = json_get_string(params, "name");
    struct json_object *args = json_get_object(params, "arguments");
    char text[256];

    if (!name)
        name = "";
    if (strcmp(name, "echo") == 0) {
        const char *t = json_get_string(args, "text");
        out(result_text(id, t ? t : ""));
    } else if (strcmp(name, "delay") == 0) {
        const char *t = json_get_string(args, "text");
        later(arg_int(args, "ms", 0), result_text(id, t ? t : ""));
    } else if (strcmp(name, "progress") == 0 || strcmp(name, "progress_forever") == 0) {
        bool forever = strcmp(name, "progress_forever") == 0;
        struct json_object *meta = json_get_object(params, "_meta"), *tok = NULL;
        if (!meta || !json_object_object_get_ex(meta, "progressToken", &tok)) {
            out(error_msg(id, -32602, "no progress token"));
            return;
        }
        int64_t count = forever ? 200 : arg_int(args, "count", 1);
        int64_t every = arg_int(args, "every", 100);
        for (int64_t i = 1; i <= count; i++)
            later(i * every, progress_msg(tok, (int)i, forever ? 0 : (int)count));
        if (!forever) {
            snprintf(text, sizeof(text), "token:%s",
                     json_object_to_json_string_ext(tok, JSON_C_TO_STRING_PLAIN));
            later(count * every + every / 2, result_text(id, text));
        }
    } else if (strcmp(name, "slow") == 0) {
        fprintf(stderr, "slow %s\n", json_object_to_json_string(id));
    } else if (strcmp(name, "hang") == 0) {
        fprintf(stderr, "hanging\n");
        for (;;)
            pause();
    } else if (strcmp(name, "exit") == 0) {
        _exit(0);
    } else if (strcmp(name, "pid") == 0) {
        snprintf(text, sizeof(text), "%d", (int)getpid());
        out(result_text(id, text));
    } else if (strcmp(name, "env") == 0) {
        const char *v = getenv(json_get_string(args, "name") ? json_get_string(args, "name") : "");
        out(result_text(id, v ? v : "(unset)"));
    } else if (strcmp(name, "sample") == 0 || strcmp(name, "ping_client") == 0) {
        bool sample = strcmp(name, "sample") == 0;
        struct json_object *req =
            msg_new(json_object_new_string(sample ? "srv-sample" : "srv-ping"));
        json_object_put(json_object_get(req)); /* msg_new took its own reference */
        json_object_object_add(req, "method",
                               json_object_new_string(sample ? "sampling/createMessage" : "ping"));
        if (sample) {
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "messages", json_object_new_array());
            json_object_object_add(p, "maxTokens", json_object_new_int(5));
            json_object_object_add(req, "params", p);
        }
        json_object_put(waiting_call);
        waiting_call = json_object_get(id);
        out(req);
    } else if (strcmp(name, "notify") == 0) {
        struct json_object *p = json_object_new_object();
        json_object_object_add(p, "level", json_object_new_string("info"));
        json_object_object_add(p, "data", json_object_new_string("hello"));
        out(notification("notifications/message", p));
        out(notification("notifications/tools/list_changed", NULL));
        out(result_text(id, "notified"));
    } else if (strcmp(name, "garbage") == 0) {
        /* not JSON, then an answer that is not JSON-RPC (result and error both) */
        out_text("this is not json");
        struct json_object *m = msg_new(id), *e = json_object_new_object();
        json_object_object_add(m, "result", json_object_new_object());
        json_object_object_add(e, "code", json_object_new_int(1));
        json_object_object_add(e, "message", json_object_new_string("both"));
        json_object_object_add(m, "error", e);
        out(m);
    } else if (strcmp(name, "cancels") == 0) {
        out(result_text(id, cancels));
    } else {
        out(error_msg(id, -32602, "unknown tool"));
    }
}

static struct json_object *list_result(struct json_object *id, const char *key, int from, int n,
                                       const char *next)
{
    struct json_object *o = msg_new(id), *r = json_object_new_object(),
                       *arr = json_object_new_array();
    for (int i = from; i < from + n; i++) {
        char name[32];
        struct json_object *t = json_object_new_object();
        snprintf(name, sizeof(name), "t%d", i);
        json_object_object_add(t, "name", json_object_new_string(name));
        json_object_array_add(arr, t);
    }
    json_object_object_add(r, key, arr);
    if (next)
        json_object_object_add(r, "nextCursor", json_object_new_string(next));
    json_object_object_add(o, "result", r);
    return o;
}

static void handle_line(const char *line)
{
    struct json_object *o = json_tokener_parse(line), *id = NULL, *params = NULL;
    if (!o)
        return;
    const char *method = json_get_string(o, "method");
    (void)json_object_object_get_ex(o, "id", &id);
    params = json_get_object(o, "params");

    if (!method) {
        /* the client's answer to our request */
        if (waiting_call) {
            out(result_text(waiting_call,
                            json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)));
            json_object_put(waiting_call);
            waiting_call = NULL;
        }
    } else if (!id) {
        if (strcmp(method, "notifications/cancelled") == 0) {
            const char *reason = json_get_string(params, "reason");
            int64_t rid = arg_int(params, "requestId", -1);
            fprintf(stderr, "cancelled %lld %s\n", (long long)rid, reason ? reason : "-");
            size_t n = strlen(cancels);
            snprintf(cancels + n, sizeof(cancels) - n, "%lld:%s;", (long long)rid,
                     reason ? reason : "-");
        } else if (strcmp(method, "notifications/initialized") == 0) {
            fprintf(stderr, "initialized\n");
        }
    } else if (strcmp(method, "initialize") == 0 && strcmp(scenario, "initerror") == 0) {
        /* an error with a message far too long for a log line */
        static char big[100 * 1024];
        memset(big, 'x', sizeof(big) - 1);
        memcpy(big, "Unsupported protocol version", 28);
        out(error_msg(id, -32602, big));
    } else if (strcmp(method, "initialize") == 0 && strcmp(scenario, "mute") == 0) {
        fprintf(stderr, "not answering\n");
    } else if (strcmp(method, "initialize") == 0) {
        const char *offered = json_get_string(params, "protocolVersion");
        struct json_object *ci = json_get_object(params, "clientInfo");
        fprintf(stderr, "offered %s by %s\n", offered ? offered : "-",
                json_get_string(ci, "name") ? json_get_string(ci, "name") : "-");
        struct json_object *r = json_object_new_object(), *caps = json_object_new_object(),
                           *tools = json_object_new_object(), *info = json_object_new_object();
        json_object_object_add(r, "protocolVersion",
                               json_object_new_string(strcmp(scenario, "badversion") == 0
                                                          ? "1999-01-01"
                                                          : "2025-06-18"));
        json_object_object_add(tools, "listChanged", json_object_new_boolean(1));
        json_object_object_add(caps, "tools", tools);
        json_object_object_add(caps, "logging", json_object_new_object());
        json_object_object_add(r, "capabilities", caps);
        json_object_object_add(info, "name", json_object_new_string("scripted"));
        json_object_object_add(info, "version", json_object_new_string("1.2.3"));
        json_object_object_add(r, "serverInfo", info);
        json_object_object_add(r, "instructions", json_object_new_string("use the tools"));
        struct json_object *m = msg_new(id);
        json_object_object_add(m, "result", r);
        out(m);
    } else if (strcmp(method, "ping") == 0) {
        fprintf(stderr, "ping\n");
        struct json_object *m = msg_new(id);
        json_object_object_add(m, "result", json_object_new_object());
        out(m);
    } else if (strcmp(method, "tools/call") == 0) {
        tools_call(id, params);
    } else if (strcmp(method, "tools/list") == 0) {
        const char *cursor = json_get_string(params, "cursor");
        if (!cursor)
            out(list_result(id, "tools", 1, 2, "page-2"));
        else if (strcmp(cursor, "page-2") == 0)
            out(list_result(id, "tools", 3, 1, "page-3"));
        else if (strcmp(cursor, "page-3") == 0)
            out(list_result(id, "tools", 4, 2, NULL));
        else
            out(error_msg(id, -32602, "bad cursor"));
    } else if (strcmp(method, "resources/list") == 0) {
        /* a cursor that never ends: a new one each time */
        const char *cursor = json_get_string(params, "cursor");
        char next[32];
        snprintf(next, sizeof(next), "n%ld", cursor ? strtol(cursor + 1, NULL, 10) + 1 : 1);
        out(list_result(id, "resources", 1, 1, next));
    } else if (strcmp(method, "resources/templates/list") == 0) {
        out(list_result(id, "resourceTemplates", 1, 1, "again")); /* the same cursor again */
    } else {
        out(error_msg(id, -32601, "Method not found"));
    }
    fflush(stderr);
    json_object_put(o);
}

static int server_main(const char *sc)
{
    static char buf[1 << 20];
    size_t n = 0;

    scenario = sc;
    if (strcmp(sc, "dies") == 0)
        _exit(3);
    for (;;) {
        int64_t now = now_mono_ms();
        int timeout = -1;
        for (;;) {
            int best = -1;
            for (int i = 0; i < nsq; i++)
                if (sq[i].due <= now && (best < 0 || sq[i].due < sq[best].due ||
                                         (sq[i].due == sq[best].due && sq[i].seq < sq[best].seq)))
                    best = i;
            if (best < 0)
                break;
            out_text(sq[best].line);
            free(sq[best].line);
            sq[best] = sq[--nsq];
        }
        for (int i = 0; i < nsq; i++) {
            int64_t d = sq[i].due - now;
            if (timeout < 0 || d < timeout)
                timeout = (int)(d < 0 ? 0 : d);
        }
        struct pollfd p = {.fd = 0, .events = POLLIN};
        int r = poll(&p, 1, timeout);
        if (r <= 0)
            continue;
        ssize_t k = read(0, buf + n, sizeof(buf) - 1 - n);
        if (k <= 0)
            _exit(0);
        n += (size_t)k;
        buf[n] = 0;
        char *start = buf, *nl;
        while ((nl = memchr(start, '\n', n - (size_t)(start - buf)))) {
            *nl = 0;
            handle_line(start);
            start = nl + 1;
        }
        n -= (size_t)(start - buf);
        memmove(buf, start, n);
        if (n == sizeof(buf) - 1)
            _exit(4);
    }
}

/* ==== the client side ====================================================================== */

static char self_exe[PATH_MAX];
static struct log *lg;

#define MAX_STATES 64
#define MAX_LINES  512
#define MAX_NOTES  16

struct rec {
    struct loop *loop;
    struct upstream *u;
    enum upstream_state states[MAX_STATES];
    int errors[MAX_STATES];
    char *msgs[MAX_STATES];
    int64_t at[MAX_STATES];
    int nstates;
    char *lines[MAX_LINES];
    int nlines;
    char *notes[MAX_NOTES];
    int note_seq[MAX_NOTES];
    int nnotes;
    struct json_object *request; /* the last server request */
    uint64_t request_gen;
    bool free_on_ready;
};

static int seq_counter;

static void rec_release(struct rec *r)
{
    for (int i = 0; i < r->nstates; i++)
        free(r->msgs[i]);
    for (int i = 0; i < r->nlines; i++)
        free(r->lines[i]);
    for (int i = 0; i < r->nnotes; i++)
        free(r->notes[i]);
    json_object_put(r->request);
    loop_free(r->loop);
    memset(r, 0, sizeof(*r));
}

static void on_state(struct upstream *u, enum upstream_state s, int error, const char *message,
                     void *userdata)
{
    struct rec *r = userdata;
    if (r->nstates < MAX_STATES) {
        r->states[r->nstates] = s;
        r->errors[r->nstates] = error;
        r->msgs[r->nstates] = message ? strdup(message) : NULL;
        r->at[r->nstates] = loop_now(r->loop);
        r->nstates++;
    }
    if (getenv("UPSTREAM_TEST_DEBUG"))
        fprintf(stderr, "[%s] %s %d %s\n", upstream_name(u), upstream_state_name(s), error,
                message ? message : "");
    if (s == UPSTREAM_READY && r->free_on_ready) {
        upstream_free(u);
        r->u = NULL;
    }
}

static void on_stderr(struct upstream *u, const char *line, size_t len, void *userdata)
{
    struct rec *r = userdata;
    (void)u;
    if (r->nlines < MAX_LINES)
        r->lines[r->nlines++] = strndup(line, len);
}

static void on_request(struct upstream *u, uint64_t gen, struct json_object *msg, void *userdata)
{
    struct rec *r = userdata;
    (void)u;
    json_object_put(r->request);
    r->request = json_object_get(msg);
    r->request_gen = gen;
}

static void on_notification(struct upstream *u, const char *method, struct json_object *msg,
                            void *userdata)
{
    struct rec *r = userdata;
    (void)u, (void)msg;
    if (r->nnotes < MAX_NOTES) {
        r->note_seq[r->nnotes] = ++seq_counter;
        r->notes[r->nnotes++] = strdup(method);
    }
}

static const struct upstream_handler handler = {
    .on_state = on_state,
    .on_request = on_request,
    .on_notification = on_notification,
    .on_stderr = on_stderr,
};

/* One call's outcome. */
struct res {
    bool done;
    int error;
    char *message;
    char *text; /* result.content[0].text, or the error object as JSON */
    bool rpc_error;
    int64_t id;
    int seq;
    int64_t at;
    int progress;
    char *progress_tok;
    struct upstream_call *call;
};

static void res_release(struct res *r)
{
    free(r->message);
    free(r->text);
    free(r->progress_tok);
    memset(r, 0, sizeof(*r));
}

static void on_resp(struct upstream_call *c, struct json_object *resp, int error,
                    const char *message, void *userdata)
{
    struct res *r = userdata;
    (void)c;
    r->done = true;
    r->error = error;
    r->message = message ? strdup(message) : NULL;
    r->seq = ++seq_counter;
    r->at = now_mono_ms();
    r->call = NULL;
    if (resp) {
        struct json_object *v;
        if (json_object_object_get_ex(resp, "id", &v))
            r->id = json_object_get_int64(v);
        if (json_object_object_get_ex(resp, "error", &v)) {
            r->rpc_error = true;
            r->text = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        } else {
            struct json_object *res = json_get_object(resp, "result");
            struct json_object *content = json_get_array(res, "content");
            struct json_object *first = content ? json_object_array_get_idx(content, 0) : NULL;
            const char *t = json_get_string(first, "text");
            r->text = strdup(t ? t : "");
        }
    }
}

static void on_prog(struct upstream_call *c, struct json_object *params, void *userdata)
{
    struct res *r = userdata;
    struct json_object *tok = NULL;
    (void)c;
    r->progress++;
    free(r->progress_tok);
    r->progress_tok = json_object_object_get_ex(params, "progressToken", &tok)
                          ? strdup(json_object_to_json_string_ext(tok, JSON_C_TO_STRING_PLAIN))
                          : NULL;
}

/* tools/call name {args}, with an optional progress token */
static void call_tool(struct upstream *u, const char *name, const char *args_json,
                      const char *token, int64_t timeout_ms, struct res *r)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "name", json_object_new_string(name));
    json_object_object_add(p, "arguments",
                           args_json ? json_tokener_parse(args_json) : json_object_new_object());
    if (token) {
        struct json_object *meta = json_object_new_object();
        json_object_object_add(meta, "progressToken", json_object_new_string(token));
        json_object_object_add(p, "_meta", meta);
    }
    memset(r, 0, sizeof(*r));
    CHECK_INT(
        upstream_call(u, "tools/call", p, timeout_ms, on_resp, token ? on_prog : NULL, r, &r->call),
        0);
    json_object_put(p);
}

/* ---- waiting on conditions, bounded ---- */

typedef bool (*pred_fn)(void *ctx);

struct waiter {
    struct loop *l;
    pred_fn p;
    void *ctx;
};

static void waiter_tick(struct loop_timer *t, void *userdata)
{
    struct waiter *w = userdata;
    if (w->p(w->ctx))
        loop_quit(w->l, 0);
    else
        loop_timer_rearm(t, 5);
}

static void waiter_deadline(struct loop_timer *t, void *userdata)
{
    (void)t;
    loop_quit(userdata, -ETIMEDOUT);
}

static bool wait_for(struct loop *l, pred_fn p, void *ctx, int64_t ms)
{
    struct waiter w = {l, p, ctx};
    struct loop_timer *tick = NULL, *deadline = NULL;
    if (p(ctx))
        return true;
    CHECK_INT(loop_timer_add(l, 5, waiter_tick, &w, &tick), 0);
    CHECK_INT(loop_timer_add(l, ms, waiter_deadline, l, &deadline), 0);
    int r = loop_run(l);
    loop_timer_cancel(tick);
    loop_timer_cancel(deadline);
    return r == 0 && p(ctx);
}

static bool res_done(void *ctx)
{
    return ((struct res *)ctx)->done;
}

struct state_wait {
    struct rec *r;
    enum upstream_state s;
    int count; /* how many times seen */
};

static int state_count(struct rec *r, enum upstream_state s)
{
    int n = 0;
    for (int i = 0; i < r->nstates; i++)
        n += r->states[i] == s;
    return n;
}

static bool state_seen(void *ctx)
{
    struct state_wait *w = ctx;
    return state_count(w->r, w->s) >= w->count;
}

static bool wait_state(struct rec *r, enum upstream_state s, int count, int64_t ms)
{
    struct state_wait w = {r, s, count};
    bool ok = wait_for(r->loop, state_seen, &w, ms);
    if (!ok)
        fprintf(stderr, "state %s (x%d) not reached\n", upstream_state_name(s), count);
    return ok;
}

static bool wait_res(struct loop *l, struct res *r, int64_t ms)
{
    bool ok = wait_for(l, res_done, r, ms);
    if (!ok)
        fprintf(stderr, "no answer within %lld ms\n", (long long)ms);
    return ok;
}

struct line_wait {
    struct rec *r;
    const char *prefix;
};

static const char *find_line(struct rec *r, const char *prefix)
{
    for (int i = 0; i < r->nlines; i++)
        if (strncmp(r->lines[i], prefix, strlen(prefix)) == 0)
            return r->lines[i];
    return NULL;
}

static bool line_seen(void *ctx)
{
    struct line_wait *w = ctx;
    return find_line(w->r, w->prefix) != NULL;
}

static int count_lines(struct rec *r, const char *prefix)
{
    int n = 0;
    for (int i = 0; i < r->nlines; i++)
        n += strncmp(r->lines[i], prefix, strlen(prefix)) == 0;
    return n;
}

struct lines_wait {
    struct rec *r;
    const char *prefix;
    int count;
};

static bool lines_seen(void *ctx)
{
    struct lines_wait *w = ctx;
    return count_lines(w->r, w->prefix) >= w->count;
}

static bool wait_lines(struct rec *r, const char *prefix, int count, int64_t ms)
{
    struct lines_wait w = {r, prefix, count};
    bool ok = wait_for(r->loop, lines_seen, &w, ms);
    if (!ok)
        fprintf(stderr, "no %d stderr lines '%s'\n", count, prefix);
    return ok;
}

static bool wait_line(struct rec *r, const char *prefix, int64_t ms)
{
    struct line_wait w = {r, prefix};
    bool ok = wait_for(r->loop, line_seen, &w, ms);
    if (!ok)
        fprintf(stderr, "no stderr line '%s'\n", prefix);
    return ok;
}

static bool request_seen(void *ctx)
{
    return ((struct rec *)ctx)->request != NULL;
}

static bool pid_gone(void *ctx)
{
    pid_t pid = *(pid_t *)ctx;
    return kill(pid, 0) < 0 && errno == ESRCH;
}

/* ---- servers ---- */

static char *empty_v[] = {NULL};

struct srv_def {
    struct mcp_server s;
    char *args[3];
};

static void stdio_def(struct srv_def *d, const char *name, const char *sc, char **env)
{
    memset(d, 0, sizeof(*d));
    d->args[0] = "--server";
    d->args[1] = (char *)sc;
    d->s.name = (char *)name;
    d->s.source = "test";
    d->s.transport = MCP_TRANSPORT_STDIO;
    d->s.command = self_exe;
    d->s.args = d->args;
    d->s.env = env ? env : empty_v;
    d->s.headers = empty_v;
}

static const char *token_value = "tok-one";

static int test_lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    (void)userdata, (void)e;
    const char *v = strcmp(name, "WHO") == 0     ? "world"
                    : strcmp(name, "TOKEN") == 0 ? token_value
                                                 : NULL;
    if (!v)
        return -ENOENT;
    *ret = strdup(v);
    return *ret ? 0 : -ENOMEM;
}

static struct upstream *start(struct rec *r, const struct mcp_server *s, bool no_reconnect,
                              const struct upstream_handler *h)
{
    struct upstream_opts o = {
        .loop = r->loop,
        .log = lg,
        .server = s,
        .lookup = test_lookup,
        .no_reconnect = no_reconnect,
    };
    struct err e = ERR_INIT;
    struct upstream *u = NULL;
    int k = upstream_new(&o, h ? h : &handler, r, &u, &e);
    CHECK_INT(k, 0);
    if (k < 0) {
        fprintf(stderr, "upstream_new: %s\n", err_msg(&e));
        exit(2);
    }
    r->u = u;
    return u;
}

static struct loop *new_loop(void)
{
    struct loop *l = NULL;
    if (loop_new(&l) < 0)
        exit(2);
    return l;
}

static bool loop_drained(struct loop *l)
{
    alarm(20);
    int r = loop_run(l);
    alarm(0);
    return r == 0;
}

static pid_t call_pid(struct rec *r)
{
    struct res res;
    call_tool(r->u, "pid", NULL, NULL, 5000, &res);
    if (!wait_res(r->loop, &res, 10000) || res.error) {
        res_release(&res);
        return -1;
    }
    pid_t pid = (pid_t)strtol(res.text, NULL, 10);
    res_release(&res);
    return pid;
}

/* ---- tests ---- */

static void test_handshake_and_close(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "hs", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);

    CHECK_INT(upstream_state(u), UPSTREAM_IDLE);
    CHECK(upstream_server_capabilities(u) == NULL);
    CHECK_INT(upstream_generation(u), 0);
    CHECK_STR(upstream_name(u), "hs");
    CHECK(upstream_server(u) != &d.s);
    upstream_connect(u);
    CHECK_INT(r.nstates, 0); /* callbacks only from the loop */
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    CHECK_INT(r.states[0], UPSTREAM_CONNECTING);
    CHECK_INT(upstream_generation(u), 1);
    CHECK_STR(upstream_protocol_version(u), "2025-06-18");
    CHECK_STR(upstream_instructions(u), "use the tools");
    CHECK_STR(json_get_string(upstream_server_info(u), "name"), "scripted");
    CHECK(upstream_has_capability(u, "tools"));
    CHECK(upstream_has_capability(u, "logging"));
    CHECK(!upstream_has_capability(u, "prompts"));
    CHECK(wait_line(&r, "initialized", 5000));
    CHECK(find_line(&r, "offered 2025-11-25 by mcp-bridge") != NULL);

    struct res a;
    call_tool(u, "echo", "{\"text\":\"hi\"}", NULL, 0, &a);
    CHECK(wait_res(r.loop, &a, 5000));
    CHECK_INT(a.error, 0);
    CHECK_STR(a.text, "hi");
    CHECK(a.id > 1); /* 1 was initialize */

    pid_t pid = call_pid(&r);
    CHECK(pid > 0);

    /* close: the call in flight fails -ESHUTDOWN, CLOSING then CLOSED, the child reaped */
    struct res slow, after, many[150];
    call_tool(u, "slow", NULL, NULL, 0, &slow);
    for (int i = 0; i < 150; i++) /* the id map grows past its first size */
        call_tool(u, "slow", NULL, NULL, 0, &many[i]);
    CHECK(wait_lines(&r, "slow", 151, 10000));
    upstream_close(u);
    upstream_close(u); /* idempotent */
    CHECK_INT(upstream_state(u), UPSTREAM_CLOSING);
    CHECK(!slow.done);
    call_tool(u, "echo", NULL, NULL, 0, &after);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    CHECK(slow.done);
    CHECK_INT(slow.error, -ESHUTDOWN);
    CHECK_CONTAINS(slow.message, "server 'hs'");
    CHECK(after.done);
    CHECK_INT(after.error, -ESHUTDOWN);
    for (int i = 0; i < 150; i++) {
        CHECK_INT(many[i].error, -ESHUTDOWN);
        res_release(&many[i]);
    }
    CHECK_INT(state_count(&r, UPSTREAM_CLOSING), 1);
    CHECK(pid > 0 && pid_gone(&pid));
    upstream_connect(u); /* a no-op once closed */
    CHECK_INT(upstream_state(u), UPSTREAM_CLOSED);

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&a);
    res_release(&slow);
    res_release(&after);
    rec_release(&r);
}

static void test_bad_version(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "bv", "badversion", NULL);
    struct upstream *u = start(&r, &d.s, true, NULL);
    struct res w;
    call_tool(u, "echo", NULL, NULL, 5000, &w); /* waits, and starts the connect */
    CHECK_INT(upstream_state(u), UPSTREAM_CONNECTING);
    CHECK(wait_state(&r, UPSTREAM_FAILED, 1, 10000));
    int i = r.nstates - 1;
    CHECK_INT(r.errors[i], -EPROTO);
    CHECK_CONTAINS(r.msgs[i], "server 'bv'");
    CHECK_CONTAINS(r.msgs[i], "'1999-01-01'");
    CHECK_CONTAINS(upstream_last_error(u), "1999-01-01");
    CHECK(wait_res(r.loop, &w, 5000));
    CHECK_INT(w.error, -ENOTCONN);
    CHECK_CONTAINS(w.message, "1999-01-01");
    CHECK_INT(upstream_generation(u), 0);
    upstream_free(u);
    res_release(&w);
    rec_release(&r);

    /* reconnecting: the failed connect goes to BACKOFF */
    r.loop = new_loop();
    u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 1, 10000));
    CHECK_INT(r.errors[r.nstates - 1], -EPROTO);
    upstream_close(u);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

/* a server that never answers initialize: the connect times out */
/* initialize answered with a JSON-RPC error: the connect fails (-EPROTO) with the server's
 * message, bounded, and the upstream retries later */
static void test_init_error(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "ie", "initerror", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 1, 10000));
    int i = r.nstates - 1;
    CHECK_INT(r.errors[i], -EPROTO);
    CHECK_CONTAINS(r.msgs[i], "server 'ie': initialize failed: Unsupported protocol version");
    CHECK(r.msgs[i] && strlen(r.msgs[i]) < 1024);
    CHECK_INT(state_count(&r, UPSTREAM_READY), 0);
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

static void test_connect_timeout(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "mute", "mute", NULL);
    struct upstream_opts o = {.loop = r.loop, .log = lg, .server = &d.s, .connect_timeout_ms = 300};
    struct upstream *u = NULL;
    CHECK_INT(upstream_new(&o, &handler, &r, &u, NULL), 0);
    r.u = u;
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 1, 10000));
    int i = r.nstates - 1;
    CHECK_INT(r.states[i - 1], UPSTREAM_CONNECTING);
    CHECK(r.at[i] - r.at[i - 1] >= 300);
    CHECK_INT(r.errors[i], -ETIMEDOUT);
    CHECK_STR(r.msgs[i], "server 'mute': connect timed out after 300 ms");
    CHECK(find_line(&r, "not answering") != NULL);
    upstream_close(u);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

/* lines that are not JSON are skipped; an answer that is not JSON-RPC fails its call */
static void test_bad_messages(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "junk", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    struct res g, e;
    call_tool(u, "garbage", NULL, NULL, 5000, &g);
    CHECK(wait_res(r.loop, &g, 10000));
    CHECK_INT(g.error, -EPROTO);
    CHECK_CONTAINS(g.message, "server 'junk' answered 'tools/call' with a message that is not "
                              "JSON-RPC");
    call_tool(u, "echo", "{\"text\":\"still\"}", NULL, 5000, &e);
    CHECK(wait_res(r.loop, &e, 5000));
    CHECK_STR(e.text, "still");
    CHECK_INT(upstream_generation(u), 1);
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&g);
    res_release(&e);
    rec_release(&r);
}

static void test_out_of_order(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "ooo", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);

    /* made while connecting: they wait for READY */
    struct res a, b, many[20];
    call_tool(u, "delay", "{\"ms\":300,\"text\":\"A\"}", NULL, 5000, &a);
    call_tool(u, "delay", "{\"ms\":0,\"text\":\"B\"}", NULL, 5000, &b);
    for (int i = 0; i < 20; i++) {
        char args[64];
        snprintf(args, sizeof(args), "{\"ms\":%d,\"text\":\"m%d\"}", (i * 37) % 200, i);
        call_tool(u, "delay", args, NULL, 5000, &many[i]);
    }
    CHECK(wait_res(r.loop, &a, 10000));
    CHECK(b.done);
    CHECK_INT(a.error, 0);
    CHECK_INT(b.error, 0);
    CHECK_STR(a.text, "A");
    CHECK_STR(b.text, "B");
    CHECK(b.seq < a.seq);
    CHECK(a.id != b.id);
    for (int i = 0; i < 20; i++) {
        char want[16];
        snprintf(want, sizeof(want), "m%d", i);
        CHECK(many[i].done);
        CHECK_STR(many[i].text, want);
        res_release(&many[i]);
    }
    CHECK_INT(state_count(&r, UPSTREAM_READY), 1);
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&a);
    res_release(&b);
    rec_release(&r);
}

static void test_progress(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "prog", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));

    /* 4 progress notifications 100 ms apart, answer at 450 ms: past the 250 ms timeout, but
     * each progress re-arms it */
    struct res p;
    /* from the loop's clock, as the call's timers are: now_mono_ms() here can be a few ms
     * later than the loop_now() the call starts from, and the bounds below would race */
    int64_t t0 = loop_now(r.loop);
    call_tool(u, "progress", "{\"count\":4,\"every\":100}", "tok-1", 250, &p);
    CHECK(wait_res(r.loop, &p, 5000));
    CHECK_INT(p.error, 0);
    CHECK(p.at - t0 >= 400);
    CHECK_INT(p.progress, 4);
    CHECK_STR(p.progress_tok, "\"tok-1\""); /* the caller's token, put back */
    char want[64];
    snprintf(want, sizeof(want), "token:%lld", (long long)p.id);
    CHECK_STR(p.text, want); /* the server saw the call's own id */

    /* endless progress: the hard maximum is 10 x the timeout */
    struct res f;
    t0 = loop_now(r.loop);
    call_tool(u, "progress_forever", "{\"every\":30}", "tok-2", 100, &f);
    CHECK(wait_res(r.loop, &f, 5000));
    CHECK_INT(f.error, -ETIMEDOUT);
    CHECK(f.at - t0 >= 1000);
    CHECK(f.at - t0 < 1800);
    CHECK(f.progress > 10);
    CHECK_CONTAINS(f.message, "server 'prog'");
    CHECK_CONTAINS(f.message, "did not finish");
    CHECK(wait_line(&r, "cancelled", 5000));
    char cl[64];
    CHECK(wait_line(&r, "ping", 5000));
    snprintf(cl, sizeof(cl), "cancelled %lld timed out", (long long)(p.id + 1));
    CHECK(find_line(&r, cl) != NULL);

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&p);
    res_release(&f);
    rec_release(&r);
}

static void test_timeout_cancels(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "to", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    pid_t pid = call_pid(&r);

    struct res s;
    int64_t t0 = now_mono_ms();
    call_tool(u, "slow", NULL, NULL, 200, &s);
    CHECK(wait_res(r.loop, &s, 5000));
    CHECK_INT(s.error, -ETIMEDOUT);
    CHECK(s.at - t0 >= 190);
    CHECK_CONTAINS(s.message, "server 'to' did not answer 'tools/call' within 200 ms");
    /* the server got notifications/cancelled for that id, then a ping, which it answered */
    CHECK(wait_line(&r, "ping", 5000));
    const char *slow = find_line(&r, "slow ");
    CHECK(slow != NULL);
    char want[64];
    snprintf(want, sizeof(want), "cancelled %s timed out", slow ? slow + 5 : "?");
    CHECK(find_line(&r, want) != NULL);

    struct res c;
    call_tool(u, "cancels", NULL, NULL, 0, &c);
    CHECK(wait_res(r.loop, &c, 5000));
    snprintf(want, sizeof(want), "%s:timed out;", slow ? slow + 5 : "?");
    CHECK_STR(c.text, want);
    /* not treated as hung */
    CHECK_INT(upstream_generation(u), 1);
    CHECK_INT(call_pid(&r), pid);

    /* a cancelled call: notifications/cancelled with its id and reason, no callback */
    struct res x;
    call_tool(u, "slow", NULL, NULL, 0, &x);
    CHECK(wait_lines(&r, "slow ", 2, 5000));
    upstream_call_cancel(x.call, "user gave up");
    struct res c2;
    call_tool(u, "cancels", NULL, NULL, 0, &c2);
    CHECK(wait_res(r.loop, &c2, 5000));
    CHECK_CONTAINS(c2.text, ":user gave up;");
    CHECK(!x.done);
    CHECK(wait_lines(&r, "cancelled", 2, 5000));

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&s);
    res_release(&c);
    res_release(&c2);
    res_release(&x);
    rec_release(&r);
}

static void test_hung_server_restarted(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "hung", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    pid_t old = call_pid(&r);

    struct res h, inflight;
    call_tool(u, "hang", NULL, NULL, 200, &h);
    CHECK(wait_line(&r, "hanging", 5000));
    call_tool(u, "echo", NULL, NULL, 30000, &inflight); /* never read by the hung server */
    CHECK(wait_res(r.loop, &h, 5000));
    CHECK_INT(h.error, -ETIMEDOUT);
    int64_t t_timeout = loop_now(r.loop);
    /* the ping goes unanswered for UPSTREAM_PING_TIMEOUT_MS: restarted */
    CHECK(wait_state(&r, UPSTREAM_READY, 2, UPSTREAM_PING_TIMEOUT_MS + 10000));
    int i = r.nstates - 2;
    CHECK_INT(r.states[i], UPSTREAM_CONNECTING);
    CHECK(r.at[i] - t_timeout >= UPSTREAM_PING_TIMEOUT_MS - 5);
    CHECK(inflight.done);
    CHECK_INT(inflight.error, -ECONNRESET);
    CHECK_INT(upstream_generation(u), 2);
    pid_t now_pid = call_pid(&r);
    CHECK(now_pid > 0 && now_pid != old);
    /* the hung one is shut down (SIGTERM after the stdin grace) and reaped */
    CHECK(wait_for(r.loop, pid_gone, &old, 10000));

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&h);
    res_release(&inflight);
    rec_release(&r);
}

static void test_exit_mid_call(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "ex", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    pid_t first = call_pid(&r);

    struct res s, e;
    call_tool(u, "slow", NULL, NULL, 0, &s);
    call_tool(u, "exit", NULL, NULL, 0, &e);
    CHECK(wait_res(r.loop, &e, 5000));
    CHECK(wait_res(r.loop, &s, 5000));
    CHECK_INT(e.error, -ECONNRESET);
    CHECK_INT(s.error, -ECONNRESET);
    CHECK_STR(e.message, "server 'ex': the connection was lost before 'tools/call' was "
                         "answered: the server exited or closed its output");
    CHECK(state_count(&r, UPSTREAM_BACKOFF) == 1);

    /* reconnects by itself after the first backoff step */
    CHECK(wait_state(&r, UPSTREAM_READY, 2, 10000));
    int b = -1;
    for (int i = 0; i < r.nstates; i++)
        if (r.states[i] == UPSTREAM_BACKOFF)
            b = i;
    CHECK(b >= 0 && b + 1 < r.nstates && r.states[b + 1] == UPSTREAM_CONNECTING);
    if (b >= 0 && b + 1 < r.nstates) {
        int64_t delay = r.at[b + 1] - r.at[b];
        CHECK(delay >= UPSTREAM_BACKOFF_INITIAL_MS);
        CHECK(delay <= UPSTREAM_BACKOFF_INITIAL_MS * 5 / 4 + 20);
    }
    CHECK_INT(upstream_generation(u), 2);
    pid_t second = call_pid(&r);
    CHECK(second > 0 && second != first);

    /* again; now a call made in BACKOFF connects at once (the backoff is 1 s by now) */
    struct res e2, ok;
    call_tool(u, "exit", NULL, NULL, 0, &e2);
    CHECK(wait_res(r.loop, &e2, 5000));
    CHECK_INT(e2.error, -ECONNRESET);
    CHECK_INT(upstream_state(u), UPSTREAM_BACKOFF);
    int64_t t_call = loop_now(r.loop);
    call_tool(u, "echo", "{\"text\":\"back\"}", NULL, 5000, &ok);
    CHECK(wait_res(r.loop, &ok, 5000));
    CHECK_INT(ok.error, 0);
    CHECK_STR(ok.text, "back");
    CHECK(ok.at - t_call < 900); /* well before the 1 s backoff */
    CHECK_INT(upstream_generation(u), 3);
    int c = r.nstates - 2;
    CHECK_INT(r.states[c], UPSTREAM_CONNECTING);
    CHECK(r.at[c] - t_call < 300);

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    CHECK(pid_gone(&first));
    CHECK(pid_gone(&second));
    res_release(&s);
    res_release(&e);
    res_release(&e2);
    res_release(&ok);
    rec_release(&r);
}

static void test_backoff_growth(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "dies", "dies", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 4, 20000));
    int64_t delays[3];
    int nd = 0;
    for (int i = 0; i + 1 < r.nstates && nd < 3; i++) {
        if (r.states[i] != UPSTREAM_BACKOFF)
            continue;
        CHECK_INT(r.states[i + 1], UPSTREAM_CONNECTING);
        CHECK_INT(r.errors[i], -ECONNRESET);
        CHECK_CONTAINS(r.msgs[i], "server 'dies'");
        delays[nd++] = r.at[i + 1] - r.at[i];
    }
    CHECK_INT(nd, 3);
    for (int i = 0; i < nd; i++) {
        int64_t base = (int64_t)UPSTREAM_BACKOFF_INITIAL_MS << i;
        if (delays[i] < base || delays[i] > base * 5 / 4 + 20)
            fprintf(stderr, "backoff step %d: %lld ms\n", i, (long long)delays[i]);
        CHECK(delays[i] >= base);
        CHECK(delays[i] <= base * 5 / 4 + 20);
    }
    CHECK_CONTAINS(upstream_last_error(u), "server 'dies'");
    upstream_close(u);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

static void test_server_requests(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "req", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));

    /* sampling/createMessage goes to on_request; the answer for another generation is dropped */
    struct res s;
    call_tool(u, "sample", NULL, NULL, 5000, &s);
    struct json_object **req = &r.request;
    CHECK(wait_for(r.loop, request_seen, &r, 5000));
    CHECK_STR(json_get_string(*req, "method"), "sampling/createMessage");
    CHECK_INT(r.request_gen, upstream_generation(u));
    struct json_object *id = NULL;
    CHECK(json_object_object_get_ex(*req, "id", &id));
    struct json_object *stale = json_tokener_parse("{\"model\":\"stale\"}");
    struct json_object *real =
        json_tokener_parse("{\"model\":\"real-model\",\"role\":\"assistant\",\"content\":{\"type\":"
                           "\"text\",\"text\":\"x\"}}");
    CHECK_INT(upstream_respond(u, r.request_gen + 1, id, stale, NULL), 0);
    CHECK_INT(upstream_respond(u, r.request_gen, id, NULL, NULL), -EINVAL);
    CHECK_INT(upstream_respond(u, r.request_gen, id, real, NULL), 0);
    json_object_put(stale);
    json_object_put(real);
    CHECK(wait_res(r.loop, &s, 5000));
    CHECK_INT(s.error, 0);
    CHECK_CONTAINS(s.text, "real-model");
    CHECK_CONTAINS(s.text, "\"id\":\"srv-sample\"");
    CHECK(strstr(s.text ? s.text : "", "stale") == NULL);

    /* the server pings us: answered by the upstream */
    struct res p;
    json_object_put(r.request);
    r.request = NULL;
    call_tool(u, "ping_client", NULL, NULL, 5000, &p);
    CHECK(wait_res(r.loop, &p, 5000));
    CHECK_INT(p.error, 0);
    CHECK_CONTAINS(p.text, "\"id\":\"srv-ping\"");
    CHECK_CONTAINS(p.text, "\"result\":{}");
    CHECK(r.request == NULL); /* not passed on */

    /* notifications are passed on, before the answer that followed them */
    struct res n;
    call_tool(u, "notify", NULL, NULL, 5000, &n);
    CHECK(wait_res(r.loop, &n, 5000));
    CHECK_INT(r.nnotes, 2);
    CHECK_STR(r.notes[0], "notifications/message");
    CHECK_STR(r.notes[1], "notifications/tools/list_changed");
    CHECK(r.note_seq[1] < n.seq);

    /* upstream_notify: sent when READY */
    CHECK_INT(upstream_notify(u, "notifications/roots/list_changed", NULL), 0);

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&s);
    res_release(&p);
    res_release(&n);
    rec_release(&r);

    /* without on_request: -32601 */
    r = (struct rec){0};
    r.loop = new_loop();
    struct upstream_handler bare = {.on_state = on_state, .on_stderr = on_stderr};
    u = start(&r, &d.s, false, &bare);
    upstream_connect(u);
    call_tool(u, "sample", NULL, NULL, 5000, &s);
    CHECK(wait_res(r.loop, &s, 10000));
    CHECK_INT(s.error, 0);
    CHECK_CONTAINS(s.text, "-32601");
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&s);
    rec_release(&r);
}

struct lres {
    bool done;
    int error;
    char *message;
    struct json_object *items;
};

static void on_list(struct upstream *u, struct json_object *items, int error, const char *message,
                    void *userdata)
{
    struct lres *l = userdata;
    (void)u;
    l->done = true;
    l->error = error;
    l->message = message ? strdup(message) : NULL;
    l->items = items;
}

static bool lres_done(void *ctx)
{
    return ((struct lres *)ctx)->done;
}

static void lres_release(struct lres *l)
{
    free(l->message);
    json_object_put(l->items);
    memset(l, 0, sizeof(*l));
}

static void test_pagination(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "pages", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));

    struct lres a = {0}, b = {0}, c = {0}, x = {0};
    struct upstream_list *l = NULL;
    CHECK_INT(upstream_list(u, "tools/list", "tools", on_list, &a, &l), 0);
    CHECK(wait_for(r.loop, lres_done, &a, 10000));
    CHECK_INT(a.error, 0);
    CHECK(a.items != NULL);
    CHECK_INT(a.items ? json_object_array_length(a.items) : 0, 5);
    for (size_t i = 0; a.items && i < json_object_array_length(a.items); i++) {
        char want[32];
        snprintf(want, sizeof(want), "t%zu", i + 1);
        CHECK_STR(json_get_string(json_object_array_get_idx(a.items, i), "name"), want);
    }

    /* a cursor that never ends: bounded */
    CHECK_INT(upstream_list(u, "resources/list", "resources", on_list, &b, &l), 0);
    CHECK(wait_for(r.loop, lres_done, &b, 30000));
    CHECK_INT(b.error, 0);
    CHECK_INT(b.items ? json_object_array_length(b.items) : 0, UPSTREAM_LIST_MAX_PAGES);

    /* the same cursor again: a loop, ended at once */
    struct lres t = {0};
    CHECK_INT(upstream_list(u, "resources/templates/list", "resourceTemplates", on_list, &t, &l),
              0);
    CHECK(wait_for(r.loop, lres_done, &t, 10000));
    CHECK_INT(t.error, 0);
    CHECK_INT(t.items ? json_object_array_length(t.items) : 0, 2);
    lres_release(&t);

    /* method not found */
    CHECK_INT(upstream_list(u, "prompts/list", "prompts", on_list, &c, &l), 0);
    CHECK(wait_for(r.loop, lres_done, &c, 10000));
    CHECK_INT(c.error, -ENOSYS);
    CHECK(c.items == NULL);
    CHECK_CONTAINS(c.message, "server 'pages'");
    CHECK_CONTAINS(c.message, "Method not found");

    /* cancelled: no callback */
    CHECK_INT(upstream_list(u, "tools/list", "tools", on_list, &x, &l), 0);
    upstream_list_cancel(l);
    struct res e;
    call_tool(u, "echo", NULL, NULL, 0, &e);
    CHECK(wait_res(r.loop, &e, 5000));
    CHECK(!x.done);

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    lres_release(&a);
    lres_release(&b);
    lres_release(&c);
    res_release(&e);
    rec_release(&r);
}

static void test_env_and_failures(void)
{
    /* ${VAR} in env, expanded through the lookup at connect */
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    char *env[] = {"GREETING=hello ${WHO}", NULL};
    stdio_def(&d, "env", "basic", env);
    struct upstream *u = start(&r, &d.s, false, NULL);
    struct res g;
    call_tool(u, "env", "{\"name\":\"GREETING\"}", NULL, 5000, &g); /* IDLE: connects */
    CHECK(wait_res(r.loop, &g, 10000));
    CHECK_INT(g.error, 0);
    CHECK_STR(g.text, "hello world");
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&g);
    rec_release(&r);

    /* a missing variable: FAILED, naming it; waiting calls fail, later ones too */
    r = (struct rec){0};
    r.loop = new_loop();
    char *env2[] = {"TOKEN_VALUE=${UPSTREAM_TEST_MISSING}", NULL};
    stdio_def(&d, "envfail", "basic", env2);
    u = start(&r, &d.s, false, NULL);
    struct res w, later_call;
    call_tool(u, "echo", NULL, NULL, 5000, &w);
    CHECK(wait_state(&r, UPSTREAM_FAILED, 1, 10000));
    CHECK_INT(r.errors[r.nstates - 1], -ENOENT);
    CHECK_CONTAINS(r.msgs[r.nstates - 1], "server 'envfail'");
    CHECK_CONTAINS(r.msgs[r.nstates - 1], "UPSTREAM_TEST_MISSING");
    CHECK_INT(state_count(&r, UPSTREAM_BACKOFF), 0);
    CHECK(wait_res(r.loop, &w, 5000));
    CHECK_INT(w.error, -ENOTCONN);
    CHECK_CONTAINS(w.message, "UPSTREAM_TEST_MISSING");
    call_tool(u, "echo", NULL, NULL, 5000, &later_call);
    CHECK(!later_call.done);
    CHECK(wait_res(r.loop, &later_call, 5000));
    CHECK_INT(later_call.error, -ESHUTDOWN);
    CHECK_CONTAINS(later_call.message, "UPSTREAM_TEST_MISSING");
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&w);
    res_release(&later_call);
    rec_release(&r);

    /* a command that does not exist: FAILED, no retry */
    r = (struct rec){0};
    r.loop = new_loop();
    stdio_def(&d, "nocmd", "basic", NULL);
    d.s.command = "/nonexistent/mcp-server-xyz";
    u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_FAILED, 1, 10000));
    CHECK_INT(r.errors[r.nstates - 1], -ENOENT);
    CHECK_CONTAINS(r.msgs[r.nstates - 1], "server 'nocmd'");
    CHECK_CONTAINS(r.msgs[r.nstates - 1], "cannot run");
    /* connect again: tried again (and fails again) */
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_FAILED, 2, 10000));
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);

    /* an entry with an error is refused */
    struct mcp_server bad = d.s;
    bad.error = "'test': server 'nocmd': \"command\" is blank";
    struct loop *l = new_loop();
    struct upstream_opts o = {.loop = l, .log = lg, .server = &bad};
    struct err e = ERR_INIT;
    u = NULL;
    CHECK_INT(upstream_new(&o, &handler, &r, &u, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "is blank");
    CHECK(u == NULL);
    loop_free(l);
}

/* upstream_free from inside callbacks */
static void free_in_resp(struct upstream_call *c, struct json_object *resp, int error,
                         const char *message, void *userdata)
{
    struct rec *r = userdata;
    (void)c, (void)resp, (void)error, (void)message;
    upstream_free(r->u);
    r->u = NULL;
}

static void test_free_in_callbacks(void)
{
    struct rec r = {.loop = new_loop(), .free_on_ready = true};
    struct srv_def d;
    stdio_def(&d, "fr", "basic", NULL);
    start(&r, &d.s, false, NULL);
    upstream_connect(r.u);
    struct upstream_call *c = NULL;
    CHECK_INT(upstream_call(r.u, "tools/list", NULL, 0, free_in_resp, NULL, &r, &c), 0);
    CHECK(loop_drained(r.loop));
    CHECK(r.u == NULL);
    rec_release(&r);

    r = (struct rec){0};
    r.loop = new_loop();
    start(&r, &d.s, false, NULL);
    upstream_connect(r.u);
    struct upstream_call *c2 = NULL, *c3 = NULL;
    CHECK_INT(upstream_call(r.u, "tools/list", NULL, 0, free_in_resp, NULL, &r, &c), 0);
    CHECK_INT(upstream_call(r.u, "tools/list", NULL, 0, free_in_resp, NULL, &r, &c2), 0);
    CHECK_INT(upstream_call(r.u, "tools/list", NULL, 0, free_in_resp, NULL, &r, &c3), 0);
    CHECK(loop_drained(r.loop));
    CHECK(r.u == NULL);
    rec_release(&r);
}

/* ==== over HTTP ======================================================================== */

#define F 128

struct hseen {
    pthread_mutex_t mu;
    int sid_counter;
    char valid[F];
    int inits, deletes, stale, gets, calls;
    int get_stale;  /* /getstale: GETs answered 404 */
    char auth[F];   /* Authorization of the last initialize */
    char x_test[F]; /* X-Test of the last initialize */
    char del_sid[F];
    char call_ids[F]; /* ids of tools/call posts, comma-separated */
};

static struct hseen hs = {.mu = PTHREAD_MUTEX_INITIALIZER};
static struct MHD_Daemon *daemon_;
static unsigned port;

struct upload {
    char *data;
    size_t len;
};

/* the legacy 2024-11-05 server at /legacy/sse: the GET stream carries the endpoint event and
 * every answer; a POST to the SSE URL gets 405 (so the client falls back by itself) */
struct lserver {
    pthread_cond_t cv;
    char out[16384]; /* events waiting for the stream */
    size_t out_len;
    bool end; /* end the stream once out is sent */
    bool stopping;
    unsigned gen; /* a newer GET ends older streams */
    int gets, fallback_posts, messages;
};
static struct lserver ls = {.cv = PTHREAD_COND_INITIALIZER};

struct lstream {
    char head[128];
    size_t len, off;
    unsigned gen;
};

/* called with hs.mu held */
static void ls_push(const char *data)
{
    int n = snprintf(ls.out + ls.out_len, sizeof(ls.out) - ls.out_len,
                     "event: message\ndata: %s\n\n", data);
    if (n > 0 && (size_t)n < sizeof(ls.out) - ls.out_len)
        ls.out_len += (size_t)n;
    pthread_cond_broadcast(&ls.cv);
}

static ssize_t ls_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct lstream *st = cls;
    ssize_t ret = 0;
    (void)pos;
    if (st->off < st->len)
        return (ssize_t)httpd_copy_out(buf, max, st->head, st->len, &st->off);
    pthread_mutex_lock(&hs.mu);
    for (;;) {
        if (ls.stopping || st->gen != ls.gen || (ls.end && !ls.out_len)) {
            ret = MHD_CONTENT_READER_END_OF_STREAM;
            break;
        }
        if (ls.out_len) {
            ret = (ssize_t)httpd_pop(buf, max, ls.out, &ls.out_len);
            break;
        }
        ret = httpd_idle(&ls.cv, &hs.mu, buf, max);
        if (ret > 0)
            break;
    }
    pthread_mutex_unlock(&hs.mu);
    return ret;
}

static enum MHD_Result ls_get(struct MHD_Connection *c)
{
    struct lstream *st = calloc(1, sizeof(*st));
    if (!st)
        return MHD_NO;
    pthread_mutex_lock(&hs.mu);
    ls.gets++;
    st->gen = ++ls.gen;
    ls.end = false;
    ls.out_len = 0;
    pthread_cond_broadcast(&ls.cv);
    pthread_mutex_unlock(&hs.mu);
    snprintf(st->head, sizeof(st->head), "event: endpoint\ndata: /legacy/messages\n\n");
    st->len = strlen(st->head);
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, ls_read, st, free);
    if (!r) {
        free(st);
        return MHD_NO;
    }
    return httpd_queue(c, 200, "text/event-stream", NULL, r);
}

static enum MHD_Result ls_message(struct MHD_Connection *c, const struct upload *up)
{
    struct json_object *o = json_tokener_parse(up->data ? up->data : ""), *id = NULL;
    const char *method = json_get_string(o, "method");
    char body[512];
    (void)json_object_object_get_ex(o, "id", &id);
    pthread_mutex_lock(&hs.mu);
    ls.messages++;
    if (method && id && strcmp(method, "initialize") == 0) {
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":"
                 "\"2024-11-05\",\"capabilities\":{},\"serverInfo\":{\"name\":\"old\"}}}",
                 json_object_to_json_string(id));
        ls_push(body);
    } else if (method && id && strcmp(method, "tools/call") == 0) {
        const char *name = json_get_string(json_get_object(o, "params"), "name");
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":"
                 "\"text\",\"text\":\"%s\"}]}}",
                 json_object_to_json_string(id), name ? name : "");
        ls_push(body);
        if (name && strcmp(name, "end") == 0)
            ls.end = true; /* the connection is over after this answer */
    }
    pthread_mutex_unlock(&hs.mu);
    json_object_put(o);
    return httpd_reply(c, 202, "text/plain", "Accepted", NULL);
}

static enum MHD_Result post(struct MHD_Connection *c, const char *url, const struct upload *up)
{
    struct json_object *o = json_tokener_parse(up->data ? up->data : "");
    struct json_object *id = NULL;
    const char *method = json_get_string(o, "method");
    (void)json_object_object_get_ex(o, "id", &id);
    const char *sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
    enum MHD_Result ret;
    char body[512];

    pthread_mutex_lock(&hs.mu);
    if (!method) {
        ret = httpd_reply(c, 202, NULL, "", NULL);
    } else if (strcmp(method, "initialize") == 0) {
        hs.inits++;
        httpd_header(c, "Authorization", hs.auth, F);
        httpd_header(c, "X-Test", hs.x_test, F);
        if (strcmp(url, "/auth") == 0 && strcmp(hs.x_test, "forced") != 0) {
            ret = httpd_reply(c, 401, "text/plain", "who are you", NULL);
        } else {
            char nsid[32];
            snprintf(nsid, sizeof(nsid), "s%d", ++hs.sid_counter);
            snprintf(hs.valid, F, "%s", nsid);
            snprintf(body, sizeof(body),
                     "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":"
                     "\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":"
                     "\"http\"}}}",
                     json_object_to_json_string(id));
            ret = httpd_reply(c, 200, "application/json", body, nsid);
        }
    } else if (!id) {
        ret = httpd_reply(c, 202, NULL, "", NULL);
    } else if (!sid || strcmp(sid, hs.valid) != 0) {
        hs.stale++;
        ret = httpd_reply(c, sid ? 404 : 400, "text/plain", "no such session", NULL);
    } else if (strcmp(method, "tools/call") == 0) {
        const char *name = json_get_string(json_get_object(o, "params"), "name");
        size_t n = strlen(hs.call_ids);
        snprintf(hs.call_ids + n, F - n, "%s,", json_object_to_json_string(id));
        hs.calls++;
        if (name && strcmp(name, "always404") == 0) {
            hs.stale++;
            ret = httpd_reply(c, 404, "text/plain", "no such session", NULL);
        } else {
            snprintf(body, sizeof(body),
                     "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\","
                     "\"text\":\"%s\"}]}}",
                     json_object_to_json_string(id), name ? name : "");
            ret = httpd_reply(c, 200, "application/json", body, NULL);
            if (name && strcmp(name, "forget") == 0)
                hs.valid[0] = 0; /* the server restarted: sessions gone */
        }
    } else {
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,\"message\":\"no\"}}",
                 json_object_to_json_string(id));
        ret = httpd_reply(c, 200, "application/json", body, NULL);
    }
    pthread_mutex_unlock(&hs.mu);
    json_object_put(o);
    return ret;
}

static enum MHD_Result hhandler(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
    struct upload *up = *con_cls;
    (void)cls, (void)version;

    if (!up) {
        up = calloc(1, sizeof(*up));
        if (!up)
            return MHD_NO;
        *con_cls = up;
        return MHD_YES;
    }
    if (*upload_data_size)
        return httpd_upload_append(&up->data, &up->len, upload_data, upload_data_size) ? MHD_YES
                                                                                       : MHD_NO;
    if (strcmp(url, "/legacy/sse") == 0) {
        if (strcmp(method, "GET") == 0)
            return ls_get(conn);
        pthread_mutex_lock(&hs.mu);
        ls.fallback_posts++;
        pthread_mutex_unlock(&hs.mu);
        return httpd_reply(conn, 405, "text/plain", "use the SSE transport", NULL);
    }
    if (strcmp(url, "/legacy/messages") == 0 && strcmp(method, "POST") == 0)
        return ls_message(conn, up);
    if (strcmp(method, "POST") == 0)
        return post(conn, url, up);
    if (strcmp(method, "GET") == 0) {
        const char *sid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Mcp-Session-Id");
        pthread_mutex_lock(&hs.mu);
        hs.gets++;
        bool stale = strcmp(url, "/getstale") == 0 && !hs.get_stale && sid;
        if (stale) { /* the server restarted: the session is gone, and the GET says so */
            hs.get_stale++;
            hs.valid[0] = 0;
        }
        pthread_mutex_unlock(&hs.mu);
        if (stale)
            return httpd_reply(conn, 404, "text/plain", "no such session", NULL);
        return httpd_reply(conn, 405, "text/plain", "no stream", NULL);
    }
    if (strcmp(method, "DELETE") == 0) {
        pthread_mutex_lock(&hs.mu);
        hs.deletes++;
        httpd_header(conn, "Mcp-Session-Id", hs.del_sid, F);
        pthread_mutex_unlock(&hs.mu);
        return httpd_reply(conn, 200, NULL, "", NULL);
    }
    return httpd_reply(conn, 405, NULL, "", NULL);
}

static void hcompleted(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    struct upload *up = *con_cls;
    (void)cls, (void)conn, (void)toe;
    if (up) {
        free(up->data);
        free(up);
        *con_cls = NULL;
    }
}

static int hs_int(const int *field)
{
    pthread_mutex_lock(&hs.mu);
    int v = *field;
    pthread_mutex_unlock(&hs.mu);
    return v;
}

static bool deletes_seen(void *ctx)
{
    return hs_int(&hs.deletes) >= *(int *)ctx;
}

static void http_def(struct srv_def *d, const char *name, char *url, char **headers)
{
    memset(d, 0, sizeof(*d));
    d->s.name = (char *)name;
    d->s.source = "test";
    d->s.transport = MCP_TRANSPORT_HTTP;
    d->s.url = url;
    d->s.args = empty_v;
    d->s.env = empty_v;
    d->s.headers = headers ? headers : empty_v;
}

static void test_http_session(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    char url[128];
    char *headers[] = {"Authorization: Bearer ${TOKEN}", NULL};
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/mcp", port);
    http_def(&d, "web", url, headers);
    token_value = "tok-one";
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    CHECK_STR(upstream_protocol_version(u), "2025-11-25");
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.auth, "Bearer tok-one");
    CHECK_STR(hs.valid, "s1");
    pthread_mutex_unlock(&hs.mu);

    struct res a, b;
    call_tool(u, "echo", NULL, NULL, 5000, &a);
    CHECK(wait_res(r.loop, &a, 5000));
    CHECK_INT(a.error, 0);
    CHECK_STR(a.text, "echo");

    /* the server forgets the session: the next call gets 404, the upstream re-initializes and
     * sends it again, invisibly */
    call_tool(u, "forget", NULL, NULL, 5000, &b);
    CHECK(wait_res(r.loop, &b, 5000));
    CHECK_INT(b.error, 0);
    res_release(&a);
    call_tool(u, "echo", NULL, NULL, 5000, &a);
    CHECK(wait_res(r.loop, &a, 10000));
    CHECK_INT(a.error, 0);
    CHECK_STR(a.text, "echo");
    CHECK_INT(hs_int(&hs.inits), 2);
    CHECK_INT(hs_int(&hs.stale), 1);
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.valid, "s2");
    char want[F];
    snprintf(want, sizeof(want), "%lld,%lld,%lld,", (long long)(a.id - 2), (long long)(a.id - 1),
             (long long)a.id);
    /* echo, forget, then the lost echo never reached tools/call: only its resend counts */
    CHECK_STR(hs.call_ids, want);
    pthread_mutex_unlock(&hs.mu);
    CHECK_INT(state_count(&r, UPSTREAM_BACKOFF), 0);
    CHECK_INT(state_count(&r, UPSTREAM_READY), 1);
    CHECK_INT(upstream_generation(u), 1);

    /* sent again only once */
    struct res c;
    call_tool(u, "always404", NULL, NULL, 5000, &c);
    CHECK(wait_res(r.loop, &c, 10000));
    CHECK_INT(c.error, -ECONNRESET);
    CHECK_CONTAINS(c.message, "server 'web'");
    CHECK_INT(hs_int(&hs.inits), 3);
    CHECK_INT(upstream_state(u), UPSTREAM_READY);

    /* headers are expanded at each connect: a rotated value is picked up */
    token_value = "tok-two";
    upstream_reconnect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 2, 10000));
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.auth, "Bearer tok-two");
    pthread_mutex_unlock(&hs.mu);
    int one = 1;
    CHECK(wait_for(r.loop, deletes_seen, &one, 5000)); /* the old session was ended */
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.del_sid, "s3");
    pthread_mutex_unlock(&hs.mu);

    /* close: DELETE of the session */
    upstream_close(u);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    CHECK_INT(hs_int(&hs.deletes), 2);
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.del_sid, "s4");
    pthread_mutex_unlock(&hs.mu);
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&a);
    res_release(&b);
    res_release(&c);
    rec_release(&r);
}

/* the [seam] hook: asynchronous headers, asked again with force after a 401 */
struct hook {
    struct loop *loop;
    struct loop_timer *t;
    int calls, forced;
    upstream_headers_done_fn done;
    void *done_ud;
    bool force;
};

static void hook_fire(struct loop_timer *t, void *userdata)
{
    struct hook *h = userdata;
    (void)t;
    const char *plain[] = {"X-Test: plain", NULL}, *forced[] = {"X-Test: forced", NULL};
    h->done(h->done_ud, 0, h->force ? forced : plain, NULL);
}

static int hook_fn(void *userdata, const struct mcp_server *server, bool force,
                   upstream_headers_done_fn done, void *done_ud)
{
    struct hook *h = userdata;
    (void)server;
    h->calls++;
    h->forced += force;
    h->force = force;
    h->done = done;
    h->done_ud = done_ud;
    if (h->t) {
        loop_timer_rearm(h->t, 0);
        return 0;
    }
    return loop_timer_add(h->loop, 0, hook_fire, h, &h->t);
}

static void test_http_headers_hook(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/auth", port);
    http_def(&d, "hooked", url, NULL);
    struct hook h = {.loop = r.loop};
    struct upstream_opts o = {
        .loop = r.loop, .log = lg, .server = &d.s, .headers_fn = hook_fn, .headers_userdata = &h};
    struct upstream *u = NULL;
    CHECK_INT(upstream_new(&o, &handler, &r, &u, NULL), 0);
    r.u = u;
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    CHECK_INT(h.calls, 2);
    CHECK_INT(h.forced, 1);
    CHECK_INT(state_count(&r, UPSTREAM_BACKOFF), 0);
    pthread_mutex_lock(&hs.mu);
    CHECK_STR(hs.x_test, "forced");
    pthread_mutex_unlock(&hs.mu);
    upstream_free(u);
    loop_timer_cancel(h.t);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

/* nothing listens: the connect fails, with the reason */
static void test_http_refused(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    http_def(&d, "down", "http://127.0.0.1:1/mcp", NULL);
    struct upstream *u = start(&r, &d.s, true, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_FAILED, 1, 10000));
    CHECK_INT(r.errors[r.nstates - 1], -ENOTCONN);
    CHECK_STR(r.msgs[r.nstates - 1], "server 'down': initialize failed: connection refused");
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

/* a 2024-11-05 server: the fallback, calls answered on the event stream, and the end of that
 * stream is the end of the connection: reconnected */
static void test_http_legacy(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/legacy/sse", port);
    http_def(&d, "old", url, NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    CHECK_STR(upstream_protocol_version(u), "2024-11-05");
    CHECK_INT(hs_int(&ls.fallback_posts), 1);
    CHECK_INT(hs_int(&ls.gets), 1);

    struct res a, e;
    call_tool(u, "echo", NULL, NULL, 5000, &a);
    CHECK(wait_res(r.loop, &a, 5000));
    CHECK_INT(a.error, 0);
    CHECK_STR(a.text, "echo");

    call_tool(u, "end", NULL, NULL, 5000, &e);
    CHECK(wait_res(r.loop, &e, 5000));
    CHECK_INT(e.error, 0);
    CHECK_STR(e.text, "end");
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 1, 5000));
    CHECK_CONTAINS(r.msgs[r.nstates - 1], "server 'old': the event stream ended");
    CHECK(wait_state(&r, UPSTREAM_READY, 2, 10000));
    CHECK_INT(upstream_generation(u), 2);
    CHECK_INT(hs_int(&ls.gets), 2);
    res_release(&a);
    call_tool(u, "echo", NULL, NULL, 5000, &a);
    CHECK(wait_res(r.loop, &a, 5000));
    CHECK_INT(a.error, 0);

    upstream_close(u);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&a);
    res_release(&e);
    rec_release(&r);
}

static bool inits_seen(void *ctx)
{
    return hs_int(&hs.inits) >= *(int *)ctx;
}

/* a 404 on the GET stream: the session is gone, re-initialized at once (not at the next call),
 * so that what the server sends on its own is not lost meanwhile */
static void test_http_get_stale(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/getstale", port);
    http_def(&d, "getstale", url, NULL);
    int before = hs_int(&hs.inits);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    int want = before + 2;
    CHECK(wait_for(r.loop, inits_seen, &want, 5000));
    CHECK_INT(hs_int(&hs.get_stale), 1);
    CHECK_INT(upstream_state(u), UPSTREAM_READY);
    struct res a;
    call_tool(u, "echo", NULL, NULL, 5000, &a);
    CHECK(wait_res(r.loop, &a, 5000));
    CHECK_INT(a.error, 0);
    CHECK_INT(hs_int(&hs.inits), before + 2);
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&a);
    rec_release(&r);
}

static void test_http(void)
{
    test_http_refused();
    daemon_ = httpd_start(hhandler, NULL, hcompleted, 0, &port);
    test_http_session();
    test_http_headers_hook();
    test_http_get_stale();
    test_http_legacy();
    pthread_mutex_lock(&hs.mu);
    ls.stopping = true;
    pthread_cond_broadcast(&ls.cv);
    pthread_mutex_unlock(&hs.mu);
    MHD_stop_daemon(daemon_);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--server") == 0)
        return server_main(argv[2]);
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
    if (n <= 0) {
        fprintf(stderr, "cannot read /proc/self/exe\n");
        return 2;
    }
    self_exe[n] = 0;
    lg = log_new("test_upstream", STDERR_FILENO);
    if (!lg)
        return 2;
    if (getenv("UPSTREAM_TEST_DEBUG"))
        log_set_level(lg, LOG_DEBUG);
    test_fn fns[] = {
        test_handshake_and_close,
        test_bad_version,
        test_connect_timeout,
        test_init_error,
        test_bad_messages,
        test_out_of_order,
        test_progress,
        test_timeout_cancels,
        test_exit_mid_call,
        test_backoff_growth,
        test_server_requests,
        test_pagination,
        test_env_and_failures,
        test_free_in_callbacks,
        test_http,
        test_hung_server_restarted,
    };
    int r = tests_run("", fns, ELEMENTSOF(fns));
    log_free(lg);
    return r;
}
