/* mcp_toml.h - the MCP servers of Codex's ~/.codex/config.toml, and nothing else of TOML.
 *
 * Codex keeps its servers in the table mcp_servers: [mcp_servers.NAME] tables, their sub-tables
 * ([mcp_servers.NAME.env], [mcp_servers.NAME.tools.TOOL]), dotted keys, inline tables. No C
 * TOML library is packaged for Debian, so this reads what TOML can say under mcp_servers:
 *   - tables and sub-tables, dotted keys (a.b = ...), keys bare (A-Za-z0-9_-) or quoted;
 *   - strings (basic and literal, single- and multi-line, with TOML's escapes), integers
 *     (decimal, hexadecimal, octal, binary, with '_'), floats (fraction, exponent, '_'),
 *     booleans, arrays of any of these (over several lines, comments and a trailing comma
 *     allowed), inline tables on one line, nested;
 *   - comments and blank lines anywhere.
 * A value that is valid TOML but not read (inf, nan, a date or time, a number out of range, an
 * array of tables under a server) is left out with a note, the rest read. The rest of the file
 * (Codex's other settings) is only scanned to find where its values end. A syntax error
 * anywhere (or a key or table defined twice) fails the whole text: what follows could not be
 * trusted. */
#pragma once

#include <stddef.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#define MCP_TOML_MAX_DEPTH 32 /* arrays and inline tables nested in skipped values */

/* Reads text[0..len) (UTF-8; a NUL byte or invalid UTF-8 is an error) into a new object
 * {NAME: {KEY: VALUE, ...}, ...}, the table mcp_servers in the order of the file, each KEY as
 * written in TOML (the mapping onto mcp.json keys is the caller's), each VALUE a JSON string,
 * integer (int64), double, boolean, array or object; a value not read is a JSON null there.
 * *ret_notes says why, {NAME: {KEY: "line L: 'KEY': <why>"}}: KEY the dotted path below the
 * server ("tools.search.approval_mode"; "" for the server itself, "line L: <why>"). Objects
 * with no members when the file has no MCP servers. -EBADMSG with "line L: <what>" (never
 * quoting a value: values may be secrets), -ENOMEM. Caller puts *ret (json_wipe_strings()
 * first: env values may be secrets) and *ret_notes. */
int mcp_toml_read_servers(const char *text, size_t len, struct json_object **ret,
                          struct json_object **ret_notes, struct err *e) _must_check_;
