#!/usr/bin/env node
// eras-agent.mjs: an agent of either era, on a server directly or through mcp-bridge, that goes
// through every feature and writes what it got as a transcript of plain values (texts, names,
// numbers: nothing of the wire that differs by era), so that a bridged run can be compared with
// a direct one (tests/integration/bridge_eras.sh).
//
//   --sdk v1   the legacy agent: @modelcontextprotocol/sdk 1.x Client (initialize, 2025-11-25)
//   --sdk v2   the modern agent: @modelcontextprotocol/client 2.4.0 Client; --pin (the default
//              when --command runs mcp-bridge) speaks 2026-07-28 only, else "auto" (discover,
//              falling back to initialize, as the SDK does on its own)
//   --command JSON-ARGV   a stdio server or the bridge (e.g. ["mcp-bridge","connect","srv"])
//   --url URL             a Streamable HTTP server
//   --prefix NAME         the bridge's aggregate mode: tools and prompts are mcp_NAME_<name>
//   --steps a,b,...       what to do (default: all): tools resources subscribe prompts
//                         completion progress cancel elicit sample logging listchanged (restart: kill the
//                         server and wait for a new one; ping: the legacy era's, not by default)
//   --out FILE            the transcript ({step: value}); every step also prints "ok STEP" or
//                         "FAIL STEP: why" on stdout; exit 1 when a step failed
//
// Each step checks its own answer (the expected text) so that the direct half can fail too.
// Waits are bounded (--wait-ms, default 10000); nothing sleeps on hope.
import { writeFileSync } from 'node:fs';
import { parseArgs } from './lib/common.mjs';

const opts = parseArgs({
  sdk: { type: 'string', default: 'v1', help: 'v1 (legacy agent) or v2 (modern agent)' },
  command: { type: 'string', help: 'JSON argv of a stdio server or the bridge' },
  url: { type: 'string', help: 'URL of a Streamable HTTP server' },
  pin: { type: 'string', help: 'v2: "yes" pins 2026-07-28, "no" negotiates (auto)' },
  prefix: { type: 'string', help: 'aggregate mode: the server name of the prefix' },
  steps: { type: 'string', default: 'tools,resources,subscribe,prompts,completion,progress,cancel,elicit,sample,logging,listchanged', help: 'steps' },
  out: { type: 'string', help: 'transcript file' },
  'wait-ms': { type: 'int', default: 10000, help: 'bound of every wait' },
  conformance: { type: 'bool', default: false, help: 'the conformance driver: call every tool listed (arguments from MCP_CONFORMANCE_CONTEXT toolCalls, else from the schema; json_schema_echo gets the focal tool\'s inputSchema), read every resource, get every prompt' },
  'forged-state': { type: 'bool', default: false, help: 'v2: also send a tools/call with a forged requestState (expects -32602)' },
}, process.argv.slice(2), 'An agent of either era going through every MCP feature (see the header).');

const v2 = opts.sdk === 'v2';
const argv = opts.command ? JSON.parse(opts.command) : null;
const viaBridge = argv && /mcp-bridge$/.test(argv[0]);
const pin = opts.pin ? opts.pin === 'yes' : viaBridge;
const name = (n) => (opts.prefix ? `mcp_${opts.prefix}_${n}`.replace(/[^A-Za-z0-9_-]/g, '_') : n);
// a name as the server gave it (the bridge's prefix taken off; its own proxy tool "mcp" left out)
const plain = (list) => list.filter((n) => !opts.prefix || n.startsWith(`mcp_${opts.prefix}_`))
  .map((n) => (opts.prefix ? n.slice(`mcp_${opts.prefix}_`.length) : n)).sort();
const transcript = {};
let failed = 0;

const sdk = v2
  ? { ...(await import('@modelcontextprotocol/client')), ...(await import('@modelcontextprotocol/client/stdio')) }
  : {
    ...(await import('@modelcontextprotocol/sdk/client/index.js')),
    ...(await import('@modelcontextprotocol/sdk/client/stdio.js')),
    ...(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')),
    types: await import('@modelcontextprotocol/sdk/types.js'),
  };

const capabilities = { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } };
const client = v2
  ? new sdk.Client({ name: 'eras-agent', version: '1.0.0' }, {
    capabilities, versionNegotiation: { mode: pin ? { pin: '2026-07-28' } : 'auto' },
  })
  : new sdk.Client({ name: 'eras-agent', version: '1.0.0' }, { capabilities });

