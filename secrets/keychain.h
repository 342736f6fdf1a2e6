/* keychain.h - the OS keychain: the freedesktop Secret Service, through libsecret.
 *
 * Items use the schema "org.credkit.Secret" with a single attribute, "label", holding the
 * keychain label a recipe names ("keychain:LABEL"). Attributes are not confidential in the
 * Secret Service, so they hold the label only; the value lives in the item's secret. Items are
 * stored in the default collection with the display label "credkit secret: LABEL". Items of
 * other programs (keyring-rs: pi-mcp-adapter's tokens) are only read, by their "service" and
 * "username" attributes.
 *
 * No call ever prompts or unlocks: a locked keychain is an error that says how to unlock it, and
 * a missing Secret Service (no D-Bus session, no keyring daemon) is an error that says what to
 * start. Values handed out are the caller's: free them with secure_free().
 *
 * mcp-auth's token store keeps the secrets of all its entries in one item of its own schema,
 * "org.credkit.TokenStore", whose one attribute, "store", is the store directory's path (so two
 * stores, two HOMEs, never share an item). This file builds into a library of its own
 * (keychain), which secrets and mcp-auth link; the bridge never does. */
#pragma once

#include "credkit/err.h"
#include "credkit/macro.h"

/* Looks the label up. -ENOENT when no item has it; -ENOTCONN when there is no Secret Service;
 * -EACCES when the item or collection is locked; -EIO otherwise. Each with a message that says
 * what to do. Caller secure_free()s *ret. */
int keychain_lookup(const char *label, char **ret, struct err *e) _must_check_;

/* Looks up an item another program stored under the attributes service and username (as
 * keyring-rs and Python's keyring do), whatever its schema. Same errors as keychain_lookup; the
 * messages name the account. Caller secure_free()s *ret. */
int keychain_lookup_account(const char *service, const char *account, char **ret,
                            struct err *e) _must_check_;

/* Stores (creates or replaces) the item for label with value. Same errors as lookup. */
int keychain_store(const char *label, const char *value, struct err *e) _must_check_;

/* Deletes the item for label. -ENOENT when there was none. */
int keychain_delete(const char *label, struct err *e) _must_check_;

/* The token store's item for the store directory store (an absolute path): looked up, stored
 * (created or replaced) and deleted as above; the messages' advice for a missing Secret Service
 * is mcp-auth's. */
int keychain_tokens_lookup(const char *store, char **ret, struct err *e) _must_check_;
int keychain_tokens_save(const char *store, const char *value, struct err *e) _must_check_;
int keychain_tokens_delete(const char *store, struct err *e) _must_check_;
