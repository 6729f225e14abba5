// overview.test.js - the dashboard's overview (#/) in Chromium against known state: jobs in
// every state made with Node BullMQ and the ferry CLI under the test's own prefix, outbox
// rows, dead letters and inbox markers in the test's own schema. Every number shown
// (data-raw) equals GET /api/overview and the state the test made; new jobs show up without
// a reload over the live stream; with all 8 stream slots held by the test the page says
// "polling" and its numbers still follow.
'use strict';
const d = require('./lib/dash');
const { h, assert } = d;

const suite = new d.Suite('browser: overview page');
const prefix = d.uniqueName('ov');
const ks = d.keyspace(suite, prefix);
const QA = 'payments';
const QB = 'mailer';
const ctx = {};

suite.check('chromium starts and the state is made', async () => {
  ctx.browser = await d.launch();
  suite.onCleanup(() => ctx.browser.close());
  ctx.schema = await d.newSchema(suite, 'ov');
  const s = ctx.schema;

  // Redis: 5 completed, 4 failed, then 1 active (held by a Node worker of concurrency 1),
  // 3 wait, 2 delayed, 2 prioritized on QA; QB paused with 2 jobs (in wait, as BullMQ 6 keeps them).
  const qa = ks.queue(QA);
  await qa.addBulk([...Array(5)].map((_, i) => ({ name: 'ok', data: { i } })));
  await qa.addBulk([...Array(4)].map((_, i) => ({ name: 'bad', data: { i } })));
  await ks.work(QA, async (job) => {
    if (job.name === 'bad') throw new Error('card declined');
    return 'ok';
  }, async () => {
    const c = await qa.getJobCounts('completed', 'failed');
    return c.completed === 5 && c.failed === 4;
  });
  await qa.add('hold', { hold: true });
  const { Worker } = require('bullmq');
  let release;
  const held = new Promise((r) => (release = r));
  ctx.release = release;
  ctx.worker = new Worker(QA, async () => held, { connection: h.connection, prefix, concurrency: 1 });
  ctx.worker.on('error', () => {});
  suite.onCleanup(async () => {
    ctx.release();
    await ctx.worker.close(true);
  });
  await h.waitFor(async () => (await qa.getJobCounts('active')).active === 1, { what: 'the hold job active' });
  for (let i = 0; i < 3; i++) await ks.ferry(['queue', 'add', QA, 'w', JSON.stringify({ i })]);
  for (let i = 0; i < 2; i++) await ks.ferry(['queue', 'add', QA, 'later', '{}', '--opts', '{"delay":3600000}']);
  for (let i = 0; i < 2; i++) await ks.ferry(['queue', 'add', QA, 'vip', '{}', '--opts', '{"priority":5}']);
  await ks.ferry(['queue', 'pause', QB]);
  for (let i = 0; i < 2; i++) await ks.ferry(['queue', 'add', QB, 'mail', '{}']);
  const ca = await ks.counts(QA);
  assert.deepStrictEqual(
    { wait: ca.wait, active: ca.active, delayed: ca.delayed, prioritized: ca.prioritized, failed: ca.failed, completed: ca.completed },
    { wait: 3, active: 1, delayed: 2, prioritized: 2, failed: 4, completed: 5 }, 'QA counts in Redis');
  // BullMQ 6: the jobs of a paused queue stay in wait (the meta says paused).
  assert.strictEqual((await ks.counts(QB)).wait, 2, 'QB jobs (paused queue)');

  // PostgreSQL: 3 unpublished outbox rows (oldest 30 s old) and 1 published; 2 dead letters
  // not redriven (oldest 1 h old) and 1 redriven; 2 inbox markers of one consumer.
  await d.sql(`INSERT INTO ${s}.outbox_events (id, topic, aggregate_id, payload, created_at)
    SELECT gen_random_uuid(), 'order.placed', gen_random_uuid(), '{"n":1}', now() - make_interval(secs => 30 - g)
    FROM generate_series(0, 2) g`);
  await d.sql(`INSERT INTO ${s}.outbox_events (id, topic, aggregate_id, payload, published_at)
    VALUES (gen_random_uuid(), 'order.placed', gen_random_uuid(), '{}', now())`);
  await d.sql(`INSERT INTO ${s}.dead_letters (prefix, queue, job_name, job_id, data, error, attempts_made, failed_at, redriven_at, redrive_count)
    VALUES ('${prefix}', '${QA}', 'bad', 'x1', '{}', 'card declined', 3, now() - interval '1 hour', NULL, 0),
           ('${prefix}', '${QA}', 'bad', 'x2', '{}', 'card declined', 3, now() - interval '10 minutes', NULL, 0),
           ('${prefix}', '${QA}', 'bad', 'x3', '{}', 'card declined', 3, now() - interval '2 hours', now(), 1)`);
  await d.sql(`INSERT INTO ${s}.processed_messages (consumer, message_id)
    VALUES ('billing', gen_random_uuid()), ('billing', gen_random_uuid())`);

  ctx.srv = await d.startServe(suite, { prefix, schema: s });
});

