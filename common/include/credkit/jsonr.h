/* jsonr.h - reading JSON that carries secrets, without json-c.
 *
 * json-c keeps its own copies of every string it parses (in the objects and in the tokener's
 * scratch buffer) and frees them without wiping, so text that carries secrets (the helper
 * answers) is read with this instead: a strict RFC 8259 pull reader over text[0..len) that
 * decodes each string straight into a buffer the caller gives (a secret one, buf_init_secret,
 * for values) and skips what the caller does not want, bounded in nesting (JSON_MAX_DEPTH).
 * jsonw.h is the writing side.
 *
 * Strict: valid UTF-8 only, no comments or trailing commas, no leading zeros, and no \u0000 (a
 * C string could not carry it). A syntax error is -EBADMSG with e set to "line L, column C:
 * what", as json_parse() words its own.
 *
 * Embedded value, borrowing the text and e, which must outlive it:
 *     struct jsonr rd; jsonr_init(&rd, text, len, e);
 *     r = jsonr_object_begin(&rd);
 *     while (r >= 0 && (r = jsonr_object_next(&rd, &count, &key)) > 0)
 *         r = wanted(key) ? jsonr_string(&rd, &value) : jsonr_skip(&rd); */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/buf.h"
#include "credkit/err.h"
#include "credkit/macro.h"

struct jsonr {
    const char *s; /* borrowed */
    size_t len;
    size_t pos; /* the next byte to read */
    unsigned depth;
    struct err *e; /* borrowed; may be NULL */
};

void jsonr_init(struct jsonr *rd, const char *text, size_t len, struct err *e);

/* The next byte that is not whitespace (skipped), or -1 at the end of the text. */
int jsonr_peek(struct jsonr *rd);

/* The JSON type of the value ahead, for messages: "a string", "an object", "null"... (any other
 * byte is "a number": jsonr_skip() then says whether it is one). */
const char *jsonr_kind(struct jsonr *rd);

/* Sets e to "line L, column C: what" at the current position and returns -EBADMSG. */
int jsonr_syntax(struct jsonr *rd, const char *what);

/* Consumes the '{' of an object (-EBADMSG when the value ahead is not one). */
int jsonr_object_begin(struct jsonr *rd) _must_check_;

/* The next member of the object begun: 1 with its key in key (reset first; make it secret when
 * keys may be secrets; NULL: only checked) and the reader on the value, which the caller must
 * read or skip; 0 at the closing '}' (consumed). *count counts the members read so far (start
 * it at 0). */
int jsonr_object_next(struct jsonr *rd, size_t *count, struct buf *key) _must_check_;

/* Reads a string, appending its decoded bytes to out (NULL: only checks it). -EBADMSG when the
 * value ahead is not a string or is malformed; -E2BIG past out's cap. */
int jsonr_string(struct jsonr *rd, struct buf *out) _must_check_;

/* Reads a number. *ret_int says whether it was an integer that fits in int64_t, then in *ret
 * (1.5, 1e3 and 2^63 are numbers but not that). */
int jsonr_number(struct jsonr *rd, bool *ret_int, int64_t *ret) _must_check_;

/* Skips one value of any type, checking it. */
int jsonr_skip(struct jsonr *rd) _must_check_;

/* Whether s[0..len) is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF). */
bool jsonr_utf8_valid(const char *s, size_t len);
