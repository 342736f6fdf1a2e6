/* test_wipe.c - the secret-wipe paths of common/ wipe: each test fails when its wipe is removed
 *
 * wipewatch.h puts this program's free() in front of the allocator's, so a test sees a block's
 * bytes at the moment it is freed. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "credkit/buf.h"
#include "credkit/helper_answer.h"
#include "credkit/json.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"

#include "tests.h"
#include "wipewatch.h"

#define CANARY "wipe-CANARY-4f1d9c2b7e"

/* The watch itself: a plain free() of a secret is seen as not wiped, so the tests below can
 * fail. */
static void test_watch_sees_unwiped(void)
{
    wipewatch_reset();
    char *s = strdup(CANARY);
    CHECK(s != NULL);
    size_t w = wipewatch_add(s, sizeof(CANARY));
    CHECK(!wipewatch_freed(w));
    wipewatch_plain_free(s);
    CHECK(wipewatch_freed(w));
    CHECK(!wipewatch_wiped(w));

    s = strdup(CANARY);
    wipewatch_scan(CANARY);
    wipewatch_plain_free(s);
    wipewatch_scan(NULL);
    CHECK_INT(wipewatch_found(), 1);

    /* a plain buffer is not wiped either */
    struct buf b;
    buf_init(&b, 0);
    CHECK_INT(buf_append_str(&b, CANARY), 0);
    w = wipewatch_add(b.data, b.cap);
    buf_release(&b);
    CHECK(wipewatch_freed(w) && !wipewatch_wiped(w));
}

static void test_secure_free(void)
{
    wipewatch_reset();
    char *s = strdup(CANARY);
    CHECK(s != NULL);
    size_t w = wipewatch_add(s, sizeof(CANARY));
    secure_free(s);
    CHECK(wipewatch_wiped(w));
    secure_free(NULL);
}

static void test_secure_free_len(void)
{
    wipewatch_reset();
    /* binary: NULs inside, so strlen() would stop short */
    unsigned char *p = malloc(64);
    CHECK(p != NULL);
    if (!p)
        return;
    memset(p, 0xa5, 64);
    p[3] = 0;
    size_t w = wipewatch_add(p, 64);
    secure_free_len(p, 64);
    CHECK(wipewatch_wiped(w));
    secure_free_len(NULL, 5);
}

static void test_secure_random_token(void)
{
    wipewatch_reset();
    char *t = NULL;
    CHECK_INT(secure_random_token(32, &t), 0);
    size_t w = wipewatch_add(t, strlen(t) + 1);
    secure_free(t);
    CHECK(wipewatch_wiped(w));
}

static void test_buf_secret_growth_and_release(void)
{
    wipewatch_reset();
    struct buf b;
    buf_init_secret(&b, 1 << 20);
    CHECK_INT(buf_append_str(&b, CANARY), 0);
    /* each growth moves the data: the old block is wiped before it is freed */
    size_t olds[8], n = 0;
    while (n < ELEMENTSOF(olds)) {
        bool grows = b.len + strlen(CANARY) + 1 > b.cap;
        char *before = b.data;
        if (grows)
            olds[n++] = wipewatch_add(before, b.cap);
        CHECK_INT(buf_append_str(&b, CANARY), 0);
        CHECK(grows == (b.data != before));
    }
    for (size_t i = 0; i < n; i++)
        CHECK(wipewatch_wiped(olds[i]));
    size_t last = wipewatch_add(b.data, b.cap);
    buf_release(&b);
    CHECK(wipewatch_wiped(last));
    CHECK(b.data == NULL);
}

