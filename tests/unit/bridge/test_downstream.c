/* test_downstream.c - the MCP server the agent talks to, against scripted MCP servers.
 *
 * The agent is the test: it speaks over a socketpair with the downstream, on the same loop.
 * The upstreams are this very program run again as small MCP servers over stdio
 * ("--server NAME [key=value ...]", see server_main), configured through a temporary mcp.json
 * loaded with mcp_config_load(). Every wait is for a message, bounded by a timeout.
 *
 * "test_downstream --bench [N] [debug]" is a measurement, not a test: N sequential tools/call
 * (default 20000) through the bridge to one scripted server, reporting the CPU time of this
 * process (agent side and bridge; the server is a child) per round trip. */
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

#include "downstream.h"
#include "framing.h"
#include "loop.h"
#include "tests.h"

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

static void fx_message(const char *msg, size_t len, void *userdata)
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

static void fx_error(int error, void *userdata)
{
    struct fx *f = userdata;
    (void)error;
    framing_free(f->fr);
    f->fr = NULL;
}

static void fx_done(int status, void *userdata)
{
    struct fx *f = userdata;
    f->done = true;
    f->done_status = status;
    loop_quit(f->loop, 0);
}

static void fx_quit(struct loop_timer *t, void *userdata)
{
    (void)t;
    loop_quit(userdata, 0);
}

static const char *tmp_path(const char *name)
{
    static char p[8][4200];
    static int i;
    i = (i + 1) % 8;
    snprintf(p[i], sizeof(p[i]), "%s/%s", tests_tmpdir(), name);
    return p[i];
}

/* Writes a configuration: @SELF@ in text becomes this program's path. */
static struct mcp_config *config_from(const char *text)
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

static int fx_start(struct fx *f, const char *config, enum downstream_mode mode, const char *single,
                    int64_t connect_timeout_ms)
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

static void fx_stop(struct fx *f)
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

static void fx_send(struct fx *f, const char *fmt, ...) _printf_(2, 3);
static void fx_send(struct fx *f, const char *fmt, ...)
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
static struct json_object *fx_wait(struct fx *f, match_fn match, const char *a, const char *b,
                                   int timeout_ms)
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
static void fx_idle(struct fx *f, int ms)
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

static bool match_id(struct json_object *m, const char *id, const char *unused)
{
    (void)unused;
    struct json_object *mid;
    return !json_object_object_get_ex(m, "method", NULL) &&
           json_object_object_get_ex(m, "id", &mid) && strcmp(jstr(mid), id) == 0;
}

/* a message with this method whose serialised params contain b (when given) */
static bool match_method(struct json_object *m, const char *method, const char *b)
{
    const char *mm = json_get_string(m, "method");
    return mm && strcmp(mm, method) == 0 &&
           (!b || strstr(jstr(json_object_object_get(m, "params")), b));
}

static struct json_object *fx_request(struct fx *f, const char *id, const char *method,
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
static struct json_object *call_tool(struct fx *f, const char *id, const char *tool)
{
    char params[256];
    snprintf(params, sizeof(params), "{\"name\":\"%s\"}", tool);
    return fx_request(f, id, "tools/call", params);
}

static struct json_object *path(struct json_object *o, const char *p)
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

static const char *path_str(struct json_object *o, const char *p)
{
    struct json_object *v = path(o, p);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static int64_t path_int(struct json_object *o, const char *p)
{
    struct json_object *v = path(o, p);
    return json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : INT64_MIN;
}

static void initialize(struct fx *f, const char *caps)
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
static const char *names_of(struct json_object *r, const char *key, const char *field)
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

static bool file_contains(const char *p, const char *needle)
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

/* ---- tests ------------------------------------------------------------------------------- */

static void test_aggregate_initialize(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "," SERVER("b", "") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 0),
              0);

    /* before initialize: ping only */
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_INT(path_int(r, "error.code"), -32600);
    json_object_put(r);
    r = fx_request(&f, "\"p\"", "ping", NULL);
    CHECK(r && json_object_is_type(path(r, "result"), json_type_object));
    json_object_put(r);

    /* not JSON */
    fx_send(&f, "{this is not json");
    r = fx_wait(&f, match_id, "null", NULL, WAIT_MS);
    CHECK_INT(path_int(r, "error.code"), -32700);
    json_object_put(r);

    r = fx_request(&f, "0", "initialize",
                   "{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{},"
                   "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}");
    CHECK_STR(path_str(r, "result.protocolVersion"), "2025-03-26");
    CHECK_STR(path_str(r, "result.serverInfo.name"), "mcp-bridge");
    CHECK(json_object_get_boolean(path(r, "result.capabilities.tools.listChanged")));
    CHECK(path(r, "result.capabilities.resources.subscribe") != NULL);
    CHECK(path(r, "result.capabilities.logging") != NULL);
    CHECK_CONTAINS(path_str(r, "result.instructions"), "'a' and 'b'");
    json_object_put(r);

    /* a version the bridge does not know: its newest */
    r = fx_request(&f, "9", "initialize", "{\"protocolVersion\":\"1999-01-01\"}");
    CHECK_INT(path_int(r, "error.code"), -32600); /* already initialized */
    json_object_put(r);

    r = fx_request(&f, "2", "no/such/method", NULL);
    CHECK_INT(path_int(r, "error.code"), -32601);
    json_object_put(r);
    r = fx_request(&f, "3", "ping", NULL);
    CHECK(r && path(r, "result"));
    json_object_put(r);
    fx_stop(&f);
}

