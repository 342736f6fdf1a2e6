#!/usr/bin/env node
// The benchmark's agent: one MCP client, the same code for every configuration. It connects,
// finds the echo tool, warms up, then sends --calls sequential tools/call (latency: p50, p99) and
// --calls more with --inflight in flight (throughput). Prints one JSON line of results on stdout.
//
//   driver.mjs stdio [--watch-child] -- CMD ARGS...   spawn CMD, newline JSON-RPC on its stdio
//   driver.mjs http URL                               Streamable HTTP: POST with fetch (keep-alive)
//
// Options: --calls N (2000), --inflight K (16), --size BYTES (100), --warmup N (200),
//          --label TEXT (copied into the result), --watch-pid PID (another process to measure).
// Measured processes (the spawned child with --watch-child, and --watch-pid): CPU from
// /proc/PID/stat utime+stime and /proc/PID/schedstat (ns on CPU) across both measured phases,
// divided by the calls of both phases; peak RSS from VmHWM at the end.
// Both transports frame the same way for the driver: JSON.stringify out, JSON.parse in.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import process from 'node:process';

function die(msg) { process.stderr.write(`driver: ${msg}\n`); process.exit(1); }

const argv = process.argv.slice(2);
const opts = { calls: 2000, inflight: 16, size: 100, warmup: 200, label: '', watchPid: 0, watchChild: false };
const mode = argv.shift();
let url; let cmd = [];
if (mode === 'http') url = argv.shift();
else if (mode !== 'stdio') die('usage: driver.mjs stdio [OPTIONS] -- CMD ARGS... | driver.mjs http URL [OPTIONS]');
while (argv.length) {
  const a = argv.shift();
  if (a === '--') { cmd = argv.splice(0); break; }
  const num = () => { const v = Number(argv.shift()); if (!Number.isInteger(v) || v < 0) die(`${a} needs a number`); return v; };
  if (a === '--calls') opts.calls = num();
  else if (a === '--inflight') opts.inflight = num();
  else if (a === '--size') opts.size = num();
  else if (a === '--warmup') opts.warmup = num();
  else if (a === '--watch-pid') opts.watchPid = num();
  else if (a === '--watch-child') opts.watchChild = true;
  else if (a === '--label') opts.label = argv.shift();
  else die(`unknown option '${a}'`);
}
if (mode === 'stdio' && !cmd.length) die('stdio: the command goes after --');

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

// --- transports: send(msg) -> Promise<response message>
let nextId = 1;
let transport;

function stdioTransport() {
  const child = spawn(cmd[0], cmd.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map();
  let pending = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    pending += chunk;
    let nl;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
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
  });
  child.on('exit', (code, sig) => { if (!closing) die(`the child exited (${code ?? sig}) before the end`); });
  let closing = false;
  return {
    pid: child.pid,
    request(msg) { return new Promise((resolve) => { waiting.set(msg.id, resolve); child.stdin.write(JSON.stringify(msg) + '\n'); }); },
    notify(msg) { child.stdin.write(JSON.stringify(msg) + '\n'); return Promise.resolve(); },
    close() {
      closing = true;
      return new Promise((resolve) => {
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.on('exit', () => { clearTimeout(t); resolve(); });
        child.stdin.end();
      });
    },
  };
}

function httpTransport() {
  let session; let protocol;
  async function post(msg) {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (session) headers['mcp-session-id'] = session;
    if (protocol) headers['mcp-protocol-version'] = protocol;
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(msg) });
    if (!session && res.headers.get('mcp-session-id')) session = res.headers.get('mcp-session-id');
    if (res.status === 202) { await res.arrayBuffer(); return undefined; }
    if (!res.ok) die(`HTTP ${res.status} for ${msg.method}`);
    const type = res.headers.get('content-type') ?? '';
    const text = await res.text();
    if (type.startsWith('application/json')) return JSON.parse(text);
    // an SSE answer (not expected in JSON-response mode): the data of the event with our id
    for (const ev of text.split('\n\n')) {
      const data = ev.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
      if (data) { const m = JSON.parse(data); if (m.id === msg.id) return m; }
    }
    die(`no answer to ${msg.method}`);
  }
  return {
    pid: 0,
    request: post,
    notify: post,
    setProtocol(p) { protocol = p; },
    async close() { if (session) await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': session } }).catch(() => {}); },
  };
}

transport = mode === 'stdio' ? stdioTransport() : httpTransport();
const call = (method, params) => transport.request({ jsonrpc: '2.0', id: nextId++, method, params });

const init = await call('initialize', {
  protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench-driver', version: '1.0.0' },
});
if (!init?.result) die(`initialize failed: ${JSON.stringify(init)}`);
transport.setProtocol?.(init.result.protocolVersion);
await transport.notify({ jsonrpc: '2.0', method: 'notifications/initialized' });
const list = await call('tools/list', {});
const tool = list.result?.tools?.map((t) => t.name).find((n) => n === 'echo' || n.endsWith('_echo'));
if (!tool) die(`no echo tool in ${JSON.stringify(list)}`);

const message = 'x'.repeat(opts.size);
async function echo() {
  const r = await call('tools/call', { name: tool, arguments: { message } });
  const text = r.result?.content?.[0]?.text;
  if (typeof text !== 'string' || !text.endsWith(message)) die(`bad echo answer: ${JSON.stringify(r).slice(0, 300)}`);
}

for (let i = 0; i < opts.warmup; i++) await echo();

const watched = {};
if (opts.watchChild && transport.pid) watched.child = transport.pid;
if (opts.watchPid) watched.pid = opts.watchPid;
const before = Object.fromEntries(Object.entries(watched).map(([k, p]) => [k, procSample(p)]));

const lat = new Float64Array(opts.calls);
for (let i = 0; i < opts.calls; i++) {
  const t0 = process.hrtime.bigint();
  await echo();
  lat[i] = Number(process.hrtime.bigint() - t0) / 1000;
}
lat.sort();
const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];

let issued = 0;
const t0 = process.hrtime.bigint();
async function worker() { while (issued < opts.calls) { issued++; await echo(); } }
await Promise.all(Array.from({ length: opts.inflight }, worker));
const concS = Number(process.hrtime.bigint() - t0) / 1e9;

const calls = 2 * opts.calls;
const result = {
  label: opts.label, mode, size: opts.size, calls: opts.calls, inflight: opts.inflight,
  p50_us: q(0.5), p99_us: q(0.99), mean_us: lat.reduce((a, b) => a + b, 0) / lat.length,
  throughput: opts.calls / concS,
};
for (const [k, p] of Object.entries(watched)) {
  const a = procSample(p);
  result[`${k}_cpu_us_per_call`] = ((a.ticks - before[k].ticks) * TICK_US) / calls;
  result[`${k}_sched_us_per_call`] = (a.ns - before[k].ns) / 1000 / calls;
  result[`${k}_hwm_kb`] = hwmKb(p);
}
await transport.close();
process.stdout.write(JSON.stringify(result) + '\n');
process.exit(0);
