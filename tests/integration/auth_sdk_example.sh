# mcp-auth against the TypeScript SDK's example server with its demo authorization server
# (simpleStreamableHttp.js --oauth --oauth-strict), whose conventions differ from
# oidc-provider's: token endpoint auth client_secret_post or none only, an issuer with a
# trailing slash, /authorize approving at once (a fetching $BROWSER follows it into our
# loopback callback), tokens checked for this server's resource.
. "$(dirname "$0")/lib/netns.sh"
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
A() { "$MCP_AUTH_BIN" "$@"; }
export BROWSER="$PEERS_DIR/fetch-browser.sh"
example="$PEERS_DIR/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"
[ -f "$example" ] || fail "the SDK example server is missing: run scripts/install-deps"

# it binds every interface: fine here, this namespace has only loopback
MCP_PORT=3000 MCP_AUTH_PORT=3001 node "$example" --oauth --oauth-strict \
    >"$T_ROOT/example.out" 2>"$T_ROOT/example.log" </dev/null &
T_PEER_PIDS+=("$!")
listening() { grep -q "listening on port 3000" "$T_ROOT/example.out" 2>/dev/null; }
wait_until 30 "the SDK example server to listen" listening
MCP=http://localhost:3000/mcp
mkdir -p "$PI_CODING_AGENT_DIR"
printf '{"mcpServers": {"example": {"url": "%s"}}}\n' "$MCP" >"$PI_CODING_AGENT_DIR/mcp.json"

mcp_status() {
    curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$MCP" \
        -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
        -H "$1" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
}

assert_eq "$(mcp_status "X-None: 1")" 401 "initialize without a token"
run 0 A login example --timeout 60s
assert_contains "$ERR" "authorization server: http://localhost:3001/"
run 0 A status --json
assert_eq "$(json_get "$OUT" 'j.servers[0].issuer')" "http://localhost:3001/" "the issuer, trailing slash kept"
run 0 A header --json example
hdr="Authorization: $(json_get "$OUT" 'j.headers.Authorization')"
exp=$(json_get "$OUT" 'j.expires_at')
[ "$exp" -gt "$(date +%s)" ] || fail "expires_at $exp is not in the future"
T_CHECKS=$((T_CHECKS + 1))
assert_eq "$(mcp_status "$hdr")" 200 "initialize with the token (checked for this resource)"
# the stored registration is reused for a second sign-in on the same port when it is free
run 0 A login example --timeout 60s
assert_not_contains "$ERR" "registering a client" "second sign-in"
run 0 A logout example
run 4 A header example
