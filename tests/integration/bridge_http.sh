# mcp-bridge with HTTP servers, compared with a direct connection (tests/peers/bridge-agent.mjs,
# the SDK's Client on both sides), inside a private network namespace (the servers bind every
# interface): server-everything over Streamable HTTP (the whole comparison: sampling, elicitation
# and roots come on its streams), the SDK's example servers jsonResponseStreamableHttp.js (JSON
# responses, no GET stream), ssePollingExample.js (the server closes the SSE stream in the middle
# of a call: the bridge resumes with Last-Event-ID after the server's retry) and simpleSseServer.js
# (the 2024-11-05 HTTP+SSE transport: the bridge falls back on its own; "type": "sse" says so).
# Each reached by URL (`connect URL`), by configuration entry (`connect NAME`) and together in
# aggregate mode (`serve`).
. "$(dirname "$0")/lib/netns.sh"
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port_closed() { ! port_open "$1"; }
# serve NAME PORT CMD...: starts a server in the background (stopped on exit) and waits until it
# accepts connections on PORT; SERVED_PID is its pid
serve() {
    local name=$1 port=$2
    shift 2
    ! port_open "$port" || fail "port $port is taken before $name starts"
    "$@" >"$T_ROOT/$name.log" 2>&1 </dev/null &
    SERVED_PID=$!
    T_PEER_PIDS+=("$SERVED_PID")
    wait_until 20 "$name listening on port $port" port_open "$port"
}
unserve() { # PID PORT
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    wait_until 10 "port $2 closed" port_closed "$2"
}

# agent LABEL MODE BRIDGE-ARGS-JSON SERVER=SPEC:SUITE...: one run of bridge-agent.mjs
agent() {
    local label=$1 mode=$2 bridge=$3 s args=()
    shift 3
    for s in "$@"; do
        args+=(--server "${s%:*}" --suite "${s%%=*}=${s##*:}")
    done
    driver "$label" "$T_ROOT/$label.bridge.log" bridge-agent.mjs --mode "$mode" "${args[@]}" --bridge "$bridge" \
        --bridge-log "$T_ROOT/$label.bridge.log"
}
bridge() { json_argv "$MCP_BRIDGE_BIN" "$@"; }

everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
examples="$PEERS_DIR/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server"
EV=http://127.0.0.1:3100/mcp
JSON=http://127.0.0.1:3000/mcp
POLL=http://127.0.0.1:3001/mcp
LEGACY=http://127.0.0.1:3000/mcp

cat >"$T_ROOT/http.json" <<EOF
{ "settings": { "settleTimeout": 15000 },
  "mcpServers": {
    "everything": { "url": "$EV" },
    "json": { "url": "$JSON", "timeout": 20000 },
    "poll": { "url": "$POLL" }
} }
EOF
cat >"$T_ROOT/legacy.json" <<EOF
{ "settings": { "settleTimeout": 15000 },
  "mcpServers": {
    "legacy": { "url": "$LEGACY" },
    "legacy-sse": { "url": "$LEGACY", "type": "sse" }
} }
EOF

PORT=3100 serve everything 3100 node "$everything" streamableHttp
serve json 3000 node "$examples/jsonResponseStreamableHttp.js"
json_pid=$SERVED_PID
serve poll 3001 node "$examples/ssePollingExample.js"

agent everything-url single "$(bridge connect "$EV")" "everything=http:$EV:everything"
agent json-url single "$(bridge connect "$JSON")" "json=http:$JSON:json"
agent json-name single "$(bridge connect json --config "$T_ROOT/http.json")" "json=http:$JSON:json"
agent poll-url single "$(bridge connect "$POLL")" "poll=http:$POLL:polling"
agent http-aggregate aggregate "$(bridge serve --config "$T_ROOT/http.json")" \
    "everything=http:$EV:everything-core" "json=http:$JSON:json" "poll=http:$POLL:polling"

# the legacy server takes port 3000 over
unserve "$json_pid" 3000
serve legacy 3000 node "$examples/simpleSseServer.js"
agent legacy-url single "$(bridge connect "$LEGACY")" "legacy=sse:$LEGACY:legacy"
agent legacy-name single "$(bridge connect legacy --config "$T_ROOT/legacy.json")" "legacy=sse:$LEGACY:legacy"
agent legacy-aggregate aggregate "$(bridge serve --config "$T_ROOT/legacy.json")" \
    "legacy=sse:$LEGACY:legacy" "legacy-sse=sse:$LEGACY:legacy"

# Credentials over plain http: to loopback they go; to any other host only with "allowHttp"
# (in this namespace 10.255.255.1 is unreachable: a refusal comes before any connection, an
# allowed attempt fails connecting). Headers that are not safe to send are refused by name.
echo "== credentials over plain http, unsafe headers"
token="tok-$RANDOM-$RANDOM"
printf '#!/bin/sh\nprintf %s\n' "'{\"headers\":{\"Authorization\":\"Bearer has space\"}}\\n'" \
    >"$T_ROOT/helper-bad.sh"
