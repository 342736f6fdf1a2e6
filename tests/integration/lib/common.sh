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
# mcp-auth's token store keeps its secrets in files, whatever Secret Service the machine runs: a
# test never fills a user's keychain; the tests of the keychain backend unset this inside a
# private one (lib/keyring.sh)
export MCP_AUTH_STORE=file
T_CHECKS=0
T_CLEANUP_DIRS=() # more directories to remove at the end
trap 't_cleanup' EXIT
# a test stopped by a signal (ctest's timeout) must not look like a pass
trap 'echo "FAIL: stopped by a signal" >&2; exit 1' INT TERM HUP

t_cleanup() {
    local rc=$?
    t_stop_peers
    if [ "$rc" -eq 0 ] && [ "${#T_CANARIES[@]}" -gt 0 ]; then
        t_canary_scan || rc=$?
    fi
    rm -rf "$T_ROOT" "$XDG_RUNTIME_DIR" "${T_CLEANUP_DIRS[@]}"
    if [ "$rc" -eq 0 ]; then
        if [ "$T_CHECKS" -eq 0 ]; then
            echo "FAIL: no checks ran" >&2
            exit 1
        fi
        echo "ok: $T_CHECKS checks"
    fi
    exit "$rc"
}

# Canaries: values a test registers as secret (t_canary VALUE... [--held-by PATH]...). From then
# on, the captured stdout and stderr of every `run`/`run_in`/`pty_drive` must not hold any of
# them (stdout may, for the commands that print values by design: secrets get, resolve --json
# and exec, mcp-auth header; or with T_CANARY_STDOUT=1 before the call), and at cleanup no file
# under T_ROOT may hold one: logs, stderr, outputs, the agent directory. The only exceptions are
# the token store ($PI_CODING_AGENT_DIR/oauth) and the paths given with --held-by (a file, or a
# directory and everything under it), which hold a value by design. Each capture and each file
# scanned counts as a check; a scan that finds no file to read fails. (pty_drive's script, the
# test's own typing, is not scanned: it holds what the test types in.) The values are never
# printed: a finding names the canary by its number.
T_CANARIES=()
T_CANARY_HELD=()
t_canary() {
    [ $# -gt 0 ] && [ "$1" != --held-by ] || fail "t_canary: no value given"
    while [ $# -gt 0 ]; do
        case "$1" in
        --held-by)
            [ $# -ge 2 ] || fail "t_canary: --held-by needs a path"
            T_CANARY_HELD+=("$2")
            shift 2
            ;;
        *)
            [ "${#1}" -ge 8 ] || fail "t_canary: a canary must be at least 8 characters (got ${#1}), or it would match by chance"
            T_CANARIES+=("$1")
            shift
            ;;
        esac
    done
}

# t_mask TEXT: TEXT with every registered canary replaced by <canary N>
t_mask() {
    local text=$1 i
    for i in "${!T_CANARIES[@]}"; do text=${text//"${T_CANARIES[$i]}"/<canary $((i + 1))>}; done
    printf '%s' "$text"
}

# t_canary_which TEXT: the numbers of the canaries TEXT holds (empty: none)
t_canary_which() {
    local i found=""
    for i in "${!T_CANARIES[@]}"; do
        case "$1" in *"${T_CANARIES[$i]}"*) found="$found $((i + 1))" ;; esac
    done
    printf '%s' "${found# }"
}

# t_canary_capture WHAT STDOUT_ALLOWED OUT ERR CMD...: checks a run's captured output
t_canary_capture() {
    local what=$1 out_ok=$2 out=$3 err=$4 hit
    shift 4
    [ "${#T_CANARIES[@]}" -gt 0 ] || return 0
    T_CHECKS=$((T_CHECKS + 1))
    hit=$(t_canary_which "$err")
    [ -z "$hit" ] || fail "canary $hit in the stderr of $what '$(t_mask "$*")':
$(t_mask "$err")"
    [ "$out_ok" = 1 ] && return 0
    hit=$(t_canary_which "$out")
    [ -z "$hit" ] || fail "canary $hit in the stdout of $what '$(t_mask "$*")' (T_CANARY_STDOUT=1 if it prints values by design):
$(t_mask "$out")"
}

# t_canary_stdout_ok CMD...: 1 when CMD prints values on stdout by design
t_canary_stdout_ok() {
    [ "${T_CANARY_STDOUT:-0}" = 1 ] && {
        echo 1
        return
    }
    local prog=${1##*/} a
    shift
    case "$prog" in
    S | secrets | "${SECRETS_BIN##*/}")
        local resolve=0 json=0
        for a in "$@"; do
            case "$a" in
            get | exec) echo 1 && return ;;
            resolve) resolve=1 ;;
            --json) json=1 ;;
            esac
        done
        [ "$resolve$json" = 11 ] && echo 1 && return ;;
    A | mcp-auth | "$(basename "${MCP_AUTH_BIN:-mcp-auth}")")
        for a in "$@"; do case "$a" in header) echo 1 && return ;; esac; done ;;
    esac
    echo 0
}

