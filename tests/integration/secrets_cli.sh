# secrets: recipes of every kind, the JSON answer, list, exec, remove, and bad input.
. "$(dirname "$0")/lib/common.sh"

SJ="$PI_CODING_AGENT_DIR/secrets.json"

# --help and --version on every command
run 0 S --version
assert_contains "$OUT" "secrets"
run 0 S --help
assert_contains "$OUT" "examples:"
for c in configure get resolve list remove exec; do
    run 0 S "$c" --help
    assert_contains "$OUT" "usage: secrets $c"
done
run 2 S frobnicate
assert_contains "$ERR" "unknown command 'frobnicate'"
run 2 S
# "help COMMAND" is the command's own help
for c in configure get resolve list remove exec; do
    run 0 S help "$c"
    assert_contains "$OUT" "usage: secrets $c" "help $c"
done
run 0 S help
assert_contains "$OUT" "examples:"
run 2 S help frobnicate
assert_contains "$ERR" "unknown command 'frobnicate'"

# env recipe, through configure; files are private
export APP_TOKEN_SRC="env-value-123"
t_canary env-value-123 file-secret-1 --held-by "$HOME/tok"
run 0 S configure APP_TOKEN --env APP_TOKEN_SRC
assert_eq "$(file_mode "$SJ")" 600 "secrets.json mode"
assert_eq "$(file_mode "$PI_CODING_AGENT_DIR")" 700 "agent dir mode"
run 0 S get APP_TOKEN
assert_eq "$OUT" "env-value-123"
run 0 S get -n APP_TOKEN
assert_eq "$(S get -n APP_TOKEN | od -An -c | tr -d ' \n')" "env-value-123" "no newline"

# command recipe
run 0 S configure CMD_TOKEN --command 'printf "  from-command \n"'
run 0 S get CMD_TOKEN
assert_eq "$OUT" "from-command" "trimmed stdout"

# file recipe: private files only
printf 'file-secret-1\nsecond line\n' >"$HOME/tok"
chmod 644 "$HOME/tok"
run 1 S configure FILE_TOKEN --file "$HOME/tok"
assert_contains "$ERR" "chmod 600"
assert_contains "$ERR" "nothing was changed"
chmod 600 "$HOME/tok"
run 0 S configure FILE_TOKEN --file "$HOME/tok"
run 0 S get FILE_TOKEN
assert_eq "$OUT" "file-secret-1"

# hand-written recipes: the older pi forms and the object form
cat >"$SJ" <<'JSON'
{
  "$schema": "https://example.invalid/secrets.schema.json",
  "APP_TOKEN": "APP_TOKEN_SRC",
  "CMD_TOKEN": "!echo bang-command",
  "OBJ": {"command": "echo obj-command", "ttl": "8h", "timeout": "5s", "description": "d"},
  "LIT": "literal:lit-value-xyz",
  "BAD_ENTRY": {"command": "echo x", "tll": "5m"},
  "ENVOBJ": {"env": "APP_TOKEN_SRC"}
}
JSON
chmod 600 "$SJ"
run 0 S get APP_TOKEN
assert_eq "$OUT" "env-value-123"
run 0 S get CMD_TOKEN
assert_eq "$OUT" "bang-command"
run 0 S get ENVOBJ
assert_eq "$OUT" "env-value-123"
# a bad entry does not take the good ones down, and says what is wrong with it
run 1 S get BAD_ENTRY
assert_contains "$ERR" "unknown key \"tll\""
run 0 S get OBJ
assert_eq "$OUT" "obj-command"

# the JSON answer
before=$(date +%s)
run 1 S resolve --json OBJ LIT APP_TOKEN BAD_ENTRY MISSING_ONE
assert_eq "$(json_get "$OUT" 'j.version')" 1
assert_eq "$(json_get "$OUT" 'j.secrets.OBJ.value')" "obj-command"
assert_eq "$(json_get "$OUT" 'j.secrets.OBJ.source')" "command"
exp=$(json_get "$OUT" 'j.secrets.OBJ.expires_at')
[ "$exp" -ge $((before + 8 * 3600 - 5)) ] && [ "$exp" -le $(($(date +%s) + 8 * 3600 + 1)) ] ||
    fail "OBJ expires_at $exp is not about 8h from now"
assert_eq "$(json_get "$OUT" 'j.secrets.LIT.source')" "literal"
assert_eq "$(json_get "$OUT" 'j.secrets.APP_TOKEN.expires_at')" "undefined" "env values do not expire"
assert_contains "$(json_get "$OUT" 'j.secrets.BAD_ENTRY.error')" "tll"
assert_contains "$(json_get "$OUT" 'j.secrets.MISSING_ONE.error')" "secrets configure MISSING_ONE"
assert_eq "$(json_get "$OUT" 'Object.keys(j.secrets).length')" 5
run 0 S resolve --json OBJ APP_TOKEN
run 0 S resolve OBJ
assert_contains "$OUT" "OBJ: resolved from command"
assert_not_contains "$OUT" "obj-command" "human resolve output"
run 2 S resolve --json
run 2 S resolve --json 'bad-name'
assert_contains "$ERR" "not a valid secret name"

