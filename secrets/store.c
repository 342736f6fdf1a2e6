/* store.c - secrets.json: load, look up, change, save */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/file.h"
#include "credkit/hashmap.h"
#include "credkit/json.h"
#include "credkit/path.h"

#include "store.h"

struct store_entry {
    char *name;
    struct recipe *recipe; /* NULL when the entry did not parse */
    struct err err;        /* why it did not parse */
};

/* A key given twice in the file, as it concerns an entry. */
struct store_dup {
    char *name;    /* the entry's name (or a "$" key): the top-level key it is under */
    char *key;     /* the key given twice inside the entry's recipe; NULL: the name itself */
    unsigned line; /* its second occurrence */
    unsigned first;
};

struct store {
    char *path;
    struct json_object *root;
    struct store_entry *entries;
    size_t n;
    struct hashmap *index; /* name -> entry: lookups do not walk the entries */
    struct store_dup *dups;
    size_t ndups;
};

static void entries_clear(struct store *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->entries[i].name);
        recipe_free(s->entries[i].recipe);
    }
    free(s->entries);
    s->entries = NULL;
    s->n = 0;
    hashmap_free(s->index);
    s->index = NULL;
}

static void dups_clear(struct store *s)
{
    for (size_t i = 0; i < s->ndups; i++) {
        free(s->dups[i].name);
        free(s->dups[i].key);
    }
    free(s->dups);
    s->dups = NULL;
    s->ndups = 0;
}

/* An entry with a key given twice does not resolve: json-c kept one of them without a word,
 * and which one the user meant is theirs to say. The first duplicate of each entry is named. */
static void dups_apply(struct store *s)
{
    for (size_t i = 0; i < s->ndups; i++) {
        const struct store_dup *d = &s->dups[i];
        struct store_entry *en = hashmap_get(s->index, d->name);
        if (!en || !en->recipe)
            continue;
        recipe_free(en->recipe);
        en->recipe = NULL;
        if (d->key)
            (void)err_set(&en->err, -EINVAL,
                          "'%s': \"%s\" is given twice in its recipe (lines %u and %u): remove "
                          "one",
                          d->name, d->key, d->first, d->line);
        else
            (void)err_set(&en->err, -EINVAL,
                          "'%s' is given more than once (lines %u and %u): only one recipe may "
                          "have a name, so it does not resolve until the others are removed",
                          d->name, d->first, d->line);
    }
}

static int entries_build(struct store *s)
{
    size_t n = 0, i = 0;
    entries_clear(s);
    json_object_object_foreach(s->root, k0, v0)
    {
        (void)v0;
        if (k0[0] != '$')
            n++;
    }
    if (n == 0)
        return 0;
    s->entries = calloc(n, sizeof(*s->entries));
    s->index = hashmap_new();
    if (!s->entries || !s->index)
        return -ENOMEM;
    json_object_object_foreach(s->root, key, val)
    {
        if (key[0] == '$')
            continue;
        struct store_entry *en = &s->entries[i++];
        s->n = i;
        en->name = strdup(key);
        if (!en->name)
            return -ENOMEM;
        int r = recipe_parse(key, val, &en->recipe, &en->err);
        if (r == -ENOMEM)
            return r;
        r = hashmap_put(s->index, key, en);
        if (r < 0)
            return r;
    }
    dups_apply(s);
    return 0;
}

void store_free(struct store *s)
{
    if (!s)
        return;
    entries_clear(s);
    dups_clear(s);
    /* literal recipes hold their values in the tree, which json-c frees unwiped. A tree given to
     * store_from_json() is wiped too: the store is freed once its document is written */
    json_wipe_strings(s->root);
    json_object_put(s->root);
    free(s->path);
    free(s);
}

int store_from_json(const char *path, struct json_object *root, struct store **ret, struct err *e)
{
    struct store *s = NULL;
    int r;
    if (!json_object_is_type(root, json_type_object)) {
        char *disp = path_display(path);
        r = err_set(e, -EBADMSG,
                    "'%s': the top level must be an object mapping names to recipes, not %s",
                    disp ? disp : path, json_type_desc(json_object_get_type(root)));
        free(disp);
        return r;
    }
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->root = json_object_get(root);
    s->path = strdup(path);
    r = s->path ? entries_build(s) : -ENOMEM;
    if (r < 0) {
        store_free(s);
        return r;
    }
    *ret = s;
    return 0;
}

int store_set_duplicates(struct store *s, const struct json_dup *d, size_t n)
{
    dups_clear(s);
    if (n == 0)
        return 0;
    s->dups = calloc(n, sizeof(*s->dups));
    if (!s->dups)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct store_dup *sd = &s->dups[s->ndups++];
        const char *name = d[i].npath ? d[i].path[0] : d[i].key;
        sd->line = d[i].line;
        sd->first = d[i].first;
        sd->name = strdup(name);
        if (d[i].npath)
            sd->key = strdup(d[i].key);
        if (!sd->name || (d[i].npath && !sd->key))
            return -ENOMEM;
    }
    return entries_build(s);
}

