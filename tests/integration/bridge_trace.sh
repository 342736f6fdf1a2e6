# The pi adapter's "trace": metadata-only protocol tracing per server, with the SDK's Client in
# front of `mcp-bridge serve` and the reference server (server-everything, stdio). An entry's
# "trace": true gives the session's own file under .pi/mcp-traces/ (0600, its directory 0700)
# with a record per message both ways (initialize, its answer with a latency, tools/list,
# tools/call and its answer), in the adapter's shape; a canary in the call's arguments and in
# its result never reaches the file, nor does a server not traced. settings.trace names a file
# and its bounds: maxEvents and maxBytes stop the trace at whole records; an entry's "trace":
# false keeps it out of a trace enabled for all.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

export MCP_BRIDGE_CACHE=off
SDK="$PEERS_DIR/node_modules/@modelcontextprotocol/sdk/dist/esm"
EV="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
TINY="$PEERS_DIR/tiny-server.mjs"
CANARY="trace-canary-$RANDOM$RANDOM-q7"

cat >"$T_ROOT/trace-agent.mjs" <<EOF
// Lists the tools, calls each server's echo with \$CANARY in its message, prints one JSON line
// of the answers' texts.
import { Client } from '$SDK/client/index.js';
import { StdioClientTransport } from '$SDK/client/stdio.js';

const t = new StdioClientTransport({ command: process.argv[2], args: process.argv.slice(3), stderr: 'inherit', env: process.env });
const c = new Client({ name: 'trace-agent', version: '1' });
await c.connect(t);
const tools = (await c.listTools()).tools.map((x) => x.name).filter((n) => n.endsWith('echo')).sort();
const texts = {};
for (const name of tools) {
  const r = await c.callTool({ name, arguments: { message: process.env.CANARY } });
  texts[name] = r.content.map((x) => x.text ?? '').join('');
}
process.stdout.write(JSON.stringify({ tools, texts }) + '\n');
await c.close();
EOF

# records FILE EXPR: the JavaScript expression on the file's records (as \`r\`, an array)
records() {
    node -e 'const r = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)); const v = ('"$2"'); process.stdout.write(typeof v === "string" ? v : JSON.stringify(v));' "$1"
}

serve() { # CONFIG: the agent through the bridge; its answer in $OUT
    CANARY=$CANARY run 0 node "$T_ROOT/trace-agent.mjs" "$MCP_BRIDGE_BIN" --config "$1" serve
    assert_contains "$OUT" "$CANARY" "the echo's answer (the canary went both ways)"
}

echo "== an entry's trace: the session's own file"
cat >"$T_ROOT/a.json" <<EOF
{"mcpServers": {
  "ev": {"command": "node", "args": ["$EV", "stdio"], "trace": true},
  "quiet": {"command": "node", "args": ["$TINY", "--name", "quiet"]}}}
EOF
serve "$T_ROOT/a.json"
assert_eq "$(json_get "$OUT" 'j.tools.length')" "2" "both servers' echo called"
assert_not_contains "$ERR" "not applied" "the bridge's log"
shopt -s nullglob
files=("$T_ROOT"/.pi/mcp-traces/mcp-*.jsonl)
shopt -u nullglob
assert_eq "${#files[@]}" "1" "one trace file under .pi/mcp-traces"
F=${files[0]}
assert_contains "${F##*/}" "$(date -u +%Y-%m-)" "the file's name holds the time"
assert_eq "$(file_mode "$F")" "600" "the file's mode"
assert_eq "$(file_mode "$T_ROOT/.pi/mcp-traces")" "700" "the directory's mode"
T_CHECKS=$((T_CHECKS + 1))
! grep -qF "$CANARY" "$F" || fail "the canary (arguments, result) is in the trace file"
assert_eq "$(records "$F" 'r.every((x) => x.version === 1 && x.server === "ev" && x.transport === "stdio" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(x.timestamp) && x.bytes > 0)')" \
    "true" "every record: version, server, transport, timestamp, bytes"
