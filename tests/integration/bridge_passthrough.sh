#!/usr/bin/env bash
# The pass-through (docs/development.md, "The pass-through"): a tools/call and its result cross
# the bridge without a tree, so their bytes are the sender's. server-everything's echo behind
# `mcp-bridge connect` and `serve`, the agent a script writing raw lines: the agent's params
# reach the server byte for byte (the agent's spacing, key order and escapes kept; in serve mode
# only the name, its prefix dropped), and the server's result line reaches the agent byte for
# byte but for the id, at 100 B, 1 MiB and (connect) 8 MiB. The server's stdin and stdout are
# recorded through tee. The same through `connect URL` to the SDK's Streamable HTTP server (an
# echo tool as server-everything's, its request and answer bodies recorded as they cross the
# socket), answering with JSON and with event streams, at 100 B, 1 MiB and 8 MiB: the result
# goes to the agent from the buffer the answer was read into. No process of this test may be
# left.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

everything="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$everything" ] || fail "server-everything is missing: run scripts/install-deps"

cat >"$T_ROOT/server.sh" <<EOF2
#!/bin/sh
# the server, its stdin and stdout recorded ($T_ROOT)
tee -a "$T_ROOT/in.log" | node "$everything" stdio | tee -a "$T_ROOT/out.log"
EOF2
chmod +x "$T_ROOT/server.sh"
printf '{"mcpServers": {"everything": {"command": "%s"}}}\n' "$T_ROOT/server.sh" >"$T_ROOT/mcp.json"

cat >"$T_ROOT/agent.mjs" <<'EOF2'
// agent.mjs BRIDGE CONFIG MODE TAG SIZES...: raw lines to `mcp-bridge MODE`, checks printed
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [bridge, config, mode, tag, ...sizes] = process.argv.slice(2);
const root = tag;
// http-*: config is the server's URL
const args = mode.startsWith('http') ? ['-q', 'connect', config]
  : ['-q', '--config', config, ...(mode === 'connect' ? ['connect', 'everything'] : ['serve'])];
const child = spawn(bridge, args, { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
const waiting = new Map();
lines.on('line', (line) => {
  const id = JSON.parse(line).id;
  const w = waiting.get(JSON.stringify(id));
  if (w) { waiting.delete(JSON.stringify(id)); w(line); }
});
const deadline = (p, what) => Promise.race([p, new Promise((_, no) =>
  setTimeout(() => no(new Error(`no answer to ${what} within 30 s`)), 30000).unref())]);
const ask = (id, text) => {
  const p = new Promise((ok) => waiting.set(JSON.stringify(id), ok));
  child.stdin.write(text + '\n');
  return deadline(p, text.slice(0, 80));
};
// tee may pass a line on before it writes it to the record: a bounded wait for it
const recorded = async (file, match) => {
  for (let i = 0; i < 100; i++) {
    const line = readFileSync(`${root}/${file}`, 'utf8').split('\n').filter(match).pop();
    if (line !== undefined) return line;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  return '';
};
let failed = 0;
const check = (ok, what) => { console.log(`${ok ? 'ok' : 'FAIL'} ${mode}: ${what}`); if (!ok) failed++; };

await ask(0, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {
  protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'passthrough', version: '1' } } }));
child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
const list = JSON.parse(await ask('l', '{"jsonrpc":"2.0","id":"l","method":"tools/list"}'));
const name = list.result.tools.map((t) => t.name).find((n) => n === 'echo' || n.endsWith('_echo'));
check(Boolean(name), `the echo tool is listed (${name})`);

