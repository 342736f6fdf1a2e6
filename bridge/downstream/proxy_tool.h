/* proxy_tool.h - the "mcp" tool: every server's tools through one tool, as the pi adapter has it.
 *
 * In aggregate mode the tools list starts with this tool (unless settings.disableProxyTool,
 * catalog.h). Its arguments pick one mode, the first of these that is given:
 *   tool + args     calls that tool (exposed name; a raw name that only one server has works
 *                   too) with args, a JSON object or a string holding one: a tools/call sent
 *                   down the same path as the agent's own (lazy servers wake, progress and
 *                   cancellation work); the answer is the tool's result
 *   connect         connects that server now (a lazy or idle one)
 *   describe        one tool: its description and parameters (name, type, required, text)
 *   search          tools whose exposed name, raw name or description contains any of the
 *                   space-separated terms (case-insensitive), name matches first, at most
 *                   PROXY_SEARCH_MAX; regex: true reads search as one POSIX extended regular
 *                   expression (case-insensitive, at most PROXY_PATTERN_MAX bytes, without back
 *                   references or nested repetition); includeSchemas adds each inputSchema
 *   server          that server's tools: exposed name and a one-line description
 *   (nothing)       every server's status (connected, connecting, idle, failed and why,
 *                   sign-in required and the command, disabled) and its tool count
 * Answers are compact text. Mistakes (an unknown server or tool, bad args, a refused pattern)
 * are tool results with isError that say what is wrong, with close names when there are some.
 *
 * The text-making parts take the catalogue and plain values and are unit-tested alone; only
 * proxy_tool_call() needs a downstream's agent. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "credkit/buf.h"
#include "credkit/macro.h"

#define PROXY_TOOL_NAME   "mcp"
#define PROXY_SEARCH_MAX  50             /* tools one search shows */
#define PROXY_PATTERN_MAX 256            /* bytes of a regex or a search */
#define PROXY_REPEAT_MAX  100            /* the largest {n,m} bound in a regex */
#define PROXY_TEXT_MAX    (256u * 1024u) /* of one answer */
#define PROXY_LINE_DESC   100            /* bytes of a description on a one-line listing */
#define PROXY_PARAM_DESC  200            /* bytes of a parameter's description */

struct catalog;
struct catalog_source;
struct ds_agent; /* downstream_int.h: the agent that called */

/* The proxy tool's definition: a Tool object (new reference; NULL on ENOMEM). */
struct json_object *proxy_tool_definition(void);

/* Handles a tools/call of the proxy tool of agent a (params: the call's params, borrowed; id
 * borrowed): answers a through ds_reply_result, or forwards the call it names. */
void proxy_tool_call(struct ds_agent *a, struct json_object *id, struct json_object *params);

/* Whether a call of the proxy tool with these params (borrowed) waits for the first lists to
 * settle, as a tools/call naming an unknown tool does: every mode but the status and connect,
 * which answer at once (and a call whose arguments are refused: it is answered at once). */
bool proxy_tool_waits(struct json_object *params);

/* ---- the parts (unit-tested) ------------------------------------------------------------- */

enum proxy_mode {
    PROXY_STATUS,
    PROXY_SERVER,
    PROXY_SEARCH,
    PROXY_DESCRIBE,
    PROXY_CONNECT,
    PROXY_CALL,
};

/* What one call of the proxy tool asks. */
struct proxy_request {
    enum proxy_mode mode;
    const char *target;       /* server, tool or search terms (borrowed from the arguments) */
    struct json_object *args; /* PROXY_CALL: the arguments object (owned reference) */
    bool regex;
    bool include_schemas;
};

/* Reads the tool call's arguments (an object or NULL; borrowed) into *ret (release with
 * proxy_request_release()). -EINVAL with the reason in err (a sentence for the agent): a mode
 * key that is not a string, args that are neither an object nor a string holding one, and the
 * like. -ENOMEM. */
int proxy_request_parse(struct json_object *arguments, struct proxy_request *ret, char *err,
                        size_t err_size) _must_check_;
void proxy_request_release(struct proxy_request *r);

/* 0 when pattern may be compiled, else -EINVAL with the reason in err: longer than
 * PROXY_PATTERN_MAX, a back reference, a repetition of a group that repeats inside (nested
 * quantifiers: "(a+)+", "(a*){2}"), a bound over PROXY_REPEAT_MAX. */
int proxy_regex_check(const char *pattern, char *err, size_t err_size) _must_check_;

/* The search's answer into out: the matches ranked (see above), or a line saying there are
 * none. 0, -EINVAL (a refused or invalid pattern: err says why), -ENOMEM, -E2BIG. */
int proxy_search(const struct catalog *c, const char *query, bool regex, bool schemas,
                 struct buf *out, char *err, size_t err_size) _must_check_;

/* The parameters of an inputSchema, one line each: "  name (type, required): description".
 * 0, -ENOMEM, -E2BIG. */
int proxy_render_schema(struct json_object *schema, struct buf *out) _must_check_;

/* One tool's description and parameters (describe). -ENOENT when there is no such tool. */
int proxy_describe(const struct catalog *c, const char *tool, struct buf *out) _must_check_;

/* The tools of the source named server (server mode); state (may be NULL) is said in the
 * first line. */
int proxy_list_server(const struct catalog *c, const struct catalog_source *src, const char *state,
                      struct buf *out) _must_check_;

/* One line of the status: "name: state (reason), N tools". reason may be NULL. */
int proxy_status_line(struct buf *out, const char *name, const char *state, const char *reason,
                      size_t n_tools) _must_check_;

/* The number of routable tools of src. */
size_t proxy_tool_count(const struct catalog *c, const struct catalog_source *src);

/* The routable tool called name: its exposed name, else the only tool whose raw name it is;
 * into *ret (catalog.h's struct catalog_tool). false when none (or the raw name is not
 * unique). */
struct catalog_tool;
bool proxy_find_tool(const struct catalog *c, const char *name, struct catalog_tool *ret);

/* Up to max close names of name (exposed names containing it or contained in it, or whose raw
 * name it is), comma-separated into out; nothing when none. */
int proxy_suggest(const struct catalog *c, const char *name, size_t max,
                  struct buf *out) _must_check_;
