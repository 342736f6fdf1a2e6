#!/usr/bin/env node
// bridge-cache.mjs: the metadata cache never hides a tool (tests/integration/bridge_cache.sh).
// The SDK's Client as the agent on `mcp-bridge serve`, @modelcontextprotocol/server-everything
// behind it as a lazy server (it adds its sampling, elicitation and roots tools only for a client
// that declares those capabilities), every run over one metadata cache (PI_CODING_AGENT_DIR):
//   plain    an agent that declares no capabilities: no sampling tool; the cache is filled
//   capable  an agent that declares roots, sampling and elicitation: the cache filled by the
//            plain agent does not apply (the key holds what the server is offered): the first
//            tools/list has the sampling tool, and calling it reaches the agent's sampling
//   wake     the cached list lacks a tool the server has (edited out of the file, the key kept,
//            as when a server gained a tool since): the server is listed from the cache and
//            not connected; a call naming the missing tool wakes it and is routed once it has
//            listed, and the agent hears notifications/tools/list_changed (the live list
//            differs from the cached one)
// One line per check on stdout; exit status 0 only when all passed.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { AGENT_CAPABILITIES, Agent, Checks, checkCleanExit, expect, textOf } from './bridge-lib.mjs';
import { parseArgs } from './lib/common.mjs';

const spec = {
  bridge: { type: 'string', arg: 'PATH', help: 'the mcp-bridge binary' },
  everything: { type: 'string', arg: 'PATH', help: "server-everything's dist/index.js" },
  root: { type: 'string', arg: 'DIR', help: 'a directory for the configuration and the logs (named on every command line)' },
  deadline: { type: 'int', default: 200, arg: 'SECONDS', help: 'the whole run is stopped (a failure) after this long' },
};
const opts = parseArgs(spec, process.argv.slice(2), `
Checks that the metadata cache of mcp-bridge never hides a server's tool (see the top of this
file). PI_CODING_AGENT_DIR must name a directory of the test's own.`);
if (!opts.bridge || !opts.everything || !opts.root || !process.env.PI_CODING_AGENT_DIR) {
  process.stderr.write('bridge-cache: --bridge, --everything, --root and PI_CODING_AGENT_DIR are required\n');
  process.exit(2);
}

const CACHE = join(process.env.PI_CODING_AGENT_DIR, 'mcp-bridge-cache.json');
const SAMPLING_TOOL = 'mcp_everything_trigger-sampling-request';
const ECHO_TOOL = 'mcp_everything_echo';
const checks = new Checks('cache/');

const deadline = setTimeout(() => {
  process.stdout.write(`FAIL deadline: the run took more than ${opts.deadline} s\n`);
  process.exit(1);
}, opts.deadline * 1000);
deadline.unref();

// server-everything as a lazy server: connected at start only when its lists are not cached
const config = join(opts.root, 'cache.json');
writeFileSync(config, JSON.stringify({
  mcpServers: {
    everything: { command: process.execPath, args: [opts.everything, 'stdio', opts.root], lifecycle: 'lazy' },
  },
  // the first tools/list waits for a server that is not cached (as slow as a sanitizer build
  // under load may make its start)
  settings: { settleTimeout: 20000 },
}, null, 2));

let agent;
async function start(label, capabilities) {
  agent = new Agent(label);
  await agent.connect({
    kind: 'stdio',
    argv: [opts.bridge, '-v', 'serve', '--config', config],
    env: process.env,
    stderrPath: join(opts.root, `${label}.log`),
    cwd: opts.root,
  }, { capabilities, closeTimeoutMs: 3000 });
}

const toolNames = async () => (await agent.request('tools/list', {})).tools.map((t) => t.name);

function cachedEverything() {
  try {
    return JSON.parse(readFileSync(CACHE, 'utf8')).servers?.everything ?? null;
  } catch {
    return null;
  }
}

async function finish() {
  await checks.run('no protocol errors on the agent side', async () => {
    expect(agent.protocolErrors().length === 0, `the SDK reported: ${agent.protocolErrors().join('; ')}`);
  });
  await checkCleanExit(checks, agent);
}

