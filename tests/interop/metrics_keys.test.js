// metrics_keys.test.js - a ferry worker with bullmq_metrics_max_points writes BullMQ 6.7.0's
// own per-minute metrics keys as a Node Worker with `metrics: { maxDataPoints }` does: the same
// workload (completions, permanent failures, a job retried until it fails for good, a
// retry-later) through a Node worker on one queue and through ferry (tests/interop/lib/
// metrics_worker.c, concurrency 8, so its finishes are batched) on a twin queue gives the same
// Queue.getMetrics('completed' | 'failed') answers: counts, prevCount, data points (when both
// ran inside one wall-clock minute; else the invariant both must keep), the same key types and
// hash fields. Without the option neither writes a metrics key. The per-minute points depend on
// the clock, so the test starts a run only with at least 20 s left in the current minute.
'use strict';
const assert = require('node:assert');
const h = require('./lib/harness');
const { startMetricsWorker } = require('./lib/metrics_driver');

const suite = new h.Suite('metrics_keys: ferry writes the metrics keys Node Queue.getMetrics reads');
const redis = h.newRedis();
suite.onCleanup(() => redis.quit());

const MAX_POINTS = 100;

// The workload, as addBulk entries: 5 complete, 2 fail for good, 1 fails both its attempts,
// 1 asks to run later once and then completes -> 6 completed, 3 failed.
const WORKLOAD = [
  ...[1, 2, 3, 4, 5].map((n) => ({ name: 'ok', data: { n } })),
  { name: 'perm', data: { n: 6 } },
  { name: 'perm', data: { n: 7 } },
  { name: 'flaky', data: { n: 8 }, opts: { attempts: 2 } },
  { name: 'later', data: { n: 9 } },
];
const COMPLETED = 6;
const FAILED = 3;

// The Node processor doing what metrics_worker.c does by job name.
function nodeProcessor() {
  const { UnrecoverableError, DelayedError } = require('bullmq');
  return async (job, token) => {
    if (job.name === 'perm') throw new UnrecoverableError('perm says no');
    if (job.name === 'flaky') throw new Error('flaky says no');
    if (job.name === 'later' && job.attemptsStarted === 1) {
      await job.moveToDelayed(Date.now() + 1, token);
      throw new DelayedError();
    }
    return { ok: true };
  };
}

async function waitFinished(q) {
  await h.waitFor(async () => {
    const c = await q.getJobCounts('completed', 'failed');
    return c.completed === COMPLETED && c.failed === FAILED;
  }, { what: `${q.name}: ${COMPLETED} completed and ${FAILED} failed` });
}

// A state with history: 10 completions counted, the last data point written 3 minutes ago
// with 4 counted then, one older point of 7.
async function presetHistory(queue) {
  const key = `${h.PREFIX}:${queue}:metrics:completed`;
  await redis.hset(key, 'count', 10, 'prevCount', 4, 'prevTS', Date.now() - 180000);
  await redis.rpush(`${key}:data`, 7);
}

// Wait (polling the clock) until at least 20 s are left in this wall-clock minute.
async function awayFromMinuteEnd() {
  await h.waitFor(() => Date.now() % 60000 < 40000, { timeout: 25000, interval: 200, what: 'the first 40 s of a minute' });
}

async function keyShape(queue) {
  const base = `${h.PREFIX}:${queue}:metrics:`;
  const out = {};
  for (const k of ['completed', 'completed:data', 'failed', 'failed:data']) out[k] = await redis.type(base + k);
  out.completedFields = (await redis.hkeys(`${base}completed`)).sort();
  out.failedFields = (await redis.hkeys(`${base}failed`)).sort();
  return out;
}

// What must hold whatever minutes passed: every finish is counted, and every count moved into
// the data points is counted once (no trimming: fewer than MAX_POINTS minutes pass).
function checkInvariants(label, m, { initialCount, initialPending, initialData, finished }) {
  assert.strictEqual(m.meta.count, initialCount + finished, `${label}: meta.count`);
  assert.strictEqual(m.count, m.data.length, `${label}: number of points = data length`);
  const sum = m.data.reduce((a, b) => a + b, 0);
  assert.strictEqual(sum + m.meta.count - m.meta.prevCount, initialData + initialPending + finished,
    `${label}: points + not yet pushed = all counted (${JSON.stringify(m)})`);
  assert.ok(m.meta.prevTS > Date.now() - 120000 && m.meta.prevTS <= Date.now(), `${label}: prevTS is recent`);
}

