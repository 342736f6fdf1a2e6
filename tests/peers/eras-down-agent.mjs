// A modern agent (the SDK v2 Client, versionNegotiation 'auto': it probes with server/discover
// and stays at 2026-07-28 when the answer says so) against mcp-bridge in aggregate mode with
// server-everything (a legacy server) behind it: the era the agent settles on, discover's
// result, tools, resources, prompts, completion, subscriptions/listen with a resource update,
// single mode (connect) with the same server, and a legacy agent (the v1 SDK Client) against the same configuration, unchanged.
//   node eras-down-agent.mjs --bridge PATH --everything PATH --root DIR
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyStdio } from '@modelcontextprotocol/sdk/client/stdio.js';

import { Checks, expect } from './bridge-lib.mjs';

const { values: opts } = parseArgs({
  options: { bridge: { type: 'string' }, everything: { type: 'string' }, root: { type: 'string' } },
});
const config = `${opts.root}/eras-down.json`;
writeFileSync(config, JSON.stringify({
  mcpServers: { everything: { command: process.execPath, args: [opts.everything, 'stdio', opts.root] } },
}));
const env = { ...process.env, PI_CODING_AGENT_DIR: `${opts.root}/pi`, MCP_BRIDGE_CACHE: 'off' };
const transportOf = (T, args = ['--config', config]) => new T({ command: opts.bridge, args, env, stderr: 'ignore' });

const checks = new Checks('modern/');
const agent = new Client({ name: 'eras-down', version: '1' }, {
  capabilities: { elicitation: {} },
  versionNegotiation: { mode: 'auto' },
});
await checks.run('the bridge is a 2026-07-28 server to a modern agent', async () => {
  await agent.connect(transportOf(StdioClientTransport));
  expect(agent.getProtocolEra() === 'modern', `era ${agent.getProtocolEra()}`);
  const d = agent.getDiscoverResult();
  expect(d?.supportedVersions?.includes('2026-07-28'), JSON.stringify(d));
  expect(d._meta?.['io.modelcontextprotocol/serverInfo']?.name === 'mcp-bridge', JSON.stringify(d));
  expect(typeof d.instructions === 'string' && d.capabilities?.tools, JSON.stringify(d));
}, 40000);
await checks.run('tools/list and tools/call through it', async () => {
  const tools = (await agent.listTools()).tools.map((t) => t.name);
  expect(tools.includes('mcp_everything_echo'), tools.join(' '));
  const r = await agent.callTool({ name: 'mcp_everything_echo', arguments: { message: 'hi' } });
  expect(r.content?.[0]?.text === 'Echo: hi', JSON.stringify(r));
});
let uri;
await checks.run('resources and prompts', async () => {
  const res = (await agent.listResources()).resources;
  expect(res.length > 0, 'no resources');
  uri = res[0].uri;
  const read = await agent.readResource({ uri });
  expect(read.contents?.[0]?.uri === uri, JSON.stringify(read));
  const prompts = (await agent.listPrompts()).prompts.map((p) => p.name);
  expect(prompts.length > 0, 'no prompts');
});
await checks.run('a resource nobody serves: -32602', async () => {
  try {
    await agent.readResource({ uri: 'nowhere://x' });
    expect(false, 'read succeeded');
  } catch (err) {
    expect(err.code === -32602, `code ${err.code}: ${err.message}`);
  }
});
await checks.run('subscriptions/listen: acknowledged, a resource update on it', async () => {
  const updated = new Promise((resolve) => {
    agent.setNotificationHandler('notifications/resources/updated', (n) => resolve(n));
  });
  const sub = await agent.listen({ toolsListChanged: true, resourceSubscriptions: [uri] });
  expect(sub.honoredFilter.toolsListChanged === true, JSON.stringify(sub.honoredFilter));
  expect(sub.honoredFilter.resourceSubscriptions?.[0] === uri, JSON.stringify(sub.honoredFilter));
  await agent.callTool({ name: 'mcp_everything_toggle-subscriber-updates', arguments: {} });
  const n = await updated;
  expect(n.params.uri === uri, JSON.stringify(n));
  await sub.close();
  expect((await sub.closed) === 'local', 'closed');
}, 30000);
await agent.close();

const single = new Checks('single/');
const one = new Client({ name: 'eras-down-single', version: '1' }, { versionNegotiation: { mode: 'auto' } });
await single.run('connect: a modern agent, a legacy server: discover from its InitializeResult', async () => {
  await one.connect(transportOf(StdioClientTransport, ['connect', 'everything', '--config', config]));
  expect(one.getProtocolEra() === 'modern', `era ${one.getProtocolEra()}`);
  const d = one.getDiscoverResult();
  expect(d?.supportedVersions?.[0] === '2026-07-28', JSON.stringify(d));
  const info = d._meta?.['io.modelcontextprotocol/serverInfo'];
  expect(info?.name && info.name !== 'mcp-bridge', JSON.stringify(info));
  const tools = (await one.listTools()).tools.map((t) => t.name);
  expect(tools.includes('echo'), tools.join(' '));
  const r = await one.callTool({ name: 'echo', arguments: { message: 'hi' } });
  expect(r.content?.[0]?.text === 'Echo: hi', JSON.stringify(r));
}, 40000);
await one.close();

const legacy = new Checks('legacy/');
const old = new LegacyClient({ name: 'eras-down-legacy', version: '1' });
await legacy.run('a legacy agent gets the legacy era, unchanged', async () => {
  await old.connect(transportOf(LegacyStdio));
  expect(old.getServerVersion()?.name === 'mcp-bridge', JSON.stringify(old.getServerVersion()));
  const tools = await old.listTools();
  expect(tools.resultType === undefined && tools.ttlMs === undefined, JSON.stringify(Object.keys(tools)));
  const r = await old.callTool({ name: 'mcp_everything_echo', arguments: { message: 'hi' } });
  expect(r.content?.[0]?.text === 'Echo: hi', JSON.stringify(r));
  await old.ping();
}, 40000);
await old.close();

const ok = checks.summary() & single.summary() & legacy.summary();
process.exit(ok ? 0 : 1);
