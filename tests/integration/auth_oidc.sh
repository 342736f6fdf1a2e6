# mcp-auth against a real authorization server (oidc-provider) in front of a real MCP server
# that checks its JWTs, signed in through a real headless browser (Debian's Chromium): sign-in,
# header, refresh after expiry, 16 concurrent callers causing exactly one refresh, the grant
# alive afterwards, step-up, denial, an authorization server that forgot the client, logout
# with revocation.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"

A() { "$MCP_AUTH_BIN" "$@"; }
export BROWSER="node $PEERS_DIR/browser.mjs"
export BROWSER_LOG="$T_ROOT/browser.log"

start_peer auth-server --access-ttl 12 --device-flow
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
MCP=$PEER_URL
case "$MCP" in */mcp) ;; *) MCP="$MCP/mcp" ;; esac
mkdir -p "$PI_CODING_AGENT_DIR"
printf '{"mcpServers": {"demo": {"url": "%s"}}}\n' "$MCP" >"$PI_CODING_AGENT_DIR/mcp.json"

stats() { curl -sS --max-time 10 "$AS/__test/stats"; }
stat_of() { json_get "$(stats)" "$1"; }
reset_stats() { curl -sS --max-time 10 -X POST "$AS/__test/reset" >/dev/null; }
# initialize against the MCP server with the header mcp-auth gives; prints the HTTP status
mcp_status() {
    curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$MCP" \
        -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
        -H "$1" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
}

# nothing stored yet: login required, with the command to run
run 4 A header demo
assert_contains "$ERR" "mcp-auth demo"

