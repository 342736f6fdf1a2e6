# The pi MCP adapter's example configurations (its docs/mcp.md: the configuration structure, the
# stdio and HTTP transports, OAuth, bearer tokens, direct tools, imports, lifecycle), as written
# there, loaded through `mcp-bridge serve --mcp-config FILE` with the SDK's Client as the agent:
# each lists the tools and calls one. Local stand-ins: every `npx` package is server-everything
# (an `npx` on PATH that runs it), every URL is bridge-server.mjs over Streamable HTTP. The keys
# the adapter accepts and other clients write ("idleTimeout": 0, "auth": false, "oauth": false,
# "bearerToken" with "auth": "bearer", "disabled": true, "lifecycle", "debug": true) make no entry
# invalid. And servers that fail say so: `mcp-bridge test` quotes a failing server's stderr, a
# crash-looping server is reported once at the default level with its stderr (escaped), and a
# server that works again says so.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

B() { "$MCP_BRIDGE_BIN" "$@"; }
EVERYTHING="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
SDK="$PEERS_DIR/node_modules/@modelcontextprotocol/sdk/dist/esm"
[ -f "$EVERYTHING" ] || fail "server-everything is missing: run scripts/install-deps"
export CREDKIT_SECRETS="$SECRETS_BIN" CREDKIT_MCP_AUTH="$MCP_AUTH_BIN"

# `npx PACKAGE ...` of the examples: server-everything, whatever the package (its command line
# names T_ROOT, as every process of the test must)
mkdir -p "$T_ROOT/bin" "$T_ROOT/work"
cat >"$T_ROOT/bin/npx" <<EOF
#!/bin/sh
exec node "$EVERYTHING" stdio "$T_ROOT/npx"
EOF
cp "$T_ROOT/bin/npx" "$T_ROOT/my-mcp-server"
chmod +x "$T_ROOT/bin/npx" "$T_ROOT/my-mcp-server"
export PATH="$T_ROOT/bin:$PATH"

start_peer bridge-server --transport http --name remote --tag "$T_ROOT"
HTTP_URL=$PEER_URL

# agent.mjs CONFIG TOOL ARGS_JSON [BRIDGE_OPTION...]: the SDK's Client on `mcp-bridge serve
# --mcp-config CONFIG`: lists the tools until TOOL is among them (servers connect in the
# background and are announced), calls it, prints {tools, text}. The bridge's stderr is ours.
cat >"$T_ROOT/agent.mjs" <<EOF
import { Client } from "$SDK/client/index.js";
import { StdioClientTransport } from "$SDK/client/stdio.js";
const [config, tool, argsJson, ...opts] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: process.env.MCP_BRIDGE_BIN, args: [...opts, "serve", "--mcp-config", config],
  env: process.env, stderr: "inherit",
});
const client = new Client({ name: "bridge-compat-test", version: "1.0.0" }, { capabilities: {} });
const within = (p, ms, what) => Promise.race([p, new Promise((_, reject) =>
  setTimeout(() => reject(new Error("timed out waiting for " + what)), ms).unref())]);
await within(client.connect(transport), 30000, "initialize");
let tools = [];
const end = Date.now() + 30000;
for (;;) {
  tools = (await within(client.listTools(), 30000, "tools/list")).tools.map((t) => t.name);
  if (tools.includes(tool) || Date.now() > end) break;
  await new Promise((r) => setTimeout(r, 100));
}
const r = await within(client.callTool({ name: tool, arguments: JSON.parse(argsJson) }), 30000,
  "tools/call " + tool);
await client.close();
console.log(JSON.stringify({ tools, text: r.content?.[0]?.text ?? null, isError: !!r.isError }));
EOF
# agent CONFIG TOOL ARGS_JSON [BRIDGE_OPTION...]: runs it; $OUT its answer, $ERR the bridge's log
agent() { run 0 node "$T_ROOT/agent.mjs" "$@"; }
has_tool() { json_get "$OUT" "j.tools.includes(\"$1\")"; }
# status NAME: the entry's status in `list --json` of the config in $LIST
status_of() { json_get "$LIST" "(j.servers.find((s) => s.name === \"$1\") || {status: 'absent'}).status"; }
list_of() {
    run 0 B list --json --mcp-config "$1"
    LIST=$OUT
}

