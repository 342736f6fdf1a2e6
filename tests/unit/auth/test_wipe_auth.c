/* test_wipe_auth.c - the token store's secrets are wiped when an entry is freed, cleared, saved
 * or loaded: each test fails when its wipe is removed (wipewatch.h shows the bytes at free) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/path.h"

#include "tokens.h"

#include "tests.h"
#include "wipewatch.h"

#define URL "https://mcp.example.com/mcp"
#define ISS "https://auth.example.com"

/* as long as a JWT: longer than any string after it in the entry file */
#define MARK8   MARK MARK MARK MARK MARK MARK MARK MARK
#define ACCESS  "at-" MARK8 MARK8 MARK8 MARK8
#define REFRESH "rt-CANARY-9b2e7f1c0d"
#define CLIENT  "cs-CANARY-9b2e7f1c0d"
#define REGTOK  "ra-CANARY-9b2e7f1c0d"
#define MARK    "CANARY-9b2e7f1c0d" /* in every secret above, in no other string */

static struct token_entry *entry_with_secrets(void)
{
    struct token_entry *t = NULL;
    CHECK_INT(token_entry_new(URL, ISS, NULL, &t), 0);
    if (!t)
        abort();
    t->registration = REGISTRATION_DYNAMIC;
    t->client_id = strdup("client-123");
    t->client_secret = strdup(CLIENT);
    t->auth_method = strdup("client_secret_basic");
    t->redirect_uri = strdup("http://127.0.0.1:43123/callback");
    t->registered_at = 1700000000;
    t->registration_client_uri = strdup(ISS "/register/client-123");
    t->registration_access_token = strdup(REGTOK);
    t->access_token = strdup(ACCESS);
    t->token_type = strdup("Bearer");
    t->refresh_token = strdup(REFRESH);
    t->scope = strdup("files:read");
    t->expires_at = 4102444800;
    t->issued_at = 1700000000;
    return t;
}

struct watched {
    size_t access, refresh, client, regtok;
};

static struct watched watch_secrets(const struct token_entry *t)
{
    return (struct watched){
        .access = wipewatch_add(t->access_token, strlen(t->access_token) + 1),
        .refresh = wipewatch_add(t->refresh_token, strlen(t->refresh_token) + 1),
        .client = wipewatch_add(t->client_secret, strlen(t->client_secret) + 1),
        .regtok =
            wipewatch_add(t->registration_access_token, strlen(t->registration_access_token) + 1),
    };
}

static void test_watch_sees_unwiped(void)
{
    wipewatch_reset();
    char *s = strdup(ACCESS);
    size_t w = wipewatch_add(s, sizeof(ACCESS));
    wipewatch_plain_free(s);
    CHECK(wipewatch_freed(w) && !wipewatch_wiped(w));
}

static void test_token_entry_free(void)
{
    wipewatch_reset();
    struct token_entry *t = entry_with_secrets();
    size_t client_id = wipewatch_add(t->client_id, strlen(t->client_id) + 1);
    struct watched w = watch_secrets(t);
    token_entry_free(t);
    CHECK(wipewatch_wiped(w.access));
    CHECK(wipewatch_wiped(w.refresh));
    CHECK(wipewatch_wiped(w.client));
    CHECK(wipewatch_wiped(w.regtok));
    CHECK(wipewatch_freed(client_id)); /* and the rest is freed too */
    token_entry_free(NULL);
}

static void test_token_entry_clear_tokens(void)
{
    wipewatch_reset();
    struct token_entry *t = entry_with_secrets();
    struct watched w = watch_secrets(t);
    token_entry_clear_tokens(t);
    CHECK(wipewatch_wiped(w.access));
    CHECK(wipewatch_wiped(w.refresh));
    CHECK(!wipewatch_freed(w.client)); /* the registration stays */
    CHECK(t->access_token == NULL && t->refresh_token == NULL);
    token_entry_clear_registration(t);
    CHECK(wipewatch_wiped(w.client));
    CHECK(wipewatch_wiped(w.regtok));
    token_entry_free(t);
}

/* Saving and loading an entry goes through json-c, whose copies of the strings are freed
 * without a wipe unless the store wipes them: no block that held a secret is freed with it. */
static void test_save_load_leave_no_copy(void)
{
    struct err e = ERR_INIT;
    char *agent = path_join(tests_tmpdir(), "wipe-agent");
    CHECK(agent != NULL);
    CHECK_INT(setenv("PI_CODING_AGENT_DIR", agent ? agent : "/nonexistent", 1), 0);
    free(agent);

    wipewatch_reset();
    struct token_entry *t = entry_with_secrets();
    wipewatch_scan(MARK);
    CHECK_INT(tokens_save(t, &e), 0);
    token_entry_free(t);
    CHECK_INT(wipewatch_found(), 0);

    struct token_entry *l = NULL;
    CHECK_INT(tokens_load(URL, ISS, NULL, &l, &e), 0);
    CHECK_STR(l ? l->access_token : NULL, ACCESS);
    CHECK_STR(l ? l->refresh_token : NULL, REFRESH);
    CHECK_STR(l ? l->client_secret : NULL, CLIENT);
    token_entry_free(l);
    /* and with issuer NULL, the lookup that reads every entry of the server */
    l = NULL;
    CHECK_INT(tokens_load(URL, NULL, NULL, &l, &e), 0);
    CHECK(l != NULL);
    token_entry_free(l);
    wipewatch_scan(NULL);
    CHECK_INT(wipewatch_found(), 0);
}

TESTS_MAIN(test_watch_sees_unwiped, test_token_entry_free, test_token_entry_clear_tokens,
           test_save_load_leave_no_copy)