// Server requests (legacy) and embedded input requests (modern: the SDK fulfils them through
// the same handlers): accept the elicitation, answer the sampling.
const seen = { progress: [], elicit: 0, sample: 0, messages: [], updated: [], toolsChanged: 0 };
const onRequest = (method, schemaName, fn) =>
  (v2 ? client.setRequestHandler(method, fn) : client.setRequestHandler(sdk.types[schemaName], fn));
const onNote = (method, schemaName, fn) =>
  (v2 ? client.setNotificationHandler(method, fn) : client.setNotificationHandler(sdk.types[schemaName], fn));
onRequest('elicitation/create', 'ElicitRequestSchema', async () => {
  seen.elicit += 1;
  return { action: 'accept', content: { ok: true } };
});
onRequest('sampling/createMessage', 'CreateMessageRequestSchema', async () => {
  seen.sample += 1;
  return { model: 'eras-model', role: 'assistant', content: { type: 'text', text: 'a sample' } };
});
onRequest('roots/list', 'ListRootsRequestSchema', async () => ({ roots: [] }));
onNote('notifications/message', 'LoggingMessageNotificationSchema', (n) => seen.messages.push(n.params));
onNote('notifications/resources/updated', 'ResourceUpdatedNotificationSchema', (n) => seen.updated.push(n.params.uri));
onNote('notifications/tools/list_changed', 'ToolListChangedNotificationSchema', () => { seen.toolsChanged += 1; });

