# mcp-bridge with other clients' files imported ("imports" in the user layer): a Claude Code
# ~/.claude.json with a projects map (and ~/.claude/mcp.json), a VS Code .vscode/mcp.json with
# inputs, a Cursor file, a Codex config.toml, a Windsurf and a Claude Desktop file, imported in
# priority order. `mcp-bridge list` (and --json) must show which entry won each clash and where
# it came from, and leave out the entries that run the bridge itself, saying so; the VS Code file
# has comments and trailing commas, the Codex file floats and per-tool tables; a Codex server
# with a key that is not read is left out with its line, a Codex file with a syntax error is a
# problem of the file. Then the SDK's Client (tests/peers/bridge-imports.mjs) on
# `mcp-bridge serve` lists and calls the tools of server-everything imported from Cursor and of a
# server imported from Codex, while the self-referencing entry is never started.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

# the helpers list asks: the real ones of this build
export CREDKIT_SECRETS="$SECRETS_BIN" CREDKIT_MCP_AUTH="$MCP_AUTH_BIN"
unset XDG_CONFIG_HOME || true

B() {
    "$MCP_BRIDGE_BIN" "$@"
}

PROJ="$T_ROOT/proj"
USER_FILE="$PI_CODING_AGENT_DIR/mcp.json"
mkdir -p "$PROJ/.vscode" "$PI_CODING_AGENT_DIR" "$HOME/.cursor" "$HOME/.claude" "$HOME/.codex" \
    "$HOME/.config/mcp" "$T_ROOT/bin"
cd "$PROJ"

# a stand-in for the bridge: an entry that runs it leaves a mark if it is ever started
cat >"$T_ROOT/bin/mcp-bridge" <<EOF
#!/bin/sh
touch "$T_ROOT/self-started"
exit 1
EOF
chmod +x "$T_ROOT/bin/mcp-bridge"

# row NAME: the line of list's table whose first column is NAME ("" when there is none)
row() {
    awk -v n="$1" '$1 == n { print; exit }' <<<"$OUT"
}

# ---- list: what wins, from where ------------------------------------------------------------
cat >"$HOME/.claude.json" <<EOF
{
  "numStartups": 3,
  "mcpServers": {
    "shared": {"type": "stdio", "command": "claude-user-shared"},
    "cc-user": {"command": "cc-user-cmd"}
  },
  "projects": {
    "$PROJ": {
      "allowedTools": [],
      "mcpServers": {
        "shared": {"command": "claude-local-shared"},
        "cc-local": {"type": "http", "url": "https://cc-local.example/mcp"}
      }
    },
    "/somewhere/else": {"mcpServers": {"cc-elsewhere": {"command": "elsewhere"}}}
  }
}
EOF
cat >"$HOME/.claude/mcp.json" <<'EOF'
{"mcpServers": {"cc-user": {"command": "dot-claude-cmd"}, "cc-dot": {"command": "dot-only"}}}
EOF
# as VS Code writes it: JSON with comments and trailing commas
cat >"$PROJ/.vscode/mcp.json" <<'EOF'
// https://code.visualstudio.com/docs/copilot/chat/mcp-servers
{
  "inputs": [
    {"type": "promptString", "id": "vs-token", "description": "API token /* kept */", "password": true},
  ],
  /* the servers */
  "servers": {
    "vs-remote": {"type": "http", "url": "https://vs.example/mcp", // remote
                  "headers": {"Authorization": "Bearer ${input:vs-token}"}},
    "shared": {"type": "stdio", "command": "vscode-shared"},
    "vs-fs": {"type": "stdio", "command": "node", "args": ["${workspaceFolder}/fs.js",],},
  },
}
EOF
cat >"$HOME/.cursor/mcp.json" <<EOF
{"mcpServers": {
  "shared": {"command": "cursor-shared"},
  "cursor-only": {"command": "cursor-cmd"},
  "cursor-x": {"command": "cursor-x-cmd"},
  "loop": {"command": "$T_ROOT/bin/mcp-bridge", "args": ["serve"]}
}}
EOF
cat >"$HOME/.codex/config.toml" <<'EOF'
model = "o3"
approval_policy = "on-request"

