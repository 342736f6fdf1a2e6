/* buf.h - a growable byte buffer with a hard size cap.
 *
 * Every input this project reads is bounded (frames, bodies, child output, files), so each
 * buffer carries its own limit: appends beyond `max` fail with -E2BIG and leave the buffer
 * unchanged. A buffer marked secret (buf_init_secret) wipes old storage on every realloc and on
 * release, so a value that passed through it leaves no copy in freed heap memory.
 *
 * The contents are always NUL-terminated (data[len] == 0 once anything was appended), so text
 * can be used as a C string; binary data is fine too, len is the truth.
 *
 * Embedded value: struct buf b; buf_init(&b, max); ... buf_release(&b). */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "credkit/macro.h"

struct buf {
    char *data;  /* NULL until the first append */
    size_t len;  /* bytes used, not counting the terminating NUL */
    size_t cap;  /* bytes allocated */
    size_t max;  /* hard cap on len */
    bool secret; /* wipe on realloc and release */
};

#define BUF_MAX_DEFAULT (1024u * 1024u)

void buf_init(struct buf *b, size_t max);
void buf_init_secret(struct buf *b, size_t max);

/* Frees storage (wiping it first if secret) and resets to empty; keeps max and secret. */
void buf_release(struct buf *b);

/* Empties the buffer but keeps its storage (wiping the old contents if secret). */
void buf_reset(struct buf *b);

/* Append; -E2BIG past max, -ENOMEM; on failure the buffer is unchanged. */
int buf_append(struct buf *b, const void *data, size_t len) _must_check_;
int buf_append_str(struct buf *b, const char *s) _must_check_;
int buf_append_char(struct buf *b, char c) _must_check_;
int buf_printf(struct buf *b, const char *fmt, ...) _printf_(2, 3) _must_check_;
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) _printf_(2, 0) _must_check_;

/* Ensures room for `extra` more bytes (plus NUL) without changing contents. */
int buf_reserve(struct buf *b, size_t extra) _must_check_;

/* Hands the storage to the caller (who frees it; with secure_free() if the buffer was secret)
 * and leaves the buffer empty. Returns "" (malloc'd) when nothing was appended; NULL on ENOMEM. */
char *buf_detach(struct buf *b);

/* Borrowed NUL-terminated view, "" when empty. */
const char *buf_str(const struct buf *b);

/* Strips ASCII whitespace at both ends, in place. */
void buf_trim(struct buf *b);

/* Appends each space-separated word of words (NULL: none) that b does not hold yet, one space
 * between words: the union of two OAuth scope lists, in order, each scope once. -E2BIG past
 * max, -ENOMEM; on failure b holds the words appended before. */
int buf_append_new_words(struct buf *b, const char *words) _must_check_;
