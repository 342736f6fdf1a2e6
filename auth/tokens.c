/* tokens.c - the token store: one private JSON file per (server URL, issuer)
 *
 * Entry file: <agent dir>/oauth/<first 32 hex digits of sha256(server_url "\n" issuer)>.json,
 * lock file: the same name + ".lock" (never deleted: a process waiting on a lock file that
 * someone unlinks would lock a file nobody else opens). Format version 1:
 *
 *   {"version": 1, "server_url": ..., "issuer": ...,
 *    "registration": {"method": "dynamic" | "pre-registered" | "metadata-document",
 *                     "client_id", "client_secret", "token_endpoint_auth_method",
 *                     "redirect_uri", "client_secret_expires_at", "registered_at"},
 *    "tokens": {"access_token", "token_type", "refresh_token", "scope", "expires_at",
 *               "issued_at"},
 *    "discovery": {"authorization_server_metadata": {...}, "protected_resource_metadata": {...},
 *                  "resource_metadata_url", "fetched_at"},
 *    "updated_at": ...}
 *
 * Absent values are omitted (0 timestamps too); unknown top-level keys are kept and written
 * back. An entry is only ever replaced by tokens_save() after the file in place was read
 * successfully (or is absent): a corrupt file, one of another format version, one readable by
 * others or one whose content does not match its name stays for the user to look at.
 *
 * json-c keeps its own copies of parsed strings; the secret ones in trees we parse or build are
 * wiped before the tree is released, but json-c's tokenizer buffer is freed unwiped (a known
 * limitation). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "credkit/json.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/util.h"

#include "tokens.h"

#define TOKENS_FORMAT_VERSION 1
#define TOKENS_ENTRY_MAX      (1024u * 1024u) /* bytes in one entry file */
#define TOKENS_SCAN_MAX       4096            /* entry files looked at in one scan */
#define ENTRY_HASH_HEX        32
#define ENTRY_SUFFIX          ".json"
#define ENTRY_NAME_LEN        (ENTRY_HASH_HEX + sizeof(ENTRY_SUFFIX) - 1)

static const char *const known_keys[] = {"version", "server_url", "issuer",    "registration",
                                         "tokens",  "discovery",  "updated_at"};

static bool is_known_key(const char *k)
{
    for (size_t i = 0; i < ELEMENTSOF(known_keys); i++)
        if (strcmp(k, known_keys[i]) == 0)
            return true;
    return false;
}

const char *registration_method_str(enum registration_method m)
{
    switch (m) {
    case REGISTRATION_PRE:
        return "pre-registered";
    case REGISTRATION_METADATA:
        return "metadata-document";
    case REGISTRATION_DYNAMIC:
        return "dynamic";
    case REGISTRATION_NONE:
        break;
    }
    return "none";
}

static int registration_method_from_str(const char *s, enum registration_method *ret)
{
    static const enum registration_method all[] = {REGISTRATION_PRE, REGISTRATION_METADATA,
                                                   REGISTRATION_DYNAMIC};
    for (size_t i = 0; i < ELEMENTSOF(all); i++)
        if (strcmp(s, registration_method_str(all[i])) == 0) {
            *ret = all[i];
            return 0;
        }
    return -EINVAL;
}

/* Keys must be unambiguous: "a\nb" + "c" and "a" + "b\nc" would hash alike. */
static int check_key(const char *server_url, const char *issuer, struct err *e)
{
    if (!server_url || !*server_url)
        return err_set(e, -EINVAL, "no server URL for the token store");
    if (!issuer || !*issuer)
        return err_set(e, -EINVAL, "no issuer for the token store");
    if (strpbrk(server_url, "\r\n") || strpbrk(issuer, "\r\n"))
        return err_set(e, -EINVAL, "a server URL or issuer with a line break cannot be stored");
    return 0;
}

/* "<32 hex>.json" for (server_url, issuer) into name[ENTRY_NAME_LEN + 1]. */
static int entry_name(const char *server_url, const char *issuer, char *name, struct err *e)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = NULL;
    int r;

    r = check_key(server_url, issuer, e);
    if (r < 0)
        goto out;
    ctx = EVP_MD_CTX_new();
    if (!ctx) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
        EVP_DigestUpdate(ctx, server_url, strlen(server_url)) != 1 ||
        EVP_DigestUpdate(ctx, "\n", 1) != 1 || EVP_DigestUpdate(ctx, issuer, strlen(issuer)) != 1 ||
        EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen < ENTRY_HASH_HEX / 2) {
        r = err_set(e, -EIO, "cannot compute SHA-256");
        goto out;
    }
    for (size_t i = 0; i < ENTRY_HASH_HEX / 2; i++) {
        name[2 * i] = hex[md[i] >> 4];
        name[2 * i + 1] = hex[md[i] & 15];
    }
    memcpy(name + ENTRY_HASH_HEX, ENTRY_SUFFIX, sizeof(ENTRY_SUFFIX));
    r = 0;
