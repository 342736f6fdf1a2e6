#!/usr/bin/env node
// A small Streamable HTTP MCP server (SDK McpServer, stateful sessions) at
// http://127.0.0.1:PORT/mcp that accepts only RS256/ES256 JWT bearer tokens issued by --issuer
// for its own URL (with --dpop: DPoP-bound ones, each request with its proof). See --help and
// README.md.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createHttps } from 'node:https';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { calculateJwkThumbprint, createRemoteJWKSet, decodeProtectedHeader, importJWK, jwtVerify } from 'jose';

import { listen, makeLogger, parseArgs, ready, sendJson } from './lib/common.mjs';
import { handleSession, readRpcBody, serveHttp } from './lib/mcp-http.mjs';

const spec = {
  port: { type: 'int', default: 0, arg: 'PORT', help: 'port on 127.0.0.1; 0 picks a free one' },
  host: { type: 'string', default: '127.0.0.1', arg: 'ADDRESS', help: 'the IPv4 address to listen on (one of a private network namespace: tests/integration/net_proxy_mtls.sh)' },
  cert: { type: 'string', default: '', arg: 'FILE', help: 'PEM certificate: serve https (with --key)' },
  key: { type: 'string', default: '', arg: 'FILE', help: 'PEM private key of --cert' },
  issuer: { type: 'string', arg: 'URL', help: 'the authorization server (required); its jwks_uri comes from its RFC 8414 metadata, fetched at the first token' },
  'jwks-uri': { type: 'string', arg: 'URL', help: 'skip discovery and take the signing keys from here' },
  'scopes-supported': { type: 'string', default: 'mcp:read mcp:write', arg: '"S1 S2"', help: 'scopes_supported in the protected resource metadata ("" leaves the field out)' },
  'challenge-scope': { type: 'string', arg: '"S1 S2"', help: 'add scope="..." to the 401 challenge' },
  'require-scope': { type: 'list', arg: 'SCOPE', help: 'answer 403 insufficient_scope (with scope="...") when the token lacks this scope' },
  'tool-scope': { type: 'list', arg: 'TOOL=SCOPE', help: 'a tools/call of TOOL needs SCOPE: 403 insufficient_scope (scope = the token\'s scopes + SCOPE) otherwise; TOOL is added (answering as whoami) unless it is whoami' },
  'forbid-tool': { type: 'list', arg: 'TOOL', help: 'fault: every tools/call of TOOL gets 403 insufficient_scope (scope = the token\'s scopes + --scopes-supported), whatever the token; TOOL is added as with --tool-scope' },
  'wrong-resource': { type: 'bool', help: 'fault: the protected resource metadata names https://wrong.example/mcp as its resource' },
  'prm-resource': { type: 'string', arg: 'URL', help: 'the resource value of the metadata; {origin} stands for http://127.0.0.1:PORT (e.g. "{origin}/" for the same-origin prefix case)' },
  'no-prm': { type: 'bool', help: 'fault / 2025-03-26 style: serve no protected resource metadata and leave resource_metadata out of the challenge' },
  'no-resource-metadata-param': { type: 'bool', help: 'leave resource_metadata out of the 401 challenge (clients must find /.well-known/oauth-protected-resource/mcp themselves)' },
  'clock-skew': { type: 'int', default: 0, arg: 'SECONDS', help: 'clock tolerance when checking exp/nbf' },
  dpop: { type: 'bool', help: 'DPoP-bound tokens only (RFC 9449): "Authorization: DPoP <JWT>" whose cnf.jkt is the key of a valid proof in the DPoP header (typ dpop+jwt, ES256, htm, htu, iat within 300 s, ath, a jti never seen); challenges with the DPoP scheme; the metadata lists ES256 and requires bound tokens' },
  'dpop-nonce': { type: 'string', arg: 'NONCE', help: 'with --dpop: a proof must hold this nonce, else 401 DPoP error="use_dpop_nonce" with DPoP-Nonce: NONCE' },
  quiet: { type: 'bool', help: 'log nothing but errors' },
};

