#!/usr/bin/env node
// conformance-server.mjs: an MCP server on the SDK v2 package @modelcontextprotocol/server 2.4.0
// that implements the test tools, resources and prompts the conformance suite (0.2.0-alpha.12)
// names in its server scenario descriptions, for both protocol eras: 2026-07-28 (per-request
// _meta, server/discover, subscriptions/listen, input_required results) and 2025-11-25 (the
// initialize handshake, server-to-client requests, sessions over HTTP).
//
//   (default)      stdio: serveStdio() - the opening message chooses the era
//   --http PORT    Streamable HTTP at http://127.0.0.1:PORT/mcp (0 picks one; "READY <url>" on
//                  stdout): a request with the _meta envelope goes to createMcpHandler(), one
//                  without to a sessionful 2025 transport (Mcp-Session-Id, GET stream, DELETE);
//                  Host and Origin must be loopback names (DNS rebinding)
//
// Tools (scenario → tool): tools-call-* → test_simple_text, test_image_content,
// test_audio_content, test_embedded_resource, test_multiple_content_types, test_error_handling,
// test_tool_with_progress, test_tool_with_logging; tools-call-sampling → test_sampling {prompt};
// tools-call-elicitation → test_elicitation {message}; elicitation-sep1034-defaults,
// elicitation-sep1330-enums → test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums;
// server-stateless → test_missing_capability (needs sampling: -32021 without it),
// test_streaming_elicitation, test_logging_tool, test_trigger_tool_change,
// test_trigger_prompt_change; input-required-result-* → test_input_required_result_{elicitation,
// sampling, list_roots, request_state, multiple_inputs, multi_round, tampered_state,
// capabilities} (each requestState signed with this process's key: an altered one is -32602).
// Resources: test://static-text, test://static-binary, test://watched-resource (subscribable),
// template test://template/{id}/data. Prompts: test_simple_prompt, test_prompt_with_arguments
// {arg1 (completes from paris, park, party), arg2}, test_prompt_with_embedded_resource
// {resourceUri}, test_prompt_with_image, test_input_required_result_prompt.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import {
  McpServer, ResourceTemplate, completable, inputRequired, inputResponse, createMcpHandler,
  isLegacyRequest, WebStandardStreamableHTTPServerTransport, hostHeaderValidationResponse,
  originValidationResponse, localhostAllowedHostnames, localhostAllowedOrigins, ProtocolError,
  ProtocolErrorCode, MissingRequiredClientCapabilityError, isInitializeRequest, CLIENT_CAPABILITIES_META_KEY,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';
import { parseArgs, makeLogger, ready, onShutdown, listen } from './lib/common.mjs';

const opts = parseArgs({
  http: { type: 'int', help: 'serve Streamable HTTP on this port (0 picks one) instead of stdio' },
}, process.argv.slice(2), 'The conformance suite\'s server test tools on the SDK v2 (see the header).');
const log = makeLogger('conformance-server');

// A 1x1 red PNG, and a WAV header with no samples: the smallest valid media of each kind.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = (() => {
  const b = Buffer.alloc(44);
  b.write('RIFF', 0); b.writeUInt32LE(36, 4); b.write('WAVE', 8); b.write('fmt ', 12);
  b.writeUInt32LE(16, 16); b.writeUInt16LE(1, 20); b.writeUInt16LE(1, 22); b.writeUInt32LE(8000, 24);
  b.writeUInt32LE(16000, 28); b.writeUInt16LE(2, 32); b.writeUInt16LE(16, 34); b.write('data', 36);
  return b.toString('base64');
})();

const key = randomBytes(32);
const sign = (s) => `${s}.${createHmac('sha256', key).update(s).digest('base64url')}`;
// The payload of a requestState this process signed; undefined when none came back; -32602 for
// one that was altered (input-required-result-tampered-state).
function verified(st) {
  if (st === undefined || st === null) return undefined;
  const i = typeof st === 'string' ? st.lastIndexOf('.') : -1;
  if (i < 0 || sign(st.slice(0, i)) !== st) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'requestState failed its integrity check');
  }
  return st.slice(0, i);
}

