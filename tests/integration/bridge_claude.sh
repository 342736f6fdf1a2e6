# Claude Code itself (tests/peers: @anthropic-ai/claude-code, `claude mcp list` and `claude mcp
# get`, which connect and need no API key) in front of mcp-bridge: what it prints for a server
# that cannot be had, through `connect NAME` and through `serve`. Servers: one that needs a
# sign-in (mcp-resource-server.mjs behind auth-server.mjs, nothing stored), the same with a
# token it refuses, a stdio command that is not installed, a URL nobody listens on, and the
# reference server (server-everything, stdio, a legacy server), healthy.
#
# Claude Code opens with server/discover at 2026-07-28 and falls back to initialize; it shows
# the error of the failed connect on one line ("Issue:"), with every argument of the command it
# ran blotted out ("[redacted]", case blind, inside words too): through `connect NAME` the
# entry's name is one of them. The reason and the fix's command must still be there, and the
# name is on the Args line of `claude mcp get`. The reference server must look the same to
# Claude Code directly and through `connect` (its status, and what its own log says it found).
# Through `serve` the bridge is one healthy server to Claude Code: it shows as connected, and
# the reasons reach the conversation in the proxy tool's answer (`claude -p` with a stand-in
# model, below).
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

CLAUDE="$PEERS_DIR/node_modules/.bin/claude"
[ -x "$CLAUDE" ] || fail "Claude Code is not installed in tests/peers (scripts/install-deps)"
: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
export CREDKIT_MCP_AUTH="$MCP_AUTH_BIN" MCP_BRIDGE_CACHE=off
# nothing leaves the machine: no telemetry, no update check
export DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
unset ANTHROPIC_API_KEY CLAUDE_CODE_OAUTH_TOKEN
mkdir -p "$PI_CODING_AGENT_DIR"
chmod 700 "$PI_CODING_AGENT_DIR"

EV="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
start_peer auth-server --quiet
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS" --quiet
RS=$PEER_URL
case "$RS" in */mcp) ;; *) RS="$RS/mcp" ;; esac
# a port nobody listens on: taken from the system, then let go
PORT=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')

# The bridge's own file is the one it reads by default ($PI_CODING_AGENT_DIR/mcp.json), so the
# fix it names is `mcp-auth NAME`, with no --config; Claude Code's entries are in ~/.claude.json,
# which the bridge does not read. The bridge's names differ from Claude Code's.
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<EOF
{"mcpServers": {
  "linear": {"url": "$RS"},
  "refusing": {"url": "$RS", "headers": {"Authorization": "Bearer not-a-token-the-server-takes"}},
  "absent": {"command": "no-such-mcp-server-xyz", "args": ["--stdio"]},
  "nowhere": {"url": "http://127.0.0.1:$PORT/mcp"},
  "reference": {"command": "node", "args": ["$EV", "stdio"]}
}}
EOF

cc() { "$CLAUDE" "$@"; }
add() { # CLAUDE_NAME CMD...
    local name=$1
    shift
    run 0 cc mcp add --scope user "$name" -- "$@"
}
add cc-signin "$MCP_BRIDGE_BIN" connect linear
add cc-refused "$MCP_BRIDGE_BIN" connect refusing
add cc-absent "$MCP_BRIDGE_BIN" connect absent
add cc-nowhere "$MCP_BRIDGE_BIN" connect nowhere
add cc-reference "$MCP_BRIDGE_BIN" connect reference
add direct-reference node "$EV" stdio
# serve, with the same servers in a file of its own (--config): the fix names it
cp "$PI_CODING_AGENT_DIR/mcp.json" "$T_ROOT/serve.json"
add cc-serve "$MCP_BRIDGE_BIN" --config "$T_ROOT/serve.json" serve

# get NAME: `claude mcp get NAME` (a health check of its own); ISSUE is its Issue line
get() {
    run 0 cc mcp get "$1"
    ISSUE=$(sed -n 's/^  Issue: //p' <<<"$OUT")
}

# ---- connect: each failure's reason, and its fix ----
echo "== connect: a sign-in needed"
get cc-signin
assert_contains "$OUT" "Status: ✘ Failed to connect" "claude mcp get cc-signin"
assert_eq "$ISSUE" "-32000: server '[redacted]': sign-in required: run 'mcp-auth [redacted]'" \
    "the reason of cc-signin"
