#!/usr/bin/env node
// bridge-lifecycle.mjs: an agent (the SDK's Client) on `mcp-bridge serve`, run several times over
// one metadata cache (PI_CODING_AGENT_DIR), checking the servers' lifecycles in the processes the
// bridge runs (tiny-server.mjs children, found by their command line under the bridge's pid):
//   cold    every server connects at start (nothing cached), and its lists are cached; lazy and
//           eager servers are disconnected after their idleTimeout (no process left), keep-alive
//           stays; a call wakes an idle lazy server; a keep-alive server killed with SIGKILL is
//           started again by itself
//   warm    the lazy server is listed from the cache with no process until its first call
//   gone    its command made unrunnable (the script it names now fails), the entry unchanged:
//           its tools are still listed from the cache, a call is a tool error
//   changed the entry changed: the cache does not apply, its tools are not listed
//   hung    a server that never answers (`sleep 1000`) beside two working ones: the first
//           tools/list answers within the settle window plus slack, with the working servers'
//           tools
//   sampling settings.sampling false: a server's sampling/createMessage is answered -32601 by
//           the bridge, the agent is never asked
// One line per check on stdout; exit status 0 only when all passed.
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  Agent, Checks, checkCleanExit, commandLine, descendants, expect, fail, stillRunning, textOf,
} from './bridge-lib.mjs';
import { parseArgs } from './lib/common.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const spec = {
  bridge: { type: 'string', arg: 'PATH', help: 'the mcp-bridge binary' },
  work: { type: 'string', arg: 'DIR', help: 'a directory for the configuration and the logs' },
  tag: { type: 'string', default: 'bridge-lifecycle', arg: 'TEXT', help: 'put on the command line of every server started' },
  'idle-value': { type: 'string', default: '"1s"', arg: 'JSON', help: 'the idleTimeout written in the entries (a JSON value)' },
  deadline: { type: 'int', default: 150, arg: 'SECONDS', help: 'the whole run is stopped (a failure) after this long' },
};
const opts = parseArgs(spec, process.argv.slice(2), `
Checks lazy, eager and keep-alive servers, the metadata cache and the settle window of mcp-bridge
(see the top of this file). PI_CODING_AGENT_DIR must name a directory of the test's own.`);
if (!opts.bridge || !opts.work || !process.env.PI_CODING_AGENT_DIR) {
  process.stderr.write('bridge-lifecycle: --bridge, --work and PI_CODING_AGENT_DIR are required\n');
  process.exit(2);
}

const TINY = join(here, 'tiny-server.mjs');
const CACHE = join(process.env.PI_CODING_AGENT_DIR, 'mcp-bridge-cache.json');
const SETTLE_MS = 1500; // settings.settleTimeout's default
const checks = new Checks('lifecycle/');

const deadline = setTimeout(() => {
  process.stdout.write(`FAIL deadline: the run took more than ${opts.deadline} s\n`);
  process.exit(1);
}, opts.deadline * 1000);
deadline.unref();

// ---- the servers -------------------------------------------------------------------------------

// The lazy server runs through a script of its own, so that its command can be made unrunnable
// without touching its entry.
const LAZY_BIN = join(opts.work, 'lazy-server');
function lazyRunnable(yes) {
  writeFileSync(LAZY_BIN, yes ? `#!/bin/sh\nexec node '${TINY}' "$@"\n`
    : '#!/bin/sh\necho "lazy-server: moved away" >&2\nexit 127\n');
  chmodSync(LAZY_BIN, 0o755);
}

const tiny = (name) => ({ command: 'node', args: [TINY, '--name', name, '--tag', opts.tag] });
const idle = { idleTimeout: JSON.parse(opts.idleValue) };

function writeConfig(file, servers) {
  const path = join(opts.work, file);
  writeFileSync(path, JSON.stringify({ mcpServers: servers }, null, 2));
  return path;
}

function lifecycleServers(lazyExtra = []) {
  return {
    // (timeout: a call waits for a server that cannot start at most this long)
    lazy: { command: LAZY_BIN, args: ['--name', 'lazy', '--tag', opts.tag, ...lazyExtra], lifecycle: 'lazy', timeout: 4000, ...idle },
    eager: { ...tiny('eager'), lifecycle: 'eager', ...idle },
    keep: { ...tiny('keep'), lifecycle: 'keep-alive' },
    // lists that say how long they may be kept ("ttlMs")
    ttl60: { ...tiny('ttl60'), args: [TINY, '--name', 'ttl60', '--ttl', '60000', '--tag', opts.tag], lifecycle: 'keep-alive' },
    ttl0: { ...tiny('ttl0'), args: [TINY, '--name', 'ttl0', '--ttl', '0', '--tag', opts.tag], lifecycle: 'keep-alive' },
  };
}

// ---- the agent's view ---------------------------------------------------------------------------

let agent;

async function start(label, config, env = {}) {
  agent = new Agent(label);
  await agent.connect({
    kind: 'stdio',
    argv: [opts.bridge, '-v', 'serve', '--config', config],
    env: { ...process.env, ...env },
    stderrPath: join(opts.work, `${label}.log`),
    cwd: opts.work,
  });
}

