// ferry_to_node.test.js - `ferry queue add` produces, a Node BullMQ 6.7.0 Worker consumes; the
// assertions are on what Node observes (data, name, id, opts, retry gaps, delays, processing
// order, dedup events, trimming) and on what `ferry job show` reads back from Node's results.
'use strict';
const assert = require('node:assert');
const { Job } = require('bullmq');
const h = require('./lib/harness');

const suite = new h.Suite('ferry_to_node: ferry queue add -> Node Worker');
const redis = h.newRedis();
suite.onCleanup(() => redis.quit());

const exists = async (q, id) => (await redis.exists(`${h.PREFIX}:${q}:${id}`)) === 1;

// Parse a field `ferry job show --json` may print either as JSON text or already parsed.
const parsed = (v) => (typeof v === 'string' ? JSON.parse(v) : v);

suite.check('data (argv and stdin), name, custom id and opts written by ferry are what the Node Worker sees', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('f2n-data'));
  const seen = new Map();
  const data1 = { s: 'héllo ✓ "q" \\ /', n: 42, f: -1.25, t: false, nil: null, arr: [1, [2, [3]], { x: 'y' }] };
  const data2 = { big: 'x'.repeat(20000), emoji: '🚚📦' };
  const t0 = Date.now();
  const id1 = await h.ferryAdd(nq.name, 'send email ✉', data1);
  const id2 = await h.ferryAdd(nq.name, 'from-stdin', data2, { stdin: true, jobId: 'inv-2024-1' });
  const id3 = await h.ferryAdd(nq.name, 'no-data');
  const id4 = await h.ferryAdd(nq.name, 'with-opts', { o: 1 }, { opts: { attempts: 5, backoff: { type: 'exponential', delay: 1000, jitter: 0.5 }, removeOnComplete: { age: 3600, count: 10 }, removeOnFail: false } });
  const t1 = Date.now();
  assert.strictEqual(id2, 'inv-2024-1');
  assert.ok(/^[0-9]+$/.test(id1), `auto id ${id1} is a counter value`);
  h.startNodeWorker(nq.name, async (job) => {
    seen.set(job.id, { name: job.name, data: job.data, opts: job.opts, ts: job.timestamp, atm: job.attemptsMade });
    return { ok: job.name };
  });
  await h.waitFor(async () => (await nq.queue.getJobCounts('completed')).completed === 4, { what: '4 completed' });
  assert.deepStrictEqual(seen.get(id1).data, data1);
  assert.strictEqual(seen.get(id1).name, 'send email ✉');
  assert.ok(seen.get(id1).ts >= t0 - 5 && seen.get(id1).ts <= t1 + 5, 'timestamp = producer clock at add');
  assert.strictEqual(seen.get(id1).atm, 0);
  assert.deepStrictEqual(seen.get(id2).data, data2);
  assert.strictEqual(seen.get(id2).name, 'from-stdin');
  assert.deepStrictEqual(seen.get(id3).data, {}, 'no DATA -> {}');
  const o = seen.get(id4).opts;
  assert.strictEqual(o.attempts, 5);
  assert.deepStrictEqual(o.backoff, { type: 'exponential', delay: 1000, jitter: 0.5 });
  assert.deepStrictEqual(o.removeOnComplete, { age: 3600, count: 10 });
  assert.strictEqual(o.removeOnFail, false);
  // Node getters agree with what the worker saw.
  const j4 = await Job.fromId(nq.queue, id4);
  assert.strictEqual(j4.delay, 0);
  assert.strictEqual(j4.priority, 0);
  assert.deepStrictEqual(j4.returnvalue, { ok: 'with-opts' });
  // And the added events were emitted by ferry.
  await h.waitFor(() => [id1, id2, id3, id4].every((id) => nq.seen('completed', id).length === 1), { what: 'completed events' });
  for (const id of [id1, id2, id3, id4]) assert.strictEqual(nq.seen('added', id).length, 1, `added event for ${id}`);
});

