/* helper_answer.c - the secrets and headers answers: writers, and readers that wipe */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credkit/helper_answer.h"
#include "credkit/json.h"
#include "credkit/jsonw.h"
#include "credkit/secmem.h"

/* ---- a small JSON reader ----
 *
 * json-c keeps its own copies of every string it parses (in the object and in the tokener's
 * scratch buffer) and frees them without wiping, so the answers, which carry secrets, are read
 * here instead: a strict RFC 8259 reader that decodes each string straight into a secret buffer
 * and skips the members it does not know, bounded in size and depth. */

struct reader {
    const char *s;
    size_t len;
    size_t pos;
    unsigned depth;
    struct err *e;
};

static int syntax(struct reader *rd, const char *what)
{
    return json_error_at(rd->e, rd->s, rd->len, rd->pos, what);
}

static void skip_ws(struct reader *rd)
{
    while (rd->pos < rd->len && (rd->s[rd->pos] == ' ' || rd->s[rd->pos] == '\t' ||
                                 rd->s[rd->pos] == '\n' || rd->s[rd->pos] == '\r'))
        rd->pos++;
}

static int peek(struct reader *rd)
{
    skip_ws(rd);
    return rd->pos < rd->len ? (unsigned char)rd->s[rd->pos] : -1;
}

static int expect(struct reader *rd, char c, const char *what)
{
    if (peek(rd) != (unsigned char)c)
        return syntax(rd, what);
    rd->pos++;
    return 0;
}

/* The length of the well-formed UTF-8 sequence at p (no overlongs, no surrogates, at most
 * U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t avail)
{
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        n = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3;
        if (p[0] == 0xe0)
            lo = 0xa0;
        else if (p[0] == 0xed)
            hi = 0x9f;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4;
        if (p[0] == 0xf0)
            lo = 0x90;
        else if (p[0] == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (avail < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

/* Whether s[0..len) is well-formed UTF-8: JSON text can carry nothing else. */
static bool utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t n = p[i] < 0x80 ? 1 : utf8_seq(p + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

static int hex4(struct reader *rd, unsigned *ret)
{
    unsigned v = 0;
    if (rd->len - rd->pos < 4)
        return syntax(rd, "invalid \\u escape");
    for (int i = 0; i < 4; i++) {
        char c = rd->s[rd->pos + (size_t)i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return syntax(rd, "invalid \\u escape");
        v = v << 4 | d;
    }
    rd->pos += 4;
    *ret = v;
    return 0;
}

static int put_utf8(struct buf *out, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12);
        u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | cp >> 18);
        u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return out ? buf_append(out, u, n) : 0;
}

/* After the backslash of \uXXXX (pos on the 'u'): one code point, surrogate pairs joined. */
static int read_u_escape(struct reader *rd, struct buf *out)
{
    unsigned cp, lo;
    rd->pos++;
    int r = hex4(rd, &cp);
    if (r < 0)
        return r;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return syntax(rd, "lone surrogate in a \\u escape");
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (rd->len - rd->pos < 2 || rd->s[rd->pos] != '\\' || rd->s[rd->pos + 1] != 'u')
            return syntax(rd, "lone surrogate in a \\u escape");
        rd->pos += 2;
        r = hex4(rd, &lo);
        if (r < 0)
            return r;
        if (lo < 0xdc00 || lo > 0xdfff)
            return syntax(rd, "lone surrogate in a \\u escape");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    /* no field of an answer may hold a NUL, and C strings could not carry one */
    if (cp == 0)
        return syntax(rd, "\\u0000 in a string");
    return put_utf8(out, cp);
}

static int read_escape(struct reader *rd, struct buf *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    rd->pos++; /* the backslash */
    if (rd->pos >= rd->len)
        return syntax(rd, "unterminated string");
    char c = rd->s[rd->pos];
    if (c == 'u')
        return read_u_escape(rd, out);
    const char *f = c ? strchr(from, c) : NULL;
    if (!f)
        return syntax(rd, "invalid escape in a string");
    rd->pos++;
    return out ? buf_append_char(out, to[f - from]) : 0;
}

