#!/usr/bin/env node
// bridge-agent.mjs: an agent (the SDK's Client) that talks to MCP servers twice - directly, and
// through mcp-bridge - and checks that the bridge gives it the same answers. One line per check
// on stdout ("ok LABEL", "FAIL LABEL: why"), a summary line, exit status 0 only when every check
// passed. See README.md.
//
//   node bridge-agent.mjs --mode single --server everything='stdio:["node","index.js","stdio"]' \
//       --suite everything=everything --bridge '["mcp-bridge","connect","everything"]'
import {
  Agent, Checks, checkCleanExit, expect, expectSame, exposeName, fail, parseSpec, readTap, textOf,
} from './bridge-lib.mjs';
import { parseArgs } from './lib/common.mjs';

const spec = {
  mode: { type: 'string', default: 'single', arg: 'single|aggregate', help: 'how the bridge runs: connect NAME|URL (single) or serve (aggregate)' },
  server: { type: 'list', arg: 'NAME=SPEC', help: 'a server reached directly: SPEC is stdio:["cmd","arg",...], http:URL or sse:URL' },
  suite: { type: 'list', arg: 'NAME=SUITE', help: 'the checks to run for server NAME: everything, everything-core, second, json, greet, polling, legacy' },
  bridge: { type: 'string', arg: 'JSON', help: 'the bridge command line, a JSON array (its environment is this process\'s)' },
  'bridge-log': { type: 'string', arg: 'PATH', help: "where the bridge's stderr goes (appended)" },
  'bridge-cwd': { type: 'string', arg: 'DIR', help: 'working directory of the bridge' },
  tap: { type: 'list', arg: 'NAME=DIRECT,BRIDGED', help: "bridge-tap.mjs logs of server NAME's direct and bridged processes (cancellation is checked there)" },
  'env-check': { type: 'list', arg: 'NAME', help: "the bridged stdio server NAME (server-everything) must see only the minimal environment plus its entry's env" },
  canary: { type: 'string', default: 'CREDKIT_TEST_CANARY', arg: 'VAR', help: 'a variable of the bridge environment that no upstream may see' },
  'self-test': { type: 'string', arg: 'SPEC', help: 'instead of a bridge, connect the second agent to SPEC too (checks the checks against a direct connection)' },
  deadline: { type: 'int', default: 110, arg: 'SECONDS', help: 'the whole run is stopped (a failure) after this long' },
};
const usage = `
Compares what an agent gets from MCP servers directly with what it gets through mcp-bridge, in
single mode (one server, names unchanged) or aggregate mode (every server, tools and prompts
named mcp_<server>_<name>). Then closes the bridge's stdin and checks that it exits 0 and leaves
no process behind.`;
const opts = parseArgs(spec, process.argv.slice(2), usage);
if (!(opts.bridge || opts.selfTest) || !opts.server.length || !['single', 'aggregate'].includes(opts.mode)) {
  process.stderr.write('bridge-agent: --bridge, --server and --mode single|aggregate are required (see --help)\n');
  process.exit(2);
}
const aggregate = opts.mode === 'aggregate';
const pairs = (list) => Object.fromEntries(list.map((s) => {
  const i = s.indexOf('=');
  if (i < 1) throw new Error(`expected NAME=VALUE, got '${s}'`);
  return [s.slice(0, i), s.slice(i + 1)];
}));
const servers = pairs(opts.server);
const suites = pairs(opts.suite);
const taps = Object.fromEntries(Object.entries(pairs(opts.tap)).map(([k, v]) => {
  const [direct, bridged] = v.split(',');
  return [k, { direct, bridged }];
}));
const names = Object.keys(servers).sort();
if (!aggregate && names.length !== 1) {
  process.stderr.write('bridge-agent: single mode takes exactly one --server\n');
  process.exit(2);
}

const deadline = setTimeout(() => {
  process.stdout.write(`FAIL deadline: the run took more than ${opts.deadline} s\n`);
  process.exit(1);
}, opts.deadline * 1000);
deadline.unref();

const checks = new Checks(aggregate ? 'aggregate/' : 'single/');
const direct = {};
const bridge = new Agent('bridge');

// ---- helpers -----------------------------------------------------------------------------------

