/* hashmap.c - open-addressing string map with SipHash-1-3. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "credkit/hashmap.h"

#define MIN_CAP 16

struct slot {
    const char *key; /* NULL: empty */
    void *value;
    uint64_t hash;
    bool owned; /* key is the map's copy (hashmap_put), else the caller's (hashmap_put_borrowed) */
};

struct hashmap {
    struct slot *slots;
    size_t cap; /* a power of two */
    size_t n;
    uint64_t k0, k1; /* the SipHash key */
};

/* ---- SipHash-1-3 (Aumasson and Bernstein), the variant Rust's and Python's maps use ---- */

static inline uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = rotl(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = rotl(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = rotl(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = rotl(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = rotl(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = rotl(v2, 32);                                                                         \
    } while (0)

static uint64_t siphash13(uint64_t k0, uint64_t k1, const unsigned char *p, size_t len)
{
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    uint64_t b = (uint64_t)len << 56;
    size_t whole = len & ~(size_t)7;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = 0;
        for (int j = 0; j < 8; j++)
            m |= (uint64_t)p[i + (size_t)j] << (8 * j);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    for (size_t j = 0; j < (len & 7); j++)
        b |= (uint64_t)p[whole + j] << (8 * j);
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t hash_key(const struct hashmap *m, const char *key)
{
    return siphash13(m->k0, m->k1, (const unsigned char *)key, strlen(key));
}

/* ---- the table ---- */

struct hashmap *hashmap_new(void)
{
    struct hashmap *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    uint64_t k[2] = {0, 0};
    /* a map that cannot be keyed randomly still works; only its collision resistance is lost */
    if (getrandom(k, sizeof(k), GRND_NONBLOCK) != (ssize_t)sizeof(k)) {
        k[0] = (uint64_t)(uintptr_t)m;
        k[1] = (uint64_t)(uintptr_t)&k;
    }
    m->k0 = k[0];
    m->k1 = k[1];
    return m;
}

void hashmap_free(struct hashmap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].owned)
            free((char *)m->slots[i].key);
    free(m->slots);
    free(m);
}

/* The slot holding key, or the empty slot where it would go. The table is never full. */
static struct slot *find(const struct hashmap *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct slot *s = &m->slots[i];
        if (!s->key || (s->hash == h && strcmp(s->key, key) == 0))
            return s;
    }
}

static int grow(struct hashmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : MIN_CAP;
    if (cap > SIZE_MAX / sizeof(struct slot))
        return -ENOMEM;
    struct slot *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    struct hashmap next = *m;
    next.slots = slots;
    next.cap = cap;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            *find(&next, m->slots[i].key, m->slots[i].hash) = m->slots[i];
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

static int put(struct hashmap *m, const char *key, void *value, bool copy)
{
    if (!value)
        return -EINVAL;
    uint64_t h = hash_key(m, key);
    if (m->cap && find(m, key, h)->key)
        return -EEXIST;
    if ((m->n + 1) * 4 > m->cap * 3) {
        int r = grow(m);
        if (r < 0)
            return r;
    }
    const char *k = copy ? strdup(key) : key;
    if (!k)
        return -ENOMEM;
    *find(m, key, h) = (struct slot){.key = k, .value = value, .hash = h, .owned = copy};
    m->n++;
    return 0;
}

int hashmap_put(struct hashmap *m, const char *key, void *value)
{
    return put(m, key, value, true);
}

int hashmap_put_borrowed(struct hashmap *m, const char *key, void *value)
{
    return put(m, key, value, false);
}

void *hashmap_get(const struct hashmap *m, const char *key)
{
    if (!m->n)
        return NULL;
    struct slot *s = find(m, key, hash_key(m, key));
    return s->key ? s->value : NULL;
}

void *hashmap_remove(struct hashmap *m, const char *key)
{
    if (!m->n)
        return NULL;
    struct slot *s = find(m, key, hash_key(m, key));
    if (!s->key)
        return NULL;
    void *value = s->value;
    if (s->owned)
        free((char *)s->key);
    m->n--;
    /* backward-shift: move later members of the probe run into the hole when their home slot
     * is at or before it, so lookups never meet a gap inside a run */
    size_t mask = m->cap - 1, hole = (size_t)(s - m->slots);
    for (size_t i = (hole + 1) & mask; m->slots[i].key; i = (i + 1) & mask) {
        size_t home = (size_t)m->slots[i].hash & mask;
        /* the distance from home to i is >= the distance from the hole to i: it may move */
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->slots[hole] = m->slots[i];
            hole = i;
        }
    }
    m->slots[hole] = (struct slot){0};
    return value;
}

size_t hashmap_size(const struct hashmap *m)
{
    return m->n;
}

bool hashmap_next(const struct hashmap *m, size_t *iter, const char **ret_key, void **ret_value)
{
    for (size_t i = *iter; i < m->cap; i++) {
        if (m->slots[i].key) {
            *iter = i + 1;
            if (ret_key)
                *ret_key = m->slots[i].key;
            if (ret_value)
                *ret_value = m->slots[i].value;
            return true;
        }
    }
    *iter = m->cap;
    return false;
}
