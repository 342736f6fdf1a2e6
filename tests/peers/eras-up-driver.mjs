// eras-up-driver.mjs MCP_BRIDGE_BIN SERVER_URL: a plain JSON-RPC agent (no SDK, no version
// checks) on `mcp-bridge connect SERVER_URL` over stdio, for the conformance scenarios about the
// bridge's upstream wire: initialize, then tools (the scenario context's toolCalls when
// MCP_CONFORMANCE_CONTEXT has them, else each listed tool with plain arguments), the first
// resource read, the first prompt got. Prints each answer; exits 1 when one is an error.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const [bridgeBin, server] = process.argv.slice(2);
const child = spawn(bridgeBin, ['connect', server], { stdio: ['pipe', 'pipe', 'inherit'] });
const waiting = new Map();
let nextId = 1;
createInterface({ input: child.stdout }).on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id !== undefined && m.method) { // a server request: answer something plain
    const result = m.method === 'roots/list' ? { roots: [] }
      : m.method === 'elicitation/create' ? { action: 'accept', content: {} }
        : m.method === 'sampling/createMessage'
          ? { model: 'm', role: 'assistant', content: { type: 'text', text: 'sampled' } } : {};
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }) + '\n');
    return;
  }
  const w = waiting.get(m.id);
  if (w) { waiting.delete(m.id); w(m); }
});
setTimeout(() => { process.stderr.write('eras-up-driver: gave up after 40 s\n'); process.exit(1); }, 40000).unref();

function request(method, params = {}) {
  const id = nextId++;
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  return new Promise((resolve) => waiting.set(id, resolve));
}
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
let failed = 0;
function show(what, m) {
  process.stdout.write(`${what}: ${JSON.stringify(m.error ?? m.result).slice(0, 300)}\n`);
  if (m.error) failed += 1;
}
const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}');
const init = await request('initialize', {
  protocolVersion: '2025-11-25', clientInfo: { name: 'eras-up-driver', version: '1.0.0' },
  capabilities: { sampling: {}, elicitation: {}, roots: {} },
});
show('initialize', init);
child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
const caps = init.result?.capabilities ?? {};
if (caps.tools) {
  const tl = await request('tools/list');
  show('tools/list', tl);
  const tools = tl.result?.tools ?? [];
  let calls = ctx.toolCalls ?? tools.map((t) => ({ name: t.name, arguments: argsFor(t.inputSchema) }));
  if (tools.some((t) => t.name === 'json_schema_echo')) { // the schema, back as it came
    const focal = tools.find((t) => t.name !== 'json_schema_echo');
    calls = [{ name: 'json_schema_echo', arguments: { schema: focal?.inputSchema ?? {} } }];
  }
  if (process.env.MCP_CONFORMANCE_SCENARIO === 'json-schema-ref-no-deref') calls = []; // lists only
  for (const c of calls) show(`tools/call ${c.name}`, await request('tools/call', c));
}
if (caps.resources) {
  const rl = await request('resources/list');
  show('resources/list', rl);
  const r = rl.result?.resources?.[0];
  if (r) show(`resources/read ${r.uri}`, await request('resources/read', { uri: r.uri }));
}
if (caps.prompts) {
  const pl = await request('prompts/list');
  show('prompts/list', pl);
  const p = pl.result?.prompts?.[0];
  if (p) show(`prompts/get ${p.name}`, await request('prompts/get', { name: p.name, arguments: argsFor({ properties: Object.fromEntries((p.arguments ?? []).map((a) => [a.name, {}])) }) }));
}
child.stdin.end();
process.exit(failed ? 1 : 0);
