#!/usr/bin/env node
// bridge-faults.mjs: an agent (the SDK's Client) on mcp-bridge in aggregate mode while its
// servers fail under it - a stdio server killed in the middle of a call, one that exits, one that
// hangs (SIGSTOP), a call that outlives its timeout, an HTTP session the server forgets, HTTP
// servers restarted on the same port, an HTTP server that hangs. After each fault the agent must
// get a tool result with isError (never a JSON-RPC error, never a hang), then working calls again;
// the bridge must keep running, and at the end exit 0 on the end of its stdin with every process
// reaped. Run it inside a private network namespace: the SDK's example servers bind every
// interface. One line per check on stdout; exit status 0 only when all passed. See README.md.
import { spawn } from 'node:child_process';
import { openSync, closeSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  Agent, Checks, checkCleanExit, commandLine, expect, fail, processGroup, sleep, stillRunning, textOf,
} from './bridge-lib.mjs';
import { parseArgs } from './lib/common.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const spec = {
  bridge: { type: 'string', arg: 'PATH', help: 'the mcp-bridge binary' },
  work: { type: 'string', arg: 'DIR', help: 'a directory for the configuration and the logs' },
  tag: { type: 'string', default: 'bridge-faults', arg: 'TEXT', help: 'put on the command line of every server started (so the caller can find leftovers)' },
  deadline: { type: 'int', default: 110, arg: 'SECONDS', help: 'the whole run is stopped (a failure) after this long' },
};
const opts = parseArgs(spec, process.argv.slice(2), `
Injects faults under mcp-bridge (aggregate mode) and checks what the agent gets. Starts its own
servers: bridge-server.mjs over stdio ("slow", timeout 2 s) and over HTTP ("mine", timeout 2 s),
the SDK's jsonResponseStreamableHttp.js on port 3000 ("json", timeout 3 s) and server-everything
over Streamable HTTP on port 3100 ("ev"), plus an entry whose command does not exist ("broken").`);
if (!opts.bridge || !opts.work) {
  process.stderr.write('bridge-faults: --bridge and --work are required (see --help)\n');
  process.exit(2);
}