// The callers' view of an answer: the result, or {error: {code, message}} for a JSON-RPC error.
async function outcome(p) {
  try {
    return { result: await p };
  } catch (err) {
    return { error: { code: err?.code, message: String(err?.message ?? err) } };
  }
}

function sortBy(list, key) {
  return [...list].sort((a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0));
}

async function listAll(agent, method, key) {
  const out = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const r = await agent.request(method, cursor ? { cursor } : {});
    out.push(...r[key]);
    cursor = r.nextCursor;
    if (!cursor) return out;
  }
  fail(`${agent.label}: ${method} never ends its pages`);
}

const LISTS = [
  ['tools/list', 'tools', 'name', true, 'tools'],
  ['prompts/list', 'prompts', 'name', true, 'prompts'],
  ['resources/list', 'resources', 'uri', false, 'resources'],
  ['resources/templates/list', 'resourceTemplates', 'uriTemplate', false, 'resources'],
];

// ---- the checks every mode runs ----------------------------------------------------------------

async function checkInitialize() {
  await checks.run('initialize', async () => {
    expect(bridge.init, 'the bridge answered initialize without a result');
    if (!aggregate) {
      expectSame(bridge.init, direct[names[0]].init, 'the InitializeResult');
      return;
    }
    const init = bridge.init;
    expect(init.serverInfo?.name === 'mcp-bridge', `serverInfo.name is ${JSON.stringify(init.serverInfo?.name)}, expected "mcp-bridge"`);
    expect(init.protocolVersion === direct[names[0]].init.protocolVersion,
      `protocolVersion ${init.protocolVersion}, expected the agent's own ${direct[names[0]].init.protocolVersion}`);
    for (const cap of ['tools', 'prompts', 'resources', 'logging', 'completions']) {
      expect(init.capabilities?.[cap], `capabilities.${cap} is missing: ${JSON.stringify(init.capabilities)}`);
    }
    expect(init.capabilities.resources.subscribe === true, 'capabilities.resources.subscribe is not true');
    expect(init.capabilities.tools.listChanged === true, 'capabilities.tools.listChanged is not true');
    // the servers whose tools are listed from the cache are named, the others counted as
    // connecting: initialize is answered before any has connected
    const instr = init.instructions ?? '';
    const named = names.filter((n) => instr.includes(`'${n}'`));
    const left = names.length - named.length;
    expect(left === 0 || instr.includes(`${left} ${named.length ? 'more ' : ''}server${left === 1 ? ' is' : 's are'} connecting now`),
      `the instructions neither name nor count the servers: ${JSON.stringify(instr)}`);
  });
}

async function checkLists() {
  for (const [method, key, id, renamed, cap] of LISTS) {
    await checks.run(method, async () => {
      if (!aggregate) {
        // passed through: the same list, or the same error (a server without prompts ...)
        const want = await outcome(listAll(direct[names[0]], method, key));
        const got = await outcome(listAll(bridge, method, key));
        expectSame(got, want, `the ${key} list`);
        return;
      }
      let want = [];
      for (const name of names) {
        if (!direct[name].init.capabilities?.[cap]) continue;
        const items = await listAll(direct[name], method, key);
        want.push(...(renamed ? items.map((t) => ({ ...t, name: exposeName(name, t.name) })) : items));
      }
      // the order across servers is the bridge's business; within the lists nothing may change
      let got = await listAll(bridge, method, key);
      if (method === 'tools/list') {
        // the bridge's own proxy tool comes first (proxy_tool.h), then the servers' tools
        expect(got[0]?.name === 'mcp', `the first tool is ${JSON.stringify(got[0]?.name)}, not the proxy tool 'mcp'`);
        got = got.slice(1);
      }
      expectSame(sortBy(got, id), sortBy(want, id), `the ${key} list`);
    });
  }
  // the SDK's own list call (it keeps the output schemas to validate structured content)
  await bridge.client.listTools();
  for (const name of names) await direct[name].client.listTools();
}

// ---- server-everything -------------------------------------------------------------------------

// the checks that take seconds, left out of the "everything-core" suite
const SLOW = new Set(['1 MiB payload', 'roots/list_changed', 'simulated logging at level debug',
  'logging/setLevel filters', 'cancellation']);

