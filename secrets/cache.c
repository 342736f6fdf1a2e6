/* cache.c - TTL cache of command results in the user's runtime directory */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "credkit/file.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/util.h"

#include "cache.h"

#define CACHE_VALUE_MAX (1024 * 1024 + 64)

struct cache {
    char *dir;
};

void cache_free(struct cache *c)
{
    if (!c)
        return;
    free(c->dir);
    free(c);
}

/* an entry (64 hex digits; anything else is left alone) that has expired */
static bool entry_expired(const char *name, const struct stat *st, void *now)
{
    return strlen(name) == 64 && S_ISREG(st->st_mode) && st->st_mtime <= *(int64_t *)now;
}

int cache_open(struct cache **ret)
{
    const char *rt = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    *ret = NULL;
    /* only a private directory of our own will do: anything else means no cache */
    struct statfs sf;
    if (!rt || rt[0] != '/' || stat(rt, &st) < 0 || !S_ISDIR(st.st_mode) ||
        file_check_private(rt, NULL) < 0)
        return 0;
    /* values are never written to persistent storage: memory-backed filesystems only */
    if (statfs(rt, &sf) < 0 || (sf.f_type != TMPFS_MAGIC && sf.f_type != RAMFS_MAGIC))
        return 0;
    struct cache *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->dir = path_join(rt, "credkit-secrets");
    if (!c->dir) {
        free(c);
        return -ENOMEM;
    }
    if (dir_ensure(c->dir, 0700, NULL) < 0) {
        cache_free(c);
        return 0;
    }
    int64_t now = now_unix();
    dir_sweep(c->dir, entry_expired, &now);
    *ret = c;
    return 0;
}

int cache_lookup(struct cache *c, const char *key, int64_t now, struct buf *out,
                 int64_t *ret_expires_at)
{
    struct buf raw;
    int64_t expires_at;
    int r;
    if (!c)
        return -ENOENT;
    char *path = path_join(c->dir, key);
    if (!path)
        return -ENOMEM;
    buf_init_secret(&raw, CACHE_VALUE_MAX);
    r = file_read(path, FILE_SECRET, &raw, NULL);
    if (r < 0)
        goto out;
    /* "<expires_at>\n<value>" */
    char *nl = memchr(raw.data, '\n', raw.len);
    if (!nl) {
        r = -EBADMSG;
        goto out;
    }
    *nl = 0;
    r = parse_int64(raw.data, &expires_at);
    if (r < 0) {
        r = -EBADMSG; /* junk or out of range alike: a corrupt entry, removed below */
        goto out;
    }
    if (expires_at <= now) {
        r = -ENOENT;
        goto out;
    }
    size_t off = (size_t)(nl + 1 - raw.data);
    r = buf_append(out, raw.data + off, raw.len - off);
    if (r < 0)
        goto out;
    *ret_expires_at = expires_at;
    r = 0;
out:
    if (r == -EBADMSG || r == -EINVAL)
        (void)unlink(path);
    if (r < 0 && r != -ENOMEM)
        r = -ENOENT;
    buf_release(&raw);
    free(path);
    return r;
}

int cache_store(struct cache *c, const char *key, const char *value, size_t len, int64_t expires_at)
{
    struct buf raw;
    int r;
    if (!c)
        return 0;
    char *path = path_join(c->dir, key);
    if (!path)
        return -ENOMEM;
    buf_init_secret(&raw, CACHE_VALUE_MAX);
    r = buf_printf(&raw, "%lld\n", (long long)expires_at);
    if (r >= 0)
        r = buf_append(&raw, value, len);
    if (r >= 0)
        r = file_write_atomic(path, raw.data, raw.len, 0600, NULL);
    if (r >= 0) {
        /* the mtime is the expiry: sweeping needs no read */
        struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = (time_t)expires_at}};
        (void)utimensat(AT_FDCWD, path, ts, 0);
    }
    buf_release(&raw);
    free(path);
    return r;
}

void cache_drop(struct cache *c, const char *key)
{
    if (!c)
        return;
    char *path = path_join(c->dir, key);
    if (path)
        (void)unlink(path);
    free(path);
}

int cache_lock(struct cache *c, const char *key, int64_t timeout_ms, struct file_lock **ret,
               struct err *e)
{
    char *path = NULL;
    int r;
    *ret = NULL;
    if (!c)
        return 0;
    if (asprintf(&path, "%s/%s.lock", c->dir, key) < 0)
        return -ENOMEM;
    r = file_lock_acquire(path, timeout_ms, ret, e);
    free(path);
    return r;
}
