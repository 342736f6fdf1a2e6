/* progress.c - a line on the terminal while a command waits (progress.h) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/io.h"

#include "cli/progress.h"
#include "core/loop.h"

struct progress {
    struct loop *loop;
    struct loop_timer *tick;
    int64_t started_ms;
    char *what;
    bool shown;
};

/* Writes s to stderr; a terminal that fails is not worth an error. */
static void say(const char *s, size_t n)
{
    (void)write_nosigpipe(STDERR_FILENO, s, n);
}

void progress_clear(struct progress *p)
{
    if (!p || !p->shown)
        return;
    say("\r\033[K", 4);
    p->shown = false;
}

static void on_tick(struct loop_timer *t, void *userdata)
{
    struct progress *p = userdata;
    char line[512];
    int64_t s = (loop_now(p->loop) - p->started_ms + 500) / 1000;
    int n = snprintf(line, sizeof(line), "\r\033[Kmcp-bridge: %s... %llds", p->what, (long long)s);
    if (n > 0)
        say(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
    p->shown = true;
    loop_timer_rearm(t, 1000);
}

int progress_start(struct loop *l, const struct args_globals *g, const char *what,
                   struct progress **ret)
{
    const char *term = getenv("TERM");
    *ret = NULL;
    if (g->quiet || !isatty(STDERR_FILENO) || (term && strcmp(term, "dumb") == 0))
        return 0;
    struct progress *p = calloc(1, sizeof(*p));
    if (!p || !(p->what = strdup(what))) {
        free(p);
        return -ENOMEM;
    }
    p->loop = l;
    p->started_ms = loop_now(l);
    int r = loop_timer_add(l, PROGRESS_DELAY_MS, on_tick, p, &p->tick);
    if (r < 0) {
        free(p->what);
        free(p);
        return r;
    }
    *ret = p;
    return 0;
}

void progress_set(struct progress *p, const char *what)
{
    char *w;
    if (!p || !(w = strdup(what)))
        return;
    free(p->what);
    p->what = w;
}

void progress_end(struct progress *p)
{
    if (!p)
        return;
    progress_clear(p);
    loop_timer_cancel(p->tick);
    free(p->what);
    free(p);
}
