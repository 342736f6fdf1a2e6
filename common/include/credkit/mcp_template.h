/* mcp_template.h - ${VAR} templates in configuration values.
 *
 * "url", "headers" values, "env" values, "args", "cwd" and "bearerToken" of an entry (and the
 * OAuth client secrets) are kept as written: templates. "$$" is a literal "$", any other "$" is
 * itself, "${" without "}" is an error, and a reference is one of
 *   ${NAME}           a variable: the lookup's (a secret of `secrets`, else the environment)
 *   ${NAME:-default}  the same, or the default when it is unset or empty (as in sh); the
 *                     default is literal text up to the first "}" (Claude Code's form)
 *   ${env:NAME}       the environment only, never a secret (VS Code's form)
 *   ${input:ID}       a VS Code input: the secret called ID (`secrets configure ID`)
 *   $env:NAME         the pi adapter's form of ${env:NAME} (NAME the longest run of letters,
 *                     digits and '_' after the colon; "$$env:" is literal)
 * The lookup is called with the name as written inside the braces, without the default:
 * "NAME", "env:NAME", "input:ID". A template is expanded through a lookup callback (the process
 * environment by default, `secrets` later) whenever its value is needed, so values that change
 * (rotated tokens) are picked up. Syntax errors give a position, never the text: a template may
 * hold a literal secret, and an expanded one certainly does (the results are wiped when freed).
 *
 * The values that may hold a secret (an "env" value, a header value, "bearerToken") also take
 * the pi adapter's forms (mcp_value_*): a leading "!" makes the rest a shell command whose
 * trimmed output is the value (run by `secrets` when the server connects, never here), and
 * "!!" stands for a literal leading "!" before a template. Every command of the suite that
 * expands or checks a value goes through these functions, so that `list` and `call` cannot
 * disagree on what a value becomes. */
#pragma once

#include "credkit/err.h"
#include "credkit/macro.h"

struct strv; /* credkit/strv.h */

#include <stdbool.h>
#include <stddef.h>

#define MCP_TEMPLATE_ENV   "env:"
#define MCP_TEMPLATE_INPUT "input:"

/* Looks a variable up by its name as written ("NAME", "env:NAME", "input:ID"): 0 and *ret
 * (caller frees with secure_free), -ENOENT when unset, other negative errno (with e) when the
 * lookup itself failed. The default lookup (the environment) reads NAME for "env:NAME" and
 * knows no "input:ID" (-ENOENT). */
typedef int (*mcp_lookup_fn)(void *userdata, const char *name, char **ret, struct err *e);

/* The default lookup: the process environment ("env:NAME" reads NAME; "input:ID" is -ENOENT).
 * userdata unused. */
int mcp_lookup_env(void *userdata, const char *name, char **ret, struct err *e) _must_check_;

/* Expands ${VAR} references in tmpl through lookup (NULL: the process environment). -ENOENT with
 * a message naming the first missing variable, -EINVAL for a syntax error or a result over 256
 * KiB. The result may hold secrets: caller frees with secure_free(). */
int mcp_expand(const char *tmpl, mcp_lookup_fn lookup, void *userdata, char **ret,
               struct err *e) _must_check_;

/* mcp_expand() that goes on past unset variables: each one is pushed to missing (once: a name
 * already in it is not added again), and the result is then -ENOENT without a message and no
 * value. Other errors as mcp_expand(). The result may hold secrets: caller frees with
 * secure_free(). */
int mcp_expand_collect(const char *tmpl, mcp_lookup_fn lookup, void *userdata, struct strv *missing,
                       char **ret, struct err *e) _must_check_;

/* Calls fn for each variable name referenced in tmpl ("NAME", "env:NAME", "input:ID", without
 * any default; a reference with a default is reported too), in order (repeats included),
 * stopping silently at a syntax error (mcp_expand() reports it). */
void mcp_template_vars(const char *tmpl, void (*fn)(const char *name, void *userdata),
                       void *userdata);

