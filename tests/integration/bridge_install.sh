# mcp-bridge install AGENT / uninstall AGENT: the bridge registered in an agent's configuration,
# the agent's own servers moved into the bridge's file, and back.
#
# Claude Code through its real CLI (tests/peers' claude, a throw-away HOME): `claude mcp list`
# shows the bridge after install, and the server that was Claude Code's before it and after
# uninstall, never both. The file-based agents on files as those clients write them: Cursor's
# and VS Code's JSON with comments and trailing commas, Codex's TOML with comments and other
# tables, Claude Desktop's JSON, pi's mcp.json: install, install again (nothing changes), a dry
# run (nothing written), uninstall (byte for byte when nothing else changed; the later edit kept
# when something did), a server in both files (refused, nothing changed), a failed write (the
# old file intact, nothing left behind), and a lock held by another process (waited for, then
# refused with a clear message).
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

unset XDG_CONFIG_HOME || true
B() { "$MCP_BRIDGE_BIN" "$@"; }
check() {
    T_CHECKS=$((T_CHECKS + 1))
    "$@" || fail "check failed: $*"
}
EXE=$(realpath "$MCP_BRIDGE_BIN")
USER_FILE="$PI_CODING_AGENT_DIR/mcp.json"
mkdir -p "$PI_CODING_AGENT_DIR" "$HOME/.cursor" "$HOME/.codex" "$HOME/.config/Code/User" \
    "$HOME/.config/Claude" "$T_ROOT/proj"
node_bin=$(command -v node)
everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

# the servers of the bridge's user file, by name, one per line
dest_names() { [ -f "${1:-$USER_FILE}" ] && json_get "$(cat "${1:-$USER_FILE}")" 'Object.keys(j.mcpServers || {}).join(" ")' || true; }

run 0 B install --help
assert_contains "$OUT" "mcp-bridge install claude-code"
run 2 B install cursr
assert_contains "$ERR" "unknown agent 'cursr'"
run 2 B uninstall
assert_contains "$ERR" "uninstall takes exactly one AGENT"

# ---- Claude Code, through its own CLI ----------------------------------------------------------
export PATH="$PEERS_DIR/node_modules/.bin:$PATH"
command -v claude >/dev/null || fail "claude is not in tests/peers/node_modules/.bin"
run 0 claude mcp add --scope user everything -e EVERY_MODE=quick -- "$node_bin" "$everything" stdio
run 0 claude mcp list
assert_contains "$OUT" "everything:" "claude mcp list before install"

run 0 B install claude-code --dry-run
assert_contains "$OUT" "dry run: nothing was written"
assert_contains "$OUT" "moved 'everything' from '~/.claude.json' to '"
check test ! -e "$USER_FILE"
run 0 claude mcp list
assert_not_contains "$OUT" "bridge:" "claude mcp list after a dry run"

run 0 B install claude-code
assert_contains "$OUT" "added 'bridge' to '~/.claude.json'"
assert_contains "$OUT" "moved 'everything' from '~/.claude.json'"
assert_eq "$(dest_names)" "everything" "the bridge's file after install"
assert_eq "$(json_get "$(cat "$USER_FILE")" 'j.mcpServers.everything.env.EVERY_MODE')" "quick" "the moved entry, as it was"
run 0 claude mcp list
assert_contains "$OUT" "bridge: $EXE serve - ✔ Connected" "claude mcp list after install"
assert_not_contains "$OUT" "everything:" "claude mcp list after install"
run 0 claude mcp get bridge
assert_contains "$OUT" "Scope: User"
# the bridge serves the moved server (list reads the same file)
run 0 B list
assert_contains "$OUT" "everything"

run 0 B install claude-code
assert_contains "$OUT" "nothing to change"
run 0 B install claude-code --json
assert_eq "$(json_get "$OUT" 'j.version')" "1"
assert_eq "$(json_get "$OUT" 'j.changed')" "false"
assert_eq "$(json_get "$OUT" 'j.changes.length')" "0"

run 0 B uninstall claude-code --json
assert_eq "$(json_get "$OUT" 'j.changes.map(c => c.action + ":" + c.server).join(" ")')" \
    "removed:bridge put_back:everything" "uninstall's changes"
