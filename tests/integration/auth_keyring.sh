# The token store's keyring backend on a real gnome-keyring (a private D-Bus session) with a real
# authorization server (oidc-provider) in front of two real MCP servers, signed in through a
# real headless browser (Debian's Chromium): a new store takes the keychain (auto), the entry
# files hold no secret, the keychain one item for all servers; two processes refreshing at
# once cause one refresh; the bridge calls with the keychain's token; a locked keychain and a
# missing Secret Service fail saying what to do and never write a token to a file; a setting
# that forces files on a keychain store names the move; moving file -> keyring -> file keeps
# every sign-in usable.
. "$(dirname "$0")/lib/keyring.sh"
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"
command -v secret-tool >/dev/null || fail "secret-tool is missing: run scripts/install-deps"

A() { "$MCP_AUTH_BIN" "$@"; }
B() { "$MCP_BRIDGE_BIN" "$@"; }
export BROWSER="node $PEERS_DIR/browser.mjs"
export BROWSER_LOG="$T_ROOT/browser.log"
unset MCP_AUTH_STORE

start_peer auth-server --access-ttl 30
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
S1=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
S2=$PEER_URL
case "$S1" in */mcp) ;; *) S1="$S1/mcp" ;; esac
case "$S2" in */mcp) ;; *) S2="$S2/mcp" ;; esac
mkdir -p "$PI_CODING_AGENT_DIR"
printf '{"mcpServers": {"one": {"url": "%s"}, "two": {"url": "%s"}}}\n' "$S1" "$S2" \
    >"$PI_CODING_AGENT_DIR/mcp.json"
STORE="$PI_CODING_AGENT_DIR/oauth"

stats() { curl -sS --max-time 10 "$AS/__test/stats"; }
stat_of() { json_get "$(stats)" "$1"; }
reset_stats() { curl -sS --max-time 10 -X POST "$AS/__test/reset" >/dev/null; }
# mcp_status URL HEADER: initialize against the MCP server; prints the HTTP status
mcp_status() {
    curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$1" \
        -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
        -H "$2" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
}
# the items of the token store's schema, as secret-tool lists them
items() { secret-tool search --all xdg:schema org.credkit.TokenStore 2>&1 || true; }
item_count() { items | grep -c '^\[/' || true; }
item_secret() { secret-tool lookup xdg:schema org.credkit.TokenStore store "$STORE" 2>/dev/null || true; }
# usable NAME URL: the header mcp-auth gives for NAME opens an MCP session there
usable() {
    local h
    h=$(A header "$1") || fail "mcp-auth header $1: $(A header "$1" 2>&1)"
    assert_eq "$(mcp_status "$2" "$h")" 200 "initialize on $1 with the stored token"
}
# no_secret_in_files TOKEN...: no entry file holds one of the tokens, nor any secret member
no_secret_in_files() {
    local f t
    for f in "$STORE"/[0-9a-f]*.json; do
        for t in "$@"; do
            ! grep -qF -- "$t" "$f" || fail "'$f' holds a token"
        done
        # (the discovery results name grant types such as "refresh_token": only the sections
        # that hold secrets are looked at)
        json_get "$(cat "$f")" '[j.tokens?.access_token, j.tokens?.refresh_token,
            j.registration?.client_secret].every(v => v === undefined) && !!j.keyring?.generation' |
            grep -qx true || fail "'$f' holds a secret member, or names no keychain generation"
    done
    T_CHECKS=$((T_CHECKS + 1))
}

# ---- a new store takes the keychain: two servers, one item ----
run 0 A login one --timeout 90s
assert_contains "$ERR" "signed in to $S1"
run 0 A login two --timeout 90s
assert_contains "$ERR" "signed in to $S2"
assert_eq "$(json_get "$(cat "$STORE/store.json")" 'j.secrets')" keyring "the store's record"
run 0 A status --json
assert_eq "$(json_get "$OUT" 'j.store')" keyring "status --json: the store"
assert_eq "$(json_get "$OUT" 'j.servers.length')" 2 "status --json: the sign-ins"
assert_eq "$(json_get "$OUT" 'j.servers.every(s => s.has_access_token && s.has_refresh_token)')" \
    true "status --json: both with their tokens"
run 0 A status
assert_contains "$OUT" "in the keychain"
run 0 A store
assert_contains "$OUT" "in the keychain (keyring)"
T1=$(A header one)
T2=$(A header two)
t_canary "${T1#Authorization: Bearer }" "${T2#Authorization: Bearer }"
no_secret_in_files "${T1#Authorization: Bearer }" "${T2#Authorization: Bearer }"
assert_eq "$(item_count)" 1 "keychain items of the token store"
secret=$(item_secret)
assert_contains "$secret" "${T1#Authorization: Bearer }" "the item holds the first token"
assert_contains "$secret" "${T2#Authorization: Bearer }" "the item holds the second token"
assert_not_contains "$(items | grep '^attribute')" "${T1#Authorization: Bearer }" "item attributes"
usable one "$S1"
usable two "$S2"

