# mcp-bridge connect --listen --listen-issuer: the bridge as an OAuth 2.1 resource server for its
# HTTP agents, with real peers. oidc-provider (tests/peers/auth-server.mjs) issues RS256 JWT
# access tokens for the bridge's URL (RFC 8707); the upstream is a header-recording MCP server
# (seam-header-server.mjs). First the real client: mcp-auth signs in to the bridge as to any
# MCP server (its 401, the protected-resource metadata, dynamic registration, Chromium), and a
# second bridge (`mcp-bridge call`) calls through the first with that token; and the v1 SDK's
# own OAuth client (authProvider, tests/peers/oauth-sdk-agent.mjs) does the same. Then each check
# with client_credentials tokens: the metadata at both well-known paths; 401 with
# resource_metadata and scope without a token, with one for another audience, a signature
# altered, one of another issuer; 403 insufficient_scope; the upstream never sees an agent's
# token (its Authorization stays empty); the subject in the log at -v, no token in any log.
# Then the issuer restarted on its port with a new key whose clock is 10 minutes behind: its
# tokens are refused as expired once the new key is fetched; restarted again with the right
# clock: the new key (kid) is picked up, the request that needed it waiting for the fetch.
# Last, a non-loopback bind is allowed with --listen-issuer; behind a reverse proxy,
# --listen-public-url names the resource and its host is taken as Host; the usage errors.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"
export BROWSER="node $PEERS_DIR/browser.mjs"
export BROWSER_LOG="$T_ROOT/browser.log"
export CREDKIT_SECRETS="$SECRETS_BIN" MCP_BRIDGE_CACHE=off

