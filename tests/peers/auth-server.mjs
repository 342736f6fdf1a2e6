#!/usr/bin/env node
// A real OAuth 2.1 / OpenID authorization server for the integration tests: oidc-provider v9 on
// 127.0.0.1, issuer http://127.0.0.1:PORT. See --help and README.md.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createHttps } from 'node:https';

import { exportJWK, generateKeyPair } from 'jose';

import {
  closeServer, listen, makeLogger, onShutdown, parseArgs, ready, sendJson,
} from './lib/common.mjs';

const RS_SCOPES = ['mcp:read', 'mcp:write'];

const spec = {
  port: { type: 'int', default: 0, arg: 'PORT', help: 'port on 127.0.0.1; 0 picks a free one' },
  host: { type: 'string', default: '127.0.0.1', arg: 'ADDRESS', help: 'the IPv4 address to listen on (one of a private network namespace: tests/integration/net_proxy_mtls.sh)' },
  cert: { type: 'string', default: '', arg: 'FILE', help: 'PEM certificate: serve https (with --key)' },
  key: { type: 'string', default: '', arg: 'FILE', help: 'PEM private key of --cert' },
  'access-ttl': { type: 'int', default: 30, arg: 'SECONDS', help: 'lifetime of access tokens (authorization_code, refresh_token and client_credentials)' },
  'refresh-ttl': { type: 'int', default: 86400, arg: 'SECONDS', help: 'lifetime of refresh tokens' },
  'code-ttl': { type: 'int', default: 60, arg: 'SECONDS', help: 'lifetime of authorization codes' },
  resource: { type: 'list', arg: 'URL', help: 'a resource indicator (RFC 8707) the server accepts; without any, every http://127.0.0.1:* and http://localhost:* resource is accepted' },
  scope: { type: 'list', arg: 'SCOPE', help: `an extra resource scope besides ${RS_SCOPES.join(' ')}` },
  'require-offline-access': { type: 'bool', help: "oidc-provider's default refresh policy: issue a refresh token only when offline_access was granted (which also needs prompt=consent in the authorization request). Without this flag every client whose grant_types include refresh_token gets one" },
  'rotate-refresh': { type: 'string', default: 'public', arg: 'public|always|never', help: 'refresh-token rotation: public = only public clients (oidc-provider default; reusing a rotated token revokes the whole grant), always, never' },
  'no-registration': { type: 'bool', help: 'disable dynamic client registration (no registration_endpoint in the metadata)' },
  'pre-registered': { type: 'bool', help: 'register the static confidential clients of --basic-client and --post-client (with their defaults when those flags are absent)' },
  'basic-client': { type: 'string', arg: 'ID:SECRET', help: 'a static confidential client using client_secret_basic (implies --pre-registered; default with --pre-registered: basic-client:basic-secret)' },
  'post-client': { type: 'string', arg: 'ID:SECRET', help: 'a static confidential client using client_secret_post (implies --pre-registered; default with --pre-registered: post-client:post-secret)' },
  'redirect-uri': { type: 'list', arg: 'URL', default: ['http://127.0.0.1/callback'], help: 'redirect URI of the static clients (native clients: any loopback port matches)' },
  'strict-redirect': { type: 'bool', help: 'register the static clients as web clients, so their redirect URIs must match exactly, port included' },
  'jwks-client': { type: 'list', arg: 'ID=PATH.json', help: 'a static private_key_jwt client for client_credentials whose public key (a JWK or a JWKS) is in the file' },
  'device-flow': { type: 'bool', help: 'enable the device authorization grant (RFC 8628) at /device/auth' },
  quiet: { type: 'bool', help: 'log nothing but errors' },
};