out:
    EVP_MD_CTX_free(ctx);
    return r;
}

static bool is_entry_name(const char *n)
{
    if (strlen(n) != ENTRY_NAME_LEN || strcmp(n + ENTRY_HASH_HEX, ENTRY_SUFFIX) != 0)
        return false;
    for (size_t i = 0; i < ENTRY_HASH_HEX; i++)
        if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
            return false;
    return true;
}

int tokens_dir(bool create, char **ret, struct err *e)
{
    char *dir = NULL;
    int r = path_agent_file("oauth", &dir, e);
    if (r < 0)
        goto out;
    if (create) {
        r = dir_ensure(dir, 0700, e);
        if (r < 0)
            goto out;
    }
    *ret = dir;
    dir = NULL;
    r = 0;
out:
    free(dir);
    return r;
}

static int entry_path(const char *server_url, const char *issuer, bool create, char **ret,
                      struct err *e)
{
    char name[ENTRY_NAME_LEN + 1], *dir = NULL, *p = NULL;
    int r = entry_name(server_url, issuer, name, e);
    if (r < 0)
        goto out;
    r = tokens_dir(create, &dir, e);
    if (r < 0)
        goto out;
    p = path_join(dir, name);
    if (!p) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    *ret = p;
    p = NULL;
    r = 0;
out:
    free(dir);
    return r;
}

int tokens_entry_path(const char *server_url, const char *issuer, char **ret, struct err *e)
{
    return entry_path(server_url, issuer, false, ret, e);
}

/* ---- entries in memory ---- */

static int strdup_or_null(const char *s, char **ret)
{
    char *c = NULL;
    if (s) {
        c = strdup(s);
        if (!c)
            return -ENOMEM;
    }
    *ret = c;
    return 0;
}

int token_entry_new(const char *server_url, const char *issuer, struct token_entry **ret)
{
    struct token_entry *t = NULL;
    int r = check_key(server_url, issuer, NULL);
    if (r < 0)
        return r;
    t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    if (strdup_or_null(server_url, &t->server_url) < 0 || strdup_or_null(issuer, &t->issuer) < 0) {
        token_entry_free(t);
        return -ENOMEM;
    }
    *ret = t;
    return 0;
}

void token_entry_clear_tokens(struct token_entry *t)
{
    if (!t)
        return;
    secure_free(t->access_token);
    secure_free(t->refresh_token);
    free(t->token_type);
    free(t->scope);
    t->access_token = t->refresh_token = t->token_type = t->scope = NULL;
    t->expires_at = 0;
    t->issued_at = 0;
}

void token_entry_clear_registration(struct token_entry *t)
{
    if (!t)
        return;
    token_entry_clear_tokens(t);
    secure_free(t->client_secret);
    free(t->client_id);
    free(t->auth_method);
    free(t->redirect_uri);
    free(t->registration_client_uri);
    secure_free(t->registration_access_token);
    t->client_secret = t->client_id = t->auth_method = t->redirect_uri = NULL;
    t->registration_client_uri = t->registration_access_token = NULL;
    t->registration = REGISTRATION_NONE;
    t->client_secret_expires_at = 0;
    t->registered_at = 0;
}

void token_entry_free(struct token_entry *t)
{
    if (!t)
        return;
    token_entry_clear_registration(t);
    free(t->server_url);
    free(t->issuer);
    json_object_put(t->as_metadata);
    json_object_put(t->prm);
    free(t->resource_metadata_url);
    json_object_put(t->extra);
    free(t);
}

/* ---- JSON <-> entry ---- */

