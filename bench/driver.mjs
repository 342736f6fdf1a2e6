#!/usr/bin/env node
// The benchmark's agent: one MCP client over stdio, the same code for every configuration
// (directly to the stdio server, through mcp-bridge, through mcp-remote). It spawns CMD, speaks
// newline JSON-RPC on its stdio, initializes, lists the tools, warms up, then for each
// concurrency level sends --calls tools/call (at least as many as there are in flight) of the echo tool with that many in flight, timing
// each call's round trip (p50, p99) and the phase (calls/s). Prints one JSON line per level.
//
//   driver.mjs [OPTIONS] -- CMD ARGS...
//
// Options: --calls N (2000), --concurrency 1,16,64 (1,16), --size BYTES (100), --warmup N (200),
//          --label TEXT (copied into the result), --watch-child (measure CMD's process),
//          --watch-pid PID (another process to measure), --tools N (wait until tools/list holds
//          N echo tools, polling for at most 60 s, and spread the calls over them),
//          --malloc-count FILE (the counter file of malloc-count.so loaded into CMD: allocations
//          per call of each phase).
// Measured processes: CPU from /proc/PID/stat utime+stime and /proc/PID/schedstat (ns on CPU)
// across each phase, divided by its calls; peak RSS from VmHWM at the end of each phase (a high
// water mark since the process started).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import process from 'node:process';

function die(msg) { process.stderr.write(`driver: ${msg}\n`); process.exit(1); }

const argv = process.argv.slice(2);
const opts = {
  calls: 2000, concurrency: [1, 16], size: 100, warmup: 200, label: '', watchPid: 0,
  watchChild: false, tools: 1, mallocCount: '',
};
let cmd = [];
while (argv.length) {
  const a = argv.shift();
  if (a === '--') { cmd = argv.splice(0); break; }
  const num = (s = argv.shift()) => { const v = Number(s); if (!Number.isInteger(v) || v < 0) die(`${a} needs a number`); return v; };
  if (a === '--calls') opts.calls = num();
  else if (a === '--concurrency') opts.concurrency = String(argv.shift()).split(',').map((s) => num(s));
  else if (a === '--size') opts.size = num();
  else if (a === '--warmup') opts.warmup = num();
  else if (a === '--watch-pid') opts.watchPid = num();
  else if (a === '--watch-child') opts.watchChild = true;
  else if (a === '--tools') opts.tools = num();
  else if (a === '--malloc-count') opts.mallocCount = argv.shift();
  else if (a === '--label') opts.label = argv.shift();
  else die(`unknown option '${a}'`);
}
if (!cmd.length) die('usage: driver.mjs [OPTIONS] -- CMD ARGS...');
if (!opts.calls || opts.concurrency.some((c) => c < 1)) die('--calls and every --concurrency level must be at least 1');

const TICK_US = 1e6 / 100; // USER_HZ is 100 on Linux
function procSample(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(f[11]) + Number(f[12]); // utime, stime (fields 14, 15)
  const ns = Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
  return { ticks, ns };
}
function hwmKb(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : null;
}
// malloc-count.so's counters: malloc, calloc, realloc, free, bytes (five uint64)
function mallocSample() {
  const b = readFileSync(opts.mallocCount);
  if (b.length < 40) die(`${opts.mallocCount}: not a malloc-count file (was malloc-count.so loaded?)`);
  const v = [0, 1, 2, 3, 4].map((i) => Number(b.readBigUInt64LE(8 * i)));
  return { allocs: v[0] + v[1] + v[2], frees: v[3], bytes: v[4] };
}

