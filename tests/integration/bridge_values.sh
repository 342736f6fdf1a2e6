# The pi adapter's value forms, and one evaluator for `list` and `call`: a real stdio server
# (server-everything's get-env reports the environment it was given) and a real HTTP server
# (seam-header-server.mjs reports digests of the headers it received) behind `mcp-bridge call`.
#   - "$env:VAR", "!!" (a literal '!'), "~" in cwd, ${VAR:-default} and ${env:X} reach the
#     server as the adapter makes them;
#   - a "!command" value (env, headers, bearerToken) is run by `secrets` (handed on stdin) and
#     arrives trimmed; a failing one names the entry and the key, never the command's output;
#   - `list` says what `call` does: a default that applies is ok ("default"), an unset
#     ${env:X} is missing with the fix, and call then fails the same way;
#   - the commands' values are in no process's command line (lib/canary-watch.mjs, every
#     50 ms), no environment but the stdio server's, and in no output or log at -vv.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

B() { "$MCP_BRIDGE_BIN" "$@"; }
everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$everything" ] || fail "server-everything is missing: run scripts/install-deps"
LIB="$TESTS_DIR/integration/lib"
SEC_DIR=$(dirname "$(readlink -f "$SECRETS_BIN")")
export PATH="$SEC_DIR:$PATH" # the bridge finds secrets there, as next to it once installed

# the values the commands print: in files, so that no command line holds them
VALUES="$T_ROOT/values"
mkdir -p "$VALUES" "$HOME/work"
V_ENV="env-command-value-$RANDOM$RANDOM" V_HDR="header-command-value-$RANDOM$RANDOM"
V_TOK="tokencommandvalue$RANDOM$RANDOM"
printf '  %s  \n' "$V_ENV" >"$VALUES/env" # trimmed, as the adapter trims it
printf '%s\n' "$V_HDR" >"$VALUES/hdr"
printf '%s' "$V_TOK" >"$VALUES/tok"
t_canary "$V_ENV" "$V_HDR" "$V_TOK" --held-by "$VALUES"

RULES=$(node -e 'process.stdout.write(JSON.stringify([["server-everything", ["cmd"]]]))')
CANARY_WATCH_STOP="$T_ROOT/watch.stop" CANARY_WATCH_OUT="$T_ROOT/watch.report" CANARY_ROOT_PID=$$ \
    CANARY_VALUES="$(printf 'cmd=%s\nhdr=%s\ntok=%s\n' "$V_ENV" "$V_HDR" "$V_TOK")" \
    CANARY_ENV_RULES="$RULES" \
    node "$LIB/canary-watch.mjs" </dev/null >/dev/null 2>"$T_ROOT/watch.err" &
watcher=$!
T_PEER_PIDS+=("$watcher")

start_peer seam-header-server --record-header x-api-key --record-header authorization
HTTP_URL=$PEER_URL

export VALS_SET="set-by-the-environment" VALS_HOME_PART="from-env"
unset VALS_UNSET VALS_ENV_UNSET || true
CFG="$T_ROOT/mcp.json"
node -e '
const [cfg, ev, url, values] = process.argv.slice(1);
const stdio = (env, more = {}) => ({ command: "node", args: [ev], env, ...more });
const j = { mcpServers: {
  forms: stdio({
    CMD: `!sleep 0.3; cat "${values}/env"`,
    BANG: "!!not a command ${VALS_SET}",
    DOLLAR_ENV: "$env:VALS_HOME_PART/x",
    DEFAULTED: "${VALS_UNSET:-the-default}",
    ENV_SET: "${env:VALS_SET}",
  }, { cwd: "~/work", command: "sh", args: ["-c", "pwd >\"$0\"; exec node \"$1\"", `${values}/../cwd`, ev] }),
  inherit: stdio({ OWN: "own" }, { inheritEnv: true }),
  minimal: stdio({ OWN: "own" }, { inheritEnv: false }),
  envunset: stdio({ X: "${env:VALS_ENV_UNSET}" }),
  envdefault: stdio({ X: "${env:VALS_ENV_UNSET:-fallback}" }),
  failing: stdio({ KEY: "!echo stderr-of-the-command >&2; exit 3" }),
  empty: stdio({ KEY: "!true" }),
  http: { url, headers: { "X-Api-Key": `!sleep 0.3; cat "${values}/hdr"` },
          auth: "bearer", bearerToken: `!cat "${values}/tok"` },
  httpfail: { url, headers: { "X-Api-Key": "!exit 7" } },
} };
require("fs").writeFileSync(cfg, JSON.stringify(j, null, 2));
' "$CFG" "$everything" "$HTTP_URL" "$VALUES"

