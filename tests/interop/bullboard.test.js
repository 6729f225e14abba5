// bullboard.test.js - bull-board (@bull-board/api 9.10.2 over BullMQ 6.7.0, BullMQAdapter)
// shows what ferry did correctly. Its API routes are called as its UI calls them, through a
// server adapter that keeps the routes instead of serving them (lib/bullboard.js), on state
// made by ferry only: jobs added by `ferry queue add`, log lines by `ferry job logs --add`,
// finished by a ferry worker (with BullMQ metrics on), retried and cleaned by ferry's admin
// commands. The board's queue list (counts; a worker shown while the ferry worker runs), its
// job lists per state (names, data, returnValue, failedReason, attempts, stacktrace, delay),
// one job, its logs and the metrics are checked against what ferry itself reports (`ferry
// queue counts`, `ferry job show`); and the board's own actions (promote a job, retry all
// failed) on that state are picked up by a ferry worker.
'use strict';
const assert = require('node:assert');
const h = require('./lib/harness');
const { board } = require('./lib/bullboard');
const { startMetricsWorker } = require('./lib/metrics_driver');

const suite = new h.Suite('bullboard: bull-board shows the state ferry made');

// ferry's `queue counts --json` for the states the board lists (BullMQ's getJobCounts()).
async function ferryCountsAsBoard(queue) {
  const c = await h.ferryCounts(queue);
  const states = ['active', 'completed', 'delayed', 'failed', 'prioritized', 'waiting', 'waiting-children'];
  return Object.fromEntries(states.map((s) => [s, c[s]]));
}

async function boardQueue(b, queue, status = 'latest') {
  const r = await b.call('get', `/api/queues?activeQueue=${encodeURIComponent(queue)}&status=${status}&page=1&jobsPerPage=50`);
  assert.strictEqual(r.status, 200, JSON.stringify(r.body));
  const q = r.body.queues.find((x) => x.name === queue);
  assert.ok(q, `queue ${queue} listed`);
  return q;
}

// A board job against `ferry job show --json` of the same id.
async function sameAsFerry(queue, bj) {
  const fj = await h.ferryJob(queue, bj.id);
  assert.strictEqual(bj.name, fj.name, `${bj.id}: name`);
  assert.deepStrictEqual(bj.data, fj.data, `${bj.id}: data`);
  assert.strictEqual(bj.attempts, fj.attemptsMade, `${bj.id}: attempts (attemptsMade)`);
  assert.strictEqual(bj.failedReason, fj.failedReason === null ? undefined : fj.failedReason, `${bj.id}: failedReason`);
  assert.strictEqual(bj.timestamp, fj.timestamp, `${bj.id}: timestamp`);
  assert.strictEqual(bj.finishedOn, fj.finishedOn === null ? undefined : fj.finishedOn, `${bj.id}: finishedOn`);
  assert.deepStrictEqual(bj.returnValue, fj.returnvalue === undefined ? null : fj.returnvalue, `${bj.id}: returnValue`);
  return fj;
}

