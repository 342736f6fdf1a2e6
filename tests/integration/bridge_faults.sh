# mcp-bridge while its servers fail (tests/peers/bridge-faults.mjs, the SDK's Client on
# `mcp-bridge serve`), inside a private network namespace (the SDK's example servers bind every
# interface): a stdio server killed in the middle of a call, one that exits, one that hangs
# (SIGSTOP), calls that outlive the entry's "timeout" (the server must see notifications/cancelled),
# an HTTP session the server forgets (re-initialized, the call retried once), HTTP servers
# restarted on the same port, an HTTP server that hangs. The agent must get tool results with
# isError, then working calls again; the bridge must never exit, and at the end exit 0 at the end
# of its stdin with every process reaped (no process of this test may be left).
. "$(dirname "$0")/lib/netns.sh"
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
[ -x "$MCP_BRIDGE_BIN" ] || fail "mcp-bridge is not built at '$MCP_BRIDGE_BIN'"
[ -d "$PEERS_DIR/node_modules" ] || fail "tests/peers/node_modules is missing: run scripts/install-deps"
# only the test's own configuration: an empty bundled layer, no project layer (cwd is T_ROOT)
printf '{"mcpServers": {}}\n' >"$T_ROOT/bundled.json"
export CREDKIT_BRIDGE_BUNDLED="$T_ROOT/bundled.json"
cd "$T_ROOT"

# Every process of this test names T_ROOT on its command line (--tag, --config): none may be
# left at the end.
kill_leftovers() {
    local pid
    for pid in $(pgrep -f -- "$T_ROOT" || true); do
        kill -CONT "$pid" 2>/dev/null || true
        kill -KILL "$pid" 2>/dev/null || true
    done
}
trap 'rc=$?; kill_leftovers; (exit $rc); t_cleanup' EXIT

mkdir "$T_ROOT/work"
rc=0
node "$PEERS_DIR/bridge-faults.mjs" --bridge "$MCP_BRIDGE_BIN" --work "$T_ROOT/work" --tag "$T_ROOT" \
    </dev/null >"$T_ROOT/faults.out" 2>"$T_ROOT/faults.err" || rc=$?
cat "$T_ROOT/faults.out"
T_CHECKS=$((T_CHECKS + $(grep -c '^ok ' "$T_ROOT/faults.out" || true)))
if [ "$rc" != 0 ]; then
    echo "--- the bridge's log (last lines)"
    tail -n 60 "$T_ROOT/work/bridge.log" 2>/dev/null || true
    echo "--- the driver's stderr (last lines)"
    tail -n 20 "$T_ROOT/faults.err"
fi
left=$(pgrep -af -- "$T_ROOT" || true)
T_CHECKS=$((T_CHECKS + 1))
[ -z "$left" ] || fail "processes left behind:
$left"
[ "$rc" = 0 ] || fail "mcp-bridge under faults: $(grep -c '^FAIL ' "$T_ROOT/faults.out" || true) check(s) failed"
