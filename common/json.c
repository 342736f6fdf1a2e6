/* json.c - JSON over json-c, bounded, with errors a user can act on */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/printbuf.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/jsonw.h"
#include "credkit/path.h"
#include "credkit/secmem.h"

static bool is_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int json_error_at(struct err *e, const char *text, size_t len, size_t pos, const char *what)
{
    size_t line = 1, start = 0;
    if (pos > len)
        pos = len;
    for (size_t i = 0; i < pos; i++)
        if (text[i] == '\n') {
            line++;
            start = i + 1;
        }
    return err_set(e, -EBADMSG, "line %zu, column %zu: %s", line, pos - start + 1, what);
}

int json_blank_jsonc(char *text, size_t len, struct err *e)
{
    size_t comma = SIZE_MAX; /* a ',' that nothing but blank space and comments follows yet */

    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (is_json_space(c))
            continue;
        if (c == '/' && i + 1 < len && text[i + 1] == '/') {
            for (; i < len && text[i] != '\n'; i++)
                text[i] = ' ';
            continue;
        }
        if (c == '/' && i + 1 < len && text[i + 1] == '*') {
            size_t start = i;
            text[i] = text[i + 1] = ' ';
            for (i += 2; i + 1 < len && !(text[i] == '*' && text[i + 1] == '/'); i++)
                if (text[i] != '\n')
                    text[i] = ' ';
            if (i + 1 >= len)
                return json_error_at(e, text, len, start, "a comment (/*) that is never closed");
            text[i] = text[i + 1] = ' ';
            i++;
            continue;
        }
        if ((c == ']' || c == '}') && comma != SIZE_MAX)
            text[comma] = ' ';
        comma = c == ',' ? i : SIZE_MAX;
        if (c == '"') /* to its closing quote, escapes skipped; an open one is json-c's to say */
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\')
                    i++;
    }
    return 0;
}

int json_parse_with(struct json_tokener *tok, const char *text, size_t len, size_t max_len,
                    const char *noun, struct json_object **ret, struct err *e)
{
    struct json_object *obj = NULL;
    int r;

    /* json-c takes an int length, and we feed it one more byte below */
    if (len > max_len || len >= INT_MAX)
        return err_set(e, -E2BIG, "the %s is larger than %zu bytes", noun,
                       max_len < INT_MAX - 1 ? max_len : (size_t)INT_MAX - 1);
    /* json-c takes a NUL for the end of the input in places: never let it see one */
    const char *nul = memchr(text, 0, len);
    if (nul) {
        char what[64];
        (void)snprintf(what, sizeof(what), "NUL byte in the %s", noun);
        return json_error_at(e, text, len, (size_t)(nul - text), what);
    }
    size_t i = 0;
    while (i < len && is_json_space(text[i]))
        i++;
    if (i == len)
        return err_set(e, -EBADMSG, "empty %s: expected a JSON value", noun);

    json_tokener_reset(tok);
    obj = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t pos = json_tokener_get_parse_end(tok);
    if (!obj && jerr == json_tokener_continue) {
        /* the end of the input: a final NUL completes a top-level number or reveals an
         * unfinished document */
        obj = json_tokener_parse_ex(tok, "", 1);
        jerr = json_tokener_get_error(tok);
        pos = len;
    }
    /* json-c returns NULL for a JSON null too, with success */
    if (!obj && jerr != json_tokener_success) {
        char what[128];
        if (jerr == json_tokener_error_parse_eof || jerr == json_tokener_continue)
            (void)snprintf(what, sizeof(what), "unexpected end of input");
        else if (jerr == json_tokener_error_depth)
            (void)snprintf(what, sizeof(what), "nested more than %d levels deep", JSON_MAX_DEPTH);
        else
            (void)snprintf(what, sizeof(what), "%s", json_tokener_error_desc(jerr));
        return json_error_at(e, text, len, pos, what);
    }
    while (pos < len && is_json_space(text[pos]))
        pos++;
    if (pos < len) {
        r = json_error_at(e, text, len, pos, "unexpected text after the JSON value");
        json_object_put(obj);
        return r;
    }
    *ret = obj;
    return 0;
}

int json_parse(const char *text, size_t len, size_t max_len, struct json_object **ret,
               struct err *e)
{
    struct json_object *obj = NULL;
    struct json_tokener *tok = json_tokener_new_ex(JSON_MAX_DEPTH);
    if (!tok)
        return err_set(e, -ENOMEM, "out of memory");
    json_tokener_set_flags(tok, JSON_TOKENER_FLAGS);
    int r = json_parse_with(tok, text, len, max_len, "document", &obj, e);
    /* the tokener's scratch buffer still holds the tail of the longest string it read (a token,
     * when this is the token store) and json-c frees it unwiped. Its fields are public in
     * json-c's header, though documented as private: this is the only place they are used */
    if (tok->pb && tok->pb->buf && tok->pb->size > 0)
        secure_wipe(tok->pb->buf, (size_t)tok->pb->size);
    json_tokener_free(tok);
    if (r < 0)
        return r;
    if (!obj) /* a bare null: json-c has no object for it */
        return json_error_at(e, text, len, len, "null is not a usable value here");
    *ret = obj;
    return 0;
}

