/* loop_wait.h - waiting on a condition from a test, bounded: the loop runs until pred(ctx)
 * holds (checked every LOOP_WAIT_TICK_MS) or ms have passed. Shared by the bridge's unit tests
 * that drive a struct loop; include after tests.h and loop.h. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#define LOOP_WAIT_TICK_MS 2

typedef bool (*pred_fn)(void *ctx);

struct waiter {
    struct loop *l;
    pred_fn p;
    void *ctx;
};

static void waiter_tick(struct loop_timer *t, void *userdata)
{
    struct waiter *w = userdata;
    if (w->p(w->ctx))
        loop_quit(w->l, 0);
    else
        loop_timer_rearm(t, LOOP_WAIT_TICK_MS);
}

static void waiter_deadline(struct loop_timer *t, void *userdata)
{
    (void)t;
    loop_quit(userdata, -ETIMEDOUT);
}

/* Whether pred(ctx) holds within ms (true at once when it already does). */
static bool wait_for(struct loop *l, pred_fn p, void *ctx, int64_t ms)
{
    struct waiter w = {l, p, ctx};
    struct loop_timer *tick = NULL, *deadline = NULL;
    if (p(ctx))
        return true;
    CHECK_INT(loop_timer_add(l, LOOP_WAIT_TICK_MS, waiter_tick, &w, &tick), 0);
    CHECK_INT(loop_timer_add(l, ms, waiter_deadline, l, &deadline), 0);
    int r = loop_run(l);
    loop_timer_cancel(tick);
    loop_timer_cancel(deadline);
    return r == 0 && p(ctx);
}
