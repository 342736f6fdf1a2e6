/* wipewatch.h - seeing whether memory holding a secret was wiped before it went back to the
 * allocator.
 *
 * A wipe cannot be observed after free() without undefined behaviour, so the test program
 * defines free() itself: every free() in the program (the libraries it links included) comes
 * here first, looks at the block while it is still allocated, and then forwards to the real
 * free() found with dlsym(RTLD_NEXT) (realloc() likewise) - glibc's, or under ASan the sanitizer's, so the
 * sanitizers keep working. Two ways to look:
 *
 *   wipewatch_add(p, n)   watches one block: wipewatch_wiped(i) says whether it was freed with
 *                         its first n bytes all zero (wipewatch_freed(i): freed at all);
 *   wipewatch_scan(s)     from now on, counts the blocks freed while they still hold the
 *                         string s anywhere (wipewatch_found()), and those realloc() moved
 *                         away from while they held it; wipewatch_scan(NULL) stops.
 *
 * Include it in exactly one file of a test program, before the code under test runs. Every test
 * of a wipe first checks that the watch sees an unwiped block (a plain free()), so a watch that
 * sees nothing cannot pass for a wipe. */
#pragma once

#include <dlfcn.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define WIPEWATCH_MAX 32

/* free() runs before the sanitizer runtime is initialised (its own start-up calls dlsym(),
 * which frees): nothing on that path may be instrumented */
#define WIPEWATCH_RAW_ __attribute__((no_sanitize("address", "undefined")))

struct wipewatch_slot {
    const void *p;
    size_t len;
    bool freed;
    bool zero;
};

static struct wipewatch_slot wipewatch_slots[WIPEWATCH_MAX];
static size_t wipewatch_n;
static const char *wipewatch_needle;
static size_t wipewatch_hits;
static void (*wipewatch_real_free)(void *);
static bool wipewatch_resolving;

WIPEWATCH_RAW_ static bool wipewatch_all_zero(const void *p, size_t len)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < len; i++)
        if (c[i])
            return false;
    return true;
}

WIPEWATCH_RAW_ static void wipewatch_look(void *p)
{
    for (size_t i = 0; i < wipewatch_n; i++)
        if (wipewatch_slots[i].p == p && !wipewatch_slots[i].freed) {
            wipewatch_slots[i].freed = true;
            wipewatch_slots[i].zero = wipewatch_all_zero(p, wipewatch_slots[i].len);
        }
    if (wipewatch_needle) {
        /* the size the allocator handed out: under ASan exactly the size asked for */
        size_t n = malloc_usable_size(p);
        if (memmem(p, n, wipewatch_needle, strlen(wipewatch_needle)))
            wipewatch_hits++;
    }
}

WIPEWATCH_RAW_ void free(void *p)
{
    if (!wipewatch_real_free) {
        /* dlsym may allocate and free: those frees are dropped (a few bytes, once) */
        if (wipewatch_resolving)
            return;
        wipewatch_resolving = true;
        void *sym = dlsym(RTLD_NEXT, "free");
        memcpy(&wipewatch_real_free, &sym, sizeof(sym));
        wipewatch_resolving = false;
        if (!wipewatch_real_free)
            abort();
    }
    if (p)
        wipewatch_look(p);
    wipewatch_real_free(p);
}

/* realloc() that moves a block frees the old one inside the allocator, past free(): the old
 * block is looked at first, and counts when it held the string under scan and was moved. */
static void *(*wipewatch_real_realloc)(void *, size_t);

WIPEWATCH_RAW_ void *realloc(void *p, size_t n)
{
    if (!wipewatch_real_realloc) {
        void *sym = dlsym(RTLD_NEXT, "realloc");
        memcpy(&wipewatch_real_realloc, &sym, sizeof(sym));
        if (!wipewatch_real_realloc)
            abort();
    }
    bool held = false;
    if (p && wipewatch_needle)
        held = memmem(p, malloc_usable_size(p), wipewatch_needle, strlen(wipewatch_needle));
    void *q = wipewatch_real_realloc(p, n);
    if (q && q != p && held)
        wipewatch_hits++;
    return q;
}

/* Forgets every watch. */
static void wipewatch_reset(void)
{
    wipewatch_n = 0;
    wipewatch_needle = NULL;
    wipewatch_hits = 0;
}

/* Watches the block at p, whose first len bytes must be zero when it is freed. Returns the
 * index for wipewatch_freed()/wipewatch_wiped(). */
static size_t wipewatch_add(const void *p, size_t len)
{
    if (wipewatch_n == WIPEWATCH_MAX)
        abort();
    wipewatch_slots[wipewatch_n] = (struct wipewatch_slot){.p = p, .len = len};
    return wipewatch_n++;
}

static bool wipewatch_freed(size_t i)
{
    return wipewatch_slots[i].freed;
}

/* Freed, and all zero when it was. */
static bool wipewatch_wiped(size_t i)
{
    return wipewatch_slots[i].freed && wipewatch_slots[i].zero;
}

/* Starts (s) or stops (NULL) counting the blocks freed while they hold s; resets the count
 * when starting. s must outlive the scan and must not itself be freed during it. */
static void wipewatch_scan(const char *s)
{
    if (s)
        wipewatch_hits = 0;
    wipewatch_needle = s;
}

static size_t wipewatch_found(void)
{
    return wipewatch_hits;
}

/* free() the compiler cannot see: the tests' own unwiped frees, which an optimiser would
 * otherwise drop together with the allocation before them */
static void (*volatile wipewatch_plain_free)(void *) = free;
