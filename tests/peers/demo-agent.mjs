#!/usr/bin/env node
// A stand-in agent for scripts/demo: the TypeScript SDK's Client runs an MCP server over stdio
// (there: `mcp-bridge serve`), the way pi, Claude Code or Cursor do, then lists its tools and
// calls the ones named with --call. It prints what an agent sees, on stdout.
//
//   node demo-agent.mjs [--call TOOL JSON]... [--timeout SECONDS] -- COMMAND [ARGS...]
//
// The server gets this process's environment and working directory. Exit status 0 when every
// call answered without isError and the server exited by itself once its stdin was closed;
// 1 otherwise (with the reason on stderr); 2 for a usage error.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

function usage(msg) {
    process.stderr.write(`demo-agent: ${msg}\n` +
        'usage: node demo-agent.mjs [--call TOOL JSON]... [--timeout SECONDS] -- COMMAND [ARGS...]\n');
    process.exit(2);
}

const calls = [];
let timeoutSeconds = 60;
const argv = process.argv.slice(2);
let i = 0;
for (; i < argv.length && argv[i] !== '--'; i++) {
    if (argv[i] === '--call' && i + 2 < argv.length) {
        let args;
        try {
            args = JSON.parse(argv[i + 2]);
        } catch (e) {
            usage(`the arguments of ${argv[i + 1]} are not JSON: ${e.message}`);
        }
        calls.push({ name: argv[i + 1], args });
        i += 2;
    } else if (argv[i] === '--timeout' && i + 1 < argv.length) {
        timeoutSeconds = Number(argv[++i]);
        if (!(timeoutSeconds > 0)) usage('--timeout needs a positive number of seconds');
    } else {
        usage(`unknown argument '${argv[i]}'`);
    }
}
const command = argv.slice(i + 1);
if (command.length === 0) usage('no COMMAND after --');

function fail(msg) {
    process.stderr.write(`demo-agent: ${msg}\n`);
    process.exit(1);
}

// Everything below is bounded: a server that hangs ends the demo with a message, not a hang.
const deadline = setTimeout(() => fail(`gave up after ${timeoutSeconds} s`), timeoutSeconds * 1000);
deadline.unref();

function out(line = '') {
    process.stdout.write(`${line}\n`);
}

// One line per content item, as an agent's transcript would show it.
function describe(result) {
    const lines = [];
    for (const c of result.content ?? []) {
        if (c.type === 'text') lines.push(c.text);
        else if (c.type === 'image' || c.type === 'audio')
            lines.push(`[${c.type} ${c.mimeType}, ${Math.floor((c.data?.length ?? 0) * 3 / 4)} bytes]`);
        else if (c.type === 'resource_link') lines.push(`[link ${c.uri}]`);
        else if (c.type === 'resource') lines.push(`[resource ${c.resource?.uri}]`);
        else lines.push(JSON.stringify(c));
    }
    if (result.structuredContent !== undefined)
        lines.push(`structuredContent: ${JSON.stringify(result.structuredContent)}`);
    return lines;
}

const transport = new StdioClientTransport({
    command: command[0],
    args: command.slice(1),
    env: process.env,
    stderr: 'inherit',
});
const client = new Client({ name: 'demo-agent', version: '1.0.0' }, { capabilities: {} });
let failed = false;

try {
    await client.connect(transport);
} catch (e) {
    fail(`could not connect to '${command.join(' ')}': ${e.message}`);
}
const info = client.getServerVersion();
out(`connected to ${info?.name} ${info?.version}`);

const { tools } = await client.listTools(undefined, { timeout: timeoutSeconds * 1000 });
out(`tools/list: ${tools.length} tools`);
for (const t of tools) out(`  ${t.name}`);

for (const call of calls) {
    out();
    out(`tools/call ${call.name} ${JSON.stringify(call.args)}`);
    if (!tools.some((t) => t.name === call.name)) {
        out(`  (not in tools/list)`);
        failed = true;
        continue;
    }
    let result;
    try {
        result = await client.callTool({ name: call.name, arguments: call.args }, undefined,
            { timeout: timeoutSeconds * 1000 });
    } catch (e) {
        out(`  JSON-RPC error: ${e.message}`);
        failed = true;
        continue;
    }
    for (const line of describe(result)) out(`  ${line}`);
    if (result.isError) {
        out('  (isError: the tool reported an error)');
        failed = true;
    }
}

// Closing: the SDK ends the server's stdin, then after 2 s sends SIGTERM, after 2 more SIGKILL.
// A server that stops by itself on end of input exits with its own status and no signal.
const proc = transport._process; // the SDK's child (pinned SDK version; for this report only)
const started = Date.now();
await client.close();
out();
if (proc && proc.exitCode === null && proc.signalCode === null)
    await new Promise((resolve) => proc.once('close', resolve));
if (proc && proc.signalCode) {
    out(`the server had to be stopped with ${proc.signalCode} after its stdin closed`);
    failed = true;
} else if (proc) {
    out(`stdin closed: the server exited by itself with status ${proc.exitCode} ` +
        `(${Date.now() - started} ms)`);
    if (proc.exitCode !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
