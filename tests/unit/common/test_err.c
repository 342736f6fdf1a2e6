/* test_err.c - error codes and messages: set, prefix, fall back, truncate safely */
#include <errno.h>

#include "credkit/err.h"

#include "tests.h"

static void test_set(void)
{
    struct err e = ERR_INIT;
    CHECK_INT(err_set(&e, -ENOENT, "'%s' does not exist (%d)", "x.json", 7), -ENOENT);
    CHECK_INT(e.code, -ENOENT);
    CHECK_STR(e.msg, "'x.json' does not exist (7)");
    CHECK_STR(err_msg(&e), "'x.json' does not exist (7)");

    /* a non-negative code is a caller's mistake: it must still read as a failure */
    CHECK_INT(err_set(&e, 0, "zero"), -EIO);
    CHECK_INT(e.code, -EIO);
    CHECK_STR(e.msg, "zero");
    CHECK_INT(err_set(&e, EINVAL, "positive"), -EIO);
    CHECK_INT(e.code, -EIO);
    CHECK_STR(e.msg, "positive");

    /* NULL e: the code alone, with the same conversion */
    CHECK_INT(err_set(NULL, -EACCES, "nobody sees %s", "this"), -EACCES);
    CHECK_INT(err_set(NULL, 3, "nobody"), -EIO);
}

static void test_set_truncates(void)
{
    struct err *e = malloc(sizeof(*e)); /* heap: ASan sees any write past the end */
    CHECK(e != NULL);
    if (!e)
        return;
    memset(e, 'Z', sizeof(*e));
    char *big = malloc(3 * ERR_MSG_MAX);
    CHECK(big != NULL);
    if (!big) {
        free(e);
        return;
    }
    memset(big, 'a', 3 * ERR_MSG_MAX - 1);
    big[3 * ERR_MSG_MAX - 1] = 0;
    CHECK_INT(err_set(e, -E2BIG, "%s", big), -E2BIG);
    CHECK_INT(strnlen(e->msg, sizeof(e->msg)), ERR_MSG_MAX - 1);
    CHECK_INT(e->msg[ERR_MSG_MAX - 1], 0);
    CHECK_INT(e->msg[ERR_MSG_MAX - 2], 'a');
    free(big);
    free(e);
}

static void test_prefix(void)
{
    struct err e = ERR_INIT;
    (void)err_set(&e, -EBADMSG, "line 4, column 2: expected ','");
    CHECK_INT(err_prefix(&e, "'%s'", "~/.pi/agent/mcp.json"), -EBADMSG);
    CHECK_STR(e.msg, "'~/.pi/agent/mcp.json': line 4, column 2: expected ','");
    CHECK_INT(e.code, -EBADMSG);
    CHECK_INT(err_prefix(&e, "cannot read"), -EBADMSG);
    CHECK_STR(e.msg, "cannot read: '~/.pi/agent/mcp.json': line 4, column 2: expected ','");

    /* a code without a message: the strerror text is prefixed */
    err_clear(&e);
    e.code = -ENOENT;
    CHECK_INT(err_prefix(&e, "ctx"), -ENOENT);
    CHECK_STR(e.msg, "ctx: No such file or directory");

    /* nothing set at all: still a failure, still a message */
    err_clear(&e);
    CHECK_INT(err_prefix(&e, "ctx"), -EIO);
    CHECK_INT(e.code, -EIO);
    CHECK_STR(e.msg, "ctx: unknown error");

    /* the old message may be an argument of the new prefix: it is copied first */
    (void)err_set(&e, -EINVAL, "boom");
    CHECK_INT(err_prefix(&e, "%s", e.msg), -EINVAL);
    CHECK_STR(e.msg, "boom: boom");

    CHECK_INT(err_prefix(NULL, "ctx %d", 1), -EIO);
}

/* e is on the heap so that ASan catches a write past e->msg */
static void check_prefix_len(size_t prefix_len, size_t old_len)
{
    struct err *e = malloc(sizeof(*e));
    char *prefix = malloc(prefix_len + 1), *old = malloc(old_len + 1);
    CHECK(e && prefix && old);
    if (!e || !prefix || !old)
        goto out;
    memset(prefix, 'p', prefix_len);
    prefix[prefix_len] = 0;
    memset(old, 'o', old_len);
    old[old_len] = 0;
    *e = (struct err)ERR_INIT;
    (void)err_set(e, -EPROTO, "%s", old);
    CHECK_INT(err_prefix(e, "%s", prefix), -EPROTO);
    size_t n = strnlen(e->msg, sizeof(e->msg));
    CHECK(n < sizeof(e->msg)); /* NUL-terminated inside the buffer */
    size_t want_prefix = prefix_len < ERR_MSG_MAX - 1 ? prefix_len : ERR_MSG_MAX - 1;
    CHECK(strspn(e->msg, "p") == want_prefix);
    if (want_prefix + 2 < ERR_MSG_MAX) {
        /* room for the separator: it is there, and the old text fills what is left */
        CHECK(strncmp(e->msg + want_prefix, ": ", 2) == 0);
        size_t want_old = old_len;
        if (want_old > ERR_MSG_MAX - 1 - want_prefix - 2)
            want_old = ERR_MSG_MAX - 1 - want_prefix - 2;
        CHECK_INT(strspn(e->msg + want_prefix + 2, "o"), want_old);
        CHECK_INT(n, want_prefix + 2 + want_old);
    } else {
        CHECK_INT(n, want_prefix);
    }
out:
    free(e);
    free(prefix);
    free(old);
}

static void test_prefix_truncates(void)
{
    /* a very long message, a very long prefix, and every length around the edge */
    check_prefix_len(3, ERR_MSG_MAX - 1);
    check_prefix_len(3 * ERR_MSG_MAX, 10);
    check_prefix_len(3 * ERR_MSG_MAX, ERR_MSG_MAX - 1);
    for (size_t p = ERR_MSG_MAX - 6; p <= ERR_MSG_MAX + 1; p++)
        check_prefix_len(p, 40);
    check_prefix_len(0, 10);

    /* repeated prefixes on a full message stay bounded */
    struct err *e = malloc(sizeof(*e));
    CHECK(e != NULL);
    if (!e)
        return;
    *e = (struct err)ERR_INIT;
    (void)err_set(e, -EIO, "%0*d", ERR_MSG_MAX + 100, 0);
    for (int i = 0; i < 50; i++)
        CHECK_INT(err_prefix(e, "ctx%d", i), -EIO);
    CHECK_INT(strnlen(e->msg, sizeof(e->msg)), ERR_MSG_MAX - 1);
    CHECK(strncmp(e->msg, "ctx49: ctx48: ", 14) == 0);
    free(e);
}

static void test_msg_and_clear(void)
{
    struct err e = ERR_INIT;
    CHECK_STR(err_msg(NULL), "unknown error");
    CHECK_STR(err_msg(&e), "unknown error");
    e.code = -EACCES;
    CHECK_STR(err_msg(&e), strerror(EACCES));
    (void)err_set(&e, -EACCES, "'f' can be read by others");
    CHECK_STR(err_msg(&e), "'f' can be read by others");
    err_clear(&e);
    CHECK_INT(e.code, 0);
    CHECK_STR(e.msg, "");
    CHECK_STR(err_msg(&e), "unknown error");
    err_clear(NULL); /* must not crash */
    CHECK(1);
}

TESTS_MAIN(test_set, test_set_truncates, test_prefix, test_prefix_truncates, test_msg_and_clear)
