# The proxy tool "mcp" and the tool modes through the real bridge, with the SDK's Client as the
# agent (tests/peers/bridge-proxy.mjs) and @modelcontextprotocol/server-everything behind it:
# the proxy tool's status, search (words, a regex, a hostile regex refused), describe, server,
# connect and calls (progress included); excludeTools by raw and exposed name (also in single
# mode); exposeResources read tools; settings.directTools false with the entries' directTools,
# MCP_DIRECT_TOOLS (server/tool and __none__), disableProxyTool; toolPrefix server, short, none.
# Every bridge must exit 0 at the end of its stdin and leave no process behind.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$everything" ] || fail "server-everything is missing: run scripts/install-deps"

for scenario in proxy direct prefix single; do
    driver "$scenario" "$T_ROOT/$scenario-1.bridge.log" bridge-proxy.mjs --scenario "$scenario" \
        --bridge "$MCP_BRIDGE_BIN" --everything "$everything" --root "$T_ROOT"
done

bridge_done "the proxy tool and the tool modes"
