// eras-up-server.mjs: a small MCP server on the SDK v2 package over stdio (it answers either
// era: server/discover and per-request _meta at 2026-07-28, or initialize), for trying the
// bridge's upstream side by hand: one tool "echo", one resource, one prompt.
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const server = new McpServer({ name: 'eras-up-server', version: '1.0.0' }, { instructions: 'eras' });
server.registerTool('echo', { description: 'Echoes text', inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: 'text', text }] }));
server.registerResource('note', 'note://one', { mimeType: 'text/plain' },
  async (uri) => ({ contents: [{ uri: uri.href, text: 'one' }] }));
server.registerPrompt('greet', { description: 'Greets' },
  async () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }] }));
await server.connect(new StdioServerTransport());
