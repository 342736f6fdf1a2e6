/* test_helper_answer.c - the secrets and headers answers: writers, readers, every refusal */
#include <errno.h>
#include <string.h>

#include "credkit/helper_answer.h"

#include "tests.h"

#define CANARY "s3cr3t-CANARY-value"

static int parse_secrets(const char *text, struct helper_secrets *a, struct err *e)
{
    return helper_secrets_parse(text, strlen(text), a, e);
}

static int parse_headers(const char *text, struct helper_headers *a, struct err *e)
{
    return helper_headers_parse(text, strlen(text), a, e);
}

/* ---- the secrets answer ---- */

static void test_secrets_write_bytes(void)
{
    struct helper_secrets a = {0};
    struct buf out;
    buf_init_secret(&out, 0);
    CHECK_INT(helper_secrets_add_value(&a, "TOKEN", "v\"1\n", 4, "command", 1767225600), 0);
    CHECK_INT(helper_secrets_add_value(&a, "KEY", "k", 1, "keychain", 0), 0);
    CHECK_INT(helper_secrets_add_error(&a, "MISSING", "'MISSING' has no recipe"), 0);
    CHECK_INT(helper_secrets_write(&a, &out), 0);
    /* byte for byte what `secrets resolve --json` has always printed */
    CHECK_STR(buf_str(&out), "{\"version\":1,\"secrets\":{"
                             "\"TOKEN\":{\"value\":\"v\\\"1\\n\",\"source\":\"command\","
                             "\"expires_at\":1767225600},"
                             "\"KEY\":{\"value\":\"k\",\"source\":\"keychain\"},"
                             "\"MISSING\":{\"error\":\"'MISSING' has no recipe\"}}}\n");
    buf_release(&out);
    helper_secrets_release(&a);
    CHECK(a.v == NULL && a.n == 0);

    buf_init_secret(&out, 0);
    CHECK_INT(helper_secrets_write(&a, &out), 0);
    CHECK_STR(buf_str(&out), "{\"version\":1,\"secrets\":{}}\n");
    buf_release(&out);
}

static void test_secrets_add_refusals(void)
{
    struct helper_secrets a = {0};
    CHECK_INT(helper_secrets_add_value(&a, "1BAD", "x", 1, "env", 0), -EINVAL);
    CHECK_INT(helper_secrets_add_value(&a, "", "x", 1, "env", 0), -EINVAL);
    CHECK_INT(helper_secrets_add_value(&a, "A-B", "x", 1, "env", 0), -EINVAL);
    CHECK_INT(helper_secrets_add_value(&a, "NUL", "a\0b", 3, "env", 0), -EINVAL);
    CHECK_INT(helper_secrets_add_value(&a, "NEG", "x", 1, "env", -1), -EINVAL);
    CHECK_INT(helper_secrets_add_value(&a, "UTF", "\xff", 1, "env", 0), -EINVAL);
    CHECK_INT(helper_secrets_add_error(&a, "UTF", "\xc3"), -EINVAL);
    CHECK_INT(helper_secrets_add_error(&a, "9", "no"), -EINVAL);
    CHECK_INT(a.n, 0);
    CHECK_INT(helper_secrets_add_value(&a, "A", "x", 1, "env", 0), 0);
    CHECK_INT(helper_secrets_add_error(&a, "A", "twice"), -EINVAL);
    CHECK_INT(helper_secrets_add_value(&a, "A", "y", 1, "env", 0), -EINVAL);
    CHECK_INT(a.n, 1);
    helper_secrets_release(&a);
    helper_secrets_release(NULL);
}

