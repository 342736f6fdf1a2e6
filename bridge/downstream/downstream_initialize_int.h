/* downstream_initialize_int.h - an agent's initialize, both modes, and what it starts: the
 * capabilities offered upstream, the upstreams made real and connected; and the DiscoverResult a
 * modern agent's server/discover is answered with. */
#pragma once

#include "downstream/downstream_int.h"

/* The agent's initialize, both modes. */
void ds_handle_initialize(struct ds_agent *a, struct jrpc_msg *m);
/* Makes the upstreams real, offering what a declared, and connects them all, in parallel
 * (once: from DS_ROUND_NONE). */
void ds_start_upstreams(struct ds_agent *a);
/* What the agent declared: its protocol version (NULL when none or unknown) and its
 * capabilities (borrowed, NULL: none); the lead agent's is what every upstream is offered.
 * -ENOMEM. */
int ds_take_capabilities(struct ds_agent *a, const char *version, struct json_object *caps);
/* A DiscoverResult: supportedVersions [2026-07-28], capabilities and serverInfo (borrowed,
 * NULL: {}), instructions (NULL: none), ttlMs, cacheScope "private", resultType. NULL on
 * ENOMEM. */
struct json_object *ds_discover_result(struct json_object *caps, struct json_object *info,
                                       const char *instructions, int64_t ttl_ms);
/* Aggregate mode's: the bridge's capabilities, serverInfo and instructions, as initialize
 * gives them. NULL on ENOMEM. */
struct json_object *ds_aggregate_discover(struct ds_agent *a);
