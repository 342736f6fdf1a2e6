/* json_dups.c - keys given twice in one object of a JSON text
 *
 * json-c keeps the last of two equal keys and says nothing. This walks the text once more, as a
 * tiny recursive-descent reader of valid JSON, and records each object's keys (decoded) in one
 * hash map under "<object number>:<key>", so the scan stays linear in the size of the text. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/hashmap.h"
#include "credkit/json.h"
#include "credkit/util.h"

struct scan {
    const char *s;
    size_t len, pos;
    unsigned line;
    size_t nobj; /* objects seen, numbering them */
    struct hashmap *seen;
    struct buf key; /* scratch: the "<object>:<key>" of the key at hand */
    char **path;    /* the keys leading to the value being read */
    size_t npath;
    struct json_dup *dups;
    size_t ndups;
    int err;
};

static void skip_ws(struct scan *sc)
{
    while (sc->pos < sc->len) {
        char c = sc->s[sc->pos];
        if (c == '\n')
            sc->line++;
        else if (c != ' ' && c != '\t' && c != '\r')
            return;
        sc->pos++;
    }
}

static int fail(struct scan *sc, int r)
{
    if (!sc->err)
        sc->err = r;
    return r;
}

static int read_hex4(struct scan *sc, uint32_t *ret)
{
    uint32_t v = 0;
    if (sc->len - sc->pos < 4)
        return fail(sc, -EBADMSG);
    for (int i = 0; i < 4; i++) {
        int h = hex_digit(sc->s[sc->pos++]);
        if (h < 0)
            return fail(sc, -EBADMSG);
        v = v << 4 | (uint32_t)h;
    }
    *ret = v;
    return 0;
}

static int put_utf8(struct buf *out, uint32_t c)
{
    char b[4];
    size_t n;
    if (c < 0x80) {
        b[0] = (char)c, n = 1;
    } else if (c < 0x800) {
        b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3f)), n = 2;
    } else if (c < 0x10000) {
        b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | (c >> 6 & 0x3f));
        b[2] = (char)(0x80 | (c & 0x3f)), n = 3;
    } else {
        b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | (c >> 12 & 0x3f));
        b[2] = (char)(0x80 | (c >> 6 & 0x3f)), b[3] = (char)(0x80 | (c & 0x3f)), n = 4;
    }
    return buf_append(out, b, n);
}

/* Reads the string at pos (at its opening quote), decoded into out when out is not NULL. A key
 * (out set) may be single-quoted: json-c's strict mode takes those. */
static int read_string(struct scan *sc, struct buf *out)
{
    char q = sc->pos < sc->len ? sc->s[sc->pos] : 0;
    if (q != '"' && (q != '\'' || !out))
        return fail(sc, -EBADMSG);
    sc->pos++;
    while (sc->pos < sc->len) {
        size_t start = sc->pos;
        while (sc->pos < sc->len && sc->s[sc->pos] != q && sc->s[sc->pos] != '\\' &&
               sc->s[sc->pos] != '\n')
            sc->pos++;
        if (out && sc->pos > start && buf_append(out, sc->s + start, sc->pos - start) < 0)
            return fail(sc, -ENOMEM);
        if (sc->pos >= sc->len)
            return fail(sc, -EBADMSG);
        if (sc->s[sc->pos] == '\n') { /* json-c takes control characters in strings */
            sc->line++;
            sc->pos++;
            if (out && buf_append(out, "\n", 1) < 0)
                return fail(sc, -ENOMEM);
            continue;
        }
        if (sc->s[sc->pos++] == q)
            return 0;
        if (sc->pos >= sc->len)
            return fail(sc, -EBADMSG);
        char e = sc->s[sc->pos++];
        uint32_t c = 0;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (simple && e) {
            c = (uint32_t) "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
        } else if (e == 'u') {
            if (read_hex4(sc, &c) < 0)
                return sc->err;
            if (c >= 0xd800 && c <= 0xdbff && sc->len - sc->pos >= 6 && sc->s[sc->pos] == '\\' &&
                sc->s[sc->pos + 1] == 'u') {
                uint32_t lo;
                size_t back = sc->pos;
                sc->pos += 2;
                if (read_hex4(sc, &lo) < 0)
                    return sc->err;
                if (lo >= 0xdc00 && lo <= 0xdfff)
                    c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                else
                    sc->pos = back;
            }
        } else {
            return fail(sc, -EBADMSG);
        }
        if (out && put_utf8(out, c) < 0)
            return fail(sc, -ENOMEM);
    }
    return fail(sc, -EBADMSG);
}

static int read_value(struct scan *sc, unsigned depth);

static int record_dup(struct scan *sc, const char *key, unsigned first)
{
    struct json_dup *d = realloc(sc->dups, (sc->ndups + 1) * sizeof(*d));
    if (!d)
        return fail(sc, -ENOMEM);
    sc->dups = d;
    d += sc->ndups;
    *d = (struct json_dup){.line = sc->line, .first = first, .npath = sc->npath};
    d->key = strdup(key);
    d->path = calloc(sc->npath ? sc->npath : 1, sizeof(char *));
    bool ok = d->key && d->path;
    for (size_t i = 0; ok && i < sc->npath; i++)
        ok = (d->path[i] = strdup(sc->path[i])) != NULL;
    sc->ndups++;
    return ok ? 0 : fail(sc, -ENOMEM);
}

