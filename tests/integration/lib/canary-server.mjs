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
import { opt, send, serveStdio, text } from '../../peers/lib/stdio-server.mjs';

const role = opt('role', 'canary');
const env = () => JSON.stringify(process.env);

const schema = { type: 'object', properties: {} };
const tools = [
  { name: 'env', description: `${role}: its environment`, inputSchema: schema },
  { name: 'fail', description: `${role}: fails, quoting its environment`, inputSchema: schema },
  { name: 'rpcfail', description: `${role}: a JSON-RPC error quoting its environment`, inputSchema: schema },
];

process.stderr.write(`canary-server ${role}: environment ${env()}\n`);

function call(id, params) {
  const tool = params?.name;
  if (tool === 'env') send({ id, result: text(env()) });
  else if (tool === 'fail') send({ id, result: text(`failing on purpose; my environment: ${env()}`, { isError: true }) });
  else if (tool === 'rpcfail') send({ id, error: { code: -32603, message: `failing on purpose; my environment: ${env()}` } });
  else send({ id, result: text(`unknown tool ${tool}`, { isError: true }) });
}

serveStdio({ name: role, capabilities: { tools: {} }, listTools: () => ({ tools }), call });
