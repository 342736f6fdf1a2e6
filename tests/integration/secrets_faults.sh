# secrets: faults during a save lose nothing. `kill -9` of `secrets configure` 100 times while
# it writes secrets.json: the file always parses and holds the old or the new content, and the
# temporaries a killed writer leaves are gone after the next run. A full disk and a read-only
# directory (a small tmpfs of its own, in a private mount namespace): the old file intact, a
# clear error. A rename that fails (tests/tools/faultinject.c) likewise.
. "$(dirname "$0")/lib/common.sh"

SJ="$PI_CODING_AGENT_DIR/secrets.json"

# temporaries of secrets.json in the agent directory
temps() {
    local f n=0
    for f in "$PI_CODING_AGENT_DIR"/.secrets.json.*; do
        [ -e "$f" ] && n=$((n + 1))
    done
    echo "$n"
}

# check_keys FILE: FILE parses, as JSON, and holds exactly the keys listed in $T_ROOT/keys (one
# a line); says only what differs.
check_keys() {
    node -e '
        const fs = require("fs");
        const j = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
        const want = new Set(fs.readFileSync(process.argv[2], "utf8").split("\n").filter(Boolean));
        const got = new Set(Object.keys(j));
        const missing = [...want].filter((k) => !got.has(k)), extra = [...got].filter((k) => !want.has(k));
        if (missing.length || extra.length) {
            console.error("missing: " + missing.slice(0, 10).join(" ") + "; extra: " + extra.slice(0, 10).join(" "));
            process.exit(1);
        }
    ' "$1" "$T_ROOT/keys"
}

# ---- kill -9 during configure, 100 times ----
# A file of 3000 other recipes (about 200 KB) makes each save take a while; half of the kills wait
# for the temporary to appear (the save has begun), the others land at a random point of a run.
mkdir -p "$PI_CODING_AGENT_DIR" && chmod 700 "$PI_CODING_AGENT_DIR"
node -e '
    const o = {};
    for (let i = 0; i < 3000; i++) o["FILLER_" + i] = "env:FILLER_SOURCE_VARIABLE_" + i;
    require("fs").writeFileSync(process.argv[1], JSON.stringify(o, null, 2) + "\n", {mode: 0o600});
' "$SJ"
chmod 600 "$SJ"
export FAULT_SRC="fault-value"
seq 0 2999 | sed 's/^/FILLER_/' >"$T_ROOT/keys"

# how long one configure takes here, for the random delays
t0=$(date +%s%N)
run 0 S configure WARMUP --env FAULT_SRC
t1=$(date +%s%N)
echo WARMUP >>"$T_ROOT/keys"
check_keys "$SJ" || fail "the first save lost a recipe"
T_CHECKS=$((T_CHECKS + 1))
span_us=$(((t1 - t0) / 1000))
[ "$span_us" -gt 0 ] || span_us=1000

