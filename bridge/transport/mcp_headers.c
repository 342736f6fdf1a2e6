/* mcp_headers.c - Mcp-Method, Mcp-Name and Mcp-Param-{Name} (mcp_headers.h). */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport/mcp_headers.h"

#define SENTINEL_HEAD "=?base64?"
#define SENTINEL_TAIL "?="
#define JS_SAFE_MAX   9007199254740991LL /* 2^53 - 1 */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

bool mcp_header_plain(const char *v, size_t n)
{
    size_t hl = sizeof(SENTINEL_HEAD) - 1, tl = sizeof(SENTINEL_TAIL) - 1;
    if (n == 0 || v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if ((c < 0x21 || c > 0x7e) && c != ' ' && c != '\t')
            return false;
    }
    /* a plain value that looks encoded would be decoded: encoded itself */
    return !(n >= hl + tl && memcmp(v, SENTINEL_HEAD, hl) == 0 &&
             memcmp(v + n - tl, SENTINEL_TAIL, tl) == 0);
}

char *mcp_header_encode(const char *v, size_t n)
{
    if (mcp_header_plain(v, n))
        return strndup(v, n);
    size_t out = sizeof(SENTINEL_HEAD) - 1 + (n + 2) / 3 * 4 + sizeof(SENTINEL_TAIL);
    char *s = malloc(out), *p = s;
    if (!s)
        return NULL;
    memcpy(p, SENTINEL_HEAD, sizeof(SENTINEL_HEAD) - 1);
    p += sizeof(SENTINEL_HEAD) - 1;
    const unsigned char *u = (const unsigned char *)v;
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        *p++ = b64[u[i] >> 2];
        *p++ = b64[((u[i] & 3) << 4) | (u[i + 1] >> 4)];
        *p++ = b64[((u[i + 1] & 15) << 2) | (u[i + 2] >> 6)];
        *p++ = b64[u[i + 2] & 63];
    }
    if (i < n) {
        *p++ = b64[u[i] >> 2];
        if (i + 1 < n) {
            *p++ = b64[((u[i] & 3) << 4) | (u[i + 1] >> 4)];
            *p++ = b64[(u[i + 1] & 15) << 2];
        } else {
            *p++ = b64[(u[i] & 3) << 4];
            *p++ = '=';
        }
        *p++ = '=';
    }
    memcpy(p, SENTINEL_TAIL, sizeof(SENTINEL_TAIL));
    return s;
}

/* ---- x-mcp-header markings ---------------------------------------------------------------- */

/* RFC 9110 tchar */
static bool is_token(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("!#$%&'*+-.^_`|~", c)))
            return false;
    }
    return true;
}

struct walk {
    struct json_object *out;  /* the markings found */
    struct json_object *path; /* the chain of property names to the node */
    char *why;
    int error;
};

static int walk_fail(struct walk *w, const char *fmt, ...) _printf_(2, 3);
static int walk_fail(struct walk *w, const char *fmt, ...)
{
    if (!w->error) {
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&w->why, fmt, ap);
        va_end(ap);
        if (k < 0)
            w->why = NULL;
        w->error = k < 0 ? -ENOMEM : -EINVAL;
    }
    return w->error;
}

static const char *last_key(struct walk *w)
{
    size_t n = json_object_array_length(w->path);
    return n ? json_object_get_string(json_object_array_get_idx(w->path, n - 1)) : "";
}

