/* file.h - files that matter: atomic replace, private permissions, locks.
 *
 * A file holding secrets is 0600 in a 0700 directory, is replaced atomically (temporary file
 * in the same directory, fsync, rename, fsync of the directory) so that a crash or a full disk
 * never leaves it half-written, and is refused on read when group or others could read it,
 * with the chmod that fixes it; a secret file that is a symbolic link is refused, naming where
 * it points (a chmod would change the target, and its permissions are not the link's). Locks
 * are advisory, per file, work across processes, are always taken with a timeout, and their
 * files are never opened through a symbolic link. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "credkit/buf.h"
#include "credkit/err.h"
#include "credkit/macro.h"

enum file_read_flags {
    FILE_SECRET = 1 << 0, /* refuse when group/other have any access (say the chmod), or when
                           * path itself is a symbolic link (-ELOOP, naming its target) */
};

/* Appends the whole file to out (which keeps its own max; -E2BIG with a message beyond it).
 * Without FILE_SECRET symlinks are followed; with it, a path whose last component is a symlink
 * is refused with -ELOOP: "'<path>' is a symbolic link to '<target>': ... replace the link by
 * the file itself" (links among the directories above are followed). Anything but a regular
 * file is refused (-EISDIR, -EINVAL), a FIFO without waiting. -ENOENT when missing, -EACCES
 * with "chmod 600 '<path>'" advice when FILE_SECRET and the mode is too open or the file is not
 * ours. Messages name the display path. On failure out is as it was (the part read is wiped if
 * out is secret). */
int file_read(const char *path, unsigned flags, struct buf *out, struct err *e) _must_check_;

/* Replaces path with data atomically and durably, with exactly the given mode (no umask). On
 * failure the old file is intact and no temporary file is left behind, with one exception: if
 * flushing the directory fails after the rename, the new content is in place (not yet durable)
 * and the error says so. A symlink at path is replaced, not followed.
 *
 * The temporary is ".<base>.<pid>.XXXXXX" beside path (base cut to 200 bytes). A writer killed
 * mid-write (kill -9, power loss) leaves its temporary behind, a full copy of what it wrote:
 * every call first removes those of the same path whose writer's process no longer exists
 * (and those of the older naming ".<base>.XXXXXX" older than 10 minutes), our own regular
 * files only; a live writer's temporary is never touched. (A directory shared with writers
 * whose pids this process cannot see - another machine over NFS, another PID namespace - cannot
 * tell such a writer from a dead one: its temporary may go, and its rename then fails with a
 * clear error, the old file intact. Write such files under a lock all writers take, as
 * jsonfile does: the sweep then runs while no other writer can be mid-write.) */
int file_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                      struct err *e) _must_check_;

struct stat;

/* Removes each entry of dir for which stale(name, its lstat, ctx) is true: the sweep of what
 * writers left behind. Best effort: an unreadable directory or an entry that cannot be removed
 * is left as it is. */
void dir_sweep(const char *dir, bool (*stale)(const char *name, const struct stat *st, void *ctx),
               void *ctx);

/* Creates dir and missing parents. The last component gets exactly `mode` when created (0700
 * for private directories); an existing last component that is more open than `mode` is
 * chmod'ed down when we own it, else -EACCES with advice. Parents are created 0700 (minus the
 * umask). -ENOTDIR when something in the way is not a directory. */
int dir_ensure(const char *dir, mode_t mode, struct err *e) _must_check_;

/* Checks that path (an existing file or directory, links followed) has no group/other
 * permission bits and is owned by us. -EACCES with advice otherwise, -ENOENT when missing. */
int file_check_private(const char *path, struct err *e) _must_check_;

/* Checks that only we (or root) can change what path says: path (links followed) and the
 * directory holding it are owned by us or root and not writable by group or others (a directory
 * with the sticky bit, such as /tmp, protects the files of others). For files whose content is
 * acted on, such as a configuration that names commands to run. -EPERM with the reason and the
 * chmod or chown that fixes it; -ENOENT when missing; other -errno when it cannot be checked. */
int file_check_owner_only_writes(const char *path, struct err *e) _must_check_;

struct file_lock;

/* Takes an exclusive advisory lock on lock_path (created 0600 if missing), waiting at most
 * timeout_ms. -ETIMEDOUT with a message naming the file when it cannot. A lock_path that is a
 * symbolic link is refused (-ELOOP, naming its target, "remove the link"), never followed. On
 * a read-only filesystem an existing lock file is opened read-only and locked all the same (so
 * that the caller's write fails with the real reason, EROFS). The lock is released by
 * file_lock_release() or when the process exits. Caller releases. */
int file_lock_acquire(const char *lock_path, int64_t timeout_ms, struct file_lock **ret,
                      struct err *e) _must_check_;

/* The same lock on the directory dir itself (flock on the directory, polled until timeout_ms):
 * no lock file is left behind (a project's directory, an agent's), and a read-only directory
 * can still be locked (the write then fails with the real reason). -ETIMEDOUT: "another
 * <holder> is changing a file in '<dir>' ... try again" (holder NULL: "process"). Caller
 * releases with file_lock_release(). */
int file_lock_dir(const char *dir, int64_t timeout_ms, const char *holder, struct file_lock **ret,
                  struct err *e) _must_check_;

/* Releases and frees. NULL-safe. */
void file_lock_release(struct file_lock *l);
