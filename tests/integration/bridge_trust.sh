# mcp-bridge trust: a project's entries are inert until approved. With real peers (the SDK's
# Client as the agent on `mcp-bridge serve`, @modelcontextprotocol/server-everything behind a
# command that leaves a mark when it runs, seam-header-server.mjs recording the headers it is
# sent): an untrusted entry never starts (no mark) and its ${SECRET} is never sent (the header
# server saw no request); `list`, `test` and `call` say why; `trust` shows what each entry runs
# and sends where, approves nothing without --yes off a terminal, records the approval (0600, a
# 0700 directory) with --yes; then both work and the secret arrives; a changed entry, a renamed
# one and the same file in another project are untrusted again; --revoke; the user's file and
# --config are trusted.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

: "${SECRETS_BIN:?SECRETS_BIN must point at the secrets binary (ctest sets it)}"
export CREDKIT_SECRETS="$SECRETS_BIN"
SDK="$PEERS_DIR/node_modules/@modelcontextprotocol/sdk/dist/esm"
EVERYTHING="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$EVERYTHING" ] || fail "server-everything is missing: run scripts/install-deps"

B() { "$MCP_BRIDGE_BIN" "$@"; }
# the secret a project entry asks for (the bridge's environment: `secrets` answers from it)
export TRUST_TEST_SECRET="trust-secret-$$-$RANDOM"
SECRET_DIGEST=$(printf '%s' "$TRUST_TEST_SECRET" | sha256sum | cut -c1-16)

start_peer seam-header-server --quiet
HS=$PEER_URL
hs_requests() { curl -fsS "${HS%/mcp}/__test/stats" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).requests))'; }
assert_eq "$(hs_requests)" 0 "the header server has seen nothing yet"

# the agent: serve in DIR, list tools until WANT appears (or 60 s), call it if given; prints
# {tools, text}
cat >"$T_ROOT/agent.mjs" <<EOF
import { Client } from "$SDK/client/index.js";
import { StdioClientTransport } from "$SDK/client/stdio.js";
const [dir, want, call, argsJson] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: process.env.MCP_BRIDGE_BIN, args: ["serve"], cwd: dir,
  env: process.env, stderr: "inherit",
});
const client = new Client({ name: "bridge-trust-test", version: "1.0.0" }, { capabilities: {} });
const within = (p, ms, what) => Promise.race([p, new Promise((_, reject) =>
  setTimeout(() => reject(new Error("timed out waiting for " + what)), ms).unref())]);
await within(client.connect(transport), 60000, "initialize");
let tools = [];
const end = Date.now() + 60000;
for (;;) {
  tools = (await within(client.listTools(), 60000, "tools/list")).tools.map((t) => t.name);
  if (tools.includes(want) || Date.now() > end) break;
  await new Promise((r) => setTimeout(r, 100));
}
let text = null;
if (call) {
  const r = await within(client.callTool({ name: call, arguments: JSON.parse(argsJson || "{}") }),
    60000, "tools/call " + call);
  text = r.content?.[0]?.text ?? null;
}
await client.close();
console.log(JSON.stringify({ tools, text }));
EOF
agent() { run 0 node "$T_ROOT/agent.mjs" "$@"; }
has_tool() { json_get "$OUT" "j.tools.includes(\"$1\")"; }

# the user's own file: trusted as it is
mkdir -p "$PI_CODING_AGENT_DIR"
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<EOF
{"mcpServers": {"mine": {"command": "node", "args": ["$EVERYTHING", "stdio", "$T_ROOT/mine"]}}}
EOF

# a cloned project: a command that leaves a mark if it ever runs, a URL that would get a secret
PROJ="$T_ROOT/proj"
mkdir -p "$PROJ/.pi" "$T_ROOT/bin"
cat >"$T_ROOT/bin/marker-server" <<EOF
#!/bin/sh
touch "$T_ROOT/marker-ran"
exec node "$EVERYTHING" stdio "$T_ROOT/marker"
EOF
chmod +x "$T_ROOT/bin/marker-server"
cat >"$PROJ/.mcp.json" <<EOF
{"mcpServers": {
  "marker": {"command": "$T_ROOT/bin/marker-server", "env": {"TOKEN": "\${TRUST_TEST_SECRET}"}},
  "web": {"url": "$HS", "headers": {"X-Api-Key": "\${TRUST_TEST_SECRET}"}}
}}
EOF