# ---- --mcp-config: --config's other name, wherever --config goes; the last one given wins -------
run 0 B --help
assert_contains "$OUT" "--mcp-config PATH"
printf '{"mcpServers": {"one": {"command": "x"}}}\n' >"$T_ROOT/one.json"
printf '{"mcpServers": {"two": {"command": "x"}}}\n' >"$T_ROOT/two.json"
names() { json_get "$OUT" 'j.servers.map((s) => s.name).join(",")'; }
run 0 B --mcp-config "$T_ROOT/one.json" list --json
assert_eq "$(names)" "one"
run 0 B list --json --mcp-config="$T_ROOT/two.json"
assert_eq "$(names)" "two"
run 0 B --config "$T_ROOT/one.json" list --json --mcp-config "$T_ROOT/two.json"
assert_eq "$(names)" "two" "--config then --mcp-config"
run 0 B --mcp-config "$T_ROOT/two.json" list --json --config "$T_ROOT/one.json"
assert_eq "$(names)" "one" "--mcp-config then --config"
run 3 B list --mcp-config "$T_ROOT/none.json"
assert_contains "$ERR" "$T_ROOT/none.json"

# ---- the configuration structure ("配置结构"): server, imports, settings -------------------------
cat >"$T_ROOT/structure.json" <<'EOF'
{
  "mcpServers": {
    "server-name": {
      "command": "npx",
      "args": ["-y", "@example/mcp-server"],
      "env": { "API_KEY": "xxx" }
    }
  },
  "imports": ["cursor", "claude-code"],
  "settings": {
    "toolPrefix": "server",
    "idleTimeout": 10,
    "directTools": false,
    "autoAuth": true
  }
}
EOF
list_of "$T_ROOT/structure.json"
assert_eq "$(status_of server-name)" "ok" "structure: server-name"
assert_eq "$(json_get "$LIST" 'j.diagnostics.length')" "0" "structure: no problem with the file"
# toolPrefix "server": <server>_<tool>; a tool that is not listed directly is still callable
agent "$T_ROOT/structure.json" server-name_echo '{"message": "structure"}'
assert_eq "$(json_get "$OUT" 'j.text')" "Echo: structure"
# settings.directTools false = the proxy tool alone
assert_eq "$(has_tool mcp)" "true" "structure: the proxy tool"
assert_eq "$(has_tool server-name_echo)" "false" "structure: directTools false lists no tool directly"

# ---- stdio transport ("stdio 传输"), cwd made local ---------------------------------------------
cat >"$T_ROOT/stdio.json" <<EOF
{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/path/to/dir"],
      "env": { "NODE_OPTIONS": "--max-old-space-size=4096" },
      "cwd": "$T_ROOT/work",
      "lifecycle": "lazy",
      "idleTimeout": 15,
      "debug": false
    }
  }
}
EOF
list_of "$T_ROOT/stdio.json"
assert_eq "$(status_of filesystem)" "ok" "stdio: filesystem"
assert_eq "$(json_get "$LIST" 'j.servers[0].lifecycle')" "lazy"
agent "$T_ROOT/stdio.json" mcp_filesystem_get-sum '{"a": 40, "b": 2}'
assert_eq "$(json_get "$OUT" 'j.text')" "The sum of 40 and 2 is 42."
# idleTimeout in minutes
assert_eq "$(json_get "$LIST" 'j.servers[0].idle_timeout_ms')" "900000" "stdio: 15 minutes"
run 0 B list --mcp-config "$T_ROOT/stdio.json"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^filesystem .* lazy 15m ')" 1 "stdio: list's lifecycle"

# ---- HTTP transport ("HTTP 传输") with OAuth, and the OAuth keys ("OAuth 配置") ----------------
cat >"$T_ROOT/http.json" <<EOF
{
  "mcpServers": {
    "remote": {
      "url": "$HTTP_URL",
      "headers": { "X-Custom-Header": "value" },
      "auth": "oauth",
      "oauth": {
        "clientId": "xxx",
        "clientSecret": "xxx",
        "scope": "read write"
      }
    },
    "linear": {
      "url": "$HTTP_URL",
      "auth": "oauth"
    },
    "oauth-full": {
      "url": "$HTTP_URL",
      "oauth": {
        "grantType": "authorization_code",
        "clientId": "optional-pre-registered-id",
        "clientSecret": "optional-secret",
        "scope": "optional-scopes",
        "redirectUri": "http://127.0.0.1:8765/callback",
        "clientName": "Pi MCP Client",
        "clientUri": "https://pi.dev"
      }
    },
    "plain": { "url": "$HTTP_URL", "headers": { "X-Custom-Header": "value" } }
  }
}
EOF
list_of "$T_ROOT/http.json"
# never signed in here: "login" (the command to run is shown), valid all the same
assert_eq "$(status_of remote)" "login" "http: remote (oauth, not signed in)"
assert_eq "$(status_of linear)" "login" "http: linear (oauth, not signed in)"
agent "$T_ROOT/http.json" mcp_plain_echo '{"message": "over http"}'
assert_eq "$(json_get "$OUT" 'j.text')" "remote: over http"
# the adapter's oauth sub-keys
assert_eq "$(status_of oauth-full)" "login" "http: oauth-full (every sub-key accepted)"

