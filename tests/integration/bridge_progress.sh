# Progress on a terminal, silence otherwise: `mcp-bridge test` and `call` of a server that takes
# seconds to start say what they wait for after a second ("connecting to 'slow'... 1s"), on a
# real terminal (ptydrive), and erase the line before the result; `list --check` counts the
# servers it checks. Not a terminal, or -q: not a word of it.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at the mcp-bridge binary (ctest sets it)}"
export CREDKIT_SECRETS="$SECRETS_BIN" CREDKIT_MCP_AUTH="$MCP_AUTH_BIN"
export CREDKIT_BRIDGE_BUNDLED= TERM=xterm
TINY="$PEERS_DIR/tiny-server.mjs"
# a server that is slow to start, as one fetched by npx at its first use
cat >"$T_ROOT/slow-server" <<EOF2
#!/bin/sh
sleep 3
exec node "$TINY" --name slow
EOF2
chmod 755 "$T_ROOT/slow-server"
cat >"$T_ROOT/mcp.json" <<EOF2
{"mcpServers": {"slow": {"command": "$T_ROOT/slow-server"}}}
EOF2
B=("$MCP_BRIDGE_BIN" --config "$T_ROOT/mcp.json")

# on a terminal: the wait is said, with the time, then erased before the tools are listed
pty_drive "expect connecting to 'slow'... 1s
expect connecting to 'slow'... 2s
expect says the message back
wait 0" "${B[@]}" test slow
assert_contains "$OUT" $'\r\033[K'"'slow': connected over stdio" "the line is erased before the result"

# call: the same
pty_drive "expect connecting to 'slow'... 1s
expect hello there
wait 0" "${B[@]}" call slow echo '{"message": "hello there"}'

# list --check: the servers counted
pty_drive "expect checking 1 server... 1s
expect ready
wait 0" "${B[@]}" list --check

# -q on a terminal: silent
pty_drive "expect says the message back
noecho connecting to
wait 0" "${B[@]}" -q test slow

# not a terminal: silent
run 0 "${B[@]}" test slow
assert_not_contains "$ERR" "connecting to" "stderr is not a terminal"
assert_contains "$OUT" "says the message back"