[mcp_servers.codex-tool]
command = "codex-cmd"
args = [
  "--flag", # a comment
]
startup_timeout_sec = 5.5

[mcp_servers.codex-tool.env]
MODE = 'x'

[mcp_servers.codex-tool.tools.search]
approval_mode = "approve"

[mcp_servers.codex-float]
command = "float-cmd"
env = { A = "b" }
tool_timeout_sec = 60.0
tools.drop.enabled = false

[mcp_servers.shared]
command = "codex-shared"

[mcp_servers.codex-npx]
command = "npx"
args = ["-y", "mcp-bridge", "serve"]

[mcp_servers.codex-off]
command = "off-cmd"
enabled = false

[tui]
notifications = true
EOF
mkdir -p "$HOME/.codeium/windsurf" "$HOME/.config/Claude"
echo '{"mcpServers": {"ws-remote": {"serverUrl": "https://ws.example/mcp"}, "cursor-x": {"command": "ws-x"}}}' \
    >"$HOME/.codeium/windsurf/mcp_config.json"
echo '{"mcpServers": {"desk": {"command": "desk-cmd"}}}' >"$HOME/.config/Claude/claude_desktop_config.json"
# the shared layer, below the user layer and its imports
echo '{"mcpServers": {"cc-user": {"command": "shared-layer-cmd"}, "low": {"command": "low-cmd"}}}' \
    >"$HOME/.config/mcp/mcp.json"
cat >"$USER_FILE" <<'EOF'
{
  "imports": ["claude-code", "vscode", "cursor", "codex", "windsurf", "claude-desktop"],
  "mcpServers": {
    "mine": {"command": "my-own"},
    "cursor-only": {"command": "mine-wins"}
  }
}
EOF

# the project's VS Code file is the project's: its entries are untrusted until approved
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "vs-remote").status')" "untrusted" \
    "an entry of the project's .vscode/mcp.json before its approval"
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "cursor-x").trust')" "trusted" \
    "an entry of ~/.cursor/mcp.json"
run 0 B trust --yes
assert_contains "$OUT" "server 'vs-remote' in"
run 0 B list
# the first import listed wins, and within Claude Code the project's entry
assert_contains "$(row shared)" "~/.claude.json (import claude-code)" "the row of 'shared' names its import"
assert_contains "$OUT" "    shadows: ~/.cursor/mcp.json (import cursor)"
assert_contains "$OUT" "imported files (\"imports\"; never written to):"
assert_contains "$OUT" "  ~/.codex/config.toml (import codex)"
assert_contains "$(row shared)" "~/.claude.json" "the row of 'shared'"
assert_contains "$(row shared)" "claude-local-shared" "the row of 'shared'"
assert_contains "$(row cc-local)" "https://cc-local.example/mcp" "the row of 'cc-local'"
# ~/.claude.json over ~/.claude/mcp.json, and an import of the user layer over the shared layer
assert_contains "$(row cc-user)" "cc-user-cmd" "the row of 'cc-user'"
assert_contains "$(row cc-dot)" "~/.claude/mcp.json" "the row of 'cc-dot'"
assert_eq "$(row cc-elsewhere)" "" "another project's server"
assert_contains "$(row low)" "~/.config/mcp/mcp.json" "the row of 'low'"
# VS Code: "servers", "type", ${workspaceFolder}; ${input:ID} kept as written
assert_contains "$(row vs-remote)" "$PROJ/.vscode/mcp.json" "the row of 'vs-remote'"
assert_contains "$(row vs-remote)" "https://vs.example/mcp" "the row of 'vs-remote'"
assert_contains "$(row vs-fs)" "node $PROJ/fs.js" "the row of 'vs-fs'"
# the layer's own entry over its imports
assert_contains "$(row cursor-only)" "mine-wins" "the row of 'cursor-only'"
assert_contains "$(row cursor-only)" "$USER_FILE" "the row of 'cursor-only'"
assert_contains "$(row cursor-x)" "~/.cursor/mcp.json" "the row of 'cursor-x'"
# Codex's tables
assert_contains "$(row codex-tool)" "~/.codex/config.toml" "the row of 'codex-tool'"
assert_contains "$(row codex-tool)" "codex-cmd --flag" "the row of 'codex-tool'"
assert_contains "$(row codex-off)" "~/.codex/config.toml" "the row of 'codex-off'"
assert_contains "$(row mine)" "my-own" "the row of 'mine'"
# Windsurf's serverUrl, Claude Desktop's file
assert_contains "$(row ws-remote)" "https://ws.example/mcp" "the row of 'ws-remote'"
assert_contains "$(row ws-remote)" "~/.codeium/windsurf/mcp_config.json" "the row of 'ws-remote'"
assert_contains "$(row desk)" "~/.config/Claude/claude_desktop_config.json" "the row of 'desk'"
for loser in claude-user-shared vscode-shared cursor-shared codex-shared dot-claude-cmd \
    shared-layer-cmd cursor-cmd elsewhere ws-x; do
    assert_not_contains "$OUT" "$loser" "list"
