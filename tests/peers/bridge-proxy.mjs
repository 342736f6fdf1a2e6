// The proxy tool and the tool modes through the real bridge (tests/integration/bridge_proxy.sh):
// the SDK's Client as the agent, @modelcontextprotocol/server-everything behind the bridge.
//
//   node bridge-proxy.mjs --scenario NAME --bridge BIN --everything PATH --root DIR
//
// Each scenario writes its configuration into DIR, runs `mcp-bridge serve` (or `connect`) on it
// and prints one "ok"/"FAIL" line per check:
//   proxy     the proxy tool: status (connected, failed and why, disabled), search (words,
//             regex, a hostile regex refused, a pattern too long), describe, server, connect,
//             calls (args as an object and as a string, a bad string, an unknown tool, progress
//             through the proxy), excludeTools by raw and exposed name, exposeResources
//   direct    settings.directTools false with an entry's list and another entry's true;
//             MCP_DIRECT_TOOLS with server/tool, then __none__; disableProxyTool with nothing
//             direct lists every tool
//   prefix    toolPrefix server, short and none (server "ev-mcp")
//   single    `connect` with excludeTools (raw and exposed names)
import { readFileSync, writeFileSync } from 'node:fs';

import { Agent, Checks, checkCleanExit, expect, expectSame, textOf } from './bridge-lib.mjs';

const opts = {};
for (let i = 2; i < process.argv.length; i += 2) opts[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const k of ['scenario', 'bridge', 'everything', 'root']) {
  if (!opts[k]) throw new Error(`--${k} is required`);
}
const checks = new Checks(`${opts.scenario}/`);

// server-everything, its command line naming the test's root (so leftovers are found)
const everything = (extra = {}) => ({ command: process.execPath, args: [opts.everything, 'stdio', opts.root], ...extra });

let n = 0;
async function bridgeWith(config, { env = {}, mode = 'serve', name } = {}) {
  const file = `${opts.root}/${opts.scenario}-${++n}.json`;
  // the checks compare the first tools/list with every server's tools: it waits for them all
  // (the settle window ends as soon as every server is settled), as slow as a sanitizer build
  // under load may make their start
  const settings = { settleTimeout: 20000, ...(config.settings || {}) };
  writeFileSync(file, JSON.stringify({ ...config, settings }, null, 2));
  const a = new Agent(`bridge ${n}`);
  const argv = [opts.bridge, mode, ...(name ? [name] : []), '--config', file];
  await a.connect({ kind: 'stdio', argv, stderrPath: `${opts.root}/${opts.scenario}-${n}.bridge.log`, env: { ...process.env, ...env } },
    { closeTimeoutMs: 3000 });
  return a;
}

const names = async (a) => (await a.request('tools/list', {})).tools.map((t) => t.name);
const proxy = (a, args, opts2) => a.call('mcp', args, opts2);

async function finish(a) {
  await checkCleanExit(checks, a);
}

// ---- proxy ----------------------------------------------------------------------------------

