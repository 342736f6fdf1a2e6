#!/usr/bin/env node
// The node half of smoke.sh.
//   node smoke-flow.mjs genkey PUBLIC.json PRIVATE.json   an ES256 key pair as JWKs
//   node smoke-flow.mjs flow ISSUER RESOURCE PRIVATE.json  the end-to-end checks
// Every step is bounded; the first failure exits 1 with what went wrong.
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  SignJWT, decodeJwt, exportJWK, generateKeyPair, importJWK,
} from 'jose';

const here = dirname(fileURLToPath(import.meta.url));
const [cmd, ...args] = process.argv.slice(2);

function ok(msg) { process.stderr.write(`  ok   ${msg}\n`); }
function fail(msg) {
  process.stderr.write(`  FAIL ${msg}\n`);
  process.exit(1);
}
function check(cond, msg, detail) {
  if (cond) ok(msg);
  else fail(`${msg}${detail === undefined ? '' : `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`}`);
}
const b64url = (buf) => Buffer.from(buf).toString('base64url');

async function http(url, init = {}) {
  const r = await fetch(url, { ...init, signal: AbortSignal.timeout(10000) });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, headers: r.headers, json, text };
}
const form = (o) => new URLSearchParams(Object.entries(o).filter(([, v]) => v !== undefined));

if (cmd === 'genkey') {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = randomUUID();
  writeFileSync(args[0], JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' }] }));
  writeFileSync(args[1], JSON.stringify({ ...(await exportJWK(privateKey)), kid, alg: 'ES256' }), { mode: 0o600 });
  process.exit(0);
}
if (cmd !== 'flow') {
  process.stderr.write('usage: smoke-flow.mjs genkey PUB PRIV | flow ISSUER RESOURCE PRIVATE.json\n');
  process.exit(2);
}

const [issuer, resource, privPath] = args;
const meta = (await http(`${issuer}/.well-known/oauth-authorization-server`)).json;
const stats = async () => (await http(`${issuer}/__test/stats`)).json;
const rsStats = async () => (await http(`${resource.replace(/\/mcp$/, '')}/__test/stats`)).json;

// A loopback callback server, like mcp-auth's: one /callback, then done.
function callbackServer() {
  return new Promise((resolve) => {
    let deliver;
    const got = new Promise((r) => { deliver = r; });
    const srv = createServer((req, res) => {
      const u = new URL(req.url, 'http://127.0.0.1');
      if (u.pathname !== '/callback') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!DOCTYPE html><title>done</title><p>You can close this window.</p>');
      deliver(Object.fromEntries(u.searchParams));
    });
    srv.listen(0, '127.0.0.1', () => resolve({
      port: srv.address().port,
      wait: (ms) => Promise.race([got, new Promise((_, rej) => {
        setTimeout(() => rej(new Error(`no callback within ${ms} ms`)), ms).unref();
      })]),
      close: () => { srv.close(); srv.closeAllConnections(); },
    }));
  });
}

// Runs browser.mjs like a $BROWSER the caller does not wait for; returns its exit promise.
function launchBrowser(url, env = {}) {
  const child = spawn(process.execPath, [join(here, 'browser.mjs'), url], {
    stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env },
  });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, err })));
}

async function authorize(client, port, extraEnv = {}) {
  const cb = await callbackServer();
  const redirectUri = `http://127.0.0.1:${cb.port}/callback`;
  const verifier = b64url(randomBytes(32));
  const state = b64url(randomBytes(16));
  const url = new URL(meta.authorization_endpoint);
  for (const [k, v] of Object.entries({
    response_type: 'code', client_id: client.client_id, redirect_uri: redirectUri,
    code_challenge: b64url(createHash('sha256').update(verifier).digest()), code_challenge_method: 'S256',
    state, scope: 'mcp:read mcp:write', resource,
  })) url.searchParams.set(k, v);
  const browser = launchBrowser(url.href, extraEnv);
  let params;
  try {
    params = await cb.wait(60000);
  } catch (e) {
    const b = await browser;
    fail(`${e.message}; browser exit ${b.code}:\n${b.err}`);
  } finally {
    cb.close();
  }
  const b = await Promise.race([browser, new Promise((r) => { setTimeout(() => r({ code: 'still running after 15 s' }), 15000).unref(); })]);
  check(b.code === 0, 'browser.mjs exited 0 after the callback', b);
  return { params, state, verifier, redirectUri, port };
}

