/* test_json.c - bounded parsing with positions, file round trips, accessors */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/json.h"

#include "tests.h"

#define MAX (64u * 1024u)

static char *tpath(const char *name)
{
    static char p[4][4096];
    static unsigned i;
    char *s = p[i++ % 4];
    int n = snprintf(s, 4096, "%s/%s", tests_tmpdir(), name);
    if (n < 0 || n >= 4096)
        abort();
    return s;
}

static void put(const char *path, const char *content, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK_INT(write(fd, content, strlen(content)), (long long)strlen(content));
    CHECK_INT(fchmod(fd, mode), 0);
    close(fd);
}

/* Parses a C string; on failure *ret stays as it was (a sentinel here). */
static int parse(const char *s, struct json_object **ret, struct err *e)
{
    return json_parse(s, strlen(s), MAX, ret, e);
}

static struct json_object *const SENTINEL = (struct json_object *)(uintptr_t)0x1;

static void check_bad(const char *text, size_t len, const char *msg_part)
{
    struct err e = ERR_INIT;
    struct json_object *o = SENTINEL;
    CHECK_INT(json_parse(text, len, MAX, &o, &e), -EBADMSG);
    CHECK(o == SENTINEL);
    CHECK_CONTAINS(e.msg, msg_part);
}

static void test_valid(void)
{
    struct err e = ERR_INIT;
    struct json_object *o = NULL;
    const char *doc = "{\"s\": \"x/y\", \"n\": 5, \"neg\": -7, \"d\": 1.5, \"b\": true,\n"
                      " \"o\": {\"k\": null}, \"a\": [1, 2], \"big\": 9223372036854775808,\n"
                      " \"max\": 9223372036854775807}\n\n";
    CHECK_INT(parse(doc, &o, &e), 0);
    CHECK(o != NULL);
    if (!o)
        return;
    CHECK_STR(json_get_string(o, "s"), "x/y");
    CHECK(json_get_string(o, "n") == NULL);
    CHECK(json_get_string(o, "missing") == NULL);
    CHECK(json_get_object(o, "o") != NULL);
    CHECK(json_get_object(o, "a") == NULL);
    CHECK(json_get_array(o, "a") != NULL);
    CHECK(json_get_string(json_get_object(o, "o"), "k") == NULL);
    CHECK(json_get_string(NULL, "k") == NULL);
    CHECK(json_get_string(json_get_array(o, "a"), "k") == NULL);

    int64_t i = 42;
    CHECK(json_get_int64(o, "n", &i));
    CHECK_INT(i, 5);
    CHECK(json_get_int64(o, "neg", &i));
    CHECK_INT(i, -7);
    CHECK(json_get_int64(o, "max", &i));
    CHECK(i == INT64_MAX);
    i = 42;
    CHECK(!json_get_int64(o, "big", &i)); /* out of range, not clamped */
    CHECK(!json_get_int64(o, "d", &i));
    CHECK(!json_get_int64(o, "s", &i));
    CHECK_INT(i, 42);

    bool b = false;
    CHECK(json_get_bool(o, "b", &b));
    CHECK(b);
    CHECK(!json_get_bool(o, "n", &b));

    CHECK_STR(json_type_desc(json_object_get_type(json_get_object(o, "o"))), "an object");
    CHECK_STR(json_type_desc(json_type_array), "an array");
    CHECK_STR(json_type_desc(json_type_string), "a string");
    CHECK_STR(json_type_desc(json_type_int), "a number");
    CHECK_STR(json_type_desc(json_type_double), "a number");
    CHECK_STR(json_type_desc(json_type_boolean), "a boolean");
    CHECK_STR(json_type_desc(json_type_null), "null");
    json_object_put(o);

    /* a bare top-level number needs the end of input to finish */
    o = NULL;
    CHECK_INT(parse("42", &o, &e), 0);
    CHECK(o && json_object_get_int64(o) == 42);
    json_object_put(o);

    /* len is the truth: the text need not be NUL-terminated there */
    o = NULL;
    CHECK_INT(json_parse("[1]xyz", 3, MAX, &o, &e), 0);
    CHECK(o && json_object_is_type(o, json_type_array));
    json_object_put(o);
}

