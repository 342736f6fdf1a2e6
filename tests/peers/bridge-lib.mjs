// Shared by the bridge's test drivers (bridge-agent.mjs, bridge-faults.mjs): an agent (the SDK's
// Client) that records every message it sends and receives, transports for it (a child process
// over stdio with its exit status, Streamable HTTP, legacy SSE), the comparison of two answers
// modulo volatile fields, and a check runner that prints one line per check.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, readdirSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';

export const Loose = z.looseObject({});

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- checks ------------------------------------------------------------------------------------

export class CheckFailure extends Error {}

export function fail(message) {
  throw new CheckFailure(message);
}

export function expect(cond, message) {
  if (!cond) fail(message);
}

// Runs checks one at a time, each bounded; prints "ok LABEL" or "FAIL LABEL: why". A failed
// check does not stop the run (later checks say more about what works), except when a check
// says the connection itself is gone.
export class Checks {
  constructor(prefix = '') {
    this.prefix = prefix;
    this.passed = 0;
    this.failed = [];
  }

  async run(label, fn, timeoutMs = 20000) {
    const name = `${this.prefix}${label}`;
    let timer;
    const t0 = Date.now();
    try {
      await Promise.race([
        fn(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new CheckFailure(`no result within ${timeoutMs / 1000} s`)), timeoutMs);
        }),
      ]);
      this.passed += 1;
      process.stdout.write(`ok ${name} (${Date.now() - t0} ms)\n`);
      return true;
    } catch (err) {
      // (a JSON-RPC error or a thrown exception: its message says it; a stack only for bugs here)
      const why = err instanceof CheckFailure ? err.message
        : `unexpected error: ${err?.code !== undefined || !err?.stack ? err?.message ?? err : err.stack}`;
      this.failed.push(name);
      process.stdout.write(`FAIL ${name}: ${why.replace(/\n/g, '\n    ')}\n`);
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  summary() {
    process.stdout.write(`checks: ${this.passed} passed, ${this.failed.length} failed\n`);
    return this.failed.length === 0;
  }
}

// ---- comparison --------------------------------------------------------------------------------

const TIME_RE = /\b\d{1,2}:\d{2}:\d{2}(?:\s?[AP]M)?/g;
const ISO_RE = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z/g;
const UUID_RE = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

// A copy with volatile parts replaced: clock times, timestamps and uuids (session ids) in
// strings; base64 blobs decoded first so that the text inside is normalised too.
export function normalize(v) {
  if (typeof v === 'string') {
    return v.replace(ISO_RE, '<timestamp>').replace(TIME_RE, '<time>').replace(UUID_RE, '<uuid>');
  }
  if (Array.isArray(v)) return v.map(normalize);
  if (v && typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === 'blob' && typeof x === 'string') out[k] = `base64:${normalize(Buffer.from(x, 'base64').toString('utf8'))}`;
      else out[k] = normalize(x);
    }
    return out;
  }
  return v;
}

function short(v) {
  const s = JSON.stringify(v);
  if (s === undefined) return 'undefined';
  return s.length > 300 ? `${s.slice(0, 300)}... (${s.length} chars)` : s;
}

// The first difference between a and b as "at PATH: got X, expected Y", or null.
export function firstDiff(got, want, path = '$') {
  if (isDeepStrictEqual(got, want)) return null;
  if (Array.isArray(got) && Array.isArray(want)) {
    for (let i = 0; i < Math.min(got.length, want.length); i++) {
      const d = firstDiff(got[i], want[i], `${path}[${i}]`);
      if (d) return d;
    }
    return `at ${path}: ${got.length} items, expected ${want.length}`;
  }
  if (got && want && typeof got === 'object' && typeof want === 'object' && !Array.isArray(got) && !Array.isArray(want)) {
    const keys = new Set([...Object.keys(got), ...Object.keys(want)]);
    for (const k of [...keys].sort()) {
      if (!(k in want)) return `at ${path}.${k}: unexpected member ${short(got[k])}`;
      if (!(k in got)) return `at ${path}.${k}: missing, expected ${short(want[k])}`;
      const d = firstDiff(got[k], want[k], `${path}.${k}`);
      if (d) return d;
    }
  }
  return `at ${path}: got ${short(got)}, expected ${short(want)}`;
}

// Fails unless the bridged answer equals the direct one (both normalised).
export function expectSame(bridged, direct, what = 'the answer') {
  const d = firstDiff(normalize(bridged), normalize(direct));
  if (d) fail(`${what} through the bridge differs from the direct one ${d}`);
}

