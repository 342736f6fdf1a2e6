#!/usr/bin/env node
// The agent of tests/integration/bridge_seam.sh: the SDK's Client over stdio on `mcp-bridge
// serve`, proving that the bridge asks secrets and mcp-auth for credentials whenever they can
// have changed. One scenario per run (--scenario):
//   poll     N bridges call a tool every --interval ms for --duration s against an OAuth server
//            with short-lived tokens: no failed call, enough distinct tokens, one refresh per
//            expiry at the authorization server, no browser opened
//   rotate   a ${VAR} header fed by a secrets command whose output changes: each new value
//            reaches the server within one TTL, on the same bridge
//   login    no token at start (the call names the command to run), a sign-in from outside,
//            the next call succeeds without a restart
//   stepup   a tool that needs a wider scope: without autoAuth the error names
//            `mcp-auth NAME --scope "..."`; with autoAuth the bridge signs in and the call works
//   storm    a server that always answers 403 insufficient_scope: at most --max-logins sign-ins
//            by the bridge, then "login required" with the reason
// Prints one line per check (`ok LABEL (N ms)` / `FAIL LABEL: why`), exits 0 only when all
// passed. Values of secrets and tokens are never printed: only digests, counts and texts the
// bridge gave.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync, existsSync, readFileSync, renameSync, writeFileSync,
} from 'node:fs';

import {
  Agent, Checks, commandLine, descendants, expect, sleep, stillRunning, textOf,
} from './bridge-lib.mjs';
import { parseArgs } from './lib/common.mjs';

const spec = {
  scenario: { type: 'string', arg: 'poll|rotate|login|stepup|storm', help: 'what to run' },
  bridge: { type: 'string', arg: 'JSON-ARGV', help: 'the bridge to run (serve), a JSON array' },
  'bridge-auto': { type: 'string', arg: 'JSON-ARGV', help: 'stepup: the bridge on the configuration with autoAuth' },
  'bridge-log': { type: 'string', arg: 'PATH', help: "the bridge's stderr (poll with several bridges: PATH.1, PATH.2 ...)" },
  bridges: { type: 'int', default: 1, arg: 'N', help: 'poll: bridges run at once' },
  server: { type: 'string', arg: 'NAME', help: 'the entry name of the server under test' },
  tool: { type: 'string', arg: 'NAME', help: 'the tool called (its aggregate name, mcp_<server>_<tool>)' },
  interval: { type: 'int', default: 300, arg: 'MS', help: 'poll, rotate: time between calls' },
  duration: { type: 'int', default: 60, arg: 'SECONDS', help: 'poll: how long to call' },
  ttl: { type: 'int', default: 3, arg: 'SECONDS', help: 'poll: access token lifetime; rotate: the secret TTL' },
  'min-tokens': { type: 'int', default: 15, arg: 'N', help: 'poll: distinct tokens the resource server must have accepted' },
  'min-refreshes': { type: 'int', default: 0, arg: 'N', help: 'poll: refresh_token grants the authorization server must have seen' },
  as: { type: 'string', arg: 'URL', help: 'the authorization server (auth-server.mjs)' },
  rs: { type: 'string', arg: 'URL', help: "the MCP server's URL (mcp-resource-server.mjs or seam-header-server.mjs)" },
  'browser-marker': { type: 'string', arg: 'PATH', help: 'a file that gets one line each time $BROWSER is started' },
  'browser-closed': { type: 'string', arg: 'PATH', help: 'a file that gets one line each time $BROWSER ends' },
  'mcp-auth': { type: 'string', arg: 'PATH', help: 'mcp-auth, to sign in from outside the bridge and read its status' },
  'auth-config': { type: 'string', arg: 'PATH', help: 'the configuration the bridge was given (for mcp-auth --config)' },
  'mcp-auth-runs': { type: 'string', arg: 'PATH', help: "the log of the bridge's mcp-auth wrapper: one line \"MS ARGS...\" per run" },
  'secrets-runs': { type: 'string', arg: 'PATH', help: "the log of the bridge's secrets wrapper" },
  'command-runs': { type: 'string', arg: 'PATH', help: 'rotate: a file that gets one line each time the secret command runs' },
  'value-file': { type: 'string', arg: 'PATH', help: 'rotate: the file the secret command reads; the value is $SEAM_ROT_PREFIX-N' },
  bumps: { type: 'int', default: 4, arg: 'N', help: 'rotate: how many new values' },
  'login-log': { type: 'string', arg: 'PATH', help: "login: the outside sign-in's stderr" },
  'stepup-tool': { type: 'string', default: 'admin', arg: 'NAME', help: 'stepup: the tool (as the server names it) that needs the scope' },
  'stepup-scope': { type: 'string', default: 'mcp:admin', arg: 'SCOPE', help: 'stepup: the scope it needs' },
  'max-logins': { type: 'int', default: 3, arg: 'N', help: "storm: the storm brake's sign-ins" },
};
const usage = 'The agent of tests/integration/bridge_seam.sh (see the comment at the top of this file and tests/peers/README.md).';
const opts = parseArgs(spec, process.argv.slice(2), usage);
const checks = new Checks();

