/* test_token_safety.c - a token goes out as "Authorization: Bearer <token>", so one that is not
 * an RFC 6750 b64token is refused where it arrives (the token endpoint's answer, a registration's
 * registration_access_token) and never handed out when a store holds one (an older version's,
 * or edited by hand): refreshed when it can be, else "login required" with the reason. The text
 * of the authorization server in messages is escaped. An in-test HTTP server on 127.0.0.1 plays
 * the authorization server. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "credkit/util.h"

#include "httpd.h" /* also named here: CMake links libmicrohttpd to tests that include it */
#include "oauth.h"
#include "oauth_config.h"
#include "refresh.h"
#include "store.h"
#include "tests.h"
#include "tokens.h"

#define SECRET_PART "S3cretPart"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *answer; /* what the token endpoint answers next, under mu */
static int requests;       /* how many requests came, under mu */

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *data_size, void **con_cls)
{
    (void)cls;
    (void)url;
    (void)method;
    (void)version;
    struct httpd_upload *u = NULL;
    enum MHD_Result now;
    if (!httpd_collect(con_cls, data, data_size, &u, &now))
        return now;
    pthread_mutex_lock(&mu);
    const char *a = answer;
    requests++;
    pthread_mutex_unlock(&mu);
    return httpd_reply(c, 200, "application/json", a, NULL);
}

static void set_answer(const char *a)
{
    pthread_mutex_lock(&mu);
    answer = a;
    pthread_mutex_unlock(&mu);
}

static int request_count(void)
{
    pthread_mutex_lock(&mu);
    int n = requests;
    pthread_mutex_unlock(&mu);
    return n;
}

static void test_b64token(void)
{
    CHECK(oauth_bearer_token_valid("abc", 3));
    CHECK(oauth_bearer_token_valid("a-._~+/Z09==", 12));
    CHECK(!oauth_bearer_token_valid("a=b", 3));
    CHECK(!oauth_bearer_token_valid("a b", 3));
    CHECK(!oauth_bearer_token_valid("a\r\nb", 4));
    CHECK(!oauth_bearer_token_valid("", 0));
    CHECK(!oauth_bearer_token_valid(NULL, 0));
    CHECK(!oauth_bearer_token_valid("a\"b", 3));
}

/* One token request to endpoint with the current answer. */
static int token_request(const char *endpoint, struct token_response *tr, struct err *e)
{
    static const char *const params[] = {"grant_type", "client_credentials", NULL};
    struct oauth_client client = {.client_id = "cid"};
    return oauth_token(endpoint, &client, params, 5000, tr, e);
}

