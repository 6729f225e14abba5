// dash.js - shared plumbing for the browser tests of the `ferry serve` dashboard: Debian's
// Chromium through playwright-core, a `ferry serve` child per test file (port 0, its own
// token file), PostgreSQL through psql (a schema per test file), Node BullMQ under the test's
// own key prefix, and page helpers (sign in, hash routes, data-raw numbers, screenshots,
// the page's console errors, dialogs and CSP violations).
//
// Reuses tests/interop/lib/harness.js for the environment (FERRY_TESTENV/env, FERRY_BIN), the
// check runner and its `N passed, M failed` summary, child processes and polling.
'use strict';
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawn } = require('node:child_process');

const h = require('../../interop/lib/harness');

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = process.env.FERRY_SCREENSHOTS || path.join(process.env.FERRY_BUILD_DIR || os.tmpdir(), 'screenshots');

// ---- names, secrets, temp files ------------------------------------------------------------

// A key prefix (and schema name) of its own for this test file: `tag` plus pid and random.
function uniqueName(tag) {
  return `brw${tag}${process.pid}${crypto.randomBytes(3).toString('hex')}`;
}

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-browser-'));
process.on('exit', () => fs.rmSync(tmpRoot, { recursive: true, force: true }));

function secret(name) {
  return `${name}-${crypto.randomBytes(24).toString('hex')}`;
}

// The token file of a test: `admin read,act,redrive` and `viewer read`, mode 0600.
function tokenFile() {
  const tokens = { admin: secret('admin'), viewer: secret('viewer') };
  const file = path.join(tmpRoot, `tokens-${crypto.randomBytes(4).toString('hex')}`);
  fs.writeFileSync(file, `admin read,act,redrive ${tokens.admin}\nviewer read ${tokens.viewer}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return { file, ...tokens };
}

function writeTemp(name, text) {
  const file = path.join(tmpRoot, name);
  fs.writeFileSync(file, text, { mode: 0o600 });
  return file;
}

// ---- PostgreSQL ----------------------------------------------------------------------------

function dbUrl() {
  if (!h.ENV.databaseUrl) throw new Error('DATABASE_URL is not in the test environment (FERRY_TESTENV/env)');
  return h.ENV.databaseUrl;
}

// Run SQL with psql; resolves its unaligned, tuples-only output (trimmed). Fails on any error.
async function sql(text) {
  const r = await h.run('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', dbUrl(), '-c', text], { timeout: 30000 });
  if (r.code !== 0) throw new Error(`psql failed (${r.code}): ${r.stderr.trim()} (SQL: ${text.slice(0, 300)})`);
  return r.stdout.trim();
}

// The rows of a SELECT as objects (json_agg of the query).
async function sqlRows(query) {
  const out = await sql(`SELECT coalesce(json_agg(t), '[]'::json) FROM (${query}) t`);
  return JSON.parse(out);
}

async function sqlInt(query) {
  return Number(await sql(query));
}

// `ferry migrate` into a new schema, dropped at the suite's end.
async function newSchema(suite, tag) {
  const schema = uniqueName(tag);
  const r = await h.run(h.ENV.bin, ['migrate', '--database', dbUrl(), '--schema', schema]);
  if (r.code !== 0) throw new Error(`ferry migrate --schema ${schema} exited ${r.code}: ${r.stderr.trim()}`);
  suite.onCleanup(() => sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
  return schema;
}

// ---- Redis / BullMQ under a prefix ---------------------------------------------------------

// Everything of one test's key prefix: the ferry CLI with --prefix, Node Queues, the keys
// deleted at the suite's end.
function keyspace(suite, prefix) {
  const redis = h.newRedis();
  const queues = new Map();
  const ks = {
    prefix,
    redis,
    async ferry(args, opts) {
      const r = await h.run(h.ENV.bin, [...args, '--redis', h.ENV.redisUrl, '--prefix', prefix], opts);
      if (r.code !== 0) throw new Error(`ferry ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
      return r.stdout;
    },
    queue(name) {
      if (!queues.has(name)) {
        const { Queue } = require('bullmq');
        queues.set(name, new Queue(name, { connection: h.connection, prefix }));
      }
      return queues.get(name);
    },
    // Run a Node Worker on `name` until `until()` holds, then close it.
    async work(name, processor, until, { concurrency = 50, timeout = 30000, what = `jobs of ${name} processed` } = {}) {
      const { Worker } = require('bullmq');
      const w = new Worker(name, processor, { connection: h.connection, prefix, concurrency });
      w.on('error', () => {});
      try {
        await h.waitFor(until, { timeout, interval: 100, what });
      } finally {
        await w.close(true);
      }
    },
    // Counts by state, named as BullMQ names them (wait, not waiting).
    async counts(name) {
      return ks.queue(name).getJobCounts('wait', 'active', 'delayed', 'prioritized', 'failed', 'completed', 'paused', 'waiting-children');
    },
    key(name, ...rest) {
      return [prefix, name, ...rest].join(':');
    },
    async close() {
      for (const q of queues.values()) await q.close();
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await redis.del(...keys);
      } while (cursor !== '0');
      redis.disconnect();
    },
  };
  suite.onCleanup(() => ks.close());
  return ks;
}

