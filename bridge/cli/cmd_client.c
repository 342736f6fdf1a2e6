/* cmd_client.c - "test", and the one-shot client of one server that "call" (cmd_call.c) and
 * `list --check` share
 *
 * Each connects one upstream (no reconnect: a connection lost is a failure to report, not to
 * hide), does its one thing on the loop, closes the upstream (stdio servers stopped and reaped,
 * HTTP sessions deleted) and exits with a status that says how it went. There is no agent
 * behind these commands, so the server's own requests are answered here (see call_help). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/jsonw.h"
#include "credkit/mcp_config.h"
#include "credkit/textsafe.h"

#include "cli/cli.h"
#include "cli/cmd_client.h"
#include "cli/cmd_client_int.h"
#include "config/server_config.h"
#include "creds/cred_setup.h"
#include "downstream/downstream.h"
#include "core/jsonrpc.h"
#include "core/loop.h"
#include "core/stderr_tail.h"
#include "upstream/upstream.h"

#define DESC_WIDTH     72                     /* a tool's description in `test`'s listing */
#define CLOSE_GRACE_MS DOWNSTREAM_SHUTDOWN_MS /* closing the upstream, at most */

static const char test_help[] =
    "usage: mcp-bridge test SERVER [--json] [--allow-http] [--connect-timeout D]\n"
    "\n"
    "Connect to SERVER (a name from mcp.json, or an http(s) URL), list its tools through every\n"
    "page, print how many there are and their names, and disconnect. The exit status says\n"
    "whether it worked: 0 yes, 1 the server failed (the message says why, and the last lines\n"
    "the server wrote on its stderr follow), 3 no such server or an invalid entry,\n"
    "6 the server needs a sign-in (the message names the command to run, e.g. 'mcp-auth\n"
    "NAME'). -v shows every line of the server's stderr as it comes.\n"
    "\n"
    "Credentials are asked as the bridge asks them at every connect: ${NAME} of 'secrets', the\n"
    "token of an OAuth entry of 'mcp-auth', a headersHelper run ('mcp-bridge list' shows their\n"
    "state without connecting; -v shows each refresh).\n"
    "\n"
    "  --json               print {\"version\": 1, \"name\", \"transport\", \"protocol_version\",\n"
    "                       \"era\" (\"modern\" or \"legacy\"), \"server_info\", \"tools\":\n"
    "                       [names]} instead; on failure {\"version\": 1, \"error\": {\"code\",\n"
    "                       \"message\", \"fix\"}} (docs/json.md)\n"
    "  --allow-http         with a URL: let credentials (mcp-auth's token) go to a plain\n"
    "                       http:// URL whose host is not loopback (\"allowHttp\": true of an\n"
    "                       entry)\n"
    "  --connect-timeout D  how long the server may take to connect (default 15s)\n"
    "\n"
    "examples:\n"
    "  mcp-bridge test github\n"
    "  mcp-bridge test https://mcp.example.com/mcp --json\n";

static void probe_done(struct client *c);

/* A probe's outcome, kept instead of printed. */
static void probe_record(struct client *c, enum client_probe_state state, const char *message)
{
    if (c->probe->state != CLIENT_PROBE_NOT_RUN)
        return;
    c->probe->state = state;
    if (message && !c->probe->message)
        c->probe->message = strdup(message); /* NULL on ENOMEM: shown without a reason */
}

/* A failure: printed for test and call, kept for a probe. */
void client_failed(struct client *c, int error, const char *message)
{
    const char *m = message ? message : strerror(error < 0 ? -error : EIO);
    client_waited(c);
    if (c->set)
        probe_record(c, error == CRED_LOGIN_REQUIRED ? CLIENT_PROBE_LOGIN : CLIENT_PROBE_FAILED, m);
    else
        log_error(c->log, "%s", m);
}

static void on_guard(struct loop_timer *t, void *userdata)
{
    struct client *c = userdata;
    (void)t;
    c->guard = NULL;
    log_warn(c->log, "server '%s' did not close in time: stopping it", c->server->name);
    if (c->set) {
        probe_done(c);
        return;
    }
    loop_quit(c->loop, 0);
}

