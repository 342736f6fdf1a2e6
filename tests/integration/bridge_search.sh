# directTools "search" (the pi adapter's search-activated direct tools), with the SDK's Client in
# front of `mcp-bridge serve` and the reference server (server-everything, stdio): its tools are
# held back from tools/list, the proxy tool alone listed, until the proxy tool's search finds
# them; then those (and only those) are listed, the agent is told with
# notifications/tools/list_changed, and they are called by name. A search that finds them again
# adds nothing. The same through the settings' "search" and an entry's, whose searchKeywords
# find a tool by a word that is neither in its name nor in its description.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

export MCP_BRIDGE_CACHE=off
SDK="$PEERS_DIR/node_modules/@modelcontextprotocol/sdk/dist/esm"
EV="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

cat >"$T_ROOT/search-agent.mjs" <<EOF
// Lists the tools, searches for \$QUERY, waits (at most 10 s) for
// notifications/tools/list_changed, lists again and calls \$TOOL (arguments \$ARGS) if it is
// listed now; prints one JSON line of what it saw.
import { Client } from '$SDK/client/index.js';
import { StdioClientTransport } from '$SDK/client/stdio.js';
import { ToolListChangedNotificationSchema } from '$SDK/types.js';

const t = new StdioClientTransport({ command: process.argv[2], args: process.argv.slice(3), stderr: 'inherit', env: process.env });
const c = new Client({ name: 'search-agent', version: '1' });
let changed = 0;
c.setNotificationHandler(ToolListChangedNotificationSchema, () => { changed++; });
await c.connect(t);
const names = async () => (await c.listTools()).tools.map((x) => x.name).sort();
const text = (r) => r.content.map((x) => x.text ?? '').join('');
const before = await names();
const search = text(await c.callTool({ name: 'mcp', arguments: { search: process.env.QUERY } }));
const end = Date.now() + 10000;
while (!changed && Date.now() < end) await new Promise((res) => setTimeout(res, 50));
const notified = changed;
const after = await names();
const called = after.includes(process.env.TOOL)
  ? text(await c.callTool({ name: process.env.TOOL, arguments: JSON.parse(process.env.ARGS) }))
  : null;
const again = text(await c.callTool({ name: 'mcp', arguments: { search: process.env.QUERY } }));
const last = await names();
process.stdout.write(JSON.stringify({ before, search, notified, after, called, again, last }) + '\n');
await c.close();
EOF

check() { # LABEL CONFIG QUERY TOOL ARGS RESULT: TOOL is the one tool QUERY finds
    local label=$1 config=$2 tool=$4 result=$6
    echo "== $label"
    QUERY=$3 TOOL=$tool ARGS=$5 run 0 node "$T_ROOT/search-agent.mjs" "$MCP_BRIDGE_BIN" --config "$config" serve
    local j=$OUT
    assert_eq "$(json_get "$j" 'j.before.join(",")')" "mcp" "$label: the tools listed before a search"
    assert_contains "$(json_get "$j" 'j.search')" "1 tool matches '$3':"$'\n'"$tool - " "$label: the search's answer"
    assert_eq "$(json_get "$j" 'j.search.split("\n").filter((l) => l.startsWith("listed now")).join("|")')" \
        "listed now: $tool" "$label: what the search listed"
    assert_eq "$(json_get "$j" 'j.notified >= 1')" "true" "$label: notifications/tools/list_changed after the search"
    assert_eq "$(json_get "$j" 'j.after.join(",")')" "mcp,$tool" "$label: the tools listed after the search"
    assert_contains "$(json_get "$j" 'j.called')" "$result" "$label: the found tool, called by name"
    assert_not_contains "$(json_get "$j" 'j.again')" "listed now" "$label: a second search"
    assert_eq "$(json_get "$j" 'j.last.join(",")')" "mcp,$tool" "$label: the tools listed at the end"
    assert_not_contains "$ERR" "read as false" "$label: the bridge's log"
    assert_not_contains "$ERR" "not applied" "$label: the bridge's log"
}

cat >"$T_ROOT/settings.json" <<EOF
{"settings": {"directTools": "search"},
 "mcpServers": {"everything": {"command": "node", "args": ["$EV", "stdio"]}}}
EOF
check "settings.directTools \"search\"" "$T_ROOT/settings.json" echo mcp_everything_echo \
    '{"message": "found"}' "Echo: found"

cat >"$T_ROOT/entry.json" <<EOF
{"settings": {"directTools": false},
 "mcpServers": {"everything": {"command": "node", "args": ["$EV", "stdio"], "directTools": "search",
   "searchKeywords": {"get-sum": ["arithmetic"], "mcp_everything_get-t*": ["picture"]}}}}
EOF
check "an entry's directTools \"search\", found by its searchKeywords" "$T_ROOT/entry.json" \
    arithmetic mcp_everything_get-sum '{"a": 2, "b": 3}' "5"
