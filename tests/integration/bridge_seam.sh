# The seam with real parts: mcp-bridge asks secrets and mcp-auth for credentials whenever they
# can have changed, so the agent (the SDK's Client over stdio on `mcp-bridge serve`,
# tests/peers/seam-agent.mjs) never restarts because a token changed. oidc-provider
# (auth-server.mjs) with access tokens that live 3 s in front of MCP servers that check them
# (mcp-resource-server.mjs), signed in through the real headless browser:
#   1. calls every 300 ms for 60 s: no failed call, at least 15 distinct tokens accepted, one
#      refresh per expiry at the provider, no browser opened after the first sign-in;
#   2. three bridges at once: still one refresh per expiry, the grant alive at the end;
#   3. a secrets command whose output changes (2 s TTL) in a header (seam-header-server.mjs):
#      each new value reaches the server within one TTL, on the same bridge;
#   4. no token at start (the call names `mcp-auth NAME`), a sign-in from outside, the next
#      call succeeds with no restart;
#   5. a tool that needs a wider scope: the error names `mcp-auth NAME --scope "..."`; with
#      autoAuth the bridge signs in itself; a server that always answers 403: the storm brake;
#   6. canaries (a bearer token, the rotating secret, every token the provider issued) in no
#      command line of any process (sampled every 100 ms; every helper run's arguments are also
#      logged by its wrapper), no stdio server's environment, no file the test wrote (logs,
#      stderr, every call's result or error).
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"

rand() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
STATIC_TOKEN="seamtok$(rand)"
ROT_PREFIX="seamrot$(rand)"
t_canary "$STATIC_TOKEN" "$ROT_PREFIX" --held-by "$T_ROOT/rotating.value" --held-by "$T_ROOT/rotating.value.tmp"

# The bridge's helpers, through wrappers that log each run ("MS ARGS...") and exec the real one.
mkdir -p "$T_ROOT/bin" "$PI_CODING_AGENT_DIR"
for h in secrets:"$SECRETS_BIN" mcp-auth:"$MCP_AUTH_BIN"; do
    cat >"$T_ROOT/bin/${h%%:*}" <<EOF
#!/bin/sh
echo "\$(date +%s%3N) \$*" >>"$T_ROOT/${h%%:*}.runs"
exec "${h#*:}" "\$@"
EOF
done
# $BROWSER: the headless browser, noting each start and end. Chromium gets a home outside
# T_ROOT: its crash handler may outlive it for a moment, and is no process of the bridge's.
mkdir -p "$XDG_RUNTIME_DIR/browser-home"
cat >"$T_ROOT/bin/browser" <<EOF
#!/bin/sh
date +%s%3N >>"$T_ROOT/browser.opened"
HOME="$XDG_RUNTIME_DIR/browser-home" node "$PEERS_DIR/browser.mjs" "\$@"
rc=\$?
date +%s%3N >>"$T_ROOT/browser.closed"
exit \$rc
EOF
chmod +x "$T_ROOT/bin/"*
export CREDKIT_SECRETS="$T_ROOT/bin/secrets" CREDKIT_MCP_AUTH="$T_ROOT/bin/mcp-auth"
export BROWSER="$T_ROOT/bin/browser" BROWSER_LOG="$T_ROOT/browser.log"
count() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
opened() { count "$T_ROOT/browser.opened"; }
browsers_closed() { [ "$(count "$T_ROOT/browser.closed")" -ge "$(opened)" ]; }

# peer NAME FILE ARGS...: start_peer, its output kept as T_ROOT/NAME.log (a peer may run twice)
peer() {
    local name=$1 file=$2
    shift 2
    start_peer "$file" "$@"
    mv "$T_ROOT/$file.log" "$T_ROOT/$name.log"
    mv "$T_ROOT/$file.out" "$T_ROOT/$name.out"
}
peer as auth-server --access-ttl 3 --scope mcp:admin
AS=$PEER_URL
peer rs1 mcp-resource-server --issuer "$AS"
RS1=$PEER_URL
peer rs2 mcp-resource-server --issuer "$AS"
RS2=$PEER_URL
peer rs4 mcp-resource-server --issuer "$AS"
RS4=$PEER_URL
peer rs5 mcp-resource-server --issuer "$AS" --tool-scope admin=mcp:admin
RS5=$PEER_URL
peer rs6 mcp-resource-server --issuer "$AS" --forbid-tool whoami
RS6=$PEER_URL
peer hs seam-header-server
HS=$PEER_URL