static void test_aggregate_catalogue(void)
{
    struct fx f;
    /* "a"'s b_c and "a_b"'s c both become mcp_a_b_c: "a" comes first by name */
    CHECK_INT(
        fx_start(
            &f,
            "{\"mcpServers\":{" SERVER(
                "a",
                ",\"tools=b_c,echo,x.y,sample\",\"page=1\"") ",\"a_b\":{\"command\":\"@SELF@\","
                                                             "\"args\":[\"--server\",\"a_b\","
                                                             "\"tools=c,echo,hidden\"],"
                                                             "\"excludeTools\":[\"hidden\"]}}}",
            DOWNSTREAM_AGGREGATE, NULL, 0),
        0);
    initialize(&f, NULL);

    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"),
              "mcp_a_b_c mcp_a_echo mcp_a_x_y mcp_a_sample mcp_a_b_c_2 mcp_a_b_echo");
    CHECK_STR(path_str(r, "result.tools.0.description"), "a scripted tool");
    CHECK(path(r, "result.nextCursor") == NULL);
    json_object_put(r);
    CHECK(file_contains(f.log_path, "exposed as 'mcp_a_b_c_2'"));

    /* routed, and the agent's id comes back, string or integer */
    r = fx_request(&f, "\"req-1\"", "tools/call",
                   "{\"name\":\"mcp_a_b_echo\",\"arguments\":{\"x\":1}}");
    CHECK_STR(path_str(r, "result.content.0.text"), "a_b echo {\"x\":1}");
    CHECK_STR(path_str(r, "result.content.1.type"), "image");
    CHECK_STR(path_str(r, "result.structuredContent.server"), "a_b");
    CHECK_INT(path_int(r, "result._meta.m"), 1);
    json_object_put(r);
    r = fx_request(&f, "77", "tools/call", "{\"name\":\"mcp_a_b_c\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "a b_c null");
    json_object_put(r);
    r = fx_request(&f, "78", "tools/call", "{\"name\":\"mcp_a_b_c_2\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "a_b c null");
    json_object_put(r);

    /* unknown and excluded tools: -32602, as MCP servers answer them */
    r = fx_request(&f, "4", "tools/call", "{\"name\":\"mcp_a_b_hidden\"}");
    CHECK_INT(path_int(r, "error.code"), -32602);
    CHECK_CONTAINS(path_str(r, "error.message"), "mcp_a_b_hidden");
    json_object_put(r);
    r = fx_request(&f, "5", "tools/call", "{}");
    CHECK_INT(path_int(r, "error.code"), -32602);
    json_object_put(r);

    /* sampling, when the agent did not declare it, is refused to the server */
    r = fx_request(&f, "6", "tools/call", "{\"name\":\"mcp_a_sample\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "sampling error -32601");
    json_object_put(r);

    /* prompts, renamed the same way */
    r = fx_request(&f, "7", "prompts/list", NULL);
    CHECK_STR(names_of(r, "prompts", "name"), "mcp_a_greet mcp_a_b_greet");
    json_object_put(r);
    r = fx_request(&f, "8", "prompts/get", "{\"name\":\"mcp_a_b_greet\"}");
    CHECK_STR(path_str(r, "result.messages.0.content.text"), "a_b greet");
    json_object_put(r);

    /* resources: by URI, by template prefix; templates listed from both */
    r = fx_request(&f, "9", "resources/list", NULL);
    CHECK_STR(names_of(r, "resources", "uri"), "mem://a/readme mem://a_b/readme");
    json_object_put(r);
    r = fx_request(&f, "10", "resources/templates/list", NULL);
    CHECK_STR(names_of(r, "resourceTemplates", "uriTemplate"),
              "mem://a/items/{id} mem://a_b/items/{id}");
    json_object_put(r);
    r = fx_request(&f, "11", "resources/read", "{\"uri\":\"mem://a_b/readme\"}");
    CHECK_STR(path_str(r, "result.contents.0.text"), "a_b mem://a_b/readme");
    json_object_put(r);
    r = fx_request(&f, "12", "resources/read", "{\"uri\":\"mem://a_b/items/7\"}");
    CHECK_STR(path_str(r, "result.contents.0.text"), "a_b mem://a_b/items/7");
    json_object_put(r);
    r = fx_request(&f, "13", "resources/read", "{\"uri\":\"mem://zzz/1\"}");
    CHECK_INT(path_int(r, "error.code"), -32002);
    json_object_put(r);

    /* completion by prompt reference, the name mapped back */
    r = fx_request(&f, "14", "completion/complete",
                   "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"mcp_a_greet\"},"
                   "\"argument\":{\"name\":\"x\",\"value\":\"\"}}");
    CHECK_STR(path_str(r, "result.completion.values.0"), "a:greet");
    json_object_put(r);

    /* logging/setLevel: answered by the bridge, fanned out to both */
    r = fx_request(&f, "15", "logging/setLevel", "{\"level\":\"debug\"}");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    for (int i = 0; i < 2; i++) {
        r = fx_wait(&f, match_method, "notifications/message", "level debug", WAIT_MS);
        CHECK(r != NULL);
        json_object_put(r);
    }
    fx_stop(&f);
}

static void test_upstream_dies(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    json_object_put(r);

    r = fx_request(&f, "9", "logging/setLevel", "{\"level\":\"warning\"}");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/message", "level warning", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);

    r = fx_request(&f, "2", "tools/call", "{\"name\":\"mcp_a_die\"}");
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "server 'a'");
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "retried");
    json_object_put(r);

    /* the server is started again and the next call works (it waits for the reconnect) */
    r = fx_request(&f, "3", "tools/call", "{\"name\":\"mcp_a_echo\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "a echo null");
    json_object_put(r);
    /* the new session got the level the agent set */
    r = fx_wait(&f, match_method, "notifications/message", "level warning", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    fx_stop(&f);
}

static void test_progress_and_cancel(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));

    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_progress\",\"_meta\":{\"progressToken\":\"tok-1\"}}}");
    for (int i = 1; i <= 2; i++) {
        struct json_object *p =
            fx_wait(&f, match_method, "notifications/progress", "\"tok-1\"", WAIT_MS);
        CHECK(p != NULL);
        CHECK_INT(path_int(p, "params.progress"), i);
        json_object_put(p);
    }
    struct json_object *r = fx_wait(&f, match_id, "2", NULL, WAIT_MS);
    /* the server saw a token of the upstream's own, not the agent's */
    CHECK(r && !strstr(path_str(r, "result.content.0.text"), "tok-1"));
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "token ");
    json_object_put(r);

    /* cancellation goes upstream with the upstream's id */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"w1\",\"method\":\"tools/call\",\"params\":{"
                "\"name\":\"mcp_a_wait\"}}");
    struct json_object *w = fx_wait(&f, match_method, "notifications/message", "waiting", WAIT_MS);
    CHECK(w != NULL);
    const char *data = path_str(w, "params.data");
    char upid[64] = "";
    if (data)
        snprintf(upid, sizeof(upid), "%s", data + strlen("waiting "));
    CHECK(upid[0] && strcmp(upid, "\"w1\"") != 0);
    json_object_put(w);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":\"w1\",\"reason\":\"user\"}}");
    char want[128];
    snprintf(want, sizeof(want), "cancelled %s user", upid);
    struct json_object *c = fx_wait(&f, match_method, "notifications/message", want, WAIT_MS);
    CHECK(c != NULL);
    json_object_put(c);
    /* and no answer for the cancelled request */
    r = fx_request(&f, "3", "ping", NULL);
    json_object_put(r);
    fx_idle(&f, 100);
    r = fx_wait(&f, match_id, "\"w1\"", NULL, 0);
    CHECK(r == NULL);
    json_object_put(r);

    /* a cancellation for a request already answered is ignored: nothing goes upstream */
    r = call_tool(&f, "20", "mcp_a_echo");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":20}}");
    r = call_tool(&f, "21", "mcp_a_echo"); /* through the server, after the cancellation */
    CHECK(r && path(r, "result"));
    json_object_put(r);
    CHECK((c = fx_wait(&f, match_method, "notifications/message", "cancelled", 0)) == NULL);
    json_object_put(c);
    CHECK((r = fx_wait(&f, match_id, "20", NULL, 0)) == NULL);
    json_object_put(r);

    /* progress with tokens the bridge never gave out is dropped, not passed on raw */
    r = fx_request(&f, "22", "tools/call",
                   "{\"name\":\"mcp_a_stray_progress\",\"_meta\":{\"progressToken\":\"mine\"}}");
    CHECK_STR(path_str(r, "result.content.0.text"), "strayed");
    json_object_put(r);
    CHECK((c = fx_wait(&f, match_method, "notifications/progress", NULL, 0)) == NULL);
    json_object_put(c);

    /* _meta of a request reaches the server as the agent wrote it (the token is mapped) */
    r = fx_request(&f, "23", "tools/call",
                   "{\"name\":\"mcp_a_meta\",\"_meta\":{\"trace\":\"t-1\",\"progressToken\":"
                   "\"p\",\"x\":{\"y\":[1,2]}}}");
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "\"trace\":\"t-1\"");
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "\"x\":{\"y\":[1,2]}");
    json_object_put(r);
    fx_stop(&f);
}

