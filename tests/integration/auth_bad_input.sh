# mcp-auth against a faulty authorization server (tests/peers/bad-auth-server.mjs, one fault per
# run): every kind of bad input of issue 3 ends the sign-in with its exit status and a message
# naming the problem, and writes no token; a failed sign-in never overwrites the sign-in already
# stored; the callback that never comes and the callback with the wrong state end with the
# timeout message; a server that forgot the client gets a second registration in the same run.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
command -v curl >/dev/null || fail "curl is missing"

export BROWSER="$PEERS_DIR/fetch-browser.sh"
TIMEOUT=5 # seconds mcp-auth waits for the browser; every run is also killed after 60 s
A() { "$MCP_AUTH_BIN" "$@"; }
login() { timeout -k 5 60 "$MCP_AUTH_BIN" login demo --timeout "${TIMEOUT}s" "$@"; }

# "help COMMAND" is the command's own help, as "COMMAND --help"
for c in login header status logout; do
    run 0 A help "$c"
    assert_contains "$OUT" "usage: mcp-auth $c" "help $c"
done
run 0 A help
assert_contains "$OUT" "usage: mcp-auth"
run 2 A help frobnicate
assert_contains "$ERR" "unknown command 'frobnicate'"
run 2 A help header status
assert_contains "$ERR" "help takes at most one COMMAND"
assert_eq "$OUT" "" "standard output of a help with two commands"

# use_store NAME: a fresh token store of its own
use_store() {
    export PI_CODING_AGENT_DIR="$T_ROOT/agent-$1"
    mkdir -p "$PI_CODING_AGENT_DIR"
}
# start_peer reads the READY line from $T_ROOT/NAME.out, which the new process truncates only
# once it runs: a second instance could be taken for ready on the first one's line
hold_peer_start() {
    rm -f "$T_ROOT/bad-auth-server.out"
    start_peer bad-auth-server "$@"
}
# serve FAULT [--port N]: (re)starts the faulty server; AS is its URL; mcp.json names it "demo"
serve() {
    local fault=$1
    shift
    hold_peer_start --fault "$fault" "$@"
    SERVER_PID=${T_PEER_PIDS[-1]}
    AS=$PEER_URL
    printf '{"mcpServers": {"demo": {"url": "%s/mcp"}}}\n' "$AS" >"$PI_CODING_AGENT_DIR/mcp.json"
}
stop_server() {
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
}
stat_of() { json_get "$(curl -sS --max-time 10 "$AS/__test/stats")" "$1"; }
# no stored entry holds a token, by `status` and by the files themselves
assert_no_token() {
    run 0 A status --json
    if grep -Eq '"has_access_token"[[:space:]]*:[[:space:]]*true' <<<"$OUT"; then
        fail "status shows an access token after '$1':
$OUT"
    fi
    if grep -rqs '"access_token"' "$PI_CODING_AGENT_DIR/oauth"; then
        fail "a token was written to $PI_CODING_AGENT_DIR/oauth after '$1'"
    fi
    T_CHECKS=$((T_CHECKS + 1))
}
ms_now() { echo $(($(date +%s%N) / 1000000)); }

