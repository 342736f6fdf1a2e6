/* stopcatch.c - SIGINT and SIGTERM caught around a wait, restored after it */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "credkit/util.h"

#include "stopcatch.h"

/* The one piece of global state in this module: a signal handler can reach nothing else. It is
 * written by on_stop_signal() only while a catch has it installed, and read through
 * stop_catch_caught(). */
static volatile sig_atomic_t stop_signal_caught;

static void on_stop_signal(int sig)
{
    stop_signal_caught = sig;
}

static const int stop_signals[STOP_CATCH_SIGNALS] = {SIGINT, SIGTERM};

/* Blocks SIGINT and SIGTERM and installs our handler for each. A signal the caller blocked
 * (it reads it its own way, e.g. signalfd) or ignores (nohup) is left alone: it stays blocked
 * or ignored during ppoll() too, since ppoll() runs with the caller's mask. */
int stop_catch_begin(struct stop_catch *s)
{
    sigset_t block;
    (void)sigemptyset(&block);
    for (size_t i = 0; i < ELEMENTSOF(stop_signals); i++)
        (void)sigaddset(&block, stop_signals[i]);
    int r = pthread_sigmask(SIG_BLOCK, &block, &s->old_mask);
    if (r != 0)
        return -r;

    stop_signal_caught = 0;
    (void)sigemptyset(&s->caught);
    for (size_t i = 0; i < ELEMENTSOF(stop_signals); i++) {
        int sig = stop_signals[i];
        s->installed[i] = false;
        if (sigismember(&s->old_mask, sig) == 1)
            continue;
        if (sigaction(sig, NULL, &s->old_action[i]) < 0)
            continue;
        if (!(s->old_action[i].sa_flags & SA_SIGINFO) && s->old_action[i].sa_handler == SIG_IGN)
            continue;
        struct sigaction sa = {.sa_handler = on_stop_signal};
        (void)sigfillset(&sa.sa_mask);
        if (sigaction(sig, &sa, NULL) < 0)
            continue;
        s->installed[i] = true;
        (void)sigaddset(&s->caught, sig);
    }
    return 0;
}

/* Restores the caller's handlers and mask. A signal that arrived after the last ppoll() is
 * still pending (blocked): it was meant for this wait, so it is consumed here and reported,
 * rather than delivered to the restored handler (the default one would kill the process). */
bool stop_catch_end(struct stop_catch *s)
{
    sigset_t pending;
    if (sigpending(&pending) == 0) {
        for (size_t i = 0; i < ELEMENTSOF(stop_signals); i++) {
            if (!s->installed[i] || sigismember(&pending, stop_signals[i]) != 1)
                continue;
            sigset_t one;
            (void)sigemptyset(&one);
            (void)sigaddset(&one, stop_signals[i]);
            struct timespec zero = {0, 0};
            if (sigtimedwait(&one, NULL, &zero) > 0)
                stop_signal_caught = stop_signals[i];
        }
    }
    for (size_t i = 0; i < ELEMENTSOF(stop_signals); i++)
        if (s->installed[i])
            (void)sigaction(stop_signals[i], &s->old_action[i], NULL);
    (void)pthread_sigmask(SIG_SETMASK, &s->old_mask, NULL);
    return stop_signal_caught != 0;
}

bool stop_catch_caught(void)
{
    return stop_signal_caught != 0;
}
