/* fuzz_mcp_toml.c - libFuzzer target: the reader of Codex's [mcp_servers.NAME] tables on any
 * input.
 *
 * Built with -DENABLE_FUZZING=ON and run by ctest (tests/fuzz/CMakeLists.txt); by hand:
 *   build-fuzz/tests/fuzz/fuzz_mcp_toml -max_total_time=600 tests/fuzz/corpus/fuzz_mcp_toml
 *
 * Whatever the reader accepts must have the promised shape (an object of objects whose values
 * are strings, integers, booleans, arrays of strings or objects of strings); whatever it refuses
 * must come with "line L: ..." for a line of the input. */
#include <errno.h>
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

static void check_strings(struct json_object *o, enum json_type container)
{
    check(json_object_is_type(o, container));
    if (container == json_type_array) {
        for (size_t i = 0; i < json_object_array_length(o); i++)
            check(json_object_is_type(json_object_array_get_idx(o, i), json_type_string));
        return;
    }
    json_object_object_foreach(o, k, v)
    {
        (void)k;
        check(json_object_is_type(v, json_type_string));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct json_object *o = NULL;
    struct err e = ERR_INIT;
    int r = mcp_toml_read_servers((const char *)data, size, &o, &e);
    if (r < 0) {
        check(r == -EBADMSG || r == -ENOMEM);
        check(o == NULL);
        size_t lines = 1, line = 0;
        for (size_t i = 0; i < size; i++)
            lines += data[i] == '\n';
        check(r == -ENOMEM || sscanf(e.msg, "line %zu: ", &line) == 1);
        check(r == -ENOMEM || (line >= 1 && line <= lines));
        return 0;
    }
    check(json_object_is_type(o, json_type_object));
    json_object_object_foreach(o, name, server)
    {
        (void)name;
        check(json_object_is_type(server, json_type_object));
        json_object_object_foreach(server, key, v)
        {
            (void)key;
            enum json_type t = json_object_get_type(v);
            check(t == json_type_string || t == json_type_int || t == json_type_boolean ||
                  t == json_type_array || t == json_type_object);
            if (t == json_type_array || t == json_type_object)
                check_strings(v, t);
        }
    }
    json_object_put(o);
    return 0;
}
