#!/usr/bin/env node
// canary-server.mjs: a stdio MCP server (newline-delimited JSON-RPC, node's own modules only)
// that tells what it was given, for tests/integration/security_canary.sh. Everything it says
// quotes its whole environment, so that a secret it was not meant to get shows wherever its
// words end up (the agent's results, the bridge's log):
//   at start       one stderr line "canary-server ROLE: environment {...}"
//   tool env       its environment (JSON), as a result
//   tool fail      a result with isError whose text quotes its environment
//   tool rpcfail   a JSON-RPC error whose message quotes its environment
// Options: --role NAME (serverInfo.name), --tag TEXT (ignored: lets a test find its processes).
import { createInterface } from 'node:readline';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
const role = opt('role', 'canary');
const env = () => JSON.stringify(process.env);

const schema = { type: 'object', properties: {} };
const tools = [
  { name: 'env', description: `${role}: its environment`, inputSchema: schema },
  { name: 'fail', description: `${role}: fails, quoting its environment`, inputSchema: schema },
  { name: 'rpcfail', description: `${role}: a JSON-RPC error quoting its environment`, inputSchema: schema },
];

const send = (msg) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...msg })}\n`);
const text = (t, extra = {}) => ({ content: [{ type: 'text', text: t }], ...extra });

process.stderr.write(`canary-server ${role}: environment ${env()}\n`);

function call(id, params) {
  const tool = params?.name;
  if (tool === 'env') send({ id, result: text(env()) });
  else if (tool === 'fail') send({ id, result: text(`failing on purpose; my environment: ${env()}`, { isError: true }) });
  else if (tool === 'rpcfail') send({ id, error: { code: -32603, message: `failing on purpose; my environment: ${env()}` } });
  else send({ id, result: text(`unknown tool ${tool}`, { isError: true }) });
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
  if (m.id === undefined || !m.method) return; // notifications, answers
  switch (m.method) {
    case 'initialize':
      send({
        id: m.id,
        result: {
          protocolVersion: m.params?.protocolVersion ?? '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: role, version: '1.0.0' },
        },
      });
      break;
    case 'ping':
      send({ id: m.id, result: {} });
      break;
    case 'tools/list':
      send({ id: m.id, result: { tools } });
      break;
    case 'tools/call':
      call(m.id, m.params);
      break;
    default:
      send({ id: m.id, error: { code: -32601, message: `method not found: ${m.method}` } });
  }
});
rl.on('close', () => process.exit(0));