/* A marking on the node reached through w->path ("properties" keys only). */
static int take_marking(struct walk *w, struct json_object *node, struct json_object *mark)
{
    const char *prop = last_key(w);
    if (!json_object_is_type(mark, json_type_string))
        return walk_fail(w, "the x-mcp-header of '%s' is not a string", prop);
    const char *name = json_object_get_string(mark);
    if (!*name)
        return walk_fail(w, "the x-mcp-header of '%s' is empty", prop);
    if (!is_token(name))
        return walk_fail(w, "the x-mcp-header '%s' of '%s' is not an HTTP token", name, prop);
    struct json_object *t = NULL;
    const char *type =
        json_object_object_get_ex(node, "type", &t) && json_object_is_type(t, json_type_string)
            ? json_object_get_string(t)
            : NULL;
    if (!type || (strcmp(type, "string") != 0 && strcmp(type, "integer") != 0 &&
                  strcmp(type, "boolean") != 0))
        return walk_fail(w,
                         "the x-mcp-header of '%s' is on a parameter of type %s (only string, "
                         "integer and boolean ones may be mirrored)",
                         prop, type ? type : "(none)");
    size_t n = json_object_array_length(w->out);
    for (size_t i = 0; i < n; i++) {
        const char *other = json_object_get_string(
            json_object_array_get_idx(json_object_array_get_idx(w->out, i), 0));
        if (strcasecmp(other, name) == 0)
            return walk_fail(w, "the x-mcp-header '%s' is used twice (also as '%s')", name, other);
    }
    struct json_object *entry = json_object_new_array();
    if (!entry || json_object_array_add(w->out, entry) < 0) {
        json_object_put(entry);
        return w->error = -ENOMEM;
    }
    if (json_object_array_add(entry, json_object_new_string(name)) < 0)
        return w->error = -ENOMEM;
    size_t pn = json_object_array_length(w->path);
    for (size_t i = 0; i < pn; i++)
        if (json_object_array_add(entry, json_object_get(json_object_array_get_idx(w->path, i))) <
            0)
            return w->error = -ENOMEM;
    return 0;
}

/* Keywords whose values are instances, never schemas: a key called x-mcp-header in them is
 * data. */
static bool instance_keyword(const char *k)
{
    return strcmp(k, "const") == 0 || strcmp(k, "enum") == 0 || strcmp(k, "default") == 0 ||
           strcmp(k, "examples") == 0;
}

static int walk_node(struct walk *w, struct json_object *node, bool reachable, int depth);

static int walk_any(struct walk *w, struct json_object *v, int depth)
{
    if (json_object_is_type(v, json_type_object))
        return walk_node(w, v, false, depth);
    if (json_object_is_type(v, json_type_array)) {
        size_t n = json_object_array_length(v);
        for (size_t i = 0; i < n && !w->error; i++)
            (void)walk_any(w, json_object_array_get_idx(v, i), depth + 1);
    }
    return w->error;
}

/* A schema node; reachable: through "properties" keys only from the root (the root itself is
 * not a parameter). */
static int walk_node(struct walk *w, struct json_object *node, bool reachable, int depth)
{
    if (depth > MCP_HEADERS_MAX_DEPTH)
        return 0; /* deeper than any marking we follow: nothing mirrored from there */
    struct json_object *mark = NULL;
    if (json_object_object_get_ex(node, "x-mcp-header", &mark)) {
        if (!reachable || json_object_array_length(w->path) == 0)
            return walk_fail(w,
                             "an x-mcp-header%s%s is not on a property reached through "
                             "\"properties\" alone (not through items, oneOf, $ref, ...)",
                             json_object_array_length(w->path) ? " under " : "", last_key(w));
        if (take_marking(w, node, mark) < 0)
            return w->error;
    }
    json_object_object_foreach(node, k, v)
    {
        if (w->error)
            break;
        if (strcmp(k, "x-mcp-header") == 0 || instance_keyword(k))
            continue;
        if (strcmp(k, "properties") == 0 && json_object_is_type(v, json_type_object)) {
            json_object_object_foreach(v, pk, pv)
            {
                if (w->error)
                    break;
                if (!json_object_is_type(pv, json_type_object))
                    continue;
                if (json_object_array_add(w->path, json_object_new_string(pk)) < 0)
                    return w->error = -ENOMEM;
                (void)walk_node(w, pv, reachable, depth + 1);
                size_t n = json_object_array_length(w->path);
                (void)json_object_array_del_idx(w->path, n - 1, 1);
            }
            continue;
        }
        (void)walk_any(w, v, depth + 1);
    }
    return w->error;
}