const usage = `
A real authorization server (oidc-provider v9) on 127.0.0.1 with dynamic client registration,
PKCE S256 (required), resource indicators (a token for a resource is an RS256 JWT with aud =
the resource), refresh tokens with rotation, client_credentials, revocation, introspection and
dev login/consent pages (any login name, any password).

Test endpoints: GET /__test/stats (counters, JSON; authorization_queries: the query of every
authorization request), GET /__test/clients (the metadata of every client: client_id,
client_name, client_uri, logo_uri, redirect_uris), POST /__test/reset (zero the counters),
GET /__test/issued-tokens (every access and refresh token issued since start, never reset),
POST /__test/forget-clients (drop every dynamically registered client, as if the server had been
reset), POST /__test/revoke-all (drop every grant and token).`;

const opts = parseArgs(spec, process.argv.slice(2), usage);
const log = makeLogger('auth-server', opts.quiet);
// Imported after the flags are read: oidc-provider warns about Node 20 as soon as it loads.
const { default: Provider, errors } = await import('oidc-provider');
if (!['public', 'always', 'never'].includes(opts.rotateRefresh)) {
  process.stderr.write(`auth-server: --rotate-refresh wants public, always or never\n`);
  process.exit(2);
}

// ---- storage: a plain in-memory adapter we can inspect and clear --------------------------------
const stores = new Map();
function storeFor(name) {
  if (!stores.has(name)) stores.set(name, new Map());
  return stores.get(name);
}
class MemoryAdapter {
  constructor(name) {
    this.name = name;
    this.store = storeFor(name);
  }

  async upsert(id, payload, expiresIn) {
    // Keep entries a minute past their expiry so oidc-provider can still say "expired".
    const until = typeof expiresIn === 'number' ? Date.now() + (expiresIn + 60) * 1000 : Infinity;
    this.store.set(id, { payload: structuredClone(payload), until });
  }

