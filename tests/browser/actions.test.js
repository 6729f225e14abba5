// actions.test.js - the dashboard's actions in Chromium, each checked in Redis or PostgreSQL:
// a wrong token is refused at sign-in and changes nothing; the viewer (read) sees action
// buttons disabled; the admin pauses and resumes a queue, retries, promotes and removes one
// job (the confirmation's cancel leaves it), cleans a state, runs a retry-all task by name
// over 2000 failed jobs (only matching jobs move), cancels a retry-all midway, filters dead
// letters, dry-runs and executes exactly the plan shown, purges exactly the rows its dry run
// counted (not a row that matches after it); the audit page lists it all by admin.
'use strict';
const d = require('./lib/dash');
const { h, assert } = d;

const suite = new d.Suite('browser: actions');
const prefix = d.uniqueName('ac');
const ks = d.keyspace(suite, prefix);
const Q = 'orders';
const BULK = 'bulk';
const HUGE = 'huge';
const ctx = {};

const jobRoute = (q, id) => `#/queues/${encodeURIComponent(q)}/jobs/${encodeURIComponent(id)}`;
const queueRoute = (q) => `#/queues/${encodeURIComponent(q)}`;

// Click an action button (it must be enabled); when a confirmation opens, answer it.
// Resolves whether a confirmation was shown.
async function act(page, testid, answer = 'ok') {
  await clearFlash(page);
  const b = page.getByTestId(testid).first();
  await b.waitFor({ state: 'visible' });
  assert.strictEqual(await b.isDisabled(), false, `${testid} is enabled`);
  await b.click();
  const dlg = page.getByTestId('confirm-dialog');
  try {
    await dlg.waitFor({ state: 'visible', timeout: 1500 });
  } catch (_) {
    return false;
  }
  await page.getByTestId(answer === 'cancel' ? 'confirm-cancel' : 'confirm-ok').click();
  await dlg.waitFor({ state: 'hidden' });
  return true;
}

async function clearFlash(page) {
  await page.evaluate(() => {
    const f = document.querySelector('[data-testid="flash"]');
    if (f) {
      f.textContent = '';
      f.removeAttribute('data-kind');
    }
  });
}

// Fill an input or choose in a select.
async function setField(page, testid, value) {
  const el = page.getByTestId(testid).first();
  await el.waitFor({ state: 'visible' });
  if ((await el.evaluate((e) => e.tagName.toLowerCase())) === 'select') await el.selectOption(String(value));
  else await el.fill(String(value));
}

async function assertDisabled(page, testid) {
  const b = page.getByTestId(testid).first();
  await b.waitFor({ state: 'attached' });
  assert.strictEqual(await b.isDisabled(), true, `${testid} is disabled`);
  const title = (await b.getAttribute('title')) || '';
  assert.ok(title.trim().length > 0, `${testid} has a title saying why it is disabled`);
}

