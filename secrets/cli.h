/* cli.h - what the secrets commands share: the context they run in and the exit statuses.
 *
 * Exit statuses (docs/secrets.md):
 *   0  success (every name resolved)
 *   1  some names did not resolve / the operation failed
 *   2  usage error
 *   3  could not run: configuration error (malformed secrets.json, unusable agent directory)
 *   exec only: 125 secrets itself failed, 126 the command could not be run, 127 not found,
 *   else the command's own status. */
#pragma once

#include <getopt.h>

#include <stdbool.h>

#include "credkit/jsonfile.h"
#include "credkit/log.h"

#include "cache.h"
#include "resolve.h"
#include "store.h"

enum {
    EXIT_OK = 0,
    EXIT_FAILED = 1,
    EXIT_USAGE = 2,
    EXIT_CONFIG = 3,
    EXIT_EXEC_SELF = 125,
    EXIT_EXEC_CANNOT = 126,
    EXIT_EXEC_NOTFOUND = 127,
};

struct cli {
    struct log *log;
    char *agent_dir;
    char *store_path;
    struct store *store;
    struct cache *cache;
    struct resolver *rs;
    unsigned resolve_flags;
    bool answered; /* the command's --json answer is on stdout, even if it failed */
};

/* Loads the store, opens the cache and the resolver. Reports errors itself; returns an exit
 * status (EXIT_OK on success). */
int cli_open(struct cli *c);

/* cli_open() for a command that changes secrets.json: the file is locked ("<path>.lock"),
 * read, and the store opened on the document read, so that c->store's changes are written by
 * jsonfile_commit(*ret). The caller frees *ret (which releases the lock). Reports errors;
 * returns an exit status (EXIT_OK on success, *ret then set). */
int cli_open_locked(struct cli *c, struct jsonfile **ret);
void cli_close(struct cli *c);

/* Logs the formatted message at level with every character that could act on a terminal
 * escaped (credkit/textsafe.h): messages quote names, commands, paths, labels and the standard
 * error of commands, which come from files and programs anyone may have written. Every message
 * of the secrets commands goes through here. */
void cli_say(struct cli *c, enum log_level level, const char *fmt, ...) _printf_(3, 4);
#define cli_error(c, ...) cli_say((c), LOG_ERROR, __VA_ARGS__)
#define cli_warn(c, ...)  cli_say((c), LOG_WARN, __VA_ARGS__)
#define cli_info(c, ...)  cli_say((c), LOG_INFO, __VA_ARGS__)
#define cli_debug(c, ...) cli_say((c), LOG_DEBUG, __VA_ARGS__)

/* Reports the option getopt_long() just refused, as getopt would, by the command (argv[0],
 * "secrets get: unknown option '--no-newlin'; did you mean '--no-newline'? (see ...)");
 * returns EXIT_USAGE. */
int cli_option_error(struct cli *c, char *const *argv, const char *shortopts,
                     const struct option *opts);

/* "3 characters" style description of a value without showing it. */
void cli_mask(const char *value, size_t len, char *out, size_t size);

/* Whether a keychain recipe other than except_name points at label. */
bool cli_label_in_use(struct store *s, const char *label, const char *except_name);

/* Reads all of standard input into b (whose bound applies: -E2BIG past it), wiping what it
 * read on the way. -errno. */
int cli_read_stdin(struct buf *b);

/* The agent directory and secrets.json's path into c. An exit status. */
int cli_paths(struct cli *c);

/* Says the formatted message with "(see 'secrets --help')"; returns EXIT_USAGE. */
int usage_error(struct cli *c, const char *fmt, ...) _printf_(2, 3);

/* Writes p to standard output, whole; a reader gone away is not reported. */
void write_out(const char *p, size_t n);

/* main.c: the soft core-dump limit the process started with, put back for exec's command */
extern unsigned long long arg_core_soft;

/* The commands, one file each (configure.c, cmd_*.c), and the getopt_long() options that
 * main.c's command table also reads */
int cmd_configure(struct cli *c, int argc, char **argv);
extern const struct option configure_options[];
/* cmd_resolve.c: "get NAME", "resolve NAME..." */
int cmd_get(struct cli *c, int argc, char **argv);
extern const struct option get_opts[];
int cmd_resolve(struct cli *c, int argc, char **argv);
extern const struct option resolve_opts[];
/* cmd_list.c: "list" */
int cmd_list(struct cli *c, int argc, char **argv);
extern const struct option list_opts[];
/* cmd_remove.c: "remove NAME" */
int cmd_remove(struct cli *c, int argc, char **argv);
/* cmd_exec.c: "exec [NAME...] -- CMD" */
int cmd_exec(struct cli *c, int argc, char **argv);
