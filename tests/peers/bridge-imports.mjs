#!/usr/bin/env node
// bridge-imports.mjs: the agent (the SDK's Client) on `mcp-bridge serve` whose servers come from
// other clients' files ("imports"): the tools of the imported servers must be listed and
// callable through the bridge (--call TOOL=EXPECTED: echo's answer must contain EXPECTED), no tool
// of a server that must not be there may be listed (--absent-prefix), and at the end the bridge
// must exit 0 at the end of its stdin with no process left. One line per check on stdout; exit
// status 0 only when all passed (tests/integration/bridge_imports.sh).
import { Agent, Checks, checkCleanExit, expect, sleep, textOf } from './bridge-lib.mjs';
import { parseArgs } from './lib/common.mjs';

const spec = {
  bridge: { type: 'string', arg: 'JSON', help: 'the bridge command line, a JSON array' },
  cwd: { type: 'string', arg: 'DIR', help: 'the directory the bridge runs in (the project)' },
  log: { type: 'string', arg: 'PATH', help: "the bridge's stderr goes there" },
  'expect-tool': { type: 'list', arg: 'NAME', help: 'a tool that must be listed (repeatable)' },
  'absent-prefix': { type: 'list', arg: 'PREFIX', help: 'no listed tool may start with it (repeatable)' },
  call: { type: 'list', arg: 'TOOL=TEXT', help: "call TOOL with {message: 'imported'}; its text must contain TEXT" },
};
const opts = parseArgs(spec, process.argv.slice(2), `
Lists and calls the tools of imported servers through mcp-bridge serve.`);
if (!opts.bridge) {
  process.stderr.write('bridge-imports: --bridge is required (see --help)\n');
  process.exit(2);
}

const checks = new Checks('imports/');
const agent = new Agent('imports');
let tools = [];

const connected = await checks.run('the agent connects to mcp-bridge serve', async () => {
  await agent.connect({ kind: 'stdio', argv: JSON.parse(opts.bridge), cwd: opts.cwd, stderrPath: opts.log });
}, 30000);

if (connected) {
  await checks.run('tools/list has the imported servers\' tools and none of the others', async () => {
    // a server that is slow to start may come after the first answer (announced later): ask
    // again until every expected tool is there, for a bounded time
    const list = async () => {
      const res = await agent.request('tools/list', {});
      tools = (res.tools ?? []).map((t) => t.name);
      return opts.expectTool.every((want) => tools.includes(want));
    };
    const end = Date.now() + 20000;
    while (!(await list()) && Date.now() < end) await sleep(200);
    for (const want of opts.expectTool) {
      expect(tools.includes(want), `'${want}' is not listed; listed: ${tools.join(', ')}`);
    }
    for (const prefix of opts.absentPrefix) {
      const bad = tools.filter((n) => n.startsWith(prefix));
      expect(bad.length === 0, `tools of a server that must not be there: ${bad.join(', ')}`);
    }
  }, 30000);

  for (const c of opts.call) {
    const i = c.indexOf('=');
    const [name, want] = [c.slice(0, i), c.slice(i + 1)];
    await checks.run(`${name} answers through the bridge`, async () => {
      const res = await agent.call(name, { message: 'imported' });
      expect(!res.isError, `the call failed: ${textOf(res)}`);
      expect(textOf(res).includes(want), `the answer '${textOf(res)}' does not contain '${want}'`);
    });
  }
  await checkCleanExit(checks, agent);
}

process.exit(checks.summary() ? 0 : 1);
