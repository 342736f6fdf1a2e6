/* mcp_trust.c - the approvals of project entries: digest, store, check, approve, revoke. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/jsonfile.h"
#include "credkit/path.h"

#include "credkit/mcp_trust.h"

#define TRUST_MAX_BYTES    (4u * 1024u * 1024u)
#define CANON_MAX          (16u * 1024u * 1024u)
#define TRUST_LOCK_TIMEOUT 10000

struct trust_store {
    struct json_object *root; /* {"approvals": [...]}, checked */
};

/* ---- the digest -------------------------------------------------------------------------- */

static int canon_string(struct buf *out, const char *s, size_t n)
{
    int r = buf_append_char(out, '"');
    for (size_t i = 0; r >= 0 && i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            r = buf_printf(out, "\\%c", ch);
        else if (ch < 0x20)
            r = buf_printf(out, "\\u%04x", ch);
        else
            r = buf_append_char(out, (char)ch);
    }
    return r < 0 ? r : buf_append_char(out, '"');
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* v as canonical JSON: object keys sorted (byte order), no blanks, strings escaped only where
 * JSON requires it; numbers and booleans as json-c writes them. */
static int canon(struct buf *out, struct json_object *v, int depth)
{
    if (depth > 64)
        return -E2BIG;
    switch (json_object_get_type(v)) {
    case json_type_null:
        return buf_append_str(out, "null");
    case json_type_string:
        return canon_string(out, json_object_get_string(v), (size_t)json_object_get_string_len(v));
    case json_type_array: {
        int r = buf_append_char(out, '[');
        for (size_t i = 0; r >= 0 && i < json_object_array_length(v); i++) {
            if (i)
                r = buf_append_char(out, ',');
            if (r >= 0)
                r = canon(out, json_object_array_get_idx(v, i), depth + 1);
        }
        return r < 0 ? r : buf_append_char(out, ']');
    }
    case json_type_object: {
        size_t n = (size_t)json_object_object_length(v), k = 0;
        const char **keys = calloc(n ? n : 1, sizeof(*keys));
        if (!keys)
            return -ENOMEM;
        json_object_object_foreach(v, key, val)
        {
            (void)val;
            keys[k++] = key;
        }
        qsort(keys, n, sizeof(*keys), key_cmp);
        int r = buf_append_char(out, '{');
        for (size_t i = 0; r >= 0 && i < n; i++) {
            struct json_object *m = NULL;
            (void)json_object_object_get_ex(v, keys[i], &m);
            if (i)
                r = buf_append_char(out, ',');
            if (r >= 0)
                r = canon_string(out, keys[i], strlen(keys[i]));
            if (r >= 0)
                r = buf_append_char(out, ':');
            if (r >= 0)
                r = canon(out, m, depth + 1);
        }
        free(keys);
        return r < 0 ? r : buf_append_char(out, '}');
    }
    default:
        return buf_append_str(out, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    }
}

int trust_digest(const char *name, const char *path, struct json_object *entry, char hex[TRUST_HEX])
{
    struct buf b;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    int r;

    /* each part with its length: no two different (name, path) pairs read the same */
    buf_init_secret(&b, CANON_MAX);
    r = buf_printf(&b, "mcp-bridge trust 1\n%zu:%s\n%zu:%s\n", strlen(name), name, strlen(path),
                   path);
    if (r >= 0)
        r = canon(&b, entry, 0);
    if (r >= 0 && (EVP_Digest(b.data, b.len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32))
        r = -EIO;
    buf_release(&b);
    if (r < 0)
        return r;
    for (unsigned i = 0; i < mdlen; i++)
        (void)snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* ---- the store --------------------------------------------------------------------------- */

static int default_path(const char *path, char **ret, struct err *e)
{
    if (path)
        return (*ret = strdup(path)) ? 0 : err_set(e, -ENOMEM, "out of memory");
    return path_agent_file(TRUST_FILE, ret, e);
}

/* Whether one approval is of the expected shape. */
static bool approval_valid(struct json_object *a)
{
    return json_object_is_type(a, json_type_object) && json_get_string(a, "project") &&
           json_get_string(a, "file") && json_get_string(a, "server") &&
           json_get_string(a, "sha256");
}

/* The approvals of doc, checked: every element an approval. NULL when doc is not the shape. */
static struct json_object *approvals_of(struct json_object *doc)
{
    struct json_object *a = json_get_array(doc, "approvals");
    for (size_t i = 0; a && i < json_object_array_length(a); i++)
        if (!approval_valid(json_object_array_get_idx(a, i)))
            return NULL;
    return a;
}

int trust_store_load(const char *path, struct trust_store **ret, struct err *e)
{
    struct trust_store *t = calloc(1, sizeof(*t));
    char *p = NULL;
    int r;

    if (!t)
        return err_set(e, -ENOMEM, "out of memory");
    r = default_path(path, &p, e);
    if (r < 0)
        goto out;
    /* secret: refused when others may read it, or when it is not ours (who could write it could
     * approve anything) */
    r = json_read_file(p, TRUST_MAX_BYTES, JSON_READ_SECRET, &t->root, e);
    if (r == -ENOENT) {
        r = 0;
        t->root = NULL;
    } else if (r >= 0 && !approvals_of(t->root)) {
        char *d = path_display(p);
        r = err_set(e, -EBADMSG,
                    "'%s' is not a list of approvals (\"approvals\": [{\"project\", \"file\", "
                    "\"server\", \"sha256\"}])",
                    d ? d : p);
        free(d);
    }
    if (r < 0)
        goto out;
    *ret = t;
    t = NULL;
out:
    free(p);
    trust_store_free(t);
    return r;
}

void trust_store_free(struct trust_store *t)
{
    if (!t)
        return;
    json_object_put(t->root);
    free(t);
}

int trust_check(void *userdata, const char *name, const char *path, struct json_object *entry)
{
    struct trust_store *t = userdata;
    struct json_object *a = t ? approvals_of(t->root) : NULL;
    bool known = false;
    char hex[TRUST_HEX];

    if (!a)
        return MCP_TRUST_UNTRUSTED;
    int r = trust_digest(name, path, entry, hex);
    if (r == -ENOMEM)
        return r;
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        struct json_object *o = json_object_array_get_idx(a, i);
        if (strcmp(json_get_string(o, "file"), path) != 0 ||
            strcmp(json_get_string(o, "server"), name) != 0)
            continue;
        if (r >= 0 && strcmp(json_get_string(o, "sha256"), hex) == 0)
            return MCP_TRUST_APPROVED;
        known = true;
    }
    return known ? MCP_TRUST_CHANGED : MCP_TRUST_UNTRUSTED;
}

/* ---- changing it ------------------------------------------------------------------------- */

struct edit {
    const char *project;
    const struct trust_approval *a;
    size_t n;
    bool revoke;
    size_t removed;
};

static int oom(struct err *e)
{
    return err_set(e, -ENOMEM, "out of memory");
}

/* A new array of the approvals of doc that are kept. */
static int edit_doc(struct json_object *doc, void *userdata, struct err *e)
{
    struct edit *x = userdata;
    if (!json_object_is_type(doc, json_type_object))
        return err_set(e, -EBADMSG, "the approvals file's root is not an object: remove it");
    struct json_object *old = json_get_array(doc, "approvals");
    if (json_object_object_length(doc) > 0 && (!old || !approvals_of(doc)))
        return err_set(e, -EBADMSG, "the approvals file is not a list of approvals: remove it");
    struct json_object *keep = json_object_new_array();
    if (!keep)
        return oom(e);
    for (size_t i = 0; old && i < json_object_array_length(old); i++) {
        struct json_object *o = json_object_array_get_idx(old, i);
        bool drop = false;
        if (x->revoke) {
            drop = strcmp(json_get_string(o, "project"), x->project) == 0;
        } else {
            for (size_t k = 0; !drop && k < x->n; k++)
                drop = strcmp(json_get_string(o, "file"), x->a[k].file) == 0 &&
                       strcmp(json_get_string(o, "server"), x->a[k].server) == 0;
        }
        x->removed += drop;
        if (!drop && json_object_array_add(keep, json_object_get(o)) < 0) {
            json_object_put(keep);
            return oom(e);
        }
    }
    int64_t now = (int64_t)time(NULL);
    for (size_t k = 0; !x->revoke && k < x->n; k++) {
        struct json_object *o = json_object_new_object();
        if (!o || json_object_object_add(o, "project", json_object_new_string(x->project)) < 0 ||
            json_object_object_add(o, "file", json_object_new_string(x->a[k].file)) < 0 ||
            json_object_object_add(o, "server", json_object_new_string(x->a[k].server)) < 0 ||
            json_object_object_add(o, "sha256", json_object_new_string(x->a[k].digest)) < 0 ||
            json_object_object_add(o, "approvedAt", json_object_new_int64(now)) < 0 ||
            json_object_array_add(keep, o) < 0) {
            json_object_put(o);
            json_object_put(keep);
            return oom(e);
        }
    }
    if (json_object_object_add(doc, "version", json_object_new_int(1)) < 0 ||
        json_object_object_add(doc, "approvals", keep) < 0)
        return oom(e);
    return 0;
}

static int edit_store(const char *path, struct edit *x, struct err *e)
{
    char *p = NULL, *lock = NULL;
    int r = default_path(path, &p, e);
    if (r < 0)
        return r;
    if (asprintf(&lock, "%s.lock", p) < 0) {
        free(p);
        return oom(e);
    }
    const struct jsonfile_opts o = {
        .lock_path = lock,
        .lock_holder = "mcp-bridge trust",
        .lock_timeout_ms = TRUST_LOCK_TIMEOUT,
        .max_size = TRUST_MAX_BYTES,
        .mode = 0600,
        .flags = JSONFILE_CREATE | JSONFILE_SECRET | JSONFILE_MKDIR | JSONFILE_PRIVATE_DIR,
    };
    r = jsonfile_edit(p, &o, edit_doc, x, e);
    free(lock);
    free(p);
    return r < 0 ? r : 0;
}

int trust_approve(const char *path, const char *project, const struct trust_approval *a, size_t n,
                  struct err *e)
{
    struct edit x = {.project = project, .a = a, .n = n};
    return edit_store(path, &x, e);
}

int trust_revoke(const char *path, const char *project, size_t *ret_n, struct err *e)
{
    struct edit x = {.project = project, .revoke = true};
    int r = edit_store(path, &x, e);
    if (r >= 0)
        *ret_n = x.removed;
    return r;
}