  #get(id) {
    const e = this.store.get(id);
    if (!e) return undefined;
    if (e.until <= Date.now()) {
      this.store.delete(id);
      return undefined;
    }
    return e;
  }

  async find(id) {
    const e = this.#get(id);
    return e ? structuredClone(e.payload) : undefined;
  }

  async #findBy(field, value) {
    for (const [id, e] of this.store) {
      if (e.payload[field] === value && this.#get(id)) return structuredClone(e.payload);
    }
    return undefined;
  }

  findByUid(uid) { return this.#findBy('uid', uid); }

  findByUserCode(userCode) { return this.#findBy('userCode', userCode); }

  async consume(id) {
    const e = this.#get(id);
    if (e) e.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) { this.store.delete(id); }

  async revokeByGrantId(grantId) {
    for (const [id, e] of this.store) {
      if (e.payload.grantId === grantId) this.store.delete(id);
    }
  }
}

// ---- counters ----------------------------------------------------------------------------------
function freshStats() {
  return {
    token_requests: {}, // by grant_type, every request that reached /token
    token_errors: {}, // by grant_type
    refresh_token_grants: 0, // successful refresh_token grants
    refresh_token_reuse: 0, // a rotated (consumed) refresh token was presented again
    grant_revocations: 0, // whole grants revoked (reuse detection, or revoking a refresh token)
    revocations: 0, // successful requests to the revocation endpoint
    registrations: 0,
    authorization_requests: 0,
    introspections: 0,
    client_credentials_grants: 0,
    authorization_code_grants: 0,
    // the query of every authorization request, as parameter -> value (the extra parameters a
    // client adds show here)
    authorization_queries: [],
    // one {t, grant, left_ms} per successful refresh_token grant: left_ms is how long the access
    // token issued last for that grant still had to live (a second refresh in one lifetime
    // shows as a left_ms close to the whole lifetime)
    refresh_log: [],
  };
}
let stats = freshStats();
const bump = (obj, key) => { obj[key] = (obj[key] ?? 0) + 1; };
// Not reset with the counters: every token the server issued (GET /__test/issued-tokens, for
// tests that check that no token leaks), and the expiry (ms) of the last access token per grant.
const issued = { access_tokens: new Set(), refresh_tokens: new Set() };
const lastAccessExpiry = new Map();

// ---- static clients ----------------------------------------------------------------------------
function idSecret(value, flag) {
  const i = value.indexOf(':');
  if (i <= 0 || i === value.length - 1) {
    process.stderr.write(`auth-server: ${flag} wants ID:SECRET\n`);
    process.exit(2);
  }
  return [value.slice(0, i), value.slice(i + 1)];
}
const clients = [];
const appType = opts.strictRedirect ? 'web' : 'native';
const interactiveGrants = ['authorization_code', 'refresh_token', 'client_credentials',
  ...(opts.deviceFlow ? ['urn:ietf:params:oauth:grant-type:device_code'] : [])];
if (opts.preRegistered || opts.basicClient) {
  const [id, secret] = idSecret(opts.basicClient ?? 'basic-client:basic-secret', '--basic-client');
  clients.push({
    client_id: id, client_secret: secret, token_endpoint_auth_method: 'client_secret_basic',
    application_type: appType, redirect_uris: opts.redirectUri, grant_types: interactiveGrants,
    response_types: ['code'], client_name: 'static client (client_secret_basic)',
  });
}
if (opts.preRegistered || opts.postClient) {
  const [id, secret] = idSecret(opts.postClient ?? 'post-client:post-secret', '--post-client');
  clients.push({
    client_id: id, client_secret: secret, token_endpoint_auth_method: 'client_secret_post',
    application_type: appType, redirect_uris: opts.redirectUri, grant_types: interactiveGrants,
    response_types: ['code'], client_name: 'static client (client_secret_post)',
  });
}
for (const value of opts.jwksClient) {
  const i = value.indexOf('=');
  if (i <= 0) {
    process.stderr.write('auth-server: --jwks-client wants ID=PATH.json\n');
    process.exit(2);
  }
  const id = value.slice(0, i);
  const doc = JSON.parse(readFileSync(value.slice(i + 1), 'utf8'));
  const keys = (doc.keys ?? [doc]).map((k) => {
    const { d, p, q, dp, dq, qi, ...pub } = k; // never keep private parts, should a test hand them in
    return pub;
  });
  clients.push({
    client_id: id, token_endpoint_auth_method: 'private_key_jwt', jwks: { keys },
    grant_types: ['client_credentials'], response_types: [], redirect_uris: [],
    client_name: `static client (private_key_jwt, ${keys.map((k) => k.kty).join('/')})`,
  });
}

// ---- resources ---------------------------------------------------------------------------------
function resourceAllowed(resource) {
  if (opts.resource.length) return opts.resource.includes(resource);
  try {
    const u = new URL(resource);
    if (opts.host !== '127.0.0.1') return u.hostname === opts.host && !u.hash; // --host: its own
    return u.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname) && !u.hash;
  } catch {
    return false;
  }
}

// ---- the server --------------------------------------------------------------------------------
const rsScopes = [...RS_SCOPES, ...opts.scope];
const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const signingKey = { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };

const httpServer = opts.cert
  ? createHttps({ cert: readFileSync(opts.cert), key: readFileSync(opts.key) })
  : createServer();
const port = await listen(httpServer, opts.port, opts.host);
const issuer = `${opts.cert ? 'https' : 'http'}://${opts.host}:${port}`;

