#!/usr/bin/env node
// A $BROWSER for the tests: `node browser.mjs [ignored...] URL` opens URL in Debian's Chromium
// (headless, through playwright-core, fresh profile), signs in and consents on oidc-provider's
// dev pages, and lets the browser load the redirect to the loopback callback. Exits 0 once the
// callback page has loaded, 1 on any failure or after BROWSER_TIMEOUT seconds (default 60).
// A device-flow URL (verification_uri_complete, RFC 8628) works too: it confirms the code, signs
// in, consents, and exits 0 on the success page.
//
// Environment:
//   BROWSER_LOGIN=name   login name to type (default test-user)
//   BROWSER_DENY=1       press Cancel on the consent page (the callback gets error=access_denied),
//                        or Abort on a device confirmation page
//   BROWSER_USER_CODE=c  the user code to type on a device page that asks for one
//   BROWSER_LOG=path     append one line per navigation and action, for test assertions
//   BROWSER_TIMEOUT=s    overall deadline in seconds (default 60)
//   BROWSER_CHROMIUM=path the Chromium binary (default /usr/bin/chromium)
//   BROWSER_PROFILE=dir  keep the profile in dir (created if need be, never removed), so that a
//                        later run is still signed in to the authorization server, as a
//                        person's browser is; default: a fresh profile, removed at the end
//   BROWSER_HOLD_CALLBACK=path  the redirect never reaches the loopback callback, as for a browser
//                        on another machine: its host and port resolve to nothing (the page fails
//                        to load; a route cannot stop it, Playwright does not route redirects),
//                        its URL is written to path (0600), and the script exits 0 - or 1 should
//                        the callback load after all
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium } from 'playwright-core';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const url = process.argv[process.argv.length - 1];
const login = process.env.BROWSER_LOGIN || 'test-user';
const deny = process.env.BROWSER_DENY === '1';
const userCode = process.env.BROWSER_USER_CODE;
const logPath = process.env.BROWSER_LOG;
const timeoutMs = (Number(process.env.BROWSER_TIMEOUT) || 60) * 1000;
const executablePath = process.env.BROWSER_CHROMIUM || '/usr/bin/chromium';
const holdPath = process.env.BROWSER_HOLD_CALLBACK;
const started = Date.now();

