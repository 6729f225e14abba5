// node_to_ferry.test.js - Node BullMQ 6.7.0 produces (Queue.add), a `ferry worker` running
// lib/handler.js consumes; every assertion is on what the other side observes: the handler's
// view of data/name/id (echoed back as its return value), and Node's view of the result
// (returnvalue, failedReason, attemptsMade, processedBy, QueueEvents, waitUntilFinished), retry
// gaps, delays, priority order and removeOnComplete/removeOnFail trimming done by ferry.
'use strict';
const assert = require('node:assert');
const { Job } = require('bullmq');
const h = require('./lib/harness');

const suite = new h.Suite('node_to_ferry: Node Queue -> ferry worker');
const redis = h.newRedis();
suite.onCleanup(() => redis.quit());

suite.check('data, name and id reach the ferry handler; Node sees the parsed returnvalue, events and waitUntilFinished', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('n2f-echo'));
  const data = { s: 'héllo ✓ "quoted" \\ slash/', n: 42, f: 1.5, neg: -7, t: true, nil: null, nested: { a: [1, 2, { b: 'c' }] }, empty: '' };
  const job = await nq.queue.add('echo-job', data);
  const custom = await nq.queue.add('custom-id', { x: 1 }, { jobId: 'order-7' });
  assert.strictEqual(custom.id, 'order-7');
  // Ask for the result before any worker runs, so it arrives through the events stream.
  const finished = job.waitUntilFinished(nq.events, 20000);
  const w = h.startFerryWorker(nq.name, { name: 'ferry-w1' });

  const rv = await finished;
  const expected = { id: job.id, name: 'echo-job', queue: nq.name, attempt: rv.attempt, data };
  assert.deepStrictEqual(rv, expected, 'waitUntilFinished value = what the handler saw');
  assert.strictEqual(rv.attempt, '1', 'FERRY_ATTEMPT is 1 on the first attempt');

  const ev = await nq.waitEvent('completed', job.id);
  assert.deepStrictEqual(ev.returnvalue, expected, 'QueueEvents completed carries the parsed value');

  const j = await h.nodeJobInState(nq, job.id, 'completed');
  assert.deepStrictEqual(j.returnvalue, expected);
  assert.strictEqual(j.processedBy, 'ferry-w1');
  assert.strictEqual(j.attemptsMade, 1);
  assert.strictEqual(j.attemptsStarted, 1);
  assert.ok(j.processedOn >= j.timestamp, 'processedOn >= timestamp');
  assert.ok(j.finishedOn >= j.processedOn, 'finishedOn >= processedOn');
  assert.deepStrictEqual(j.data, data, 'ferry did not modify data');

  const c = await h.nodeJobInState(nq, 'order-7', 'completed');
  assert.strictEqual(c.returnvalue.id, 'order-7');
  assert.deepStrictEqual(c.returnvalue.data, { x: 1 });
  await nq.waitEvent('completed', 'order-7');
  assert.strictEqual(nq.seen('active', 'order-7').length, 1, 'active event for order-7');
  await h.waitFor(() => nq.seen('drained').length > 0, { what: 'drained event' });
  const st = await w.stop();
  assert.deepStrictEqual(st, { code: 0, signal: null }, 'SIGTERM = graceful exit 0');
});

suite.check('handler stdout that is not JSON becomes a JSON string returnvalue; JSON stdout is parsed', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('n2f-rv'));
  const a = await nq.queue.add('plain-text', {});
  const b = await nq.queue.add('number', {});
  const c = await nq.queue.add('array', {});
  h.startFerryWorker(nq.name, {
    behave: { 'plain-text': { stdout: 'hello world' }, number: { stdout: '42' }, array: { stdout: '[1,"two",{"3":null}]' } },
  });
  assert.strictEqual(await a.waitUntilFinished(nq.events, 20000), 'hello world');
  assert.strictEqual(await b.waitUntilFinished(nq.events, 20000), 42);
  assert.deepStrictEqual(await c.waitUntilFinished(nq.events, 20000), [1, 'two', { 3: null }]);
  assert.strictEqual((await Job.fromId(nq.queue, a.id)).returnvalue, 'hello world');
});

