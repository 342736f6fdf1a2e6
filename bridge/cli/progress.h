/* progress.h - one line on the terminal while a command waits for longer than a second.
 *
 * Silence is the default: the line appears only when stderr is a terminal (not "dumb"), the
 * command is not -q, and the wait has lasted PROGRESS_DELAY_MS; it then says what is waited for
 * and for how long ("connecting to 'linear'... 3s"), updated each second, and is erased when
 * the wait ends or before anything else is said (progress_clear()), so that logs and results
 * are never mixed with it. Driven by the command's loop. */
#pragma once

#include <stdbool.h>

#include "credkit/args.h"
#include "credkit/macro.h"

#define PROGRESS_DELAY_MS 1000

struct loop;
struct progress;

/* Starts waiting for what (copied; "connecting to 'NAME'"). *ret is NULL, and 0 returned, when
 * nothing is to be shown (not a terminal, -q); -ENOMEM leaves it NULL too: a command goes on
 * without its progress line. Caller frees with progress_end(). */
int progress_start(struct loop *l, const struct args_globals *g, const char *what,
                   struct progress **ret);
/* What is waited for now (copied); the time counts on. NULL-safe; a failure to copy keeps the
 * old text. */
void progress_set(struct progress *p, const char *what);
/* Erases the line if it is shown (it comes back at the next second). NULL-safe. */
void progress_clear(struct progress *p);
/* Erases the line and frees. NULL-safe. */
void progress_end(struct progress *p);
