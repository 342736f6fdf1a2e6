#!/usr/bin/env node
// replicas-agent.mjs: agents of both SDKs on replicas of `mcp-bridge serve --listen` behind a
// load balancer (HAProxy in bridge_replicas.sh). Each replica serves server-everything, whose
// environment names the replica (REPLICA=r1|r2: get-env tells the agent who answered), and
// eras-mrtr-server.mjs (a 2026-07-28 server: its input rounds' state is its own). One line per
// check on stdout ("ok LABEL", "FAIL LABEL: why"); exit status 0 only when every check passed.
//
//   --scenario spread   the v2 SDK Client pinned to 2026-07-28 through the balancer: N calls
//                       answered by both replicas; a two-round tool of eras-mrtr-server whose
//                       retry is answered by the replica that did not ask (the server's state
//                       travels with the request); a legacy server's question (the bridge's own
//                       mcpb1.NAME. state): the retry sent to the other replica gets -32602
//                       "another replica holds it", through the balancer it reaches the holder
//                       and completes; the SDK's own rounds through the balancer all complete
//   --scenario listen   two v2 Clients, each with a subscriptions/listen stream through the
//                       balancer: a server added to one replica's configuration (--config) is
//                       told on one stream only, one added to the other's on the other stream:
//                       the two streams are on different replicas, each hearing its own
//   --scenario pinned   the v1 SDK Client (a 2025-11-25 session) through the balancer: every
//                       call of its session answered by one replica, and the session unknown
//                       (404) at the other one
//   --scenario refresh  the v2 Client calls an OAuth server's whoami through the balancer every
//                       300 ms: no call fails, and the authorization server sees one refresh
//                       per token lifetime between the replicas, no refresh token used twice
import { readFileSync, writeFileSync } from 'node:fs';

import { parseArgs } from './lib/common.mjs';
import { Checks, expect, sleep } from './bridge-lib.mjs';

const opts = parseArgs({
  scenario: { type: 'string', help: 'spread, pinned or refresh' },
  url: { type: 'string', help: 'the balancer\'s URL' },
  replica: { type: 'list', arg: 'NAME=URL', help: 'a replica\'s own URL (repeatable)' },
  calls: { type: 'int', default: 8, help: 'spread, pinned: calls of get-env' },
  config: { type: 'list', arg: 'NAME=FILE', help: 'listen: a replica\'s configuration file (repeatable)' },
  'extra-server': { type: 'string', help: 'listen: the stdio server added (bridge-server.mjs)' },
  root: { type: 'string', help: 'listen: a tag for the servers added' },
  as: { type: 'string', help: 'refresh: the authorization server (its /__test/stats)' },
  tool: { type: 'string', help: 'refresh: the tool to call' },
  ttl: { type: 'int', default: 3, help: 'refresh: the access tokens\' lifetime (s)' },
  duration: { type: 'int', default: 15, help: 'refresh: how long to call (s)' },
}, process.argv.slice(2), 'Agents on replicas of the bridge behind a load balancer (see the header).');
if (!opts.url || !opts.scenario) {
  process.stderr.write('replicas-agent: --url and --scenario are required\n');
  process.exit(2);
}
const pairs = (list) => Object.fromEntries(list.map((r) => [r.slice(0, r.indexOf('=')), r.slice(r.indexOf('=') + 1)]));
const replicas = pairs(opts.replica);
const configs = pairs(opts.config);
const v1 = {
  ...(await import('@modelcontextprotocol/sdk/client/index.js')),
  ...(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')),
};
const v2 = await import('@modelcontextprotocol/client');

const checks = new Checks();
const WAIT = 20000;
const MODERN = '2026-07-28';
const ELICIT = 'mcp_everything_trigger-elicitation-request';
const ANSWER = { action: 'accept', content: { name: 'Ada Lovelace', check: true, email: 'ada@example.com' } };
const ELSEWHERE = 'requestState names an input round that another replica of this bridge holds: send the request again without it';
const text = (res) => (res?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const replicaOf = (res) => {
  try {
    return JSON.parse(text(res)).REPLICA;
  } catch {
    return undefined;
  }
};
const timer = setTimeout(() => {
  process.stdout.write('FAIL replicas-agent: gave up after 120 s\n');
  process.exit(1);
}, 120000);

async function modernClient(onElicit) {
  const client = new v2.Client({ name: 'replicas-modern', version: '1.0.0' }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: MODERN } },
    inputRequired: { autoFulfill: true },
  });
  if (onElicit) client.setRequestHandler('elicitation/create', onElicit);
  await client.connect(new v2.StreamableHTTPClientTransport(new URL(opts.url)), { timeout: WAIT });
  return client;
}

