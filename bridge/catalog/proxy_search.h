/* proxy_search.h - the proxy tool's answers read off the catalogue (proxy.h has its modes).
 *
 * Each function takes the catalogue (borrowed) and plain values and appends compact text to a
 * buf the caller owns and bounds (PROXY_TEXT_MAX for one answer): the search and its guard on
 * regular expressions, one tool described with its parameters, a server's tools, a line of the
 * status, close names for a name that is not found. What a server's state is, and whether it
 * may be woken, is the downstream's (proxy_tool.h): the state comes in as a word. Nothing here
 * knows the loop, the upstreams or the downstream; unit-tested alone. Not thread-safe, as the
 * catalogue. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "credkit/buf.h"
#include "credkit/macro.h"
#include "credkit/strv.h"

#define PROXY_SEARCH_MAX 50             /* tools one search shows */
#define PROXY_REPEAT_MAX 100            /* the largest {n,m} bound in a regex */
#define PROXY_TEXT_MAX   (256u * 1024u) /* of one answer */
#define PROXY_LINE_DESC  100            /* bytes of a description on a one-line listing */
#define PROXY_PARAM_DESC 200            /* bytes of a parameter's description */

struct catalog;
struct catalog_source;
struct catalog_tool;

/* 0 when pattern may be compiled, else -EINVAL with the reason in err: longer than
 * PROXY_PATTERN_MAX (proxy.h), a back reference, a repetition of a group that repeats inside
 * (nested quantifiers: "(a+)+", "(a*){2}"), a bound over PROXY_REPEAT_MAX, groups nested deeper
 * than 32, a '[' that does not close. */
int proxy_regex_check(const char *pattern, char *err, size_t err_size) _must_check_;

/* The search's answer into out. query is space-separated terms, any of which matches a tool
 * whose exposed name, raw name or description contains it (case-insensitive); with regex, one
 * POSIX extended regular expression (case-insensitive, checked by proxy_regex_check()). Name
 * matches first, then description matches, each in the catalogue's order, at most
 * PROXY_SEARCH_MAX shown and the rest counted; schemas adds each inputSchema. A line says so
 * when none matches. 0, -EINVAL (no words, a refused or invalid pattern: err says why),
 * -ENOMEM, -E2BIG. */
int proxy_search(const struct catalog *c, const char *query, bool regex, bool schemas,
                 struct buf *out, char *err, size_t err_size) _must_check_;

/* The exposed names of the held tools (directTools "search": catalog_tool_found()) that the
 * search query (as proxy_search() reads it) matches, every one, appended to held. 0, -EINVAL
 * (err says why), -ENOMEM. */
int proxy_search_held(const struct catalog *c, const char *query, bool regex, struct strv *held,
                      char *err, size_t err_size) _must_check_;

/* The parameters of an inputSchema (borrowed; not an object: none), one line each:
 * "  name (type, required): description". 0, -ENOMEM, -E2BIG. */
int proxy_render_schema(struct json_object *schema, struct buf *out) _must_check_;

/* One tool's description and parameters (describe), the tool found by proxy_find_tool().
 * 0, -ENOENT when there is no such tool, -ENOMEM, -E2BIG. */
int proxy_describe(const struct catalog *c, const char *tool, struct buf *out) _must_check_;

/* The tools of src (server mode), exposed name and a one-line description each; state (may be
 * NULL) is said in the first line. 0, -ENOMEM, -E2BIG. */
int proxy_list_server(const struct catalog *c, const struct catalog_source *src, const char *state,
                      struct buf *out) _must_check_;

/* One line of the status: "name: state (reason), N tools". reason may be NULL; it is cut to
 * its first line and 300 bytes. 0, -ENOMEM, -E2BIG. */
int proxy_status_line(struct buf *out, const char *name, const char *state, const char *reason,
                      size_t n_tools) _must_check_;

/* The number of routable tools of src. */
size_t proxy_tool_count(const struct catalog *c, const struct catalog_source *src);

/* The routable tool called name: its exposed name, else the only tool whose raw name it is;
 * into *ret (may be NULL; catalog.h's struct catalog_tool, borrowed). false when none (or the
 * raw name is not unique). */
bool proxy_find_tool(const struct catalog *c, const char *name, struct catalog_tool *ret);

/* Up to max close names of name, comma-separated into out; nothing when none. Close as
 * credkit/suggest.h says (git's "did you mean"), to the exposed name or the raw one. 0, -ENOMEM,
 * -E2BIG. */
int proxy_suggest(const struct catalog *c, const char *name, size_t max,
                  struct buf *out) _must_check_;

/* Appends s cut to at most max bytes, on one line (its first, "..." when cut), at a character
 * boundary. 0, -ENOMEM, -E2BIG. */
int proxy_append_line(struct buf *out, const char *s, size_t max) _must_check_;
