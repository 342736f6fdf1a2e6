/* fuzz_json_dups.c - libFuzzer target: duplicate keys in JSON texts (common/json_dups.c).
 *
 * Input: any bytes, read as the JSON text of a file people edit. Whatever json_parse() accepts,
 * json_find_duplicates() reads too (never -EBADMSG for it); each duplicate it reports names a
 * key, its object's path, and two lines within the text, the later after the first. Texts
 * json_parse() refuses are outside its contract (its callers parse first): it must only not
 * crash on them, and what it reports must still be well formed. */
#include <errno.h>

#include "credkit/json.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct json_object *root = NULL;
    struct json_dup *dups = NULL;
    struct err e = ERR_INIT;
    unsigned lines = 1;

    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    int parsed = json_parse(text, size, 1024 * 1024, &root, &e);
    int n = json_find_duplicates(text, size, &dups);
    if (parsed >= 0) {
        json_object_put(root);
        fuzz_check(n >= 0 || n == -ENOMEM);
    }
    fuzz_check(n != 0 || dups == NULL);
    for (int i = 0; i < n; i++) {
        const struct json_dup *d = &dups[i];
        fuzz_check(d->key != NULL);
        fuzz_check(d->first >= 1 && d->first <= d->line && d->line <= lines);
        fuzz_check(d->npath == 0 || d->path != NULL);
        for (size_t j = 0; j < d->npath; j++)
            fuzz_check(d->path[j] != NULL);
        if (i > 0)
            fuzz_check(dups[i - 1].line <= d->line);
    }
    json_dups_free(dups, n > 0 ? (size_t)n : 0);
    return 0;
}