const EVERYTHING = join(here, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const EXAMPLES = join(here, 'node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server');
const checks = new Checks('faults/');
const peers = new Set(); // child processes started here, each in its own process group

const deadline = setTimeout(() => {
  process.stdout.write(`FAIL deadline: the run took more than ${opts.deadline} s\n`);
  killPeers();
  process.exit(1);
}, opts.deadline * 1000);
deadline.unref();

function killPeers() {
  for (const p of peers) {
    for (const sig of ['SIGCONT', 'SIGKILL']) {
      try {
        process.kill(-p.pid, sig);
      } catch {
        // already gone
      }
    }
  }
}
process.on('exit', killPeers);

// Starts a peer in its own process group; resolves once it is listening on port (a TCP connect
// succeeds) or has printed "READY <url>" (port 0).
async function startPeer(name, argv, { port = 0, env = {} } = {}) {
  const logFd = openSync(join(opts.work, `${name}.log`), 'a');
  const p = spawn(argv[0], [...argv.slice(1)], {
    detached: true, stdio: ['ignore', port ? logFd : 'pipe', logFd], env: { ...process.env, ...env },
  });
  closeSync(logFd);
  peers.add(p);
  p.on('exit', () => peers.delete(p));
  let url;
  const end = Date.now() + 15000;
  if (port) {
    while (!(await canConnect(port))) {
      if (p.exitCode !== null) fail(`${name} exited before it listened (see ${name}.log)`);
      if (Date.now() > end) fail(`${name} did not listen on port ${port} within 15 s`);
      await sleep(50);
    }
    url = `http://127.0.0.1:${port}/mcp`;
  } else {
    url = await new Promise((resolve, reject) => {
      let buf = '';
      const timer = setTimeout(() => reject(new Error(`${name} printed no READY line within 15 s`)), 15000);
      p.stdout.on('data', (c) => {
        buf += c;
        const m = /^READY (\S+)$/m.exec(buf);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      p.on('exit', () => reject(new Error(`${name} exited before it was ready`)));
    });
  }
  return { proc: p, url };
}

async function stopPeer(peer) {
  if (peer.proc.exitCode !== null || peer.proc.signalCode !== null) return;
  const gone = new Promise((resolve) => peer.proc.once('exit', resolve));
  try {
    process.kill(-peer.proc.pid, 'SIGCONT');
    process.kill(-peer.proc.pid, 'SIGKILL');
  } catch {
    // already gone
  }
  await gone;
}

function canConnect(port) {
  return new Promise((resolve) => {
    const s = tcpConnect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

async function stats(url) {
  const r = await fetch(url.replace(/\/mcp$/, '/__test/stats'), { signal: AbortSignal.timeout(5000) });
  return r.json();
}

// ---- the agent's view ---------------------------------------------------------------------------

const agent = new Agent('bridge');

// A tools/call that must come back as a tool result (never a JSON-RPC error) within ms.
async function callResult(name, args = {}, ms = 15000, extra = {}) {
  const t0 = Date.now();
  let result;
  try {
    result = await agent.client.callTool({ name, arguments: args }, undefined, { timeout: ms, ...extra });
  } catch (err) {
    fail(`${name}: a JSON-RPC error instead of a tool result after ${Date.now() - t0} ms: ${err?.message ?? err}`);
  }
  return { result, ms: Date.now() - t0 };
}

async function expectToolError(name, args, maxMs, what) {
  const { result, ms } = await callResult(name, args, maxMs + 5000);
  expect(result.isError === true, `${what}: the call succeeded instead of failing: ${JSON.stringify(result)}`);
  expect(textOf(result).trim().length > 0, `${what}: the error result says nothing`);
  expect(ms <= maxMs, `${what}: the error came after ${ms} ms, expected at most ${maxMs}`);
  return { result, ms };
}

async function expectWorks(name, args, what, ms = 15000) {
  const { result, ms: took } = await callResult(name, args, ms);
  expect(!result.isError, `${what}: the call failed: ${textOf(result)}`);
  return { result, ms: took };
}

// Calls until one works (each failure must still be a tool error), at most ms in all.
async function worksAgain(name, args, ms, what) {
  const end = Date.now() + ms;
  const failures = [];
  for (;;) {
    const { result } = await callResult(name, args, Math.max(1000, end - Date.now() + 5000));
    if (!result.isError) return { result, failures };
    failures.push(textOf(result));
    if (Date.now() > end) fail(`${what}: no working call within ${ms / 1000} s; the errors: ${failures.join(' | ')}`);
    await sleep(250);
  }
}

function bridgeAlive() {
  expect(agent.child.exit === null, `the bridge exited: ${JSON.stringify(agent.child.exit)}`);
  expect(!agent.closed, 'the bridge closed the connection');
}

const pidOf = (r) => r.structuredContent?.pid ?? Number(textOf(r));

function gone(pid) {
  return stillRunning([pid]).length === 0 && !commandLine(pid);
}

// ---- main --------------------------------------------------------------------------------------

let ok = false;
let json;
let ev;
let mine;
try {
  const started = await checks.run('servers start', async () => {
    json = await startPeer('json', ['node', join(EXAMPLES, 'jsonResponseStreamableHttp.js'), opts.tag], { port: 3000 });
    ev = await startPeer('ev', ['node', EVERYTHING, 'streamableHttp', opts.tag], { port: 3100, env: { PORT: '3100' } });
    mine = await startPeer('mine', ['node', join(here, 'bridge-server.mjs'), '--transport', 'http', '--name', 'mine', '--tag', opts.tag]);
  }, 40000);
  if (!started) throw new Error('the servers did not start');

  const config = join(opts.work, 'mcp.json');
  writeFileSync(config, JSON.stringify({
    settings: { settleTimeout: 20000 }, // the first tools/list must have every working server
    mcpServers: {
      slow: { command: 'node', args: [join(here, 'bridge-server.mjs'), '--name', 'slow', '--tag', opts.tag], timeout: 2000 },
      mine: { url: mine.url, timeout: 2000 },
      json: { url: json.url, timeout: 3000 },
      ev: { url: ev.url, timeout: 5000 },
      broken: { command: join(opts.work, 'no-such-command') },
    },
  }, null, 2));

  const connected = await checks.run('connect; a server that cannot start holds nobody back', async () => {
    await agent.connect({
      kind: 'stdio', argv: [opts.bridge, 'serve', '--config', config], stderrPath: join(opts.work, 'bridge.log'), cwd: opts.work,
    });
    const t0 = Date.now();
    const { tools } = await agent.client.listTools(undefined, { timeout: 20000 });
    const names = tools.map((t) => t.name);
    for (const want of ['mcp_slow_pid', 'mcp_mine_sleep', 'mcp_json_greet', 'mcp_ev_echo']) {
      expect(names.includes(want), `tools/list lacks ${want}: ${names.join(' ')}`);
    }
    expect(!names.some((n) => n.startsWith('mcp_broken_')), 'tools of the broken server?');
    expect(Date.now() - t0 < 10000, `tools/list took ${Date.now() - t0} ms`);
  }, 40000);
  if (!connected) throw new Error('no connection to the bridge');

  // -- stdio: killed in the middle of a call ----------------------------------------------------
  let pid1;
  await checks.run('stdio server killed mid-call: error result, then working calls', async () => {
    pid1 = pidOf((await expectWorks('mcp_slow_pid', {}, 'pid')).result);
    let started;
    const inCall = new Promise((resolve) => {
      started = resolve;
    });
    const call = callResult('mcp_slow_sleep', { ms: 1900 }, 10000, { onprogress: () => started() });
    await Promise.race([inCall, sleep(5000).then(() => fail('the sleep call never reported its start (progress)'))]);
    process.kill(pid1, 'SIGKILL');
    const t0 = Date.now();
    const { result } = await call;
    expect(result.isError === true, `the call on the killed server succeeded: ${JSON.stringify(result)}`);
    expect(Date.now() - t0 < 1800, `the error result came ${Date.now() - t0} ms after the kill (the server died; no need to wait for the timeout)`);
    const { result: again } = await expectWorks('mcp_slow_pid', {}, 'the first call after the crash');
    const pid2 = pidOf(again);
    expect(pid2 !== pid1, `the pid is still ${pid1}: the server was not restarted`);
    await agent.until(() => gone(pid1), 3000, `the killed server (pid ${pid1}) being reaped`);
    bridgeAlive();
  });

  await checks.run('stdio server exits mid-call: error result, then working calls', async () => {
    await expectToolError('mcp_slow_exit', { code: 3 }, 3000, 'exit');
    await expectWorks('mcp_slow_echo', { message: 'back' }, 'the first call after the exit');
    bridgeAlive();
  });

  await checks.run('a call outlives its timeout (stdio): error result, the server sees cancelled', async () => {
    const before = (await expectWorks('mcp_slow_cancelled', {}, 'cancelled')).result.structuredContent.cancelled.length;
    const { ms } = await expectToolError('mcp_slow_sleep', { ms: 6000 }, 4500, 'sleep past the timeout');
    expect(ms >= 1900, `the timeout struck after ${ms} ms, the entry says 2000`);
    await agent.until(async () => {
      const r = (await expectWorks('mcp_slow_cancelled', {}, 'cancelled')).result;
      return r.structuredContent.cancelled.length > before;
    }, 3000, 'the server seeing notifications/cancelled');
    bridgeAlive();
  }, 30000);

  await checks.run('a call outlives its timeout (HTTP): error result, the server sees cancelled', async () => {
    const before = (await stats(mine.url)).cancelled.length;
    const { ms } = await expectToolError('mcp_mine_sleep', { ms: 6000 }, 4500, 'sleep past the timeout');
    expect(ms >= 1900, `the timeout struck after ${ms} ms, the entry says 2000`);
    await agent.until(async () => (await stats(mine.url)).cancelled.length > before, 3000, 'the server seeing notifications/cancelled');
    await expectWorks('mcp_mine_echo', { message: 'still here' }, 'a call after the timeout');
    bridgeAlive();
  }, 30000);

  await checks.run('stdio server hangs (SIGSTOP): error results, others unaffected, then a new server', async () => {
    const pid = pidOf((await expectWorks('mcp_slow_pid', {}, 'pid')).result);
    const pgid = processGroup(pid);
    expect(pgid === pid, `the stdio server is not the leader of its own process group (pgid ${pgid}, pid ${pid})`);
    process.kill(-pgid, 'SIGSTOP');
    try {
      await expectToolError('mcp_slow_echo', { message: 'anyone?' }, 4500, 'a call to the hung server');
      const other = await expectWorks('mcp_mine_echo', { message: 'not held back' }, 'another server meanwhile');
      expect(other.ms < 1500, `another server took ${other.ms} ms while one hangs`);
      const { result } = await worksAgain('mcp_slow_pid', {}, 25000, 'the hung server being replaced');
      expect(pidOf(result) !== pid, 'the same (hung) server answered');
      await agent.until(() => gone(pid), 6000, `the hung server (pid ${pid}) being killed and reaped`);
    } finally {
      try {
        process.kill(-pgid, 'SIGCONT');
      } catch {
        // gone, as it should be
      }
    }
    bridgeAlive();
  }, 60000);

  // -- HTTP ------------------------------------------------------------------------------------
  await checks.run('HTTP session forgotten by the server: re-initialized, the call works', async () => {
    await expectWorks('mcp_mine_echo', { message: 'before' }, 'before');
    const before = await stats(mine.url);
    await fetch(mine.url.replace(/\/mcp$/, '/__test/forget-sessions'), { method: 'POST' });
    const { result } = await expectWorks('mcp_mine_echo', { message: 'after' }, 'the first call after the session was forgotten');
    expect(textOf(result) === 'mine: after', `the call answered ${textOf(result)}`);
    const after = await stats(mine.url);
    expect(after.not_found > before.not_found, 'the server never answered 404 (the test did not work)');
    expect(after.initializations === before.initializations + 1, `${after.initializations - before.initializations} new sessions, expected 1`);
    expect((after.tool_calls.echo ?? 0) === (before.tool_calls.echo ?? 0) + 1, 'the call was not retried exactly once');
    bridgeAlive();
  });

  await checks.run('HTTP server restarted (404 on the old session): error while down, then the first call works', async () => {
    await expectWorks('mcp_json_greet', { name: 'before' }, 'before');
    await stopPeer(json);
    await expectToolError('mcp_json_greet', { name: 'down' }, 8000, 'a call while the server is down');
    json = await startPeer('json', ['node', join(EXAMPLES, 'jsonResponseStreamableHttp.js'), opts.tag], { port: 3000 });
    const { result } = await expectWorks('mcp_json_greet', { name: 'after' }, 'the first call after the restart');
    expect(textOf(result) === 'Hello, after!', `the call answered ${textOf(result)}`);
    bridgeAlive();
  }, 40000);

  await checks.run('server-everything over HTTP restarted (400 on the old session): working calls again', async () => {
    await expectWorks('mcp_ev_echo', { message: 'before' }, 'before');
    await stopPeer(ev);
    ev = await startPeer('ev', ['node', EVERYTHING, 'streamableHttp', opts.tag], { port: 3100, env: { PORT: '3100' } });
    const { result } = await worksAgain('mcp_ev_echo', { message: 'after' }, 20000, 'calls after the restart');
    expect(textOf(result) === 'Echo: after', `the call answered ${textOf(result)}`);
    bridgeAlive();
  }, 45000);

  await checks.run('HTTP server hangs (SIGSTOP): error result within the timeout, then working calls', async () => {
    await expectWorks('mcp_json_greet', { name: 'before' }, 'before');
    process.kill(-json.proc.pid, 'SIGSTOP');
    try {
      const { ms } = await expectToolError('mcp_json_greet', { name: 'hung' }, 6500, 'a call to the hung server');
      expect(ms >= 2900, `the timeout struck after ${ms} ms, the entry says 3000`);
      await expectWorks('mcp_mine_echo', { message: 'not held back' }, 'another server meanwhile');
    } finally {
      process.kill(-json.proc.pid, 'SIGCONT');
    }
    const { result } = await worksAgain('mcp_json_greet', { name: 'after' }, 20000, 'the server back');
    expect(textOf(result) === 'Hello, after!', `the call answered ${textOf(result)}`);
    bridgeAlive();
  }, 45000);

  await checks.run('no protocol errors on the agent side', async () => {
    expect(agent.protocolErrors().length === 0, `the SDK reported: ${agent.protocolErrors().join('; ')}`);
  });
  await checkCleanExit(checks, agent);
  ok = checks.summary();
} catch (err) {
  process.stdout.write(`FAIL internal: ${err?.stack ?? err}\n`);
  checks.summary();
} finally {
  if (agent.child?.proc && !agent.child.exit) agent.child.kill();
  killPeers();
}
process.exit(ok ? 0 : 1);
