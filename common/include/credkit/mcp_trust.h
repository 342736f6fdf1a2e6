/* mcp_trust.h - the approvals of the entries a project wrote.
 *
 * A cloned repository's .mcp.json or .pi/mcp.json (and the project files of imports) can start
 * commands and send the values of ${VAR}s where it likes, so the loader keeps such an entry
 * inert until the user approved it (credkit/mcp_config.h, mcp_config_opts.trust). An approval
 * is the SHA-256 of the entry's effective content: its name, the absolute path of its file and
 * the entry as canonical JSON (keys sorted, no blanks). An entry changed in any way has another
 * digest and needs approval again; an approval names the one server of the one file it was
 * given for, so the secrets a project entry refers to are resolved only for that server.
 *
 * The approvals live in the agent directory, ~/.pi/agent/mcp-trust.json (0600, its directory
 * 0700), changed under a lock and replaced atomically (credkit/jsonfile.h):
 *   {"version": 1, "approvals": [{"project": DIR, "file": PATH, "server": NAME,
 *                                 "sha256": HEX, "approvedAt": EPOCH-SECONDS}]}
 * project is the directory the approval was given in (what --revoke names). */
#pragma once

#include <stddef.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

#define TRUST_FILE "mcp-trust.json"
#define TRUST_HEX  65 /* 64 hex digits and the NUL */

/* The digest of an entry: name, path (absolute) and the entry as written (borrowed), into hex
 * (lowercase). 0, -ENOMEM, or -E2BIG for an entry whose canonical form exceeds the loader's
 * size bound. */
int trust_digest(const char *name, const char *path, struct json_object *entry,
                 char hex[TRUST_HEX]) _must_check_;

struct trust_store;

/* Reads the approvals: path NULL for ~/.pi/agent/mcp-trust.json. A missing file holds none.
 * -EBADMSG (not JSON, not of the shape above), -EACCES (open to others, not yours), -ENOMEM
 * ... with the message; the caller then trusts no project entry. Caller frees with
 * trust_store_free(). */
int trust_store_load(const char *path, struct trust_store **ret, struct err *e) _must_check_;
void trust_store_free(struct trust_store *t);

/* The loader's mcp_trust_fn; userdata is a struct trust_store (NULL: nothing approved). */
int trust_check(void *userdata, const char *name, const char *path, struct json_object *entry);

/* One approval to record. */
struct trust_approval {
    const char *server;
    const char *file;
    const char *digest;
};

/* Records the approvals, given in project (absolute), replacing any older one of the same
 * server and file. path NULL: the default file. 0, or the error with a message (the file as it
 * was). */
int trust_approve(const char *path, const char *project, const struct trust_approval *a, size_t n,
                  struct err *e) _must_check_;

/* Removes every approval given in project: *ret_n how many. 0 or the error (the file as it
 * was). */
int trust_revoke(const char *path, const char *project, size_t *ret_n, struct err *e) _must_check_;
