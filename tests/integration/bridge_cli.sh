# mcp-bridge's command line: help and version, usage errors (2), unknown or invalid servers (3),
# `test` and `call` against @modelcontextprotocol/server-everything over stdio and over
# Streamable HTTP, the answers `call` gives the server's own requests (elicitation with the
# schema's defaults, roots), the configuration layers every command reads, and serve/connect
# driven by the TypeScript SDK's Client over stdio (listing, calling, SIGHUP reload, end of
# stdin, SIGTERM). The agent-facing behaviour in depth is tests/integration/bridge_*.sh's.
. "$(dirname "$0")/lib/netns.sh" # server-everything over HTTP binds every interface
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
B() { "$MCP_BRIDGE_BIN" "$@"; }
EVERYTHING="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
SDK="$PEERS_DIR/node_modules/@modelcontextprotocol/sdk/dist/esm"
[ -f "$EVERYTHING" ] || fail "server-everything is missing: run scripts/install-deps"
# no bundled layer but the one a test sets
export CREDKIT_BRIDGE_BUNDLED=""

# each server child carries this marker, to tell ours from anyone else's
MARK="bridge-cli-$$"
CFG="$T_ROOT/mcp.json"
cat >"$CFG" <<EOF
{"mcpServers": {
  "ev": {"command": "node", "args": ["$EVERYTHING", "stdio", "$MARK"]},
  "blank": {"command": "  "},
  "missing": {"command": "$T_ROOT/no-such-server"},
  "needsvar": {"url": "https://\${BRIDGE_CLI_UNSET_HOST}/mcp"}
}}
EOF
C() { B --config "$CFG" "$@"; }

# ---- help, version ----
run 0 B --help
assert_contains "$OUT" "usage: mcp-bridge"
assert_contains "$OUT" "exit status:"
run 0 B help
assert_contains "$OUT" "commands:"
run 0 B -V
assert_contains "$OUT" "mcp-bridge ("
run 0 B --version
assert_contains "$OUT" "mcp-bridge ("
for cmd in serve connect test call; do
    run 0 B "$cmd" --help
    assert_contains "$OUT" "usage: mcp-bridge" "$cmd --help"
    assert_contains "$OUT" "example" "$cmd --help"
done
for cmd in test call; do
    run 0 B "$cmd" --help
    assert_contains "$OUT" "6 the server needs a sign-in" "$cmd --help: the exit status of a sign-in"
done
run 0 B --help
assert_contains "$OUT" "6 the server needs a sign-in" "--help: the exit status of a sign-in"
assert_contains "$OUT" "CREDKIT_SECRETS and CREDKIT_MCP_AUTH"
run 0 B call --help
assert_contains "$OUT" "elicitation/create is accepted with the default"
assert_contains "$OUT" "roots/list gets an empty list"
run 0 B --help -v # help wins wherever it is
assert_contains "$OUT" "usage: mcp-bridge"
# "help COMMAND" is the command's own help
for cmd in serve connect list add remove test call; do
    run 0 B help "$cmd"
    assert_contains "$OUT" "usage: mcp-bridge" "help $cmd"
    assert_contains "$OUT" "$cmd" "help $cmd"
done
run 0 B help list
assert_contains "$OUT" "usage: mcp-bridge list"
run 0 B help
assert_contains "$OUT" "usage: mcp-bridge [OPTIONS]"
run 2 B help frobnicate
assert_contains "$ERR" "unknown command 'frobnicate'"

