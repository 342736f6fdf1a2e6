// Elicitation across eras through mcp-bridge: a modern agent (the SDK v2 Client, which answers
// an InputRequiredResult through its elicitation handler and sends the request again) against
// server-everything (a legacy server, which asks with elicitation/create in the middle of
// trigger-elicitation-request), in aggregate mode (mcp-bridge --config) and single mode
// (mcp-bridge connect --bridge-eras everything); then the same bridge spoken to line by line: the
// InputRequiredResult as the bridge writes it, a forged and a tampered requestState (-32602), a
// state used twice, and server-everything killed while the agent is away (the retry gets the
// failure; the next call works again on the restarted server). A legacy agent (the v1 Client)
// still gets elicitation/create as a request of the bridge. The other way round: the v1 Client
// against eras-mrtr-server.mjs (an SDK v2 server whose tools ask with InputRequiredResult: one
// round, two rounds, no requestState) in both modes, and `mcp-bridge call` answering it alone.
// (The bridge speaks 2026-07-28 to that server, checked first: the questions the legacy agent
// gets are the bridge's unpacking of the server's InputRequiredResults.)
//   node eras-mrtr-agent.mjs --bridge PATH --everything PATH --modern PATH --root DIR
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyStdio } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { Checks, expect, sleep } from './bridge-lib.mjs';

const { values: opts } = parseArgs({
  options: {
    bridge: { type: 'string' }, everything: { type: 'string' }, modern: { type: 'string' }, root: { type: 'string' },
  },
});
const config = `${opts.root}/eras-mrtr.json`;
writeFileSync(config, JSON.stringify({
  mcpServers: {
    everything: { command: process.execPath, args: [opts.everything, 'stdio', opts.root] },
    modern: { command: process.execPath, args: [opts.modern, opts.root] },
  },
}));
const env = { ...process.env, PI_CODING_AGENT_DIR: `${opts.root}/pi`, MCP_BRIDGE_CACHE: 'off' };
const INVALID = 'requestState is invalid or expired: send the request again without it';
const ANSWER = { action: 'accept', content: { name: 'Ada Lovelace', check: true, email: 'ada@example.com' } };

// ---- the SDK v2 Client, in both modes ---------------------------------------------------------

async function modernRoundTrip(checks, args, tool) {
  const agent = new Client({ name: 'eras-mrtr', version: '1' }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: 'auto' },
    inputRequired: { autoFulfill: true },
  });
  let asked = 0;
  agent.setRequestHandler('elicitation/create', async (req) => {
    asked++;
    expect(req.params.message?.includes('Please provide inputs'), JSON.stringify(req.params));
    return ANSWER;
  });
  await checks.run('a modern agent, a legacy server: connected at 2026-07-28', async () => {
    await agent.connect(new StdioClientTransport({ command: opts.bridge, args, env, stderr: 'ignore' }));
    expect(agent.getProtocolEra() === 'modern', `era ${agent.getProtocolEra()}`);
  }, 40000);
  await checks.run('elicitation: the server asks, the agent answers, the call completes', async () => {
    // in aggregate mode a server still connecting is listed when it is ready
    let tools = [];
    for (let i = 0; i < 40 && !tools.includes(tool); i++) {
      if (i) await sleep(250);
      tools = (await agent.listTools()).tools.map((t) => t.name);
    }
    expect(tools.includes(tool), tools.join(' '));
    const r = await agent.callTool({ name: tool, arguments: {} });
    const text = JSON.stringify(r.content);
    expect(asked === 1, `asked ${asked} times`);
    expect(text.includes('Ada Lovelace') && text.includes('ada@example.com'), text);
    // and again: every call its own round trip
    const r2 = await agent.callTool({ name: tool, arguments: {} });
    expect(asked === 2 && JSON.stringify(r2.content).includes('Ada Lovelace'), JSON.stringify(r2));
  }, 30000);
  await agent.close();
}

// ---- line by line ------------------------------------------------------------------------------

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
};

