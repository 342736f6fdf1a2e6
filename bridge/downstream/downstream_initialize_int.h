/* downstream_initialize_int.h - an agent's initialize, both modes, and what it starts: the
 * capabilities offered upstream, the upstreams made real and connected; and the DiscoverResult a
 * modern agent's server/discover is answered with. */
#pragma once

#include "downstream/downstream_int.h"

/* The agent's initialize, both modes (the dispatcher then starts the upstreams when it is the
 * first). */
void ds_handle_initialize(struct ds_agent *a, struct jrpc_msg *m);
/* Aggregate mode's: the bridge's capabilities, serverInfo and instructions, as initialize
 * gives them. NULL on ENOMEM. */
struct json_object *ds_aggregate_discover(struct ds_agent *a);
