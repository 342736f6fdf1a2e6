/* fuzz_sse.c - libFuzzer target: chunking must not change what the SSE parser sees.
 *
 * Built with -DENABLE_FUZZING=ON and run by ctest (tests/fuzz/CMakeLists.txt); by hand:
 *   build-fuzz/tests/fuzz/fuzz_sse -max_total_time=600 tests/fuzz/corpus/fuzz_sse
 *
 * Input: byte 0 picks the bounds, bytes 1-3 pick three cut positions, the rest is the stream.
 * The stream is parsed one-shot, cut at those positions, and one byte per chunk; each run feeds
 * it twice with sse_end in between (a reconnection), and all three must agree on a hash of every
 * event (type, data, id), the event count, each sse_feed result, the last id and the retry. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sse.h"

struct fz {
    uint64_t h;
    size_t n;
    size_t max_event;
};

static void fz_mix(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ s[i]) * 0x100000001b3ULL; /* FNV-1a */
}

static int fz_fn(const struct sse_event *ev, void *userdata)
{
    struct fz *f = userdata;
    if (ev->data[ev->data_len] != 0 || ev->data_len > f->max_event || ev->type_len == 0 ||
        ev->type[ev->type_len] != 0)
        abort();
    fz_mix(&f->h, &ev->type_len, sizeof(ev->type_len));
    fz_mix(&f->h, ev->type, ev->type_len);
    fz_mix(&f->h, &ev->data_len, sizeof(ev->data_len));
    fz_mix(&f->h, ev->data, ev->data_len);
    fz_mix(&f->h, ev->id, strlen(ev->id) + 1);
    f->n++;
    return 0;
}

static const size_t fz_bounds[8][2] = {
    {0, 0}, {1, 1}, {2, 4}, {3, 3}, {8, 8}, {16, 64}, {64, 16}, {4096, 4096},
};

/* mode 0: one chunk; 1: cut at cuts[]; 2: one byte per chunk */
static void fz_run(const char *s, size_t len, const size_t *cuts, int mode, size_t max_line,
                   size_t max_event, struct fz *f)
{
    struct sse_parser p;
    int64_t retry;

    *f = (struct fz){.h = 0xcbf29ce484222325ULL,
                     .max_event = max_event ? max_event : BUF_MAX_DEFAULT};
    sse_parser_init(&p, max_line, max_event, fz_fn, f);
    for (int pass = 0; pass < 2; pass++) {
        int r = 0;
        if (mode == 0) {
            r = sse_feed(&p, s, len);
        } else if (mode == 1) {
            size_t at = 0;
            for (int i = 0; i <= 3 && r >= 0; i++) {
                size_t to = i < 3 ? cuts[i] : len;
                r = sse_feed(&p, s + at, to - at);
                at = to;
            }
        } else {
            for (size_t i = 0; i < len && r >= 0; i++)
                r = sse_feed(&p, s + i, 1);
        }
        fz_mix(&f->h, &r, sizeof(r));
        fz_mix(&f->h, sse_last_id(&p), strlen(sse_last_id(&p)) + 1);
        retry = sse_retry_ms(&p);
        fz_mix(&f->h, &retry, sizeof(retry));
        sse_end(&p);
    }
    sse_parser_release(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz one, cut, bytes;
    size_t cuts[3], len, max_line, max_event;
    const char *s;

    if (size < 4)
        return 0;
    max_line = fz_bounds[data[0] & 7][0];
    max_event = fz_bounds[data[0] & 7][1];
    s = (const char *)data + 4;
    len = size - 4;
    for (int i = 0; i < 3; i++)
        cuts[i] = len ? data[1 + i] % (len + 1) : 0;
    /* sorted, so the chunks are in order (equal cuts give empty chunks) */
    for (int i = 1; i < 3; i++)
        for (int j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
            size_t t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }

    fz_run(s, len, cuts, 0, max_line, max_event, &one);
    fz_run(s, len, cuts, 1, max_line, max_event, &cut);
    fz_run(s, len, cuts, 2, max_line, max_event, &bytes);
    if (one.h != cut.h || one.n != cut.n || one.h != bytes.h || one.n != bytes.n) {
        fprintf(stderr, "chunking changed the result: %zu/%zu/%zu events\n", one.n, cut.n, bytes.n);
        abort();
    }
    return 0;
}