suite.check('queues, job lists, a job, logs and metrics of ferry-made state', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('bb'));
  const Q = nq.name;
  const ok1 = await h.ferryAdd(Q, 'ok', { n: 1 });
  const ok2 = await h.ferryAdd(Q, 'ok', { n: 2, text: 'héllo "quoted"' });
  const perm = await h.ferryAdd(Q, 'perm', { n: 3 }, { opts: { attempts: 3 } });
  const flaky = await h.ferryAdd(Q, 'flaky', { n: 4 }, { opts: { attempts: 2 } });
  const later = await h.ferryAdd(Q, 'later', { n: 5 });
  const delayed = await h.ferryAdd(Q, 'ok', { n: 6 }, { opts: { delay: 600000 } });
  assert.strictEqual((await h.ferryOk(['job', 'logs', Q, ok1, '--add', 'step 1'])).trim(), '1');
  assert.strictEqual((await h.ferryOk(['job', 'logs', Q, ok1, '--add', 'step 2: done\nnext line'])).trim(), '2');
  for (const t of ['a1', 'a2', 'a3']) await h.ferryOk(['job', 'logs', Q, perm, '--add', t, '--keep', '2']);

  const w = await startMetricsWorker(Q, 60);
  await h.waitFor(async () => {
    const c = await h.ferryCounts(Q);
    return c.completed === 3 && c.failed === 2;
  }, { what: `${Q}: 3 completed, 2 failed` });
  const b = board([nq.queue]);
  // the running ferry worker is the queue's worker on the board (one client: its blocking
  // connection, named as Node names a Worker's)
  assert.strictEqual((await boardQueue(b, Q)).hasWorkers, true);
  const workers = await b.call('get', `/api/queues/${Q}/workers`);
  assert.strictEqual(workers.status, 200);
  assert.strictEqual(workers.body.workers.length, 1, JSON.stringify(workers.body));
  await w.stop();
  assert.strictEqual((await boardQueue(b, Q)).hasWorkers, false, 'no worker once it stopped');

  const latest = await boardQueue(b, Q);
  assert.deepStrictEqual(latest.counts, await ferryCountsAsBoard(Q), 'counts');
  assert.deepStrictEqual(latest.counts, { active: 0, completed: 3, delayed: 1, failed: 2, prioritized: 0, waiting: 0, 'waiting-children': 0 });
  assert.strictEqual(latest.isPaused, false);
  assert.strictEqual(latest.type, 'bullmq');

  const failed = await boardQueue(b, Q, 'failed');
  assert.deepStrictEqual(failed.jobs.map((j) => j.id).sort(), [perm, flaky].sort());
  for (const j of failed.jobs) {
    await sameAsFerry(Q, j);
    assert.strictEqual(j.isFailed, true);
    assert.ok(j.stacktrace.length >= 1, `${j.id}: stacktrace shown`);
  }
  const fp = failed.jobs.find((j) => j.id === perm);
  assert.strictEqual(fp.failedReason, 'perm says no');
  assert.strictEqual(fp.attempts, 1);
  assert.deepStrictEqual(fp.data, { n: 3 });
  const ff = failed.jobs.find((j) => j.id === flaky);
  assert.strictEqual(ff.failedReason, 'flaky says no');
  assert.strictEqual(ff.attempts, 2);
  assert.strictEqual(ff.stacktrace.length, 2, 'one trace per attempt');

  const completed = await boardQueue(b, Q, 'completed');
  assert.deepStrictEqual(completed.jobs.map((j) => j.id).sort(), [ok1, ok2, later].sort());
  for (const j of completed.jobs) {
    await sameAsFerry(Q, j);
    assert.deepStrictEqual(j.returnValue, { ok: true });
    assert.strictEqual(j.isFailed, false);
  }
  assert.deepStrictEqual(completed.jobs.find((j) => j.id === ok2).data, { n: 2, text: 'héllo "quoted"' });
  // retry-later spends no attempt but a start: the board shows attemptsStarted when they differ
  const cl = completed.jobs.find((j) => j.id === later);
  assert.strictEqual(cl.attempts, 1);
  assert.strictEqual(cl.attemptsStarted, 2);

  const del = await boardQueue(b, Q, 'delayed');
  assert.deepStrictEqual(del.jobs.map((j) => [j.id, j.name, j.delay]), [[delayed, 'ok', 600000]]);
  await sameAsFerry(Q, del.jobs[0]);

  const one = await b.call('get', `/api/queues/${Q}/${perm}`);
  assert.strictEqual(one.status, 200);
  assert.strictEqual(one.body.status, 'failed');
  assert.strictEqual(one.body.job.failedReason, 'perm says no');
  const missing = await b.call('get', `/api/queues/${Q}/no-such-job`);
  assert.strictEqual(missing.status, 404);

  assert.deepStrictEqual((await b.call('get', `/api/queues/${Q}/${ok1}/logs`)).body, ['step 1', 'step 2: done\nnext line']);
  assert.deepStrictEqual((await b.call('get', `/api/queues/${Q}/${perm}/logs`)).body, ['a2', 'a3']);
  const logsJson = JSON.parse(await h.ferryOk(['job', 'logs', Q, perm, '--json']));
  assert.deepStrictEqual(logsJson, await nq.queue.getJobLogs(perm), 'ferry job logs --json = Node getJobLogs');

  const m = await b.call('get', `/api/queues/${Q}/metrics`);
  assert.strictEqual(m.status, 200);
  assert.strictEqual(m.body.completed.meta.count, 3, JSON.stringify(m.body));
  assert.strictEqual(m.body.failed.meta.count, 2, JSON.stringify(m.body));
});

