# mcp-auth under faults, with a real authorization server (oidc-provider, auth-server.mjs) in
# front of real MCP servers that check its JWTs (mcp-resource-server.mjs), signed in through
# the real headless browser:
#   1. kill -9 during a token write, 100 times (refreshes with --refresh): at the write's
#      syscalls (strace delivers SIGKILL on entering the temporary's write, its fsync, the
#      rename and the directory's fsync), and at random moments from the shell. After every
#      kill the entry parses and holds the old content or the new, with its refresh token; the
#      next write removes the dead writer's temporary; none is left at the end; the grant works.
#   2. a full disk and a read-only store (a tmpfs in a private mount namespace) during a
#      refresh: a clear error, the old file intact byte for byte, no temporary left; a token
#      that is still valid is still handed out.
#   3. the authorization server unreachable during refresh, through the bridge (the SDK's
#      Client on `mcp-bridge serve`, calling every 200 ms): the unexpired token keeps working,
#      then the calls fail saying why, then they succeed again once it is back, with no
#      restart and no new sign-in.
#
# auth_faults.sh [file|keyring]: the token store's backend under test (default file). With
# keyring (registered as integration/auth_faults_keyring) the secrets are in one item of a real
# gnome-keyring in a private D-Bus session, the rest in the entry file: the same faults, judged
# on the entry as mcp-auth reads it (the file with the item's secrets); the kills at the file's
# syscalls come after the item was written (none is "old" then), and the tmpfs store gets its
# own copy of the item.
BACKEND=${1:-file}
case $BACKEND in
file) ;;
keyring) . "$(dirname "$0")/lib/keyring.sh" ;;
*) echo "usage: auth_faults.sh [file|keyring]" >&2; exit 2 ;;
esac
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"
export MCP_AUTH_STORE=$BACKEND

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"

A() { "$MCP_AUTH_BIN" "$@"; }
export BROWSER="node $PEERS_DIR/browser.mjs"
export BROWSER_LOG="$T_ROOT/browser.log"
ms_now() { echo $(($(date +%s%N) / 1000000)); }

# Refresh tokens do not rotate here: a kill after the server answered but before the new
# refresh token reached the disk would otherwise leave a consumed one in the file, which is
# the authorization server's rule, not the write's - the write is what is under test.
start_peer auth-server --access-ttl 8 --rotate-refresh never --quiet
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
RS=$PEER_URL
case "$RS" in */mcp) ;; *) RS="$RS/mcp" ;; esac
mkdir -p "$PI_CODING_AGENT_DIR"
CONFIG="$PI_CODING_AGENT_DIR/mcp.json"
# (a request timeout of 8 s: a call the bridge holds while it reconnects ends within a bound)
printf '{"mcpServers": {"rs": {"url": "%s", "auth": "oauth", "timeout": 8000}}}\n' "$RS" >"$CONFIG"
STORE="$PI_CODING_AGENT_DIR/oauth"
run 0 A login rs --timeout 90s
assert_contains "$ERR" "signed in to $RS"
entries=("$STORE"/[0-9a-f]*.json)
assert_eq "${#entries[@]}" 1 "entry files"
ENTRY=${entries[0]}
if [ "$BACKEND" = keyring ]; then
    assert_eq "$(json_get "$(cat "$ENTRY")" 'j.tokens?.refresh_token')" undefined "the file's refresh token"
fi
# snapshot DEST: the entry as mcp-auth reads it: the file, with (keyring) the item's secrets
# for it in place of its generation
snapshot() {
    if [ "$BACKEND" = file ]; then
        cp "$ENTRY" "$1"
        return
    fi
    secret-tool lookup xdg:schema org.credkit.TokenStore store "$STORE" >"$1.item" 2>/dev/null ||
        : >"$1.item"
    node -e '
        const fs = require("fs"), path = require("path");
        const [file, item, out] = process.argv.slice(1);
        const j = JSON.parse(fs.readFileSync(file, "utf8"));
        let v = {};
        try { v = JSON.parse(fs.readFileSync(item, "utf8")); } catch { v = {}; }
        const ent = v.entries?.[path.basename(file)];
        if (j.keyring && ent) {
            for (const s of ["registration", "tokens"]) if (ent[s]) j[s] = { ...j[s], ...ent[s] };
            delete j.keyring;
        }
        fs.writeFileSync(out, JSON.stringify(j, null, 2));' "$ENTRY" "$1.item" "$1"
    rm -f "$1.item"
}
temps() { find "$STORE" -maxdepth 1 -name '.*.json.*' -printf '%f\n' | sort; }
# initialize against the MCP server with the header mcp-auth gives; prints the HTTP status
mcp_status() {
    curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$RS" \
        -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
        -H "$1" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
}

