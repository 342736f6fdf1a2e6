#!/usr/bin/env node
// An agent that signs in by itself: the v1 SDK Client over StreamableHTTPClientTransport with an
// authProvider (OAuthClientProvider), as a web or desktop MCP client does. Its first connect gets
// the server's 401; the SDK reads the protected-resource metadata, registers a client at the
// authorization server (dynamic registration, PKCE) and hands the authorization URL to
// redirectToAuthorization, which opens it in tests/peers/browser.mjs (Chromium); the code comes
// back to a loopback callback here, finishAuth() trades it for tokens, and the second connect
// lists the tools and calls one. See --help.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { closeServer, listen, parseArgs } from './lib/common.mjs';

const spec = {
  url: { type: 'string', default: '', arg: 'URL', help: 'the MCP server (required)' },
  tool: { type: 'string', default: '', arg: 'NAME', help: 'a tool to call once signed in, without arguments' },
  timeout: { type: 'int', default: 90, arg: 'SECONDS', help: 'for the whole run' },
};
const usage = `
Signs in to the MCP server at --url through the SDK's own OAuth client (browser.mjs plays the
user), then lists its tools and calls --tool. Prints one JSON line on stdout:
{"unauthorized": the first connect was refused for want of a token, "scope": the scope the
authorization request asked for, "tools": [names], "result": the call's result}. Exits 1 on
any failure.`;

const opts = parseArgs(spec, process.argv.slice(2), usage);
if (!opts.url) {
  process.stderr.write('oauth-sdk-agent: --url is required\n');
  process.exit(2);
}
setTimeout(() => {
  process.stderr.write('oauth-sdk-agent: timed out\n');
  process.exit(1);
}, opts.timeout * 1000).unref();

const here = dirname(fileURLToPath(import.meta.url));
let resolveCode;
const codeArrived = new Promise((resolve) => { resolveCode = resolve; });
const callback = createServer((req, res) => {
  const u = new URL(req.url, 'http://127.0.0.1');
  res.writeHead(200, { 'content-type': 'text/plain' }).end('signed in: you may close this page');
  if (u.pathname === '/callback') resolveCode(u.searchParams);
});
const port = await listen(callback, 0);
const redirectUrl = `http://127.0.0.1:${port}/callback`;

let scope = null;
const store = {};
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return {
      client_name: 'oauth-sdk-agent', redirect_uris: [redirectUrl], application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  },
  clientInformation: () => store.client,
  saveClientInformation: (c) => { store.client = c; },
  tokens: () => store.tokens,
  saveTokens: (t) => { store.tokens = t; },
  saveCodeVerifier: (v) => { store.verifier = v; },
  codeVerifier: () => store.verifier,
  redirectToAuthorization: async (url) => {
    scope = url.searchParams.get('scope');
    const browser = spawn(process.execPath, [join(here, 'browser.mjs'), url.href],
      { stdio: ['ignore', 'ignore', 'inherit'] });
    browser.on('exit', (code) => {
      if (code !== 0) {
        process.stderr.write(`oauth-sdk-agent: the browser failed (${code})\n`);
        process.exit(1);
      }
    });
  },
};

const connect = async () => {
  const client = new Client({ name: 'oauth-sdk-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(opts.url), { authProvider: provider });
  await client.connect(transport);
  return { client, transport };
};

let unauthorized = false;
try {
  const first = new StreamableHTTPClientTransport(new URL(opts.url), { authProvider: provider });
  try {
    await new Client({ name: 'oauth-sdk-agent', version: '1.0.0' }).connect(first);
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    unauthorized = true;
    const params = await codeArrived;
    if (!params.get('code')) throw new Error(`no code in the callback: ${params}`);
    await first.finishAuth(params.get('code'));
  }
  const { client } = await connect();
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const result = opts.tool ? await client.callTool({ name: opts.tool, arguments: {} }) : null;
  process.stdout.write(`${JSON.stringify({ unauthorized, scope, tools, result })}\n`);
  await client.close();
} catch (e) {
  process.stderr.write(`oauth-sdk-agent: ${e?.stack ?? e}\n`);
  process.exitCode = 1;
}
await closeServer(callback);
process.exit(process.exitCode ?? 0);