# ---- two processes refreshing at once: one refresh, both with the new token ----
# The entry's lock is held here while both start: each reads the entry (the same token) before
# it waits for the lock, so that they refresh "at the same moment" however slowly they start.
ONE=$(grep -lF "\"$S1\"" "$STORE"/[0-9a-f]*.json)
exec 9>>"$ONE.lock"
flock -x 9
reset_stats
( A header --json --refresh one >"$T_ROOT/r.1" 2>"$T_ROOT/r.1.err"; echo $? >"$T_ROOT/r.1.rc" ) 9>&- &
p1=$!
( A header --json --refresh one >"$T_ROOT/r.2" 2>"$T_ROOT/r.2.err"; echo $? >"$T_ROOT/r.2.rc" ) 9>&- &
p2=$!
# the processes other than this shell that hold the lock file open: the callers, waiting
lock_waiters() {
    find /proc/[0-9]*/fd -lname "$ONE.lock" 2>/dev/null | grep -v "^/proc/$$/" | cut -d/ -f3 |
        sort -u | wc -l
}
both_waiting() { [ "$(lock_waiters)" -ge 2 ]; }
wait_until 30 "both callers to wait for the entry's lock" both_waiting
flock -u 9
exec 9>&-
wait "$p1" "$p2"
for i in 1 2; do
    assert_eq "$(cat "$T_ROOT/r.$i.rc")" 0 "refreshing caller $i ($(cat "$T_ROOT/r.$i.err"))"
done
n1=$(json_get "$(cat "$T_ROOT/r.1")" 'j.headers.Authorization')
n2=$(json_get "$(cat "$T_ROOT/r.2")" 'j.headers.Authorization')
assert_eq "$n1" "$n2" "the two callers' tokens"
[ "$n1" != "$T1" ] || fail "--refresh gave the old token"
assert_eq "$(stat_of 'j.refresh_token_grants')" 1 "refresh requests reaching the server"
assert_eq "$(stat_of 'j.refresh_token_reuse')" 0 "reused refresh tokens"
assert_eq "$(mcp_status "$S1" "Authorization: $n1")" 200 "initialize with the refreshed token"
assert_contains "$(item_secret)" "${n1#Bearer }" "the item holds the refreshed token"
no_secret_in_files "${n1#Bearer }"
assert_eq "$(item_count)" 1 "keychain items after the refresh"

# ---- the bridge, whose helper runs read the keychain ----
run 0 B call one whoami '{}'
assert_contains "$OUT" '"sub":'
run 0 B call two whoami '{}'
assert_contains "$OUT" '"sub":'

# ---- the setting cannot split the store ----
MCP_AUTH_STORE=file run 1 A header one
assert_contains "$ERR" "keeps its secrets in the keychain, but MCP_AUTH_STORE=file"
assert_contains "$ERR" "mcp-auth store migrate file"

