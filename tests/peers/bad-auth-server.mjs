// A deliberately faulty MCP server + OAuth authorization server in one process, for the "bad
// input" tests of mcp-auth. node:http only. Everything is right except the one fault chosen with
// --fault; see FAULTS below. Redirects from /authorize happen at once (no login page), so
// tests/peers/fetch-browser.sh can serve as $BROWSER.
//
//   POST /mcp                                   401 + WWW-Authenticate: Bearer resource_metadata=...
//   GET  /.well-known/oauth-protected-resource[/mcp]   RFC 9728 metadata (resource <base>/mcp)
//   GET  /.well-known/oauth-authorization-server       RFC 8414 metadata, issuer <base>
//   GET  /authorize   POST /token   POST /register
//   GET  /__test/stats   {"paths": {"/token": 2, ...}, "registrations": n, "token_requests": n,
//                         "tokens_issued": n, "authorize_requests": n, "fault": "...",
//                         "registrations_at": {issuer: n}, "authorize_clients": {issuer: [id]}}
//   POST /__test/move-as  the authorization server moves (migration): from then on the protected
//                         resource metadata names the issuer http://localhost:PORT (the same
//                         process under another name), whose metadata is served to requests
//                         for Host localhost:PORT; clients registered before belong to the old
//                         issuer and are refused (invalid_client) under the new one
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

import { closeServer, listen, makeLogger, onShutdown, parseArgs, readBody, ready, sendJson }
  from './lib/common.mjs';

const FAULTS = {
  'none': 'everything right',
  'issuer-mismatch': 'the metadata names another issuer',
  'no-s256': 'code_challenge_methods_supported: ["plain"]',
  'no-pkce-field': 'no code_challenge_methods_supported at all',
  'resource-mismatch': 'the protected resource metadata is for another URL',
  'oversized-metadata': 'the authorization server metadata is larger than 256 KiB',
  'malformed-metadata': 'the authorization server metadata is not JSON',
  'http-endpoint': 'token_endpoint is http://example.invalid/token (non-loopback http)',
  'redirect-other-origin': 'the metadata GET answers 302 to http://127.0.0.2:PORT/...',
  'reg-no-client-id': 'the registration answer has no client_id',
  'token-no-access-token': 'the token answer has no access_token',
  'token-crlf': 'the token answer\'s access_token holds CR LF and a header line',
  'state-mismatch': '/authorize redirects with another state',
  'iss-mismatch': '/authorize redirects with iss=https://evil.example',
  'iss-missing': '/authorize redirects without iss (the metadata promises it)',
  'iss-normalized': '/authorize redirects with iss=<issuer>/ (equal only after normalisation)',
  'iss-unadvertised': 'the metadata does not promise iss; /authorize redirects with iss=https://evil.example',
  'error-callback': '/authorize redirects with error=access_denied',
  'error-controls': '/authorize redirects with an error_description holding ESC sequences and a bidi override',
  'error-iss-mismatch': '/authorize redirects with error=access_denied and iss=https://evil.example',
  'error-iss-missing': '/authorize redirects with error=access_denied without iss (the metadata promises it)',
  'no-callback': '/authorize answers 200 with a page and never redirects',
  'invalid-client-once': 'the first /token request gets 401 invalid_client (the client is forgotten)',
  'no-registration': 'no registration_endpoint',
};

const usage = `A faulty MCP server and authorization server for mcp-auth's bad-input tests.
Faults:
${Object.entries(FAULTS).map(([k, v]) => `  ${k.padEnd(22)} ${v}`).join('\n')}`;

const opts = parseArgs({
  port: { type: 'int', default: 0, help: 'port on 127.0.0.1 (0: any free one)', arg: 'N' },
  fault: { type: 'string', default: 'none', help: 'the one thing that is wrong', arg: 'NAME' },
  quiet: { type: 'bool', help: 'no request log' },
}, process.argv.slice(2), usage);

if (!Object.hasOwn(FAULTS, opts.fault)) {
  process.stderr.write(`bad-auth-server.mjs: unknown fault '${opts.fault}' (see --help)\n`);
  process.exit(2);
}
const fault = opts.fault;
const log = makeLogger(`bad-auth-server ${fault}`, opts.quiet);

let base = ''; // http://127.0.0.1:PORT, set once listening
let movedTo = ''; // http://localhost:PORT once /__test/move-as was posted
const clients = new Map(); // client_id -> registration
const codes = new Map(); // code -> {clientId, redirectUri, challenge, resource, scope}
const forgotten = new Set(); // client ids answered invalid_client
const stats = { paths: {}, registrations: 0, token_requests: 0, tokens_issued: 0, authorize_requests: 0,
  registrations_at: {}, authorize_clients: {} };
