/* recipe.h - how one named secret is obtained.
 *
 * A recipe is one entry of secrets.json. Accepted forms (string or object):
 *   "!gh auth token"             a shell command; trimmed stdout is the value
 *   "env:VAR", "VAR"             an environment variable (bare names: the older pi format)
 *   "keychain:LABEL"             the Secret Service (alias "keyring:")
 *   "file:PATH"                  the first line of a private file
 *   "literal:VALUE"              the value itself (allowed, warned about)
 *   a bare string that is not a valid variable name is a literal, as the older pi format read it
 *   {"command": "...", "ttl": "8h", "timeout": "10s"}, {"keychain": "..."}, {"env": "..."},
 *   {"file": "..."}, {"literal": "..."}; "description" may annotate any object.
 *
 * Command recipes carry a time-to-live (default 5 minutes, "0" = resolve every time); other
 * kinds do not expire unless they carry a "ttl" of their own. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"

enum recipe_kind {
    RECIPE_ENV,
    RECIPE_KEYCHAIN,
    RECIPE_COMMAND,
    RECIPE_FILE,
    RECIPE_LITERAL,
};

#define RECIPE_TTL_NONE                INT64_C(-1)
#define RECIPE_COMMAND_TTL_DEFAULT     (INT64_C(5) * 60 * 1000)
#define RECIPE_COMMAND_TIMEOUT_DEFAULT (INT64_C(10) * 1000)
#define RECIPE_COMMAND_TIMEOUT_MAX     (INT64_C(10) * 60 * 1000)

struct recipe {
    char *name;
    enum recipe_kind kind;
    char *arg;          /* variable, label, shell command, path, or the literal value */
    int64_t ttl_ms;     /* RECIPE_TTL_NONE: never expires; 0: every time */
    int64_t timeout_ms; /* commands only */
    char *description;  /* optional, NULL */
    bool bare;          /* written in the older bare form ("VAR", or a bare literal) */
    bool quiet;         /* commands: handed in by another program (`resolve --stdin`): a
                         * failure never quotes its stderr, which that program's user never
                         * sees as theirs to show */
};

/* Parses the JSON value v of entry `name`. -EINVAL with a message saying what is wrong with
 * this entry (never quoting a literal value). Caller frees *ret with recipe_free(). */
int recipe_parse(const char *name, struct json_object *v, struct recipe **ret,
                 struct err *e) _must_check_;

/* A new recipe of the given kind (arg copied; ttl and timeout at their defaults). Caller frees. */
int recipe_new(const char *name, enum recipe_kind kind, const char *arg,
               struct recipe **ret) _must_check_;

/* The JSON to store: the short string form when no option differs from the defaults, else the
 * object form. Caller puts. NULL on ENOMEM. */
struct json_object *recipe_to_json(const struct recipe *r);

/* A stable hex SHA-256 over the scope (the agent directory), the name, the kind, the argument
 * and the TTL: it changes whenever a cached value must not be reused. out must hold 65 bytes. */
void recipe_fingerprint(const struct recipe *r, const char *scope, char out[65]);

/* "env", "keychain", "command", "file", "literal". */
const char *recipe_kind_str(enum recipe_kind k);

/* Wipes the argument (it may be a literal value) and frees. NULL-safe. */
void recipe_free(struct recipe *r);
