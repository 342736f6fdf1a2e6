/* test_naming.c - exposed names: the four prefix modes ("short" without a "-mcp" suffix),
 * sanitising (spaces, dots, slashes, UTF-8 characters, stray bytes, empty names), the 64-byte
 * bound (exactly 64, 65 and longer, after sanitising), the hash suffix against values computed
 * independently (Python), and the collision set: deterministic suffixes, names that already end in "_2", suffixes at the bound,
 * thousands of names (one of them thousands of times) without quadratic cost. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "config/naming.h"
#include "tests.h"

static const char *expose(enum mcp_tool_prefix p, const char *server, const char *name)
{
    static char buf[4][NAMING_MAX + 1];
    static unsigned i;
    char *b = buf[i++ % 4];
    memset(b, 'Z', NAMING_MAX + 1);
    naming_expose(p, server, name, b);
    return b;
}

static char *repeat(char *out, const char *unit, size_t n)
{
    out[0] = 0;
    for (size_t i = 0; i < n; i++)
        strcat(out, unit);
    return out;
}

static void test_prefix_modes(void)
{
    CHECK_STR(expose(MCP_TOOL_PREFIX_MCP, "github", "create_issue"), "mcp_github_create_issue");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SERVER, "github", "create_issue"), "github_create_issue");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SHORT, "github", "create_issue"), "github_create_issue");
    /* the adapter's "server" keeps the whole name, "short" drops one "-mcp" suffix */
    CHECK_STR(expose(MCP_TOOL_PREFIX_MCP, "github-mcp", "x"), "mcp_github-mcp_x");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SERVER, "github-mcp", "x"), "github-mcp_x");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SHORT, "github-mcp", "x"), "github_x");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SHORT, "a-mcp-mcp", "x"), "a-mcp_x");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SHORT, "-mcp", "x"), "-mcp_x");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SHORT, "mcp", "x"), "mcp_x");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SHORT, "github-MCP", "x"), "github-MCP_x");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SHORT, "my.srv-mcp", "x"), "my_srv_x");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SERVER, NULL, "x"), "_x");
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "github", "create_issue"), "create_issue");
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, NULL, "x"), "x");
    CHECK_STR(expose(MCP_TOOL_PREFIX_MCP, "a-b", "C-d_9"), "mcp_a-b_C-d_9");
}

static void test_sanitise(void)
{
    CHECK_STR(expose(MCP_TOOL_PREFIX_MCP, "my server", "get file"), "mcp_my_server_get_file");
    CHECK_STR(expose(MCP_TOOL_PREFIX_MCP, "srv.local", "fs/read.file"),
              "mcp_srv_local_fs_read_file");
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", "a:b@c!d$e%f\\g\"h'i\tj"), "a_b_c_d_e_f_g_h_i_j");
    /* one '_' per character, whatever its UTF-8 length: é (2), € (3), 😀 (4); octal escapes
     * where a hex escape would swallow the next character */
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", "caf\xc3\xa9"), "caf_");
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", "\342\202\2545"), "_5");
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", "a\360\237\230\200b"), "a_b");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SHORT, "\xc3\xa9t\xc3\xa9", "x"), "_t__x");
    /* invalid UTF-8: stray continuation bytes and bytes that open nothing count one each; a
     * truncated sequence swallows only the continuation bytes it has */
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", "a\200\200b"), "a__b");
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", "a\377\300b"), "a__b");
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", "a\342\202b"), "a_b");
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", "a\303\251\251b"), "a__b");
    /* empty */
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", ""), "_");
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "srv", NULL), "_");
    CHECK_STR(expose(MCP_TOOL_PREFIX_MCP, "", ""), "mcp__");
    CHECK_STR(expose(MCP_TOOL_PREFIX_SHORT, "", ""), "_");
}