let ok = false;
try {
  // -- plain: no capabilities declared -------------------------------------------------------------
  checks.prefix = 'cache/plain/';
  await start('plain', {});
  let plainKey;
  await checks.run('an agent without sampling gets no sampling tool; the lists are cached', async () => {
    const names = await agent.until(async () => {
      const n = await toolNames();
      return n.includes(ECHO_TOOL) && n;
    }, 20000, 'the server listed');
    expect(!names.includes(SAMPLING_TOOL), `the sampling tool is listed for an agent without sampling: ${names.join(' ')}`);
    await agent.until(() => cachedEverything()?.tools?.some((t) => t.name === 'echo'), 10000, 'the cache written');
    const e = cachedEverything();
    expect(!e.tools.some((t) => t.name === 'trigger-sampling-request'), 'the cached tools have the sampling tool');
    plainKey = e.key;
  }, 40000);
  await finish();

  // -- capable: roots, sampling and elicitation declared ---------------------------------------------
  checks.prefix = 'cache/capable/';
  await start('capable', AGENT_CAPABILITIES);
  await checks.run('an agent with sampling does not get the plain agent\'s cached list', async () => {
    const names = await toolNames(); // the first one: the server connects, the settle window waits
    expect(names.includes(SAMPLING_TOOL), `the first tools/list lacks ${SAMPLING_TOOL}: ${names.join(' ')}`);
    for (const t of ['mcp_everything_get-roots-list', 'mcp_everything_trigger-elicitation-request']) {
      expect(names.includes(t), `the first tools/list lacks ${t}: ${names.join(' ')}`);
    }
  }, 40000);
  await checks.run('the sampling tool reaches the agent\'s sampling', async () => {
    const r = await agent.call(SAMPLING_TOOL, { prompt: 'cache-check', maxTokens: 10 }, { timeout: 20000 });
    expect(!r.isError, `the call failed: ${textOf(r)}`);
    expect(agent.samplingRequests.length === 1, `the agent was asked to sample ${agent.samplingRequests.length} times`);
    expect(textOf(r).includes('sampled:'), `the answer does not carry the agent's sample: ${textOf(r)}`);
  }, 30000);
  await checks.run('its lists are cached under a key of their own', async () => {
    await agent.until(() => cachedEverything()?.tools?.some((t) => t.name === 'trigger-sampling-request'), 10000, 'the cache written');
    const key = cachedEverything().key;
    expect(/^[0-9a-f]{64}$/.test(key) && key !== plainKey, `the key ${key} (the plain agent's: ${plainKey})`);
  }, 20000);
  await finish();

  // -- wake: the cached list lacks a tool the server has ---------------------------------------
  checks.prefix = 'cache/wake/';
  const doc = JSON.parse(readFileSync(CACHE, 'utf8'));
  doc.servers.everything.tools = doc.servers.everything.tools.filter((t) => t.name !== 'echo');
  writeFileSync(CACHE, JSON.stringify(doc, null, 2));
  await start('wake', AGENT_CAPABILITIES);
  await checks.run('listed from the cache, not connected: the tool it lacks is not listed', async () => {
    const names = await toolNames();
    expect(names.includes(SAMPLING_TOOL), `not listed from the cache: ${names.join(' ')}`);
    expect(!names.includes(ECHO_TOOL), `the tool edited out of the cache is listed: ${names.join(' ')}`);
    const instr = agent.init?.instructions ?? '';
    expect(/Listed from its cache: .*'everything'/.test(instr), `the instructions: ${JSON.stringify(instr)}`);
  });
  await checks.run('a call naming it wakes the server and is routed; the agent hears list_changed', async () => {
    const since = agent.mark();
    const r = await agent.call(ECHO_TOOL, { message: 'woken' }, { timeout: 30000 });
    expect(!r.isError, `the call failed: ${textOf(r)}`);
    expect(textOf(r).includes('woken'), `the answer: ${textOf(r)}`);
    await agent.waitFor((m) => m.method === 'notifications/tools/list_changed', since, 10000, 'notifications/tools/list_changed');
    const names = await toolNames();
    expect(names.includes(ECHO_TOOL), `not listed once the server listed: ${names.join(' ')}`);
  }, 40000);
  await checks.run('a tool no server has is still unknown, after the wake', async () => {
    const r = await agent.call('mcp_everything_no-such-tool', {}).catch((err) => ({ error: err }));
    const text = r.error ? String(r.error.message) : textOf(r);
    expect((r.error || r.isError) && /unknown tool/.test(text), `the answer: ${JSON.stringify(r)}`);
  });
  await finish();
  ok = checks.summary();
} catch (err) {
  process.stdout.write(`FAIL cache: ${err?.stack ?? err}\n`);
} finally {
  await agent?.close();
}
process.exit(ok ? 0 : 1);