run 0 claude mcp list
assert_contains "$OUT" "everything:" "claude mcp list after uninstall"
assert_not_contains "$OUT" "bridge:" "claude mcp list after uninstall"
assert_eq "$(json_get "$(cat "$HOME/.claude.json")" 'j.mcpServers.everything.env.EVERY_MODE')" "quick"
assert_eq "$(dest_names)" "" "the bridge's file after uninstall"
check test ! -e "$HOME/.claude.json.mcp-bridge-moved.json"
run 0 B uninstall claude-code
assert_contains "$OUT" "nothing to change"
run 0 claude mcp remove --scope user everything

# ---- Cursor: JSON with comments, in place -------------------------------------------------------
CURSOR="$HOME/.cursor/mcp.json"
cat >"$CURSOR" <<'EOF'
{
  // servers for every workspace
  "mcpServers": {
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "${userHome}/src"], // mine
    },
    "tickets": { "url": "https://tickets.example.org/mcp", "headers": { "Authorization": "Bearer ${env:TICKETS_TOKEN}" } },
  },
}
EOF
cp "$CURSOR" "$T_ROOT/cursor.orig"

run 0 B install cursor --dry-run
check cmp -s "$CURSOR" "$T_ROOT/cursor.orig"
check test ! -e "$CURSOR.before-mcp-bridge"
assert_eq "$(dest_names)" "" "the bridge's file after a dry run"

run 0 B install cursor
assert_contains "$OUT" "backup of '~/.cursor/mcp.json': '~/.cursor/mcp.json.before-mcp-bridge'"
check cmp -s "$CURSOR.before-mcp-bridge" "$T_ROOT/cursor.orig"
assert_contains "$(cat "$CURSOR")" "// servers for every workspace" "Cursor's file keeps its comments"
assert_eq "$(dest_names)" "files tickets"
# Cursor's own variables are read as the bridge's import reads them
assert_eq "$(json_get "$(cat "$USER_FILE")" 'j.mcpServers.files.args[2]')" "$HOME/src"
cp "$CURSOR" "$T_ROOT/cursor.installed"
run 0 B install cursor
assert_contains "$OUT" "nothing to change in '~/.cursor/mcp.json' (already installed)"
check cmp -s "$CURSOR" "$T_ROOT/cursor.installed"
run 0 B uninstall cursor
assert_contains "$OUT" "restored '~/.cursor/mcp.json' from its backup"
check cmp -s "$CURSOR" "$T_ROOT/cursor.orig"
check test ! -e "$CURSOR.before-mcp-bridge"
assert_eq "$(dest_names)" ""

# an edit made after install stays: only the bridge goes and the moved servers come back
run 0 B install cursor
sed -i 's|// servers for every workspace|// edited since|' "$CURSOR"
run 0 B uninstall cursor
assert_contains "$OUT" "removed 'bridge' from '~/.cursor/mcp.json'"
assert_contains "$(cat "$CURSOR")" "// edited since"
assert_contains "$(cat "$CURSOR")" '"files": {' "Cursor's file after uninstall"
assert_contains "$(cat "$CURSOR")" '"tickets": {' "Cursor's file after uninstall"
assert_not_contains "$(cat "$CURSOR")" '"bridge"' "Cursor's file after uninstall"
cp "$T_ROOT/cursor.orig" "$CURSOR"

# a server in both files, differently: nothing changes
printf '{"mcpServers": {"files": {"command": "other"}}}\n' >"$USER_FILE"
run 3 B install cursor
assert_contains "$ERR" "'files' is in '~/.cursor/mcp.json' and, differently, in '"
assert_contains "$ERR" "(nothing was changed)"
check cmp -s "$CURSOR" "$T_ROOT/cursor.orig"
check test ! -e "$CURSOR.before-mcp-bridge"
rm -f "$USER_FILE"

# a server of the agent's named "bridge" that is not the bridge: refused, nothing changed
printf '{"mcpServers": {"bridge": {"command": "bridge-server"}}}\n' >"$T_ROOT/taken.json"
cp "$T_ROOT/taken.json" "$CURSOR"
run 3 B install cursor
assert_contains "$ERR" "already has a server named 'bridge' that does not run mcp-bridge"
check cmp -s "$CURSOR" "$T_ROOT/taken.json"
# a file that is not JSON: refused, with the line
printf '{"mcpServers": {\n  "a": }\n' >"$CURSOR"
run 3 B install cursor
assert_contains "$ERR" "'~/.cursor/mcp.json': line 2"
cp "$T_ROOT/cursor.orig" "$CURSOR"