done
# the entries that run the bridge itself: not listed, a note each
assert_eq "$(row loop)" "" "the self-referencing Cursor entry"
assert_eq "$(row codex-npx)" "" "the self-referencing Codex entry"
assert_contains "$OUT" "server 'loop' in '~/.cursor/mcp.json' (import cursor) is skipped: it runs mcp-bridge itself, which would start the bridge inside itself"
assert_contains "$OUT" "server 'codex-npx' in '~/.codex/config.toml' (import codex) is skipped: it runs mcp-bridge itself"
[ ! -e "$T_ROOT/self-started" ] || fail "list started the self-referencing entry"

run 0 B list --json
J=$OUT
assert_eq "$(json_get "$J" 'j.servers.map(s => s.name).join(",")')" \
    "cc-dot,cc-local,cc-user,codex-float,codex-off,codex-tool,cursor-only,cursor-x,desk,low,mine,shared,vs-fs,vs-remote,ws-remote" \
    "the servers of list --json"
# vs-remote's ${input:vs-token} is the secret vs_token (a secret's name has no '-'): not set up
assert_contains "$(json_get "$J" 'j.servers.find(s => s.name === "vs-remote").warnings.join("\n")')" \
    '${input:vs-token} is read from the secret vs_token: run secrets configure vs_token'
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "vs-remote").status')" "missing" "an input not set up"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "vs-remote").credentials.variables.map(v => v.name).join(",")')" \
    "vs_token" "the secret an input is read from"
assert_eq "$(json_get "$J" 'j.servers.filter(s => !s.valid).map(s => s.name + ": " + s.error).join("; ")')" "" \
    "the invalid entries"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "shared").layer')" "user" \
    "the layer of an imported entry (the importing one)"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "shared").source')" "$HOME/.claude.json" \
    "an imported entry's source, absolute"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "shared").import')" "claude-code"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "shared").shadowed.join("|")')" \
    "~/.claude.json (import claude-code)|$PROJ/.vscode/mcp.json (import vscode)|~/.cursor/mcp.json (import cursor)|~/.codex/config.toml (import codex)" \
    "what 'shared' won over, highest first"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "codex-off").status')" "disabled" "enabled = false"
assert_contains "$(json_get "$J" 'j.servers.find(s => s.name === "codex-tool").warnings.join("\n")')" \
    "'tools.search.approval_mode' is Codex's own: it is not read here"
assert_contains "$(json_get "$J" 'JSON.stringify(j.servers.find(s => s.name === "codex-float"))')" \
    "float-cmd" "a Codex server with a float and a per-tool key"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "mine").import')" "null" "a layer's own entry"
assert_contains "$(json_get "$J" 'j.imported_files.map(f => f.import + " " + f.path).join("\n")')" \
    "codex $HOME/.codex/config.toml" "the imported files of list --json"
