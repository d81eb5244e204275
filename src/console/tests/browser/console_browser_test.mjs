// The web console in headless Chromium against real processes (README.md beside this file):
// a `magnetar standalone` without authentication, a `magnetar proxy` in front of it, and a
// second standalone with token authentication. Every check reads the page's DOM (text, the
// plots' data points), the REST API or the requests the page made; any failed check fails the
// test. Screenshots go to the output folder.
//
//   node console_browser_test.mjs --magnetar BIN --client BIN --out DIR [--chromium BIN]

import { chromium } from 'playwright-core';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const args = {};
for (let i = 2; i + 1 < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const need of ['magnetar', 'client', 'out']) {
  if (!args[need]) {
    console.error(`usage: node console_browser_test.mjs --magnetar BIN --client BIN --out DIR [--chromium BIN]`);
    process.exit(2);
  }
}
const CHROMIUM = args.chromium || '/usr/bin/chromium';
const OUT = path.resolve(args.out);
fs.mkdirSync(OUT, { recursive: true });
const WORK = fs.mkdtempSync(path.join(OUT, 'run-'));
const WAIT = 20000;  // one condition's limit in the page
const started = Date.now();

// ---------------------------------------------------------------------------------------------
// Checks: each one printed; the run fails if any failed.

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) {
    passed++;
    console.log(`ok - ${name}`);
  } else {
    failed++;
    console.log(`FAILED - ${name}${detail ? ': ' + detail : ''}`);
  }
  return ok;
}