/* mcp_template_vars() that also says whether the reference has a default (${NAME:-x}), which
 * makes it never missing. */
void mcp_template_refs(const char *tmpl,
                       void (*fn)(const char *name, bool has_default, void *userdata),
                       void *userdata);

/* The environment variable a reference reads: NAME for "NAME" and "env:NAME", NULL for
 * "input:ID". Borrowed from name. */
const char *mcp_template_env_name(const char *name);

#define MCP_TEMPLATE_SECRET_BUF 130 /* a secret name made from an input's ID, and its NUL */

/* The secret a reference asks `secrets` for: NAME for "NAME"; for "input:ID" the ID when it is
 * a valid secret name, else the ID with each byte outside [A-Za-z0-9_] made '_' (and a '_'
 * before a leading digit), written into buf: VS Code's "api-key" is the secret api_key. NULL
 * for "env:NAME" (the environment only) and for an ID too long for buf. Borrowed from name or
 * buf. */
const char *mcp_template_secret_name(const char *name, char buf[static MCP_TEMPLATE_SECRET_BUF]);

/* ID for "input:ID", else NULL. Borrowed from name. */
const char *mcp_template_input_id(const char *name);

/* What to do about a missing reference, for a message ("run: secrets configure ID" for an
 * input, naming the secret as mcp_template_secret_name() makes it; "set NAME in the
 * environment ..." for "env:NAME"; "" for the others), into
 * buf. Returns as snprintf(). */
int mcp_template_missing_hint(const char *name, char *buf, size_t size);

/* What an expansion did with one reference. */
enum mcp_ref_state {
    MCP_REF_SET,     /* the lookup gave a value */
    MCP_REF_DEFAULT, /* ${NAME:-default}: unset or empty, the default was used */
    MCP_REF_MISSING, /* unset, no default: the expansion fails */
};
typedef void (*mcp_ref_fn)(void *userdata, const char *name, enum mcp_ref_state state);

/* Expands tmpl as mcp_expand() does, and throws the value away (wiped): fn (may be NULL) is
 * told each reference's fate, in order. 0 when nothing is missing, -ENOENT (without a message)
 * when a reference is, other errors as mcp_expand(). */
int mcp_template_eval(const char *tmpl, mcp_lookup_fn lookup, void *userdata, mcp_ref_fn fn,
                      void *fn_userdata, struct err *e) _must_check_;

#define MCP_VALUE_COMMAND_PREFIX   "_cmd_"
#define MCP_VALUE_COMMAND_NAME_BUF 22 /* the prefix, 16 hex digits and the NUL */

/* The command of a value "!command", NULL for any other ("!!x" included). Borrowed from v. */
const char *mcp_value_command(const char *v);
/* The template of a value that is not a command: "!x" for "!!x", v itself otherwise; NULL for
 * a command. Borrowed from v. */
const char *mcp_value_template(const char *v);
/* The name a command's value goes by, between the bridge and `secrets` (a secret name:
 * "_cmd_" and 16 hex digits of a hash of the command, the same in every program); into buf,
 * which is returned. */
const char *mcp_value_command_name(const char *cmd, char buf[static MCP_VALUE_COMMAND_NAME_BUF]);
/* Whether name is of that form. */
bool mcp_value_is_command_name(const char *name);

/* The value of v: a template expanded as mcp_expand(), or a command's output as the lookup
 * has it under mcp_value_command_name() (-ENOENT with a message saying it has not run when
 * the lookup lacks it). The message never holds the command or a value. Caller frees with
 * secure_free(). */
int mcp_value_expand(const char *v, mcp_lookup_fn lookup, void *userdata, char **ret,
                     struct err *e) _must_check_;
/* mcp_template_eval() of v's template; a command is not run and tells nothing (0). */
int mcp_value_eval(const char *v, mcp_lookup_fn lookup, void *userdata, mcp_ref_fn fn,
                   void *fn_userdata, struct err *e) _must_check_;