# ---- secrets resolve --json --stdin: the request the bridge sends ----------------------------
run_in 0 "{\"version\":1,\"commands\":{\"_cmd_a\":\"cat '$VALUES/tok'\"}}" S resolve --json --stdin
assert_eq "$(json_get "$OUT" 'j.secrets._cmd_a.value')" "$V_TOK" "a command handed in on stdin"
assert_eq "$(json_get "$OUT" 'j.secrets._cmd_a.source')" command
run_in 1 '{"commands":{"C1":"echo on-stderr >&2; exit 4"}}' S resolve --json --stdin
assert_eq "$(json_get "$OUT" 'j.secrets.C1.error')" "'C1': the command exited with status 4"
for bad in 'not json' '{"version":2,"commands":{"A":"true"}}' '{"commands":{"1A":"true"}}' \
    '{"commands":{"A":""}}' '{"commands":[]}'; do
    run_in 2 "$bad" S resolve --json --stdin
    assert_contains "$ERR" "the request on stdin"
done
run 2 S resolve --stdin
assert_contains "$ERR" "--stdin answers only with --json"

# ---- stdio: every form arrives as the adapter makes it --------------------------------------
T_CANARY_STDOUT=1 run 0 B -vv --config "$CFG" call forms get-env
ENVJSON=$OUT
envof() { json_get "$ENVJSON" "j['$1']"; }
assert_eq "$(envof CMD)" "$V_ENV" "a !command's output, trimmed"
assert_eq "$(envof BANG)" '!not a command set-by-the-environment' '"!!": a literal "!", the rest expanded'
assert_eq "$(envof DOLLAR_ENV)" "from-env/x" '"$env:VAR"'
assert_eq "$(envof DEFAULTED)" "the-default" '${VAR:-default} with VAR unset'
assert_eq "$(envof ENV_SET)" "set-by-the-environment" '${env:X} set'
assert_eq "$(cat "$T_ROOT/cwd")" "$HOME/work" '"cwd": "~/work"'

# block NAME: the lines `list` printed for the server NAME (its row and the indented ones)
block() { printf '%s\n' "$OUT" | awk -v n="$1" '$1 == n { on = 1; print; next } /^[^ ]/ { on = 0 } on'; }
# status NAME: the status `list --json` gives the server NAME
status() {
    run 0 B --config "$CFG" list --json
    json_get "$OUT" "j.servers.find((s) => s.name === '$1').status"
}

# "inheritEnv": true gives the server the bridge's whole environment, false (and no key) the
# minimal one; "env" goes on top of either
T_CANARY_STDOUT=1 run 0 B --config "$CFG" call inherit get-env
assert_eq "$(json_get "$OUT" 'j.VALS_SET')" set-by-the-environment '"inheritEnv": true'
assert_eq "$(json_get "$OUT" 'j.OWN')" own '"env" over the whole environment'
T_CANARY_STDOUT=1 run 0 B --config "$CFG" call minimal get-env
assert_eq "$(json_get "$OUT" 'j.VALS_SET')" undefined '"inheritEnv": false'
assert_eq "$(json_get "$OUT" 'j.OWN')" own '"env" over the minimal environment'
assert_eq "$(envof VALS_SET)" undefined 'no "inheritEnv"'