function say(msg) {
  process.stderr.write(`[browser ${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);
}
function record(line) {
  if (!logPath) return;
  try {
    appendFileSync(logPath, `${line}\n`);
  } catch (err) {
    say(`cannot write BROWSER_LOG: ${err.message}`);
  }
}

let start;
try {
  start = new URL(url);
  if (!['http:', 'https:'].includes(start.protocol)) throw new Error('not http(s)');
} catch {
  process.stderr.write(`browser.mjs: the last argument must be an http(s) URL, got '${url ?? ''}'\n`);
  process.exit(2);
}

// The redirect we wait for: the authorization request's redirect_uri when it has one, else any
// loopback URL on another origin that carries code= or error=.
const redirectUri = start.searchParams.get('redirect_uri');
function isCallback(u) {
  let p;
  try {
    p = new URL(u);
  } catch {
    return false;
  }
  if (redirectUri) {
    try {
      const r = new URL(redirectUri);
      return p.origin === r.origin && p.pathname === r.pathname;
    } catch {
      return false;
    }
  }
  return LOOPBACK.has(p.hostname) && p.origin !== start.origin
    && (p.searchParams.has('code') || p.searchParams.has('error'));
}

const keptProfile = process.env.BROWSER_PROFILE;
if (keptProfile) mkdirSync(keptProfile, { recursive: true, mode: 0o700 });
const profile = keptProfile || mkdtempSync(join(tmpdir(), 'credkit-browser-'));
let context;
let exiting = false;
async function finish(code, msg) {
  if (exiting) return;
  exiting = true;
  if (msg) say(msg);
  record(code === 0 ? 'done' : `failed ${msg ?? ''}`);
  const killer = setTimeout(() => process.exit(code), 5000);
  killer.unref();
  try {
    await context?.close();
  } catch { /* the browser may already be gone */ }
  if (!keptProfile) rmSync(profile, { recursive: true, force: true });
  process.exit(code);
}

const deadline = setTimeout(() => finish(1, `gave up after ${timeoutMs / 1000}s (no callback reached)`), timeoutMs);
deadline.unref();
process.on('SIGTERM', () => finish(1, 'terminated'));
process.on('SIGINT', () => finish(1, 'interrupted'));

const sleep = (ms) => new Promise((r) => { setTimeout(r, ms).unref(); });

let callbackUrl; // set once the browser requests the callback
let callbackResult; // { ok, detail } once it finished or failed
let navigations = 0; // main-frame navigations so far
let lastNavAt = Date.now();

// BROWSER_HOLD_CALLBACK: the callback's host:port made unreachable (HostMappingRules match
// "host:port" too); the authorization request names it in its redirect_uri
const holdArgs = [];
if (holdPath) {
  let r;
  try {
    r = new URL(redirectUri);
  } catch {
    process.stderr.write('browser.mjs: BROWSER_HOLD_CALLBACK needs a URL with a redirect_uri\n');
    process.exit(2);
  }
  const port = r.port || '80';
  holdArgs.push(`--host-rules=MAP 127.0.0.1:${port} ~NOTFOUND, MAP localhost:${port} ~NOTFOUND`);
}

async function main() {
  say(`opening ${url}`);
  context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    chromiumSandbox: false,
    args: ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--password-store=basic', ...holdArgs],
    timeout: 30000,
  });
  // Only loopback traffic: oidc-provider's pages @import a web font, which would only stall.
  await context.route('**/*', (route) => {
    const req = route.request();
    let host = '';
    try { host = new URL(req.url()).hostname; } catch { /* data: and friends */ }
    if (LOOPBACK.has(host) || req.isNavigationRequest()) return route.continue();
    return route.abort();
  });
  const page = context.pages()[0] ?? await context.newPage();
  page.on('request', (req) => {
    if (!req.isNavigationRequest() || req.frame() !== page.mainFrame()) return;
    record(`nav ${req.method()} ${req.url()}`);
    if (!callbackUrl && isCallback(req.url())) {
      callbackUrl = req.url();
      say(`redirected to the callback ${callbackUrl}`);
      record(`callback ${callbackUrl}`);
      if (holdPath) writeFileSync(holdPath, `${callbackUrl}\n`, { mode: 0o600 });
    }
  });
  page.on('requestfinished', async (req) => {
    if (req.url() !== callbackUrl || callbackResult) return;
    const resp = await req.response().catch(() => null);
    callbackResult = { ok: true, detail: `HTTP ${resp?.status() ?? '?'}` };
  });
  page.on('requestfailed', (req) => {
    if (req.url() !== callbackUrl || callbackResult) return;
    callbackResult = { ok: false, detail: req.failure()?.errorText ?? 'failed' };
  });
  page.on('framenavigated', (f) => {
    if (f !== page.mainFrame()) return;
    navigations += 1;
    lastNavAt = Date.now();
  });

  await page.goto(url, { waitUntil: 'domcontentloaded', timeout: timeoutMs }).catch((err) => {
    if (!callbackUrl) throw err;
  });

  let lastActedOn = -1; // the navigation count when we last clicked, so we never click twice
  let idleSince = Date.now();
  for (;;) {
    if (callbackResult && holdPath) {
      if (callbackResult.ok) return finish(1, `the held callback reached the listener (${callbackResult.detail})`);
      return finish(0, `held the callback (${callbackResult.detail})`);
    }
    if (callbackResult) {
      if (!callbackResult.ok) return finish(1, `the callback request failed: ${callbackResult.detail}`);
      await page.waitForLoadState('load', { timeout: 5000 }).catch(() => {});
      return finish(0, `callback loaded (${callbackResult.detail})`);
    }
    if (callbackUrl || lastActedOn === navigations) {
      await sleep(50);
      if (Date.now() - idleSince > 15000) return finish(1, `no new page 15s after acting on ${page.url()}`);
      continue;
    }
    const step = await page.evaluate(() => {
      const q = (sel) => document.querySelector(sel);
      if (q('input[name=login]')) return 'login';
      if (q('input[name=prompt][value=consent]')) return 'consent';
      if (q('[id="op.deviceConfirmForm"]')) return 'device-confirm';
      if (q('[id="op.deviceInputForm"]')) return q('p.red') ? 'device-error' : 'device-input';
      if (document.title === 'Sign-in Success') return 'device-success';
      return document.readyState === 'complete' ? 'idle' : 'loading';
    }).catch(() => 'loading'); // the page navigated under us
    if (step === 'login') {
      record(`login ${login}`);
      say(`signing in as ${login}`);
      lastActedOn = navigations;
      idleSince = Date.now();
      await page.fill('input[name=login]', login);
      if (await page.$('input[name=password]')) await page.fill('input[name=password]', 'any-password');
      await page.click('button[type=submit]', { timeout: 10000 });
    } else if (step === 'consent') {
      lastActedOn = navigations;
      idleSince = Date.now();
      if (deny) {
        record('deny');
        say('denying consent');
        await page.click('a[href*="/abort"]', { timeout: 10000 });
      } else {
        record('consent');
        say('consenting');
        await page.click('button[type=submit]', { timeout: 10000 });
      }
    } else if (step === 'device-confirm') {
      lastActedOn = navigations;
      idleSince = Date.now();
      record(deny ? 'device-abort' : 'device-confirm');
      say(deny ? 'aborting the device sign-in' : 'confirming the device code');
      await page.click(deny ? 'button[name=abort]' : 'button[autofocus]', { timeout: 10000 });
    } else if (step === 'device-input') {
      if (!userCode) return finish(1, 'the device page asks for a user code: set BROWSER_USER_CODE or open verification_uri_complete');
      lastActedOn = navigations;
      idleSince = Date.now();
      record(`device-code ${userCode}`);
      await page.fill('input[name=user_code]', userCode);
      await page.click('button[form="op.deviceInputForm"]', { timeout: 10000 });
    } else if (step === 'device-success') {
      return finish(0, 'device sign-in confirmed');
    } else if (step === 'device-error') {
      const text = (await page.evaluate(() => document.querySelector('p.red')?.innerText ?? '').catch(() => '')).trim();
      return finish(deny ? 0 : 1, `device page says: ${text}`);
    } else {
      // A page with nothing to fill in and no redirect: an error page, most likely.
      if (step === 'idle' && Date.now() - Math.max(idleSince, lastNavAt) > 5000) {
        const text = (await page.evaluate(() => document.body?.innerText ?? '').catch(() => '')).replace(/\s+/g, ' ').slice(0, 300);
        return finish(1, `stuck on ${page.url()}: ${text}`);
      }
      await sleep(50);
    }
  }
}

main().catch((err) => finish(1, `error: ${err.message.split('\n')[0]}`));
