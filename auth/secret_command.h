/* secret_command.h - a "!command" value of the settings (oauth.clientSecret), run by `secrets`.
 *
 * The pi adapter lets a secret setting be a command's output: "!command" ("!!x" is the literal
 * "!x"). mcp-auth runs no shell of its own for it: it hands the command to `secrets resolve
 * --json --stdin` in the commands request (docs/helper-protocol.md), as mcp-bridge does, so the
 * command is never in an argv or a log, runs with the timeout and output bound of a command
 * recipe, and its value comes back in the secrets answer, wiped once used. `secrets` is found as
 * the bridge finds it (path_find_helper: $CREDKIT_SECRETS, next to mcp-auth, on PATH). */
#pragma once

#include "credkit/err.h"
#include "credkit/macro.h"

/* The output of cmd (the text after the '!'), run through `secrets`. what names the setting in
 * messages ("oauth.clientSecret of 'NAME'"). -ENOENT when the command gave no value or
 * `secrets` cannot be run, each with a message that never holds the command or a value.
 * Caller secure_free()s *ret. */
int secret_command_run(const char *cmd, const char *what, char **ret, struct err *e) _must_check_;

/* An mcp_lookup_fn that asks `secrets resolve` for NAME (its recipe, else the environment
 * variable NAME), the environment for "env:NAME", and the environment alone when `secrets`
 * cannot be found: the values of the settings that name a secret ("clientKey"). userdata
 * unused. Caller secure_free()s *ret. */
int secret_lookup(void *userdata, const char *name, char **ret, struct err *e) _must_check_;
