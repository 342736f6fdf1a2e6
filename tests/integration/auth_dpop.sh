# DPoP (RFC 9449) end to end with real peers: oidc-provider (auth-server.mjs, DPoP on by
# default) in front of an MCP server that takes DPoP-bound tokens only and checks every proof
# with jose (mcp-resource-server.mjs --dpop, a nonce required), signed in through a real headless
# browser (Debian's Chromium). mcp-auth binds the tokens to a key of its own and keeps it in the
# entry (0600 in 0700); the token alone is refused; the bridge proves each request itself from
# mcp-auth's version 2 answer, retries once with the server's nonce, and calls a tool; the
# private key is in no log and no output but the answer; a refresh keeps the binding. The same
# authorization server in front of a bearer-only MCP server still gets bearer tokens.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"

A() { "$MCP_AUTH_BIN" "$@"; }
export BROWSER="node $PEERS_DIR/browser.mjs"
export BROWSER_LOG="$T_ROOT/browser.log"
export CREDKIT_MCP_AUTH="$MCP_AUTH_BIN" CREDKIT_SECRETS="$SECRETS_BIN"

start_peer auth-server --access-ttl 30
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS" --dpop --dpop-nonce rs-nonce-1
MCP=$PEER_URL
case "$MCP" in */mcp) ;; *) MCP="$MCP/mcp" ;; esac
# the bearer-only server of the same authorization server
rs_log=$T_ROOT/mcp-resource-server.log
mv "$T_ROOT/mcp-resource-server.out" "$T_ROOT/dpop-server.out"
mv "$rs_log" "$T_ROOT/dpop-server.log"
start_peer mcp-resource-server --issuer "$AS"
PLAIN=$PEER_URL
case "$PLAIN" in */mcp) ;; *) PLAIN="$PLAIN/mcp" ;; esac
CFG=$T_ROOT/mcp.json
printf '{"mcpServers": {"demo": {"url": "%s", "auth": "oauth"}, "plain": {"url": "%s", "auth": "oauth"}}}\n' \
    "$MCP" "$PLAIN" >"$CFG"
chmod 600 "$CFG"
mkdir -p "$PI_CODING_AGENT_DIR"

rs_stat() { json_get "$(curl -sS --max-time 10 "${MCP%/mcp}/__test/stats")" "$1"; }
# the server fetches the issuer's keys at its first token: fetched now, so that a slow first
# fetch is not taken for a refusal
curl -sS --max-time 10 -X POST "${MCP%/mcp}/__test/keys" >/dev/null
curl -sS --max-time 10 -X POST "${PLAIN%/mcp}/__test/keys" >/dev/null

# sign in: a DPoP-bound token, its key kept in the entry beside the refresh token
run 0 A --config "$CFG" login demo --timeout 90s
assert_contains "$ERR" "signed in to $MCP"
entry=$(grep -l "\"server_url\": *\"$MCP\"" "$PI_CODING_AGENT_DIR"/oauth/*.json)
[ -n "$entry" ] || fail "no store entry for $MCP"
assert_eq "$(file_mode "$PI_CODING_AGENT_DIR/oauth")" 700 "oauth dir mode"
assert_eq "$(file_mode "$entry")" 600 "entry mode"
assert_eq "$(json_get "$(cat "$entry")" 'j.tokens.token_type')" DPoP "the stored token type"
d=$(json_get "$(cat "$entry")" 'JSON.parse(j.tokens.dpop_key).d')
[ "${#d}" -eq 43 ] || fail "the stored DPoP key has no private part"
T_CHECKS=$((T_CHECKS + 1))
# the private key and the token must appear nowhere but in the store and the answers
t_canary "$d"

# the headers answer: version 2, the DPoP scheme and the key
run 0 A --config "$CFG" header --json demo
assert_eq "$(json_get "$OUT" 'j.version')" 2 "the answer's version"
assert_eq "$(json_get "$OUT" 'j.dpop.alg')" ES256
assert_eq "$(json_get "$OUT" 'j.dpop.jwk.d')" "$d" "the key handed over"
auth=$(json_get "$OUT" 'j.headers.Authorization')
case "$auth" in "DPoP "*) ;; *) fail "the header is not of the DPoP scheme: ${auth%% *}" ;; esac
t_canary "${auth#DPoP }"
# the token alone is worth nothing: without a proof the server refuses it
status=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$MCP" \
    -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
    -H "Authorization: $auth" \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}')
assert_eq "$status" 401 "the token without a proof"
assert_eq "$(rs_stat 'j.dpop_error')" "not one DPoP proof" "why the server refused it"

# through the bridge: every request proved, the nonce asked for once, the tool called
run 0 "$MCP_BRIDGE_BIN" --config "$CFG" -v call demo whoami
assert_contains "$OUT" '"sub"'
echo "$ERR" >"$T_ROOT/bridge.log"
assert_eq "$(rs_stat 'j.dpop_rejected')" 1 "proofs refused (but the curl's)"
[ "$(rs_stat 'j.dpop_nonce_challenges')" -ge 1 ] || fail "the server never asked for its nonce"
[ "$(rs_stat 'j.dpop_proofs')" -ge 2 ] || fail "fewer than two valid proofs: $(rs_stat 'j.dpop_proofs')"
[ "$(rs_stat 'j.tool_calls')" -ge 1 ] || fail "no tool call reached the server"
T_CHECKS=$((T_CHECKS + 3))

# a refresh keeps the binding: the same key, a new token, still good through the bridge
run 0 A --config "$CFG" header --json --refresh demo
auth2=$(json_get "$OUT" 'j.headers.Authorization')
[ "$auth2" != "$auth" ] || fail "--refresh returned the old token"
T_CHECKS=$((T_CHECKS + 1))
t_canary "${auth2#DPoP }"
assert_eq "$(json_get "$OUT" 'j.dpop.jwk.d')" "$d" "the key after a refresh"
run 0 "$MCP_BRIDGE_BIN" --config "$CFG" call demo whoami
assert_contains "$OUT" '"sub"'
assert_eq "$(rs_stat 'j.dpop_rejected')" 1 "proofs refused after the refresh (but the curl's)"

# the same authorization server in front of a bearer-only server: bearer tokens, no key
run 0 A --config "$CFG" login plain --timeout 90s
run 0 A --config "$CFG" header --json plain
assert_eq "$(json_get "$OUT" 'j.version')" 1 "a bearer answer's version"
assert_eq "$(json_get "$OUT" 'j.dpop === undefined')" true "a bearer answer carries no key"
case "$(json_get "$OUT" 'j.headers.Authorization')" in "Bearer "*) ;; *) fail "not a bearer token for the bearer-only server" ;; esac
run 0 "$MCP_BRIDGE_BIN" --config "$CFG" call plain whoami
assert_contains "$OUT" '"sub"'

# logout deletes the key with the tokens
run 0 A --config "$CFG" logout demo
if grep -qF "$d" "$PI_CODING_AGENT_DIR"/oauth/*.json 2>/dev/null; then fail "the key outlived logout"; fi
T_CHECKS=$((T_CHECKS + 1))