// ---- helpers -----------------------------------------------------------------------------------

const digest = (value) => createHash('sha256').update(value).digest('hex').slice(0, 16);
const origin = (url) => new URL(url).origin;

async function getJson(url) {
  const r = await fetch(url, { signal: AbortSignal.timeout(10000) });
  expect(r.ok, `GET ${url}: HTTP ${r.status}`);
  return r.json();
}

async function post(url) {
  const r = await fetch(url, { method: 'POST', signal: AbortSignal.timeout(10000) });
  expect(r.ok, `POST ${url}: HTTP ${r.status}`);
}

function lines(path) {
  if (!path || !existsSync(path)) return [];
  return readFileSync(path, 'utf8').split('\n').filter(Boolean);
}

// the runs of the bridge's mcp-auth since `since` (ms) whose arguments contain word
function authRuns(word, since = 0) {
  return lines(opts.mcpAuthRuns).filter((l) => {
    const [t, ...args] = l.split(' ');
    return Number(t) >= since && args.includes(word);
  });
}

const browserOpens = () => lines(opts.browserMarker).length;

function bridgeArgv(text = opts.bridge) {
  expect(text, '--bridge is required');
  return JSON.parse(text);
}

function short(text, n = 400) {
  const t = String(text ?? '').replace(/\s+/g, ' ');
  return t.length > n ? `${t.slice(0, n)}...` : t;
}

// runs PROGRAM ARGS (no shell), at most ms; resolves to {code, stdout, stderr}
function runProgram(argv, ms, stderrPath) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (stderrPath) writeFileSync(stderrPath, stderr, { flag: 'a' });
      resolve({ code: signal ? `signal ${signal}` : code, stdout, stderr });
    });
  });
}

function authStatus() {
  return new Promise((resolve, reject) => {
    execFile(opts.mcpAuth, ['--config', opts.authConfig, 'status', '--json', opts.server],
      { timeout: 15000 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`mcp-auth status failed: ${err.message} ${stderr}`));
        else resolve(JSON.parse(stdout));
      });
  });
}

async function connect(label, argv, stderrPath) {
  const a = new Agent(label);
  await a.connect({ kind: 'stdio', argv, stderrPath }, { timeoutMs: 30000 });
  return a;
}

async function listNames(a) {
  const r = await a.request('tools/list', {});
  return r.tools.map((t) => t.name);
}

// Every call's outcome, one JSON line each, in BRIDGE-LOG.calls: the error results are among the
// places the canary checks search.
function logCall(a, name, r) {
  if (!opts.bridgeLog) return;
  const line = { t: Date.now(), bridge: a.label, tool: name, ok: r.ok, isError: r.isError, text: r.text, error: r.error, ms: r.ms };
  appendFileSync(`${opts.bridgeLog}.calls`, `${JSON.stringify(line)}\n`);
}

// a call that never throws: {ok, isError, text, result, error, ms}
async function call(a, name, args = {}, timeout = 10000) {
  const t = Date.now();
  let r;
  try {
    const result = await a.call(name, args, { timeout });
    r = { ok: !result.isError, isError: !!result.isError, text: textOf(result), result, ms: Date.now() - t };
  } catch (err) {
    r = { ok: false, isError: false, error: String(err?.message ?? err), text: '', ms: Date.now() - t };
  }
  logCall(a, name, r);
  return r;
}

const why = (r) => (r.error ? `error: ${short(r.error)}` : `isError: ${short(r.text)}`);

