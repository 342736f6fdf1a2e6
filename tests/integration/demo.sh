# scripts/demo's demonstrations (the stages after installing and building), run against the
# binaries under test, so the README's first command keeps working: part 1 (an MCP server behind
# OAuth with 8-second tokens and its authorization server on 127.0.0.1, the sign-in with mcp-auth
# through headless Chromium, an agent on `mcp-bridge -v serve` across three refreshes), and
# part 2 (secrets in a private keychain, one of them the bearer header of an HTTP server reached
# through the bridge). Also the loopback shim of tests/peers/lib.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at the mcp-bridge binary (ctest sets it)}"
[ -x "$MCP_BRIDGE_BIN" ] || fail "no mcp-bridge at $MCP_BRIDGE_BIN (build the mcp-bridge target)"
[ -d "$PEERS_DIR/node_modules" ] || fail "tests/peers/node_modules is missing: run scripts/install-deps"

# --- the loopback shim the demo starts its HTTP server with: every form of listen() without a
# host (or with 0.0.0.0 / ::) ends up on 127.0.0.1, an explicit loopback host stays
SHIM="$PEERS_DIR/lib/loopback-only.cjs"
run 0 node --require "$SHIM" -e '
const net = require("node:net"), http = require("node:http");
const forms = [
  s => s.listen(0), s => s.listen(0, () => {}), s => s.listen({ port: 0 }), s => s.listen(),
  s => s.listen(0, "0.0.0.0"), s => s.listen({ port: 0, host: "::" }), s => s.listen(0, 8, () => {}),
  s => s.listen("0"), s => s.listen(0, "127.0.0.2"),
];
(async () => {
  for (const [i, f] of forms.entries()) {
    const s = i % 2 ? http.createServer() : net.createServer();
    await new Promise(r => { s.once("listening", r); f(s); });
    console.log(`form ${i}: ${s.address().address}`);
    await new Promise(r => s.close(r));
  }
})();'
for i in 0 1 2 3 4 5 6 7; do assert_contains "$OUT" "form $i: 127.0.0.1"; done
assert_contains "$OUT" "form 8: 127.0.0.2"
assert_not_contains "$OUT" "0.0.0.0"
# the port file: written once the server listens, the port it got
run 0 env LOOPBACK_ONLY_PORT_FILE="$T_ROOT/port" node --require "$SHIM" -e '
const s = require("node:http").createServer();
s.listen(0, () => { console.log(`port ${s.address().port}`); s.close(); });'
assert_eq "port $(cat "$T_ROOT/port")" "$OUT" "the port file"

# --- part 1: OAuth with short-lived tokens, through the bridge
: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"
export DEMO_BRIDGE_DIR DEMO_AUTH_DIR
DEMO_BRIDGE_DIR=$(dirname "$MCP_BRIDGE_BIN")
DEMO_AUTH_DIR=$(dirname "$MCP_AUTH_BIN")
# the helpers the bridge runs are the ones under test too
export CREDKIT_MCP_AUTH="$MCP_AUTH_BIN" CREDKIT_SECRETS="$SECRETS_BIN"
# 8-second tokens: both margins (the bridge's skew, mcp-auth's refresh margin) are 2 s, room for a
# refresh on a loaded machine
export CI=true DEMO_ACCESS_TTL=8 DEMO_TOKENS=4
run 0 bash "$TESTS_DIR/../scripts/demo" --oauth-stage
assert_contains "$OUT" '"auth": "oauth"'
# before the sign-in: login required, with the command that fixes it (list, then a call); after
# it, signed in
assert_contains "$OUT" "oauth: login required: run 'mcp-auth protected'"
assert_contains "$OUT" "oauth: signed in, expires in"
assert_contains "$OUT" "(exit status 6)"
assert_contains "$ERR" "server 'protected': sign-in required: run 'mcp-auth protected'"
# the sign-in, through the headless browser
assert_contains "$ERR" "signed in to http://127.0.0.1:"
# the agent: one session, every call answered, four tokens, a clean exit
assert_contains "$OUT" "connected to mcp-bridge"
assert_contains "$OUT" "tools/list: mcp, mcp_protected_whoami"
assert_contains "$OUT" "token 4, valid until"
assert_contains "$OUT" "on one session: 0 failed, 4 different tokens accepted by the server"
assert_contains "$OUT" "stdin closed: the server exited by itself with status 0"
# a log line per refresh (-v), at least one per new token
refreshed=$(printf '%s\n' "$ERR" | grep -c "server 'protected': credentials refreshed (valid for [0-9]* s)" || true)
T_CHECKS=$((T_CHECKS + 1))
[ "$refreshed" -ge 3 ] || fail "$refreshed 'credentials refreshed' lines in the bridge's log, expected at least 3:
$ERR"
# the servers' counts: one refresh per expiry (3 for 4 tokens, one more at either end at most),
# no request refused for its token (no call carried an expired one)
refreshes=$(printf '%s\n' "$OUT" | sed -n 's/^authorization server: \([0-9]*\) refreshes.*/\1/p')
T_CHECKS=$((T_CHECKS + 1))
[ -n "$refreshes" ] && [ "$refreshes" -ge 3 ] && [ "$refreshes" -le 5 ] ||
    fail "the authorization server counted '$refreshes' refreshes for 4 tokens, expected 3 to 5"
