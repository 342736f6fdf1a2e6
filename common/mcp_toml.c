/* mcp_toml.c - the strict reader of config.toml's [mcp_servers.NAME] tables
 * (credkit/mcp_toml.h).
 *
 * One pass of recursive descent over the text, a line at a time, with the line number kept for
 * messages. The values of the MCP tables are built as JSON; everything else is only scanned to
 * find where it ends. Recursion is bounded: the values read do not nest beyond an array or an
 * inline table of strings, the values skipped at most MCP_TOML_MAX_DEPTH deep. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/mcp_field.h"
#include "credkit/mcp_toml.h"
#include "credkit/strv.h"

#define KEY_MAX        4096 /* bytes of one key */
#define KEY_PARTS_MAX  16   /* parts of a dotted key or table name */
#define STRING_MAX     (1024u * 1024u)
#define SERVERS_PREFIX "mcp_servers"

/* The table the lines belong to. */
enum where {
    IN_ROOT,    /* before any table header */
    IN_SKIPPED, /* a table that is not an MCP server's: its values are only scanned */
    IN_MCP,     /* [mcp_servers] itself */
    IN_SERVER,  /* [mcp_servers.NAME] */
    IN_SUB,     /* [mcp_servers.NAME.KEY]: strings */
};

struct toml {
    const char *p, *end;
    size_t line;
    struct err *e;
    struct json_object *servers; /* the result */
    struct json_object *defined; /* NAME -> true for each [mcp_servers.NAME] header seen */
    bool mcp_defined;            /* [mcp_servers] seen */
    struct json_object *cur;     /* IN_SERVER, IN_SUB: where the keys go (borrowed) */
    char cur_label[2 * MCP_DISP_BUF + 32]; /* "[mcp_servers.NAME]" for messages */
    enum where where;
};

static int bad(struct toml *T, const char *fmt, ...) _printf_(2, 3);
static int bad(struct toml *T, const char *fmt, ...)
{
    char msg[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_set(T->e, -EBADMSG, "line %zu: %s", T->line, msg);
}

static int oom(struct toml *T)
{
    return err_set(T->e, -ENOMEM, "out of memory");
}

/* ---- characters -------------------------------------------------------------------------- */

/* The line of the first byte of s[0..n) that is not UTF-8, or a NUL; 0 when all is well. */
static size_t bad_utf8_line(const unsigned char *s, size_t n)
{
    size_t line = 1;
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t k;
        uint32_t cp;
        if (c == '\n')
            line++;
        if (c == 0)
            return line;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            k = 1, cp = c & 0x1fu;
        else if (c >= 0xe0 && c <= 0xef)
            k = 2, cp = c & 0x0fu;
        else if (c >= 0xf0 && c <= 0xf4)
            k = 3, cp = c & 0x07u;
        else
            return line;
        if (n - i <= k)
            return line;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return line;
            cp = (cp << 6) | (s[i + j] & 0x3fu);
        }
        /* overlong forms, surrogates, beyond U+10FFFF */
        if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return line;
        i += k + 1;
    }
    return 0;
}

static char peek(const struct toml *T)
{
    return T->p < T->end ? *T->p : '\0'; /* no NUL inside: checked first */
}

static bool at(const struct toml *T, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(T->end - T->p) >= n && memcmp(T->p, s, n) == 0;
}

static void skip_ws(struct toml *T)
{
    while (T->p < T->end && (*T->p == ' ' || *T->p == '\t'))
        T->p++;
}

static bool at_eol(const struct toml *T)
{
    return T->p >= T->end || *T->p == '\n' || at(T, "\r\n");
}

static bool eat_newline(struct toml *T)
{
    if (peek(T) == '\n' || at(T, "\r\n")) {
        T->p += *T->p == '\r' ? 2 : 1;
        T->line++;
        return true;
    }
    return false;
}

