/* tokens_secrets.c - the token store's backends (tokens_secrets.h): the record, the setting, and
 * the keyring's one item per store.
 *
 * The item's secret is JSON, never in a file:
 *
 *   {"version": 1, "entries": {"<entry file name>": {"generation": "<hex>",
 *                                                    "registration": {...secrets},
 *                                                    "tokens": {...secrets}}}}
 *
 * and each entry file of a keyring store carries {"keyring": {"generation": "<hex>"}} instead
 * of its secrets. A write puts the item first, then the file: a writer killed between them
 * leaves the newer secrets in the item (a token is never lost) beside the older file, whose
 * generation then differs; a reader takes the item's secrets all the same. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "credkit/json.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "secrets/keychain.h"

#include "token_json.h"
#include "tokens_secrets.h"

#define RECORD_NAME     "store.json"
#define STORE_LOCK_NAME "store.lock"
#define RECORD_MAX      4096
#define VAULT_VERSION   1
#define GENERATION_LEN  16 /* hex digits */

struct tokens_vault {
    struct json_object *root; /* {"version", "entries": {...}}; holds secrets */
};

/* The item this process read last, for the store cache_dir: one read serves every entry whose
 * file names the generation found in it. */
static struct tokens_vault *cache;
static char *cache_dir;

const char *tokens_backend_str(enum tokens_backend b)
{
    return b == TOKENS_BACKEND_KEYRING ? "keyring" : "file";
}

int tokens_backend_from_str(const char *s, enum tokens_backend *ret)
{
    if (s && strcmp(s, "file") == 0)
        *ret = TOKENS_BACKEND_FILE;
    else if (s && strcmp(s, "keyring") == 0)
        *ret = TOKENS_BACKEND_KEYRING;
    else
        return -EINVAL;
    return 0;
}

int tokens_store_lock(const char *dir, int64_t timeout_ms, struct file_lock **ret, struct err *e)
{
    char *p = path_join(dir, STORE_LOCK_NAME);
    if (!p)
        return err_set(e, -ENOMEM, "out of memory");
    int r = file_lock_acquire(p, timeout_ms, ret, e);
    free(p);
    return r;
}

/* ---- the record and the setting ---- */

enum choice {
    CHOICE_AUTO,
    CHOICE_FILE,
    CHOICE_KEYRING,
};

static int setting(enum choice *ret, struct err *e)
{
    const char *s = getenv(TOKENS_STORE_ENV);
    enum tokens_backend b = TOKENS_BACKEND_FILE;
    if (!s || !*s || strcmp(s, "auto") == 0)
        *ret = CHOICE_AUTO;
    else if (tokens_backend_from_str(s, &b) >= 0)
        *ret = b == TOKENS_BACKEND_KEYRING ? CHOICE_KEYRING : CHOICE_FILE;
    else
        return err_set(e, -EINVAL, "%s='%.32s' is not a token store: use auto, file or keyring",
                       TOKENS_STORE_ENV, s);
    return 0;
}

int tokens_backend_recorded(const char *dir, enum tokens_backend *ret, bool *ret_found,
                            struct err *e)
{
    struct json_object *root = NULL;
    char *p = path_join(dir, RECORD_NAME), *disp = NULL;
    int r;
    if (!p)
        return err_set(e, -ENOMEM, "out of memory");
    r = json_read_file(p, RECORD_MAX, 0, &root, e);
    if (r == -ENOENT) {
        err_clear(e);
        *ret = TOKENS_BACKEND_FILE;
        *ret_found = false;
        r = 0;
        goto out;
    }
    if (r < 0)
        goto out;
    struct json_object *v = NULL;
    int64_t version = 0;
    if (!json_object_is_type(root, json_type_object) ||
        !json_get_int64(root, "version", &version) || version != 1 ||
        !json_object_object_get_ex(root, "secrets", &v) ||
        !json_object_is_type(v, json_type_string) ||
        tokens_backend_from_str(json_object_get_string(v), ret) < 0) {
        disp = path_display(p);
        r = err_set(e, -EBADMSG,
                    "'%s' is not a token store record ({\"version\": 1, \"secrets\": \"file\" or "
                    "\"keyring\"}): fix it, or remove it when the store holds no sign-in",
                    disp ? disp : p);
        goto out;
    }
    *ret_found = true;
    r = 0;
out:
    json_object_put(root);
    free(disp);
    free(p);
    return r;
}

