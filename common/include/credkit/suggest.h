/* suggest.h - "did you mean": the known names closest to a word that matched none.
 *
 * Commands, options, server names, secret names, tool names and configuration keys are all
 * suggested the one way, git's (help.c): a Damerau-Levenshtein distance with git's weights
 * (a swap of two neighbours 0, a substitution 2, a letter added 1, a letter dropped 3) plus one,
 * compared case-insensitively, and 0 for a candidate that starts with the word (git's prefix
 * match). A candidate is close when its distance is below SUGGEST_FLOOR (git's similarity
 * floor, 7); of the close ones, all those at the best distance are suggested, in the order they
 * were offered. When none is close, the candidates that contain the word or are contained in it
 * (the shorter of the two at least 3 bytes: "mcp_beta_files_x" for "mcp_beta_files") are.
 *
 * Embedded value: struct suggest s; suggest_init(&s, word); suggest_add() each name;
 * suggest_append() the result; suggest_release(). Candidates are borrowed: they must outlive
 * the struct. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/buf.h"
#include "credkit/macro.h"

#define SUGGEST_FLOOR 7
#define SUGGEST_MAX   32 /* candidates kept at the best distance; more are counted, not kept */

struct suggest {
    const char *word; /* borrowed */
    unsigned best;    /* the best distance so far; SUGGEST_FLOOR: none close yet */
    const char *v[SUGGEST_MAX];
    size_t n;                           /* candidates kept at best */
    const char *contained[SUGGEST_MAX]; /* the fallback: containing or contained */
    size_t n_contained;
    size_t offered; /* candidates offered */
    size_t prefix;  /* of them, at distance 0 */
};

/* The distance from word (what was typed) to candidate, as described above. */
unsigned suggest_distance(const char *word, const char *candidate);

void suggest_init(struct suggest *s, const char *word);
/* Offers candidate (borrowed), at suggest_distance(word, candidate). */
void suggest_add(struct suggest *s, const char *candidate);
/* Offers shown (borrowed) as compared under another spelling, key (a tool's raw name for its
 * exposed one); a name offered under several keys is suggested once, at its best. */
void suggest_add_as(struct suggest *s, const char *key, const char *shown);
/* The candidates suggested, in the order offered: none when none is close, or when every
 * candidate was a distance-0 match (a word that short says nothing). ret_v is borrowed from s. */
size_t suggest_result(const struct suggest *s, const char *const **ret_v);
/* Appends "; did you mean 'a'?" ("'a' or 'b'", "'a', 'b' or 'c'", each name with prefix before
 * it: "--" for options) to out; nothing when there is no suggestion. 0, -ENOMEM, -E2BIG. */
int suggest_append(const struct suggest *s, const char *prefix, struct buf *out) _must_check_;
/* Appends the suggested names, comma-separated, at most max of them; nothing when none.
 * 0, -ENOMEM, -E2BIG. */
int suggest_append_list(const struct suggest *s, size_t max, struct buf *out) _must_check_;
/* Nothing to free today; called for symmetry with every other embedded value. */
void suggest_release(struct suggest *s);
