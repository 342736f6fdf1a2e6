/* test_secmem.c - wiping, comparing, randomness, JSON writing of secrets */
#include <sys/prctl.h>
#include <sys/resource.h>

#include "credkit/jsonw.h"
#include "credkit/secmem.h"

#include "tests.h"

static void test_compare(void)
{
    CHECK(secure_streq("abc", "abc"));
    CHECK(!secure_streq("abc", "abd"));
    CHECK(secure_streq("state-1", "state-1"));
    CHECK(!secure_streq("state-1", "state-12"));
    CHECK(!secure_streq(NULL, "x"));
    char buf[8] = "secret!";
    secure_wipe(buf, sizeof(buf));
    for (size_t i = 0; i < sizeof(buf); i++)
        CHECK_INT(buf[i], 0);
}

static void test_random(void)
{
    char *a = NULL, *b = NULL;
    CHECK_INT(secure_random_token(32, &a), 0);
    CHECK_INT(secure_random_token(32, &b), 0);
    CHECK_INT(strlen(a), 43);
    CHECK(strcmp(a, b) != 0);
    CHECK(strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == 43);
    secure_free(a);
    secure_free(b);
    CHECK_INT(secure_random_token(0, &a), -EINVAL);
}

static void test_harden(void)
{
    unsigned long long before = 0;
    CHECK_INT(secure_harden_process(&before), 0);
    struct rlimit rl;
    CHECK_INT(getrlimit(RLIMIT_CORE, &rl), 0);
    CHECK_INT(rl.rlim_cur, 0);
    CHECK_INT(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
}

static void test_jsonw(void)
{
    struct buf b;
    buf_init(&b, 1024);
    CHECK_INT(jsonw_string(&b, "a\"b\\c\n\x01\x7f", 8), 0);
    CHECK_STR(buf_str(&b), "\"a\\\"b\\\\c\\n\\u0001\\u007f\"");
    buf_reset(&b);
    CHECK_INT(jsonw_kv_string(&b, "k", "v"), 0);
    CHECK_INT(buf_append_char(&b, ','), 0);
    CHECK_INT(jsonw_kv_int(&b, "n", -12), 0);
    CHECK_STR(buf_str(&b), "\"k\":\"v\",\"n\":-12");
    buf_release(&b);
}

TESTS_MAIN(test_compare, test_random, test_harden, test_jsonw)
