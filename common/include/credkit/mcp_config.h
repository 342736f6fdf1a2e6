/* mcp_config.h - the layered MCP server configuration (mcp.json files).
 *
 * Layers, lowest to highest priority: the bundled file, ~/.config/mcp/mcp.json,
 * ~/.pi/agent/mcp.json (or opts.config_path instead), then the project's .mcp.json and
 * .pi/mcp.json in opts.cwd. A higher layer replaces a whole entry of the same name; "settings"
 * keys merge key by key, higher wins. A layer may import other clients' files
 * (credkit/mcp_import.h), ranked just below its own entries. Validation is per entry
 * (credkit/mcp_entry.h): an invalid entry is kept with its reason and every other entry still
 * works; keys common/ does not know stay in the entry's `raw` for the tools, which may register
 * check_entry / check_settings to have them checked at load time. A key given twice in one
 * object is reported, never resolved. ${VAR} references are kept as written and expanded once
 * at load time to validate; a consumer expands again whenever it connects.
 * docs/development.md, "Modules in detail", has the layers, imports, validation, duplicate keys
 * and templates in full. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/mcp_entry.h"
#include "credkit/mcp_template.h"

/* A tool's check of its own keys in one entry, called while the configuration loads for the
 * winning entry of each name once its generic keys are valid, before its variables are expanded.
 * raw is the entry (an object, borrowed). -EINVAL (or another negative errno) with the reason,
 * without file and server, makes the entry invalid with that reason; -ENOMEM fails the load.
 * 1: valid, with warnings in e, one a line (mcp_field_warn()), added to the entry's warnings. */
typedef int (*mcp_check_entry_fn)(void *userdata, const char *name, struct json_object *raw,
                                  struct err *e);

/* A tool's check of one layer's "settings" object (borrowed). An error is a diagnostic of that
 * file ("'<file>': <reason>: it is ignored") and that layer's settings are left out of the merge;
 * -ENOMEM fails the load. 1: valid, with warnings in e, one a line (mcp_field_warn()), each a
 * diagnostic of the file ("'<file>': <warning>"); the settings merge. The check may delete
 * members of settings before they merge: a setting with a bad value dropped alone (with its
 * warning) leaves the lower layers' value in force and the rest of the object standing. */
typedef int (*mcp_check_settings_fn)(void *userdata, struct json_object *settings, struct err *e);

/* Whether an entry written by whoever wrote the project may be used. A project-layer file
 * (.mcp.json, .pi/mcp.json) or a project file of an import can start commands and send the
 * values of ${VAR}s where it likes: such an entry is used only once the user approved it as it
 * is (the approvals: credkit/mcp_trust.h). The levels of trust an entry has: */
enum mcp_trust {
    MCP_TRUST_TRUSTED,   /* not written by the project: bundled, shared, user, --config */
    MCP_TRUST_APPROVED,  /* a project's entry, approved as it is now */
    MCP_TRUST_UNTRUSTED, /* a project's entry never approved */
    MCP_TRUST_CHANGED,   /* a project's entry approved once, changed since */
};

/* "trusted", "approved", "untrusted", "changed". Static. */
const char *mcp_trust_name(enum mcp_trust t);

/* Asked for the winning entry of each name that a project wrote, before anything of it is
 * looked at: name, path (the absolute path of the file that holds it) and the entry as written
 * (borrowed). Returns MCP_TRUST_APPROVED, MCP_TRUST_UNTRUSTED or MCP_TRUST_CHANGED, or -ENOMEM.
 * An entry that is not approved is kept inert, as an invalid entry whose reason says so (with
 * opts.trust_hint): its variables are never looked up, no tool starts it. */
typedef int (*mcp_trust_fn)(void *userdata, const char *name, const char *path,
                            struct json_object *entry);