suite.check("ferry's retry and clean show on the board; the board's promote and retry-all reach a ferry worker", async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('bb-act'));
  const Q = nq.name;
  const ok = await h.ferryAdd(Q, 'ok', { n: 1 });
  const perm = await h.ferryAdd(Q, 'perm', { n: 2 });
  const flaky = await h.ferryAdd(Q, 'flaky', { n: 3 });
  const delayed = await h.ferryAdd(Q, 'ok', { n: 4 }, { opts: { delay: 600000 } });
  let w = await startMetricsWorker(Q, 0);
  await h.waitFor(async () => {
    const c = await h.ferryCounts(Q);
    return c.completed === 1 && c.failed === 2;
  }, { what: `${Q}: 1 completed, 2 failed` });
  await w.stop();
  const b = board([nq.queue]);

  // ferry retries one failed job and cleans the completed ones
  await h.ferryOk(['job', 'retry', Q, perm]);
  await h.ferryOk(['queue', 'clean', Q, '--state', 'completed', '--grace', '0s']);
  let q = await boardQueue(b, Q);
  assert.deepStrictEqual(q.counts, await ferryCountsAsBoard(Q));
  assert.deepStrictEqual(q.counts, { active: 0, completed: 0, delayed: 1, failed: 1, prioritized: 0, waiting: 1, 'waiting-children': 0 });
  assert.strictEqual((await b.call('get', `/api/queues/${Q}/${perm}`)).body.status, 'waiting');
  assert.strictEqual((await b.call('get', `/api/queues/${Q}/${ok}`)).status, 404, 'cleaned job is gone');

  // the board acts: promote the delayed job, retry every failed one
  assert.strictEqual((await b.call('put', `/api/queues/${Q}/${delayed}/promote`)).status, 204);
  assert.strictEqual((await h.ferryJob(Q, delayed)).state, 'waiting');
  const ra = await b.call('put', `/api/queues/${Q}/retry/failed`);
  assert.strictEqual(ra.status, 200);
  assert.deepStrictEqual(ra.body, { retried: 1, skipped: 0 });
  q = await boardQueue(b, Q);
  assert.deepStrictEqual(q.counts, await ferryCountsAsBoard(Q));
  assert.strictEqual(q.counts.waiting, 3);

  // a ferry worker runs what the board released: the promoted job completes, the two
  // failing ones fail again
  w = await startMetricsWorker(Q, 0);
  await h.waitFor(async () => {
    const c = await h.ferryCounts(Q);
    return c.completed === 1 && c.failed === 2 && c.waiting === 0;
  }, { what: `${Q}: the released jobs run` });
  await w.stop();
  const done = await boardQueue(b, Q, 'completed');
  assert.deepStrictEqual(done.jobs.map((j) => j.id), [delayed]);
  await sameAsFerry(Q, done.jobs[0]);
  const again = await boardQueue(b, Q, 'failed');
  assert.deepStrictEqual(again.jobs.map((j) => j.id).sort(), [perm, flaky].sort());
  for (const j of again.jobs) await sameAsFerry(Q, j);
});

suite.run();
