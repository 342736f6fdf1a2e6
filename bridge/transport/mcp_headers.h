/* mcp_headers.h - the HTTP headers the 2026-07-28 revision mirrors from a request's body
 * (basic/transports/streamable-http.mdx, "Request Metadata"): Mcp-Method (every request),
 * Mcp-Name (tools/call and prompts/get: params.name; resources/read: params.uri) and
 * Mcp-Param-{Name} for the tool parameters a server marked with "x-mcp-header" in the tool's
 * inputSchema.
 *
 * Values: a string as it is, an integer in decimal, a boolean as true/false; a value that is
 * not plain visible ASCII (0x21-0x7E, with spaces or tabs inside only), or that looks like the
 * sentinel itself, is sent as "=?base64?{base64 of its UTF-8}?=".
 *
 * "x-mcp-header" markings: a name of HTTP token characters (RFC 9110 tchar), unique within the
 * schema ignoring case, on a property of type string, integer or boolean that is reached from
 * the schema's root through "properties" keys only (never through items, oneOf, $ref, ...). A
 * tool with any other marking is invalid: the caller leaves it out of the tools it hands on.
 * Pure functions; no I/O. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "credkit/macro.h"
#include "credkit/strv.h"

#define MCP_HEADERS_MAX_DEPTH 32 /* of an inputSchema walked for markings */

/* The header form of value[0..len): a new string, plain or "=?base64?...?=". NULL on ENOMEM. */
char *mcp_header_encode(const char *value, size_t len) _must_check_;

/* Whether a header value can be sent as it is (no encoding needed). */
bool mcp_header_plain(const char *value, size_t len);

/* The "x-mcp-header" markings of a tool definition ({"name", "inputSchema", ...}): 0 with
 * *ret a new array of [header, key, key, ...] arrays (the header's name, then the chain of
 * property names leading to the parameter), NULL when the tool marks none; -EINVAL when a
 * marking is invalid, with *why a new sentence saying which and why ("x-mcp-header 'My Region'
 * of 'value' is not an HTTP token"); -ENOMEM. */
int mcp_headers_tool_params(struct json_object *tool, struct json_object **ret,
                            char **why) _must_check_;

/* Appends "Name: value" lines for a request to out: Mcp-Method, Mcp-Name where the method has
 * one, and, for tools/call, Mcp-Param-{Name} for each marking in params_map (an array as
 * mcp_headers_tool_params() gives; NULL: none) whose parameter has a value in
 * params.arguments (null, objects, arrays and non-integer numbers send nothing). -ENOMEM. */
int mcp_headers_for_request(const char *method, struct json_object *params,
                            struct json_object *params_map, struct strv *out) _must_check_;