/* Reads a string into out (a secret buffer, appended to), or only checks it when out is NULL. */
static int read_string(struct reader *rd, struct buf *out)
{
    int r = expect(rd, '"', "expected a string");
    while (r >= 0) {
        if (rd->pos >= rd->len)
            return syntax(rd, "unterminated string");
        const unsigned char *p = (const unsigned char *)rd->s + rd->pos;
        if (*p == '"') {
            rd->pos++;
            return 0;
        }
        if (*p == '\\') {
            r = read_escape(rd, out);
            continue;
        }
        if (*p < 0x20)
            return syntax(rd, "control character in a string");
        size_t n = *p < 0x80 ? 1 : utf8_seq(p, rd->len - rd->pos);
        if (n == 0)
            return syntax(rd, "invalid UTF-8 in a string");
        r = out ? buf_append(out, p, n) : 0;
        rd->pos += n;
    }
    return r;
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* Reads a number; *ret_int tells whether it was an integer that fits in int64_t (then in
 * *ret). */
static int read_number(struct reader *rd, bool *ret_int, int64_t *ret)
{
    bool neg = false, integer = true;
    uint64_t v = 0;
    if (rd->s[rd->pos] == '-') {
        neg = true;
        rd->pos++;
    }
    if (rd->pos >= rd->len || !is_digit(rd->s[rd->pos]))
        return syntax(rd, "invalid number");
    if (rd->s[rd->pos] == '0' && rd->pos + 1 < rd->len && is_digit(rd->s[rd->pos + 1]))
        return syntax(rd, "invalid number (leading zero)");
    for (; rd->pos < rd->len && is_digit(rd->s[rd->pos]); rd->pos++) {
        unsigned d = (unsigned)(rd->s[rd->pos] - '0');
        if (v > (UINT64_MAX - d) / 10)
            integer = false;
        else
            v = v * 10 + d;
    }
    if (rd->pos < rd->len && rd->s[rd->pos] == '.') {
        integer = false;
        rd->pos++;
        if (rd->pos >= rd->len || !is_digit(rd->s[rd->pos]))
            return syntax(rd, "invalid number");
        while (rd->pos < rd->len && is_digit(rd->s[rd->pos]))
            rd->pos++;
    }
    if (rd->pos < rd->len && (rd->s[rd->pos] == 'e' || rd->s[rd->pos] == 'E')) {
        integer = false;
        rd->pos++;
        if (rd->pos < rd->len && (rd->s[rd->pos] == '+' || rd->s[rd->pos] == '-'))
            rd->pos++;
        if (rd->pos >= rd->len || !is_digit(rd->s[rd->pos]))
            return syntax(rd, "invalid number");
        while (rd->pos < rd->len && is_digit(rd->s[rd->pos]))
            rd->pos++;
    }
    if (integer && v > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
        integer = false;
    *ret_int = integer;
    if (integer)
        *ret = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return 0;
}

static int enter(struct reader *rd)
{
    if (++rd->depth > JSON_MAX_DEPTH)
        return syntax(rd, "nesting too deep");
    rd->pos++; /* '{' or '[' */
    return 0;
}

static int skip_value(struct reader *rd);

/* Reads the next member's key of an object whose '{' was consumed: 1 with the key in key (a
 * secret buffer, reset first), 0 at the closing '}' (consumed). count counts the members. */
static int object_next(struct reader *rd, size_t *count, struct buf *key)
{
    int c = peek(rd);
    if (c == '}') {
        rd->pos++;
        rd->depth--;
        return 0;
    }
    if (*count > 0) {
        if (c != ',')
            return syntax(rd, "expected ',' or '}'");
        rd->pos++;
    } else if (c != '"') {
        return syntax(rd, "expected a string or '}'");
    }
    buf_reset(key);
    int r = read_string(rd, key);
    if (r >= 0)
        r = expect(rd, ':', "expected ':'");
    if (r < 0)
        return r;
    (*count)++;
    return 1;
}

static int skip_object(struct reader *rd)
{
    struct buf key;
    size_t count = 0;
    int r = enter(rd);
    buf_init_secret(&key, HELPER_ANSWER_MAX);
    while (r >= 0) {
        r = object_next(rd, &count, &key);
        if (r <= 0)
            break;
        r = skip_value(rd);
    }
    buf_release(&key);
    return r;
}

static int skip_array(struct reader *rd)
{
    int r = enter(rd);
    for (size_t i = 0; r >= 0; i++) {
        int c = peek(rd);
        if (c == ']') {
            rd->pos++;
            rd->depth--;
            return 0;
        }
        if (i > 0) {
            if (c != ',')
                return syntax(rd, "expected ',' or ']'");
            rd->pos++;
        }
        r = skip_value(rd);
    }
    return r;
}

static int skip_literal(struct reader *rd, const char *word)
{
    size_t n = strlen(word);
    if (rd->len - rd->pos < n || memcmp(rd->s + rd->pos, word, n) != 0)
        return syntax(rd, "unexpected character");
    rd->pos += n;
    return 0;
}

static int skip_value(struct reader *rd)
{
    bool integer;
    int64_t v;
    switch (peek(rd)) {
    case '{':
        return skip_object(rd);
    case '[':
        return skip_array(rd);
    case '"':
        return read_string(rd, NULL);
    case 't':
        return skip_literal(rd, "true");
    case 'f':
        return skip_literal(rd, "false");
    case 'n':
        return skip_literal(rd, "null");
    case -1:
        return syntax(rd, "unexpected end of the answer");
    default:
        if (rd->s[rd->pos] == '-' || is_digit(rd->s[rd->pos]))
            return read_number(rd, &integer, &v);
        return syntax(rd, "unexpected character");
    }
}

/* The JSON type of the value ahead, for messages: "a string", "an object"... */
static const char *kind_ahead(struct reader *rd)
{
    switch (peek(rd)) {
    case '{':
        return "an object";
    case '[':
        return "an array";
    case '"':
        return "a string";
    case 't':
    case 'f':
        return "a boolean";
    case 'n':
        return "null";
    default:
        return "a number";
    }
}

static int type_error(struct reader *rd, const char *what, const char *want)
{
    int c = peek(rd);
    if (c <= 0 || !strchr("{[\"tfn-0123456789", c))
        return skip_value(rd); /* not a value at all: a syntax error, with its position */
    return err_set(rd->e, -EBADMSG, "%s must be %s, not %s", what, want, kind_ahead(rd));
}

/* Reads a string member's value into a fresh copy (*ret, caller frees with secure_free). */
static int read_string_dup(struct reader *rd, const char *what, char **ret)
{
    struct buf b;
    if (peek(rd) != '"')
        return type_error(rd, what, "a string");
    buf_init_secret(&b, HELPER_ANSWER_MAX);
    int r = read_string(rd, &b);
    if (r >= 0) {
        *ret = buf_detach(&b);
        if (!*ret)
            r = -ENOMEM;
    }
    buf_release(&b);
    return r;
}

static int read_positive_int(struct reader *rd, const char *what, int64_t *ret)
{
    bool integer = false;
    int64_t v = 0;
    int c = peek(rd);
    if (c != '-' && !is_digit(c))
        return type_error(rd, what, "a positive integer");
    int r = read_number(rd, &integer, &v);
    if (r < 0)
        return r;
    if (!integer || v <= 0)
        return err_set(rd->e, -EBADMSG, "%s must be a positive integer", what);
    *ret = v;
    return 0;
}

static int read_version(struct reader *rd, bool *seen)
{
    int64_t v = 0;
    if (*seen)
        return err_set(rd->e, -EBADMSG, "\"version\" appears twice");
    *seen = true;
    int r = read_positive_int(rd, "\"version\"", &v);
    if (r < 0)
        return r;
    if (v > HELPER_ANSWER_VERSION)
        return err_set(rd->e, -EPROTONOSUPPORT,
                       "the answer is in version %lld of the helper protocol, and this program "
                       "reads version %d: update it",
                       (long long)v, HELPER_ANSWER_VERSION);
    return 0;
}

static int reader_begin(struct reader *rd, const char *text, size_t len, struct err *e)
{
    *rd = (struct reader){.s = text, .len = len, .e = e};
    if (len > HELPER_ANSWER_MAX)
        return err_set(e, -E2BIG, "the answer is larger than %u bytes", HELPER_ANSWER_MAX);
    if (peek(rd) == -1)
        return err_set(e, -EBADMSG, "empty answer: expected a JSON object");
    if (peek(rd) != '{')
        return err_set(e, -EBADMSG, "the answer is not a JSON object");
    return enter(rd);
}

static int reader_end(struct reader *rd)
{
    if (peek(rd) != -1)
        return syntax(rd, "unexpected characters after the answer");
    return 0;
}

/* Names the index-th member (1-based) in a message: by its name when that is short printable
 * ASCII, else by its position. */
static void describe_name(const char *kind, const char *name, size_t n, size_t index, char *out,
                          size_t size)
{
    bool printable = n > 0 && n <= 64;
    for (size_t i = 0; printable && i < n; i++)
        printable = name[i] >= 0x20 && name[i] < 0x7f && name[i] != '\'';
    if (printable)
        (void)snprintf(out, size, "%s '%s'", kind, name);
    else
        (void)snprintf(out, size, "%s #%zu", kind, index);
}

/* ---- the secrets answer ---- */

static bool secret_name_valid(const char *s)
{
    if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || is_digit(*s) || *s == '_'))
            return false;
    return true;
}

