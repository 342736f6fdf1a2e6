/* downstream_single_int.h - single mode (connect): the agent's initialize and server/discover
 * wait for the one upstream's READY; its requests are passed through. Transparent by default:
 * a legacy server is a legacy server to a 2026-07-28 agent too (d->bridge_eras bridges). */
#pragma once

#include "downstream/downstream_int.h"

/* The agent's initialize in single mode (the capabilities are taken already). Single mode has
 * one agent: the lead, once it has started the upstream. */
void ds_single_initialize(struct ds_agent *a, struct jrpc_msg *m);
/* The upstream is READY: the initialize waiting for it is answered. */
void ds_single_ready(struct downstream *d);
/* The upstream failed, or the connect timeout passed: the initialize waiting is refused. */
void ds_single_fail(struct downstream *d, const char *why);
/* The connect timeout passed with the agent's initialize waiting. */
void ds_single_timeout(struct downstream *d);
/* A modern agent's server/discover in single mode, or any request of it before its session is
 * READY: waits for the server's READY (the connect timeout, or its failure, refuses it with the
 * reason, and the agent may then initialize). A modern server's discover is its own; a legacy
 * server's is made of its InitializeResult with --bridge-eras (d->bridge_eras), else answered
 * as the server would (-32601; -32022 for another request) and the agent falls back to
 * initialize. */
void ds_single_opening(struct ds_agent *a, struct jrpc_msg *m);
/* An initialized agent's request in single mode. */
void ds_single_request(struct ds_agent *a, struct jrpc_msg *m);
/* Whether a legacy agent's initialized request of this method (the span of text) goes to the
 * server as it is, reading nothing of its params but name and _meta: it may come without a tree
 * (jrpc_parse_light()). */
bool ds_single_passes(const char *text, struct jscan_span method);