static void test_syntax_error_position(void)
{
    check_bad("{\n  \"a\": 1,\n  \"b\" 2\n}", strlen("{\n  \"a\": 1,\n  \"b\" 2\n}"),
              "line 3, column 7: ");
    check_bad("[1,]", 4, "line 1, column 4: ");
    check_bad("{\"a\": tru }", 11, "line 1, column ");
    check_bad("{\"a\": [1, 2", 11, "line 1, column 12: unexpected end of input");
    check_bad("{\n\"a\": \"abc", 11, "line 2, column 10: unexpected end of input");
    check_bad("[\"\xff\"]", 5, "line 1, column");
}

/* The position helper other parsers share: lines and columns counted up to pos, a pos past
 * the end taken as the end, and only the first len bytes looked at. */
static void test_error_at(void)
{
    struct err e = ERR_INIT;
    const char *t = "ab\ncd\n\nxyz";
    CHECK_INT(json_error_at(&e, t, strlen(t), 0, "first"), -EBADMSG);
    CHECK_STR(e.msg, "line 1, column 1: first");
    CHECK_INT(e.code, -EBADMSG);
    CHECK_INT(json_error_at(&e, t, strlen(t), 2, "the newline itself"), -EBADMSG);
    CHECK_STR(e.msg, "line 1, column 3: the newline itself");
    CHECK_INT(json_error_at(&e, t, strlen(t), 3, "after it"), -EBADMSG);
    CHECK_STR(e.msg, "line 2, column 1: after it");
    CHECK_INT(json_error_at(&e, t, strlen(t), 8, "y"), -EBADMSG);
    CHECK_STR(e.msg, "line 4, column 2: y");
    CHECK_INT(json_error_at(&e, t, strlen(t), strlen(t), "end"), -EBADMSG);
    CHECK_STR(e.msg, "line 4, column 4: end");
    /* past len: the end of the first 4 bytes, never a byte beyond them */
    CHECK_INT(json_error_at(&e, t, 4, 100, "clamped"), -EBADMSG);
    CHECK_STR(e.msg, "line 2, column 2: clamped");
    CHECK_INT(json_error_at(NULL, t, strlen(t), 1, "no err"), -EBADMSG);
}

static void test_trailing_garbage(void)
{
    check_bad("{} x", 4, "line 1, column 4: unexpected text after the JSON value");
    check_bad("{}\n\n  {}", 8, "line 3, column 3: unexpected text after the JSON value");
    check_bad("1 2", 3, "line 1, column 3: unexpected text after");
    check_bad("123x", 4, "line 1, column 4: unexpected text after");
    /* json-c answers a bare null with no object and "success" */
    check_bad("null", 4, "null is not a usable value here");
}

static void test_depth(void)
{
    char doc[2 * (JSON_MAX_DEPTH + 1) + 1];
    struct err e = ERR_INIT;
    struct json_object *o = NULL;

    /* exactly JSON_MAX_DEPTH levels is fine */
    memset(doc, '[', JSON_MAX_DEPTH);
    memset(doc + JSON_MAX_DEPTH, ']', JSON_MAX_DEPTH);
    CHECK_INT(json_parse(doc, 2 * JSON_MAX_DEPTH, MAX, &o, &e), 0);
    json_object_put(o);

    memset(doc, '[', JSON_MAX_DEPTH + 1);
    memset(doc + JSON_MAX_DEPTH + 1, ']', JSON_MAX_DEPTH + 1);
    check_bad(doc, 2 * (JSON_MAX_DEPTH + 1), "nested more than 64 levels deep");
}

