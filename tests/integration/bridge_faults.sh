# mcp-bridge while its servers fail (tests/peers/bridge-faults.mjs, the SDK's Client on
# `mcp-bridge serve`), inside a private network namespace (the SDK's example servers bind every
# interface): a stdio server killed in the middle of a call, one that exits, one that hangs
# (SIGSTOP), calls that outlive the entry's "timeout" (the server must see notifications/cancelled),
# an HTTP session the server forgets (re-initialized, the call retried once), HTTP servers
# restarted on the same port, an HTTP server that hangs. The agent must get tool results with
# isError, then working calls again; the bridge must never exit, and at the end exit 0 at the end
# of its stdin with every process reaped (no process of this test may be left).
. "$(dirname "$0")/lib/netns.sh"
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

mkdir "$T_ROOT/work"
driver faults "$T_ROOT/work/bridge.log" bridge-faults.mjs \
    --bridge "$MCP_BRIDGE_BIN" --work "$T_ROOT/work" --tag "$T_ROOT"
bridge_done "mcp-bridge under faults"
