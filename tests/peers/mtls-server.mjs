#!/usr/bin/env node
// A Streamable HTTP MCP server (SDK McpServer, stateful sessions) over https with a certificate
// of the test's own CA, on an address the test gives (a non-loopback one of a private network
// namespace, so that a proxy is used to reach it): with --client-ca it asks every client for a
// certificate and refuses, at the TLS handshake, one without a certificate that CA signed
// (node's requestCert and rejectUnauthorized). tests/integration/net_proxy_mtls.sh checks the
// entry keys "caFile", "clientCert" and "clientKey" and the proxy settings with it. Tool "echo"
// {message} -> "echo: MESSAGE". Test endpoint: GET /__test/stats: requests, and the subject
// (CN) of the client certificate of each TLS connection.
import { readFileSync } from 'node:fs';
import { createServer as createHttps } from 'node:https';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod/v4';

import { listen, makeLogger, parseArgs, readBody, ready, sendJson } from './lib/common.mjs';
import { handleSession, serveHttp } from './lib/mcp-http.mjs';

const spec = {
  host: { type: 'string', default: '127.0.0.1', arg: 'ADDRESS', help: 'the IPv4 address to listen on' },
  port: { type: 'int', default: 0, arg: 'PORT', help: 'port; 0 picks a free one' },
  cert: { type: 'string', default: '', arg: 'FILE', help: 'PEM certificate of the server (required)' },
  key: { type: 'string', default: '', arg: 'FILE', help: 'PEM private key of --cert (required)' },
  'client-ca': { type: 'string', default: '', arg: 'FILE', help: 'ask for a client certificate and accept only those this CA signed' },
  quiet: { type: 'bool', help: 'log nothing but errors' },
};

const usage = `
An MCP server at https://ADDRESS:PORT/mcp; with --client-ca, mutual TLS: a client without a
certificate signed by that CA is refused during the handshake. Tool "echo".
GET /__test/stats: counters and the client certificates seen.`;

const opts = parseArgs(spec, process.argv.slice(2), usage);
const log = makeLogger('mtls-server', opts.quiet);
if (!opts.cert || !opts.key) {
  process.stderr.write('mtls-server: --cert and --key are required\n');
  process.exit(2);
}
const stats = { requests: 0, clients: [] };

function newMcpServer() {
  const server = new McpServer({ name: 'credkit-mtls-server', version: '1.0.0' });
  server.registerTool('echo', {
    description: 'Says the message back.',
    inputSchema: { message: z.string() },
  }, async ({ message }) => ({ content: [{ type: 'text', text: `echo: ${message}` }] }));
  return server;
}

const tlsOpts = { cert: readFileSync(opts.cert), key: readFileSync(opts.key) };
if (opts.clientCa) {
  tlsOpts.ca = readFileSync(opts.clientCa);
  tlsOpts.requestCert = true;
  tlsOpts.rejectUnauthorized = true;
}
const httpServer = createHttps(tlsOpts);
httpServer.on('secureConnection', (sock) => {
  const peer = sock.getPeerCertificate();
  if (peer && peer.subject && !stats.clients.includes(peer.subject.CN)) stats.clients.push(peer.subject.CN);
});
httpServer.on('tlsClientError', (err) => log(`TLS handshake refused: ${err.code || err.message}`));
const port = await listen(httpServer, opts.port, opts.host);
const origin = `https://${opts.host}:${port}`;

const sessions = new Map();
serveHttp(httpServer, log, sessions, async (req, res, path) => {
  if (path === '/mcp') {
    stats.requests += 1;
    const text = req.method === 'POST' ? await readBody(req) : '';
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
log(`serving ${origin}/mcp${opts.clientCa ? ', client certificates required' : ''}`);
ready(`${origin}/mcp`);
