/* test_jsonw.c - the envelope of every --json answer: {"version": 1}, the error object with and
 * without a fix, a message that needs escaping, the code and fix of an exit status from a
 * tool's table, and which argv ask for --json. */
#include <errno.h>
#include <string.h>

#include <json-c/json.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/jsonw.h"

#include "tests.h"

static void test_error_answer(void)
{
    struct buf b;
    buf_init(&b, 4096);
    CHECK_INT(jsonw_error_answer(&b, "usage", "'a\"b' is \\ not\n valid", "see 'x --help'"), 0);
    CHECK(b.len > 0 && b.data[b.len - 1] == '\n');
    struct json_object *a = json_tokener_parse(buf_str(&b));
    CHECK(a != NULL);
    int64_t version = 0;
    CHECK(json_get_int64(a, "version", &version) && version == 1);
    struct json_object *e = json_get_object(a, "error");
    CHECK_STR(json_get_string(e, "code"), "usage");
    CHECK_STR(json_get_string(e, "message"), "'a\"b' is \\ not\n valid");
    CHECK_STR(json_get_string(e, "fix"), "see 'x --help'");
    CHECK_INT(json_object_object_length(a), 2);
    json_object_put(a);

    /* no fix: the key is left out, not null */
    buf_reset(&b);
    CHECK_INT(jsonw_error_answer(&b, "failed", "it broke", NULL), 0);
    a = json_tokener_parse(buf_str(&b));
    e = json_get_object(a, "error");
    CHECK(e != NULL && !json_object_object_get_ex(e, "fix", NULL));
    CHECK_INT(json_object_object_length(e), 2);
    json_object_put(a);

    /* past the buffer's cap: an error, never half an object */
    struct buf small;
    buf_init(&small, 16);
    CHECK(jsonw_error_answer(&small, "failed", "a message longer than the cap", NULL) < 0);
    CHECK_INT(small.len, 0);
    buf_release(&small);
    buf_release(&b);
}

static void test_answer_tree(void)
{
    struct json_object *a = jsonw_answer_new();
    CHECK(a != NULL);
    CHECK_INT(jsonw_answer_add_error(a, "tool_error", "tool 't' reported an error", NULL), 0);
    CHECK_STR(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN),
              "{\"version\":1,\"error\":{\"code\":\"tool_error\",\"message\":\"tool 't' "
              "reported an error\"}}");
    json_object_put(a);
}

static void test_status_answer(void)
{
    static const struct jsonw_status_code table[] = {
        {1, "failed", "look"},
        {2, "usage", NULL},
    };
    struct buf b;
    buf_init(&b, 4096);
    CHECK_INT(jsonw_status_answer(&b, table, 2, 1, "it broke", NULL), 0);
    struct json_object *a = json_tokener_parse(buf_str(&b));
    struct json_object *e = json_get_object(a, "error");
    CHECK_STR(json_get_string(e, "code"), "failed");
    CHECK_STR(json_get_string(e, "message"), "it broke");
    CHECK_STR(json_get_string(e, "fix"), "look");
    json_object_put(a);

    /* the command's own fix wins; no message of ours: getopt's complaint */
    buf_reset(&b);
    CHECK_INT(jsonw_status_answer(&b, table, 2, 2, "", "see 'x --help'"), 0);
    a = json_tokener_parse(buf_str(&b));
    e = json_get_object(a, "error");
    CHECK_STR(json_get_string(e, "code"), "usage");
    CHECK_STR(json_get_string(e, "message"), "the command line is not valid");
    CHECK_STR(json_get_string(e, "fix"), "see 'x --help'");
    json_object_put(a);

    /* a status without a row: nothing written */
    buf_reset(&b);
    CHECK_INT(jsonw_status_answer(&b, table, 2, 130, "cancelled", NULL), -ENOENT);
    CHECK_INT(b.len, 0);
    buf_release(&b);
}

static void test_wanted(void)
{
    char *plain[] = {"list", "--check", NULL};
    char *json[] = {"list", "--check", "--json", NULL};
    char *after_dashes[] = {"exec", "X", "--", "tool", "--json", NULL};
    char *prefix[] = {"list", "--jsonx", "json", NULL};
    CHECK(!jsonw_wanted(2, plain));
    CHECK(jsonw_wanted(3, json));
    CHECK(!jsonw_wanted(5, after_dashes));
    CHECK(!jsonw_wanted(3, prefix));
    /* argv[0] is the command, never an option */
    char *zero[] = {"--json", NULL};
    CHECK(!jsonw_wanted(1, zero));
}

TESTS_MAIN(test_error_answer, test_answer_tree, test_status_answer, test_wanted)
