/* jsonw.h - writing JSON text directly into a buffer.
 *
 * json-c keeps string copies in memory it never wipes, so answers that carry secret values
 * (`secrets resolve --json`, `mcp-auth header --json`) are written with these helpers into a
 * secret buffer instead. The bridge uses the same helpers on its hot path, where building a
 * json-c tree for every message would cost more than the message.
 *
 * Every `--json` answer of the three tools has one envelope (docs/json.md): an object whose
 * "version" is JSONW_ANSWER_VERSION, snake_case keys, and on failure an "error" object
 * {"code", "message", "fix"} on standard output as well as the human text on standard error.
 * jsonw_answer_new() starts an answer built with json-c, jsonw_answer_add_error() adds the error
 * object to one, and jsonw_error_answer() writes a whole failed answer; a tool's main() calls
 * the last when a command that was given --json fails before it could answer. */
#pragma once

#include <stdbool.h>
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

/* ---- the --json answer ---- */

#define JSONW_ANSWER_VERSION 1

struct json_object;

/* A new answer, {"version": 1}, for the command to add its keys to. Caller puts it
 * (json_object_put). NULL when out of memory. */
struct json_object *jsonw_answer_new(void);

/* Adds "error": {"code": code, "message": message, "fix": fix} to answer; fix NULL leaves "fix"
 * out (there is nothing to suggest). 0 or -ENOMEM. */
int jsonw_answer_add_error(struct json_object *answer, const char *code, const char *message,
                           const char *fix) _must_check_;

/* Appends the member "error": {...} alone (as jsonw_answer_add_error() says), for an answer
 * written with these helpers that carries data and an error at once. 0 or -errno. */
int jsonw_error_member(struct buf *b, const char *code, const char *message,
                       const char *fix) _must_check_;

/* Appends the failed answer {"version": 1, "error": {...}} (as jsonw_answer_add_error() says)
 * and a newline to b. 0 or -errno (-E2BIG past b's cap). */
int jsonw_error_answer(struct buf *b, const char *code, const char *message,
                       const char *fix) _must_check_;

/* An exit status of a tool, the stable word its failed answers carry as "code", and the next
 * step to suggest as "fix" (NULL: none in general). Each tool has a table of them. */
struct jsonw_status_code {
    int status;
    const char *code;
    const char *fix;
};

/* jsonw_error_answer() for a command that exited with status: the code and the fix of status's
 * row of table[0..n), fix replacing the row's when not NULL (a step the command knows better,
 * its own help), message the error lines said on stderr (log_errors(); when empty, no line
 * was ours: getopt's complaint). -ENOENT when status has no row, else as
 * jsonw_error_answer(). */
int jsonw_status_answer(struct buf *b, const struct jsonw_status_code *table, size_t n, int status,
                        const char *message, const char *fix) _must_check_;

/* Whether a command's argv[1..argc) asks for --json (never past "--": the arguments of another
 * program). main() uses it to answer a failure in JSON, even a usage error found before the
 * command read its options. */
bool jsonw_wanted(int argc, char *const *argv);
