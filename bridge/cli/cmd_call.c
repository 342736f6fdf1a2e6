/* cmd_call.c - "call": one tool of one server called once, its result printed (cmd_client_int.h
 * runs the client). There is no agent behind the command, so the server's own requests are
 * answered in cmd_client.c (see call_help). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/jsonw.h"
#include "credkit/suggest.h"
#include "credkit/textsafe.h"

#include "cli/cli.h"
#include "cli/cmd_client_int.h"
#include "core/jsonrpc.h"

#define ARGS_MAX_BYTES (16u * 1024u * 1024u) /* JSON-ARGS, on the command line or stdin */

static const char call_help[] =
    "usage: mcp-bridge call SERVER TOOL [JSON-ARGS] [--json] [--timeout D] [--allow-http]\n"
    "\n"
    "Connect to SERVER (a name from mcp.json, or an http(s) URL), call TOOL with the arguments\n"
    "JSON-ARGS (a JSON object; '-' reads it from stdin; default {}), print the result and\n"
    "disconnect. Text is printed as it is; other content is summarised, one line each\n"
    "(\"[image image/png, 1234 bytes]\", \"[resource link URI]\"); structuredContent is printed\n"
    "when there is no text.\n"
    "\n"
    "  --json               print {\"version\": 1, \"result\": the result object} on one\n"
    "                       line instead (with \"error\" too when the tool reports one; on\n"
    "                       failure {\"version\": 1, \"error\": {...}}: docs/json.md)\n"
    "  --timeout D          how long the call may take (default: the entry's\n"
    "                       \"requestTimeoutMs\", else its \"timeout\", else the settings'\n"
    "                       \"requestTimeoutMs\", else 60s; progress from the server extends\n"
    "                       it, up to 10 times)\n"
    "  --connect-timeout D  how long the server may take to connect (default 15s)\n"
    "  --allow-http         with a URL: let credentials (mcp-auth's token) go to a plain\n"
    "                       http:// URL whose host is not loopback\n"
    "\n"
    "There is no agent to ask, so requests from the server during the call are answered here:\n"
    "elicitation/create is accepted with the default of each field of the requested schema\n"
    "(fields without a default are left out), roots/list gets an empty list, and\n"
    "sampling/createMessage is refused (-32601, no model to ask).\n"
    "\n"
    "exit status: 0 ok, 1 the server failed (could not connect, JSON-RPC error, timeout), 2\n"
    "usage error (JSON-ARGS not a JSON object), 3 no such server, no such tool (the close names\n"
    "are said) or an invalid entry, 4 the tool answered with isError (its content is printed\n"
    "on stderr), 6 the server needs a sign-in (the message names the command to run, e.g.\n"
    "'mcp-auth NAME').\n"
    "\n"
    "examples:\n"
    "  mcp-bridge call everything echo '{\"message\": \"hello\"}'\n"
    "  echo '{\"a\": 1, \"b\": 2}' | mcp-bridge call everything get-sum - --json\n"
    "  mcp-bridge call https://mcp.example.com/mcp search '{\"q\": \"x\"}' --timeout 2m\n";

/* ---- call ---- */

/* The size of base64 data once decoded. */
static size_t base64_bytes(const char *s)
{
    size_t n = 0, pad = 0;
    for (; *s; s++) {
        if (*s == '=')
            pad++;
        else if (*s != ' ' && *s != '\n' && *s != '\r' && *s != '\t')
            n++;
    }
    (void)pad;
    return n * 3 / 4;
}

