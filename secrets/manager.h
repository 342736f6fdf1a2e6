/* manager.h - secret managers by reference: which CLI runs with which argv, and what its
 * answer and its complaints mean.
 *
 * One row per manager (1Password's op, Bitwarden's bw, pass, gopass, keepassxc-cli, Vault, the
 * AWS and Google Cloud CLIs). resolve.c asks here for the argv, runs it with the one child
 * runner (child_run(), as command recipes are run), and hands the output or the failure back
 * here to become a value or a message. A reference is always an argument of its own: no shell
 * ever reads it, and recipe.c refuses one a manager would take for an option. The value is
 * read from standard output only; messages quote standard error, never standard output. */
#pragma once

#include "credkit/buf.h"
#include "credkit/child.h"
#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/strv.h"

#include "recipe.h"

struct manager;

/* The manager of a recipe kind, NULL when the kind is not a manager's. Borrowed (static). */
const struct manager *manager_of(enum recipe_kind k);

/* The program run ("keepassxc-cli"). Borrowed (static). */
const char *manager_program(const struct manager *m);

/* The argv that reads r's secret, into *ret (empty on entry; the caller releases it).
 * -ENOMEM. */
int manager_argv(const struct manager *m, const struct recipe *r, struct strv *ret) _must_check_;

/* The value in the manager's standard output out: its first line for the stores that keep
 * more below it (pass, gopass, keepassxc), else the output minus one trailing newline; for
 * aws with a "field", that key of the JSON secret. Appended to value (a secret buffer). An
 * empty value is an error naming the reference. */
int manager_value(const struct manager *m, const struct recipe *r, const struct buf *out,
                  struct buf *value, struct err *e) _must_check_;

/* The error for a run that did not succeed (res: exit status, signal, timeout, standard
 * error): what ran, the manager's own words (the first line of standard error that is not a
 * prompt, at most about 300 characters) and the fix when the words are known. Returns the
 * error code set in e. */
int manager_failed(const struct manager *m, const struct recipe *r, const struct child_result *res,
                   int64_t timeout_ms, struct err *e);

/* The error for a manager whose program could not be started (not installed, not on PATH):
 * where to get it. start_error is child_run()'s code. Returns it. */
int manager_not_started(const struct manager *m, const struct recipe *r, int start_error,
                        struct err *e);
