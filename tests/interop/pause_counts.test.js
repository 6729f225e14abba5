// pause_counts.test.js - queue-level state shared by both implementations: `ferry queue counts`
// equals Node's getJobCounts on a queue in every state (built by both producers), pause/resume
// by Node is honoured by a running ferry worker, and pause/resume by ferry by a Node Worker.
'use strict';
const assert = require('node:assert');
const { FlowProducer, Job } = require('bullmq');
const h = require('./lib/harness');

const suite = new h.Suite('pause_counts: counts and pause/resume across ferry and Node');
const redis = h.newRedis();
suite.onCleanup(() => redis.quit());

const TYPES = ['waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized', 'waiting-children', 'paused'];

async function compareCounts(nq, label) {
  const node = await nq.queue.getJobCounts(...TYPES);
  const ferry = await h.ferryCounts(nq.name);
  const picked = {};
  for (const t of TYPES) picked[t] = ferry[t];
  assert.deepStrictEqual(picked, node, `${label}: ferry counts ${JSON.stringify(ferry)} vs Node ${JSON.stringify(node)}`);
  return node;
}

suite.check('ferry queue counts equals Node getJobCounts on a mixed-state queue (also while paused)', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('counts'));
  // empty queue first
  await compareCounts(nq, 'empty queue');

  // completed 3 / failed 2 (one of each kind of producer), processed by a Node worker
  await nq.queue.add('ok', {});
  await h.ferryAdd(nq.name, 'ok', {});
  await nq.queue.add('ok', {});
  await nq.queue.add('bad', {});
  await h.ferryAdd(nq.name, 'bad', {});
  const first = h.startNodeWorker(nq.name, async (job) => {
    if (job.name === 'bad') throw new Error('bad');
  });
  await h.waitFor(async () => {
    const c = await nq.queue.getJobCounts('completed', 'failed');
    return c.completed === 3 && c.failed === 2;
  }, { what: '3 completed + 2 failed' });
  await first.close();

  // one active job held by a Node worker with concurrency 1
  let release;
  const held = new Promise((r) => (release = r));
  const blocker = await nq.queue.add('block', {});
  const holder = h.startNodeWorker(nq.name, async () => held, { concurrency: 1 });
  await h.waitFor(async () => (await blocker.getState()) === 'active', { what: 'blocker active' });

  // waiting 4, prioritized 3, delayed 2 (long delays), from both producers
  await nq.queue.add('w', {});
  await h.ferryAdd(nq.name, 'w', {});
  await h.ferryAdd(nq.name, 'w', {}, { opts: { lifo: true } });
  await nq.queue.add('p', {}, { priority: 2 });
  await h.ferryAdd(nq.name, 'p', {}, { opts: { priority: 7 } });
  await h.ferryAdd(nq.name, 'p', {}, { opts: { priority: 1 } });
  await nq.queue.add('d', {}, { delay: 600000 });
  await h.ferryAdd(nq.name, 'd', {}, { opts: { delay: 600000 } });
  // a flow parent waiting for its child (child lands in wait too)
  const flow = new FlowProducer({ connection: h.connection });
  try {
    await flow.add({ name: 'parent', queueName: nq.name, data: {}, children: [{ name: 'child', queueName: nq.name, data: {} }] });
  } finally {
    await flow.close();
  }
  const c1 = await compareCounts(nq, 'mixed');
  assert.deepStrictEqual(c1, {
    waiting: 4, active: 1, completed: 3, failed: 2, delayed: 2, prioritized: 3, 'waiting-children': 1, paused: 0,
  }, 'the queue has the intended shape');

  // paused (v6): jobs stay in wait, `paused` counts only a legacy v5 list
  await nq.queue.pause();
  await compareCounts(nq, 'paused');
  // a legacy v5 `paused` list is counted as paused by both
  await redis.rpush(`${h.PREFIX}:${nq.name}:paused`, 'legacy-a', 'legacy-b');
  const c2 = await compareCounts(nq, 'legacy paused list');
  assert.strictEqual(c2.paused, 2);
  await redis.del(`${h.PREFIX}:${nq.name}:paused`);
  await nq.queue.resume();

  release();
  await holder.close();
});

suite.check('Node pauses the queue -> a running ferry worker stops taking jobs; Node resumes -> it takes them', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('pause-n'));
  const w = h.startFerryWorker(nq.name, { concurrency: 2 });
  // the worker is live: it processes a first job
  const warm = await nq.queue.add('warm', {});
  await warm.waitUntilFinished(nq.events, 20000);
  await nq.queue.pause();
  assert.strictEqual(await nq.queue.isPaused(), true);
  const a = await nq.queue.add('a', {});
  const b = await h.ferryAdd(nq.name, 'b', {});
  const c = await nq.queue.add('c', {}, { priority: 3 });
  // while paused nothing is taken: observe for a while (ferry's fetch timeout is bounded, so a
  // worker that ignored pause would have fetched within this window)
  await h.holdsFor(2500, async () => {
    const k = await nq.queue.getJobCounts('waiting', 'prioritized', 'active', 'completed');
    return k.waiting === 2 && k.prioritized === 1 && k.active === 0 && k.completed === 1;
  }, 'paused queue untouched');
  assert.strictEqual(w.starts().length, 1, 'handler ran only for the warm-up job');
  const fc = await h.ferryCounts(nq.name);
  assert.strictEqual(fc.waiting, 2, 'ferry counts the paused jobs as waiting (v6: no paused list)');
  await nq.queue.resume();
  await h.waitFor(async () => (await nq.queue.getJobCounts('completed')).completed === 4, { what: 'all 4 completed after resume' });
  assert.deepStrictEqual(w.starts().map((s) => s.id).sort(), [warm.id, a.id, b, c.id].sort());
});

suite.check('ferry pauses the queue -> a Node Worker stops taking jobs; ferry resumes -> it takes them', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('pause-f'));
  const done = [];
  h.startNodeWorker(nq.name, async (job) => {
    done.push(job.id);
  }, { concurrency: 2, drainDelay: 1 });
  const warm = await h.ferryAdd(nq.name, 'warm', {});
  await h.waitFor(() => done.includes(warm), { what: 'warm-up job processed' });
  await h.ferryOk(['queue', 'pause', nq.name]);
  assert.strictEqual(await nq.queue.isPaused(), true, 'Node sees the ferry pause');
  await h.waitFor(() => nq.seen('paused').length === 1, { what: 'paused event' });
  const a = await h.ferryAdd(nq.name, 'a', {});
  const b = await nq.queue.add('b', {});
  const d = await h.ferryAdd(nq.name, 'd', {}, { opts: { delay: 200 } });
  // the delayed job becomes due during the window; it must still not run
  await h.holdsFor(2500, async () => done.length === 1, 'paused queue untouched by Node');
  const j = await Job.fromId(nq.queue, a);
  assert.strictEqual(await j.getState(), 'waiting');
  await h.ferryOk(['queue', 'resume', nq.name]);
  assert.strictEqual(await nq.queue.isPaused(), false, 'Node sees the ferry resume');
  await h.waitFor(() => done.length === 4, { what: 'all processed after resume' });
  assert.deepStrictEqual(done.slice(1).sort(), [a, b.id, d].sort());
  await h.waitFor(() => nq.seen('resumed').length === 1, { what: 'resumed event' });
});

suite.run();