# ---- bearer tokens ("Bearer Token"), "auth": false, "oauth": false --------------------------------
export MY_API_KEY="bearer-from-env"
cat >"$T_ROOT/bearer.json" <<EOF
{
  "mcpServers": {
    "static": { "url": "$HTTP_URL", "auth": "bearer", "bearerToken": "static-token" },
    "fromenv": { "url": "$HTTP_URL", "auth": "bearer", "bearerTokenEnv": "MY_API_KEY" },
    "noauth": { "url": "$HTTP_URL", "auth": false },
    "nooauth": { "url": "$HTTP_URL", "oauth": false }
  }
}
EOF
list_of "$T_ROOT/bearer.json"
assert_eq "$(status_of fromenv)" "ok" "bearer: bearerTokenEnv"
agent "$T_ROOT/bearer.json" mcp_fromenv_echo '{"message": "bearer"}'
assert_eq "$(json_get "$OUT" 'j.text')" "remote: bearer"
assert_not_contains "$ERR" "bearer-from-env" "the bridge's log (no token)"
# "bearerToken", "auth": false, "oauth": false
for n in static noauth nooauth; do
    assert_eq "$(status_of "$n")" "ok" "bearer: $n"
done
assert_not_contains "$LIST" "static-token" "list --json (no token)"
agent "$T_ROOT/bearer.json" mcp_static_echo '{"message": "static"}'
assert_eq "$(json_get "$OUT" 'j.text')" "remote: static"
assert_eq "$(has_tool mcp_noauth_echo) $(has_tool mcp_nooauth_echo)" "true true"

# ---- direct tools ("Direct tools" example), toolPrefix "short" ----------------------------------
export GITHUB_TOKEN="gh-token-from-env"
cat >"$T_ROOT/direct.json" <<'EOF'
{
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@anthropic/github-mcp"],
      "directTools": ["echo", "get-sum"],
      "env": { "GITHUB_TOKEN": "${GITHUB_TOKEN}" }
    },
    "xcodebuild-mcp": {
      "command": "npx",
      "args": ["-y", "@anthropic/xcodebuild-mcp"],
      "directTools": true
    }
  },
  "settings": {
    "toolPrefix": "short"
  }
}
EOF
list_of "$T_ROOT/direct.json"
assert_eq "$(status_of github)" "ok" "direct: github"
agent "$T_ROOT/direct.json" github_echo '{"message": "direct"}'
assert_eq "$(json_get "$OUT" 'j.text')" "Echo: direct"
assert_eq "$(has_tool github_get-sum)" "true" "direct: a listed direct tool"
assert_not_contains "$ERR" "gh-token-from-env" "the bridge's log (no secret)"
# "short" drops a "-mcp" suffix
agent "$T_ROOT/direct.json" xcodebuild_echo '{"message": "short"}'
assert_eq "$(json_get "$OUT" 'j.text')" "Echo: short"

# ---- imports ("导入其他工具配置") with a relative command ------------------------------------------
mkdir -p "$HOME/.cursor"
cat >"$HOME/.cursor/mcp.json" <<EOF
{"mcpServers": {"from-cursor": {"command": "npx", "args": ["-y", "cursor-server"]},
                "my-custom-server": {"command": "npx", "args": ["-y", "shadowed-by-the-layer"]}}}
