/* naming.h - the names tools and prompts get in aggregate mode.
 *
 * Each upstream's tools are exposed as <prefix><tool>, the prefix chosen by settings.toolPrefix:
 *   mcp (default)     "mcp_" + server + "_"                      mcp_github-mcp_create_issue
 *   server            server + "_"                               github-mcp_create_issue
 *   short             server without a "-mcp" suffix + "_"       github_create_issue
 *   none              ""                                         create_issue
 * (server "github-mcp"; "server", "short" and "none" are the pi adapter's modes, "mcp" the
 * older pi bridge's naming and the default here.)
 * Names are then sanitised for every agent's rules: each byte outside [A-Za-z0-9_-] becomes '_'
 * (a multi-byte UTF-8 character becomes one '_'), and a name longer than NAMING_MAX (64) keeps
 * its first 57 bytes plus '_' and 6 hex digits of a hash (FNV-1a 32) of the unsanitised full
 * name, so long names that differ only at the end stay distinct and stable. An empty result
 * becomes "_".
 *
 * Precisely: the full name is the prefix of the table (with the server name as given, for
 * "short" without a final "-mcp" when something is left before it)
 * followed by the name as given, in bytes; a UTF-8 lead byte (0xC2..0xF4) and the
 * continuation bytes that follow it (at most its sequence length) make one '_', every other
 * byte outside the set one '_' each. The hash is FNV-1a 32
 * (offset 2166136261, prime 16777619) over the full unsanitised name, xor-folded to 24 bits,
 * (h >> 24) ^ (h & 0xffffff), and written as 6 lowercase hex digits. A NULL server or name
 * counts as "".
 *
 * Collisions (two tools mapping to the same exposed name) are resolved deterministically: the
 * catalogue is built with servers in name order and each server's tools in the order it lists
 * them; the first keeps the name, later ones get "_2", "_3" ... (made to fit in 64 bytes by
 * cutting the base), and each collision is reported so it can be logged. Prompts are named the
 * same way (in their own namespace). A suffixed name is itself checked against the set: when
 * "a_2" is taken (a tool named so), the next "a" becomes "a_3", and a later tool named "a_2"
 * becomes "a_2_2". Claiming is O(1) amortised, also for many tools of one name. */
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