/* Wipes json-c's copy of section[key] when it is a string. */
static void wipe_json_string(struct json_object *section, const char *key)
{
    struct json_object *v = NULL;
    if (section && json_object_object_get_ex(section, key, &v) &&
        json_object_is_type(v, json_type_string))
        secure_wipe((char *)json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

static void wipe_json_secrets(struct json_object *root)
{
    struct json_object *reg = json_get_object(root, "registration");
    struct json_object *tok = json_get_object(root, "tokens");
    wipe_json_string(reg, "client_secret");
    wipe_json_string(reg, "registration_access_token");
    wipe_json_string(tok, "access_token");
    wipe_json_string(tok, "refresh_token");
}

/* -EBADMSG "'<file>': <what>: fix or remove the file" */
static int bad_entry(struct err *e, const char *dp, const char *what)
{
    return err_set(e, -EBADMSG, "'%s': %s: fix the file or remove it (and log in again)", dp, what);
}

static int bad_type(struct err *e, const char *dp, const char *section, const char *key,
                    const char *want, struct json_object *v)
{
    char what[256];
    (void)snprintf(what, sizeof(what), "\"%s%s%s\" must be %s, not %s", section ? section : "",
                   section ? "." : "", key, want, json_type_desc(json_object_get_type(v)));
    return bad_entry(e, dp, what);
}

/* A string member (JSON null or absent: left NULL). */
static int read_str(struct json_object *obj, const char *section, const char *key, char **dst,
                    const char *dp, struct err *e)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return bad_type(e, dp, section, key, "a string", v);
    const char *s = json_object_get_string(v);
    if (strlen(s) != (size_t)json_object_get_string_len(v)) {
        char what[160];
        (void)snprintf(what, sizeof(what), "\"%s%s%s\" contains a NUL character",
                       section ? section : "", section ? "." : "", key);
        return bad_entry(e, dp, what);
    }
    char *c = strdup(s);
    if (!c)
        return err_set(e, -ENOMEM, "out of memory");
    *dst = c;
    return 0;
}

/* A non-negative integer member (absent or null: left as is). */
static int read_int(struct json_object *obj, const char *section, const char *key, int64_t *dst,
                    const char *dp, struct err *e)
{
    struct json_object *v = NULL;
    int64_t x;
    if (!json_object_object_get_ex(obj, key, &v) || !v)
        return 0;
    if (!json_get_int64(obj, key, &x) || x < 0)
        return bad_type(e, dp, section, key, "a non-negative integer", v);
    *dst = x;
    return 0;
}

/* An object member, referenced (absent or null: left NULL). */
static int read_obj(struct json_object *obj, const char *section, const char *key,
                    struct json_object **dst, const char *dp, struct err *e)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_object))
        return bad_type(e, dp, section, key, "an object", v);
    json_object_put(*dst);
    *dst = json_object_get(v);
    return 0;
}

static int section_of(struct json_object *root, const char *key, struct json_object **ret,
                      const char *dp, struct err *e)
{
    struct json_object *v = NULL;
    *ret = NULL;
    if (!json_object_object_get_ex(root, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_object))
        return bad_type(e, dp, NULL, key, "an object", v);
    *ret = v;
    return 0;
}

static int entry_from_json(struct json_object *root, const char *dp, struct token_entry **ret,
                           struct err *e)
{
    struct token_entry *t = NULL;
    struct json_object *reg, *tok, *disc, *v = NULL;
    char *method = NULL;
    int64_t version = 0;
    int r;

    if (!json_object_is_type(root, json_type_object)) {
        r = bad_type(e, dp, NULL, "the top level", "an object", root);
        goto out;
    }
    if (!json_object_object_get_ex(root, "version", &v) || !v) {
        r = bad_entry(e, dp, "no \"version\"");
        goto out;
    }
    if (!json_get_int64(root, "version", &version)) {
        r = bad_type(e, dp, NULL, "version", "an integer", v);
        goto out;
    }
    if (version != TOKENS_FORMAT_VERSION) {
        r = err_set(e, -EBADMSG,
                    "'%s' has format version %lld, but this mcp-auth reads version %d only: "
                    "use the mcp-auth that wrote it, or remove the file and log in again",
                    dp, (long long)version, TOKENS_FORMAT_VERSION);
        goto out;
    }

    t = calloc(1, sizeof(*t));
    if (!t) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    if ((r = read_str(root, NULL, "server_url", &t->server_url, dp, e)) < 0 ||
        (r = read_str(root, NULL, "issuer", &t->issuer, dp, e)) < 0 ||
        (r = read_int(root, NULL, "updated_at", &t->updated_at, dp, e)) < 0)
        goto out;
    if (!t->server_url || !*t->server_url) {
        r = bad_entry(e, dp, "no \"server_url\"");
        goto out;
    }
    if (!t->issuer || !*t->issuer) {
        r = bad_entry(e, dp, "no \"issuer\"");
        goto out;
    }