class Raw {
  constructor(args) {
    this.child = spawn(opts.bridge, args, { env, stdio: ['pipe', 'pipe', 'ignore'] });
    this.waiting = new Map();
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const m = JSON.parse(line);
      if (m.id !== undefined && this.waiting.has(JSON.stringify(m.id))) {
        this.waiting.get(JSON.stringify(m.id))(m);
        this.waiting.delete(JSON.stringify(m.id));
      }
    });
  }

  request(id, method, params = {}, ms = 20000) {
    const p = new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no answer to ${id} (${method}) in ${ms} ms`)), ms);
      this.waiting.set(JSON.stringify(id), (m) => { clearTimeout(t); resolve(m); });
    });
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: META } })}\n`);
    return p;
  }

  async close() {
    const done = new Promise((resolve) => this.child.on('exit', resolve));
    this.child.stdin.end();
    await done;
  }
}

// the pid of the server the bridge runs (its child, server-everything)
function serverPid(bridgePid) {
  const out = execFileSync('pgrep', ['-P', String(bridgePid)], { encoding: 'utf8' }).trim();
  return Number(out.split('\n')[0]);
}

async function raw(checks) {
  const b = new Raw(['--config', config]);
  const tool = 'mcp_everything_trigger-elicitation-request';
  let state;
  await checks.run('the InputRequiredResult as the bridge writes it', async () => {
    await b.request('d', 'server/discover', {}, 40000);
    await b.request('l', 'tools/list');
    const r = await b.request(1, 'tools/call', { name: tool, arguments: {} });
    const res = r.result;
    expect(res?.resultType === 'input_required', JSON.stringify(r));
    const keys = Object.keys(res.inputRequests ?? {});
    expect(keys.length === 1 && res.inputRequests[keys[0]].method === 'elicitation/create', JSON.stringify(res));
    expect(typeof res.requestState === 'string' && res.requestState.startsWith('mcpb1.'), res.requestState);
    state = { key: keys[0], value: res.requestState };
  });
  await checks.run('a forged and a tampered requestState: -32602, the real one still good', async () => {
    for (const [id, s] of [[2, 'mcpb1.MS4yLmV2ZXJ5dGhpbmc.AAAA'],
      [3, `${state.value.slice(0, -2)}${state.value.endsWith('A') ? 'BB' : 'AA'}`]]) {
      const r = await b.request(id, 'tools/call', { name: tool, arguments: {}, inputResponses: {}, requestState: s });
      expect(r.error?.code === -32602 && r.error.message === INVALID, JSON.stringify(r));
    }
    const r = await b.request(4, 'tools/call', {
      name: tool, arguments: {}, inputResponses: { [state.key]: ANSWER }, requestState: state.value,
    });
    expect(r.result?.resultType === 'complete' && JSON.stringify(r.result.content).includes('Ada Lovelace'), JSON.stringify(r));
  });
  await checks.run('a state used once is not good twice', async () => {
    const r = await b.request(5, 'tools/call', {
      name: tool, arguments: {}, inputResponses: { [state.key]: ANSWER }, requestState: state.value,
    });
    expect(r.error?.code === -32602, JSON.stringify(r));
  });
  await checks.run('the legacy server killed while the agent is away: the retry says so', async () => {
    const r = await b.request(6, 'tools/call', { name: tool, arguments: {} });
    const s = r.result?.requestState;
    expect(s, JSON.stringify(r));
    const pid = serverPid(b.child.pid);
    process.kill(pid, 'SIGKILL');
    // the bridge notices the exit; the retry then finds the call's failure kept for it
    let again;
    for (let i = 0; i < 100; i++) {
      again = await b.request(`7-${i}`, 'tools/call', {
        name: tool, arguments: {}, inputResponses: { [Object.keys(r.result.inputRequests)[0]]: ANSWER }, requestState: s,
      });
      if (again.result?.isError || again.error) break;
    }
    expect(again.result?.isError === true && JSON.stringify(again.result.content).includes('connection'), JSON.stringify(again));
    // the restarted server asks again, and is answered
    const n = await b.request(8, 'tools/call', { name: tool, arguments: {} }, 40000);
    const key = Object.keys(n.result?.inputRequests ?? {})[0];
    expect(key, JSON.stringify(n));
    const f = await b.request(9, 'tools/call', {
      name: tool, arguments: {}, inputResponses: { [key]: ANSWER }, requestState: n.result.requestState,
    });
    expect(JSON.stringify(f.result?.content).includes('Ada Lovelace'), JSON.stringify(f));
  }, 60000);
  await b.close();
}