static void test_buf_secret_in_place(void)
{
    /* reset and trim keep the storage: what they drop is zero at once */
    struct buf b;
    buf_init_secret(&b, 0);
    CHECK_INT(buf_append_str(&b, "  " CANARY "  "), 0);
    size_t was = b.len;
    buf_trim(&b);
    CHECK_STR(buf_str(&b), CANARY);
    CHECK(wipewatch_all_zero(b.data + b.len, was - b.len));
    /* the front alone: the value moves down over the blanks, its old tail is zero */
    buf_reset(&b);
    CHECK_INT(buf_append_str(&b, "     " CANARY), 0);
    buf_trim(&b);
    CHECK_STR(buf_str(&b), CANARY);
    CHECK(wipewatch_all_zero(b.data + b.len, 5));
    buf_reset(&b);
    CHECK(wipewatch_all_zero(b.data, sizeof(CANARY)));
    buf_release(&b);
}

static void test_buf_detach_then_secure_free(void)
{
    wipewatch_reset();
    struct buf b;
    buf_init_secret(&b, 0);
    CHECK_INT(buf_append_str(&b, CANARY), 0);
    char *s = buf_detach(&b);
    size_t w = wipewatch_add(s, sizeof(CANARY));
    secure_free(s);
    CHECK(wipewatch_wiped(w));
}

static void test_strv_release_secure(void)
{
    wipewatch_reset();
    struct strv sv = STRV_INIT;
    size_t w[12];
    for (size_t i = 0; i < ELEMENTSOF(w); i++) { /* past the first growth of the vector */
        CHECK_INT(strv_pushf(&sv, "Authorization: Bearer %s-%zu", CANARY, i), 0);
        w[i] = wipewatch_add(sv.v[i], strlen(sv.v[i]) + 1);
    }
    strv_release_secure(&sv);
    for (size_t i = 0; i < ELEMENTSOF(w); i++)
        CHECK(wipewatch_wiped(w[i]));
    CHECK(sv.v == NULL && sv.n == 0);
}

static void test_strv_free_secure(void)
{
    wipewatch_reset();
    struct strv sv = STRV_INIT;
    CHECK_INT(strv_push(&sv, "TOKEN=" CANARY), 0);
    CHECK_INT(strv_push_take(&sv, strdup("KEY=" CANARY)), 0);
    char **v = strv_detach(&sv);
    CHECK(v != NULL);
    if (!v)
        return;
    size_t a = wipewatch_add(v[0], strlen(v[0]) + 1), b = wipewatch_add(v[1], strlen(v[1]) + 1);
    strv_free_secure(v);
    CHECK(wipewatch_wiped(a));
    CHECK(wipewatch_wiped(b));
}

/* json_write_file() leaves no copy of the text behind: neither its own nor json-c's print
 * buffer (which lives in obj until it is put). */
static void test_json_write_file(void)
{
    wipewatch_reset();
    char *path = path_join(tests_tmpdir(), "wipe.json");
    struct err e = ERR_INIT;
    struct json_object *obj = json_object_new_object();
    struct json_object *tok = json_object_new_string(CANARY);
    CHECK(path && obj && tok);
    if (!path || !obj || !tok)
        return;
    CHECK_INT(json_object_object_add(obj, "access_token", tok), 0);

    wipewatch_scan(CANARY);
    CHECK_INT(json_write_file(path, obj, 0600, &e), 0);
    CHECK_INT(wipewatch_found(), 0);
    /* json-c's own string is the caller's to wipe; after that, putting obj frees no copy */
    secure_wipe((char *)json_object_get_string(tok), (size_t)json_object_get_string_len(tok));
    json_object_put(obj);
    wipewatch_scan(NULL);
    CHECK_INT(wipewatch_found(), 0);
    free(path);
}

/* json_read_file(JSON_READ_SECRET) wipes the file's text and json-c's scratch copy of the
 * strings; the strings in the tree are the caller's to wipe. */
