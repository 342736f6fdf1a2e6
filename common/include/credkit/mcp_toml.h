/* mcp_toml.h - the MCP servers of Codex's ~/.codex/config.toml, and nothing else of TOML.
 *
 * Codex keeps its servers in tables [mcp_servers.NAME] (and [mcp_servers.NAME.env] for the
 * environment). No C TOML library is packaged for Debian, and a general TOML parser is more code
 * than this needs, so this is a strict reader of exactly that subset:
 *   - tables [mcp_servers.NAME] and sub-tables [mcp_servers.NAME.KEY] of strings (env, ...),
 *     keys bare (A-Za-z0-9_-) or quoted ("..." with escapes, '...' literal);
 *   - in those tables, values: strings (basic and literal, single- and multi-line, with TOML's
 *     escapes), decimal integers, booleans, arrays of strings (over several lines, comments and
 *     a trailing comma allowed), inline tables of strings ({ KEY = "value", ... });
 *   - comments and blank lines anywhere.
 * Anything else in those tables (floats, dates, nested arrays or tables, dotted keys, arrays of
 * tables, a key or a table defined twice) is an error naming its line. The rest of the file
 * (Codex's other settings) is not read but skipped: its values are scanned just far enough to
 * know where they end (strings of every kind, nested arrays and inline tables, bare scalars),
 * and a syntax error there is an error too, since what follows could not be trusted. */
#pragma once

#include <stddef.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#define MCP_TOML_MAX_DEPTH 32 /* arrays and inline tables nested in skipped values */

/* Reads text[0..len) (UTF-8; a NUL byte or invalid UTF-8 is an error) into a new object
 * {NAME: {KEY: VALUE, ...}, ...}, one member per [mcp_servers.NAME] table in the order of the
 * file, each KEY as written in TOML (the mapping onto mcp.json keys is the caller's), each VALUE
 * a JSON string, integer (int64), boolean, array of strings, or object of strings (an inline
 * table or a sub-table). An object with no members when the file has no MCP servers.
 * -EBADMSG with "line L: <what>" (never quoting a value: values may be secrets), -ENOMEM.
 * Caller puts *ret (json_wipe_strings() first: env values may be secrets). */
int mcp_toml_read_servers(const char *text, size_t len, struct json_object **ret,
                          struct err *e) _must_check_;