static void test_refused_at_receipt(void)
{
    unsigned port = 0;
    struct MHD_Daemon *d = httpd_start(handler, NULL, httpd_upload_completed, 0, &port);
    char endpoint[64];
    snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u/token", port);
    static const char *const bad[] = {
        /* header injection: a second header line in every consumer */
        "{\"access_token\": \"" SECRET_PART "\\r\\nX-Injected: 1\", \"token_type\": \"Bearer\"}",
        "{\"access_token\": \"" SECRET_PART "\\n\", \"token_type\": \"Bearer\"}",
        "{\"access_token\": \"" SECRET_PART " x\", \"token_type\": \"Bearer\"}",
        "{\"access_token\": \"" SECRET_PART "\\u0000x\", \"token_type\": \"Bearer\"}",
        "{\"access_token\": \"" SECRET_PART "=x\", \"token_type\": \"Bearer\"}",
        "{\"access_token\": \"" SECRET_PART "\\u00e9\", \"token_type\": \"Bearer\"}",
        "{\"access_token\": \" " SECRET_PART "\", \"token_type\": \"Bearer\"}",
    };
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        struct token_response tr = {0};
        struct err e = ERR_INIT;
        set_answer(bad[i]);
        int r = token_request(endpoint, &tr, &e);
        CHECK_INT(r, -EPROTO);
        CHECK_CONTAINS(err_msg(&e), "is not a valid bearer token");
        CHECK_CONTAINS(err_msg(&e), "nothing was stored");
        CHECK(!strstr(err_msg(&e), SECRET_PART)); /* never the token in a message */
        CHECK(tr.access_token == NULL);
        token_response_release(&tr);
    }

    /* a valid one, padding included, passes */
    struct token_response tr = {0};
    struct err e = ERR_INIT;
    set_answer("{\"access_token\": \"abc-._~+/09==\", \"token_type\": \"bearer\", "
               "\"expires_in\": 60}");
    CHECK_INT(token_request(endpoint, &tr, &e), 0);
    CHECK_STR(tr.access_token, "abc-._~+/09==");
    CHECK(tr.account == NULL); /* no id_token, and the access token is no JWT */
    token_response_release(&tr);

    /* a lifetime beyond sense is read as the longest one (now + it never overflows, in seconds
     * or milliseconds); the id_token names whom it is for */
    tr = (struct token_response){0};
    set_answer("{\"access_token\": \"abc\", \"token_type\": \"Bearer\", \"expires_in\": "
               "9223372036854775807, \"id_token\": \"eyJhbGciOiJub25lIn0."
               "eyJzdWIiOiJ1MSIsImVtYWlsIjoibWVAZXhhbXBsZS5jb20ifQ.sig\"}");
    CHECK_INT(token_request(endpoint, &tr, &e), 0);
    CHECK(tr.expires_in == OAUTH_LIFETIME_MAX_S);
    CHECK_STR(tr.account, "me@example.com");
    struct token_entry te = {0};
    CHECK_INT(store_tokens(&te, &tr, NULL, true), 0);
    CHECK(te.expires_at > now_unix() + 9 * 365 * 24 * 3600LL);
    CHECK_STR(te.account, "me@example.com");
    token_response_release(&tr);
    /* a refresh that names no one keeps the account */
    tr = (struct token_response){0};
    set_answer("{\"access_token\": \"def\", \"token_type\": \"Bearer\", \"expires_in\": 60}");
    CHECK_INT(token_request(endpoint, &tr, &e), 0);
    CHECK_INT(store_tokens(&te, &tr, NULL, false), 0);
    CHECK_STR(te.account, "me@example.com");
    CHECK(te.expires_at <= now_unix() + 61);
    token_response_release(&tr);
    token_entry_clear_tokens(&te);

    /* another token type is refused, and its name reaches the message escaped */
    tr = (struct token_response){0};
    set_answer("{\"access_token\": \"abc\", \"token_type\": \"mac\\u001b[2J\\u202e\"}");
    CHECK_INT(token_request(endpoint, &tr, &e), -EPROTO);
    CHECK_CONTAINS(err_msg(&e), "unsupported token type 'mac\\x1b[2J\\u{202e}'");
    CHECK(!strchr(err_msg(&e), '\x1b'));
    token_response_release(&tr);

    MHD_stop_daemon(d);
}

static void test_registration_token(void)
{
    unsigned port = 0;
    struct MHD_Daemon *d = httpd_start(handler, NULL, httpd_upload_completed, 0, &port);
    char endpoint[64];
    snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u/register", port);
    struct registration reg = {0};
    struct err e = ERR_INIT;

    /* a registration_access_token that could not go out as a bearer token is not kept */
    set_answer("{\"client_id\": \"cid-1\", \"registration_client_uri\": "
               "\"https://as.example.com/reg/cid-1\", \"registration_access_token\": "
               "\"rat\\r\\nX: y\"}");
    CHECK_INT(
        oauth_register(endpoint, "http://127.0.0.1:9/callback", NULL, false, NULL, 5000, &reg, &e),
        0);
    CHECK_STR(reg.client_id, "cid-1");
    CHECK(reg.access_token == NULL);
    registration_release(&reg);

    /* a valid one is */
    reg = (struct registration){0};
    set_answer("{\"client_id\": \"cid-1\", \"registration_client_uri\": "
               "\"https://as.example.com/reg/cid-1\", \"registration_access_token\": \"rat.1\"}");
    CHECK_INT(
        oauth_register(endpoint, "http://127.0.0.1:9/callback", NULL, false, NULL, 5000, &reg, &e),
        0);
    CHECK_STR(reg.access_token, "rat.1");
    registration_release(&reg);

    /* and a stored bad one is never sent: no request at all */
    snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u/reg/cid-1", port);
    int before = request_count();
    CHECK_INT(oauth_client_exists(endpoint, "rat\r\nX: y", 5000), -EINVAL);
    CHECK_INT(request_count(), before);
    MHD_stop_daemon(d);
}

/* A store entry for url with this access token (and refresh token when not NULL), whose
 * cached metadata names the in-test token endpoint. */