async function suiteEverything(server, core = false) {
  const d = direct[server];
  const n = aggregate ? (x) => exposeName(server, x) : (x) => x;
  const label = (s) => (aggregate ? `${server}/${s}` : s);
  const tap = taps[server];
  const run = async (s, fn, ms) => (core && SLOW.has(s) ? undefined : checks.run(label(s), fn, ms));
  // fn(agent, nameOf) for the direct agent and the bridged one; the answers must be the same
  const same = (s, fn, ms) => run(s, async () => {
    const want = await fn(d, (x) => x);
    const got = await fn(bridge, n);
    expectSame(got, want, s);
  }, ms);

  await same('tools/call echo', (a, nm) => a.call(nm('echo'), { message: 'hello through the bridge' }));
  await same('tools/call get-sum', (a, nm) => a.call(nm('get-sum'), { a: 19, b: 23 }));
  await same('tools/call get-tiny-image (image content)', (a, nm) => a.call(nm('get-tiny-image'), {}));
  await same('tools/call get-annotated-message (annotations, image)', (a, nm) => a.call(nm('get-annotated-message'), { messageType: 'error', includeImage: true }));
  await same('tools/call get-resource-links (resource links)', (a, nm) => a.call(nm('get-resource-links'), { count: 4 }));
  await same('tools/call get-resource-reference (embedded resource)', (a, nm) => a.call(nm('get-resource-reference'), { resourceType: 'Blob', resourceId: 3 }));
  await run('structured content', async () => {
    // the SDK's callTool validates structuredContent against the tool's outputSchema
    const want = await d.client.callTool({ name: 'get-structured-content', arguments: { location: 'Chicago' } });
    const got = await bridge.client.callTool({ name: n('get-structured-content'), arguments: { location: 'Chicago' } });
    expectSame(got, want, 'the result');
    expectSame(got.structuredContent, { temperature: 36, conditions: 'Light rain / drizzle', humidity: 82 }, 'structuredContent');
  });
  await run('unknown tool', async () => {
    const want = await outcome(d.call('no-such-tool', {}));
    const got = await outcome(bridge.call(n('no-such-tool'), {}));
    if (!aggregate) {
      expectSame(got, want, 'the answer to an unknown tool');
      return;
    }
    // the bridge cannot map the name back: a tool error or a JSON-RPC error, naming the tool
    const text = got.error ? got.error.message : textOf(got.result);
    expect(got.error || got.result.isError === true, `an unknown tool got a result that is not an error: ${JSON.stringify(got)}`);
    expect(text.includes(n('no-such-tool')), `the error does not name the tool: ${JSON.stringify(got)}`);
  });
  await run('1 MiB payload', async () => {
    const message = `${'0123456789abcdef'.repeat(1 << 16)}\u00e9\u20ac\u{1F600}"\\\n`;
    const want = await d.call('echo', { message });
    const got = await bridge.call(n('echo'), { message });
    expect(textOf(got) === `Echo: ${message}`, `the echo of 1 MiB came back different (${textOf(got).length} chars, expected ${message.length + 6})`);
    expectSame(got, want, 'the result');
  }, 30000);
  await run('concurrent calls (16 in flight)', async () => {
    const got = await Promise.all(Array.from({ length: 16 }, (_, i) => bridge.call(n('get-sum'), { a: i, b: 1000 })));
    got.forEach((r, i) => expect(textOf(r).includes(String(i + 1000)), `call ${i} got the answer ${JSON.stringify(r)}`));
  });
  await same('ping', (a) => a.request('ping', {}));
  await run('a request with a string id', async () => {
    const want = await d.rawRequest('req-\u00e9-1', 'tools/call', { name: 'get-sum', arguments: { a: 5, b: 6 } });
    const got = await bridge.rawRequest('req-\u00e9-1', 'tools/call', { name: n('get-sum'), arguments: { a: 5, b: 6 } });
    expectSame(got, want, 'the response (its id included)');
  });
  await run('progress with a string token', async () => {
    const seen = [];
    for (const [a, nm] of [[d, (x) => x], [bridge, n]]) {
      const since = a.mark();
      const token = 'progress-\u00e9-token';
      // the SDK leaves a token it did not make alone (and has no handler for it)
      a.rawIds.add(JSON.stringify(`p-${a.label}`));
      const r = await a.rawRequest(`p-${a.label}`, 'tools/call', {
        name: nm('trigger-long-running-operation'), arguments: { duration: 0.3, steps: 3 }, _meta: { progressToken: token },
      });
      let notes = a.received((m) => m.method === 'notifications/progress', since);
      // (a replayed HTTP stream shows the direct SDK some twice)
      if (a === d) notes = [...new Map(notes.map((m) => [JSON.stringify(m), m])).values()];
      expect(notes.length === 3 && notes.every((m) => m.params.progressToken === token),
        `${a.label}: the progress notifications do not all carry the agent's string token: ${JSON.stringify(notes)}`);
      seen.push({ result: r.result, notes: notes.map((m) => m.params) });
    }
    expectSame(seen[1], seen[0], 'the progress notifications and the result');
  });

  await same('prompts/get simple-prompt', (a, nm) => a.request('prompts/get', { name: nm('simple-prompt') }));
  await same('prompts/get args-prompt (with arguments)', (a, nm) => a.request('prompts/get', { name: nm('args-prompt'), arguments: { city: 'Lisbon', state: 'LX' } }));
  await same('prompts/get resource-prompt (embedded resource)', (a, nm) => a.request('prompts/get', { name: nm('resource-prompt'), arguments: { resourceType: 'Text', resourceId: '5' } }));

  await same('resources/read (static)', (a) => a.request('resources/read', { uri: 'demo://resource/static/document/instructions.md' }));
  await same('resources/read (text template)', (a) => a.request('resources/read', { uri: 'demo://resource/dynamic/text/42' }));
  await same('resources/read (blob template)', (a) => a.request('resources/read', { uri: 'demo://resource/dynamic/blob/7' }));
  await same('resources/read (unknown resource)', (a) => outcome(a.request('resources/read', { uri: 'demo://resource/dynamic/text/0' })));

  await same('completion (prompt argument)', (a, nm) => a.request('completion/complete', {
    ref: { type: 'ref/prompt', name: nm('completable-prompt') }, argument: { name: 'department', value: 'S' },
  }));
  await same('completion (prompt argument with context)', (a, nm) => a.request('completion/complete', {
    ref: { type: 'ref/prompt', name: nm('completable-prompt') }, argument: { name: 'name', value: '' },
    context: { arguments: { department: 'Engineering' } },
  }));
  await same('completion (resource template)', (a) => a.request('completion/complete', {
    ref: { type: 'ref/resource', uri: 'demo://resource/dynamic/text/{resourceId}' }, argument: { name: 'resourceId', value: '12' },
  }));

  await run('roots', async () => {
    for (const a of [d, bridge]) {
      await a.until(() => a.rootsCalls > 0, 5000, 'the server asking for roots (roots/list)');
    }
    const want = await d.call('get-roots-list', {});
    const got = await bridge.call(n('get-roots-list'), {});
    expect(textOf(want).includes('file:///agent/root-one'), `the direct answer lacks the agent's root: ${textOf(want)}`);
    expectSame(got, want, 'get-roots-list');
  });
  await run('roots/list_changed', async () => {
    const results = [];
    for (const [a, nm] of [[d, (x) => x], [bridge, n]]) {
      const calls = a.rootsCalls;
      a.roots = [{ uri: 'file:///agent/root-two', name: 'root two' }, { uri: 'file:///agent/root-three' }];
      await a.client.sendRootsListChanged();
      await a.until(() => a.rootsCalls > calls, 5000, 'the server asking for roots again after roots/list_changed');
      results.push(await a.until(async () => {
        const r = await a.call(nm('get-roots-list'), {});
        return textOf(r).includes('root-three') ? r : null;
      }, 5000, 'get-roots-list showing the new roots'));
    }
    expectSame(results[1], results[0], 'get-roots-list after the change');
  });
  await run('sampling', async () => {
    const want = await d.call('trigger-sampling-request', { prompt: 'the sea', maxTokens: 25 });
    const before = bridge.samplingRequests.length;
    const got = await bridge.call(n('trigger-sampling-request'), { prompt: 'the sea', maxTokens: 25 });
    expect(bridge.samplingRequests.length === before + 1, `the agent was asked to sample ${bridge.samplingRequests.length - before} times, expected once`);
    expectSame(bridge.samplingRequests.at(-1), d.samplingRequests.at(-1), 'the sampling/createMessage request');
    expect(textOf(got).includes('sampled: Resource trigger-sampling-request context: the sea'), `the tool result lacks the agent's sample: ${textOf(got)}`);
    expectSame(got, want, 'the result');
  });
  await run('elicitation', async () => {
    const want = await d.call('trigger-elicitation-request', {});
    const before = bridge.elicitRequests.length;
    const got = await bridge.call(n('trigger-elicitation-request'), {});
    expect(bridge.elicitRequests.length === before + 1, `the agent was asked ${bridge.elicitRequests.length - before} times, expected once`);
    expectSame(bridge.elicitRequests.at(-1), d.elicitRequests.at(-1), 'the elicitation/create request');
    expect(textOf(got).includes('- Name: Ada Lovelace'), `the tool result lacks the agent's answer: ${textOf(got)}`);
    expectSame(got, want, 'the result');
  });
  await run('progress', async () => {
    const seen = [];
    for (const [a, nm] of [[d, (x) => x], [bridge, n]]) {
      const progress = [];
      const since = a.mark();
      const result = await a.client.callTool({ name: nm('trigger-long-running-operation'), arguments: { duration: 0.6, steps: 3 } },
        undefined, { onprogress: (p) => progress.push(p), timeout: 15000 });
      // the token the agent sent, and the one every progress notification carries
      const sent = a.log.slice(since).find((e) => e.dir === 'out' && e.msg.method === 'tools/call')?.msg;
      const token = sent?.params?._meta?.progressToken;
      expect(token !== undefined, `${a.label}: the SDK sent no progress token`);
      let notes = a.received((m) => m.method === 'notifications/progress', since);
      if (a === d) {
        // some servers replay events on a resumed HTTP stream: the direct SDK sees them twice
        notes = [...new Map(notes.map((m) => [JSON.stringify(m), m])).values()];
      }
      expect(notes.length === 3, `${a.label}: ${notes.length} progress notifications, expected 3`);
      for (const m of notes) {
        expect(m.params.progressToken === token, `${a.label}: a progress notification carries token ${JSON.stringify(m.params.progressToken)}, the agent's is ${JSON.stringify(token)}`);
      }
      // (the SDK may drop the last callback when the result arrives in the same read: it runs
      // notification handlers a tick later, and compares the notifications themselves)
      expect(progress.length >= 1, `${a.label}: onprogress was never called`);
      seen.push({ notes: notes.map(({ params: { progressToken, ...rest } }) => rest), result });
    }
    expectSame(seen[1], seen[0], 'the progress notifications and the result');
  });

  const docUri = 'demo://resource/static/document/features.md';
  await run('logging/setLevel, then log messages', async () => {
    const got = [];
    for (const a of [d, bridge]) {
      expectSame(await a.request('logging/setLevel', { level: 'debug' }), {}, 'the setLevel result');
      const since = a.mark();
      await a.request('resources/subscribe', { uri: docUri });
      const m = await a.waitFor((x) => x.method === 'notifications/message'
        && String(x.params?.data).includes(`Received Subscribe Resource request for URI: ${docUri}`), since, 5000,
      'the log message that acknowledges the subscription');
      got.push(m.params);
    }
    expectSame(got[1], got[0], 'the log message');
  });
  await run('resources/updated after resources/subscribe', async () => {
    const got = [];
    for (const [a, nm] of [[d, (x) => x], [bridge, n]]) {
      const since = a.mark();
      const on = await a.call(nm('toggle-subscriber-updates'), {});
      const m = await a.waitFor((x) => x.method === 'notifications/resources/updated' && x.params?.uri === docUri, since, 7000,
        `notifications/resources/updated for ${docUri}`);
      const off = await a.call(nm('toggle-subscriber-updates'), {});
      got.push({ on, off, params: m.params });
    }
    expectSame(got[1], got[0], 'the toggles and the update');
  });
  await run('simulated logging at level debug', async () => {
    for (const [a, nm] of [[d, (x) => x], [bridge, n]]) {
      const since = a.mark();
      await a.call(nm('toggle-simulated-logging'), {});
      await a.waitFor((x) => x.method === 'notifications/message' && /level[- ]message/i.test(String(x.params?.data)), since, 7000,
        'a simulated log message');
      await a.call(nm('toggle-simulated-logging'), {});
    }
  });
  await run('logging/setLevel filters', async () => {
    for (const [a, nm] of [[d, (x) => x], [bridge, n]]) {
      await a.request('logging/setLevel', { level: 'emergency' });
      const since = a.mark();
      await a.request('resources/unsubscribe', { uri: docUri });
      // the server answers in order: anything it logged for the unsubscribe came before this
      await a.call(nm('echo'), { message: 'barrier' });
      const leaked = a.received((x) => x.method === 'notifications/message', since);
      expect(leaked.length === 0, `${a.label}: log messages below the level came through: ${JSON.stringify(leaked)}`);
      await a.request('logging/setLevel', { level: 'debug' });
    }
  });

  await run('cancellation', async () => {
    for (const [a, nm, log] of [[d, (x) => x, tap?.direct], [bridge, n, tap?.bridged]]) {
      const ac = new AbortController();
      const since = a.mark();
      const t0 = Date.now();
      const call = a.client.callTool({ name: nm('trigger-long-running-operation'), arguments: { duration: 6, steps: 6 } },
        undefined, { signal: ac.signal, onprogress: () => ac.abort('the agent gave up'), timeout: 20000 });
      const r = await outcome(call);
      expect(r.error, `${a.label}: the cancelled call ended with a result: ${JSON.stringify(r.result)}`);
      expect(Date.now() - t0 < 8000, `${a.label}: the cancelled call took ${Date.now() - t0} ms`);
      const sent = a.log.slice(since).find((e) => e.dir === 'out' && e.msg.method === 'notifications/cancelled');
      expect(sent, `${a.label}: the SDK sent no notifications/cancelled`);
      if (!log) continue;
      // the server itself must see notifications/cancelled for its own id of the call
      await a.until(() => {
        const msgs = readTap(log).filter((e) => e.dir === 'in').map((e) => e.msg);
        const req = msgs.find((m) => m.method === 'tools/call' && m.params?.arguments?.duration === 6);
        return req && msgs.some((m) => m.method === 'notifications/cancelled' && m.params?.requestId === req.id);
      }, 4000, 'the server receiving notifications/cancelled with the id of the call');
    }
    // and the connection still works
    expectSame(await bridge.call(n('get-sum'), { a: 1, b: 2 }), await d.call('get-sum', { a: 1, b: 2 }), 'a call after the cancellation');
  }, 30000);

  if (opts.envCheck.includes(server)) {
    await run('the server sees a minimal environment', async () => {
      const r = await bridge.call(n('get-env'), {});
      const env = JSON.parse(textOf(r));
      expect(!(opts.canary in env), `the bridge's own ${opts.canary} reached the server`);
      expect(env.BRIDGE_TEST_ENTRY === 'entry-value', `the entry's env BRIDGE_TEST_ENTRY is ${JSON.stringify(env.BRIDGE_TEST_ENTRY)}`);
      const allowed = new Set(['HOME', 'PATH', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'LANG', 'BRIDGE_TEST_ENTRY']);
      const extra = Object.keys(env).filter((k) => !allowed.has(k));
      expect(extra.length === 0, `the server sees variables beyond the minimal set: ${extra.join(' ')}`);
      expect(env.PATH, 'the server sees no PATH');
    });
  }
}

