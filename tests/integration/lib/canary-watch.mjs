#!/usr/bin/env node
// canary-watch.mjs: the watcher of tests/integration/security_canary.sh. Polls /proc every
// 50 ms until $CANARY_WATCH_STOP exists, then writes a report to $CANARY_WATCH_OUT (one line
// per check, `ok ...` / `FAIL ...`) and exits 0 when every check passed:
//   - no command line of any process on the machine holds a canary;
//   - the environment of each process the test started (every descendant of $CANARY_ROOT_PID)
//     holds only the canaries its rule allows ($CANARY_ENV_RULES: a JSON array of
//     [REGEX-ON-ITS-COMMAND-LINE, [KIND...]], the first match wins; no match: none at all);
//   - every process of the suite's programs ($CANARY_PROGRAMS: "NAME=PATH ...", matched on
//     /proc/PID/exe) has a soft core-file limit of 0, sampled once it has run 300 ms (before,
//     it may not have got to it yet). Each program must have been seen at least once.
// Everything comes through the environment, never the command line (that is what is checked):
// $CANARY_VALUES ("KIND=VALUE" lines) and $CANARY_TOKEN_URLS (test endpoints answering JSON
// whose string arrays are tokens: auth-server.mjs /__test/issued-tokens; each token is kind
// "token", and a JWT's signature alone counts too). A report names kinds, never values.
import { existsSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';

const env = (name) => process.env[name] ?? '';
const stop = env('CANARY_WATCH_STOP');
const out = env('CANARY_WATCH_OUT');
const rootPid = Number(env('CANARY_ROOT_PID'));
if (!stop || !out || !rootPid) {
  process.stderr.write('canary-watch: CANARY_WATCH_STOP, CANARY_WATCH_OUT and CANARY_ROOT_PID must be set\n');
  process.exit(2);
}
const canaries = env('CANARY_VALUES').split('\n').filter(Boolean).map((l) => {
  const i = l.indexOf('=');
  return { kind: l.slice(0, i), value: l.slice(i + 1) };
});
const rules = JSON.parse(env('CANARY_ENV_RULES') || '[]').map(([re, kinds]) => ({ re: new RegExp(re), kinds, seen: 0 }));
const programs = env('CANARY_PROGRAMS').split(/\s+/).filter(Boolean).map((w) => {
  const i = w.indexOf('=');
  return { name: w.slice(0, i), path: w.slice(i + 1), seen: new Set(), checked: new Set(), bad: [] };
});
const urls = env('CANARY_TOKEN_URLS').split(/\s+/).filter(Boolean);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const tokens = new Set();
async function fetchTokens() {
  for (const url of urls) {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(5000) });
      if (!r.ok) continue;
      for (const list of Object.values(await r.json())) {
        if (!Array.isArray(list)) continue;
        for (const t of list) {
          if (typeof t !== 'string' || t.length < 16 || tokens.has(t)) continue;
          tokens.add(t);
          const parts = t.split('.');
          if (parts.length === 3 && parts[2].length >= 32) tokens.add(parts[2]);
        }
      }
    } catch {
      // a server already gone: what it issued was fetched before
    }
  }
}
const all = () => [...canaries, ...[...tokens].map((value) => ({ kind: 'token', value }))];
const kindsIn = (text) => [...new Set(all().filter((c) => text.includes(c.value)).map((c) => c.kind))];

function read(pid, what) {
  try {
    return readFileSync(`/proc/${pid}/${what}`, 'latin1');
  } catch {
    return null;
  }
}

function stat(pid) {
  const s = read(pid, 'stat');
  if (!s) return null;
  const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(rest[1]), start: Number(rest[19]) };
}

const ticksPerSec = 100; // USER_HZ on Linux
function uptime() {
  return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
}

const cmdlines = new Map(); // text -> pid first seen
const environs = new Map(); // `${rule}\0${environ}` -> {pid, cmd, allowed}
const suite = new Set(); // pids of the test's processes seen
let scans = 0;
let lastFetch = 0;