// A request written on the transport as it is, with the modern _meta; its response as it came.
let transportRef = null;
const rawWaiters = new Map();
let rawId = 0;
async function rawRequest(method, params) {
  const id = `raw-${++rawId}`;
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'eras-agent', version: '1.0.0' },
  };
  const p = new Promise((resolve) => rawWaiters.set(id, resolve));
  await transportRef.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } });
  let timer;
  const t = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer to ${method} within ${opts.waitMs} ms`)), opts.waitMs); });
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}

async function waitFor(what, cond) {
  const end = Date.now() + opts.waitMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${opts.waitMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const expect = (cond, msg) => { if (!cond) throw new Error(msg); };
const textOf = (r) => (r?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const callText = (tool, args, extra) =>
  (v2 ? client.callTool({ name: name(tool), arguments: args, ...(extra?.params ?? {}) }, extra?.options)
    : client.callTool({ name: name(tool), arguments: args, ...(extra?.params ?? {}) }, undefined, extra?.options))
    .then((r) => { expect(!r.isError, `${tool} answered an error: ${textOf(r)}`); return textOf(r); });

// A subscription for the modern agent: subscriptions/listen (list changes and resource updates
// come only on it); the legacy agent has them on its session.
let sub = null;
async function listen(filter) {
  if (!v2 || client.getProtocolEra?.() !== 'modern') return;
  if (sub) await sub.close().catch(() => {});
  sub = await client.listen(filter);
}

const steps = {
  async tools() {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    for (const t of ['echo', 'add', 'confirm', 'sample', 'progress']) expect(names.includes(name(t)), `no tool ${name(t)} in ${names.join(' ')}`);
    const echo = await callText('echo', { text: 'hi there' });
    expect(echo === 'echo: hi there', `echo answered '${echo}'`);
    const add = await callText('add', { a: 7, b: 35 });
    expect(add === '42', `add answered '${add}'`);
    return { names: plain(names).filter((n) => !/^extra/.test(n)), echo, add };
  },
  async resources() {
    const { resources } = await client.listResources();
    const note = resources.find((r) => r.uri === 'eras://note');
    expect(note, `no eras://note in ${resources.map((r) => r.uri).join(' ')}`);
    const read = await client.readResource({ uri: 'eras://note' });
    const { resourceTemplates } = await client.listResourceTemplates();
    const item = await client.readResource({ uri: 'eras://item/beta' });
    expect(item.contents[0]?.text === 'item beta', `eras://item/beta read '${item.contents[0]?.text}'`);
    return {
      uris: resources.map((r) => r.uri).sort(), note: read.contents[0]?.text,
      templates: resourceTemplates.map((t) => t.uriTemplate).sort(), item: item.contents[0]?.text,
    };
  },
  async subscribe() {
    if (v2 && client.getProtocolEra?.() === 'modern') await listen({ resourceSubscriptions: ['eras://note'] });
    else await client.subscribeResource({ uri: 'eras://note' });
    const before = seen.updated.length;
    await callText('touch', { text: 'second note' });
    await waitFor('notifications/resources/updated for eras://note', () => seen.updated.length > before);
    const read = await client.readResource({ uri: 'eras://note' });
    expect(read.contents[0]?.text === 'second note', `eras://note reads '${read.contents[0]?.text}' after touch`);
    if (sub) await sub.close().catch(() => {});
    sub = null;
    return { updated: seen.updated.slice(before, before + 1), note: read.contents[0]?.text };
  },
  async prompts() {
    const { prompts } = await client.listPrompts();
    expect(prompts.some((p) => p.name === name('greet')), `no prompt ${name('greet')}`);
    const got = await client.getPrompt({ name: name('greet'), arguments: { name: 'bob' } });
    const t = got.messages[0]?.content?.text;
    expect(t === 'Hello, bob!', `greet answered '${t}'`);
    return { names: plain(prompts.map((p) => p.name)), text: t };
  },
  async completion() {
    const p = await client.complete({ ref: { type: 'ref/prompt', name: name('greet') }, argument: { name: 'name', value: 'al' } });
    const r = await client.complete({ ref: { type: 'ref/resource', uri: 'eras://item/{id}' }, argument: { name: 'id', value: 'al' } });
    expect(p.completion.values.join() === 'alice,albert', `prompt completion '${p.completion.values}'`);
    expect(r.completion.values.join() === 'alpha,alpine', `resource completion '${r.completion.values}'`);
    return { prompt: p.completion.values, resource: r.completion.values };
  },
  async progress() {
    // counted as they arrive on the transport: the SDKs run a progress callback a turn after
    // the message, and drop it once the result (often in the same read) has been handled
    const before = seen.progress.length;
    const t = await callText('progress', { steps: 3 }, { options: { onprogress: () => {} } });
    expect(t === 'done 3', `progress answered '${t}'`);
    const got = () => seen.progress.slice(before).map((p) => p.progress);
    await waitFor('three progress notifications', () => got().length >= 3);
    expect(got().join() === '1,2,3', `progress ${got()}`);
    return { text: t, progress: got() };
  },
  async cancel() {
    const before = JSON.parse(await callText('stats', {})).cancelled;
    const ac = new AbortController();
    const p = callText('slow', { ms: 30000 }, { options: { signal: ac.signal } });
    setTimeout(() => ac.abort(), 500);
    let err = null;
    try {
      await p;
    } catch (e) {
      err = e;
    }
    expect(err, 'the cancelled call got an answer');
    let after = before;
    const end = Date.now() + opts.waitMs;
    while (after <= before && Date.now() < end) {
      after = JSON.parse(await callText('stats', {})).cancelled;
      if (after <= before) await new Promise((r) => setTimeout(r, 100));
    }
    expect(after === before + 1, `the server counted ${after - before} cancellations, expected 1`);
    return { cancelled: after - before };
  },
  async elicit() {
    const before = seen.elicit;
    const t = await callText('confirm', { question: 'Go on?' });
    expect(t === 'elicitation accept {"ok":true}', `confirm answered '${t}'`);
    expect(seen.elicit === before + 1, `the agent was asked ${seen.elicit - before} times, expected once`);
    if (opts.forgedState && v2) {
      // sent on the transport as it is: the SDK would not send a state it did not get
      const r = await rawRequest('tools/call', {
        name: name('confirm'), arguments: { question: 'Go on?' },
        inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
        requestState: 'mcpb1.Zm9yZ2Vk.Zm9yZ2Vk',
      });
      // the bridge refuses a state of its form that does not verify with -32602; this server,
      // reached directly, refuses in its tool's answer
      const refusedHere = !viaBridge && r.result?.isError && /requestState is invalid/.test(textOf(r.result));
      expect(r.error?.code === -32602 || refusedHere, `a forged requestState got ${JSON.stringify(r.error ?? r.result)}, expected error -32602`);
    }
    return { text: t, asked: seen.elicit - before };
  },
  async sample() {
    const before = seen.sample;
    const t = await callText('sample', { prompt: 'Say something' });
    expect(t === 'sampled eras-model: a sample', `sample answered '${t}'`);
    return { text: t, asked: seen.sample - before };
  },
  // ping: a method of the legacy era (2026-07-28 has none), which a legacy server answers
  async ping() {
    expect(!(v2 && client.getProtocolEra?.() === 'modern'), 'no ping in 2026-07-28');
    const r = await client.ping();
    expect(r && typeof r === 'object', `ping answered ${JSON.stringify(r)}`);
    return 'pong';
  },
  async logging() {
    const before = seen.messages.length;
    let t;
    if (v2 && client.getProtocolEra?.() === 'modern') {
      t = await callText('log', { level: 'warning', message: 'hello log' }, { params: { _meta: { 'io.modelcontextprotocol/logLevel': 'info' } } });
    } else {
      await client.setLoggingLevel('info');
      t = await callText('log', { level: 'warning', message: 'hello log' });
    }
    await waitFor('notifications/message', () => seen.messages.length > before);
    const m = seen.messages[before];
    expect(m.data === 'hello log' && m.level === 'warning', `log message ${JSON.stringify(m)}`);
    return { text: t, level: m.level, data: m.data, logger: m.logger };
  },
  // the server killed (its pid from the tool pid): the bridge starts it again (a keep-alive
  // entry) and, for a modern server, sends its subscriptions/listen again; then listchanged
  async restart() {
    const first = await callText('pid', {});
    process.kill(Number(first), 'SIGKILL');
    let now = first;
    const end = Date.now() + opts.waitMs;
    while (now === first && Date.now() < end) {
      now = await callText('pid', {}).catch(() => first);
      if (now === first) await new Promise((r) => setTimeout(r, 200));
    }
    expect(now !== first, `the server was not started again within ${opts.waitMs} ms`);
    return { restarted: true };
  },
  // modern agent, legacy server behind a keep-alive entry: the server's elicitation comes back
  // as an InputRequiredResult with the bridge's requestState; the server is killed before the
  // retry, so the suspended request is gone: the retry must fail (-32602, or an error result
  // naming the lost server), and a fresh call must work on the new server
  async 'restart-roundtrip'() {
    expect(v2, 'restart-roundtrip is a modern agent\'s step');
    const pid = await callText('pid', {});
    const first = await rawRequest('tools/call', { name: name('confirm'), arguments: { question: 'Go on?' } });
    const r = first.result;
    expect(r?.resultType === 'input_required' && r.inputRequests && typeof r.requestState === 'string',
      `confirm did not answer input_required: ${JSON.stringify(first.error ?? r)}`);
    const key = Object.keys(r.inputRequests)[0];
    process.kill(Number(pid), 'SIGKILL');
    let now = pid;
    const end = Date.now() + opts.waitMs;
    while (now === pid && Date.now() < end) {
      now = await callText('pid', {}).catch(() => pid);
      if (now === pid) await new Promise((res) => setTimeout(res, 200));
    }
    expect(now !== pid, `the server was not started again within ${opts.waitMs} ms`);
    const retry = await rawRequest('tools/call', {
      name: name('confirm'), arguments: { question: 'Go on?' },
      inputResponses: { [key]: { action: 'accept', content: { ok: true } } }, requestState: r.requestState,
    });
    // either the state names a request that is gone (-32602: send it again without it), or the
    // bridge kept what became of it: an error result naming the lost connection; never a success
    const lost = retry.result?.isError && /connection was lost|killed|exited/.test(textOf(retry.result));
    expect(retry.error?.code === -32602 || lost, `the retry after the restart got ${JSON.stringify(retry.error ?? retry.result)}, expected -32602 or an error result naming the lost server`);
    const again = await callText('confirm', { question: 'Go on?' });
    expect(again === 'elicitation accept {"ok":true}', `a fresh confirm answered '${again}'`);
    return { refused: retry.error?.code ?? 'error result', again };
  },
  async listchanged() {
    if (v2 && client.getProtocolEra?.() === 'modern') await listen({ toolsListChanged: true });
    const before = seen.toolsChanged;
    const extra = `extra${process.pid}`;
    await callText('add-tool', { name: extra });
    await waitFor('notifications/tools/list_changed', () => seen.toolsChanged > before);
    let names = [];
    const end = Date.now() + opts.waitMs;
    while (!names.includes(name(extra)) && Date.now() < end) {
      names = (await client.listTools()).tools.map((t) => t.name);
      if (!names.includes(name(extra))) await new Promise((r) => setTimeout(r, 100));
    }
    expect(names.includes(name(extra)), `${name(extra)} is not listed after list_changed`);
    const t = await callText(extra, {});
    expect(t === `${extra} here`, `${extra} answered '${t}'`);
    return { listed: true, text: t.replace(String(process.pid), 'PID') };
  },
};

