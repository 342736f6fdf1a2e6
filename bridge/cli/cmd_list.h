/* cmd_list.h - the pieces of `mcp-bridge list` (cmd_list.c) below its command line: the report
 * printed as text or as JSON from a loaded configuration and its credentials report
 * (cmd_creds.h), the file display paths entries are named by, and the LIFECYCLE column.
 * cmd_list() (cli.h) loads, asks the helpers and calls these; the tests call them on
 * configurations built by hand. */
#pragma once

#include "credkit/buf.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"
#include "credkit/strv.h"

#include "cli/cmd_client.h"
#include "cli/cmd_creds.h"
#include "config/server_config.h"

/* The display paths of the files c considered, in the order of mcp_config_file_at() and then
 * of mcp_config_import_file_at(), appended to *ret (the caller's to release): entries and
 * diagnostics name files by them. -ENOMEM. */
int list_file_displays(const struct mcp_config *c, struct strv *ret) _must_check_;

/* The LIFECYCLE column of an entry, appended to out: "lazy 10m", "eager never" (idleTimeout 0),
 * "keep-alive"; "-" for an invalid entry. -E2BIG, -ENOMEM. */
int list_lifecycle_text(const struct mcp_server *s, const struct server_settings *st,
                        struct buf *out) _must_check_;

/* The report on stdout: the table, the details of each entry, the files, the problems with
 * files (text), or one JSON object (displays: list_file_displays() of c). rep: the
 * credentials of c's entries; probes: what --check found, one per entry of c (NULL: not
 * checked). -ENOMEM (-E2BIG). */
int list_text(const struct mcp_config *c, const struct cmd_creds_report *rep,
              const struct client_probe *probes) _must_check_;
int list_json(const struct mcp_config *c, const struct cmd_creds_report *rep,
              const struct strv *displays, const struct client_probe *probes) _must_check_;

/* Whether a valid stdio entry's command is not where the bridge's spawn would look for it
 * (path_find_program(): execvp's lookup, from the entry's "cwd" when that has no ${VAR}). A
 * command that holds a ${VAR} cannot be told: it counts as found. list's "not installed". */
bool list_not_installed(const struct mcp_server *s);