// ---- bridge-server.mjs (a second server) -------------------------------------------------------

async function suiteSecond(server) {
  const d = direct[server];
  const n = aggregate ? (x) => exposeName(server, x) : (x) => x;
  const label = (s) => (aggregate ? `${server}/${s}` : s);
  await checks.run(label('tools/call echo'), async () => {
    expectSame(await bridge.call(n('echo'), { message: 'routed' }), await d.call('echo', { message: 'routed' }), 'the result');
  });
  await checks.run(label('resources/read'), async () => {
    const uri = `bridge-test://${server}/info`;
    expectSame(await bridge.request('resources/read', { uri }), await d.request('resources/read', { uri }), 'the resource');
  });
  await checks.run(label('prompts/get'), async () => {
    const p = { arguments: { who: 'the agent' } };
    expectSame(await bridge.request('prompts/get', { name: n('hello'), ...p }), await d.request('prompts/get', { name: 'hello', ...p }), 'the prompt');
  });
  await checks.run(label('a tool added later reaches the agent (list_changed)'), async () => {
    const since = bridge.mark();
    await bridge.call(n('add-tool'), { name: 'late' });
    await bridge.waitFor((m) => m.method === 'notifications/tools/list_changed', since, 5000, 'notifications/tools/list_changed');
    const tools = await bridge.until(async () => {
      const list = await listAll(bridge, 'tools/list', 'tools');
      return list.some((t) => t.name === n('late')) ? list : null;
    }, 5000, `tools/list showing ${n('late')}`);
    expect(tools.length > 0, 'empty tool list');
    const r = await bridge.call(n('late'), {});
    expect(textOf(r) === 'late tool late', `the new tool answered ${JSON.stringify(r)}`);
  });
}