/* Kills the server through its tool, then waits until a new one is READY: its answer to a call
 * that waits for the reconnect. */
static void kill_server(struct fx *f, const char *die, const char *echo)
{
    struct json_object *r = call_tool(f, "\"die\"", die);
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    json_object_put(r);
    r = call_tool(f, "\"after-die\"", echo);
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "echo");
    json_object_put(r);
}

static void subscriptions_in(enum downstream_mode mode)
{
    bool single = mode == DOWNSTREAM_SINGLE;
    const char *touch = single ? "touch" : "mcp_a_touch";
    const char *die = single ? "die" : "mcp_a_die";
    const char *echo = single ? "echo" : "mcp_a_echo";
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", mode, single ? "a" : NULL, 0),
              0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "resources/list", NULL));

    struct json_object *r =
        fx_request(&f, "2", "resources/subscribe", "{\"uri\":\"mem://a/readme\"}");
    CHECK(r && json_object_is_type(path(r, "result"), json_type_object));
    json_object_put(r);
    struct json_object *m =
        fx_wait(&f, match_method, "notifications/message", "subscribed mem://a/readme", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    r = call_tool(&f, "3", touch);
    CHECK_STR(path_str(r, "result.content.0.text"), "touched 1");
    json_object_put(r);
    /* sent before the answer, on the same stream: here by now */
    struct json_object *u =
        fx_wait(&f, match_method, "notifications/resources/updated", "mem://a/readme", 0);
    CHECK(u != NULL);
    int64_t pid1 = path_int(u, "params._meta.pid");
    json_object_put(u);

    /* the server dies; the new one is subscribed again by the bridge itself */
    r = call_tool(&f, "4", die);
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    json_object_put(r);
    m = fx_wait(&f, match_method, "notifications/message", "subscribed mem://a/readme", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    r = call_tool(&f, "5", touch);
    CHECK_STR(path_str(r, "result.content.0.text"), "touched 1");
    json_object_put(r);
    u = fx_wait(&f, match_method, "notifications/resources/updated", "mem://a/readme", 0);
    CHECK(u != NULL);
    CHECK(path_int(u, "params._meta.pid") > 0 && path_int(u, "params._meta.pid") != pid1);
    json_object_put(u);

    /* unsubscribed: not renewed; nor is a subscribe taken back while it was in flight */
    r = fx_request(&f, "6", "resources/unsubscribe", "{\"uri\":\"mem://a/readme\"}");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/subscribe\",\"params\":{"
                "\"uri\":\"mem://a/items/1\"}}");
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/unsubscribe\",\"params\":{"
                "\"uri\":\"mem://a/items/1\"}}");
    for (int i = 7; i <= 8; i++) {
        char id[8];
        snprintf(id, sizeof(id), "%d", i);
        r = fx_wait(&f, match_id, id, NULL, WAIT_MS);
        CHECK(r && path(r, "result"));
        json_object_put(r);
    }
    m = fx_wait(&f, match_method, "notifications/message", "unsubscribed mem://a/items/1", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    /* what was said so far is out of the way */
    while ((m = fx_wait(&f, match_method, "notifications/message", "subscribed", 0)))
        json_object_put(m);
    kill_server(&f, die, echo);
    r = call_tool(&f, "9", touch);
    CHECK_STR(path_str(r, "result.content.0.text"), "touched 0");
    json_object_put(r);
    /* a subscribe sent on READY would have been answered before this call */
    json_object_put(call_tool(&f, "10", echo));
    CHECK((m = fx_wait(&f, match_method, "notifications/message", "subscribed", 0)) == NULL);
    json_object_put(m);
    CHECK((u = fx_wait(&f, match_method, "notifications/resources/updated", NULL, 0)) == NULL);
    json_object_put(u);
    fx_stop(&f);
}

