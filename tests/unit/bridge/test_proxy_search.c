/* test_proxy_search.c - the proxy tool's answers read off a catalogue fed by hand
 * (catalog/proxy_search.h): the regex guard (nested repetition, back references, bounds,
 * length), search (words OR'ed, name matches first, regex, schemas, the bound), schema
 * rendering, describe, a server's tools, a status line and close names. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "credkit/buf.h"
#include "credkit/log.h"

#include "catalog/catalog.h"
#include "catalog/proxy_search.h"
#include "tests.h"

static struct json_object *parse(const char *json)
{
    struct json_object *o = json_tokener_parse(json);
    if (!o) {
        fprintf(stderr, "bad test JSON: %s\n", json);
        exit(2);
    }
    return o;
}

static void test_regex_check(void)
{
    char err[256];
    static const char *const fine[] = {
        "^get-",  "a|b",   "(ab)+",        "[a-z]+", "x{2,5}", "[(]+",    "(a|b)+", "((ab)c)+",
        "a\\+b+", "[]a]+", "[[:alpha:]]+", "{",      "a{",     "(a)(b)*", "sum$",
    };
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
        err[0] = 0;
        int r = proxy_regex_check(fine[i], err, sizeof(err));
        if (r != 0)
            fprintf(stderr, "refused '%s': %s\n", fine[i], err);
        CHECK_INT(r, 0);
    }
    static const struct {
        const char *pattern, *why;
    } refused[] = {
        {"(a+)+", "repeats a repetition"},    {"(a*){2}", "repeats a repetition"},
        {"((a)+)*", "repeats a repetition"},  {"(x(a?))+$", "repeats a repetition"},
        {"a**", "repeats a repetition"},      {"(a)\\1", "back reference"},
        {"a{1000}", "{1000} times: at most"}, {"[abc", "'[' that does not close"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        err[0] = 0;
        CHECK_INT(proxy_regex_check(refused[i].pattern, err, sizeof(err)), -EINVAL);
        CHECK_CONTAINS(err, refused[i].why);
    }
    char longp[300];
    memset(longp, 'a', 257);
    longp[257] = 0;
    CHECK_INT(proxy_regex_check(longp, err, sizeof(err)), -EINVAL);
    CHECK_CONTAINS(err, "at most 256");
    char deep[80] = "";
    for (int i = 0; i < 33; i++)
        strcat(deep, "(");
    CHECK_INT(proxy_regex_check(deep, err, sizeof(err)), -EINVAL);
    CHECK_CONTAINS(err, "deeper than");
}

/* A catalogue of two servers, every tool direct, no proxy tool. */
static struct catalog *catalog_of(struct log *l, struct catalog_source **a,
                                  struct catalog_source **b)
{
    struct catalog *c = NULL;
    if (catalog_new(l, &c) < 0 || catalog_source_new("alpha", NULL, NULL, a) < 0 ||
        catalog_source_new("beta", NULL, NULL, b) < 0)
        exit(2);
    catalog_source_set_items(
        *a, CATALOG_TOOLS,
        parse("[{\"name\":\"read_file\",\"description\":\"Reads a file.\\nMore text\","
              "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":"
              "\"string\",\"description\":\"Where\"},\"mode\":{\"enum\":[\"r\",\"rb\"]},"
              "\"lines\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},\"x\":{\"type\":"
              "[\"string\",\"null\"]},\"y\":{}},\"required\":[\"path\"]}},"
              "{\"name\":\"search\",\"description\":\"Finds FILES by name\"},"
              "{\"name\":\"echo\",\"description\":\"Says it back\"}]"));
    catalog_source_set_items(*b, CATALOG_TOOLS,
                             parse("[{\"name\":\"echo\",\"description\":\"Reads nothing\"},"
                                   "{\"name\":\"files\",\"description\":\"Lists\"}]"));
    struct catalog_source *v[] = {*a, *b};
    if (catalog_rebuild(c, CATALOG_TOOLS, v, 2, false) < 0)
        exit(2);
    return c;
}

static struct log *test_log(void)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/proxy_tool.log", tests_tmpdir());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    struct log *l = fd >= 0 ? log_new("test_proxy_tool", fd) : NULL;
    if (!l)
        exit(2);
    return l;
}

