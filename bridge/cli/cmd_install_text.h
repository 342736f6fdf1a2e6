/* cmd_install_text.h - one server added to or removed from an agent's configuration file, as
 * text.
 *
 * An agent's file is edited as text, not rewritten from a parsed document: a VS Code mcp.json
 * keeps its comments and trailing commas, a Codex config.toml every other table and comment,
 * and every file its layout. One edit adds or removes one server: for JSON (with or without
 * comments) a member of the servers' object, for TOML a [mcp_servers.NAME] table with its
 * sub-tables. mcp-bridge install decides what to add and remove (cmd_install.c); this does it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "credkit/buf.h"
#include "credkit/err.h"
#include "credkit/macro.h"

/* JSON text: the servers of text under the root's key, as a new object {NAME: value} in the
 * order of the file (jsonc: comments and trailing commas allowed, as VS Code reads it). An
 * empty text is an empty file: no servers. -EBADMSG with "line L, column C: ..." when the text
 * is not JSON, or its root or key is not an object. Caller puts *ret. */
int itext_json_servers(const char *text, size_t len, bool jsonc, const char *key,
                       struct json_object **ret, struct err *e) _must_check_;

/* Adds the member name: value under the root's key (created when absent; an empty text becomes
 * a document), after the last member, indented as that member. value is serialised pretty.
 * The text must hold no member name there (itext_json_remove() it first). */
int itext_json_add(struct buf *text, bool jsonc, const char *key, const char *name,
                   struct json_object *value, struct err *e) _must_check_;

/* Removes the member name under the root's key, with its separator. 1 removed, 0 not there. */
int itext_json_remove(struct buf *text, bool jsonc, const char *key, const char *name,
                      struct err *e) _must_check_;

/* TOML text (Codex): whether [mcp_servers.NAME] is a table header of text, so that the server
 * can be removed as a block of lines (a server written as dotted keys or an inline table
 * cannot). */
bool itext_toml_has_table(const char *text, size_t len, const char *name);

/* Removes the table [mcp_servers.NAME], its sub-tables, the comment lines just above it and one
 * blank line after it. 1 removed, 0 not there. */
int itext_toml_remove(struct buf *text, const char *name) _must_check_;

/* Appends the table [mcp_servers.NAME] of src (its sub-tables and the comment lines just above
 * it, as written there) after a blank line. 1 appended, 0 src has no such table. */
int itext_toml_append_from(struct buf *text, const char *src, size_t len,
                           const char *name) _must_check_;

/* Appends [mcp_servers.NAME] with command and args (NULL-terminated), after a blank line. */
int itext_toml_add(struct buf *text, const char *name, const char *command,
                   const char *const *args) _must_check_;
