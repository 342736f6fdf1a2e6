# The two eras of MCP on both sides of the bridge, with real peers: tests/peers/eras-server.mjs
# (the SDK v2's McpServer: --era legacy is the plain 2025-11-25 server, --era modern serves
# 2026-07-28 only, --era both either) and tests/peers/eras-agent.mjs (--sdk v1: the v1 SDK's
# Client, a legacy agent; --sdk v2: the SDK v2's Client at 2026-07-28, a modern agent). The agent
# goes through tools, resources and subscriptions, prompts, completion, progress, cancellation,
# elicitation, sampling, logging and list changes, checks each answer and writes what it got.
#
# First the direct half: each agent on the server of its own era, with no bridge (each step
# checks its answer, so this half can fail by itself), and the modern agent on the legacy server
# (it falls back to initialize: the same answers). Then the four pairings - legacy agent/legacy
# server, legacy/modern, modern/legacy, modern/modern - each through single mode (`mcp-bridge
# connect`, with --bridge-eras for the pinned modern agent on the legacy server) and aggregate
# mode (`mcp-bridge serve`), whose answers must be the ones the agent got directly. Then
# `connect` without --bridge-eras: the modern agent in "auto" on the legacy server falls back to
# initialize as it does directly (the same era, protocol version and answers, ping and
# setLevel), and on the modern server stays modern. Then faults across eras: a forged
# requestState (the bridge's own form, "mcpb1.", refused with -32602 whatever the server's era),
# and a server killed under a keep-alive entry
# (for a modern server the bridge must send its subscriptions/listen again: list changes still
# arrive), and a legacy server killed in the middle of a modern agent's input round (the retry's
# requestState names a request that is gone: -32602 or an error result naming the lost server;
# a new call works). A table at the end lists
# every run. Not covered: an expired requestState (the bridge keeps one 10 minutes).
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
[ -x "$MCP_BRIDGE_BIN" ] || fail "mcp-bridge is not built at '$MCP_BRIDGE_BIN'"
[ -d "$PEERS_DIR/node_modules/@modelcontextprotocol/server" ] || fail "the SDK v2 is missing: run scripts/install-deps"
server="$PEERS_DIR/eras-server.mjs"
agent="$PEERS_DIR/eras-agent.mjs"
node_bin=$(command -v node)
# no configuration of the user's takes part
printf '{"mcpServers": {}}\n' >"$T_ROOT/bundled.json"
export CREDKIT_BRIDGE_BUNDLED="$T_ROOT/bundled.json"
cd "$T_ROOT" || fail "cannot enter $T_ROOT"

json_argv() { node -e 'process.stdout.write(JSON.stringify(process.argv.slice(1)))' "$@"; }

# config FILE ERA [LIFECYCLE]: one entry "eras", the server of that era
config() {
    node - "$1" "$node_bin" "$server" "$2" "${3:-eager}" <<'JS'
const [file, node, server, era, lifecycle] = process.argv.slice(2);
require('fs').writeFileSync(file, JSON.stringify({ settings: { settleTimeout: 15000 }, mcpServers: {
  eras: { command: node, args: [server, '--era', era, '--name', `eras-${era}`], lifecycle },
} }, null, 2));
JS
}

rows=()
failed=()
# agent_run LABEL OUT ARGS...: eras-agent with ARGS; its "ok"/"FAIL" lines are checks
agent_run() {
    local label=$1 out=$2 rc=0
    shift 2
    node "$agent" --out "$out" "$@" >"$T_ROOT/$label.out" 2>"$T_ROOT/$label.log" || rc=$?
    local oks fails
    oks=$(grep -c '^ok ' "$T_ROOT/$label.out" || true)
    fails=$(grep -c '^FAIL ' "$T_ROOT/$label.out" || true)
    T_CHECKS=$((T_CHECKS + oks))
    AGENT_RC=$rc
    AGENT_SUMMARY="$oks ok, $fails failed"
}

# compare LABEL GOT WANT: the bridged transcript must equal the direct one (but for the era
# the agent's own connection has)
compare() {
    node - "$2" "$3" <<'JS'
const fs = require('fs');
const [got, want] = process.argv.slice(2).map((f) => { try { return JSON.parse(fs.readFileSync(f, 'utf8')); } catch { return null; } });
if (!got) { process.stdout.write('no transcript'); process.exit(1); }
const diffs = [];
for (const k of Object.keys(want)) {
  if (k === 'era') continue;
  const a = JSON.stringify(got[k]), b = JSON.stringify(want[k]);
  if (a !== b) diffs.push(`${k}: ${a} (direct: ${b})`);
}
process.stdout.write(diffs.join('; '));
process.exit(diffs.length ? 1 : 0);
JS
}

