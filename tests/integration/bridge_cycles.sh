# mcp-bridge over many connect/disconnect cycles and many one-shot sessions: nothing may grow.
#
# 1. One `mcp-bridge serve`, driven by the SDK's Client, with lazy stdio servers
#    (tests/peers/tiny-server.mjs) and HTTP servers (tests/peers/bridge-server.mjs, on 127.0.0.1)
#    closed after 100 ms idle: each cycle calls a server's tool (the bridge connects it), then
#    waits until the bridge has closed it (the stdio server's process is gone; the HTTP server's
#    session is closed), CYCLES of each transport, several servers at a time. The bridge's open
#    descriptors (/proc/PID/fd), child processes and VmRSS are measured after the first tenth
#    and at the end, each time with every server closed, and must not grow beyond the bounds.
# 2. SESSIONS one-shot runs of the bridge on a stdio server (a shell script that speaks MCP):
#    `mcp-bridge call`, `mcp-bridge test`, and `mcp-bridge connect` with the session on its stdin
#    up to end of input, several at a time: each exits 0 with the answer; a connect session's
#    descriptors and VmHWM are read while it runs and the last ones may not exceed the first;
#    no process is left.
# Bounded: every wait has a deadline; the whole test takes well under 3 minutes.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

CYCLES=${BRIDGE_CYCLES:-1000}
# under AddressSanitizer, freed memory is held in a quarantine (256 MiB) that VmRSS would count
# as growth: without it, what the process keeps is what it measures (leaks are LSan's at exit)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
SESSIONS=${BRIDGE_SESSIONS:-1000}
FD_SLACK=1 # descriptors (not sockets) the bridge may hold more at the end than after warm-up
RSS_SLACK_KB=$((12 * 1024)) # VmRSS growth allowed (allocator noise; a leak per cycle is far more)

# the stdio server of the one-shot runs: initialize, tools/list, tools/call answered by sh
cat >"$T_ROOT/sh-server.sh" <<'SH'
#!/bin/sh
# a minimal MCP server over stdio: one tool, "pid", answering this shell's process id
while IFS= read -r line; do
    id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
    case $line in
    *'"method":"initialize"'*)
        printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}\n' "$id" ;;
    *'"method":"tools/list"'*)
        printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"pid","inputSchema":{"type":"object"}}]}}\n' "$id" ;;
    *'"method":"tools/call"'*)
        printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"pid %s"}]}}\n' "$id" "$$" ;;
    *'"method":"ping"'*)
        printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
    *'"id":'*)
        printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}\n' "$id" ;;
    esac
done
SH
chmod +x "$T_ROOT/sh-server.sh"

N_STDIO=12
N_HTTP=6
HTTP_BASE=3260
servers=""
for i in $(seq 0 $((N_STDIO - 1))); do
    servers="$servers\"s$i\": {\"command\": \"$T_ROOT/sh-server.sh\", \"directTools\": true, \"idleTimeout\": \"50ms\"},"
done
for i in $(seq 0 $((N_HTTP - 1))); do
    servers="$servers\"h$i\": {\"url\": \"http://127.0.0.1:$((HTTP_BASE + i))/mcp\", \"directTools\": true, \"idleTimeout\": \"50ms\"},"
done
printf '{"mcpServers": {%s "sh": {"command": "%s", "idleTimeout": "100ms"}}}\n' "$servers" "$T_ROOT/sh-server.sh" >"$T_ROOT/cycles.json"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for i in $(seq 0 $((N_HTTP - 1))); do
    port=$((HTTP_BASE + i))
    ! port_open "$port" || fail "port $port is taken"
    node "$PEERS_DIR/bridge-server.mjs" --transport http --port "$port" --name "h$i" --quiet \
        --tag "$T_ROOT" >"$T_ROOT/h$i.log" 2>&1 </dev/null &
    T_PEER_PIDS+=("$!")
done
for i in $(seq 0 $((N_HTTP - 1))); do
    wait_until 20 "h$i listening" port_open $((HTTP_BASE + i))
done

cat >"$T_ROOT/cycles.mjs" <<'JS'
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
const [peers, bridge, config, cyclesArg, nStdio, nHttp, httpBase, fdSlack, rssSlack] = process.argv.slice(2);
const sdk = `${peers}/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const { Client } = await import(`${sdk}/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/client/stdio.js`);
const cycles = Number(cyclesArg);
let failed = 0;
const ok = (cond, what) => { console.log(`${cond ? 'ok' : 'FAIL'} ${what}`); if (!cond) failed++; };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, ms, fn) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(10);
  }
}
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };

const t = new StdioClientTransport({ command: bridge, args: ['--config', config, 'serve'], stderr: 'pipe', env: process.env });
let log = '';
t.stderr.on('data', (b) => { log = (log + b).slice(-20000); });
const client = new Client({ name: 'cycles', version: '1' });
await client.connect(t);
const bpid = t.pid;

let lastChildren = '';
function measure() {
  const fdNames = readdirSync(`/proc/${bpid}/fd`);
  const fds = fdNames.length;
  let sockets = 0;
  for (const f of fdNames) {
    try { if (readlinkSync(`/proc/${bpid}/fd/${f}`).startsWith('socket:')) sockets++; } catch { /* closed */ }
  }
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${bpid}/status`, 'utf8'))[1]);
  let children = 0;
  const names = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]) === bpid) {
        children++;
        names.push(st.slice(0, st.lastIndexOf(')') + 3));
      }
    } catch { /* gone */ }
  }
  lastChildren = names.join(', ');
  return { fds, sockets, rss, children };
}
async function openSessions(i) {
  const r = await fetch(`http://127.0.0.1:${Number(httpBase) + i}/__test/stats`);
  return (await r.json()).open_sessions;
}
const textOf = (r) => (r.content || []).map((c) => c.text || '').join('');