# ---- 1. kill -9 during a token write ----
# Each run's outcome is kept (the entry, the one before, the temporaries beside it) and judged
# at the end, in one go.
cat >"$T_ROOT/check.mjs" <<'EOF'
// check.mjs DIR N: for each run i in 1..N, DIR/i.meta holds "WANT PID": DIR/i.entry (the entry
// after the kill) parses, is version 1 with both tokens, and is DIR/i.old (WANT old), another
// content (new) or either (any); every temporary in DIR/i.temps is PID's, the killed writer's
// (the earlier ones were removed by its write), unless PID is "-". Prints a tally.
import { readFileSync } from 'node:fs';
const [dir, n] = process.argv.slice(2);
const tally = {};
let failed = 0;
for (let i = 1; i <= Number(n); i++) {
  const [want, pid] = readFileSync(`${dir}/${i}.meta`, 'utf8').trim().split(' ');
  const text = readFileSync(`${dir}/${i}.entry`, 'utf8');
  const bad = (m) => { console.log(`FAIL run ${i} (${want}): ${m}`); failed++; };
  let j;
  try { j = JSON.parse(text); } catch (e) { bad(`the entry does not parse: ${e.message}`); continue; }
  if (j.version !== 1) bad('not version 1');
  if (typeof j.tokens?.refresh_token !== 'string' || !j.tokens.refresh_token) bad('the refresh token is gone');
  if (typeof j.tokens?.access_token !== 'string' || !j.tokens.access_token) bad('the access token is gone');
  const same = text === readFileSync(`${dir}/${i}.old`, 'utf8');
  if (want === 'old' && !same) bad('the entry changed, though the writer died before its rename');
  if (want === 'new' && same) bad('the entry is the old one, though the writer died after its rename');
  if (pid !== '-') {
    for (const f of readFileSync(`${dir}/${i}.temps`, 'utf8').split('\n').filter(Boolean)) {
      const m = /^\..*\.json\.(\d+)\.[A-Za-z0-9]{6}$/.exec(f);
      if (!m || m[1] !== pid) bad(`a temporary of another writer is there: ${f}`);
    }
  }
  const k = `${want}:${same ? 'old' : 'new'}`;
  tally[k] = (tally[k] ?? 0) + 1;
}
console.log(JSON.stringify(tally));
process.exit(failed ? 1 : 0);
EOF
HAVE_STRACE=0
command -v strace >/dev/null && HAVE_STRACE=1
[ "$HAVE_STRACE" = 1 ] || echo "note: strace is missing: every kill is a kill -9 at a random moment"
# one clean refresh: how long a run takes (the range of the random kills)
t0=$(ms_now)
run 0 A header --refresh rs
RUN_MS=$(($(ms_now) - t0))
K="$T_ROOT/kills"
mkdir -p "$K"
killed=0
for i in $(seq 1 100); do
    snapshot "$K/$i.old"
    mode=$((i % 5))
    [ "$HAVE_STRACE" = 1 ] || mode=4
    case $mode in
    0) at=write:when=1 want=old ;;  # the temporary's content
    1) at=fsync:when=1 want=old ;;  # the temporary written, not yet flushed
    2) at=rename:when=1 want=old ;; # flushed, not yet in place
    3) at=fsync:when=2 want=new ;;  # in place, the directory not yet flushed
    4) at="" want=any ;;
    esac
    # keyring: the item holds the new secrets before the file is written (the file's write()
    # is not the process's first one: D-Bus writes before it)
    if [ "$BACKEND" = keyring ]; then
        case $mode in
        0) at="" want=any ;;
        1 | 2) want=any ;;
        esac
    fi
    rc=0
    if [ -n "$at" ]; then
        # SIGKILL on entering the syscall: the process dies there, as under kill -9
        # (the braces keep bash's "Killed" notice out of the test's output)
        { strace -qq -o /dev/null -e trace="${at%%:*}" -e inject="${at%%:*}:signal=KILL:${at#*:}" \
            "$MCP_AUTH_BIN" header --refresh rs >/dev/null 2>"$T_ROOT/kill.err"; } 2>/dev/null || rc=$?
        [ "$rc" = 137 ] || fail "run $i (kill at $at) exited $rc, not killed: $(cat "$T_ROOT/kill.err")"
        temps >"$K/$i.temps"
        # the writer was strace's child: its pid is in the name of the temporary it left
        wpid=$(sed -n 's/^\..*\.json\.\([0-9]*\)\.[A-Za-z0-9]*$/\1/p' "$K/$i.temps" | tail -1)
        if [ "$mode" = 3 ]; then
            wpid=-
        elif [ -z "$wpid" ]; then
            fail "run $i (kill at $at) left no temporary: it was not killed in the write"
        fi
    else
        "$MCP_AUTH_BIN" header --refresh rs >/dev/null 2>"$T_ROOT/kill.err" &
        pid=$!
        d=$((RANDOM % (RUN_MS + 1)))
        sleep "$((d / 1000)).$(printf '%03d' $((d % 1000)))" # when to kill, not a wait for anything
        kill -KILL "$pid" 2>/dev/null || true
        { wait "$pid"; } 2>/dev/null || rc=$?
        [ "$rc" = 137 ] && killed=$((killed + 1))
        temps >"$K/$i.temps"
        wpid=-
    fi
    snapshot "$K/$i.entry"
    echo "$want $wpid" >"$K/$i.meta"