    if ((r = section_of(root, "registration", &reg, dp, e)) < 0 ||
        (r = section_of(root, "tokens", &tok, dp, e)) < 0 ||
        (r = section_of(root, "discovery", &disc, dp, e)) < 0)
        goto out;

    if ((r = read_str(reg, "registration", "method", &method, dp, e)) < 0 ||
        (r = read_str(reg, "registration", "client_id", &t->client_id, dp, e)) < 0 ||
        (r = read_str(reg, "registration", "client_secret", &t->client_secret, dp, e)) < 0 ||
        (r = read_str(reg, "registration", "token_endpoint_auth_method", &t->auth_method, dp, e)) <
            0 ||
        (r = read_str(reg, "registration", "redirect_uri", &t->redirect_uri, dp, e)) < 0 ||
        (r = read_int(reg, "registration", "client_secret_expires_at", &t->client_secret_expires_at,
                      dp, e)) < 0 ||
        (r = read_int(reg, "registration", "registered_at", &t->registered_at, dp, e)) < 0 ||
        (r = read_str(reg, "registration", "registration_client_uri", &t->registration_client_uri,
                      dp, e)) < 0 ||
        (r = read_str(reg, "registration", "registration_access_token",
                      &t->registration_access_token, dp, e)) < 0)
        goto out;
    if (method && registration_method_from_str(method, &t->registration) < 0) {
        char what[160];
        (void)snprintf(what, sizeof(what),
                       "unknown \"registration.method\" '%.40s' (expected dynamic, "
                       "pre-registered or metadata-document)",
                       method);
        r = bad_entry(e, dp, what);
        goto out;
    }

    if ((r = read_str(tok, "tokens", "access_token", &t->access_token, dp, e)) < 0 ||
        (r = read_str(tok, "tokens", "token_type", &t->token_type, dp, e)) < 0 ||
        (r = read_str(tok, "tokens", "refresh_token", &t->refresh_token, dp, e)) < 0 ||
        (r = read_str(tok, "tokens", "scope", &t->scope, dp, e)) < 0 ||
        (r = read_int(tok, "tokens", "expires_at", &t->expires_at, dp, e)) < 0 ||
        (r = read_int(tok, "tokens", "issued_at", &t->issued_at, dp, e)) < 0)
        goto out;

    if ((r = read_obj(disc, "discovery", "authorization_server_metadata", &t->as_metadata, dp, e)) <
            0 ||
        (r = read_obj(disc, "discovery", "protected_resource_metadata", &t->prm, dp, e)) < 0 ||
        (r = read_str(disc, "discovery", "resource_metadata_url", &t->resource_metadata_url, dp,
                      e)) < 0 ||
        (r = read_int(disc, "discovery", "fetched_at", &t->discovered_at, dp, e)) < 0)
        goto out;

