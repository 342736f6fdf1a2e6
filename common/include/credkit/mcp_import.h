/* mcp_import.h - other MCP clients' configuration files, read as entries of mcp.json.
 *
 * A layer file of the configuration may say "imports": ["cursor", "claude-code", ...]: the
 * servers those clients have configured are then read from their own files, each mapped onto
 * the shape of an mcp.json entry so that the generic loader (credkit/mcp_config.h) validates it
 * like any other. This module knows, per client (cursor, claude-code, claude-desktop, vscode,
 * windsurf, codex), which files to read, where in them the servers are and how their keys
 * translate; the loader decides priority and validation. Within one import, the project's file
 * wins a clash over the user's. A missing file is not a problem; one that cannot be read, is
 * not of the expected shape or gives a key twice in one object is a diagnostic of the import,
 * and its servers are not used. docs/development.md, "Modules in detail", has each client's
 * files and keys. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

/* The names "imports" accepts, for messages: "cursor, claude-code, claude-desktop, vscode,
 * windsurf, codex". Static. */
const char *mcp_import_accepted(void);

/* Whether name is one of them. */
bool mcp_import_known(const char *name);

struct mcp_import;

/* Reads the files of import name. cwd (absolute; NULL: no project files) is the project
 * directory. -EINVAL with a message naming the accepted names when name is not one, -ENOMEM;
 * every problem with a file is a diagnostic of the result. Caller frees with mcp_import_free(). */
int mcp_import_read(const char *name, const char *cwd, struct mcp_import **ret,
                    struct err *e) _must_check_;
void mcp_import_free(struct mcp_import *im);

/* Told of each problem while a list is read: source is the file it is about (display path). A
 * negative return (-ENOMEM) stops the reading with it. */
typedef int (*mcp_import_diag_fn)(void *userdata, const char *source, const char *message);

/* Reads the imports that a layer file's "imports" value names (list: borrowed, any JSON; the
 * file's display path names it in messages), in the order listed, an import listed twice once,
 * at its first place. Every problem, with the list (not an array, an element that is not a
 * string, an unknown name) and with the imports' files, goes to diag; the rest is read. *ret is
 * a new array of *ret_n imports (n may be 0). -ENOMEM (or diag's error). Caller frees each with
 * mcp_import_free() and the array with free(). */
int mcp_import_read_list(struct json_object *list, const char *display, const char *cwd,
                         mcp_import_diag_fn diag, void *userdata, struct mcp_import ***ret,
                         size_t *ret_n) _must_check_;

/* The import's name ("cursor"). Borrowed. */
const char *mcp_import_name(const struct mcp_import *im);

/* The entries read, lowest priority first; a name may come more than once (from several files
 * of the import), the last one winning. Each is an object shaped as an mcp.json entry (or
 * whatever the file held where an entry should be: the loader says what is wrong with it).
 * Everything is borrowed from im. */
struct mcp_import_entry {
    const char *name;
    struct json_object *entry;
    const char *source; /* the display path of the file it came from */
    /* NULL-terminated notes that belong with the entry if it is used (a VS Code input read as a
     * secret), never NULL */
    char *const *notes;
    /* Which servers' object of the import it came from, counting from 1 in the order read:
     * tells apart two entries of one file (~/.claude.json's own and its project's). */
    unsigned part;
    /* The absolute path of that file, and whether it is a file of the project directory
     * (<cwd>/.cursor/mcp.json, <cwd>/.vscode/mcp.json): written by whoever wrote the project,
     * such an entry is untrusted until approved, as the project layers' own
     * (mcp_config_opts.trust). */
    const char *path;
    bool project;
};
size_t mcp_import_count(const struct mcp_import *im);
const struct mcp_import_entry *mcp_import_at(const struct mcp_import *im, size_t i);

/* Problems with the import's files, in the shape of the configuration's own. Borrowed. The
 * loader has them through mcp_import_read_list()'s diag; these are mcp_import_read()'s view. */
size_t mcp_import_diag_count(const struct mcp_import *im);
const struct mcp_config_diag *mcp_import_diag_at(const struct mcp_import *im, size_t i);

/* The files the import considered, in order, whether they exist or not. Borrowed absolute
 * paths. */
size_t mcp_import_file_count(const struct mcp_import *im);
const char *mcp_import_file_at(const struct mcp_import *im, size_t i, bool *ret_exists);

/* Whether the entry (a JSON object as written) runs mcp-bridge itself: its "command" is
 * mcp-bridge (any directory), or a launcher (npx, node, bunx, bun, pnpm, pnpx, npm, yarn, env)
 * whose "args" name it (a path ending in /mcp-bridge, or the npm package mcp-bridge, also
 * scoped or with a version). The loader skips such an entry: the bridge must never start
 * itself. */
bool mcp_import_runs_bridge(struct json_object *entry);
