#!/usr/bin/env node
// A small MCP server (the SDK's McpServer) for the bridge's tests, over stdio or Streamable HTTP,
// with the tools a fault test needs: its pid, a sleep that notices cancellation, a tool that
// adds a tool at run time (list_changed), an exit in the middle of a call. See --help and
// README.md.
import { createServer } from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod/v4';

import { listen, makeLogger, parseArgs, ready, sendJson } from './lib/common.mjs';
import { handleSession, readRpcBody, serveHttp } from './lib/mcp-http.mjs';

const spec = {
  transport: { type: 'string', default: 'stdio', arg: 'stdio|http', help: 'stdio (the protocol on stdin/stdout) or http (Streamable HTTP at /mcp)' },
  port: { type: 'int', default: 0, arg: 'PORT', help: 'http: port on 127.0.0.1; 0 picks a free one' },
  name: { type: 'string', default: 'bridge-server', arg: 'NAME', help: 'serverInfo.name, and the prefix of what echo answers' },
  tag: { type: 'string', arg: 'TEXT', help: 'ignored: lets a test find its own processes by their command line' },
  quiet: { type: 'bool', help: 'log nothing but errors' },
};

const usage = `
An MCP server for the bridge's tests. Tools:
  echo {message}     "<name>: <message>"
  pid                its process id (text, and structuredContent {pid})
  sleep {ms}         answers after ms milliseconds; a progress notification at the start when
                     the call has a progress token; notices notifications/cancelled
  cancelled          the calls cancelled so far: [{requestId, reason}] (text JSON, and
                     structuredContent {cancelled: [...]})
  add-tool {name}    registers a tool NAME (answers "late tool NAME"): tools/list_changed
  exit {code}        exits at once, in the middle of the call
  big {bytes}        a text of that many 'x'
Resource bridge-test://<name>/info, prompt "hello" {who}.

http: stateful sessions; a request with an unknown MCP-Session-Id gets 404 (the client must
initialize again). Test endpoints: GET /__test/stats (initializations, requests, not_found,
tool_calls by name, open sessions), POST /__test/forget-sessions (every session becomes unknown:
the next request gets 404).`;

const opts = parseArgs(spec, process.argv.slice(2), usage);
const log = makeLogger(`bridge-server ${opts.name}`, opts.quiet);
if (!['stdio', 'http'].includes(opts.transport)) {
  process.stderr.write(`bridge-server: --transport is stdio or http, not '${opts.transport}'\n`);
  process.exit(2);
}

const stats = { initializations: 0, requests: 0, not_found: 0, tool_calls: {}, forgotten: 0 };
const cancelled = [];
const lateTools = new Set();
const servers = new Set();

function countCall(name) {
  stats.tool_calls[name] = (stats.tool_calls[name] ?? 0) + 1;
}

function addLateTool(server, name) {
  server.registerTool(name, { description: `added at run time by add-tool` }, async () => {
    countCall(name);
    return { content: [{ type: 'text', text: `late tool ${name}` }] };
  });
}