// ---- a legacy agent: today's behaviour ------------------------------------------------------

async function legacy(checks) {
  const old = new LegacyClient({ name: 'eras-mrtr-legacy', version: '1' }, { capabilities: { elicitation: {} } });
  let asked = 0;
  old.setRequestHandler(ElicitRequestSchema, async () => { asked++; return ANSWER; });
  await checks.run('a legacy agent: elicitation/create reaches it as a request', async () => {
    await old.connect(new LegacyStdio({ command: opts.bridge, args: ['--config', config], env, stderr: 'ignore' }));
    const r = await old.callTool({ name: 'mcp_everything_trigger-elicitation-request', arguments: {} });
    expect(asked === 1 && JSON.stringify(r.content).includes('Ada Lovelace'), JSON.stringify(r));
  }, 40000);
  await old.close();
}

// ---- a legacy agent, a modern server ----------------------------------------------------------

async function legacyToModern(checks, args, prefix) {
  const old = new LegacyClient({ name: 'eras-mrtr-legacy', version: '1' }, { capabilities: { elicitation: {} } });
  const asked = [];
  old.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return { action: 'accept', content: req.params.message.includes('colour') ? { colour: 'blue' } : { name: 'Ada' } };
  });
  await checks.run('a legacy agent, a modern server: one question', async () => {
    await old.connect(new LegacyStdio({ command: opts.bridge, args, env, stderr: 'ignore' }));
    const r = await old.callTool({ name: `${prefix}ask`, arguments: {} });
    expect(r.content?.[0]?.text === 'hello Ada' && asked.length === 1, JSON.stringify(r));
    expect(r.structuredContent?.states?.at(-1) === 'ask:1', JSON.stringify(r.structuredContent));
  }, 40000);
  await checks.run('two rounds, the state of each echoed exactly', async () => {
    const r = await old.callTool({ name: `${prefix}twice`, arguments: {} });
    expect(r.content?.[0]?.text === 'Ada likes blue' && asked.length === 3, `${JSON.stringify(r)} ${asked}`);
    expect(JSON.stringify(r.structuredContent?.states?.slice(-2)) === '["twice:1","twice:2:Ada"]',
      JSON.stringify(r.structuredContent));
  });
  await checks.run('no requestState given: none sent back', async () => {
    const r = await old.callTool({ name: `${prefix}nostate`, arguments: {} });
    expect(r.content?.[0]?.text === 'no state, Ada' && !r.isError, JSON.stringify(r));
  });
  await old.close();
}

function bridgeCall(checks) {
  return checks.run('mcp-bridge call answers the questions itself (the schema\'s defaults)', async () => {
    const out = execFileSync(opts.bridge, ['--config', config, 'call', 'modern', 'twice'], { env, encoding: 'utf8' });
    expect(out.trim() === 'Default likes grey', out);
  }, 40000);
}

const aggregate = new Checks('aggregate/');
await modernRoundTrip(aggregate, ['--config', config], 'mcp_everything_trigger-elicitation-request');
const single = new Checks('single/');
// connect is transparent by default (a legacy server stays legacy): --bridge-eras bridges
await modernRoundTrip(single, ['--config', config, 'connect', '--bridge-eras', 'everything'], 'trigger-elicitation-request');
const lines = new Checks('raw/');
await raw(lines);
const old = new Checks('legacy/');
await legacy(old);

const up = new Checks('legacy-to-modern/');
await up.run('the bridge speaks 2026-07-28 to eras-mrtr-server (its InputRequiredResults reach the bridge)', async () => {
  const out = execFileSync(opts.bridge, ['--config', config, 'test', 'modern', '--json'], { env, encoding: 'utf8' });
  expect(JSON.parse(out).era === 'modern', out);
}, 40000);
await legacyToModern(up, ['--config', config], 'mcp_modern_');
await legacyToModern(up, ['--config', config, 'connect', 'modern'], '');
await bridgeCall(up);

const ok = aggregate.summary() & single.summary() & lines.summary() & old.summary() & up.summary();
process.exit(ok ? 0 : 1);