const text = (t) => ({ content: [{ type: 'text', text: t }] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const live = new Set(); // instances pinned to a connection (stdio, 2025 sessions)
let httpHandler = null;
let added = 0;

const nameSchema = (message, prop) => ({
  message, requestedSchema: { type: 'object', properties: { [prop]: { type: 'string' } }, required: [prop] },
});
const sep1034Schema = {
  type: 'object',
  properties: {
    name: { type: 'string', default: 'John Doe' },
    age: { type: 'integer', default: 30 },
    score: { type: 'number', default: 95.5 },
    status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
    verified: { type: 'boolean', default: true },
  },
};
const sep1330Schema = {
  type: 'object',
  properties: {
    untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    titledSingle: {
      type: 'string',
      oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' },
        { const: 'value3', title: 'Third Option' }],
    },
    legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
    untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
    titledMulti: {
      type: 'array',
      items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' },
        { const: 'value3', title: 'Third Choice' }] },
    },
  },
};

// The client's declared capabilities: the request's envelope (2026-07-28: each request its own,
// also on stdio where one instance serves them all), else the handshake's.
function clientCaps(server, c) {
  return c.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY] ?? server.server.getClientCapabilities() ?? {};
}

// Legacy tools ask the client directly; modern ones answer input_required with these keys.
async function elicitLegacy(c, params) {
  const r = await c.mcpReq.elicitInput(params);
  return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
}

function addTrigger(server) {
  server.registerTool(`test_added_tool_${++added}`, { description: 'A tool added at run time', inputSchema: {} },
    async () => text('added'));
}

// McpServer turns whatever a tool throws into an isError result; the scenarios want some as
// JSON-RPC errors (-32021 for a missing capability, -32602 for a tampered requestState). A tool
// throws those through rpcError(), and the server's isError maker rethrows them by message.
const rpcErrors = new Map();
function rpcError(err) {
  rpcErrors.set(err.message, err);
  throw err;
}
function rethrowRpcErrors(server) {
  const make = server.createToolError.bind(server);
  server.createToolError = (message) => {
    const err = rpcErrors.get(message);
    if (!err) return make(message);
    rpcErrors.delete(message);
    throw err;
  };
}

