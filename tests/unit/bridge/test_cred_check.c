/* test_cred_check.c - the last look at credentials before they go to a server: which URLs are
 * plain http to a host that is not loopback (look-alike hosts included), which headers count as
 * credentials, the refusal of credentials over such a URL unless "allowHttp", and of headers
 * that are not safe to send (CR/LF, blanks, empty, a bearer token that is not a b64token), with
 * messages that name the header and never hold the value; the headers a per-request helper may
 * not add. */
#include <errno.h>
#include <string.h>

#include "credkit/mcp_entry.h"

#include "creds/cred_check.h"
#include "tests.h"

#define CANARY "cAnArY-7f3e"

static void test_plain_remote(void)
{
    static const char *const local[] = {
        "http://127.0.0.1:8080/mcp", "http://127.9.8.7/mcp", "http://localhost/mcp",
        "http://LOCALHOST:1/x",      "http://[::1]:3000/",   "https://mcp.example.com/mcp",
        "HTTPS://mcp.example.com/",  "https://10.0.0.1/mcp",
    };
    static const char *const remote[] = {
        "http://mcp.example.com/mcp",
        "http://10.0.0.1/mcp",
        "http://127.0.0.1.evil.example/",
        "http://localhost.evil/mcp",
        "http://[::2]/mcp",
        "http://0.0.0.0:80/",
        "not a url",
        "http://u:p@127.0.0.1/mcp",
        "ftp://127.0.0.1/",
    };
    for (size_t i = 0; i < ELEMENTSOF(local); i++) {
        CHECK(!cred_check_plain_remote(local[i]));
        if (cred_check_plain_remote(local[i]))
            fprintf(stderr, "  %s\n", local[i]);
    }
    for (size_t i = 0; i < ELEMENTSOF(remote); i++) {
        CHECK(cred_check_plain_remote(remote[i]));
        if (!cred_check_plain_remote(remote[i]))
            fprintf(stderr, "  %s\n", remote[i]);
    }
    CHECK(cred_check_plain_remote(NULL));
}

static char *entry_headers[] = {"X-Lit: v1", "X-Key: ${KEY}", "Authorization: Bearer lit", NULL};
static char *no_strings[] = {NULL};

static struct mcp_server http_entry(const char *url)
{
    return (struct mcp_server){
        .name = "s",
        .transport = MCP_TRANSPORT_HTTP,
        .url = (char *)url,
        .headers = entry_headers,
        .args = no_strings,
        .env = no_strings,
    };
}

static void test_is_credential(void)
{
    struct mcp_server s = http_entry("http://mcp.example.com/mcp");
    CHECK(!cred_check_is_credential(&s, "X-Lit: v1"));
    CHECK(!cred_check_is_credential(&s, "x-lit: v1"));
    CHECK(cred_check_is_credential(&s, "X-Lit: other")); /* not what the entry wrote */
    CHECK(cred_check_is_credential(&s, "X-Key: " CANARY));
    CHECK(cred_check_is_credential(&s, "Authorization: Bearer lit")); /* always one */
    CHECK(cred_check_is_credential(&s, "Cookie: a=b"));
    CHECK(cred_check_is_credential(&s, "X-From-Helper: h"));
    CHECK(cred_check_is_credential(&s, "no colon"));
}

static int check(const struct mcp_server *s, char **headers, char **vars, struct err *e)
{
    struct credentials c = {.headers = headers, .vars = vars};
    err_clear(e);
    int r = cred_check_answer(s, &c, e);
    CHECK(!strstr(err_msg(e), CANARY));
    return r;
}