static void test_secrets_round_trip(void)
{
    /* every byte a value may hold, control characters and UTF-8 included (not NUL) */
    char value[300];
    size_t n = 0;
    for (int c = 1; c < 128; c++)
        value[n++] = (char)c;
    memcpy(value + n, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9); /* é € 😀 */
    n += 9;
    struct helper_secrets a = {0}, b = {0};
    struct buf out;
    struct err e = ERR_INIT;
    buf_init_secret(&out, 0);
    CHECK_INT(helper_secrets_add_value(&a, "ALL", value, n, "file", 42), 0);
    CHECK_INT(helper_secrets_add_value(&a, "_x1", "", 0, "literal", 0), 0);
    CHECK_INT(helper_secrets_add_error(&a, "BAD", "'BAD': \"quoted\"\tand \\ more"), 0);
    CHECK_INT(helper_secrets_write(&a, &out), 0);
    CHECK_INT(helper_secrets_parse(out.data, out.len, &b, &e), 0);
    CHECK_INT(b.n, 3);
    const struct helper_secret *s = helper_secrets_find(&b, "ALL");
    CHECK(s && s->value_len == n && memcmp(s->value, value, n) == 0);
    CHECK(s && s->value[n] == 0);
    CHECK(s && s->error == NULL);
    CHECK_STR(s ? s->source : NULL, "file");
    CHECK_INT(s ? s->expires_at : -1, 42);
    s = helper_secrets_find(&b, "_x1");
    CHECK(s && s->value_len == 0 && s->expires_at == 0);
    s = helper_secrets_find(&b, "BAD");
    CHECK(s && s->value == NULL && s->source == NULL);
    CHECK_STR(s ? s->error : NULL, "'BAD': \"quoted\"\tand \\ more");
    CHECK(helper_secrets_find(&b, "NONE") == NULL);
    CHECK_STR(b.v[0].name, "ALL"); /* the order of the answer */
    CHECK_STR(b.v[2].name, "BAD");

    /* and written again, the same bytes */
    struct buf again;
    buf_init_secret(&again, 0);
    CHECK_INT(helper_secrets_write(&b, &again), 0);
    CHECK_STR(buf_str(&again), buf_str(&out));
    buf_release(&again);
    buf_release(&out);
    helper_secrets_release(&a);
    helper_secrets_release(&b);
}

static void test_secrets_reader_lenient(void)
{
    struct helper_secrets a = {0};
    struct err e = ERR_INIT;
    /* no version is version 1; unknown members anywhere are ignored; spacing is free; escapes
     * and surrogate pairs decode */
    CHECK_INT(parse_secrets(" {\"future\": [1, {\"x\": null}, -2.5e3, true, false],\n"
                            "  \"secrets\": {\"A\": {\"value\": \"\\u00e9\\ud83d\\ude00\\/\","
                            " \"extra\": {}, \"source\": \"command\"}},\r\n"
                            "  \"more\": \"\"}\n",
                            &a, &e),
              0);
    CHECK_INT(a.n, 1);
    CHECK_STR(a.v[0].value, "\xc3\xa9\xf0\x9f\x98\x80/");
    CHECK_INT(a.v[0].value_len, 7);
    helper_secrets_release(&a);

    CHECK_INT(parse_secrets("{\"version\":1,\"secrets\":{}}", &a, &e), 0);
    CHECK_INT(a.n, 0);
    helper_secrets_release(&a);
}

struct refusal {
    const char *text;
    int code;
    const char *message; /* a substring of the message */
};

static void check_secrets_refusals(const struct refusal *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct helper_secrets a = {.n = 12345}; /* untouched on failure */
        struct err e = ERR_INIT;
        int r = parse_secrets(t[i].text, &a, &e);
        if (r != t[i].code)
            fprintf(stderr, "  for %s: %d, %s\n", t[i].text, r, err_msg(&e));
        CHECK_INT(r, t[i].code);
        CHECK_CONTAINS(err_msg(&e), t[i].message);
        CHECK(strstr(err_msg(&e), CANARY) == NULL);
        CHECK_INT(a.n, 12345);
    }
}

