/* hashmap.h - a map from strings to pointers.
 *
 * Open addressing with linear probing and backward-shift deletion (no tombstones), a power-of-two
 * table kept at most 3/4 full, and SipHash-1-3 keyed per map from getrandom(), so names and ids
 * chosen by a server or an agent cannot be made to collide. Lookups cost one hash and a short
 * probe; nothing is linear in the number of entries.
 *
 * The map copies each key and owns the copy, unless it is given with hashmap_put_borrowed() (a
 * key kept in the value's own record: no copy per entry on a path that adds one per request);
 * it never owns or frees the values. Iteration order
 * is unspecified (it differs between maps); callers that print in order sort or keep a list. The
 * map must not be changed while it is iterated, except through hashmap_remove() of the entry
 * just returned, which is not allowed either: collect first, remove after. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/macro.h"

struct hashmap;

/* A new empty map, or NULL on allocation failure. Free with hashmap_free(). */
struct hashmap *hashmap_new(void);

/* Frees the map and its key copies, not the values. NULL is fine. */
void hashmap_free(struct hashmap *m);

/* Adds key -> value. 0, -EEXIST when the key is there already (the map is unchanged: remove it
 * first to replace), -ENOMEM. value may not be NULL (-EINVAL): NULL is what get says for
 * "absent". */
int hashmap_put(struct hashmap *m, const char *key, void *value) _must_check_;

/* hashmap_put() without the copy: key is used as it is and must stay alive and unchanged until
 * the entry is removed (or the map freed), as when it lives in the record value points at. */
int hashmap_put_borrowed(struct hashmap *m, const char *key, void *value) _must_check_;

/* The value of key, or NULL. */
void *hashmap_get(const struct hashmap *m, const char *key);

/* Removes key and returns its value (for the caller to free), or NULL when absent. */
void *hashmap_remove(struct hashmap *m, const char *key);

size_t hashmap_size(const struct hashmap *m);

/* Iterates: start with *iter = 0; each call that returns true sets the entry's key (borrowed,
 * valid until the entry is removed) and value. */
bool hashmap_next(const struct hashmap *m, size_t *iter, const char **ret_key, void **ret_value);
