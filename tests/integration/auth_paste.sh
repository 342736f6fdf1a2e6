# mcp-auth signs in when the browser cannot reach the loopback listener (SSH, a container): a
# real headless Chromium signs in at a real authorization server (oidc-provider), its redirect
# to 127.0.0.1 is aborted as it would fail on another machine, and the address it tried is
# pasted back - through standard input with --paste, and typed on a real terminal (ptydrive).
# A pasted address with another state, another host or an error is refused, with the sign-in
# still waiting or ending cleanly; the token got through a paste works at the MCP server.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"

A() { "$MCP_AUTH_BIN" "$@"; }

start_peer auth-server --access-ttl 300
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
MCP=$PEER_URL
case "$MCP" in */mcp) ;; *) MCP="$MCP/mcp" ;; esac
mkdir -p "$PI_CODING_AGENT_DIR"
printf '{"mcpServers": {"demo": {"url": "%s"}}}\n' "$MCP" >"$PI_CODING_AGENT_DIR/mcp.json"

mcp_status() {
    curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$MCP" \
        -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
        -H "$1" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
}
# a query parameter of a URL, decoded
url_param() { node -e 'process.stdout.write(new URL(process.argv[1]).searchParams.get(process.argv[2]) ?? "")' "$1" "$2"; }
# URL with parameter NAME set to VALUE (or removed when VALUE is empty)
url_with() {
    node -e 'const u = new URL(process.argv[1]);
        if (process.argv[3]) u.searchParams.set(process.argv[2], process.argv[3]); else u.searchParams.delete(process.argv[2]);
        process.stdout.write(u.href)' "$1" "$2" "${3:-}"
}
alive() { kill -0 "$1" 2>/dev/null; }

# ---- through standard input (--paste), the browser sent to the URL by hand ----
mkfifo "$T_ROOT/in"
A login demo --no-browser --paste --timeout 90s <"$T_ROOT/in" >"$T_ROOT/login.out" 2>"$T_ROOT/login.err" &
lpid=$!
T_PEER_PIDS+=("$lpid")
exec 7>"$T_ROOT/in"
printed() { grep -q "or paste the address your browser ends on here" "$T_ROOT/login.err"; }
wait_until 20 "mcp-auth to ask for the pasted address" printed
auth_url=$(sed -n 's/^  \(http[^ ]*\)$/\1/p' "$T_ROOT/login.err" | head -n 1)
[ -n "$auth_url" ] || fail "no authorization URL in: $(cat "$T_ROOT/login.err")"
T_CHECKS=$((T_CHECKS + 1))

BROWSER_HOLD_CALLBACK="$T_ROOT/cb.url" node "$PEERS_DIR/browser.mjs" "$auth_url" \
    >/dev/null 2>"$T_ROOT/browser.err" || fail "the browser failed: $(cat "$T_ROOT/browser.err")"
cb_url=$(cat "$T_ROOT/cb.url")
assert_contains "$cb_url" "/callback?"
code=$(url_param "$cb_url" code)
[ -n "$code" ] || fail "the held callback carries no code"
T_CHECKS=$((T_CHECKS + 1))
# the listener got nothing: the sign-in still waits
alive "$lpid" || fail "mcp-auth ended without the pasted address: $(cat "$T_ROOT/login.err")"
T_CHECKS=$((T_CHECKS + 1))

# refused: another state, another host, a port that is not ours, and the wait goes on
refusals=0
refused() { [ "$(grep -c "refused the pasted address" "$T_ROOT/login.err")" -ge "$1" ]; }
expect_refused() {
    printf '%s\n' "$1" >&7
    refusals=$((refusals + 1))
    wait_until 10 "the refusal of $2" refused "$refusals"
    assert_contains "$(tail -n 3 "$T_ROOT/login.err")" "$3" "refusal of $2"
    alive "$lpid" || fail "mcp-auth ended after $2: $(cat "$T_ROOT/login.err")"
}
expect_refused "$(url_with "$cb_url" state wrong-state-value)" "a wrong state" "its state is not this sign-in's"
expect_refused "${cb_url/127.0.0.1/evil.example}" "a foreign host" "it is not this sign-in's"
port=$(node -e 'process.stdout.write(new URL(process.argv[1]).port)' "$cb_url")
expect_refused "${cb_url/:$port\//:$((port == 65535 ? 1 : port + 1))/}" "another port" "it is not this sign-in's"
expect_refused "${cb_url/\/callback/\/other}" "another path" "it is not this sign-in's"
expect_refused "$(url_with "$cb_url" code)" "no code" "neither a code nor an error"
expect_refused "$cb_url&state=$(url_param "$cb_url" state)" "a repeated state" "appears twice"

