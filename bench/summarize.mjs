#!/usr/bin/env node
// Reads bench/run's results.jsonl and prints two Markdown tables. The first: per transport,
// payload, upstreams, calls in flight and case, the median over the repetitions with [min-max],
// the ratios to the direct case (each repetition's run against the same repetition's direct run,
// then the median), the measured process's CPU per call (schedstat) and peak RSS, and the
// bridge's allocations per call (the allocation phase), and the C client's own CPU per call
// where it is the agent (direct-http). The second: each target of issue 23 next to the value
// measured and to the floor's, the relay's (the least any process in the middle costs: bench/relay
// for stdio, direct-http --stdio for HTTP), with a verdict that says when the limit is below the
// floor, so that a rerun can be read at a glance. Then, when the
// run has them, the bridge as an HTTP server: each listener case beside the same bridge with its
// agent on stdio, and the many agents on one bridge with each agent's share of the calls.
//
//   summarize.mjs results.jsonl
import { readFileSync } from 'node:fs';

const all = readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const rows = all.filter((r) => r.phase !== 'alloc');
const allocRows = all.filter((r) => r.phase === 'alloc');
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const fmt = (x, d = 0) => (x == null || Number.isNaN(x) ? '-' : x.toFixed(d));
const stat = (xs, d = 0) => (xs.length > 1 ? `${fmt(median(xs), d)} [${fmt(Math.min(...xs), d)}-${fmt(Math.max(...xs), d)}]` : fmt(xs[0], d));
const size = (s) => (s >= 1048576 ? `${s / 1048576} MiB` : s >= 1024 ? `${s / 1024} KiB` : `${s} B`);
const LISTEN = ['connect-listen-2025', 'connect-listen-2026', 'serve-listen-2025', 'serve-listen-2026'];
const AGENTS = ['agents-2025', 'agents-2026'];
const CASES = ['direct', 'relay', 'connect', 'connect@base', 'serve', 'serve@base', 'mcp-remote', ...LISTEN, ...AGENTS];
const isBridge = (kase) => kase.startsWith('connect') || kase.startsWith('serve') || kase.startsWith('agents');
// measured as the bridge is: its own CPU, RSS and allocations
const measuredSelf = (kase) => isBridge(kase) || kase === 'relay';

const pick = (rs, q) => rs.filter((r) => Object.entries(q).every(([k, v]) => r[k] === v));
const directOf = (r) => pick(rows, { transport: r.transport, size: r.size, inflight: r.inflight, rep: r.rep, case: 'direct' })[0];
const ratios = (rs, f) => rs.map((r) => { const d = directOf(r); return d ? f(r, d) : NaN; }).filter((x) => !Number.isNaN(x));
const allocOf = (r) => pick(allocRows, { transport: r.transport, size: r.size, upstreams: r.upstreams, case: r.case })[0];