static bool is_control(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* A comment (at '#') up to the end of its line, which is left for the caller. */
static int skip_comment(struct toml *T)
{
    if (peek(T) != '#')
        return 0;
    for (; !at_eol(T); T->p++)
        if (is_control((unsigned char)*T->p))
            return bad(T, "a control character in a comment");
    return 0;
}

/* Blank space, line breaks and comments, as arrays allow between their elements. */
static int skip_ws_lines(struct toml *T)
{
    for (;;) {
        skip_ws(T);
        int r = skip_comment(T);
        if (r < 0)
            return r;
        if (!eat_newline(T))
            return 0;
    }
}

/* The rest of a line after a header or a value: blank, maybe a comment, the line break. */
static int end_of_line(struct toml *T, const char *after)
{
    skip_ws(T);
    int r = skip_comment(T);
    if (r < 0)
        return r;
    if (T->p >= T->end || eat_newline(T))
        return 0;
    return bad(T, "expected the end of the line after %s", after);
}

/* ---- strings ----------------------------------------------------------------------------- */

static int put(struct toml *T, struct buf *out, const void *d, size_t n)
{
    int r = buf_append(out, d, n);
    if (r == -E2BIG)
        return bad(T, "a string or key longer than %zu bytes", out->max);
    return r < 0 ? oom(T) : 0;
}

static int hex_digits(struct toml *T, size_t n, uint32_t *ret)
{
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++, T->p++) {
        char c = peek(T);
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return bad(T, "\\%c needs %zu hexadecimal digits", n == 4 ? 'u' : 'U', n);
        v = v << 4 | (uint32_t)d;
    }
    *ret = v;
    return 0;
}

/* A Unicode escape (after \u or \U) as UTF-8. */
static int unicode_escape(struct toml *T, size_t digits, struct buf *out)
{
    uint32_t cp = 0;
    unsigned char u[4];
    size_t n;
    int r = hex_digits(T, digits, &cp);
    if (r < 0)
        return r;
    if (cp == 0)
        return bad(T, "a NUL character (\\u0000) in a string cannot be read");
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return bad(T, "\\%c escape of a value that is not a Unicode character",
                   digits == 4 ? 'u' : 'U');
    if (cp < 0x80) {
        u[0] = (unsigned char)cp, n = 1;
    } else if (cp < 0x800) {
        u[0] = (unsigned char)(0xc0 | cp >> 6), n = 2;
    } else if (cp < 0x10000) {
        u[0] = (unsigned char)(0xe0 | cp >> 12), n = 3;
    } else {
        u[0] = (unsigned char)(0xf0 | cp >> 18), n = 4;
    }
    for (size_t i = 1; i < n; i++)
        u[i] = (unsigned char)(0x80 | ((cp >> (6 * (n - 1 - i))) & 0x3f));
    return put(T, out, u, n);
}

/* An escape of a basic string (at the backslash). multi: a backslash at the end of a line
 * trims the line break and the blank space after it. */
static int escape(struct toml *T, bool multi, struct buf *out)
{
    static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
    T->p++;
    char c = peek(T);
    const char *k = c ? strchr(from, c) : NULL;
    if (k) {
        T->p++;
        return put(T, out, &to[k - from], 1);
    }
    if (c == 'u' || c == 'U') {
        T->p++;
        return unicode_escape(T, c == 'u' ? 4 : 8, out);
    }
    if (multi && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
        skip_ws(T);
        if (!eat_newline(T))
            return bad(T, "a backslash followed by blank space must end its line");
        for (;;) {
            skip_ws(T);
            if (!eat_newline(T))
                return 0;
        }
    }
    if (c >= 0x20 && c < 0x7f)
        return bad(T, "'\\%c' is not a valid escape in a string", c);
    return bad(T, "a backslash that starts no valid escape in a string");
}

/* A string (T->p at its first quote) appended to out: basic "..." with escapes, literal '...',
 * and their multi-line forms """...""" and '''...'''. */
