/* test_stderr_tail.c - the last stderr lines of a server: control characters escaped, long
 * lines cut at a character boundary with "...", the ring keeping the newest lines oldest first,
 * logging them, clearing. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/stderr_tail.h"
#include "tests.h"

/* What stderr_tail_log() writes for server 's' at LOG_WARN, into out. */
static void logged(const struct stderr_tail *t, char *out, size_t size)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    struct log *l = log_new("t", fileno(f));
    CHECK(l != NULL);
    stderr_tail_log(t, l, LOG_WARN, "s");
    log_free(l);
    size_t n = (size_t)pread(fileno(f), out, size - 1, 0);
    out[n < size ? n : 0] = 0;
    fclose(f);
}

static void test_escape(void)
{
    char out[STDERR_TAIL_LINE_BUF];
    stderr_tail_escape(out, "plain text", 10);
    CHECK_STR(out, "plain text");
    stderr_tail_escape(out, "a\x1b[31mred\tb\x7f", 12);
    CHECK_STR(out, "a\\x1b[31mred\\x09b\\x7f");
    stderr_tail_escape(out, "cut here", 3);
    CHECK_STR(out, "cut");
    stderr_tail_escape(out, "", 0);
    CHECK_STR(out, "");
}

static void test_long_line(void)
{
    char line[1000], out[STDERR_TAIL_LINE_BUF];
    memset(line, 'x', sizeof(line));
    stderr_tail_escape(out, line, sizeof(line));
    CHECK_INT(strlen(out), STDERR_TAIL_LINE_MAX + 3);
    CHECK(strcmp(out + STDERR_TAIL_LINE_MAX, "...") == 0);

    /* all escapes: the bound holds */
    memset(line, '\x01', sizeof(line));
    stderr_tail_escape(out, line, sizeof(line));
    CHECK(strlen(out) < STDERR_TAIL_LINE_BUF);
    CHECK(strstr(out, "...") != NULL);

    /* two-byte characters: never cut between the bytes of one */
    for (size_t i = 0; i + 1 < sizeof(line); i += 2) {
        line[i] = '\xc3';
        line[i + 1] = '\xa9'; /* é */
    }
    for (size_t shift = 0; shift < 2; shift++) {
        stderr_tail_escape(out, line + shift, sizeof(line) - 2);
        size_t n = strlen(out);
        CHECK(n > 3 && strcmp(out + n - 3, "...") == 0);
        /* before the "...": whole characters only (an even run of c3 a9 after any lead) */
        size_t body = n - 3, start = shift ? 1 : 0;
        CHECK_INT((body - start) % 2, 0);
        CHECK(body == 0 || (unsigned char)out[body - 1] == 0xa9);
    }
}

static void test_ring(void)
{
    struct stderr_tail t = STDERR_TAIL_INIT;
    CHECK_INT(stderr_tail_count(&t), 0);
    CHECK(stderr_tail_at(&t, 0) == NULL);
    stderr_tail_add(&t, "one", 3);
    stderr_tail_add(&t, "two\r", 4);
    CHECK_INT(stderr_tail_count(&t), 2);
    CHECK_STR(stderr_tail_at(&t, 0), "one");
    CHECK_STR(stderr_tail_at(&t, 1), "two\\x0d");
    char name[16];
    for (int i = 3; i <= 9; i++) {
        int n = snprintf(name, sizeof(name), "line %d", i);
        stderr_tail_add(&t, name, (size_t)n);
    }
    CHECK_INT(stderr_tail_count(&t), STDERR_TAIL_LINES);
    CHECK_STR(stderr_tail_at(&t, 0), "line 5");
    CHECK_STR(stderr_tail_at(&t, STDERR_TAIL_LINES - 1), "line 9");
    CHECK(stderr_tail_at(&t, STDERR_TAIL_LINES) == NULL);

    char got[1024];
    logged(&t, got, sizeof(got));
    CHECK_STR(got, "t: warning: server 's': stderr (its last lines): line 5\n"
                   "t: warning: server 's': stderr: line 6\n"
                   "t: warning: server 's': stderr: line 7\n"
                   "t: warning: server 's': stderr: line 8\n"
                   "t: warning: server 's': stderr: line 9\n");

    stderr_tail_clear(&t);
    CHECK_INT(stderr_tail_count(&t), 0);
    logged(&t, got, sizeof(got));
    CHECK_STR(got, "");
    stderr_tail_add(&t, "alone", 5);
    logged(&t, got, sizeof(got));
    CHECK_STR(got, "t: warning: server 's': stderr (its last line): alone\n");
}

TESTS_MAIN(test_escape, test_long_line, test_ring)