const out = [];
out.push('| transport | payload | upstreams | in flight | case | p50 µs | p99 µs | calls/s | p50 / direct | calls/s / direct | CPU µs/call | peak RSS MB | allocs/call (1 in flight) | C client CPU µs/call |');
out.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
const groups = [...new Set(rows.map((r) => `${r.transport}|${r.size}|${r.inflight}`))];
const seen = new Set();
for (const g of groups.sort((a, b) => { const [ta, sa, ia] = a.split('|'); const [tb, sb, ib] = b.split('|'); return ta === tb ? (sa - sb || ia - ib) : (ta === 'stdio' ? -1 : 1); })) {
  const [transport, sz, inf] = g.split('|');
  const grp = pick(rows, { transport, size: Number(sz), inflight: Number(inf) });
  const kinds = [...new Set(grp.map((r) => `${CASES.indexOf(r.case)}|${r.upstreams}|${r.case}`))].sort((a, b) => {
    const [ca, ua] = a.split('|').map(Number); const [cb, ub] = b.split('|').map(Number); return ua - ub || ca - cb;
  });
  for (const k of kinds) {
    const [, ups, kase] = k.split('|');
    const key = `${g}|${ups}|${kase}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const rs = pick(grp, { upstreams: Number(ups), case: kase });
    const who = measuredSelf(kase) ? '' : ` (${rs[0].measured})`;
    const a = measuredSelf(kase) ? allocOf(rs[0]) : undefined;
    const client = rs.map((r) => r.agent_sched_us_per_call).filter((v) => v !== undefined);
    out.push(`| ${transport} | ${size(Number(sz))} | ${ups} | ${inf} | ${kase} | ${stat(rs.map((r) => r.p50_us))} | ${stat(rs.map((r) => r.p99_us))} | ${stat(rs.map((r) => r.throughput))} | ${kase === 'direct' ? '1' : stat(ratios(rs, (r, d) => r.p50_us / d.p50_us), 2)} | ${kase === 'direct' ? '1' : stat(ratios(rs, (r, d) => r.throughput / d.throughput), 2)} | ${stat(rs.map((r) => r.sched_us_per_call))}${who} | ${stat(rs.map((r) => r.hwm_kb / 1024), 1)}${who} | ${a && Number(inf) === 1 ? fmt(a.allocs_per_call, 1) : '-'} | ${client.length ? stat(client) : '-'} |`);
  }
}

// --- the targets (issue 23), each bridge case against its limit, beside the floor: the same
// value of the relay (the least any process in the middle costs). A limit the relay does not
// meet either is below the floor: no bridge can meet it on this machine, and the verdict says so.
const MB = 1024 * 1024;
const targets = [];
const meets = (v, cmp, limit) => (cmp === '<=' ? v <= limit : v >= limit);
function verdict(v, floor, cmp, limit) {
  if (meets(v, cmp, limit)) return 'pass';
  return floor != null && !Number.isNaN(floor) && !meets(floor, cmp, limit) ? '**FAIL**, below the floor' : '**FAIL**';
}
// above: the value is a cost in µs, so the measured cell also says how much the bridge adds above
// the relay (per repetition, then the median). bound false: the relay's value is shown but is no
// lower bound for the bridge's (its latency past 64 KiB: it passes each pipe-full on as it comes,
// waking the agent and the server once per 64 KiB where the bridge wakes them once a message)
function target(name, limit, cmp, q, value, fmtv = (v) => fmt(v, 2), above, bound = true) {
  const relay = pick(rows, { ...q, case: 'relay', upstreams: 1 });
  const floor = relay.length ? value(relay) : NaN;
  for (const kase of ['connect', 'serve']) {
    const rs = pick(rows, { ...q, case: kase, upstreams: 1 });
    if (!rs.length) continue;
    const v = value(rs);
    if (v == null || Number.isNaN(v)) continue;
    let cell = fmtv(v);
    if (above && relay.length) {
      const d = rs.map((r) => { const f = relay.find((x) => x.rep === r.rep); return f ? above(r) - above(f) : NaN; }).filter((x) => !Number.isNaN(x));
      if (d.length) cell += ` (${median(d) >= 0 ? '+' : ''}${fmt(median(d))} µs above the relay)`;
    }
    const floorCell = Number.isNaN(floor) ? '-' : `${fmtv(floor)}${bound ? '' : ' (no bound)'}`;
    targets.push(`| ${name} | ${q.transport} ${size(q.size)}, ${q.inflight} in flight | ${kase} | ${cell} | ${floorCell} | ${cmp} ${limit.text} | ${verdict(v, bound ? floor : NaN, cmp, limit.value)} |`);
  }
}
const med = (f) => (rs) => median(rs.map(f));
const medRatio = (f) => (rs) => { const x = ratios(rs, f); return x.length ? median(x) : NaN; };
const sizes = [...new Set(rows.map((r) => r.size))].sort((a, b) => a - b);
const c1 = { inflight: 1 };
target('p50 / direct', { value: 1.25, text: '1.25×' }, '<=', { transport: 'stdio', size: 65536, ...c1 }, medRatio((r, d) => r.p50_us / d.p50_us), undefined, undefined, false);
const cpu = (r) => r.sched_us_per_call;
target('CPU per call', { value: 100, text: '100 µs' }, '<=', { transport: 'stdio', size: 65536, ...c1 }, med(cpu), (v) => `${fmt(v)} µs`, cpu);
target('p50 added per hop', { value: 25, text: '25 µs' }, '<=', { transport: 'stdio', size: 100, ...c1 }, medRatio((r, d) => r.p50_us - d.p50_us), (v) => `${fmt(v)} µs`, (r) => r.p50_us);
target('CPU per call', { value: 15, text: '15 µs' }, '<=', { transport: 'stdio', size: 100, ...c1 }, med(cpu), (v) => `${fmt(v)} µs`, cpu);
for (const transport of ['stdio', 'http']) {
  target('calls/s / direct', { value: 0.9, text: '0.9×' }, '>=', { transport, size: 100, inflight: 16 }, medRatio((r, d) => r.throughput / d.throughput));
}
target('CPU per call', { value: 50, text: '50 µs' }, '<=', { transport: 'http', size: 100, ...c1 }, med(cpu), (v) => `${fmt(v)} µs`, cpu);
for (const transport of ['stdio', 'http']) {
  for (const s of sizes) {
    // peak RSS after the phase with one call in flight: one request and one answer of s bytes
    const limit = s <= 100 ? 8 : 8 + (2 * s) / MB;
    target('peak RSS', { value: limit, text: `${fmt(limit, 1)} MB` }, '<=', { transport, size: s, ...c1 }, med((r) => r.hwm_kb / 1024), (v) => `${fmt(v, 1)} MB`);
  }
}
for (const transport of ['stdio', 'http']) {
  const q = { transport, size: 100, inflight: 1 };
  const f = pick(allocRows, { ...q, case: 'relay', upstreams: 1 })[0];
  for (const kase of ['connect', 'serve']) {
    const a = pick(allocRows, { ...q, case: kase, upstreams: 1 })[0];
    if (a) targets.push(`| allocations per call | ${transport} 100 B, 1 in flight | ${kase} | ${fmt(a.allocs_per_call, 1)} | ${f ? fmt(f.allocs_per_call, 1) : '-'} | <= 5 (a handful) | ${verdict(a.allocs_per_call, f?.allocs_per_call, '<=', 5)} |`);
  }
}
// linear growth: CPU per byte at the largest payload against the next smaller one (>= 1 MiB)
const big = sizes.filter((s) => s >= MB);
if (big.length >= 2) {
  const [s1, s2] = big.slice(-2);
  for (const transport of ['stdio', 'http']) {
    const growth = (kase) => {
      const perByte = (s) => { const rs = pick(rows, { transport, size: s, inflight: 1, case: kase, upstreams: 1 }); return rs.length ? median(rs.map((r) => r.sched_us_per_call)) / s : NaN; };
      return perByte(s2) / perByte(s1);
    };
    const f = growth('relay');
    for (const kase of ['connect', 'serve']) {
      const v = growth(kase);
      if (!Number.isNaN(v)) targets.push(`| CPU per byte, ${size(s2)} / ${size(s1)} (linear growth) | ${transport}, 1 in flight | ${kase} | ${fmt(v, 2)} | ${Number.isNaN(f) ? '-' : fmt(f, 2)} | <= 1.5 | ${verdict(v, f, '<=', 1.5)} |`);
    }
  }
}
if (targets.length) {
  out.push('', '| target | where | case | measured (median) | floor (relay) | limit | verdict |', '|---|---|---|---|---|---|---|', ...targets);
}

// --- the bridge as an HTTP server: each listener case at 1 in flight (and calls/s at 16) beside
// the same bridge command with its agent on stdio, the ratio per repetition
const listenRows = rows.filter((r) => LISTEN.includes(r.case));
if (listenRows.length) {
  out.push('', '| transport | payload | case | agent | p50 µs | p99 µs | p50 / stdio agent | calls/s at 16 | calls/s / stdio agent | CPU µs/call | CPU / stdio agent | peak RSS MB | allocs/call |');
  out.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  const stdioOf = (r, inflight) => pick(rows, { transport: r.transport, size: r.size, inflight, rep: r.rep, upstreams: 1, case: r.case.split('-')[0] })[0];
  const vs = (rs, inflight, f) => { const x = rs.map((r) => { const s = stdioOf(r, inflight); return s ? f(r, s) : NaN; }).filter((v) => !Number.isNaN(v)); return x.length ? stat(x, 2) : '-'; };
  for (const transport of ['stdio', 'http']) {
    for (const s of sizes) {
      for (const kase of ['connect', 'serve']) {
        for (const k of [kase, `${kase}-listen-2025`, `${kase}-listen-2026`]) {
          const one = pick(rows, { transport, size: s, inflight: 1, upstreams: 1, case: k });
          if (!one.length || (k === kase && !pick(listenRows, { transport, size: s }).length)) continue;
          const sixteen = pick(rows, { transport, size: s, inflight: 16, upstreams: 1, case: k });
          const a = allocOf(one[0]);
          const agent = k === kase ? 'stdio' : `HTTP ${k.slice(-4)}`;
          const ratio = (rs, inf, f) => (k === kase ? '1' : vs(rs, inf, f));
          out.push(`| ${transport} | ${size(s)} | ${kase}${k === kase ? '' : ' --listen'} | ${agent} | ${stat(one.map((r) => r.p50_us))} | ${stat(one.map((r) => r.p99_us))} | ${ratio(one, 1, (r, d) => r.p50_us / d.p50_us)} | ${sixteen.length ? stat(sixteen.map((r) => r.throughput)) : '-'} | ${sixteen.length ? ratio(sixteen, 16, (r, d) => r.throughput / d.throughput) : '-'} | ${stat(one.map((r) => r.sched_us_per_call))} | ${ratio(one, 1, (r, d) => r.sched_us_per_call / d.sched_us_per_call)} | ${stat(one.map((r) => r.hwm_kb / 1024), 1)} | ${a ? fmt(a.allocs_per_call, 1) : '-'} |`);
        }
      }
    }
  }
}

// --- many agents on one bridge: the level with every agent, against the level with one
const agentRows = rows.filter((r) => AGENTS.includes(r.case));
if (agentRows.length) {
  out.push('', '| transport | agents | era | calls | calls/s | p50 µs | p99 µs | CPU µs/call | peak RSS MB | RSS per agent beyond the first, KB | calls per agent [min-max] | share of the mean [min-max] | fair (within 2×) |');
  out.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const transport of ['stdio', 'http']) {
    for (const kase of AGENTS) {
      const many = pick(agentRows, { transport, case: kase }).filter((r) => r.inflight > 1);
      if (!many.length) continue;
      const n = many[0].inflight;
      const perAgent = many.map((r) => { const o = pick(agentRows, { transport, case: kase, rep: r.rep, inflight: 1 })[0]; return o ? (r.hwm_kb - o.hwm_kb) / (n - 1) : NaN; }).filter((v) => !Number.isNaN(v));
      const lo = Math.min(...many.map((r) => r.agent_share_min)); const hi = Math.max(...many.map((r) => r.agent_share_max));
      const cmin = Math.min(...many.map((r) => r.agent_calls_min)); const cmax = Math.max(...many.map((r) => r.agent_calls_max));
      out.push(`| ${transport} | ${n} | ${kase.slice(-4) === '2025' ? '2025-11-25 (sessions)' : '2026-07-28 (stateless)'} | ${many[0].calls} | ${stat(many.map((r) => r.throughput))} | ${stat(many.map((r) => r.p50_us))} | ${stat(many.map((r) => r.p99_us))} | ${stat(many.map((r) => r.sched_us_per_call))} | ${stat(many.map((r) => r.hwm_kb / 1024), 1)} | ${perAgent.length ? stat(perAgent, 1) : '-'} | ${cmin}-${cmax} | ${fmt(lo, 2)}-${fmt(hi, 2)} | ${lo >= 0.5 && hi <= 2 ? 'yes' : '**NO**'} |`);
    }
  }
}
process.stdout.write(out.join('\n') + '\n');
