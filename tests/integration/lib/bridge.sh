# Shared by the tests that drive mcp-bridge with a node driver of tests/peers (bridge_agent.sh,
# bridge_http.sh, bridge_faults.sh); sourced after common.sh (and netns.sh, where needed).
#
# It checks that mcp-bridge and tests/peers/node_modules are there, gives the bridge only the
# test's own configuration (an empty bundled layer, no project layer: cwd is T_ROOT), and kills
# on exit whatever process of the test is left. Every process a test starts must name T_ROOT on
# its command line (configuration, tap logs, --tag): that is how leftovers are found.

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
[ -x "$MCP_BRIDGE_BIN" ] || fail "mcp-bridge is not built at '$MCP_BRIDGE_BIN'"
[ -d "$PEERS_DIR/node_modules" ] || fail "tests/peers/node_modules is missing: run scripts/install-deps"
printf '{"mcpServers": {}}\n' >"$T_ROOT/bundled.json"
export CREDKIT_BRIDGE_BUNDLED="$T_ROOT/bundled.json"
cd "$T_ROOT"

# json_argv ARGS...: the arguments as a JSON array (the drivers' --bridge and --server specs)
json_argv() { node -e 'process.stdout.write(JSON.stringify(process.argv.slice(1)))' -- "$@"; }

# kill_leftovers: kills every process of this test (a stopped one too: SIGCONT first)
kill_leftovers() {
    local pid
    for pid in $(pgrep -f -- "$T_ROOT" || true); do
        kill -CONT "$pid" 2>/dev/null || true
        kill -KILL "$pid" 2>/dev/null || true
    done
}
trap 'rc=$?; set +e; kill_leftovers; (exit $rc); t_cleanup' EXIT

BRIDGE_FAILED=()
# driver LABEL BRIDGE_LOG SCRIPT ARGS...: runs the node driver tests/peers/SCRIPT (its output in
# T_ROOT/LABEL.out and .err); each "ok" line it prints is a check, and so are its exit status and
# the processes left once it is done (none may be). A failure is added to BRIDGE_FAILED, with the
# end of the bridge's log (BRIDGE_LOG) and of the driver's stderr; bridge_done reports them.
driver() {
    local label=$1 log=$2 script=$3 rc=0 left
    shift 3
    echo "== $label"
    node "$PEERS_DIR/$script" "$@" </dev/null >"$T_ROOT/$label.out" 2>"$T_ROOT/$label.err" || rc=$?
    cat "$T_ROOT/$label.out"
    T_CHECKS=$((T_CHECKS + $(grep -c '^ok ' "$T_ROOT/$label.out" || true)))
    if [ "$rc" != 0 ]; then
        echo "--- $label: the bridge's log (last lines)"
        tail -n 60 "$log" 2>/dev/null || true
        echo "--- $label: the driver's stderr (last lines)"
        tail -n 20 "$T_ROOT/$label.err"
        BRIDGE_FAILED+=("$label ($(grep -c '^FAIL ' "$T_ROOT/$label.out" || true) check(s) failed, exit $rc)")
    fi
    T_CHECKS=$((T_CHECKS + 1))
    # the driver closed its clients; a bridge may still be on its way out (under the sanitizers
    # its exit, the leak check included, takes a moment): up to 5 s for the last to go
    local tries
    for tries in $(seq 50); do
        left=$(pgrep -af -- "$T_ROOT" || true)
        [ -n "$left" ] || break
        sleep 0.1
    done
    if [ -n "$left" ]; then
        echo "FAIL $label: processes left behind:"
        echo "$left"
        BRIDGE_FAILED+=("$label: processes left behind")
        kill_leftovers
    fi
}

# bridge_done WHAT: fails the test, naming every failed driver, if any failed
bridge_done() {
    [ "${#BRIDGE_FAILED[@]}" -eq 0 ] || fail "$1: ${BRIDGE_FAILED[*]}"
}