const configuration = {
  adapter: MemoryAdapter,
  clients,
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  scopes: ['openid', 'offline_access', ...rsScopes],
  claims: { openid: ['sub'] },
  pkce: { required: () => true },
  responseTypes: ['code'],
  clientBasedCORS: () => true,
  ttl: {
    AccessToken: opts.accessTtl,
    ClientCredentials: opts.accessTtl,
    AuthorizationCode: opts.codeTtl,
    RefreshToken: opts.refreshTtl,
    IdToken: 3600,
    Interaction: 600,
    Session: 86400,
    Grant: Math.max(opts.refreshTtl, 86400),
    DeviceCode: 600,
  },
  // oidc-provider's default issues refresh tokens only for a granted offline_access scope (which
  // in turn it drops unless prompt=consent was requested). MCP clients ask for refresh tokens by
  // registering the refresh_token grant, so that is all we require unless told otherwise.
  issueRefreshToken: async (_ctx, client, source) => client.grantTypeAllowed('refresh_token')
    && (opts.requireOfflineAccess ? source.scopes.has('offline_access') : true),
  // Tokens must outlive the browser session that produced them (the test browser is gone at once).
  expiresWithSession: async (_ctx, source) => (opts.requireOfflineAccess ? !source.scopes.has('offline_access') : false),
  rotateRefreshToken: (ctx) => {
    if (opts.rotateRefresh === 'always') return true;
    if (opts.rotateRefresh === 'never') return false;
    const { RefreshToken: rt, Client: client } = ctx.oidc.entities;
    return client.clientAuthMethod === 'none' && !rt.isSenderConstrained();
  },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: !opts.noRegistration, initialAccessToken: false },
    revocation: { enabled: true },
    introspection: { enabled: true, allowedPolicy: async () => true },
    clientCredentials: { enabled: true },
    deviceFlow: { enabled: opts.deviceFlow },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => oneOf,
      // The token request may repeat or omit the resource of the authorization request.
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => {
        if (!resourceAllowed(resource)) throw new errors.InvalidTarget(`resource ${resource} is not served here`);
        return {
          scope: rsScopes.join(' '),
          audience: resource,
          accessTokenTTL: opts.accessTtl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  renderError: async (ctx, out) => {
    ctx.type = 'html';
    ctx.body = `<!DOCTYPE html><title>oops</title><h1>${escapeHtml(out.error)}</h1><p id="error_description">${escapeHtml(out.error_description ?? '')}</p>`;
  },
};

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const provider = new Provider(issuer, configuration);

// Counting and logging: one line per request, with the detail the token endpoint hides.
provider.use(async (ctx, next) => {
  const asked = ctx.href;
  // prompt=select_account (OpenID Connect Core 3.1.2.1): the dev interactions have no account
  // chooser, and their login page is one (whoever signs in there is the account chosen), so it
  // is asked as prompt=login; the query recorded is the one the client sent
  if (ctx.path === '/auth' && typeof ctx.query.prompt === 'string') {
    const q = new URLSearchParams(ctx.querystring);
    q.set('prompt', q.get('prompt').split(' ').map((p) => (p === 'select_account' ? 'login' : p)).join(' '));
    ctx.querystring = q.toString();
  }
  await next();
  const route = ctx.oidc?.route;
  const params = ctx.oidc?.params ?? {};
  const ok = ctx.status < 400;
  if (route === 'token') {
    const gt = params.grant_type ?? '(none)';
    bump(stats.token_requests, gt);
    if (!ok) bump(stats.token_errors, gt);
    if (ok && gt === 'refresh_token') stats.refresh_token_grants += 1;
    if (ok && gt === 'client_credentials') stats.client_credentials_grants += 1;
    if (ok && gt === 'authorization_code') stats.authorization_code_grants += 1;
    if (ok) noteIssued(ctx, gt);
  } else if (route === 'revocation' && ok) {
    stats.revocations += 1;
  } else if (route === 'registration' && ok) {
    stats.registrations += 1;
  } else if (route === 'authorization' || route === 'resume') {
    if (route === 'authorization') {
      stats.authorization_requests += 1;
      stats.authorization_queries.push(Object.fromEntries(new URL(asked).searchParams));
    }
  } else if (route === 'introspection' && ok) {
    stats.introspections += 1;
  }
  const gt = route === 'token' ? ` grant_type=${params.grant_type}` : '';
  const loc = ctx.status >= 300 && ctx.status < 400 ? ` -> ${ctx.response.get('location')}` : '';
  log(`${ctx.method} ${ctx.path} ${ctx.status}${route ? ` [${route}]` : ''}${gt}${loc}`);
});
for (const ev of ['grant.error', 'authorization.error', 'registration_create.error', 'revocation.error',
  'introspection.error', 'server_error', 'userinfo.error', 'end_session.error']) {
  provider.on(ev, (_ctx, err) => {
    if (ev === 'grant.error' && /already used/.test(err?.error_detail ?? err?.error_description ?? '')) {
      stats.refresh_token_reuse += 1;
    }
    log(`${ev}: ${err?.error ?? err?.name}: ${err?.error_description ?? ''}${err?.error_detail ? ` (${err.error_detail})` : ''}${ev === 'server_error' ? `\n${err?.stack}` : ''}`);
  });
}
provider.on('grant.revoked', (_ctx, grantId) => {
  stats.grant_revocations += 1;
  log(`grant revoked: ${grantId}`);
});

const providerCallback = provider.callback();
httpServer.on('request', (req, res) => {
  const path = req.url.split('?')[0];
  if (path.startsWith('/__test/')) {
    if (req.method === 'GET' && path === '/__test/stats') {
      sendJson(res, 200, { ...stats, issuer, live: liveCounts() });
    } else if (req.method === 'GET' && path === '/__test/issued-tokens') {
      sendJson(res, 200, { access_tokens: [...issued.access_tokens], refresh_tokens: [...issued.refresh_tokens] });
    } else if (req.method === 'GET' && path === '/__test/clients') {
      const shown = ['client_id', 'client_name', 'client_uri', 'logo_uri', 'redirect_uris'];
      sendJson(res, 200, [...storeFor('Client').values()].map((e) => Object.fromEntries(
        shown.filter((k) => e.payload[k] !== undefined).map((k) => [k, e.payload[k]]))));
    } else if (req.method === 'POST' && path === '/__test/reset') {
      stats = freshStats();
      sendJson(res, 200, { ok: true });
    } else if (req.method === 'POST' && path === '/__test/forget-clients') {
      const staticIds = new Set(clients.map((c) => c.client_id));
      let n = 0;
      for (const id of storeFor('Client').keys()) {
        if (!staticIds.has(id)) { storeFor('Client').delete(id); n += 1; }
      }
      log(`forgot ${n} registered clients`);
      sendJson(res, 200, { ok: true, forgotten: n });
    } else if (req.method === 'POST' && path === '/__test/revoke-all') {
      for (const name of ['Grant', 'AccessToken', 'RefreshToken', 'AuthorizationCode', 'ClientCredentials', 'Session']) {
        storeFor(name).clear();
      }
      log('revoked every grant and token');
      sendJson(res, 200, { ok: true });
    } else {
      sendJson(res, 404, { error: 'not_found' });
    }
    return;
  }
  providerCallback(req, res);
});

// Keeps the tokens of a successful token response, and for a refresh how long the grant's
// previous access token still had (refresh_log).
function noteIssued(ctx, gt) {
  const body = ctx.body && typeof ctx.body === 'object' ? ctx.body : {};
  if (typeof body.access_token === 'string') issued.access_tokens.add(body.access_token);
  if (typeof body.refresh_token === 'string') issued.refresh_tokens.add(body.refresh_token);
  const e = ctx.oidc?.entities ?? {};
  const grant = e.RefreshToken?.grantId ?? e.AuthorizationCode?.grantId ?? e.Grant?.jti;
  if (!grant) return;
  const now = Date.now();
  if (gt === 'refresh_token') {
    const last = lastAccessExpiry.get(grant);
    stats.refresh_log.push({ t: now, grant, left_ms: last === undefined ? null : last - now });
  }
  if (typeof body.expires_in === 'number') lastAccessExpiry.set(grant, now + body.expires_in * 1000);
}

function liveCounts() {
  const now = Date.now();
  const count = (name, pred = () => true) => [...storeFor(name).values()]
    .filter((e) => e.until > now && pred(e.payload)).length;
  return {
    grants: count('Grant'),
    refresh_tokens: count('RefreshToken', (p) => !p.consumed && p.exp * 1000 > now),
    registered_clients: count('Client'),
  };
}

onShutdown(log, () => closeServer(httpServer));
log(`issuer ${issuer}; access tokens live ${opts.accessTtl}s; ${clients.length} static client(s); refresh rotation: ${opts.rotateRefresh}`);
ready(issuer);