/* The end: closes the upstream; the loop ends when it is CLOSED (or after CLOSE_GRACE_MS). */
void client_waited(struct client *c)
{
    progress_end(c->progress);
    c->progress = NULL;
}

void client_finish(struct client *c, int status)
{
    if (c->finished)
        return;
    c->finished = true;
    client_waited(c);
    c->status = status;
    /* a server that failed: what it said last, it often says why ("API_KEY is not set") */
    if (status == BRIDGE_EXIT_FAILED && !c->set)
        stderr_tail_log(&c->tail, c->log, LOG_ERROR, c->server->name);
    upstream_list_cancel(c->list);
    c->list = NULL;
    upstream_call_cancel(c->call, "the client is closing");
    c->call = NULL;
    upstream_close(c->u);
    if (upstream_state(c->u) == UPSTREAM_CLOSED ||
        loop_timer_add(c->loop, CLOSE_GRACE_MS, on_guard, c, &c->guard) < 0) {
        if (c->set)
            probe_done(c);
        else
            loop_quit(c->loop, 0);
    }
}

/* The exit status for an upstream failure: a sign-in that is needed (the provider's "login
 * required", -ENOKEY, its message naming the command) has its own. */
int client_failure_status(int error)
{
    return error == CRED_LOGIN_REQUIRED ? BRIDGE_EXIT_LOGIN_REQUIRED : BRIDGE_EXIT_FAILED;
}

/* ---- test ---- */

/* The first line of s, at most width bytes (cut at a UTF-8 boundary), into out. */
static void first_line(const char *s, size_t width, char *out, size_t size)
{
    size_t n = strcspn(s, "\r\n");
    if (n > width) {
        n = width;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
    }
    if (n >= size)
        n = size - 1;
    memcpy(out, s, n);
    out[n] = '\0';
    if (n < strcspn(s, "\r\n") && n + 4 < size)
        memcpy(out + n, "...", 4);
}

/* The era of a connected server, as test prints it. */
static const char *era_name(const struct upstream *u)
{
    return upstream_era(u) == UPSTREAM_ERA_MODERN ? "modern" : "legacy";
}

static int print_test_json(struct client *c, struct json_object *tools)
{
    struct json_object *o = jsonw_answer_new(), *names = json_object_new_array();
    int r = -ENOMEM;
    if (!o || !names)
        goto out;
    for (size_t i = 0; i < json_object_array_length(tools); i++) {
        const char *n = json_get_string(json_object_array_get_idx(tools, i), "name");
        if (n && json_object_array_add(names, json_object_new_string(n)) < 0)
            goto out;
    }
    const char *pv = upstream_protocol_version(c->u);
    struct json_object *info = upstream_server_info(c->u);
    if (json_object_object_add(o, "name", json_object_new_string(c->server->name)) < 0 ||
        json_object_object_add(
            o, "transport", json_object_new_string(mcp_transport_name(c->server->transport))) < 0 ||
        json_object_object_add(o, "protocol_version", pv ? json_object_new_string(pv) : NULL) < 0 ||
        json_object_object_add(o, "era", json_object_new_string(era_name(c->u))) < 0 ||
        json_object_object_add(o, "server_info", json_object_get(info)) < 0)
        goto out;
    if (json_object_object_add(o, "tools", names) < 0)
        goto out;
    names = NULL;
    printf("%s\n",
           json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                 JSON_C_TO_STRING_NOSLASHESCAPE));
    r = 0;
out:
    json_object_put(o);
    json_object_put(names);
    return r;
}