// An argument for each property of a JSON schema: its default, else a plain value of its type.
function argsFor(schema) {
  const out = {};
  for (const [k, p] of Object.entries(schema?.properties ?? {})) {
    if (p.default !== undefined) out[k] = p.default;
    else if (p.type === 'number' || p.type === 'integer') out[k] = Object.keys(out).length + 2;
    else if (p.type === 'boolean') out[k] = true;
    else if (p.type === 'array') out[k] = [];
    else if (p.type === 'object') out[k] = {};
    else out[k] = p.enum?.[0] ?? 'conformance';
  }
  return out;
}

async function conformance() {
  const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}');
  const { tools } = await client.listTools();
  process.stdout.write(`${tools.length} tool(s): ${tools.map((t) => t.name).join(' ')}\n`);
  // json-schema-ref-no-deref serves tools/list only: listing is what it checks (that the
  // canary URL of a network $ref is never fetched)
  if (process.env.MCP_CONFORMANCE_SCENARIO === 'json-schema-ref-no-deref') return;
  const given = new Map((ctx.toolCalls ?? []).map((c) => [c.name, c.arguments]));
  for (const tool of tools) {
    let args = given.get(tool.name) ?? argsFor(tool.inputSchema);
    if (tool.name === 'json_schema_echo') {
      args = { schema: tools.find((t) => t.name === 'json_schema_2020_12_tool')?.inputSchema ?? {} };
    }
    const r = await (v2 ? client.callTool({ name: tool.name, arguments: args }) : client.callTool({ name: tool.name, arguments: args }, undefined));
    process.stdout.write(`${tool.name}: ${r.isError ? 'error: ' : ''}${textOf(r)}\n`);
    if (r.isError) failed += 1;
  }
  const caps = client.getServerCapabilities() ?? {};
  if (caps.resources) {
    for (const r of (await client.listResources()).resources) {
      await client.readResource({ uri: r.uri });
      process.stdout.write(`read ${r.uri}\n`);
    }
  }
  if (caps.prompts) {
    for (const p of (await client.listPrompts()).prompts) {
      await client.getPrompt({ name: p.name, arguments: argsFor({ properties: Object.fromEntries((p.arguments ?? []).map((a) => [a.name, {}])) }) });
      process.stdout.write(`got prompt ${p.name}\n`);
    }
  }
}