int store_duplicates_error(const struct store *s, struct err *e)
{
    if (s->ndups == 0)
        return 0;
    const struct store_dup *d = &s->dups[0];
    char *disp = path_display(s->path);
    char more[64] = "";
    if (s->ndups > 1)
        (void)snprintf(more, sizeof(more), " (and %zu more)", s->ndups - 1);
    int r;
    if (d->key)
        r = err_set(e, -ENOTUNIQ,
                    "'%s' has keys given twice: \"%s\" in '%s' on lines %u and %u%s; a rewrite "
                    "would keep only one of each, so it is not changed: remove the extra ones by "
                    "hand",
                    disp ? disp : s->path, d->key, d->name, d->first, d->line, more);
    else
        r = err_set(e, -ENOTUNIQ,
                    "'%s' has keys given twice: '%s' on lines %u and %u%s; a rewrite would keep "
                    "only one of each, so it is not changed: remove the extra ones by hand",
                    disp ? disp : s->path, d->name, d->first, d->line, more);
    free(disp);
    return r;
}

int store_load(const char *path, struct store **ret, struct err *e)
{
    struct json_object *root = NULL;
    struct json_dup *dups = NULL;
    struct store *s = NULL;
    size_t ndups = 0;
    int r = json_read_file_dups(path, STORE_MAX_SIZE, JSON_READ_SECRET, &root, &dups, &ndups, e);
    if (r == -ENOENT) {
        err_clear(e);
        root = json_object_new_object();
        r = root ? 0 : -ENOMEM;
    }
    if (r < 0)
        goto out;
    r = store_from_json(path, root, &s, e);
    if (r >= 0)
        r = store_set_duplicates(s, dups, ndups);
    if (r < 0)
        goto out;
    *ret = s;
    s = NULL;
out:
    store_free(s);
    json_dups_free(dups, ndups);
    json_object_put(root);
    return r;
}

const char *store_path(const struct store *s)
{
    return s->path;
}

size_t store_count(const struct store *s)
{
    return s->n;
}

const char *store_name(const struct store *s, size_t i)
{
    return i < s->n ? s->entries[i].name : NULL;
}

int store_get(struct store *s, const char *name, const struct recipe **ret, struct err *e)
{
    const struct store_entry *en = s->index ? hashmap_get(s->index, name) : NULL;
    if (!en)
        return -ENOENT;
    if (!en->recipe) {
        char *disp = path_display(s->path);
        int r = err_set(e, en->err.code ? en->err.code : -EINVAL, "'%s': %s", disp ? disp : s->path,
                        err_msg(&en->err));
        free(disp);
        return r;
    }
    *ret = en->recipe;
    return 0;
}

/* The recipe under name, with a reference of the caller's, or NULL. */
static struct json_object *take_old(struct store *s, const char *name)
{
    struct json_object *old = NULL;
    return json_object_object_get_ex(s->root, name, &old) ? json_object_get(old) : NULL;
}

/* A replaced or removed recipe may be a literal value: wiped before json-c frees it. */
static void drop_old(struct json_object *old)
{
    if (!old)
        return;
    json_wipe_strings(old);
    json_object_put(old);
}

int store_set(struct store *s, const struct recipe *r)
{
    struct json_object *v = recipe_to_json(r);
    if (!v)
        return -ENOMEM;
    struct json_object *old = take_old(s, r->name);
    if (json_object_object_add(s->root, r->name, v) != 0) {
        json_object_put(old); /* still in the document: not wiped */
        json_object_put(v);
        return -ENOMEM;
    }
    int k = entries_build(s);
    drop_old(old);
    return k;
}

int store_remove(struct store *s, const char *name)
{
    struct json_object *old = take_old(s, name);
    if (!old)
        return -ENOENT;
    json_object_object_del(s->root, name);
    int k = entries_build(s);
    drop_old(old);
    return k;
}

int store_save(struct store *s, struct err *e)
{
    char *dir = path_dirname(s->path);
    int r;
    if (!dir)
        return -ENOMEM;
    r = dir_ensure(dir, 0700, e);
    free(dir);
    if (r < 0)
        return r;
    return json_write_file(s->path, s->root, 0600, e);
}

char *store_lock_path(const char *path)
{
    char *lock = NULL;
    return asprintf(&lock, "%s.lock", path) < 0 ? NULL : lock;
}

int store_lock(const char *path, struct file_lock **ret, struct err *e)
{
    char *dir = path_dirname(path), *lock = NULL;
    int r;
    if (!dir)
        return -ENOMEM;
    r = dir_ensure(dir, 0700, e);
    if (r < 0)
        goto out;
    lock = store_lock_path(path);
    if (!lock) {
        r = -ENOMEM;
        goto out;
    }
    r = file_lock_acquire(lock, STORE_LOCK_TIMEOUT_MS, ret, e);
out:
    free(dir);
    free(lock);
    return r;
}
