/* test_challenge.c - WWW-Authenticate challenges, RFC 9110 section 11 */
#include "credkit/challenge.h"
#include "tests.h"

static void check_bad(const char *header, const char *msg_part)
{
    struct auth_challenges l = {0};
    struct err e = ERR_INIT;
    /* what was there before a failed parse stays */
    CHECK_INT(challenges_parse("Basic realm=\"kept\"", &l, &e), 1);
    int r = challenges_parse(header, &l, &e);
    CHECK_INT(r, -EBADMSG);
    if (r != -EBADMSG)
        fprintf(stderr, "  for: %s\n", header);
    CHECK_CONTAINS(e.msg, "WWW-Authenticate: ");
    CHECK_CONTAINS(e.msg, msg_part);
    CHECK_INT(l.n, 1);
    if (l.n == 1)
        CHECK_STR(challenge_param(&l.v[0], "realm"), "kept");
    challenges_release(&l);
}

static void test_resource_metadata(void)
{
    struct auth_challenges l = {0};
    struct err e = ERR_INIT;
    CHECK_INT(challenges_parse("Bearer resource_metadata=\"https://x/.well-known/"
                               "oauth-protected-resource\", scope=\"a b\"",
                               &l, &e),
              1);
    CHECK_INT(l.n, 1);
    const struct auth_challenge *c = challenges_find(&l, "Bearer");
    CHECK(c != NULL);
    CHECK_STR(c->scheme, "Bearer");
    CHECK(c->token68 == NULL);
    CHECK_INT(c->n_params, 2);
    CHECK_STR(challenge_param(c, "resource_metadata"),
              "https://x/.well-known/oauth-protected-resource");
    CHECK_STR(challenge_param(c, "scope"), "a b");
    CHECK_STR(challenge_param(c, "SCOPE"), "a b");
    CHECK(challenge_param(c, "realm") == NULL);
    challenges_release(&l);
    CHECK_INT(l.n, 0);
    CHECK(l.v == NULL);
}

static void test_insufficient_scope(void)
{
    struct auth_challenges l = {0};
    struct err e = ERR_INIT;
    CHECK_INT(challenges_parse("Bearer realm=\"x\", error=\"insufficient_scope\", "
                               "scope=\"files:read files:write\"",
                               &l, &e),
              1);
    const struct auth_challenge *c = challenges_find(&l, "bearer");
    CHECK(c != NULL);
    CHECK_STR(challenge_param(c, "realm"), "x");
    CHECK_STR(challenge_param(c, "error"), "insufficient_scope");
    CHECK_STR(challenge_param(c, "scope"), "files:read files:write");
    challenges_release(&l);
}

static void test_two_challenges(void)
{
    struct auth_challenges l = {0};
    struct err e = ERR_INIT;
    CHECK_INT(challenges_parse("Basic realm=\"r\", Bearer error=invalid_token", &l, &e), 2);
    CHECK_INT(l.n, 2);
    CHECK_STR(l.v[0].scheme, "Basic");
    CHECK_INT(l.v[0].n_params, 1);
    CHECK_STR(challenge_param(&l.v[0], "realm"), "r");
    CHECK_STR(l.v[1].scheme, "Bearer");
    CHECK_INT(l.v[1].n_params, 1);
    CHECK_STR(challenge_param(&l.v[1], "error"), "invalid_token");
    CHECK(challenge_param(&l.v[1], "realm") == NULL);
    CHECK(challenges_find(&l, "Bearer") == &l.v[1]);
    CHECK(challenges_find(&l, "Digest") == NULL);

    /* a second header value appends */
    CHECK_INT(challenges_parse("DPoP algs=\"ES256 PS256\"", &l, &e), 1);
    CHECK_INT(l.n, 3);
    CHECK_STR(challenge_param(challenges_find(&l, "dpop"), "algs"), "ES256 PS256");
    CHECK_STR(l.v[0].scheme, "Basic");
    challenges_release(&l);
}

/* RFC 9110 section 11.6.1's example */
static void test_rfc_example(void)
{
    struct auth_challenges l = {0};
    struct err e = ERR_INIT;
    CHECK_INT(challenges_parse("Newauth realm=\"apps\", type=1,\r\n"
                               "                       title=\"Login to \\\"apps\\\"\", Basic "
                               "realm=\"simple\"",
                               &l, &e),
              -EBADMSG); /* a raw CR LF is not whitespace in a field value */
    CHECK_CONTAINS(e.msg, "control character");
    CHECK_INT(l.n, 0);

    CHECK_INT(challenges_parse("Newauth realm=\"apps\", type=1, title=\"Login to \\\"apps\\\"\", "
                               "Basic realm=\"simple\"",
                               &l, &e),
              2);
    CHECK_STR(l.v[0].scheme, "Newauth");
    CHECK_INT(l.v[0].n_params, 3);
    CHECK_STR(l.v[0].params[0].name, "realm");
    CHECK_STR(l.v[0].params[0].value, "apps");
    CHECK_STR(l.v[0].params[1].name, "type");
    CHECK_STR(l.v[0].params[1].value, "1");
    CHECK_STR(l.v[0].params[2].name, "title");
    CHECK_STR(l.v[0].params[2].value, "Login to \"apps\"");
    CHECK_STR(l.v[1].scheme, "Basic");
    CHECK_STR(challenge_param(&l.v[1], "realm"), "simple");
    challenges_release(&l);
}