static void test_secrets_refusals(void)
{
    static const struct refusal t[] = {
        {"", -EBADMSG, "empty answer"},
        {"  \n", -EBADMSG, "empty answer"},
        {"[]", -EBADMSG, "not a JSON object"},
        {"\"" CANARY "\"", -EBADMSG, "not a JSON object"},
        {"{\"version\":1}", -EBADMSG, "no \"secrets\" object"},
        {"{\"secrets\":[]}", -EBADMSG, "\"secrets\" must be an object, not an array"},
        {"{\"secrets\":{\"A\":\"" CANARY "\"}}", -EBADMSG, "'A' must be an object, not a string"},
        {"{\"secrets\":{\"A\":{\"value\":1}}}", -EBADMSG, "\"value\" must be a string"},
        {"{\"secrets\":{\"A\":{\"value\":\"" CANARY "\",\"source\":true}}}", -EBADMSG,
         "\"source\" must be a string, not a boolean"},
        {"{\"secrets\":{\"A\":{\"error\":null}}}", -EBADMSG,
         "\"error\" must be a string, not null"},
        {"{\"secrets\":{\"A\":{\"value\":\"x\",\"expires_at\":\"1\"}}}", -EBADMSG,
         "\"expires_at\" must be a positive integer, not a string"},
        {"{\"secrets\":{\"A\":{\"value\":\"x\",\"expires_at\":1.5}}}", -EBADMSG,
         "'A': \"expires_at\" must be a positive integer"},
        {"{\"secrets\":{\"A\":{\"value\":\"x\",\"expires_at\":0}}}", -EBADMSG,
         "must be a positive integer"},
        {"{\"secrets\":{\"A\":{\"value\":\"x\",\"expires_at\":-5}}}", -EBADMSG,
         "must be a positive integer"},
        {"{\"secrets\":{\"A\":{\"value\":\"x\",\"expires_at\":99999999999999999999}}}", -EBADMSG,
         "must be a positive integer"},
        {"{\"secrets\":{\"A\":{\"value\":\"" CANARY "\",\"error\":\"e\"}}}", -EBADMSG,
         "'A' has both \"value\" and \"error\""},
        {"{\"secrets\":{\"A\":{\"source\":\"env\"}}}", -EBADMSG,
         "'A' has neither \"value\" nor \"error\""},
        {"{\"secrets\":{\"A\":{\"value\":\"x\",\"value\":\"y\"}}}", -EBADMSG,
         "'A': \"value\" appears twice"},
        {"{\"secrets\":{\"A\":{\"value\":\"x\"},\"A\":{\"value\":\"y\"}}}", -EBADMSG,
         "'A' appears twice"},
        {"{\"secrets\":{},\"secrets\":{}}", -EBADMSG, "\"secrets\" appears twice"},
        {"{\"secrets\":{\"1A\":{\"value\":\"x\"}}}", -EBADMSG,
         "name '1A' is not a valid secret name"},
        {"{\"secrets\":{\"a\\u0001\":{\"value\":\"x\"}}}", -EBADMSG,
         "name #1 is not a valid secret name"},
        {"{\"secrets\":{\"A\":{\"value\":\"a\\u0000b\"}}}", -EBADMSG, "\\u0000 in a string"},
        {"{\"secrets\":{\"A\":{\"value\":\"a\nb\"}}}", -EBADMSG, "control character in a string"},
        {"{\"secrets\":{\"A\":{\"value\":\"\xff\"}}}", -EBADMSG, "invalid UTF-8"},
        {"{\"secrets\":{\"A\":{\"value\":\"\xc0\xaf\"}}}", -EBADMSG, "invalid UTF-8"},
        {"{\"secrets\":{\"A\":{\"value\":\"\xed\xa0\x80\"}}}", -EBADMSG, "invalid UTF-8"},
        {"{\"secrets\":{\"A\":{\"value\":\"\\ud800\"}}}", -EBADMSG, "lone surrogate"},
        {"{\"secrets\":{\"A\":{\"value\":\"\\udc00\"}}}", -EBADMSG, "lone surrogate"},
        {"{\"secrets\":{\"A\":{\"value\":\"\\x\"}}}", -EBADMSG, "invalid escape"},
        {"{\"secrets\":{\"A\":{\"value\":\"\\u12g4\"}}}", -EBADMSG, "invalid \\u escape"},
        {"{\"secrets\":{\"A\":{\"value\":\"" CANARY "}}}", -EBADMSG, "unterminated string"},
        {"{\"secrets\":{},}", -EBADMSG, "line 1, column 15: unexpected character"},
        {"{\"secrets\":{} \"x\":1}", -EBADMSG,
         "line 1, column 15: object value separator ',' expected"},
        {"{\"secrets\" {}}", -EBADMSG, "name separator ':' expected"},
        {"{\"secrets\":{}", -EBADMSG, "line 1, column 14: unexpected end of input"},
        {"{\"secrets\":{}}x", -EBADMSG, "unexpected characters after the answer"},
        {"{\"secrets\":{}}{}", -EBADMSG, "unexpected characters after the answer"},
        {"{\"secrets\":{},\"x\":tru}", -EBADMSG, "boolean expected"},
        {"{\"secrets\":{},\"x\":01}", -EBADMSG, "leading zero"},
        {"{\"secrets\":{},\"x\":1.}", -EBADMSG, "invalid number"},
        {"{\"secrets\":{},\"x\":NaN}", -EBADMSG, "unexpected character"},
        {"{\"secrets\":{},\"x\":[Infinity]}", -EBADMSG, "unexpected character"},
        {"{\"secrets\":{},\"x\":-Infinity}", -EBADMSG, "invalid number"},
        {"{\"secrets\":{},\"x\":[1 2]}", -EBADMSG, "array value separator ',' expected"},
        {"{\"secrets\":{},\"x\":", -EBADMSG, "unexpected end"},
        {"{\"secrets\":{\"A\":{\"expires_at\":}}}", -EBADMSG, "unexpected character"},
        {"{\"version\":2,\"secrets\":{}}", -EPROTONOSUPPORT,
         "version 2 of the helper protocol, and this program reads version 1: update it"},
        {"{\"version\":\"1\",\"secrets\":{}}", -EBADMSG, "\"version\" must be a positive integer"},
        {"{\"version\":0,\"secrets\":{}}", -EBADMSG, "\"version\" must be a positive integer"},
        {"{\"version\":1,\"version\":1,\"secrets\":{}}", -EBADMSG, "\"version\" appears twice"},
    };
    check_secrets_refusals(t, ELEMENTSOF(t));
}