// 1. dynamic registration of a native public client (the redirect URI with port 0 stands for any)
const reg = await http(meta.registration_endpoint, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    application_type: 'native', client_name: 'smoke', token_endpoint_auth_method: 'none',
    redirect_uris: ['http://127.0.0.1/callback'], grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'], scope: 'mcp:read mcp:write',
  }),
});
check(reg.status === 201 && reg.json?.client_id, 'dynamic registration of a public native client', reg.text);
const client = reg.json;

// 2. authorization code + PKCE through the real browser
const a = await authorize(client);
check(a.params.code && a.params.state === a.state, 'the callback got a code and our state', a.params);
check(a.params.iss === issuer, 'RFC 9207 iss in the callback', a.params);

const tok = await http(meta.token_endpoint, {
  method: 'POST',
  body: form({
    grant_type: 'authorization_code', code: a.params.code, redirect_uri: a.redirectUri,
    client_id: client.client_id, code_verifier: a.verifier, resource,
  }),
});
check(tok.status === 200 && tok.json?.access_token && tok.json?.refresh_token, 'code exchanged for access + refresh token', tok.text);
const claims = decodeJwt(tok.json.access_token);
check(claims.aud === resource && claims.sub === 'test-user' && claims.iss === issuer, 'the access token is a JWT for the resource', claims);
check(tok.json.expires_in > 0 && tok.json.expires_in <= 30, `expires_in ${tok.json.expires_in} (default --access-ttl 30)`);

