# `mcp-bridge connect` in front of a server that needs a sign-in, with agents that open in either
# era (tests/peers/connect-signin.mjs, whose own HTTP server answers everything 401 with a Bearer
# challenge, and whose entry says nothing of OAuth: the bridge learns it from the 401): an agent that tries server/discover and falls back to initialize on the same
# process gets the reason, naming mcp-auth, both times (a refused discover must not lock the
# session into 2026-07-28); the v1 Client and the v2 Client in "auto" see it in their failed
# connect. mcp-auth is the real one, with nothing stored. No process of this test may be left.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

export CREDKIT_MCP_AUTH="${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
export MCP_BRIDGE_CACHE=off
mkdir -p "$PI_CODING_AGENT_DIR"
chmod 700 "$PI_CODING_AGENT_DIR"
driver signin "$T_ROOT/signin.log" connect-signin.mjs --bridge "$MCP_BRIDGE_BIN" --root "$T_ROOT"
bridge_done "connect with a sign-in needed"
