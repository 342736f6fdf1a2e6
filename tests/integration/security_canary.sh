# One canary, through every path a secret takes in the suite, with real parts: a keychain recipe
# (gnome-keyring in a private D-Bus session), a command, an env, a file and a literal recipe of
# `secrets`;
# an OAuth token of oidc-provider (auth-server.mjs) kept by mcp-auth, signed in through headless
# Chromium; headers to a real HTTP MCP server that records their digests (seam-header-server.mjs);
# a headersHelper's answer; a stdio server whose "env" gets two secrets and another one that gets
# none (lib/canary-server.mjs, which quotes its environment in everything it says); the SDK's
# Client as the agent on `mcp-bridge serve` (lib/canary-agent.mjs). Calls fail on purpose: a
# server's error result and JSON-RPC error quoting its environment, a helper answer with a line
# break, a secret that does not resolve, an unknown tool.
#
# The canary must appear only where it was configured to go:
#   - while it all runs (lib/canary-watch.mjs, every 50 ms): in no command line of any process,
#     in the environment of no process of the test but those given it by configuration (which
#     variant where: see RULES), and every secrets, mcp-auth and mcp-bridge process runs with a
#     soft core-file limit of 0;
#   - every output: the bridge's log at -vv, each call's answer, `mcp-bridge list` / `test` /
#     `call`, `secrets list` / `resolve`, `mcp-auth status` (--json too), every stderr, every
#     file under T_ROOT but the token store and the files that hold a value by design (lib/
#     common.sh's t_canary), with every token the provider issued registered too;
#   - core dumps: each of the three programs, run as an unprivileged user while it waits,
#     has a soft core-file limit of 0 and is not dumpable (its /proc files are root's, as the
#     kernel makes them for a process with PR_SET_DUMPABLE 0; a control process shows the
#     check can fail).
. "$(dirname "$0")/lib/keyring.sh"
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"
LIB="$TESTS_DIR/integration/lib"
A() { "$MCP_AUTH_BIN" "$@"; }
B() { "$MCP_BRIDGE_BIN" "$@"; }

rand() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
CANARY="cnry$(rand)"
V_KEY="$CANARY-key" V_CMD="$CANARY-cmd" V_ENV="$CANARY-env" V_FILE="$CANARY-file" V_LIT="$CANARY-lit"
V_HELPER="$CANARY-helper" V_BAD="$CANARY-bad"
VARIANTS=("$V_KEY" "$V_CMD" "$V_ENV" "$V_FILE" "$V_LIT" "$V_HELPER" "$V_BAD")
# the files that hold a value by design: the command, file and helper recipes' sources,
# secrets.json with its literal recipe, and the configured server's answer with its environment
# (both checked below for what they must not hold)
VALUES="$T_ROOT/values" RESULTS="$T_ROOT/results" SJ="$PI_CODING_AGENT_DIR/secrets.json"
t_canary "$CANARY" --held-by "$VALUES" --held-by "$RESULTS/cfg-env.json" --held-by "$SJ"
mkdir -p -m 700 "$VALUES" "$RESULTS" "$T_ROOT/bin"
(
    umask 077
    printf '%s\n' "$V_CMD" >"$VALUES/cmd"
    printf '%s' "$V_HELPER" >"$VALUES/helper"
    printf '%s' "$V_BAD" >"$VALUES/bad"
    printf '%s' "$V_ENV" >"$VALUES/env"
    printf '%s\n' "$V_FILE" >"$VALUES/file"
)
digest() { printf '%s' "$1" | sha256sum | cut -c1-16; }

# holds FILE VALUE: FILE holds VALUE (no process gets the value on its command line)
holds() { grep -qaF -f <(printf '%s\n' "$2") "$1"; }
must_hold() { # FILE VALUE WHAT
    T_CHECKS=$((T_CHECKS + 1))
    holds "$1" "$2" || fail "$3: ${1#"$T_ROOT"/} does not hold it"
}
must_not_hold() { # FILE VALUE WHAT
    T_CHECKS=$((T_CHECKS + 1))
    if holds "$1" "$2"; then fail "$3: ${1#"$T_ROOT"/} holds it"; fi
}