static int parse_string(struct toml *T, struct buf *out)
{
    char q = *T->p;
    bool multi = at(T, q == '"' ? "\"\"\"" : "'''");
    size_t first = T->line;
    int r;

    T->p += multi ? 3 : 1;
    if (multi) /* a line break right after the opening quotes is not part of the string */
        (void)eat_newline(T);
    for (;;) {
        if (T->p >= T->end) {
            T->line = first;
            return bad(T, "a string that starts on this line is not closed");
        }
        unsigned char c = (unsigned char)*T->p;
        if (c == (unsigned char)q) {
            if (!multi) {
                T->p++;
                return 0;
            }
            size_t n = 0;
            while (T->p + n < T->end && T->p[n] == q)
                n++;
            if (n > 5)
                return bad(T, "more than five quotes in a row in a multi-line string");
            /* up to two quotes before the closing three belong to the string */
            r = put(T, out, T->p, n >= 3 ? n - 3 : n);
            T->p += n;
            if (r < 0 || n >= 3)
                return r;
            continue;
        }
        if (c == '\\' && q == '"')
            r = escape(T, multi, out);
        else if (c == '\n' || (c == '\r' && at(T, "\r\n"))) {
            if (!multi)
                return bad(T, "a string is not closed on its line");
            (void)eat_newline(T);
            r = put(T, out, "\n", 1);
        } else if (is_control(c)) {
            return bad(T, "a control character in a string: write it as an escape (\\uXXXX) in "
                          "a \"...\" string");
        } else {
            r = put(T, out, T->p, 1);
            T->p++;
        }
        if (r < 0)
            return r;
    }
}

static bool is_quote(char c)
{
    return c == '"' || c == '\'';
}

/* ---- keys -------------------------------------------------------------------------------- */

