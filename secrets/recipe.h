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
 *   A secret manager by reference (manager.h runs them): "op:op://v/i/f", "bw:ITEM",
 *   "pass:PATH", "gopass:PATH", "vault:PATH#FIELD", "aws:ID", "gcloud:NAME", the same as
 *   objects ({"bw": "ITEM", "field": "username"}), and {"keepassxc": DB, "entry": ENTRY,
 *   "password": NAME} (the database password is the secret NAME, another recipe).
 *
 * Commands and managers carry a time-to-live (a default per kind, "0" = resolve every time);
 * other kinds do not expire unless they carry a "ttl" of their own. */
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
    /* the secret managers, each run by its own CLI (manager.h) */
    RECIPE_OP,
    RECIPE_BW,
    RECIPE_PASS,
    RECIPE_GOPASS,
    RECIPE_KEEPASSXC,
    RECIPE_VAULT,
    RECIPE_AWS,
    RECIPE_GCLOUD,
};

/* Whether the kind is a secret manager's (a child with an argv, cached like a command). */
#define RECIPE_IS_MANAGER(k) ((k) >= RECIPE_OP)

/* The secret a keepassxc recipe unlocks its database with, unless "password" names another. */
#define RECIPE_KEEPASSXC_PASSWORD_DEFAULT "KEEPASSXC_PASSWORD"

#define RECIPE_TTL_NONE                INT64_C(-1)
#define RECIPE_COMMAND_TTL_DEFAULT     (INT64_C(5) * 60 * 1000)
#define RECIPE_COMMAND_TIMEOUT_DEFAULT (INT64_C(10) * 1000)
#define RECIPE_COMMAND_TIMEOUT_MAX     (INT64_C(10) * 60 * 1000)
/* a manager may go to the network or wait for its agent: more room than a command */
#define RECIPE_MANAGER_TIMEOUT_DEFAULT (INT64_C(30) * 1000)

struct recipe {
    char *name;
    enum recipe_kind kind;
    char *arg;          /* variable, label, shell command, path, the literal value, or the
                         * manager's reference (keepassxc: the database) */
    char *entry;        /* keepassxc: the entry; else NULL */
    char *password;     /* keepassxc: the secret holding the database password; else NULL */
    char *field;        /* bw: which field (NULL: password); aws: a key of a JSON secret */
    char *project;      /* gcloud: the project (NULL: gcloud's own default) */
    int64_t ttl_ms;     /* RECIPE_TTL_NONE: never expires; 0: every time */
    int64_t timeout_ms; /* commands and managers only */
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

/* "env", "keychain", "command", "file", "literal", or the manager's key ("op", "pass" ...). */
const char *recipe_kind_str(enum recipe_kind k);

/* The TTL and the timeout a recipe of kind k has when it names none. */
int64_t recipe_ttl_default(enum recipe_kind k);
int64_t recipe_timeout_default(enum recipe_kind k);

/* Checks the options of a manager recipe (which keys go with which kind, a reference that a
 * manager would take as an option). -EINVAL with a message. */
int recipe_check_options(const struct recipe *r, struct err *e) _must_check_;

/* Wipes the argument (it may be a literal value) and frees. NULL-safe. */
void recipe_free(struct recipe *r);
