/* mcp_toml_lex.c - the lexer of the config.toml reader (mcp_toml_int.h): the text's bytes,
 * line breaks and comments, strings with their escapes, keys and dotted key paths. It knows
 * nothing of values or tables. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mcp_toml_int.h"

int toml_bad(struct toml *T, const char *fmt, ...)
{
    char msg[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_set(T->e, -EBADMSG, "line %zu: %s", T->line, msg);
}

int toml_oom(struct toml *T)
{
    return err_set(T->e, -ENOMEM, "out of memory");
}

/* ---- characters -------------------------------------------------------------------------- */

/* The line of the first byte of s[0..n) that is not UTF-8, or a NUL; 0 when all is well. */
size_t toml_bad_utf8_line(const unsigned char *s, size_t n)
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

char toml_peek(const struct toml *T)
{
    return T->p < T->end ? *T->p : '\0'; /* no NUL inside: checked first */
}

bool toml_at(const struct toml *T, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(T->end - T->p) >= n && memcmp(T->p, s, n) == 0;
}

void toml_skip_ws(struct toml *T)
{
    while (T->p < T->end && (*T->p == ' ' || *T->p == '\t'))
        T->p++;
}

bool toml_at_eol(const struct toml *T)
{
    return T->p >= T->end || *T->p == '\n' || toml_at(T, "\r\n");
}

bool toml_eat_newline(struct toml *T)
{
    if (toml_peek(T) == '\n' || toml_at(T, "\r\n")) {
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
int toml_skip_comment(struct toml *T)
{
    if (toml_peek(T) != '#')
        return 0;
    for (; !toml_at_eol(T); T->p++)
        if (is_control((unsigned char)*T->p))
            return toml_bad(T, "a control character in a comment");
    return 0;
}

/* Blank space, line breaks and comments, as arrays allow between their elements. */
int toml_skip_ws_lines(struct toml *T)
{
    for (;;) {
        toml_skip_ws(T);
        int r = toml_skip_comment(T);
        if (r < 0)
            return r;
        if (!toml_eat_newline(T))
            return 0;
    }
}

/* The rest of a line after a header or a value: blank, maybe a comment, the line break. */
int toml_end_of_line(struct toml *T, const char *after)
{
    toml_skip_ws(T);
    int r = toml_skip_comment(T);
    if (r < 0)
        return r;
    if (T->p >= T->end || toml_eat_newline(T))
        return 0;
    return toml_bad(T, "expected the end of the line after %s", after);
}

/* ---- strings ----------------------------------------------------------------------------- */

static int put(struct toml *T, struct buf *out, const void *d, size_t n)
{
    int r = buf_append(out, d, n);
    if (r == -E2BIG)
        return toml_bad(T, "a string or key longer than %zu bytes", out->max);
    return r < 0 ? toml_oom(T) : 0;
}

static int hex_digits(struct toml *T, size_t n, uint32_t *ret)
{
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++, T->p++) {
        char c = toml_peek(T);
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return toml_bad(T, "\\%c needs %zu hexadecimal digits", n == 4 ? 'u' : 'U', n);
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
        return toml_bad(T, "a NUL character (\\u0000) in a string cannot be read");
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return toml_bad(T, "\\%c escape of a value that is not a Unicode character",
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
    char c = toml_peek(T);
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
        toml_skip_ws(T);
        if (!toml_eat_newline(T))
            return toml_bad(T, "a backslash followed by blank space must end its line");
        for (;;) {
            toml_skip_ws(T);
            if (!toml_eat_newline(T))
                return 0;
        }
    }
    if (c >= 0x20 && c < 0x7f)
        return toml_bad(T, "'\\%c' is not a valid escape in a string", c);
    return toml_bad(T, "a backslash that starts no valid escape in a string");
}

/* A string (T->p at its first quote) appended to out: basic "..." with escapes, literal '...',
 * and their multi-line forms """...""" and '''...'''. */
int toml_parse_string(struct toml *T, struct buf *out)
{
    char q = *T->p;
    bool multi = toml_at(T, q == '"' ? "\"\"\"" : "'''");
    size_t first = T->line;
    int r;

    T->p += multi ? 3 : 1;
    if (multi) /* a line break right after the opening quotes is not part of the string */
        (void)toml_eat_newline(T);
    for (;;) {
        if (T->p >= T->end) {
            T->line = first;
            return toml_bad(T, "a string that starts on this line is not closed");
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
                return toml_bad(T, "more than five quotes in a row in a multi-line string");
            /* up to two quotes before the closing three belong to the string */
            r = put(T, out, T->p, n >= 3 ? n - 3 : n);
            T->p += n;
            if (r < 0 || n >= 3)
                return r;
            continue;
        }
        if (c == '\\' && q == '"')
            r = escape(T, multi, out);
        else if (c == '\n' || (c == '\r' && toml_at(T, "\r\n"))) {
            if (!multi)
                return toml_bad(T, "a string is not closed on its line");
            (void)toml_eat_newline(T);
            r = put(T, out, "\n", 1);
        } else if (is_control(c)) {
            return toml_bad(T,
                            "a control character in a string: write it as an escape (\\uXXXX) in "
                            "a \"...\" string");
        } else {
            r = put(T, out, T->p, 1);
            T->p++;
        }
        if (r < 0)
            return r;
    }
}

bool toml_is_quote(char c)
{
    return c == '"' || c == '\'';
}

/* ---- keys -------------------------------------------------------------------------------- */

bool toml_is_bare(char c)
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
    char c = toml_peek(T);
    if (toml_is_quote(c)) {
        if (toml_at(T, "\"\"\"") || toml_at(T, "'''"))
            r = toml_bad(T, "a key cannot be a multi-line string");
        else
            r = toml_parse_string(T, &b);
    } else if (toml_is_bare(c)) {
        const char *s = T->p;
        while (toml_is_bare(toml_peek(T)))
            T->p++;
        r = put(T, &b, s, (size_t)(T->p - s));
    } else {
        r = toml_bad(T, "expected a key (letters, digits, '_', '-', or a quoted string)");
    }
    if (r >= 0 && strv_push_take(path, buf_detach(&b)) < 0)
        r = toml_oom(T);
    buf_release(&b);
    return r;
}

/* A key or table name, maybe dotted (a.b."c d"), into path. */
int toml_parse_keypath(struct toml *T, struct strv *path)
{
    for (;;) {
        toml_skip_ws(T);
        if (path->n == KEY_PARTS_MAX)
            return toml_bad(T, "a key or table name of more than %d dotted parts", KEY_PARTS_MAX);
        int r = parse_key(T, path);
        if (r < 0)
            return r;
        toml_skip_ws(T);
        if (toml_peek(T) != '.')
            return 0;
        T->p++;
    }
}

/* path joined with dots, cut to fit a message. */
void toml_path_disp(char out[MCP_DISP_BUF], const struct strv *path, size_t n)
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
