/* jsonw.h - writing JSON text directly into a buffer.
 *
 * json-c keeps string copies in memory it never wipes, so answers that carry secret values
 * (`secrets resolve --json`, `mcp-auth header --json`) are written with these helpers into a
 * secret buffer instead. The bridge uses the same helpers on its hot path, where building a
 * json-c tree for every message would cost more than the message. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "credkit/buf.h"
#include "credkit/macro.h"

/* Appends s[0..len) as a JSON string literal, quotes included. Control characters, '"' and
 * '\\' are escaped; bytes >= 0x80 are copied as they are (the input is expected to be UTF-8). */
int jsonw_string(struct buf *b, const char *s, size_t len) _must_check_;

enum jsonw_flags {
    JSONW_ESCAPE_DEL = 1 << 0, /* DEL (0x7f) as \u007f too, as jsonw_string() does; without it,
                                  DEL as it is, as json-c writes it */
};

/* jsonw_string() with a choice of escapes (enum jsonw_flags). */
int jsonw_string_ex(struct buf *b, const char *s, size_t len, unsigned flags) _must_check_;

/* Appends "\"key\":" followed by the quoted string value. */
int jsonw_kv_string(struct buf *b, const char *key, const char *value) _must_check_;

/* Appends "\"key\":" followed by the integer. */
int jsonw_kv_int(struct buf *b, const char *key, int64_t value) _must_check_;
