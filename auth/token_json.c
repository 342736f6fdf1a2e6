/* token_json.c - an entry of the token store as JSON, and back: format version 1 (tokens.c
 * describes it), checked member by member with messages naming the file */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"
#include "credkit/secmem.h"

#include "token_json.h"

static const char *const known_keys[] = {"version",   "server_url",   "issuer",
                                         "label",     "registration", "tokens",
                                         "discovery", "updated_at",   "keyring"};

/* Every secret member of an entry, by section: what the keyring backend keeps out of the file
 * and what is wiped before a tree is released. A member added to the format that holds a secret
 * goes here, and nowhere else ("dpop_key": the private key a DPoP-bound grant proves with). */
static const struct {
    const char *section, *key;
} secret_members[] = {
    {"registration", "client_secret"},
    {"registration", "registration_access_token"},
    {"tokens", "access_token"},
    {"tokens", "refresh_token"},
    {"tokens", "id_token"},
    {"tokens", "dpop_key"},
};

static bool is_known_key(const char *k)
{
    for (size_t i = 0; i < ELEMENTSOF(known_keys); i++)
        if (strcmp(k, known_keys[i]) == 0)
            return true;
    return false;
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

/* Wipes json-c's copy of section[key] when it is a string. */
static void wipe_json_string(struct json_object *section, const char *key)
{
    struct json_object *v = NULL;
    if (section && json_object_object_get_ex(section, key, &v) &&
        json_object_is_type(v, json_type_string))
        secure_wipe((char *)json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

/* Wipes the secret members of the sections reg and tok (either may be NULL). */
static void wipe_sections(struct json_object *reg, struct json_object *tok)
{
    for (size_t i = 0; i < ELEMENTSOF(secret_members); i++)
        wipe_json_string(strcmp(secret_members[i].section, "tokens") == 0 ? tok : reg,
                         secret_members[i].key);
}

void token_json_wipe_secrets(struct json_object *root)
{
    wipe_sections(json_get_object(root, "registration"), json_get_object(root, "tokens"));
}

bool token_json_has_secrets(struct json_object *root)
{
    for (size_t i = 0; i < ELEMENTSOF(secret_members); i++) {
        struct json_object *sec = json_get_object(root, secret_members[i].section);
        if (sec && json_object_object_get_ex(sec, secret_members[i].key, NULL))
            return true;
    }
    return false;
}

/* section of root, created when create and absent; NULL when absent (or out of memory). */
static struct json_object *section_get(struct json_object *root, const char *key, bool create)
{
    struct json_object *sec = json_get_object(root, key);
    if (sec || !create)
        return sec;
    sec = json_object_new_object();
    if (sec && json_object_object_add(root, key, sec) < 0) {
        json_object_put(sec);
        sec = NULL;
    }
    return sec;
}

int token_json_take_secrets(struct json_object *root, struct json_object **ret)
{
    struct json_object *out = json_object_new_object();
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < ELEMENTSOF(secret_members); i++) {
        const char *sname = secret_members[i].section, *key = secret_members[i].key;
        struct json_object *sec = json_get_object(root, sname), *v = NULL;
        if (!sec || !json_object_object_get_ex(sec, key, &v))
            continue;
        struct json_object *dst = section_get(out, sname, true);
        /* the value moves (one reference more, then the old tree's dropped): nothing to wipe */
        if (!dst || json_object_object_add(dst, key, json_object_get(v)) < 0) {
            json_object_put(v);
            token_json_wipe_secrets(out);
            json_object_put(out);
            return -ENOMEM;
        }
        json_object_object_del(sec, key);
        if (json_object_object_length(sec) == 0)
            json_object_object_del(root, sname);
    }
    *ret = out;
    return 0;
}

void token_json_drop_secrets(struct json_object *root)
{
    token_json_wipe_secrets(root);
    for (size_t i = 0; i < ELEMENTSOF(secret_members); i++) {
        struct json_object *sec = json_get_object(root, secret_members[i].section);
        if (sec)
            json_object_object_del(sec, secret_members[i].key);
    }
}

int token_json_put_secrets(struct json_object *root, struct json_object *secrets)
{
    token_json_drop_secrets(root);
    for (size_t i = 0; i < ELEMENTSOF(secret_members); i++) {
        const char *sname = secret_members[i].section, *key = secret_members[i].key;
        struct json_object *src = json_get_object(secrets, sname), *v = NULL;
        if (!src || !json_object_object_get_ex(src, key, &v) ||
            !json_object_is_type(v, json_type_string))
            continue;
        struct json_object *dst = section_get(root, sname, true);
        struct json_object *c =
            json_object_new_string_len(json_object_get_string(v), json_object_get_string_len(v));
        if (!dst || !c || json_object_object_add(dst, key, c) < 0) {
            if (c)
                secure_wipe((char *)json_object_get_string(c),
                            (size_t)json_object_get_string_len(c));
            json_object_put(c);
            return -ENOMEM;
        }
    }
    return 0;
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

/* The top level is an object of this format version. */
static int check_version(struct json_object *root, const char *dp, struct err *e)
{
    struct json_object *v = NULL;
    int64_t version = 0;
    if (!json_object_is_type(root, json_type_object))
        return bad_type(e, dp, NULL, "the top level", "an object", root);
    if (!json_object_object_get_ex(root, "version", &v) || !v)
        return bad_entry(e, dp, "no \"version\"");
    if (!json_get_int64(root, "version", &version))
        return bad_type(e, dp, NULL, "version", "an integer", v);
    if (version != TOKENS_FORMAT_VERSION)
        return err_set(e, -EBADMSG,
                       "'%s' has format version %lld, but this mcp-auth reads version %d only: "
                       "use the mcp-auth that wrote it, or remove the file and log in again",
                       dp, (long long)version, TOKENS_FORMAT_VERSION);
    return 0;
}

static int read_registration(struct json_object *reg, struct token_entry *t, const char *dp,
                             struct err *e)
{
    static const char sec[] = "registration";
    char *method = NULL;
    int r = read_str(reg, sec, "method", &method, dp, e);
    if (r >= 0)
        r = read_str(reg, sec, "client_id", &t->client_id, dp, e);
    if (r >= 0)
        r = read_str(reg, sec, "client_secret", &t->client_secret, dp, e);
    if (r >= 0)
        r = read_str(reg, sec, "token_endpoint_auth_method", &t->auth_method, dp, e);
    if (r >= 0)
        r = read_str(reg, sec, "redirect_uri", &t->redirect_uri, dp, e);
    if (r >= 0)
        r = read_int(reg, sec, "client_secret_expires_at", &t->client_secret_expires_at, dp, e);
    if (r >= 0)
        r = read_int(reg, sec, "registered_at", &t->registered_at, dp, e);
    if (r >= 0)
        r = read_str(reg, sec, "registration_client_uri", &t->registration_client_uri, dp, e);
    if (r >= 0)
        r = read_str(reg, sec, "registration_access_token", &t->registration_access_token, dp, e);
    if (r >= 0 && method && registration_method_from_str(method, &t->registration) < 0) {
        char what[160];
        (void)snprintf(what, sizeof(what),
                       "unknown \"registration.method\" '%.40s' (expected dynamic, "
                       "pre-registered or metadata-document)",
                       method);
        r = bad_entry(e, dp, what);
    }
    free(method);
    return r;
}

static int read_tokens(struct json_object *tok, struct token_entry *t, const char *dp,
                       struct err *e)
{
    static const char sec[] = "tokens";
    int r = read_str(tok, sec, "access_token", &t->access_token, dp, e);
    if (r >= 0)
        r = read_str(tok, sec, "token_type", &t->token_type, dp, e);
    if (r >= 0)
        r = read_str(tok, sec, "refresh_token", &t->refresh_token, dp, e);
    if (r >= 0)
        r = read_str(tok, sec, "dpop_key", &t->dpop_key, dp, e);
    if (r >= 0)
        r = read_str(tok, sec, "scope", &t->scope, dp, e);
    if (r >= 0)
        r = read_str(tok, sec, "account", &t->account, dp, e);
    if (r >= 0)
        r = read_int(tok, sec, "expires_at", &t->expires_at, dp, e);
    if (r >= 0)
        r = read_int(tok, sec, "issued_at", &t->issued_at, dp, e);
    return r;
}

static int read_discovery(struct json_object *disc, struct token_entry *t, const char *dp,
                          struct err *e)
{
    static const char sec[] = "discovery";
    int r = read_obj(disc, sec, "authorization_server_metadata", &t->as_metadata, dp, e);
    if (r >= 0)
        r = read_obj(disc, sec, "protected_resource_metadata", &t->prm, dp, e);
    if (r >= 0)
        r = read_str(disc, sec, "resource_metadata_url", &t->resource_metadata_url, dp, e);
    if (r >= 0)
        r = read_int(disc, sec, "fetched_at", &t->discovered_at, dp, e);
    return r;
}

/* Unknown top-level keys, kept to be written back. */
static int keep_extra(struct json_object *root, struct token_entry *t, struct err *e)
{
    json_object_object_foreach(root, key, val)
    {
        if (is_known_key(key))
            continue;
        if (!t->extra && !(t->extra = json_object_new_object()))
            return err_set(e, -ENOMEM, "out of memory");
        if (json_object_object_add(t->extra, key, json_object_get(val)) < 0) {
            json_object_put(val);
            return err_set(e, -ENOMEM, "out of memory");
        }
    }
    return 0;
}

int token_entry_from_json(struct json_object *root, const char *dp, struct token_entry **ret,
                          struct err *e)
{
    struct token_entry *t = NULL;
    struct json_object *reg = NULL, *tok = NULL, *disc = NULL;
    int r = check_version(root, dp, e);
    if (r < 0)
        goto out;
    t = calloc(1, sizeof(*t));
    if (!t) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    r = read_str(root, NULL, "server_url", &t->server_url, dp, e);
    if (r >= 0)
        r = read_str(root, NULL, "issuer", &t->issuer, dp, e);
    if (r >= 0)
        r = read_str(root, NULL, "label", &t->label, dp, e);
    if (r >= 0)
        r = read_int(root, NULL, "updated_at", &t->updated_at, dp, e);
    if (r < 0)
        goto out;
    if (!t->server_url || !*t->server_url) {
        r = bad_entry(e, dp, "no \"server_url\"");
        goto out;
    }
    if (!t->issuer || !*t->issuer) {
        r = bad_entry(e, dp, "no \"issuer\"");
        goto out;
    }
    r = section_of(root, "registration", &reg, dp, e);
    if (r >= 0)
        r = section_of(root, "tokens", &tok, dp, e);
    if (r >= 0)
        r = section_of(root, "discovery", &disc, dp, e);
    if (r >= 0)
        r = read_registration(reg, t, dp, e);
    if (r >= 0)
        r = read_tokens(tok, t, dp, e);
    if (r >= 0)
        r = read_discovery(disc, t, dp, e);
    if (r >= 0)
        r = keep_extra(root, t, e);
    if (r < 0)
        goto out;
    *ret = t;
    t = NULL;
    r = 0;
out:
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

static int registration_to_json(const struct token_entry *t, struct json_object *reg)
{
    int r = 0;
    if (t->registration != REGISTRATION_NONE)
        r = add_str(reg, "method", registration_method_str(t->registration));
    if (r >= 0)
        r = add_str(reg, "client_id", t->client_id);
    if (r >= 0)
        r = add_str(reg, "client_secret", t->client_secret);
    if (r >= 0)
        r = add_str(reg, "token_endpoint_auth_method", t->auth_method);
    if (r >= 0)
        r = add_str(reg, "redirect_uri", t->redirect_uri);
    if (r >= 0)
        r = add_int(reg, "client_secret_expires_at", t->client_secret_expires_at);
    if (r >= 0)
        r = add_int(reg, "registered_at", t->registered_at);
    if (r >= 0)
        r = add_str(reg, "registration_client_uri", t->registration_client_uri);
    if (r >= 0)
        r = add_str(reg, "registration_access_token", t->registration_access_token);
    return r;
}

static int tokens_to_json(const struct token_entry *t, struct json_object *tok)
{
    int r = add_str(tok, "access_token", t->access_token);
    if (r >= 0)
        r = add_str(tok, "token_type", t->token_type);
    if (r >= 0)
        r = add_str(tok, "refresh_token", t->refresh_token);
    if (r >= 0)
        r = add_str(tok, "dpop_key", t->dpop_key);
    if (r >= 0)
        r = add_str(tok, "scope", t->scope);
    if (r >= 0)
        r = add_str(tok, "account", t->account);
    if (r >= 0)
        r = add_int(tok, "expires_at", t->expires_at);
    if (r >= 0)
        r = add_int(tok, "issued_at", t->issued_at);
    return r;
}

static int discovery_to_json(const struct token_entry *t, struct json_object *disc)
{
    int r = add_obj(disc, "authorization_server_metadata", t->as_metadata);
    if (r >= 0)
        r = add_obj(disc, "protected_resource_metadata", t->prm);
    if (r >= 0)
        r = add_str(disc, "resource_metadata_url", t->resource_metadata_url);
    if (r >= 0)
        r = add_int(disc, "fetched_at", t->discovered_at);
    return r;
}

/* The file's JSON for t, with updated_at. Caller wipes (token_json_wipe_secrets) and puts. */
int token_entry_to_json(const struct token_entry *t, int64_t updated_at, struct json_object **ret)
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
    r = add_str(root, "server_url", t->server_url);
    if (r >= 0)
        r = add_str(root, "issuer", t->issuer);
    if (r >= 0)
        r = add_str(root, "label", t->label); /* absent for the default account */
    if (r < 0)
        goto out;

    r = registration_to_json(t, reg);
    if (r >= 0)
        r = tokens_to_json(t, tok);
    if (r >= 0)
        r = discovery_to_json(t, disc);
    if (r < 0)
        goto out;
    r = add_section(root, "registration", reg);
    if (r >= 0)
        r = add_section(root, "tokens", tok);
    if (r >= 0)
        r = add_section(root, "discovery", disc);
    if (r >= 0)
        r = add_int(root, "updated_at", updated_at);
    if (r < 0)
        goto out;

    if (t->extra && json_object_is_type(t->extra, json_type_object)) {
        json_object_object_foreach(t->extra, key, val)
        {
            if (is_known_key(key) || !val)
                continue;
            r = add_obj(root, key, val);
            if (r < 0)
                goto out;
        }
    }
    *ret = root;
    root = NULL;
    r = 0;
out:
    if (r < 0) {
        /* the sections may not have reached root yet */
        wipe_sections(reg, tok);
    }
    json_object_put(root);
    json_object_put(reg);
    json_object_put(tok);
    json_object_put(disc);
    return r;
}
