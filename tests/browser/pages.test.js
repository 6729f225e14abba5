// pages.test.js - every page of the dashboard at 1280x800 and 375x800 in Chromium: overview,
// queues, queue, job, dead letters, outbox, schedulers (Europe/Paris and UTC: the next run in
// both zones), trace (an outbox event published by `ferry relay` into a queue), tasks and
// audit. Each renders its content from the API, the page body never scrolls sideways at 375
// (tables scroll in their container), no console error; the keyboard reaches the navigation
// and the sign-in button and Enter activates them. Screenshots of each page at both sizes go
// to $FERRY_SCREENSHOTS/<page>-<width>.png (docs/operations.md shows them).
'use strict';
const fs = require('node:fs');
const d = require('./lib/dash');
const { h, assert } = d;

const suite = new d.Suite('browser: every page at two sizes');
const prefix = d.uniqueName('pg');
const ks = d.keyspace(suite, prefix);
const Q = 'payments';
const Q2 = 'reports';
const ctx = {};

suite.check('chromium starts and the state is made (relay publishes an outbox event)', async () => {
  ctx.browser = await d.launch();
  suite.onCleanup(() => ctx.browser.close());
  const s = (ctx.schema = await d.newSchema(suite, 'pg'));
  const q = ks.queue(Q);
  await q.addBulk([...Array(6)].map((_, i) => ({ name: 'capture-payment', data: { order: `o-${i}`, amount: 100 + i } })));
  await q.addBulk([...Array(3)].map((_, i) => ({ name: 'refund', data: { order: `r-${i}` }, opts: { attempts: 1 } })));
  await ks.work(Q, async (job) => {
    await job.log(`processing ${job.data.order}`);
    if (job.name === 'refund') throw new Error('gateway timeout (upstream 504)');
    return { captured: job.data.amount };
  }, async () => {
    const c = await q.getJobCounts('completed', 'failed');
    return c.completed === 6 && c.failed === 3;
  });
  ctx.failedId = (await q.getFailed())[0].id;
  for (let i = 0; i < 4; i++) await ks.ferry(['queue', 'add', Q, 'capture-payment', JSON.stringify({ order: `w-${i}` })]);
  await ks.ferry(['queue', 'add', Q, 'capture-payment', '{}', '--opts', '{"delay":600000}']);
  await ks.ferry(['scheduler', 'upsert', Q2, 'nightly-paris', '--cron', '0 3 * * *', '--tz', 'Europe/Paris', '--name', 'report']);
  await ks.ferry(['scheduler', 'upsert', Q2, 'hourly-utc', '--cron', '30 * * * *', '--name', 'rollup']);

  // The outbox: one event routed to Q, published by the relay; then more rows unpublished
  // (one of a topic without a route).
  ctx.routes = d.writeTemp('routes', `order.placed ${Q}:handle-order\n`);
  ctx.eventId = await d.sql(`INSERT INTO ${s}.outbox_events (id, topic, aggregate_id, payload, trace_id)
    VALUES (gen_random_uuid(), 'order.placed', gen_random_uuid(), '{"order":"o-77"}', 'trace-77') RETURNING id`);
  ctx.eventId = ctx.eventId.split('\n')[0].trim();
  const relay = h.track(require('node:child_process').spawn(h.ENV.bin, ['relay', '--routes', ctx.routes, '--redis', h.ENV.redisUrl,
    '--prefix', prefix, '--database', d.dbUrl(), '--schema', s, '--poll-interval', '50'], { stdio: ['ignore', 'ignore', 'pipe'] }));
  let relayLog = '';
  relay.stderr.on('data', (x) => (relayLog += x));
  await h.waitFor(async () => (await d.sql(`SELECT count(*) FROM ${s}.outbox_events WHERE published_at IS NOT NULL`)) === '1',
    { timeout: 20000, what: 'the relay to publish the event' }).catch((e) => {
    throw new Error(`${e.message}; relay: ${relayLog}`);
  });
  const exited = new Promise((r) => relay.on('close', (code) => r(code)));
  relay.kill('SIGTERM');
  assert.strictEqual(await exited, 0, 'ferry relay exits 0 on SIGTERM');
  assert.ok(await ks.redis.exists(ks.key(Q, ctx.eventId)), 'the relay made the job (id = event id)');
  await d.sql(`INSERT INTO ${s}.outbox_events (id, topic, aggregate_id, payload, created_at)
    VALUES (gen_random_uuid(), 'order.placed', gen_random_uuid(), '{}', now() - interval '20 seconds'),
           (gen_random_uuid(), 'order.cancelled', gen_random_uuid(), '{}', now())`);
  await d.sql(`INSERT INTO ${s}.dead_letters (prefix, queue, job_name, job_id, data, error, attempts_made, job_timestamp, failed_at)
    SELECT '${prefix}', '${Q}', 'refund', 'r' || g, json_build_object('order', g)::jsonb, 'gateway timeout (upstream 504)', 1, g,
           now() - make_interval(mins => g) FROM generate_series(1, 3) g`);
  await d.sql(`INSERT INTO ${s}.processed_messages (consumer, message_id) VALUES ('billing', gen_random_uuid())`);

  ctx.srv = await d.startServe(suite, { prefix, schema: s, routes: ctx.routes });
  const admin = ctx.srv.tokens.admin;
  // A task and audit rows to show.
  await d.apiOk(ctx.srv, 'POST', `/api/queues/${Q}/pause`, { token: admin });
  await d.apiOk(ctx.srv, 'POST', `/api/queues/${Q}/resume`, { token: admin });
  const t = await d.api(ctx.srv, 'POST', `/api/queues/${Q}/retry-all`, { token: admin, body: { name: 'no-such-name' } });
  assert.strictEqual(t.status, 202, `retry-all: ${t.text}`);
  ctx.taskId = t.json.task.id;
  await h.waitFor(async () => (await d.apiOk(ctx.srv, 'GET', `/api/tasks/${ctx.taskId}`)).task.state === 'done', { what: 'the task done' });
});