static void test_token68(void)
{
    struct auth_challenges l = {0};
    struct err e = ERR_INIT;
    CHECK_INT(challenges_parse("Negotiate abc123==", &l, &e), 1);
    CHECK_STR(l.v[0].scheme, "Negotiate");
    CHECK_STR(l.v[0].token68, "abc123==");
    CHECK_INT(l.v[0].n_params, 0);
    challenges_release(&l);

    /* token68 with every allowed character, then another challenge */
    CHECK_INT(challenges_parse("Negotiate a-._~+/Z9=  , Basic realm=x", &l, &e), 2);
    CHECK_STR(l.v[0].token68, "a-._~+/Z9=");
    CHECK_STR(l.v[1].scheme, "Basic");
    CHECK_STR(challenge_param(&l.v[1], "realm"), "x");
    challenges_release(&l);

    /* "name=" alone cannot be a param (a value is required): it is a token68 */
    CHECK_INT(challenges_parse("Foo abc=", &l, &e), 1);
    CHECK_STR(l.v[0].token68, "abc=");
    challenges_release(&l);

    /* schemes alone */
    CHECK_INT(challenges_parse("Basic, Bearer", &l, &e), 2);
    CHECK_STR(l.v[0].scheme, "Basic");
    CHECK_STR(l.v[1].scheme, "Bearer");
    CHECK_INT(l.v[1].n_params, 0);
    CHECK(l.v[1].token68 == NULL);
    challenges_release(&l);

    check_bad("Negotiate abc==, x=y", "parameter in a challenge that has a token68");
    check_bad("Negotiate abc== def", "expected a parameter value at offset 14");
}

static void test_case(void)
{
    struct auth_challenges l = {0};
    struct err e = ERR_INIT;
    CHECK_INT(challenges_parse("bearer Realm=\"X\", ERROR=invalid_token", &l, &e), 1);
    const struct auth_challenge *c = challenges_find(&l, "Bearer");
    CHECK(c != NULL);
    CHECK_STR(c->scheme, "bearer");        /* as written */
    CHECK_STR(c->params[0].name, "realm"); /* lowercase */
    CHECK_STR(c->params[0].value, "X");    /* values untouched */
    CHECK_STR(challenge_param(c, "error"), "invalid_token");
    challenges_release(&l);
}

static void test_lists_and_whitespace(void)
{
    struct auth_challenges l = {0};
    struct err e = ERR_INIT;
    CHECK_INT(challenges_parse("Bearer ,, realm=\"x\",", &l, &e), 1);
    CHECK_INT(l.v[0].n_params, 1);
    CHECK_STR(challenge_param(&l.v[0], "realm"), "x");
    challenges_release(&l);

    CHECK_INT(challenges_parse(" ,\t, Bearer realm = \"x\" ,\tscope\t=\ty ,, , Basic\t,", &l, &e),
              2);
    CHECK_STR(challenge_param(&l.v[0], "realm"), "x");
    CHECK_STR(challenge_param(&l.v[0], "scope"), "y");
    CHECK_STR(l.v[1].scheme, "Basic");
    challenges_release(&l);

    /* nothing at all, or only empty elements: no challenge, no error */
    CHECK_INT(challenges_parse("", &l, &e), 0);
    CHECK_INT(challenges_parse(" , ,", &l, &e), 0);
    CHECK_INT(l.n, 0);

    /* quoted-pair of any visible character, obs-text and tabs inside quotes */
    CHECK_INT(challenges_parse("X a=\"\\a\\\\b\\\"\tc \xc3\xa9\", b=\"\"", &l, &e), 1);
    CHECK_STR(challenge_param(&l.v[0], "a"), "a\\b\"\tc \xc3\xa9");
    CHECK_STR(challenge_param(&l.v[0], "b"), "");
    challenges_release(&l);

    /* every tchar in names and token values */
    CHECK_INT(challenges_parse("X!#$%&'*+-.^_`|~09 n!#$%&'*+-.^_`|~=v!#$%&'*+-.^_`|~", &l, &e), 1);
    CHECK_STR(l.v[0].scheme, "X!#$%&'*+-.^_`|~09");
    CHECK_STR(challenge_param(&l.v[0], "n!#$%&'*+-.^_`|~"), "v!#$%&'*+-.^_`|~");
    challenges_release(&l);

    /* 64 params are fine */
    char big[4096];
    size_t o = (size_t)snprintf(big, sizeof(big), "Bearer ");
    for (int i = 0; i < 64; i++)
        o += (size_t)snprintf(big + o, sizeof(big) - o, "p%d=v%d, ", i, i);
    CHECK_INT(challenges_parse(big, &l, &e), 1);
    CHECK_INT(l.v[0].n_params, 64);
    CHECK_STR(challenge_param(&l.v[0], "p63"), "v63");
    challenges_release(&l);
}

