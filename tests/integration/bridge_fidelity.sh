# What the agent hears where the bridge answers for its servers (tests/peers/bridge-fidelity.mjs,
# the SDK's Client on `mcp-bridge serve`, tests/peers/tiny-server.mjs as the servers): nine
# servers connecting at once give list_changed coalesced, not one each; an unknown tool is a
# tool result with isError and close names; a server that never answers initialize says so in
# the proxy tool's status and in `mcp-bridge test`. No process of this test may be left.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

mkdir "$T_ROOT/work"
driver fidelity "$T_ROOT/work/burst.log" bridge-fidelity.mjs \
    --bridge "$MCP_BRIDGE_BIN" --work "$T_ROOT/work" --tag "$T_ROOT"

# `mcp-bridge test` of a server hung in initialize: exit 1, the timeout as the reason
printf '%s\n' "process.stdin.resume();" "process.stdin.on('end', () => process.exit(0));" \
    >"$T_ROOT/work/hang-cli.mjs"
printf '{"mcpServers": {"hang": {"command": "node", "args": ["%s"]}}}\n' \
    "$T_ROOT/work/hang-cli.mjs" >"$T_ROOT/work/hang-cli.json"
run 1 "$MCP_BRIDGE_BIN" --config "$T_ROOT/work/hang-cli.json" test hang --connect-timeout 1s
assert_contains "$ERR" "server 'hang': connect timed out after 1 s"

bridge_done "what the agent hears where the bridge answers"