# t_canary_scan: every file under T_ROOT but the token store, run's own capture files (checked
# when captured) and the declared holders must hold no canary
t_canary_scan() {
    local pat="$XDG_RUNTIME_DIR/.canaries" f held skip i files=0 bytes=0 bad=0 hit
    # the values go to grep in files, never on its command line
    (
        umask 077
        printf '%s\n' "${T_CANARIES[@]}" >"$pat"
        for i in "${!T_CANARIES[@]}"; do printf '%s\n' "${T_CANARIES[$i]}" >"$pat.$i"; done
    )
    while IFS= read -r -d '' f; do
        skip=0
        for held in "${PI_CODING_AGENT_DIR:-$T_ROOT/agent}/oauth" "$T_ROOT/out" "$T_ROOT/err" \
            "$T_ROOT/script" "${T_CANARY_HELD[@]}"; do
            case "$f" in "$held" | "$held"/*) skip=1 ;; esac
        done
        [ "$skip" = 0 ] || continue
        files=$((files + 1))
        bytes=$((bytes + $(stat -c %s "$f")))
        if grep -qaF -f "$pat" "$f"; then
            hit=""
            for i in "${!T_CANARIES[@]}"; do
                grep -qaF -f "$pat.$i" "$f" && hit="$hit $((i + 1))"
            done
            echo "FAIL: canary${hit} in ${f#"$T_ROOT"/} (under T_ROOT), which is not declared to hold it:" >&2
            # the first lines that hold one, each canary shown as <canary N>
            grep -naF -f "$pat" "$f" | head -n 3 | while IFS= read -r line; do
                line=$(t_mask "$line")
                echo "    ${line:0:400}" >&2
            done
            bad=$((bad + 1))
        fi
    done < <(find "$T_ROOT" -type f -print0 2>/dev/null)
    rm -f "$pat" "$pat".*
    if [ "$files" -eq 0 ]; then
        echo "FAIL: the canary scan found no file to read under T_ROOT: it would prove nothing" >&2
        return 1
    fi
    T_CHECKS=$((T_CHECKS + files))
    if [ "$bad" -ne 0 ]; then
        echo "FAIL: canaries: $bad of $files files under T_ROOT hold a canary" >&2
        return 1
    fi
    echo "canaries: ${#T_CANARIES[@]} value(s) in none of $files files ($bytes bytes) under T_ROOT"
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
        fail "'$(t_mask "$*")' exited $rc, expected $want
--- stdout
$(t_mask "$OUT")
--- stderr
$(t_mask "$ERR")"
    fi
    [ "${#T_CANARIES[@]}" -eq 0 ] || t_canary_capture run "$(t_canary_stdout_ok "$@")" "$OUT" "$ERR" "$@"
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
    [ "$rc" = "$want" ] || fail "'$(t_mask "$*")' (stdin given) exited $rc, expected $want
--- stdout
$(t_mask "$OUT")
--- stderr
$(t_mask "$ERR")"
    [ "${#T_CANARIES[@]}" -eq 0 ] || t_canary_capture run_in "$(t_canary_stdout_ok "$@")" "$OUT" "$ERR" "$@"
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
    [ "$rc" = 0 ] || fail "ptydrive failed ($rc): $(t_mask "$(cat "$T_ROOT/err")")
--- transcript
$(t_mask "$OUT")"
    [ "${#T_CANARIES[@]}" -eq 0 ] || t_canary_capture pty_drive "$(t_canary_stdout_ok "$@")" "$OUT" "$(cat "$T_ROOT/err")" "$@"
}