# a sleep of a few milliseconds without a process per call: read with a timeout from a FIFO that
# never has data
mkfifo "$T_ROOT/never"
exec 9<>"$T_ROOT/never"
killed_mid_save=0
survived=0
end=$(($(date +%s) + 240))
for i in $(seq 1 100); do
    [ "$(date +%s)" -lt "$end" ] || fail "the kill -9 loop did not finish within 240 s (at $i)"
    cp "$SJ" "$T_ROOT/before.json"
    if [ $((i % 2)) -eq 0 ]; then
        # its rename held (tests/tools/faultinject.c) so that the kill lands between the
        # temporary written and the rename, the moment a save is most exposed
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
            FAULT_RENAME_SUFFIX=secrets.json FAULT_RENAME_DELAY_MS=10000 LD_PRELOAD="$FAULTINJECT_LIB" \
            "$SECRETS_BIN" configure "K_$i" --env FAULT_SRC 2>/dev/null &
    else
        "$SECRETS_BIN" configure "K_$i" --env FAULT_SRC 2>/dev/null &
    fi
    pid=$!
    if [ $((i % 2)) -eq 0 ]; then
        # wait (bounded) for this writer's temporary, then kill it mid-save
        limit=$(($(date +%s%N) + 5000000000))
        while ! compgen -G "$PI_CODING_AGENT_DIR/.secrets.json.$pid.*" >/dev/null &&
            kill -0 "$pid" 2>/dev/null && [ "$(date +%s%N)" -lt "$limit" ]; do
            read -r -t 0.002 -u 9 _ || true
        done
    else
        sleep "$(printf '0.%06d' $((RANDOM * 32768 % span_us)))"
    fi
    kill -9 "$pid" 2>/dev/null || true
    rc=0
    wait "$pid" 2>/dev/null || rc=$?
    [ "$rc" -eq 137 ] || survived=$((survived + 1))
    # a temporary of the killed writer still there: the kill landed during the save
    for f in "$PI_CODING_AGENT_DIR"/.secrets.json."$pid".*; do
        [ -e "$f" ] && killed_mid_save=$((killed_mid_save + 1))
    done
    # the old content, byte for byte (checked when it was new), or the new one
    if ! cmp -s "$SJ" "$T_ROOT/before.json"; then
        echo "K_$i" >>"$T_ROOT/keys"
        check_keys "$SJ" || fail "iteration $i: secrets.json is neither the old nor the new content"
    fi
    T_CHECKS=$((T_CHECKS + 1))
    # the product's own reader reads it too
    [ $((i % 10)) -ne 0 ] || run 0 S get WARMUP
done
echo "kills during a save: $killed_mid_save; runs that finished before the kill: $survived"
[ "$killed_mid_save" -ge 10 ] || fail "only $killed_mid_save of 100 kills landed during a save: the test proves too little"
T_CHECKS=$((T_CHECKS + 1))

# the next run removes what the killed writers left (each a full copy of the recipes)
run 0 S configure AFTER --env FAULT_SRC
echo AFTER >>"$T_ROOT/keys"
assert_eq "$(temps)" 0 "temporaries left after the next run"
check_keys "$SJ" || fail "the final secrets.json lost a recipe"
T_CHECKS=$((T_CHECKS + 1))
run 0 S get AFTER
assert_eq "$OUT" "fault-value"

# a live writer's temporary is never taken for a stale one: one named with the pid of a process
# that is alive survives the next save, and goes with the first save after that process ended
sleep 300 &
live=$!
printf 'live copy\n' >"$PI_CODING_AGENT_DIR/.secrets.json.$live.Ab12Cd"
run 0 S configure AFTER2 --env FAULT_SRC
assert_eq "$(cat "$PI_CODING_AGENT_DIR/.secrets.json.$live.Ab12Cd")" "live copy" "a live writer's temporary"
kill "$live"
wait "$live" 2>/dev/null || true
run 0 S configure AFTER3 --env FAULT_SRC
assert_eq "$(temps)" 0 "the temporary of a writer that is gone"

# ---- a rename that fails (EIO): old file intact, no temporary ----
cp "$SJ" "$T_ROOT/before.json"
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" FAULT_RENAME_SUFFIX=secrets.json \
    LD_PRELOAD="$FAULTINJECT_LIB" run 1 S configure RENAME_FAIL --env FAULT_SRC
assert_contains "$ERR" "cannot replace it: Input/output error"
assert_contains "$ERR" "nothing was changed"
cmp -s "$SJ" "$T_ROOT/before.json" || fail "a failed rename changed secrets.json"
T_CHECKS=$((T_CHECKS + 1))
assert_eq "$(temps)" 0 "temporaries after a failed rename"