function registerTools(server, era) {
  const tool = (name, description, shape, fn) =>
    server.registerTool(name, { description, inputSchema: shape }, async (args, c) => {
      try {
        return await fn(args, c);
      } catch (err) {
        if (err instanceof ProtocolError) rpcError(err);
        throw err;
      }
    });
  tool('test_simple_text', 'Returns simple text', {}, () => text('This is a simple text response for testing.'));
  tool('test_image_content', 'Returns an image', {}, () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }));
  tool('test_audio_content', 'Returns audio', {}, () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }));
  tool('test_embedded_resource', 'Returns an embedded resource', {}, () => ({
    content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
  }));
  tool('test_multiple_content_types', 'Returns text, an image and a resource', {}, () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
    ],
  }));
  tool('test_error_handling', 'Always fails', {}, () => ({
    isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
  }));
  tool('test_tool_with_logging', 'Logs three messages', {}, async (_a, c) => {
    await c.mcpReq.log('info', 'Tool execution started');
    await sleep(50);
    await c.mcpReq.log('info', 'Tool processing data');
    await sleep(50);
    await c.mcpReq.log('info', 'Tool execution completed');
    return text('Tool with logging executed successfully');
  });
  tool('test_logging_tool', 'Logs one message', {}, async (_a, c) => {
    await c.mcpReq.log('info', 'test_logging_tool ran');
    return text('logged');
  });
  tool('test_tool_with_progress', 'Reports progress', {}, async (_a, c) => {
    const token = c.mcpReq._meta?.progressToken;
    for (const p of [0, 50, 100]) {
      if (token !== undefined) {
        await c.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: p, total: 100 } });
      }
      if (p < 100) await sleep(50);
    }
    return text('Progress tool completed');
  });
  tool('test_sampling', 'Asks the client to sample', { prompt: z.string() }, async ({ prompt }, c) => {
    const params = { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 };
    if (era === 'legacy') {
      if (!clientCaps(server, c).sampling) return { isError: true, content: [{ type: 'text', text: 'the client does not support sampling' }] };
      const r = await c.mcpReq.requestSampling(params);
      return text(`LLM response: ${r.content?.text ?? ''}`);
    }
    const v = inputResponse(c.mcpReq.inputResponses, 'sample');
    if (v.kind !== 'sampling') return inputRequired({ inputRequests: { sample: inputRequired.createMessage(params) } });
    return text(`LLM response: ${v.result.content?.text ?? ''}`);
  });
  tool('test_elicitation', 'Asks the user', { message: z.string() }, async ({ message }, c) => {
    const params = {
      message,
      requestedSchema: {
        type: 'object',
        properties: { username: { type: 'string', description: "User's response" }, email: { type: 'string', description: "User's email address" } },
        required: ['username', 'email'],
      },
    };
    if (era === 'legacy') {
      if (!clientCaps(server, c).elicitation) return { isError: true, content: [{ type: 'text', text: 'the client does not support elicitation' }] };
      const r = await c.mcpReq.elicitInput(params);
      return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
    const v = inputResponse(c.mcpReq.inputResponses, 'ask');
    if (v.kind !== 'elicit') return inputRequired({ inputRequests: { ask: inputRequired.elicit(params) } });
    return text(`User response: action=${v.action}, content=${JSON.stringify(v.content ?? {})}`);
  });
  for (const [name, schema] of [['test_elicitation_sep1034_defaults', sep1034Schema], ['test_elicitation_sep1330_enums', sep1330Schema]]) {
    tool(name, `Elicitation with the schema of ${name.slice(16)}`, {}, async (_a, c) => {
      const params = { message: `Please review ${name}`, requestedSchema: schema };
      if (era === 'legacy') return elicitLegacy(c, params);
      const v = inputResponse(c.mcpReq.inputResponses, 'form');
      if (v.kind !== 'elicit') return inputRequired({ inputRequests: { form: inputRequired.elicit(params) } });
      return text(`Elicitation completed: action=${v.action}, content=${JSON.stringify(v.content ?? {})}`);
    });
  }
  tool('test_missing_capability', 'Needs the sampling capability', {}, (_a, c) => {
    if (!clientCaps(server, c).sampling) {
      rpcError(new MissingRequiredClientCapabilityError({ requiredCapabilities: { sampling: {} } }));
    }
    return text('the client can sample');
  });
  tool('test_streaming_elicitation', 'Asks the user while the response streams', {}, async (_a, c) => {
    const params = nameSchema('What is your name?', 'name');
    if (era === 'legacy') return elicitLegacy(c, params);
    const v = inputResponse(c.mcpReq.inputResponses, 'user_name');
    if (v.kind !== 'elicit') return inputRequired({ inputRequests: { user_name: inputRequired.elicit(params) } });
    return text(`Hello, ${v.content?.name ?? ''}!`);
  });
  tool('test_trigger_tool_change', 'Adds a tool (tools list_changed)', {}, () => {
    for (const s of live) addTrigger(s);
    if (httpHandler) httpHandler.notify.toolsChanged();
    return text('tools changed');
  });
  tool('test_trigger_prompt_change', 'Adds a prompt (prompts list_changed)', {}, () => {
    const n = ++added;
    for (const s of live) {
      s.registerPrompt(`test_added_prompt_${n}`, { description: 'A prompt added at run time' },
        () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'added' } }] }));
    }
    if (httpHandler) httpHandler.notify.promptsChanged();
    return text('prompts changed');
  });
  registerInputRequiredTools(server, tool);
}