/* Everything test prints comes from the server or the file: escaped for the terminal. */
static void print_test_text(struct client *c, struct json_object *tools)
{
    struct json_object *info = upstream_server_info(c->u);
    const char *sname = json_get_string(info, "name"), *sver = json_get_string(info, "version");
    const char *pv = upstream_protocol_version(c->u);
    size_t n = json_object_array_length(tools), width = 0;
    struct buf e1, e2, e3, e4;
    buf_init(&e1, 64 * 1024);
    buf_init(&e2, 64 * 1024);
    buf_init(&e3, 64 * 1024);
    buf_init(&e4, 64 * 1024);
    printf("'%s': connected over %s (protocol %s (%s)%s%s%s%s)\n",
           text_escaped(&e1, c->server->name), mcp_transport_name(c->server->transport),
           pv ? text_escaped(&e2, pv) : "?", era_name(c->u), sname ? ", server " : "",
           sname ? text_escaped(&e3, sname) : "", sver ? " " : "",
           sver ? text_escaped(&e4, sver) : "");
    for (size_t i = 0; i < n; i++) {
        const char *name = json_get_string(json_object_array_get_idx(tools, i), "name");
        size_t len = name ? strlen(text_escaped(&e1, name)) : 0;
        if (len > width && len <= 40)
            width = len;
    }
    printf("%zu tool%s%s\n", n, n == 1 ? "" : "s", n ? ":" : "");
    for (size_t i = 0; i < n; i++) {
        struct json_object *t = json_object_array_get_idx(tools, i);
        const char *name = json_get_string(t, "name"), *desc = json_get_string(t, "description");
        char d[DESC_WIDTH + 8];
        first_line(desc ? desc : "", DESC_WIDTH, d, sizeof(d));
        printf("  %-*s%s%s\n", (int)width, name ? text_escaped(&e1, name) : "(no name)",
               *d ? "  " : "", text_escaped(&e2, d));
    }
    buf_release(&e1);
    buf_release(&e2);
    buf_release(&e3);
    buf_release(&e4);
}

static void on_tools(struct upstream *u, struct json_object *items, int error, const char *message,
                     void *userdata)
{
    struct client *c = userdata;
    (void)u;
    c->list = NULL;
    client_waited(c);
    if (error < 0) {
        if (c->set)
            client_failed(c, error, message);
        else
            log_error(c->log, "'%s': cannot list the tools: %s", c->server->name,
                      message ? message : strerror(-error));
        client_finish(c, client_failure_status(error));
        return;
    }
    int status = BRIDGE_EXIT_OK;
    if (c->set) {
        c->probe->n_tools = json_object_array_length(items);
        probe_record(c, CLIENT_PROBE_READY, NULL);
    } else if (c->json) {
        if (print_test_json(c, items) < 0) {
            log_error(c->log, "out of memory");
            status = BRIDGE_EXIT_FAILED;
        }
    } else {
        print_test_text(c, items);
    }
    json_object_put(items);
    (void)fflush(stdout);
    client_finish(c, status);
}

static void start_test(struct client *c)
{
    if (!upstream_has_capability(c->u, "tools")) {
        /* a server without tools is no failure: say what it offers instead */
        struct json_object *empty = json_object_new_array();
        if (!empty) {
            client_failed(c, -ENOMEM, NULL);
            client_finish(c, BRIDGE_EXIT_FAILED);
            return;
        }
        if (!c->set)
            log_info(c->log, "'%s' does not offer tools", c->server->name);
        on_tools(c->u, empty, 0, NULL, c);
        return;
    }
    if (upstream_list(c->u, "tools/list", "tools", on_tools, c, &c->list) < 0) {
        client_failed(c, -ENOMEM, "out of memory");
        client_finish(c, BRIDGE_EXIT_FAILED);
    }
}

/* ---- the upstream ---- */

static void on_state(struct upstream *u, enum upstream_state state, int error, const char *message,
                     void *userdata)
{
    struct client *c = userdata;
    (void)u;
    switch (state) {
    case UPSTREAM_READY:
        if (c->started || c->finished)
            return;
        c->started = true;
        if (c->progress) {
            char what[300];
            snprintf(what, sizeof(what),
                     c->kind == CLIENT_TEST ? "listing the tools of '%s'"
                                            : "waiting for '%s' to answer",
                     c->server->name);
            progress_set(c->progress, what);
        }
        if (c->kind == CLIENT_TEST)
            start_test(c);
        else
            c->start_call(c); /* cmd_call.c's */
        return;
    case UPSTREAM_LOGIN:
        error = CRED_LOGIN_REQUIRED; /* the message names the command that signs in */
        /* fall through */
    case UPSTREAM_BACKOFF:
    case UPSTREAM_FAILED:
        if (c->finished)
            return;
        /* with no_reconnect the upstream leaves saying why to us */
        client_failed(c, error, message);
        client_finish(c, client_failure_status(error));
        return;
    case UPSTREAM_CLOSED:
        if (!c->set)
            loop_quit(c->loop, 0);
        else if (c->finished)
            probe_done(c);
        else {
            client_failed(c, -EIO, "the connection ended without an answer");
            client_finish(c, BRIDGE_EXIT_FAILED);
        }
        return;
    default:
        return;
    }
}

