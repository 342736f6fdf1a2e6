#!/usr/bin/env node
// A Streamable HTTP MCP server at http://127.0.0.1:PORT/mcp that accepts only
// "Authorization: Bearer <token>" with the token held in --token-file (read again at every
// request, so a test can rotate it). It stands for an API that takes a static bearer token,
// such as a GitHub personal access token, for scripts/demo and bench/helpers. See --help.
import { timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod/v4';

import { listen, makeLogger, parseArgs, ready, sendJson } from './lib/common.mjs';
import { handleSession, readRpcBody, serveHttp } from './lib/mcp-http.mjs';

const spec = {
  port: { type: 'int', default: 0, arg: 'PORT', help: 'port on 127.0.0.1; 0 picks a free one' },
  'token-file': { type: 'string', arg: 'PATH', help: 'the file whose first line is the token to accept (required; never on the command line)' },
  name: { type: 'string', default: 'demo-bearer-server', arg: 'NAME', help: 'serverInfo.name' },
  quiet: { type: 'bool', help: 'log nothing but errors' },
};

const usage = `
An MCP server (Streamable HTTP, stateful sessions) at http://127.0.0.1:PORT/mcp that accepts
only "Authorization: Bearer <token>" with the token of --token-file (read at every request).
Without it: 401 with WWW-Authenticate: Bearer error="invalid_token" (no OAuth metadata: the token
is not an OAuth token). Tools:
  whoami           "authorized by a bearer token ending in ...WXYZ (N characters)"; never the
                   whole token
  echo {message}   the message back

Test endpoints: GET /__test/stats (requests, authorized, unauthorized, tool_calls).`;

const opts = parseArgs(spec, process.argv.slice(2), usage);
const log = makeLogger(opts.name, opts.quiet);
if (!opts.tokenFile) {
  process.stderr.write("demo-bearer-server: --token-file PATH is required\nTry 'demo-bearer-server.mjs --help'.\n");
  process.exit(2);
}

const stats = { requests: 0, authorized: 0, unauthorized: 0, tool_calls: 0 };

function expectedToken() {
  const text = readFileSync(opts.tokenFile, 'utf8');
  const nl = text.search(/\r?\n/);
  return nl < 0 ? text : text.slice(0, nl);
}

// The token of the request when it is the expected one, else undefined.
function authorized(req) {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (!m) return undefined;
  const want = Buffer.from(expectedToken());
  const got = Buffer.from(m[1]);
  return want.length > 0 && got.length === want.length && timingSafeEqual(got, want) ? m[1] : undefined;
}

function newMcpServer() {
  const server = new McpServer({ name: opts.name, version: '1.0.0' });
  server.registerTool('whoami', {
    description: 'Says which bearer token the request carried (its last 4 characters only).',
  }, async (extra) => {
    stats.tool_calls += 1;
    const token = extra.authInfo?.token ?? '';
    const suffix = token.slice(-4);
    return {
      content: [{
        type: 'text',
        text: `authorized by a bearer token ending in ...${suffix} (${token.length} characters)`,
      }],
    };
  });
  server.registerTool('echo', {
    description: 'Echoes the message back.',
    inputSchema: { message: z.string() },
  }, async ({ message }) => {
    stats.tool_calls += 1;
    return { content: [{ type: 'text', text: message }] };
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
    const rpc = await readRpcBody(req, res);
    if (!rpc) return true;
    const token = authorized(req);
    if (!token) {
      stats.unauthorized += 1;
      sendJson(res, 401, { error: 'invalid_token' },
        { 'www-authenticate': 'Bearer error="invalid_token"' });
      return true;
    }
    stats.authorized += 1;
    // the SDK hands req.auth to the tool as extra.authInfo: whoami sees this request's token
    req.auth = { token, clientId: '', scopes: [] };
    await handleSession(sessions, req, res, rpc.body, { log, newServer: newMcpServer });
  } else if (req.method === 'GET' && path === '/__test/stats') {
    sendJson(res, 200, { ...stats, open_sessions: sessions.size });
  } else {
    return false;
  }
  return true;
});
log(`accepting the bearer token of ${opts.tokenFile}`);
ready(url);