// input-required-result-*: 2026-07-28 multi-round-trip tools (a legacy client never calls them).
function registerInputRequiredTools(server, tool) {
  const elicitName = () => inputRequired.elicit(nameSchema('What is your name?', 'name'));
  const named = (r, k, prop) => {
    const v = inputResponse(r, k);
    return v.kind === 'elicit' && v.action === 'accept' && typeof v.content?.[prop] === 'string' ? v.content[prop] : undefined;
  };
  tool('test_input_required_result_elicitation', 'Asks a name (input_required)', {}, (_a, c) => {
    const name = named(c.mcpReq.inputResponses, 'user_name', 'name');
    if (name === undefined) return inputRequired({ inputRequests: { user_name: elicitName() } });
    return text(`Hello, ${name}!`);
  });
  const capital = {
    messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }], maxTokens: 100,
  };
  tool('test_input_required_result_sampling', 'Asks the client to sample (input_required)', {}, (_a, c) => {
    const v = inputResponse(c.mcpReq.inputResponses, 'capital_question');
    if (v.kind !== 'sampling') return inputRequired({ inputRequests: { capital_question: inputRequired.createMessage(capital) } });
    return text(`Sampling response: ${v.result.content?.text ?? ''}`);
  });
  tool('test_input_required_result_list_roots', 'Asks the client for its roots (input_required)', {}, (_a, c) => {
    const v = inputResponse(c.mcpReq.inputResponses, 'client_roots');
    if (v.kind !== 'roots') return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
    return text(`Roots: ${v.roots.map((r) => r.uri).join(', ')}`);
  });
  tool('test_input_required_result_request_state', 'Round-trips a requestState', {}, (_a, c) => {
    const st = verified(c.mcpReq.requestState());
    const v = inputResponse(c.mcpReq.inputResponses, 'confirm');
    if (st !== 'request_state:1' || v.kind !== 'elicit') {
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: 'Please confirm',
            requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
          }),
        },
        requestState: sign('request_state:1'),
      });
    }
    return text(`state-ok: confirmed ${JSON.stringify(v.content ?? {})}`);
  });
  tool('test_input_required_result_multiple_inputs', 'Asks for three inputs at once', {}, (_a, c) => {
    const st = verified(c.mcpReq.requestState());
    const r = c.mcpReq.inputResponses;
    const name = named(r, 'user_name', 'name');
    const greeting = inputResponse(r, 'greeting');
    const roots = inputResponse(r, 'client_roots');
    if (st !== 'multiple:1' || name === undefined || greeting.kind !== 'sampling' || roots.kind !== 'roots') {
      return inputRequired({
        inputRequests: {
          user_name: elicitName(),
          greeting: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50,
          }),
          client_roots: inputRequired.listRoots(),
        },
        requestState: sign('multiple:1'),
      });
    }
    return text(`${greeting.result.content?.text ?? ''} ${name} (${roots.roots.length} roots)`);
  });
  tool('test_input_required_result_multi_round', 'Asks in two rounds', {}, (_a, c) => {
    const st = verified(c.mcpReq.requestState());
    const r = c.mcpReq.inputResponses;
    if (st?.startsWith('multi_round:2:')) {
      const color = named(r, 'step2', 'color');
      if (color !== undefined) return text(`${st.slice(14)} likes ${color}`);
    }
    const name = st === 'multi_round:1' ? named(r, 'step1', 'name') : undefined;
    if (name !== undefined || st?.startsWith('multi_round:2:')) {
      const who = name ?? st.slice(14);
      return inputRequired({
        inputRequests: { step2: inputRequired.elicit(nameSchema('Step 2: What is your favorite color?', 'color')) },
        requestState: sign(`multi_round:2:${who}`),
      });
    }
    return inputRequired({
      inputRequests: { step1: inputRequired.elicit(nameSchema('Step 1: What is your name?', 'name')) },
      requestState: sign('multi_round:1'),
    });
  });
  tool('test_input_required_result_tampered_state', 'Rejects an altered requestState', {}, (_a, c) => {
    const st = verified(c.mcpReq.requestState());
    const name = named(c.mcpReq.inputResponses, 'user_name', 'name');
    if (st !== 'tampered:1' || name === undefined) {
      return inputRequired({ inputRequests: { user_name: elicitName() }, requestState: sign('tampered:1') });
    }
    return text(`Hello, ${name}!`);
  });
  tool('test_input_required_result_capabilities', 'Asks only for what the client declared', {}, (_a, c) => {
    const caps = clientCaps(server, c);
    const r = c.mcpReq.inputResponses;
    const want = {};
    if (caps.elicitation && inputResponse(r, 'user_name').kind !== 'elicit') want.user_name = elicitName();
    if (caps.sampling && inputResponse(r, 'greeting').kind !== 'sampling') {
      want.greeting = inputRequired.createMessage({
        messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50,
      });
    }
    if (caps.roots && inputResponse(r, 'client_roots').kind !== 'roots') want.client_roots = inputRequired.listRoots();
    if (Object.keys(want).length) return inputRequired({ inputRequests: want });
    return text('every declared capability answered');
  });
}