// the issuer a request addresses: the moved one only for its own host name
const issuerOf = (req) => (movedTo && req.headers.host === new URL(movedTo).host ? movedTo : base);
// the issuer the protected resource currently names
const currentIssuer = () => movedTo || base;

const rand = (n = 24) => randomBytes(n).toString('base64url');

function prm() {
  return {
    resource: fault === 'resource-mismatch' ? 'https://other.example/mcp' : `${base}/mcp`,
    authorization_servers: [currentIssuer()],
    scopes_supported: ['mcp'],
    bearer_methods_supported: ['header'],
  };
}

function asMetadata(issuer = base) {
  const m = {
    issuer: fault === 'issuer-mismatch' ? 'https://issuer.example' : issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: fault === 'http-endpoint' ? 'http://example.invalid/token' : `${issuer}/token`,
    registration_endpoint: `${issuer}/register`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: fault === 'no-s256' ? ['plain'] : ['S256'],
    scopes_supported: ['mcp'],
    authorization_response_iss_parameter_supported: true,
  };
  if (fault === 'no-pkce-field') delete m.code_challenge_methods_supported;
  if (fault === 'no-registration') delete m.registration_endpoint;
  if (fault === 'iss-unadvertised') delete m.authorization_response_iss_parameter_supported;
  return m;
}

function sendText(res, status, text, headers = {}) {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store',
    'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function redirectTo(res, uri, params) {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  res.writeHead(302, { location: u.href, 'cache-control': 'no-store', 'content-length': 0 });
  res.end();
}

function serveAsMetadata(req, res) {
  if (fault === 'redirect-other-origin') {
    const other = base.replace('127.0.0.1', '127.0.0.2');
    res.writeHead(302, { location: `${other}/.well-known/oauth-authorization-server`, 'content-length': 0 });
    return res.end();
  }
  if (fault === 'malformed-metadata') {
    return sendText(res, 200, `{"issuer": "${base}", "authorization_endpoint": `,
      { 'content-type': 'application/json' });
  }
  if (fault === 'oversized-metadata') {
    // valid JSON, 300 KiB, streamed without Content-Length: the reader must stop on its own
    const m = asMetadata();
    m.padding = 'x'.repeat(300 * 1024);
    res.writeHead(200, { 'content-type': 'application/json' });
    const text = JSON.stringify(m);
    for (let i = 0; i < text.length; i += 16384) res.write(text.slice(i, i + 16384));
    return res.end();
  }
  return sendJson(res, 200, asMetadata(issuerOf(req)));
}

