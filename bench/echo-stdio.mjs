#!/usr/bin/env node
// A minimal MCP server for the benchmark: newline-delimited JSON-RPC on stdin/stdout, no
// dependencies, one tool 'echo' {message} answered at once with the message as text. Kept tiny so
// that the server's own cost is small and the same in every configuration measured; messages of
// 8 MiB and more cost in proportion to their size.
import process from 'node:process';

const TOOLS = [{
  name: 'echo',
  description: 'Echoes the message',
  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
}];

function send(msg) { process.stdout.write(JSON.stringify(msg) + '\n'); }

function handle(msg) {
  if (msg.id === undefined || msg.method === undefined) return; // notifications, responses
  let result;
  switch (msg.method) {
    case 'initialize':
      result = {
        protocolVersion: msg.params?.protocolVersion ?? '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'bench-echo', version: '1.0.0' },
      };
      break;
    case 'ping': result = {}; break;
    case 'tools/list': result = { tools: TOOLS }; break;
    case 'tools/call':
      if (msg.params?.name !== 'echo') {
        send({ jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'unknown tool' } });
        return;
      }
      result = { content: [{ type: 'text', text: String(msg.params.arguments?.message ?? '') }] };
      break;
    default:
      send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'method not found' } });
      return;
  }
  send({ jsonrpc: '2.0', id: msg.id, result });
}

// Only each new chunk is searched for the end of a line: an 8 MiB message comes in many chunks,
// and searching what was read before again each time would make the cost grow with its square.
let chunks = [];
process.stdin.on('data', (chunk) => {
  let start = 0; let nl;
  while ((nl = chunk.indexOf(10, start)) >= 0) {
    chunks.push(chunk.subarray(start, nl));
    const line = Buffer.concat(chunks).toString('utf8');
    chunks = [];
    start = nl + 1;
    if (line.trim()) handle(JSON.parse(line));
  }
  if (start < chunk.length) chunks.push(chunk.subarray(start));
});
process.stdin.on('end', () => process.exit(0));