function registerResourcesAndPrompts(server, era) {
  server.registerResource('static-text', 'test://static-text', { description: 'A static text resource', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }] }));
  server.registerResource('static-binary', 'test://static-binary', { description: 'A static binary resource', mimeType: 'image/png' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }] }));
  server.registerResource('watched-resource', 'test://watched-resource', { description: 'A resource to subscribe to', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content.' }] }));
  server.registerResource('template', new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { description: 'A resource template with an id', mimeType: 'application/json' },
    async (uri, { id }) => ({
      contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }],
    }));

  const msg = (content) => ({ role: 'user', content });
  server.registerPrompt('test_simple_prompt', { description: 'A prompt without arguments' },
    () => ({ messages: [msg({ type: 'text', text: 'This is a simple prompt for testing.' })] }));
  const cities = ['paris', 'park', 'party'];
  server.registerPrompt('test_prompt_with_arguments', {
    description: 'A prompt with two arguments',
    argsSchema: {
      arg1: completable(z.string().describe('First test argument'), (v) => cities.filter((c) => c.startsWith(v ?? ''))),
      arg2: z.string().describe('Second test argument'),
    },
  }, ({ arg1, arg2 }) => ({ messages: [msg({ type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` })] }));
  server.registerPrompt('test_prompt_with_embedded_resource', {
    description: 'A prompt that embeds a resource',
    argsSchema: { resourceUri: z.string().describe('URI of the resource to embed') },
  }, ({ resourceUri }) => ({
    messages: [
      msg({ type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } }),
      msg({ type: 'text', text: 'Please process the embedded resource above.' }),
    ],
  }));
  server.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image' }, () => ({
    messages: [msg({ type: 'image', data: PNG, mimeType: 'image/png' }), msg({ type: 'text', text: 'Please analyze the image above.' })],
  }));
  if (era !== 'legacy') {
    server.registerPrompt('test_input_required_result_prompt', { description: 'A prompt that asks for context (input_required)' },
      (c) => {
        const v = inputResponse(c.mcpReq.inputResponses, 'user_context');
        if (v.kind !== 'elicit') {
          return inputRequired({
            inputRequests: { user_context: inputRequired.elicit(nameSchema('What context should the prompt use?', 'context')) },
          });
        }
        return { messages: [msg({ type: 'text', text: `Use this context: ${v.content?.context ?? ''}` })] };
      });
  }
  if (era === 'legacy') {
    const subs = new Set();
    server.server.setRequestHandler('resources/subscribe', async (req) => {
      subs.add(req.params.uri);
      return {};
    });
    server.server.setRequestHandler('resources/unsubscribe', async (req) => {
      subs.delete(req.params.uri);
      return {};
    });
  }
}

function factory(ctx) {
  const era = ctx?.era ?? 'legacy';
  const server = new McpServer({ name: 'conformance-server', version: '1.0.0' }, {
    capabilities: {
      tools: { listChanged: true }, resources: { subscribe: true, listChanged: true },
      prompts: { listChanged: true }, completions: {}, logging: {},
    },
  });
  rethrowRpcErrors(server);
  registerTools(server, era);
  registerResourcesAndPrompts(server, era);
  live.add(server);
  server.server.onclose = () => live.delete(server);
  return server;
}

// 2025-11-25 over HTTP: one pinned instance and transport per Mcp-Session-Id.
const sessions = new Map();
async function legacyFetch(request) {
  const sid = request.headers.get('mcp-session-id');
  if (sid) {
    const t = sessions.get(sid);
    if (!t) return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }), { status: 404 });
    return t.handleRequest(request);
  }
  const body = request.method === 'POST' ? await request.clone().json().catch(() => undefined) : undefined;
  if (!body || !isInitializeRequest(body)) {
    return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: no session' }, id: null }), { status: 400 });
  }
  const t = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, t),
  });
  t.onclose = () => {
    if (t.sessionId) sessions.delete(t.sessionId);
  };
  await factory({ era: 'legacy' }).connect(t);
  return t.handleRequest(request, { parsedBody: body });
}

async function fetchMcp(request) {
  const rejected = hostHeaderValidationResponse(request, localhostAllowedHostnames())
    ?? originValidationResponse(request, localhostAllowedOrigins());
  if (rejected) return rejected;
  if (request.method !== 'POST' || await isLegacyRequest(request)) return legacyFetch(request);
  return httpHandler.fetch(request);
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
  const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, { method: req.method, headers, body, signal: ac.signal });
  const response = await fetchMcp(request);
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

if (opts.http !== undefined) {
  httpHandler = createMcpHandler(factory, { legacy: 'reject' });
  const srv = http.createServer((req, res) => {
    if (new URL(req.url, 'http://x').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    serveHttp(req, res).catch((err) => {
      log(`request failed: ${err?.message ?? err}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  const port = await listen(srv, opts.http);
  onShutdown(log, async () => {
    await httpHandler.close();
    for (const t of sessions.values()) await t.close().catch(() => {});
    srv.closeAllConnections?.();
    srv.close();
  });
  ready(`http://127.0.0.1:${port}/mcp`);
} else {
  const handle = serveStdio(factory, { legacy: 'serve' });
  process.stdin.on('end', () => handle.close().finally(() => process.exit(0)));
  process.on('SIGTERM', () => handle.close().finally(() => process.exit(0)));
}