# list: sources, ttl, status, notes; never values
export CMD_TOKEN=shadowing-env-value
run 0 S list
assert_contains "$OUT" "OBJ"
assert_contains "$OUT" "8h"
assert_contains "$OUT" "invalid: "
assert_contains "$OUT" "stored in secrets.json in clear" "literal warning"
assert_contains "$OUT" "environment variable CMD_TOKEN is also set" "shadow note"
assert_not_contains "$OUT" "lit-value-xyz" "list output"
assert_not_contains "$OUT" "obj-command" "list output"
assert_not_contains "$OUT" "env-value-123" "list output"
run 0 S list --json
assert_eq "$(json_get "$OUT" 'j.secrets.find(s => s.name === "CMD_TOKEN").environment_shadowed')" true
assert_eq "$(json_get "$OUT" 'j.secrets.find(s => s.name === "OBJ").ttl_seconds')" 28800
assert_eq "$(json_get "$OUT" 'j.secrets.find(s => s.name === "BAD_ENTRY").status')" invalid
assert_eq "$(json_get "$OUT" 'j.secrets.find(s => s.name === "LIT").literal')" true
assert_not_contains "$OUT" "lit-value-xyz" "list --json output"
# the recipe wins over the environment
run 0 S get CMD_TOKEN
assert_eq "$OUT" "bang-command"
unset CMD_TOKEN
# without a recipe, the environment answers
export ONLY_IN_ENV=from-env-only
run 0 S resolve --json ONLY_IN_ENV
assert_eq "$(json_get "$OUT" 'j.secrets.ONLY_IN_ENV.source')" environment

# exec: values in the environment, never on a command line
run 0 S exec OBJ APP_TOKEN -- sh -c 'printf "%s|%s" "$OBJ" "$APP_TOKEN"'
assert_eq "$OUT" "obj-command|env-value-123"
run 125 S exec MISSING_ONE -- sh -c 'echo should-not-run'
assert_not_contains "$OUT" "should-not-run"
run 127 S exec OBJ -- /nonexistent/command
run 7 S exec OBJ -- sh -c 'exit 7'
# our no-core-dump limit is not handed on: the command gets the limit we were started with
run 0 S exec OBJ -- sh -c 'ulimit -c'
assert_eq "$OUT" "$(ulimit -c)" "the command's core-dump limit"
run 125 S exec OBJ
assert_contains "$ERR" "-- CMD"

# remove
run 0 S remove OBJ
run 1 S get OBJ
run 1 S remove OBJ
assert_contains "$ERR" "has no recipe"
assert_contains "$(cat "$SJ")" '"$schema"' "unknown keys survive a rewrite"
assert_contains "$(cat "$SJ")" '"tll"' "a bad entry survives a rewrite untouched"

# names
run 2 S configure 'my-token' --env X
assert_contains "$ERR" "not a valid secret name"
run 2 S configure 9LIVES --env X
run 2 S get
run 2 S configure X
assert_contains "$ERR" "needs a source"
run 2 S configure X --env A --command B
assert_contains "$ERR" "choose one source"
run 2 S configure X --env HOME --ttl 5m
assert_contains "$ERR" "--ttl goes with --command"
run 2 S configure X --command true --ttl soon
assert_contains "$ERR" "not a duration"
run 2 S configure X --command true --timeout 0

# failures that must say why, and change nothing
cp "$SJ" "$T_ROOT/before.json"
run 1 S configure APP_TOKEN --command 'echo "it broke" >&2; exit 4'
assert_contains "$ERR" "exited with status 4: it broke"
run 1 S configure APP_TOKEN --command 'true'
assert_contains "$ERR" "printed nothing"
run 1 S configure APP_TOKEN --command 'no-such-command-xyz'
assert_contains "$ERR" "status 127"
run 1 S configure APP_TOKEN --env NOT_SET_ANYWHERE_XYZ
assert_contains "$ERR" "'NOT_SET_ANYWHERE_XYZ' is not set"
cmp -s "$SJ" "$T_ROOT/before.json" || fail "a failed configure changed secrets.json"
T_CHECKS=$((T_CHECKS + 1))

# malformed secrets.json: file, line, column; never overwritten
printf '{\n  "A": "env:X",\n  "B" "env:Y"\n}\n' >"$SJ"
chmod 600 "$SJ"
cp "$SJ" "$T_ROOT/bad.json"
run 3 S get A
assert_contains "$ERR" "secrets.json"
assert_contains "$ERR" "line 3"
run 3 S resolve --json A
run 3 S configure C --env HOME
cmp -s "$SJ" "$T_ROOT/bad.json" || fail "a malformed secrets.json was overwritten"
T_CHECKS=$((T_CHECKS + 1))
printf '[1, 2]\n' >"$SJ"
run 3 S list
assert_contains "$ERR" "top level must be an object"

