# secrets: command TTLs (same value and expiry within the TTL, a fresh run after it), TTL 0,
# and timeouts that kill the command's whole process group.
. "$(dirname "$0")/lib/common.sh"

COUNTER="$T_ROOT/count"
echo 0 >"$COUNTER"
# a command that counts its runs and answers with the count
cat >"$T_ROOT/counting" <<EOF2
#!/bin/sh
n=\$(( \$(cat "$COUNTER") + 1 ))
echo "\$n" > "$COUNTER"
echo "value-\$n"
EOF2
chmod +x "$T_ROOT/counting"

# (expiry has one-second granularity: a 5 s TTL leaves at least 4 s for the checks below)
run 0 S configure COUNTED --command "$T_ROOT/counting" --ttl 5s
assert_eq "$(cat "$COUNTER")" 1 "configure test-runs the command once"

run 0 S resolve --json COUNTED
first_value=$(json_get "$OUT" 'j.secrets.COUNTED.value')
first_exp=$(json_get "$OUT" 'j.secrets.COUNTED.expires_at')
run 0 S resolve --json COUNTED
assert_eq "$(json_get "$OUT" 'j.secrets.COUNTED.value')" "$first_value" "value within the TTL"
assert_eq "$(json_get "$OUT" 'j.secrets.COUNTED.expires_at')" "$first_exp" "expiry within the TTL"
run 0 S get COUNTED
assert_eq "$OUT" "$first_value"
assert_eq "$(cat "$COUNTER")" 1 "no run within the TTL"

# after the expiry, a resolution runs the command again and reports a later expiry
past() { [ "$(date +%s)" -ge "$1" ]; }
wait_until 15 "the TTL to run out" past "$first_exp"
run 0 S resolve --json COUNTED
assert_eq "$(cat "$COUNTER")" 2 "one more run after the TTL"
assert_eq "$(json_get "$OUT" 'j.secrets.COUNTED.value')" "value-2"
second_exp=$(json_get "$OUT" 'j.secrets.COUNTED.expires_at')
[ "$second_exp" -gt "$first_exp" ] || fail "expiry did not move: $second_exp <= $first_exp"

# --no-cache forces a run
run 0 S resolve --json --no-cache COUNTED
assert_eq "$(cat "$COUNTER")" 3

# changing the recipe never serves the old value
run 0 S configure COUNTED --command "$T_ROOT/counting" --ttl 1h
assert_eq "$(cat "$COUNTER")" 4
run 0 S get COUNTED
assert_eq "$OUT" "value-4"
assert_eq "$(cat "$COUNTER")" 4

# TTL 0: every time, and the answer says it is already stale
run 0 S configure EVERY --command "$T_ROOT/counting" --ttl 0
run 0 S get EVERY
run 0 S get EVERY
assert_eq "$(cat "$COUNTER")" 7
now=$(date +%s)
run 0 S resolve --json EVERY
exp=$(json_get "$OUT" 'j.secrets.EVERY.expires_at')
[ "$exp" -le $((now + 1)) ] || fail "ttl 0 must expire at once, got $exp (now $now)"
T_CHECKS=$((T_CHECKS + 1))

