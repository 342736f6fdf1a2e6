/* jsonscan.h - a JSON-RPC message's envelope read from its bytes, without a tree.
 *
 * Most messages cross the bridge with only their id (and a tool's name) changed: building a
 * json-c tree of a 64 KiB tool result to change three bytes of it costs far more than the
 * bytes themselves. jscan_message() validates the whole text in one pass (strict JSON, valid
 * UTF-8, bounded nesting: whatever it accepts, jrpc_parse() accepts too) and records where the
 * members the bridge routes on are; jscan_splice() copies the text with some of those spans
 * replaced. Anything the scan does not settle (a routed key written with escapes or given
 * twice, a routed string with escapes) is left to jrpc_parse(): the caller falls back to the
 * tree, never guesses. docs/development.md, "The pass-through", says where it is used. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/buf.h"
#include "credkit/macro.h"

/* Nesting the scan accepts; deeper texts are json-c's to judge (JSON_MAX_DEPTH). */
#define JSCAN_MAX_DEPTH 60

/* Bytes [off, off + len) of the text; len 0: absent. */
struct jscan_span {
    size_t off, len;
};

enum jscan_type {
    JSCAN_NONE = 0,
    JSCAN_STRING,
    JSCAN_NUMBER,
    JSCAN_OTHER, /* object, array, true, false, null */
};

/* What the scan found. Value spans cover the value's bytes as written (a string with its
 * quotes); method and name cover a string's contents (no quotes, no escapes in them). */
struct jscan {
    bool version_ok; /* "jsonrpc": "2.0" */
    struct jscan_span id;
    enum jscan_type id_type;
    struct jscan_span method;
    struct jscan_span params, result, error;
    enum jscan_type params_type;
    struct jscan_span name;  /* params.name, a string */
    struct jscan_span meta;  /* params._meta, any value */
    struct jscan_span token; /* params._meta.progressToken, any value */
};

/* Scans text[0..len), one JSON object (whitespace around it allowed). Returns 0 and fills *ret
 * when the envelope is settled; -EAGAIN when the text is valid JSON but the scan cannot settle
 * it (not an object, a routed key escaped or repeated, method or params.name escaped or not a
 * string); -EBADMSG when the scan does not accept the text as JSON (json-c may still accept a
 * few of these: deeper nesting, lone surrogates). *ret is written only on success. */
int jscan_message(const char *text, size_t len, struct jscan *ret) _must_check_;

/* Whether span holds exactly the C string s. */
bool jscan_span_is(const char *text, struct jscan_span span, const char *s);

/* The span's bytes as a positive integer (1 to 2^53, digits only), else 0. */
uint64_t jscan_span_uint(const char *text, struct jscan_span span);

/* One replacement: the bytes of span become with[0..len). */
struct jscan_edit {
    struct jscan_span span;
    const char *with;
    size_t len;
};

/* Appends text[0..len) to out with each edit applied; edits in increasing order, not
 * overlapping, inside the text (else -EINVAL and out unchanged). One reservation for the
 * whole result; -E2BIG past out's bound, -ENOMEM. */
int jscan_splice(const char *text, size_t len, const struct jscan_edit *edits, size_t n,
                 struct buf *out) _must_check_;