// The last check of a bridge: it exits 0 at the end of its stdin, leaving no process behind.
async function cleanExit(a) {
  await checks.run(`${a.label} exits 0 at the end of stdin, leaving no process behind`, async () => {
    expect(a.child?.proc, 'the bridge never started');
    const kids = descendants(a.child.pid);
    const cmds = Object.fromEntries(kids.map((p) => [p, commandLine(p)]));
    await a.close();
    const { code, signal } = a.child.exit ?? {};
    expect(!a.child.killedAfterClose, 'the bridge did not exit within 12 s of the end of its stdin');
    expect(code === 0 && signal === null, `the bridge ended with ${signal ? `signal ${signal}` : `status ${code}`}`);
    const left = stillRunning(kids);
    expect(left.length === 0, `processes of the bridge still run: ${left.map((p) => `${p} ${cmds[p]}`).join('; ')}`);
  }, 20000);
}

// text of the bridge's log(s)
function logText(path) {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

// the scopes in `--scope "..."` of an error text naming `mcp-auth ... NAME --scope "..."`
function stepUpScopes(text, server) {
  const m = /mcp-auth\b[^\n]*?\s(\S+)\s+--scope\s+"([^"]*)"/.exec(text);
  if (!m) return null;
  const name = m[1].replace(/^'|'$/g, '');
  return name === server ? m[2].split(/\s+/).filter(Boolean) : null;
}

// ---- poll --------------------------------------------------------------------------------------

