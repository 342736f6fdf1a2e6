/* downstream_server.h - the scripted MCP server of the downstream's tests.
 *
 * Each test program of the downstream (test_downstream*.c) is also this small MCP server over
 * stdio: run again as "PROGRAM --server NAME [key=value ...]" (see server_main), it answers
 * initialize, lists its tools (tools=a,b,...; page=N pages them), prompts and resources unless
 * "bare", and does what each tool is named for (echo, progress, wait, sample, die, ...), telling
 * the test what it saw through notifications/message. Included once, by downstream_fixture.h. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "credkit/json.h"
#include "credkit/mcp_config.h"

#define WAIT_MS 10000 /* for what must come: the waits end as soon as it does */
/* the text of the scripted server's "big" tool */
#define BIG_ANSWER (512 * 1024)

static char self_path[4096];

/* ---- the scripted MCP server ------------------------------------------------------------- */

static struct srv {
    const char *name;
    char tools[32][64];
    size_t n_tools;
    int init_delay_ms;
    int page;
    bool bare; /* tools only: no prompts, resources, logging, completions */
    const char *instructions;
    struct json_object *init_id; /* a delayed initialize */
    int64_t init_due;
    struct json_object *ask_tool_id; /* the tools/call waiting for the client's answer */
    const char *ask_what;            /* to what: "sampling", "elicitation", "roots" */
    struct json_object *client_caps; /* as the client offered them in initialize */
    char subs[16][256];              /* resources subscribed to */
    size_t n_subs;
    int n_lists; /* tools/list requests received */
    /* when given, one byte appended per "big" call received */
    const char *count_path;
} srv;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void srv_out(struct json_object *o)
{
    printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE));
    fflush(stdout);
    json_object_put(o);
}

static void srv_result(struct json_object *id, struct json_object *result)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(o, "id", json_object_get(id));
    json_object_object_add(o, "result", result);
    srv_out(o);
}

static void srv_error(struct json_object *id, int code, const char *message)
{
    struct json_object *o = json_object_new_object(), *e = json_object_new_object();
    json_object_object_add(e, "code", json_object_new_int(code));
    json_object_object_add(e, "message", json_object_new_string(message));
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(o, "id", json_object_get(id));
    json_object_object_add(o, "error", e);
    srv_out(o);
}

static void srv_notify(const char *method, struct json_object *params)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(o, "method", json_object_new_string(method));
    if (params)
        json_object_object_add(o, "params", params);
    srv_out(o);
}

/* notifications/message with data text: how the server tells the test what it saw */
static void srv_say(const char *fmt, ...) _printf_(1, 2);
static void srv_say(const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "level", json_object_new_string("info"));
    json_object_object_add(p, "logger", json_object_new_string(srv.name));
    json_object_object_add(p, "data", json_object_new_string(text));
    srv_notify("notifications/message", p);
}

static struct json_object *text_result(const char *fmt, ...) _printf_(1, 2);
static struct json_object *text_result(const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    struct json_object *r = json_object_new_object(), *content = json_object_new_array(),
                       *t = json_object_new_object();
    json_object_object_add(t, "type", json_object_new_string("text"));
    json_object_object_add(t, "text", json_object_new_string(text));
    json_object_array_add(content, t);
    json_object_object_add(r, "content", content);
    return r;
}

static const char *jstr(struct json_object *o)
{
    return o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                     JSON_C_TO_STRING_NOSLASHESCAPE)
             : "null";
}

static void srv_initialize(struct json_object *id, const char *version)
{
    struct json_object *r = json_object_new_object(), *caps = json_object_new_object(),
                       *tools = json_object_new_object(), *info = json_object_new_object();
    json_object_object_add(tools, "listChanged", json_object_new_boolean(1));
    json_object_object_add(caps, "tools", tools);
    if (!srv.bare) {
        struct json_object *res = json_object_new_object();
        json_object_object_add(res, "subscribe", json_object_new_boolean(1));
        json_object_object_add(caps, "prompts", json_object_new_object());
        json_object_object_add(caps, "resources", res);
        json_object_object_add(caps, "logging", json_object_new_object());
        json_object_object_add(caps, "completions", json_object_new_object());
    }
    json_object_object_add(info, "name", json_object_new_string(srv.name));
    json_object_object_add(info, "version", json_object_new_string("1.2.3"));
    json_object_object_add(r, "protocolVersion",
                           json_object_new_string(version ? version : "2025-06-18"));
    json_object_object_add(r, "capabilities", caps);
    json_object_object_add(r, "serverInfo", info);
    if (srv.instructions)
        json_object_object_add(r, "instructions", json_object_new_string(srv.instructions));
    srv_result(id, r);
}