// Fail `count` jobs named `name` (data from `dataOf(i)`) on `queue` with reason `reason`.
async function makeFailed(ks, queue, name, count, { reason = 'boom', dataOf = (i) => ({ i }), opts = {} } = {}) {
  const q = ks.queue(queue);
  const before = (await q.getJobCounts('failed')).failed;
  const jobs = [];
  for (let i = 0; i < count; i++) jobs.push({ name, data: dataOf(i), opts: { attempts: 1, ...opts } });
  for (let i = 0; i < jobs.length; i += 500) await q.addBulk(jobs.slice(i, i + 500));
  await ks.work(queue, async (job) => {
    if (job.name !== name) return 'ok';
    throw new Error(typeof reason === 'function' ? reason(job) : reason);
  }, async () => (await q.getJobCounts('failed')).failed >= before + count, { what: `${count} ${name} jobs failed on ${queue}` });
}

// `count` more failed jobs on `queue` in little time: copies of one job a Node worker really
// failed (its hash under ids clone-1.., in the failed set with its finishedOn), for sets too
// large to fail one by one within a test's time.
async function cloneFailed(ks, queue, count, { name = 'charge', reason = 'boom' } = {}) {
  await makeFailed(ks, queue, name, 1, { reason });
  const q = ks.queue(queue);
  const [model] = await q.getFailed(0, 0);
  const fields = await ks.redis.hgetall(ks.key(queue, model.id));
  const score = await ks.redis.zscore(ks.key(queue, 'failed'), model.id);
  for (let i = 1; i <= count; i += 1000) {
    const p = ks.redis.pipeline();
    for (let j = i; j < i + 1000 && j <= count; j++) {
      p.hset(ks.key(queue, `clone-${j}`), fields);
      p.zadd(ks.key(queue, 'failed'), score, `clone-${j}`);
    }
    await p.exec();
  }
}

// ---- the check runner ----------------------------------------------------------------------

// The harness's Suite, where the first check makes the state the others use: when it fails,
// the others fail at once saying so, instead of each with a TypeError of its own.
class Suite extends h.Suite {
  check(name, fn) {
    const first = this.checks.length === 0;
    super.check(name, async () => {
      if (this.broken) {
        const e = new Error(`not run: ${this.broken}`);
        e.stack = e.message;
        throw e;
      }
      try {
        await fn();
      } catch (e) {
        if (first) this.broken = `the first check ("${name}") failed`;
        throw e;
      }
    });
  }
}

// ---- ferry serve ---------------------------------------------------------------------------

const servers = new Set();
process.on('exit', () => {
  for (const p of servers) {
    try {
      p.kill('SIGKILL');
    } catch (_) {
      /* gone */
    }
  }
});

