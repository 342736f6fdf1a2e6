/* jsonfile.c - one locked read-modify-write of a JSON file */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/jsonfile.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/util.h"

#define SERIAL_FLAGS                                                                               \
    (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

struct jsonfile {
    char *path;    /* what is replaced: a followed symlink's target */
    char *display; /* the path as given, for messages */
    struct json_object *doc;
    char *snapshot; /* the document as last read or written, serialised: "unchanged" is equal */
    size_t snapshot_len;
    mode_t mode;
    size_t max_size; /* what its readers accept: never written bigger */
    bool always_write;
    struct json_dup *dups; /* with JSONFILE_DUPLICATES: the keys given twice, as read */
    size_t ndups;
    struct file_lock *lock; /* the lock file, or the locked directory; NULL */
};

void jsonfile_free(struct jsonfile *f)
{
    if (!f)
        return;
    json_object_put(f->doc);
    json_dups_free(f->dups, f->ndups);
    if (f->snapshot)
        secure_free_len(f->snapshot, f->snapshot_len);
    file_lock_release(f->lock);
    free(f->path);
    free(f->display);
    free(f);
}

/* The document as json_write_file() writes it, minus the newline. Caller frees with
 * secure_free_len(): a secret file's document may hold secrets. */
static int serialize(struct json_object *doc, char **ret, size_t *ret_len)
{
    size_t n = 0;
    const char *s = json_object_to_json_string_length(doc, SERIAL_FLAGS, &n);
    if (!s)
        return -ENOMEM;
    char *copy = malloc(n + 1);
    if (copy) {
        memcpy(copy, s, n + 1);
    }
    /* json-c keeps the text in doc's print buffer: wipe it, as json_write_file() does */
    if (doc)
        secure_wipe((char *)s, n);
    if (!copy)
        return -ENOMEM;
    *ret = copy;
    *ret_len = n;
    return 0;
}

/* The directory made ready (created, or made private, as the flags say), then the lock. */
static int take_lock(struct jsonfile *f, const struct jsonfile_opts *o, struct err *e)
{
    struct stat st;
    char *dir = path_dirname(f->path);
    int r;
    if (!dir)
        return err_set(e, -ENOMEM, "out of memory");
    if ((o->flags & JSONFILE_PRIVATE_DIR) ||
        ((o->flags & JSONFILE_MKDIR) && stat(dir, &st) < 0 && errno == ENOENT)) {
        r = dir_ensure(dir, 0700, e);
        if (r < 0)
            goto out;
    }
    if (o->lock_path)
        r = file_lock_acquire(o->lock_path, o->lock_timeout_ms, &f->lock, e);
    else
        r = file_lock_dir(dir, o->lock_timeout_ms, o->lock_holder, &f->lock, e);
out:
    free(dir);
    return r;
}

/* Reads the document: {} for a missing file with JSONFILE_CREATE. */
static int read_doc(struct jsonfile *f, const struct jsonfile_opts *o, struct err *e)
{
    struct err le = ERR_INIT;
    struct stat st;
    unsigned rf = (o->flags & JSONFILE_SECRET) ? JSON_READ_SECRET : 0;
    int r = (o->flags & JSONFILE_DUPLICATES)
                ? json_read_file_dups(f->path, o->max_size, rf, &f->doc, &f->dups, &f->ndups, &le)
                : json_read_file(f->path, o->max_size, rf, &f->doc, &le);
    f->mode = o->mode;
    if (r == -ENOENT && (o->flags & JSONFILE_CREATE)) {
        f->doc = json_object_new_object();
        return f->doc ? 0 : err_set(e, -ENOMEM, "out of memory");
    }
    if (r < 0)
        return err_set(e, r, "%s", err_msg(&le));
    /* a file whose mode cannot be read keeps none of it: private is the safe guess */
    if (o->flags & JSONFILE_KEEP_MODE)
        f->mode = stat(f->path, &st) == 0 ? st.st_mode & 07777 : 0600;
    return 0;
}

int jsonfile_open(const char *path, const struct jsonfile_opts *o, struct jsonfile **ret,
                  struct err *e)
{
    struct jsonfile *f = calloc(1, sizeof(*f));
    struct stat st;
    int r;

    if (!f)
        return err_set(e, -ENOMEM, "out of memory");
    f->always_write = o->flags & JSONFILE_ALWAYS_WRITE;
    f->max_size = o->max_size;
    f->path = strdup(path);
    f->display = path_display(path);
    if (!f->path || !f->display) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    /* a symlinked file (dotfiles) stays a symlink: its target is what gets replaced */
    if ((o->flags & JSONFILE_FOLLOW_SYMLINK) && lstat(f->path, &st) == 0 && S_ISLNK(st.st_mode)) {
        char *real = realpath(f->path, NULL);
        if (real) {
            free(f->path);
            f->path = real;
        }
    }
    r = take_lock(f, o, e);
    if (r < 0)
        goto out;
    r = read_doc(f, o, e);
    if (r < 0)
        goto out;
    r = serialize(f->doc, &f->snapshot, &f->snapshot_len);
    if (r < 0) {
        r = err_set(e, r, "out of memory");
        goto out;
    }
    *ret = f;
    f = NULL;
    r = 0;
out:
    jsonfile_free(f);
    return r;
}

struct json_object *jsonfile_doc(struct jsonfile *f)
{
    return f->doc;
}

const char *jsonfile_display(const struct jsonfile *f)
{
    return f->display;
}

size_t jsonfile_duplicates(const struct jsonfile *f, const struct json_dup **ret)
{
    *ret = f->dups;
    return f->ndups;
}

int jsonfile_commit(struct jsonfile *f, struct err *e)
{
    char *now = NULL;
    size_t len = 0;
    int r = serialize(f->doc, &now, &len);
    if (r < 0)
        return err_set(e, r, "out of memory");
    if (!f->always_write && len == f->snapshot_len && memcmp(now, f->snapshot, len) == 0) {
        secure_free_len(now, len);
        return 0;
    }
    /* the document holds one of each key given twice: writing it would drop the others */
    if (f->ndups > 0) {
        const struct json_dup *d = &f->dups[0];
        secure_free_len(now, len);
        return err_set(e, -ENOTUNIQ,
                       "cannot write '%s': \"%s\" is given twice (lines %u and %u), and a rewrite "
                       "would keep only one: remove the extra one by hand first; it was left as it "
                       "was",
                       f->display, d->key, d->first, d->line);
    }
    /* a file its own reader refuses would stop every command that reads it: refused here, the
     * old file left as it was (json_write_file() adds the newline) */
    if (f->max_size > 0 && len + 1 > f->max_size) {
        secure_free_len(now, len);
        return err_set(e, -EFBIG,
                       "cannot write '%s': it would be %zu bytes, more than the %zu bytes it may "
                       "hold (the limit its readers enforce); it was left as it was",
                       f->display, len + 1, f->max_size);
    }
    r = json_write_file(f->path, f->doc, f->mode, e);
    if (r < 0) {
        secure_free_len(now, len);
        return r;
    }
    secure_free_len(f->snapshot, f->snapshot_len);
    f->snapshot = now;
    f->snapshot_len = len;
    return 1;
}

int jsonfile_edit(const char *path, const struct jsonfile_opts *o, jsonfile_edit_fn fn,
                  void *userdata, struct err *e)
{
    struct jsonfile *f = NULL;
    int r = jsonfile_open(path, o, &f, e);
    if (r < 0)
        return r;
    r = fn(f->doc, userdata, e);
    if (r >= 0)
        r = jsonfile_commit(f, e);
    jsonfile_free(f);
    return r;
}
