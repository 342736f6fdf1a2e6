#!/usr/bin/env bash
# The sign-in callback cannot be held shut. Any local user can find the listener's port; while a
# real sign-in waits (oidc-provider, headless Chromium), 40 connections each send one byte of a
# request head every second and never finish it, reconnecting whenever one is dropped: more
# than enough to fill a listener that only has an inactivity timeout. The browser's redirect
# still gets through, and the sign-in completes in bounded time.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"

start_peer auth-server
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
MCP=$PEER_URL
case "$MCP" in */mcp) ;; *) MCP="$MCP/mcp" ;; esac
mkdir -p "$PI_CODING_AGENT_DIR"
printf '{"mcpServers": {"demo": {"url": "%s"}}}\n' "$MCP" >"$PI_CODING_AGENT_DIR/mcp.json"

# The $BROWSER: learns the callback's port from the redirect_uri, as an attacker watching the
# listening sockets would, starts the slow connections, and opens the browser once they are
# all open.
cat >"$T_ROOT/browser-under-attack.sh" <<EOF2
#!/usr/bin/env bash
url=\${*: -1}
port=\$(node -e 'process.stdout.write(new URL(new URL(process.argv[1]).searchParams.get("redirect_uri")).port)' "\$url")
node "$PEERS_DIR/slowloris.mjs" --port "\$port" --conns 40 --every-ms 1000 --duration-s 90 \
    >"$T_ROOT/slowloris.out" 2>"$T_ROOT/slowloris.log" </dev/null &
echo \$! >"$T_ROOT/slowloris.pid"
for _ in \$(seq 100); do grep -q '^READY ' "$T_ROOT/slowloris.out" 2>/dev/null && break; sleep 0.1; done
# let every slow connection be accepted and trickle before the redirect comes
sleep 3
exec node "$PEERS_DIR/browser.mjs" "\$url"
EOF2
chmod +x "$T_ROOT/browser-under-attack.sh"
export BROWSER="$T_ROOT/browser-under-attack.sh"
export BROWSER_LOG="$T_ROOT/browser.log"
stop_slowloris() {
    [ -s "$T_ROOT/slowloris.pid" ] || return 0
    kill -TERM "$(cat "$T_ROOT/slowloris.pid")" 2>/dev/null || true
}
# stopped on the way out too, keeping the test's status for t_cleanup
trap 'rc=$?; stop_slowloris; (exit "$rc"); t_cleanup' EXIT

start=$SECONDS
run 0 "$MCP_AUTH_BIN" login demo --timeout 45s
took=$((SECONDS - start))
stop_slowloris
assert_contains "$ERR" "signed in to $MCP"
wait_until 10 "the browser's log to show the callback" grep -q /callback "$BROWSER_LOG"
# the attack was on: all 40 open when the browser started, and still holding connections after
ready=$(grep -m1 '^READY ' "$T_ROOT/slowloris.out")
assert_eq "${ready#READY }" 40 "slow connections open before the browser"
# (its last lines may come after mcp-auth closed the listener, when nothing can be open: the
# seconds it held 16 or more count, at least the 3 s head start and the browser's first second)
held=$(awk '$1 == "open" && $2 >= 16' "$T_ROOT/slowloris.out" | wc -l)
T_CHECKS=$((T_CHECKS + 1))
[ "$held" -ge 4 ] || fail "the attack faded before the sign-in: $(grep '^open ' "$T_ROOT/slowloris.out" | tr '\n' ';')"
# bounded: the browser's own work (a few seconds) plus the 3 s head start, not the 45 s timeout
T_CHECKS=$((T_CHECKS + 1))
[ "$took" -lt 35 ] || fail "the sign-in took ${took}s under the slow connections"
run 0 "$MCP_AUTH_BIN" header demo
assert_contains "$OUT" "Authorization: Bearer "
t_canary "${OUT#Authorization: Bearer }"