int tokens_backend_record(const char *dir, enum tokens_backend b, struct err *e)
{
    struct json_object *root = json_object_new_object();
    char *p = path_join(dir, RECORD_NAME);
    int r;
    if (!root || !p || json_object_object_add(root, "version", json_object_new_int(1)) < 0 ||
        json_object_object_add(root, "secrets", json_object_new_string(tokens_backend_str(b))) <
            0) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    r = json_write_file(p, root, 0600, e);
out:
    json_object_put(root);
    free(p);
    return r;
}

/* The error for a setting that forces want on a store whose secrets are in have. */
static int conflict(const char *dir, enum tokens_backend have, enum tokens_backend want,
                    struct err *e)
{
    char *disp = path_display(dir);
    int r = err_set(e, -EINVAL,
                    "the token store '%s' keeps its secrets in the %s, but %s=%s: move them with "
                    "'mcp-auth store migrate %s', or unset %s",
                    disp ? disp : dir, have == TOKENS_BACKEND_KEYRING ? "keychain" : "files",
                    TOKENS_STORE_ENV, tokens_backend_str(want), tokens_backend_str(want),
                    TOKENS_STORE_ENV);
    free(disp);
    return r;
}

int tokens_backend_get(const char *dir, tokens_file_secrets_fn file_secrets,
                       enum tokens_backend *ret, bool *ret_recorded, struct err *e)
{
    enum tokens_backend b = TOKENS_BACKEND_FILE;
    enum choice c = CHOICE_AUTO;
    bool found = false, in_files = false;
    int r = setting(&c, e);
    if (r >= 0)
        r = tokens_backend_recorded(dir, &b, &found, e);
    if (r < 0)
        return r;
    if (found && c != CHOICE_AUTO && (c == CHOICE_KEYRING) != (b == TOKENS_BACKEND_KEYRING))
        return conflict(dir, b, c == CHOICE_KEYRING ? TOKENS_BACKEND_KEYRING : TOKENS_BACKEND_FILE,
                        e);
    /* a forced keyring on a file store with tokens: refused now, not after a refresh whose new
     * token the write would then refuse (a rotated refresh token would be lost) */
    if (!found && c == CHOICE_KEYRING && file_secrets) {
        r = file_secrets(dir, &in_files, e);
        if (r < 0)
            return r;
        if (in_files)
            return conflict(dir, TOKENS_BACKEND_FILE, TOKENS_BACKEND_KEYRING, e);
    }
    *ret = b;
    if (ret_recorded)
        *ret_recorded = found;
    return 0;
}

/* Whether a Secret Service answers for the store in dir: 1 yes, 0 none runs (e says so); a
 * locked or failing one is its error (auto never chooses files because the keychain
 * misbehaves). */
static int keyring_reachable(const char *dir, struct err *e)
{
    char *v = NULL;
    struct err ke = ERR_INIT;
    int r = keychain_tokens_lookup(dir, &v, &ke);
    secure_free(v);
    if (r >= 0 || r == -ENOENT)
        return 1;
    int code = err_set(e, r == -ETIMEDOUT ? -EIO : r, "%s", ke.msg);
    return r == -ENOTCONN ? 0 : code;
}