record() { # record LABEL VERDICT DETAIL
    rows+=("$(printf '%-6s %-34s %s' "$2" "$1" "$3")")
    T_CHECKS=$((T_CHECKS + 1))
    [ "$2" = pass ] || failed+=("$1")
}

# ---- the direct half -------------------------------------------------------------------------
agent_run direct-legacy "$T_ROOT/direct-v1.json" --sdk v1 --command "$(json_argv "$node_bin" "$server" --era both)"
[ "$AGENT_RC" = 0 ] || fail "the legacy agent on the server directly: $(grep -v '^ok' "$T_ROOT/direct-legacy.out")"
record "direct legacy agent" pass "$AGENT_SUMMARY"
agent_run direct-modern "$T_ROOT/direct-v2.json" --sdk v2 --pin yes --forged-state \
    --command "$(json_argv "$node_bin" "$server" --era both)"
[ "$AGENT_RC" = 0 ] || fail "the modern agent on the server directly: $(grep -v '^ok' "$T_ROOT/direct-modern.out")"
assert_eq "$(json_get "$(cat "$T_ROOT/direct-v2.json")" j.era)" modern "the era of the modern agent's direct connection"
record "direct modern agent" pass "$AGENT_SUMMARY"
# the same server code answers both eras alike: what makes the cross-era comparisons fair
detail=$(compare x "$T_ROOT/direct-v2.json" "$T_ROOT/direct-v1.json") ||
    fail "the direct answers of the two eras differ: $detail"
agent_run direct-modern-on-legacy "$T_ROOT/direct-v2-legacy.json" --sdk v2 --pin no \
    --command "$(json_argv "$node_bin" "$server" --era legacy)"
[ "$AGENT_RC" = 0 ] || fail "the modern agent on the legacy server directly: $(grep -v '^ok' "$T_ROOT/direct-modern-on-legacy.out")"
assert_eq "$(json_get "$(cat "$T_ROOT/direct-v2-legacy.json")" j.era)" legacy "the era the modern agent falls back to on a legacy server"
record "direct modern agent, legacy srv" pass "$AGENT_SUMMARY"

# ---- the four pairings, single and aggregate mode --------------------------------------------
for srv in legacy modern; do
    config "$T_ROOT/$srv.json" "$srv"
done
for sdk in v1 v2; do
    [ "$sdk" = v1 ] && who=legacy || who=modern
    for srv in legacy modern; do
        for mode in single aggregate; do
            label="$who agent, $srv server, $mode"
            file="$who-$srv-$mode"
            if [ "$mode" = single ] && [ "$sdk" = v2 ] && [ "$srv" = legacy ]; then
                # connect is transparent by default: the pinned agent needs the bridge's own era
                argv=$(json_argv "$MCP_BRIDGE_BIN" --config "$T_ROOT/$srv.json" connect --bridge-eras eras)
                prefix=()
            elif [ "$mode" = single ]; then
                argv=$(json_argv "$MCP_BRIDGE_BIN" --config "$T_ROOT/$srv.json" connect eras)
                prefix=()
            else
                argv=$(json_argv "$MCP_BRIDGE_BIN" --config "$T_ROOT/$srv.json" serve)
                prefix=(--prefix eras)
            fi
            agent_run "$file" "$T_ROOT/$file.json" --sdk "$sdk" "${prefix[@]}" --command "$argv"
            if [ "$AGENT_RC" != 0 ]; then
                record "$label" FAIL "$AGENT_SUMMARY: $(grep '^FAIL' "$T_ROOT/$file.out" | head -3 | tr '\n' ' ')"
            elif detail=$(compare "$label" "$T_ROOT/$file.json" "$T_ROOT/direct-$sdk.json"); then
                record "$label" pass "$AGENT_SUMMARY, the direct answers"
            else
                record "$label" FAIL "not the direct answers: $detail"
            fi
        done
    done
done

# ---- connect is transparent: a legacy server stays legacy -----------------------------------
# the modern agent in "auto" on the legacy server through `connect` (no --bridge-eras) falls back
# to initialize as it does directly: the same era and protocol version, the same answers, and
# the legacy era's ping and logging/setLevel (the logging step) go to the server
steps=tools,resources,subscribe,prompts,completion,progress,cancel,elicit,sample,logging,listchanged,ping
agent_run transparent-direct "$T_ROOT/transparent-direct.json" --sdk v2 --pin no --steps "$steps" \
    --command "$(json_argv "$node_bin" "$server" --era legacy)"