# with-src CMD...: CMD with the env recipe's source C_SRC in its environment, and only CMD (a
# variable set for a shell function would reach every command it runs, the test's own too)
cat >"$T_ROOT/bin/with-src" <<EOF
#!/bin/sh
C_SRC=\$(cat '$VALUES/env') exec "\$@"
EOF
chmod 700 "$T_ROOT/bin/with-src"
WS="$T_ROOT/bin/with-src"

# the peers: the authorization server, the MCP server that checks its tokens, the header server
export BROWSER="node $PEERS_DIR/browser.mjs" BROWSER_LOG="$T_ROOT/browser.log"
start_peer auth-server --access-ttl 120
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
RS=$PEER_URL
start_peer seam-header-server --record-header x-api-key --record-header authorization --record-header x-helper \
    --record-header x-file --record-header x-lit
HS=$PEER_URL
TOKEN_URLS="$AS/__test/issued-tokens ${RS%/mcp}/__test/tokens"

# the watcher, from before the first secret is stored. Its rules, the first match wins: the
# bridge and the helpers it runs (with their children) get the bridge's environment, which holds
# the env recipe's source (the agent hands it to the bridge through with-src, holding none); the configured server gets the two secrets of its "env";
# every other process of the test (the other server, the peers, the browser) gets none.
SEC=$(readlink -f "$SECRETS_BIN") AUTH=$(readlink -f "$MCP_AUTH_BIN") BRIDGE=$(readlink -f "$MCP_BRIDGE_BIN")
RULES=$(node -e 'process.stdout.write(JSON.stringify([
    ["--role configured", ["cmd", "key"]],
    ["/mcp-bridge |/secrets |/mcp-auth |/bin/(bad-)?helper|sleep 0\\.4|cat .*/values/", ["env"]],
]))')
CANARY_WATCH_STOP="$T_ROOT/watch.stop" CANARY_WATCH_OUT="$T_ROOT/watch.report" CANARY_ROOT_PID=$$ \
    CANARY_VALUES="$(printf 'key=%s\ncmd=%s\nenv=%s\nfile=%s\nlit=%s\nhelper=%s\nbad=%s\n' "${VARIANTS[@]}")" \
    CANARY_ENV_RULES="$RULES" CANARY_TOKEN_URLS="$TOKEN_URLS" \
    CANARY_PROGRAMS="secrets=$SEC mcp-auth=$AUTH mcp-bridge=$BRIDGE" \
    node "$LIB/canary-watch.mjs" </dev/null >/dev/null 2>"$T_ROOT/watch.err" &
watcher=$!
T_PEER_PIDS+=("$watcher")

# 1. the secrets: keychain, command (slow enough for the watcher to see it), env, file, literal
run_in 0 "$V_KEY" S configure C_KEY --keychain
run 0 S configure C_CMD --command "sleep 0.4; cat '$VALUES/cmd'" --ttl 0
run 0 "$WS" "$SECRETS_BIN" configure C_ENV --env C_SRC
run 0 S configure C_FILE --file "$VALUES/file"
# a literal recipe is written by hand (in clear in secrets.json, which is why it warns)
node -e 'const fs = require("fs"), f = process.argv[1], j = JSON.parse(fs.readFileSync(f, "utf8"));
    j.C_LIT = "literal:" + fs.readFileSync(process.argv[2], "utf8"); fs.writeFileSync(f, JSON.stringify(j, null, 2) + "\n");' \
    "$SJ" <(printf '%s' "$V_LIT")
run 0 "$WS" "$SECRETS_BIN" -v -v resolve C_KEY C_CMD C_ENV C_FILE C_LIT
run 0 "$WS" "$SECRETS_BIN" -v -v list
run 0 "$WS" "$SECRETS_BIN" -v -v list --json
T_CANARY_STDOUT=1 run 0 "$WS" "$SECRETS_BIN" -v -v resolve --json C_KEY C_CMD C_ENV C_FILE C_LIT
for v in "$V_KEY" "$V_CMD" "$V_ENV" "$V_FILE" "$V_LIT"; do
    T_CHECKS=$((T_CHECKS + 1))
    case "$OUT" in *"$v"*) ;; *) fail "secrets resolve --json does not answer every value" ;; esac
done

