/* tokens.h - the token store under ~/.pi/agent/oauth/.
 *
 * One entry per (canonical server URL, issuer, account name): the client registration, the tokens with an
 * absolute expiry, and the discovery results with their fetch time. Entries are never keyed by
 * a display name, so renaming a server or pointing a name at another URL can never send a token
 * to the wrong server. Each entry is a JSON file named after a hash of its key, 0600 in a 0700
 * directory, replaced atomically, and changed only under its own lock ("<file>.lock"), which
 * works across processes: a refresh takes the lock, re-reads the entry, and only then asks the
 * authorization server, so concurrent callers cause exactly one refresh.
 *
 * The account name (the "label", `mcp-auth --account NAME`, an entry's "oauth.account") lets
 * one person sign in to one server several times, as work and personal accounts; a label NULL is
 * the default account, whose files are named as before accounts existed. Every function taking
 * a label matches it exactly: NULL finds the default account's entries only.
 *
 * The file format (version 1) is documented in docs/auth.md and at the top of tokens.c. Unknown
 * top-level keys are preserved (in `extra`). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/file.h"
#include "credkit/macro.h"

#include "tokens_secrets.h"

#define TOKENS_LOCK_TIMEOUT_MS (30 * 1000)
#define TOKENS_LABEL_MAX       64 /* bytes in an account name */

enum registration_method {
    REGISTRATION_NONE = 0,
    REGISTRATION_PRE,      /* "pre-registered": oauth.clientId in the config */
    REGISTRATION_METADATA, /* "metadata-document": client ID metadata document URL */
    REGISTRATION_DYNAMIC,  /* "dynamic": RFC 7591 */
};

struct token_entry {
    char *server_url; /* canonical */
    char *issuer;
    char *label; /* the account name; NULL: the default account */
    /* registration */
    enum registration_method registration;
    char *client_id;
    char *client_secret; /* secret; NULL for public clients */
    char *auth_method;   /* token_endpoint_auth_method: none, client_secret_basic, ... */
    char *redirect_uri;  /* the redirect URI the registration carries */
    int64_t client_secret_expires_at; /* 0: never */
    int64_t registered_at;
    char *registration_client_uri;   /* RFC 7592 client configuration endpoint; NULL */
    char *registration_access_token; /* secret; its bearer token; NULL */
    /* tokens */
    char *access_token;  /* secret */
    char *token_type;    /* "Bearer" */
    char *refresh_token; /* secret; NULL when none */
    char *dpop_key;      /* secret: the private JWK (compact JSON text) the tokens are bound to
                          * (token_type "DPoP", dpop.h); NULL for bearer tokens */
    char *scope;         /* granted, space-separated */
    char *account;       /* who signed in, for people (an id_token's or a JWT access token's
                          * email, else username, else subject); NULL: not known */
    int64_t expires_at;  /* unix seconds; 0: unknown (treated as expired after issued_at + 1h) */
    int64_t issued_at;
    /* discovery */
    struct json_object *as_metadata; /* owned reference; NULL when not fetched */
    struct json_object *prm;         /* protected resource metadata; NULL when none */
    char *resource_metadata_url;
    int64_t discovered_at;
    /* bookkeeping */
    int64_t updated_at;
    struct json_object *extra; /* unknown keys, written back; owned; NULL */
};

/* The store's directory (created 0700 when create). An existing one that group or others can
 * use is tightened to 0700 when ours, refused (-EACCES, saying who must run which chmod) when
 * not, whether create or not. Caller frees. */
int tokens_dir(bool create, char **ret, struct err *e) _must_check_;

/* Whether label can name an account: 1 to TOKENS_LABEL_MAX letters, digits and "._@+-" (it
 * goes on command lines and in status tables as it is). */
bool tokens_label_valid(const char *label);

/* Path of the entry file for (server_url, issuer, label). Caller frees. */
int tokens_entry_path(const char *server_url, const char *issuer, const char *label, char **ret,
                      struct err *e) _must_check_;

/* Loads the entry for (server_url, issuer, label); issuer NULL picks the current entry of the
 * account label whose server_url is exactly server_url (the one holding tokens, obtained last; then the one
 * written last) (callers pass url_canonical() forms, here and
 * everywhere in this API). -ENOENT when there is none. A corrupt entry, one of another format
 * version, or one whose content does not match its file name is -EBADMSG with a message naming
 * the file (-EACCES when others can read it, with the chmod that fixes it). With issuer NULL, an
 * unreadable entry is reported only when no readable one matches: it might have been this
 * server's. Caller frees with token_entry_free(). */
int tokens_load(const char *server_url, const char *issuer, const char *label,
                struct token_entry **ret, struct err *e) _must_check_;

/* Writes the entry atomically, 0600 in a 0700 directory; t->updated_at is set to now on
 * success. An existing file that cannot be read (corrupt, another version, too open, not this
 * entry's) is never replaced: that error is returned, with "not replacing it". */
int tokens_save(struct token_entry *t, struct err *e) _must_check_;

/* Deletes the entry's file (not its lock file, which other processes may be waiting on).
 * -ENOENT when absent. */
int tokens_delete(const char *server_url, const char *issuer, const char *label,
                  struct err *e) _must_check_;

/* Takes the entry's exclusive lock ("<entry file>.lock", creating the store directory),
 * waiting at most timeout_ms; -ETIMEDOUT with a message when another holder keeps it. Caller
 * releases with file_lock_release(). */
int tokens_lock(const char *server_url, const char *issuer, const char *label, int64_t timeout_ms,
                struct file_lock **ret, struct err *e) _must_check_;

/* Every entry in the store, sorted by server URL, label (the default account first), then issuer (corrupt ones skipped, reported
 * through e as the last problem seen, without failing: e->code < 0 then). An absent store is
 * empty (*ret NULL, *ret_n 0). Caller frees each with token_entry_free() and the array with
 * free(). */
int tokens_list(struct token_entry ***ret, size_t *ret_n, struct err *e) _must_check_;

/* A new empty entry for (server_url, issuer, label); -EINVAL when the URL or the issuer is
 * empty or holds a line break, or label (NULL: the default account) is not valid. Caller
 * frees. */
int token_entry_new(const char *server_url, const char *issuer, const char *label,
                    struct token_entry **ret) _must_check_;

/* Drops the tokens (access, refresh, scope, expiry), keeping the registration. */
void token_entry_clear_tokens(struct token_entry *t);

/* Drops the registration (and the tokens, which belong to it); discovery results stay. */
void token_entry_clear_registration(struct token_entry *t);

/* Wipes the secrets and frees. NULL-safe. */
void token_entry_free(struct token_entry *t);

const char *registration_method_str(enum registration_method m);

/* The backend holding the store's secrets (tokens_secrets.h). */
int tokens_store_backend(enum tokens_backend *ret, struct err *e) _must_check_;

/* Moves every secret of the store to the backend to, under the store's lock: atomic as the
 * user sees it (until the store's record names to, the old backend holds every secret; a
 * failure before leaves it so). *ret_n: the entries moved (0: the store was there already).
 * What failed after the move (a file not rewritten, the old item not deleted) goes to warn. */
int tokens_migrate(enum tokens_backend to, size_t *ret_n, struct err *warn,
                   struct err *e) _must_check_;