done
res=$(node "$T_ROOT/check.mjs" "$K" 100) || fail "after the kills:
$res"
T_CHECKS=$((T_CHECKS + 100))
echo "at $SECONDS s: 100 kills (want:got) $res; random kills that landed: $killed"
# the next write removes what the killed writers left
run 0 A header --refresh rs
assert_contains "$OUT" "Authorization: Bearer " "the header after the kills"
assert_eq "$(temps)" "" "temporaries left after the next run"
# and the grant is alive: the refresh token kept is the one the server knows
run 0 A header --refresh --json rs
assert_eq "$(mcp_status "Authorization: $(json_get "$OUT" 'j.headers.Authorization')")" 200 \
    "initialize with the token after the kills"

# ---- 2. a full disk, a read-only store: a copy of the store on a small tmpfs, in a private
# mount namespace (gone with it) ----
FS_AGENT="$T_ROOT/agent-fs"
FS_OUT="$T_ROOT/fs"
mkdir -p "$FS_AGENT/oauth" "$FS_OUT"
cp "$CONFIG" "$FS_AGENT/mcp.json"
run 0 A header --refresh rs # a token valid for the next seconds, to be handed out from the copy
cat >"$T_ROOT/fs-faults.sh" <<'EOF'
# fs-faults.sh STORE SRC_ENTRY OUT: runs mcp-auth against STORE on a full, then read-only
# tmpfs; leaves each run's status, output and what the store holds in OUT
set -u
store=$1 src=$2 out=$3
entry="$store/$(basename "$src")"
mount -t tmpfs -o size=128k,mode=0700 credkit-test "$store" || exit 90
cp -p "$src" "$entry" || exit 91
if [ -f "$(dirname "$src")/store.json" ]; then
    cp -p "$(dirname "$src")/store.json" "$store/" || exit 91
fi
step() { # NAME ARGS...: one mcp-auth run, then what the store holds
    local name=$1
    shift
    "$MCP_AUTH_BIN" "$@" >"$out/$name.out" 2>"$out/$name.err"
    echo $? >"$out/$name.rc"
    if cmp -s "$src" "$entry"; then echo same; else echo changed; fi >"$out/$name.entry"
    find "$store" -maxdepth 1 -name '.*.json.*' -printf '%f\n' >"$out/$name.temps"
}
# full: what is left is less than an entry
dd if=/dev/zero of="$store/filler" bs=4k 2>/dev/null
step full-refresh header --refresh rs
step full-header header rs
rm -f "$store/filler"
mount -o remount,ro "$store" || exit 92
step ro-refresh header --refresh rs
step ro-header header rs
step ro-status status --json
EOF
if [ "$BACKEND" = keyring ]; then
    # the copy is another store: its own item, a copy of the original's
    secret-tool lookup xdg:schema org.credkit.TokenStore store "$STORE" |
        secret-tool store --label="credkit token store: $FS_AGENT/oauth" \
            xdg:schema org.credkit.TokenStore store "$FS_AGENT/oauth" ||
        fail "cannot copy the keychain item for the tmpfs store"
