// The pi adapter's keys through the real bridge (tests/integration/bridge_adapter.sh): the
// adapter README's own example configuration as a file, read by `mcp-bridge list --json`, and
// served with tiny-server.mjs and server-everything behind the bridge, the SDK's Client as the
// agent.
//
//   node bridge-adapter.mjs --bridge BIN --everything PATH --root DIR
//
// Checks: every entry of the README's examples is valid, with the keys' effect shown by list
// (lifecycle lazy-keep-alive, requestTimeoutMs, toolPrefix, includeTools, excludeTools) and
// settings with a bad value dropped alone; in serve, includeTools and excludeTools (raw names,
// names under each entry's toolPrefix, globs) leave the tools out of tools/list and refuse
// them, and requestTimeoutMs (the entry's, else the settings') is the calls' timeout.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { Agent, Checks, checkCleanExit, expect, textOf } from './bridge-lib.mjs';

const opts = {};
for (let i = 2; i < process.argv.length; i += 2) opts[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const k of ['bridge', 'everything', 'root']) {
  if (!opts[k]) throw new Error(`--${k} is required`);
}
const checks = new Checks('adapter/');
const tiny = fileURLToPath(new URL('./tiny-server.mjs', import.meta.url));

// The README's examples (Server Options, Settings, Direct Tools, Search keywords, Lifecycle
// Modes) in one file, as written there.
const readme = {
  settings: {
    toolPrefix: 'server',
    idleTimeout: 10,
    requestTimeoutMs: 30000,
    showStatusIcon: true,
    mcpFooterStatus: 'full',
    toolResultRendering: 'compact',
    collapsedResultLines: 1,
    notifyOnStartupConnect: true,
    warnOnLargeDirectTools: true,
    hostConfigDiscovery: 'off',
    approveTools: ['github_delete_*', 'notion_update_*'],
    oauthDir: '.pi/mcp-oauth',
    trace: { enabled: true, file: '.pi/mcp-traces/mcp.jsonl', maxBytes: 262144, maxEvents: 10000 },
  },
  mcpServers: {
    'my-server': { command: 'npx', args: ['-y', 'some-mcp-server'], lifecycle: 'lazy', idleTimeout: 10, requestTimeoutMs: 30000 },
    'chrome-devtools': { command: 'npx', args: ['-y', 'chrome-devtools-mcp@1.6.0'], directTools: true },
    github: {
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-github'],
      directTools: 'search',
      searchKeywords: { search_code: ['grep'], '*': ['gh'] },
    },
    'huge-server': { command: 'npx', args: ['-y', 'mega-mcp@latest'], directTools: false },
    dokploy: { url: 'http://localhost:3845/mcp', directTools: true, includeTools: ['get_*', 'dokploy_list_apps'] },
    figma: { url: 'http://localhost:3845/mcp', directTools: true, excludeTools: ['read_figjam', 'figma_get_code_connect_map'] },
    resident: { command: 'npx', args: ['-y', 'some-mcp-server'], lifecycle: 'lazy-keep-alive' },
  },
};

