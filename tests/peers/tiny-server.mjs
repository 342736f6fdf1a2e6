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
import { opt, send, serveStdio, text } from './lib/stdio-server.mjs';

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

// requests of ours to the client, by id: the tools/call id they answer
const asked = new Map();
let nextAsk = 1;

function call(id, params) {
  const tool = params?.name;
  if (tool === 'sample') {
    const ask = `ask${nextAsk++}`;
    asked.set(ask, id);
    send({ id: ask, method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }], maxTokens: 10 } });
    return; // answered when the client's answer comes
  }
  let result;
  if (tool === 'echo') result = text(`${name}: ${params.arguments?.message ?? ''}`);
  else if (tool === 'pid') result = text(String(process.pid), { structuredContent: { pid: process.pid } });
  else if (tools.some((t) => t.name === tool)) result = text(tool);
  else result = text(`unknown tool ${tool}`, { isError: true });
  send({ id, result });
}

function onAnswer(m) {
  if (!asked.has(m.id)) return false;
  const id = asked.get(m.id);
  asked.delete(m.id);
  send({ id, result: m.error ? text(`error ${m.error.code}: ${m.error.message}`) : text(`sampled: ${m.result?.content?.text ?? ''}`) });
  return true;
}

serveStdio({
  name,
  capabilities: { tools: { listChanged: true } },
  listTools: () => (ttl === null ? { tools } : { tools, ttlMs: Number(ttl) }),
  call,
  onAnswer,
});
