/* mcp_field.c - typed members of a configuration object. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/duration.h"
#include "credkit/json.h"
#include "credkit/mcp_field.h"
#include "credkit/strv.h"

#define MS_MAX (24LL * 3600 * 1000) /* one day */

#define bad(e, ...) err_set((e), -EINVAL, __VA_ARGS__)

static int oom(struct err *e)
{
    return err_set(e, -ENOMEM, "out of memory");
}

void mcp_disp_n(char out[MCP_DISP_BUF], const char *s, size_t n)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; p < (const unsigned char *)s + n && *p;
         p++) {
        if (o >= MCP_DISP_MAX && (*p & 0xc0) != 0x80) {
            memcpy(out + o, "...", 4);
            return;
        }
        if (*p < 0x20 || *p == 0x7f) {
            (void)snprintf(out + o, 5, "\\x%02x", *p);
            o += 4;
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = 0;
}

void mcp_disp(char out[MCP_DISP_BUF], const char *s)
{
    mcp_disp_n(out, s, strlen(s));
}

struct json_object *mcp_field_member(struct json_object *o, const char *key)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

const char *mcp_field_type(struct json_object *v)
{
    return json_type_desc(json_object_get_type(v));
}

static bool is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            return false;
    return true;
}

int mcp_field_string_value(struct json_object *v, const char *label, unsigned flags,
                           const char **ret, struct err *e)
{
    if (!json_object_is_type(v, json_type_string))
        return bad(e, "%s must be a string, not %s", label, mcp_field_type(v));
    const char *s = json_object_get_string(v);
    if (strlen(s) != (size_t)json_object_get_string_len(v))
        return bad(e, "%s must not contain a NUL character", label);
    if ((flags & MCP_FIELD_NONBLANK) && is_blank(s))
        return bad(e, "%s must not be blank", label);
    *ret = s;
    return 0;
}

int mcp_field_string(struct json_object *o, const char *key, const char *label, unsigned flags,
                     char **ret, struct err *e)
{
    struct json_object *v = mcp_field_member(o, key);
    const char *s = NULL;
    char lbl[128];
    if (!v)
        return 0;
    (void)snprintf(lbl, sizeof(lbl), "\"%s\"", label);
    int r = mcp_field_string_value(v, lbl, flags, &s, e);
    if (r < 0)
        return r;
    char *c = strdup(s);
    if (!c)
        return oom(e);
    free(*ret);
    *ret = c;
    return 0;
}

int mcp_field_bool(struct json_object *o, const char *key, const char *label, bool *ret,
                   struct err *e)
{
    struct json_object *v = mcp_field_member(o, key);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_boolean))
        return bad(e, "\"%s\" must be true or false, not %s", label, mcp_field_type(v));
    *ret = json_object_get_boolean(v);
    return 0;
}

/* A JSON number that is not an integer, as milliseconds. */
static int ms_from_double(double d, const char *key, int64_t *ret, struct err *e)
{
    if (!isfinite(d) || d <= 0)
        return bad(e, "\"%s\" must be a positive number of milliseconds, not %g", key, d);
    if (d > (double)MS_MAX)
        return bad(e, "\"%s\" must be at most %lld milliseconds (one day), not %g", key, MS_MAX, d);
    /* 0 < d <= MS_MAX: the conversion is defined (and no libm needed for floor) */
    int64_t x = (int64_t)d;
    if ((double)x != d)
        return bad(e, "\"%s\" must be a whole number of milliseconds, not %g", key, d);
    *ret = x;
    return 0;
}

int mcp_field_ms(struct json_object *o, const char *key, int64_t *ret, struct err *e)
{
    struct json_object *v = mcp_field_member(o, key);
    int64_t x;
    if (!v)
        return 0;
    if (json_object_is_type(v, json_type_double))
        return ms_from_double(json_object_get_double(v), key, ret, e);
    if (!json_object_is_type(v, json_type_int))
        return bad(e, "\"%s\" must be a positive number of milliseconds, not %s", key,
                   mcp_field_type(v));
    x = json_object_get_int64(v);
    if (x == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
        return bad(e, "\"%s\" must be at most %lld milliseconds (one day), not %llu", key, MS_MAX,
                   (unsigned long long)json_object_get_uint64(v));
    if (x <= 0)
        return bad(e, "\"%s\" must be a positive number of milliseconds, not %lld", key,
                   (long long)x);
    if (x > MS_MAX)
        return bad(e, "\"%s\" must be at most %lld milliseconds (one day), not %lld", key, MS_MAX,
                   (long long)x);
    *ret = x;
    return 0;
}

int mcp_field_strv(struct json_object *o, const char *key, char ***ret, struct err *e)
{
    struct json_object *v = mcp_field_member(o, key);
    struct strv sv = STRV_INIT;
    int r;

    if (v && !json_object_is_type(v, json_type_array)) {
        r = bad(e, "\"%s\" must be an array of strings, not %s", key, mcp_field_type(v));
        goto out;
    }
    size_t n = v ? json_object_array_length(v) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *it = json_object_array_get_idx(v, i);
        const char *s = NULL;
        char lbl[128];
        (void)snprintf(lbl, sizeof(lbl), "\"%s\"[%zu]", key, i);
        if (!it) {
            r = bad(e, "%s must be a string, not null", lbl);
            goto out;
        }
        r = mcp_field_string_value(it, lbl, 0, &s, e);
        if (r < 0)
            goto out;
        if (strv_push(&sv, s) < 0) {
            r = oom(e);
            goto out;
        }
    }
    char **out = strv_detach(&sv);
    if (!out) {
        r = oom(e);
        goto out;
    }
    strv_free(*ret);
    *ret = out;
    r = 0;
out:
    strv_release(&sv);
    return r;
}

