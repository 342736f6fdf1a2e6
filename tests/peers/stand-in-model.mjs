#!/usr/bin/env node
// stand-in-model.mjs: a scripted model behind an OpenAI-compatible chat-completions endpoint
// (POST /v1/chat/completions), for running a real agent (pi) offline in the bridge's tests
// (tests/integration/bridge_pi.sh). It never thinks: the script is a JSON array of steps, each
// {"tool": NAME, "arguments": {...}} (a tool call) or {"text": "..."} (an answer), and a request
// gets the step numbered by how many tool results its conversation already holds, so a run goes
// tool call, result, next step ...; past the end it answers "done". Answers are chat-completion
// SSE chunks when the request asks to stream (pi always does), a plain completion otherwise.
// Every request is recorded, one JSON line in --record: {"n", "step", "tools": [names],
// "messages": [{role, name?, text}]} (the tool results' text included), for the test to check
// what reached the model.
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { closeServer, listen, makeLogger, onShutdown, parseArgs, readBody, ready, sendJson } from './lib/common.mjs';

const opts = parseArgs({
  port: { type: 'int', default: 0, help: 'port on 127.0.0.1 (0: a free one)', arg: 'N' },
  script: { type: 'string', help: 'the steps, a JSON array (file)', arg: 'FILE' },
  record: { type: 'string', help: 'appends one JSON line per request', arg: 'FILE' },
}, process.argv.slice(2), 'A scripted OpenAI-compatible chat-completions model for tests.');

const log = makeLogger('stand-in-model');
if (!opts.script || !opts.record) {
  process.stderr.write('stand-in-model.mjs: --script and --record are required\n');
  process.exit(2);
}
const steps = JSON.parse(readFileSync(opts.script, 'utf8'));
if (!Array.isArray(steps)) {
  process.stderr.write('stand-in-model.mjs: the script must be a JSON array of steps\n');
  process.exit(2);
}

// the text of a message's content: a string, or the text parts of an array
function contentText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
}

function chunk(id, delta, finish = null) {
  return { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: 'fake-model',
    choices: [{ index: 0, delta, finish_reason: finish }] };
}

let count = 0;

function answer(res, body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const stepNo = messages.filter((m) => m?.role === 'tool').length;
  const step = steps[stepNo] ?? { text: 'done' };
  const n = ++count;
  appendFileSync(opts.record, `${JSON.stringify({
    n,
    step: stepNo,
    tools: (body.tools ?? []).map((t) => t?.function?.name ?? t?.name),
    messages: messages.map((m) => ({ role: m?.role, ...(m?.name ? { name: m.name } : {}), text: contentText(m?.content) })),
  })}\n`);
  log(`request ${n}: step ${stepNo}, ${(body.tools ?? []).length} tools`);

  const id = `chatcmpl-stand-in-${n}`;
  const call = step.tool !== undefined
    ? { index: 0, id: `call_${n}`, type: 'function', function: { name: step.tool, arguments: JSON.stringify(step.arguments ?? {}) } }
    : null;
  if (!body.stream) {
    const message = call ? { role: 'assistant', content: null, tool_calls: [call] } : { role: 'assistant', content: step.text };
    sendJson(res, 200, { id, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: 'fake-model',
      choices: [{ index: 0, message, finish_reason: call ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
  const events = [chunk(id, { role: 'assistant', content: '' })];
  if (call) {
    events.push(chunk(id, { tool_calls: [call] }));
    events.push(chunk(id, {}, 'tool_calls'));
  } else {
    events.push(chunk(id, { content: step.text }));
    events.push(chunk(id, {}, 'stop'));
  }
  const last = events.at(-1);
  last.usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  for (const e of events) res.write(`data: ${JSON.stringify(e)}\n\n`);
  res.end('data: [DONE]\n\n');
}

const server = createServer(async (req, res) => {
  try {
    const path = new URL(req.url, 'http://127.0.0.1').pathname;
    if (req.method === 'POST' && path.endsWith('/chat/completions')) {
      answer(res, JSON.parse(await readBody(req, 16 << 20)));
      return;
    }
    if (req.method === 'GET' && path.endsWith('/models')) {
      sendJson(res, 200, { object: 'list', data: [{ id: 'fake-model', object: 'model', owned_by: 'stand-in' }] });
      return;
    }
    sendJson(res, 404, { error: { message: `no route ${req.method} ${path}` } });
  } catch (err) {
    log(`request failed: ${err?.message ?? err}`);
    if (!res.headersSent) sendJson(res, 500, { error: { message: String(err?.message ?? err) } });
    else res.end();
  }
});

const port = await listen(server, opts.port);
onShutdown(log, () => closeServer(server));
ready(`http://127.0.0.1:${port}/v1`);
