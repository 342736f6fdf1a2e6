#!/usr/bin/env node
// The canary checks of tests/integration/bridge_seam.sh: the tokens and secrets of the test
// must appear in no command line of any process, in no environment of a stdio server, and in
// no file the test wrote (logs, stderr, the agents' outputs with every error result).
//
//   node seam-canary.mjs watch   polls /proc every 100 ms until $SEAM_WATCH_STOP exists, then
//                                writes its report to $SEAM_WATCH_OUT and exits (0: clean)
//   node seam-canary.mjs scan    scans every file under $SEAM_SCAN_ROOT but those under the
//                                paths of $SEAM_SCAN_SKIP; prints its report (exit 0: clean)
//
// Everything comes through the environment, never the command line (the command line is what
// is checked): SEAM_CANARIES (values or distinctive prefixes, separated by blanks) and
// SEAM_TOKEN_URLS (test endpoints answering JSON whose string arrays are tokens:
// auth-server.mjs /__test/issued-tokens, mcp-resource-server.mjs /__test/tokens). A report
// names the kind of canary and where, never the canary itself.
import {
  existsSync, lstatSync, readFileSync, readdirSync, writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

const mode = process.argv[2];
const words = (name) => (process.env[name] ?? '').split(/\s+/).filter(Boolean);
const staticCanaries = words('SEAM_CANARIES').map((v, i) => ({ kind: `canary #${i + 1}`, value: v }));
const urls = words('SEAM_TOKEN_URLS');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- the canaries ------------------------------------------------------------------------------

const tokenCanaries = new Map(); // value -> kind
async function fetchTokens() {
  for (const url of urls) {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(5000) });
      if (!r.ok) continue;
      const j = await r.json();
      for (const [field, list] of Object.entries(j)) {
        if (!Array.isArray(list)) continue;
        for (const t of list) {
          if (typeof t !== 'string' || t.length < 16 || tokenCanaries.has(t)) continue;
          const kind = `${field.replace(/s$/, '')} from ${new URL(url).port}`;
          tokenCanaries.set(t, kind);
          // a JWT's signature alone (a log that cut the token) is as bad as the whole token
          const parts = t.split('.');
          if (parts.length === 3 && parts[2].length >= 32) tokenCanaries.set(parts[2], `${kind} (its signature)`);
        }
      }
    } catch {
      // a server already gone: the tokens it gave out were fetched before
    }
  }
}

function canaries() {
  return [...staticCanaries, ...[...tokenCanaries].map(([value, kind]) => ({ kind, value }))];
}

// the kinds of canary in text
function found(text) {
  return canaries().filter((c) => text.includes(c.value)).map((c) => c.kind);
}

function mask(text) {
  let out = text;
  for (const c of canaries()) out = out.split(c.value).join(`<${c.kind}>`);
  return out.length > 300 ? `${out.slice(0, 300)}...` : out;
}

// ---- watch -------------------------------------------------------------------------------------

function readProc(pid, what) {
  try {
    return readFileSync(`/proc/${pid}/${what}`, 'latin1');
  } catch {
    return null;
  }
}

async function watch() {
  const stop = process.env.SEAM_WATCH_STOP;
  const out = process.env.SEAM_WATCH_OUT;
  if (!stop || !out) {
    process.stderr.write('seam-canary watch: SEAM_WATCH_STOP and SEAM_WATCH_OUT must be set\n');
    process.exit(2);
  }
  const cmdlines = new Map(); // text -> pid (first seen)
  const environs = new Map(); // stdio server's environment text -> its command line
  const stdioServers = new Set();
  let scans = 0;
  let lastFetch = 0;
  for (;;) {
    const last = existsSync(stop);
    if (last || Date.now() - lastFetch > 1000) {
      await fetchTokens();
      lastFetch = Date.now();
    }
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
      const cmd = readProc(name, 'cmdline');
      if (!cmd) continue;
      const text = cmd.split('\0').join(' ').trim();
      if (!cmdlines.has(text)) cmdlines.set(text, name);
      // the stdio servers of the bridges (tests/peers/bridge-server.mjs over stdio)
      if (/bridge-server\.mjs/.test(text) && !/--transport http/.test(text)) {
        // paired only if the command line is the same after the read (no exec in between)
        let env = readProc(name, 'environ');
        if (readProc(name, 'cmdline') !== cmd) env = null;
        if (env !== null) stdioServers.add(name);
        if (env !== null && !environs.has(env)) environs.set(env, `${name} ${text}`);
      }
    }
    scans += 1;
    if (last) break;
    await sleep(100);
  }
  const report = [];
  let bad = 0;
  for (const [text, pid] of cmdlines) {
    const kinds = found(text);
    if (kinds.length) {
      bad += 1;
      report.push(`FAIL the command line of process ${pid} holds ${kinds.join(', ')}: ${mask(text)}`);
    }
  }
  for (const [env, who] of environs) {
    const kinds = found(env);
    if (kinds.length) {
      bad += 1;
      report.push(`FAIL the environment of the stdio server ${mask(who)} holds ${kinds.join(', ')}`);
    }
  }
  if (environs.size === 0) {
    bad += 1;
    report.push('FAIL no stdio server was seen: their environment was never checked');
  }
  if (tokenCanaries.size === 0) {
    bad += 1;
    report.push('FAIL no token was fetched from the test servers: nothing to look for');
  }
  if (!bad) {
    report.push(`ok ${cmdlines.size} distinct command lines (${scans} scans of /proc) and the environments of ${stdioServers.size} stdio servers (${environs.size} distinct) hold none of ${canaries().length} canaries`);
  }
  writeFileSync(out, `${report.join('\n')}\n`);
  process.exit(bad ? 1 : 0);
}

// ---- scan --------------------------------------------------------------------------------------

async function scan() {
  const root = process.env.SEAM_SCAN_ROOT;
  const skip = words('SEAM_SCAN_SKIP');
  if (!root) {
    process.stderr.write('seam-canary scan: SEAM_SCAN_ROOT must be set\n');
    process.exit(2);
  }
  await fetchTokens();
  const report = [];
  let files = 0;
  let bytes = 0;
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (skip.some((s) => path === s || path.startsWith(`${s}/`))) continue;
      const st = lstatSync(path);
      if (st.isDirectory()) walk(path);
      else if (st.isFile()) {
        const text = readFileSync(path, 'latin1');
        files += 1;
        bytes += text.length;
        const kinds = found(text);
        if (kinds.length) report.push(`FAIL ${path} holds ${[...new Set(kinds)].join(', ')}`);
      }
    }
  };
  walk(root);
  const n = canaries().length;
  if (tokenCanaries.size === 0) report.push('FAIL no token was fetched from the test servers: nothing to look for');
  if (!report.length) report.push(`ok ${files} files (${bytes} bytes: logs, stderr, the agents' outputs) hold none of ${n} canaries`);
  process.stdout.write(`${report.join('\n')}\n`);
  process.exit(report.some((l) => l.startsWith('FAIL')) ? 1 : 0);
}

if (mode === 'watch') await watch();
else if (mode === 'scan') await scan();
else {
  process.stderr.write('usage: node seam-canary.mjs watch|scan (settings in the environment: see the file)\n');
  process.exit(2);
}