static void test_subscriptions_survive_reconnects(void)
{
    subscriptions_in(DOWNSTREAM_AGGREGATE);
    subscriptions_in(DOWNSTREAM_SINGLE);
}

static void test_elicitation_and_roots(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    /* sampling that is not an object, and experimental, are not offered upstream */
    initialize(&f,
               "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"elicitation\":{"
               "\"form\":{}},\"roots\":{\"listChanged\":true},\"sampling\":true,"
               "\"experimental\":{\"x\":{}}},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}");
    json_object_put(fx_request(&f, "1", "tools/list", NULL));
    struct json_object *r = call_tool(&f, "2", "mcp_a_caps");
    CHECK_STR(path_str(r, "result.content.0.text"),
              "{\"roots\":{\"listChanged\":true},\"elicitation\":{\"form\":{}}}");
    json_object_put(r);
    r = call_tool(&f, "3", "mcp_a_sample");
    CHECK_STR(path_str(r, "result.content.0.text"), "sampling error -32601");
    json_object_put(r);

    /* elicitation/create in form mode reaches the agent as it is, with the bridge's id */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_elicit\"}}");
    struct json_object *q = fx_wait(&f, match_method, "elicitation/create", NULL, WAIT_MS);
    CHECK(q != NULL);
    char bid[64];
    snprintf(bid, sizeof(bid), "%s", path_str(q, "id") ? path_str(q, "id") : "x");
    CHECK(bid[0] == 'b');
    CHECK_STR(path_str(q, "params.mode"), "form");
    CHECK_STR(path_str(q, "params.message"), "your name?");
    CHECK_STR(path_str(q, "params.requestedSchema.properties.name.type"), "string");
    CHECK_INT(path_int(q, "params.requestedSchema.properties.name.minLength"), 1);
    CHECK_STR(path_str(q, "params.requestedSchema.required.0"), "name");
    /* its progress token is the bridge's too; the agent's progress goes back with the server's */
    CHECK_STR(path_str(q, "params._meta.progressToken"), bid);
    json_object_put(q);
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
            "\"progressToken\":\"%s\",\"progress\":1}}",
            bid);
    struct json_object *m =
        fx_wait(&f, match_method, "notifications/message", "progress 5 1", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"action\":\"accept\",\"content\":{"
            "\"name\":\"Ada\"}}}",
            bid);
    r = fx_wait(&f, match_id, "4", NULL, WAIT_MS);
    CHECK_STR(path_str(r, "result.content.0.text"), "elicited \"el-1\" accept {\"name\":\"Ada\"}");
    json_object_put(r);

    /* roots/list the same way */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_roots\"}}");
    q = fx_wait(&f, match_method, "roots/list", NULL, WAIT_MS);
    CHECK(q != NULL);
    char bid2[64];
    snprintf(bid2, sizeof(bid2), "%s", path_str(q, "id") ? path_str(q, "id") : "x");
    CHECK(bid2[0] == 'b' && strcmp(bid, bid2) != 0);
    json_object_put(q);
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"roots\":[{\"uri\":\"file:///work\","
            "\"name\":\"work\"}]}}",
            bid2);
    r = fx_wait(&f, match_id, "5", NULL, WAIT_MS);
    CHECK_STR(path_str(r, "result.content.0.text"), "roots 901 file:///work");
    json_object_put(r);

    /* a request of the server dies with its connection: the agent is told */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_elicit\"}}");
    q = fx_wait(&f, match_method, "elicitation/create", NULL, WAIT_MS);
    CHECK(q != NULL);
    char bid3[64], want[80];
    snprintf(bid3, sizeof(bid3), "%s", path_str(q, "id") ? path_str(q, "id") : "x");
    snprintf(want, sizeof(want), "\"requestId\":\"%s\"", bid3);
    json_object_put(q);
    r = call_tool(&f, "7", "mcp_a_die");
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    json_object_put(r);
    q = fx_wait(&f, match_method, "notifications/cancelled", want, WAIT_MS);
    CHECK(q != NULL);
    CHECK_CONTAINS(path_str(q, "params.reason"), "connection");
    json_object_put(q);
    r = fx_wait(&f, match_id, "6", NULL, WAIT_MS); /* the call that asked, lost too */
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    json_object_put(r);

    /* an answer for no request, and progress for none: nothing happens */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{}}", bid2);
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
            "\"progressToken\":\"%s\",\"progress\":2}}",
            bid);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"action\":\"cancel\"}}", bid3);
    r = fx_request(&f, "8", "ping", NULL);
    CHECK(r && path(r, "result"));
    json_object_put(r);
    fx_stop(&f);
}

static void test_duplicate_id(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));

    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_wait\"}}");
    struct json_object *m = fx_wait(&f, match_method, "notifications/message", "waiting", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);

    struct json_object *r = call_tool(&f, "7", "mcp_a_wait");
    CHECK_INT(path_int(r, "error.code"), -32600);
    CHECK_CONTAINS(path_str(r, "error.message"), "id already in use");
    json_object_put(r);
    r = fx_request(&f, "7", "ping", NULL);
    CHECK_INT(path_int(r, "error.code"), -32600);
    json_object_put(r);
    /* "7" is another id */
    r = call_tool(&f, "\"7\"", "mcp_a_echo");
    CHECK_STR(path_str(r, "result.content.0.text"), "a echo null");
    json_object_put(r);
    /* the refused call never reached the server: its "waiting" would have come before */
    CHECK((m = fx_wait(&f, match_method, "notifications/message", "waiting", 0)) == NULL);
    json_object_put(m);

    /* once the first is over, the id is free again */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":7}}");
    m = fx_wait(&f, match_method, "notifications/message", "cancelled", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    r = call_tool(&f, "7", "mcp_a_echo");
    CHECK_STR(path_str(r, "result.content.0.text"), "a echo null");
    json_object_put(r);
    fx_stop(&f);
}

