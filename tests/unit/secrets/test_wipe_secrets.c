/* test_wipe_secrets.c - resolved values are wiped when released, and resolving (store, recipe,
 * command, file, cache, redaction) frees no copy of a value unwiped: each test fails when its
 * wipe is removed (wipewatch.h shows the bytes at free) */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/path.h"
#include "credkit/redact.h"

#include "cache.h"
#include "resolve.h"
#include "store.h"
#include "tests.h"
#include "wipewatch.h"

#define MARK "CANARY-51e0a7d3c2"
/* longer than the strings around it, so that a scratch buffer would keep its tail */
#define MARK4 MARK MARK MARK MARK

static char runtime_dir[] = "/dev/shm/credkit-unit-wipe-XXXXXX";
static char *agent_dir, *store_file;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(p);
    return 0;
}

static void add_str(struct json_object *o, const char *k, const char *v)
{
    CHECK_INT(json_object_object_add(o, k, json_object_new_string(v)), 0);
}

static void write_store(void)
{
    struct json_object *root = json_object_new_object(), *cmd = json_object_new_object();
    struct err e = ERR_INIT;
    char *file = path_join(agent_dir, "token.txt");
    char *recipe = NULL;
    CHECK(root && cmd && file);
    CHECK_INT(dir_ensure(agent_dir, 0700, &e), 0);
    CHECK_INT(file_write_atomic(file, "file-" MARK4 "\n", strlen("file-" MARK4 "\n"), 0600, &e), 0);
    CHECK(asprintf(&recipe, "file:%s", file) > 0);
    /* a literal recipe's value sits in secrets.json itself: the store keeps json-c's tree of it */
    add_str(root, "LIT", "literal:lit-" MARK4);
    add_str(root, "FILE", recipe);
    add_str(root, "ENVR", "env:UNIT_WIPE_VAR");
    /* the command's text must not hold the mark its output does */
    add_str(cmd, "command",
            "printf cmd-; for i in 1 2 3 4; do printf 'CANARY-%s' 51e0a7d3c2; done; echo");
    add_str(cmd, "ttl", "1h");
    CHECK_INT(json_object_object_add(root, "CMD", cmd), 0);
    CHECK_INT(json_write_file(store_file, root, 0600, &e), 0);
    /* the test's own copy too: a block it freed unwiped, reused and freed again by the code
     * under test, would be counted against that code */
    json_wipe_strings(root);
    json_object_put(root);
    free(recipe);
    free(file);
}

static void test_watch_sees_unwiped(void)
{
    wipewatch_reset();
    char *s = strdup(MARK4);
    size_t w = wipewatch_add(s, sizeof(MARK4));
    wipewatch_scan(MARK);
    wipewatch_plain_free(s);
    wipewatch_scan(NULL);
    CHECK(wipewatch_freed(w) && !wipewatch_wiped(w));
    CHECK_INT(wipewatch_found(), 1);
    /* the block left unwiped on purpose goes back to the allocator holding the mark: the next
     * allocation of its size gets it back, and is scrubbed, so that a later, unrelated block
     * reusing it is not counted against the code under test */
    char *again = malloc(sizeof(MARK4));
    if (again) {
        explicit_bzero(again, sizeof(MARK4));
        free(again);
    }
}

static void test_resolved_release(void)
{
    wipewatch_reset();
    struct resolved res = {.value = strdup("value-" MARK4), .source = "literal"};
    res.len = strlen(res.value);
    size_t w = wipewatch_add(res.value, res.len + 1);
    resolved_release(&res);
    CHECK(wipewatch_wiped(w));
    CHECK(res.value == NULL && res.len == 0);
    resolved_release(NULL);
}

static void resolve_each(struct resolver *rs, size_t *watched, size_t *n)
{
    static const char *const names[] = {"LIT", "FILE", "ENVR", "CMD", "CMD"}; /* CMD: cached */
    for (size_t i = 0; i < ELEMENTSOF(names); i++) {
        struct resolved res = {0};
        struct err e = ERR_INIT;
        CHECK_INT(resolver_get(rs, names[i], &res, &e), 0);
        CHECK(res.value && strstr(res.value, MARK4));
        if (res.value)
            watched[(*n)++] = wipewatch_add(res.value, res.len + 1);
        resolved_release(&res);
    }
}

/* Every source, from loading the store to freeing the resolver: the values are wiped where
 * they are released, and no block freed on the way still holds one. */
static void test_resolve_leaves_no_copy(void)
{
    struct store *store = NULL;
    struct cache *cache = NULL;
    struct redact *redact = redact_new();
    struct resolver *rs = NULL;
    struct err e = ERR_INIT;
    size_t watched[16], n = 0;

    write_store();
    CHECK_INT(setenv("UNIT_WIPE_VAR", "env-" MARK4, 1), 0);
    wipewatch_reset();
    wipewatch_scan(MARK);
    CHECK_INT(store_load(store_file, &store, &e), 0);
    CHECK_INT(cache_open(&cache), 0);
    CHECK(store && cache && redact);
    if (!store || !cache || !redact)
        return;
    CHECK_INT(resolver_new(store, cache, redact, agent_dir, 0, &rs), 0);
    resolve_each(rs, watched, &n);
    resolver_free(rs);
    /* a second resolver: the command's value now comes from the cache */
    CHECK_INT(resolver_new(store, cache, redact, agent_dir, 0, &rs), 0);
    resolve_each(rs, watched, &n);
    resolver_free(rs);
    redact_free(redact);
    cache_free(cache);
    store_free(store);
    wipewatch_scan(NULL);
    for (size_t i = 0; i < n; i++)
        CHECK(wipewatch_wiped(watched[i]));
    CHECK_INT(n, 10);
    CHECK_INT(wipewatch_found(), 0);
    CHECK_INT(unsetenv("UNIT_WIPE_VAR"), 0);
}

int main(void)
{
    /* never the real home; the cache on tmpfs */
    if (!mkdtemp(runtime_dir)) {
        fprintf(stderr, "mkdtemp %s: %s\n", runtime_dir, strerror(errno));
        return 2;
    }
    agent_dir = path_join(tests_tmpdir(), "agent");
    store_file = path_join(tests_tmpdir(), "agent/secrets.json");
    if (!agent_dir || !store_file || setenv("HOME", tests_tmpdir(), 1) < 0 ||
        setenv("PI_CODING_AGENT_DIR", agent_dir, 1) < 0 ||
        setenv("XDG_RUNTIME_DIR", runtime_dir, 1) < 0)
        return 2;
    test_fn fns[] = {test_watch_sees_unwiped, test_resolved_release, test_resolve_leaves_no_copy};
    int r = tests_run("test_watch_sees_unwiped, test_resolved_release, test_resolve_leaves_no_copy",
                      fns, ELEMENTSOF(fns));
    free(agent_dir);
    free(store_file);
    (void)nftw(runtime_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return r;
}
