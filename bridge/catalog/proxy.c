/* proxy.c - the proxy tool's definition and its arguments (proxy.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "credkit/json.h"

#include "catalog/proxy.h"

#define ARGS_MAX (1024u * 1024u) /* of args given as a string */

static const char DEFINITION[] =
    "{\"name\":\"" PROXY_TOOL_NAME "\","
    "\"title\":\"MCP servers\","
    "\"description\":\"The tools of every MCP server behind this bridge, also those not listed "
    "directly. No arguments: each server's status. server: that server's tools. search: find "
    "tools by words (any of them; regex: true for a regular expression; includeSchemas: true "
    "adds their input schemas). describe: one tool's parameters. connect: connect a server "
    "now. tool + args: call a tool. One mode per call: tool, connect, describe, search, server, "
    "in that order.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"tool\":{\"type\":\"string\",\"description\":\"A tool to call (its exposed name, as "
    "search and server show it), with args\"},"
    "\"args\":{\"type\":\"object\",\"description\":\"The tool's arguments: a JSON object (a "
    "string holding one works too)\"},"
    "\"connect\":{\"type\":\"string\",\"description\":\"A server to connect now\"},"
    "\"describe\":{\"type\":\"string\",\"description\":\"A tool whose description and "
    "parameters to show\"},"
    "\"search\":{\"type\":\"string\",\"description\":\"Words to look for in tool names and "
    "descriptions (any of them matches)\"},"
    "\"regex\":{\"type\":\"boolean\",\"description\":\"search is a POSIX extended regular "
    "expression (case-insensitive)\"},"
    "\"includeSchemas\":{\"type\":\"boolean\",\"description\":\"search also shows each tool's "
    "input schema\"},"
    "\"server\":{\"type\":\"string\",\"description\":\"A server whose tools to list\"}}},"
    "\"annotations\":{\"title\":\"MCP servers\",\"openWorldHint\":true}}";

struct json_object *proxy_tool_definition(void)
{
    return json_tokener_parse(DEFINITION);
}

/* ---- arguments --------------------------------------------------------------------------- */

int proxy_refuse(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, size, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

/* The string member key (NULL when absent, null or ""); -EINVAL for another type. */
static int string_arg(struct json_object *o, const char *key, const char **ret, char *err,
                      size_t size)
{
    struct json_object *v = json_object_object_get(o, key);
    *ret = NULL;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return proxy_refuse(err, size, "'%s' must be a string, not %s", key,
                            json_type_desc(json_object_get_type(v)));
    const char *s = json_object_get_string(v);
    *ret = *s ? s : NULL;
    return 0;
}

static int bool_arg(struct json_object *o, const char *key, bool *ret, char *err, size_t size)
{
    struct json_object *v = json_object_object_get(o, key);
    *ret = false;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_boolean))
        return proxy_refuse(err, size, "'%s' must be true or false, not %s", key,
                            json_type_desc(json_object_get_type(v)));
    *ret = json_object_get_boolean(v);
    return 0;
}

/* args: an object, a string holding one ("" and absent: {}); a new reference in *ret. */
static int call_args(struct json_object *o, struct json_object **ret, char *err, size_t size)
{
    struct json_object *v = json_object_object_get(o, "args");
    if (!v)
        v = json_object_object_get(o, "arguments");
    if (json_object_is_type(v, json_type_object)) {
        *ret = json_object_get(v);
        return 0;
    }
    const char *text = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    if (!v || (text && !text[strspn(text, " \t\r\n")])) {
        *ret = json_object_new_object();
        return *ret ? 0 : -ENOMEM;
    }
    if (!text)
        return proxy_refuse(err, size,
                            "'args' must be a JSON object (or a string holding one), not %s",
                            json_type_desc(json_object_get_type(v)));
    struct json_object *parsed = NULL;
    struct err e = ERR_INIT;
    int r = json_parse(text, strlen(text), ARGS_MAX, &parsed, &e);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return proxy_refuse(err, size, "'args' is a string that does not hold JSON: %s",
                            err_msg(&e));
    if (!json_object_is_type(parsed, json_type_object)) {
        r = proxy_refuse(err, size, "'args' must hold a JSON object, not %s",
                         json_type_desc(json_object_get_type(parsed)));
        json_object_put(parsed);
        return r;
    }
    *ret = parsed;
    return 0;
}

int proxy_request_parse(struct json_object *arguments, struct proxy_request *ret, char *err,
                        size_t err_size)
{
    static const struct {
        const char *key;
        enum proxy_mode mode;
    } modes[] = {
        {"tool", PROXY_CALL},     {"connect", PROXY_CONNECT}, {"describe", PROXY_DESCRIBE},
        {"search", PROXY_SEARCH}, {"server", PROXY_SERVER},
    };
    struct proxy_request rq = {.mode = PROXY_STATUS};
    int r;

    if (arguments && !json_object_is_type(arguments, json_type_object))
        return proxy_refuse(err, err_size, "the arguments must be an object, not %s",
                            json_type_desc(json_object_get_type(arguments)));
    /* the adapter's precedence: tool > connect > describe > search > server > status */
    for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
        const char *s;
        r = string_arg(arguments, modes[i].key, &s, err, err_size);
        if (r < 0)
            return r;
        if (s && rq.mode == PROXY_STATUS) {
            rq.mode = modes[i].mode;
            rq.target = s;
        }
    }
    r = bool_arg(arguments, "regex", &rq.regex, err, err_size);
    if (r >= 0)
        r = bool_arg(arguments, "includeSchemas", &rq.include_schemas, err, err_size);
    if (r < 0)
        return r;
    if (rq.mode == PROXY_SEARCH && strlen(rq.target) > PROXY_PATTERN_MAX)
        return proxy_refuse(err, err_size, "the search is %zu bytes: at most %d", strlen(rq.target),
                            PROXY_PATTERN_MAX);
    if (rq.mode == PROXY_CALL) {
        r = call_args(arguments, &rq.args, err, err_size);
        if (r < 0)
            return r;
    }
    *ret = rq;
    return 0;
}

void proxy_request_release(struct proxy_request *r)
{
    if (!r)
        return;
    json_object_put(r->args);
    r->args = NULL;
}

bool proxy_tool_waits(struct json_object *params)
{
    struct proxy_request rq;
    char err[256];
    if (proxy_request_parse(json_object_object_get(params, "arguments"), &rq, err, sizeof(err)) < 0)
        return false;
    bool waits = rq.mode != PROXY_STATUS && rq.mode != PROXY_CONNECT;
    proxy_request_release(&rq);
    return waits;
}