static void test_search(void)
{
    struct log *l = test_log();
    struct catalog_source *a, *b;
    struct catalog *c = catalog_of(l, &a, &b);
    struct buf out;
    char err[256];
    buf_init(&out, 1 << 20);

    /* words OR'ed, case-insensitive; name matches before description matches */
    CHECK_INT(proxy_search(c, "FILE nothing", false, false, &out, err, sizeof(err)), 0);
    CHECK_STR(buf_str(&out), "4 tools match 'FILE nothing':\n"
                             "mcp_alpha_read_file - Reads a file....\n"
                             "mcp_beta_files - Lists\n"
                             "mcp_alpha_search - Finds FILES by name\n"
                             "mcp_beta_echo - Reads nothing\n");
    buf_reset(&out);
    /* the raw name counts as a name */
    CHECK_INT(proxy_search(c, "^echo$", true, false, &out, err, sizeof(err)), 0);
    CHECK_STR(buf_str(&out), "2 tools match '^echo$':\nmcp_alpha_echo - Says it back\n"
                             "mcp_beta_echo - Reads nothing\n");
    buf_reset(&out);
    CHECK_INT(proxy_search(c, "read_", false, true, &out, err, sizeof(err)), 0);
    CHECK_CONTAINS(buf_str(&out), "1 tool matches 'read_':\nmcp_alpha_read_file - Reads a file");
    CHECK_CONTAINS(buf_str(&out), "  inputSchema: {\"type\":\"object\",\"properties\":{\"path\"");
    buf_reset(&out);
    CHECK_INT(proxy_search(c, "zebra", false, false, &out, err, sizeof(err)), 0);
    CHECK_STR(buf_str(&out), "no tool matches 'zebra' (5 tools in all)\n");
    buf_reset(&out);
    CHECK_INT(proxy_search(c, "(e+)+", true, false, &out, err, sizeof(err)), -EINVAL);
    CHECK_CONTAINS(err, "repeats a repetition");
    CHECK_INT(proxy_search(c, "a(", true, false, &out, err, sizeof(err)), -EINVAL);
    CHECK_CONTAINS(err, "not a valid regular expression");
    CHECK_INT(proxy_search(c, "  ", false, false, &out, err, sizeof(err)), -EINVAL);
    CHECK_CONTAINS(err, "no words");

    /* the held tools a search finds (directTools "search"): every match of a held source, by
     * name or description, none of the listed ones */
    struct strv held = STRV_INIT;
    CHECK_INT(proxy_search_held(c, "FILE", false, &held, err, sizeof(err)), 0);
    CHECK_INT(held.n, 0); /* nothing is held */
    CHECK_INT(catalog_source_set_direct(a, SERVER_DIRECT_SEARCH, NULL), 0);
    struct catalog_source *ab[] = {a, b};
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, ab, 2, false), 1);
    CHECK_INT(proxy_search_held(c, "FILE nothing", false, &held, err, sizeof(err)), 0);
    CHECK_INT(held.n, 2);
    CHECK_STR(held.n == 2 ? held.v[0] : NULL, "mcp_alpha_read_file");
    CHECK_STR(held.n == 2 ? held.v[1] : NULL, "mcp_alpha_search");
    strv_release(&held);
    CHECK_INT(proxy_search_held(c, "a(", true, &held, err, sizeof(err)), -EINVAL);
    CHECK_INT(held.n, 0);
    CHECK_INT(catalog_source_set_direct(a, SERVER_DIRECT_UNSET, NULL), 0);
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, ab, 2, false), 1);

    /* searchKeywords: more words, by raw or exposed name or glob, weighted as the description;
     * also in a regex search */
    struct json_object *kw = parse("{\"read_file\": [\"cat\", \"open up\"],"
                                   " \"mcp_alpha_e*\": [\"parrot\"], \"*\": [\"alphabet\"]}");
    catalog_source_set_keywords(a, kw);
    json_object_put(kw);
    buf_reset(&out);
    CHECK_INT(proxy_search(c, "parrot cat", false, false, &out, err, sizeof(err)), 0);
    CHECK_STR(buf_str(&out), "2 tools match 'parrot cat':\n"
                             "mcp_alpha_read_file - Reads a file....\n"
                             "mcp_alpha_echo - Says it back\n");
    buf_reset(&out);
    CHECK_INT(proxy_search(c, "echo alphabet", false, false, &out, err, sizeof(err)), 0);
    CHECK_STR(buf_str(&out), "4 tools match 'echo alphabet':\nmcp_alpha_echo - Says it back\n"
                             "mcp_beta_echo - Reads nothing\n"
                             "mcp_alpha_read_file - Reads a file....\n"
                             "mcp_alpha_search - Finds FILES by name\n");
    buf_reset(&out);
    CHECK_INT(proxy_search(c, "^open", true, false, &out, err, sizeof(err)), 0);
    CHECK_STR(buf_str(&out), "1 tool matches '^open':\nmcp_alpha_read_file - Reads a file....\n");
    catalog_source_set_keywords(a, NULL);
    buf_reset(&out);
    CHECK_INT(proxy_search(c, "parrot", false, false, &out, err, sizeof(err)), 0);
    CHECK_STR(buf_str(&out), "no tool matches 'parrot' (5 tools in all)\n");

    /* bounded: PROXY_SEARCH_MAX shown, the rest counted */
    struct catalog_source *many;
    CHECK_INT(catalog_source_new("many", NULL, NULL, &many), 0);
    struct json_object *arr = json_object_new_array();
    for (int i = 0; i < 70; i++) {
        char name[32];
        snprintf(name, sizeof(name), "t%02d", i);
        struct json_object *t = json_object_new_object();
        json_object_object_add(t, "name", json_object_new_string(name));
        json_object_array_add(arr, t);
    }
    catalog_source_set_items(many, CATALOG_TOOLS, arr);
    struct catalog_source *v[] = {many};
    CHECK_INT(catalog_rebuild(c, CATALOG_TOOLS, v, 1, false), 1);
    buf_reset(&out);
    CHECK_INT(proxy_search(c, "t", false, false, &out, err, sizeof(err)), 0);
    CHECK_CONTAINS(buf_str(&out), "70 tools match 't' (name matches first):\nmcp_many_t00\n");
    CHECK_CONTAINS(buf_str(&out), "mcp_many_t49\n... and 20 more: narrow the search\n");
    CHECK(!strstr(buf_str(&out), "mcp_many_t50"));

    buf_release(&out);
    catalog_free(c);
    catalog_source_free(a);
    catalog_source_free(b);
    catalog_source_free(many);
    log_free(l);
}