// The keys of queue Q (types and contents, one digest each), to compare before and after.
async function redisSnapshot() {
  const r = ks.redis;
  const keys = [];
  let cursor = '0';
  do {
    const [next, found] = await r.scan(cursor, 'MATCH', `${prefix}:${Q}:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  keys.sort();
  const out = {};
  for (const k of keys) {
    if (k.endsWith(':events')) continue; // the events stream is trimmed, not state
    const t = await r.type(k);
    let v = '';
    if (t === 'hash') v = JSON.stringify(Object.entries(await r.hgetall(k)).sort());
    else if (t === 'list') v = (await r.lrange(k, 0, -1)).join(',');
    else if (t === 'zset') v = (await r.zrange(k, 0, -1, 'WITHSCORES')).join(',');
    else if (t === 'string') v = await r.get(k);
    out[k] = `${t} ${require('node:crypto').createHash('sha256').update(v).digest('hex').slice(0, 16)}`;
  }
  return out;
}

async function taskRun(page, done) {
  const seen = [];
  let state = '';
  await h.waitFor(async () => {
    const p = page.getByTestId('task-progress');
    const v = await p.evaluate((e) => [e.value, e.max]).catch(() => null);
    if (v && (!seen.length || seen[seen.length - 1][0] !== v[0])) seen.push(v);
    state = ((await page.getByTestId('task-state').textContent({ timeout: 1000 }).catch(() => '')) || '').trim();
    return done.test(state);
  }, { timeout: 40000, interval: 50, what: `task-state ${done}` }).catch((e) => {
    throw new Error(`${e.message}; last task-state ${JSON.stringify(state)}, progress seen ${JSON.stringify(seen)}`);
  });
  return { seen, state };
}

suite.check('chromium starts and the state is made', async () => {
  ctx.browser = await d.launch();
  suite.onCleanup(() => ctx.browser.close());
  ctx.schema = await d.newSchema(suite, 'ac');
  const q = ks.queue(Q);
  await q.addBulk([...Array(3)].map((_, i) => ({ name: 'done', data: { i } })));
  await q.add('single', { order: 1 }, { attempts: 1 });
  await ks.work(Q, async (job) => {
    if (job.name === 'single') throw new Error('gateway timeout');
    return 'ok';
  }, async () => {
    const c = await q.getJobCounts('completed', 'failed');
    return c.completed === 3 && c.failed === 1;
  });
  ctx.failedId = (await q.getFailed())[0].id;
  ctx.delayedId = (await ks.ferry(['queue', 'add', Q, 'later', '{}', '--opts', '{"delay":3600000}'])).trim();
  ctx.removeId = (await ks.ferry(['queue', 'add', Q, 'removeme', '{}'])).trim();

  // 2000 failed on BULK: 1200 "charge", 800 "refund", interleaved.
  const bq = ks.queue(BULK);
  const jobs = [...Array(2000)].map((_, i) => ({ name: i % 5 < 3 ? 'charge' : 'refund', data: { i }, opts: { attempts: 1 } }));
  for (let i = 0; i < jobs.length; i += 500) await bq.addBulk(jobs.slice(i, i + 500));
  await ks.work(BULK, async () => {
    throw new Error('card declined');
  }, async () => (await bq.getJobCounts('failed')).failed === 2000, { concurrency: 100 });
  // 60001 failed on HUGE, for the cancel: a retry-all over them takes seconds.
  await d.cloneFailed(ks, HUGE, 60000);

  // Dead letters of the test prefix: 4 "gateway timeout" and 2 "card declined" on Q, 1
  // "gateway timeout" on another queue.
  const s = ctx.schema;
  await d.sql(`INSERT INTO ${s}.dead_letters (prefix, queue, job_name, job_id, data, error, attempts_made, failed_at, job_timestamp)
    SELECT '${prefix}', '${Q}', 'charge', 'dl' || g, json_build_object('order', g)::jsonb,
           CASE WHEN g <= 4 THEN 'gateway timeout (upstream 504)' ELSE 'card declined' END, 3,
           now() - make_interval(mins => 60 - g), 1000 + g
    FROM generate_series(1, 6) g`);
  await d.sql(`INSERT INTO ${s}.dead_letters (prefix, queue, job_name, job_id, data, error, attempts_made, job_timestamp)
    VALUES ('${prefix}', 'other', 'charge', 'o1', '{}', 'gateway timeout', 3, 1)`);
  ctx.srv = await d.startServe(suite, { prefix, schema: s });
});

suite.check('a wrong token is refused at sign-in and changes nothing', async () => {
  const page = await d.openPage(ctx.browser, ctx.srv);
  await d.load(page, queueRoute(Q));
  await page.getByTestId('queue-title').waitFor();
  const before = await redisSnapshot();
  await d.signIn(page, `wrong-${'x'.repeat(40)}`, { expect: 'error' });
  assert.match(await page.getByTestId('signin-error').textContent(), /\S/);
  assert.strictEqual(await page.getByTestId('signed-in-as').isVisible(), false, 'not signed in');
  await page.keyboard.press('Escape');
  await assertDisabled(page, 'action-pause');
  assert.deepStrictEqual(await redisSnapshot(), before, 'Redis unchanged');
  assert.strictEqual(await d.sqlInt(`SELECT count(*) FROM ${ctx.schema}.admin_audit WHERE method <> 'GET' AND status < 400`), 0);
  d.assertClean(page, { allow: [/401/] });
  await page.context().close();
});

suite.check('the viewer (read) sees the action buttons disabled', async () => {
  const page = await d.openPage(ctx.browser, ctx.srv);
  await d.load(page, queueRoute(Q));
  await d.signIn(page, ctx.srv.tokens.viewer);
  await d.waitText(page.getByTestId('signed-in-as'), /viewer/, 'signed-in-as viewer');
  await page.getByTestId('queue-title').waitFor();
  for (const id of ['action-pause', 'action-promote-all', 'action-clean', 'retry-all-start']) await assertDisabled(page, id);
  await d.go(page, jobRoute(Q, ctx.failedId));
  await page.getByTestId('job-id').waitFor();
  await assertDisabled(page, 'job-retry');
  await assertDisabled(page, 'job-remove');
  await d.go(page, '#/dead-letters');
  await assertDisabled(page, 'dl-dry-run');
  d.assertClean(page);
  await page.context().close();
});

suite.check('admin: pause and resume (meta paused in Redis)', async () => {
  const page = await d.openPage(ctx.browser, ctx.srv);
  ctx.page = page;
  await d.load(page, queueRoute(Q));
  await d.signIn(page, ctx.srv.tokens.admin);
  await d.waitText(page.getByTestId('signed-in-as'), /admin/, 'signed-in-as admin');
  const meta = ks.key(Q, 'meta');
  assert.strictEqual(await ks.redis.hget(meta, 'paused'), null);
  await act(page, 'action-pause');
  await h.waitFor(async () => (await ks.redis.hget(meta, 'paused')) === '1', { what: 'meta paused = 1' });
  await d.waitFlash(page, 'ok');
  await act(page, 'action-resume');
  await h.waitFor(async () => (await ks.redis.hget(meta, 'paused')) === null, { what: 'meta paused removed' });
  await d.waitFlash(page, 'ok');
});

suite.check('admin: retry one failed job (it is waiting in Redis)', async () => {
  const page = ctx.page;
  await d.go(page, jobRoute(Q, ctx.failedId));
  await d.waitText(page.getByTestId('job-state'), /failed/, 'job-state failed');
  await act(page, 'job-retry');
  await h.waitFor(async () => (await ks.queue(Q).getJobState(ctx.failedId)) === 'waiting', { what: 'retried job waiting' });
  await d.waitFlash(page, 'ok');
});

suite.check('admin: promote a delayed job', async () => {
  const page = ctx.page;
  await d.go(page, jobRoute(Q, ctx.delayedId));
  await d.waitText(page.getByTestId('job-state'), /delayed/, 'job-state delayed');
  await act(page, 'job-promote');
  await h.waitFor(async () => (await ks.queue(Q).getJobState(ctx.delayedId)) === 'waiting', { what: 'promoted job waiting' });
  await d.waitFlash(page, 'ok');
});

suite.check('admin: remove asks first; cancel keeps the job, OK removes it', async () => {
  const page = ctx.page;
  await d.go(page, jobRoute(Q, ctx.removeId));
  await d.waitText(page.getByTestId('job-id'), new RegExp(ctx.removeId), 'job-id shown');
  const key = ks.key(Q, ctx.removeId);
  assert.strictEqual(await act(page, 'job-remove', 'cancel'), true, 'remove asks for confirmation');
  await h.holdsFor(700, async () => (await ks.redis.exists(key)) === 1, 'the job kept after cancel');
  assert.match(await page.getByTestId('confirm-text').textContent(), /\S/);
  assert.strictEqual(await act(page, 'job-remove', 'ok'), true);
  await h.waitFor(async () => (await ks.redis.exists(key)) === 0, { what: 'job hash removed' });
  assert.strictEqual(await ks.queue(Q).getJobState(ctx.removeId), 'unknown');
});

suite.check('admin: clean the completed jobs', async () => {
  const page = ctx.page;
  await d.go(page, queueRoute(Q));
  await page.getByTestId('queue-title').waitFor();
  assert.strictEqual((await ks.counts(Q)).completed, 3);
  await setField(page, 'clean-state', 'completed');
  await setField(page, 'clean-grace', '0');
  await act(page, 'action-clean');
  await h.waitFor(async () => (await ks.counts(Q)).completed === 0, { what: 'completed cleaned' });
  await d.waitFlash(page, 'ok');
  const c = await ks.counts(Q);
  assert.strictEqual(c.wait, 2, 'the waiting jobs are untouched');
});

suite.check('admin: retry all by name over 2000 failed jobs moves only the matching ones', async () => {
  const page = ctx.page;
  await d.go(page, queueRoute(BULK));
  await page.getByTestId('queue-title').waitFor();
  await setField(page, 'retry-all-name', 'charge');
  await act(page, 'retry-all-start');
  await page.getByTestId('task-panel').waitFor({ state: 'visible' });
  const { seen } = await taskRun(page, /^(done|cancelled|failed)$/);
  await d.waitText(page.getByTestId('task-state'), /^done$/, 'task done');
  const last = seen[seen.length - 1];
  assert.ok(last && last[1] > 0 && last[0] === last[1], `progress full at the end: ${JSON.stringify(seen)}`);
  console.log(`# retry-all progress values seen: ${JSON.stringify(seen.slice(0, 12))}`);
  assert.match(await page.getByTestId('task-counts').textContent(), /1200/, 'task-counts names the 1200 retried');
  const bq = ks.queue(BULK);
  const c = await bq.getJobCounts('failed', 'wait');
  assert.strictEqual(c.failed, 800);
  assert.strictEqual(c.wait, 1200);
  const failed = await bq.getFailed(0, -1);
  assert.ok(failed.every((j) => j.name === 'refund'), 'only refunds are still failed');
  const waiting = await bq.getWaiting(0, -1);
  assert.ok(waiting.every((j) => j.name === 'charge'), 'only charges moved');
  const { tasks } = await d.apiOk(ctx.srv, 'GET', '/api/tasks');
  const t = tasks.find((x) => x.queue === BULK);
  assert.ok(t, 'the task is listed');
  assert.deepStrictEqual([t.state, t.total, t.scanned, t.matched, t.retried, t.createdBy], ['done', 2000, 2000, 1200, 1200, 'admin']);
  ctx.bulkTask = t.id;
});

suite.check('admin: cancel a retry-all midway', async () => {
  const page = ctx.page;
  await d.go(page, queueRoute(HUGE));
  await page.getByTestId('queue-title').waitFor();
  await setField(page, 'retry-all-name', 'charge');
  await act(page, 'retry-all-start');
  await page.getByTestId('task-cancel').waitFor({ state: 'visible' });
  await page.getByTestId('task-cancel').click();
  const dlg = page.getByTestId('confirm-dialog');
  if (await dlg.isVisible()) await page.getByTestId('confirm-ok').click();
  const { seen } = await taskRun(page, /^(done|cancelled|failed)$/);
  await d.waitText(page.getByTestId('task-state'), /^cancelled$/, 'task cancelled');
  // The bar moved off zero and stopped short of its end.
  assert.ok(seen.some(([v, m]) => v > 0 && v < m), `progress between 0 and max seen: ${JSON.stringify(seen)}`);
  const c = await ks.counts(HUGE);
  const { tasks: all } = await d.apiOk(ctx.srv, 'GET', '/api/tasks');
  const task = all.find((x) => x.queue === HUGE);
  assert.ok(c.failed > 0, `some jobs still failed (${c.failed}); the task: ${JSON.stringify(task)}`);
  assert.strictEqual(c.failed + c.wait, 60001);
  const { tasks } = await d.apiOk(ctx.srv, 'GET', '/api/tasks');
  const t = tasks.find((x) => x.queue === HUGE);
  assert.strictEqual(t.state, 'cancelled');
  assert.strictEqual(t.retried, c.wait, 'the task counts what moved');
});

suite.check('admin: dead letters filtered, dry run = PostgreSQL, execute redrives exactly the plan', async () => {
  const page = ctx.page;
  const s = ctx.schema;
  await d.go(page, '#/dead-letters');
  await setField(page, 'dl-filter-queue', Q);
  await setField(page, 'dl-filter-error', 'timeout');
  await page.getByTestId('dl-apply').click();
  const rows = page.locator('[data-testid="dl-table"] [data-testid="dl-row"]');
  await h.waitFor(async () => (await rows.count()) === 4, { what: '4 dl-row after the filter' });
  const wantIds = (await d.sqlRows(`SELECT id::text FROM ${s}.dead_letters WHERE prefix = '${prefix}' AND queue = '${Q}'
    AND error ILIKE '%timeout%' AND redriven_at IS NULL ORDER BY failed_at`)).map((r) => r.id);
  assert.strictEqual(wantIds.length, 4);
  const shown = await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-id')));
  assert.deepStrictEqual([...shown].sort(), [...wantIds].sort(), 'the rows shown are the matching rows');

  await act(page, 'dl-dry-run');
  await page.getByTestId('dl-plan').waitFor({ state: 'visible' });
  await d.waitRaw(page, 'dl-plan-total', wantIds.length);
  const groups = page.locator('[data-testid="dl-plan-groups"] [data-testid="dl-plan-group"]');
  assert.strictEqual(await groups.count(), 1, 'one group (queue, name, reason)');
  assert.match(await groups.first().textContent(), /gateway timeout/);
  assert.strictEqual(await d.sqlInt(`SELECT count(*) FROM ${s}.dead_letters WHERE redriven_at IS NOT NULL`), 0, 'a dry run changes nothing');

  // A row that matches the filter after the dry run is not in the plan: it stays.
  await d.sql(`INSERT INTO ${s}.dead_letters (prefix, queue, job_name, job_id, data, error, attempts_made, job_timestamp)
    VALUES ('${prefix}', '${Q}', 'charge', 'late', '{}', 'gateway timeout', 3, 7)`);
  assert.strictEqual(await act(page, 'dl-execute', 'ok'), true, 'execute asks for confirmation');
  await d.waitFlash(page, 'ok');
  const after = await d.sqlRows(`SELECT id::text, job_id, redriven_at IS NOT NULL AS redriven, redriven_by, redrive_job_id
    FROM ${s}.dead_letters WHERE prefix = '${prefix}'`);
  const redriven = after.filter((r) => r.redriven).map((r) => r.id).sort();
  assert.deepStrictEqual(redriven, [...wantIds].sort(), 'exactly the planned rows redriven');
  for (const r of after.filter((x) => x.redriven)) {
    assert.strictEqual(r.redriven_by, 'admin');
    assert.strictEqual(r.redrive_job_id, `dlq-${r.id}-1`);
    assert.strictEqual(await ks.queue(Q).getJobState(r.redrive_job_id), 'waiting', `job ${r.redrive_job_id} in Redis`);
  }
});

suite.check('admin: purge deletes exactly the rows its dry run counted, not one that matches later', async () => {
  const page = ctx.page;
  const s = ctx.schema;
  await d.go(page, '#/dead-letters');
  await setField(page, 'dl-filter-queue', Q);
  await setField(page, 'dl-filter-error', 'declined');
  await page.getByTestId('dl-apply').click();
  const rows = page.locator('[data-testid="dl-table"] [data-testid="dl-row"]');
  await h.waitFor(async () => (await rows.count()) === 2, { what: '2 dl-row after the filter' });
  const mine = `prefix = '${prefix}'`;
  const planned = (await d.sqlRows(`SELECT id::text FROM ${s}.dead_letters WHERE ${mine} AND queue = '${Q}'
    AND error ILIKE '%declined%'`)).map((r) => r.id).sort();
  assert.strictEqual(planned.length, 2);
  const total = await d.sqlInt(`SELECT count(*) FROM ${s}.dead_letters WHERE ${mine}`);

  await clearFlash(page);
  await page.getByTestId('dl-purge').click();
  const dlg = page.getByTestId('confirm-dialog');
  await dlg.waitFor({ state: 'visible' });
  assert.match(await page.getByTestId('confirm-text').textContent(), /Delete 2 dead letter/);
  // After the dry run, before the confirmation: a new row that matches the filter.
  await d.sql(`INSERT INTO ${s}.dead_letters (prefix, queue, job_name, job_id, data, error, attempts_made, job_timestamp)
    VALUES ('${prefix}', '${Q}', 'charge', 'late-declined', '{}', 'card declined', 3, 8)`);
  await page.getByTestId('confirm-ok').click();
  await dlg.waitFor({ state: 'hidden' });
  await d.waitFlash(page, 'ok', /Purged 2 dead letter/);

  const left = await d.sqlRows(`SELECT id::text, job_id FROM ${s}.dead_letters WHERE ${mine} AND queue = '${Q}'
    AND error ILIKE '%declined%'`);
  assert.deepStrictEqual(left.map((r) => r.job_id), ['late-declined'], 'the row that matched later is still there');
  const inList = planned.map((id) => `'${id}'`).join(',');
  assert.strictEqual(await d.sqlInt(`SELECT count(*) FROM ${s}.dead_letters WHERE id IN (${inList})`), 0, 'the planned rows are gone');
  assert.strictEqual(await d.sqlInt(`SELECT count(*) FROM ${s}.dead_letters WHERE ${mine}`), total - 2 + 1, 'nothing else deleted');
  const purged = (await d.sqlRows(`SELECT dead_letter_id::text AS id FROM ${s}.dead_letter_redrives
    WHERE action = 'purge' AND NOT dry_run`)).map((r) => r.id).sort();
  assert.deepStrictEqual(purged, planned, 'the audit names exactly the planned rows');
});

suite.check('the audit page shows these actions by admin', async () => {
  const page = ctx.page;
  await d.go(page, '#/audit');
  const rows = page.locator('[data-testid="audit-table"] [data-testid="audit-row"]');
  const want = [
    ['POST', `/api/queues/${Q}/pause`],
    ['POST', `/api/queues/${Q}/resume`],
    ['POST', `/api/queues/${Q}/jobs/${ctx.failedId}/retry`],
    ['POST', `/api/queues/${Q}/jobs/${ctx.delayedId}/promote`],
    ['DELETE', `/api/queues/${Q}/jobs/${ctx.removeId}`],
    ['POST', `/api/queues/${Q}/clean`],
    ['POST', `/api/queues/${BULK}/retry-all`],
    ['POST', '/api/dead-letters/redrive'],
    ['POST', '/api/dead-letters/purge'],
  ];
  let texts = [];
  await h.waitFor(async () => {
    texts = await rows.evaluateAll((els) => els.map((e) => e.textContent));
    return want.every(([m, p]) => texts.some((t) => t.includes(m) && t.includes(p) && t.includes('admin')));
  }, { timeout: 15000, interval: 250, what: 'audit rows of every action' }).catch((e) => {
    throw new Error(`${e.message}; rows: ${JSON.stringify(texts.slice(0, 20))}`);
  });
  const db = await d.sqlInt(`SELECT count(*) FROM ${ctx.schema}.admin_audit WHERE actor = 'admin' AND method <> 'GET'`);
  assert.ok(db >= want.length, `admin_audit holds the actions (${db})`);
  d.assertClean(page, { allow: [/409/] });
});

suite.check('ferry serve stops on SIGTERM with exit 0', async () => {
  if (ctx.page) await ctx.page.context().close();
  await ctx.srv.stop();
});

suite.run();
