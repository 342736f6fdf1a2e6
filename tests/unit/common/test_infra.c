/* test_infra.c - the one copy of each container: strv, list, hashmap */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "credkit/hashmap.h"
#include "credkit/list.h"
#include "credkit/strv.h"
#include "credkit/util.h"

#include "tests.h"

static void test_strv_push_detach(void)
{
    struct strv sv = STRV_INIT;
    CHECK(!strv_contains(&sv, "a"));
    CHECK_INT(strv_push(&sv, "a"), 0);
    CHECK_INT(strv_pushf(&sv, "%s=%d", "b", 2), 0);
    CHECK_INT(strv_push_take(&sv, strdup("c")), 0);
    CHECK_INT(strv_push_take(&sv, NULL), -ENOMEM);
    CHECK_INT(sv.n, 3);
    CHECK(sv.v[3] == NULL);
    CHECK(strv_contains(&sv, "b=2"));
    CHECK(!strv_contains(&sv, "b"));
    for (int i = 0; i < 100; i++)
        CHECK_INT(strv_pushf(&sv, "%d", i), 0);
    CHECK_STR(sv.v[102], "99");
    char **v = strv_detach(&sv);
    CHECK(sv.v == NULL && sv.n == 0);
    CHECK_INT(strv_length(v), 103);
    CHECK_STR(v[0], "a");
    strv_free(v);

    v = strv_detach(&sv); /* empty: still a vector */
    CHECK(v && v[0] == NULL);
    CHECK_INT(strv_length(v), 0);
    strv_free(v);
    CHECK_INT(strv_length(NULL), 0);
    strv_free(NULL);
}

static void test_strv_release_secure(void)
{
    struct strv sv = STRV_INIT;
    CHECK_INT(strv_push(&sv, "Authorization: Bearer x"), 0);
    strv_release_secure(&sv);
    CHECK(sv.v == NULL && sv.n == 0 && sv.alloc == 0);
    CHECK_INT(strv_push(&sv, "again"), 0); /* reusable */
    strv_release(&sv);
}

struct item {
    int v;
    struct list_node node;
};

static void test_list(void)
{
    struct list_node head = LIST_INIT(head);
    struct item it[5];
    CHECK(list_is_empty(&head));
    CHECK(list_first(&head) == NULL);
    for (int i = 0; i < 5; i++) {
        it[i].v = i;
        list_init(&it[i].node);
        CHECK(!list_is_linked(&it[i].node));
        list_add_tail(&head, &it[i].node);
        CHECK(list_is_linked(&it[i].node));
    }
    list_remove(&it[2].node);
    list_remove(&it[2].node); /* twice is harmless */
    CHECK(!list_is_linked(&it[2].node));
    list_add_head(&head, &it[2].node);

    int order[5], n = 0;
    struct list_node *i, *tmp;
    list_for_each (i, &head)
        order[n++] = list_entry(i, struct item, node)->v;
    CHECK_INT(n, 5);
    CHECK(order[0] == 2 && order[1] == 0 && order[2] == 1 && order[3] == 3 && order[4] == 4);

    n = 0;
    list_for_each_safe (i, tmp, &head) {
        struct item *x = list_entry(i, struct item, node);
        if (x->v % 2 == 0)
            list_remove(&x->node);
        n++;
    }
    CHECK_INT(n, 5);
    CHECK(list_entry(list_first(&head), struct item, node)->v == 1);
    list_remove(&it[1].node);
    list_remove(&it[3].node);
    CHECK(list_is_empty(&head));
}

static void test_hashmap_basic(void)
{
    struct hashmap *m = hashmap_new();
    CHECK(m != NULL);
    int a = 1, b = 2;
    CHECK(hashmap_get(m, "a") == NULL);
    CHECK(hashmap_remove(m, "a") == NULL);
    CHECK_INT(hashmap_put(m, "a", &a), 0);
    CHECK_INT(hashmap_put(m, "a", &b), -EEXIST);
    CHECK_INT(hashmap_put(m, "b", NULL), -EINVAL);
    CHECK_INT(hashmap_put(m, "", &b), 0);
    CHECK(hashmap_get(m, "a") == &a);
    CHECK(hashmap_get(m, "") == &b);
    CHECK_INT(hashmap_size(m), 2);
    CHECK(hashmap_remove(m, "a") == &a);
    CHECK(hashmap_get(m, "a") == NULL);
    CHECK_INT(hashmap_size(m), 1);
    hashmap_free(m);
    hashmap_free(NULL);
}

