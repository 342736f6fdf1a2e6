/* cmd_client.h - connecting servers once, as `mcp-bridge test` does (cmd_client.c), for a
 * command that reports on several: `mcp-bridge list --check`. Each server is connected with
 * the credentials the bridge would use, its tools listed through every page, and closed (stdio
 * servers stopped and reaped); the connections share one event loop, a bounded number at once.
 * Nothing is printed: the outcome of each is the caller's to report. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "credkit/args.h"
#include "credkit/log.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

enum client_probe_state {
    CLIENT_PROBE_NOT_RUN, /* not asked to, or interrupted before it ran */
    CLIENT_PROBE_READY,
    CLIENT_PROBE_FAILED,
    CLIENT_PROBE_LOGIN, /* the server needs a sign-in: message names the command */
};

struct client_probe {
    const struct mcp_server *server; /* the entry to connect (borrowed); NULL: none */
    enum client_probe_state state;
    size_t n_tools; /* READY */
    char *message;  /* FAILED, LOGIN: why (owned; client_probe_release() frees) */
};

/* Connects every probes[i].server of config (valid, enabled entries: the caller chooses), at
 * most parallel at once, each allowed connect_timeout_ms (0: the upstream's default) to connect
 * and its request timeout to list its tools, and fills in state, n_tools and message. SIGINT
 * and SIGTERM stop it: the probes not done stay NOT_RUN. 0, or -ENOMEM / the loop's error. */
int client_probe_run(const struct mcp_config *config, struct client_probe *probes, size_t n,
                     size_t parallel, int64_t connect_timeout_ms, const struct args_globals *g,
                     struct log *log) _must_check_;

/* Frees p's message (NULL-safe); p itself is the caller's. */
void client_probe_release(struct client_probe *p);
