/* token_json.h - the token store's entry format: a struct token_entry as the JSON of its file.
 *
 * The file I/O, the locks and the naming are the store's (tokens.h); here is only the
 * conversion, both ways, with the checks of a file read back: the format version, the type of
 * every member, a known registration method; unknown top-level keys are kept in `extra` and
 * written back. The trees hold secrets (the tokens, the client secret): whoever puts one wipes
 * it first with token_json_wipe_secrets(). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "tokens.h"

#define TOKENS_FORMAT_VERSION 1

/* The entry in root (borrowed), the JSON of the file dp (its display path, for messages).
 * -EBADMSG with a message naming the file and the member for anything not of the format,
 * -ENOMEM. Caller frees *ret with token_entry_free(). */
int token_entry_from_json(struct json_object *root, const char *dp, struct token_entry **ret,
                          struct err *e) _must_check_;

/* The file's JSON for t, with updated_at. -ENOMEM (without a message). Caller wipes with
 * token_json_wipe_secrets() and puts *ret. */
int token_entry_to_json(const struct token_entry *t, int64_t updated_at,
                        struct json_object **ret) _must_check_;

/* Wipes the secret strings of an entry's JSON in place, before it is put. NULL is fine. The
 * secret members are one table in token_json.c: the functions below and the keyring backend
 * (tokens_secrets.h) know no other list. */
void token_json_wipe_secrets(struct json_object *root);

/* Whether root holds any secret member. */
bool token_json_has_secrets(struct json_object *root);

/* Moves the secret members of root (an entry's JSON) into a new object of the same shape
 * ({"registration": {...}, "tokens": {...}}, sections without secrets absent); sections left
 * empty are removed from root. -ENOMEM leaves root with the members not yet moved. Caller wipes
 * (token_json_wipe_secrets) and puts *ret. */
int token_json_take_secrets(struct json_object *root, struct json_object **ret) _must_check_;

/* Replaces the secret members of root with copies of those in secrets (borrowed, of the shape
 * above; NULL: none): root's own are wiped and removed first. */
int token_json_put_secrets(struct json_object *root, struct json_object *secrets) _must_check_;

/* Wipes and removes the secret members of root. */
void token_json_drop_secrets(struct json_object *root);