static void secret_release(struct helper_secret *s)
{
    free(s->name);
    if (s->value)
        secure_free_len(s->value, s->value_len);
    free(s->source);
    free(s->error);
    *s = (struct helper_secret){0};
}

const struct helper_secret *helper_secrets_find(const struct helper_secrets *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i].name, name) == 0)
            return &a->v[i];
    return NULL;
}

/* Appends s (whose strings a now owns) or releases it on failure. */
static int secrets_push(struct helper_secrets *a, struct helper_secret *s)
{
    if (!s->name || (!s->value && !s->error)) { /* a failed copy */
        secret_release(s);
        return -ENOMEM;
    }
    if (a->n == a->alloc) {
        size_t alloc = a->alloc ? a->alloc * 2 : 8;
        struct helper_secret *v =
            alloc > SIZE_MAX / sizeof(*v) ? NULL : realloc(a->v, alloc * sizeof(*v));
        if (!v) {
            secret_release(s);
            return -ENOMEM;
        }
        a->v = v;
        a->alloc = alloc;
    }
    a->v[a->n++] = *s;
    *s = (struct helper_secret){0};
    return 0;
}

static char *dup_secret(const char *value, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, value, len);
        p[len] = 0;
    }
    return p;
}

int helper_secrets_add_value(struct helper_secrets *a, const char *name, const char *value,
                             size_t len, const char *source, int64_t expires_at)
{
    if (!secret_name_valid(name) || helper_secrets_find(a, name) || memchr(value, 0, len) ||
        !utf8_valid(value, len) || expires_at < 0 ||
        (source && !utf8_valid(source, strlen(source))))
        return -EINVAL;
    struct helper_secret s = {
        .name = strdup(name),
        .value = dup_secret(value, len),
        .value_len = len,
        .source = source ? strdup(source) : NULL,
        .expires_at = expires_at,
    };
    if (source && !s.source) {
        secret_release(&s);
        return -ENOMEM;
    }
    return secrets_push(a, &s);
}