const usage = `
An MCP server (Streamable HTTP, stateful sessions) at http://127.0.0.1:PORT/mcp protected by
OAuth: every request needs "Authorization: Bearer <JWT>" signed by the issuer's keys, with
iss = --issuer and aud = http://127.0.0.1:PORT/mcp. Without a valid token: 401 with
WWW-Authenticate: Bearer resource_metadata="http://127.0.0.1:PORT/.well-known/oauth-protected-resource/mcp".
Serves RFC 9728 metadata at /.well-known/oauth-protected-resource/mcp and at the root variant.
One tool, whoami, returns the token's sub, scope, aud and client_id.

Test endpoints: GET /__test/stats (counters, JSON), POST /__test/reset (zero them),
GET /__test/tokens (every token accepted since start, never reset), POST /__test/keys (fetch
the issuer's key set now: 200 once it is in, 503 while it cannot be had).`;

const opts = parseArgs(spec, process.argv.slice(2), usage);
const log = makeLogger('mcp-resource-server', opts.quiet);
if (!opts.issuer) {
  process.stderr.write("mcp-resource-server: --issuer URL is required\nTry 'mcp-resource-server.mjs --help'.\n");
  process.exit(2);
}
const issuer = opts.issuer;
// tool name -> the scope its calls need (--tool-scope), or null: never enough (--forbid-tool)
const toolScopes = new Map();
for (const v of opts.toolScope) {
  const i = v.indexOf('=');
  if (i <= 0 || i === v.length - 1) {
    process.stderr.write("mcp-resource-server: --tool-scope wants TOOL=SCOPE\n");
    process.exit(2);
  }
  toolScopes.set(v.slice(0, i), v.slice(i + 1));
}
for (const t of opts.forbidTool) toolScopes.set(t, null);

const httpServer = opts.cert
  ? createHttps({ cert: readFileSync(opts.cert), key: readFileSync(opts.key) })
  : createServer();
const port = await listen(httpServer, opts.port, opts.host);
const origin = `${opts.cert ? 'https' : 'http'}://${opts.host}:${port}`;
const resourceUrl = `${origin}/mcp`;
const prmUrl = `${origin}/.well-known/oauth-protected-resource/mcp`;
let advertisedResource = resourceUrl;
if (opts.wrongResource) advertisedResource = 'https://wrong.example/mcp';
if (opts.prmResource !== undefined) advertisedResource = opts.prmResource.replaceAll('{origin}', origin);

function freshStats() {
  return {
    requests: 0, // every request to /mcp
    by_method: {},
    unauthorized: 0, // 401 answers
    forbidden: 0, // 403 answers
    authorized: 0, // requests with a valid token
    tool_calls: 0,
    sessions_opened: 0,
    prm_requests: 0,
    subjects: {}, // requests per token sub
    distinct_tokens: 0, // different tokens accepted
    dpop_proofs: 0, // --dpop: valid proofs
    dpop_nonce_challenges: 0, // --dpop-nonce: 401 use_dpop_nonce answers
    dpop_rejected: 0, // --dpop: proofs refused
    dpop_error: null, // the first refusal's reason
  };
}
let stats = freshStats();
let tokensSinceReset = new Set();
const acceptedTokens = new Set(); // every token accepted since start (GET /__test/tokens), never reset