static void test_length_bound(void)
{
    char name[512], want[600];

    /* exactly 64 bytes: kept as is */
    repeat(name, "x", 64);
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", name), name);
    CHECK_INT(strlen(expose(MCP_TOOL_PREFIX_NONE, "", name)), 64);
    /* 64 with the prefix: "mcp_s_" + 58 */
    repeat(name, "a", 58);
    snprintf(want, sizeof(want), "mcp_s_%s", name);
    CHECK_STR(expose(MCP_TOOL_PREFIX_MCP, "s", name), want);

    /* 65 bytes: 57 + '_' + hash; expected values computed in Python:
     *   h = FNV-1a-32(full); "%06x" % ((h >> 24) ^ (h & 0xffffff)) */
    repeat(name, "x", 65);
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", name),
              "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_2b1733");
    CHECK_STR(expose(MCP_TOOL_PREFIX_MCP, "github",
                     "get_the_very_long_list_of_all_open_pull_requests_for_this_repository"),
              "mcp_github_get_the_very_long_list_of_all_open_pull_reques_0e09e4");
    /* differing only in the last byte: distinct and each stable */
    CHECK_STR(expose(MCP_TOOL_PREFIX_MCP, "github",
                     "get_the_very_long_list_of_all_open_pull_requests_for_this_repositorz"),
              "mcp_github_get_the_very_long_list_of_all_open_pull_reques_0e0b4e");
    repeat(name, "a", 58);
    strcat(name, "b");
    CHECK_STR(expose(MCP_TOOL_PREFIX_MCP, "s", name),
              "mcp_s_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_3c7de4");
    name[58] = 'c';
    CHECK_STR(expose(MCP_TOOL_PREFIX_MCP, "s", name),
              "mcp_s_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_3c7f92");
    /* the hash is of the unsanitised name: '.' and '/' sanitise alike, hash apart */
    repeat(name, "a", 57);
    strcat(name, ".bbbbbbbbbb");
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", name),
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_4dfbc8");
    name[57] = '/';
    CHECK_STR(expose(MCP_TOOL_PREFIX_NONE, "", name),
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_7f48de");
    /* the bound applies after sanitising: 40 two-byte characters are 40 bytes */
    char mixed[600];
    snprintf(mixed, sizeof(mixed), "a/b c%stail", repeat(name, "\xc3\xa9", 40));
    CHECK_STR(expose(MCP_TOOL_PREFIX_SHORT, "srv.\xc3\xa9", mixed),
              "srv___a_b_c________________________________________tail");
    /* ... and 70 of them are over it, hashed over their bytes */
    CHECK_STR(expose(MCP_TOOL_PREFIX_SHORT, "srv.\xc3\xa9", repeat(name, "\xc3\xa9", 70)),
              "srv_______________________________________________________948942");
    /* very long names stay within the buffer (ASan watches) */
    char huge[10000];
    memset(huge, 'q', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = 0;
    const char *h = expose(MCP_TOOL_PREFIX_MCP, huge, huge);
    CHECK_INT(strlen(h), 64);
    CHECK(strncmp(h, "mcp_qqqq", 8) == 0);
    CHECK(h[57] == '_');
}

static int claim(struct naming_set *s, const char *name, char out[static NAMING_MAX + 1])
{
    snprintf(out, NAMING_MAX + 1, "%s", name);
    return naming_set_claim(s, out);
}

static void test_collisions(void)
{
    struct naming_set *s = naming_set_new();
    CHECK(s != NULL);
    if (!s)
        return;
    char b[NAMING_MAX + 1];

    CHECK_INT(claim(s, "a", b), 0);
    CHECK_STR(b, "a");
    CHECK_INT(claim(s, "a", b), 1);
    CHECK_STR(b, "a_2");
    CHECK_INT(claim(s, "a", b), 1);
    CHECK_STR(b, "a_3");
    /* a tool really named a_2 (taken by the rename above) */
    CHECK_INT(claim(s, "a_2", b), 1);
    CHECK_STR(b, "a_2_2");
    /* a tool named a_4 first, then another "a": a_4 is skipped */
    CHECK_INT(claim(s, "a_4", b), 0);
    CHECK_STR(b, "a_4");
    CHECK_INT(claim(s, "a", b), 1);
    CHECK_STR(b, "a_5");
    CHECK_INT(claim(s, "b", b), 0);
    CHECK_STR(b, "b");
    naming_set_free(s);

    /* taken before the first collision: b_2 and b_3 exist, so the second "b" gets b_4 */
    s = naming_set_new();
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK_INT(claim(s, "b_2", b), 0);
    CHECK_INT(claim(s, "b_3", b), 0);
    CHECK_INT(claim(s, "b", b), 0);
    CHECK_INT(claim(s, "b", b), 1);
    CHECK_STR(b, "b_4");
    naming_set_free(s);
    naming_set_free(NULL);
}

/* At the bound the base is cut to make room, and the cut names are checked as well. */
static void test_collisions_at_bound(void)
{
    struct naming_set *s = naming_set_new();
    CHECK(s != NULL);
    if (!s)
        return;
    char b[NAMING_MAX + 1], full[NAMING_MAX + 1], want[NAMING_MAX + 1];
    repeat(full, "x", 64);

    CHECK_INT(claim(s, full, b), 0);
    CHECK_STR(b, full);
    CHECK_INT(claim(s, full, b), 1);
    snprintf(want, sizeof(want), "%.62s_2", full);
    CHECK_STR(b, want);
    CHECK_INT(strlen(b), 64);
    /* the cut-and-suffixed name arrives as a tool name itself: cutting it for "_2" gives
     * itself again, taken, so it becomes "_3" */
    CHECK_INT(claim(s, want, b), 1);
    snprintf(want, sizeof(want), "%.62s_3", full);
    CHECK_STR(b, want);
    /* and the next of the original name skips that "_3" */
    CHECK_INT(claim(s, full, b), 1);
    snprintf(want, sizeof(want), "%.62s_4", full);
    CHECK_STR(b, want);
    naming_set_free(s);

    /* from _9 to _10 the suffix grows by one byte and the base shrinks by one */
    s = naming_set_new();
    CHECK(s != NULL);
    if (!s)
        return;
    for (int i = 1; i <= 10; i++)
        CHECK_INT(claim(s, full, b), i > 1);
    snprintf(want, sizeof(want), "%.61s_10", full);
    CHECK_STR(b, want);
    CHECK_INT(strlen(b), 64);
    naming_set_free(s);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 5000 distinct names plus 20000 claims of one name: each must come out unique, in the
 * deterministic order, and quickly (trying "_2", "_3"... from the start every time would take
 * 200 M lookups here). */
static void test_many(void)
{
    struct naming_set *s = naming_set_new();
    CHECK(s != NULL);
    if (!s)
        return;
    char b[NAMING_MAX + 1], want[NAMING_MAX + 1];
    double t0 = now();
    int renamed = 0, wrong = 0;
    for (int i = 0; i < 5000; i++) {
        snprintf(want, sizeof(want), "tool%d", i);
        int r = claim(s, want, b);
        if (r != 0 || strcmp(b, want) != 0)
            wrong++;
    }
    for (int i = 1; i <= 20000; i++) {
        int r = claim(s, "same", b);
        if (i == 1)
            snprintf(want, sizeof(want), "same");
        else
            snprintf(want, sizeof(want), "same_%d", i);
        if (r != (i > 1) || strcmp(b, want) != 0)
            wrong++;
        renamed += r;
    }
    double elapsed = now() - t0;
    CHECK_INT(wrong, 0);
    CHECK_INT(renamed, 19999);
    /* every name is in the set once: claiming any again renames it */
    CHECK_INT(claim(s, "tool4999", b), 1);
    CHECK_STR(b, "tool4999_2");
    CHECK_INT(claim(s, "same_20000", b), 1);
    CHECK_STR(b, "same_20000_2");
    CHECK_INT(claim(s, "same", b), 1);
    CHECK_STR(b, "same_20001");
    /* generous even under sanitizers on a loaded machine: the linear cost is milliseconds */
    CHECK(elapsed < 2.0);
    naming_set_free(s);
}

TESTS_MAIN(test_prefix_modes, test_sanitise, test_length_bound, test_collisions,
           test_collisions_at_bound, test_many)