# ---- usage errors: 2 ----
run 2 B frobnicate
assert_contains "$ERR" "unknown command 'frobnicate'"
run 2 B test
assert_contains "$ERR" "test takes exactly one SERVER"
run 2 B test a b
run 2 B test ev --bogus
run 2 B call
assert_contains "$ERR" "call takes SERVER TOOL"
run 2 B call ev
run 2 B call ev echo '{}' extra
run 2 C call ev echo '{"message": '
assert_contains "$ERR" "JSON-ARGS is not JSON"
run 2 C call ev echo '[1, 2]'
assert_contains "$ERR" "JSON-ARGS must be a JSON object"
assert_contains "$ERR" "not an array"
run_in 2 '"just a string"' C call ev echo -
assert_contains "$ERR" "JSON-ARGS must be a JSON object"
run 2 C call ev echo '{}' --timeout 0
assert_contains "$ERR" "--timeout: '0' is not a positive duration"
run 2 C call ev echo --timeout soon
run 2 B serve extra
assert_contains "$ERR" "serve takes no argument"
run 2 B --connect-timeout never
assert_contains "$ERR" "--connect-timeout: 'never'"
run 2 B connect
run 2 B connect https://a.example/mcp --header "no colon here"
assert_contains "$ERR" "'Name: value'"
assert_not_contains "$ERR" "no colon here" "a header given on the command line"

# ---- configuration errors: 3 ----
run 3 C test nosuch
assert_contains "$ERR" "no server named 'nosuch'"
assert_contains "$ERR" "mcp.json"
assert_contains "$ERR" "configured: blank, ev, missing, needsvar"
run 3 C call nosuch echo
run 3 C test blank
assert_contains "$ERR" "server 'blank'"
# a ${NAME} in the environment nowhere leaves the entry valid: secrets is asked at connect, and
# the connect fails (1) with its reason, which says how to set it up
run 1 C test needsvar
assert_contains "$ERR" "'BRIDGE_CLI_UNSET_HOST' has no recipe"
assert_contains "$ERR" "run 'secrets configure BRIDGE_CLI_UNSET_HOST'"
run 3 B --config "$T_ROOT/absent.json" test ev
assert_contains "$ERR" "does not exist"
# a SERVER that is no http(s) URL is an invalid argument (2), as for mcp-auth
run 2 B test ftp://files.example/mcp
assert_contains "$ERR" "'command line': server 'files.example'"
run 3 B connect ev --header "X-A: b"
assert_contains "$ERR" "--header goes with a URL"

# ---- test over stdio ----
run 0 C test ev
assert_contains "$OUT" "'ev': connected over stdio"
assert_contains "$OUT" "tools:"
assert_contains "$OUT" "  echo"
assert_contains "$OUT" "  get-sum"
run 0 C test ev --json
assert_eq "$(json_get "$OUT" 'j.version')" "1"
assert_eq "$(json_get "$OUT" 'j.name')" "ev"
assert_eq "$(json_get "$OUT" 'j.transport')" "stdio"
assert_eq "$(json_get "$OUT" 'typeof j.protocol_version')" "string"
assert_eq "$(json_get "$OUT" 'typeof j.server_info.name')" "string"
assert_eq "$(json_get "$OUT" 'j.tools.includes("echo") && j.tools.includes("get-sum")')" "true"
# the tools a client gets only when it declares elicitation and roots
assert_eq "$(json_get "$OUT" 'j.tools.includes("trigger-elicitation-request")')" "true"
assert_eq "$(json_get "$OUT" 'j.tools.includes("get-roots-list")')" "true"
# ... and sampling, which it does not declare
assert_eq "$(json_get "$OUT" 'j.tools.includes("trigger-sampling-request")')" "false"
# global options after the command
run 0 B test ev --json --config "$CFG" -q
assert_eq "$(json_get "$OUT" 'j.name')" "ev"
run 1 C test missing
assert_contains "$ERR" "no-such-server"