async function listJson(file) {
  const r = spawnSync(opts.bridge, ['list', '--json', '--config', file], { encoding: 'utf8', timeout: 20000 });
  expect(r.status === 0, `list exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function listChecks() {
  const file = `${opts.root}/readme.json`;
  writeFileSync(file, JSON.stringify(readme, null, 2));
  await checks.run('list: every entry of the README valid, the keys as the adapter means them', async () => {
    const j = await listJson(file);
    const by = Object.fromEntries(j.servers.map((s) => [s.name, s]));
    for (const name of Object.keys(readme.mcpServers)) {
      expect(by[name] && by[name].valid && !by[name].error, `${name}: ${JSON.stringify(by[name])}`);
    }
    const my = by['my-server'];
    expect(my.lifecycle === 'lazy' && my.idle_timeout_ms === 600000 && my.request_timeout_ms === 30000, JSON.stringify(my));
    expect(my.tool_prefix === 'server' && my.include_tools === null, JSON.stringify(my));
    expect(by.resident.lifecycle === 'lazy-keep-alive' && by.resident.idle_timeout_ms === null, JSON.stringify(by.resident));
    expect(by.resident.request_timeout_ms === 30000, 'the settings\' requestTimeoutMs');
    expect(JSON.stringify(by.dokploy.include_tools) === '["get_*","dokploy_list_apps"]', JSON.stringify(by.dokploy));
    expect(JSON.stringify(by.figma.exclude_tools) === '["read_figjam","figma_get_code_connect_map"]', JSON.stringify(by.figma));
    // "search" is read as the adapter means it (tools held back until a search finds them)
    expect(!by.github.warnings.some((w) => w.includes('"directTools"')), JSON.stringify(by.github.warnings));
    // searchKeywords is read: the proxy tool's search finds the tools by them
    expect(!by.github.warnings.some((w) => w.includes('"searchKeywords"')), JSON.stringify(by.github.warnings));
    // each setting the bridge does not apply says so; none is an error
    const diags = j.diagnostics.map((d) => d.message);
    for (const key of ['showStatusIcon', 'mcpFooterStatus', 'toolResultRendering', 'collapsedResultLines',
      'notifyOnStartupConnect', 'warnOnLargeDirectTools', 'hostConfigDiscovery', 'approveTools', 'oauthDir']) {
      expect(diags.some((m) => (m.includes(`"${key}"`) || m.includes(`"settings.${key}"`)) && / accepted and not applied/.test(m)), `${key}: ${diags.join('\n')}`);
    }
    // trace is applied (bridge_trace.sh): not a word about it
    expect(!diags.some((m) => m.includes('"trace"') || m.includes('settings.trace')), diags.join('\n'));
    expect(!diags.some((m) => m.includes('it is ignored')), diags.join('\n'));
  });
  await checks.run('list: one bad setting costs that setting only', async () => {
    const bad = `${opts.root}/bad-settings.json`;
    writeFileSync(bad, JSON.stringify({ settings: { toolPrefix: 'short', directTools: 'search', requestTimeoutMs: 'soon' },
      mcpServers: { 'gh-mcp': { command: 'npx', lifecycle: 'lazy-keep-alive', idleTimeout: -4 } } }));
    const j = await listJson(bad);
    const s = j.servers[0];
    expect(s.valid && s.tool_prefix === 'short' && s.lifecycle === 'lazy-keep-alive' && s.request_timeout_ms === null, JSON.stringify(s));
    expect(s.warnings.some((w) => w.includes('"idleTimeout" must be') && w.endsWith(': it is ignored')), JSON.stringify(s.warnings));
    const diags = j.diagnostics.map((d) => d.message);
    expect(diags.some((m) => m.includes('"settings.requestTimeoutMs" must be a number of milliseconds, not a string: it is ignored')), diags.join('\n'));
    expect(!diags.some((m) => m.includes('"settings.directTools"')), diags.join('\n'));
  });
}

async function serveChecks() {
  // the README's entries with servers that run here, the keys as written there
  const config = {
    settings: { toolPrefix: 'server', requestTimeoutMs: 2500, settleTimeout: 20000 },
    mcpServers: {
      tiny: { command: process.execPath, args: [tiny, '--tools', '6', '--tag', opts.root],
        includeTools: ['e*', 'tiny_pid', 'tool?'], excludeTools: ['tool5'] },
      'other-mcp': { command: process.execPath, args: [tiny, '--tag', opts.root], toolPrefix: 'short',
        excludeTools: ['other_echo', 'nothing-*'] },
      mcpish: { command: process.execPath, args: [tiny, '--tag', opts.root], toolPrefix: 'mcp',
        includeTools: ['mcp_mcpish_echo'], lifecycle: 'lazy-keep-alive' },
      fast: { command: process.execPath, args: [opts.everything, 'stdio', opts.root], requestTimeoutMs: 1000,
        includeTools: ['trigger-long-running-operation'] },
      slow: { command: process.execPath, args: [opts.everything, 'stdio', opts.root],
        includeTools: ['slow_trigger-long-*'] },
    },
  };
  const file = `${opts.root}/serve.json`;
  writeFileSync(file, JSON.stringify(config, null, 2));
  const a = new Agent('bridge');
  await a.connect({ kind: 'stdio', argv: [opts.bridge, 'serve', '--config', file], stderrPath: `${opts.root}/adapter.bridge.log`, env: process.env },
    { closeTimeoutMs: 3000 });
  const names = async () => (await a.request('tools/list', {})).tools.map((t) => t.name).sort();
  await checks.run('serve: includeTools then excludeTools, by raw name, prefixed name and glob', async () => {
    const got = (await names()).join(' ');
    const want = ['fast_trigger-long-running-operation', 'mcp', 'mcp_mcpish_echo', 'other_pid', 'other_sample',
      'slow_trigger-long-running-operation', 'tiny_echo', 'tiny_pid', 'tiny_tool4', 'tiny_tool6'].join(' ');
    expect(got === want, `tools: ${got}`);
  });
  await checks.run('serve: a tool left out is refused, a kept one answers', async () => {
    const ok = await a.call('tiny_echo', { message: 'hi' });
    expect(textOf(ok) === 'tiny: hi', JSON.stringify(ok));
    for (const name of ['tiny_tool5', 'tiny_sample', 'other_echo']) {
      let refused = false;
      try {
        const r = await a.call(name, {});
        refused = r.isError && /unknown tool/.test(textOf(r));
      } catch (err) {
        refused = /unknown tool/.test(String(err?.message));
      }
      expect(refused, `${name} was called`);
    }
  });
  await checks.run('serve: requestTimeoutMs of the entry, else of the settings, times the call out', async () => {
    const timed = async (name) => {
      const t0 = Date.now();
      let text;
      try {
        const r = await a.call(name, { duration: 8, steps: 2 }, { timeout: 15000 });
        text = textOf(r);
      } catch (err) {
        text = String(err?.message);
      }
      return { ms: Date.now() - t0, text };
    };
    const f = await timed('fast_trigger-long-running-operation');
    expect(/within 1(\.0)? ?s|1000 ?ms|timed out/i.test(f.text) && f.ms < 2400, `fast: ${f.ms} ms: ${f.text}`);
    const s = await timed('slow_trigger-long-running-operation');
    expect(/within 2\.5 ?s|2500 ?ms|timed out/i.test(s.text) && s.ms >= 2400 && s.ms < 6000, `slow: ${s.ms} ms: ${s.text}`);
  }, 30000);
  await checks.run('call: requestTimeoutMs of the entry times the call out, as in serve', async () => {
    const t0 = Date.now();
    const r = spawnSync(opts.bridge, ['call', '--config', file, 'fast', 'trigger-long-running-operation',
      JSON.stringify({ duration: 8, steps: 2 })], { encoding: 'utf8', timeout: 20000 });
    const ms = Date.now() - t0;
    expect(r.status === 1 && /timed out|within 1(\.0)? ?s|1000 ?ms/i.test(r.stderr) && ms < 6000,
      `exit ${r.status} after ${ms} ms: ${r.stderr}`);
  }, 30000);
  await checks.run('serve: a pattern naming no tool is logged once', async () => {
    await a.until(() => {
      const log = spawnSync('grep', ['-c', "\"excludeTools\" 'nothing-\\*' names none of its tools", `${opts.root}/adapter.bridge.log`], { encoding: 'utf8' });
      return log.stdout.trim() === '1';
    }, 10000, 'the warning in the log');
  });
  await checkCleanExit(checks, a);
}

let ok = false;
try {
  await listChecks();
  await serveChecks();
  ok = checks.summary();
} catch (err) {
  process.stdout.write(`FAIL internal: ${err?.stack ?? err}\n`);
}
process.exit(ok ? 0 : 1);