suite.check('exit 65 fails at once despite attempts; exit 75 retries until attempts run out; failedReason = last stderr line', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('n2f-fail'));
  const perm = await nq.queue.add('perm', { p: 1 }, { attempts: 3 });
  const trans = await nq.queue.add('trans', { t: 1 }, { attempts: 2 });
  const permDone = perm.waitUntilFinished(nq.events, 20000).then(
    () => assert.fail('perm must fail'),
    (e) => e,
  );
  const w = h.startFerryWorker(nq.name, {
    behave: {
      perm: { exit: 65, stderr: 'warming up\ncard declined: insufficient funds\n' },
      trans: { exit: 75 },
    },
  });
  const err = await permDone;
  assert.strictEqual(err.message, 'card declined: insufficient funds', 'waitUntilFinished rejects with failedReason');

  const p = await h.nodeJobInState(nq, perm.id, 'failed');
  assert.strictEqual(p.failedReason, 'card declined: insufficient funds');
  assert.strictEqual(p.attemptsMade, 1, 'permanent failure uses one attempt');
  assert.ok(Array.isArray(p.stacktrace), 'stacktrace is a JSON array');
  assert.strictEqual(w.starts(perm.id).length, 1, 'handler ran once for the permanent failure');
  const pf = await nq.waitEvent('failed', perm.id);
  assert.strictEqual(pf.failedReason, 'card declined: insufficient funds');

  const t = await h.nodeJobInState(nq, trans.id, 'failed');
  assert.strictEqual(t.failedReason, 'exit 75', 'no stderr -> "exit N"');
  assert.strictEqual(t.attemptsMade, 2);
  assert.strictEqual(t.attemptsStarted, 2);
  assert.deepStrictEqual(w.starts(trans.id).map((s) => s.attempt), ['1', '2'], 'FERRY_ATTEMPT counts attempts');
  const ex = await nq.waitEvent('retries-exhausted', trans.id);
  assert.strictEqual(Number(ex.attemptsMade), 2);
  assert.strictEqual(nq.seen('failed', trans.id).length, 1, 'only the final failure emits failed');
});

// Gap between the end of run k and the start of run k+1 as the handler recorded them.
function gaps(w, id) {
  const starts = w.starts(id);
  const ends = w.ends(id);
  const out = [];
  for (let k = 1; k < starts.length; k++) out.push(starts[k].t - ends[k - 1].t);
  return out;
}

suite.check('retries with fixed and exponential backoff wait at least the backoff', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('n2f-backoff'));
  const fixed = await nq.queue.add('fixed', {}, { attempts: 3, backoff: { type: 'fixed', delay: 400 } });
  const expo = await nq.queue.add('expo', {}, { attempts: 3, backoff: { type: 'exponential', delay: 250 } });
  const w = h.startFerryWorker(nq.name, {
    concurrency: 2,
    behave: { fixed: { exit: 75, failAttempts: 2, stderr: 'try later' }, expo: { exit: 75, failAttempts: 2 } },
  });
  const fj = await h.nodeJobInState(nq, fixed.id, 'completed');
  const ej = await h.nodeJobInState(nq, expo.id, 'completed');
  assert.strictEqual(fj.attemptsMade, 3);
  assert.strictEqual(ej.attemptsMade, 3);
  assert.strictEqual(fj.returnvalue.attempt, '3');
  const fg = gaps(w, fixed.id);
  const eg = gaps(w, expo.id);
  assert.strictEqual(fg.length, 2);
  assert.strictEqual(eg.length, 2);
  // Lower bounds are exact (the handler's end precedes the worker's "now"; 5 ms for clock
  // rounding); upper bounds are generous for a loaded 2-core box.
  for (const g of fg) assert.ok(g >= 395 && g < 400 + 8000, `fixed gap ${g} ms vs backoff 400`);
  assert.ok(eg[0] >= 245 && eg[0] < 250 + 8000, `exponential gap 1 ${eg[0]} ms vs 250`);
  assert.ok(eg[1] >= 495 && eg[1] < 500 + 8000, `exponential gap 2 ${eg[1]} ms vs 500`);
  // Node saw the retries go through `delayed`.
  // (QueueEvents reads the stream asynchronously: wait for the events, then check them)
  await h.waitFor(() => nq.seen('delayed', fixed.id).length >= 2, { what: 'two delayed events for the fixed retries' });
  assert.strictEqual(nq.seen('delayed', fixed.id).length, 2, 'exactly two delayed events');
  assert.ok(nq.seen('delayed', fixed.id).every((e) => Number.isFinite(e.delay)), 'delayed event carries a due time');
});