EOF
cat >"$T_ROOT/imports.json" <<'EOF'
{
  "imports": ["cursor", "claude-code"],
  "mcpServers": {
    "my-custom-server": {
      "command": "./my-mcp-server"
    }
  }
}
EOF
list_of "$T_ROOT/imports.json"
assert_eq "$(status_of my-custom-server)" "ok" "imports: my-custom-server"
agent "$T_ROOT/imports.json" mcp_my-custom-server_echo '{"message": "custom"}'
assert_eq "$(json_get "$OUT" 'j.text')" "Echo: custom"
# imports, shown by list
assert_eq "$(status_of from-cursor)" "ok" "imports: the Cursor entry"
assert_eq "$(json_get "$LIST" 'j.servers.find((s) => s.name === "from-cursor").import')" "cursor"
run 0 B list --mcp-config "$T_ROOT/imports.json"
assert_contains "$OUT" "(import cursor)" "list: where the entry came from"
assert_eq "$(json_get "$LIST" 'j.servers.find((s) => s.name === "my-custom-server").shadowed')" \
    "[\"~/.cursor/mcp.json (import cursor)\"]" "the layer's own entry wins over the import"
assert_contains "$OUT" "    shadows: ~/.cursor/mcp.json (import cursor)"
agent "$T_ROOT/imports.json" mcp_from-cursor_echo '{"message": "imported"}'
assert_eq "$(json_get "$OUT" 'j.text')" "Echo: imported"

# ---- lifecycle ("生命周期管理"), exposeResources, and the keys other clients write ---------------
cat >"$T_ROOT/keys.json" <<EOF
{
  "mcpServers": {
    "heavy-server": { "command": "npx", "args": ["heavy"], "idleTimeout": 30 },
    "never-idle": { "command": "npx", "args": ["never"], "idleTimeout": 0 },
    "eager": { "command": "npx", "args": ["eager"], "lifecycle": "eager" },
    "kept": { "command": "npx", "args": ["kept"], "lifecycle": "keep-alive" },
    "noresources": { "command": "npx", "args": ["nores"], "exposeResources": false },
    "loud": { "command": "npx", "args": ["loud"], "debug": true },
    "quiet": { "command": "node", "args": ["$EVERYTHING", "stdio", "$T_ROOT/quiet"] },
    "off": { "command": "npx", "args": ["off"], "disabled": true },
    "typo": { "command": "npx", "args": ["typo"], "alwaysAllow": [], "lifecyle": "eager" }
  },
  "settings": { "idleTimeout": 10 }
}
EOF
list_of "$T_ROOT/keys.json"
for n in heavy-server eager kept noresources loud quiet; do
    assert_eq "$(status_of "$n")" "ok" "keys: $n"
done
assert_eq "$(json_get "$LIST" 'j.servers.find((s) => s.name === "kept").lifecycle')" "keep-alive"
assert_eq "$(json_get "$LIST" 'j.servers.find((s) => s.name === "eager").lifecycle')" "eager"
# "debug": true: the server's stderr at the default level; the others' only at -vv
agent "$T_ROOT/keys.json" mcp_loud_echo '{"message": "keys"}'
assert_eq "$(json_get "$OUT" 'j.text')" "Echo: keys"
assert_contains "$ERR" "server 'loud' (stderr): Starting default (STDIO) server..." "debug: true at the default level"
assert_not_contains "$ERR" "server 'quiet'" "a server's stderr without debug at the default level"
# idleTimeout 0, disabled, minutes
assert_eq "$(status_of never-idle)" "ok" "keys: idleTimeout 0"
assert_eq "$(status_of off)" "disabled" "keys: disabled"
# named on the command line, a disabled server is still tested, with a word about it
run 0 B test off --mcp-config "$T_ROOT/keys.json"
assert_contains "$ERR" "server 'off' is disabled (\"disabled\": true in its entry): 'serve' does not start it"
assert_eq "$(json_get "$LIST" 'j.servers.find((s) => s.name === "never-idle").idle_timeout_ms')" "0"
assert_eq "$(json_get "$LIST" 'j.servers.find((s) => s.name === "heavy-server").idle_timeout_ms')" "1800000"
run 0 B list --mcp-config "$T_ROOT/keys.json"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^never-idle .* lazy never ')" 1 "list: never idle"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^off .* disabled ')" 1 "list: disabled"
# an unknown key is a warning naming it, never an invalid entry; alwaysAllow is known
assert_eq "$(status_of typo)" "ok" "keys: a misspelt key"
assert_contains "$(json_get "$LIST" 'j.servers.find((s) => s.name === "typo").warnings.join("|")')" "lifecyle"
assert_not_contains "$(json_get "$LIST" 'j.servers.find((s) => s.name === "typo").warnings.join("|")')" "alwaysAllow"
assert_contains "$OUT" "    warning: " "list: the warning under its entry"
agent "$T_ROOT/keys.json" mcp_quiet_echo '{"message": "again"}'
assert_eq "$(has_tool mcp_off_echo)" "false" "a disabled server is not started"
assert_eq "$(pgrep -fc -- "$T_ROOT/npx off" || true)" "0"