// --- the stdio transport: request(msg) -> Promise<response message>
let closing = false;
const child = spawn(cmd[0], cmd.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
const waiting = new Map();
let chunks = [];
child.stdout.on('data', (chunk) => {
  // only the new chunk is searched for the end of a line: an 8 MiB message comes in many
  let start = 0; let nl;
  while ((nl = chunk.indexOf(10, start)) >= 0) {
    chunks.push(chunk.subarray(start, nl));
    const line = Buffer.concat(chunks).toString('utf8');
    chunks = [];
    start = nl + 1;
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    if (msg.id !== undefined && msg.method === undefined) {
      const w = waiting.get(msg.id);
      if (w) { waiting.delete(msg.id); w(msg); }
    } else if (msg.id !== undefined) {
      // a request from the server (ping, roots/list ...): answer with an empty result
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: {} }) + '\n');
    }
  }
  if (start < chunk.length) chunks.push(chunk.subarray(start));
});
child.on('exit', (code, sig) => { if (!closing) die(`the child exited (${code ?? sig}) before the end`); });
let nextId = 1;
const send = (msg) => child.stdin.write(JSON.stringify(msg) + '\n');
const call = (method, params) => new Promise((resolve) => {
  const id = nextId++;
  waiting.set(id, resolve);
  send({ jsonrpc: '2.0', id, method, params });
});
function close() {
  closing = true;
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.on('exit', () => { clearTimeout(t); resolve(); });
    child.stdin.end();
  });
}

const init = await call('initialize', {
  protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench-driver', version: '1.0.0' },
});
if (!init?.result) die(`initialize failed: ${JSON.stringify(init)}`);
send({ jsonrpc: '2.0', method: 'notifications/initialized' });

// the echo tools; with many upstreams the first list may come before every server has listed
let tools = [];
const listUntil = Date.now() + 60000;
for (;;) {
  const list = await call('tools/list', {});
  tools = (list.result?.tools ?? []).map((t) => t.name).filter((n) => n === 'echo' || n.endsWith('_echo'));
  if (tools.length >= opts.tools) break;
  if (Date.now() > listUntil) die(`${tools.length} echo tools after 60 s, not ${opts.tools}: ${JSON.stringify(list).slice(0, 300)}`);
  await new Promise((r) => setTimeout(r, 100));
}
tools = tools.sort().slice(0, opts.tools);

const message = 'x'.repeat(opts.size);
let turn = 0;
async function echo() {
  const r = await call('tools/call', { name: tools[turn++ % tools.length], arguments: { message } });
  const text = r.result?.content?.[0]?.text;
  if (typeof text !== 'string' || !text.endsWith(message)) die(`bad echo answer: ${JSON.stringify(r).slice(0, 300)}`);
}

for (let i = 0; i < Math.max(opts.warmup, tools.length); i++) await echo();

const watched = {};
if (opts.watchChild) watched.child = child.pid;
if (opts.watchPid) watched.pid = opts.watchPid;

const out = [];
for (const inflight of opts.concurrency) {
  const before = Object.fromEntries(Object.entries(watched).map(([k, p]) => [k, procSample(p)]));
  const mallocBefore = opts.mallocCount ? mallocSample() : null;
  // at least one call per slot in flight, or fewer would be in flight than the level says
  const n = Math.max(opts.calls, inflight);
  const lat = new Float64Array(n);
  let issued = 0; let done = 0;
  const t0 = process.hrtime.bigint();
  async function worker() {
    while (issued < n) {
      issued++;
      const c0 = process.hrtime.bigint();
      await echo();
      lat[done++] = Number(process.hrtime.bigint() - c0) / 1000;
    }
  }
  await Promise.all(Array.from({ length: inflight }, worker));
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  lat.sort();
  const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
  const result = {
    label: opts.label, size: opts.size, calls: n, inflight, upstreams: tools.length,
    p50_us: q(0.5), p99_us: q(0.99), mean_us: lat.reduce((a, b) => a + b, 0) / lat.length,
    throughput: n / secs,
  };
  for (const [k, p] of Object.entries(watched)) {
    const a = procSample(p);
    result[`${k}_cpu_us_per_call`] = ((a.ticks - before[k].ticks) * TICK_US) / n;
    result[`${k}_sched_us_per_call`] = (a.ns - before[k].ns) / 1000 / n;
    result[`${k}_hwm_kb`] = hwmKb(p);
  }
  if (mallocBefore) {
    const a = mallocSample();
    result.allocs_per_call = (a.allocs - mallocBefore.allocs) / n;
    result.frees_per_call = (a.frees - mallocBefore.frees) / n;
    result.alloc_bytes_per_call = (a.bytes - mallocBefore.bytes) / n;
  }
  out.push(JSON.stringify(result));
}
await close();
process.stdout.write(out.join('\n') + '\n');
process.exit(0);
