/* fuzz_recipe.c - libFuzzer target: secrets.json and its recipes (secrets/store.c,
 * secrets/recipe.c).
 *
 * Input: a secrets.json, written 0600 into a private directory and loaded as `secrets` loads
 * it. A file that loads lists names that are found again; each entry either parses into a
 * recipe of a known kind, which writes back (recipe_to_json) to a value that parses into the
 * same recipe, or is refused with a message; a file that does not load says why. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recipe.h"
#include "store.h"

#include "fuzz.h"

static char path[300];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    snprintf(path, sizeof(path), "%s/secrets.json", fuzz_tmpdir("fuzz_recipe"));
    return 0;
}

static void same_recipe(const struct recipe *a, const struct recipe *b)
{
    fuzz_check(a->kind == b->kind && strcmp(a->name, b->name) == 0);
    fuzz_check(strcmp(a->arg, b->arg) == 0);
    fuzz_check(a->ttl_ms == b->ttl_ms && a->timeout_ms == b->timeout_ms);
    fuzz_check(!a->description == !b->description);
    fuzz_check(!a->description || strcmp(a->description, b->description) == 0);
    /* the managers' options */
    const char *const as[] = {a->entry, a->password, a->field, a->project};
    const char *const bs[] = {b->entry, b->password, b->field, b->project};
    for (size_t i = 0; i < sizeof(as) / sizeof(as[0]); i++)
        fuzz_check(!as[i] == !bs[i] && (!as[i] || strcmp(as[i], bs[i]) == 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct store *s = NULL;
    struct err e = ERR_INIT;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    fuzz_check(fd >= 0);
    fuzz_check(write(fd, data, size) == (ssize_t)size);
    fuzz_check(close(fd) == 0);

    int r = store_load(path, &s, &e);
    if (r < 0) {
        fuzz_check(e.msg[0] != 0 || r == -ENOMEM);
        return 0;
    }
    for (size_t i = 0; i < store_count(s); i++) {
        const char *name = store_name(s, i);
        const struct recipe *rc = NULL;
        struct err e2 = ERR_INIT;
        fuzz_check(name != NULL && name[0] != '$');
        r = store_get(s, name, &rc, &e2);
        if (r < 0) {
            fuzz_check(e2.msg[0] != 0 || r == -ENOMEM);
            continue;
        }
        fuzz_check(rc && strcmp(rc->name, name) == 0 && rc->arg);
        fuzz_check(recipe_kind_str(rc->kind) != NULL);
        char fp[65];
        recipe_fingerprint(rc, "/scope", fp);
        fuzz_check(strlen(fp) == 64);
        struct json_object *j = recipe_to_json(rc);
        fuzz_check(j != NULL);
        struct recipe *back = NULL;
        fuzz_check(recipe_parse(name, j, &back, &e2) == 0);
        same_recipe(rc, back);
        recipe_free(back);
        json_object_put(j);
    }
    store_free(s);
    return 0;
}