static void test_bounds_and_bytes(void)
{
    struct err e = ERR_INIT;
    struct json_object *o = SENTINEL;

    CHECK_INT(json_parse("[1, 2, 3]", 9, 8, &o, &e), -E2BIG);
    CHECK_CONTAINS(e.msg, "larger than 8 bytes");
    CHECK(o == SENTINEL);
    o = NULL;
    CHECK_INT(json_parse("[1, 2, 3]", 9, 9, &o, &e), 0);
    json_object_put(o);

    check_bad("", 0, "empty");
    check_bad(" \n\t", 3, "empty");

    /* a NUL inside or after the value */
    check_bad("{\"a\":\0}", 7, "line 1, column 6: NUL byte");
    check_bad("{}\0", 3, "NUL byte");
    check_bad("\"a\0b\"", 5, "NUL byte");
}

static void test_read_file(void)
{
    struct err e = ERR_INIT;
    struct json_object *o = SENTINEL;

    setenv("HOME", tests_tmpdir(), 1);

    CHECK_INT(json_read_file(tpath("missing.json"), MAX, 0, &o, &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "'~/missing.json' does not exist");
    CHECK(o == SENTINEL);

    const char *bad = tpath("bad.json");
    put(bad, "{\n  \"a\": 1,\n  \"b\" 2\n}\n", 0600);
    CHECK_INT(json_read_file(bad, MAX, 0, &o, &e), -EBADMSG);
    CHECK_CONTAINS(e.msg, "'~/bad.json': line 3, column 7: ");
    CHECK(o == SENTINEL);

    const char *open_secret = tpath("open.json");
    put(open_secret, "{\"token\": \"x\"}", 0644);
    CHECK_INT(json_read_file(open_secret, MAX, JSON_READ_SECRET, &o, &e), -EACCES);
    CHECK_CONTAINS(e.msg, "chmod 600");
    CHECK(o == SENTINEL);
    o = NULL;
    CHECK_INT(json_read_file(open_secret, MAX, 0, &o, &e), 0);
    CHECK_STR(json_get_string(o, "token"), "x");
    json_object_put(o);

    o = SENTINEL;
    CHECK_INT(json_read_file(open_secret, 5, 0, &o, &e), -E2BIG);
    CHECK_CONTAINS(e.msg, "'~/open.json' is larger than 5 bytes");
    CHECK(o == SENTINEL);

    const char *empty = tpath("empty.json");
    put(empty, "", 0600);
    CHECK_INT(json_read_file(empty, MAX, JSON_READ_SECRET, &o, &e), -EBADMSG);
    CHECK_CONTAINS(e.msg, "'~/empty.json': empty");

    unsetenv("HOME");
}

static void test_write_read_back(void)
{
    struct err e = ERR_INIT;
    const char *p = tpath("out.json");
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "a", json_object_new_int(1));
    json_object_object_add(o, "url", json_object_new_string("https://example.com/x"));

    umask(022);
    CHECK_INT(json_write_file(p, o, 0600, &e), 0);
    struct stat st;
    CHECK_INT(stat(p, &st), 0);
    CHECK_INT(st.st_mode & 07777, 0600);

    /* the text itself: two-space indent, "key": value, slashes as they are, final newline */
    struct buf b;
    buf_init(&b, MAX);
    CHECK_INT(file_read(p, FILE_SECRET, &b, &e), 0);
    CHECK_STR(buf_str(&b), "{\n  \"a\": 1,\n  \"url\": \"https://example.com/x\"\n}\n");
    buf_release(&b);

    struct json_object *back = NULL;
    CHECK_INT(json_read_file(p, MAX, JSON_READ_SECRET, &back, &e), 0);
    int64_t a = 0;
    CHECK(json_get_int64(back, "a", &a));
    CHECK_INT(a, 1);
    CHECK_STR(json_get_string(back, "url"), "https://example.com/x");
    json_object_put(back);

    /* the object is still usable after the write (its print buffer was wiped) */
    CHECK_STR(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
              "{\"a\":1,\"url\":\"https:\\/\\/example.com\\/x\"}");

    CHECK_INT(json_write_file(tpath("no/such/dir.json"), o, 0600, &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "cannot write");
    CHECK_INT(json_write_file(p, NULL, 0600, &e), -EINVAL);
    json_object_put(o);
}

/* text blanked as JSONC: *ret_out the result (static), or NULL with the message in e */
static const char *jsonc(const char *text, struct err *e)
{
    static char out[1024];
    size_t n = strlen(text);
    CHECK(n < sizeof(out));
    memcpy(out, text, n + 1);
    err_clear(e);
    return json_blank_jsonc(out, n, e) < 0 ? NULL : out;
}

static void test_jsonc(void)
{
    struct err e = ERR_INIT;
    /* comments and trailing commas become blank space, everything else stays in place */
    CHECK_STR(jsonc("{\"a\": 1, // one\n\"b\": [1, 2,], /* x\n y */ \"c\": {\"d\": 3,},}", &e),
              "{\"a\": 1,       \n\"b\": [1, 2 ],     \n      \"c\": {\"d\": 3 } }");
    /* a comma before a comment before the bracket is trailing too */
    CHECK_STR(jsonc("[1, /* c */\n// d\n]", &e), "[1         \n    \n]");
    /* markers inside strings are text, escaped quotes included */
    CHECK_STR(jsonc("{\"u\": \"https://x/*y*/\", \"q\": \"a\\\" // b\", \"e\": \"\\\\\"}", &e),
              "{\"u\": \"https://x/*y*/\", \"q\": \"a\\\" // b\", \"e\": \"\\\\\"}");
    /* a comma that is not trailing stays, a lone slash is json-c's to refuse */
    CHECK_STR(jsonc("[1, 2] / 3", &e), "[1, 2] / 3");
    CHECK_STR(jsonc("//", &e), "  ");
    CHECK_STR(jsonc("1 /**/", &e), "1     ");
    /* an unclosed comment: the line and column of its start */
    CHECK(jsonc("{\n  \"a\": 1 /* never\n", &e) == NULL);
    CHECK_STR(err_msg(&e), "line 2, column 10: a comment (/*) that is never closed");
    CHECK(jsonc("/*/", &e) == NULL);
    CHECK(jsonc("[1] /", &e) != NULL);
    /* an unclosed string swallows what looks like a comment: the parser says it is open */
    CHECK_STR(jsonc("[\"a /* b", &e), "[\"a /* b");

    /* a file read with JSON_READ_JSONC: an error after a comment has the file's position */
    struct json_object *o = NULL;
    put(tpath("c.json"), "// VS Code\n{\n  /* servers */ \"a\": [1,],\n  \"b\": x\n}\n", 0600);
    CHECK_INT(json_read_file(tpath("c.json"), MAX, JSON_READ_JSONC, &o, &e), -EBADMSG);
    CHECK_CONTAINS(err_msg(&e), "c.json': line 4, column 8:");
    put(tpath("c.json"), "// VS Code\n{\n  /* servers */ \"a\": [1,],\n}\n", 0600);
    CHECK_INT(json_read_file(tpath("c.json"), MAX, JSON_READ_JSONC, &o, &e), 0);
    CHECK_STR(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "{\"a\":[1]}");
    json_object_put(o);
    /* without the flag the same file is refused */
    o = NULL;
    CHECK_INT(json_read_file(tpath("c.json"), MAX, 0, &o, &e), -EBADMSG);
    CHECK(o == NULL);
}

TESTS_MAIN(test_jsonc, test_valid, test_syntax_error_position, test_error_at, test_trailing_garbage,
           test_depth, test_bounds_and_bytes, test_read_file, test_write_read_back)
