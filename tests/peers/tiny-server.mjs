#!/usr/bin/env node
// tiny-server.mjs: the smallest MCP server over stdio (newline-delimited JSON-RPC), with nothing
// but node's own modules, so that it starts in a few tens of milliseconds: the lifecycle test
// (tests/integration/bridge_lifecycle.sh) and the startup benchmark (bench/startup) start many.
// Tools: echo {message} -> "<name>: <message>"; pid -> its process id (text and
// structuredContent {pid}); sample -> asks the client for sampling/createMessage and answers
// with what came back ("sampled: <text>" or "error <code>: <message>"); and --tools N-3 more,
// tool4 .. toolN, answering their own name.
// Options: --name NAME (serverInfo.name; default tiny), --tools N (default 3), --ttl MS (the
// tools/list result's "ttlMs": how long a client may keep it), --tag TEXT (ignored: lets a test
// find its processes by their command line).
import { createInterface } from 'node:readline';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
const name = opt('name', 'tiny');
const count = Math.max(3, Number(opt('tools', '3')) || 3);
const ttl = opt('ttl', null);

const schema = (props = {}) => ({ type: 'object', properties: props });
const tools = [
  { name: 'echo', description: `${name}: says the message back`, inputSchema: schema({ message: { type: 'string' } }) },
  { name: 'pid', description: `${name}: its process id`, inputSchema: schema() },
  { name: 'sample', description: `${name}: asks the client for a completion`, inputSchema: schema() },
];
for (let i = 4; i <= count; i++) tools.push({ name: `tool${i}`, description: `${name}: tool ${i}`, inputSchema: schema() });

const send = (msg) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...msg })}\n`);
const text = (t, extra = {}) => ({ content: [{ type: 'text', text: t }], ...extra });

// requests of ours to the client, by id: the tools/call id they answer
const asked = new Map();
let nextAsk = 1;

function call(params, id) {
  const tool = params?.name;
  if (tool === 'sample') {
    const ask = `ask${nextAsk++}`;
    asked.set(ask, id);
    send({ id: ask, method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }], maxTokens: 10 } });
    return null; // answered when the client's answer comes
  }
  if (tool === 'echo') return text(`${name}: ${params.arguments?.message ?? ''}`);
  if (tool === 'pid') return text(String(process.pid), { structuredContent: { pid: process.pid } });
  if (tools.some((t) => t.name === tool)) return text(tool);
  return text(`unknown tool ${tool}`, { isError: true });
}

const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    send({ id: null, error: { code: -32700, message: 'parse error' } });
    return;
  }
  if (m.id !== undefined && !m.method && asked.has(m.id)) {
    const id = asked.get(m.id);
    asked.delete(m.id);
    send({ id, result: m.error ? text(`error ${m.error.code}: ${m.error.message}`) : text(`sampled: ${m.result?.content?.text ?? ''}`) });
    return;
  }
  if (m.id === undefined || !m.method) return; // notifications, other answers
  switch (m.method) {
    case 'initialize':
      send({
        id: m.id,
        result: {
          protocolVersion: m.params?.protocolVersion ?? '2025-06-18',
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name, version: '1.0.0' },
        },
      });
      break;
    case 'ping':
      send({ id: m.id, result: {} });
      break;
    case 'tools/list':
      send({ id: m.id, result: ttl === null ? { tools } : { tools, ttlMs: Number(ttl) } });
      break;
    case 'tools/call': {
      const result = call(m.params, m.id);
      if (result) send({ id: m.id, result });
      break;
    }
    default:
      send({ id: m.id, error: { code: -32601, message: `method not found: ${m.method}` } });
  }
});
rl.on('close', () => process.exit(0));