suite.check('a delayed job is not started before its delay', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('n2f-delay'));
  const w = h.startFerryWorker(nq.name);
  const job = await nq.queue.add('later', { d: 1 }, { delay: 1200 });
  assert.strictEqual(await job.getState(), 'delayed');
  const j = await h.nodeJobInState(nq, job.id, 'completed');
  const start = w.starts(job.id)[0].t;
  assert.ok(start >= j.timestamp + 1200 - 5, `handler started ${start - j.timestamp} ms after add, delay 1200`);
  assert.ok(j.processedOn >= j.timestamp + 1200, `processedOn ${j.processedOn - j.timestamp} ms after add`);
  assert.ok(start < j.timestamp + 1200 + 10000, 'and not absurdly late');
});

suite.check('priority order: wait list before prioritized, lower number first, FIFO within a priority, lifo first', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('n2f-prio'));
  await nq.queue.add('p10', {}, { priority: 10 });
  await nq.queue.add('p1a', {}, { priority: 1 });
  await nq.queue.add('plain1', {});
  await nq.queue.add('p1b', {}, { priority: 1 });
  await nq.queue.add('plain2', {});
  await nq.queue.add('lifo', {}, { lifo: true });
  await nq.queue.add('p5', {}, { priority: 5 });
  const w = h.startFerryWorker(nq.name, { concurrency: 1 });
  await h.waitFor(async () => (await nq.queue.getJobCounts('completed')).completed === 7, { what: '7 completed' });
  assert.deepStrictEqual(
    w.starts().map((s) => s.name),
    ['lifo', 'plain1', 'plain2', 'p1a', 'p1b', 'p5', 'p10'],
  );
});

suite.check('removeOnComplete / removeOnFail: true, by count and by age, applied by the ferry worker', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('n2f-keep'));
  const behave = { bad: { exit: 65, stderr: 'bad' } };
  h.startFerryWorker(nq.name, { concurrency: 1, behave });
  const exists = async (id) => (await redis.exists(`${h.PREFIX}:${nq.name}:${id}`)) === 1;

  // true: gone as soon as it completes
  const gone = await nq.queue.add('ok', {}, { removeOnComplete: true });
  await nq.waitEvent('completed', gone.id);
  assert.strictEqual(await exists(gone.id), false, 'removeOnComplete:true deletes the job');

  // count: keep the newest 2 completed / the newest 1 failed
  const ok = [];
  for (let i = 0; i < 5; i++) ok.push((await nq.queue.add('ok', { i }, { removeOnComplete: 2 })).id);
  const bad = [];
  for (let i = 0; i < 3; i++) bad.push((await nq.queue.add('bad', { i }, { removeOnFail: 1 })).id);
  await nq.waitEvent('failed', bad[2]);
  await nq.waitEvent('completed', ok[4]);
  assert.deepStrictEqual((await nq.queue.getCompleted()).map((j) => j.id).sort(), ok.slice(3).sort(), 'Node lists the two kept');
  const completedIds = (await redis.zrange(`${h.PREFIX}:${nq.name}:completed`, 0, -1)).sort();
  assert.deepStrictEqual(completedIds, ok.slice(3).sort(), 'removeOnComplete:2 keeps the newest two');
  for (const id of ok.slice(0, 3)) assert.strictEqual(await exists(id), false, `trimmed job ${id} hash deleted`);
  const failedIds = await redis.zrange(`${h.PREFIX}:${nq.name}:failed`, 0, -1);
  assert.deepStrictEqual(failedIds, [bad[2]], 'removeOnFail:1 keeps the newest one');
  for (const id of bad.slice(0, 2)) assert.strictEqual(await exists(id), false, `trimmed failed job ${id} deleted`);

  // age (seconds): an old finished job is removed when a later job finishes into the same set
  const nq2 = await h.nodeQueue(suite, h.uniqueQueue('n2f-age'));
  h.startFerryWorker(nq2.name, { concurrency: 1, behave });
  const a1 = await nq2.queue.add('ok', {}, { removeOnComplete: { age: 1 } });
  const f1 = await nq2.queue.add('bad', {}, { removeOnFail: { age: 1 } });
  const a1j = await h.nodeJobInState(nq2, a1.id, 'completed');
  const f1j = await h.nodeJobInState(nq2, f1.id, 'failed');
  const old = Math.max(a1j.finishedOn, f1j.finishedOn);
  // Let more than `age` pass on the clock (a deadline on the wall clock, not a sync sleep).
  await h.waitFor(() => Date.now() > old + 1100, { what: 'age to pass' });
  const a2 = await nq2.queue.add('ok', {}, { removeOnComplete: { age: 1 } });
  const f2 = await nq2.queue.add('bad', {}, { removeOnFail: { age: 1 } });
  await h.nodeJobInState(nq2, a2.id, 'completed');
  await h.nodeJobInState(nq2, f2.id, 'failed');
  const ex = async (id) => (await redis.exists(`${h.PREFIX}:${nq2.name}:${id}`)) === 1;
  assert.strictEqual(await ex(a1.id), false, 'completed job older than age removed');
  assert.strictEqual(await ex(f1.id), false, 'failed job older than age removed');
  assert.deepStrictEqual(await redis.zrange(`${h.PREFIX}:${nq2.name}:completed`, 0, -1), [a2.id]);
  assert.deepStrictEqual(await redis.zrange(`${h.PREFIX}:${nq2.name}:failed`, 0, -1), [f2.id]);
});

