# mcp-auth import mcp-remote, against the real mcp-remote (npm, tests/peers): mcp-remote signs
# in to oidc-provider in front of a real MCP server through headless Chromium (its bundled
# `open` runs xdg-open, which hands the URL to $BROWSER: tests/peers/browser.mjs), then mcp-auth
# takes over its tokens and client registration. mcp-bridge call works with the imported token
# without a new sign-in; at expiry mcp-auth refreshes with the imported refresh token (one
# refresh, no reuse). Also: --dry-run writes nothing; a sign-in here newer than mcp-remote's is
# kept without --force; --account; --dir; --json; a sign-in of a server the configuration does
# not have is listed as unmatched; a named server mcp-remote has none for exits 4; the tokens
# appear in no output.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"
MCP_REMOTE_CLIENT=${MCP_REMOTE_CLIENT:-$PEERS_DIR/node_modules/mcp-remote/dist/client.js}
[ -f "$MCP_REMOTE_CLIENT" ] || fail "mcp-remote is missing from tests/peers/node_modules: run scripts/install-deps"

A() { "$MCP_AUTH_BIN" "$@"; }
B() { "$MCP_BRIDGE_BIN" "$@"; }
export CREDKIT_MCP_AUTH="$MCP_AUTH_BIN"
export BROWSER="node $PEERS_DIR/browser.mjs"
export BROWSER_LOG="$T_ROOT/browser.log"
MR_DIR="$HOME/.mcp-auth/mcp-remote-v1"

start_peer auth-server --access-ttl 12
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
MCP=$PEER_URL
case "$MCP" in */mcp) ;; *) MCP="$MCP/mcp" ;; esac
mkdir -p "$PI_CODING_AGENT_DIR"
printf '{"mcpServers": {"demo": {"url": "%s", "auth": "oauth"}}}\n' "$MCP" >"$PI_CODING_AGENT_DIR/mcp.json"
stat_of() { json_get "$(curl -sS --max-time 10 "$AS/__test/stats")" "$1"; }
mcp_status() {
    curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$MCP" \
        -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
        -H "$1" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
}

# nothing to import yet
run 0 A import mcp-remote
assert_contains "$ERR" "mcp-remote keeps no sign-in in '~/.mcp-auth/mcp-remote-v1'"

# mcp-remote signs in (its client connects, lists the tools and exits)
rc=0
timeout 120 node "$MCP_REMOTE_CLIENT" "$MCP" </dev/null >"$T_ROOT/mr.out" 2>"$T_ROOT/mr.err" || rc=$?
assert_eq "$rc" 0 "mcp-remote's sign-in ($(tail -5 "$T_ROOT/mr.err"))"
assert_contains "$(cat "$T_ROOT/mr.err")" "Connected successfully"
hash=$(printf '%s' "$MCP" | md5sum | cut -d' ' -f1)
[ -f "$MR_DIR/${hash}_tokens.json" ] || fail "mcp-remote left no ${hash}_tokens.json in $MR_DIR: $(ls "$MR_DIR")"
T_CHECKS=$((T_CHECKS + 1))
mr_tokens=$(cat "$MR_DIR/${hash}_tokens.json")
mr_client=$(json_get "$(cat "$MR_DIR/${hash}_client_info.json")" 'j.client_id')
t_canary "$(json_get "$mr_tokens" 'j.access_token')" "$(json_get "$mr_tokens" 'j.refresh_token')" \
    --held-by "$HOME/.mcp-auth"
regs=$(stat_of 'j.registrations')
auths=$(stat_of 'j.authorization_requests')

# --dry-run: said, nothing written
run 0 A import mcp-remote --dry-run
assert_contains "$ERR" "would import 'demo' from mcp-remote"
assert_contains "$ERR" "issuer:  $AS"
run 4 A header demo