assert_contains "$OUT" ", 0 requests refused for their token"
# no token in anything the demo printed (the access tokens are JWTs: eyJ<header>.eyJ<claims>.)
T_CHECKS=$((T_CHECKS + 1))
if printf '%s\n%s\n' "$OUT" "$ERR" | grep -Eq 'eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+'; then
    fail "a token appears in the demo's output or messages"
fi
assert_not_contains "$ERR" "error:" "the demo's messages"
# everything it started is stopped, everything it wrote is gone
mcp_port=$(printf '%s\n' "$OUT" | sed -n 's|.*"url": "http://127.0.0.1:\([0-9]*\)/mcp".*|\1|p')
as_port=$(printf '%s\n' "$ERR" | sed -n 's|^mcp-auth: authorization server: http://127.0.0.1:\([0-9]*\).*|\1|p')
for port in "$mcp_port" "$as_port"; do
    [ -n "$port" ] || fail "no port of a demo server in the output"
    T_CHECKS=$((T_CHECKS + 1))
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        fail "a demo server still listens on port $port after the demo"
    fi
done
work=$(printf '%s\n' "$OUT" | sed -n 's|^\$ cat \(.*\)/agent/mcp.json$|\1|p')
[ -n "$work" ] || fail "no demo directory in the output"
T_CHECKS=$((T_CHECKS + 1))
[ ! -e "$work" ] || fail "the demo left $work behind"

# --- part 2: secrets, in a private keychain
export DEMO_SECRETS_DIR
DEMO_SECRETS_DIR=$(dirname "$SECRETS_BIN")
export DEMO_ENV_VALUE="demo-env-value-under-test"
unset DEMO_TOKEN DEMO_KEY DEMO_CMD
mkdir -p "$PI_CODING_AGENT_DIR"
unset DEMO_API_TOKEN
run 0 bash "$TESTS_DIR/tools/with-keyring" bash "$TESTS_DIR/../scripts/demo" --inside-keyring
assert_contains "$OUT" '"DEMO_TOKEN":{"value":"demo-env-value-under-test","source":"env"}'
assert_contains "$OUT" '"source":"keychain"'
assert_contains "$OUT" "demo-from-command-"
assert_contains "$OUT" "child sees DEMO_KEY of"
assert_contains "$ERR" "same value both times"
# the bearer header: a keychain secret, through "bearerTokenEnv" and through ${NAME} in a header,
# accepted by the server; the token itself printed nowhere
suffix=$(printf '%s\n' "$OUT" | sed -n 's/^(the token typed at the prompt.*it ends in \.\.\.\(....\))$/\1/p')
[ -n "$suffix" ] || fail "the demo did not say how its API token ends:
$OUT"
assert_contains "$OUT" '${DEMO_API_TOKEN}: ok (from a keychain recipe)'
assert_contains "$OUT" "  mcp_api_whoami"
assert_contains "$OUT" "  mcp_api-templated_whoami"
accepted=$(printf '%s\n' "$OUT" | grep -c "^  authorized by a bearer token ending in \.\.\.$suffix (" || true)
assert_eq "$accepted" 2 "calls the API accepted with the keychain's token"
assert_not_contains "$OUT" "isError" "the agent's calls"
assert_contains "$OUT" "stdin closed: the server exited by itself with status 0"
assert_not_contains "$OUT$ERR" "demo-api-token-" "the demo's output"
assert_not_contains "$ERR" "error:" "the demo's messages"