function newMcpServer() {
  const server = new McpServer({ name: opts.name, version: '1.0.0' }, {
    capabilities: { logging: {} },
  });
  servers.add(server);
  server.registerTool('echo', {
    description: 'Echoes the message, prefixed with the server name',
    inputSchema: { message: z.string() },
  }, async ({ message }) => {
    countCall('echo');
    return { content: [{ type: 'text', text: `${opts.name}: ${message}` }] };
  });
  server.registerTool('pid', {
    description: "The server's process id",
    outputSchema: { pid: z.number() },
  }, async () => {
    countCall('pid');
    return { content: [{ type: 'text', text: String(process.pid) }], structuredContent: { pid: process.pid } };
  });
  server.registerTool('sleep', {
    description: 'Answers after ms milliseconds (notices cancellation)',
    inputSchema: { ms: z.number().int().min(0) },
  }, async ({ ms }, extra) => {
    countCall('sleep');
    log(`sleep ${ms} ms (request ${extra.requestId})`);
    const token = extra._meta?.progressToken;
    if (token !== undefined) {
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress: 0, total: ms, message: 'started' },
      });
    }
    const aborted = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve(true);
      }, { once: true });
    });
    if (aborted) {
      const reason = extra.signal.reason instanceof Error ? extra.signal.reason.message : String(extra.signal.reason ?? '');
      cancelled.push({ requestId: extra.requestId, reason });
      log(`sleep cancelled (request ${extra.requestId}: ${reason})`);
    }
    return { content: [{ type: 'text', text: aborted ? 'cancelled' : `slept ${ms} ms` }] };
  });
  server.registerTool('cancelled', {
    description: 'The calls cancelled so far',
  }, async () => {
    countCall('cancelled');
    return { content: [{ type: 'text', text: JSON.stringify(cancelled) }], structuredContent: { cancelled } };
  });
  server.registerTool('add-tool', {
    description: 'Registers a new tool (the server sends notifications/tools/list_changed)',
    inputSchema: { name: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/) },
  }, async ({ name }) => {
    countCall('add-tool');
    if (!lateTools.has(name)) {
      lateTools.add(name);
      for (const s of servers) addLateTool(s, name);
    }
    return { content: [{ type: 'text', text: `added ${name}` }] };
  });
  server.registerTool('exit', {
    description: 'Exits at once, in the middle of the call',
    inputSchema: { code: z.number().int().min(0).max(255).default(1) },
  }, async ({ code }) => {
    countCall('exit');
    log(`exiting with status ${code} as asked`);
    process.exit(code);
  });
  server.registerTool('big', {
    description: 'A text of that many x',
    inputSchema: { bytes: z.number().int().min(0).max(64 << 20) },
  }, async ({ bytes }) => {
    countCall('big');
    return { content: [{ type: 'text', text: 'x'.repeat(bytes) }] };
  });
  for (const name of lateTools) addLateTool(server, name);
  server.registerResource('info', `bridge-test://${opts.name}/info`, {
    mimeType: 'text/plain', description: `about ${opts.name}`,
  }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: `this is ${opts.name}` }],
  }));
  server.registerPrompt('hello', {
    description: 'Says hello',
    argsSchema: { who: z.string() },
  }, ({ who }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `${opts.name} says hello to ${who}` } }],
  }));
  return server;
}

if (opts.transport === 'stdio') {
  const server = newMcpServer();
  server.server.oninitialized = () => {
    stats.initializations += 1;
  };
  await server.connect(new StdioServerTransport());
  // end of stdin is the end of the session
  process.stdin.on('end', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
  log(`serving on stdio (pid ${process.pid})`);
} else {
  const sessions = new Map(); // session id -> transport
  const httpServer = createServer();
  const port = await listen(httpServer, opts.port);
  const url = `http://127.0.0.1:${port}/mcp`;

  const handleMcp = async (req, res) => {
    stats.requests += 1;
    const rpc = await readRpcBody(req, res, 64 << 20);
    if (!rpc) return;
    await handleSession(sessions, req, res, rpc.body, {
      log,
      newServer: newMcpServer,
      opened: (id) => {
        stats.initializations += 1;
        log(`session ${id} opened`);
      },
      notFound: () => {
        stats.not_found += 1;
      },
      closed: (server) => servers.delete(server),
    });
  };

  serveHttp(httpServer, log, sessions, async (req, res, path) => {
    if (path === '/mcp') {
      await handleMcp(req, res);
    } else if (req.method === 'GET' && path === '/__test/stats') {
      sendJson(res, 200, { ...stats, open_sessions: sessions.size, cancelled });
    } else if (req.method === 'POST' && path === '/__test/forget-sessions') {
      stats.forgotten += sessions.size;
      sessions.clear();
      sendJson(res, 200, { ok: true });
    } else {
      return false;
    }
    return true;
  });
  log(`serving ${url} (pid ${process.pid})`);
  ready(url);
}
