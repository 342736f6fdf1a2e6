/* naming.h - the names tools and prompts get in aggregate mode.
 *
 * Each upstream's tools are exposed as <prefix><tool>, the prefix chosen by settings.toolPrefix
 * ("mcp", the default: "mcp_" + server + "_"; "server"; "short"; "none"). Names are then
 * sanitised for every agent's rules (each byte outside [A-Za-z0-9_-] becomes '_'), and a name
 * longer than NAMING_MAX (64) is cut and ends in a hash of the full name, so long names that
 * differ only at the end stay distinct and stable. Collisions are resolved deterministically,
 * later ones getting "_2", "_3" ..., and each is reported so it can be logged; prompts are
 * named the same way, in their own namespace. docs/development.md, "Modules in detail", has
 * the prefixes, the exact sanitising and hash, and the collision rules. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/macro.h"

#define NAMING_MAX 64

/* settings.toolPrefix (server_config.h reads it) */
enum mcp_tool_prefix {
    MCP_TOOL_PREFIX_MCP,    /* mcp_<server>_<tool> (the default; "mcp") */
    MCP_TOOL_PREFIX_SERVER, /* <server>_<tool> ("server", the pi adapter's default) */
    MCP_TOOL_PREFIX_SHORT,  /* <server without a "-mcp" suffix>_<tool> ("short") */
    MCP_TOOL_PREFIX_NONE,   /* <tool> ("none") */
};

/* The exposed name for tool (or prompt) `name` of `server`, into buf (at least NAMING_MAX + 1
 * bytes), before collision handling. */
void naming_expose(enum mcp_tool_prefix prefix, const char *server, const char *name,
                   char buf[static NAMING_MAX + 1]);

/* A set of exposed names, for collision handling while a catalogue is built. */
struct naming_set;
struct naming_set *naming_set_new(void); /* NULL on ENOMEM */
void naming_set_free(struct naming_set *s);
/* Makes buf (an exposed name, at most NAMING_MAX bytes) unique in the set and adds a copy:
 * unchanged when free, else with the first free of "_2", "_3"... as above. Returns 1 when it
 * had to rename (a collision), 0 when not, -ENOMEM (buf then unchanged). */
int naming_set_claim(struct naming_set *s, char buf[static NAMING_MAX + 1]) _must_check_;
