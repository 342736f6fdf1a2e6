# A server that wants a static bearer token (tests/peers/demo-bearer-server.mjs: 401 with a bare
# Bearer challenge, no protected resource metadata, no authorization server metadata) and an
# entry that gives it none: `mcp-auth NAME` and `mcp-auth URL` stop at discovery with exit 7 and
# name the fix (bearerTokenEnv, headers, secrets configure) instead of failing at registration;
# `mcp-auth header` says the same with exit 7 and an empty standard output; `mcp-bridge test`
# and `call` (exit 1), and `serve`'s log and its proxy tool's status, carry the bridge's own
# words with the entry's name, never "sign-in required". The fix they name works. A server
# with OAuth metadata (auth-server.mjs in front of mcp-resource-server.mjs) still gets the
# sign-in advice (exit 4 and 6) and a sign-in that goes past discovery.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
A() { "$MCP_AUTH_BIN" --config "$CFG" "$@"; }
B() { "$MCP_BRIDGE_BIN" --config "$CFG" "$@"; }
SDK="$PEERS_DIR/node_modules/@modelcontextprotocol/sdk/dist/esm"

TOKEN="demo-token-$RANDOM$RANDOM-zQ"
printf '%s\n' "$TOKEN" >"$T_ROOT/token"
chmod 600 "$T_ROOT/token"
t_canary "$TOKEN" --held-by "$T_ROOT/token"
start_peer demo-bearer-server --token-file "$T_ROOT/token" --quiet
TS=$PEER_URL
start_peer auth-server --quiet
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
RS=$PEER_URL
case "$RS" in */mcp) ;; *) RS="$RS/mcp" ;; esac

CFG="$T_ROOT/mcp.json"
cat >"$CFG" <<EOF
{"mcpServers": {
  "tok": {"url": "$TS"},
  "tokoauth": {"url": "$TS", "auth": "oauth"},
  "tokfixed": {"url": "$TS", "bearerTokenEnv": "DEMO_TOKEN"},
  "rs": {"url": "$RS", "auth": "oauth"},
  "rsfound": {"url": "$RS"}
}}
EOF
FIX='"bearerTokenEnv": "NAME" (or "headers": {"Authorization": "Bearer ${NAME}"}), and store the token with '"'secrets configure NAME'"

# ---- mcp-auth: sign-in and header ----
run 7 A tok
assert_contains "$ERR" "'$TS' does not use OAuth (it answered 401 and publishes no OAuth metadata)"
assert_contains "$ERR" "Give the entry 'tok' one: $FIX"
assert_not_contains "$ERR" "registering" "a sign-in against a token server"
run 7 A login tokoauth --no-browser --timeout 5s
assert_contains "$ERR" "Give the entry 'tokoauth' one: $FIX"
# by URL: the entry of that URL is named; a URL no entry points at gets the general words
run 7 A "$TS"
assert_contains "$ERR" "$FIX"
printf '{"mcpServers": {}}\n' >"$T_ROOT/none.json"
run 7 "$MCP_AUTH_BIN" --config "$T_ROOT/none.json" "$TS"
assert_contains "$ERR" "Give its entry in mcp.json one: $FIX"
run 7 A header --json tok
assert_eq "$(json_get "$OUT" 'j.error.code')" no_oauth "header's answer (docs/json.md)"
assert_contains "$ERR" "Give the entry 'tok' one: $FIX"
assert_not_contains "$ERR" "sign in with" "header for a token server"
# nothing was stored on the way
assert_eq "$(find "$PI_CODING_AGENT_DIR/oauth" -name '*.json' 2>/dev/null | wc -l)" 0 "stored entries"

# ---- mcp-bridge test, call ----
BFIX="server 'tok': it does not use OAuth (it answered 401 and publishes no OAuth metadata): it wants a token of its own, not a sign-in. Give the entry 'tok' one: $FIX"
run 1 B test tok
assert_contains "$ERR" "$BFIX"
assert_not_contains "$ERR" "sign-in required" "test against a token server"
run 1 B call tok echo '{"message": "hi"}'
assert_eq "$OUT" "" "call's standard output"
assert_contains "$ERR" "$BFIX"
run 1 B test tokoauth
assert_contains "$ERR" "Give the entry 'tokoauth' one: $FIX"
# the fix the message names works
export DEMO_TOKEN=$TOKEN
run 0 B call tokfixed echo '{"message": "through"}'
assert_contains "$OUT" "through"
unset DEMO_TOKEN

# ---- mcp-bridge serve: the log and what the agent sees ----
cat >"$T_ROOT/serve-agent.mjs" <<EOF
// Connects to mcp-bridge serve and calls the proxy tool until server 'tok' is no longer on its
// way (at most 20 s); prints the last status text.
import { Client } from '$SDK/client/index.js';
import { StdioClientTransport } from '$SDK/client/stdio.js';
const t = new StdioClientTransport({ command: process.argv[2], args: process.argv.slice(3), stderr: 'inherit', env: process.env });
const c = new Client({ name: 'token-advice', version: '1' });
await c.connect(t);
const end = Date.now() + 20000;
let text = '';
for (;;) {
  const r = await c.callTool({ name: 'mcp', arguments: {} });
  text = r.content.map((x) => x.text ?? '').join('');
  if (/^tok: failed/m.test(text) || Date.now() > end) break;
  await new Promise((res) => setTimeout(res, 100));
}
process.stdout.write(text);
await c.close();
EOF
printf '{"mcpServers": {"tok": {"url": "%s"}}}\n' "$TS" >"$T_ROOT/serve.json"
run 0 node "$T_ROOT/serve-agent.mjs" "$MCP_BRIDGE_BIN" --config "$T_ROOT/serve.json" serve
assert_contains "$OUT" "tok: failed ($BFIX)"
assert_contains "$ERR" "warning: $BFIX"
assert_not_contains "$ERR" "sign-in required" "serve's log"

# ---- a server with OAuth metadata: still the sign-in advice ----
run 4 A header --json rs
assert_eq "$(json_get "$OUT" 'j.error.code')" login_required "header's answer (docs/json.md)"
assert_contains "$ERR" "sign in with: mcp-auth --config"
assert_not_contains "$ERR" "bearerTokenEnv" "header for an OAuth server"
run 6 B test rs
assert_contains "$ERR" "server 'rs': sign-in required: run 'mcp-auth --config \"$CFG\" rs'"
# no "auth": found by the Bearer challenge, the same advice
run 6 B test rsfound
assert_contains "$ERR" "server 'rsfound': sign-in required: run 'mcp-auth --config \"$CFG\" rsfound'"
# the sign-in goes past discovery (and waits for a person who never comes)
run 1 A login rs --no-browser --timeout 2s
assert_contains "$ERR" "authorization server: $AS"
assert_not_contains "$ERR" "does not use OAuth" "a sign-in against an OAuth server"