static void test_reader_bounds(void)
{
    struct helper_secrets a = {0};
    struct helper_headers h = {0};
    struct err e = ERR_INIT;
    /* the size bound, counted before anything is read */
    size_t n = HELPER_ANSWER_MAX + 1;
    char *big = malloc(n + 1);
    CHECK(big != NULL);
    if (!big)
        return;
    memset(big, ' ', n);
    big[n] = 0;
    memcpy(big, "{\"secrets\":{}}", 14);
    CHECK_INT(helper_secrets_parse(big, n, &a, &e), -E2BIG);
    CHECK_CONTAINS(err_msg(&e), "larger than 65536 bytes");
    CHECK_INT(helper_headers_parse(big, n, &h, &e), -E2BIG);
    /* exactly the bound is fine */
    CHECK_INT(helper_secrets_parse(big, n - 1, &a, &e), 0);
    helper_secrets_release(&a);
    free(big);

    /* nesting is bounded inside ignored members too */
    char deep[400];
    size_t k = 0;
    k += (size_t)snprintf(deep, sizeof(deep), "{\"secrets\":{},\"x\":");
    for (int i = 0; i < 100; i++)
        deep[k++] = '[';
    deep[k] = 0;
    CHECK_INT(parse_secrets(deep, &a, &e), -EBADMSG);
    CHECK_CONTAINS(err_msg(&e), "nested more than 64 levels deep");
}

/* ---- the headers answer ---- */

static void test_headers_write_bytes(void)
{
    struct helper_headers h = {0};
    struct buf out;
    buf_init_secret(&out, 0);
    CHECK_INT(helper_headers_add(&h, "Authorization", "Bearer " CANARY, 7 + strlen(CANARY), NULL),
              0);
    h.expires_at = 1796021359;
    CHECK_INT(helper_headers_write(&h, &out), 0);
    /* mcp-auth's keys in their order, and the version after them */
    CHECK_STR(buf_str(&out), "{\"headers\":{\"Authorization\":\"Bearer " CANARY
                             "\"},\"expires_at\":1796021359,\"version\":1}\n");
    buf_release(&out);
    helper_headers_release(&h);
    CHECK(h.v == NULL && h.n == 0);
    helper_headers_release(NULL);

    /* no expiry: no expires_at */
    buf_init_secret(&out, 0);
    CHECK_INT(helper_headers_add(&h, "X-Api-Key", "k\tv", 3, NULL), 0);
    CHECK_INT(helper_headers_add(&h, "x-two", "2", 1, NULL), 0);
    CHECK_INT(helper_headers_write(&h, &out), 0);
    CHECK_STR(buf_str(&out),
              "{\"headers\":{\"X-Api-Key\":\"k\\tv\",\"x-two\":\"2\"},\"version\":1}\n");
    buf_release(&out);
    helper_headers_release(&h);
}

