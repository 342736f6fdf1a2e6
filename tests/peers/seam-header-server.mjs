#!/usr/bin/env node
// A Streamable HTTP MCP server (SDK McpServer, stateful sessions, no authorization of its own)
// at http://127.0.0.1:PORT/mcp that records which values of some request headers it was sent,
// and when: tests/integration/bridge_seam.sh checks with it that a rotating secret used in a
// header reaches the server without a restart. Values are never logged nor answered: only a
// digest of each (the first 16 hex digits of its SHA-256). See --help and README.md.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

import { listen, makeLogger, parseArgs, ready, sendJson } from './lib/common.mjs';
import { handleSession, readRpcBody, serveHttp } from './lib/mcp-http.mjs';

const spec = {
  port: { type: 'int', default: 0, arg: 'PORT', help: 'port on 127.0.0.1; 0 picks a free one' },
  'record-header': { type: 'list', default: ['x-api-key', 'authorization'], arg: 'NAME', help: 'a request header whose values are recorded (case-insensitive)' },
  quiet: { type: 'bool', help: 'log nothing but errors' },
};

const usage = `
An MCP server (Streamable HTTP, stateful sessions) at http://127.0.0.1:PORT/mcp that records the
values of the --record-header headers of every request to /mcp, as digests (sha256, 16 hex
digits; a missing header is null). Tool "seen": the digests of the headers of the request that
carried the call, as text (JSON) and structuredContent {headers: {name: digest|null}}.

Test endpoint: GET /__test/stats: requests, initializations, open_sessions, tool_calls, and
"seen": per header name, each distinct digest in the order it first came, with first_ms and
last_ms (Date.now() of the first and last request that carried it) and requests.`;

const opts = parseArgs(spec, process.argv.slice(2), usage);
const log = makeLogger('seam-header-server', opts.quiet);
const names = opts.recordHeader.map((n) => n.toLowerCase());

const digest = (value) => createHash('sha256').update(value).digest('hex').slice(0, 16);

const stats = { requests: 0, initializations: 0, tool_calls: 0 };
const seen = Object.fromEntries(names.map((n) => [n, []])); // name -> [{hash, first_ms, last_ms, requests}]

function digests(headers) {
  const out = {};
  for (const n of names) {
    const v = headers?.[n];
    out[n] = typeof v === 'string' ? digest(v) : null;
  }
  return out;
}

function record(req) {
  const now = Date.now();
  for (const [n, hash] of Object.entries(digests(req.headers))) {
    const list = seen[n];
    let e = list.find((x) => x.hash === hash);
    if (!e) {
      e = { hash, first_ms: now, last_ms: now, requests: 0 };
      list.push(e);
    }
    e.last_ms = now;
    e.requests += 1;
  }
}

function newMcpServer() {
  const server = new McpServer({ name: 'credkit-seam-header-server', version: '1.0.0' });
  server.registerTool('seen', {
    description: 'The digests of the recorded headers of the request that carried this call.',
  }, async (extra) => {
    stats.tool_calls += 1;
    const result = { headers: digests(extra.requestInfo?.headers) };
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  });
  return server;
}

const sessions = new Map();
const httpServer = createServer();
const port = await listen(httpServer, opts.port);
const url = `http://127.0.0.1:${port}/mcp`;

serveHttp(httpServer, log, sessions, async (req, res, path) => {
  if (path === '/mcp') {
    stats.requests += 1;
    record(req);
    const rpc = await readRpcBody(req, res);
    if (!rpc) return true;
    await handleSession(sessions, req, res, rpc.body, {
      log,
      newServer: newMcpServer,
      opened: (id) => {
        stats.initializations += 1;
        log(`session ${id} opened`);
      },
    });
  } else if (req.method === 'GET' && path === '/__test/stats') {
    sendJson(res, 200, { ...stats, open_sessions: sessions.size, seen });
  } else {
    return false;
  }
  return true;
});
log(`serving ${url}; recording ${names.join(', ')}`);
ready(url);