static void test_call_timeout(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{\"a\":{\"command\":\"@SELF@\",\"args\":[\"--server\","
                       "\"a\"],\"timeout\":400}}}",
                       DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));
    struct json_object *r = call_tool(&f, "2", "mcp_a_wait");
    CHECK(json_object_get_boolean(path(r, "result.isError")));
    const char *t = path_str(r, "result.content.0.text");
    CHECK_CONTAINS(t, "timed out");
    CHECK_CONTAINS(t, "notifications/cancelled");
    CHECK_CONTAINS(t, "server 'a'");
    CHECK_CONTAINS(t, "retried");
    json_object_put(r);
    /* and the server did get it */
    struct json_object *m =
        fx_wait(&f, match_method, "notifications/message", "timed out", WAIT_MS);
    CHECK_CONTAINS(path_str(m, "params.data"), "cancelled");
    json_object_put(m);
    fx_stop(&f);
}

static void test_sampling_forwarded(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"sampling\":{}},"
                   "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}");

    /* sent before any list, while the server is still connecting: held until it is listed */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_sample\"}}");
    struct json_object *q = fx_wait(&f, match_method, "sampling/createMessage", NULL, WAIT_MS);
    CHECK(q != NULL);
    const char *bid = path_str(q, "id");
    CHECK(bid && bid[0] == 'b');
    char idtext[64];
    snprintf(idtext, sizeof(idtext), "%s", bid ? bid : "x");
    CHECK_INT(path_int(q, "params.maxTokens"), 10);
    json_object_put(q);
    fx_send(&f,
            "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"role\":\"assistant\","
            "\"content\":{\"type\":\"text\",\"text\":\"hi-from-agent\"},\"model\":\"m\"}}",
            idtext);
    struct json_object *r = fx_wait(&f, match_id, "2", NULL, WAIT_MS);
    /* the server got the answer with its own id */
    CHECK_STR(path_str(r, "result.content.0.text"), "sampled \"srv-1\" hi-from-agent");
    json_object_put(r);

    /* the server takes a request back: the agent is told with the bridge's id */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"mcp_a_sample_cancel\"}}");
    q = fx_wait(&f, match_method, "sampling/createMessage", NULL, WAIT_MS);
    CHECK(q != NULL);
    snprintf(idtext, sizeof(idtext), "\"%s\"", path_str(q, "id") ? path_str(q, "id") : "x");
    CHECK(idtext[1] == 'b');
    json_object_put(q);
    q = fx_wait(&f, match_method, "notifications/cancelled", idtext, WAIT_MS);
    CHECK(q != NULL);
    CHECK_STR(jstr(path(q, "params.requestId")), idtext);
    CHECK_STR(path_str(q, "params.reason"), "changed my mind");
    json_object_put(q);
    r = fx_wait(&f, match_id, "3", NULL, WAIT_MS);
    CHECK_STR(path_str(r, "result.content.0.text"), "asked and cancelled");
    json_object_put(r);

    /* roots/list_changed from the agent reaches the server */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}");
    r = fx_wait(&f, match_method, "notifications/message", "roots changed", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    fx_stop(&f);
}

static void test_list_changed(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    CHECK(!strstr(names_of(r, "tools", "name"), "mcp_a_extra"));
    json_object_put(r);

    r = fx_request(&f, "2", "tools/call", "{\"name\":\"mcp_a_add_tool\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "added");
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    r = fx_request(&f, "3", "tools/list", NULL);
    CHECK_CONTAINS(names_of(r, "tools", "name"), "mcp_a_extra");
    json_object_put(r);
    r = fx_request(&f, "4", "tools/call", "{\"name\":\"mcp_a_extra\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "a extra null");
    json_object_put(r);
    fx_stop(&f);
}

static void test_slow_server(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{" SERVER("fast", ",\"tools=echo\"") "," SERVER(
                           "slow", ",\"tools=echo\",\"init_delay=20000\"") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 700),
              0);
    initialize(&f, NULL);
    int64_t t0 = now_ms();
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    int64_t took = now_ms() - t0;
    CHECK_STR(names_of(r, "tools", "name"), "mcp_fast_echo");
    CHECK(took >= 500); /* it did wait for the slow one ... */
    CHECK(took < 5000); /* ... but not for long */
    json_object_put(r);
    fx_stop(&f);
}

/* A server that says list_changed 50 times in a row is listed at most twice more (one listing
 * in flight, one after it), and the agent hears nothing: its list did not change. */
static void test_list_changed_flood(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", ",\"tools=flood,lists\"") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"), "mcp_a_flood mcp_a_lists");
    json_object_put(r);
    r = call_tool(&f, "2", "mcp_a_flood");
    CHECK_STR(path_str(r, "result.content.0.text"), "flooded");
    json_object_put(r);
    fx_idle(&f, 500);
    r = call_tool(&f, "3", "mcp_a_lists");
    const char *n = path_str(r, "result.content.0.text");
    CHECK(n && atoi(n) >= 2 && atoi(n) <= 3);
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, 200);
    CHECK(r == NULL);
    json_object_put(r);
    fx_stop(&f);
}

/* A reload that removes the only server not connected yet answers the first list at once. */
static void test_reload_settles(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{" SERVER("fast", ",\"tools=echo\"") "," SERVER(
                           "slow", ",\"tools=echo\",\"init_delay=20000\"") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 8000),
              0);
    initialize(&f, NULL);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    fx_idle(&f, 300); /* fast is listed by now; slow holds the answer */
    struct json_object *r = fx_wait(&f, match_id, "1", NULL, 0);
    CHECK(r == NULL);
    json_object_put(r);
    struct mcp_config *c = config_from("{\"mcpServers\":{" SERVER("fast", ",\"tools=echo\"") "}}");
    struct err e = ERR_INIT;
    CHECK_INT(downstream_reload(f.d, c, &e), 0);
    mcp_config_free(c);
    r = fx_wait(&f, match_id, "1", NULL, 2000);
    CHECK_STR(names_of(r, "tools", "name"), "mcp_fast_echo");
    json_object_put(r);
    fx_stop(&f);
}