// Each page: its route, what shows it has rendered, and extra checks.
const PAGES = [
  ['overview', () => '#/', async (page) => {
    await page.getByTestId('hop-queues').waitFor();
    await d.waitRaw(page, 'queues-ready', 5); // 4 added + the relayed job
  }],
  ['queues', () => '#/queues', async (page) => {
    const row = page.locator(`[data-testid="queue-row"][data-queue="${Q}"]`);
    await row.waitFor();
    // data-raw on the cell or on the number inside it.
    const cell = async (c) => row.locator(`[data-col="${c}"][data-raw], [data-col="${c}"] [data-raw]`).first().getAttribute('data-raw', { timeout: 1000 });
    await h.waitFor(async () => d.sameNumber(await cell('wait'), 5), { what: 'wait 5 (4 + the relayed job)' });
    assert.ok(d.sameNumber(await cell('failed'), 3));
    assert.ok(d.sameNumber(await cell('completed'), 6));
    assert.ok(d.sameNumber(await cell('delayed'), 1));
    assert.match((await row.locator('[data-col="state"]').textContent()) || '', /running/);
  }],
  ['queue', () => `#/queues/${Q}?state=failed&page=0`, async (page) => {
    await d.waitText(page.getByTestId('queue-title'), (t) => t.includes(Q), 'queue-title');
    const rows = page.locator('[data-testid="jobs-table"] [data-testid="job-row"]');
    await h.waitFor(async () => (await rows.count()) === 3, { what: '3 failed job rows' });
    await page.locator('[data-testid="state-tab"][data-state="failed"]').waitFor();
  }],
  ['job', () => `#/queues/${Q}/jobs/${ctx.failedId}`, async (page) => {
    await d.waitText(page.getByTestId('job-state'), /failed/, 'job-state failed');
    await d.waitText(page.getByTestId('job-failed-reason'), /gateway timeout/, 'failed reason');
    await d.waitText(page.getByTestId('job-logs'), /processing r-/, 'logs');
  }],
  ['dead-letters', () => '#/dead-letters', async (page) => {
    const rows = page.locator('[data-testid="dl-table"] [data-testid="dl-row"]');
    await h.waitFor(async () => (await rows.count()) === 3, { what: '3 dl-row' });
  }],
  ['outbox', () => '#/outbox', async (page) => {
    await d.waitRaw(page, 'outbox-unpublished', 2);
    const routed = page.locator('[data-testid="topic-row"][data-topic="order.placed"] [data-col="routed"]');
    await d.waitText(routed, /^routed$/, 'order.placed routed');
    const unknown = page.locator('[data-testid="topic-row"][data-topic="order.cancelled"] [data-col="routed"]');
    await d.waitText(unknown, /^unknown topic$/, 'order.cancelled unknown topic');
  }],
  ['schedulers', () => '#/schedulers', async (page) => {
    const api = (await d.apiOk(ctx.srv, 'GET', `/api/queues/${Q2}/schedulers`)).schedulers;
    for (const key of ['nightly-paris', 'hourly-utc']) {
      const s = api.find((x) => x.key === key);
      const cell = page.locator(`[data-testid="scheduler-row"][data-key="${key}"] [data-col="next"]`);
      // nextLocal "2026-12-04T03:00:00.000+01:00", nextIso "2026-12-04T02:00:00.000Z": the
      // cell shows the local wall time and the UTC one.
      const local = s.nextLocal.slice(11, 16);
      const utc = s.nextIso.slice(11, 16);
      const text = await d.waitText(cell, (t) => t.includes(local) && t.includes(utc), `${key} next run in its zone (${local}) and UTC (${utc})`);
      assert.match(text, /UTC/, `${key}: the UTC time is labelled`);
      if (key === 'nightly-paris') {
        assert.strictEqual(local, '03:00');
        assert.match(text, /Europe\/Paris|\+0[12]:00/, 'the Paris zone or offset is named');
      }
    }
  }],
  ['trace', () => `#/trace/${ctx.eventId}`, async (page) => {
    await d.waitText(page.getByTestId('trace-outbox'), (t) => t.includes('order.placed'), 'trace-outbox shows the topic');
    const job = page.locator('[data-testid="trace-jobs"] [data-testid="trace-job"]');
    await job.first().waitFor();
    const jt = (await job.first().textContent()) || '';
    assert.ok(jt.includes(Q) && jt.includes(ctx.eventId.slice(0, 8)), `trace-job names the queue and the job: ${jt}`);
    await page.getByTestId('trace-inbox').waitFor({ state: 'attached' });
    await page.getByTestId('trace-dead-letters').waitFor({ state: 'attached' });
    await page.getByTestId('trace-redrives').waitFor({ state: 'attached' });
  }],
  ['tasks', () => '#/tasks', async (page) => {
    const row = page.locator(`[data-testid="task-row"][data-task-id="${ctx.taskId}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) || '', /done/);
  }],
  ['audit', () => '#/audit', async (page) => {
    const rows = page.locator('[data-testid="audit-table"] [data-testid="audit-row"]');
    await h.waitFor(async () => (await rows.count()) >= 3, { what: '3 audit rows (pause, resume, retry-all)' });
    const texts = await rows.evaluateAll((els) => els.map((e) => e.textContent));
    assert.ok(texts.some((t) => t.includes(`/api/queues/${Q}/pause`) && t.includes('admin')), 'the pause by admin');
  }],
];

for (const width of [1280, 375]) {
  suite.check(`every page at ${width}x800: content, no sideways scroll, screenshot`, async () => {
    for (const f of fs.existsSync(d.SHOTS) ? fs.readdirSync(d.SHOTS) : []) {
      if (f.startsWith('FAILED-') && f.endsWith(`-${width}.png`)) fs.rmSync(`${d.SHOTS}/${f}`);
    }
    const page = await d.openPage(ctx.browser, ctx.srv, { width, height: 800 });
    await d.load(page, '#/');
    for (const [name, route, ready] of PAGES) {
      await d.go(page, route());
      try {
        await ready(page);
      } catch (e) {
        await d.screenshot(page, `FAILED-${name}-${width}`).catch(() => {});
        throw new Error(`page ${name} at ${width}: ${e.message}`);
      }
      const sizes = await page.evaluate(() => ({
        doc: document.documentElement.scrollWidth,
        body: document.body.scrollWidth,
        inner: window.innerWidth,
      }));
      assert.ok(sizes.doc <= sizes.inner && sizes.body <= sizes.inner,
        `page ${name} at ${width}: the body scrolls sideways (${JSON.stringify(sizes)})`);
      const file = await d.screenshot(page, `${name}-${width}`);
      assert.ok(fs.statSync(file).size > 1000, `screenshot ${file}`);
    }
    d.assertClean(page);
    await page.context().close();
  });
}

suite.check('keyboard: Tab reaches the navigation and the sign-in button, Enter activates', async () => {
  const page = await d.openPage(ctx.browser, ctx.srv);
  await d.load(page, '#/');
  await page.getByTestId('hop-queues').waitFor();
  const reached = new Set();
  let navQueues = -1;
  let signin = -1;
  for (let i = 0; i < 40 && (navQueues < 0 || signin < 0); i++) {
    await page.keyboard.press('Tab');
    const id = await page.evaluate(() => document.activeElement && document.activeElement.getAttribute('data-testid'));
    if (id) reached.add(id);
    if (id === 'nav-queues' && navQueues < 0) navQueues = i;
    if (id === 'signin-open' && signin < 0) signin = i;
  }
  for (const n of ['nav-overview', 'nav-queues', 'nav-dead-letters', 'nav-outbox', 'nav-schedulers', 'nav-trace', 'nav-tasks', 'nav-audit', 'signin-open']) {
    assert.ok(reached.has(n), `Tab reaches ${n} (reached: ${[...reached].join(', ')})`);
  }
  // Enter on a nav link opens its page.
  await page.getByTestId('nav-queues').focus();
  await page.keyboard.press('Enter');
  await h.waitFor(async () => (await page.evaluate(() => window.location.hash)) === '#/queues', { what: 'Enter on nav-queues' });
  await page.locator('[data-testid="queue-row"]').first().waitFor();
  // Enter on the sign-in button opens the dialog with the token field focused-able; Escape closes.
  await page.getByTestId('signin-open').focus();
  await page.keyboard.press('Enter');
  await page.getByTestId('signin-dialog').waitFor({ state: 'visible' });
  await page.keyboard.type(ctx.srv.tokens.viewer);
  const typed = await page.getByTestId('signin-token').inputValue();
  assert.strictEqual(typed, ctx.srv.tokens.viewer, 'the token field has focus in the dialog');
  await page.keyboard.press('Enter');
  await d.waitText(page.getByTestId('signed-in-as'), /viewer/, 'signed in with the keyboard');
  d.assertClean(page);
  await page.context().close();
});

suite.check('the trace form finds the event by id', async () => {
  const page = await d.openPage(ctx.browser, ctx.srv);
  await d.load(page, '#/trace');
  await page.getByTestId('trace-input').fill(ctx.eventId);
  await page.getByTestId('trace-go').click();
  await d.waitText(page.getByTestId('trace-outbox'), (t) => t.includes('order.placed'), 'trace-outbox');
  await page.getByTestId('trace-input').fill('0192f7c4-8b2a-7d1e-9f00-1a2b3c4d5e6f');
  await page.getByTestId('trace-go').click();
  await d.waitText(page.getByTestId('trace-none'), /\S/, 'trace-none for an unknown id');
  d.assertClean(page, { allow: [/status of 404/] });
  await page.context().close();
});

suite.check('ferry serve stops on SIGTERM with exit 0', async () => {
  await ctx.srv.stop();
});

suite.run();
