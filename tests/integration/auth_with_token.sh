# mcp-auth login --with-token: a token the user already has (a server that hands out static
# tokens: tests/peers/demo-bearer-server.mjs, no OAuth metadata) read from standard input and
# stored as the sign-in, then sent by a real mcp-bridge call; the JSON form with its expiry and
# refresh token; the account named; input that is no token refused without quoting it; and the
# token in no command line of any process (lib/canary-watch.mjs), no output, no log.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
A() { "$MCP_AUTH_BIN" "$@"; }
B() { "$MCP_BRIDGE_BIN" "$@"; }
LIB="$TESTS_DIR/integration/lib"
export CREDKIT_MCP_AUTH="$MCP_AUTH_BIN"

TOKEN="with-token-$RANDOM$RANDOM-zQ"
OTHER="other-token-$RANDOM$RANDOM-zQ"
REFRESH="refresh-token-$RANDOM$RANDOM"
printf '%s\n' "$TOKEN" >"$T_ROOT/token"
chmod 600 "$T_ROOT/token"
t_canary "$TOKEN" "$OTHER" "$REFRESH" --held-by "$T_ROOT/token"

CANARY_WATCH_STOP="$T_ROOT/watch.stop" CANARY_WATCH_OUT="$T_ROOT/watch.report" CANARY_ROOT_PID=$$ \
    CANARY_VALUES="$(printf 'tok=%s\nother=%s\nrefresh=%s\n' "$TOKEN" "$OTHER" "$REFRESH")" \
    node "$LIB/canary-watch.mjs" </dev/null >/dev/null 2>"$T_ROOT/watch.err" &
watcher=$!
T_PEER_PIDS+=("$watcher")

start_peer demo-bearer-server --token-file "$T_ROOT/token" --quiet
TS=$PEER_URL
mkdir -p "$PI_CODING_AGENT_DIR"
printf '{"mcpServers": {"static": {"url": "%s", "auth": "oauth"}}}\n' "$TS" >"$PI_CODING_AGENT_DIR/mcp.json"

# nothing stored: the server takes no OAuth, the bridge cannot call it
run 7 A header static
run 1 B call static echo '{"message": "x"}'

# the plain form: one line on standard input
run_in 0 "$TOKEN" A login static --with-token
assert_contains "$ERR" "stored the token for $TS"
assert_contains "$ERR" "taken as an hour from now"
run 0 A header static
assert_eq "$OUT" "Authorization: Bearer $TOKEN" "the header"
run 0 B -vv call static echo '{"message": "with a token of the user"}'
assert_contains "$OUT" "with a token of the user"
run 0 A status --json static
assert_eq "$(json_get "$OUT" 'j.servers[0].has_refresh_token')" false
assert_eq "$(json_get "$OUT" 'j.servers[0].issuer')" "${TS%/mcp}"
for f in "$PI_CODING_AGENT_DIR"/oauth/*.json; do assert_eq "$(file_mode "$f")" 600 "entry mode"; done

# the JSON form, with its lifetime and a refresh token; replaces the stored token
printf '%s\n' "$OTHER" >"$T_ROOT/token"
run_in 0 "{\"access_token\": \"$OTHER\", \"token_type\": \"bearer\", \"expires_in\": 7200, \"refresh_token\": \"$REFRESH\"}" \
    A login static --with-token
assert_contains "$ERR" "(refreshed automatically)"
run 0 A status --json static
assert_eq "$(json_get "$OUT" 'j.servers[0].has_refresh_token')" true
exp=$(json_get "$OUT" 'j.servers[0].expires_at')
[ $((exp - $(date +%s))) -gt 7100 ] || fail "expires_at $exp is not two hours from now"
T_CHECKS=$((T_CHECKS + 1))
run 0 B call static whoami '{}'
assert_contains "$OUT" "authorized by a bearer token"

# another account of the same server, side by side
run_in 0 "$TOKEN" A login static --with-token --account second
assert_contains "$ERR" "as the account 'second'"
run 0 A header static --account second
assert_eq "$OUT" "Authorization: Bearer $TOKEN" "the second account's header"
run 0 A header static
assert_eq "$OUT" "Authorization: Bearer $OTHER" "the default account's header"

# what is no token is refused, never quoted; the stored token stays
run_in 2 "" A login static --with-token
assert_contains "$ERR" "no token on standard input"
run_in 2 "two words$REFRESH" A login static --with-token
assert_contains "$ERR" "is not a bearer token"
run_in 2 "$(printf 'line-one-%s\nline-two' "$REFRESH")" A login static --with-token
assert_contains "$ERR" "more than one line"
run_in 2 "{\"access_token\": \"$REFRESH\"" A login static --with-token
assert_contains "$ERR" "not valid JSON"
run_in 2 "{\"refresh_token\": \"$REFRESH\"}" A login static --with-token
assert_contains "$ERR" "has no \"access_token\""
run_in 2 "{\"access_token\": \"$REFRESH\", \"expires_in\": -5}" A login static --with-token
assert_contains "$ERR" "\"expires_in\" is not a positive whole number"
run_in 2 "$TOKEN" A login static --with-token --device-code
assert_contains "$ERR" "takes none of"
run 0 A header static
assert_eq "$OUT" "Authorization: Bearer $OTHER" "the header after the refused input"

# the watcher: no command line held a token
touch "$T_ROOT/watch.stop"
wait_until 20 "the canary watcher's report" test -s "$T_ROOT/watch.report"
wait "$watcher" || fail "canary watcher: $(grep -v '^ok' "$T_ROOT/watch.report" || cat "$T_ROOT/watch.err")"
T_CHECKS=$((T_CHECKS + $(grep -c '^ok' "$T_ROOT/watch.report")))
