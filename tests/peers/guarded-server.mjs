#!/usr/bin/env node
// A Streamable HTTP MCP server (SDK McpServer, stateful sessions) that is careful about who it
// talks to: over https with a certificate of the test's own CA (--cert, --key), and/or checking
// a per-request signature (--hmac-key-file): every request to /mcp must carry
// X-Signature: hex(HMAC-SHA256(key, METHOD "\n" URL "\n" BODY)), URL as the client sent it
// (scheme, host and port of the server, then the request target), or is refused with 401.
// tests/integration/bridge_http_trust.sh checks the entry keys "caFile" and
// "requestHeadersCommand" of the pi adapter with it. Tool "echo" {message} -> "echo: MESSAGE".
// Test endpoint: GET /__test/stats (never signed): requests, signed (accepted), refused.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttp } from 'node:http';
import { createServer as createHttps } from 'node:https';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod/v4';

import { listen, makeLogger, parseArgs, readBody, ready, sendJson } from './lib/common.mjs';
import { handleSession, serveHttp } from './lib/mcp-http.mjs';

const spec = {
  port: { type: 'int', default: 0, arg: 'PORT', help: 'port on 127.0.0.1; 0 picks a free one' },
  cert: { type: 'string', default: '', arg: 'FILE', help: 'PEM certificate: serve https (with --key)' },
  key: { type: 'string', default: '', arg: 'FILE', help: 'PEM private key of --cert' },
  'hmac-key-file': { type: 'string', default: '', arg: 'FILE', help: 'refuse requests without a good X-Signature made with this key' },
  quiet: { type: 'bool', help: 'log nothing but errors' },
};

const usage = `
An MCP server at http(s)://127.0.0.1:PORT/mcp: https with --cert and --key; with
--hmac-key-file every request to /mcp needs X-Signature: hex HMAC-SHA256 over
"METHOD\\nURL\\nBODY" (401 otherwise). Tool "echo". GET /__test/stats: counters.`;

const opts = parseArgs(spec, process.argv.slice(2), usage);
const log = makeLogger('guarded-server', opts.quiet);
const tls = Boolean(opts.cert);
const hmacKey = opts.hmacKeyFile ? readFileSync(opts.hmacKeyFile) : null;
const stats = { requests: 0, signed: 0, refused: 0 };

function newMcpServer() {
  const server = new McpServer({ name: 'credkit-guarded-server', version: '1.0.0' });
  server.registerTool('echo', {
    description: 'Says the message back.',
    inputSchema: { message: z.string() },
  }, async ({ message }) => ({ content: [{ type: 'text', text: `echo: ${message}` }] }));
  return server;
}

// Whether the request carries a good signature of method, URL and body.
function signed(req, body, origin) {
  const got = req.headers['x-signature'];
  if (typeof got !== 'string' || !/^[0-9a-f]{64}$/.test(got)) return false;
  const want = createHmac('sha256', hmacKey).update(`${req.method}\n${origin}${req.url}\n${body}`).digest();
  return timingSafeEqual(Buffer.from(got, 'hex'), want);
}

const sessions = new Map();
const httpServer = tls
  ? createHttps({ cert: readFileSync(opts.cert), key: readFileSync(opts.key) })
  : createHttp();
const port = await listen(httpServer, opts.port);
const origin = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;

serveHttp(httpServer, log, sessions, async (req, res, path) => {
  if (path === '/mcp') {
    stats.requests += 1;
    const text = req.method === 'POST' ? await readBody(req) : '';
    if (hmacKey && !signed(req, text, origin)) {
      stats.refused += 1;
      sendJson(res, 401, { error: 'bad_signature' });
      return true;
    }
    if (hmacKey) stats.signed += 1;
    let body;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      sendJson(res, 400, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null });
      return true;
    }
    await handleSession(sessions, req, res, body, { log, newServer: newMcpServer });
  } else if (req.method === 'GET' && path === '/__test/stats') {
    sendJson(res, 200, stats);
  } else {
    return false;
  }
  return true;
});
log(`serving ${origin}/mcp${hmacKey ? ', signatures checked' : ''}`);
ready(`${origin}/mcp`);