int helper_secrets_add_error(struct helper_secrets *a, const char *name, const char *message)
{
    if (!secret_name_valid(name) || helper_secrets_find(a, name) ||
        !utf8_valid(message, strlen(message)))
        return -EINVAL;
    struct helper_secret s = {.name = strdup(name), .error = strdup(message)};
    return secrets_push(a, &s);
}

void helper_secrets_release(struct helper_secrets *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        secret_release(&a->v[i]);
    free(a->v);
    *a = (struct helper_secrets){0};
}

static int write_secret(const struct helper_secret *s, struct buf *out)
{
    int r = jsonw_string(out, s->name, strlen(s->name));
    if (r >= 0)
        r = buf_append_str(out, ":{");
    if (r >= 0 && s->error) {
        r = jsonw_kv_string(out, "error", s->error);
    } else if (r >= 0) {
        r = buf_append_str(out, "\"value\":");
        if (r >= 0)
            r = jsonw_string(out, s->value, s->value_len);
        if (r >= 0 && s->source) {
            r = buf_append_char(out, ',');
            if (r >= 0)
                r = jsonw_kv_string(out, "source", s->source);
        }
        if (r >= 0 && s->expires_at > 0) {
            r = buf_append_char(out, ',');
            if (r >= 0)
                r = jsonw_kv_int(out, "expires_at", s->expires_at);
        }
    }
    if (r >= 0)
        r = buf_append_char(out, '}');
    return r;
}

