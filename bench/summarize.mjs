#!/usr/bin/env node
// Reads bench/run's results.jsonl and prints a Markdown table: per transport, payload size and
// case, the median over the repetitions with [min-max], the bridged/direct ratios (each
// repetition's bridged run against the same repetition's direct run, then the median), and the
// targets: p50 <= 1.05x direct, throughput >= 0.97x direct, peak RSS <= 8 MB, CPU <= 30 us/call.
import { readFileSync } from 'node:fs';

const rows = readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const fmt = (x, d = 0) => (x == null || Number.isNaN(x) ? '-' : x.toFixed(d));
const stat = (xs, d = 0) => (xs.length > 1 ? `${fmt(median(xs), d)} [${fmt(Math.min(...xs), d)}-${fmt(Math.max(...xs), d)}]` : fmt(xs[0], d));
const ok = (b) => (b ? 'ok' : '**no**');
const size = (s) => (s >= 1024 ? `${s / 1024} KiB` : `${s} B`);

const out = [];
out.push('| transport | payload | case | p50 us | p99 us | calls/s (16 in flight) | p50 / direct | thr. / direct | CPU us/call (utime+stime) | CPU us/call (schedstat) | VmHWM MB | targets p50 thr RSS CPU |');
out.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
const keys = [...new Set(rows.map((r) => `${r.transport}|${r.size}`))];
for (const key of keys) {
  const [transport, sz] = key.split('|');
  const of = (kase) => rows.filter((r) => r.transport === transport && String(r.size) === sz && r.case === kase);
  const direct = of('direct');
  for (const kase of ['direct', 'connect', 'connect@base', 'serve', 'serve@base']) {
    const rs = of(kase);
    if (!rs.length) continue;
    const pid = kase === 'direct' ? (transport === 'http' ? 'pid' : 'child') : 'child';
    const cpu = rs.map((r) => r[`${pid}_cpu_us_per_call`]);
    const sched = rs.map((r) => r[`${pid}_sched_us_per_call`]);
    const hwm = rs.map((r) => r[`${pid}_hwm_kb`] / 1024);
    const byRep = (r) => direct.find((d) => d.rep === r.rep);
    const rp50 = rs.map((r) => r.p50_us / byRep(r).p50_us);
    const rthr = rs.map((r) => r.throughput / byRep(r).throughput);
    const who = kase === 'direct' ? ' (server)' : '';
    const targets = kase === 'direct' ? '' : [median(rp50) <= 1.05, median(rthr) >= 0.97, median(hwm) <= 8, median(cpu) <= 30].map(ok).join(' ');
    out.push(`| ${transport} | ${size(Number(sz))} | ${kase} | ${stat(rs.map((r) => r.p50_us))} | ${stat(rs.map((r) => r.p99_us))} | ${stat(rs.map((r) => r.throughput))} | ${kase === 'direct' ? '1' : stat(rp50, 2)} | ${kase === 'direct' ? '1' : stat(rthr, 2)} | ${stat(cpu)}${who} | ${stat(sched)}${who} | ${stat(hwm, 1)}${who} | ${targets} |`);
  }
}
process.stdout.write(out.join('\n') + '\n');