int json_parse_dups(const char *text, size_t len, size_t max_len, struct json_object **ret,
                    struct json_dup **ret_dups, size_t *ret_ndups, struct err *e)
{
    struct json_object *obj = NULL;
    *ret_dups = NULL;
    *ret_ndups = 0;
    int r = json_parse(text, len, max_len, &obj, e);
    if (r < 0)
        return r;
    int n = json_find_duplicates(text, len, ret_dups);
    if (n < 0) {
        json_wipe_strings(obj); /* it may be the token store's, or hold literals */
        json_object_put(obj);
        return n == -ENOMEM ? err_set(e, n, "out of memory")
                            : err_set(e, n, "cannot check the keys: %s", strerror(-n));
    }
    *ret_ndups = (size_t)n;
    *ret = obj;
    return 0;
}

int json_read_file_dups(const char *path, size_t max_len, unsigned flags, struct json_object **ret,
                        struct json_dup **ret_dups, size_t *ret_ndups, struct err *e)
{
    struct json_object *obj = NULL;
    struct buf b;
    int r;

    if (flags & JSON_READ_SECRET)
        buf_init_secret(&b, max_len);
    else
        buf_init(&b, max_len);

    /* file_read's messages already name the file */
    r = file_read(path, (flags & JSON_READ_SECRET) ? FILE_SECRET : 0, &b, e);
    if (r < 0)
        goto out;
    if ((flags & JSON_READ_JSONC) && b.len > 0)
        r = json_blank_jsonc(b.data, b.len, e);
    if (r >= 0 && ret_dups)
        r = json_parse_dups(buf_str(&b), b.len, b.max, &obj, ret_dups, ret_ndups, e);
    else if (r >= 0)
        r = json_parse(buf_str(&b), b.len, b.max, &obj, e);
    if (r < 0) {
        char *disp = path_display(path);
        (void)err_prefix(e, "'%s'", disp ? disp : path);
        free(disp);
        goto out;
    }
    *ret = obj;
    obj = NULL;
    r = 0;
out:
    buf_release(&b);
    return r;
}

int json_read_file(const char *path, size_t max_len, unsigned flags, struct json_object **ret,
                   struct err *e)
{
    return json_read_file_dups(path, max_len, flags, ret, NULL, NULL, e);
}

/* ---- writing: json-c's pretty format, into a secret buffer ----
 *
 * json-c serialises into a print buffer of its own that grows by realloc(), and each move
 * leaves a copy of the text so far in freed memory: the token store's tokens, the literals of
 * secrets.json. So the containers and strings are written here, byte for byte as json-c writes
 * them with JSON_WRITE_FLAGS (test_json_write checks it against json-c), into a buffer that
 * wipes; numbers, booleans and null, which hold no secret, are json-c's own text. */

