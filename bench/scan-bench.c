/* scan-bench.c - the pass-through scan (bridge/core/jsonscan.c) alone, on messages of the shapes
 * real tool results have: a long base64 string (an image), a long text with escapes and UTF-8
 * (a file read), the same in a script outside ASCII, an array of many small objects (a query's
 * rows), compact and pretty-printed.
 *
 *   scan-bench [--shape base64|text|script|rows|pretty|all] [--size BYTES] [--reps N]
 *
 * Each message is built once, about BYTES long, and scanned N times; a scan that does not settle
 * it is an error (exit 1). Prints one line per shape: its size, the best of five timed batches
 * in ns per KiB, and the scan's checksum. Wall time is noisy on a shared machine: bench/scan runs
 * this under callgrind, whose instruction count per KiB load does not change. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/jsonscan.h"

struct text {
    char *s;
    size_t len, cap;
};

static void put(struct text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        if (!t->s) {
            perror("realloc");
            exit(1);
        }
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = 0;
}

static void puts_(struct text *t, const char *s)
{
    put(t, s, strlen(s));
}

/* A fixed sequence, the same on every run. */
static uint32_t next(uint32_t *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    return *seed >> 8;
}

static void base64(struct text *t, size_t size)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint32_t seed = 1;
    puts_(t,
          "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"image\",\"data\":\"");
    while (t->len < size) {
        char c = b64[next(&seed) % 64];
        put(t, &c, 1);
    }
    puts_(t, "\",\"mimeType\":\"image/png\"}]}}");
}

/* Prose and code in lines, as a file read gives them: a line break and a tab are escapes, a
 * quote now and then, a few accented letters, signs and emoji in UTF-8. */
static void text(struct text *t, size_t size)
{
    static const char *words[] = {
        "the",
        "bridge",
        "passes",
        "a",
        "result",
        "on",
        "caf\xc3\xa9",
        "na\xc3\xafve",
        "\xe2\x82\xac"
        "12",
        "\\\"quoted\\\"",
        "if",
        "(r < 0)",
        "goto",
        "out;",
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
        "\xf0\x9f\x98\x80",
        "return",
        "buffer",
        "x = 1;",
        "\xe2\x80\x94",
        "read",
        "write",
        "message",
        "\\\\path",
    };
    uint32_t seed = 2;
    puts_(t,
          "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"");
    while (t->len < size) {
        size_t line = 0;
        if (next(&seed) % 3 == 0)
            puts_(t, "\\t");
        while (line < 70) {
            const char *w = words[next(&seed) % (sizeof(words) / sizeof(words[0]))];
            puts_(t, w);
            puts_(t, " ");
            line += strlen(w) + 1;
        }
        puts_(t, "\\n");
    }
    puts_(t, "\"}]}}");
}

/* Text in a script outside ASCII (Cyrillic, Japanese): mostly sequences of 2 and 3 bytes, a
 * space or an escaped line break now and then. */
static void script(struct text *t, size_t size)
{
    static const char *words[] = {
        "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82",
        "\xd0\xbc\xd0\xb8\xd1\x80",
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae",
        "\xe3\x83\x95\xe3\x82\xa1\xe3\x82\xa4\xe3\x83\xab",
        "\xe8\xaa\xad\xe3\x81\xbf\xe8\xbe\xbc\xe3\x81\xbf",
    };
    uint32_t seed = 4;
    puts_(t,
          "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"");
    while (t->len < size) {
        puts_(t, words[next(&seed) % (sizeof(words) / sizeof(words[0]))]);
        puts_(t, next(&seed) % 8 ? " " : "\\n");
    }
    puts_(t, "\"}]}}");
}

/* Rows of a query: small objects of short strings, integers, decimals, literals. pretty: with
 * the line breaks and indentation of a pretty-printer (structure and whitespace, not strings). */
static void rows(struct text *t, size_t size, bool pretty)
{
    const char *nl = pretty ? "\n      " : "", *sp = pretty ? " " : "";
    char row[512];
    uint32_t seed = 3;
    puts_(t, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"structuredContent\":{\"rows\":[");
    for (unsigned i = 0; t->len < size; i++) {
        unsigned v = next(&seed);
        int n = snprintf(row, sizeof(row),
                         "%s%s{%s\"id\":%s%u,%s\"name\":%s\"user %u\",%s\"email\":%s"
                         "\"user%u@example.com\",%s\"score\":%s%u.%02u,%s\"active\":%s%s,%s"
                         "\"tags\":%s[\"a\",%s\"bc\"],%s\"created\":%s\"2026-01-02T03:04:05Z\"%s}",
                         i ? "," : "", nl, nl, sp, i, nl, sp, v % 1000, nl, sp, v % 997, nl, sp,
                         v % 100, v % 97, nl, sp, v % 2 ? "true" : "false", nl, sp, sp, nl, sp, nl);
        put(t, row, (size_t)n);
    }
    puts_(t, "]}}}");
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int run(const char *shape, size_t size, unsigned reps)
{
    struct text t = {0};
    if (strcmp(shape, "base64") == 0)
        base64(&t, size);
    else if (strcmp(shape, "text") == 0)
        text(&t, size);
    else if (strcmp(shape, "script") == 0)
        script(&t, size);
    else if (strcmp(shape, "rows") == 0)
        rows(&t, size, false);
    else if (strcmp(shape, "pretty") == 0)
        rows(&t, size, true);
    else {
        fprintf(stderr, "scan-bench: unknown shape '%s'\n", shape);
        return 2;
    }
    /* exactly its size, so that a read past the end is one (under ASan) */
    char *msg = malloc(t.len);
    if (!msg)
        return 1;
    memcpy(msg, t.s, t.len);
    free(t.s);

    double best = 0;
    size_t sum = 0;
    for (int batch = 0; batch < 5; batch++) {
        double start = now_ns();
        for (unsigned i = 0; i < (reps + 4) / 5; i++) {
            struct jscan j;
            if (jscan_message(msg, t.len, &j) != 0) {
                fprintf(stderr, "scan-bench: the %s message is not settled\n", shape);
                free(msg);
                return 1;
            }
            sum += j.result.len;
        }
        double ns = (now_ns() - start) / ((reps + 4) / 5);
        if (batch == 0 || ns < best)
            best = ns;
    }
    printf("%-7s %9zu bytes %8.1f ns/KiB  %zu\n", shape, t.len, best / ((double)t.len / 1024), sum);
    free(msg);
    return 0;
}

int main(int argc, char **argv)
{
    const char *shape = "all";
    size_t size = 64 * 1024;
    unsigned long reps = 1000;
    for (int i = 1; i + 1 < argc; i += 2) {
        char *end;
        if (strcmp(argv[i], "--shape") == 0)
            shape = argv[i + 1];
        else if (strcmp(argv[i], "--size") == 0)
            size = strtoul(argv[i + 1], &end, 10);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = strtoul(argv[i + 1], &end, 10);
        else {
            fprintf(stderr, "usage: scan-bench [--shape S|all] [--size BYTES] [--reps N]\n");
            return 2;
        }
    }
    if (reps == 0 || reps > 1000000 || size == 0 || size > (1u << 30)) {
        fprintf(stderr, "scan-bench: --reps 1 to 1000000, --size 1 to 1 GiB\n");
        return 2;
    }
    if (strcmp(shape, "all") != 0)
        return run(shape, size, (unsigned)reps);
    static const char *all[] = {"base64", "text", "script", "rows", "pretty"};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        int r = run(all[i], size, (unsigned)reps);
        if (r)
            return r;
    }
    return 0;
}