suite.check('ferry job show reads the returnvalue / failedReason / attemptsMade a Node Worker wrote', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('f2n-show'));
  const ok = await h.ferryAdd(nq.name, 'ok', { a: 1 });
  const bad = await h.ferryAdd(nq.name, 'bad', { a: 2 }, { opts: { attempts: 2 } });
  h.startNodeWorker(nq.name, async (job) => {
    if (job.name === 'bad') throw new Error(`boom on attempt ${job.attemptsMade + 1}`);
    return { got: job.data.a, list: [1, 2] };
  });
  await h.nodeJobInState(nq, ok, 'completed');
  await h.nodeJobInState(nq, bad, 'failed');
  const so = await h.ferryJob(nq.name, ok);
  assert.deepStrictEqual(parsed(so.returnvalue), { got: 1, list: [1, 2] });
  assert.strictEqual(so.state, 'completed');
  assert.strictEqual(Number(so.attemptsMade), 1);
  const sb = await h.ferryJob(nq.name, bad);
  assert.strictEqual(sb.failedReason, 'boom on attempt 2');
  assert.strictEqual(Number(sb.attemptsMade), 2);
  assert.strictEqual(sb.state, 'failed');
  assert.ok(Array.isArray(parsed(sb.stacktrace)) && parsed(sb.stacktrace).length === 2, 'stacktrace of both attempts');
});

suite.check('retries with fixed, exponential and bare-number backoff from ferry opts wait at least the backoff in Node', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('f2n-backoff'));
  const fixed = await h.ferryAdd(nq.name, 'fixed', {}, { opts: { attempts: 3, backoff: { type: 'fixed', delay: 400 } } });
  const expo = await h.ferryAdd(nq.name, 'expo', {}, { opts: { attempts: 3, backoff: { type: 'exponential', delay: 250 } } });
  // BullMQ's worker only understands an object; Node's Queue normalizes a bare number to
  // {type:'fixed'} at add time, so ferry's producer must do the same.
  const bare = await h.ferryAdd(nq.name, 'bare', {}, { opts: { attempts: 2, backoff: 300 } });
  const runs = new Map();
  h.startNodeWorker(
    nq.name,
    async (job) => {
      const r = runs.get(job.id) || [];
      runs.set(job.id, r);
      const rec = { start: Date.now() };
      r.push(rec);
      if (job.attemptsMade + 1 < job.opts.attempts) {
        rec.end = Date.now();
        throw new Error(`fail ${r.length}`);
      }
      return r.length;
    },
    { concurrency: 3 },
  );
  for (const id of [fixed, expo, bare]) await h.nodeJobInState(nq, id, 'completed');
  const gaps = (id) => runs.get(id).slice(1).map((r, k) => r.start - runs.get(id)[k].end);
  const fg = gaps(fixed);
  const eg = gaps(expo);
  const bg = gaps(bare);
  assert.strictEqual(fg.length, 2);
  for (const g of fg) assert.ok(g >= 395 && g < 400 + 8000, `fixed gap ${g} vs 400`);
  assert.ok(eg[0] >= 245 && eg[0] < 250 + 8000, `exponential gap 1 ${eg[0]} vs 250`);
  assert.ok(eg[1] >= 495 && eg[1] < 500 + 8000, `exponential gap 2 ${eg[1]} vs 500`);
  assert.strictEqual(bg.length, 1);
  assert.ok(bg[0] >= 295 && bg[0] < 300 + 8000, `bare-number backoff gap ${bg[0]} vs 300`);
  const bj = await Job.fromId(nq.queue, bare);
  assert.deepStrictEqual(bj.opts.backoff, { type: 'fixed', delay: 300 });
  assert.strictEqual(bj.attemptsMade, 2);
  assert.strictEqual((await Job.fromId(nq.queue, fixed)).attemptsMade, 3);
});

