#!/usr/bin/env node
// bridge-tap.mjs LOG -- COMMAND [ARGS...]: runs a stdio MCP server and records every line that
// passes between it and its client, so a test can see what the server itself was sent (what the
// bridge forwarded upstream: ids, progress tokens, notifications/cancelled ...).
//
// LOG gets one JSON object per line: {"t": ms since start, "dir": "in" (client -> server) or
// "out" (server -> client), "msg": <the message, or the raw line when it is not JSON>}.
// stdin is passed to the server line by line and closed when it ends; the server's stdout comes
// back unchanged; its stderr is inherited. The tap exits with the server's status (128 + signal
// when it was killed) and forwards SIGTERM/SIGINT/SIGHUP to it. The server stays in the tap's
// process group, so whoever signals the group reaches both.
import { spawn } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
if (argv.length < 3 || sep !== 1) {
  process.stderr.write('usage: node bridge-tap.mjs LOG -- COMMAND [ARGS...]\n');
  process.exit(2);
}
const logPath = argv[0];
const [cmd, ...args] = argv.slice(2);
const t0 = Date.now();
writeFileSync(logPath, '', { flag: 'a' });

function record(dir, line) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    msg = line;
  }
  // one appendFileSync per line keeps the log whole even when the tap is killed
  appendFileSync(logPath, `${JSON.stringify({ t: Date.now() - t0, dir, msg })}\n`);
}

// Splits a byte stream into lines, calling fn with each (without its newline).
function lines(stream, fn) {
  let buf = Buffer.alloc(0);
  stream.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    let i;
    while ((i = buf.indexOf(10)) !== -1) {
      fn(buf.subarray(0, i));
      buf = buf.subarray(i + 1);
    }
  });
  return () => {
    if (buf.length) fn(buf);
    buf = Buffer.alloc(0);
  };
}

const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'] });
child.on('error', (err) => {
  process.stderr.write(`bridge-tap: cannot run '${cmd}': ${err.message}\n`);
  process.exit(127);
});
child.stdin.on('error', () => {}); // the server went away: its exit ends the tap

const flushIn = lines(process.stdin, (line) => {
  record('in', line.toString('utf8'));
  child.stdin.write(Buffer.concat([line, Buffer.from('\n')]));
});
process.stdin.on('end', () => {
  flushIn();
  child.stdin.end();
});
process.stdin.on('error', () => child.stdin.end());

const flushOut = lines(child.stdout, (line) => {
  record('out', line.toString('utf8'));
  process.stdout.write(Buffer.concat([line, Buffer.from('\n')]));
});
process.stdout.on('error', () => {}); // the client went away

child.on('close', (code, signal) => {
  flushOut();
  record('exit', signal ? `signal ${signal}` : `status ${code}`);
  process.exitCode = signal ? 128 + (constants.signals[signal] ?? 0) : code ?? 1;
  // stdout may still be draining: exit once it is written
  process.stdout.end(() => process.exit());
});

for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  process.on(sig, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(sig);
  });
}
