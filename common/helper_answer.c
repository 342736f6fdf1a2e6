/* helper_answer.c - the secrets and headers answers: writers, and readers that wipe */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credkit/helper_answer.h"
#include "credkit/json.h"
#include "credkit/jsonr.h"
#include "credkit/jsonw.h"
#include "credkit/secmem.h"

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int type_error(struct jsonr *rd, const char *what, const char *want)
{
    int c = jsonr_peek(rd);
    if (c <= 0 || !strchr("{[\"tfn-0123456789", c))
        return jsonr_skip(rd); /* not a value at all: a syntax error, with its position */
    return err_set(rd->e, -EBADMSG, "%s must be %s, not %s", what, want, jsonr_kind(rd));
}

/* Reads a string member's value into a fresh copy (*ret, caller frees with secure_free). */
static int read_string_dup(struct jsonr *rd, const char *what, char **ret)
{
    struct buf b;
    if (jsonr_peek(rd) != '"')
        return type_error(rd, what, "a string");
    buf_init_secret(&b, HELPER_ANSWER_MAX);
    int r = jsonr_string(rd, &b);
    if (r >= 0) {
        *ret = buf_detach(&b);
        if (!*ret)
            r = -ENOMEM;
    }
    buf_release(&b);
    return r;
}

static int read_positive_int(struct jsonr *rd, const char *what, int64_t *ret)
{
    bool integer = false;
    int64_t v = 0;
    int c = jsonr_peek(rd);
    if (c != '-' && !is_digit(c))
        return type_error(rd, what, "a positive integer");
    int r = jsonr_number(rd, &integer, &v);
    if (r < 0)
        return r;
    if (!integer || v <= 0)
        return err_set(rd->e, -EBADMSG, "%s must be a positive integer", what);
    *ret = v;
    return 0;
}

static int read_version(struct jsonr *rd, bool *seen)
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

static int reader_begin(struct jsonr *rd, const char *text, size_t len, struct err *e)
{
    jsonr_init(rd, text, len, e);
    if (len > HELPER_ANSWER_MAX)
        return err_set(e, -E2BIG, "the answer is larger than %u bytes", HELPER_ANSWER_MAX);
    if (jsonr_peek(rd) == -1)
        return err_set(e, -EBADMSG, "empty answer: expected a JSON object");
    if (jsonr_peek(rd) != '{')
        return err_set(e, -EBADMSG, "the answer is not a JSON object");
    return jsonr_object_begin(rd);
}

static int reader_end(struct jsonr *rd)
{
    if (jsonr_peek(rd) != -1)
        return jsonr_syntax(rd, "unexpected characters after the answer");
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
        !jsonr_utf8_valid(value, len) || expires_at < 0 ||
        (source && !jsonr_utf8_valid(source, strlen(source))))
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
        !jsonr_utf8_valid(message, strlen(message)))
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
static int read_secret(struct jsonr *rd, const char *name, struct helper_secrets *a)
{
    struct helper_secret s = {0};
    struct buf key;
    size_t count = 0;
    char what[128];
    int r;

    if (jsonr_peek(rd) != '{')
        return err_set(rd->e, -EBADMSG, "\"secrets\": '%s' must be an object, not %s", name,
                       jsonr_kind(rd));
    buf_init_secret(&key, HELPER_ANSWER_MAX);
    r = jsonr_object_begin(rd);
    while (r >= 0 && (r = jsonr_object_next(rd, &count, &key)) > 0) {
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
            r = jsonr_skip(rd);
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

static int read_secrets_object(struct jsonr *rd, struct helper_secrets *a)
{
    struct buf key;
    size_t count = 0;
    int r;
    if (jsonr_peek(rd) != '{')
        return type_error(rd, "\"secrets\"", "an object");
    buf_init_secret(&key, HELPER_ANSWER_MAX);
    r = jsonr_object_begin(rd);
    while (r >= 0 && (r = jsonr_object_next(rd, &count, &key)) > 0) {
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
    struct jsonr rd;
    struct buf key;
    size_t count = 0;
    bool version = false, secrets = false;
    int r = reader_begin(&rd, text, len, e);
    buf_init_secret(&key, HELPER_ANSWER_MAX);
    while (r >= 0 && (r = jsonr_object_next(&rd, &count, &key)) > 0) {
        if (strcmp(buf_str(&key), "version") == 0) {
            r = read_version(&rd, &version);
        } else if (strcmp(buf_str(&key), "secrets") == 0) {
            if (secrets)
                r = err_set(e, -EBADMSG, "\"secrets\" appears twice");
            else
                r = read_secrets_object(&rd, &a);
            secrets = true;
        } else {
            r = jsonr_skip(&rd);
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
    if (!jsonr_utf8_valid(value, len))
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

static int read_headers_object(struct jsonr *rd, struct helper_headers *a)
{
    struct buf key, value;
    size_t count = 0;
    int r;
    if (jsonr_peek(rd) != '{')
        return type_error(rd, "\"headers\"", "an object");
    buf_init_secret(&key, HELPER_ANSWER_MAX);
    buf_init_secret(&value, HELPER_ANSWER_MAX);
    r = jsonr_object_begin(rd);
    while (r >= 0 && (r = jsonr_object_next(rd, &count, &key)) > 0) {
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
        if (jsonr_peek(rd) != '"') {
            r = type_error(rd, what, "a string");
            break;
        }
        buf_reset(&value);
        r = jsonr_string(rd, &value);
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
    struct jsonr rd;
    struct buf key;
    size_t count = 0;
    bool version = false, headers = false, expires = false;
    int r = reader_begin(&rd, text, len, e);
    buf_init_secret(&key, HELPER_ANSWER_MAX);
    while (r >= 0 && (r = jsonr_object_next(&rd, &count, &key)) > 0) {
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
            r = jsonr_skip(&rd);
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
