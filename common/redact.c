/* redact.c - replace every registered secret value by [REDACTED:NAME] */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/redact.h"
#include "credkit/secmem.h"

struct redact_entry {
    char *name;
    char *value;
    size_t len;
};

struct redact {
    struct redact_entry *v;
    size_t n, cap;
};

struct redact *redact_new(void)
{
    return calloc(1, sizeof(struct redact));
}

void redact_free(struct redact *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].name);
        secure_free_len(r->v[i].value, r->v[i].len);
    }
    free(r->v);
    free(r);
}

int redact_add(struct redact *r, const char *name, const char *value, size_t len)
{
    if (!r || !value || len < REDACT_MIN_LEN)
        return 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].len == len && memcmp(r->v[i].value, value, len) == 0)
            return 0;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        struct redact_entry *v = realloc(r->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        r->v = v;
        r->cap = cap;
    }
    char *n = strdup(name ? name : "secret");
    char *val = malloc(len + 1);
    if (!n || !val) {
        free(n);
        free(val);
        return -ENOMEM;
    }
    memcpy(val, value, len);
    val[len] = 0;
    r->v[r->n++] = (struct redact_entry){.name = n, .value = val, .len = len};
    return 0;
}

int redact_apply(const struct redact *r, const char *text, size_t len, struct buf *out)
{
    size_t i = 0, plain = 0;
    int ret;
    while (r && r->n && i < len) {
        const struct redact_entry *best = NULL;
        for (size_t k = 0; k < r->n; k++) {
            const struct redact_entry *e = &r->v[k];
            if (e->len <= len - i && (!best || e->len > best->len) &&
                memcmp(text + i, e->value, e->len) == 0)
                best = e;
        }
        if (!best) {
            i++;
            continue;
        }
        ret = buf_append(out, text + plain, i - plain);
        if (ret < 0)
            return ret;
        ret = buf_printf(out, "[REDACTED:%s]", best->name);
        if (ret < 0)
            return ret;
        i += best->len;
        plain = i;
    }
    return buf_append(out, text + plain, len - plain);
}