function authorize(req, res, url) {
  stats.authorize_requests++;
  const q = url.searchParams;
  const clientId = q.get('client_id');
  const redirectUri = q.get('redirect_uri');
  const state = q.get('state');
  // a server restarted with another fault does not know the stored client: accept it anyway
  // (this server checks PKCE and the redirect URI, not who registered)
  if (!clientId || !redirectUri || !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):\d+\//.test(redirectUri))
    return sendText(res, 400, 'bad authorization request: client_id and a loopback redirect_uri are required\n');
  const issuer = issuerOf(req);
  (stats.authorize_clients[issuer] ??= []).push(clientId);
  const reg = clients.get(clientId);
  if (reg && !reg.redirect_uris.includes(redirectUri))
    return sendText(res, 400, 'redirect_uri is not registered for this client\n');
  if (forgotten.has(clientId)) return sendText(res, 400, 'unknown client\n');
  if (q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge'))
    return redirectTo(res, redirectUri, { error: 'invalid_request', error_description: 'PKCE S256 required', state, iss: issuer });

  switch (fault) {
    case 'no-callback':
      return sendText(res, 200, 'Please sign in. (This page never sends you anywhere.)\n',
        { 'content-type': 'text/html; charset=utf-8' });
    case 'error-callback':
      return redirectTo(res, redirectUri, { error: 'access_denied', error_description: 'User said no', state, iss: issuer });
    case 'error-controls':
      return redirectTo(res, redirectUri, { error: 'access_denied', error_description: 'No\x1b[2J\u202eforged', state, iss: issuer });
    case 'error-iss-mismatch':
    case 'error-iss-missing':
      return redirectTo(res, redirectUri, {
        error: 'access_denied', error_description: 'Evil says no', error_uri: 'https://evil.example/why', state,
        iss: fault === 'error-iss-mismatch' ? 'https://evil.example' : undefined,
      });
    default:
      break;
  }
  const code = rand();
  codes.set(code, { clientId, redirectUri, challenge: q.get('code_challenge'), resource: q.get('resource'), scope: q.get('scope') });
  return redirectTo(res, redirectUri, {
    code,
    state: fault === 'state-mismatch' ? `${state}x` : state,
    iss: fault === 'iss-missing' ? undefined
      : fault === 'iss-mismatch' || fault === 'iss-unadvertised' ? 'https://evil.example'
      : fault === 'iss-normalized' ? `${base}/` : issuer,
  });
}

async function token(req, res) {
  stats.token_requests++;
  const form = new URLSearchParams(await readBody(req));
  const clientId = form.get('client_id');
  const tokenError = (status, error, description) => sendJson(res, status, { error, error_description: description });
  if (fault === 'invalid-client-once' && (stats.token_requests === 1 || forgotten.has(clientId))) {
    forgotten.add(clientId);
    return tokenError(401, 'invalid_client', 'client not found');
  }
  if (form.get('grant_type') !== 'authorization_code')
    return tokenError(400, 'unsupported_grant_type', `grant_type ${form.get('grant_type')}`);
  const c = codes.get(form.get('code') ?? '');
  codes.delete(form.get('code') ?? '');
  if (!c) return tokenError(400, 'invalid_grant', 'unknown or used code');
  if (c.clientId !== clientId) return tokenError(400, 'invalid_grant', 'code issued to another client');
  if (c.redirectUri !== form.get('redirect_uri')) return tokenError(400, 'invalid_grant', 'redirect_uri differs');
  const verifier = form.get('code_verifier') ?? '';
  if (createHash('sha256').update(verifier).digest('base64url') !== c.challenge)
    return tokenError(400, 'invalid_grant', 'PKCE verification failed');
  if (form.get('resource') !== `${base}/mcp` || c.resource !== `${base}/mcp`)
    return tokenError(400, 'invalid_target', `resource ${form.get('resource')}`);
  const answer = { token_type: 'Bearer', expires_in: 3600, refresh_token: rand(), scope: c.scope ?? 'mcp' };
  if (fault !== 'token-no-access-token') answer.access_token = `at-${rand()}`;
  if (fault === 'token-crlf') answer.access_token += '\r\nX-Injected: 1';
  else answer.note = 'no access_token here';
  stats.tokens_issued++;
  return sendJson(res, 200, answer);
}

async function register(req, res) {
  let body;
  try {
    body = JSON.parse(await readBody(req));
  } catch {
    return sendJson(res, 400, { error: 'invalid_client_metadata', error_description: 'not JSON' });
  }
  stats.registrations_at[issuerOf(req)] = (stats.registrations_at[issuerOf(req)] ?? 0) + 1;
  if (!Array.isArray(body.redirect_uris) || !body.redirect_uris.length)
    return sendJson(res, 400, { error: 'invalid_redirect_uri', error_description: 'redirect_uris required' });
  stats.registrations++;
  const clientId = `client-${stats.registrations}-${rand(6)}`;
  const reg = {
    client_id: clientId,
    client_id_issued_at: Math.floor(Date.now() / 1000),
    redirect_uris: body.redirect_uris,
    grant_types: body.grant_types ?? ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    client_name: body.client_name,
  };
  clients.set(clientId, reg);
  const answer = { ...reg };
  if (fault === 'reg-no-client-id') delete answer.client_id;
  return sendJson(res, 201, answer);
}

async function handle(req, res) {
  const url = new URL(req.url, base);
  const path = url.pathname;
  stats.paths[path] = (stats.paths[path] ?? 0) + 1;
  log(req.method, req.url.length > 200 ? `${req.url.slice(0, 200)}...` : req.url);

  if (path === '/__test/stats' && req.method === 'GET') return sendJson(res, 200, { fault, ...stats });
  if (path === '/mcp') {
    await readBody(req).catch(() => '');
    return sendJson(res, 401, { error: 'unauthorized' }, {
      'www-authenticate': `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
    });
  }
  if (req.method === 'GET' && (path === '/.well-known/oauth-protected-resource/mcp' ||
                               path === '/.well-known/oauth-protected-resource'))
    return sendJson(res, 200, prm());
  if (req.method === 'GET' && path === '/.well-known/oauth-authorization-server') return serveAsMetadata(req, res);
  if (req.method === 'POST' && path === '/__test/move-as') {
    movedTo = base.replace('127.0.0.1', 'localhost');
    return sendJson(res, 200, { moved_to: movedTo });
  }
  if (req.method === 'GET' && path === '/authorize') return authorize(req, res, url);
  if (req.method === 'POST' && path === '/token') return token(req, res);
  if (req.method === 'POST' && path === '/register' && fault !== 'no-registration') return register(req, res);
  return sendJson(res, 404, { error: 'not_found', path });
}

const server = createServer((req, res) => {
  handle(req, res).catch((err) => {
    log(`error: ${err?.stack ?? err}`);
    if (!res.headersSent) sendJson(res, 500, { error: 'server_error' });
    else res.destroy();
  });
});
server.keepAliveTimeout = 1000;

const port = await listen(server, opts.port);
base = `http://127.0.0.1:${port}`;
onShutdown(log, () => closeServer(server));
log(`listening on ${base} with fault ${fault}`);
ready(base);