[ "$AGENT_RC" = 0 ] || fail "the modern agent (auto) on the legacy server directly: $(grep -v '^ok' "$T_ROOT/transparent-direct.out")"
want_line=$(grep '^connected:' "$T_ROOT/transparent-direct.out")
assert_eq "$want_line" "connected: legacy 2025-11-25" "the modern agent's direct connection to the legacy server"
agent_run transparent "$T_ROOT/transparent.json" --sdk v2 --pin no --steps "$steps" \
    --command "$(json_argv "$MCP_BRIDGE_BIN" --config "$T_ROOT/legacy.json" connect eras)"
got_line=$(grep '^connected:' "$T_ROOT/transparent.out")
if [ "$AGENT_RC" != 0 ]; then
    record "modern agent (auto), legacy server, connect" FAIL "$AGENT_SUMMARY: $(grep '^FAIL' "$T_ROOT/transparent.out" | head -3 | tr '\n' ' ')"
elif [ "$got_line" != "$want_line" ]; then
    record "modern agent (auto), legacy server, connect" FAIL "'$got_line' (direct: '$want_line')"
elif detail=$(compare x "$T_ROOT/transparent.json" "$T_ROOT/transparent-direct.json"); then
    record "modern agent (auto), legacy server, connect" pass "$AGENT_SUMMARY, ${got_line#connected: }, the direct answers"
else
    record "modern agent (auto), legacy server, connect" FAIL "not the direct answers: $detail"
fi
# and on the modern server, `connect` still serves the modern era
agent_run transparent-modern "$T_ROOT/transparent-modern.json" --sdk v2 --pin no --steps tools,logging \
    --command "$(json_argv "$MCP_BRIDGE_BIN" --config "$T_ROOT/modern.json" connect eras)"
got_line=$(grep '^connected:' "$T_ROOT/transparent-modern.out")
if [ "$AGENT_RC" = 0 ] && [ "$got_line" = "connected: modern 2026-07-28" ]; then
    record "modern agent (auto), modern server, connect" pass "$AGENT_SUMMARY, ${got_line#connected: }"
else
    record "modern agent (auto), modern server, connect" FAIL "'$got_line': $(grep '^FAIL' "$T_ROOT/transparent-modern.out" | head -2 | tr '\n' ' ')"
fi

# ---- faults across eras ----------------------------------------------------------------------
# a forged requestState of the bridge's form: -32602 from the bridge, for either server
for srv in legacy modern; do
    agent_run "forged-$srv" "$T_ROOT/forged-$srv.json" --sdk v2 --steps elicit --forged-state \
        --command "$(json_argv "$MCP_BRIDGE_BIN" --config "$T_ROOT/$srv.json" connect --bridge-eras eras)"
    if [ "$AGENT_RC" = 0 ]; then
        record "forged requestState, $srv server" pass "-32602"
    else
        record "forged requestState, $srv server" FAIL "$(grep '^FAIL' "$T_ROOT/forged-$srv.out" | head -2 | tr '\n' ' ')"
    fi
done
# a server killed under a keep-alive entry: started again, and list changes still arrive (for
# a modern server only if the bridge sent subscriptions/listen again)
for srv in legacy modern; do
    config "$T_ROOT/keep-$srv.json" "$srv" keep-alive
    for sdk in v1 v2; do
        agent_run "restart-$srv-$sdk" "$T_ROOT/restart-$srv-$sdk.json" --sdk "$sdk" --prefix eras \
            --steps tools,listchanged,restart,listchanged \
            --command "$(json_argv "$MCP_BRIDGE_BIN" --config "$T_ROOT/keep-$srv.json" serve)"
        [ "$sdk" = v1 ] && who=legacy || who=modern
        if [ "$AGENT_RC" = 0 ]; then
            record "$who agent, $srv server restarted" pass "$AGENT_SUMMARY"
        else
            record "$who agent, $srv server restarted" FAIL "$(grep '^FAIL' "$T_ROOT/restart-$srv-$sdk.out" | head -2 | tr '\n' ' ')"
        fi
    done
done

# a legacy server restarted in the middle of a modern agent's input round: the retry's state
# names a request that is gone (-32602, or an error result naming the lost server), a new call works
agent_run restart-roundtrip "$T_ROOT/restart-roundtrip.json" --sdk v2 --prefix eras --steps restart-roundtrip \
    --command "$(json_argv "$MCP_BRIDGE_BIN" --config "$T_ROOT/keep-legacy.json" serve)"
if [ "$AGENT_RC" = 0 ]; then
    record "legacy server restarted mid-round" pass "$AGENT_SUMMARY"
else
    record "legacy server restarted mid-round" FAIL "$(grep '^FAIL' "$T_ROOT/restart-roundtrip.out" | head -2 | tr '\n' ' ')"
fi

echo; printf '%s\n' "${rows[@]}"
[ "${#failed[@]}" -eq 0 ] || fail "${#failed[@]} run(s) across eras failed: ${failed[*]}"