static void srv_tools_list(struct json_object *id, struct json_object *params)
{
    size_t start = 0;
    const char *cursor = json_get_string(params, "cursor");
    if (cursor)
        start = strtoul(cursor + 1, NULL, 10);
    size_t end = srv.page > 0 ? start + (size_t)srv.page : srv.n_tools;
    if (end > srv.n_tools)
        end = srv.n_tools;
    struct json_object *r = json_object_new_object(), *arr = json_object_new_array();
    for (size_t i = start; i < end; i++) {
        struct json_object *t = json_object_new_object(), *schema = json_object_new_object();
        json_object_object_add(schema, "type", json_object_new_string("object"));
        json_object_object_add(t, "name", json_object_new_string(srv.tools[i]));
        json_object_object_add(t, "description", json_object_new_string("a scripted tool"));
        json_object_object_add(t, "inputSchema", schema);
        json_object_array_add(arr, t);
    }
    json_object_object_add(r, "tools", arr);
    if (end < srv.n_tools) {
        char c[32];
        snprintf(c, sizeof(c), "c%zu", end);
        json_object_object_add(r, "nextCursor", json_object_new_string(c));
    }
    srv_result(id, r);
}

/* Asks the client (method with params, which it takes) on behalf of the tools/call tool_id;
 * the call is answered when the client's answer comes (srv_message). */
static void srv_ask(struct json_object *tool_id, const char *what, struct json_object *req_id,
                    const char *method, struct json_object *params)
{
    struct json_object *req = json_object_new_object();
    json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(req, "id", req_id);
    json_object_object_add(req, "method", json_object_new_string(method));
    if (params)
        json_object_object_add(req, "params", params);
    json_object_put(srv.ask_tool_id);
    srv.ask_tool_id = json_object_get(tool_id);
    srv.ask_what = what;
    srv_out(req);
}

