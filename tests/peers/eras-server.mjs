#!/usr/bin/env node
// eras-server.mjs: an MCP server on the SDK v2 package @modelcontextprotocol/server 2.4.0, the
// same tools, resources and prompts served to both eras of the protocol: 2026-07-28 (modern: no
// initialize, per-request _meta, server/discover, subscriptions/listen, input_required results)
// and 2025-11-25 (legacy: the initialize handshake, server-to-client requests). The SDK speaks
// revision 2026-07-28 (its SUPPORTED_MODERN_PROTOCOL_VERSIONS) and 2025-11-25 and older
// (SUPPORTED_PROTOCOL_VERSIONS) on the same factory.
//
//   --transport stdio (default): serveStdio() - the opening message chooses the era
//   --transport http: createMcpHandler() at /mcp on 127.0.0.1 - a request with the _meta
//     envelope is modern, one without is served statelessly as 2025 (no session, no GET stream)
//   --era both (default) | modern (a legacy opening is refused with -32022) | legacy (the plain
//     2025 server: StdioServerTransport, no server/discover; stdio only)
//
// Tools: echo {text}, add {a, b}, progress {steps} (a notifications/progress per step, then
// "done N"), slow {ms} (answers after ms unless cancelled; stats counts cancellations), confirm
// {question} (elicitation: legacy elicitation/create, modern input_required with a requestState
// this server signs and checks: a forged or altered one is -32602), sample {prompt} (sampling the
// same two ways), log {level, message} (notifications/message, logger "eras"), add-tool {name}
// (adds a tool NAME answering "NAME here": tools list_changed), touch {text} (changes
// eras://note: resources/updated, for subscribers), stats ({cancelled, calls}), pid.
// Resources: eras://note (text, subscribable), template eras://item/{id} (id completes from
// alpha, alpine, beta). Prompts: greet {name} (name completes from alice, albert, bob).
import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import {
  McpServer, ResourceTemplate, completable, inputRequired, inputResponse, createMcpHandler,
  ProtocolError, ProtocolErrorCode,
} from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';
import { parseArgs, makeLogger, ready, onShutdown, listen } from './lib/common.mjs';

const opts = parseArgs({
  transport: { type: 'string', default: 'stdio', help: 'stdio or http' },
  era: { type: 'string', default: 'both', help: 'both, modern or legacy' },
  port: { type: 'int', default: 0, help: 'HTTP port (0 picks one)' },
  name: { type: 'string', default: 'eras', help: 'serverInfo.name' },
}, process.argv.slice(2), 'An MCP server of both protocol eras on the SDK v2 (see the header).');
const log = makeLogger(`eras-server[${opts.name}]`);

// State shared by every instance the factory makes (one per connection on stdio, one per
// request on HTTP).
const state = { note: 'first note', added: [], cancelled: 0, calls: 0 };
const live = new Set(); // connected instances (stdio), told of changes
let httpHandler = null;
const key = randomBytes(32);
const sign = (s) => `${s}.${createHmac('sha256', key).update(s).digest('base64url')}`;
function verified(st) {
  if (st === undefined) return undefined;
  const i = typeof st === 'string' ? st.lastIndexOf('.') : -1;
  if (i < 0 || sign(st.slice(0, i)) !== st) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'requestState is invalid');
  }
  return st.slice(0, i);
}

function changed(uri) {
  for (const s of live) {
    try {
      s.server.sendResourceUpdated({ uri });
    } catch (err) {
      log(`notify failed: ${err?.message ?? err}`);
    }
  }
  if (httpHandler) {
    httpHandler.notify.resourceUpdated(uri);
  }
}

function addedTool(server, name) {
  try {
    server.registerTool(name, { description: `Added tool ${name}`, inputSchema: {} }, async () => text(`${name} here`));
  } catch (err) {
    log(`cannot add ${name}: ${err?.message ?? err}`);
  }
}
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const confirmSchema = {
  type: 'object', properties: { ok: { type: 'boolean', description: 'Go on?' } }, required: ['ok'],
};