/* A server that comes after the first lists (here: added by a reload) changes resources and
 * templates at once: the agent is told once. */
static void test_late_server_one_notification(void)
{
    struct fx f;
    CHECK_INT(
        fx_start(&f, "{\"mcpServers\":{" SERVER("fast", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
        0);
    initialize(&f, NULL);
    static const char *const lists[] = {"tools/list", "prompts/list", "resources/list",
                                        "resources/templates/list"};
    for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
        char id[8];
        snprintf(id, sizeof(id), "%zu", i + 1);
        struct json_object *r = fx_request(&f, id, lists[i], NULL);
        CHECK(r && path(r, "result"));
        json_object_put(r);
    }
    struct mcp_config *c =
        config_from("{\"mcpServers\":{" SERVER("fast", "") "," SERVER("late", "") "}}");
    struct err e = ERR_INIT;
    CHECK_INT(downstream_reload(f.d, c, &e), 0);
    mcp_config_free(c);
    struct json_object *r =
        fx_wait(&f, match_method, "notifications/resources/list_changed", NULL, WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    fx_idle(&f, 300);
    r = fx_wait(&f, match_method, "notifications/resources/list_changed", NULL, 0);
    CHECK(r == NULL); /* one, not one per list */
    json_object_put(r);
    r = fx_request(&f, "9", "resources/templates/list", NULL);
    CHECK_STR(names_of(r, "resourceTemplates", "uriTemplate"),
              "mem://fast/items/{id} mem://late/items/{id}");
    json_object_put(r);
    fx_stop(&f);
}

static void test_eof_reaps(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "," SERVER("b", "") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));
    pid_t pids[2] = {0, 0};
    const char *tools[2] = {"{\"name\":\"mcp_a_pid\"}", "{\"name\":\"mcp_b_pid\"}"};
    for (int i = 0; i < 2; i++) {
        char id[8];
        snprintf(id, sizeof(id), "%d", 10 + i);
        struct json_object *r = fx_request(&f, id, "tools/call", tools[i]);
        const char *t = path_str(r, "result.content.0.text");
        pids[i] = t ? (pid_t)atoi(t) : 0;
        CHECK(pids[i] > 0);
        json_object_put(r);
    }
    /* a call in flight is answered before the bridge ends */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"w\",\"method\":\"tools/call\",\"params\":{"
                "\"name\":\"mcp_a_wait\"}}");
    struct json_object *w = fx_wait(&f, match_method, "notifications/message", "waiting", WAIT_MS);
    CHECK(w != NULL);
    json_object_put(w);

    int64_t t0 = now_ms();
    CHECK_INT(shutdown(f.sv[1], SHUT_WR), 0);
    while (!f.done && now_ms() - t0 < DOWNSTREAM_SHUTDOWN_MS + 2000)
        fx_idle(&f, 50);
    CHECK(f.done);
    CHECK_INT(f.done_status, 0);
    for (int i = 0; i < 2; i++)
        CHECK(pids[i] > 0 && kill(pids[i], 0) < 0 && errno == ESRCH);
    struct json_object *r = fx_wait(&f, match_id, "\"w\"", NULL, 1000);
    CHECK(r && json_object_get_boolean(path(r, "result.isError")));
    json_object_put(r);
    fx_stop(&f);
}

static void test_shutdown_before_initialize(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("a", "") "}}", DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    struct json_object *r = fx_request(&f, "1", "ping", NULL);
    CHECK(r && path(r, "result"));
    json_object_put(r);
    downstream_shutdown(f.d);
    downstream_shutdown(f.d); /* idempotent */
    int64_t t0 = now_ms();
    while (!f.done && now_ms() - t0 < 3000)
        fx_idle(&f, 20);
    CHECK(f.done);
    CHECK_INT(f.done_status, 0);
    fx_stop(&f);
}