# ---- untrusted: never started, nothing sent, and every command says why ----
run 0 B list --help
assert_contains "$OUT" "untrusted"
run 0 B trust --help
assert_contains "$OUT" "usage: mcp-bridge trust"
run 0 B help trust
assert_contains "$OUT" "--revoke"
run 2 B trust --bogus
run 2 B trust extra
run 3 B trust --project "$T_ROOT/no-such-dir"

cd "$PROJ"
run 0 B list
assert_contains "$OUT" "untrusted (run: mcp-bridge trust)"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^\(marker\|web\) .* untrusted ')" 2 "both project rows untrusted"
assert_contains "$OUT" "mine " "the user's entry is listed"
assert_not_contains "$OUT" "$TRUST_TEST_SECRET" "list shows no secret"
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.map(s => s.name + "=" + s.status + "/" + s.trust).join(" ")')" \
    "marker=untrusted/untrusted mine=ok/trusted web=untrusted/untrusted" "list --json: status and trust"
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "web").missing_variables')" "[]" \
    "an untrusted entry's variables are not looked up"

run 3 B test marker
assert_contains "$ERR" "untrusted project entry"
assert_contains "$ERR" "run mcp-bridge trust"
run 3 B test web
assert_contains "$ERR" "untrusted project entry"
run 3 B call web seen
run 3 B connect marker
# mcp-auth reads the same layers: it neither signs in to nor hands out a header for the URL of
# an untrusted entry
run 3 "$MCP_AUTH_BIN" header web
assert_contains "$ERR" "untrusted project entry"
run 3 "$MCP_AUTH_BIN" login web --no-browser --timeout 5s
assert_contains "$ERR" "run mcp-bridge trust"

agent "$PROJ" mcp_mine_echo mcp_mine_echo '{"message": "hi"}'
assert_eq "$(has_tool mcp_mine_echo)" true "the user's entry works"
assert_eq "$(json_get "$OUT" 'j.text')" "Echo: hi"
assert_eq "$(has_tool mcp_marker_echo)" false "an untrusted entry gives no tools"
assert_eq "$(has_tool mcp_web_seen)" false "an untrusted entry gives no tools"
assert_contains "$ERR" "untrusted project entry" "serve says why it skips them"
# the proxy tool's status names them and says why, for an agent asked to use one
agent "$PROJ" mcp mcp '{}'
assert_contains "$(json_get "$OUT" 'j.text')" "marker: not started ("
assert_contains "$(json_get "$OUT" 'j.text')" "untrusted project entry: not started until approved"
check_no_mark() {
    T_CHECKS=$((T_CHECKS + 1))
    [ ! -e "$T_ROOT/marker-ran" ] || fail "$1: the untrusted command ran"
}
check_no_mark "serve, test, call, connect"
assert_eq "$(hs_requests)" 0 "the untrusted URL got no request (and so no secret)"

# ---- trust: the review, without approval off a terminal ----
run 1 B trust
assert_contains "$OUT" "server 'marker' in $PROJ/.mcp.json: untrusted, never approved"
assert_contains "$OUT" "untrusted, never approved"
assert_contains "$OUT" "runs:      $T_ROOT/bin/marker-server"
assert_contains "$OUT" "env:       TOKEN=\${TRUST_TEST_SECRET}"
assert_contains "$OUT" "sends:     \${TRUST_TEST_SECRET} in the command's environment"
assert_contains "$OUT" "sends:     \${TRUST_TEST_SECRET} in header 'X-Api-Key' to $HS"
assert_not_contains "$OUT" "$TRUST_TEST_SECRET" "the review shows no secret"
assert_contains "$ERR" "nothing was approved"
assert_contains "$ERR" "mcp-bridge trust --yes"
T_CHECKS=$((T_CHECKS + 1))
[ ! -e "$PI_CODING_AGENT_DIR/mcp-trust.json" ] || fail "trust without --yes wrote approvals"
run 0 B trust --json
assert_eq "$(json_get "$OUT" 'j.entries.map(e => e.name + "=" + e.trust).join(" ")')" \
    "marker=untrusted web=untrusted" "trust --json: the entries to review"