    json_object_object_foreach(root, key, val)
    {
        if (is_known_key(key))
            continue;
        if (!t->extra && !(t->extra = json_object_new_object())) {
            r = err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
        if (json_object_object_add(t->extra, key, json_object_get(val)) < 0) {
            json_object_put(val);
            r = err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
    }

    *ret = t;
    t = NULL;
    r = 0;
out:
    free(method);
    token_entry_free(t);
    return r;
}

static int add_str(struct json_object *o, const char *key, const char *v)
{
    if (!v)
        return 0;
    struct json_object *s = json_object_new_string(v);
    if (!s || json_object_object_add(o, key, s) < 0) {
        if (s)
            secure_wipe((char *)json_object_get_string(s), strlen(v));
        json_object_put(s);
        return -ENOMEM;
    }
    return 0;
}

static int add_int(struct json_object *o, const char *key, int64_t v)
{
    if (v == 0)
        return 0;
    struct json_object *n = json_object_new_int64(v);
    if (!n || json_object_object_add(o, key, n) < 0) {
        json_object_put(n);
        return -ENOMEM;
    }
    return 0;
}

/* Adds obj (a new reference) under key; obj NULL is skipped. */
static int add_obj(struct json_object *o, const char *key, struct json_object *obj)
{
    if (!obj)
        return 0;
    if (json_object_object_add(o, key, json_object_get(obj)) < 0) {
        json_object_put(obj);
        return -ENOMEM;
    }
    return 0;
}

/* Adds section (a new reference) under key when it has members. */
static int add_section(struct json_object *root, const char *key, struct json_object *section)
{
    return json_object_object_length(section) > 0 ? add_obj(root, key, section) : 0;
}

/* The file's JSON for t, with updated_at. Caller wipes (wipe_json_secrets) and puts. */
static int entry_to_json(const struct token_entry *t, int64_t updated_at, struct json_object **ret)
{
    struct json_object *root = NULL, *reg = NULL, *tok = NULL, *disc = NULL;
    int r;

    root = json_object_new_object();
    reg = json_object_new_object();
    tok = json_object_new_object();
    disc = json_object_new_object();
    if (!root || !reg || !tok || !disc) {
        r = -ENOMEM;
        goto out;
    }
    struct json_object *ver = json_object_new_int(TOKENS_FORMAT_VERSION);
    if (!ver || json_object_object_add(root, "version", ver) < 0) {
        json_object_put(ver);
        r = -ENOMEM;
        goto out;
    }
    if ((r = add_str(root, "server_url", t->server_url)) < 0 ||
        (r = add_str(root, "issuer", t->issuer)) < 0)
        goto out;

    if ((t->registration != REGISTRATION_NONE &&
         (r = add_str(reg, "method", registration_method_str(t->registration))) < 0) ||
        (r = add_str(reg, "client_id", t->client_id)) < 0 ||
        (r = add_str(reg, "client_secret", t->client_secret)) < 0 ||
        (r = add_str(reg, "token_endpoint_auth_method", t->auth_method)) < 0 ||
        (r = add_str(reg, "redirect_uri", t->redirect_uri)) < 0 ||
        (r = add_int(reg, "client_secret_expires_at", t->client_secret_expires_at)) < 0 ||
        (r = add_int(reg, "registered_at", t->registered_at)) < 0 ||
        (r = add_str(reg, "registration_client_uri", t->registration_client_uri)) < 0 ||
        (r = add_str(reg, "registration_access_token", t->registration_access_token)) < 0)
        goto out;
    if ((r = add_str(tok, "access_token", t->access_token)) < 0 ||
        (r = add_str(tok, "token_type", t->token_type)) < 0 ||
        (r = add_str(tok, "refresh_token", t->refresh_token)) < 0 ||
        (r = add_str(tok, "scope", t->scope)) < 0 ||
        (r = add_int(tok, "expires_at", t->expires_at)) < 0 ||
        (r = add_int(tok, "issued_at", t->issued_at)) < 0)
        goto out;
    if ((r = add_obj(disc, "authorization_server_metadata", t->as_metadata)) < 0 ||
        (r = add_obj(disc, "protected_resource_metadata", t->prm)) < 0 ||
        (r = add_str(disc, "resource_metadata_url", t->resource_metadata_url)) < 0 ||
        (r = add_int(disc, "fetched_at", t->discovered_at)) < 0)
        goto out;
    if ((r = add_section(root, "registration", reg)) < 0 ||
        (r = add_section(root, "tokens", tok)) < 0 ||
        (r = add_section(root, "discovery", disc)) < 0 ||
        (r = add_int(root, "updated_at", updated_at)) < 0)
        goto out;

    if (t->extra && json_object_is_type(t->extra, json_type_object)) {
        json_object_object_foreach(t->extra, key, val)
        {
            if (is_known_key(key) || !val)
                continue;
            if ((r = add_obj(root, key, val)) < 0)
                goto out;
        }
    }
    *ret = root;
    root = NULL;
    r = 0;
out:
    if (r < 0) {
        /* the sections may not have reached root yet */
        wipe_json_string(reg, "client_secret");
        wipe_json_string(tok, "access_token");
        wipe_json_string(tok, "refresh_token");
    }
    json_object_put(root);
    json_object_put(reg);
    json_object_put(tok);
    json_object_put(disc);
    return r;
}

/* Reads and checks the entry file at path: private, valid, version 1, and named after its own
 * server_url and issuer. */
static int entry_read(const char *path, struct token_entry **ret, struct err *e)
{
    struct json_object *root = NULL;
    struct token_entry *t = NULL;
    char *disp = path_display(path);
    const char *dp = disp ? disp : path;
    char name[ENTRY_NAME_LEN + 1];
    int r;

    r = json_read_file(path, TOKENS_ENTRY_MAX, JSON_READ_SECRET, &root, e);
    if (r < 0)
        goto out;
    r = entry_from_json(root, dp, &t, e);
    if (r < 0)
        goto out;
    struct err ne = ERR_INIT;
    r = entry_name(t->server_url, t->issuer, name, &ne);
    if (r < 0) {
        r = bad_entry(e, dp, err_msg(&ne));
        goto out;
    }
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (strcmp(base, name) != 0) {
        /* copied or renamed by hand: using it could send its token to the wrong server */
        r = err_set(e, -EBADMSG,
                    "'%s' does not belong here: its server_url and issuer belong in '%s'; "
                    "remove it, or log in again",
                    dp, name);
        goto out;
    }
    *ret = t;
    t = NULL;
    r = 0;
out:
    if (root) {
        wipe_json_secrets(root);
        json_object_put(root);
    }
    token_entry_free(t);
    free(disp);
    return r;
}

/* ---- the store ---- */

static int no_entry(struct err *e)
{
    return err_set(e, -ENOENT, "no stored login for this server");
}

static int entry_cmp(const void *a, const void *b)
{
    const struct token_entry *x = *(const struct token_entry *const *)a;
    const struct token_entry *y = *(const struct token_entry *const *)b;
    int c = strcmp(x->server_url, y->server_url);
    return c ? c : strcmp(x->issuer, y->issuer);
}

static void entries_free(struct token_entry **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        token_entry_free(v[i]);
    free(v);
}

/* Every readable entry (server_url NULL) or those of server_url, sorted by server URL and
 * issuer. Unreadable ones are skipped; the last problem goes to *problem (which stays clear
 * when there is none). A missing store is empty. */
static int store_scan(const char *server_url, struct token_entry ***ret, size_t *ret_n,
                      struct err *problem, struct err *e)
{
    struct token_entry **v = NULL, *t = NULL;
    size_t n = 0, seen = 0;
    char *dir = NULL, *path = NULL, *ddisp = NULL;
    DIR *d = NULL;
    int fd = -1, r;

    r = tokens_dir(false, &dir, e);
    if (r < 0)
        goto out;
    ddisp = path_display(dir);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int k = errno;
        if (k == ENOENT)
            goto done;
        r = err_set(e, -k, "cannot read the directory '%s': %s", ddisp ? ddisp : dir, strerror(k));
        goto out;
    }
    d = fdopendir(fd);
    if (!d) {
        int k = errno;
        r = err_set(e, -k, "cannot read the directory '%s': %s", ddisp ? ddisp : dir, strerror(k));
        goto out;
    }
    fd = -1;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) {
                int k = errno;
                r = err_set(e, -k, "cannot read the directory '%s': %s", ddisp ? ddisp : dir,
                            strerror(k));
                goto out;
            }
            break;
        }
        if (!is_entry_name(de->d_name))
            continue; /* ".", "..", lock files, temporary files of an atomic write */
        if (++seen > TOKENS_SCAN_MAX) {
            r = err_set(e, -E2BIG, "'%s' holds more than %d entries: remove old ones",
                        ddisp ? ddisp : dir, TOKENS_SCAN_MAX);
            goto out;
        }
        free(path);
        path = path_join(dir, de->d_name);
        if (!path) {
            r = err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
        struct err pe = ERR_INIT;
        r = entry_read(path, &t, &pe);
        if (r == -ENOMEM) {
            r = err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
        if (r == -ENOENT)
            continue; /* deleted while we looked */
        if (r < 0) {
            if (problem)
                *problem = pe;
            continue;
        }
        if (server_url && strcmp(t->server_url, server_url) != 0) {
            token_entry_free(t);
            t = NULL;
            continue;
        }
        struct token_entry **nv = realloc(v, (n + 1) * sizeof(*nv));
        if (!nv) {
            r = err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
        v = nv;
        v[n++] = t;
        t = NULL;
    }
done:
    if (n > 1)
        qsort(v, n, sizeof(*v), entry_cmp);
    *ret = v;
    v = NULL;
    *ret_n = n;
    n = 0;
    r = 0;
out:
    token_entry_free(t);
    entries_free(v, n);
    if (d)
        (void)closedir(d);
    if (fd >= 0)
        (void)close(fd);
    free(path);
    free(ddisp);
    free(dir);
    return r;
}

int tokens_load(const char *server_url, const char *issuer, struct token_entry **ret, struct err *e)
{
    struct token_entry **v = NULL, *t = NULL;
    struct err problem = ERR_INIT;
    char *path = NULL;
    size_t n = 0;
    int r;

    if (!server_url || !*server_url) {
        r = err_set(e, -EINVAL, "no server URL for the token store");
        goto out;
    }
    if (issuer) {
        r = tokens_entry_path(server_url, issuer, &path, e);
        if (r < 0)
            goto out;
        r = entry_read(path, &t, e);
        if (r == -ENOENT)
            r = no_entry(e);
        if (r < 0)
            goto out;
        if (strcmp(t->server_url, server_url) != 0 || strcmp(t->issuer, issuer) != 0) {
            char *disp = path_display(path);
            r = err_set(e, -EBADMSG,
                        "'%s' does not belong here: it holds another server's entry; remove "
                        "it, or log in again",
                        disp ? disp : path);
            free(disp);
            goto out;
        }
    } else {
        r = store_scan(server_url, &v, &n, &problem, e);
        if (r < 0)
            goto out;
        if (n == 0) {
            /* an unreadable entry might have been this server's: saying "log in" could lead
             * to a new login replacing it, so say what is wrong instead */
            if (problem.code < 0)
                r = err_set(e, problem.code,
                            "%s (it may be this server's entry, so it was not skipped)",
                            problem.msg);
            else
                r = no_entry(e);
            goto out;
        }
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (v[i]->updated_at > v[best]->updated_at)
                best = i; /* ties: the first issuer in sort order */
        t = v[best];
        v[best] = NULL;
    }
    *ret = t;
    t = NULL;
    r = 0;
out:
    token_entry_free(t);
    entries_free(v, n);
    free(path);
    return r;
}

int tokens_save(struct token_entry *t, struct err *e)
{
    struct json_object *root = NULL;
    struct token_entry *old = NULL;
    char *path = NULL;
    int r;

    if (!t) {
        r = err_set(e, -EINVAL, "no token store entry to save");
        goto out;
    }
    r = entry_path(t->server_url, t->issuer, true, &path, e);
    if (r < 0)
        goto out;

    /* never replace a file we cannot read: it may be corrupt, newer, or someone else's */
    struct err oe = ERR_INIT;
    r = entry_read(path, &old, &oe);
    if (r < 0 && r != -ENOENT) {
        r = err_set(e, r, "%s; not replacing it", oe.msg);
        goto out;
    }

    int64_t now = now_unix();
    r = entry_to_json(t, now, &root);
    if (r < 0) {
        r = err_set(e, r, "out of memory");
        goto out;
    }
    r = json_write_file(path, root, 0600, e);
    if (r < 0)
        goto out;
    t->updated_at = now;
    r = 0;
out:
    if (root) {
        wipe_json_secrets(root);
        json_object_put(root);
    }
    token_entry_free(old);
    free(path);
    return r;
}

int tokens_delete(const char *server_url, const char *issuer, struct err *e)
{
    char *path = NULL, *disp = NULL;
    int r = tokens_entry_path(server_url, issuer, &path, e);
    if (r < 0)
        goto out;
    if (unlink(path) < 0) {
        int k = errno;
        if (k == ENOENT) {
            r = no_entry(e);
        } else {
            disp = path_display(path);
            r = err_set(e, -k, "cannot remove '%s': %s", disp ? disp : path, strerror(k));
        }
        goto out;
    }
    r = 0;
out:
    free(disp);
    free(path);
    return r;
}

int tokens_lock(const char *server_url, const char *issuer, int64_t timeout_ms,
                struct file_lock **ret, struct err *e)
{
    char *path = NULL, *lock = NULL;
    int r = entry_path(server_url, issuer, true, &path, e);
    if (r < 0)
        goto out;
    if (asprintf(&lock, "%s.lock", path) < 0) {
        lock = NULL;
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    r = file_lock_acquire(lock, timeout_ms, ret, e);
out:
    free(lock);
    free(path);
    return r;
}

int tokens_list(struct token_entry ***ret, size_t *ret_n, struct err *e)
{
    struct err problem = ERR_INIT;
    int r = store_scan(NULL, ret, ret_n, &problem, e);
    if (r < 0)
        return r;
    if (problem.code < 0 && e)
        *e = problem;
    return 0;
}