suite.check('a delayed job added by ferry is not started early by Node', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('f2n-delay'));
  let started = 0;
  h.startNodeWorker(nq.name, async () => {
    started = Date.now();
  });
  const id = await h.ferryAdd(nq.name, 'later', { d: 1 }, { opts: { delay: 1200 } });
  const j0 = await Job.fromId(nq.queue, id);
  assert.strictEqual(j0.delay, 1200);
  assert.strictEqual(await j0.getState(), 'delayed');
  const ev = await nq.waitEvent('delayed', id);
  assert.strictEqual(ev.delay, j0.timestamp + 1200, 'delayed event carries the due time');
  const j = await h.nodeJobInState(nq, id, 'completed');
  assert.ok(started >= j.timestamp + 1200, `started ${started - j.timestamp} ms after add, delay 1200`);
  assert.ok(j.processedOn >= j.timestamp + 1200);
  assert.ok(started < j.timestamp + 1200 + 10000, 'and not absurdly late');
});

suite.check('priority order of ferry-added jobs in a Node Worker: wait before prioritized, lower first, lifo first', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('f2n-prio'));
  await h.ferryAdd(nq.name, 'p10', {}, { opts: { priority: 10 } });
  await h.ferryAdd(nq.name, 'p1a', {}, { opts: { priority: 1 } });
  await h.ferryAdd(nq.name, 'plain1', {});
  await h.ferryAdd(nq.name, 'p1b', {}, { opts: { priority: 1 } });
  await h.ferryAdd(nq.name, 'plain2', {});
  await h.ferryAdd(nq.name, 'lifo', {}, { opts: { lifo: true } });
  await h.ferryAdd(nq.name, 'p5', {}, { opts: { priority: 5 } });
  const counts = await nq.queue.getJobCounts('waiting', 'prioritized');
  assert.deepStrictEqual(counts, { waiting: 3, prioritized: 4 });
  const order = [];
  h.startNodeWorker(nq.name, async (job) => {
    order.push(job.name);
  });
  await h.waitFor(() => order.length === 7, { what: '7 processed' });
  assert.deepStrictEqual(order, ['lifo', 'plain1', 'plain2', 'p1a', 'p1b', 'p5', 'p10']);
});

suite.check('jobId dedup across producers: duplicate add returns the existing id, keeps the data, emits duplicated', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('f2n-dedup'));
  // ferry first, then ferry and Node duplicates
  assert.strictEqual(await h.ferryAdd(nq.name, 'first', { v: 1 }, { jobId: 'dup-1' }), 'dup-1');
  assert.strictEqual(await h.ferryAdd(nq.name, 'second', { v: 2 }, { jobId: 'dup-1' }), 'dup-1');
  const nodeDup = await nq.queue.add('third', { v: 3 }, { jobId: 'dup-1' });
  assert.strictEqual(nodeDup.id, 'dup-1');
  // Node first, then a ferry duplicate
  await nq.queue.add('node-first', { v: 10 }, { jobId: 'dup-2' });
  assert.strictEqual(await h.ferryAdd(nq.name, 'ferry-dup', { v: 20 }, { jobId: 'dup-2' }), 'dup-2');
  const j1 = await Job.fromId(nq.queue, 'dup-1');
  assert.strictEqual(j1.name, 'first');
  assert.deepStrictEqual(j1.data, { v: 1 });
  const j2 = await Job.fromId(nq.queue, 'dup-2');
  assert.deepStrictEqual(j2.data, { v: 10 });
  assert.strictEqual((await nq.queue.getJobCounts('waiting')).waiting, 2, 'no extra job created');
  await h.waitFor(() => nq.seen('duplicated', 'dup-1').length === 2 && nq.seen('duplicated', 'dup-2').length === 1, {
    what: 'duplicated events (2 for dup-1, 1 for dup-2)',
  });
  // The id stays taken while the finished job exists, and is free again once it is removed.
  const ran = [];
  h.startNodeWorker(nq.name, async (job) => {
    ran.push(`${job.id}:${job.name}`);
  });
  const once = await h.ferryAdd(nq.name, 'once', {}, { jobId: 'once-1', opts: { removeOnComplete: true } });
  await h.waitFor(() => ran.includes('once-1:once') && ran.length === 3, { what: 'three jobs processed' });
  assert.strictEqual(await h.ferryAdd(nq.name, 'dup-after', {}, { jobId: 'dup-1' }), 'dup-1');
  await h.waitFor(async () => !(await exists(nq.name, once)), { what: 'once-1 removed' });
  assert.strictEqual(await h.ferryAdd(nq.name, 'again', {}, { jobId: 'once-1' }), 'once-1');
  await h.waitFor(() => ran.includes('once-1:again'), { what: 'reused id processed' });
  assert.ok(!ran.includes('dup-1:dup-after'), 'duplicate of a completed job not run');
});