# ---- a locked keychain, no Secret Service: what to do, and no token written to a file ----
before=$(cat "$STORE"/*.json | sha256sum)
cat >"$T_ROOT/nested.sh" <<'EOF'
"$MCP_AUTH_BIN" header --refresh one >"$1.out" 2>"$1.err"
echo $? >"$1.rc"
EOF
bash "$TESTS_DIR/tools/with-keyring" --locked bash "$T_ROOT/nested.sh" "$T_ROOT/locked" ||
    fail "the locked keychain could not be set up"
assert_eq "$(cat "$T_ROOT/locked.rc")" 1 "header on a locked keychain: $(cat "$T_ROOT/locked.err")"
assert_contains "$(cat "$T_ROOT/locked.err")" "the keychain is locked: unlock it"
bash "$TESTS_DIR/tools/with-keyring" --no-daemon bash "$T_ROOT/nested.sh" "$T_ROOT/gone" ||
    fail "the session without a keyring daemon could not be set up"
assert_eq "$(cat "$T_ROOT/gone.rc")" 1 "header without a Secret Service: $(cat "$T_ROOT/gone.err")"
assert_contains "$(cat "$T_ROOT/gone.err")" "no Secret Service is available"
assert_contains "$(cat "$T_ROOT/gone.err")" "gnome-keyring-daemon"
assert_eq "$(cat "$STORE"/*.json | sha256sum)" "$before" "the entry files after the failures"
no_secret_in_files "${n1#Bearer }"

# ---- keyring -> file -> keyring: every sign-in usable at each step ----
cur=$(A header one)
run 0 A store migrate file
assert_contains "$ERR" "moved the secrets of 2 sign-ins to the files"
assert_eq "$(json_get "$(cat "$STORE/store.json")" 'j.secrets')" file "the record after the move"
assert_eq "$(item_count)" 0 "keychain items after the move to files"
grep -qF -- "${cur#Authorization: Bearer }" "$STORE"/*.json || fail "no file holds the token after the move to files"
T_CHECKS=$((T_CHECKS + 1))
run 0 A status --json
assert_eq "$(json_get "$OUT" 'j.store')" file "status --json: the store"
usable one "$S1"
usable two "$S2"
run 0 A store migrate file
assert_contains "$ERR" "already"

run 0 A store migrate keyring
assert_contains "$ERR" "moved the secrets of 2 sign-ins to the keychain"
assert_eq "$(item_count)" 1 "keychain items after the move back"
no_secret_in_files "${cur#Authorization: Bearer }"
assert_contains "$(item_secret)" "${cur#Authorization: Bearer }" "the item after the move back"
usable one "$S1"
usable two "$S2"
reset_stats
run 0 A header --refresh one
assert_eq "$(stat_of 'j.refresh_token_grants')" 1 "a refresh after the moves"
usable one "$S1"

# ---- signing out of one server takes its secrets out of the item, the other's stay ----
two_now=$(A header two)
run 0 A logout two
assert_not_contains "$(item_secret)" "${two_now#Authorization: Bearer }" "the item after the logout"
assert_eq "$(item_count)" 1 "keychain items after the logout"
run 4 A header two
usable one "$S1"
run 0 A login two --timeout 90s
usable two "$S2"
no_secret_in_files "${two_now#Authorization: Bearer }"

# ---- a move that fails leaves the store as it was ----
before=$(cat "$STORE"/*.json | sha256sum)
cat >"$T_ROOT/nested-move.sh" <<'EOF'
"$MCP_AUTH_BIN" store migrate file >"$1.out" 2>"$1.err"
echo $? >"$1.rc"
EOF
bash "$TESTS_DIR/tools/with-keyring" --locked bash "$T_ROOT/nested-move.sh" "$T_ROOT/move" ||
    fail "the locked keychain could not be set up"
assert_eq "$(cat "$T_ROOT/move.rc")" 1 "a move on a locked keychain: $(cat "$T_ROOT/move.err")"
assert_contains "$(cat "$T_ROOT/move.err")" "cannot move the token store to the files (it is as it was)"
assert_eq "$(cat "$STORE"/*.json | sha256sum)" "$before" "the entry files after the failed move"
assert_eq "$(json_get "$(cat "$STORE/store.json")" 'j.secrets')" keyring "the record after the failed move"
usable one "$S1"
usable two "$S2"

# ---- an existing file store stays in files (auto), and MCP_AUTH_STORE=keyring names the move ----
OLD="$T_ROOT/agent-files"
mkdir -p "$OLD"
cp "$PI_CODING_AGENT_DIR/mcp.json" "$OLD/"
PI_CODING_AGENT_DIR="$OLD" MCP_AUTH_STORE=file run 0 A login one --timeout 90s
PI_CODING_AGENT_DIR="$OLD" run 0 A header --refresh one
PI_CODING_AGENT_DIR="$OLD" run 0 A store
assert_contains "$OUT" "in the files (file)"
assert_eq "$(json_get "$(cat "$OLD"/oauth/[0-9a-f]*.json)" '!!j.tokens.refresh_token')" true \
    "the file store keeps its refresh token in its file"
T_CHECKS=$((T_CHECKS + 1))
PI_CODING_AGENT_DIR="$OLD" MCP_AUTH_STORE=keyring run 1 A header --refresh one
assert_contains "$ERR" "mcp-auth store migrate keyring"
assert_eq "$(item_count)" 1 "keychain items: the other store made none"

# ---- the file store moved file -> keyring -> file: its own item beside the first store's ----
OLD_STORE=$(cd "$OLD/oauth" && pwd)
old_item() { secret-tool lookup xdg:schema org.credkit.TokenStore store "$OLD_STORE" 2>/dev/null || true; }
old_token=$(PI_CODING_AGENT_DIR="$OLD" A header one)
PI_CODING_AGENT_DIR="$OLD" run 0 A store migrate keyring
assert_contains "$ERR" "moved the secrets of 1 sign-in to the keychain"
assert_eq "$(item_count)" 2 "keychain items: one per store"
assert_contains "$(old_item)" "${old_token#Authorization: Bearer }" "the second store's item"
assert_not_contains "$(item_secret)" "${old_token#Authorization: Bearer }" "the first store's item"
assert_eq "$(json_get "$(cat "$OLD"/oauth/[0-9a-f]*.json)" 'j.tokens?.refresh_token')" undefined \
    "the moved store's file"
h=$(PI_CODING_AGENT_DIR="$OLD" A header one)
assert_eq "$(mcp_status "$S1" "$h")" 200 "the moved store's token"
PI_CODING_AGENT_DIR="$OLD" run 0 A store migrate file
assert_eq "$(item_count)" 1 "keychain items after the second store moved back"
h=$(PI_CODING_AGENT_DIR="$OLD" A header --refresh one)
assert_eq "$(mcp_status "$S1" "$h")" 200 "the store moved back, refreshed"
usable one "$S1"
