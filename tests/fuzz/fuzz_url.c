/* fuzz_url.c - libFuzzer target: URL canonicalisation and resolution (common/url.c).
 *
 * Input: a URL, a newline, a reference (and, read as a whole, a query string). A URL that
 * canonicalises has a canonical form that is its own canonical form, the same origin as the
 * URL, and a path and an origin; a reference resolved against it canonicalises too. A refused
 * URL comes with a message. Form encoding of the URL decodes back to it. */
#include <errno.h>

#include "credkit/secmem.h"
#include "credkit/url.h"

#include "fuzz.h"

static void canonical(const char *url, const char *ref)
{
    struct err e = ERR_INIT;
    char *c = NULL, *again = NULL, *origin = NULL, *path = NULL, *res = NULL;

    fuzz_check(url_scheme_len(url) <= strlen(url));
    (void)url_is_loopback(url);
    (void)url_has_userinfo(url);
    if (url_canonical(url, &c, &e) < 0) {
        fuzz_check(e.msg[0] != 0);
        return;
    }
    fuzz_check(url_canonical(c, &again, &e) == 0);
    fuzz_check(strcmp(c, again) == 0);
    fuzz_check(url_same_origin(url, c));
    fuzz_check(url_is_loopback(url) == url_is_loopback(c));
    fuzz_check(url_origin(c, &origin) == 0 && url_same_origin(origin, c));
    fuzz_check(url_path(c, &path) == 0 && path[0] == '/');
    struct err e2 = ERR_INIT;
    (void)url_check_secure(c, "endpoint", &e2);
    struct err e3 = ERR_INIT;
    if (url_resolve(c, ref, &res, &e3) == 0) {
        char *rc = NULL;
        fuzz_check(url_canonical(res, &rc, &e3) == 0);
        free(rc);
    } else {
        fuzz_check(e3.msg[0] != 0);
    }
    free(res);
    free(path);
    free(origin);
    free(again);
    free(c);
}

static void form(const char *s, const char *whole)
{
    char *enc = url_encode(s), *q, *back = NULL;
    fuzz_check(enc != NULL);
    size_t n = strlen(enc) + 3;
    q = malloc(n);
    fuzz_check(q != NULL);
    snprintf(q, n, "k=%s", enc);
    int r = url_query_get(q, "k", &back);
    if (s[0]) {
        fuzz_check(r == 0 && strcmp(back, s) == 0);
    } else {
        fuzz_check(r == 0 || r == -ENOENT);
    }
    secure_free(back);
    back = NULL;
    r = url_query_get(whole, "code", &back);
    fuzz_check(r == 0 || r == -ENOENT || r == -EBADMSG);
    fuzz_check(r != 0 || back != NULL);
    secure_free(back);
    free(q);
    free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *url, *ref, *whole = fuzz_strndup(data, size);
    fuzz_split(data, size, '\n', &url, &ref);
    canonical(url, ref);
    form(url, whole);
    free(ref);
    free(url);
    free(whole);
    return 0;
}
