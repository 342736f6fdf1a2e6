// Shared plumbing for the test peers: flag parsing with --help, stderr logging, the
// "READY <url>" line, and a clean shutdown on SIGTERM / SIGINT / stdin EOF.
import { fstatSync } from 'node:fs';
import { basename } from 'node:path';

// parseArgs(spec, argv, usage): spec maps a flag name (without --) to
//   { type: 'string' | 'int' | 'bool' | 'list', default, help, arg }.
// Accepts "--flag value", "--flag=value"; bool flags take no value ("--flag=false" works);
// list flags may be repeated. Unknown flags and stray arguments are errors (exit 2).
export function parseArgs(spec, argv, usage) {
  const prog = basename(process.argv[1] ?? 'peer');
  const opts = {};
  const seen = new Set();
  for (const [name, s] of Object.entries(spec)) {
    opts[camel(name)] = s.type === 'list' ? [...(s.default ?? [])] : s.default;
  }
  const fail = (msg) => {
    process.stderr.write(`${prog}: ${msg}\nTry '${prog} --help'.\n`);
    process.exit(2);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') {
      process.stdout.write(helpText(prog, spec, usage));
      process.exit(0);
    }
    if (!a.startsWith('--')) fail(`unexpected argument '${a}'`);
    const eq = a.indexOf('=');
    const name = eq === -1 ? a.slice(2) : a.slice(2, eq);
    const s = spec[name];
    if (!s) fail(`unknown option --${name}`);
    let value;
    if (s.type === 'bool') {
      value = eq === -1 ? true : !['false', '0', 'no'].includes(a.slice(eq + 1));
    } else {
      if (eq !== -1) value = a.slice(eq + 1);
      else if (i + 1 < argv.length) value = argv[++i];
      else fail(`--${name} needs a value`);
      if (s.type === 'int') {
        if (!/^\d+$/.test(value)) fail(`--${name} wants a non-negative integer, got '${value}'`);
        value = Number(value);
      }
    }
    const key = camel(name);
    if (s.type === 'list') {
      if (!seen.has(key)) opts[key] = []; // a given list replaces the default
      opts[key].push(value);
    }
    else opts[key] = value;
    seen.add(key);
  }
  return opts;
}

function camel(name) {
  return name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
}

function helpText(prog, spec, usage) {
  const lines = [`Usage: node ${prog} [options]`, '', usage.trim(), '', 'Options:'];
  for (const [name, s] of Object.entries(spec)) {
    const flag = s.type === 'bool' ? `--${name}` : `--${name} ${s.arg ?? 'VALUE'}`;
    const def = s.default === undefined || s.default === false || (Array.isArray(s.default) && !s.default.length)
      ? '' : ` (default: ${Array.isArray(s.default) ? s.default.join(', ') : s.default})`;
    const rep = s.type === 'list' ? ' (repeatable)' : '';
    lines.push(`  ${flag}`);
    lines.push(`      ${s.help}${rep}${def}`);
  }
  lines.push('  -h, --help');
  lines.push('      show this help and exit');
  lines.push('');
  lines.push('Listens on 127.0.0.1 only. Prints "READY <url>" on stdout once listening; logs go to stderr.');
  lines.push('Exits 0 on SIGTERM or SIGINT, and when stdin is a pipe that reaches EOF.');
  return `${lines.join('\n')}\n`;
}

export function makeLogger(tag, quiet = false) {
  return (...parts) => {
    if (quiet) return;
    const t = new Date().toISOString().slice(11, 23);
    process.stderr.write(`[${t} ${tag}] ${parts.join(' ')}\n`);
  };
}

// listen(server, port, host): binds host (127.0.0.1 unless given) :port (0 = ephemeral);
// resolves to the bound port.
export function listen(server, port, host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const onError = (err) => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address().port);
    });
  });
}

export function ready(url) {
  process.stdout.write(`READY ${url}\n`);
}

// onShutdown(cleanup): runs cleanup once on SIGTERM, SIGINT or stdin EOF (the last only when
// stdin is a pipe or socket: /dev/null or a terminal must not stop the server), then exits 0.
// A stuck cleanup cannot keep the process alive for more than 3 s.
export function onShutdown(log, cleanup) {
  let done = false;
  const stop = async (why) => {
    if (done) return;
    done = true;
    log(`stopping (${why})`);
    setTimeout(() => process.exit(0), 3000).unref();
    try {
      await cleanup();
    } catch (err) {
      log(`cleanup failed: ${err?.message ?? err}`);
    }
    process.exit(0);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  let watchStdin = false;
  try {
    const st = fstatSync(0);
    watchStdin = st.isFIFO() || st.isSocket();
  } catch {
    watchStdin = false;
  }
  if (watchStdin) {
    process.stdin.on('data', () => {});
    process.stdin.on('end', () => stop('stdin closed'));
    process.stdin.on('error', () => stop('stdin error'));
    process.stdin.resume();
  }
  return stop;
}

// closeServer(server): stops accepting and drops open (keep-alive, SSE) connections.
export function closeServer(server) {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections?.();
  });
}

export function readBody(req, limit = 1 << 20) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > limit) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function sendJson(res, status, body, headers = {}) {
  const text = `${JSON.stringify(body, null, 2)}\n`;
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}
