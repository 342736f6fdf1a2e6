#!/usr/bin/env bash
# mcp-auth treats plain http as the bridge does: `login` and `header` for an http:// server on a
# host that is not loopback are refused before anything is sent (exit 3, the fix named), unless
# the entry says "allowHttp": true or a URL comes with --allow-http; loopback http stays allowed.
# A key written in a URL's query appears in no message.
# Inside a private network namespace: 10.255.255.1 is unreachable there, so what is let through
# fails at once on the network (exit 5), and what is refused never tries.
. "$(dirname "$0")/lib/netns.sh"
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
A() { "$MCP_AUTH_BIN" "$@"; }
KEY="urlkey-$RANDOM-$RANDOM"
t_canary "$KEY"
mkdir -p "$PI_CODING_AGENT_DIR"
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<EOF2
{ "mcpServers": {
    "remote": { "url": "http://10.255.255.1:9/mcp" },
    "remote-allowed": { "url": "http://10.255.255.1:9/allowed", "allowHttp": true },
    "local": { "url": "http://127.0.0.1:9/mcp" },
    "local-name": { "url": "http://localhost:9/mcp" }
} }
EOF2
refusal="is plain http to a host that is not loopback: its token would go in clear"

echo "== refused, by name and by URL, before anything is sent"
run 3 A login remote --timeout 5s
assert_contains "$ERR" "'remote' $refusal; use an https:// URL, or set \"allowHttp\": true in the entry if the network on the way is trusted"
assert_not_contains "$ERR" "discovering" "login's messages"
run 3 A remote --timeout 5s
assert_contains "$ERR" "'remote' $refusal"
run 3 A header remote
assert_contains "$ERR" "'remote' $refusal"
run 3 A header --json remote
assert_contains "$ERR" "'remote' $refusal"
# a URL of an entry is named by the entry
run 3 A header http://10.255.255.1:9/mcp
assert_contains "$ERR" "'remote' $refusal"
run 3 A header http://10.255.255.1:9/other
assert_contains "$ERR" "'http://10.255.255.1:9/other' $refusal; use an https:// URL, or give --allow-http if the network on the way is trusted"
# the URL is shown without the values of its query
run 3 A login "http://10.255.255.1:9/x?key=$KEY" --timeout 5s
assert_contains "$ERR" "'http://10.255.255.1:9/x?key=***' $refusal"
# --json: the error object names the fix
run 3 A --json header remote
assert_contains "$OUT" "allowHttp"
# --allow-http goes with a URL: an entry says it itself
run 3 A header --allow-http remote
assert_contains "$ERR" "--allow-http goes with a URL; for 'remote' set \"allowHttp\": true in its configuration entry"

echo "== let through: the entry's allowHttp, --allow-http with a URL, loopback"
# nothing is stored: login required (4), not refused
run 4 A header remote-allowed
run 4 A header --allow-http http://10.255.255.1:9/other
run 4 A header local
run 4 A header local-name
run 4 A header http://127.0.0.1:9/mcp
# a sign-in goes on to discovery, which finds no network here (5)
run 5 A login remote-allowed --timeout 5s
assert_contains "$ERR" "discovering how http://10.255.255.1:9/allowed is protected"
run 5 A login --allow-http http://10.255.255.1:9/other --timeout 5s
run 5 A login local --timeout 5s
assert_not_contains "$ERR" "$refusal" "loopback's messages"

echo "== a key written in the URL's query is in no message"
run 4 A header "http://127.0.0.1:9/x?key=$KEY"
assert_contains "$ERR" "no sign-in for 'http://127.0.0.1:9/x?key=[REDACTED:url]' yet"
run 4 A --json header "http://127.0.0.1:9/x?key=$KEY"
assert_eq "$(json_get "$OUT" 'j.error.fix')" "run 'mcp-auth http://127.0.0.1:9/x?key=[REDACTED:url]'"
run 5 A login "http://127.0.0.1:9/x?key=$KEY&v=1" --timeout 5s
assert_contains "$ERR" "discovering how http://127.0.0.1:9/x?key=[REDACTED:url]&v=1 is protected"
