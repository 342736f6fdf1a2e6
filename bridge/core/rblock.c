/* rblock.c - framing.c's read buffers: counted references, big ones mapped, two spares */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/rblock.h"

/* Two: a big call's request is held by its call while its result is read (rblock.h). */
#define SPARES 2

/* The thread's: the bridge runs one loop on one thread, and its framings share the spares. */
static _Thread_local struct rblock *tl_delivering;
static _Thread_local struct rblock *tl_spare[SPARES];
static _Thread_local unsigned tl_users;
static _Thread_local size_t tl_live;

static size_t block_size(size_t cap)
{
    return offsetof(struct rblock, data) + cap;
}

/* cap rounded up to what the mapping holds anyway */
static size_t map_size(size_t cap)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (block_size(cap) + page - 1) / page * page;
}

struct rblock *rblock_new(size_t cap)
{
    struct rblock *b;
    bool mapped = cap > RBLOCK_MAP;
    if (mapped) {
        size_t size = map_size(cap);
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        b = p;
        cap = size - offsetof(struct rblock, data);
    } else {
        b = malloc(block_size(cap));
        if (!b)
            return NULL;
    }
    b->refs = 1;
    b->mapped = mapped;
    b->cap = cap;
    tl_live++;
    return b;
}

static void block_free(struct rblock *b)
{
    if (!b)
        return;
    tl_live--;
    if (b->mapped)
        (void)munmap(b, block_size(b->cap));
    else
        free(b);
}

int rblock_grow(struct rblock **pb, size_t cap, size_t used)
{
    struct rblock *b = *pb, *n;
    if (b->mapped) {
        size_t size = map_size(cap);
        void *p = mremap(b, block_size(b->cap), size, MREMAP_MAYMOVE);
        if (p == MAP_FAILED)
            return -ENOMEM;
        n = p;
        n->cap = size - offsetof(struct rblock, data);
    } else if (cap > RBLOCK_MAP) {
        n = rblock_new(cap);
        if (!n)
            return -ENOMEM;
        memcpy(n->data, b->data, used);
        block_free(b);
    } else {
        n = realloc(b, block_size(cap));
        if (!n)
            return -ENOMEM;
        n->cap = cap;
    }
    *pb = n;
    return 0;
}

void rblock_get(struct rblock *b)
{
    b->refs++;
}

void rblock_put(struct rblock *b, bool keep)
{
    if (!b || --b->refs > 0)
        return;
    if (keep && b->cap > RBLOCK_MAP) {
        /* an empty place, else the smaller spare if this one is bigger */
        int k = !tl_spare[0] ? 0 : !tl_spare[1] ? 1 : tl_spare[0]->cap < tl_spare[1]->cap ? 0 : 1;
        if (!tl_spare[k] || tl_spare[k]->cap < b->cap) {
            block_free(tl_spare[k]);
            tl_spare[k] = b;
            return;
        }
    }
    block_free(b);
}

struct rblock *rblock_spare_take(size_t cap)
{
    int k = -1;
    for (int i = 0; i < SPARES; i++)
        if (tl_spare[i] && tl_spare[i]->cap >= cap &&
            (k < 0 || tl_spare[i]->cap < tl_spare[k]->cap))
            k = i;
    if (k < 0)
        return NULL;
    struct rblock *b = tl_spare[k];
    tl_spare[k] = NULL;
    b->refs = 1;
    return b;
}

void rblock_spare_drop(void)
{
    if (!tl_spare[0] && !tl_spare[1])
        return; /* the usual case: called at every small line */
    for (int i = 0; i < SPARES; i++) {
        block_free(tl_spare[i]);
        tl_spare[i] = NULL;
    }
}

size_t rblock_live(void)
{
    return tl_live;
}

bool rblock_holds(const struct rblock *b, const char *p, size_t len)
{
    return b && p >= b->data && len <= b->cap && (size_t)(p - b->data) <= b->cap - len;
}

struct rblock *rblock_delivering(void)
{
    return tl_delivering;
}

struct rblock *rblock_set_delivering(struct rblock *b)
{
    struct rblock *outer = tl_delivering;
    tl_delivering = b;
    return outer;
}

void rblock_user_add(void)
{
    tl_users++;
}

void rblock_user_remove(void)
{
    if (--tl_users == 0)
        rblock_spare_drop();
}
