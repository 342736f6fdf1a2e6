# secrets configure, guided, through a real pseudo-terminal: every source, echo off for the
# value, a wrong answer, and Ctrl-C that changes nothing.
. "$(dirname "$0")/lib/keyring.sh"
. "$(dirname "$0")/lib/common.sh"

: "${PTYDRIVE_BIN:?PTYDRIVE_BIN must point at the ptydrive tool (ctest sets it)}"

# drive SCRIPT_TEXT ARGS...: runs "secrets ARGS" on a pty with the script; transcript in $OUT.
drive() { pty_drive "$1" "$SECRETS_BIN" "${@:2}"; }
t_canary typed-secret-value-4242 flag-typed-value-77

# keychain: the value is typed with echo off and never shown
drive 'expect Choose 1-4: 
sendline 9
expect please answer 1, 2, 3 or 4
expect Choose 1-4: 
sendline 1
expect Value for GUIDED_KEY (input hidden): 
sendline typed-secret-value-4242
expect saved
noecho typed-secret-value-4242
wait 0' configure GUIDED_KEY
assert_contains "$OUT" "keychain"
assert_not_contains "$OUT" "typed-secret-value-4242" "the terminal transcript"
run 0 S get GUIDED_KEY
assert_eq "$OUT" "typed-secret-value-4242"
run 0 S resolve --json GUIDED_KEY
assert_eq "$(json_get "$OUT" 'j.secrets.GUIDED_KEY.source')" keychain

# command: entered, test-run, masked result shown, TTL asked
drive 'expect Choose 1-4: 
sendline command
expect Command (run with /bin/sh -c): 
sendline echo guided-command-value-0123456789
expect [5m]: 
sendline 1h
expect running the command to test it
expect resolved: gui... (31 characters)
expect saved
wait 0' configure GUIDED_CMD
run 0 S get GUIDED_CMD
assert_eq "$OUT" "guided-command-value-0123456789"
run 0 S list --json
assert_eq "$(json_get "$OUT" 'j.secrets.find(s => s.name === "GUIDED_CMD").ttl_seconds')" 3600

# environment variable, with the name offered as the default
export GUIDED_ENV=from-the-environment
drive 'expect Choose 1-4: 
sendline 3
expect Environment variable [GUIDED_ENV]: 
sendline 
expect saved
wait 0' configure GUIDED_ENV
run 0 S list --json
assert_eq "$(json_get "$OUT" 'j.secrets.find(s => s.name === "GUIDED_ENV").source')" env

# file
printf 'file-line-1\n' >"$HOME/f"
chmod 600 "$HOME/f"
drive "expect Choose 1-4: 
sendline 4
expect Path of the file: 
sendline $HOME/f
expect saved
wait 0" configure GUIDED_FILE
run 0 S get GUIDED_FILE
assert_eq "$OUT" "file-line-1"

# a failing command is reported and nothing is saved
drive 'expect Choose 1-4: 
sendline 2
expect Command (run with /bin/sh -c): 
sendline echo nope >&2; exit 5
expect [5m]: 
sendline 
expect exited with status 5: nope
expect nothing was changed
wait 1' configure GUIDED_FAIL
run 1 S get GUIDED_FAIL

# Ctrl-C at the hidden prompt: cancelled, the old value stays
drive 'expect Choose 1-4: 
sendline 1
expect (input hidden): 
send half-typed\x03
expect cancelled; nothing was changed
wait 130' configure GUIDED_KEY
run 0 S get GUIDED_KEY
assert_eq "$OUT" "typed-secret-value-4242"

# --keychain on a terminal asks for the value with echo off, too
drive 'expect Value for FLAG_KEY (input hidden): 
sendline flag-typed-value-77
wait 0' configure FLAG_KEY --keychain
assert_not_contains "$OUT" "flag-typed-value-77" "the terminal transcript"
run 0 S get FLAG_KEY
assert_eq "$OUT" "flag-typed-value-77"