int helper_secrets_write(const struct helper_secrets *a, struct buf *out)
{
    int r = buf_printf(out, "{\"version\":%d,\"secrets\":{", HELPER_ANSWER_VERSION);
    for (size_t i = 0; r >= 0 && i < a->n; i++) {
        if (i > 0)
            r = buf_append_char(out, ',');
        if (r >= 0)
            r = write_secret(&a->v[i], out);
    }
    if (r >= 0)
        r = buf_append_str(out, "}}\n");
    return r;
}

/* One member of "secrets", after its key (the name, already checked). */
static int read_secret(struct reader *rd, const char *name, struct helper_secrets *a)
{
    struct helper_secret s = {0};
    struct buf key;
    size_t count = 0;
    char what[128];
    int r;

    if (peek(rd) != '{')
        return err_set(rd->e, -EBADMSG, "\"secrets\": '%s' must be an object, not %s", name,
                       kind_ahead(rd));
    buf_init_secret(&key, HELPER_ANSWER_MAX);
    r = enter(rd);
    while (r >= 0 && (r = object_next(rd, &count, &key)) > 0) {
        const char *k = buf_str(&key);
        char **field = strcmp(k, "value") == 0    ? &s.value
                       : strcmp(k, "source") == 0 ? &s.source
                       : strcmp(k, "error") == 0  ? &s.error
                                                  : NULL;
        (void)snprintf(what, sizeof(what), "\"secrets\": '%s': \"%s\"", name, k);
        if ((field && *field) || (strcmp(k, "expires_at") == 0 && s.expires_at))
            r = err_set(rd->e, -EBADMSG, "%s appears twice", what);
        else if (field)
            r = read_string_dup(rd, what, field);
        else if (strcmp(k, "expires_at") == 0)
            r = read_positive_int(rd, what, &s.expires_at);
        else
            r = skip_value(rd);
        if (r >= 0 && field == &s.value)
            s.value_len = strlen(s.value);
    }
    buf_release(&key);
    if (r >= 0 && s.value && s.error)
        r = err_set(rd->e, -EBADMSG, "\"secrets\": '%s' has both \"value\" and \"error\"", name);
    if (r >= 0 && !s.value && !s.error)
        r = err_set(rd->e, -EBADMSG, "\"secrets\": '%s' has neither \"value\" nor \"error\"", name);
    if (r >= 0)
        s.name = strdup(name);
    if (r < 0) {
        secret_release(&s);
        return r;
    }
    return secrets_push(a, &s);
}

