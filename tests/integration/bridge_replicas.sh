# Replicas of `mcp-bridge serve --listen` behind a real load balancer: HAProxy (Debian's) in the
# foreground with the configuration of docs/deploy.md, taken from that page as it is (only its
# addresses replaced by the test's ports), in front of two replicas that share a --state-key
# (resolved through secrets, from the environment here) and carry --replica-name r1 / r2.
# tests/peers/replicas-agent.mjs drives the SDK clients through the balancer:
#   1. each replica serves server-everything (REPLICA=r1|r2 in its environment: get-env says who
#      answered) and eras-mrtr-server.mjs: the v2 SDK Client (2026-07-28) sees its calls
#      answered by both replicas; a 2026-07-28 server's two input rounds complete with the retry
#      answered by the other replica; a legacy server's question (the bridge's own state): the
#      retry at the replica that does not hold the round gets -32602 "another replica holds
#      it", through the balancer it reaches the holder and completes;
#      two agents' subscriptions/listen streams land on different replicas: a server added to
#      one replica's configuration is told on one stream, one added to the other's on the other;
#   2. the v1 SDK Client (a 2025-11-25 session) stays on one replica, which HAProxy pins by
#      Mcp-Session-Id; the other replica does not know the session (404);
#   3. GET /healthz answers 200 without a token or a matching Host (the balancer's health check),
#      also on a bridge that wants a token (whose /mcp answers 401 without it);
#   4. oidc-provider (auth-server.mjs) with 3 s access tokens in front of an MCP server that
#      checks them (mcp-resource-server.mjs), signed in once through the headless browser: two
#      replicas on one token store, called every 300 ms through the balancer, refresh once per
#      expiry between them (counted at the authorization server), no refresh token used twice.
# Each replica and HAProxy stop on SIGTERM with status 0. Last, docs/deploy.md's systemd units
# pass `systemd-analyze verify` (the binary's path changed to the build's), where it is installed.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
command -v haproxy >/dev/null || fail "haproxy is missing: run scripts/install-deps"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"
EV="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$EV" ] || fail "server-everything is missing: run scripts/install-deps"
DOC="$TESTS_DIR/../docs/deploy.md"
[ -f "$DOC" ] || fail "docs/deploy.md is missing"

export CREDKIT_SECRETS="$SECRETS_BIN" CREDKIT_MCP_AUTH="$MCP_AUTH_BIN" MCP_BRIDGE_CACHE=off
BRIDGE_STATE_KEY="state-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export BRIDGE_STATE_KEY
t_canary "$BRIDGE_STATE_KEY"

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