static void test_reload(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{" SERVER("a", ",\"tools=echo\"") "," SERVER(
                           "b", ",\"tools=echo,pid\"") "}}",
                       DOWNSTREAM_AGGREGATE, NULL, 0),
              0);
    initialize(&f, NULL);
    struct json_object *r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"), "mcp_a_echo mcp_b_echo mcp_b_pid");
    json_object_put(r);
    r = fx_request(&f, "2", "tools/call", "{\"name\":\"mcp_b_pid\"}");
    char pid_before[32];
    snprintf(pid_before, sizeof(pid_before), "%s",
             path_str(r, "result.content.0.text") ? path_str(r, "result.content.0.text") : "?");
    json_object_put(r);

    /* c is added, a removed, b left alone */
    struct mcp_config *c = config_from("{\"mcpServers\":{" SERVER(
        "b", ",\"tools=echo,pid\"") "," SERVER("c", ",\"tools=echo\"") "}}");
    struct err e = ERR_INIT;
    CHECK_INT(downstream_reload(f.d, c, &e), 0);
    mcp_config_free(c);
    r = fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    /* the list changes twice (a goes at once, c comes when it is connected) */
    int64_t deadline = now_ms() + WAIT_MS;
    bool ok = false;
    while (!ok && now_ms() < deadline) {
        r = fx_request(&f, "3", "tools/list", NULL);
        ok = strcmp(names_of(r, "tools", "name"), "mcp_b_echo mcp_b_pid mcp_c_echo") == 0;
        json_object_put(r);
        if (!ok)
            json_object_put(
                fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS));
    }
    CHECK(ok);
    r = fx_request(&f, "4", "tools/call", "{\"name\":\"mcp_b_pid\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), pid_before);
    json_object_put(r);
    r = fx_request(&f, "5", "tools/call", "{\"name\":\"mcp_a_echo\"}");
    CHECK_INT(path_int(r, "error.code"), -32602);
    json_object_put(r);
    r = fx_request(&f, "6", "tools/call", "{\"name\":\"mcp_c_echo\"}");
    CHECK_STR(path_str(r, "result.content.0.text"), "c echo null");
    json_object_put(r);

    /* a changed entry is replaced; the new server gets the agent's subscriptions */
    r = fx_request(&f, "70", "resources/subscribe", "{\"uri\":\"mem://b/readme\"}");
    CHECK(r && path(r, "result"));
    json_object_put(r);
    struct json_object *m =
        fx_wait(&f, match_method, "notifications/message", "subscribed mem://b/readme", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    c = config_from("{\"mcpServers\":{" SERVER("b", ",\"tools=echo,pid,more\"") "}}");
    CHECK_INT(downstream_reload(f.d, c, &e), 0);
    mcp_config_free(c);
    deadline = now_ms() + WAIT_MS;
    ok = false;
    while (!ok && now_ms() < deadline) {
        json_object_put(
            fx_wait(&f, match_method, "notifications/tools/list_changed", NULL, WAIT_MS));
        r = fx_request(&f, "7", "tools/list", NULL);
        ok = strcmp(names_of(r, "tools", "name"), "mcp_b_echo mcp_b_pid mcp_b_more") == 0;
        json_object_put(r);
    }
    CHECK(ok);
    r = fx_request(&f, "8", "tools/call", "{\"name\":\"mcp_b_pid\"}");
    CHECK(path_str(r, "result.content.0.text") &&
          strcmp(path_str(r, "result.content.0.text"), pid_before) != 0);
    json_object_put(r);
    m = fx_wait(&f, match_method, "notifications/message", "subscribed mem://b/readme", WAIT_MS);
    CHECK(m != NULL);
    json_object_put(m);
    fx_stop(&f);
}

static void test_single(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f,
                       "{\"mcpServers\":{" SERVER("other", "") "," SERVER(
                           "solo", ",\"tools=echo,progress,wait\",\"instructions=use me\"") "}}",
                       DOWNSTREAM_SINGLE, "solo", 0),
              0);
    struct json_object *r = fx_request(&f, "\"i\"", "initialize",
                                       "{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{},"
                                       "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}");
    CHECK_STR(path_str(r, "result.serverInfo.name"), "solo");
    CHECK_STR(path_str(r, "result.serverInfo.version"), "1.2.3");
    CHECK_STR(path_str(r, "result.instructions"), "use me");
    CHECK_STR(path_str(r, "result.protocolVersion"), "2025-03-26");
    CHECK(path(r, "result.capabilities.tools") != NULL);
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");

    r = fx_request(&f, "1", "tools/list", NULL);
    CHECK_STR(names_of(r, "tools", "name"), "echo progress wait");
    json_object_put(r);
    /* ping too goes to the server */
    r = fx_request(&f, "\"pi\"", "ping", NULL);
    CHECK(r && json_object_is_type(path(r, "result"), json_type_object));
    json_object_put(r);
    r = fx_wait(&f, match_method, "notifications/message", "pinged", 0);
    CHECK(r != NULL);
    json_object_put(r);
    r = fx_request(&f, "\"x\"", "tools/call", "{\"name\":\"echo\",\"arguments\":{\"k\":\"v\"}}");
    CHECK_STR(path_str(r, "result.content.0.text"), "solo echo {\"k\":\"v\"}");
    json_object_put(r);
    /* unknown methods are the server's to refuse */
    r = fx_request(&f, "2", "foo/bar", NULL);
    CHECK_INT(path_int(r, "error.code"), -32601);
    CHECK_STR(path_str(r, "error.message"), "method not found");
    json_object_put(r);
    r = fx_request(&f, "3", "prompts/list", NULL);
    CHECK_STR(names_of(r, "prompts", "name"), "greet");
    json_object_put(r);
    struct mcp_config *c = config_from("{\"mcpServers\":{" SERVER("solo", "") "}}");
    struct err e = ERR_INIT;
    CHECK_INT(downstream_reload(f.d, c, &e), -EOPNOTSUPP);
    mcp_config_free(c);

    /* progress and cancellation pass through as in aggregate mode */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"progress\",\"_meta\":{\"progressToken\":7}}}");
    r = fx_wait(&f, match_method, "notifications/progress", "\"progressToken\":7", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    r = fx_wait(&f, match_id, "4", NULL, WAIT_MS);
    CHECK_CONTAINS(path_str(r, "result.content.0.text"), "token ");
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"wait\"}}");
    r = fx_wait(&f, match_method, "notifications/message", "waiting", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":5}}");
    r = fx_wait(&f, match_method, "notifications/message", "cancelled", WAIT_MS);
    CHECK(r != NULL);
    json_object_put(r);
    fx_stop(&f);
}

static void test_single_fails(void)
{
    struct fx f;
    CHECK_INT(fx_start(&f, "{\"mcpServers\":{" SERVER("solo", ",\"init_delay=20000\"") "}}",
                       DOWNSTREAM_SINGLE, "solo", 500),
              0);
    int64_t t0 = now_ms();
    struct json_object *r = fx_request(&f, "1", "initialize",
                                       "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}");
    CHECK_INT(path_int(r, "error.code"), -32000);
    CHECK_CONTAINS(path_str(r, "error.message"), "'solo'");
    CHECK(now_ms() - t0 < 5000);
    json_object_put(r);
    fx_stop(&f);

    CHECK_INT(fx_start(&f, "{\"mcpServers\":{\"gone\":{\"command\":\"credkit-no-such-command\"}}}",
                       DOWNSTREAM_SINGLE, "gone", 0),
              0);
    t0 = now_ms();
    r = fx_request(&f, "1", "initialize",
                   "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}");
    CHECK_INT(path_int(r, "error.code"), -32000);
    CHECK_CONTAINS(path_str(r, "error.message"), "credkit-no-such-command");
    CHECK(now_ms() - t0 < 5000);
    json_object_put(r);
    fx_stop(&f);

    /* a name that is not configured */
    CHECK(fx_start(&f, "{\"mcpServers\":{" SERVER("solo", "") "}}", DOWNSTREAM_SINGLE, "nope", 0) <
          0);
    fx_stop(&f);
}

