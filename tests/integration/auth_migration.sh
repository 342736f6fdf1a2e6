# mcp-auth when a server's authorization server changes (MCP 2026-07-28, "Authorization Server
# Binding"): tests/peers/bad-auth-server.mjs moves its protected resource metadata to another
# issuer (the same process under the name localhost). A dynamically registered client is never
# presented to the new issuer: the sign-in registers again there, and the store keeps one entry
# per issuer. A pre-registered client used with the old issuer is refused with an error naming
# both, until oauth.clientId names a client of the new one.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
command -v curl >/dev/null || fail "curl is missing"

export BROWSER="$PEERS_DIR/fetch-browser.sh"
A() { "$MCP_AUTH_BIN" "$@"; }
login() { timeout -k 5 60 "$MCP_AUTH_BIN" login demo --timeout 10s "$@"; }

use_store() {
    export PI_CODING_AGENT_DIR="$T_ROOT/agent-$1"
    mkdir -p "$PI_CODING_AGENT_DIR"
}
# serve OAUTH_JSON: a fresh server (not moved yet); AS is its URL, NEW the issuer it moves to
serve() {
    [ -z "${SERVER_PID:-}" ] || { kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }
    rm -f "$T_ROOT/bad-auth-server.out"
    start_peer bad-auth-server --fault none
    SERVER_PID=${T_PEER_PIDS[-1]}
    AS=$PEER_URL
    NEW=${AS/127.0.0.1/localhost}
    printf '{"mcpServers": {"demo": {"url": "%s/mcp", "oauth": %s}}}\n' "$AS" "$1" >"$PI_CODING_AGENT_DIR/mcp.json"
}
stats() { curl -sS --max-time 10 "$AS/__test/stats"; }
move() { curl -sS --max-time 10 -X POST "$AS/__test/move-as" >/dev/null || fail "cannot move the authorization server"; }

# ---- dynamic registration: registered again at the new issuer ----
use_store dynamic
serve '{}'
run 0 login
assert_contains "$ERR" "registering a client at $AS/register"
OLD_CLIENT=$(json_get "$(stats)" "j.authorize_clients['$AS'][0]")
[ -n "$OLD_CLIENT" ] && [ "$OLD_CLIENT" != undefined ] || fail "no client id seen at the first issuer"
move
run 0 login
assert_contains "$ERR" "authorization server: $NEW"
assert_contains "$ERR" "registering a client at $NEW/register"
S=$(stats)
assert_eq "$(json_get "$S" "j.registrations_at['$NEW']")" 1 "registrations at the new issuer"
assert_eq "$(json_get "$S" "j.authorize_clients['$NEW'].includes('$OLD_CLIENT')")" false \
    "the old issuer's client presented to the new one"
run 0 A status --json
assert_eq "$(json_get "$OUT" 'j.servers.length')" 2 "entries: one per issuer"
assert_eq "$(json_get "$OUT" "j.servers.map(s => s.issuer).sort().join(' ')")" "$AS $NEW"
# the store stays private
for f in "$PI_CODING_AGENT_DIR"/oauth/*.json; do
    assert_eq "$(stat -c %a "$f")" 600 "mode of $f"
done
assert_eq "$(stat -c %a "$PI_CODING_AGENT_DIR/oauth")" 700 "mode of the store"

# ---- a pre-registered client: refused under the new issuer ----
use_store pre
serve '{"clientId": "pre-old"}'
run 0 login
move
run 3 login
assert_contains "$ERR" "the authorization server of '$AS/mcp' changed from '$AS' to '$NEW', and the pre-registered client 'pre-old' (oauth.clientId) belongs to '$AS': register a client at '$NEW' and set it as oauth.clientId"
assert_eq "$(json_get "$(stats)" "j.authorize_clients['$NEW']")" undefined "authorization requests at the new issuer"
# with a client of the new issuer it signs in there
printf '{"mcpServers": {"demo": {"url": "%s/mcp", "oauth": {"clientId": "pre-new"}}}}\n' "$AS" >"$PI_CODING_AGENT_DIR/mcp.json"
run 0 login
assert_eq "$(json_get "$(stats)" "j.authorize_clients['$NEW'].join(' ')")" pre-new