// Start `ferry serve` on a free port with the test's prefix, tokens and (optionally) database;
// resolves {base, tokens, log(), stop()} once the start-up line named the port. stop() sends
// SIGTERM and fails unless the server exits 0.
async function startServe(suite, { prefix, schema, tokens = tokenFile(), readOnly = false, routes, extra = [] } = {}) {
  const args = ['serve', '--listen', '127.0.0.1:0', '--redis', h.ENV.redisUrl, '--prefix', prefix, '--token-file', tokens.file];
  if (schema) args.push('--database', dbUrl(), '--schema', schema);
  if (readOnly) args.push('--read-only');
  if (routes) args.push('--routes', routes);
  args.push(...extra);
  // Not h.track()ed: the harness SIGKILLs tracked children after every check, and a server
  // lives for the whole file.
  const proc = spawn(h.ENV.bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  servers.add(proc);
  proc.once('exit', () => servers.delete(proc));
  let output = '';
  proc.stdout.on('data', (d) => (output += d));
  proc.stderr.on('data', (d) => (output += d));
  const exited = new Promise((resolve) => proc.on('close', (code, signal) => resolve({ code, signal })));
  let gone = null;
  exited.then((st) => (gone = st));
  const m = await h.waitFor(() => {
    if (gone) throw new Error(`ferry serve exited (${gone.code}, ${gone.signal}) before listening: ${output.trim()}`);
    return /listening on (https?):\/\/([^,\s]+):(\d+)/.exec(output);
  }, { timeout: 20000, interval: 20, what: 'the "listening on" line of ferry serve' }).catch((e) => {
    proc.kill('SIGKILL');
    throw new Error(e.message.includes('exited') ? e.message : `${e.message}; output: ${output.trim()}`);
  });
  const srv = {
    base: `${m[1]}://${m[2]}:${m[3]}`,
    tokens,
    proc,
    log: () => output,
    stopped: false,
    async stop() {
      if (srv.stopped) return;
      srv.stopped = true;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 20000);
      const st = await exited;
      clearTimeout(t);
      assert.strictEqual(st.code, 0, `ferry serve exit status after SIGTERM (signal ${st.signal}); log tail: ${output.trim().split('\n').slice(-10).join(' | ')}`);
    },
  };
  suite.onCleanup(async () => {
    if (!srv.stopped) {
      srv.stopped = true;
      proc.kill('SIGTERM');
      await exited;
    }
  });
  return srv;
}

// One HTTP request to the server: {status, headers, text, json}.
async function api(srv, method, p, { token, body, headers = {} } = {}) {
  const hd = { ...headers };
  if (token) hd.Authorization = `Bearer ${token}`;
  if (body !== undefined) hd['Content-Type'] = 'application/json';
  const res = await fetch(srv.base + p, { method, headers: hd, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch (_) {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, text, json };
}

async function apiOk(srv, method, p, opts) {
  const r = await api(srv, method, p, opts);
  if (r.status < 200 || r.status > 299) throw new Error(`${method} ${p}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.json;
}

// ---- the browser ---------------------------------------------------------------------------

// Launch Debian's Chromium headless. A missing Chromium or playwright-core fails (never skips)
// with the command that installs them.
async function launch() {
  let pw;
  try {
    pw = require('playwright-core');
  } catch (e) {
    throw new Error(`playwright-core is not installed (tests/browser/node_modules): run scripts/install-deps.sh (${e.message})`);
  }
  const engines = (require('playwright-core/package.json').engines || {}).node || '';
  const need = Number((/(\d+)/.exec(engines) || [0, 0])[1]);
  const have = Number(process.versions.node.split('.')[0]);
  if (have < need) {
    throw new Error(`playwright-core needs Node ${engines}, this is Node ${process.versions.node}: install a newer nodejs (scripts/install-deps.sh takes Debian's only when none is installed)`);
  }
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: run scripts/install-deps.sh (Debian's chromium package)`);
  }
  const args = [];
  if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
  return pw.chromium.launch({ executablePath: CHROMIUM, headless: true, args });
}

// A page of its own context at `width`x800 on the server, with what went wrong recorded:
// console errors, uncaught exceptions, dialogs (dismissed) and CSP violations.
async function openPage(browser, srv, { width = 1280, height = 800 } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, baseURL: srv.base });
  const page = await context.newPage();
  const seen = { console: [], errors: [], dialogs: [], csp: [] };
  page.on('console', (m) => {
    if (m.type() === 'error') seen.console.push(m.text());
  });
  page.on('pageerror', (e) => seen.errors.push(String(e && e.message ? e.message : e)));
  page.on('dialog', (d) => {
    seen.dialogs.push(`${d.type()}: ${d.message()}`);
    d.dismiss().catch(() => {});
  });
  await page.exposeFunction('__ferryCsp', (v) => seen.csp.push(v));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__ferryCsp(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
    });
  });
  page.seen = seen;
  page.setDefaultTimeout(10000);
  return page;
}

// Load the dashboard at `hash` (a full load) and wait until the app has rendered the chrome.
async function load(page, hash = '#/') {
  await page.goto(`/${hash}`);
  await page.getByTestId('live-status').waitFor();
}

