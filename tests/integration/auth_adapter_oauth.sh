# The pi adapter's oauth.* keys that change mcp-auth's sign-in, against the real authorization
# server (oidc-provider) in front of real MCP servers that publish no protected resource
# metadata (2025-03-26 style), signed in through a real headless browser (Debian's Chromium):
#   - without "authServerMetadataUrl" the sign-in cannot find the authorization server (the MCP
#     server's origin has none): it takes the server for one that wants a token of its own;
#   - with it, the document is used as it is: the sign-in succeeds, the token works against the
#     server, the issuer is the authorization server's;
#   - "logoUri" is the logo_uri of the dynamic registration, "authorizationParams" are in the
#     authorization request;
#   - a metadata URL whose location names another issuer than the document (the same server
#     reached as localhost) is refused, naming both; "skipIssuerMetadataValidation" accepts it.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"

A() { "$MCP_AUTH_BIN" "$@"; }
export BROWSER="node $PEERS_DIR/browser.mjs"
export BROWSER_LOG="$T_ROOT/browser.log"

start_peer auth-server
AS=$PEER_URL
# no protected resource metadata: the scope to ask for comes from the challenge
start_peer mcp-resource-server --issuer "$AS" --no-prm --challenge-scope "mcp:read mcp:write"
MCP1=${PEER_URL%/mcp}/mcp
start_peer mcp-resource-server --issuer "$AS" --no-prm --challenge-scope "mcp:read mcp:write"
MCP2=${PEER_URL%/mcp}/mcp
AS_PORT=${AS##*:}
AS_PORT=${AS_PORT%%/*}
LOCAL_META="http://localhost:$AS_PORT/.well-known/openid-configuration"
LOGO="https://logo.example/pi-$RANDOM.png"

mkdir -p "$PI_CODING_AGENT_DIR"
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<EOF
{ "mcpServers": {
    "discovered": { "url": "$MCP1", "auth": "oauth" },
    "direct": { "url": "$MCP1", "oauth": {
        "authServerMetadataUrl": "$AS/.well-known/oauth-authorization-server",
        "logoUri": "$LOGO",
        "authorizationParams": { "ui_locales": "fr-CA", "tenant": "ada" } } },
    "elsewhere": { "url": "$MCP2", "oauth": { "authServerMetadataUrl": "$LOCAL_META" } },
    "elsewhere-skip": { "url": "$MCP2", "oauth": { "authServerMetadataUrl": "$LOCAL_META",
                                                  "skipIssuerMetadataValidation": true } }
} }
EOF
get() { curl -sS --max-time 10 "$AS/__test/$1"; }
# initialize against an MCP server with a header; prints the HTTP status
mcp_status() {
    curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$1" \
        -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
        -H "$2" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
}

echo "== discovery alone finds no authorization server"
run 7 A login discovered --timeout 60s
assert_contains "$ERR" "'$MCP1' does not use OAuth (it answered 401 and publishes no OAuth metadata)"
assert_eq "$(json_get "$(get stats)" 'j.registrations')" 0 "registrations without the metadata URL"

echo "== authServerMetadataUrl, logoUri, authorizationParams"
run 0 A login direct --timeout 90s
assert_contains "$ERR" "authorization server: $AS"
assert_contains "$ERR" "signed in to $MCP1"
run 0 A status --json
assert_eq "$(json_get "$OUT" "j.servers.find((s) => s.url === '$MCP1').issuer")" "$AS" "the issuer"
run 0 A header direct
t_canary "${OUT#Authorization: Bearer }"
assert_eq "$(mcp_status "$MCP1" "$OUT")" 200 "initialize with the token"
assert_eq "$(mcp_status "$MCP1" "X-Nothing: 1")" 401 "initialize without a token"
clients=$(get clients)
assert_eq "$(json_get "$clients" "j.filter((c) => c.logo_uri === '$LOGO').length")" 1 "clients registered with the logo"
st=$(get stats)
assert_eq "$(json_get "$st" 'j.authorization_queries.at(-1).ui_locales')" fr-CA "ui_locales of the authorization request"
assert_eq "$(json_get "$st" 'j.authorization_queries.at(-1).tenant')" ada "tenant of the authorization request"
assert_eq "$(json_get "$st" 'j.authorization_queries.at(-1).response_type')" code "the flow's own parameters"
echo "ok the configured metadata used as it is, with the adapter's registration and authorization extras"

echo "== the issuer of a configured document is checked, unless told not to"
run 5 A login elsewhere --timeout 60s
assert_contains "$ERR" "the authorization server metadata at '$LOCAL_META' names the issuer '$AS', not 'http://localhost:$AS_PORT'"
assert_contains "$ERR" '"oauth.skipIssuerMetadataValidation": true accepts it'
run 0 A login elsewhere-skip --timeout 90s
assert_contains "$ERR" "signed in to $MCP2"
run 0 A header elsewhere-skip
t_canary "${OUT#Authorization: Bearer }"
assert_eq "$(mcp_status "$MCP2" "$OUT")" 200 "initialize with the token (issuer check skipped)"
echo "ok a mismatched issuer refused, and accepted with skipIssuerMetadataValidation"