// The API's snapshot agrees with what the test made.
suite.check('GET /api/overview reports the state made', async () => {
  const o = await d.apiOk(ctx.srv, 'GET', '/api/overview');
  ctx.api = o;
  assert.strictEqual(typeof o.at, 'number');
  assert.strictEqual(o.outbox.unpublished, 3);
  assert.ok(o.outbox.oldestAgeSeconds >= 29 && o.outbox.oldestAgeSeconds < 120, `outbox oldest age ${o.outbox.oldestAgeSeconds}`);
  assert.strictEqual(o.totals.ready, 7, 'ready = wait 3 + prioritized 2 + the paused queue\'s 2');
  assert.strictEqual(o.totals.active, 1);
  assert.strictEqual(o.totals.failed, 4);
  assert.strictEqual(o.totals.delayed, 2);
  assert.strictEqual(o.totals.workers, 1, 'one Node worker');
  assert.strictEqual(o.deadLetters.notRedriven, 2);
  assert.ok(o.deadLetters.oldestAgeSeconds >= 3599 && o.deadLetters.oldestAgeSeconds < 3700, `dead letters oldest age ${o.deadLetters.oldestAgeSeconds}`);
  assert.strictEqual(o.inbox.markers, 2);
  const qa = o.queues.find((q) => q.name === QA);
  const qb = o.queues.find((q) => q.name === QB);
  assert.ok(qa && qb, `both queues listed: ${o.queues.map((q) => q.name)}`);
  assert.deepStrictEqual(
    [qa.counts.wait, qa.counts.active, qa.counts.delayed, qa.counts.prioritized, qa.counts.failed, qa.counts.completed],
    [3, 1, 2, 2, 4, 5]);
  assert.strictEqual(qb.paused, true);
  assert.strictEqual(qb.counts.wait + qb.counts.paused, 2);
  assert.strictEqual(qa.throughput.completed.length, 30);
  assert.strictEqual(qa.throughput.completed.reduce((a, b) => a + b, 0), 5, 'the 5 completions in the last 5 minutes');
  assert.strictEqual(qa.throughput.failed.reduce((a, b) => a + b, 0), 4);
  assert.strictEqual(o.queuesComplete, true);
});