// The running processes of server name (tiny-server children of the bridge).
function pidsOf(name) {
  return stillRunning(descendants(agent.child.pid)).filter((p) => commandLine(p).includes(`--name ${name} `));
}

async function toolNames() {
  const { tools } = await agent.client.listTools(undefined, { timeout: 20000 });
  return tools.map((t) => t.name);
}

async function untilListed(names, ms, what) {
  let last = [];
  try {
    return await agent.until(async () => {
      last = await toolNames();
      return names.every((n) => last.includes(n)) && last;
    }, ms, what);
  } catch (err) {
    fail(`${err.message}; listed: ${last.join(' ')}`);
  }
  return last;
}

async function call(name, args = {}) {
  try {
    return await agent.client.callTool({ name, arguments: args }, undefined, { timeout: 20000 });
  } catch (err) {
    fail(`${name}: a JSON-RPC error instead of a tool result: ${err?.message ?? err}`);
  }
  return null;
}

async function works(name, args = {}) {
  const r = await call(name, args);
  expect(!r.isError, `${name} failed: ${textOf(r)}`);
  return r;
}

const pidOf = (r) => r.structuredContent?.pid ?? Number(textOf(r));

function cached() {
  try {
    return JSON.parse(readFileSync(CACHE, 'utf8')).servers ?? {};
  } catch {
    return {};
  }
}

async function finish() {
  await checks.run('no protocol errors on the agent side', async () => {
    expect(agent.protocolErrors().length === 0, `the SDK reported: ${agent.protocolErrors().join('; ')}`);
  });
  await checkCleanExit(checks, agent);
}

// ---- main --------------------------------------------------------------------------------------

