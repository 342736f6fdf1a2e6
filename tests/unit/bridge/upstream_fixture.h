/* upstream_fixture.h - what the test_upstream* scenario programs share: a scripted MCP server
 * (the test program itself, re-executed as "PROGRAM --server SCENARIO" over stdio), the client
 * side's recorder of states, lines and notifications, bounded waits, and server entries.
 *
 * Included by one scenario file each (test_upstream.c: handshake, messages and timeouts;
 * test_upstream_life.c: exits, backoff, server requests, pagination, env, frees;
 * test_upstream_http.c: the HTTP transport), so every definition here is static, and a
 * scenario file uses only some of them: unused-function warnings are off for this header.
 * UPSTREAM_TEST_MAIN(tests...) is each program's main. */
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"

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

#include "credkit/json.h"
#include "credkit/log.h"
#include "credkit/util.h"

#include "core/loop.h"
#include "tests.h"
#include "loop_wait.h"
#include "upstream/upstream.h"

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

/* The scripted server's tools, one branch each (over 80 lines: a flat table of behaviours, read
 * as a list). */
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

/* One message to the scripted server, dispatched by method and scenario (over 80 lines: a flat
 * dispatch, one short branch per scenario). */
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

/* A state's name, for the messages of a test that fails. */
static const char *state_word(enum upstream_state s)
{
    static const char *const words[] = {
        [UPSTREAM_IDLE] = "idle",       [UPSTREAM_CONNECTING] = "connecting",
        [UPSTREAM_READY] = "ready",     [UPSTREAM_BACKOFF] = "backoff",
        [UPSTREAM_FAILED] = "failed",   [UPSTREAM_LOGIN] = "login-required",
        [UPSTREAM_CLOSING] = "closing", [UPSTREAM_CLOSED] = "closed",
    };
    return (size_t)s < sizeof(words) / sizeof(words[0]) && words[s] ? words[s] : "unknown";
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
        fprintf(stderr, "[%s] %s %d %s\n", upstream_server(u)->name, state_word(s), error,
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

/* ---- waiting on conditions, bounded: loop_wait.h ---- */

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
        fprintf(stderr, "state %s (x%d) not reached\n", state_word(s), count);
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

/* The program's own path (for the scripted server) and the log. -1 when either fails. */
static int fixture_init(const char *prog)
{
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
    if (n <= 0) {
        fprintf(stderr, "cannot read /proc/self/exe\n");
        return -1;
    }
    self_exe[n] = 0;
    const char *base = strrchr(prog, '/');
    lg = log_new(base ? base + 1 : prog, STDERR_FILENO);
    if (!lg)
        return -1;
    if (getenv("UPSTREAM_TEST_DEBUG"))
        log_set_level(lg, LOG_DEBUG);
    return 0;
}

#pragma GCC diagnostic pop

/* main: the scripted server when re-executed with --server, else the tests listed. */
#define UPSTREAM_TEST_MAIN(...)                                                                    \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        if (argc >= 3 && strcmp(argv[1], "--server") == 0)                                         \
            return server_main(argv[2]);                                                           \
        if (fixture_init(argv[0]) < 0)                                                             \
            return 2;                                                                              \
        test_fn fns[] = {__VA_ARGS__};                                                             \
        int r = tests_run(#__VA_ARGS__, fns, ELEMENTSOF(fns));                                     \
        log_free(lg);                                                                              \
        return r;                                                                                  \
    }