# 2. the helpers: one answers the helper canary, the other one with a line break in it
cat >"$T_ROOT/bin/helper" <<EOF
#!/bin/sh
printf '{"headers": {"X-Helper": "%s"}}\n' "\$(cat '$VALUES/helper')"
EOF
cat >"$T_ROOT/bin/bad-helper" <<EOF
#!/bin/sh
printf '{"headers": {"X-Helper": "%s\\\\r\\\\nX-Injected: 1"}}\n' "\$(cat '$VALUES/bad')"
EOF
chmod 700 "$T_ROOT/bin/"*

CFG="$T_ROOT/mcp.json"
server() { printf '{"command": "node", "args": ["%s", "--role", "%s", "--tag", "%s"]%s}' "$LIB/canary-server.mjs" "$1" "$T_ROOT" "${2:-}"; }
cat >"$CFG" <<EOF
{"mcpServers": {
  "hdr": {"url": "$HS", "headers": {"X-Api-Key": "\${C_KEY}", "X-File": "\${C_FILE}", "X-Lit": "\${C_LIT}"},
          "bearerTokenEnv": "C_ENV"},
  "helped": {"url": "$HS", "headersHelper": "$T_ROOT/bin/helper"},
  "badhelper": {"url": "$HS", "headersHelper": "$T_ROOT/bin/bad-helper"},
  "missing": {"url": "$HS", "headers": {"X-Api-Key": "\${C_KEY}", "X-Other": "\${C_NOT_ANYWHERE}"}},
  "rs": {"url": "$RS", "auth": "oauth"},
  "cfg": $(server configured ', "env": {"API_KEY": "${C_CMD}", "KEY_TOO": "${C_KEY}"}'),
  "plain": $(server plain)
}}
EOF
export CREDKIT_SECRETS="$SECRETS_BIN" CREDKIT_MCP_AUTH="$MCP_AUTH_BIN"

