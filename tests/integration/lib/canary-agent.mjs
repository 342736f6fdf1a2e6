#!/usr/bin/env node
// canary-agent.mjs: the agent of tests/integration/security_canary.sh, the SDK's Client (through
// tests/peers/bridge-lib.mjs) on `mcp-bridge serve`. It calls every server of the test's
// configuration once, checks that each credential reached its server (by digest: the agent
// never holds a canary but the environment variable it hands the bridge), makes calls fail on
// purpose, and writes every answer, result or error, to $CANARY_RESULTS/LABEL.json for the
// test to scan. Prints `ok LABEL` / `FAIL LABEL: why` lines (run by `driver` of lib/bridge.sh).
//
// Settings (environment): CANARY_BRIDGE (JSON argv of the bridge), CANARY_BRIDGE_LOG (its
// stderr), CANARY_RESULTS (a directory), CANARY_DIGESTS (JSON: header name -> the sha256,
// 16 hex digits, of the value it must carry), PEERS_DIR (tests/peers).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const peers = process.env.PEERS_DIR;
const {
  Agent, Checks, checkCleanExit, expect, textOf,
} = await import(join(peers, 'bridge-lib.mjs'));

const results = process.env.CANARY_RESULTS;
const digests = JSON.parse(process.env.CANARY_DIGESTS ?? '{}');
const checks = new Checks();
const agent = new Agent('canary agent');

function keep(label, what) {
  writeFileSync(join(results, `${label}.json`), `${JSON.stringify(what, null, 1)}\n`);
}

// a call whose answer (result, or the error) is kept; returns {result} or {error}
async function call(label, tool, args = {}) {
  try {
    const result = await agent.call(tool, args);
    keep(label, { result });
    return { result };
  } catch (err) {
    const error = { message: String(err?.message ?? err), code: err?.code, data: err?.data };
    keep(label, { error });
    return { error };
  }
}

function ok(answer, what) {
  expect(answer.result, `${what}: the call failed: ${answer.error?.message}`);
  expect(!answer.result.isError, `${what}: an error result: ${textOf(answer.result).slice(0, 300)}`);
  return answer.result;
}

function failed(answer, what) {
  expect(answer.error || answer.result?.isError, `${what}: the call succeeded`);
}

await checks.run('the agent connects to mcp-bridge serve', async () => {
  await agent.connect({
    kind: 'stdio',
    argv: JSON.parse(process.env.CANARY_BRIDGE),
    stderrPath: process.env.CANARY_BRIDGE_LOG,
  }, { timeoutMs: 30000 });
}, 40000);

// (a server slow to connect comes after the bridge's settle window, with list_changed: the
// list is asked again until every server's tools are there)
await checks.run('tools/list holds every working server\'s tools', async () => {
  const want = ['mcp_hdr_seen', 'mcp_helped_seen', 'mcp_rs_whoami', 'mcp_cfg_env', 'mcp_plain_env'];
  await agent.until(async () => {
    const { tools } = await agent.request('tools/list', {});
    keep('tools-list', tools.map((t) => ({ name: t.name, description: t.description })));
    const names = new Set(tools.map((t) => t.name));
    return want.every((t) => names.has(t));
  }, 30000, `the tools ${want.join(', ')} to be listed`);
}, 40000);

await checks.run('the secrets in headers (keychain, file and literal recipes, the env recipe as the bearer token) reach the header server', async () => {
  const got = ok(await call('hdr-seen', 'mcp_hdr_seen'), 'mcp_hdr_seen').structuredContent?.headers ?? {};
  expect(got['x-api-key'] === digests['x-api-key'], `X-Api-Key digest ${got['x-api-key']}, expected ${digests['x-api-key']}`);
  expect(got.authorization === digests.authorization, `Authorization digest ${got.authorization}, expected ${digests.authorization}`);
  expect(got['x-file'] === digests['x-file'], `X-File digest ${got['x-file']}, expected ${digests['x-file']}`);
  expect(got['x-lit'] === digests['x-lit'], `X-Lit digest ${got['x-lit']}, expected ${digests['x-lit']}`);
  expect(got['x-helper'] === null, 'the header server got X-Helper, which its entry does not have');
});

await checks.run('the headersHelper\'s answer reaches its server', async () => {
  const got = ok(await call('helped-seen', 'mcp_helped_seen'), 'mcp_helped_seen').structuredContent?.headers ?? {};
  expect(got['x-helper'] === digests['x-helper'], `X-Helper digest ${got['x-helper']}, expected ${digests['x-helper']}`);
  expect(got['x-api-key'] === null && got.authorization === null, 'the helper\'s server got another entry\'s secret');
});

await checks.run('the OAuth token from mcp-auth is accepted by the resource server', async () => {
  ok(await call('rs-whoami', 'mcp_rs_whoami'), 'mcp_rs_whoami');
});

await checks.run('the configured stdio server answers with its environment', async () => {
  ok(await call('cfg-env', 'mcp_cfg_env'), 'mcp_cfg_env');
});

await checks.run('the other stdio server answers with its environment', async () => {
  ok(await call('plain-env', 'mcp_plain_env'), 'mcp_plain_env');
});

await checks.run('an error result quoting the other server\'s environment reaches the agent', async () => {
  failed(await call('plain-fail', 'mcp_plain_fail'), 'mcp_plain_fail');
});

await checks.run('a JSON-RPC error quoting the other server\'s environment reaches the agent', async () => {
  failed(await call('plain-rpcfail', 'mcp_plain_rpcfail'), 'mcp_plain_rpcfail');
});

await checks.run('a header answer with a line break is refused: the server is not connected', async () => {
  const st = ok(await call('mcp-connect-badhelper', 'mcp', { connect: 'badhelper' }), 'mcp({connect})');
  expect(!/: connected/.test(textOf(st)), `mcp({connect: "badhelper"}) says: ${textOf(st).slice(0, 300)}`);
  failed(await call('badhelper-seen', 'mcp_badhelper_seen'), 'mcp_badhelper_seen');
});

await checks.run('a secret that does not resolve: the server fails with the reason', async () => {
  failed(await call('missing-seen', 'mcp_missing_seen'), 'mcp_missing_seen');
});

await checks.run('the proxy tool\'s status and search', async () => {
  ok(await call('mcp-status', 'mcp', {}), 'mcp({})');
  ok(await call('mcp-search', 'mcp', { search: 'env seen whoami', includeSchemas: true }), 'mcp({search})');
});

await checks.run('an unknown tool is an error', async () => {
  failed(await call('unknown-tool', 'mcp_hdr_nosuchtool'), 'mcp_hdr_nosuchtool');
});

await checkCleanExit(checks, agent);
process.exit(checks.summary() ? 0 : 1);
