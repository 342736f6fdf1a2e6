/* request.h - what another program hands to `secrets resolve --json --stdin`.
 *
 * The bridge's "!command" values (the pi adapter's form of a value that is a command's output)
 * are run here, by the runner of command recipes (its timeout, its 1 MiB bound, its trimming),
 * never by a shell of the bridge's own and never in an argv. The request is one JSON object on
 * stdin, {"version": 1, "commands": {"NAME": "shell command", ...}}; each command is answered
 * under its NAME in the same answer as the names given as arguments. Such a command is never
 * cached, and a failure says how it ended without quoting its stderr. The request may also ask,
 * in "bearerStores": {"NAME": {"server": S, "url": URL}}, for the token pi-mcp-adapter stored
 * for S and bound to URL (bearer_store.h), answered under NAME the same way. */
#pragma once

#include <stddef.h>

#include "credkit/helper_answer.h"
#include "credkit/macro.h"

#include "cli.h"

struct json_object; /* json-c */

#define REQUEST_MAX (64 * 1024) /* the request on stdin */

/* Reads and checks the request: EXIT_OK and *ret (the caller frees with request_free()), or
 * another exit status with the reason said. */
int request_read(struct cli *c, struct json_object **ret) _must_check_;

/* Runs each command (and reads each store token) of req whose name is not among
 * skip[0..n_skip) (names asked for as arguments answer for themselves) into answer; one that
 * fails sets *status to EXIT_FAILED. -ENOMEM. */
int request_resolve(struct cli *c, struct json_object *req, const char *const *skip, size_t n_skip,
                    struct helper_secrets *answer, int *status) _must_check_;

/* Wipes the commands (one may hold a secret of its own) and frees. NULL-safe. */
void request_free(struct json_object *req);