static void test_headers_add_refusals(void)
{
    struct helper_headers h = {0};
    struct err e = ERR_INIT;
    CHECK_INT(helper_headers_add(&h, "Bad Name", "v", 1, &e), -EINVAL);
    CHECK_CONTAINS(err_msg(&e), "not an HTTP token");
    CHECK_INT(helper_headers_add(&h, "", "v", 0, &e), -EINVAL);
    CHECK_INT(helper_headers_add(&h, "X:Y", "v", 1, &e), -EINVAL);
    const char *bad[] = {"a\r\nX-Injected: 1", "a\nb", "a\rb", "a\x01", "a\x7f"};
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        err_clear(&e);
        CHECK_INT(helper_headers_add(&h, "Authorization", bad[i], strlen(bad[i]), &e), -EINVAL);
        CHECK_STR(err_msg(&e), "header 'Authorization': the value has a control character (CR, "
                               "LF, NUL and the like are refused)");
    }
    CHECK_INT(helper_headers_add(&h, "Authorization", "a\0b", 3, &e), -EINVAL);
    CHECK_INT(helper_headers_add(&h, "Authorization", "\xe2\x82", 2, &e), -EINVAL);
    CHECK_STR(err_msg(&e), "header 'Authorization': the value is not valid UTF-8");
    CHECK_INT(h.n, 0);
    CHECK_INT(helper_headers_add(&h, "Authorization", "ok", 2, &e), 0);
    CHECK_INT(helper_headers_add(&h, "authorization", "again", 5, &e), -EINVAL);
    CHECK_CONTAINS(err_msg(&e), "header 'authorization' appears twice");
    CHECK_INT(h.n, 1);
    CHECK_STR(helper_headers_get(&h, "AUTHORIZATION"), "ok");
    CHECK(helper_headers_get(&h, "Other") == NULL);
    helper_headers_release(&h);

    CHECK(helper_header_name_valid("!#$%&'*+-.^_`|~09azAZ", 21));
    CHECK(!helper_header_name_valid("a(b)", 4));
    CHECK(!helper_header_name_valid("\xc3\xa9", 2));
    CHECK(helper_header_value_valid("Bearer x\ty \xc3\xa9", 13));
    CHECK(helper_header_value_valid("", 0));

    /* what may go out as a header: header_value_safe(), and a bearer token is a b64token */
    CHECK(helper_header_refusal("Authorization", "Bearer abc-._~+/09==", 20) == NULL);
    CHECK(helper_header_refusal("authorization", "bearer abc", 10) == NULL);
    CHECK(helper_header_refusal("Authorization", "Basic dTpw", 10) == NULL);
    CHECK(helper_header_refusal("X-Key", "a b\t\"q\" \xe2\x82\xac", 11) == NULL);
    CHECK_STR(helper_header_refusal("X-Key", "", 0), "the value is empty");
    CHECK_STR(helper_header_refusal("X-Key", " a", 2),
              "the value begins or ends with a space or a tab");
    CHECK_STR(helper_header_refusal("X-Key", "a\t", 2),
              "the value begins or ends with a space or a tab");
    CHECK_STR(helper_header_refusal("X-Key", "a\r\nb", 4),
              "the value has a control character (CR, LF, NUL and the like are refused)");
    const char *not_b64[] = {"Bearer a b",       "Bearer a=b",  "Bearer \"a\"", "Bearer ",
                             "Bearer a\xc3\xa9", "Bearer =abc", "Bearer a;b"};
    for (size_t i = 0; i < ELEMENTSOF(not_b64); i++) {
        const char *why = helper_header_refusal("Authorization", not_b64[i], strlen(not_b64[i]));
        CHECK(why != NULL);
        if (why && strcmp(not_b64[i], "Bearer ") != 0)
            CHECK_CONTAINS(why, "the bearer token is not an RFC 6750 token");
    }
    /* other headers may carry what a bearer token may not */
    CHECK(helper_header_refusal("X-Auth", "Bearer a b", 10) == NULL);

    struct helper_headers a = {0};
    err_clear(&e);
    CHECK_INT(helper_headers_add(&a, "Authorization", "Bearer a b", 10, &e), -EINVAL);
    CHECK_STR(err_msg(&e), "header 'Authorization': the bearer token is not an RFC 6750 token "
                           "(letters, digits and -._~+/, then '=' only at the end)");
    CHECK_INT(helper_headers_add(&a, "X-Tenant", "", 0, &e), -EINVAL);
    CHECK_STR(err_msg(&e), "header 'X-Tenant': the value is empty");
    CHECK_INT(helper_headers_add(&a, "X-Tenant", "t ", 2, &e), -EINVAL);
    CHECK_INT(a.n, 0);
    helper_headers_release(&a);
}

