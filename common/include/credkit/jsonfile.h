/* jsonfile.h - changing a JSON file in place: lock, read, modify, replace.
 *
 * One read-modify-write of a JSON document that other processes change too (an mcp.json, the
 * secrets.json of recipes): the lock is taken before the file is read and held until the
 * jsonfile is freed, so two writers never lose each other's change. The document is replaced
 * atomically (json_write_file(): two-space indent, trailing newline), so a failed write leaves
 * the old file intact; a document that the change left as it was is not rewritten at all.
 *
 * Open it with jsonfile_open(), change jsonfile_doc() in place, jsonfile_commit(), then
 * jsonfile_free() (which releases the lock); or hand the change to jsonfile_edit() as a
 * callback. The lock is a lock file of its own (secrets.json.lock) or, without one, the
 * directory that holds the file (nothing is left behind in a project directory). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/json.h"
#include "credkit/macro.h"

enum jsonfile_flags {
    JSONFILE_CREATE = 1 << 0,         /* a missing file reads as {}; it is written if changed */
    JSONFILE_SECRET = 1 << 1,         /* refused when group/other can read it (with the chmod) */
    JSONFILE_KEEP_MODE = 1 << 2,      /* an existing file keeps its permissions (else: mode) */
    JSONFILE_FOLLOW_SYMLINK = 1 << 3, /* a symlink's target is replaced, not the link itself */
    JSONFILE_MKDIR = 1 << 4,          /* a missing directory is created, 0700 */
    JSONFILE_PRIVATE_DIR = 1 << 5,    /* the directory is made 0700: created, or chmod'ed down */
    JSONFILE_ALWAYS_WRITE = 1 << 6,   /* commit writes an unchanged document too (when the
                                       * write is part of a larger transaction that must fail
                                       * as a whole if the file cannot be written) */
    JSONFILE_DUPLICATES = 1 << 7,     /* find the keys given twice in the text read
                                       * (jsonfile_duplicates()); while there are any,
                                       * jsonfile_commit() refuses to write (-ENOTUNIQ) */
};

struct jsonfile_opts {
    const char *lock_path;   /* the lock file (created 0600); NULL: the directory is locked */
    const char *lock_holder; /* who holds a directory lock, for the message when it times out
                              * ("mcp-bridge add or remove"); NULL: "another process" */
    int64_t lock_timeout_ms;
    size_t max_size; /* the largest file read (-E2BIG beyond it) and written (-EFBIG) */
    mode_t mode;     /* the permissions written (exactly: no umask), and a new file's */
    unsigned flags;  /* enum jsonfile_flags */
};

struct jsonfile;

/* Locks and reads path. Errors, with a message naming the file: the lock's (-ETIMEDOUT when
 * it is held too long), json_read_file()'s (-ENOENT without JSONFILE_CREATE, -EBADMSG with
 * line and column, -E2BIG, -EACCES), dir_ensure()'s. The document may be any JSON value:
 * checking its shape is the caller's. Caller frees with jsonfile_free(). */
int jsonfile_open(const char *path, const struct jsonfile_opts *o, struct jsonfile **ret,
                  struct err *e) _must_check_;

/* The document, to change in place. Borrowed: valid until the free. */
struct json_object *jsonfile_doc(struct jsonfile *f);

/* The path as given to jsonfile_open(), with ~ for $HOME, for messages. Borrowed. */
const char *jsonfile_display(const struct jsonfile *f);

/* With JSONFILE_DUPLICATES: the keys given twice in one object of the file as read (see
 * json_find_duplicates()), their number and *ret (borrowed, valid until the free; NULL when
 * none). Without the flag: 0. */
size_t jsonfile_duplicates(const struct jsonfile *f, const struct json_dup **ret);

/* Writes the document when it differs from what was read (or last committed), or always with
 * JSONFILE_ALWAYS_WRITE: 1 written, 0 unchanged (nothing touched), or file_write_atomic()'s
 * error, the old file then intact. A document that would be larger than max_size (the file's
 * readers refuse such a file) is not written: -EFBIG, "cannot write '<path>': it would be N
 * bytes, more than the M bytes it may hold ...", the old file intact. With JSONFILE_DUPLICATES
 * and keys given twice in the file, nothing is written either: -ENOTUNIQ, naming the first key
 * and its lines (the document keeps one of each; writing it would drop the others). */
int jsonfile_commit(struct jsonfile *f, struct err *e) _must_check_;

/* Releases the lock and frees, without writing. NULL-safe. */
void jsonfile_free(struct jsonfile *f);

/* The change jsonfile_edit() makes: < 0 (with e set) to give up, nothing then written. */
typedef int (*jsonfile_edit_fn)(struct json_object *doc, void *userdata, struct err *e);

/* Open, fn, commit and free in one: 1 written, 0 unchanged, or the first error (fn's own, or
 * one of jsonfile_open() and jsonfile_commit()). */
int jsonfile_edit(const char *path, const struct jsonfile_opts *o, jsonfile_edit_fn fn,
                  void *userdata, struct err *e) _must_check_;
