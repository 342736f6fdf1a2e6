/* proxy_tool.c - the "mcp" tool (proxy_tool.h): parse the mode, answer in compact text, or send
 * the call it names down the agent's own tools/call path. */
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"

#include "downstream/catalog.h"
#include "downstream/downstream_int.h"
#include "downstream/proxy_tool.h"

#define MAX_TERMS       32
#define ARGS_MAX        (1024u * 1024u) /* of args given as a string */
#define DESCRIBE_MAX    2000            /* bytes of a tool's description in describe */
#define SUGGEST_MAX     5
#define SERVERS_LISTED  20 /* servers named after an unknown one */
#define REGEX_DEPTH_MAX 32

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

static int fail(char *err, size_t size, const char *fmt, ...) _printf_(3, 4);
static int fail(char *err, size_t size, const char *fmt, ...)
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
        return fail(err, size, "'%s' must be a string, not %s", key,
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
        return fail(err, size, "'%s' must be true or false, not %s", key,
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
        return fail(err, size, "'args' must be a JSON object (or a string holding one), not %s",
                    json_type_desc(json_object_get_type(v)));
    struct json_object *parsed = NULL;
    struct err e = ERR_INIT;
    int r = json_parse(text, strlen(text), ARGS_MAX, &parsed, &e);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return fail(err, size, "'args' is a string that does not hold JSON: %s", err_msg(&e));
    if (!json_object_is_type(parsed, json_type_object)) {
        r = fail(err, size, "'args' must hold a JSON object, not %s",
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
        return fail(err, err_size, "the arguments must be an object, not %s",
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
        return fail(err, err_size, "the search is %zu bytes: at most %d", strlen(rq.target),
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

/* ---- regular expressions ----------------------------------------------------------------- */

/* The end of a bracket expression that opens at p[0] == '[' (the index of its ']'), or 0 when
 * it does not close. */
static size_t bracket_end(const char *p)
{
    size_t i = 1;
    if (p[i] == '^')
        i++;
    if (p[i] == ']')
        i++; /* a literal ']' first */
    for (; p[i]; i++) {
        if (p[i] == '[' && (p[i + 1] == ':' || p[i + 1] == '.' || p[i + 1] == '=')) {
            const char *close = strstr(p + i + 2, (char[]){p[i + 1], ']', 0});
            if (!close)
                return 0;
            i = (size_t)(close - p) + 1;
            continue;
        }
        if (p[i] == ']')
            return i;
    }
    return 0;
}

/* A "{n}", "{n,}" or "{n,m}" at p: its length, and the largest bound in *ret_max; 0 when it is
 * not one (a literal '{'). */
static size_t bound_len(const char *p, unsigned long *ret_max)
{
    size_t i = 1;
    unsigned long max = 0;
    bool digits = false;
    for (int part = 0; part < 2; part++) {
        unsigned long v = 0;
        while (isdigit((unsigned char)p[i])) {
            v = v * 10 + (unsigned long)(p[i] - '0');
            if (v > 1000000)
                v = 1000000;
            i++;
            digits = true;
        }
        if (v > max)
            max = v;
        if (part == 0 && p[i] == ',')
            i++;
        else
            break;
    }
    if (!digits || p[i] != '}')
        return 0;
    *ret_max = max;
    return i + 1;
}

int proxy_regex_check(const char *p, char *err, size_t size)
{
    size_t n = strlen(p);
    if (n > PROXY_PATTERN_MAX)
        return fail(err, size, "the pattern is %zu bytes: at most %d", n, PROXY_PATTERN_MAX);
    bool repeats[REGEX_DEPTH_MAX]; /* the open group has a repetition inside */
    int depth = 0;
    bool after_group = false, group_repeats = false; /* the last atom was a group (that ...) */
    bool after_repeat = false;                       /* the last thing was a repetition */
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        bool quant = c == '*' || c == '+' || c == '?';
        size_t blen = 0;
        unsigned long bmax = 0;
        if (c == '{') {
            blen = bound_len(p + i, &bmax);
            quant = blen > 0;
        }
        if (quant) {
            if (bmax > PROXY_REPEAT_MAX)
                return fail(err, size, "the pattern repeats {%lu} times: at most %d", bmax,
                            PROXY_REPEAT_MAX);
            if ((after_group && group_repeats) || after_repeat)
                return fail(err, size,
                            "the pattern repeats a repetition (like \"(a+)+\"): that can take "
                            "very long to match; write it without nesting");
            if (depth > 0)
                repeats[depth - 1] = true;
            after_repeat = true;
            after_group = false;
            if (blen)
                i += blen - 1;
            continue;
        }
        after_repeat = false;
        after_group = false;
        switch (c) {
        case '\\':
            if (isdigit((unsigned char)p[i + 1]))
                return fail(err, size, "the pattern has a back reference (\\%c): not allowed",
                            p[i + 1]);
            if (p[i + 1])
                i++;
            break;
        case '[': {
            size_t end = bracket_end(p + i);
            if (!end)
                return fail(err, size, "the pattern has a '[' that does not close");
            i += end;
            break;
        }
        case '(':
            if (depth == REGEX_DEPTH_MAX)
                return fail(err, size, "the pattern nests groups deeper than %d", REGEX_DEPTH_MAX);
            repeats[depth++] = false;
            break;
        case ')':
            if (depth > 0) {
                group_repeats = repeats[--depth];
                if (group_repeats && depth > 0)
                    repeats[depth - 1] = true;
                after_group = true;
            }
            break;
        default:
            break;
        }
    }
    return 0;
}

/* ---- search ------------------------------------------------------------------------------ */

/* Appends s cut to at most max bytes, on one line (the first), at a character boundary. */
static int append_line(struct buf *out, const char *s, size_t max)
{
    size_t n = strcspn(s, "\r\n");
    bool cut = n > max;
    if (cut) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    int r = buf_append(out, s, n);
    if (r >= 0 && (cut || s[strcspn(s, "\r\n")]))
        r = buf_append_str(out, "...");
    return r;
}

static int tool_line(struct buf *out, const struct catalog_tool *t, bool schema)
{
    int r = buf_printf(out, "%s", t->name);
    const char *desc = json_get_string(t->item, "description");
    if (r >= 0 && desc && *desc) {
        r = buf_append_str(out, " - ");
        if (r >= 0)
            r = append_line(out, desc, PROXY_LINE_DESC);
    }
    if (r >= 0)
        r = buf_append_char(out, '\n');
    struct json_object *s = json_object_object_get(t->item, "inputSchema");
    if (r >= 0 && schema && s)
        r = buf_printf(out, "  inputSchema: %s\n",
                       json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE));
    return r;
}

struct matcher {
    bool regex;
    regex_t re;
    char *terms[MAX_TERMS];
    size_t n_terms;
    char *copy;
};

static bool match_text(const struct matcher *m, const char *s)
{
    if (!s)
        return false;
    if (m->regex)
        return regexec(&m->re, s, 0, NULL, 0) == 0;
    for (size_t i = 0; i < m->n_terms; i++)
        if (strcasestr(s, m->terms[i]))
            return true;
    return false;
}

static int matcher_init(struct matcher *m, const char *query, bool regex, char *err, size_t size)
{
    *m = (struct matcher){.regex = regex};
    if (regex) {
        int r = proxy_regex_check(query, err, size);
        if (r < 0)
            return r;
        int q = regcomp(&m->re, query, REG_EXTENDED | REG_ICASE | REG_NOSUB);
        if (q == REG_ESPACE)
            return -ENOMEM;
        if (q != 0) {
            char why[128];
            regerror(q, &m->re, why, sizeof(why));
            return fail(err, size, "the pattern is not a valid regular expression: %s", why);
        }
        return 0;
    }
    m->copy = strdup(query);
    if (!m->copy)
        return -ENOMEM;
    char *save = NULL;
    for (char *t = strtok_r(m->copy, " \t\r\n", &save); t && m->n_terms < MAX_TERMS;
         t = strtok_r(NULL, " \t\r\n", &save))
        m->terms[m->n_terms++] = t;
    if (!m->n_terms) {
        free(m->copy);
        m->copy = NULL;
        return fail(err, size, "the search has no words");
    }
    return 0;
}

static void matcher_release(struct matcher *m)
{
    if (m->regex)
        regfree(&m->re);
    free(m->copy);
}

int proxy_search(const struct catalog *c, const char *query, bool regex, bool schemas,
                 struct buf *out, char *err, size_t err_size)
{
    struct matcher m;
    int r = matcher_init(&m, query, regex, err, err_size);
    if (r < 0)
        return r;
    size_t n = catalog_tool_count(c), shown = 0, found = 0;
    unsigned char *rank = n ? calloc(n, 1) : NULL; /* 0 none, 1 name, 2 description */
    if (n && !rank) {
        matcher_release(&m);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        struct catalog_tool t;
        catalog_tool_at(c, i, &t);
        if (match_text(&m, t.name) || match_text(&m, t.orig))
            rank[i] = 1;
        else if (match_text(&m, json_get_string(t.item, "description")))
            rank[i] = 2;
        found += rank[i] != 0;
    }
    if (!found)
        r = buf_printf(out, "no tool matches %s'%s' (%zu tools in all)\n",
                       regex ? "the pattern " : "", query, n);
    else
        r = buf_printf(out, "%zu tool%s match%s '%s'%s:\n", found, found == 1 ? "" : "s",
                       found == 1 ? "es" : "", query,
                       found > PROXY_SEARCH_MAX ? " (name matches first)" : "");
    /* name matches first, each group in the catalogue's order */
    for (unsigned char want = 1; r >= 0 && want <= 2; want++) {
        for (size_t i = 0; r >= 0 && i < n && shown < PROXY_SEARCH_MAX; i++) {
            if (rank[i] != want)
                continue;
            struct catalog_tool t;
            catalog_tool_at(c, i, &t);
            r = tool_line(out, &t, schemas);
            shown++;
        }
    }
    if (r >= 0 && found > shown)
        r = buf_printf(out, "... and %zu more: narrow the search\n", found - shown);
    free(rank);
    matcher_release(&m);
    return r < 0 ? r : 0;
}

/* ---- describe ---------------------------------------------------------------------------- */

/* A property's type, compactly: "string", "string|null", "array of string", "one of a|b". */
static int render_type(struct json_object *prop, struct buf *out)
{
    struct json_object *en = json_object_object_get(prop, "enum");
    if (json_object_is_type(en, json_type_array)) {
        int r = buf_append_str(out, "one of ");
        for (size_t i = 0; r >= 0 && i < json_object_array_length(en) && i < 20; i++)
            r = buf_printf(out, "%s%s", i ? "|" : "",
                           json_object_to_json_string_ext(json_object_array_get_idx(en, i),
                                                          JSON_C_TO_STRING_PLAIN));
        return r;
    }
    struct json_object *type = json_object_object_get(prop, "type");
    if (json_object_is_type(type, json_type_string)) {
        const char *t = json_object_get_string(type);
        const char *items = json_get_string(json_get_object(prop, "items"), "type");
        if (strcmp(t, "array") == 0 && items)
            return buf_printf(out, "array of %s", items);
        return buf_append_str(out, t);
    }
    if (json_object_is_type(type, json_type_array)) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < json_object_array_length(type); i++)
            r = buf_printf(out, "%s%s", i ? "|" : "",
                           json_object_get_string(json_object_array_get_idx(type, i)));
        return r;
    }
    if (json_object_object_get(prop, "anyOf") || json_object_object_get(prop, "oneOf"))
        return buf_append_str(out, "one of several types");
    return buf_append_str(out, "any");
}

static bool is_required(struct json_object *schema, const char *name)
{
    struct json_object *req = json_object_object_get(schema, "required");
    for (size_t i = 0;
         json_object_is_type(req, json_type_array) && i < json_object_array_length(req); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(req, i));
        if (s && strcmp(s, name) == 0)
            return true;
    }
    return false;
}

int proxy_render_schema(struct json_object *schema, struct buf *out)
{
    struct json_object *props = json_object_object_get(schema, "properties");
    if (!json_object_is_type(props, json_type_object) || !json_object_object_length(props))
        return buf_append_str(out, "  (no parameters)\n");
    int r = 0;
    json_object_object_foreach(props, name, prop)
    {
        r = buf_printf(out, "  %s (", name);
        if (r >= 0)
            r = render_type(prop, out);
        if (r >= 0 && is_required(schema, name))
            r = buf_append_str(out, ", required");
        if (r >= 0)
            r = buf_append_char(out, ')');
        const char *desc = json_get_string(prop, "description");
        if (r >= 0 && desc && *desc) {
            r = buf_append_str(out, ": ");
            if (r >= 0)
                r = append_line(out, desc, PROXY_PARAM_DESC);
        }
        if (r >= 0)
            r = buf_append_char(out, '\n');
        if (r < 0)
            return r;
    }
    return r;
}

bool proxy_find_tool(const struct catalog *c, const char *name, struct catalog_tool *ret)
{
    if (catalog_tool_find(c, name, ret))
        return true;
    /* a raw name that only one server has */
    size_t n = catalog_tool_count(c), hits = 0;
    struct catalog_tool t, hit = {0};
    for (size_t i = 0; i < n && hits < 2; i++) {
        catalog_tool_at(c, i, &t);
        if (!t.resource && strcmp(t.orig, name) == 0) {
            hit = t;
            hits++;
        }
    }
    if (hits != 1)
        return false;
    if (ret)
        *ret = hit;
    return true;
}

int proxy_describe(const struct catalog *c, const char *tool, struct buf *out)
{
    struct catalog_tool t;
    if (!proxy_find_tool(c, tool, &t))
        return -ENOENT;
    int r = buf_printf(out, "%s (server '%s'%s)\n", t.name, catalog_source_name(t.src),
                       t.direct ? "" : "; call it with mcp({tool, args})");
    const char *desc = json_get_string(t.item, "description");
    if (r >= 0 && desc && *desc) {
        size_t len = strlen(desc);
        if (len > DESCRIBE_MAX) {
            len = DESCRIBE_MAX;
            while (len > 0 && ((unsigned char)desc[len] & 0xC0) == 0x80)
                len--;
        }
        r = buf_append(out, desc, len);
        if (r >= 0)
            r = buf_append_str(out, len < strlen(desc) ? "...\n" : "\n");
    }
    if (r >= 0)
        r = buf_append_str(out, "parameters:\n");
    if (r >= 0)
        r = proxy_render_schema(json_object_object_get(t.item, "inputSchema"), out);
    return r < 0 ? r : 0;
}

/* ---- servers ----------------------------------------------------------------------------- */

size_t proxy_tool_count(const struct catalog *c, const struct catalog_source *src)
{
    size_t n = catalog_tool_count(c), k = 0;
    for (size_t i = 0; i < n; i++) {
        struct catalog_tool t;
        catalog_tool_at(c, i, &t);
        k += t.src == src;
    }
    return k;
}

int proxy_list_server(const struct catalog *c, const struct catalog_source *src, const char *state,
                      struct buf *out)
{
    size_t n = catalog_tool_count(c), k = proxy_tool_count(c, src);
    int r =
        buf_printf(out, "server '%s'%s%s%s: %zu tool%s\n", catalog_source_name(src),
                   state ? " (" : "", state ? state : "", state ? ")" : "", k, k == 1 ? "" : "s");
    for (size_t i = 0; r >= 0 && i < n; i++) {
        struct catalog_tool t;
        catalog_tool_at(c, i, &t);
        if (t.src == src)
            r = tool_line(out, &t, false);
    }
    return r < 0 ? r : 0;
}

int proxy_status_line(struct buf *out, const char *name, const char *state, const char *reason,
                      size_t n_tools)
{
    int r = buf_printf(out, "%s: %s", name, state);
    if (r >= 0 && reason && *reason) {
        r = buf_append_str(out, " (");
        if (r >= 0)
            r = append_line(out, reason, 300);
        if (r >= 0)
            r = buf_append_char(out, ')');
    }
    if (r >= 0)
        r = buf_printf(out, ", %zu tool%s\n", n_tools, n_tools == 1 ? "" : "s");
    return r;
}

int proxy_suggest(const struct catalog *c, const char *name, size_t max, struct buf *out)
{
    size_t n = catalog_tool_count(c), k = 0;
    int r = 0;
    for (size_t i = 0; r >= 0 && i < n && k < max; i++) {
        struct catalog_tool t;
        catalog_tool_at(c, i, &t);
        if (strcasestr(t.name, name) || strcasestr(name, t.name) || strcasecmp(t.orig, name) == 0) {
            r = buf_printf(out, "%s%s", k ? ", " : "", t.name);
            k++;
        }
    }
    return r;
}

/* ---- answering --------------------------------------------------------------------------- */

static void reply_text(struct ds_agent *a, struct json_object *id, const char *text, bool is_error)
{
    struct json_object *res = NULL;
    if (is_error) {
        res = jrpc_new_tool_error(text);
    } else {
        struct json_object *item = json_object_new_object(), *content = json_object_new_array();
        res = json_object_new_object();
        if (!item || !content || !res ||
            json_object_object_add(item, "type", json_object_new_string("text")) < 0 ||
            json_object_object_add(item, "text", json_object_new_string(text)) < 0 ||
            json_object_array_add(content, item) < 0) {
            json_object_put(item);
            json_object_put(content);
            json_object_put(res);
            res = NULL;
        } else if (json_object_object_add(res, "content", content) < 0) {
            json_object_put(content);
            json_object_put(res);
            res = NULL;
        }
    }
    if (res)
        ds_reply_result(a, id, res);
    else
        ds_reply_error(a, id, JRPC_INTERNAL_ERROR, "out of memory");
}

static const char *avail_word(enum ds_avail a)
{
    switch (a) {
    case DS_AVAIL_CONNECTED:
        return "connected";
    case DS_AVAIL_CONNECTING:
        return "connecting";
    case DS_AVAIL_IDLE:
        return "idle (connects when used)";
    case DS_AVAIL_FAILED:
        return "failed";
    case DS_AVAIL_LOGIN:
        return "sign-in required";
    case DS_AVAIL_DISABLED:
        return "disabled";
    default:
        return "unknown";
    }
}

static int status(struct downstream *d, struct buf *out)
{
    size_t direct = 0, n = catalog_tool_count(d->cat);
    for (size_t i = 0; i < n; i++) {
        struct catalog_tool t;
        catalog_tool_at(d->cat, i, &t);
        direct += t.direct;
    }
    int r = buf_printf(out,
                       "%zu server%s, %zu tools (%zu listed directly). mcp({server: NAME}) "
                       "lists a server's tools, mcp({search: \"words\"}) finds tools, "
                       "mcp({describe: TOOL}) shows parameters, mcp({tool: TOOL, args: {...}}) "
                       "calls one.\n",
                       d->n_servers, d->n_servers == 1 ? "" : "s", n, direct);
    for (size_t i = 0; r >= 0 && i < d->n_servers; i++) {
        struct ds_server *s = d->servers[i];
        const char *reason = NULL;
        enum ds_avail a = ds_server_avail(s, &reason);
        if (a == DS_AVAIL_LOGIN && reason) {
            r = buf_printf(out, "%s: %s (", s->name, avail_word(a));
            if (r >= 0)
                r = append_line(out, reason, 300);
            if (r >= 0)
                r = buf_append_str(out, ")\n");
        } else {
            r = proxy_status_line(out, s->name, avail_word(a), reason,
                                  proxy_tool_count(d->cat, s->src));
        }
    }
    /* the entries of the configuration that were not started, and why (an untrusted project
     * entry, an invalid one): an agent asked for a missing server can tell the user what to do */
    for (size_t i = 0; r >= 0 && i < d->skipped.n; i++) {
        const char *name = d->skipped.v[i];
        r = buf_printf(out, "%s: not started (", name);
        if (r >= 0)
            r = append_line(out, name + strlen(name) + 1, 300);
        if (r >= 0)
            r = buf_append_str(out, ")\n");
    }
    return r;
}

static int unknown_server(struct downstream *d, const char *name, struct buf *out)
{
    int r = buf_printf(out, "unknown server '%s'", name);
    for (size_t i = 0; r >= 0 && i < d->n_servers && i < SERVERS_LISTED; i++)
        r = buf_printf(out, "%s'%s'", i ? ", " : "; the servers: ", d->servers[i]->name);
    if (r >= 0 && d->n_servers > SERVERS_LISTED)
        r = buf_printf(out, " and %zu more", d->n_servers - SERVERS_LISTED);
    return r;
}

static int unknown_tool(struct downstream *d, const char *name, struct buf *out)
{
    int r = buf_printf(out, "unknown tool '%s'", name);
    struct buf sug;
    buf_init(&sug, 4096);
    if (r >= 0 && proxy_suggest(d->cat, name, SUGGEST_MAX, &sug) >= 0 && sug.len)
        r = buf_printf(out, "; did you mean: %s?", buf_str(&sug));
    buf_release(&sug);
    if (r >= 0)
        r = buf_append_str(out, " mcp({search: \"words\"}) finds tools");
    return r;
}

static int connect_server(struct downstream *d, const char *name, struct buf *out, bool *is_error)
{
    struct ds_server *s = ds_server_find(d, name);
    if (!s) {
        *is_error = true;
        return unknown_server(d, name, out);
    }
    const char *reason = NULL;
    enum ds_avail before = ds_server_avail(s, &reason);
    if (before == DS_AVAIL_CONNECTED)
        return buf_printf(out,
                          "server '%s' is connected: %zu tools (mcp({server: \"%s\"}) lists them)",
                          name, proxy_tool_count(d->cat, s->src), name);
    /* the reason is borrowed until the state changes: the wake changes it */
    char last[DS_TEXT_MAX] = "";
    if (before == DS_AVAIL_FAILED && reason)
        snprintf(last, sizeof(last), " (the last attempt failed: %s)", reason);
    struct err e = ERR_INIT;
    if (ds_server_wake(s, &e) < 0) {
        *is_error = true;
        return buf_printf(out, "cannot connect server '%s': %s", name, err_msg(&e));
    }
    enum ds_avail a = ds_server_avail(s, &reason);
    if (a == DS_AVAIL_CONNECTED)
        return buf_printf(out, "server '%s' is connected: %zu tools", name,
                          proxy_tool_count(d->cat, s->src));
    if (a == DS_AVAIL_FAILED || a == DS_AVAIL_LOGIN) {
        *is_error = true;
        return buf_printf(out, "server '%s': %s%s%s", name, avail_word(a), reason ? ": " : "",
                          reason ? reason : "");
    }
    return buf_printf(out,
                      "server '%s' is connecting%s; its tools are listed once it is (the agent is "
                      "told with notifications/tools/list_changed; mcp({server: \"%s\"}) shows "
                      "them)",
                      name, last, name);
}

/* Whether a server waiting for a sign-in would know name (its tools are not listed yet). */
static bool signin_knows(struct downstream *d, const char *name)
{
    for (size_t i = 0; i < d->n_servers; i++)
        if (upstream_state(d->servers[i]->u) == UPSTREAM_LOGIN &&
            catalog_unprefix(d->cat, d->servers[i]->name, name))
            return true;
    return false;
}

/* tool + args: a tools/call of that tool, as if the agent had sent it. */
static void call(struct ds_agent *a, struct json_object *id, struct json_object *params,
                 struct proxy_request *rq)
{
    struct downstream *d = a->d;
    struct catalog_tool t;
    const char *name = rq->target;
    if (strcmp(name, PROXY_TOOL_NAME) == 0) {
        reply_text(a, id, "the mcp tool does not call itself: name another tool", true);
        return;
    }
    if (proxy_find_tool(d->cat, name, &t)) {
        name = t.name;
    } else if (!ds_settling(d) && !signin_knows(d, name)) {
        struct buf out;
        buf_init(&out, 8192);
        int r = unknown_tool(d, name, &out);
        reply_text(a, id, r == -ENOMEM ? "out of memory" : buf_str(&out), true);
        buf_release(&out);
        return;
    }
    struct json_object *root = json_object_new_object(), *p = json_object_new_object();
    struct json_object *meta = json_object_object_get(params, "_meta");
    struct json_object *meta_copy = NULL;
    if (meta && json_object_deep_copy(meta, &meta_copy, NULL) < 0)
        meta_copy = NULL;
    if (!root || !p || (meta && !meta_copy) ||
        json_object_object_add(p, "name", json_object_new_string(name)) < 0 ||
        json_object_object_add(p, "arguments", json_object_get(rq->args)) < 0 ||
        (meta_copy && json_object_object_add(p, "_meta", meta_copy) < 0) ||
        json_object_object_add(root, "jsonrpc", json_object_new_string("2.0")) < 0 ||
        json_object_object_add(root, "id", json_object_get(id)) < 0 ||
        json_object_object_add(root, "method", json_object_new_string("tools/call")) < 0 ||
        json_object_object_add(root, "params", p) < 0) {
        json_object_put(root);
        json_object_put(p);
        ds_reply_error(a, id, JRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    struct jrpc_msg m = {
        .root = root,
        .kind = JRPC_REQUEST,
        .method = "tools/call",
        .id = json_object_object_get(root, "id"),
        .params = p,
    };
    ds_forward_tool_call(a, &m);
    json_object_put(root);
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

void proxy_tool_call(struct ds_agent *a, struct json_object *id, struct json_object *params)
{
    struct downstream *d = a->d;
    struct proxy_request rq;
    char err[512];
    int r = proxy_request_parse(json_object_object_get(params, "arguments"), &rq, err, sizeof(err));
    if (r < 0) {
        reply_text(a, id, r == -ENOMEM ? "out of memory" : err, true);
        return;
    }
    if (rq.mode == PROXY_CALL) {
        call(a, id, params, &rq);
        proxy_request_release(&rq);
        return;
    }
    struct buf out;
    buf_init(&out, PROXY_TEXT_MAX);
    bool is_error = false;
    struct ds_server *s;
    switch (rq.mode) {
    case PROXY_CONNECT:
        r = connect_server(d, rq.target, &out, &is_error);
        break;
    case PROXY_DESCRIBE:
        r = proxy_describe(d->cat, rq.target, &out);
        if (r == -ENOENT) {
            is_error = true;
            r = unknown_tool(d, rq.target, &out);
        }
        break;
    case PROXY_SEARCH:
        r = proxy_search(d->cat, rq.target, rq.regex, rq.include_schemas, &out, err, sizeof(err));
        if (r == -EINVAL) {
            is_error = true;
            buf_reset(&out);
            r = buf_append_str(&out, err);
        }
        break;
    case PROXY_SERVER:
        s = ds_server_find(d, rq.target);
        if (!s) {
            is_error = true;
            r = unknown_server(d, rq.target, &out);
        } else {
            r = proxy_list_server(d->cat, s->src, avail_word(ds_server_avail(s, NULL)), &out);
        }
        break;
    case PROXY_STATUS:
    default:
        r = status(d, &out);
        break;
    }
    /* -E2BIG: the answer is cut at the bound, which is what it says */
    if (r == -ENOMEM)
        reply_text(a, id, "out of memory", true);
    else
        reply_text(a, id, buf_str(&out) ? buf_str(&out) : "", is_error);
    buf_release(&out);
    proxy_request_release(&rq);
}
