/* test_mcp_toml.c - the strict reader of Codex's [mcp_servers.NAME] tables: what it reads, what
 * it skips, the errors it gives (with their lines), and hostile input */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "credkit/json.h"
#include "credkit/mcp_toml.h"

#include "tests.h"

/* Reads text; the servers as plain JSON text in *ret_json (static), NULL on error (then the
 * message in e). */
static const char *read_toml_n(const char *text, size_t len, struct err *e)
{
    static char out[64 * 1024];
    struct json_object *o = NULL;
    err_clear(e);
    int r = mcp_toml_read_servers(text, len, &o, e);
    if (r < 0) {
        CHECK(o == NULL);
        CHECK(e->msg[0] != '\0');
        return NULL;
    }
    snprintf(out, sizeof(out), "%s", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return out;
}

static const char *read_toml(const char *text, struct err *e)
{
    return read_toml_n(text, strlen(text), e);
}

/* text reads as want (plain JSON) */
#define READS(text, want)                                                                          \
    do {                                                                                           \
        struct err _e = ERR_INIT;                                                                  \
        const char *_got = read_toml(text, &_e);                                                   \
        if (!_got)                                                                                 \
            fprintf(stderr, "unexpected error: %s\n", err_msg(&_e));                               \
        CHECK_STR(_got, want);                                                                     \
    } while (0)

/* text fails with a message containing want */
#define FAILS(text, want)                                                                          \
    do {                                                                                           \
        struct err _e = ERR_INIT;                                                                  \
        const char *_got = read_toml(text, &_e);                                                   \
        CHECK(_got == NULL);                                                                       \
        CHECK_CONTAINS(err_msg(&_e), want);                                                        \
    } while (0)

static void test_codex_file(void)
{
    READS("# Codex\n"
          "model = \"o3\"\n"
          "approval_policy = 'on-request'\n"
          "\n"
          "[mcp_servers.docs]\n"
          "command = \"npx\"   # the launcher\n"
          "args = [\"-y\", \"@acme/docs-mcp\"]\n"
          "env = { \"API_KEY\" = \"k\", MODE = 'fast' }\n"
          "startup_timeout_sec = 20\n"
          "enabled = false\n"
          "\n"
          "[mcp_servers.\"remote one\"]\n"
          "url = 'https://mcp.example.com/mcp'\n"
          "bearer_token_env_var = \"TOKEN\"\n"
          "http_headers = {}\n",
          "{\"docs\":{\"command\":\"npx\",\"args\":[\"-y\",\"@acme\\/docs-mcp\"],"
          "\"env\":{\"API_KEY\":\"k\",\"MODE\":\"fast\"},\"startup_timeout_sec\":20,"
          "\"enabled\":false},\"remote one\":{\"url\":\"https:\\/\\/mcp.example.com\\/mcp\","
          "\"bearer_token_env_var\":\"TOKEN\",\"http_headers\":{}}}");

    /* an env sub-table, before or after its server's table; CRLF line ends */
    READS("[mcp_servers.a.env]\r\nX = \"1\"\r\n[mcp_servers.a]\r\ncommand = \"a\"\r\n"
          "[mcp_servers.b]\ncommand = \"b\"\n[mcp_servers.b.env]\nY = '2'\n",
          "{\"a\":{\"env\":{\"X\":\"1\"},\"command\":\"a\"},"
          "\"b\":{\"command\":\"b\",\"env\":{\"Y\":\"2\"}}}");

    /* no servers at all */
    READS("", "{}");
    READS("# nothing\n\n   \n[tui]\nnotifications = true\n", "{}");
    READS("[mcp_servers]\n# none yet\n", "{}");
}

static void test_values(void)
{
    /* multi-line arrays with comments and a trailing comma */
    READS("[mcp_servers.s]\nargs = [\n  \"a\", # first\n  'b',\n\n  # last\n  \"c\",\n]\n"
          "x = []\n",
          "{\"s\":{\"args\":[\"a\",\"b\",\"c\"],\"x\":[]}}");
    /* escapes */
    READS("[mcp_servers.s]\nv = \"tab\\t q\\\" bs\\\\ \\u00e9 \\U0001F600 nl\\n\"\n",
          "{\"s\":{\"v\":\"tab\\t q\\\" bs\\\\ \xc3\xa9 \xf0\x9f\x98\x80 nl\\n\"}}");
    /* literal strings keep backslashes */
    READS("[mcp_servers.s]\nv = 'C:\\dir\\n'\n", "{\"s\":{\"v\":\"C:\\\\dir\\\\n\"}}");
    /* multi-line strings: the first line break dropped, a line-ending backslash trims */
    READS("[mcp_servers.s]\na = \"\"\"\none\ntwo\"\"\"\nb = \"\"\"x \\\n    y\"\"\"\n"
          "c = '''\nraw \\n'''\nd = \"\"\"q\"\"\"\"\"\n",
          "{\"s\":{\"a\":\"one\\ntwo\",\"b\":\"x y\",\"c\":\"raw \\\\n\",\"d\":\"q\\\"\\\"\"}}");
    /* numbers and booleans */
    READS("[mcp_servers.s]\na = 0\nb = -17\nc = +1_000\nd = true\ne = false # c\n"
          "f = 9223372036854775807\n",
          "{\"s\":{\"a\":0,\"b\":-17,\"c\":1000,\"d\":true,\"e\":false,"
          "\"f\":9223372036854775807}}");
    /* quoted keys, blank space around dots in table names */
    READS("[ mcp_servers . 'a.b' ]\n\"key with space\" = \"v\"\n'' = \"empty\"\n",
          "{\"a.b\":{\"key with space\":\"v\",\"\":\"empty\"}}");
}

static void test_skipped(void)
{
    /* everything outside the MCP tables is scanned, not read: multi-line strings whose lines
     * look like tables, nested arrays and inline tables, dates, floats, arrays of tables */
    READS("title = \"\"\"\n[mcp_servers.fake]\ncommand = \"no\"\n\"\"\"\n"
          "lit = '''\n[mcp_servers.fake2]\n'''\n"
          "nested = [[1, 2], [\"a\", [true]], { x = { y = 1.5 } }]\n"
          "when = 1979-05-27 07:32:00Z\n"
          "date = 1979-05-27\n"
          "pi = 3.14\n"
          "big = [\n  1,\n  2, # two\n]\n"
          "[[profiles]]\nname = 'x'\n"
          "[profiles.o3]\nmodel = \"o3\"\n"
          "[projects.\"/home/me/p\"]\ntrust_level = \"trusted\"\n"
          "[shell_environment_policy]\ninherit = \"all\"\nset = { A = \"1\", B = [\"x\"] }\n"
          "[mcp_servers.real]\ncommand = \"yes\"\n"
          "[model_providers.x]\nmcp_servers = 'not the one'\n",
          "{\"real\":{\"command\":\"yes\"}}");

    /* but a syntax error in a skipped part is an error: what follows could not be trusted */
    FAILS("[tui]\nx = \"open\n[mcp_servers.a]\n", "line 2: a string is not closed on its line");
    FAILS("a = [1, 2\n[mcp_servers.a]\ncommand = 'x'\n", "line 2:");
    FAILS("a = \"\"\"\nnever closed\n", "line 1: a string that starts on this line is not closed");
    FAILS("a = \n", "line 1: expected a value");
}

static void test_errors(void)
{
    FAILS("[mcp_servers.s]\ncommand = 'x'\nstartup_timeout_sec = 1.5\n",
          "line 3: 'startup_timeout_sec': only whole numbers are read here, not floats");
    FAILS("[mcp_servers.s]\nt = 1e3\n", "line 2: 't': only whole numbers");
    FAILS("[mcp_servers.s]\nt = inf\n", "not inf or nan");
    FAILS("[mcp_servers.s]\nwhen = 1979-05-27\n", "line 2: 'when': dates and times are not read");
    FAILS("[mcp_servers.s]\nt = 0x10\n", "hexadecimal, octal and binary numbers are not read");
    FAILS("[mcp_servers.s]\nt = 012\n", "must not start with a zero");
    FAILS("[mcp_servers.s]\nt = 1__0\n", "an underscore in a number must be between digits");
    FAILS("[mcp_servers.s]\nt = 9223372036854775808\n", "the number is too large");
    FAILS("[mcp_servers.s]\nargs = [[\"a\"]]\n", "line 2: 'args': arrays of arrays are not read");
    FAILS("[mcp_servers.s]\nargs = [\"a\", 1]\n", "'args': only arrays of strings are read");
    FAILS("[mcp_servers.s]\nargs = [\"a\" \"b\"]\n", "expected ',' or ']' in the array");
    FAILS("[mcp_servers.s]\nenv = { A = 1 }\n", "'env': only inline tables of strings are read");
    FAILS("[mcp_servers.s]\nenv = { A = { B = 'x' } }\n", "only inline tables of strings");
    FAILS("[mcp_servers.s]\nenv = { A = 'x', }\n", "a comma before '}' is not allowed");
    FAILS("[mcp_servers.s]\nenv = { A = 'x',\n B = 'y' }\n", "line 2:");
    FAILS("[mcp_servers.s]\nenv = { A = 'x'\n}\n", "an inline table must be on one line");
    FAILS("[mcp_servers.s]\nenv = { a.b = 'x' }\n", "dotted keys in an inline table are not read");
    FAILS("[mcp_servers.s]\nenv = { A = 'x', A = 'y' }\n", "the key 'A' is defined twice");
    FAILS("[mcp_servers.s]\nenv.A = 'x'\n",
          "line 2: the dotted key 'env.A' is not read in [mcp_servers.s]");
    FAILS("[mcp_servers.s.env]\nA = 1\n", "line 2: 'A': [mcp_servers.s.env] holds strings only");
    FAILS("[[mcp_servers.s]]\ncommand = 'x'\n", "line 1: [[mcp_servers.s]] (an array of tables)");
    FAILS("[mcp_servers.s.tools.t]\nx = 'y'\n", "the table [mcp_servers.s.tools.t] is not read");
    FAILS("[mcp_servers.s]\ncommand = 'a'\n[mcp_servers.s]\ncommand = 'b'\n",
          "line 3: the table [mcp_servers.s] is defined twice");
    FAILS("[mcp_servers.s]\nenv = {}\n[mcp_servers.s.env]\n", "line 3: the table");
    FAILS("[mcp_servers.s.env]\n[mcp_servers.s.env]\n", "defined twice");
    FAILS("[mcp_servers]\n[mcp_servers]\n", "the table [mcp_servers] is defined twice");
    FAILS("[mcp_servers.s]\ncommand = 'a'\ncommand = 'b'\n",
          "line 3: the key 'command' is defined twice in [mcp_servers.s]");
    FAILS("[mcp_servers]\ns = { command = 'x' }\n",
          "line 2: the key 's' directly in [mcp_servers] is not read");
    FAILS("mcp_servers.s.command = 'x'\n", "line 1: 'mcp_servers.s.command' written as a key");
    FAILS("mcp_servers = {}\n", "written as a key is not read");
    FAILS("[mcp_servers.s]\ncommand 'x'\n", "line 2: expected '=' after the key 'command'");
    FAILS("[mcp_servers.s]\ncommand = 'x' y\n", "line 2: expected the end of the line");
    FAILS("[mcp_servers.s]\nok = true1\n", "expected the end of the value after true");
    FAILS("[mcp_servers.s\n", "line 1: expected ']' to end the table header");
    FAILS("[mcp_servers.s] x\n", "line 1: expected the end of the line after a table header");
    FAILS("[mcp_servers.s]\n= 'x'\n", "line 2: expected a key");
    FAILS("[mcp_servers.s]\n\"\"\"k\"\"\" = 'x'\n", "a key cannot be a multi-line string");
    FAILS("[a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q]\n", "more than 16 dotted parts");
}

static void test_strings_hostile(void)
{
    FAILS("[mcp_servers.s]\nv = \"\\q\"\n", "line 2: '\\q' is not a valid escape in a string");
    FAILS("[mcp_servers.s]\nv = \"\\\xc3\xa9\"\n", "a backslash that starts no valid escape");
    FAILS("[mcp_servers.s]\nv = \"\\u12\"\n", "\\u needs 4 hexadecimal digits");
    FAILS("[mcp_servers.s]\nv = \"\\U0011FFFF\"\n", "not a Unicode character");
    FAILS("[mcp_servers.s]\nv = \"\\uD800\"\n", "not a Unicode character");
    FAILS("[mcp_servers.s]\nv = \"\\u0000\"\n", "a NUL character (\\u0000) in a string");
    FAILS("[mcp_servers.s]\nv = \"x \\ y\"\n", "'\\ ' is not a valid escape");
    FAILS("[mcp_servers.s]\nv = \"\"\"x \\ y\"\"\"\n", "a backslash followed by blank space");
    FAILS("[mcp_servers.s]\nv = \"a\x01\"\n", "line 2: a control character in a string");
    FAILS("[mcp_servers.s]\nv = 'a\x7f'\n", "a control character in a string");
    FAILS("[mcp_servers.s]\nv = \"\"\"a\"\"\"\"\"\"\n", "more than five quotes in a row");
    FAILS("# a comment \x01\n", "line 1: a control character in a comment");
    FAILS("[mcp_servers.s]\nv = 'x'\r\r\n", "line 2: expected the end of the line");

    /* not UTF-8, a NUL byte: refused before anything is read, with the line */
    FAILS("[mcp_servers.s]\nv = '\xff'\n", "line 2: not UTF-8 text");
    FAILS("[mcp_servers.s]\nv = '\xc0\xaf'\n", "not UTF-8"); /* overlong */
    FAILS("\n\nv = '\xed\xa0\x80'\n", "line 3: not UTF-8");  /* a surrogate */
    struct err e = ERR_INIT;
    CHECK(read_toml_n("[mcp_servers.s]\nv = 'a\0b'\n", 24, &e) == NULL);
    CHECK_CONTAINS(err_msg(&e), "line 2: not UTF-8 text (or a NUL byte)");

    /* the text need not end in a NUL: nothing is read past len (an exact-size copy, so that a
     * sanitizer or valgrind sees any read beyond it) */
    static const char *const cut[] = {"[mcp_servers.s]\nv = +",
                                      "[mcp_servers.s]\nv = ",
                                      "[mcp_servers.s]\nv = \"\\",
                                      "[mcp_servers.s]\nv = tru",
                                      "[mcp_servers.s]\nv = [\"a\",",
                                      "[mcp_servers.",
                                      "x = {a=1,",
                                      "[mcp_servers.s]\nv = '''a''",
                                      "x = 1979-05-27 ",
                                      "# c"};
    for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
        size_t len = strlen(cut[i]);
        char *exact = malloc(len);
        CHECK(exact != NULL);
        if (!exact)
            continue;
        memcpy(exact, cut[i], len);
        struct json_object *out = NULL;
        int r = mcp_toml_read_servers(exact, len, &out, &e);
        CHECK(r == -EBADMSG || (r == 0 && i >= 8)); /* the last two are whole */
        json_object_put(out);
        free(exact);
    }

    /* a long line: a string of 900 KiB is read; a key beyond 4 KiB is refused */
    size_t n = 900 * 1024;
    char *t = malloc(n + 64);
    CHECK(t != NULL);
    if (!t)
        return;
    int k = snprintf(t, 64, "[mcp_servers.s]\nv = \"");
    memset(t + k, 'x', n);
    strcpy(t + k + n, "\"\n");
    struct json_object *o = NULL;
    CHECK_INT(mcp_toml_read_servers(t, strlen(t), &o, &e), 0);
    struct json_object *s = NULL, *v = NULL;
    CHECK(json_object_object_get_ex(o, "s", &s) && json_object_object_get_ex(s, "v", &v));
    CHECK_INT(json_object_get_string_len(v), (long long)n);
    json_object_put(o);
    k = snprintf(t, 64, "[mcp_servers.");
    memset(t + k, 'k', 5000);
    strcpy(t + k + 5000, "]\n");
    CHECK(read_toml(t, &e) == NULL);
    CHECK_CONTAINS(err_msg(&e), "line 1: a string or key longer than 4096 bytes");

    /* deep nesting in a skipped value is bounded, not a stack overflow */
    n = 200000;
    k = snprintf(t, 64, "x = ");
    memset(t + k, '[', n);
    t[(size_t)k + n] = '\0';
    CHECK(read_toml(t, &e) == NULL);
    CHECK_CONTAINS(err_msg(&e), "arrays or inline tables nested more than 32 deep");
    k = snprintf(t, 64, "x = ");
    for (size_t i = 0; i < 40; i++)
        k += snprintf(t + k, 16, "{a=");
    t[k] = '\0';
    CHECK(read_toml(t, &e) == NULL);
    CHECK_CONTAINS(err_msg(&e), "nested more than 32 deep");
    /* 31 deep is fine */
    k = snprintf(t, 64, "x = ");
    for (size_t i = 0; i < 31; i++)
        t[k++] = '[';
    for (size_t i = 0; i < 31; i++)
        t[k++] = ']';
    strcpy(t + k, "\n[mcp_servers.z]\ncommand = 'z'\n");
    CHECK(read_toml(t, &e) != NULL);

    /* many servers, each read */
    size_t cap = 2 * 1024 * 1024, len = 0;
    char *big = malloc(cap);
    CHECK(big != NULL);
    for (int i = 0; big && i < 5000; i++)
        len +=
            (size_t)snprintf(big + len, cap - len, "[mcp_servers.s%d]\ncommand = \"c%d\"\n", i, i);
    o = NULL;
    CHECK_INT(big ? mcp_toml_read_servers(big, len, &o, &e) : -1, 0);
    CHECK_INT(json_object_object_length(o), 5000);
    json_object_put(o);
    free(big);
    free(t);
}

TESTS_MAIN(test_codex_file, test_values, test_skipped, test_errors, test_strings_hostile)
