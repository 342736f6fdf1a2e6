// Preloaded with `node --require tests/peers/lib/loopback-only.cjs SCRIPT ...` to keep a server
// that binds every interface (server-everything's Streamable HTTP transport calls
// app.listen(PORT)) on the loopback interface: every TCP listen() without a host, or with an
// address that means "every interface" (0.0.0.0, ::), listens on 127.0.0.1 instead. So the
// demo works for any user, without a network namespace, and exposes nothing to the network.
//
// Handled forms: listen(), listen(cb), listen(port[, backlog][, cb]), listen(port, host...),
// listen({port, host...}[, cb]). Unix sockets (a path), handles and file descriptors are left
// alone: they are not network listeners of their own making.
//
// LOOPBACK_ONLY_PORT_FILE=PATH: once the first TCP listener is up, its port is written to PATH
// (through a temporary file and a rename, so a reader never sees half a number). With PORT=0
// the server gets a free port, and whoever started it reads the port from there.
'use strict';

const fs = require('node:fs');
const net = require('node:net');

const LOOPBACK = '127.0.0.1';
const EVERY_INTERFACE = new Set(['', '0.0.0.0', '::', '::0', '0:0:0:0:0:0:0:0']);

// Whether x is what net takes as a TCP port (a number, or a string of one); any other string
// is a Unix socket path.
function isPort(x) {
    if (typeof x === 'number') return true;
    return typeof x === 'string' && x.trim() !== '' && Number(x) >= 0;
}

function needsHost(host) {
    return host === undefined || host === null || EVERY_INTERFACE.has(String(host));
}

function loopbackArgs(args) {
    const first = args[0];
    if (args.length === 0 || typeof first === 'function') {
        // listen() or listen(cb): a free port, on loopback
        return [0, LOOPBACK, ...args];
    }
    if (first !== null && typeof first === 'object') {
        // listen(options[, cb]); a handle ({_handle}, a server or socket) or {fd} or {path}
        // is not ours to change
        if ('_handle' in first || 'fd' in first || first.path !== undefined) return args;
        if (!needsHost(first.host)) return args;
        return [{ ...first, host: LOOPBACK }, ...args.slice(1)];
    }
    if (first !== undefined && first !== null && !isPort(first)) return args; // a Unix socket
    // listen(port, host, ...) or listen(port[, backlog][, cb])
    if (typeof args[1] === 'string') {
        if (!needsHost(args[1])) return args;
        return [first, LOOPBACK, ...args.slice(2)];
    }
    return [first, LOOPBACK, ...args.slice(1)];
}

let portWritten = false;
function reportPort(server) {
    const file = process.env.LOOPBACK_ONLY_PORT_FILE;
    if (!file || portWritten) return;
    const addr = server.address();
    if (!addr || typeof addr !== 'object') return;
    portWritten = true;
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, `${addr.port}\n`, { mode: 0o600 });
    fs.renameSync(tmp, file);
}

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function loopbackListen(...args) {
    this.once('listening', () => reportPort(this));
    return listen.apply(this, loopbackArgs(args));
};

module.exports = { loopbackArgs };