// Go to another route without reloading (the token in memory stays).
async function go(page, hash) {
  await page.evaluate((x) => {
    window.location.hash = x;
  }, hash);
}

// Sign in through the dialog; `expect` 'ok' waits for signed-in-as, 'error' for signin-error.
async function signIn(page, token, { remember = false, expect = 'ok' } = {}) {
  await page.getByTestId('signin-open').click();
  await page.getByTestId('signin-dialog').waitFor({ state: 'visible' });
  await page.getByTestId('signin-token').fill(token);
  if (remember) await page.getByTestId('signin-remember').check();
  await page.getByTestId('signin-submit').click();
  if (expect === 'ok') {
    await page.getByTestId('signed-in-as').waitFor({ state: 'visible' });
  } else {
    await h.waitFor(async () => ((await page.getByTestId('signin-error').textContent()) || '').trim(), { what: 'signin-error text', timeout: 10000 });
  }
}

// data-raw of the element with this test id (first match), or null.
async function raw(page, testid, within) {
  const loc = (within || page).getByTestId(testid).first();
  await loc.waitFor({ state: 'attached' });
  return loc.getAttribute('data-raw');
}

// Wait until data-raw of `testid` equals String(want) (numbers compared as numbers).
async function waitRaw(page, testid, want, { timeout = 15000 } = {}) {
  let last;
  await h.waitFor(async () => {
    last = await page.getByTestId(testid).first().getAttribute('data-raw', { timeout: 1000 });
    return sameNumber(last, want);
  }, { timeout, interval: 100, what: `${testid} data-raw == ${want}` }).catch((e) => {
    throw new Error(`${e.message}; last data-raw ${JSON.stringify(last)}`);
  });
}

function sameNumber(a, b) {
  if (a === null || a === undefined) return b === null || b === undefined;
  if (b === null || b === undefined) return false;
  const x = Number(a);
  const y = Number(b);
  if (Number.isNaN(x) || Number.isNaN(y)) return String(a) === String(b);
  return Math.abs(x - y) < 1e-9;
}

// Wait until the text of the locator satisfies `pred` (a RegExp or a function).
async function waitText(locator, pred, what, timeout = 15000) {
  let last;
  const test = typeof pred === 'function' ? pred : (t) => pred.test(t);
  await h.waitFor(async () => {
    last = ((await locator.first().textContent({ timeout: 1000 })) || '').trim();
    return test(last);
  }, { timeout, interval: 100, what }).catch((e) => {
    throw new Error(`${e.message}; last text ${JSON.stringify(last)}`);
  });
  return last;
}

// Wait for the flash line of `kind` ('ok' | 'error'), returns its text.
async function waitFlash(page, kind, re) {
  const f = page.getByTestId('flash');
  let last;
  await h.waitFor(async () => {
    const k = await f.getAttribute('data-kind', { timeout: 1000 });
    last = `${k}: ${((await f.textContent({ timeout: 1000 })) || '').trim()}`;
    return (await f.isVisible()) && k === kind && (!re || re.test(last));
  }, { timeout: 15000, interval: 100, what: `flash ${kind}${re ? ' ' + re : ''}` }).catch((e) => {
    throw new Error(`${e.message}; last flash ${JSON.stringify(last)}`);
  });
  return last;
}

async function screenshot(page, name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

// Nothing went wrong on the page: no uncaught exception, no dialog, no CSP violation, no console
// error (besides those `allow` matches, e.g. a refused request the test caused).
function assertClean(page, { allow = [] } = {}) {
  const s = page.seen;
  assert.deepStrictEqual(s.errors, [], 'uncaught exceptions on the page');
  assert.deepStrictEqual(s.dialogs, [], 'dialogs opened by the page');
  assert.deepStrictEqual(s.csp, [], 'CSP violations');
  const bad = s.console.filter((t) => !allow.some((re) => re.test(t)));
  assert.deepStrictEqual(bad, [], 'console errors');
}

module.exports = {
  h,
  Suite,
  assert,
  CHROMIUM,
  SHOTS,
  uniqueName,
  tokenFile,
  writeTemp,
  dbUrl,
  sql,
  sqlRows,
  sqlInt,
  newSchema,
  keyspace,
  makeFailed,
  cloneFailed,
  startServe,
  api,
  apiOk,
  launch,
  openPage,
  load,
  go,
  signIn,
  raw,
  waitRaw,
  sameNumber,
  waitText,
  waitFlash,
  screenshot,
  assertClean,
};