# the import, as JSON
run 0 A import mcp-remote --json
assert_eq "$(json_get "$OUT" 'j.servers.length')" 1
assert_eq "$(json_get "$OUT" 'j.servers[0].name')" demo
assert_eq "$(json_get "$OUT" 'j.servers[0].result')" imported
assert_eq "$(json_get "$OUT" 'j.servers[0].issuer')" "$AS"
assert_eq "$(json_get "$OUT" 'j.servers[0].has_refresh_token')" true
assert_eq "$(json_get "$OUT" 'j.unmatched.length')" 0
run 0 A status --json demo
assert_eq "$(json_get "$OUT" 'j.servers[0].issuer')" "$AS"
assert_eq "$(json_get "$OUT" 'j.servers[0].registration')" dynamic
assert_eq "$(json_get "$OUT" 'j.servers[0].client_id')" "$mr_client" "the client is mcp-remote's"
assert_eq "$(json_get "$OUT" 'j.servers[0].account')" test-user
for f in "$PI_CODING_AGENT_DIR"/oauth/*.json; do assert_eq "$(file_mode "$f")" 600 "entry mode"; done

# the bridge calls the server with it: no new sign-in, no new registration
run 0 B call demo whoami '{}'
assert_contains "$OUT" "test-user"
assert_eq "$(stat_of 'j.registrations')" "$regs" "registrations after the import"
assert_eq "$(stat_of 'j.authorization_requests')" "$auths" "authorization requests after the import"

# at expiry mcp-auth refreshes with mcp-remote's refresh token
run 0 A header --json demo
exp1=$(json_get "$OUT" 'j.expires_at')
old=$(json_get "$OUT" 'j.headers.Authorization')
refresh_due() { [ "$(date +%s)" -ge $((exp1 - 3)) ]; }
wait_until 20 "the imported token to come due for refresh" refresh_due
grants=$(stat_of 'j.refresh_token_grants')
run 0 A header --json demo
new=$(json_get "$OUT" 'j.headers.Authorization')
[ "$new" != "$old" ] || fail "the imported token was not refreshed"
T_CHECKS=$((T_CHECKS + 1))
assert_eq "$(mcp_status "Authorization: $new")" 200 "initialize with the refreshed token"
assert_eq "$(stat_of 'j.refresh_token_grants')" $((grants + 1)) "refreshes"
assert_eq "$(stat_of 'j.refresh_token_reuse')" 0 "reused refresh tokens"
assert_eq "$(stat_of 'j.grant_revocations')" 0 "grants revoked"
run 0 B call demo whoami '{}'
assert_contains "$OUT" "test-user"

# the sign-in here is now newer than mcp-remote's (whose refresh token was rotated): kept
run 0 A import mcp-remote
assert_contains "$ERR" "skipped 'demo': the sign-in stored here is newer than mcp-remote's (--force replaces it)"
run 0 A import mcp-remote demo --dir "$HOME/.mcp-auth" --force --dry-run --json
assert_eq "$(json_get "$OUT" 'j.servers[0].result')" would_import
assert_eq "$(json_get "$OUT" 'j.dry_run')" true
run 0 A header demo
assert_eq "$OUT" "Authorization: $new" "the header after the dry run"

# as another account: beside the default one
run 0 A import mcp-remote "$MCP" --account work --dir "$MR_DIR"
assert_contains "$ERR" "imported '$MCP' as the account 'work' from mcp-remote"
run 0 A status --json --account work
assert_eq "$(json_get "$OUT" 'j.servers[0].label')" work
run 0 A header demo
assert_eq "$OUT" "Authorization: $new" "the default account's header"

# a sign-in of a server the configuration does not have: listed; one named that has none
other=$(printf '%s' "http://127.0.0.1:9/mcp" | md5sum | cut -d' ' -f1)
cp "$MR_DIR/${hash}_tokens.json" "$MR_DIR/${other}_tokens.json"
run 0 A import mcp-remote --json
assert_eq "$(json_get "$OUT" 'JSON.stringify(j.unmatched)')" "[\"$other\"]"
assert_contains "$ERR" "skipped mcp-remote's sign-in $other: no HTTP server in the configuration has its URL"
run 4 A import mcp-remote http://127.0.0.1:10/mcp
assert_contains "$ERR" "cannot import 'http://127.0.0.1:10/mcp' from mcp-remote: mcp-remote has no sign-in for it in '~/.mcp-auth/mcp-remote-v1'"
run 2 A import claude
assert_contains "$ERR" "mcp-auth imports from mcp-remote"

# a file that is not what mcp-remote writes: named, nothing stored
printf '{"access_token": 5}' >"$MR_DIR/${other}_tokens.json"
chmod 600 "$MR_DIR/${other}_tokens.json"
run 1 A import mcp-remote http://127.0.0.1:9/mcp
assert_contains "$ERR" "\"access_token\" is a number, not a string"