/* The headers no configuration or helper may add: those that frame the request or its
 * session, in any case, whatever the value; every other name may be added. */
static void test_framing_headers(void)
{
    static const char *const refused[] = {"Host",
                                          "content-length",
                                          "Transfer-Encoding",
                                          "CONNECTION",
                                          "Keep-Alive",
                                          "Upgrade",
                                          "te",
                                          "Trailer",
                                          "Expect",
                                          "Proxy-Connection"};
    static const char *const session[] = {"Mcp-Session-Id", "MCP-PROTOCOL-VERSION",
                                          "last-event-id"};
    static const char *const allowed[] = {"X-Signature", "Authorization", "Content-Type",
                                          "Accept",      "Hostname",      "X-Content-Length"};
    for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
        const char *why = helper_header_framing(refused[i]);
        CHECK(why && strstr(why, "frames the HTTP request"));
    }
    for (size_t i = 0; i < ELEMENTSOF(session); i++) {
        const char *why = helper_header_framing(session[i]);
        CHECK(why && strstr(why, "belongs to the MCP session"));
    }
    for (size_t i = 0; i < ELEMENTSOF(allowed); i++)
        CHECK(helper_header_framing(allowed[i]) == NULL);
    CHECK_CONTAINS(helper_header_refusal("Content-Length", "5", 1), "frames the HTTP request");
    CHECK_CONTAINS(helper_header_refusal("mcp-protocol-version", "2025-06-18", 10),
                   "belongs to the MCP session");
}

static void test_headers_round_trip(void)
{
    struct helper_headers h = {0}, g = {0};
    struct buf out;
    struct err e = ERR_INIT;
    buf_init_secret(&out, 0);
    CHECK_INT(helper_headers_add(&h, "X-Quoted", "Bearer \"q\" \\ \xe2\x82\xac", 16, &e), 0);
    CHECK_INT(helper_headers_add(&h, "X-Tenant", "t", 1, &e), 0);
    h.expires_at = 7;
    CHECK_INT(helper_headers_write(&h, &out), 0);
    CHECK_INT(helper_headers_parse(out.data, out.len, &g, &e), 0);
    CHECK_INT(g.n, 2);
    CHECK_INT(g.expires_at, 7);
    CHECK_STR(helper_headers_get(&g, "x-quoted"), "Bearer \"q\" \\ \xe2\x82\xac");
    CHECK_INT(g.v[0].value_len, 16);
    CHECK_STR(helper_headers_get(&g, "X-Tenant"), "t");
    struct buf again;
    buf_init_secret(&again, 0);
    CHECK_INT(helper_headers_write(&g, &again), 0);
    CHECK_STR(buf_str(&again), buf_str(&out));
    buf_release(&again);
    buf_release(&out);
    helper_headers_release(&h);
    helper_headers_release(&g);
}

/* A DPoP answer: its key goes through, and it is version 2 (a reader of version 1 refuses it),
 * while an answer without a key stays at version 1 (every reader takes it). */