fi
rc=0
PI_CODING_AGENT_DIR="$FS_AGENT" unshare -m -- bash "$T_ROOT/fs-faults.sh" "$FS_AGENT/oauth" \
    "$ENTRY" "$FS_OUT" || rc=$?
[ "$rc" = 0 ] || fail "the tmpfs store could not be set up ($rc)"
fs_check() { # NAME STATUS [MESSAGE]
    assert_eq "$(cat "$FS_OUT/$1.rc")" "$2" "the status of $1: $(cat "$FS_OUT/$1.err")"
    assert_eq "$(cat "$FS_OUT/$1.entry")" same "the entry after $1"
    assert_eq "$(cat "$FS_OUT/$1.temps")" "" "temporaries after $1"
    [ -z "${3:-}" ] || assert_contains "$(cat "$FS_OUT/$1.err")" "$3" "the message of $1"
}
fs_check full-refresh 1 "the new token could not be stored (the stored sign-in is as it was): cannot write"
assert_contains "$(cat "$FS_OUT/full-refresh.err")" "No space left on device"
fs_check full-header 0
assert_contains "$(cat "$FS_OUT/full-header.out")" "Authorization: Bearer " "the header on a full disk"
fs_check ro-refresh 1 "Read-only file system"
fs_check ro-header 0
assert_contains "$(cat "$FS_OUT/ro-header.out")" "Authorization: Bearer " "the header on a read-only store"
fs_check ro-status 0
echo "full disk: $(cat "$FS_OUT/full-refresh.err")"
echo "read-only: $(cat "$FS_OUT/ro-refresh.err")"

# ---- 3. the authorization server unreachable during refresh, through the bridge ----
# The bridge runs mcp-auth through a wrapper: while T_ROOT/as.down exists, mcp-auth runs in a
# network namespace of its own where nothing listens, so that every connection to the
# authorization server is refused, as when it is down; the server itself keeps its state (its
# grants live in memory), so that it can come back.
mkdir -p "$T_ROOT/bin"
cat >"$T_ROOT/bin/mcp-auth" <<EOF
#!/bin/sh
echo "\$(date +%s%3N) \$*" >>"$T_ROOT/mcp-auth.runs"
if [ -e "$T_ROOT/as.down" ]; then
    exec unshare -n -- sh -c 'ip link set lo up && exec "\$0" "\$@"' "$MCP_AUTH_BIN" "\$@"
fi
exec "$MCP_AUTH_BIN" "\$@"
EOF
chmod +x "$T_ROOT/bin/mcp-auth"
export CREDKIT_MCP_AUTH="$T_ROOT/bin/mcp-auth"
cat >"$T_ROOT/agent.mjs" <<EOF
// agent.mjs BRIDGE_ARGV RESULTS STOP: the SDK's Client on the bridge, calling the whoami tool
// every 200 ms until STOP exists; one JSON line per call in RESULTS: {t, ok, text}.
import { appendFileSync, existsSync } from 'node:fs';
import { Agent, sleep, textOf } from '$PEERS_DIR/bridge-lib.mjs';
const [argv, results, stop] = process.argv.slice(2);
const a = new Agent('auth-faults');
await a.connect({ kind: 'stdio', argv: JSON.parse(argv), stderrPath: '$T_ROOT/bridge.log' });
const tools = (await a.request('tools/list', {})).tools.map((t) => t.name);
const tool = tools.find((n) => n.endsWith('whoami'));
if (!tool) {
  console.log('FAIL no whoami tool among ' + JSON.stringify(tools));
  process.exit(1);
}
while (!existsSync(stop)) {
  const t = Date.now();
  let line;
  try {
    const r = await a.call(tool, {}, { timeout: 60000 });
    line = { t, ok: !r.isError, text: textOf(r) };
  } catch (e) {
    line = { t, ok: false, text: String(e?.message ?? e) };
  }
  appendFileSync(results, JSON.stringify(line) + '\n');
  await sleep(200);
}
await a.client.close();
console.log('ok the agent ended');
EOF
R="$T_ROOT/calls.jsonl"
: >"$R"
# calls SINCE_MS OK: how many calls made after SINCE_MS (epoch ms) had that outcome
calls() { node -e 'const [f, since, ok] = process.argv.slice(1); console.log(require("fs").readFileSync(f, "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((c) => c.t > Number(since) && String(c.ok) === ok).length)' "$R" "$1" "$2"; }
have_calls() { [ "$(calls "$1" "$2")" -ge "$3" ]; }
# last_call SINCE_MS OK FIELD: the t or text of the last such call
last_call() { node -e 'const [f, since, ok, k] = process.argv.slice(1); const v = require("fs").readFileSync(f, "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((c) => c.t > Number(since) && String(c.ok) === ok); console.log(v.length ? v[v.length - 1][k] : "")' "$R" "$1" "$2" "$3"; }
first_call() { node -e 'const [f, since, ok, k] = process.argv.slice(1); const v = require("fs").readFileSync(f, "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((c) => c.t > Number(since) && String(c.ok) === ok); console.log(v.length ? v[0][k] : "")' "$R" "$1" "$2" "$3"; }