function factory(ctx) {
  const era = ctx?.era ?? 'legacy';
  const server = new McpServer({ name: opts.name, version: '1.0.0' }, {
    capabilities: {
      tools: { listChanged: true }, resources: { subscribe: true, listChanged: true },
      prompts: { listChanged: true }, completions: {}, logging: {},
    },
    instructions: 'A test server of both eras.',
  });
  const tool = (name, description, shape, fn) =>
    server.registerTool(name, { description, inputSchema: shape }, async (args, c) => {
      state.calls += 1;
      return fn(args, c);
    });
  tool('echo', 'Echoes text', { text: z.string() }, ({ text: t }) => text(`echo: ${t}`));
  tool('add', 'Adds two numbers', { a: z.number(), b: z.number() }, ({ a, b }) => text(String(a + b)));
  tool('pid', 'The server process id', {}, () => text(String(process.pid)));
  tool('stats', 'Counters', {}, () => text(JSON.stringify({ cancelled: state.cancelled, calls: state.calls })));
  tool('progress', 'Reports progress', { steps: z.number() }, async ({ steps }, c) => {
    const token = c.mcpReq._meta?.progressToken;
    for (let i = 1; i <= steps; i++) {
      if (token !== undefined) {
        await c.mcpReq.notify({
          method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps },
        });
      }
    }
    return text(`done ${steps}`);
  });
  tool('slow', 'Answers after ms milliseconds unless cancelled', { ms: z.number() }, ({ ms }, c) =>
    new Promise((resolve) => {
      const t = setTimeout(() => resolve(text(`slept ${ms}`)), ms);
      c.mcpReq.signal.addEventListener('abort', () => {
        clearTimeout(t);
        state.cancelled += 1;
        resolve(text('cancelled'));
      });
    }));
  tool('log', 'Logs a message', { level: z.string(), message: z.string() }, async ({ level, message }, c) => {
    await c.mcpReq.log(level, message, 'eras');
    return text(`logged ${level}`);
  });
  tool('add-tool', 'Adds a tool', { name: z.string() }, ({ name }) => {
    if (!state.added.includes(name)) {
      state.added.push(name);
      // the live instances get it too; registering sends their list_changed
      for (const s of live) addedTool(s, name);
      if (httpHandler) httpHandler.notify.toolsChanged();
    }
    return text(`added ${name}`);
  });
  tool('touch', 'Changes eras://note', { text: z.string() }, ({ text: t }) => {
    state.note = t;
    changed('eras://note');
    return text('touched');
  });
  tool('confirm', 'Asks the user (elicitation)', { question: z.string() }, async ({ question }, c) => {
    if (era === 'legacy') {
      const r = await c.mcpReq.elicitInput({ message: question, requestedSchema: confirmSchema });
      return text(`elicitation ${r.action} ${JSON.stringify(r.content ?? {})}`);
    }
    const st = verified(c.mcpReq.requestState());
    const v = inputResponse(c.mcpReq.inputResponses, 'confirm');
    if (v.kind !== 'elicit' || st !== `confirm:${question}`) {
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: question, requestedSchema: confirmSchema }) },
        requestState: sign(`confirm:${question}`),
      });
    }
    return text(`elicitation ${v.action} ${JSON.stringify(v.content ?? {})}`);
  });
  tool('sample', 'Asks the client to sample', { prompt: z.string() }, async ({ prompt }, c) => {
    const params = { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 50 };
    if (era === 'legacy') {
      const r = await c.mcpReq.requestSampling(params);
      return text(`sampled ${r.model}: ${r.content?.text ?? ''}`);
    }
    const v = inputResponse(c.mcpReq.inputResponses, 'sample');
    if (v.kind !== 'sampling') {
      return inputRequired({ inputRequests: { sample: inputRequired.createMessage(params) } });
    }
    return text(`sampled ${v.result.model}: ${v.result.content?.text ?? ''}`);
  });
  for (const n of state.added) addedTool(server, n);

  server.registerResource('note', 'eras://note', { description: 'A note', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: state.note }] }));
  const ids = ['alpha', 'alpine', 'beta'];
  server.registerResource('item', new ResourceTemplate('eras://item/{id}', {
    list: undefined,
    complete: { id: (v) => ids.filter((i) => i.startsWith(v ?? '')) },
  }), { description: 'An item', mimeType: 'text/plain' },
  async (uri, { id }) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `item ${id}` }] }));
  const names = ['alice', 'albert', 'bob'];
  server.registerPrompt('greet', {
    description: 'Greets someone',
    argsSchema: { name: completable(z.string(), (v) => names.filter((n) => n.startsWith(v ?? ''))) },
  }, ({ name }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}!` } }],
  }));
  if (era === 'legacy') {
    // 2025 resource subscriptions (a modern client uses subscriptions/listen, which the
    // SDK's entry serves itself)
    const subs = new Set();
    server.server.setRequestHandler('resources/subscribe', async (req) => {
      subs.add(req.params.uri);
      return {};
    });
    server.server.setRequestHandler('resources/unsubscribe', async (req) => {
      subs.delete(req.params.uri);
      return {};
    });
    const orig = server.server.sendResourceUpdated.bind(server.server);
    server.server.sendResourceUpdated = (p) => (subs.has(p.uri) ? orig(p) : Promise.resolve());
  }
  live.add(server);
  server.server.onclose = () => live.delete(server);
  return server;
}

// A Node request as a web Request, and a web Response written back (streamed: SSE stays open).
async function serveHttp(req, res) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  }
  const ac = new AbortController();
  res.on('close', () => ac.abort());
  const body = chunks.length && req.method !== 'GET' && req.method !== 'HEAD' ? Buffer.concat(chunks) : undefined;
  const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body, signal: ac.signal });
  let response;
  try {
    response = await httpHandler.fetch(request);
  } catch (err) {
    log(`handler failed: ${err?.message ?? err}`);
    res.writeHead(500).end();
    return;
  }
  log(`${req.method} ${req.url} ${req.headers['mcp-method'] ?? ''} -> ${response.status}`);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // the client went away
  }
  res.end();
}

if (opts.transport === 'http') {
  if (opts.era === 'legacy') {
    process.stderr.write('eras-server: --era legacy is stdio only\n');
    process.exit(2);
  }
  httpHandler = createMcpHandler(factory, { legacy: opts.era === 'modern' ? 'reject' : 'stateless' });
  const srv = http.createServer((req, res) => {
    if (new URL(req.url, 'http://x').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    serveHttp(req, res).catch((err) => log(`request failed: ${err?.message ?? err}`));
  });
  const port = await listen(srv, opts.port);
  onShutdown(log, async () => {
    await httpHandler.close();
    srv.closeAllConnections?.();
    srv.close();
  });
  ready(`http://127.0.0.1:${port}/mcp`);
} else if (opts.era === 'legacy') {
  const s = factory({ era: 'legacy' });
  await s.connect(new StdioServerTransport());
  process.stdin.on('end', () => process.exit(0));
} else {
  const handle = serveStdio(factory, { legacy: opts.era === 'modern' ? 'reject' : 'serve' });
  process.stdin.on('end', () => handle.close().finally(() => process.exit(0)));
  process.on('SIGTERM', () => handle.close().finally(() => process.exit(0)));
}