/* Over 80 lines: the scripted tools, one short branch each, read best side by side. */
static void srv_tools_call(struct json_object *id, struct json_object *params)
{
    const char *name = json_get_string(params, "name");
    struct json_object *args = json_object_object_get(params, "arguments");
    if (!name) {
        srv_error(id, -32602, "no name");
    } else if (strcmp(name, "die") == 0) {
        exit(3);
    } else if (strcmp(name, "wait") == 0) {
        srv_say("waiting %s", jstr(id)); /* never answered: the client cancels */
    } else if (strcmp(name, "pid") == 0) {
        srv_result(id, text_result("%d", (int)getpid()));
    } else if (strcmp(name, "progress") == 0) {
        struct json_object *token =
            json_object_object_get(json_object_object_get(params, "_meta"), "progressToken");
        for (int i = 1; i <= 2 && token; i++) {
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "progressToken", json_object_get(token));
            json_object_object_add(p, "progress", json_object_new_int(i));
            json_object_object_add(p, "total", json_object_new_int(2));
            srv_notify("notifications/progress", p);
        }
        srv_result(id, text_result("token %s", jstr(token)));
    } else if (strcmp(name, "sample") == 0) {
        struct json_object *p = json_object_new_object(), *msgs = json_object_new_array();
        json_object_object_add(p, "messages", msgs);
        json_object_object_add(p, "maxTokens", json_object_new_int(10));
        srv_ask(id, "sampling", json_object_new_string("srv-1"), "sampling/createMessage", p);
    } else if (strcmp(name, "elicit") == 0) {
        /* form mode, with a progress token of its own */
        struct json_object *p = json_tokener_parse(
            "{\"mode\":\"form\",\"message\":\"your name?\",\"requestedSchema\":{\"type\":"
            "\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"minLength\":1}},"
            "\"required\":[\"name\"]},\"_meta\":{\"progressToken\":5}}");
        srv_ask(id, "elicitation", json_object_new_string("el-1"), "elicitation/create", p);
    } else if (strcmp(name, "roots") == 0) {
        srv_ask(id, "roots", json_object_new_int(901), "roots/list", NULL);
    } else if (strcmp(name, "caps") == 0) {
        srv_result(id, text_result("%s", jstr(srv.client_caps)));
    } else if (strcmp(name, "meta") == 0) {
        srv_result(id, text_result("%s", jstr(json_object_object_get(params, "_meta"))));
    } else if (strcmp(name, "stray_progress") == 0) {
        /* progress for tokens nobody gave it */
        struct json_object *toks[2] = {json_object_new_string("nope"), json_object_new_int(424242)};
        for (int i = 0; i < 2; i++) {
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "progressToken", toks[i]);
            json_object_object_add(p, "progress", json_object_new_int(1));
            srv_notify("notifications/progress", p);
        }
        srv_result(id, text_result("strayed"));
    } else if (strcmp(name, "touch") == 0) {
        /* every resource subscribed to has changed */
        for (size_t i = 0; i < srv.n_subs; i++) {
            struct json_object *p = json_object_new_object(), *meta = json_object_new_object();
            json_object_object_add(p, "uri", json_object_new_string(srv.subs[i]));
            json_object_object_add(meta, "pid", json_object_new_int((int)getpid()));
            json_object_object_add(p, "_meta", meta);
            srv_notify("notifications/resources/updated", p);
        }
        srv_result(id, text_result("touched %zu", srv.n_subs));
    } else if (strcmp(name, "sample_cancel") == 0) {
        /* asks, then takes it back */
        struct json_object *req = json_object_new_object(), *p = json_object_new_object(),
                           *c = json_object_new_object();
        json_object_object_add(p, "messages", json_object_new_array());
        json_object_object_add(p, "maxTokens", json_object_new_int(5));
        json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(req, "id", json_object_new_int(900));
        json_object_object_add(req, "method", json_object_new_string("sampling/createMessage"));
        json_object_object_add(req, "params", p);
        srv_out(req);
        json_object_object_add(c, "requestId", json_object_new_int(900));
        json_object_object_add(c, "reason", json_object_new_string("changed my mind"));
        srv_notify("notifications/cancelled", c);
        srv_result(id, text_result("asked and cancelled"));
    } else if (strcmp(name, "flood") == 0) {
        /* list_changed over and over, the list unchanged */
        for (int i = 0; i < 50; i++)
            srv_notify("notifications/tools/list_changed", NULL);
        srv_result(id, text_result("flooded"));
    } else if (strcmp(name, "big") == 0) {
        /* BIG_ANSWER bytes of text; counted (before answering) where the test can see it */
        if (srv.count_path) {
            int fd = open(srv.count_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
            if (fd < 0 || write(fd, "c", 1) != 1)
                exit(4);
            close(fd);
        }
        static char big[BIG_ANSWER];
        memset(big, 'x', sizeof(big));
        struct json_object *r = text_result("-");
        json_object_object_add(json_object_array_get_idx(json_object_object_get(r, "content"), 0),
                               "text", json_object_new_string_len(big, (int)sizeof(big)));
        srv_result(id, r);
    } else if (strcmp(name, "lists") == 0) {
        srv_result(id, text_result("%d", srv.n_lists));
    } else if (strcmp(name, "add_tool") == 0) {
        snprintf(srv.tools[srv.n_tools++], sizeof(srv.tools[0]), "extra");
        srv_notify("notifications/tools/list_changed", NULL);
        srv_result(id, text_result("added"));
    } else {
        struct json_object *r = text_result("%s %s %s", srv.name, name, jstr(args));
        struct json_object *content = json_object_object_get(r, "content");
        struct json_object *img = json_object_new_object(), *sc = json_object_new_object(),
                           *meta = json_object_new_object();
        json_object_object_add(img, "type", json_object_new_string("image"));
        json_object_object_add(img, "data", json_object_new_string("aGk="));
        json_object_object_add(img, "mimeType", json_object_new_string("image/png"));
        json_object_array_add(content, img);
        json_object_object_add(sc, "server", json_object_new_string(srv.name));
        json_object_object_add(r, "structuredContent", sc);
        json_object_object_add(meta, "m", json_object_new_int(1));
        json_object_object_add(r, "_meta", meta);
        srv_result(id, r);
    }
}

static struct json_object *one_item(const char *k1, const char *v1, const char *k2, const char *v2)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, k1, json_object_new_string(v1));
    json_object_object_add(o, k2, json_object_new_string(v2));
    return o;
}

static struct json_object *list_of(const char *key, struct json_object *item)
{
    struct json_object *r = json_object_new_object(), *a = json_object_new_array();
    json_object_array_add(a, item);
    json_object_object_add(r, key, a);
    return r;
}

