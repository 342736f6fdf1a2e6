// stdio-server.mjs: the loop of the small stdio MCP servers of the tests (newline-delimited
// JSON-RPC, node's own modules only, so that they start in a few tens of milliseconds):
// tiny-server.mjs and tests/integration/lib/canary-server.mjs.
//
// serveStdio({ name, capabilities, listTools, call, onAnswer }) answers initialize (the
// client's protocolVersion, else 2025-06-18; serverInfo {name, version 1.0.0}), ping and
// tools/list ({tools} from listTools()); tools/call goes to call(id, params), which answers
// with send(); an answer from the client (to a request the server sent) to onAnswer(m), which
// says whether it was its own. Any other method is -32601, a line that is not JSON -32700.
// It exits 0 when stdin ends.
import { createInterface } from 'node:readline';

// --NAME VALUE from the command line, else dflt
export function opt(name, dflt) {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
}

export const send = (msg) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...msg })}\n`);
export const text = (t, extra = {}) => ({ content: [{ type: 'text', text: t }], ...extra });

export function serveStdio({ name, capabilities, listTools, call, onAnswer = () => false }) {
  const rl = createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    let m;
    try {
      m = JSON.parse(line);
    } catch {
      send({ id: null, error: { code: -32700, message: 'parse error' } });
      return;
    }
    if (m.id !== undefined && !m.method && onAnswer(m)) return;
    if (m.id === undefined || !m.method) return; // notifications, other answers
    switch (m.method) {
      case 'initialize':
        send({
          id: m.id,
          result: {
            protocolVersion: m.params?.protocolVersion ?? '2025-06-18',
            capabilities,
            serverInfo: { name, version: '1.0.0' },
          },
        });
        break;
      case 'ping':
        send({ id: m.id, result: {} });
        break;
      case 'tools/list':
        send({ id: m.id, result: listTools() });
        break;
      case 'tools/call':
        call(m.id, m.params);
        break;
      default:
        send({ id: m.id, error: { code: -32601, message: `method not found: ${m.method}` } });
    }
  });
  rl.on('close', () => process.exit(0));
}
