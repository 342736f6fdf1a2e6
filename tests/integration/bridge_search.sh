# directTools "search" (the pi adapter's search-activated direct tools), with the SDK's Client in
# front of `mcp-bridge serve` and the reference server (server-everything, stdio): its tools are
# held back from tools/list, the proxy tool alone listed, until the proxy tool's search finds
# them; then those (and only those) are listed, the agent is told with
# notifications/tools/list_changed, and they are called by name. A search that finds them again
# adds nothing. The same through the settings' "search" and an entry's.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

export MCP_BRIDGE_CACHE=off
SDK="$PEERS_DIR/node_modules/@modelcontextprotocol/sdk/dist/esm"
EV="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

cat >"$T_ROOT/search-agent.mjs" <<EOF
// Lists the tools, searches, waits (at most 10 s) for notifications/tools/list_changed, lists
// again and calls what was found; prints one JSON line of what it saw.
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
const search = text(await c.callTool({ name: 'mcp', arguments: { search: 'echo' } }));
const end = Date.now() + 10000;
while (!changed && Date.now() < end) await new Promise((res) => setTimeout(res, 50));
const notified = changed;
const after = await names();
const echo = after.includes('mcp_everything_echo')
  ? text(await c.callTool({ name: 'mcp_everything_echo', arguments: { message: 'found' } }))
  : null;
const again = text(await c.callTool({ name: 'mcp', arguments: { search: 'echo' } }));
const last = await names();
process.stdout.write(JSON.stringify({ before, search, notified, after, echo, again, last }) + '\n');
await c.close();
EOF

check() { # LABEL CONFIG
    echo "== $1"
    run 0 node "$T_ROOT/search-agent.mjs" "$MCP_BRIDGE_BIN" --config "$2" serve
    local j=$OUT
    assert_eq "$(json_get "$j" 'j.before.join(",")')" "mcp" "$1: the tools listed before a search"
    assert_contains "$(json_get "$j" 'j.search')" "mcp_everything_echo - " "$1: the search's answer"
    assert_contains "$(json_get "$j" 'j.search')" "listed now: mcp_everything_echo" "$1: the search's answer"
    assert_eq "$(json_get "$j" 'j.notified >= 1')" "true" "$1: notifications/tools/list_changed after the search"
    assert_eq "$(json_get "$j" 'j.after.join(",")')" "mcp,mcp_everything_echo" "$1: the tools listed after the search"
    assert_contains "$(json_get "$j" 'j.echo')" "found" "$1: the found tool, called by name"
    assert_not_contains "$(json_get "$j" 'j.again')" "listed now" "$1: a second search"
    assert_eq "$(json_get "$j" 'j.last.join(",")')" "mcp,mcp_everything_echo" "$1: the tools listed at the end"
    assert_not_contains "$ERR" "read as false" "$1: the bridge's log"
}

cat >"$T_ROOT/settings.json" <<EOF
{"settings": {"directTools": "search"},
 "mcpServers": {"everything": {"command": "node", "args": ["$EV", "stdio"]}}}
EOF
check "settings.directTools \"search\"" "$T_ROOT/settings.json"

cat >"$T_ROOT/entry.json" <<EOF
{"settings": {"directTools": false},
 "mcpServers": {"everything": {"command": "node", "args": ["$EV", "stdio"], "directTools": "search"}}}
EOF
check "an entry's directTools \"search\"" "$T_ROOT/entry.json"