# what the agent and the bridge saw, when a wait runs out
calls_dump() {
    echo "--- the calls (last 30)"
    tail -n 30 "$R"
    echo "--- mcp-auth runs"
    tail -n 30 "$T_ROOT/mcp-auth.runs" 2>/dev/null || true
    echo "--- the bridge's log (last 40 lines)"
    tail -n 40 "$T_ROOT/bridge.log" 2>/dev/null || true
}
wait_calls() { # LIMIT_S WHAT SINCE OK N
    local end=$(($(ms_now) + $1 * 1000))
    until have_calls "$3" "$4" "$5"; do
        [ "$(ms_now)" -lt "$end" ] || {
            calls_dump
            fail "timed out after $1 s waiting for $2"
        }
        sleep 0.1
    done
    T_CHECKS=$((T_CHECKS + 1))
}

node "$T_ROOT/agent.mjs" "$(json_argv "$MCP_BRIDGE_BIN" -v --config "$CONFIG" serve)" "$R" \
    "$T_ROOT/agent.stop" >"$T_ROOT/agent.out" 2>"$T_ROOT/agent.err" &
AGENT=$!
wait_calls 60 "three calls through the bridge" 0 true 3
assert_eq "$(calls 0 false)" 0 "failed calls with the server up"
# a token that lives its full 8 s from now, in the store, for the bridge's next ask
run 0 A header --refresh rs
touch "$T_ROOT/as.down"
DOWN=$(ms_now)
# the unexpired token keeps working, until it must be refreshed; then the calls fail
wait_calls 45 "a call failing while the authorization server is down" "$DOWN" false 1
last_ok=$(last_call "$DOWN" true t)
[ -n "$last_ok" ] && [ $((last_ok - DOWN)) -ge 3000 ] ||
    fail "the unexpired token did not carry the calls: the last good one came $((${last_ok:-$DOWN} - DOWN)) ms after the outage began"
T_CHECKS=$((T_CHECKS + 1))
why=$(first_call "$DOWN" false text)
echo "a call while the authorization server is down: $why"
assert_contains "$why" "rs" "the failed call's message names the server"
case $why in
*"cannot refresh the token for '$RS'"*)
    assert_contains "$why" "connection refused" "the failed call's message says why"
    assert_contains "$why" "sign-in required: run 'mcp-auth" "and what to do if it lasts" ;;
*)
    # the bridge found the credentials expired before the call came (it then reconnects, and a
    # call waits for that up to the entry's timeout): its log says why, once
    echo "note: the failed call does not say why; the bridge's log must"
    assert_contains "$(cat "$T_ROOT/bridge.log")" "cannot refresh the token for '$RS'" "the bridge's log"
    assert_contains "$(cat "$T_ROOT/bridge.log")" "connection refused" "the bridge's log"
    assert_contains "$(cat "$T_ROOT/bridge.log")" "sign-in required: run 'mcp-auth" "the bridge's log" ;;
esac
# it stays so while the server is down
wait_calls 30 "a second failed call" "$DOWN" false 2
# back: the next calls succeed, on the same bridge, without a new sign-in
rm -f "$T_ROOT/as.down"
UP=$(ms_now)
logins_before=$(grep -c ' login ' "$T_ROOT/mcp-auth.runs" || true)
wait_calls 60 "a call succeeding once the authorization server is back" "$UP" true 2
echo "recovered $(($(first_call "$UP" true t) - UP)) ms after the authorization server came back"
assert_eq "$(grep -c ' login ' "$T_ROOT/mcp-auth.runs" || true)" "$logins_before" "sign-ins by the bridge"
touch "$T_ROOT/agent.stop"
rc=0
wait "$AGENT" || rc=$?
assert_eq "$rc" 0 "the agent's status: $(cat "$T_ROOT/agent.out" "$T_ROOT/agent.err")"
