# A canary secret goes through every path of secrets - keychain, command, env, file, exec,
# errors, verbose logs - and must never appear in a log line, an error message, a file of
# ours, or any process's command line.
. "$(dirname "$0")/lib/keyring.sh"
. "$(dirname "$0")/lib/common.sh"

CANARY="canary-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
t_canary "$CANARY" --held-by "$T_ROOT/canary-file" --held-by "$T_ROOT/json-out" --held-by "$T_ROOT/leaky-json"
printf '%s\n' "$CANARY" >"$T_ROOT/canary-file"
chmod 600 "$T_ROOT/canary-file"
LOG="$T_ROOT/all-stderr"
: >"$LOG"
SCAN="$T_ROOT/cmdlines"
: >"$SCAN"

# every command line on the machine, while secrets runs
scan_cmdlines() {
    for p in /proc/[0-9]*; do tr '\0' ' ' <"$p/cmdline" 2>/dev/null; echo; done >>"$SCAN"
}
export -f scan_cmdlines
export SCAN

v() { # run secrets verbosely, collecting stderr
    "$SECRETS_BIN" -v -v "$@" 2>>"$LOG"
}

printf '%s' "$CANARY" | v configure C_KEY --keychain
v configure C_CMD --command "bash -c 'scan_cmdlines; cat $T_ROOT/canary-file'" --ttl 0
v configure C_FILE --file "$T_ROOT/canary-file"
export C_SRC="$CANARY"
v configure C_ENV --env C_SRC
unset C_SRC

out=$(v get C_KEY)
assert_eq "$out" "$CANARY" "keychain value"
out=$(v get C_CMD)
assert_eq "$out" "$CANARY" "command value"
v resolve C_KEY C_CMD C_FILE >/dev/null
v list >"$T_ROOT/list-out"
v list --json >>"$T_ROOT/list-out"
v resolve --json C_KEY C_CMD C_FILE >"$T_ROOT/json-out"
assert_contains "$(cat "$T_ROOT/json-out")" "$CANARY" "the JSON answer (the one place values belong)"

# errors that could quote the value: a command that prints it on stderr and fails, after the
# value was resolved once in the same process
printf '{"C_KEY": "keychain:C_KEY", "LEAKY": "!cat %s >&2; exit 3"}\n' "$T_ROOT/canary-file" \
    >"$PI_CODING_AGENT_DIR/secrets.json"
chmod 600 "$PI_CODING_AGENT_DIR/secrets.json"
v resolve --json C_KEY LEAKY >"$T_ROOT/leaky-json" || true
assert_contains "$(cat "$T_ROOT/leaky-json")" "[REDACTED:C_KEY]" "the redacted error"
leaky_error=$(node -e 'const j=JSON.parse(require("fs").readFileSync(0,"utf8")); process.stdout.write(j.secrets.LEAKY.error)' <"$T_ROOT/leaky-json")
assert_not_contains "$leaky_error" "$CANARY" "LEAKY's error message"
v resolve C_KEY LEAKY >/dev/null || true

# exec: the value reaches the child's environment, and no command line
printf '{"C_KEY": "keychain:C_KEY"}\n' >"$PI_CODING_AGENT_DIR/secrets.json"
out=$(v exec C_KEY -- bash -c 'scan_cmdlines; printf "%s" "$C_KEY"')
assert_eq "$out" "$CANARY" "exec child environment"
# a command recipe's child does not get our secrets in its environment
printf '{"C_KEY": "keychain:C_KEY", "PEEK": "!env"}\n' >"$PI_CODING_AGENT_DIR/secrets.json"
out=$(v resolve --json C_KEY PEEK)
peek=$(node -e 'const j=JSON.parse(require("fs").readFileSync(0,"utf8")); process.stdout.write(j.secrets.PEEK.value)' <<<"$out")
assert_not_contains "$peek" "$CANARY" "a command recipe's environment"

[ -s "$SCAN" ] || fail "the command-line scan recorded nothing"
assert_not_contains "$(cat "$SCAN")" "$CANARY" "command lines of every process"
[ -s "$LOG" ] || fail "verbose runs logged nothing"
assert_not_contains "$(cat "$LOG")" "$CANARY" "stderr of every verbose run"
assert_not_contains "$(cat "$T_ROOT/list-out")" "$CANARY" "list output"
if grep -rqF "$CANARY" "$PI_CODING_AGENT_DIR"; then fail "the canary was written to the agent directory"; fi
T_CHECKS=$((T_CHECKS + 1))
