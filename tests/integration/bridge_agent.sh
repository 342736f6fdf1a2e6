# mcp-bridge between an agent and stdio servers, compared with a direct connection: the SDK's
# Client (tests/peers/bridge-agent.mjs) talks to @modelcontextprotocol/server-everything once
# directly and once through `mcp-bridge connect everything` (single mode), then to it and a second
# server (tests/peers/bridge-server.mjs) through `mcp-bridge serve` (aggregate mode, names
# mcp_<server>_<tool>). Initialize, lists, tool calls of every content type, prompts, resources,
# completion, ping, roots, sampling, elicitation, progress, structured content, an unknown tool,
# 1 MiB, cancellation (seen by the server: bridge-tap.mjs records what it receives), logging and
# resource updates must match the direct answers; the server must see a minimal environment
# (not the bridge's CREDKIT_TEST_CANARY); the bridge must exit 0 at the end of its stdin and
# leave no process behind.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
[ -x "$MCP_BRIDGE_BIN" ] || fail "mcp-bridge is not built at '$MCP_BRIDGE_BIN'"
[ -d "$PEERS_DIR/node_modules" ] || fail "tests/peers/node_modules is missing: run scripts/install-deps"
# only the test's own configuration: an empty bundled layer, no project layer (cwd is T_ROOT)
printf '{"mcpServers": {}}\n' >"$T_ROOT/bundled.json"
export CREDKIT_BRIDGE_BUNDLED="$T_ROOT/bundled.json"
# a "secret" of the bridge's environment that no server may see
export CREDKIT_TEST_CANARY="canary-$RANDOM$RANDOM"
cd "$T_ROOT"

json_argv() { node -e 'process.stdout.write(JSON.stringify(process.argv.slice(1)))' -- "$@"; }

# The processes this test started are the ones whose command line names T_ROOT (configuration,
# tap logs, --tag): none may outlive a driver.
kill_leftovers() {
    local pid
    for pid in $(pgrep -f -- "$T_ROOT" || true); do kill -KILL "$pid" 2>/dev/null || true; done
}
trap 'rc=$?; kill_leftovers; (exit $rc); t_cleanup' EXIT

failed=()
# driver LABEL SCRIPT ARGS...: runs a node driver of tests/peers; each "ok" line is a check
driver() {
    local label=$1 script=$2 rc=0 left
    shift 2
    echo "== $label"
    node "$PEERS_DIR/$script" "$@" </dev/null >"$T_ROOT/$label.out" 2>"$T_ROOT/$label.err" || rc=$?
    cat "$T_ROOT/$label.out"
    T_CHECKS=$((T_CHECKS + $(grep -c '^ok ' "$T_ROOT/$label.out" || true)))
    if [ "$rc" != 0 ]; then
        echo "--- $label: the bridge's log (last lines)"
        tail -n 40 "$T_ROOT/$label.bridge.log" 2>/dev/null || true
        echo "--- $label: the driver's stderr (last lines)"
        tail -n 20 "$T_ROOT/$label.err"
        failed+=("$label")
    fi
    T_CHECKS=$((T_CHECKS + 1))
    left=$(pgrep -af -- "$T_ROOT" || true)
    if [ -n "$left" ]; then
        echo "FAIL $label: processes left behind:"
        echo "$left"
        failed+=("$label: processes left behind")
        kill_leftovers
    fi
}

everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
node_bin=$(command -v node)
tap="$PEERS_DIR/bridge-tap.mjs"
second="$PEERS_DIR/bridge-server.mjs"

# config FILE TAPLOG: server-everything (through a tap that logs to TAPLOG) and a second server
config() {
    node - "$1" "$2" "$node_bin" "$tap" "$everything" "$second" "$T_ROOT" <<'JS'
const [file, tapLog, node, tap, everything, second, tag] = process.argv.slice(2);
require('fs').writeFileSync(file, JSON.stringify({ mcpServers: {
  everything: { command: node, args: [tap, tapLog, '--', node, everything, 'stdio'],
                env: { BRIDGE_TEST_ENTRY: 'entry-value' } },
  second: { command: node, args: [second, '--name', 'second', '--tag', tag] },
} }, null, 2));
JS
}
direct_everything() { json_argv "$node_bin" "$tap" "$1" -- "$node_bin" "$everything" stdio; }
direct_second=$(json_argv "$node_bin" "$second" --name second --tag "$T_ROOT")

# single mode: `connect everything`
config "$T_ROOT/single.json" "$T_ROOT/single-bridged.tap"
driver single bridge-agent.mjs --mode single \
    --server "everything=stdio:$(direct_everything "$T_ROOT/single-direct.tap")" \
    --suite everything=everything \
    --tap "everything=$T_ROOT/single-direct.tap,$T_ROOT/single-bridged.tap" \
    --env-check everything \
    --bridge "$(json_argv "$MCP_BRIDGE_BIN" connect everything --config "$T_ROOT/single.json")" \
    --bridge-log "$T_ROOT/single.bridge.log"

# aggregate mode: `serve`, both servers
config "$T_ROOT/aggregate.json" "$T_ROOT/aggregate-bridged.tap"
driver aggregate bridge-agent.mjs --mode aggregate \
    --server "everything=stdio:$(direct_everything "$T_ROOT/aggregate-direct.tap")" \
    --server "second=stdio:$direct_second" \
    --suite everything=everything --suite second=second \
    --tap "everything=$T_ROOT/aggregate-direct.tap,$T_ROOT/aggregate-bridged.tap" \
    --env-check everything \
    --bridge "$(json_argv "$MCP_BRIDGE_BIN" serve --config "$T_ROOT/aggregate.json")" \
    --bridge-log "$T_ROOT/aggregate.bridge.log"

[ "${#failed[@]}" -eq 0 ] || fail "mcp-bridge with stdio servers: ${failed[*]}"