// one stdio cycle: a call starts the server; idle, the bridge stops it
async function stdioCycle(i) {
  const r = await client.callTool({ name: `mcp_s${i}_pid`, arguments: {} });
  const pid = r.structuredContent?.pid ?? Number(/\d+/.exec(textOf(r))?.[0]);
  if (r.isError || !pid) throw new Error(`s${i}: ${JSON.stringify(r).slice(0, 300)}`);
  await until(`s${i} (pid ${pid}) closed for being idle`, 10000, () => !alive(pid));
  return pid;
}
async function httpCycle(i) {
  const r = await client.callTool({ name: `mcp_h${i}_pid`, arguments: {} });
  if (r.isError) throw new Error(`h${i}: ${JSON.stringify(r).slice(0, 300)}`);
  await until(`h${i}'s session closed for being idle`, 10000, async () => (await openSessions(i)) === 0);
}
async function run(n, lanes, cycle) {
  let next = 0;
  const seen = new Set();
  await Promise.all(Array.from({ length: lanes }, async (_, lane) => {
    while (next < n) {
      next++;
      const pid = await cycle(lane);
      if (pid) seen.add(pid);
    }
  }));
  return seen.size;
}
async function quiet() {
  try {
    await until('every server closed', 10000, () => measure().children === 0);
  } catch (e) {
    throw new Error(`${e.message}: the bridge's children: ${lastChildren}`);
  }
  for (let i = 0; i < Number(nHttp); i++) await until(`h${i} idle`, 10000, async () => (await openSessions(i)) === 0);
}

const t0 = Date.now();
try {
  const warmN = Math.max(1, Math.floor(cycles / 10));
  await Promise.all([run(warmN, Number(nStdio), stdioCycle), run(warmN, Number(nHttp), httpCycle)]);
  await quiet();
  const warm = measure();
  const [pids] = await Promise.all([run(cycles - warmN, Number(nStdio), stdioCycle), run(cycles - warmN, Number(nHttp), httpCycle)]);
  await quiet();
  const end = measure();
  const s = ((Date.now() - t0) / 1000).toFixed(1);
  console.log(`measured: ${cycles} stdio and ${cycles} HTTP cycles in ${s} s; after warm-up fds ${warm.fds} (${warm.sockets} sockets) children ${warm.children} VmRSS ${warm.rss} kB; at the end fds ${end.fds} (${end.sockets} sockets) children ${end.children} VmRSS ${end.rss} kB`);
  ok(pids === cycles - warmN, `every stdio cycle was a new server process (${pids})`);
  // sockets: libcurl keeps idle connections to each HTTP server for reuse (one per server,
  // closed by the server's keep-alive timeout at any time): at most one more per server
  ok(end.fds - end.sockets <= warm.fds - warm.sockets + Number(fdSlack),
    `descriptors other than sockets: ${warm.fds - warm.sockets} -> ${end.fds - end.sockets} (bound +${fdSlack})`);
  ok(end.sockets <= warm.sockets + Number(nHttp), `sockets: ${warm.sockets} -> ${end.sockets} (bound +${nHttp}, one cached connection per HTTP server)`);
  ok(end.children === 0, 'no child process left once every server is closed');
  ok(end.rss <= warm.rss + Number(rssSlack), `VmRSS: ${warm.rss} -> ${end.rss} kB (bound +${rssSlack} kB)`);
  let inits = 0;
  for (let i = 0; i < Number(nHttp); i++) inits += (await (await fetch(`http://127.0.0.1:${Number(httpBase) + i}/__test/stats`)).json()).initializations;
  ok(inits >= cycles, `every HTTP cycle was a new session (${inits} initializations)`);
  await client.close();
} catch (e) {
  ok(false, `${e.message}\n--- the bridge's log (end)\n${log.slice(-3000)}`);
}
process.exit(failed ? 1 : 0);
JS

echo "== $CYCLES connect/disconnect cycles, stdio and HTTP"
rc=0
timeout 170 node "$T_ROOT/cycles.mjs" "$PEERS_DIR" "$MCP_BRIDGE_BIN" "$T_ROOT/cycles.json" "$CYCLES" \
    "$N_STDIO" "$N_HTTP" "$HTTP_BASE" "$FD_SLACK" "$RSS_SLACK_KB" >"$T_ROOT/cycles.out" 2>&1 || rc=$?
