/* mcp_toml.c - the strict reader of config.toml's [mcp_servers.NAME] tables
 * (credkit/mcp_toml.h).
 *
 * One pass of recursive descent over the text, a line at a time, with the line number kept for
 * messages. The values of the MCP tables are built as JSON; everything else is only scanned to
 * find where it ends. Recursion is bounded: the values read do not nest beyond an array or an
 * inline table of strings, the values skipped at most MCP_TOML_MAX_DEPTH deep. This file holds
 * the values and tables; the bytes, strings and keys under them are mcp_toml_lex.c's. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/mcp_field.h"
#include "credkit/mcp_toml.h"
#include "credkit/strv.h"
#include "mcp_toml_int.h"

#define STRING_MAX     (1024u * 1024u)
#define SERVERS_PREFIX "mcp_servers"

/* ---- values ------------------------------------------------------------------------------ */

/* A value that is valid TOML but not read here: noted (the first reason of a value only), the
 * value then NULL while the parse goes on past it. */
static int soft(struct toml *T, const char *fmt, ...) _printf_(2, 3);
static int soft(struct toml *T, const char *fmt, ...)
{
    if (T->soft[0])
        return 0;
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(T->soft, sizeof(T->soft), fmt, ap);
    va_end(ap);
    return 0;
}

static bool at_value_end(const struct toml *T)
{
    char c = toml_peek(T);
    return toml_at_eol(T) || c == ' ' || c == '\t' || c == '#' || c == ',' || c == ']' || c == '}';
}