int tokens_backend_for_write(const char *dir, tokens_file_secrets_fn file_secrets,
                             enum tokens_backend *ret, struct err *e)
{
    bool in_files = false;
    enum tokens_backend b = TOKENS_BACKEND_FILE;
    enum choice c = CHOICE_AUTO;
    bool found = false;
    int r = tokens_backend_get(dir, file_secrets, &b, &found, e);
    if (r < 0 || found)
        goto out;
    r = setting(&c, e);
    if (r < 0)
        goto out;
    if (c == CHOICE_FILE)
        goto out;
    r = file_secrets(dir, &in_files, e);
    if (r < 0 || (c == CHOICE_AUTO && in_files))
        goto out; /* no record: files, as before backends existed */
    if (c == CHOICE_KEYRING && in_files) {
        r = conflict(dir, TOKENS_BACKEND_FILE, TOKENS_BACKEND_KEYRING, e);
        goto out;
    }
    /* the record is written only for a keychain that answers: a forced keyring without one
     * fails, and auto without one stays in files (a new store decides again next time) */
    r = keyring_reachable(dir, e);
    if (r == 0 && c == CHOICE_AUTO)
        err_clear(e);
    else if (r == 0)
        r = -ENOTCONN;
    if (r <= 0)
        goto out;
    b = TOKENS_BACKEND_KEYRING;
    r = tokens_backend_record(dir, b, e);
out:
    if (r >= 0) {
        *ret = b;
        r = 0;
    }
    return r;
}

/* ---- the item ---- */

void tokens_vault_free(struct tokens_vault *v)
{
    if (!v)
        return;
    struct json_object *entries = json_get_object(v->root, "entries");
    if (entries) {
        json_object_object_foreach(entries, name, ent)
        {
            (void)name;
            token_json_wipe_secrets(ent);
        }
    }
    json_object_put(v->root);
    free(v);
}

void tokens_secrets_forget(void)
{
    tokens_vault_free(cache);
    cache = NULL;
    free(cache_dir);
    cache_dir = NULL;
}

static int keyring_code(int r)
{
    /* a keychain that does not answer is not a lock held too long (store.h's -ENOLCK) */
    return r == -ETIMEDOUT ? -EIO : r;
}