/* The content of an elicitation accepted with the defaults of the requested schema. */
static struct json_object *elicit_defaults(struct json_object *params)
{
    struct json_object *content = json_object_new_object();
    struct json_object *props =
        json_get_object(json_get_object(params, "requestedSchema"), "properties");
    if (!content || !props)
        return content;
    json_object_object_foreach(props, key, schema)
    {
        struct json_object *def = NULL;
        if (!json_object_object_get_ex(schema, "default", &def) || !def)
            continue;
        if (json_object_object_add(content, key, json_object_get(def)) < 0) {
            json_object_put(content);
            return NULL;
        }
    }
    return content;
}

static struct json_object *error_object(int code, const char *message)
{
    struct json_object *o = json_object_new_object();
    if (o && (json_object_object_add(o, "code", json_object_new_int(code)) < 0 ||
              json_object_object_add(o, "message", json_object_new_string(message)) < 0)) {
        json_object_put(o);
        o = NULL;
    }
    return o;
}

static void on_request(struct upstream *u, uint64_t gen, struct json_object *msg, void *userdata)
{
    struct client *c = userdata;
    struct json_object *id = NULL, *result = NULL, *error = NULL;
    struct json_object *params = json_get_object(msg, "params");
    const char *method = json_get_string(msg, "method");
    (void)json_object_object_get_ex(msg, "id", &id);
    if (!method)
        method = "";

    if (strcmp(method, "elicitation/create") == 0) {
        const char *mode = json_get_string(params, "mode");
        const char *q = json_get_string(params, "message");
        result = json_object_new_object();
        if (mode && strcmp(mode, "form") != 0) {
            /* only forms can be answered without a person (a URL must be visited) */
            log_warn(c->log,
                     "'%s' asked to open a URL (\"%s\"): declined, as nobody is here to "
                     "do it",
                     c->server->name, q ? q : "");
            if (result &&
                json_object_object_add(result, "action", json_object_new_string("decline")) < 0) {
                json_object_put(result);
                result = NULL;
            }
        } else {
            struct json_object *content = elicit_defaults(params);
            log_info(c->log, "'%s' asked \"%s\": accepted with the schema's defaults",
                     c->server->name, q ? q : "");
            if (result && content &&
                json_object_object_add(result, "action", json_object_new_string("accept")) >= 0 &&
                json_object_object_add(result, "content", content) >= 0)
                content = NULL;
            else {
                json_object_put(result);
                result = NULL;
            }
            json_object_put(content);
        }
    } else if (strcmp(method, "roots/list") == 0) {
        result = json_object_new_object();
        if (result && json_object_object_add(result, "roots", json_object_new_array()) < 0) {
            json_object_put(result);
            result = NULL;
        }
    } else if (strcmp(method, "sampling/createMessage") == 0) {
        log_info(c->log, "'%s' asked for sampling: refused, as there is no model here",
                 c->server->name);
        error = error_object(JRPC_METHOD_NOT_FOUND,
                             "sampling is not available: mcp-bridge call has no model to ask");
    } else {
        error = error_object(JRPC_METHOD_NOT_FOUND, "method not found");
    }
    if (!result && !error)
        error = error_object(JRPC_INTERNAL_ERROR, "out of memory");
    if (result || error) {
        int r = upstream_respond(u, gen, id, result, error);
        if (r < 0)
            log_warn(c->log, "'%s': cannot answer its %s request: %s", c->server->name, method,
                     strerror(-r));
    }
    json_object_put(result);
    json_object_put(error);
}

