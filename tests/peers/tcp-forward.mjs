#!/usr/bin/env node
// tcp-forward.mjs: a port forward, as an ingress or `kubectl port-forward` puts one in front of
// a machine: every connection to 127.0.0.1:PORT is relayed byte for byte to 127.0.0.1:--to.
// It logs one line per connection to stderr and answers nothing itself. See --help.
import { connect, createServer } from 'node:net';

import { listen, makeLogger, onShutdown, parseArgs, ready } from './lib/common.mjs';

const spec = {
  port: { type: 'int', default: 0, arg: 'PORT', help: 'port on 127.0.0.1; 0 picks a free one' },
  to: { type: 'int', arg: 'PORT', help: 'the port on 127.0.0.1 every connection is relayed to (required)' },
};
const usage = `
Relays every connection to 127.0.0.1:PORT to 127.0.0.1:TO, byte for byte. READY prints
http://127.0.0.1:PORT. Each connection is logged on stderr as "connection N".`;

const opts = parseArgs(spec, process.argv.slice(2), usage);
if (!opts.to) {
  process.stderr.write("tcp-forward: --to PORT is required\nTry 'tcp-forward.mjs --help'.\n");
  process.exit(2);
}
const log = makeLogger('tcp-forward');
let n = 0;
const server = createServer((client) => {
  n += 1;
  log(`connection ${n}`);
  const upstream = connect(opts.to, '127.0.0.1');
  client.pipe(upstream).pipe(client);
  const close = () => { client.destroy(); upstream.destroy(); };
  client.on('error', close);
  upstream.on('error', close);
});
const port = await listen(server, opts.port);
onShutdown(log, () => new Promise((resolve) => server.close(() => resolve())));
ready(`http://127.0.0.1:${port}`);