// One 2026-07-28 tools/call as a plain POST (the Mcp-* headers as the revision asks): its
// JSON-RPC answer.
async function post(url, id, name, extra = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json', accept: 'application/json',
      'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name,
    },
    body: JSON.stringify({
      jsonrpc: '2.0', id, method: 'tools/call',
      params: {
        name, arguments: {}, ...extra,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
          'io.modelcontextprotocol/clientInfo': { name: 'replicas-raw', version: '1' },
        },
      },
    }),
  });
  return res.json();
}

async function spread() {
  let client;
  await checks.run('modern: connected through the balancer at 2026-07-28, both servers listed', async () => {
    client = await modernClient(async (req) => {
      const props = Object.keys(req.params.requestedSchema?.properties ?? {});
      if (props.includes('colour')) return { action: 'accept', content: { colour: 'green' } };
      if (props.includes('email')) return ANSWER;
      return { action: 'accept', content: { name: 'Ada' } };
    });
    expect(client.getProtocolEra?.() === 'modern', `era ${client.getProtocolEra?.()}`);
    let names = [];
    for (let i = 0; i < 40 && !(names.includes('mcp_everything_get-env') && names.includes('mcp_mrtr_twice')); i++) {
      if (i) await sleep(250);
      names = (await client.listTools({}, { timeout: WAIT })).tools.map((t) => t.name);
    }
    expect(names.includes('mcp_everything_get-env') && names.includes('mcp_mrtr_twice'), JSON.stringify(names));
  }, 40000);
  if (!client) return;

  await checks.run(`modern: ${opts.calls} calls answered by both replicas (round robin, no stickiness)`, async () => {
    const seen = {};
    for (let i = 0; i < opts.calls; i++) {
      const r = replicaOf(await client.callTool({ name: 'mcp_everything_get-env', arguments: {} }, { timeout: WAIT }));
      seen[r] = (seen[r] ?? 0) + 1;
    }
    process.stdout.write(`note: answered by ${JSON.stringify(seen)}\n`);
    expect(Object.keys(seen).sort().join(' ') === Object.keys(replicas).sort().join(' '),
      `answered by ${JSON.stringify(seen)}, expected every one of ${Object.keys(replicas).join(', ')}`);
  });

  // eras-mrtr-server lists the states it was given in structuredContent.states (each replica
  // runs its own): the final answer coming from a process that never saw "twice:1" means the
  // first retry was answered by the other replica's server
  await checks.run('modern: a 2026-07-28 server\'s two input rounds, the retries on different replicas', async () => {
    const r = await client.callTool({ name: 'mcp_mrtr_twice', arguments: {} }, { timeout: WAIT });
    const states = r.structuredContent?.states ?? [];
    expect(text(r) === 'Ada likes green', JSON.stringify(r));
    expect(states.includes('twice:2:Ada') && !states.includes('twice:1'),
      `the replica that answered saw the states ${JSON.stringify(states)}: expected the first retry elsewhere`);
  });

  // a legacy server's question: the round is the bridge's own, held where it was asked
  let holder;
  let state;
  await checks.run('raw: a legacy server\'s question through the balancer names its replica in the requestState', async () => {
    const r = await post(opts.url, 1, ELICIT);
    state = r.result?.requestState;
    expect(r.result?.resultType === 'input_required' && typeof state === 'string', JSON.stringify(r));
    holder = Object.keys(replicas).find((n) => state.startsWith(`mcpb1.${n}.`));
    expect(holder, `${state.slice(0, 12)}... names none of ${Object.keys(replicas).join(', ')}`);
  });
  if (holder) {
    const other = Object.keys(replicas).find((n) => n !== holder);
    const retry = { requestState: state, inputResponses: { input1: ANSWER } };
    await checks.run('raw: the retry at the replica that does not hold the round: -32602, start over', async () => {
      const r = await post(replicas[other], 2, ELICIT, retry);
      expect(r.error?.code === -32602 && r.error?.message === ELSEWHERE, JSON.stringify(r));
    });
    await checks.run('raw: the retry through the balancer reaches the holder and completes', async () => {
      const r = await post(opts.url, 3, ELICIT, retry);
      expect(r.result && r.result.resultType !== 'input_required' && JSON.stringify(r.result).includes('Ada Lovelace'),
        JSON.stringify(r));
    });
  }
  await checks.run('modern: three legacy-server rounds of the SDK through the balancer, all complete', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await client.callTool({ name: ELICIT, arguments: {} }, { timeout: WAIT });
      expect(JSON.stringify(r.content).includes('Ada Lovelace'), `call ${i + 1}: ${JSON.stringify(r)}`);
    }
  });
  await client.close();
}