# ---- each fault on a fresh store: exit status, message, no token ----
# fault | exit status | a distinctive part of the message ({AS} is the server's URL)
cases=(
    "issuer-mismatch|5|names the issuer 'https://issuer.example', not '{AS}': refusing to use it"
    "no-s256|5|does not advertise PKCE with S256 (code_challenge_methods_supported): refusing to sign in"
    "no-pkce-field|5|does not advertise PKCE with S256"
    "resource-mismatch|5|is for 'https://other.example/mcp', not for '{AS}/mcp': refusing to authorize"
    "oversized-metadata|5|authorization server metadata at '{AS}/.well-known/oauth-authorization-server' is larger than 262144 bytes"
    "malformed-metadata|5|authorization server metadata at '{AS}/.well-known/oauth-authorization-server' is not valid JSON"
    "http-endpoint|5|token_endpoint 'http://example.invalid/token' is not https"
    "redirect-other-origin|5|redirected to another origin ('http://127.0.0.2:"
    "reg-no-client-id|5|client registration at '{AS}/register': the answer has no client_id"
    "token-no-access-token|5|token request: the answer from '{AS}/token' has no access_token"
    "token-crlf|5|token request: the access token from '{AS}/token' is not a valid bearer token"
    "iss-mismatch|5|the response to the sign-in did not come from the expected authorization server: it came back from issuer 'https://evil.example', not '{AS}': refusing it"
    "iss-missing|5|the response to the sign-in did not come from the expected authorization server: '{AS}' promises an 'iss' parameter (authorization_response_iss_parameter_supported) but the response has none: refusing it"
    "iss-normalized|5|it came back from issuer '{AS}/', not '{AS}': refusing it"
    "iss-unadvertised|5|it came back from issuer 'https://evil.example', not '{AS}': refusing it"
    "error-iss-mismatch|5|it came back from issuer 'https://evil.example', not '{AS}': refusing it"
    "error-iss-missing|5|'{AS}' promises an 'iss' parameter (authorization_response_iss_parameter_supported) but the response has none"
    "error-callback|5|sign-in failed: access_denied: User said no"
    "error-controls|5|sign-in failed: access_denied: No\\x1b[2J\\u{202e}forged"
    "no-callback|1|nobody signed in within ${TIMEOUT}s: run the command again, or use --no-browser and open the URL yourself, or use --timeout to wait longer"
    "no-registration|3|does not offer dynamic client registration: register a client there and set \"oauth\": {\"clientId\""
)
for c in "${cases[@]}"; do
    IFS='|' read -r fault want msg <<<"$c"
    use_store "$fault"
    serve "$fault"
    t0=$(ms_now)
    run "$want" login
    elapsed=$(($(ms_now) - t0))
    assert_contains "$ERR" "${msg//\{AS\}/$AS}" "message for '$fault'"
    assert_no_token "$fault"
    case $fault in
    iss-* | error-* | no-callback)
        # the code (if any) was refused before it reached the token endpoint
        assert_eq "$(stat_of 'j.token_requests')" 0 "token requests with '$fault'" ;;
    esac
    case $fault in
    error-controls)
        # the authorization server's text reaches the terminal escaped: no ESC, no override
        if LC_ALL=C grep -q $'\x1b' <<<"$ERR" || LC_ALL=C grep -q $'\xe2\x80\xae' <<<"$ERR"; then
            fail "a control character of the authorization server reached the terminal: $ERR"
        fi
        T_CHECKS=$((T_CHECKS + 1)) ;;
    token-crlf)
        assert_not_contains "$ERR" "X-Injected" "the refused token in the message" ;;
    error-iss-*)
        # an error response that fails the issuer check is neither acted on nor shown
        assert_not_contains "$ERR" "access_denied" "the error of '$fault'"
        assert_not_contains "$ERR" "Evil says no" "the error_description of '$fault'"
        assert_not_contains "$ERR" "evil.example/why" "the error_uri of '$fault'" ;;
    esac
    if [ "$fault" = no-callback ]; then
        [ "$elapsed" -ge $((TIMEOUT * 1000 - 500)) ] && [ "$elapsed" -lt $((TIMEOUT * 1000 + 10000)) ] ||
            fail "no-callback: waited ${elapsed} ms, expected about ${TIMEOUT} s"
        T_CHECKS=$((T_CHECKS + 1))
    else
        [ "$elapsed" -lt 10000 ] || fail "'$fault' took ${elapsed} ms: it should end at once"
        T_CHECKS=$((T_CHECKS + 1))
    fi
    stop_server
done

# ---- a state mismatch: the callback with the wrong state is refused and ignored; the wait
# runs out with the timeout message ----
use_store state-mismatch
serve state-mismatch
cat >"$T_ROOT/log-browser.sh" <<EOF
#!/bin/sh
# like fetch-browser.sh, and notes where it ended up and what it was answered
for url; do :; done
exec curl -sS -L --max-redirs 10 --max-time 30 -o /dev/null -w '%{http_code} %{url_effective}\n' "\$url" >>"$T_ROOT/browser.log" 2>&1
EOF
chmod +x "$T_ROOT/log-browser.sh"
t0=$(ms_now)
BROWSER="$T_ROOT/log-browser.sh" run 1 login
elapsed=$(($(ms_now) - t0))
assert_contains "$ERR" "nobody signed in within ${TIMEOUT}s: run the command again"
[ "$elapsed" -ge $((TIMEOUT * 1000 - 500)) ] || fail "state-mismatch ended after ${elapsed} ms, before the timeout"
T_CHECKS=$((T_CHECKS + 1))
# the browser reached the callback with a code and was turned away (400), and the code was
# never exchanged
wait_until 10 "the browser's log" test -s "$T_ROOT/browser.log"
assert_contains "$(cat "$T_ROOT/browser.log")" "400 http://127.0.0.1:"
assert_contains "$(cat "$T_ROOT/browser.log")" "/callback?code="
assert_eq "$(stat_of 'j.token_requests')" 0 "token requests after a state mismatch"
assert_no_token state-mismatch
stop_server

