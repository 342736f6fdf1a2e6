#!/usr/bin/env node
// bridge-conformance-client.mjs MCP_BRIDGE_BIN [BRIDGE_OPTION...] SERVER: the conformance suite's
// client as an agent would be one - the SDK's Client over stdio on
// `mcp-bridge [BRIDGE_OPTION...] connect SERVER` (single mode; SERVER is a URL or the name of an
// entry of the --config file, e.g. `MCP_BRIDGE_BIN --config mcp.json -v conformance`). It lists
// the tools and calls each with arguments made from its input schema; it answers elicitation by
// accepting with nothing filled in and lets the SDK apply the schema's defaults
// (elicitation.form.applyDefaults), and sampling with a canned message. Exit status 0 when every
// call got a result that is not an error.
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [bridgeBin, ...rest] = process.argv.slice(2);
const server = rest.pop();
if (!bridgeBin || !server) {
  process.stderr.write('usage: node bridge-conformance-client.mjs MCP_BRIDGE_BIN [BRIDGE_OPTION...] SERVER\n');
  process.exit(2);
}
setTimeout(() => {
  process.stderr.write('bridge-conformance-client: gave up after 25 s\n');
  process.exit(1);
}, 25000).unref();

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

const client = new Client({ name: 'bridge-conformance-client', version: '1.0.0' }, {
  capabilities: { sampling: {}, elicitation: { form: { applyDefaults: true } }, roots: {} },
});
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: {} }));
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  model: 'conformance', role: 'assistant', content: { type: 'text', text: 'sampled' },
}));
client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [] }));

const transport = new StdioClientTransport({
  command: bridgeBin, args: [...rest, 'connect', server], stderr: 'inherit', env: process.env,
});
let failed = 0;
try {
  await client.connect(transport, { timeout: 20000 });
  const { tools } = await client.listTools(undefined, { timeout: 15000 });
  process.stdout.write(`${tools.length} tool(s): ${tools.map((t) => t.name).join(' ')}\n`);
  for (const tool of tools) {
    const args = argsFor(tool.inputSchema);
    const r = await client.callTool({ name: tool.name, arguments: args }, undefined, { timeout: 15000 });
    const text = (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join(' ');
    process.stdout.write(`${tool.name} ${JSON.stringify(args)}: ${r.isError ? 'error: ' : ''}${text}\n`);
    if (r.isError) failed += 1;
  }
} catch (err) {
  process.stderr.write(`bridge-conformance-client: ${err?.message ?? err}\n`);
  failed += 1;
} finally {
  await client.close().catch(() => {});
}
process.exit(failed ? 1 : 0);