static void test_headers_dpop(void)
{
    struct helper_headers h = {0}, g = {0};
    struct buf out, again;
    struct err e = ERR_INIT;
    char *t1 = NULL, *t2 = NULL;
    buf_init_secret(&out, 0);
    buf_init_secret(&again, 0);
    CHECK_INT(helper_headers_add(&h, "Authorization", "DPoP eyJ.a-b_c.d", 16, &e), 0);
    CHECK_INT(helper_headers_write(&h, &out), 0);
    CHECK_CONTAINS(buf_str(&out), "\"version\":1}");
    CHECK(!strstr(buf_str(&out), "dpop\""));
    buf_reset(&out);
    CHECK_INT(dpop_key_generate(&h.dpop), 0);
    CHECK_INT(helper_headers_write(&h, &out), 0);
    CHECK_CONTAINS(buf_str(&out), "\"dpop\":{\"alg\":\"ES256\",\"jwk\":{\"kty\":\"EC\"");
    CHECK_CONTAINS(buf_str(&out), "\"version\":2}");
    CHECK_INT(helper_headers_parse(out.data, out.len, &g, &e), 0);
    CHECK_STR(helper_headers_get(&g, "Authorization"), "DPoP eyJ.a-b_c.d");
    CHECK(g.dpop != NULL);
    CHECK_INT(dpop_key_thumbprint(h.dpop, &t1), 0);
    CHECK_INT(dpop_key_thumbprint(g.dpop, &t2), 0);
    CHECK_STR(t1, t2);
    CHECK_INT(helper_headers_write(&g, &again), 0);
    CHECK_STR(buf_str(&again), buf_str(&out));
    free(t1);
    free(t2);
    buf_release(&again);
    buf_release(&out);
    helper_headers_release(&h);
    helper_headers_release(&g);
    CHECK(!g.dpop);
}

static void test_headers_reader_lenient(void)
{
    struct helper_headers h = {0};
    struct err e = ERR_INIT;
    /* what mcp-auth printed before the version was added, and what a third-party helper
     * prints: no version, no expiry, members we do not know */
    CHECK_INT(parse_headers("{\"headers\":{\"Authorization\":\"Bearer abc\"},"
                            "\"expires_at\":1796021359}\n",
                            &h, &e),
              0);
    CHECK_INT(h.expires_at, 1796021359);
    CHECK_STR(helper_headers_get(&h, "Authorization"), "Bearer abc");
    helper_headers_release(&h);

    CHECK_INT(
        parse_headers("{\"kind\":\"ExecCredential\",\"headers\":{},\"status\":{\"a\":[]}}", &h, &e),
        0);
    CHECK_INT(h.n, 0);
    CHECK_INT(h.expires_at, 0);
    helper_headers_release(&h);
}

static void check_headers_refusals(const struct refusal *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct helper_headers h = {.n = 12345};
        struct err e = ERR_INIT;
        int r = parse_headers(t[i].text, &h, &e);
        if (r != t[i].code)
            fprintf(stderr, "  for %s: %d, %s\n", t[i].text, r, err_msg(&e));
        CHECK_INT(r, t[i].code);
        CHECK_CONTAINS(err_msg(&e), t[i].message);
        CHECK(strstr(err_msg(&e), CANARY) == NULL);
        CHECK_INT(h.n, 12345);
    }
}

