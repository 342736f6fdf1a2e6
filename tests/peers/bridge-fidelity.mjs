#!/usr/bin/env node
// bridge-fidelity.mjs: an agent (the SDK's Client) on `mcp-bridge serve`, checking what the agent
// hears in three corners where the bridge answers for the servers:
//   burst   nine tiny-server.mjs servers that all connect after the agent's first tools/list
//           (settings.settleTimeout 1 ms): the notifications/tools/list_changed they cause are
//           coalesced (no two within the bridge's window), and the last one leaves the agent
//           with every server's tools
//   unknown a tools/call of a tool no server has is a tool result with isError (the SDK's
//           McpServer answers so), naming the close names; an unknown prompt stays -32602
//   hung    a server that never answers initialize: once the connect timeout passed, the proxy
//           tool's status says why it is not connected, not a bare "connecting"
// One line per check on stdout; exit status 0 only when all passed.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Agent, Checks, checkCleanExit, expect, textOf } from './bridge-lib.mjs';
import { parseArgs } from './lib/common.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const spec = {
  bridge: { type: 'string', arg: 'PATH', help: 'the mcp-bridge binary' },
  work: { type: 'string', arg: 'DIR', help: 'a directory for the configuration and the logs' },
  tag: { type: 'string', default: 'bridge-fidelity', arg: 'TEXT', help: 'put on the command line of every server started' },
  deadline: { type: 'int', default: 120, arg: 'SECONDS', help: 'the whole run is stopped (a failure) after this long' },
};
const opts = parseArgs(spec, process.argv.slice(2), `
Checks list_changed coalescing, the answer to an unknown tool and the status of a server hung in
initialize (see the top of this file).`);
if (!opts.bridge || !opts.work) {
  process.stderr.write('bridge-fidelity: --bridge and --work are required\n');
  process.exit(2);
}

const TINY = join(here, 'tiny-server.mjs');
const SERVERS = 9;
// the bridge sends one list_changed per window (DS_ANNOUNCE_WINDOW_MS, 200 ms); the gap allows
// for the pipes and this process's own event loop
const MIN_GAP_MS = 120;
const checks = new Checks('fidelity/');

const deadline = setTimeout(() => {
  process.stdout.write(`FAIL deadline: the run took more than ${opts.deadline} s\n`);
  process.exit(1);
}, opts.deadline * 1000);
deadline.unref();

const tiny = (name) => ({ command: 'node', args: [TINY, '--name', name, '--tag', opts.tag] });

function writeConfig(file, config) {
  const path = join(opts.work, file);
  writeFileSync(path, JSON.stringify(config, null, 2));
  return path;
}

async function start(label, config, args = []) {
  const agent = new Agent(label);
  await agent.connect({
    kind: 'stdio',
    argv: [opts.bridge, '-v', 'serve', '--config', config, ...args],
    stderrPath: join(opts.work, `${label}.log`),
    cwd: opts.work,
  });
  return agent;
}

const isChanged = (m) => m.method === 'notifications/tools/list_changed';

async function toolNames(agent) {
  const { tools } = await agent.client.listTools(undefined, { timeout: 20000 });
  return tools.map((t) => t.name);
}

// ---- burst and unknown --------------------------------------------------------------------------

async function scenarioBurst() {
  const servers = {};
  for (let i = 1; i <= SERVERS; i++) servers[`s${i}`] = { ...tiny(`s${i}`), lifecycle: 'keep-alive' };
  const config = writeConfig('burst.json', { mcpServers: servers, settings: { settleTimeout: 1 } });
  const agent = await start('burst', config);
  const want = [];
  for (let i = 1; i <= SERVERS; i++) want.push(`mcp_s${i}_echo`, `mcp_s${i}_pid`, `mcp_s${i}_sample`);

  await checks.run(`${SERVERS} servers connecting after the first tools/list: list_changed coalesced`, async () => {
    // the first list is given at once (settle window 1 ms): the servers come after it
    let since = agent.mark();
    let names = await toolNames(agent);
    expect(want.some((n) => !names.includes(n)), `the first list already had every tool: ${names.join(' ')}`);
    // each list_changed: list again, until every server's tools are there
    while (want.some((n) => !names.includes(n))) {
      await agent.waitFor(isChanged, since, 20000, `a list_changed bringing ${want.filter((n) => !names.includes(n)).join(' ')}`);
      since = agent.mark();
      names = await toolNames(agent);
    }
    const times = agent.log.filter((e) => e.dir === 'in' && isChanged(e.msg)).map((e) => e.t);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    expect(times.length >= 1, 'no list_changed at all');
    expect(gaps.every((g) => g >= MIN_GAP_MS),
      `${times.length} list_changed, gaps ${gaps.join(', ')} ms: two came within ${MIN_GAP_MS} ms`);
  });

  await checks.run('an unknown tool: a tool result with isError naming the close names', async () => {
    const got = await agent.request('tools/call', { name: 'mcp_s3_ech', arguments: {} });
    expect(got.isError === true, `not an error result: ${JSON.stringify(got)}`);
    expect(got.content?.[0]?.type === 'text', JSON.stringify(got));
    const text = textOf(got);
    expect(text.includes("unknown tool 'mcp_s3_ech'"), text);
    expect(/did you mean: [^?]*mcp_s3_echo/.test(text), `no suggestion: ${text}`);
    const none = await agent.request('tools/call', { name: 'no_such_thing', arguments: {} });
    expect(none.isError === true && textOf(none).includes("unknown tool 'no_such_thing'"), JSON.stringify(none));
    // a known one still answers
    const ok = await agent.call('mcp_s3_echo', { message: 'hi' });
    expect(textOf(ok) === 's3: hi', JSON.stringify(ok));
  });

  await checks.run('an unknown prompt is still -32602', async () => {
    let code;
    try {
      await agent.request('prompts/get', { name: 'mcp_s3_nope' });
    } catch (err) {
      code = err?.code;
    }
    expect(code === -32602, `got ${code}`);
  });

  await checkCleanExit(checks, agent);
}

// ---- hung -----------------------------------------------------------------------------------------

async function scenarioHung() {
  // reads its stdin and never answers; ends with it
  const hang = join(opts.work, 'hang-server.mjs');
  writeFileSync(hang, "process.stdin.resume();\nprocess.stdin.on('end', () => process.exit(0));\n");
  const config = writeConfig('hung.json', {
    mcpServers: { hang: { command: 'node', args: [hang, '--tag', opts.tag], lifecycle: 'keep-alive' }, ok: tiny('ok') },
  });
  const agent = await start('hung', config, ['--connect-timeout', '1s']);

  await checks.run('a server hung in initialize: the status says why once the connect timeout passed', async () => {
    const line = await agent.until(async () => {
      const r = await agent.call('mcp', {});
      return textOf(r).split('\n').find((l) => l.startsWith('hang: ') && l.includes('connect timed out after 1 s'));
    }, 15000, "the status line of 'hang' naming the timeout");
    expect(/^hang: (connecting \(the last attempt failed: |failed \()/.test(line), line);
    const c = await agent.call('mcp', { connect: 'hang' });
    expect(textOf(c).includes('connect timed out after 1 s'), textOf(c));
  });

  await checkCleanExit(checks, agent);
}

await scenarioBurst();
await scenarioHung();
process.exit(checks.summary() ? 0 : 1);
