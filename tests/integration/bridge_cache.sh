# The metadata cache never hides a server's tool (tests/peers/bridge-cache.mjs, the SDK's Client
# as the agent, @modelcontextprotocol/server-everything as a lazy server that adds its sampling,
# elicitation and roots tools only for a client that declares them): an agent without those
# capabilities fills the cache; one that declares them is not served those lists (the cache key
# holds what the server is offered), sees the sampling tool and reaches its own sampling
# through it; a cached list that lacks a tool the server has does not hide it (a call naming it
# wakes the server and is routed; list_changed follows). No process of this test may be left.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$everything" ] || fail "server-everything is missing: run scripts/install-deps"

driver cache "$T_ROOT/plain.log" bridge-cache.mjs \
    --bridge "$MCP_BRIDGE_BIN" --everything "$everything" --root "$T_ROOT"
bridge_done "the metadata cache never hides a tool"