# ---- VS Code: its user mcp.json, JSONC, key "servers" ------------------------------------------
VSC="$HOME/.config/Code/User/mcp.json"
cat >"$VSC" <<'EOF'
{
	"servers": {
		// the reference server
		"everything": {
			"type": "stdio",
			"command": "npx",
			"args": ["-y", "@modelcontextprotocol/server-everything"],
		},
	},
	"inputs": [],
}
EOF
cp "$VSC" "$T_ROOT/vsc.orig"
run 0 B install vscode
assert_contains "$OUT" "moved 'everything' from '~/.config/Code/User/mcp.json'"
assert_contains "$(cat "$VSC")" '"type": "stdio"'
assert_contains "$(cat "$VSC")" '"inputs": [],' "VS Code's other keys"
assert_not_contains "$(cat "$VSC")" '@modelcontextprotocol/server-everything'
run 0 B install vscode
assert_contains "$OUT" "nothing to change"
run 0 B uninstall vscode
check cmp -s "$VSC" "$T_ROOT/vsc.orig"

# the project's file: the moved servers go to the project layer of the bridge
cd "$T_ROOT/proj"
mkdir -p .vscode
printf '{\n  "servers": {\n    "proj-tool": {"command": "proj-tool"}\n  }\n}\n' >.vscode/mcp.json
cp .vscode/mcp.json "$T_ROOT/vscproj.orig"
run 0 B install vscode --scope project
assert_contains "$OUT" "to '$T_ROOT/proj/.pi/mcp.json'"
assert_contains "$OUT" "mcp-bridge trust"
assert_eq "$(dest_names .pi/mcp.json)" "proj-tool"
run 0 B uninstall vscode --scope project
check cmp -s .vscode/mcp.json "$T_ROOT/vscproj.orig"
run 2 B install codex --scope project
assert_contains "$ERR" "codex has no project file"
cd "$T_ROOT"

# ---- Codex: TOML with comments and other tables ------------------------------------------------
CODEX="$HOME/.codex/config.toml"
cat >"$CODEX" <<'EOF'
# Codex settings
model = "o3"
notes = """
[mcp_servers.not-a-table]
"""

[history]
persistence = "none" # keep nothing

# the docs server
[mcp_servers.docs]
command = "npx"
args = ["-y", "@acme/docs-mcp"]
env = { "MODE" = "fast" }
tool_timeout_sec = 30.0

[mcp_servers.docs.tools.delete]
enabled = false

[profiles.fast]
model = "o4-mini"
EOF
cp "$CODEX" "$T_ROOT/codex.orig"
run 0 B install codex
assert_contains "$OUT" "moved 'docs' from '~/.codex/config.toml'"
assert_contains "$(cat "$CODEX")" "[mcp_servers.bridge]"
assert_contains "$(cat "$CODEX")" "[profiles.fast]" "Codex's other tables"
assert_contains "$(cat "$CODEX")" "persistence = \"none\" # keep nothing" "Codex's comments"
assert_not_contains "$(cat "$CODEX")" "docs-mcp"
# the entry in the bridge's shape, as the import reads it
assert_eq "$(json_get "$(cat "$USER_FILE")" 'JSON.stringify([j.mcpServers.docs.env, j.mcpServers.docs.timeout, j.mcpServers.docs.excludeTools])')" \
    '[{"MODE":"fast"},30000,["delete"]]'
cp "$CODEX" "$T_ROOT/codex.installed"
run 0 B install codex
check cmp -s "$CODEX" "$T_ROOT/codex.installed"
run 0 B uninstall codex
check cmp -s "$CODEX" "$T_ROOT/codex.orig"
run 0 B install codex
printf '\n[profiles.slow]\nmodel = "o3"\n' >>"$CODEX"
run 0 B uninstall codex
assert_contains "$(cat "$CODEX")" "[profiles.slow]" "the later edit"
assert_contains "$(cat "$CODEX")" "[mcp_servers.docs.tools.delete]" "the moved server, as written"
assert_not_contains "$(cat "$CODEX")" "[mcp_servers.bridge]"
cp "$T_ROOT/codex.orig" "$CODEX"