static void srv_request(const char *method, struct json_object *id, struct json_object *params)
{
    char buf[512];
    if (strcmp(method, "initialize") == 0) {
        const char *version = json_get_string(params, "protocolVersion");
        json_object_put(srv.client_caps);
        srv.client_caps = json_object_get(json_object_object_get(params, "capabilities"));
        if (srv.init_delay_ms > 0) {
            srv.init_id = json_object_get(id);
            srv.init_due = now_ms() + srv.init_delay_ms;
            return;
        }
        srv_initialize(id, version);
    } else if (strcmp(method, "ping") == 0) {
        srv_say("pinged"); /* first: it is there when the answer is */
        srv_result(id, json_object_new_object());
    } else if (strcmp(method, "tools/list") == 0) {
        if (!json_get_string(params, "cursor"))
            srv.n_lists++;
        srv_tools_list(id, params);
    } else if (strcmp(method, "tools/call") == 0) {
        srv_tools_call(id, params);
    } else if (srv.bare) {
        srv_error(id, -32601, "method not found");
    } else if (strcmp(method, "prompts/list") == 0) {
        srv_result(id, list_of("prompts", one_item("name", "greet", "description", "hello")));
    } else if (strcmp(method, "prompts/get") == 0) {
        struct json_object *r = json_object_new_object(), *msgs = json_object_new_array(),
                           *m = json_object_new_object(), *c = json_object_new_object();
        snprintf(buf, sizeof(buf), "%s %s", srv.name, json_get_string(params, "name"));
        json_object_object_add(c, "type", json_object_new_string("text"));
        json_object_object_add(c, "text", json_object_new_string(buf));
        json_object_object_add(m, "role", json_object_new_string("user"));
        json_object_object_add(m, "content", c);
        json_object_array_add(msgs, m);
        json_object_object_add(r, "messages", msgs);
        srv_result(id, r);
    } else if (strcmp(method, "resources/list") == 0) {
        snprintf(buf, sizeof(buf), "mem://%s/readme", srv.name);
        srv_result(id, list_of("resources", one_item("uri", buf, "name", "readme")));
    } else if (strcmp(method, "resources/templates/list") == 0) {
        snprintf(buf, sizeof(buf), "mem://%s/items/{id}", srv.name);
        srv_result(id, list_of("resourceTemplates", one_item("uriTemplate", buf, "name", "item")));
    } else if (strcmp(method, "resources/subscribe") == 0 ||
               strcmp(method, "resources/unsubscribe") == 0) {
        const char *uri = json_get_string(params, "uri");
        bool add = strcmp(method, "resources/subscribe") == 0;
        size_t i = 0;
        while (uri && i < srv.n_subs && strcmp(srv.subs[i], uri) != 0)
            i++;
        if (!uri) {
            srv_error(id, -32602, "no uri");
            return;
        }
        if (add && i == srv.n_subs && srv.n_subs < 16)
            snprintf(srv.subs[srv.n_subs++], sizeof(srv.subs[0]), "%s", uri);
        else if (!add && i < srv.n_subs)
            memmove(&srv.subs[i], &srv.subs[i + 1], (--srv.n_subs - i) * sizeof(srv.subs[0]));
        srv_result(id, json_object_new_object());
        srv_say("%s %s", add ? "subscribed" : "unsubscribed", uri);
    } else if (strcmp(method, "resources/read") == 0) {
        const char *uri = json_get_string(params, "uri");
        snprintf(buf, sizeof(buf), "%s %s", srv.name, uri);
        srv_result(id, list_of("contents", one_item("uri", uri, "text", buf)));
    } else if (strcmp(method, "completion/complete") == 0) {
        struct json_object *r = json_object_new_object(), *c = json_object_new_object(),
                           *v = json_object_new_array();
        snprintf(buf, sizeof(buf), "%s:%s", srv.name,
                 json_get_string(json_object_object_get(params, "ref"), "name"));
        json_object_array_add(v, json_object_new_string(buf));
        json_object_object_add(c, "values", v);
        json_object_object_add(r, "completion", c);
        srv_result(id, r);
    } else if (strcmp(method, "logging/setLevel") == 0) {
        srv_result(id, json_object_new_object());
        srv_say("level %s", json_get_string(params, "level"));
    } else {
        srv_error(id, -32601, "method not found");
    }
}