// ---- the SDK's example servers -----------------------------------------------------------------

function exampleSuite(tool, args, { logs = 0, ms = 20000 } = {}) {
  return async (server) => {
    const d = direct[server];
    const n = aggregate ? (x) => exposeName(server, x) : (x) => x;
    const label = (s) => (aggregate ? `${server}/${s}` : s);
    await checks.run(label(`tools/call ${tool}`), async () => {
      const seen = [];
      for (const [a, nm] of [[d, (x) => x], [bridge, n]]) {
        await a.request('logging/setLevel', { level: 'debug' });
        const since = a.mark();
        const result = await a.call(nm(tool), args, { timeout: ms });
        // the log messages the server sent during the call (some arrive on a resumed stream)
        if (logs) {
          await a.until(() => a.received((m) => m.method === 'notifications/message', since).length >= logs, 5000,
            `${logs} log messages`);
        }
        seen.push({ result, logs: a.received((m) => m.method === 'notifications/message', since).map((m) => m.params) });
      }
      expect(!seen[0].result.isError, `the direct call failed: ${JSON.stringify(seen[0].result)}`);
      expectSame(seen[1], seen[0], 'the result and the log messages');
    }, ms + 10000);
  };
}

const SUITES = {
  everything: (server) => suiteEverything(server),
  'everything-core': (server) => suiteEverything(server, true),
  second: suiteSecond,
  greet: exampleSuite('greet', { name: 'Grace' }),
  json: async (server) => {
    await exampleSuite('greet', { name: 'Grace' })(server);
    await exampleSuite('multi-greet', { name: 'Grace' })(server);
  },
  polling: exampleSuite('long-task', {}, { logs: 4 }),
  legacy: exampleSuite('start-notification-stream', { interval: 100, count: 3 }, { logs: 4 }),
};

