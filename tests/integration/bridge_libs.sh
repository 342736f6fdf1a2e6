# mcp-bridge maps libcurl and libmicrohttpd only on the paths that use them (docs/development.md,
# "What loads when"): neither is among its NEEDED libraries (mcp-auth still links libmicrohttpd);
# a bridge relaying server-everything over stdio answers a call without having mapped libcurl,
# libmicrohttpd or GnuTLS; `connect --listen` maps libmicrohttpd and serves a real client (curl)
# and a second bridge, which reaches it as its HTTP server with libcurl mapped and libmicrohttpd
# not. Then with both libraries broken (an empty file of each name first in LD_LIBRARY_PATH):
# `call` over stdio still works; `--listen` fails with exit 1 and an HTTP server with exit 3 (its
# URL cannot be checked), each with a message naming the Debian package to install.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

EV="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$EV" ] || fail "server-everything is missing: run scripts/install-deps"
command -v readelf >/dev/null || fail "readelf is missing (binutils)"
export MCP_BRIDGE_CACHE=off
cat >"$T_ROOT/mcp.json" <<EOF
{ "mcpServers": { "everything": { "command": "$(command -v node)", "args": ["$EV", "stdio"] } } }
EOF

# --- what the executables link
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
BRIDGE_NEEDED=$(needed "$MCP_BRIDGE_BIN")
for lib in libcurl libmicrohttpd libgnutls libsecret; do
    assert_not_contains "$BRIDGE_NEEDED" "$lib" "mcp-bridge's NEEDED libraries"
done
assert_contains "$(needed "$MCP_AUTH_BIN")" libmicrohttpd.so "mcp-auth's NEEDED libraries"

# --- a bridge on stdio, driven line by line through two FIFOs (fd 7 its stdin, fd 8 its stdout)
BPID=
bridge_start() { # LABEL ARGS...
    local label=$1
    shift
    rm -f "$T_ROOT/in" "$T_ROOT/out.fifo"
    mkfifo "$T_ROOT/in" "$T_ROOT/out.fifo"
    "$MCP_BRIDGE_BIN" --config "$T_ROOT/mcp.json" "$@" <"$T_ROOT/in" >"$T_ROOT/out.fifo" \
        2>"$T_ROOT/$label.log" &
    BPID=$!
    exec 7>"$T_ROOT/in" 8<"$T_ROOT/out.fifo"
}
# ask ID JSON: sends one request, sets ANSWER to the line answering ID (30 s at most)
ask() {
    local id=$1 line end=$((SECONDS + 30))
    printf '%s\n' "$2" >&7
    while [ "$SECONDS" -lt "$end" ]; do
        IFS= read -r -t 5 line <&8 || continue
        case "$line" in *"\"id\":$id,"* | *"\"id\":$id}"*)
            ANSWER=$line
            T_CHECKS=$((T_CHECKS + 1))
            return 0
            ;;
        esac
    done
    fail "no answer to request $id within 30 s: $(tail -5 "$T_ROOT/"*.log)"
}
# bridge_call: initialize, then the echo tool; the answer must hold its text
bridge_call() {
    ask 1 '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bridge_libs","version":"1"}}}'
    assert_contains "$ANSWER" '"serverInfo"' "the initialize answer"
    printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&7
    ask 2 '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"through the bridge"}}}'
    assert_contains "$ANSWER" 'Echo: through the bridge' "the echo answer"
}
# bridge_stop LABEL: closes its stdin; it must exit 0
bridge_stop() {
    exec 7>&- 8<&-
    local rc=0
    wait "$BPID" || rc=$?
    assert_eq "$rc" 0 "$1: exit status once its stdin closed ($(tail -3 "$T_ROOT/$1.log"))"
}
maps() { awk '{print $6}' "/proc/$1/maps" | sort -u; }

bridge_start stdio connect everything
bridge_call
MAPS=$(maps "$BPID")
assert_contains "$MAPS" libjson-c "the stdio bridge's mappings"
for lib in libcurl libmicrohttpd libgnutls libp11-kit; do
    assert_not_contains "$MAPS" "$lib" "the stdio bridge's mappings"
done
bridge_stop stdio

# --- connect --listen: libmicrohttpd loaded, a real HTTP client served
"$MCP_BRIDGE_BIN" --config "$T_ROOT/mcp.json" connect everything --listen 127.0.0.1:0 \
    --listen-url-file "$T_ROOT/listen.url" </dev/null >/dev/null 2>"$T_ROOT/listen.log" &
LISTEN_PID=$!
wait_until 20 "the listener's URL" test -s "$T_ROOT/listen.url"
URL=$(cat "$T_ROOT/listen.url")
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
code=$(curl -sS -o "$T_ROOT/body" -w '%{http_code}' -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -d "$INIT" "$URL")
assert_eq "$code" 200 "initialize over HTTP"
assert_contains "$(cat "$T_ROOT/body")" '"serverInfo"' "the HTTP initialize answer"
assert_contains "$(maps "$LISTEN_PID")" libmicrohttpd.so "the listening bridge's mappings"

# --- a second bridge with the listener as its HTTP server: libcurl loaded, libmicrohttpd not
bridge_start http connect "$URL"
bridge_call
MAPS=$(maps "$BPID")
assert_contains "$MAPS" libcurl.so "the HTTP client bridge's mappings"
assert_not_contains "$MAPS" libmicrohttpd "the HTTP client bridge's mappings"
bridge_stop http
kill -TERM "$LISTEN_PID"
rc=0
wait "$LISTEN_PID" || rc=$?
assert_eq "$rc" 0 "the listener's exit status after SIGTERM"

# --- both libraries missing: an empty file of each name comes first in the search path
mkdir "$T_ROOT/broken"
: >"$T_ROOT/broken/libmicrohttpd.so.12"
: >"$T_ROOT/broken/libcurl.so.4"
broken() { LD_LIBRARY_PATH="$T_ROOT/broken${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 60 "$@"; }
run 0 broken "$MCP_BRIDGE_BIN" --config "$T_ROOT/mcp.json" call everything echo '{"message":"no libs"}'
assert_contains "$OUT" "Echo: no libs" "call over stdio without libcurl and libmicrohttpd"
run 1 broken "$MCP_BRIDGE_BIN" --config "$T_ROOT/mcp.json" connect everything --listen 127.0.0.1:0
assert_contains "$ERR" "cannot load libmicrohttpd" "--listen without libmicrohttpd"
assert_contains "$ERR" "install the Debian package libmicrohttpd12" "--listen without libmicrohttpd"
run 3 broken "$MCP_BRIDGE_BIN" call "$URL" echo
assert_contains "$ERR" "cannot load libcurl" "an HTTP server without libcurl"
assert_contains "$ERR" "install the Debian package libcurl4" "an HTTP server without libcurl"