# ---- call over stdio ----
run 0 C call ev echo '{"message": "hello, bridge"}'
assert_eq "$OUT" "Echo: hello, bridge"
run 0 C call ev get-sum '{"a": 2, "b": 3}' --json
assert_eq "$(printf '%s\n' "$OUT" | wc -l)" "1" "--json prints one line"
assert_eq "$(json_get "$OUT" 'j.version')" "1"
assert_eq "$(json_get "$OUT" 'j.result.content[0].text')" "The sum of 2 and 3 is 5."
assert_eq "$(json_get "$OUT" '"error" in j')" "false" "no error object when the tool succeeds"
run_in 0 '{"message": "from stdin"}' C call ev echo -
assert_eq "$OUT" "Echo: from stdin"
run 0 C call ev get-tiny-image
assert_contains "$OUT" "[image image/png, "
assert_contains "$OUT" " bytes]"
run 0 C call ev get-resource-links '{"count": 2}'
assert_contains "$OUT" "[resource link "
run 0 C call ev get-resource-reference '{"resourceType": "Text", "resourceId": 1}'
assert_contains "$OUT" "[resource "
assert_contains "$OUT" "bytes of text]"
run 0 C call ev get-structured-content '{"location": "New York"}' --json
assert_eq "$(json_get "$OUT" 'typeof j.result.structuredContent')" "object"
# elicitation: accepted with each field's default (the schema's required "name" has none)
run 0 C call ev trigger-elicitation-request
assert_contains "$OUT" "Favorite Integer: 42"
assert_contains "$OUT" "Favorite Number: 3.14"
assert_not_contains "$OUT" "declined"
# roots: an empty list
run 0 C call ev get-roots-list --json
assert_eq "$(json_get "$OUT" 'j.result.isError === true')" "false"
# the tool says it failed: 4, its content on stderr
run 4 C call ev get-sum '{"a": "two", "b": 3}'
assert_contains "$ERR" "tool 'get-sum' reported an error"
assert_eq "$OUT" ""
run 4 C call ev get-sum '{"a": "two"}' --json
assert_eq "$(json_get "$OUT" 'j.result.isError')" "true"
assert_eq "$(json_get "$OUT" 'j.error.code')" "tool_error"
# a tool the server does not have: not found (3, as a server name), never 0 nor the tool's own
# error (4)
rc=0
C call ev no-such-tool >"$T_ROOT/out" 2>"$T_ROOT/err" </dev/null || rc=$?
T_CHECKS=$((T_CHECKS + 1))
[ "$rc" = 3 ] || fail "call of an unknown tool exited $rc: $(cat "$T_ROOT/err")"
assert_contains "$(cat "$T_ROOT/err")" "no-such-tool"
run 1 C call missing echo
assert_contains "$ERR" "no-such-server"
# no answer in time: 1 (progress every second re-arms the timeout, the first comes too late)
run 1 C call ev trigger-long-running-operation '{"duration": 5, "steps": 5}' --timeout 300ms
# the server's stdio child is gone after each command
T_CHECKS=$((T_CHECKS + 1))
! pgrep -f "$MARK" >/dev/null || fail "a server child outlived its command"

