# mcp-bridge serve --listen: agents over Streamable HTTP, many on one bridge, with real peers.
# server-everything (stdio) behind `serve --listen 127.0.0.1:0`; tests/peers/listen-agents.mjs
# drives two v1 SDK Clients (2025-11-25 sessions) at once and the v2 SDK Client (2026-07-28):
# tools, calls, progress, sampling routed back to the agent whose call asked, DELETE ending a
# session. Then Claude Code adds the URL (`claude mcp add --transport http`) and `claude mcp
# list` shows it connected. Then the safety rules: a DNS-rebinding request (Host or Origin of
# another site) gets 403, a non-loopback bind without --listen-token is refused at start (exit
# 2), and with a token (resolved through secrets, from the environment here) a request without
# it, or with another, gets 401 while the right one is served; the token never shows in a log.
# Between them, the edges: the Mcp-* headers of 2026-07-28 checked against the body (400 with
# -32020; an unknown method 404), a resumption asked for (405: not served), DELETE, a body over
# the bound (413), and --max-agents (503).
# The same agents on `connect everything --listen --bridge-eras` (single mode: names unchanged).
# Last, SIGTERM: the bridge exits 0 and leaves no process behind.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

EV="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$EV" ] || fail "server-everything is missing: run scripts/install-deps"
CLAUDE="$PEERS_DIR/node_modules/.bin/claude"
[ -x "$CLAUDE" ] || fail "Claude Code is not installed in tests/peers (scripts/install-deps)"
export CREDKIT_SECRETS="$SECRETS_BIN" MCP_BRIDGE_CACHE=off
export DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
unset ANTHROPIC_API_KEY CLAUDE_CODE_OAUTH_TOKEN
node - "$T_ROOT/mcp.json" "$(command -v node)" "$EV" <<'JS'
const [file, node, ev] = process.argv.slice(2);
require('fs').writeFileSync(file, JSON.stringify({ mcpServers: { everything: { command: node, args: [ev, 'stdio'] } } }));
JS

BRIDGE_PID=
# listen LABEL COMMAND ARGS...: starts the bridge's COMMAND (serve, or connect SERVER) with ARGS
# (--listen ...) in the background; URL is where it serves
listen() {
    local label=$1
    shift
    rm -f "$T_ROOT/$label.url"
    "$MCP_BRIDGE_BIN" --config "$T_ROOT/mcp.json" "$@" --listen-url-file "$T_ROOT/$label.url" \
        </dev/null >"$T_ROOT/$label.stdout" 2>"$T_ROOT/$label.log" &
    BRIDGE_PID=$!
    wait_until 20 "the URL of $label" test -s "$T_ROOT/$label.url"
    URL=$(cat "$T_ROOT/$label.url")
    assert_contains "$(cat "$T_ROOT/$label.log")" "serving agents at $URL" "$label's stderr"
}
# stop_bridge LABEL: SIGTERM; it must exit 0 within 15 s, leaving no process of the test behind
stop_bridge() {
    kill -TERM "$BRIDGE_PID"
    local rc=0
    wait "$BRIDGE_PID" || rc=$?
    assert_eq "$rc" 0 "$1: exit status after SIGTERM ($(tail -5 "$T_ROOT/$1.log"))"
    local tries left=
    for tries in $(seq 50); do
        left=$(pgrep -af -- "$T_ROOT" || true)
        [ -n "$left" ] || break
        sleep 0.1
    done
    assert_eq "$left" "" "$1: processes left behind"
}
# status METHOD URL CURL_ARGS...: the HTTP status of one request
status() {
    local method=$1 url=$2
    shift 2
    curl -s -o "$T_ROOT/body" -w '%{http_code}' -X "$method" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' "$@" "$url"
}
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'

# agents LABEL ARGS...: listen-agents.mjs on URL (the bridge LABEL's); each "ok" is a check
agents() {
    local label=$1 rc=0
    shift
    node "$PEERS_DIR/listen-agents.mjs" --url "$URL" "$@" </dev/null >"$T_ROOT/agents.out" 2>"$T_ROOT/agents.err" || rc=$?
    cat "$T_ROOT/agents.out"
    T_CHECKS=$((T_CHECKS + $(grep -c '^ok ' "$T_ROOT/agents.out" || true)))
    [ "$rc" = 0 ] || fail "listen-agents failed on $label (exit $rc):
$(tail -20 "$T_ROOT/agents.err")
--- the bridge's log
$(tail -40 "$T_ROOT/$label.log")"
}

echo "== two v1 agents and a v2 agent on one bridge"
listen main serve --listen 127.0.0.1:0
case "$URL" in http://127.0.0.1:*/mcp) ;; *) fail "unexpected URL '$URL'" ;; esac
agents main

echo "== Claude Code by URL"
run 0 "$CLAUDE" mcp add --scope user --transport http bridge "$URL"
run 0 "$CLAUDE" mcp list
assert_contains "$(grep '^bridge: ' <<<"$OUT")" "✔ Connected" "claude mcp list"

