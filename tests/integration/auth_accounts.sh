# Several accounts for one MCP server: the same URL and issuer signed in three times through a
# real headless browser (Debian's Chromium) as three users of a real authorization server
# (oidc-provider) — the default account, "work" by --account (and the entry's
# "oauth": {"account": ...}), "home" by "account" at the top of its entry — each with its own
# tokens: status shows each with its label and
# subject, header gives each its own token (the MCP server sees its JWT's sub), the bridge calls
# two entries of one URL each with its account's token, and signing one out leaves the others.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing: run scripts/install-deps"

A() { "$MCP_AUTH_BIN" "$@"; }
B() { "$MCP_BRIDGE_BIN" "$@"; }
export BROWSER="node $PEERS_DIR/browser.mjs"
export BROWSER_LOG="$T_ROOT/browser.log"

start_peer auth-server
AS=$PEER_URL
start_peer mcp-resource-server --issuer "$AS"
MCP=$PEER_URL
case "$MCP" in */mcp) ;; *) MCP="$MCP/mcp" ;; esac
mkdir -p "$PI_CODING_AGENT_DIR"
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<EOF
{"mcpServers": {
  "demo": {"url": "$MCP"},
  "work": {"url": "$MCP", "oauth": {"account": "work"}},
  "home": {"url": "$MCP", "account": "home"}
}}
EOF

# the JWT subject of the token `mcp-auth header ARGS...` gives (the resource server's sub)
sub_of() {
    local hdr
    hdr=$(A header "$@") || fail "mcp-auth header $*: $(A header "$@" 2>&1)"
    node -e 'const t = process.argv[1].replace(/^Authorization: Bearer /, "");
        process.stdout.write(JSON.parse(Buffer.from(t.split(".")[1], "base64url")).sub)' "$hdr"
}
# status --json's element for the label (null: the default account), as JSON
status_of() { json_get "$OUT" "JSON.stringify(j.servers.find(s => s.label === $1))"; }

# three sign-ins to one URL and issuer, as three users
BROWSER_LOGIN=plain-user run 0 A login demo --timeout 90s
assert_contains "$ERR" "signed in to $MCP"
assert_not_contains "$ERR" "as the account"
BROWSER_LOGIN=work-user run 0 A login demo --account work --timeout 90s
assert_contains "$ERR" "signed in to $MCP as the account 'work'"
BROWSER_LOGIN=home-user run 0 A login home --timeout 90s
assert_contains "$ERR" "signed in to $MCP as the account 'home'"
assert_eq "$(ls "$PI_CODING_AGENT_DIR"/oauth/*.json | wc -l)" 3 "entry files"

# status: each with its label and whom the server says signed in, named by its entries
run 0 A status --json
assert_eq "$(json_get "$OUT" 'j.servers.length')" 3
assert_eq "$(json_get "$OUT" 'JSON.stringify(j.servers.map(s => s.label))')" '[null,"home","work"]' \
    "labels, the default account first"
assert_eq "$(json_get "$(status_of null)" 'j.account + " " + JSON.stringify(j.names)')" 'plain-user ["demo"]'
assert_eq "$(json_get "$(status_of '"work"')" 'j.account + " " + JSON.stringify(j.names)')" 'work-user ["work"]'
assert_eq "$(json_get "$(status_of '"home"')" 'j.account + " " + JSON.stringify(j.names)')" 'home-user ["home"]'
assert_eq "$(json_get "$OUT" 'new Set(j.servers.map(s => s.url + " " + s.issuer)).size')" 1 \
    "one URL and issuer"
run 0 A status
assert_eq "$(awk '$1 == "work" { print $2, $3 }' <<<"$OUT")" "work-user work" "status: NAME ACCOUNT LABEL"
assert_eq "$(awk '$1 == "home" { print $2, $3 }' <<<"$OUT")" "home-user home" "status: NAME ACCOUNT LABEL"
assert_eq "$(awk '$1 == "demo" { print $2, $3 }' <<<"$OUT")" "plain-user -" "status: the default account"
run 0 A status --account work
assert_eq "$(grep -c "$MCP" <<<"$OUT")" 1 "status --account: that account only"
assert_contains "$OUT" "work-user"
run 0 A status --json home
assert_eq "$(json_get "$OUT" 'j.servers.map(s => s.account).join()')" "home-user" "status SERVER: its account"

# header: each account its own token, which the MCP server takes as its own user's
assert_eq "$(sub_of demo)" plain-user "the default account's token"
assert_eq "$(sub_of --account work demo)" work-user "--account work's token"
assert_eq "$(sub_of work)" work-user "the entry work's token"
assert_eq "$(sub_of "$MCP" --account home)" home-user "a URL with --account home"
assert_eq "$(sub_of home)" home-user "the entry home's token"
run 2 A header --account 'my work' demo
assert_contains "$ERR" "'my work' is not an account name"
run 4 A header --account nobody demo
assert_contains "$ERR" "sign in with: mcp-auth demo --account nobody"

# the bridge: two entries for one URL are two servers, each called with its account's token;
# it names the entry's account to mcp-auth (seen through a wrapper that records its arguments)
cat >"$T_ROOT/mcp-auth-args" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >>"$T_ROOT/mcp-auth.args"
exec "$MCP_AUTH_BIN" "\$@"
EOF
chmod +x "$T_ROOT/mcp-auth-args"
export CREDKIT_MCP_AUTH="$T_ROOT/mcp-auth-args"
run 0 B call work whoami '{}'
assert_contains "$OUT" '"sub":"work-user"'
assert_contains "$(cat "$T_ROOT/mcp-auth.args")" "header --json --account work -- work"
run 0 B call home whoami '{}'
assert_contains "$OUT" '"sub":"home-user"'
assert_contains "$(cat "$T_ROOT/mcp-auth.args")" "header --json --account home -- home"
run 0 B call demo whoami '{}'
assert_contains "$OUT" '"sub":"plain-user"'
# (an entry without "auth" signs in after its first 401: header --refresh then)
assert_contains "$(tail -n 1 "$T_ROOT/mcp-auth.args")" "-- demo"
assert_not_contains "$(tail -n 1 "$T_ROOT/mcp-auth.args")" "--account" "the default account's arguments"
unset CREDKIT_MCP_AUTH

# signing one account out leaves the others signed in
run 0 A logout --account work demo
run 4 A header work
assert_contains "$ERR" "sign in with: mcp-auth work"
run 4 A header --account work demo
assert_contains "$ERR" "sign in with: mcp-auth demo --account work"
assert_eq "$(sub_of home)" home-user "home after work's logout"
assert_eq "$(sub_of demo)" plain-user "the default account after work's logout"
run 0 B call home whoami '{}'
assert_contains "$OUT" '"sub":"home-user"'
# mcp-bridge list tells each entry's sign-in by its URL and account
run 0 B list --json
state_of() { json_get "$OUT" "j.servers.find(s => s.name === \"$1\").credentials.oauth.state"; }
assert_eq "$(state_of work)" login-required "list: work after its logout"
assert_eq "$(state_of home)" signed-in "list: home"
assert_eq "$(state_of demo)" signed-in "list: the default account"
run 0 A logout home
run 0 A status --json
assert_eq "$(json_get "$OUT" 'JSON.stringify(j.servers.map(s => s.label))')" '[null]' "after both logouts"
assert_eq "$(sub_of demo)" plain-user "the default account at the end"