async function scenarioPoll() {
  const n = opts.bridges;
  const rsStats = `${origin(opts.rs)}/__test/stats`;
  const agents = [];
  const listed = await checks.run(`${n} bridge(s) on serve list ${opts.tool}`, async () => {
    await post(`${opts.as}/__test/reset`);
    await post(`${origin(opts.rs)}/__test/reset`);
    for (let i = 0; i < n; i++) {
      agents.push(await connect(n > 1 ? `bridge ${i + 1}` : 'the bridge', bridgeArgv(),
        n > 1 ? `${opts.bridgeLog}.${i + 1}` : opts.bridgeLog));
    }
    for (const a of agents) {
      const names = await listNames(a);
      expect(names.includes(opts.tool), `${a.label} lists ${JSON.stringify(names)}, not ${opts.tool}`);
    }
  }, 40000);
  if (!listed) return agents;

  const opened = browserOpens();
  const t0 = Date.now();
  const end = t0 + opts.duration * 1000;
  const per = agents.map(() => ({ calls: 0, failed: 0, failures: [], maxMs: 0 }));
  await Promise.all(agents.map(async (a, i) => {
    const s = per[i];
    let next = Date.now();
    while (Date.now() < end) {
      const r = await call(a, opts.tool);
      s.calls += 1;
      s.maxMs = Math.max(s.maxMs, r.ms);
      if (!r.ok) {
        s.failed += 1;
        if (s.failures.length < 5) s.failures.push(`at ${((Date.now() - t0) / 1000).toFixed(1)} s: ${why(r)}`);
      }
      next += opts.interval;
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      else next = Date.now();
    }
  }));
  const elapsed = (Date.now() - t0) / 1000;
  const expected = Math.floor((opts.duration * 1000) / opts.interval);

  for (const [i, a] of agents.entries()) {
    const s = per[i];
    await checks.run(`${a.label}: ${s.calls} calls in ${elapsed.toFixed(0)} s, none failed (slowest ${s.maxMs} ms)`, async () => {
      expect(s.failed === 0, `${s.failed} of ${s.calls} calls failed; the first: ${s.failures.join(' | ')}`);
      expect(s.calls >= expected * 0.75, `only ${s.calls} calls, expected about ${expected} (calls were slow)`);
      expect(s.maxMs < 2500, `the slowest call took ${s.maxMs} ms: calls waited for credentials`);
    });
  }
  // the provider's and the server's view, read at once (before the last calls add to them)
  let as;
  let rs;
  await checks.run('the counters of the authorization server and the MCP server', async () => {
    as = await getJson(`${opts.as}/__test/stats`);
    rs = await getJson(rsStats);
  });
  if (as && rs) {
    const refreshes = as.refresh_token_grants;
    const left = as.refresh_log.map((e) => e.left_ms).filter((v) => v !== null);
    process.stdout.write(`note: ${refreshes} refreshes (the last token had ${left.length ? `${Math.min(...left)}..${Math.max(...left)}` : '?'} ms left), ${rs.distinct_tokens} distinct tokens accepted, `
      + `${rs.unauthorized} 401s, token requests ${JSON.stringify(as.token_requests)}, errors ${JSON.stringify(as.token_errors)}\n`);
    await checks.run(`at least ${opts.minTokens} distinct tokens accepted by the MCP server (${rs.distinct_tokens})`, async () => {
      expect(rs.distinct_tokens >= opts.minTokens, `the MCP server accepted ${rs.distinct_tokens} distinct tokens in ${elapsed.toFixed(0)} s, expected at least ${opts.minTokens} (tokens live ${opts.ttl} s)`);
    });
    await checks.run(`at least ${opts.minRefreshes} refreshes at the authorization server (${refreshes})`, async () => {
      expect(refreshes >= opts.minRefreshes, `${refreshes} refresh_token grants, expected at least ${opts.minRefreshes}; token requests ${JSON.stringify(as.token_requests)}, errors ${JSON.stringify(as.token_errors)}`);
    });
    await checks.run('one refresh per token lifetime: none before the token was due, no refresh token used twice', async () => {
      const early = as.refresh_log.filter((e) => e.left_ms !== null && e.left_ms > 2500);
      expect(as.refresh_token_reuse === 0, `${as.refresh_token_reuse} refresh token(s) presented again after rotation`);
      expect(early.length === 0, `${early.length} of ${refreshes} refreshes came while the last token still had more than 2.5 s of its ${opts.ttl} s (ms left: ${early.map((e) => e.left_ms).join(', ')}): several refreshes in one lifetime`);
      expect(refreshes <= Math.ceil(elapsed) + 2, `${refreshes} refreshes in ${elapsed.toFixed(0)} s`);
      expect((as.token_errors.refresh_token ?? 0) === 0, `${as.token_errors.refresh_token} refresh requests failed`);
      expect(as.grant_revocations === 0, `${as.grant_revocations} grant(s) revoked`);
    });
    // Refreshed ahead of expiry, requests do not carry an expired token: a bridge that refreshed
    // only after a 401 would meet one at every expiry. (With 3 s tokens and the 1 s skew, a
    // refresh slowed down by a loaded machine can still end after the expiry, now and then:
    // the bridge then refreshes and retries, and the call does not fail.)
    await checks.run(`requests carry tokens refreshed ahead of expiry (401s: ${rs.unauthorized}, at most one in ten expiries)`, async () => {
      const allowed = Math.max(1, Math.floor(refreshes / 10));
      expect(rs.unauthorized <= allowed, `the MCP server answered 401 ${rs.unauthorized} times in ${refreshes} expiries`);
    });
  }
  await checks.run('no browser opened while calling', async () => {
    const now = browserOpens();
    expect(now === opened, `$BROWSER was started ${now - opened} time(s)`);
  });
  for (const a of agents) {
    await checks.run(`${a.label}: the grant is alive at the end (a last call succeeds)`, async () => {
      const r = await call(a, opts.tool);
      expect(r.ok, why(r));
    });
  }
  for (const [i, a] of agents.entries()) {
    const text = logText(n > 1 ? `${opts.bridgeLog}.${i + 1}` : opts.bridgeLog);
    const refreshed = (text.match(/credentials refreshed/g) ?? []).length;
    // why a helper failed, when it did (the words after "mcp-auth failed", once each)
    const failures = [...new Set((text.match(/mcp-auth failed[^;\n]*/g) ?? []))];
    process.stdout.write(`note: ${a.label} logged "credentials refreshed" ${refreshed} time(s)${failures.length ? `; helper failures: ${failures.slice(0, 3).join(' | ')}` : ''}\n`);
  }
  return agents;
}

// ---- rotate ------------------------------------------------------------------------------------

