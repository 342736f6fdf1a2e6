/* mcp_field.h - typed members of a configuration object, with the messages users see.
 *
 * The readers common/ uses for the generic entry, and that each tool uses for its own keys of
 * the same entry (the bridge's "excludeTools", mcp-auth's "oauth"), so that every key of an
 * mcp.json file speaks the same way: '"timeout" must be a positive number of milliseconds, not
 * -5'. A member whose value is JSON null counts as absent. Each reader leaves its output
 * untouched when the member is absent, and fails with -EINVAL and the reason (without file and
 * server: the loader adds them) or -ENOMEM. Quoted user text goes through mcp_disp(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#define MCP_DISP_MAX 96                  /* bytes of a name or word quoted in a message */
#define MCP_DISP_BUF (MCP_DISP_MAX + 16) /* room for it, an escape past it, and "..." */

/* A copy of s (or of its first n bytes) fit to quote in a message: control characters as \xHH,
 * cut after MCP_DISP_MAX bytes at a character boundary. */
void mcp_disp(char out[MCP_DISP_BUF], const char *s);
void mcp_disp_n(char out[MCP_DISP_BUF], const char *s, size_t n);

/* The value of key in o; NULL when absent, null, or when o is not an object. Borrowed. */
struct json_object *mcp_field_member(struct json_object *o, const char *key);

/* The JSON type of v for messages ("a string", "an array", "null"). Static. */
const char *mcp_field_type(struct json_object *v);

enum {
    MCP_FIELD_NONBLANK = 1 << 0, /* a string must not be empty or only whitespace */
};

/* v as a C string (no NUL inside; flags MCP_FIELD_*); label is quoted as given ("\"url\"").
 * *ret is borrowed from v. */
int mcp_field_string_value(struct json_object *v, const char *label, unsigned flags,
                           const char **ret, struct err *e) _must_check_;

/* An optional string member, copied into *ret (the old value freed); label names it in messages
 * ("oauth.clientId", quoted there). Caller frees. */
int mcp_field_string(struct json_object *o, const char *key, const char *label, unsigned flags,
                     char **ret, struct err *e) _must_check_;

/* An optional true or false. */
int mcp_field_bool(struct json_object *o, const char *key, const char *label, bool *ret,
                   struct err *e) _must_check_;

/* An optional positive whole number of milliseconds, at most a day (messages name key). */
int mcp_field_ms(struct json_object *o, const char *key, int64_t *ret, struct err *e) _must_check_;

/* An optional array of strings as a NULL-terminated vector, an empty one when absent: *ret is
 * always replaced on success (the old vector freed with strv_free()). Caller frees with
 * strv_free(). Not for secrets. */
int mcp_field_strv(struct json_object *o, const char *key, char ***ret, struct err *e) _must_check_;

/* An optional string that must be one of words (NULL-terminated); *ret is its index. expect
 * spells the choices for the message ("\"stdio\", \"http\" or \"sse\""). */
int mcp_field_enum(struct json_object *o, const char *key, const char *label,
                   const char *const *words, const char *expect, int *ret,
                   struct err *e) _must_check_;

/* An optional span of time counted in minutes, as the pi adapter writes "idleTimeout": a
 * number of minutes (fractions allowed, 0 = never), or a string with a unit ("90s", "500ms",
 * "2m", "1h30m"; credkit/duration.h). *ret_ms is the span in milliseconds (0 for 0; a positive
 * span shorter than 1 ms is 1 ms), at most a year. *ret_large (may be NULL) is set when the
 * value was a number of 1000 or more, which looks like milliseconds of an older meaning: the
 * caller warns (mcp_field_warn()) and still reads minutes. Both untouched when absent. */
int mcp_field_minutes(struct json_object *o, const char *key, const char *label, int64_t *ret_ms,
                      bool *ret_large, struct err *e) _must_check_;

/* A check of a tool's own keys (mcp_config_opts.check_entry, .check_settings) that accepts
 * the keys with warnings says so by returning 1 with the warnings in e, one a line:
 * mcp_field_warn() appends one line to e (code 0) and returns 1. A line that does not fit in
 * e is left out. Lines name the key and say what to do, as error messages do. */
int mcp_field_warn(struct err *e, const char *fmt, ...) _printf_(2, 3);
