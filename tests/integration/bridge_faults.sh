# mcp-bridge while its servers fail (tests/peers/bridge-faults.mjs, the SDK's Client on
# `mcp-bridge serve`), inside a private network namespace (the SDK's example servers bind every
# interface): a stdio server killed in the middle of a call, one that exits, one that hangs
# (SIGSTOP), calls that outlive the entry's "timeout" (the server must see notifications/cancelled),
# an HTTP session the server forgets (re-initialized, the call retried once), HTTP servers
# restarted on the same port, an HTTP server that hangs. The agent must get tool results with
# isError, then working calls again; the bridge must never exit, and at the end exit 0 at the end
# of its stdin with every process reaped (no process of this test may be left).
. "$(dirname "$0")/lib/netns.sh"
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

mkdir "$T_ROOT/work"
driver faults "$T_ROOT/work/bridge.log" bridge-faults.mjs \
    --bridge "$MCP_BRIDGE_BIN" --work "$T_ROOT/work" --tag "$T_ROOT"
bridge_done "mcp-bridge under faults"

# End of input: `serve` and `connect` with stdin on /dev/null or a file (which epoll refuses)
# answer what was given and exit 0 at its end, never "Operation not permitted".
printf '{"mcpServers": {"tiny": {"command": "node", "args": ["%s", "--tag", "%s"]}}}\n' \
    "$PEERS_DIR/tiny-server.mjs" "$T_ROOT" >"$T_ROOT/eof.json"
echo "== end of input"
for cmd in "serve" "connect tiny"; do
    rc=0
    # shellcheck disable=SC2086 # cmd is two words on purpose
    timeout 20 "$MCP_BRIDGE_BIN" --config "$T_ROOT/eof.json" $cmd </dev/null \
        >"$T_ROOT/eof.out" 2>"$T_ROOT/eof.err" || rc=$?
    T_CHECKS=$((T_CHECKS + 1))
    [ "$rc" = 0 ] || fail "'$cmd </dev/null' exited $rc: $(cat "$T_ROOT/eof.err")"
    ! grep -q "not permitted" "$T_ROOT/eof.err" || fail "'$cmd </dev/null': $(cat "$T_ROOT/eof.err")"
    printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
        '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
        '{"jsonrpc":"2.0","id":2,"method":"ping"}' >"$T_ROOT/eof.in"
    rc=0
    # shellcheck disable=SC2086
    timeout 20 "$MCP_BRIDGE_BIN" --config "$T_ROOT/eof.json" $cmd <"$T_ROOT/eof.in" \
        >"$T_ROOT/eof.out" 2>"$T_ROOT/eof.err" || rc=$?
    T_CHECKS=$((T_CHECKS + 1))
    [ "$rc" = 0 ] || fail "'$cmd <file' exited $rc: $(cat "$T_ROOT/eof.err")"
    T_CHECKS=$((T_CHECKS + 1))
    grep -q '"id":2,"result":{}' "$T_ROOT/eof.out" ||
        fail "'$cmd <file': no answer to the ping: $(cat "$T_ROOT/eof.out" "$T_ROOT/eof.err")"
    echo "ok $cmd: end of input on /dev/null and on a file"
done

# Flow control: an agent that sends requests without reading the answers is no longer read
# once 4 MiB wait for it; when it then closes stdin (and still does not read), the bridge
# notices at once and exits within its shutdown bound, instead of waiting for ever.
echo "== hang-up while not read"
cat >"$T_ROOT/hup-agent.mjs" <<'JS'
import { spawn } from 'node:child_process';
const [bridge, config] = process.argv.slice(2);
const child = spawn(bridge, ['-vv', '--config', config, 'serve'], { stdio: ['pipe', 'pipe', 'pipe'] });
let log = '';
child.stderr.on('data', (b) => { log += b; });
child.stdout.pause(); // never read: the answers pile up in the bridge
const id = 'x'.repeat(200); // the answers echo it: 4 MiB of them are about 17000
let sent = 0;
const send = () => {
  while (sent < 40000) {
    sent++;
    if (!child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: `${id}${sent}`, method: 'ping' }) + '\n')) {
      child.stdin.once('drain', send);
      return;
    }
  }
};
send();
const deadline = setTimeout(() => { console.log(`FAIL the bridge never stopped reading\n${log.slice(-2000)}`); child.kill('SIGKILL'); process.exit(1); }, 20000);
const wait = setInterval(() => {
  if (!/not reading it/.test(log)) return;
  clearInterval(wait);
  clearTimeout(deadline);
  console.log('ok the bridge stopped reading an agent that does not read');
  const closed = Date.now();
  child.stdin.destroy(); // the agent's side of stdin closes; stdout stays open, unread
  const late = setTimeout(() => { console.log(`FAIL no exit 20 s after the hang-up\n${log.slice(-2000)}`); child.kill('SIGKILL'); process.exit(1); }, 20000);
  child.on('exit', (code) => {
    clearTimeout(late);
    const s = (Date.now() - closed) / 1000;
    const noticed = /closed its side while not reading/.test(log);
    console.log(`${noticed ? 'ok' : 'FAIL'} the hang-up was noticed while not reading`);
    console.log(`${code === 0 && s < 12 ? 'ok' : 'FAIL'} exit ${code} ${s.toFixed(1)} s after the hang-up`);
    process.exit(noticed && code === 0 && s < 12 ? 0 : 1);
  });
}, 50);
JS
rc=0
node "$T_ROOT/hup-agent.mjs" "$MCP_BRIDGE_BIN" "$T_ROOT/eof.json" >"$T_ROOT/hup.out" 2>&1 || rc=$?
cat "$T_ROOT/hup.out"
T_CHECKS=$((T_CHECKS + $(grep -c '^ok ' "$T_ROOT/hup.out" || true)))
[ "$rc" = 0 ] || fail "the agent that hung up while not read (exit $rc)"