/* Pushes a path segment (a copy of seg) for the value about to be read. */
static int push(struct scan *sc, const char *seg)
{
    char **p = realloc(sc->path, (sc->npath + 1) * sizeof(*p));
    if (!p)
        return fail(sc, -ENOMEM);
    sc->path = p;
    if (!(p[sc->npath] = strdup(seg)))
        return fail(sc, -ENOMEM);
    sc->npath++;
    return 0;
}

static void pop(struct scan *sc)
{
    free(sc->path[--sc->npath]);
}

/* After a member or an element: 1 at the container's end (close), 0 at a comma, or the error. */
static int next_or_end(struct scan *sc, char close)
{
    skip_ws(sc);
    if (sc->pos >= sc->len)
        return fail(sc, -EBADMSG);
    char c = sc->s[sc->pos++];
    if (c == close)
        return 1;
    return c == ',' ? 0 : fail(sc, -EBADMSG);
}

static int read_object(struct scan *sc, unsigned depth)
{
    size_t id = sc->nobj++;
    sc->pos++; /* '{' */
    skip_ws(sc);
    if (sc->pos < sc->len && sc->s[sc->pos] == '}') {
        sc->pos++;
        return 0;
    }
    for (;;) {
        skip_ws(sc);
        unsigned line = sc->line;
        buf_reset(&sc->key);
        if (buf_printf(&sc->key, "%zu:", id) < 0)
            return fail(sc, -ENOMEM);
        size_t prefix = sc->key.len;
        if (read_string(sc, &sc->key) < 0)
            return sc->err;
        void *first = hashmap_get(sc->seen, buf_str(&sc->key));
        if (first) {
            if (record_dup(sc, buf_str(&sc->key) + prefix, (unsigned)(uintptr_t)first) < 0)
                return sc->err;
        } else if (hashmap_put(sc->seen, buf_str(&sc->key), (void *)(uintptr_t)line) < 0) {
            return fail(sc, -ENOMEM);
        }
        if (push(sc, buf_str(&sc->key) + prefix) < 0)
            return sc->err;
        skip_ws(sc);
        if (sc->pos >= sc->len || sc->s[sc->pos] != ':')
            return fail(sc, -EBADMSG);
        sc->pos++;
        int r = read_value(sc, depth + 1);
        pop(sc);
        if (r < 0)
            return r;
        if ((r = next_or_end(sc, '}')) != 0)
            return r < 0 ? r : 0;
    }
}

static int read_array(struct scan *sc, unsigned depth)
{
    sc->pos++; /* '[' */
    skip_ws(sc);
    if (sc->pos < sc->len && sc->s[sc->pos] == ']') {
        sc->pos++;
        return 0;
    }
    for (size_t i = 0;; i++) {
        char idx[24];
        snprintf(idx, sizeof(idx), "%zu", i);
        if (push(sc, idx) < 0)
            return sc->err;
        int r = read_value(sc, depth + 1);
        pop(sc);
        if (r < 0)
            return r;
        if ((r = next_or_end(sc, ']')) != 0)
            return r < 0 ? r : 0;
    }
}

static int read_value(struct scan *sc, unsigned depth)
{
    if (depth > JSON_MAX_DEPTH)
        return fail(sc, -EBADMSG);
    skip_ws(sc);
    if (sc->pos >= sc->len)
        return fail(sc, -EBADMSG);
    char c = sc->s[sc->pos];
    if (c == '{')
        return read_object(sc, depth);
    if (c == '[')
        return read_array(sc, depth);
    if (c == '"')
        return read_string(sc, NULL);
    /* a number, true, false or null (or NaN, Infinity, -Infinity, which json-c takes): json_parse()
     * checked its form */
    size_t start = sc->pos;
    while (sc->pos < sc->len && strchr("+-.0123456789eEtruefalsnNaIiy", sc->s[sc->pos]) &&
           sc->s[sc->pos])
        sc->pos++;
    return sc->pos > start ? 0 : fail(sc, -EBADMSG);
}

int json_find_duplicates(const char *text, size_t len, struct json_dup **ret)
{
    struct scan sc = {.s = text, .len = len, .line = 1};
    *ret = NULL;
    if (!(sc.seen = hashmap_new()))
        return -ENOMEM;
    buf_init(&sc.key, 0);
    if (read_value(&sc, 0) == 0) {
        skip_ws(&sc);
        if (sc.pos != sc.len)
            fail(&sc, -EBADMSG);
    }
    while (sc.npath > 0)
        pop(&sc);
    free(sc.path);
    buf_release(&sc.key);
    hashmap_free(sc.seen);
    if (sc.err) {
        json_dups_free(sc.dups, sc.ndups);
        return sc.err;
    }
    *ret = sc.dups;
    return (int)sc.ndups;
}

void json_dups_free(struct json_dup *d, size_t n)
{
    if (!d)
        return;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < d[i].npath && d[i].path; k++)
            free(d[i].path[k]);
        free(d[i].path);
        free(d[i].key);
    }
    free(d);
}