/* Writes a tool result for a person: see call_help. */
static void render_result(FILE *out, struct json_object *result)
{
    struct json_object *content = json_get_array(result, "content");
    bool any_text = false;
    for (size_t i = 0; content && i < json_object_array_length(content); i++) {
        struct json_object *it = json_object_array_get_idx(content, i);
        const char *type = json_get_string(it, "type");
        const char *mime = json_get_string(it, "mimeType");
        if (!type) {
            fprintf(out, "[content without a type]\n");
        } else if (strcmp(type, "text") == 0) {
            const char *t = json_get_string(it, "text");
            size_t n = t ? strlen(t) : 0;
            if (n)
                (void)fwrite(t, 1, n, out);
            if (!n || t[n - 1] != '\n')
                (void)fputc('\n', out);
            any_text = true;
        } else if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0) {
            const char *data = json_get_string(it, "data");
            fprintf(out, "[%s %s, %zu bytes]\n", type, mime ? mime : "(no type)",
                    data ? base64_bytes(data) : 0);
        } else if (strcmp(type, "resource_link") == 0) {
            const char *uri = json_get_string(it, "uri"), *name = json_get_string(it, "name");
            fprintf(out, "[resource link %s%s%s%s%s%s]\n", uri ? uri : "(no uri)",
                    name ? " \"" : "", name ? name : "", name ? "\"" : "", mime ? ", " : "",
                    mime ? mime : "");
        } else if (strcmp(type, "resource") == 0) {
            struct json_object *res = json_get_object(it, "resource");
            const char *uri = json_get_string(res, "uri"), *text = json_get_string(res, "text");
            const char *blob = json_get_string(res, "blob");
            mime = json_get_string(res, "mimeType");
            fprintf(out, "[resource %s%s%s, %zu bytes%s]\n", uri ? uri : "(no uri)",
                    mime ? " " : "", mime ? mime : "",
                    text   ? strlen(text)
                    : blob ? base64_bytes(blob)
                           : 0,
                    text ? " of text" : "");
        } else {
            fprintf(out, "[%s content]\n", type);
        }
    }
    struct json_object *sc = NULL;
    if (!any_text && json_object_object_get_ex(result, "structuredContent", &sc) && sc)
        fprintf(out, "%s\n",
                json_object_to_json_string_ext(sc, JSON_C_TO_STRING_PRETTY |
                                                       JSON_C_TO_STRING_SPACED |
                                                       JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* call --json's answer, on one line: {"version": 1, "result": the result as the server sent
 * it}, and the error object too when the tool answered with isError (docs/json.md). */
static void print_call_json(struct client *c, struct json_object *result, bool is_error)
{
    struct json_object *a = jsonw_answer_new();
    char msg[512];
    (void)snprintf(msg, sizeof(msg), "tool '%s' reported an error (its result is in \"result\")",
                   c->tool);
    if (!a || json_object_object_add(a, "result", json_object_get(result)) < 0 ||
        (is_error && jsonw_answer_add_error(a, "tool_error", msg, NULL) < 0)) {
        log_error(c->log, "cannot print the result: out of memory");
        json_object_put(a);
        return;
    }
    size_t len;
    const char *text = jrpc_serialize(a, &len);
    (void)fwrite(text, 1, len, stdout);
    (void)fputc('\n', stdout);
    json_object_put(a);
}

static void on_call_response(struct upstream_call *call, struct json_object *response, int error,
                             const char *message, void *userdata)
{
    struct client *c = userdata;
    (void)call;
    c->call = NULL;
    client_waited(c);
    if (error < 0) {
        log_error(c->log, "%s", message ? message : strerror(-error));
        client_finish(c, client_failure_status(error));
        return;
    }
    struct json_object *err = json_get_object(response, "error");
    if (err) {
        const char *m = json_get_string(err, "message");
        int64_t code = 0;
        (void)json_get_int64(err, "code", &code);
        log_error(c->log, "'%s': tool '%s' failed: %s (JSON-RPC error %lld)", c->server->name,
                  c->tool, m ? m : "no message", (long long)code);
        client_finish(c, BRIDGE_EXIT_FAILED);
        return;
    }
    struct json_object *result = json_get_object(response, "result");
    if (!result) {
        log_error(c->log, "'%s': the answer to tools/call has no result object", c->server->name);
        client_finish(c, BRIDGE_EXIT_FAILED);
        return;
    }
    bool is_error = false;
    (void)json_get_bool(result, "isError", &is_error);
    if (c->json) {
        print_call_json(c, result, is_error);
    } else if (is_error) {
        log_error(c->log, "tool '%s' reported an error:", c->tool);
        (void)fflush(stdout);
        render_result(stderr, result);
    } else {
        render_result(stdout, result);
    }
    /* the answer is out before the server is stopped, which may take a moment */
    (void)fflush(stdout);
    client_finish(c, is_error ? BRIDGE_EXIT_TOOL_ERROR : BRIDGE_EXIT_OK);
}

static void on_call_progress(struct upstream_call *call, struct json_object *params, void *userdata)
{
    struct client *c = userdata;
    (void)call;
    const char *m = json_get_string(params, "message");
    struct json_object *p = NULL, *t = NULL;
    (void)json_object_object_get_ex(params, "progress", &p);
    (void)json_object_object_get_ex(params, "total", &t);
    if (c->progress) {
        char what[300];
        snprintf(what, sizeof(what), "'%s': %s%s%s%s%s", c->tool,
                 p ? json_object_to_json_string(p) : "?", t ? "/" : "",
                 t ? json_object_to_json_string(t) : "", m ? " " : "", m ? m : "");
        progress_set(c->progress, what);
        progress_clear(c->progress); /* the log line below, if any, starts clean */
    }
    log_info(c->log, "progress %s%s%s%s%s", p ? json_object_to_json_string(p) : "?", t ? "/" : "",
             t ? json_object_to_json_string(t) : "", m ? ": " : "", m ? m : "");
}

static void start_call(struct client *c)
{
    struct json_object *params = json_object_new_object(), *meta = json_object_new_object();
    int r = -ENOMEM;
    if (!params || !meta)
        goto out;
    if (json_object_object_add(params, "name", json_object_new_string(c->tool)) < 0 ||
        json_object_object_add(params, "arguments", json_object_get(c->args)) < 0)
        goto out;
    /* a progress token, so that a long call that reports progress is not cut by the timeout */
    if (json_object_object_add(meta, "progressToken", json_object_new_int(1)) < 0)
        goto out;
    if (json_object_object_add(params, "_meta", meta) < 0)
        goto out;
    meta = NULL;
    r = upstream_call(c->u, "tools/call", params, c->timeout_ms, on_call_response, on_call_progress,
                      c, &c->call);
out:
    json_object_put(params);
    json_object_put(meta);
    if (r < 0) {
        log_error(c->log, "out of memory");
        client_finish(c, BRIDGE_EXIT_FAILED);
    }
}

/* The tools are listed before a call: a tool the server does not have is named with the close
 * ones; and a modern server's x-mcp-header parameters are mirrored over HTTP as Mcp-Param-*
 * headers, which the upstream learns from the list, and a tool it dropped for invalid markings
 * must not be called. */
static void on_call_tools(struct upstream *u, struct json_object *items, int error,
                          const char *message, void *userdata)
{
    struct client *c = userdata;
    (void)u;
    c->list = NULL;
    if (error) {
        log_error(c->log, "%s", message ? message : strerror(-error));
        client_finish(c, client_failure_status(error));
        return;
    }
    bool found = false;
    struct suggest sg;
    suggest_init(&sg, c->tool);
    for (size_t i = 0; !found && i < json_object_array_length(items); i++) {
        const char *name = json_get_string(json_object_array_get_idx(items, i), "name");
        found = name && strcmp(name, c->tool) == 0;
        if (name)
            suggest_add(&sg, name);
    }
    if (!found) {
        /* not the tool's own error (4) but a name that is not there: as a server that is not
         * found, a configuration error, with the close names */
        char shown[256];
        struct buf close;
        buf_init(&close, 4096);
        stderr_tail_escape_n(shown, sizeof(shown), c->tool, strlen(c->tool));
        if (suggest_append(&sg, NULL, &close) < 0)
            buf_reset(&close);
        log_error(c->log,
                  "'%s' lists no tool '%s'%s run 'mcp-bridge test %s' to see its tools (a tool "
                  "whose x-mcp-header markings are invalid is left out, with a warning)",
                  c->server->name, shown, close.len ? buf_str(&close) : ":", c->server->name);
        buf_release(&close);
        suggest_release(&sg);
        json_object_put(items);
        client_finish(c, BRIDGE_EXIT_CONFIG);
        return;
    }
    suggest_release(&sg);
    json_object_put(items);
    start_call(c);
}

static void start_listed_call(struct client *c)
{
    if (upstream_list(c->u, "tools/list", "tools", on_call_tools, c, &c->list) < 0) {
        log_error(c->log, "out of memory");
        client_finish(c, BRIDGE_EXIT_FAILED);
    }
}

/* When the server is READY: the tools are listed first, so that a name the server does not
 * have is a "not found" with the close names (3), not a failure of the tool (4); on a modern
 * server the list also gives the x-mcp-header markings (on_call_tools). */
static void call_start(struct client *c)
{
    start_listed_call(c);
}

/* Reads JSON-ARGS from stdin ("-"), bounded. */
static int read_stdin(struct buf *b, struct log *log)
{
    for (;;) {
        int r = buf_reserve(b, 65536);
        if (r < 0) {
            log_error(log, "JSON-ARGS from stdin: more than %u bytes", ARGS_MAX_BYTES);
            return r;
        }
        ssize_t n = read(STDIN_FILENO, b->data + b->len, 65536);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            log_error(log, "cannot read JSON-ARGS from stdin: %s", strerror(errno));
            return -errno;
        }
        if (n == 0)
            return 0;
        b->len += (size_t)n;
        b->data[b->len] = '\0';
    }
}

