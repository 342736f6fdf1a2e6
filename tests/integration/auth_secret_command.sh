# "oauth.clientSecret": "!command", as the pi adapter means it: mcp-auth hands the command to
# `secrets resolve --json --stdin` (never a shell of its own, never an argv) and authenticates
# with its output at a real authorization server (oidc-provider, tests/peers/auth-server.mjs)
# for a pre-registered confidential client with the client_credentials grant; the token works
# at a real MCP server that checks it. "!!x" is the literal "!x". A command that fails, and a
# wrong secret, say so without the secret; the secret is never in a log (-vv) or an error.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
A() { "$MCP_AUTH_BIN" "$@"; }
export CREDKIT_SECRETS="$SECRETS_BIN"

SECRET="cc-secret-$RANDOM$RANDOM-q"
BANG="!bang-secret-$RANDOM$RANDOM"
printf '%s\n' "$SECRET" >"$T_ROOT/secret"
chmod 600 "$T_ROOT/secret"
printf '%s\n' "wrong-$SECRET" >"$T_ROOT/wrong"
# the literal "!!x" is in mcp.json by design
t_canary "$SECRET" "${BANG#!}" --held-by "$T_ROOT/secret" --held-by "$T_ROOT/wrong" \
    --held-by "$PI_CODING_AGENT_DIR/mcp.json"
start_peer auth-server --basic-client "cc-basic:$SECRET" --post-client "cc-post:$BANG" --quiet
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
MCP=$PEER_URL
case "$MCP" in */mcp) ;; *) MCP="$MCP/mcp" ;; esac
mkdir -p "$PI_CODING_AGENT_DIR"
entry() { printf '"%s": {"url": "%s", "oauth": {"grantType": "client_credentials", "clientId": "%s", "clientSecret": %s}}' "$@"; }
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<JSON
{"mcpServers": {
  $(entry cmd "$MCP" cc-basic "\"!cat '$T_ROOT/secret'\""),
  $(entry literal "$MCP?l" cc-post "\"!$BANG\""),
  $(entry failing "$MCP?f" cc-basic '"!exit 3"'),
  $(entry wrong "$MCP?w" cc-basic "\"!cat '$T_ROOT/wrong'\"")
}}
JSON
stats() { curl -sS --max-time 10 "$AS/__test/stats"; }
# initialize against the MCP server with a header; prints the HTTP status
mcp_status() {
    curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$MCP" \
        -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
        -H "$1" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
}

# ---- the command's output is the secret ----
T_CANARY_STDOUT=1 run 0 A -vv header --json cmd
auth=$(json_get "$OUT" 'j.headers.Authorization')
assert_contains "$auth" "Bearer "
assert_eq "$(mcp_status "Authorization: $auth")" 200 "the MCP server with the token"
assert_eq "$(json_get "$(stats)" 'j.client_credentials_grants')" 1 "client_credentials grants"

# ---- "!!x" is the literal "!x" (client_secret_post) ----
T_CANARY_STDOUT=1 run 0 A header --json literal
assert_contains "$(json_get "$OUT" 'j.headers.Authorization')" "Bearer "
assert_eq "$(json_get "$(stats)" 'j.client_credentials_grants')" 2 "client_credentials grants"

# ---- a command that fails: how it ended, the key, the fix; no grant attempted ----
run 3 A header failing
assert_contains "$ERR" "oauth.clientSecret of 'failing': its command (the value starts with '!') gave no value: the command exited with status 3"
assert_contains "$ERR" 'write "!!" for a value that starts with a literal'
assert_not_contains "$ERR" "exit 3" "the error (never the command)"
assert_eq "$(json_get "$(stats)" 'j.client_credentials_grants')" 2 "client_credentials grants"

# ---- the wrong secret: the server refuses it, and the secret is not quoted ----
run 5 A -vv header wrong
assert_contains "$ERR" "invalid_client"
assert_not_contains "$ERR" "wrong-" "the error"

# ---- no secrets to run it: the error names what to install or set ----
CREDKIT_SECRETS="$T_ROOT/none" run 3 A header cmd --refresh
assert_contains "$ERR" "oauth.clientSecret of 'cmd': its command (the value starts with '!') is run by secrets: CREDKIT_SECRETS names"