const timer = setTimeout(() => {
  process.stdout.write('FAIL eras-agent: gave up after 120 s\n');
  process.exit(1);
}, 120000);
try {
  const transport = opts.url
    ? new sdk.StreamableHTTPClientTransport(new URL(opts.url))
    : new sdk.StdioClientTransport({ command: argv[0], args: argv.slice(1), stderr: 'inherit', env: process.env });
  await client.connect(transport, { timeout: 20000 });
  transportRef = transport;
  const onmessage = transport.onmessage;
  transport.onmessage = (m, extra) => {
    if (m?.method === 'notifications/progress') seen.progress.push(m.params);
    if (m?.id !== undefined && rawWaiters.has(m.id)) {
      rawWaiters.get(m.id)(m);
      rawWaiters.delete(m.id);
      return undefined;
    }
    return onmessage?.(m, extra);
  };
  transcript.era = v2 ? client.getProtocolEra?.() ?? 'legacy' : 'legacy';
  process.stdout.write(`connected: ${transcript.era} ${v2 ? client.getNegotiatedProtocolVersion?.() ?? '' : ''}\n`);
  if (opts.conformance) await conformance();
  for (const step of opts.conformance ? [] : opts.steps.split(',').filter(Boolean)) {
    if (!steps[step]) throw new Error(`no step '${step}'`);
    try {
      transcript[step] = await steps[step]();
      process.stdout.write(`ok ${step}\n`);
    } catch (e) {
      failed += 1;
      transcript[step] = { failed: String(e?.message ?? e) };
      process.stdout.write(`FAIL ${step}: ${e?.message ?? e}\n`);
    }
  }
} catch (e) {
  failed += 1;
  process.stdout.write(`FAIL connect: ${e?.message ?? e}\n`);
} finally {
  if (sub) await sub.close().catch(() => {});
  await client.close().catch(() => {});
  clearTimeout(timer);
}
if (opts.out) writeFileSync(opts.out, `${JSON.stringify(transcript, null, 1)}\n`);
process.exit(failed ? 1 : 0);