/* Many keys, removed in an order that exercises backward shifting across the wrap; every key
 * stays reachable, and iteration sees each live one once. */
static void test_hashmap_many(void)
{
    enum { N = 5000 };
    static int vals[N];
    struct hashmap *m = hashmap_new();
    char key[32];
    for (int i = 0; i < N; i++) {
        vals[i] = i;
        snprintf(key, sizeof(key), "k%d", i);
        CHECK_INT(hashmap_put(m, key, &vals[i]), 0);
    }
    CHECK_INT(hashmap_size(m), N);
    int bad = 0;
    for (int i = 0; i < N; i += 3) {
        snprintf(key, sizeof(key), "k%d", i);
        if (hashmap_remove(m, key) != &vals[i])
            bad++;
    }
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        void *v = hashmap_get(m, key);
        if (i % 3 == 0 ? v != NULL : v != &vals[i])
            bad++;
    }
    CHECK_INT(bad, 0);

    static unsigned char seen[N];
    size_t iter = 0, count = 0;
    const char *k;
    void *v;
    while (hashmap_next(m, &iter, &k, &v)) {
        int idx = *(int *)v;
        char want[32];
        snprintf(want, sizeof(want), "k%d", idx);
        if (strcmp(want, k) != 0 || seen[idx]++)
            bad++;
        count++;
    }
    CHECK_INT(bad, 0);
    CHECK_INT(count, N - (N + 2) / 3);
    hashmap_free(m);
}

/* Borrowed keys are the caller's: found by their text, handed back as the very pointer, never
 * freed by the map (ASan would see a free of the records' array), mixed with copied ones
 * through growth and backward shifts. */
static void test_hashmap_borrowed(void)
{
    enum { N = 300 };
    static struct {
        char key[16];
        int v;
    } rec[N];
    struct hashmap *m = hashmap_new();
    CHECK(m != NULL);
    char key[16];
    for (int i = 0; i < N; i++) {
        rec[i].v = i;
        snprintf(rec[i].key, sizeof(rec[i].key), "r%d", i);
        /* every other one copied: the two kinds share the table */
        CHECK_INT(i % 2 ? hashmap_put(m, rec[i].key, &rec[i].v)
                        : hashmap_put_borrowed(m, rec[i].key, &rec[i].v),
                  0);
    }
    snprintf(key, sizeof(key), "r%d", 10);
    CHECK_INT(hashmap_put_borrowed(m, key, &rec[0].v), -EEXIST);
    CHECK_INT(hashmap_put_borrowed(m, "x", NULL), -EINVAL);
    int bad = 0;
    for (int i = 0; i < N; i += 4) {
        snprintf(key, sizeof(key), "r%d", i);
        if (hashmap_remove(m, key) != &rec[i].v)
            bad++;
    }
    size_t iter = 0, count = 0;
    const char *k;
    void *v;
    while (hashmap_next(m, &iter, &k, &v)) {
        int i = *(int *)v;
        if (i % 4 == 0 || strcmp(k, rec[i].key) != 0 || (i % 2 == 0) != (k == rec[i].key))
            bad++;
        count++;
    }
    CHECK_INT(bad, 0);
    CHECK_INT(count, N - N / 4);
    hashmap_free(m);
}

/* fmt_u64/fmt_i64 write what printf writes, and refuse a buffer too small */
static void test_fmt_int(void)
{
    static const int64_t vals[] = {0, 1, 9, 10, 42, -1, -10, 1234567890123LL, INT64_MAX, INT64_MIN};
    char a[32], b[32];
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        (void)snprintf(b, sizeof(b), "%" PRId64, vals[i]);
        CHECK_INT(fmt_i64(a, sizeof(a), vals[i]), strlen(b));
        CHECK_STR(a, b);
    }
    CHECK_INT(fmt_u64(a, sizeof(a), UINT64_MAX), 20);
    CHECK_STR(a, "18446744073709551615");
    CHECK_INT(fmt_u64(a, 3, 123), 0); /* "123" and its NUL need 4 */
    CHECK_INT(fmt_u64(a, 4, 123), 3);
    CHECK_INT(fmt_i64(a, 4, -123), 0);
    CHECK_INT(fmt_i64(a, 1, -1), 0);
}

TESTS_MAIN(test_strv_push_detach, test_strv_release_secure, test_list, test_hashmap_basic,
           test_hashmap_many, test_hashmap_borrowed, test_fmt_int)