static bool is_bare(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* One key, bare or quoted (not multi-line), pushed to path. */
static int parse_key(struct toml *T, struct strv *path)
{
    struct buf b;
    int r = 0;

    buf_init(&b, KEY_MAX);
    char c = peek(T);
    if (is_quote(c)) {
        if (at(T, "\"\"\"") || at(T, "'''"))
            r = bad(T, "a key cannot be a multi-line string");
        else
            r = parse_string(T, &b);
    } else if (is_bare(c)) {
        const char *s = T->p;
        while (is_bare(peek(T)))
            T->p++;
        r = put(T, &b, s, (size_t)(T->p - s));
    } else {
        r = bad(T, "expected a key (letters, digits, '_', '-', or a quoted string)");
    }
    if (r >= 0 && strv_push_take(path, buf_detach(&b)) < 0)
        r = oom(T);
    buf_release(&b);
    return r;
}

/* A key or table name, maybe dotted (a.b."c d"), into path. */
static int parse_keypath(struct toml *T, struct strv *path)
{
    for (;;) {
        skip_ws(T);
        if (path->n == KEY_PARTS_MAX)
            return bad(T, "a key or table name of more than %d dotted parts", KEY_PARTS_MAX);
        int r = parse_key(T, path);
        if (r < 0)
            return r;
        skip_ws(T);
        if (peek(T) != '.')
            return 0;
        T->p++;
    }
}

/* path joined with dots, cut to fit a message. */
static void path_disp(char out[MCP_DISP_BUF], const struct strv *path, size_t n)
{
    char tmp[MCP_DISP_MAX * 2 + 1];
    size_t len = 0;
    tmp[0] = '\0';
    for (size_t i = 0; i < n && i < path->n && len < MCP_DISP_MAX; i++) {
        int k = snprintf(tmp + len, sizeof(tmp) - len, "%s%s", i ? "." : "", path->v[i]);
        if (k < 0)
            break;
        len += (size_t)k < sizeof(tmp) - len ? (size_t)k : sizeof(tmp) - len - 1;
    }
    mcp_disp(out, tmp);
}

/* ---- values ------------------------------------------------------------------------------ */

static bool at_value_end(const struct toml *T)
{
    char c = peek(T);
    return at_eol(T) || c == ' ' || c == '\t' || c == '#' || c == ',' || c == ']' || c == '}';
}

/* A string value as a JSON string. */
static int string_value(struct toml *T, struct json_object **ret)
{
    struct buf b;
    buf_init_secret(&b, STRING_MAX);
    int r = parse_string(T, &b);
    if (r >= 0) {
        *ret = json_object_new_string_len(buf_str(&b), (int)b.len);
        if (!*ret)
            r = oom(T);
    }
    buf_release(&b);
    return r;
}

/* A decimal integer (T->p at a digit or a sign). */
static int integer_value(struct toml *T, const char *key, struct json_object **ret)
{
    char kd[MCP_DISP_BUF];
    const char *s = T->p;
    bool neg = false;
    int64_t v = 0;
    size_t digits = 0;

    mcp_disp(kd, key);
    if (s < T->end && (*s == '+' || *s == '-'))
        neg = *s++ == '-';
    if (s + 1 < T->end && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b'))
        return bad(T,
                   "'%s': hexadecimal, octal and binary numbers are not read: write it in "
                   "decimal",
                   kd);
    if (s < T->end && (*s == 'i' || *s == 'n'))
        return bad(T, "'%s': only whole numbers are read here, not inf or nan", kd);
    for (; s < T->end && ((*s >= '0' && *s <= '9') || *s == '_'); s++) {
        if (*s == '_') {
            if (digits == 0 || s + 1 >= T->end || s[1] < '0' || s[1] > '9')
                return bad(T, "'%s': an underscore in a number must be between digits", kd);
            continue;
        }
        int d = *s - '0';
        if (digits == 1 && v == 0)
            return bad(T, "'%s': a number must not start with a zero", kd);
        if (v > (INT64_MAX - d) / 10)
            return bad(T, "'%s': the number is too large", kd);
        v = v * 10 + d;
        digits++;
    }
    if (digits == 0)
        return bad(T,
                   "'%s': expected a value (a string, a number, true or false, an array of "
                   "strings or an inline table of strings)",
                   kd);
    T->p = s;
    if (peek(T) == '.' || peek(T) == 'e' || peek(T) == 'E')
        return bad(T, "'%s': only whole numbers are read here, not floats (write 60, not 60.0)",
                   kd);
    if (peek(T) == '-' || peek(T) == ':')
        return bad(T, "'%s': dates and times are not read", kd);
    if (!at_value_end(T))
        return bad(T, "'%s': expected the end of the number", kd);
    *ret = json_object_new_int64(neg ? -v : v);
    return *ret ? 0 : oom(T);
}

/* [ "a", "b", ... ] over one or more lines. */
static int array_value(struct toml *T, const char *key, struct json_object **ret)
{
    struct json_object *a = json_object_new_array(), *v = NULL;
    char kd[MCP_DISP_BUF];
    int r;

    mcp_disp(kd, key);
    if (!a)
        return oom(T);
    T->p++;
    for (;;) {
        r = skip_ws_lines(T);
        if (r < 0)
            goto out;
        if (peek(T) == ']')
            break;
        if (!is_quote(peek(T))) {
            r = peek(T) == '[' ? bad(T, "'%s': arrays of arrays are not read", kd)
                               : bad(T, "'%s': only arrays of strings are read", kd);
            goto out;
        }
        r = string_value(T, &v);
        if (r < 0)
            goto out;
        if (json_object_array_add(a, v) < 0) {
            json_object_put(v);
            r = oom(T);
            goto out;
        }
        r = skip_ws_lines(T);
        if (r < 0)
            goto out;
        if (peek(T) == ',') {
            T->p++;
            continue;
        }
        if (peek(T) != ']') {
            r = bad(T, "'%s': expected ',' or ']' in the array", kd);
            goto out;
        }
        break;
    }
    T->p++;
    *ret = a;
    a = NULL;
    r = 0;
out:
    json_wipe_strings(a);
    json_object_put(a);
    return r;
}

/* Adds key = v to table (which takes v, also on failure); a key defined twice is an error. */
static int table_add(struct toml *T, struct json_object *table, const char *key,
                     struct json_object *v, const char *in)
{
    char kd[MCP_DISP_BUF];
    if (json_object_object_get_ex(table, key, NULL)) {
        json_wipe_strings(v);
        json_object_put(v);
        mcp_disp(kd, key);
        return bad(T, "the key '%s' is defined twice in %s", kd, in);
    }
    if (json_object_object_add(table, key, v) < 0) {
        json_object_put(v);
        return oom(T);
    }
    return 0;
}

/* { KEY = "value", ... } on one line. */
static int inline_table_value(struct toml *T, const char *key, struct json_object **ret)
{
    struct json_object *o = json_object_new_object(), *v = NULL;
    struct strv path = STRV_INIT;
    char kd[MCP_DISP_BUF], in[MCP_DISP_BUF + 32];
    int r = 0;

    mcp_disp(kd, key);
    (void)snprintf(in, sizeof(in), "'%s'", kd);
    if (!o)
        return oom(T);
    T->p++;
    skip_ws(T);
    if (peek(T) == '}')
        goto done;
    for (;;) {
        strv_release(&path);
        r = parse_keypath(T, &path);
        if (r < 0)
            goto out;
        if (path.n > 1) {
            r = bad(T, "'%s': dotted keys in an inline table are not read", kd);
            goto out;
        }
        skip_ws(T);
        if (peek(T) != '=') {
            r = bad(T, "'%s': expected '=' after a key of the inline table", kd);
            goto out;
        }
        T->p++;
        skip_ws(T);
        if (!is_quote(peek(T))) {
            r = bad(T, "'%s': only inline tables of strings are read", kd);
            goto out;
        }
        r = string_value(T, &v);
        if (r >= 0)
            r = table_add(T, o, path.v[0], v, in);
        if (r < 0)
            goto out;
        skip_ws(T);
        if (peek(T) == '}')
            break;
        if (peek(T) != ',') {
            r = at_eol(T) ? bad(T, "'%s': an inline table must be on one line", kd)
                          : bad(T, "'%s': expected ',' or '}' in the inline table", kd);
            goto out;
        }
        T->p++;
        skip_ws(T);
        if (peek(T) == '}') {
            r = bad(T, "'%s': a comma before '}' is not allowed in an inline table", kd);
            goto out;
        }
    }
done:
    T->p++;
    *ret = o;
    o = NULL;
out:
    strv_release(&path);
    json_wipe_strings(o);
    json_object_put(o);
    return r;
}

/* A value of an MCP server's table. */
static int parse_value(struct toml *T, const char *key, struct json_object **ret)
{
    char c = peek(T), kd[MCP_DISP_BUF];

    if (is_quote(c))
        return string_value(T, ret);
    if (c == '[')
        return array_value(T, key, ret);
    if (c == '{')
        return inline_table_value(T, key, ret);
    if (at(T, "true") || at(T, "false")) {
        bool v = c == 't';
        T->p += v ? 4 : 5;
        if (!at_value_end(T)) {
            mcp_disp(kd, key);
            return bad(T, "'%s': expected the end of the value after %s", kd, v ? "true" : "false");
        }
        *ret = json_object_new_boolean(v);
        return *ret ? 0 : oom(T);
    }
    return integer_value(T, key, ret);
}

/* Scans past a value that is not read: a string of any kind, an array or inline table of
 * anything (nested at most MCP_TOML_MAX_DEPTH deep), or a bare scalar (number, boolean, date). */
static int skip_value(struct toml *T, int depth)
{
    struct strv path = STRV_INIT;
    int r = 0;

    if (depth >= MCP_TOML_MAX_DEPTH)
        return bad(T, "arrays or inline tables nested more than %d deep", MCP_TOML_MAX_DEPTH);
    char c = peek(T);
    if (is_quote(c)) {
        struct buf b;
        buf_init_secret(&b, STRING_MAX);
        r = parse_string(T, &b);
        buf_release(&b);
        return r;
    }
    if (c == '[') {
        T->p++;
        for (;;) {
            r = skip_ws_lines(T);
            if (r >= 0 && peek(T) == ']')
                break;
            if (r >= 0)
                r = skip_value(T, depth + 1);
            if (r >= 0)
                r = skip_ws_lines(T);
            if (r < 0)
                return r;
            if (peek(T) == ']')
                break;
            if (peek(T) != ',')
                return bad(T, "expected ',' or ']' in an array");
            T->p++;
        }
        T->p++;
        return 0;
    }
    if (c == '{') {
        T->p++;
        skip_ws(T);
        while (r >= 0 && peek(T) != '}') {
            strv_release(&path);
            r = parse_keypath(T, &path);
            if (r < 0)
                break;
            skip_ws(T);
            if (peek(T) != '=') {
                r = bad(T, "expected '=' after a key of an inline table");
                break;
            }
            T->p++;
            skip_ws(T);
            r = skip_value(T, depth + 1);
            if (r < 0)
                break;
            skip_ws(T);
            if (peek(T) == ',') {
                T->p++;
                skip_ws(T);
            } else if (peek(T) != '}') {
                r = bad(T, "expected ',' or '}' in an inline table");
            }
        }
        strv_release(&path);
        if (r >= 0)
            T->p++;
        return r;
    }
    const char *s = T->p;
    /* a space inside only between two bare characters: a date and a time */
    while (T->p < T->end && (is_bare(*T->p) || strchr("+.:", *T->p) ||
                             (*T->p == ' ' && T->p + 1 < T->end && is_bare(T->p[1]))))
        T->p++;
    if (T->p == s)
        return bad(T, "expected a value");
    return 0;
}

/* ---- tables and keys --------------------------------------------------------------------- */

/* The object of server name, created when it is not there yet. Borrowed. */
static int server_object(struct toml *T, const char *name, struct json_object **ret)
{
    struct json_object *o = NULL;
    if (json_object_object_get_ex(T->servers, name, &o)) {
        *ret = o;
        return 0;
    }
    o = json_object_new_object();
    if (!o || json_object_object_add(T->servers, name, o) < 0) {
        json_object_put(o);
        return oom(T);
    }
    *ret = o;
    return 0;
}

/* Where the lines after the header [path] (or [[path]]) go. */
static int open_table(struct toml *T, const struct strv *path, bool array)
{
    char d[MCP_DISP_BUF], nd[MCP_DISP_BUF];
    struct json_object *srv = NULL, *sub = NULL;
    int r;

    if (strcmp(path->v[0], SERVERS_PREFIX) != 0) {
        T->where = IN_SKIPPED;
        return 0;
    }
    path_disp(d, path, path->n);
    if (array)
        return bad(T,
                   "[[%s]] (an array of tables) is not read: write each server as a table "
                   "[mcp_servers.NAME]",
                   d);
    if (path->n == 1) {
        if (T->mcp_defined)
            return bad(T, "the table [mcp_servers] is defined twice");
        T->mcp_defined = true;
        T->where = IN_MCP;
        return 0;
    }
    if (path->n > 3)
        return bad(T,
                   "the table [%s] is not read: only [mcp_servers.NAME] and its tables of "
                   "strings ([mcp_servers.NAME.env]) are",
                   d);
    mcp_disp(nd, path->v[1]);
    r = server_object(T, path->v[1], &srv);
    if (r < 0)
        return r;
    if (path->n == 2) {
        if (json_object_object_get_ex(T->defined, path->v[1], NULL))
            return bad(T, "the table [%s] is defined twice", d);
        struct json_object *t = json_object_new_boolean(1);
        if (!t || json_object_object_add(T->defined, path->v[1], t) < 0) {
            json_object_put(t);
            return oom(T);
        }
        T->cur = srv;
        T->where = IN_SERVER;
    } else {
        if (json_object_object_get_ex(srv, path->v[2], NULL))
            return bad(T, "the table [%s] is defined twice (or its key is set in [mcp_servers.%s])",
                       d, nd);
        sub = json_object_new_object();
        if (!sub || json_object_object_add(srv, path->v[2], sub) < 0) {
            json_object_put(sub);
            return oom(T);
        }
        T->cur = sub;
        T->where = IN_SUB;
    }
    (void)snprintf(T->cur_label, sizeof(T->cur_label), "[%s]", d);
    return 0;
}

/* A table header line. */
static int parse_header(struct toml *T)
{
    struct strv path = STRV_INIT;
    bool array = at(T, "[[");
    int r;

    T->p += array ? 2 : 1;
    r = parse_keypath(T, &path);
    if (r < 0)
        goto out;
    if (!at(T, array ? "]]" : "]")) {
        r = bad(T, "expected '%s' to end the table header", array ? "]]" : "]");
        goto out;
    }
    T->p += array ? 2 : 1;
    r = open_table(T, &path, array);
    if (r >= 0)
        r = end_of_line(T, "a table header");
out:
    strv_release(&path);
    return r;
}

/* A line KEY = VALUE. */
static int parse_keyval(struct toml *T)
{
    struct strv path = STRV_INIT;
    struct json_object *v = NULL;
    char d[MCP_DISP_BUF];
    int r;

    r = parse_keypath(T, &path);
    if (r < 0)
        goto out;
    path_disp(d, &path, path.n);
    skip_ws(T);
    if (peek(T) != '=') {
        r = bad(T, "expected '=' after the key '%s'", d);
        goto out;
    }
    T->p++;
    skip_ws(T);
    switch (T->where) {
    case IN_ROOT:
        if (strcmp(path.v[0], SERVERS_PREFIX) == 0) {
            r = bad(T,
                    "'%s' written as a key is not read: write each server as a table "
                    "[mcp_servers.NAME]",
                    d);
            goto out;
        }
        /* fallthrough */
    case IN_SKIPPED:
        r = skip_value(T, 0);
        break;
    case IN_MCP:
        r = bad(T,
                "the key '%s' directly in [mcp_servers] is not read: write each server as a "
                "table [mcp_servers.NAME]",
                d);
        goto out;
    case IN_SERVER:
    case IN_SUB:
        if (path.n > 1) {
            r = bad(T, "the dotted key '%s' is not read in %s: write a table or an inline table", d,
                    T->cur_label);
            goto out;
        }
        if (T->where == IN_SUB && !is_quote(peek(T))) {
            r = bad(T, "'%s': %s holds strings only", d, T->cur_label);
            goto out;
        }
        r = parse_value(T, path.v[0], &v);
        if (r >= 0)
            r = table_add(T, T->cur, path.v[0], v, T->cur_label); /* takes v */
        break;
    }
    if (r >= 0)
        r = end_of_line(T, "a value");
out:
    strv_release(&path);
    return r;
}

int mcp_toml_read_servers(const char *text, size_t len, struct json_object **ret, struct err *e)
{
    struct toml T = {.p = text, .end = text + len, .line = 1, .e = e, .where = IN_ROOT};
    int r = 0;

    size_t bl = bad_utf8_line((const unsigned char *)text, len);
    if (bl > 0)
        return err_set(e, -EBADMSG, "line %zu: not UTF-8 text (or a NUL byte)", bl);
    T.servers = json_object_new_object();
    T.defined = json_object_new_object();
    if (!T.servers || !T.defined) {
        r = oom(&T);
        goto out;
    }
    while (r >= 0) {
        skip_ws(&T);
        if (T.p >= T.end)
            break;
        if (peek(&T) == '#') {
            r = skip_comment(&T);
            if (r >= 0)
                (void)eat_newline(&T);
        } else if (eat_newline(&T)) {
            continue;
        } else if (peek(&T) == '[') {
            r = parse_header(&T);
        } else {
            r = parse_keyval(&T);
        }
    }
    if (r < 0)
        goto out;
    *ret = T.servers;
    T.servers = NULL;
out:
    json_wipe_strings(T.servers);
    json_object_put(T.servers);
    json_object_put(T.defined);
    return r;
}
