/* watch.h - changes to a set of files, seen on the loop through inotify.
 *
 * Each file is watched through its directory, not itself: atomic writers replace a file by
 * renaming another onto its name, which a watch on the old inode would never see. Writes,
 * renames onto or away from the name, creation and removal all count; a burst of them (an
 * editor's save is several events) is reported once, settle_ms after the last. A file whose
 * directory does not exist yet is watched through the nearest ancestor that does, for the
 * name of the next directory down: its creation is a change (the caller sets the watch again,
 * which then goes one level deeper). An overflowing event queue counts as a change. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "credkit/macro.h"

struct loop;
struct watch;

typedef void (*watch_fn)(void *userdata);

/* A watch with no file yet. Caller frees with watch_free(). -ENOMEM, or inotify's -errno
 * (-EMFILE when the user's inotify instances are used up). */
int watch_new(struct loop *l, int64_t settle_ms, watch_fn fn, void *userdata,
              struct watch **ret) _must_check_;

/* Replaces the set of files watched by paths[0..n) (absolute; duplicates are fine). A change
 * still settling is kept. A directory that cannot be watched (permissions, the per-user limit
 * of watches) is skipped: its files are then not watched, and the number skipped is returned
 * (0: all watched). -ENOMEM. */
int watch_set(struct watch *w, const char *const *paths, size_t n) _must_check_;

/* NULL-safe. Not from inside its own callback. */
void watch_free(struct watch *w);
