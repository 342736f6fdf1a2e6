#!/usr/bin/env node
// slowloris.mjs: holds connections to a local listener the slow way, as any local user could:
// --conns connections, each sending one byte of an HTTP request head every --every-ms (so that
// an inactivity timeout never ends it) and never finishing it; a connection the listener drops
// is opened again at once. Prints "READY <n>" once n connections are open (all of them, or as
// many as opened within 3 s), then one "open N dropped M" line a second; stops by itself after
// --duration-s, or on SIGTERM.
import net from 'node:net';
import { makeLogger, onShutdown, parseArgs } from './lib/common.mjs';

const args = parseArgs({
  port: { type: 'int', help: 'the port on 127.0.0.1' },
  conns: { type: 'int', default: 40, help: 'connections to hold' },
  'every-ms': { type: 'int', default: 1000, help: 'one byte per connection this often' },
  'duration-s': { type: 'int', default: 60, help: 'stop after this long' },
}, process.argv.slice(2), 'slowloris.mjs --port N [--conns N] [--every-ms MS] [--duration-s S]');
if (!args.port) {
  process.stderr.write('slowloris.mjs: --port N is required\n');
  process.exit(2);
}
const log = makeLogger('slowloris');
const head = 'GET /callback?code=slow&state=slow HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ';
let open = 0;
let dropped = 0;
let stopping = false;
const sockets = new Set();

function hold() {
  if (stopping) return;
  const sock = net.connect({ host: '127.0.0.1', port: args.port });
  let sent = 0;
  let timer = null;
  sockets.add(sock);
  sock.on('connect', () => {
    open++;
    timer = setInterval(() => {
      sock.write(sent < head.length ? head[sent] : 'x');
      sent++;
    }, args.everyMs);
  });
  sock.on('data', () => {});
  sock.on('error', () => {});
  sock.on('close', (hadError) => {
    sockets.delete(sock);
    if (timer) {
      clearInterval(timer);
      open--;
      dropped++;
    }
    if (!stopping) setTimeout(hold, 10);
  });
}

for (let i = 0; i < args.conns; i++) hold();
const started = Date.now();
await new Promise((resolve) => {
  const check = setInterval(() => {
    if (open >= args.conns || Date.now() - started > 3000) {
      clearInterval(check);
      resolve();
    }
  }, 20);
});
process.stdout.write(`READY ${open}\n`);
const report = setInterval(() => process.stdout.write(`open ${open} dropped ${dropped}\n`), 1000);

const stop = onShutdown(log, () => {
  stopping = true;
  clearInterval(report);
  for (const s of sockets) s.destroy();
});
setTimeout(() => stop('duration'), args.durationS * 1000).unref();