// ---- main --------------------------------------------------------------------------------------

let ok = false;
try {
  const connected = await checks.run('connect (direct and through the bridge)', async () => {
    await Promise.all(names.map(async (name) => {
      direct[name] = new Agent(`direct ${name}`);
      await direct[name].connect(parseSpec(servers[name]), { closeTimeoutMs: 3000 });
    }));
    await bridge.connect(opts.selfTest ? parseSpec(opts.selfTest) : {
      kind: 'stdio', argv: JSON.parse(opts.bridge), stderrPath: opts.bridgeLog, cwd: opts.bridgeCwd,
    });
  }, 40000);
  if (connected) {
    await checkInitialize();
    await checkLists();
    for (const name of names) {
      const suite = suites[name];
      if (!suite) continue;
      if (!SUITES[suite]) throw new Error(`unknown suite '${suite}'`);
      await SUITES[suite](name);
    }
    await checks.run('no protocol errors on the agent side', async () => {
      expect(bridge.protocolErrors().length === 0, `the SDK reported: ${bridge.protocolErrors().join('; ')}`);
      expect(!bridge.closed, 'the bridge closed the connection');
    });
  }
  if (opts.selfTest && !bridge.child) {
    await bridge.close();
  } else await checkCleanExit(checks, bridge);
  ok = checks.summary();
} catch (err) {
  process.stdout.write(`FAIL internal: ${err?.stack ?? err}\n`);
} finally {
  await Promise.all(Object.values(direct).map((a) => a.close()));
  if (bridge.child?.proc && !bridge.child.exit) bridge.child.kill();
}
process.exit(ok ? 0 : 1);
