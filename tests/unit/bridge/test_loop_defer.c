/* test_loop_defer.c - the loop's deferred calls (allocated and embedded) and deferred release */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/loop.h"
#include "tests.h"

static struct loop *new_loop(void)
{
    struct loop *l = NULL;
    int r = loop_new(&l);
    CHECK_INT(r, 0);
    if (r < 0)
        exit(2);
    return l;
}

/* ---- deferred calls ---- */

struct defer_ctx {
    struct loop *l;
    char order[16];
    size_t n;
    struct loop_timer *t;
};

static void defer_mark(struct defer_ctx *c, char ch)
{
    if (c->n + 1 < sizeof(c->order))
        c->order[c->n++] = ch;
}

static void d_late(void *userdata)
{
    defer_mark(userdata, 'D');
}

static void d_timer(struct loop_timer *t, void *userdata)
{
    defer_mark(userdata, 'T');
}

static void d_a(void *userdata)
{
    struct defer_ctx *c = userdata;
    defer_mark(c, 'A');
    /* queued while deferred calls run: waits for the next iteration, after its timers */
    CHECK_INT(loop_defer(c->l, d_late, c), 0);
    CHECK_INT(loop_timer_add(c->l, 0, d_timer, c, &c->t), 0);
}

static void d_b(void *userdata)
{
    defer_mark(userdata, 'B');
}

static void d_c(void *userdata)
{
    defer_mark(userdata, 'C');
}

static void d_from_timer(struct loop_timer *t, void *userdata)
{
    struct defer_ctx *c = userdata;
    defer_mark(c, 't');
    CHECK_INT(loop_defer(c->l, d_c, c), 0);
    defer_mark(c, 'u'); /* deferred: not run inside loop_defer */
    loop_timer_cancel(t);
}

static void test_defer(void)
{
    struct loop *l = new_loop();
    struct defer_ctx c = {.l = l};
    CHECK_INT(loop_defer(l, d_a, &c), 0);
    CHECK_INT(loop_defer(l, d_b, &c), 0);
    CHECK_INT(loop_defer(l, d_c, &c), 0);
    CHECK_INT(loop_run(l), 0);
    CHECK_STR(c.order, "ABCTD");
    loop_timer_cancel(c.t);

    memset(c.order, 0, sizeof(c.order));
    c.n = 0;
    struct loop_timer *t;
    CHECK_INT(loop_timer_add(l, 0, d_from_timer, &c, &t), 0);
    CHECK_INT(loop_run(l), 0);
    CHECK_STR(c.order, "tuC");

    /* loop_free runs what is still queued */
    memset(c.order, 0, sizeof(c.order));
    c.n = 0;
    CHECK_INT(loop_defer(l, d_b, &c), 0);
    loop_free(l);
    CHECK_STR(c.order, "B");
}

/* ---- embedded deferred calls ---- */

struct kick_ctx {
    struct loop *l;
    struct loop_deferred a, b;
    int ran_a, ran_b;
};

static void kick_a(void *userdata)
{
    struct kick_ctx *c = userdata;
    c->ran_a++;
    loop_defer_cancel(&c->b); /* b was queued after a, in the same round: it must not run */
}

static void kick_b(void *userdata)
{
    struct kick_ctx *c = userdata;
    c->ran_b++;
}

static void test_defer_embedded(void)
{
    struct loop *l = new_loop();
    struct kick_ctx c = {.l = l};
    loop_defer_queue(l, &c.a, kick_a, &c);
    loop_defer_queue(l, &c.a, kick_a, &c); /* queued once however often asked */
    loop_defer_queue(l, &c.b, kick_b, &c);
    CHECK(c.a.queued && c.b.queued);
    CHECK_INT(loop_run(l), 0);
    CHECK_INT(c.ran_a, 1);
    CHECK_INT(c.ran_b, 0);
    CHECK(!c.a.queued && !c.b.queued);

    /* cancelled before the loop runs: nothing to do, the loop has no work */
    loop_defer_queue(l, &c.b, kick_b, &c);
    loop_defer_cancel(&c.b);
    loop_defer_cancel(&c.b); /* twice is harmless */
    CHECK_INT(loop_run(l), 0);
    CHECK_INT(c.ran_b, 0);

    /* queued again after running: runs again */
    loop_defer_queue(l, &c.b, kick_b, &c);
    CHECK_INT(loop_run(l), 0);
    CHECK_INT(c.ran_b, 1);
    loop_free(l);
}

/* ---- deferred release ---- */

struct rel_obj {
    struct loop_release rel;
    struct loop *l;
    int *freed;            /* counts frees */
    int *seen_in_cb;       /* frees seen while the callback that released it still ran */
    struct rel_obj *chain; /* released from this one's release */
};

static void rel_free(struct loop_release *node)
{
    struct rel_obj *o = (struct rel_obj *)(void *)((char *)node - offsetof(struct rel_obj, rel));
    (*o->freed)++;
    if (o->chain)
        loop_release(o->l, &o->chain->rel, rel_free);
}

static void rel_from_timer(struct loop_timer *t, void *userdata)
{
    struct rel_obj *o = userdata;
    loop_release(o->l, &o->rel, rel_free);
    loop_release(o->l, &o->rel, rel_free); /* twice: queued once */
    *o->seen_in_cb = *o->freed;            /* still 0: not freed under our feet */
    loop_timer_cancel(t);
}

static void test_release(void)
{
    struct loop *l = new_loop();
    int freed = 0, seen = -1;
    struct rel_obj b = {.l = l, .freed = &freed, .seen_in_cb = &seen};
    struct rel_obj a = {.l = l, .freed = &freed, .seen_in_cb = &seen, .chain = &b};
    struct loop_timer *t;
    CHECK_INT(loop_timer_add(l, 0, rel_from_timer, &a, &t), 0);
    CHECK_INT(loop_run(l), 0);
    CHECK_INT(seen, 0);
    CHECK_INT(freed, 2); /* a, then b released from a's release, in the same iteration */
    CHECK(!a.rel.queued && !b.rel.queued);

    /* queued outside the loop: loop_free runs it */
    struct rel_obj c = {.l = l, .freed = &freed, .seen_in_cb = &seen};
    loop_release(l, &c.rel, rel_free);
    loop_free(l);
    CHECK_INT(freed, 3);
}

TESTS_MAIN(test_defer, test_defer_embedded, test_release)
