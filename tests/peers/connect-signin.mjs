// A server that needs a sign-in behind `mcp-bridge connect`, with agents that open in either era
// (tests/integration/bridge_connect.sh). The server is this driver's own: an HTTP endpoint that
// answers every request 401 with a Bearer challenge naming its protected-resource metadata, as an
// OAuth-protected MCP server does before a sign-in. Whatever the agent opens with and whatever it
// falls back to, the reason must reach it with what to run (mcp-auth):
//   - line by line, as an agent that tries server/discover and falls back to initialize on the
//     same process (the era must not be locked by the refused discover): both answered -32000
//     naming mcp-auth, and the bridge keeps serving (a second discover, the same);
//   - the v1 Client (initialize only): its connect fails with the reason;
//   - the v2 Client in "auto" (discover, then initialize): its connect fails with the reason.
//   node connect-signin.mjs --bridge PATH --root DIR
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyStdio } from '@modelcontextprotocol/sdk/client/stdio.js';

import { Checks, expect } from './bridge-lib.mjs';

const { values: opts } = parseArgs({ options: { bridge: { type: 'string' }, root: { type: 'string' } } });

// ---- the server: 401 to everything ---------------------------------------------------------
let asked = 0;
const server = createServer((req, res) => {
  asked++;
  req.resume();
  const { port } = server.address();
  res.writeHead(401, {
    'WWW-Authenticate': `Bearer resource_metadata="http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp"`,
    'Content-Type': 'application/json',
  });
  res.end(JSON.stringify({ error: 'invalid_token' }));
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/mcp`;

const config = `${opts.root}/signin.json`;
// no "auth": the bridge learns from the server's 401 that it signs in with OAuth
writeFileSync(config, JSON.stringify({ mcpServers: { linear: { url } } }));
const args = ['--config', config, 'connect', 'linear'];
const env = { ...process.env };
const MCP_AUTH = /run 'mcp-auth [^']*linear'/;

// ---- an agent line by line ------------------------------------------------------------------
class Raw {
  constructor() {
    this.child = spawn(opts.bridge, args, { env, stdio: ['pipe', 'pipe', 'ignore'] });
    this.waiting = new Map();
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      let m;
      try { m = JSON.parse(line); } catch { return; }
      const w = this.waiting.get(JSON.stringify(m.id));
      if (w) { this.waiting.delete(JSON.stringify(m.id)); w(m); }
    });
  }

  request(id, method, params, ms = 20000) {
    const p = new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no answer to ${method} within ${ms} ms`)), ms);
      this.waiting.set(JSON.stringify(id), (m) => { clearTimeout(t); resolve(m); });
    });
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return p;
  }

  async close() {
    const done = new Promise((resolve) => this.child.on('exit', resolve));
    this.child.stdin.end();
    await done;
  }
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'connect-signin', version: '1' },
};
const INIT = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'connect-signin', version: '1' } };

const checks = new Checks('signin/');
await checks.run('discover, then initialize on the same process: both name mcp-auth', async () => {
  const b = new Raw();
  try {
    const d = await b.request('d', 'server/discover', { _meta: META });
    expect(d.error?.code === -32000 && MCP_AUTH.test(d.error.message), `discover: ${JSON.stringify(d)}`);
    const t0 = Date.now();
    const i = await b.request('i', 'initialize', INIT);
    expect(i.error?.code === -32000 && MCP_AUTH.test(i.error.message), `initialize: ${JSON.stringify(i)}`);
    expect(!/2026-07-28/.test(i.error.message), `the era was locked: ${i.error.message}`);
    // at once, not at the connect timeout (15 s)
    expect(Date.now() - t0 < 10000, `initialize answered after ${Date.now() - t0} ms`);
    const again = await b.request('d2', 'server/discover', { _meta: META });
    expect(again.error?.code === -32000 && MCP_AUTH.test(again.error.message), `discover again: ${JSON.stringify(again)}`);
  } finally {
    await b.close();
  }
});

await checks.run('the v1 Client: the reason in its failed connect', async () => {
  const c = new LegacyClient({ name: 'connect-signin', version: '1' });
  let err = null;
  try {
    await c.connect(new LegacyStdio({ command: opts.bridge, args, env, stderr: 'ignore' }), { timeout: 20000 });
  } catch (e) {
    err = e;
  } finally {
    await c.close().catch(() => {});
  }
  expect(err && MCP_AUTH.test(err.message), `connect: ${err ? err.message : 'it connected'}`);
});

await checks.run('the v2 Client in auto: the reason in its failed connect', async () => {
  const c = new Client({ name: 'connect-signin', version: '1' }, { capabilities: {}, versionNegotiation: { mode: 'auto' } });
  let err = null;
  try {
    await c.connect(new StdioClientTransport({ command: opts.bridge, args, env, stderr: 'ignore' }), { timeout: 20000 });
  } catch (e) {
    err = e;
  } finally {
    await c.close().catch(() => {});
  }
  expect(err && MCP_AUTH.test(err.message), `connect: ${err ? err.message : 'it connected'}`);
  expect(!/2026-07-28 \(no initialize\)/.test(err.message), `the era was locked: ${err.message}`);
});

await checks.run('the reasons came from the server\'s own 401', async () => {
  expect(asked > 0, 'the server was never asked');
});
server.close();
process.exit(checks.summary() ? 0 : 1);