# ---- credentials: the real secrets and mcp-auth, asked at each start or connect ----
export CREDKIT_SECRETS="$SECRETS_BIN" CREDKIT_MCP_AUTH="${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
CLI_CANARY="canary-cli-$$-4e7a"
mkdir -p "$PI_CODING_AGENT_DIR"
chmod 700 "$PI_CODING_AGENT_DIR"
printf '{"CLI_RECIPE_TOKEN": "!echo %s"}\n' "$CLI_CANARY" >"$PI_CODING_AGENT_DIR/secrets.json"
chmod 600 "$PI_CODING_AGENT_DIR/secrets.json"
cat >"$T_ROOT/creds.json" <<EOF
{"mcpServers": {
  "withsecret": {"command": "node", "args": ["$EVERYTHING", "stdio", "$MARK"],
                 "env": {"CLI_SEEN": "\${CLI_RECIPE_TOKEN}"}},
  "nosecret": {"command": "node", "args": ["$EVERYTHING", "stdio", "$MARK"],
               "env": {"CLI_SEEN": "\${CLI_NO_SUCH_TOKEN}"}},
  "oauthsrv": {"url": "http://127.0.0.1:9/mcp", "auth": "oauth"}
}}
EOF
# the recipe's value reaches the server that asked for it (its environment), and nothing else
run 0 B --config "$T_ROOT/creds.json" -vv call withsecret get-env
assert_contains "$OUT" "$CLI_CANARY" "the server's environment"
assert_not_contains "$ERR" "$CLI_CANARY" "the bridge's log"
run 0 B --config "$T_ROOT/creds.json" list
assert_not_contains "$OUT$ERR" "$CLI_CANARY" "list"
# a name that resolves nowhere: the server fails (1) with secrets' reason, what to run
run 1 B --config "$T_ROOT/creds.json" test nosecret
assert_contains "$ERR" "'CLI_NO_SUCH_TOKEN' has no recipe"
assert_contains "$ERR" "secrets configure CLI_NO_SUCH_TOKEN"
# secrets not installed: a message naming what to install or set
CREDKIT_SECRETS="$T_ROOT/no-secrets" run 1 B --config "$T_ROOT/creds.json" test withsecret
assert_contains "$ERR" "CREDKIT_SECRETS names '$T_ROOT/no-secrets'"
# login required, nothing stored in mcp-auth: exit 6, the command to run on stderr, nothing on
# stdout (no server is contacted: the sign-in is missing before that)
run 6 B --config "$T_ROOT/creds.json" test oauthsrv
assert_contains "$ERR" "server 'oauthsrv'"
assert_contains "$ERR" "run 'mcp-auth --config \"$T_ROOT/creds.json\" oauthsrv'"
assert_eq "$OUT" "" "test's stdout when a sign-in is needed"
run 6 B --config "$T_ROOT/creds.json" call oauthsrv anything '{}'
assert_contains "$ERR" "run 'mcp-auth --config \"$T_ROOT/creds.json\" oauthsrv'"
assert_eq "$OUT" "" "call's stdout when a sign-in is needed"
run 6 B --config "$T_ROOT/creds.json" call oauthsrv anything --json
assert_eq "$(json_get "$OUT" 'j.error.code')" "login_required" "call --json's stdout when a sign-in is needed"
assert_contains "$(json_get "$OUT" 'j.error.message')" "run 'mcp-auth --config \"$T_ROOT/creds.json\" oauthsrv'"
rm -f "$PI_CODING_AGENT_DIR/secrets.json"
T_CHECKS=$((T_CHECKS + 1))
! pgrep -f "$MARK" >/dev/null || fail "a server child outlived its command"

# the values of an entry's env and headers are secrets: never in a message, not even when the
# server itself prints them on its stderr (logged with -v)
export BRIDGE_CLI_LEAK="l3aky-s3cret-from-env"
cat >"$T_ROOT/leaky.json" <<'EOF2'
{"mcpServers": {
  "leaky": {"command": "sh", "args": ["-c", "echo \"t=$LEAK_A u=$LEAK_B\" >&2; sleep 0.3"],
            "env": {"LEAK_A": "${BRIDGE_CLI_LEAK}", "LEAK_B": "literal-s3cret-in-file"}}
}}
EOF2
run 1 B --config "$T_ROOT/leaky.json" test leaky -v
assert_contains "$ERR" "t=[REDACTED"
assert_not_contains "$ERR" "$BRIDGE_CLI_LEAK" "the log of test"
assert_not_contains "$ERR" "literal-s3cret-in-file" "the log of test"
run 1 B --config "$T_ROOT/leaky.json" call leaky echo -vv
assert_not_contains "$ERR" "$BRIDGE_CLI_LEAK" "the log of call"
assert_not_contains "$ERR" "literal-s3cret-in-file" "the log of call"

# ---- the configuration layers ----
mkdir -p "$T_ROOT/proj/.pi"
printf '{"mcpServers": {"proj-ev": {"command": "node", "args": ["%s", "stdio"]}}}\n' \
    "$EVERYTHING" >"$T_ROOT/proj/.mcp.json"
printf '{"mcpServers": {"bundled-ev": {"command": "node", "args": ["%s", "stdio"]}}}\n' \
    "$EVERYTHING" >"$T_ROOT/bundled.json"
run 0 bash -c 'cd "$1/proj" && CREDKIT_BRIDGE_BUNDLED="$1/bundled.json" "$2" test bundled-ev --json' \
    _ "$T_ROOT" "$MCP_BRIDGE_BIN"
assert_eq "$(json_get "$OUT" 'j.name')" "bundled-ev"
# a project's entry is used once approved (bridge_trust.sh tests the approvals)
run 3 bash -c 'cd "$1/proj" && "$2" call proj-ev echo "{\"message\": \"project\"}"' \
    _ "$T_ROOT" "$MCP_BRIDGE_BIN"
