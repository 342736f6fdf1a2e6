# The command line of the three tools, as git's: a mistyped command, option, server name, secret
# name or tool name is a usage error or a "not found" that names the close ones (did you mean),
# never read as something else (mcp-auth's command words are not server names); options are
# taken before or after the command word and its operands; an unknown option names the command
# and its help. The tool name is checked against @modelcontextprotocol/server-everything.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
S() { "$SECRETS_BIN" "$@"; }
A() { "$MCP_AUTH_BIN" "$@"; }
B() { "$MCP_BRIDGE_BIN" "$@"; }
EVERYTHING="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$EVERYTHING" ] || fail "server-everything is missing: run scripts/install-deps"
export CREDKIT_BRIDGE_BUNDLED=""
mkdir -p "$PI_CODING_AGENT_DIR"
chmod 700 "$PI_CODING_AGENT_DIR"
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<JSON
{"mcpServers": {
  "everything": {"command": "node", "args": ["$EVERYTHING", "stdio"]},
  "linear": {"url": "http://127.0.0.1:9/mcp", "allowHttp": true}
}}
JSON

# ---- secrets ----
run 2 S lsit
assert_contains "$ERR" "unknown command 'lsit'; did you mean 'list'? (see 'secrets --help')"
run 2 S help lsit
assert_contains "$ERR" "did you mean 'list'?"
export GITHUB_TOKEN_SRC=tok-123
run 0 S configure GITHUB_TOKEN --env GITHUB_TOKEN_SRC
run 1 S get GITHUB_TOKN
assert_contains "$ERR" "'GITHUB_TOKN' has no recipe and no environment variable of that name; did you mean 'GITHUB_TOKEN'?"
assert_not_contains "$ERR" "secrets configure GITHUB_TOKN" "a typo is not to be configured"
assert_eq "$OUT" "" "standard output of a name that does not resolve"
run 1 S get NOTHING_LIKE_IT
assert_contains "$ERR" "run 'secrets configure NOTHING_LIKE_IT'" "no close name: how to configure it"
run 1 S remove GITHUB_TOKN
assert_contains "$ERR" "did you mean 'GITHUB_TOKEN'?"
run 2 S get --no-nwline GITHUB_TOKEN
assert_contains "$ERR" "secrets get: unknown option '--no-nwline'; did you mean '--no-newline'? (see 'secrets get --help')"
run 2 S --verbos list
assert_contains "$ERR" "secrets list: unknown option '--verbos'; did you mean '--verbose'? (see 'secrets list --help')"
run 2 S --verbos
assert_contains "$ERR" "secrets: unknown option '--verbos'; did you mean '--verbose'? (see 'secrets --help')"
run 2 S configure X --comand true
assert_contains "$ERR" "secrets configure: unknown option '--comand'; did you mean '--command'?"
# options before the command word, and after the operands
run 0 S -n get GITHUB_TOKEN
assert_eq "$OUT" "tok-123"
run 0 S get GITHUB_TOKEN -n -q
assert_eq "$OUT" "tok-123"
run 0 S --json resolve GITHUB_TOKEN
assert_contains "$OUT" '"GITHUB_TOKEN"'
run 0 S resolve GITHUB_TOKEN --json
assert_contains "$OUT" '"GITHUB_TOKEN"'
run 0 S -vv list --no-check
assert_contains "$OUT" "GITHUB_TOKEN"

