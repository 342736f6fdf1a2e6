/* test_watch.c - changes to files seen through their directories: a write, a rename onto the
 * name (atomic writers), a removal, a file whose directories do not exist yet; a burst reported
 * once; files not in the set ignored */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/loop.h"
#include "core/watch.h"
#include "tests.h"
#include "loop_wait.h"

#define SETTLE_MS 50

struct ctx {
    int calls;
};

static void on_change(void *userdata)
{
    ((struct ctx *)userdata)->calls++;
}

static bool called(void *userdata)
{
    return ((struct ctx *)userdata)->calls > 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Runs the loop until the callback ran (bounded: 5 s when one is expected, else well past the
 * settle time), then a little longer: a second call of the same burst would come within the
 * settle time. The calls seen. */
static int settle(struct loop *l, struct ctx *c, int expected)
{
    (void)wait_for(l, called, c, expected ? 5000 : 10 * SETTLE_MS);
    struct ctx never = {0};
    (void)wait_for(l, called, &never, 4 * SETTLE_MS);
    int n = c->calls;
    c->calls = 0;
    return n;
}

static void test_watch(void)
{
    struct loop *l = NULL;
    struct watch *w = NULL;
    struct ctx c = {0};
    char dir[PATH_MAX + 16], file[PATH_MAX + 64], other[PATH_MAX + 64], tmp[PATH_MAX + 64],
        deep[PATH_MAX + 64];
    snprintf(dir, sizeof(dir), "%s/watched", tests_tmpdir());
    snprintf(file, sizeof(file), "%s/mcp.json", dir);
    snprintf(other, sizeof(other), "%s/unrelated.json", dir);
    snprintf(tmp, sizeof(tmp), "%s/.mcp.json.tmp", dir);
    snprintf(deep, sizeof(deep), "%s/a/b/mcp.json", dir);
    CHECK_INT(mkdir(dir, 0700), 0);
    write_file(file, "{}");

    CHECK_INT(loop_new(&l), 0);
    CHECK_INT(watch_new(l, SETTLE_MS, on_change, &c, &w), 0);
    const char *paths[] = {file, deep};
    CHECK_INT(watch_set(w, paths, 2), 0);

    /* a burst of writes: one call */
    write_file(file, "{\"a\": 1}");
    write_file(file, "{\"a\": 2}");
    write_file(file, "{\"a\": 3}");
    CHECK_INT(settle(l, &c, 1), 1);

    /* another file of the directory: nothing */
    write_file(other, "{}");
    CHECK_INT(settle(l, &c, 0), 0);

    /* written beside and renamed over, as atomic writers do: seen */
    write_file(tmp, "{\"b\": 1}");
    CHECK_INT(rename(tmp, file), 0);
    CHECK_INT(settle(l, &c, 1), 1);

    /* removed: seen */
    CHECK_INT(unlink(file), 0);
    CHECK_INT(settle(l, &c, 1), 1);

    /* a file whose directories do not exist: its first directory appearing is a change; set
     * again, the watch goes down to the next, and the file itself is seen at last */
    char a[PATH_MAX + 64], b[PATH_MAX + 64];
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/a/b", dir);
    CHECK_INT(mkdir(a, 0700), 0);
    CHECK_INT(settle(l, &c, 1), 1);
    CHECK_INT(watch_set(w, paths, 2), 0);
    CHECK_INT(mkdir(b, 0700), 0);
    CHECK_INT(settle(l, &c, 1), 1);
    CHECK_INT(watch_set(w, paths, 2), 0);
    write_file(deep, "{}");
    CHECK_INT(settle(l, &c, 1), 1);

    /* an empty set: nothing is seen any more */
    CHECK_INT(watch_set(w, NULL, 0), 0);
    write_file(deep, "{\"c\": 1}");
    CHECK_INT(settle(l, &c, 0), 0);

    watch_free(w);
    loop_free(l);
}

TESTS_MAIN(test_watch)