static int read_secrets_object(struct reader *rd, struct helper_secrets *a)
{
    struct buf key;
    size_t count = 0;
    int r;
    if (peek(rd) != '{')
        return type_error(rd, "\"secrets\"", "an object");
    buf_init_secret(&key, HELPER_ANSWER_MAX);
    r = enter(rd);
    while (r >= 0 && (r = object_next(rd, &count, &key)) > 0) {
        const char *name = buf_str(&key);
        char desc[96];
        describe_name("name", name, key.len, count, desc, sizeof(desc));
        if (!secret_name_valid(name))
            r = err_set(rd->e, -EBADMSG,
                        "\"secrets\": %s is not a valid secret name (letters, digits and '_', "
                        "not starting with a digit)",
                        desc);
        else if (helper_secrets_find(a, name))
            r = err_set(rd->e, -EBADMSG, "\"secrets\": '%s' appears twice", name);
        else
            r = read_secret(rd, name, a);
    }
    buf_release(&key);
    return r;
}

int helper_secrets_parse(const char *text, size_t len, struct helper_secrets *ret, struct err *e)
{
    struct helper_secrets a = {0};
    struct reader rd;
    struct buf key;
    size_t count = 0;
    bool version = false, secrets = false;
    int r = reader_begin(&rd, text, len, e);
    buf_init_secret(&key, HELPER_ANSWER_MAX);
    while (r >= 0 && (r = object_next(&rd, &count, &key)) > 0) {
        if (strcmp(buf_str(&key), "version") == 0) {
            r = read_version(&rd, &version);
        } else if (strcmp(buf_str(&key), "secrets") == 0) {
            if (secrets)
                r = err_set(e, -EBADMSG, "\"secrets\" appears twice");
            else
                r = read_secrets_object(&rd, &a);
            secrets = true;
        } else {
            r = skip_value(&rd);
        }
    }
    if (r >= 0)
        r = reader_end(&rd);
    if (r >= 0 && !secrets)
        r = err_set(e, -EBADMSG, "the answer has no \"secrets\" object");
    buf_release(&key);
    if (r < 0) {
        helper_secrets_release(&a);
        return r;
    }
    *ret = a;
    return 0;
}

/* ---- the headers answer ---- */

bool helper_header_name_valid(const char *name, size_t len)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) ||
              (c && strchr(extra, c))))
            return false;
    }
    return true;
}

bool helper_header_value_valid(const char *value, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

const char *helper_headers_get(const struct helper_headers *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcasecmp(a->v[i].name, name) == 0)
            return a->v[i].value;
    return NULL;
}

int helper_headers_add(struct helper_headers *a, const char *name, const char *value, size_t len,
                       struct err *e)
{
    if (!helper_header_name_valid(name, strlen(name)))
        return err_set(e, -EINVAL,
                       "a header name is not an HTTP token (letters, digits and "
                       "!#$%%&'*+-.^_`|~)");
    if (!helper_header_value_valid(value, len))
        return err_set(e, -EINVAL,
                       "header '%s': the value has a control character (CR, LF, NUL and the like "
                       "are refused)",
                       name);
    if (!utf8_valid(value, len))
        return err_set(e, -EINVAL, "header '%s': the value is not valid UTF-8", name);
    if (helper_headers_get(a, name))
        return err_set(e, -EINVAL, "header '%s' appears twice", name);
    if (a->n == a->alloc) {
        size_t alloc = a->alloc ? a->alloc * 2 : 4;
        struct helper_header *v =
            alloc > SIZE_MAX / sizeof(*v) ? NULL : realloc(a->v, alloc * sizeof(*v));
        if (!v)
            return err_set(e, -ENOMEM, "out of memory");
        a->v = v;
        a->alloc = alloc;
    }
    struct helper_header h = {
        .name = strdup(name), .value = dup_secret(value, len), .value_len = len};
    if (!h.name || !h.value) {
        free(h.name);
        if (h.value)
            secure_free_len(h.value, len);
        return err_set(e, -ENOMEM, "out of memory");
    }
    a->v[a->n++] = h;
    return 0;
}

void helper_headers_release(struct helper_headers *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        free(a->v[i].name);
        secure_free_len(a->v[i].value, a->v[i].value_len);
    }
    free(a->v);
    *a = (struct helper_headers){0};
}