for (;;) {
  const last = existsSync(stop);
  if (last || Date.now() - lastFetch > 1000) {
    await fetchTokens();
    lastFetch = Date.now();
  }
  const byParent = new Map();
  const info = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    const st = stat(pid);
    const cmd = read(pid, 'cmdline');
    if (!st || cmd === null || cmd === '') continue; // gone, or a kernel thread
    const text = cmd.split('\0').join(' ').trim();
    info.set(pid, { st, cmd, text });
    if (!byParent.has(st.ppid)) byParent.set(st.ppid, []);
    byParent.get(st.ppid).push(pid);
    if (!cmdlines.has(text)) cmdlines.set(text, pid);
  }
  // the test's processes: descendants of the test's shell
  const queue = [rootPid];
  const now = uptime();
  while (queue.length) {
    const p = queue.shift();
    for (const c of byParent.get(p) ?? []) {
      queue.push(c);
      const { st, cmd, text } = info.get(c);
      suite.add(c);
      // the command line was read before the environment: a process that execs in between
      // (a shell's fork becoming the command it runs) would pair the old command line with
      // the new environment, so the pair counts only if the command line is still the same
      // after (the process is taken again at the next scan)
      const environ = read(c, 'environ');
      if (environ !== null && read(c, 'cmdline') === cmd) {
        const rule = rules.find((r) => r.re.test(text));
        if (rule) rule.seen += 1;
        const key = `${rule ? rule.re.source : ''}\0${environ}`;
        if (!environs.has(key)) environs.set(key, { pid: c, cmd: text, allowed: rule ? rule.kinds : [], environ });
      }
      let exe = '';
      try {
        exe = readlinkSync(`/proc/${c}/exe`);
      } catch {
        continue;
      }
      for (const prog of programs) {
        if (exe !== prog.path) continue;
        prog.seen.add(c);
        if (prog.checked.has(c) || now - st.start / ticksPerSec < 0.3) continue;
        const limits = read(c, 'limits');
        if (!limits) continue;
        prog.checked.add(c);
        const line = limits.split('\n').find((l) => l.startsWith('Max core file size'));
        const soft = line?.slice('Max core file size'.length).trim().split(/\s+/)[0];
        if (soft !== '0') prog.bad.push(`${c} (${text.slice(0, 120)}): soft limit ${soft}`);
      }
    }
  }
  scans += 1;
  if (last) break;
  await sleep(50);
}

const report = [];
const mask = (text) => {
  let s = text;
  for (const c of all()) s = s.split(c.value).join(`<${c.kind}>`);
  return s.length > 200 ? `${s.slice(0, 200)}...` : s;
};
let cmdBad = 0;
for (const [text, pid] of cmdlines) {
  const kinds = kindsIn(text);
  if (kinds.length) {
    cmdBad += 1;
    report.push(`FAIL the command line of process ${pid} holds ${kinds.join(', ')}: ${mask(text)}`);
  }
}
if (!cmdBad) report.push(`ok no command line holds a canary (${cmdlines.size} distinct, ${scans} scans of /proc)`);

let envBad = 0;
for (const { pid, cmd, allowed, environ } of environs.values()) {
  const extra = kindsIn(environ).filter((k) => !allowed.includes(k));
  if (extra.length) {
    envBad += 1;
    report.push(`FAIL the environment of process ${pid} (${mask(cmd)}) holds ${extra.join(', ')}, which it was not given by configuration`);
  }
}
if (!envBad) report.push(`ok the environments of the test's ${suite.size} processes hold only the canaries configured for them (${environs.size} distinct)`);
for (const r of rules) {
  if (!r.seen) report.push(`FAIL no process matching /${r.re.source}/ was seen: its environment was never checked`);
}

for (const prog of programs) {
  if (!prog.checked.size) report.push(`FAIL no process of ${prog.name} was seen long enough to check its core-file limit (${prog.seen.size} seen)`);
  else if (prog.bad.length) report.push(`FAIL ${prog.name} runs with core dumps enabled: ${prog.bad.join('; ')}`);
  else report.push(`ok ${prog.name}: soft core-file limit 0 in all ${prog.checked.size} processes checked`);
}
if (!tokens.size && urls.length) report.push('FAIL no token was fetched from the test servers: nothing to look for');
writeFileSync(out, `${report.join('\n')}\n`);
process.exit(report.some((l) => l.startsWith('FAIL')) ? 1 : 0);
