# The pi adapter's keys, to the letter: the adapter README's example configuration as a file
# (`mcp-bridge list --json`: every entry valid, the keys' effect, a bad setting dropped alone),
# then `serve` with tiny-server.mjs and server-everything behind it and the SDK's Client as the
# agent: includeTools / excludeTools (raw, prefixed under each entry's toolPrefix, globs) and
# requestTimeoutMs (entry and settings) applied (tests/peers/bridge-adapter.mjs).
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$everything" ] || fail "server-everything is missing: run scripts/install-deps"

driver adapter "$T_ROOT/adapter.bridge.log" bridge-adapter.mjs --bridge "$MCP_BRIDGE_BIN" \
    --everything "$everything" --root "$T_ROOT"

bridge_done "the pi adapter's keys"