// Waits for `fn` (run in the page) to return a truthy value; a check either way.
async function expectInPage(page, name, fn, arg) {
  try {
    const handle = await page.waitForFunction(fn, arg, { timeout: WAIT, polling: 200 });
    const value = await handle.jsonValue();
    check(name, true);
    return value;
  } catch (e) {
    check(name, false, e.message.split('\n')[0]);
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// Processes.

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const children = [];

// Starts `argv` with its output in `log`; resolves once the log matches `ready`.
async function startProcess(name, argv, log, ready) {
  const fd = fs.openSync(log, 'a');
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  children.push(child);
  let exited = null;
  child.on('exit', (code, signal) => { exited = signal || code; });
  const until = Date.now() + 60000;
  while (Date.now() < until) {
    const text = fs.readFileSync(log, 'utf8');
    if (ready.test(text)) return child;
    if (exited !== null) throw new Error(`${name} exited (${exited}):\n${text.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} not ready after 60 s; see ${log}`);
}

async function startStandalone(name, settings = []) {
  const dir = path.join(WORK, name);
  fs.mkdirSync(dir, { recursive: true });
  const ports = { broker: await freePort(), web: await freePort(), bookie: await freePort() };
  const argv = [args.magnetar, 'standalone', '--data-dir', path.join(dir, 'data')];
  for (const s of [`brokerServicePort=${ports.broker}`, `webServicePort=${ports.web}`,
    `bookiePort=${ports.bookie}`, 'bindAddress=127.0.0.1', 'advertisedAddress=127.0.0.1',
    'journalMaxGroupWaitMSec=1', ...settings]) {
    argv.push('--set', s);
  }
  await startProcess(name, argv, path.join(dir, 'standalone.log'), /standalone ready/);
  return { dir, web: `http://127.0.0.1:${ports.web}`, service: `pulsar://127.0.0.1:${ports.broker}` };
}

async function startProxy(standalone) {
  const dir = path.join(WORK, 'proxy');
  fs.mkdirSync(dir, { recursive: true });
  const ports = { service: await freePort(), web: await freePort() };
  const argv = [args.magnetar, 'proxy'];
  for (const s of [`brokerServiceURL=${standalone.service}`, `brokerWebServiceURL=${standalone.web}`,
    `servicePort=${ports.service}`, `webServicePort=${ports.web}`, 'bindAddress=127.0.0.1']) {
    argv.push('--set', s);
  }
  await startProcess('proxy', argv, path.join(dir, 'proxy.log'), /proxy serving the Pulsar protocol/);
  return { web: `http://127.0.0.1:${ports.web}` };
}

function produce(standalone, topic, count) {
  // One entry per message (msgBacklog counts entries).
  execFileSync(args.client, ['--url', standalone.service, 'produce', topic, '-m', 'hello', '-n', String(count),
    '--disable-batching'],
    { stdio: 'pipe', timeout: 30000 });
}

// One admin REST call from the test itself (not the page); resolves to {status, body}.
async function rest(base, method, urlPath, { body, token } = {}) {
  const headers = {};
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(base + urlPath, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed = text;
  try { parsed = JSON.parse(text); } catch { /* text */ }
  return { status: res.status, body: parsed };
}

async function restOk(base, method, urlPath, options) {
  const r = await rest(base, method, urlPath, options);
  if (r.status >= 300) throw new Error(`${method} ${urlPath}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

// ---------------------------------------------------------------------------------------------
// The page.

// A page that records every request it makes and every error it reports (a CSP violation is
// a console error).
async function openPage(browser) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const record = { requests: [], errors: [], responses: [] };
  page.on('request', (r) => record.requests.push({ url: r.url(), headers: r.headers() }));
  page.on('response', (r) => record.responses.push({ url: r.url(), status: r.status() }));
  page.on('console', (m) => { if (m.type() === 'error') record.errors.push(m.text()); });
  page.on('pageerror', (e) => record.errors.push(e.message));
  return { context, page, record };
}

// The plotted values of a series (data-values of <g data-series> in the chart), in the page.
// Written out in each page function: the page's CSP forbids building functions from strings.
function lastValueIs([chart, series, want]) {
  const g = document.querySelector(`.chart[data-chart="${chart}"] g[data-series="${series}"]`);
  const v = g ? JSON.parse(g.getAttribute('data-values')) : null;
  return v && v.length >= 2 && v[v.length - 1] === want ? v : null;
}

function anyValueAbove([chart, series, floor]) {
  const g = document.querySelector(`.chart[data-chart="${chart}"] g[data-series="${series}"]`);
  const v = g ? JSON.parse(g.getAttribute('data-values')) : null;
  return v && v.some((x) => x > floor) ? v : null;
}

async function plotReaches(page, name, chart, series, want) {
  return expectInPage(page, name, lastValueIs, [chart, series, want]);
}

function polylinePoints([chart, series]) {
  const g = document.querySelector(`.chart[data-chart="${chart}"] g[data-series="${series}"]`);
  return g ? [...g.querySelectorAll('polyline')].map((p) => p.getAttribute('points')).join(' ') : '';
}

// Waits for the element's text to contain `want` (a string) or match it (a RegExp).
async function textBecomes(page, name, selector, want) {
  const pattern = want instanceof RegExp ? { source: want.source, flags: want.flags } : null;
  return expectInPage(page, name, ([sel, text, re]) => {
    const el = document.querySelector(sel);
    const t = el ? el.textContent : '';
    return (re ? new RegExp(re.source, re.flags).test(t) : t.includes(text)) ? t : null;
  }, [selector, pattern ? '' : want, pattern]);
}

// ---------------------------------------------------------------------------------------------

async function withoutAuthentication(browser) {
  const s = await startStandalone('open');
  const ns = '/admin/v2/persistent/public/default';
  const topic = 'persistent://public/default/console-a';
  await restOk(s.web, 'PUT', `${ns}/console-a`);
  await restOk(s.web, 'PUT', `${ns}/console-a/subscription/watch`);
  await restOk(s.web, 'PUT', `${ns}/console-p/partitions`, { body: 2 });
  await restOk(s.web, 'PUT', '/admin/v2/non-persistent/public/default/console-np');
  produce(s, topic, 3);

  const { context, page, record } = await openPage(browser);
  const index = await page.goto(s.web + '/console', { waitUntil: 'load' });
  check('/console redirects to /console/', page.url() === s.web + '/console/', page.url());
  const csp = index.headers()['content-security-policy'] || '';
  check('the page has a CSP that allows this origin only',
    csp.includes("default-src 'none'") && csp.includes("connect-src 'self'") && !/https?:/.test(csp), csp);
  check('the page is text/html', (index.headers()['content-type'] || '').startsWith('text/html'));
  check('the page is revalidated (no-cache, ETag)',
    index.headers()['cache-control'] === 'no-cache' && !!index.headers().etag);
  await page.selectOption('#interval', '1000');
  await textBecomes(page, 'without authentication the console says so', '#who', 'authentication off');
  await textBecomes(page, 'the overview lists the cluster', '#overview tr[data-cluster="standalone"]', 'standalone');
  await expectInPage(page, 'the tree lists public/default', () => document.querySelector('a[data-namespace="public/default"]'));
  await textBecomes(page, 'the overview counts this broker\'s topics from /metrics',
    '#overview [data-card="server-topics"] .value', /^[1-9]/);

  await page.click('a[data-namespace="public/default"]');
  await expectInPage(page, 'the namespace lists the topic just produced to',
    ([t]) => document.querySelector(`tr[data-topic="${t}"]`), [topic]);
  await textBecomes(page, 'its backlog column says 3',
    `tr[data-topic="${topic}"] [data-column="backlog"]`, /^3$/);
  await textBecomes(page, 'the partitioned topic is listed as partitioned',
    'tr[data-topic="persistent://public/default/console-p"]', 'partitioned');
  await expectInPage(page, 'the non-persistent topic is listed',
    () => document.querySelector('tr[data-topic="non-persistent://public/default/console-np"]'));

  await page.click(`tr[data-topic="${topic}"] a`);
  const before = await plotReaches(page, 'the backlog plot of subscription "watch" shows 3', 'backlog', 'watch', 3);
  const pointsBefore = await page.evaluate(polylinePoints, ['backlog', 'watch']);
  await textBecomes(page, 'the subscription table says backlog 3',
    'tr[data-subscription="watch"] [data-column="backlog"]', /^3$/);
  produce(s, topic, 4);
  const after = await plotReaches(page, 'after producing 4 more the backlog plot reaches 7', 'backlog', 'watch', 7);
  const pointsAfter = await page.evaluate(polylinePoints, ['backlog', 'watch']);
  check('the plotted line moved', pointsBefore !== pointsAfter && pointsAfter.length > 0);
  if (before && after) {
    check('the plot keeps the earlier samples (3 before 7)', after.indexOf(3) >= 0 && after.indexOf(3) < after.lastIndexOf(7),
      JSON.stringify(after));
  }
  await expectInPage(page, 'the rate-in plot saw messages arrive (from the counters)', anyValueAbove,
    ['rate', 'in', 0]);
  await expectInPage(page, 'the storage plot is above 0', anyValueAbove, ['storage', 'storage', 0]);
  check('no error banner is shown', await page.isHidden('#banner'));
  check('the login is not shown', await page.isHidden('#login'));
  await page.screenshot({ path: path.join(OUT, 'console-topic-before-clear.png'), fullPage: true });

  // An action: clear the backlog, behind its confirmation.
  await page.click('tr[data-subscription="watch"] button[data-action="clear-backlog"]');
  await expectInPage(page, 'clearing asks for confirmation first', () => document.querySelector('#confirm').open);
  await textBecomes(page, 'the confirmation names the subscription', '#confirm-text', '"watch"');
  const stillThere = await rest(s.web, 'GET', `${ns}/console-a/stats`);
  check('nothing happened before confirming', stillThere.body.subscriptions?.watch?.msgBacklog === 7,
    JSON.stringify(stillThere.body.subscriptions));
  await page.click('#confirm-ok');
  await textBecomes(page, 'the console confirms the clear', '#toast', 'Backlog of "watch" cleared');
  await plotReaches(page, 'the backlog plot falls to 0', 'backlog', 'watch', 0);
  await textBecomes(page, 'the subscription table says backlog 0',
    'tr[data-subscription="watch"] [data-column="backlog"]', /^0$/);
  const cleared = await rest(s.web, 'GET', `${ns}/console-a/stats`);
  check('the broker says backlog 0', cleared.body.subscriptions?.watch?.msgBacklog === 0,
    JSON.stringify(cleared.body.subscriptions));

  // Skip and reset cursor go through the same dialog, with their input.
  produce(s, topic, 5);
  await plotReaches(page, 'after 5 more the backlog plot shows 5', 'backlog', 'watch', 5);
  await page.click('tr[data-subscription="watch"] button[data-action="skip"]');
  await page.fill('#field-count', '2');
  await page.click('#confirm-ok');
  await plotReaches(page, 'skipping 2 leaves a backlog of 3', 'backlog', 'watch', 3);
  await page.click('tr[data-subscription="watch"] button[data-action="reset-cursor"]');
  await page.fill('#field-minutes', '60');
  await page.click('#confirm-ok');
  await plotReaches(page, 'resetting the cursor an hour back brings the backlog to all 12 messages', 'backlog', 'watch', 12);
  await page.screenshot({ path: path.join(OUT, 'console-topic.png'), fullPage: true });
  await page.click('#unload-topic');
  await page.click('#confirm-ok');
  await textBecomes(page, 'unloading is confirmed', '#toast', `Unloaded ${topic}`);
  await plotReaches(page, 'after the unload the topic is loaded again with its backlog', 'backlog', 'watch', 12);

  // A partitioned topic: its partitions counted, its partitioned-stats plotted.
  await page.click('.crumbs a[href^="#/namespace/"]');
  await page.click('tr[data-topic="persistent://public/default/console-p"] a');
  await textBecomes(page, 'a partitioned topic says how many partitions', '#topic-view h1 .tag', '2 partitions');
  await plotReaches(page, 'its storage is plotted from partitioned-stats', 'storage', 'storage', 0);

  // A REST error is shown in the dialog: creating a topic that exists.
  await page.click('.crumbs a[href^="#/namespace/"]');
  await page.click('#create-topic');
  await page.fill('#field-name', 'console-a');
  await page.click('#confirm-ok');
  await textBecomes(page, 'creating an existing topic shows the broker\'s 409 and reason',
    '#confirm-error', /HTTP 409: This topic already exists/);
  check('the dialog stays open on an error', await page.evaluate(() => document.querySelector('#confirm').open));
  await page.fill('#field-name', 'console-new');
  await page.click('#confirm-ok');
  await textBecomes(page, 'creating a new topic is confirmed', '#toast', 'Created persistent://public/default/console-new');
  await expectInPage(page, 'the new topic is listed',
    () => document.querySelector('tr[data-topic="persistent://public/default/console-new"]'));
  await page.screenshot({ path: path.join(OUT, 'console-namespace.png'), fullPage: true });
  const created = await rest(s.web, 'GET', `${ns}/console-new/stats`);
  check('the broker has the new topic', created.status === 200, String(created.status));

  // The overview plots this broker's message rate from /metrics.
  await page.goto(s.web + '/console/');
  await expectInPage(page, 'the overview plots /metrics samples',
    () => JSON.parse(document.querySelector('.chart[data-chart="server-rate"] g[data-series="in"]')
      ?.getAttribute('data-values') || '[]').length >= 2);
  produce(s, topic, 3);
  await expectInPage(page, 'its messages-in plot sees the produce', anyValueAbove, ['server-rate', 'in', 0]);
  await page.screenshot({ path: path.join(OUT, 'console-overview.png'), fullPage: true });

  // The proxy serves the console too, and forwards its REST calls.
  const proxy = await startProxy(s);
  await page.goto(proxy.web + '/console/');
  await textBecomes(page, 'on the proxy the overview shows the proxy\'s own /metrics', '#server-note', 'the proxy\'s own');
  await expectInPage(page, 'its connections card is there',
    () => document.querySelector('[data-card="server-connections"] .value'));
  await page.click('a[data-namespace="public/default"]');
  await expectInPage(page, 'through the proxy the namespace lists the topic',
    ([t]) => document.querySelector(`tr[data-topic="${t}"]`), [topic]);
  await page.click(`tr[data-topic="${topic}"] a`);
  await plotReaches(page, 'through the proxy the backlog plot shows 15', 'backlog', 'watch', 15);

  // A topic another broker owns: the broker answers 307 to that broker's origin (simulated
  // here: a standalone owns everything). The page does not follow it and says why.
  await page.route('**/admin/v2/persistent/public/default/console-new/stats', (route) => route.fulfill({
    status: 307, headers: { Location: 'http://127.0.0.1:9/admin/v2/persistent/public/default/console-new/stats' },
  }));
  await page.goto(s.web + '/console/#/topic/persistent/public/default/console-new');
  await textBecomes(page, 'a redirect to another broker is explained, not followed', '#banner-text',
    /HTTP 307: another broker owns this/);
  await page.unrouteAll();
  check('the banner is shown', await page.isVisible('#banner'));

  const foreign = record.requests.filter((r) => !r.url.startsWith(s.web + '/') && !r.url.startsWith(proxy.web + '/'));
  check('the page requested nothing from any other host', foreign.length === 0,
    foreign.map((r) => r.url).join(', '));
  // Chromium reports each failed REST call as an error: the 409 above is the only one expected.
  const unexpected = record.errors.filter((e) => !/status of 409/.test(e));
  check('the page reported no other error (a CSP violation would be one)', unexpected.length === 0,
    unexpected.join(' | '));
  const assets = record.responses.filter((r) => r.url.includes('/console/'));
  check('every console file answered 200 or 304', assets.length > 5 && assets.every((r) => r.status === 200 || r.status === 304),
    assets.filter((r) => r.status !== 200 && r.status !== 304).map((r) => `${r.url} ${r.status}`).join(', '));
  await context.close();
}

async function withAuthentication(browser) {
  const dir = path.join(WORK, 'keys');
  fs.mkdirSync(dir, { recursive: true });
  const key = path.join(dir, 'secret.key');
  const otherKey = path.join(dir, 'other.key');
  execFileSync(args.magnetar, ['tokens', 'create-secret-key', '--output', key]);
  execFileSync(args.magnetar, ['tokens', 'create-secret-key', '--output', otherKey]);
  const makeToken = (k) => execFileSync(args.magnetar,
    ['tokens', 'create', '--subject', 'admin', '--secret-key', 'file://' + k], { encoding: 'utf8' }).trim();
  const good = makeToken(key);
  const forged = makeToken(otherKey);  // well-formed, signed with another key
  const s = await startStandalone('secured', [
    'authenticationEnabled=true',
    'authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderToken',
    `tokenSecretKey=file://${key}`, 'authorizationEnabled=true', 'superUserRoles=admin']);
  check('the secured broker refuses REST calls without a token',
    (await rest(s.web, 'GET', '/admin/v2/tenants')).status === 401);

  const { context, page, record } = await openPage(browser);
  await page.goto(s.web + '/console/');
  await expectInPage(page, 'with authentication on the console asks for a token, and shows nothing else',
    () => document.querySelector('#login').getClientRects().length > 0 &&
      document.querySelector('#app').getClientRects().length === 0);
  const assets = record.responses.filter((r) => r.url.includes('/console/'));
  check('its files load without credentials', assets.length > 5 && assets.every((r) => r.status === 200),
    assets.map((r) => `${r.url} ${r.status}`).join(', '));

  await page.fill('#token', forged);
  await page.click('#sign-in');
  await textBecomes(page, 'a token signed with another key is refused, and the page says why',
    '#login-error', /refused this token \(HTTP 401/);
  check('a refused token shows no data', await page.isHidden('#app') &&
    await page.evaluate(() => !document.querySelector('#tree a[data-namespace]')));
  check('a refused token is not kept', await page.evaluate(() => sessionStorage.getItem('magnetar.console.token')) === null);
  await page.screenshot({ path: path.join(OUT, 'console-login-refused.png'), fullPage: true });
  await page.fill('#token', 'not-a-token');
  await page.click('#sign-in');
  await textBecomes(page, 'garbage is refused too', '#login-error', /refused this token \(HTTP 401/);

  await page.fill('#token', good);
  await page.click('#sign-in');
  await textBecomes(page, 'the right token signs in', '#who', 'signed in as admin');
  await expectInPage(page, 'signed in, the tree lists public/default',
    () => document.querySelector('a[data-namespace="public/default"]'));
  check('the token is kept in sessionStorage', await page.evaluate(() => sessionStorage.getItem('magnetar.console.token')) === good);
  await page.click('a[data-namespace="public/default"]');
  await textBecomes(page, 'signed in, the namespace view answers', '#namespace-view p.muted', 'No topics');
  const admin = record.requests.filter((r) => r.url.includes('/admin/v2/'));
  const bearer = admin.filter((r) => r.headers.authorization === 'Bearer ' + good);
  check('signed in, REST calls carry the token as a Bearer header', bearer.length > 0);
  check('no URL ever held a token', record.requests.every((r) => !r.url.includes(good) && !r.url.includes(forged)));
  const log = fs.readFileSync(path.join(s.dir, 'standalone.log'), 'utf8');
  check('the broker\'s log holds no token', !log.includes(good) && !log.includes(forged));
  await page.click('#sign-out');
  await expectInPage(page, 'signing out returns to the login and hides the data',
    () => document.querySelector('#login').getClientRects().length > 0 &&
      document.querySelector('#app').getClientRects().length === 0);
  check('signing out forgets the token', await page.evaluate(() => sessionStorage.getItem('magnetar.console.token')) === null);
  check('the page reported no error but the refused calls',
    record.errors.every((e) => /status of 401/.test(e)), record.errors.join(' | '));
  await context.close();
}

let browser = null;
const watchdog = setTimeout(() => {
  console.log('FAILED - the test did not finish in 180 s');
  for (const c of children) c.kill('SIGKILL');
  process.exit(1);
}, 180000);
try {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  await withoutAuthentication(browser);
  await withAuthentication(browser);
} catch (e) {
  check('the test ran to its end', false, e.stack || String(e));
} finally {
  if (browser) await browser.close().catch(() => {});
  for (const c of children) c.kill('SIGKILL');
  clearTimeout(watchdog);
}
if (failed === 0) fs.rmSync(WORK, { recursive: true, force: true });
else console.log(`logs and data kept in ${WORK}`);
console.log(`screenshots in ${OUT}; ${((Date.now() - started) / 1000).toFixed(1)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