/* JSON-ARGS: a JSON object ("-": from stdin). */
static int parse_args(const char *arg, struct log *log, struct json_object **ret)
{
    struct json_object *o = NULL;
    struct err e = ERR_INIT;
    struct buf in;
    int r;

    buf_init(&in, ARGS_MAX_BYTES);
    if (strcmp(arg, "-") == 0) {
        r = read_stdin(&in, log);
        if (r < 0)
            goto out;
    } else {
        r = buf_append_str(&in, arg);
        if (r < 0) {
            log_error(log, "JSON-ARGS: more than %u bytes", ARGS_MAX_BYTES);
            goto out;
        }
    }
    r = json_parse(in.data ? in.data : "", in.len, ARGS_MAX_BYTES, &o, &e);
    if (r < 0) {
        log_error(log,
                  "JSON-ARGS%s is not JSON: %s (write it as a JSON object, e.g. "
                  "'{\"message\": \"hi\"}')",
                  strcmp(arg, "-") == 0 ? " (from stdin)" : "", err_msg(&e));
        goto out;
    }
    if (!json_object_is_type(o, json_type_object)) {
        log_error(log,
                  "JSON-ARGS must be a JSON object of the tool's arguments (e.g. "
                  "'{\"message\": \"hi\"}'), not %s",
                  json_type_desc(json_object_get_type(o)));
        r = -EINVAL;
        goto out;
    }
    *ret = o;
    o = NULL;
    r = 0;
out:
    json_object_put(o);
    buf_release(&in);
    return r;
}

int cmd_call(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    struct client c = {.kind = CLIENT_CALL, .log = log, .start_call = call_start};
    int status;

    if (args_wants_help(argc, argv)) {
        fputs(call_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    if (client_options(&c, argc, argv) < 0)
        return BRIDGE_EXIT_USAGE;
    int n = argc - optind;
    if (n < 2 || n > 3) {
        log_error(log, "call takes SERVER TOOL [JSON-ARGS] (see 'mcp-bridge call --help')");
        return BRIDGE_EXIT_USAGE;
    }
    c.tool = argv[optind + 1];
    if (!*c.tool) {
        log_error(log, "call: the TOOL name is empty");
        return BRIDGE_EXIT_USAGE;
    }
    if (n == 3) {
        if (parse_args(argv[optind + 2], log, &c.args) < 0)
            return BRIDGE_EXIT_USAGE;
    } else {
        c.args = json_object_new_object();
        if (!c.args)
            return BRIDGE_EXIT_FAILED;
    }
    status = client_run(&c, argv[optind], g);
    json_object_put(c.args);
    return status;
}