async function scenarioRotate() {
  const prefix = process.env.SEAM_ROT_PREFIX;
  const bearer = process.env.SEAM_STATIC_TOKEN;
  expect(prefix && bearer, 'SEAM_ROT_PREFIX and SEAM_STATIC_TOKEN must be set');
  const value = (k) => `${prefix}-${k}`;
  const setValue = (k) => {
    writeFileSync(`${opts.valueFile}.tmp`, `${value(k)}\n`, { mode: 0o600 });
    renameSync(`${opts.valueFile}.tmp`, opts.valueFile);
  };
  const key = (r) => r.result?.structuredContent?.headers?.['x-api-key'];
  const index = new Map(Array.from({ length: opts.bumps + 1 }, (_, k) => [digest(value(k)), k]));
  setValue(0);
  const t0 = Date.now();
  const secretsBefore = lines(opts.secretsRuns).length;
  const commandBefore = lines(opts.commandRuns).length;
  let a;
  const up = await checks.run('the bridge lists the header server\'s tool and the stdio server\'s', async () => {
    a = await connect('the bridge', bridgeArgv(), opts.bridgeLog);
    const names = await listNames(a);
    expect(names.includes(opts.tool), `tools: ${JSON.stringify(names)}`);
    expect(names.includes('mcp_local_pid'), `tools: ${JSON.stringify(names)} (no stdio server)`);
  }, 40000);
  if (!up) return [a].filter(Boolean);
  let failed = 0;
  let regressions = 0;
  const failures = [];
  let newest = 0;
  const note = (r) => {
    if (!r.ok) {
      failed += 1;
      if (failures.length < 5) failures.push(why(r));
      return undefined;
    }
    const k = index.get(key(r));
    if (k === undefined) {
      failed += 1;
      if (failures.length < 5) failures.push(`the server saw an X-Api-Key that is none of the values (digest ${key(r)})`);
      return undefined;
    }
    if (k < newest) regressions += 1;
    newest = Math.max(newest, k);
    return k;
  };
  await checks.run('the first call carries the secret in X-Api-Key and the bearer token from bearerTokenEnv', async () => {
    const r = await call(a, opts.tool);
    expect(r.ok, why(r));
    expect(key(r) === digest(value(0)), `X-Api-Key digest ${key(r)}, expected ${digest(value(0))} (the first value)`);
    const auth = r.result.structuredContent.headers.authorization;
    expect(auth === digest(`Bearer ${bearer}`), `Authorization digest ${auth}, expected that of "Bearer $SEAM_STATIC_TOKEN"`);
    note(r);
  });
  await checks.run("the stdio server's environment holds neither secret", async () => {
    const r = await call(a, 'mcp_local_pid');
    expect(r.ok, why(r));
    const pid = r.result.structuredContent?.pid;
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8');
    expect(!env.includes(bearer), 'the bearer token (SEAM_STATIC_TOKEN) is in its environment');
    expect(!env.includes(prefix), 'the rotating secret is in its environment');
  });
  const bound = opts.ttl * 1000 + 1500; // one TTL, plus expiry's one-second granularity and a call interval
  for (let k = 1; k <= opts.bumps; k++) {
    // a different phase against the TTL each time
    await sleep(400 + 350 * k);
    setValue(k);
    const t = Date.now();
    let seenAt;
    while (Date.now() - t < bound + 3000) {
      const r = await call(a, opts.tool);
      if (note(r) === k) {
        seenAt = Date.now() - t;
        break;
      }
      await sleep(opts.interval);
    }
    await checks.run(`value ${k} reaches the server within one TTL (${seenAt === undefined ? 'never' : `after ${seenAt} ms`}; bound ${bound} ms)`, async () => {
      expect(seenAt !== undefined, `the server never saw value ${k} within ${(bound + 3000) / 1000} s`);
      expect(seenAt <= bound, `the server saw value ${k} ${seenAt} ms after it changed, more than one TTL (${opts.ttl} s)`);
    });
  }
  const elapsed = (Date.now() - t0) / 1000;
  await checks.run('no call failed, and no call carried an older value after a newer one', async () => {
    expect(failed === 0, `${failed} calls failed: ${failures.join(' | ')}`);
    expect(regressions === 0, `${regressions} calls carried an older value after a newer one`);
  });
  await checks.run('the server saw the values in order, each from the moment the next came no more', async () => {
    const st = await getJson(`${origin(opts.rs)}/__test/stats`);
    const seq = st.seen['x-api-key'].map((e) => ({ ...e, k: index.get(e.hash) }));
    const ks = seq.map((e) => e.k ?? (e.hash === null ? 'none' : 'unknown'));
    expect(JSON.stringify(ks) === JSON.stringify([...index.values()]), `the X-Api-Key values seen, in order: ${JSON.stringify(ks)}`);
    for (let i = 1; i < seq.length; i++) {
      expect(seq[i - 1].last_ms <= seq[i].first_ms, `value ${seq[i - 1].k} came ${seq[i - 1].last_ms - seq[i].first_ms} ms after value ${seq[i].k}`);
    }
    process.stdout.write(`note: the header server had ${st.initializations} session(s), ${st.requests} requests\n`);
  });
  await checks.run('helpers run once per expiry, not in a loop', async () => {
    const secretsRuns = lines(opts.secretsRuns).length - secretsBefore;
    const commandRuns = lines(opts.commandRuns).length - commandBefore;
    process.stdout.write(`note: ${secretsRuns} secrets runs and ${commandRuns} command runs in ${elapsed.toFixed(1)} s\n`);
    expect(secretsRuns <= 2 * Math.ceil(elapsed) + 4, `${secretsRuns} secrets runs in ${elapsed.toFixed(1)} s`);
    expect(commandRuns <= Math.ceil(elapsed / opts.ttl) + 3, `the command ran ${commandRuns} times in ${elapsed.toFixed(1)} s with a ${opts.ttl} s TTL`);
    expect(commandRuns >= opts.bumps + 1, `the command ran ${commandRuns} times, fewer than the ${opts.bumps + 1} values`);
  });
  await checks.run('the same bridge throughout (no restart, the connection never closed)', async () => {
    expect(!a.closed && a.child.exit === null, 'the bridge exited');
  });
  return [a];
}