static void test_plain_http(void)
{
    struct err e = ERR_INIT;
    struct mcp_server s = http_entry("http://mcp.example.com/mcp");
    char *lit[] = {"X-Lit: v1", NULL};
    char *key[] = {"X-Lit: v1", "X-Key: " CANARY, NULL};
    char *bearer[] = {"Authorization: Bearer " CANARY, NULL};
    char *helper[] = {"X-Tenant: " CANARY, NULL};

    CHECK_INT(check(&s, NULL, NULL, &e), 0);
    CHECK_INT(check(&s, lit, NULL, &e), 0);
    CHECK_INT(check(&s, key, NULL, &e), -EPERM);
    CHECK_STR(err_msg(&e), "the URL is plain http to a host that is not loopback: credentials "
                           "(header 'X-Key') are not sent in clear; use an https:// URL, or set "
                           "\"allowHttp\": true in the entry if the network on the way is "
                           "trusted");
    CHECK_INT(check(&s, bearer, NULL, &e), -EPERM);
    CHECK_CONTAINS(err_msg(&e), "(header 'Authorization')");
    CHECK_INT(check(&s, helper, NULL, &e), -EPERM);
    CHECK_CONTAINS(err_msg(&e), "(header 'X-Tenant')");

    /* the opt-in, loopback, https: sent */
    s.allow_http = true;
    CHECK_INT(check(&s, key, NULL, &e), 0);
    CHECK_INT(check(&s, bearer, NULL, &e), 0);
    static const char *const ok_urls[] = {"http://127.0.0.1:9/mcp", "http://localhost:9/mcp",
                                          "http://[::1]:9/mcp", "https://mcp.example.com/mcp"};
    for (size_t i = 0; i < ELEMENTSOF(ok_urls); i++) {
        s = http_entry(ok_urls[i]);
        CHECK_INT(check(&s, key, NULL, &e), 0);
        CHECK_INT(check(&s, bearer, NULL, &e), 0);
    }

    /* a ${...} in the URL: a value in clear, even without a header; the host may come from one */
    char *vars[] = {"TOKEN=" CANARY, "HOST=mcp.example.com", "LOCAL=127.0.0.1", NULL};
    s = http_entry("http://mcp.example.com/mcp?key=${TOKEN}");
    CHECK_INT(check(&s, NULL, vars, &e), -EPERM);
    CHECK_CONTAINS(err_msg(&e), "carries ${...} values: they are not sent in clear");
    s = http_entry("http://${HOST}/mcp");
    CHECK_INT(check(&s, bearer, vars, &e), -EPERM);
    s = http_entry("http://${LOCAL}:8/mcp");
    CHECK_INT(check(&s, bearer, vars, &e), 0);
    s = http_entry("https://mcp.example.com/mcp?key=${TOKEN}");
    CHECK_INT(check(&s, bearer, vars, &e), 0);
    s = http_entry("http://${UNSET}/mcp"); /* cannot be told: refused */
    CHECK_INT(check(&s, bearer, vars, &e), -EPERM);

    /* stdio: no URL, no headers */
    struct mcp_server st = {.name = "st", .transport = MCP_TRANSPORT_STDIO, .command = "x"};
    CHECK_INT(check(&st, bearer, NULL, &e), 0);
}

static void test_unsafe_headers(void)
{
    struct err e = ERR_INIT;
    struct mcp_server s = http_entry("https://mcp.example.com/mcp");
    struct {
        char *header;
        const char *msg;
    } t[] = {
        {"X-Key: " CANARY "\r\nX-Injected: 1", "header 'X-Key' is refused: the value has a "
                                               "control character"},
        {"X-Key: " CANARY "\n", "header 'X-Key' is refused: the value has a control character"},
        {"X-Key: " CANARY " ", "header 'X-Key' is refused: the value begins or ends with a space"},
        {"X-Key: ", "header 'X-Key' is refused: the value is empty"},
        {"Authorization: Bearer " CANARY " x",
         "header 'Authorization' is refused: the bearer token is not an RFC 6750 token"},
        {"Authorization: Bearer " CANARY "\"", "the bearer token is not an RFC 6750 token"},
        {"Bad Name: " CANARY, "a request header has no valid name"},
        /* a helper's or mcp-auth's answer that would frame the request or its session */
        {"Content-Length: 5", "header 'Content-Length' is refused: it frames the HTTP request"},
        {"transfer-encoding: chunked", "header 'transfer-encoding' is refused: it frames"},
        {"Host: evil.example", "header 'Host' is refused: it frames the HTTP request"},
        {"Mcp-Session-Id: " CANARY, "header 'Mcp-Session-Id' is refused: it belongs to the MCP "
                                    "session"},
    };
    for (size_t i = 0; i < ELEMENTSOF(t); i++) {
        char *h[] = {"X-Lit: v1", t[i].header, NULL};
        CHECK_INT(check(&s, h, NULL, &e), -EINVAL);
        CHECK_CONTAINS(err_msg(&e), t[i].msg);
        CHECK_CONTAINS(err_msg(&e), "the server is not connected");
        s.allow_http = true; /* the opt-in does not make them safe */
        CHECK_INT(check(&s, h, NULL, &e), -EINVAL);
        s.allow_http = false;
    }
    char *fine[] = {"Authorization: Bearer abc-._~+/09==", "X-Key: a\tb \xc3\xa9", NULL};
    CHECK_INT(check(&s, fine, NULL, &e), 0);
}

TESTS_MAIN(test_plain_remote, test_is_credential, test_plain_http, test_unsafe_headers)