/* Flow control: an agent that sends calls without reading its answers is no longer read once
 * what is queued for it passes DOWNSTREAM_AGENT_HIGH_WATER (its requests wait in the socket,
 * and the server sees no more of them); when it reads, every call is answered, none dropped.
 * The agent sends one call at a time, the next once the server has it (a burst would be read
 * whole before the first answer came back), and takes a call the server has not seen within
 * SLOW_AGENT_STALL_MS as the bridge no longer reading. */
#define SLOW_AGENT_CALLS    40
#define SLOW_AGENT_STALL_MS 3000 /* generous: the machine may be busy with other tests */

static size_t calls_seen(const char *count)
{
    struct stat st;
    return stat(count, &st) == 0 ? (size_t)st.st_size : 0;
}

static void send_big_call(struct fx *f, size_t i)
{
    fx_send(f,
            "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"tools/call\",\"params\":{"
            "\"name\":\"mcp_a_big\"}}",
            100 + i);
}

static void test_slow_agent(void)
{
    const char *count = tmp_path("big-calls");
    char config[8192];
    (void)unlink(count);
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"a\":{\"command\":\"@SELF@\",\"args\":[\"--server\",\"a\","
             "\"tools=big\",\"count=%s\"]}}}",
             count);
    struct fx f;
    CHECK_INT(fx_start(&f, config, DOWNSTREAM_AGGREGATE, NULL, 0), 0);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));

    framing_set_reading(f.fr, false); /* the agent stops reading */
    size_t sent = 0;
    while (sent < SLOW_AGENT_CALLS) {
        send_big_call(&f, sent++);
        int64_t stall_end = now_ms() + SLOW_AGENT_STALL_MS;
        while (calls_seen(count) < sent && now_ms() < stall_end)
            fx_idle(&f, 5);
        if (calls_seen(count) < sent)
            break;
    }
    size_t seen = calls_seen(count);
    /* the bridge stopped reading, not before the mark and soon after it */
    CHECK(seen < sent);
    CHECK(seen >= DOWNSTREAM_AGENT_HIGH_WATER / BIG_ANSWER);
    CHECK(seen <= DOWNSTREAM_AGENT_HIGH_WATER / BIG_ANSWER + 8);

    framing_set_reading(f.fr, true); /* the agent reads, and sends the rest */
    while (sent < SLOW_AGENT_CALLS)
        send_big_call(&f, sent++);
    size_t answered = 0;
    int64_t deadline = now_ms() + WAIT_MS; /* for all: a bridge that stays stopped fails fast */
    for (size_t i = 0; i < SLOW_AGENT_CALLS; i++) {
        char id[32];
        snprintf(id, sizeof(id), "%zu", 100 + i);
        struct json_object *r = fx_wait(&f, match_id, id, NULL, (int)(deadline - now_ms()));
        const char *t = path_str(r, "result.content.0.text");
        if (t && strlen(t) == BIG_ANSWER)
            answered++;
        else
            fprintf(stderr, "no answer of %d bytes to call %s\n", BIG_ANSWER, id);
        json_object_put(r);
    }
    CHECK_INT(answered, SLOW_AGENT_CALLS);
    CHECK_INT(calls_seen(count), SLOW_AGENT_CALLS);
    CHECK(!file_contains(f.log_path, "dropped"));
    fx_stop(&f);
}

/* ---- measurement (not a test: test_downstream --bench [N] [debug]) ----------------------- */

static double cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
}

/* N sequential tools/call through the bridge to one scripted server: the CPU of this process
 * (the agent side and the bridge; the server is a child) per round trip. */
static int bench_main(int argc, char **argv)
{
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
    bool debug = argc > 3 && strcmp(argv[3], "debug") == 0;
    struct fx f;
    if (n <= 0 || fx_start(&f, "{\"mcpServers\":{" SERVER("a", ",\"tools=echo\"") "}}",
                           DOWNSTREAM_AGGREGATE, NULL, 0) < 0)
        return 2;
    log_set_level(f.log, debug ? LOG_DEBUG : LOG_WARN);
    initialize(&f, NULL);
    json_object_put(fx_request(&f, "1", "tools/list", NULL));
    double c0 = cpu_us();
    int64_t t0 = now_ms();
    long ok = 0;
    for (long i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "%ld", 100 + i);
        struct json_object *r =
            fx_request(&f, id, "tools/call", "{\"name\":\"mcp_a_echo\",\"arguments\":{\"i\":1}}");
        ok += path_str(r, "result.content.0.text") != NULL;
        json_object_put(r);
    }
    double cpu = cpu_us() - c0;
    int64_t wall = now_ms() - t0;
    printf("%ld calls (%ld answered), log %s: %.1f us CPU per call, %.1f us wall per call\n", n, ok,
           debug ? "debug" : "warn", cpu / (double)n, (double)wall * 1000.0 / (double)n);
    fx_stop(&f);
    return ok == n ? 0 : 1;
}

int main(int argc, char **argv)
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
    if (argc > 1 && strcmp(argv[1], "--bench") == 0)
        return bench_main(argc, argv);

    test_fn fns[] = {
        test_aggregate_initialize,
        test_aggregate_catalogue,
        test_upstream_dies,
        test_progress_and_cancel,
        test_sampling_forwarded,
        test_elicitation_and_roots,
        test_duplicate_id,
        test_call_timeout,
        test_subscriptions_survive_reconnects,
        test_list_changed,
        test_slow_server,
        test_list_changed_flood,
        test_reload_settles,
        test_late_server_one_notification,
        test_eof_reaps,
        test_shutdown_before_initialize,
        test_reload,
        test_single,
        test_single_fails,
        test_slow_agent,
    };
    return tests_run("", fns, ELEMENTSOF(fns));
}