static void on_notification(struct upstream *u, const char *method, struct json_object *msg,
                            void *userdata)
{
    struct client *c = userdata;
    (void)u;
    if (strcmp(method, "notifications/message") != 0)
        return;
    struct json_object *params = json_get_object(msg, "params"), *data = NULL;
    const char *level = json_get_string(params, "level");
    (void)json_object_object_get_ex(params, "data", &data);
    struct buf e1, e2, e3;
    buf_init(&e1, 64 * 1024);
    buf_init(&e2, 1024);
    buf_init(&e3, 64 * 1024);
    log_info(c->log, "'%s' [%s]: %s", text_escaped(&e1, c->server->name),
             text_escaped(&e2, level ? level : "log"),
             text_escaped(&e3, json_object_is_type(data, json_type_string)
                                   ? json_object_get_string(data)
                                   : json_object_to_json_string(data)));
    buf_release(&e1);
    buf_release(&e2);
    buf_release(&e3);
}

static void on_stderr(struct upstream *u, const char *line, size_t len, void *userdata)
{
    struct client *c = userdata;
    (void)u;
    stderr_tail_add(&c->tail, line, len);
    if (log_get_level(c->log) < LOG_INFO)
        return;
    char shown[4104]; /* a whole line (stdio_child.h's bound), escaped */
    stderr_tail_escape_n(shown, sizeof(shown), line, len);
    log_info(c->log, "server '%s': %s", c->server->name, shown);
}

static void on_signal(int signo, void *userdata)
{
    struct client *c = userdata;
    if (c->finished) {
        loop_quit(c->loop, 0); /* a second one: do not wait for the close */
        return;
    }
    log_error(c->log, "%s", signo == SIGINT ? "interrupted" : "terminated");
    if (c->call) {
        struct upstream_call *call = c->call;
        c->call = NULL;
        upstream_call_cancel(call, signo == SIGINT ? "interrupted" : "terminated");
    }
    client_finish(c, BRIDGE_EXIT_FAILED);
}

static const struct upstream_handler client_handler = {
    .on_state = on_state,
    .on_request = on_request,
    .on_notification = on_notification,
    .on_stderr = on_stderr,
};

/* Connects to target and runs the command on the loop. */
int client_run(struct client *c, const char *target, const struct args_globals *g)
{
    struct json_object *caps = NULL;
    struct mcp_config *config = NULL;
    struct err e = ERR_INIT;
    const char *name = NULL;
    int r;

    c->status = BRIDGE_EXIT_FAILED;
    config = cli_config_for(target, NULL, c->config_flags, g, c->log, &name);
    if (!config)
        return cli_config_for_failed(target);
    c->server = mcp_config_find(config, name);

    r = loop_new(&c->loop);
    if (r >= 0)
        r = loop_signal(c->loop, SIGINT, on_signal, c);
    if (r >= 0)
        r = loop_signal(c->loop, SIGTERM, on_signal, c);
    if (r < 0) {
        log_error(c->log, "cannot start the event loop: %s", strerror(-r));
        goto out;
    }
    /* what can be answered without an agent (on_request): forms and roots, not sampling */
    caps = json_tokener_parse("{\"roots\": {}, \"elicitation\": {\"form\": {}}}");
    if (!caps) {
        log_error(c->log, "out of memory");
        goto out;
    }
    struct upstream_opts o = {
        .loop = c->loop,
        .log = c->log,
        .server = c->server,
        .client_capabilities = caps,
        .connect_timeout_ms = c->connect_timeout_ms,
        .no_reconnect = true,
    };
    struct server_settings st;
    server_settings_get(config, &st);
    o.request_timeout_ms = server_config_entry_request_ms(c->server, &st);
    struct cred_setup cs = {
        .loop = c->loop,
        .log = c->log,
        .g = g,
        .config = config,
        .auth_target = cli_is_url(target) ? target : NULL,
    };
    r = cred_setup_provider(&cs, config, c->server, &o.credentials, &e);
    if (r >= 0) {
        r = upstream_new(&o, &client_handler, c, &c->u, &e);
        if (r < 0)
            cred_provider_free(o.credentials);
    }
    if (r < 0) {
        log_error(c->log, "%s", err_msg(&e));
        c->status = r == -EINVAL ? BRIDGE_EXIT_CONFIG : BRIDGE_EXIT_FAILED;
        goto out;
    }
    upstream_connect(c->u);
    char what[300];
    snprintf(what, sizeof(what), "connecting to '%s'", c->server->name);
    (void)progress_start(c->loop, g, what, &c->progress); /* none without memory: no harm */
    r = loop_run(c->loop);
    if (r < 0) {
        log_error(c->log, "the event loop failed: %s", strerror(-r));
        c->status = BRIDGE_EXIT_FAILED;
    } else if (!c->finished) {
        log_error(c->log, "'%s': the connection ended without an answer", c->server->name);
        c->status = BRIDGE_EXIT_FAILED;
    }
out:
    client_waited(c);
    upstream_free(c->u);
    c->u = NULL;
    loop_timer_cancel(c->guard);
    c->guard = NULL;
    loop_free(c->loop);
    c->loop = NULL;
    json_object_put(caps);
    mcp_config_free(config);
    return c->status;
}

