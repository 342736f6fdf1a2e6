# Shared helpers for integration tests (sourced; not a test itself).
#
# Every test runs with a throw-away agent directory and runtime directory, never the real
# home, and fails loudly: each assertion names what it expected and shows what it got.
set -euo pipefail

: "${SECRETS_BIN:?SECRETS_BIN must point at the secrets binary (ctest sets it)}"
: "${TESTS_DIR:?TESTS_DIR must point at tests/ (ctest sets it)}"

T_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/it-XXXXXX")
export PI_CODING_AGENT_DIR="$T_ROOT/agent"
# the cache lives only on a memory-backed filesystem, as $XDG_RUNTIME_DIR is on a desktop
XDG_RUNTIME_DIR=$(mktemp -d /dev/shm/it-run-XXXXXX)
export XDG_RUNTIME_DIR
export HOME="$T_ROOT/home"
mkdir -p "$HOME" && chmod 700 "$XDG_RUNTIME_DIR"
T_CHECKS=0
trap 't_cleanup' EXIT
# a test stopped by a signal (ctest's timeout) must not look like a pass
trap 'echo "FAIL: stopped by a signal" >&2; exit 1' INT TERM HUP

t_cleanup() {
    local rc=$?
    t_stop_peers
    rm -rf "$T_ROOT" "$XDG_RUNTIME_DIR"
    if [ "$rc" -eq 0 ]; then
        if [ "$T_CHECKS" -eq 0 ]; then
            echo "FAIL: no checks ran" >&2
            exit 1
        fi
        echo "ok: $T_CHECKS checks"
    fi
}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# run EXPECTED_STATUS CMD...: runs CMD, keeps stdout in $OUT and stderr in $ERR.
run() {
    local want=$1
    shift
    local rc=0
    "$@" >"$T_ROOT/out" 2>"$T_ROOT/err" </dev/null || rc=$?
    OUT=$(cat "$T_ROOT/out")
    ERR=$(cat "$T_ROOT/err")
    T_CHECKS=$((T_CHECKS + 1))
    if [ "$rc" != "$want" ]; then
        fail "'$*' exited $rc, expected $want
--- stdout
$OUT
--- stderr
$ERR"
    fi
}

# run_in EXPECTED_STATUS INPUT CMD...: like run, with INPUT on stdin.
run_in() {
    local want=$1 input=$2
    shift 2
    local rc=0
    printf '%s' "$input" | "$@" >"$T_ROOT/out" 2>"$T_ROOT/err" || rc=$?
    OUT=$(cat "$T_ROOT/out")
    ERR=$(cat "$T_ROOT/err")
    T_CHECKS=$((T_CHECKS + 1))
    [ "$rc" = "$want" ] || fail "'$*' (stdin given) exited $rc, expected $want
--- stdout
$OUT
--- stderr
$ERR"
}

assert_eq() {
    T_CHECKS=$((T_CHECKS + 1))
    [ "$1" = "$2" ] || fail "${3:-values differ}: got '$1', expected '$2'"
}

assert_contains() {
    T_CHECKS=$((T_CHECKS + 1))
    case "$1" in
    *"$2"*) ;;
    *) fail "${3:-text} does not contain '$2':
$1" ;;
    esac
}

assert_not_contains() {
    T_CHECKS=$((T_CHECKS + 1))
    case "$1" in
    *"$2"*) fail "${3:-text} contains '$2' and must not:
$1" ;;
    *) ;;
    esac
}

# json_get JSON EXPR: evaluates a JavaScript expression on the parsed JSON (as `j`).
json_get() {
    node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8")); const v = ('"$2"'); process.stdout.write(v === undefined ? "undefined" : typeof v === "string" ? v : JSON.stringify(v));' <<<"$1"
}

# wait_until TIMEOUT_SECONDS DESCRIPTION CMD...: polls CMD every 50 ms until it succeeds.
wait_until() {
    local limit=$1 what=$2
    shift 2
    local end=$(($(date +%s%N) / 1000000 + limit * 1000))
    until "$@"; do
        [ $(($(date +%s%N) / 1000000)) -lt "$end" ] || fail "timed out after ${limit}s waiting for $what"
        sleep 0.05
    done
    T_CHECKS=$((T_CHECKS + 1))
}

file_mode() {
    stat -c %a "$1"
}

S() {
    "$SECRETS_BIN" "$@"
}

# Test peers (tests/peers): start_peer NAME ARGS... starts tests/peers/NAME.mjs in the background,
# waits (at most 30 s) for its READY line and sets PEER_URL; every peer is stopped on exit.
T_PEER_PIDS=()
PEERS_DIR="$TESTS_DIR/peers"
start_peer() {
    local name=$1 line="" end
    shift
    [ -d "$PEERS_DIR/node_modules" ] || fail "tests/peers/node_modules is missing: run scripts/install-deps"
    # a fresh output file: a restarted peer must not be taken for ready on its predecessor's line
    rm -f "$T_ROOT/$name.out"
    node "$PEERS_DIR/$name.mjs" "$@" >"$T_ROOT/$name.out" 2>"$T_ROOT/$name.log" </dev/null &
    T_PEER_PIDS+=("$!")
    end=$((SECONDS + 30))
    while [ -z "$line" ]; do
        line=$(grep -m1 '^READY ' "$T_ROOT/$name.out" 2>/dev/null || true)
        [ -n "$line" ] && break
        kill -0 "${T_PEER_PIDS[-1]}" 2>/dev/null || fail "$name exited before it was ready:
$(tail -20 "$T_ROOT/$name.log")"
        [ "$SECONDS" -lt "$end" ] || fail "$name printed no READY line within 30 s"
        sleep 0.05
    done
    PEER_URL=${line#READY }
}

t_stop_peers() {
    local pid
    for pid in "${T_PEER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${T_PEER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}

# pty_drive SCRIPT_TEXT PROGRAM ARGS...: runs PROGRAM on a pty ($PTYDRIVE_BIN, from ctest) fed by
# the ptydrive script; the transcript is left in $OUT; a failed drive fails the test.
pty_drive() {
    local script=$1
    shift
    : "${PTYDRIVE_BIN:?PTYDRIVE_BIN must point at the ptydrive tool (ctest sets it)}"
    printf '%s\n' "$script" >"$T_ROOT/script"
    local rc=0
    "$PTYDRIVE_BIN" --timeout 20 --transcript "$T_ROOT/transcript" "$T_ROOT/script" -- \
        "$@" >/dev/null 2>"$T_ROOT/err" || rc=$?
    OUT=$(cat "$T_ROOT/transcript")
    T_CHECKS=$((T_CHECKS + 1))
    [ "$rc" = 0 ] || fail "ptydrive failed ($rc): $(cat "$T_ROOT/err")
--- transcript
$OUT"
}