assert_contains "$ERR" "untrusted project entry" "a project's entry before its approval"
run 0 B trust --yes --project "$T_ROOT/proj"
run 0 bash -c 'cd "$1/proj" && "$2" call proj-ev echo "{\"message\": \"project\"}"' \
    _ "$T_ROOT" "$MCP_BRIDGE_BIN"
assert_eq "$OUT" "Echo: project"
echo '{"mcpServers": ' >"$T_ROOT/proj/.pi/mcp.json" # broken: a warning, the rest works
run 0 bash -c 'cd "$1/proj" && "$2" test proj-ev' _ "$T_ROOT" "$MCP_BRIDGE_BIN"
assert_contains "$ERR" "warning: "
assert_contains "$ERR" ".pi/mcp.json"
rm "$T_ROOT/proj/.pi/mcp.json"

# ---- Streamable HTTP ----
PORT=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
PORT=$PORT node "$EVERYTHING" streamableHttp >"$T_ROOT/http.out" 2>"$T_ROOT/http.log" </dev/null &
T_PEER_PIDS+=("$!")
listening() { grep -q "listening on port $PORT" "$T_ROOT/http.log" 2>/dev/null; }
wait_until 30 "server-everything to listen over HTTP" listening
URL="http://127.0.0.1:$PORT/mcp"
run 0 B call "$URL" echo '{"message": "over http"}'
assert_eq "$OUT" "Echo: over http"
run 0 B call "$URL" get-sum '{"a": 40, "b": 2}' --json
assert_eq "$(json_get "$OUT" 'j.result.content[0].text')" "The sum of 40 and 2 is 42."
run 0 B test "$URL" --json
assert_eq "$(json_get "$OUT" 'j.name')" "127.0.0.1"
assert_eq "$(json_get "$OUT" 'j.transport')" "http"
assert_eq "$(json_get "$OUT" 'j.tools.includes("echo")')" "true"
run 0 B call "$URL" trigger-elicitation-request
assert_contains "$OUT" "Favorite Integer: 42"
run 4 B call "$URL" get-sum '{"a": "two", "b": 3}'
# a server that cannot be reached: said once, clearly, at once (not after the connect timeout)
start=$(date +%s)
run 1 B call "http://127.0.0.1:1/mcp" echo '{}' --connect-timeout 20s
assert_eq "$(printf '%s\n' "$ERR" | grep -c 'connection refused')" "1" "the reason, once: $ERR"
assert_not_contains "$ERR" "warning:" "the failure is the command's error, not a warning"
assert_eq "$(($(date +%s) - start < 10))" "1" "call of an unreachable server returns at once"
run 1 B test "http://127.0.0.1:1/mcp" -q
assert_contains "$ERR" "connection refused" "-q still says why"

# ---- serve and connect, with the SDK's Client as the agent ----
cat >"$T_ROOT/agent.mjs" <<EOF
// agent.mjs MODE BIN ARGS_JSON [NEW_CONFIG CONFIG [HOW]]: the SDK Client over stdio, through the
// bridge; NEW_CONFIG is put in CONFIG's place, then SIGHUP (HOW "hup", the default), or
// `mcp-bridge reload` (HOW "reload"), or nothing else (HOW "watch": written beside and renamed
// over it, as editors and atomic writers do)
import { Client } from "$SDK/client/index.js";
import { StdioClientTransport } from "$SDK/client/stdio.js";
import { ToolListChangedNotificationSchema } from "$SDK/types.js";
import { copyFileSync, renameSync } from "node:fs";
import { execFileSync } from "node:child_process";
const [mode, bin, argsJson, newConfig, config, how] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: bin, args: JSON.parse(argsJson), env: process.env, stderr: "inherit",
});
const client = new Client({ name: "bridge-cli-test", version: "1.0.0" }, { capabilities: {} });
let changed;
const listChanged = new Promise((resolve) => (changed = resolve));
client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
const within = (p, ms, what) => Promise.race([p, new Promise((_, reject) =>
  setTimeout(() => reject(new Error("timed out waiting for " + what)), ms).unref())]);