assert_eq "$(json_get "$OUT" 'j.approved.length')" 0 "trust --json approves nothing without --yes"
assert_eq "$(json_get "$OUT" 'j.entries.find(e => e.name === "web").variables[0].name')" "TRUST_TEST_SECRET"
assert_eq "$(json_get "$OUT" 'j.entries.find(e => e.name === "web").sha256.length')" 64
check_no_mark "trust's review"

# a hostile name or value is escaped in the review and the list
printf '{"mcpServers": {"x\\u001b[2Jy": {"command": "a\\u202eb"}}}\n' >"$PROJ/.pi/mcp.json"
run 1 B trust
assert_contains "$OUT" 'x\x1b[2Jy'
assert_contains "$OUT" 'a\u{202e}b'
T_CHECKS=$((T_CHECKS + 1))
! printf '%s' "$OUT" | grep -q $'\x1b' || fail "trust printed a raw escape character"
run 0 B list
T_CHECKS=$((T_CHECKS + 1))
! printf '%s' "$OUT" | grep -q $'\x1b' || fail "list printed a raw escape character"
rm "$PROJ/.pi/mcp.json"

# ---- approved: both work, the secret goes where the approval said ----
run 0 B trust --yes
assert_contains "$OUT" "approved 2 entries"
assert_eq "$(file_mode "$PI_CODING_AGENT_DIR/mcp-trust.json")" 600 "the approvals file"
assert_eq "$(file_mode "$PI_CODING_AGENT_DIR")" 700 "the agent directory"
assert_not_contains "$(cat "$PI_CODING_AGENT_DIR/mcp-trust.json")" "$TRUST_TEST_SECRET"
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.map(s => s.name + "=" + s.trust).join(" ")')" \
    "marker=approved mine=trusted web=approved"
run 0 B trust
assert_contains "$OUT" "is approved as it is: nothing to do"
run 4 "$MCP_AUTH_BIN" header web
assert_not_contains "$ERR" "untrusted" "mcp-auth uses an approved entry"

agent "$PROJ" mcp_web_seen mcp_web_seen
assert_eq "$(has_tool mcp_web_seen)" true "an approved HTTP entry gives its tools"
assert_eq "$(json_get "$OUT" 'JSON.parse(j.text).headers["x-api-key"]')" "$SECRET_DIGEST" \
    "the approved entry's secret reached its server"
run 0 B test marker
T_CHECKS=$((T_CHECKS + 1))
[ -e "$T_ROOT/marker-ran" ] || fail "the approved command did not run"

# ---- a running bridge: revoked, then approved and reloaded (SIGHUP) ----
cat >"$T_ROOT/hup.mjs" <<EOF
import { execFileSync } from "node:child_process";
import { Client } from "$SDK/client/index.js";
import { StdioClientTransport } from "$SDK/client/stdio.js";
const [dir, want] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: process.env.MCP_BRIDGE_BIN, args: ["serve"], cwd: dir, env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "bridge-trust-hup", version: "1.0.0" }, { capabilities: {} });
const within = (p, ms, what) => Promise.race([p, new Promise((_, reject) =>
  setTimeout(() => reject(new Error("timed out waiting for " + what)), ms).unref())]);
