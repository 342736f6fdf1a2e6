# The account chooser: a sign-in as an account other than the default one asks the authorization
# server for prompt=select_account, so that a browser still signed in as another user lets the
# person choose. Real peers: oidc-provider (its dev login page standing for the chooser: the
# harness asks select_account as login) and headless Chromium with one profile kept across the
# sign-ins, as a person's browser keeps its session. The default account's sign-in sends no
# prompt; --account's sends select_account and signs in as the user typed, not as the session's;
# an entry whose authorizationParams set "prompt" keeps its own, and then the session's user is
# who signs in (the browser shows no login page).
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"

A() { "$MCP_AUTH_BIN" "$@"; }
export BROWSER="node $PEERS_DIR/browser.mjs"
export BROWSER_LOG="$T_ROOT/browser.log"
export BROWSER_PROFILE="$T_ROOT/profile"

start_peer auth-server
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
MCP=$PEER_URL
case "$MCP" in */mcp) ;; *) MCP="$MCP/mcp" ;; esac
mkdir -p "$PI_CODING_AGENT_DIR"
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<EOF
{"mcpServers": {
  "demo": {"url": "$MCP"},
  "pinned": {"url": "$MCP", "oauth": {"account": "pinned", "authorizationParams": {"prompt": "consent"}}}
}}
EOF

# the prompt of the last authorization request the server received ("none": absent)
last_prompt() {
    json_get "$(curl -sS --max-time 10 "$AS/__test/stats")" \
        'j.authorization_queries[j.authorization_queries.length - 1].prompt ?? "none"'
}
# the JWT subject of the token `mcp-auth header ARGS...` gives
sub_of() {
    local hdr
    hdr=$(A header "$@") || fail "mcp-auth header $*: $(A header "$@" 2>&1)"
    node -e 'const t = process.argv[1].replace(/^Authorization: Bearer /, "");
        process.stdout.write(JSON.parse(Buffer.from(t.split(".")[1], "base64url")).sub)' "$hdr"
}
logins() { grep -c "^login " "$BROWSER_LOG" || true; }

# the default account: no prompt; the browser signs in and keeps the session
BROWSER_LOGIN=plain-user run 0 A login demo --timeout 90s
assert_eq "$(last_prompt)" none "the default account's prompt"
assert_eq "$(sub_of demo)" plain-user
assert_eq "$(logins)" 1 "login pages shown"

# another account: select_account, and the browser, still signed in as plain-user, chooses
BROWSER_LOGIN=work-user run 0 A login demo --account work --timeout 90s
assert_eq "$(last_prompt)" select_account "--account's prompt"
assert_eq "$(logins)" 2 "login pages shown"
assert_eq "$(sub_of --account work demo)" work-user "the account chosen"
assert_eq "$(sub_of demo)" plain-user "the default account's token"

# the entry's own prompt wins; then nothing asks to choose, and the session's user signs in
BROWSER_LOGIN=other-user run 0 A login pinned --timeout 90s
assert_eq "$(last_prompt)" consent "the entry's prompt"
assert_eq "$(logins)" 2 "login pages shown (the session's user was taken)"
assert_eq "$(sub_of pinned)" work-user "the session's user"