# ---- servers that fail say so ---------------------------------------------------------------------
# crashy: says why on stderr (with a terminal escape in it), then exits, every time
cat >"$T_ROOT/failing.json" <<EOF
{
  "mcpServers": {
    "crashy": { "command": "sh", "args": ["-c", "echo start >>'$T_ROOT/crashy.starts'; echo 'fatal: API_KEY is not set' >&2; printf 'clear\\\\033[2Jscreen\\\\n' >&2; exit 3", "$T_ROOT/crashy"] },
    "flaky": { "command": "sh", "args": ["-c", "[ -f '$T_ROOT/flaky-ok' ] && exec node '$EVERYTHING' stdio '$T_ROOT/flaky'; echo 'not ready yet' >&2; exit 1", "$T_ROOT/flaky"] }
  }
}
EOF
run 1 B test crashy --mcp-config "$T_ROOT/failing.json"
assert_contains "$ERR" "server 'crashy': the server exited with status 3"
assert_contains "$ERR" "server 'crashy': stderr (its last lines): fatal: API_KEY is not set"
assert_contains "$ERR" "server 'crashy': stderr: clear\\x1b[2Jscreen" "the escape, escaped"
assert_eq "$(printf '%s' "$ERR" | grep -c $'\x1b' || true)" "0" "no raw escape on the terminal"
run 1 B call crashy echo '{}' --mcp-config "$T_ROOT/failing.json" -q
assert_contains "$ERR" "fatal: API_KEY is not set" "call -q quotes it too"

# serve: a crash loop is one warning (with its stderr), not one per retry; a server that comes
# back says so. The bridge runs at -v (info) so that "working again" shows; the retries are at
# debug, so they never show here.
mkfifo "$T_ROOT/serve.in"
timeout 120 "$MCP_BRIDGE_BIN" -v serve --mcp-config "$T_ROOT/failing.json" <"$T_ROOT/serve.in" >"$T_ROOT/serve.out" 2>"$T_ROOT/serve.err" &
BRIDGE_PID=$!
exec 3>"$T_ROOT/serve.in"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' >&3
# crashy counts its own starts: once it has failed 4 times (0.5 + 1 + 2 s of backoff), one
# warning must have been all
starts() { [ "$(wc -l <"$T_ROOT/crashy.starts" 2>/dev/null || echo 0)" -ge "$1" ]; }
wait_until 30 "flaky's first failure to be reported" grep -q "server 'flaky': the server exited" "$T_ROOT/serve.err"
touch "$T_ROOT/flaky-ok"
wait_until 30 "flaky to work again" grep -q "server 'flaky' is working again" "$T_ROOT/serve.err"
wait_until 30 "crashy's 4th start" starts 4
crashy_warn() { grep -c "warning: server 'crashy': the server exited with status 3; connecting again in" "$T_ROOT/serve.err" || true; }
exec 3>&-
rc=0
wait "$BRIDGE_PID" || rc=$? # bounded by its timeout
[ "$rc" = 0 ] || fail "the bridge exited $rc at the end of its input: $(tail -20 "$T_ROOT/serve.err")"
SERR=$(cat "$T_ROOT/serve.err")
assert_eq "$(crashy_warn)" "1" "crashy reported once in 4 attempts:
$SERR"
assert_contains "$SERR" "warning: server 'crashy': stderr (its last lines): fatal: API_KEY is not set"
assert_contains "$SERR" "warning: server 'crashy': stderr: clear\\x1b[2Jscreen"
assert_eq "$(grep -c $'\x1b' "$T_ROOT/serve.err" || true)" "0" "no raw escape in the log"
assert_eq "$(grep -c "warning: server 'flaky'" "$T_ROOT/serve.err" || true)" "3" "flaky: one failure report, its stderr line and its recovery:
$SERR"
assert_contains "$SERR" "warning: server 'flaky': stderr (its last line): not ready yet"

# nothing of the test is left running
assert_eq "$(pgrep -af -- "$T_ROOT" | grep -v bridge-server || true)" "" "processes left behind"