/* ---- probes: several servers connected once, on one loop (cmd_client.h) ---- */

struct probe_set {
    struct loop *loop;
    struct log *log;
    const struct args_globals *g;
    const struct mcp_config *config;
    struct json_object *caps;
    struct client_probe *probes;
    struct client **clients; /* one per probe, freed at the end */
    size_t n, next, running, parallel, total, finished;
    int64_t connect_timeout_ms;
    struct progress *progress; /* "checking N servers: K done" on a terminal */
};

/* Starts probe i: its client, credentials and upstream; a failure to start is its outcome. */
static void probe_start(struct probe_set *set, size_t i)
{
    struct client_probe *p = &set->probes[i];
    struct err e = ERR_INIT;
    struct client *c = calloc(1, sizeof(*c));
    if (!c) {
        p->state = CLIENT_PROBE_FAILED;
        return;
    }
    *c = (struct client){.kind = CLIENT_TEST,
                         .loop = set->loop,
                         .log = set->log,
                         .server = p->server,
                         .connect_timeout_ms = set->connect_timeout_ms,
                         .set = set,
                         .probe = p};
    set->clients[i] = c;
    struct upstream_opts o = {
        .loop = set->loop,
        .log = set->log,
        .server = p->server,
        .client_capabilities = set->caps,
        .connect_timeout_ms = set->connect_timeout_ms,
        .no_reconnect = true,
    };
    struct server_settings st;
    server_settings_get(set->config, &st);
    o.request_timeout_ms = server_config_entry_request_ms(p->server, &st);
    struct cred_setup cs = {.loop = set->loop, .log = set->log, .g = set->g, .config = set->config};
    int r = cred_setup_provider(&cs, set->config, p->server, &o.credentials, &e);
    if (r >= 0) {
        r = upstream_new(&o, &client_handler, c, &c->u, &e);
        if (r < 0)
            cred_provider_free(o.credentials);
    }
    if (r < 0) {
        c->done = c->finished = true;
        probe_record(c, CLIENT_PROBE_FAILED, err_msg(&e));
        return;
    }
    set->running++;
    upstream_connect(c->u);
}

/* Fills the free slots; quits the loop when every probe is done. */
static void probe_fill(struct probe_set *set)
{
    while (set->running < set->parallel && set->next < set->n) {
        size_t i = set->next++;
        if (set->probes[i].server)
            probe_start(set, i);
    }
    if (set->running == 0)
        loop_quit(set->loop, 0);
}

/* c's upstream is closed (or would not close): its slot goes to the next probe. */
static void probe_done(struct client *c)
{
    if (c->done)
        return;
    c->done = true;
    loop_timer_cancel(c->guard);
    c->guard = NULL;
    c->set->running--;
    c->set->finished++;
    if (c->set->progress) {
        char what[128];
        snprintf(what, sizeof(what), "checking %zu server%s: %zu done", c->set->total,
                 c->set->total == 1 ? "" : "s", c->set->finished);
        progress_set(c->set->progress, what);
    }
    probe_fill(c->set);
}

static void on_probe_signal(int signo, void *userdata)
{
    struct probe_set *set = userdata;
    log_error(set->log, "%s", signo == SIGINT ? "interrupted" : "terminated");
    loop_quit(set->loop, 0);
}