// Every number of the page, as data-raw, against the API and the state made.
suite.check('#/ shows every number as the API gives it', async () => {
  const page = await d.openPage(ctx.browser, ctx.srv);
  ctx.page = page;
  await d.load(page, '#/');
  for (const hop of ['hop-outbox', 'hop-relay', 'hop-queues', 'hop-workers', 'hop-inbox', 'hop-dead-letters']) {
    await page.getByTestId(hop).waitFor({ state: 'visible' });
  }
  const exact = {
    'outbox-unpublished': 3,
    'queues-ready': 7,
    'workers-active': 1,
    'workers-count': 1,
    'inbox-markers': 2,
    'dead-letters-count': 2,
  };
  for (const [id, want] of Object.entries(exact)) await d.waitRaw(page, id, want);
  const o = await d.apiOk(ctx.srv, 'GET', '/api/overview');
  const ages = {
    'outbox-oldest-age': o.outbox.oldestAgeSeconds,
    'queues-oldest-ready-age': o.totals.oldestReadyAgeSeconds,
    'dead-letters-oldest-age': o.deadLetters.oldestAgeSeconds,
  };
  // The page's snapshot and this one are a few seconds apart: ages agree within 10 s.
  for (const [id, want] of Object.entries(ages)) {
    const got = Number(await d.raw(page, id));
    assert.ok(Number.isFinite(got) && Math.abs(got - want) <= 10, `${id}: page ${got}, API ${want}`);
  }
  assert.ok(Number(await d.raw(page, 'dead-letters-oldest-age')) >= 3599);
  // The numbers are shown, not only carried: each has visible text.
  for (const id of Object.keys(exact)) {
    const t = ((await page.getByTestId(id).first().textContent()) || '').trim();
    assert.ok(t.length > 0, `${id} shows text`);
  }
  await page.locator('[data-testid="overview-queues"] [data-queue="' + QA + '"]').waitFor();
  const rowB = page.locator('[data-testid="overview-queues"] [data-queue="' + QB + '"]');
  await rowB.waitFor();
  assert.match((await rowB.textContent()) || '', /paused/, 'the paused queue says so in text');
  // Sparklines: inline SVG with the numbers in aria-label.
  const sparks = page.getByTestId('sparkline');
  assert.ok((await sparks.count()) > 0, 'at least one sparkline');
  const first = sparks.first();
  assert.strictEqual(await first.evaluate((e) => e.tagName.toLowerCase()), 'svg');
  assert.match((await first.getAttribute('aria-label')) || '', /\d/, 'sparkline aria-label gives numbers');
  await d.waitText(page.getByTestId('live-status'), /^live$/, 'live-status live');
  d.assertClean(page);
});

suite.check('new jobs appear without a reload (live stream)', async () => {
  const page = ctx.page;
  await page.evaluate(() => {
    window.__noReload = 1;
  });
  for (let i = 0; i < 5; i++) await ks.ferry(['queue', 'add', QA, 'w', '{}']);
  await d.waitRaw(page, 'queues-ready', 12, { timeout: 15000 });
  assert.strictEqual(await page.evaluate(() => window.__noReload), 1, 'the page was not reloaded');
  await d.waitText(page.getByTestId('live-status'), /^live$/, 'still live');
  d.assertClean(page);
  await page.context().close();
});

// Hold every stream slot (limits.streams) from here: a new page is refused its stream (429),
// says "polling", and its numbers still follow Redis.
suite.check('with every stream slot taken the page polls and still updates', async () => {
  const info = await d.apiOk(ctx.srv, 'GET', '/api/info');
  assert.strictEqual(info.limits.streams, 8);
  // One client address holds at most 3 streams (the page's own is the 4th): the per-client
  // cap is the slot limit a single browser meets.
  const slots = 3;
  const held = [];
  suite.onCleanup(() => held.forEach((s) => s.ac.abort()));
  const open = async () => {
    const ac = new AbortController();
    const res = await fetch(`${ctx.srv.base}/api/stream?interval=1`, { signal: ac.signal });
    if (res.status !== 200) {
      ac.abort();
      return res.status;
    }
    const reader = res.body.getReader();
    (async () => {
      try {
        for (;;) if ((await reader.read()).done) break;
      } catch (_) {
        /* aborted */
      }
    })();
    held.push({ ac });
    return 200;
  };
  // The closed page's stream may still hold a slot until the server's next write fails.
  await h.waitFor(async () => {
    if (held.length < slots) {
      const st = await open();
      if (st !== 200 && st !== 429) throw new Error(`GET /api/stream answered ${st}`);
    }
    return held.length === slots;
  }, { timeout: 20000, interval: 200, what: `${slots} streams held` });
  assert.strictEqual(await open(), 429, 'one stream more than 3 per client is refused');

  const page = await d.openPage(ctx.browser, ctx.srv);
  await d.load(page, '#/');
  await d.waitText(page.getByTestId('live-status'), /^polling$/, 'live-status polling');
  await d.waitRaw(page, 'queues-ready', 12);
  for (let i = 0; i < 3; i++) await ks.ferry(['queue', 'add', QA, 'w', '{}']);
  await d.waitRaw(page, 'queues-ready', 15, { timeout: 15000 });
  d.assertClean(page, { allow: [/429/] });
  await page.context().close();
  held.forEach((s) => s.ac.abort());
});

suite.check('ferry serve stops on SIGTERM with exit 0', async () => {
  ctx.release();
  await ctx.srv.stop();
});

suite.run();
