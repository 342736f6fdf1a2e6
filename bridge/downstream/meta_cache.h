/* meta_cache.h - what the servers listed, kept between runs: the bridge's metadata cache.
 *
 * A lazy server is listed to the agent from here without being connected (downstream.h). The
 * file is $PI_CODING_AGENT_DIR/mcp-bridge-cache.json (default ~/.pi/agent), the bridge's own
 * (never another client's metadata file), 0600 in a 0700 directory, replaced atomically under
 * a lock (jsonfile.h; mcp-bridge-cache.json.lock beside it), so two bridges writing at once lose
 * neither's servers:
 *
 *   {"version": 1,
 *    "servers": {"NAME": {"key": "<sha-256 hex of the entry>", "savedAt": <ms since the epoch>,
 *                         "expiresAt": <ms>, "tools": [...], "prompts": [...],
 *                         "resources": [...], "resourceTemplates": [...]}}}
 *
 * The lists are stored as the server gave them (before excludeTools and renaming). The key is
 * the SHA-256 of the entry as written and of what the bridge offers the server, serialised
 * canonically (keys sorted at every level, no whitespace): "${VAR}" templates stay as written,
 * so no resolved value (no secret) is in it, and any change of the entry makes its cached lists
 * invalid. A server may decide its lists from the client capabilities and the protocol version
 * it is offered (one that adds a sampling tool only for a client that can sample), so an agent
 * that declares other capabilities gets lists of its own, never another agent's. An entry expires META_CACHE_TTL_MS
 * after it was saved, or sooner when a list gave a shorter ttlMs (a list with "ttlMs": 0 is not
 * cached at all: the caller drops the server). A list's "cacheScope" (2026-07-28,
 * caching.mdx) is kept with it: "public" and unset lists are served to whoever reads the
 * cache; a "private" one is saved with "authContext", the SHA-256 of the authorization context
 * it was fetched in (an identity of the credentials the caller gives, never a secret in the
 * file), and served only to the same context (none when it was saved without). Bounds: a server whose lists
 * take over META_CACHE_SERVER_MAX bytes is not cached; the file is kept under
 * META_CACHE_TOTAL_MAX bytes by dropping the oldest servers. A file that cannot be read or
 * parsed counts as empty (and is replaced by the next save). MCP_BRIDGE_CACHE=off in the
 * environment disables the cache: meta_cache_open() gives NULL, and every function below takes
 * NULL as a cache that holds nothing and saves nothing.
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