int tokens_vault_read(const char *dir, struct tokens_vault **ret, struct err *e)
{
    struct tokens_vault *v = calloc(1, sizeof(*v));
    struct json_object *entries = NULL;
    char *text = NULL;
    int r;
    if (!v)
        return err_set(e, -ENOMEM, "out of memory");
    r = keychain_tokens_lookup(dir, &text, e);
    if (r == -ENOENT) {
        err_clear(e);
        v->root = json_object_new_object();
        entries = json_object_new_object();
        if (!v->root || !entries || json_object_object_add(v->root, "entries", entries) < 0) {
            json_object_put(entries);
            r = err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
        r = 0;
        goto done;
    }
    if (r < 0) {
        r = keyring_code(r);
        goto out;
    }
    struct err pe = ERR_INIT;
    r = json_parse(text, strlen(text), 16u * 1024u * 1024u, &v->root, &pe);
    int64_t version = 0;
    if (r < 0 || !json_object_is_type(v->root, json_type_object) ||
        !json_get_int64(v->root, "version", &version) || version != VAULT_VERSION ||
        !json_get_object(v->root, "entries")) {
        r = err_set(e, -EBADMSG,
                    "the keychain item of the token store is not one this mcp-auth reads: "
                    "remove it (secret-tool clear xdg:schema org.credkit.TokenStore) and log "
                    "in again");
        goto out;
    }
done:
    *ret = v;
    v = NULL;
out:
    secure_free(text);
    tokens_vault_free(v);
    return r;
}

int tokens_vault_write(struct tokens_vault *v, const char *dir, struct err *e)
{
    struct json_object *ver = json_object_new_int(VAULT_VERSION);
    if (!ver || json_object_object_add(v->root, "version", ver) < 0) {
        json_object_put(ver);
        return err_set(e, -ENOMEM, "out of memory");
    }
    size_t len = 0;
    const char *s = json_object_to_json_string_length(v->root, JSON_C_TO_STRING_PLAIN, &len);
    if (!s)
        return err_set(e, -ENOMEM, "out of memory");
    char *copy = strndup(s, len);
    /* json-c keeps the text in the object's print buffer: wiped now, ours wiped after */
    secure_wipe((char *)s, len);
    if (!copy)
        return err_set(e, -ENOMEM, "out of memory");
    int r = keychain_tokens_save(dir, copy, e);
    secure_free(copy);
    return keyring_code(r);
}

int tokens_vault_delete(const char *dir, struct err *e)
{
    return keyring_code(keychain_tokens_delete(dir, e));
}

static int new_generation(char out[GENERATION_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[GENERATION_LEN / 2];
    int r = secure_random(b, sizeof(b));
    if (r < 0)
        return r;
    for (size_t i = 0; i < sizeof(b); i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[GENERATION_LEN] = 0;
    return 0;
}

/* root's {"keyring": {"generation"}}, NULL when it has none */
static const char *generation_of(struct json_object *root)
{
    struct json_object *v = NULL;
    struct json_object *k = json_get_object(root, "keyring");
    if (!k || !json_object_object_get_ex(k, "generation", &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

int tokens_vault_take(struct tokens_vault *v, const char *name, struct json_object *root)
{
    struct json_object *sec = NULL, *mark = NULL, *entries = json_get_object(v->root, "entries");
    char gen[GENERATION_LEN + 1];
    int r = new_generation(gen);
    if (r < 0)
        return r;
    r = token_json_take_secrets(root, &sec);
    if (r < 0)
        return r;
    mark = json_object_new_object();
    if (!mark || json_object_object_add(mark, "generation", json_object_new_string(gen)) < 0 ||
        json_object_object_add(sec, "generation", json_object_new_string(gen)) < 0) {
        r = -ENOMEM;
        goto out;
    }
    /* an older entry of that name is replaced (its secrets wiped first) */
    struct json_object *old = json_get_object(entries, name);
    token_json_wipe_secrets(old);
    if (json_object_object_add(entries, name, sec) < 0) {
        r = -ENOMEM;
        goto out;
    }
    sec = NULL;
    if (json_object_object_add(root, "keyring", mark) < 0) {
        r = -ENOMEM;
        goto out;
    }
    mark = NULL;
    r = 0;
out:
    json_object_put(mark);
    token_json_wipe_secrets(sec);
    json_object_put(sec);
    return r;
}

int tokens_vault_put(struct tokens_vault *v, const char *name, struct json_object *root)
{
    struct json_object *ent = json_get_object(json_get_object(v->root, "entries"), name);
    if (!ent)
        return -ENOENT;
    int r = token_json_put_secrets(root, ent);
    if (r >= 0)
        json_object_object_del(root, "keyring");
    return r;
}

/* name's secrets in the item, read afresh unless the cached one holds the generation gen */
static int vault_entry(const char *dir, const char *name, const char *gen, struct json_object **ret,
                       struct err *e)
{
    bool cached = cache && cache_dir && strcmp(cache_dir, dir) == 0;
    for (int pass = cached ? 0 : 1; pass < 2; pass++) {
        if (pass == 1) {
            struct tokens_vault *v = NULL;
            char *d = strdup(dir);
            int r = d ? tokens_vault_read(dir, &v, e) : err_set(e, -ENOMEM, "out of memory");
            if (r < 0) {
                free(d);
                return r;
            }
            tokens_secrets_forget();
            cache = v;
            cache_dir = d;
        }
        struct json_object *ent = json_get_object(json_get_object(cache->root, "entries"), name);
        struct json_object *g = NULL;
        bool same = ent && json_object_object_get_ex(ent, "generation", &g) &&
                    json_object_is_type(g, json_type_string) &&
                    strcmp(json_object_get_string(g), gen) == 0;
        /* after a fresh read, another generation is the item's newer secrets (a writer that
         * died before its file, or one between our two reads): they are the ones to use */
        if (same || (pass == 1 && ent)) {
            *ret = ent;
            return 0;
        }
    }
    return -ENOENT;
}

int tokens_secrets_fill(const char *dir, enum tokens_backend b, const char *name,
                        struct json_object *root, struct err *e)
{
    const char *gen = generation_of(root);
    struct json_object *ent = NULL;
    if (b != TOKENS_BACKEND_KEYRING || !gen)
        return 0; /* files: the secrets are in root (an entry moved to the keychain whose file
                   * was not yet rewritten holds the same ones) */
    int r = vault_entry(dir, name, gen, &ent, e);
    if (r == -ENOENT)
        return err_set(e, -EBADMSG,
                       "the keychain holds no secrets for the token store's entry '%s': remove "
                       "the file and log in again",
                       name);
    if (r < 0)
        return r;
    r = token_json_put_secrets(root, ent);
    if (r < 0)
        return err_set(e, r, "out of memory");
    json_object_object_del(root, "keyring");
    return 0;
}

/* Drops the item's entries whose files are gone (a logout whose keychain write failed, a file
 * removed by hand), except keep. */
static int prune(struct tokens_vault *v, const char *dir, const char *keep)
{
    struct json_object *entries = json_get_object(v->root, "entries");
    struct strv gone = STRV_INIT;
    int r = 0;
    json_object_object_foreach(entries, name, ent)
    {
        (void)ent;
        if (keep && strcmp(name, keep) == 0)
            continue;
        char *p = path_join(dir, name);
        struct stat st;
        if (!p) {
            r = -ENOMEM;
            goto out;
        }
        if (stat(p, &st) < 0 && errno == ENOENT)
            r = strv_push(&gone, name);
        free(p);
        if (r < 0)
            goto out;
    }
    for (size_t i = 0; i < gone.n; i++) {
        token_json_wipe_secrets(json_get_object(entries, gone.v[i]));
        json_object_object_del(entries, gone.v[i]);
    }
out:
    strv_release(&gone);
    return r;
}

int tokens_secrets_keep(const char *dir, enum tokens_backend b, const char *name,
                        struct json_object *root, struct err *e)
{
    struct tokens_vault *v = NULL;
    char *d = NULL;
    int r;
    if (b != TOKENS_BACKEND_KEYRING)
        return 0;
    r = tokens_vault_read(dir, &v, e);
    if (r < 0)
        goto out;
    r = prune(v, dir, name);
    if (r >= 0)
        r = tokens_vault_take(v, name, root);
    if (r < 0) {
        r = err_set(e, r, "out of memory");
        goto out;
    }
    r = tokens_vault_write(v, dir, e);
    if (r < 0)
        goto out;
    d = strdup(dir);
    if (d) {
        /* what we wrote is the item now: the next read of this process needs no other */
        tokens_secrets_forget();
        cache = v;
        cache_dir = d;
        v = NULL;
    }
    r = 0;
out:
    tokens_vault_free(v);
    return r;
}

int tokens_secrets_drop(const char *dir, enum tokens_backend b, const char *name, struct err *e)
{
    struct tokens_vault *v = NULL;
    int r;
    if (b != TOKENS_BACKEND_KEYRING)
        return 0;
    r = tokens_vault_read(dir, &v, e);
    if (r < 0)
        goto out;
    struct json_object *entries = json_get_object(v->root, "entries");
    if (json_get_object(entries, name)) {
        token_json_wipe_secrets(json_get_object(entries, name));
        json_object_object_del(entries, name);
    }
    r = prune(v, dir, NULL);
    if (r < 0) {
        r = err_set(e, r, "out of memory");
        goto out;
    }
    r = tokens_vault_write(v, dir, e);
    tokens_secrets_forget();
out:
    tokens_vault_free(v);
    return r;
}
