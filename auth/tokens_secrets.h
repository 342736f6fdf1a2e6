/* tokens_secrets.h - where the token store keeps its secrets: the backends.
 *
 * Two backends hold the secret members of the entries (token_json.h's table: the tokens, the
 * client secret, a DPoP key): "file", in each entry's 0600 file as always, and "keyring", in the
 * Secret Service (secrets/keychain.h), the rest of each entry staying in its file. The keyring
 * backend keeps ONE item per store, holding the secrets of every entry, so that N servers cost
 * at most one unlock and the item is read once per process (a cache checked against the
 * generation each entry file names: a file written by another process since names another).
 *
 * The store directory records its backend in "store.json" ({"version": 1, "secrets":
 * "keyring"}), so that every process, the bridge's helper runs included, agrees. No record is
 * the file backend. The setting (MCP_AUTH_STORE = auto | file | keyring, default auto) decides
 * only for a store that has no record and holds no secret in a file yet; auto chooses the
 * keyring when a Secret Service answers. A setting that forces the other backend than the one
 * a store holds is an error naming the command that moves it (never a silent move, never a
 * split store). Writers hold the store's lock ("store.lock", tokens_store_lock()) around a
 * decision, a record and a write of the item, after any entry lock (never before).
 *
 * A keyring store whose Secret Service is gone or locked fails with a message naming the fix:
 * nothing ever falls back to writing a secret into a file. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/file.h"
#include "credkit/macro.h"

enum tokens_backend {
    TOKENS_BACKEND_FILE = 0,
    TOKENS_BACKEND_KEYRING,
};

#define TOKENS_STORE_ENV "MCP_AUTH_STORE"

const char *tokens_backend_str(enum tokens_backend b);

/* The backend named s ("file", "keyring"); -EINVAL for another word. */
int tokens_backend_from_str(const char *s, enum tokens_backend *ret) _must_check_;

/* The store-wide lock of the store directory dir (created), waiting at most timeout_ms.
 * Caller releases with file_lock_release(). */
int tokens_store_lock(const char *dir, int64_t timeout_ms, struct file_lock **ret,
                      struct err *e) _must_check_;

/* Whether an entry file of the store in dir holds a secret. */
typedef int (*tokens_file_secrets_fn)(const char *dir, bool *ret, struct err *e);

/* The backend holding the secrets of the store in dir: its record, else file; checked against
 * the setting (-EINVAL with the fix when it forces the other one: for a store without a record,
 * a forced keyring when file_secrets finds secrets in the files; file_secrets NULL: not asked),
 * before anything is read, so that no token is obtained that could not be stored.
 * *ret_recorded says whether the store has a record (may be NULL). */
int tokens_backend_get(const char *dir, tokens_file_secrets_fn file_secrets,
                       enum tokens_backend *ret, bool *ret_recorded, struct err *e) _must_check_;

/* The store's record alone, whatever the setting says: file when there is none (*ret_found
 * false). */
int tokens_backend_recorded(const char *dir, enum tokens_backend *ret, bool *ret_found,
                            struct err *e) _must_check_;

/* The backend a write uses, deciding and recording it for a store without a record (asking
 * file_secrets only then). The caller holds the store lock. */
int tokens_backend_for_write(const char *dir, tokens_file_secrets_fn file_secrets,
                             enum tokens_backend *ret, struct err *e) _must_check_;

/* Records b as the backend of the store in dir (atomically). */
int tokens_backend_record(const char *dir, enum tokens_backend b, struct err *e) _must_check_;

/* Puts the secrets of the entry file name (its base name) into root, the JSON read from it,
 * for backend b (file: nothing to do). A keyring entry whose secrets the item lacks is -EBADMSG
 * with a message naming the file. */
int tokens_secrets_fill(const char *dir, enum tokens_backend b, const char *name,
                        struct json_object *root, struct err *e) _must_check_;

/* Before root is written as the entry file name: backend keyring takes the secrets out of root
 * into the item (read afresh, entries whose files are gone dropped, written back) and marks
 * root with the new generation; file leaves root as it is. The caller holds the store lock. */
int tokens_secrets_keep(const char *dir, enum tokens_backend b, const char *name,
                        struct json_object *root, struct err *e) _must_check_;

/* After the entry file name was removed: its secrets leave the item too (keyring). The caller
 * holds the store lock. */
int tokens_secrets_drop(const char *dir, enum tokens_backend b, const char *name,
                        struct err *e) _must_check_;

/* ---- moving a store (tokens_migrate() in tokens.h drives these) ---- */

/* The item's content for dir, read afresh (an empty one when there is no item). Caller frees
 * with tokens_vault_free(). */
struct tokens_vault;
int tokens_vault_read(const char *dir, struct tokens_vault **ret, struct err *e) _must_check_;
/* Takes the secrets out of root into v under name, marking root; -ENOMEM. */
int tokens_vault_take(struct tokens_vault *v, const char *name,
                      struct json_object *root) _must_check_;
/* Puts name's secrets from v into root (and removes the mark); -ENOENT when v has none. */
int tokens_vault_put(struct tokens_vault *v, const char *name,
                     struct json_object *root) _must_check_;
/* Writes v as the item of dir. */
int tokens_vault_write(struct tokens_vault *v, const char *dir, struct err *e) _must_check_;
/* Deletes the item of dir (-ENOENT: there was none). */
int tokens_vault_delete(const char *dir, struct err *e) _must_check_;
/* Wipes and frees. NULL-safe. */
void tokens_vault_free(struct tokens_vault *v);

/* Forgets (wipes) the item this process read. */
void tokens_secrets_forget(void);
