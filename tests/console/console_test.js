// The web console in a real browser (Debian's chromium, driven by playwright-core) against a real
// streamd it starts itself on ephemeral loopback ports with an access file, and stops by its pid.
//
//   node console_test.js STREAMD STREAMCTL SCREENSHOT_DIR
//
// It logs in, creates a stream, produces through the form, finds the record, searches it, follows a
// live tail while streamctl appends, watches a group's lag fall after a consumer commits and resets
// it; checks that a payload holding HTML stays text, that a read-only principal sees no write control
// and that the API refuses it; that no request leaves the broker's origin and no script error
// happens. It takes the screenshots of docs/CONSOLE.md on the way (light and dark, 1280x800 and a
// phone). Exits 77 (skipped) only when chromium is not installed or cannot start.
'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');

const CHROMIUM = '/usr/bin/chromium';
const [streamd, streamctl, shots] = process.argv.slice(2);
if (!streamd || !streamctl || !shots) {
  console.error('usage: node console_test.js STREAMD STREAMCTL SCREENSHOT_DIR');
  process.exit(2);
}
if (!fs.existsSync(CHROMIUM)) {
  console.log('SKIP: ' + CHROMIUM + ' is not installed (scripts/setup installs Debian\'s chromium)');
  process.exit(77);
}
let chromium;
try {
  ({ chromium } = require(path.join(__dirname, 'node_modules', 'playwright-core')));
} catch (e) {
  console.error('playwright-core is missing from tests/console/node_modules: run scripts/setup');
  process.exit(1);
}

// The access file's lines (docs/SECURITY.md): tokens as SHA-256 digests, SCRAM-SHA-256 credentials.
function tokenLine(name, token) {
  return `token ${name} sha256:${crypto.createHash('sha256').update(token).digest('hex')}\n`;
}
function scramLine(name, password) {
  const salt = crypto.randomBytes(16);
  const salted = crypto.pbkdf2Sync(password, salt, 4096, 32, 'sha256');
  const clientKey = crypto.createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = crypto.createHash('sha256').update(clientKey).digest();
  const serverKey = crypto.createHmac('sha256', salted).update('Server Key').digest();
  return `scram ${name} SCRAM-SHA-256 4096 ${salt.toString('base64')} ${storedKey.toString('base64')} ${serverKey.toString('base64')}\n`;
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'streamd-console-'));
fs.chmodSync(work, 0o700);
fs.mkdirSync(shots, { recursive: true });
const ADMIN_TOKEN = crypto.randomBytes(16).toString('hex');
const ADMIN_PASSWORD = 'console admin password';
const VIEWER_PASSWORD = 'viewer password';
const access = path.join(work, 'access');
fs.writeFileSync(
  access,
  tokenLine('ops', ADMIN_TOKEN) + scramLine('ops', ADMIN_PASSWORD) + scramLine('viewer', VIEWER_PASSWORD) +
    'grant ops all *\ngrant viewer read *\n',
  { mode: 0o600 },
);

let daemon = null;
let browser = null;
let base = null;
let nativePort = null;

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

async function startDaemon() {
  const data = path.join(work, 'data');
  fs.mkdirSync(data, { mode: 0o700 });
  const ready = path.join(work, 'ready');
  const log = fs.openSync(path.join(work, 'streamd.log'), 'w');
  daemon = spawn(streamd, ['--data-dir', data, '--listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0',
    '--ready-file', ready, '--auth.token-file', access, '--log-level', 'info'], { stdio: ['ignore', log, log] });
  for (let i = 0; i < 100 && !fs.existsSync(ready); i++) await sleep(100);
  assert.ok(fs.existsSync(ready), 'streamd did not start: ' + fs.readFileSync(path.join(work, 'streamd.log'), 'utf8'));
  const ports = JSON.parse(fs.readFileSync(ready, 'utf8'));
  base = `http://127.0.0.1:${ports.http_port}`;
  nativePort = ports.listen_port;
}

function ctl(...args) {
  return execFileSync(streamctl, ['--broker', '127.0.0.1:' + nativePort, '--token', ADMIN_TOKEN, '--timeout', '10s', ...args],
    { encoding: 'utf8', input: '' });
}