await within(client.connect(transport), 60000, "initialize");
const names = async () => (await within(client.listTools(), 60000, "tools/list")).tools.map((t) => t.name);
const before = (await names()).includes(want);
execFileSync(process.env.MCP_BRIDGE_BIN, ["trust", "--yes", "--project", dir], { stdio: "ignore" });
process.kill(transport.pid, "SIGHUP");
let after = false;
for (const end = Date.now() + 60000; !after && Date.now() < end;) {
  after = (await names()).includes(want);
  if (!after) await new Promise((r) => setTimeout(r, 100));
}
const r = after ? await within(client.callTool({ name: want, arguments: {} }), 60000, want) : null;
await client.close();
console.log(JSON.stringify({ before, after, text: r?.content?.[0]?.text ?? null }));
EOF
run 0 B trust --revoke
run 0 node "$T_ROOT/hup.mjs" "$PROJ" mcp_web_seen
assert_eq "$(json_get "$OUT" 'j.before')" false "a revoked entry is not served"
assert_eq "$(json_get "$OUT" 'j.after')" true "approved and reloaded (SIGHUP): served without a restart"
assert_eq "$(json_get "$OUT" 'JSON.parse(j.text).headers["x-api-key"]')" "$SECRET_DIGEST"
assert_contains "$ERR" "configuration reloaded: changed 'marker', 'web'" "the reload names the approved entries"
rm -f "$T_ROOT/marker-ran"

# ---- changed, renamed, elsewhere: untrusted again ----
rm -f "$T_ROOT/marker-ran"
sed -i 's|"TOKEN": |"TOKEN2": |' "$PROJ/.mcp.json"
run 0 B list
assert_contains "$OUT" "untrusted: changed since it was approved (run: mcp-bridge trust)"
run 3 B test marker
assert_contains "$ERR" "changed since it was approved"
check_no_mark "a changed entry"
run 1 B trust
assert_contains "$OUT" "changed since it was approved"
assert_not_contains "$OUT" "server 'web'" "only the changed entry is to review"

before=$(hs_requests)
sed -i 's|"web": |"web2": |' "$PROJ/.mcp.json"
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "web2").trust')" "untrusted" \
    "an approval names its server: a renamed entry is not approved"
run 3 B test web2
assert_eq "$(hs_requests)" "$before" "the renamed entry sent nothing"
mkdir -p "$T_ROOT/other"
cp "$PROJ/.mcp.json" "$T_ROOT/other/.mcp.json"
sed -i 's|"web2": |"web": |' "$T_ROOT/other/.mcp.json"
cd "$T_ROOT/other"
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "web").trust')" "untrusted" \
    "an approval names its file: the same entry in another project is not approved"
cd "$PROJ"

# ---- --revoke ----
run 0 B trust --yes --project "$PROJ"
run 0 B trust --revoke --json
# marker (as changed), web2, and web's approval of before the rename
assert_eq "$(json_get "$OUT" 'j.revoked')" 3 "the project's approvals are removed"
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.map(s => s.name + "=" + s.trust).join(" ")')" \
    "marker=untrusted mine=trusted web2=untrusted"
run 3 B test marker
check_no_mark "after --revoke"
run 2 B trust --revoke --yes

# ---- --config is trusted ----
cp "$PROJ/.mcp.json" "$T_ROOT/given.json"
cd "$T_ROOT"
run 0 B --config "$T_ROOT/given.json" test marker
T_CHECKS=$((T_CHECKS + 1))
[ -e "$T_ROOT/marker-ran" ] || fail "an entry of --config did not run"
cd "$PROJ"
run 0 B --config "$T_ROOT/given.json" list --json
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "marker").trust')" "untrusted" \
    "the project's entry of the same name still wins, untrusted"

# ---- a broken approvals file: nothing of the project is used ----
rm -f "$T_ROOT/marker-ran"
echo '{' >"$PI_CODING_AGENT_DIR/mcp-trust.json"
chmod 600 "$PI_CODING_AGENT_DIR/mcp-trust.json"
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "marker").trust')" "untrusted"
run 3 B test marker
assert_contains "$ERR" "no project entry is used until this is fixed"
check_no_mark "with a broken approvals file"