int mcp_headers_tool_params(struct json_object *tool, struct json_object **ret, char **why)
{
    struct json_object *schema = NULL;
    *ret = NULL;
    *why = NULL;
    if (!json_object_object_get_ex(tool, "inputSchema", &schema) ||
        !json_object_is_type(schema, json_type_object))
        return 0;
    struct walk w = {.out = json_object_new_array(), .path = json_object_new_array()};
    if (!w.out || !w.path) {
        json_object_put(w.out);
        json_object_put(w.path);
        return -ENOMEM;
    }
    (void)walk_node(&w, schema, true, 0);
    json_object_put(w.path);
    if (w.error) {
        json_object_put(w.out);
        *why = w.why;
        return w.error;
    }
    if (json_object_array_length(w.out) == 0) {
        json_object_put(w.out);
        return 0;
    }
    *ret = w.out;
    return 0;
}

/* ---- a request's headers ---------------------------------------------------------------- */

static int push_header(struct strv *out, const char *name, const char *v, size_t n)
{
    char *enc = mcp_header_encode(v, n);
    if (!enc)
        return -ENOMEM;
    int k = strv_pushf(out, "%s: %s", name, enc);
    free(enc);
    return k;
}

/* The header value of a parameter, or NULL when it sends none. */
static char *param_value(struct json_object *v)
{
    char buf[32];
    switch (json_object_get_type(v)) {
    case json_type_string:
        return mcp_header_encode(json_object_get_string(v), (size_t)json_object_get_string_len(v));
    case json_type_boolean:
        return strdup(json_object_get_boolean(v) ? "true" : "false");
    case json_type_int: {
        int64_t i = json_object_get_int64(v);
        if (i > JS_SAFE_MAX || i < -JS_SAFE_MAX)
            return NULL;
        snprintf(buf, sizeof(buf), "%" PRId64, i);
        return strdup(buf);
    }
    default:
        return NULL;
    }
}

int mcp_headers_for_request(const char *method, struct json_object *params,
                            struct json_object *params_map, struct strv *out)
{
    int k = strv_pushf(out, "Mcp-Method: %s", method);
    if (k < 0)
        return k;
    const char *key = NULL;
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        key = "name";
    else if (strcmp(method, "resources/read") == 0)
        key = "uri";
    struct json_object *v = NULL;
    if (key && params && json_object_object_get_ex(params, key, &v) &&
        json_object_is_type(v, json_type_string)) {
        k = push_header(out, "Mcp-Name", json_object_get_string(v),
                        (size_t)json_object_get_string_len(v));
        if (k < 0)
            return k;
    }
    struct json_object *args = NULL;
    if (!params_map || strcmp(method, "tools/call") != 0 ||
        !json_object_object_get_ex(params, "arguments", &args))
        return 0;
    size_t n = json_object_array_length(params_map);
    for (size_t i = 0; i < n; i++) {
        struct json_object *e = json_object_array_get_idx(params_map, i);
        size_t pn = json_object_array_length(e);
        struct json_object *at = args;
        for (size_t j = 1; j < pn && at; j++) {
            struct json_object *next = NULL;
            const char *pk = json_object_get_string(json_object_array_get_idx(e, j));
            at = json_object_is_type(at, json_type_object) &&
                         json_object_object_get_ex(at, pk, &next)
                     ? next
                     : NULL;
        }
        char *val = at ? param_value(at) : NULL;
        if (!val)
            continue;
        k = strv_pushf(out, "Mcp-Param-%s: %s",
                       json_object_get_string(json_object_array_get_idx(e, 0)), val);
        free(val);
        if (k < 0)
            return k;
    }
    return 0;
}