await within(client.connect(transport), 30000, "initialize");
const out = { serverInfo: client.getServerVersion() };
out.tools = (await within(client.listTools(), 30000, "tools/list")).tools.map((t) => t.name);
const echo = mode === "serve" ? "mcp_ev_echo" : "echo";
const r = await within(client.callTool({ name: echo, arguments: { message: "via " + mode } }), 30000, "tools/call");
out.echo = r.content[0].text;
if (newConfig && how === "reload") {
  copyFileSync(newConfig, config);
  out.reload = execFileSync(bin, ["reload"], { env: process.env, encoding: "utf8" });
  await within(listChanged, 30000, "tools/list_changed after mcp-bridge reload");
  out.after = (await within(client.listTools(), 30000, "tools/list")).tools.map((t) => t.name);
} else if (newConfig && how === "watch") {
  copyFileSync(newConfig, config + ".new");
  renameSync(config + ".new", config);
  await within(listChanged, 30000, "tools/list_changed after the file changed");
  out.after = (await within(client.listTools(), 30000, "tools/list")).tools.map((t) => t.name);
} else if (newConfig) {
  copyFileSync(newConfig, config);
  process.kill(transport.pid, "SIGHUP");
  await within(listChanged, 30000, "tools/list_changed after SIGHUP");
  out.after = (await within(client.listTools(), 30000, "tools/list")).tools.map((t) => t.name);
}
await client.close();
console.log(JSON.stringify(out));
EOF
SERVE_CFG="$T_ROOT/serve.json"
printf '{"settings": {"settleTimeout": 15000}, "mcpServers": {"ev": {"command": "node", "args": ["%s", "stdio", "%s"]}, "blank": {"command": ""}}}\n' \
    "$EVERYTHING" "$MARK" >"$SERVE_CFG"
printf '{"settings": {"settleTimeout": 15000}, "mcpServers": {"ev": {"command": "node", "args": ["%s", "stdio", "%s"]}, "ev2": {"command": "node", "args": ["%s", "stdio", "%s"]}}}\n' \
    "$EVERYTHING" "$MARK" "$EVERYTHING" "$MARK" >"$T_ROOT/serve2.json"
cp "$SERVE_CFG" "$T_ROOT/serve1.json"
run 0 node "$T_ROOT/agent.mjs" serve "$MCP_BRIDGE_BIN" \
    "[\"--config\", \"$SERVE_CFG\", \"-v\", \"--no-watch\"]" "$T_ROOT/serve2.json" "$SERVE_CFG"
assert_eq "$(json_get "$OUT" 'j.serverInfo.name')" "mcp-bridge"
assert_eq "$(json_get "$OUT" 'j.tools.includes("mcp_ev_echo") && j.tools.includes("mcp_ev_get-sum")')" "true"
assert_eq "$(json_get "$OUT" 'j.tools.some((t) => t.startsWith("mcp_ev2_"))')" "false"
assert_eq "$(json_get "$OUT" 'j.echo')" "Echo: via serve"
assert_eq "$(json_get "$OUT" 'j.after.includes("mcp_ev2_echo")')" "true" "after SIGHUP"
assert_contains "$ERR" "server 'blank'" "the invalid entry is reported"
assert_contains "$ERR" "configuration reloaded: added 'ev2'; removed 'blank'"
assert_not_contains "$ERR" "a configuration file changed" "--no-watch: only SIGHUP reloads"
# --no-watch: `mcp-bridge reload` asks it, no signal sent by anyone but the bridge itself
cp "$T_ROOT/serve1.json" "$SERVE_CFG"
run 0 node "$T_ROOT/agent.mjs" serve "$MCP_BRIDGE_BIN" \
    "[\"--config\", \"$SERVE_CFG\", \"-v\", \"--no-watch\"]" "$T_ROOT/serve2.json" "$SERVE_CFG" reload
assert_eq "$(json_get "$OUT" 'j.after.includes("mcp_ev2_echo")')" "true" "after mcp-bridge reload"
assert_eq "$(json_get "$OUT" '/^asked [0-9]+ running bridges? to reload \(pid [0-9, ]+\)\n$/.test(j.reload)')" \
    "true" "what reload says: $(json_get "$OUT" 'j.reload')"
