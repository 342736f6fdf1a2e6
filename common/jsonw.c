/* jsonw.c - JSON text straight into a buffer */
#include <errno.h>
#include <string.h>

#include <json-c/json.h>

#include "credkit/jsonw.h"

int jsonw_string(struct buf *b, const char *s, size_t len)
{
    return jsonw_string_ex(b, s, len, JSONW_ESCAPE_DEL);
}

int jsonw_string_ex(struct buf *b, const char *s, size_t len, unsigned flags)
{
    static const char hex[] = "0123456789abcdef";
    int r = buf_append_char(b, '"');
    size_t plain = 0;
    for (size_t i = 0; r >= 0 && i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[7];
        size_t n = 0;
        switch (c) {
        case '"':
            memcpy(esc, "\\\"", n = 2);
            break;
        case '\\':
            memcpy(esc, "\\\\", n = 2);
            break;
        case '\n':
            memcpy(esc, "\\n", n = 2);
            break;
        case '\r':
            memcpy(esc, "\\r", n = 2);
            break;
        case '\t':
            memcpy(esc, "\\t", n = 2);
            break;
        case '\b':
            memcpy(esc, "\\b", n = 2);
            break;
        case '\f':
            memcpy(esc, "\\f", n = 2);
            break;
        default:
            if (c < 0x20 || (c == 0x7f && (flags & JSONW_ESCAPE_DEL))) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                n = 6;
            }
        }
        if (!n)
            continue;
        r = buf_append(b, s + plain, i - plain);
        if (r >= 0)
            r = buf_append(b, esc, n);
        plain = i + 1;
    }
    if (r >= 0)
        r = buf_append(b, s + plain, len - plain);
    if (r >= 0)
        r = buf_append_char(b, '"');
    return r;
}

int jsonw_kv_string(struct buf *b, const char *key, const char *value)
{
    int r = jsonw_string(b, key, strlen(key));
    if (r >= 0)
        r = buf_append_char(b, ':');
    if (r >= 0)
        r = jsonw_string(b, value, strlen(value));
    return r;
}

int jsonw_kv_int(struct buf *b, const char *key, int64_t value)
{
    int r = jsonw_string(b, key, strlen(key));
    if (r >= 0)
        r = buf_printf(b, ":%lld", (long long)value);
    return r;
}

struct json_object *jsonw_answer_new(void)
{
    struct json_object *a = json_object_new_object();
    if (a && json_object_object_add(a, "version", json_object_new_int(JSONW_ANSWER_VERSION)) < 0) {
        json_object_put(a);
        return NULL;
    }
    return a;
}

/* Adds key: s to o (a NULL s adds nothing). 0 or -ENOMEM. */
static int add_string(struct json_object *o, const char *key, const char *s)
{
    if (!s)
        return 0;
    struct json_object *v = json_object_new_string(s);
    if (!v || json_object_object_add(o, key, v) < 0) {
        json_object_put(v);
        return -ENOMEM;
    }
    return 0;
}

int jsonw_answer_add_error(struct json_object *answer, const char *code, const char *message,
                           const char *fix)
{
    struct json_object *e = json_object_new_object();
    int r = e ? 0 : -ENOMEM;
    if (r >= 0)
        r = add_string(e, "code", code);
    if (r >= 0)
        r = add_string(e, "message", message ? message : "");
    if (r >= 0)
        r = add_string(e, "fix", fix);
    if (r >= 0 && json_object_object_add(answer, "error", e) < 0)
        r = -ENOMEM;
    else if (r >= 0)
        e = NULL;
    json_object_put(e);
    return r;
}

int jsonw_error_member(struct buf *b, const char *code, const char *message, const char *fix)
{
    int r = buf_append_str(b, "\"error\":{");
    if (r >= 0)
        r = jsonw_kv_string(b, "code", code);
    if (r >= 0)
        r = buf_append_char(b, ',');
    if (r >= 0)
        r = jsonw_kv_string(b, "message", message ? message : "");
    if (r >= 0 && fix) {
        r = buf_append_char(b, ',');
        if (r >= 0)
            r = jsonw_kv_string(b, "fix", fix);
    }
    if (r >= 0)
        r = buf_append_char(b, '}');
    return r;
}

int jsonw_error_answer(struct buf *b, const char *code, const char *message, const char *fix)
{
    size_t mark = b->len;
    int r = buf_printf(b, "{\"version\":%d,", JSONW_ANSWER_VERSION);
    if (r >= 0)
        r = jsonw_error_member(b, code, message, fix);
    if (r >= 0)
        r = buf_append_str(b, "}\n");
    if (r < 0 && b->data) {
        /* never half an object */
        b->len = mark;
        b->data[mark] = '\0';
    }
    return r;
}

int jsonw_status_answer(struct buf *b, const struct jsonw_status_code *table, size_t n, int status,
                        const char *message, const char *fix)
{
    for (size_t i = 0; i < n; i++)
        if (table[i].status == status)
            return jsonw_error_answer(
                b, table[i].code, message && *message ? message : "the command line is not valid",
                fix ? fix : table[i].fix);
    return -ENOENT;
}

bool jsonw_wanted(int argc, char *const *argv)
{
    for (int i = 1; i < argc && argv[i]; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        if (strcmp(argv[i], "--json") == 0)
            return true;
    }
    return false;
}