let n = 0;
for (const size of sizes) {
  n++;
  const unit = 'caf\\u00e9 \\ud83d\\ude00 a\\/b \\"q\\" \\n\\t x ';
  const message = unit.repeat(Math.ceil(Number(size) / unit.length));
  // the agent's own way of writing JSON: spaces, params first, escapes json-c would not keep
  const params = `{ "arguments" : {"message": "${message}"}, "name":"${name}" }`;
  const id = `k-${n}`;
  const answer = await ask(id, `{"params": ${params}, "id": "${id}", "method":"tools/call", "jsonrpc": "2.0"}`);
  // what the server got: the bridge's envelope around the agent's params
  const sent = await recorded('in.log', (l) =>
    l.includes('"tools/call"') && l.includes(`"message": "${message.slice(0, 40)}`) && l.length > message.length);
  const m = /^\{"jsonrpc":"2\.0","id":(\d+),"method":"tools\/call","params":/.exec(sent);
  const want = params.replace(`"name":"${name}"`, '"name":"echo"');
  check(m && sent === m[0] + want + '}', `${size} B: the params reach the server byte for byte`);
  // what the server answered, the agent's id in place of the bridge's
  const upId = m ? m[1] : 'none';
  const said = await recorded('out.log', (l) => l.includes('"result"') &&
    (l.includes(`"id":${upId}}`) || l.includes(`"id":${upId},`)));
  const back = said.replace(`"id":${upId}`, `"id":"${id}"`);
  check(said !== '' && answer === back, `${size} B: the result reaches the agent byte for byte but for the id`);
  if (answer !== back) console.error(`answer: ${answer.slice(0, 300)}\nback:   ${back.slice(0, 300)}`);
  check(JSON.parse(answer).result?.content?.[0]?.text === `Echo: ${JSON.parse(`"${message}"`)}`,
    `${size} B: the echo is the message`);
}
child.stdin.end();
await new Promise((ok) => child.on('exit', ok));
process.exit(failed ? 1 : 0);
EOF2

cat >"$T_ROOT/http-server.mjs" <<'EOF2'
// The SDK's McpServer behind StreamableHTTPServerTransport on 127.0.0.1 (a free port), with an
// echo tool answering as server-everything's; /json answers with application/json, /sse with
// event streams. Each request body is appended to $REC/in.log as a line, each answer's message
// (the JSON body, or each event's data) to $REC/out.log, as they cross the socket. Prints
// "READY URL" (of /json) once it listens.
import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const rec = process.env.REC;
const req = createRequire(path.join(process.env.PEERS, 'package.json'));
const imp = (spec) => import(pathToFileURL(req.resolve(spec)).href);
const { McpServer } = await imp('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = await imp('@modelcontextprotocol/sdk/server/streamableHttp.js');
const z = await imp('zod/v4');

const sessions = new Map();
async function newSession(json) {
  const server = new McpServer({ name: 'passthrough-http', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echoes the message', inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: 'text', text: `Echo: ${message}` }] }));
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: json,
    onsessioninitialized: (id) => sessions.set(id, transport),
  });
  await server.connect(transport);
  return transport;
}
// what the transport writes, recorded once the answer is complete
function record(response) {
  const chunks = [];
  const write = response.write.bind(response), end = response.end.bind(response);
  response.write = (c, ...rest) => { if (c) chunks.push(Buffer.from(c)); return write(c, ...rest); };
  response.end = (c, ...rest) => {
    if (c && typeof c !== 'function') chunks.push(Buffer.from(c));
    const body = Buffer.concat(chunks).toString('utf8');
    // the transport sets its headers with writeHead: an event stream is told by its lines
    const sse = /^(event|data|id):/.test(body);
    const messages = sse ? body.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6))
      : body ? [body] : [];
    for (const m of messages) appendFileSync(`${rec}/out.log`, m + '\n');
    return end(c, ...rest);
  };
}
const http = createServer(async (request, response) => {
  try {
    const json = request.url.startsWith('/json');
    const sid = request.headers['mcp-session-id'];
    let transport = sid ? sessions.get(sid) : undefined;
    if (request.method !== 'POST') {
      if (!transport) { response.writeHead(sid ? 404 : 400).end(); return; }
      await transport.handleRequest(request, response);
      return;
    }
    const chunks = [];
    for await (const c of request) chunks.push(c);
    const text = Buffer.concat(chunks).toString('utf8');
    appendFileSync(`${rec}/in.log`, text + '\n');
    if (!transport) {
      if (sid) { response.writeHead(404).end(); return; }
      transport = await newSession(json);
    }
    record(response);
    await transport.handleRequest(request, response, JSON.parse(text));
  } catch (e) {
    process.stderr.write(`${e.stack}\n`);
    if (!response.headersSent) response.writeHead(500).end();
  }
});
http.listen(0, '127.0.0.1', () => process.stdout.write(`READY http://127.0.0.1:${http.address().port}/json\n`));
process.on('SIGTERM', () => process.exit(0));
EOF2

# the HTTP server, started from T_ROOT by a command line without it: the drivers' check for
# processes left behind looks for T_ROOT, and the server outlives each driver
(cd "$T_ROOT" && REC="$T_ROOT" PEERS="$PEERS_DIR" exec node http-server.mjs >http.out 2>http.log </dev/null) &
T_PEER_PIDS+=("$!")
http_ready() { grep -q '^READY ' "$T_ROOT/http.out" 2>/dev/null; }
wait_until 30 "the HTTP server" http_ready
json_url=$(sed -n 's/^READY //p' "$T_ROOT/http.out")

for mode in connect serve http-json http-sse; do
    sizes="100 1048576"
    [ "$mode" = serve ] || sizes="$sizes 8388608"
    target="$T_ROOT/mcp.json"
    [ "$mode" = http-json ] && target=$json_url
    [ "$mode" = http-sse ] && target=${json_url%/json}/sse
    : >"$T_ROOT/in.log"
    : >"$T_ROOT/out.log"
    # shellcheck disable=SC2086
    driver "$mode" /dev/null "$(realpath --relative-to="$PEERS_DIR" "$T_ROOT/agent.mjs")" \
        "$MCP_BRIDGE_BIN" "$target" "$mode" "$T_ROOT" $sizes
done

bridge_done "the pass-through"