let ok = false;
try {
  lazyRunnable(true);
  const config = writeConfig('mcp.json', lifecycleServers());
  const all = ['mcp_lazy_echo', 'mcp_eager_echo', 'mcp_keep_echo'];

  // -- cold: nothing cached ------------------------------------------------------------------------
  checks.prefix = 'lifecycle/cold/';
  await start('cold', config);
  await checks.run('nothing cached: every server connects at start and is listed', async () => {
    // (listed with nothing cached: each ran; how long it still runs is its idle timeout's)
    await untilListed(all, 15000, 'every server listed');
  }, 30000);
  await checks.run('the lists are cached (0600), keyed by the entry', async () => {
    await agent.until(() => ['lazy', 'eager', 'keep'].every((n) => cached()[n]?.tools?.length === 3), 10000, 'the cache written');
    const e = cached().lazy;
    expect(/^[0-9a-f]{64}$/.test(e.key), `the key ${e.key}`);
    expect(e.tools.some((t) => t.name === 'echo'), `the cached tools: ${JSON.stringify(e.tools)}`);
    const { statSync } = await import('node:fs');
    expect((statSync(CACHE).mode & 0o777) === 0o600, `mode ${(statSync(CACHE).mode & 0o777).toString(8)}`);
  }, 20000);
  await checks.run('a list\'s ttlMs bounds its cache entry; ttlMs 0 keeps it out', async () => {
    await agent.until(() => cached().ttl60?.tools?.length === 3, 10000, 'the ttl60 server cached');
    const e = cached().ttl60;
    expect(e.expiresAt - e.savedAt === 60000, `kept for ${e.expiresAt - e.savedAt} ms, not the 60000 of its ttlMs`);
    const other = cached().keep;
    expect(other.expiresAt - other.savedAt === 7 * 24 * 3600 * 1000, `without ttlMs: kept ${other.expiresAt - other.savedAt} ms`);
    expect(!cached().ttl0, 'a list with "ttlMs": 0 was cached');
  }, 20000);
  await checks.run('idleTimeout: lazy and eager disconnect (no process left), keep-alive stays', async () => {
    await agent.until(() => pidsOf('lazy').length === 0 && pidsOf('eager').length === 0, 15000, 'the idle servers stopping');
    expect(pidsOf('keep').length === 1, `keep-alive processes: ${pidsOf('keep')}`);
    const names = await toolNames();
    expect(all.every((n) => names.includes(n)), `an idle server's tools are still listed: ${names.join(' ')}`);
  }, 25000);
  await checks.run('a call wakes the idle lazy server, which idles again', async () => {
    // (the answer proves a process again; it may be gone by the time it is read here when the
    // machine is slow: the idle timeout is a second)
    const pid = pidOf(await works('mcp_lazy_pid'));
    expect(Number.isInteger(pid) && pid > 0, `the answer: ${pid}`);
    await agent.until(() => pidsOf('lazy').length === 0, 15000, 'the lazy server idling again');
  }, 30000);
  await checks.run('keep-alive: killed with SIGKILL, it is started again by itself', async () => {
    const pid = pidOf(await works('mcp_keep_pid'));
    process.kill(pid, 'SIGKILL');
    await agent.until(() => pidsOf('keep').some((p) => p !== pid), 15000, 'a new keep-alive process');
    const again = pidOf(await works('mcp_keep_pid'));
    expect(again !== pid, `still pid ${pid}`);
  }, 30000);
  await finish();

  // -- warm: the lazy server comes from the cache --------------------------------------------------
  checks.prefix = 'lifecycle/warm/';
  await start('warm', config);
  await checks.run('a cached lazy server is listed with no process until its first call', async () => {
    const names = await toolNames();
    expect(names.includes('mcp_lazy_echo'), `the first tools/list lacks the lazy server's tools: ${names.join(' ')}`);
    // the instructions name the servers listed from the cache (nothing has connected yet)
    const instr = agent.init?.instructions ?? '';
    expect(/Listed from its cache: .*'lazy'/.test(instr), `the instructions: ${JSON.stringify(instr)}`);
    // the others connect at start: once they run, the lazy one still does not
    await agent.until(() => pidsOf('eager').length === 1 && pidsOf('keep').length === 1, 15000, 'eager and keep-alive connecting');
    expect(pidsOf('lazy').length === 0, `a lazy process before any call: ${pidsOf('lazy')}`);
    const r = await works('mcp_lazy_echo', { message: 'hi' });
    expect(textOf(r) === 'lazy: hi', `the call answered ${textOf(r)}`); // it ran for the call
  }, 30000);
  await finish();

  // -- gone: the command cannot run, the entry is unchanged -----------------------------------------
  checks.prefix = 'lifecycle/gone/';
  lazyRunnable(false);
  await start('gone', config);
  await checks.run('its command unrunnable: the tools are listed from the cache, a call is a tool error', async () => {
    const names = await toolNames();
    expect(names.includes('mcp_lazy_echo'), `the lazy server's tools are not listed: ${names.join(' ')}`);
    const r = await call('mcp_lazy_echo', { message: 'hi' });
    expect(r.isError === true, `the call worked: ${JSON.stringify(r)}`);
    expect(textOf(r).includes('lazy'), `the error does not name the server: ${textOf(r)}`);
    // it keeps failing: once idle it stops trying (no start every backoff period)
    const log = join(opts.work, 'gone.log');
    await agent.until(() => readFileSync(log, 'utf8').includes("server 'lazy': idle for"), 15000, 'the failing lazy server given up when idle');
  }, 40000);
  await finish();

  // -- changed: the entry is not the one cached -------------------------------------------------
  checks.prefix = 'lifecycle/changed/';
  const changed = writeConfig('changed.json', lifecycleServers(['--changed']));
  await start('changed', changed);
  await checks.run('a changed entry: its cached lists are not used', async () => {
    await untilListed(['mcp_eager_echo', 'mcp_keep_echo'], 15000, 'eager and keep-alive listed');
    const names = await toolNames();
    expect(!names.some((n) => n.startsWith('mcp_lazy_')), `the changed entry's old tools are listed: ${names.join(' ')}`);
  }, 30000);
  await finish();

  // -- hung: a server that never answers holds nobody back --------------------------------------
  checks.prefix = 'lifecycle/hung/';
  const hung = writeConfig('hung.json', {
    hung: { command: 'sleep', args: ['1000'] },
    one: tiny('one'),
    two: tiny('two'),
  });
  await start('hung', hung, { MCP_BRIDGE_CACHE: 'off' });
  await checks.run('the first tools/list answers within the settle window, with the working servers', async () => {
    const t0 = Date.now();
    const names = await toolNames();
    const ms = Date.now() - t0;
    expect(ms <= SETTLE_MS + 2000, `the first tools/list took ${ms} ms (settle window ${SETTLE_MS} ms)`);
    for (const n of ['mcp_one_echo', 'mcp_two_echo']) expect(names.includes(n), `no ${n}: ${names.join(' ')}`);
    expect(!names.some((n) => n.startsWith('mcp_hung_')), 'tools of the hung server?');
    process.stdout.write(`# first tools/list beside a hung server: ${ms} ms\n`);
  }, 20000);
  await finish();

  // -- sampling: false -------------------------------------------------------------------------
  checks.prefix = 'lifecycle/sampling/';
  const nosampling = join(opts.work, 'nosampling.json');
  writeFileSync(nosampling, JSON.stringify({ settings: { sampling: false }, mcpServers: { one: tiny('one') } }));
  await start('sampling', nosampling, { MCP_BRIDGE_CACHE: 'off' });
  await checks.run('settings.sampling false: the server\'s sampling/createMessage is refused, the agent never asked', async () => {
    await untilListed(['mcp_one_sample'], 15000, 'the server listed');
    const r = await works('mcp_one_sample');
    expect(textOf(r) === 'error -32601: sampling is disabled by settings.sampling', `the server got: ${textOf(r)}`);
    expect(agent.samplingRequests.length === 0, `the agent was asked: ${JSON.stringify(agent.samplingRequests)}`);
  }, 30000);
  await finish();

  ok = checks.summary();
} catch (err) {
  process.stdout.write(`FAIL internal: ${err?.stack ?? err}\n`);
  checks.summary();
} finally {
  if (agent?.child?.proc && !agent.child.exit) agent.child.kill();
}
process.exit(ok ? 0 : 1);