# list agrees: the default applies, so the entry is ok and says so
run 0 B --config "$CFG" list
FORMS=$(block forms)
assert_contains "$FORMS" '${VALS_UNSET}: ok (from the default written in the entry'
assert_contains "$FORMS" '${env:VALS_SET}: ok (from the environment'
assert_contains "$(printf '%s\n' "$FORMS" | head -1)" " ok "
assert_eq "$(status forms)" ok "list --json: the status of 'forms'"

# ${env:X} unset: list says missing with the fix, and call fails the same way
run 0 B --config "$CFG" list
UNSET=$(block envunset)
assert_contains "$UNSET" '${env:VALS_ENV_UNSET}: missing'
assert_contains "$UNSET" "set it where the bridge starts"
assert_contains "$(printf '%s\n' "$UNSET" | head -1)" " missing "
assert_eq "$(status envunset)" missing "list --json: the status of 'envunset'"
run 1 B --config "$CFG" call envunset get-env
assert_contains "$ERR" "'env:VALS_ENV_UNSET' is not set: set VALS_ENV_UNSET in the environment"
# ... with a default, both say ok and the default is what arrives
run 0 B --config "$CFG" list
assert_contains "$(block envdefault)" '${env:VALS_ENV_UNSET}: ok (from the default'
T_CANARY_STDOUT=1 run 0 B --config "$CFG" call envdefault get-env
assert_eq "$(json_get "$OUT" 'j.X')" fallback '${env:X:-default} with X unset'
# ... and once set, both say ok and the value arrives
VALS_ENV_UNSET=now-set run 0 B --config "$CFG" list
assert_contains "$(block envunset)" '${env:VALS_ENV_UNSET}: ok (from the environment'
VALS_ENV_UNSET=now-set T_CANARY_STDOUT=1 run 0 B --config "$CFG" call envunset get-env
assert_eq "$(json_get "$OUT" 'j.X')" now-set '${env:X} once set'

# a failing command: the entry, the key and the fix; never the command nor what it printed
run 1 B -vv --config "$CFG" call failing get-env
assert_contains "$ERR" "server 'failing'"
assert_contains "$ERR" "\"env\" value 'KEY': its command (the value starts with '!') gave no value: the command exited with status 3"
assert_not_contains "$ERR" "stderr-of-the-command" "the error"
assert_not_contains "$ERR" "echo" "the error"
run 1 B --config "$CFG" call empty get-env
assert_contains "$ERR" "\"env\" value 'KEY': its command (the value starts with '!') gave no value: the command printed nothing"

# ---- HTTP: a header and the bearer token from commands ---------------------------------------
T_CANARY_STDOUT=0 run 0 B -vv --config "$CFG" call http seen --json
digest() { printf '%s' "$1" | sha256sum | cut -c1-16; }
assert_eq "$(json_get "$OUT" 'j.result.structuredContent.headers["x-api-key"]')" "$(digest "$V_HDR")" \
    "the header of a !command, as the server received it"
assert_eq "$(json_get "$OUT" 'j.result.structuredContent.headers.authorization')" "$(digest "Bearer $V_TOK")" \
    "the bearer token of a !command"
run 1 B --config "$CFG" call httpfail seen
assert_contains "$ERR" "header 'X-Api-Key': its command (the value starts with '!') gave no value: the command exited with status 7"

# ---- the watcher: no command line held a value, no environment but the stdio server's -------
touch "$T_ROOT/watch.stop"
wait_until 20 "the canary watcher's report" test -s "$T_ROOT/watch.report"
wait "$watcher" || fail "canary watcher: $(grep -v '^ok' "$T_ROOT/watch.report" || cat "$T_ROOT/watch.err")"
T_CHECKS=$((T_CHECKS + $(grep -c '^ok' "$T_ROOT/watch.report")))
echo "ok: the pi adapter's values, one evaluator for list and call"