static void srv_message(const char *line)
{
    struct json_object *m = json_tokener_parse(line);
    if (!m)
        return;
    const char *method = json_get_string(m, "method");
    struct json_object *id = json_object_object_get(m, "id");
    struct json_object *params = json_object_object_get(m, "params");
    if (method && id) {
        srv_request(method, id, params);
    } else if (method) {
        if (strcmp(method, "notifications/cancelled") == 0)
            srv_say("cancelled %s %s", jstr(json_object_object_get(params, "requestId")),
                    json_get_string(params, "reason") ? json_get_string(params, "reason") : "-");
        else if (strcmp(method, "notifications/roots/list_changed") == 0)
            srv_say("roots changed");
        else if (strcmp(method, "notifications/progress") == 0)
            srv_say("progress %s %s", jstr(json_object_object_get(params, "progressToken")),
                    jstr(json_object_object_get(params, "progress")));
    } else if (id && srv.ask_tool_id) {
        /* the client's answer to what srv_ask asked */
        struct json_object *err = json_object_object_get(m, "error");
        struct json_object *res = json_object_object_get(m, "result");
        struct json_object *r;
        if (err)
            r = text_result("%s error %d", srv.ask_what,
                            json_object_get_int(json_object_object_get(err, "code")));
        else if (strcmp(srv.ask_what, "sampling") == 0)
            r = text_result("sampled %s %s", jstr(id),
                            json_get_string(json_object_object_get(res, "content"), "text"));
        else if (strcmp(srv.ask_what, "elicitation") == 0)
            r = text_result("elicited %s %s %s", jstr(id), json_get_string(res, "action"),
                            jstr(json_object_object_get(res, "content")));
        else
            r = text_result(
                "roots %s %s", jstr(id),
                json_get_string(json_object_array_get_idx(json_object_object_get(res, "roots"), 0),
                                "uri"));
        srv_result(srv.ask_tool_id, r);
        json_object_put(srv.ask_tool_id);
        srv.ask_tool_id = NULL;
    }
    json_object_put(m);
}

static int server_main(int argc, char **argv)
{
    srv.name = argc > 2 ? argv[2] : "srv";
    const char *tools = "echo,progress,wait,sample,sample_cancel,die,add_tool,pid,touch,elicit,"
                        "roots,caps,meta,stray_progress";
    for (int i = 3; i < argc; i++) {
        if (strncmp(argv[i], "tools=", 6) == 0)
            tools = argv[i] + 6;
        else if (strncmp(argv[i], "init_delay=", 11) == 0)
            srv.init_delay_ms = atoi(argv[i] + 11);
        else if (strncmp(argv[i], "page=", 5) == 0)
            srv.page = atoi(argv[i] + 5);
        else if (strcmp(argv[i], "bare") == 0)
            srv.bare = true;
        else if (strncmp(argv[i], "instructions=", 13) == 0)
            srv.instructions = argv[i] + 13;
        else if (strncmp(argv[i], "count=", 6) == 0)
            srv.count_path = argv[i] + 6;
    }
    for (const char *p = tools; *p && srv.n_tools < 31;) {
        size_t n = strcspn(p, ",");
        snprintf(srv.tools[srv.n_tools++], sizeof(srv.tools[0]), "%.*s", (int)n, p);
        p += n + (p[n] == ',');
    }

    static char buf[1 << 20];
    size_t len = 0;
    for (;;) {
        int timeout = -1;
        if (srv.init_id) {
            int64_t left = srv.init_due - now_ms();
            timeout = left > 0 ? (int)left : 0;
        }
        struct pollfd pfd = {.fd = 0, .events = POLLIN};
        int r = poll(&pfd, 1, timeout);
        if (r < 0 && errno != EINTR)
            return 1;
        if (srv.init_id && now_ms() >= srv.init_due) {
            srv_initialize(srv.init_id, NULL);
            json_object_put(srv.init_id);
            srv.init_id = NULL;
        }
        if (r <= 0)
            continue;
        ssize_t n = read(0, buf + len, sizeof(buf) - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        char *start = buf, *nl;
        while ((nl = memchr(start, '\n', len - (size_t)(start - buf)))) {
            *nl = '\0';
            srv_message(start);
            start = nl + 1;
        }
        len -= (size_t)(start - buf);
        memmove(buf, start, len);
    }
    json_object_put(srv.init_id);
    json_object_put(srv.ask_tool_id);
    json_object_put(srv.client_caps);
    return 0;
}