assert_contains "$OUT" "Args: connect linear" "claude mcp get cc-signin"

echo "== connect: a token refused"
get cc-refused
assert_contains "$OUT" "Status: ✘ Failed to connect" "claude mcp get cc-refused"
# a refused token may be a stale one: the bridge tries again until its connect timeout
assert_eq "$ISSUE" "-32000: server '[redacted]' is not ready after 15000 ms: initialize failed: HTTP 401 Unauthorized: the credentials are missing or were refused" \
    "the reason of cc-refused"

echo "== connect: a command not installed"
get cc-absent
assert_contains "$OUT" "Status: ✘ Failed to connect" "claude mcp get cc-absent"
assert_eq "$ISSUE" "-32000: server '[redacted]': cannot run 'no-such-mcp-server-xyz': No such file or directory" \
    "the reason of cc-absent"

echo "== connect: the reference server, as directly"
get direct-reference
direct_status=$(grep '^  Status: ' <<<"$OUT")
get cc-reference
assert_eq "$(grep '^  Status: ' <<<"$OUT")" "$direct_status" "cc-reference's status (directly: $direct_status)"
assert_eq "$direct_status" "  Status: ✔ Connected" "the reference server's status"
# what Claude Code's own log says it found (capabilities, server, era, version): the same
LOGS="$HOME/.cache/claude-cli-nodejs"
found() { # CLAUDE_NAME: the capabilities line of its newest log
    local f
    f=$(find "$LOGS" -path "*/mcp-logs-$1/*.jsonl" | sort | tail -n 1)
    [ -n "$f" ] || fail "Claude Code wrote no log for $1 under $LOGS"
    grep -o 'Connection established with capabilities: .*"timestamp"' "$f" | sed 's/","timestamp"$//' | tail -n 1
}
direct_found=$(found direct-reference)
assert_contains "$direct_found" '\"protocolEra\":\"legacy\"' "what Claude Code found directly"
assert_eq "$(found cc-reference)" "$direct_found" "what Claude Code found through connect"

echo "== serve: the bridge is one healthy server"
get cc-serve
assert_contains "$OUT" "Status: ✔ Connected" "claude mcp get cc-serve"

# ---- claude mcp list: every server at once, the same lines ----
echo "== claude mcp list"
run 0 cc mcp list
LIST=$OUT
echo "$LIST"
line() { grep "^$1: " <<<"$LIST" || fail "claude mcp list has no line for $1:
$LIST"; }
assert_contains "$(line cc-signin)" "✘ Failed to connect — -32000: server '[redacted]': sign-in required: run 'mcp-auth [redacted]'"
assert_contains "$(line cc-absent)" "cannot run 'no-such-mcp-server-xyz': No such file or directory"
assert_contains "$(line cc-refused)" "the credentials are missing or were refused"
# nobody listens: the bridge tries again until its connect timeout, then says why
assert_contains "$(line cc-nowhere)" "✘ Failed to connect — -32000: server '[redacted]' is not ready after 15000 ms: initialize failed:"
assert_contains "$(line cc-nowhere)" "refused"
assert_contains "$(line cc-reference)" "✔ Connected"
assert_contains "$(line direct-reference)" "✔ Connected"
assert_contains "$(line cc-serve)" "✔ Connected"

# ---- serve: the reasons in the conversation ----
# Claude Code (`claude -p`) with a stand-in model on 127.0.0.1 (ANTHROPIC_BASE_URL; the key is
# a placeholder that no service takes): the model loads the proxy tool (ToolSearch: Claude Code
# defers MCP tools), calls mcp({}), and Claude Code prints the tool's result in its transcript
# (--output-format stream-json). The bridge's instructions, in the model's system prompt, point
# to that tool.
cat >"$T_ROOT/model.mjs" <<'EOF'
// A stand-in for the Messages API: the assistant's turns are the tool calls of argv[3] (a JSON
// array of [name, input]), one per turn, then a line of text. Every request is logged (argv[2]).
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [log, script] = [process.argv[2], JSON.parse(process.argv[3])];
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    appendFileSync(log, `${JSON.stringify({ url: req.url, body: body ? JSON.parse(body) : null })}\n`);
    if (!req.url.startsWith('/v1/messages')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{}');
      return;
    }
    const b = JSON.parse(body);
    if (req.url.includes('count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"input_tokens": 1}');
      return;
    }
    // the turn: how many tool results the conversation holds
    const step = b.messages.filter((m) => Array.isArray(m.content) && m.content.some((c) => c.type === 'tool_result')).length;
    const known = new Set((b.tools ?? []).map((t) => t.name));
    const call = step < script.length && known.has('ToolSearch') ? script[step] : null;
    const block = call ? { type: 'tool_use', id: `toolu_${step}`, name: call[0], input: call[1] } : { type: 'text', text: 'done' };
    const stop = call ? 'tool_use' : 'end_turn';
    const message = { id: `msg_${step}`, type: 'message', role: 'assistant', model: b.model, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } };
    if (!b.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...message, content: [block], stop_reason: stop }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    ev('message_start', { message: { ...message, content: [], stop_reason: null } });
    if (call) {
      ev('content_block_start', { index: 0, content_block: { ...block, input: {} } });
      ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(call[1]) } });
    } else {
      ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
      ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: block.text } });
    }
    ev('content_block_stop', { index: 0 });
    ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 1 } });
    ev('message_stop', {});
    res.end();
  });
});
server.listen(0, '127.0.0.1', () => console.log(`READY http://127.0.0.1:${server.address().port}`));
EOF
node "$T_ROOT/model.mjs" "$T_ROOT/model.log" \
    '[["ToolSearch", {"query": "select:mcp__cc-serve__mcp"}], ["mcp__cc-serve__mcp", {}]]' \
    >"$T_ROOT/model.out" 2>"$T_ROOT/model.err" </dev/null &