# ---- the server forgot the client (invalid_client at the token endpoint): registered again and
# signed in, in the same run, without waiting ----
use_store invalid-client-once
serve invalid-client-once
t0=$(ms_now)
run 0 login
elapsed=$(($(ms_now) - t0))
[ "$elapsed" -lt 10000 ] || fail "re-registration took ${elapsed} ms"
T_CHECKS=$((T_CHECKS + 1))
assert_contains "$ERR" "the authorization server no longer knows this client: registering again"
assert_contains "$ERR" "signed in to $AS/mcp"
assert_eq "$(stat_of 'j.registrations')" 2 "registrations"
assert_eq "$(stat_of 'j.token_requests')" 2 "token requests"
assert_eq "$(stat_of 'j.tokens_issued')" 1 "tokens issued"
run 0 A status --json
assert_eq "$(json_get "$OUT" 'j.servers[0].has_access_token')" true
assert_contains "$(json_get "$OUT" 'j.servers[0].client_id')" "client-2-" "the stored client"
stop_server

# ---- nothing existing overwritten: sign in, then fail against the same URL (same port, another
# fault) ----
use_store keep
PORT=$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });')
serve none --port "$PORT"
run 0 login
assert_contains "$ERR" "signed in to $AS/mcp"
entries=("$PI_CODING_AGENT_DIR"/oauth/*.json)
assert_eq "${#entries[@]}" 1 "entry files"
ENTRY=${entries[0]}
cp -p "$ENTRY" "$T_ROOT/entry.orig"
run 0 A header demo
HEADER=$OUT
stop_server
# what an entry holds, without secrets
summary() { node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); process.stdout.write(`client ${j.registration?.client_id}, redirect ${j.registration?.redirect_uri}, access token: ${!!j.tokens?.access_token}, refresh token: ${!!j.tokens?.refresh_token}`);' "$1"; }
section() { node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); process.stdout.write(JSON.stringify([j.registration, j.tokens]));' "$1"; }

# failures before the sign-in reaches the store: the file is not touched at all
for c in "issuer-mismatch|5|names the issuer 'https://issuer.example'" \
    "resource-mismatch|5|is for 'https://other.example/mcp'" "malformed-metadata|5|is not valid JSON" \
    "oversized-metadata|5|is larger than 262144 bytes" "redirect-other-origin|5|redirected to another origin" \
    "http-endpoint|5|is not https" "no-s256|5|does not advertise PKCE with S256"; do
    IFS='|' read -r fault want msg <<<"$c"
    serve "$fault" --port "$PORT"
    assert_eq "$AS" "http://127.0.0.1:$PORT" "the server's URL"
    run "$want" login
    assert_contains "$ERR" "$msg" "message for '$fault'"
    cmp -s "$ENTRY" "$T_ROOT/entry.orig" || fail "the stored entry changed after a failed sign-in ($fault)"
    T_CHECKS=$((T_CHECKS + 1))
    stop_server
done

# failures after the browser was opened, with the stored registration: the registration and the
# tokens stay exactly as they were (the file itself records the attempt: rate limit, discovery)
for c in "error-callback|5|access_denied: User said no" "iss-mismatch|5|https://evil.example" \
    "token-no-access-token|5|has no access_token"; do
    IFS='|' read -r fault want msg <<<"$c"
    serve "$fault" --port "$PORT"
    assert_eq "$AS" "http://127.0.0.1:$PORT" "the server's URL"
    run "$want" login
    assert_contains "$ERR" "$msg" "message for '$fault'"
    assert_not_contains "$ERR" "registering a client" "sign-in with the stored registration ($fault)"
    [ "$(section "$ENTRY")" = "$(section "$T_ROOT/entry.orig")" ] ||
        fail "the stored registration or tokens changed after a failed sign-in ($fault):
before: $(summary "$T_ROOT/entry.orig")
after:  $(summary "$ENTRY")"
    T_CHECKS=$((T_CHECKS + 1))
    stop_server
done

# the stored registration's callback port is taken, so a new client is registered: the tokens of
# the old one stay until new tokens replace them - a failed sign-in leaves them as they were
cp -p "$T_ROOT/entry.orig" "$ENTRY"
CB_PORT=$(node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(new URL(j.registration.redirect_uri).port);' "$ENTRY")
hold_peer_start --port "$CB_PORT" --quiet # something else holds that port
HOLDER_PID=${T_PEER_PIDS[-1]}
serve error-callback --port "$PORT"
assert_eq "$AS" "http://127.0.0.1:$PORT" "the server's URL"
run 5 login
assert_contains "$ERR" "registering a client at $AS/register"
assert_contains "$ERR" "access_denied: User said no"
# (the registration and the tokens are compared; the file records the attempt for the rate limit)
[ "$(section "$ENTRY")" = "$(section "$T_ROOT/entry.orig")" ] || fail "a failed sign-in with a new registration changed the stored registration or tokens:
before: $(summary "$T_ROOT/entry.orig")
after:  $(summary "$ENTRY")"
T_CHECKS=$((T_CHECKS + 1))
stop_server
kill -TERM "$HOLDER_PID" 2>/dev/null || true
wait "$HOLDER_PID" 2>/dev/null || true

# and the stored sign-in still works
run 0 A header demo
assert_eq "$OUT" "$HEADER" "the header after the failed sign-ins"
run 0 A status --json
assert_eq "$(json_get "$OUT" 'j.servers.length')" 1
assert_eq "$(json_get "$OUT" 'j.servers[0].has_access_token')" true

# ---- a stored token that could not go out as a header (an older version's store, or edited
# by hand): never handed out, by `header` or `header --json`; "login required" with the reason
# and the command; `status` says it is unusable and the file's issuer reaches it escaped ----
node -e '
const fs = require("fs"), f = process.argv[1], j = JSON.parse(fs.readFileSync(f, "utf8"));
j.tokens.access_token = "at-x\r\nX-Injected: 1";
delete j.tokens.refresh_token;
fs.writeFileSync(f, JSON.stringify(j), { mode: 0o600 });' "$ENTRY"
for form in "" --json; do
    run 4 A header $form demo
    if [ -z "$form" ]; then
        assert_eq "$OUT" "" "standard output of header with a bad stored token"
    else
        assert_eq "$(json_get "$OUT" 'j.error.code')" "login_required" "header --json's error object"
        assert_eq "$(json_get "$OUT" 'j.error.fix')" "run 'mcp-auth demo'"
        assert_not_contains "$OUT" "X-Injected" "the error object of header --json"
    fi
    assert_contains "$ERR" "the stored token for '$AS/mcp' is not a valid bearer token"
    assert_contains "$ERR" "sign in with: mcp-auth demo"
    assert_not_contains "$ERR" "X-Injected" "the message of header $form"
done
run 0 A status
assert_contains "$OUT" "unusable"
run 0 A status --json
assert_eq "$(json_get "$OUT" 'j.servers[0].access_token_usable')" false

# ---- the store's files: an entry that is a symbolic link is refused naming its target (a
# chmod would change the target), never followed nor replaced; a store directory others can
# enter is tightened to 0700 by any command that reads it ----
mv "$ENTRY" "$T_ROOT/entry.target"
ln -s "$T_ROOT/entry.target" "$ENTRY"
run 1 A header demo
assert_contains "$ERR" "is a symbolic link to '$T_ROOT/entry.target'"
assert_eq "$OUT" "" "standard output of header with a symlinked entry"
[ -L "$ENTRY" ] || fail "the symlinked entry was replaced"
T_CHECKS=$((T_CHECKS + 1))
rm "$ENTRY"
mv "$T_ROOT/entry.target" "$ENTRY"
chmod 0755 "$PI_CODING_AGENT_DIR/oauth"
run 0 A status
assert_eq "$(file_mode "$PI_CODING_AGENT_DIR/oauth")" 700 "the store's mode after status"