# without a private runtime directory there is no cache: every resolution runs the command
XDG_RUNTIME_DIR= run 0 S get COUNTED
XDG_RUNTIME_DIR= run 0 S get COUNTED
assert_eq "$(cat "$COUNTER")" 10
# nor with a runtime directory on persistent storage: values never go to disk
disk_rt="$T_ROOT/disk-run"
mkdir -m 700 "$disk_rt"
XDG_RUNTIME_DIR="$disk_rt" run 0 S get COUNTED
XDG_RUNTIME_DIR="$disk_rt" run 0 S get COUNTED
assert_eq "$(cat "$COUNTER")" 12
assert_eq "$(ls -A "$disk_rt")" "" "a disk-backed runtime directory"
# nor with one in memory that others can reach
open_rt="$XDG_RUNTIME_DIR/open-run"
mkdir -m 750 "$open_rt"
XDG_RUNTIME_DIR="$open_rt" run 0 S get COUNTED
XDG_RUNTIME_DIR="$open_rt" run 0 S get COUNTED
assert_eq "$(cat "$COUNTER")" 14
assert_eq "$(ls -A "$open_rt")" "" "a runtime directory others can reach"
rmdir "$open_rt"
# the cache holds values only in the runtime directory, privately
for f in "$XDG_RUNTIME_DIR"/credkit-secrets/*; do
    case "$f" in *.lock) continue ;; esac
    assert_eq "$(file_mode "$f")" 600 "cache entry mode"
done
assert_eq "$(file_mode "$XDG_RUNTIME_DIR/credkit-secrets")" 700 "cache dir mode"
if grep -rq "value-" "$PI_CODING_AGENT_DIR"; then fail "a command's value was written to the agent directory"; fi

# concurrent resolvers run an expired command once
run 0 S configure SLOWCOUNT --command "sleep 0.3; $T_ROOT/counting" --ttl 1h
before=$(cat "$COUNTER")
XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" bash -c '
  for i in 1 2 3 4; do "$SECRETS_BIN" resolve --json --no-cache SLOWCOUNT >/dev/null & done; wait'
after=$(cat "$COUNTER")
[ $((after - before)) -le 4 ] || fail "--no-cache resolutions ran more than once each"
T_CHECKS=$((T_CHECKS + 1))
"$SECRETS_BIN" resolve --json SLOWCOUNT >/dev/null
cache_dir="$XDG_RUNTIME_DIR/credkit-secrets"
rm -f "$cache_dir"/[0-9a-f]*[0-9a-f]
before=$(cat "$COUNTER")
bash -c 'for i in 1 2 3 4 5 6; do "$SECRETS_BIN" get SLOWCOUNT >/dev/null & done; wait'
assert_eq "$(cat "$COUNTER")" $((before + 1)) "six concurrent resolutions of an expired entry run the command once"

# a command that hangs is killed at its timeout, with everything it started
PIDFILE="$T_ROOT/grandchild.pid"
cat >"$PI_CODING_AGENT_DIR/secrets.json" <<JSON
{"HANGS": {"command": "sleep 300 & echo \$! > $PIDFILE; wait", "timeout": "1s"}}
JSON
start=$(date +%s)
run 1 S get HANGS
assert_contains "$ERR" "did not finish within 1s and was killed"
[ $(($(date +%s) - start)) -lt 6 ] || fail "the timeout took too long"
gc=$(cat "$PIDFILE")
[ -n "$gc" ] || fail "the command did not record its grandchild"
grandchild_gone() { ! kill -0 "$gc" 2>/dev/null || grep -q '^State:.*Z' "/proc/$gc/status" 2>/dev/null; }
wait_until 5 "the grandchild $gc to be killed" grandchild_gone

# a command that ignores SIGTERM is killed all the same
cat >"$PI_CODING_AGENT_DIR/secrets.json" <<JSON
{"STUBBORN": {"command": "trap '' TERM; sleep 300 & echo \$! > $PIDFILE; while :; do sleep 1; done", "timeout": "1s"}}
JSON
run 1 S get STUBBORN
gc=$(cat "$PIDFILE")
wait_until 5 "the stubborn grandchild $gc to be killed" grandchild_gone

# secrets itself stopped (SIGTERM) while a command runs: the command's group goes down with it
rm -f "$PIDFILE"
cat >"$PI_CODING_AGENT_DIR/secrets.json" <<JSON
{"SLOW": {"command": "sleep 300 & echo \$! > $PIDFILE; wait", "timeout": "5m"}}
JSON
"$SECRETS_BIN" get SLOW >/dev/null 2>&1 &
spid=$!
has_pidfile() { [ -s "$PIDFILE" ]; }
wait_until 10 "the command to start" has_pidfile
gc=$(cat "$PIDFILE")
kill -TERM "$spid"
rc=0
wait "$spid" || rc=$?
assert_eq "$rc" 143 "secrets' status after SIGTERM"
wait_until 5 "the command's grandchild $gc to be killed with secrets" grandchild_gone