assert_contains "$ERR" "configuration reloaded: added 'ev2'; removed 'blank'"
# no signal: the file replaced as an editor does is applied by itself
cp "$T_ROOT/serve1.json" "$SERVE_CFG"
run 0 node "$T_ROOT/agent.mjs" serve "$MCP_BRIDGE_BIN" "[\"--config\", \"$SERVE_CFG\", \"-vv\"]" \
    "$T_ROOT/serve2.json" "$SERVE_CFG" watch
assert_eq "$(json_get "$OUT" 'j.tools.some((t) => t.startsWith("mcp_ev2_"))')" "false"
assert_eq "$(json_get "$OUT" 'j.after.includes("mcp_ev2_echo")')" "true" "after the change"
assert_contains "$ERR" "a configuration file changed: reloading"
assert_contains "$ERR" "configuration reloaded: added 'ev2'; removed 'blank'"
assert_not_contains "$ERR" "SIGHUP" "no signal was sent"

# single mode on the HTTP server, a header templated from the environment (never printed)
export BRIDGE_CLI_TOKEN="s3cr3t-t0ken-value"
run 0 node "$T_ROOT/agent.mjs" connect "$MCP_BRIDGE_BIN" \
    "[\"connect\", \"$URL\", \"--header\", \"X-Test-Token: \${BRIDGE_CLI_TOKEN}\", \"-vv\"]"
assert_eq "$(json_get "$OUT" 'j.tools.includes("echo")')" "true" "names unchanged in single mode"
assert_eq "$(json_get "$OUT" 'j.serverInfo.name === "mcp-bridge"')" "false" "the server's own serverInfo"
assert_eq "$(json_get "$OUT" 'j.echo')" "Echo: via connect"
assert_not_contains "$ERR" "$BRIDGE_CLI_TOKEN" "the bridge's log"
run 0 node "$T_ROOT/agent.mjs" connect "$MCP_BRIDGE_BIN" "[\"--config\", \"$CFG\", \"connect\", \"ev\"]"
assert_eq "$(json_get "$OUT" 'j.echo')" "Echo: via connect"

# end of stdin: initialize is answered, then a clean exit 0
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
run_in 0 "$INIT
" timeout 30 "$MCP_BRIDGE_BIN" --config "$SERVE_CFG"
assert_contains "$OUT" '"id":1'
assert_contains "$OUT" '"name":"mcp-bridge"'
# SIGTERM: a clean exit 0, the children reaped, and stdin's flags given back (the open file
# is shared with this shell, as an agent's or a terminal's would be)
mkfifo "$T_ROOT/in"
exec 7<>"$T_ROOT/in"
nonblocking() { [ $((0$(awk '/^flags:/ { print $2 }' /proc/$$/fdinfo/7) & 04000)) -ne 0 ]; }
"$MCP_BRIDGE_BIN" --config "$SERVE_CFG" <&7 >"$T_ROOT/serve.out" 2>"$T_ROOT/serve.err" &
bridge=$!
printf '%s\n' "$INIT" >&7
answered() { grep -q '"id":1' "$T_ROOT/serve.out"; }
wait_until 30 "the bridge to answer initialize" answered
T_CHECKS=$((T_CHECKS + 1))
nonblocking || fail "the bridge does not make stdin non-blocking (the check cannot see it)"
kill -TERM "$bridge"
exited() { ! kill -0 "$bridge" 2>/dev/null || [ "$(ps -o stat= -p "$bridge" | cut -c1)" = Z ]; }
wait_until 20 "the bridge to exit on SIGTERM" exited
rc=0
wait "$bridge" || rc=$?
assert_eq "$rc" "0" "exit status after SIGTERM"
T_CHECKS=$((T_CHECKS + 1))
! nonblocking || fail "stdin was left non-blocking"
exec 7>&-
T_CHECKS=$((T_CHECKS + 1))
! pgrep -f "$MARK" >/dev/null || fail "a server child outlived the bridge"