# the resource servers fetch the issuer's key set at their first token: under the sanitizers
# that first fetch can be slow enough to refuse the first call, so each has it before any call
keys_in() { node -e 'fetch(process.argv[1], {method: "POST"}).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "${1%/mcp}/__test/keys"; }
for u in "$RS1" "$RS2" "$RS4" "$RS5" "$RS6"; do
    wait_until 60 "the key set of $u" keys_in "$u"
done

# 6. the watcher of every command line and every stdio server's environment, from now on
tokens_of() { echo "${1%/mcp}/__test/tokens"; }
TOKEN_URLS="$AS/__test/issued-tokens"
for u in "$RS1" "$RS2" "$RS4" "$RS5" "$RS6"; do TOKEN_URLS="$TOKEN_URLS $(tokens_of "$u")"; done
SEAM_CANARIES="$STATIC_TOKEN $ROT_PREFIX" \
    SEAM_TOKEN_URLS="$TOKEN_URLS" \
    SEAM_WATCH_STOP="$T_ROOT/watch.stop" SEAM_WATCH_OUT="$T_ROOT/watch.report" \
    node "$PEERS_DIR/seam-canary.mjs" watch </dev/null >/dev/null 2>"$T_ROOT/watch.err" &
watcher=$!
T_PEER_PIDS+=("$watcher")

stdio_entry="\"local\": {\"command\": \"node\", \"args\": [\"$PEERS_DIR/bridge-server.mjs\", \"--name\", \"local\", \"--tag\", \"$T_ROOT\"]}"
oauth_config() { # FILE NAME URL [EXTRA-KEYS]
    printf '{"mcpServers": {"%s": {"url": "%s", "auth": "oauth"%s}, %s}}\n' "$2" "$3" "${4:-}" "$stdio_entry" >"$1"
}
bridge() { json_argv "$MCP_BRIDGE_BIN" -vv --config "$1" serve; }
# seam LABEL SCENARIO CONFIG ARGS...: one run of seam-agent.mjs on `mcp-bridge serve`
seam() {
    local label=$1 scenario=$2 config=$3
    shift 3
    SEAM_STATIC_TOKEN="$STATIC_TOKEN" driver "$label" "$T_ROOT/$label.bridge.log" seam-agent.mjs \
        --scenario "$scenario" --bridge "$(bridge "$config")" --bridge-log "$T_ROOT/$label.bridge.log" \
        --browser-marker "$T_ROOT/browser.opened" --browser-closed "$T_ROOT/browser.closed" --mcp-auth-runs "$T_ROOT/mcp-auth.runs" \
        --secrets-runs "$T_ROOT/secrets.runs" --as "$AS" "$@"
}
login() { # CONFIG NAME: a sign-in from outside the bridge, through the browser
    run 0 "$MCP_AUTH_BIN" --config "$1" login "$2" --timeout 90s
    assert_contains "$ERR" "signed in to"
    # (mcp-auth does not wait for the browser, which ends on its own a moment later)
    wait_until 30 "the browser to close" browsers_closed
}

# 1. one sign-in, then 60 s of calls across 3 s tokens
oauth_config "$T_ROOT/s1.json" rs1 "$RS1"
login "$T_ROOT/s1.json" rs1
assert_eq "$(opened)" 1 "browser starts for the first sign-in"
seam poll poll "$T_ROOT/s1.json" --tool mcp_rs1_whoami --rs "$RS1" --ttl 3 --duration 60 \
    --min-tokens 15 --min-refreshes 14

# 2. three bridges at once on one sign-in (a server of its own, so that the first scenario's
# outcome does not carry over: mcp-auth counts an entry's token requests per minute)
oauth_config "$T_ROOT/s2.json" rs2 "$RS2"
login "$T_ROOT/s2.json" rs2
seam poll3 poll "$T_ROOT/s2.json" --bridges 3 --tool mcp_rs2_whoami --rs "$RS2" --ttl 3 \
    --duration 15 --min-tokens 4 --min-refreshes 4
assert_eq "$(opened)" 2 "browser starts: one per sign-in (scenarios 1 and 2)"

# 3. a rotating secret in a header, and a bearer token from the bridge's environment
cat >"$PI_CODING_AGENT_DIR/secrets.json" <<EOF
{"ROTATING": {"command": "echo run >>'$T_ROOT/command.runs'; cat '$T_ROOT/rotating.value'", "ttl": "2s"}}
EOF
chmod 600 "$PI_CODING_AGENT_DIR/secrets.json"
cat >"$T_ROOT/s3.json" <<EOF
{"mcpServers": {
  "rot": {"url": "$HS", "headers": {"X-Api-Key": "\${ROTATING}"}, "bearerTokenEnv": "SEAM_STATIC_TOKEN"},
  $stdio_entry
}}
EOF
SEAM_ROT_PREFIX="$ROT_PREFIX" seam rotate rotate "$T_ROOT/s3.json" --tool mcp_rot_seen --rs "$HS" \
    --ttl 2 --bumps 4 --value-file "$T_ROOT/rotating.value" --command-runs "$T_ROOT/command.runs"

# 4. the sign-in while the bridge runs
oauth_config "$T_ROOT/s4.json" rs4 "$RS4"
seam login login "$T_ROOT/s4.json" --server rs4 --tool mcp_rs4_whoami --rs "$RS4" \
    --mcp-auth "$MCP_AUTH_BIN" --auth-config "$T_ROOT/s4.json" --login-log "$T_ROOT/login4.err"

# 5. step-up, without and with autoAuth; the storm brake
oauth_config "$T_ROOT/s5.json" rs5 "$RS5"
oauth_config "$T_ROOT/s5auto.json" rs5 "$RS5" ', "autoAuth": true'
login "$T_ROOT/s5.json" rs5
seam stepup stepup "$T_ROOT/s5.json" --bridge-auto "$(bridge "$T_ROOT/s5auto.json")" --server rs5 \
    --mcp-auth "$MCP_AUTH_BIN" --auth-config "$T_ROOT/s5.json" --stepup-tool admin --stepup-scope mcp:admin
oauth_config "$T_ROOT/s6.json" rs6 "$RS6" ', "autoAuth": true'
login "$T_ROOT/s6.json" rs6
seam storm storm "$T_ROOT/s6.json" --server rs6 --tool mcp_rs6_whoami --max-logins 3

# 6. the canaries: the watcher's report, then every file the test wrote
touch "$T_ROOT/watch.stop"
watcher_done() { ! kill -0 "$watcher" 2>/dev/null; }
wait_until 30 "the canary watcher's report" watcher_done
rc=0
wait "$watcher" || rc=$?
echo "== canaries in command lines and stdio servers' environments"
cat "$T_ROOT/watch.report" 2>/dev/null || echo "FAIL no report: $(tail -5 "$T_ROOT/watch.err")"
T_CHECKS=$((T_CHECKS + 1))
[ "$rc" = 0 ] || BRIDGE_FAILED+=("canaries in command lines or environments (watcher exit $rc)")
echo "== canaries in files"
rc=0
SEAM_CANARIES="$STATIC_TOKEN $ROT_PREFIX" \
    SEAM_TOKEN_URLS="$TOKEN_URLS" \
    SEAM_SCAN_ROOT="$T_ROOT" \
    SEAM_SCAN_SKIP="$PI_CODING_AGENT_DIR/oauth $T_ROOT/rotating.value $T_ROOT/rotating.value.tmp" \
    node "$PEERS_DIR/seam-canary.mjs" scan </dev/null || rc=$?
T_CHECKS=$((T_CHECKS + 1))
[ "$rc" = 0 ] || BRIDGE_FAILED+=("canaries in files (scan exit $rc)")

bridge_done "the seam with real parts"
