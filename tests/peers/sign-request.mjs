#!/usr/bin/env node
// A per-request signing helper, as the pi adapter's "requestHeadersCommand" runs one: reads the
// envelope {"version": 1, "method", "url", "bodyBase64"} on stdin and answers
// {"X-Signature": hex(HMAC-SHA256(key, METHOD "\n" URL "\n" BODY))} on stdout, the key read from
// the file $SIGN_KEY: what guarded-server.mjs --hmac-key-file checks. $MODE=fail exits 1 with a
// message on stderr; $MODE=framing also answers a Content-Length header (which must be refused).
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';

const env = JSON.parse(readFileSync(0, 'utf8'));
if (env.version !== 1 || typeof env.method !== 'string' || typeof env.url !== 'string' ||
    typeof env.bodyBase64 !== 'string') {
  process.stderr.write('not a version 1 envelope\n');
  process.exit(2);
}
if (process.env.MODE === 'fail') {
  process.stderr.write('the signing key is locked\n');
  process.exit(1);
}
const body = Buffer.from(env.bodyBase64, 'base64').toString('utf8');
const sig = createHmac('sha256', readFileSync(process.env.SIGN_KEY))
  .update(`${env.method}\n${env.url}\n${body}`)
  .digest('hex');
const out = { 'X-Signature': sig };
if (process.env.MODE === 'framing') out['Content-Length'] = '1';
process.stdout.write(`${JSON.stringify(out)}\n`);
