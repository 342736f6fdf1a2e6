/* watch.c - changes to a set of files, through inotify on their directories (watch.h) */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/strv.h"

#include "core/loop.h"
#include "core/watch.h"

#define WATCH_EVENTS                                                                               \
    (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_DELETE_SELF |       \
     IN_MOVE_SELF | IN_ATTRIB)

/* One watched directory and the names in it that matter. */
struct watch_dir {
    int wd;
    char *dir;
    struct strv names;
};

struct watch {
    struct loop *loop;
    int fd;
    struct loop_io *io;
    struct loop_timer *settle;
    int64_t settle_ms;
    watch_fn fn;
    void *userdata;
    struct watch_dir *dirs;
    size_t n_dirs;
};

static void drop_dirs(struct watch *w)
{
    for (size_t i = 0; i < w->n_dirs; i++) {
        if (w->dirs[i].wd >= 0)
            (void)inotify_rm_watch(w->fd, w->dirs[i].wd);
        free(w->dirs[i].dir);
        strv_release(&w->dirs[i].names);
    }
    free(w->dirs);
    w->dirs = NULL;
    w->n_dirs = 0;
}

static void on_settled(struct loop_timer *t, void *userdata)
{
    struct watch *w = userdata;
    (void)t;
    w->fn(w->userdata);
}

/* A change: (re)starts the settle time. Without a timer (none could be made), at once. */
static void changed(struct watch *w)
{
    if (w->settle)
        loop_timer_rearm(w->settle, w->settle_ms);
    else if (loop_timer_add(w->loop, w->settle_ms, on_settled, w, &w->settle) < 0)
        w->fn(w->userdata);
}

static bool matters(const struct watch *w, int wd, const char *name)
{
    for (size_t i = 0; i < w->n_dirs; i++)
        if (w->dirs[i].wd == wd)
            return !name || !*name || strv_contains(&w->dirs[i].names, name);
    return false;
}

static void on_events(struct loop_io *io, int fd, unsigned events, void *userdata)
{
    struct watch *w = userdata;
    /* aligned as inotify(7) asks */
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    (void)io;
    (void)events;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            return; /* EAGAIN: all read */
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)(void *)p;
            if ((ev->mask & IN_Q_OVERFLOW) ||
                ((ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) &&
                 matters(w, ev->wd, NULL)) ||
                matters(w, ev->wd, ev->len ? ev->name : ""))
                changed(w);
            p += sizeof(*ev) + ev->len;
        }
    }
}

int watch_new(struct loop *l, int64_t settle_ms, watch_fn fn, void *userdata, struct watch **ret)
{
    struct watch *w = calloc(1, sizeof(*w));
    int r;
    if (!w)
        return -ENOMEM;
    w->loop = l;
    w->settle_ms = settle_ms;
    w->fn = fn;
    w->userdata = userdata;
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0) {
        r = -errno;
        free(w);
        return r;
    }
    r = loop_io_add(l, w->fd, LOOP_READ, on_events, w, &w->io);
    if (r < 0) {
        watch_free(w);
        return r;
    }
    *ret = w;
    return 0;
}

/* The directory to watch for path, and the name in it: path's own directory when it exists,
 * else the nearest ancestor that does, for the next component down. */
static int where(const char *path, char **ret_dir, char **ret_name)
{
    char *dir = strdup(path);
    char *name = NULL;
    struct stat st;
    if (!dir)
        return -ENOMEM;
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) {
            /* "/" itself, or a relative path: watch the root for the first component */
            free(name);
            name = strdup(slash ? slash + 1 : dir);
            if (slash)
                slash[1] = '\0';
            break;
        }
        free(name);
        if (!(name = strdup(slash + 1)))
            break;
        *slash = '\0';
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
            break;
    }
    if (!name) {
        free(dir);
        return -ENOMEM;
    }
    *ret_dir = dir;
    *ret_name = name;
    return 0;
}

static struct watch_dir *find_dir(struct watch *w, const char *dir)
{
    for (size_t i = 0; i < w->n_dirs; i++)
        if (strcmp(w->dirs[i].dir, dir) == 0)
            return &w->dirs[i];
    return NULL;
}

int watch_set(struct watch *w, const char *const *paths, size_t n)
{
    int skipped = 0;
    drop_dirs(w);
    for (size_t i = 0; i < n; i++) {
        char *dir = NULL, *name = NULL;
        if (where(paths[i], &dir, &name) < 0)
            return -ENOMEM;
        struct watch_dir *d = find_dir(w, dir);
        if (!d) {
            int wd = inotify_add_watch(w->fd, dir, WATCH_EVENTS | IN_ONLYDIR);
            if (wd < 0) {
                skipped++;
                free(dir);
                free(name);
                continue;
            }
            struct watch_dir *v = realloc(w->dirs, (w->n_dirs + 1) * sizeof(*v));
            if (!v) {
                (void)inotify_rm_watch(w->fd, wd);
                free(dir);
                free(name);
                return -ENOMEM;
            }
            w->dirs = v;
            d = &w->dirs[w->n_dirs++];
            *d = (struct watch_dir){.wd = wd, .dir = dir, .names = STRV_INIT};
            dir = NULL;
            /* two paths may share a wd when they name one directory twice (a link) */
        }
        free(dir);
        int r = strv_contains(&d->names, name) ? 0 : strv_push(&d->names, name);
        free(name);
        if (r < 0)
            return -ENOMEM;
    }
    return skipped;
}

void watch_free(struct watch *w)
{
    if (!w)
        return;
    drop_dirs(w);
    loop_timer_cancel(w->settle);
    loop_io_remove(w->io);
    if (w->fd >= 0)
        (void)close(w->fd);
    free(w);
}
