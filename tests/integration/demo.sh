# scripts/demo's demonstrations (the stages after installing and building), run against the
# binaries under test, so the README's first command keeps working: part 1 (mcp-bridge on two
# server-everything instances, over stdio and over Streamable HTTP on 127.0.0.1), and part 2
# (secrets, in a private keychain).
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

# --- part 1: the bridge
export DEMO_BRIDGE_DIR
DEMO_BRIDGE_DIR=$(dirname "$MCP_BRIDGE_BIN")
run 0 bash "$TESTS_DIR/../scripts/demo" --bridge-stage
# the configuration shown, and the two servers in 'list'
assert_contains "$OUT" '"everything-stdio": {'
assert_contains "$OUT" '"url": "http://127.0.0.1:'
# 'test': connected and listed the tools
assert_contains "$OUT" "get-sum"
# 'call': the results as the servers sent them
assert_contains "$OUT" "Echo: hello"
assert_contains "$OUT" "The sum of 2 and 3 is 5."
# get-env: the entry's env reached the stdio server, the bridge's own variable did not
assert_contains "$OUT" "set by the entry's env"
assert_not_contains "$OUT" "DEMO_BRIDGE_SECRET" "the stdio server's environment"
# the agent: one list with both servers' tools, a call on each, a clean exit on end of stdin
assert_contains "$OUT" "connected to mcp-bridge"
assert_contains "$OUT" "  mcp_everything-stdio_echo"
assert_contains "$OUT" "  mcp_everything-http_echo"
assert_contains "$OUT" "Echo: hello from the agent"
assert_contains "$OUT" "The sum of 40 and 2 is 42."
assert_contains "$OUT" "stdin closed: the server exited by itself with status 0"
assert_not_contains "$ERR" "error:" "the demo's messages"
# everything it started is stopped, everything it wrote is gone
port=$(printf '%s\n' "$OUT" | sed -n 's|.*"url": "http://127.0.0.1:\([0-9]*\)/mcp".*|\1|p')
[ -n "$port" ] || fail "no port in the demo configuration shown"
T_CHECKS=$((T_CHECKS + 1))
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    fail "the demo's HTTP server still listens on port $port after the demo"
fi
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
run 0 bash "$TESTS_DIR/tools/with-keyring" bash "$TESTS_DIR/../scripts/demo" --inside-keyring
assert_contains "$OUT" '"DEMO_TOKEN":{"value":"demo-env-value-under-test","source":"env"}'
assert_contains "$OUT" '"source":"keychain"'
assert_contains "$OUT" "demo-from-command-"
assert_contains "$OUT" "child sees DEMO_KEY of"
assert_contains "$ERR" "same value both times"
assert_not_contains "$ERR" "error:" "the demo's messages"
