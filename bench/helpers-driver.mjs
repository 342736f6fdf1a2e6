#!/usr/bin/env node
// bench/helpers' agent: the SDK's Client on `mcp-bridge serve` (spawned with this process's
// environment), counting the helper processes the bridge starts. The helpers are wrappers that
// append one line to --counter each time they run ("secrets ...", "mcp-auth ...",
// "headersHelper"). It connects, calls every tool named with --tool once (the warm-up: the
// bridge has connected every server and asked its helpers), reads the counter, then makes
// --rounds rounds of one call to each tool (and more, until --min-seconds have passed), and
// reads the counter again. Prints one JSON line on stdout.
//
//   helpers-driver.mjs --counter FILE --tool NAME [--tool NAME]... [--rounds N]
//                      [--min-seconds S] [--allow-spawns] -- CMD ARGS...
//
// Exit status 0 when every call answered without isError and no helper ran after the warm-up
// (with --allow-spawns: whatever ran); 1 otherwise.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';

// the SDK of tests/peers (scripts/install-deps), as echo-http.mjs takes it
const here = path.dirname(fileURLToPath(import.meta.url));
const req = createRequire(path.join(here, '..', 'tests', 'peers', 'package.json'));
const imp = (spec) => import(pathToFileURL(req.resolve(spec)).href);
const { Client } = await imp('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = await imp('@modelcontextprotocol/sdk/client/stdio.js');

function die(msg) {
  process.stderr.write(`helpers-driver: ${msg}\n`);
  process.exit(1);
}

const argv = process.argv.slice(2);
const opts = { counter: '', tools: [], rounds: 1000, minSeconds: 0, allowSpawns: false };
let cmd = [];
while (argv.length) {
  const a = argv.shift();
  if (a === '--') { cmd = argv.splice(0); break; }
  if (a === '--counter') opts.counter = argv.shift() ?? die('--counter needs a file');
  else if (a === '--tool') opts.tools.push(argv.shift() ?? die('--tool needs a name'));
  else if (a === '--rounds') {
    opts.rounds = Number(argv.shift());
    if (!Number.isInteger(opts.rounds) || opts.rounds <= 0) die('--rounds needs a positive integer');
  } else if (a === '--min-seconds') {
    opts.minSeconds = Number(argv.shift());
    if (!(opts.minSeconds >= 0)) die('--min-seconds needs a number');
  } else if (a === '--allow-spawns') opts.allowSpawns = true;
  else die(`unknown option '${a}'`);
}
if (!opts.counter || !opts.tools.length || !cmd.length)
  die('usage: helpers-driver.mjs --counter FILE --tool NAME... [--rounds N] -- CMD ARGS...');

// The helper runs so far, by helper (the first word of each line).
function spawns() {
  let text = '';
  try {
    text = readFileSync(opts.counter, 'utf8');
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  const by = {};
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line) continue;
    const kind = line.split(' ')[0];
    by[kind] = (by[kind] ?? 0) + 1;
    total += 1;
  }
  return { total, by };
}

const transport = new StdioClientTransport({
  command: cmd[0], args: cmd.slice(1), env: process.env, stderr: 'inherit',
});
const client = new Client({ name: 'bench-helpers', version: '1.0.0' }, { capabilities: {} });
setTimeout(() => die('gave up after 600 s'), 600_000).unref();
await client.connect(transport);
const { tools } = await client.listTools();
for (const t of opts.tools) {
  if (!tools.some((x) => x.name === t))
    die(`'${t}' is not in tools/list (${tools.map((x) => x.name).join(', ') || 'none'}): a server did not connect`);
}

let failed = 0;
async function call(name) {
  const args = name.endsWith('_echo') ? { message: 'bench' } : {};
  try {
    const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 30000 });
    if (r.isError) {
      failed += 1;
      if (failed <= 3) process.stderr.write(`helpers-driver: ${name}: ${r.content?.[0]?.text ?? 'isError'}\n`);
    }
  } catch (e) {
    failed += 1;
    if (failed <= 3) process.stderr.write(`helpers-driver: ${name}: ${e.message}\n`);
  }
}

for (const t of opts.tools) await call(t);
const atConnect = spawns();
const start = process.hrtime.bigint();
let rounds = 0;
while (rounds < opts.rounds || Number(process.hrtime.bigint() - start) / 1e9 < opts.minSeconds) {
  for (const t of opts.tools) await call(t);
  rounds += 1;
}
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const after = spawns();
const during = after.total - atConnect.total;
const duringBy = {};
for (const [k, v] of Object.entries(after.by)) {
  const d = v - (atConnect.by[k] ?? 0);
  if (d) duringBy[k] = d;
}
await client.close();

const calls = rounds * opts.tools.length;
const result = {
  calls, seconds: Number(seconds.toFixed(3)), calls_per_s: Math.round(calls / seconds), failed,
  spawns_at_connect: atConnect.total, spawns_at_connect_by: atConnect.by,
  spawns_during_calls: during, spawns_during_calls_by: duringBy,
};
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(failed === 0 && (during === 0 || opts.allowSpawns) ? 0 : 1);