// 3. MCP initialize + tools/call whoami with the token
async function whoami(token) {
  const transport = new StreamableHTTPClientTransport(new URL(resource), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const mcp = new Client({ name: 'smoke', version: '1.0.0' });
  await mcp.connect(transport, { timeout: 10000 });
  const r = await mcp.callTool({ name: 'whoami', arguments: {} }, undefined, { timeout: 10000 });
  await transport.terminateSession().catch(() => {});
  await mcp.close();
  return JSON.parse(r.content[0].text);
}
const who = await whoami(tok.json.access_token);
check(who.sub === 'test-user' && who.aud === resource && /mcp:read/.test(who.scope ?? ''), 'whoami over MCP with the token', who);

// 4. one refresh, counted once; the refresh token rotates (public client)
await http(`${issuer}/__test/reset`, { method: 'POST' });
const ref = await http(meta.token_endpoint, {
  method: 'POST',
  body: form({ grant_type: 'refresh_token', refresh_token: tok.json.refresh_token, client_id: client.client_id, resource }),
});
check(ref.status === 200 && ref.json?.access_token, 'refresh_token grant', ref.text);
check(ref.json.refresh_token && ref.json.refresh_token !== tok.json.refresh_token, 'the refresh token rotated');
let s = await stats();
check(s.refresh_token_grants === 1 && s.token_requests.refresh_token === 1, '/__test/stats counts exactly 1 refresh', s);
check((await whoami(ref.json.access_token)).sub === 'test-user', 'whoami with the refreshed token');

// 5. reusing the rotated refresh token revokes the grant
const reuse = await http(meta.token_endpoint, {
  method: 'POST',
  body: form({ grant_type: 'refresh_token', refresh_token: tok.json.refresh_token, client_id: client.client_id, resource }),
});
check(reuse.status === 400 && reuse.json?.error === 'invalid_grant', 'reusing the old refresh token: invalid_grant', reuse.text);
const after = await http(meta.token_endpoint, {
  method: 'POST',
  body: form({ grant_type: 'refresh_token', refresh_token: ref.json.refresh_token, client_id: client.client_id, resource }),
});
check(after.status === 400, '... and the whole grant is gone (the new refresh token fails too)', after.text);
s = await stats();
check(s.refresh_token_reuse === 1 && s.grant_revocations >= 1, 'stats count the reuse and the grant revocation', s);

// 6. a fresh login (the session cookie is gone with the browser profile), then revocation
const a2 = await authorize(client, undefined, { BROWSER_LOGIN: 'second-user' });
const tok2 = await http(meta.token_endpoint, {
  method: 'POST',
  body: form({
    grant_type: 'authorization_code', code: a2.params.code, redirect_uri: a2.redirectUri,
    client_id: client.client_id, code_verifier: a2.verifier, resource,
  }),
});
check(tok2.status === 200 && decodeJwt(tok2.json.access_token).sub === 'second-user', 'second login as BROWSER_LOGIN=second-user', tok2.text);
const rev = await http(meta.revocation_endpoint, {
  method: 'POST', body: form({ token: tok2.json.refresh_token, token_type_hint: 'refresh_token', client_id: client.client_id }),
});
check(rev.status === 200, 'revocation endpoint accepts the refresh token', rev.text);
const dead = await http(meta.token_endpoint, {
  method: 'POST', body: form({ grant_type: 'refresh_token', refresh_token: tok2.json.refresh_token, client_id: client.client_id, resource }),
});
check(dead.status === 400 && dead.json?.error === 'invalid_grant', 'a revoked refresh token is refused', dead.text);
s = await stats();
check(s.revocations === 1, 'stats count 1 revocation', s);

// 7. consent denied -> error=access_denied at the callback
const d = await authorize(client, undefined, { BROWSER_DENY: '1' });
check(d.params.error === 'access_denied' && d.params.state === d.state, 'BROWSER_DENY=1 gives error=access_denied', d.params);

// 8. client_credentials: client_secret_basic, client_secret_post, private_key_jwt (ES256)
const basic = await http(meta.token_endpoint, {
  method: 'POST',
  headers: { authorization: `Basic ${Buffer.from('basic-client:basic-secret').toString('base64')}` },
  body: form({ grant_type: 'client_credentials', scope: 'mcp:read', resource }),
});
check(basic.status === 200 && decodeJwt(basic.json.access_token).aud === resource, 'client_credentials with client_secret_basic', basic.text);
check((await whoami(basic.json.access_token)).client_id === 'basic-client', 'whoami with the client_credentials token');
const post = await http(meta.token_endpoint, {
  method: 'POST',
  body: form({ grant_type: 'client_credentials', client_id: 'post-client', client_secret: 'post-secret', scope: 'mcp:read', resource }),
});
check(post.status === 200, 'client_credentials with client_secret_post', post.text);
const priv = JSON.parse(readFileSync(privPath, 'utf8'));
const assertion = await new SignJWT({})
  .setProtectedHeader({ alg: 'ES256', kid: priv.kid })
  .setIssuer('jwt-client').setSubject('jwt-client').setAudience(issuer)
  .setIssuedAt().setExpirationTime('60s').setJti(randomUUID())
  .sign(await importJWK(priv, 'ES256'));
const pkj = await http(meta.token_endpoint, {
  method: 'POST',
  body: form({
    grant_type: 'client_credentials', scope: 'mcp:read mcp:write', resource,
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion,
  }),
});
check(pkj.status === 200 && decodeJwt(pkj.json.access_token).aud === resource, 'client_credentials with private_key_jwt (ES256)', pkj.text);

// 9. the resource server refuses an expired / foreign token
const rs = await http(resource, {
  method: 'POST',
  headers: { authorization: 'Bearer not.a.jwt', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
});
check(rs.status === 401 && /error="invalid_token"/.test(rs.headers.get('www-authenticate') ?? ''), 'a bad token gets 401 invalid_token', rs.headers.get('www-authenticate'));
const r = await rsStats();
check(r.tool_calls === 3 && r.unauthorized === 2, `resource server stats: ${r.tool_calls} tool calls, ${r.unauthorized} 401s`, r);
process.exit(0);
