/* stopcatch.h - SIGINT and SIGTERM, caught while a person is waited for.
 *
 * The sign-in waits minutes for a browser (callback.c); Ctrl-C must end that wait cleanly
 * (the terminal's echo restored, the listener stopped) rather than kill the process, and must
 * not be lost between a check and the wait. So the signals are blocked from
 * stop_catch_begin() to stop_catch_end(), except inside the waiter's ppoll(), which runs with
 * old_mask; a caught one is seen through stop_catch_caught(). One catch at a time. */
#pragma once

#include <signal.h>
#include <stdbool.h>

#include "credkit/macro.h"

#define STOP_CATCH_SIGNALS 2 /* SIGINT, SIGTERM */

struct stop_catch {
    sigset_t old_mask; /* the caller's: restored at the end, and in force during ppoll() */
    sigset_t caught;   /* the signals we handle */
    struct sigaction old_action[STOP_CATCH_SIGNALS];
    bool installed[STOP_CATCH_SIGNALS];
};

/* Blocks SIGINT and SIGTERM and installs a handler for each that the caller neither blocks nor
 * ignores. -errno. */
int stop_catch_begin(struct stop_catch *s) _must_check_;

/* Restores the caller's handlers and mask; true when a signal was caught (one still pending
 * is consumed, not delivered to the restored handler). */
bool stop_catch_end(struct stop_catch *s);

/* Whether a signal was caught since stop_catch_begin(). */
bool stop_catch_caught(void);