// ---- login -------------------------------------------------------------------------------------

const commandRe = (server) => new RegExp(`mcp-auth\\b[^\\n]*?\\s'?${server.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'?(?=[\\s'".,:;)]|$)`);

async function scenarioLogin() {
  const t0 = Date.now();
  let a;
  const up = await checks.run('the bridge starts with no token stored', async () => {
    a = await connect('the bridge', bridgeArgv(), opts.bridgeLog);
    const names = await listNames(a);
    process.stdout.write(`note: tools before the sign-in: ${JSON.stringify(names)}\n`);
  }, 40000);
  if (!up) return [a].filter(Boolean);
  let first;
  await checks.run(`a call says the server needs a sign-in, naming 'mcp-auth ${opts.server}'`, async () => {
    first = await call(a, opts.tool);
    expect(!first.error, `a JSON-RPC error instead of an isError result: ${short(first.error)}`);
    expect(first.isError, `the call succeeded without a token: ${short(first.text)}`);
    expect(commandRe(opts.server).test(first.text), `the text does not name 'mcp-auth ${opts.server}': ${short(first.text)}`);
    process.stdout.write(`note: the text: ${short(first.text)}\n`);
  });
  await checks.run('the command in the text carries the --config the bridge was given', async () => {
    expect(first?.text?.includes(opts.authConfig), `no '${opts.authConfig}' in: ${short(first?.text)}`);
  });
  await checks.run('calls for 3.5 s keep saying so, and nothing loops', async () => {
    const end = Date.now() + 3500;
    while (Date.now() < end) {
      const r = await call(a, opts.tool);
      expect(r.isError && commandRe(opts.server).test(r.text), `a call ${why(r)}${r.ok ? ' (succeeded)' : ''}`);
      await sleep(opts.interval);
    }
    const elapsed = (Date.now() - t0) / 1000;
    const headers = authRuns('header', t0).length;
    expect(headers <= Math.floor(elapsed / 3) + 2, `mcp-auth header ran ${headers} times in ${elapsed.toFixed(1)} s (at most once every 3 s)`);
    expect(authRuns('login', t0).length === 0, 'the bridge ran mcp-auth login without autoAuth');
    const rs = await getJson(`${origin(opts.rs)}/__test/stats`);
    expect(rs.requests <= Math.floor(elapsed / 3) + 4, `the MCP server got ${rs.requests} requests in ${elapsed.toFixed(1)} s without a token`);
  }, 30000);
  const mark = a.mark();
  const login = await runProgram([opts.mcpAuth, '--config', opts.authConfig, 'login', opts.server, '--timeout', '90s'], 100000, opts.loginLog);
  const tLogin = Date.now();
  const signed = await checks.run('mcp-auth login from outside, through the headless browser', async () => {
    expect(login.code === 0, `mcp-auth login exited ${login.code}: ${short(login.stderr)}`);
  });
  if (!signed) return [a];
  let ok;
  await checks.run('a call succeeds within a few seconds, with no restart', async () => {
    while (Date.now() - tLogin < 10000) {
      const r = await call(a, opts.tool);
      if (r.ok) {
        ok = Date.now() - tLogin;
        expect(JSON.parse(r.text).sub === 'test-user', `whoami: ${short(r.text)}`);
        break;
      }
      await sleep(opts.interval);
    }
    expect(ok !== undefined, 'no call succeeded within 10 s of the sign-in');
    expect(ok <= 3000 + 4000, `the first call succeeded ${ok} ms after the sign-in (the bridge asks again every 3 s)`);
    expect(!a.closed && a.child.exit === null, 'the bridge exited');
    process.stdout.write(`note: the first call succeeded ${ok} ms after the sign-in\n`);
  }, 20000);
  await checks.run('the agent is told tools/list_changed, and the tool is listed', async () => {
    await a.waitFor((m) => m.method === 'notifications/tools/list_changed', mark, 5000, 'notifications/tools/list_changed');
    const names = await listNames(a);
    expect(names.includes(opts.tool), `tools: ${JSON.stringify(names)}`);
  });
  await checks.run('"login required" logged at most once for the episode', async () => {
    // the warning that names the command to run, whatever its words
    const warned = logText(opts.bridgeLog).split('\n')
      .filter((l) => /warning/.test(l) && commandRe(opts.server).test(l));
    expect(warned.length >= 1, 'no warning names the command to run');
    expect(warned.length <= 1, `${warned.length} warnings: ${warned.slice(0, 4).join(' | ')}`);
  });
  return [a];
}