# ---- mcp-auth ----
# command words mistyped, or another tool's, are never a server to sign in to
run 2 A stauts
assert_contains "$ERR" "unknown command 'stauts'; did you mean 'status'? (see 'mcp-auth --help')"
run 2 A list
assert_contains "$ERR" "unknown command 'list'; did you mean 'status'?"
run 2 A whoami
assert_contains "$ERR" "unknown command 'whoami'; did you mean 'status'?"
run 2 A help stauts
assert_contains "$ERR" "did you mean 'status'?"
# a server name mistyped: not found (3) with the close names
run 3 A linearr
assert_contains "$ERR" "no server named 'linearr'"
assert_contains "$ERR" "did you mean 'linear'?"
run 3 A header linaer
assert_contains "$ERR" "did you mean 'linear'?"
run 2 A login --scoep x linear
assert_contains "$ERR" "mcp-auth login: unknown option '--scoep'; did you mean '--scope'? (see 'mcp-auth login --help')"
run 2 A status --jsn
assert_contains "$ERR" "mcp-auth status: unknown option '--jsn'; did you mean '--json'? (see 'mcp-auth status --help')"
run 2 A --confg
assert_contains "$ERR" "unknown option '--confg'; did you mean '--config'? (see 'mcp-auth --help')"
run 2 A status --confg x
assert_contains "$ERR" "mcp-auth status: unknown option '--confg'; did you mean '--config'? (see 'mcp-auth status --help')"
run 2 B list --confg x
assert_contains "$ERR" "mcp-bridge list: unknown option '--confg'; did you mean '--config'?"
run 2 A --no-brwser linear
assert_contains "$ERR" "did you mean '--no-browser'?"
# options before the operand, as the usage line says: the sign-in reaches discovery (the server
# is not there: 5), it is not refused as a usage error
run 5 A --no-browser linear --timeout 1s
assert_contains "$ERR" "127.0.0.1:9"
run 5 A --no-browser --timeout 1s login linear
run 0 A --json status
assert_contains "$OUT" '"servers"'
# --config naming a missing file is a configuration error, with or without SERVER
run 3 A --config "$T_ROOT/absent.json" status
assert_contains "$ERR" "does not exist"
run 3 A status --config "$T_ROOT/absent.json" linear
# the same bad URL is the same usage error in both tools
run 2 A header ftp://files.example/mcp
run 2 B test ftp://files.example/mcp

# ---- mcp-bridge ----
run 2 B lsit
assert_contains "$ERR" "unknown command 'lsit'; did you mean 'list'? (see 'mcp-bridge --help')"
run 2 B list --jsn
assert_contains "$ERR" "mcp-bridge list: unknown option '--jsn'; did you mean '--json'? (see 'mcp-bridge list --help')"
run 2 B test everything --conect-timeout 5s
assert_contains "$ERR" "mcp-bridge test: unknown option '--conect-timeout'; did you mean '--connect-timeout'?"
run 2 B test everything --timeout
assert_contains "$ERR" "mcp-bridge test: option '--timeout' needs a value (see 'mcp-bridge test --help')"
run 0 B --json list
assert_contains "$OUT" '"everything"'
assert_not_contains "$ERR" "serve" "--json before list is list's"
run 0 B list --json
assert_contains "$OUT" '"everything"'
run 3 B test everythin
assert_contains "$ERR" "no server named 'everythin'"
assert_contains "$ERR" "did you mean 'everything'?"
run 3 B remove everythin
assert_contains "$ERR" "did you mean 'everything'?"
# a tool the server does not have is not the tool's error (4): not found (3), with the close names
run 3 B call everything ehco '{"message": "x"}'
assert_contains "$ERR" "'everything' lists no tool 'ehco'; did you mean 'echo'?"
assert_eq "$OUT" "" "standard output of a call to a tool that is not there"
run 0 B call everything echo '{"message": "typed right"}'
assert_contains "$OUT" "typed right"
# options before the command word and between the operands
run 0 B --json call everything echo '{"message": "json first"}'
assert_contains "$OUT" '"text"'
run 0 B call everything --json echo '{"message": "json between"}'
assert_contains "$OUT" "json between"

# ---- keys of the configuration files ----
cat >"$T_ROOT/typo.json" <<JSON
{"mcpServers": {"typo": {"url": "https://mcp.example.com/mcp", "headrs": {"X-A": "b"}}}}
JSON
run 0 B --config "$T_ROOT/typo.json" list
assert_contains "$ERR$OUT" '"headrs" is not a key of an entry: it is ignored; did you mean "headers"?'
printf '{"TYPO_KEY": {"command": "true", "tll": "5m"}}\n' >"$PI_CODING_AGENT_DIR/secrets.json"
chmod 600 "$PI_CODING_AGENT_DIR/secrets.json"
run 1 S get TYPO_KEY
assert_contains "$ERR" "unknown key \"tll\"; did you mean 'ttl'?"