T_PEER_PIDS+=("$!")
has_ready() { grep -q '^READY ' "$T_ROOT/model.out"; }
wait_until 20 "the stand-in model" has_ready
MODEL=$(sed -n 's/^READY //p' "$T_ROOT/model.out")

echo "== serve: claude -p, the model asks the proxy tool"
ANTHROPIC_BASE_URL=$MODEL ANTHROPIC_API_KEY=placeholder-no-service-takes \
    run 0 cc -p "which MCP servers are not working?" --allowedTools mcp__cc-serve__mcp \
    --output-format stream-json --verbose
# the proxy tool's result, as Claude Code printed it
STATUS=$(node -e '
for (const line of require("fs").readFileSync(0, "utf8").split("\n")) {
  let m;
  try { m = JSON.parse(line); } catch { continue; }
  for (const c of m.message?.content ?? [])
    if (c.type === "tool_result" && c.tool_use_id === "toolu_1")
      process.stdout.write(typeof c.content === "string" ? c.content : c.content.map((x) => x.text ?? "").join(""));
}' <<<"$OUT")
echo "$STATUS"
assert_contains "$STATUS" "linear: sign-in required (run 'mcp-auth --config \"$T_ROOT/serve.json\" linear')" "the proxy tool's status"
assert_contains "$STATUS" "absent: failed (server 'absent': cannot run 'no-such-mcp-server-xyz': No such file or directory)" "the proxy tool's status"
assert_contains "$STATUS" "HTTP 401 Unauthorized: the credentials are missing or were refused" "the proxy tool's status"
assert_contains "$STATUS" "reference: connected" "the proxy tool's status"
grep -q "^nowhere: " <<<"$STATUS" || fail "the proxy tool's status names no 'nowhere':
$STATUS"
T_CHECKS=$((T_CHECKS + 1))
# the instructions the model got point to that tool
INSTR=$(node -e '
for (const line of require("fs").readFileSync(0, "utf8").split("\n")) {
  if (!line) continue;
  const s = JSON.stringify(JSON.parse(line).body ?? {});
  const i = s.indexOf("## cc-serve\\n");
  if (i >= 0) { process.stdout.write(JSON.parse(`"${s.slice(i, s.indexOf("\\n\\n", i))}"`)); break; }
}' <"$T_ROOT/model.log")
assert_contains "$INSTR" "The tool 'mcp' shows each server's state" "the instructions in the model's prompt"
