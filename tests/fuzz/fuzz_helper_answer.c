/* fuzz_helper_answer.c - libFuzzer target: the helper answers' readers on any input.
 *
 * Built with -DENABLE_FUZZING=ON and run by ctest (tests/fuzz/CMakeLists.txt); by hand:
 *   build-fuzz/tests/fuzz/fuzz_helper_answer -max_total_time=600 tests/fuzz/corpus/fuzz_helper_answer
 *
 * Each input is read as a secrets answer and as a headers answer. Whatever the reader accepts,
 * the writer must write, the reader must read back to the same values, and writing that again
 * must give the same bytes; whatever it refuses must come with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/helper_answer.h"

static void check(int cond)
{
    if (!cond)
        abort();
}

static void same_secrets(const struct helper_secrets *a, const struct helper_secrets *b)
{
    check(a->n == b->n);
    for (size_t i = 0; i < a->n; i++) {
        const struct helper_secret *x = &a->v[i], *y = &b->v[i];
        check(strcmp(x->name, y->name) == 0 && x->expires_at == y->expires_at);
        check(!x->value == !y->value && !x->error == !y->error && !x->source == !y->source);
        check(!x->value ||
              (x->value_len == y->value_len && memcmp(x->value, y->value, x->value_len) == 0));
        check(!x->error || strcmp(x->error, y->error) == 0);
        check(!x->source || strcmp(x->source, y->source) == 0);
    }
}

static void secrets(const char *text, size_t len)
{
    struct helper_secrets a = {0}, b = {0};
    struct err e = ERR_INIT;
    struct buf out, again;
    if (helper_secrets_parse(text, len, &a, &e) < 0) {
        check(e.msg[0] != 0);
        return;
    }
    buf_init_secret(&out, 0);
    buf_init_secret(&again, 0);
    check(helper_secrets_write(&a, &out) == 0);
    if (helper_secrets_parse(out.data, out.len, &b, &e) == 0) {
        same_secrets(&a, &b);
        check(helper_secrets_write(&b, &again) == 0);
        check(again.len == out.len && memcmp(again.data, out.data, out.len) == 0);
        helper_secrets_release(&b);
    } else {
        check(out.len > HELPER_ANSWER_MAX); /* only the size bound may refuse what was written */
    }
    buf_release(&again);
    buf_release(&out);
    helper_secrets_release(&a);
}

static void headers(const char *text, size_t len)
{
    struct helper_headers a = {0}, b = {0};
    struct err e = ERR_INIT;
    struct buf out, again;
    if (helper_headers_parse(text, len, &a, &e) < 0) {
        check(e.msg[0] != 0);
        return;
    }
    buf_init_secret(&out, 0);
    buf_init_secret(&again, 0);
    check(helper_headers_write(&a, &out) == 0);
    if (helper_headers_parse(out.data, out.len, &b, &e) == 0) {
        check(a.n == b.n && a.expires_at == b.expires_at && !a.dpop == !b.dpop);
        for (size_t i = 0; i < a.n; i++)
            check(strcmp(a.v[i].name, b.v[i].name) == 0 && a.v[i].value_len == b.v[i].value_len &&
                  memcmp(a.v[i].value, b.v[i].value, a.v[i].value_len) == 0);
        check(helper_headers_write(&b, &again) == 0);
        check(again.len == out.len && memcmp(again.data, out.data, out.len) == 0);
        helper_headers_release(&b);
    } else {
        check(out.len > HELPER_ANSWER_MAX);
    }
    buf_release(&again);
    buf_release(&out);
    helper_headers_release(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    secrets((const char *)data, size);
    headers((const char *)data, size);
    return 0;
}
