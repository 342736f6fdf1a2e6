/* cmd_remove.c - mcp-bridge remove NAME: one entry out of the file that defines it.
 *
 * The file searched is the highest layer that has the name (or the one --scope names); it is
 * changed under its lock and keeps every other entry and key (cmd_cfgfile.h). A lower layer
 * defining the same name applies afterwards, and the user is told. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/mcp_config.h"
#include "credkit/suggest.h"
#include "credkit/path.h"
#include "credkit/strv.h"

#include "cli/cli.h"
#include "cli/cmd_cfgfile.h"
#include "cli/cmd_config.h"

static const char remove_help[] =
    "usage: mcp-bridge remove NAME [--scope user|project]\n"
    "\n"
    "Remove the server NAME from the file that defines it: the highest layer that has it\n"
    "(the one 'mcp-bridge list' shows), or with --scope the user file (~/.pi/agent/mcp.json,\n"
    "or --config) or the project files (.pi/mcp.json, then .mcp.json). The file is replaced\n"
    "atomically and keeps every other entry and key. When a lower layer also defines NAME,\n"
    "that one applies afterwards, and you are told.\n"
    "\n"
    "exit status: 0 removed, 1 the file could not be written, 2 usage error, 3 not found (the\n"
    "files searched are named) or the file cannot be changed\n"
    "\n"
    "examples:\n"
    "  mcp-bridge remove github\n"
    "  mcp-bridge remove everything --scope project\n";

/* cli_load_config() without its warnings about files (at the default level): remove reports
 * the files it could not search itself, once, as not searched. */

const struct option cli_remove_options[] = {{"scope", required_argument, NULL, 's'}, {0}};

/* The command line: *ret_scope and *ret_name (borrowed from argv). -1 to go on, else the exit
 * status (help printed, or a usage error reported). */
