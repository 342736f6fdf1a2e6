/* test_url.c - canonical forms, loopback, origins, resolution, form encoding */
#include <stdlib.h>
#include <string.h>

#include "credkit/secmem.h"
#include "credkit/buf.h"
#include "credkit/url.h"

#include "tests.h"

/* The canonical form of in, or "ERR <code>" (static buffer). */
static const char *canon(const char *in)
{
    static char out[512];
    struct err e = ERR_INIT;
    char *s = NULL;
    int r = url_canonical(in, &s, &e);
    if (r < 0) {
        snprintf(out, sizeof(out), "ERR %d", r);
        CHECK(e.msg[0] != 0); /* every rejection says why */
        return out;
    }
    snprintf(out, sizeof(out), "%s", s);
    free(s);
    return out;
}

static void test_canonical(void)
{
    CHECK_STR(canon("HTTPS://Example.COM:443/"), "https://example.com");
    CHECK_STR(canon("https://example.com"), "https://example.com");
    CHECK_STR(canon("https://example.com/"), "https://example.com");
    CHECK_STR(canon("https://example.com:8443/"), "https://example.com:8443");
    CHECK_STR(canon("http://h:80/mcp/"), "http://h/mcp/");
    CHECK_STR(canon("http://h:443/"), "http://h:443"); /* 443 is only https's default */
    CHECK_STR(canon("https://h:80/"), "https://h:80");
    CHECK_STR(canon("https://h:0443/"), "https://h");
    CHECK_STR(canon("https://h/MCP/Path"), "https://h/MCP/Path"); /* path keeps its case */
    CHECK_STR(canon("https://h/mcp?B=2&a=1"), "https://h/mcp?B=2&a=1");
    CHECK_STR(canon("https://h/mcp#frag"), "https://h/mcp");
    CHECK_STR(canon("https://h/mcp?x=1#frag"), "https://h/mcp?x=1");
    CHECK_STR(canon("https://h/?"), "https://h");
    CHECK_STR(canon("http://[::1]:8080/mcp"), "http://[::1]:8080/mcp");
    CHECK_STR(canon("http://[::1]:8080"), "http://[::1]:8080");
    CHECK_STR(canon("http://[0:0:0:0:0:0:0:1]/"), "http://[::1]");
    CHECK_STR(canon("https://[2001:DB8::1]:443/x"), "https://[2001:db8::1]/x");
    CHECK_STR(canon("http://127.0.0.1:3000/sse"), "http://127.0.0.1:3000/sse");

    /* idempotent */
    CHECK_STR(canon("https://h/a?b=c"), "https://h/a?b=c");
    CHECK_STR(canon(canon("HTTPS://Example.COM:443/x/?q=1#f")), "https://example.com/x/?q=1");
}