static void test_headers_refusals(void)
{
    static const struct refusal t[] = {
        {"", -EBADMSG, "empty answer"},
        {"null", -EBADMSG, "not a JSON object"},
        {"Authorization: Bearer " CANARY, -EBADMSG, "not a JSON object"},
        {"{\"expires_at\":5}", -EBADMSG, "no \"headers\" object"},
        {"{\"headers\":\"Authorization: Bearer " CANARY "\"}", -EBADMSG,
         "\"headers\" must be an object, not a string"},
        {"{\"headers\":{\"Authorization\":[\"" CANARY "\"]}}", -EBADMSG,
         "\"headers\": header 'Authorization' must be a string, not an array"},
        {"{\"headers\":{\"Authorization\":\"Bearer " CANARY "\\r\\nX-Evil: 1\"}}", -EBADMSG,
         "\"headers\": header 'Authorization': the value has a control character"},
        {"{\"headers\":{\"X-A\":\"ok\",\"X-B\":\"" CANARY "\\n\"}}", -EBADMSG,
         "header 'X-B': the value has a control character"},
        {"{\"headers\":{\"X-B\":\"" CANARY "\\u0007\"}}", -EBADMSG,
         "header 'X-B': the value has a control character"},
        {"{\"headers\":{\"X-B\":\"" CANARY "\\u007f\"}}", -EBADMSG,
         "header 'X-B': the value has a control character"},
        {"{\"headers\":{\"X-B\":\"" CANARY "\\u0000\"}}", -EBADMSG, "\\u0000 in a string"},
        {"{\"headers\":{\"Authorization\":\"Bearer " CANARY " x\"}}", -EBADMSG,
         "\"headers\": header 'Authorization': the bearer token is not an RFC 6750 token"},
        {"{\"headers\":{\"authorization\":\"bearer " CANARY "\\u00e9\"}}", -EBADMSG,
         "header 'authorization': the bearer token is not an RFC 6750 token"},
        {"{\"headers\":{\"X-B\":\"" CANARY " \"}}", -EBADMSG,
         "header 'X-B': the value begins or ends with a space or a tab"},
        {"{\"headers\":{\"X-B\":\"\"}}", -EBADMSG, "header 'X-B': the value is empty"},
        {"{\"headers\":{\"Authorization\":\"Bearer " CANARY "\",\"Content-Length\":\"5\"}}",
         -EBADMSG, "header 'Content-Length': it frames the HTTP request"},
        {"{\"headers\":{\"MCP-Session-Id\":\"" CANARY "\"}}", -EBADMSG,
         "header 'MCP-Session-Id': it belongs to the MCP session"},
        {"{\"headers\":{\"Bad Name\":\"" CANARY "\"}}", -EBADMSG,
         "\"headers\": member 1: the name is not an HTTP token"},
        {"{\"headers\":{\"X-A\":\"1\",\"X:B\":\"" CANARY "\"}}", -EBADMSG,
         "\"headers\": member 2: the name is not an HTTP token"},
        {"{\"headers\":{\"\":\"v\"}}", -EBADMSG, "member 1: the name is not an HTTP token"},
        {"{\"headers\":{\"X-A\":\"1\",\"x-a\":\"2\"}}", -EBADMSG,
         "\"headers\": header 'x-a' appears twice"},
        {"{\"headers\":{},\"headers\":{}}", -EBADMSG, "\"headers\" appears twice"},
        {"{\"headers\":{},\"expires_at\":\"1796021359\"}", -EBADMSG,
         "\"expires_at\" must be a positive integer, not a string"},
        {"{\"headers\":{},\"expires_at\":1e9}", -EBADMSG,
         "\"expires_at\" must be a positive integer"},
        {"{\"headers\":{},\"expires_at\":1,\"expires_at\":2}", -EBADMSG,
         "\"expires_at\" appears twice"},
        {"{\"headers\":{},\"version\":3}", -EPROTONOSUPPORT,
         "version 3 of the helper protocol, and this program reads version 2: update it"},
        {"{\"headers\":{\"A\":\"b\"}", -EBADMSG, "unexpected end of input"},
        {"{\"headers\":{\"Authorization\":\"DPoP " CANARY " x\"}}", -EBADMSG,
         "header 'Authorization': the bearer token is not an RFC 6750 token"},
        {"{\"headers\":{},\"dpop\":\"" CANARY "\"}", -EBADMSG,
         "\"dpop\" must be an object, not a string"},
        {"{\"headers\":{},\"dpop\":{\"alg\":\"none\",\"jwk\":{}}}", -EBADMSG,
         "\"dpop\": unsupported algorithm (only ES256)"},
        {"{\"headers\":{},\"dpop\":{\"alg\":\"ES256\"}}", -EBADMSG, "\"dpop\": \"jwk\" is missing"},
        {"{\"headers\":{},\"dpop\":{\"alg\":\"ES256\",\"jwk\":{\"kty\":\"EC\",\"crv\":\"P-256\","
         "\"x\":\"" CANARY "\",\"y\":\"" CANARY "\",\"d\":\"" CANARY "\"}}}",
         -EBADMSG, "\"dpop\": the DPoP key's \"x\" is not 32 bytes of base64url"},
        {"{\"headers\":{},\"dpop\":{},\"dpop\":{}}", -EBADMSG, "\"dpop\" appears twice"},
    };
    check_headers_refusals(t, ELEMENTSOF(t));
}

TESTS_MAIN(test_secrets_write_bytes, test_secrets_add_refusals, test_secrets_round_trip,
           test_secrets_reader_lenient, test_secrets_refusals, test_reader_bounds,
           test_headers_write_bytes, test_headers_add_refusals, test_headers_round_trip,
           test_headers_reader_lenient, test_headers_refusals, test_framing_headers,
           test_headers_dpop)
