/* meta_cache.h - what the servers listed, kept between runs: the bridge's metadata cache.
 *
 * A lazy server is listed to the agent from here without being connected (downstream.h). The
 * file, $PI_CODING_AGENT_DIR/mcp-bridge-cache.json, is the bridge's own, 0600 in a 0700
 * directory, replaced atomically under a lock so that two bridges writing at once lose neither's
 * servers. Each server's lists are stored as it gave them, under a key that hashes its entry as
 * written (no resolved secret) with what the bridge offers it (capabilities, protocol version),
 * so an agent that declares other capabilities never gets another agent's lists. Entries
 * expire, "private" lists are served only to the authorization context they were fetched in,
 * and sizes are bounded. MCP_BRIDGE_CACHE=off disables it: meta_cache_open() gives NULL, which
 * every function takes as a cache that holds nothing. docs/development.md, "Modules in
 * detail", has the file's format, the key, the expiry and the bounds in full.
 *
 * Not thread-safe. Reads and writes are synchronous (a small local file). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#define META_CACHE_FILE       "mcp-bridge-cache.json"
#define META_CACHE_VERSION    1
#define META_CACHE_TTL_MS     (7LL * 24 * 60 * 60 * 1000)
#define META_CACHE_SERVER_MAX (1u * 1024u * 1024u)
#define META_CACHE_TOTAL_MAX  (8u * 1024u * 1024u)
#define META_CACHE_LOCK_MS    500
#define META_CACHE_KEY_LEN    64 /* hex digits */

/* The list members of a cached server (the MCP result keys). */
extern const char *const META_CACHE_LISTS[4];

struct meta_cache;

/* Opens the cache at path (NULL: the default file above) and reads it. 0 with *ret NULL when
 * MCP_BRIDGE_CACHE=off; -ENOENT when there is no agent directory; -ENOMEM. A missing,
 * unreadable or malformed file is an empty cache (meta_cache_load_error() says why). */
int meta_cache_open(const char *path, struct meta_cache **ret, struct err *e) _must_check_;

/* NULL-safe. Nothing is saved. */
void meta_cache_free(struct meta_cache *c);

/* Why the file was read as empty (NULL when it was read, or missing). Borrowed. */
const char *meta_cache_load_error(const struct meta_cache *c);
const char *meta_cache_path(const struct meta_cache *c);

/* The key of an entry (its raw object): SHA-256 hex of its canonical serialisation, into hex
 * (META_CACHE_KEY_LEN + 1 bytes). -ENOMEM. */
int meta_cache_key(struct json_object *raw, char *hex) _must_check_;
/* The key of an entry (raw) offered the client capabilities caps (roots, sampling, elicitation
 * as the upstream sends them; NULL: {}) and the protocol version (NULL: the upstream's default):
 * SHA-256 hex of the canonical serialisation of
 * {"entry": RAW, "offer": {"capabilities": CAPS, "protocolVersion": VERSION or null}}, into hex
 * (META_CACHE_KEY_LEN + 1 bytes). This is the key the bridge files lists under. -ENOMEM. */
int meta_cache_key_offered(struct json_object *raw, struct json_object *caps, const char *version,
                           char *hex) _must_check_;

/* The cached server name, if its key is key and it has not expired at now_ms (ms since the
 * epoch): an object with the list members above (borrowed, valid until the next put, drop or
 * free), or NULL. */
struct json_object *meta_cache_get(struct meta_cache *c, const char *name, const char *key,
                                   int64_t now_ms);

/* The cached lists of server name whatever key they were filed under (what some agent was
 * given), when not expired at now_ms and not "private": shell completion offers tool names
 * from them without connecting. Borrowed as meta_cache_get()'s; NULL when none. */
struct json_object *meta_cache_peek(struct meta_cache *c, const char *name, int64_t now_ms);

/* Stores the lists of server name (lists: an object with some of the list members, borrowed;
 * copied) under key, saved at now_ms, expiring after ttl_ms (<= 0 or over META_CACHE_TTL_MS:
 * META_CACHE_TTL_MS). -E2BIG when they take over META_CACHE_SERVER_MAX bytes: the server is
 * dropped from the cache instead. -ENOMEM. */
int meta_cache_put(struct meta_cache *c, const char *name, const char *key,
                   struct json_object *lists, int64_t now_ms, int64_t ttl_ms) _must_check_;

/* The scope of a server's lists ("cacheScope"): UNSET when they gave none (earlier
 * revisions). */
enum meta_cache_scope {
    META_CACHE_SCOPE_UNSET,
    META_CACHE_SCOPE_PUBLIC,
    META_CACHE_SCOPE_PRIVATE,
};

/* meta_cache_put() with the lists' scope and, for a private one, the authorization context
 * they were fetched in (NULL: none, e.g. a stdio server; the text is digested, not stored). */
int meta_cache_put_scoped(struct meta_cache *c, const char *name, const char *key,
                          struct json_object *lists, int64_t now_ms, int64_t ttl_ms,
                          enum meta_cache_scope scope, const char *auth) _must_check_;
/* meta_cache_get() for the authorization context auth (NULL: none): a private entry of
 * another context is a miss. meta_cache_get() is this with NULL. */
struct json_object *meta_cache_get_scoped(struct meta_cache *c, const char *name, const char *key,
                                          int64_t now_ms, const char *auth);

/* Forgets server name. */
void meta_cache_drop(struct meta_cache *c, const char *name);

/* Whether puts or drops wait for meta_cache_save(). */
bool meta_cache_dirty(const struct meta_cache *c);

/* Writes the changes since the last save into the file as it is now (re-read under its lock:
 * the servers another bridge saved meanwhile are kept), dropping what expired at now_ms and
 * the oldest servers beyond META_CACHE_TOTAL_MAX. 0 when nothing was due or it was written,
 * else the file's error (the changes stay due). */
int meta_cache_save(struct meta_cache *c, int64_t now_ms, struct err *e) _must_check_;
