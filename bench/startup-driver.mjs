#!/usr/bin/env node
// bench/startup-driver.mjs: one start of `mcp-bridge serve`: the time from the spawn to the
// answer of the first tools/list (initialize, notifications/initialized and tools/list sent at
// once, as an agent does), the number of tools in it, and the bridge's children at that moment.
// Prints one JSON line: {"label", "ms", "tools", "children"}. Speaks raw newline JSON-RPC (no
// SDK: its own start-up would be measured too). With CACHE and N, it then waits (at most 60 s)
// until the cache file holds N servers before it ends the bridge's stdin, so that the next run
// finds a warm cache.
//   node startup-driver.mjs BRIDGE CONFIG LABEL [CACHE N]
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const [bridge, config, label, cache, want] = process.argv.slice(2);
const cachedCount = () => {
  try {
    return Object.keys(JSON.parse(readFileSync(cache, 'utf8')).servers ?? {}).length;
  } catch {
    return 0;
  }
};
async function cacheFilled() {
  const end = Date.now() + 60000;
  while (cache && cachedCount() < Number(want)) {
    if (Date.now() > end) {
      process.stderr.write(`startup-driver: the cache holds ${cachedCount()} servers, not ${want}, after 60 s\n`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
const children = (pid) => {
  let n = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const s = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1]) === pid) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
};

const t0 = process.hrtime.bigint();
const p = spawn(bridge, ['-q', 'serve', '--config', config], { stdio: ['pipe', 'pipe', 'inherit'] });
const send = (m) => p.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...m })}\n`);
send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
send({ method: 'notifications/initialized' });
send({ id: 2, method: 'tools/list' });
let buf = '';
const timer = setTimeout(() => {
  process.stderr.write('startup-driver: no tools/list answer within 30 s\n');
  p.kill('SIGKILL');
  process.exit(1);
}, 30000);
p.stdout.on('data', (chunk) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    const m = JSON.parse(line);
    if (m.id !== 2) continue;
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    clearTimeout(timer);
    process.stdout.write(`${JSON.stringify({ label, ms: Math.round(ms * 10) / 10, tools: m.result?.tools?.length ?? -1, children: children(p.pid) })}\n`);
    p.on('exit', () => process.exit(0));
    cacheFilled().then(() => p.stdin.end()); // the bridge shuts down, its children reaped
  }
});
