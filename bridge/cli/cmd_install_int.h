/* cmd_install_int.h - what mcp-bridge install and uninstall share: the agents, the command's
 * state and report, the agent's file read and changed, the bridge's file, claude mcp.
 *
 * cmd_install.c holds the command, the agents' table, the report and install; cmd_uninstall.c
 * the way back. Both edit the agent's file through cmd_install_text.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <sys/types.h>

#include <json-c/json.h>

#include "credkit/buf.h"
#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/args.h"
#include "credkit/log.h"
#include "credkit/strv.h"

#include "cli/cmd_install_text.h"

#define ENTRY_NAME      "bridge"
#define BACKUP_SUFFIX   ".before-mcp-bridge"
#define RECORD_SUFFIX   ".mcp-bridge-moved.json"
#define LOCK_TIMEOUT_MS 10000
#define AGENT_FILE_MAX  (64u * 1024u * 1024u) /* ~/.claude.json also keeps history */
#define CLI_TIMEOUT_MS  60000

enum agent_fmt { FMT_JSON, FMT_JSONC, FMT_TOML };

enum {
    AGENT_TYPE_STDIO = 1 << 0, /* the entry says "type": "stdio", as the agent writes it */
    AGENT_CLI = 1 << 1,        /* changed with 'claude mcp' when claude is installed */
    AGENT_PI = 1 << 2,         /* its file is the bridge's user layer: the bridge gets its own */
};

struct agent {
    const char *name;
    const char *home_rel; /* the user file under $HOME; NULL: see xdg_rel, or pi's */
    const char *xdg_rel;  /* under $XDG_CONFIG_HOME (default ~/.config) */
    const char *project;  /* the project file under the working directory; NULL: none */
    const char *key;      /* where the servers are */
    enum agent_fmt fmt;
    const char *import; /* the import that reads the file (the moved entries' translation) */
    unsigned flags;
};

struct inst {
    const struct agent *a;
    bool project, dry_run, json, uninstall;
    char *file, *file_disp; /* the agent's file, absolute, and for messages */
    char *side, *side_disp; /* its backup, or (claude mcp) the record of the moved servers */
    char *dest, *dest_disp; /* the bridge's file the servers move to */
    char *exe;              /* this mcp-bridge */
    struct strv args;       /* the entry's arguments */
    char *claude;           /* the claude CLI, when it is used */
    struct json_object *changes, *notes; /* the report */
};

struct cfg_file;

/* The report: one change ("added", "removed", "moved", "put_back", "restored", "backup",
 * "record") of server (NULL: the file's) in file, other the file it went to or came from; a
 * note. 0 or -ENOMEM. */
int inst_change(struct inst *in, const char *action, const char *server, const char *file,
                const char *other) _must_check_;
int inst_note(struct inst *in, const char *fmt, ...) _printf_(2, 3) _must_check_;

/* The agent's file: read (a missing one is empty, *ret_exists false; *ret_mode its
 * permissions), its servers as an object (caller puts), one removed (1, or 0 when absent). */
int inst_read_text(const char *path, struct buf *t, bool *ret_exists, mode_t *ret_mode,
                   struct err *e) _must_check_;
int inst_servers_of_text(const struct inst *in, const struct buf *t, struct json_object **ret,
                         struct err *e) _must_check_;
int inst_text_remove(const struct inst *in, struct buf *t, const char *name,
                     struct err *e) _must_check_;
/* Replaces the agent's file with data, atomically (file_write_atomic()): a file that is a
 * symbolic link (dotfiles) stays one, its target replaced. */
int inst_write_file(const struct inst *in, const char *data, size_t len, mode_t mode,
                    struct err *e) _must_check_;
/* What install does to the text: the servers moved out, our entry in when add_entry. */
int inst_transform(const struct inst *in, struct buf *t, char *const *moved, bool add_entry,
                   struct err *e) _must_check_;

/* The server name of the bridge's file f (NULL-safe), borrowed; NULL when absent. */
struct json_object *inst_dest_entry(struct cfg_file *f, const char *name);

/* Claude Code: its servers of the scope (caller puts); the record of the moved servers,
 * {version, servers} (empty when there is none; caller puts); claude mcp remove, and add-json
 * with the entry on stdin. */
int inst_claude_servers(const struct inst *in, struct json_object **ret,
                        struct err *e) _must_check_;
int inst_read_record(const struct inst *in, struct json_object **ret, struct err *e) _must_check_;
int inst_claude_remove(const struct inst *in, const char *name, struct err *e) _must_check_;
int inst_claude_add_json(const struct inst *in, const char *name, struct json_object *v,
                         struct err *e) _must_check_;

/* The steps of one command: install's (cmd_install.c) or uninstall's (cmd_uninstall.c), for a
 * file and through claude mcp; df the bridge's file (NULL when absent). */
struct inst_way {
    bool uninstall;
    int (*file)(struct inst *in, struct cfg_file *df, struct err *e);
    int (*claude)(struct inst *in, struct cfg_file *df, struct err *e);
};
/* Parses the command line, finds the files, takes the lock, runs way's step and prints the
 * report: the exit status. */
int inst_run(int argc, char **argv, const struct args_globals *g, struct log *log,
             const struct inst_way *way) _must_check_;
