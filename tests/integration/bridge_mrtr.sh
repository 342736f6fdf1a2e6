# Elicitation across the eras through mcp-bridge (tests/peers/eras-mrtr-agent.mjs): the SDK v2
# Client (a 2026-07-28 agent) against server-everything (a legacy server that asks in the middle
# of a call) in aggregate and single mode, the bridge's InputRequiredResult and requestState
# line by line (forged, tampered with, used twice: -32602), server-everything killed while the
# agent is away, and the v1 Client (a legacy agent) getting elicitation/create as before. No
# process of this test may be left.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
driver mrtr "$T_ROOT/mrtr.log" eras-mrtr-agent.mjs \
    --bridge "$MCP_BRIDGE_BIN" --everything "$everything" --modern "$PEERS_DIR/eras-mrtr-server.mjs" \
    --root "$T_ROOT"
bridge_done "elicitation across the eras"