struct mcp_config_opts {
    const char *config_path;  /* replaces ~/.pi/agent/mcp.json (--config); NULL: default */
    const char *cwd;          /* for the project layers and the project files of imports
                               * (.cursor/, .vscode/, ~/.claude.json's projects); NULL: none */
    const char *bundled_path; /* NULL: no bundled layer */
    mcp_lookup_fn lookup;     /* NULL: the process environment */
    void *lookup_userdata;
    mcp_check_entry_fn check_entry;       /* NULL: no check beyond the generic entry */
    mcp_check_settings_fn check_settings; /* NULL: every layer's settings merge */
    void *check_userdata;                 /* for both checks */
    /* A ${VAR} the lookup does not know leaves the entry valid: it is only listed in
     * missing_vars, for a tool that resolves the names itself later (the bridge asks `secrets`
     * at each connect), and the URL is checked then. false: the entry is invalid. */
    bool defer_vars;
    /* NULL: every entry is trusted, the project's too (a tool that reads the configuration
     * without connecting to anything, or that keeps approvals of its own). */
    mcp_trust_fn trust;
    void *trust_userdata;
    const char *trust_hint; /* what an inert entry's reason says to do ("run mcp-bridge trust") */
};

/* A problem with a whole file (not JSON, root not an object, unreadable), or a note about one of
 * its entries that is not used (skipped: it runs the bridge itself); or, warning set, something
 * odd in a file that leaves its servers in use (a setting ignored, "claudePlugins"). */
struct mcp_config_diag {
    char *source; /* display path */
    char *message;
    bool warning; /* the file's servers are used all the same */
};

struct mcp_config;

/* Loads every layer (opts NULL: no bundled, no project layers, the environment). Fails only on
 * ENOMEM or an unusable opts.config_path (given explicitly and missing: -ENOENT with a message);
 * everything else becomes a per-file diagnostic or a per-entry error. Only the winning entry of
 * each name is validated, checked and expanded (lookup and check_entry are never called for a
 * replaced one). Caller frees with mcp_config_free(). */
int mcp_config_load(const struct mcp_config_opts *opts, struct mcp_config **ret,
                    struct err *e) _must_check_;
void mcp_config_free(struct mcp_config *c);

/* Loads one configuration held in memory instead of the layers: root has the shape of an
 * mcp.json file ("mcpServers"/"servers", "settings") and is validated and expanded exactly like
 * one (through opts->lookup and opts' checks; the paths of opts are not used). source names it
 * in messages (e.g. "command line"). A root, or a servers key, that is not an object is a
 * diagnostic, as for a file. Lists no files. Fails only on ENOMEM or a NULL argument (-EINVAL).
 * root is borrowed. Caller frees with mcp_config_free(). */
int mcp_config_load_object(struct json_object *root, const char *source,
                           const struct mcp_config_opts *opts, struct mcp_config **ret,
                           struct err *e) _must_check_;

/* Entries after layering, sorted by name. Borrowed. */
size_t mcp_config_count(const struct mcp_config *c);
const struct mcp_server *mcp_config_at(const struct mcp_config *c, size_t i);
const struct mcp_server *mcp_config_find(const struct mcp_config *c, const char *name);

/* Of the entry at i: how far it is trusted (MCP_TRUST_TRUSTED when opts.trust was NULL), and
 * the absolute path of the file that holds it (the source given to mcp_config_load_object()
 * for one loaded from memory). Borrowed. */
enum mcp_trust mcp_config_trust_at(const struct mcp_config *c, size_t i);
const char *mcp_config_path_at(const struct mcp_config *c, size_t i);

/* The "settings" of every layer merged key by key, the highest layer winning; a null value does
 * not override, and a layer whose settings are not an object (or failed check_settings) adds
 * nothing. An object, empty when no layer has settings; NULL only for a NULL c. Borrowed. */
struct json_object *mcp_config_settings(const struct mcp_config *c);

size_t mcp_config_diag_count(const struct mcp_config *c);
const struct mcp_config_diag *mcp_config_diag_at(const struct mcp_config *c, size_t i);

/* The files that were considered, in layer order, whether they existed or not (for
 * `mcp-bridge list` and `add`). Borrowed absolute paths. */
size_t mcp_config_file_count(const struct mcp_config *c);
const char *mcp_config_file_at(const struct mcp_config *c, size_t i, bool *ret_exists);

/* The other clients' files that the layers' "imports" considered, whether they existed or not,
 * each once, in the order they were first read (credkit/mcp_import.h). These are not layers: no
 * tool edits them. Borrowed absolute paths; *ret_import (may be NULL) the import's name
 * ("cursor"), static. */
size_t mcp_config_import_file_count(const struct mcp_config *c);
const char *mcp_config_import_file_at(const struct mcp_config *c, size_t i, const char **ret_import,
                                      bool *ret_exists);