static void store_entry(const char *url, const char *access, const char *type, const char *refresh,
                        unsigned port)
{
    struct token_entry *t = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(token_entry_new(url, "https://as.example.com", NULL, &t), 0);
    if (!t)
        return;
    t->access_token = strdup(access);
    t->token_type = type ? strdup(type) : NULL;
    t->refresh_token = refresh ? strdup(refresh) : NULL;
    t->issued_at = now_unix();
    t->expires_at = now_unix() + 3600; /* fresh by its time: only its form is wrong */
    t->registration = REGISTRATION_PRE;
    t->client_id = strdup("cid");
    char md[256];
    snprintf(md, sizeof(md),
             "{\"issuer\": \"https://as.example.com\", \"token_endpoint\": "
             "\"http://127.0.0.1:%u/token\"}",
             port);
    t->as_metadata = json_tokener_parse(md);
    t->discovered_at = now_unix();
    int r = tokens_save(t, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        fprintf(stderr, "  %s\n", err_msg(&e));
    token_entry_free(t);
}

static void test_stored_bad_token(void)
{
    char agent[8192];
    (void)snprintf(agent, sizeof(agent), "%s/token_safety", tests_tmpdir());
    CHECK_INT(setenv("PI_CODING_AGENT_DIR", agent, 1), 0);
    unsigned port = 0;
    struct MHD_Daemon *d = httpd_start(handler, NULL, httpd_upload_completed, 0, &port);
    struct oauth_config *oc = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(oauth_config_parse(NULL, &oc, &e), 0);
    struct token_entry *te = NULL;

    /* no refresh token: login required, saying why, and nothing asked of the server */
    const char *url = "https://mcp.example.com/a";
    struct auth_target t = {.server_url = url, .oauth = oc};
    store_entry(url, SECRET_PART "\r\nX-Injected: 1", "Bearer", NULL, port);
    int before = request_count();
    int r = auth_fresh_token(&t, 5000, false, &te, &e);
    CHECK_INT(r, AUTH_LOGIN_REQUIRED);
    CHECK_CONTAINS(err_msg(&e), "the stored token for 'https://mcp.example.com/a' is not a valid "
                                "bearer token");
    CHECK(!strstr(err_msg(&e), SECRET_PART));
    CHECK_INT(request_count(), before);
    token_entry_free(te);
    te = NULL;

    /* a token type other than Bearer, stored by hand: the same */
    url = "https://mcp.example.com/b";
    t.server_url = url;
    store_entry(url, "good", "MAC", NULL, port);
    CHECK_INT(auth_fresh_token(&t, 5000, false, &te, &e), AUTH_LOGIN_REQUIRED);
    CHECK_CONTAINS(err_msg(&e), "is not a valid bearer token");

    /* with a refresh token: refreshed, and the new token is what comes out */
    url = "https://mcp.example.com/c";
    t.server_url = url;
    store_entry(url, SECRET_PART "\n", "Bearer", "rt-1", port);
    set_answer("{\"access_token\": \"fresh.token\", \"token_type\": \"Bearer\", "
               "\"refresh_token\": \"rt-2\", \"expires_in\": 3600}");
    r = auth_fresh_token(&t, 5000, false, &te, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        fprintf(stderr, "  %s\n", err_msg(&e));
    CHECK(te && te->access_token && strcmp(te->access_token, "fresh.token") == 0);
    CHECK(te && auth_token_sendable(te));
    token_entry_free(te);
    te = NULL;

    /* a refresh whose answer is bad again: refused, the refresh token kept */
    url = "https://mcp.example.com/d";
    t.server_url = url;
    store_entry(url, SECRET_PART "\n", "Bearer", "rt-keep", port);
    set_answer("{\"access_token\": \"bad\\r\\nX: 1\", \"token_type\": \"Bearer\", "
               "\"refresh_token\": \"rt-new\"}");
    CHECK_INT(auth_fresh_token(&t, 5000, false, &te, &e), -EPROTO);
    CHECK_CONTAINS(err_msg(&e), "is not a valid bearer token");
    CHECK_INT(tokens_load(url, NULL, NULL, &te, &e), 0);
    CHECK(te && te->refresh_token && strcmp(te->refresh_token, "rt-keep") == 0);
    token_entry_free(te);

    oauth_config_free(oc);
    MHD_stop_daemon(d);
}

TESTS_MAIN(test_b64token, test_refused_at_receipt, test_registration_token, test_stored_bad_token)
