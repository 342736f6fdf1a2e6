/* test_ratelimit.c - the per-minute caps on token requests and sign-ins, counted in the entry */
#include <errno.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/util.h"

#include "ratelimit.h"
#include "tests.h"

static struct token_entry *entry(void)
{
    struct token_entry *t = NULL;
    CHECK_INT(token_entry_new("https://mcp.example.com/mcp", "https://auth.example.com", NULL, &t),
              0);
    return t;
}

static size_t counted(const struct token_entry *t, const char *kind)
{
    struct json_object *rate = NULL, *list = NULL;
    if (!t->extra || !json_object_object_get_ex(t->extra, "rate", &rate) ||
        !json_object_object_get_ex(rate, kind, &list))
        return 0;
    return json_object_array_length(list);
}

static void test_caps(void)
{
    struct token_entry *t = entry();
    if (!t)
        return;
    struct err e = ERR_INIT;
    for (int i = 0; i < 5; i++)
        CHECK_INT(ratelimit_check(t, RATELIMIT_SIGNIN, &e), 0);
    CHECK_INT(counted(t, "signin"), 5);
    CHECK_INT(ratelimit_check(t, RATELIMIT_SIGNIN, &e), -EBUSY);
    CHECK_STR(err_msg(&e), "already 5 sign-ins to 'https://auth.example.com' in the last minute: "
                           "stopping here so that a failure cannot loop; wait a minute and try "
                           "again");
    CHECK_INT(counted(t, "signin"), 5); /* a refusal is not counted */
    /* the kinds are counted apart */
    for (int i = 0; i < 60; i++)
        CHECK_INT(ratelimit_check(t, RATELIMIT_TOKEN, &e), 0);
    CHECK_INT(ratelimit_check(t, RATELIMIT_TOKEN, &e), -EBUSY);
    CHECK_CONTAINS(err_msg(&e), "already 60 token requests to 'https://auth.example.com'");
    CHECK_INT(counted(t, "token"), 60);
    token_entry_free(t);
}

/* only the last minute counts; what is not a list of times is started afresh */
static void test_window(void)
{
    struct token_entry *t = entry();
    if (!t)
        return;
    struct err e = ERR_INIT;
    int64_t now = now_unix();
    struct json_object *list = json_object_new_array();
    for (int i = 0; i < 5; i++)
        json_object_array_add(list, json_object_new_int64(now - 61 - i));
    json_object_array_add(list, json_object_new_int64(now + 3600)); /* from the future */
    struct json_object *rate = json_object_new_object();
    json_object_object_add(rate, "signin", list);
    json_object_object_add(rate, "token", json_object_new_string("junk"));
    t->extra = json_object_new_object();
    json_object_object_add(t->extra, "rate", rate);
    json_object_object_add(t->extra, "other", json_object_new_int(7));
    CHECK_INT(ratelimit_check(t, RATELIMIT_SIGNIN, &e), 0);
    CHECK_INT(counted(t, "signin"), 1);
    CHECK_INT(ratelimit_check(t, RATELIMIT_TOKEN, &e), 0);
    CHECK_INT(counted(t, "token"), 1);
    /* the rest of the extra data stays */
    CHECK(json_object_object_get_ex(t->extra, "other", NULL));
    json_object_object_add(t->extra, "rate", json_object_new_array());
    CHECK_INT(ratelimit_check(t, RATELIMIT_TOKEN, &e), 0);
    CHECK_INT(counted(t, "token"), 1);
    token_entry_free(t);
}

TESTS_MAIN(test_caps, test_window)
