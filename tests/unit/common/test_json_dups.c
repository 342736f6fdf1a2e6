/* test_json_dups.c - keys given twice in one object */
#include "credkit/buf.h"
#include "credkit/json.h"

#include "tests.h"

static int find(const char *text, struct json_dup **d)
{
    return json_find_duplicates(text, strlen(text), d);
}

static void test_none(void)
{
    struct json_dup *d = (struct json_dup *)1;
    CHECK_INT(find("{\"a\": 1, \"b\": {\"a\": 2}, \"c\": [{\"a\": 1}, {\"a\": 2}]}", &d), 0);
    CHECK(d == NULL);
    CHECK_INT(find("[]", &d), 0);
    CHECK_INT(find("\"just a string\"", &d), 0);
    CHECK_INT(find("{}", &d), 0);
}

static void test_found(void)
{
    struct json_dup *d = NULL;
    const char *text = "{\n"
                       "  \"mcpServers\": {\n"
                       "    \"github\": {\"command\": \"a\"},\n"
                       "    \"git\\u0068ub\": {\"command\": \"b\", \"command\": \"c\"}\n"
                       "  },\n"
                       "  \"x\": [1, {\"k\": true, \"k\": null}],\n"
                       "  \"mcpServers\": {}\n"
                       "}\n";
    int n = find(text, &d);
    CHECK_INT(n, 4);
    if (n != 4) {
        json_dups_free(d, (size_t)(n > 0 ? n : 0));
        return;
    }
    CHECK_STR(d[0].key, "github");
    CHECK_INT((int)d[0].npath, 1);
    CHECK_STR(d[0].path[0], "mcpServers");
    CHECK_INT((int)d[0].line, 4);
    CHECK_INT((int)d[0].first, 3);
    CHECK_STR(d[1].key, "command");
    CHECK_INT((int)d[1].npath, 2);
    CHECK_STR(d[1].path[1], "github");
    CHECK_STR(d[2].key, "k");
    CHECK_INT((int)d[2].npath, 2);
    CHECK_STR(d[2].path[0], "x");
    CHECK_STR(d[2].path[1], "1");
    CHECK_INT((int)d[2].line, 6);
    CHECK_STR(d[3].key, "mcpServers");
    CHECK_INT((int)d[3].npath, 0);
    CHECK_INT((int)d[3].line, 7);
    CHECK_INT((int)d[3].first, 2);
    json_dups_free(d, (size_t)n);
}

static void test_escapes_and_pairs(void)
{
    struct json_dup *d = NULL;
    /* U+1F600 as a surrogate pair and as UTF-8; "\/" is "/" */
    int n = find("{\"\\ud83d\\ude00\": 1, \"\xf0\x9f\x98\x80\": 2, \"a/b\": 1, \"a\\/b\": 2}", &d);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(d[0].key, "\xf0\x9f\x98\x80");
        CHECK_STR(d[1].key, "a/b");
    }
    json_dups_free(d, n > 0 ? (size_t)n : 0);
}

static void test_bad(void)
{
    struct json_dup *d = NULL;
    CHECK_INT(find("{\"a\": 1", &d), -EBADMSG);
    CHECK(d == NULL);
    CHECK_INT(find("{\"a\" 1}", &d), -EBADMSG);
    CHECK_INT(find("{\"a\": 1} x", &d), -EBADMSG);
    CHECK_INT(find("{\"a\\q\": 1}", &d), -EBADMSG);
    CHECK_INT(find("", &d), -EBADMSG);
    /* deeper than json_parse() allows */
    char deep[200];
    memset(deep, '[', sizeof(deep) - 1);
    deep[sizeof(deep) - 1] = '\0';
    CHECK_INT(find(deep, &d), -EBADMSG);
}

/* What json_parse() takes beyond RFC 8259 (json-c's strict mode): NaN and Infinity, single-quoted
 * keys, a raw line break inside a string (counted as a line). Found by tests/fuzz/fuzz_json_dups. */
static void test_json_c_extensions(void)
{
    struct json_dup *d = NULL;
    const char *text = "{\"a\": NaN, \"b\": [Infinity, -Infinity], 'c': \"two\nlines\",\n"
                       " \"c\": 1, 'a': 2}";
    struct json_object *o = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(json_parse(text, strlen(text), 4096, &o, &e), 0);
    json_object_put(o);
    int n = find(text, &d);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(d[0].key, "c");
        CHECK_INT((int)d[0].line, 3);
        CHECK_INT((int)d[0].first, 1);
        CHECK_STR(d[1].key, "a");
    }
    json_dups_free(d, (size_t)(n > 0 ? n : 0));
}

static void test_many_keys_linear(void)
{
    /* 20000 distinct keys and one repeated: found once, quickly (a quadratic scan would take
     * seconds here under the sanitizers) */
    struct buf b;
    buf_init(&b, 4u << 20);
    CHECK_INT(buf_append_char(&b, '{'), 0);
    int r = 0;
    for (int i = 0; i < 20000 && r >= 0; i++)
        r = buf_printf(&b, "\"k%d\": %d, ", i, i);
    CHECK_INT(r, 0);
    CHECK_INT(buf_append_str(&b, "\"k7\": 0}"), 0);
    struct json_dup *d = NULL;
    CHECK_INT(json_find_duplicates(buf_str(&b), b.len, &d), 1);
    if (d)
        CHECK_STR(d[0].key, "k7");
    json_dups_free(d, 1);
    buf_release(&b);
}

TESTS_MAIN(test_none, test_found, test_escapes_and_pairs, test_bad, test_json_c_extensions,
           test_many_keys_linear)