start_peer auth-server --pre-registered --quiet
AS=$PEER_URL
AS_PORT=${AS##*:}
start_peer seam-header-server --quiet
UP=$PEER_URL

# The bridge: one server (the recorder), agents over HTTP with tokens of AS, scope mcp:read.
"$MCP_BRIDGE_BIN" -v connect "$UP" --listen 127.0.0.1:0 --listen-url-file "$T_ROOT/url" \
    --listen-issuer "$AS" --listen-scope mcp:read </dev/null >/dev/null 2>"$T_ROOT/bridge.log" &
BRIDGE_PID=$!
wait_until 20 "the bridge's URL" test -s "$T_ROOT/url"
URL=$(cat "$T_ROOT/url")
BASE=${URL%/mcp}
wait_until 20 "the issuer's keys" grep -q "keys fetched" "$T_ROOT/bridge.log"

INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
# post AUTHORIZATION_HEADER_OR_EMPTY: initialize; the status printed, headers and body kept
post() {
    local auth=()
    [ -z "$1" ] || auth=(-H "$1")
    curl -s -o "$T_ROOT/body" -D "$T_ROOT/headers" -w '%{http_code}' --max-time 20 -X POST \
        -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        "${auth[@]}" -d "$INIT" "$URL"
}
challenge() { grep -i '^WWW-Authenticate:' "$T_ROOT/headers" | tr -d '\r'; }
# token SCOPE [RESOURCE] [ISSUER]: a client_credentials access token
token() {
    local answer
    answer=$(curl -s --max-time 20 -u basic-client:basic-secret -d grant_type=client_credentials \
        -d "scope=$1" --data-urlencode "resource=${2:-$URL}" "${3:-$AS}/token")
    json_get "$answer" 'j.access_token'
}

echo "== the protected-resource metadata, and a request without a token"
for path in /.well-known/oauth-protected-resource/mcp /.well-known/oauth-protected-resource; do
    PRM=$(curl -sf --max-time 10 "$BASE$path") || fail "no metadata at $path"
    assert_eq "$(json_get "$PRM" 'j.resource')" "$URL" "$path: resource"
    assert_eq "$(json_get "$PRM" 'JSON.stringify(j.authorization_servers)')" "[\"$AS\"]" "$path: authorization_servers"
    assert_eq "$(json_get "$PRM" 'JSON.stringify(j.scopes_supported)')" '["mcp:read"]' "$path: scopes"
    assert_eq "$(json_get "$PRM" 'JSON.stringify(j.bearer_methods_supported)')" '["header"]' "$path: bearer methods"
done
assert_eq "$(post '')" 401 "no token"
assert_eq "$(challenge)" "WWW-Authenticate: Bearer resource_metadata=\"$BASE/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:read\"" "the challenge"
assert_eq "$(post 'Authorization: Bearer 2YotnFZFEjr1zCsicMWpAA')" 401 "an opaque token"
assert_contains "$(cat "$T_ROOT/body")" "JWT access tokens only" "the refusal of an opaque token"

echo "== mcp-auth signs in to the bridge; a second bridge calls through it with that token"
mkdir -p "$PI_CODING_AGENT_DIR"
printf '{"mcpServers": {"gw": {"url": "%s"}}}\n' "$URL" >"$PI_CODING_AGENT_DIR/mcp.json"
run 0 "$MCP_AUTH_BIN" login gw --timeout 90s
assert_contains "$ERR" "signed in to $URL"
run 0 "$MCP_BRIDGE_BIN" --config "$PI_CODING_AGENT_DIR/mcp.json" call gw seen --json
assert_eq "$(json_get "$OUT" 'j.result.structuredContent.headers.authorization')" null \
    "the Authorization the upstream saw"
wait_until 10 "the subject in the bridge's log" grep -q "an HTTP agent authenticated as 'test-user'" "$T_ROOT/bridge.log"

echo "== the SDK's own OAuth client signs in to the bridge and calls through it"
rc=0
node "$PEERS_DIR/oauth-sdk-agent.mjs" --url "$URL" --tool seen </dev/null >"$T_ROOT/sdk.out" \
    2>"$T_ROOT/sdk.err" || rc=$?
[ "$rc" = 0 ] || fail "oauth-sdk-agent failed (exit $rc): $(tail -20 "$T_ROOT/sdk.err")
--- the bridge's log
$(tail -20 "$T_ROOT/bridge.log")"
SDK=$(cat "$T_ROOT/sdk.out")
assert_eq "$(json_get "$SDK" 'j.unauthorized')" true "the SDK's first connect: 401"
assert_contains "$(json_get "$SDK" 'j.scope')" mcp:read "the scope the SDK asked for"
assert_eq "$(json_get "$SDK" 'JSON.stringify(j.tools)')" '["seen"]' "the tools the SDK listed"
assert_eq "$(json_get "$SDK" 'j.result.structuredContent.headers.authorization')" null \
    "the Authorization the upstream saw with the SDK's token"

echo "== client_credentials tokens: taken, and each way of being refused"
AT=$(token 'mcp:read mcp:write')
[ "${#AT}" -gt 100 ] || fail "no access token from the issuer"
t_canary "$AT"
assert_eq "$(post "Authorization: Bearer $AT")" 200 "a token of the issuer for the bridge"
SID=$(grep -i '^Mcp-Session-Id:' "$T_ROOT/headers" | tr -d '\r' | cut -d' ' -f2)
CALL='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"seen","arguments":{}}}'
curl -s -o "$T_ROOT/call" --max-time 20 -X POST -H 'Content-Type: application/json' \
    -H 'Accept: application/json' -H "Authorization: Bearer $AT" -H "Mcp-Session-Id: $SID" \
    -H 'MCP-Protocol-Version: 2025-11-25' -d "$CALL" "$URL"
assert_eq "$(json_get "$(cat "$T_ROOT/call")" 'j.result.structuredContent.headers.authorization')" null \
    "the Authorization the upstream saw with the agent's token"
# every value of Authorization the upstream ever saw: none (null) only
SEEN=$(curl -s --max-time 10 "${UP%/mcp}/__test/stats")
assert_eq "$(json_get "$SEEN" 'JSON.stringify(j.seen.authorization.map((e) => e.hash))')" '[null]' \
    "the upstream's Authorization values"
assert_contains "$(cat "$T_ROOT/bridge.log")" "an HTTP agent authenticated as 'basic-client'"

OTHER_AUD=$(token mcp:read "http://127.0.0.1:1/mcp")
t_canary "$OTHER_AUD"
assert_eq "$(post "Authorization: Bearer $OTHER_AUD")" 401 "a token for another resource"
assert_contains "$(challenge)" 'error="invalid_token", error_description="the token is for another audience (resource)"'

SIGNED=${AT%.*}.$(printf '%s' "${AT##*.}" | tr 'A-Za-z' 'B-ZAb-za')
assert_eq "$(post "Authorization: Bearer $SIGNED")" 401 "a signature altered"
assert_contains "$(challenge)" "the token's signature does not verify"

NO_SCOPE=$(token mcp:write)
t_canary "$NO_SCOPE"
assert_eq "$(post "Authorization: Bearer $NO_SCOPE")" 403 "a token without mcp:read"
assert_contains "$(challenge)" 'scope="mcp:read", error="insufficient_scope"'

start_peer auth-server --pre-registered --quiet
AS2=$PEER_URL
FOREIGN=$(token 'mcp:read' "$URL" "$AS2")
t_canary "$FOREIGN"
assert_eq "$(post "Authorization: Bearer $FOREIGN")" 401 "a token of another issuer"
assert_contains "$(challenge)" 'error="invalid_token"'

echo "== the issuer's key rotated: a clock 10 minutes behind, then the right one"
AS_PID=${T_PEER_PIDS[0]}
kill -TERM "$AS_PID"
wait "$AS_PID" 2>/dev/null || true
# oidc-provider dates its tokens with Date.now(): 10 minutes back, they are expired at once
NODE_OPTIONS='--import=data:text/javascript,const%20n=Date.now;Date.now=()=>n()-600000;' \
    start_peer auth-server --pre-registered --quiet --port "$AS_PORT"
assert_eq "$PEER_URL" "$AS" "the issuer's URL after a restart"
OLD=$(token mcp:read)
t_canary "$OLD"
# the new key is fetched once the last fetch is 5 s old: until then the kid is unknown
expired() { [ "$(post "Authorization: Bearer $OLD")" = 401 ] && challenge | grep -q "has expired"; }
wait_until 20 "a token of the issuer's past refused as expired" expired

kill -TERM "${T_PEER_PIDS[-1]}"
wait "${T_PEER_PIDS[-1]}" 2>/dev/null || true
start_peer auth-server --pre-registered --quiet --port "$AS_PORT"
NEW=$(token mcp:read)
t_canary "$NEW"
rotated() { [ "$(post "Authorization: Bearer $NEW")" = 200 ]; }
wait_until 20 "a token of the rotated key taken" rotated
assert_contains "$(cat "$T_ROOT/bridge.log")" "keys fetched"
# the fetches were rate-limited: a refused kid asks again at most every 5 s
FETCHES=$(grep -c "keys fetched" "$T_ROOT/bridge.log")
[ "$FETCHES" -le 8 ] || fail "the keys were fetched $FETCHES times: not rate-limited"

kill -TERM "$BRIDGE_PID"
rc=0
wait "$BRIDGE_PID" || rc=$?
assert_eq "$rc" 0 "the bridge's exit status after SIGTERM"
for v in "$AT" "$NO_SCOPE" "$NEW"; do
    if grep -qF "$v" "$T_ROOT/bridge.log"; then fail "a token is in the bridge's log"; fi
done
T_CHECKS=$((T_CHECKS + 1))

echo "== a bind that is not loopback, with an issuer; the usage errors"
"$MCP_BRIDGE_BIN" connect "$UP" --listen 0.0.0.0:0 --listen-url-file "$T_ROOT/url2" \
    --listen-issuer "$AS" </dev/null >/dev/null 2>"$T_ROOT/bridge2.log" &
BRIDGE_PID=$!
wait_until 20 "the wildcard bridge's URL" test -s "$T_ROOT/url2"
URL2=$(cat "$T_ROOT/url2")
PORT2=${URL2%/mcp}
PORT2=${PORT2##*:}
URL=http://127.0.0.1:$PORT2/mcp
assert_eq "$(post '')" 401 "the wildcard bridge without a token"
kill -TERM "$BRIDGE_PID"
wait "$BRIDGE_PID" || fail "the wildcard bridge did not exit cleanly"

echo "== behind a reverse proxy: --listen-public-url names the resource, its host is a Host taken"
"$MCP_BRIDGE_BIN" connect "$UP" --listen 127.0.0.1:0 --listen-url-file "$T_ROOT/url3" \
    --listen-issuer "$AS" --listen-public-url https://mcp.example.test/mcp \
    </dev/null >/dev/null 2>"$T_ROOT/bridge3.log" &
BRIDGE_PID=$!
wait_until 20 "the proxied bridge's URL" test -s "$T_ROOT/url3"
URL=$(cat "$T_ROOT/url3")
PRM=$(curl -sf --max-time 10 "${URL%/mcp}/.well-known/oauth-protected-resource/mcp")
assert_eq "$(json_get "$PRM" 'j.resource')" https://mcp.example.test/mcp "the resource behind a proxy"
# proxied: the status and the challenge for Host HOST
proxied() {
    curl -s -o /dev/null -D "$T_ROOT/headers" -w '%{http_code}' --max-time 20 -X POST \
        -H "Host: $1" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -d "$INIT" "$URL"
}
assert_eq "$(proxied mcp.example.test)" 401 "Host: the public URL's"
assert_contains "$(challenge)" 'resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"'
assert_eq "$(proxied evil.example.test)" 403 "Host: another site's"
kill -TERM "$BRIDGE_PID"
wait "$BRIDGE_PID" || fail "the proxied bridge did not exit cleanly"

run 2 "$MCP_BRIDGE_BIN" connect "$UP" --listen 0.0.0.0:0 --listen-issuer http://192.0.2.1/
assert_contains "$ERR" "--listen-issuer"
run 2 "$MCP_BRIDGE_BIN" connect "$UP" --listen 0 --listen-scope mcp:read
assert_contains "$ERR" "go with --listen-issuer"
run 2 "$MCP_BRIDGE_BIN" connect "$UP" --listen 0 --listen-issuer "$AS" --listen-token T
assert_contains "$ERR" "choose one"
run 2 "$MCP_BRIDGE_BIN" connect "$UP" --listen 0 --listen-issuer "$AS" --listen-public-url nope
assert_contains "$ERR" "--listen-public-url 'nope'"
