// The Streamable HTTP side shared by the test MCP servers (bridge-server.mjs --transport http,
// mcp-resource-server.mjs): stateful sessions on the SDK's StreamableHTTPServerTransport, and an
// HTTP server that routes, logs and shuts down the same way.
import { randomUUID } from 'node:crypto';

import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

import { closeServer, onShutdown, readBody, sendJson } from './common.mjs';

const rpcError = (code, message) => ({ jsonrpc: '2.0', error: { code, message }, id: null });

// Reads the JSON-RPC body of a POST (undefined for other methods and an empty body). Returns
// { body }, or null once it has answered 400 Parse error.
export async function readRpcBody(req, res, limit) {
  if (req.method !== 'POST') return { body: undefined };
  const text = await readBody(req, limit);
  try {
    return { body: text ? JSON.parse(text) : undefined };
  } catch {
    sendJson(res, 400, rpcError(-32700, 'Parse error'));
    return null;
  }
}

// Hands a request of /mcp to its session (sessions: a Map session id -> transport). A request
// with an unknown MCP-Session-Id gets 404 (the client must initialize again) and notFound() is
// called; one without a session id that is not an initialize gets 400; an initialize opens a
// session on a new server, newServer(), and calls opened(id) once the SDK has given it its id.
// The session is forgotten when its transport closes (closed(server) is called then).
export async function handleSession(sessions, req, res, body, { log, newServer, opened, notFound, closed }) {
  const sid = req.headers['mcp-session-id'];
  let transport = sid ? sessions.get(sid) : undefined;
  if (!transport) {
    if (sid) {
      notFound?.();
      sendJson(res, 404, rpcError(-32001, 'Session not found'));
      return;
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      sendJson(res, 400, rpcError(-32000, 'Bad Request: no valid session ID'));
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, transport);
        opened?.(id);
      },
      onsessionclosed: (id) => {
        sessions.delete(id);
        log(`session ${id} closed`);
      },
    });
    const server = newServer();
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
      closed?.(server);
    };
    await server.connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

// Serves httpServer's requests with route(req, res, path) (path without the query), which
// returns false for a path it does not serve (404). A route that throws gets 500 (or, once
// headers are out, the end of its response); every request is logged with its status. On
// SIGTERM, SIGINT or the end of stdin the sessions' transports and the server are closed.
export function serveHttp(httpServer, log, sessions, route) {
  httpServer.on('request', async (req, res) => {
    const path = req.url.split('?')[0];
    try {
      if (!(await route(req, res, path))) sendJson(res, 404, { error: 'not_found' });
    } catch (err) {
      log(`error on ${req.method} ${path}: ${err.stack ?? err}`);
      if (!res.headersSent) sendJson(res, 500, { error: 'server_error' });
      else res.end();
    }
    log(`${req.method} ${path} ${res.statusCode}`);
  });
  onShutdown(log, async () => {
    for (const t of sessions.values()) await t.close().catch(() => {});
    await closeServer(httpServer);
  });
}