static int remove_parse(int argc, char **argv, struct log *log, int *ret_scope,
                        const char **ret_name)
{
    int opt, scope = CFG_SCOPE_NONE;

    if (args_wants_help(argc, argv)) {
        fputs(remove_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    optind = 0;
    while ((opt = getopt_long(argc, argv, "", cli_remove_options, NULL)) != -1) {
        if (opt != 's')
            return cli_option_error(log, argv, "", cli_remove_options);
        if (cfg_parse_scope(log, "remove", optarg, &scope) != 0)
            return BRIDGE_EXIT_USAGE;
    }
    if (argc - optind != 1)
        return cfg_usage_error(log, "remove", "remove takes exactly one NAME");
    *ret_scope = scope;
    *ret_name = argv[optind];
    return -1;
}

/* The files to search, highest priority first: the scope's, else every layer of the loaded
 * configuration (*ret_c, which the caller frees; a file that cannot be read is reported by the
 * search, as not searched). -1 to go on, else the exit status (reported). */
static int remove_candidates(const struct args_globals *g, struct log *log, int scope,
                             struct strv *cands, struct mcp_config **ret_c)
{
    struct err e = ERR_INIT;
    char *p = NULL;
    int r = 0;

    if (scope == CFG_SCOPE_USER) {
        r = cfg_scope_path(CFG_SCOPE_USER, g, &p, &e);
        if (r >= 0)
            r = strv_push(cands, p);
    } else if (scope == CFG_SCOPE_PROJECT) {
        r = cfg_absolute_path(".pi/mcp.json", &p, &e);
        if (r >= 0)
            r = strv_push(cands, p);
        free(p);
        p = NULL;
        if (r >= 0)
            r = cfg_absolute_path(".mcp.json", &p, &e);
        if (r >= 0)
            r = strv_push(cands, p);
    } else {
        struct mcp_config *c = cfg_load_quietly(g, log);
        if (!c)
            return BRIDGE_EXIT_CONFIG;
        for (size_t i = mcp_config_file_count(c); r >= 0 && i-- > 0;)
            r = strv_push(cands, mcp_config_file_at(c, i, NULL));
        *ret_c = c;
    }
    free(p);
    if (r < 0) {
        log_error(log, "%s", e.msg[0] ? err_msg(&e) : strerror(-r));
        return r == -ENOMEM ? BRIDGE_EXIT_FAILED : BRIDGE_EXIT_CONFIG;
    }
    return -1;
}

/* Whether the document at path defines name; a file that cannot be read is not searched. */
static bool file_defines(const char *path, const char *name, struct log *log)
{
    struct err e = ERR_INIT;
    int r = cfg_path_defines(path, name, &e);
    if (r < 0 && r != -ENOENT)
        log_warn(log, "%s: not searched", err_msg(&e));
    return r > 0;
}

/* The first candidate that defines name into *ret_found (borrowed from cands). -1 to go on,
 * else the exit status (reported): not found (the files searched named), or found in the
 * bundled configuration, which belongs to the installation, not to the user. */
static int remove_find(const struct strv *cands, const struct mcp_config *c, const char *name,
                       struct log *log, const char **ret_found)
{
    struct buf searched;
    const char *found = NULL;
    int status = -1;

    buf_init(&searched, 16 * 1024);
    for (size_t i = 0; i < cands->n && !found && status < 0; i++) {
        char *d = path_display(cands->v[i]);
        if (!d || buf_printf(&searched, "%s'%s'", searched.len ? ", " : "", d) < 0) {
            log_error(log, "out of memory");
            status = BRIDGE_EXIT_FAILED;
        } else if (file_defines(cands->v[i], name, log)) {
            found = cands->v[i];
            const struct mcp_server *s = c ? mcp_config_find(c, name) : NULL;
            if (s && s->layer == MCP_LAYER_BUNDLED && strcmp(s->source, d) == 0) {
                log_error(log,
                          "'%s' comes with the bridge ('%s') and cannot be removed; an entry of "
                          "the same name in your own file replaces it",
                          name, d);
                status = BRIDGE_EXIT_CONFIG;
            }
        }
        free(d);
    }
    if (status < 0 && !found) {
        struct buf close;
        struct suggest sg;
        buf_init(&close, 4096);
        suggest_init(&sg, name);
        for (size_t i = 0; c && i < mcp_config_count(c); i++)
            suggest_add(&sg, mcp_config_at(c, i)->name);
        if (suggest_append(&sg, NULL, &close) < 0)
            buf_reset(&close);
        log_error(log, "no server named '%s' in %s (nothing was changed)%s", name,
                  searched.len ? buf_str(&searched) : "any configuration file", buf_str(&close));
        suggest_release(&sg);
        buf_release(&close);
        status = BRIDGE_EXIT_CONFIG;
    }
    buf_release(&searched);
    if (status < 0)
        *ret_found = found;
    return status;
}

/* Deletes name from the file at path, under its lock. The exit status (reported). */
static int remove_from(const char *path, const char *name, struct log *log)
{
    struct cfg_file *f = NULL;
    struct err e = ERR_INIT;
    int r, status = BRIDGE_EXIT_CONFIG;

    r = cfg_file_open(path, false, 0600, &f, &e);
    if (r < 0)
        return cfg_file_open_failed(log, r, &e);
    if (!cfg_file_defines(f, name)) {
        /* changed between the search and the lock */
        log_error(log, "no server named '%s' in '%s' any more (nothing was changed)", name,
                  cfg_file_display(f));
        goto out;
    }
    cfg_file_delete(f, name);
    r = cfg_file_commit(f, &e);
    if (r < 0) {
        log_error(log, "%s (the file is as it was)", err_msg(&e));
        status = BRIDGE_EXIT_FAILED;
        goto out;
    }
    log_info(log, "removed '%s' from '%s'", name, cfg_file_display(f));
    status = BRIDGE_EXIT_OK;
out:
    cfg_file_free(f);
    return status;
}

int cmd_remove(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    struct mcp_config *c = NULL;
    struct strv cands = STRV_INIT;
    const char *name = NULL, *found = NULL;
    int scope = CFG_SCOPE_NONE;

    int status = remove_parse(argc, argv, log, &scope, &name);
    if (status < 0)
        status = remove_candidates(g, log, scope, &cands, &c);
    if (status < 0)
        status = remove_find(&cands, c, name, log, &found);
    if (status >= 0)
        goto out;
    status = remove_from(found, name, log);
    if (status == BRIDGE_EXIT_OK) {
        /* a lower layer may define the same name: it applies now */
        mcp_config_free(c);
        c = cfg_load_quietly(g, log);
        const struct mcp_server *s = c ? mcp_config_find(c, name) : NULL;
        if (s)
            log_warn(log, "'%s' is still defined in '%s', which applies now", name, s->source);
    }
out:
    mcp_config_free(c);
    strv_release(&cands);
    return status;
}