# sign in through Chromium
run 0 A login demo --timeout 90s
assert_contains "$ERR" "signed in to $MCP"
assert_contains "$ERR" "open this URL to sign in"
# the browser logs its last navigation as it happens: mcp-auth may have finished already
wait_until 10 "the browser's log to show the callback" grep -q /callback "$BROWSER_LOG"
assert_eq "$(file_mode "$PI_CODING_AGENT_DIR/oauth")" 700 "oauth dir mode"
for f in "$PI_CODING_AGENT_DIR"/oauth/*.json; do assert_eq "$(file_mode "$f")" 600 "entry mode"; done

run 0 A status --json
assert_eq "$(json_get "$OUT" 'j.servers[0].url')" "$MCP"
assert_eq "$(json_get "$OUT" 'j.servers[0].issuer')" "$AS"
assert_eq "$(json_get "$OUT" 'j.servers[0].registration')" dynamic
assert_eq "$(json_get "$OUT" 'j.servers[0].has_refresh_token')" true
# named as the user signed in, with whom the server says signed in (its JWT's subject: the
# browser's login name)
assert_eq "$(json_get "$OUT" 'JSON.stringify(j.servers[0].names)')" '["demo"]'
assert_eq "$(json_get "$OUT" 'j.servers[0].account')" "test-user"
run 0 A status
assert_contains "$OUT" "$MCP"
assert_eq "$(awk '$1 == "demo" { print $2 }' <<<"$OUT")" "test-user" "status: NAME and ACCOUNT"
assert_not_contains "$OUT" "Bearer" "status output"

# the header works against the server; without it the server refuses (the plain form first,
# at once followed by the JSON one: the 12 s token may be refreshed by a later call)
run 0 A header demo
plain=$OUT
run 0 A header --json demo
hdr="Authorization: $(json_get "$OUT" 'j.headers.Authorization')"
t_canary "${hdr#Authorization: Bearer }"
exp1=$(json_get "$OUT" 'j.expires_at')
assert_eq "$plain" "$hdr" "plain header output"
assert_eq "$(mcp_status "$hdr")" 200 "initialize with the token"
assert_eq "$(mcp_status "X-Nothing: 1")" 401 "initialize without a token"
# the same answer while fresh: no token request
reset_stats
run 0 A header --json demo
assert_eq "$(json_get "$OUT" 'j.expires_at')" "$exp1"
assert_eq "$(stat_of 'j.refresh_token_grants')" 0

# at expiry (the 12 s token is refreshed 3 s before it runs out), 16 concurrent callers: all get
# the new token, and exactly one refresh reaches the server
refresh_due() { [ "$(date +%s)" -ge $((exp1 - 3)) ]; }
wait_until 20 "the token to come due for refresh" refresh_due
reset_stats
callers=()
for i in $(seq 1 16); do
    ( A header --json demo >"$T_ROOT/h.$i" 2>"$T_ROOT/h.$i.err"; echo $? >"$T_ROOT/h.$i.rc" ) &
    callers+=("$!")
done
wait "${callers[@]}"
# check the new token at once (it lives only seconds), then the answers in one pass
hdr2="Authorization: $(json_get "$(cat "$T_ROOT/h.1")" 'j.headers.Authorization')"
assert_eq "$(mcp_status "$hdr2")" 200 "initialize with the refreshed token"
for i in $(seq 1 16); do
    assert_eq "$(cat "$T_ROOT/h.$i.rc")" 0 "concurrent caller $i ($(cat "$T_ROOT/h.$i.err"))"
done
distinct=$(node -e '
    const fs = require("fs"), seen = new Set();
    for (let i = 1; i <= 16; i++)
        seen.add(JSON.parse(fs.readFileSync(process.argv[1] + "/h." + i, "utf8")).headers.Authorization);
    process.stdout.write(String(seen.size));' "$T_ROOT")
assert_eq "$distinct" 1 "distinct tokens among the 16 answers"
assert_eq "$(stat_of 'j.refresh_token_grants')" 1 "refresh requests reaching the server"
assert_eq "$(stat_of 'j.refresh_token_reuse')" 0 "reused refresh tokens"
[ "$hdr2" != "$hdr" ] || fail "the token was not refreshed"
T_CHECKS=$((T_CHECKS + 1))

# the grant is still alive: the next expiry refreshes again
exp2=$(json_get "$(cat "$T_ROOT/h.1")" 'j.expires_at')
refresh_due2() { [ "$(date +%s)" -ge $((exp2 - 3)) ]; }
wait_until 20 "the second token to come due" refresh_due2
run 0 A header --json demo
assert_eq "$(stat_of 'j.refresh_token_grants')" 2 "refreshes after the second expiry"
assert_eq "$(stat_of 'j.grant_revocations')" 0 "grants revoked"
assert_eq "$(mcp_status "Authorization: $(json_get "$OUT" 'j.headers.Authorization')")" 200

# --refresh: the resource server refused a token before its time (a 401): refresh now
reset_stats
run 0 A header --json --refresh demo
hdr3="Authorization: $(json_get "$OUT" 'j.headers.Authorization')"
assert_eq "$(stat_of 'j.refresh_token_grants')" 1 "refreshes for --refresh"
[ "$hdr3" != "$hdr2" ] || fail "--refresh returned the old token"
T_CHECKS=$((T_CHECKS + 1))
assert_eq "$(mcp_status "$hdr3")" 200 "initialize with the force-refreshed token"

# step-up: the granted scope grows, never shrinks
run 0 A login demo --scope mcp:write --timeout 90s
run 0 A status --json
scope=$(json_get "$OUT" 'j.servers[0].scope')
assert_contains "$scope" "mcp:write"

# the user says no: the flow ends with the server's reason
BROWSER_DENY=1 run 5 A login demo --timeout 90s
assert_contains "$ERR" "access_denied"

# the authorization server forgot every client (reset): register again in the same run
curl -sS --max-time 10 -X POST "$AS/__test/forget-clients" >/dev/null
regs_before=$(stat_of 'j.registrations')
run 0 A login demo --timeout 90s
[ "$(stat_of 'j.registrations')" -gt "$regs_before" ] || fail "no new registration after the server forgot the client"
T_CHECKS=$((T_CHECKS + 1))

# the device authorization grant: the code is confirmed on "another device" (Chromium here)
"$MCP_AUTH_BIN" login demo --device-code --timeout 60s >"$T_ROOT/device.out" 2>"$T_ROOT/device.err" &
dpid=$!
has_code() { grep -q "(or open " "$T_ROOT/device.err"; }
wait_until 20 "mcp-auth to print the device code" has_code
complete=$(sed -n 's/^  (or open \([^ ]*\) , which carries the code)$/\1/p' "$T_ROOT/device.err")
[ -n "$complete" ] || fail "no verification URL in: $(cat "$T_ROOT/device.err")"
node "$PEERS_DIR/browser.mjs" "$complete" >/dev/null 2>"$T_ROOT/device-browser.err" ||
    fail "the browser could not confirm the device code: $(cat "$T_ROOT/device-browser.err")"
rc=0
wait "$dpid" || rc=$?
assert_eq "$rc" 0 "device sign-in ($(cat "$T_ROOT/device.err"))"
assert_contains "$(cat "$T_ROOT/device.err")" "signed in to $MCP"

# logout revokes at the server and deletes here
reset_stats
run 0 A logout demo
[ "$(stat_of 'j.revocations')" -ge 1 ] || fail "logout revoked nothing at the server"
T_CHECKS=$((T_CHECKS + 1))
run 4 A header demo
assert_contains "$ERR" "mcp-auth demo"
run 0 A status --json
assert_eq "$(json_get "$OUT" 'j.servers.length')" 0
