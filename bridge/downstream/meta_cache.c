/* meta_cache.c - the bridge's metadata cache (meta_cache.h). */
/* The key's digest is OpenSSL's SHA-256 of the low-level interface, deprecated since OpenSSL 3.0
 * but kept by it: EVP_Digest() would first activate the default provider, about 2 MB of a
 * stdio `serve`'s 6 MB for one digest (docs/development.md, "What loads when"). A cache key is
 * no security function: no provider policy (FIPS) has to apply to it. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/jsonfile.h"
#include "credkit/path.h"

#include "downstream/meta_cache.h"

const char *const META_CACHE_LISTS[4] = {"tools", "prompts", "resources", "resourceTemplates"};

struct meta_cache {
    char *path;
    char *load_error;
    struct json_object *servers; /* name -> entry, as in the file */
    struct json_object *touched; /* name -> true (put) or false (dropped), since the last save */
};

/* ---- the key ----------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A deep copy of o with the keys of every object in byte order (json-c keeps insertion
 * order). NULL for JSON null (a value like any other) is told apart by *oom. */
static struct json_object *sorted_copy(struct json_object *o, bool *oom)
{
    switch (json_object_get_type(o)) {
    case json_type_object: {
        size_t n = (size_t)json_object_object_length(o), i = 0;
        const char **keys = malloc((n ? n : 1) * sizeof(*keys));
        struct json_object *copy = json_object_new_object();
        if (!keys || !copy)
            goto oom_obj;
        json_object_object_foreach(o, k, val)
        {
            (void)val;
            keys[i++] = k;
        }
        qsort(keys, n, sizeof(*keys), cmp_str);
        for (i = 0; i < n; i++) {
            struct json_object *v = sorted_copy(json_object_object_get(o, keys[i]), oom);
            if (*oom || json_object_object_add(copy, keys[i], v) < 0)
                goto oom_obj;
        }
        free(keys);
        return copy;
    oom_obj:
        *oom = true;
        free(keys);
        json_object_put(copy);
        return NULL;
    }
    case json_type_array: {
        size_t n = json_object_array_length(o);
        struct json_object *copy = json_object_new_array_ext((int)(n ? n : 1));
        if (!copy) {
            *oom = true;
            return NULL;
        }
        for (size_t i = 0; i < n; i++) {
            struct json_object *v = sorted_copy(json_object_array_get_idx(o, i), oom);
            if (*oom || json_object_array_add(copy, v) < 0) {
                *oom = true;
                json_object_put(copy);
                return NULL;
            }
        }
        return copy;
    }
    case json_type_null:
        return NULL;
    default:
        return json_object_get(o); /* scalars are not changed by anyone here */
    }
}

/* SHA-256 hex of len bytes of text into hex (META_CACHE_KEY_LEN + 1 bytes). -ENOMEM. */
static int sha256_hex(const char *text, size_t len, char *hex)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    const unsigned mdlen = SHA256_DIGEST_LENGTH;
    SHA256_CTX c;
    _Static_assert(SHA256_DIGEST_LENGTH * 2 == META_CACHE_KEY_LEN, "the key is a SHA-256 in hex");
    if (SHA256_Init(&c) != 1 || SHA256_Update(&c, text, len) != 1 || SHA256_Final(md, &c) != 1)
        return -ENOMEM;
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < mdlen; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[META_CACHE_KEY_LEN] = '\0';
    return 0;
}

/* The key of s, a sorted copy (taken: put here). -ENOMEM. */
static int key_of(struct json_object *s, char *hex)
{
    const char *text =
        json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    int r = text ? sha256_hex(text, strlen(text), hex) : -ENOMEM;
    json_object_put(s);
    return r;
}

int meta_cache_key(struct json_object *raw, char *hex)
{
    bool oom = false;
    struct json_object *s = sorted_copy(raw, &oom);
    if (oom)
        return -ENOMEM;
    return key_of(s, hex);
}

