# One convention for every --json answer of secrets, mcp-auth and mcp-bridge (docs/json.md):
# each command's answer, a success and failures of each exit status it has, validated against
# its schema in docs/schemas/ by a real validator (python3-jsonschema, draft 2020-12), no key of
# ours in camelCase, the failed answers' codes by exit status, and the human text still on
# stderr. The servers are real: server-everything over stdio for test and call.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
SCHEMAS="$TESTS_DIR/../docs/schemas"
CHECK_PY="$TESTS_DIR/integration/lib/json_check.py"
python3 -c 'import jsonschema' 2>/dev/null ||
    fail "python3-jsonschema is missing: run scripts/install-deps"
EVERYTHING="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$EVERYTHING" ] || fail "server-everything is missing: run scripts/install-deps"
export CREDKIT_BRIDGE_BUNDLED=""

S() { "$SECRETS_BIN" "$@"; }
A() { "$MCP_AUTH_BIN" "$@"; }
B() { "$MCP_BRIDGE_BIN" "$@"; }

# valid SCHEMA WHAT: $OUT is one answer of SCHEMA (docs/schemas/SCHEMA.json), with no camelCase
# key of ours
SEEN_SCHEMAS=()
valid() {
    printf '%s' "$OUT" >"$T_ROOT/answer.json"
    T_CHECKS=$((T_CHECKS + 1))
    python3 "$CHECK_PY" "$SCHEMAS" "$1" "$T_ROOT/answer.json" 2>"$T_ROOT/check.err" ||
        fail "$2: the answer does not hold to docs/schemas/$1.json:
$(cat "$T_ROOT/check.err")
--- the answer
$OUT"
    SEEN_SCHEMAS+=("$1")
}

# failed SCHEMA CODE WHAT: $OUT is a failed answer: valid, its error's code CODE, its message
# the text on stderr (which is still there)
failed() {
    valid "$1" "$3"
    assert_eq "$(json_get "$OUT" 'j.error.code')" "$2" "$3: the error's code"
    assert_eq "$(json_get "$OUT" 'Object.keys(j).sort().join(",")')" "error,version" "$3: keys"
    [ -n "$ERR" ] || fail "$3: nothing on stderr"
    T_CHECKS=$((T_CHECKS + 1))
    local first
    first=$(json_get "$OUT" 'j.error.message.split("\n")[0]')
    assert_contains "$ERR" "$first" "$3: the message is the text on stderr"
}

# ---- secrets ------------------------------------------------------------------------------------
SJ="$PI_CODING_AGENT_DIR/secrets.json"
export JSONCONV_SRC="conv-value-1"
run 0 S configure CONV_TOKEN --env JSONCONV_SRC
export CONV_ENV_ONLY="from-env"
run 0 S resolve --json CONV_TOKEN CONV_ENV_ONLY
valid secrets-resolve "resolve"
assert_eq "$(json_get "$OUT" 'j.secrets.CONV_TOKEN.value')" "conv-value-1"
# 1: the answer itself, a name that did not resolve carrying its error, and the error object
run 1 S resolve --json CONV_TOKEN CONV_NOWHERE
valid secrets-resolve "resolve, a name that does not resolve"
assert_contains "$(json_get "$OUT" 'j.secrets.CONV_NOWHERE.error')" "CONV_NOWHERE"
assert_eq "$(json_get "$OUT" 'j.error.code')" "failed" "resolve, a name that does not resolve: the error"
assert_contains "$(json_get "$OUT" 'j.error.message')" "1 of 2 names did not resolve"
assert_contains "$(json_get "$OUT" 'j.error.message')" "CONV_NOWHERE"
run 2 S resolve --json 'bad name'
failed secrets-resolve usage "resolve, an invalid name"
assert_eq "$(json_get "$OUT" 'j.error.fix')" "see 'secrets resolve --help'"
run 2 S resolve --json
failed secrets-resolve usage "resolve without a name"
run 0 S list --json
valid secrets-list "list"
assert_eq "$(json_get "$OUT" 'j.secrets[0].name')" "CONV_TOKEN"
run 0 S list --json --no-check
valid secrets-list "list --no-check"
# an option getopt refuses: it says so on stderr, the message says no more than that
run 2 S list --json --no-such-option
valid secrets-list "list, an unknown option"
assert_eq "$(json_get "$OUT" 'j.error.code')" "usage"
assert_eq "$(json_get "$OUT" 'j.error.message')" "the command line is not valid"
assert_contains "$ERR" "no-such-option"
cp "$SJ" "$T_ROOT/good-secrets.json"
printf '{"CONV_TOKEN": \n' >"$SJ"
run 3 S list --json
failed secrets-list config "list, a malformed secrets.json"
run 3 S resolve --json CONV_TOKEN
failed secrets-resolve config "resolve, a malformed secrets.json"
cp "$T_ROOT/good-secrets.json" "$SJ"
# no --json, no JSON: the human text alone, stdout empty
run 2 S resolve 'bad name'
assert_eq "$OUT" "" "resolve without --json: nothing on stdout"