assert_contains "$(json_get "$J" 'j.servers.find(s => s.name === "vs-remote").source')" \
    "$PROJ/.vscode/mcp.json"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "low").layer')" "shared"
assert_contains "$(json_get "$J" 'j.diagnostics.map(d => d.message).join("\n")')" \
    "server 'loop' in '~/.cursor/mcp.json' (import cursor) is skipped"

# ---- list: the import's problems --------------------------------------------------------------
cat >>"$HOME/.codex/config.toml" <<'EOF'
[mcp_servers.floaty]
command = "f"
tool_timeout_sec = inf
EOF
echo '{"imports": ["codex", "cursr"]}' >"$USER_FILE"
line=$(grep -n 'tool_timeout_sec = inf' "$HOME/.codex/config.toml" | cut -d: -f1)
run 0 B list
assert_contains "$OUT" "'~/.codex/config.toml': server 'floaty' (import codex): line $line: 'tool_timeout_sec': inf and nan are not read: the server is not imported"
assert_contains "$OUT" "unknown import 'cursr' in \"imports\": the accepted ones are cursor, claude-code, claude-desktop, vscode, windsurf, codex"
assert_eq "$(row floaty)" "" "a Codex server with a key that is not read"
assert_contains "$(row codex-tool)" "codex-cmd --flag" "the servers next to it"
# a syntax error: the file cannot be trusted, none of its servers is read
echo 'broken = [1, 2' >>"$HOME/.codex/config.toml"
line=$(wc -l <"$HOME/.codex/config.toml")
run 0 B list
assert_contains "$OUT" "'~/.codex/config.toml' (import codex): line $((line + 1)):"
assert_contains "$OUT" "its servers are not imported"
assert_eq "$(row codex-tool)" "" "a server of a Codex file that is not read"
assert_contains "$(row low)" "low-cmd" "the shared layer's entry"

# ---- serve: the SDK's Client on imported servers ---------------------------------------------
everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
node_bin=$(command -v node)
rm -f "$HOME/.claude.json" "$HOME/.config/mcp/mcp.json"
cat >"$HOME/.cursor/mcp.json" <<EOF
{"mcpServers": {
  "everything": {"command": "$node_bin",
                 "args": ["$PEERS_DIR/bridge-tap.mjs", "$T_ROOT/everything.tap", "--", "$node_bin", "$everything", "stdio"]},
  "loop": {"command": "$T_ROOT/bin/mcp-bridge", "args": ["serve", "--tag", "$T_ROOT"]}
}}
EOF
cat >"$HOME/.codex/config.toml" <<EOF
[mcp_servers.second]
command = "$node_bin"
args = ["$PEERS_DIR/bridge-server.mjs", "--name", "second", "--tag", "$T_ROOT"]

# shadowed by Cursor's entry of the same name: never started
[mcp_servers.everything]
command = "$T_ROOT/bin/not-there"
EOF
SERVE_FILE="$T_ROOT/serve.json"
echo '{"imports": ["cursor", "codex"]}' >"$SERVE_FILE"
driver serve "$T_ROOT/serve.bridge.log" bridge-imports.mjs --cwd "$PROJ" \
    --bridge "$(json_argv "$MCP_BRIDGE_BIN" --config "$SERVE_FILE" serve)" \
    --log "$T_ROOT/serve.bridge.log" \
    --expect-tool mcp_everything_echo --expect-tool mcp_second_echo --absent-prefix mcp_loop_ \
    --call "mcp_everything_echo=Echo: imported" --call "mcp_second_echo=second: imported"
bridge_done "mcp-bridge serve with imported servers"
[ ! -e "$T_ROOT/self-started" ] || fail "serve started the self-referencing entry"
T_CHECKS=$((T_CHECKS + 1))
assert_contains "$(cat "$T_ROOT/serve.bridge.log")" "server 'loop' in '~/.cursor/mcp.json' (import cursor) is skipped"