int mcp_field_enum(struct json_object *o, const char *key, const char *label,
                   const char *const *words, const char *expect, int *ret, struct err *e)
{
    struct json_object *v = mcp_field_member(o, key);
    const char *s;
    char lbl[128], wd[MCP_DISP_BUF];
    if (!v)
        return 0;
    (void)snprintf(lbl, sizeof(lbl), "\"%s\"", label);
    int r = mcp_field_string_value(v, lbl, 0, &s, e);
    if (r < 0)
        return r;
    for (int i = 0; words[i]; i++)
        if (strcmp(s, words[i]) == 0) {
            *ret = i;
            return 0;
        }
    mcp_disp(wd, s);
    return bad(e, "%s must be %s, not '%s'", lbl, expect, wd);
}

#define MINUTES_MAX (366LL * 24 * 60) /* a year */

static int minutes_bad(const char *label, const char *what, struct err *e)
{
    return bad(e,
               "\"%s\" must be a number of minutes (0 = never) or a duration with its unit "
               "such as \"90s\", not %s",
               label, what);
}

/* m minutes (0 <= m <= MINUTES_MAX) in milliseconds; a positive m never rounds to 0 */
static int64_t minutes_ms(double m)
{
    int64_t ms = (int64_t)(m * 60000.0 + 0.5);
    return m > 0 && ms == 0 ? 1 : ms;
}

static int minutes_string(struct json_object *v, const char *label, int64_t *ret_ms, struct err *e)
{
    char lbl[128], wd[MCP_DISP_BUF];
    const char *s = NULL;
    int64_t ms = 0;
    (void)snprintf(lbl, sizeof(lbl), "\"%s\"", label);
    int r = mcp_field_string_value(v, lbl, MCP_FIELD_NONBLANK, &s, e);
    if (r < 0)
        return r;
    size_t n = strlen(s);
    char last = s[n - 1];
    mcp_disp(wd, s);
    /* a bare number in a string would be seconds to duration_parse(), minutes to the
     * adapter: neither is assumed */
    if (!((last >= 'a' && last <= 'z') || (last >= 'A' && last <= 'Z'))) {
        char what[MCP_DISP_BUF + 64];
        (void)snprintf(what, sizeof(what), "'%s' (a number is written without quotes)", wd);
        return minutes_bad(label, what, e);
    }
    if (duration_parse(s, &ms) < 0) {
        char what[MCP_DISP_BUF + 8];
        (void)snprintf(what, sizeof(what), "'%s'", wd);
        return minutes_bad(label, what, e);
    }
    if (ms > MINUTES_MAX * 60000)
        return bad(e, "\"%s\" must be at most a year, not '%s'", label, wd);
    *ret_ms = ms;
    return 0;
}

int mcp_field_minutes(struct json_object *o, const char *key, const char *label, int64_t *ret_ms,
                      bool *ret_large, struct err *e)
{
    struct json_object *v = mcp_field_member(o, key);
    char what[64];
    double m;

    if (!v)
        return 0;
    if (json_object_is_type(v, json_type_string))
        return minutes_string(v, label, ret_ms, e);
    if (json_object_is_type(v, json_type_int)) {
        int64_t x = json_object_get_int64(v);
        if (x < 0) {
            (void)snprintf(what, sizeof(what), "%lld", (long long)x);
            return minutes_bad(label, what, e);
        }
        if (x > MINUTES_MAX) /* INT64_MAX also stands for every larger integer */
            return bad(e, "\"%s\" must be at most %lld minutes (a year)", label, MINUTES_MAX);
        m = (double)x;
    } else if (json_object_is_type(v, json_type_double)) {
        m = json_object_get_double(v);
        if (!isfinite(m) || m < 0) {
            (void)snprintf(what, sizeof(what), "%g", m);
            return minutes_bad(label, what, e);
        }
        if (m > (double)MINUTES_MAX)
            return bad(e, "\"%s\" must be at most %lld minutes (a year), not %g", label,
                       MINUTES_MAX, m);
    } else {
        return minutes_bad(label, mcp_field_type(v), e);
    }
    *ret_ms = minutes_ms(m);
    if (ret_large)
        *ret_large = m >= 1000;
    return 0;
}

int mcp_field_warn(struct err *e, const char *fmt, ...)
{
    if (!e)
        return 1;
    if (e->code < 0) /* an error's message is not a warning */
        e->msg[0] = 0;
    e->code = 0;
    char line[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    size_t have = strlen(e->msg), n = strlen(line);
    size_t need = n + (have ? 1 : 0);
    if (have + need < sizeof(e->msg)) {
        if (have)
            e->msg[have++] = '\n';
        memcpy(e->msg + have, line, n + 1);
    }
    return 1;
}