echo "== DNS rebinding: another site's Host or Origin"
assert_eq "$(status POST "$URL" -H 'Host: evil.example' -H 'Origin: http://evil.example' -d "$INIT")" 403 "Host and Origin of evil.example"
assert_contains "$(cat "$T_ROOT/body")" '"code":-32600' "the 403's body"
assert_eq "$(status POST "$URL" -H 'Origin: http://evil.example' -d "$INIT")" 403 "Origin of evil.example"
port=${URL#http://127.0.0.1:}
port=${port%/mcp}
assert_eq "$(status POST "$URL" -H "Host: evil.example:$port" -d "$INIT")" 403 "Host of evil.example"
assert_eq "$(status POST "$URL" -H "Origin: http://localhost:5173" -H "Host: localhost:$port" -d "$INIT")" 200 "a loopback Origin and Host"
assert_eq "$(status POST "${URL%/mcp}/other" -d "$INIT")" 404 "another path"
assert_eq "$(status POST "$URL" -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')" 400 "a request with no session and no _meta"

echo "== 2026-07-28: the Mcp-* headers against the body"
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
LIST='{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{'"$META"'}}'
MV=(-H 'MCP-Protocol-Version: 2026-07-28')
assert_eq "$(status POST "$URL" "${MV[@]}" -H 'Mcp-Method: tools/list' -d "$LIST")" 200 "tools/list with its headers"
assert_contains "$(cat "$T_ROOT/body")" 'mcp_everything_echo' "the tools"
assert_eq "$(status POST "$URL" "${MV[@]}" -H 'Mcp-Method: tools/call' -d "$LIST")" 400 "Mcp-Method not the body's"
assert_contains "$(cat "$T_ROOT/body")" '"code":-32020' "the mismatch's error"
assert_eq "$(status POST "$URL" "${MV[@]}" -d "$LIST")" 400 "no Mcp-Method"
assert_eq "$(status POST "$URL" -H 'Mcp-Method: tools/list' -d "$LIST")" 400 "no MCP-Protocol-Version"
CALL='{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp_everything_echo","arguments":{"message":"hi"},'"$META"'}}'
assert_eq "$(status POST "$URL" "${MV[@]}" -H 'Mcp-Method: tools/call' -H 'Mcp-Name: mcp_everything_get-sum' -d "$CALL")" 400 "Mcp-Name not the body's"
# the name in the header's base64 form: the same name
b64=$(printf 'mcp_everything_echo' | base64)
assert_eq "$(status POST "$URL" "${MV[@]}" -H 'Mcp-Method: tools/call' -H "Mcp-Name: =?base64?$b64?=" -H 'Accept: application/json' -d "$CALL")" 200 "Mcp-Name in base64"
assert_contains "$(cat "$T_ROOT/body")" '"text":"Echo: hi"' "the call's answer"
NOPE='{"jsonrpc":"2.0","id":5,"method":"no/such","params":{'"$META"'}}'
assert_eq "$(status POST "$URL" "${MV[@]}" -H 'Mcp-Method: no/such' -d "$NOPE")" 404 "an unknown method"
assert_contains "$(cat "$T_ROOT/body")" '"code":-32601' "the unknown method's error"

echo "== 2025-11-25: the session's edges"
assert_eq "$(status POST "$URL" -D "$T_ROOT/headers" -d "$INIT")" 200 "initialize"
sid=$(sed -n 's/^Mcp-Session-Id: *\([^[:space:]]*\).*/\1/ip' "$T_ROOT/headers")
[ -n "$sid" ] || fail "no Mcp-Session-Id in $(cat "$T_ROOT/headers")"
assert_eq "$(status GET "$URL" -H "Mcp-Session-Id: $sid" -H 'Last-Event-ID: 7')" 405 "a resumption (not served)"
assert_eq "$(status GET "$URL")" 405 "GET without a session"
assert_eq "$(status DELETE "$URL" -H "Mcp-Session-Id: $sid")" 200 "DELETE"
assert_eq "$(status DELETE "$URL" -H "Mcp-Session-Id: $sid")" 404 "DELETE again"
head -c 17000000 /dev/zero | tr '\0' ' ' >"$T_ROOT/big"
assert_eq "$(status POST "$URL" --data-binary @"$T_ROOT/big")" 413 "a body over the bound"
stop_bridge main

echo "== connect --listen: one server, unchanged, to many agents"
listen connect-run connect everything --listen 127.0.0.1:0 --bridge-eras
agents connect-run --prefix ''
stop_bridge connect-run
echo "== a non-loopback bind needs a token"
run 2 "$MCP_BRIDGE_BIN" --config "$T_ROOT/mcp.json" serve --listen 0.0.0.0:0
assert_contains "$ERR" "--listen-token" "the refusal"
run 2 "$MCP_BRIDGE_BIN" --config "$T_ROOT/mcp.json" serve --listen 'nowhere:80'
assert_contains "$ERR" "is not an IP address" "a host name"

echo "== with a token"
TOKEN="listen-token-$RANDOM$RANDOM-canary"
t_canary "$TOKEN"
export BRIDGE_LISTEN_TOKEN_T="$TOKEN"
listen token serve --listen 0.0.0.0:0 --listen-token BRIDGE_LISTEN_TOKEN_T --max-agents 1
TURL="http://127.0.0.1:${URL##*:}"
assert_eq "$(status POST "$TURL" -d "$INIT")" 401 "no Authorization"
assert_eq "$(status POST "$TURL" -H 'Authorization: Bearer not-the-token' -d "$INIT")" 401 "another token"
assert_eq "$(status POST "$TURL" -H "Authorization: Bearer $TOKEN" -d "$INIT")" 200 "the token"
assert_contains "$(cat "$T_ROOT/body")" '"serverInfo"' "the initialize answer"
# --max-agents 1: that session is the one agent; a second gets 503
assert_eq "$(status POST "$TURL" -H "Authorization: Bearer $TOKEN" -d "$INIT")" 503 "a second agent"
assert_contains "$(cat "$T_ROOT/body")" "--max-agents" "the 503's body"
stop_bridge token
unset BRIDGE_LISTEN_TOKEN_T
