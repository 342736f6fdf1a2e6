#!/usr/bin/env node
// eras-mrtr-server.mjs: an MCP server on the SDK v2 package @modelcontextprotocol/server whose
// tools ask for input the 2026-07-28 way (an InputRequiredResult with inputRequests and a
// requestState), over stdio (serveStdio: a 2026-07-28 client gets the InputRequiredResult, a
// legacy one gets elicitation/create requests from the SDK's legacy shim):
//   ask      one question (name, default "Default"), state "ask:1"
//   twice    two rounds: name (state "twice:1"), then colour (state "twice:2:<name>"); the
//            state must come back exactly, else the round is asked again from the start
//   nostate  one question and no requestState: a retry carrying one is an error
// Each answers "hello NAME" / "NAME likes COLOUR" / "no state, NAME", with the states it got
// back listed in structuredContent.states.
import { McpServer, inputRequired, inputResponse } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const ask = (message, prop, def) => inputRequired.elicit({
  message,
  requestedSchema: { type: 'object', properties: { [prop]: { type: 'string', default: def } }, required: [prop] },
});
const answer = (responses, key, prop) => {
  const v = inputResponse(responses, key);
  return v.kind === 'elicit' && v.action === 'accept' ? v.content?.[prop] : undefined;
};
const states = [];
const text = (t) => ({ content: [{ type: 'text', text: t }], structuredContent: { states: [...states] } });

function factory() {
  const server = new McpServer({ name: 'eras-mrtr', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.registerTool('ask', { description: 'Asks a name' }, async (c) => {
    const st = c.mcpReq.requestState();
    if (st !== undefined) states.push(st);
    const name = answer(c.mcpReq.inputResponses, 'name', 'name');
    if (st !== 'ask:1' || name === undefined) {
      return inputRequired({ inputRequests: { name: ask('your name?', 'name', 'Default') }, requestState: 'ask:1' });
    }
    return text(`hello ${name}`);
  });
  server.registerTool('twice', { description: 'Asks a name, then a colour' }, async (c) => {
    const st = c.mcpReq.requestState();
    if (st !== undefined) states.push(st);
    const r = c.mcpReq.inputResponses;
    if (st === 'twice:1' && answer(r, 'name', 'name') !== undefined) {
      const name = answer(r, 'name', 'name');
      return inputRequired({
        inputRequests: { colour: ask(`${name}'s colour?`, 'colour', 'grey') },
        requestState: `twice:2:${name}`,
      });
    }
    if (typeof st === 'string' && st.startsWith('twice:2:') && answer(r, 'colour', 'colour') !== undefined) {
      return text(`${st.slice(8)} likes ${answer(r, 'colour', 'colour')}`);
    }
    return inputRequired({ inputRequests: { name: ask('your name?', 'name', 'Default') }, requestState: 'twice:1' });
  });
  server.registerTool('nostate', { description: 'Asks a name, without a requestState' }, async (c) => {
    const st = c.mcpReq.requestState();
    if (st !== undefined) return { content: [{ type: 'text', text: `a state came back: ${st}` }], isError: true };
    const name = answer(c.mcpReq.inputResponses, 'name', 'name');
    if (name === undefined) return inputRequired({ inputRequests: { name: ask('your name?', 'name', 'Default') } });
    return text(`no state, ${name}`);
  });
  return server;
}

const handle = serveStdio(factory, { legacy: 'serve' });
process.stdin.on('end', () => handle.close().finally(() => process.exit(0)));
process.on('SIGTERM', () => handle.close().finally(() => process.exit(0)));