// ---- stepup ------------------------------------------------------------------------------------

async function scenarioStepup() {
  const agents = [];
  const t0 = Date.now();
  const who = `mcp_${opts.server}_whoami`;
  const tool = `mcp_${opts.server}_${opts.stepupTool}`;
  let granted = [];
  await checks.run('a sign-in without the wider scope is stored', async () => {
    const st = await authStatus();
    granted = (st.servers[0]?.scope ?? '').split(' ').filter(Boolean);
    expect(!granted.includes(opts.stepupScope), `the stored sign-in already has ${opts.stepupScope}: ${granted.join(' ')}`);
  });
  const opened = browserOpens();
  let a;
  const up = await checks.run('without autoAuth: the bridge lists both tools, and whoami works', async () => {
    a = await connect('the bridge (no autoAuth)', bridgeArgv(), opts.bridgeLog);
    agents.push(a);
    const names = await listNames(a);
    expect(names.includes(tool) && names.includes(who), `tools: ${JSON.stringify(names)}`);
    const r = await call(a, who);
    expect(r.ok, why(r));
  }, 40000);
  if (!up) return agents;
  await checks.run(`the call of ${tool} names mcp-auth ${opts.server} --scope "granted + ${opts.stepupScope}"`, async () => {
    const r = await call(a, tool);
    expect(!r.error, `a JSON-RPC error instead of an isError result: ${short(r.error)}`);
    expect(r.isError, `the call succeeded without the scope: ${short(r.text)}`);
    const scopes = stepUpScopes(r.text, opts.server);
    expect(scopes, `the text does not name 'mcp-auth ${opts.server} --scope "..."': ${short(r.text)}`);
    const missing = [...granted, opts.stepupScope].filter((s) => !scopes.includes(s));
    expect(missing.length === 0, `--scope "${scopes.join(' ')}" lacks ${missing.join(' ')} (granted: ${granted.join(' ')})`);
    process.stdout.write(`note: the text: ${short(r.text)}\n`);
  });
  await checks.run('no sign-in without autoAuth, and the other tool still works', async () => {
    expect(browserOpens() === opened, 'the browser was opened');
    expect(authRuns('login', t0).length === 0, 'the bridge ran mcp-auth login');
    const r = await call(a, who);
    expect(r.ok, why(r));
  });
  await cleanExit(a);

  const t1 = Date.now();
  let b;
  const upB = await checks.run('with autoAuth: the bridge lists the tool', async () => {
    b = await connect('the bridge (autoAuth)', bridgeArgv(opts.bridgeAuto), `${opts.bridgeLog}.auto`);
    agents.push(b);
    const names = await listNames(b);
    expect(names.includes(tool), `tools: ${JSON.stringify(names)}`);
  }, 40000);
  if (!upB) return agents;
  await checks.run(`the call of ${tool} succeeds after the bridge's own mcp-auth login --scope`, async () => {
    const r = await call(b, tool, {}, 150000);
    expect(r.ok, why(r));
    const scope = r.result.structuredContent?.scope ?? '';
    expect(scope.split(' ').includes(opts.stepupScope), `the token's scope is '${scope}'`);
    const logins = authRuns('login', t1);
    expect(logins.length === 1, `the bridge ran mcp-auth login ${logins.length} times`);
    expect(/--scope/.test(logins[0]) && logins[0].includes(opts.stepupScope), `the bridge's login: ${logins[0]}`);
    expect(browserOpens() === opened + 1, `the browser was opened ${browserOpens() - opened} times`);
  }, 160000);
  await checks.run('the next call works with no other sign-in', async () => {
    const r = await call(b, tool);
    expect(r.ok, why(r));
    expect(authRuns('login', t1).length === 1, 'another sign-in');
  });
  return agents;
}

