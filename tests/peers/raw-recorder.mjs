#!/usr/bin/env node
// raw-recorder.mjs: an HTTP server on 127.0.0.1 that writes every byte it receives, as
// received, to a file: what a client's requests really carried on the wire, framing headers
// and all, which an HTTP library would have parsed away. Each request head (up to the blank
// line) is answered "404 Not Found" with an empty body on the same connection, so a client that
// keeps the connection alive can send more; nothing else is interpreted.
// Options: --out PATH (the record, appended to), --port N (default 0: ephemeral).
import { appendFileSync } from 'node:fs';
import net from 'node:net';
import { listen, makeLogger, onShutdown, parseArgs, ready } from './lib/common.mjs';

const args = parseArgs({
  out: { type: 'string', arg: 'PATH', help: 'the record, appended to' },
  port: { type: 'int', default: 0, help: 'the port (0: ephemeral)' },
}, process.argv.slice(2), 'raw-recorder.mjs --out PATH [--port N]');
if (!args.out) {
  process.stderr.write('raw-recorder.mjs: --out PATH is required\n');
  process.exit(2);
}
const log = makeLogger('raw-recorder');

const server = net.createServer((sock) => {
  let pending = '';
  sock.on('data', (chunk) => {
    appendFileSync(args.out, chunk);
    pending += chunk.toString('latin1');
    // one answer per complete head seen; a body is recorded, not parsed
    let end;
    while ((end = pending.indexOf('\r\n\r\n')) >= 0) {
      pending = pending.slice(end + 4);
      sock.write('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    }
  });
  sock.on('error', () => {});
});

const port = await listen(server, Number(args.port));
log(`recording to ${args.out}`);
ready(`http://127.0.0.1:${port}`);
onShutdown(log, () => new Promise((resolve) => server.close(() => resolve())));