async function listen() {
  const agents = [];
  await checks.run('listen: two agents, a subscriptions/listen stream each through the balancer', async () => {
    for (const label of ['A', 'B']) {
      const a = { label, changed: 0 };
      a.client = await modernClient();
      a.client.setNotificationHandler('notifications/tools/list_changed', () => { a.changed += 1; });
      agents.push(a);
    }
    // one listen after the other: the balancer's next two requests, so on the two replicas
    for (const a of agents) a.sub = await a.client.listen({ toolsListChanged: true });
    // a change is told only of a list some agent was given (catalog_announce): the lists of
    // both replicas, round robin
    for (let i = 0; i < 4; i++) await agents[i % 2].client.listTools({}, { timeout: WAIT });
  }, 40000);
  if (agents.length !== 2) return;
  // a server added to each replica's configuration in turn (the bridge reloads by itself): the
  // list change of that replica reaches the one stream open on it
  const heard = [];
  for (const [i, name] of Object.keys(configs).sort().entries()) {
    await checks.run(`listen: a server added to ${name}: told on one stream only`, async () => {
      const before = agents.map((a) => a.changed);
      const c = JSON.parse(readFileSync(configs[name], 'utf8'));
      c.mcpServers[`extra${i}`] = { command: process.execPath, args: [opts.extraServer, '--name', `extra${i}`, '--tag', opts.root] };
      writeFileSync(configs[name], JSON.stringify(c));
      let told = [];
      for (let t = 0; t < 100 && told.length === 0; t++) {
        await sleep(100);
        told = agents.filter((a, k) => a.changed > before[k]);
      }
      await sleep(500); // and no second stream hears it a moment later
      told = agents.filter((a, k) => a.changed > before[k]);
      expect(told.length === 1, `${told.length} stream(s) told (${agents.map((a) => `${a.label}: ${a.changed}`).join(', ')})`);
      heard.push(told[0].label);
    }, 20000);
  }
  await checks.run('listen: the two streams are on different replicas', async () => {
    expect(heard.length === 2 && heard[0] !== heard[1], `heard by ${heard.join(', ')}`);
  });
  for (const a of agents) {
    await a.sub.close().catch(() => {});
    await a.client.close();
  }
}

