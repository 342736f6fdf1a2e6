# mcp-bridge list says what it checked: a stdio entry whose command is not found is "not
# installed" without anything started or connected, and --check connects every server that
# would be used (a working stdio server, one that never answers, an HTTP URL nobody listens on)
# and reports ready with its tools, failed with the reason; --json says the same.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at the mcp-bridge binary (ctest sets it)}"
: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at the mcp-auth binary (ctest sets it)}"
export CREDKIT_SECRETS="$SECRETS_BIN" CREDKIT_MCP_AUTH="$MCP_AUTH_BIN"
export CREDKIT_BRIDGE_BUNDLED=
B() { "$MCP_BRIDGE_BIN" --config "$T_ROOT/mcp.json" "$@"; }
cd "$T_ROOT"

TINY="$PEERS_DIR/tiny-server.mjs"
# a port nobody listens on: taken from the system, then let go
PORT=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
# a stdio server that leaves a mark when it is started: list alone must not start it
cat >"$T_ROOT/marker-server" <<EOF2
#!/bin/sh
touch "$T_ROOT/started"
exec node "$TINY" --name marked
EOF2
chmod 755 "$T_ROOT/marker-server"
cat >"$T_ROOT/mcp.json" <<EOF2
{"mcpServers": {
  "tiny": {"command": "node", "args": ["$TINY", "--tools", "5"]},
  "gone": {"command": "no-such-mcp-server-xyz", "args": ["--stdio"]},
  "gonepath": {"command": "$T_ROOT/no-such-dir/server"},
  "nohttp": {"url": "http://127.0.0.1:$PORT/mcp"},
  "marked": {"command": "$T_ROOT/marker-server"}
}}
EOF2

# ---- list: the PATH lookup, nothing connected ----
run 0 B list
L=$OUT
assert_eq "$(grep -c '^gone .* not installed ' <<<"$L")" 1 "a command not on PATH"
assert_contains "$L" "    not installed: 'no-such-mcp-server-xyz' is not found on PATH"
assert_eq "$(grep -c '^gonepath .* not installed ' <<<"$L")" 1 "a path that does not exist"
assert_contains "$L" "is not there or not executable"
assert_eq "$(grep -c '^tiny .* ok ' <<<"$L")" 1 "node is on PATH"
assert_eq "$(grep -c '^nohttp .* ok ' <<<"$L")" 1 "list alone does not connect"
assert_not_contains "$L" "check:" "list alone"
assert_eq "$([ -e "$T_ROOT/started" ] && echo started || echo no)" no "list alone starts no server"
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "gone").status')" "not-installed"
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "tiny").status')" "ok"
assert_eq "$(json_get "$OUT" '"check" in j.servers[0]')" "false" "no check key without --check"

# ---- list --check ----
run 0 B list --check
L=$OUT
assert_eq "$(grep -c '^tiny .* ready ' <<<"$L")" 1 "the working server"
assert_contains "$L" "    check: ready, 5 tools"
assert_eq "$(grep -c '^marked .* ready ' <<<"$L")" 1 "the marked server"
assert_contains "$L" "    check: ready, 3 tools"
assert_eq "$([ -e "$T_ROOT/started" ] && echo started || echo no)" started "--check starts it"
assert_eq "$(grep -c '^gone .* not installed ' <<<"$L")" 1 "not started: not installed"
assert_eq "$(grep -c '^nohttp .* failed ' <<<"$L")" 1 "nobody listens"
assert_contains "$L" "    check: failed: server 'nohttp': initialize failed: connection refused"

run 0 B list --check --json
J=$OUT
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "tiny").status')" "ready"
assert_eq "$(json_get "$J" 'JSON.stringify(j.servers.find(s => s.name === "tiny").check)')" \
    '{"state":"ready","tools":5,"error":null}'
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "gone").status')" "not-installed"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "gone").check')" "null"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "nohttp").status')" "failed"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "nohttp").check.state')" "failed"
assert_contains "$(json_get "$J" 'j.servers.find(s => s.name === "nohttp").check.error')" \
    "connection refused"

# ---- --connect-timeout: a server that never answers fails in time, with the reason ----
cat >"$T_ROOT/mcp.json" <<EOF2
{"mcpServers": {
  "mute": {"command": "sleep", "args": ["60"]},
  "tiny": {"command": "node", "args": ["$TINY"]}
}}
EOF2
start=$(date +%s)
run 0 B list --check --connect-timeout 1s
assert_eq "$(grep -c '^mute .* failed ' <<<"$OUT")" 1 "a server that never answers"
assert_contains "$OUT" "    check: failed: server 'mute': "
assert_contains "$OUT" "timed out"
assert_eq "$(grep -c '^tiny .* ready ' <<<"$OUT")" 1 "the other one is not held up"
assert_eq "$([ $(($(date +%s) - start)) -lt 10 ] && echo in-time || echo late)" in-time "--connect-timeout bounds the check"

# ---- usage ----
run 2 B list --connect-timeout 1s
assert_contains "$ERR" "--connect-timeout goes with --check"
run 2 B list --check --connect-timeout soon

# ---- the files' problems apart from their warnings ----
mkdir -p "$T_ROOT/xdg/mcp"
printf '{"mcpServers": {"x": {"command": "sh"}},\n' >"$T_ROOT/xdg/mcp/mcp.json" # not JSON
cat >"$T_ROOT/mcp.json" <<EOF2
{"mcpServers": {"tiny": {"command": "node", "args": ["$TINY"]}},
 "settings": 5, "claudePlugins": {}}
EOF2
XDG_CONFIG_HOME="$T_ROOT/xdg" run 0 B list
L=$OUT
P=$(sed -n '/^problems with files (their servers are not used):$/,/^$/p' <<<"$L")
W=$(sed -n '/^warnings about files (their servers are used):$/,/^$/p' <<<"$L")
assert_contains "$P" "xdg/mcp/mcp.json" "the file that is not JSON is a problem"
assert_not_contains "$P" "claudePlugins" "a warning is not among the problems"
assert_not_contains "$P" '"settings" must be an object' "a warning is not among the problems"
assert_contains "$W" '"claudePlugins" is accepted and not applied' "the warnings"
assert_contains "$W" '"settings" must be an object' "the warnings"
assert_not_contains "$W" "xdg/mcp/mcp.json" "a problem is not among the warnings"
XDG_CONFIG_HOME="$T_ROOT/xdg" run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.diagnostics.filter(d => d.warning).length')" 2 "two warnings"
assert_eq "$(json_get "$OUT" 'j.diagnostics.filter(d => !d.warning).length')" 1 "one problem"