// ---- tokens ------------------------------------------------------------------------------------
let jwks;
async function keySet() {
  if (jwks) return jwks;
  let uri = opts.jwksUri;
  if (!uri) {
    const u = new URL(issuer);
    const path = u.pathname === '/' ? '' : u.pathname.replace(/\/$/, '');
    const candidates = [`${u.origin}/.well-known/oauth-authorization-server${path}`,
      `${u.origin}/.well-known/openid-configuration${path}`];
    for (const c of candidates) {
      const r = await fetch(c, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      if (r?.ok) {
        uri = (await r.json()).jwks_uri;
        if (uri) break;
      }
    }
    if (!uri) throw new Error(`no jwks_uri found in the metadata of ${issuer}`);
  }
  jwks = createRemoteJWKSet(new URL(uri), { timeoutDuration: 5000, cooldownDuration: 0 });
  return jwks;
}

function challenge(extra = {}) {
  const params = [];
  if (extra.error) params.push(`error="${extra.error}"`);
  if (extra.description) params.push(`error_description="${extra.description.replace(/["\\]/g, '')}"`);
  if (extra.scope) params.push(`scope="${extra.scope}"`);
  if (!opts.noPrm && !opts.noResourceMetadataParam) params.push(`resource_metadata="${prmUrl}"`);
  if (opts.dpop) return `DPoP algs="ES256"${params.length ? ', ' : ''}${params.join(', ')}`;
  return `Bearer ${params.join(', ')}`.trim();
}

// --dpop: the request's proof of token (RFC 9449 4.3, 7.1). undefined when it is good; else
// { nonce: true } (--dpop-nonce: the proof lacks it) or { description }.
const jtis = new Set();
async function checkProof(req, token, claims) {
  const proof = req.headers.dpop;
  if (typeof proof !== 'string' || !proof || proof.includes(',')) return { description: 'not one DPoP proof' };
  let header;
  try {
    header = decodeProtectedHeader(proof);
  } catch {
    return { description: 'the DPoP proof is not a JWS' };
  }
  if (header.typ !== 'dpop+jwt' || header.alg !== 'ES256' || !header.jwk || header.jwk.d !== undefined) {
    return { description: 'the DPoP proof header is not typ dpop+jwt, ES256, a public jwk' };
  }
  let p;
  try {
    ({ payload: p } = await jwtVerify(proof, await importJWK(header.jwk, 'ES256'), { typ: 'dpop+jwt', algorithms: ['ES256'] }));
  } catch (err) {
    return { description: `the DPoP proof does not verify: ${err.code ?? err.message}` };
  }
  if (p.htm !== req.method) return { description: `htm ${p.htm} is not ${req.method}` };
  if (p.htu !== resourceUrl) return { description: `htu ${p.htu} is not ${resourceUrl}` };
  if (typeof p.iat !== 'number' || Math.abs(Date.now() / 1000 - p.iat) > 300) return { description: 'iat is not now' };
  if (p.ath !== createHash('sha256').update(token).digest('base64url')) return { description: 'ath is not the hash of the token' };
  if (typeof p.jti !== 'string' || jtis.has(p.jti)) return { description: 'jti missing or seen before' };
  jtis.add(p.jti);
  if (claims.cnf?.jkt !== await calculateJwkThumbprint(header.jwk, 'sha256')) {
    return { description: 'the token is not bound to the proof\'s key (cnf.jkt)' };
  }
  if (opts.dpopNonce && p.nonce !== opts.dpopNonce) return { nonce: true };
  return undefined;
}

// Returns { auth } or { status, headers, body } to send.
async function authenticate(req) {
  const h = req.headers.authorization ?? '';
  const m = (opts.dpop ? /^DPoP\s+([A-Za-z0-9\-._~+/]+=*)\s*$/i : /^Bearer\s+([A-Za-z0-9\-._~+/]+=*)\s*$/i).exec(h);
  if (!m) {
    return {
      status: 401,
      headers: { 'www-authenticate': challenge({ scope: opts.challengeScope }) },
      body: { error: 'invalid_request', error_description: h ? 'malformed Authorization header' : 'no bearer token' },
    };
  }
  const token = m[1];
  let payload;
  try {
    ({ payload } = await jwtVerify(token, await keySet(), {
      issuer,
      audience: resourceUrl,
      algorithms: ['RS256', 'ES256', 'PS256'],
      clockTolerance: opts.clockSkew,
    }));
  } catch (err) {
    const description = `token rejected: ${err.code ?? ''} ${err.message}`.trim();
    log(description);
    return {
      status: 401,
      headers: { 'www-authenticate': challenge({ error: 'invalid_token', description, scope: opts.challengeScope }) },
      body: { error: 'invalid_token', error_description: description },
    };
  }
  if (opts.dpop) {
    const bad = await checkProof(req, token, payload);
    if (bad?.nonce) {
      stats.dpop_nonce_challenges += 1;
      return {
        status: 401,
        headers: { 'www-authenticate': challenge({ error: 'use_dpop_nonce', description: 'a nonce is required' }), 'dpop-nonce': opts.dpopNonce },
        body: { error: 'use_dpop_nonce' },
      };
    }
    if (bad) {
      log(`DPoP proof refused: ${bad.description}`);
      stats.dpop_rejected += 1;
      stats.dpop_error ??= bad.description;
      return {
        status: 401,
        headers: { 'www-authenticate': challenge({ error: 'invalid_dpop_proof', description: bad.description }) },
        body: { error: 'invalid_dpop_proof', error_description: bad.description },
      };
    }
    stats.dpop_proofs += 1;
  }
  const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
  const missing = opts.requireScope.filter((s) => !scopes.includes(s));
  if (missing.length) {
    const wanted = [...new Set([...scopes, ...opts.requireScope])].join(' ');
    return {
      status: 403,
      headers: { 'www-authenticate': challenge({ error: 'insufficient_scope', description: `needs ${missing.join(' ')}`, scope: wanted }) },
      body: { error: 'insufficient_scope', error_description: `needs ${missing.join(' ')}` },
    };
  }
  return {
    auth: {
      token,
      clientId: payload.client_id ?? payload.azp ?? '',
      scopes,
      expiresAt: payload.exp,
      resource: new URL(resourceUrl),
      extra: { claims: payload },
    },
  };
}

// ---- MCP ---------------------------------------------------------------------------------------
async function whoami(extra) {
  stats.tool_calls += 1;
  const claims = extra.authInfo?.extra?.claims ?? {};
  const who = {
    sub: claims.sub ?? null,
    scope: claims.scope ?? null,
    aud: claims.aud ?? null,
    client_id: claims.client_id ?? null,
    exp: claims.exp ?? null,
  };
  return { content: [{ type: 'text', text: JSON.stringify(who) }], structuredContent: who };
}

function newMcpServer() {
  const server = new McpServer({ name: 'credkit-test-resource-server', version: '1.0.0' });
  server.registerTool('whoami', {
    description: "Returns the bearer token's sub, scope, aud and client_id.",
  }, whoami);
  for (const name of toolScopes.keys()) {
    if (name === 'whoami') continue;
    server.registerTool(name, { description: `As whoami, behind a scope check (${name}).` }, whoami);
  }
  return server;
}

// The 403 for a tools/call (single or in a batch) of a tool whose scope the token lacks
// (--tool-scope, --forbid-tool), or undefined.
function toolScopeRefusal(body, scopes) {
  const calls = (Array.isArray(body) ? body : [body])
    .filter((m) => m?.method === 'tools/call' && toolScopes.has(m.params?.name));
  for (const m of calls) {
    const name = m.params.name;
    const need = toolScopes.get(name);
    if (need !== null && scopes.includes(need)) continue;
    const extra = need === null ? opts.scopesSupported.split(' ').filter(Boolean) : [need];
    const wanted = [...new Set([...scopes, ...extra])].join(' ');
    const description = need === null ? `${name} is never allowed` : `${name} needs ${need}`;
    return {
      status: 403,
      headers: { 'www-authenticate': challenge({ error: 'insufficient_scope', description, scope: wanted }) },
      body: { error: 'insufficient_scope', error_description: description },
    };
  }
  return undefined;
}

const sessions = new Map(); // session id -> transport

async function handleMcp(req, res) {
  stats.requests += 1;
  stats.by_method[req.method] = (stats.by_method[req.method] ?? 0) + 1;
  // Read the body first: answering 401 before the client finished sending confuses some clients.
  const rpc = await readRpcBody(req, res);
  if (!rpc) return;
  const a = await authenticate(req);
  if (!a.auth) {
    if (a.status === 401) stats.unauthorized += 1;
    if (a.status === 403) stats.forbidden += 1;
    sendJson(res, a.status, a.body, a.headers);
    return;
  }
  const refusal = toolScopeRefusal(rpc.body, a.auth.scopes);
  if (refusal) {
    stats.forbidden += 1;
    sendJson(res, refusal.status, refusal.body, refusal.headers);
    return;
  }
  stats.authorized += 1;
  if (!tokensSinceReset.has(a.auth.token)) {
    tokensSinceReset.add(a.auth.token);
    stats.distinct_tokens = tokensSinceReset.size;
  }
  acceptedTokens.add(a.auth.token);
  const sub = a.auth.extra.claims.sub ?? '(none)';
  stats.subjects[sub] = (stats.subjects[sub] ?? 0) + 1;
  req.auth = a.auth;
  await handleSession(sessions, req, res, rpc.body, {
    log,
    newServer: newMcpServer,
    opened: (id) => {
      stats.sessions_opened += 1;
      log(`session ${id} opened (sub ${sub})`);
    },
  });
}

function prm(res) {
  stats.prm_requests += 1;
  if (opts.noPrm) {
    sendJson(res, 404, { error: 'not_found' });
    return;
  }
  const doc = {
    resource: advertisedResource,
    authorization_servers: [issuer],
    bearer_methods_supported: ['header'],
    resource_name: 'credkit test MCP server',
  };
  const scopes = opts.scopesSupported.split(' ').filter(Boolean);
  if (scopes.length) doc.scopes_supported = scopes;
  if (opts.dpop) {
    doc.dpop_signing_alg_values_supported = ['ES256'];
    doc.dpop_bound_access_tokens_required = true;
  }
  sendJson(res, 200, doc);
}

serveHttp(httpServer, log, sessions, async (req, res, path) => {
  if (path === '/mcp') {
    await handleMcp(req, res);
  } else if (req.method === 'GET' && (path === '/.well-known/oauth-protected-resource/mcp'
      || path === '/.well-known/oauth-protected-resource')) {
    prm(res);
  } else if (req.method === 'GET' && path === '/__test/stats') {
    sendJson(res, 200, { ...stats, resource: resourceUrl, issuer, open_sessions: sessions.size });
  } else if (req.method === 'GET' && path === '/__test/tokens') {
    sendJson(res, 200, { tokens: [...acceptedTokens] });
  } else if (req.method === 'POST' && path === '/__test/keys') {
    // the issuer's key set fetched now rather than at the first token (a test waits on this
    // before its first call, so that a slow first fetch is not taken for a refusal)
    try {
      const set = await keySet();
      await set.reload();
      sendJson(res, 200, { ok: true });
    } catch (err) {
      sendJson(res, 503, { ok: false, error: String(err?.message ?? err) });
    }
  } else if (req.method === 'POST' && path === '/__test/reset') {
    stats = freshStats();
    tokensSinceReset = new Set();
    sendJson(res, 200, { ok: true });
  } else {
    return false;
  }
  return true;
});
const toolRules = [...toolScopes].map(([t, s]) => `${t} ${s ?? 'never'}`).join(', ');
log(`resource ${resourceUrl}; issuer ${issuer}${opts.dpop ? '; DPoP' : ''}${opts.requireScope.length ? `; requires ${opts.requireScope.join(' ')}` : ''}${toolRules ? `; tools: ${toolRules}` : ''}`);
ready(resourceUrl);