static void test_bad(void)
{
    check_bad("Bearer realm=\"x", "unterminated quoted string at offset 13");
    check_bad("Bearer realm=\"x\\", "unterminated quoted string");
    check_bad("Bearer =x", "'=' without a name");
    check_bad("Bearer realm=\"x\", =y", "'=' without a name");
    check_bad("realm=\"x\"", "parameter before any auth scheme at offset 0");
    check_bad("Bearer realm=\"x\" scope=\"y\"", "expected ',' after the parameter, not 's', "
                                                "at offset 17");
    check_bad("Bearer realm=\"a\x01\"", "control character in a quoted string at offset 15");
    check_bad("Bearer realm=\"a\x7f\"", "control character in a quoted string");
    check_bad("Bearer realm=\"a\\\x01\"", "control character in a quoted string");
    check_bad("Bearer\x01 realm=x", "control character at offset 6");
    check_bad("Bearer realm=x\ny", "control character");
    check_bad("Bearer realm=\xc3\xa9", "non-ASCII byte");
    /* "Bearer realm=" alone is a token68; after a comma it can only be a param */
    check_bad("Bearer a=b, realm=", "expected a parameter value at offset 18");
    check_bad("Bearer a=b, realm= ,", "expected a parameter value at offset 19");
    check_bad("Bearer realm=x y=z", "expected ','");
    check_bad("Bearer a b", "expected '=' after the parameter name");
    check_bad("Bearer realm=\"x\"y", "expected ','");
    check_bad("Bearer(x)", "expected a space or ',' after the auth scheme");
    check_bad("Bearer \"x\"", "expected an auth scheme or a parameter name");
    check_bad("\"x\"", "expected an auth scheme, not '\"', at offset 0");
    check_bad("Bearer realm=a, realm=b", "parameter 'realm' given twice");
    check_bad("Bearer realm=a, REALM=b", "given twice");

    char *huge = malloc(16 * 1024 + 2);
    CHECK(huge != NULL);
    if (huge) {
        memset(huge, 'a', 16 * 1024 + 1);
        memcpy(huge, "Bearer x=", 9);
        huge[16 * 1024 + 1] = 0;
        check_bad(huge, "longer than 16384 bytes");
        /* exactly at the bound is fine */
        huge[16 * 1024] = 0;
        struct auth_challenges l = {0};
        struct err e = ERR_INIT;
        CHECK_INT(challenges_parse(huge, &l, &e), 1);
        CHECK_INT(strlen(challenge_param(&l.v[0], "x")), 16 * 1024 - 9);
        challenges_release(&l);
        free(huge);
    }

    char big[4096];
    size_t o = (size_t)snprintf(big, sizeof(big), "Bearer ");
    for (int i = 0; i < 65; i++)
        o += (size_t)snprintf(big + o, sizeof(big) - o, "p%d=v%d,", i, i);
    check_bad(big, "more than 64 parameters");

    o = 0;
    for (int i = 0; i < 65; i++)
        o += (size_t)snprintf(big + o, sizeof(big) - o, "S%d,", i);
    check_bad(big, "more than 64 challenges");

    struct auth_challenges l = {0};
    struct err e = ERR_INIT;
    CHECK_INT(challenges_parse(NULL, &l, &e), -EINVAL);
}

static void test_lookup_null_safe(void)
{
    struct auth_challenges l = {0};
    CHECK(challenges_find(&l, "Bearer") == NULL);
    CHECK(challenges_find(NULL, "Bearer") == NULL);
    CHECK(challenge_param(NULL, "realm") == NULL);
    challenges_release(&l);
    challenges_release(NULL);
}

TESTS_MAIN(test_resource_metadata, test_insufficient_scope, test_two_challenges, test_rfc_example,
           test_token68, test_case, test_lists_and_whitespace, test_bad, test_lookup_null_safe)