suite.check('worker-level --remove-on-complete applies only to jobs without their own removeOnComplete', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('n2f-wkeep'));
  const j1 = await nq.queue.add('ok', { i: 1 });
  const j2 = await nq.queue.add('ok', { i: 2 });
  const j3 = await nq.queue.add('ok', { i: 3 }, { removeOnComplete: false });
  h.startFerryWorker(nq.name, { concurrency: 1, extraArgs: ['--remove-on-complete', '1'] });
  await nq.waitEvent('completed', j3.id);
  // j2's finish trimmed the set to 1 (dropping j1); j3 keeps everything (its own `false`).
  const kept = (await redis.zrange(`${h.PREFIX}:${nq.name}:completed`, 0, -1)).sort();
  assert.deepStrictEqual(kept, [j2.id, j3.id].sort());
  assert.strictEqual(await redis.exists(`${h.PREFIX}:${nq.name}:${j1.id}`), 0, 'trimmed job deleted');
});

suite.check('a two-lane ferry worker (concurrency 8) runs each Node-added job once; Node counts them all; getWorkers lists it once, as a Node Worker', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('n2f-lanes'));
  const N = 40;
  await nq.queue.addBulk(Array.from({ length: N }, (_, i) => ({ name: 'echo', data: { i } })));
  const w = h.startFerryWorker(nq.name, { concurrency: 8, name: 'ferry-lanes' });
  await h.waitFor(async () => (await nq.queue.getJobCounts('completed')).completed === N, {
    what: `${N} completed`,
    timeout: 60000,
  });
  const starts = w.runs().filter((r) => r.ev === 'start');
  assert.strictEqual(starts.length, N, 'one run per job');
  assert.strictEqual(new Set(starts.map((r) => r.id)).size, N, 'every job ran');
  const counts = await nq.queue.getJobCounts();
  for (const k of ['active', 'waiting', 'failed', 'delayed', 'prioritized']) assert.strictEqual(counts[k], 0, `${k} is 0`);
  // one named blocking connection for the worker, whatever its lanes
  const workers = await nq.queue.getWorkers();
  assert.strictEqual(workers.length, 1, `getWorkers: ${JSON.stringify(workers)}`);
  const st = await w.stop();
  assert.deepStrictEqual(st, { code: 0, signal: null });
});

suite.check('ferry job show reads a Node-written job', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('n2f-show'));
  const job = await nq.queue.add('shown', { k: [1, 'x'] }, { attempts: 4, backoff: { type: 'fixed', delay: 10 }, priority: 3 });
  const shown = await h.ferryJob(nq.name, job.id);
  assert.strictEqual(String(shown.id), job.id);
  assert.strictEqual(shown.name, 'shown');
  const data = typeof shown.data === 'string' ? JSON.parse(shown.data) : shown.data;
  assert.deepStrictEqual(data, { k: [1, 'x'] });
  const opts = typeof shown.opts === 'string' ? JSON.parse(shown.opts) : shown.opts;
  assert.strictEqual(opts.attempts, 4);
  assert.strictEqual(opts.priority, 3);
  assert.strictEqual(shown.state, 'prioritized');
  assert.strictEqual(Number(shown.priority), 3);
});

suite.run();
