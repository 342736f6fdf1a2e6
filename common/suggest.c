/* suggest.c - "did you mean", git's way (help.c and levenshtein.c) */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/suggest.h"

/* git's weights (help.c's help_unknown_cmd: levenshtein(cmd, candidate, 0, 2, 1, 3)) */
enum { W_SWAP = 0u, W_SUBST = 2u, W_ADD = 1u, W_DEL = 3u };
#define WORD_MAX 256 /* longer words are cut: the distance of two long words means nothing */

static unsigned min3(unsigned a, unsigned b, unsigned c)
{
    unsigned m = a < b ? a : b;
    return m < c ? m : c;
}

/* git's levenshtein.c: the optimal string alignment distance of a to b, three rows kept. */
static unsigned osa_distance(const char *a, size_t la, const char *b, size_t lb)
{
    unsigned rows[3][WORD_MAX + 1];
    unsigned *row0 = rows[0], *row1 = rows[1], *row2 = rows[2];
    for (size_t j = 0; j <= lb; j++)
        row1[j] = (unsigned)j * W_ADD;
    for (size_t i = 0; i < la; i++) {
        row2[0] = (unsigned)(i + 1) * W_DEL;
        for (size_t j = 0; j < lb; j++) {
            row2[j + 1] = row1[j] + (a[i] != b[j] ? W_SUBST : 0u);
            if (i > 0 && j > 0 && a[i - 1] == b[j] && a[i] == b[j - 1] &&
                row2[j + 1] > row0[j - 1] + W_SWAP)
                row2[j + 1] = row0[j - 1] + W_SWAP;
            row2[j + 1] = min3(row2[j + 1], row1[j + 1] + W_DEL, row2[j] + W_ADD);
        }
        unsigned *t = row0;
        row0 = row1;
        row1 = row2;
        row2 = t;
    }
    return row1[lb];
}

static size_t fold(const char *s, char *out)
{
    size_t n = 0;
    for (; s[n] && n < WORD_MAX; n++)
        out[n] = (char)tolower((unsigned char)s[n]);
    out[n] = '\0';
    return n;
}

unsigned suggest_distance(const char *word, const char *candidate)
{
    char a[WORD_MAX + 1], b[WORD_MAX + 1];
    size_t la = fold(word, a), lb = fold(candidate, b);
    if (la == 0)
        return SUGGEST_FLOOR;
    if (strncmp(b, a, la) == 0)
        return 0; /* git: "give prefix match a very good score" */
    return osa_distance(a, la, b, lb) + 1;
}

static bool contains_either(const char *word, const char *candidate)
{
    char a[WORD_MAX + 1], b[WORD_MAX + 1];
    size_t la = fold(word, a), lb = fold(candidate, b);
    return (la < lb ? la : lb) >= 3 && (strstr(b, a) || strstr(a, b));
}

static bool listed(const char *const *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0)
            return true;
    return false;
}

void suggest_init(struct suggest *s, const char *word)
{
    memset(s, 0, sizeof(*s));
    s->word = word;
    s->best = SUGGEST_FLOOR;
}

void suggest_add_as(struct suggest *s, const char *key, const char *shown)
{
    unsigned distance = suggest_distance(s->word, key);
    s->offered++;
    s->prefix += distance == 0;
    if (distance >= SUGGEST_FLOOR) {
        if (contains_either(s->word, key) && s->n_contained < SUGGEST_MAX &&
            !listed(s->contained, s->n_contained, shown))
            s->contained[s->n_contained++] = shown;
        return;
    }
    if (distance > s->best)
        return;
    if (distance < s->best) {
        s->best = distance;
        s->n = 0;
    }
    /* offered twice (a name in two files, a tool under two spellings): suggested once */
    if (s->n < SUGGEST_MAX && !listed(s->v, s->n, shown))
        s->v[s->n++] = shown;
}

void suggest_add(struct suggest *s, const char *candidate)
{
    suggest_add_as(s, candidate, candidate);
}

size_t suggest_result(const struct suggest *s, const char *const **ret_v)
{
    if (s->n == 0) {
        *ret_v = s->contained;
        return s->n_contained;
    }
    *ret_v = s->v;
    /* git: "prefix matches with everything? that is too ambiguous" */
    if (s->best == 0 && s->prefix == s->offered && s->offered > 1)
        return 0;
    return s->n;
}

int suggest_append(const struct suggest *s, const char *prefix, struct buf *out)
{
    const char *const *v;
    size_t n = suggest_result(s, &v);
    int r = 0;
    if (n > 0)
        r = buf_append_str(out, "; did you mean ");
    for (size_t i = 0; r >= 0 && i < n; i++)
        r = buf_printf(out, "%s'%s%s'",
                       i == 0       ? ""
                       : i + 1 == n ? " or "
                                    : ", ",
                       prefix ? prefix : "", v[i]);
    if (r >= 0 && n > 0)
        r = buf_append_char(out, '?');
    return r < 0 ? r : 0;
}

int suggest_append_list(const struct suggest *s, size_t max, struct buf *out)
{
    const char *const *v;
    size_t n = suggest_result(s, &v);
    int r = 0;
    for (size_t i = 0; r >= 0 && i < n && i < max; i++)
        r = buf_printf(out, "%s%s", i ? ", " : "", v[i]);
    return r < 0 ? r : 0;
}

void suggest_release(struct suggest *s)
{
    s->n = 0;
}
