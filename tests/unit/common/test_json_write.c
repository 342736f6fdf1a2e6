/* test_json_write.c - json_write_file() writes byte for byte what json-c would, for every kind of
 * value, without json-c's print buffer */
#include <errno.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/path.h"

#include "tests.h"

#define FLAGS (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/* json_write_file(obj) holds json-c's text of obj and a newline. */
static void check_same(struct json_object *obj, const char *what)
{
    struct err e = ERR_INIT;
    struct buf b;
    char *path = path_join(tests_tmpdir(), "write.json");
    CHECK(path != NULL);
    if (!path)
        return;
    CHECK_INT(json_write_file(path, obj, 0600, &e), 0);
    buf_init(&b, 1 << 24);
    CHECK_INT(file_read(path, 0, &b, &e), 0);
    const char *want = json_object_to_json_string_ext(obj, FLAGS);
    size_t n = want ? strlen(want) : 0;
    bool same = want && b.len == n + 1 && memcmp(b.data, want, n) == 0 && b.data[n] == '\n';
    if (!same)
        fprintf(stderr, "  %s: wrote\n%s  json-c:\n%s\n", what, buf_str(&b), want ? want : "");
    CHECK(same);
    buf_release(&b);
    free(path);
}

static void check_text(const char *text)
{
    struct json_object *obj = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(json_parse(text, strlen(text), 1 << 20, &obj, &e), 0);
    if (obj)
        check_same(obj, text);
    json_object_put(obj);
}

static void test_documents(void)
{
    check_text("{}");
    check_text("[]");
    check_text("{\"a\": {}, \"b\": [], \"c\": [[]], \"d\": [{}], \"e\": {\"f\": {}}}");
    check_text("{\"n\": null, \"t\": true, \"f\": false, \"arr\": [null, true, false, null]}");
    check_text("{\"i\": 0, \"neg\": -12, \"max\": 9223372036854775807, "
               "\"min\": -9223372036854775808, \"big\": 18446744073709551615}");
    check_text("{\"d\": 1.5, \"e\": 1e300, \"z\": -0.0, \"t\": 1.10, \"x\": 2.50e-3}");
    check_text("[1, [2, [3, [4, {\"k\": [5]}]]], \"s\"]");
    check_text("\"just a string\"");
    check_text("42");
    check_text("{\"url\": \"https://example.com/a/b?c=d\", \"q\": \"say \\\"hi\\\"\", "
               "\"bs\": \"a\\\\b\", \"ctl\": \"\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\", "
               "\"u\": \"\\u00e9\\u20ac\\ud83d\\ude00\", \"k\\\"ey/\\n\": 1}");
}

static void test_built_trees(void)
{
    /* every byte a string may hold (json-c strings are byte strings) */
    char all[256];
    for (int i = 1; i < 256; i++)
        all[i - 1] = (char)i;
    all[255] = 0;
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "all", json_object_new_string(all));
    json_object_object_add(o, all, json_object_new_int(1));
    json_object_object_add(o, "null", NULL);
    struct json_object *a = json_object_new_array();
    json_object_array_add(a, NULL);
    json_object_array_add(a, json_object_new_double(0.1));
    json_object_array_add(a, json_object_new_double(100.0));
    json_object_array_add(a, json_object_new_int64(-7));
    json_object_array_add(a, json_object_new_boolean(1));
    json_object_array_add(a, json_object_new_string_len("a\0b", 3));
    json_object_object_add(o, "arr", a);
    json_object_object_add(o, "empty", json_object_new_string(""));
    check_same(o, "built tree");
    json_object_put(o);

    struct json_object *top = json_object_new_array();
    check_same(top, "empty array at the top");
    json_object_put(top);
}

static void test_no_value(void)
{
    struct err e = ERR_INIT;
    char *path = path_join(tests_tmpdir(), "none.json");
    CHECK_INT(json_write_file(path, NULL, 0600, &e), -EINVAL);
    CHECK_CONTAINS(err_msg(&e), "no JSON value");
    free(path);
}

TESTS_MAIN(test_documents, test_built_trees, test_no_value)