cat "$T_ROOT/cycles.out"
T_CHECKS=$((T_CHECKS + $(grep -c '^ok ' "$T_ROOT/cycles.out" || true)))
[ "$rc" = 0 ] || fail "the cycles (exit $rc)"

# one-shot sessions: call, test and connect, LANES at a time
echo "== $SESSIONS one-shot sessions"
LANES=4
session() { # N: one session of the kind N selects; prints "ok N" or "FAIL N ..."
    local n=$1 out status
    case $((n % 2)) in
    0) out=$("$MCP_BRIDGE_BIN" --config "$T_ROOT/cycles.json" call sh pid 2>&1) || status=$? ;;
    1) out=$("$MCP_BRIDGE_BIN" --config "$T_ROOT/cycles.json" test sh 2>&1) || status=$? ;;
    esac
    case "${status:-0}:$out" in
    0:*"pid "[0-9]* | 0:*"1 tool"*) echo "ok $n" ;;
    *) echo "FAIL $n: exit ${status:-0}: $out" ;;
    esac
}
export -f session
export MCP_BRIDGE_BIN T_ROOT
start=$(date +%s)
seq 1 $((SESSIONS - SESSIONS / 3)) | timeout 150 xargs -P "$LANES" -I{} bash -c 'session {}' >"$T_ROOT/sessions.out" 2>&1 || true
took=$(($(date +%s) - start))
good=$(grep -c '^ok ' "$T_ROOT/sessions.out" || true)
echo "measured: $good of $((SESSIONS - SESSIONS / 3)) call and test sessions exited 0 with their answer in $took s"
T_CHECKS=$((T_CHECKS + 1))
[ "$good" = $((SESSIONS - SESSIONS / 3)) ] || fail "one-shot sessions failed: $(grep -v '^ok ' "$T_ROOT/sessions.out" | head -5)"

# connect sessions driven as an agent does (initialize, a call, end of input once answered), four
# at a time; each one's descriptors and VmHWM are read while it runs: the last ones against the
# first ones
cat >"$T_ROOT/footprint.mjs" <<'JS'
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
const [bridge, config, nArg] = process.argv.slice(2);
const n = Number(nArg);
const init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pid","arguments":{}}}\n';
function one() {
  return new Promise((resolve, reject) => {
    const c = spawn(bridge, ['--config', config, 'connect', 'sh'], { stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '', seen = null;
    const timer = setTimeout(() => { c.kill('SIGKILL'); reject(new Error('a session took over 10 s')); }, 10000);
    c.stdout.on('data', (b) => {
      out += b;
      if (!seen && out.includes('"id":2')) {
        const st = readFileSync(`/proc/${c.pid}/status`, 'utf8');
        seen = { fds: readdirSync(`/proc/${c.pid}/fd`).length, hwm: Number(/VmHWM:\s+(\d+)/.exec(st)[1]) };
        c.stdin.end();
      }
    });
    c.on('exit', (code) => { clearTimeout(timer); if (code === 0 && seen) resolve(seen); else reject(new Error(`exit ${code}: ${out.slice(0, 300)}`)); });
    c.stdin.write(init);
  });
}
const all = [];
let next = 0;
await Promise.all(Array.from({ length: 4 }, async () => {
  while (next < n) {
    const i = next++;
    all[i] = await one();
  }
}));
const k = Math.max(1, Math.floor(n / 10));
const first = all.slice(0, k), last = all.slice(-k);
const max = (a, k) => Math.max(...a.map((x) => x[k]));
console.log(`measured: ${n} connect sessions: fds ${max(first, 'fds')} -> ${max(last, 'fds')}, VmHWM ${max(first, 'hwm')} -> ${max(last, 'hwm')} kB`);
const okFds = max(last, 'fds') <= max(first, 'fds');
const okHwm = max(last, 'hwm') <= max(first, 'hwm') + 2048;
console.log(`${okFds ? 'ok' : 'FAIL'} a session holds no more descriptors at the end than at the start`);
console.log(`${okHwm ? 'ok' : 'FAIL'} a session's peak memory is the same at the end (bound +2048 kB)`);
process.exit(okFds && okHwm ? 0 : 1);
JS
rc=0
timeout 90 node "$T_ROOT/footprint.mjs" "$MCP_BRIDGE_BIN" "$T_ROOT/cycles.json" $((SESSIONS / 3)) >"$T_ROOT/footprint.out" 2>&1 || rc=$?
cat "$T_ROOT/footprint.out"
T_CHECKS=$((T_CHECKS + $(grep -c '^ok ' "$T_ROOT/footprint.out" || true)))
[ "$rc" = 0 ] || fail "a connect session's footprint (exit $rc)"

t_stop_peers
T_PEER_PIDS=()
left=$(pgrep -af -- "$T_ROOT" || true)
T_CHECKS=$((T_CHECKS + 1))
[ -z "$left" ] || fail "processes left behind: $left"
echo "ok no process left"