export function textOf(result) {
  return (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

// ---- names -------------------------------------------------------------------------------------

// The name a tool or prompt gets in aggregate mode with toolPrefix "server" (naming.h), for
// names short enough not to need the hash.
export function exposeName(server, name) {
  const full = `mcp_${server}_${name}`;
  const out = Buffer.from(full, 'utf8').toString('utf8').replace(/[^A-Za-z0-9_-]/gu, '_');
  if (Buffer.byteLength(out) > 64) throw new Error(`exposeName: '${full}' is too long for this test`);
  return out;
}

// ---- transports --------------------------------------------------------------------------------

// Every ChildTransport still running is killed (its whole process group) when this process
// exits, however it exits.
const children = new Set();
process.on('exit', () => {
  for (const c of children) c.kill();
});

// A process speaking MCP on its stdin/stdout (newline framing), for the bridge itself and for
// stdio servers reached directly. Keeps the exit status; stderr goes to a file or is inherited.
export class ChildTransport {
  constructor(argv, { env, cwd, stderrPath, closeTimeoutMs = 12000 } = {}) {
    this.argv = argv;
    this.env = env;
    this.cwd = cwd;
    this.stderrPath = stderrPath;
    this.closeTimeoutMs = closeTimeoutMs;
    this.readBuffer = new ReadBuffer({ maxBufferSize: 64 << 20 });
    this.exit = null; // {code, signal} once exited
    this.exited = new Promise((resolve) => {
      this._resolveExit = resolve;
    });
  }

  get pid() {
    return this.proc?.pid;
  }

  async start() {
    let errFd;
    if (this.stderrPath) errFd = openSync(this.stderrPath, 'a');
    // its own process group: what it leaves behind can be killed with it
    this.proc = spawn(this.argv[0], this.argv.slice(1), {
      stdio: ['pipe', 'pipe', errFd ?? 'inherit'],
      env: this.env ?? process.env,
      cwd: this.cwd,
      detached: true,
    });
    if (errFd !== undefined) closeSync(errFd);
    children.add(this);
    await new Promise((resolve, reject) => {
      this.proc.once('spawn', resolve);
      this.proc.once('error', reject);
    });
    this.proc.on('exit', (code, signal) => {
      children.delete(this);
      this.exit = { code, signal };
      this._resolveExit(this.exit);
    });
    this.proc.stdout.on('end', () => this.onclose?.());
    this.proc.stdin.on('error', (err) => this.onerror?.(err));
    this.proc.stdout.on('data', (chunk) => {
      try {
        this.readBuffer.append(chunk);
        for (;;) {
          const msg = this.readBuffer.readMessage();
          if (msg === null) break;
          this.onmessage?.(msg);
        }
      } catch (err) {
        this.onerror?.(err);
      }
    });
  }

  send(message) {
    return new Promise((resolve, reject) => {
      if (!this.proc || this.proc.stdin.destroyed) {
        reject(new Error('not connected'));
        return;
      }
      if (this.proc.stdin.write(serializeMessage(message))) resolve();
      else this.proc.stdin.once('drain', resolve);
    });
  }

  // SIGKILL to its process group.
  kill() {
    try {
      process.kill(-this.proc.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }

  // Ends stdin and waits for the process to exit (at most closeTimeoutMs, then SIGKILL).
  async close() {
    if (!this.proc) return;
    this.proc.stdin.end();
    if (!this.exit) {
      let timer;
      const done = await Promise.race([
        this.exited.then(() => true),
        new Promise((resolve) => {
          timer = setTimeout(() => resolve(false), this.closeTimeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (!done) {
        this.killedAfterClose = true;
        this.kill();
        await this.exited;
      }
    }
  }
}

// Wraps a transport and records every message: {dir: 'in'|'out', t, msg}.
class RecordingTransport {
  constructor(inner, record) {
    this.inner = inner;
    this.record = record;
  }

  get sessionId() {
    return this.inner.sessionId;
  }

  get protocolVersion() {
    return this.inner.protocolVersion;
  }

  setProtocolVersion(v) {
    this.inner.setProtocolVersion?.(v);
  }

  async start() {
    this.inner.onmessage = (msg, extra) => {
      this.record('in', msg);
      this.onmessage?.(msg, extra);
    };
    this.inner.onclose = () => this.onclose?.();
    this.inner.onerror = (err) => this.onerror?.(err);
    await this.inner.start();
  }

  async send(msg, opts) {
    this.record('out', msg);
    await this.inner.send(msg, opts);
  }

  async close() {
    await this.inner.close();
  }
}

// transport spec: {kind: 'stdio', argv, env?, stderrPath?} | {kind: 'http', url} | {kind: 'sse', url}
export function parseSpec(text) {
  const i = text.indexOf(':');
  const kind = text.slice(0, i);
  const rest = text.slice(i + 1);
  if (kind === 'stdio') return { kind, argv: JSON.parse(rest) };
  if (kind === 'http' || kind === 'sse') return { kind, url: rest };
  throw new Error(`bad transport spec '${text}': stdio:["cmd",...], http:URL or sse:URL`);
}

// ---- the agent ---------------------------------------------------------------------------------

export const AGENT_CAPABILITIES = { roots: { listChanged: true }, sampling: {}, elicitation: {} };

// An MCP client as an agent is one: declares roots, sampling and elicitation and answers them
// (roots from this.roots; sampling with a canned answer naming the prompt; elicitation with
// this.elicitAnswer), and records every message both ways.
export class Agent {
  constructor(label) {
    this.label = label;
    this.log = []; // {dir, t, msg}
    this.errors = [];
    this.roots = [{ uri: 'file:///agent/root-one', name: 'root one' }];
    this.rootsCalls = 0;
    this.samplingRequests = [];
    this.elicitRequests = [];
    this.elicitAnswer = () => ({ action: 'accept', content: { name: 'Ada Lovelace', check: true, integer: 7 } });
    this.waiters = new Set();
    this.closed = false;
    this.rawIds = new Set(); // ids of requests sent past the SDK (rawRequest)
  }

  record(dir, msg) {
    this.log.push({ dir, t: Date.now(), msg });
    if (dir === 'in') {
      for (const w of this.waiters) w();
    }
  }

  async connect(spec, { timeoutMs = 20000, closeTimeoutMs, capabilities = AGENT_CAPABILITIES } = {}) {
    if (spec.kind === 'stdio') {
      this.child = new ChildTransport(spec.argv, {
        env: spec.env, cwd: spec.cwd, stderrPath: spec.stderrPath, closeTimeoutMs,
      });
      this.inner = this.child;
    } else if (spec.kind === 'http') {
      this.inner = new StreamableHTTPClientTransport(new URL(spec.url));
    } else {
      this.inner = new SSEClientTransport(new URL(spec.url));
    }
    this.transport = new RecordingTransport(this.inner, (dir, msg) => this.record(dir, msg));
    this.client = new Client({ name: 'bridge-agent', version: '1.0.0' }, { capabilities });
    this.client.onerror = (err) => this.errors.push(String(err?.message ?? err));
    this.client.onclose = () => {
      this.closed = true;
      for (const w of this.waiters) w();
    };
    // (the SDK takes a handler only for a capability declared)
    if (capabilities.roots) {
      this.client.setRequestHandler(ListRootsRequestSchema, async () => {
        this.rootsCalls += 1;
        return { roots: this.roots };
      });
    }
    if (capabilities.sampling) {
      this.client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
        this.samplingRequests.push(req.params);
        const first = req.params.messages?.[0]?.content;
        return {
          model: 'bridge-agent-model',
          role: 'assistant',
          stopReason: 'endTurn',
          content: { type: 'text', text: `sampled: ${first?.text ?? ''}` },
        };
      });
    }
    if (capabilities.elicitation) {
      this.client.setRequestHandler(ElicitRequestSchema, async (req) => {
        this.elicitRequests.push(req.params);
        return this.elicitAnswer(req.params);
      });
    }
    await this.client.connect(this.transport, { timeout: timeoutMs });
    this.init = this.log.find((e) => e.dir === 'in' && e.msg.result?.protocolVersion)?.msg.result;
  }

  // A request with the raw result (nothing stripped).
  request(method, params, opts = {}) {
    return this.client.request({ method, params }, Loose, { timeout: 30000, ...opts });
  }

  // A request sent past the SDK with an id of our choosing (a string, say); resolves to the
  // whole response (result or error) within ms.
  async rawRequest(id, method, params, ms = 15000) {
    this.rawIds.add(JSON.stringify(id));
    const since = this.mark();
    await this.transport.send({ jsonrpc: '2.0', id, method, params });
    return this.waitFor((m) => m.id === id && ('result' in m || 'error' in m), since, ms, `the answer to request id ${JSON.stringify(id)}`);
  }

  call(name, args = {}, opts = {}) {
    return this.request('tools/call', { name, arguments: args }, opts);
  }

  // What the SDK reported as protocol errors, less one race of its own: it runs notification
  // handlers a tick later than responses, so a progress notification that arrives in the same
  // read as its result finds its token gone ("unknown token") - harmless when the token is one
  // the agent did send.
  protocolErrors() {
    const sent = new Set(this.log.filter((e) => e.dir === 'out' && e.msg.params?._meta?.progressToken !== undefined)
      .map((e) => JSON.stringify(e.msg.params._meta.progressToken)));
    return this.errors.filter((text) => {
      const r = /^Received a response for an unknown message ID: (.*)$/s.exec(text);
      if (r) {
        try {
          return !this.rawIds.has(JSON.stringify(JSON.parse(r[1]).id));
        } catch {
          return true;
        }
      }
      const m = /^Received a progress notification for an unknown token: (.*)$/s.exec(text);
      if (!m) return true;
      try {
        return !sent.has(JSON.stringify(JSON.parse(m[1]).params.progressToken));
      } catch {
        return true;
      }
    });
  }

  mark() {
    return this.log.length;
  }

  // Incoming messages since mark that satisfy pred.
  received(pred, since = 0) {
    return this.log.slice(since).filter((e) => e.dir === 'in' && pred(e.msg)).map((e) => e.msg);
  }

  // Waits (at most ms) for an incoming message since mark that satisfies pred; returns it.
  waitFor(pred, since, ms, what) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const hit = this.received(pred, since)[0];
        if (hit) {
          done();
          resolve(hit);
        } else if (this.closed) {
          done();
          reject(new CheckFailure(`${this.label}: the connection closed while waiting for ${what}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new CheckFailure(`${this.label}: no ${what} within ${ms / 1000} s`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  // Polls fn (async, returning truthy when done) every 100 ms for at most ms.
  async until(fn, ms, what) {
    const end = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (v) return v;
      if (Date.now() > end) fail(`${this.label}: ${what} did not happen within ${ms / 1000} s`);
      await sleep(100);
    }
  }

  async close() {
    try {
      await this.client?.close();
    } catch {
      // closing is best effort; the exit status says the rest
    }
    if (this.child) await this.child.close();
  }
}

// ---- processes ---------------------------------------------------------------------------------

function readStat(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0], ppid: Number(rest[1]), pgid: Number(rest[2]) };
  } catch {
    return null;
  }
}

// Every live descendant of pid (children, grandchildren ...), from /proc.
export function descendants(pid) {
  const byParent = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = readStat(Number(name));
    if (!st) continue;
    if (!byParent.has(st.ppid)) byParent.set(st.ppid, []);
    byParent.get(st.ppid).push(Number(name));
  }
  const out = [];
  const queue = [pid];
  while (queue.length) {
    const p = queue.shift();
    for (const c of byParent.get(p) ?? []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

// The pids of the list that still run (zombies count as gone: their parent is dead or reaping).
export function stillRunning(pids) {
  return pids.filter((p) => {
    const st = readStat(p);
    return st && st.state !== 'Z' && st.state !== 'X';
  });
}

export function commandLine(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}

export function processGroup(pid) {
  return readStat(pid)?.pgid;
}

// The last check of a driver: closes the bridge's stdin (Agent.close) and expects the bridge to
// exit 0 by itself and none of its processes (children, grandchildren) to outlive it.
export function checkCleanExit(checks, agent) {
  return checks.run('the bridge exits 0 at the end of stdin, leaving no process behind', async () => {
    expect(agent.child?.proc, 'the bridge never started');
    const kids = descendants(agent.child.pid);
    const cmds = Object.fromEntries(kids.map((p) => [p, commandLine(p)]));
    await agent.close();
    const { code, signal } = agent.child.exit ?? {};
    expect(!agent.child.killedAfterClose, 'the bridge did not exit within 12 s of the end of its stdin');
    expect(code === 0 && signal === null, `the bridge ended with ${signal ? `signal ${signal}` : `status ${code}`}`);
    const left = stillRunning(kids);
    expect(left.length === 0, `processes of the bridge still run: ${left.map((p) => `${p} ${cmds[p]}`).join('; ')}`);
  }, 20000);
}

// Reads a bridge-tap.mjs log: [{t, dir, msg}].
export function readTap(path) {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}