# the address the browser ended on: signed in
printf '  %s  \n' "$cb_url" >&7
rc=0
wait "$lpid" || rc=$?
exec 7>&-
assert_eq "$rc" 0 "sign-in by the pasted address ($(cat "$T_ROOT/login.err"))"
assert_contains "$(cat "$T_ROOT/login.err")" "signed in to $MCP"
assert_contains "$(cat "$T_ROOT/login.err")" "took the pasted address"
assert_not_contains "$(cat "$T_ROOT/login.err")" "$code" "mcp-auth's messages"
run 0 A header demo
assert_eq "$(mcp_status "$OUT")" 200 "initialize with the token of the pasted sign-in"

# ---- an error, and an answer without the issuer the server promises (RFC 9207) ----
# each ends the sign-in cleanly, the tokens held kept
paste_one() { # LABEL TRANSFORM: a fresh sign-in, fed its own callback address transformed
    rm -f "$T_ROOT/in"
    mkfifo "$T_ROOT/in"
    A login demo --no-browser --paste --timeout 60s <"$T_ROOT/in" >/dev/null 2>"$T_ROOT/$1.err" &
    lpid=$!
    T_PEER_PIDS+=("$lpid")
    exec 7>"$T_ROOT/in"
    wait_until 20 "mcp-auth to ask for the pasted address ($1)" \
        grep -q "or paste the address" "$T_ROOT/$1.err"
    local state redirect iss
    state=$(url_param "$(sed -n 's/^  \(http[^ ]*\)$/\1/p' "$T_ROOT/$1.err" | head -n 1)" state)
    redirect=$(url_param "$(sed -n 's/^  \(http[^ ]*\)$/\1/p' "$T_ROOT/$1.err" | head -n 1)" redirect_uri)
    iss=$(node -e 'process.stdout.write(encodeURIComponent(process.argv[1]))' "$AS")
    printf '%s\n' "$("$2" "$redirect" "$state" "$iss")" >&7
    rc=0
    wait "$lpid" || rc=$?
    exec 7>&-
}
with_error() { printf '%s?error=access_denied&error_description=no+thanks&state=%s&iss=%s' "$1" "$2" "$3"; }
paste_one error with_error
[ "$rc" -ne 0 ] || fail "a pasted error signed in"
T_CHECKS=$((T_CHECKS + 1))
assert_contains "$(cat "$T_ROOT/error.err")" "sign-in failed: access_denied: no thanks"
without_iss() { printf '%s?code=some-code-value&state=%s' "$1" "$2"; }
paste_one no-iss without_iss
[ "$rc" -ne 0 ] || fail "an answer without iss signed in"
T_CHECKS=$((T_CHECKS + 1))
assert_contains "$(cat "$T_ROOT/no-iss.err")" "did not come from the expected authorization server"
run 0 A header demo
assert_eq "$(mcp_status "$OUT")" 200 "the tokens held, after the refused sign-ins"

# ---- on a terminal, the browser opened by mcp-auth ($BROWSER) ----
A logout demo >/dev/null 2>&1
export BROWSER="node $PEERS_DIR/browser.mjs"
export BROWSER_HOLD_CALLBACK="$T_ROOT/tty.url"
pty_drive "expect or paste the address your browser ends on here
sendfile $T_ROOT/tty.url
expect signed in to
wait 0" "$MCP_AUTH_BIN" login demo --timeout 60s
unset BROWSER_HOLD_CALLBACK
tty_code=$(url_param "$(cat "$T_ROOT/tty.url")" code)
[ -n "$tty_code" ] || fail "the held callback carries no code"
T_CHECKS=$((T_CHECKS + 1))
# echo is off while waiting: the terminal never shows the code
assert_not_contains "$OUT" "$tty_code" "the terminal's transcript"
assert_contains "$OUT" "took the pasted address"
run 0 A header demo
assert_eq "$(mcp_status "$OUT")" 200 "initialize with the token of the terminal sign-in"
