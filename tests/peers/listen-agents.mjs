#!/usr/bin/env node
// listen-agents.mjs: agents of both SDKs on one `mcp-bridge serve --listen` URL at once, in front
// of server-everything (aggregate mode: its tools are mcp_everything_*; with --prefix '' the names
// of `mcp-bridge connect everything --listen`, unchanged). One line per check on
// stdout ("ok LABEL", "FAIL LABEL: why"); exit status 0 only when every check passed.
//
//   - two v1 SDK Clients (StreamableHTTPClientTransport, 2025-11-25 sessions), A and B, each
//     answering sampling with its own name: both at once list the tools, call echo and run a
//     long operation with progress; then each in turn (B first) triggers a sampling request and
//     must get its own answer (the server's request routed back to the agent whose call made
//     it). Then A ends its session (DELETE): a request in that session gets 404, B goes on.
//   - the v2 SDK Client pinned to 2026-07-28 (stateless requests with _meta and Mcp-* headers):
//     lists the tools, calls echo, gets progress, and answers the server's sampling request as
//     an input round (InputRequiredResult, then the retry with its requestState, a new POST).
//
//   node listen-agents.mjs --url http://127.0.0.1:PORT/mcp
import { parseArgs } from './lib/common.mjs';

const opts = parseArgs({
  url: { type: 'string', help: 'the bridge\'s URL' },
  prefix: { type: 'string', default: 'everything', help: 'the server\'s name in the tool names (serve: mcp_NAME_tool); "" for connect (names unchanged)' },
  'wait-ms': { type: 'int', default: 20000, help: 'bound of every call' },
}, process.argv.slice(2), 'Agents of both SDKs on one bridge over HTTP (see the header).');
if (!opts.url) {
  process.stderr.write('listen-agents: --url is required\n');
  process.exit(2);
}
const v1 = {
  ...(await import('@modelcontextprotocol/sdk/client/index.js')),
  ...(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')),
  types: await import('@modelcontextprotocol/sdk/types.js'),
};
const v2 = await import('@modelcontextprotocol/client');

let failed = 0;
const check = (label, cond, why) => {
  if (cond) process.stdout.write(`ok ${label}\n`);
  else {
    failed += 1;
    process.stdout.write(`FAIL ${label}: ${why}\n`);
  }
};
const text = (res) => (res?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const T = (n) => (opts.prefix ? `mcp_${opts.prefix}_${n}` : n);
const timer = setTimeout(() => {
  process.stdout.write('FAIL listen-agents: gave up after 100 s\n');
  process.exit(1);
}, 100000);

async function legacyAgent(name) {
  const client = new v1.Client({ name: `agent-${name}`, version: '1.0.0' }, { capabilities: { sampling: {} } });
  const asked = [];
  client.setRequestHandler(v1.types.CreateMessageRequestSchema, async (req) => {
    asked.push(req.params);
    return { role: 'assistant', model: `model-${name}`, content: { type: 'text', text: `answer of ${name}` } };
  });
  const transport = new v1.StreamableHTTPClientTransport(new URL(opts.url));
  await client.connect(transport, { timeout: opts.waitMs });
  check(`${name}: session`, typeof transport.sessionId === 'string' && transport.sessionId.length > 16,
    `no Mcp-Session-Id (${transport.sessionId})`);
  return { name, client, transport, asked };
}

async function legacyRun(a) {
  const tools = (await a.client.listTools({}, { timeout: opts.waitMs })).tools.map((t) => t.name);
  check(`${a.name}: tools/list`, tools.includes(T('echo')) && tools.includes(T('trigger-sampling-request')),
    `got ${JSON.stringify(tools)}`);
  const echo = await a.client.callTool({ name: T('echo'), arguments: { message: `hi from ${a.name}` } },
    undefined, { timeout: opts.waitMs });
  check(`${a.name}: echo`, text(echo).includes(`hi from ${a.name}`), `got ${JSON.stringify(echo)}`);
  const progress = [];
  const long = await a.client.callTool({ name: T('trigger-long-running-operation'), arguments: { duration: 1, steps: 3 } },
    undefined, { timeout: opts.waitMs, onprogress: (p) => progress.push(p) });
  check(`${a.name}: progress`, progress.length >= 2 && !long.isError, `${progress.length} progress notifications, ${JSON.stringify(long)}`);
}

// One agent's call at a time: a stdio server's request names no call of the agent's, so the
// bridge gives it to the one call in flight that may ask (with two at once it cannot tell).
async function legacySample(a) {
  const sample = await a.client.callTool({ name: T('trigger-sampling-request'), arguments: { prompt: `from ${a.name}`, maxTokens: 20 } },
    undefined, { timeout: opts.waitMs });
  check(`${a.name}: sampling routed back to it`, a.asked.length === 1 && text(sample).includes(`answer of ${a.name}`),
    `asked ${a.asked.length} times, result ${JSON.stringify(sample)}`);
}

async function modernRun() {
  const client = new v2.Client({ name: 'agent-modern', version: '1.0.0' }, {
    capabilities: { sampling: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } },
  });
  let asked = 0;
  client.setRequestHandler('sampling/createMessage', async () => {
    asked += 1;
    return { role: 'assistant', model: 'model-modern', content: { type: 'text', text: 'answer of modern' } };
  });
  const transport = new v2.StreamableHTTPClientTransport(new URL(opts.url));
  await client.connect(transport, { timeout: opts.waitMs });
  check('modern: era', client.getProtocolEra?.() === 'modern', `era ${client.getProtocolEra?.()}`);
  const tools = (await client.listTools({}, { timeout: opts.waitMs })).tools.map((t) => t.name);
  check('modern: tools/list', tools.includes(T('echo')), `got ${JSON.stringify(tools)}`);
  const echo = await client.callTool({ name: T('echo'), arguments: { message: 'hi from modern' } },
    { timeout: opts.waitMs });
  check('modern: echo', text(echo).includes('hi from modern'), `got ${JSON.stringify(echo)}`);
  const progress = [];
  const long = await client.callTool({ name: T('trigger-long-running-operation'), arguments: { duration: 1, steps: 3 } },
    { timeout: opts.waitMs, onprogress: (p) => progress.push(p) });
  check('modern: progress', progress.length >= 2 && !long.isError, `${progress.length} progress notifications, ${JSON.stringify(long)}`);
  // the legacy server's sampling request, as an input round: the retry is a new POST
  const sample = await client.callTool({ name: T('trigger-sampling-request'), arguments: { prompt: 'from modern', maxTokens: 20 } },
    { timeout: opts.waitMs });
  check('modern: sampling as an input round', asked === 1 && text(sample).includes('answer of modern'),
    `asked ${asked} times, result ${JSON.stringify(sample)}`);
  await client.close();
}

try {
  const a = await legacyAgent('A');
  const b = await legacyAgent('B');
  await Promise.all([legacyRun(a), legacyRun(b)]);
  await legacySample(b); // B first: A, the first agent, is where an unrelated request would go
  await legacySample(a);
  // DELETE ends A's session; the same id is then unknown (404), B's session goes on
  const sid = a.transport.sessionId;
  await a.transport.terminateSession();
  const after = await fetch(opts.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} }),
  });
  check('A: DELETE ends the session (404 after)', after.status === 404, `status ${after.status}`);
  const again = await b.client.callTool({ name: T('echo'), arguments: { message: 'B still here' } },
    undefined, { timeout: opts.waitMs });
  check('B: goes on after A left', text(again).includes('B still here'), `got ${JSON.stringify(again)}`);
  await modernRun();
  await b.transport.terminateSession();
  await b.client.close();
  await a.client.close().catch(() => {});
} catch (e) {
  failed += 1;
  process.stdout.write(`FAIL listen-agents: ${e?.stack ?? e}\n`);
}
clearTimeout(timer);
process.stdout.write(failed ? `${failed} failed\n` : 'all passed\n');
process.exit(failed ? 1 : 0);
