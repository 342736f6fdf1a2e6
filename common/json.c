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

int json_read_file(const char *path, size_t max_len, unsigned flags, struct json_object **ret,
                   struct err *e)
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

int json_write_file(const char *path, struct json_object *obj, mode_t mode, struct err *e)
{
    char *data = NULL;
    size_t slen = 0;
    int r;

    if (!obj) {
        char *disp = path_display(path);
        r = err_set(e, -EINVAL, "cannot write '%s': no JSON value", disp ? disp : path);
        free(disp);
        goto out;
    }
    /* pretty + spaced is what JSON.stringify(v, null, 2) writes, short of empty containers */
    const char *s = json_object_to_json_string_length(
        obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
        &slen);
    if (!s) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    data = malloc(slen + 2);
    if (!data) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    memcpy(data, s, slen);
    data[slen] = '\n';
    data[slen + 1] = 0;
    /* the text lives on in obj's print buffer until the next serialisation or the put; it may
     * hold secrets, and json-c rebuilds it from scratch on every call, so wipe it */
    secure_wipe((char *)s, slen);

    r = file_write_atomic(path, data, slen + 1, mode, e);
out:
    if (data)
        secure_free_len(data, slen + 2);
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