// ---- storm -------------------------------------------------------------------------------------

async function scenarioStorm() {
  const t0 = Date.now();
  let a;
  const up = await checks.run('with autoAuth: the bridge lists the tool of the server that always answers 403', async () => {
    a = await connect('the bridge', bridgeArgv(), opts.bridgeLog);
    const names = await listNames(a);
    expect(names.includes(opts.tool), `tools: ${JSON.stringify(names)}`);
  }, 40000);
  if (!up) return [a].filter(Boolean);
  const opened = browserOpens();
  const calls = [];
  let quiet = 0;
  for (let i = 0; i < 10 && quiet < 3; i++) {
    const before = authRuns('login', t0).length;
    const r = await call(a, opts.tool, {}, 150000);
    const logins = authRuns('login', t0).length - before;
    calls.push({ ...r, logins });
    process.stdout.write(`note: call ${i + 1}: ${r.ok ? 'ok' : why(r)} (${logins} sign-in(s), ${r.ms} ms)\n`);
    quiet = logins === 0 ? quiet + 1 : 0;
  }
  const logins = authRuns('login', t0).length;
  await checks.run(`at most ${opts.maxLogins} sign-ins by the bridge (${logins}), then none`, async () => {
    expect(logins >= 1, 'the bridge never signed in (autoAuth did nothing on a 403)');
    expect(logins <= opts.maxLogins, `the bridge signed in ${logins} times in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    expect(quiet >= 3, `the sign-ins did not stop: ${calls.map((c) => c.logins).join(', ')}`);
    expect(browserOpens() - opened === logins, `the browser opened ${browserOpens() - opened} times for ${logins} sign-ins`);
  });
  const last = calls[calls.length - 1];
  await checks.run('every call is an isError result; past the brake, the text names the command and the reason', async () => {
    for (const [i, c] of calls.entries()) {
      expect(c.isError, `call ${i + 1}: ${c.ok ? 'succeeded' : why(c)}`);
    }
    expect(commandRe(opts.server).test(last.text), `the last text does not name 'mcp-auth ${opts.server}': ${short(last.text)}`);
    expect(/\b3\b/.test(last.text) && /\b10 minutes\b/.test(last.text), `the last text does not give the brake as the reason (3 sign-ins in 10 minutes): ${short(last.text)}`);
    expect(last.ms < 3000, `the call past the brake took ${last.ms} ms`);
    process.stdout.write(`note: the text past the brake: ${short(last.text)}\n`);
  });
  // the contract: past the brake, the server is "login required": its calls get the sign-in text
  // ("server 'NAME' needs you to sign in: run 'mcp-auth NAME'"), with the reason
  await checks.run('past the brake, the server is "login required" (the sign-in text)', async () => {
    expect(/needs you to sign in|sign-in required|login required/i.test(last.text), `the text past the brake is not the "login required" one: ${short(last.text)}`);
  });
  return [a];
}

// ---- main --------------------------------------------------------------------------------------

const scenarios = {
  poll: scenarioPoll, rotate: scenarioRotate, login: scenarioLogin, stepup: scenarioStepup, storm: scenarioStorm,
};
const run = scenarios[opts.scenario];
if (!run) {
  process.stderr.write(`seam-agent: --scenario is one of ${Object.keys(scenarios).join(', ')}\n`);
  process.exit(2);
}
let agents = [];
try {
  agents = await run();
} catch (err) {
  checks.failed.push('scenario');
  process.stdout.write(`FAIL ${opts.scenario}: ${err?.stack ?? err}\n`);
}
// a sign-in's browser ends on its own shortly after the sign-in: wait for it
if (opts.browserClosed && browserOpens() > lines(opts.browserClosed).length) {
  await checks.run('the browsers started for sign-ins have closed', async () => {
    const end = Date.now() + 30000;
    while (browserOpens() > lines(opts.browserClosed).length) {
      expect(Date.now() < end, `${browserOpens() - lines(opts.browserClosed).length} browser(s) still open after 30 s`);
      await sleep(100);
    }
  }, 35000);
}
for (const a of agents) {
  if (a.child && a.child.exit === null) await cleanExit(a);
}
process.exit(checks.summary() ? 0 : 1);
