#!/usr/bin/env node
// The agent of scripts/demo's OAuth part: the TypeScript SDK's Client runs an MCP server over
// stdio (there: `mcp-bridge -v serve`), the way pi, Claude Code or Cursor do, and calls one tool
// again and again on one session, across several expiries of the upstream's access token. The
// tool is mcp-resource-server.mjs's whoami (through the bridge: mcp_<server>_whoami), which
// answers with the claims of the token the server accepted: the agent prints a line whenever
// that token changes (its expiry, never the token), and a summary at the end.
//
//   node demo-expiry-agent.mjs --tool NAME [--tokens K] [--interval-ms MS] [--timeout SECONDS]
//                              -- COMMAND [ARGS...]
//
// Calls every --interval-ms (default 250) until the server has accepted K distinct tokens
// (default 4: three refreshes). The server gets this process's environment and working
// directory; its stderr is this process's. Exit status 0 when every call answered without
// isError, K tokens were seen within --timeout (default 90 s), and the server exited by itself
// with status 0 once its stdin was closed; 1 otherwise (with the reason); 2 for a usage error.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

function usage(msg) {
    process.stderr.write(`demo-expiry-agent: ${msg}\n` +
        'usage: node demo-expiry-agent.mjs --tool NAME [--tokens K] [--interval-ms MS] ' +
        '[--timeout SECONDS] -- COMMAND [ARGS...]\n');
    process.exit(2);
}

const opts = { tool: '', tokens: 4, intervalMs: 250, timeout: 90 };
const argv = process.argv.slice(2);
let i = 0;
for (; i < argv.length && argv[i] !== '--'; i++) {
    const a = argv[i];
    const value = () => {
        if (i + 1 >= argv.length) usage(`${a} needs a value`);
        return argv[++i];
    };
    const positive = () => {
        const v = Number(value());
        if (!Number.isInteger(v) || v <= 0) usage(`${a} needs a positive integer`);
        return v;
    };
    if (a === '--tool') opts.tool = value();
    else if (a === '--tokens') opts.tokens = positive();
    else if (a === '--interval-ms') opts.intervalMs = positive();
    else if (a === '--timeout') opts.timeout = positive();
    else usage(`unknown argument '${a}'`);
}
const command = argv.slice(i + 1);
if (!opts.tool) usage('--tool NAME is required');
if (command.length === 0) usage('no COMMAND after --');

function out(line = '') {
    process.stdout.write(`${line}\n`);
}
function fail(msg) {
    process.stderr.write(`demo-expiry-agent: ${msg}\n`);
    process.exit(1);
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const clock = (unixSeconds) => new Date(unixSeconds * 1000).toISOString().slice(11, 19);

const started = Date.now();
const deadline = started + opts.timeout * 1000;
// A server that hangs ends the run with a message, not a hang.
setTimeout(() => fail(`gave up after ${opts.timeout + 15} s`), (opts.timeout + 15) * 1000).unref();

const transport = new StdioClientTransport({
    command: command[0],
    args: command.slice(1),
    env: process.env,
    stderr: 'inherit',
});
const client = new Client({ name: 'demo-expiry-agent', version: '1.0.0' }, { capabilities: {} });
try {
    await client.connect(transport);
} catch (e) {
    fail(`could not connect to '${command.join(' ')}': ${e.message}`);
}
const info = client.getServerVersion();
out(`connected to ${info?.name} ${info?.version}`);
const { tools } = await client.listTools(undefined, { timeout: 30000 });
out(`tools/list: ${tools.map((t) => t.name).join(', ')}`);
if (!tools.some((t) => t.name === opts.tool)) fail(`'${opts.tool}' is not in tools/list`);
out(`calling ${opts.tool} every ${opts.intervalMs} ms on this one session, ` +
    `until the server has accepted ${opts.tokens} different tokens`);

// The claims whoami answered with: structuredContent, else its text (JSON).
function claimsOf(result) {
    if (result.structuredContent && typeof result.structuredContent === 'object')
        return result.structuredContent;
    try {
        return JSON.parse(result.content?.[0]?.text ?? '');
    } catch {
        return undefined;
    }
}

let calls = 0;
let failed = 0;
const seen = []; // the exp of each distinct token, in order
while (seen.length < opts.tokens && Date.now() < deadline) {
    calls += 1;
    const at = ((Date.now() - started) / 1000).toFixed(1);
    let result;
    try {
        result = await client.callTool({ name: opts.tool, arguments: {} }, undefined,
            { timeout: 30000 });
    } catch (e) {
        failed += 1;
        out(`  call ${calls} at ${at} s: JSON-RPC error: ${e.message}`);
        await sleep(opts.intervalMs);
        continue;
    }
    const claims = claimsOf(result);
    if (result.isError || typeof claims?.exp !== 'number') {
        failed += 1;
        out(`  call ${calls} at ${at} s: failed: ${result.content?.[0]?.text ?? '(no text)'}`);
        await sleep(opts.intervalMs);
        continue;
    }
    const exp = claims.exp;
    if (!seen.includes(exp)) {
        const now = Date.now() / 1000;
        const left = (exp - now).toFixed(1);
        if (seen.length === 0) {
            out(`  call ${calls} at ${at} s: token 1 (sub ${claims.sub}), valid until ` +
                `${clock(exp)} UTC (${left} s left)`);
        } else {
            const previous = seen[seen.length - 1];
            out(`  call ${calls} at ${at} s: token ${seen.length + 1}, valid until ${clock(exp)} ` +
                `UTC: the bridge replaced the previous one ${(previous - now).toFixed(1)} s ` +
                'before it expired');
        }
        seen.push(exp);
    }
    await sleep(opts.intervalMs);
}
const seconds = ((Date.now() - started) / 1000).toFixed(1);
out(`${calls} calls in ${seconds} s on one session: ${failed} failed, ` +
    `${seen.length} different tokens accepted by the server`);
let ok = failed === 0 && seen.length >= opts.tokens;
if (seen.length < opts.tokens)
    out(`(wanted ${opts.tokens} different tokens within ${opts.timeout} s)`);

// Closing: the SDK ends the server's stdin, then after 2 s sends SIGTERM, after 2 more SIGKILL.
const proc = transport._process; // the SDK's child (pinned SDK version; for this report only)
await client.close();
if (proc && proc.exitCode === null && proc.signalCode === null)
    await new Promise((resolve) => proc.once('close', resolve));
if (proc && proc.signalCode) {
    out(`the server had to be stopped with ${proc.signalCode} after its stdin closed`);
    ok = false;
} else if (proc) {
    out(`stdin closed: the server exited by itself with status ${proc.exitCode}`);
    if (proc.exitCode !== 0) ok = false;
}
process.exit(ok ? 0 : 1);
