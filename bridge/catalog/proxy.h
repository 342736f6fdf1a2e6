/* proxy.h - the "mcp" tool as the catalogue lists it: its name, its definition, and what one
 * call of it asks. Every server's tools through one tool, as the pi adapter has it.
 *
 * In aggregate mode the tools list starts with this tool (unless settings.disableProxyTool,
 * catalog.h). Its arguments pick one mode, the first of these that is given:
 *   tool + args  calls that tool (exposed name; a raw name that only one server has works too)
 *                with args, a JSON object or a string holding one
 *   connect      connects that server now (a lazy or idle one)
 *   describe     one tool: its description and parameters
 *   search       tools matching the words, or regex: true, a pattern; includeSchemas
 *   server       that server's tools
 *   (nothing)    every server's status and its tool count
 * This module reads the arguments; proxy_search.h answers from the catalogue, and
 * proxy_tool.h (in the downstream) answers a call with the servers' states or forwards it.
 * It knows neither the catalogue nor the downstream. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "credkit/macro.h"

#define PROXY_TOOL_NAME   "mcp"
#define PROXY_PATTERN_MAX 256 /* bytes of a regex or a search */

/* The proxy tool's definition: a Tool object (new reference; NULL on ENOMEM). */
struct json_object *proxy_tool_definition(void);

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
 * key that is not a string, args that are neither an object nor a string holding one, a search
 * longer than PROXY_PATTERN_MAX, and the like. -ENOMEM. */
int proxy_request_parse(struct json_object *arguments, struct proxy_request *ret, char *err,
                        size_t err_size) _must_check_;
/* Drops the arguments reference; NULL is fine. */
void proxy_request_release(struct proxy_request *r);

/* Writes why a call is refused (a sentence for the agent, cut to size bytes) into err and
 * returns -EINVAL, for the parts that check what a call asks. */
int proxy_refuse(char *err, size_t size, const char *fmt, ...) _printf_(3, 4);

/* Whether a call of the proxy tool with these params (the tools/call's, borrowed) waits for the
 * first lists to settle, as a tools/call naming an unknown tool does: every mode but the status
 * and connect, which answer at once (and a call whose arguments are refused: it is answered at
 * once). */
bool proxy_tool_waits(struct json_object *params);
