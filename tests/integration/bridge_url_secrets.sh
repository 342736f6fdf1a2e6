#!/usr/bin/env bash
# A key written literally in a URL's query string ("url": "https://x/mcp?api_key=...") is a
# secret like a header value: `mcp-bridge list` (text and --json), `test`, `doctor` and every
# log line show the URL with its query values masked ("?api_key=***"), a ${NAME} in the query
# stays a name. A bearerToken and a literal Authorization header are never printed either. The
# canaries must appear in no output and no file but the configuration and what the server
# received, where they belong.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at the mcp-bridge binary (ctest sets it)}"
export CREDKIT_SECRETS="$SECRETS_BIN"
KEY="qkey-$RANDOM-$RANDOM-canary"
BEARER="bearer$RANDOM$RANDOM"
AUTHZ="authz$RANDOM$RANDOM"
FRAG="frag-$RANDOM-$RANDOM"
mkdir -p "$T_ROOT/cfg"
REC="$T_ROOT/raw.txt"
: >"$REC"
t_canary "$KEY" "$BEARER" "$AUTHZ" "$FRAG" --held-by "$T_ROOT/cfg" --held-by "$REC"

# the server that gets the URL: it records what it received (the key reaches it, as it must)
start_peer raw-recorder --out "$REC"
cat >"$T_ROOT/cfg/mcp.json" <<EOF2
{"mcpServers": {
  "keyed": {"url": "$PEER_URL/mcp?api_key=$KEY&region=\${REGION_XYZ}#t=$FRAG"},
  "bearer": {"url": "$PEER_URL/mcp", "auth": "bearer", "bearerToken": "$BEARER"},
  "authz": {"url": "$PEER_URL/mcp", "headers": {"Authorization": "Bearer $AUTHZ"}},
  "broken": {"url": "$PEER_URL/mcp?api_key=$KEY", "command": "x"}
}}
EOF2
chmod 600 "$T_ROOT/cfg/mcp.json"
B() { REGION_XYZ=eu "$MCP_BRIDGE_BIN" --config "$T_ROOT/cfg/mcp.json" "$@"; }

echo "== list: the query's values masked, a \${NAME} kept; no token"
run 0 B list
assert_contains "$OUT" "$PEER_URL/mcp?api_key=***&region=\${REGION_XYZ}#t=***"
assert_contains "$OUT" "$PEER_URL/mcp?api_key=***"
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.find((s) => s.name === "keyed").url')" \
    "$PEER_URL/mcp?api_key=***&region=\${REGION_XYZ}#t=***"
assert_eq "$(json_get "$OUT" 'j.servers.find((s) => s.name === "broken").url')" \
    "$PEER_URL/mcp?api_key=***"
run 0 B list --json --check --connect-timeout 5s

echo "== test, doctor, and the logs at every verbosity"
run 1 B test keyed --connect-timeout 5s
run 1 B -vv test keyed --connect-timeout 5s
run 1 B -vv test bearer --connect-timeout 5s
run 1 B -vv test authz --connect-timeout 5s
run 1 B doctor --connect-timeout 5s
run 1 B doctor --json --connect-timeout 5s
# the server did get the key: the requests were made, the masking is only in what is shown
assert_contains "$(cat "$REC")" "api_key=$KEY"