# register_tokens: every token the provider has issued (and a JWT's signature alone) is a
# canary from now on (t_canary: every capture and every file at cleanup)
declare -A TOKENS=()
register_tokens() {
    local tok
    while IFS= read -r tok || [ -n "$tok" ]; do
        [ -n "$tok" ] && [ -z "${TOKENS[$tok]:-}" ] || continue
        TOKENS[$tok]=1
        t_canary "$tok"
    done < <(curl -sS --max-time 10 "$AS/__test/issued-tokens" | node -e '
        const j = JSON.parse(require("fs").readFileSync(0, "utf8")), out = [];
        for (const list of Object.values(j)) if (Array.isArray(list)) for (const t of list) {
            out.push(t);
            const p = t.split(".");
            if (p.length === 3 && p[2].length >= 32) out.push(p[2]);
        }
        process.stdout.write(out.join("\n"));')
}

# 3. the OAuth token: a sign-in through the browser, then what mcp-auth shows of it
run 0 A --config "$CFG" login rs --timeout 90s
assert_contains "$ERR" "signed in to"
wait_until 30 "the browser's log to show the callback" grep -q /callback "$BROWSER_LOG"
register_tokens
run 0 A --config "$CFG" -v header --json rs
run 0 A --config "$CFG" -v status
run 0 A --config "$CFG" -v status --json
run 0 A --config "$CFG" -v status rs

# 4. the agent on the bridge
PEERS_DIR="$PEERS_DIR" CANARY_BRIDGE="$(json_argv "$WS" "$MCP_BRIDGE_BIN" -vv --config "$CFG" serve)" \
    CANARY_BRIDGE_LOG="$T_ROOT/bridge.log" CANARY_RESULTS="$RESULTS" \
    CANARY_DIGESTS="{\"x-api-key\": \"$(digest "$V_KEY")\", \"authorization\": \"$(digest "Bearer $V_ENV")\",
        \"x-file\": \"$(digest "$V_FILE")\", \"x-lit\": \"$(digest "$V_LIT")\", \"x-helper\": \"$(digest "$V_HELPER")\"}" \
    driver agent "$T_ROOT/bridge.log" ../integration/lib/canary-agent.mjs
# what the configured server was given: its two secrets, no other
must_hold "$RESULTS/cfg-env.json" "$V_CMD" "the configured server's environment (the command recipe's value)"
must_hold "$RESULTS/cfg-env.json" "$V_KEY" "the configured server's environment (the keychain value)"
for v in "$V_ENV" "$V_FILE" "$V_LIT" "$V_HELPER" "$V_BAD"; do
    must_not_hold "$RESULTS/cfg-env.json" "$v" "the configured server's environment"
done
must_hold "$RESULTS/plain-fail.json" "failing on purpose" "the error result quoting the environment"
must_hold "$T_ROOT/bridge.log" "canary-server plain: environment" "the bridge's log of its servers' stderr"
# the configured server's stderr is logged too, with the secrets of its environment redacted
must_hold "$T_ROOT/bridge.log" "canary-server configured: environment" "the bridge's log of its servers' stderr"
must_hold "$T_ROOT/bridge.log" '"API_KEY":"[REDACTED:C_CMD]"' "the bridge's log of the configured server's environment"

# 5. the one-shot commands and the listings
run 0 B --config "$CFG" list
run 0 B --config "$CFG" list --json
run 0 B --config "$CFG" -v list
run 0 "$WS" "$MCP_BRIDGE_BIN" --config "$CFG" -vv test hdr
run 0 "$WS" "$MCP_BRIDGE_BIN" --config "$CFG" -vv test --json helped
run 0 "$WS" "$MCP_BRIDGE_BIN" --config "$CFG" -vv test rs
run 0 "$WS" "$MCP_BRIDGE_BIN" --config "$CFG" -vv call plain env
run 0 "$WS" "$MCP_BRIDGE_BIN" --config "$CFG" -vv call hdr seen --json
rc=0
"$WS" "$MCP_BRIDGE_BIN" --config "$CFG" -vv test badhelper >"$T_ROOT/test-bad.out" 2>"$T_ROOT/test-bad.err" || rc=$?
[ "$rc" != 0 ] || fail "mcp-bridge test badhelper succeeded with a header answer holding a line break"
T_CHECKS=$((T_CHECKS + 1))
rc=0
"$WS" "$MCP_BRIDGE_BIN" --config "$CFG" -vv call plain fail >"$T_ROOT/call-fail.out" 2>"$T_ROOT/call-fail.err" || rc=$?
[ "$rc" != 0 ] || fail "mcp-bridge call plain fail succeeded"
T_CHECKS=$((T_CHECKS + 1))

# 6. the watcher's report
touch "$T_ROOT/watch.stop"
watcher_done() { ! kill -0 "$watcher" 2>/dev/null; }
wait_until 30 "the canary watcher's report" watcher_done
rc=0
wait "$watcher" || rc=$?
echo "== canaries in command lines and environments; core-file limits"
cat "$T_ROOT/watch.report" 2>/dev/null || echo "FAIL no report: $(tail -5 "$T_ROOT/watch.err")"
T_CHECKS=$((T_CHECKS + $(grep -c '^ok ' "$T_ROOT/watch.report" 2>/dev/null || true)))
[ "$rc" = 0 ] || BRIDGE_FAILED+=("the watcher (exit $rc)")

# 7. core dumps: each program, run as another user while it waits, is not dumpable
if [ "$(id -u)" = 0 ]; then
    command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing: run scripts/install-deps"
    AS_USER=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
    USER_UID=65534
else
    AS_USER=()
    USER_UID=$(id -u)
fi
ND=$(mktemp -d /tmp/it-nodump-XXXXXX)
T_CLEANUP_DIRS+=("$ND")
mkdir -p "$ND/home" "$ND/agent" "$ND/run"
printf '{"WAIT": {"command": "touch %s/started; while [ ! -e %s/go ]; do sleep 0.05; done; echo waited-for", "timeout": "60s"}}\n' "$ND" "$ND" >"$ND/agent/secrets.json"
printf '{"mcpServers": {"rs": {"url": "%s"}}}\n' "$RS" >"$ND/mcp.json"
printf '{"mcpServers": {"waiter": {"command": "/bin/sh", "args": ["-c", "touch %s/server-started; exec cat"]}}}\n' "$ND" >"$ND/bridge.json"
printf '#!/bin/sh\ntouch %s/browser-opened\n' "$ND" >"$ND/browser"
chmod 700 "$ND/browser" "$ND/agent"
chmod 600 "$ND/agent/secrets.json"
[ "$USER_UID" = "$(id -u)" ] || chown -R "$USER_UID:$USER_UID" "$ND"
# (an array, not a function: run in the background, each program then is $! itself)
as_user=("${AS_USER[@]}" env -i PATH="$PATH" HOME="$ND/home" PI_CODING_AGENT_DIR="$ND/agent"
    XDG_RUNTIME_DIR="$ND/run" BROWSER="$ND/browser" CREDKIT_BRIDGE_BUNDLED="$CREDKIT_BRIDGE_BUNDLED")
# (a sanitized build: LeakSanitizer cannot stop the threads of a process that is not dumpable
# without CAP_SYS_PTRACE, which that user has not)
as_user+=(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
[ -z "${UBSAN_OPTIONS:-}" ] || as_user+=(UBSAN_OPTIONS="$UBSAN_OPTIONS")
# not_dumpable NAME PID EXE: PID runs EXE, with a soft core-file limit of 0, not dumpable
not_dumpable() {
    local name=$1 pid=$2 exe=$3 soft owner
    assert_eq "$(readlink -f "/proc/$pid/exe")" "$exe" "the process checked for $name"
    soft=$(awk '/^Max core file size/ {print $5}' "/proc/$pid/limits")
    assert_eq "$soft" 0 "$name: the soft core-file limit"
    owner=$(stat -c %u "/proc/$pid/mem")
    assert_eq "$owner" 0 "$name: the owner of /proc/PID/mem (root: not dumpable; $USER_UID: dumpable)"
}
# the control: a dumpable process of that user shows as its own
"${as_user[@]}" sleep 30 &
ctl=$!
runs_sleep() { [ "$(readlink -f "/proc/$ctl/exe" 2>/dev/null)" = "$(readlink -f "$(command -v sleep)")" ]; }
wait_until 10 "the control process" runs_sleep
assert_eq "$(stat -c %u "/proc/$ctl/mem")" "$USER_UID" "a dumpable process's /proc/PID/mem owner (the check can fail)"
kill "$ctl" && wait "$ctl" 2>/dev/null || true

"${as_user[@]}" "$SECRETS_BIN" get WAIT >"$ND/secrets.out" 2>"$ND/secrets.err" &
pid=$!
wait_until 20 "secrets to run its command" test -e "$ND/started"
not_dumpable secrets "$pid" "$SEC"
touch "$ND/go"
rc=0
wait "$pid" || rc=$?
assert_eq "$rc" 0 "secrets get, once released ($(cat "$ND/secrets.err"))"

"${as_user[@]}" "$MCP_AUTH_BIN" --config "$ND/mcp.json" login rs --timeout 60s >"$ND/auth.out" 2>"$ND/auth.err" &
pid=$!
wait_until 30 "mcp-auth to open the browser" test -e "$ND/browser-opened"
not_dumpable mcp-auth "$pid" "$AUTH"
kill -TERM "$pid"
wait "$pid" 2>/dev/null || true

mkfifo "$ND/in"
[ "$USER_UID" = "$(id -u)" ] || chown "$USER_UID:$USER_UID" "$ND/in"
"${as_user[@]}" "$MCP_BRIDGE_BIN" --config "$ND/bridge.json" serve <"$ND/in" >"$ND/bridge.out" 2>"$ND/bridge.err" &
pid=$!
exec 7>"$ND/in"
# an agent's opening: the bridge starts its servers for the tools list
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >&7
wait_until 30 "mcp-bridge to start its stdio server" test -e "$ND/server-started"
not_dumpable mcp-bridge "$pid" "$BRIDGE"
exec 7>&-
rc=0
wait "$pid" || rc=$?
assert_eq "$rc" 0 "mcp-bridge serve at the end of its input ($(tail -3 "$ND/bridge.err"))"

# 8. every token the provider issued is a canary too, for the scan of every file at cleanup
register_tokens
[ "${#TOKENS[@]}" -ge 2 ] || fail "the authorization server issued no token to look for"
T_CHECKS=$((T_CHECKS + 1))
# the two files that hold a value by design hold no other
must_hold "$SJ" "$V_LIT" "secrets.json (the literal recipe)"
for v in "$V_KEY" "$V_CMD" "$V_ENV" "$V_FILE" "$V_HELPER" "$V_BAD" "${!TOKENS[@]}"; do
    must_not_hold "$SJ" "$v" "secrets.json: a value other than the literal recipe's"
done
for v in "${!TOKENS[@]}"; do must_not_hold "$RESULTS/cfg-env.json" "$v" "the configured server's environment (a token)"; done

bridge_done "the canary through every path"