static void test_describe_and_lists(void)
{
    struct log *l = test_log();
    struct catalog_source *a, *b;
    struct catalog *c = catalog_of(l, &a, &b);
    struct buf out;
    buf_init(&out, 1 << 20);

    CHECK_INT(proxy_describe(c, "mcp_alpha_read_file", &out), 0);
    CHECK_STR(buf_str(&out), "mcp_alpha_read_file (server 'alpha')\n"
                             "Reads a file.\nMore text\n"
                             "parameters:\n"
                             "  path (string, required): Where\n"
                             "  mode (one of \"r\"|\"rb\")\n"
                             "  lines (array of integer)\n"
                             "  x (string|null)\n"
                             "  y (any)\n");
    buf_reset(&out);
    /* a raw name only one server has works; one two servers have does not */
    CHECK_INT(proxy_describe(c, "files", &out), 0);
    CHECK_STR(buf_str(&out), "mcp_beta_files (server 'beta')\nLists\nparameters:\n"
                             "  (no parameters)\n");
    buf_reset(&out);
    CHECK_INT(proxy_describe(c, "echo", &out), -ENOENT);
    CHECK_INT(proxy_describe(c, "nothing", &out), -ENOENT);
    struct catalog_tool t;
    CHECK(proxy_find_tool(c, "search", &t) && t.src == a);
    CHECK(!proxy_find_tool(c, "echo", &t));

    buf_reset(&out);
    CHECK_INT(proxy_list_server(c, b, "connected", &out), 0);
    CHECK_STR(buf_str(&out), "server 'beta' (connected): 2 tools\nmcp_beta_echo - Reads nothing\n"
                             "mcp_beta_files - Lists\n");
    CHECK_INT(proxy_tool_count(c, a), 3);

    buf_reset(&out);
    CHECK_INT(proxy_status_line(&out, "alpha", "connected", NULL, 3), 0);
    CHECK_INT(proxy_status_line(&out, "gone", "failed", "cannot run 'x': No such file\nmore", 1),
              0);
    CHECK_STR(
        buf_str(&out),
        "alpha: connected, 3 tools\ngone: failed (cannot run 'x': No such file...), 1 tool\n");

    buf_reset(&out);
    CHECK_INT(proxy_suggest(c, "ech", 5, &out), 0);
    CHECK_STR(buf_str(&out), "mcp_alpha_echo, mcp_beta_echo");
    buf_reset(&out);
    CHECK_INT(proxy_suggest(c, "mcp_beta_files_x", 5, &out), 0);
    CHECK_STR(buf_str(&out), "mcp_beta_files");
    buf_reset(&out);
    CHECK_INT(proxy_suggest(c, "zzz", 5, &out), 0);
    CHECK_STR(buf_str(&out), "");

    /* a schema that is not one */
    buf_reset(&out);
    CHECK_INT(proxy_render_schema(NULL, &out), 0);
    CHECK_STR(buf_str(&out), "  (no parameters)\n");

    buf_release(&out);
    catalog_free(c);
    catalog_source_free(a);
    catalog_source_free(b);
    log_free(l);
}

TESTS_MAIN(test_regex_check, test_search, test_describe_and_lists)