# a failed write leaves the old file intact, the bridge's file as it was, nothing behind
if [ -n "${FAULTINJECT_LIB:-}" ]; then
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" FAULT_RENAME_SUFFIX=/config.toml FAULT_ERRNO=13 LD_PRELOAD="$FAULTINJECT_LIB" \
        run 1 B install codex
    assert_contains "$ERR" "config.toml"
    check cmp -s "$CODEX" "$T_ROOT/codex.orig"
    assert_eq "$(dest_names)" "" "the bridge's file after a failed install"
    assert_eq "$(ls -A "$HOME/.codex" | tr '\n' ' ')" "config.toml " "nothing left beside the file"
fi
if [ "$(id -u)" != 0 ]; then
    chmod 555 "$HOME/.codex"
    run 1 B install codex
    chmod 755 "$HOME/.codex"
    check cmp -s "$CODEX" "$T_ROOT/codex.orig"
    assert_eq "$(dest_names)" ""
fi

# ---- Claude Desktop ---------------------------------------------------------------------------
DESK="$HOME/.config/Claude/claude_desktop_config.json"
printf '{\n  "mcpServers": {\n    "notes": {\n      "command": "notes-mcp",\n      "args": []\n    }\n  },\n  "globalShortcut": ""\n}' >"$DESK"
cp "$DESK" "$T_ROOT/desk.orig"
# a file that is a symbolic link (dotfiles) stays one: its target changes
mkdir -p "$T_ROOT/dotfiles"
mv "$DESK" "$T_ROOT/dotfiles/desk.json"
ln -s "$T_ROOT/dotfiles/desk.json" "$DESK"
run 0 B install claude-desktop
check test -L "$DESK"
assert_eq "$(json_get "$(cat "$DESK")" 'Object.keys(j.mcpServers).join(" ") + " " + j.mcpServers.bridge.command')" "bridge $EXE"
run 0 B uninstall claude-desktop
check test -L "$DESK"
check cmp -s "$DESK" "$T_ROOT/desk.orig"

# ---- pi: the bridge gets a file of its own -----------------------------------------------------
printf '{\n  "mcpServers": {\n    "files": { "command": "files-mcp" }\n  }\n}\n' >"$USER_FILE"
cp "$USER_FILE" "$T_ROOT/pi.orig"
run 0 B install pi
assert_eq "$(json_get "$(cat "$USER_FILE")" 'JSON.stringify(j.mcpServers.bridge.args)')" \
    "[\"serve\",\"--agent\",\"pi\",\"--config\",\"$PI_CODING_AGENT_DIR/bridge.json\"]"
assert_eq "$(json_get "$(cat "$USER_FILE")" 'j.mcpServers.bridge.toolPrefix')" "none" \
    "the adapter's prefix does not come on top of the server's"
assert_eq "$(dest_names "$PI_CODING_AGENT_DIR/bridge.json")" "files"
run 0 B list --config "$PI_CODING_AGENT_DIR/bridge.json"
assert_contains "$OUT" "files-mcp"
run 0 B uninstall pi
check cmp -s "$USER_FILE" "$T_ROOT/pi.orig"
rm -f "$USER_FILE"

# ---- a lock held by another process: waited for, then refused ----------------------------------
# the waiting: a holder that lets go after a second
(
    flock 9
    touch "$T_ROOT/held"
    sleep 1
) 9<"$HOME/.cursor" &
holder=$!
wait_until 5 "the lock to be held" test -e "$T_ROOT/held"
run 0 B install cursor
assert_contains "$OUT" "added 'bridge'"
wait "$holder"
run 0 B uninstall cursor
check cmp -s "$CURSOR" "$T_ROOT/cursor.orig"
# the refusal: this shell holds it
exec {lockfd}<"$HOME/.cursor"
flock "$lockfd"
run 1 B install cursor
exec {lockfd}<&-
assert_contains "$ERR" "another mcp-bridge install or uninstall is changing a file in '~/.cursor'"
assert_contains "$ERR" "(nothing was changed)"
check cmp -s "$CURSOR" "$T_ROOT/cursor.orig"
assert_eq "$(dest_names)" ""
