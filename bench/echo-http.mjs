#!/usr/bin/env node
// The benchmark's MCP server over Streamable HTTP: the SDK's McpServer with one tool 'echo'
// {message}, behind StreamableHTTPServerTransport in JSON-response mode (each POST answered with
// application/json, no SSE), stateful sessions, bound to 127.0.0.1. Prints "listening PORT" on
// stdout once it accepts connections. Usage: echo-http.mjs [PORT] (0 or none: a free port).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const peers = path.join(here, '..', 'tests', 'peers');
const req = createRequire(path.join(peers, 'package.json'));
const imp = (spec) => import(pathToFileURL(req.resolve(spec)).href);
const { McpServer } = await imp('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = await imp('@modelcontextprotocol/sdk/server/streamableHttp.js');
const z = await imp('zod/v4');

const transports = new Map();

async function newSession() {
  const server = new McpServer({ name: 'bench-echo', version: '1.0.0' });
  server.registerTool('echo', {
    description: 'Echoes the message',
    inputSchema: { message: z.string() },
  }, async ({ message }) => ({ content: [{ type: 'text', text: message }] }));
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: true,
    onsessioninitialized: (id) => transports.set(id, transport),
  });
  transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
  await server.connect(transport);
  return transport;
}

function readBody(request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    request.on('data', (c) => chunks.push(c));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

const httpServer = createServer(async (request, response) => {
  try {
    if (!request.url.startsWith('/mcp')) { response.writeHead(404).end(); return; }
    const sid = request.headers['mcp-session-id'];
    let transport = sid ? transports.get(sid) : undefined;
    let body;
    if (request.method === 'POST') {
      body = JSON.parse(await readBody(request));
      if (!transport) {
        if (sid) { response.writeHead(404).end(); return; }
        transport = await newSession();
      }
    } else if (!transport) {
      response.writeHead(sid ? 404 : 400).end();
      return;
    }
    await transport.handleRequest(request, response, body);
  } catch (e) {
    process.stderr.write(`echo-http: ${e.stack}\n`);
    if (!response.headersSent) response.writeHead(500).end();
  }
});
httpServer.keepAliveTimeout = 60000;
httpServer.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  process.stdout.write(`listening ${httpServer.address().port}\n`);
});
const stop = () => httpServer.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