# ---- mcp-auth -----------------------------------------------------------------------------------
# a sign-in stored in mcp-auth's store format (signing in through a browser is auth_oidc.sh's)
CANARY="conv-canary-$$"
store_signin() { # URL EXPIRES_AT
    local issuer=https://as.example.com name
    name=$(printf '%s\n%s' "$1" "$issuer" | sha256sum | cut -c1-32)
    mkdir -p "$PI_CODING_AGENT_DIR/oauth"
    chmod 700 "$PI_CODING_AGENT_DIR" "$PI_CODING_AGENT_DIR/oauth"
    printf '{"version": 1, "server_url": "%s", "issuer": "%s", "registration": {"method": "dynamic", "client_id": "c"}, "tokens": {"access_token": "%s-at", "refresh_token": "%s-rt", "token_type": "Bearer", "scope": "read write", "expires_at": %s}}\n' \
        "$1" "$issuer" "$CANARY" "$CANARY" "$2" >"$PI_CODING_AGENT_DIR/oauth/$name.json"
    chmod 600 "$PI_CODING_AGENT_DIR/oauth/$name.json"
}
store_signin https://fresh.example.com/mcp $(($(date +%s) + 3600))
run 0 A status --json
valid mcp-auth-status "status"
assert_eq "$(json_get "$OUT" 'j.servers[0].url')" "https://fresh.example.com/mcp"
assert_eq "$(json_get "$OUT" 'j.servers[0].scope')" "read write"
run 0 A status --json https://fresh.example.com/mcp
valid mcp-auth-status "status SERVER"
# 4, nothing stored for the server: the answer, with its error
run 4 A status --json https://none.example.com/mcp
valid mcp-auth-status "status of a server without a sign-in"
assert_eq "$(json_get "$OUT" 'j.servers.length')" "0"
assert_eq "$(json_get "$OUT" 'j.error.code')" "login_required"
assert_eq "$(json_get "$OUT" 'j.error.fix')" "run 'mcp-auth https://none.example.com/mcp'"
run 2 A status --json a b
failed mcp-auth-status usage "status with two servers"
run 0 A header --json https://fresh.example.com/mcp
valid mcp-auth-header "header"
assert_eq "$(json_get "$OUT" 'j.headers.Authorization')" "Bearer $CANARY-at"
run 3 A header --json no-such-entry
failed mcp-auth-header config "header of an unknown name"
run 2 A header --json
failed mcp-auth-header usage "header without a server"
# 4: login required (nothing stored); the command to run as the fix, as on stderr
printf '{"mcpServers": {"conv": {"url": "https://none.example.com/mcp", "auth": "oauth"}}}\n' \
    >"$T_ROOT/auth.json"
run 4 A --config "$T_ROOT/auth.json" header --json conv
failed mcp-auth-header login_required "header with no sign-in"
assert_eq "$(json_get "$OUT" 'j.error.fix')" "run 'mcp-auth --config '$T_ROOT/auth.json' conv'"
assert_contains "$ERR" "sign in with: mcp-auth --config '$T_ROOT/auth.json' conv"
# import: nothing to import (an import itself is auth_import.sh's), a server mcp-remote has no
# sign-in for (the answer, with its error), a usage error
run 0 A import mcp-remote --json
valid mcp-auth-import "import"
assert_eq "$(json_get "$OUT" 'j.servers.length')" "0"
run 4 A import mcp-remote --json https://none.example.com/mcp
valid mcp-auth-import "import of a server mcp-remote has no sign-in for"
assert_eq "$(json_get "$OUT" 'j.servers[0].result')" "failed"
assert_eq "$(json_get "$OUT" 'j.error.code')" "login_required"
run 2 A import --json
failed mcp-auth-import usage "import without a source"

# ---- mcp-bridge ---------------------------------------------------------------------------------
MARK="json-conv-$$"
CFG="$T_ROOT/mcp.json"
cat >"$CFG" <<EOF
{"mcpServers": {
  "ev": {"command": "node", "args": ["$EVERYTHING", "stdio", "$MARK"], "idleTimeout": 5},
  "remote": {"url": "https://fresh.example.com/mcp", "auth": "oauth", "autoAuth": false,
             "headers": {"X-Conv": "\${CONV_TOKEN}"}},
  "blank": {"command": "  "}
}}
EOF
C() { B --config "$CFG" "$@"; }
run 0 C list --json
valid mcp-bridge-list "list"
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "ev").idle_timeout_ms')" "300000"
assert_eq "$(json_get "$OUT" 'typeof j.servers.find(s => s.name === "remote").credentials.oauth.expires_at')" "number"
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "remote").credentials.variables[0].expires_at')" "null" \
    "an env recipe does not expire: null"
# --check: each server connected, its "check" object (not "remote": no network here)
printf '{"mcpServers": {"ev": {"command": "node", "args": ["%s", "stdio", "%s"]}, "blank": {"command": "  "}}}\n' \
    "$EVERYTHING" "$MARK" >"$T_ROOT/check.json"