chmod +x "$T_ROOT/helper-bad.sh"
cat >"$T_ROOT/plain.json" <<EOF
{ "mcpServers": {
    "local-bearer": { "url": "$EV", "headers": { "Authorization": "Bearer \${CK_TOKEN}" } },
    "remote-bearer": { "url": "http://10.255.255.1:9/mcp",
                       "headers": { "Authorization": "Bearer \${CK_TOKEN}" } },
    "remote-query": { "url": "http://10.255.255.1:9/mcp?key=\${CK_TOKEN}" },
    "remote-allowed": { "url": "http://10.255.255.1:9/mcp", "allowHttp": true,
                        "headers": { "Authorization": "Bearer \${CK_TOKEN}" } },
    "remote-literal": { "url": "http://10.255.255.1:9/mcp", "headers": { "X-Client": "t" } },
    "bad-helper": { "url": "$EV", "headersHelper": "$T_ROOT/helper-bad.sh" }
} }
EOF
plain() {
    run "$1" env CK_TOKEN="$token" "$MCP_BRIDGE_BIN" --config "$T_ROOT/plain.json" test "$2" \
        --connect-timeout 3s "${@:3}"
}
plain 0 local-bearer
echo "ok loopback: the bearer token goes over plain http"
refusal="plain http to a host that is not loopback"
plain 1 remote-bearer
assert_contains "$ERR" "server 'remote-bearer': the URL is $refusal: credentials (header 'Authorization') are not sent in clear; use an https:// URL, or set \"allowHttp\": true"
plain 1 remote-query
assert_contains "$ERR" 'carries ${...} values: they are not sent in clear'
plain 1 remote-allowed
T_CHECKS=$((T_CHECKS + 1))
case $ERR in *"$refusal"*) fail "allowHttp: still refused: $ERR" ;; esac
plain 1 remote-literal
T_CHECKS=$((T_CHECKS + 1))
case $ERR in *"$refusal"*) fail "a literal header counted as a credential: $ERR" ;; esac
# a URL on the command line: --allow-http is its "allowHttp" (and belongs to an entry's name
# nowhere)
plain_url() {
    run "$1" env CK_TOKEN="$token" "$MCP_BRIDGE_BIN" test 'http://10.255.255.1:9/mcp?key=${CK_TOKEN}' \
        --connect-timeout 3s "${@:2}"
}
plain_url 1
assert_contains "$ERR" 'carries ${...} values: they are not sent in clear'
plain_url 1 --allow-http
T_CHECKS=$((T_CHECKS + 1))
case $ERR in *"$refusal"*) fail "--allow-http: still refused: $ERR" ;; esac
plain 3 remote-bearer --allow-http
assert_contains "$ERR" "--allow-http goes with a URL; for 'remote-bearer' set \"allowHttp\": true in its configuration entry"
# serve: a refusal fails the server for good, said once at the default level: no retry in a
# loop (each would run the credentials helpers again); a use later asks again, said at debug
# level (-vv shows every attempt; the repeats have no "warning:")
cat >"$T_ROOT/refused.json" <<EOF
{ "mcpServers": { "remote-bearer": { "url": "http://10.255.255.1:9/mcp", "lifecycle": "keep-alive",
                                     "headers": { "Authorization": "Bearer \${CK_TOKEN}" } } } }
EOF
mkfifo "$T_ROOT/refused.in"
CK_TOKEN="$token" timeout 60 "$MCP_BRIDGE_BIN" -vv serve --config "$T_ROOT/refused.json" \
    <"$T_ROOT/refused.in" >"$T_ROOT/refused.out" 2>"$T_ROOT/refused.log" &
refused_pid=$!
exec 3>"$T_ROOT/refused.in"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&3
asks() { grep -c "server 'remote-bearer': asking for credentials" "$T_ROOT/refused.log" || true; }
failed_times() { [ "$(grep -c "server 'remote-bearer': failed (" "$T_ROOT/refused.log" || true)" -ge "$1" ]; }
wait_until 30 "remote-bearer to fail" failed_times 1
# failed for good, not waiting in the backoff (which says so as it starts to wait)
assert_eq "$(asks)" 1 "attempts while failed for good"
assert_eq "$(grep -c "server 'remote-bearer': waiting to connect again" "$T_ROOT/refused.log" || true)" 0 \
    "backoff waits after the refusal"
printf '%s\n' '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp","arguments":{"connect":"remote-bearer"}}}' >&3
wait_until 30 "remote-bearer to fail again after mcp({connect})" failed_times 2
exec 3>&-
rc=0
wait "$refused_pid" || rc=$? # bounded by its timeout
assert_eq "$rc" 0 "the bridge at the end of its input"
assert_eq "$(asks)" 2 "attempts: the first and the one asked for"
assert_eq "$(grep -c "warning: server 'remote-bearer': the URL is $refusal" "$T_ROOT/refused.log" || true)" 1 \
    "the refusal said at the default level"
assert_eq "$(grep -c "^mcp-bridge: server 'remote-bearer': the URL is $refusal" "$T_ROOT/refused.log" || true)" 1 \
    "the second refusal, at debug level"
plain 1 bad-helper
assert_contains "$ERR" "header 'Authorization'"
assert_contains "$ERR" "the bearer token is not an RFC 6750 token"
T_CHECKS=$((T_CHECKS + 1))
case $(cat "$T_ROOT"/*.log "$T_ROOT/err" "$T_ROOT/out") in *"$token"*) fail "the token is in an output" ;; esac
echo "ok credentials refused over plain http to other hosts unless allowHttp; unsafe headers refused"

bridge_done "mcp-bridge with HTTP servers"
