# mcp-bridge doctor finds the faults seeded into a setup, each with its fix, and says ok of what
# works: a helper of another version and one that is missing, a recipe that does not resolve, a
# configuration file others can write, an invalid entry, a project server not yet approved, a
# ${NAME} that does not resolve, a command that is not installed, a URL nobody listens on, a
# working stdio server (connected for real), and the agents that have the bridge registered
# (Claude Code through its own CLI, Cursor's file) with a server the agent also starts itself.
# The exit status is 1 while a problem is left and 0 once every one is fixed; --json says the
# same as the text.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at the mcp-bridge binary (ctest sets it)}"
: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at the mcp-auth binary (ctest sets it)}"
export CREDKIT_SECRETS="$SECRETS_BIN" CREDKIT_MCP_AUTH="$MCP_AUTH_BIN"
export CREDKIT_BRIDGE_BUNDLED=
B() { "$MCP_BRIDGE_BIN" --config "$T_ROOT/cfg/mcp.json" "$@"; }
PROJ="$T_ROOT/proj"
mkdir -p "$T_ROOT/cfg" "$PROJ" "$PI_CODING_AGENT_DIR" "$HOME/.cursor"
chmod 700 "$PI_CODING_AGENT_DIR"
cd "$PROJ"

TINY="$PEERS_DIR/tiny-server.mjs"
PORT=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
cat >"$T_ROOT/cfg/mcp.json" <<EOF
{"mcpServers": {
  "tiny": {"command": "node", "args": ["$TINY", "--tools", "4"]},
  "gone": {"command": "no-such-mcp-server-xyz"},
  "nohttp": {"url": "http://127.0.0.1:$PORT/mcp"},
  "needs-key": {"url": "https://127.0.0.1:$PORT/mcp", "headers": {"X-Key": "\${DOCTOR_KEY_XYZ}"}},
  "broken": {"command": "x", "url": "http://127.0.0.1:$PORT/mcp"}
}}
EOF
chmod 666 "$T_ROOT/cfg/mcp.json"
echo '{"mcpServers": {"projsrv": {"command": "node", "args": ["x.js"]}}}' >"$PROJ/.mcp.json"
# a recipe whose command fails
cat >"$PI_CODING_AGENT_DIR/secrets.json" <<'EOF'
{"DOCTOR_FAILING": {"command": "exit 3"}}
EOF
chmod 600 "$PI_CODING_AGENT_DIR/secrets.json"
# an mcp-auth of another version
cat >"$T_ROOT/old-mcp-auth" <<'EOF'
#!/bin/sh
[ "$1" = --version ] && echo "mcp-auth (credkit) 0.0.1" && exit 0
exec "$MCP_AUTH_BIN" "$@"
EOF
chmod 755 "$T_ROOT/old-mcp-auth"
# Cursor with the bridge registered, and tiny started by Cursor itself as well
echo '{"mcpServers": {"bridge": {"command": "mcp-bridge"}, "tiny": {"command": "node", "args": ["t.js"]}}}' \
    >"$HOME/.cursor/mcp.json"
# Claude Code, through its own CLI
CLAUDE="$PEERS_DIR/node_modules/.bin/claude"
run 0 "$CLAUDE" mcp add --scope user credkit -- "$MCP_BRIDGE_BIN" serve

# ---- every fault found, each with its fix ----
CREDKIT_MCP_AUTH="$T_ROOT/old-mcp-auth" run 1 B doctor --connect-timeout 10s
D=$OUT
assert_contains "$D" "  ok       secrets: $SECRETS_BIN"
assert_contains "$D" "  problem  mcp-auth: $T_ROOT/old-mcp-auth is version 0.0.1, mcp-bridge "
assert_contains "$D" "  problem  DOCTOR_FAILING: "
assert_contains "$D" "           fix: secrets configure DOCTOR_FAILING"
assert_contains "$D" "can be changed by every user (mode 0666): run chmod go-w"
assert_contains "$D" "  problem  broken: "
assert_contains "$D" "  problem  projsrv: a project server from '"
assert_contains "$D" "           fix: mcp-bridge trust"
assert_contains "$D" '  problem  needs-key: ${DOCTOR_KEY_XYZ} does not resolve'
assert_contains "$D" "           fix: secrets configure DOCTOR_KEY_XYZ"
assert_contains "$D" "  problem  gone: its command 'no-such-mcp-server-xyz' is not installed"
assert_contains "$D" "  problem  nohttp: server 'nohttp': initialize failed: connection refused"
assert_contains "$D" "           fix: 'mcp-bridge test nohttp -v' shows more"
assert_contains "$D" "  ok       tiny: ready, 4 tools"
assert_contains "$D" "  ok       claude-code: the bridge is registered as 'credkit' in '~/.claude.json'"
assert_contains "$D" "  ok       cursor: the bridge is registered as 'bridge' in '~/.cursor/mcp.json'"
assert_contains "$D" "  warning  cursor: 'tiny' in '~/.cursor/mcp.json' is started by the agent itself and served by the bridge too"
assert_contains "$D" "7 problems, 2 warnings"

# a missing helper
CREDKIT_SECRETS="$T_ROOT/nowhere/secrets" run 1 B doctor --no-connect
assert_contains "$OUT" "  problem  secrets: "
assert_contains "$OUT" "           fix: install secrets with mcp-bridge (they ship together), or set CREDKIT_SECRETS to its path"
assert_not_contains "$OUT" "ready," "--no-connect connects nothing"

# ---- --json says the same ----
CREDKIT_MCP_AUTH="$T_ROOT/old-mcp-auth" run 1 B doctor --json --connect-timeout 10s
J=$OUT
assert_eq "$(json_get "$J" 'j.version')" 1
assert_eq "$(json_get "$J" 'j.ok')" false
assert_eq "$(json_get "$J" 'j.problems')" 7
assert_eq "$(json_get "$J" 'j.checks.find(c => c.subject === "gone").level')" problem
assert_eq "$(json_get "$J" 'j.checks.find(c => c.subject === "tiny").message')" "ready, 4 tools"
assert_eq "$(json_get "$J" 'j.checks.find(c => c.subject === "needs-key").fix')" "secrets configure DOCTOR_KEY_XYZ"
assert_eq "$(json_get "$J" 'j.checks.filter(c => c.area === "agents" && c.level === "ok").length')" 2

# ---- fixed: exit 0, warnings allowed ----
chmod 644 "$T_ROOT/cfg/mcp.json"
cat >"$T_ROOT/cfg/mcp.json" <<EOF
{"mcpServers": {"tiny": {"command": "node", "args": ["$TINY", "--tools", "4"]}}}
EOF
rm "$PROJ/.mcp.json"
echo '{"DOCTOR_OK": {"env": "HOME"}}' >"$PI_CODING_AGENT_DIR/secrets.json"
run 0 B doctor
assert_contains "$OUT" "  ok       secrets.json: 1 recipe, each resolves"
assert_contains "$OUT" "  ok       mcp.json: 1 server in 1 file"
assert_contains "$OUT" "  ok       tiny: ready, 4 tools"
assert_contains "$OUT" "0 problems, 1 warning"

# ---- usage ----
run 2 B doctor extra
assert_contains "$ERR" "doctor takes no arguments"
run 0 B doctor --help
assert_contains "$OUT" "usage: mcp-bridge doctor"