# ---- disk full and read-only, on a small filesystem of their own ----
# In a private mount namespace (root in the test environment, as for unshare -n elsewhere): a
# 256 KiB tmpfs is really full, and really read-only after a remount.
command -v unshare >/dev/null || fail "unshare is needed for the disk-full test"
FS_OUT="$T_ROOT/fs.out"
FS_DIR="$T_ROOT/small" SECRETS_BIN="$SECRETS_BIN" unshare -m bash -c '
    set -eu
    mkdir -p "$FS_DIR"
    mount -t tmpfs -o size=256k,mode=0700 tmpfs "$FS_DIR"
    export PI_CODING_AGENT_DIR="$FS_DIR/agent"
    mkdir -m 700 "$PI_CODING_AGENT_DIR"
    SJ="$PI_CODING_AGENT_DIR/secrets.json"
    say() { printf "%s\n" "$*"; }
    rc=0; "$SECRETS_BIN" configure FIRST --env FAULT_SRC 2>&1 || rc=$?
    say "first: $rc"
    # a recipe of about 100 KB leaves no room for a second copy of the file
    big=$(head -c 100000 /dev/zero | tr "\0" a)
    rc=0; "$SECRETS_BIN" configure BIG --description "$big" --env FAULT_SRC 2>&1 || rc=$?
    say "big: $rc"
    cp "$SJ" "$FS_DIR/../before.json"
    # fill what is left
    dd if=/dev/zero of="$FS_DIR/filler" bs=4k 2>/dev/null || true
    rc=0; "$SECRETS_BIN" configure FULL --env FAULT_SRC 2>"$FS_DIR/../full.err" || rc=$?
    say "full: $rc"
    cmp -s "$SJ" "$FS_DIR/../before.json" && say "full-intact: yes"
    ls -a "$PI_CODING_AGENT_DIR" | grep -c "^\.secrets\.json\." | sed "s/^/full-temps: /" || true
    rc=0; "$SECRETS_BIN" get BIG >/dev/null 2>&1 || rc=$?
    say "full-get: $rc"
    rm -f "$FS_DIR/filler"
    mount -o remount,ro "$FS_DIR"
    rc=0; "$SECRETS_BIN" configure RO --env FAULT_SRC 2>"$FS_DIR/../ro.err" || rc=$?
    say "ro: $rc"
    cmp -s "$SJ" "$FS_DIR/../before.json" && say "ro-intact: yes"
    rc=0; "$SECRETS_BIN" get FIRST 2>&1 || rc=$?
    say "ro-get: $rc"
    mount -o remount,rw "$FS_DIR"
    rc=0; "$SECRETS_BIN" configure AGAIN --env FAULT_SRC 2>&1 || rc=$?
    say "again: $rc"
    ls -a "$PI_CODING_AGENT_DIR" | grep -c "^\.secrets\.json\." | sed "s/^/again-temps: /" || true
    umount "$FS_DIR"
' >"$FS_OUT" 2>&1 || fail "the disk-full test could not run: $(cat "$FS_OUT")"
FS=$(cat "$FS_OUT")
assert_contains "$FS" "first: 0"
assert_contains "$FS" "big: 0"
assert_contains "$FS" "full: 1"
assert_contains "$FS" "full-intact: yes" "the old file after a full disk"
assert_contains "$FS" "full-temps: 0"
assert_contains "$FS" "full-get: 0"
FULL_ERR=$(cat "$T_ROOT/full.err")
assert_contains "$FULL_ERR" "cannot write '"
assert_contains "$FULL_ERR" "No space left on device"
assert_contains "$FULL_ERR" "nothing was changed"
assert_contains "$FS" "ro: 1"
assert_contains "$FS" "ro-intact: yes" "the old file on a read-only filesystem"
assert_contains "$FS" "fault-value"
assert_contains "$FS" "ro-get: 0"
RO_ERR=$(cat "$T_ROOT/ro.err")
assert_contains "$RO_ERR" "Read-only file system"
assert_contains "$RO_ERR" "nothing was changed"
assert_contains "$FS" "again: 0"
assert_contains "$FS" "again-temps: 0"
