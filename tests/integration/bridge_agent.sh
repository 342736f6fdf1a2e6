# mcp-bridge between an agent and stdio servers, compared with a direct connection: the SDK's
# Client (tests/peers/bridge-agent.mjs) talks to @modelcontextprotocol/server-everything once
# directly and once through `mcp-bridge connect everything` (single mode), then to it and a second
# server (tests/peers/bridge-server.mjs) through `mcp-bridge serve` (aggregate mode, names
# mcp_<server>_<tool>). Initialize, lists, tool calls of every content type, prompts, resources,
# completion, ping, roots, sampling, elicitation, progress, structured content, an unknown tool,
# 1 MiB, cancellation (seen by the server: bridge-tap.mjs records what it receives), logging and
# resource updates must match the direct answers; the server must see a minimal environment
# (not the bridge's CREDKIT_TEST_CANARY); the bridge must exit 0 at the end of its stdin and
# leave no process behind.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"
# a "secret" of the bridge's environment that no server may see
export CREDKIT_TEST_CANARY="canary-$RANDOM$RANDOM"
t_canary "$CREDKIT_TEST_CANARY"

everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
node_bin=$(command -v node)
tap="$PEERS_DIR/bridge-tap.mjs"
second="$PEERS_DIR/bridge-server.mjs"

# config FILE TAPLOG: server-everything (through a tap that logs to TAPLOG) and a second server
config() {
    node - "$1" "$2" "$node_bin" "$tap" "$everything" "$second" "$T_ROOT" <<'JS'
const [file, tapLog, node, tap, everything, second, tag] = process.argv.slice(2);
// (settleTimeout: the lists are compared with the servers' own, so the first one must wait for
// both servers, however loaded the machine)
require('fs').writeFileSync(file, JSON.stringify({ settings: { settleTimeout: 15000 }, mcpServers: {
  everything: { command: node, args: [tap, tapLog, '--', node, everything, 'stdio'],
                env: { BRIDGE_TEST_ENTRY: 'entry-value' } },
  second: { command: node, args: [second, '--name', 'second', '--tag', tag] },
} }, null, 2));
JS
}
direct_everything() { json_argv "$node_bin" "$tap" "$1" -- "$node_bin" "$everything" stdio; }
direct_second=$(json_argv "$node_bin" "$second" --name second --tag "$T_ROOT")

# single mode: `connect everything`
config "$T_ROOT/single.json" "$T_ROOT/single-bridged.tap"
driver single "$T_ROOT/single.bridge.log" bridge-agent.mjs --mode single \
    --server "everything=stdio:$(direct_everything "$T_ROOT/single-direct.tap")" \
    --suite everything=everything \
    --tap "everything=$T_ROOT/single-direct.tap,$T_ROOT/single-bridged.tap" \
    --env-check everything \
    --bridge "$(json_argv "$MCP_BRIDGE_BIN" connect everything --config "$T_ROOT/single.json")" \
    --bridge-log "$T_ROOT/single.bridge.log"

# aggregate mode: `serve`, both servers
config "$T_ROOT/aggregate.json" "$T_ROOT/aggregate-bridged.tap"
driver aggregate "$T_ROOT/aggregate.bridge.log" bridge-agent.mjs --mode aggregate \
    --server "everything=stdio:$(direct_everything "$T_ROOT/aggregate-direct.tap")" \
    --server "second=stdio:$direct_second" \
    --suite everything=everything --suite second=second \
    --tap "everything=$T_ROOT/aggregate-direct.tap,$T_ROOT/aggregate-bridged.tap" \
    --env-check everything \
    --bridge "$(json_argv "$MCP_BRIDGE_BIN" serve --config "$T_ROOT/aggregate.json")" \
    --bridge-log "$T_ROOT/aggregate.bridge.log"

bridge_done "mcp-bridge with stdio servers"
