/* store.h - secrets.json, the file of recipes.
 *
 * The file is one JSON object mapping secret names to recipes; keys starting with "$" (such as
 * "$schema") are kept but ignored. It holds recipes, not values (except literals a user chose),
 * yet is treated as secret-bearing all the same: 0600 in a 0700 directory, refused when others
 * can read it, replaced atomically, and modified only under its lock. A malformed file is
 * reported with line and column and never overwritten. Entries that do not parse are reported
 * one by one; the others still work. Unknown keys and entries are written back untouched. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/macro.h"

#include "recipe.h"

#define STORE_MAX_SIZE        (1024 * 1024)
#define STORE_LOCK_TIMEOUT_MS (10 * 1000)

struct store;

/* Loads path. A missing file is an empty store. Keys given twice in one object are found
 * (store_set_duplicates()). Caller frees with store_free(). */
int store_load(const char *path, struct store **ret, struct err *e) _must_check_;

/* A store on a document already read from path (by a jsonfile holding its lock): the store
 * takes a reference on root and changes it in place, for the reader to write. -EBADMSG when
 * root is not an object. Caller frees with store_free(). */
int store_from_json(const char *path, struct json_object *root, struct store **ret,
                    struct err *e) _must_check_;

/* The keys given twice in the store's file (json_find_duplicates() of its text; the store keeps
 * copies). An entry whose name is given twice, or with a key given twice in its recipe, is an
 * invalid entry (store_get() says which lines), never one of the versions silently; the other
 * entries are unaffected. 0 or -ENOMEM. */
int store_set_duplicates(struct store *s, const struct json_dup *d, size_t n) _must_check_;

/* -ENOTUNIQ with a message naming the file, the first key given twice and its lines, and what
 * to do, when there are duplicates; 0 when there are none. A store with any must not be
 * written: the rewrite would keep only one of each. */
int store_duplicates_error(const struct store *s, struct err *e) _must_check_;

/* Frees the store, wiping every string of its tree first (literal recipes hold their values
 * there): a root given to store_from_json() is wiped as well, so free the store only once that
 * document is written. NULL-safe. */
void store_free(struct store *s);

const char *store_path(const struct store *s);

/* Names of the entries in file order (keys starting with "$" excluded). Borrowed; valid until
 * the store changes. */
size_t store_count(const struct store *s);
const char *store_name(const struct store *s, size_t i);

/* The parsed recipe for name: 0 and *ret (borrowed, valid until the store changes), -ENOENT
 * when there is no entry, or -EINVAL with the entry's error message. Constant time (an index):
 * a loop over every entry stays linear. */
int store_get(struct store *s, const char *name, const struct recipe **ret,
              struct err *e) _must_check_;

/* Sets or replaces the entry (serialised with recipe_to_json). */
int store_set(struct store *s, const struct recipe *r) _must_check_;

/* Removes the entry; -ENOENT when absent. */
int store_remove(struct store *s, const char *name) _must_check_;

/* Writes the file atomically, 0600, creating its directory 0700. */
int store_save(struct store *s, struct err *e) _must_check_;

/* The lock file of the store at path: "<path>.lock". Caller frees; NULL on ENOMEM. */
char *store_lock_path(const char *path);

/* Takes the store's lock (store_lock_path()) for a read-modify-write, creating the directory
 * 0700. Caller releases with file_lock_release(). */
int store_lock(const char *path, struct file_lock **ret, struct err *e) _must_check_;