int helper_headers_write(const struct helper_headers *a, struct buf *out)
{
    int r = buf_append_str(out, "{\"headers\":{");
    for (size_t i = 0; r >= 0 && i < a->n; i++) {
        if (i > 0)
            r = buf_append_char(out, ',');
        if (r >= 0)
            r = jsonw_string(out, a->v[i].name, strlen(a->v[i].name));
        if (r >= 0)
            r = buf_append_char(out, ':');
        if (r >= 0)
            r = jsonw_string(out, a->v[i].value, a->v[i].value_len);
    }
    if (r >= 0)
        r = buf_append_char(out, '}');
    if (r >= 0 && a->expires_at > 0)
        r = buf_printf(out, ",\"expires_at\":%lld", (long long)a->expires_at);
    if (r >= 0)
        r = buf_printf(out, ",\"version\":%d}\n", HELPER_ANSWER_VERSION);
    return r;
}

static int read_headers_object(struct reader *rd, struct helper_headers *a)
{
    struct buf key, value;
    size_t count = 0;
    int r;
    if (peek(rd) != '{')
        return type_error(rd, "\"headers\"", "an object");
    buf_init_secret(&key, HELPER_ANSWER_MAX);
    buf_init_secret(&value, HELPER_ANSWER_MAX);
    r = enter(rd);
    while (r >= 0 && (r = object_next(rd, &count, &key)) > 0) {
        const char *name = buf_str(&key);
        char desc[96], what[128];
        describe_name("header", name, key.len, count, desc, sizeof(desc));
        if (!helper_header_name_valid(name, key.len)) {
            r = err_set(rd->e, -EBADMSG,
                        "\"headers\": member %zu: the name is not an HTTP token (letters, digits "
                        "and !#$%%&'*+-.^_`|~)",
                        count);
            break;
        }
        (void)snprintf(what, sizeof(what), "\"headers\": %s", desc);
        if (peek(rd) != '"') {
            r = type_error(rd, what, "a string");
            break;
        }
        buf_reset(&value);
        r = read_string(rd, &value);
        if (r >= 0 && !helper_header_value_valid(buf_str(&value), value.len))
            r = err_set(rd->e, -EBADMSG,
                        "%s: the value has a control character (CR, LF, NUL and the like are "
                        "refused)",
                        what);
        else if (r >= 0 && helper_headers_get(a, name))
            r = err_set(rd->e, -EBADMSG, "%s appears twice", what);
        else if (r >= 0)
            r = helper_headers_add(a, name, buf_str(&value), value.len, rd->e);
    }
    buf_release(&value);
    buf_release(&key);
    return r;
}

int helper_headers_parse(const char *text, size_t len, struct helper_headers *ret, struct err *e)
{
    struct helper_headers a = {0};
    struct reader rd;
    struct buf key;
    size_t count = 0;
    bool version = false, headers = false, expires = false;
    int r = reader_begin(&rd, text, len, e);
    buf_init_secret(&key, HELPER_ANSWER_MAX);
    while (r >= 0 && (r = object_next(&rd, &count, &key)) > 0) {
        const char *k = buf_str(&key);
        if (strcmp(k, "version") == 0) {
            r = read_version(&rd, &version);
        } else if (strcmp(k, "headers") == 0) {
            r = headers ? err_set(e, -EBADMSG, "\"headers\" appears twice")
                        : read_headers_object(&rd, &a);
            headers = true;
        } else if (strcmp(k, "expires_at") == 0) {
            r = expires ? err_set(e, -EBADMSG, "\"expires_at\" appears twice")
                        : read_positive_int(&rd, "\"expires_at\"", &a.expires_at);
            expires = true;
        } else {
            r = skip_value(&rd);
        }
    }
    if (r >= 0)
        r = reader_end(&rd);
    if (r >= 0 && !headers)
        r = err_set(e, -EBADMSG, "the answer has no \"headers\" object");
    buf_release(&key);
    if (r < 0) {
        helper_headers_release(&a);
        return r;
    }
    *ret = a;
    return 0;
}
