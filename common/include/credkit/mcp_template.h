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
 * The lookup is called with the name as written inside the braces, without the default:
 * "NAME", "env:NAME", "input:ID". A template is expanded through a lookup callback (the process
 * environment by default, `secrets` later) whenever its value is needed, so values that change
 * (rotated tokens) are picked up. Syntax errors give a position, never the text: a template may
 * hold a literal secret, and an expanded one certainly does (the results are wiped when freed). */
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
 * input, naming the secret as mcp_template_secret_name() makes it; "" for the others), into
 * buf. Returns as snprintf(). */
int mcp_template_missing_hint(const char *name, char *buf, size_t size);
