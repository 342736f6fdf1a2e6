/* test_iss.c - RFC 9207 issuer identification: simple string comparison, and when an absent
 * iss is refused (MCP 2026-07-28, "Authorization Response Validation") */
#include <json-c/json.h>

#include "iss.h"
#include "tests.h"

#define ISS "https://auth.example.com"

static void test_table(void)
{
    /* advertised: present compared, absent refused */
    CHECK_INT(iss_check(ISS, true, ISS), ISS_OK);
    CHECK_INT(iss_check(ISS, true, NULL), ISS_MISSING);
    CHECK_INT(iss_check(ISS, true, "https://evil.example.com"), ISS_MISMATCH);
    /* not advertised: a present iss is compared all the same, an absent one proceeds */
    CHECK_INT(iss_check(ISS, false, ISS), ISS_OK);
    CHECK_INT(iss_check(ISS, false, NULL), ISS_OK);
    CHECK_INT(iss_check(ISS, false, "https://evil.example.com"), ISS_MISMATCH);
    /* an empty iss is present and matches nothing */
    CHECK_INT(iss_check(ISS, false, ""), ISS_MISMATCH);
    /* no recorded issuer: nothing matches */
    CHECK_INT(iss_check(NULL, false, ISS), ISS_MISMATCH);
}

/* RFC 3986 6.2.1: none of the normalisations of 6.2.2-6.2.3 */
static void test_no_normalisation(void)
{
    static const char *const variants[] = {
        ISS "/",                        /* trailing slash */
        "HTTPS://auth.example.com",     /* scheme case */
        "https://AUTH.example.com",     /* host case */
        "https://auth.example.com:443", /* default port */
        "https://auth.example.com/%7Eissuer",
        "https://auth.example.com ",
    };
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        CHECK_INT(iss_check(ISS, true, variants[i]), ISS_MISMATCH);
        CHECK_INT(iss_check(ISS, false, variants[i]), ISS_MISMATCH);
    }
    CHECK_INT(
        iss_check("https://auth.example.com/~issuer", true, "https://auth.example.com/%7Eissuer"),
        ISS_MISMATCH);
    CHECK_INT(iss_check(ISS "/tenant/", true, ISS "/tenant/"), ISS_OK);
    CHECK_INT(iss_check("http://localhost:8080", true, "http://localhost:8080"), ISS_OK);
}

static void test_advertised(void)
{
    static const struct {
        const char *json;
        bool want;
    } cases[] = {
        {"{\"authorization_response_iss_parameter_supported\": true}", true},
        {"{\"authorization_response_iss_parameter_supported\": false}", false},
        {"{\"authorization_response_iss_parameter_supported\": \"true\"}", false},
        {"{\"authorization_response_iss_parameter_supported\": 1}", false},
        {"{\"issuer\": \"" ISS "\"}", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct json_object *o = json_tokener_parse(cases[i].json);
        CHECK(o != NULL);
        CHECK_INT(iss_advertised(o), cases[i].want);
        json_object_put(o);
    }
    CHECK_INT(iss_advertised(NULL), false);
}

TESTS_MAIN(test_table, test_no_normalisation, test_advertised)