# a secrets.json others can read is refused, with the fix
printf '{"A": "env:HOME"}\n' >"$SJ"
chmod 644 "$SJ"
run 3 S get A
assert_contains "$ERR" "chmod 600 '$SJ'"
chmod 600 "$SJ"
run 0 S get A

# ---- hardening: exit statuses, escaping, links, duplicates, the size limit ----
run 2 S get 'bad name'
assert_contains "$ERR" "'bad name' is not a valid secret name"
run 2 S help nosuchcommand
assert_contains "$ERR" "unknown command 'nosuchcommand'"
run 0 S help --help
assert_contains "$OUT" "help [COMMAND]"

# names and a command's stderr with terminal controls are shown escaped, never raw
ESC=$(printf '\033')
printf '{"\\u001b[2JFAKE": "env:HOME", "LOUD": "!printf \\"\\\\033[2Jcleared\\\\342\\\\200\\\\256evil\\" >&2; exit 1"}\n' >"$SJ"
chmod 600 "$SJ"
run 0 S list
assert_not_contains "$OUT" "$ESC" "list output"
assert_contains "$OUT" '\x1b[2JFAKE'
assert_contains "$OUT" '\x1b[2Jcleared\u{202e}evil'
run 1 S get LOUD
assert_not_contains "$ERR" "$ESC" "get's error"
assert_contains "$ERR" '\x1b[2Jcleared'
run 0 S list --json
assert_contains "$(json_get "$OUT" 'j.secrets.find((s) => s.name === "LOUD").error')" "${ESC}[2Jcleared"

# a symlinked secrets.json is refused, naming the target, without a chmod to run
printf '{"A": "env:HOME"}\n' >"$T_ROOT/real.json"
chmod 600 "$T_ROOT/real.json"
mv "$SJ" "$T_ROOT/old.json"
ln -s "$T_ROOT/real.json" "$SJ"
run 3 S get A
assert_contains "$ERR" "is a symbolic link to '$T_ROOT/real.json'"
assert_contains "$ERR" "replace the link by the file itself"
assert_not_contains "$ERR" "chmod"
run 3 S configure B --env HOME
cmp -s "$T_ROOT/real.json" <(printf '{"A": "env:HOME"}\n') || fail "the link's target was changed"
T_CHECKS=$((T_CHECKS + 1))
rm "$SJ"
cp "$T_ROOT/real.json" "$SJ"
chmod 600 "$SJ"

# a lock file that is a symbolic link is never followed
rm -f "$SJ.lock"
ln -s "$T_ROOT/planted" "$SJ.lock"
run 3 S configure B --env HOME
assert_contains "$ERR" "secrets.json.lock' is a symbolic link to '$T_ROOT/planted'"
[ ! -e "$T_ROOT/planted" ] || fail "the lock's link was followed"
T_CHECKS=$((T_CHECKS + 1))
rm "$SJ.lock"

# an agent directory others can enter is tightened at the next change
chmod 755 "$PI_CODING_AGENT_DIR"
run 0 S configure B --env HOME
assert_eq "$(file_mode "$PI_CODING_AGENT_DIR")" 700 "agent dir tightened"
# and at a read too, while it holds secrets.json
chmod 755 "$PI_CODING_AGENT_DIR"
run 0 S get B
assert_eq "$(file_mode "$PI_CODING_AGENT_DIR")" 700 "agent dir tightened by a read"

# duplicate keys: the name given twice does not resolve, the others do; no rewrite drops one
printf '{\n  "DUP": "env:HOME",\n  "OK": "env:HOME",\n  "DUP": "env:USER"\n}\n' >"$SJ"
chmod 600 "$SJ"
cp "$SJ" "$T_ROOT/dups.json"
run 1 S get DUP
assert_contains "$ERR" "'DUP' is given more than once (lines 2 and 4)"
run 0 S get OK
run 0 S list
assert_contains "$OUT" "given more than once"
run 3 S configure NEW --env HOME
assert_contains "$ERR" "has keys given twice: 'DUP' on lines 2 and 4"
assert_contains "$ERR" "remove the extra ones by hand"
run 3 S remove OK
cmp -s "$SJ" "$T_ROOT/dups.json" || fail "a file with duplicate keys was rewritten"
T_CHECKS=$((T_CHECKS + 1))

# a change that would make secrets.json bigger than its reader accepts is refused
node -e '
    const o = {};
    for (let i = 0; i < 8400; i++) o["N" + i] = "literal:" + "x".repeat(100);
    require("fs").writeFileSync(process.argv[1], JSON.stringify(o, null, 2) + "\n", {mode: 0o600});
' "$SJ"
cp "$SJ" "$T_ROOT/big.json"
run 1 S configure HUGE --command "echo $(head -c 100000 /dev/zero | tr '\0' a)"
assert_contains "$ERR" "more than the 1048576 bytes it may hold"
assert_contains "$ERR" "nothing was changed"
cmp -s "$SJ" "$T_ROOT/big.json" || fail "the over-limit change was written"
T_CHECKS=$((T_CHECKS + 1))
run 0 S get N1
