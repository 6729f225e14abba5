// readonly.test.js - `ferry serve --read-only` in Chromium: /api/info says readOnly, the page
// shows the read-only banner, every action button is disabled even for the admin token, a
// forced click (the disabled attribute removed) and a POST from the page are refused 403
// naming --read-only and audited, and Redis and PostgreSQL are unchanged.
'use strict';
const d = require('./lib/dash');
const { h, assert } = d;

const suite = new d.Suite('browser: read-only server');
const prefix = d.uniqueName('ro');
const ks = d.keyspace(suite, prefix);
const Q = 'orders';
const ctx = {};

async function state() {
  const q = ks.queue(Q);
  const counts = await q.getJobCounts();
  const meta = await ks.redis.hgetall(ks.key(Q, 'meta'));
  const dl = await d.sql(`SELECT coalesce(string_agg(d::text, '|' ORDER BY id), '') FROM ${ctx.schema}.dead_letters d`);
  return JSON.stringify({ counts, meta, dl });
}

suite.check('chromium starts and the state is made', async () => {
  ctx.browser = await d.launch();
  suite.onCleanup(() => ctx.browser.close());
  ctx.schema = await d.newSchema(suite, 'ro');
  const q = ks.queue(Q);
  await q.add('bad', { i: 1 }, { attempts: 1 });
  await ks.work(Q, async () => {
    throw new Error('gateway timeout');
  }, async () => (await q.getJobCounts('failed')).failed === 1);
  ctx.failedId = (await q.getFailed())[0].id;
  ctx.delayedId = (await ks.ferry(['queue', 'add', Q, 'later', '{}', '--opts', '{"delay":3600000}'])).trim();
  await d.sql(`INSERT INTO ${ctx.schema}.dead_letters (prefix, queue, job_name, job_id, data, error, attempts_made, job_timestamp)
    VALUES ('${prefix}', '${Q}', 'bad', 'x1', '{}', 'gateway timeout', 1, 1)`);
  ctx.srv = await d.startServe(suite, { prefix, schema: ctx.schema, readOnly: true });
  ctx.before = await state();
  const info = await d.apiOk(ctx.srv, 'GET', '/api/info');
  assert.strictEqual(info.readOnly, true, '/api/info readOnly');
});

suite.check('the banner shows and every action is disabled for the admin', async () => {
  const page = await d.openPage(ctx.browser, ctx.srv);
  ctx.page = page;
  await d.load(page, `#/queues/${Q}`);
  await page.getByTestId('readonly-banner').waitFor({ state: 'visible' });
  assert.match((await page.getByTestId('readonly-banner').textContent()) || '', /read-only|read only/i);
  await d.signIn(page, ctx.srv.tokens.admin);
  await d.waitText(page.getByTestId('signed-in-as'), /admin/, 'signed in as admin');
  await page.getByTestId('queue-title').waitFor();
  const check = async (id) => {
    const b = page.getByTestId(id).first();
    await b.waitFor({ state: 'attached' });
    assert.strictEqual(await b.isDisabled(), true, `${id} disabled in read-only mode`);
    assert.match((await b.getAttribute('title')) || '', /read-only|read only/i, `${id} title says why`);
  };
  for (const id of ['action-pause', 'action-promote-all', 'action-clean', 'retry-all-start']) await check(id);
  await d.go(page, `#/queues/${Q}/jobs/${ctx.failedId}`);
  await page.getByTestId('job-id').waitFor();
  for (const id of ['job-retry', 'job-remove']) await check(id);
  await d.go(page, `#/queues/${Q}/jobs/${ctx.delayedId}`);
  await d.waitText(page.getByTestId('job-state'), /delayed/, 'delayed job page');
  await check('job-promote');
  await d.go(page, '#/dead-letters');
  await check('dl-dry-run');
  await page.getByTestId('readonly-banner').waitFor({ state: 'visible' });
});

suite.check('a forced click and a POST from the page are refused 403 and change nothing', async () => {
  const page = ctx.page;
  await d.go(page, `#/queues/${Q}/jobs/${ctx.failedId}`);
  await page.getByTestId('job-retry').waitFor({ state: 'attached' });
  await page.evaluate(() => {
    const b = document.querySelector('[data-testid="job-retry"]');
    b.disabled = false;
    b.removeAttribute('disabled');
  });
  const answers = [];
  page.on('response', (r) => {
    if (r.request().method() !== 'GET') answers.push([r.request().method(), new URL(r.url()).pathname, r.status()]);
  });
  await page.getByTestId('job-retry').click({ force: true });
  const dlg = page.getByTestId('confirm-dialog');
  if (await dlg.isVisible()) await page.getByTestId('confirm-ok').click();
  await page.waitForTimeout(500);
  for (const a of answers) assert.strictEqual(a[2], 403, `a forced click's request is refused: ${JSON.stringify(a)}`);
  // A POST straight from the page with the admin token.
  const r = await page.evaluate(async ([q, id, tok]) => {
    const res = await fetch(`/api/queues/${q}/jobs/${id}/retry`, { method: 'POST', headers: { Authorization: `Bearer ${tok}` } });
    return { status: res.status, body: await res.text() };
  }, [Q, ctx.failedId, ctx.srv.tokens.admin]);
  assert.strictEqual(r.status, 403);
  assert.match(JSON.parse(r.body).error, /read-only \(ferry serve --read-only\)/);
  for (const [m, p, body] of [['POST', `/api/queues/${Q}/pause`], ['POST', '/api/dead-letters/redrive', { dryRun: false }],
    ['DELETE', `/api/queues/${Q}/jobs/${ctx.delayedId}`], ['POST', `/api/queues/${Q}/retry-all`, { name: 'bad' }]]) {
    const x = await d.api(ctx.srv, m, p, { token: ctx.srv.tokens.admin, body });
    assert.strictEqual(x.status, 403, `${m} ${p}: ${x.text}`);
    assert.match(x.json.error, /read-only/);
  }
  assert.strictEqual(await ks.queue(Q).getJobState(ctx.failedId), 'failed');
  assert.strictEqual(await state(), ctx.before, 'Redis and PostgreSQL unchanged');
  const audited = await d.sqlInt(`SELECT count(*) FROM ${ctx.schema}.admin_audit
    WHERE actor = 'admin' AND status = 403 AND path = '/api/queues/${Q}/jobs/${ctx.failedId}/retry'`);
  assert.ok(audited >= 1, 'the refused retry is audited');
  d.assertClean(page, { allow: [/status of 403/] });
  await page.context().close();
});

suite.check('ferry serve stops on SIGTERM with exit 0', async () => {
  await ctx.srv.stop();
});

suite.run();
