/* redact.c - replace every registered secret value by [REDACTED:NAME] */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/redact.h"
#include "credkit/secmem.h"
#include "credkit/url.h"

struct redact_entry {
    char *name;
    char *value;
    size_t len;
    size_t next; /* the next entry of the same bucket, + 1; 0: none */
};

/* Values are indexed by a prefix: an entry of length len sits in the class of the longest
 * prefix length that fits (4, 8, 16 or 32 bytes), keyed by the hash of that prefix. Matching
 * at a position of the text then looks at one bucket per class, not at every value, so that
 * redacting a message costs about its length whatever the number of values (a `secrets list`
 * of thousands of recipes registers thousands), and values that share a short prefix ("ghp_")
 * are still told apart by the longer classes. */
#define REDACT_CLASSES 4
static const size_t class_len[REDACT_CLASSES] = {REDACT_MIN_LEN, 8, 16, 32};

struct redact {
    struct redact_entry *v;
    size_t n, cap;
    size_t *heads; /* nbuckets per class: the first entry of the bucket, + 1; 0: empty */
    size_t nbuckets;
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
    free(r->heads);
    free(r);
}

static unsigned class_of(size_t len)
{
    unsigned c = 0;
    while (c + 1 < REDACT_CLASSES && class_len[c + 1] <= len)
        c++;
    return c;
}

/* FNV-1a of s[0..n) */
static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static size_t *bucket(const struct redact *r, unsigned c, const char *prefix)
{
    size_t b = (size_t)(hash_bytes(prefix, class_len[c]) & (r->nbuckets - 1));
    return &r->heads[c * r->nbuckets + b];
}

static void index_entry(struct redact *r, size_t i)
{
    struct redact_entry *e = &r->v[i];
    size_t *head = bucket(r, class_of(e->len), e->value);
    e->next = *head;
    *head = i + 1;
}

/* Keeps the buckets at most about one entry each on average. */
static int index_grow(struct redact *r)
{
    if (r->nbuckets >= 2 * (r->n + 1))
        return 0;
    size_t nb = r->nbuckets ? r->nbuckets : 16;
    while (nb < 2 * (r->n + 1))
        nb *= 2;
    size_t *heads = calloc(nb * REDACT_CLASSES, sizeof(*heads));
    if (!heads)
        return -ENOMEM;
    free(r->heads);
    r->heads = heads;
    r->nbuckets = nb;
    for (size_t i = 0; i < r->n; i++)
        index_entry(r, i);
    return 0;
}

int redact_add(struct redact *r, const char *name, const char *value, size_t len)
{
    if (!r || !value || len < REDACT_MIN_LEN)
        return 0;
    if (r->nbuckets) {
        for (size_t k = *bucket(r, class_of(len), value); k; k = r->v[k - 1].next)
            if (r->v[k - 1].len == len && memcmp(r->v[k - 1].value, value, len) == 0)
                return 0;
    }
    if (index_grow(r) < 0)
        return -ENOMEM;
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
    r->v[r->n] = (struct redact_entry){.name = n, .value = val, .len = len};
    index_entry(r, r->n++);
    return 0;
}

/* The longest registered value at text[i..len), or NULL. */
static const struct redact_entry *match_at(const struct redact *r, const char *text, size_t i,
                                           size_t len)
{
    const struct redact_entry *best = NULL;
    for (unsigned c = 0; c < REDACT_CLASSES && class_len[c] <= len - i; c++) {
        for (size_t k = *bucket(r, c, text + i); k; k = r->v[k - 1].next) {
            const struct redact_entry *e = &r->v[k - 1];
            if (e->len <= len - i && (!best || e->len > best->len) &&
                memcmp(text + i, e->value, e->len) == 0)
                best = e;
        }
    }
    return best;
}

int redact_apply(const struct redact *r, const char *text, size_t len, struct buf *out)
{
    size_t i = 0, plain = 0;
    int ret;
    while (r && r->n && i + REDACT_MIN_LEN <= len) {
        const struct redact_entry *best = match_at(r, text, i, len);
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

struct url_parts_add {
    struct redact *r;
    int error;
};

static void add_url_part(const char *part, size_t len, void *userdata)
{
    struct url_parts_add *a = userdata;
    if (a->error >= 0 && len >= REDACT_URL_MIN_LEN)
        a->error = redact_add(a->r, "url", part, len);
}

int redact_add_url(struct redact *r, const char *url)
{
    struct url_parts_add a = {r, 0};
    if (r && url)
        url_each_masked(url, add_url_part, &a);
    return a.error;
}
