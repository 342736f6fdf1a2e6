/* fuzz_mcp_toml.c - libFuzzer target: the reader of Codex's [mcp_servers.NAME] tables on any
 * input.
 *
 * Built with -DENABLE_FUZZING=ON and run by ctest (tests/fuzz/CMakeLists.txt); by hand:
 *   build-fuzz/tests/fuzz/fuzz_mcp_toml -max_total_time=600 tests/fuzz/corpus/fuzz_mcp_toml
 *
 * Whatever the reader accepts must have the promised shape (an object of servers; a value left
 * out, a JSON null, only where a note of its server says why, every note "line L: ..." for a
 * line of the input); whatever it refuses must come with "line L: ..." for a line of it. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/mcp_toml.h"

static void check(int cond)
{
    if (!cond)
        abort();
}

/* s starts with "line L: " for a line of the input */
static void check_line(const char *s, size_t lines)
{
    size_t line = 0;
    check(sscanf(s, "line %zu: ", &line) == 1);
    check(line >= 1 && line <= lines);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct json_object *o = NULL, *notes = NULL;
    struct err e = ERR_INIT;
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    int r = mcp_toml_read_servers((const char *)data, size, &o, &notes, &e);
    if (r < 0) {
        check(r == -EBADMSG || r == -ENOMEM);
        check(o == NULL && notes == NULL);
        if (r == -EBADMSG)
            check_line(e.msg, lines);
        return 0;
    }
    check(json_object_is_type(o, json_type_object));
    check(json_object_is_type(notes, json_type_object));
    json_object_object_foreach(o, name, server)
    {
        struct json_object *sn = NULL;
        bool noted = json_object_object_get_ex(notes, name, &sn);
        if (!json_object_is_type(server, json_type_object))
            continue;
        json_object_object_foreach(server, key, v)
        {
            (void)key;
            check(v || noted);
        }
    }
    json_object_object_foreach(notes, sname, sn)
    {
        check(json_object_object_get_ex(o, sname, NULL));
        json_object_object_foreach(sn, key, why)
        {
            (void)key;
            check(json_object_is_type(why, json_type_string));
            check_line(json_object_get_string(why), lines);
        }
    }
    json_object_put(o);
    json_object_put(notes);
    return 0;
}