int meta_cache_key_offered(struct json_object *raw, struct json_object *caps, const char *version,
                           char *hex)
{
    struct json_object *o = json_object_new_object(), *offer = json_object_new_object();
    int r = -ENOMEM;
    if (!o || !offer || json_object_object_add(o, "offer", json_object_get(offer)) < 0 ||
        json_object_object_add(o, "entry", json_object_get(raw)) < 0 ||
        json_object_object_add(offer, "capabilities",
                               caps ? json_object_get(caps) : json_object_new_object()) < 0 ||
        json_object_object_add(offer, "protocolVersion",
                               version ? json_object_new_string(version) : NULL) < 0)
        goto out;
    if (!json_object_object_get(offer, "capabilities") ||
        (version && !json_object_object_get(offer, "protocolVersion")))
        goto out; /* a value that could not be made */
    bool oom = false;
    struct json_object *s = sorted_copy(o, &oom);
    r = oom ? -ENOMEM : key_of(s, hex);
out:
    json_object_put(offer);
    json_object_put(o);
    return r;
}

/* ---- the file ---------------------------------------------------------------------------- */

static bool cache_disabled(void)
{
    const char *v = getenv("MCP_BRIDGE_CACHE");
    return v && (strcmp(v, "off") == 0 || strcmp(v, "0") == 0 || strcmp(v, "false") == 0);
}

/* The servers object of a document read from the file; NULL when it is not one of ours. */
static struct json_object *doc_servers(struct json_object *doc)
{
    int64_t v = 0;
    if (!json_get_int64(doc, "version", &v) || v != META_CACHE_VERSION)
        return NULL;
    return json_get_object(doc, "servers");
}

int meta_cache_open(const char *path, struct meta_cache **ret, struct err *e)
{
    *ret = NULL;
    if (cache_disabled())
        return 0;
    struct meta_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return err_set(e, -ENOMEM, "out of memory");
    int r = path ? ((c->path = strdup(path)) ? 0 : -ENOMEM)
                 : path_agent_file(META_CACHE_FILE, &c->path, e);
    if (r < 0) {
        free(c);
        return r == -ENOMEM ? err_set(e, r, "out of memory") : r;
    }
    c->touched = json_object_new_object();
    struct json_object *doc = NULL;
    struct err e2 = ERR_INIT;
    r = json_read_file(c->path, 2 * META_CACHE_TOTAL_MAX, 0, &doc, &e2);
    struct json_object *servers = r >= 0 ? doc_servers(doc) : NULL;
    if (r >= 0 && !servers)
        c->load_error = strdup("not a cache file of this version");
    else if (r < 0 && r != -ENOENT)
        c->load_error = strdup(err_msg(&e2));
    c->servers = servers ? json_object_get(servers) : json_object_new_object();
    json_object_put(doc);
    if (!c->touched || !c->servers) {
        meta_cache_free(c);
        return err_set(e, -ENOMEM, "out of memory");
    }
    *ret = c;
    return 0;
}

void meta_cache_free(struct meta_cache *c)
{
    if (!c)
        return;
    json_object_put(c->servers);
    json_object_put(c->touched);
    free(c->load_error);
    free(c->path);
    free(c);
}

const char *meta_cache_load_error(const struct meta_cache *c)
{
    return c ? c->load_error : NULL;
}

const char *meta_cache_path(const struct meta_cache *c)
{
    return c ? c->path : NULL;
}

/* ---- entries ----------------------------------------------------------------------------- */

static bool entry_fresh(struct json_object *entry, int64_t now_ms)
{
    int64_t saved = 0, expires = 0;
    if (!json_get_int64(entry, "savedAt", &saved) || !json_get_int64(entry, "expiresAt", &expires))
        return false;
    /* a clock set back past the save is not trusted either */
    return now_ms >= saved - 60 * 1000 && now_ms < expires;
}

/* Whether a private entry was saved for the authorization context auth (NULL: none). */
static bool same_context(struct json_object *entry, const char *auth)
{
    const char *saved = json_get_string(entry, "authContext");
    char hex[META_CACHE_KEY_LEN + 1];
    if (!auth || !saved)
        return !auth && !saved;
    return sha256_hex(auth, strlen(auth), hex) == 0 && strcmp(hex, saved) == 0;
}

struct json_object *meta_cache_get_scoped(struct meta_cache *c, const char *name, const char *key,
                                          int64_t now_ms, const char *auth)
{
    if (!c)
        return NULL;
    struct json_object *entry = json_get_object(c->servers, name);
    const char *k = json_get_string(entry, "key");
    if (!k || strcmp(k, key) != 0 || !entry_fresh(entry, now_ms))
        return NULL;
    const char *scope = json_get_string(entry, "cacheScope");
    if (scope && strcmp(scope, "private") == 0 && !same_context(entry, auth))
        return NULL; /* another authorization context's */
    return entry;
}