#define JSON_WRITE_FLAGS                                                                           \
    (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

static int write_indent(struct buf *out, int level)
{
    int r = 0;
    for (int i = 0; r >= 0 && i < level; i++)
        r = buf_append(out, "  ", 2);
    return r;
}

/* json-c's escaping (json_escape_str) under JSON_C_TO_STRING_NOSLASHESCAPE: quote, backslash and
 * the control characters; DEL and bytes >= 0x80 as they are. */
static int write_escaped(struct buf *out, const char *s, size_t len)
{
    return jsonw_string_ex(out, s, len, 0);
}

static int write_value(struct buf *out, struct json_object *v, int level);

static int write_object(struct buf *out, struct json_object *v, int level)
{
    bool had = false;
    int r = buf_append_str(out, "{\n");
    json_object_object_foreach(v, key, val)
    {
        if (r >= 0 && had)
            r = buf_append_str(out, ",\n");
        had = true;
        if (r >= 0)
            r = write_indent(out, level + 1);
        if (r >= 0)
            r = write_escaped(out, key, strlen(key));
        if (r >= 0)
            r = buf_append_str(out, ": ");
        if (r >= 0)
            r = write_value(out, val, level + 1);
    }
    if (r >= 0 && had)
        r = buf_append_char(out, '\n');
    if (r >= 0)
        r = write_indent(out, level);
    if (r >= 0)
        r = buf_append_char(out, '}');
    return r;
}

static int write_array(struct buf *out, struct json_object *v, int level)
{
    size_t n = json_object_array_length(v);
    int r = buf_append_str(out, "[\n");
    for (size_t i = 0; r >= 0 && i < n; i++) {
        if (i > 0)
            r = buf_append_str(out, ",\n");
        if (r >= 0)
            r = write_indent(out, level + 1);
        if (r >= 0)
            r = write_value(out, json_object_array_get_idx(v, i), level + 1);
    }
    if (r >= 0 && n > 0)
        r = buf_append_char(out, '\n');
    if (r >= 0)
        r = write_indent(out, level);
    if (r >= 0)
        r = buf_append_char(out, ']');
    return r;
}

static int write_value(struct buf *out, struct json_object *v, int level)
{
    switch (v ? json_object_get_type(v) : json_type_null) {
    case json_type_null:
        return buf_append_str(out, "null");
    case json_type_object:
        return write_object(out, v, level);
    case json_type_array:
        return write_array(out, v, level);
    case json_type_string:
        return write_escaped(out, json_object_get_string(v), (size_t)json_object_get_string_len(v));
    default: {
        const char *s = json_object_to_json_string_ext(v, JSON_WRITE_FLAGS);
        return s ? buf_append_str(out, s) : -ENOMEM;
    }
    }
}

int json_write_file(const char *path, struct json_object *obj, mode_t mode, struct err *e)
{
    struct buf out;
    int r;

    if (!obj) {
        char *disp = path_display(path);
        r = err_set(e, -EINVAL, "cannot write '%s': no JSON value", disp ? disp : path);
        free(disp);
        return r;
    }
    buf_init_secret(&out, (size_t)1 << 30);
    /* pretty + spaced is what JSON.stringify(v, null, 2) writes, short of empty containers */
    r = write_value(&out, obj, 0);
    if (r >= 0)
        r = buf_append_char(&out, '\n');
    if (r == -E2BIG)
        r = err_set(e, r, "cannot write '%s': larger than 1 GiB", path);
    else if (r < 0)
        r = err_set(e, r, "out of memory");
    else
        r = file_write_atomic(path, out.data, out.len, mode, e);
    buf_release(&out);
    return r;
}

static struct json_object *get_typed(struct json_object *obj, const char *key, enum json_type t)
{
    struct json_object *v = NULL;
    if (!obj || !key || !json_object_is_type(obj, json_type_object))
        return NULL;
    if (!json_object_object_get_ex(obj, key, &v) || !v)
        return NULL;
    return json_object_is_type(v, t) ? v : NULL;
}

const char *json_get_string(struct json_object *obj, const char *key)
{
    struct json_object *v = get_typed(obj, key, json_type_string);
    return v ? json_object_get_string(v) : NULL;
}

struct json_object *json_get_object(struct json_object *obj, const char *key)
{
    return get_typed(obj, key, json_type_object);
}

struct json_object *json_get_array(struct json_object *obj, const char *key)
{
    return get_typed(obj, key, json_type_array);
}

bool json_get_bool(struct json_object *obj, const char *key, bool *ret)
{
    struct json_object *v = get_typed(obj, key, json_type_boolean);
    if (!v)
        return false;
    *ret = json_object_get_boolean(v);
    return true;
}

bool json_get_int64(struct json_object *obj, const char *key, int64_t *ret)
{
    struct json_object *v = get_typed(obj, key, json_type_int);
    if (!v)
        return false;
    int64_t x = json_object_get_int64(v);
    /* json-c clamps; above INT64_MAX it keeps the unsigned value, so that case is visible
     * (below INT64_MIN is not, and reads as INT64_MIN) */
    if (x == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
        return false;
    *ret = x;
    return true;
}

void json_wipe_strings(struct json_object *o)
{
    switch (json_object_get_type(o)) {
    case json_type_string:
        secure_wipe((char *)json_object_get_string(o), (size_t)json_object_get_string_len(o));
        break;
    case json_type_object: {
        json_object_object_foreach(o, key, val)
        {
            (void)key;
            json_wipe_strings(val);
        }
        break;
    }
    case json_type_array:
        for (size_t i = 0, n = json_object_array_length(o); i < n; i++)
            json_wipe_strings(json_object_array_get_idx(o, i));
        break;
    default:
        break;
    }
}

const char *json_type_desc(enum json_type t)
{
    switch (t) {
    case json_type_null:
        return "null";
    case json_type_boolean:
        return "a boolean";
    case json_type_double:
    case json_type_int:
        return "a number";
    case json_type_object:
        return "an object";
    case json_type_array:
        return "an array";
    case json_type_string:
        return "a string";
    }
    return "an unknown type";
}