suite.check('same getMetrics for the same workload finished by Node and by ferry', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('metrics-node'));
  const fq = await h.nodeQueue(suite, h.uniqueQueue('metrics-ferry'));
  await awayFromMinuteEnd();
  const minuteAtStart = Math.floor(Date.now() / 60000);
  for (const q of [nq, fq]) {
    await presetHistory(q.name);
    await q.queue.addBulk(WORKLOAD);
  }
  h.startNodeWorker(nq.name, nodeProcessor(), { concurrency: 8, metrics: { maxDataPoints: MAX_POINTS } });
  const fw = await startMetricsWorker(fq.name, MAX_POINTS);
  await waitFinished(nq.queue);
  await waitFinished(fq.queue);
  await fw.stop();
  const sameMinute = Math.floor(Date.now() / 60000) === minuteAtStart;

  const got = {};
  for (const [who, q] of [['node', nq], ['ferry', fq]]) {
    got[who] = { completed: await q.queue.getMetrics('completed'), failed: await q.queue.getMetrics('failed') };
    checkInvariants(`${who} completed`, got[who].completed, { initialCount: 10, initialPending: 6, initialData: 7, finished: COMPLETED });
    checkInvariants(`${who} failed`, got[who].failed, { initialCount: 0, initialPending: 0, initialData: 0, finished: FAILED });
    // the history's tail: the 6 pending at the first finish, then the old point
    assert.deepStrictEqual(got[who].completed.data.slice(-2), [6, 7], `${who}: oldest points`);
  }
  const shapeF = await keyShape(fq.name);
  const shapeN = await keyShape(nq.name);
  assert.deepStrictEqual({ ...shapeF, 'failed:data': null }, { ...shapeN, 'failed:data': null }, 'key types and hash fields');
  assert.deepStrictEqual(shapeF.completedFields, ['count', 'prevCount', 'prevTS']);
  assert.deepStrictEqual(shapeF.failedFields, ['count', 'prevCount', 'prevTS']);
  assert.strictEqual(shapeF.completed, 'hash');
  assert.strictEqual(shapeF['completed:data'], 'list');
  if (sameMinute) {
    assert.strictEqual(shapeF['failed:data'], shapeN['failed:data'], 'failed:data type');
    // one minute for everything: every field but prevTS is the same, point for point
    const strip = (m) => ({ ...m, meta: { ...m.meta, prevTS: 0 } });
    for (const kind of ['completed', 'failed']) {
      assert.deepStrictEqual(strip(got.ferry[kind]), strip(got.node[kind]), `${kind}: ferry vs node`);
    }
    assert.deepStrictEqual(strip(got.ferry.completed), { meta: { count: 16, prevTS: 0, prevCount: 10 }, data: [0, 0, 6, 7], count: 4 });
    assert.deepStrictEqual(strip(got.ferry.failed), { meta: { count: 3, prevTS: 0, prevCount: 0 }, data: [], count: 0 });
  } else {
    console.log('# the runs crossed a minute boundary: compared counts and invariants only');
    for (const kind of ['completed', 'failed']) {
      assert.strictEqual(got.ferry[kind].meta.count, got.node[kind].meta.count, `${kind}: meta.count`);
    }
  }
});

suite.check('without the option neither worker writes a metrics key', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('nometrics-node'));
  const fq = await h.nodeQueue(suite, h.uniqueQueue('nometrics-ferry'));
  for (const q of [nq, fq]) await q.queue.addBulk(WORKLOAD);
  h.startNodeWorker(nq.name, nodeProcessor(), { concurrency: 8 });
  const fw = await startMetricsWorker(fq.name, 0);
  await waitFinished(nq.queue);
  await waitFinished(fq.queue);
  await fw.stop();
  for (const q of [nq, fq]) {
    const base = `${h.PREFIX}:${q.name}:metrics:`;
    const n = await redis.exists(`${base}completed`, `${base}completed:data`, `${base}failed`, `${base}failed:data`);
    assert.strictEqual(n, 0, `${q.name}: metrics keys`);
    const m = await q.queue.getMetrics('completed');
    assert.deepStrictEqual(m, { meta: { count: 0, prevTS: 0, prevCount: 0 }, data: [], count: 0 });
  }
});

suite.run();
