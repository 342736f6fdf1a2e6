# The callback URL override, for a machine the browser reaches through an ingress or a port
# forward: the redirect URI registered and sent is the URL given (--callback-url, or the entry's
# "oauth.callbackUrl"), the listener still binds 127.0.0.1 on the port given (--callback-port,
# "oauth.callbackPort"), and takes the callback on the override's path and authority. Real
# peers: oidc-provider, headless Chromium, and a TCP port forward (tests/peers/tcp-forward.mjs)
# from the override's port to the listener's: the authorization server sees the override, the
# browser comes back through the forward, and the sign-in completes. Values that cannot be a
# callback URL or port are refused.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"

A() { "$MCP_AUTH_BIN" "$@"; }
export BROWSER="node $PEERS_DIR/browser.mjs"
export BROWSER_LOG="$T_ROOT/browser.log"

start_peer auth-server
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
MCP=$PEER_URL
case "$MCP" in */mcp) ;; *) MCP="$MCP/mcp" ;; esac
# the listener's port: free now (the forward must know it before the sign-in starts)
LISTEN=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); })')
start_peer tcp-forward --to "$LISTEN"
FWD=${PEER_URL##*:}
# another name, port and path than the listener's own http://127.0.0.1:LISTEN/callback
OVERRIDE="http://localhost:$FWD/oauth/cb"

mkdir -p "$PI_CODING_AGENT_DIR"
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<EOF
{"mcpServers": {
  "demo": {"url": "$MCP"},
  "fwd": {"url": "$MCP", "oauth": {"account": "fwd", "callbackUrl": "$OVERRIDE", "callbackPort": $LISTEN}},
  "badurl": {"url": "$MCP", "oauth": {"callbackUrl": "http://localhost:$FWD/cb?x=1"}},
  "both": {"url": "$MCP", "oauth": {"callbackUrl": "$OVERRIDE", "redirectUri": "http://127.0.0.1:$LISTEN/callback"}},
  "badport": {"url": "$MCP", "oauth": {"callbackPort": 70000}},
  "fixed": {"url": "$MCP", "oauth": {"redirectUri": "http://127.0.0.1:$LISTEN/callback"}}
}}
EOF
stats() { curl -sS --max-time 10 "$AS/__test/stats"; }
connections() { grep -c "connection " "$T_ROOT/tcp-forward.log" || true; }
mcp_status() {
    curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$MCP" \
        -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
        -H "$1" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
}

# --callback-url and --callback-port: the server sees the override, the browser comes back
# through the forward
run 0 A login demo --callback-url "$OVERRIDE" --callback-port "$LISTEN" --timeout 90s
assert_contains "$ERR" "signed in to $MCP"
assert_contains "$ERR" "waiting for the browser to come back to $OVERRIDE"
assert_eq "$(json_get "$(stats)" 'j.authorization_queries[j.authorization_queries.length - 1].redirect_uri')" \
    "$OVERRIDE" "the redirect_uri the authorization server got"
clients=$(curl -sS --max-time 10 "$AS/__test/clients")
assert_eq "$(json_get "$clients" "j.some(c => (c.redirect_uris || []).includes('$OVERRIDE'))")" true \
    "a client registered with the override"
[ "$(connections)" -ge 1 ] || fail "the browser did not come back through the forward"
T_CHECKS=$((T_CHECKS + 1))
assert_contains "$(cat "$BROWSER_LOG")" "callback $OVERRIDE?"
run 0 A header demo
assert_eq "$(mcp_status "$OUT")" 200 "initialize with the token"

# the entry's callbackUrl and callbackPort do the same
before=$(connections)
run 0 A login fwd --timeout 90s
assert_contains "$ERR" "signed in to $MCP as the account 'fwd'"
assert_eq "$(json_get "$(stats)" 'j.authorization_queries[j.authorization_queries.length - 1].redirect_uri')" \
    "$OVERRIDE" "the entry's override"
[ "$(connections)" -gt "$before" ] || fail "the entry's sign-in did not come back through the forward"
T_CHECKS=$((T_CHECKS + 1))
run 0 A header fwd
assert_eq "$(mcp_status "$OUT")" 200 "initialize with the entry's token"

# what cannot be a callback URL or port
run 2 A login demo --callback-url "ftp://localhost:$FWD/cb"
assert_contains "$ERR" "--callback-url must be an http:// or https:// URL with a host"
run 2 A login demo --callback-url "http://user@localhost:$FWD/cb"
run 2 A login demo --callback-port 0
assert_contains "$ERR" "--callback-port: '0' is not a port number from 1 to 65535"
run 3 A login badurl
assert_contains "$ERR" "\"oauth.callbackUrl\" must be an http:// or https:// URL"
run 3 A login both
assert_contains "$ERR" "\"oauth.callbackUrl\" and \"oauth.redirectUri\" both name the redirect URI: keep one"
run 3 A login badport
assert_contains "$ERR" "\"oauth.callbackPort\" must be a port number from 1 to 65535"
run 3 A login fixed --callback-port "$FWD"
assert_contains "$ERR" "the callback port $FWD is not the port of \"oauth.redirectUri\""