struct json_object *meta_cache_peek(struct meta_cache *c, const char *name, int64_t now_ms)
{
    if (!c)
        return NULL;
    struct json_object *entry = json_get_object(c->servers, name);
    const char *scope = json_get_string(entry, "cacheScope");
    if (!entry || !entry_fresh(entry, now_ms) || (scope && strcmp(scope, "private") == 0))
        return NULL;
    return entry;
}

struct json_object *meta_cache_get(struct meta_cache *c, const char *name, const char *key,
                                   int64_t now_ms)
{
    return meta_cache_get_scoped(c, name, key, now_ms, NULL);
}

static int touch(struct meta_cache *c, const char *name, bool put)
{
    return json_object_object_add(c->touched, name, json_object_new_boolean(put)) < 0 ? -ENOMEM : 0;
}

void meta_cache_drop(struct meta_cache *c, const char *name)
{
    if (!c)
        return;
    json_object_object_del(c->servers, name);
    (void)touch(c, name, false);
}

int meta_cache_put(struct meta_cache *c, const char *name, const char *key,
                   struct json_object *lists, int64_t now_ms, int64_t ttl_ms)
{
    return meta_cache_put_scoped(c, name, key, lists, now_ms, ttl_ms, META_CACHE_SCOPE_UNSET, NULL);
}

int meta_cache_put_scoped(struct meta_cache *c, const char *name, const char *key,
                          struct json_object *lists, int64_t now_ms, int64_t ttl_ms,
                          enum meta_cache_scope scope, const char *auth)
{
    if (!c)
        return 0;
    if (ttl_ms <= 0 || ttl_ms > META_CACHE_TTL_MS)
        ttl_ms = META_CACHE_TTL_MS;
    char hex[META_CACHE_KEY_LEN + 1];
    struct json_object *entry = json_object_new_object();
    if (!entry || json_object_object_add(entry, "key", json_object_new_string(key)) < 0 ||
        json_object_object_add(entry, "savedAt", json_object_new_int64(now_ms)) < 0 ||
        json_object_object_add(entry, "expiresAt", json_object_new_int64(now_ms + ttl_ms)) < 0)
        goto oom;
    if (scope != META_CACHE_SCOPE_UNSET &&
        json_object_object_add(
            entry, "cacheScope",
            json_object_new_string(scope == META_CACHE_SCOPE_PRIVATE ? "private" : "public")) < 0)
        goto oom;
    /* a private list is for its authorization context only: kept with a digest of it (never
     * the credentials themselves) */
    if (scope == META_CACHE_SCOPE_PRIVATE && auth &&
        (sha256_hex(auth, strlen(auth), hex) < 0 ||
         json_object_object_add(entry, "authContext", json_object_new_string(hex)) < 0))
        goto oom;
    size_t size = 0;
    for (size_t i = 0; i < ELEMENTSOF(META_CACHE_LISTS); i++) {
        struct json_object *v = json_get_array(lists, META_CACHE_LISTS[i]);
        if (!v)
            continue;
        struct json_object *copy = NULL;
        if (json_object_deep_copy(v, &copy, NULL) < 0 ||
            json_object_object_add(entry, META_CACHE_LISTS[i], copy) < 0)
            goto oom;
        const char *t = json_object_to_json_string_ext(copy, JSON_C_TO_STRING_PLAIN);
        size += t ? strlen(t) : 0;
    }
    if (size > META_CACHE_SERVER_MAX) {
        json_object_put(entry);
        meta_cache_drop(c, name);
        return -E2BIG;
    }
    if (json_object_object_add(c->servers, name, entry) < 0)
        return -ENOMEM; /* the value was taken */
    return touch(c, name, true);
oom:
    json_object_put(entry);
    return -ENOMEM;
}

bool meta_cache_dirty(const struct meta_cache *c)
{
    return c && json_object_object_length(c->touched) > 0;
}

/* ---- saving ------------------------------------------------------------------------------ */

struct save_ctx {
    struct meta_cache *c;
    int64_t now;
};

struct sized {
    const char *name;
    int64_t saved;
    size_t size;
};

