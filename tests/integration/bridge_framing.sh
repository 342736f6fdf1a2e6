#!/usr/bin/env bash
# Headers that frame the request (Content-Length, Transfer-Encoding, Host, Connection, Upgrade,
# TE ...) or its MCP session (Mcp-Session-Id, MCP-Protocol-Version) never come from an entry's
# "headers" or a headersHelper's answer: a Content-Length of their own would cut the body and
# send the rest as a second request on the kept-alive connection. A server that records the
# raw bytes it receives (tests/peers/raw-recorder.mjs) shows what really went out: a plain
# header does, none of the refused ones, and no request at all for an entry that has one.
. "$(dirname "$0")/lib/common.sh"

REC="$T_ROOT/raw.txt"
: >"$REC"
start_peer raw-recorder --out "$REC"
URL="$PEER_URL/mcp"

# a helper that answers one good header and one given by its argument
helper() { # FILE NAME VALUE
    printf '#!/bin/sh\nprintf %%s %s\n' \
        "'{\"headers\":{\"X-Helper\":\"from-helper\",\"$2\":\"$3\"},\"version\":1}'" >"$T_ROOT/$1"
    chmod +x "$T_ROOT/$1"
}
helper helper-good.sh X-Extra fine
helper helper-cl.sh Content-Length 5
helper helper-te.sh Transfer-Encoding chunked
helper helper-host.sh Host evil.example
helper helper-sess.sh Mcp-Session-Id smuggled-session
cat >"$T_ROOT/mcp.json" <<EOF2
{ "mcpServers": {
    "good": { "url": "$URL", "headers": { "X-Plain": "plain-value" } },
    "good-helper": { "url": "$URL", "headersHelper": "$T_ROOT/helper-good.sh" },
    "entry-cl": { "url": "$URL", "headers": { "Content-Length": "5" } },
    "entry-te": { "url": "$URL", "headers": { "transfer-encoding": "chunked" } },
    "entry-host": { "url": "$URL", "headers": { "Host": "evil.example" } },
    "entry-conn": { "url": "$URL", "headers": { "Connection": "Upgrade", "Upgrade": "h2c" } },
    "entry-sess": { "url": "$URL", "headers": { "MCP-Protocol-Version": "1999-01-01" } },
    "helper-cl": { "url": "$URL", "headersHelper": "$T_ROOT/helper-cl.sh" },
    "helper-te": { "url": "$URL", "headersHelper": "$T_ROOT/helper-te.sh" },
    "helper-host": { "url": "$URL", "headersHelper": "$T_ROOT/helper-host.sh" },
    "helper-sess": { "url": "$URL", "headersHelper": "$T_ROOT/helper-sess.sh" }
} }
EOF2
bridge_test() { # STATUS NAME
    run "$1" "$MCP_BRIDGE_BIN" --config "$T_ROOT/mcp.json" test "$2" --connect-timeout 5s
}

echo "== the control: a plain header, from the entry and from a helper, reaches the wire"
bridge_test 1 good
bridge_test 1 good-helper
raw=$(cat "$REC")
assert_contains "$raw" "POST /mcp HTTP/1.1" "the record"
assert_contains "$raw" "X-Plain: plain-value" "the record"
assert_contains "$raw" "X-Helper: from-helper" "the record"
assert_contains "$raw" "X-Extra: fine" "the record"
before=$(wc -c <"$REC")

echo "== an entry that sets one is invalid (exit 3), and names the header"
for name in entry-cl:Content-Length entry-te:transfer-encoding entry-host:Host \
    entry-conn:Connection entry-sess:MCP-Protocol-Version; do
    bridge_test 3 "${name%%:*}"
    assert_contains "$ERR" "header '${name#*:}' in \"headers\" is refused:"
done
assert_contains "$ERR" "it belongs to the MCP session, which only the transport sets"
run 0 "$MCP_BRIDGE_BIN" --config "$T_ROOT/mcp.json" list
assert_contains "$OUT$ERR" "header 'Content-Length' in \"headers\" is refused: it frames the HTTP request, which only the transport sets: remove it"

echo "== a helper's answer that sets one is refused whole, naming the header"
for name in helper-cl:Content-Length helper-te:Transfer-Encoding helper-host:Host \
    helper-sess:Mcp-Session-Id; do
    bridge_test 1 "${name%%:*}"
    assert_contains "$ERR" "header '${name#*:}': it "
done
assert_contains "$ERR" "belongs to the MCP session"

echo "== nothing of theirs reached the wire: not even a request"
assert_eq "$(wc -c <"$REC")" "$before" "bytes recorded after the refusals"
raw=$(cat "$REC")
for bad in "Content-Length: 5" "chunked" "evil.example" "h2c" "1999-01-01" "smuggled-session"; do
    assert_not_contains "$raw" "$bad" "the record"
done