static void test_json_read_file_secret(void)
{
    wipewatch_reset();
    char *path = path_join(tests_tmpdir(), "wipe-read.json");
    struct err e = ERR_INIT;
    struct json_object *obj = NULL;
    CHECK(path != NULL);
    if (!path)
        return;
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    /* the secret first, then shorter strings: the tokener's scratch buffer keeps its tail */
    fputs("{\"access_token\": \"" CANARY CANARY "\", \"a\": \"b\"}\n", f);
    fclose(f);
    CHECK_INT(chmod(path, 0600), 0);

    wipewatch_scan(CANARY);
    CHECK_INT(json_read_file(path, 1 << 16, JSON_READ_SECRET, &obj, &e), 0);
    CHECK_INT(wipewatch_found(), 0);
    struct json_object *tok = NULL;
    CHECK(json_object_object_get_ex(obj, "access_token", &tok));
    if (tok)
        secure_wipe((char *)json_object_get_string(tok), (size_t)json_object_get_string_len(tok));
    json_object_put(obj);
    wipewatch_scan(NULL);
    CHECK_INT(wipewatch_found(), 0);
    free(path);
}

static void test_helper_headers_release(void)
{
    wipewatch_reset();
    struct helper_headers h = {0};
    CHECK_INT(helper_headers_add(&h, "Authorization", "Bearer " CANARY, 7 + strlen(CANARY), NULL),
              0);
    CHECK_INT(helper_headers_add(&h, "X-Api-Key", CANARY, strlen(CANARY), NULL), 0);
    size_t a = wipewatch_add(h.v[0].value, h.v[0].value_len + 1);
    size_t b = wipewatch_add(h.v[1].value, h.v[1].value_len + 1);
    helper_headers_release(&h);
    CHECK(wipewatch_wiped(a));
    CHECK(wipewatch_wiped(b));
}

static void test_helper_secrets_release(void)
{
    wipewatch_reset();
    struct helper_secrets s = {0};
    CHECK_INT(helper_secrets_add_value(&s, "TOKEN", CANARY, strlen(CANARY), "command", 5), 0);
    size_t a = wipewatch_add(s.v[0].value, s.v[0].value_len + 1);
    helper_secrets_release(&s);
    CHECK(wipewatch_wiped(a));
}

/* json_wipe_strings(): every string value of a tree, nested in objects and arrays, is wiped
 * before json-c frees it (the first put shows the watch sees the copies otherwise). */
static void test_json_wipe_strings(void)
{
    static const char text[] = "{\"a\":\"" CANARY "\",\"b\":[1,{\"c\":[\"" CANARY
                               "\"]},null],\"d\":{\"e\":\"" CANARY "\",\"f\":true}}";
    struct json_object *o = NULL;
    struct err e = ERR_INIT;
    wipewatch_reset();
    CHECK_INT(json_parse(text, strlen(text), sizeof(text), &o, &e), 0);
    wipewatch_scan(CANARY);
    json_object_put(o);
    wipewatch_scan(NULL);
    CHECK_INT(wipewatch_found(), 3);

    o = NULL;
    CHECK_INT(json_parse(text, strlen(text), sizeof(text), &o, &e), 0);
    wipewatch_scan(CANARY);
    json_wipe_strings(o);
    json_object_put(o);
    wipewatch_scan(NULL);
    CHECK_INT(wipewatch_found(), 0);
    json_wipe_strings(NULL);
}

/* Writing and reading an answer, and every scratch buffer the reader uses (failed parses
 * included), free no copy of a value unwiped. */