# bridge_up LABEL ARGS...: `mcp-bridge ARGS... --listen-url-file T_ROOT/LABEL.url` in the
# background (its log T_ROOT/LABEL.log), its pid in PID_<LABEL>, once its URL is written
bridge_up() {
    local label=$1
    shift
    "$MCP_BRIDGE_BIN" "$@" --listen-url-file "$T_ROOT/$label.url" \
        </dev/null >"$T_ROOT/$label.stdout" 2>"$T_ROOT/$label.log" &
    local pid=$! end=$((SECONDS + 30))
    printf -v "PID_$label" %s "$pid"
    until test -s "$T_ROOT/$label.url"; do
        kill -0 "$pid" 2>/dev/null || fail "$label exited: $(tail -5 "$T_ROOT/$label.log")"
        [ "$SECONDS" -lt "$end" ] || fail "no URL of $label within 30 s: $(tail -5 "$T_ROOT/$label.log")"
        sleep 0.05
    done
    T_CHECKS=$((T_CHECKS + 1))
}
# replica LABEL NAME CONFIG: a replica on 127.0.0.1, a free port, the shared state key
replica() {
    bridge_up "$1" -v --config "$3" serve --listen 127.0.0.1:0 --state-key BRIDGE_STATE_KEY \
        --replica-name "$2"
}
port_of() { local u; u=$(cat "$T_ROOT/$1.url"); u=${u#http://127.0.0.1:}; echo "${u%/mcp}"; }

# balancer LABEL R1 R2: HAProxy with docs/deploy.md's configuration (the first ```haproxy block),
# its frontend on a free port and its servers r1, r2 the replicas R1, R2; LB the balancer's URL
balancer() {
    local label=$1 port
    port=$(free_port)
    awk '/^```haproxy$/ {on = 1; next} on && /^```$/ {exit} on' "$DOC" |
        sed -e "s/127\.0\.0\.1:8765/127.0.0.1:$port/" \
            -e "s/127\.0\.0\.1:8801/127.0.0.1:$(port_of "$2")/" \
            -e "s/127\.0\.0\.1:8802/127.0.0.1:$(port_of "$3")/" >"$T_ROOT/$label.cfg"
    grep -q "127.0.0.1:$port" "$T_ROOT/$label.cfg" || fail "docs/deploy.md's HAProxy block binds no 127.0.0.1:8765"
    run 0 haproxy -c -f "$T_ROOT/$label.cfg"
    haproxy -db -f "$T_ROOT/$label.cfg" </dev/null >"$T_ROOT/$label.log" 2>&1 &
    printf -v "PID_$label" %s "$!"
    LB="http://127.0.0.1:$port/mcp"
    lb_up() { [ "$(curl -s -o /dev/null -w '%{http_code}' "${LB%/mcp}/healthz")" = 200 ]; }
    wait_until 20 "HAProxy on $port" lb_up
}

# stop LABEL...: SIGTERM to a bridge, SIGUSR1 to HAProxy (its graceful stop; SIGTERM is its
# hard one, status 143): each must exit 0 within the test's bound
stop() {
    local label pid rc sig
    for label in "$@"; do
        pid=PID_$label
        sig=TERM
        [ -f "$T_ROOT/$label.cfg" ] && sig=USR1
        kill -"$sig" "${!pid}"
        rc=0
        wait "${!pid}" || rc=$?
        assert_eq "$rc" 0 "$label: exit status after SIGTERM ($(tail -3 "$T_ROOT/$label.log"))"
    done
}

# agent LABEL ARGS...: replicas-agent.mjs; each "ok" line is a check, a failure fails the test
agent() {
    local label=$1 rc=0
    shift
    echo "== $label"
    node "$PEERS_DIR/replicas-agent.mjs" "$@" </dev/null >"$T_ROOT/$label.out" 2>"$T_ROOT/$label.err" || rc=$?
    cat "$T_ROOT/$label.out"
    T_CHECKS=$((T_CHECKS + $(grep -c '^ok ' "$T_ROOT/$label.out" || true)))
    if [ "$rc" != 0 ]; then
        tail -n 30 "$T_ROOT"/r*.log "$T_ROOT/$label.err"
        fail "$label: $(grep -c '^FAIL ' "$T_ROOT/$label.out" || true) check(s) failed"
    fi
}

# 1-3. server-everything and eras-mrtr-server on two replicas
for r in r1 r2; do
    node - "$T_ROOT/$r.json" "$(command -v node)" "$EV" "$PEERS_DIR/eras-mrtr-server.mjs" "$T_ROOT" "$r" <<'JS'
const [file, node, ev, mrtr, root, name] = process.argv.slice(2);
require('fs').writeFileSync(file, JSON.stringify({ mcpServers: {
  everything: { command: node, args: [ev, 'stdio', root], env: { REPLICA: name } },
  mrtr: { command: node, args: [mrtr, root] },
} }));
JS
    replica "$r" "$r" "$T_ROOT/$r.json"
done
balancer lb r1 r2
agent spread --scenario spread --url "$LB" --replica "r1=$(cat "$T_ROOT/r1.url")" --replica "r2=$(cat "$T_ROOT/r2.url")"
agent listen --scenario listen --url "$LB" --config "r1=$T_ROOT/r1.json" --config "r2=$T_ROOT/r2.json" \
    --extra-server "$PEERS_DIR/bridge-server.mjs" --root "$T_ROOT"
agent pinned --scenario pinned --url "$LB" --replica "r1=$(cat "$T_ROOT/r1.url")" --replica "r2=$(cat "$T_ROOT/r2.url")"
assert_contains "$(cat "$T_ROOT/r1.log" "$T_ROOT/r2.log")" "another replica's round" "a replica's log"
# the health check: no token, no Host of the replica's (HAProxy's check sends none)
run 0 curl -sS --fail -H 'Host: bridge.example' "${LB%/mcp}/healthz"
assert_eq "$OUT" "ok" "GET /healthz through the balancer"
run 0 curl -sS -o /dev/null -w '%{http_code}' -H 'Host: bridge.example' "$(cat "$T_ROOT/r1.url")"
assert_eq "$OUT" 403 "/mcp with a foreign Host (still refused)"
stop r1 r2 lb
# a bridge that wants a token: /healthz still answers without it, /mcp does not
BRIDGE_TOKEN="token-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export BRIDGE_TOKEN
t_canary "$BRIDGE_TOKEN"
bridge_up tok -v --config "$T_ROOT/r1.json" serve --listen 0.0.0.0:0 --listen-token BRIDGE_TOKEN
TOK_PORT=$(sed -E 's#^http://[^:]+:([0-9]+)/mcp$#\1#' "$T_ROOT/tok.url")
run 0 curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TOK_PORT/healthz"
assert_eq "$OUT" 200 "GET /healthz without the token"
run 0 curl -sS -o /dev/null -w '%{http_code}' -X POST -H 'content-type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"ping"}' "http://127.0.0.1:$TOK_PORT/mcp"
assert_eq "$OUT" 401 "POST /mcp without the token"
stop tok
# the options' faults: a name that is no replica name (2), a state key secrets cannot give (1),
# the options without --listen (2)
run 2 "$MCP_BRIDGE_BIN" --config "$T_ROOT/r1.json" serve --listen 0 --replica-name 'r.1'
assert_contains "$ERR" "--replica-name 'r.1': 1 to 63 letters, digits, '-' or '_'"
run 1 "$MCP_BRIDGE_BIN" --config "$T_ROOT/r1.json" serve --listen 0 --state-key BRIDGE_NO_SUCH_KEY
assert_contains "$ERR" "--state-key 'BRIDGE_NO_SUCH_KEY'"
run 2 "$MCP_BRIDGE_BIN" --config "$T_ROOT/r1.json" serve --state-key BRIDGE_STATE_KEY
assert_contains "$ERR" "go with --listen"

# 4. one token store, two replicas, 3 s tokens: one refresh per expiry between them
mkdir -p "$XDG_RUNTIME_DIR/browser-home"
cat >"$T_ROOT/browser" <<EOF
#!/bin/sh
HOME="$XDG_RUNTIME_DIR/browser-home" exec node "$PEERS_DIR/browser.mjs" "\$@"
EOF
chmod +x "$T_ROOT/browser"
export BROWSER="$T_ROOT/browser" BROWSER_LOG="$T_ROOT/browser.log"
start_peer auth-server --access-ttl 3
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
RS=$PEER_URL
keys_in() { node -e 'fetch(process.argv[1], {method: "POST"}).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "${RS%/mcp}/__test/keys"; }
wait_until 60 "the key set of $RS" keys_in
printf '{"mcpServers": {"rs": {"url": "%s", "auth": "oauth"}}}\n' "$RS" >"$T_ROOT/oauth.json"
run 0 "$MCP_AUTH_BIN" --config "$T_ROOT/oauth.json" login rs --timeout 90s
assert_contains "$ERR" "signed in to"
replica o1 r1 "$T_ROOT/oauth.json"
replica o2 r2 "$T_ROOT/oauth.json"
balancer olb o1 o2
agent refresh --scenario refresh --url "$LB" --as "$AS" --tool mcp_rs_whoami --ttl 3 --duration 15
stop o1 o2 olb

# 5. docs/deploy.md's systemd units (its ```ini blocks: the system template, the user unit)
if command -v systemd-analyze >/dev/null; then
    mkdir -p "$T_ROOT/units"
    awk '/^```ini$/ {n++; on = 1; next} on && /^```$/ {on = 0; next} on {print > (dir "/" n ".unit")}' \
        dir="$T_ROOT/units" "$DOC"
    [ -s "$T_ROOT/units/1.unit" ] && [ -s "$T_ROOT/units/2.unit" ] || fail "docs/deploy.md has no two \`\`\`ini blocks"
    sed "s#/usr/bin/mcp-bridge#$MCP_BRIDGE_BIN#" "$T_ROOT/units/1.unit" >"$T_ROOT/units/mcp-bridge@.service"
    sed "s#%h/.local/bin/mcp-bridge#$MCP_BRIDGE_BIN#" "$T_ROOT/units/2.unit" >"$T_ROOT/units/mcp-bridge.service"
    run 0 systemd-analyze verify "$T_ROOT/units/mcp-bridge@r1.service"
    run 0 systemd-analyze verify "$T_ROOT/units/mcp-bridge.service"
else
    echo "note: systemd-analyze is not installed: the units of docs/deploy.md not verified"
fi