static void test_canonical_rejects(void)
{
    struct err e = ERR_INIT;
    char *s = (char *)"untouched";

    CHECK_INT(url_canonical("ftp://h/x", &s, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "'ftp://h/x'");
    CHECK_STR(s, "untouched"); /* output untouched on failure */
    CHECK_INT(url_canonical("/x", &s, &e), -EINVAL);
    CHECK_INT(url_canonical("example.com/x", &s, &e), -EINVAL);
    CHECK_INT(url_canonical("", &s, &e), -EINVAL);
    CHECK_INT(url_canonical(NULL, &s, &e), -EINVAL);
    CHECK_INT(url_canonical("http://", &s, &e), -EINVAL);
    CHECK_INT(url_canonical("https://h:99999/", &s, &e), -EINVAL);
    CHECK_INT(url_canonical("https://h:0/", &s, &e), -EINVAL);
    CHECK_INT(url_canonical("https://h/a b", &s, &e), -EINVAL);
    CHECK_INT(url_canonical("javascript:alert(1)", &s, &e), -EINVAL);
    CHECK_INT(url_canonical("file:///etc/passwd", &s, &e), -EINVAL);

    err_clear(&e);
    CHECK_INT(url_canonical("https://user:pw@h/", &s, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "password");
    CHECK(!strstr(e.msg, "pw@")); /* the password is not quoted back */
    CHECK_INT(url_canonical("https://user@h/", &s, &e), -EINVAL);
    CHECK_INT(url_canonical("https://@h/", &s, &e), -EINVAL);
    CHECK_INT(url_canonical("https://good.example@evil.example/", &s, &e), -EINVAL);
    CHECK_STR(s, "untouched");
}

static void test_loopback(void)
{
    CHECK(url_is_loopback("http://127.0.0.1/"));
    CHECK(url_is_loopback("http://127.0.0.1:8080/cb"));
    CHECK(url_is_loopback("http://127.8.9.10/"));
    CHECK(url_is_loopback("http://localhost:3000/"));
    CHECK(url_is_loopback("http://LOCALHOST/"));
    CHECK(url_is_loopback("http://[::1]:9/"));
    CHECK(url_is_loopback("http://[::ffff:127.0.0.1]/"));
    CHECK(url_is_loopback("https://127.1/")); /* libcurl normalises IPv4 shorthand */

    CHECK(!url_is_loopback("http://127.0.0.1.evil.com/"));
    CHECK(!url_is_loopback("http://localhost.evil.com"));
    CHECK(!url_is_loopback("http://evil.com/127.0.0.1"));
    CHECK(!url_is_loopback("http://evil.com/?h=localhost"));
    CHECK(!url_is_loopback("http://evil.com#localhost"));
    CHECK(!url_is_loopback("http://128.0.0.1/"));
    CHECK(!url_is_loopback("http://10.0.0.1/"));
    CHECK(!url_is_loopback("http://[::2]/"));
    CHECK(!url_is_loopback("http://localhost@evil.com/")); /* userinfo: refused outright */
    CHECK(!url_is_loopback("ftp://127.0.0.1/"));
    CHECK(!url_is_loopback("/relative"));
    CHECK(!url_is_loopback(""));
    CHECK(!url_is_loopback(NULL));
}

static void test_check_secure(void)
{
    struct err e = ERR_INIT;
    CHECK_INT(url_check_secure("https://as.example.com/token", "token endpoint", &e), 0);
    CHECK_INT(url_check_secure("http://127.0.0.1:9000/token", "token endpoint", &e), 0);
    CHECK_INT(url_check_secure("http://localhost/token", "token endpoint", &e), 0);
    CHECK_INT(url_check_secure("http://[::1]/token", "token endpoint", &e), 0);

    CHECK_INT(url_check_secure("http://as.example.com/token", "token endpoint", &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "token endpoint");
    CHECK_CONTAINS(e.msg, "'http://as.example.com/token'");
    CHECK_CONTAINS(e.msg, "https");
    err_clear(&e);
    CHECK_INT(url_check_secure("http://127.0.0.1.evil.com/t", "token endpoint", &e), -EINVAL);
    CHECK_INT(url_check_secure("ftp://localhost/t", "registration endpoint", &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "registration endpoint");
    CHECK_INT(url_check_secure("not a url", "issuer", &e), -EINVAL);
    CHECK_INT(url_check_secure("http://as.example.com/", "issuer", NULL), -EINVAL);
}

static void test_origin(void)
{
    char *o = NULL;
    CHECK_INT(url_origin("HTTPS://Example.COM:443/a/b?c#d", &o), 0);
    CHECK_STR(o, "https://example.com");
    free(o);
    o = NULL;
    CHECK_INT(url_origin("http://127.0.0.1:8080/x", &o), 0);
    CHECK_STR(o, "http://127.0.0.1:8080");
    free(o);
    o = NULL;
    CHECK_INT(url_origin("http://[::1]:8080/x", &o), 0);
    CHECK_STR(o, "http://[::1]:8080");
    free(o);
    o = NULL;
    CHECK_INT(url_origin("/relative", &o), -EINVAL);
    CHECK(o == NULL);

    CHECK(url_same_origin("https://a.example/x", "https://A.example:443/y?z"));
    CHECK(url_same_origin("http://127.0.0.1:80/", "http://127.0.0.1/other"));
    CHECK(!url_same_origin("https://a.example/", "http://a.example/"));
    CHECK(!url_same_origin("http://127.0.0.1:8080/", "http://127.0.0.1:8081/"));
    CHECK(!url_same_origin("https://a.example/", "https://b.example/"));
    CHECK(!url_same_origin("https://a.example/", "https://a.example.evil/"));
    CHECK(!url_same_origin("https://a.example/", "/x"));
    CHECK(!url_same_origin("https://a.example/", NULL));
    CHECK(!url_same_origin("ftp://a.example/", "ftp://a.example/"));
}

static void test_path(void)
{
    char *p = NULL;
    CHECK_INT(url_path("https://h/a/b?x=1#f", &p), 0);
    CHECK_STR(p, "/a/b");
    free(p);
    p = NULL;
    CHECK_INT(url_path("https://h", &p), 0);
    CHECK_STR(p, "/");
    free(p);
    p = NULL;
    CHECK_INT(url_path("https://h/?q", &p), 0);
    CHECK_STR(p, "/");
    free(p);
    p = NULL;
    CHECK_INT(url_path("mailto:x@y", &p), -EINVAL);
    CHECK(p == NULL);
}

static const char *resolve(const char *base, const char *ref)
{
    static char out[512];
    struct err e = ERR_INIT;
    char *s = NULL;
    int r = url_resolve(base, ref, &s, &e);
    if (r < 0) {
        snprintf(out, sizeof(out), "ERR %d", r);
        CHECK(e.msg[0] != 0);
        return out;
    }
    snprintf(out, sizeof(out), "%s", s);
    free(s);
    return out;
}

static void test_resolve(void)
{
    const char *b = "https://h.example/a/b/c?x=1#f";
    CHECK_STR(resolve(b, "../x"), "https://h.example/a/x");
    CHECK_STR(resolve(b, "d"), "https://h.example/a/b/d");
    CHECK_STR(resolve(b, "./d/"), "https://h.example/a/b/d/");
    CHECK_STR(resolve(b, "/y"), "https://h.example/y");
    CHECK_STR(resolve(b, "?q=2"), "https://h.example/a/b/c?q=2");
    CHECK_STR(resolve(b, "#g"), "https://h.example/a/b/c?x=1#g");
    CHECK_STR(resolve(b, ""), "https://h.example/a/b/c?x=1");
    CHECK_STR(resolve(b, "https://other.example/z"), "https://other.example/z");
    CHECK_STR(resolve(b, "//other.example/z"), "https://other.example/z");
    CHECK_STR(resolve("http://127.0.0.1:8080/mcp", "/.well-known/oauth-protected-resource"),
              "http://127.0.0.1:8080/.well-known/oauth-protected-resource");

    CHECK_STR(resolve(b, "ftp://other.example/z"), "ERR -22");
    CHECK_STR(resolve(b, "https://u:p@other.example/"), "ERR -22");
    CHECK_STR(resolve("/relative/base", "x"), "ERR -22");
    CHECK_STR(resolve(b, NULL), "ERR -22");
}

static char *dec(const char *query, const char *key, int *ret_r)
{
    char *v = NULL;
    *ret_r = url_query_get(query, key, &v);
    return v;
}

static void test_encode(void)
{
    char *s = url_encode("a b+c&d=e/f?g");
    CHECK_STR(s, "a%20b%2Bc%26d%3De%2Ff%3Fg");
    free(s);
    s = url_encode("AZaz09-._~");
    CHECK_STR(s, "AZaz09-._~");
    free(s);
    s = url_encode("caf\xc3\xa9 \xe2\x9c\x93");
    CHECK_STR(s, "caf%C3%A9%20%E2%9C%93");
    free(s);
    s = url_encode("");
    CHECK_STR(s, "");
    free(s);
    s = url_encode("100%zz%");
    CHECK_STR(s, "100%25zz%25");
    free(s);

    /* round trips through a query */
    const char *values[] = {"a b",     "1+1=2",      "x&y=z", "caf\xc3\xa9 \xe2\x9c\x93",
                            "100%zz%", "%41",        "",      "~-._",
                            "a?b#c",   "line\nbreak"};
    for (size_t i = 0; i < ELEMENTSOF(values); i++) {
        char *enc = url_encode(values[i]);
        char q[512];
        int r;
        snprintf(q, sizeof(q), "before=1&k=%s&after=2", enc);
        char *v = dec(q, "k", &r);
        CHECK_INT(r, 0);
        CHECK_STR(v, values[i]);
        secure_free(v);
        free(enc);
    }
}

static void test_query_get(void)
{
    int r;
    char *v;

    v = dec("a=1&b=2", "b", &r);
    CHECK_INT(r, 0);
    CHECK_STR(v, "2");
    secure_free(v);
    v = dec("?code=abc&state=xyz", "code", &r);
    CHECK_STR(v, "abc");
    secure_free(v);
    v = dec("/callback?code=abc%2Fdef&state=s+t", "state", &r);
    CHECK_STR(v, "s t");
    secure_free(v);
    v = dec("http://127.0.0.1:5000/callback?code=c0de&state=st#frag", "state", &r);
    CHECK_INT(r, 0);
    CHECK_STR(v, "st");
    secure_free(v);
    v = dec("http://127.0.0.1:5000/callback?code=c0de&state=st#frag", "code", &r);
    CHECK_STR(v, "c0de");
    secure_free(v);
    /* a '?' after '=' is data, not the start of the query */
    v = dec("next=/a?b&c=1", "next", &r);
    CHECK_STR(v, "/a?b");
    secure_free(v);
    /* the first occurrence wins; keys are exact, with encoded keys decoded */
    v = dec("k=1&k=2", "k", &r);
    CHECK_STR(v, "1");
    secure_free(v);
    v = dec("my%20key=v&my+key2=w", "my key2", &r);
    CHECK_STR(v, "w");
    secure_free(v);
    v = dec("flag&x=1", "flag", &r);
    CHECK_INT(r, 0);
    CHECK_STR(v, "");
    secure_free(v);
    v = dec("empty=&x=1", "empty", &r);
    CHECK_STR(v, "");
    secure_free(v);
    v = dec("&&a=1&&", "a", &r);
    CHECK_STR(v, "1");
    secure_free(v);
    /* %-junk stays as it is, as with curl_easy_unescape */
    v = dec("a=%zz%4%&b=%4a%4A", "a", &r);
    CHECK_STR(v, "%zz%4%");
    secure_free(v);
    v = dec("a=%zz%4%&b=%4a%4A", "b", &r);
    CHECK_STR(v, "JJ");
    secure_free(v);

    v = (char *)"untouched";
    r = url_query_get("a=1&b=2", "c", &v);
    CHECK_INT(r, -ENOENT);
    CHECK_STR(v, "untouched");
    CHECK_INT(url_query_get("a=1&b=2", "A", &v), -ENOENT);
    CHECK_INT(url_query_get("ab=1", "a", &v), -ENOENT);
    CHECK_INT(url_query_get("a=1", "a=1", &v), -ENOENT);
    CHECK_INT(url_query_get("", "a", &v), -ENOENT);
    CHECK_INT(url_query_get("https://h/cb", "code", &v), -ENOENT);
    CHECK_INT(url_query_get("https://h/cb#code=x", "code", &v), -ENOENT);
    CHECK_INT(url_query_get("a=x%00y", "a", &v), -EBADMSG); /* would cut the value short */
    CHECK_INT(url_query_get(NULL, "a", &v), -EINVAL);
    CHECK_STR(v, "untouched");
}

/* the pieces of a URL that messages may name without quoting the rest */
static void test_scheme_userinfo(void)
{
    CHECK_INT(url_scheme_len("ftp://x.example/mcp"), 3);
    CHECK_INT(url_scheme_len("HTTPS://x"), 5);
    CHECK_INT(url_scheme_len("svn+ssh://x"), 7);
    CHECK_INT(url_scheme_len("a1.-+:rest"), 5);
    CHECK_INT(url_scheme_len("file:///etc/passwd"), 4);
    CHECK_INT(url_scheme_len("/mcp"), 0);
    CHECK_INT(url_scheme_len("1ab://x"), 0);
    CHECK_INT(url_scheme_len("not a url"), 0);
    CHECK_INT(url_scheme_len("ftp"), 0);
    CHECK_INT(url_scheme_len(":x"), 0);
    CHECK_INT(url_scheme_len(""), 0);

    CHECK(url_has_userinfo("https://me:hunter2@x.example/mcp"));
    CHECK(url_has_userinfo("https://me@x.example"));
    CHECK(!url_has_userinfo("https://x.example/a@b"));
    CHECK(!url_has_userinfo("https://x.example?to=a@b"));
    CHECK(!url_has_userinfo("https://x.example#a@b"));
    CHECK(!url_has_userinfo("mailto:a@b"));
}

static void collect_part(const char *part, size_t len, void *userdata)
{
    struct buf *b = userdata;
    CHECK_INT(buf_append(b, part, len), 0);
    CHECK_INT(buf_append_char(b, '|'), 0);
}

/* A URL as shown: no query or fragment value, no userinfo; names of ${...} stay. */
static void test_display(void)
{
    static const struct {
        const char *in, *out;
    } t[] = {
        {"https://mcp.example.com/mcp", "https://mcp.example.com/mcp"},
        {"https://x/mcp?api_key="
         "abc123secret",
         "https://x/mcp?api_key=***"},
        {"https://x/mcp?api_key=abc&region=eu&x=", "https://x/mcp?api_key=***&region=***&x="},
        {"https://x/mcp?key=${TOKEN}", "https://x/mcp?key=${TOKEN}"},
        {"https://x/mcp?key=a${TOKEN}", "https://x/mcp?key=***"},
        {"https://x/mcp?key=${A}${B}", "https://x/mcp?key=***"},
        {"https://x/mcp?sk-bare-key", "https://x/mcp?***"},
        {"https://x/mcp?a=1#access_token=tok", "https://x/mcp?a=***#access_token=***"},
        {"https://x/p#frag", "https://x/p#***"},
        {"https://user:pass@x/mcp?k=v", "https://***:***@x/mcp?k=***"},
        {"https://:pass@x/mcp", "https://***:***@x/mcp"},
        {"https://a@b@x:8443/mcp", "https://***@x:8443/mcp"},
        {"https://x/mcp?", "https://x/mcp?"},
        {"https://x/mcp?&&k==v", "https://x/mcp?&&k=***"},
        {"not a url?k=v", "not a url?k=***"},
        {"", ""},
    };
    for (size_t i = 0; i < ELEMENTSOF(t); i++) {
        char *d = url_display(t[i].in);
        CHECK_STR(d, t[i].out);
        free(d);
    }
    /* the pieces it masks, for a log's redaction */
    struct buf parts;
    buf_init(&parts, 1024);
    url_each_masked("https://u:p@x/mcp?k=key1&t=${T}&bare#f=frag", collect_part, &parts);
    CHECK_STR(buf_str(&parts), "u|p|key1|bare|frag|");
    buf_release(&parts);
}

TESTS_MAIN(test_scheme_userinfo, test_canonical, test_canonical_rejects, test_loopback,
           test_check_secure, test_origin, test_path, test_resolve, test_encode, test_query_get,
           test_display)
