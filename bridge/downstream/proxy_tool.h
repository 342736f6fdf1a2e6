/* proxy_tool.h - the "mcp" tool answered in a downstream (proxy.h has its modes).
 *
 * The part of the proxy tool that needs the servers as the downstream runs them: the status of
 * each (connected, connecting, idle, failed and why, sign-in required and the command,
 * disabled, not started and why), a server woken by connect, and a tool + args call sent down
 * the same path as the agent's own tools/call (lazy servers wake, progress and cancellation
 * work). The text comes from proxy_search.h. Mistakes (an unknown server or tool, bad args, a
 * refused pattern) are tool results with isError that say what is wrong, with close names
 * when there are some. */
#pragma once

#include <json-c/json.h>

struct ds_agent; /* downstream_int.h: the agent that called */

/* Handles a tools/call of the proxy tool of agent a (params: the call's params, borrowed; id
 * borrowed): answers a through ds_reply_result, or forwards the call it names. */
void proxy_tool_call(struct ds_agent *a, struct json_object *id, struct json_object *params);
