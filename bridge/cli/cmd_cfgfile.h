/* cmd_cfgfile.h - one mcp.json being changed by mcp-bridge add or remove.
 *
 * A configuration file opened for a change is locked (the directory that holds it, so no lock
 * file is left in a project), read, and checked to be safe to change: JSON, an object at the
 * root, "mcpServers" and the older "servers" objects when present. Entries are then put or
 * deleted, and the file replaced atomically through credkit/jsonfile.h: every other entry and
 * key stays as it was, in its order; a failed write leaves the file as it was. A symlinked
 * mcp.json (dotfiles) stays a symlink: its target is replaced. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"

#define CFG_FILE_MAX (4u * 1024u * 1024u) /* what the loader reads, too */

struct cfg_file;

/* Locks path's directory (creating it, private, when missing and create_dir) and reads the
 * file: an absent one is an empty object, written with new_mode if it comes to be written (an
 * existing file keeps its own mode). -EBADMSG or -E2BIG (with the reason) when the file cannot
 * be changed safely; -ETIMEDOUT when another add or remove holds the lock. path is made
 * absolute. Caller frees with cfg_file_free(). */
int cfg_file_open(const char *path, bool create_dir, mode_t new_mode, struct cfg_file **ret,
                  struct err *e) _must_check_;

/* Releases the lock without writing. NULL-safe. */
void cfg_file_free(struct cfg_file *f);

/* The file's path for messages, as the loader names it. Borrowed. */
const char *cfg_file_display(const struct cfg_file *f);

/* The whole document, for the loader to check. Borrowed. */
struct json_object *cfg_file_doc(struct cfg_file *f);

/* Whether the file defines name, under either root key. */
bool cfg_file_defines(const struct cfg_file *f, const char *name);

/* Sets name to entry (a reference is taken; the caller still puts its own): under
 * "mcpServers" unless the file is in the older format, and away from the other key, where a
 * replaced entry would linger. 0 or -ENOMEM. */
int cfg_file_put(struct cfg_file *f, const char *name, struct json_object *entry) _must_check_;

/* Deletes name under both root keys. */
void cfg_file_delete(struct cfg_file *f, const char *name);

/* Replaces the file when the document changed. 0, or the write's error (the file as it was). */
int cfg_file_commit(struct cfg_file *f, struct err *e) _must_check_;

/* Whether the document at path defines name, read without the lock (for a question asked
 * before it is taken, or a search). 1 yes, 0 no, or json_read_file()'s error (-ENOENT...). */
int cfg_path_defines(const char *path, const char *name, struct err *e) _must_check_;

/* Reports why cfg_file_open() failed ("... (nothing was changed)"); returns the exit status:
 * a file whose content cannot be changed safely is a configuration error the user fixes,
 * anything else a failure. */
int cfg_file_open_failed(struct log *log, int r, const struct err *e);