run 0 B --config "$T_ROOT/check.json" list --check --json
valid mcp-bridge-list "list --check"
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "ev").check.state')" "ready"
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "blank").check')" "null"
run 3 B --config "$T_ROOT/no-such.json" list --json
failed mcp-bridge-list config "list, --config naming a missing file"
run 2 C list --json extra
failed mcp-bridge-list usage "list with an argument"
assert_eq "$(json_get "$OUT" 'j.error.fix')" "see 'mcp-bridge list --help'"

run 0 C test ev --json
valid mcp-bridge-test "test"
assert_eq "$(json_get "$OUT" 'j.name')" "ev"
run 3 C test no-such --json
failed mcp-bridge-test config "test of an unknown server"
run 3 C test blank --json
failed mcp-bridge-test config "test of an invalid entry"
run 1 B test "http://127.0.0.1:1/mcp" --json --connect-timeout 5s
failed mcp-bridge-test failed "test of a server that is not there"

run 0 C call ev get-sum '{"a": 2, "b": 3}' --json
valid mcp-bridge-call "call"
assert_eq "$(json_get "$OUT" 'j.result.content[0].text')" "The sum of 2 and 3 is 5."
run 4 C call ev get-sum '{"a": "two"}' --json
valid mcp-bridge-call "call, the tool reports an error"
assert_eq "$(json_get "$OUT" 'j.error.code')" "tool_error"
assert_eq "$(json_get "$OUT" 'j.result.isError')" "true"
run 2 C call ev get-sum 'not json' --json
failed mcp-bridge-call usage "call with arguments that are not JSON"
run 3 C call no-such echo --json
failed mcp-bridge-call config "call of an unknown server"

mkdir -p "$T_ROOT/proj"
printf '{"mcpServers": {"proj-ev": {"command": "node", "args": ["%s", "stdio"]}}}\n' "$EVERYTHING" \
    >"$T_ROOT/proj/.mcp.json"
run 0 C trust --json --project "$T_ROOT/proj"
valid mcp-bridge-trust "trust"
assert_eq "$(json_get "$OUT" 'j.entries[0].name')" "proj-ev"
run 0 C trust --json --yes --project "$T_ROOT/proj"
valid mcp-bridge-trust "trust --yes"
assert_eq "$(json_get "$OUT" 'j.approved.join(",")')" "proj-ev"
run 0 C trust --revoke --json --project "$T_ROOT/proj"
valid mcp-bridge-trust "trust --revoke"
assert_eq "$(json_get "$OUT" 'j.revoked')" "1"
run 3 C trust --json --project "$T_ROOT/no-such-dir"
failed mcp-bridge-trust config "trust of a directory that is not there"
run 2 C trust --json --revoke --yes
failed mcp-bridge-trust usage "trust --revoke --yes"

# doctor: its report, problems found (exit 1) or not; a missing --config is the error object
printf '{"mcpServers": {"gone": {"command": "no-such-mcp-server-xyz"}}}\n' >"$T_ROOT/doctor.json"
run 1 B --config "$T_ROOT/doctor.json" doctor --json --no-connect
valid mcp-bridge-doctor "doctor, a problem found"
assert_eq "$(json_get "$OUT" 'j.ok')" "false"
assert_eq "$(json_get "$OUT" 'j.checks.find(c => c.subject === "gone").level')" "problem"
printf '{"mcpServers": {"ev": {"command": "node", "args": ["%s", "stdio", "%s"]}}}\n' \
    "$EVERYTHING" "$MARK" >"$T_ROOT/doctor-ok.json"
run 0 B --config "$T_ROOT/doctor-ok.json" doctor --json
valid mcp-bridge-doctor "doctor, no problem"
assert_eq "$(json_get "$OUT" '/^ready, \d+ tools$/.test(j.checks.find(c => c.subject === "ev").message)')" "true"
run 3 B --config "$T_ROOT/no-such.json" doctor --json
failed mcp-bridge-doctor config "doctor, --config naming a missing file"

# install and uninstall: the changes made, the same again (none), a refusal
mkdir -p "$HOME/.cursor"
printf '{"mcpServers": {"files": {"command": "files-mcp"}}}\n' >"$HOME/.cursor/mcp.json"
run 0 B install cursor --json
valid mcp-bridge-install "install"
assert_eq "$(json_get "$OUT" 'j.changes.map(c => c.action).join(",")')" "added,moved,backup"
run 0 B install cursor --json
valid mcp-bridge-install "install again"
assert_eq "$(json_get "$OUT" 'j.changed')" "false"
run 0 B uninstall cursor --json
valid mcp-bridge-install "uninstall"
assert_eq "$(json_get "$OUT" 'j.changes[0].action')" "restored"
printf '{"mcpServers": {"bridge": {"command": "something-else"}}}\n' >"$HOME/.cursor/mcp.json"
run 3 B install cursor --json
failed mcp-bridge-install config "install over a 'bridge' that is not the bridge"
run 2 B install --json
failed mcp-bridge-install usage "install without an agent"

# every schema was checked
for f in "$SCHEMAS"/*.json; do
    name=$(basename "$f" .json)
    [ "$name" = error ] && continue
    T_CHECKS=$((T_CHECKS + 1))
    case " ${SEEN_SCHEMAS[*]} " in *" $name "*) ;; *) fail "no answer was checked against $name" ;; esac
done
