/* store.h - the token store (tokens.h) as the sign-in flow uses it.
 *
 * The store's failures are local problems (a corrupt or unreadable file, a lock held too long),
 * not the authorization server's: here they get codes of their own before travelling up, so
 * that the exit status tells them apart (docs/exit-codes.md): -EUCLEAN for the store, -ENOLCK
 * for its lock; -ENOENT and -ENOMEM pass as they are. Also here: the small setters the flow
 * uses on an entry, and the recording of a token response in it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/file.h"
#include "credkit/macro.h"

#include "oauth.h"
#include "tokens.h"

/* tokens_load(), tokens_save(), tokens_lock() and tokens_delete() with the flow's codes. The
 * ownership is theirs: the caller frees *ret (token_entry_free(), file_lock_release()). */
int store_load(const char *server_url, const char *issuer, const char *label,
               struct token_entry **ret, struct err *e) _must_check_;
int store_save(struct token_entry *t, struct err *e) _must_check_;
int store_lock(const char *server_url, const char *issuer, const char *label, int64_t timeout_ms,
               struct file_lock **ret, struct err *e) _must_check_;
int store_delete(const char *server_url, const char *issuer, const char *label,
                 struct err *e) _must_check_;

/* The entry for (server_url, issuer, label), or a new empty one when there is none. Caller
 * frees. */
int store_load_or_new(const char *server_url, const char *issuer, const char *label,
                      struct token_entry **ret, struct err *e) _must_check_;

/* Replaces *dst with a copy of src (NULL: none); the old value is freed, wiped by
 * store_set_secret(). -ENOMEM leaves *dst as it was. */
int store_set_str(char **dst, const char *src) _must_check_;
int store_set_secret(char **dst, const char *src) _must_check_;

/* Records a token response in t, issued now. A refresh (new_grant false) that brings no new
 * refresh token keeps the old one (it was not rotated); a new grant without one drops it: the
 * old one belongs to an older grant, which another process may have rotated away meanwhile.
 * The scope is the granted one, else requested_scope. tr is borrowed. */
int store_tokens(struct token_entry *t, const struct token_response *tr,
                 const char *requested_scope, bool new_grant) _must_check_;