suite.check('removeOnComplete / removeOnFail from ferry opts (true, count, age) honoured by the Node Worker', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('f2n-keep'));
  h.startNodeWorker(nq.name, async (job) => {
    if (job.name === 'bad') throw new Error('bad');
    return 1;
  });
  const gone = await h.ferryAdd(nq.name, 'ok', {}, { opts: { removeOnComplete: true } });
  await nq.waitEvent('completed', gone);
  assert.strictEqual(await exists(nq.name, gone), false);
  const ok = [];
  for (let i = 0; i < 5; i++) ok.push(await h.ferryAdd(nq.name, 'ok', { i }, { opts: { removeOnComplete: 2 } }));
  const bad = [];
  for (let i = 0; i < 3; i++) bad.push(await h.ferryAdd(nq.name, 'bad', { i }, { opts: { removeOnFail: 1 } }));
  await nq.waitEvent('completed', ok[4]);
  await nq.waitEvent('failed', bad[2]);
  assert.deepStrictEqual((await redis.zrange(`${h.PREFIX}:${nq.name}:completed`, 0, -1)).sort(), ok.slice(3).sort());
  assert.deepStrictEqual(await redis.zrange(`${h.PREFIX}:${nq.name}:failed`, 0, -1), [bad[2]]);
  for (const id of [...ok.slice(0, 3), ...bad.slice(0, 2)]) assert.strictEqual(await exists(nq.name, id), false, `${id} deleted`);

  const nq2 = await h.nodeQueue(suite, h.uniqueQueue('f2n-age'));
  h.startNodeWorker(nq2.name, async (job) => {
    if (job.name === 'bad') throw new Error('bad');
  });
  const a1 = await h.ferryAdd(nq2.name, 'ok', {}, { opts: { removeOnComplete: { age: 1 } } });
  const f1 = await h.ferryAdd(nq2.name, 'bad', {}, { opts: { removeOnFail: { age: 1 } } });
  const a1j = await h.nodeJobInState(nq2, a1, 'completed');
  const f1j = await h.nodeJobInState(nq2, f1, 'failed');
  const old = Math.max(a1j.finishedOn, f1j.finishedOn);
  await h.waitFor(() => Date.now() > old + 1100, { what: 'age to pass' });
  const a2 = await h.ferryAdd(nq2.name, 'ok', {}, { opts: { removeOnComplete: { age: 1 } } });
  const f2 = await h.ferryAdd(nq2.name, 'bad', {}, { opts: { removeOnFail: { age: 1 } } });
  await h.nodeJobInState(nq2, a2, 'completed');
  await h.nodeJobInState(nq2, f2, 'failed');
  assert.strictEqual(await exists(nq2.name, a1), false, 'old completed removed by age');
  assert.strictEqual(await exists(nq2.name, f1), false, 'old failed removed by age');
  assert.deepStrictEqual(await redis.zrange(`${h.PREFIX}:${nq2.name}:completed`, 0, -1), [a2]);
  assert.deepStrictEqual(await redis.zrange(`${h.PREFIX}:${nq2.name}:failed`, 0, -1), [f2]);
});

suite.run();
