/* test_suggest.c - "did you mean": git's distance, its floor, the best candidates */
#include "credkit/suggest.h"

#include "tests.h"

static void test_distance(void)
{
    CHECK_INT(suggest_distance("stauts", "status"), 1); /* a swap is free, plus one */
    CHECK_INT(suggest_distance("lsit", "list"), 1);
    CHECK_INT(suggest_distance("ehco", "echo"), 1);
    CHECK_INT(suggest_distance("GITHUB_TOKN", "GITHUB_TOKEN"), 2); /* a letter added: 1 */
    CHECK_INT(suggest_distance("lixst", "list"), 4);               /* one dropped: 3 */
    CHECK_INT(suggest_distance("lost", "list"), 3);                /* one changed: 2 */
    CHECK_INT(suggest_distance("github_tokn", "GITHUB_TOKEN"), 2); /* case does not count */
    CHECK_INT(suggest_distance("stat", "status"), 0);              /* a prefix */
    CHECK_INT(suggest_distance("listt", "list"), 4);
    CHECK_INT(suggest_distance("ech", "mcp_alpha_echo"), 12);
    CHECK_INT(suggest_distance("mcp_beta_files_x", "mcp_beta_files"), 7);
    CHECK_INT(suggest_distance("ab", "xaby"), 3);
    CHECK_INT(suggest_distance("", "list"), SUGGEST_FLOOR);
    CHECK(suggest_distance("whoami", "status") >= SUGGEST_FLOOR);
}

static void test_best(void)
{
    static const char *const cmds[] = {"login", "header", "status", "logout"};
    struct suggest s;
    struct buf out;
    const char *const *v;
    buf_init(&out, 4096);

    suggest_init(&s, "stauts");
    for (size_t i = 0; i < 4; i++)
        suggest_add(&s, cmds[i]);
    CHECK_INT(suggest_result(&s, &v), 1);
    CHECK_STR(v[0], "status");
    CHECK_INT(suggest_append(&s, NULL, &out), 0);
    CHECK_STR(buf_str(&out), "; did you mean 'status'?");
    suggest_release(&s);

    /* every candidate at the best distance, in the order offered */
    buf_reset(&out);
    suggest_init(&s, "log");
    for (size_t i = 0; i < 4; i++)
        suggest_add(&s, cmds[i]);
    CHECK_INT(suggest_append(&s, NULL, &out), 0);
    CHECK_STR(buf_str(&out), "; did you mean 'login' or 'logout'?");
    suggest_release(&s);

    buf_reset(&out);
    suggest_init(&s, "lst");
    suggest_add(&s, "jsx");  /* two changes: 5 */
    suggest_add(&s, "list"); /* one letter added: 2 */
    suggest_add(&s, "last");
    suggest_add(&s, "list"); /* offered twice, said once */
    suggest_add(&s, "lost");
    CHECK_INT(suggest_append(&s, "--", &out), 0);
    CHECK_STR(buf_str(&out), "; did you mean '--list', '--last' or '--lost'?");
    suggest_release(&s);

    /* nothing close: nothing said */
    buf_reset(&out);
    suggest_init(&s, "whoami");
    for (size_t i = 0; i < 4; i++)
        suggest_add(&s, cmds[i]);
    CHECK_INT(suggest_result(&s, &v), 0);
    CHECK_INT(suggest_append(&s, NULL, &out), 0);
    CHECK_STR(buf_str(&out), "");
    suggest_release(&s);

    /* a word every candidate starts with says nothing (git: "too ambiguous") */
    suggest_init(&s, "l");
    suggest_add(&s, "login");
    suggest_add(&s, "logout");
    CHECK_INT(suggest_result(&s, &v), 0);
    suggest_release(&s);

    /* the list form, bounded */
    buf_reset(&out);
    suggest_init(&s, "echo");
    suggest_add(&s, "mcp_a_echo");
    suggest_add(&s, "mcp_b_echo");
    suggest_add(&s, "mcp_c_echo");
    suggest_add(&s, "zzz");
    CHECK_INT(suggest_append_list(&s, 2, &out), 0);
    CHECK_STR(buf_str(&out), "mcp_a_echo, mcp_b_echo");
    suggest_release(&s);

    /* a name under two spellings (a tool's exposed and raw names): once, at its best */
    suggest_init(&s, "ehco");
    suggest_add(&s, "mcp_ev_echo");
    suggest_add_as(&s, "echo", "mcp_ev_echo");
    suggest_add(&s, "mcp_ev_add");
    suggest_add_as(&s, "add", "mcp_ev_add");
    CHECK_INT(suggest_result(&s, &v), 1);
    CHECK_STR(v[0], "mcp_ev_echo");
    suggest_release(&s);

    /* containing or contained: only when nothing is close by the distance */
    suggest_init(&s, "conect-timeout");
    suggest_add(&s, "timeout");
    suggest_add(&s, "connect-timeout");
    CHECK_INT(suggest_result(&s, &v), 1);
    CHECK_STR(v[0], "connect-timeout");
    suggest_release(&s);
    suggest_init(&s, "mcp_beta_files_x"); /* two letters dropped: 7, not close */
    suggest_add(&s, "mcp_beta_echo");
    suggest_add(&s, "mcp_beta_files");
    CHECK_INT(suggest_result(&s, &v), 1);
    CHECK_STR(v[0], "mcp_beta_files");
    suggest_release(&s);
    suggest_init(&s, "ech");
    suggest_add(&s, "mcp_alpha_echo");
    suggest_add(&s, "mcp_beta_echo");
    suggest_add(&s, "ab"); /* too short to be contained */
    CHECK_INT(suggest_result(&s, &v), 2);
    suggest_release(&s);
    buf_release(&out);
}

TESTS_MAIN(test_distance, test_best)
