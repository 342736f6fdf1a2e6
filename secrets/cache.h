/* cache.h - command results kept until their TTL runs out.
 *
 * A command recipe's value is kept so that resolutions within its TTL report the same value
 * and the same expiry without running the command again, across processes. The cache lives in
 * $XDG_RUNTIME_DIR/credkit-secrets/ (memory-backed and private to the user on systemd systems,
 * gone at logout): values are never written to persistent disk. Without a usable runtime
 * directory (set, ours, mode 0700, on tmpfs or ramfs) there is no cache and every resolution
 * runs its command. Lock files (empty) stay until the runtime directory goes.
 *
 * Entries are keyed by recipe_fingerprint(), so changing a recipe (or its TTL) never serves an
 * old value; each entry is a 0600 file whose mtime is its expiry, so expired entries are swept
 * by a stat alone. A per-entry lock makes concurrent resolvers run the command once. */
#pragma once

#include <stdint.h>

#include "credkit/buf.h"
#include "credkit/err.h"
#include "credkit/file.h"
#include "credkit/macro.h"

struct cache;

/* Opens the cache, creating its directory. Sets *ret to NULL (and returns 0) when there is no
 * usable runtime directory: a NULL cache misses every lookup. Caller frees with cache_free(). */
int cache_open(struct cache **ret) _must_check_;
void cache_free(struct cache *c);

/* Copies a fresh entry's value into out (a secret buffer) and its expiry into *ret_expires_at.
 * -ENOENT on a miss or an expired entry. */
int cache_lookup(struct cache *c, const char *key, int64_t now, struct buf *out,
                 int64_t *ret_expires_at) _must_check_;

int cache_store(struct cache *c, const char *key, const char *value, size_t len,
                int64_t expires_at) _must_check_;

/* Removes the entry for key, if any. */
void cache_drop(struct cache *c, const char *key);

/* Locks the entry for key so that one process runs the command while the others wait for its
 * result. *ret is NULL for a NULL cache. Caller releases with file_lock_release(). */
int cache_lock(struct cache *c, const char *key, int64_t timeout_ms, struct file_lock **ret,
               struct err *e) _must_check_;