async function scenarioProxy() {
  const a = await bridgeWith({
    mcpServers: {
      everything: everything({ excludeTools: ['toggle-simulated-logging', 'mcp_everything_get-env'], exposeResources: true }),
      broken: { command: `${opts.root}/no-such-command` },
      off: { command: `${opts.root}/never-started`, disabled: true },
    },
  });
  let tools = [];
  await checks.run('tools/list: the proxy tool first, then every tool (directTools true by default)', async () => {
    const list = (await a.request('tools/list', {})).tools;
    tools = list.map((t) => t.name);
    expect(tools[0] === 'mcp', `the first tool is ${tools[0]}`);
    const def = list[0];
    for (const k of ['tool', 'args', 'connect', 'describe', 'search', 'regex', 'includeSchemas', 'server']) {
      expect(def.inputSchema?.properties?.[k]?.description, `the proxy tool's inputSchema lacks ${k}`);
    }
    for (const t of ['mcp_everything_echo', 'mcp_everything_get-sum']) expect(tools.includes(t), `${t} is not listed: ${tools.join(' ')}`);
  });
  await checks.run('excludeTools: a raw and an exposed name are left out, and not callable', async () => {
    expect(!tools.includes('mcp_everything_toggle-simulated-logging'), 'the raw name is listed');
    expect(!tools.includes('mcp_everything_get-env'), 'the exposed name is listed');
    const r = await proxy(a, { tool: 'mcp_everything_get-env' });
    expect(r.isError && /unknown tool/.test(textOf(r)), `calling it: ${JSON.stringify(r)}`);
  });
  await checks.run('status: connected, failed with the reason, disabled, with tool counts', async () => {
    const text = textOf(await proxy(a, {}));
    expect(/^everything: connected, \d+ tools$/m.test(text), `status: ${text}`);
    expect(/^broken: failed \(.*no-such-command.*\), 0 tools$/m.test(text), `status: ${text}`);
    expect(/^off: disabled, 0 tools$/m.test(text), `status: ${text}`);
    expect(/^3 servers, \d+ tools \(\d+ listed directly\)/.test(text), `status: ${text}`);
  });
  await checks.run('search: words OR\'ed, case-insensitive, name matches first', async () => {
    const text = textOf(await proxy(a, { search: 'ECHO sum' }));
    const lines = text.split('\n');
    expect(/^\d+ tools match 'ECHO sum'/.test(lines[0]), text);
    expect(lines.some((l) => l.startsWith('mcp_everything_echo - ')), text);
    expect(lines.some((l) => l.startsWith('mcp_everything_get-sum - ')), text);
  });
  await checks.run('search: a regex, and includeSchemas', async () => {
    const r = await proxy(a, { search: '^mcp_everything_get-s', regex: true, includeSchemas: true });
    const text = textOf(r);
    expect(!r.isError, text);
    expect(/^2 tools match/.test(text) && text.includes('mcp_everything_get-sum') && text.includes('mcp_everything_get-structured-content'), text);
    expect(text.includes('  inputSchema: {'), `no schemas: ${text}`);
  });
  await checks.run('search: a hostile regex and a pattern too long are refused, quickly', async () => {
    const t0 = Date.now();
    for (const [pattern, why] of [['(a+)+$', 'repeats a repetition'], ['(x|x?)*{50}', 'repeats a repetition'], ['(.)\\1', 'back reference'], ['a'.repeat(300), 'at most 256']]) {
      const r = await proxy(a, { search: pattern, regex: true });
      expect(r.isError && textOf(r).includes(why), `${pattern}: ${JSON.stringify(r)}`);
    }
    expect(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
    // a heavy but legal pattern over every name and description still answers at once
    const r = await proxy(a, { search: '(a|b|c|d|e)*z{0,100}.*.*.*.*q', regex: true });
    expect(!r.isError, textOf(r));
  });
  await checks.run('describe: the description and the parameters', async () => {
    const text = textOf(await proxy(a, { describe: 'mcp_everything_get-sum' }));
    expect(text.startsWith("mcp_everything_get-sum (server 'everything')"), text);
    expect(/^ {2}a \(number, required\)/m.test(text) && /^ {2}b \(number, required\)/m.test(text), text);
    const r = await proxy(a, { describe: 'get-summ' });
    expect(r.isError && textOf(r).includes('unknown tool'), JSON.stringify(r));
  });
  await checks.run('server: that server\'s tools; an unknown one names the servers', async () => {
    const text = textOf(await proxy(a, { server: 'everything' }));
    expect(/^server 'everything' \(connected\): \d+ tools/.test(text) && text.includes('\nmcp_everything_echo - '), text);
    const r = await proxy(a, { server: 'nope' });
    expect(r.isError && textOf(r).includes("the servers: 'broken', 'everything', 'off'"), JSON.stringify(r));
  });
  await checks.run('connect: a connected server, a failed one, an unknown one', async () => {
    const text = textOf(await proxy(a, { connect: 'everything' }));
    expect(text.startsWith("server 'everything' is connected"), text);
    let r = await proxy(a, { connect: 'broken' });
    // connecting again, honestly: the failure before is named
    expect(/^server 'broken' is connecting \(the last attempt failed: .*no-such-command/.test(textOf(r)), JSON.stringify(r));
    r = await proxy(a, { connect: 'off' });
    expect(r.isError && textOf(r).includes('disabled'), JSON.stringify(r));
    r = await proxy(a, { connect: 'nope' });
    expect(r.isError && textOf(r).startsWith("unknown server 'nope'"), JSON.stringify(r));
  });
  await checks.run('tool + args: the same result as a direct tools/call, args as an object or a string', async () => {
    const direct = await a.call('mcp_everything_get-sum', { a: 2, b: 5 });
    expectSame(await proxy(a, { tool: 'mcp_everything_get-sum', args: { a: 2, b: 5 } }), direct, 'the result');
    expectSame(await proxy(a, { tool: 'mcp_everything_get-sum', args: '{"a": 2, "b": 5}' }), direct, 'the result (args as a string)');
    expectSame(await proxy(a, { tool: 'get-sum', args: { a: 2, b: 5 } }), direct, 'the result (the raw name)');
  });
  await checks.run('tool + args: a bad args string and an unknown tool are tool errors that say why', async () => {
    let r = await proxy(a, { tool: 'mcp_everything_get-sum', args: '{"a": 1,' });
    expect(r.isError && textOf(r).includes("'args' is a string that does not hold JSON"), JSON.stringify(r));
    r = await proxy(a, { tool: 'mcp_everything_ech' });
    expect(r.isError && textOf(r).includes('did you mean: mcp_everything_echo'), JSON.stringify(r));
    r = await proxy(a, { tool: 'mcp' });
    expect(r.isError, JSON.stringify(r));
  });
  await checks.run('tool + args: progress of the call reaches the agent', async () => {
    const since = a.mark();
    const r = await a.request('tools/call', {
      name: 'mcp', arguments: { tool: 'mcp_everything_trigger-long-running-operation', args: { duration: 0.3, steps: 3 } },
      _meta: { progressToken: 'proxy-progress' },
    });
    expect(!r.isError, JSON.stringify(r));
    const progress = a.received((m) => m.method === 'notifications/progress' && m.params?.progressToken === 'proxy-progress', since);
    expect(progress.length >= 1, 'no notifications/progress with the agent\'s token');
  });
  await checks.run('exposeResources: a read tool per resource returns its contents', async () => {
    const { resources } = await a.request('resources/list', {});
    const res = resources.find((x) => x.uri.startsWith('demo://resource/static/document/'));
    expect(res, 'no static document resource');
    const readTools = tools.filter((t) => t.startsWith('mcp_everything_resource_'));
    expect(readTools.length >= 1, `no read tools: ${tools.join(' ')}`);
    const list = (await a.request('tools/list', {})).tools;
    const tool = list.find((t) => t.description?.includes(res.uri));
    expect(tool, `no read tool names ${res.uri}`);
    const r = await a.call(tool.name, {});
    const read = await a.request('resources/read', { uri: res.uri });
    expect(!r.isError && textOf(r) === read.contents[0].text, `the read tool gave ${JSON.stringify(r).slice(0, 300)}`);
    // through the proxy too
    const r2 = await proxy(a, { tool: tool.name });
    expect(textOf(r2) === read.contents[0].text, 'through the proxy');
  });
  await finish(a);
}

// ---- direct ---------------------------------------------------------------------------------

async function scenarioDirect() {
  const config = {
    settings: { directTools: false },
    mcpServers: { everything: everything({ directTools: ['echo'] }), ev2: everything({ directTools: true }), ev3: everything() },
  };
  let a = await bridgeWith(config);
  let all = [];
  await checks.run('directTools false: the proxy tool, an entry\'s list, an entry\'s true', async () => {
    const got = await names(a);
    expect(got[0] === 'mcp', got.join(' '));
    expect(got.includes('mcp_everything_echo') && !got.includes('mcp_everything_get-sum'), got.join(' '));
    expect(got.includes('mcp_ev2_echo') && got.includes('mcp_ev2_get-sum'), got.join(' '));
    expect(!got.some((t) => t.startsWith('mcp_ev3_')), got.join(' '));
    all = got;
  });
  await checks.run('tools not listed are callable by name and through the proxy, and found by search', async () => {
    const r = await a.call('mcp_ev3_get-sum', { a: 1, b: 1 });
    expect(textOf(r).includes('is 2'), JSON.stringify(r));
    const s = textOf(await proxy(a, { search: 'get-sum' }));
    expect(s.includes('mcp_ev3_get-sum') && s.includes('mcp_everything_get-sum'), s);
    const st = textOf(await proxy(a, {}));
    expect(/listed directly/.test(st), st);
  });
  await finish(a);

  a = await bridgeWith(config, { env: { MCP_DIRECT_TOOLS: 'ev3/get-sum, everything/mcp_everything_get-env' } });
  await checks.run('MCP_DIRECT_TOOLS overrides the entries and settings', async () => {
    const got = await names(a);
    // (servers in the configuration's order: by name)
    expectSame(got, ['mcp', 'mcp_ev3_get-sum', 'mcp_everything_get-env'], 'the tools list');
  });
  await finish(a);

  a = await bridgeWith(config, { env: { MCP_DIRECT_TOOLS: '__none__' } });
  await checks.run('MCP_DIRECT_TOOLS=__none__: the proxy tool alone', async () => {
    expectSame(await names(a), ['mcp'], 'the tools list');
    const r = await proxy(a, { tool: 'mcp_ev2_echo', args: { message: 'hi' } });
    expect(textOf(r) === 'Echo: hi', JSON.stringify(r));
  });
  await finish(a);

  a = await bridgeWith({ settings: { directTools: false, disableProxyTool: true }, mcpServers: { everything: everything() } });
  await checks.run('disableProxyTool with nothing direct: every tool is listed, no proxy tool', async () => {
    const got = await names(a);
    expect(!got.includes('mcp') && got.includes('mcp_everything_echo'), got.join(' '));
    // an unknown tool is a tool result with isError (as the SDK's McpServer answers it)
    const r = await a.call('mcp', {});
    const refused = r.isError ? textOf(r) : '';
    expect(/unknown tool 'mcp'/.test(refused), `the proxy tool answered (${JSON.stringify(r)})`);
    const log = readFileSync(`${opts.root}/${opts.scenario}-${n}.bridge.log`, 'utf8');
    expect(log.includes('settings.disableProxyTool is set and no tool is direct'), `no warning in the log: ${log}`);
  });
  await finish(a);
  void all;
}

// ---- prefix ---------------------------------------------------------------------------------

async function scenarioPrefix() {
  for (const [prefix, want] of [['server', 'ev-mcp_echo'], ['short', 'ev_echo'], ['none', 'echo'], [undefined, 'mcp_ev-mcp_echo']]) {
    const a = await bridgeWith({ ...(prefix ? { settings: { toolPrefix: prefix } } : {}), mcpServers: { 'ev-mcp': everything() } });
    await checks.run(`toolPrefix ${prefix ?? '(default)'}: ${want}`, async () => {
      const got = await names(a);
      expect(got[0] === 'mcp' && got.includes(want), got.join(' '));
      const r = await a.call(want, { message: prefix ?? 'default' });
      expect(textOf(r) === `Echo: ${prefix ?? 'default'}`, JSON.stringify(r));
      const d = textOf(await proxy(a, { describe: want }));
      expect(d.startsWith(`${want} (server 'ev-mcp')`), d);
      expect((a.init.instructions ?? '').length > 0, 'no instructions');
    });
    await finish(a);
  }
}

// ---- single ---------------------------------------------------------------------------------

async function scenarioSingle() {
  const a = await bridgeWith({ mcpServers: { everything: everything({ excludeTools: ['get-sum', 'mcp_everything_echo'] }) } },
    { mode: 'connect', name: 'everything' });
  await checks.run('single mode: excludeTools (raw and exposed names) left out of tools/list', async () => {
    const got = await names(a);
    expect(!got.includes('get-sum') && !got.includes('echo'), got.join(' '));
    expect(got.includes('get-env') && !got.includes('mcp'), got.join(' '));
    // answered as the server answers a tool it does not have: a tool result with isError
    const r = await a.call('get-sum', { a: 1, b: 2 });
    expect(r.isError && /unknown tool 'get-sum'.*excludeTools/.test(textOf(r)), `calling it: ${JSON.stringify(r)}`);
  });
  await finish(a);
}

const SCENARIOS = { proxy: scenarioProxy, direct: scenarioDirect, prefix: scenarioPrefix, single: scenarioSingle };
let ok = false;
try {
  if (!SCENARIOS[opts.scenario]) throw new Error(`unknown scenario ${opts.scenario}`);
  await SCENARIOS[opts.scenario]();
  ok = checks.summary();
} catch (err) {
  process.stdout.write(`FAIL internal: ${err?.stack ?? err}\n`);
}
process.exit(ok ? 0 : 1);