static void test_helper_answer_no_copy_left(void)
{
    static const char *const bad[] = {
        "{\"headers\":{\"Authorization\":\"Bearer " CANARY "\\n\"}}",
        "{\"headers\":{\"A\":\"" CANARY "\",\"B\":1}}",
        "{\"headers\":{\"A\":\"" CANARY "\"},\"version\":3}",
        "{\"headers\":{\"A\":\"" CANARY "\"},\"x\":[\"" CANARY "\"],\"y\":",
        "{\"headers\":{\"A\":\"" CANARY CANARY CANARY CANARY CANARY CANARY "\",\"a\":\"\"}}",
        "{\"headers\":{\"A\":\"" CANARY "\"}} x",
    };
    static const char *const bad_secrets[] = {
        "{\"secrets\":{\"A\":{\"value\":\"" CANARY CANARY CANARY CANARY "\",\"error\":\"e\"}}}",
        "{\"secrets\":{\"A\":{\"value\":\"" CANARY "\"},\"B\":{}}}",
        "{\"secrets\":{\"A\":{\"value\":\"" CANARY "\"}},\"version\":9}",
        /* refused as soon as the second key is read: the first is in the tree built so far */
        "{\"secrets\":{\"A\":{\"value\":\"" CANARY "\"},\"A\":{\"value\":\"y\"}}}",
    };
    /* accepted, but json-c keeps only the last of a repeated member and frees the first */
    static const char *const repeated[] = {
        "{\"headers\":{},\"x\":\"" CANARY "\",\"x\":1}",
        "{\"headers\":{\"A\":\"b\"},\"x\":{\"y\":[\"" CANARY "\"]},\"x\":null}",
    };
    static const char long_value[] = CANARY CANARY CANARY CANARY CANARY CANARY CANARY CANARY;
    struct helper_headers h = {0}, g = {0};
    struct helper_secrets s = {0}, t = {0};
    struct buf out;
    struct err e = ERR_INIT;
    wipewatch_reset();
    wipewatch_scan(CANARY);

    buf_init_secret(&out, 0);
    CHECK_INT(helper_headers_add(&h, "Authorization", "Bearer " CANARY, 7 + strlen(CANARY), NULL),
              0);
    /* a long value too: the reader's buffers grow while they decode it */
    CHECK_INT(helper_headers_add(&h, "X-Long", long_value, strlen(long_value), NULL), 0);
    h.expires_at = 100;
    CHECK_INT(helper_headers_write(&h, &out), 0);
    CHECK_INT(helper_headers_parse(out.data, out.len, &g, &e), 0);
    CHECK_STR(helper_headers_get(&g, "Authorization"), "Bearer " CANARY);
    helper_headers_release(&g);
    helper_headers_release(&h);
    buf_release(&out);

    buf_init_secret(&out, 0);
    CHECK_INT(helper_secrets_add_value(&s, "TOKEN", CANARY, strlen(CANARY), "command", 5), 0);
    CHECK_INT(helper_secrets_add_value(&s, "LONG", long_value, strlen(long_value), "file", 0), 0);
    CHECK_INT(helper_secrets_write(&s, &out), 0);
    CHECK_INT(helper_secrets_parse(out.data, out.len, &t, &e), 0);
    CHECK_STR(t.n == 2 ? t.v[1].value : NULL, long_value);
    helper_secrets_release(&t);
    helper_secrets_release(&s);
    buf_release(&out);

    for (size_t i = 0; i < ELEMENTSOF(bad); i++)
        CHECK(helper_headers_parse(bad[i], strlen(bad[i]), &g, &e) < 0);
    for (size_t i = 0; i < ELEMENTSOF(bad_secrets); i++)
        CHECK(helper_secrets_parse(bad_secrets[i], strlen(bad_secrets[i]), &t, &e) < 0);
    for (size_t i = 0; i < ELEMENTSOF(repeated); i++) {
        CHECK_INT(helper_headers_parse(repeated[i], strlen(repeated[i]), &g, &e), 0);
        helper_headers_release(&g);
    }
    wipewatch_scan(NULL);
    CHECK_INT(wipewatch_found(), 0);
}

TESTS_MAIN(test_watch_sees_unwiped, test_secure_free, test_secure_free_len,
           test_secure_random_token, test_buf_secret_growth_and_release, test_buf_secret_in_place,
           test_buf_detach_then_secure_free, test_strv_release_secure, test_strv_free_secure,
           test_json_write_file, test_json_read_file_secret, test_json_wipe_strings,
           test_helper_headers_release, test_helper_secrets_release,
           test_helper_answer_no_copy_left)