// Requests elsewhere than the broker, and script errors, fail the test at the end.
const problems = [];
function watch(page, who) {
  page.on('request', (req) => {
    const url = new URL(req.url());
    if (url.origin !== base && url.protocol !== 'data:') problems.push(`${who}: a request to another origin: ${req.url()}`);
  });
  page.on('pageerror', (err) => problems.push(`${who}: script error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !/status of 40[13]/.test(msg.text())) problems.push(`${who}: console error: ${msg.text()}`);
  });
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(shots, name + '.png'), fullPage: false });
}

async function login(page, user, password) {
  await page.goto(base + '/ui/#/login');
  await page.fill('input[name=user]', user);
  await page.fill('input[name=password]', password);
  await page.click('form button[type=submit]');
  await page.waitForSelector('#who .principal');
}

async function main() {
  await startDaemon();
  try {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
      // A fresh profile each run: playwright gives chromium a new temporary --user-data-dir itself.

    });
  } catch (e) {
    console.log('SKIP: chromium cannot start here: ' + e.message.split('\n')[0]);
    process.exitCode = 77;
    return;
  }
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  const page = await context.newPage();
  watch(page, 'ops');

  // Log in (a wrong password first).
  await page.goto(base + '/ui/');
  await page.waitForSelector('input[name=user]');
  await shot(page, 'login');
  await page.fill('input[name=user]', 'ops');
  await page.fill('input[name=password]', 'not it');
  await page.click('form button[type=submit]');
  await page.waitForSelector('text=Wrong user, password or token.');
  await login(page, 'ops', ADMIN_PASSWORD);
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === 'streamd_session');
  assert.ok(session && session.httpOnly && session.sameSite === 'Strict', 'the session cookie is HttpOnly and SameSite=Strict');
  assert.equal(await page.evaluate(() => document.cookie), '', 'the page script sees no cookie');

  // Create a stream through the form.
  await page.goto(base + '/ui/#/streams');
  await page.click('text=Create stream');
  await page.fill('.inline-form input >> nth=0', 'orders');
  await page.fill('.inline-form input[type=number]', '3');
  await page.click('.inline-form button[type=submit]');
  await page.waitForSelector('h1.stream-name:text("orders")');

  // Produce through the form, and see the answer.
  await page.fill('input[name=key]', 'customer-42');
  await page.fill('textarea[name=payload]', '{"item":"book","qty":1,"note":"the needle is here"}');
  await page.fill('textarea[name=headers]', 'trace-id: 7f3a9c\nsource: console');
  await page.click('form.produce button[type=submit]');
  await page.waitForSelector('form.produce >> text=/Appended at partition \\d+, offset 0/');
  const produced = await page.textContent('form.produce [role=status]');
  const partition = Number(/partition (\d+)/.exec(produced)[1]);

  // Other traffic: more records (one holding HTML, one binary, one with a long key), more streams.
  for (let i = 0; i < 30; i++) ctl('produce', 'orders', '--key', 'customer-' + (i % 9), '--value', JSON.stringify({ item: 'pen', qty: i }));
  ctl('produce', 'orders', '--key', 'k'.repeat(20) + '-a-very-long-key-that-does-not-fit-in-its-column-' + 'x'.repeat(120), '--value', 'long key');
  ctl('produce', 'orders', '--key', 'customer-7', '--value', '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>');
  ctl('produce', 'orders', '--base64', '--key', Buffer.from('bin').toString('base64'), '--value', Buffer.from([0, 1, 2, 0xff, 0xfe]).toString('base64'));
  for (const s of ['billing.invoices', 'billing.refunds', 'audit', 'a-stream-with-a-rather-long-name-for-its-column.events.v2']) ctl('create', s, '--partitions', '2');
  await page.goto(base + '/ui/#/s/orders');
  await page.waitForSelector('table tbody tr >> nth=2');
  await sleep(2500);  // two polls: the partitions' append rates
  await shot(page, 'stream');

  // The record browser: the produced record, newest first; HTML stays text.
  await page.goto(base + '/ui/#/s/orders/records');
  await page.waitForSelector('tr.record');
  const firstKeys = await page.$$eval('tr.record td.key', (tds) => tds.map((t) => t.textContent));
  assert.ok(firstKeys[0] === Buffer.from('bin').toString() || firstKeys[0].startsWith('(binary'), 'the newest record comes first: ' + firstKeys[0]);
  const htmlRow = page.locator('tr.record', { hasText: '<img src=x onerror=' });
  await htmlRow.click();
  await page.waitForSelector('pre.payload:text("<script>window.__xss=2</script>")');
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'no payload ran as script');
  assert.equal(await page.$$eval('main img, main script', (els) => els.length), 0, 'no element came from a payload');
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot(page, 'records');

  // The produced record by its permalink, with its headers.
  await page.goto(`${base}/ui/#/s/orders/p/${partition}/o/0`);
  await page.waitForSelector('pre.payload');
  assert.match(await page.textContent('pre.payload'), /the needle is here/);
  assert.ok(!(await page.textContent('main')).includes('null'), 'no stray text on the permalink page');
  await page.selectOption('select[aria-label="Show as"]', 'json');
  assert.match(await page.textContent('pre.payload'), /\n  "qty": 1,\n/);
  assert.match(await page.textContent('table.headers'), /trace-id/);
  await shot(page, 'permalink');

  // Search it.
  await page.goto(base + '/ui/#/s/orders/records');
  await page.waitForSelector('tr.record');
  await page.fill('.search input[type=search]', 'needle');
  await page.click('.search button[type=submit]');
  await page.waitForSelector('.search [role=status]:text-matches("1 found in \\\\d+ records")');
  assert.equal(await page.locator('tr.record').count(), 1);
  await shot(page, 'search');

  // A live tail while another client appends.
  await page.goto(base + '/ui/#/s/orders/records');
  await page.waitForSelector('tr.record');
  await page.click('button:text("Live tail")');
  await page.waitForSelector('text=Live: waiting for records…');
  ctl('produce', 'orders', '--key', 'tail-key', '--value', 'arrived while tailing');
  await page.waitForSelector('tr.record >> nth=0 >> text=arrived while tailing', { timeout: 10000 });
  assert.ok(await page.locator('tr.record').count() > 30, 'the tail follows the latest page, not the search results');
  await shot(page, 'tail');
  await page.click('button:text("Stop tail")');

  // A group: lag, then a consumer commits and the lag falls, then a reset with preview and confirmation.
  for (let p = 0; p < 3; p++) ctl('commit', 'orders', '--group', 'billing', '--partition', String(p), '--offset', '0');
  await page.goto(base + '/ui/#/s/orders/groups');
  await page.waitForSelector('section.group[data-group=billing]');
  const lagBefore = await page.textContent('section.group[data-group=billing] .lag-total');
  assert.match(lagBefore, /^[1-9][\d,]* behind$/);
  ctl('consume', 'orders', '--group', 'billing');
  await page.waitForSelector('section.group[data-group=billing] .lag-total:text("0 behind")', { timeout: 15000 });
  await page.click('section.group[data-group=billing] button:text("Reset offsets…")');
  await page.selectOption('dialog select[name=to]', 'earliest');
  await page.click('dialog button:text("Preview")');
  await page.waitForSelector('dialog .plan table');
  const apply = page.locator('dialog button:text("Reset")');
  assert.ok(await apply.isDisabled(), 'the reset waits for the typed confirmation');
  await page.fill('dialog input[aria-label^="Type the group name"]', 'billing');
  await shot(page, 'reset');
  await apply.click();
  await page.waitForSelector('section.group[data-group=billing] .lag-total:text("' + lagBefore + '")', { timeout: 15000 });

  // The overview, with traffic running: appends and catch-up reads by another client.
  let traffic = true;
  const bench = (args) => new Promise((resolve) => {
    const child = spawn(streamctl, ['--broker', '127.0.0.1:' + nativePort, '--token', ADMIN_TOKEN, 'bench', ...args], { stdio: 'ignore' });
    child.on('exit', resolve);
  });
  const load = (async () => {
    for (let round = 0; traffic && round < 60; round++) {
      await bench(['produce', '--stream', 'bench', '--records', '20000', '--batch', '100', '--partitions', '2']);
      await bench(['consume', '--stream', 'bench', '--max-records', '1000']);
      // The groups on orders fall behind a little more each round: a trend to chart.
      await bench(['produce', '--stream', 'orders', '--records', String(5 + round * 3), '--batch', '1', '--partitions', '3']);
      await sleep(300);
    }
  })();
  ctl('commit', 'orders', '--group', 'reporting', '--partition', '0', '--offset', '2');
  await page.goto(base + '/ui/#/');
  await page.waitForSelector('.chart-box');
  await sleep(9000);
  await shot(page, 'overview');

  // The streams list.
  await page.goto(base + '/ui/#/streams');
  await page.waitForSelector('td.name');
  await shot(page, 'streams');

  // Dark mode.
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto(base + '/ui/#/');
  await page.waitForSelector('.chart-box');
  await sleep(4200);
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
  await shot(page, 'overview-dark');
  await page.goto(base + '/ui/#/s/orders/records');
  await page.waitForSelector('tr.record');
  await page.locator('tr.record >> nth=1').click();
  await shot(page, 'records-dark');

  // A phone.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: 'light', isMobile: true, hasTouch: true });
  await phone.addCookies([{ name: 'streamd_session', value: session.value, url: base }]);
  const small = await phone.newPage();
  watch(small, 'phone');
  await small.goto(base + '/ui/#/');
  await small.waitForSelector('.chart-box');
  await sleep(2200);
  await shot(small, 'phone-overview');
  await small.goto(base + '/ui/#/s/orders/records');
  await small.waitForSelector('tr.record');
  await shot(small, 'phone-records');
  traffic = false;
  await load;

  // The groups, now that the history holds a lag trend of each.
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(base + '/ui/#/s/orders/groups');
  await page.waitForSelector('section.group[data-group=reporting] svg.spark polyline', { state: 'attached' });
  await shot(page, 'groups');
  const overflow = await small.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, 'the page does not scroll sideways on a phone (' + overflow + ' px)');
  await phone.close();

  // Keyboard: a record row opens with Enter.
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(base + '/ui/#/s/orders/records');
  await page.waitForSelector('tr.record');
  await page.focus('tr.record >> nth=0');
  await page.keyboard.press('Enter');
  assert.equal(await page.getAttribute('tr.record >> nth=0', 'aria-expanded'), 'true');

  // A read-only principal: no write control anywhere, and the API refuses it anyway.
  const viewerContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const viewer = await viewerContext.newPage();
  watch(viewer, 'viewer');
  await login(viewer, 'viewer', VIEWER_PASSWORD);
  await viewer.goto(base + '/ui/#/streams');
  await viewer.waitForSelector('td.name');
  assert.equal(await viewer.locator('text=Create stream').count(), 0);
  await viewer.goto(base + '/ui/#/s/orders');
  await viewer.waitForSelector('text=You may not write to this stream.');
  assert.equal(await viewer.locator('form.produce').count(), 0);
  assert.equal(await viewer.locator('.danger-zone').count(), 0);
  await shot(viewer, 'read-only');
  const refused = await viewer.evaluate(async () => {
    const r = await fetch('/api/v1/streams/orders/records', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"records":[{"payload":"x"}]}' });
    return [r.status, (await r.json()).error.name];
  });
  assert.deepEqual(refused, [403, 'PERMISSION_DENIED']);
  await viewerContext.close();

  // Logging out ends the session.
  await page.click('#who button:text("Log out")');
  await page.waitForSelector('input[name=user]');
  const after = await page.evaluate(async () => (await fetch('/api/v1/streams')).status);
  assert.equal(after, 401);

  assert.deepEqual(problems, [], 'no foreign request and no script error');
  console.log('console test: every step passed; screenshots in ' + shots);
}

main()
  .catch((e) => {
    console.error(e && e.stack ? e.stack : e);
    try {
      console.error('--- streamd log ---\n' + fs.readFileSync(path.join(work, 'streamd.log'), 'utf8').slice(-4000));
    } catch (ignored) {
      // no log
    }
    process.exitCode = 1;
  })
  .finally(async () => {
    if (browser) await browser.close().catch(() => {});
    if (daemon && daemon.exitCode === null) {
      daemon.kill('SIGTERM');
      await new Promise((r) => {
        const t = setTimeout(() => {
          daemon.kill('SIGKILL');
          r();
        }, 10000);
        daemon.on('exit', () => {
          clearTimeout(t);
          r();
        });
      });
    }
    fs.rmSync(work, { recursive: true, force: true });
  });