/* A string value as a JSON string. */
static int string_value(struct toml *T, struct json_object **ret)
{
    struct buf b;
    buf_init_secret(&b, STRING_MAX);
    int r = toml_parse_string(T, &b);
    if (r >= 0) {
        *ret = json_object_new_string_len(buf_str(&b), (int)b.len);
        if (!*ret)
            r = toml_oom(T);
    }
    buf_release(&b);
    return r;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Digits of base at s (an '_' only between two of them) into out without the underscores;
 * the number of bytes read, 0 when there is no digit or an underscore is misplaced. */
static size_t digits(const char *s, size_t n, int base, struct buf *out, bool *ok)
{
    size_t i = 0;
    for (; i < n; i++) {
        char c = s[i];
        bool d = base == 16 ? (is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
                            : c >= '0' && c < '0' + (base < 10 ? base : 10);
        if (d) {
            *ok = *ok && buf_append_char(out, c) >= 0;
            continue;
        }
        if (c != '_' || i == 0 || i + 1 >= n || s[i - 1] == '_')
            break;
    }
    if (i > 0 && s[i - 1] == '_')
        i--;
    return i;
}

/* A bare scalar's token tok[0..n) (a number, a date, or nothing TOML knows) as JSON: an
 * integer, a float, or NULL with a note. */
static int bare_value(struct toml *T, const char *tok, size_t n, struct json_object **ret)
{
    struct buf b;
    bool ok = true, neg = false;
    size_t i = 0;
    int r = 0;

    *ret = NULL;
    if (n && (tok[0] == '+' || tok[0] == '-'))
        neg = tok[i++] == '-';
    if (n - i == 3 && (memcmp(tok + i, "inf", 3) == 0 || memcmp(tok + i, "nan", 3) == 0))
        return soft(T, "inf and nan are not read");
    if (memchr(tok, ':', n) || (n >= 10 && tok[4] == '-' && is_digit(tok[0])))
        return soft(T, "dates and times are not read");
    buf_init(&b, 256);
    int base = 10;
    if (i == 0 && n > 2 && tok[0] == '0' && strchr("xob", tok[1]))
        base = tok[1] == 'x' ? 16 : tok[1] == 'o' ? 8 : 2, i = 2;
    if (neg)
        ok = buf_append_char(&b, '-') >= 0;
    size_t k = digits(tok + i, n - i, base, &b, &ok);
    bool zero_lead = base == 10 && k > 1 && tok[i] == '0';
    bool is_float = false;
    i += k;
    if (k && base == 10 && i < n && tok[i] == '.') {
        ok = ok && buf_append_char(&b, '.') >= 0;
        k = digits(tok + i + 1, n - i - 1, 10, &b, &ok);
        i += k ? k + 1 : 0;
        is_float = k > 0;
    }
    if (k && base == 10 && i < n && (tok[i] == 'e' || tok[i] == 'E')) {
        ok = ok && buf_append_char(&b, 'e') >= 0;
        size_t s = i + 1;
        if (s < n && (tok[s] == '+' || tok[s] == '-'))
            ok = ok && buf_append_char(&b, tok[s++]) >= 0;
        k = digits(tok + s, n - s, 10, &b, &ok);
        i = k ? s + k : i;
        is_float = is_float || k > 0;
    }
    if (!ok) {
        r = toml_oom(T);
        goto out;
    }
    if (k == 0 || i != n || zero_lead) {
        r = soft(T, "not a value read here (a string, a number, true or false, an array or an "
                    "inline table)");
        goto out;
    }
    errno = 0;
    char *end = NULL;
    if (is_float) {
        double d = strtod(buf_str(&b), &end);
        if (errno == ERANGE || !isfinite(d))
            r = soft(T, "the number is out of range");
        else if (!(*ret = json_object_new_double(d)))
            r = toml_oom(T);
    } else {
        long long v = strtoll(buf_str(&b), &end, base);
        if (errno == ERANGE)
            r = soft(T, "the number is out of range");
        else if (!(*ret = json_object_new_int64(v)))
            r = toml_oom(T);
    }
out:
    buf_release(&b);
    return r;
}

static int read_value(struct toml *T, int depth, struct json_object **ret);

/* Adds key = v to table (which takes v, also on failure; a NULL v is a value not read); a key
 * defined twice is an error. */
static int table_add(struct toml *T, struct json_object *table, const char *key,
                     struct json_object *v, const char *in)
{
    char kd[MCP_DISP_BUF];
    if (json_object_object_get_ex(table, key, NULL)) {
        json_wipe_strings(v);
        json_object_put(v);
        mcp_disp(kd, key);
        return toml_bad(T, "the key '%s' is defined twice in %s", kd, in);
    }
    if (json_object_object_add(table, key, v) < 0) {
        json_object_put(v);
        return toml_oom(T);
    }
    return 0;
}

/* [ value, ... ] over one or more lines, comments and a trailing comma allowed. */
static int array_value(struct toml *T, int depth, struct json_object **ret)
{
    struct json_object *a = json_object_new_array(), *v = NULL;
    bool unread = false;
    int r;

    if (!a)
        return toml_oom(T);
    T->p++;
    for (;;) {
        r = toml_skip_ws_lines(T);
        if (r < 0)
            goto out;
        if (toml_peek(T) == ']')
            break;
        v = NULL;
        r = read_value(T, depth + 1, &v);
        if (r < 0)
            goto out;
        unread = unread || !v;
        if (v && json_object_array_add(a, v) < 0) {
            json_object_put(v);
            r = toml_oom(T);
            goto out;
        }
        r = toml_skip_ws_lines(T);
        if (r < 0)
            goto out;
        if (toml_peek(T) == ',') {
            T->p++;
            continue;
        }
        if (toml_peek(T) != ']') {
            r = toml_bad(T, "expected ',' or ']' in the array");
            goto out;
        }
        break;
    }
    T->p++;
    if (!unread) {
        *ret = a;
        a = NULL;
    }
    r = 0;
out:
    json_wipe_strings(a);
    json_object_put(a);
    return r;
}

/* { KEY = value, a.b = value, ... } on one line. */
static int inline_table_value(struct toml *T, int depth, struct json_object **ret)
{
    struct json_object *o = json_object_new_object(), *v = NULL;
    struct strv path = STRV_INIT;
    bool unread = false;
    int r = 0;

    if (!o)
        return toml_oom(T);
    T->p++;
    toml_skip_ws(T);
    if (toml_peek(T) == '}')
        goto done;
    for (;;) {
        strv_release(&path);
        r = toml_parse_keypath(T, &path);
        if (r < 0)
            goto out;
        toml_skip_ws(T);
        if (toml_peek(T) != '=') {
            r = toml_bad(T, "expected '=' after a key of an inline table");
            goto out;
        }
        T->p++;
        toml_skip_ws(T);
        v = NULL;
        r = read_value(T, depth + 1, &v);
        if (r < 0)
            goto out;
        unread = unread || !v;
        /* a.b = v: the tables on the way, made when missing */
        struct json_object *t = o;
        for (size_t i = 0; r >= 0 && i + 1 < path.n; i++) {
            struct json_object *next = NULL;
            if (!json_object_object_get_ex(t, path.v[i], &next)) {
                next = json_object_new_object();
                r = table_add(T, t, path.v[i], next, "an inline table");
            } else if (!json_object_is_type(next, json_type_object)) {
                r = toml_bad(T, "the key '%s' is defined twice in an inline table", path.v[i]);
            }
            t = next;
        }
        if (r >= 0)
            r = table_add(T, t, path.v[path.n - 1], v, "an inline table");
        else
            json_object_put(v);
        if (r < 0)
            goto out;
        toml_skip_ws(T);
        if (toml_peek(T) == '}')
            break;
        if (toml_peek(T) != ',') {
            r = toml_at_eol(T) ? toml_bad(T, "an inline table must be on one line")
                               : toml_bad(T, "expected ',' or '}' in the inline table");
            goto out;
        }
        T->p++;
        toml_skip_ws(T);
        if (toml_peek(T) == '}') {
            r = toml_bad(T, "a comma before '}' is not allowed in an inline table");
            goto out;
        }
    }
done:
    T->p++;
    if (!unread) {
        *ret = o;
        o = NULL;
    }
out:
    strv_release(&path);
    json_wipe_strings(o);
    json_object_put(o);
    return r;
}

/* Scans a bare scalar (a number, a boolean, a date and time with a space inside); *ret_len its
 * length, 0 when there is none. */
static const char *scan_bare(struct toml *T, size_t *ret_len)
{
    const char *s = T->p;
    /* a space inside only between two bare characters: a date and a time */
    while (T->p < T->end && (toml_is_bare(*T->p) || strchr("+.:", *T->p) ||
                             (*T->p == ' ' && T->p + 1 < T->end && toml_is_bare(T->p[1]) &&
                              T->p > s && is_digit(T->p[-1]))))
        T->p++;
    *ret_len = (size_t)(T->p - s);
    return s;
}

/* A value of an MCP server's table, as JSON; *ret NULL when it is valid TOML that is not read
 * here (T->soft says why). Nested at most MCP_TOML_MAX_DEPTH deep. */
static int read_value(struct toml *T, int depth, struct json_object **ret)
{
    char c = toml_peek(T);

    *ret = NULL;
    if (depth >= MCP_TOML_MAX_DEPTH)
        return toml_bad(T, "arrays or inline tables nested more than %d deep", MCP_TOML_MAX_DEPTH);
    if (toml_is_quote(c))
        return string_value(T, ret);
    if (c == '[')
        return array_value(T, depth, ret);
    if (c == '{')
        return inline_table_value(T, depth, ret);
    if (toml_at(T, "true") || toml_at(T, "false")) {
        bool v = c == 't';
        T->p += v ? 4 : 5;
        if (!at_value_end(T))
            return toml_bad(T, "expected the end of the value after %s", v ? "true" : "false");
        *ret = json_object_new_boolean(v);
        return *ret ? 0 : toml_oom(T);
    }
    size_t n = 0;
    const char *tok = scan_bare(T, &n);
    if (n == 0)
        return toml_bad(T, "expected a value");
    if (!at_value_end(T))
        return toml_bad(T, "expected the end of the value");
    return bare_value(T, tok, n, ret);
}

/* Scans past a value that is not read: a string of any kind, an array or inline table of
 * anything (nested at most MCP_TOML_MAX_DEPTH deep), or a bare scalar (number, boolean, date). */
static int skip_value(struct toml *T, int depth)
{
    struct strv path = STRV_INIT;
    int r = 0;

    if (depth >= MCP_TOML_MAX_DEPTH)
        return toml_bad(T, "arrays or inline tables nested more than %d deep", MCP_TOML_MAX_DEPTH);
    char c = toml_peek(T);
    if (toml_is_quote(c)) {
        struct buf b;
        buf_init_secret(&b, STRING_MAX);
        r = toml_parse_string(T, &b);
        buf_release(&b);
        return r;
    }
    if (c == '[') {
        T->p++;
        for (;;) {
            r = toml_skip_ws_lines(T);
            if (r >= 0 && toml_peek(T) == ']')
                break;
            if (r >= 0)
                r = skip_value(T, depth + 1);
            if (r >= 0)
                r = toml_skip_ws_lines(T);
            if (r < 0)
                return r;
            if (toml_peek(T) == ']')
                break;
            if (toml_peek(T) != ',')
                return toml_bad(T, "expected ',' or ']' in an array");
            T->p++;
        }
        T->p++;
        return 0;
    }
    if (c == '{') {
        T->p++;
        toml_skip_ws(T);
        while (r >= 0 && toml_peek(T) != '}') {
            strv_release(&path);
            r = toml_parse_keypath(T, &path);
            if (r < 0)
                break;
            toml_skip_ws(T);
            if (toml_peek(T) != '=') {
                r = toml_bad(T, "expected '=' after a key of an inline table");
                break;
            }
            T->p++;
            toml_skip_ws(T);
            r = skip_value(T, depth + 1);
            if (r < 0)
                break;
            toml_skip_ws(T);
            if (toml_peek(T) == ',') {
                T->p++;
                toml_skip_ws(T);
            } else if (toml_peek(T) != '}') {
                r = toml_bad(T, "expected ',' or '}' in an inline table");
            }
        }
        strv_release(&path);
        if (r >= 0)
            T->p++;
        return r;
    }
    const char *s = T->p;
    /* a space inside only between two bare characters: a date and a time */
    while (T->p < T->end && (toml_is_bare(*T->p) || strchr("+.:", *T->p) ||
                             (*T->p == ' ' && T->p + 1 < T->end && toml_is_bare(T->p[1]))))
        T->p++;
    if (T->p == s)
        return toml_bad(T, "expected a value");
    return 0;
}

/* ---- tables and keys --------------------------------------------------------------------- */

/* path[0..n) as a key of T->defined: each part as "LEN:PART", which no two paths share. */
static int path_id(struct toml *T, const struct strv *path, size_t n, struct buf *out)
{
    buf_init(out, (size_t)KEY_PARTS_MAX * 2 * (KEY_MAX + 16));
    for (size_t i = 0; i < n; i++)
        if (buf_printf(out, "%zu:%s", strlen(path->v[i]), path->v[i]) < 0)
            return toml_oom(T);
    if (!out->data && buf_append_str(out, "") < 0)
        return toml_oom(T);
    return 0;
}

enum defined_as { NOT_DEFINED, BY_HEADER, BY_VALUE };

static int defined_as(struct toml *T, const struct strv *path, size_t n, enum defined_as *ret)
{
    struct buf id;
    struct json_object *v = NULL;
    int r = path_id(T, path, n, &id);
    if (r >= 0)
        *ret = json_object_object_get_ex(T->defined, buf_str(&id), &v)
                   ? (enum defined_as)json_object_get_int(v)
                   : NOT_DEFINED;
    buf_release(&id);
    return r;
}

static int define(struct toml *T, const struct strv *path, size_t n, enum defined_as how)
{
    struct buf id;
    int r = path_id(T, path, n, &id);
    if (r >= 0) {
        struct json_object *v = json_object_new_int((int)how);
        if (!v || json_object_object_add(T->defined, buf_str(&id), v) < 0) {
            json_object_put(v);
            r = toml_oom(T);
        }
    }
    buf_release(&id);
    return r;
}

/* The object of the tables path[1..n) below T->servers (path[0] is mcp_servers), made when
 * missing. Borrowed. A table on the way that is not one, or an inline table (closed in TOML), is
 * an error. */
static int walk(struct toml *T, const struct strv *path, size_t n, struct json_object **ret)
{
    struct json_object *t = T->servers;
    char d[MCP_DISP_BUF];
    int r = 0;

    for (size_t i = 1; r >= 0 && i < n; i++) {
        struct json_object *next = NULL;
        enum defined_as how = NOT_DEFINED;
        toml_path_disp(d, path, i + 1);
        if (!json_object_object_get_ex(t, path->v[i], &next)) {
            next = json_object_new_object();
            r = table_add(T, t, path->v[i], next, "its table");
        } else if (!json_object_is_type(next, json_type_object)) {
            r = toml_bad(T, "'%s' is defined twice: as a value, and as a table", d);
        } else if ((r = defined_as(T, path, i + 1, &how)) >= 0 && how == BY_VALUE) {
            r = toml_bad(T, "the inline table '%s' is defined twice: it cannot be extended", d);
        }
        t = next;
    }
    if (r >= 0)
        *ret = t;
    return r;
}

/* A value of path[1..) not read: noted as the server path[1]'s, its key the rest of the path. */
static int note_unread(struct toml *T, const struct strv *path, size_t line)
{
    struct json_object *srv = NULL, *msg = NULL;
    char key[MCP_DISP_BUF], *text = NULL;
    struct strv rest = {.v = path->v + 2, .n = path->n - 2};

    if (!json_object_object_get_ex(T->notes, path->v[1], &srv)) {
        srv = json_object_new_object();
        if (!srv || json_object_object_add(T->notes, path->v[1], srv) < 0) {
            json_object_put(srv);
            return toml_oom(T);
        }
    }
    toml_path_disp(key, &rest, rest.n);
    if (rest.n == 0 && asprintf(&text, "line %zu: %s", line, T->soft) < 0)
        return toml_oom(T);
    if (rest.n > 0 && asprintf(&text, "line %zu: '%s': %s", line, key, T->soft) < 0)
        return toml_oom(T);
    msg = json_object_new_string(text);
    free(text);
    if (!msg || json_object_object_add(srv, rest.n ? key : "", msg) < 0) {
        json_object_put(msg);
        return toml_oom(T);
    }
    return 0;
}

/* Where the lines after the header [path] (or [[path]]) go. */
static int open_table(struct toml *T, const struct strv *path, bool array)
{
    char d[MCP_DISP_BUF];
    struct json_object *t = NULL;
    enum defined_as how = NOT_DEFINED;
    int r;

    strv_release(&T->table);
    T->skipping = strcmp(path->v[0], SERVERS_PREFIX) != 0;
    if (T->skipping)
        return 0;
    toml_path_disp(d, path, path->n);
    if (array && path->n == 1)
        return toml_bad(T,
                        "[[%s]] (an array of tables) is not read: write each server as a table "
                        "[mcp_servers.NAME]",
                        d);
    if (array) {
        /* a server's key written as an array of tables: noted, its lines skipped */
        T->skipping = true;
        (void)snprintf(T->soft, sizeof(T->soft), "[[%s]] (an array of tables) is not read", d);
        struct strv srv = {.v = path->v, .n = 2};
        r = walk(T, &srv, 2, &t);
        if (r >= 0)
            r = note_unread(T, path, T->line);
        T->soft[0] = '\0';
        return r;
    }
    r = defined_as(T, path, path->n, &how);
    if (r >= 0 && how != NOT_DEFINED)
        r = toml_bad(T, "the table [%s] is defined twice", d);
    if (r >= 0)
        r = walk(T, path, path->n, &t);
    if (r >= 0)
        r = define(T, path, path->n, BY_HEADER);
    for (size_t i = 0; r >= 0 && i < path->n; i++)
        if (strv_push(&T->table, path->v[i]) < 0)
            r = toml_oom(T);
    return r;
}

/* A table header line. */
static int parse_header(struct toml *T)
{
    struct strv path = STRV_INIT;
    bool array = toml_at(T, "[[");
    int r;

    T->p += array ? 2 : 1;
    r = toml_parse_keypath(T, &path);
    if (r < 0)
        goto out;
    if (!toml_at(T, array ? "]]" : "]")) {
        r = toml_bad(T, "expected '%s' to end the table header", array ? "]]" : "]");
        goto out;
    }
    T->p += array ? 2 : 1;
    r = open_table(T, &path, array);
    if (r >= 0)
        r = toml_end_of_line(T, "a table header");
out:
    strv_release(&path);
    return r;
}

/* full = mcp_servers.NAME.KEY... = v (taken; NULL: not read, T->soft says why). */
static int place(struct toml *T, const struct strv *full, struct json_object *v, size_t line)
{
    struct json_object *t = NULL;
    char d[MCP_DISP_BUF];
    int r;

    toml_path_disp(d, full, full->n - 1);
    if (full->n == 1) { /* mcp_servers = { NAME = {...}, ... } */
        if (!v || !json_object_is_type(v, json_type_object)) {
            json_wipe_strings(v);
            json_object_put(v);
            return toml_bad(T, "'%s' must be a table of servers", SERVERS_PREFIX);
        }
        r = 0;
        json_object_object_foreach(v, name, srv)
        {
            r = table_add(T, T->servers, name, json_object_get(srv), "[mcp_servers]");
            if (r < 0)
                break;
        }
        json_object_put(v);
        return r < 0 ? r : define(T, full, 1, BY_VALUE);
    }
    char in[MCP_DISP_BUF + 2];
    (void)snprintf(in, sizeof(in), "[%s]", d);
    r = walk(T, full, full->n - 1, &t);
    if (r >= 0)
        r = table_add(T, t, full->v[full->n - 1], v, in);
    else
        json_object_put(v);
    if (r >= 0 && v && json_object_is_type(v, json_type_object))
        r = define(T, full, full->n, BY_VALUE);
    if (r >= 0 && !v)
        r = note_unread(T, full, line);
    return r;
}

/* A line KEY = VALUE. */
static int parse_keyval(struct toml *T)
{
    struct strv path = STRV_INIT, full = STRV_INIT;
    struct json_object *v = NULL;
    char d[MCP_DISP_BUF];
    size_t line = T->line;
    int r;

    r = toml_parse_keypath(T, &path);
    if (r < 0)
        goto out;
    toml_path_disp(d, &path, path.n);
    toml_skip_ws(T);
    if (toml_peek(T) != '=') {
        r = toml_bad(T, "expected '=' after the key '%s'", d);
        goto out;
    }
    T->p++;
    toml_skip_ws(T);
    if (T->skipping || (T->table.n == 0 && strcmp(path.v[0], SERVERS_PREFIX) != 0)) {
        r = skip_value(T, 0);
    } else {
        for (size_t i = 0; r >= 0 && i < T->table.n; i++)
            r = strv_push(&full, T->table.v[i]) < 0 ? toml_oom(T) : 0;
        for (size_t i = 0; r >= 0 && i < path.n; i++)
            r = strv_push(&full, path.v[i]) < 0 ? toml_oom(T) : 0;
        if (r >= 0 && full.n > KEY_PARTS_MAX)
            r = toml_bad(T, "a key of more than %d dotted parts with its table's", KEY_PARTS_MAX);
        T->soft[0] = '\0';
        if (r >= 0)
            r = read_value(T, 0, &v);
        if (r >= 0)
            r = place(T, &full, v, line); /* takes v */
        else
            json_object_put(v);
    }
    if (r >= 0)
        r = toml_end_of_line(T, "a value");
out:
    strv_release(&path);
    strv_release(&full);
    return r;
}

int mcp_toml_read_servers(const char *text, size_t len, struct json_object **ret,
                          struct json_object **ret_notes, struct err *e)
{
    struct toml T = {.p = text, .end = text + len, .line = 1, .e = e, .table = STRV_INIT};
    int r = 0;

    size_t bl = toml_bad_utf8_line((const unsigned char *)text, len);
    if (bl > 0)
        return err_set(e, -EBADMSG, "line %zu: not UTF-8 text (or a NUL byte)", bl);
    T.servers = json_object_new_object();
    T.defined = json_object_new_object();
    T.notes = json_object_new_object();
    if (!T.servers || !T.defined || !T.notes) {
        r = toml_oom(&T);
        goto out;
    }
    while (r >= 0) {
        toml_skip_ws(&T);
        if (T.p >= T.end)
            break;
        if (toml_peek(&T) == '#') {
            r = toml_skip_comment(&T);
            if (r >= 0)
                (void)toml_eat_newline(&T);
        } else if (toml_eat_newline(&T)) {
            continue;
        } else if (toml_peek(&T) == '[') {
            r = parse_header(&T);
        } else {
            r = parse_keyval(&T);
        }
    }
    if (r < 0)
        goto out;
    *ret = T.servers;
    T.servers = NULL;
    *ret_notes = T.notes;
    T.notes = NULL;
out:
    json_wipe_strings(T.servers);
    json_object_put(T.servers);
    json_object_put(T.defined);
    json_object_put(T.notes);
    strv_release(&T.table);
    return r;
}