static int by_age_newest_first(const void *a, const void *b)
{
    const struct sized *x = a, *y = b;
    return x->saved < y->saved ? 1 : x->saved > y->saved ? -1 : strcmp(x->name, y->name);
}

/* Drops the expired servers of servers, then the oldest beyond the total bound. -ENOMEM. */
static int prune(struct json_object *servers, int64_t now)
{
    size_t n = (size_t)json_object_object_length(servers), m = 0;
    struct sized *v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    json_object_object_foreach(servers, name, entry)
    {
        int64_t saved = 0;
        const char *t = json_object_to_json_string_ext(entry, JSON_C_TO_STRING_PLAIN);
        (void)json_get_int64(entry, "savedAt", &saved);
        v[m++] = (struct sized){name, entry_fresh(entry, now) ? saved : INT64_MIN,
                                t ? strlen(t) : SIZE_MAX / 4};
    }
    qsort(v, m, sizeof(*v), by_age_newest_first);
    size_t total = 0;
    char **drop = calloc(m ? m : 1, sizeof(*drop));
    size_t nd = 0;
    if (!drop) {
        free(v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m; i++) {
        total += v[i].size + v[i].size / 4 + 64; /* the file is indented: room for it */
        if (v[i].saved == INT64_MIN || total > META_CACHE_TOTAL_MAX)
            drop[nd++] = strdup(v[i].name); /* names go with the entries: copies */
    }
    free(v);
    for (size_t i = 0; i < nd; i++) {
        if (drop[i])
            json_object_object_del(servers, drop[i]);
        free(drop[i]);
    }
    free(drop);
    return 0;
}

static int save_edit(struct json_object *doc, void *userdata, struct err *e)
{
    struct save_ctx *sc = userdata;
    struct meta_cache *c = sc->c;
    struct json_object *servers = doc_servers(doc);
    if (servers) {
        json_object_get(servers);
    } else {
        servers = json_object_new_object();
        if (!servers)
            return err_set(e, -ENOMEM, "out of memory");
    }
    json_object_object_foreach(c->touched, name, put)
    {
        struct json_object *mine = json_object_object_get(c->servers, name);
        if (json_object_get_boolean(put) && mine)
            json_object_object_add(servers, name, json_object_get(mine));
        else
            json_object_object_del(servers, name);
    }
    int r = prune(servers, sc->now);
    if (r < 0 ||
        json_object_object_add(doc, "version", json_object_new_int(META_CACHE_VERSION)) < 0 ||
        json_object_object_add(doc, "servers", servers) < 0) {
        if (r < 0)
            json_object_put(servers);
        return err_set(e, -ENOMEM, "out of memory");
    }
    return 0;
}

int meta_cache_save(struct meta_cache *c, int64_t now_ms, struct err *e)
{
    if (!meta_cache_dirty(c))
        return 0;
    char *lock = NULL;
    if (asprintf(&lock, "%s.lock", c->path) < 0)
        return err_set(e, -ENOMEM, "out of memory");
    struct jsonfile_opts o = {
        .lock_path = lock,
        .lock_holder = "another mcp-bridge",
        .lock_timeout_ms = META_CACHE_LOCK_MS,
        .max_size = 2 * META_CACHE_TOTAL_MAX,
        .mode = 0600,
        .flags = JSONFILE_CREATE | JSONFILE_MKDIR | JSONFILE_PRIVATE_DIR,
    };
    struct save_ctx sc = {c, now_ms};
    struct err e2 = ERR_INIT;
    int r = jsonfile_edit(c->path, &o, save_edit, &sc, &e2);
    free(lock);
    if (r == -EBADMSG || r == -E2BIG) {
        /* a broken or oversized file: replaced by ours */
        struct json_object *doc = json_object_new_object();
        r = doc ? save_edit(doc, &sc, &e2) : -ENOMEM;
        if (r >= 0) {
            struct err e3 = ERR_INIT;
            r = json_write_file(c->path, doc, 0600, &e3);
            if (r < 0)
                err_set(&e2, r, "%s", err_msg(&e3));
        }
        json_object_put(doc);
    }
    if (r < 0)
        return err_set(e, r, "%s", err_msg(&e2));
    json_object_put(c->touched);
    c->touched = json_object_new_object();
    return c->touched ? 0 : err_set(e, -ENOMEM, "out of memory");
}