assert_eq "$(records "$F" 'r.filter((x) => Object.keys(x).some((k) => !["version", "timestamp", "direction", "server", "transport", "kind", "status", "method", "id", "errorCode", "bytes", "durationMs"].includes(k))).length')" \
    "0" "no key but the adapter's"
assert_eq "$(records "$F" 'r.filter((x) => x.direction === "outbound").map((x) => x.kind + ":" + (x.method ?? "")).filter((k) => ["request:initialize", "notification:notifications/initialized", "request:tools/list", "request:tools/call"].includes(k)).filter((k, i, a) => a.indexOf(k) === i).sort().join(",")')" \
    "notification:notifications/initialized,request:initialize,request:tools/call,request:tools/list" \
    "the outbound records"
call_id=$(records "$F" 'r.find((x) => x.direction === "outbound" && x.method === "tools/call").id')
assert_eq "$(records "$F" "r.filter((x) => x.direction === 'inbound' && x.kind === 'response' && x.id === $call_id && x.status === 'received' && x.durationMs >= 0 && !('method' in x)).length")" \
    "1" "the call's answer, with its latency"
# the probe of the era (server/discover), which a legacy server refuses: the code, not the message
probe_id=$(records "$F" 'r.find((x) => x.direction === "outbound" && x.method === "server/discover").id')
assert_eq "$(records "$F" "r.filter((x) => x.direction === 'inbound' && x.id === $probe_id).map((x) => x.errorCode).join()")" \
    "-32601" "an error answer: its code"
assert_eq "$(records "$F" 'r.filter((x) => x.direction === "outbound").every((x) => x.status === "sent" && !("durationMs" in x))')" \
    "true" "outbound records: sent"

echo "== settings.trace: the file named, maxEvents; trace: false keeps a server out"
cat >"$T_ROOT/b.json" <<EOF
{"settings": {"trace": {"enabled": true, "file": "$T_ROOT/named/t.jsonl", "maxEvents": 5}},
 "mcpServers": {
  "ev": {"command": "node", "args": ["$EV", "stdio"]},
  "quiet": {"command": "node", "args": ["$TINY", "--name", "quiet"], "trace": false}}}
EOF
serve "$T_ROOT/b.json"
assert_eq "$(records "$T_ROOT/named/t.jsonl" 'r.length')" "5" "maxEvents: 5 records"
assert_eq "$(records "$T_ROOT/named/t.jsonl" 'r.every((x) => x.server === "ev")')" "true" "only the traced server"
assert_eq "$(file_mode "$T_ROOT/named")" "700" "the named file's directory, created"

echo "== maxBytes: whole records up to the bound, then none; the file is truncated at start"
cat >"$T_ROOT/c.json" <<EOF
{"settings": {"trace": {"enabled": true, "file": "$T_ROOT/named/t.jsonl", "maxBytes": 1000}},
 "mcpServers": {"ev": {"command": "node", "args": ["$EV", "stdio"]}}}
EOF
echo "not a record of this session" >>"$T_ROOT/named/t.jsonl"
serve "$T_ROOT/c.json"
size=$(stat -c %s "$T_ROOT/named/t.jsonl")
T_CHECKS=$((T_CHECKS + 1))
[ "$size" -le 1000 ] && [ "$size" -gt 500 ] || fail "maxBytes 1000: the file has $size bytes"
assert_eq "$(tail -c 1 "$T_ROOT/named/t.jsonl" | od -An -c | tr -d ' ')" '\n' "the last record is whole"
assert_eq "$(records "$T_ROOT/named/t.jsonl" 'r[0].direction + " " + r[0].kind')" "outbound request" \
    "the file starts afresh"
T_CHECKS=$((T_CHECKS + 1))
! grep -qF "$CANARY" "$T_ROOT/named/t.jsonl" || fail "the canary is in the named trace file"

echo "PASS bridge_trace ($T_CHECKS checks)"
