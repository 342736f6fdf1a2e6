/* json.h - JSON over json-c, bounded, with errors a user can act on.
 *
 * Parsing is bounded in size and nesting depth, and a syntax error says where it is
 * ("line 4, column 12: unexpected character"). Reading a file adds the file name; writing
 * one goes through file_write_atomic(), so a failed write leaves the old file intact.
 *
 * json-c objects are reference counted: "Caller puts" below means json_object_put(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#define JSON_MAX_DEPTH 64

struct json_dup; /* below */

/* Parses exactly one JSON value from text[0..len) (trailing whitespace allowed, anything else
 * is an error; a NUL byte anywhere is an error). Strict: no trailing commas, valid UTF-8.
 * len > max_len fails with -E2BIG. Syntax errors: -EBADMSG and a message
 * "line L, column C: <what>" (1-based, the column in bytes). Caller puts *ret. */
int json_parse(const char *text, size_t len, size_t max_len, struct json_object **ret,
               struct err *e) _must_check_;

/* The tokener flags json_parse() uses: strict (no trailing commas and the like, as JSON.parse()
 * in pi would refuse them too), UTF-8 checked; trailing characters are let through only for
 * json_parse_with() to report them itself, with a position. */
#define JSON_TOKENER_FLAGS                                                                         \
    (JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS | JSON_TOKENER_VALIDATE_UTF8)

/* json_parse() on a tokener the caller owns (json_tokener_new_ex(JSON_MAX_DEPTH) with
 * JSON_TOKENER_FLAGS; reset here, so a hot path may keep one for every parse). noun names the
 * input in messages ("document", "message"). Unlike json_parse(), a bare JSON null is 0 with
 * *ret NULL (json-c has no object for it). Caller puts *ret. */
int json_parse_with(struct json_tokener *tok, const char *text, size_t len, size_t max_len,
                    const char *noun, struct json_object **ret, struct err *e) _must_check_;

/* Sets e to the syntax error what at text[pos] and returns -EBADMSG: the message is
 * "line L, column C: <what>", as json_parse() words its own (1-based, the column in bytes),
 * for parsers that drive json-c themselves. A pos past len counts as len (the end). */
int json_error_at(struct err *e, const char *text, size_t len, size_t pos, const char *what);

/* Blanks, in place, the comments (a line comment from "//", a block comment between slash-star
 * and star-slash) and the trailing commas (a ',' whose next token is ']' or '}') of
 * text[0..len), a JSON-with-comments text as VS Code writes it, so that json_parse() reads the
 * rest. Every other byte stays where it was, the line
 * breaks inside a comment too, so json_parse()'s "line L, column C" are still the file's. The
 * strings are left alone (a comment's marker inside one is text), escapes included. -EBADMSG with
 * "line L, column C: ..." (json_error_at()) for a comment that is never closed; anything else
 * wrong is json_parse()'s to say. */
int json_blank_jsonc(char *text, size_t len, struct err *e) _must_check_;

enum json_read_flags {
    JSON_READ_SECRET = 1 << 0, /* the file holds secrets: refuse it when group/other can read */
    JSON_READ_JSONC = 1 << 1,  /* the file is JSONC: its comments and trailing commas are
                                * blanked (json_blank_jsonc()) before it is parsed */
};

/* Reads and parses a file (at most max_len bytes). -ENOENT when it does not exist (with a
 * message); parse errors are prefixed with the file's display path: "'~/.pi/agent/x.json':
 * line 3, column 1: ...". Caller puts *ret. */
int json_read_file(const char *path, size_t max_len, unsigned flags, struct json_object **ret,
                   struct err *e) _must_check_;

/* json_read_file() that also finds the keys given twice (json_parse_dups()). */
int json_read_file_dups(const char *path, size_t max_len, unsigned flags, struct json_object **ret,
                        struct json_dup **ret_dups, size_t *ret_ndups, struct err *e) _must_check_;

/* Serialises obj (pretty, two-space indent, "key": value, slashes not escaped, trailing
 * newline: JSON.stringify(v, null, 2) but for empty containers; byte for byte json-c's format)
 * and replaces path atomically with the given mode. The text is built in memory that is wiped,
 * never in json-c's print buffer, whose growth would leave copies of it behind. */
int json_write_file(const char *path, struct json_object *obj, mode_t mode,
                    struct err *e) _must_check_;

/* A key given more than once in one object of a JSON text. json-c (like JSON.parse()) keeps
 * the last and drops the others without a word, and the next write of the document would lose
 * them for good: readers of files people edit report these instead. */
struct json_dup {
    char **path; /* the object's location: the keys leading to it (array indexes as
                      * decimal strings); npath == 0 for the top-level object */
    size_t npath;
    char *key;      /* the key given twice (decoded) */
    unsigned line;  /* the line of its second (or later) occurrence, 1-based */
    unsigned first; /* the line of its first */
};

/* Finds every key given more than once in the same object of text[0..len), a JSON text that
 * json_parse() accepted (anything else: -EBADMSG, with nothing found). Keys compare decoded
 * ("a" and "\u0061" are the same key). Linear in the size of the text. The number found (>= 0)
 * with *ret their array in the order of the text (NULL when none), or -ENOMEM / -EBADMSG.
 * Caller frees with json_dups_free(). */
int json_find_duplicates(const char *text, size_t len, struct json_dup **ret) _must_check_;

/* Frees what json_find_duplicates() returned. NULL-safe. */
void json_dups_free(struct json_dup *d, size_t n);

/* json_parse() of text, and the keys given twice in it (json_find_duplicates()): *ret_dups
 * NULL and *ret_ndups 0 when there are none. For readers of files people edit. Caller puts
 * *ret and frees *ret_dups with json_dups_free(). */
int json_parse_dups(const char *text, size_t len, size_t max_len, struct json_object **ret,
                    struct json_dup **ret_dups, size_t *ret_ndups, struct err *e) _must_check_;

/* Borrowed accessors; NULL/false when obj is not an object, or the key is absent or of another
 * type. json_get_int64 takes integers only (not 1.5, not 1e3) and refuses values above
 * INT64_MAX; json-c clamps those below INT64_MIN to it. *ret is written only on true. */
const char *json_get_string(struct json_object *obj, const char *key);
struct json_object *json_get_object(struct json_object *obj, const char *key);
struct json_object *json_get_array(struct json_object *obj, const char *key);
bool json_get_bool(struct json_object *obj, const char *key, bool *ret);
bool json_get_int64(struct json_object *obj, const char *key, int64_t *ret);

/* Wipes, in place, every string value in the tree under o (objects and arrays, recursively),
 * before json_object_put() gives its memory back: json-c frees its copies unwiped. Keys are not
 * wiped: json-c's API offers them read-only and its hash table depends on them, so they stay in
 * the memory json-c frees. Keys are names, not secrets: never store a secret as a key. The
 * strings keep their lengths but hold zero bytes: put o afterwards, and use it for nothing else.
 * NULL-safe. */
void json_wipe_strings(struct json_object *o);

/* Human name of a json-c type for messages: "a string", "an object", "a number"... */
const char *json_type_desc(enum json_type t);
