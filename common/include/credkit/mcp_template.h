/* mcp_template.h - ${VAR} templates in configuration values.
 *
 * "url", "headers" values and "env" values of an entry (and the OAuth client secrets) are kept as
 * written: templates. "${NAME}" names a variable, "$$" is a literal "$", any other "$" is itself,
 * and "${" without "}" is an error. A template is expanded through a lookup callback (the process
 * environment by default, `secrets` later) whenever its value is needed, so values that change
 * (rotated tokens) are picked up. Syntax errors give a position, never the text: a template may
 * hold a literal secret, and an expanded one certainly does (the results are wiped when freed). */
#pragma once

#include "credkit/err.h"
#include "credkit/macro.h"

struct strv; /* credkit/strv.h */

/* Looks a variable up: 0 and *ret (caller frees with secure_free), -ENOENT when unset, other
 * negative errno (with e) when the lookup itself failed. */
typedef int (*mcp_lookup_fn)(void *userdata, const char *name, char **ret, struct err *e);

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

/* Calls fn for each variable name referenced in tmpl, in order (repeats included), stopping
 * silently at a syntax error (mcp_expand() reports it). */
void mcp_template_vars(const char *tmpl, void (*fn)(const char *name, void *userdata),
                       void *userdata);
