/* test_refresh.c - when a token counts as fresh: the refresh margin and unknown lifetimes */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "refresh.h"
#include "tests.h"

static void test_margin(void)
{
    CHECK_INT(auth_refresh_margin(0, 3600), 60);  /* at most a minute */
    CHECK_INT(auth_refresh_margin(0, 120), 30);   /* a quarter of the lifetime */
    CHECK_INT(auth_refresh_margin(0, 2), 1);      /* at least a second */
    CHECK_INT(auth_refresh_margin(100, 100), 60); /* no lifetime: a minute */
    CHECK_INT(auth_refresh_margin(100, 50), 60);
}

static void test_fresh(void)
{
    char tok[] = "t0k";
    struct token_entry t = {.access_token = tok, .issued_at = 1000, .expires_at = 1000 + 3600};
    CHECK(auth_token_fresh(&t, 1000));
    CHECK(auth_token_fresh(&t, 1000 + 3600 - 61));
    CHECK(!auth_token_fresh(&t, 1000 + 3600 - 60));
    CHECK(!auth_token_fresh(&t, 1000 + 3600 + 1));
    /* an unknown lifetime ends an hour after the token was issued */
    t.expires_at = 0;
    CHECK(auth_token_fresh(&t, 1000 + 3600 - 61));
    CHECK(!auth_token_fresh(&t, 1000 + 3600 - 60));
    /* no token is never fresh */
    t.access_token = NULL;
    CHECK(!auth_token_fresh(&t, 1000));
}

TESTS_MAIN(test_margin, test_fresh)