int client_probe_run(const struct mcp_config *config, struct client_probe *probes, size_t n,
                     size_t parallel, int64_t connect_timeout_ms, const struct args_globals *g,
                     struct log *log)
{
    struct probe_set set = {.log = log,
                            .g = g,
                            .config = config,
                            .probes = probes,
                            .n = n,
                            .parallel = parallel ? parallel : 1,
                            .connect_timeout_ms = connect_timeout_ms};
    int r = -ENOMEM;

    set.clients = calloc(n ? n : 1, sizeof(*set.clients));
    set.caps = json_tokener_parse("{\"roots\": {}, \"elicitation\": {\"form\": {}}}");
    if (!set.clients || !set.caps)
        goto out;
    r = loop_new(&set.loop);
    if (r >= 0)
        r = loop_signal(set.loop, SIGINT, on_probe_signal, &set);
    if (r >= 0)
        r = loop_signal(set.loop, SIGTERM, on_probe_signal, &set);
    if (r < 0)
        goto out;
    for (size_t i = 0; i < n; i++)
        set.total += probes[i].server != NULL;
    char what[128];
    snprintf(what, sizeof(what), "checking %zu server%s", set.total, set.total == 1 ? "" : "s");
    (void)progress_start(set.loop, g, what, &set.progress);
    probe_fill(&set);
    r = loop_run(set.loop);
    progress_end(set.progress);
out:
    for (size_t i = 0; set.clients && i < n; i++) {
        struct client *c = set.clients[i];
        if (!c)
            continue;
        /* an interrupted probe has no outcome: it is shown as not checked */
        if (!c->finished && c->probe->state != CLIENT_PROBE_NOT_RUN)
            c->probe->state = CLIENT_PROBE_NOT_RUN;
        loop_timer_cancel(c->guard);
        upstream_free(c->u);
        free(c);
    }
    free(set.clients);
    loop_free(set.loop);
    json_object_put(set.caps);
    return r < 0 ? r : 0;
}

void client_probe_release(struct client_probe *p)
{
    if (!p)
        return;
    free(p->message);
    p->message = NULL;
}

enum { OPT_JSON = 256, OPT_TIMEOUT, OPT_CONNECT_TIMEOUT, OPT_ALLOW_HTTP };
const struct option cli_client_options[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"allow-http", no_argument, NULL, OPT_ALLOW_HTTP},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {0},
};

/* The options of test and call (call alone takes --timeout). -EINVAL after a usage error
 * (reported). */
int client_options(struct client *c, int argc, char **argv)
{
    int opt;
    /* "-" (stdin) is an operand, not an option: getopt leaves a lone "-" alone */
    while ((opt = getopt_long(argc, argv, "", cli_client_options, NULL)) != -1) {
        switch (opt) {
        case OPT_JSON:
            c->json = true;
            break;
        case OPT_ALLOW_HTTP:
            c->config_flags |= CLI_ALLOW_HTTP;
            break;
        case OPT_TIMEOUT:
            if (c->kind != CLIENT_CALL) {
                log_error(c->log, "--timeout goes with call; test takes --connect-timeout");
                return -EINVAL;
            }
            if (cli_parse_duration("--timeout", optarg, c->log, &c->timeout_ms) < 0)
                return -EINVAL;
            break;
        case OPT_CONNECT_TIMEOUT:
            if (cli_parse_duration("--connect-timeout", optarg, c->log, &c->connect_timeout_ms) < 0)
                return -EINVAL;
            break;
        default:
            (void)cli_option_error(c->log, argv, "", cli_client_options);
            return -EINVAL;
        }
    }
    return 0;
}

int cmd_test(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    struct client c = {.kind = CLIENT_TEST, .log = log};

    if (args_wants_help(argc, argv)) {
        fputs(test_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    if (client_options(&c, argc, argv) < 0)
        return BRIDGE_EXIT_USAGE;
    if (argc - optind != 1) {
        log_error(log, "test takes exactly one SERVER, a name or a URL (see 'mcp-bridge test "
                       "--help')");
        return BRIDGE_EXIT_USAGE;
    }
    return client_run(&c, argv[optind], g);
}
