/* test_mcp_toml.c - the reader of Codex's mcp_servers table: what it reads, what it leaves out
 * with a note, what it skips, the errors it gives (with their lines), and hostile input */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "credkit/json.h"
#include "credkit/mcp_toml.h"

#include "tests.h"

static char notes_read[8192]; /* the notes of the last text read, as plain JSON */

/* Reads text; the servers as plain JSON text (static), NULL on error (then the message in e);
 * the notes in notes_read. */
static const char *read_toml_n(const char *text, size_t len, struct err *e)
{
    static char out[64 * 1024];
    struct json_object *o = NULL, *notes = NULL;
    err_clear(e);
    notes_read[0] = '\0';
    int r = mcp_toml_read_servers(text, len, &o, &notes, e);
    if (r < 0) {
        CHECK(o == NULL && notes == NULL);
        CHECK(e->msg[0] != '\0');
        return NULL;
    }
    snprintf(out, sizeof(out), "%s", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    snprintf(notes_read, sizeof(notes_read), "%s",
             json_object_to_json_string_ext(notes, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    json_object_put(notes);
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

/* text reads as want, with notes (plain JSON) */
#define READS_NOTED(text, want, want_notes)                                                        \
    do {                                                                                           \
        READS(text, want);                                                                         \
        CHECK_STR(notes_read, want_notes);                                                         \
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

/* What Codex writes: floats, per-tool tables, dotted keys, nested values */
static void test_shapes(void)
{
    READS("[mcp_servers.s]\ncommand = 'x'\nstartup_timeout_sec = 1.5\ntool_timeout_sec = 60.0\n"
          "a = 1e3\nb = -2.5E-1\nc = 1_000.000_1\nd = 0x1F\ne = 0o17\nf = 0b101\ng = 0.0\n",
          "{\"s\":{\"command\":\"x\",\"startup_timeout_sec\":1.5,\"tool_timeout_sec\":60.0,"
          "\"a\":1000.0,\"b\":-0.25,\"c\":1000.0001,\"d\":31,\"e\":15,\"f\":5,\"g\":0.0}}");
    CHECK_STR(notes_read, "{}");
    /* nested arrays and inline tables of anything, dotted keys */
    READS(
        "[mcp_servers.s]\nargs = [[\"a\"], 1, true, { x = 2 }]\nenv = { A = 1, B = { C = 'x' } }\n"
        "inl = { a.b = 'x', a.c = 'y' }\nenv2.A = 'x'\nenv2.B = 'y'\n",
        "{\"s\":{\"args\":[[\"a\"],1,true,{\"x\":2}],\"env\":{\"A\":1,\"B\":{\"C\":\"x\"}},"
        "\"inl\":{\"a\":{\"b\":\"x\",\"c\":\"y\"}},\"env2\":{\"A\":\"x\",\"B\":\"y\"}}}");
    /* per-tool tables, deeper tables before their server's, a server as an inline table or
     * dotted keys at the root */
    READS("[mcp_servers.s.tools.search]\napproval_mode = \"approve\"\n"
          "[mcp_servers.s]\ncommand = 'x'\n[mcp_servers.s.tools.write]\nenabled = false\n"
          "[mcp_servers.s.env]\nA = 1\n",
          "{\"s\":{\"tools\":{\"search\":{\"approval_mode\":\"approve\"},"
          "\"write\":{\"enabled\":false}},\"command\":\"x\",\"env\":{\"A\":1}}}");
    READS("[mcp_servers]\ns = { command = 'x' }\n", "{\"s\":{\"command\":\"x\"}}");
    READS("mcp_servers.s.command = 'x'\nmcp_servers.s.args = []\n",
          "{\"s\":{\"command\":\"x\",\"args\":[]}}");
    READS("mcp_servers = {}\n", "{}");
    READS("mcp_servers = { a = { command = 'x' } }\n", "{\"a\":{\"command\":\"x\"}}");
}

/* Valid TOML that is not read: the key left out (a null), a note with its line */
static void test_unread(void)
{
    READS_NOTED("[mcp_servers.s]\ncommand = 'x'\nt = inf\nu = -nan\n",
                "{\"s\":{\"command\":\"x\",\"t\":null,\"u\":null}}",
                "{\"s\":{\"t\":\"line 3: 't': inf and nan are not read\","
                "\"u\":\"line 4: 'u': inf and nan are not read\"}}");
    READS_NOTED("[mcp_servers.s]\nwhen = 1979-05-27\nat = 07:32:00\n"
                "ts = 1979-05-27 07:32:00Z\nok = 1\n",
                "{\"s\":{\"when\":null,\"at\":null,\"ts\":null,\"ok\":1}}",
                "{\"s\":{\"when\":\"line 2: 'when': dates and times are not read\","
                "\"at\":\"line 3: 'at': dates and times are not read\","
                "\"ts\":\"line 4: 'ts': dates and times are not read\"}}");
    READS_NOTED("[mcp_servers.s]\nt = 9223372036854775808\nu = 012\nv = 1__0\nw = 1.\nx = tru\n",
                "{\"s\":{\"t\":null,\"u\":null,\"v\":null,\"w\":null,\"x\":null}}",
                "{\"s\":{\"t\":\"line 2: 't': the number is out of range\","
                "\"u\":\"line 3: 'u': not a value read here (a string, a number, true or false, "
                "an array or an inline table)\",\"v\":\"line 4: 'v': not a value read here (a "
                "string, a number, true or false, an array or an inline table)\","
                "\"w\":\"line 5: 'w': not a value read here (a string, a number, true or false, "
                "an array or an inline table)\",\"x\":\"line 6: 'x': not a value read here (a "
                "string, a number, true or false, an array or an inline table)\"}}");
    /* inside an array or a table: the whole value left out; the line is the key's */
    READS_NOTED("[mcp_servers.s]\nenv = { A = 'x', B = inf }\nargs = [\n  'a',\n  1e999,\n]\n"
                "[mcp_servers.s.tools.t]\nx = 1979-05-27\n",
                "{\"s\":{\"env\":null,\"args\":null,\"tools\":{\"t\":{\"x\":null}}}}",
                "{\"s\":{\"env\":\"line 2: 'env': inf and nan are not read\","
                "\"args\":\"line 3: 'args': the number is out of range\","
                "\"tools.t.x\":\"line 8: 'tools.t.x': dates and times are not read\"}}");
    /* an array of tables where a server is: the server noted, its lines skipped */
    READS_NOTED("[[mcp_servers.s]]\ncommand = 'x'\n[mcp_servers.t]\ncommand = 'y'\n",
                "{\"s\":{},\"t\":{\"command\":\"y\"}}",
                "{\"s\":{\"\":\"line 1: [[mcp_servers.s]] (an array of tables) is not read\"}}");
    /* a key left out is still defined: given again, it is defined twice */
    FAILS("[mcp_servers.s]\nt = inf\nt = 1\n", "line 3: the key 't' is defined twice");
}

static void test_errors(void)
{
    FAILS("[mcp_servers.s]\nargs = [\"a\" \"b\"]\n", "expected ',' or ']' in the array");
    FAILS("[mcp_servers.s]\nenv = { A = 'x', }\n", "a comma before '}' is not allowed");
    FAILS("[mcp_servers.s]\nenv = { A = 'x',\n B = 'y' }\n", "line 2:");
    FAILS("[mcp_servers.s]\nenv = { A = 'x'\n}\n", "an inline table must be on one line");
    FAILS("[mcp_servers.s]\nenv = { A = 'x', A = 'y' }\n", "the key 'A' is defined twice");
    FAILS("[mcp_servers.s]\nenv = { a = 'x', a.b = 'y' }\n", "the key 'a' is defined twice");
    FAILS("[mcp_servers.s]\nenv = { A = 'x' }\nenv.B = 'y'\n",
          "line 3: the inline table 'mcp_servers.s.env' is defined twice");
    FAILS("[mcp_servers.s]\ncommand = 'x'\ncommand.a = 'y'\n", "line 3: 'mcp_servers.s.command' is "
                                                               "defined twice");
    FAILS("[[mcp_servers]]\ncommand = 'x'\n", "line 1: [[mcp_servers]] (an array of tables)");
    FAILS("mcp_servers = 1\n", "line 1: 'mcp_servers' must be a table of servers");
    FAILS("[mcp_servers.s]\ncommand = 'a'\n[mcp_servers.s]\ncommand = 'b'\n",
          "line 3: the table [mcp_servers.s] is defined twice");
    FAILS("[mcp_servers.s]\nenv = {}\n[mcp_servers.s.env]\n", "line 3: the table");
    FAILS("[mcp_servers.s.env]\n[mcp_servers.s.env]\n", "defined twice");
    FAILS("[mcp_servers]\n[mcp_servers]\n", "the table [mcp_servers] is defined twice");
    FAILS("[mcp_servers.s]\ncommand = 'a'\ncommand = 'b'\n",
          "line 3: the key 'command' is defined twice in [mcp_servers.s]");
    FAILS("[mcp_servers.s]\ncommand 'x'\n", "line 2: expected '=' after the key 'command'");
    FAILS("[mcp_servers.s]\ncommand = 'x' y\n", "line 2: expected the end of the line");
    FAILS("[mcp_servers.s]\nok = true1\n", "expected the end of the value after true");
    FAILS("[mcp_servers.s]\nok = \n", "line 2: expected a value");
    FAILS("[mcp_servers.s\n", "line 1: expected ']' to end the table header");
    FAILS("[mcp_servers.s] x\n", "line 1: expected the end of the line after a table header");
    FAILS("[mcp_servers.s]\n= 'x'\n", "line 2: expected a key");
    FAILS("[mcp_servers.s]\n\"\"\"k\"\"\" = 'x'\n", "a key cannot be a multi-line string");
    FAILS("[a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q]\n", "more than 16 dotted parts");
    FAILS("[mcp_servers.a.b.c.d.e.f.g.h]\ni.j.k.l.m.n.o.p.q = 1\n", "more than 16 dotted parts");
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
        struct json_object *out = NULL, *notes = NULL;
        int r = mcp_toml_read_servers(exact, len, &out, &notes, &e);
        /* the last two are whole; a lone sign and "tru" are values left out */
        CHECK(r == -EBADMSG || (r == 0 && (i >= 8 || i == 0 || i == 3)));
        CHECK(r < 0 || i >= 8 || json_object_object_length(notes) == 1);
        json_object_put(out);
        json_object_put(notes);
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
    struct json_object *o = NULL, *no = NULL;
    CHECK_INT(mcp_toml_read_servers(t, strlen(t), &o, &no, &e), 0);
    json_object_put(no);
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
    CHECK_INT(big ? mcp_toml_read_servers(big, len, &o, &no, &e) : -1, 0);
    json_object_put(no);
    CHECK_INT(json_object_object_length(o), 5000);
    json_object_put(o);
    free(big);
    free(t);
}

TESTS_MAIN(test_codex_file, test_values, test_skipped, test_shapes, test_unread, test_errors,
           test_strings_hostile)