async function pinned() {
  const client = new v1.Client({ name: 'replicas-legacy', version: '1.0.0' }, { capabilities: {} });
  const transport = new v1.StreamableHTTPClientTransport(new URL(opts.url));
  await checks.run('legacy: a 2025-11-25 session through the balancer', async () => {
    await client.connect(transport, { timeout: WAIT });
    expect(typeof transport.sessionId === 'string' && transport.sessionId.length > 16, `session ${transport.sessionId}`);
  });
  let first;
  await checks.run(`legacy: ${opts.calls} calls of the session, every one on the replica that opened it`, async () => {
    const seen = {};
    for (let i = 0; i < opts.calls; i++) {
      const r = await client.callTool({ name: 'mcp_everything_get-env', arguments: {} }, undefined, { timeout: WAIT });
      const name = replicaOf(r);
      first ??= name;
      seen[name] = (seen[name] ?? 0) + 1;
    }
    process.stdout.write(`note: answered by ${JSON.stringify(seen)}\n`);
    expect(Object.keys(seen).length === 1 && replicas[first], `answered by ${JSON.stringify(seen)}`);
  });
  if (first) {
    await checks.run('legacy: the other replica does not know the session (404): the pinning is what keeps it', async () => {
      const other = Object.keys(replicas).find((n) => n !== first);
      const res = await fetch(replicas[other], {
        method: 'POST',
        headers: {
          'content-type': 'application/json', accept: 'application/json, text/event-stream',
          'mcp-session-id': transport.sessionId, 'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }),
      });
      expect(res.status === 404, `status ${res.status}`);
    });
  }
  await transport.terminateSession().catch(() => {});
  await client.close();
}

async function refresh() {
  const stats = async () => (await fetch(`${opts.as}/__test/stats`)).json();
  let client;
  await checks.run(`refresh: connected through the balancer, ${opts.tool} listed`, async () => {
    await fetch(`${opts.as}/__test/reset`, { method: 'POST' });
    client = await modernClient();
    let names = [];
    for (let i = 0; i < 40 && !names.includes(opts.tool); i++) {
      if (i) await sleep(250);
      names = (await client.listTools({}, { timeout: WAIT })).tools.map((t) => t.name);
    }
    expect(names.includes(opts.tool), JSON.stringify(names));
  }, 40000);
  if (!client) return;
  const t0 = Date.now();
  let calls = 0;
  const failures = [];
  while (Date.now() - t0 < opts.duration * 1000) {
    const r = await client.callTool({ name: opts.tool, arguments: {} }, { timeout: WAIT }).catch((e) => ({ isError: true, content: [{ type: 'text', text: e.message }] }));
    calls += 1;
    if (r.isError && failures.length < 5) failures.push(text(r));
    await sleep(300);
  }
  const elapsed = (Date.now() - t0) / 1000;
  const as = await stats();
  const refreshes = as.refresh_token_grants;
  // a token is refreshed about a second before it expires (mcp-auth's skew): one lifetime is
  // ttl - 1 s of use; two replicas refreshing each on its own would double the count, the
  // second refresh of each pair coming while the first one's token is new
  const lifetimes = elapsed / (opts.ttl - 1);
  const left = as.refresh_log.map((e) => e.left_ms).filter((v) => v !== null);
  process.stdout.write(`note: ${calls} calls in ${elapsed.toFixed(1)} s (${lifetimes.toFixed(1)} token lifetimes), ${refreshes} refreshes `
    + `(the last token had ${left.length ? `${Math.min(...left)}..${Math.max(...left)}` : '?'} ms left), `
    + `token requests ${JSON.stringify(as.token_requests)}, errors ${JSON.stringify(as.token_errors)}\n`);
  await checks.run(`refresh: ${calls} calls through both replicas, none failed`, async () => {
    expect(failures.length === 0, failures.join(' | '));
  });
  await checks.run('refresh: one refresh per token lifetime between the replicas, no refresh token used twice', async () => {
    const early = as.refresh_log.filter((e) => e.left_ms !== null && e.left_ms > (opts.ttl * 1000) - 500);
    expect(refreshes >= Math.floor(lifetimes) - 2, `${refreshes} refreshes in ${lifetimes.toFixed(1)} lifetimes: the replicas did not refresh`);
    expect(refreshes <= Math.ceil(lifetimes) + 1, `${refreshes} refreshes in ${lifetimes.toFixed(1)} lifetimes: the replicas refreshed each on its own`);
    expect(early.length === 0, `${early.length} refreshes while the last token was still fresh (ms left: ${early.map((e) => e.left_ms).join(', ')})`);
    expect(as.refresh_token_reuse === 0, `${as.refresh_token_reuse} refresh token(s) presented again after rotation`);
    expect((as.token_errors.refresh_token ?? 0) === 0, `${as.token_errors.refresh_token} refresh requests failed`);
  });
  await client.close();
}

try {
  if (opts.scenario === 'spread') await spread();
  else if (opts.scenario === 'pinned') await pinned();
  else if (opts.scenario === 'listen') await listen();
  else if (opts.scenario === 'refresh') await refresh();
  else throw new Error(`unknown scenario '${opts.scenario}'`);
} catch (e) {
  checks.failed.push('replicas-agent');
  process.stdout.write(`FAIL replicas-agent: ${e?.stack ?? e}\n`);
}
clearTimeout(timer);
process.exit(checks.summary() ? 0 : 1);
