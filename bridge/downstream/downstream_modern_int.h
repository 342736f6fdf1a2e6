/* downstream_modern_int.h - a 2026-07-28 agent: what opens the era, each request's _meta
 * checked, the results' hints (resultType, ttlMs, cacheScope), the log level a request asks for;
 * the era's error codes and _meta keys. */
#pragma once

#include "downstream/downstream_int.h"

/* The 2026-07-28 era's error codes and _meta keys (basic/index.mdx). */
#define DS_ERR_UNSUPPORTED_VERSION (-32022) /* UnsupportedProtocolVersion */
#define DS_META_VERSION            "io.modelcontextprotocol/protocolVersion"
#define DS_META_CAPS               "io.modelcontextprotocol/clientCapabilities"
#define DS_META_LOG_LEVEL          "io.modelcontextprotocol/logLevel"
#define DS_META_SERVER_INFO        "io.modelcontextprotocol/serverInfo"
#define DS_META_SUBSCRIPTION       "io.modelcontextprotocol/subscriptionId"

/* Whether a request opens the modern era (before any initialize): server/discover, or
 * params._meta with io.modelcontextprotocol/protocolVersion. */
bool ds_modern_opening(const struct jrpc_msg *m);
/* Checks a modern request's _meta: false when it was answered (-32600 a required key missing,
 * -32022 an unsupported version, -32602 a log level that is none). */
bool ds_modern_check(struct ds_agent *a, struct jrpc_msg *m);
/* The agent became modern with request m: its capabilities taken, its session begun (the
 * dispatcher then starts the upstreams when it is the first). -ENOMEM (answered). */
int ds_modern_start(struct ds_agent *a, struct jrpc_msg *m);
/* The rank of an MCP log level (debug 1 .. emergency 8), 0 for none. */
int ds_log_rank(const char *level);
/* A DiscoverResult: supportedVersions [2026-07-28], capabilities and serverInfo (borrowed,
 * NULL: {}), instructions (NULL: none), ttlMs, cacheScope "private", resultType. NULL on
 * ENOMEM. */
struct json_object *ds_discover_result(struct json_object *caps, struct json_object *info,
                                       const char *instructions, int64_t ttl_ms);
/* A server's answer to a modern agent's request p, before it goes to the agent (in place):
 * the result hints, -32002 as -32602. No-op for a legacy agent. -ENOMEM. */
int ds_modern_response(const struct ds_pending *p, struct json_object *response);
/* A modern agent's request m is being forwarded as p (p->s set): its result's shape and log
 * level noted; a legacy server gets the level with logging/setLevel. */
void ds_modern_forwarding(struct ds_agent *a, struct jrpc_msg *m, struct ds_pending *p);
/* notifications/message of s for a modern agent: sent when a request of the agent on s asked
 * for logs at or below its level. */
void ds_modern_log(struct ds_agent *a, struct ds_server *s, struct json_object *msg);
